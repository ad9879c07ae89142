//! Where a `group_cpus_evenly()` call goes: one of the named models, or an implementation
//! outside this crate's models (the user's own `lib/group_cpus.c`, built and run by
//! `kernel_c`).
//!
//! The models stay pure: this file only names the interface. Whatever implements
//! [`ExternalGroupCpus`] does its I/O elsewhere and answers one call at a time; a failure (a
//! crash, a loop ended by its limits) is an [`ExternalError`], which the callers return instead
//! of an outcome.

use super::{Grouping, KernelWarn, Variant};
use crate::kernel::sort::SortGen;
use crate::topology::{CpuSet, Topology};
use std::fmt;
use std::sync::Arc;

/// A `group_cpus_evenly()` implemented outside the named models.
pub trait ExternalGroupCpus: Send + Sync {
    /// The variant's name as links and reports print it (`c:NAME`).
    fn name(&self) -> &str;
    /// One line saying what code runs (version, patches, hash).
    fn describe(&self) -> &str;
    /// What pins the code in a permalink (the build's source hash).
    fn id(&self) -> &str;
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

impl Spreader<'_> {
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
    pub fn from_masks(
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
