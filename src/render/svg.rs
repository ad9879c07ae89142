//! SVG pictures of an outcome: the per-CPU heatmap laid out by topology, the B − A difference
//! heatmap, the NUMA-balance chart, and the per-device strip.
//!
//! Pure string output: no axum, no askama, no files, no fonts. Every piece of text written here
//! goes through [`escape`] (or plotters' own escaping), so the output may be embedded in HTML
//! as-is. The heatmaps and the strip are written by hand because each cell carries `data-cpu`
//! attributes for hover highlighting, which plotters cannot emit; the NUMA chart is drawn with
//! plotters' SVG backend (rectangles and text only, so no system fonts are needed).
//!
//! Big machines stay drawable: a view with more than [`CELLS_UNFOLDED_MAX`] CPUs folds runs of
//! equal value into one segment, and the caller can zoom to one node.

use crate::metrics::{Basis, CpuLoad, Metrics};
use crate::scenario::Outcome;
use crate::topology::{CpuSet, Topology};
use std::fmt::Write;

/// Views with more CPUs than this fold runs of equal value into segments.
pub const CELLS_UNFOLDED_MAX: u32 = 1024;
/// Device strips draw one cell per CPU up to this many cells in all; beyond, one per node.
pub const STRIP_CELLS_MAX: u64 = 65_536;

const CELL_PX: u32 = 14;
const GAP_PX: u32 = 2;
const COLUMNS: u32 = 48;
const FOLDED_WIDTH_PX: u32 = 960;
const LABEL_PX: u32 = 18;

/// Which per-CPU number a heatmap shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeatMetric {
    /// Vectors whose effective CPU is this CPU, counted on the metrics' basis (managed
    /// vectors only when the scenario has any, as the summary lines count them).
    Irqs,
    /// Managed vectors only.
    Managed,
    /// Distinct devices served (same basis).
    Devices,
    /// Vectors whose requested mask is this single CPU.
    Hot,
}

impl HeatMetric {
    pub const ALL: [HeatMetric; 4] = [
        HeatMetric::Irqs,
        HeatMetric::Managed,
        HeatMetric::Devices,
        HeatMetric::Hot,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HeatMetric::Irqs => "irqs",
            HeatMetric::Managed => "managed",
            HeatMetric::Devices => "devices",
            HeatMetric::Hot => "hot",
        }
    }

    pub fn from_name(name: &str) -> Option<HeatMetric> {
        HeatMetric::ALL.into_iter().find(|m| m.name() == name)
    }

    pub fn describe(self) -> &'static str {
        match self {
            HeatMetric::Irqs => "IRQs (as the summary counts them)",
            HeatMetric::Managed => "managed IRQs",
            HeatMetric::Devices => "devices served",
            HeatMetric::Hot => "hot single-CPU IRQs",
        }
    }

    pub fn value(self, c: &CpuLoad, basis: Basis) -> u32 {
        match self {
            HeatMetric::Irqs => c.counted_irqs(basis),
            HeatMetric::Managed => c.managed_irqs,
            HeatMetric::Devices => c.counted_devices(basis),
            HeatMetric::Hot => c.hot_irqs,
        }
    }

    /// The ideal per-CPU maximum for this metric, where one is defined (the ideal bound is
    /// computed on the metrics' basis).
    pub fn ideal(self, m: &Metrics) -> Option<u32> {
        match self {
            HeatMetric::Irqs => Some(m.ideal.irqs_per_cpu_max),
            HeatMetric::Managed if m.basis == Basis::Managed => Some(m.ideal.irqs_per_cpu_max),
            HeatMetric::Devices => Some(m.ideal.devices_per_cpu_max),
            HeatMetric::Managed | HeatMetric::Hot => None,
        }
    }
}

/// Escape text for SVG/HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(ch),
        }
    }
    out
}

