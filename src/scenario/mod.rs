//! A scenario (a machine, the devices probed on it in order, and the kernel generation) and
//! [`run`], which plays the probe sequence through the kernel models.
//!
//! Probe order and the state that lives across calls (the rotation patch's spread counter,
//! the x86 vector matrix) belong here, not in `kernel`. [`run`] is pure and deterministic: the
//! same scenario gives the same outcome on every machine.
//!
//! Device sequencing (spec §9.2): for each device in list order, compute its affinity masks,
//! allocate all its vectors in index order, activate (request) them in index order, then build
//! its blk-mq map if it has one (a GICv3 ITS activates each vector as it is allocated and moves
//! it when it is requested: `kernel::irq_gic_v3_its`). NVMe's preliminary single admin vector
//! has no net effect (on x86 and on an ITS alike: it is freed before the real allocation) and
//! is not modelled; its admin tag set's map is (`driver=nvme`, [`ProbeOrder`]): a
//! `group_cpus_evenly(1)` call before the controller's I/O vectors are spread, which takes a
//! counter value under `rotation-v1`. A managed vector whose affinity mask is empty fails its
//! allocation (`alloc_descs()`, -EINVAL), recorded like a vector the matrix refused. Other
//! interrupts hold only the vectors the scenario's `vectors_held` gives;
//! boot parameters (`irqaffinity=`, `isolcpus=`, `nohz_full=`) are [`BootParams`]. The vector
//! space and its `-ENOSPC` answers are [`VectorSpace`] (`docs/vector-space.md`).

pub mod blkmq;
pub mod kernel;
pub mod mana;
pub mod payloads;
mod probe;
pub use probe::{try_run, ProbeWalk, SpreadMemo};
pub mod permalink;
pub mod request;
pub mod sched;
pub mod spec;

pub(crate) use kernel::KernelPick;
pub use mana::mana_input;

use crate::kernel::irq_affinity::{
    affinity_sets, affinity_vectors, descs_of, AffinityMasks, AffinityRequest, IRQ_AFFINITY_MAX_SETS,
};
use crate::kernel::isolation::{HkType, Housekeeping};
use crate::kernel::mana::{DriverVersion, ManaOutcome, MsixMode};
use crate::kernel::manage::irq_affinity_setup;
use crate::kernel::vector_matrix::{CpuMap, EffectiveModel, MatrixError, VectorMatrix};
use crate::kernel::{External, KernelWarn, SortGen, Spreader, Variant};
use crate::policy::offset_by_probed::{offset_by_probed, Fires, ProbedLoad};
use crate::policy::Proposal;
use crate::topology::{CpuSet, Topology};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Most devices in one scenario.
pub(crate) const DEVICES_MAX: usize = 256;
/// Most vectors of one device (the MSI-X table size limit).
pub(crate) const VECTORS_PER_DEVICE_MAX: u32 = 2048;
/// Most vectors over all devices.
pub(crate) const VECTORS_TOTAL_MAX: u64 = 65_536;
/// Longest device name.
pub(crate) const DEVICE_NAME_BYTES_MAX: usize = 64;
/// Most interrupt sets a scenario may ask for (the kernel accepts 4 and WARNs above).
pub(crate) const SETS_MAX: usize = 8;

/// Where a device's blk-mq queue map comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlkMqSource {
    /// From the IRQ affinity masks (NVMe-style `blk_mq_map_hw_queues`).
    Irq,
    /// By calling `blk_mq_map_queues` (`current` mapper; advances a rotation counter).
    Cpumap,
}

impl BlkMqSource {
    pub(crate) fn name(self) -> &'static str {
        match self {
            BlkMqSource::Irq => "irq",
            BlkMqSource::Cpumap => "cpumap",
        }
    }
    pub(crate) fn from_name(name: &str) -> Option<BlkMqSource> {
        match name {
            "irq" => Some(BlkMqSource::Irq),
            "cpumap" => Some(BlkMqSource::Cpumap),
            _ => None,
        }
    }
}

/// Which driver sets the device's interrupts up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// A driver that asks `pci_alloc_irq_vectors_affinity()` for its vectors (NVMe-style).
    Generic,
    /// The MANA network driver (`gdma_main.c`), which spreads its own non-managed IRQs
    /// ([`crate::kernel::mana`]); `patched` is the driver after "net: mana: Optimize irq
    /// affinity for low vcpu configs". The device's `vectors` are its MSI-X table size
    /// (`max_msix`: the HWC vector plus the queue vectors it offers).
    Mana { patched: bool, mode: MsixMode },
    /// The NVMe PCI driver (drivers/nvme/host/pci.c): a generic driver whose probe first
    /// allocates the admin tag set, whose `blk_mq_ops` have no `map_queues`, so
    /// `blk_mq_alloc_tag_set()` → `blk_mq_update_queue_map()` → `blk_mq_map_queues()` →
    /// `group_cpus_evenly(1)` runs before `nvme_setup_io_queues()` spreads the I/O vectors
    /// (`nvme_probe()`: `nvme_alloc_admin_tag_set()` then `nvme_setup_io_queues()`, in 6.12
    /// and 7.2). Only the counter sees that call: a one-group map puts every CPU on queue 0.
    Nvme,
}

impl Driver {
    pub fn is_mana(self) -> bool {
        matches!(self, Driver::Mana { .. })
    }

    /// Whether the driver maps an admin tag set before spreading its vectors.
    pub(crate) fn has_admin_tag_set(self) -> bool {
        self == Driver::Nvme
    }
}

/// In which order the controllers' admin tag sets and I/O spreads happen (it matters only to
/// a variant whose one-group calls take a counter value, `rotation-v1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeOrder {
    /// Strictly one controller after another: its admin tag set, then its I/O spread (a
    /// synchronous probe, or asynchronous probes that never overlap). The default.
    Sequential,
    /// Every admin tag set first, then the I/O spreads in list order: the NVMe driver probes
    /// asynchronously (`PROBE_PREFER_ASYNCHRONOUS`), and the admin tag set comes early in
    /// `nvme_probe()` while the I/O queues wait for the controller's answers.
    Parallel,
}

