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
//! (`HostState::topology`); nothing here validates it again, except where the kernel release
//! says how hotplug CPUs got their nodes (then the adjusted topology is built and validated).
//!
//! What the model takes from the snapshot beyond the topology and the devices (shared with
//! `irqscope lab check`, [`crate::lab::check`]):
//! - the kernel release ([`options_for`]): variant, sort and hotplug rule from
//!   [`crate::lab::generation`];
//! - the vectors the other interrupts hold, as the vector matrix's start ([`held_vectors`]);
//! - the non-managed mask as `/proc/irq/N/smp_affinity_list` shows it: `alloc_descs()` gives
//!   the descriptor the node of the affinity mask's first CPU, and `irq_setup_affinity()`
//!   narrows the mask to that node's online CPUs ([`proc_mask`]);
//! - a shut-down managed vector (no online CPU in its mask) is parked by
//!   `vector_assign_managed_shutdown()` (arch/x86/kernel/apic/vector.c) on the first online
//!   CPU, which `effective_affinity_list` then shows.

use crate::kernel::manage::irq_setup_affinity;
use crate::kernel::vector_matrix::EffectiveModel;
use crate::lab::{generation, parse_release, HotplugRule};
use crate::live::devices::{group_devices, LiveDevice, LiveDriver};
use crate::live::protocol::{Snapshot, WireTopology};
use crate::scenario::spec::{self, DeviceSpec, ScenarioSpec, TopologyRef};
use crate::scenario::{self, ScenarioError};
use crate::topology::{parse_cpulist, CpuSet, Topology, CPUS_MAX};
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
    /// A managed vector (its mask from `irq_create_affinity_masks()`).
    pub managed: bool,
}

#[derive(Debug, Clone)]
pub struct Comparison {
    /// The scenario for this snapshot (topology inline), ready for a permalink.
    pub spec: ScenarioSpec,
    pub vectors: Vec<VectorComparison>,
    /// Devices seen but not modelled (no queue vectors), and IRQs of no known device.
    pub not_modelled: Vec<String>,
    /// What the snapshot cannot tell and the model had to assume.
    pub warnings: Vec<String>,
    /// The options the comparison ran with.
    pub options: ModelOptions,
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
    pub sort: String,
    /// How the kernel gave not-yet-present CPUs their nodes; `None`: as the snapshot says.
    pub hotplug: Option<HotplugRule>,
    /// Start the vector matrix from the vectors the snapshot's other interrupts hold.
    pub held_from_snapshot: bool,
}

impl Default for ModelOptions {
    fn default() -> ModelOptions {
        ModelOptions {
            variant: crate::kernel::group_cpus::Variant::PreCluster.name().into(),
            effective: EffectiveModel::X86Matrix.name().into(),
            mana_patched: false,
            sort: spec::DEFAULT_SORT.name().into(),
            hotplug: None,
            held_from_snapshot: true,
        }
    }
}

/// The options a snapshot's kernel release implies (`release` overrides the snapshot's own,
/// for version 1 snapshots that carry none), and what could not be known.
pub fn options_for(snap: &Snapshot, release: Option<&str>) -> (ModelOptions, Vec<String>) {
    let release = release.unwrap_or(&snap.topology.kernel_release);
    let mut warnings = Vec::new();
    let mut opts = ModelOptions::default();
    match parse_release(release) {
        Some(r) => {
            let g = generation(r);
            opts.variant = g.variant.into();
            opts.sort = g.sort.into();
            opts.hotplug = g.hotplug;
        }
        None if release.is_empty() => warnings.push(format!(
            "kernel release unknown (protocol 1 snapshot; give --kernel): variant {} and sort {} assumed",
            opts.variant, opts.sort
        )),
        None => warnings.push(format!(
            "kernel release {release:?} not understood: variant {} and sort {} assumed",
            opts.variant, opts.sort
        )),
    }
    (opts, warnings)
}

/// `snap`'s topology with the hotplug CPUs (possible, not present) given the nodes `rule`
/// gives them; `None` when there are no hotplug CPUs.
pub fn hotplug_topology(snap: &Snapshot, rule: HotplugRule) -> Option<WireTopology> {
    let t = &snap.topology;
    let list = |s: &str| parse_cpulist(s, CPUS_MAX).ok();
    let mut possible = CpuSet::new(CPUS_MAX);
    for n in &t.nodes {
        possible.or_assign(&list(n)?);
    }
    if let Some(p) = &t.possible {
        possible.or_assign(&list(p)?);
    }
    let present = list(t.present.as_deref()?)?;
    let hotplug = possible.andnot(&present);
    if hotplug.is_empty() {
        return None;
    }
    let mut nodes: Vec<CpuSet> = t
        .nodes
        .iter()
        .map(|n| list(n).map(|c| c.andnot(&hotplug)))
        .collect::<Option<_>>()?;
    let mut out = t.clone();
    match rule {
        HotplugRule::RoundRobinOnlineNodes => {
            // Nodes the kernel has online: every listed node, and any node an interrupt's
            // descriptor names (a version 1 snapshot drops trailing CPU-less nodes).
            let irq_nodes = snap
                .irqs
                .iter()
                .filter_map(|i| i.node)
                .max()
                .map_or(0, |n| n as usize + 1);
            let n = nodes.len().max(irq_nodes).min(crate::topology::NODES_MAX as usize);
            nodes.resize(n, CpuSet::new(CPUS_MAX));
            if n == 0 {
                return None;
            }
            // numa_init_array(): rr = first online node, then next_node_in() per CPU.
            for (i, cpu) in hotplug.iter().enumerate() {
                nodes[i % n].insert(cpu);
            }
            if let Some(d) = &out.distances {
                if d.len() < n {
                    out.distances = None;
                }
            }
        }
        HotplugRule::IgnoreDisabled => {
            let keep = |sets: &[String]| -> Vec<String> {
                sets.iter()
                    .filter_map(|s| list(s).map(|c| c.and(&present)))
                    .filter(|c| !c.is_empty())
                    .map(|c| c.to_cpulist())
                    .collect()
            };
            out.smt = keep(&t.smt);
            out.clusters = keep(&t.clusters);
            out.packages = keep(&t.packages);
            out.present = None;
            out.possible = None;
        }
    }
    out.nodes = nodes.iter().map(CpuSet::to_cpulist).collect();
    Some(out)
}

