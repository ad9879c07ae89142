//! The blk-mq queue strip: one cell per hardware queue, blue when a CPU submits to it, red when
//! none does (its requests can never be issued), queue numbers below. Drawn at its size, at
//! most [`STRIP_PX_MAX`] wide (cells narrow as queues grow; the numbers keep their size).

use super::svg::{escape, svg_open};
use std::fmt::Write;

/// Most queue numbers printed under a strip.
const TICKS_MAX: u32 = 16;
/// Widest cell, and the widest strip.
const CELL_PX_MAX: f64 = 10.0;
const STRIP_PX_MAX: f64 = 640.0;

/// A strip of one cell per queue: blue when it has CPUs, red when none; queue numbers below.
pub(crate) fn queue_strip(mapper: &str, queues: u32, unmapped: &[u32]) -> String {
    let cell = (STRIP_PX_MAX / f64::from(queues.max(1))).min(CELL_PX_MAX);
    let mut body = String::new();
    for q in 0..queues {
        let missing = unmapped.binary_search(&q).is_ok();
        let _ = write!(
            body,
            r##"<rect class="queue{}" data-queue="{q}" x="{:.1}" y="0" width="{:.1}" height="18" fill="{}"><title>queue {q}: {}</title></rect>"##,
            if missing { " unmapped" } else { "" },
            f64::from(q) * cell,
            (cell - 1.0).max(cell * 0.8),
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
            r#"<text class="tick" x="{:.1}" y="30">{q}</text>"#,
            f64::from(q) * cell
        );
    }
    let width = (f64::from(queues) * cell).ceil() as u32 + 24;
    let label = format!("{queues} queues, {} without a CPU", unmapped.len());
    svg_open("blkmq-strip", &label, width, 34).replacen(
        "<svg ",
        &format!(r#"<svg data-mapper="{}" "#, escape(mapper)),
        1,
    ) + &body
        + "</svg>"
}
