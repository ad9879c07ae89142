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
mod outcome;
pub mod payloads;
mod probe;
pub use outcome::{run, AllocFailure, DeviceOutcome, Outcome, VectorOutcome, VectorSpace};
pub(crate) use outcome::{VectorError, VectorFailure};
pub use probe::{try_run, ProbeWalk, SpreadMemo};
pub mod permalink;
pub mod request;
pub mod sched;
pub mod spec;

pub(crate) use kernel::KernelPick;
pub use mana::mana_input;

use crate::kernel::irq_affinity::{affinity_vectors, AffinityRequest, IRQ_AFFINITY_MAX_SETS};
use crate::kernel::isolation::{HkType, Housekeeping};
use crate::kernel::mana::MsixMode;
use crate::kernel::manage::irq_affinity_setup;
use crate::kernel::vector_matrix::EffectiveModel;
use crate::kernel::{External, SortGen, Spreader, Variant};
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