impl ProbeOrder {
    pub(crate) const ALL: [ProbeOrder; 2] = [ProbeOrder::Sequential, ProbeOrder::Parallel];

    pub fn name(self) -> &'static str {
        match self {
            ProbeOrder::Sequential => "sequential",
            ProbeOrder::Parallel => "parallel",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<ProbeOrder> {
        ProbeOrder::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// One PCI function asking for MSI-X vectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    pub name: String,
    /// Vectors granted, pre and post vectors included.
    pub vectors: u32,
    pub(crate) pre_vectors: u32,
    pub(crate) post_vectors: u32,
    /// Interrupt sets (`None`: one set of all affinity vectors).
    pub(crate) sets: Option<Vec<u32>>,
    /// `false`: the driver allocates without `PCI_IRQ_AFFINITY` (all vectors non-managed).
    pub(crate) managed_affinity: bool,
    /// The device's NUMA node as given, used for vectors without affinity descriptors
    /// ([`Scenario::device_node`] is the node the kernel gives it).
    pub(crate) node: Option<u32>,
    /// A Hyper-V vPCI device: without `node`, its release decides (`HV_PCI_NODES`).
    pub(crate) hv_pci: bool,
    pub(crate) blk_mq: Option<BlkMqSource>,
    /// Queue count for the blk-mq map (`None`: the first set's size).
    pub(crate) blk_mq_queues: Option<u32>,
    pub driver: Driver,
}

impl Device {
    /// Queue vectors the device offers: its affinity vectors, or for MANA every vector but
    /// the HWC's.
    pub(crate) fn queue_vectors(&self) -> u32 {
        match self.driver {
            Driver::Generic | Driver::Nvme => self.affinity_vectors(),
            Driver::Mana { .. } => self.vectors.saturating_sub(1),
        }
    }

    /// Vectors that get affinity: all but the pre and post vectors.
    pub(crate) fn affinity_vectors(&self) -> u32 {
        affinity_vectors(&self.affinity_request())
    }

    fn affinity_request(&self) -> AffinityRequest {
        AffinityRequest {
            nvecs: self.vectors,
            pre_vectors: self.pre_vectors,
            post_vectors: self.post_vectors,
            sets: self.sets.clone(),
        }
    }
}

/// A validated scenario. Build it with [`Scenario::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    topology: Arc<Topology>,
    devices: Vec<Device>,
    variant: Variant,
    sort: SortGen,
    effective: EffectiveModel,
    spread_counter: u32,
    /// A `policy` proposal that forms the managed masks instead of `irq_create_affinity_masks`
    /// (`None`: the kernel variant does, as always).
    proposal: Option<Proposal>,
    /// Kernel command-line settings and the vectors other interrupts hold (all unset: the
    /// behaviour of every scenario written before they existed).
    boot: BootParams,
    /// What `boot` means once validated against the topology.
    boot_state: BootState,
    /// Outside code (`c:NAME`, the user's own C) that answers the `group_cpus_evenly()`
    /// calls in place of `variant` (`None`: the named model does, as always).
    external: Option<External>,
    /// The probe order the user named (`None`: sequential, as every scenario written before
    /// the option existed).
    probe: Option<ProbeOrder>,
    /// What the kernel release decides beyond variant, sort and effective model (all unset:
    /// the behaviour of every scenario written before a release could be named).
    kernel: KernelPick,
}

/// Boot parameters that move interrupts, and the vectors held before the first device, as
/// the user wrote them (the command line and permalinks carry this text).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BootParams {
    /// `irqaffinity=LIST`: the default affinity of non-managed interrupts.
    pub irqaffinity: Option<String>,
    /// `isolcpus=[FLAGS,]LIST`; `managed_irq` keeps managed interrupts on housekeeping CPUs.
    pub isolcpus: Option<String>,
    /// `nohz_full=LIST` (checked as the kernel checks it; moves no interrupt).
    pub nohz_full: Option<String>,
    /// Vectors other interrupts hold per CPU before the first device: `CPUS:N,...` with CPUS a
    /// CPU or a range `a-b` (e.g. `0:16,1-3:2`).
    pub vectors_held: Option<String>,
}

impl BootParams {
    pub(crate) fn is_empty(&self) -> bool {
        *self == BootParams::default()
    }

    /// Each parameter by its kernel name (`nohz_full`; `vectors_held`, which is not one, as
    /// the JSON spells it) with its text, in the command line's order.
    pub(crate) fn named(&self) -> [(&'static str, &Option<String>); 4] {
        [
            ("irqaffinity", &self.irqaffinity),
            ("isolcpus", &self.isolcpus),
            ("nohz_full", &self.nohz_full),
            ("vectors_held", &self.vectors_held),
        ]
    }
}

/// Longest boot-parameter text.
pub(crate) const BOOT_PARAM_BYTES_MAX: usize = 64 << 10;

/// Validated [`BootParams`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct BootState {
    /// `irq_default_affinity` when `irqaffinity=` is given.
    default_affinity: Option<CpuSet>,
    /// `housekeeping_cpumask(HK_TYPE_MANAGED_IRQ)` when enabled.
    managed_irq_housekeeping: Option<CpuSet>,
    /// Vectors held per CPU (index = CPU).
    held: Vec<u32>,
}

