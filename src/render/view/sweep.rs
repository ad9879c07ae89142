//! The sweep page (`/sweep`, `/sweep/text`, `/sweep/csv`, `/sweep/json`, all from the same
//! query) as data: [`SweepQuery::config`] resolves the query into a [`SweepConfig`] (the one
//! `irqscope sweep` builds from its flags), `analysis::sweep::run` runs it, and
//! [`SweepView::new`] is the page. Every row links to its scenario's permalink.

use super::{bad, encode_component, ViewError};
use crate::analysis::orders::Orders;
use crate::analysis::sweep::{self, Aggregate, Figures, Mix, Placement, Sweep, SweepConfig};
use crate::render;
use crate::scenario::permalink;
use crate::scenario::spec::{self, ScenarioSpec};
use serde::Deserialize;

/// Longest query value accepted for mixes.
pub(crate) const QUERY_MIXES_BYTES_MAX: usize = 4096;
/// Threads a web sweep may use (the machine serves other requests too).
pub(crate) const WEB_THREADS: usize = 2;

/// `/sweep?topologies=a,b|all&mixes=NAME;TOKENS&variants=a,b|all&counters=0..8&sort=&effective=`.
/// Mixes are separated by `;`.
#[derive(Debug, Default, Deserialize)]
pub struct SweepQuery {
    pub topologies: Option<String>,
    pub mixes: Option<String>,
    pub variants: Option<String>,
    pub counters: Option<String>,
    pub sort: Option<String>,
    pub effective: Option<String>,
    /// Probe orders each row also stands for: `all` or `sample:N[:SEED]`.
    pub orders: Option<String>,
    /// View: the placement the page measures the others against (not part of the sweep).
    pub base: Option<String>,
}

fn bad_config(e: impl std::fmt::Display) -> ViewError {
    ViewError::BadInput(e.to_string())
}

/// A mix that does not parse. A `+` in the link stays a `+` (as in `sets=4+2`, see
/// `web::PLUS_LITERAL_PARAMS`), so a `+` meant as a space (a hand-typed link, a form sent
/// without the page's script) reaches the device grammar: say so instead of a bare grammar error.
fn bad_mix(mix: &str, e: impl std::fmt::Display) -> ViewError {
    if mix.contains('+') {
        bad_config(format!(
            "{e} (a + in mixes is kept as a +, as in sets=4+2; separate devices with a space, %20)"
        ))
    } else {
        bad_config(e)
    }
}

impl SweepQuery {
    /// The sweep this query asks for; a `c:NAME` variant is built C this server registered.
    pub fn config(&self, kernel_c: &crate::kernel_c::registry::KernelCRegistry) -> Result<SweepConfig, ViewError> {
        let mut config = SweepConfig::catalogue_default();
        config.threads = WEB_THREADS;
        if let Some(t) = self.topologies.as_deref().filter(|t| !t.is_empty()) {
            config.topologies = SweepConfig::parse_topologies(t).map_err(bad_config)?;
        }
        if let Some(m) = self.mixes.as_deref().filter(|m| !m.trim().is_empty()) {
            if m.len() > QUERY_MIXES_BYTES_MAX {
                return Err(bad_config(format!("mixes: longer than {QUERY_MIXES_BYTES_MAX} bytes")));
            }
            config.mixes = m
                .split(';')
                .filter(|s| !s.trim().is_empty())
                .map(|mix| Mix::parse(mix).map_err(|e| bad_mix(mix, e)))
                .collect::<Result<_, _>>()?;
        }
        if let Some(v) = self.variants.as_deref().filter(|v| !v.is_empty()) {
            // Built C (`c:NAME`) joins the placements, as on the command line.
            let (c_names, models): (Vec<&str>, Vec<&str>) = v
                .split(',')
                .map(str::trim)
                .partition(|v| v.starts_with(spec::KERNEL_C_PREFIX));
            config.placements = if models.iter().all(|m| m.is_empty()) && !c_names.is_empty() {
                Vec::new()
            } else {
                SweepConfig::parse_placements(&models.join(",")).map_err(bad_config)?
            };
            for name in c_names {
                let built = kernel_c.placement(&name[spec::KERNEL_C_PREFIX.len()..])?;
                let p = crate::analysis::sweep::Placement::External(crate::analysis::sweep::ExternalRef::from_static(
                    built,
                ));
                if !config.placements.contains(&p) {
                    config.placements.push(p);
                }
            }
        }
        if let Some(c) = self.counters.as_deref().filter(|c| !c.is_empty()) {
            config.counters = sweep::parse_counters(c).map_err(bad_config)?;
        }
        if let Some(s) = self.sort.as_deref().filter(|s| !s.is_empty()) {
            config.sort = spec::parse_sort(s)?;
        }
        if let Some(e) = self.effective.as_deref().filter(|e| !e.is_empty()) {
            config.effective = spec::parse_effective(e)?;
        }
        if let Some(o) = self.orders.as_deref().filter(|o| !o.is_empty()) {
            config.orders = Orders::parse(o).map_err(bad_config)?;
        }
        Ok(config)
    }
}

