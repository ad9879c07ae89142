//! `/blkmq?preset=…&queues=…[&variant=…]`: the blk-mq queue map of every mapper generation
//! side by side (seed 004: v4.10's mapper leaves 28 of 64 queues without a CPU on a 72-CPU
//! machine). One strip per mapper, a cell per hardware queue, unmapped queues red, and the
//! `irqscope blk-mq` report of each with its command.

use super::{AppError, AppState};
use crate::catalogue;
use crate::kernel::blk_mq_cpumap::{blk_mq_map_queues_with, Mapper};
use crate::kernel::Spreader;
use crate::render::svg::escape;
use crate::render::text;
use crate::scenario::{spec, VECTORS_PER_DEVICE_MAX};
use askama::Template;
use axum::extract::{Query, State};
use axum::response::Html;
use serde::Deserialize;
use std::fmt::Write;

#[derive(Debug, Default, Deserialize)]
pub(crate) struct BlkMqQuery {
    pub preset: Option<String>,
    pub queues: Option<u32>,
    pub variant: Option<String>,
}

pub(crate) struct MapperView {
    pub name: &'static str,
    pub mapped: u32,
    pub unmapped: Vec<u32>,
    pub strip_svg: String,
    pub command: String,
    pub report: String,
}

#[derive(Template)]
#[template(path = "blkmq/page.html")]
pub(crate) struct BlkMqPage {
    pub title: String,
    pub preset: String,
    pub queues: u32,
    pub presets: Vec<&'static str>,
    pub mappers: Vec<MapperView>,
}

/// Most queue numbers printed under a strip.
const TICKS_MAX: u32 = 16;

/// A strip of one cell per queue: blue when it has CPUs, red when none; queue numbers below.
fn strip(mapper: &str, queues: u32, unmapped: &[u32]) -> String {
    const CELL: u32 = 10;
    let mut body = String::new();
    for q in 0..queues {
        let missing = unmapped.binary_search(&q).is_ok();
        let _ = write!(
            body,
            r##"<rect class="queue{}" data-queue="{q}" x="{}" y="0" width="{}" height="18" fill="{}"><title>queue {q}: {}</title></rect>"##,
            if missing { " unmapped" } else { "" },
            q * CELL,
            CELL - 1,
            if missing { "#d62728" } else { "#2c6fbb" },
            if missing { "no CPU" } else { "has CPUs" }
        );
    }
    // Queue numbers under the strip: at most about 16 ticks, on a power-of-two step.
    let step = (0..)
        .map(|k| 1u32 << k)
        .find(|s| queues.div_ceil(*s) <= TICKS_MAX)
        .unwrap_or(1);
    for q in (0..queues).step_by(step as usize) {
        let _ = write!(
            body,
            r#"<text class="tick" x="{}" y="28" font-size="8">{q}</text>"#,
            q * CELL
        );
    }
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="blkmq-strip" data-mapper="{}" viewBox="0 0 {} 30" width="100%" preserveAspectRatio="xMinYMin meet" role="img" aria-label="{} queues, {} without a CPU">{body}</svg>"#,
        escape(mapper),
        queues * CELL,
        queues,
        unmapped.len()
    )
}

pub(crate) async fn blkmq_page(
    State(state): State<AppState>,
    Query(q): Query<BlkMqQuery>,
) -> Result<Html<String>, AppError> {
    let preset = q.preset.clone().unwrap_or_else(|| "xeon-2s-18c-smt2".into());
    let topo = catalogue::get(&preset).ok_or_else(|| AppError::BadInput(format!("unknown preset {preset:?}")))?;
    let queues = q.queues.unwrap_or(64);
    if !(1..=VECTORS_PER_DEVICE_MAX).contains(&queues) {
        return Err(AppError::BadInput(format!(
            "queues {queues}: 1 to {VECTORS_PER_DEVICE_MAX}"
        )));
    }
    // A model by name, or built C this server registered (`c:NAME`).
    let name = q.variant.as_deref().unwrap_or(spec::DEFAULT_VARIANT.name());
    let (variant_name, external) = match name.strip_prefix(spec::KERNEL_C_PREFIX) {
        Some(c) => (name, Some(state.kernel_c.by_name(c)?)),
        None => (spec::parse_variant(name)?.name(), None),
    };
    let spreader = match &external {
        Some(e) => Spreader::External(&*e.0),
        None => Spreader::Model(spec::parse_variant(variant_name)?, spec::DEFAULT_SORT),
    };
    let mappers = Mapper::ALL
        .iter()
        .map(|&mapper| {
            let (mut counter, mut warnings) = (0, Vec::new());
            let map = blk_mq_map_queues_with(&topo, mapper, queues, 0, spreader, &mut counter, &mut warnings)
                .map_err(|e| AppError::BadInput(e.to_string()))?;
            let used: std::collections::BTreeSet<u32> = map.map.iter().flatten().copied().collect();
            let unmapped: Vec<u32> = (0..queues).filter(|q| !used.contains(q)).collect();
            Ok(MapperView {
                name: mapper.name(),
                mapped: queues - unmapped.len() as u32,
                strip_svg: strip(mapper.name(), queues, &unmapped),
                unmapped,
                command: format!(
                    "irqscope blk-mq {preset} --queues {queues} --mapper {} --variant {variant_name}",
                    mapper.name(),
                ),
                report: text::queue_map_report_named(&topo, mapper, variant_name, queues, 0, &map.map),
            })
        })
        .collect::<Result<_, AppError>>()?;
    let page = BlkMqPage {
        title: format!("blk-mq queue maps: {preset}, {queues} queues"),
        preset,
        queues,
        presets: catalogue::names().collect(),
        mappers,
    };
    Ok(Html(page.render()?))
}
