//! The sweep page: `/sweep` (sortable table + small multiples), `/sweep/text`, `/sweep/csv`,
//! `/sweep/json`, all from the same query. Handlers resolve the query into a
//! [`SweepConfig`], make one core call (`sweep::run_until`, through `work::Work`: estimated
//! first, on a blocking thread, stopped at the deadline), and build a page.
//! Every row links to its scenario's permalink.

use super::kernel_c::KernelCRegistry;
use super::work::{Estimate, Work};
use super::{text, AppError, AppState};
use crate::analysis::sweep::{self, Aggregate, Mix, Placement, Sweep, SweepConfig};
use crate::render;
use crate::scenario::permalink;
use crate::scenario::spec::{self, ScenarioSpec};
use askama::Template;
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;

/// Longest query value accepted for mixes.
pub(crate) const QUERY_MIXES_BYTES_MAX: usize = 4096;
/// Threads a web sweep may use (the machine serves other requests too).
pub(crate) const WEB_THREADS: usize = 2;

/// `/sweep?topologies=a,b|all&mixes=NAME;TOKENS&variants=a,b|all&counters=0..8&sort=&effective=`.
/// Mixes are separated by `;`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct SweepQuery {
    pub topologies: Option<String>,
    pub mixes: Option<String>,
    pub variants: Option<String>,
    pub counters: Option<String>,
    pub sort: Option<String>,
    pub effective: Option<String>,
}

fn bad(e: impl std::fmt::Display) -> AppError {
    AppError::BadInput(e.to_string())
}

/// A mix that does not parse. A `+` in the link stays a `+` (as in `sets=4+2`, see
/// `web::PLUS_LITERAL_PARAMS`), so a `+` meant as a space (a hand-typed link, a form sent
/// without the page's script) reaches the device grammar: say so instead of a bare grammar error.
fn bad_mix(mix: &str, e: impl std::fmt::Display) -> AppError {
    if mix.contains('+') {
        bad(format!(
            "{e} (a + in mixes is kept as a +, as in sets=4+2; separate devices with a space, %20)"
        ))
    } else {
        bad(e)
    }
}

impl SweepQuery {
    /// The sweep this query asks for; a `c:NAME` variant is built C this server registered.
    pub fn config(&self, kernel_c: &KernelCRegistry) -> Result<SweepConfig, AppError> {
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
            // Built C (`c:NAME`) joins the placements, as on the command line.
            let (c_names, models): (Vec<&str>, Vec<&str>) = v
                .split(',')
                .map(str::trim)
                .partition(|v| v.starts_with(spec::KERNEL_C_PREFIX));
            config.placements = if models.iter().all(|m| m.is_empty()) && !c_names.is_empty() {
                Vec::new()
            } else {
                SweepConfig::parse_placements(&models.join(",")).map_err(bad)?
            };
            for name in c_names {
                let p = Placement::External(kernel_c.placement(&name[spec::KERNEL_C_PREFIX.len()..])?);
                if !config.placements.contains(&p) {
                    config.placements.push(p);
                }
            }
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

/// The sweep of a query, within the request's budget and deadline (`web::work`).
async fn run(q: &SweepQuery, kernel_c: &KernelCRegistry, work: Work) -> Result<Sweep, AppError> {
    let config = q.config(kernel_c)?;
    let estimate = Estimate::sweep(&config);
    work.run(estimate, move |deadline| {
        sweep::run_until(&config, &|| deadline.expired()).map_err(bad)
    })
    .await
}

fn link(spec: &ScenarioSpec) -> Option<String> {
    permalink::encode(spec).ok().map(|l| format!("/s/{l}"))
}

/// One table row: an aggregate over the counters, worst case shown, linking to the worst
/// counter's scenario.
pub(crate) struct RowView {
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

#[derive(Template)]
#[template(path = "sweep/page.html")]
pub(crate) struct SweepPage {
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

impl SweepPage {
    pub fn new(s: &Sweep, query: String) -> SweepPage {
        SweepPage {
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

fn query_string(q: &SweepQuery) -> String {
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

fn encode_component(v: &str) -> String {
    v.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~,".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

pub(crate) async fn sweep_page(
    work: Work,
    State(state): State<AppState>,
    Query(q): Query<SweepQuery>,
) -> Result<Html<String>, AppError> {
    let s = run(&q, &state.kernel_c, work).await?;
    Ok(Html(SweepPage::new(&s, query_string(&q)).render()?))
}

pub(crate) async fn sweep_text(
    work: Work,
    State(state): State<AppState>,
    Query(q): Query<SweepQuery>,
) -> Result<Response, AppError> {
    Ok(text(render::sweep::text(&run(&q, &state.kernel_c, work).await?)))
}

pub(crate) async fn sweep_csv(
    work: Work,
    State(state): State<AppState>,
    Query(q): Query<SweepQuery>,
) -> Result<Response, AppError> {
    let body = render::sweep::csv(&run(&q, &state.kernel_c, work).await?, &link);
    Ok(([(header::CONTENT_TYPE, "text/csv; charset=utf-8")], body).into_response())
}

pub(crate) async fn sweep_json(
    work: Work,
    State(state): State<AppState>,
    Query(q): Query<SweepQuery>,
) -> Result<axum::Json<serde_json::Value>, AppError> {
    Ok(axum::Json(render::sweep::json(&run(&q, &state.kernel_c, work).await?, &link)))
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
