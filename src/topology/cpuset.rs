//! `CpuSet`: a fixed-width bitmap of CPU ids with the kernel's cpumask operations.
//!
//! The width is chosen at construction (normally the topology's `nr_cpu_ids`) and binary
//! operations accept sets of different widths: missing words read as zero. Equality ignores
//! trailing zero words, so two sets holding the same CPUs compare equal whatever their width.
//!
//! Method names follow `include/linux/cpumask.h` where one exists (`first`, `next`, `weight`,
//! `and`, `andnot`, `intersects`, `nth`), so kernel ports read like the C they model.

use std::fmt;

const WORD_BITS: u32 = 64;

#[derive(Clone, Default)]
pub struct CpuSet {
    words: Vec<u64>,
}

/// The `n`-th lowest set bit of `words`, 0-based: its word's index and its bit in that word.
pub(crate) fn nth_bit(words: &[u64], n: u32) -> Option<(usize, u32)> {
    let mut left = n;
    for (w, &word) in words.iter().enumerate() {
        let ones = word.count_ones();
        if left < ones {
            let mut word = word;
            for _ in 0..left {
                word &= word - 1;
            }
            return Some((w, word.trailing_zeros()));
        }
        left -= ones;
    }
    None
}

impl CpuSet {
    /// An empty set able to hold ids `0..n_bits` without growing.
    pub(crate) fn new(n_bits: u32) -> CpuSet {
        CpuSet {
            words: vec![0; words_for(n_bits)],
        }
    }

    /// The set `0..n` (the kernel's "all bits" mask clipped to `n`).
    pub fn full(n: u32) -> CpuSet {
        let mut set = CpuSet::new(n);
        for w in 0..(n / WORD_BITS) as usize {
            set.words[w] = u64::MAX;
        }
        let rest = n % WORD_BITS;
        if rest != 0 {
            set.words[(n / WORD_BITS) as usize] = (1u64 << rest) - 1;
        }
        set
    }

    pub fn from_cpus<I: IntoIterator<Item = u32>>(cpus: I) -> CpuSet {
        let mut set = CpuSet::default();
        for cpu in cpus {
            set.insert(cpu);
        }
        set
    }

    pub(crate) fn insert(&mut self, cpu: u32) {
        let w = (cpu / WORD_BITS) as usize;
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1u64 << (cpu % WORD_BITS);
    }

    pub fn remove(&mut self, cpu: u32) {
        let w = (cpu / WORD_BITS) as usize;
        if let Some(word) = self.words.get_mut(w) {
            *word &= !(1u64 << (cpu % WORD_BITS));
        }
    }

    pub fn contains(&self, cpu: u32) -> bool {
        let w = (cpu / WORD_BITS) as usize;
        self.words
            .get(w)
            .is_some_and(|word| word & (1u64 << (cpu % WORD_BITS)) != 0)
    }

    pub(crate) fn clear(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// Number of CPUs in the set (`cpumask_weight`).
    pub fn weight(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }

    /// Lowest CPU (`cpumask_first`), `None` when empty.
    pub fn first(&self) -> Option<u32> {
        self.first_from(0)
    }

    /// Lowest CPU `>= start`.
    pub(crate) fn first_from(&self, start: u32) -> Option<u32> {
        let mut w = (start / WORD_BITS) as usize;
        if w >= self.words.len() {
            return None;
        }
        let mut word = self.words[w] & (u64::MAX << (start % WORD_BITS));
        loop {
            if word != 0 {
                return Some(w as u32 * WORD_BITS + word.trailing_zeros());
            }
            w += 1;
            if w >= self.words.len() {
                return None;
            }
            word = self.words[w];
        }
    }

    /// Lowest CPU strictly greater than `cpu` (`cpumask_next`); `cpu = -1` starts at 0.
    pub(crate) fn next(&self, cpu: i64) -> Option<u32> {
        if cpu < 0 {
            return self.first();
        }
        let start = cpu + 1;
        if start > u32::MAX as i64 {
            return None;
        }
        self.first_from(start as u32)
    }

    /// Lowest CPU greater than `cpu`, wrapping to the lowest CPU of the set.
    #[cfg(test)]
    pub(crate) fn next_wrap(&self, cpu: i64) -> Option<u32> {
        self.next(cpu).or_else(|| self.first())
    }

    /// The `n`-th lowest CPU, 0-based (`cpumask_nth`).
    #[cfg(test)]
    pub(crate) fn nth(&self, n: u32) -> Option<u32> {
        nth_bit(&self.words, n).map(|(w, bit)| w as u32 * WORD_BITS + bit)
    }

    /// Highest CPU, `None` when empty.
    pub fn last(&self) -> Option<u32> {
        for (w, &word) in self.words.iter().enumerate().rev() {
            if word != 0 {
                return Some(w as u32 * WORD_BITS + (WORD_BITS - 1 - word.leading_zeros()));
            }
        }
        None
    }

    pub fn iter(&self) -> Iter<'_> {
        Iter { set: self, next: 0 }
    }

    /// The words from the first that holds a CPU to the last; `None` when the set is empty.
    pub(crate) fn nonzero_words(&self) -> Option<std::ops::Range<usize>> {
        let first = self.words.iter().position(|&x| x != 0)?;
        let last = self.words.iter().rposition(|&x| x != 0).unwrap_or(first);
        Some(first..last + 1)
    }

    /// The set's CPUs below `n_bits` in a set of exactly that width (`self & full(n_bits)`,
    /// without building the full set: a copy of the words).
    pub(crate) fn resized(&self, n_bits: u32) -> CpuSet {
        let n = words_for(n_bits);
        let mut words = Vec::with_capacity(n);
        words.extend_from_slice(&self.words[..n.min(self.words.len())]);
        words.resize(n, 0);
        let rest = n_bits % WORD_BITS;
        if let (Some(last), true) = (words.last_mut(), rest != 0) {
            *last &= (1u64 << rest) - 1;
        }
        CpuSet { words }
    }

