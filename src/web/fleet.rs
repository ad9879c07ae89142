//! `GET /fleet`: every live host at a glance (pushed or read from Prometheus): kernel release,
//! the busiest CPU's share of device interrupts, the most IRQs whose effective CPU is one and
//! the same CPU, and how many vectors differ from a model (`live_vs_model`), sortable
//! (`?sort=host|kernel|busiest|stacking|mismatches`), and filtered to the hosts that match
//! the model (`?matching=1&variant=&effective=`). With no variant or effective model named,
//! each host runs the ones its kernel release and chip names imply, exactly as its `/live`
//! page and `irqscope lab check` do, and the count is the one they print.

use super::{AppError, AppState};
use crate::analysis::live_vs_model;
use crate::live::store::HostState;
use askama::Template;
use axum::extract::{Query, State};
use axum::response::Html;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Debug, Default, Deserialize)]
pub(crate) struct FleetQuery {
    pub sort: Option<String>,
    pub variant: Option<String>,
    pub effective: Option<String>,
    pub matching: Option<String>,
}

pub(crate) struct FleetRow {
    pub host: String,
    pub kernel: String,
    pub busiest: String,
    pub stacking: u32,
    pub verdict: String,
    /// Some vector differs from the model.
    pub differs: bool,
    busiest_share: f64,
    mismatches: Option<usize>,
    vectors: usize,
}

#[derive(Template)]
#[template(path = "fleet/fleet.html")]
pub(crate) struct FleetPage {
    pub title: String,
    pub rows: Vec<FleetRow>,
    pub variant: String,
    pub effective: String,
    /// The model in words: the names given, or each host's own.
    pub model_words: String,
    pub matching: bool,
    pub sort: String,
    pub link_base: String,
    pub problem: Option<String>,
    pub columns: Vec<Column>,
}

/// A column header: its sort key and label, right-aligned or not, and the sort order it
/// shows (`aria-sort` value and arrow; empty when the table is sorted by another column).
pub(crate) struct Column {
    pub key: &'static str,
    pub label: &'static str,
    pub num: bool,
    pub aria: &'static str,
    pub arrow: &'static str,
}

/// The table's columns, in order: sort key, header, numeric.
const COLUMNS: [(&str, &str, bool); 5] = [
    ("host", "host", false),
    ("kernel", "kernel", false),
    ("busiest", "busiest CPU share", true),
    ("stacking", "most IRQs on one CPU", true),
    ("mismatches", "live vs model", false),
];

/// The most numbered IRQs whose effective affinity is the same single CPU.
fn stacking(st: &HostState) -> u32 {
    let mut per_cpu: HashMap<&str, u32> = HashMap::new();
    for irq in &st.snapshot.irqs {
        if irq.label.parse::<u32>().is_err() {
            continue;
        }
        if let Some(e) = irq.effective.as_deref().filter(|e| e.parse::<u32>().is_ok()) {
            *per_cpu.entry(e).or_default() += 1;
        }
    }
    per_cpu.values().copied().max().unwrap_or(0)
}

fn row(st: &HostState, variant: &str, effective: &str) -> FleetRow {
    let share = st.rates.as_ref().and_then(|r| {
        let total: f64 = r.per_cpu.values().sum();
        (total > 0.0).then(|| r.per_cpu.values().cloned().fold(0.0, f64::max) / total)
    });
    // The host's own release and chips choose what the query leaves empty (as `/live`).
    let (mut opts, _) = live_vs_model::options_for(&st.snapshot, None);
    if !variant.is_empty() {
        opts.variant = variant.to_string();
    }
    opts.effective = effective.to_string();
    let cmp = live_vs_model::compare_with(&st.snapshot, &st.topology, &opts);
    let (verdict, mismatches, vectors) = match &cmp {
        Ok(c) if c.vectors.is_empty() => ("no modelled device".to_string(), None, 0),
        Ok(c) => {
            // As the host's /live page counts: an effective CPU only an order decides is
            // named apart, not counted as differing.
            let explained: usize = c.explained().values().sum();
            let why = if explained > 0 {
                format!(" ({explained} more only by probe or activation order)")
            } else {
                String::new()
            };
            (
                format!("{} of {} vectors differ{why}", c.unexplained(), c.vectors.len()),
                Some(c.unexplained()),
                c.vectors.len(),
            )
        }
        Err(e) => (format!("not modelled: {e}"), None, 0),
    };
    FleetRow {
        host: st.snapshot.host.clone(),
        kernel: Some(st.snapshot.topology.kernel_release.clone())
            .filter(|k| !k.is_empty())
            .unwrap_or_else(|| "unknown".into()),
        busiest: share.map_or("—".into(), |s| format!("{:.1}%", s * 100.0)),
        stacking: stacking(st),
        verdict,
        differs: mismatches.is_some_and(|m| m > 0),
        busiest_share: share.unwrap_or(0.0),
        mismatches,
        vectors,
    }
}

