//! Model of `lib/group_cpus.c`: `group_cpus_evenly()` in six named variants.
//!
//! The file reads in the C's order (helpers first, the exported entry point last) and keeps the
//! C's function names; leading underscores are dropped and the C name is given in each doc.
//! Everything a variant changes is one field of `Rules`, built once per call by `rules()`; the
//! bodies of the rotation patches are in `group_cpus_rotation.rs`, so this file is upstream
//! only and the patch is read on its own.
//!
//! | variant | code modelled |
//! |---|---|
//! | `pre-cluster` | torvalds/linux `lib/group_cpus.c` blob `6d08ac05f371`: v6.3 (the file's creation) up to the parent of `136114e0abf0`; the same placement as `irq_build_affinity_masks()` of v5.x..v6.2. NUMA-aware only |
//! | `cluster` | torvalds/linux `136114e0abf0` "lib/group_cpus: make group CPU cluster aware" (blob `a93df70919df`) |
//! | `rotation` | the per-caller rotation ("spread counter") patch, newest revision: namancse/linux `9dd308490b7e` |
//! | `rotation-ohcl` | an earlier revision of that patch ("pooled extras" with a stride): microsoft/OHCL-Linux-Kernel `42964c436995` |
//! | `rotation-v1` | the first posted revision, as published: microsoft/OHCL-Linux-Kernel `e21bb8ee0b0b` |
//! | `rotation-v1r` | a **reconstruction** of the first posted revision from its commit message, not published code (kept frozen for old links; `rotation-v1` is the code) |
//!
//! Pure: no I/O, no globals. The present and possible masks come from the [`Topology`]
//! parameter and the rotation patch's global counter is a `&mut u32` owned by the caller, so a
//! scenario decides the probe order and the counter's starting value. Kernel `WARN`s come back
//! as [`KernelWarn`] values.
//!
//! Postcondition of [`group_cpus_evenly`] (the kernel's, checked by a property test): every
//! possible CPU lands in exactly one group. The result is therefore stored as "the group of each
//! CPU" ([`Grouping`]), which is both cheaper than an array of cpumasks and makes "a CPU in two
//! groups" unrepresentable.
//!
//! Speed: the working masks are `Window`s, kept over the words their node occupies (see
//! `group_cpus_window.rs`), and their buffers are allocated once per call and reused for every
//! node and cluster; nothing else differs from the C's walks.

#[path = "group_cpus_external.rs"]
mod external;
#[path = "group_cpus_rotation.rs"]
mod rotation;
#[path = "group_cpus_window.rs"]
mod window;

use super::sort::{sort, SortGen};
use super::KernelWarn;
use crate::topology::{CpuSet, Topology};
use window::Window;

pub use external::{BootMasks, External, ExternalError, ExternalGroupCpus, Spreader, Stage, StageAnswer};

/// The named `group_cpus_evenly` variants. A variant's behaviour never changes once named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Variant {
    PreCluster,
    Cluster,
    Rotation,
    RotationOhcl,
    RotationV1r,
    RotationV1,
}

impl Variant {
    pub const ALL: [Variant; 6] = [
        Variant::PreCluster,
        Variant::Cluster,
        Variant::Rotation,
        Variant::RotationOhcl,
        Variant::RotationV1r,
        Variant::RotationV1,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Variant::PreCluster => "pre-cluster",
            Variant::Cluster => "cluster",
            Variant::Rotation => "rotation",
            Variant::RotationOhcl => "rotation-ohcl",
            Variant::RotationV1r => "rotation-v1r",
            Variant::RotationV1 => "rotation-v1",
        }
    }

    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }

    /// One line saying what code the variant models.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Variant::PreCluster => "lib/group_cpus.c as of v6.3, NUMA-node aware only",
            Variant::Cluster => "upstream cluster-aware lib/group_cpus.c",
            Variant::Rotation => "per-caller rotation patch, newest revision (proposed)",
            Variant::RotationOhcl => "per-caller rotation patch, pooled-extras revision (proposed)",
            Variant::RotationV1r => {
                "RECONSTRUCTION of the posted v1 rotation patch from its commit message, not published code \
                 (rotation-v1 is the posted code)"
            }
            Variant::RotationV1 => "per-caller rotation patch, first posted revision (proposed)",
        }
    }

    /// Whether the variant reads and advances the global spread counter.
    pub fn uses_counter(self) -> bool {
        rules(self).counter
    }

    /// Whether a one-group call takes a counter value too (`rotation-v1` reads the counter
    /// before it tests `numgrps`); the other rotation variants leave it alone then.
    pub fn counts_one_group_calls(self) -> bool {
        let r = rules(self);
        r.counter && r.counter_on_one_group
    }
}

/// How one level's groups are split over its domains (`alloc_groups_to_nodes()` and what the
/// rotation patches put in its place).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Alloc {
    /// Upstream: `max(1, remaining groups * ncpus / remaining CPUs)`, smallest domain first.
    Ratio,
    /// `rotation`: the ratio split, then groups re-dealt inside every run of equal-sized domains
    /// from the rotating offset.
    EqualClasses,
    /// `rotation-ohcl`: every domain's share of the whole, the difference pooled and dealt out
    /// with a stride from the offset.
    PooledExtras,
}

/// Where the few-groups walk (`numgrps <= nodes`) of `__group_cpus_evenly()` starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FewGroups {
    /// Upstream: the lowest active node.
    Lowest,
    /// `rotation`: the active node at `offset % nodes` when all active nodes are equal-sized.
    RotatedIfEqual,
    /// `rotation-ohcl`: always the active node at `offset % nodes`.
    Rotated,
}

