//! The later stages of a tree's build: `irq_create_affinity_masks()` and
//! `irq_calc_affinity_vectors()` (kernel/irq/affinity.c), `blk_mq_map_queues()` and
//! `blk_mq_map_hw_queues()` (block/blk-mq-cpumap.c), asked of the same harness process as
//! `group_cpus_evenly()` (the line protocol of `kernel-c/harness.c`), under the boot
//! parameters a scenario sets (`irqaffinity=`, `isolcpus=managed_irq`).
//!
//! [`KernelC`] answers each stage its build holds; through
//! [`crate::kernel::ExternalGroupCpus`] the pipeline asks it first and runs the model for the
//! stages it does not hold. Answers are remembered per machine, boot and request.

use super::machine::Machine;
use super::runner::{number_at, read_line, read_mask, read_warnings, KernelC, Replies, Reply, Request, Warning};
use crate::kernel::blk_mq_cpumap::QueueMap;
use crate::kernel::irq_affinity::{AffinityMasks, AffinityRequest, IrqAffinityDesc};
use crate::kernel::{BootMasks, ExternalError, KernelWarn, Stage};
use crate::topology::{CpuSet, Topology};
use std::sync::Arc;

/// Most vectors one `irq_create_affinity_masks()` request may name (the harness's bound).
pub(crate) const NVECS_MAX: u32 = 65_536;
/// Answers of the later stages remembered before that memo starts over.
const STAGE_MEMO_MAX: usize = 16_384;

/// What answers a stage request.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ReplyKind {
    Affinity,
    Calc,
    Map,
}

/// A later stage's answer.
#[derive(Debug, Clone)]
pub(crate) enum StageReply {
    Affinity(AffinityAnswer),
    Calc(u32),
    Map(MapAnswer),
}

/// `irq_create_affinity_masks()` as the C answered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AffinityAnswer {
    /// Each vector's mask and whether it is managed; `None`: NULL.
    pub(crate) descs: Option<Vec<(CpuSet, bool)>>,
    pub(crate) counter_after: u32,
    /// The counter values its `group_cpus_evenly()` calls consumed, in call order.
    pub(crate) offsets: Vec<u32>,
    pub(crate) warnings: Vec<Warning>,
}

/// A `blk_mq_map_queues()` or `blk_mq_map_hw_queues()` map as the C answered it: the queue of
/// every CPU id, `None` for ids that are not possible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MapAnswer {
    pub(crate) map: Vec<Option<u32>>,
    pub(crate) counter_after: u32,
    pub(crate) offsets: Vec<u32>,
    pub(crate) warnings: Vec<Warning>,
}

/// The boot parameters a stage runs under.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Boot {
    /// `irqaffinity=LIST` (the harness adds the boot CPU, as `irq_affinity_setup()` does);
    /// `None`: not given, every CPU.
    pub(crate) irqaffinity: Option<CpuSet>,
    /// The `HK_TYPE_MANAGED_IRQ` housekeeping CPUs of `isolcpus=managed_irq,…`.
    pub(crate) managed_irq: Option<CpuSet>,
}

impl Boot {
    /// The boot parameters of a pipeline call: `irq_default_affinity` as the model holds it
    /// (every CPU is the same as not given) and the housekeeping CPUs.
    pub(crate) fn of(topo: &Topology, boot: BootMasks<'_>) -> Boot {
        let all = CpuSet::full(topo.nr_cpu_ids());
        Boot {
            irqaffinity: (*boot.default_affinity != all).then(|| boot.default_affinity.clone()),
            managed_irq: boot.managed_irq.cloned(),
        }
    }

    /// The harness's `boot` line.
    fn line(&self) -> String {
        let list = |s: &Option<CpuSet>| match s {
            Some(set) if !set.is_empty() => set.to_cpulist(),
            _ => "-".to_string(),
        };
        format!("boot {} {}\n", list(&self.irqaffinity), list(&self.managed_irq))
    }
}

