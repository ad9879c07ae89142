//! The `kernel/sched/topology.c` side of the sched model: NUMA distance levels
//! (`sched_init_numa()`), each node's chain of NUMA domains (`build_sched_domains()`), their
//! overlapping groups (`build_overlap_sched_groups()`, `find_descended_sibling()`), degeneration
//! (`cpu_attach_domain()`) and `imb_numa_nr`. Spec B.2-B.5.

use super::{validate, SchedError, SchedInput, SCHED_NODES_MAX};

// ---------------------------------------------------------------------------
// Output types

/// One sched group of a NUMA domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedGroupInfo {
    pub nodes: Vec<u32>,
    /// CPUs in the group.
    pub(crate) weight: u32,
    pub(crate) cores: u32,
    /// Level of the domain whose span the group copies (0 = NODE).
    pub(crate) origin_level: u32,
    /// `SD_PREFER_SIBLING` of that domain: true iff `origin_level == 0`.
    pub(crate) prefer_sibling: bool,
}

/// One NUMA level of a node's domain chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaDomainInfo {
    pub(crate) level: u32,
    pub(crate) distance: u32,
    pub span_nodes: Vec<u32>,
    pub(crate) span_weight: u32,
    /// Removed by `cpu_attach_domain()` because its span equals its child's.
    pub(crate) degenerate: bool,
    pub(crate) imb_numa_nr: u32,
    /// `SD_BALANCE_FORK` (distance within `node_reclaim_distance`).
    pub(crate) balance_fork: bool,
    /// Groups of different weights.
    pub(crate) unequal_weights: bool,
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
pub struct SchedTopology {
    /// Sorted distinct distances; `distances[0] == 10`.
    pub(crate) distances: Vec<u32>,
    pub nodes: Vec<NodeTopology>,
}

// ---------------------------------------------------------------------------
// The built domains

/// A set of nodes as a bit mask (at most [`SCHED_NODES_MAX`] nodes).
pub(super) type NodeSet = u64;

pub(super) fn node_bit(node: usize) -> NodeSet {
    1u64 << node
}

fn is_subset(a: NodeSet, b: NodeSet) -> bool {
    a & !b == 0
}

pub(super) fn set_nodes(set: NodeSet) -> Vec<u32> {
    (0..SCHED_NODES_MAX).filter(|&n| set & (1u64 << n) != 0).collect()
}

/// One built NUMA domain with its node sets kept for evaluation.
pub(super) struct Domain {
    pub(super) level: usize,
    pub(super) span: NodeSet,
    pub(super) degenerate: bool,
    pub(super) imb_numa_nr: u32,
    pub(super) balance_fork: bool,
    pub(super) span_weight: u32,
    /// (group span, origin level), local group first.
    pub(super) groups: Vec<(NodeSet, usize)>,
}

/// `sched_domains_numa_distance` and `sched_domains_numa_masks` as `sched_init_numa()` leaves
/// them (spec B.2).
struct NumaLevels {
    /// Sorted distinct distances; `distances[0] == 10` (the NODE level).
    distances: Vec<u32>,
    /// `masks[l][n]`: the nodes within `distances[l]` of node n.
    masks: Vec<Vec<NodeSet>>,
}

/// `sched_init_numa()`: the distinct distances of the table, and per level and node the nodes
/// within that distance.
fn sched_init_numa(dist: &[Vec<u32>]) -> NumaLevels {
    let n_nodes = dist.len();
    let mut distances: Vec<u32> = dist.iter().flatten().copied().collect();
    distances.sort_unstable();
    distances.dedup();
    let masks = distances
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
    NumaLevels { distances, masks }
}

/// A validated input with every node's NUMA domains built: what `build_sched_domains()` leaves
/// attached to each CPU, as far as the model needs it. `fair` balances on it.
pub(super) struct SchedDomains<'a> {
    pub(super) input: &'a SchedInput,
    pub(super) n_nodes: usize,
    pub(super) distances: Vec<u32>,
    node_first_cpu: Vec<u32>,
    pub(super) cpu_node: Vec<u32>,
    /// `domains[n]`: node n's NUMA levels 1..=top, bottom-up.
    pub(super) domains: Vec<Vec<Domain>>,
    pub(super) topology: SchedTopology,
    pub(super) pair_node: u32,
}