/// Parse `vectors_held` text (`CPUS:N,...`) for `n` CPU ids.
pub(crate) fn parse_vectors_held(text: &str, n: u32) -> Result<Vec<u32>, ScenarioError> {
    let mut held = vec![0u32; n as usize];
    let mut seen = CpuSet::new(n);
    let bad = |why: String| {
        ScenarioError(format!(
            "vectors_held {:?}: {why} (form: CPUS:N,..., e.g. 0:16,1-3:2)",
            shorten(text)
        ))
    };
    for item in text.split(',').filter(|i| !i.trim().is_empty()) {
        let (cpus, count) = item
            .split_once(':')
            .ok_or_else(|| bad(format!("{item:?} is not CPUS:N")))?;
        let count: u32 = count
            .trim()
            .parse()
            .map_err(|_| bad(format!("{count:?} is not a number")))?;
        let (a, b) = match cpus.split_once('-') {
            Some((a, b)) => (a, b),
            None => (cpus, cpus),
        };
        let num = |x: &str| {
            x.trim()
                .parse::<u32>()
                .map_err(|_| bad(format!("{x:?} is not a CPU number")))
        };
        let (a, b) = (num(a)?, num(b)?);
        if a > b || b >= n {
            return Err(bad(format!("CPUs {cpus:?} are not a range of CPU ids below {n}")));
        }
        for cpu in a..=b {
            if seen.contains(cpu) {
                return Err(bad(format!("CPU {cpu} is given twice")));
            }
            seen.insert(cpu);
            held[cpu as usize] = count;
        }
    }
    Ok(held)
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ScenarioError(pub String);

/// A device's `name`: 1 to [`DEVICE_NAME_BYTES_MAX`] bytes, no spaces, commas or control
/// characters, not used by an earlier device (`names`).
fn check_device_name<'a>(d: &'a Device, names: &mut BTreeSet<&'a str>) -> Result<(), String> {
    if d.name.is_empty() || d.name.len() > DEVICE_NAME_BYTES_MAX {
        return Err(format!("a name needs 1 to {DEVICE_NAME_BYTES_MAX} bytes"));
    }
    if d.name.chars().any(|c| c.is_control() || c.is_whitespace() || c == ',') {
        return Err("names may not hold spaces, commas or control characters".into());
    }
    if !names.insert(d.name.as_str()) {
        return Err("the name is used twice".into());
    }
    Ok(())
}

/// A device's `vectors`, `pre_vectors`, `post_vectors` and `sets`: what
/// `irq_create_affinity_masks()` can be asked for.
fn check_device_vectors(d: &Device) -> Result<(), String> {
    if d.vectors == 0 || d.vectors > VECTORS_PER_DEVICE_MAX {
        return Err(format!(
            "{} vectors; a device has 1 to {VECTORS_PER_DEVICE_MAX}",
            d.vectors
        ));
    }
    if u64::from(d.pre_vectors) + u64::from(d.post_vectors) > u64::from(d.vectors) {
        return Err(format!(
            "pre + post vectors ({} + {}) exceed its {} vectors",
            d.pre_vectors, d.post_vectors, d.vectors
        ));
    }
    if let Some(sets) = &d.sets {
        if sets.is_empty() || sets.len() > SETS_MAX {
            return Err(format!(
                "1 to {SETS_MAX} interrupt sets (the kernel takes {IRQ_AFFINITY_MAX_SETS})"
            ));
        }
        let sum: u64 = sets.iter().map(|&s| u64::from(s)).sum();
        if sum > u64::from(d.affinity_vectors()) {
            return Err(format!(
                "the sets add up to {sum}, more than its {} affinity vectors",
                d.affinity_vectors()
            ));
        }
    }
    Ok(())
}

/// A device's `node`: one the machine has.
fn check_device_node(d: &Device, topology: &Topology) -> Result<(), String> {
    match d.node {
        Some(node) if node >= topology.nr_node_ids() => Err(format!(
            "node {node} does not exist (nr_node_ids {})",
            topology.nr_node_ids()
        )),
        _ => Ok(()),
    }
}

/// A device's `blk_mq_queues`: 1 to [`VECTORS_PER_DEVICE_MAX`], and only with a `blk_mq` map.
fn check_device_blk_mq(d: &Device) -> Result<(), String> {
    if let Some(q) = d.blk_mq_queues {
        if q == 0 || q > VECTORS_PER_DEVICE_MAX {
            return Err(format!("{q} blk-mq queues; 1 to {VECTORS_PER_DEVICE_MAX}"));
        }
        if d.blk_mq.is_none() {
            return Err("a blk-mq queue count needs a blk-mq map (irq or cpumap)".into());
        }
    }
    Ok(())
}

/// A MANA device (`driver`): the HWC and at least one queue vector, its own IRQ setup (no
/// pre, post, sets, managed affinity or blk-mq map), the x86 vector matrix, and a machine
/// within the MANA model's limits.
fn check_mana_device(d: &Device, topology: &Topology, effective: EffectiveModel) -> Result<(), String> {
    if !d.driver.is_mana() {
        return Ok(());
    }
    if d.vectors < 2 {
        return Err("a MANA device needs at least 1 queue vector beside the HWC".into());
    }
    if d.pre_vectors > 0 || d.post_vectors > 0 || d.sets.is_some() {
        return Err("MANA sets its own IRQs up; pre, post and sets do not apply".into());
    }
    if d.managed_affinity {
        return Err("MANA IRQs are not managed (managed=no)".into());
    }
    if d.blk_mq.is_some() || d.blk_mq_queues.is_some() {
        return Err("a MANA device has no blk-mq map".into());
    }
    if effective != EffectiveModel::X86Matrix {
        return Err("the MANA model places IRQs by the x86 vector matrix; use the x86-matrix effective model".into());
    }
    if topology.nr_node_ids() as usize > crate::kernel::mana::NODES_MAX {
        return Err(format!(
            "the MANA model takes at most {} nodes",
            crate::kernel::mana::NODES_MAX
        ));
    }
    if topology.nr_cpu_ids() as usize > crate::kernel::mana::CPUS_MAX {
        return Err(format!(
            "the MANA model takes at most {} CPUs",
            crate::kernel::mana::CPUS_MAX
        ));
    }
    Ok(())
}

