//! The sweep page (`/sweep`, `/sweep/text`, `/sweep/csv`, `/sweep/json`, all from the same
//! query) as data: [`SweepQuery::config`] resolves the query into a [`SweepConfig`] (the one
//! `irqscope sweep` builds from its flags), `analysis::sweep::run` runs it, and
//! [`SweepView::new`] is the page. Every row links to its scenario's permalink.

use super::{encode_component, ViewError};
use crate::analysis::sweep::{self, Aggregate, Mix, Sweep, SweepConfig};
use crate::render;
use crate::scenario::permalink;
use crate::scenario::spec::{self, ScenarioSpec};
use serde::Deserialize;

/// Longest query value accepted for mixes.
pub const QUERY_MIXES_BYTES_MAX: usize = 4096;
/// Threads a web sweep may use (the machine serves other requests too).
pub const WEB_THREADS: usize = 2;

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
}

fn bad(e: impl std::fmt::Display) -> ViewError {
    ViewError::BadInput(e.to_string())
}

/// A mix that does not parse. A `+` in the link stays a `+` (as in `sets=4+2`, see
/// `web::PLUS_LITERAL_PARAMS`), so a `+` meant as a space (a hand-typed link, a form sent
/// without the page's script) reaches the device grammar: say so instead of a bare grammar error.
fn bad_mix(mix: &str, e: impl std::fmt::Display) -> ViewError {
    if mix.contains('+') {
        bad(format!(
            "{e} (a + in mixes is kept as a +, as in sets=4+2; separate devices with a space, %20)"
        ))
    } else {
        bad(e)
    }
}

impl SweepQuery {
    pub fn config(&self) -> Result<SweepConfig, ViewError> {
        let mut config = SweepConfig::catalogue_default();
        config.threads = WEB_THREADS;
        if let Some(t) = self.topologies.as_deref().filter(|t| !t.is_empty()) {
            config.topologies = SweepConfig::parse_topologies(t).map_err(bad)?;
        }
        if let Some(m) = self.mixes.as_deref().filter(|m| !m.trim().is_empty()) {
            if m.len() > QUERY_MIXES_BYTES_MAX {
                return Err(bad(format!("mixes: longer than {QUERY_MIXES_BYTES_MAX} bytes")));
            }
            config.mixes = m
                .split(';')
                .filter(|s| !s.trim().is_empty())
                .map(|mix| Mix::parse(mix).map_err(|e| bad_mix(mix, e)))
                .collect::<Result<_, _>>()?;
        }
        if let Some(v) = self.variants.as_deref().filter(|v| !v.is_empty()) {
            config.placements = SweepConfig::parse_placements(v).map_err(bad)?;
        }
        if let Some(c) = self.counters.as_deref().filter(|c| !c.is_empty()) {
            config.counters = sweep::parse_counters(c).map_err(bad)?;
        }
        if let Some(s) = self.sort.as_deref().filter(|s| !s.is_empty()) {
            config.sort = spec::parse_sort(s)?;
        }
        if let Some(e) = self.effective.as_deref().filter(|e| !e.is_empty()) {
            config.effective = spec::parse_effective(e)?;
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
    pub topology: String,
    pub mix: String,
    pub placement: &'static str,
    pub proposal: bool,
    pub case: String,
    pub irqs_min: u32,
    pub irqs_max: u32,
    pub ideal: u32,
    pub gap: u32,
    pub gap_best: u32,
    pub idle: u32,
    pub hot: u32,
    pub hot_ideal: u32,
    pub node_spread: u32,
    pub nodes: String,
    pub over: String,
    pub link: String,
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
        }
    }
}

/// The sweep page.
pub struct SweepView {
    pub title: String,
    /// The reproducing command in unbreakable pieces (an option with its value, or one word),
    /// so a narrow page wraps between arguments, never inside `--mix`.
    pub command_args: Vec<String>,
    pub query: String,
    pub rows: Vec<RowView>,
    pub chart_svg: String,
    pub comparison: String,
    pub n_rows: usize,
}

impl SweepView {
    /// `query` is the page's own query string (`?topologies=…`), for the twins' links.
    pub fn new(s: &Sweep, query: String) -> SweepView {
        SweepView {
            title: "sweep".into(),
            command_args: unbreakable_args(&render::sweep::command_line(&s.config)),
            query,
            rows: s.aggregates.iter().map(|a| RowView::new(s, a)).collect(),
            chart_svg: render::sweep::small_multiples(s),
            comparison: render::sweep::comparison_text(s),
            n_rows: s.rows.len(),
        }
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
pub fn query_string(q: &SweepQuery) -> String {
    let pairs = [
        ("topologies", &q.topologies),
        ("mixes", &q.mixes),
        ("variants", &q.variants),
        ("counters", &q.counters),
        ("sort", &q.sort),
        ("effective", &q.effective),
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
