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
pub(crate) const CELLS_UNFOLDED_MAX: u32 = 1024;
/// Device strips draw one cell per CPU up to this many cells in all; beyond, one per node.
pub(crate) const STRIP_CELLS_MAX: u64 = 65_536;

/// Width of the cell area of a row in viewBox units; longer rows wrap (at a core boundary).
const ROW_PX: u32 = 760;
/// The same for numbered cells: shorter rows, so the numbers stay legible in a narrow column.
const NUMBERED_ROW_PX: u32 = 440;
/// Left gutter for row labels (the first CPU of a row, or the node of a matrix row).
const GUTTER_PX: u32 = 40;
/// Views up to this many CPUs draw big cells with the CPU number inside each.
const NUMBERED_CELLS_MAX: u32 = 256;
/// Extra space between cores, clusters and packages (siblings of one core touch but for 1).
const CORE_GAP_PX: f64 = 3.0;
const CLUSTER_GAP_PX: f64 = 8.0;
const PACKAGE_GAP_PX: f64 = 14.0;
const LABEL_PX: u32 = 16;
/// The folded overview: one row per node (a node × CPU-slot matrix), this tall.
const MATRIX_ROW_PX: u32 = 9;

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
pub(crate) fn escape(text: &str) -> String {
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
pub(crate) fn layout_order(topo: &Topology, node: u32) -> Vec<u32> {
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
        // Unchanged: a neutral grey that stands apart from the page and from a faint change.
        return UNCHANGED_FILL.into();
    }
    let t = (d.unsigned_abs() as f64 / span as f64).min(1.0);
    let fade = |c: f64| (255.0 + (c - 255.0) * t).round() as u8;
    if d > 0 {
        format!("#{:02x}{:02x}{:02x}", fade(203.0), fade(24.0), fade(29.0))
    } else {
        format!("#{:02x}{:02x}{:02x}", fade(33.0), fade(102.0), fade(172.0))
    }
}

/// Whether white text reads better than dark on a `#rrggbb` fill.
fn is_dark(fill: &str) -> bool {
    let ch = |i: usize| u32::from_str_radix(fill.get(i..i + 2).unwrap_or("ff"), 16).unwrap_or(255);
    let luma = 299 * ch(1) + 587 * ch(3) + 114 * ch(5);
    luma < 140_000
}

const OFFLINE_FILL: &str = "#c8c8c8";
const UNCHANGED_FILL: &str = "#e3e6ea";

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

/// The root element: scales to its container (`width="100%"`, height from the viewBox), never
/// wider than 1.6 times its drawn size so small machines do not balloon.
fn svg_open(class: &str, label: &str, width: u32, height: u32) -> String {
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="{class}" width="100%" viewBox="0 0 {width} {height}" preserveAspectRatio="xMinYMin meet" style="max-width:{}px" role="img" aria-label="{}" data-w="{width}" data-h="{height}">"#,
        width * 8 / 5,
        escape(label)
    ) + "\n"
}

fn draw_grid(g: &Grid<'_>) -> String {
    let nodes = view_nodes(g.topo, g.zoom);
    let n_view: u32 = nodes.iter().map(|&n| g.topo.node_cpus(n).weight()).sum();
    let mut body = String::new();
    let (mut width, y) = if n_view > CELLS_UNFOLDED_MAX {
        draw_matrix(g, &nodes, &mut body)
    } else {
        draw_cells(g, &nodes, n_view <= NUMBERED_CELLS_MAX, &mut body)
    };
    width = width.max(520);
    let legend_y = y + 14;
    let height = legend_y + 44;
    format!(
        "{open}{body}<g class=\"legend\" transform=\"translate({GUTTER_PX},{legend_y})\">{legend}</g>\n</svg>\n",
        open = svg_open(g.class, &g.label, width, height),
        legend = g.legend,
    )
}