/// Which groups of a domain get the rounding CPU in `assign_cpus_to_groups()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Extras {
    /// Upstream: the first `ncpus % ngroups` groups.
    First,
    /// `rotation`, `rotation-ohcl`, `rotation-v1r`: group `v` iff
    /// `(v + offset % ngroups) % ngroups < extra`.
    Modular,
    /// `rotation-v1`: group `v` iff `extra > 0` and `((v + offset) mod 2^32) % ngroups <
    /// extra`: the offset is added unreduced in 32 bits, so near 2^32 the sum wraps and more
    /// than `extra` groups can qualify (the domain then runs out of CPUs before its last
    /// groups, which stay short or empty).
    ModularUnreduced,
}

/// How `grp_spread_init_one()` picks the next CPU of a domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fill {
    /// Upstream: the lowest CPU left.
    Lowest,
    /// `rotation`: the lowest CPU above a per-domain cursor that starts at a rotated position.
    Cursor,
}

/// Every decision in which the variants differ, as plain fields: the one table the code
/// consults at its branch points. `model` names the code the row models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rules {
    /// The kernel code (commit, version) this row models.
    pub(crate) model: &'static str,
    /// Reads and advances the global spread counter (offset = counter, once per call with
    /// `numgrps >= 2`); without it the offset is 0.
    pub(crate) counter: bool,
    /// A one-group call takes a counter value too (`rotation-v1`: `atomic_fetch_inc()` before
    /// any test of `numgrps`); otherwise it uses offset 0 and leaves the counter alone.
    pub(crate) counter_on_one_group: bool,
    pub(crate) few_groups: FewGroups,
    /// Split of a stage's groups over the NUMA nodes (`alloc_nodes_groups()`).
    pub(crate) node_alloc: Alloc,
    /// Whether `__try_group_cluster_cpus()` is tried for every node.
    pub(crate) cluster_path: bool,
    /// Split of a node's groups over its clusters (`alloc_cluster_groups()`).
    pub(crate) cluster_alloc: Alloc,
    /// A cluster is assigned with the size kept in its record (`ncpus`) rather than the weight
    /// of `node & cluster` recomputed in `__try_group_cluster_cpus()` (equal for partitioning
    /// clusters; the rotation revisions read the record).
    pub(crate) cluster_size_from_record: bool,
    pub(crate) extras: Extras,
    pub(crate) fill: Fill,
}

/// The rules of one variant (the table of the module doc, as code).
pub fn rules(variant: Variant) -> Rules {
    let upstream = Rules {
        model: "",
        counter: false,
        counter_on_one_group: false,
        few_groups: FewGroups::Lowest,
        node_alloc: Alloc::Ratio,
        cluster_path: false,
        cluster_alloc: Alloc::Ratio,
        cluster_size_from_record: false,
        extras: Extras::First,
        fill: Fill::Lowest,
    };
    match variant {
        Variant::PreCluster => Rules {
            model: "torvalds/linux lib/group_cpus.c blob 6d08ac05f371 (v6.3 to the parent of 136114e0abf0)",
            ..upstream
        },
        Variant::Cluster => Rules {
            model: "torvalds/linux 136114e0abf0 \"lib/group_cpus: make group CPU cluster aware\"",
            cluster_path: true,
            ..upstream
        },
        Variant::Rotation => Rules {
            model: "rotation patch, newest revision: namancse/linux 9dd308490b7e",
            counter: true,
            counter_on_one_group: false,
            few_groups: FewGroups::RotatedIfEqual,
            node_alloc: Alloc::EqualClasses,
            cluster_path: true,
            cluster_alloc: Alloc::EqualClasses,
            cluster_size_from_record: true,
            extras: Extras::Modular,
            fill: Fill::Cursor,
        },
        Variant::RotationOhcl => Rules {
            model: "rotation patch, pooled-extras revision: microsoft/OHCL-Linux-Kernel 42964c436995",
            counter: true,
            counter_on_one_group: false,
            few_groups: FewGroups::Rotated,
            node_alloc: Alloc::PooledExtras,
            cluster_path: true,
            cluster_alloc: Alloc::PooledExtras,
            cluster_size_from_record: true,
            extras: Extras::Modular,
            fill: Fill::Lowest,
        },
        Variant::RotationV1r => Rules {
            model: "rotation patch v1, reconstructed from its commit message (not published code)",
            counter: true,
            cluster_path: true,
            cluster_alloc: Alloc::PooledExtras,
            extras: Extras::Modular,
            ..upstream
        },
        // The row of `rotation-v1r` with the two rules in which the published code differs
        // from the reconstruction (../shared/golden-rotation-v1/README.md, checked against the
        // C): every call takes a counter value, and the extras test adds the offset unreduced.
        Variant::RotationV1 => Rules {
            model: "rotation patch v1 as published: microsoft/OHCL-Linux-Kernel e21bb8ee0b0b lib/group_cpus.c",
            counter: true,
            counter_on_one_group: true,
            cluster_path: true,
            cluster_alloc: Alloc::PooledExtras,
            extras: Extras::ModularUnreduced,
            ..upstream
        },
    }
}

/// Marks a CPU that belongs to no group.
pub(crate) const NO_GROUP: u32 = u32::MAX;

/// The result of one `group_cpus_evenly(numgrps)` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grouping {
    numgrps: u32,
    nummasks: u32,
    group_of: Vec<u32>,
    spread_offset: Option<u32>,
    /// Whether the call took its offset from the counter (and advanced it).
    consumed: bool,
}

