//! The per-CPU heatmap, in one figure system every page shares (scenario, compare, live):
//! fixed cell sizes and one type scale, never scaled up (the root carries its drawn size;
//! pages only shrink a figure to fit its box), rows that break at package, core-kind, cluster
//! and core boundaries and say so, and a colour scale anchored at the ideal.
//!
//! Layout. A node is a block headed by its CPUs (and its package on a machine of several).
//! Its CPUs are drawn in topology order (package, cluster, core, thread). They are cut into
//! rows of at most [`ROW_CELLS_NUMBERED`] (or [`ROW_CELLS_PLAIN`]) cells: a row never splits a
//! cluster unless the cluster alone is wider than a row (then it breaks between cores), a new
//! package or a new kind of core starts a new row, and the rows of a run are balanced (48 CPUs
//! become two rows of 24, not 32 and 16). SMT siblings touch; cores are 3 px apart, clusters
//! 8 px with a dashed line. On a hybrid part the rows of each kind are labelled "P-cores" and
//! "E-cores" (inferred from the shape: single-core clusters against multi-core clusters of
//! single-thread cores, as on Alder Lake and later). A node in another package than the one
//! above it starts after a package gap and a rule.
//!
//! Colour. Values at or below the ideal bound are blues that never look hot (a perfect
//! placement is pale); values above it run from orange to dark red at the scale's maximum, and
//! carry a red outline. Without an ideal (single-CPU counts, live rates) one blue ramp is used.
//! A compare draws both sides on one scale ([`heatmap_on_scale`]).
//!
//! Beyond [`CELLS_UNFOLDED_MAX`] CPUs the heatmap is a node × CPU-slot overview: one row per
//! node, runs of equal value folded into one segment; a node can be drawn on its own.

use super::svg::{escape, push_escaped, push_i64, push_num, push_u64, svg_open, Fill, HeatMetric};
use crate::metrics::Metrics;
use crate::topology::{CpuSet, Topology};
use colour::{div_colour, is_dark, OFFLINE, ZERO};
pub(crate) use colour::{load_colour, seq_colour};
use rows::{plan_rows, unit_key, RowPlan};
use std::fmt::Write;

mod colour;
mod rows;

/// Views with more CPUs than this are drawn as the folded overview.
pub(crate) const CELLS_UNFOLDED_MAX: u32 = 1024;
/// Views up to this many CPUs draw big cells with the CPU number inside each.
pub(crate) const NUMBERED_CELLS_MAX: u32 = 256;
/// Most cells in a row: numbered cells, and plain ones.
pub(crate) const ROW_CELLS_NUMBERED: usize = 24;
pub(crate) const ROW_CELLS_PLAIN: usize = 48;
/// A plain row's cells carry a CPU number above every this many.
const PLAIN_TICK_EVERY: u32 = 16;
/// Cell sides, in pixels.
const CELL_NUMBERED_PX: u32 = 18;
const CELL_PLAIN_PX: u32 = 11;
/// Left gutter: the row's kind ("P-cores") and its first CPU.
const GUTTER_PX: u32 = 64;
/// Space between cores and between clusters of one row.
const CORE_GAP_PX: f64 = 3.0;
const CLUSTER_GAP_PX: f64 = 8.0;
/// Extra space above a node in another package than the node before.
const PACKAGE_GAP_PX: u32 = 12;
/// Height of a node's header line.
const LABEL_PX: u32 = 18;
/// The folded overview: the width of a node's row, and its height.
const MATRIX_ROW_W_PX: u32 = 480;
const MATRIX_ROW_PX: u32 = 9;
/// Narrowest figure: the legend's width (its longest line, at 11 px).
const WIDTH_MIN_PX: u32 = 480;

/// Possible CPUs of a node in drawing order: package, cluster, core (SMT set), thread.
pub(crate) fn layout_order(topo: &Topology, node: u32) -> Vec<u32> {
    // Each key once, then one sort; the keys end in the CPU, so they are distinct and the
    // order is that of a stable sort. A cluster's or core's first CPU is a scan of its mask
    // (up to 128 words on 8,192 CPUs); neighbours share their masks, so the last scan is kept.
    let mut last_cluster: Option<(*const CpuSet, Option<u32>)> = None;
    let mut last_core: Option<(*const CpuSet, Option<u32>)> = None;
    let first_of = |set: &CpuSet, last: &mut Option<(*const CpuSet, Option<u32>)>| match *last {
        Some((p, first)) if std::ptr::eq(p, set) => first,
        _ => {
            let first = set.first();
            *last = Some((set, first));
            first
        }
    };
    let mut keyed: Vec<(u32, u32, u32, u32)> = topo
        .node_cpus(node)
        .iter()
        .map(|cpu| {
            let cluster = first_of(topo.drawn_cluster(cpu), &mut last_cluster).unwrap_or(u32::MAX);
            let core = first_of(topo.drawn_smt(cpu), &mut last_core).unwrap_or(cpu);
            (topo.cpu_to_package(cpu), cluster, core, cpu)
        })
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|k| k.3).collect()
}