/// The `PRE POST SETS` words of an affinity request.
fn affd_words(req: &AffinityRequest) -> String {
    let sets = match &req.sets {
        None => "-".to_string(),
        Some(sets) => sets.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
    };
    format!("{} {} {sets}", req.pre_vectors, req.post_vectors)
}

impl KernelC {
    /// The stages this build brings (`group_cpus_evenly` always).
    pub(crate) fn stages(&self) -> &[Stage] {
        &self.stages
    }

    fn require(&self, stage: Stage) -> Result<(), ExternalError> {
        if self.stages.contains(&stage) {
            return Ok(());
        }
        Err(ExternalError(format!(
            "{}: this build has no {}() ({} was not in its source)",
            self.provenance().name,
            stage.name(),
            stage.file()
        )))
    }

    /// The counter sent for a request, and the one reported after it for C without a
    /// counter (which cannot read it: the counter after is the one before).
    fn counter_for(&self, counter: u32) -> (u32, Option<u32>) {
        match self.provenance().counter {
            Some(_) => (counter, None),
            None => (0, Some(counter)),
        }
    }

    /// One stage request on `topo`, remembered.
    fn stage(
        &self,
        topo: &Topology,
        boot: &Boot,
        text: String,
        reply: ReplyKind,
    ) -> Result<Arc<StageReply>, ExternalError> {
        let boot_line = boot.line();
        self.with_machine(topo, |machine: &Machine| {
            let key = (machine.key, format!("{boot_line}{text}"));
            if let Some(a) = self.stage_memo.lock().ok().and_then(|m| m.get(&key).cloned()) {
                return Ok(a);
            }
            let answer = match self.ask(machine, &boot_line, &Request::Stage { text, reply })? {
                Reply::Stage(a) => Arc::new(a),
                _ => unreachable!("a stage request is answered by a stage reply"),
            };
            if let Ok(mut m) = self.stage_memo.lock() {
                if m.len() >= STAGE_MEMO_MAX {
                    m.clear();
                }
                m.insert(key, answer.clone());
            }
            Ok(answer)
        })
    }

    /// `irq_create_affinity_masks(req.nvecs, affd)` with the counter set.
    pub(crate) fn affinity(
        &self,
        topo: &Topology,
        boot: &Boot,
        req: &AffinityRequest,
        counter: u32,
    ) -> Result<AffinityAnswer, ExternalError> {
        self.require(Stage::IrqCreateAffinityMasks)?;
        if req.nvecs > NVECS_MAX {
            return Err(ExternalError(format!("{} vectors; at most {NVECS_MAX}", req.nvecs)));
        }
        let (asked, fixed) = self.counter_for(counter);
        let text = format!("affinity {asked} {} {}\n", req.nvecs, affd_words(req));
        match &*self.stage(topo, boot, text, ReplyKind::Affinity)? {
            StageReply::Affinity(a) => {
                let mut a = a.clone();
                if let Some(c) = fixed {
                    a.counter_after = c;
                }
                if a.descs.as_ref().is_some_and(|d| d.len() != req.nvecs as usize) {
                    return Err(self.unreadable("another vector count"));
                }
                self.check_width(topo, a.descs.iter().flatten().map(|(m, _)| m))?;
                Ok(a)
            }
            _ => Err(self.unreadable("another answer")),
        }
    }

    /// `irq_calc_affinity_vectors(minvec, maxvec, affd)` on `topo` (it reads
    /// `cpu_possible_mask`).
    pub(crate) fn calc_vectors(
        &self,
        topo: &Topology,
        minvec: u32,
        maxvec: u32,
        req: &AffinityRequest,
    ) -> Result<u32, ExternalError> {
        self.require(Stage::IrqCalcAffinityVectors)?;
        let text = format!("calcvec {minvec} {maxvec} {}\n", affd_words(req));
        match &*self.stage(topo, &Boot::default(), text, ReplyKind::Calc)? {
            StageReply::Calc(n) => Ok(*n),
            _ => Err(self.unreadable("another answer")),
        }
    }

