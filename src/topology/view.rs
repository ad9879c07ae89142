//! The kernel's view of a drawn machine: the SMT sibling mask (`topology_sibling_cpumask`) and
//! the cluster mask (`topology_cluster_cpumask`) the kernel keeps for every possible CPU, given
//! which CPUs came online.
//!
//! The drawing (the file, the editor, an import) says which CPUs share a core or a cluster.
//! The kernel only links CPUs that are up, and what a CPU that is not up sees depends on the
//! architecture:
//!
//! - **x86** (arch/x86/kernel/smpboot.c): `set_cpu_sibling_map()` runs as a CPU comes up and
//!   links it only with the CPUs already in `cpu_sibling_setup_mask` (those up before it), in
//!   its sibling mask and in `cpu_l2c_shared_mask`, which `cpu_clustergroup_mask()` and so
//!   `topology_cluster_cpumask()` return. `remove_siblinginfo()` (from `cpu_disable_common()`,
//!   when a CPU goes offline; `nosmt` brings the secondary threads up and takes them down
//!   again) clears the CPU from each sibling's masks and empties its own. A CPU never brought
//!   up (not present, `maxcpus=`) keeps the masks `smp_prepare_cpus_common()` allocated
//!   zeroed. So an online CPU sees its drawn sets restricted to online CPUs; every other CPU
//!   has empty masks.
//! - **arm64** (drivers/base/arch_topology.c): `reset_cpu_topology()` starts every possible
//!   CPU with masks of itself alone (`clear_cpu_topology()`); `update_siblings_masks()` (from
//!   `store_cpu_topology()` as a CPU comes up) links it with the online CPUs of its package,
//!   in the cluster mask those of its cluster, and in the thread-sibling mask those of its core
//!   **and** its cluster (a CPU of another cluster is skipped before the core is compared);
//!   `remove_cpu_topology()` unlinks an offlined CPU and puts it back to itself alone. So an
//!   online CPU sees its drawn sets restricted to online CPUs of its package, its SMT set also
//!   to its own cluster (or to the CPUs without one); every other CPU sees `{cpu}` as both
//!   masks.
//!
//! A CPU drawn without a cluster has the cluster mask its architecture gives a CPU the
//! firmware told nothing about:
//! - **x86**: `cpu_l2c_shared_mask` links the CPUs `match_l2c()` matches, and without an L2
//!   id (`BAD_APICID`) that is `match_smt()`: the CPU's online SMT siblings, its sibling mask
//!   (the CPU alone on a machine without SMT). Offline it is empty, as above.
//! - **arm64**: a CPU whose `cluster_id` is -1 is never linked by `update_siblings_masks()`,
//!   so its `cluster_sibling` stays `{cpu}` from `clear_cpu_topology()`, online or not.
//!
//! No x86 or arm64 kernel has an empty cluster mask; an empty one exists only in golden
//! vectors that give the kernel's masks themselves (below).
//!
//! Divergence from C, about a fact the drawing does not hold: x86 `set_cpu_sibling_map()`
//! gives every CPU masks of itself alone when the machine has neither SMT nor several cores in
//! a package (`has_mp` false); the drawing does not say how many cores the firmware
//! enumerated, so that case is not modelled.
//!
//! Golden vectors produced before the drawing carried `online` and `arch` give the kernel's
//! masks themselves (an empty cluster mask included); [`MaskRule::AsGiven`] keeps such masks
//! as they are.

use std::collections::BTreeMap;

use super::arch::Arch;
use super::CpuSet;

/// How the kernel's masks follow from the drawn sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MaskRule {
    /// The machine's architecture decides (the normal case).
    Arch(Arch),
    /// The drawn sets are the kernel's masks for every possible CPU, online or not.
    AsGiven,
}

/// Where one CPU's mask lives: the drawing's sets are shared, and only masks that differ from
/// every drawn set are stored again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    Empty,
    DrawnSmt(u32),
    DrawnCluster(u32),
    Own(u32),
}

/// The kernel's sibling and cluster masks of every CPU id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct View {
    pub(super) sibling: Vec<Slot>,
    pub(super) cluster: Vec<Slot>,
    /// Masks that are no drawn set: a drawn set restricted to online CPUs, or a CPU alone.
    pub(super) own: Vec<CpuSet>,
}

/// What [`View::build`] reads from the validated drawing.
pub(crate) struct Drawing<'a> {
    pub(crate) nr_cpu_ids: u32,
    pub(crate) possible: &'a CpuSet,
    pub(crate) online: &'a CpuSet,
    /// Per CPU id: index into `smt_sets`, or `u32::MAX` for ids that are not possible.
    pub(crate) cpu_smt: &'a [u32],
    /// Per CPU id: index into `cluster_sets`, or `u32::MAX` for no cluster.
    pub(crate) cpu_cluster: &'a [u32],
    /// Per CPU id: index into `package_sets`.
    pub(crate) cpu_package: &'a [u32],
    pub(crate) smt_sets: &'a [CpuSet],
    pub(crate) cluster_sets: &'a [CpuSet],
    pub(crate) package_sets: &'a [CpuSet],
}

const NONE: u32 = u32::MAX;

/// Which of a CPU's masks, and the drawn facts it depends on (so CPUs that share them share
/// one stored mask).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    /// x86: the drawn SMT set.
    X86Sibling(u32),
    /// x86: the drawn cluster.
    X86Cluster(u32),
    /// arm64: the drawn SMT set, the CPU's cluster (or `NONE`) and package.
    ArmSibling(u32, u32, u32),
    /// arm64: the drawn cluster and the CPU's package.
    ArmCluster(u32, u32),
}