impl Grouping {
    /// A grouping from outside code: `consumed` is the counter value the call took, if it took
    /// one (which is then also the offset it used).
    fn new(numgrps: u32, nummasks: u32, group_of: Vec<u32>, consumed: Option<u32>) -> Grouping {
        Grouping {
            numgrps,
            nummasks,
            group_of,
            spread_offset: consumed,
            consumed: consumed.is_some(),
        }
    }
    /// Initialized masks (`min(nr_present + nr_others, numgrps)`).
    pub fn nummasks(&self) -> u32 {
        self.nummasks
    }
    /// The offset this call used (rotation variants only; 0 for a one-group call, except under
    /// `rotation-v1`, whose one-group calls take a counter value like any other).
    pub(crate) fn spread_offset(&self) -> Option<u32> {
        self.spread_offset
    }
    /// The counter value this call consumed: the offset for rotation variants with
    /// `numgrps >= 2` (every call under `rotation-v1`), `None` otherwise (a one-group call
    /// uses offset 0 without advancing the counter). Per-device offset lists are built from
    /// this.
    pub(crate) fn consumed_offset(&self) -> Option<u32> {
        self.spread_offset.filter(|_| self.consumed)
    }
    /// All `numgrps` masks in group order, empty ones included.
    pub fn masks(&self) -> Vec<CpuSet> {
        let width = self.group_of.len() as u32;
        let mut masks = vec![CpuSet::new(width); self.numgrps as usize];
        for (cpu, &g) in self.group_of.iter().enumerate() {
            if g != NO_GROUP {
                masks[g as usize].insert(cpu as u32);
            }
        }
        masks
    }
}

/// `struct node_groups`: `{id, ncpus, ngroups}` of one node or cluster. `ncpus == INACTIVE`
/// marks a node with no CPU in the current stage.
///
/// Divergence from C: `ncpus` and `ngroups` are two fields where upstream keeps them in a union,
/// because the rotation revisions keep them apart and nothing upstream reads `ncpus` after
/// `ngroups` is written, so both layouts give the same results.
#[derive(Debug, Clone, Copy)]
struct Domain {
    id: u32,
    ncpus: u32,
    ngroups: u32,
}

const INACTIVE: u32 = u32::MAX;

/// Where one node's CPUs of the current stage lie: words `lo..hi`, `ncpus` of them (0: the node
/// has none in this stage and is not in the C's `nodemsk`).
#[derive(Debug, Clone, Copy, Default)]
struct NodeSpan {
    lo: usize,
    hi: usize,
    ncpus: u32,
}

/// One call's working state: the fixed inputs, the output being built, and the scratch buffers
/// the C allocates per node or per cluster (allocated here once per call).
struct Spread<'a> {
    topo: &'a Topology,
    rules: Rules,
    sort: SortGen,
    numgrps: u32,
    offset: u32,
    /// The C's `masks` array, as the group of each CPU.
    group_of: Vec<u32>,
    warnings: &'a mut Vec<KernelWarn>,
    /// Per node id: its CPUs in the current stage (`get_nodes_in_cpumask()`).
    spans: Vec<NodeSpan>,
    node_groups: Vec<Domain>,
    cluster_groups: Vec<Domain>,
    /// The lowest CPU of each cluster found by `alloc_cluster_groups()` (the C keeps the
    /// cluster's mask pointer; `topo.cluster(cpu)` gives it back).
    clusters: Vec<u32>,
    /// `nmsk` of `__group_cpus_evenly()`: one node's CPUs in the stage.
    nmsk: Window,
    /// `nmsk` of `__try_group_cluster_cpus()`: one cluster's CPUs of the node.
    cmsk: Window,
    /// `msk` of `alloc_cluster_groups()`: the cluster probe.
    probe: Window,
}

impl Spread<'_> {
    /// `grp_spread_init_one()`: take the lowest CPU of the domain, then its SMT siblings still in
    /// the domain (lower ids included), until the group has `k` CPUs or the domain is empty.
    ///
    /// `hint` is a lower bound on the domain's lowest CPU, kept across the groups of one domain:
    /// every CPU below the last one picked has left it. The sibling walk starts only while the
    /// group still needs CPUs, as the C's `for (sibl = -1; cpus_per_grp > 0; )` does.
    fn grp_spread_init_one(&mut self, grp: u32, nmsk: &mut Window, mut k: u32, hint: &mut u32) {
        while k > 0 {
            let Some(cpu) = nmsk.first_from(*hint) else {
                // "Should not happen": the domain ran out before the group was full.
                return;
            };
            *hint = cpu;
            k = self.take_with_siblings(grp, nmsk, cpu, k);
        }
    }

    /// The body of `grp_spread_init_one()`'s loop once `cpu` is chosen: `cpu` joins `grp`, then
    /// the siblings still in `nmsk`, in ascending order, while the group needs CPUs.
    fn take_with_siblings(&mut self, grp: u32, nmsk: &mut Window, cpu: u32, k: u32) -> u32 {
        nmsk.remove(cpu);
        self.group_of[cpu as usize] = grp;
        let k = k - 1;
        if k == 0 {
            return 0;
        }
        let group_of = &mut self.group_of;
        nmsk.take_siblings(self.topo.smt(cpu), k, |sibl| group_of[sibl as usize] = grp)
    }

    /// `get_nodes_in_cpumask()`: the nodes with CPUs in `cpu_mask`, counted; records for every
    /// node id where its CPUs of the stage lie.
    ///
    /// Divergence from C: the C's `node_to_cpumask` table (`alloc_node_to_cpumask()` and
    /// `build_node_to_cpumask()`, filled from `cpu_to_node()` on every call) is
    /// [`Topology::node_cpus`], built once when the topology is validated, because a topology
    /// never changes after that; the two give the same masks.
    fn get_nodes_in_cpumask(&mut self, cpu_mask: &CpuSet) -> u32 {
        let topo = self.topo;
        let sw = cpu_mask.words();
        self.spans.clear();
        let mut nodes = 0;
        for n in 0..topo.nr_node_ids() {
            // Only the words that hold the node's CPUs (the rest of its mask is zero).
            let (lo, nw) = topo.node_cpu_words(n);
            let mut span = NodeSpan::default();
            for (i, (a, b)) in (lo..).zip(nw.iter().zip(sw.get(lo..).unwrap_or_default())) {
                let w = a & b;
                if w != 0 {
                    if span.ncpus == 0 {
                        span.lo = i;
                    }
                    span.hi = i + 1;
                    span.ncpus += w.count_ones();
                }
            }
            nodes += u32::from(span.ncpus > 0);
            self.spans.push(span);
        }
        nodes
    }
}

