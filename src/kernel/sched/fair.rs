//! The `kernel/sched/fair.c` side of the sched model: group statistics
//! (`update_sg_lb_stats()`, `update_sg_wakeup_stats()`, `group_classify()`), the periodic
//! imbalance decision (`sched_balance_find_src_group()` with `update_sd_pick_busiest()`,
//! `calculate_imbalance()` with `sibling_imbalance()` and `adjust_numa_imbalance()`,
//! `sched_balance_find_src_rq()`), and the wake/fork path (`sched_balance_find_dst_group()` with
//! `update_pick_idlest()`, `sched_balance_find_dst_group_cpu()`, the fork walk of
//! `sched_balance_find_dst_cpu()`). Spec B.6-B.9.

use super::topology::{node_bit, set_nodes, Domain, NodeSet, SchedDomains};
use super::{ImbalanceVariant, NUMA_IMBALANCE_PCT, SCHED_CAPACITY_SCALE};

// ---------------------------------------------------------------------------
// Output types

/// `enum group_type`, restricted to what the model produces. The order is
/// the kernel's: a later type is busier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupType {
    HasSpare,
    FullyBusy,
    Overloaded,
}

impl GroupType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            GroupType::HasSpare => "has_spare",
            GroupType::FullyBusy => "fully_busy",
            GroupType::Overloaded => "overloaded",
        }
    }
}

/// Statistics of one group in one snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupLoad {
    pub(crate) nodes: Vec<u32>,
    pub(crate) weight: u32,
    pub(crate) sum_nr_running: u64,
    pub(crate) idle_cpus: u32,
    pub(crate) busy_cpus: u32,
    pub group_type: GroupType,
    /// `avg_load` as the path that computed these stats sets it (periodic:
    /// overloaded only; wake: fully busy and overloaded); 0 otherwise.
    pub(crate) avg_load: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrationType {
    Load,
    Util,
    Task,
}

impl MigrationType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            MigrationType::Load => "load",
            MigrationType::Util => "util",
            MigrationType::Task => "task",
        }
    }
}

/// How the periodic decision ended or which imbalance formula it used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LbPath {
    NoBusiest,
    LocalBusier,
    LocalAvgGeBusiest,
    LocalAvgGeDomainAvg,
    WithinImbalancePct,
    IdleGateBalanced,
    SingleTask,
    OverloadedUtil,
    Sibling,
    IdleDiff,
    BusyDiff,
    AvgLoadBalanced,
    AvgLoad,
}

impl LbPath {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            LbPath::NoBusiest => "no_busiest",
            LbPath::LocalBusier => "local_busier",
            LbPath::LocalAvgGeBusiest => "local_avg_ge_busiest",
            LbPath::LocalAvgGeDomainAvg => "local_avg_ge_domain_avg",
            LbPath::WithinImbalancePct => "within_imbalance_pct",
            LbPath::IdleGateBalanced => "idle_gate_balanced",
            LbPath::SingleTask => "single_task",
            LbPath::OverloadedUtil => "overloaded_util",
            LbPath::Sibling => "sibling",
            LbPath::IdleDiff => "idle_diff",
            LbPath::BusyDiff => "busy_diff",
            LbPath::AvgLoadBalanced => "avg_load_balanced",
            LbPath::AvgLoad => "avg_load",
        }
    }
}

/// The periodic decision at one level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LbResult {
    pub(crate) path: LbPath,
    /// Prefer-sibling flag of the busiest group; `None` without a busiest.
    pub(crate) prefer_sibling: Option<bool>,
    /// `sibling_imbalance() > 1` sent the decision past the idle gates.
    pub(crate) forced_by_sibling_gate: bool,
    pub(crate) imbalance_raw: u64,
    pub(crate) allowance: Option<u32>,
    pub(crate) dst_running: Option<u64>,
    pub(crate) imbalance_adjusted: u64,
    pub imbalance: u64,
    pub(crate) migration_type: Option<MigrationType>,
    pub(crate) no_src_rq: bool,
    /// A task is pulled (`"move"` in the golden format).
    pub moved: bool,
    pub(crate) src_cpu: Option<u32>,
    pub(crate) src_node: Option<u32>,
    pub(crate) active_balance: Option<bool>,
    /// The pulled task is one of the pair and leaves the pair's node.
    pub(crate) split: bool,
}

