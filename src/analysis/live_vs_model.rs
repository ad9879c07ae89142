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
//! - the kernel release ([`options_for`]): variant, sort, the `irq_create_affinity_masks()`
//!   era, the vector count and the hotplug rule from [`crate::kernel::release`];
//! - the vectors the other interrupts hold, as the vector matrix's start ([`held_vectors`]);
//! - the non-managed mask as `/proc/irq/N/smp_affinity_list` shows it: `alloc_descs()` gives
//!   the descriptor the node of the affinity mask's first CPU, and `irq_setup_affinity()`
//!   narrows the mask to that node's online CPUs ([`proc_mask`]);
//! - a shut-down managed vector (no online CPU in its mask) is parked by
//!   `vector_assign_managed_shutdown()` (arch/x86/kernel/apic/vector.c) on the first online
//!   CPU, which `effective_affinity_list` then shows (on arm64 it is never activated and shows
//!   none);
//! - the effective-CPU model of each device from the controller its IRQs' chip names say
//!   ([`crate::live::devices::controller_of_chip`]: `ITS-…` → `arm64-its`, `GICv2m…` and GIC
//!   SPIs → `first-cpu`, x86 names → `x86-matrix`), Hyper-V's chip and unknown names settled by
//!   the architecture of the kernel release or of the other chips (arm64: a GICv3 ITS), unless
//!   the caller names one model for all ([`ModelOptions::effective`]).
//!
//! A vector whose mask matches and whose effective CPU does not gets a reason when its CPU
//! depends on an order the snapshot does not record ([`DiffReason`]): under the x86 matrix and
//! the ITS, a CPU is chosen by counts that every earlier interrupt moved. Under `first-cpu` the
//! CPU follows from the mask alone, so a difference there has no such excuse.

use crate::kernel::irq_affinity::AffinityEra;
use crate::kernel::manage::irq_setup_affinity;
use crate::kernel::release::{generation, parse_release, HotplugRule};
use crate::kernel::vector_matrix::EffectiveModel;
use crate::live::devices::{self, group_devices, LiveDevice, LiveDriver};
use crate::live::protocol::{Snapshot, WireTopology};
use crate::scenario::spec::{self, DeviceSpec, ScenarioSpec, TopologyRef};
use crate::scenario::{self, Outcome, Scenario, ScenarioError};
use crate::topology::{parse_cpulist, Arch, CpuSet, Irqchip, Topology, CPUS_MAX};
use std::collections::BTreeMap;
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
    pub(crate) irq: usize,
    pub predicted_mask: String,
    pub actual_mask: String,
    pub predicted_cpu: Option<u32>,
    pub actual_effective: String,
    pub mask_matches: bool,
    /// The predicted CPU is the one the kernel chose (the effective list is that one CPU).
    pub cpu_matches: bool,
    /// The snapshot holds the vector's requested mask (`/proc/irq/N/smp_affinity_list`); a
    /// bare `/proc/interrupts` does not.
    pub(crate) mask_recorded: bool,
    /// The snapshot holds the vector's effective CPU (`effective_affinity_list`).
    pub(crate) cpu_recorded: bool,
    /// A managed vector (its mask from `irq_create_affinity_masks()`).
    pub managed: bool,
    /// The effective-CPU model this vector's device ran under.
    pub(crate) model: EffectiveModel,
    /// Why the effective CPU differs though the mask matches, when the order of events the
    /// snapshot does not record explains it.
    pub reason: Option<DiffReason>,
}

/// Why a vector with the model's mask fires on another CPU than the model's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DiffReason {
    /// A managed vector: its CPU is the least-loaded of its mask when it was started, and the
    /// load was left by the devices started before it. Controllers probed in another order
    /// than their IRQ numbers say (concurrently at boot) move effective CPUs between devices,
    /// never masks.
    ProbeOrder,
    /// A non-managed vector (an admin queue, virtio, a NIC): its mask is the default affinity
    /// and its CPU the one the controller found least loaded when the vector was activated,
    /// which every interrupt activated before it moved (other drivers, in an order the
    /// snapshot does not record).
    ActivationOrder,
}

