//! Model of the scheduler's NUMA sched-domain construction (kernel/sched/topology.c) and the NUMA imbalance decision (kernel/sched/fair.c) for a communicating task pair, in variants upstream / p12 / p123 (seed 003). Pure.
//!
//! What this module owns (spec Part B, `shared/spec/mana-and-sched-numa.md`):
//! - the NUMA levels of each node, their overlapping groups
//!   (`build_overlap_sched_groups()` with `find_descended_sibling()`),
//!   degeneration and `imb_numa_nr`;
//! - the periodic balance decision of every idle node at every kept NUMA
//!   level (`sched_balance_find_src_group()`, `calculate_imbalance()`,
//!   `sched_balance_find_src_rq()`), evaluated on one snapshot;
//! - the wake/fork placement (`sched_balance_find_dst_group()` and the fork
//!   walk of `sched_balance_find_dst_cpu()`).
//!
//! What it refuses: PELT averages, balance intervals, `should_we_balance()`,
//! NUMA balancing and task identity. Each task is an always-runnable nice-0
//! task; spec B.11 lists the fixed choices. Everything is computed from the
//! input; no I/O, no clocks, no randomness.
//!
//! Entry points: [`build_topology`], [`run_variant`] and [`run`]. Input is
//! validated once (spec B.1); invalid input gives a [`SchedError`].

use std::fmt;

/// Largest node count the model accepts (node sets are 64-bit masks).
pub const NODES_MAX: usize = 64;
/// Largest CPU count the model accepts.
pub const CPUS_MAX: usize = 8192;
/// Largest `nr_running` per CPU the model accepts; keeps load sums far from
/// overflow.
pub const NR_RUNNING_MAX: u32 = 1 << 20;
/// Default `node_reclaim_distance` (`RECLAIM_DISTANCE`).
pub const DEFAULT_NODE_RECLAIM_DISTANCE: u32 = 30;

const SCHED_CAPACITY_SCALE: u64 = 1024;
/// `imbalance_pct` of NUMA domains.
const NUMA_IMBALANCE_PCT: u64 = 117;
/// The fixed floating allowance of `adjust_numa_imbalance()`.
const NUMA_IMBALANCE_MIN: u64 = 2;
/// Cap of the p123 allowance.
const P123_ALLOWANCE_MAX: u32 = 4;

/// Places where the model follows an interpretation rather than kernel
/// text. A dashboard shows these next to the variant results.
pub const INTERPRETATION_NOTES: &[&str] = &[
    "p12/p123 are not public patches; their behaviour is an interpretation of the seed-003 cover letter (spec B.9).",
    "p12: the busy-CPU difference replaces the idle-CPU difference only when the two groups' weights differ; the idle gate of the periodic path and the final idle comparison of the wake path are unchanged.",
    "p123: the floating allowance is clamp(imb_numa_nr, 2, 4) instead of a fixed 2; the v1 threshold and dst_running changes are not modelled.",
    "Wake path under p123: the allowance is clamped from the imb_numa_nr actually passed in, min(local group weight, sd->imb_numa_nr).",
    "imb_numa_nr scales by the node's NUMA-1 span weight even where that level is degenerate.",
    "Wake path with both groups fully busy or overloaded: the path names avg_load_* and a null imbalance are this model's own labels; no golden case exercises them.",
    "Periodic path: outcomes decided by a gate before an imbalance is computed report migration_type null.",
];

/// The kernel variant being modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Variant {
    /// Mainline.
    Upstream,
    /// Patches 1+2: busy-CPU difference for unequal group weights.
    P12,
    /// Patches 1+2+3: plus the allowance cap.
    P123,
}

impl Variant {
    pub const ALL: [Variant; 3] = [Variant::Upstream, Variant::P12, Variant::P123];

    pub fn as_str(self) -> &'static str {
        match self {
            Variant::Upstream => "upstream",
            Variant::P12 => "p12",
            Variant::P123 => "p123",
        }
    }

    fn busy_diff_for_unequal_weights(self) -> bool {
        self != Variant::Upstream
    }

    /// The allowance `adjust_numa_imbalance()` applies below the threshold.
    fn allowance(self, imb_numa_nr: u32) -> u32 {
        match self {
            Variant::Upstream | Variant::P12 => NUMA_IMBALANCE_MIN as u32,
            Variant::P123 => imb_numa_nr.clamp(NUMA_IMBALANCE_MIN as u32, P123_ALLOWANCE_MAX),
        }
    }
}

/// Machine, snapshot and pair (spec B.1). `cpus_per_node` holds one count
/// per node; a single count for all nodes is expanded by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedInput {
    pub node_distance: Vec<Vec<u32>>,
    pub cpus_per_node: Vec<u32>,
    /// Hardware threads per core.
    pub smt: u32,
    pub llcs_per_node: u32,
    pub node_reclaim_distance: u32,
    /// Runnable CFS tasks per CPU.
    pub nr_running: Vec<u32>,
    /// CPUs of the two communicating tasks (same node).
    pub pair_cpus: [u32; 2],
}

