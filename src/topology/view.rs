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
//!   CPU with masks of itself alone (`clear_cpu_topology()`), `update_siblings_masks()` links a
//!   CPU coming online with the online CPUs that share its core or cluster, and
//!   `remove_cpu_topology()` unlinks an offlined CPU and puts it back to itself alone. So an
//!   online CPU sees its drawn sets restricted to online CPUs; every other CPU sees `{cpu}` as
//!   both masks.
//!
//! A drawn CPU without a cluster keeps an empty cluster mask while online (the drawing's
//! meaning of "no cluster"; the models' `alloc_cluster_groups()` then takes the plain path).
//!
//! Divergence from C: x86 `set_cpu_sibling_map()` gives every CPU masks of itself alone when
//! the machine has neither SMT nor several cores in a package (`has_mp` false); the drawing
//! does not say how many cores the firmware enumerated, so that case is not modelled.
//!
//! Golden vectors produced before the drawing carried `online` and `arch` give the kernel's
//! masks themselves; [`MaskRule::AsGiven`] keeps such masks as they are.

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
    pub nr_cpu_ids: u32,
    pub possible: &'a CpuSet,
    pub online: &'a CpuSet,
    /// Per CPU id: index into `smt_sets`, or `u32::MAX` for ids that are not possible.
    pub cpu_smt: &'a [u32],
    /// Per CPU id: index into `cluster_sets`, or `u32::MAX` for no cluster.
    pub cpu_cluster: &'a [u32],
    pub smt_sets: &'a [CpuSet],
    pub cluster_sets: &'a [CpuSet],
}

const NONE: u32 = u32::MAX;

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
        // Online CPUs: each drawn set that holds an offline CPU becomes, for its online
        // members, the set restricted to online CPUs (one stored copy per drawn set).
        let restrict = |sets: &[CpuSet], slots: &mut [Slot], own: &mut Vec<CpuSet>, drawn: fn(u32) -> Slot| {
            for (i, set) in sets.iter().enumerate() {
                if set.is_subset(d.online) {
                    continue;
                }
                let up = set.and(d.online);
                let slot = if up.is_empty() {
                    Slot::Empty
                } else {
                    own.push(up.clone());
                    Slot::Own(own.len() as u32 - 1)
                };
                for cpu in up.iter() {
                    debug_assert_eq!(slots[cpu as usize], drawn(i as u32));
                    slots[cpu as usize] = slot;
                }
            }
        };
        restrict(d.smt_sets, &mut view.sibling, &mut view.own, Slot::DrawnSmt);
        restrict(d.cluster_sets, &mut view.cluster, &mut view.own, Slot::DrawnCluster);
        // CPUs that are not online.
        for cpu in d.possible.andnot(d.online).iter() {
            let c = cpu as usize;
            match arch {
                // smp_prepare_cpus_common() zeroes the masks; remove_siblinginfo() empties them.
                Arch::X86_64 => {
                    view.sibling[c] = Slot::Empty;
                    view.cluster[c] = Slot::Empty;
                }
                // clear_cpu_topology(): the CPU alone, in both masks (a drawn set that is
                // already the CPU alone is shared).
                Arch::Arm64 => {
                    let alone = match view.sibling[c] {
                        Slot::DrawnSmt(i) if d.smt_sets[i as usize].weight() == 1 => view.sibling[c],
                        _ => {
                            view.own.push(CpuSet::from_cpus([cpu]));
                            Slot::Own(view.own.len() as u32 - 1)
                        }
                    };
                    view.sibling[c] = alone;
                    view.cluster[c] = alone;
                }
            }
        }
        view
    }
}
