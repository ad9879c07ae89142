//! A sweep as text (a mail-ready table, ≤ 72 columns), CSV, JSON and an SVG of small
//! multiples (one panel per machine: each mix's gap to the ideal, one bar per placement).
//!
//! Permalinks are not made here (that is `scenario::permalink`): callers pass a function from a row's
//! scenario to its link, or none.

use super::columns::{wrap, COLUMNS_MAX};
use super::summary::milli;
use super::svg::escape;
use crate::analysis::orders::Orders;
use crate::analysis::sweep::{Aggregate, Figures, OrdersFigures, Placement, Sweep, SweepConfig, Verdict};
use crate::scenario::spec::ScenarioSpec;
use serde_json::json;
use std::fmt::Write;

/// Makes a link for a row's scenario (or `None` when links are not wanted).
pub(crate) type LinkFn<'a> = &'a dyn Fn(&ScenarioSpec) -> Option<String>;

/// The `irqscope sweep …` line that reproduces a sweep.
pub(crate) fn command_line(config: &SweepConfig) -> String {
    command_words(config).join(" ")
}

/// The kernel releases each row holds for: the sort's, each placement's (proposals and the
/// rotation patches: none), and what `--kernel` picked.
fn kernel_line(c: &SweepConfig) -> String {
    use crate::kernel::release;
    let range = |r: Option<release::Range>| r.map_or("no release".to_string(), |r| r.to_string());
    let mut rows: Vec<String> = Vec::new();
    for p in &c.placements {
        let text = match p {
            Placement::Kernel(v) => format!("{} {}", v.name(), range(release::variant_range(*v))),
            Placement::Proposal(_) | Placement::External(_) => format!("{} no release", p.name()),
        };
        rows.push(text);
    }
    let picked = match c.kernel.as_deref().and_then(release::parse_release) {
        Some(r) => {
            let g = release::generation(r);
            format!(
                "--kernel {}: {} masks, mapper {}, vectors per CPU of that release on each machine",
                c.kernel.as_deref().unwrap_or(""),
                g.affinity.name(),
                g.mapper.name()
            )
        }
        None => "no --kernel: nummasks masks, 203 vectors per CPU".to_string(),
    };
    format!(
        "kernel: sort {} holds for {}; placements: {}; {picked}.",
        c.sort.name(),
        range(release::sort_range(c.sort)),
        rows.join(", ")
    )
}

/// [`command_line`] as words for `columns::command_block`; an option and its value are one word.
pub(crate) fn command_words(config: &SweepConfig) -> Vec<String> {
    let all_topologies: Vec<String> = crate::catalogue::names().map(str::to_string).collect();
    let mut words = vec!["irqscope".to_string(), "sweep".to_string()];
    if config.topologies == all_topologies {
        words.push("--all".into());
    } else {
        words.extend(list_words("--topologies", &config.topologies));
    }
    for m in &config.mixes {
        let named = crate::analysis::sweep::NAMED_MIXES.iter().any(|(n, _)| *n == m.name);
        let text = if named {
            m.name.clone()
        } else if m.name == m.tokens {
            m.tokens.clone()
        } else {
            format!("{}={}", m.name, m.tokens)
        };
        words.push(format!("--mix {}", crate::scenario::spec::shell_word(&text)));
    }
    if config.placements == crate::analysis::sweep::Placement::all() {
        words.push("--variants all".into());
    } else {
        let names: Vec<String> = config.placements.iter().map(|p| p.name().to_string()).collect();
        words.extend(list_words("--variants", &names));
    }
    words.push(format!("--counters {}", counters_text(&config.counters)));
    if let Some(k) = &config.kernel {
        words.push(format!("--kernel {}", crate::scenario::spec::shell_word(k)));
    }
    // A sample the server drew for its budget: the command runs what was asked, every order.
    match (config.orders, config.sampled_for_budget) {
        (Orders::Fixed, _) => {}
        (_, Some(_)) => words.push("--orders all".into()),
        (o, None) => words.push(format!("--orders {}", o.name())),
    }
    words.push(format!("--sort {}", config.sort.name()));
    words.push(format!("--effective {}", config.effective.name()));
    words
}

