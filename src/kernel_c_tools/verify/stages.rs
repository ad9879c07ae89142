//! One stage's random input, its run on the C and on the model, the two answers as fields,
//! and the case as a golden file with the C's answer as `expected`.

use super::{golden_topology, BootDraw, Fields, Models, Rng};
use crate::golden::pipeline as gp;
use crate::kernel::blk_mq_cpumap::{blk_mq_map_hw_queues, blk_mq_map_queues, HwFallback, QueueMap};
use crate::kernel::irq_affinity::{irq_calc_affinity_vectors, irq_create_affinity_masks, AffinityRequest};
use crate::kernel::{BootMasks, ExternalError, Grouping, Spreader, Stage};
use crate::kernel_c::runner::{Answer, KernelC};
use crate::topology::{CpuSet, Topology};
use serde_json::{json, Value};

/// One stage's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Group {
        numgrps: u32,
        counter: u32,
    },
    Affinity {
        req: AffinityRequest,
        counter: u32,
    },
    Calc {
        minvec: u32,
        maxvec: u32,
        req: AffinityRequest,
    },
    MapQueues {
        nr_queues: u32,
        queue_offset: u32,
        counter: u32,
    },
    /// `device`: the device whose vectors' masks the map reads (`None`: allocated without
    /// affinity); its pre vectors are the offset of the first queue's vector.
    MapHwQueues {
        nr_queues: u32,
        queue_offset: u32,
        device: Option<AffinityRequest>,
        counter: u32,
    },
}

fn draw_counter(rng: &mut Rng) -> u32 {
    match rng.range(0, 5) {
        0 => 0,
        1 => u32::MAX - rng.range(0, 40),
        2 => (1u32 << 31) - rng.range(0, 8),
        _ => rng.range(0, 64),
    }
}

/// A group or queue count for `cpus` CPUs: one, small, about the CPU count, past it.
fn draw_count(rng: &mut Rng, cpus: u32) -> u32 {
    match rng.range(0, 9) {
        0 => 1,
        1 => rng.range(1, 4),
        2 => cpus + rng.range(0, 3),
        _ => rng.range(1, cpus + 1),
    }
}

/// A device: affinity vectors (more than the CPUs at times), pre and post vectors, up to five
/// interrupt sets (more than the kernel's four at times) that fit the affinity vectors.
fn draw_request(rng: &mut Rng, cpus: u32) -> AffinityRequest {
    let affvecs = draw_count(rng, cpus);
    let pre = if rng.chance(40) { rng.range(1, 2) } else { 0 };
    let post = if rng.chance(20) { 1 } else { 0 };
    let sets = rng.chance(30).then(|| {
        let most = if rng.chance(10) { 5 } else { 3 };
        let n = rng.range(1, most);
        let mut left = affvecs;
        (0..n)
            .map(|_| {
                let s = rng.range(0, left.min(cpus + 1));
                left -= s;
                s
            })
            .collect()
    });
    AffinityRequest {
        nvecs: pre + affvecs + post,
        pre_vectors: pre,
        post_vectors: post,
        sets,
    }
}

impl Input {
    /// A random input of `stage` for a machine of `cpus` CPUs.
    pub fn draw(stage: Stage, rng: &mut Rng, cpus: u32) -> Input {
        match stage {
            Stage::GroupCpusEvenly => Input::Group {
                numgrps: draw_count(rng, cpus),
                counter: draw_counter(rng),
            },
            Stage::IrqCreateAffinityMasks => Input::Affinity {
                req: draw_request(rng, cpus),
                counter: draw_counter(rng),
            },
            Stage::IrqCalcAffinityVectors => {
                let mut req = draw_request(rng, cpus);
                req.pre_vectors = rng.range(0, 3);
                let minvec = rng.range(0, 4);
                Input::Calc {
                    minvec,
                    maxvec: minvec + rng.range(0, 2 * cpus + 4),
                    req,
                }
            }
            Stage::BlkMqMapQueues => Input::MapQueues {
                nr_queues: draw_count(rng, cpus),
                queue_offset: if rng.chance(25) { rng.range(1, 8) } else { 0 },
                counter: draw_counter(rng),
            },
            Stage::BlkMqMapHwQueues => {
                let device = rng.chance(80).then(|| draw_request(rng, cpus));
                let affvecs = device
                    .as_ref()
                    .map_or(cpus, |d| d.nvecs - d.pre_vectors - d.post_vectors);
                Input::MapHwQueues {
                    // Now and then more queues than the device has vectors.
                    nr_queues: if rng.chance(15) {
                        affvecs + rng.range(1, 2)
                    } else {
                        rng.range(1, affvecs.max(1))
                    },
                    queue_offset: if rng.chance(25) { rng.range(1, 8) } else { 0 },
                    device,
                    counter: draw_counter(rng),
                }
            }
        }
    }