impl Scenario {
    pub fn new(
        topology: Arc<Topology>,
        devices: Vec<Device>,
        variant: Variant,
        sort: SortGen,
        effective: EffectiveModel,
        spread_counter: u32,
    ) -> Result<Scenario, ScenarioError> {
        let err = |m: String| Err(ScenarioError(m));
        if devices.len() > DEVICES_MAX {
            return err(format!("{} devices; at most {DEVICES_MAX} are allowed", devices.len()));
        }
        let mut names = BTreeSet::new();
        let mut total: u64 = 0;
        for (i, d) in devices.iter().enumerate() {
            let at = format!("device {} ({:?})", i, shorten(&d.name));
            let checked = check_device_name(d, &mut names)
                .and_then(|()| check_device_vectors(d))
                .and_then(|()| check_device_node(d, &topology))
                .and_then(|()| check_device_blk_mq(d))
                .and_then(|()| check_mana_device(d, &topology, effective));
            if let Err(m) = checked {
                return err(format!("{at}: {m}"));
            }
            total += u64::from(d.vectors);
        }
        if total > VECTORS_TOTAL_MAX {
            return err(format!("{total} vectors in all; at most {VECTORS_TOTAL_MAX}"));
        }
        Ok(Scenario {
            topology,
            devices,
            variant,
            sort,
            effective,
            spread_counter,
            proposal: None,
            boot: BootParams::default(),
            boot_state: BootState::default(),
            external: None,
            probe: None,
            kernel: KernelPick::default(),
        })
    }

    /// The same scenario with what a kernel release picks beyond the variant, sort and effective
    /// model (the `irq_create_affinity_masks()` era, the blk-mq mapper, the vectors a CPU has).
    /// Held vectors already given must fit the new count.
    pub(crate) fn with_kernel(&self, kernel: KernelPick) -> Result<Scenario, ScenarioError> {
        let per_cpu = kernel.vectors();
        if per_cpu == 0 || per_cpu > crate::kernel::vector_matrix::VECTORS_PER_CPU_MAX {
            return Err(ScenarioError(format!("vectors_per_cpu {per_cpu}: out of range")));
        }
        if let Some((cpu, h)) = self.boot_state.held.iter().enumerate().find(|(_, &h)| h > per_cpu) {
            return Err(ScenarioError(format!(
                "vectors_held: CPU {cpu} holds {h}, more than the {per_cpu} vectors a CPU has for devices"
            )));
        }
        Ok(Scenario { kernel, ..self.clone() })
    }

    /// What the kernel release picks beyond the variant, sort and effective model.
    /// The NUMA node the kernel gives `dev`: the one given, else for a Hyper-V vPCI device what
    /// the release (the newest without one) gives a device the host says nothing about, else
    /// `NUMA_NO_NODE` (`None`).
    pub(crate) fn device_node(&self, dev: &Device) -> Option<u32> {
        dev.node.or_else(|| {
            let release = self.kernel.release().unwrap_or(crate::kernel::release::NEWEST);
            dev.hv_pci
                .then(|| {
                    crate::kernel::release::generation(release)
                        .hv_pci_node
                        .node(self.topology().arch())
                })
                .flatten()
        })
    }

    pub(crate) fn kernel_pick(&self) -> &KernelPick {
        &self.kernel
    }

    /// The same scenario with boot parameters and held vectors, validated against the
    /// topology: each list names existing CPUs, `isolcpus=`/`nohz_full=` pass the kernel's
    /// `housekeeping_setup()` checks, a CPU holds at most the vectors its space has and only
    /// online CPUs hold any.
    pub(crate) fn with_boot(&self, boot: BootParams) -> Result<Scenario, ScenarioError> {
        let topo = &self.topology;
        let n = topo.nr_cpu_ids();
        for (name, text) in boot.named() {
            if text.as_ref().is_some_and(|t| t.len() > BOOT_PARAM_BYTES_MAX) {
                return Err(ScenarioError(format!(
                    "{name}: longer than {BOOT_PARAM_BYTES_MAX} bytes"
                )));
            }
        }
        let mut state = BootState::default();
        if let Some(text) = &boot.irqaffinity {
            let list =
                crate::topology::parse_cpulist(text, n).map_err(|e| ScenarioError(format!("irqaffinity: {e}")))?;
            state.default_affinity = Some(irq_affinity_setup(&list, n));
        }
        let possible = CpuSet::full(n);
        let mut hk = Housekeeping::default();
        if let Some(text) = &boot.isolcpus {
            hk.isolcpus_setup(text, &possible, topo.online())
                .map_err(ScenarioError)?;
        }
        if let Some(text) = &boot.nohz_full {
            hk.nohz_full_setup(text, &possible, topo.online())
                .map_err(ScenarioError)?;
        }
        state.managed_irq_housekeeping = hk.cpumask(HkType::ManagedIrq).cloned();
        if let Some(text) = &boot.vectors_held {
            let held = parse_vectors_held(text, n)?;
            for (cpu, &h) in held.iter().enumerate() {
                if h > 0 && !topo.online().contains(cpu as u32) {
                    return Err(ScenarioError(format!(
                        "vectors_held: CPU {cpu} is offline and holds no vectors"
                    )));
                }
                let per_cpu = self.kernel.vectors();
                if h > per_cpu {
                    return Err(ScenarioError(format!(
                        "vectors_held: CPU {cpu} holds {h}, more than the {per_cpu} vectors a CPU has for devices"
                    )));
                }
            }
            state.held = held;
        }
        Ok(Scenario {
            boot,
            boot_state: state,
            ..self.clone()
        })
    }

    pub(crate) fn boot(&self) -> &BootParams {
        &self.boot
    }