/// `ncpus_cmp_func()`: `ncpus` subtracted as unsigned, read as signed. INACTIVE therefore
/// compares like -1 and sorts to the front.
fn ncpus_cmp_func(l: &Domain, r: &Domain) -> i32 {
    l.ncpus.wrapping_sub(r.ncpus) as i32
}

impl Spread<'_> {
    /// `alloc_groups_to_nodes()`: sort the domains by CPU count ([`ncpus_cmp_func`], the
    /// kernel heapsort of the chosen generation), then split `numgrps` groups over those holding `numcpus` CPUs with the level's
    /// rule (upstream: [`Spread::split_by_ratio`]).
    fn alloc_groups_to_nodes(&mut self, numgrps: u32, numcpus: u32, groups: &mut [Domain], alloc: Alloc) {
        sort(groups, self.sort, ncpus_cmp_func);
        match alloc {
            Alloc::Ratio => self.split_by_ratio(groups, numgrps, numcpus),
            Alloc::EqualClasses => self.alloc_equal_classes(groups, numgrps, numcpus),
            Alloc::PooledExtras => self.alloc_pooled_extras(groups, numgrps, numcpus),
        }
    }

    /// The loop of `alloc_groups_to_nodes()`: the proportional split, smallest domain first.
    /// Because domains are visited smallest-first, rounding losses drift toward the larger
    /// (later) domains.
    ///
    /// Why no domain gets more groups than CPUs (the kernel's proof, restated): visiting in
    /// ascending `ncpus`, `ngroups = max(1, rem_grps * ncpus / rem_cpus)`. With `rem_grps <=
    /// rem_cpus` at the start (`g <= n`), the ratio `rem_grps / rem_cpus` never exceeds 1 after a
    /// domain takes `floor` of its share, and a domain of size `ncpus >= 1` taking `max(1, ..)`
    /// only raises the ratio when the share rounded to 0, which later, larger domains absorb.
    ///
    /// Divergence from C: the C's `WARN_ON_ONCE(ngroups > ncpus)` in this loop is not repeated
    /// here because the same condition is checked (and reported) by the caller before the
    /// domain's CPUs are assigned, and a division by `rem_cpus == 0` (reachable only after a
    /// WARN) gives 0 instead of a trap.
    fn split_by_ratio(&mut self, groups: &mut [Domain], numgrps: u32, numcpus: u32) {
        let (mut remaining_ncpus, mut numgrps) = (numcpus, numgrps);
        for d in groups.iter_mut().filter(|d| d.ncpus != INACTIVE) {
            if numgrps == 0 {
                self.warnings.push(KernelWarn::GroupsExhausted { domain: d.id });
            }
            let share = numgrps.wrapping_mul(d.ncpus).checked_div(remaining_ncpus).unwrap_or(0);
            d.ngroups = share.max(1);
            debug_assert!(d.ngroups <= d.ncpus || numgrps > remaining_ncpus);
            remaining_ncpus = remaining_ncpus.wrapping_sub(d.ncpus);
            numgrps = numgrps.wrapping_sub(d.ngroups);
        }
    }

    /// `alloc_nodes_groups()`: a record for every node id (INACTIVE for nodes without CPUs in
    /// the stage), at most one group per CPU, then `alloc_groups_to_nodes()`.
    fn alloc_nodes_groups(&mut self, numgrps: u32) -> Vec<Domain> {
        let mut node_groups = std::mem::take(&mut self.node_groups);
        node_groups.clear();
        node_groups.extend(self.spans.iter().enumerate().map(|(n, s)| Domain {
            id: n as u32,
            ncpus: if s.ncpus == 0 { INACTIVE } else { s.ncpus },
            ngroups: 0,
        }));
        let numcpus: u32 = self.spans.iter().map(|s| s.ncpus).sum();
        let numgrps = numcpus.min(numgrps);
        self.alloc_groups_to_nodes(numgrps, numcpus, &mut node_groups, self.rules.node_alloc);
        node_groups
    }

    /// `assign_cpus_to_groups()`: cut one domain (a node or a cluster) into `ngroups` groups of
    /// `ncpus / ngroups` CPUs, the first `ncpus % ngroups` of them one larger, starting at group
    /// `*curgrp` and wrapping at `numgrps`. The rotation revisions place the larger groups and
    /// pick CPUs their own way ([`Rules::extras`], [`Rules::fill`]).
    fn assign_cpus_to_groups(&mut self, ncpus: u32, nmsk: &mut Window, ngroups: u32, curgrp: &mut u32) {
        if ngroups == 0 {
            // Divergence from C: the kernel divides by zero here; the model reports it.
            self.warnings.push(KernelWarn::ZeroGroups);
            return;
        }
        if self.rules.extras != Extras::First || self.rules.fill != Fill::Lowest {
            self.assign_cpus_to_groups_rotation(ncpus, nmsk, ngroups, curgrp);
            return;
        }
        if ngroups == ncpus && nmsk.weight() == ncpus {
            // One CPU per group: each group in turn takes the lowest CPU left, and the C's
            // sibling walk never starts (`cpus_per_grp` is 0 once the CPU is taken). The same
            // assignment in one pass over the window (8,192 groups on 8,192 CPUs: every node).
            let (group_of, numgrps) = (&mut self.group_of, self.numgrps);
            let mut grp = *curgrp;
            nmsk.drain(|cpu| {
                if grp >= numgrps {
                    grp = 0;
                }
                group_of[cpu as usize] = grp;
                grp += 1;
            });
            *curgrp = grp;
            return;
        }
        let mut extra_grps = ncpus - ngroups * (ncpus / ngroups);
        let mut hint = 0u32;
        for _ in 0..ngroups {
            let mut cpus_per_grp = ncpus / ngroups;
            if extra_grps > 0 {
                cpus_per_grp += 1;
                extra_grps -= 1;
            }
            if *curgrp >= self.numgrps {
                *curgrp = 0;
            }
            self.grp_spread_init_one(*curgrp, nmsk, cpus_per_grp, &mut hint);
            *curgrp += 1;
        }
    }

    /// `alloc_cluster_groups()`: find the clusters of the node's CPUs `node_cpumask` (each by its
    /// lowest CPU, into `self.clusters`) and split the node's `ngroups` over them. Returns the
    /// number of clusters, 0 when the node must use plain assignment: a CPU without a cluster,
    /// or more clusters than groups ("cross cluster is inevitable").
    ///
    /// Divergence from C: the clusters are found in one walk, where the C walks twice (to count
    /// them, then after `kcalloc()` to fill the records), because a `Vec` grows; both walks
    /// visit the same clusters in the same order.
    fn alloc_cluster_groups(&mut self, ncpus: u32, ngroups: u32, node_cpumask: &Window) -> u32 {
        let topo = self.topo;
        self.clusters.clear();
        self.probe.copy_from(node_cpumask);
        while let Some(cpu) = self.probe.first() {
            let cluster_mask = topo.cluster(cpu);
            // `cpumask_weight(cluster_mask) == 0`; a CPU's cluster holds the CPU when it has one.
            if !cluster_mask.contains(cpu) && cluster_mask.is_empty() {
                return 0;
            }
            self.probe.andnot_assign(cluster_mask);
            self.clusters.push(cpu);
        }
        let ncluster = self.clusters.len() as u32;
        if ncluster == 0 || ncluster > ngroups {
            return 0;
        }
        let mut cluster_groups = std::mem::take(&mut self.cluster_groups);
        cluster_groups.clear();
        cluster_groups.extend(self.clusters.iter().enumerate().map(|(n, &cpu)| Domain {
            id: n as u32,
            ncpus: node_cpumask.weight_and(topo.cluster(cpu)),
            ngroups: 0,
        }));
        self.alloc_groups_to_nodes(ngroups, ncpus, &mut cluster_groups, self.rules.cluster_alloc);
        self.cluster_groups = cluster_groups;
        ncluster
    }
}