    pub fn stage(&self) -> Stage {
        match self {
            Input::Group { .. } => Stage::GroupCpusEvenly,
            Input::Affinity { .. } => Stage::IrqCreateAffinityMasks,
            Input::Calc { .. } => Stage::IrqCalcAffinityVectors,
            Input::MapQueues { .. } => Stage::BlkMqMapQueues,
            Input::MapHwQueues { .. } => Stage::BlkMqMapHwQueues,
        }
    }

    /// The input in a few words, for the report.
    pub fn describe(&self) -> String {
        let req = |r: &AffinityRequest| {
            let sets = r.sets.as_ref().map_or("-".into(), |s| {
                s.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
            });
            format!(
                "nvecs {}, pre {}, post {}, sets {sets}",
                r.nvecs, r.pre_vectors, r.post_vectors
            )
        };
        match self {
            Input::Group { numgrps, counter } => format!("numgrps {numgrps}, counter {counter}"),
            Input::Affinity { req: r, counter } => format!("{}, counter {counter}", req(r)),
            Input::Calc { minvec, maxvec, req: r } => format!("minvec {minvec}, maxvec {maxvec}, {}", req(r)),
            Input::MapQueues {
                nr_queues,
                queue_offset,
                counter,
            } => format!("nr_queues {nr_queues}, queue_offset {queue_offset}, counter {counter}"),
            Input::MapHwQueues {
                nr_queues,
                queue_offset,
                device,
                counter,
            } => format!(
                "nr_queues {nr_queues}, queue_offset {queue_offset}, device {}, counter {counter}",
                device.as_ref().map_or("without affinity".into(), req)
            ),
        }
    }

    /// Smaller inputs, most promising first.
    pub(crate) fn candidates(&self) -> Vec<Input> {
        let mut out = Vec::new();
        match self {
            Input::Group { numgrps, counter } => {
                out.extend(smaller_values(*numgrps).into_iter().map(|n| Input::Group {
                    numgrps: n,
                    counter: *counter,
                }));
                out.extend(smaller_values(*counter).into_iter().map(|c| Input::Group {
                    numgrps: *numgrps,
                    counter: c,
                }));
            }
            Input::Affinity { req, counter } => {
                out.extend(smaller_requests(req).into_iter().map(|r| Input::Affinity {
                    req: r,
                    counter: *counter,
                }));
                out.extend(smaller_values(*counter).into_iter().map(|c| Input::Affinity {
                    req: req.clone(),
                    counter: c,
                }));
            }
            Input::Calc { minvec, maxvec, req } => {
                out.extend(
                    smaller_values(*maxvec)
                        .into_iter()
                        .filter(|&m| m >= *minvec)
                        .map(|m| Input::Calc {
                            minvec: *minvec,
                            maxvec: m,
                            req: req.clone(),
                        }),
                );
                out.extend(smaller_requests(req).into_iter().map(|r| Input::Calc {
                    minvec: *minvec,
                    maxvec: *maxvec,
                    req: r,
                }));
            }
            Input::MapQueues {
                nr_queues,
                queue_offset,
                counter,
            } => {
                let at = |n, q, c| Input::MapQueues {
                    nr_queues: n,
                    queue_offset: q,
                    counter: c,
                };
                out.extend(
                    smaller_values(*nr_queues)
                        .into_iter()
                        .map(|n| at(n, *queue_offset, *counter)),
                );
                out.extend(
                    smaller_values(*queue_offset)
                        .into_iter()
                        .map(|q| at(*nr_queues, q, *counter)),
                );
                out.extend(
                    smaller_values(*counter)
                        .into_iter()
                        .map(|c| at(*nr_queues, *queue_offset, c)),
                );
            }
            Input::MapHwQueues {
                nr_queues,
                queue_offset,
                device,
                counter,
            } => out = map_hw_candidates(*nr_queues, *queue_offset, device, *counter),
        }
        out
    }
}