/// The nodes a view shows: one when zoomed (if it has CPUs), else every node with CPUs.
pub(crate) fn view_nodes(topo: &Topology, zoom: Option<u32>) -> Vec<u32> {
    match zoom {
        Some(n) if !topo.node_cpus(n).is_empty() => vec![n],
        _ => topo.nodes_with_cpus().collect(),
    }
}

/// One cell to draw: a CPU or (folded) a run of CPUs with the same value.
struct Cell {
    /// The CPUs of a folded run of more than one (a single CPU is `first` alone).
    run: Option<CpuSet>,
    first: u32,
    n: u32,
    online: bool,
    value: i64,
}

impl Cell {
    fn one(cpu: u32, online: bool, value: i64) -> Cell {
        Cell {
            run: None,
            first: cpu,
            n: 1,
            online,
            value,
        }
    }
}

/// Runs of equal (online, value) in drawing order.
fn folded_cells(order: &[u32], online: &CpuSet, value: &dyn Fn(u32) -> i64) -> Vec<Cell> {
    let mut out: Vec<Cell> = Vec::with_capacity(16);
    for &cpu in order {
        let (on, v) = (online.contains(cpu), value(cpu));
        if let Some(last) = out.last_mut() {
            if last.online == on && last.value == v {
                let first = last.first;
                last.run.get_or_insert_with(|| CpuSet::from_cpus([first])).insert(cpu);
                last.n += 1;
                continue;
            }
        }
        out.push(Cell::one(cpu, on, v));
    }
    out
}

struct Grid<'a> {
    topo: &'a Topology,
    zoom: Option<u32>,
    class: &'a str,
    label: String,
    value: &'a dyn Fn(u32) -> i64,
    colour: &'a dyn Fn(i64) -> Fill,
    /// Cells above this get the "over" outline.
    over: Option<i64>,
    unit: &'a str,
    legend: String,
}

/// Bytes a drawn cell takes, about (a rect with its tooltip and, numbered, its text), to
/// size a picture's buffer once.
const CELL_BYTES: usize = 300;

fn draw_grid(g: &Grid<'_>) -> String {
    let nodes = view_nodes(g.topo, g.zoom);
    let n_view: u32 = nodes.iter().map(|&n| g.topo.node_cpus(n).weight()).sum();
    let (width, y, body) = if n_view > CELLS_UNFOLDED_MAX {
        let mut body = String::with_capacity(nodes.len() * 8 * CELL_BYTES + 1024);
        let (w, y) = draw_matrix(g, &nodes, &mut body);
        (w, y, body)
    } else {
        let mut body = String::with_capacity(n_view as usize * CELL_BYTES + nodes.len() * 160);
        let (w, y) = draw_cells(g, &nodes, n_view <= NUMBERED_CELLS_MAX, &mut body);
        (w, y, body)
    };
    let width = width.max(WIDTH_MIN_PX);
    let legend_y = y + 16;
    let height = legend_y + 60;
    // The unit a cell's hover text names ("CPU 5: 2 irqs"), for the page's script.
    let open = svg_open(g.class, &g.label, width, height).replacen(
        "<svg ",
        &format!("<svg data-unit=\"{}\" ", escape(g.unit)),
        1,
    );
    let mut out = String::with_capacity(open.len() + body.len() + g.legend.len() + 80);
    out.push_str(&open);
    out.push_str(&body);
    out.push_str("<g class=\"legend\" transform=\"translate(");
    push_u64(&mut out, u64::from(GUTTER_PX));
    out.push(',');
    push_u64(&mut out, u64::from(legend_y));
    out.push_str(")\">");
    out.push_str(&g.legend);
    out.push_str("</g>\n</svg>\n");
    out
}