/// `WARN_ON_ONCE(nv->ngroups > nc)` of `__try_group_cluster_cpus()`: a cluster got more groups
/// than it has CPUs. Not reachable from a valid topology: the node's groups never exceed its
/// CPUs (see [`Spread::split_by_ratio`]) and every variant's cluster split keeps each cluster
/// within its own CPU count, so the check is tested on its own.
fn cluster_groups_exceed_cpus(node: u32, first_cpu: u32, ngroups: u32, ncpus: u32) -> Option<KernelWarn> {
    (ngroups > ncpus).then_some(KernelWarn::ClusterGroupsExceedCpus {
        node,
        first_cpu,
        ngroups,
        ncpus,
    })
}

impl Spread<'_> {
    /// `__try_group_cluster_cpus()`: split the node's groups over its clusters and assign inside
    /// each cluster. `false` (the node falls back to plain assignment) when
    /// `alloc_cluster_groups()` finds no usable clusters.
    fn try_group_cluster_cpus(
        &mut self,
        node: u32,
        ncpus: u32,
        ngroups: u32,
        node_cpumask: &Window,
        curgrp: &mut u32,
    ) -> bool {
        if self.alloc_cluster_groups(ncpus, ngroups, node_cpumask) == 0 {
            return false;
        }
        let topo = self.topo;
        let cluster_groups = std::mem::take(&mut self.cluster_groups);
        let mut nmsk = std::mem::take(&mut self.cmsk);
        for nv in &cluster_groups {
            let first_cpu = self.clusters[nv.id as usize];
            let nc = nmsk.load_window_and(node_cpumask, topo.cluster(first_cpu));
            if nc == 0 {
                continue;
            }
            self.warnings
                .extend(cluster_groups_exceed_cpus(node, first_cpu, nv.ngroups, nc));
            let size = if self.rules.cluster_size_from_record {
                nv.ncpus
            } else {
                nc
            };
            self.assign_cpus_to_groups(size, &mut nmsk, nv.ngroups, curgrp);
        }
        self.cmsk = nmsk;
        self.cluster_groups = cluster_groups;
        true
    }

    /// Index into the active nodes where the few-groups walk starts ([`Rules::few_groups`]).
    fn few_groups_start(&self, active: &[u32]) -> usize {
        match self.rules.few_groups {
            FewGroups::Lowest => 0,
            rotated => self.few_groups_start_rotation(rotated, active),
        }
    }

    /// `__group_cpus_evenly()`: one stage over the CPUs in `cpu_mask`, starting at group
    /// `startgrp`. Returns how many groups the stage initialized (by the kernel's count).
    fn group_cpus_evenly_stage(&mut self, startgrp: u32, cpu_mask: &CpuSet) -> u32 {
        if cpu_mask.is_empty() {
            return 0;
        }
        let topo = self.topo;
        let last_grp = self.numgrps;
        let mut curgrp = startgrp;
        let nodes = self.get_nodes_in_cpumask(cpu_mask);
        let mut nmsk = std::mem::take(&mut self.nmsk);

        // Few groups: every node with CPUs in the stage is one group's worth; several nodes may
        // share a group.
        if self.numgrps <= nodes {
            let active: Vec<u32> = (0..topo.nr_node_ids())
                .filter(|&n| self.spans[n as usize].ncpus > 0)
                .collect();
            let k = active.len();
            let start = self.few_groups_start(&active);
            for i in 0..k {
                let n = active[(start + i) % k];
                let span = self.spans[n as usize];
                nmsk.load_and(cpu_mask, topo.node_cpus(n), span.lo, span.hi);
                let group_of = &mut self.group_of;
                nmsk.for_each(|cpu| group_of[cpu as usize] = curgrp);
                curgrp += 1;
                if curgrp == last_grp {
                    curgrp = 0;
                }
            }
            self.nmsk = nmsk;
            return self.numgrps;
        }

        let node_groups = self.alloc_nodes_groups(self.numgrps);
        let mut done: u32 = 0;
        for nv in node_groups.iter().filter(|d| d.ncpus != INACTIVE) {
            let span = self.spans[nv.id as usize];
            let ncpus = nmsk.load_and(cpu_mask, topo.node_cpus(nv.id), span.lo, span.hi);
            if ncpus == 0 {
                continue;
            }
            if nv.ngroups > ncpus {
                self.warnings.push(KernelWarn::GroupsExceedCpus {
                    node: nv.id,
                    ngroups: nv.ngroups,
                    ncpus,
                });
            }
            if self.rules.cluster_path && self.try_group_cluster_cpus(nv.id, ncpus, nv.ngroups, &nmsk, &mut curgrp) {
                done = done.wrapping_add(nv.ngroups);
                continue;
            }
            self.assign_cpus_to_groups(ncpus, &mut nmsk, nv.ngroups, &mut curgrp);
            done = done.wrapping_add(nv.ngroups);
        }
        self.node_groups = node_groups;
        self.nmsk = nmsk;
        done
    }
}