/// A row's scenario link (`/s/…`).
pub fn link(spec: &ScenarioSpec) -> Option<String> {
    permalink::encode(spec).ok().map(|l| format!("/s/{l}"))
}

/// One table row: an aggregate over the counters, worst case shown, linking to the worst
/// counter's scenario.
pub struct RowView {
    pub(crate) topology: String,
    pub(crate) mix: String,
    pub(crate) placement: &'static str,
    pub(crate) proposal: bool,
    pub(crate) case: String,
    pub(crate) irqs_min: u32,
    pub(crate) irqs_max: u32,
    pub(crate) ideal: u32,
    pub(crate) gap: u32,
    pub(crate) gap_best: u32,
    pub(crate) idle: u32,
    pub(crate) hot: u32,
    pub(crate) hot_ideal: u32,
    pub(crate) node_spread: u32,
    pub(crate) nodes: String,
    pub(crate) over: String,
    pub link: String,
    /// With orders asked: P(worst > ideal) over every counter swept ("37.5%", with the 95%
    /// interval when sampled), its value for sorting, and what it stands for.
    pub(crate) p_worst: Option<PWorstCell>,
}

/// A row's "P(worst > ideal)" cell.
pub(crate) struct PWorstCell {
    pub(crate) text: String,
    /// Sampled: "95%: 31.4–36.7%".
    pub(crate) interval: Option<String>,
    pub(crate) sort: String,
    pub(crate) title: String,
}

impl PWorstCell {
    fn new(o: &sweep::OrdersFigures) -> PWorstCell {
        PWorstCell {
            text: format!("{:.1}%", 100.0 * o.p_worst_above_ideal()),
            interval: o
                .interval()
                .map(|(lo, hi)| format!("95%: {:.1}–{:.1}%", lo * 100.0, hi * 100.0)),
            sort: format!("{:.6}", o.p_worst_above_ideal()),
            title: format!(
                "the worst CPU above the ideal {} IRQs in {} of {} boots",
                o.ideal_irqs_per_cpu,
                render::sweep::group_digits(o.worst_above_ideal),
                render::sweep::group_digits(o.runs)
            ),
        }
    }
}

impl RowView {
    fn new(s: &Sweep, a: &Aggregate) -> RowView {
        let w = &a.worst;
        let case = if a.counter_independent {
            "any".to_string()
        } else {
            format!("worst {} · best {}", a.worst_counter, a.best_counter)
        };
        RowView {
            topology: a.topology.clone(),
            mix: a.mix.clone(),
            placement: a.placement.name(),
            proposal: a.placement.is_proposal(),
            case,
            irqs_min: w.irqs_per_cpu_min,
            irqs_max: w.irqs_per_cpu_max,
            ideal: w.ideal_irqs_per_cpu,
            gap: w.gap_irqs,
            gap_best: a.best.gap_irqs,
            idle: w.cpus_idle,
            hot: w.hot_irqs_per_cpu_max,
            hot_ideal: w.hot_ideal_per_cpu,
            node_spread: w.node_spread(),
            nodes: w.per_node_irqs.iter().map(u32::to_string).collect::<Vec<_>>().join(" "),
            over: crate::render::summary::milli(w.node_over_fair_milli.max(0) as u64),
            link: link(&s.spec(&a.topology, &a.mix, a.placement, a.worst_counter)).unwrap_or_default(),
            p_worst: a.orders.as_ref().map(PWorstCell::new),
        }
    }
}

/// One place where a placement differs from the baseline, worst counter against worst
/// counter: the first figure that differs in the order reviewers rank them.
pub struct ChangeRow {
    pub topology: String,
    pub(crate) mix: String,
    pub placement: &'static str,
    pub metric: &'static str,
    pub before: u32,
    pub after: u32,
    /// The placement's scenario at its worst counter.
    pub(crate) link: String,
    /// Ranking key: the metric's place in the ranking, then how far it moved.
    rank: (usize, std::cmp::Reverse<u32>),
}

