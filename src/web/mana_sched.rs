//! The MANA page (`/mana`, `/m/{permalink}` + `/text`, `/json`) and the sched NUMA page
//! (`/sched`, `/n/{permalink}` + `/text`, `/json`).
//!
//! Each page has a spec ([`ManaSpec`], [`SchedSpec`]) that travels in its permalink exactly as
//! scenario specs do (`v1.` + deflated JSON, a preset by name, an edited topology inline). A
//! query builds a spec from a base (`from`: this page's own permalink, `s`: a scenario
//! permalink whose machine to use, or `preset`) and the form fields. View choices (which driver
//! version or variant to detail) are query parameters, never part of the spec.

use super::{origin, permalink, text, AppError};
use crate::catalogue;
use crate::golden::mana_sched as wire;
use crate::kernel::mana::{self, DriverVersion, ManaInput, ManaOutcome, SetupStep};
use crate::kernel::sched_numa::{self, SchedInput, SchedOutcome, Variant, INTERPRETATION_NOTES};
use crate::render::mana_sched::{mana_report, sched_report};
use crate::render::svg_mana_sched as pics;
use crate::scenario::spec::{parse_msix_mode, shell_word, ScenarioSpec, TopologyRef};
use crate::topology::{format_cpulist, parse_cpulist, Topology};
use askama::Template;
use axum::extract::{Path, Query};
use axum::http::HeaderMap;
use axum::response::{Html, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The preset the MANA page opens with (seed 001's VM).
pub const MANA_DEFAULT_PRESET: &str = "azure-4vcpu-smt2";
/// The preset the sched page opens with (seed 003's machine) and its pair node.
pub const SCHED_DEFAULT_PRESET: &str = "arm64-4node-diameter3";
pub const SCHED_DEFAULT_PAIR_NODE: u32 = 1;
/// Longest `load` or `irqaffinity` text accepted in a query.
pub const QUERY_LIST_BYTES_MAX: usize = 65_536;
/// Noise choices the sched page offers (the spec's 0-3 slider).
pub const NOISE_CHOICES: [u32; 4] = [0, 1, 2, 3];

fn bad(m: impl Into<String>) -> AppError {
    AppError::BadInput(m.into())
}

fn resolve_topology(t: &TopologyRef) -> Result<Arc<Topology>, AppError> {
    match t {
        TopologyRef::Preset(name) => {
            catalogue::get(name).ok_or_else(|| bad(format!("unknown topology preset {name:?}")))
        }
        TopologyRef::Inline(spec) => Ok(Arc::new(
            Topology::new(spec).map_err(|e| bad(format!("topology: {e}")))?,
        )),
    }
}

fn topology_label(t: &TopologyRef) -> String {
    match t {
        TopologyRef::Preset(name) => name.clone(),
        TopologyRef::Inline(_) => "topology.toml".into(),
    }
}

/// The machine a query names: `preset` (non-empty) first, then a scenario permalink `s`, then
/// `base` (the page's own spec), then `default`.
fn query_topology(
    preset: &Option<String>,
    s: &Option<String>,
    base: Option<&TopologyRef>,
    default: &str,
) -> Result<TopologyRef, AppError> {
    if let Some(p) = preset.as_deref().filter(|p| !p.is_empty()) {
        return Ok(TopologyRef::Preset(p.to_string()));
    }
    if let Some(link) = s.as_deref().filter(|l| !l.is_empty()) {
        return Ok(permalink::decode::<ScenarioSpec>(link)?.topology);
    }
    Ok(base
        .cloned()
        .unwrap_or_else(|| TopologyRef::Preset(default.to_string())))
}

fn preset_choices(t: &TopologyRef) -> (Vec<(&'static str, bool)>, bool) {
    let current = match t {
        TopologyRef::Preset(p) => Some(p.as_str()),
        TopologyRef::Inline(_) => None,
    };
    (
        catalogue::names().map(|n| (n, Some(n) == current)).collect(),
        current.is_none(),
    )
}

fn list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

fn parse_list(text: &str, what: &str) -> Result<Vec<u32>, AppError> {
    if text.len() > QUERY_LIST_BYTES_MAX {
        return Err(bad(format!("{what}: longer than {QUERY_LIST_BYTES_MAX} bytes")));
    }
    text.split(',')
        .map(|v| {
            v.trim()
                .parse::<u32>()
                .map_err(|_| bad(format!("{what}: {v:?} is not a number (want e.g. 0,1,1,1)")))
        })
        .collect()
}

// ---------------------------------------------------------------------------
// MANA

/// The MANA page's input as data (what `/m/{permalink}` carries).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManaSpec {
    pub topology: TopologyRef,
    /// NUMA node of the device; -1 for none.
    #[serde(default)]
    pub device_node: i32,
    /// `dynamic` or `static` MSI-X.
    #[serde(default = "dynamic")]
    pub mode: String,
    #[serde(default = "max_msix_default")]
    pub max_msix: u32,
    /// Vectors other devices hold on each CPU before MANA probes (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<Vec<u32>>,
    /// The `irqaffinity=` boot option as a cpulist (absent: all CPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irqaffinity: Option<String>,
}

fn dynamic() -> String {
    "dynamic".into()
}
fn max_msix_default() -> u32 {
    64
}

impl ManaSpec {
    pub fn seed() -> ManaSpec {
        ManaSpec {
            topology: TopologyRef::Preset(MANA_DEFAULT_PRESET.into()),
            device_node: 0,
            mode: dynamic(),
            max_msix: max_msix_default(),
            load: Some(vec![0, 1, 1, 1]),
            irqaffinity: None,
        }
    }
}

/// `/mana?preset=…&node=…&mode=…&max_msix=…&load=0,1,1,1&irqaffinity=0&driver=patched`.
#[derive(Debug, Default, Deserialize)]
pub struct ManaQuery {
    /// This page's own permalink, the base the fields change.
    pub from: Option<String>,
    /// A scenario permalink whose machine (edited or preset) to use.
    pub s: Option<String>,
    pub preset: Option<String>,
    pub node: Option<String>,
    pub mode: Option<String>,
    pub max_msix: Option<String>,
    pub load: Option<String>,
    pub irqaffinity: Option<String>,
    /// View: which driver version the load bars, focus grid and step log show.
    pub driver: Option<String>,
}

impl ManaQuery {
    pub fn spec(&self) -> Result<ManaSpec, AppError> {
        let base = match self.from.as_deref().filter(|l| !l.is_empty()) {
            Some(link) => Some(permalink::decode::<ManaSpec>(link)?),
            None => None,
        };
        let topology = query_topology(
            &self.preset,
            &self.s,
            base.as_ref().map(|b| &b.topology),
            MANA_DEFAULT_PRESET,
        )?;
        let machine_changed = base.as_ref().is_some_and(|b| b.topology != topology);
        let mut spec = base.unwrap_or(ManaSpec {
            load: None,
            ..ManaSpec::seed()
        });
        if machine_changed {
            spec.load = None;
            spec.irqaffinity = None;
        }
        spec.topology = topology;
        if let Some(n) = self.node.as_deref().filter(|v| !v.is_empty()) {
            spec.device_node = n
                .trim()
                .parse()
                .map_err(|_| bad(format!("node {n:?} is not a number (-1 for none)")))?;
        }
        if let Some(m) = self.mode.as_deref().filter(|v| !v.is_empty()) {
            spec.mode = m.to_string();
        }
        if let Some(m) = self.max_msix.as_deref().filter(|v| !v.is_empty()) {
            spec.max_msix = m
                .trim()
                .parse()
                .map_err(|_| bad(format!("max_msix {m:?} is not a number")))?;
        }
        if let Some(l) = &self.load {
            spec.load = if l.trim().is_empty() {
                None
            } else {
                Some(parse_list(l, "load")?)
            };
        }
        if let Some(a) = &self.irqaffinity {
            spec.irqaffinity = Some(a.trim().to_string()).filter(|a| !a.is_empty());
        }
        Ok(spec)
    }
}

fn parse_driver(name: Option<&str>) -> Result<DriverVersion, AppError> {
    match name {
        None | Some("") | Some("unpatched") => Ok(DriverVersion::Unpatched),
        Some("patched") => Ok(DriverVersion::Patched),
        Some(other) => Err(bad(format!("unknown driver version {other:?} (unpatched or patched)"))),
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct ManaView {
    pub driver: Option<String>,
}

/// A MANA spec run once: both driver versions.
pub struct ManaRun {
    pub spec: ManaSpec,
    pub topology: Arc<Topology>,
    pub input: ManaInput,
    pub unpatched: ManaOutcome,
    pub patched: ManaOutcome,
    pub permalink: String,
}

impl ManaRun {
    pub fn new(spec: ManaSpec) -> Result<ManaRun, AppError> {
        let topology = resolve_topology(&spec.topology)?;
        let n = topology.nr_cpu_ids();
        let mode = parse_msix_mode(&spec.mode).map_err(|e| bad(e.0))?;
        let load = spec.load.clone().unwrap_or_else(|| vec![0; n as usize]);
        let mut input = crate::scenario::mana_input(&topology, None, mode, spec.max_msix, load);
        input.device_node = spec.device_node;
        if let Some(text) = &spec.irqaffinity {
            if text.len() > QUERY_LIST_BYTES_MAX {
                return Err(bad(format!("irqaffinity: longer than {QUERY_LIST_BYTES_MAX} bytes")));
            }
            let set = parse_cpulist(text, n).map_err(|e| bad(format!("irqaffinity {text:?}: {e}")))?;
            input.default_affinity = Some(set.iter().collect());
        }
        let (unpatched, patched) = mana::run_both(&input).map_err(|e| bad(format!("MANA: {e}")))?;
        let permalink = permalink::encode(&spec).map_err(|e| AppError::Internal(e.to_string()))?;
        Ok(ManaRun {
            spec,
            topology,
            input,
            unpatched,
            patched,
            permalink,
        })
    }

    pub fn outcome(&self, v: DriverVersion) -> &ManaOutcome {
        match v {
            DriverVersion::Unpatched => &self.unpatched,
            DriverVersion::Patched => &self.patched,
        }
    }

    /// The `irqscope mana …` line that reproduces this run.
    pub fn command(&self) -> String {
        let mut w = vec![
            "irqscope".to_string(),
            "mana".into(),
            shell_word(&topology_label(&self.spec.topology)),
        ];
        w.push(format!("--device-node {}", self.spec.device_node));
        w.push(format!("--mode {}", self.spec.mode));
        w.push(format!("--max-msix {}", self.spec.max_msix));
        if let Some(l) = &self.spec.load {
            w.push(format!("--load {}", list(l)));
        }
        if let Some(a) = &self.spec.irqaffinity {
            w.push(format!("--irqaffinity {}", shell_word(a)));
        }
        w.join(" ")
    }

    pub fn text_report(&self, origin: &str) -> String {
        format!(
            "  $ {}\n  {origin}/m/{}\n\n{}",
            self.command(),
            self.permalink,
            mana_report(&self.input, &self.unpatched, &self.patched)
        )
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "permalink": self.permalink,
            "spec": self.spec,
            "unpatched": wire::mana_outcome_json(&self.unpatched),
            "patched": wire::mana_outcome_json(&self.patched),
        })
    }
}

fn irq_name(index: u32) -> String {
    if index == 0 {
        "HWC".into()
    } else {
        format!("q{index}")
    }
}

fn mask_text(m: &[u32]) -> String {
    format_cpulist(&m.iter().copied().collect())
}

pub struct StepRow {
    pub n: usize,
    pub kind: &'static str,
    pub text: String,
}

fn step_rows(o: &ManaOutcome) -> Vec<StepRow> {
    o.steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (kind, text) = match s {
                SetupStep::Activate {
                    index,
                    searched,
                    cpu,
                    load_after,
                    ..
                } => (
                    "activate",
                    format!(
                        "{} requested: vector on CPU {cpu} (best of {}), CPU {cpu} now holds {load_after}",
                        irq_name(*index),
                        match searched {
                            mana::ActivationSet::NodeAndDefault => "device node ∩ default mask",
                            mana::ActivationSet::Node => "device node",
                            mana::ActivationSet::Default => "default mask",
                            mana::ActivationSet::AllOnline => "all online CPUs",
                        }
                    ),
                ),
                SetupStep::Spread {
                    setup_fn,
                    first_index,
                    len,
                    skip_first_cpu,
                    skipped_core,
                } => (
                    "spread",
                    format!(
                        "{} spread over {} IRQ{} from {}{}",
                        setup_fn.as_str(),
                        len,
                        if *len == 1 { "" } else { "s" },
                        irq_name(*first_index),
                        match (skip_first_cpu, skipped_core) {
                            (true, Some(c)) => format!(", first core {} skipped", mask_text(c)),
                            (true, None) => ", skip_first_cpu".into(),
                            _ => String::new(),
                        }
                    ),
                ),
                SetupStep::SetAffinity {
                    index,
                    mask,
                    from_cpu,
                    action,
                    ..
                } => match action {
                    mana::AffinityAction::Kept => (
                        "keep",
                        format!(
                            "{} mask {}: CPU {from_cpu} is in it, stays",
                            irq_name(*index),
                            mask_text(mask)
                        ),
                    ),
                    mana::AffinityAction::Moved { to_cpu, old_vector } => (
                        "move",
                        format!(
                            "{} mask {}: CPU {from_cpu} is not in it, moves to CPU {to_cpu} (old vector {})",
                            irq_name(*index),
                            mask_text(mask),
                            match old_vector {
                                mana::OldVector::Freed => "freed",
                                mana::OldVector::LeftBehind => "left behind",
                            }
                        ),
                    ),
                },
            };
            StepRow { n: i + 1, kind, text }
        })
        .collect()
}

