//! `Window`: the working cpumask of `group_cpus_evenly` (`nmsk` in lib/group_cpus.c), kept only
//! over the 64-bit words where it can hold CPUs.
//!
//! The kernel's `nmsk` is always `node_to_cpumask[n] & cpu_mask` (a node's CPUs in the current
//! stage), or that again ANDed with one cluster. Its bits therefore lie in the words its node
//! occupies, and every walk over it (`cpumask_first`, the SMT-sibling walk of
//! `grp_spread_init_one()`, the cluster probe of `alloc_cluster_groups()`) may skip the words
//! outside that window: a bit outside the window is zero, so an AND with it is zero too. On a
//! machine of 8,192 CPUs a node of 128 CPUs is 2 words instead of 128. The results are the
//! kernel's bit for bit; only the words known to be zero are not read.
//!
//! A window is reused across the nodes and clusters of one call (its buffer is allocated once).

use crate::topology::{nth_bit, CpuSet};

const WORD_BITS: u32 = 64;

/// A CPU set whose bits all lie in words `lo .. lo + words.len()`.
#[derive(Debug, Clone, Default)]
pub(super) struct Window {
    lo: usize,
    words: Vec<u64>,
}

impl Window {
    /// `self = a & b` over words `lo..hi` (other words of `a & b` must be known to be zero),
    /// trimmed to the words that hold a CPU. Returns the weight.
    pub(super) fn load_and(&mut self, a: &CpuSet, b: &CpuSet, lo: usize, hi: usize) -> u32 {
        let (aw, bw) = (a.words(), b.words());
        let hi = hi.min(aw.len()).min(bw.len());
        let lo = lo.min(hi);
        self.words.clear();
        self.words
            .extend(aw[lo..hi].iter().zip(&bw[lo..hi]).map(|(x, y)| x & y));
        self.lo = lo;
        self.trim()
    }

    /// `self = src & b` (`cpumask_and(nmsk, node_cpumask, cluster)`), trimmed. Returns the weight.
    pub(super) fn load_window_and(&mut self, src: &Window, b: &CpuSet) -> u32 {
        let bw = b.words();
        self.words.clear();
        self.lo = src.lo;
        self.words.extend(
            src.words
                .iter()
                .enumerate()
                .map(|(i, &w)| w & bw.get(src.lo + i).copied().unwrap_or(0)),
        );
        self.trim()
    }

    /// `cpumask_copy(self, src)`.
    pub(super) fn copy_from(&mut self, src: &Window) {
        self.lo = src.lo;
        self.words.clear();
        self.words.extend_from_slice(&src.words);
    }

    /// Drops zero words at both ends; returns the weight.
    fn trim(&mut self) -> u32 {
        let Some(first) = self.words.iter().position(|&w| w != 0) else {
            self.words.clear();
            return 0;
        };
        let last = self.words.iter().rposition(|&w| w != 0).unwrap_or(first);
        self.words.truncate(last + 1);
        self.words.drain(..first);
        self.lo += first;
        self.weight()
    }

    /// `cpumask_weight`.
    pub(super) fn weight(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }

    /// `cpumask_weight_and(self, other)`.
    pub(super) fn weight_and(&self, other: &CpuSet) -> u32 {
        let ow = other.words();
        self.words
            .iter()
            .enumerate()
            .map(|(i, &w)| (w & ow.get(self.lo + i).copied().unwrap_or(0)).count_ones())
            .sum()
    }

    /// `cpumask_andnot(self, self, other)`.
    pub(super) fn andnot_assign(&mut self, other: &CpuSet) {
        let ow = other.words();
        for (i, w) in self.words.iter_mut().enumerate() {
            *w &= !ow.get(self.lo + i).copied().unwrap_or(0);
        }
    }

    /// Lowest CPU `>= start` (`cpumask_first` with a lower bound), `None` when there is none.
    pub(super) fn first_from(&self, start: u32) -> Option<u32> {
        let sw = (start / WORD_BITS) as usize;
        let (mut i, mut mask) = if sw < self.lo {
            (0, u64::MAX)
        } else {
            (sw - self.lo, u64::MAX << (start % WORD_BITS))
        };
        while i < self.words.len() {
            let w = self.words[i] & mask;
            if w != 0 {
                return Some(self.cpu(i, w.trailing_zeros()));
            }
            mask = u64::MAX;
            i += 1;
        }
        None
    }

    /// Lowest CPU.
    pub(super) fn first(&self) -> Option<u32> {
        self.first_from(0)
    }

    /// Lowest CPU greater than `cpu`, else the lowest CPU (`cpumask_next_wrap` as the rotation
    /// patch uses it); `cpu = -1` starts at the lowest.
    pub(super) fn next_wrap(&self, cpu: i64) -> Option<u32> {
        let after = u32::try_from(cpu + 1).ok().and_then(|start| self.first_from(start));
        after.or_else(|| self.first())
    }

    /// The `n`-th lowest CPU, 0-based (`cpumask_nth`).
    pub(super) fn nth(&self, n: u32) -> Option<u32> {
        nth_bit(&self.words, n).map(|(i, bit)| self.cpu(i, bit))
    }