/// The vectors the snapshot's interrupts other than `skip` hold, per CPU (`CPU:N,...`, the
/// `vectors_held` form): one for every numbered IRQ whose effective list is one online CPU.
pub(crate) fn held_vectors(snap: &Snapshot, topology: &Topology, skip: &[usize]) -> Option<String> {
    let mut held = std::collections::BTreeMap::<u32, u32>::new();
    for (i, irq) in snap.irqs.iter().enumerate() {
        if skip.contains(&i) || irq.label.parse::<u32>().is_err() || irq.chip == "-" {
            continue;
        }
        let Some(eff) = irq.effective.as_deref().and_then(|e| parse_cpulist(e, CPUS_MAX).ok()) else {
            continue;
        };
        if let (1, Some(cpu)) = (eff.weight(), eff.first()) {
            if topology.online().contains(cpu) {
                *held.entry(cpu).or_default() += 1;
            }
        }
    }
    (!held.is_empty()).then(|| {
        held.iter()
            .map(|(c, n)| format!("{c}:{n}"))
            .collect::<Vec<_>>()
            .join(",")
    })
}

/// A non-managed vector's mask as `/proc` shows it: `irq_setup_affinity()` with the
/// descriptor's node, which `alloc_descs()` took from the affinity mask's first CPU (devices
/// with an affinity descriptor) or the device's node (`node`, the IRQ's reported node).
pub(crate) fn proc_mask(topology: &Topology, mask: &CpuSet, has_affinity: bool, node: Option<u32>) -> CpuSet {
    let node = if has_affinity {
        mask.first()
            .filter(|&c| c < topology.nr_cpu_ids())
            .map(|c| topology.cpu_to_node(c))
    } else {
        node.filter(|&n| n < topology.nr_node_ids())
    };
    irq_setup_affinity(topology, Some(mask), node)
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
            ..ModelOptions::default()
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
    let mut warnings = Vec::new();
    let adjusted = match opts.hotplug {
        Some(rule) => match hotplug_topology(snap, rule) {
            Some(wire) => {
                warnings.push(format!("hotplug CPUs: {}", rule.describe()));
                Some(Arc::new(Topology::new(&wire.to_spec(&snap.host)).map_err(|e| {
                    ScenarioError(format!("topology with hotplug CPUs placed: {e}"))
                })?))
            }
            None => None,
        },
        None => {
            let t = topology.as_ref();
            if t.possible() != t.present() {
                warnings.push(format!(
                    "hotplug CPUs {}: which node this kernel gave them cannot be known; the snapshot's nodes are used",
                    t.possible().andnot(t.present()).to_cpulist()
                ));
            }
            None
        }
    };
    let topology = adjusted.as_ref().unwrap_or(topology);
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
    let modelled_irqs: Vec<usize> = modelled.iter().flat_map(|d| d.vectors.iter().copied()).collect();
    let vectors_held = if opts.held_from_snapshot && effective == EffectiveModel::X86Matrix.name() {
        held_vectors(snap, topology, &modelled_irqs)
    } else {
        None
    };
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
        sort: opts.sort.clone(),
        effective: effective.to_string(),
        spread_counter: 0,
        proposal: None,
        irqaffinity: None,
        isolcpus: None,
        nohz_full: None,
        vectors_held,
        kernel_c: None,
    };
    let scenario = spec.resolve(|name| (name == HOST_TOPOLOGY).then(|| topology.clone()))?;
    let outcome = scenario::run(&scenario);
    // Inline topologies travel in explicit form so the permalink reproduces this machine.
    let spec = ScenarioSpec {
        topology: TopologyRef::Inline(Box::new(scenario.topology().to_spec())),
        ..spec
    };
    let mut vectors = Vec::new();
    let topo = scenario.topology();
    let x86 = effective == EffectiveModel::X86Matrix.name();
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
            let predicted_mask = if !v.managed && d.driver == LiveDriver::Generic {
                proc_mask(topo, &v.mask, d.managed, irq.node).to_cpulist()
            } else {
                v.mask.to_cpulist()
            };
            // A shut-down managed vector is parked on the first online CPU (x86).
            let predicted_cpu = match v.effective_cpu {
                None if v.managed && x86 && !v.mask.intersects(topo.online()) => topo.online().first(),
                c => c,
            };
            vectors.push(VectorComparison {
                device: d.name.clone(),
                index: v.index,
                irq: irq_idx,
                mask_matches: actual_mask.as_ref().is_some_and(|m| m.to_cpulist() == predicted_mask),
                predicted_mask,
                actual_mask: irq.affinity.clone().unwrap_or_else(|| "?".into()),
                cpu_matches: match (&actual_eff, predicted_cpu) {
                    (Some(e), Some(c)) => e.weight() == 1 && e.contains(c),
                    (Some(e), None) => e.is_empty(),
                    (None, _) => false,
                },
                predicted_cpu,
                actual_effective: irq.effective.clone().unwrap_or_else(|| "?".into()),
                managed: v.managed,
            });
        }
    }
    Ok(Comparison {
        spec,
        vectors,
        not_modelled,
        warnings,
        options: opts.clone(),
    })
}
