//! Model of `kernel/irq/affinity.c`: `irq_create_affinity_masks()` in its two eras
//! ([`AffinityEra`]): up to v6.16 every set copies all `this_vecs` masks `group_cpus_evenly()`
//! returns (empty ones included) and advances by `this_vecs`; from v6.17 it copies the
//! `nummasks` initialized masks and advances by `nummasks`. The two differ only when a set has
//! more vectors than there are possible CPUs; then the older era leaves managed vectors with
//! empty masks, which `alloc_descs()` refuses (`super::irqdesc`).
//!
//! Pure: the topology, the `group_cpus_evenly` variant, the heapsort generation, the era and
//! the rotation counter are parameters.

use super::group_cpus::{BootMasks, ExternalError, Spreader, Stage, Variant};
use super::sort::SortGen;
use super::KernelWarn;
use crate::topology::{CpuSet, Topology};

/// `IRQ_AFFINITY_MAX_SETS`.
pub(crate) const IRQ_AFFINITY_MAX_SETS: usize = 4;

/// The two eras of `irq_create_affinity_masks()`. Frozen names: a permalink that names one keeps
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum AffinityEra {
    /// `numgrps`: each set copies `this_vecs` masks and advances by `this_vecs` (kernel/irq/
    /// affinity.c of v6.3 .. v6.16 over `group_cpus_evenly(numgrps)`; before v6.3
    /// `irq_build_affinity_masks()` filled the same slots of the same array).
    NumGrps,
    /// `nummasks`: each set copies `nr_masks` masks and advances by `nr_masks` ("lib/group_cpus:
    /// Let group_cpu_evenly() return the number of initialized masks", v6.17).
    #[default]
    NumMasks,
}

impl AffinityEra {
    pub(crate) const ALL: [AffinityEra; 2] = [AffinityEra::NumGrps, AffinityEra::NumMasks];

    pub fn name(self) -> &'static str {
        match self {
            AffinityEra::NumGrps => "numgrps",
            AffinityEra::NumMasks => "nummasks",
        }
    }

    pub fn from_name(name: &str) -> Option<AffinityEra> {
        AffinityEra::ALL.into_iter().find(|e| e.name() == name)
    }
}

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
    pub(crate) spread_offsets: Vec<u32>,
}