    pub fn topology(&self) -> &Topology {
        &self.topology
    }
    pub fn topology_arc(&self) -> &Arc<Topology> {
        &self.topology
    }
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }
    pub fn variant(&self) -> Variant {
        self.variant
    }
    pub(crate) fn sort(&self) -> SortGen {
        self.sort
    }
    pub(crate) fn effective(&self) -> EffectiveModel {
        self.effective
    }
    /// This scenario probed in `order` (indexes into its device list) from counter
    /// `counter`: an ordinary fixed-order scenario (`analysis::orders`).
    pub fn reordered(&self, order: &[usize], counter: u32) -> Scenario {
        let mut s = self.clone();
        s.devices = order.iter().map(|&i| self.devices[i].clone()).collect();
        s.spread_counter = counter;
        s
    }

    pub(crate) fn spread_counter(&self) -> u32 {
        self.spread_counter
    }

    /// Each device's class: devices equal but for the name share one (numbered from 0 in
    /// list order). Such devices are interchangeable in every order.
    pub(crate) fn device_classes(&self) -> Vec<usize> {
        let mut reps: Vec<Device> = Vec::new();
        self.devices
            .iter()
            .map(|d| {
                let key = Device {
                    name: String::new(),
                    ..d.clone()
                };
                match reps.iter().position(|r| *r == key) {
                    Some(i) => i,
                    None => {
                        reps.push(key);
                        reps.len() - 1
                    }
                }
            })
            .collect()
    }

    pub(crate) fn proposal(&self) -> Option<Proposal> {
        self.proposal
    }

    /// The outside code that answers `group_cpus_evenly()` here, if any (`c:NAME`).
    pub fn external(&self) -> Option<&External> {
        self.external.as_ref()
    }

    /// The same scenario with outside code answering the `group_cpus_evenly()` calls (or,
    /// with `None`, the named variant).
    pub fn with_external(&self, external: Option<External>) -> Scenario {
        Scenario {
            external,
            ..self.clone()
        }
    }

    /// Which code answers the `group_cpus_evenly()` calls.
    pub fn spreader(&self) -> Spreader<'_> {
        match &self.external {
            Some(e) => Spreader::External(&*e.0),
            None => Spreader::Model(self.variant, self.sort),
        }
    }

    /// The variant's name as reports and links print it: the model's, or `c:NAME`.
    pub(crate) fn variant_name(&self) -> &str {
        match &self.external {
            Some(e) => e.0.name(),
            None => self.variant.name(),
        }
    }

    /// One line saying what code the variant runs.
    pub(crate) fn variant_describe(&self) -> &str {
        match &self.external {
            Some(e) => e.0.describe(),
            None => self.variant.describe(),
        }
    }

    /// Whether the variant reads and advances the rotation counter.
    pub(crate) fn variant_uses_counter(&self) -> bool {
        match &self.external {
            Some(e) => e.0.uses_counter(),
            None => self.variant.uses_counter(),
        }
    }

    /// The probe order as named (`None`: unset, which runs sequentially).
    pub(crate) fn probe(&self) -> Option<ProbeOrder> {
        self.probe
    }

    /// The same scenario with a probe order (`None`: unset).
    pub(crate) fn with_probe(&self, probe: Option<ProbeOrder>) -> Scenario {
        Scenario { probe, ..self.clone() }
    }

    /// The same scenario with its managed masks formed by a `policy` proposal (or, with
    /// `None`, by the kernel variant).
    pub fn with_proposal(&self, proposal: Option<Proposal>) -> Scenario {
        Scenario {
            proposal,
            ..self.clone()
        }
    }

    /// The same scenario under another variant / counter / effective model.
    pub fn with(&self, variant: Variant, sort: SortGen, effective: EffectiveModel, spread_counter: u32) -> Scenario {
        Scenario {
            variant,
            sort,
            effective,
            spread_counter,
            ..self.clone()
        }
    }
}

fn shorten(s: &str) -> String {
    s.chars().take(40).collect()
}

/// One vector of one device after the probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorOutcome {
    pub(crate) index: u32,
    /// The requested affinity mask (the default all-CPU mask where the kernel sets no other).
    pub mask: CpuSet,
    pub managed: bool,
    /// Where the vector fires; `None` for a managed vector with no online CPU (shut down).
    pub effective_cpu: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceOutcome {
    pub name: String,
    /// `irq_create_affinity_masks` returned NULL or was not used.
    pub(crate) affinity_null: bool,
    /// Counter values this device's affinity calls consumed, in call order.
    pub(crate) spread_offsets: Vec<u32>,
    pub vectors: Vec<VectorOutcome>,
    pub(crate) blk_mq_map: Option<Vec<Option<u32>>>,
    pub(crate) blk_mq_spread_offsets: Option<Vec<u32>>,
    /// NVMe: counter values its admin tag set's `blk_mq_map_queues()` consumed (empty unless
    /// one-group calls take one); `None` for a device without an admin tag set.
    pub(crate) admin_spread_offsets: Option<Vec<u32>>,
    pub(crate) warnings: Vec<KernelWarn>,
    /// The MANA model's whole account (steps, load breakdown) for a MANA device.
    pub mana: Option<ManaOutcome>,
    /// The allocation failed before any vector was taken (the device got none).
    pub alloc_failed: Option<AllocFailure>,
}

/// Why a device's whole MSI-X allocation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocFailure {
    /// `alloc_descs()` refused a descriptor with an empty affinity mask (`-EINVAL`), as the
    /// `numgrps` era of `irq_create_affinity_masks()` gives a set with more vectors than groups
    /// could be made, and `rotation-v1` near 2^32 inside `nummasks` (`kernel::irqdesc`).
    EmptyMask { vector: u32 },
}

impl std::fmt::Display for AllocFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AllocFailure::EmptyMask { vector } => write!(
                f,
                "MSI-X allocation fails with -EINVAL: alloc_descs() refuses vector {vector}, whose affinity mask is empty, and the vectors before it are freed (the PCI core then retries with {vector} vectors: not modelled)"
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub devices: Vec<DeviceOutcome>,
    pub(crate) spread_counter_after: u32,
    /// The x86 vector space after the probe, and where it ran out.
    pub vector_space: VectorSpace,
}

