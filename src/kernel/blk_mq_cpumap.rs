//! Model of `block/blk-mq-cpumap.c` (and the driver-side map built from IRQ affinity,
//! `blk_mq_map_hw_queues()` / `blk_mq_pci_map_queues()`): which hardware queue each CPU submits
//! to, in five generations.
//!
//! | mapper | kernels |
//! |---|---|
//! | `current` | `group_cpus_evenly` with `nummasks`: queue `q` takes mask `q % nummasks` |
//! | `v6.3` | v6.3 up to the `nummasks` change: queue `q` takes mask `q` |
//! | `legacy-v5.1` | v5.1 .. v6.2: present CPUs first, then siblings share a queue |
//! | `legacy-v4.13` | commit fe631457, v4.13 .. v5.0: compares the CPU **id** with the queue count |
//! | `legacy-v4.10` | v4.10 .. v4.12: the version fe631457 fixed (leaves queues unmapped) |
//!
//! A map is one entry per CPU id: the queue, or `None` for ids that are not possible.

use super::group_cpus::{BootMasks, ExternalError, Grouping, Spreader, Stage, Variant};
use super::sort::SortGen;
use super::KernelWarn;
use crate::topology::{CpuSet, Topology};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mapper {
    Current,
    V6_3,
    LegacyV5_1,
    LegacyV4_13,
    LegacyV4_10,
}

impl Mapper {
    pub(crate) const ALL: [Mapper; 5] = [
        Mapper::Current,
        Mapper::V6_3,
        Mapper::LegacyV5_1,
        Mapper::LegacyV4_13,
        Mapper::LegacyV4_10,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mapper::Current => "current",
            Mapper::V6_3 => "v6.3",
            Mapper::LegacyV5_1 => "legacy-v5.1",
            Mapper::LegacyV4_13 => "legacy-v4.13",
            Mapper::LegacyV4_10 => "legacy-v4.10",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<Mapper> {
        Mapper::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Whether the mapper calls `group_cpus_evenly` (and so needs a variant).
    pub(crate) fn uses_group_cpus(self) -> bool {
        matches!(self, Mapper::Current | Mapper::V6_3)
    }
}

/// What the driver-side map from IRQ affinity does when a queue's vector has no mask (the
/// device was allocated without affinity, or has fewer vectors than queues). Frozen names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum HwFallback {
    /// `blk_mq_pci_map_queues()` (block/blk-mq-pci.c, .. v6.13; the NVMe driver of Debian's
    /// 6.12.118): `WARN_ON_ONCE(nr_queues > 1)` and `blk_mq_clear_mq_map()`, every possible
    /// CPU on queue 0.
    Clear,
    /// `blk_mq_map_hw_queues()` (block/blk-mq-cpumap.c, v6.14 ..; the NVMe driver of Debian's
    /// 7.2.13): `blk_mq_map_queues()` of the same map.
    MapQueues,
}
/// A CPU → queue map and the counter values its `group_cpus_evenly` call consumed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueMap {
    pub(crate) map: Vec<Option<u32>>,
    pub(crate) spread_offsets: Vec<u32>,
}

/// `blk_mq_map_queues()` for `nr_queues` queues starting at `queue_offset` (ignored by the
/// legacy v4.x mappers, as in the kernel).
#[allow(clippy::too_many_arguments)]
pub(crate) fn blk_mq_map_queues(
    topo: &Topology,
    mapper: Mapper,
    nr_queues: u32,
    queue_offset: u32,
    variant: Variant,
    sort: SortGen,
    counter: &mut u32,
    warnings: &mut Vec<KernelWarn>,
) -> QueueMap {
    let spreader = Spreader::Model(variant, sort);
    let all = CpuSet::full(topo.nr_cpu_ids());
    let boot = BootMasks {
        default_affinity: &all,
        managed_irq: None,
    };
    blk_mq_map_queues_with(topo, mapper, nr_queues, queue_offset, spreader, boot, counter, warnings)
        .expect("a named model answers every call")
}

