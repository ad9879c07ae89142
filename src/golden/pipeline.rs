//! The golden kinds of the pipeline's later stages, which `kernel-c verify` writes when built
//! C disagrees with a model (`docs/kernel-c.md`): `irq_create_affinity_masks`,
//! `irq_calc_affinity_vectors` and `blk_mq_map_hw_queues`, beside `group_cpus_evenly` and
//! `blk_mq` of `../shared/golden/README.md`. Each case names the models (`variant`, `sort`,
//! `affinity` era, `mapper`) and `irqaffinity` (a cpulist or null); the `expected` shapes
//! are built here for both sides, so the file and the check agree on them.

use super::{field, sets_field, str_field, topology_from_golden, u32_field};
use crate::kernel::blk_mq_cpumap::{blk_mq_map_hw_queues, HwFallback, Mapper};
use crate::kernel::irq_affinity::{irq_calc_affinity_vectors, irq_create_affinity_masks, AffinityEra, AffinityRequest};
use crate::kernel::manage::irq_affinity_setup;
use crate::kernel::{BootMasks, Spreader, Stage};
use crate::topology::{parse_cpulist, CpuSet, Topology};
use serde_json::{json, Value};

/// The golden kind a stage's case is written as.
pub fn kind_of(stage: Stage) -> &'static str {
    match stage {
        Stage::GroupCpusEvenly => "group_cpus_evenly",
        Stage::IrqCreateAffinityMasks => "irq_create_affinity_masks",
        Stage::IrqCalcAffinityVectors => "irq_calc_affinity_vectors",
        Stage::BlkMqMapQueues => "blk_mq",
        Stage::BlkMqMapHwQueues => "blk_mq_map_hw_queues",
    }
}

/// `expected` of a `group_cpus_evenly` case.
pub(crate) fn group_expected(masks: Option<&[CpuSet]>, nummasks: u32, offset: Option<u32>, after: u32) -> Value {
    match masks {
        None => json!({"null": true, "nummasks": null, "masks": null, "spread_offset": null,
                       "spread_counter_after": after}),
        Some(m) => json!({
            "null": false,
            "nummasks": nummasks,
            "masks": m.iter().map(CpuSet::to_cpulist).collect::<Vec<_>>(),
            "spread_offset": offset,
            "spread_counter_after": after,
        }),
    }
}

/// `expected` of an `irq_create_affinity_masks` case.
pub(crate) fn affinity_expected(descs: Option<&[(CpuSet, bool)]>, offsets: &[u32], after: u32) -> Value {
    json!({
        "null": descs.is_none(),
        "descs": descs.map(|d| d.iter().map(|(m, managed)| json!({"mask": m.to_cpulist(), "managed": managed}))
            .collect::<Vec<_>>()),
        "spread_offsets": offsets,
        "spread_counter_after": after,
    })
}

/// `expected` of a `blk_mq` or `blk_mq_map_hw_queues` case.
pub(crate) fn map_expected(map: &[Option<u32>], after: u32) -> Value {
    json!({"map": map, "spread_counter_after": after})
}

/// The device keys of a case: `nvecs`, `pre_vectors`, `post_vectors`, `sets`.
pub(crate) fn request_keys(case: &mut Value, req: &AffinityRequest) {
    case["nvecs"] = json!(req.nvecs);
    case["pre_vectors"] = json!(req.pre_vectors);
    case["post_vectors"] = json!(req.post_vectors);
    case["sets"] = json!(req.sets);
}

fn request_of(case: &Value) -> Result<AffinityRequest, String> {
    let sets = sets_field(case)?;
    let req = AffinityRequest {
        nvecs: u32_field(case, "nvecs")?,
        pre_vectors: u32_field(case, "pre_vectors")?,
        post_vectors: u32_field(case, "post_vectors")?,
        sets,
    };
    let reserved = u64::from(req.pre_vectors) + u64::from(req.post_vectors);
    let affvecs = u64::from(req.nvecs).saturating_sub(reserved);
    if req.nvecs > crate::scenario::VECTORS_PER_DEVICE_MAX * 32
        || req.sets.iter().flatten().map(|&s| u64::from(s)).sum::<u64>() > affvecs
    {
        return Err("nvecs or sets beyond the model's limits".into());
    }
    Ok(req)
}

