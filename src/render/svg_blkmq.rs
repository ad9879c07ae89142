//! The blk-mq queue strip: one cell per hardware queue, blue when a CPU submits to it, red when
//! none does (its requests can never be issued), queue numbers below.

use super::svg::escape;
use std::fmt::Write;

/// Most queue numbers printed under a strip.
const TICKS_MAX: u32 = 16;

/// A strip of one cell per queue: blue when it has CPUs, red when none; queue numbers below.
pub(crate) fn queue_strip(mapper: &str, queues: u32, unmapped: &[u32]) -> String {
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