    /// `blk_mq_map_queues()` of `nr_queues` queues from `queue_offset`, the counter set.
    pub(crate) fn map_queues(
        &self,
        topo: &Topology,
        boot: &Boot,
        nr_queues: u32,
        queue_offset: u32,
        counter: u32,
    ) -> Result<MapAnswer, ExternalError> {
        self.require(Stage::BlkMqMapQueues)?;
        let (asked, fixed) = self.counter_for(counter);
        let text = format!("mapq {asked} {nr_queues} {queue_offset}\n");
        self.map_answer(topo, boot, text, fixed)
    }

    /// `blk_mq_map_hw_queues(qmap, dev, offset)` of a device whose vectors have `masks`
    /// (`None`: no affinity), the counter set (a fallback to `blk_mq_map_queues()` reads it).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn map_hw_queues(
        &self,
        topo: &Topology,
        boot: &Boot,
        nr_queues: u32,
        queue_offset: u32,
        masks: Option<&[CpuSet]>,
        offset: u32,
        counter: u32,
    ) -> Result<MapAnswer, ExternalError> {
        self.require(Stage::BlkMqMapHwQueues)?;
        let (asked, fixed) = self.counter_for(counter);
        let nvec = masks.map_or(-1, |m| m.len() as i64);
        if nvec > i64::from(NVECS_MAX) {
            return Err(ExternalError(format!("{nvec} vectors; at most {NVECS_MAX}")));
        }
        let mut text = format!("maphw {asked} {nr_queues} {queue_offset} {offset} {nvec}\n");
        for m in masks.into_iter().flatten() {
            // Only CPUs the machine has: the harness reads masks nr_cpu_ids wide.
            let within = m.iter().filter(|&c| c < topo.nr_cpu_ids());
            text.push_str("m ");
            crate::topology::cpulist::push_cpulist(&mut text, within);
            text.push('\n');
        }
        self.map_answer(topo, boot, text, fixed)
    }

    fn map_answer(
        &self,
        topo: &Topology,
        boot: &Boot,
        text: String,
        fixed: Option<u32>,
    ) -> Result<MapAnswer, ExternalError> {
        match &*self.stage(topo, boot, text, ReplyKind::Map)? {
            StageReply::Map(a) => {
                let mut a = a.clone();
                if let Some(c) = fixed {
                    a.counter_after = c;
                }
                let possible = topo.possible();
                let fits = a.map.len() == topo.nr_cpu_ids() as usize
                    && a.map
                        .iter()
                        .zip(0..)
                        .all(|(q, cpu)| q.is_some() == possible.contains(cpu));
                if !fits {
                    return Err(self.unreadable("a map of another machine"));
                }
                Ok(a)
            }
            _ => Err(self.unreadable("another answer")),
        }
    }

    fn unreadable(&self, what: &str) -> ExternalError {
        ExternalError(format!(
            "c:{}: the harness answered what irqscope cannot read ({what})",
            self.provenance().name
        ))
    }

    /// A mask holding a CPU at or above `nr_cpu_ids` is an error naming it.
    fn check_width<'a>(&self, topo: &Topology, masks: impl Iterator<Item = &'a CpuSet>) -> Result<(), ExternalError> {
        let n = topo.nr_cpu_ids();
        match masks.flat_map(|m| m.iter()).find(|&c| c >= n) {
            Some(cpu) => Err(ExternalError(format!(
                "c:{}: a mask holds CPU {cpu}, at or above nr_cpu_ids {n}",
                self.provenance().name
            ))),
            None => Ok(()),
        }
    }

    /// An affinity answer into the pipeline's [`AffinityMasks`] (`None`: the code returned
    /// NULL), the counter and WARNs passed on.
    pub(crate) fn affinity_masks(
        a: AffinityAnswer,
        counter: &mut u32,
        warnings: &mut Vec<KernelWarn>,
    ) -> Option<AffinityMasks> {
        *counter = a.counter_after;
        warnings.extend(a.warnings.iter().map(Warning::to_kernel));
        a.descs.map(|descs| AffinityMasks {
            descs: descs
                .into_iter()
                .map(|(mask, is_managed)| IrqAffinityDesc { mask, is_managed })
                .collect(),
            spread_offsets: a.offsets,
        })
    }

    /// A map answer into the pipeline's [`QueueMap`], the counter and WARNs passed on.
    pub(crate) fn queue_map(a: MapAnswer, counter: &mut u32, warnings: &mut Vec<KernelWarn>) -> QueueMap {
        *counter = a.counter_after;
        warnings.extend(a.warnings.iter().map(Warning::to_kernel));
        QueueMap {
            map: a.map,
            spread_offsets: a.offsets,
        }
    }
}

