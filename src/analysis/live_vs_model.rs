//! Live vs model: the scenario the kernel would have computed for a live host's topology and
//! device list (grouped by [`crate::live::devices`]), run, and lined up vector by vector with
//! the placement the host reported.
//!
//! A MANA device is modelled by [`crate::kernel::mana`] (`driver=mana`: the driver spreads its
//! own non-managed IRQs), not as a generic device; that model places IRQs by the x86 vector
//! matrix, so under another effective model, or on a machine it does not take, the device is
//! listed as not modelled. Other IRQs of no known device are listed as not modelled too. The
//! model knows the topology and the device list only: the order other drivers took vectors in,
//! and anything irqbalance moved, show up as mismatches.
//!
//! The topology is the host's, validated once when the snapshot was accepted
//! (`HostState::topology`); nothing here validates it again.

use crate::live::devices::{group_devices, LiveDevice, LiveDriver};
use crate::live::protocol::Snapshot;
use crate::scenario::spec::{self, DeviceSpec, ScenarioSpec, TopologyRef};
use crate::scenario::{self, ScenarioError};
use crate::topology::{parse_cpulist, Topology, CPUS_MAX};
use std::sync::Arc;

const _: () = assert!(crate::live::limits::DEVICE_NAME_BYTES_MAX == scenario::DEVICE_NAME_BYTES_MAX);

/// The name the host's own topology goes by while the scenario is resolved.
const HOST_TOPOLOGY: &str = "live-host";

/// One vector, predicted beside actual.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorComparison {
    pub device: String,
    pub index: u32,
    /// Index into `snapshot.irqs`.
    pub irq: usize,
    pub predicted_mask: String,
    pub actual_mask: String,
    pub predicted_cpu: Option<u32>,
    pub actual_effective: String,
    pub mask_matches: bool,
    /// The predicted CPU is the one the kernel chose (the effective list is that one CPU).
    pub cpu_matches: bool,
}

#[derive(Debug, Clone)]
pub struct Comparison {
    /// The scenario for this snapshot (topology inline), ready for a permalink.
    pub spec: ScenarioSpec,
    pub vectors: Vec<VectorComparison>,
    /// Devices seen but not modelled (no queue vectors), and IRQs of no known device.
    pub not_modelled: Vec<String>,
}

impl Comparison {
    pub fn mismatches(&self) -> usize {
        self.vectors
            .iter()
            .filter(|v| !v.cpu_matches || !v.mask_matches)
            .count()
    }
}

/// What to compare a snapshot against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelOptions {
    pub variant: String,
    pub effective: String,
    /// MANA devices run the driver after "net: mana: Optimize irq affinity for low vcpu
    /// configs" (default: before it).
    pub mana_patched: bool,
}

/// Build the scenario the kernel would have computed for this snapshot, run it, and compare
/// (MANA devices as the unpatched driver).
pub fn compare(
    snap: &Snapshot,
    topology: &Arc<Topology>,
    variant: &str,
    effective: &str,
) -> Result<Comparison, ScenarioError> {
    compare_with(
        snap,
        topology,
        &ModelOptions {
            variant: variant.into(),
            effective: effective.into(),
            mana_patched: false,
        },
    )
}

/// Why the MANA model cannot place this device here, if it cannot.
fn mana_refusal(snap: &Snapshot, effective: &str) -> Option<String> {
    if effective != crate::kernel::vector_matrix::EffectiveModel::X86Matrix.name() {
        return Some("the MANA model places IRQs by the x86 vector matrix; choose effective x86-matrix".into());
    }
    if snap.topology.nodes.len() > crate::kernel::mana::NODES_MAX {
        return Some(format!(
            "the MANA model takes at most {} nodes",
            crate::kernel::mana::NODES_MAX
        ));
    }
    None
}

