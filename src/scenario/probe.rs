// SPDX-License-Identifier: GPL-2.0-only
//! The probes of a scenario in the kernel's order. One device's probe is the steps a driver's
//! `pci_alloc_irq_vectors_affinity()` and `request_irq()` take through the kernel, each a
//! function here beside the kernel code it stands for:
//!
//! 1. the NVMe admin tag set (`blk_mq_alloc_tag_set()` of one queue): [`admin_tag_set`];
//! 2. `irq_create_affinity_masks()` (or a proposal's masks): [`Probe::affinity_masks`];
//! 3. `alloc_descs()`, which refuses an empty managed mask: [`Probe::alloc_descs_failed`];
//! 4. allocation in the vector domain (`x86_vector_alloc_irqs()`: managed reservations and
//!    global reservations; an ITS activates each MSI here): [`Probe::allocate`];
//! 5. activation at request (`activate_managed()` / `activate_reserved()` on x86,
//!    `its_set_affinity()` on an ITS), with the `isolcpus=managed_irq` move:
//!    [`Probe::activate`];
//! 6. the blk-mq map (`blk_mq_map_hw_queues()` or `blk_mq_map_queues()`): [`Probe::blk_mq_map`].
//!
//! The vector counts must balance across steps 4 and 5: every vector an ITS activated at
//! allocation is one LPI after its request moved it, and every vector that got a CPU holds one
//! allocation in the x86 matrix (checked by `debug_assert!`s in [`Probe::device`]).

use super::{
    mana_input, AllocFailure, BlkMqSource, BootState, Device, DeviceOutcome, Driver, Outcome, ProbeOrder, Scenario,
    VectorError, VectorFailure, VectorOutcome, VectorSpace,
};
use crate::kernel::blk_mq_cpumap::{blk_mq_map_hw_queues, blk_mq_map_queues_with};
use crate::kernel::irq_affinity::{
    affinity_sets, descs_of, irq_create_affinity_masks_with, AffinityMasks, AffinityRequest,
};
use crate::kernel::irqdesc::alloc_descs_empty_mask;
use crate::kernel::mana::{DriverVersion, MsixMode};
use crate::kernel::manage::{irq_setup_affinity_with, managed_irq_prog_mask};
use crate::kernel::vector_matrix::{EffectiveModel, MatrixError, VectorMatrix};
use crate::kernel::{BootMasks, ExternalError, KernelWarn};
use crate::policy::offset_by_probed::{offset_by_probed, Fires, ProbedLoad};
use crate::policy::Proposal;
use crate::topology::{CpuSet, Topology};
use std::collections::HashMap;

/// [`super::run`] for any scenario: the outcome, or why outside code (`c:NAME`) could not
/// answer.
pub fn try_run(scenario: &Scenario) -> Result<Outcome, ExternalError> {
    let mut memo = SpreadMemo::off();
    let mut walk = ProbeWalk::start(scenario, scenario.spread_counter, &mut memo)?;
    for index in 0..scenario.devices.len() {
        walk.push(index, &mut memo)?;
    }
    Ok(walk.finish())
}

/// A boot part-way through its probes: the kernel's state after some of the scenario's
/// devices, in the order they were pushed. [`try_run`] pushes every device in list order;
/// `analysis::orders` clones a walk to try each next device, so the orders sharing a prefix
/// probe it once.
#[derive(Clone)]
pub struct ProbeWalk<'s> {
    probe: Probe<'s>,
    /// Under parallel probing, the admin tag sets every NVMe controller maps before the first
    /// I/O spread, in the order the controllers take them (the k-th controller pushed takes
    /// the k-th: each depends only on the counter, never on the controller).
    admin: Vec<AdminTagSet>,
    next_admin: usize,
    devices: Vec<DeviceOutcome>,
}