pub struct ManaSide {
    pub version: &'static str,
    pub headline: String,
    pub effective: String,
    pub queues: String,
    pub imbalance: u32,
    pub grid_svg: String,
    pub queue_svg: String,
}

#[derive(Template)]
#[template(path = "mana/page.html")]
pub struct ManaPage {
    pub title: String,
    pub permalink: String,
    pub topology_summary: String,
    pub presets: Vec<(&'static str, bool)>,
    pub inline: bool,
    pub device_node: String,
    pub nodes: Vec<i64>,
    pub mode: String,
    pub max_msix: u32,
    pub load: String,
    pub irqaffinity: String,
    pub driver: &'static str,
    pub sides: Vec<ManaSide>,
    pub focus_grid_svg: String,
    pub load_svg: String,
    pub steps: Vec<StepRow>,
    pub load_before: String,
    pub text: String,
}

impl ManaPage {
    pub fn new(run: &ManaRun, driver: DriverVersion, origin: &str) -> ManaPage {
        let (presets, inline) = preset_choices(&run.spec.topology);
        let side = |o: &ManaOutcome| ManaSide {
            version: o.version.as_str(),
            headline: format!(
                "{} IRQs (HWC + {} queues), {} spread{}",
                o.num_msix_usable,
                o.queue_irq_count,
                o.setup_fn.as_str(),
                if o.skip_first_cpu { ", first core skipped" } else { "" }
            ),
            effective: o
                .effective_cpus
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(" "),
            queues: o
                .queue_irqs_per_cpu
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(" "),
            imbalance: pics::queue_imbalance(&run.input, o),
            grid_svg: pics::mana_grid(
                &run.input,
                o,
                &format!("grid-{}", o.version.as_str()),
                o.version.as_str(),
            ),
            queue_svg: pics::mana_queue_bars(
                &run.input,
                o,
                &format!("queues-{}", o.version.as_str()),
                o.version.as_str(),
            ),
        };
        let focus = run.outcome(driver);
        ManaPage {
            title: format!("MANA · {}", run.topology.name()),
            permalink: run.permalink.clone(),
            topology_summary: format!("{}: {}", run.topology.name(), run.topology.summary()),
            presets,
            inline,
            device_node: run.spec.device_node.to_string(),
            nodes: std::iter::once(-1)
                .chain(run.topology.nodes_with_cpus().map(i64::from))
                .collect(),
            mode: run.spec.mode.clone(),
            max_msix: run.spec.max_msix,
            load: run.spec.load.as_deref().map(list).unwrap_or_default(),
            irqaffinity: run.spec.irqaffinity.clone().unwrap_or_default(),
            driver: driver.as_str(),
            sides: vec![side(&run.unpatched), side(&run.patched)],
            focus_grid_svg: pics::mana_grid(
                &run.input,
                focus,
                "grid-focus",
                &format!("{} (detail)", focus.version.as_str()),
            ),
            load_svg: pics::mana_load_bars(&run.input, focus, "load-focus"),
            steps: step_rows(focus),
            load_before: run
                .input
                .initial_vector_load
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(" "),
            text: run.text_report(origin),
        }
    }
}

pub async fn mana_query(Query(q): Query<ManaQuery>, headers: HeaderMap) -> Result<Html<String>, AppError> {
    let run = ManaRun::new(q.spec()?)?;
    Ok(Html(
        ManaPage::new(&run, parse_driver(q.driver.as_deref())?, &origin(&headers)).render()?,
    ))
}

pub async fn mana_page(
    Path(link): Path<String>,
    Query(v): Query<ManaView>,
    headers: HeaderMap,
) -> Result<Html<String>, AppError> {
    let run = ManaRun::new(permalink::decode::<ManaSpec>(&link)?)?;
    Ok(Html(
        ManaPage::new(&run, parse_driver(v.driver.as_deref())?, &origin(&headers)).render()?,
    ))
}

pub async fn mana_text(Path(link): Path<String>, headers: HeaderMap) -> Result<Response, AppError> {
    let run = ManaRun::new(permalink::decode::<ManaSpec>(&link)?)?;
    Ok(text(run.text_report(&origin(&headers))))
}

pub async fn mana_json(Path(link): Path<String>) -> Result<Json<serde_json::Value>, AppError> {
    let run = ManaRun::new(permalink::decode::<ManaSpec>(&link)?)?;
    Ok(Json(run.json()))
}

// ---------------------------------------------------------------------------
// sched

/// The sched page's input as data (what `/n/{permalink}` carries).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedSpec {
    pub topology: TopologyRef,
    /// Node running the communicating pair (on its two lowest CPUs).
    #[serde(default = "pair_node_default")]
    pub pair_node: u32,
    /// Extra runnable tasks on otherwise idle CPUs of the pair's node.
    #[serde(default)]
    pub noise: u32,
    #[serde(default = "reclaim_default")]
    pub node_reclaim_distance: u32,
}