impl DiffReason {
    /// A few words for a table cell or a `differ:` line.
    pub(crate) fn short(self) -> &'static str {
        match self {
            DiffReason::ProbeOrder => "probe order",
            DiffReason::ActivationOrder => "activation order",
        }
    }

    /// The sentence a report prints once for every vector of this kind.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            DiffReason::ProbeOrder => {
                "managed vectors with the model's mask on another CPU: their CPU is the \
                 least-loaded of the mask when they were started, so it follows the order the \
                 controllers were probed in (concurrently at boot); masks never move. Compare \
                 a capture taken with the controllers bound one at a time"
            }
            DiffReason::ActivationOrder => {
                "non-managed vectors with the model's mask on another CPU: their CPU is the one \
                 the controller found least loaded when they were activated, which every \
                 interrupt activated before them moved (other drivers, in an order a snapshot \
                 does not record)"
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct Comparison {
    /// The scenario for this snapshot (topology inline), ready for a permalink.
    pub spec: ScenarioSpec,
    pub vectors: Vec<VectorComparison>,
    /// Devices seen but not modelled (no queue vectors), and IRQs of no known device.
    pub not_modelled: Vec<String>,
    /// What the snapshot cannot tell and the model had to assume.
    pub(crate) warnings: Vec<String>,
    /// The options the comparison ran with.
    pub(crate) options: ModelOptions,
    /// The effective-CPU model of each modelled device (name, pick), in probe order.
    pub(crate) effective: Vec<(String, EffectivePick)>,
}

impl VectorComparison {
    /// The recorded mask or effective CPU differs from the model's. What the snapshot does not
    /// hold is not compared: a vector with neither recorded never differs.
    pub(crate) fn differs(&self) -> bool {
        (self.mask_recorded && !self.mask_matches) || (self.cpu_recorded && !self.cpu_matches)
    }

    /// Neither the mask nor the effective CPU is recorded: nothing to compare.
    pub(crate) fn unrecorded(&self) -> bool {
        !self.mask_recorded && !self.cpu_recorded
    }
}

impl Comparison {
    /// Vectors whose recorded mask or effective CPU differ from the model's.
    pub fn mismatches(&self) -> usize {
        self.vectors.iter().filter(|v| v.differs()).count()
    }

    /// Of [`Self::mismatches`], the vectors no [`DiffReason`] explains: what `/live` and
    /// `/fleet` call differing.
    pub fn unexplained(&self) -> usize {
        self.vectors
            .iter()
            .filter(|v| v.differs() && v.reason.is_none())
            .count()
    }

    /// Vectors the snapshot records neither a mask nor an effective CPU for (one bare
    /// `/proc/interrupts` reading): shown beside the model, never counted as differing.
    pub(crate) fn unrecorded(&self) -> usize {
        self.vectors.iter().filter(|v| v.unrecorded()).count()
    }

    /// Of [`Self::mismatches`], the vectors a [`DiffReason`] explains, per reason.
    pub(crate) fn explained(&self) -> BTreeMap<DiffReason, usize> {
        let mut n = BTreeMap::new();
        for r in self.vectors.iter().filter_map(|v| v.reason) {
            *n.entry(r).or_default() += 1;
        }
        n
    }

    /// "arm64-its (ITS chips)", or per device when devices ran under different models: which
    /// effective-CPU model the comparison ran and where it came from.
    pub fn effective_summary(&self) -> String {
        let mut by_pick: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for (device, pick) in &self.effective {
            by_pick.entry(pick.describe()).or_default().push(device);
        }
        match by_pick.len() {
            0 => self.options.effective.clone(),
            1 => by_pick.into_keys().next().unwrap_or_default(),
            _ => by_pick
                .iter()
                .map(|(pick, devs)| format!("{}: {pick}", devs.join(", ")))
                .collect::<Vec<_>>()
                .join("; "),
        }
    }
}

/// Where a device's effective-CPU model came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EffectiveFrom {
    /// Named by the caller for every device.
    Named,
    /// The chip name of the device's IRQs.
    Chip(Irqchip),
    /// No chip name told; the usual controller of the architecture (of the kernel release, or
    /// of the snapshot's other chip names).
    Arch(Arch),
    /// Nothing told: the default model.
    Default,
}