/// A vector the kernel could not give a device (`-ENOSPC`, or `-EINVAL` for an empty mask).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VectorFailure {
    pub(crate) device: String,
    pub(crate) vector: u32,
    pub(crate) managed: bool,
    /// Which kernel call refused: `alloc_descs()`, or a matrix call (for a reservation, on
    /// which CPU).
    pub(crate) error: VectorError,
}

/// Why a vector got none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum VectorError {
    /// `-EINVAL` from `alloc_descs()` (kernel/irq/irqdesc.c), which refuses an affinity
    /// descriptor with an empty mask before any vector is looked for, failing the allocation
    /// (the `numgrps` era past the groups made; `rotation-v1` near 2^32 inside `nummasks`).
    /// The device's whole allocation fails ([`AllocFailure`]). MSI-X descriptors are allocated
    /// one by one (`__msi_domain_alloc_irqs()`), so `msi_handle_pci_fail()` returns the count
    /// allocated before the failing one and `__pci_enable_msix_range()` retries with that many
    /// vectors, spreading them anew; the retry is not modelled.
    EmptyAffinity,
    /// The vector matrix refused (`-ENOSPC`, or `-EINVAL` for an empty search mask).
    Matrix(MatrixError),
}

impl VectorError {
    /// The kernel's error number, as a word.
    pub(crate) fn errno(&self) -> &'static str {
        match self {
            VectorError::EmptyAffinity | VectorError::Matrix(MatrixError::EmptyMask) => "EINVAL",
            VectorError::Matrix(_) => "ENOSPC",
        }
    }

    /// The CPU a managed reservation failed on.
    pub(crate) fn cpu(&self) -> Option<u32> {
        match self {
            VectorError::Matrix(MatrixError::ReserveManaged { cpu }) => Some(*cpu),
            _ => None,
        }
    }
}

impl std::fmt::Display for VectorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VectorError::EmptyAffinity => write!(
                f,
                "alloc_descs() refuses its empty affinity mask and the MSI-X allocation fails \
                 there; the PCI core then retries with as many vectors as were allocated before \
                 it (msi_handle_pci_fail(), __pci_enable_msix_range())"
            ),
            VectorError::Matrix(e) => e.fmt(f),
        }
    }
}

impl VectorFailure {
    /// "reservation" or "allocation".
    pub(crate) fn stage(&self) -> &'static str {
        match self.error {
            VectorError::Matrix(MatrixError::ReserveManaged { .. }) => "reservation",
            _ => "allocation",
        }
    }
}

/// The vector matrix after the probe (x86 model only; `tracked == false` under `first-cpu`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VectorSpace {
    pub(crate) tracked: bool,
    /// Vectors a device may hold on one CPU.
    pub(crate) capacity: u32,
    /// Per possible CPU (index = CPU id).
    pub(crate) per_cpu: Vec<CpuMap>,
    pub(crate) global_available: u32,
    pub(crate) global_reserved: u32,
    pub(crate) total_allocated: u32,
    /// Vectors that got none, in probe order; the first is the kernel's first failure.
    pub(crate) failures: Vec<VectorFailure>,
    /// Non-managed vectors placed outside their affinity mask because it was full (the
    /// kernel prints "Affinity broken due to vector space exhaustion").
    pub(crate) affinity_broken: Vec<(String, u32)>,
    /// The first non-managed allocation whose global reservation met `global_available`
    /// (`irq_matrix_reserve()` prints "Interrupt reservation exceeds available resources").
    pub(crate) reservation_exceeded: Option<(String, u32)>,
}

impl VectorSpace {
    pub(crate) fn first_failure(&self) -> Option<&VectorFailure> {
        self.failures.first()
    }
    /// The vectors the matrix refused: every failure but `alloc_descs()`'s, whose device's
    /// whole allocation failed and is told by its [`AllocFailure`].
    pub(crate) fn matrix_failures(&self) -> impl Iterator<Item = &VectorFailure> {
        self.failures
            .iter()
            .filter(|f| !matches!(f.error, VectorError::EmptyAffinity))
    }
    /// Whether the vector space ran out anywhere (a failure, a broken affinity or an
    /// over-reservation).
    pub(crate) fn exhausted(&self) -> bool {
        !self.failures.is_empty() || !self.affinity_broken.is_empty() || self.reservation_exceeded.is_some()
    }
}

impl Outcome {
    pub(crate) fn warnings(&self) -> impl Iterator<Item = (&str, &KernelWarn)> {
        self.devices
            .iter()
            .flat_map(|d| d.warnings.iter().map(move |w| (d.name.as_str(), w)))
    }
}

/// Probe every device in order and report where each vector landed.
///
/// Vector space (x86 model): before the first device the matrix holds `vectors_held`. For each
/// device, allocation (`x86_vector_alloc_irqs()`, index order) reserves a managed slot on every
/// CPU of each managed mask (`irq_matrix_reserve_managed()`) and makes a global reservation
/// for each non-managed vector (`irq_matrix_reserve()`); activation (index order) allocates the
/// real vector. A vector whose reservation or allocation fails gets no CPU and is recorded in
/// [`VectorSpace::failures`]; the devices go on as if the driver had ignored the error, which
/// the kernel does not promise (driver fallbacks are out of scope). A managed vector moved to
/// a housekeeping CPU (`isolcpus=managed_irq`) keeps its first vector until the device's probe
/// ends, then frees it (`irq_matrix_free()`, the reservation stays).
///
/// Under `arm64-its` allocation activates each vector on the least-loaded online CPU of the
/// machine (`its_irq_domain_activate()`), and the request moves it to the least-loaded CPU of
/// the mask the kernel programs (`its_set_affinity()`), releasing the first slot; the held
/// vectors count as other drivers' unmanaged LPIs.
///
/// For scenarios of named models only (what [`spec::ScenarioSpec::resolve`] and
/// [`Scenario::new`] give): only outside code can fail, so every caller that may hold a `c:`
/// scenario (the pages, the CLI, sweeps, golden cases, live-vs-model) calls [`try_run`].
pub fn run(scenario: &Scenario) -> Outcome {
    try_run(scenario).expect("a named model answers every call; c: variants run through try_run")
}