impl<'s> ProbeWalk<'s> {
    /// The kernel before the first probe, the spread counter at `counter`; under parallel
    /// probing every admin tag set is mapped here.
    pub fn start(scenario: &'s Scenario, counter: u32, memo: &mut SpreadMemo) -> Result<ProbeWalk<'s>, ExternalError> {
        let mut probe = Probe::new(scenario, counter);
        let parallel = scenario.probe == Some(ProbeOrder::Parallel);
        let controllers = scenario.devices.iter().filter(|d| d.driver.has_admin_tag_set()).count();
        let mut admin = Vec::new();
        if parallel {
            for _ in 0..controllers {
                admin.push(memo.admin_tag_set(scenario, &mut probe.counter)?);
            }
        }
        Ok(ProbeWalk {
            probe,
            admin,
            next_admin: 0,
            devices: Vec::with_capacity(scenario.devices.len()),
        })
    }

    /// Probe the scenario's device `index` next.
    pub fn push(&mut self, index: usize, memo: &mut SpreadMemo) -> Result<(), ExternalError> {
        let dev = &self.probe.scenario.devices[index];
        let admin = if self.probe.parallel() && dev.driver.has_admin_tag_set() {
            let a = self.admin.get(self.next_admin).cloned();
            self.next_admin += 1;
            a
        } else {
            None
        };
        let out = self.probe.device(index, admin, memo)?;
        self.devices.push(out);
        Ok(())
    }

    /// The outcome of the devices pushed.
    pub(crate) fn finish(self) -> Outcome {
        let probe = self.probe;
        // Unfilled groups WARN only under the releases of the numgrps era.
        let era = probe.scenario.kernel.affinity_era();
        let mut devices = self.devices;
        for d in &mut devices {
            d.warnings = std::mem::take(&mut d.warnings)
                .into_iter()
                .map(|w| w.for_era(era))
                .collect();
        }
        Outcome {
            devices,
            spread_counter_after: probe.counter,
            vector_space: probe.space.finish(&probe.matrix),
        }
    }
}

/// What a device's probe computes from the device and the counter it starts from alone,
/// never from earlier devices' vectors: its admin tag set (probed sequentially), its
/// affinity masks and its blk-mq map, with each step's warnings and the counter after.
#[derive(Debug, Clone)]
struct Spread {
    admin: Option<AdminTagSet>,
    masks: Option<AffinityMasks>,
    mask_warnings: Vec<KernelWarn>,
    /// The vector `alloc_descs()` refuses for its empty mask (then no blk-mq map is made).
    empty_mask: Option<u32>,
    blk_mq: (BlkMqMap, Option<Vec<u32>>),
    blk_mq_warnings: Vec<KernelWarn>,
    counter_after: u32,
}

/// Spreads remembered by (device, counter start) across the runs of one scenario: a device's
/// masks and blk-mq map depend only on the machine, the device and the counter value it
/// receives (the vector matrix and the ITS counts, which earlier devices change, come after).
/// A proposal's masks read the load earlier probes left, so under a proposal nothing is
/// remembered. Devices equal but for the name share their spreads.
pub struct SpreadMemo {
    /// Per device of the scenario, its class (`Scenario::device_classes`); empty: off.
    class: Vec<usize>,
    spreads: HashMap<(usize, u32), Spread>,
    admin: HashMap<u32, (AdminTagSet, u32)>,
}

impl SpreadMemo {
    /// A memo for the runs of `scenario` (any order, any counter start).
    pub fn new(scenario: &Scenario) -> SpreadMemo {
        SpreadMemo {
            class: if scenario.proposal.is_none() {
                scenario.device_classes()
            } else {
                Vec::new()
            },
            ..SpreadMemo::off()
        }
    }

    /// A memo that remembers nothing (one run).
    pub fn off() -> SpreadMemo {
        SpreadMemo {
            class: Vec::new(),
            spreads: HashMap::new(),
            admin: HashMap::new(),
        }
    }