fn pair_node_default() -> u32 {
    SCHED_DEFAULT_PAIR_NODE
}
fn reclaim_default() -> u32 {
    sched_numa::DEFAULT_NODE_RECLAIM_DISTANCE
}

impl SchedSpec {
    pub fn seed() -> SchedSpec {
        SchedSpec {
            topology: TopologyRef::Preset(SCHED_DEFAULT_PRESET.into()),
            pair_node: SCHED_DEFAULT_PAIR_NODE,
            noise: 0,
            node_reclaim_distance: reclaim_default(),
        }
    }
}

/// `/sched?preset=…&pair_node=1&noise=0&reclaim=30&variant=p12`.
#[derive(Debug, Default, Deserialize)]
pub struct SchedQuery {
    pub from: Option<String>,
    pub s: Option<String>,
    pub preset: Option<String>,
    pub pair_node: Option<String>,
    pub noise: Option<String>,
    pub reclaim: Option<String>,
    /// View: the variant whose column is highlighted and whose wake/fork walk is shown.
    pub variant: Option<String>,
}

impl SchedQuery {
    pub fn spec(&self) -> Result<SchedSpec, AppError> {
        let base = match self.from.as_deref().filter(|l| !l.is_empty()) {
            Some(link) => Some(permalink::decode::<SchedSpec>(link)?),
            None => None,
        };
        let topology = query_topology(
            &self.preset,
            &self.s,
            base.as_ref().map(|b| &b.topology),
            SCHED_DEFAULT_PRESET,
        )?;
        let mut spec = base.unwrap_or_else(SchedSpec::seed);
        spec.topology = topology;
        let num = |v: &Option<String>, what: &str| -> Result<Option<u32>, AppError> {
            match v.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
                None => Ok(None),
                Some(t) => t
                    .parse()
                    .map(Some)
                    .map_err(|_| bad(format!("{what} {t:?} is not a number"))),
            }
        };
        if let Some(n) = num(&self.pair_node, "pair_node")? {
            spec.pair_node = n;
        }
        if let Some(n) = num(&self.noise, "noise")? {
            spec.noise = n;
        }
        if let Some(n) = num(&self.reclaim, "reclaim")? {
            spec.node_reclaim_distance = n;
        }
        Ok(spec)
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct SchedView {
    pub variant: Option<String>,
}

fn parse_variant(name: Option<&str>) -> Result<Variant, AppError> {
    match name {
        None | Some("") => Ok(Variant::Upstream),
        Some(n) => Variant::ALL.into_iter().find(|v| v.as_str() == n).ok_or_else(|| {
            let known: Vec<&str> = Variant::ALL.iter().map(|v| v.as_str()).collect();
            bad(format!("unknown sched variant {n:?} (known: {})", known.join(", ")))
        }),
    }
}

/// The model's input for a machine: CPUs must be numbered node by node; the pair runs on the
/// two lowest CPUs of `pair_node`, each noise task on the next idle CPU of that node.
pub fn sched_input(t: &Topology, spec: &SchedSpec) -> Result<SchedInput, String> {
    let nn = t.nr_node_ids();
    if t.possible().weight() != t.nr_cpu_ids() {
        return Err(format!(
            "the sched model needs every CPU id 0..{} to exist (no sparse ids)",
            t.nr_cpu_ids()
        ));
    }
    let mut next = 0;
    for node in 0..nn {
        let cpus = t.node_cpus(node);
        if cpus.first() != Some(next) || cpus.last() != Some(next + cpus.weight() - 1) {
            return Err(format!(
                "the sched model needs CPUs numbered node by node (node {node} is {cpus})"
            ));
        }
        next += cpus.weight();
    }
    if spec.pair_node >= nn {
        return Err(format!("pair node {}: the machine has {nn} node(s)", spec.pair_node));
    }
    let node_cpus: Vec<u32> = t.node_cpus(spec.pair_node).iter().collect();
    if (node_cpus.len() as u64) < 2 + u64::from(spec.noise) {
        return Err(format!(
            "node {} has {} CPUs: too few for the pair and {} noise tasks",
            spec.pair_node,
            node_cpus.len(),
            spec.noise
        ));
    }
    let mut nr_running = vec![0u32; t.nr_cpu_ids() as usize];
    for &cpu in node_cpus.iter().take(2 + spec.noise as usize) {
        nr_running[cpu as usize] = 1;
    }
    Ok(SchedInput {
        node_distance: (0..nn).map(|a| (0..nn).map(|b| t.distance(a, b)).collect()).collect(),
        cpus_per_node: (0..nn).map(|n| t.node_cpus(n).weight()).collect(),
        smt: t.threads_per_core_max(),
        llcs_per_node: 1,
        node_reclaim_distance: spec.node_reclaim_distance,
        nr_running,
        pair_cpus: [node_cpus[0], node_cpus[1]],
    })
}

pub struct SchedRun {
    pub spec: SchedSpec,
    pub topology: Arc<Topology>,
    pub input: SchedInput,
    pub outcome: SchedOutcome,
    pub permalink: String,
}

impl SchedRun {
    pub fn new(spec: SchedSpec) -> Result<SchedRun, AppError> {
        let topology = resolve_topology(&spec.topology)?;
        let input = sched_input(&topology, &spec).map_err(|e| bad(format!("sched: {e}")))?;
        let outcome = sched_numa::run(&input).map_err(|e| bad(format!("sched: {e}")))?;
        let permalink = permalink::encode(&spec).map_err(|e| AppError::Internal(e.to_string()))?;
        Ok(SchedRun {
            spec,
            topology,
            input,
            outcome,
            permalink,
        })
    }

