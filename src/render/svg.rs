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
    push_escaped(&mut out, text);
    out
}

/// [`escape`] appended to `out`: runs without a special character are copied in one piece.
pub(crate) fn push_escaped(out: &mut String, text: &str) {
    let mut rest = text;
    while let Some(i) = rest.find(['&', '<', '>', '"', '\'']) {
        out.push_str(&rest[..i]);
        out.push_str(match rest.as_bytes()[i] {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            _ => "&#39;",
        });
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
}

/// Appends `v` in decimal, as `Display` writes it (no formatter, no allocation).
pub(crate) fn push_u64(out: &mut String, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&buf[i..]).expect("ASCII digits"));
}

pub(crate) fn push_i64(out: &mut String, v: i64) {
    if v < 0 {
        out.push('-');
    }
    push_u64(out, v.unsigned_abs());
}

/// Appends `v` as `format!("{v:.1}")` writes it, byte for byte: the exact binary value rounded
/// to one decimal, ties to even. Computed from the float's mantissa and exponent in integers;
/// values outside `0 ≤ v < 10^15` (never drawn here) go through the formatter.
pub(crate) fn push_f1(out: &mut String, v: f64) {
    if !(v.is_finite() && v.is_sign_positive() && v < 1e15) {
        let _ = write!(out, "{v:.1}");
        return;
    }
    let bits = v.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    // v = m · 2^e exactly.
    let (m, e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), exp - 1075)
    };
    let tenths = if e >= 0 {
        // An integer below 10^15.
        (u128::from(m) << e) * 10
    } else if e > -120 {
        let s = (-e) as u32;
        let num = u128::from(m) * 10;
        let q = num >> s;
        let rem = num - (q << s);
        let half = 1u128 << (s - 1);
        if rem > half || (rem == half && q & 1 == 1) {
            q + 1
        } else {
            q
        }
    } else {
        0
    };
    push_u64(out, (tenths / 10) as u64);
    out.push('.');
    out.push(char::from(b'0' + (tenths % 10) as u8));
}

/// A `#rrggbb` fill, made without allocating.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fill([u8; 7]);

impl Fill {
    pub(crate) const fn from_hex(text: &str) -> Fill {
        let b = text.as_bytes();
        assert!(b.len() == 7 && b[0] == b'#');
        Fill([b[0], b[1], b[2], b[3], b[4], b[5], b[6]])
    }

    pub(crate) fn rgb(r: u8, g: u8, b: u8) -> Fill {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let h = |v: u8| [HEX[usize::from(v >> 4)], HEX[usize::from(v & 15)]];
        let ([r0, r1], [g0, g1], [b0, b1]) = (h(r), h(g), h(b));
        Fill([b'#', r0, r1, g0, g1, b0, b1])
    }

    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("ASCII hex")
    }
}

impl std::fmt::Display for Fill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

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
fn view_nodes(topo: &Topology, zoom: Option<u32>) -> Vec<u32> {
    match zoom {
        Some(n) if !topo.node_cpus(n).is_empty() => vec![n],
        _ => topo.nodes_with_cpus().collect(),
    }
}

/// Sequential scale, white → dark blue, for `v` in `0..=max`.
pub(crate) fn seq_colour(v: u32, max: u32) -> Fill {
    if max == 0 {
        return Fill::from_hex("#f4f6fa");
    }
    let t = f64::from(v.min(max)) / f64::from(max);
    let lerp = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    Fill::rgb(lerp(244.0, 8.0), lerp(246.0, 48.0), lerp(250.0, 107.0))
}

/// Diverging scale: negative blue, zero white, positive red, saturating at `span`.
fn div_colour(d: i64, span: i64) -> Fill {
    if d == 0 || span == 0 {
        // Unchanged: a neutral grey that stands apart from the page and from a faint change.
        return UNCHANGED;
    }
    let t = (d.unsigned_abs() as f64 / span as f64).min(1.0);
    let fade = |c: f64| (255.0 + (c - 255.0) * t).round() as u8;
    if d > 0 {
        Fill::rgb(fade(203.0), fade(24.0), fade(29.0))
    } else {
        Fill::rgb(fade(33.0), fade(102.0), fade(172.0))
    }
}

/// Whether white text reads better than dark on a `#rrggbb` fill.
fn is_dark(fill: Fill) -> bool {
    let fill = fill.as_str();
    let ch = |i: usize| u32::from_str_radix(fill.get(i..i + 2).unwrap_or("ff"), 16).unwrap_or(255);
    let luma = 299 * ch(1) + 587 * ch(3) + 114 * ch(5);
    luma < 140_000
}