/// Spread `numgrps` groups over the possible CPUs: present CPUs first, then possible CPUs that
/// are not present, each stage NUMA-node (and, in cluster-aware variants, cluster) balanced.
///
/// Returns `None` for `numgrps == 0`, as the kernel returns NULL. `counter` is the rotation
/// patch's global counter: rotation variants use its value as the offset and advance it by one
/// for every call with `numgrps >= 2` (`rotation-v1`: every call with `numgrps >= 1`); other
/// variants ignore it.
pub fn group_cpus_evenly(
    topo: &Topology,
    numgrps: u32,
    variant: Variant,
    sort: SortGen,
    counter: &mut u32,
    warnings: &mut Vec<KernelWarn>,
) -> Option<Grouping> {
    if numgrps == 0 {
        return None;
    }
    let rules = rules(variant);
    let (offset, spread_offset, consumed) = if !rules.counter {
        (0, None, false)
    } else if numgrps == 1 && !rules.counter_on_one_group {
        (0, Some(0), false)
    } else {
        let offset = *counter;
        *counter = counter.wrapping_add(1);
        (offset, Some(offset), true)
    };
    let mut spread = Spread {
        topo,
        rules,
        sort,
        numgrps,
        offset,
        group_of: vec![NO_GROUP; topo.nr_cpu_ids() as usize],
        warnings,
        spans: Vec::with_capacity(topo.nr_node_ids() as usize),
        node_groups: Vec::with_capacity(topo.nr_node_ids() as usize),
        cluster_groups: Vec::new(),
        clusters: Vec::new(),
        nmsk: Window::default(),
        cmsk: Window::default(),
        probe: Window::default(),
    };

    // Stage 1: present CPUs from group 0. Stage 2: possible but absent CPUs, from the first
    // group stage 1 did not use, or from group 0 when stage 1 used them all.
    // Divergence from C: the C copies cpu_present_mask as is; the model ANDs it with the
    // possible mask, which changes nothing because `Topology::new` rejects a present CPU that
    // is not possible, and keeps "every CPU in a group is possible" local to this function.
    let npresmsk = topo.present().and(topo.possible());
    let nr_present = spread.group_cpus_evenly_stage(0, &npresmsk);
    let curgrp = if nr_present >= numgrps { 0 } else { nr_present };
    let others = topo.possible().andnot(&npresmsk);
    let nr_others = spread.group_cpus_evenly_stage(curgrp, &others);

    let initialized = u64::from(nr_present) + u64::from(nr_others);
    if initialized < u64::from(numgrps) {
        spread.warnings.push(KernelWarn::GroupsUnfilled {
            numgrps,
            initialized: initialized as u32,
            warns: true,
        });
    }
    let nummasks = initialized.min(u64::from(numgrps)) as u32;
    Some(Grouping {
        numgrps,
        nummasks,
        group_of: spread.group_of,
        spread_offset,
        consumed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::TopologySpec;

    fn topo(toml_text: &str) -> Topology {
        Topology::new(&toml::from_str::<TopologySpec>(toml_text).unwrap()).unwrap()
    }

    fn run(t: &Topology, n: u32, v: Variant, counter: u32) -> (Vec<String>, u32, u32) {
        let mut c = counter;
        let mut w = Vec::new();
        let g = group_cpus_evenly(t, n, v, SortGen::HeapV6_11, &mut c, &mut w).unwrap();
        (g.masks().iter().map(CpuSet::to_cpulist).collect(), g.nummasks(), c)
    }

    /// The spec's worked example for `pre-cluster` (golden `edge-nonpresent-g6-pre-cluster`).
    #[test]
    fn two_stage_nonpresent() {
        let t = topo(
            r#"name = "t"
            nodes = ["0-7", "8-15"]
            smt = ["0-1","2-3","4-5","6-7","8-9","10-11","12-13","14-15"]
            present = "0-4,8-12""#,
        );
        let (masks, nummasks, _) = run(&t, 6, Variant::PreCluster, 0);
        assert_eq!(masks, ["8-9,13", "10-11,14", "12,15", "0-1,5", "2-3,6", "4,7"]);
        assert_eq!(nummasks, 6);
    }

    /// The spec's worked example for `rotation` (golden `d16plds_v6-gce6-rotation-c1`).
    #[test]
    fn rotation_cursor_wraps() {
        let t = topo("name = \"t\"\nnodes = [\"0-15\"]\nclusters = [\"0-15\"]");
        let (masks, _, after) = run(&t, 6, Variant::Rotation, 1);
        assert_eq!(masks, ["9-11", "12-14", "0-1,15", "2-3", "4-5", "6-8"]);
        assert_eq!(after, 2);
    }

    /// Siblings far apart in id order (`{1,130}`): the sibling walk reaches a word of another
    /// part of the node's window, and a full group stops it.
    #[test]
    fn distant_siblings_join_their_group() {
        let t = topo(
            r#"name = "t"
            nodes = ["0-1,128-131"]
            smt = ["0,129", "1,130", "128,131"]"#,
        );
        let (masks, _, _) = run(&t, 3, Variant::PreCluster, 0);
        assert_eq!(masks, ["0,129", "1,130", "128,131"]);
        // Drawn without clusters: each CPU's cluster mask is its SMT pair (x86), and the
        // pairs are sorted by the heapsort as Debian 7.2.13's C sorts them.
        let (masks, _, _) = run(&t, 6, Variant::Cluster, 0);
        assert_eq!(masks, ["128", "131", "1", "130", "0", "129"]);
    }

    #[test]
    fn counter_rules() {
        let t = topo("name = \"t\"\nnodes = [\"0-3\"]");
        let mut c = u32::MAX;
        let mut w = Vec::new();
        assert!(group_cpus_evenly(&t, 0, Variant::Rotation, SortGen::HeapV6_11, &mut c, &mut w).is_none());
        assert_eq!(c, u32::MAX);
        let g = group_cpus_evenly(&t, 1, Variant::Rotation, SortGen::HeapV6_11, &mut c, &mut w).unwrap();
        assert_eq!((g.spread_offset(), g.consumed_offset(), c), (Some(0), None, u32::MAX));
        let g = group_cpus_evenly(&t, 2, Variant::Rotation, SortGen::HeapV6_11, &mut c, &mut w).unwrap();
        assert_eq!(
            (g.spread_offset(), g.consumed_offset(), c),
            (Some(u32::MAX), Some(u32::MAX), 0)
        );
        let g = group_cpus_evenly(&t, 2, Variant::Cluster, SortGen::HeapV6_11, &mut c, &mut w).unwrap();
        assert_eq!((g.spread_offset(), g.consumed_offset(), c), (None, None, 0));
    }

    #[test]
    fn more_groups_than_cpus_warns() {
        let t = topo("name = \"t\"\nnodes = [\"0-3\"]");
        let mut c = 0;
        let mut w = Vec::new();
        let g = group_cpus_evenly(&t, 6, Variant::PreCluster, SortGen::HeapV6_11, &mut c, &mut w).unwrap();
        assert_eq!(g.nummasks(), 4);
        assert_eq!(
            w,
            vec![KernelWarn::GroupsUnfilled {
                numgrps: 6,
                initialized: 4,
                warns: true
            }]
        );
    }

    /// The cluster-level WARN cannot be reached from a valid topology (see
    /// [`cluster_groups_exceed_cpus`]), so the check itself is tested at its boundary.
    #[test]
    fn cluster_level_warn() {
        assert_eq!(cluster_groups_exceed_cpus(2, 40, 4, 4), None);
        assert_eq!(
            cluster_groups_exceed_cpus(2, 40, 5, 4),
            Some(KernelWarn::ClusterGroupsExceedCpus {
                node: 2,
                first_cpu: 40,
                ngroups: 5,
                ncpus: 4
            })
        );
        let text = cluster_groups_exceed_cpus(2, 40, 5, 4).unwrap().to_string();
        assert!(
            text.contains("WARN") && text.contains("CPU 40") && text.contains("node 2"),
            "{text}"
        );
    }

    /// `rotation-v1` rule (a): a one-group call takes the counter's value as its offset and
    /// advances the counter, as `atomic_fetch_inc()` does before the C looks at `numgrps`; the
    /// reconstruction (`rotation-v1r`) takes none. NULL (`numgrps == 0`) returns before it.
    #[test]
    fn v1_one_group_call_takes_a_counter_value() {
        let t = topo("name = \"t\"\nnodes = [\"0-3\", \"4-7\"]");
        let mut w = Vec::new();
        let mut c = 7;
        assert!(group_cpus_evenly(&t, 0, Variant::RotationV1, SortGen::HeapV6_11, &mut c, &mut w).is_none());
        assert_eq!(c, 7);
        let g = group_cpus_evenly(&t, 1, Variant::RotationV1, SortGen::HeapV6_11, &mut c, &mut w).unwrap();
        assert_eq!((g.spread_offset(), g.consumed_offset(), c), (Some(7), Some(7), 8));
        assert_eq!(g.masks()[0].to_cpulist(), "0-7");
        let mut c = u32::MAX;
        let g = group_cpus_evenly(&t, 1, Variant::RotationV1, SortGen::HeapV6_11, &mut c, &mut w).unwrap();
        assert_eq!((g.consumed_offset(), c), (Some(u32::MAX), 0));
        let mut c = 7;
        let g = group_cpus_evenly(&t, 1, Variant::RotationV1r, SortGen::HeapV6_11, &mut c, &mut w).unwrap();
        assert_eq!((g.spread_offset(), g.consumed_offset(), c), (Some(0), None, 7));
        assert!(w.is_empty(), "{w:?}");
    }

    /// `rotation-v1` rule (b): the offset is added to the group index in 32 bits before the
    /// remainder. 4 CPUs in 3 groups (1 extra CPU) at offset 2^32-1: (0 + off) % 3 = 0 and
    /// (1 + off) wraps to 0, so groups 0 and 1 both take 2 CPUs and group 2 finds none left,
    /// while the reduced offset ((2^32-1) % 3 = 0) gives only group 0 the extra CPU.
    #[test]
    fn v1_unreduced_offset_wraps_and_empties_the_last_group() {
        let t = topo("name = \"t\"\nnodes = [\"0-3\"]");
        let (masks, nummasks, after) = run(&t, 3, Variant::RotationV1, u32::MAX);
        assert_eq!(masks, ["0-1", "2-3", ""]);
        assert_eq!((nummasks, after), (3, 0));
        let (masks, _, _) = run(&t, 3, Variant::RotationV1r, u32::MAX);
        assert_eq!(masks, ["0-1", "2", "3"]);
        // One step earlier nothing wraps: (v + 2^32-2) % 3 is 2, 0, 1, so group 1 is the big one
        // under both rules.
        let (v1, _, _) = run(&t, 3, Variant::RotationV1, u32::MAX - 1);
        let (v1r, _, _) = run(&t, 3, Variant::RotationV1r, u32::MAX - 1);
        assert_eq!(v1, ["0", "1-2", "3"]);
        assert_eq!(v1, v1r);
    }

    /// Away from the wrap the two rules of (b) are one: `(v + off) % n == (v + off % n) % n`
    /// whenever `v + off` does not pass 2^32, so for calls of two groups or more `rotation-v1`
    /// and `rotation-v1r` agree wherever `counter + numgrps <= 2^32`, on every shape of domain
    /// (nodes of unequal size, clusters, SMT, absent CPUs).
    #[test]
    fn v1_and_v1r_agree_away_from_the_wrap() {
        let shapes = [
            "name = \"a\"\nnodes = [\"0-5\", \"6-15\"]\nsmt = [\"0-1\",\"2-3\",\"4-5\",\"6-7\",\"8-9\",\"10-11\",\"12-13\",\"14-15\"]",
            "name = \"b\"\nnodes = [\"0-23\"]\nclusters = [\"0\",\"1\",\"2-3\",\"4-7\",\"8-11\",\"12-17\",\"18-23\"]",
            "name = \"c\"\nnodes = [\"0-7\", \"8-15\"]\npresent = \"0-4,8-12\"",
        ];
        for text in shapes {
            let t = topo(text);
            for numgrps in 2..=16 {
                for counter in (0..12).chain([u32::MAX - 40, u32::MAX - 16]) {
                    let (v1, n1, a1) = run(&t, numgrps, Variant::RotationV1, counter);
                    let (v1r, n1r, a1r) = run(&t, numgrps, Variant::RotationV1r, counter);
                    assert_eq!(
                        (v1, n1, a1),
                        (v1r, n1r, a1r),
                        "{text} numgrps {numgrps} counter {counter}"
                    );
                }
            }
        }
    }

    /// Each row of the table is the variant's: the counter rule is read from it, and upstream
    /// rows take no rotation branch.
    #[test]
    fn rules_table() {
        for v in Variant::ALL {
            let r = rules(v);
            assert!(!r.model.is_empty(), "{v:?} names its code");
            assert_eq!(r.counter, v.uses_counter());
            let upstream = matches!(v, Variant::PreCluster | Variant::Cluster);
            assert_eq!(upstream, !r.counter);
            assert_eq!(
                upstream,
                r.extras == Extras::First && r.fill == Fill::Lowest && r.few_groups == FewGroups::Lowest
            );
            assert_eq!(r.cluster_path, v != Variant::PreCluster);
        }
    }
}