impl LbResult {
    fn balanced(path: LbPath, prefer_sibling: Option<bool>) -> LbResult {
        LbResult {
            path,
            prefer_sibling,
            forced_by_sibling_gate: false,
            imbalance_raw: 0,
            allowance: None,
            dst_running: None,
            imbalance_adjusted: 0,
            imbalance: 0,
            migration_type: None,
            no_src_rq: false,
            moved: false,
            src_cpu: None,
            src_node: None,
            active_balance: None,
            split: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeriodicLevel {
    pub(crate) level: u32,
    pub(crate) distance: u32,
    pub(crate) dst_cpu: u32,
    pub(crate) imb_numa_nr: u32,
    pub(crate) groups: Vec<GroupLoad>,
    pub(crate) busiest_group: Option<usize>,
    pub result: LbResult,
}

/// The periodic balance as seen from one node's lowest idle CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeriodicNode {
    pub(crate) dst_node: u32,
    /// `None` if the node has no idle CPU (then `levels` is empty).
    pub(crate) dst_cpu: Option<u32>,
    /// One entry per kept NUMA domain, bottom-up.
    pub levels: Vec<PeriodicLevel>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeChoice {
    Local,
    Idlest,
}

impl WakeChoice {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            WakeChoice::Local => "local",
            WakeChoice::Idlest => "idlest",
        }
    }
}

/// Why `sched_balance_find_dst_group()` chose as it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakePath {
    NoIdlest,
    LocalIdlerType,
    LocalBusierType,
    /// Both fully busy or overloaded: the idlest group plus the NUMA load margin is not
    /// lighter than the local group; stay local.
    NumaLoadMargin,
    /// The local group is less loaded than the idlest (unreachable after the margin test;
    /// named as the spec names it).
    LocalLessLoaded,
    /// The local group is within `imbalance_pct` of the idlest; stay local.
    ImbalancePct,
    /// The idlest group is lighter by more than `imbalance_pct`: it is chosen.
    AvgLoad,
    IdleDiffAllowed,
    IdleDiffLocalHasMoreIdle,
    IdleDiffExceeds,
    BusyDiffAllowed,
    BusyDiffLocalHasMoreIdle,
    BusyDiffExceeds,
}

impl WakePath {
    /// Every path, in declaration order.
    pub const ALL: [WakePath; 13] = [
        WakePath::NoIdlest,
        WakePath::LocalIdlerType,
        WakePath::LocalBusierType,
        WakePath::NumaLoadMargin,
        WakePath::LocalLessLoaded,
        WakePath::ImbalancePct,
        WakePath::AvgLoad,
        WakePath::IdleDiffAllowed,
        WakePath::IdleDiffLocalHasMoreIdle,
        WakePath::IdleDiffExceeds,
        WakePath::BusyDiffAllowed,
        WakePath::BusyDiffLocalHasMoreIdle,
        WakePath::BusyDiffExceeds,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            WakePath::NoIdlest => "no_idlest",
            WakePath::LocalIdlerType => "local_idler_type",
            WakePath::LocalBusierType => "local_busier_type",
            WakePath::NumaLoadMargin => "numa_load_margin",
            WakePath::LocalLessLoaded => "local_less_loaded",
            WakePath::ImbalancePct => "imbalance_pct",
            WakePath::AvgLoad => "avg_load",
            WakePath::IdleDiffAllowed => "idle_diff_allowed",
            WakePath::IdleDiffLocalHasMoreIdle => "idle_diff_local_has_more_idle",
            WakePath::IdleDiffExceeds => "idle_diff_exceeds",
            WakePath::BusyDiffAllowed => "busy_diff_allowed",
            WakePath::BusyDiffLocalHasMoreIdle => "busy_diff_local_has_more_idle",
            WakePath::BusyDiffExceeds => "busy_diff_exceeds",
        }
    }
}

/// `sched_balance_find_dst_group()` at one level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WakeLevel {
    pub(crate) level: u32,
    pub(crate) distance: u32,
    pub(crate) balance_fork: bool,
    pub(crate) this_cpu: u32,
    pub groups: Vec<GroupLoad>,
    pub idlest_group: Option<usize>,
    /// Set on the has-spare path only.
    pub(crate) imbalance: Option<u64>,
    pub(crate) allowance: Option<u32>,
    /// `min(local weight, sd->imb_numa_nr)` on the has-spare path.
    pub(crate) imb_numa_nr: Option<u32>,
    pub(crate) dst_running: Option<u64>,
    pub choice: WakeChoice,
    pub path: WakePath,
}