    /// `cpumask_clear_cpu`.
    pub(super) fn remove(&mut self, cpu: u32) {
        let w = (cpu / WORD_BITS) as usize;
        if let Some(word) = w.checked_sub(self.lo).and_then(|i| self.words.get_mut(i)) {
            *word &= !(1u64 << (cpu % WORD_BITS));
        }
    }

    /// Every CPU, ascending.
    pub(super) fn for_each(&self, mut f: impl FnMut(u32)) {
        for (i, &word) in self.words.iter().enumerate() {
            let mut w = word;
            while w != 0 {
                f(self.cpu(i, w.trailing_zeros()));
                w &= w - 1;
            }
        }
    }

    /// Every CPU, ascending, each cleared as it is handed to `f`: `cpumask_first()` and
    /// `cpumask_clear_cpu()` until the mask is empty, in one pass.
    pub(super) fn drain(&mut self, mut f: impl FnMut(u32)) {
        for i in 0..self.words.len() {
            let mut w = std::mem::take(&mut self.words[i]);
            while w != 0 {
                f(self.cpu(i, w.trailing_zeros()));
                w &= w - 1;
            }
        }
    }

    /// The SMT-sibling loop of `grp_spread_init_one()`: walk `sibl` in ascending order and take
    /// (`cpumask_test_and_clear_cpu`) each sibling still in the window, handing it to `take`,
    /// until `k` CPUs were taken. Returns `k` minus the CPUs taken. Only the words where both the
    /// window and the sibling mask can hold CPUs are read.
    pub(super) fn take_siblings(&mut self, sibl: &CpuSet, mut k: u32, mut take: impl FnMut(u32)) -> u32 {
        let sw = sibl.words();
        let end = sw.len().saturating_sub(self.lo).min(self.words.len());
        for i in 0..end {
            if k == 0 {
                break;
            }
            let mut m = self.words[i] & sw[self.lo + i];
            while m != 0 && k > 0 {
                let bit = m.trailing_zeros();
                m &= m - 1;
                self.words[i] &= !(1u64 << bit);
                take(self.cpu(i, bit));
                k -= 1;
            }
        }
        k
    }

    fn cpu(&self, i: usize, bit: u32) -> u32 {
        (self.lo + i) as u32 * WORD_BITS + bit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(cpus: &[u32], width: u32) -> Window {
        let a = CpuSet::from_cpus(cpus.iter().copied());
        let mut w = Window::default();
        w.load_and(&a, &CpuSet::full(width), 0, width.div_ceil(64) as usize);
        w
    }

    fn cpus(w: &Window) -> Vec<u32> {
        let mut v = Vec::new();
        w.for_each(|c| v.push(c));
        v
    }

    #[test]
    fn operations_match_cpuset() {
        let list = [3, 64, 65, 130, 200, 255];
        let set = CpuSet::from_cpus(list);
        let w = window(&list, 512);
        assert_eq!(cpus(&w), list);
        assert_eq!(w.weight(), set.weight());
        for start in [0, 3, 4, 64, 66, 131, 255, 256, 1000] {
            assert_eq!(w.first_from(start), set.first_from(start), "first_from({start})");
        }
        for n in 0..8 {
            assert_eq!(w.nth(n), set.nth(n), "nth({n})");
        }
        for c in [-1i64, 3, 64, 200, 255, 300] {
            assert_eq!(w.next_wrap(c), set.next_wrap(c), "next_wrap({c})");
        }
        let other = CpuSet::from_cpus([64, 130, 300]);
        assert_eq!(w.weight_and(&other), set.and_weight(&other));
        let mut x = w.clone();
        x.andnot_assign(&other);
        assert_eq!(cpus(&x), [3, 65, 200, 255]);
        let mut y = Window::default();
        assert_eq!(y.load_window_and(&w, &other), 2);
        assert_eq!(cpus(&y), [64, 130]);
        x.remove(3);
        x.remove(9999);
        assert_eq!(x.first(), Some(65));
    }

    #[test]
    fn sibling_walk_stops_when_full() {
        let mut w = window(&[0, 1, 2, 3, 70, 71], 128);
        let sibl = CpuSet::from_cpus([1, 2, 71]);
        let mut got = Vec::new();
        assert_eq!(w.take_siblings(&sibl, 2, |c| got.push(c)), 0);
        assert_eq!(got, [1, 2]);
        assert_eq!(cpus(&w), [0, 3, 70, 71]);
        got.clear();
        assert_eq!(w.take_siblings(&sibl, 5, |c| got.push(c)), 4);
        assert_eq!(got, [71]);
    }

    #[test]
    fn drain_hands_out_every_cpu_in_order_and_empties() {
        let mut w = window(&[3, 64, 65, 130], 256);
        let mut got = Vec::new();
        w.drain(|c| got.push(c));
        assert_eq!(got, [3, 64, 65, 130]);
        assert_eq!((w.first(), w.weight()), (None, 0));
    }

    #[test]
    fn empty_window() {
        let w = window(&[], 256);
        assert_eq!(
            (w.first(), w.nth(0), w.next_wrap(-1), w.weight()),
            (None, None, None, 0)
        );
    }
}