/// Possible CPUs of a node in drawing order: package, cluster, core (SMT set), thread.
pub fn layout_order(topo: &Topology, node: u32) -> Vec<u32> {
    let mut cpus: Vec<u32> = topo.node_cpus(node).iter().collect();
    cpus.sort_by_key(|&cpu| {
        let cluster = topo.cluster(cpu).first().unwrap_or(u32::MAX);
        let core = topo.smt(cpu).first().unwrap_or(cpu);
        (topo.cpu_to_package(cpu), cluster, core, cpu)
    });
    cpus
}

/// The nodes a view shows: one when zoomed (if it has CPUs), else every node with CPUs.
fn view_nodes(topo: &Topology, zoom: Option<u32>) -> Vec<u32> {
    match zoom {
        Some(n) if !topo.node_cpus(n).is_empty() => vec![n],
        _ => topo.nodes_with_cpus().collect(),
    }
}

/// Sequential scale, white → dark blue, for `v` in `0..=max`.
fn seq_colour(v: u32, max: u32) -> String {
    if max == 0 {
        return "#f4f6fa".into();
    }
    let t = f64::from(v.min(max)) / f64::from(max);
    let lerp = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        lerp(244.0, 8.0),
        lerp(246.0, 48.0),
        lerp(250.0, 107.0)
    )
}

/// Diverging scale: negative blue, zero white, positive red, saturating at `span`.
fn div_colour(d: i64, span: i64) -> String {
    if d == 0 || span == 0 {
        return "#ffffff".into();
    }
    let t = (d.unsigned_abs() as f64 / span as f64).min(1.0);
    let fade = |c: f64| (255.0 + (c - 255.0) * t).round() as u8;
    if d > 0 {
        format!("#{:02x}{:02x}{:02x}", fade(203.0), fade(24.0), fade(29.0))
    } else {
        format!("#{:02x}{:02x}{:02x}", fade(33.0), fade(102.0), fade(172.0))
    }
}

const OFFLINE_FILL: &str = "#c8c8c8";

/// One cell to draw: a CPU or (folded) a run of CPUs with the same value.
struct Cell {
    cpus: CpuSet,
    first: u32,
    n: u32,
    online: bool,
    value: i64,
}

/// Runs of equal (online, value) in drawing order; unfolded, one run per CPU.
fn cells(order: &[u32], online: &CpuSet, value: &dyn Fn(u32) -> i64, fold: bool) -> Vec<Cell> {
    let mut out: Vec<Cell> = Vec::new();
    for &cpu in order {
        let (on, v) = (online.contains(cpu), value(cpu));
        if fold {
            if let Some(last) = out.last_mut() {
                if last.online == on && last.value == v {
                    last.cpus.insert(cpu);
                    last.n += 1;
                    continue;
                }
            }
        }
        out.push(Cell {
            cpus: CpuSet::from_cpus([cpu]),
            first: cpu,
            n: 1,
            online: on,
            value: v,
        });
    }
    out
}

struct Grid<'a> {
    topo: &'a Topology,
    zoom: Option<u32>,
    class: &'a str,
    label: String,
    value: &'a dyn Fn(u32) -> i64,
    colour: &'a dyn Fn(i64) -> String,
    /// Cells above this get the "over" outline.
    over: Option<i64>,
    unit: &'a str,
    legend: String,
}

