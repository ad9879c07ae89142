//! The sched scenario: a communicating task pair on one node of a machine, judged by the
//! scheduler's NUMA imbalance decision in every variant (seed 003). [`SchedSpec`] is its
//! input as data, the payload of the `/n/{permalink}` links; [`SchedSpec::resolve`] validates
//! it once into a [`SchedScenario`] (the machine and the model input), and
//! [`SchedScenario::run`] runs `kernel::sched` on it. The CLI (`irqscope sched`) and the
//! `/sched` page both go through here.

use super::mana::{resolve_topology, topology_label};
use super::spec::{shell_word, TopologyRef};
use super::ScenarioError;
use crate::kernel::sched::{self, SchedInput, SchedOutcome, DEFAULT_NODE_RECLAIM_DISTANCE};
use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The preset the sched page opens with (seed 003's machine) and its pair node.
pub(crate) const SCHED_DEFAULT_PRESET: &str = "arm64-4node-diameter3";
pub(crate) const SCHED_DEFAULT_PAIR_NODE: u32 = 1;

fn sched_error(m: impl std::fmt::Display) -> ScenarioError {
    ScenarioError(format!("sched: {m}"))
}

/// The sched scenario as data (what `/n/{permalink}` carries). Its serialized form is frozen:
/// old links must decode to the same spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedSpec {
    pub topology: TopologyRef,
    /// Node running the communicating pair (on its two lowest CPUs).
    #[serde(default = "pair_node_default")]
    pub pair_node: u32,
    /// Extra runnable tasks on otherwise idle CPUs of the pair's node.
    #[serde(default)]
    pub noise: u32,
    #[serde(default = "reclaim_default")]
    pub node_reclaim_distance: u32,
    /// Last-level caches per node, which set `imb_numa_nr` (spec B.5); absent: 1, the model's
    /// assumption for every machine before it could be given (omitted when unset, so older
    /// links decode and encode unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llcs_per_node: Option<u32>,
}

fn pair_node_default() -> u32 {
    SCHED_DEFAULT_PAIR_NODE
}
fn reclaim_default() -> u32 {
    DEFAULT_NODE_RECLAIM_DISTANCE
}

impl SchedSpec {
    /// Seed 003: the pair on node 1 of the diameter-3 machine, no noise.
    pub fn seed() -> SchedSpec {
        SchedSpec {
            topology: TopologyRef::Preset(SCHED_DEFAULT_PRESET.into()),
            pair_node: SCHED_DEFAULT_PAIR_NODE,
            noise: 0,
            node_reclaim_distance: reclaim_default(),
            llcs_per_node: None,
        }
    }

    /// Validates the spec once: the machine, its shape as the model needs it (every CPU id
    /// present, CPUs numbered node by node), the pair node and the noise it must hold, then the
    /// model input itself (`kernel::sched::validate`, spec B.1).
    pub(crate) fn resolve(
        &self,
        preset: impl Fn(&str) -> Option<Arc<Topology>>,
    ) -> Result<SchedScenario, ScenarioError> {
        let topology = resolve_topology(&self.topology, preset)?;
        let (input, cpus) = sched_input(&topology, self).map_err(sched_error)?;
        sched::validate(&input).map_err(sched_error)?;
        Ok(SchedScenario {
            spec: self.clone(),
            topology,
            input,
            cpus,
        })
    }

    /// The `irqscope sched …` line that reproduces this spec.
    pub(crate) fn command_line(&self) -> String {
        let mut line = format!(
            "irqscope sched {} --pair-node {} --noise {} --node-reclaim-distance {}",
            shell_word(&topology_label(&self.topology)),
            self.pair_node,
            self.noise,
            self.node_reclaim_distance
        );
        if let Some(n) = self.llcs_per_node {
            line.push_str(&format!(" --llcs-per-node {n}"));
        }
        line
    }
}