/// `--flag a,b,c` words, the list cut into several repeats of the flag (the CLI joins them) so
/// that no word is wider than a continuation line; a line never breaks inside a list.
fn list_words(flag: &str, items: &[String]) -> Vec<String> {
    let width = super::columns::COLUMNS_MAX - 8;
    let mut words = Vec::new();
    let mut cur = String::new();
    for item in items {
        if !cur.is_empty() && flag.len() + 1 + cur.len() + 1 + item.len() > width {
            words.push(format!("{flag} {}", std::mem::take(&mut cur)));
        }
        if !cur.is_empty() {
            cur.push(',');
        }
        cur.push_str(item);
    }
    if !cur.is_empty() || words.is_empty() {
        words.push(format!("{flag} {cur}"));
    }
    words
}

fn counters_text(counters: &[u32]) -> String {
    match (counters.first(), counters.last()) {
        (Some(a), Some(b)) if counters.len() == 1 => format!("{a}..={b}"),
        (Some(a), Some(b)) => format!("{a}..{}", u64::from(*b) + 1),
        _ => String::new(),
    }
}

fn signed_milli(v: i64) -> String {
    if v < 0 {
        format!("-{}", milli(v.unsigned_abs()))
    } else {
        format!("+{}", milli(v as u64))
    }
}

fn figure_cells(f: &Figures) -> String {
    format!(
        "{:>7} {:>5} {:>3} {:>4} {:>5} {:>9} {:>5}",
        format!("{}..{}", f.irqs_per_cpu_min, f.irqs_per_cpu_max),
        f.ideal_irqs_per_cpu,
        f.gap_irqs,
        f.cpus_idle,
        format!("{}/{}", f.hot_irqs_per_cpu_max, f.hot_ideal_per_cpu),
        format!("{}..{}", f.node_irqs_min, f.node_irqs_max),
        signed_milli(f.node_over_fair_milli),
    )
}

const TABLE_HEAD: &str = "  placement        case       IRQs ideal gap idle   hot     nodes  over";

/// The mail-ready table: one block per machine and mix, one line per placement (two, worst and
/// best, when the counter changes the figures), then how each proposal compares.
pub fn text(sweep: &Sweep) -> String {
    let c = &sweep.config;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "irqscope sweep: {} machine{} x {} mix{} x {} placement{} x {} counter{}",
        c.topologies.len(),
        if c.topologies.len() == 1 { "" } else { "s" },
        c.mixes.len(),
        if c.mixes.len() == 1 { "" } else { "es" },
        c.placements.len(),
        if c.placements.len() == 1 { "" } else { "s" },
        c.counters.len(),
        if c.counters.len() == 1 { "" } else { "s" },
    );
    super::columns::command_block(&command_words(c), &mut out);
    out.push('\n');
    out.push_str(&wrap(
        &format!(
            "sort {}, effective CPU {}. IRQs counted as the scenario report counts them \
             (managed queue vectors when there are any). IRQs: fewest..most per online CPU; \
             ideal: the node-local bound (policy::ideal); gap: most - ideal; idle: online CPUs \
             with none; hot: most single-CPU IRQs on one CPU / the best stacking of the same \
             per-node hot IRQs; nodes: fewest..most IRQs on a node; over: the busiest node \
             above its fair share. case: 'any' when every counter gives the same figures, \
             else the worst and the best counter.",
            c.sort.name(),
            c.effective.name()
        ),
        "",
        "",
    ));
    for p in &c.placements {
        if let Placement::Kernel(v @ crate::kernel::Variant::RotationV1r) = p {
            out.push_str(&wrap(&format!("{}: {}.", v.name(), v.describe()), "", ""));
        }
    }
    out.push_str(&wrap(&kernel_line(c), "", ""));
    if let Some(note) = orders_note(c) {
        out.push_str(&wrap(&note, "", ""));
    }
    let n_place = c.placements.len();
    for group in sweep.aggregates.chunks(n_place) {
        let first = &group[0];
        out.push('\n');
        let summary = sweep.topology(&first.topology).map(|t| t.summary()).unwrap_or_default();
        out.push_str(&wrap(&format!("{}: {summary}", first.topology), "", "    "));
        let tokens = c
            .mixes
            .iter()
            .find(|m| m.name == first.mix)
            .map(|m| m.tokens.as_str())
            .unwrap_or("");
        if tokens == first.mix {
            out.push_str(&wrap(&format!("mix {}", first.mix), " ", "     "));
        } else {
            out.push_str(&wrap(&format!("mix {}: {tokens}", first.mix), " ", "     "));
        }
        out.push_str(TABLE_HEAD);
        out.push('\n');
        for a in group {
            aggregate_lines(a, &mut out);
        }
    }
    out.push('\n');
    out.push_str(&comparison_text(sweep));
    debug_assert!(out
        .lines()
        .all(|l| l.chars().count() <= COLUMNS_MAX || l.starts_with("  $ ")));
    out
}

