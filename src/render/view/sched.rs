//! The sched NUMA page (`/sched`, `/n/{permalink}` + `/text`, `/json`) as data.
//!
//! Its spec ([`SchedSpec`], in `scenario::sched`) travels in the permalink like the MANA
//! page's; which variant to highlight is a query parameter, never part of the spec.
//! [`SchedShown::new`] resolves and runs through `scenario::sched` (as `irqscope sched`
//! does); [`SchedView::new`] is the page.

use super::seeds::{seed_of, SeedFigure, SeedTarget};
use super::{bad, encode_link, given_number, preset_choices, MachineQuery, ViewError};
use crate::catalogue;
use crate::kernel::sched::{
    GroupLoad, ImbalanceVariant, LbResult, SchedOutcome, VariantOutcome, VariantSummary, INTERPRETATION_NOTES,
};
use crate::render::json_mana_sched::sched_view;
use crate::render::mana_sched::sched_twin;
use crate::render::svg_mana_sched as pics;
use crate::scenario::sched::{SchedRun, SchedScenario, SchedSpec, SCHED_DEFAULT_PRESET};
use serde::Deserialize;

/// Noise choices the sched page offers (the spec's 0-3 slider).
pub(crate) const NOISE_CHOICES: [u32; 4] = [0, 1, 2, 3];

/// `/sched?preset=…&pair_node=1&noise=0&reclaim=30&variant=p12`.
#[derive(Debug, Default, Deserialize)]
pub struct SchedQuery {
    #[serde(flatten)]
    pub machine: MachineQuery,
    pub pair_node: Option<String>,
    pub noise: Option<String>,
    pub reclaim: Option<String>,
    /// View: the variant whose column is highlighted and whose wake/fork walk is shown.
    pub variant: Option<String>,
}

impl SchedQuery {
    pub fn spec(&self) -> Result<SchedSpec, ViewError> {
        let (base, topology) = self.machine.base::<SchedSpec>(|b| &b.topology, SCHED_DEFAULT_PRESET)?;
        let mut spec = base.unwrap_or_else(SchedSpec::seed);
        spec.topology = topology;
        if let Some(n) = given_number(&self.pair_node, "pair_node")? {
            spec.pair_node = n;
        }
        if let Some(n) = given_number(&self.noise, "noise")? {
            spec.noise = n;
        }
        if let Some(n) = given_number(&self.reclaim, "reclaim")? {
            spec.node_reclaim_distance = n;
        }
        Ok(spec)
    }
}

/// The view part of a `/n/…` query: the variant to highlight.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct SchedDetail {
    pub(crate) variant: Option<String>,
}

pub fn parse_variant(name: Option<&str>) -> Result<ImbalanceVariant, ViewError> {
    match name {
        None | Some("") => Ok(ImbalanceVariant::Upstream),
        Some(n) => ImbalanceVariant::ALL
            .into_iter()
            .find(|v| v.as_str() == n)
            .ok_or_else(|| {
                let known: Vec<&str> = ImbalanceVariant::ALL.iter().map(|v| v.as_str()).collect();
                bad(format!("unknown sched variant {n:?} (known: {})", known.join(", ")))
            }),
    }
}

shown_run!(
    /// A sched spec resolved and run, with its permalink: what every `/n/` response shows.
    SchedShown,
    SchedScenario,
    SchedRun,
    SchedSpec,
    sched_twin,
    "n"
);

impl SchedShown {
    /// The JSON twin (`/n/{p}/json`, `irqscope sched --format json`).
    pub(crate) fn json(&self) -> serde_json::Value {
        sched_view(&self.permalink, &self.scenario.spec, &self.run.outcome)
    }
}

fn group_counts(g: &GroupLoad) -> String {
    let nodes: Vec<String> = g.nodes.iter().map(u32::to_string).collect();
    format!(
        "{{{}}} idle {} · busy {} · nr {}",
        nodes.join(","),
        g.idle_cpus,
        g.busy_cpus,
        g.sum_nr_running
    )
}

pub(crate) struct DecisionCell {
    pub(crate) variant: &'static str,
    pub(crate) path: &'static str,
    pub(crate) numbers: String,
    pub(crate) outcome: String,
    pub(crate) split: bool,
    pub(crate) selected: bool,
}

