//! The blk-mq page (`/blkmq?preset=…&queues=…`, `/blkmq/text`, `/blkmq/json`) as data: every
//! mapper generation's queue map side by side (seed 004), through `scenario::blkmq` as
//! `irqscope blk-mq` goes.

use super::seeds::{seed_of, SeedFigure, SeedTarget};
use super::{bad, ViewError};
use crate::catalogue;
use crate::render::columns::command_block;
use crate::render::svg_blkmq::queue_strip;
use crate::render::text;
use crate::scenario::blkmq::{BlkMqScenario, BlkMqSpec, MapperRun, BLKMQ_DEFAULT_PRESET, BLKMQ_DEFAULT_QUEUES};
use crate::scenario::spec::{TopologyRef, DEFAULT_SORT, DEFAULT_VARIANT};
use serde::Deserialize;
use serde_json::json;

/// `/blkmq?preset=…&queues=…[&variant=…&sort=…&counter=…&queue_offset=…&mapper=…]`.
#[derive(Debug, Default, Deserialize)]
pub struct BlkMqQuery {
    pub preset: Option<String>,
    pub queues: Option<u32>,
    pub variant: Option<String>,
    pub sort: Option<String>,
    pub counter: Option<u32>,
    pub queue_offset: Option<u32>,
    pub mapper: Option<String>,
}

impl BlkMqQuery {
    pub fn spec(&self) -> BlkMqSpec {
        let pick = |v: &Option<String>, d: &str| v.clone().filter(|s| !s.is_empty()).unwrap_or_else(|| d.into());
        BlkMqSpec {
            topology: TopologyRef::Preset(pick(&self.preset, BLKMQ_DEFAULT_PRESET)),
            queues: self.queues.unwrap_or(BLKMQ_DEFAULT_QUEUES),
            mapper: self.mapper.clone().filter(|m| !m.is_empty()),
            queue_offset: self.queue_offset.unwrap_or(0),
            variant: pick(&self.variant, DEFAULT_VARIANT.name()),
            sort: pick(&self.sort, DEFAULT_SORT.name()),
            counter: self.counter.unwrap_or(0),
            kernel: None,
        }
    }
}

/// A blk-mq request resolved and run: what the page and both twins show.
pub struct BlkMqShown {
    pub(crate) scenario: BlkMqScenario,
    pub(crate) runs: Vec<MapperRun>,
}

impl BlkMqShown {
    /// Resolve and run; a `c:NAME` variant runs a build this server registered.
    pub fn new(
        spec: BlkMqSpec,
        kernel_c: &crate::kernel_c::registry::KernelCRegistry,
    ) -> Result<BlkMqShown, ViewError> {
        BlkMqShown::with_kernel_c(spec, &super::registered_kernel_c(kernel_c))
    }

    /// [`BlkMqShown::new`] with `c:NAME` found by `kernel_c` (the command line's build cache).
    pub fn with_kernel_c(
        spec: BlkMqSpec,
        kernel_c: super::scenario::KernelCFinder<'_>,
    ) -> Result<BlkMqShown, ViewError> {
        let found = match spec.variant.strip_prefix(crate::scenario::spec::KERNEL_C_PREFIX) {
            Some(name) => Some(kernel_c(name, None)?),
            None => None,
        };
        let lookup = move |name: &str, _: Option<&str>| {
            found
                .clone()
                .ok_or_else(|| crate::scenario::ScenarioError(format!("c:{name}: not found")))
        };
        let scenario = spec.resolve_with(catalogue::get, &lookup).map_err(|e| {
            // The page's machine menu lists presets only.
            if matches!(spec.topology, TopologyRef::Preset(_)) && e.0.starts_with("unknown topology preset") {
                bad(e.0.replacen("unknown topology preset", "unknown preset", 1))
            } else {
                ViewError::from(e)
            }
        })?;
        let runs = scenario.run()?;
        Ok(BlkMqShown { scenario, runs })
    }

    /// One mapper's `irqscope blk-mq` report: its command (wrapped with shell continuations),
    /// then the map folded by queue.
    pub(crate) fn mapper_report(&self, run: &MapperRun, machine: &str) -> String {
        let s = &self.scenario;
        let mut out = String::new();
        command_block(&s.command_words(run.mapper, machine), &mut out);
        let holds = crate::scenario::kernel::holds_for_map(s.spec.kernel.clone(), run.mapper, s.variant, s.sort);
        out.push_str(&crate::render::columns::wrap(
            &crate::render::summary::range_line(&holds),
            "  kernel: ",
            "          ",
        ));
        out.push('\n');
        out.push_str(&text::queue_map_report_named(
            &s.topology,
            run.mapper,
            s.variant_name(),
            s.spec.queues,
            s.spec.queue_offset,
            &run.map,
        ));
        out
    }

    /// The text twin: every mapper's report, one after the other.
    pub(crate) fn text_report(&self) -> String {
        self.report_for(&self.scenario.machine_label())
    }