/// [`blk_mq_map_queues`] with the `group_cpus_evenly()` call going to `spreader` (a named
/// model, or outside code whose failure is returned as the error). Outside code that brings
/// its own `blk_mq_map_queues()` (a tree's block/blk-mq-cpumap.c) answers the mappers that
/// call `group_cpus_evenly()`, under the boot parameters.
#[allow(clippy::too_many_arguments)]
pub(crate) fn blk_mq_map_queues_with(
    topo: &Topology,
    mapper: Mapper,
    nr_queues: u32,
    queue_offset: u32,
    spreader: Spreader<'_>,
    boot: BootMasks<'_>,
    counter: &mut u32,
    warnings: &mut Vec<KernelWarn>,
) -> Result<QueueMap, ExternalError> {
    if let Some(code) = spreader
        .external_with(Stage::BlkMqMapQueues)
        .filter(|_| mapper.uses_group_cpus())
    {
        if let Some(answer) = code.blk_mq_map_queues(topo, nr_queues, queue_offset, boot, counter, warnings) {
            return answer;
        }
    }
    let possible = topo.possible();
    let mut map: Vec<Option<u32>> = (0..topo.nr_cpu_ids())
        .map(|c| possible.contains(c).then_some(0))
        .collect();
    let mut spread_offsets = Vec::new();
    match mapper {
        Mapper::Current | Mapper::V6_3 => {
            let grouping = spreader.group_cpus_evenly(topo, nr_queues, counter, warnings)?;
            if let Some(g) = &grouping {
                spread_offsets.extend(g.consumed_offset());
            }
            map_by_groups(topo, mapper, nr_queues, queue_offset, grouping.as_ref(), &mut map);
        }
        Mapper::LegacyV5_1 => map_legacy_v5_1(topo, nr_queues, queue_offset, &mut map),
        Mapper::LegacyV4_13 => map_legacy_v4_13(topo, nr_queues, &mut map),
        Mapper::LegacyV4_10 => map_legacy_v4_10(topo, nr_queues, &mut map),
    }
    Ok(QueueMap { map, spread_offsets })
}

/// v6.3 on: queue `q` takes the CPUs of `group_cpus_evenly()`'s mask `q` (from v6.17, mask
/// `q % nr_masks`); without a grouping every possible CPU maps to the first queue.
fn map_by_groups(
    topo: &Topology,
    mapper: Mapper,
    nq: u32,
    queue_offset: u32,
    grouping: Option<&Grouping>,
    map: &mut [Option<u32>],
) {
    let possible = topo.possible();
    match grouping {
        None => {
            for cpu in possible.iter() {
                map[cpu as usize] = Some(queue_offset);
            }
        }
        Some(grouping) => {
            let masks = grouping.masks();
            let nummasks = grouping.nummasks().max(1);
            for q in 0..nq {
                let mask = if mapper == Mapper::Current {
                    &masks[(q % nummasks) as usize]
                } else {
                    &masks[q as usize]
                };
                for cpu in mask.iter() {
                    map[cpu as usize] = Some(queue_offset.wrapping_add(q));
                }
            }
        }
    }
}

/// v5.1 to v6.2: one queue a present CPU in order while queues last, then the same for the
/// other possible CPUs, and past the last queue SMT siblings share their first sibling's.
fn map_legacy_v5_1(topo: &Topology, nq: u32, queue_offset: u32, map: &mut [Option<u32>]) {
    let possible = topo.possible();
    // `queue_index()`: qoff + q % nq.
    let index = |q: u32| queue_offset.wrapping_add(q % nq.max(1));
    let mut unset = vec![true; map.len()];
    let mut q = 0u32;
    for cpu in topo.present().iter() {
        if q >= nq {
            break;
        }
        map[cpu as usize] = Some(index(q));
        unset[cpu as usize] = false;
        q += 1;
    }
    for cpu in possible.iter() {
        if !unset[cpu as usize] {
            continue;
        }
        if q < nq {
            map[cpu as usize] = Some(index(q));
            q += 1;
        } else {
            let first = get_first_sibling(topo, cpu);
            if first == cpu {
                map[cpu as usize] = Some(index(q));
                q = q.wrapping_add(1);
            } else {
                map[cpu as usize] = map[first as usize];
            }
        }
        unset[cpu as usize] = false;
    }
}

/// v4.13 to v5.0: CPU `c` below the queue count, or the first of its SMT siblings, takes queue
/// `c % nq`; the other siblings share their first sibling's.
fn map_legacy_v4_13(topo: &Topology, nq: u32, map: &mut [Option<u32>]) {
    let possible = topo.possible();
    let nq = nq.max(1);
    for cpu in possible.iter() {
        let first = get_first_sibling(topo, cpu);
        if cpu < nq || first == cpu {
            map[cpu as usize] = Some(cpu % nq);
        } else {
            map[cpu as usize] = map[first as usize];
        }
    }
}

