//! Where a `group_cpus_evenly()` call goes: one of the named models, or an implementation
//! outside this crate's models (the user's own kernel tree, built and run by `kernel_c`).
//! Outside code always brings `group_cpus_evenly()`; built from a whole tree it may bring the
//! later stages of the placement pipeline too ([`Stage`]): `irq_create_affinity_masks()`,
//! `irq_calc_affinity_vectors()`, `blk_mq_map_queues()` and `blk_mq_map_hw_queues()`. A
//! caller of a stage asks the outside code first and runs the model where it does not bring
//! that stage.
//!
//! The models stay pure: this file only names the interface. Whatever implements
//! [`ExternalGroupCpus`] does its I/O elsewhere and answers one call at a time; a failure (a
//! crash, a loop ended by its limits) is an [`ExternalError`], which the callers return instead
//! of an outcome.

use super::{Grouping, KernelWarn, Variant};
use crate::kernel::blk_mq_cpumap::QueueMap;
use crate::kernel::irq_affinity::{AffinityMasks, AffinityRequest};
use crate::kernel::sort::SortGen;
use crate::topology::{CpuSet, Topology};
use std::fmt;
use std::sync::Arc;

/// A stage of the placement pipeline: one kernel function and the file it lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// `group_cpus_evenly()`, lib/group_cpus.c.
    GroupCpusEvenly,
    /// `irq_create_affinity_masks()`, kernel/irq/affinity.c.
    IrqCreateAffinityMasks,
    /// `irq_calc_affinity_vectors()`, kernel/irq/affinity.c.
    IrqCalcAffinityVectors,
    /// `blk_mq_map_queues()`, block/blk-mq-cpumap.c.
    BlkMqMapQueues,
    /// `blk_mq_map_hw_queues()`, block/blk-mq-cpumap.c (v6.14 on, and Debian's 6.12).
    BlkMqMapHwQueues,
}

impl Stage {
    pub const ALL: [Stage; 5] = [
        Stage::GroupCpusEvenly,
        Stage::IrqCreateAffinityMasks,
        Stage::IrqCalcAffinityVectors,
        Stage::BlkMqMapQueues,
        Stage::BlkMqMapHwQueues,
    ];

    /// The kernel function's name.
    pub fn name(self) -> &'static str {
        match self {
            Stage::GroupCpusEvenly => "group_cpus_evenly",
            Stage::IrqCreateAffinityMasks => "irq_create_affinity_masks",
            Stage::IrqCalcAffinityVectors => "irq_calc_affinity_vectors",
            Stage::BlkMqMapQueues => "blk_mq_map_queues",
            Stage::BlkMqMapHwQueues => "blk_mq_map_hw_queues",
        }
    }

    pub fn from_name(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The kernel file it lives in.
    pub(crate) fn file(self) -> &'static str {
        match self {
            Stage::GroupCpusEvenly => "lib/group_cpus.c",
            Stage::IrqCreateAffinityMasks | Stage::IrqCalcAffinityVectors => "kernel/irq/affinity.c",
            Stage::BlkMqMapQueues | Stage::BlkMqMapHwQueues => "block/blk-mq-cpumap.c",
        }
    }
}

/// The boot parameters outside code reads: `irq_default_affinity` (every CPU, or
/// `irqaffinity=` plus the boot CPU) and the `HK_TYPE_MANAGED_IRQ` housekeeping CPUs of
/// `isolcpus=managed_irq,…` (`None`: not set).
#[derive(Debug, Clone, Copy)]
pub struct BootMasks<'a> {
    pub(crate) default_affinity: &'a CpuSet,
    pub(crate) managed_irq: Option<&'a CpuSet>,
}

/// What a stage's outside answer is: `None` when the code does not bring that stage (the
/// caller runs the model), else its answer or its failure.
pub type StageAnswer<T> = Option<Result<T, ExternalError>>;