fn draw_grid(g: &Grid<'_>) -> String {
    let nodes = view_nodes(g.topo, g.zoom);
    let n_view: u32 = nodes.iter().map(|&n| g.topo.node_cpus(n).weight()).sum();
    let fold = n_view > CELLS_UNFOLDED_MAX;
    let pitch = CELL_PX + GAP_PX;
    let width = if fold { FOLDED_WIDTH_PX } else { COLUMNS * pitch }.max(420);
    let mut body = String::new();
    let mut y = 0u32;
    for &node in &nodes {
        let order = layout_order(g.topo, node);
        let node_cpus = g.topo.node_cpus(node);
        let _ = writeln!(
            body,
            r#"<text class="lbl" x="0" y="{}">node {node} · CPUs {}{}</text>"#,
            y + 12,
            escape(&node_cpus.to_cpulist()),
            if fold { " (equal neighbours folded)" } else { "" }
        );
        y += LABEL_PX;
        let _ = writeln!(body, r#"<g class="node" data-node="{node}">"#);
        let cs = cells(&order, g.topo.online(), g.value, fold);
        if fold {
            let total = order.len().max(1) as f64;
            let mut x = 0.0f64;
            for c in &cs {
                let w = f64::from(c.n) / total * f64::from(FOLDED_WIDTH_PX);
                cell_rect(&mut body, g, c, x, y, w.max(0.5), CELL_PX * 2);
                x += w;
            }
            y += CELL_PX * 2 + GAP_PX * 3;
        } else {
            for (i, c) in cs.iter().enumerate() {
                let (col, row) = (i as u32 % COLUMNS, i as u32 / COLUMNS);
                cell_rect(
                    &mut body,
                    g,
                    c,
                    f64::from(col * pitch),
                    y + row * pitch,
                    f64::from(CELL_PX),
                    CELL_PX,
                );
            }
            y += cs.len().div_ceil(COLUMNS as usize) as u32 * pitch + GAP_PX * 2;
        }
        body.push_str("</g>\n");
    }
    let legend_y = y + 4;
    let height = legend_y + 40;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"{class}\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"{label}\">\n{body}<g class=\"legend\" \
         transform=\"translate(0,{legend_y})\">{legend}</g>\n</svg>\n",
        class = g.class,
        label = escape(&g.label),
        legend = g.legend,
    )
}

fn cell_rect(out: &mut String, g: &Grid<'_>, c: &Cell, x: f64, y: u32, w: f64, h: u32) {
    let fill = if c.online {
        (g.colour)(c.value)
    } else {
        OFFLINE_FILL.to_string()
    };
    let over = c.online && g.over.is_some_and(|o| c.value > o);
    let class = match (c.online, over) {
        (false, _) => "cpu off",
        (true, true) => "cpu over",
        (true, false) => "cpu",
    };
    let list = c.cpus.to_cpulist();
    let what = if c.n == 1 {
        format!("CPU {}", c.first)
    } else {
        format!("CPUs {list} ({})", c.n)
    };
    let state = if c.online {
        format!("{} {}", c.value, g.unit)
    } else {
        "offline or not present".to_string()
    };
    let _ = writeln!(
        out,
        r#"<rect class="{class}" data-cpu="{first}" data-cpus="{list}" data-v="{v}" x="{x:.1}" y="{y}" width="{w:.1}" height="{h}" fill="{fill}"><title>{what}: {state}</title></rect>"#,
        first = c.first,
        list = escape(&list),
        v = c.value,
        what = escape(&what),
        state = escape(&state),
    );
}

/// Legend for a sequential scale `0..=max`, with the ideal maximum marked.
fn seq_legend(max: u32, ideal: Option<u32>, unit: &str) -> String {
    let steps = 10u32;
    let mut out = String::new();
    for i in 0..=steps {
        let v = (max * i).div_ceil(steps.max(1));
        let _ = write!(
            out,
            r#"<rect x="{}" y="0" width="20" height="10" fill="{}"/>"#,
            i * 20,
            seq_colour(v, max)
        );
    }
    let _ = write!(
        out,
        r#"<text class="lbl" x="0" y="24">0</text><text class="lbl" x="{}" y="24" text-anchor="end">{max} {}</text>"#,
        (steps + 1) * 20,
        escape(unit)
    );
    if let Some(ideal) = ideal {
        let x = if max == 0 {
            0
        } else {
            (ideal.min(max) * steps * 20) / max.max(1) + 10
        };
        let _ = write!(
            out,
            r##"<line class="ideal" x1="{x}" y1="-3" x2="{x}" y2="13" stroke="#d62728" stroke-width="2"/><text class="lbl" x="{}" y="24">ideal max {ideal}; outlined cells exceed it; grey: offline</text>"##,
            (steps + 1) * 20 + 12
        );
    } else {
        let _ = write!(
            out,
            r#"<text class="lbl" x="{}" y="24">grey: offline</text>"#,
            (steps + 1) * 20 + 12
        );
    }
    out
}