/// One cell per CPU, nodes as blocks, rows wrapped at a core boundary. SMT siblings touch,
/// cores, clusters and packages are set apart by growing gaps (a dashed line marks a cluster
/// boundary, a solid one a package boundary). Returns (width, height) used.
fn draw_cells(g: &Grid<'_>, nodes: &[u32], numbered: bool, body: &mut String) -> (u32, u32) {
    let cell = if numbered { 18u32 } else { 11 };
    let row_px = if numbered { NUMBERED_ROW_PX } else { ROW_PX };
    let row_pitch = cell + if numbered { 4 } else { 12 };
    let mut y = 0u32;
    let mut width = 0f64;
    for &node in nodes {
        let order = layout_order(g.topo, node);
        let _ = writeln!(
            body,
            r#"<text class="lbl" x="0" y="{}">node {node} · CPUs {}</text>"#,
            y + 12,
            escape(&g.topo.node_cpus(node).to_cpulist()),
        );
        y += LABEL_PX;
        let _ = writeln!(body, r#"<g class="node" data-node="{node}">"#);
        let key = |cpu: u32| {
            (
                g.topo.cpu_to_package(cpu),
                g.topo.cluster(cpu).first().unwrap_or(u32::MAX),
                g.topo.smt(cpu).first().unwrap_or(cpu),
            )
        };
        // Cores (runs of one SMT set) in drawing order, so a row never splits a core.
        let mut cores: Vec<&[u32]> = Vec::new();
        let mut i = 0;
        while i < order.len() {
            let k = key(order[i]);
            let j = order[i..]
                .iter()
                .position(|&c| key(c) != k)
                .map_or(order.len(), |p| i + p);
            cores.push(&order[i..j]);
            i = j;
        }
        let row_top = |y: u32| if numbered { y } else { y + 9 };
        let mut x = 0f64;
        let mut prev: Option<(u32, u32, u32)> = None;
        let mut col = 0u32;
        let mut row_start = true;
        for core in cores {
            let k = key(core[0]);
            let core_w = core.len() as f64 * f64::from(cell + 1);
            let gap = match prev {
                None => 0.0,
                Some(p) if p.0 != k.0 => PACKAGE_GAP_PX,
                Some(p) if p.1 != k.1 => CLUSTER_GAP_PX,
                Some(_) => CORE_GAP_PX,
            };
            if !row_start && x + gap + core_w > f64::from(row_px) {
                y += row_pitch;
                x = 0.0;
                col = 0;
                row_start = true;
            } else if !row_start {
                let lx = f64::from(GUTTER_PX) + x + gap / 2.0;
                let (y0, y1) = (row_top(y), row_top(y) + cell);
                if gap == PACKAGE_GAP_PX {
                    let _ = writeln!(
                        body,
                        r#"<line class="pkg" x1="{lx:.1}" y1="{}" x2="{lx:.1}" y2="{}"/>"#,
                        y0 - 2,
                        y1 + 2
                    );
                } else if gap == CLUSTER_GAP_PX {
                    let _ = writeln!(
                        body,
                        r#"<line class="clu" x1="{lx:.1}" y1="{y0}" x2="{lx:.1}" y2="{y1}"/>"#
                    );
                }
                x += gap;
            }
            if row_start {
                // Tick: the first CPU of the row in the gutter.
                let _ = writeln!(
                    body,
                    r#"<text class="tick" x="{}" y="{}" text-anchor="end">{}</text>"#,
                    GUTTER_PX - 4,
                    row_top(y) + cell / 2 + 4,
                    core[0]
                );
                row_start = false;
            }
            let core_x = x;
            for &cpu in core {
                let c = Cell {
                    cpus: CpuSet::from_cpus([cpu]),
                    first: cpu,
                    n: 1,
                    online: g.topo.online().contains(cpu),
                    value: (g.value)(cpu),
                };
                let cx = f64::from(GUTTER_PX) + x;
                cell_rect(body, g, &c, cx, row_top(y), f64::from(cell), cell, false);
                if numbered {
                    let fill = if c.online {
                        (g.colour)(c.value)
                    } else {
                        OFFLINE_FILL.into()
                    };
                    let _ = writeln!(
                        body,
                        r#"<text class="{}" x="{:.1}" y="{}" text-anchor="middle">{cpu}</text>"#,
                        if is_dark(&fill) { "n light" } else { "n" },
                        cx + f64::from(cell) / 2.0,
                        y + cell / 2 + 3,
                    );
                } else if col.is_multiple_of(8) {
                    let _ = writeln!(body, r#"<text class="tick" x="{cx:.1}" y="{}">{cpu}</text>"#, y + 7);
                }
                x += f64::from(cell + 1);
                col += 1;
            }
            if core.len() > 1 {
                // SMT siblings side by side, joined by a bar under the core.
                let _ = writeln!(
                    body,
                    r#"<line class="smt" x1="{:.1}" y1="{}" x2="{:.1}" y2="{}"/>"#,
                    f64::from(GUTTER_PX) + core_x,
                    row_top(y) + cell + 1,
                    f64::from(GUTTER_PX) + x - 1.0,
                    row_top(y) + cell + 1,
                );
            }
            width = width.max(x);
            prev = Some(k);
        }
        y += row_pitch + 4;
        body.push_str("</g>\n");
    }
    (GUTTER_PX + width.ceil() as u32 + 4, y)
}

/// The overview of a big machine: one row per node (a node × CPU-slot matrix), each node's
/// CPUs in topology order across the row, runs of equal value folded into one segment. Slot
/// ticks on top; the row label names the node (pick it in the node menu to draw its CPUs).
fn draw_matrix(g: &Grid<'_>, nodes: &[u32], body: &mut String) -> (u32, u32) {
    let slots = nodes
        .iter()
        .map(|&n| g.topo.node_cpus(n).weight())
        .max()
        .unwrap_or(1)
        .max(1);
    let _ = writeln!(
        body,
        r#"<text class="lbl" x="0" y="10">{} nodes × CPU slot (each node's CPUs in topology order; equal neighbours folded; pick a node to see its CPUs)</text>"#,
        nodes.len()
    );
    for q in 0..=4u32 {
        let slot = (slots - 1) * q / 4;
        let x = f64::from(GUTTER_PX) + (f64::from(slot) + 0.5) / f64::from(slots) * f64::from(ROW_PX);
        let anchor = match q {
            0 => "start",
            4 => "end",
            _ => "middle",
        };
        let _ = writeln!(
            body,
            r#"<text class="tick" x="{x:.1}" y="24" text-anchor="{anchor}">{slot}</text>"#
        );
    }
    let mut y = 28u32;
    for &node in nodes {
        let order = layout_order(g.topo, node);
        let _ = writeln!(
            body,
            r#"<g class="node" data-node="{node}"><text class="tick" x="{}" y="{}" text-anchor="end">n{node}</text>"#,
            GUTTER_PX - 4,
            y + MATRIX_ROW_PX - 1
        );
        let cs = cells(&order, g.topo.online(), g.value, true);
        let mut x = 0.0f64;
        for c in &cs {
            let w = f64::from(c.n) / f64::from(slots) * f64::from(ROW_PX);
            cell_rect(body, g, c, f64::from(GUTTER_PX) + x, y, w.max(0.5), MATRIX_ROW_PX, true);
            x += w;
        }
        body.push_str("</g>\n");
        y += MATRIX_ROW_PX + 1;
    }
    (GUTTER_PX + ROW_PX + 4, y)
}

/// `tip`: carry the hover text as `data-tip` (one shared tooltip) rather than a `<title>`.
#[allow(clippy::too_many_arguments)]
fn cell_rect(out: &mut String, g: &Grid<'_>, c: &Cell, x: f64, y: u32, w: f64, h: u32, tip: bool) {
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
    let text = escape(&format!("{what}: {state}"));
    let (tip_attr, title) = if tip {
        (format!(r#" data-tip="{text}""#), String::new())
    } else {
        (String::new(), format!("<title>{text}</title>"))
    };
    let _ = writeln!(
        out,
        r#"<rect class="{class}" data-cpu="{first}" data-cpus="{list}" data-v="{v}"{tip_attr} x="{x:.1}" y="{y}" width="{w:.1}" height="{h}" fill="{fill}">{title}</rect>"#,
        first = c.first,
        list = escape(&list),
        v = c.value,
    );
}

/// Legend for a sequential scale `0..=max`: labelled steps (every value up to 12, else eleven
/// even steps), the ideal maximum's step outlined and named.
fn seq_legend(max: u32, ideal: Option<u32>, unit: &str) -> String {
    let values: Vec<u32> = if max <= 12 {
        (0..=max).collect()
    } else {
        let mut v: Vec<u32> = (0..=10u32)
            .map(|i| (u64::from(max) * u64::from(i) / 10) as u32)
            .collect();
        v.dedup();
        v
    };
    let mut out = String::new();
    let sw = 24u32;
    for (i, &v) in values.iter().enumerate() {
        let x = i as u32 * sw;
        let _ = write!(
            out,
            r##"<rect class="step" data-step="{v}" x="{x}" y="0" width="{sw}" height="10" fill="{}" stroke="#999" stroke-width="0.5"/><text class="tick" x="{}" y="21" text-anchor="middle">{v}</text>"##,
            seq_colour(v, max),
            x + sw / 2
        );
    }
    let mut note = format!("{} per CPU", escape(unit));
    if let Some(ideal) = ideal {
        // The step at (or just above) the ideal, outlined in red.
        let i = values
            .iter()
            .position(|&v| v >= ideal)
            .unwrap_or(values.len().saturating_sub(1));
        let _ = write!(
            out,
            r#"<rect class="ideal" x="{}" y="-2" width="{sw}" height="14" fill="none"/><text class="tick ideal" x="{}" y="-4" text-anchor="middle">ideal {ideal}</text>"#,
            i as u32 * sw,
            i as u32 * sw + sw / 2
        );
        note.push_str("; red outline: above the ideal");
    }
    note.push_str("; grey: offline");
    let _ = write!(out, r#"<text class="lbl" x="0" y="36">{note}</text>"#);
    out
}

/// Per-CPU heatmap of one metric, nodes as row blocks, CPUs in topology order.
pub fn heatmap(topo: &Topology, m: &Metrics, metric: HeatMetric, zoom: Option<u32>) -> String {
    heatmap_scaled(topo, m, metric, zoom, None)
}

/// [`heatmap`] on a colour scale `0..=scale_max` given by the caller (a compare draws both
/// sides on one scale: the larger of the two maxima); `None` scales to this outcome's maximum.
pub(crate) fn heatmap_scaled(
    topo: &Topology,
    m: &Metrics,
    metric: HeatMetric,
    zoom: Option<u32>,
    scale_max: Option<u32>,
) -> String {
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
    let max = scale_max.map_or(max, |s| s.max(max));
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
pub(crate) fn value_heatmap(
    topo: &Topology,
    values: &[(u32, u64)],
    label: &str,
    unit: &str,
    zoom: Option<u32>,
) -> String {
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
pub(crate) fn diff_heatmap(topo: &Topology, a: &Metrics, b: &Metrics, metric: HeatMetric, zoom: Option<u32>) -> String {
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
    // Labelled steps: every value up to ±6, else eleven even steps from −span to +span.
    let steps: Vec<i64> = if span <= 6 {
        (-span..=span).collect()
    } else {
        let mut v: Vec<i64> = (-5..=5i64).map(|i| span * i / 5).collect();
        v.dedup();
        v
    };
    let mut legend = String::new();
    for (i, d) in steps.iter().enumerate() {
        let x = i as u32 * 24;
        let _ = write!(
            legend,
            r##"<rect class="step" data-step="{d}" x="{x}" y="0" width="24" height="10" fill="{}" stroke="#999" stroke-width="0.5"/><text class="tick" x="{}" y="21" text-anchor="middle">{}</text>"##,
            div_colour(*d, span),
            x + 12,
            if *d > 0 { format!("+{d}") } else { d.to_string() }
        );
    }
    let _ = write!(
        legend,
        r#"<text class="lbl" x="0" y="36">B − A {m} per CPU: blue fewer on B, red more, light grey unchanged; grey: offline</text>"#,
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

/// The NUMA chart writes each bar's count and node name up to this many nodes.
const NUMA_LABELLED_MAX: usize = 16;

/// Counted IRQs per node against each node's fair share (by online CPUs), drawn with plotters.
pub(crate) fn numa_chart(m: &Metrics) -> String {
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
            // Many nodes: every 8th named and no count over each bar, so the chart stays light.
            let many = nodes.len() > NUMA_LABELLED_MAX;
            if !many {
                let _ = svg.draw_text(
                    &n.irqs.to_string(),
                    &text(Pos::new(HPos::Center, VPos::Bottom)),
                    ((x0 + x1) / 2, scale(u64::from(n.irqs) * 1000) - 2),
                );
            }
            if !many || i.is_multiple_of(8) {
                let _ = svg.draw_text(
                    &format!("n{}", n.node),
                    &text(Pos::new(HPos::Center, VPos::Top)),
                    ((x0 + x1) / 2, base_y + 4),
                );
            }
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
pub(crate) fn device_strip(topo: &Topology, outcome: &Outcome, zoom: Option<u32>) -> String {
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
    out.push_str(&svg_open("strip", "vectors of each device by CPU", width, height));
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
        // Per node, runs of nodes with the same count are one segment (a 16-device, 64-node
        // machine draws one bar per device, not 1,024 cells).
        let mut col = 0usize;
        while col < counts.len() {
            let k = counts[col];
            let run = if per_node {
                counts[col..].iter().take_while(|&&c| c == k).count()
            } else {
                1
            };
            if k == 0 {
                col += run;
                continue;
            }
            let s = if k == 1 { "" } else { "s" };
            let (attr, what) = if per_node {
                let (a, b) = (nodes[col], nodes[col + run - 1]);
                let list = if a == b { a.to_string() } else { format!("{a}-{b}") };
                let each = if a == b { "" } else { " each" };
                (
                    format!(
                        r#"data-node="{a}" data-tip="{}""#,
                        escape(&format!("{} on node {list}: {k} vector{s}{each}", dev.name))
                    ),
                    String::new(),
                )
            } else {
                let cpu = order[col];
                (
                    format!(r#"data-cpu="{cpu}""#),
                    format!(
                        "<title>{}: {k} vector{s}</title>",
                        escape(&format!("{} on CPU {cpu}", dev.name))
                    ),
                )
            };
            let _ = writeln!(
                out,
                r#"<rect class="hit" {attr} x="{}" y="{y}" width="{}" height="{row_h}" fill="{}">{what}</rect>"#,
                name_px + col as u32 * cell_w,
                (run as u32 * cell_w).saturating_sub(1).max(1),
                seq_colour(k.max(1), max.max(1)),
            );
            col += run;
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

    /// Attribute `name` of the first element that has it, as a number.
    fn attr(tag: &str, name: &str) -> f64 {
        let k = format!(" {name}=\"");
        let i = tag.find(&k).unwrap_or_else(|| panic!("no {name} in {tag}")) + k.len();
        tag[i..i + tag[i..].find('"').unwrap()].parse().unwrap()
    }

    /// Every picture scales to its box: width 100%, a viewBox, no pixel width or height; every
    /// cell inside the viewBox; SMT siblings touch; the legend labels each step and the ideal.
    #[test]
    fn heatmap_fits_its_viewbox_and_labels_its_scale() {
        let (s, o, m) = run(
            "azure-l96as-v4",
            vec![DeviceSpec {
                pre: 1,
                ..DeviceSpec::new(6, 62)
            }],
        );
        let topo = s.topology();
        for svg in [
            heatmap(topo, &m, HeatMetric::Devices, None),
            diff_heatmap(topo, &m, &m, HeatMetric::Irqs, None),
            device_strip(topo, &o, None),
        ] {
            let open = &svg[..svg.find('>').unwrap()];
            assert!(open.contains(r#"width="100%""#) && !open.contains(" height="), "{open}");
            let (w, h) = (attr(open, "data-w"), attr(open, "data-h"));
            for rect in svg.split("<rect").skip(1).filter(|r| r.contains("data-cpu")) {
                let (x, y) = (attr(rect, "x"), attr(rect, "y"));
                assert!(x >= 0.0 && x + attr(rect, "width") <= w, "{rect} beyond width {w}");
                assert!(y >= 0.0 && y + attr(rect, "height") <= h, "{rect} beyond height {h}");
            }
        }
        let svg = heatmap(topo, &m, HeatMetric::Devices, None);
        // SMT siblings side by side: CPU 0's sibling is the next cell, one pixel apart.
        let x_of = |cpu: u32| {
            let k = format!(r#"data-cpu="{cpu}" "#);
            attr(&svg[svg.find(&k).unwrap()..], "x")
        };
        let sib = topo.smt(0).iter().find(|&c| c != 0).unwrap();
        assert_eq!(x_of(sib) - x_of(0), 19.0);
        let max = m.devices_per_cpu_max;
        for v in 0..=max {
            assert!(svg.contains(&format!(r#"data-step="{v}""#)), "step {v} missing");
        }
        assert!(svg.contains(&format!(">ideal {}</text>", m.ideal.devices_per_cpu_max)));
        // Unchanged CPUs in a difference map are a visible grey, not white.
        let diff = diff_heatmap(topo, &m, &m, HeatMetric::Irqs, None);
        assert!(diff.contains(&format!(r#"fill="{UNCHANGED_FILL}""#)) && !diff.contains(r##"fill="#ffffff""##));
    }

    /// Big machines: a node × slot overview whose rows fold runs; the shared scale darkens less.
    #[test]
    fn big_machine_overview_and_shared_scale() {
        let (s, _o, m) = run("synthetic-8192", vec![DeviceSpec::new(16, 64)]);
        let svg = heatmap(s.topology(), &m, HeatMetric::Irqs, None);
        assert_eq!(svg.matches(r#"<g class="node""#).count(), 64);
        assert!(svg.matches("<rect class=\"cpu").count() <= 64 * 4, "runs are folded");
        assert!(svg.len() < 40_000, "{} bytes", svg.len());
        let own = heatmap(s.topology(), &m, HeatMetric::Irqs, Some(0));
        let shared = heatmap_scaled(s.topology(), &m, HeatMetric::Irqs, Some(0), Some(4));
        let cells_of = |svg: &str| svg[..svg.find(r#"<g class="legend""#).unwrap()].to_string();
        let (own, shared) = (cells_of(&own), cells_of(&shared));
        let hot = |max: u32| format!(r#"fill="{}""#, seq_colour(1, max));
        assert!(own.contains(&hot(1)) && !shared.contains(&hot(1)), "{shared}");
        assert!(shared.contains(&hot(4)));
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