pub(crate) struct DecisionRow {
    pub(crate) dst_node: u32,
    pub(crate) dst_cpu: u32,
    pub(crate) level: u32,
    pub(crate) distance: u32,
    pub(crate) local: String,
    pub(crate) busiest: String,
    pub(crate) cells: Vec<DecisionCell>,
}

pub struct SummaryLine {
    pub variant: &'static str,
    pub(crate) text: String,
    pub split: bool,
}

pub(crate) struct WakeRow {
    pub(crate) level: u32,
    pub(crate) distance: u32,
    pub(crate) fork: bool,
    pub(crate) choice: &'static str,
    pub(crate) path: &'static str,
    pub(crate) numbers: String,
}

/// The sched page.
pub struct SchedView {
    pub(crate) title: String,
    /// Which variants split the pair and which keep it.
    pub(crate) headline: String,
    /// The seed figure this page is, when it is one.
    pub(crate) seed: Option<&'static SeedFigure>,
    pub(crate) permalink: String,
    pub(crate) topology_summary: String,
    pub(crate) presets: Vec<(&'static str, bool)>,
    pub(crate) inline: bool,
    pub(crate) pair_node: u32,
    pub(crate) nodes: Vec<u32>,
    pub(crate) noise: u32,
    pub(crate) noise_choices: Vec<u32>,
    pub(crate) reclaim: u32,
    pub(crate) variant: &'static str,
    pub(crate) variants: Vec<&'static str>,
    pub summary: Vec<SummaryLine>,
    pub(crate) distance_svg: String,
    pub(crate) levels: String,
    pub(crate) ladders: Vec<(u32, String)>,
    pub(crate) rows: Vec<DecisionRow>,
    pub(crate) wake: Vec<WakeRow>,
    pub(crate) fork: String,
    pub(crate) notes: Vec<&'static str>,
    pub(crate) text: String,
}

/// One line per variant: what periodic balancing and the fork/wake path do to the pair.
fn summary_lines(out: &SchedOutcome) -> Vec<SummaryLine> {
    out.summary
        .iter()
        .map(|s| SummaryLine {
            variant: s.variant.as_str(),
            text: format!(
                "periodic balance {}; fork/wake {} (node {})",
                if s.periodic_split {
                    "SPLITS the pair"
                } else {
                    "keeps the pair"
                },
                if s.fork_split { "splits" } else { "keeps" },
                s.fork_final_node
            ),
            split: s.periodic_split || s.fork_split,
        })
        .collect()
}

/// The page's headline: which variants split the pair and which keep it ("upstream splits
/// the pair; p12 and p123 keep it").
fn headline(out: &SchedOutcome) -> String {
    let (split, kept): (Vec<_>, Vec<_>) = out.summary.iter().partition(|s| s.periodic_split || s.fork_split);
    let names = |v: &[&VariantSummary]| {
        let n: Vec<&str> = v.iter().map(|s| s.variant.as_str()).collect();
        match n.len() {
            0 => String::new(),
            1 => n[0].to_string(),
            k => format!("{} and {}", n[..k - 1].join(", "), n[k - 1]),
        }
    };
    match (split.is_empty(), kept.is_empty()) {
        (true, _) => "Every variant keeps the pair on its node".to_string(),
        (false, true) => "Every variant splits the pair".to_string(),
        (false, false) => format!(
            "{} split{} the pair; {} keep{} it",
            names(&split),
            if split.len() == 1 { "s" } else { "" },
            names(&kept),
            if kept.len() == 1 { "s" } else { "" }
        ),
    }
}

/// One variant's decision at one level of one idle node: the path, the numbers, the move.
fn decision_cell(var: ImbalanceVariant, r: &LbResult, variant: ImbalanceVariant) -> DecisionCell {
    DecisionCell {
        variant: var.as_str(),
        path: r.path.as_str(),
        numbers: format!(
            "raw {} · allowance {} · adjusted {} · imbalance {}",
            r.imbalance_raw,
            r.allowance.map_or("-".into(), |a| a.to_string()),
            r.imbalance_adjusted,
            r.imbalance
        ),
        outcome: if r.moved {
            format!(
                "pulls from CPU {} (node {}){}{}",
                r.src_cpu.map_or("-".into(), |c| c.to_string()),
                r.src_node.map_or("-".into(), |c| c.to_string()),
                if r.active_balance == Some(true) {
                    ", active balance"
                } else {
                    ""
                },
                if r.split { ": SPLITS the pair" } else { "" }
            )
        } else if r.no_src_rq {
            "no source CPU".into()
        } else {
            "no move".into()
        },
        split: r.split,
        selected: var == variant,
    }
}

/// The periodic-balance table: each idle node pulling at each NUMA level, every variant's
/// decision side by side.
fn decision_rows(out: &SchedOutcome, variant: ImbalanceVariant) -> Vec<DecisionRow> {
    let mut rows = Vec::new();
    let Some(first) = out.variants.first() else {
        return rows;
    };
    for (ni, pn) in first.periodic.iter().enumerate() {
        for (li, l) in pn.levels.iter().enumerate() {
            let cells = out
                .variants
                .iter()
                .filter_map(|v| {
                    v.periodic
                        .get(ni)
                        .and_then(|p| p.levels.get(li))
                        .map(|vl| (v.variant, vl))
                })
                .map(|(var, vl)| decision_cell(var, &vl.result, variant))
                .collect();
            rows.push(DecisionRow {
                dst_node: pn.dst_node,
                dst_cpu: l.dst_cpu,
                level: l.level,
                distance: l.distance,
                local: l.groups.first().map(group_counts).unwrap_or_default(),
                busiest: l
                    .busiest_group
                    .and_then(|b| l.groups.get(b))
                    .map_or_else(|| "none".into(), group_counts),
                cells,
            });
        }
    }
    rows
}

/// The wake/fork walk of the chosen variant, level by level.
fn wake_rows(v: &VariantOutcome) -> Vec<WakeRow> {
    v.wake_levels
        .iter()
        .map(|w| WakeRow {
            level: w.level,
            distance: w.distance,
            fork: w.balance_fork,
            choice: w.choice.as_str(),
            path: w.path.as_str(),
            numbers: format!(
                "imbalance {} · allowance {} · imb_numa_nr {}",
                w.imbalance.map_or("-".into(), |x| x.to_string()),
                w.allowance.map_or("-".into(), |x| x.to_string()),
                w.imb_numa_nr.map_or("-".into(), |x| x.to_string())
            ),
        })
        .collect()
}

/// Where the fork walk of the chosen variant puts the new task.
fn fork_line(v: &VariantOutcome) -> String {
    let f = &v.fork_placement;
    format!(
        "fork walk ({} step{}): the new task lands on CPU {} (node {}){}",
        f.steps.len(),
        if f.steps.len() == 1 { "" } else { "s" },
        f.final_cpu,
        f.final_node,
        if f.split {
            ": SPLITS the pair"
        } else {
            ", with the pair"
        }
    )
}

impl SchedView {
    pub fn new(shown: &SchedShown, variant: ImbalanceVariant, origin: &str) -> SchedView {
        let (run, sc) = (&shown.run, &shown.scenario);
        let (presets, inline) = preset_choices(&sc.spec.topology);
        let out = &run.outcome;
        let chosen = out.variants.iter().find(|v| v.variant == variant);
        let mut noise_choices: Vec<u32> = NOISE_CHOICES.to_vec();
        if !noise_choices.contains(&sc.spec.noise) {
            noise_choices.push(sc.spec.noise);
        }
        SchedView {
            title: format!("sched NUMA · {}", sc.topology.name()),
            headline: headline(out),
            seed: seed_of(&SeedTarget::Sched(sc.spec.clone())),
            permalink: shown.permalink.clone(),
            topology_summary: format!("{}: {}", sc.topology.name(), sc.topology.summary()),
            presets,
            inline,
            pair_node: sc.spec.pair_node,
            nodes: (0..sc.topology.nr_node_ids()).collect(),
            noise: sc.spec.noise,
            noise_choices,
            reclaim: sc.spec.node_reclaim_distance,
            variant: variant.as_str(),
            variants: ImbalanceVariant::ALL.iter().map(|v| v.as_str()).collect(),
            summary: summary_lines(out),
            distance_svg: pics::sched_distance_heatmap(&run.input.node_distance, &out.topology.distances),
            levels: out
                .topology
                .distances
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            ladders: out
                .topology
                .nodes
                .iter()
                .map(|n| (n.node, pics::sched_ladder(&out.topology, n)))
                .collect(),
            rows: decision_rows(out, variant),
            wake: chosen.map(wake_rows).unwrap_or_default(),
            fork: chosen.map(fork_line).unwrap_or_default(),
            notes: INTERPRETATION_NOTES.to_vec(),
            text: shown.text_report(origin),
        }
    }
}
