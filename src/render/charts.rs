//! Charts of an outcome besides the per-CPU heatmap: IRQs per node against the fair share
//! (drawn with plotters' SVG backend: rectangles and text only, no system fonts), and which
//! CPUs each device's vectors fire on. Each is drawn only while it carries an answer at its
//! size: past [`NUMA_LABELLED_MAX`] nodes the bars are too thin to read, and past
//! [`STRIP_CPUS_MAX`] CPUs (or [`STRIP_CELLS_MAX`] cells) a strip's columns are a few pixels
//! wide on the page, so the pages say the same in a sentence instead (`None` here) and a
//! node picked alone draws its own strip.

use super::heatmap::{layout_order, seq_colour, view_nodes};
use super::svg::{escape, push_escaped, push_u64, svg_open};
use crate::metrics::Metrics;
use crate::scenario::Outcome;
use crate::topology::Topology;
use std::fmt::Write;

/// Device strips draw one cell per CPU up to this many cells in all.
pub(crate) const STRIP_CELLS_MAX: u64 = 65_536;
/// ... and up to this many CPUs: a strip of 128 CPUs is 888 px wide (6 px a column), so
/// a column keeps about 4 px even where the page halves it; 200 to 1,024 CPUs gave 1 to 7.
pub(crate) const STRIP_CPUS_MAX: usize = 128;

/// The NUMA chart is drawn up to this many nodes (each bar named and counted).
pub(crate) const NUMA_LABELLED_MAX: usize = 16;

/// Counted IRQs per node against each node's fair share (by online CPUs), drawn with plotters;
/// `None` for one node and past [`NUMA_LABELLED_MAX`] nodes.
pub(crate) fn numa_chart(m: &Metrics) -> Option<String> {
    use plotters::prelude::*;
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    const BAR_PX: u32 = 36;
    const CHART_H: u32 = 160;
    let nodes = &m.per_node;
    // One node has nothing to balance; past NUMA_LABELLED_MAX the bars are too thin to read.
    if nodes.len() < 2 || nodes.len() > NUMA_LABELLED_MAX {
        return None;
    }
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
        // The fair share is a dark line, not red: on the scenario page red means "above the
        // ideal" in the heatmap.
        let share_line = RGBColor(34, 34, 34);
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
            let _ = svg.draw_line(
                (x0 - 4, fy),
                (x1 + 4, fy),
                &ShapeStyle::from(&share_line).stroke_width(2),
            );
            // The count sits above both the bar and the fair-share line, never across it.
            let top_y = scale(u64::from(n.irqs) * 1000).min(fy - 1);
            let _ = svg.draw_text(
                &n.irqs.to_string(),
                &text(Pos::new(HPos::Center, VPos::Bottom)),
                ((x0 + x1) / 2, top_y - 2),
            );
            let _ = svg.draw_text(
                &format!("n{}", n.node),
                &text(Pos::new(HPos::Center, VPos::Top)),
                ((x0 + x1) / 2, base_y + 4),
            );
        }
        let _ = svg.draw_text(
            "bars: IRQs per node; dark line: fair share",
            &text(Pos::new(HPos::Left, VPos::Top)),
            (40, base_y + 22),
        );
        let _ = svg.present();
    }
    Some(buf.replacen(
        "<svg ",
        "<svg class=\"numa\" role=\"img\" aria-label=\"IRQs per node against fair share\" ",
        1,
    ))
}