impl<'a> SchedDomains<'a> {
    /// Validates `input` (spec B.1) and builds the domains.
    pub(super) fn build(input: &'a SchedInput) -> Result<SchedDomains<'a>, SchedError> {
        let n_nodes = validate(input)?;
        let mut node_first_cpu = Vec::with_capacity(n_nodes);
        let mut cpu_node = Vec::new();
        for (node, &count) in input.cpus_per_node.iter().enumerate() {
            node_first_cpu.push(cpu_node.len() as u32);
            cpu_node.extend(std::iter::repeat_n(node as u32, count as usize));
        }
        let NumaLevels { distances, masks } = sched_init_numa(&input.node_distance);
        let domains = build_sched_domains(input, &distances, &masks);
        let topology = report(input, &distances, &domains);
        let pair_node = cpu_node[input.pair_cpus[0] as usize];
        Ok(SchedDomains {
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

    pub(super) fn node_cpus(&self, node: usize) -> std::ops::Range<u32> {
        let first = self.node_first_cpu[node];
        first..first + self.input.cpus_per_node[node]
    }

    /// CPUs of a node set in ascending order.
    pub(super) fn set_cpus(&self, set: NodeSet) -> impl Iterator<Item = u32> + '_ {
        (0..self.n_nodes)
            .filter(move |&n| set & node_bit(n) != 0)
            .flat_map(move |n| self.node_cpus(n))
    }
}

/// CPUs in the nodes of `set`.
fn weight_of(input: &SchedInput, set: NodeSet) -> u32 {
    (0..input.cpus_per_node.len())
        .filter(|&m| set & node_bit(m) != 0)
        .map(|m| input.cpus_per_node[m])
        .sum()
}

/// The NUMA part of `build_sched_domains()` for every node: one domain per level from NUMA-1
/// up to the first level spanning all nodes (spec B.3), its groups (B.4), whether
/// `cpu_attach_domain()` later removes it as degenerate, `SD_BALANCE_FORK`, and the
/// `imb_numa_nr` of the "allowed NUMA imbalance" loop (B.5).
fn build_sched_domains(input: &SchedInput, distances: &[u32], masks: &[Vec<NodeSet>]) -> Vec<Vec<Domain>> {
    let n_nodes = input.node_distance.len();
    let n_levels = distances.len();
    let all: NodeSet = if n_nodes == 64 { u64::MAX } else { (1u64 << n_nodes) - 1 };
    // The chain of node n stops at the first level spanning all nodes
    // (B.3). The last level always spans everything.
    let top: Vec<usize> = (0..n_nodes)
        .map(|n| (0..n_levels).find(|&l| masks[l][n] == all).unwrap_or(n_levels - 1))
        .collect();
    let mut domains: Vec<Vec<Domain>> = Vec::with_capacity(n_nodes);
    for n in 0..n_nodes {
        // The value set on the first domain above the LLC (PKG).
        let base = if input.llcs_per_node == 1 {
            (input.cpus_per_node[n] >> 3).max(1)
        } else {
            input.llcs_per_node.max(1)
        };
        let imb_span = weight_of(input, masks[1][n]).max(1);
        let mut chain = Vec::new();
        for l in 1..=top[n] {
            let span = masks[l][n];
            let span_weight = weight_of(input, span);
            chain.push(Domain {
                level: l,
                span,
                // Its span equals its child's: cpu_attach_domain() drops it.
                degenerate: span == masks[l - 1][n],
                imb_numa_nr: base * (span_weight / imb_span).max(1),
                balance_fork: distances[l] <= input.node_reclaim_distance,
                span_weight,
                groups: build_overlap_sched_groups(n, l, span, masks, &top, n_nodes),
            });
        }
        domains.push(chain);
    }
    domains
}

/// The built domains in their reported form.
fn report(input: &SchedInput, distances: &[u32], domains: &[Vec<Domain>]) -> SchedTopology {
    let smt = input.smt;
    SchedTopology {
        distances: distances.to_vec(),
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
                                let weight = weight_of(input, set);
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
    }
}

/// `build_overlap_sched_groups()` for node n at NUMA level l with span S:
/// walk the nodes of S cyclically from n; each node not yet covered donates
/// the span of its child domain, or, where that child reaches outside S
/// (diameter ≥ 3), the span of the highest lower level that fits
/// ([`find_descended_sibling`]). Returns (group span, origin level).
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
        let origin = find_descended_sibling(m, l, span, masks);
        let group = masks[origin][m];
        debug_assert!(is_subset(group, span));
        groups.push((group, origin));
        covered |= group;
    }
    groups
}

/// `find_descended_sibling()`: node m's child domain at level `l - 1` if it fits in `span`,
/// else the highest lower level whose span does (never below NUMA-1's child, the NODE level).
/// Returns that level.
fn find_descended_sibling(m: usize, l: usize, span: NodeSet, masks: &[Vec<NodeSet>]) -> usize {
    let mut j = l;
    while j >= 2 && !is_subset(masks[j - 1][m], span) {
        j -= 1;
    }
    j - 1
}