    pub fn command(&self) -> String {
        format!(
            "irqscope sched {} --pair-node {} --noise {} --node-reclaim-distance {}",
            shell_word(&topology_label(&self.spec.topology)),
            self.spec.pair_node,
            self.spec.noise,
            self.spec.node_reclaim_distance
        )
    }

    pub fn text_report(&self, origin: &str) -> String {
        format!(
            "  $ {}\n  {origin}/n/{}\n\n{}",
            self.command(),
            self.permalink,
            sched_report(&self.input, &self.outcome)
        )
    }

    pub fn json(&self) -> serde_json::Value {
        let variants: serde_json::Map<String, serde_json::Value> = self
            .outcome
            .variants
            .iter()
            .map(|v| (v.variant.as_str().to_string(), wire::variant_json(v)))
            .collect();
        let summary: serde_json::Map<String, serde_json::Value> = self
            .outcome
            .summary
            .iter()
            .map(|s| {
                (
                    s.variant.as_str().to_string(),
                    serde_json::json!({"periodic_split": s.periodic_split, "fork_split": s.fork_split, "fork_final_node": s.fork_final_node}),
                )
            })
            .collect();
        serde_json::json!({
            "permalink": self.permalink,
            "spec": self.spec,
            "topology": wire::topology_json(&self.outcome.topology),
            "variants": variants,
            "summary": summary,
            "interpretation_notes": INTERPRETATION_NOTES,
        })
    }
}

fn group_counts(g: &sched_numa::GroupLoad) -> String {
    let nodes: Vec<String> = g.nodes.iter().map(u32::to_string).collect();
    format!(
        "{{{}}} idle {} · busy {} · nr {}",
        nodes.join(","),
        g.idle_cpus,
        g.busy_cpus,
        g.sum_nr_running
    )
}

pub struct DecisionCell {
    pub variant: &'static str,
    pub path: &'static str,
    pub numbers: String,
    pub outcome: String,
    pub split: bool,
    pub selected: bool,
}

pub struct DecisionRow {
    pub dst_node: u32,
    pub dst_cpu: u32,
    pub level: u32,
    pub distance: u32,
    pub local: String,
    pub busiest: String,
    pub cells: Vec<DecisionCell>,
}

pub struct SummaryLine {
    pub variant: &'static str,
    pub text: String,
    pub split: bool,
}

pub struct WakeRow {
    pub level: u32,
    pub distance: u32,
    pub fork: bool,
    pub choice: &'static str,
    pub path: &'static str,
    pub numbers: String,
}

#[derive(Template)]
#[template(path = "sched/page.html")]
pub struct SchedPage {
    pub title: String,
    pub permalink: String,
    pub topology_summary: String,
    pub presets: Vec<(&'static str, bool)>,
    pub inline: bool,
    pub pair_node: u32,
    pub nodes: Vec<u32>,
    pub noise: u32,
    pub noise_choices: Vec<u32>,
    pub reclaim: u32,
    pub variant: &'static str,
    pub variants: Vec<&'static str>,
    pub summary: Vec<SummaryLine>,
    pub distance_svg: String,
    pub levels: String,
    pub ladders: Vec<(u32, String)>,
    pub rows: Vec<DecisionRow>,
    pub wake: Vec<WakeRow>,
    pub fork: String,
    pub notes: Vec<&'static str>,
    pub text: String,
}

impl SchedPage {
    pub fn new(run: &SchedRun, variant: Variant, origin: &str) -> SchedPage {
        let (presets, inline) = preset_choices(&run.spec.topology);
        let out = &run.outcome;
        let summary = out
            .summary
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
            .collect();
        let mut rows = Vec::new();
        if let Some(first) = out.variants.first() {
            for (ni, pn) in first.periodic.iter().enumerate() {
                for (li, l) in pn.levels.iter().enumerate() {
                    let local = l.groups.first().map(group_counts).unwrap_or_default();
                    let busiest = l
                        .busiest_group
                        .and_then(|b| l.groups.get(b))
                        .map_or_else(|| "none".into(), group_counts);
                    let cells = out
                        .variants
                        .iter()
                        .filter_map(|v| {
                            v.periodic
                                .get(ni)
                                .and_then(|p| p.levels.get(li))
                                .map(|vl| (v.variant, vl))
                        })
                        .map(|(var, vl)| {
                            let r = &vl.result;
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
                        })
                        .collect();
                    rows.push(DecisionRow {
                        dst_node: pn.dst_node,
                        dst_cpu: l.dst_cpu,
                        level: l.level,
                        distance: l.distance,
                        local,
                        busiest,
                        cells,
                    });
                }
            }
        }
        let chosen = out.variants.iter().find(|v| v.variant == variant);
        let wake = chosen
            .map(|v| {
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
            })
            .unwrap_or_default();
        let fork = chosen
            .map(|v| {
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
            })
            .unwrap_or_default();
        let mut noise_choices: Vec<u32> = NOISE_CHOICES.to_vec();
        if !noise_choices.contains(&run.spec.noise) {
            noise_choices.push(run.spec.noise);
        }
        SchedPage {
            title: format!("sched NUMA · {}", run.topology.name()),
            permalink: run.permalink.clone(),
            topology_summary: format!("{}: {}", run.topology.name(), run.topology.summary()),
            presets,
            inline,
            pair_node: run.spec.pair_node,
            nodes: (0..run.topology.nr_node_ids()).collect(),
            noise: run.spec.noise,
            noise_choices,
            reclaim: run.spec.node_reclaim_distance,
            variant: variant.as_str(),
            variants: Variant::ALL.iter().map(|v| v.as_str()).collect(),
            summary,
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
            rows,
            wake,
            fork,
            notes: INTERPRETATION_NOTES.to_vec(),
            text: run.text_report(origin),
        }
    }
}

pub async fn sched_query(Query(q): Query<SchedQuery>, headers: HeaderMap) -> Result<Html<String>, AppError> {
    let run = SchedRun::new(q.spec()?)?;
    Ok(Html(
        SchedPage::new(&run, parse_variant(q.variant.as_deref())?, &origin(&headers)).render()?,
    ))
}

pub async fn sched_page(
    Path(link): Path<String>,
    Query(v): Query<SchedView>,
    headers: HeaderMap,
) -> Result<Html<String>, AppError> {
    let run = SchedRun::new(permalink::decode::<SchedSpec>(&link)?)?;
    Ok(Html(
        SchedPage::new(&run, parse_variant(v.variant.as_deref())?, &origin(&headers)).render()?,
    ))
}

pub async fn sched_text(Path(link): Path<String>, headers: HeaderMap) -> Result<Response, AppError> {
    let run = SchedRun::new(permalink::decode::<SchedSpec>(&link)?)?;
    Ok(text(run.text_report(&origin(&headers))))
}

pub async fn sched_json(Path(link): Path<String>) -> Result<Json<serde_json::Value>, AppError> {
    let run = SchedRun::new(permalink::decode::<SchedSpec>(&link)?)?;
    Ok(Json(run.json()))
}
