//! The MANA page (`/mana`, `/m/{permalink}` + `/text`, `/json`) as data.
//!
//! Its spec ([`ManaSpec`], in `scenario::mana`) travels in the permalink exactly as scenario
//! specs do (`v1.` + deflated JSON, a preset by name, an edited topology inline). A query
//! builds a spec from a base (`from`: this page's own permalink, `s`: a scenario permalink
//! whose machine to use, or `preset`) and the form fields. Which driver version to detail is a
//! query parameter, never part of the spec. [`ManaShown::new`] resolves and runs through
//! `scenario::mana` (as `irqscope mana` does); [`ManaView::new`] is the page.

use super::seeds::{seed_of, SeedFigure, SeedTarget};
use super::{bad, encode_link, given, given_number, list, preset_choices, MachineQuery, ViewError};
use crate::catalogue;
use crate::kernel::mana::{self, DriverVersion, ManaOutcome, SetupStep};
use crate::render::json_mana_sched::mana_view;
use crate::render::mana_sched::mana_twin;
use crate::render::svg_mana_sched as pics;
use crate::scenario::mana::{parse_count_list, ManaRun, ManaScenario, ManaSpec, MANA_DEFAULT_PRESET};
use crate::topology::format_cpulist;
use serde::Deserialize;

/// `/mana?preset=…&node=…&mode=…&max_msix=…&load=0,1,1,1&irqaffinity=0&driver=patched`.
#[derive(Debug, Default, Deserialize)]
pub struct ManaQuery {
    #[serde(flatten)]
    pub machine: MachineQuery,
    pub node: Option<String>,
    pub mode: Option<String>,
    pub max_msix: Option<String>,
    pub load: Option<String>,
    pub irqaffinity: Option<String>,
    /// View: which driver version the load bars, focus grid and step log show.
    pub driver: Option<String>,
}

impl ManaQuery {
    pub fn spec(&self) -> Result<ManaSpec, ViewError> {
        let (base, topology) = self.machine.base::<ManaSpec>(|b| &b.topology, MANA_DEFAULT_PRESET)?;
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
        if let Some(n) = given(&self.node) {
            spec.device_node = n
                .parse()
                .map_err(|_| bad(format!("node {n:?} is not a number (-1 for none)")))?;
        }
        if let Some(m) = given(&self.mode) {
            spec.mode = m.to_string();
        }
        if let Some(n) = given_number(&self.max_msix, "max_msix")? {
            spec.max_msix = n;
        }
        if let Some(l) = &self.load {
            spec.load = if l.trim().is_empty() {
                None
            } else {
                Some(parse_count_list(l, "load")?)
            };
        }
        if let Some(a) = &self.irqaffinity {
            spec.irqaffinity = Some(a.trim().to_string()).filter(|a| !a.is_empty());
        }
        Ok(spec)
    }
}

pub fn parse_driver(name: Option<&str>) -> Result<DriverVersion, ViewError> {
    match name {
        None | Some("") | Some("unpatched") => Ok(DriverVersion::Unpatched),
        Some("patched") => Ok(DriverVersion::Patched),
        Some(other) => Err(bad(format!("unknown driver version {other:?} (unpatched or patched)"))),
    }
}

/// The view part of a `/m/…` query: which driver version to detail.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ManaDetail {
    pub(crate) driver: Option<String>,
}

shown_run!(
    /// A MANA spec resolved and run, with its permalink: what every `/m/` response shows.
    ManaShown,
    ManaScenario,
    ManaRun,
    ManaSpec,
    mana_twin,
    "m"
);

impl ManaShown {
    /// The JSON twin (`/m/{p}/json`, `irqscope mana --format json`).
    pub fn json(&self) -> serde_json::Value {
        mana_view(&self.permalink, &self.scenario.spec, &self.run)
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

pub(crate) struct StepRow {
    pub(crate) n: usize,
    pub(crate) kind: &'static str,
    pub(crate) text: String,
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
    pub(crate) headline: String,
    pub(crate) effective: String,
    pub(crate) queues: String,
    pub imbalance: u32,
    pub(crate) grid_svg: String,
    pub(crate) queue_svg: String,
}

/// The MANA page.
pub struct ManaView {
    pub(crate) title: String,
    /// Both driver versions' queue IRQs per CPU and their imbalance, in one line.
    pub(crate) headline: String,
    /// The seed figure this page is, when it is one.
    pub(crate) seed: Option<&'static SeedFigure>,
    pub permalink: String,
    pub(crate) topology_summary: String,
    pub(crate) presets: Vec<(&'static str, bool)>,
    pub(crate) inline: bool,
    pub(crate) device_node: String,
    pub(crate) nodes: Vec<i64>,
    pub(crate) mode: String,
    pub(crate) max_msix: u32,
    pub(crate) load: String,
    pub(crate) irqaffinity: String,
    pub(crate) driver: &'static str,
    pub sides: Vec<ManaSide>,
    pub(crate) focus_grid_svg: String,
    pub(crate) load_svg: String,
    pub(crate) steps: Vec<StepRow>,
    pub(crate) load_before: String,
    pub(crate) text: String,
}

/// One driver version's column: its headline, effective CPUs, queue IRQs per CPU and their
/// imbalance, its grid and its queue bars.
fn mana_side(input: &mana::ManaInput, o: &ManaOutcome) -> ManaSide {
    let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(" ");
    ManaSide {
        version: o.version.as_str(),
        headline: format!(
            "{} IRQs (HWC + {} queues), {} spread{}",
            o.num_msix_usable,
            o.queue_irq_count,
            o.setup_fn.as_str(),
            if o.skip_first_cpu { ", first core skipped" } else { "" }
        ),
        effective: list(&o.effective_cpus),
        queues: list(&o.queue_irqs_per_cpu),
        imbalance: pics::queue_imbalance(input, o),
        grid_svg: pics::mana_grid(input, o, &format!("grid-{}", o.version.as_str()), o.version.as_str()),
        queue_svg: pics::mana_queue_bars(input, o, &format!("queues-{}", o.version.as_str()), o.version.as_str()),
    }
}

impl ManaView {
    pub fn new(shown: &ManaShown, driver: DriverVersion, origin: &str) -> ManaView {
        let (run, s) = (&shown.run, &shown.scenario);
        let (presets, inline) = preset_choices(&s.spec.topology);
        let focus = run.outcome(driver);
        let sides = vec![
            mana_side(&run.input, &run.unpatched),
            mana_side(&run.input, &run.patched),
        ];
        let headline = sides
            .iter()
            .map(|x| {
                format!(
                    "{}: queue IRQs per CPU {}, imbalance {}",
                    x.version, x.queues, x.imbalance
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        ManaView {
            title: format!("MANA · {}", s.topology.name()),
            headline,
            seed: seed_of(&SeedTarget::Mana(s.spec.clone())),
            permalink: shown.permalink.clone(),
            topology_summary: format!("{}: {}", s.topology.name(), s.topology.summary()),
            presets,
            inline,
            device_node: s.spec.device_node.to_string(),
            nodes: std::iter::once(-1)
                .chain(s.topology.nodes_with_cpus().map(i64::from))
                .collect(),
            mode: s.spec.mode.clone(),
            max_msix: s.spec.max_msix,
            load: s.spec.load.as_deref().map(list).unwrap_or_default(),
            irqaffinity: s.spec.irqaffinity.clone().unwrap_or_default(),
            driver: driver.as_str(),
            sides,
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
            text: shown.text_report(origin),
        }
    }
}