/// A boundary line of `class` from (`x1`, `y1`) to (`x2`, `y2`); whole numbers print without a
/// decimal point.
fn push_line(body: &mut String, class: &str, (x1, y1): (f64, f64), (x2, y2): (f64, f64)) {
    body.push_str("<line class=\"");
    body.push_str(class);
    for (attr, v) in [("\" x1=\"", x1), ("\" y1=\"", y1), ("\" x2=\"", x2), ("\" y2=\"", y2)] {
        body.push_str(attr);
        push_num(body, v);
    }
    body.push_str("\"/>\n");
}

/// A `<text>` of `class` at (`x`, `y`) with `anchor`, its content escaped.
fn push_text(body: &mut String, class: &str, x: f64, y: i64, anchor: &str, text: &str) {
    body.push_str("<text class=\"");
    body.push_str(class);
    body.push_str("\" x=\"");
    push_num(body, x);
    body.push_str("\" y=\"");
    push_i64(body, y);
    if anchor != "start" {
        body.push_str("\" text-anchor=\"");
        body.push_str(anchor);
    }
    body.push_str("\">");
    push_escaped(body, text);
    body.push_str("</text>\n");
}

/// The cell geometry of a view: side, pitch between rows, and whether cells carry numbers.
#[derive(Clone, Copy)]
struct Geometry {
    cell: u32,
    row_pitch: u32,
    numbered: bool,
}

/// One row: gutter label and first-CPU tick, cells with core and cluster gaps, SMT bars.
/// Returns the row's width.
fn draw_row(g: &Grid<'_>, row: &RowPlan<'_>, y: u32, geo: Geometry, body: &mut String) -> f64 {
    let Geometry { cell, numbered, .. } = geo;
    // The row is a group at its cells' top: the cells need no y of their own (a 1,024-CPU
    // heatmap is 7 KB lighter), the plain view's CPU ticks sit just above it.
    let top = if numbered { y } else { y + 9 };
    body.push_str("<g class=\"row\" transform=\"translate(0,");
    push_u64(body, u64::from(top));
    body.push_str(")\">\n");
    let mid = i64::from(cell / 2 + 4);
    if let Some(label) = row.label {
        push_text(body, "lbl kind", 0.0, mid, "start", label);
    }
    let mut x = 0f64;
    let mut prev: Option<(u32, u32, u32)> = None;
    let mut col = 0u32;
    let mut bars = String::new();
    for core in &row.cores {
        let k = unit_key(g.topo, core[0]);
        if let Some(p) = prev {
            // A cluster boundary is marked only where a cluster holds several cores (a
            // cluster of one core is just a core).
            let multi = |first: u32| g.topo.drawn_cluster(first).weight() > g.topo.drawn_smt(first).weight();
            let new_cluster = p.1 != k.1 || p.0 != k.0;
            let gap = if new_cluster && (multi(p.2) || multi(k.2)) {
                CLUSTER_GAP_PX
            } else {
                CORE_GAP_PX
            };
            if gap == CLUSTER_GAP_PX {
                let x = f64::from(GUTTER_PX) + x + gap / 2.0;
                push_line(body, "clu", (x, 0.0), (x, f64::from(cell)));
            }
            x += gap;
        } else {
            let mut tick = String::new();
            push_u64(&mut tick, u64::from(core[0]));
            push_text(body, "tick", f64::from(GUTTER_PX - 4), mid, "end", &tick);
        }
        let core_x = x;
        for &cpu in *core {
            let c = Cell::one(cpu, g.topo.online().contains(cpu), (g.value)(cpu));
            let cx = f64::from(GUTTER_PX) + x;
            cell_rect(body, g, &c, cx, (0, f64::from(cell), cell), Mark::Row { numbered });
            if numbered {
                let fill = if c.online { (g.colour)(c.value) } else { OFFLINE };
                let mut n = String::new();
                push_u64(&mut n, u64::from(cpu));
                let class = if is_dark(fill) { "n light" } else { "n" };
                push_text(body, class, cx + f64::from(cell) / 2.0, mid, "middle", &n);
            } else if col.is_multiple_of(PLAIN_TICK_EVERY) {
                let mut n = String::new();
                push_u64(&mut n, u64::from(cpu));
                push_text(body, "tick", cx, -2, "start", &n);
            }
            x += f64::from(cell + 1);
            col += 1;
        }
        if core.len() > 1 {
            // SMT siblings side by side, joined by a bar under the core: the row's bars are
            // one path.
            bars.push('M');
            push_num(&mut bars, f64::from(GUTTER_PX) + core_x);
            bars.push(' ');
            push_u64(&mut bars, u64::from(cell + 1));
            bars.push('H');
            push_num(&mut bars, f64::from(GUTTER_PX) + x - 1.0);
        }
        prev = Some(k);
    }
    if !bars.is_empty() {
        body.push_str("<path class=\"smt\" d=\"");
        body.push_str(&bars);
        body.push_str("\"/>\n");
    }
    body.push_str("</g>\n");
    x
}