    /// [`BlkMqShown::text_report`] with the machine named `machine` in the commands (the
    /// command line names a topology file by its path).
    pub fn report_for(&self, machine: &str) -> String {
        let reports: Vec<String> = self.runs.iter().map(|r| self.mapper_report(r, machine)).collect();
        reports.join("\n")
    }

    /// The JSON twin: the request, and per mapper the CPU → queue map and the unmapped queues.
    pub fn json(&self) -> serde_json::Value {
        let s = &self.scenario;
        let machine = s.machine_label();
        json!({
            "machine": machine,
            "topology": s.topology.name(),
            "queues": s.spec.queues,
            "queue_offset": s.spec.queue_offset,
            "variant": s.variant_name(),
            "sort": s.sort.name(),
            "counter": s.spec.counter,
            "mappers": self.runs.iter().map(|r| json!({
                "mapper": r.mapper.name(),
                "uses_group_cpus": r.mapper.uses_group_cpus(),
                "map": r.map,
                "queues_with_cpus": r.mapped(s.spec.queues),
                "unmapped": r.unmapped,
                "warnings": r.warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "command": s.command_words(r.mapper, &machine).join(" "),
            })).collect::<Vec<_>>(),
        })
    }
}

/// "legacy-v4.10 leaves 28 of 64 queues without a CPU; the other 4 mappers map all 64".
fn headline(runs: &[MapperRun], queues: u32) -> String {
    let (short, full): (Vec<&MapperRun>, Vec<&MapperRun>) = runs.iter().partition(|r| !r.unmapped.is_empty());
    let mut parts: Vec<String> = short
        .iter()
        .map(|r| {
            format!(
                "{} leaves {} of {queues} queues without a CPU",
                r.mapper.name(),
                r.unmapped.len()
            )
        })
        .collect();
    parts.push(match (full.len(), short.is_empty()) {
        (0, _) => "no mapper maps them all".to_string(),
        (1, _) => format!("{} maps all {queues}", full[0].mapper.name()),
        (n, true) => format!("every mapper ({n}) maps all {queues} queues"),
        (n, false) => format!("the other {n} mappers map all {queues}"),
    });
    parts.join("; ")
}

/// The query that asks for `spec` again, fields at their defaults left out.
fn query_of(spec: &BlkMqSpec, machine: &str) -> String {
    let enc = super::encode_component;
    let mut q = format!("?preset={}&queues={}", enc(machine), spec.queues);
    if let Some(m) = &spec.mapper {
        q.push_str(&format!("&mapper={}", enc(m)));
    }
    if spec.queue_offset != 0 {
        q.push_str(&format!("&queue_offset={}", spec.queue_offset));
    }
    if spec.variant != DEFAULT_VARIANT.name() {
        q.push_str(&format!("&variant={}", enc(&spec.variant)));
    }
    if spec.sort != DEFAULT_SORT.name() {
        q.push_str(&format!("&sort={}", enc(&spec.sort)));
    }
    if spec.counter != 0 {
        q.push_str(&format!("&counter={}", spec.counter));
    }
    q
}

pub struct MapperView {
    pub name: &'static str,
    pub(crate) mapped: u32,
    pub unmapped: Vec<u32>,
    pub(crate) strip_svg: String,
    /// The text of `irqscope blk-mq` for this mapper: its command, then its report.
    pub(crate) report: String,
}

/// The blk-mq page.
pub struct BlkMqView {
    pub(crate) title: String,
    /// Which mappers leave queues without a CPU, and how many.
    pub(crate) headline: String,
    /// The seed figure this page is, when it is one.
    pub(crate) seed: Option<&'static SeedFigure>,
    pub(crate) preset: String,
    pub(crate) queues: u32,
    pub(crate) presets: Vec<&'static str>,
    pub mappers: Vec<MapperView>,
    /// `?preset=…&queues=…`: the query of the twins.
    pub(crate) query: String,
}

impl BlkMqView {
    pub fn new(shown: &BlkMqShown) -> BlkMqView {
        let s = &shown.scenario;
        let machine = s.machine_label();
        let queues = s.spec.queues;
        let mappers = shown
            .runs
            .iter()
            .map(|r| MapperView {
                name: r.mapper.name(),
                mapped: r.mapped(queues),
                strip_svg: queue_strip(r.mapper.name(), queues, &r.unmapped),
                unmapped: r.unmapped.clone(),
                report: shown.mapper_report(r, &machine),
            })
            .collect();
        BlkMqView {
            title: format!("blk-mq queue maps: {machine}, {queues} queues"),
            headline: headline(&shown.runs, queues),
            seed: seed_of(&SeedTarget::BlkMq(s.spec.clone())),
            query: query_of(&s.spec, &machine),
            preset: machine,
            queues,
            presets: catalogue::names().collect(),
            mappers,
        }
    }
}