/// What the sched model assumes of a machine beyond its nodes, distances and SMT width, and
/// how its CPUs were numbered for it: one sentence for the reports.
pub(crate) fn assumptions_line(spec: &SchedSpec, input: &SchedInput, cpus: &[u32]) -> String {
    let llcs = input.llcs_per_node;
    let mut line = format!(
        "assumed: {llcs} LLC{} per node{} (sets imb_numa_nr; --llcs-per-node)",
        if llcs == 1 { "" } else { "s" },
        if spec.llcs_per_node.is_none() {
            ", not stated"
        } else {
            ""
        }
    );
    if cpus.iter().enumerate().any(|(i, &c)| i as u32 != c) {
        line.push_str(&format!(
            "; CPUs renumbered node by node for the model, pair on machine CPUs {} and {}",
            cpus[input.pair_cpus[0] as usize], cpus[input.pair_cpus[1] as usize]
        ));
    }
    line
}

/// The model's input for a machine, and the machine CPU behind each model CPU. The model
/// numbers CPUs node by node (node 0 owns `0..C0-1`, node 1 the next `C1`, spec B.1); a
/// machine numbered otherwise (x86 bare metal: a node's second SMT threads after every other
/// node's first ones; sparse ids) is renumbered in that order, which keeps every CPU's node and
/// count, all the model reads. The pair runs on the two lowest CPUs of `pair_node`, each noise
/// task on the next idle CPU of that node.
fn sched_input(t: &Topology, spec: &SchedSpec) -> Result<(SchedInput, Vec<u32>), String> {
    let nn = t.nr_node_ids();
    if spec.pair_node >= nn {
        return Err(format!("pair node {}: the machine has {nn} node(s)", spec.pair_node));
    }
    // cpus[model id] = machine id, node by node.
    let cpus: Vec<u32> = (0..nn).flat_map(|node| t.node_cpus(node).iter()).collect();
    let first_of_node: Vec<u32> = (0..nn)
        .scan(0u32, |next, node| {
            let first = *next;
            *next += t.node_cpus(node).weight();
            Some(first)
        })
        .collect();
    let node_cpus = t.node_cpus(spec.pair_node).weight();
    if u64::from(node_cpus) < 2 + u64::from(spec.noise) {
        return Err(format!(
            "node {} has {} CPUs: too few for the pair and {} noise tasks",
            spec.pair_node, node_cpus, spec.noise
        ));
    }
    let first = first_of_node[spec.pair_node as usize];
    let mut nr_running = vec![0u32; cpus.len()];
    for cpu in first..first + 2 + spec.noise {
        nr_running[cpu as usize] = 1;
    }
    let input = SchedInput {
        node_distance: (0..nn).map(|a| (0..nn).map(|b| t.distance(a, b)).collect()).collect(),
        cpus_per_node: (0..nn).map(|n| t.node_cpus(n).weight()).collect(),
        smt: t.threads_per_core_max(),
        llcs_per_node: spec.llcs_per_node.unwrap_or(1),
        node_reclaim_distance: spec.node_reclaim_distance,
        nr_running,
        pair_cpus: [first, first + 1],
    };
    Ok((input, cpus))
}

/// A validated sched spec: the machine and the model input built from it.
#[derive(Debug, Clone)]
pub(crate) struct SchedScenario {
    pub(crate) spec: SchedSpec,
    pub(crate) topology: Arc<Topology>,
    pub(crate) input: SchedInput,
    /// The machine CPU behind each model CPU (the identity on machines numbered node by node).
    pub(crate) cpus: Vec<u32>,
}

impl SchedScenario {
    /// Every variant on this scenario ([`SchedSpec::resolve`] validated the input already).
    pub(crate) fn run(&self) -> Result<SchedRun, ScenarioError> {
        let mut run = run_input(self.input.clone()).map_err(|e| sched_error(e.0))?;
        run.assumptions = Some(assumptions_line(&self.spec, &self.input, &self.cpus));
        Ok(run)
    }
}

/// A sched input run once: the built topology, every variant and the summary.
#[derive(Debug, Clone)]
pub struct SchedRun {
    pub(crate) input: SchedInput,
    pub outcome: SchedOutcome,
    /// What the model assumed of the machine ([`assumptions_line`]); `None` for an input given
    /// as such.
    pub(crate) assumptions: Option<String>,
}