    /// `self & other` as a new set.
    pub fn and(&self, other: &CpuSet) -> CpuSet {
        let n = self.words.len().min(other.words.len());
        CpuSet {
            words: (0..n).map(|i| self.words[i] & other.words[i]).collect(),
        }
    }

    /// `self & !other` as a new set.
    pub fn andnot(&self, other: &CpuSet) -> CpuSet {
        let mut out = self.clone();
        out.andnot_assign(other);
        out
    }

    /// `self | other` as a new set.
    #[cfg(test)]
    pub(crate) fn or(&self, other: &CpuSet) -> CpuSet {
        let mut out = self.clone();
        out.or_assign(other);
        out
    }

    pub(crate) fn and_assign(&mut self, other: &CpuSet) {
        for (i, w) in self.words.iter_mut().enumerate() {
            *w &= other.words.get(i).copied().unwrap_or(0);
        }
    }

    pub fn andnot_assign(&mut self, other: &CpuSet) {
        for (w, o) in self.words.iter_mut().zip(other.words.iter()) {
            *w &= !o;
        }
    }

    pub fn or_assign(&mut self, other: &CpuSet) {
        if other.words.len() > self.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (w, o) in self.words.iter_mut().zip(other.words.iter()) {
            *w |= o;
        }
    }

    /// `|self & other|` without building the intersection.
    pub(crate) fn and_weight(&self, other: &CpuSet) -> u32 {
        self.words
            .iter()
            .zip(other.words.iter())
            .map(|(a, b)| (a & b).count_ones())
            .sum()
    }

    pub fn intersects(&self, other: &CpuSet) -> bool {
        self.words.iter().zip(other.words.iter()).any(|(a, b)| a & b != 0)
    }

    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.words
            .iter()
            .enumerate()
            .all(|(i, &w)| w & !other.words.get(i).copied().unwrap_or(0) == 0)
    }

    /// The bitmap's 64-bit words, lowest CPUs first (word `w` bit `b` is CPU `64 * w + b`).
    /// May be shorter than the width asked for at construction; missing words read as zero.
    pub(crate) fn words(&self) -> &[u64] {
        &self.words
    }

    /// Kernel cpulist text (`0-3,8`), see [`crate::topology::cpulist`].
    pub fn to_cpulist(&self) -> String {
        super::cpulist::format_cpulist(self)
    }
}

fn words_for(n_bits: u32) -> usize {
    n_bits.div_ceil(WORD_BITS) as usize
}

impl PartialEq for CpuSet {
    fn eq(&self, other: &CpuSet) -> bool {
        let n = self.words.len().max(other.words.len());
        (0..n).all(|i| self.words.get(i).copied().unwrap_or(0) == other.words.get(i).copied().unwrap_or(0))
    }
}

impl Eq for CpuSet {}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({:?})", self.to_cpulist())
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_cpulist())
    }
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> CpuSet {
        CpuSet::from_cpus(iter)
    }
}

pub struct Iter<'a> {
    set: &'a CpuSet,
    next: u32,
}

impl Iterator for Iter<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        let cpu = self.set.first_from(self.next)?;
        self.next = cpu.saturating_add(1);
        Some(cpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_ops() {
        let a = CpuSet::from_cpus([0, 1, 2, 3, 8, 70]);
        assert_eq!(a.weight(), 6);
        assert_eq!(a.first(), Some(0));
        assert_eq!(a.next(3), Some(8));
        assert_eq!(a.next(8), Some(70));
        assert_eq!(a.next(70), None);
        assert_eq!(a.next_wrap(70), Some(0));
        assert_eq!(a.next(-1), Some(0));
        assert_eq!(a.nth(4), Some(8));
        assert_eq!(a.nth(5), Some(70));
        assert_eq!(a.nth(6), None);
        assert_eq!(a.last(), Some(70));
        let b = CpuSet::from_cpus([2, 3, 4, 70]);
        assert_eq!(a.and(&b).iter().collect::<Vec<_>>(), vec![2, 3, 70]);
        assert_eq!(a.andnot(&b).iter().collect::<Vec<_>>(), vec![0, 1, 8]);
        assert_eq!(a.or(&b).weight(), 7);
        assert_eq!(a.and_weight(&b), 3);
        assert!(a.intersects(&b));
        assert!(!a.intersects(&CpuSet::from_cpus([5, 6])));
        assert!(CpuSet::from_cpus([2, 3]).is_subset(&a));
        assert!(!b.is_subset(&a));
    }

    #[test]
    fn equality_ignores_width() {
        let mut wide = CpuSet::new(1024);
        wide.insert(5);
        assert_eq!(wide, CpuSet::from_cpus([5]));
        assert_ne!(wide, CpuSet::from_cpus([6]));
    }

    #[test]
    fn resized_keeps_the_cpus_below_the_width() {
        let s = CpuSet::from_cpus([0, 63, 64, 100, 200]);
        for n in [0, 1, 64, 65, 101, 201, 300] {
            let r = s.resized(n);
            assert_eq!(r.words().len(), words_for(n), "{n}");
            assert_eq!(r, s.and(&CpuSet::full(n)), "{n}");
        }
    }

    #[test]
    fn full_sets() {
        assert_eq!(CpuSet::full(0).weight(), 0);
        assert_eq!(CpuSet::full(64).weight(), 64);
        assert_eq!(CpuSet::full(65).last(), Some(64));
        assert_eq!(CpuSet::full(130).weight(), 130);
    }
}