/// Invalid input (spec B.1 plus the model's size limits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchedError {
    TooFewNodes {
        n_nodes: usize,
    },
    TooManyNodes {
        n_nodes: usize,
    },
    DistanceNotSquare {
        row: usize,
        len: usize,
        n_nodes: usize,
    },
    DiagonalNot10 {
        node: usize,
        distance: u32,
    },
    DistanceOutOfRange {
        from: usize,
        to: usize,
        distance: u32,
    },
    Asymmetric {
        from: usize,
        to: usize,
        forward: u32,
        backward: u32,
    },
    CpusPerNodeLength {
        n_nodes: usize,
        got: usize,
    },
    NodeWithoutCpus {
        node: usize,
    },
    TooManyCpus {
        n_cpus: u64,
    },
    ZeroSmt,
    ZeroLlcsPerNode,
    SmtNotDivisor {
        node: usize,
        cpus: u32,
        smt: u32,
    },
    LlcsNotDivisor {
        node: usize,
        cpus: u32,
        llcs_per_node: u32,
    },
    LlcNotMultipleOfSmt {
        node: usize,
        llc_cpus: u32,
        smt: u32,
    },
    NrRunningLength {
        n_cpus: usize,
        got: usize,
    },
    NrRunningTooLarge {
        cpu: usize,
        nr_running: u32,
    },
    PairCpuOutOfRange {
        cpu: u32,
        n_cpus: usize,
    },
    PairNotDistinct {
        cpu: u32,
    },
    PairOnDifferentNodes {
        cpus: [u32; 2],
        nodes: [u32; 2],
    },
    PairCpuNotRunning {
        cpu: u32,
    },
}

impl fmt::Display for SchedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use SchedError::*;
        match self {
            TooFewNodes { n_nodes } => write!(f, "{n_nodes} node(s) given, at least 2 are needed"),
            TooManyNodes { n_nodes } => write!(f, "{n_nodes} nodes given, at most {NODES_MAX} are supported"),
            DistanceNotSquare { row, len, n_nodes } => write!(
                f,
                "node_distance row {row} has {len} entries, expected {n_nodes} (matrix must be square)"
            ),
            DiagonalNot10 { node, distance } => {
                write!(
                    f,
                    "node_distance[{node}][{node}] is {distance}, the diagonal must be 10"
                )
            }
            DistanceOutOfRange { from, to, distance } => write!(
                f,
                "node_distance[{from}][{to}] is {distance}, off-diagonal distances must be in 11..=254"
            ),
            Asymmetric {
                from,
                to,
                forward,
                backward,
            } => write!(
                f,
                "node_distance is not symmetric: [{from}][{to}] = {forward} but [{to}][{from}] = {backward}"
            ),
            CpusPerNodeLength { n_nodes, got } => {
                write!(f, "cpus_per_node has {got} entries, expected one per node ({n_nodes})")
            }
            NodeWithoutCpus { node } => write!(f, "node {node} has no CPUs, at least 1 is needed"),
            TooManyCpus { n_cpus } => write!(f, "{n_cpus} CPUs in total, at most {CPUS_MAX} are supported"),
            ZeroSmt => write!(f, "smt must be at least 1"),
            ZeroLlcsPerNode => write!(f, "llcs_per_node must be at least 1"),
            SmtNotDivisor { node, cpus, smt } => {
                write!(f, "smt {smt} does not divide the {cpus} CPUs of node {node}")
            }
            LlcsNotDivisor {
                node,
                cpus,
                llcs_per_node,
            } => write!(
                f,
                "llcs_per_node {llcs_per_node} does not divide the {cpus} CPUs of node {node}"
            ),
            LlcNotMultipleOfSmt { node, llc_cpus, smt } => write!(
                f,
                "an LLC of node {node} has {llc_cpus} CPUs, not a multiple of smt {smt}"
            ),
            NrRunningLength { n_cpus, got } => {
                write!(f, "nr_running has {got} entries, expected one per CPU ({n_cpus})")
            }
            NrRunningTooLarge { cpu, nr_running } => write!(
                f,
                "nr_running of CPU {cpu} is {nr_running}, at most {NR_RUNNING_MAX} is supported"
            ),
            PairCpuOutOfRange { cpu, n_cpus } => {
                write!(f, "pair CPU {cpu} does not exist ({n_cpus} CPUs)")
            }
            PairNotDistinct { cpu } => write!(f, "pair_cpus name CPU {cpu} twice"),
            PairOnDifferentNodes { cpus, nodes } => write!(
                f,
                "pair CPUs {} and {} are on nodes {} and {}, they must share a node",
                cpus[0], cpus[1], nodes[0], nodes[1]
            ),
            PairCpuNotRunning { cpu } => {
                write!(f, "pair CPU {cpu} has nr_running 0, each pair CPU needs at least 1")
            }
        }
    }
}

impl std::error::Error for SchedError {}

// ---------------------------------------------------------------------------
// Output types

/// One sched group of a NUMA domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedGroupInfo {
    pub nodes: Vec<u32>,
    /// CPUs in the group.
    pub weight: u32,
    pub cores: u32,
    /// Level of the domain whose span the group copies (0 = NODE).
    pub origin_level: u32,
    /// `SD_PREFER_SIBLING` of that domain: true iff `origin_level == 0`.
    pub prefer_sibling: bool,
}

/// One NUMA level of a node's domain chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaDomainInfo {
    pub level: u32,
    pub distance: u32,
    pub span_nodes: Vec<u32>,
    pub span_weight: u32,
    /// Removed by `cpu_attach_domain()` because its span equals its child's.
    pub degenerate: bool,
    pub imb_numa_nr: u32,
    /// `SD_BALANCE_FORK` (distance within `node_reclaim_distance`).
    pub balance_fork: bool,
    /// Groups of different weights.
    pub unequal_weights: bool,
    /// Groups in the kernel's list order, local group first.
    pub groups: Vec<SchedGroupInfo>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeTopology {
    pub node: u32,
    /// Every built NUMA level, degenerate ones included, bottom-up.
    pub numa_domains: Vec<NumaDomainInfo>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Sorted distinct distances; `distances[0] == 10`.
    pub distances: Vec<u32>,
    pub nodes: Vec<NodeTopology>,
}