/// Per-CPU heatmap of one metric, nodes as row blocks, CPUs in topology order.
pub fn heatmap(topo: &Topology, m: &Metrics, metric: HeatMetric, zoom: Option<u32>) -> String {
    let values: Vec<(u32, u32)> = m.per_cpu.iter().map(|c| (c.cpu, metric.value(c, m.basis))).collect();
    let lookup = |cpu: u32| -> i64 {
        values
            .binary_search_by_key(&cpu, |(c, _)| *c)
            .map(|i| i64::from(values[i].1))
            .unwrap_or(0)
    };
    let max = m
        .per_cpu
        .iter()
        .filter(|c| c.online)
        .map(|c| metric.value(c, m.basis))
        .max()
        .unwrap_or(0);
    let ideal = metric.ideal(m);
    let colour = |v: i64| seq_colour(v as u32, max);
    draw_grid(&Grid {
        topo,
        zoom,
        class: "heatmap",
        label: format!("per-CPU {}", metric.describe()),
        value: &lookup,
        colour: &colour,
        over: ideal.map(i64::from),
        unit: metric.name(),
        legend: seq_legend(max, ideal, metric.name()),
    })
}

/// Per-CPU heatmap of measured values (live mode: interrupts per second), laid out exactly as
/// [`heatmap`]. `values` is ordered by CPU; CPUs not listed are 0.
pub fn value_heatmap(topo: &Topology, values: &[(u32, u64)], label: &str, unit: &str, zoom: Option<u32>) -> String {
    let lookup = |cpu: u32| -> i64 {
        values
            .binary_search_by_key(&cpu, |v| v.0)
            .map(|i| values[i].1.min(i64::MAX as u64) as i64)
            .unwrap_or(0)
    };
    let max = values
        .iter()
        .filter(|v| topo.online().contains(v.0))
        .map(|v| v.1)
        .max()
        .unwrap_or(0)
        .min(u64::from(u32::MAX)) as u32;
    let colour = |v: i64| seq_colour(v.clamp(0, i64::from(u32::MAX)) as u32, max);
    draw_grid(&Grid {
        topo,
        zoom,
        class: "heatmap live",
        label: label.to_string(),
        value: &lookup,
        colour: &colour,
        over: None,
        unit,
        legend: seq_legend(max, None, unit),
    })
}

/// Per-CPU difference B − A of one metric (same topology on both sides).
pub fn diff_heatmap(topo: &Topology, a: &Metrics, b: &Metrics, metric: HeatMetric, zoom: Option<u32>) -> String {
    let deltas: Vec<(u32, i64)> = a
        .per_cpu
        .iter()
        .zip(&b.per_cpu)
        .map(|(ca, cb)| {
            (
                ca.cpu,
                i64::from(metric.value(cb, b.basis)) - i64::from(metric.value(ca, a.basis)),
            )
        })
        .collect();
    let lookup = |cpu: u32| -> i64 {
        deltas
            .binary_search_by_key(&cpu, |(c, _)| *c)
            .map(|i| deltas[i].1)
            .unwrap_or(0)
    };
    let span = deltas.iter().map(|(_, d)| d.abs()).max().unwrap_or(0);
    let colour = |d: i64| div_colour(d, span);
    let mut legend = String::new();
    for (i, d) in (-span..=span).step_by((span as usize / 5).max(1)).enumerate() {
        let _ = write!(
            legend,
            r##"<rect x="{}" y="0" width="20" height="10" fill="{}" stroke="#999" stroke-width="0.5"/>"##,
            i * 20,
            div_colour(d, span)
        );
    }
    let _ = write!(
        legend,
        r#"<text class="lbl" x="0" y="24">B − A: blue = fewer {m} on B, red = more (±{span}); grey: offline</text>"#,
        m = escape(metric.name())
    );
    draw_grid(&Grid {
        topo,
        zoom,
        class: "heatmap diff",
        label: format!("per-CPU change B - A, {}", metric.describe()),
        value: &lookup,
        colour: &colour,
        over: None,
        unit: "change",
        legend,
    })
}