/// What the P(worst > ideal) figures stand for, when orders are asked; and that the runs
/// are a sample when `all` was over the budget.
pub(crate) fn orders_note(c: &SweepConfig) -> Option<String> {
    if c.orders == Orders::Fixed {
        return None;
    }
    let which = match c.orders {
        Orders::Sample { n, .. } => format!("{n} probe orders drawn at random"),
        _ => "every probe order the model allows".to_string(),
    };
    let mut note = format!(
        "P(worst > ideal): the share of boots ({which}, from each counter start) in which \
         the busiest CPU serves more IRQs than the ideal, IRQs over online CPUs rounded up \
         (the scenario report's ideal max); with its 95% interval when sampled."
    );
    if let (Some(all), Orders::Sample { n, .. }) = (c.sampled_for_budget, c.orders) {
        note.push_str(&format!(
            " Sampled: every order would take {} runs, over this server's budget, so each \
             row draws {} orders at random (seed 0); the command above runs every order.",
            group_digits(all),
            group_digits(u64::from(n))
        ));
    }
    Some(note)
}

/// `1234567` as `1,234,567`.
pub(crate) fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// "37.5%", with " (95% 33.1% to 42.0%)" when sampled.
fn p_worst_text(o: &OrdersFigures) -> String {
    let mut t = format!("{:.1}%", 100.0 * o.p_worst_above_ideal());
    if let Some((lo, hi)) = o.interval() {
        t.push_str(&format!(" (95% {:.1}% to {:.1}%)", lo * 100.0, hi * 100.0));
    }
    t
}

/// "P(worst > ideal 4): 37.5% of 4,320 boots".
fn orders_line(o: &OrdersFigures) -> String {
    format!(
        "P(worst > ideal {}): {} of {} boot{}",
        o.ideal_irqs_per_cpu,
        p_worst_text(o),
        group_digits(o.runs),
        if o.runs == 1 { "" } else { "s" }
    )
}

fn aggregate_lines(a: &Aggregate, out: &mut String) {
    let name = a.placement.name();
    if a.counter_independent || a.worst == a.best {
        let case = if a.counter_independent {
            "any".to_string()
        } else {
            format!("all {}", a.worst_counter)
        };
        let _ = writeln!(out, "  {name:<16} {case:<8} {}", figure_cells(&a.worst));
    } else {
        let _ = writeln!(
            out,
            "  {name:<16} {:<8} {}",
            format!("worst {}", a.worst_counter),
            figure_cells(&a.worst)
        );
        let _ = writeln!(
            out,
            "  {:<16} {:<8} {}",
            "",
            format!("best {}", a.best_counter),
            figure_cells(&a.best)
        );
    }
    if let Some(o) = &a.orders {
        out.push_str(&wrap(&orders_line(o), "    ", "      "));
    }
    // The vector-space column: a line of its own so the table keeps to mail width; only a
    // placement that runs out of vectors has one. A device alloc_descs() refused (-EINVAL)
    // is said apart: the vector space never saw it.
    let refused = a.worst.vectors_alloc_refused;
    let enospc = a.worst.vectors_failed.saturating_sub(refused);
    if enospc > 0 {
        out.push_str(&wrap(
            &format!(
                "ENOSPC: {enospc} vectors got none (counter {}); simulate names the first",
                a.worst_counter
            ),
            "    ",
            "      ",
        ));
    }
    if refused > 0 {
        out.push_str(&wrap(
            &format!(
                "EINVAL: alloc_descs() refused {refused} vectors (counter {}): an empty \
                 managed mask; simulate names the device",
                a.worst_counter
            ),
            "    ",
            "      ",
        ));
    }
}