/// One descriptor a mask, managed for the vectors in `managed` (the affinity vectors, between
/// the pre and the post vectors).
pub(crate) fn descs_of(masks: Vec<CpuSet>, managed: std::ops::Range<usize>) -> Vec<IrqAffinityDesc> {
    masks
        .into_iter()
        .enumerate()
        .map(|(i, mask)| IrqAffinityDesc {
            mask,
            is_managed: managed.contains(&i),
        })
        .collect()
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

/// `irq_create_affinity_masks()` of the given era. `None` is the kernel's NULL: no affinity
/// descriptors at all (no affinity vectors, too many sets, or a set for which
/// `group_cpus_evenly` returned NULL).
///
/// `default_affinity` is `irq_default_affinity`, which the C copies into the pre and post
/// vectors and into the vectors past the masks a set initialized: every CPU, or with
/// `irqaffinity=` the list plus the boot CPU (`super::manage::irq_affinity_setup`).
///
/// Callers must ensure the set sizes sum to at most the affinity vectors; the kernel would write
/// past its array otherwise (scenario validation refuses such input).
#[allow(clippy::too_many_arguments)]
pub fn irq_create_affinity_masks(
    topo: &Topology,
    req: &AffinityRequest,
    variant: Variant,
    sort: SortGen,
    era: AffinityEra,
    default_affinity: &CpuSet,
    counter: &mut u32,
    warnings: &mut Vec<KernelWarn>,
) -> Option<AffinityMasks> {
    let spreader = Spreader::Model(variant, sort);
    let boot = BootMasks {
        default_affinity,
        managed_irq: None,
    };
    // A named model answers every call.
    irq_create_affinity_masks_with(topo, req, spreader, era, boot, counter, warnings).unwrap_or(None)
}

/// [`irq_create_affinity_masks`] with the `group_cpus_evenly()` calls going to `spreader`
/// (a named model, or outside code whose failure is returned as the error). Outside code that
/// brings its own `irq_create_affinity_masks()` (a tree's kernel/irq/affinity.c) answers the
/// whole call, under the boot parameters; `era` is then the C's own.
pub(crate) fn irq_create_affinity_masks_with(
    topo: &Topology,
    req: &AffinityRequest,
    spreader: Spreader<'_>,
    era: AffinityEra,
    boot: BootMasks<'_>,
    counter: &mut u32,
    warnings: &mut Vec<KernelWarn>,
) -> Result<Option<AffinityMasks>, ExternalError> {
    if let Some(code) = spreader.external_with(Stage::IrqCreateAffinityMasks) {
        if let Some(answer) = code.irq_create_affinity_masks(topo, req, boot, counter, warnings) {
            return answer;
        }
    }
    let default_affinity = boot.default_affinity;
    let Some((affvecs, sets)) = affinity_sets(req, warnings) else {
        return Ok(None);
    };
    assert!(
        sets.iter().map(|&s| u64::from(s)).sum::<u64>() <= u64::from(affvecs),
        "sets exceed affinity vectors"
    );

    let default = default_affinity;
    let nvecs = req.nvecs as usize;
    let mut masks: Vec<CpuSet> = vec![CpuSet::new(topo.nr_cpu_ids()); nvecs];
    let pre = req.pre_vectors as usize;
    for mask in masks.iter_mut().take(pre) {
        mask.clone_from(default);
    }
    let mut spread_offsets = Vec::new();
    let (mut curvec, mut usedvecs) = (pre, 0usize);
    for &this_vecs in &sets {
        let Some(grouping) = spreader.group_cpus_evenly(topo, this_vecs, counter, warnings)? else {
            return Ok(None);
        };
        spread_offsets.extend(grouping.consumed_offset());
        let result = grouping.masks();
        // numgrps: `for (j = 0; j < this_vecs; j++)`, then `curvec += this_vecs`; the masks
        // past the initialized ones are the empty ones kcalloc() gave.
        let nr_masks = match era {
            AffinityEra::NumGrps => this_vecs as usize,
            AffinityEra::NumMasks => grouping.nummasks() as usize,
        };
        for (j, mask) in result.into_iter().take(nr_masks).enumerate() {
            masks[curvec + j] = mask;
        }
        curvec += nr_masks;
        usedvecs += nr_masks;
    }
    // Vectors past the initialized ones (and the post vectors) get the default mask.
    let fill_from = pre + usedvecs.min(affvecs as usize);
    for mask in masks.iter_mut().skip(fill_from) {
        mask.clone_from(default);
    }
    let descs = descs_of(masks, pre..nvecs - req.post_vectors as usize);
    Ok(Some(AffinityMasks { descs, spread_offsets }))
}

/// `irq_calc_affinity_vectors()`: how many vectors a driver asking for `minvec ..= maxvec`
/// should take: the pre and post vectors plus, without a `calc_sets()` callback, at most one
/// per possible CPU (`possible`, the weight of `cpu_possible_mask`); 0 when the pre and post
/// vectors need more than `minvec`. The sums wrap in `unsigned int` as the C's do.
pub(crate) fn irq_calc_affinity_vectors(minvec: u32, maxvec: u32, req: &AffinityRequest, possible: u32) -> u32 {
    let resv = req.pre_vectors.wrapping_add(req.post_vectors);
    if resv > minvec {
        return 0;
    }
    let set_vecs = match req.sets {
        Some(_) => maxvec.wrapping_sub(resv),
        None => possible,
    };
    resv.wrapping_add(set_vecs.min(maxvec.wrapping_sub(resv)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::TopologySpec;

    fn masks(era: AffinityEra, nvecs: u32, pre: u32, sets: Option<Vec<u32>>) -> Vec<(String, bool)> {
        let t = Topology::new(&toml::from_str::<TopologySpec>("name = \"t\"\nnodes = [\"0-3\"]\n").unwrap()).unwrap();
        let req = AffinityRequest {
            nvecs,
            pre_vectors: pre,
            post_vectors: 0,
            sets,
        };
        let (mut counter, mut w) = (0, Vec::new());
        irq_create_affinity_masks(
            &t,
            &req,
            Variant::PreCluster,
            SortGen::HeapV6_11,
            era,
            &CpuSet::full(4),
            &mut counter,
            &mut w,
        )
        .unwrap()
        .descs
        .into_iter()
        .map(|d| (d.mask.to_cpulist(), d.is_managed))
        .collect()
    }

    /// Six affinity vectors on four CPUs (spec §4.4: groups 4 and 5 get no CPU). numgrps copies
    /// the two empty masks into managed vectors 5 and 6; nummasks stops after the four it has
    /// and gives the rest the default mask.
    #[test]
    fn the_eras_differ_only_past_the_initialized_masks() {
        let m = |e| masks(e, 7, 1, None);
        let old = m(AffinityEra::NumGrps);
        let new = m(AffinityEra::NumMasks);
        assert_eq!(old[..5], new[..5]);
        assert_eq!(old[5..], [("".to_string(), true), ("".to_string(), true)]);
        assert_eq!(new[5..], [("0-3".to_string(), true), ("0-3".to_string(), true)]);
        // Two sets of 3 on four CPUs: no empty mask, and the eras agree.
        assert_eq!(
            masks(AffinityEra::NumGrps, 7, 1, Some(vec![3, 3])),
            masks(AffinityEra::NumMasks, 7, 1, Some(vec![3, 3]))
        );
        // Two sets of 5: numgrps advances by 5, so set 2 starts at vector 6 and vector 5 stays
        // empty; nummasks starts set 2 right after set 1's four masks.
        let old = masks(AffinityEra::NumGrps, 11, 1, Some(vec![5, 5]));
        let new = masks(AffinityEra::NumMasks, 11, 1, Some(vec![5, 5]));
        assert_eq!(old[5].0, "");
        assert_eq!(old[6..10], new[5..9]);
        assert_eq!(new[9..], [("0-3".to_string(), true), ("0-3".to_string(), true)]);
        for e in AffinityEra::ALL {
            assert_eq!(AffinityEra::from_name(e.name()), Some(e));
        }
    }
}