/// The counter values of an answer's head (`-` or comma-separated).
fn offsets(word: Option<&str>) -> Result<Vec<u32>, Option<String>> {
    match word {
        Some("-") => Ok(Vec::new()),
        Some(w) => w
            .split(',')
            .map(|o| {
                o.parse()
                    .map_err(|_| Some("an offset irqscope cannot read".to_string()))
            })
            .collect(),
        None => Err(Some("offsets expected".into())),
    }
}

/// A stage's answer as the harness wrote it (masks `width` bits wide).
pub(crate) fn read_reply(r: &mut Replies, kind: ReplyKind, width: u32) -> Result<Reply, Option<String>> {
    let bad = |what: &str| Some(what.to_string());
    let head = read_line(r)?;
    let words: Vec<&str> = head.split(' ').collect();
    let num = |i: usize| number_at(&words, i);
    let reply = match (kind, words.first().copied()) {
        (ReplyKind::Calc, Some("calc")) => StageReply::Calc(num(1)?),
        (ReplyKind::Affinity, Some("affnull")) => StageReply::Affinity(AffinityAnswer {
            descs: None,
            counter_after: num(1)?,
            offsets: Vec::new(),
            warnings: read_warnings(r, num(2)?)?,
        }),
        (ReplyKind::Affinity, Some("aff")) => {
            let (nvecs, counter_after, nwarn) = (num(1)?, num(2)?, num(3)?);
            let offsets = offsets(words.get(4).copied())?;
            let mut descs = Vec::with_capacity(nvecs.min(NVECS_MAX) as usize);
            for _ in 0..nvecs.min(NVECS_MAX) {
                let line = read_line(r)?;
                let (managed, list) = match line.strip_prefix("d ").and_then(|l| l.split_once(' ')) {
                    Some(("1", list)) => (true, list),
                    Some(("0", list)) => (false, list),
                    _ => return Err(bad("a descriptor line expected")),
                };
                descs.push((read_mask(list, width)?, managed));
            }
            StageReply::Affinity(AffinityAnswer {
                descs: Some(descs),
                counter_after,
                offsets,
                warnings: read_warnings(r, nwarn)?,
            })
        }
        (ReplyKind::Map, Some("map")) => {
            let (counter_after, nwarn) = (num(1)?, num(2)?);
            let offsets = offsets(words.get(3).copied())?;
            let line = read_line(r)?;
            let entries = line.strip_prefix("q").ok_or_else(|| bad("a map line expected"))?;
            let map = entries
                .split_whitespace()
                .map(|q| match q {
                    "-" => Ok(None),
                    q => q.parse().map(Some).map_err(|_| bad("a queue irqscope cannot read")),
                })
                .collect::<Result<Vec<_>, _>>()?;
            StageReply::Map(MapAnswer {
                map,
                counter_after,
                offsets,
                warnings: read_warnings(r, nwarn)?,
            })
        }
        (_, Some("bug")) => return Err(bad("the C hit BUG")),
        _ => return Err(bad("an answer expected")),
    };
    Ok(Reply::Stage(reply))
}
