//! A machine as the harness reads it (`topo`, `node`, `present`, `online`, `smt` and
//! `cluster` lines; `kernel-c/harness.c` says the format) and the key that names it, computed
//! without writing the text, so that a process is sent each machine once.

use crate::topology::cpulist::{push_cpulist, push_u64};
use crate::topology::{CpuSet, Topology};

/// A machine as the harness sees it, keyed without writing it out: `key` hashes exactly what
/// `topology_text` sends (ids, each possible CPU's node, the present CPUs, each CPU's
/// sibling and cluster mask), so the same key is the same machine to the C. Computing it
/// reads each CPU once and each distinct mask's words once; the text is written only when a
/// harness process does not hold the machine yet.
pub(crate) struct Machine<'a> {
    pub(crate) topo: &'a Topology,
    pub(crate) key: u64,
    /// Per kind (siblings, clusters): the distinct masks, and for each possible CPU the index
    /// of its mask among them (`EMPTY_SET`: an empty mask).
    kinds: [Kind<'a>; 2],
}

/// One kind of mask (siblings, clusters): the distinct non-empty masks with the range of
/// their words that is not zero, and for each possible CPU the index of its mask among them
/// (`EMPTY_SET`: an empty mask).
type Kind<'a> = (Vec<(&'a CpuSet, std::ops::Range<usize>)>, Vec<u32>);

