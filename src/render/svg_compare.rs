//! The two heatmaps of a comparison on one colour scale, so equal loads look equal on both
//! sides. Cells are laid out as [`svg::layout_order`] orders them, one block of rows per node,
//! wrapped at [`COLUMNS`] cells; the picture scales to its box (`viewBox`, width 100%).
//! The root element carries `data-scale-max` and every cell `data-cpu` and `data-value`, so a
//! browser test can read the scale the page drew.

use super::svg::{self, push_u64, Fill, HeatMetric};
use crate::metrics::Metrics;
use crate::topology::Topology;
use std::fmt::Write;

/// Cells per row before a node's CPUs wrap to the next row.
pub(crate) const COLUMNS: u32 = 32;
const CELL: u32 = 16;
const LABEL_W: u32 = 56;

/// How the colour scale of a comparison is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scale {
    /// The larger maximum of the two sides (the default).
    Shared,
    /// A fixed maximum given by the reader, the same for every comparison.
    Absolute(u32),
}

/// The largest value of `metric` on any online CPU of either side.
pub(crate) fn shared_max(a: &Metrics, b: &Metrics, metric: HeatMetric) -> u32 {
    [a, b]
        .iter()
        .flat_map(|m| m.per_cpu.iter().filter(|c| c.online).map(|c| metric.value(c, m.basis)))
        .max()
        .unwrap_or(0)
}

/// White (0) to dark blue (`max` and above), linear in each channel.
fn shade(v: u32, max: u32) -> Fill {
    if v == 0 || max == 0 {
        return Fill::from_hex("#ffffff");
    }
    let t = f64::from(v.min(max)) / f64::from(max);
    let mix = |from: f64, to: f64| (from + (to - from) * t).round() as u8;
    Fill::rgb(mix(247.0, 8.0), mix(251.0, 48.0), mix(255.0, 107.0))
}

/// One side's heatmap drawn with the scale maximum `max`.
pub(crate) fn heatmap_on_scale(
    topo: &Topology,
    m: &Metrics,
    metric: HeatMetric,
    zoom: Option<u32>,
    max: u32,
    side: &str,
) -> String {
    let nodes: Vec<u32> = match zoom {
        Some(n) if !topo.node_cpus(n).is_empty() => vec![n],
        _ => topo.nodes_with_cpus().collect(),
    };
    let value = |cpu: u32| {
        m.per_cpu
            .binary_search_by_key(&cpu, |c| c.cpu)
            .ok()
            .map(|i| (m.per_cpu[i].online, metric.value(&m.per_cpu[i], m.basis)))
    };
    let cpus: usize = nodes.iter().map(|&n| topo.node_cpus(n).weight() as usize).sum();
    let mut body = String::with_capacity(cpus * 230 + nodes.len() * 64 + 1024);
    let mut y = 0;
    for node in nodes {
        let order = svg::layout_order(topo, node);
        let _ = write!(
            body,
            r#"<text class="lbl" x="0" y="{}">node {node}</text>"#,
            y + CELL - 4
        );
        for (i, cpu) in order.iter().enumerate() {
            let (col, row) = (i as u32 % COLUMNS, i as u32 / COLUMNS);
            let (x, cy) = (LABEL_W + col * CELL, y + row * CELL);
            let (online, v) = value(*cpu).unwrap_or((false, 0));
            let fill = if online {
                shade(v, max)
            } else {
                Fill::from_hex("#bbbbbb")
            };
            // <rect class="shared-cell" data-cpu=… data-value=… x=… y=… width=… height=…
            // fill=… stroke="#999" stroke-width="0.5"><title>CPU 3: 2 irqs</title></rect>
            let (cpu, v) = (u64::from(*cpu), u64::from(v));
            body.push_str("<rect class=\"shared-cell\" data-cpu=\"");
            push_u64(&mut body, cpu);
            body.push_str("\" data-value=\"");
            push_u64(&mut body, v);
            body.push_str("\" x=\"");
            push_u64(&mut body, u64::from(x));
            body.push_str("\" y=\"");
            push_u64(&mut body, u64::from(cy));
            body.push_str("\" width=\"");
            push_u64(&mut body, u64::from(CELL - 1));
            body.push_str("\" height=\"");
            push_u64(&mut body, u64::from(CELL - 1));
            body.push_str("\" fill=\"");
            body.push_str(fill.as_str());
            body.push_str("\" stroke=\"#999\" stroke-width=\"0.5\"><title>CPU ");
            push_u64(&mut body, cpu);
            body.push_str(": ");
            push_u64(&mut body, v);
            body.push(' ');
            body.push_str(metric.name());
            body.push_str("</title></rect>");
        }
        y += (order.len() as u32).div_ceil(COLUMNS).max(1) * CELL + 6;
    }
    // Legend: labelled steps 0..=max (at most 7 of them).
    let steps = max.clamp(1, 6);
    let _ = write!(body, r#"<g class="legend" transform="translate({LABEL_W},{})">"#, y + 4);
    for i in 0..=steps {
        let v = (max * i).div_ceil(steps);
        let x = i * 36;
        let _ = write!(
            body,
            r##"<rect class="step" data-value="{v}" x="{x}" y="0" width="34" height="12" fill="{}" stroke="#999" stroke-width="0.5"/><text class="lbl" x="{}" y="26" text-anchor="middle">{v}</text>"##,
            shade(v, max),
            x + 17
        );
    }
    body.push_str("</g>");
    let height = y + 36;
    let width = LABEL_W + COLUMNS * CELL;
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" data-scale="shared" data-side="{}" data-scale-max="{max}" viewBox="0 0 {width} {height}" width="100%" preserveAspectRatio="xMinYMin meet" role="img" aria-label="{}"><style>.lbl{{font:10px sans-serif;fill:#333}}</style>{body}</svg>"#,
        svg::escape(side),
        svg::escape(&format!("{side}: per-CPU {}, scale 0 to {max}", metric.describe()))
    )
}