/// The models a case names.
fn models_of(case: &Value) -> Result<(Spreader<'static>, AffinityEra, Mapper), String> {
    let name = |k: &str| str_field(case, k);
    let variant = crate::kernel::Variant::from_name(name("variant")?).ok_or("unknown variant")?;
    let sort = crate::kernel::SortGen::from_name(name("sort")?).ok_or("unknown sort")?;
    let era = AffinityEra::from_name(name("affinity")?).ok_or("unknown affinity era")?;
    let mapper = Mapper::from_name(name("mapper")?).ok_or("unknown mapper")?;
    Ok((Spreader::Model(variant, sort), era, mapper))
}

/// `irq_default_affinity` of a case's `irqaffinity` (null: every CPU).
fn default_of(case: &Value, topo: &Topology) -> Result<CpuSet, String> {
    match field(case, "irqaffinity")? {
        Value::Null => Ok(CpuSet::full(topo.nr_cpu_ids())),
        Value::String(s) => {
            let list = parse_cpulist(s, topo.nr_cpu_ids()).map_err(|e| format!("irqaffinity: {e}"))?;
            Ok(irq_affinity_setup(&list, topo.nr_cpu_ids()))
        }
        _ => Err("\"irqaffinity\" is not a cpulist".into()),
    }
}

pub(crate) fn run_affinity(case: &Value) -> Result<Value, String> {
    let topo = topology_from_golden(field(case, "topology")?)?;
    let (spreader, era, _) = models_of(case)?;
    let Spreader::Model(variant, sort) = spreader else {
        unreachable!("a case names a model")
    };
    let req = request_of(case)?;
    let default = default_of(case, &topo)?;
    let mut counter = u32_field(case, "spread_counter")?;
    let m = irq_create_affinity_masks(&topo, &req, variant, sort, era, &default, &mut counter, &mut Vec::new());
    let descs: Option<Vec<(CpuSet, bool)>> = m
        .as_ref()
        .map(|m| m.descs.iter().map(|d| (d.mask.clone(), d.is_managed)).collect());
    let offsets = m.map(|m| m.spread_offsets).unwrap_or_default();
    Ok(affinity_expected(descs.as_deref(), &offsets, counter))
}

pub(crate) fn run_calc(case: &Value) -> Result<Value, String> {
    let topo = topology_from_golden(field(case, "topology")?)?;
    let req = request_of(case)?;
    let n = irq_calc_affinity_vectors(
        u32_field(case, "minvec")?,
        u32_field(case, "maxvec")?,
        &req,
        topo.possible().weight(),
    );
    Ok(json!({ "vectors": n }))
}

pub(crate) fn run_map_hw(case: &Value) -> Result<Value, String> {
    let topo = topology_from_golden(field(case, "topology")?)?;
    let (spreader, _, mapper) = models_of(case)?;
    let n = topo.nr_cpu_ids();
    let masks: Option<Vec<CpuSet>> = match field(case, "masks")? {
        Value::Null => None,
        Value::Array(a) => Some(
            a.iter()
                .map(|m| parse_cpulist(m.as_str().ok_or("a mask is not a cpulist")?, n).map_err(|e| e.to_string()))
                .collect::<Result<_, _>>()?,
        ),
        _ => return Err("\"masks\" is not a list".into()),
    };
    let nr_queues = u32_field(case, "nr_queues")?;
    if nr_queues > crate::scenario::VECTORS_PER_DEVICE_MAX * 4 {
        return Err(format!("nr_queues {nr_queues} is beyond the model's limit"));
    }
    let default = default_of(case, &topo)?;
    let boot = BootMasks {
        default_affinity: &default,
        managed_irq: None,
    };
    let mut counter = u32_field(case, "spread_counter")?;
    let map = blk_mq_map_hw_queues(
        &topo,
        nr_queues,
        u32_field(case, "queue_offset")?,
        masks.as_deref(),
        u32_field(case, "offset")?,
        HwFallback::MapQueues,
        (mapper, spreader),
        boot,
        &mut counter,
        &mut Vec::new(),
    )
    .map_err(|e| e.to_string())?;
    Ok(map_expected(&map.map, counter))
}