/// Smaller values than `v` to try: 0, half, one less.
fn smaller_values(v: u32) -> Vec<u32> {
    let mut c = vec![0, v / 2, v.saturating_sub(1)];
    c.retain(|&x| x < v);
    c.dedup();
    c
}

/// Smaller affinity requests than `r`: without sets, without pre or post vectors, fewer
/// spread vectors (never fewer than the sets use).
fn smaller_requests(r: &AffinityRequest) -> Vec<AffinityRequest> {
    let mut out = Vec::new();
    if r.sets.is_some() {
        out.push(AffinityRequest {
            sets: None,
            ..r.clone()
        });
    }
    for (pre, post) in [(0, r.post_vectors), (r.pre_vectors, 0)] {
        if (pre, post) != (r.pre_vectors, r.post_vectors) {
            let nvecs = r.nvecs - (r.pre_vectors - pre) - (r.post_vectors - post);
            out.push(AffinityRequest {
                nvecs,
                pre_vectors: pre,
                post_vectors: post,
                sets: r.sets.clone(),
            });
        }
    }
    let affvecs = r.nvecs - r.pre_vectors - r.post_vectors;
    let used: u32 = r.sets.iter().flatten().sum();
    for a in smaller_values(affvecs).into_iter().filter(|&a| a >= used && a > 0) {
        out.push(AffinityRequest {
            nvecs: a + r.pre_vectors + r.post_vectors,
            ..r.clone()
        });
    }
    out
}

/// [`Input::candidates`] of a `blk_mq_map_hw_queues()` input.
fn map_hw_candidates(nr_queues: u32, queue_offset: u32, device: &Option<AffinityRequest>, counter: u32) -> Vec<Input> {
    let at = |n, q, d: Option<AffinityRequest>, c| Input::MapHwQueues {
        nr_queues: n,
        queue_offset: q,
        device: d,
        counter: c,
    };
    let mut out = Vec::new();
    out.extend(
        smaller_values(nr_queues)
            .into_iter()
            .map(|n| at(n, queue_offset, device.clone(), counter)),
    );
    out.extend(
        smaller_values(queue_offset)
            .into_iter()
            .map(|q| at(nr_queues, q, device.clone(), counter)),
    );
    for d in device.iter().flat_map(smaller_requests) {
        out.push(at(nr_queues, queue_offset, Some(d), counter));
    }
    out.extend(
        smaller_values(counter)
            .into_iter()
            .map(|c| at(nr_queues, queue_offset, device.clone(), c)),
    );
    out
}

/// One input run on both sides.
pub(crate) struct Run {
    pub(crate) c: Fields,
    pub(crate) model: Fields,
    /// The case in the golden format, the C's answer as `expected`.
    pub(crate) golden: Value,
}

/// Run `input` on `topo` under `boot` on the C and on the models.
pub fn run(c: &KernelC, topo: &Topology, boot: &BootDraw, input: &Input, models: Models) -> Result<Run, ExternalError> {
    let default = boot.default_affinity(topo);
    let hk = boot.boot(topo).managed_irq;
    let masks = BootMasks {
        default_affinity: &default,
        managed_irq: hk.as_ref(),
    };
    let mut case = json!({
        "format": "irqscope-golden/1",
        "model_version": "irqscope-kernel-c-2",
        "id": "kernel-c-verify",
        "kind": gp::kind_of(input.stage()),
        "description": format!("kernel-c verify: {}() of the built C against the models", input.stage().name()),
        "notes": ["expected is the built C's answer; the model under test is the one named"],
        "topology": golden_topology(topo),
        "variant": models.variant.name(),
        "sort": models.sort.name(),
        "affinity": models.era.name(),
        "mapper": models.mapper.name(),
        "irqaffinity": boot.boot(topo).irqaffinity.map(|s| s.to_cpulist()),
    });
    let run = match input {
        Input::Group { numgrps, counter } => group(c, topo, *numgrps, *counter, models, &mut case)?,
        Input::Affinity { req, counter } => affinity(c, topo, boot, req, *counter, masks, models, &mut case)?,
        Input::Calc { minvec, maxvec, req } => {
            let cv = c.calc_vectors(topo, *minvec, *maxvec, req)?;
            let mv = irq_calc_affinity_vectors(*minvec, *maxvec, req, topo.possible().weight());
            gp::request_keys(&mut case, req);
            case["minvec"] = json!(minvec);
            case["maxvec"] = json!(maxvec);
            case["expected"] = json!({ "vectors": cv });
            (
                vec![("vectors".into(), cv.to_string())],
                vec![("vectors".into(), mv.to_string())],
            )
        }
        Input::MapQueues {
            nr_queues,
            queue_offset,
            counter,
        } => {
            let a = c.map_queues(topo, &boot.boot(topo), *nr_queues, *queue_offset, *counter)?;
            let (mut mc, mut w) = (*counter, Vec::new());
            let m = blk_mq_map_queues(
                topo,
                models.mapper,
                *nr_queues,
                *queue_offset,
                models.variant,
                models.sort,
                &mut mc,
                &mut w,
            );
            case["nr_queues"] = json!(nr_queues);
            case["queue_offset"] = json!(queue_offset);
            case["spread_counter"] = json!(counter);
            case["expected"] = gp::map_expected(&a.map, a.counter_after);
            (
                map_fields(&a.map, &a.offsets, a.counter_after),
                map_fields(&m.map, &m.spread_offsets, mc),
            )
        }
        Input::MapHwQueues { .. } => map_hw(c, topo, boot, input, masks, models, &mut case)?,
    };
    Ok(Run {
        c: run.0,
        model: run.1,
        golden: case,
    })
}