/// One level visited by the fork walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkStep {
    pub(crate) this_node: u32,
    /// The wake-level evaluation (`balance_fork` is always true here).
    pub eval: WakeLevel,
    /// CPU chosen in the idlest group; `None` when the local group won.
    pub(crate) new_cpu: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkPlacement {
    pub steps: Vec<ForkStep>,
    pub(crate) final_cpu: u32,
    pub(crate) final_node: u32,
    /// The new task ends on another node than the pair.
    pub(crate) split: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantOutcome {
    pub(crate) variant: ImbalanceVariant,
    pub periodic: Vec<PeriodicNode>,
    pub(crate) periodic_split: bool,
    pub wake_levels: Vec<WakeLevel>,
    pub fork_placement: ForkPlacement,
}

// ---------------------------------------------------------------------------
// Statistics

/// Per-node totals of one snapshot.
#[derive(Clone, Copy, Default)]
struct NodeLoad {
    nr: u64,
    idle: u64,
}

/// Statistics of a group as `update_sg_lb_stats()` / `update_sg_wakeup_stats()` fill them.
#[derive(Clone, Copy)]
struct SgStats {
    weight: u64,
    cores: u64,
    sum_nr: u64,
    idle: u64,
    capacity: u64,
    util: u64,
    load: u64,
    group_type: GroupType,
    avg_load: u64,
}

impl SgStats {
    fn busy(&self) -> u64 {
        self.weight - self.idle
    }

    fn avg_of_load(&self) -> u64 {
        self.load * SCHED_CAPACITY_SCALE / self.capacity
    }
}

/// `group_classify()` with the model's load: `util` counts busy CPUs,
/// `runnable` counts tasks.
fn group_classify(sum_nr: u64, weight: u64, capacity: u64, util: u64, runnable: u64) -> GroupType {
    let pct = NUMA_IMBALANCE_PCT;
    // group_is_overloaded()
    if sum_nr > weight && (capacity * 100 < util * pct || capacity * pct < runnable * 100) {
        return GroupType::Overloaded;
    }
    // group_has_capacity()
    let has_capacity = sum_nr < weight || (capacity * pct >= runnable * 100 && capacity * 100 > util * pct);
    if has_capacity {
        GroupType::HasSpare
    } else {
        GroupType::FullyBusy
    }
}

/// `allow_numa_imbalance()`: a destination running at most `imb_numa_nr` tasks may stay
/// slightly imbalanced (`running <= imb_numa_nr`, as the 2022 "sched/numa: Apply imbalance
/// limitations consistently" series left it; later kernels inline this test into
/// `adjust_numa_imbalance()`).
fn allow_numa_imbalance(dst_running: u64, imb_numa_nr: u32) -> bool {
    dst_running <= u64::from(imb_numa_nr)
}

/// `adjust_numa_imbalance()`: below the threshold a small imbalance is
/// allowed; above it the raw value stands. `allowance` is `NUMA_IMBALANCE_MIN` upstream
/// ([`ImbalanceVariant::allowance`]).
fn adjust_numa_imbalance(imbalance: u64, dst_running: u64, imb_numa_nr: u32, allowance: u32) -> u64 {
    if !allow_numa_imbalance(dst_running, imb_numa_nr) {
        return imbalance;
    }
    if imbalance <= allowance as u64 {
        0
    } else {
        imbalance
    }
}

/// `sibling_imbalance()`: spread tasks so that tasks per core are equal on
/// both groups, rounding to nearest; an empty local group may always take
/// one task from a group that has several.
fn sibling_imbalance(busiest: &SgStats, local: &SgStats) -> u64 {
    if busiest.sum_nr == 0 {
        return 0;
    }
    if busiest.cores == local.cores {
        return busiest.sum_nr.saturating_sub(local.sum_nr);
    }
    let (lc, bc) = (local.cores, busiest.cores);
    let mut imbalance = (lc * busiest.sum_nr).saturating_sub(bc * local.sum_nr);
    imbalance = (2 * imbalance + lc + bc) / (lc + bc);
    if imbalance <= 1 && local.sum_nr == 0 && busiest.sum_nr > 1 {
        imbalance = 2;
    }
    imbalance
}

impl SchedDomains<'_> {
    fn node_loads(&self, nr: &[u32]) -> Vec<NodeLoad> {
        (0..self.n_nodes)
            .map(|n| {
                let mut load = NodeLoad::default();
                for cpu in self.node_cpus(n) {
                    let tasks = nr[cpu as usize] as u64;
                    load.nr += tasks;
                    if tasks == 0 {
                        load.idle += 1;
                    }
                }
                load
            })
            .collect()
    }

    /// The sums both `update_sg_lb_stats()` and `update_sg_wakeup_stats()` take over the
    /// group's CPUs, and `group_classify()`; `avg_load` is left 0.
    fn sg_sums(&self, set: NodeSet, loads: &[NodeLoad]) -> SgStats {
        let mut weight = 0u64;
        let mut sum_nr = 0u64;
        let mut idle = 0u64;
        for n in (0..self.n_nodes).filter(|&n| set & node_bit(n) != 0) {
            weight += self.input.cpus_per_node[n] as u64;
            sum_nr += loads[n].nr;
            idle += loads[n].idle;
        }
        let capacity = SCHED_CAPACITY_SCALE * weight;
        let util = SCHED_CAPACITY_SCALE * (weight - idle);
        let load = SCHED_CAPACITY_SCALE * sum_nr;
        let group_type = group_classify(sum_nr, weight, capacity, util, load);
        SgStats {
            weight,
            cores: weight / self.input.smt as u64,
            sum_nr,
            idle,
            capacity,
            util,
            load,
            group_type,
            avg_load: 0,
        }
    }

    /// `update_sg_lb_stats()`: the periodic path computes `avg_load` for overloaded groups
    /// only.
    fn update_sg_lb_stats(&self, set: NodeSet, loads: &[NodeLoad]) -> SgStats {
        let mut stats = self.sg_sums(set, loads);
        if stats.group_type == GroupType::Overloaded {
            stats.avg_load = stats.avg_of_load();
        }
        stats
    }

    /// `update_sg_wakeup_stats()`: the wake path computes `avg_load` for fully busy and
    /// overloaded groups.
    fn update_sg_wakeup_stats(&self, set: NodeSet, loads: &[NodeLoad]) -> SgStats {
        let mut stats = self.sg_sums(set, loads);
        if stats.group_type != GroupType::HasSpare {
            stats.avg_load = stats.avg_of_load();
        }
        stats
    }

    fn group_load(set: NodeSet, s: &SgStats) -> GroupLoad {
        GroupLoad {
            nodes: set_nodes(set),
            weight: s.weight as u32,
            sum_nr_running: s.sum_nr,
            idle_cpus: s.idle as u32,
            busy_cpus: s.busy() as u32,
            group_type: s.group_type,
            avg_load: s.avg_load,
        }
    }

    /// One variant on the snapshot: the periodic balance of every node with an idle CPU, the
    /// wake levels of the pair's node and the fork walk.
    pub(super) fn run_variant(&self, variant: ImbalanceVariant) -> VariantOutcome {
        let nr = &self.input.nr_running;
        let loads = self.node_loads(nr);
        let periodic: Vec<PeriodicNode> = (0..self.n_nodes)
            .map(|k| {
                let dst_cpu = self.node_cpus(k).find(|&c| nr[c as usize] == 0);
                let levels = match dst_cpu {
                    None => Vec::new(),
                    Some(dst) => self.domains[k]
                        .iter()
                        .filter(|d| !d.degenerate)
                        .map(|d| self.sched_balance_find_src_group(variant, k, dst, d, &loads))
                        .collect(),
                };
                PeriodicNode {
                    dst_node: k as u32,
                    dst_cpu,
                    levels,
                }
            })
            .collect();
        let periodic_split = periodic.iter().flat_map(|p| &p.levels).any(|l| l.result.split);

        // The wake/fork scenario: task B is taken out of the snapshot and
        // task A, on pair_cpus[0], places it.
        let mut nr_wake = nr.clone();
        let b = self.input.pair_cpus[1] as usize;
        nr_wake[b] = nr_wake[b].saturating_sub(1);
        let wake_loads = self.node_loads(&nr_wake);
        let this_cpu = self.input.pair_cpus[0];
        let pair_node = self.pair_node as usize;
        let wake_levels = self.domains[pair_node]
            .iter()
            .filter(|d| !d.degenerate)
            .map(|d| self.sched_balance_find_dst_group(variant, d, this_cpu, &wake_loads))
            .collect();
        let fork_placement = self.sched_balance_find_dst_cpu(variant, this_cpu, &nr_wake, &wake_loads);

        VariantOutcome {
            variant,
            periodic,
            periodic_split,
            wake_levels,
            fork_placement,
        }
    }

    // -----------------------------------------------------------------------
    // Periodic balance

    /// `update_sd_pick_busiest()`: is `sgs` busier than the busiest group so far (spec B.7
    /// step 2)? A group without tasks is never picked.
    fn update_sd_pick_busiest(sgs: &SgStats, busiest: Option<&SgStats>) -> bool {
        if sgs.sum_nr == 0 {
            return false;
        }
        // The initial candidate is has_spare with unbounded idle CPUs and no
        // tasks, so any group with a task beats it.
        let Some(cur) = busiest else {
            return true;
        };
        if sgs.group_type != cur.group_type {
            return sgs.group_type > cur.group_type;
        }
        match sgs.group_type {
            GroupType::Overloaded => sgs.avg_load > cur.avg_load,
            // avg_load is not computed for fully busy groups,
            // so the later group wins ties.
            GroupType::FullyBusy => sgs.avg_load >= cur.avg_load,
            GroupType::HasSpare => sgs.idle < cur.idle || (sgs.idle == cur.idle && sgs.sum_nr > cur.sum_nr),
        }
    }

    /// Statistics of every group of domain `d` through `update` (the per-group loop both
    /// balancing paths run), with their reported form.
    fn group_stats(
        &self,
        d: &Domain,
        loads: &[NodeLoad],
        update: fn(&Self, NodeSet, &[NodeLoad]) -> SgStats,
    ) -> (Vec<SgStats>, Vec<GroupLoad>) {
        let stats: Vec<SgStats> = d.groups.iter().map(|&(set, _)| update(self, set, loads)).collect();
        let groups = d
            .groups
            .iter()
            .zip(&stats)
            .map(|(&(set, _), s)| Self::group_load(set, s))
            .collect();
        (stats, groups)
    }

    /// `update_sd_lb_stats()`: every group's `update_sg_lb_stats()`, and the busiest of
    /// groups 1.. by `update_sd_pick_busiest()`.
    fn update_sd_lb_stats(&self, d: &Domain, loads: &[NodeLoad]) -> (Vec<SgStats>, Vec<GroupLoad>, Option<usize>) {
        let (stats, groups) = self.group_stats(d, loads, Self::update_sg_lb_stats);
        let mut busiest: Option<usize> = None;
        for (i, sgs) in stats.iter().enumerate().skip(1) {
            if Self::update_sd_pick_busiest(sgs, busiest.map(|b| &stats[b])) {
                busiest = Some(i);
            }
        }
        (stats, groups, busiest)
    }

    /// `sched_balance_find_src_rq()` for node k's dst CPU at domain `d`.
    fn sched_balance_find_src_group(
        &self,
        variant: ImbalanceVariant,
        k: usize,
        dst_cpu: u32,
        d: &Domain,
        loads: &[NodeLoad],
    ) -> PeriodicLevel {
        let (stats, groups, busiest_group) = self.update_sd_lb_stats(d, loads);
        let result = match busiest_group {
            None => LbResult::balanced(LbPath::NoBusiest, None),
            Some(b) => self.calculate_imbalance(variant, k, d, &stats, b),
        };
        PeriodicLevel {
            level: d.level as u32,
            distance: self.distances[d.level],
            dst_cpu,
            imb_numa_nr: d.imb_numa_nr,
            groups,
            busiest_group,
            result,
        }
    }

    /// The part of `sched_balance_find_src_group()` after a busiest group
    /// was found, then `calculate_imbalance()` and the source runqueue.
    fn calculate_imbalance(
        &self,
        variant: ImbalanceVariant,
        k: usize,
        d: &Domain,
        stats: &[SgStats],
        b: usize,
    ) -> LbResult {
        let local = &stats[0];
        let busiest = &stats[b];
        // The flag belongs to the busiest group: set iff it copies a
        // NODE-level span.
        let (busiest_set, origin_level) = d.groups[b];
        let prefer_sibling = origin_level == 0;
        let mut r = LbResult::balanced(LbPath::NoBusiest, Some(prefer_sibling));
        let balanced = |path| LbResult::balanced(path, Some(prefer_sibling));
        // Overlapping groups are summed once per appearance.
        let sds_avg = || {
            let load: u64 = stats.iter().map(|s| s.load).sum();
            let capacity: u64 = stats.iter().map(|s| s.capacity).sum();
            load * SCHED_CAPACITY_SCALE / capacity
        };

        if local.group_type > busiest.group_type {
            return balanced(LbPath::LocalBusier);
        }
        if local.group_type == GroupType::Overloaded {
            if local.avg_load >= busiest.avg_load {
                return balanced(LbPath::LocalAvgGeBusiest);
            }
            if local.avg_load >= sds_avg() {
                return balanced(LbPath::LocalAvgGeDomainAvg);
            }
            if 100 * busiest.avg_load <= NUMA_IMBALANCE_PCT * local.avg_load {
                return balanced(LbPath::WithinImbalancePct);
            }
        }
        let sibling = sibling_imbalance(busiest, local);
        r.forced_by_sibling_gate = prefer_sibling && local.group_type == GroupType::HasSpare && sibling > 1;
        if !r.forced_by_sibling_gate && busiest.group_type != GroupType::Overloaded {
            // The idle gate counts idle CPUs in every variant.
            if busiest.weight > 1 && local.idle <= busiest.idle + 1 {
                return balanced(LbPath::IdleGateBalanced);
            }
            if busiest.sum_nr == 1 {
                return balanced(LbPath::SingleTask);
            }
        }

        // calculate_imbalance()
        let migration_type;
        if local.group_type == GroupType::HasSpare {
            if busiest.group_type == GroupType::Overloaded {
                // Fill the local spare capacity; no NUMA allowance.
                let mut imbalance = local.capacity.max(local.util) - local.util;
                let mut mt = MigrationType::Util;
                if imbalance == 0 {
                    imbalance = 1;
                    mt = MigrationType::Task;
                }
                r.path = LbPath::OverloadedUtil;
                r.imbalance_raw = imbalance;
                r.imbalance_adjusted = imbalance;
                r.imbalance = imbalance;
                migration_type = mt;
            } else {
                let raw = if busiest.weight == 1 || prefer_sibling {
                    r.path = LbPath::Sibling;
                    sibling
                } else if variant.busy_diff_for_unequal_weights() && local.weight != busiest.weight {
                    r.path = LbPath::BusyDiff;
                    busiest.busy().saturating_sub(local.busy())
                } else {
                    r.path = LbPath::IdleDiff;
                    local.idle.saturating_sub(busiest.idle)
                };
                let allowance = variant.allowance(d.imb_numa_nr);
                let dst_running = local.sum_nr + 1;
                let adjusted = adjust_numa_imbalance(raw, dst_running, d.imb_numa_nr, allowance);
                r.imbalance_raw = raw;
                r.allowance = Some(allowance);
                r.dst_running = Some(dst_running);
                r.imbalance_adjusted = adjusted;
                r.imbalance = adjusted >> 1;
                migration_type = MigrationType::Task;
            }
        } else {
            let mut local_avg = local.avg_load;
            if local.group_type < GroupType::Overloaded {
                // The local group will become overloaded: its avg_load is
                // needed now.
                local_avg = local.avg_of_load();
                if local_avg >= busiest.avg_load || local_avg >= sds_avg() {
                    return balanced(LbPath::AvgLoadBalanced);
                }
            }
            let avg = sds_avg();
            // Unsigned long arithmetic: a negative first term wraps to a
            // huge value and the second term wins.
            let t1 = busiest.avg_load.wrapping_sub(avg).wrapping_mul(busiest.capacity);
            let t2 = avg.wrapping_sub(local_avg).wrapping_mul(local.capacity);
            let imbalance = t1.min(t2) / SCHED_CAPACITY_SCALE;
            r.path = LbPath::AvgLoad;
            r.imbalance_raw = imbalance;
            r.imbalance_adjusted = imbalance;
            r.imbalance = imbalance;
            migration_type = MigrationType::Load;
        }
        r.migration_type = Some(migration_type);
        if r.imbalance == 0 {
            return r;
        }

        match self.sched_balance_find_src_rq(busiest_set, migration_type, r.imbalance) {
            None => r.no_src_rq = true,
            Some(src) => {
                let src_node = self.cpu_node[src as usize];
                r.moved = true;
                r.src_cpu = Some(src);
                r.src_node = Some(src_node);
                // The only task of the source is running: only active
                // balancing can move it.
                r.active_balance = Some(self.input.nr_running[src as usize] == 1);
                r.split = self.input.pair_cpus.contains(&src) && src_node as usize != k;
            }
        }
        r
    }

    /// `sched_balance_find_src_rq()` in the busiest group.
    fn sched_balance_find_src_rq(&self, set: NodeSet, migration_type: MigrationType, imbalance: u64) -> Option<u32> {
        let nr = &self.input.nr_running;
        let mut best: Option<u32> = None;
        let mut best_value = 0u64;
        for cpu in self.set_cpus(set) {
            let tasks = nr[cpu as usize] as u64;
            if tasks == 0 {
                continue;
            }
            match migration_type {
                MigrationType::Task => {
                    if tasks > best_value {
                        best_value = tasks;
                        best = Some(cpu);
                    }
                }
                MigrationType::Util => {
                    if tasks >= 2 {
                        return Some(cpu);
                    }
                }
                MigrationType::Load => {
                    let load = SCHED_CAPACITY_SCALE * tasks;
                    if tasks == 1 && load > imbalance {
                        continue;
                    }
                    if load > best_value {
                        best_value = load;
                        best = Some(cpu);
                    }
                }
            }
        }
        best
    }

    // -----------------------------------------------------------------------
    // Wake / fork

    /// `update_pick_idlest()`: is `sgs` idler than the idlest group so far? The initial
    /// candidate is overloaded with infinite avg_load.
    fn update_pick_idlest(idlest: Option<&SgStats>, sgs: &SgStats) -> bool {
        let Some(cur) = idlest else {
            return sgs.group_type < GroupType::Overloaded || sgs.avg_load < u64::MAX;
        };
        if sgs.group_type != cur.group_type {
            return sgs.group_type < cur.group_type;
        }
        match sgs.group_type {
            GroupType::Overloaded | GroupType::FullyBusy => sgs.avg_load < cur.avg_load,
            GroupType::HasSpare => sgs.idle > cur.idle || (sgs.idle == cur.idle && sgs.util < cur.util),
        }
    }

    /// `sched_balance_find_dst_group()` for `this_cpu` at domain `d`.
    fn sched_balance_find_dst_group(
        &self,
        variant: ImbalanceVariant,
        d: &Domain,
        this_cpu: u32,
        loads: &[NodeLoad],
    ) -> WakeLevel {
        // The group loop: update_sg_wakeup_stats() and update_pick_idlest() over groups 1..
        let (stats, groups) = self.group_stats(d, loads, Self::update_sg_wakeup_stats);
        let mut idlest_group: Option<usize> = None;
        for (i, sgs) in stats.iter().enumerate().skip(1) {
            if Self::update_pick_idlest(idlest_group.map(|c| &stats[c]), sgs) {
                idlest_group = Some(i);
            }
        }
        let mut w = WakeLevel {
            level: d.level as u32,
            distance: self.distances[d.level],
            balance_fork: d.balance_fork,
            this_cpu,
            groups,
            idlest_group,
            imbalance: None,
            allowance: None,
            imb_numa_nr: None,
            dst_running: None,
            choice: WakeChoice::Local,
            path: WakePath::NoIdlest,
        };
        let Some(i) = idlest_group else {
            return w;
        };
        let local = &stats[0];
        let idlest = &stats[i];
        let (choice, path) = if local.group_type < idlest.group_type {
            (WakeChoice::Local, WakePath::LocalIdlerType)
        } else if local.group_type > idlest.group_type {
            (WakeChoice::Idlest, WakePath::LocalBusierType)
        } else if local.group_type != GroupType::HasSpare {
            // NICE_0_LOAD * (imbalance_pct - 100) / 100
            let margin = SCHED_CAPACITY_SCALE * (NUMA_IMBALANCE_PCT - 100) / 100;
            if idlest.avg_load + margin >= local.avg_load {
                // Cross-domain: the remote group carries the margin (every domain here is
                // SD_NUMA).
                (WakeChoice::Local, WakePath::NumaLoadMargin)
            } else if idlest.avg_load >= local.avg_load + margin {
                (WakeChoice::Local, WakePath::LocalLessLoaded)
            } else if 100 * local.avg_load <= NUMA_IMBALANCE_PCT * idlest.avg_load {
                (WakeChoice::Local, WakePath::ImbalancePct)
            } else {
                (WakeChoice::Idlest, WakePath::AvgLoad)
            }
        } else {
            // The task may run anywhere, so the threshold is capped by the
            // local group's weight.
            let imb_nr = (local.weight.min(d.imb_numa_nr as u64)) as u32;
            let use_busy = variant.busy_diff_for_unequal_weights() && local.weight != idlest.weight;
            let imbalance = if use_busy {
                local.busy().abs_diff(idlest.busy())
            } else {
                local.idle.abs_diff(idlest.idle)
            };
            let allowance = variant.allowance(imb_nr);
            let dst_running = local.sum_nr + 1;
            w.imbalance = Some(imbalance);
            w.allowance = Some(allowance);
            w.imb_numa_nr = Some(imb_nr);
            w.dst_running = Some(dst_running);
            let paths = if use_busy {
                [
                    WakePath::BusyDiffAllowed,
                    WakePath::BusyDiffLocalHasMoreIdle,
                    WakePath::BusyDiffExceeds,
                ]
            } else {
                [
                    WakePath::IdleDiffAllowed,
                    WakePath::IdleDiffLocalHasMoreIdle,
                    WakePath::IdleDiffExceeds,
                ]
            };
            if adjust_numa_imbalance(imbalance, dst_running, imb_nr, allowance) == 0 {
                (WakeChoice::Local, paths[0])
            } else if local.idle >= idlest.idle {
                // The final comparison counts idle CPUs in every variant.
                (WakeChoice::Local, paths[1])
            } else {
                (WakeChoice::Idlest, paths[2])
            }
        };
        w.choice = choice;
        w.path = path;
        w
    }

    /// `sched_balance_find_dst_group_cpu()`: the lowest idle CPU of the
    /// group, else the lowest CPU with the fewest tasks.
    fn sched_balance_find_dst_group_cpu(&self, set: NodeSet, nr: &[u32]) -> Option<u32> {
        let mut least: Option<(u32, u32)> = None;
        for cpu in self.set_cpus(set) {
            let tasks = nr[cpu as usize];
            if tasks == 0 {
                return Some(cpu);
            }
            if least.is_none_or(|(_, l)| tasks < l) {
                least = Some((cpu, tasks));
            }
        }
        least.map(|(cpu, _)| cpu)
    }

    /// Kept, fork-enabled NUMA domains of `node` whose span weight is below
    /// `weight_below` (all of them for `None`), highest first.
    fn fork_levels(&self, node: usize, weight_below: Option<u32>) -> Vec<usize> {
        let chain = &self.domains[node];
        // select_task_rq_fair(): the fork domain is the top of the unbroken
        // bottom-up run of domains with SD_BALANCE_FORK.
        let kept: Vec<usize> = (0..chain.len()).filter(|&i| !chain[i].degenerate).collect();
        let run: Vec<usize> = kept.iter().copied().take_while(|&i| chain[i].balance_fork).collect();
        let mut levels: Vec<usize> = match weight_below {
            None => run,
            Some(w) => kept
                .into_iter()
                .filter(|&i| chain[i].span_weight < w && chain[i].balance_fork)
                .collect(),
        };
        levels.reverse();
        levels
    }

    /// The fork walk of `sched_balance_find_dst_cpu()` (spec B.8).
    fn sched_balance_find_dst_cpu(
        &self,
        variant: ImbalanceVariant,
        this_cpu: u32,
        nr: &[u32],
        loads: &[NodeLoad],
    ) -> ForkPlacement {
        let mut cpu = this_cpu;
        let mut node = self.cpu_node[cpu as usize] as usize;
        let mut queue = self.fork_levels(node, None);
        let mut steps = Vec::new();
        let mut pos = 0;
        while pos < queue.len() {
            let d = &self.domains[node][queue[pos]];
            let eval = self.sched_balance_find_dst_group(variant, d, cpu, loads);
            let new_cpu = match (eval.choice, eval.idlest_group) {
                (WakeChoice::Idlest, Some(g)) => self.sched_balance_find_dst_group_cpu(d.groups[g].0, nr),
                _ => None,
            };
            steps.push(ForkStep {
                this_node: node as u32,
                eval,
                new_cpu,
            });
            match new_cpu {
                Some(target) if target != cpu => {
                    // Continue below the level just used, on the new CPU's
                    // own domains.
                    cpu = target;
                    node = self.cpu_node[cpu as usize] as usize;
                    queue = self.fork_levels(node, Some(d.span_weight));
                    pos = 0;
                }
                _ => pos += 1,
            }
        }
        let final_node = self.cpu_node[cpu as usize];
        ForkPlacement {
            steps,
            final_cpu: cpu,
            final_node,
            split: final_node != self.pair_node,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sibling_imbalance_rounding() {
        let sg = |cores: u64, sum_nr: u64| SgStats {
            weight: cores,
            cores,
            sum_nr,
            idle: 0,
            capacity: 0,
            util: 0,
            load: 0,
            group_type: GroupType::HasSpare,
            avg_load: 0,
        };
        assert_eq!(sibling_imbalance(&sg(32, 2), &sg(64, 0)), 3);
        assert_eq!(sibling_imbalance(&sg(32, 4), &sg(64, 0)), 6);
        assert_eq!(sibling_imbalance(&sg(32, 2), &sg(32, 0)), 2);
        assert_eq!(sibling_imbalance(&sg(32, 0), &sg(64, 0)), 0);
    }

    #[test]
    fn numa_allowance_needs_a_light_destination() {
        // At most imb_numa_nr tasks at the destination: an imbalance up to the allowance is
        // forgiven; one more task there and the raw value stands.
        assert_eq!(adjust_numa_imbalance(2, 4, 4, 2), 0);
        assert_eq!(adjust_numa_imbalance(3, 4, 4, 2), 3);
        assert_eq!(adjust_numa_imbalance(2, 5, 4, 2), 2);
        assert!(allow_numa_imbalance(4, 4) && !allow_numa_imbalance(5, 4));
    }

    #[test]
    fn wake_path_names_are_spec_b8() {
        let names: Vec<&str> = WakePath::ALL.iter().map(|p| p.as_str()).collect();
        for name in ["numa_load_margin", "local_less_loaded", "imbalance_pct", "avg_load"] {
            assert!(names.contains(&name), "{name} missing from {names:?}");
        }
        assert!(!names.iter().any(|n| n.starts_with("avg_load_")), "{names:?}");
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
    }
}