/// Where each proposal beats every kernel variant and where it does not, and its cost.
pub(crate) fn comparison_text(sweep: &Sweep) -> String {
    let mut out = String::new();
    let proposals: Vec<Placement> = sweep
        .config
        .placements
        .iter()
        .copied()
        .filter(|p| p.is_proposal())
        .collect();
    let kernels = sweep.config.placements.iter().filter(|p| !p.is_proposal()).count();
    if proposals.is_empty() || kernels == 0 {
        return out;
    }
    for p in proposals {
        let mine: Vec<_> = sweep.comparisons.iter().filter(|c| c.proposal == p).collect();
        let Placement::Proposal(proposal) = p else { continue };
        out.push_str(&wrap(
            &format!(
                "{} against the {kernels} kernel variant{} swept (worst counter against worst \
                 counter; ranked by most IRQs on a CPU, then hot stacking, then node spread, \
                 then idle CPUs):",
                p.name(),
                if kernels == 1 { "" } else { "s" }
            ),
            "",
            "",
        ));
        for (verdict, label) in [
            (Verdict::BeatsAll, "beats every kernel variant"),
            (Verdict::TiesBest, "ties the best kernel variant"),
            (Verdict::Behind, "behind a kernel variant"),
        ] {
            let cases: Vec<String> = mine
                .iter()
                .filter(|c| c.verdict == verdict)
                .map(|c| {
                    if verdict == Verdict::Behind {
                        format!("{}/{} ({} better),", c.topology, c.mix, c.best_kernel.name())
                    } else {
                        format!("{}/{},", c.topology, c.mix)
                    }
                })
                .collect();
            let mut line = format!("{label}: {} of {}", cases.len(), mine.len());
            if !cases.is_empty() {
                line.push_str(": ");
                line.push_str(cases.join(" ").trim_end_matches(','));
            }
            out.push_str(&wrap(&line, "  ", "    "));
        }
        out.push_str(&wrap(&format!("cost: {}", proposal.cost()), "  ", "    "));
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One line per combination, with a header; with orders asked, each line also ends with its
/// distribution's runs, P(worst > ideal) and the interval's ends (empty when exact).
pub fn csv(sweep: &Sweep, link: LinkFn<'_>) -> String {
    let with_orders = sweep.config.orders != Orders::Fixed;
    let mut out = String::from(
        "topology,mix,placement,counter,irqs_per_cpu_min,irqs_per_cpu_max,ideal_irqs_per_cpu,gap_irqs,\
         within_nodes_irqs_per_cpu,cpus_idle,hot_irqs_per_cpu_max,hot_ideal_per_cpu,devices_per_cpu_max,\
         node_irqs_min,node_irqs_max,node_over_fair,per_node_irqs,kernel_warnings,vectors_failed,permalink",
    );
    if with_orders {
        out.push_str(
            ",orders_runs,orders_ideal_irqs_per_cpu,p_worst_above_ideal,p_worst_above_ideal_lo,p_worst_above_ideal_hi",
        );
    }
    out.push('\n');
    for r in &sweep.rows {
        let f = &r.figures;
        let per_node: Vec<String> = f.per_node_irqs.iter().map(u32::to_string).collect();
        let permalink = link(&sweep.spec(&r.topology, &r.mix, r.placement, r.counter)).unwrap_or_default();
        let _ = write!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            csv_field(&r.topology),
            csv_field(&r.mix),
            r.placement.name(),
            r.counter,
            f.irqs_per_cpu_min,
            f.irqs_per_cpu_max,
            f.ideal_irqs_per_cpu,
            f.gap_irqs,
            f.within_nodes_irqs_per_cpu,
            f.cpus_idle,
            f.hot_irqs_per_cpu_max,
            f.hot_ideal_per_cpu,
            f.devices_per_cpu_max,
            f.node_irqs_min,
            f.node_irqs_max,
            signed_milli(f.node_over_fair_milli),
            per_node.join(" "),
            f.kernel_warnings,
            f.vectors_failed,
            csv_field(&permalink),
        );
        if let Some(o) = r.orders.as_ref().filter(|_| with_orders) {
            let (lo, hi) = o.interval().map_or((String::new(), String::new()), |(lo, hi)| {
                (format!("{lo:.4}"), format!("{hi:.4}"))
            });
            let _ = write!(
                out,
                ",{},{},{:.4},{lo},{hi}",
                o.runs,
                o.ideal_irqs_per_cpu,
                o.p_worst_above_ideal()
            );
        }
        out.push('\n');
    }
    out
}

/// A row or aggregate as JSON, with the permalink of `spec` when `link` gives one.
fn linked(item: &impl serde::Serialize, spec: ScenarioSpec, link: LinkFn<'_>) -> serde_json::Value {
    let mut v = serde_json::to_value(item).expect("sweep rows and aggregates serialize");
    if let Some(l) = link(&spec) {
        v["permalink"] = serde_json::Value::String(l);
    }
    v
}

/// Rows, aggregates and comparisons; each row and aggregate carries its permalink when `link`
/// gives one.
pub fn json(sweep: &Sweep, link: LinkFn<'_>) -> serde_json::Value {
    let c = &sweep.config;
    let rows: Vec<serde_json::Value> = sweep
        .rows
        .iter()
        .map(|r| linked(r, sweep.spec(&r.topology, &r.mix, r.placement, r.counter), link))
        .collect();
    let aggregates: Vec<serde_json::Value> = sweep
        .aggregates
        .iter()
        .map(|a| linked(a, sweep.spec(&a.topology, &a.mix, a.placement, a.worst_counter), link))
        .collect();
    let cost: Vec<serde_json::Value> = c
        .placements
        .iter()
        .filter_map(|p| match p {
            Placement::Proposal(q) => Some(json!({"proposal": q.name(), "describe": q.describe(), "cost": q.cost()})),
            Placement::Kernel(_) | Placement::External(_) => None,
        })
        .collect();
    let mut out = json!({
        "command": command_line(c),
        "topologies": c.topologies,
        "mixes": c.mixes,
        "placements": c.placements,
        "counters": c.counters,
        "sort": c.sort.name(),
        "effective": c.effective.name(),
        "rows": rows,
        "aggregates": aggregates,
        "comparisons": sweep.comparisons,
        "proposals": cost,
    });
    if c.orders != Orders::Fixed {
        out["orders"] = json!(c.orders.name());
        if let Some(all) = c.sampled_for_budget {
            out["orders_sampled_for_budget"] = json!(all);
        }
    }
    out
}

/// Colours for placements, in configuration order (colour-blind-safe palette).
const PALETTE: [&str; 8] = [
    "#4477aa", "#66ccee", "#228833", "#ccbb44", "#ee6677", "#aa3377", "#bbbbbb", "#000000",
];

const PANEL_W: u32 = 230;
const PANEL_H: u32 = 124;
const PANEL_GAP: u32 = 12;
const PANELS_PER_ROW: u32 = 4;
const PLOT_TOP: u32 = 22;
const PLOT_BOTTOM: u32 = 18;
/// Room left of each panel's plot for its y ticks.
const PLOT_LEFT: u32 = 26;

/// Small multiples: one panel per machine; in it, one cluster of bars per mix (numbered; the
/// legend names each mix in full), one bar per placement: the worst counter's gap to the ideal
/// (full bar) and the best counter's (dark tick). One scale for every panel, ticked on each, so
/// panels compare; a panel whose every bar is 0 says so.
pub(crate) fn small_multiples(sweep: &Sweep) -> String {
    let c = &sweep.config;
    let (n_place, n_mix) = (c.placements.len(), c.mixes.len());
    let gap_max = sweep
        .aggregates
        .iter()
        .map(|a| a.worst.gap_irqs)
        .max()
        .unwrap_or(0)
        .max(1);
    let rows = (c.topologies.len() as u32).div_ceil(PANELS_PER_ROW);
    let legend = small_multiples_legend(sweep);
    let legend_h = 18 * legend.1;
    let width = PANELS_PER_ROW * (PANEL_W + PANEL_GAP);
    let height = legend_h + rows * (PANEL_H + PANEL_GAP);
    let mut out = super::svg::svg_open(
        "sweep-multiples",
        "gap to the ideal bound (IRQs per CPU), worst and best counter, per machine",
        width,
        height,
    );
    out.push_str(&legend.0);
    for (t, group) in sweep.aggregates.chunks(n_place * n_mix).enumerate() {
        let t = t as u32;
        let (px, py) = (
            (t % PANELS_PER_ROW) * (PANEL_W + PANEL_GAP),
            legend_h + (t / PANELS_PER_ROW) * (PANEL_H + PANEL_GAP),
        );
        panel(&mut out, group, n_place, gap_max, (px, py));
    }
    out.push_str("</svg>");
    out
}

/// The legend: a swatch per placement, then every mix by its number, in full.
fn small_multiples_legend(sweep: &Sweep) -> (String, u32) {
    let c = &sweep.config;
    let mut out = String::new();
    let mut x = 0;
    for (i, p) in c.placements.iter().enumerate() {
        let _ = write!(
            out,
            r#"<g class="legend"><rect x="{x}" y="4" width="10" height="10" fill="{}"/><text class="lbl" x="{}" y="13">{}</text></g>"#,
            PALETTE[i % PALETTE.len()],
            x + 13,
            escape(p.name())
        );
        x += 18 + 7 * p.name().len() as u32;
    }
    let mut lines = 1;
    let mut line = String::from("mixes:");
    let width_chars = (PANELS_PER_ROW * (PANEL_W + PANEL_GAP) / 7) as usize;
    let mut texts = Vec::new();
    for (m, mix) in c.mixes.iter().enumerate() {
        let item = format!(" {} = {}", m + 1, mix.name);
        if line.len() + item.len() > width_chars {
            texts.push(std::mem::take(&mut line));
        }
        line.push_str(&item);
    }
    texts.push(line);
    for t in texts {
        lines += 1;
        let _ = write!(
            out,
            r#"<text class="lbl mixes" x="0" y="{}">{}</text>"#,
            lines * 18 - 5,
            escape(&t)
        );
    }
    (out, lines)
}

/// One machine's panel at (`px`, `py`): y ticks, a cluster of bars per mix, its number.
fn panel(out: &mut String, group: &[Aggregate], n_place: usize, gap_max: u32, (px, py): (u32, u32)) {
    let n_mix = group.len() / n_place.max(1);
    let plot_h = PANEL_H - PLOT_TOP - PLOT_BOTTOM;
    let base_y = PLOT_TOP + plot_h;
    let per_mix_w = f64::from(PANEL_W - PLOT_LEFT - 6) / n_mix.max(1) as f64;
    let bar_w = (per_mix_w - 6.0) / n_place.max(1) as f64;
    let name = &group[0].topology;
    let _ = write!(
        out,
        r##"<g class="panel" data-topology="{}" transform="translate({px},{py})"><rect width="{PANEL_W}" height="{PANEL_H}" fill="#fff" stroke="#ccd"/><text class="lbl" x="5" y="14" font-weight="bold">{}</text>"##,
        escape(name),
        escape(name),
    );
    // Y ticks: 0, the middle and the top of the one scale, in IRQs per CPU over the ideal.
    for v in [0, gap_max / 2, gap_max] {
        let y = f64::from(base_y) - f64::from(v) * f64::from(plot_h) / f64::from(gap_max);
        let _ = write!(
            out,
            r##"<line x1="{}" x2="{PLOT_LEFT}" y1="{y:.1}" y2="{y:.1}" stroke="#99a"/><text class="tick" x="{}" y="{:.1}" text-anchor="end">{v}</text>"##,
            PLOT_LEFT - 3,
            PLOT_LEFT - 5,
            y + 3.5
        );
    }
    let _ = write!(
        out,
        r##"<line x1="{PLOT_LEFT}" x2="{PLOT_LEFT}" y1="{PLOT_TOP}" y2="{base_y}" stroke="#99a"/><line x1="{PLOT_LEFT}" x2="{}" y1="{base_y}" y2="{base_y}" stroke="#99a"/>"##,
        PANEL_W - 5
    );
    if group.iter().all(|a| a.worst.gap_irqs == 0) {
        let _ = write!(
            out,
            r#"<text class="lbl" x="{}" y="{}" text-anchor="middle">every placement at the ideal</text>"#,
            (PANEL_W + PLOT_LEFT) / 2,
            PLOT_TOP + plot_h / 2
        );
    }
    for (m, mix_group) in group.chunks(n_place).enumerate() {
        let mx = f64::from(PLOT_LEFT) + 3.0 + m as f64 * per_mix_w + 3.0;
        for (k, a) in mix_group.iter().enumerate() {
            bar(out, a, mx + k as f64 * bar_w, bar_w, (base_y, plot_h, gap_max), k, name);
        }
        let _ = write!(
            out,
            r#"<text class="tick" x="{:.1}" y="{}" text-anchor="middle"><title>{}</title>{}</text>"#,
            mx + (per_mix_w - 6.0) / 2.0,
            base_y + 13,
            escape(&mix_group[0].mix),
            m + 1
        );
    }
    out.push_str("</g>");
}

/// One placement's bar (worst counter's gap) and tick (best counter's).
fn bar(
    out: &mut String,
    a: &Aggregate,
    bx: f64,
    bar_w: f64,
    (base_y, plot_h, gap_max): (u32, u32, u32),
    k: usize,
    name: &str,
) {
    let h = f64::from(a.worst.gap_irqs) * f64::from(plot_h) / f64::from(gap_max);
    let hb = f64::from(a.best.gap_irqs) * f64::from(plot_h) / f64::from(gap_max);
    let _ = write!(
        out,
        r##"<rect class="bar" data-placement="{}" data-mix="{}" data-gap-worst="{}" data-gap-best="{}" x="{bx:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="{}"><title>{} / {} / {}: gap {} (worst, counter {}), {} (best, counter {})</title></rect>"##,
        escape(a.placement.name()),
        escape(&a.mix),
        a.worst.gap_irqs,
        a.best.gap_irqs,
        f64::from(base_y) - h,
        (bar_w - 1.0).max(1.0),
        PALETTE[k % PALETTE.len()],
        escape(name),
        escape(&a.mix),
        escape(a.placement.name()),
        a.worst.gap_irqs,
        a.worst_counter,
        a.best.gap_irqs,
        a.best_counter,
    );
    if a.best.gap_irqs != a.worst.gap_irqs {
        let _ = write!(
            out,
            r##"<rect class="best" x="{bx:.1}" y="{:.1}" width="{:.1}" height="2" fill="#222"/>"##,
            f64::from(base_y) - hb - 1.0,
            (bar_w - 1.0).max(1.0)
        );
    }
}

/// Each proposal against the kernel variants swept, counted (the text twin lists the cases).
pub(crate) fn comparison_counts(sweep: &Sweep) -> String {
    let kernels = sweep.config.placements.iter().filter(|p| !p.is_proposal()).count();
    let mut lines = Vec::new();
    for p in sweep.config.placements.iter().filter(|p| p.is_proposal()) {
        let mine: Vec<_> = sweep.comparisons.iter().filter(|c| c.proposal == *p).collect();
        if kernels == 0 || mine.is_empty() {
            continue;
        }
        let count = |v: Verdict| mine.iter().filter(|c| c.verdict == v).count();
        lines.push(format!(
            "{} against the {kernels} kernel variant{}: beats every one on {}, ties the best on {}, \
             behind one on {} of {} machine × mix",
            p.name(),
            if kernels == 1 { "" } else { "s" },
            count(Verdict::BeatsAll),
            count(Verdict::TiesBest),
            count(Verdict::Behind),
            mine.len()
        ));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::sweep::{self, Mix};

    fn small() -> Sweep {
        let config = SweepConfig {
            topologies: vec!["azure-l48s-v2".into(), "vm-8vcpu-smt2".into()],
            mixes: vec![Mix::parse("nvme-6x32").unwrap(), Mix::parse("a<b>=2x8:name=x").unwrap()],
            placements: SweepConfig::parse_placements("pre-cluster,rotation,offset-by-probed").unwrap(),
            counters: sweep::parse_counters("0..3").unwrap(),
            ..SweepConfig::catalogue_default()
        };
        sweep::run(&config).unwrap()
    }

    #[test]
    fn text_fits_mail() {
        let s = small();
        let t = text(&s);
        for line in t.lines().filter(|l| !l.starts_with("  $ ")) {
            assert!(line.chars().count() <= COLUMNS_MAX, "{line:?}");
        }
        assert!(t.contains("offset-by-probed against the 2 kernel variants"), "{t}");
        assert!(t.contains("cost: "), "{t}");
    }

    #[test]
    fn csv_quotes_and_counts() {
        let s = small();
        let out = csv(&s, &|_| Some("/s/x".into()));
        assert_eq!(out.lines().count(), 1 + 2 * 2 * 3 * 3);
        assert!(out.contains(",\"a<b>\"") || out.contains(",a<b>,"), "{out}");
        let header_fields = out.lines().next().unwrap().split(',').count();
        let row = out.lines().nth(1).unwrap();
        assert_eq!(row.split(',').count(), header_fields, "{row}");
    }

    /// Structure, not bytes: well-formed, one panel per machine, one bar per aggregate, names
    /// escaped.
    #[test]
    fn small_multiples_structure() {
        let s = small();
        let svg = small_multiples(&s);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches(r#"<g class="panel""#).count(), 2);
        assert_eq!(svg.matches(r#"<rect class="bar""#).count(), s.aggregates.len());
        assert!(!svg.contains("a<b>") && svg.contains("a&lt;b&gt;"));
        assert_eq!(svg.matches("<g").count(), svg.matches("</g>").count());
    }
}