/// A figure's name and how to read it from a row's figures.
type Ranked = (&'static str, fn(&Figures) -> u32);

/// The figures a reviewer ranks placements by, most important first (`Figures::badness`).
const RANKED: [Ranked; 5] = [
    ("vectors without a CPU", |f| f.vectors_failed),
    ("IRQs on the busiest CPU", |f| f.irqs_per_cpu_max),
    ("hot IRQs on one CPU", |f| f.hot_irqs_per_cpu_max),
    ("node spread (IRQs)", |f| f.node_spread()),
    ("idle CPUs", |f| f.cpus_idle),
];

/// Rows of the ranked tables shown; the rest are in each machine's table.
pub(crate) const CHANGES_SHOWN_MAX: usize = 12;

/// One machine's rows of the full table, folded under a line that sums them up.
pub struct MachineRows {
    pub(crate) topology: String,
    pub(crate) summary: String,
    pub rows: Vec<RowView>,
}

/// The sweep page: which placement loses and wins where against the baseline, ranked; the
/// chart of every machine; every row, folded per machine.
pub struct SweepView {
    pub(crate) title: String,
    /// The reproducing command in unbreakable pieces (an option with its value, or one word),
    /// so a narrow page wraps between arguments, never inside `--mix`.
    pub(crate) command_args: Vec<String>,
    pub(crate) query: String,
    /// The placement the others are measured against (`?base=`, default `cluster`).
    pub(crate) baseline: &'static str,
    pub(crate) placements: Vec<(&'static str, bool)>,
    /// Per other placement: on how many machine × mix it is worse and better than the baseline.
    pub(crate) headline: String,
    pub(crate) losses: Vec<ChangeRow>,
    pub wins: Vec<ChangeRow>,
    pub(crate) n_losses: usize,
    pub(crate) n_wins: usize,
    pub(crate) chart_svg: String,
    /// Each proposal against the kernel variants, counted.
    pub(crate) comparison: String,
    pub machines: Vec<MachineRows>,
    pub(crate) n_rows: usize,
    /// With orders asked: what P(worst > ideal) stands for (and that the runs are a sample
    /// when every order was over the budget).
    pub(crate) orders_note: Option<String>,
    /// The budget's sample, said apart so it is seen.
    pub(crate) sampled_note: Option<String>,
}

/// The baseline a query names, or the default: `cluster` when swept, else the first placement.
fn baseline(s: &Sweep, name: Option<&str>) -> Result<Placement, ViewError> {
    let placements = &s.config.placements;
    match name.filter(|n| !n.is_empty()) {
        Some(n) => placements
            .iter()
            .copied()
            .find(|p| p.name() == n)
            .ok_or_else(|| bad(format!("base {n:?} is not among the placements swept"))),
        None => Ok(placements
            .iter()
            .copied()
            .find(|p| p.name() == crate::scenario::spec::DEFAULT_VARIANT.name())
            .unwrap_or(placements[0])),
    }
}

/// Every (machine, mix, placement) that differs from `base` on a ranked figure.
fn changes(s: &Sweep, base: Placement) -> Vec<(bool, ChangeRow)> {
    let n_place = s.config.placements.len();
    let mut out = Vec::new();
    for group in s.aggregates.chunks(n_place) {
        let Some(b) = group.iter().find(|a| a.placement == base) else {
            continue;
        };
        for a in group.iter().filter(|a| a.placement != base) {
            let differs = RANKED
                .iter()
                .enumerate()
                .map(|(i, (name, f))| (i, *name, f(&b.worst), f(&a.worst)))
                .find(|(_, _, before, after)| before != after);
            let Some((i, metric, before, after)) = differs else {
                continue;
            };
            out.push((
                after > before,
                ChangeRow {
                    topology: a.topology.clone(),
                    mix: a.mix.clone(),
                    placement: a.placement.name(),
                    metric,
                    before,
                    after,
                    link: link(&s.spec(&a.topology, &a.mix, a.placement, a.worst_counter)).unwrap_or_default(),
                    rank: (i, std::cmp::Reverse(before.abs_diff(after))),
                },
            ));
        }
    }
    out
}

/// "rotation: worse on 3, better on 40 of 104; …": per placement against the baseline.
fn headline(s: &Sweep, base: Placement, changes: &[(bool, ChangeRow)]) -> String {
    let per_placement = s.aggregates.len() / s.config.placements.len().max(1);
    let parts: Vec<String> = s
        .config
        .placements
        .iter()
        .filter(|p| **p != base)
        .map(|p| {
            let count = |worse: bool| {
                changes
                    .iter()
                    .filter(|(w, c)| *w == worse && c.placement == p.name())
                    .count()
            };
            format!("{}: worse on {}, better on {}", p.name(), count(true), count(false))
        })
        .collect();
    format!(
        "Against {} (worst counter against worst counter, {per_placement} machine × mix each): {}",
        base.name(),
        parts.join("; ")
    )
}

/// The full table, one folded block per machine, each summed up in a line.
fn machine_rows(s: &Sweep, base: Placement, changes: &[(bool, ChangeRow)]) -> Vec<MachineRows> {
    let per_machine = s.config.mixes.len() * s.config.placements.len();
    s.aggregates
        .chunks(per_machine.max(1))
        .map(|group| {
            let topology = group[0].topology.clone();
            let mine = changes.iter().filter(|(_, c)| c.topology == topology);
            let worse = mine.clone().filter(|(w, _)| *w).count();
            let better = mine.filter(|(w, _)| !*w).count();
            let gap_max = group.iter().map(|a| a.worst.gap_irqs).max().unwrap_or(0);
            MachineRows {
                summary: format!(
                    "{topology}: against {}, {worse} worse and {better} better; largest gap to the ideal {gap_max}",
                    base.name()
                ),
                topology,
                rows: group.iter().map(|a| RowView::new(s, a)).collect(),
            }
        })
        .collect()
}

impl SweepView {
    /// `query` is the page's own query string (`?topologies=…`), for the twins' links;
    /// `base` the placement to measure against (`?base=`).
    pub fn new(s: &Sweep, query: String, base: Option<&str>) -> Result<SweepView, ViewError> {
        let base = baseline(s, base)?;
        let all = changes(s, base);
        let mut losses: Vec<ChangeRow> = Vec::new();
        let mut wins: Vec<ChangeRow> = Vec::new();
        for (worse, c) in changes(s, base) {
            if worse {
                losses.push(c);
            } else {
                wins.push(c);
            }
        }
        let (n_losses, n_wins) = (losses.len(), wins.len());
        for list in [&mut losses, &mut wins] {
            list.sort_by_key(|c| c.rank);
            list.truncate(CHANGES_SHOWN_MAX);
        }
        Ok(SweepView {
            title: "sweep".into(),
            command_args: unbreakable_args(&render::sweep::command_line(&s.config)),
            query,
            baseline: base.name(),
            placements: s.config.placements.iter().map(|p| (p.name(), *p == base)).collect(),
            headline: headline(s, base, &all),
            machines: machine_rows(s, base, &all),
            losses,
            wins,
            n_losses,
            n_wins,
            chart_svg: render::sweep::small_multiples(s),
            comparison: render::sweep::comparison_counts(s),
            n_rows: s.rows.len(),
            orders_note: render::sweep::orders_note(&s.config),
            sampled_note: s.config.sampled_for_budget.map(|all| {
                format!(
                    "Sampled: every probe order on every row would take {} runs, more than this server gives one request, so each row draws {} orders at random (seed 0); the shares are estimates with their 95% intervals. The command below runs every order.",
                    render::sweep::group_digits(all),
                    match s.config.orders {
                        Orders::Sample { n, .. } => render::sweep::group_digits(u64::from(n)),
                        _ => "all".into(),
                    }
                )
            }),
        })
    }
}

/// `cmd` split into words, each `--option` kept with the value after it.
fn unbreakable_args(cmd: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in cmd.split(' ').filter(|w| !w.is_empty()) {
        match out.last_mut() {
            Some(last) if last.starts_with("--") && !last.contains(' ') && !word.starts_with("--") => {
                last.push(' ');
                last.push_str(word);
            }
            _ => out.push(word.to_string()),
        }
    }
    out
}

/// The query string that asks for `q` again.
pub(crate) fn query_string(q: &SweepQuery) -> String {
    let pairs = [
        ("topologies", &q.topologies),
        ("mixes", &q.mixes),
        ("variants", &q.variants),
        ("counters", &q.counters),
        ("sort", &q.sort),
        ("effective", &q.effective),
        ("orders", &q.orders),
        ("base", &q.base),
    ];
    let parts: Vec<String> = pairs
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={}", encode_component(v))))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("?{}", parts.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::unbreakable_args;

    #[test]
    fn options_keep_their_values() {
        let args = unbreakable_args("irqscope sweep --topologies a,b --mix nvme-6x32 --mix 'x y' --variants all");
        assert_eq!(
            args,
            [
                "irqscope",
                "sweep",
                "--topologies a,b",
                "--mix nvme-6x32",
                "--mix 'x",
                "y'",
                "--variants all"
            ]
        );
        assert_eq!(
            args.join(" ").len(),
            "irqscope sweep --topologies a,b --mix nvme-6x32 --mix 'x y' --variants all".len()
        );
    }
}
