//! Model of the scheduler's NUMA sched domains and of its NUMA imbalance decision for a
//! communicating task pair, in variants upstream / p12 / p123 (seed 003). Pure.
//!
//! The model follows the two kernel files it mirrors, one module each (spec Part B,
//! `shared/spec/mana-and-sched-numa.md`):
//! - [`topology`] is the `kernel/sched/topology.c` side: the distance levels of
//!   `sched_init_numa()`, each node's domain chain as `build_sched_domains()` builds it, the
//!   overlapping groups of `build_overlap_sched_groups()` with `find_descended_sibling()`,
//!   degeneration (`cpu_attach_domain()`) and `imb_numa_nr`;
//! - [`fair`] is the `kernel/sched/fair.c` side: group statistics (`update_sg_lb_stats()`,
//!   `update_sg_wakeup_stats()`, `group_classify()`), the periodic balance of every idle node at
//!   every kept NUMA level (`sched_balance_find_src_group()`, `calculate_imbalance()`,
//!   `adjust_numa_imbalance()`, `sched_balance_find_src_rq()`), evaluated on one snapshot, and
//!   the wake/fork placement (`sched_balance_find_dst_group()` and the fork walk of
//!   `sched_balance_find_dst_cpu()`). Kernels before v6.10 call the last ones
//!   `find_busiest_group()`, `find_busiest_queue()`, `find_idlest_group()` and
//!   `find_idlest_cpu()`.
//!
//! What it refuses: PELT averages, balance intervals, `should_we_balance()`,
//! NUMA balancing and task identity. Each task is an always-runnable nice-0
//! task; spec B.11 lists the fixed choices. Everything is computed from the
//! input; no I/O, no clocks, no randomness.
//!
//! Entry points: [`run_variant`] and [`run`]; [`validate`] alone checks an
//! input. Input is validated once (spec B.1); invalid input gives a [`SchedError`].

pub(crate) mod fair;
pub(crate) mod topology;

pub use fair::{
    ForkPlacement, ForkStep, GroupLoad, GroupType, LbPath, LbResult, MigrationType, PeriodicLevel, PeriodicNode,
    VariantOutcome, WakeChoice, WakeLevel, WakePath,
};
pub(crate) use topology::{NodeTopology, NumaDomainInfo, SchedTopology};

use crate::topology::CPUS_MAX;
use std::fmt;
use topology::SchedDomains;

/// Largest node count the model accepts. Narrower than the machine limit
/// [`crate::topology::NODES_MAX`]: node sets are 64-bit masks, and the work of building every
/// node's chain and balancing at every level grows with the cube of the node count.
pub const SCHED_NODES_MAX: u32 = u64::BITS;
const _: () = assert!(SCHED_NODES_MAX <= crate::topology::NODES_MAX);
/// Largest `nr_running` per CPU the model accepts; keeps load sums far from
/// overflow.
pub(crate) const NR_RUNNING_MAX: u32 = 1 << 20;
/// Default `node_reclaim_distance` (`RECLAIM_DISTANCE`).
pub(crate) const DEFAULT_NODE_RECLAIM_DISTANCE: u32 = 30;

/// `SCHED_CAPACITY_SCALE`, also `NICE_0_LOAD` after `scale_load_down()`.
const SCHED_CAPACITY_SCALE: u64 = 1024;
/// `sd->imbalance_pct` of NUMA domains (`sd_init()`).
const NUMA_IMBALANCE_PCT: u64 = 117;
/// `NUMA_IMBALANCE_MIN`, the fixed floating allowance of `adjust_numa_imbalance()`.
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
    "Wake path with both groups fully busy or overloaded: the null imbalance is this model's own label (the path names are spec B.8's); no golden case exercises this branch.",
    "Periodic path: outcomes decided by a gate before an imbalance is computed report migration_type null.",
];

/// The imbalance-decision variant being modelled (spec B.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ImbalanceVariant {
    /// Mainline.
    Upstream,
    /// Patches 1+2: busy-CPU difference for unequal group weights.
    P12,
    /// Patches 1+2+3: plus the allowance cap.
    P123,
}