/// A `group_cpus_evenly()` (and perhaps the later stages) implemented outside the named
/// models.
pub trait ExternalGroupCpus: Send + Sync {
    /// The variant's name as links and reports print it (`c:NAME`).
    fn name(&self) -> &str;
    /// One line saying what code runs (version, patches, hash).
    fn describe(&self) -> &str;
    /// What pins the code in a permalink (the build's source hash).
    fn id(&self) -> &str;
    /// The kernel version of the tree the code came from (`7.2.13`), when known.
    fn tree_version(&self) -> Option<&str> {
        None
    }
    /// The subjects of the patches applied to that tree, in order.
    fn patches(&self) -> &[String] {
        &[]
    }
    /// Whether the code has a rotation counter that calls read and advance.
    fn uses_counter(&self) -> bool;
    /// One call: the groups, or `None` where the code returned NULL. `counter` is the value
    /// before the call and becomes the value after it; WARNs the code hit are pushed to
    /// `warnings`.
    fn group_cpus_evenly(
        &self,
        topo: &Topology,
        numgrps: u32,
        counter: &mut u32,
        warnings: &mut Vec<KernelWarn>,
    ) -> Result<Option<Grouping>, ExternalError>;
    /// The stages this code brings; `group_cpus_evenly()` always.
    fn stages(&self) -> &[Stage] {
        &[Stage::GroupCpusEvenly]
    }
    /// `irq_create_affinity_masks()`: `None` (the default) when the code does not bring it.
    fn irq_create_affinity_masks(
        &self,
        _topo: &Topology,
        _req: &AffinityRequest,
        _boot: BootMasks<'_>,
        _counter: &mut u32,
        _warnings: &mut Vec<KernelWarn>,
    ) -> StageAnswer<Option<AffinityMasks>> {
        None
    }
    /// `blk_mq_map_queues()` of `nr_queues` queues from `queue_offset`.
    fn blk_mq_map_queues(
        &self,
        _topo: &Topology,
        _nr_queues: u32,
        _queue_offset: u32,
        _boot: BootMasks<'_>,
        _counter: &mut u32,
        _warnings: &mut Vec<KernelWarn>,
    ) -> StageAnswer<QueueMap> {
        None
    }
    /// `blk_mq_map_hw_queues(qmap, dev, offset)` of a device whose vectors have `masks`
    /// (`None`: allocated without affinity, `irq_get_affinity()` gives NULL).
    #[allow(clippy::too_many_arguments)]
    fn blk_mq_map_hw_queues(
        &self,
        _topo: &Topology,
        _nr_queues: u32,
        _queue_offset: u32,
        _masks: Option<&[CpuSet]>,
        _offset: u32,
        _boot: BootMasks<'_>,
        _counter: &mut u32,
        _warnings: &mut Vec<KernelWarn>,
    ) -> StageAnswer<QueueMap> {
        None
    }
}

/// A call the outside implementation could not answer; the message says why and within which
/// limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ExternalError(pub String);

/// A shared outside implementation, compared by [`ExternalGroupCpus::id`].
#[derive(Clone)]
pub struct External(pub Arc<dyn ExternalGroupCpus>);

impl fmt::Debug for External {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "External({} {})", self.0.name(), self.0.id())
    }
}

impl PartialEq for External {
    fn eq(&self, other: &Self) -> bool {
        self.0.id() == other.0.id() && self.0.name() == other.0.name()
    }
}

impl Eq for External {}

/// Which code answers the `group_cpus_evenly()` calls of a scenario, a sweep row or a map.
#[derive(Clone, Copy)]
pub enum Spreader<'a> {
    /// A named model, with the heapsort generation it sorts with.
    Model(Variant, SortGen),
    /// Code outside the models (it brings its own sort).
    External(&'a dyn ExternalGroupCpus),
}

impl<'a> Spreader<'a> {
    /// The outside code, when it brings `stage`.
    pub fn external_with(self, stage: Stage) -> Option<&'a dyn ExternalGroupCpus> {
        match self {
            Spreader::External(code) if code.stages().contains(&stage) => Some(code),
            _ => None,
        }
    }

    /// `group_cpus_evenly()` through whichever code this names.
    pub fn group_cpus_evenly(
        self,
        topo: &Topology,
        numgrps: u32,
        counter: &mut u32,
        warnings: &mut Vec<KernelWarn>,
    ) -> Result<Option<Grouping>, ExternalError> {
        match self {
            Spreader::Model(variant, sort) => Ok(super::group_cpus_evenly(
                topo, numgrps, variant, sort, counter, warnings,
            )),
            Spreader::External(code) => code.group_cpus_evenly(topo, numgrps, counter, warnings),
        }
    }
}

/// Why an outside answer cannot be a [`Grouping`]: a CPU in two groups, or one at or above
/// `nr_cpu_ids`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotAGrouping {
    CpuInTwoGroups { cpu: u32, first: u32, second: u32 },
    CpuOutOfRange { cpu: u32, group: u32 },
}

impl fmt::Display for NotAGrouping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotAGrouping::CpuInTwoGroups { cpu, first, second } => {
                write!(f, "CPU {cpu} is in group {first} and in group {second}")
            }
            NotAGrouping::CpuOutOfRange { cpu, group } => {
                write!(f, "group {group} holds CPU {cpu}, at or above nr_cpu_ids")
            }
        }
    }
}

impl Grouping {
    /// A grouping from an outside implementation's masks (all `numgrps` of them, in group
    /// order). `consumed` is the counter value the call used, when it advanced the counter.
    pub(crate) fn from_masks(
        nr_cpu_ids: u32,
        masks: &[CpuSet],
        nummasks: u32,
        consumed: Option<u32>,
    ) -> Result<Grouping, NotAGrouping> {
        let mut group_of = vec![super::NO_GROUP; nr_cpu_ids as usize];
        for (g, mask) in masks.iter().enumerate() {
            for cpu in mask.iter() {
                let slot = group_of
                    .get_mut(cpu as usize)
                    .ok_or(NotAGrouping::CpuOutOfRange { cpu, group: g as u32 })?;
                if *slot != super::NO_GROUP {
                    return Err(NotAGrouping::CpuInTwoGroups {
                        cpu,
                        first: *slot,
                        second: g as u32,
                    });
                }
                *slot = g as u32;
            }
        }
        Ok(Grouping::new(masks.len() as u32, nummasks, group_of, consumed))
    }
}