/// v4.10 to v4.12: queues spread over the present CPUs (over the first siblings when the
/// queues are fewer than the CPUs and the machine has SMT), offline CPUs on queue 0.
fn map_legacy_v4_10(topo: &Topology, nq: u32, map: &mut [Option<u32>]) {
    let possible = topo.possible();
    let online = topo.present();
    let (mut nr_cpus, mut nr_uniq) = (0u32, 0u32);
    let mut seen = CpuSet::new(topo.nr_cpu_ids());
    for cpu in online.iter() {
        nr_cpus += 1;
        if !seen.contains(get_first_sibling(topo, cpu)) {
            nr_uniq += 1;
        }
        seen.insert(cpu);
    }
    // `cpu_to_queue_index(nr, nr_queues, q)` = q * nr_queues / nr.
    let index = |q: u32, nr: u32| (u64::from(q) * u64::from(nq) / u64::from(nr.max(1))) as u32;
    let mut q = 0u32;
    for cpu in possible.iter() {
        if !online.contains(cpu) {
            map[cpu as usize] = Some(0);
            continue;
        }
        if nq >= nr_cpus || nr_cpus == nr_uniq {
            map[cpu as usize] = Some(index(q, nr_cpus));
            q += 1;
            continue;
        }
        let first = get_first_sibling(topo, cpu);
        if first == cpu {
            map[cpu as usize] = Some(index(q, nr_uniq));
            q += 1;
        } else {
            map[cpu as usize] = map[first as usize];
        }
    }
}

/// `get_first_sibling()`: the lowest SMT sibling of a CPU (the CPU itself without siblings).
fn get_first_sibling(topo: &Topology, cpu: u32) -> u32 {
    topo.smt(cpu).first().unwrap_or(cpu)
}

/// The driver-side map of a device's queues from its IRQ affinity (`blk_mq_map_hw_queues()`,
/// before it `blk_mq_pci_map_queues()`): every possible CPU starts on queue 0; then, for each
/// queue in order, every CPU of the mask of vector `first_vector + q` moves to queue
/// `queue_offset + q` (later queues overwrite earlier ones). A queue whose vector has no mask
/// (`masks = None`: the device got no affinity masks; or past its vectors) ends the walk in
/// `fallback` ([`HwFallback`]). Outside code that brings its own `blk_mq_map_hw_queues()`
/// answers the whole map.
#[allow(clippy::too_many_arguments)]
pub(crate) fn blk_mq_map_hw_queues(
    topo: &Topology,
    nr_queues: u32,
    queue_offset: u32,
    masks: Option<&[CpuSet]>,
    first_vector: u32,
    fallback: HwFallback,
    (mapper, spreader): (Mapper, Spreader<'_>),
    boot: BootMasks<'_>,
    counter: &mut u32,
    warnings: &mut Vec<KernelWarn>,
) -> Result<QueueMap, ExternalError> {
    if let Some(code) = spreader.external_with(Stage::BlkMqMapHwQueues) {
        let answer = code.blk_mq_map_hw_queues(
            topo,
            nr_queues,
            queue_offset,
            masks,
            first_vector,
            boot,
            counter,
            warnings,
        );
        if let Some(answer) = answer {
            return answer;
        }
    }
    let possible = topo.possible();
    let mut map: Vec<Option<u32>> = (0..topo.nr_cpu_ids())
        .map(|c| possible.contains(c).then_some(0))
        .collect();
    for q in 0..nr_queues {
        let vector = u64::from(first_vector) + u64::from(q);
        let Some(mask) = masks.and_then(|m| m.get(vector as usize)) else {
            return match fallback {
                HwFallback::Clear => {
                    if nr_queues > 1 {
                        warnings.push(KernelWarn::QueueWithoutVector { queue: q });
                    }
                    for slot in map.iter_mut().flatten() {
                        *slot = 0;
                    }
                    Ok(QueueMap {
                        map,
                        spread_offsets: Vec::new(),
                    })
                }
                HwFallback::MapQueues => {
                    blk_mq_map_queues_with(topo, mapper, nr_queues, queue_offset, spreader, boot, counter, warnings)
                }
            };
        };
        for cpu in mask.iter().filter(|&c| possible.contains(c)) {
            map[cpu as usize] = Some(queue_offset.wrapping_add(q));
        }
    }
    Ok(QueueMap {
        map,
        spread_offsets: Vec::new(),
    })
}