/// The C's offset of a `group_cpus_evenly()` call, read from its counter: a rotation revision
/// takes its offset with `atomic_fetch_inc()`, which returns the value before, so a call that
/// advanced the counter used `counter` and one that did not used 0 (the later revisions skip
/// one-group calls; the first posted one, `rotation-v1`, takes every call's value).
fn c_offset(answer: &Answer, variant: crate::kernel::Variant, counter: u32) -> Option<u32> {
    (variant.uses_counter() && answer.masks.is_some()).then_some(if answer.counter_after != counter {
        counter
    } else {
        0
    })
}

/// The fields of one `group_cpus_evenly()` answer: whether it is NULL, the count of
/// initialized masks, every mask, the offset a rotation used and the counter after.
fn grouping_fields(masks: Option<&[CpuSet]>, nummasks: u32, offset: Option<u32>, after: u32) -> Fields {
    let mut f = vec![("null".to_string(), masks.is_none().to_string())];
    if let Some(masks) = masks {
        f.push(("nummasks".into(), nummasks.to_string()));
        f.push(("masks".into(), format!("{} masks", masks.len())));
        f.extend(
            masks
                .iter()
                .enumerate()
                .map(|(i, m)| (format!("masks[{i}]"), m.to_cpulist())),
        );
        f.push(("spread_offset".into(), format!("{offset:?}")));
    }
    f.push(("spread_counter_after".into(), after.to_string()));
    f
}

fn group(
    c: &KernelC,
    topo: &Topology,
    numgrps: u32,
    counter: u32,
    models: Models,
    case: &mut Value,
) -> Result<(Fields, Fields), ExternalError> {
    let answer = c.call(topo, numgrps, counter)?;
    let offset = c_offset(&answer, models.variant, counter);
    let (mut mc, mut w) = (counter, Vec::new());
    let model = crate::kernel::group_cpus_evenly(topo, numgrps, models.variant, models.sort, &mut mc, &mut w);
    let masks = model.as_ref().map(Grouping::masks);
    let m = grouping_fields(
        masks.as_deref(),
        model.as_ref().map_or(0, Grouping::nummasks),
        model.as_ref().and_then(Grouping::spread_offset),
        mc,
    );
    case["numgrps"] = json!(numgrps);
    case["spread_counter"] = json!(counter);
    case["expected"] = gp::group_expected(answer.masks.as_deref(), answer.nummasks, offset, answer.counter_after);
    Ok((
        grouping_fields(answer.masks.as_deref(), answer.nummasks, offset, answer.counter_after),
        m,
    ))
}

/// The fields of an affinity answer: NULL, the descriptor count, each vector's mask and
/// whether it is managed, the counter values consumed and the counter after.
fn affinity_fields(descs: Option<&[(CpuSet, bool)]>, offsets: &[u32], after: u32) -> Fields {
    let mut f = vec![("null".to_string(), descs.is_none().to_string())];
    if let Some(descs) = descs {
        f.push(("descs".into(), format!("{} vectors", descs.len())));
        f.extend(descs.iter().enumerate().map(|(i, (m, managed))| {
            let kind = if *managed { "managed" } else { "not managed" };
            (format!("descs[{i}]"), format!("{m} {kind}"))
        }));
    }
    f.push(("spread_offsets".into(), format!("{offsets:?}")));
    f.push(("spread_counter_after".into(), after.to_string()));
    f
}