const OFFLINE_FILL: &str = "#c8c8c8";
const UNCHANGED_FILL: &str = "#e3e6ea";
const OFFLINE: Fill = Fill::from_hex(OFFLINE_FILL);
const UNCHANGED: Fill = Fill::from_hex(UNCHANGED_FILL);

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

/// Runs of equal (online, value) in drawing order; unfolded, one run per CPU.
fn cells(order: &[u32], online: &CpuSet, value: &dyn Fn(u32) -> i64, fold: bool) -> Vec<Cell> {
    let mut out: Vec<Cell> = Vec::with_capacity(if fold { 16 } else { order.len() });
    for &cpu in order {
        let (on, v) = (online.contains(cpu), value(cpu));
        if fold {
            if let Some(last) = out.last_mut() {
                if last.online == on && last.value == v {
                    let first = last.first;
                    last.run.get_or_insert_with(|| CpuSet::from_cpus([first])).insert(cpu);
                    last.n += 1;
                    continue;
                }
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

/// The root element: scales to its container (`width="100%"`, height from the viewBox), never
/// wider than 1.6 times its drawn size so small machines do not balloon.
fn svg_open(class: &str, label: &str, width: u32, height: u32) -> String {
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="{class}" width="100%" viewBox="0 0 {width} {height}" preserveAspectRatio="xMinYMin meet" style="max-width:{}px" role="img" aria-label="{}" data-w="{width}" data-h="{height}">"#,
        width * 8 / 5,
        escape(label)
    ) + "\n"
}

/// Bytes a drawn cell takes, about (a rect with its tooltip and, numbered, its text), to
/// size a picture's buffer once.
const CELL_BYTES: usize = 300;

fn draw_grid(g: &Grid<'_>) -> String {
    let nodes = view_nodes(g.topo, g.zoom);
    let n_view: u32 = nodes.iter().map(|&n| g.topo.node_cpus(n).weight()).sum();
    let (mut width, y, body) = if n_view > CELLS_UNFOLDED_MAX {
        // Folded: some runs per node, not one cell per CPU.
        let mut body = String::with_capacity(nodes.len() * 8 * CELL_BYTES + 1024);
        let (w, y) = draw_matrix(g, &nodes, &mut body);
        (w, y, body)
    } else {
        let mut body = String::with_capacity(n_view as usize * CELL_BYTES + nodes.len() * 160);
        let (w, y) = draw_cells(g, &nodes, n_view <= NUMBERED_CELLS_MAX, &mut body);
        (w, y, body)
    };
    width = width.max(520);
    let legend_y = y + 14;
    let height = legend_y + 44;
    let open = svg_open(g.class, &g.label, width, height);
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
                g.topo.drawn_cluster(cpu).first().unwrap_or(u32::MAX),
                g.topo.drawn_smt(cpu).first().unwrap_or(cpu),
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
                let line = |body: &mut String, class: &str, y0: u32, y1: u32| {
                    body.push_str("<line class=\"");
                    body.push_str(class);
                    body.push_str("\" x1=\"");
                    push_f1(body, lx);
                    body.push_str("\" y1=\"");
                    push_u64(body, u64::from(y0));
                    body.push_str("\" x2=\"");
                    push_f1(body, lx);
                    body.push_str("\" y2=\"");
                    push_u64(body, u64::from(y1));
                    body.push_str("\"/>\n");
                };
                if gap == PACKAGE_GAP_PX {
                    line(body, "pkg", y0 - 2, y1 + 2);
                } else if gap == CLUSTER_GAP_PX {
                    line(body, "clu", y0, y1);
                }
                x += gap;
            }
            if row_start {
                // Tick: the first CPU of the row in the gutter.
                body.push_str("<text class=\"tick\" x=\"");
                push_u64(body, u64::from(GUTTER_PX - 4));
                body.push_str("\" y=\"");
                push_u64(body, u64::from(row_top(y) + cell / 2 + 4));
                body.push_str("\" text-anchor=\"end\">");
                push_u64(body, u64::from(core[0]));
                body.push_str("</text>\n");
                row_start = false;
            }
            let core_x = x;
            for &cpu in core {
                let c = Cell::one(cpu, g.topo.online().contains(cpu), (g.value)(cpu));
                let cx = f64::from(GUTTER_PX) + x;
                cell_rect(body, g, &c, cx, row_top(y), f64::from(cell), cell, false);
                if numbered {
                    let fill = if c.online { (g.colour)(c.value) } else { OFFLINE };
                    body.push_str(if is_dark(fill) {
                        "<text class=\"n light\" x=\""
                    } else {
                        "<text class=\"n\" x=\""
                    });
                    push_f1(body, cx + f64::from(cell) / 2.0);
                    body.push_str("\" y=\"");
                    push_u64(body, u64::from(y + cell / 2 + 3));
                    body.push_str("\" text-anchor=\"middle\">");
                    push_u64(body, u64::from(cpu));
                    body.push_str("</text>\n");
                } else if col.is_multiple_of(8) {
                    body.push_str("<text class=\"tick\" x=\"");
                    push_f1(body, cx);
                    body.push_str("\" y=\"");
                    push_u64(body, u64::from(y + 7));
                    body.push_str("\">");
                    push_u64(body, u64::from(cpu));
                    body.push_str("</text>\n");
                }
                x += f64::from(cell + 1);
                col += 1;
            }
            if core.len() > 1 {
                // SMT siblings side by side, joined by a bar under the core.
                let bar_y = u64::from(row_top(y) + cell + 1);
                body.push_str("<line class=\"smt\" x1=\"");
                push_f1(body, f64::from(GUTTER_PX) + core_x);
                body.push_str("\" y1=\"");
                push_u64(body, bar_y);
                body.push_str("\" x2=\"");
                push_f1(body, f64::from(GUTTER_PX) + x - 1.0);
                body.push_str("\" y2=\"");
                push_u64(body, bar_y);
                body.push_str("\"/>\n");
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
/// Written piece by piece into `out` (no intermediate strings but a folded run's cpulist).
#[allow(clippy::too_many_arguments)]
fn cell_rect(out: &mut String, g: &Grid<'_>, c: &Cell, x: f64, y: u32, w: f64, h: u32, tip: bool) {
    let fill = if c.online { (g.colour)(c.value) } else { OFFLINE };
    let over = c.online && g.over.is_some_and(|o| c.value > o);
    let class = match (c.online, over) {
        (false, _) => "cpu off",
        (true, true) => "cpu over",
        (true, false) => "cpu",
    };
    // Cpulist text is digits, ',' and '-' only: nothing to escape.
    let list = c.run.as_ref().map(CpuSet::to_cpulist);
    let push_list = |out: &mut String| match &list {
        Some(list) => out.push_str(list),
        None => push_u64(out, u64::from(c.first)),
    };
    // "CPU 5: 2 irqs" / "CPUs 0-3 (4): offline or not present", escaped.
    let push_text = |out: &mut String| {
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
    out.push_str("<rect class=\"");
    out.push_str(class);
    out.push_str("\" data-cpu=\"");
    push_u64(out, u64::from(c.first));
    out.push_str("\" data-cpus=\"");
    push_list(out);
    out.push_str("\" data-v=\"");
    push_i64(out, c.value);
    if tip {
        out.push_str("\" data-tip=\"");
        push_text(out);
    }
    out.push_str("\" x=\"");
    push_f1(out, x);
    out.push_str("\" y=\"");
    push_u64(out, u64::from(y));
    out.push_str("\" width=\"");
    push_f1(out, w);
    out.push_str("\" height=\"");
    push_u64(out, u64::from(h));
    out.push_str("\" fill=\"");
    out.push_str(fill.as_str());
    out.push_str("\">");
    if !tip {
        out.push_str("<title>");
        push_text(out);
        out.push_str("</title>");
    }
    out.push_str("</rect>\n");
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
    let max = m
        .per_cpu
        .iter()
        .filter(|c| c.online)
        .map(|c| metric.value(c, m.basis))
        .max()
        .unwrap_or(0);
    heatmap_on_scale(topo, m, metric, zoom, scale_max.map_or(max, |s| s.max(max)))
}

/// [`heatmap`] on the colour scale `0..=max` exactly: a value above `max` takes the darkest
/// step (a compare's absolute scale), equal values get equal colours on every picture drawn
/// with the same `max`.
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
    let hits: usize = outcome
        .devices
        .iter()
        .map(|d| d.vectors.len().min(n_cols as usize))
        .sum();
    let mut out = String::with_capacity(hits * 160 + outcome.devices.len() * 120 + 1024);
    out.push_str(&svg_open("strip", "vectors of each device by CPU", width, height));
    // The column of each drawn CPU, indexed by CPU id (u32::MAX: not drawn).
    let mut column = vec![u32::MAX; order.iter().max().map_or(0, |&c| c as usize + 1)];
    if per_node {
        let mut node_col = vec![0u32; nodes.iter().max().map_or(0, |&n| n as usize + 1)];
        for (i, &n) in nodes.iter().enumerate().rev() {
            node_col[n as usize] = i as u32;
        }
        for &c in &order {
            column[c as usize] = node_col.get(topo.cpu_to_node(c) as usize).copied().unwrap_or(0);
        }
    } else {
        for (i, &c) in order.iter().enumerate() {
            column[c as usize] = i as u32;
        }
    }
    for (row, dev) in outcome.devices.iter().enumerate() {
        let y = row as u32 * (row_h + 2);
        let mut counts = vec![0u32; n_cols as usize];
        for v in &dev.vectors {
            let col = v.effective_cpu.and_then(|c| column.get(c as usize)).copied();
            if let Some(col) = col.filter(|&c| c != u32::MAX) {
                counts[col as usize] += 1;
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
            out.push_str("<rect class=\"hit\" ");
            if per_node {
                // data-node="3" data-tip="nvme0 on node 3-5: 2 vectors each"
                let (a, b) = (nodes[col], nodes[col + run - 1]);
                out.push_str("data-node=\"");
                push_u64(&mut out, u64::from(a));
                out.push_str("\" data-tip=\"");
                push_escaped(&mut out, &dev.name);
                out.push_str(" on node ");
                push_u64(&mut out, u64::from(a));
                if a != b {
                    out.push('-');
                    push_u64(&mut out, u64::from(b));
                }
                out.push_str(": ");
                push_u64(&mut out, u64::from(k));
                out.push_str(" vector");
                out.push_str(s);
                if a != b {
                    out.push_str(" each");
                }
                out.push('"');
            } else {
                out.push_str("data-cpu=\"");
                push_u64(&mut out, u64::from(order[col]));
                out.push('"');
            }
            out.push_str(" x=\"");
            push_u64(&mut out, u64::from(name_px + col as u32 * cell_w));
            out.push_str("\" y=\"");
            push_u64(&mut out, u64::from(y));
            out.push_str("\" width=\"");
            push_u64(&mut out, u64::from((run as u32 * cell_w).saturating_sub(1).max(1)));
            out.push_str("\" height=\"");
            push_u64(&mut out, u64::from(row_h));
            out.push_str("\" fill=\"");
            out.push_str(seq_colour(k.max(1), max.max(1)).as_str());
            out.push_str("\">");
            if !per_node {
                // <title>nvme0 on CPU 7: 1 vector</title>
                out.push_str("<title>");
                push_escaped(&mut out, &dev.name);
                out.push_str(" on CPU ");
                push_u64(&mut out, u64::from(order[col]));
                out.push_str(": ");
                push_u64(&mut out, u64::from(k));
                out.push_str(" vector");
                out.push_str(s);
                out.push_str("</title>");
            }
            out.push_str("</rect>\n");
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
        let spec = ScenarioSpec::new(TopologyRef::Preset(preset.into()), devices);
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
        let sib = topo.drawn_smt(0).iter().find(|&c| c != 0).unwrap();
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

    /// The writers match `format!` byte for byte: every multiple of 1/64 up to 2,000 (the
    /// drawn coordinates, ties to even included), values near ties, pseudo-random floats
    /// over many magnitudes, and the edges.
    #[test]
    fn number_writers_match_the_formatter() {
        let check = |v: f64| {
            let mut s = String::new();
            push_f1(&mut s, v);
            assert_eq!(s, format!("{v:.1}"), "{v:e}");
        };
        for i in 0..=128_000u32 {
            let v = f64::from(i) / 64.0;
            check(v);
            check(f64::from_bits(v.to_bits() + 1));
            check(f64::from_bits(v.to_bits().saturating_sub(1)));
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = f64::from_bits(x >> 2); // positive, exponents over the whole range
            check(v);
            check((x % 10_000_000) as f64 / 997.0);
        }
        for v in [
            0.0,
            -0.0,
            0.05,
            0.25,
            0.35,
            1e15,
            1e15 - 0.5,
            1e300,
            f64::MIN_POSITIVE,
            5e-324,
            -1.5,
            f64::NAN,
        ] {
            check(v);
        }
        for v in [0, 1, 9, 10, 99, 100, 12_345, u64::from(u32::MAX), u64::MAX] {
            let mut s = String::new();
            push_u64(&mut s, v);
            assert_eq!(s, v.to_string());
        }
        for v in [0, -1, 7, -12_345, i64::MIN, i64::MAX] {
            let mut s = String::new();
            push_i64(&mut s, v);
            assert_eq!(s, v.to_string());
        }
        for (r, g, b) in [(0, 0, 0), (255, 255, 255), (8, 48, 107), (203, 24, 29), (16, 15, 1)] {
            assert_eq!(Fill::rgb(r, g, b).as_str(), format!("#{r:02x}{g:02x}{b:02x}"));
        }
        assert_eq!(escape("a<b>&\"c'd\u{e9}"), "a&lt;b&gt;&amp;&quot;c&#39;d\u{e9}");
        assert_eq!(escape("&&"), "&amp;&amp;");
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