/// `enum group_type`, restricted to what the model produces. The order is
/// the kernel's: a later type is busier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupType {
    HasSpare,
    FullyBusy,
    Overloaded,
}

impl GroupType {
    pub fn as_str(self) -> &'static str {
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
    pub nodes: Vec<u32>,
    pub weight: u32,
    pub sum_nr_running: u64,
    pub idle_cpus: u32,
    pub busy_cpus: u32,
    pub group_type: GroupType,
    /// `avg_load` as the path that computed these stats sets it (periodic:
    /// overloaded only; wake: fully busy and overloaded); 0 otherwise.
    pub avg_load: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrationType {
    Load,
    Util,
    Task,
}

impl MigrationType {
    pub fn as_str(self) -> &'static str {
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
    pub fn as_str(self) -> &'static str {
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
    pub path: LbPath,
    /// Prefer-sibling flag of the busiest group; `None` without a busiest.
    pub prefer_sibling: Option<bool>,
    /// `sibling_imbalance() > 1` sent the decision past the idle gates.
    pub forced_by_sibling_gate: bool,
    pub imbalance_raw: u64,
    pub allowance: Option<u32>,
    pub dst_running: Option<u64>,
    pub imbalance_adjusted: u64,
    pub imbalance: u64,
    pub migration_type: Option<MigrationType>,
    pub no_src_rq: bool,
    /// A task is pulled (`"move"` in the golden format).
    pub moved: bool,
    pub src_cpu: Option<u32>,
    pub src_node: Option<u32>,
    pub active_balance: Option<bool>,
    /// The pulled task is one of the pair and leaves the pair's node.
    pub split: bool,
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
    pub level: u32,
    pub distance: u32,
    pub dst_cpu: u32,
    pub imb_numa_nr: u32,
    pub groups: Vec<GroupLoad>,
    pub busiest_group: Option<usize>,
    pub result: LbResult,
}

/// The periodic balance as seen from one node's lowest idle CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeriodicNode {
    pub dst_node: u32,
    /// `None` if the node has no idle CPU (then `levels` is empty).
    pub dst_cpu: Option<u32>,
    /// One entry per kept NUMA domain, bottom-up.
    pub levels: Vec<PeriodicLevel>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeChoice {
    Local,
    Idlest,
}

impl WakeChoice {
    pub fn as_str(self) -> &'static str {
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
    AvgLoadNumaMargin,
    AvgLoadLocalLighter,
    AvgLoadWithinPct,
    AvgLoadExceeds,
    IdleDiffAllowed,
    IdleDiffLocalHasMoreIdle,
    IdleDiffExceeds,
    BusyDiffAllowed,
    BusyDiffLocalHasMoreIdle,
    BusyDiffExceeds,
}

impl WakePath {
    pub fn as_str(self) -> &'static str {
        match self {
            WakePath::NoIdlest => "no_idlest",
            WakePath::LocalIdlerType => "local_idler_type",
            WakePath::LocalBusierType => "local_busier_type",
            WakePath::AvgLoadNumaMargin => "avg_load_numa_margin",
            WakePath::AvgLoadLocalLighter => "avg_load_local_lighter",
            WakePath::AvgLoadWithinPct => "avg_load_within_pct",
            WakePath::AvgLoadExceeds => "avg_load_exceeds",
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
    pub level: u32,
    pub distance: u32,
    pub balance_fork: bool,
    pub this_cpu: u32,
    pub groups: Vec<GroupLoad>,
    pub idlest_group: Option<usize>,
    /// Set on the has-spare path only.
    pub imbalance: Option<u64>,
    pub allowance: Option<u32>,
    /// `min(local weight, sd->imb_numa_nr)` on the has-spare path.
    pub imb_numa_nr: Option<u32>,
    pub dst_running: Option<u64>,
    pub choice: WakeChoice,
    pub path: WakePath,
}

/// One level visited by the fork walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkStep {
    pub this_node: u32,
    /// The wake-level evaluation (`balance_fork` is always true here).
    pub eval: WakeLevel,
    /// CPU chosen in the idlest group; `None` when the local group won.
    pub new_cpu: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkPlacement {
    pub steps: Vec<ForkStep>,
    pub final_cpu: u32,
    pub final_node: u32,
    /// The new task ends on another node than the pair.
    pub split: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantOutcome {
    pub variant: Variant,
    pub periodic: Vec<PeriodicNode>,
    pub periodic_split: bool,
    pub wake_levels: Vec<WakeLevel>,
    pub fork_placement: ForkPlacement,
}

/// The one-line verdict per variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VariantSummary {
    pub variant: Variant,
    pub periodic_split: bool,
    pub fork_split: bool,
    pub fork_final_node: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedOutcome {
    pub topology: Topology,
    /// In the order of [`Variant::ALL`].
    pub variants: Vec<VariantOutcome>,
    pub summary: Vec<VariantSummary>,
}

/// Builds the NUMA topology only.
pub fn build_topology(input: &SchedInput) -> Result<Topology, SchedError> {
    Ok(Model::new(input)?.topology)
}

/// Runs one variant.
pub fn run_variant(input: &SchedInput, variant: Variant) -> Result<VariantOutcome, SchedError> {
    let model = Model::new(input)?;
    Ok(model.run_variant(variant))
}

/// Topology, all three variants and the summary.
pub fn run(input: &SchedInput) -> Result<SchedOutcome, SchedError> {
    let model = Model::new(input)?;
    let variants: Vec<VariantOutcome> = Variant::ALL.iter().map(|&v| model.run_variant(v)).collect();
    let summary = variants
        .iter()
        .map(|v| VariantSummary {
            variant: v.variant,
            periodic_split: v.periodic_split,
            fork_split: v.fork_placement.split,
            fork_final_node: v.fork_placement.final_node,
        })
        .collect();
    Ok(SchedOutcome {
        topology: model.topology,
        variants,
        summary,
    })
}

// ---------------------------------------------------------------------------
// Validated model

/// A set of nodes as a bit mask (at most [`NODES_MAX`] nodes).
type NodeSet = u64;

fn node_bit(node: usize) -> NodeSet {
    1u64 << node
}

fn is_subset(a: NodeSet, b: NodeSet) -> bool {
    a & !b == 0
}

fn set_nodes(set: NodeSet) -> Vec<u32> {
    (0..NODES_MAX as u32).filter(|&n| set & (1u64 << n) != 0).collect()
}

/// One built NUMA domain with its node sets kept for evaluation.
struct Domain {
    level: usize,
    span: NodeSet,
    degenerate: bool,
    imb_numa_nr: u32,
    balance_fork: bool,
    span_weight: u32,
    /// (group span, origin level), local group first.
    groups: Vec<(NodeSet, usize)>,
}

/// Per-node totals of one snapshot.
#[derive(Clone, Copy, Default)]
struct NodeLoad {
    nr: u64,
    idle: u64,
}

struct Model<'a> {
    input: &'a SchedInput,
    n_nodes: usize,
    distances: Vec<u32>,
    node_first_cpu: Vec<u32>,
    cpu_node: Vec<u32>,
    /// `domains[n]`: node n's NUMA levels 1..=top, bottom-up.
    domains: Vec<Vec<Domain>>,
    topology: Topology,
    pair_node: u32,
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

/// `adjust_numa_imbalance()`: below the threshold a small imbalance is
/// allowed; above it the raw value stands.
fn adjust_numa_imbalance(imbalance: u64, dst_running: u64, imb_numa_nr: u32, allowance: u32) -> u64 {
    if dst_running > imb_numa_nr as u64 {
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

/// Which path computes the stats; it decides when `avg_load` is set.
#[derive(Clone, Copy, PartialEq, Eq)]
enum StatsFor {
    Periodic,
    Wakeup,
}

impl<'a> Model<'a> {
    fn new(input: &'a SchedInput) -> Result<Model<'a>, SchedError> {
        let n_nodes = validate(input)?;
        let dist = &input.node_distance;

        let mut node_first_cpu = Vec::with_capacity(n_nodes);
        let mut cpu_node = Vec::new();
        for (node, &count) in input.cpus_per_node.iter().enumerate() {
            node_first_cpu.push(cpu_node.len() as u32);
            cpu_node.extend(std::iter::repeat_n(node as u32, count as usize));
        }

        // Distance levels (B.2).
        let mut distances: Vec<u32> = dist.iter().flatten().copied().collect();
        distances.sort_unstable();
        distances.dedup();
        let n_levels = distances.len();
        let all: NodeSet = if n_nodes == 64 { u64::MAX } else { (1u64 << n_nodes) - 1 };
        // masks[l][n] = nodes within distances[l] of n.
        let masks: Vec<Vec<NodeSet>> = distances
            .iter()
            .map(|&d| {
                (0..n_nodes)
                    .map(|n| {
                        (0..n_nodes)
                            .filter(|&m| dist[n][m] <= d)
                            .fold(0, |s, m| s | node_bit(m))
                    })
                    .collect()
            })
            .collect();
        let weight_of = |set: NodeSet| -> u32 {
            (0..n_nodes)
                .filter(|&m| set & node_bit(m) != 0)
                .map(|m| input.cpus_per_node[m])
                .sum()
        };
        // The chain of node n stops at the first level spanning all nodes
        // (B.3). The last level always spans everything.
        let top: Vec<usize> = (0..n_nodes)
            .map(|n| (0..n_levels).find(|&l| masks[l][n] == all).unwrap_or(n_levels - 1))
            .collect();

        let mut domains: Vec<Vec<Domain>> = Vec::with_capacity(n_nodes);
        for n in 0..n_nodes {
            let base = if input.llcs_per_node == 1 {
                (input.cpus_per_node[n] >> 3).max(1)
            } else {
                input.llcs_per_node.max(1)
            };
            let imb_span = weight_of(masks[1][n]).max(1);
            let mut chain = Vec::new();
            for l in 1..=top[n] {
                let span = masks[l][n];
                let span_weight = weight_of(span);
                chain.push(Domain {
                    level: l,
                    span,
                    degenerate: span == masks[l - 1][n],
                    imb_numa_nr: base * (span_weight / imb_span).max(1),
                    balance_fork: distances[l] <= input.node_reclaim_distance,
                    span_weight,
                    groups: build_overlap_sched_groups(n, l, span, &masks, &top, n_nodes),
                });
            }
            domains.push(chain);
        }

        let smt = input.smt;
        let topology = Topology {
            distances: distances.clone(),
            nodes: domains
                .iter()
                .enumerate()
                .map(|(n, chain)| NodeTopology {
                    node: n as u32,
                    numa_domains: chain
                        .iter()
                        .map(|d| {
                            let groups: Vec<SchedGroupInfo> = d
                                .groups
                                .iter()
                                .map(|&(set, origin)| {
                                    let weight = weight_of(set);
                                    SchedGroupInfo {
                                        nodes: set_nodes(set),
                                        weight,
                                        cores: weight / smt,
                                        origin_level: origin as u32,
                                        prefer_sibling: origin == 0,
                                    }
                                })
                                .collect();
                            let unequal_weights = groups.windows(2).any(|w| w[0].weight != w[1].weight);
                            NumaDomainInfo {
                                level: d.level as u32,
                                distance: distances[d.level],
                                span_nodes: set_nodes(d.span),
                                span_weight: d.span_weight,
                                degenerate: d.degenerate,
                                imb_numa_nr: d.imb_numa_nr,
                                balance_fork: d.balance_fork,
                                unequal_weights,
                                groups,
                            }
                        })
                        .collect(),
                })
                .collect(),
        };

        let pair_node = cpu_node[input.pair_cpus[0] as usize];
        Ok(Model {
            input,
            n_nodes,
            distances,
            node_first_cpu,
            cpu_node,
            domains,
            topology,
            pair_node,
        })
    }

    fn node_cpus(&self, node: usize) -> std::ops::Range<u32> {
        let first = self.node_first_cpu[node];
        first..first + self.input.cpus_per_node[node]
    }

    /// CPUs of a node set in ascending order.
    fn set_cpus(&self, set: NodeSet) -> impl Iterator<Item = u32> + '_ {
        (0..self.n_nodes)
            .filter(move |&n| set & node_bit(n) != 0)
            .flat_map(move |n| self.node_cpus(n))
    }

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

    fn sg_stats(&self, set: NodeSet, loads: &[NodeLoad], purpose: StatsFor) -> SgStats {
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
        let mut stats = SgStats {
            weight,
            cores: weight / self.input.smt as u64,
            sum_nr,
            idle,
            capacity,
            util,
            load,
            group_type,
            avg_load: 0,
        };
        let set_avg = match purpose {
            StatsFor::Periodic => group_type == GroupType::Overloaded,
            StatsFor::Wakeup => group_type != GroupType::HasSpare,
        };
        if set_avg {
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

    fn run_variant(&self, variant: Variant) -> VariantOutcome {
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

    /// `update_sd_pick_busiest()` over groups 1.. (spec B.7 step 2).
    fn pick_busiest(stats: &[SgStats]) -> Option<usize> {
        let mut busiest: Option<usize> = None;
        for (i, sgs) in stats.iter().enumerate().skip(1) {
            if sgs.sum_nr == 0 {
                continue;
            }
            let better = match busiest {
                // The initial candidate is has_spare with unbounded idle
                // CPUs and no tasks, so any group with a task beats it.
                None => true,
                Some(b) => {
                    let cur = &stats[b];
                    if sgs.group_type != cur.group_type {
                        sgs.group_type > cur.group_type
                    } else {
                        match sgs.group_type {
                            GroupType::Overloaded => sgs.avg_load > cur.avg_load,
                            // avg_load is not computed for fully busy groups,
                            // so the later group wins ties.
                            GroupType::FullyBusy => sgs.avg_load >= cur.avg_load,
                            GroupType::HasSpare => {
                                sgs.idle < cur.idle || (sgs.idle == cur.idle && sgs.sum_nr > cur.sum_nr)
                            }
                        }
                    }
                }
            };
            if better {
                busiest = Some(i);
            }
        }
        busiest
    }

    /// `sched_balance_find_src_group()` + `calculate_imbalance()` +
    /// Statistics of every group of domain `d` (the `update_sg_*_stats()` loop both balancing
    /// paths run), with their reported form.
    fn domain_stats(&self, d: &Domain, loads: &[NodeLoad], path: StatsFor) -> (Vec<SgStats>, Vec<GroupLoad>) {
        let stats: Vec<SgStats> = d
            .groups
            .iter()
            .map(|&(set, _)| self.sg_stats(set, loads, path))
            .collect();
        let groups = d
            .groups
            .iter()
            .zip(&stats)
            .map(|(&(set, _), s)| Self::group_load(set, s))
            .collect();
        (stats, groups)
    }

    /// `sched_balance_find_src_rq()` for node k's dst CPU at domain `d`.
    fn sched_balance_find_src_group(
        &self,
        variant: Variant,
        k: usize,
        dst_cpu: u32,
        d: &Domain,
        loads: &[NodeLoad],
    ) -> PeriodicLevel {
        let (stats, groups) = self.domain_stats(d, loads, StatsFor::Periodic);
        let busiest_group = Self::pick_busiest(&stats);
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
    fn calculate_imbalance(&self, variant: Variant, k: usize, d: &Domain, stats: &[SgStats], b: usize) -> LbResult {
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

    /// `update_pick_idlest()` over groups 1..
    fn pick_idlest(stats: &[SgStats]) -> Option<usize> {
        let mut idlest: Option<usize> = None;
        for (i, sgs) in stats.iter().enumerate().skip(1) {
            let better = match idlest {
                // The initial candidate is overloaded with infinite avg_load.
                None => sgs.group_type < GroupType::Overloaded || sgs.avg_load < u64::MAX,
                Some(c) => {
                    let cur = &stats[c];
                    if sgs.group_type != cur.group_type {
                        sgs.group_type < cur.group_type
                    } else {
                        match sgs.group_type {
                            GroupType::Overloaded | GroupType::FullyBusy => sgs.avg_load < cur.avg_load,
                            GroupType::HasSpare => sgs.idle > cur.idle || (sgs.idle == cur.idle && sgs.util < cur.util),
                        }
                    }
                }
            };
            if better {
                idlest = Some(i);
            }
        }
        idlest
    }

    /// `sched_balance_find_dst_group()` for `this_cpu` at domain `d`.
    fn sched_balance_find_dst_group(
        &self,
        variant: Variant,
        d: &Domain,
        this_cpu: u32,
        loads: &[NodeLoad],
    ) -> WakeLevel {
        let (stats, groups) = self.domain_stats(d, loads, StatsFor::Wakeup);
        let idlest_group = Self::pick_idlest(&stats);
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
                (WakeChoice::Local, WakePath::AvgLoadNumaMargin)
            } else if idlest.avg_load >= local.avg_load + margin {
                (WakeChoice::Local, WakePath::AvgLoadLocalLighter)
            } else if 100 * local.avg_load <= NUMA_IMBALANCE_PCT * idlest.avg_load {
                (WakeChoice::Local, WakePath::AvgLoadWithinPct)
            } else {
                (WakeChoice::Idlest, WakePath::AvgLoadExceeds)
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
        variant: Variant,
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

/// `build_overlap_sched_groups()` for node n at NUMA level l with span S:
/// walk the nodes of S cyclically from n; each node not yet covered donates
/// the span of its child domain, or, where that child reaches outside S
/// (diameter ≥ 3), the span of the highest lower level that fits
/// (`find_descended_sibling()`). Returns (group span, origin level).
///
/// Why every group is a subset of S: level 0 of any node is the node
/// itself, which lies in S, so the descent always stops.
fn build_overlap_sched_groups(
    n: usize,
    l: usize,
    span: NodeSet,
    masks: &[Vec<NodeSet>],
    top: &[usize],
    n_nodes: usize,
) -> Vec<(NodeSet, usize)> {
    let mut covered: NodeSet = 0;
    let mut groups = Vec::new();
    for step in 0..n_nodes {
        let m = (n + step) % n_nodes;
        if span & node_bit(m) == 0 || covered & node_bit(m) != 0 {
            continue;
        }
        // A node whose chain ended below l never built a domain there.
        if top[m] < l {
            continue;
        }
        let mut j = l;
        if !is_subset(masks[j - 1][m], span) {
            while j >= 2 && !is_subset(masks[j - 1][m], span) {
                j -= 1;
            }
        }
        let group = masks[j - 1][m];
        debug_assert!(is_subset(group, span));
        groups.push((group, j - 1));
        covered |= group;
    }
    groups
}

/// Spec B.1 checks; returns the node count.
#[allow(clippy::needless_range_loop)] // [from][to] and [to][from] are both read
fn validate(input: &SchedInput) -> Result<usize, SchedError> {
    let dist = &input.node_distance;
    let n_nodes = dist.len();
    if n_nodes < 2 {
        return Err(SchedError::TooFewNodes { n_nodes });
    }
    if n_nodes > NODES_MAX {
        return Err(SchedError::TooManyNodes { n_nodes });
    }
    for (row, r) in dist.iter().enumerate() {
        if r.len() != n_nodes {
            return Err(SchedError::DistanceNotSquare {
                row,
                len: r.len(),
                n_nodes,
            });
        }
    }
    for from in 0..n_nodes {
        for to in 0..n_nodes {
            let d = dist[from][to];
            if from == to {
                if d != 10 {
                    return Err(SchedError::DiagonalNot10 {
                        node: from,
                        distance: d,
                    });
                }
            } else if !(11..=254).contains(&d) {
                return Err(SchedError::DistanceOutOfRange { from, to, distance: d });
            } else if dist[to][from] != d {
                return Err(SchedError::Asymmetric {
                    from,
                    to,
                    forward: d,
                    backward: dist[to][from],
                });
            }
        }
    }
    if input.cpus_per_node.len() != n_nodes {
        return Err(SchedError::CpusPerNodeLength {
            n_nodes,
            got: input.cpus_per_node.len(),
        });
    }
    let mut n_cpus: u64 = 0;
    for (node, &c) in input.cpus_per_node.iter().enumerate() {
        if c == 0 {
            return Err(SchedError::NodeWithoutCpus { node });
        }
        n_cpus += c as u64;
    }
    if n_cpus > CPUS_MAX as u64 {
        return Err(SchedError::TooManyCpus { n_cpus });
    }
    if input.smt == 0 {
        return Err(SchedError::ZeroSmt);
    }
    if input.llcs_per_node == 0 {
        return Err(SchedError::ZeroLlcsPerNode);
    }
    for (node, &cpus) in input.cpus_per_node.iter().enumerate() {
        if !cpus.is_multiple_of(input.smt) {
            return Err(SchedError::SmtNotDivisor {
                node,
                cpus,
                smt: input.smt,
            });
        }
        if !cpus.is_multiple_of(input.llcs_per_node) {
            return Err(SchedError::LlcsNotDivisor {
                node,
                cpus,
                llcs_per_node: input.llcs_per_node,
            });
        }
        let llc_cpus = cpus / input.llcs_per_node;
        if !llc_cpus.is_multiple_of(input.smt) {
            return Err(SchedError::LlcNotMultipleOfSmt {
                node,
                llc_cpus,
                smt: input.smt,
            });
        }
    }
    let n_cpus = n_cpus as usize;
    if input.nr_running.len() != n_cpus {
        return Err(SchedError::NrRunningLength {
            n_cpus,
            got: input.nr_running.len(),
        });
    }
    for (cpu, &nr_running) in input.nr_running.iter().enumerate() {
        if nr_running > NR_RUNNING_MAX {
            return Err(SchedError::NrRunningTooLarge { cpu, nr_running });
        }
    }
    let [a, b] = input.pair_cpus;
    for cpu in [a, b] {
        if cpu as usize >= n_cpus {
            return Err(SchedError::PairCpuOutOfRange { cpu, n_cpus });
        }
    }
    if a == b {
        return Err(SchedError::PairNotDistinct { cpu: a });
    }
    let node_of = |cpu: u32| -> u32 {
        let mut first = 0u32;
        for (node, &c) in input.cpus_per_node.iter().enumerate() {
            if cpu < first + c {
                return node as u32;
            }
            first += c;
        }
        // Unreachable: the CPU was checked to be in range.
        (n_nodes - 1) as u32
    };
    let nodes = [node_of(a), node_of(b)];
    if nodes[0] != nodes[1] {
        return Err(SchedError::PairOnDifferentNodes { cpus: [a, b], nodes });
    }
    for cpu in [a, b] {
        if input.nr_running[cpu as usize] == 0 {
            return Err(SchedError::PairCpuNotRunning { cpu });
        }
    }
    Ok(n_nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED_MATRIX: [[u32; 4]; 4] = [[10, 12, 35, 37], [12, 10, 37, 40], [35, 37, 10, 12], [37, 40, 12, 10]];

    fn seed_input(cpus: u32, pair: [u32; 2], noise: u32) -> SchedInput {
        let mut nr_running = vec![0; 4 * cpus as usize];
        nr_running[pair[0] as usize] = 1;
        nr_running[pair[1] as usize] = 1;
        for i in 0..noise {
            nr_running[(pair[1] + 1 + i) as usize] = 1;
        }
        SchedInput {
            node_distance: SEED_MATRIX.iter().map(|r| r.to_vec()).collect(),
            cpus_per_node: vec![cpus; 4],
            smt: 1,
            llcs_per_node: 1,
            node_reclaim_distance: DEFAULT_NODE_RECLAIM_DISTANCE,
            nr_running,
            pair_cpus: pair,
        }
    }

    /// (level, distance, groups as (nodes, origin level)) of a kept domain.
    type KeptDomain = (u32, u32, Vec<(Vec<u32>, u32)>);

    fn kept(t: &Topology, node: usize) -> Vec<KeptDomain> {
        t.nodes[node]
            .numa_domains
            .iter()
            .filter(|d| !d.degenerate)
            .map(|d| {
                (
                    d.level,
                    d.distance,
                    d.groups.iter().map(|g| (g.nodes.clone(), g.origin_level)).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn seed_group_table_node0_and_node1() {
        let t = build_topology(&seed_input(32, [0, 1], 0)).unwrap();
        assert_eq!(t.distances, vec![10, 12, 35, 37, 40]);
        assert_eq!(
            kept(&t, 0),
            vec![
                (1, 12, vec![(vec![0], 0), (vec![1], 0)]),
                (2, 35, vec![(vec![0, 1], 1), (vec![2], 0)]),
                (3, 37, vec![(vec![0, 1, 2], 2), (vec![2, 3], 2)]),
            ]
        );
        assert_eq!(
            kept(&t, 1),
            vec![
                (1, 12, vec![(vec![1], 0), (vec![0], 0)]),
                (3, 37, vec![(vec![0, 1], 2), (vec![2], 0)]),
                (4, 40, vec![(vec![0, 1, 2], 3), (vec![0, 2, 3], 3)]),
            ]
        );
        // Node 1's NUMA-2 is built, then removed as degenerate.
        let d2 = &t.nodes[1].numa_domains[1];
        assert!(d2.degenerate && d2.level == 2);
        // Unequal weights where the table says so.
        let unequal: Vec<bool> = t.nodes[0].numa_domains.iter().map(|d| d.unequal_weights).collect();
        assert_eq!(unequal, vec![false, true, true]);
        assert!(t.nodes[0].numa_domains[1].groups[1].prefer_sibling);
        assert!(!t.nodes[0].numa_domains[1].groups[0].prefer_sibling);
    }

    #[test]
    fn imb_numa_nr_values() {
        for (cpus, low, high) in [(32, 4, 8), (24, 3, 6), (4, 1, 2)] {
            let t = build_topology(&seed_input(cpus, [0, 1], 0)).unwrap();
            let n0: Vec<u32> = t.nodes[0].numa_domains.iter().map(|d| d.imb_numa_nr).collect();
            assert_eq!(n0, vec![low, low, high], "cpus/node {cpus}");
            let n1: Vec<u32> = t.nodes[1].numa_domains.iter().map(|d| d.imb_numa_nr).collect();
            assert_eq!(n1, vec![low, low, low, high], "cpus/node {cpus}");
        }
    }

    #[test]
    fn seed_pair_node1_verdicts() {
        // (noise, upstream, p12, p123) periodic splits, spec B.10.
        for (noise, expect) in [
            (0, [true, false, false]),
            (1, [true, true, false]),
            (2, [true, true, false]),
        ] {
            let out = run(&seed_input(32, [32, 33], noise)).unwrap();
            let got: Vec<bool> = out.summary.iter().map(|s| s.periodic_split).collect();
            assert_eq!(got, expect, "noise {noise}");
        }
    }

    #[test]
    fn seed_pair_node0_prefer_sibling_path() {
        let out = run(&seed_input(32, [0, 1], 0)).unwrap();
        let got: Vec<bool> = out.summary.iter().map(|s| s.periodic_split).collect();
        assert_eq!(got, vec![true, true, false]);
        // Node 2 pulls through the descended single-node group {0} at NUMA-2.
        let lvl = &out.variants[0].periodic[2].levels[1];
        assert_eq!(lvl.result.path, LbPath::Sibling);
        assert_eq!(lvl.result.imbalance_raw, 3);
    }

    #[test]
    fn ring_and_line_groups() {
        let ring = SchedInput {
            node_distance: vec![
                vec![10, 20, 30, 20],
                vec![20, 10, 20, 30],
                vec![30, 20, 10, 20],
                vec![20, 30, 20, 10],
            ],
            cpus_per_node: vec![8; 4],
            smt: 1,
            llcs_per_node: 1,
            node_reclaim_distance: 30,
            nr_running: {
                let mut v = vec![0; 32];
                v[0] = 1;
                v[1] = 1;
                v
            },
            pair_cpus: [0, 1],
        };
        let t = build_topology(&ring).unwrap();
        assert_eq!(kept(&t, 0)[1].2, vec![(vec![0, 1, 3], 1), (vec![1, 2, 3], 1)]);
        let mut line = ring.clone();
        line.node_distance = vec![
            vec![10, 20, 30, 40],
            vec![20, 10, 20, 30],
            vec![30, 20, 10, 20],
            vec![40, 30, 20, 10],
        ];
        let t = build_topology(&line).unwrap();
        assert_eq!(kept(&t, 0)[1].2, vec![(vec![0, 1], 1), (vec![2], 0)]);
    }

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
    fn validation_errors() {
        let good = seed_input(4, [0, 1], 0);
        assert!(run(&good).is_ok());

        let mut x = good.clone();
        x.node_distance[0][1] = 13;
        assert!(matches!(run(&x), Err(SchedError::Asymmetric { .. })));
        let mut x = good.clone();
        x.node_distance[2][2] = 11;
        assert!(matches!(run(&x), Err(SchedError::DiagonalNot10 { node: 2, .. })));
        let mut x = good.clone();
        x.node_distance[0][1] = 255;
        x.node_distance[1][0] = 255;
        assert!(matches!(run(&x), Err(SchedError::DistanceOutOfRange { .. })));
        let mut x = good.clone();
        x.node_distance[3].pop();
        assert!(matches!(run(&x), Err(SchedError::DistanceNotSquare { row: 3, .. })));
        let mut x = good.clone();
        x.node_distance = vec![vec![10]];
        assert!(matches!(run(&x), Err(SchedError::TooFewNodes { .. })));
        let mut x = good.clone();
        x.smt = 3;
        assert!(matches!(run(&x), Err(SchedError::SmtNotDivisor { .. })));
        let mut x = good.clone();
        x.llcs_per_node = 3;
        assert!(matches!(run(&x), Err(SchedError::LlcsNotDivisor { .. })));
        let mut x = good.clone();
        x.smt = 4;
        x.llcs_per_node = 2;
        assert!(matches!(run(&x), Err(SchedError::LlcNotMultipleOfSmt { .. })));
        let mut x = good.clone();
        x.pair_cpus = [0, 4];
        x.nr_running[4] = 1;
        assert!(matches!(run(&x), Err(SchedError::PairOnDifferentNodes { .. })));
        let mut x = good.clone();
        x.pair_cpus = [0, 2];
        assert!(matches!(run(&x), Err(SchedError::PairCpuNotRunning { cpu: 2 })));
        let mut x = good.clone();
        x.pair_cpus = [1, 1];
        assert!(matches!(run(&x), Err(SchedError::PairNotDistinct { .. })));
        let mut x = good.clone();
        x.pair_cpus = [0, 99];
        assert!(matches!(run(&x), Err(SchedError::PairCpuOutOfRange { .. })));
        let mut x = good.clone();
        x.nr_running.pop();
        assert!(matches!(run(&x), Err(SchedError::NrRunningLength { .. })));
        let mut x = good.clone();
        x.cpus_per_node = vec![4, 4, 4];
        assert!(matches!(run(&x), Err(SchedError::CpusPerNodeLength { .. })));
        let mut x = good.clone();
        x.cpus_per_node = vec![4096, 4096, 4, 4];
        assert!(matches!(run(&x), Err(SchedError::TooManyCpus { .. })));
        let mut x = good.clone();
        x.node_distance = vec![vec![20; 65]; 65];
        assert!(matches!(run(&x), Err(SchedError::TooManyNodes { .. })));
        assert!(!SchedError::ZeroSmt.to_string().is_empty());
    }

    #[test]
    fn interpretation_notes_present() {
        assert!(INTERPRETATION_NOTES.iter().any(|n| n.contains("p123")));
    }
}
