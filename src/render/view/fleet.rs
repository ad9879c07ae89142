//! The fleet page (`/fleet`) as data: every live host at a glance (pushed or read from
//! Prometheus): kernel release, the busiest CPU's share of device interrupts, the most IRQs
//! whose effective CPU is one and the same CPU, and how many vectors differ from a model
//! (`live_vs_model`), sortable (`?sort=host|kernel|busiest|stacking|mismatches`), and filtered
//! to the hosts that match the model (`?matching=1&variant=&effective=`). With no variant or
//! effective model named, each host runs the ones its kernel release and chip names imply,
//! exactly as its `/live` page and `irqscope lab check` do, and the count is the one they
//! print.

use super::ViewError;
use crate::analysis::live_vs_model;
use crate::live::store::HostState;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Debug, Default, Deserialize)]
pub struct FleetQuery {
    pub(crate) sort: Option<String>,
    pub(crate) variant: Option<String>,
    pub(crate) effective: Option<String>,
    pub(crate) matching: Option<String>,
}

pub struct FleetRow {
    pub(crate) host: String,
    pub(crate) kernel: String,
    pub(crate) busiest: String,
    pub(crate) stacking: u32,
    pub verdict: String,
    /// Some vector differs from the model.
    pub differs: bool,
    busiest_share: f64,
    mismatches: Option<usize>,
    vectors: usize,
}

/// The fleet page.
pub struct FleetView {
    /// The model in words: the names given, or each host's own.
    pub(crate) model_words: String,
    /// The query of the page (`?variant=…&sort=…`), for its twins.
    pub(crate) query: String,
    pub(crate) title: String,
    pub rows: Vec<FleetRow>,
    pub(crate) variant: String,
    pub(crate) effective: String,
    pub(crate) matching: bool,
    pub(crate) sort: String,
    pub(crate) link_base: String,
    pub(crate) problem: Option<String>,
    pub(crate) columns: Vec<Column>,
}

/// A column header: its sort key and label, right-aligned or not, and the sort order it
/// shows (`aria-sort` value and arrow; empty when the table is sorted by another column).
pub(crate) struct Column {
    pub(crate) key: &'static str,
    pub(crate) label: &'static str,
    pub(crate) num: bool,
    pub(crate) aria: &'static str,
    pub(crate) arrow: &'static str,
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
pub(crate) const FLEET_ROWS_MAX: usize = crate::live::limits::HOSTS_MAX;

/// A fleet query checked: the model to compare against, the sort key, the filter.
pub struct FleetChoice {
    pub(crate) variant: String,
    pub(crate) effective: String,
    pub(crate) sort: String,
    pub(crate) matching: bool,
}

impl FleetQuery {
    pub fn choice(&self) -> Result<FleetChoice, ViewError> {
        let pick = |v: &Option<String>, d: &str| v.clone().filter(|s| !s.is_empty()).unwrap_or_else(|| d.to_string());
        // Empty: each host's own (its kernel release's variant, its IRQs' controllers).
        let (variant, effective) = live_vs_model::named_models(self.variant.as_deref(), self.effective.as_deref())?;
        let sort = pick(&self.sort, "host");
        if !COLUMNS.iter().any(|c| c.0 == sort) {
            return Err(ViewError::BadInput(
                "sort: host, kernel, busiest, stacking or mismatches".into(),
            ));
        }
        Ok(FleetChoice {
            variant,
            effective,
            sort,
            matching: self.matching.as_deref() == Some("1"),
        })
    }
}

impl FleetView {
    /// The page for `hosts` (at most [`FLEET_ROWS_MAX`] are compared); `problem` is why the
    /// Prometheus source is not answering, when it is not. Runs the model once per host: call
    /// it off the async executor.
    pub fn new(hosts: &[Arc<HostState>], choice: FleetChoice, problem: Option<String>) -> FleetView {
        let FleetChoice {
            variant,
            effective,
            sort,
            matching,
        } = choice;
        let mut rows: Vec<FleetRow> = hosts
            .iter()
            .take(FLEET_ROWS_MAX)
            .map(|h| row(h, &variant, &effective))
            .collect();
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
        FleetView {
            model_words,
            query: format!("{}&sort={sort}", &link_base["/fleet".len()..]),
            title: "fleet".into(),
            rows,
            variant,
            effective,
            matching,
            sort,
            link_base,
            problem,
            columns,
        }
    }
}

impl FleetView {
    /// The text twin: one line per host (host, kernel, busiest CPU's share, most IRQs on one
    /// CPU), then its live-vs-model verdict indented.
    pub(crate) fn text_report(&self) -> String {
        let mut out = crate::render::columns::wrap(
            &format!(
                "{} host{}, model {}",
                self.rows.len(),
                if self.rows.len() == 1 { "" } else { "s" },
                self.model_words
            ),
            "irqscope fleet: ",
            "  ",
        );
        if let Some(p) = &self.problem {
            out.push_str(&crate::render::columns::wrap(p, "problem: ", "  "));
        }
        out.push_str("\n  host                      kernel              busiest  stacked\n");
        for r in &self.rows {
            let host: String = r.host.chars().take(24).collect();
            let kernel: String = r.kernel.chars().take(18).collect();
            out.push_str(&format!(
                "  {host:<24}  {kernel:<18}  {:>7}  {:>7}\n",
                r.busiest, r.stacking
            ));
            out.push_str(&crate::render::columns::wrap(&r.verdict, "    ", "    "));
        }
        out
    }

    /// The JSON twin: every row's figures.
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "variant": self.variant,
            "effective": self.effective,
            "matching": self.matching,
            "sort": self.sort,
            "problem": self.problem,
            "hosts": self.rows.iter().map(|r| serde_json::json!({
                "host": r.host,
                "kernel": r.kernel,
                "busiest_share": r.busiest_share,
                "most_irqs_on_one_cpu": r.stacking,
                "vectors_modelled": r.vectors,
                "vectors_differing": r.mismatches,
                "verdict": r.verdict,
            })).collect::<Vec<_>>(),
        })
    }
}