/// A device's effective-CPU model and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EffectivePick {
    pub(crate) model: EffectiveModel,
    pub(crate) from: EffectiveFrom,
}

impl EffectivePick {
    /// "arm64-its (chip: gic-its)".
    pub(crate) fn describe(&self) -> String {
        let from = match self.from {
            EffectiveFrom::Named => "named".to_string(),
            EffectiveFrom::Chip(c) => format!("chip: {}", c.name()),
            EffectiveFrom::Arch(a) => format!("{} kernel, chip not named", a.name()),
            EffectiveFrom::Default => "default".to_string(),
        };
        format!("{} ({from})", self.model.name())
    }
}

/// The effective-CPU model for a device's IRQs: the controller the first chip name that tells
/// one belongs to, else the architecture's usual controller, else the default model.
pub(crate) fn device_effective(snap: &Snapshot, irqs: &[usize], arch: Option<Arch>) -> EffectivePick {
    if let Some(chip) = irqs
        .iter()
        .find_map(|&i| snap.irqs.get(i).and_then(|irq| devices::irqchip_of(&irq.chip, arch)))
    {
        return EffectivePick {
            model: EffectiveModel::for_irqchip(chip),
            from: EffectiveFrom::Chip(chip),
        };
    }
    match arch {
        Some(a) => EffectivePick {
            model: EffectiveModel::for_irqchip(a.default_irqchip()),
            from: EffectiveFrom::Arch(a),
        },
        None => EffectivePick {
            model: spec::DEFAULT_EFFECTIVE,
            from: EffectiveFrom::Default,
        },
    }
}

/// The variant and effective model a query names, each checked; an absent or empty one stays
/// empty: the host's own (its kernel release's variant, each IRQ's controller's model).
pub(crate) fn named_models(variant: Option<&str>, effective: Option<&str>) -> Result<(String, String), ScenarioError> {
    let variant = variant.unwrap_or_default().to_string();
    let effective = effective.unwrap_or_default().to_string();
    if !variant.is_empty() {
        spec::parse_variant(&variant)?;
    }
    if !effective.is_empty() {
        spec::parse_effective(&effective)?;
    }
    Ok((variant, effective))
}

pub(crate) use crate::live::devices::release_arch;

/// What to compare a snapshot against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelOptions {
    pub variant: String,
    /// One effective-CPU model for every device; empty: each device's own, from its IRQs'
    /// chip names ([`device_effective`]).
    pub effective: String,
    /// The architecture the kernel release names, for chip names that do not tell (`None`:
    /// the snapshot's other chip names decide, if they can).
    pub arch: Option<Arch>,
    /// MANA devices run the driver after "net: mana: Optimize irq affinity for low vcpu
    /// configs" (default: before it).
    pub mana_patched: bool,
    pub sort: String,
    /// How the kernel gave not-yet-present CPUs their nodes; `None`: as the snapshot says.
    pub hotplug: Option<HotplugRule>,
    /// Start the vector matrix from the vectors the snapshot's other interrupts hold.
    pub held_from_snapshot: bool,
    /// The `irq_create_affinity_masks()` era; `None`: the model's default (`nummasks`).
    pub affinity: Option<AffinityEra>,
    /// The vector window of the release (with the machine's legacy PIC, the vectors per CPU);
    /// `None`: the model's default count.
    pub window: Option<crate::kernel::vector_matrix::VectorWindow>,
}

impl Default for ModelOptions {
    fn default() -> ModelOptions {
        ModelOptions {
            variant: crate::kernel::group_cpus::Variant::PreCluster.name().into(),
            effective: String::new(),
            arch: None,
            mana_patched: false,
            sort: spec::DEFAULT_SORT.name().into(),
            hotplug: None,
            held_from_snapshot: true,
            affinity: None,
            window: None,
        }
    }
}

