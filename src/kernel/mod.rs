//! Faithful models of kernel code, one file per kernel source file.
//!
//! Each file names the kernel version(s) it models and keeps the kernel's function names and
//! order so a reviewer can hold the model beside the C. Everything here is pure: no I/O, no
//! clocks, no randomness, no serde. Masks and counters are parameters, never globals. A
//! condition on which the kernel would `WARN` is returned as a [`KernelWarn`] beside the result;
//! `assert!` is kept for bugs in irqscope itself.
//!
//! `mana` models a network driver's own IRQ set-up and `sched` the scheduler's NUMA
//! imbalance decision; both are self-contained (their inputs are plain vectors, as in the spec).
//!
//! | file | kernel source |
//! |---|---|
//! | `sort.rs` | lib/sort.c (three heapsort generations) |
//! | `group_cpus.rs` (+ `_rotation`, `_window`) | lib/group_cpus.c; every variant a row of one `Rules` table |
//! | `group_cpus_external.rs` | none: the one injection point for code outside the models (built C) |
//! | `irq_affinity.rs` | kernel/irq/affinity.c, the `numgrps` and `nummasks` eras |
//! | `irqdesc.rs` | kernel/irq/irqdesc.c, the empty-mask check of `alloc_descs()` |
//! | `manage.rs`, `isolation.rs` | kernel/irq/manage.c start-up affinity; kernel/sched/isolation.c |
//! | `vector_matrix.rs` | kernel/irq/matrix.c as arch/x86/kernel/apic/vector.c drives it |
//! | `irq_gic_v3_its.rs` | drivers/irqchip/irq-gic-v3-its.c, per-CPU LPI counts |
//! | `blk_mq_cpumap.rs` | block/blk-mq-cpumap.c, five mapper generations |
//! | `mana.rs` | drivers/net/ethernet/microsoft/mana/gdma_main.c's IRQ set-up |
//! | `sched/` | kernel/sched/topology.c and fair.c |
//! | `release.rs` | data: what each release runs of the models above |
//!
//! A long kernel file may be split here; two kernel files are never merged into one.

pub(crate) mod blk_mq_cpumap;
pub(crate) mod group_cpus;
pub mod irq_affinity;
pub(crate) mod irq_gic_v3_its;
pub(crate) mod irqdesc;
pub(crate) mod isolation;
pub mod mana;
pub(crate) mod manage;
pub mod release;
pub mod sched;
pub(crate) mod sort;
pub mod vector_matrix;

pub use group_cpus::{
    group_cpus_evenly, BootMasks, External, ExternalError, ExternalGroupCpus, Grouping, Spreader, Stage, StageAnswer,
    Variant,
};
pub use sort::SortGen;

use std::fmt;

/// A condition on which the modelled kernel code would `WARN` (or misbehave), as data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelWarn {
    /// `group_cpus_evenly`: fewer groups got CPUs than were asked for (more groups than possible
    /// CPUs). `warns`: the release's C has `WARN_ON(nr_present + nr_others < numgrps)` (the
    /// `numgrps` API, v6.3 .. v6.16, Debian's 6.12); later ones report `nummasks` instead and
    /// do not warn. The model sets it; a caller that knows the release clears it
    /// ([`KernelWarn::for_era`]).
    GroupsUnfilled {
        numgrps: u32,
        initialized: u32,
        warns: bool,
    },
    /// `WARN_ON_ONCE(nv->ngroups > ncpus)`: a node got more groups than it has CPUs.
    GroupsExceedCpus { node: u32, ngroups: u32, ncpus: u32 },
    /// `WARN_ON_ONCE(nv->ngroups > nc)` in `__try_group_cluster_cpus()`: a cluster (named by its
    /// lowest CPU in the node) got more groups than it has CPUs.
    ClusterGroupsExceedCpus {
        node: u32,
        first_cpu: u32,
        ngroups: u32,
        ncpus: u32,
    },
    /// `WARN_ON_ONCE(numgrps == 0)` in the allocation loop: groups ran out before domains did.
    GroupsExhausted { domain: u32 },
    /// A domain was handed zero groups (the kernel would divide by zero).
    ZeroGroups,
    /// `rotation-ohcl`: extra groups left over with every domain full (the kernel would loop forever).
    ExtrasUnplaced { left: u32 },
    /// `irq_create_affinity_masks`: `WARN_ON_ONCE(nr_sets > IRQ_AFFINITY_MAX_SETS)`, returns NULL.
    TooManySets { nr_sets: u32 },
    /// `blk_mq_pci_map_queues()`: a queue's vector has no mask (`WARN_ON_ONCE(nr_queues > 1)`);
    /// the map is cleared to queue 0.
    QueueWithoutVector { queue: u32 },
    /// Built C (`c:NAME`) hit a `WARN_ON()` family check: the file (`group_cpus.c`,
    /// `affinity.c`, `blk-mq-cpumap.c`), its line there and the condition as written there.
    C { file: String, line: u32, condition: String },
}

impl KernelWarn {
    /// The warning as a release of the `irq_create_affinity_masks()` era `era` has it: only the
    /// `numgrps` era's `group_cpus_evenly()` WARNs when groups go unfilled.
    pub(crate) fn for_era(self, era: irq_affinity::AffinityEra) -> KernelWarn {
        match self {
            KernelWarn::GroupsUnfilled {
                numgrps, initialized, ..
            } => KernelWarn::GroupsUnfilled {
                numgrps,
                initialized,
                warns: era == irq_affinity::AffinityEra::NumGrps,
            },
            other => other,
        }
    }
}

impl fmt::Display for KernelWarn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelWarn::GroupsUnfilled {
                numgrps,
                initialized,
                warns: true,
            } => write!(
                f,
                "only {initialized} of {numgrps} groups got CPUs (v6.3 .. v6.16 WARN: nr_present + nr_others < numgrps)"
            ),
            KernelWarn::GroupsUnfilled {
                numgrps,
                initialized,
                warns: false,
            } => write!(
                f,
                "only {initialized} of {numgrps} groups got CPUs (the kernel returns nummasks {initialized}; no WARN)"
            ),
            KernelWarn::GroupsExceedCpus { node, ngroups, ncpus } => {
                write!(f, "WARN: node {node} got {ngroups} groups for {ncpus} CPUs")
            }
            KernelWarn::ClusterGroupsExceedCpus {
                node,
                first_cpu,
                ngroups,
                ncpus,
            } => write!(
                f,
                "WARN: the cluster of CPU {first_cpu} in node {node} got {ngroups} groups for {ncpus} CPUs"
            ),
            KernelWarn::GroupsExhausted { domain } => {
                write!(f, "WARN: no groups left when allocating domain {domain}")
            }
            KernelWarn::ZeroGroups => write!(f, "a domain got zero groups (division by zero in the kernel)"),
            KernelWarn::ExtrasUnplaced { left } => {
                write!(f, "{left} extra groups cannot be placed: the kernel would loop forever")
            }
            KernelWarn::TooManySets { nr_sets } => {
                write!(
                    f,
                    "WARN: {nr_sets} interrupt sets, at most 4 (IRQ_AFFINITY_MAX_SETS); no affinity"
                )
            }
            KernelWarn::C { file, line, condition } => {
                write!(f, "WARN at {file}:{line}: {condition}")
            }
            KernelWarn::QueueWithoutVector { queue } => write!(
                f,
                "WARN: queue {queue} has no interrupt vector; blk_mq_pci_map_queues() puts every CPU on queue 0"
            ),
        }
    }
}