/// Most hosts compared per page view (the store's own host limit).
const FLEET_ROWS_MAX: usize = crate::live::limits::HOSTS_MAX;

pub(crate) async fn fleet_page(
    State(app): State<AppState>,
    Query(q): Query<FleetQuery>,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
) -> Result<axum::response::Response, AppError> {
    // The fleet shows every live host: the same viewer tokens as the live pages guard it.
    if let Some(redirect) = app.live.admit(&uri, &headers, true)? {
        return Ok(redirect);
    }
    let pick = |v: &Option<String>, d: &str| v.clone().filter(|s| !s.is_empty()).unwrap_or_else(|| d.to_string());
    // Empty: each host's own (its kernel release's variant, its IRQs' controllers).
    let (variant, effective) = live_vs_model::named_models(q.variant.as_deref(), q.effective.as_deref())?;
    let model_words = format!(
        "{} / {}",
        if variant.is_empty() {
            "each host's kernel release"
        } else {
            &variant
        },
        if effective.is_empty() {
            "each IRQ's controller"
        } else {
            &effective
        }
    );
    let sort = pick(&q.sort, "host");
    if !COLUMNS.iter().any(|c| c.0 == sort) {
        return Err(AppError::BadInput(
            "sort: host, kernel, busiest, stacking or mismatches".into(),
        ));
    }
    let matching = q.matching.as_deref() == Some("1");
    let hosts: Vec<Arc<HostState>> = app.live.hub().hosts().into_iter().take(FLEET_ROWS_MAX).collect();
    let problem = app.live.prometheus().and_then(|p| p.problem());
    let (v, e) = (variant.clone(), effective.clone());
    let mut rows = tokio::task::spawn_blocking(move || hosts.iter().map(|h| row(h, &v, &e)).collect::<Vec<_>>())
        .await
        .map_err(|e| AppError::Internal(format!("fleet task: {e}")))?;
    if matching {
        rows.retain(|r| r.mismatches == Some(0) && r.vectors > 0);
    }
    match sort.as_str() {
        "kernel" => rows.sort_by(|a, b| a.kernel.cmp(&b.kernel).then(a.host.cmp(&b.host))),
        "busiest" => rows.sort_by(|a, b| b.busiest_share.total_cmp(&a.busiest_share)),
        "stacking" => rows.sort_by_key(|r| std::cmp::Reverse(r.stacking)),
        "mismatches" => rows.sort_by_key(|r| std::cmp::Reverse(r.mismatches)),
        _ => rows.sort_by(|a, b| a.host.cmp(&b.host)),
    }
    let enc = |s: &str| s.replace('&', "%26").replace(' ', "%20");
    let link_base = format!(
        "/fleet?variant={}&effective={}{}",
        enc(&variant),
        enc(&effective),
        if matching { "&matching=1" } else { "" }
    );
    let columns = COLUMNS
        .iter()
        .map(|&(key, label, num)| {
            // Names sort A→Z, figures from the largest.
            let (aria, arrow) = match (key == sort, key == "host" || key == "kernel") {
                (false, _) => ("", ""),
                (true, true) => ("ascending", "▴"),
                (true, false) => ("descending", "▾"),
            };
            Column {
                key,
                label,
                num,
                aria,
                arrow,
            }
        })
        .collect();
    let page = FleetPage {
        title: "fleet".into(),
        rows,
        variant,
        effective,
        model_words,
        matching,
        sort,
        link_base,
        problem,
        columns,
    };
    Ok(axum::response::IntoResponse::into_response(Html(page.render()?)))
}