impl ImbalanceVariant {
    pub(crate) const ALL: [ImbalanceVariant; 3] = [
        ImbalanceVariant::Upstream,
        ImbalanceVariant::P12,
        ImbalanceVariant::P123,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ImbalanceVariant::Upstream => "upstream",
            ImbalanceVariant::P12 => "p12",
            ImbalanceVariant::P123 => "p123",
        }
    }

    pub(crate) fn busy_diff_for_unequal_weights(self) -> bool {
        self != ImbalanceVariant::Upstream
    }

    /// The allowance `adjust_numa_imbalance()` applies below the threshold.
    pub(crate) fn allowance(self, imb_numa_nr: u32) -> u32 {
        match self {
            ImbalanceVariant::Upstream | ImbalanceVariant::P12 => NUMA_IMBALANCE_MIN as u32,
            ImbalanceVariant::P123 => imb_numa_nr.clamp(NUMA_IMBALANCE_MIN as u32, P123_ALLOWANCE_MAX),
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
            TooManyNodes { n_nodes } => write!(f, "{n_nodes} nodes given, at most {SCHED_NODES_MAX} are supported"),
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

/// The one-line verdict per variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VariantSummary {
    pub(crate) variant: ImbalanceVariant,
    pub(crate) periodic_split: bool,
    pub(crate) fork_split: bool,
    pub(crate) fork_final_node: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedOutcome {
    pub topology: SchedTopology,
    /// In the order of [`ImbalanceVariant::ALL`].
    pub variants: Vec<VariantOutcome>,
    pub(crate) summary: Vec<VariantSummary>,
}

/// Builds the NUMA topology only.
#[cfg(test)]
pub(crate) fn build_topology(input: &SchedInput) -> Result<SchedTopology, SchedError> {
    Ok(SchedDomains::build(input)?.topology)
}

/// Runs one variant.
pub fn run_variant(input: &SchedInput, variant: ImbalanceVariant) -> Result<VariantOutcome, SchedError> {
    let model = SchedDomains::build(input)?;
    Ok(model.run_variant(variant))
}

/// Topology, all three variants and the summary.
pub fn run(input: &SchedInput) -> Result<SchedOutcome, SchedError> {
    let model = SchedDomains::build(input)?;
    let variants: Vec<VariantOutcome> = ImbalanceVariant::ALL.iter().map(|&v| model.run_variant(v)).collect();
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

/// Spec B.1 checks; returns the node count.
pub(crate) fn validate(input: &SchedInput) -> Result<usize, SchedError> {
    let n_nodes = check_node_distance(&input.node_distance)?;
    let n_cpus = check_cpus_per_node(input, n_nodes)?;
    check_nr_running(&input.nr_running, n_cpus)?;
    check_pair_cpus(input, n_cpus)?;
    Ok(n_nodes)
}

/// `node_distance`: 2 to [`SCHED_NODES_MAX`] nodes, square, 10 on the diagonal, 11..=254
/// elsewhere, symmetric. Returns the node count.
#[allow(clippy::needless_range_loop)] // [from][to] and [to][from] are both read
fn check_node_distance(dist: &[Vec<u32>]) -> Result<usize, SchedError> {
    let n_nodes = dist.len();
    if n_nodes < 2 {
        return Err(SchedError::TooFewNodes { n_nodes });
    }
    if n_nodes > SCHED_NODES_MAX as usize {
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
    Ok(n_nodes)
}

/// `cpus_per_node`, `smt` and `llcs_per_node`: one count a node, none empty, at most
/// [`CPUS_MAX`] in all, each node made of whole LLCs made of whole SMT cores. Returns the CPU
/// count.
fn check_cpus_per_node(input: &SchedInput, n_nodes: usize) -> Result<usize, SchedError> {
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
    if n_cpus > u64::from(CPUS_MAX) {
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
    Ok(n_cpus as usize)
}

/// `nr_running`: one count a CPU, none above [`NR_RUNNING_MAX`].
fn check_nr_running(nr_running: &[u32], n_cpus: usize) -> Result<(), SchedError> {
    if nr_running.len() != n_cpus {
        return Err(SchedError::NrRunningLength {
            n_cpus,
            got: nr_running.len(),
        });
    }
    for (cpu, &nr_running) in nr_running.iter().enumerate() {
        if nr_running > NR_RUNNING_MAX {
            return Err(SchedError::NrRunningTooLarge { cpu, nr_running });
        }
    }
    Ok(())
}

/// `pair_cpus`: two distinct CPUs in range, on one node, each running a task.
fn check_pair_cpus(input: &SchedInput, n_cpus: usize) -> Result<(), SchedError> {
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
        (input.cpus_per_node.len() - 1) as u32
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
    Ok(())
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

    fn kept(t: &SchedTopology, node: usize) -> Vec<KeptDomain> {
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
        x.node_distance = vec![vec![20; SCHED_NODES_MAX as usize + 1]; SCHED_NODES_MAX as usize + 1];
        assert!(matches!(run(&x), Err(SchedError::TooManyNodes { .. })));
        assert!(!SchedError::ZeroSmt.to_string().is_empty());
    }

    #[test]
    fn interpretation_notes_present() {
        assert!(INTERPRETATION_NOTES.iter().any(|n| n.contains("p123")));
    }
}