/// Counted IRQs per node against each node's fair share (by online CPUs), drawn with plotters.
pub fn numa_chart(m: &Metrics) -> String {
    use plotters::prelude::*;
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    const BAR_PX: u32 = 36;
    const CHART_H: u32 = 160;
    let nodes = &m.per_node;
    let width = (nodes.len() as u32 * (BAR_PX + 12) + 80).max(440);
    let height = CHART_H + 56;
    let top = nodes
        .iter()
        .map(|n| u64::from(n.irqs).max(n.fair_share_milli.div_ceil(1000)))
        .max()
        .unwrap_or(0)
        .max(1);
    let scale = |v_milli: u64| -> i32 { (CHART_H as u64 - v_milli * u64::from(CHART_H) / (top * 1000)) as i32 + 16 };
    let mut buf = String::new();
    {
        let mut svg = SVGBackend::with_string(&mut buf, (width, height));
        let text = |anchor: Pos| {
            TextStyle::from(("sans-serif", 11).into_font())
                .color(&BLACK)
                .pos(anchor)
        };
        let red = RGBColor(214, 39, 40);
        let bar = RGBColor(49, 130, 189);
        let base_y = scale(0);
        let _ = svg.draw_line((40, base_y), (width as i32 - 10, base_y), &BLACK);
        let _ = svg.draw_text(
            &top.to_string(),
            &text(Pos::new(HPos::Right, VPos::Center)),
            (35, scale(top * 1000)),
        );
        let _ = svg.draw_text("0", &text(Pos::new(HPos::Right, VPos::Center)), (35, base_y));
        for (i, n) in nodes.iter().enumerate() {
            let x0 = 50 + i as i32 * (BAR_PX as i32 + 12);
            let x1 = x0 + BAR_PX as i32;
            let _ = svg.draw_rect((x0, scale(u64::from(n.irqs) * 1000)), (x1, base_y), &bar, true);
            let fy = scale(n.fair_share_milli);
            let _ = svg.draw_line((x0 - 4, fy), (x1 + 4, fy), &ShapeStyle::from(&red).stroke_width(2));
            let _ = svg.draw_text(
                &n.irqs.to_string(),
                &text(Pos::new(HPos::Center, VPos::Bottom)),
                ((x0 + x1) / 2, scale(u64::from(n.irqs) * 1000) - 2),
            );
            let _ = svg.draw_text(
                &format!("n{}", n.node),
                &text(Pos::new(HPos::Center, VPos::Top)),
                ((x0 + x1) / 2, base_y + 4),
            );
        }
        let _ = svg.draw_text(
            "bars: IRQs per node; red: fair share",
            &text(Pos::new(HPos::Left, VPos::Top)),
            (40, base_y + 22),
        );
        let _ = svg.present();
    }
    buf.replacen(
        "<svg ",
        "<svg class=\"numa\" role=\"img\" aria-label=\"IRQs per node against fair share\" ",
        1,
    )
}