/// The heading of a node's block: "node 0 · CPUs 0-47", with its package on a machine of
/// several ("· package 1").
fn node_heading(topo: &Topology, node: u32) -> String {
    let cpus = topo.node_cpus(node);
    let mut text = format!("node {node} · CPUs {}", cpus.to_cpulist());
    if topo.package_sets().len() > 1 {
        let mut packages: Vec<u32> = cpus.iter().map(|c| topo.cpu_to_package(c)).collect();
        packages.dedup();
        packages.sort_unstable();
        packages.dedup();
        let list: Vec<String> = packages.iter().map(u32::to_string).collect();
        let _ = write!(
            text,
            " · package{} {}",
            if packages.len() == 1 { "" } else { "s" },
            list.join(", ")
        );
    }
    text
}

/// One cell per CPU, nodes as blocks, rows as [`plan_rows`] cuts them. Returns the
/// (width, height) used.
fn draw_cells(g: &Grid<'_>, nodes: &[u32], numbered: bool, body: &mut String) -> (u32, u32) {
    let geo = if numbered {
        Geometry {
            cell: CELL_NUMBERED_PX,
            row_pitch: CELL_NUMBERED_PX + 5,
            numbered,
        }
    } else {
        Geometry {
            cell: CELL_PLAIN_PX,
            row_pitch: CELL_PLAIN_PX + 13,
            numbered,
        }
    };
    let row_cells = if numbered { ROW_CELLS_NUMBERED } else { ROW_CELLS_PLAIN };
    let mut y = 0u32;
    let mut width = 0f64;
    let mut last_package: Option<u32> = None;
    for &node in nodes {
        let order = layout_order(g.topo, node);
        let package = order.first().map(|&c| g.topo.cpu_to_package(c));
        if last_package.is_some() && package != last_package {
            y += PACKAGE_GAP_PX;
            let line_y = f64::from(y - PACKAGE_GAP_PX / 2);
            let right = f64::from(GUTTER_PX + 24 * (geo.cell + 1));
            push_line(body, "pkg", (0.0, line_y), (right, line_y));
        }
        last_package = package;
        push_text(
            body,
            "lbl",
            0.0,
            i64::from(y + 13),
            "start",
            &node_heading(g.topo, node),
        );
        y += LABEL_PX;
        let _ = writeln!(body, r#"<g class="node" data-node="{node}">"#);
        for row in plan_rows(g.topo, &order, row_cells) {
            width = width.max(draw_row(g, &row, y, geo, body));
            y += geo.row_pitch;
        }
        y += 6;
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
        r#"<text class="lbl" x="0" y="12">{} nodes × CPU position (each node's CPUs in topology order; pick a node to see its CPUs)</text>"#,
        nodes.len()
    );
    for q in 0..=4u32 {
        let slot = (slots - 1) * q / 4;
        let x = f64::from(GUTTER_PX) + (f64::from(slot) + 0.5) / f64::from(slots) * f64::from(MATRIX_ROW_W_PX);
        let anchor = match q {
            0 => "start",
            4 => "end",
            _ => "middle",
        };
        let mut t = String::new();
        push_u64(&mut t, u64::from(slot));
        push_text(body, "tick", x, 28, anchor, &t);
    }
    let mut y = 32u32;
    for &node in nodes {
        let order = layout_order(g.topo, node);
        let _ = writeln!(
            body,
            r#"<g class="node" data-node="{node}"><text class="tick" x="{}" y="{}" text-anchor="end">n{node}</text>"#,
            GUTTER_PX - 4,
            y + MATRIX_ROW_PX - 1
        );
        let mut x = 0.0f64;
        for c in &folded_cells(&order, g.topo.online(), g.value) {
            let w = f64::from(c.n) / f64::from(slots) * f64::from(MATRIX_ROW_W_PX);
            cell_rect(
                body,
                g,
                c,
                f64::from(GUTTER_PX) + x,
                (y, w.max(0.5), MATRIX_ROW_PX),
                Mark::Run,
            );
            x += w;
        }
        body.push_str("</g>\n");
        y += MATRIX_ROW_PX + 1;
    }
    (GUTTER_PX + MATRIX_ROW_W_PX + 4, y)
}

/// How a cell is marked up.
#[derive(Clone, Copy)]
enum Mark {
    /// A folded run of the overview: `data-tip` carries its CPUs and count.
    Run,
    /// One CPU in a row group: no hover text of its own (the page's script says "CPU 5: 2
    /// irqs" from its `data-cpu`, `data-v` and the figure's `data-unit`, and writes it as a
    /// `<title>` into a downloaded figure). Cells without numbers (views of more than
    /// [`NUMBERED_CELLS_MAX`] CPUs) are known by their row group, without the class `cpu`.
    /// Together 47 bytes a cell: a 1,024-CPU heatmap is 48 KB lighter.
    Row { numbered: bool },
}

/// One cell at `x` of `(y, width, height)`; a `y` of 0 (a cell of a row group) is left out.
/// Written piece by piece into `out` (no intermediate strings but a folded run's cpulist).
fn cell_rect(out: &mut String, g: &Grid<'_>, c: &Cell, x: f64, (y, w, h): (u32, f64, u32), mark: Mark) {
    let fill = if c.online { (g.colour)(c.value) } else { OFFLINE };
    let over = c.online && g.over.is_some_and(|o| c.value > o);
    let class = match (c.online, over) {
        (false, _) => "cpu off",
        (true, true) => "cpu over",
        (true, false) => "cpu",
    };
    let class = match mark {
        Mark::Row { numbered: false } => class[3..].trim_start(),
        _ => class,
    };
    let tip = matches!(mark, Mark::Run);
    // Cpulist text is digits, ',' and '-' only: nothing to escape.
    let list = c.run.as_ref().map(CpuSet::to_cpulist);
    let push_list = |out: &mut String| match &list {
        Some(list) => out.push_str(list),
        None => push_u64(out, u64::from(c.first)),
    };
    // "CPU 5: 2 irqs" / "CPUs 0-3 (4): offline or not present", escaped.
    let push_tip = |out: &mut String| {
        if c.n == 1 {
            out.push_str("CPU ");
            push_u64(out, u64::from(c.first));
        } else {
            out.push_str("CPUs ");
            push_list(out);
            out.push_str(" (");
            push_u64(out, u64::from(c.n));
            out.push(')');
        }
        if c.online {
            out.push_str(": ");
            push_i64(out, c.value);
            out.push(' ');
            push_escaped(out, g.unit);
        } else {
            out.push_str(": offline or not present");
        }
    };
    out.push_str("<rect");
    if !class.is_empty() {
        out.push_str(" class=\"");
        out.push_str(class);
        out.push('"');
    }
    out.push_str(" data-cpu=\"");
    push_u64(out, u64::from(c.first));
    // A run's CPUs; a single CPU is its data-cpu alone.
    if c.run.is_some() {
        out.push_str("\" data-cpus=\"");
        push_list(out);
    }
    out.push_str("\" data-v=\"");
    push_i64(out, c.value);
    if tip {
        out.push_str("\" data-tip=\"");
        push_tip(out);
    }
    out.push_str("\" x=\"");
    push_num(out, x);
    if y != 0 {
        out.push_str("\" y=\"");
        push_u64(out, u64::from(y));
    }
    out.push_str("\" width=\"");
    push_num(out, w);
    out.push_str("\" height=\"");
    push_u64(out, u64::from(h));
    out.push_str("\" fill=\"");
    out.push_str(fill.as_str());
    out.push_str("\"/>\n");
}

/// The labelled steps of a scale `0..=max`: every value up to 12, else eleven even steps (the
/// ideal among them).
fn legend_steps(max: u32, ideal: Option<u32>) -> Vec<u32> {
    if max <= 12 {
        return (0..=max).collect();
    }
    let mut v: Vec<u32> = (0..=10u32)
        .map(|i| (u64::from(max) * u64::from(i) / 10) as u32)
        .collect();
    if let Some(ideal) = ideal.filter(|&i| i < max) {
        v.push(ideal);
        v.sort_unstable();
    }
    v.dedup();
    v
}

/// A legend step's label, four characters at most: the value up to 9,999, then rounded to
/// thousands, millions or billions ("12k", "1.5M"), so twelve steps fit the narrowest figure.
fn step_label(v: u32) -> String {
    if v < 10_000 {
        return v.to_string();
    }
    let k = (f64::from(v) / 1e3).round();
    if k < 1000.0 {
        return format!("{k:.0}k");
    }
    let m = f64::from(v) / 1e6;
    match m {
        m if m < 9.95 => format!("{m:.1}M"),
        m if m < 999.5 => format!("{m:.0}M"),
        m => format!("{:.1}G", m / 1e3),
    }
}

/// Legend of the load scale `0..=max` (anchored at `ideal` when there is one): labelled steps,
/// the ideal's step outlined and named, and what the colours mean.
fn load_legend(max: u32, ideal: Option<u32>, unit: &str) -> String {
    let values = legend_steps(max, ideal);
    let mut out = String::new();
    let labels: Vec<String> = values.iter().map(|&v| step_label(v)).collect();
    // Each step as wide as its label needs (10 px ticks, about 6 px a character, with a gap),
    // at least 24 px: live rates past 1,000/s overlapped at 24. Four characters make 32 px.
    let widest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(1) as u32;
    let sw = (widest * 6 + 8).max(24);
    for (i, (&v, label)) in values.iter().zip(&labels).enumerate() {
        let x = i as u32 * sw;
        let _ = write!(
            out,
            r##"<rect class="step" data-step="{v}" x="{x}" y="0" width="{sw}" height="10" fill="{}"/><text class="tick" x="{}" y="22" text-anchor="middle">{label}</text>"##,
            load_colour(v, ideal, max),
            x + sw / 2
        );
    }
    let note = format!("{} per CPU; grey: offline", escape(unit));
    if let Some(ideal) = ideal {
        // The ideal's step, outlined.
        let i = values
            .iter()
            .position(|&v| v >= ideal)
            .unwrap_or(values.len().saturating_sub(1));
        let _ = write!(
            out,
            r#"<rect class="ideal" x="{}" y="-2" width="{sw}" height="14" fill="none"/><text class="tick ideal" x="{}" y="-5" text-anchor="middle">ideal {ideal}</text>"#,
            i as u32 * sw,
            i as u32 * sw + sw / 2
        );
        let _ = write!(
            out,
            r#"<text class="lbl" x="0" y="52">blue: at or below the ideal; orange to red, outlined: above it</text>"#
        );
    }
    let _ = write!(out, r#"<text class="lbl" x="0" y="38">{note}</text>"#);
    out
}

/// Per-CPU heatmap of one metric on its own scale (its maximum, anchored at the ideal).
pub(crate) fn heatmap(topo: &Topology, m: &Metrics, metric: HeatMetric, zoom: Option<u32>) -> String {
    let max = m
        .per_cpu
        .iter()
        .filter(|c| c.online)
        .map(|c| metric.value(c, m.basis))
        .max()
        .unwrap_or(0);
    heatmap_on_scale(topo, m, metric, zoom, max)
}

/// [`heatmap`] on the colour scale `0..=max` exactly (a compare draws both sides on one
/// scale): a value above `max` takes the darkest step, equal values get equal colours on
/// every picture drawn with the same `max`; the ideal anchors the scale.
pub(crate) fn heatmap_on_scale(
    topo: &Topology,
    m: &Metrics,
    metric: HeatMetric,
    zoom: Option<u32>,
    max: u32,
) -> String {
    let values: Vec<(u32, u32)> = m.per_cpu.iter().map(|c| (c.cpu, metric.value(c, m.basis))).collect();
    let lookup = |cpu: u32| -> i64 {
        values
            .binary_search_by_key(&cpu, |(c, _)| *c)
            .map(|i| i64::from(values[i].1))
            .unwrap_or(0)
    };
    let ideal = metric.ideal(m);
    let max = max.max(ideal.unwrap_or(0));
    let colour = |v: i64| load_colour(v as u32, ideal, max);
    draw_grid(&Grid {
        topo,
        zoom,
        class: "heatmap",
        label: format!("per-CPU {}", metric.describe()),
        value: &lookup,
        colour: &colour,
        over: ideal.map(i64::from),
        unit: metric.name(),
        legend: load_legend(max, ideal, metric.name()),
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
        legend: load_legend(max, None, unit),
    })
}

/// Per-CPU share of boots, in percent (`percent` ordered by CPU; CPUs not listed are 0),
/// laid out exactly as [`heatmap`] on the fixed scale 0..100: the probe-order distribution's
/// P(CPU above the ideal). Every CPU in some boot above the ideal is outlined.
pub(crate) fn percent_heatmap(topo: &Topology, percent: &[(u32, u32)], label: &str, zoom: Option<u32>) -> String {
    let lookup = |cpu: u32| -> i64 {
        percent
            .binary_search_by_key(&cpu, |v| v.0)
            .map(|i| i64::from(percent[i].1.min(100)))
            .unwrap_or(0)
    };
    // A CPU above the ideal in any boot takes at least the first warm step.
    let colour = |v: i64| match v {
        0 => ZERO,
        v => load_colour(1 + v as u32, Some(1), 101),
    };
    draw_grid(&Grid {
        topo,
        zoom,
        class: "heatmap percent",
        label: label.to_string(),
        value: &lookup,
        colour: &colour,
        over: Some(0),
        unit: "%",
        legend: percent_legend(),
    })
}

/// The legend of [`percent_heatmap`]: 0, 1, 25, 50, 75, 100 %.
fn percent_legend() -> String {
    let mut out = String::new();
    for (i, p) in [0u32, 1, 25, 50, 75, 100].into_iter().enumerate() {
        let x = i as u32 * 34;
        let fill = if p == 0 { ZERO } else { load_colour(1 + p, Some(1), 101) };
        let _ = write!(
            out,
            r##"<rect class="step" data-step="{p}" x="{x}" y="0" width="34" height="10" fill="{fill}"/><text class="tick" x="{}" y="22" text-anchor="middle">{p}%</text>"##,
            x + 17
        );
    }
    let _ = write!(
        out,
        r#"<text class="lbl" x="0" y="38">share of boots in which the CPU serves more IRQs than the ideal worst CPU</text>"#
    );
    out
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
    signed_heatmap(
        topo,
        &deltas,
        &format!(
            "B − A {m} per CPU: green fewer on B, purple more on B",
            m = escape(metric.name())
        ),
        format!("per-CPU change B - A, {}", metric.describe()),
        zoom,
    )
}

/// Per-CPU share of boots above the ideal, B − A in percentage points (`deltas` ordered by
/// CPU), on the diverging scale of [`diff_heatmap`]: two probe-order distributions compared.
pub(crate) fn share_diff_heatmap(topo: &Topology, deltas: &[(u32, i64)], zoom: Option<u32>) -> String {
    signed_heatmap(
        topo,
        deltas,
        "B − A in points: green lower on B, purple higher on B",
        "per-CPU change B - A, share of boots above the ideal (points)".to_string(),
        zoom,
    )
}

/// A grid of signed per-CPU values (`deltas` ordered by CPU; CPUs not listed are 0) on a
/// diverging scale symmetric about 0, with `meaning` under the legend's steps.
fn signed_heatmap(topo: &Topology, deltas: &[(u32, i64)], meaning: &str, label: String, zoom: Option<u32>) -> String {
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
            r##"<rect class="step" data-step="{d}" x="{x}" y="0" width="24" height="10" fill="{}"/><text class="tick" x="{}" y="22" text-anchor="middle">{}</text>"##,
            div_colour(*d, span),
            x + 12,
            if *d > 0 { format!("+{d}") } else { d.to_string() }
        );
    }
    let _ = write!(
        legend,
        r#"<text class="lbl" x="0" y="38">{meaning}</text><text class="lbl" x="0" y="52">light grey: unchanged; grey: offline</text>"#
    );
    draw_grid(&Grid {
        topo,
        zoom,
        class: "heatmap diff",
        label,
        value: &lookup,
        colour: &colour,
        over: None,
        unit: "change",
        legend,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue;
    use crate::scenario::spec::{DeviceSpec, ScenarioSpec, TopologyRef};
    use crate::{metrics, scenario};
    use colour::UNCHANGED_FILL;

    fn run(preset: &str, devices: Vec<DeviceSpec>) -> (scenario::Scenario, Metrics) {
        let spec = ScenarioSpec::new(TopologyRef::Preset(preset.into()), devices);
        let s = spec.resolve(catalogue::get).unwrap();
        let o = scenario::run(&s);
        let m = metrics::compute(&s, &o);
        (s, m)
    }

    /// Attribute `name` of the first element that has it, as a number.
    fn attr(tag: &str, name: &str) -> f64 {
        let k = format!(" {name}=\"");
        let i = tag.find(&k).unwrap_or_else(|| panic!("no {name} in {tag}")) + k.len();
        tag[i..i + tag[i..].find('"').unwrap()].parse().unwrap()
    }

    /// Drawn at its size (width and height in pixels, never scaled up), every cell inside it;
    /// SMT siblings touch; the legend labels each step and the ideal.
    #[test]
    fn heatmap_is_drawn_at_its_size_and_labels_its_scale() {
        let (s, m) = run(
            "azure-l96as-v4",
            vec![DeviceSpec {
                pre: 1,
                ..DeviceSpec::new(6, 62)
            }],
        );
        let topo = s.topology();
        let svg = heatmap(topo, &m, HeatMetric::Devices, None);
        let open = &svg[..svg.find('>').unwrap()];
        let (w, h) = (attr(open, "width"), attr(open, "height"));
        assert_eq!((w, h), (attr(open, "data-w"), attr(open, "data-h")));
        assert!(!open.contains("style="), "no inline style (the page's CSP refuses it)");
        // A row is a group at its top; its cells' y (0 when left out) counts from there.
        let mut cells = 0;
        for (i, row) in svg.split(r#"<g class="row" transform="translate(0,"#).enumerate() {
            let (top, inside) = match i {
                0 => (0.0, row),
                _ => (
                    row[..row.find(')').unwrap()].parse::<f64>().unwrap(),
                    &row[..row.find("</g>").unwrap()],
                ),
            };
            for rect in inside.split("<rect").skip(1).filter(|r| r.contains("data-cpu")) {
                let rect = &rect[..rect.find('>').unwrap()];
                let x = attr(rect, "x");
                let y = top + if rect.contains(" y=\"") { attr(rect, "y") } else { 0.0 };
                assert!(x >= 0.0 && x + attr(rect, "width") <= w, "{rect} beyond width {w}");
                assert!(y >= 0.0 && y + attr(rect, "height") <= h, "{rect} beyond height {h}");
                cells += 1;
            }
        }
        assert_eq!(cells, 96);
        let x_of = |cpu: u32| {
            let k = format!(r#"data-cpu="{cpu}" "#);
            attr(&svg[svg.find(&k).unwrap()..], "x")
        };
        let sib = topo.drawn_smt(0).iter().find(|&c| c != 0).unwrap();
        assert_eq!(x_of(sib) - x_of(0), 19.0);
        for v in 0..=m.devices_per_cpu_max {
            assert!(svg.contains(&format!(r#"data-step="{v}""#)), "step {v} missing");
        }
        assert!(svg.contains(&format!(">ideal {}</text>", m.ideal.devices_per_cpu_max)));
        let diff = diff_heatmap(topo, &m, &m, HeatMetric::Irqs, None);
        assert!(diff.contains(&format!(r#"fill="{UNCHANGED_FILL}""#)) && !diff.contains(r##"fill="#ffffff""##));
    }

    /// Legend labels fit their steps at any scale (a live rate of thousands a second used to
    /// overlap its neighbours), and twelve steps fit the narrowest figure.
    #[test]
    fn legend_labels_fit_their_steps() {
        for v in [
            0,
            9,
            999,
            9_999,
            10_000,
            12_345,
            99_999,
            999_499,
            999_999,
            1_234_567,
            9_960_000,
            999_999_999,
            u32::MAX,
        ] {
            assert!(step_label(v).chars().count() <= 4, "{v}: {}", step_label(v));
        }
        assert_eq!(
            [12_345, 999_999, 1_500_000, 250_000_000].map(step_label),
            ["12k", "1.0M", "1.5M", "250M"]
        );
        for max in [12, 1_000, 5_000, 123_456, 7_000_000] {
            let legend = load_legend(max, None, "irq/s");
            let steps: Vec<&str> = legend.split("<rect class=\"step\"").skip(1).collect();
            let sw = attr(steps[0], "width");
            assert!(
                steps.len() as f64 * sw <= f64::from(WIDTH_MIN_PX - GUTTER_PX),
                "{max}: {legend}"
            );
            for s in &steps {
                let label = &s[s.find("\">").unwrap() + 2..];
                let label = label[..label.find('<').unwrap()].to_string();
                // About 6 px a character of a 10 px tick, with 2 px either side.
                assert!(
                    label.chars().count() as f64 * 6.0 + 4.0 <= sw,
                    "{max}: {label:?} in {sw} px"
                );
            }
        }
    }

    /// Big machines: a node × slot overview whose rows fold runs.
    #[test]
    fn big_machine_overview() {
        let (s, m) = run("synthetic-8192", vec![DeviceSpec::new(16, 64)]);
        let svg = heatmap(s.topology(), &m, HeatMetric::Irqs, None);
        assert_eq!(svg.matches(r#"<g class="node""#).count(), 64);
        assert!(svg.matches("<rect class=\"cpu").count() <= 64 * 4, "runs are folded");
        assert!(svg.len() < 40_000, "{} bytes", svg.len());
    }
}