    fn admin_tag_set(&mut self, scenario: &Scenario, counter: &mut u32) -> Result<AdminTagSet, ExternalError> {
        if self.class.is_empty() {
            return admin_tag_set(scenario, counter);
        }
        if let Some((set, after)) = self.admin.get(counter) {
            *counter = *after;
            return Ok(set.clone());
        }
        let start = *counter;
        let set = admin_tag_set(scenario, counter)?;
        self.admin.insert(start, (set.clone(), *counter));
        Ok(set)
    }
}

/// A blk-mq map: the hardware queue of each CPU (`None`: unmapped).
type BlkMqMap = Option<Vec<Option<u32>>>;

/// What an admin tag set's map consumed: the counter values and the call's warnings.
type AdminTagSet = (Vec<u32>, Vec<KernelWarn>);

/// An NVMe controller's admin tag set: `blk_mq_alloc_tag_set()` of one hardware queue with no
/// `map_queues` op, so `blk_mq_map_queues()` (the release's mapper; the current one →
/// `group_cpus_evenly(1)`).
/// Returns the counter values it consumed and the warnings of the call, or why outside code
/// (`c:NAME`) could not answer it.
fn admin_tag_set(scenario: &Scenario, counter: &mut u32) -> Result<AdminTagSet, ExternalError> {
    let mut warnings = Vec::new();
    let default = default_affinity(scenario);
    let map = blk_mq_map_queues_with(
        scenario.topology(),
        scenario.kernel.blk_mq_mapper(),
        1,
        0,
        scenario.spreader(),
        boot_masks(scenario, &default),
        counter,
        &mut warnings,
    )?;
    Ok((map.spread_offsets, warnings))
}

/// `irq_default_affinity`: `irqaffinity=` (with the boot CPU) or every CPU.
fn default_affinity(scenario: &Scenario) -> CpuSet {
    scenario
        .boot_state
        .default_affinity
        .clone()
        .unwrap_or_else(|| CpuSet::full(scenario.topology().nr_cpu_ids()))
}

/// The boot parameters' masks the kernel's affinity code reads.
fn boot_masks<'a>(scenario: &'a Scenario, default: &'a CpuSet) -> BootMasks<'a> {
    BootMasks {
        default_affinity: default,
        managed_irq: scenario.boot_state.managed_irq_housekeeping.as_ref(),
    }
}

/// What the kernel carries from one probe to the next: the spread counter, the vector space
/// (x86 matrix or ITS LPI counts), its failures, and the load earlier probes left (which only
/// a proposal reads).
#[derive(Clone)]
struct Probe<'s> {
    scenario: &'s Scenario,
    topo: &'s Topology,
    default: CpuSet,
    counter: u32,
    matrix: VectorMatrix,
    space: VectorSpace,
    probed: ProbedLoad,
}

/// Where allocation left a device's vectors: those the matrix refused, and the CPU an ITS
/// activated each on (`None` elsewhere).
struct Allocated {
    failed: Vec<bool>,
    early: Vec<Option<u32>>,
}