/// Which of the masks a kind's CPUs point at is which, in order of first use.
struct SetIndex<'a> {
    /// Every list the masks come from ([`Topology::kernel_mask_sets`]), and per entry its
    /// index among `seen`, `EMPTY_SET`, or `UNSEEN`.
    lists: [(&'a [CpuSet], Vec<u32>); 3],
    /// The distinct non-empty masks, with the range of their words that is not zero.
    seen: Vec<(&'a CpuSet, std::ops::Range<usize>)>,
}

/// A kernel mask accessor of [`Topology`] ([`Topology::smt`], [`Topology::cluster`]).
type MaskOf = fn(&Topology, u32) -> &CpuSet;

const EMPTY_SET: u32 = u32::MAX;
const UNSEEN: u32 = u32::MAX - 1;

impl<'a> SetIndex<'a> {
    fn new(topo: &'a Topology) -> SetIndex<'a> {
        SetIndex {
            lists: topo.kernel_mask_sets().map(|l| (l, vec![UNSEEN; l.len()])),
            seen: Vec::new(),
        }
    }

    /// The index of `m` (`EMPTY_SET` for an empty mask), found by address: the kernel view
    /// hands out references into the topology's lists for every CPU (a cluster that is its
    /// core's SMT set is that set), so each entry is read once. A mask from elsewhere is
    /// found by content.
    fn of(&mut self, m: &'a CpuSet) -> u32 {
        let size = std::mem::size_of::<CpuSet>();
        let at = m as *const CpuSet as usize;
        let mut entry = None;
        for (l, (list, _)) in self.lists.iter().enumerate() {
            let base = list.as_ptr() as usize;
            if size > 0 && at >= base && at < base + std::mem::size_of_val(*list) && (at - base).is_multiple_of(size) {
                entry = Some((l, (at - base) / size));
                break;
            }
        }
        let Some((l, i)) = entry else {
            return self.by_content(m);
        };
        if self.lists[l].1[i] == UNSEEN {
            self.lists[l].1[i] = match m.nonzero_words() {
                None => EMPTY_SET,
                Some(range) => {
                    self.seen.push((m, range));
                    (self.seen.len() - 1) as u32
                }
            };
        }
        self.lists[l].1[i]
    }

    /// The index of `m` among the masks seen, by what it holds (a new one when none holds
    /// the same CPUs).
    fn by_content(&mut self, m: &'a CpuSet) -> u32 {
        let Some(range) = m.nonzero_words() else {
            return EMPTY_SET;
        };
        let words = &m.words()[range.clone()];
        match self
            .seen
            .iter()
            .rposition(|(s, r)| *r == range && &s.words()[r.clone()] == words)
        {
            Some(k) => k as u32,
            None => {
                self.seen.push((m, range));
                (self.seen.len() - 1) as u32
            }
        }
    }
}

impl<'a> Machine<'a> {
    pub(crate) fn of(topo: &'a Topology) -> Machine<'a> {
        use std::hash::Hasher;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let n = topo.nr_cpu_ids();
        h.write_u32(n);
        h.write_u32(topo.nr_node_ids());
        let possible = topo.possible();
        let trimmed = |w: &'a [u64]| -> &'a [u64] {
            let end = w.iter().rposition(|&x| x != 0).map_or(0, |i| i + 1);
            &w[..end]
        };
        for set in [possible, topo.present(), topo.online()] {
            let w = trimmed(set.words());
            h.write_usize(w.len());
            w.iter().for_each(|&x| h.write_u64(x));
        }
        for cpu in possible.iter().take_while(|&c| c < n) {
            h.write_u32(topo.cpu_to_node(cpu));
        }
        let mut kinds: [Kind; 2] = Default::default();
        let accessors: [MaskOf; 2] = [Topology::smt, Topology::cluster];
        for (get, (seen, of)) in accessors.into_iter().zip(kinds.iter_mut()) {
            // The sequence of indices names which CPUs share a mask; the masks' words, what
            // each mask holds. A mask the CPUs point at in a new order is a new key.
            let mut index = SetIndex::new(topo);
            for cpu in possible.iter().take_while(|&c| c < n) {
                let i = index.of(get(topo, cpu));
                of.push(i);
                h.write_u32(i);
            }
            for (set, range) in &index.seen {
                h.write_usize(range.start);
                h.write_usize(range.len());
                set.words()[range.clone()].iter().for_each(|&x| h.write_u64(x));
            }
            *seen = index.seen;
        }
        Machine {
            topo,
            key: h.finish(),
            kinds,
        }
    }

    /// The machine as the harness reads it: `topo`, `node`, `present`, then one `smt` and one
    /// `cluster` line per distinct mask (the CPUs that have it, then the mask; the mask alone
    /// when those CPUs are the mask), taken from
    /// the same accessors the models read ([`Topology::smt`], [`Topology::cluster`],
    /// [`Topology::cpu_to_node`]), so the C sees the kernel's view the models see.
    pub(crate) fn text(&self) -> String {
        let topo = self.topo;
        let n = topo.nr_cpu_ids();
        let possible = topo.possible();
        let mut s = String::with_capacity(64 + 3 * n as usize);
        s.push_str("topo ");
        push_u64(&mut s, u64::from(n));
        s.push(' ');
        push_u64(&mut s, u64::from(topo.nr_node_ids()));
        s.push_str("\nnode");
        for cpu in 0..n {
            if possible.contains(cpu) {
                s.push(' ');
                push_u64(&mut s, u64::from(topo.cpu_to_node(cpu)));
            } else {
                s.push_str(" -1");
            }
        }
        s.push_str("\npresent ");
        s.push_str(&topo.present().to_cpulist());
        s.push_str("\nonline ");
        s.push_str(&topo.online().to_cpulist());
        s.push('\n');
        let cpus: Vec<u32> = possible.iter().take_while(|&c| c < n).collect();
        for (kind, (sets, of)) in ["smt", "cluster"].into_iter().zip(&self.kinds) {
            let mut who: Vec<Vec<u32>> = vec![Vec::new(); sets.len()];
            for (&cpu, &i) in cpus.iter().zip(of) {
                if i != EMPTY_SET {
                    who[i as usize].push(cpu);
                }
            }
            for ((set, range), who) in sets.iter().zip(&who) {
                let words = &set.words()[range.clone()];
                s.push_str(kind);
                s.push(' ');
                // A mask its CPUs make up exactly (the usual case) is written once.
                let weight: u32 = words.iter().map(|w| w.count_ones()).sum();
                if weight as usize != who.len() || !who.iter().all(|&c| set.contains(c)) {
                    push_cpulist(&mut s, who.iter().copied());
                    s.push(' ');
                }
                push_cpulist(&mut s, word_bits(words, range.start));
                s.push('\n');
            }
        }
        s.push_str("end\n");
        s
    }
}

/// The ids of the bits set in `words`, the first of which is word `first` of its mask, in
/// ascending order.
fn word_bits(words: &[u64], first: usize) -> impl Iterator<Item = u32> + '_ {
    words.iter().enumerate().flat_map(move |(k, &w)| {
        let base = ((first + k) * 64) as u32;
        let mut rest = w;
        std::iter::from_fn(move || {
            (rest != 0).then(|| {
                let bit = rest.trailing_zeros();
                rest &= rest - 1;
                base + bit
            })
        })
    })
}

/// The catalogue's own instance when `topo` is one. The catalogue keeps its machines for the
/// life of the process and never changes them, so a preset found by its address is the same
/// machine every time and its key is computed once ([`KernelC::call`]); any other topology is
/// keyed on every call, since a freed one's address may come back holding another machine.
///
/// [`KernelC::call`]: super::runner::KernelC::call
pub(super) fn catalogue_instance(topo: &Topology) -> Option<&'static Topology> {
    crate::catalogue::all().find_map(|(_, t)| match t {
        Ok(a) if std::ptr::eq(&**a, topo) => Some(&**a),
        _ => None,
    })
}

/// The machine as the harness reads it (see [`Machine::text`]).
#[cfg(test)]
pub(crate) fn topology_text(topo: &Topology) -> String {
    Machine::of(topo).text()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::TopologySpec;

    fn gen(text: &str) -> Topology {
        Topology::new(&toml::from_str::<TopologySpec>(&format!("name = 'g'\n[generate]\n{text}")).unwrap()).unwrap()
    }

    #[test]
    fn a_mask_its_cpus_make_up_is_written_once() {
        let t = gen("nodes_per_package = 2\ncores_per_node = 2\nthreads_per_core = 2\nclusters = 'core'\n");
        let text = topology_text(&t);
        assert_eq!(
            text,
            "topo 8 2\nnode 0 0 0 0 1 1 1 1\npresent 0-7\nonline 0-7\n\
             smt 0-1\nsmt 2-3\nsmt 4-5\nsmt 6-7\n\
             cluster 0-1\ncluster 2-3\ncluster 4-5\ncluster 6-7\nend\n"
        );
    }

    #[test]
    fn the_key_names_the_machine_the_c_sees() {
        let a = gen("cores_per_node = 4\nthreads_per_core = 2\n");
        let b = gen("cores_per_node = 4\nthreads_per_core = 2\n");
        let c = gen("cores_per_node = 8\n");
        let d = gen("cores_per_node = 4\nthreads_per_core = 2\nclusters = 2\n");
        assert_eq!(Machine::of(&a).key, Machine::of(&b).key);
        assert_ne!(Machine::of(&a).key, Machine::of(&c).key);
        assert_ne!(Machine::of(&a).key, Machine::of(&d).key);
    }
}
