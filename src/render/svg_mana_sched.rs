//! SVG pictures for the MANA page (IRQ × CPU grid, per-CPU vector load, queue IRQs per CPU)
//! and the sched page (distance heatmap, per-node domain ladder). Pure functions returning
//! strings; every text that reaches the markup goes through [`escape`].

use super::svg::escape;
use crate::kernel::mana::{IrqPlacement, ManaInput, ManaOutcome};
use crate::kernel::sched::{NodeTopology, NumaDomainInfo, SchedTopology};
use std::fmt::Write;

/// Grids larger than this many cells are not drawn (the tables and JSON still hold them).
pub(crate) const GRID_CELLS_MAX: usize = 65_536;
/// Grids with more cells than this draw no per-cell rect and tooltip: runs of identical cells
/// fold into one rect that carries its CPUs and a `data-tip` for the page's hover script.
pub(crate) const GRID_TIPS_MAX: usize = 4096;
/// Bar charts with more CPUs than this carry `data-tip` instead of a `<title>` per bar.
pub(crate) const BAR_TIPS_MAX: usize = 64;

/// A bar's rect: closed with a `<title>` on small charts, with a `data-tip` on large ones.
fn bar_rect(out: &mut String, attrs: &str, tip: &str, titles: bool) {
    if titles {
        let _ = write!(out, "<rect {attrs}><title>{}</title></rect>", escape(tip));
    } else {
        let _ = write!(out, r#"<rect {attrs} data-tip="{}"/>"#, escape(tip));
    }
}

const CELL: u32 = 16;
const CORE_GAP: u32 = 3;
const NODE_GAP: u32 = 10;
const LABEL_W: u32 = 56;
const HEAD_H: u32 = 34;

/// Columns of the MANA pictures: CPUs grouped by core, cores by node; with the x offset of
/// each column. Node changes and core changes add a gap.
pub(crate) fn mana_columns(input: &ManaInput) -> Vec<(u32, u32)> {
    let mut cpus: Vec<u32> = (0..input.cpu_node.len() as u32).collect();
    cpus.sort_by_key(|&c| (input.cpu_node[c as usize], input.cpu_core[c as usize], c));
    let mut out = Vec::with_capacity(cpus.len());
    let mut x = LABEL_W;
    let mut prev: Option<(u32, u32)> = None;
    for c in cpus {
        let key = (input.cpu_node[c as usize], input.cpu_core[c as usize]);
        if let Some(p) = prev {
            x += if p.0 != key.0 {
                NODE_GAP
            } else if p.1 != key.1 {
                CORE_GAP
            } else {
                0
            };
        }
        out.push((c, x));
        x += CELL;
        prev = Some(key);
    }
    out
}

fn width_of(cols: &[(u32, u32)]) -> u32 {
    cols.last().map_or(LABEL_W, |&(_, x)| x + CELL) + 8
}

/// Column header: node labels over their CPUs, CPU ids below.
fn column_head(out: &mut String, input: &ManaInput, cols: &[(u32, u32)]) {
    let mut node_start: Option<(u32, u32)> = None;
    for (i, &(cpu, x)) in cols.iter().enumerate() {
        let node = input.cpu_node[cpu as usize];
        if node_start.is_none_or(|(n, _)| n != node) {
            node_start = Some((node, x));
            let _ = write!(out, r#"<text class="lbl node" x="{x}" y="11">node {node}</text>"#);
        }
        let online = input.online.get(cpu as usize).copied().unwrap_or(false);
        let _ = write!(
            out,
            r#"<text class="lbl cpu{}" x="{}" y="{}" text-anchor="middle">{cpu}</text>"#,
            if online { "" } else { " offline" },
            x + CELL / 2,
            HEAD_H - 6
        );
        let _ = i;
    }
}

fn irq_label(index: u32) -> String {
    if index == 0 {
        "HWC".into()
    } else {
        format!("q{index}")
    }
}

/// The IRQ × CPU grid of one driver version: shaded cells are the IRQ's affinity mask (pale
/// when the driver left the default mask), a dot marks the effective CPU.
pub(crate) fn mana_grid(input: &ManaInput, o: &ManaOutcome, id: &str, title: &str) -> String {
    let cols = mana_columns(input);
    let n_cpus = cols.len();
    if n_cpus * o.irqs.len() > GRID_CELLS_MAX {
        return format!(
            r#"<p class="note">{} IRQs × {n_cpus} CPUs: too many cells to draw; see the tables.</p>"#,
            o.irqs.len()
        );
    }
    // Per-cell tooltips only where they do not dominate the page.
    let tips = n_cpus * o.irqs.len() <= GRID_TIPS_MAX;
    let width = width_of(&cols);
    let height = HEAD_H + o.irqs.len() as u32 * CELL + 4;
    let mut out = svg_open("mana-grid", id, width, height, title);
    let _ = write!(out, "<title>{}</title>", escape(title));
    column_head(&mut out, input, &cols);
    for (row, irq) in o.irqs.iter().enumerate() {
        grid_row(&mut out, input, &cols, irq, HEAD_H + row as u32 * CELL, tips);
    }
    out.push_str("</svg>");
    out
}

/// One IRQ's row of [`mana_grid`] at `y`: its label, a cell per CPU (or, without `tips`, a
/// rect per run of identical cells), the dot on its effective CPU.
fn grid_row(out: &mut String, input: &ManaInput, cols: &[(u32, u32)], irq: &IrqPlacement, y: u32, tips: bool) {
    let _ = write!(
        out,
        r#"<text class="lbl irq" x="4" y="{}">{}</text>"#,
        y + CELL - 4,
        irq_label(irq.index)
    );
    let class_of = |cpu: u32| {
        let (class, tip) = match &irq.affinity {
            Some(m) if m.contains(&cpu) => ("mask", "in mask"),
            Some(_) => ("", "outside mask"),
            None => ("default", "default mask"),
        };
        let online = input.online.get(cpu as usize).copied().unwrap_or(false);
        (class, !online, tip)
    };
    if tips {
        for &(cpu, x) in cols {
            let (class, offline, tip) = class_of(cpu);
            let _ = write!(
                out,
                r#"<rect class="cell{}{}{}" data-cpu="{cpu}" x="{x}" y="{y}" width="{}" height="{}"><title>{} CPU {cpu}: {tip}</title></rect>"#,
                if class.is_empty() { "" } else { " " },
                class,
                if offline { " offline" } else { "" },
                CELL - 1,
                CELL - 1,
                irq_label(irq.index),
            );
        }
    } else {
        // Large grids: one rect per run of identical cells within a node, its CPUs in
        // `data-cpus` and its description in `data-tip` (shown by the page's hover script).
        let mut i = 0;
        while i < cols.len() {
            let (cpu0, x0) = cols[i];
            let key = class_of(cpu0);
            let node = input.cpu_node[cpu0 as usize];
            let mut j = i + 1;
            while j < cols.len() && input.cpu_node[cols[j].0 as usize] == node && class_of(cols[j].0) == key {
                j += 1;
            }
            let cpus: crate::topology::CpuSet = cols[i..j].iter().map(|&(c, _)| c).collect();
            let list = cpus.to_cpulist();
            let (class, offline, tip) = key;
            let _ = write!(
                out,
                r#"<rect class="run{}{}{}" data-cpus="{list}" data-tip="{} CPUs {list}: {tip}{}" x="{x0}" y="{y}" width="{}" height="{}"/>"#,
                if class.is_empty() { "" } else { " " },
                class,
                if offline { " offline" } else { "" },
                irq_label(irq.index),
                if offline { " (offline)" } else { "" },
                cols[j - 1].1 + CELL - 1 - x0,
                CELL - 1,
            );
            i = j;
        }
    }
    if let Some(&(_, x)) = cols.iter().find(|&&(c, _)| c == irq.effective_cpu) {
        let _ = write!(
            out,
            r#"<circle class="eff" data-irq="{}" data-cpu="{}" cx="{}" cy="{}" r="4"><title>{} fires on CPU {} (requested on {})</title></circle>"#,
            irq.index,
            irq.effective_cpu,
            x + CELL / 2,
            y + CELL / 2,
            irq_label(irq.index),
            irq.effective_cpu,
            irq.request_cpu
        );
    }
}

/// Per-CPU stacked bar of the vector load at the end of setup: vectors other devices held
/// before, MANA's own, and old vectors left behind by moves.
pub(crate) fn mana_load_bars(input: &ManaInput, o: &ManaOutcome, id: &str) -> String {
    let cols = mana_columns(input);
    let titles = cols.len() <= BAR_TIPS_MAX;
    let max = o
        .load_breakdown
        .iter()
        .map(|b| b.pre_existing + b.mana_held + b.left_behind)
        .max()
        .unwrap_or(0)
        .max(1);
    let unit = (80 / max).clamp(2, 16);
    let plot_h = unit * max;
    let width = width_of(&cols).max(LABEL_W + 360);
    let top = HEAD_H;
    let height = top + plot_h + 24;
    let mut out = svg_open("mana-load", id, width, height, "vector load per CPU");
    column_head(&mut out, input, &cols);
    let base = top + plot_h;
    let _ = write!(
        out,
        r#"<text class="lbl" x="4" y="{}">{max}</text><text class="lbl" x="4" y="{base}">0</text>"#,
        top + 10
    );
    for &(cpu, x) in &cols {
        let b = o.load_breakdown[cpu as usize];
        let mut y = base;
        for (class, n, what) in [
            ("pre", b.pre_existing, "held before MANA"),
            ("mana", b.mana_held, "MANA IRQs"),
            ("left", b.left_behind, "left behind by moves"),
        ] {
            if n == 0 {
                continue;
            }
            let h = n * unit;
            y -= h;
            let attrs = format!(
                r#"class="{class}" data-cpu="{cpu}" data-n="{n}" x="{x}" y="{y}" width="{}" height="{h}""#,
                CELL - 1
            );
            bar_rect(&mut out, &attrs, &format!("CPU {cpu}: {n} {what}"), titles);
        }
    }
    let ly = base + 16;
    let mut lx = LABEL_W;
    for (class, what) in [
        ("pre", "pre-existing"),
        ("mana", "MANA"),
        ("left", "left behind by moves"),
    ] {
        let _ = write!(
            out,
            r#"<rect class="{class}" x="{lx}" y="{}" width="10" height="10"/><text class="lbl" x="{}" y="{ly}">{what}</text>"#,
            ly - 9,
            lx + 14
        );
        lx += 14 + 7 * what.len() as u32 + 12;
    }
    out.push_str("</svg>");
    out
}

/// Max − min of the queue IRQs per online CPU.
pub(crate) fn queue_imbalance(input: &ManaInput, o: &ManaOutcome) -> u32 {
    let online: Vec<u32> = o
        .queue_irqs_per_cpu
        .iter()
        .zip(&input.online)
        .filter(|(_, &on)| on)
        .map(|(&n, _)| n)
        .collect();
    online.iter().max().unwrap_or(&0) - online.iter().min().unwrap_or(&0)
}

/// Per-CPU bar of queue IRQs (the proxy for the seed's %soft table), the imbalance called out.
pub(crate) fn mana_queue_bars(input: &ManaInput, o: &ManaOutcome, id: &str, title: &str) -> String {
    let cols = mana_columns(input);
    let titles = cols.len() <= BAR_TIPS_MAX;
    let max = o.queue_irqs_per_cpu.iter().copied().max().unwrap_or(0).max(1);
    let unit = (60 / max).clamp(2, 20);
    let plot_h = unit * max;
    let width = width_of(&cols).max(300);
    // Room above the tallest bar for its count.
    let top = HEAD_H + 14 + 12;
    let height = top + plot_h + 8;
    let imb = queue_imbalance(input, o);
    let mut out = svg_open("mana-queues", id, width, height, title);
    let mut head = String::new();
    column_head(&mut head, input, &cols);
    // Shift the head down to make room for the call-out line.
    let _ = write!(out, r#"<g transform="translate(0,14)">{head}</g>"#);
    let _ = write!(
        out,
        r#"<text class="lbl imbalance{}" x="4" y="11">{}: imbalance (max − min) = {imb}</text>"#,
        if imb > 1 { " bad" } else { "" },
        escape(title)
    );
    let base = top + plot_h;
    for &(cpu, x) in &cols {
        let n = o.queue_irqs_per_cpu[cpu as usize];
        let h = n * unit;
        let attrs = format!(
            r#"class="queues" data-cpu="{cpu}" data-n="{n}" x="{x}" y="{}" width="{}" height="{h}""#,
            base - h,
            CELL - 1
        );
        bar_rect(&mut out, &attrs, &format!("CPU {cpu}: {n} queue IRQs"), titles);
        if titles {
            // The count over each bar, where the columns are few enough to read one by one.
            let _ = write!(
                out,
                r#"<text class="lbl count" x="{}" y="{}" text-anchor="middle">{n}</text>"#,
                x + CELL / 2,
                base - h - 2
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// Colour of distance level `i` of `n` (level 0, the node itself, palest).
fn level_colour(i: usize, n: usize) -> String {
    let t = if n <= 1 { 0.0 } else { i as f64 / (n - 1) as f64 };
    let lerp = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        lerp(247.0, 128.0),
        lerp(251.0, 0.0),
        lerp(255.0, 38.0)
    )
}

/// The node distance matrix as a heatmap coloured by distance level; the levels listed below.
pub(crate) fn sched_distance_heatmap(distance: &[Vec<u32>], levels: &[u32]) -> String {
    let n = distance.len();
    let cell = 34u32;
    let left = 30u32;
    let top = 20u32;
    let width = (left + n as u32 * cell + 10).max(260);
    let height = top + n as u32 * cell + 26;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="distances" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="node distances">"#
    );
    for j in 0..n {
        let _ = write!(
            out,
            r#"<text class="lbl" x="{}" y="14" text-anchor="middle">{j}</text>"#,
            left + j as u32 * cell + cell / 2
        );
    }
    for (i, row) in distance.iter().enumerate() {
        let y = top + i as u32 * cell;
        let _ = write!(out, r#"<text class="lbl" x="4" y="{}">{i}</text>"#, y + cell / 2 + 4);
        for (j, &d) in row.iter().enumerate() {
            let level = levels.iter().position(|&l| l == d).unwrap_or(0);
            let x = left + j as u32 * cell;
            let _ = write!(
                out,
                r#"<rect class="dist" data-level="{level}" x="{x}" y="{y}" width="{}" height="{}" fill="{}"><title>node {i} to {j}: {d} (level {level})</title></rect><text class="lbl{}" x="{}" y="{}" text-anchor="middle">{d}</text>"#,
                cell - 2,
                cell - 2,
                level_colour(level, levels.len()),
                if level * 2 >= levels.len() { " light" } else { "" },
                x + cell / 2 - 1,
                y + cell / 2 + 3
            );
        }
    }
    let list: Vec<String> = levels.iter().enumerate().map(|(i, d)| format!("L{i}={d}")).collect();
    let _ = write!(
        out,
        r#"<text class="lbl" x="4" y="{}">levels: {}</text>"#,
        height - 8,
        escape(&list.join("  "))
    );
    out.push_str("</svg>");
    out
}

fn node_set(nodes: &[u32]) -> String {
    let v: Vec<String> = nodes.iter().map(u32::to_string).collect();
    format!("{{{}}}", v.join(","))
}

/// One node's domain ladder: a row per built NUMA level (bottom-up), its groups as boxes whose
/// width is proportional to their CPU count. Unequal-weight domains, descended groups
/// (built below the level under the domain) and prefer-sibling groups carry classes that the
/// stylesheet highlights; degenerate levels are greyed.
pub(crate) fn sched_ladder(t: &SchedTopology, node: &NodeTopology) -> String {
    // Overlapping groups can add up to more than the span: scale by the widest row.
    let total: u32 = t
        .nodes
        .iter()
        .flat_map(|n| {
            n.numa_domains
                .iter()
                .map(|d| d.groups.iter().map(|g| g.weight).sum::<u32>().max(d.span_weight))
        })
        .max()
        .unwrap_or(1)
        .max(1);
    let left = 180u32;
    let plot_w = 440u32;
    let row_h = 30u32;
    let width = left + plot_w + 10;
    let height = node.numa_domains.len() as u32 * row_h + 8;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="ladder" data-node="{}" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="sched domains of node {}">"#,
        node.node, node.node
    );
    // Bottom-up in the data; draw the top level first so the ladder reads upwards.
    for (row, d) in node.numa_domains.iter().rev().enumerate() {
        let y = 4 + row as u32 * row_h;
        let mut class = String::from("domain");
        if d.degenerate {
            class.push_str(" degenerate");
        }
        if d.unequal_weights {
            class.push_str(" unequal");
        }
        let _ = write!(out, r#"<g class="{class}" data-level="{}">"#, d.level);
        let _ = write!(
            out,
            r#"<text class="lbl" x="4" y="{}">NUMA-{} d{}{}</text><text class="lbl span" x="4" y="{}">span {} ({} CPUs)</text>"#,
            y + 11,
            d.level,
            d.distance,
            if d.degenerate {
                " (degenerate)"
            } else if d.unequal_weights {
                " · unequal"
            } else {
                ""
            },
            y + 23,
            escape(&node_set(&d.span_nodes)),
            d.span_weight
        );
        ladder_groups(&mut out, d, y, (left, plot_w, row_h, total));
        out.push_str("</g>");
    }
    out.push_str("</svg>");
    out
}

/// One domain level's groups of [`sched_ladder`] at `y`, each as wide as its weight of the
/// `total` over `plot_w` (at least 18 px), after `left`.
fn ladder_groups(out: &mut String, d: &NumaDomainInfo, y: u32, (left, plot_w, row_h, total): (u32, u32, u32, u32)) {
    let mut x = f64::from(left);
    for (gi, g) in d.groups.iter().enumerate() {
        let w = (f64::from(g.weight) / f64::from(total) * f64::from(plot_w)).max(18.0);
        let mut gclass = String::from("group");
        if gi == 0 {
            gclass.push_str(" local");
        }
        if g.origin_level + 1 < d.level {
            gclass.push_str(" descended");
        }
        if g.prefer_sibling {
            gclass.push_str(" prefer");
        }
        let _ = write!(
            out,
            r#"<rect class="{gclass}" x="{x:.1}" y="{y}" width="{:.1}" height="{}"><title>group {} weight {} (from level {}{})</title></rect><text class="lbl" x="{:.1}" y="{}">{} {}</text>"#,
            w - 3.0,
            row_h - 6,
            escape(&node_set(&g.nodes)),
            g.weight,
            g.origin_level,
            if g.prefer_sibling { ", prefer sibling" } else { "" },
            x + 3.0,
            y + 16,
            escape(&node_set(&g.nodes)),
            g.weight
        );
        x += w;
    }
}

/// The opening `<svg>` tag of a MANA picture: its class, id, size and label (escaped).
fn svg_open(class: &str, id: &str, width: u32, height: u32, label: &str) -> String {
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="{class}" id="{}" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{}">"#,
        escape(id),
        escape(label)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::mana::run_both;

    fn seed() -> ManaInput {
        crate::kernel::mana::seed_4vcpu([0, 1, 1, 1])
    }

    #[test]
    fn grid_has_a_cell_per_irq_and_cpu_and_one_dot_per_irq() {
        let input = seed();
        let (u, _) = run_both(&input).unwrap();
        let svg = mana_grid(&input, &u, "g", "unpatched <x>");
        assert_eq!(svg.matches("<rect class=\"cell").count(), 5 * 4);
        assert_eq!(svg.matches("<circle class=\"eff\"").count(), 5);
        assert!(svg.contains("unpatched &lt;x&gt;") && !svg.contains("<x>"));
        assert!(svg.contains(r#"data-irq="2" data-cpu="2""#));
    }

    #[test]
    fn load_bars_split_the_final_load() {
        let input = seed();
        let (u, _) = run_both(&input).unwrap();
        let svg = mana_load_bars(&input, &u, "l");
        // CPU 1: one pre-existing vector and q2's old one.
        assert!(svg.contains(r#"class="left" data-cpu="1" data-n="1""#), "{svg}");
        assert!(svg.contains(r#"class="pre" data-cpu="1" data-n="1""#));
        assert_eq!(queue_imbalance(&input, &u), 2);
    }
}

#[cfg(test)]
mod large_tests {
    use super::*;
    use crate::kernel::mana::{run_both, MsixMode};

    /// 96 CPUs on two nodes, SMT pairs: the grid folds runs and still covers every cell once.
    #[test]
    fn large_grid_folds_runs_and_covers_every_cell() {
        let n = 96u32;
        let input = ManaInput::all_online(
            (0..n).map(|c| c / 48).collect(),
            (0..n).map(|c| c / 2).collect(),
            vec![vec![10, 20], vec![20, 10]],
            0,
            MsixMode::Dynamic,
            64,
            vec![0; n as usize],
        );
        let (u, _) = run_both(&input).unwrap();
        assert!(u.irqs.len() * n as usize > GRID_TIPS_MAX);
        let svg = mana_grid(&input, &u, "g", "unpatched");
        assert_eq!(svg.matches("<rect class=\"cell").count(), 0);
        assert_eq!(
            svg.matches("<title>").count(),
            1 + u.irqs.len(),
            "the picture's and one per dot"
        );
        assert_eq!(svg.matches("<circle class=\"eff\"").count(), u.irqs.len());
        let runs: Vec<&str> = svg.split("<rect class=\"run").skip(1).collect();
        let mut covered = 0u32;
        for r in &runs {
            let at = r.find("data-cpus=\"").unwrap() + 11;
            covered += crate::topology::parse_cpulist(&r[at..at + r[at..].find('"').unwrap()], n)
                .unwrap()
                .weight();
            assert!(r.contains("data-tip=\""), "{r}");
        }
        assert_eq!(covered, n * u.irqs.len() as u32, "every cell in exactly one run");
        assert!(runs.len() < u.irqs.len() * 8, "{} runs", runs.len());
        let bars = mana_queue_bars(&input, &u, "q", "unpatched");
        assert!(!bars.contains("<title>") && bars.matches("data-tip=").count() == n as usize);
    }
}