/// Every variant on a model input given as such (the golden-vector form of
/// `irqscope sched --input`).
pub fn run_input(input: SchedInput) -> Result<SchedRun, ScenarioError> {
    let outcome = sched::run(&input).map_err(|e| ScenarioError(e.to_string()))?;
    Ok(SchedRun {
        input,
        outcome,
        assumptions: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue;

    #[test]
    fn serialized_form_is_frozen() {
        assert_eq!(
            serde_json::to_string(&SchedSpec::seed()).unwrap(),
            r#"{"topology":"arm64-4node-diameter3","pair_node":1,"noise":0,"node_reclaim_distance":30}"#
        );
        let old: SchedSpec = serde_json::from_str(r#"{"topology":"arm64-4node-diameter3"}"#).unwrap();
        assert_eq!(old, SchedSpec::seed());
    }

    #[test]
    fn resolve_places_the_pair_and_noise() {
        let spec = SchedSpec {
            noise: 2,
            ..SchedSpec::seed()
        };
        let s = spec.resolve(catalogue::get).unwrap();
        let first = s.topology.node_cpus(1).first().unwrap();
        assert_eq!(s.input.pair_cpus, [first, first + 1]);
        let running: Vec<u32> = (0..s.input.nr_running.len() as u32)
            .filter(|&c| s.input.nr_running[c as usize] == 1)
            .collect();
        assert_eq!(running, (first..first + 4).collect::<Vec<_>>());
        assert_eq!(s.input.node_reclaim_distance, 30);
        assert_eq!(s.run().unwrap().outcome.variants.len(), 3);
    }

    #[test]
    fn resolve_refuses_what_the_model_cannot_take() {
        let err = |spec: SchedSpec| spec.resolve(catalogue::get).unwrap_err().0;
        let on = |preset: &str| SchedSpec {
            topology: TopologyRef::Preset(preset.into()),
            ..SchedSpec::seed()
        };
        assert_eq!(
            err(SchedSpec {
                pair_node: 9,
                ..SchedSpec::seed()
            }),
            "sched: pair node 9: the machine has 4 node(s)"
        );
        assert!(err(SchedSpec {
            noise: 1000,
            ..SchedSpec::seed()
        })
        .contains("too few for the pair and 1000 noise tasks"));
        // x86 numbering (a node's second threads after the other node's first ones) and sparse
        // ids are renumbered node by node, not refused.
        let x86 = SchedSpec {
            pair_node: 0,
            ..on("xeon-2s-18c-smt2")
        }
        .resolve(catalogue::get)
        .unwrap();
        assert_eq!(x86.input.cpus_per_node, [36, 36]);
        assert_eq!(x86.input.pair_cpus, [0, 1]);
        assert_eq!((x86.cpus[17], x86.cpus[18], x86.cpus[36]), (17, 36, 18));
        let line = assumptions_line(&x86.spec, &x86.input, &x86.cpus);
        assert_eq!(
            line,
            "assumed: 1 LLC per node, not stated (sets imb_numa_nr; --llcs-per-node); CPUs renumbered node by node for the model, pair on machine CPUs 0 and 1"
        );
        let seed = SchedSpec::seed().resolve(catalogue::get).unwrap();
        assert_eq!(
            assumptions_line(&seed.spec, &seed.input, &seed.cpus),
            "assumed: 1 LLC per node, not stated (sets imb_numa_nr; --llcs-per-node)"
        );
        let node1 = SchedSpec {
            pair_node: 1,
            llcs_per_node: Some(2),
            ..on("xeon-2s-18c-smt2")
        }
        .resolve(catalogue::get)
        .unwrap();
        assert_eq!(node1.input.pair_cpus, [36, 37]);
        assert_eq!(
            assumptions_line(&node1.spec, &node1.input, &node1.cpus),
            "assumed: 2 LLCs per node (sets imb_numa_nr; --llcs-per-node); CPUs renumbered node by node for the model, pair on machine CPUs 18 and 19"
        );
        assert!(on("synthetic-sparse-ids").resolve(catalogue::get).is_ok());
        // Validated by the model itself (spec B.1), still at resolve time.
        assert_eq!(
            err(SchedSpec {
                pair_node: 0,
                ..on("azure-4vcpu-smt2")
            }),
            "sched: 1 node(s) given, at least 2 are needed"
        );
    }

    #[test]
    fn command_line_reproduces_the_spec() {
        assert_eq!(
            SchedSpec::seed().command_line(),
            "irqscope sched arm64-4node-diameter3 --pair-node 1 --noise 0 --node-reclaim-distance 30"
        );
    }
}