impl VectorSpace {
    fn finish(mut self, matrix: &VectorMatrix) -> VectorSpace {
        let m = matrix.matrix();
        self.tracked = matrix.model() == EffectiveModel::X86Matrix;
        self.capacity = m.capacity();
        self.per_cpu = (0..m.nr_cpu_ids()).map(|c| m.cpu(c)).collect();
        self.global_available = m.global_available();
        self.global_reserved = m.global_reserved();
        self.total_allocated = m.total_allocated();
        self
    }
}

/// The descriptors `irq_create_affinity_masks` would build, with each set's masks formed by a
/// proposal: pre vectors, then each set's groups, then the default mask for the rest; the
/// affinity vectors are managed. The same NULL cases as the kernel's.
fn proposal_masks(
    topo: &Topology,
    req: &AffinityRequest,
    proposal: Proposal,
    effective: EffectiveModel,
    default: &CpuSet,
    probed: &ProbedLoad,
    warnings: &mut Vec<KernelWarn>,
) -> Option<AffinityMasks> {
    let (affvecs, sets) = affinity_sets(req, warnings)?;
    // A set of size 0 is NULL from group_cpus_evenly, so NULL for the whole call.
    if sets.contains(&0) {
        return None;
    }
    let fires = match effective {
        EffectiveModel::X86Matrix => Fires::LeastLoaded,
        EffectiveModel::FirstCpu | EffectiveModel::Arm64GicV5 => Fires::LowestCpu,
        EffectiveModel::Arm64Its => Fires::LeastLoadedLowest,
    };
    let mut load = probed.clone();
    let mut masks: Vec<CpuSet> = vec![default.clone(); req.pre_vectors as usize];
    for &this_vecs in &sets {
        let set_masks = match proposal {
            Proposal::OffsetByProbed => offset_by_probed(topo, this_vecs, fires, &mut load),
        };
        masks.extend(set_masks);
    }
    masks.truncate((req.pre_vectors + affvecs) as usize);
    masks.resize(req.nvecs as usize, default.clone());
    let descs = descs_of(masks, req.pre_vectors as usize..(req.nvecs - req.post_vectors) as usize);
    Some(AffinityMasks {
        descs,
        spread_offsets: Vec::new(),
    })
}

/// A MANA device: its IRQs are placed by `kernel::mana` on the vector load the earlier devices
/// left, and the load it leaves is written back for the devices after it. Vectors MANA left
/// behind by moves are released once its setup ends (the first interrupt on each new vector
/// frees the old one, spec A.2), so later devices see the pre-existing load plus MANA's own.
#[allow(clippy::too_many_arguments)]
fn run_mana(
    topo: &Topology,
    dev: &Device,
    node: Option<u32>,
    patched: bool,
    mode: MsixMode,
    matrix: &mut VectorMatrix,
    boot: &BootState,
    space: &mut VectorSpace,
) -> DeviceOutcome {
    let version = if patched {
        DriverVersion::Patched
    } else {
        DriverVersion::Unpatched
    };
    let mut input = mana_input(topo, node, mode, dev.vectors, matrix.vector_load());
    input.default_affinity = boot.default_affinity.as_ref().map(|d| d.iter().collect());
    let default = boot
        .default_affinity
        .clone()
        .unwrap_or_else(|| CpuSet::full(topo.nr_cpu_ids()));
    let (vectors, mana) = match crate::kernel::mana::run(&input, version) {
        Ok(o) => {
            let after: Vec<u32> = o.load_breakdown.iter().map(|b| b.pre_existing + b.mana_held).collect();
            // The MANA model counts vectors without a limit; the matrix holds them to the CPU's
            // space, and the first IRQ on a CPU it overfills is the failure.
            if let Err(cpu) = matrix.set_vector_load(&after) {
                if let Some(irq) = o.irqs.iter().find(|i| i.effective_cpu == cpu) {
                    space.failures.push(VectorFailure {
                        device: dev.name.clone(),
                        vector: irq.index,
                        managed: false,
                        error: VectorError::Matrix(MatrixError::Alloc { managed: false }),
                    });
                }
            }
            let vectors = o
                .irqs
                .iter()
                .map(|irq| VectorOutcome {
                    index: irq.index,
                    mask: match &irq.affinity {
                        Some(cpus) => {
                            let mut m = CpuSet::new(topo.nr_cpu_ids());
                            cpus.iter().for_each(|&c| m.insert(c));
                            m
                        }
                        None => default.clone(),
                    },
                    managed: false,
                    effective_cpu: Some(irq.effective_cpu),
                })
                .collect();
            (vectors, Some(o))
        }
        // Scenario::new rules out every input the model refuses; keep going without IRQs if
        // that ever changes.
        Err(_) => (Vec::new(), None),
    };
    DeviceOutcome {
        name: dev.name.clone(),
        affinity_null: true,
        spread_offsets: Vec::new(),
        vectors,
        blk_mq_map: None,
        blk_mq_spread_offsets: None,
        admin_spread_offsets: None,
        warnings: Vec::new(),
        mana,
        alloc_failed: None,
    }
}

#[cfg(test)]
mod tests {
    use super::spec::{expand_devices, parse_device_token};
    use super::*;

    fn scenario(preset: &str, tokens: &[&str], variant: Variant, counter: u32, probe: Option<ProbeOrder>) -> Scenario {
        let specs: Vec<_> = tokens.iter().map(|t| parse_device_token(t).unwrap()).collect();
        Scenario::new(
            crate::catalogue::get(preset).unwrap(),
            expand_devices(&specs).unwrap(),
            variant,
            SortGen::HeapV6_11,
            EffectiveModel::X86Matrix,
            counter,
        )
        .unwrap()
        .with_probe(probe)
    }

    /// Per device: the admin tag set's offsets (`None`: no admin tag set).
    type AdminOffsets = Vec<Option<Vec<u32>>>;

