//! The MANA scenario: one MANA NIC probing on a machine, run under both driver versions
//! (seed 001). [`ManaSpec`] is its input as data, the payload of the `/m/{permalink}` links;
//! [`ManaSpec::resolve`] validates it once into a [`ManaScenario`] (the machine and the model
//! input), and [`ManaScenario::run`] runs `kernel::mana` on it. The CLI (`irqscope mana`) and
//! the `/mana` page both go through here.

use super::spec::{parse_msix_mode, shell_word, TopologyRef};
use super::ScenarioError;
use crate::kernel::mana::{self, DriverVersion, ManaInput, ManaOutcome, MsixMode};
use crate::topology::{parse_cpulist, Topology};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The preset the MANA page opens with (seed 001's VM).
pub(crate) const MANA_DEFAULT_PRESET: &str = "azure-4vcpu-smt2";
/// Longest `load` or `irqaffinity` text accepted.
pub(crate) const LIST_TEXT_BYTES_MAX: usize = 65_536;

fn bad<T>(m: impl Into<String>) -> Result<T, ScenarioError> {
    Err(ScenarioError(m.into()))
}

/// The machine a spec names: a preset through `preset`, or an edited topology validated here
/// (the same resolution as [`super::spec::ScenarioSpec::resolve`]).
pub(crate) fn resolve_topology(
    t: &TopologyRef,
    preset: impl Fn(&str) -> Option<Arc<Topology>>,
) -> Result<Arc<Topology>, ScenarioError> {
    match t {
        TopologyRef::Preset(name) => {
            preset(name).ok_or_else(|| ScenarioError(format!("unknown topology preset {name:?}")))
        }
        TopologyRef::Inline(spec) => Ok(Arc::new(
            Topology::new(spec).map_err(|e| ScenarioError(format!("topology: {e}")))?,
        )),
    }
}

/// How a command line names the machine: the preset, or the compact word of an edited one.
pub(crate) fn topology_label(t: &TopologyRef) -> String {
    match t {
        TopologyRef::Preset(name) => name.clone(),
        TopologyRef::Inline(spec) => crate::topology::compact::label(spec),
    }
}

/// `0,1,1,1` as numbers; `what` names the field in the error.
pub fn parse_count_list(text: &str, what: &str) -> Result<Vec<u32>, ScenarioError> {
    if text.len() > LIST_TEXT_BYTES_MAX {
        return bad(format!("{what}: longer than {LIST_TEXT_BYTES_MAX} bytes"));
    }
    super::request::split_numbers(text, ',', |v| {
        format!("{what}: {v:?} is not a number (want e.g. 0,1,1,1)")
    })
}

fn list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// The MANA scenario as data (what `/m/{permalink}` carries). Its serialized form is frozen:
/// old links must decode to the same spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManaSpec {
    pub topology: TopologyRef,
    /// NUMA node of the device; -1 for none.
    #[serde(default)]
    pub device_node: i32,
    /// `dynamic` or `static` MSI-X.
    #[serde(default = "dynamic")]
    pub mode: String,
    #[serde(default = "max_msix_default")]
    pub max_msix: u32,
    /// Vectors other devices hold on each CPU before MANA probes (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<Vec<u32>>,
    /// The `irqaffinity=` boot option as a cpulist (absent: all CPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irqaffinity: Option<String>,
}

fn dynamic() -> String {
    "dynamic".into()
}
fn max_msix_default() -> u32 {
    64
}

impl ManaSpec {
    /// Seed 001: the 4-vCPU VM with one vector already on CPUs 1-3.
    pub fn seed() -> ManaSpec {
        ManaSpec {
            topology: TopologyRef::Preset(MANA_DEFAULT_PRESET.into()),
            device_node: 0,
            mode: dynamic(),
            max_msix: max_msix_default(),
            load: Some(vec![0, 1, 1, 1]),
            irqaffinity: None,
        }
    }

    /// Validates the spec once: the machine, the MSI-X mode, the `irqaffinity=` list; the
    /// result holds the model input. The model checks the rest of its input when it runs
    /// (load length, vector counts) and names the field.
    pub(crate) fn resolve(
        &self,
        preset: impl Fn(&str) -> Option<Arc<Topology>>,
    ) -> Result<ManaScenario, ScenarioError> {
        let topology = resolve_topology(&self.topology, preset)?;
        let n = topology.nr_cpu_ids();
        let mode = parse_msix_mode(&self.mode)?;
        let load = self.load.clone().unwrap_or_else(|| vec![0; n as usize]);
        let mut input = mana_input(&topology, None, mode, self.max_msix, load);
        input.device_node = self.device_node;
        if let Some(text) = &self.irqaffinity {
            if text.len() > LIST_TEXT_BYTES_MAX {
                return bad(format!("irqaffinity: longer than {LIST_TEXT_BYTES_MAX} bytes"));
            }
            let set = parse_cpulist(text, n).map_err(|e| ScenarioError(format!("irqaffinity {text:?}: {e}")))?;
            input.default_affinity = Some(set.iter().collect());
        }
        Ok(ManaScenario {
            spec: self.clone(),
            topology,
            input,
        })
    }

    /// The `irqscope mana …` line that reproduces this spec.
    pub(crate) fn command_line(&self) -> String {
        let mut w = vec![
            "irqscope".to_string(),
            "mana".into(),
            shell_word(&topology_label(&self.topology)),
        ];
        w.push(format!("--device-node {}", self.device_node));
        w.push(format!("--mode {}", self.mode));
        w.push(format!("--max-msix {}", self.max_msix));
        if let Some(l) = &self.load {
            w.push(format!("--load {}", list(l)));
        }
        if let Some(a) = &self.irqaffinity {
            w.push(format!("--irqaffinity {}", shell_word(a)));
        }
        w.join(" ")
    }
}