/// Which CPUs each device's vectors landed on (by effective CPU): one row per device, CPUs in
/// topology order; folded to one cell per node when the picture would be too big.
pub fn device_strip(topo: &Topology, outcome: &Outcome, zoom: Option<u32>) -> String {
    let nodes = view_nodes(topo, zoom);
    let order: Vec<u32> = nodes.iter().flat_map(|&n| layout_order(topo, n)).collect();
    let per_node = order.len() as u64 * outcome.devices.len() as u64 > STRIP_CELLS_MAX;
    let name_px = 110u32;
    let (cell_w, n_cols) = if per_node {
        (40u32, nodes.len() as u32)
    } else {
        (6u32, order.len() as u32)
    };
    let row_h = 12u32;
    let width = name_px + n_cols * cell_w + 10;
    let height = outcome.devices.len() as u32 * (row_h + 2) + 26;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"strip\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"vectors of each device by CPU\">"
    );
    let column: std::collections::BTreeMap<u32, u32> = if per_node {
        order
            .iter()
            .map(|&c| {
                (
                    c,
                    nodes.iter().position(|&n| n == topo.cpu_to_node(c)).unwrap_or(0) as u32,
                )
            })
            .collect()
    } else {
        order.iter().enumerate().map(|(i, &c)| (c, i as u32)).collect()
    };
    for (row, dev) in outcome.devices.iter().enumerate() {
        let y = row as u32 * (row_h + 2);
        let mut counts = vec![0u32; n_cols as usize];
        for v in &dev.vectors {
            if let Some(col) = v.effective_cpu.and_then(|c| column.get(&c)) {
                counts[*col as usize] += 1;
            }
        }
        let max = counts.iter().copied().max().unwrap_or(0);
        let _ = writeln!(
            out,
            r#"<g class="dev" data-dev="{row}"><text class="lbl" x="0" y="{}">{}</text>"#,
            y + 10,
            escape(&truncate(&dev.name, 16))
        );
        for (col, &k) in counts.iter().enumerate() {
            if k == 0 {
                continue;
            }
            let (attr, what) = if per_node {
                let n = nodes[col];
                (format!(r#"data-node="{n}""#), format!("node {n}"))
            } else {
                let cpu = order[col];
                (format!(r#"data-cpu="{cpu}""#), format!("CPU {cpu}"))
            };
            let _ = writeln!(
                out,
                r#"<rect class="hit" {attr} x="{}" y="{y}" width="{}" height="{row_h}" fill="{}"><title>{}: {k} vector{}</title></rect>"#,
                name_px + col as u32 * cell_w,
                cell_w.saturating_sub(1).max(1),
                seq_colour(k.max(1), max.max(1)),
                escape(&format!("{} on {what}", dev.name)),
                if k == 1 { "" } else { "s" }
            );
        }
        out.push_str("</g>\n");
    }
    let _ = writeln!(
        out,
        r#"<text class="lbl" x="{name_px}" y="{}">{}</text></svg>"#,
        height - 8,
        if per_node {
            "one column per node (folded)"
        } else {
            "one column per CPU, topology order"
        }
    );
    out
}

fn truncate(s: &str, chars_max: usize) -> String {
    if s.chars().count() <= chars_max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(chars_max - 1).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue;
    use crate::scenario::spec::{DeviceSpec, ScenarioSpec, TopologyRef};
    use crate::{metrics, scenario};

    fn run(preset: &str, devices: Vec<DeviceSpec>) -> (scenario::Scenario, Outcome, Metrics) {
        let spec = ScenarioSpec {
            topology: TopologyRef::Preset(preset.into()),
            devices,
            variant: "cluster".into(),
            sort: "heap-v6.11".into(),
            effective: "x86-matrix".into(),
            spread_counter: 0,
            proposal: None,
            irqaffinity: None,
            isolcpus: None,
            nohz_full: None,
            vectors_held: None,
        };
        let s = spec.resolve(catalogue::get).unwrap();
        let o = scenario::run(&s);
        let m = metrics::compute(&s, &o);
        (s, o, m)
    }

    #[test]
    fn heatmap_has_one_cell_per_cpu() {
        let (s, _o, m) = run(
            "azure-l96as-v4",
            vec![DeviceSpec {
                pre: 1,
                ..DeviceSpec::new(6, 62)
            }],
        );
        let svg = heatmap(s.topology(), &m, HeatMetric::Irqs, None);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<rect class=\"cpu").count(), 96);
        let zoomed = heatmap(s.topology(), &m, HeatMetric::Irqs, Some(1));
        assert_eq!(zoomed.matches("<rect class=\"cpu").count(), 48);
        assert_eq!(svg.matches("<svg").count(), 1);
    }

    #[test]
    fn names_are_escaped() {
        let d = DeviceSpec {
            name: Some("<script>x</script>".into()),
            ..DeviceSpec::new(1, 4)
        };
        let (s, o, m) = run("azure-4vcpu-smt2", vec![d]);
        let strip = device_strip(s.topology(), &o, None);
        assert!(!strip.contains("<script>") && strip.contains("&lt;script&gt;"));
        let chart = numa_chart(&m);
        assert!(chart.contains("<svg class=\"numa\""), "{chart}");
        assert_eq!(escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
    }
}