/// Which CPUs each device's vectors landed on (by effective CPU): one row per device, one
/// column per CPU in topology order, the count of the device's vectors on it as colour; `None`
/// past [`STRIP_CPUS_MAX`] CPUs or [`STRIP_CELLS_MAX`] cells.
pub(crate) fn device_strip(topo: &Topology, outcome: &Outcome, zoom: Option<u32>) -> Option<String> {
    let order: Vec<u32> = view_nodes(topo, zoom)
        .into_iter()
        .flat_map(|n| layout_order(topo, n))
        .collect();
    if order.len() > STRIP_CPUS_MAX || order.len() as u64 * outcome.devices.len() as u64 > STRIP_CELLS_MAX {
        return None;
    }
    const NAME_PX: u32 = 110;
    const ROW_H: u32 = 12;
    // Cells widen on a small machine (up to 14 px), so a strip is never a sliver.
    let cell_w = (600 / order.len().max(1) as u32).clamp(6, 14);
    let width = (NAME_PX + order.len() as u32 * cell_w + 10).max(NAME_PX + 230);
    let height = outcome.devices.len() as u32 * (ROW_H + 2) + 28;
    let mut out = String::with_capacity(outcome.devices.iter().map(|d| d.vectors.len()).sum::<usize>() * 160 + 1024);
    out.push_str(&svg_open("strip", "vectors of each device by CPU", width, height));
    // The column of each drawn CPU, indexed by CPU id (u32::MAX: not drawn).
    let mut column = vec![u32::MAX; order.iter().max().map_or(0, |&c| c as usize + 1)];
    for (i, &c) in order.iter().enumerate() {
        column[c as usize] = i as u32;
    }
    for (row, dev) in outcome.devices.iter().enumerate() {
        let y = row as u32 * (ROW_H + 2);
        let mut counts = vec![0u32; order.len()];
        for v in &dev.vectors {
            if let Some(&col) = v
                .effective_cpu
                .and_then(|c| column.get(c as usize))
                .filter(|&&c| c != u32::MAX)
            {
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
        for (col, &k) in counts.iter().enumerate().filter(|(_, &k)| k > 0) {
            let cpu = u64::from(order[col]);
            out.push_str("<rect class=\"hit\" data-cpu=\"");
            push_u64(&mut out, cpu);
            out.push_str("\" x=\"");
            push_u64(&mut out, u64::from(NAME_PX + col as u32 * cell_w));
            out.push_str("\" y=\"");
            push_u64(&mut out, u64::from(y));
            let _ = write!(out, "\" width=\"{}\" height=\"{ROW_H}\" fill=\"", cell_w - 1);
            out.push_str(seq_colour(k, max.max(1)).as_str());
            // <title>nvme0 on CPU 7: 1 vector</title>
            out.push_str("\"><title>");
            push_escaped(&mut out, &dev.name);
            out.push_str(" on CPU ");
            push_u64(&mut out, cpu);
            out.push_str(": ");
            push_u64(&mut out, u64::from(k));
            out.push_str(if k == 1 { " vector" } else { " vectors" });
            out.push_str("</title></rect>\n");
        }
        out.push_str("</g>\n");
    }
    let _ = writeln!(
        out,
        r#"<text class="lbl" x="{NAME_PX}" y="{}">one column per CPU, topology order</text></svg>"#,
        height - 8
    );
    Some(out)
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
    use crate::metrics::Metrics;
    use crate::scenario::spec::{DeviceSpec, ScenarioSpec, TopologyRef};
    use crate::scenario::{self, Outcome};

    fn run(preset: &str, devices: Vec<DeviceSpec>) -> (scenario::Scenario, Outcome, Metrics) {
        let spec = ScenarioSpec::new(TopologyRef::Preset(preset.into()), devices);
        let s = spec.resolve(catalogue::get).unwrap();
        let o = scenario::run(&s);
        let m = crate::metrics::compute(&s, &o);
        (s, o, m)
    }

    /// Each bar's count sits above both its bar and its fair-share line (it was drawn across
    /// the line wherever a node had fewer IRQs than its share), and the line is not red (red
    /// is "above the ideal" in the heatmap on the same page).
    #[test]
    fn numa_counts_clear_the_fair_share_line() {
        let (_, _, m) = run(
            "intel-xeon-2s-56c-snc2",
            vec![DeviceSpec {
                pre: 1,
                ..DeviceSpec::new(6, 62)
            }],
        );
        let chart = numa_chart(&m).unwrap();
        let num = |tag: &str, name: &str| -> i32 {
            let k = format!(" {name}=\"");
            let i = tag.find(&k).unwrap() + k.len();
            tag[i..i + tag[i..].find('"').unwrap()].parse().unwrap()
        };
        let mut checked = 0;
        for bar in chart.split("<rect ").skip(1) {
            let top = num(bar, "y");
            let line = &bar[bar.find("<line ").unwrap()..];
            let share_y = num(line, "y1");
            assert!(!line.contains("#D62728"), "{line}");
            let count = &line[line.find("<text ").unwrap()..];
            // The count's baseline, anchored at its bottom, is above both.
            assert!(
                num(count, "y") < top.min(share_y),
                "count at {} over bar {top}, line {share_y}",
                num(count, "y")
            );
            checked += 1;
        }
        assert_eq!(checked, m.per_node.len());
    }

    #[test]
    fn names_are_escaped() {
        let d = DeviceSpec {
            name: Some("<script>x</script>".into()),
            ..DeviceSpec::new(1, 4)
        };
        let (s, o, m) = run("azure-4vcpu-smt2", vec![d]);
        let strip = device_strip(s.topology(), &o, None).unwrap();
        assert!(!strip.contains("<script>") && strip.contains("&lt;script&gt;"));
        // One node: no chart (the page says it in a sentence); two nodes draw one.
        assert!(numa_chart(&m).is_none());
        let (_, _, m) = run("azure-l96as-v4", vec![DeviceSpec::new(1, 4)]);
        let chart = numa_chart(&m).unwrap();
        assert!(chart.contains("<svg class=\"numa\""), "{chart}");
    }
}