/// [`compare`] with every option. `topology` is `snap`'s topology, already validated.
pub fn compare_with(
    snap: &Snapshot,
    topology: &Arc<Topology>,
    opts: &ModelOptions,
) -> Result<Comparison, ScenarioError> {
    let (variant, effective) = (opts.variant.as_str(), opts.effective.as_str());
    let (devices, other) = group_devices(snap);
    let mut not_modelled: Vec<String> = other
        .iter()
        .map(|&i| format!("IRQ {} {}", snap.irqs[i].label, snap.irqs[i].name))
        .collect();
    let mana_refused = mana_refusal(snap, effective);
    let mut modelled: Vec<&LiveDevice> = Vec::new();
    for d in &devices {
        if d.vectors.len() as u32 <= d.pre {
            not_modelled.push(format!("{} (no queue vectors)", d.name));
        } else if let (LiveDriver::Mana, Some(why)) = (d.driver, &mana_refused) {
            not_modelled.push(format!("{} ({why})", d.name));
        } else {
            modelled.push(d);
        }
    }
    let spec = ScenarioSpec {
        topology: TopologyRef::Preset(HOST_TOPOLOGY.into()),
        devices: modelled
            .iter()
            .map(|d| match d.driver {
                // The HWC plus one vector per queue: the MSI-X table the driver used.
                LiveDriver::Mana => DeviceSpec {
                    name: Some(d.name.clone()),
                    patched: opts.mana_patched,
                    ..DeviceSpec::mana(d.vectors.len() as u32 - 1)
                },
                LiveDriver::Generic => DeviceSpec {
                    name: Some(d.name.clone()),
                    pre: d.pre,
                    managed: d.managed,
                    ..DeviceSpec::new(1, d.vectors.len() as u32 - d.pre)
                },
            })
            .collect(),
        variant: variant.to_string(),
        sort: spec::DEFAULT_SORT.name().into(),
        effective: effective.to_string(),
        spread_counter: 0,
        proposal: None,
        irqaffinity: None,
        isolcpus: None,
        nohz_full: None,
        vectors_held: None,
    };
    let scenario = spec.resolve(|name| (name == HOST_TOPOLOGY).then(|| topology.clone()))?;
    let outcome = scenario::run(&scenario);
    // Inline topologies travel in explicit form so the permalink reproduces this machine.
    let spec = ScenarioSpec {
        topology: TopologyRef::Inline(Box::new(scenario.topology().to_spec())),
        ..spec
    };
    let mut vectors = Vec::new();
    for (d, o) in modelled.iter().zip(&outcome.devices) {
        if d.vectors.len() > o.vectors.len() {
            not_modelled.push(format!(
                "{}: {} of its {} IRQs (the model uses fewer vectors)",
                d.name,
                d.vectors.len() - o.vectors.len(),
                d.vectors.len()
            ));
        }
        for (v, &irq_idx) in o.vectors.iter().zip(&d.vectors) {
            let irq = &snap.irqs[irq_idx];
            let parse = |s: &Option<String>| s.as_deref().and_then(|t| parse_cpulist(t, CPUS_MAX).ok());
            let actual_mask = parse(&irq.affinity);
            let actual_eff = parse(&irq.effective);
            let predicted_mask = v.mask.to_cpulist();
            vectors.push(VectorComparison {
                device: d.name.clone(),
                index: v.index,
                irq: irq_idx,
                mask_matches: actual_mask.as_ref().is_some_and(|m| m.to_cpulist() == predicted_mask),
                predicted_mask,
                actual_mask: irq.affinity.clone().unwrap_or_else(|| "?".into()),
                cpu_matches: match (&actual_eff, v.effective_cpu) {
                    (Some(e), Some(c)) => e.weight() == 1 && e.contains(c),
                    (Some(e), None) => e.is_empty(),
                    (None, _) => false,
                },
                predicted_cpu: v.effective_cpu,
                actual_effective: irq.effective.clone().unwrap_or_else(|| "?".into()),
            });
        }
    }
    Ok(Comparison {
        spec,
        vectors,
        not_modelled,
    })
}