/// The options a snapshot's kernel release implies (`release` overrides the snapshot's own,
/// for version 1 snapshots that carry none), and what could not be known.
pub fn options_for(snap: &Snapshot, release: Option<&str>) -> (ModelOptions, Vec<String>) {
    let release = release.unwrap_or(&snap.topology.kernel_release);
    let mut warnings = Vec::new();
    let mut opts = ModelOptions {
        arch: release_arch(release),
        ..ModelOptions::default()
    };
    match parse_release(release) {
        Some(r) => {
            let g = generation(r);
            opts.variant = g.variant.into();
            opts.sort = g.sort.into();
            opts.hotplug = g.hotplug;
            opts.affinity = Some(g.affinity);
            opts.window = Some(g.window);
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
/// Under the x86 matrix every such IRQ holds a vector; under the ITS only other drivers' LPIs
/// (chip names of the ITS) count, as unmanaged ones (an LPI a known driver manages would count
/// apart in the kernel; the held form has one count, so those are left out); the GIC's SPIs
/// keep no count.
pub(crate) fn held_vectors(
    snap: &Snapshot,
    topology: &Topology,
    skip: &[usize],
    model: EffectiveModel,
) -> Option<String> {
    let mut held = std::collections::BTreeMap::<u32, u32>::new();
    for (i, irq) in snap.irqs.iter().enumerate() {
        if skip.contains(&i) || irq.label.parse::<u32>().is_err() || irq.chip == "-" {
            continue;
        }
        let counts = match model {
            EffectiveModel::X86Matrix => true,
            EffectiveModel::Arm64Its => {
                devices::controller_of_chip(&irq.chip) == devices::ChipController::Known(Irqchip::GicIts)
                    && !devices::device_of(&irq.name).is_some_and(|(_, managed)| managed)
            }
            EffectiveModel::FirstCpu | EffectiveModel::Arm64GicV5 => false,
        };
        if !counts {
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
fn mana_refusal(snap: &Snapshot, effective: EffectiveModel) -> Option<String> {
    if effective != EffectiveModel::X86Matrix {
        return Some(format!(
            "the MANA model places IRQs by the x86 vector matrix; choose effective x86-matrix \
             (this device runs under {})",
            effective.name()
        ));
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
    let mut warnings = Vec::new();
    let adjusted = hotplug_adjusted(snap, topology, opts, &mut warnings)?;
    let topology = adjusted.as_ref().unwrap_or(topology);
    let (devices, other) = group_devices(snap);
    let mut not_modelled: Vec<String> = other
        .iter()
        .map(|&i| format!("IRQ {} {}", snap.irqs[i].label, snap.irqs[i].name))
        .collect();
    // Each device's effective-CPU model: named for all, or its controller's.
    let named = if opts.effective.is_empty() {
        None
    } else {
        Some(spec::parse_effective(&opts.effective)?)
    };
    let modelled = pick_modelled(snap, &devices, opts, named, &mut not_modelled);
    let (primary, models) = primary_model(&modelled, named, &mut warnings);
    let resolve = |spec: &ScenarioSpec| spec.resolve(|name| (name == HOST_TOPOLOGY).then(|| topology.clone()));
    let spec = model_spec(snap, topology, opts, &modelled, primary);
    let scenario = resolve(&spec)?;
    let run = |s: &Scenario| scenario::try_run(s).map_err(|e| ScenarioError(e.to_string()));
    let mut outcomes: BTreeMap<EffectiveModel, Outcome> = BTreeMap::new();
    outcomes.insert(primary, run(&scenario)?);
    for model in models.into_iter().filter(|&m| m != primary) {
        // A MANA device is modelled only under x86-matrix, and no machine has both an x86
        // controller and a GIC: a snapshot that claims both is refused here by Scenario::new.
        let spec = model_spec(snap, topology, opts, &modelled, model);
        outcomes.insert(model, run(&resolve(&spec)?)?);
    }
    let spec = ScenarioSpec {
        topology: TopologyRef::Inline(Box::new(permalink_topology(&scenario, &modelled, primary))),
        ..spec
    };
    let mut vectors = Vec::new();
    let topo = scenario.topology();
    for (k, (d, pick)) in modelled.iter().enumerate() {
        let o = &outcomes[&pick.model].devices[k];
        if d.vectors.len() > o.vectors.len() {
            not_modelled.push(format!(
                "{}: {} of its {} IRQs (the model uses fewer vectors)",
                d.name,
                d.vectors.len() - o.vectors.len(),
                d.vectors.len()
            ));
        }
        for (v, &irq_idx) in o.vectors.iter().zip(&d.vectors) {
            vectors.push(compare_vector(snap, topo, d, *pick, v, irq_idx));
        }
    }
    Ok(Comparison {
        spec,
        vectors,
        not_modelled,
        warnings,
        options: opts.clone(),
        effective: modelled.iter().map(|(d, p)| (d.name.clone(), *p)).collect(),
    })
}

/// The snapshot's machine with its hotplug CPUs placed by `opts.hotplug`'s rule (`None`: as
/// it is; a warning says which CPUs' nodes cannot be known).
fn hotplug_adjusted(
    snap: &Snapshot,
    topology: &Topology,
    opts: &ModelOptions,
    warnings: &mut Vec<String>,
) -> Result<Option<Arc<Topology>>, ScenarioError> {
    let Some(rule) = opts.hotplug else {
        if topology.possible() != topology.present() {
            warnings.push(format!(
                "hotplug CPUs {}: which node this kernel gave them cannot be known; the snapshot's nodes are used",
                topology.possible().andnot(topology.present()).to_cpulist()
            ));
        }
        return Ok(None);
    };
    let Some(wire) = hotplug_topology(snap, rule) else {
        return Ok(None);
    };
    warnings.push(format!("hotplug CPUs: {}", rule.describe()));
    let t = Topology::new(&wire.to_spec(&snap.host))
        .map_err(|e| ScenarioError(format!("topology with hotplug CPUs placed: {e}")))?;
    Ok(Some(Arc::new(t)))
}

/// The devices the models place, each with its effective-CPU model; the others go to
/// `not_modelled` with why.
fn pick_modelled<'d>(
    snap: &Snapshot,
    devices: &'d [LiveDevice],
    opts: &ModelOptions,
    named: Option<EffectiveModel>,
    not_modelled: &mut Vec<String>,
) -> Vec<(&'d LiveDevice, EffectivePick)> {
    let arch = opts
        .arch
        .or_else(|| devices::arch_of_chips(snap.irqs.iter().map(|i| i.chip.as_str())));
    let mut modelled = Vec::new();
    for d in devices {
        let pick = match named {
            Some(model) => EffectivePick {
                model,
                from: EffectiveFrom::Named,
            },
            None => device_effective(snap, &d.vectors, arch),
        };
        if d.vectors.len() as u32 <= d.pre {
            not_modelled.push(format!("{} (no queue vectors)", d.name));
        } else if let (LiveDriver::Mana, Some(why)) = (d.driver, mana_refusal(snap, pick.model)) {
            not_modelled.push(format!("{} ({why})", d.name));
        } else {
            modelled.push((d, pick));
        }
    }
    modelled
}

/// The model most vectors run under, which goes into the permalink, and every model present;
/// each other model runs the same probe once more for its own devices.
fn primary_model(
    modelled: &[(&LiveDevice, EffectivePick)],
    named: Option<EffectiveModel>,
    warnings: &mut Vec<String>,
) -> (EffectiveModel, Vec<EffectiveModel>) {
    let mut weight: BTreeMap<EffectiveModel, usize> = BTreeMap::new();
    for (d, p) in modelled {
        *weight.entry(p.model).or_default() += d.vectors.len();
    }
    let primary = weight
        .iter()
        .max_by_key(|&(m, &n)| (n, std::cmp::Reverse(*m)))
        .map_or(named.unwrap_or(spec::DEFAULT_EFFECTIVE), |(&m, _)| m);
    if weight.len() > 1 {
        warnings.push(format!(
            "devices sit on different controllers ({}): each is compared under its own \
             controller's model in a run of every device, and the link runs all under {}",
            modelled
                .iter()
                .map(|(d, p)| format!("{} {}", d.name, p.model.name()))
                .collect::<Vec<_>>()
                .join(", "),
            primary.name()
        ));
    }
    (primary, weight.into_keys().collect())
}

/// The scenario of every modelled device under `model`, on the snapshot's machine.
fn model_spec(
    snap: &Snapshot,
    topology: &Topology,
    opts: &ModelOptions,
    modelled: &[(&LiveDevice, EffectivePick)],
    model: EffectiveModel,
) -> ScenarioSpec {
    let modelled_irqs: Vec<usize> = modelled.iter().flat_map(|(d, _)| d.vectors.iter().copied()).collect();
    ScenarioSpec {
        topology: TopologyRef::Preset(HOST_TOPOLOGY.into()),
        devices: modelled
            .iter()
            .map(|(d, _)| match d.driver {
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
        variant: opts.variant.clone(),
        sort: opts.sort.clone(),
        effective: model.name().to_string(),
        vectors_held: if opts.held_from_snapshot {
            held_vectors(snap, topology, &modelled_irqs, model)
        } else {
            None
        },
        affinity: opts.affinity.map(|e| e.name().to_string()),
        vectors_per_cpu: opts
            .window
            .map(|w| w.vectors_per_cpu(topology.legacy_pic().unwrap_or(false))),
        ..ScenarioSpec::new(TopologyRef::Preset(HOST_TOPOLOGY.into()), Vec::new())
    }
}

/// The machine as the permalink carries it: explicit, so the link reproduces this machine,
/// with the architecture and controller the comparison found for its primary model.
fn permalink_topology(
    scenario: &Scenario,
    modelled: &[(&LiveDevice, EffectivePick)],
    primary: EffectiveModel,
) -> crate::topology::TopologySpec {
    let mut topology_spec = scenario.topology().to_spec();
    if let Some((_, pick)) = modelled.iter().find(|(_, p)| p.model == primary) {
        let chip = match pick.from {
            EffectiveFrom::Chip(c) => Some(c),
            EffectiveFrom::Arch(a) => Some(a.default_irqchip()),
            EffectiveFrom::Named | EffectiveFrom::Default => None,
        };
        if let Some(c) = chip {
            topology_spec.arch = Some(c.arch());
            topology_spec.irqchip = Some(c);
        }
    }
    topology_spec
}

/// One vector: the model's mask and CPU against what `/proc` recorded for IRQ `irq_idx`,
/// and, when only the CPU differs within the mask, whether earlier interrupts' order explains
/// it.
fn compare_vector(
    snap: &Snapshot,
    topo: &Topology,
    d: &LiveDevice,
    pick: EffectivePick,
    v: &crate::scenario::VectorOutcome,
    irq_idx: usize,
) -> VectorComparison {
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
    let x86 = pick.model == EffectiveModel::X86Matrix;
    let predicted_cpu = match v.effective_cpu {
        None if v.managed && x86 && !v.mask.intersects(topo.online()) => topo.online().first(),
        c => c,
    };
    let mask_matches = actual_mask.as_ref().is_some_and(|m| m.to_cpulist() == predicted_mask);
    let cpu_matches = match (&actual_eff, predicted_cpu) {
        (Some(e), Some(c)) => e.weight() == 1 && e.contains(c),
        (Some(e), None) => e.is_empty(),
        (None, _) => false,
    };
    // Only a vector that fires on one CPU of its mask, the model's placing it on another, is
    // a question of order, and only under models whose CPU choice depends on counts earlier
    // interrupts left.
    let order_matters = !matches!(pick.model, EffectiveModel::FirstCpu | EffectiveModel::Arm64GicV5);
    let fires_in_mask = actual_eff.as_ref().is_some_and(|e| {
        e.weight() == 1
            && actual_mask
                .as_ref()
                .is_some_and(|m| e.first().is_some_and(|c| m.contains(c)))
    });
    let reason = (mask_matches && !cpu_matches && order_matters && predicted_cpu.is_some() && fires_in_mask).then_some(
        if v.managed {
            DiffReason::ProbeOrder
        } else {
            DiffReason::ActivationOrder
        },
    );
    VectorComparison {
        device: d.name.clone(),
        index: v.index,
        irq: irq_idx,
        mask_matches,
        mask_recorded: irq.affinity.is_some(),
        cpu_recorded: irq.effective.is_some(),
        predicted_mask,
        actual_mask: irq.affinity.clone().unwrap_or_else(|| "?".into()),
        cpu_matches,
        predicted_cpu,
        actual_effective: irq.effective.clone().unwrap_or_else(|| "?".into()),
        managed: v.managed,
        model: pick.model,
        reason,
    }
}