impl<'s> Probe<'s> {
    fn new(scenario: &'s Scenario, counter: u32) -> Probe<'s> {
        let topo = scenario.topology();
        let mut matrix = VectorMatrix::with_vectors_per_cpu(topo, scenario.effective, scenario.kernel.vectors());
        for (cpu, &n) in scenario.boot_state.held.iter().enumerate() {
            // Scenario::with_boot checked every count against the CPU's space.
            let _ = matrix.hold(cpu as u32, n);
        }
        Probe {
            scenario,
            topo,
            default: default_affinity(scenario),
            counter,
            matrix,
            space: VectorSpace::default(),
            probed: ProbedLoad::new(topo.nr_cpu_ids()),
        }
    }

    fn parallel(&self) -> bool {
        self.scenario.probe == Some(ProbeOrder::Parallel)
    }

    /// Steps 1, 2 and 6 for a device from the current counter (advanced past them), from
    /// `memo` when it holds them: they read nothing earlier devices' vectors changed.
    fn spread(&mut self, index: usize, with_admin: bool, memo: &mut SpreadMemo) -> Result<Spread, ExternalError> {
        let Some(&class) = memo.class.get(index) else {
            return self.spread_now(&self.scenario.devices[index], with_admin);
        };
        if let Some(spread) = memo.spreads.get(&(class, self.counter)) {
            self.counter = spread.counter_after;
            return Ok(spread.clone());
        }
        let start = self.counter;
        let spread = self.spread_now(&self.scenario.devices[index], with_admin)?;
        memo.spreads.insert((class, start), spread.clone());
        Ok(spread)
    }

    /// Steps 1, 2 and 6 computed: the admin tag set (when `with_admin`), the masks and, unless
    /// `alloc_descs()` refuses a mask, the blk-mq map, in the kernel's order of counter values.
    fn spread_now(&mut self, dev: &Device, with_admin: bool) -> Result<Spread, ExternalError> {
        let admin = match with_admin {
            true => Some(admin_tag_set(self.scenario, &mut self.counter)?),
            false => None,
        };
        let mut mask_warnings = Vec::new();
        let masks = self.affinity_masks(dev, &mut mask_warnings)?;
        let empty_mask = masks.as_ref().and_then(|m| alloc_descs_empty_mask(&m.descs));
        let mut blk_mq_warnings = Vec::new();
        let blk_mq = match empty_mask {
            Some(_) => (None, None),
            None => self.blk_mq_map(dev, masks.as_ref(), &mut blk_mq_warnings)?,
        };
        Ok(Spread {
            admin,
            masks,
            mask_warnings,
            empty_mask,
            blk_mq,
            blk_mq_warnings,
            counter_after: self.counter,
        })
    }

    /// One device's probe, step by step (the module's list); `admin` is its admin tag set when
    /// the controllers probed in parallel mapped it already. The steps that read only the
    /// device and the counter (1, 2 and 6) come first, from `memo` when it holds them; the
    /// vector space's steps (3 to 5) follow.
    fn device(
        &mut self,
        index: usize,
        admin: Option<AdminTagSet>,
        memo: &mut SpreadMemo,
    ) -> Result<DeviceOutcome, ExternalError> {
        let dev = &self.scenario.devices[index];
        if let Driver::Mana { patched, mode } = dev.driver {
            let (boot, node) = (&self.scenario.boot_state, self.scenario.device_node(dev));
            return Ok(run_mana(
                self.topo,
                dev,
                node,
                patched,
                mode,
                &mut self.matrix,
                boot,
                &mut self.space,
            ));
        }
        let with_admin = admin.is_none() && dev.driver.has_admin_tag_set();
        let spread = self.spread(index, with_admin, memo)?;
        let (admin_spread_offsets, mut warnings) = match admin.or(spread.admin) {
            Some((offsets, warnings)) => (Some(offsets), warnings),
            None => (None, Vec::new()),
        };
        warnings.extend(spread.mask_warnings);
        let masks = spread.masks;
        if let Some(vector) = spread.empty_mask {
            let mut out = self.alloc_descs_failed(dev, masks.as_ref(), vector, warnings);
            out.admin_spread_offsets = admin_spread_offsets;
            return Ok(out);
        }
        let mut vectors = self.vectors(dev, masks.as_ref());
        let (before, failures_before) = (self.matrix.allocations(), self.space.failures.len());
        let allocated = self.allocate(dev, &vectors);
        let activated_early = allocated.early.iter().flatten().count() as u32;
        debug_assert_eq!(
            self.matrix.allocations().its_lpis,
            before.its_lpis + activated_early,
            "an ITS counts one LPI per vector it activated"
        );
        self.activate(dev, masks.is_some(), &mut vectors, allocated);
        // x86: one allocation per vector that got a CPU (a managed vector moved to a
        // housekeeping CPU freed its first one), and at most one more per vector refused after
        // activation (the old vector stays when apic_set_affinity() fails). An ITS moves LPIs
        // at request, never adds one.
        let placed = vectors.iter().filter(|v| v.effective_cpu.is_some()).count() as u32;
        let after = self.matrix.allocations();
        debug_assert_eq!(after.its_lpis, before.its_lpis + activated_early, "ITS LPIs at request");
        if self.matrix.model() == EffectiveModel::X86Matrix {
            let refused = (self.space.failures.len() - failures_before) as u32;
            debug_assert!(
                (placed..=placed + refused).contains(&(after.x86 - before.x86)),
                "x86 allocations {} -> {} for {placed} vectors placed",
                before.x86,
                after.x86
            );
        }
        // Managed vectors only: the matrix's managed-allocation count, the basis metrics use.
        for v in vectors.iter().filter(|v| v.managed) {
            if let Some(cpu) = v.effective_cpu {
                self.probed.add(cpu, v.mask.weight());
            }
        }
        let (blk_mq_map, blk_mq_spread_offsets) = spread.blk_mq;
        warnings.extend(spread.blk_mq_warnings);
        Ok(DeviceOutcome {
            name: dev.name.clone(),
            affinity_null: masks.is_none(),
            spread_offsets: masks.map(|m| m.spread_offsets).unwrap_or_default(),
            vectors,
            blk_mq_map,
            blk_mq_spread_offsets,
            admin_spread_offsets,
            warnings,
            mana: None,
            alloc_failed: None,
        })
    }

    /// `irq_create_affinity_masks()` of the device's request (`None`: not managed, or no
    /// masks), or a proposal's masks in its place.
    fn affinity_masks(
        &mut self,
        dev: &Device,
        warnings: &mut Vec<KernelWarn>,
    ) -> Result<Option<AffinityMasks>, ExternalError> {
        let s = self.scenario;
        if !dev.managed_affinity {
            return Ok(None);
        }
        if let Some(proposal) = s.proposal {
            let req = dev.affinity_request();
            return Ok(proposal_masks(
                self.topo,
                &req,
                proposal,
                s.effective,
                &self.default,
                &self.probed,
                warnings,
            ));
        }
        irq_create_affinity_masks_with(
            self.topo,
            &dev.affinity_request(),
            s.spreader(),
            s.kernel.affinity_era(),
            boot_masks(s, &self.default),
            &mut self.counter,
            warnings,
        )
    }

    /// `alloc_descs()` refuses an empty mask before that vector is taken, and the MSI-X
    /// allocation fails there: the vectors before it are freed and the device holds none (the
    /// PCI core's retry with that many vectors is not modelled: kernel::irqdesc).
    fn alloc_descs_failed(
        &mut self,
        dev: &Device,
        masks: Option<&AffinityMasks>,
        vector: u32,
        warnings: Vec<KernelWarn>,
    ) -> DeviceOutcome {
        let descs = masks.map(|m| &m.descs[..]).unwrap_or_default();
        self.space.failures.push(VectorFailure {
            device: dev.name.clone(),
            vector,
            managed: descs.get(vector as usize).is_some_and(|d| d.is_managed),
            error: VectorError::EmptyAffinity,
        });
        DeviceOutcome {
            name: dev.name.clone(),
            affinity_null: false,
            spread_offsets: masks.map(|m| m.spread_offsets.clone()).unwrap_or_default(),
            vectors: descs
                .iter()
                .zip(0..)
                .map(|(d, index)| VectorOutcome {
                    index,
                    mask: d.mask.clone(),
                    managed: d.is_managed,
                    effective_cpu: None,
                })
                .collect(),
            blk_mq_map: None,
            blk_mq_spread_offsets: None,
            admin_spread_offsets: None,
            warnings,
            mana: None,
            alloc_failed: Some(AllocFailure::EmptyMask { vector }),
        }
    }

    /// The device's vectors with their masks, before any has a CPU. irq_create_affinity_masks()
    /// copied irq_default_affinity into the pre and post vectors' masks and those past the
    /// initialized ones; without masks every vector has irq_default_affinity.
    fn vectors(&self, dev: &Device, masks: Option<&AffinityMasks>) -> Vec<VectorOutcome> {
        (0..dev.vectors)
            .map(|index| {
                let (mask, managed) = match masks {
                    Some(m) => (m.descs[index as usize].mask.clone(), m.descs[index as usize].is_managed),
                    None => (self.default.clone(), false),
                };
                VectorOutcome {
                    index,
                    mask,
                    managed,
                    effective_cpu: None,
                }
            })
            .collect()
    }

    /// A vector the matrix refused, in the vector space's failures.
    fn fail(&mut self, dev: &Device, v: &VectorOutcome, error: VectorError) {
        self.space.failures.push(VectorFailure {
            device: dev.name.clone(),
            vector: v.index,
            managed: v.managed,
            error,
        });
    }

    /// Allocation in index order (`x86_vector_alloc_irqs()`): managed vectors reserve a slot on
    /// every CPU of their mask, non-managed ones make a global reservation (x86); an ITS
    /// activates each vector now, on the least-loaded online CPU of the machine
    /// (`its_irq_domain_activate()`). No mask is empty here: a device with one failed in
    /// `alloc_descs()`.
    fn allocate(&mut self, dev: &Device, vectors: &[VectorOutcome]) -> Allocated {
        let mut failed = vec![false; vectors.len()];
        let mut early = Vec::with_capacity(vectors.len());
        for (v, failed) in vectors.iter().zip(failed.iter_mut()) {
            if v.managed {
                if let Err(e) = self.matrix.reserve_managed(&v.mask) {
                    self.fail(dev, v, VectorError::Matrix(e));
                    *failed = true;
                }
            } else if self.matrix.reserve() && self.space.reservation_exceeded.is_none() {
                self.space.reservation_exceeded = Some((dev.name.clone(), v.index));
            }
            early.push(self.matrix.activate_early(v.managed, &v.mask));
        }
        Allocated { failed, early }
    }

    /// Activation (request) in index order. An ITS moves each vector it activated early to
    /// the least-loaded CPU of the mask `irq_do_set_affinity()` programs; x86 allocates the
    /// real vector (`activate_managed()`, `activate_reserved()` with the wider searches of
    /// `assign_irq_vector_any_locked()`), and a managed vector under `isolcpus=managed_irq`
    /// moves to a housekeeping CPU, its first vector freed once the probe ends.
    fn activate(&mut self, dev: &Device, has_masks: bool, vectors: &mut [VectorOutcome], allocated: Allocated) {
        let mut moved_from = Vec::new();
        for ((v, failed), early) in vectors.iter_mut().zip(allocated.failed).zip(allocated.early) {
            if failed {
                continue;
            }
            if let Some(cpu) = early {
                let target = self.request_target(dev, has_masks, v);
                v.effective_cpu = Some(self.matrix.request_early(v.managed, cpu, &target));
                continue;
            }
            let placed = if v.managed {
                self.activate_managed(v, &mut moved_from)
            } else {
                self.activate_non_managed(dev, has_masks, v)
            };
            match placed {
                Ok(cpu) => v.effective_cpu = cpu,
                Err(e) => self.fail(dev, v, VectorError::Matrix(e)),
            }
        }
        for cpu in moved_from {
            self.matrix.free_managed(cpu);
        }
    }

    /// The descriptor mask and node a non-managed vector's target comes from.
    fn desc_of(&self, dev: &Device, has_masks: bool, v: &VectorOutcome) -> (Option<CpuSet>, Option<u32>) {
        if has_masks {
            (Some(v.mask.clone()), v.mask.first().map(|c| self.topo.cpu_to_node(c)))
        } else {
            (None, self.scenario.device_node(dev))
        }
    }

    /// The mask `irq_do_set_affinity()` programs at request: a managed vector's mask after
    /// the `isolcpus=managed_irq` step, online CPUs only; else `irq_setup_affinity()`'s target.
    fn request_target(&self, dev: &Device, has_masks: bool, v: &VectorOutcome) -> CpuSet {
        if v.managed {
            let hk = self.scenario.boot_state.managed_irq_housekeeping.as_ref();
            managed_irq_prog_mask(&v.mask, hk, self.topo.online()).and(self.topo.online())
        } else {
            let (desc_mask, node) = self.desc_of(dev, has_masks, v);
            irq_setup_affinity_with(self.topo, desc_mask.as_ref(), node, &self.default)
        }
    }

    /// `activate_managed()`, then under `isolcpus=managed_irq` `apic_set_affinity()` to the
    /// housekeeping CPUs of the mask; a vector that moved leaves its first CPU in `moved_from`.
    fn activate_managed(&mut self, v: &VectorOutcome, moved_from: &mut Vec<u32>) -> Result<Option<u32>, MatrixError> {
        let hk = self.scenario.boot_state.managed_irq_housekeeping.as_ref();
        match (self.matrix.activate_managed(&v.mask)?, hk) {
            (Some(cpu), Some(_)) => {
                let prog = managed_irq_prog_mask(&v.mask, hk, self.topo.online());
                let to = self.matrix.set_affinity_managed(cpu, &prog, &v.mask)?;
                if to != cpu {
                    moved_from.push(cpu);
                }
                Ok(Some(to))
            }
            (cpu, _) => Ok(cpu),
        }
    }

    /// `activate_reserved()` on `irq_setup_affinity()`'s target, then the wider searches of
    /// `assign_irq_vector_any_locked()`, tried only when the target has no vector left: the
    /// node, the affinity mask, every online CPU.
    fn activate_non_managed(
        &mut self,
        dev: &Device,
        has_masks: bool,
        v: &VectorOutcome,
    ) -> Result<Option<u32>, MatrixError> {
        let (desc_mask, node) = self.desc_of(dev, has_masks, v);
        let topo = self.topo;
        let target = irq_setup_affinity_with(topo, desc_mask.as_ref(), node, &self.default);
        let wider = || {
            let mut w: Vec<CpuSet> = node.map(|n| topo.node_cpus(n).clone()).into_iter().collect();
            w.push(v.mask.and(topo.online()));
            w.push(topo.online().clone());
            w
        };
        let a = self.matrix.activate_non_managed(&target, wider, &v.mask)?;
        if a.affinity_broken {
            self.space.affinity_broken.push((dev.name.clone(), v.index));
        }
        Ok(Some(a.cpu))
    }

    /// The device's blk-mq map: from its vectors' masks (`blk_mq_map_hw_queues()`, falling
    /// back to `blk_mq_map_queues()` where the release does) or from the CPUs alone
    /// (`blk_mq_map_queues()`), with the counter values each consumed.
    fn blk_mq_map(
        &mut self,
        dev: &Device,
        masks: Option<&AffinityMasks>,
        warnings: &mut Vec<KernelWarn>,
    ) -> Result<(BlkMqMap, Option<Vec<u32>>), ExternalError> {
        let s = self.scenario;
        let first_set = dev
            .sets
            .as_ref()
            .and_then(|sets| sets.first().copied())
            .unwrap_or_else(|| dev.affinity_vectors());
        let nq = dev.blk_mq_queues.unwrap_or(first_set);
        let boot = boot_masks(s, &self.default);
        match dev.blk_mq {
            None => Ok((None, None)),
            Some(BlkMqSource::Irq) => {
                let descs: Option<Vec<CpuSet>> = masks.map(|m| m.descs.iter().map(|d| d.mask.clone()).collect());
                let map = blk_mq_map_hw_queues(
                    self.topo,
                    nq,
                    0,
                    descs.as_deref(),
                    dev.pre_vectors,
                    s.kernel.hw_fallback(),
                    (s.kernel.blk_mq_mapper(), s.spreader()),
                    boot,
                    &mut self.counter,
                    warnings,
                )?;
                // A map that fell back to blk_mq_map_queues() consumed counter values.
                let offsets = (!map.spread_offsets.is_empty()).then_some(map.spread_offsets);
                Ok((Some(map.map), offsets))
            }
            Some(BlkMqSource::Cpumap) => {
                let mapper = s.kernel.blk_mq_mapper();
                let map = blk_mq_map_queues_with(
                    self.topo,
                    mapper,
                    nq,
                    0,
                    s.spreader(),
                    boot,
                    &mut self.counter,
                    warnings,
                )?;
                Ok((Some(map.map), Some(map.spread_offsets)))
            }
        }
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