impl View {
    pub(crate) fn build(d: &Drawing<'_>, rule: MaskRule) -> View {
        let n = d.nr_cpu_ids as usize;
        let mut view = View {
            sibling: vec![Slot::Empty; n],
            cluster: vec![Slot::Empty; n],
            own: Vec::new(),
        };
        for cpu in d.possible.iter() {
            let c = cpu as usize;
            if d.cpu_smt[c] != NONE {
                view.sibling[c] = Slot::DrawnSmt(d.cpu_smt[c]);
            }
            if d.cpu_cluster[c] != NONE {
                view.cluster[c] = Slot::DrawnCluster(d.cpu_cluster[c]);
            }
        }
        let arch = match rule {
            MaskRule::AsGiven => return view,
            MaskRule::Arch(arch) => arch,
        };
        if arch == Arch::X86_64 && d.online == d.possible {
            // Every CPU came up and linked with every drawn sibling; a CPU without a cluster
            // has its SMT siblings as its L2 group.
            for cpu in d.possible.iter() {
                let c = cpu as usize;
                if d.cpu_cluster[c] == NONE {
                    view.cluster[c] = view.sibling[c];
                }
            }
            return view;
        }
        // The CPUs drawn without a cluster: on arm64 their cluster_id is -1 and equal.
        let unclustered = {
            let mut set = d.possible.clone();
            for c in d.cluster_sets {
                set.andnot_assign(c);
            }
            set
        };
        let mut shared: BTreeMap<Key, Slot> = BTreeMap::new();
        for cpu in d.online.iter() {
            let c = cpu as usize;
            let (smt, cl, pkg) = (d.cpu_smt[c], d.cpu_cluster[c], d.cpu_package[c]);
            let (sibling_key, cluster_key) = match arch {
                Arch::X86_64 => (Key::X86Sibling(smt), (cl != NONE).then_some(Key::X86Cluster(cl))),
                Arch::Arm64 => (
                    Key::ArmSibling(smt, cl, pkg),
                    (cl != NONE).then_some(Key::ArmCluster(cl, pkg)),
                ),
            };
            view.sibling[c] = view.slot(&mut shared, sibling_key, d, &unclustered);
            view.cluster[c] = match (cluster_key, arch) {
                (Some(key), _) => view.slot(&mut shared, key, d, &unclustered),
                // No cluster drawn: x86's L2 group falls back to the SMT siblings, arm64's
                // cluster_sibling is the CPU alone.
                (None, Arch::X86_64) => view.sibling[c],
                (None, Arch::Arm64) => view.alone(d, cpu),
            };
        }
        // CPUs that are not online.
        for cpu in d.possible.andnot(d.online).iter() {
            let c = cpu as usize;
            match arch {
                // smp_prepare_cpus_common() zeroes the masks; remove_siblinginfo() empties them.
                Arch::X86_64 => {
                    view.sibling[c] = Slot::Empty;
                    view.cluster[c] = Slot::Empty;
                }
                // clear_cpu_topology(): the CPU alone, in both masks (a drawn sibling set that
                // is already the CPU alone is shared).
                Arch::Arm64 => {
                    let alone = view.alone(d, cpu);
                    view.sibling[c] = alone;
                    view.cluster[c] = alone;
                }
            }
        }
        view
    }

    /// A mask of `cpu` alone: its drawn SMT set when that is the CPU alone, else stored.
    fn alone(&mut self, d: &Drawing<'_>, cpu: u32) -> Slot {
        match d.cpu_smt[cpu as usize] {
            i if i != NONE && d.smt_sets[i as usize].weight() == 1 => Slot::DrawnSmt(i),
            _ => self.push(CpuSet::from_cpus([cpu])),
        }
    }

    fn push(&mut self, set: CpuSet) -> Slot {
        self.own.push(set);
        Slot::Own(self.own.len() as u32 - 1)
    }

    /// The slot of one online CPU's mask: the drawn set when the kernel's mask equals it,
    /// else a stored mask shared by every CPU with the same key.
    fn slot(&mut self, shared: &mut BTreeMap<Key, Slot>, key: Key, d: &Drawing<'_>, unclustered: &CpuSet) -> Slot {
        if let Some(&slot) = shared.get(&key) {
            return slot;
        }
        let (drawn, slot_of_drawn, mut mask) = match key {
            Key::X86Sibling(s) | Key::ArmSibling(s, _, _) => {
                let set = &d.smt_sets[s as usize];
                (set, Slot::DrawnSmt(s), set.and(d.online))
            }
            Key::X86Cluster(c) | Key::ArmCluster(c, _) => {
                let set = &d.cluster_sets[c as usize];
                (set, Slot::DrawnCluster(c), set.and(d.online))
            }
        };
        match key {
            Key::ArmSibling(_, cl, pkg) => {
                mask.and_assign(&d.package_sets[pkg as usize]);
                mask.and_assign(if cl == NONE {
                    unclustered
                } else {
                    &d.cluster_sets[cl as usize]
                });
            }
            Key::ArmCluster(_, pkg) => mask.and_assign(&d.package_sets[pkg as usize]),
            Key::X86Sibling(_) | Key::X86Cluster(_) => {}
        }
        let slot = if mask == *drawn { slot_of_drawn } else { self.push(mask) };
        shared.insert(key, slot);
        slot
    }
}
