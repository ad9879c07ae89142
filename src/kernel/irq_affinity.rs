//! Model of `kernel/irq/affinity.c`: `irq_create_affinity_masks()` as in current mainline
//! (the version that copies `nummasks` masks per set and advances by `nummasks`).
//!
//! Pure: the topology, the `group_cpus_evenly` variant, the heapsort generation and the rotation
//! counter are parameters.

use super::group_cpus::{ExternalError, Spreader, Variant};
use super::sort::SortGen;
use super::KernelWarn;
use crate::topology::{CpuSet, Topology};

/// `IRQ_AFFINITY_MAX_SETS`.
pub(crate) const IRQ_AFFINITY_MAX_SETS: usize = 4;

/// What a driver passes in `struct irq_affinity` plus the vector count it was granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AffinityRequest {
    pub nvecs: u32,
    pub pre_vectors: u32,
    pub post_vectors: u32,
    /// Driver-computed set sizes; `None` = one set of all affinity vectors (`default_calc_sets`).
    pub sets: Option<Vec<u32>>,
}

/// `struct irq_affinity_desc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrqAffinityDesc {
    pub mask: CpuSet,
    pub is_managed: bool,
}

/// The descriptors plus the counter values the `group_cpus_evenly` calls consumed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AffinityMasks {
    pub descs: Vec<IrqAffinityDesc>,
    pub spread_offsets: Vec<u32>,
}

/// The vectors that get affinity: `nvecs - pre - post`, or 0 when pre/post use them all.
pub(crate) fn affinity_vectors(req: &AffinityRequest) -> u32 {
    let reserved = u64::from(req.pre_vectors) + u64::from(req.post_vectors);
    if u64::from(req.nvecs) > reserved {
        req.nvecs - reserved as u32
    } else {
        0
    }
}

/// The set sizes `irq_create_affinity_masks()` spreads and its affinity vector count, or `None`
/// where it returns NULL before spreading anything: more than `IRQ_AFFINITY_MAX_SETS` sets (a
/// WARN) or no affinity vectors. Without driver sets, one set of all affinity vectors
/// (`default_calc_sets`).
pub(crate) fn affinity_sets(req: &AffinityRequest, warnings: &mut Vec<KernelWarn>) -> Option<(u32, Vec<u32>)> {
    let affvecs = affinity_vectors(req);
    let sets: Vec<u32> = req.sets.clone().unwrap_or_else(|| vec![affvecs]);
    if sets.len() > IRQ_AFFINITY_MAX_SETS {
        warnings.push(KernelWarn::TooManySets {
            nr_sets: sets.len() as u32,
        });
        return None;
    }
    if affvecs == 0 {
        return None;
    }
    Some((affvecs, sets))
}

/// `irq_create_affinity_masks()`. `None` is the kernel's NULL: no affinity descriptors at all
/// (no affinity vectors, too many sets, or a set for which `group_cpus_evenly` returned NULL).
///
/// Callers must ensure the set sizes sum to at most the affinity vectors; the kernel would write
/// past its array otherwise (scenario validation refuses such input).
pub fn irq_create_affinity_masks(
    topo: &Topology,
    req: &AffinityRequest,
    variant: Variant,
    sort: SortGen,
    counter: &mut u32,
    warnings: &mut Vec<KernelWarn>,
) -> Option<AffinityMasks> {
    let spreader = Spreader::Model(variant, sort);
    // A named model answers every call.
    irq_create_affinity_masks_with(topo, req, spreader, counter, warnings).unwrap_or(None)
}

/// [`irq_create_affinity_masks`] with the `group_cpus_evenly()` calls going to `spreader`
/// (a named model, or outside code whose failure is returned as the error).
pub fn irq_create_affinity_masks_with(
    topo: &Topology,
    req: &AffinityRequest,
    spreader: Spreader<'_>,
    counter: &mut u32,
    warnings: &mut Vec<KernelWarn>,
) -> Result<Option<AffinityMasks>, ExternalError> {
    let Some((affvecs, sets)) = affinity_sets(req, warnings) else {
        return Ok(None);
    };
    assert!(
        sets.iter().map(|&s| u64::from(s)).sum::<u64>() <= u64::from(affvecs),
        "sets exceed affinity vectors"
    );

    // The kernel's irq_default_affinity is "all bits"; shown clipped to nr_cpu_ids.
    let default = CpuSet::full(topo.nr_cpu_ids());
    let nvecs = req.nvecs as usize;
    let mut masks: Vec<CpuSet> = vec![CpuSet::new(topo.nr_cpu_ids()); nvecs];
    let pre = req.pre_vectors as usize;
    for mask in masks.iter_mut().take(pre) {
        *mask = default.clone();
    }
    let mut spread_offsets = Vec::new();
    let (mut curvec, mut usedvecs) = (pre, 0usize);
    for &this_vecs in &sets {
        let Some(grouping) = spreader.group_cpus_evenly(topo, this_vecs, counter, warnings)? else {
            return Ok(None);
        };
        spread_offsets.extend(grouping.consumed_offset());
        let result = grouping.masks();
        let nr_masks = grouping.nummasks() as usize;
        for (j, mask) in result.into_iter().take(nr_masks).enumerate() {
            masks[curvec + j] = mask;
        }
        curvec += nr_masks;
        usedvecs += nr_masks;
    }
    // Vectors past the initialized ones (and the post vectors) get the default mask.
    let fill_from = pre + usedvecs.min(affvecs as usize);
    for mask in masks.iter_mut().skip(fill_from) {
        *mask = default.clone();
    }
    let managed = pre..nvecs - req.post_vectors as usize;
    let descs = masks
        .into_iter()
        .enumerate()
        .map(|(i, mask)| IrqAffinityDesc {
            mask,
            is_managed: managed.contains(&i),
        })
        .collect();
    Ok(Some(AffinityMasks { descs, spread_offsets }))
}