/// A validated MANA spec: the machine and the model input built from it.
#[derive(Debug, Clone)]
pub(crate) struct ManaScenario {
    pub(crate) spec: ManaSpec,
    pub(crate) topology: Arc<Topology>,
    pub(crate) input: ManaInput,
}

impl ManaScenario {
    /// Both driver versions on this scenario; a model error is prefixed `MANA: `.
    pub(crate) fn run(&self) -> Result<ManaRun, ScenarioError> {
        run_input(self.input.clone()).map_err(|e| ScenarioError(format!("MANA: {}", e.0)))
    }
}

/// A MANA input run once under both driver versions.
#[derive(Debug, Clone)]
pub struct ManaRun {
    pub input: ManaInput,
    pub unpatched: ManaOutcome,
    pub patched: ManaOutcome,
}

impl ManaRun {
    pub(crate) fn outcome(&self, v: DriverVersion) -> &ManaOutcome {
        match v {
            DriverVersion::Unpatched => &self.unpatched,
            DriverVersion::Patched => &self.patched,
        }
    }
}

/// Both driver versions on a model input given as such (the golden-vector form of
/// `irqscope mana --input`).
pub fn run_input(input: ManaInput) -> Result<ManaRun, ScenarioError> {
    let (unpatched, patched) = mana::run_both(&input).map_err(|e| ScenarioError(e.to_string()))?;
    Ok(ManaRun {
        input,
        unpatched,
        patched,
    })
}

/// The [`ManaInput`] for a MANA device probed now: the machine as the model sees it, and as
/// `initial_vector_load` the vectors the devices probed before it hold on each CPU (from the
/// vector matrix). CPU ids that are not possible appear as offline CPUs on node 0.
pub fn mana_input(
    topo: &Topology,
    device_node: Option<u32>,
    mode: MsixMode,
    max_msix: u32,
    initial_vector_load: Vec<u32>,
) -> ManaInput {
    let n = topo.nr_cpu_ids();
    let nn = topo.nr_node_ids();
    ManaInput {
        cpu_node: (0..n).map(|c| topo.cpu_to_node(c)).collect(),
        // A core is named by its lowest thread; a CPU without a sibling set is its own core.
        cpu_core: (0..n).map(|c| topo.smt(c).first().unwrap_or(c)).collect(),
        node_distance: (0..nn)
            .map(|a| (0..nn).map(|b| topo.distance(a, b)).collect())
            .collect(),
        device_node: device_node.map_or(-1, |d| d as i32),
        mode,
        max_msix,
        initial_vector_load,
        online: (0..n).map(|c| topo.online().contains(c)).collect(),
        default_affinity: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue;

    #[test]
    fn serialized_form_is_frozen() {
        // Field order and the omitted `load`/`irqaffinity` are what old /m/ links carry.
        let spec = ManaSpec {
            load: None,
            irqaffinity: Some("0-1".into()),
            ..ManaSpec::seed()
        };
        assert_eq!(
            serde_json::to_string(&spec).unwrap(),
            r#"{"topology":"azure-4vcpu-smt2","device_node":0,"mode":"dynamic","max_msix":64,"irqaffinity":"0-1"}"#
        );
        let old: ManaSpec = serde_json::from_str(r#"{"topology":"azure-4vcpu-smt2"}"#).unwrap();
        assert_eq!(
            old,
            ManaSpec {
                load: None,
                ..ManaSpec::seed()
            }
        );
    }

    #[test]
    fn resolve_builds_the_input_and_names_bad_fields() {
        let s = ManaSpec::seed().resolve(catalogue::get).unwrap();
        assert_eq!(s.input.initial_vector_load, vec![0, 1, 1, 1]);
        assert_eq!(s.input.device_node, 0);
        assert_eq!(s.input.default_affinity, None);
        let run = s.run().unwrap();
        assert_eq!(run.outcome(DriverVersion::Patched).version, DriverVersion::Patched);

        let with = |f: &dyn Fn(&mut ManaSpec)| {
            let mut spec = ManaSpec::seed();
            f(&mut spec);
            spec.resolve(catalogue::get).and_then(|s| s.run()).unwrap_err().0
        };
        assert!(with(&|s| s.mode = "weird".into()).contains("dynamic or static"));
        assert!(with(&|s| s.irqaffinity = Some("9".into())).starts_with("irqaffinity \"9\""));
        assert!(with(&|s| s.irqaffinity = Some("0,".repeat(LIST_TEXT_BYTES_MAX))).contains("longer than"));
        assert!(with(&|s| s.topology = TopologyRef::Preset("nope".into())).contains("unknown topology preset"));
        assert!(with(&|s| s.load = Some(vec![0, 1])).starts_with("MANA: "));
    }

    #[test]
    fn count_lists() {
        assert_eq!(parse_count_list("0, 1,2", "load").unwrap(), vec![0, 1, 2]);
        assert!(parse_count_list("0,x", "load")
            .unwrap_err()
            .0
            .contains("\"x\" is not a number"));
        assert!(parse_count_list(&"1".repeat(LIST_TEXT_BYTES_MAX + 1), "load").is_err());
    }

    #[test]
    fn command_line_reproduces_the_spec() {
        let spec = ManaSpec {
            irqaffinity: Some("0-1".into()),
            ..ManaSpec::seed()
        };
        assert_eq!(
            spec.command_line(),
            "irqscope mana azure-4vcpu-smt2 --device-node 0 --mode dynamic --max-msix 64 --load 0,1,1,1 --irqaffinity 0-1"
        );
    }
}