#[allow(clippy::too_many_arguments)]
fn affinity(
    c: &KernelC,
    topo: &Topology,
    boot: &BootDraw,
    req: &AffinityRequest,
    counter: u32,
    masks: BootMasks<'_>,
    models: Models,
    case: &mut Value,
) -> Result<(Fields, Fields), ExternalError> {
    let a = c.affinity(topo, &boot.boot(topo), req, counter)?;
    let (mut mc, mut w) = (counter, Vec::new());
    let m = irq_create_affinity_masks(
        topo,
        req,
        models.variant,
        models.sort,
        models.era,
        masks.default_affinity,
        &mut mc,
        &mut w,
    );
    let m_descs: Option<Vec<(CpuSet, bool)>> = m
        .as_ref()
        .map(|m| m.descs.iter().map(|d| (d.mask.clone(), d.is_managed)).collect());
    let m_offsets = m.map(|m| m.spread_offsets).unwrap_or_default();
    gp::request_keys(case, req);
    case["spread_counter"] = json!(counter);
    case["expected"] = gp::affinity_expected(a.descs.as_deref(), &a.offsets, a.counter_after);
    Ok((
        affinity_fields(a.descs.as_deref(), &a.offsets, a.counter_after),
        affinity_fields(m_descs.as_deref(), &m_offsets, mc),
    ))
}

/// The fields of a map: each CPU id's queue (`-` not possible), the counter values consumed
/// and the counter after.
fn map_fields(map: &[Option<u32>], offsets: &[u32], after: u32) -> Fields {
    let mut f: Fields = map
        .iter()
        .enumerate()
        .map(|(cpu, q)| (format!("map[{cpu}]"), q.map_or("-".into(), |q| q.to_string())))
        .collect();
    f.push(("spread_offsets".into(), format!("{offsets:?}")));
    f.push(("spread_counter_after".into(), after.to_string()));
    f
}

fn map_hw(
    c: &KernelC,
    topo: &Topology,
    boot: &BootDraw,
    input: &Input,
    masks: BootMasks<'_>,
    models: Models,
    case: &mut Value,
) -> Result<(Fields, Fields), ExternalError> {
    let Input::MapHwQueues {
        nr_queues,
        queue_offset,
        device,
        counter,
    } = input
    else {
        unreachable!("map_hw runs a blk_mq_map_hw_queues input");
    };
    // The device's vector masks, as the model's irq_create_affinity_masks() gives them; the
    // same masks go to both sides.
    let vectors: Option<Vec<CpuSet>> = device.as_ref().and_then(|d| {
        let (mut ctr, mut w) = (0, Vec::new());
        let m = irq_create_affinity_masks(
            topo,
            d,
            models.variant,
            models.sort,
            models.era,
            masks.default_affinity,
            &mut ctr,
            &mut w,
        );
        m.map(|m| m.descs.into_iter().map(|d| d.mask).collect())
    });
    let offset = device.as_ref().map_or(0, |d| d.pre_vectors);
    let a = c.map_hw_queues(
        topo,
        &boot.boot(topo),
        *nr_queues,
        *queue_offset,
        vectors.as_deref(),
        offset,
        *counter,
    )?;
    let (mut mc, mut w) = (*counter, Vec::new());
    let m: QueueMap = blk_mq_map_hw_queues(
        topo,
        *nr_queues,
        *queue_offset,
        vectors.as_deref(),
        offset,
        HwFallback::MapQueues,
        (models.mapper, Spreader::Model(models.variant, models.sort)),
        masks,
        &mut mc,
        &mut w,
    )?;
    case["nr_queues"] = json!(nr_queues);
    case["queue_offset"] = json!(queue_offset);
    case["offset"] = json!(offset);
    case["masks"] = json!(vectors
        .as_ref()
        .map(|v| v.iter().map(CpuSet::to_cpulist).collect::<Vec<_>>()));
    case["spread_counter"] = json!(counter);
    case["expected"] = gp::map_expected(&a.map, a.counter_after);
    Ok((
        map_fields(&a.map, &a.offsets, a.counter_after),
        map_fields(&m.map, &m.spread_offsets, mc),
    ))
}