    /// (admin offsets, I/O offsets) per device, and the counter after.
    fn offsets(s: &Scenario) -> (AdminOffsets, Vec<Vec<u32>>, u32) {
        let o = run(s);
        (
            o.devices.iter().map(|d| d.admin_spread_offsets.clone()).collect(),
            o.devices.iter().map(|d| d.spread_offsets.clone()).collect(),
            o.spread_counter_after,
        )
    }

    /// Under `rotation-v1` each NVMe controller's admin tag set takes a counter value: probed
    /// one after another, the I/O spreads get c0+1, c0+3, …; probed in parallel, the admin tag
    /// sets take c0 .. c0+5 and the I/O spreads the next six, consecutive again.
    #[test]
    fn admin_tag_sets_under_rotation_v1() {
        let nvme = ["3x32:name=nvme,pre=1,driver=nvme"];
        for probe in [None, Some(ProbeOrder::Sequential)] {
            let (admin, io, after) = offsets(&scenario("azure-l48s-v2", &nvme, Variant::RotationV1, 5, probe));
            assert_eq!(admin, [Some(vec![5]), Some(vec![7]), Some(vec![9])]);
            assert_eq!(io, [vec![6], vec![8], vec![10]]);
            assert_eq!(after, 11);
        }
        let parallel = Some(ProbeOrder::Parallel);
        let (admin, io, after) = offsets(&scenario("azure-l48s-v2", &nvme, Variant::RotationV1, 5, parallel));
        assert_eq!(admin, [Some(vec![5]), Some(vec![6]), Some(vec![7])]);
        assert_eq!(io, [vec![8], vec![9], vec![10]]);
        assert_eq!(after, 11);
        // Without the driver there is no admin call: one tick per controller.
        let (admin, io, _) = offsets(&scenario(
            "azure-l48s-v2",
            &["3x32:name=nvme,pre=1"],
            Variant::RotationV1,
            5,
            parallel,
        ));
        assert_eq!(admin, [None, None, None]);
        assert_eq!(io, [vec![5], vec![6], vec![7]]);
        // A device without an admin tag set keeps its place in the order.
        let (admin, io, _) = offsets(&scenario(
            "azure-l48s-v2",
            &[
                "32:name=a,pre=1,driver=nvme",
                "8:name=nic,pre=1",
                "32:name=b,pre=1,driver=nvme",
            ],
            Variant::RotationV1,
            0,
            parallel,
        ));
        assert_eq!(admin, [Some(vec![0]), None, Some(vec![1])]);
        assert_eq!(io, [vec![2], vec![3], vec![4]]);
    }

    /// For every other variant the one-group call takes no counter value, so the admin tag set
    /// and the probe order change no vector and no offset.
    #[test]
    fn admin_tag_sets_change_nothing_for_other_variants() {
        for v in Variant::ALL.into_iter().filter(|&v| v != Variant::RotationV1) {
            let plain = run(&scenario("azure-d16plds-v6", &["2x6:name=nvme,pre=1"], v, 3, None));
            for probe in [None, Some(ProbeOrder::Sequential), Some(ProbeOrder::Parallel)] {
                let with = run(&scenario(
                    "azure-d16plds-v6",
                    &["2x6:name=nvme,pre=1,driver=nvme"],
                    v,
                    3,
                    probe,
                ));
                assert_eq!(with.spread_counter_after, plain.spread_counter_after, "{v:?}");
                for (a, b) in with.devices.iter().zip(&plain.devices) {
                    assert_eq!(a.admin_spread_offsets, Some(vec![]), "{v:?}");
                    assert_eq!(
                        (&a.vectors, &a.spread_offsets),
                        (&b.vectors, &b.spread_offsets),
                        "{v:?}"
                    );
                }
            }
        }
    }

    /// An empty managed mask inside `nummasks` (`rotation-v1` at offset 2^32-1 on 4 CPUs in 3
    /// groups: masks 0-1, 2-3 and none) fails the device's allocation in `alloc_descs()` with
    /// -EINVAL, under both effective models, instead of passing for a shut-down vector.
    #[test]
    fn empty_managed_mask_fails_the_allocation() {
        let topo = Arc::new(
            Topology::new(&toml::from_str::<crate::topology::TopologySpec>("name = \"t\"\nnodes = [\"0-3\"]").unwrap())
                .unwrap(),
        );
        for effective in [EffectiveModel::X86Matrix, EffectiveModel::FirstCpu] {
            let devices = expand_devices(&[parse_device_token("3:name=q").unwrap()]).unwrap();
            let s = Scenario::new(
                topo.clone(),
                devices,
                Variant::RotationV1,
                SortGen::HeapV6_11,
                effective,
                u32::MAX,
            )
            .unwrap();
            let o = run(&s);
            let masks: Vec<String> = o.devices[0].vectors.iter().map(|v| v.mask.to_cpulist()).collect();
            assert_eq!(masks, ["0-1", "2-3", ""]);
            // The allocation fails at vector 2: the two before it are freed again.
            assert!(o.devices[0].vectors.iter().all(|v| v.effective_cpu.is_none()));
            assert_eq!(o.devices[0].alloc_failed, Some(AllocFailure::EmptyMask { vector: 2 }));
            let f = o.vector_space.first_failure().expect("a failure");
            assert_eq!(
                (f.device.as_str(), f.vector, f.managed, &f.error),
                ("q", 2, true, &VectorError::EmptyAffinity)
            );
            assert_eq!((f.stage(), f.error.errno()), ("allocation", "EINVAL"));
            assert!(f.error.to_string().contains("alloc_descs()"));
            assert_eq!(o.vector_space.failures.len(), 1);
            // The same device one counter value earlier wraps nothing and allocates every vector.
            let o = run(&s.with(Variant::RotationV1, SortGen::HeapV6_11, effective, u32::MAX - 1));
            assert!(o.vector_space.failures.is_empty());
        }
    }
}
