//! Page structs and the query shapes that build them. Templates only loop and print; anything
//! computed is a field here. Only SVG from `render::svg` is marked safe in templates.

use super::kernel_c::KernelCRegistry;
use super::{parse_metric, AppError};
use crate::metrics::{self, Metrics};
use crate::render::summary;
use crate::render::svg::{self, HeatMetric};
use crate::render::svg_compare::{self, Scale};
use crate::render::text::{self, Side, TextOptions};
use crate::scenario::payloads::{other_variant, side_label, CompareSpec, SideSpec};
use crate::scenario::spec::{self, DeviceSpec, ScenarioSpec, TopologyRef};
use crate::scenario::{self, permalink, Outcome, Scenario};
use crate::topology::{Generator, SmtNumbering, Topology, TopologySpec};
use crate::{catalogue, kernel, render};
use askama::Template;
use serde::{Deserialize, Serialize};

/// Rows of the IRQ × CPU table shown before the rest is left to the JSON twin.
pub(crate) const VECTOR_ROWS_MAX: usize = 1024;
/// The same on machines drawn as an overview (more than `svg::CELLS_UNFOLDED_MAX` CPUs).
pub(crate) const VECTOR_ROWS_BIG_MAX: usize = 128;
/// Devices whose vector rows start open (more than this total vectors: all closed).
pub(crate) const VECTORS_OPEN_MAX: usize = 128;
/// Longest device list accepted in a query string.
pub(crate) const QUERY_DEVICES_BYTES_MAX: usize = 4096;

/// The preset the front page opens with, and its devices (the seed-000 thread's six NVMe disks).
pub(crate) const DEFAULT_PRESET: &str = "azure-l96as-v4";
pub(crate) const DEFAULT_DEVICES: &str = "6x62:pre=1,name=nvme";

/// A validated scenario run once: the spec it came from, its permalink, outcome and metrics.
pub struct Run {
    pub spec: ScenarioSpec,
    pub scenario: Scenario,
    pub outcome: Outcome,
    pub metrics: Metrics,
    pub permalink: String,
    /// Whether the input named the effective-CPU model (a permalink always does); `false` when
    /// the machine's default was taken, which the page then explains.
    pub effective_named: bool,
}

impl Run {
    /// Validate and run, a `c:NAME` variant on the server's built C (`kernel_c`). An inline topology travels as it came (a `[generate]` recipe keeps
    /// links short); one that cannot be written back as given (a recipe that left its cluster
    /// shape to the default) is stored in the explicit form `Topology::to_spec` gives.
    pub fn new(mut spec: ScenarioSpec, kernel_c: &KernelCRegistry) -> Result<Run, AppError> {
        let external = kernel_c.resolve(&spec)?;
        // A c: variant runs the registered build; the link pins it by its sha256.
        if let Some(e) = &external {
            spec.kernel_c = Some(e.0.id().to_string());
        }
        let scenario = spec.resolve_with(catalogue::get, &super::kernel_c::fixed(external))?;
        let outcome = scenario::try_run(&scenario).map_err(|e| AppError::BadInput(e.to_string()))?;
        let metrics = metrics::compute(&scenario, &outcome);
        let permalink = match permalink::encode(&spec) {
            Ok(link) => link,
            Err(_) => {
                spec.topology = TopologyRef::Inline(Box::new(scenario.topology().to_spec()));
                encode_link(&spec)?
            }
        };
        Ok(Run {
            spec,
            scenario,
            outcome,
            metrics,
            permalink,
            effective_named: true,
        })
    }

    /// The machine's preset name, when it is one.
    pub(crate) fn preset(&self) -> Option<&str> {
        match &self.spec.topology {
            TopologyRef::Preset(name) => Some(name),
            TopologyRef::Inline(_) => None,
        }
    }

    pub fn topology_label(&self) -> String {
        topology_label(&self.spec.topology)
    }

    /// The mail-ready report, with the absolute permalink under the command.
    pub(crate) fn text_report(&self, origin: &str) -> String {
        let opts = TextOptions {
            topology_label: self.topology_label(),
            vectors: false,
            permalink: Some(format!("{origin}/s/{}", self.permalink)),
        };
        text::report(&self.scenario, &self.outcome, &self.metrics, &opts)
    }

    pub fn json(&self) -> serde_json::Value {
        let mut v = render::json::outcome_json(&self.scenario, &self.outcome, &self.metrics);
        v["permalink"] = serde_json::Value::String(self.permalink.clone());
        v
    }
}

fn encode_link<T: Serialize>(spec: &T) -> Result<String, AppError> {
    permalink::encode(spec).map_err(|e| AppError::Internal(e.to_string()))
}

fn topology_label(t: &TopologyRef) -> String {
    match t {
        TopologyRef::Preset(name) => name.clone(),
        TopologyRef::Inline(spec) => crate::topology::compact::label(spec),
    }
}

/// How the pictures are drawn: which metric, and zoomed to one node or not.
#[derive(Debug, Clone, Copy)]
pub(crate) struct View {
    pub metric: HeatMetric,
    pub node: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ViewQuery {
    pub metric: Option<String>,
    pub node: Option<String>,
}

impl ViewQuery {
    pub fn parse(&self) -> Result<View, AppError> {
        let node = match self.node.as_deref() {
            None | Some("") | Some("all") => None,
            Some(n) => Some(
                n.parse::<u32>()
                    .map_err(|_| AppError::BadInput(format!("node {n:?} is not a number")))?,
            ),
        };
        Ok(View {
            metric: parse_metric(self.metric.as_deref())?,
            node,
        })
    }
}

/// `/?preset=NAME&devices=TOKENS&variant=…`: a scenario from a preset (or `blank`) and
/// compact device tokens separated by spaces.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct IndexQuery {
    pub preset: Option<String>,
    pub devices: Option<String>,
    pub variant: Option<String>,
    pub sort: Option<String>,
    pub effective: Option<String>,
    pub counter: Option<u32>,
    pub metric: Option<String>,
    pub node: Option<String>,
    /// Probe order of `driver=nvme` devices (`sequential` or `parallel`).
    pub probe: Option<String>,
    /// The kernel release the answer is for (`6.12`): picks the models a field leaves unnamed
    /// (default: the newest release modelled).
    pub kernel: Option<String>,
}

fn blank_topology() -> TopologySpec {
    TopologySpec {
        name: "custom".into(),
        generate: Some(Generator {
            packages: 1,
            nodes_per_package: 1,
            cores_per_node: 4,
            threads_per_core: 2,
            smt_numbering: SmtNumbering::Adjacent,
            clusters: Default::default(),
            core_types: Vec::new(),
            package_cpu_stride: None,
        }),
        ..TopologySpec::default()
    }
}

/// Device tokens separated by whitespace (`%20` in a URL). A `+` in the query reaches here as a
/// `+` (the router keeps it literal in `devices`), so `sets=4+2` stays one device.
pub(crate) fn parse_devices(tokens: &str) -> Result<Vec<DeviceSpec>, AppError> {
    if tokens.len() > QUERY_DEVICES_BYTES_MAX {
        return Err(AppError::BadInput(format!(
            "devices: longer than {QUERY_DEVICES_BYTES_MAX} bytes"
        )));
    }
    Ok(tokens
        .split_whitespace()
        .map(spec::parse_device_token)
        .collect::<Result<Vec<_>, _>>()?)
}

impl IndexQuery {
    pub fn spec(&self) -> Result<ScenarioSpec, AppError> {
        let preset = self.preset.as_deref().unwrap_or(DEFAULT_PRESET);
        let topology = if preset == "blank" {
            TopologyRef::Inline(Box::new(blank_topology()))
        } else {
            TopologyRef::Preset(preset.to_string())
        };
        let devices = match self.devices.as_deref() {
            Some(d) => parse_devices(d)?,
            None if preset == "blank" => parse_devices("4:name=nvme,pre=1")?,
            None => parse_devices(DEFAULT_DEVICES)?,
        };
        let resolved = topology.resolve(crate::catalogue::get);
        let mut spec = ScenarioSpec {
            effective: self
                .effective
                .clone()
                .unwrap_or_else(|| spec::effective_default(&topology).0.name().into()),
            variant: self
                .variant
                .clone()
                .unwrap_or_else(|| spec::DEFAULT_VARIANT.name().into()),
            sort: self.sort.clone().unwrap_or_else(|| spec::DEFAULT_SORT.name().into()),
            spread_counter: self.counter.unwrap_or(0),
            probe: self.probe.clone().filter(|p| !p.is_empty()),
            ..ScenarioSpec::new(topology, devices)
        };
        // The release (the newest without one) picks what the form leaves unnamed; a machine
        // that does not resolve is reported when the spec is.
        if let Ok(t) = resolved {
            let named = crate::scenario::kernel::Named {
                variant: self.variant.clone().filter(|v| !v.is_empty()),
                sort: self.sort.clone().filter(|v| !v.is_empty()),
                effective: self.effective.clone().filter(|v| !v.is_empty()),
                ..Default::default()
            };
            let kernel = self.kernel.as_deref().filter(|k| !k.is_empty());
            crate::scenario::kernel::pick(&mut spec, &t, kernel, &named)?;
        }
        Ok(spec)
    }

    pub fn view(&self) -> Result<View, AppError> {
        ViewQuery {
            metric: self.metric.clone(),
            node: self.node.clone(),
        }
        .parse()
    }
}

/// The browser editor's model of a topology: the machine in explicit form (`base`) and, per
/// node, its CPUs, package and a regular shape (cores, threads, cores per cluster) read from
/// it. The editor keeps every node exactly as `base` has it until the user changes that node's
/// shape; only then is the node regenerated from the shape (reusing its CPU ids). Offline and
/// absent CPUs, distances and packages are edited on the exact machine. An untouched preset
/// stays a preset (travels by name).
#[derive(Debug, Serialize)]
pub(crate) struct EditorModel {
    pub name: String,
    /// The preset this machine is, when it is one (the editor names edits after it).
    pub preset: Option<String>,
    pub smt_numbering: &'static str,
    pub nodes: Vec<EditorNode>,
    pub distances: Vec<Vec<u32>>,
    pub base: TopologySpec,
}

#[derive(Debug, Serialize)]
pub(crate) struct EditorNode {
    pub cores: u32,
    pub threads: u32,
    /// Cores per cluster; 0 for no cluster masks.
    pub cluster: u32,
    pub offline: String,
    pub absent: String,
    /// The node's possible CPUs.
    pub cpus: String,
    /// The package holding the node's CPUs; `None` when they are in several packages.
    pub package: Option<u32>,
}

impl EditorModel {
    pub fn of(t: &Topology, topology: &TopologyRef) -> EditorModel {
        let mut offset = false;
        let nodes = (0..t.nr_node_ids())
            .map(|node| {
                let cpus = t.node_cpus(node);
                let cores = cpus.iter().filter(|&c| t.drawn_smt(c).first() == Some(c)).count() as u32;
                let threads = cpus.iter().map(|c| t.drawn_smt(c).weight()).max().unwrap_or(1).max(1);
                for c in cpus.iter() {
                    let s = t.drawn_smt(c);
                    if let (Some(a), Some(b)) = (s.first(), s.last()) {
                        offset |= b - a + 1 != s.weight();
                    }
                }
                let cluster = cpus.first().map(|c| t.drawn_cluster(c).weight() / threads).unwrap_or(0);
                let mut packages = cpus.iter().map(|c| t.cpu_to_package(c));
                let first = packages.next();
                let package = match first {
                    Some(p) if packages.all(|q| q == p) => Some(p),
                    Some(_) => None,
                    None => Some(0),
                };
                EditorNode {
                    cores,
                    threads,
                    cluster,
                    offline: t.present().andnot(t.online()).and(cpus).to_cpulist(),
                    absent: t.possible().andnot(t.present()).and(cpus).to_cpulist(),
                    cpus: cpus.to_cpulist(),
                    package,
                }
            })
            .collect();
        let n = t.nr_node_ids();
        EditorModel {
            name: t.name().to_string(),
            preset: match topology {
                TopologyRef::Preset(p) => Some(p.clone()),
                TopologyRef::Inline(_) => None,
            },
            smt_numbering: if offset { "offset" } else { "adjacent" },
            nodes,
            distances: (0..n).map(|a| (0..n).map(|b| t.distance(a, b)).collect()).collect(),
            base: t.to_spec(),
        }
    }
}

/// Everything the browser needs to draw the editor, as one JSON document in a
/// `<script type="application/json">` element (see [`script_json`]).
#[derive(Serialize)]
struct EditorState<'a> {
    spec: &'a ScenarioSpec,
    editor: EditorModel,
    presets: Vec<&'static str>,
    variants: Vec<&'static str>,
    sorts: Vec<&'static str>,
    effectives: Vec<&'static str>,
    proposals: Vec<&'static str>,
    /// The interrupt controllers the editor offers: name, architecture, words, and the
    /// effective-CPU model a machine with it uses.
    irqchips: Vec<IrqchipChoice>,
    /// The kernel releases the editor offers and what each picks (the newest first).
    releases: Vec<ReleaseChoice>,
}

#[derive(Serialize)]
struct IrqchipChoice {
    name: &'static str,
    arch: &'static str,
    describe: &'static str,
    effective: &'static str,
}

fn irqchip_choices() -> Vec<IrqchipChoice> {
    crate::topology::Irqchip::ALL
        .iter()
        .map(|&c| IrqchipChoice {
            name: c.name(),
            arch: c.arch().name(),
            describe: c.describe(),
            effective: kernel::vector_matrix::EffectiveModel::for_irqchip(c).name(),
        })
        .collect()
}

/// What one kernel release picks, for the editor's kernel field (`kernel::release`).
#[derive(Serialize)]
struct ReleaseChoice {
    name: String,
    variant: &'static str,
    sort: &'static str,
    affinity: &'static str,
    mapper: &'static str,
    /// Vectors per CPU without and with a legacy PIC.
    vectors: [u32; 2],
}

/// The releases where some model changes (every row's first release, v5.1 on) and the newest.
fn release_choices() -> Vec<ReleaseChoice> {
    use crate::kernel::release;
    let mut starts: Vec<release::Release> = release::VARIANTS
        .iter()
        .map(|r| r.range.from)
        .chain(release::SORTS.iter().map(|r| r.range.from))
        .chain(release::AFFINITY_ERAS.iter().map(|r| r.range.from))
        .chain(release::MAPPERS.iter().map(|r| r.range.from))
        .chain(release::VECTOR_WINDOWS.iter().map(|r| r.range.from))
        .flatten()
        .chain([release::NEWEST, (6, 1), (6, 12)])
        .filter(|r| *r >= (5, 1))
        .collect();
    starts.sort_unstable_by(|a, b| b.cmp(a));
    starts.dedup();
    starts
        .into_iter()
        .map(|r| {
            let g = release::generation(r);
            ReleaseChoice {
                name: format!("{}.{}", r.0, r.1),
                variant: g.variant,
                sort: g.sort,
                affinity: g.affinity.name(),
                mapper: g.mapper.name(),
                vectors: [g.window.vectors_per_cpu(false), g.window.vectors_per_cpu(true)],
            }
        })
        .collect()
}

fn variant_names() -> Vec<&'static str> {
    kernel::Variant::ALL.iter().map(|v| v.name()).collect()
}

pub(crate) struct VectorRow {
    pub index: u32,
    pub managed: bool,
    pub mask: String,
    pub effective: String,
}

pub(crate) struct DeviceRows {
    pub name: String,
    pub n_vectors: usize,
    pub cpus: String,
    pub open: bool,
    pub rows: Vec<VectorRow>,
    pub warnings: Vec<String>,
}

/// The result block: summary, pictures, table. Shared by the page and `/fragment`.
pub(crate) struct ResultView {
    pub permalink: String,
    pub topology_summary: String,
    /// The kernel's view where it differs from the drawing, and cluster splits.
    pub machine_notes: Vec<String>,
    /// The variant and what code it models (says when it is a reconstruction).
    pub variant_line: String,
    /// Which effective-CPU model ran and why ("first-cpu (arm64 preset: …)").
    pub effective_line: String,
    /// The kernel releases the answer holds for ("holds for v7.0 .. (set by cluster)").
    pub kernel_line: String,
    pub devices_line: String,
    pub irqs_line: String,
    pub nodes_line: String,
    pub ideal: String,
    pub warnings: Vec<String>,
    pub metric: &'static str,
    pub metric_describe: &'static str,
    pub metrics: Vec<(&'static str, &'static str)>,
    pub node: String,
    pub nodes: Vec<u32>,
    /// The line above the heatmap ("max 6 devices on a CPU (ideal 4): …").
    pub verdict: String,
    pub heatmap_svg: String,
    pub numa_svg: String,
    pub strip_svg: String,
    pub devices: Vec<DeviceRows>,
    pub rows_left_out: usize,
    pub text: String,
}

impl ResultView {
    /// `origin` (`http://host`) makes the permalink in the mail text absolute.
    pub fn new(run: &Run, view: &View, origin: &str) -> ResultView {
        let topo = run.scenario.topology();
        let m = &run.metrics;
        let n_vectors: usize = run.outcome.devices.iter().map(|d| d.vectors.len()).sum();
        // A big machine's page keeps its weight for the overview: fewer table rows.
        let mut budget = if topo.nr_cpu_ids() > svg::CELLS_UNFOLDED_MAX {
            VECTOR_ROWS_BIG_MAX
        } else {
            VECTOR_ROWS_MAX
        };
        let mut left_out = 0;
        let devices = run
            .outcome
            .devices
            .iter()
            .map(|d| {
                let take = d.vectors.len().min(budget);
                budget -= take;
                left_out += d.vectors.len() - take;
                let mut cpus = crate::topology::CpuSet::new(topo.nr_cpu_ids());
                for v in &d.vectors {
                    if let Some(c) = v.effective_cpu {
                        cpus.insert(c);
                    }
                }
                DeviceRows {
                    name: d.name.clone(),
                    n_vectors: d.vectors.len(),
                    cpus: summary::page_cpulist(&cpus),
                    open: n_vectors <= VECTORS_OPEN_MAX,
                    rows: d.vectors[..take]
                        .iter()
                        .map(|v| VectorRow {
                            index: v.index,
                            managed: v.managed,
                            mask: v.mask.to_cpulist(),
                            effective: v.effective_cpu.map_or_else(|| "shut down".into(), |c| c.to_string()),
                        })
                        .collect(),
                    warnings: d.warnings.iter().map(ToString::to_string).collect(),
                }
            })
            .collect();
        ResultView {
            permalink: run.permalink.clone(),
            topology_summary: format!("{}: {}", topo.name(), topo.summary()),
            machine_notes: summary::machine_notes(topo),
            variant_line: summary::variant_line(&run.scenario),
            effective_line: summary::effective_line(
                run.scenario.effective(),
                run.scenario.topology(),
                run.preset().is_some(),
                run.effective_named,
            ),
            kernel_line: format!(
                "kernel: {}",
                summary::range_line(&crate::scenario::kernel::holds_for(&run.scenario, &run.outcome))
            ),
            verdict: summary::verdict_line(topo, m, view.metric),
            devices_line: summary::page_devices_line(topo, m),
            irqs_line: summary::page_irqs_line(topo, m),
            nodes_line: summary::page_nodes_line(m),
            ideal: summary::ideal_line(m),
            warnings: run
                .outcome
                .warnings()
                .map(|(d, w)| format!("{d}: {w}"))
                .chain(crate::render::vector_space::warning_line(&run.outcome.vector_space))
                .collect(),
            metric: view.metric.name(),
            metric_describe: view.metric.describe(),
            metrics: HeatMetric::ALL.iter().map(|h| (h.name(), h.describe())).collect(),
            node: view.node.map_or_else(String::new, |n| n.to_string()),
            nodes: topo.nodes_with_cpus().collect(),
            heatmap_svg: svg::heatmap(topo, m, view.metric, view.node),
            numa_svg: svg::numa_chart(m),
            strip_svg: svg::device_strip(topo, &run.outcome, view.node),
            devices,
            rows_left_out: left_out,
            text: run.text_report(origin),
        }
    }
}

#[derive(Template)]
#[template(path = "scenario/page.html")]
pub(crate) struct ScenarioPage {
    pub title: String,
    pub state_json: String,
    pub r: ResultView,
    /// Variant names, each with whether it is this scenario's.
    pub variants: Vec<(&'static str, bool)>,
}

impl ScenarioPage {
    pub fn new(run: &Run, view: &View, origin: &str) -> ScenarioPage {
        let state = EditorState {
            spec: &run.spec,
            editor: EditorModel::of(run.scenario.topology(), &run.spec.topology),
            presets: catalogue::names().collect(),
            variants: variant_names(),
            sorts: kernel::SortGen::ALL.iter().map(|s| s.name()).collect(),
            effectives: kernel::vector_matrix::EffectiveModel::ALL
                .iter()
                .map(|e| e.name())
                .collect(),
            proposals: crate::policy::Proposal::ALL.iter().map(|p| p.name()).collect(),
            irqchips: irqchip_choices(),
            releases: release_choices(),
        };
        ScenarioPage {
            title: format!("{} · {}", run.scenario.topology().name(), run.spec.variant),
            state_json: script_json(&state),
            r: ResultView::new(run, view, origin),
            variants: variant_names()
                .into_iter()
                .map(|v| (v, v == run.spec.variant))
                .collect(),
        }
    }
}

/// JSON safe to print raw inside `<script type="application/json">`: serde_json's text with
/// every `<`, `>` and `&` written as a `\uXXXX` escape, so no `</script>` or `<!--` can end or
/// change the element; `JSON.parse` reads the same value back. Unlike a data attribute, quotes
/// need no HTML escaping (a third of the attribute's bytes were `&quot;`).
pub(crate) fn script_json<T: Serialize>(value: &T) -> String {
    let text = serde_json::to_string(value).unwrap_or_else(|_| "null".into());
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            c => out.push(c),
        }
    }
    out
}

#[derive(Template)]
#[template(path = "scenario/result.html")]
pub(crate) struct ResultFragment {
    pub r: ResultView,
}

impl ResultFragment {
    pub fn new(run: &Run, view: &View, origin: &str) -> ResultFragment {
        ResultFragment {
            r: ResultView::new(run, view, origin),
        }
    }
}

/// `/compare?s=PERMALINK&a=VARIANT&b=VARIANT[&a_counter=…&b_effective=…]`, or the front
/// page's `preset`/`devices` in place of `s`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct CompareQuery {
    pub s: Option<String>,
    pub preset: Option<String>,
    pub devices: Option<String>,
    pub a: Option<String>,
    pub b: Option<String>,
    pub a_sort: Option<String>,
    pub b_sort: Option<String>,
    pub a_effective: Option<String>,
    pub b_effective: Option<String>,
    pub a_counter: Option<u32>,
    pub b_counter: Option<u32>,
    pub metric: Option<String>,
    pub node: Option<String>,
    /// The colour scale: `shared` (default: the larger maximum of A and B) or a number, a
    /// fixed maximum (absolute).
    pub scale: Option<String>,
    /// The kernel release both sides are for (see [`IndexQuery::kernel`]).
    pub kernel: Option<String>,
}

/// The largest fixed maximum `scale=N` takes.
pub(crate) const SCALE_MAX: u32 = 100_000;

impl CompareQuery {
    pub fn scale(&self) -> Result<Scale, AppError> {
        match self.scale.as_deref().filter(|s| !s.is_empty()) {
            None | Some("shared") => Ok(Scale::Shared),
            Some(n) => match n.parse::<u32>() {
                Ok(v) if (1..=SCALE_MAX).contains(&v) => Ok(Scale::Absolute(v)),
                _ => Err(AppError::BadInput(format!(
                    "scale {n:?}: shared, or a fixed maximum 1 to {SCALE_MAX}"
                ))),
            },
        }
    }

    pub fn spec(&self) -> Result<CompareSpec, AppError> {
        let scenario = match &self.s {
            Some(link) => permalink::decode::<ScenarioSpec>(link)?,
            None => IndexQuery {
                preset: self.preset.clone(),
                devices: self.devices.clone(),
                kernel: self.kernel.clone(),
                ..Default::default()
            }
            .spec()?,
        };
        let empty = |s: &Option<String>| s.clone().filter(|v| !v.is_empty());
        Ok(CompareSpec {
            scenario: scenario.clone(),
            a: SideSpec {
                variant: empty(&self.a),
                sort: empty(&self.a_sort),
                effective: empty(&self.a_effective),
                spread_counter: self.a_counter,
                kernel_c: None,
            },
            b: SideSpec {
                // No variant named for B: another one than A's, so the sides differ.
                variant: empty(&self.b).or_else(|| {
                    let a = empty(&self.a).unwrap_or_else(|| scenario.variant.clone());
                    Some(other_variant(&a).to_string())
                }),
                sort: empty(&self.b_sort),
                effective: empty(&self.b_effective),
                spread_counter: self.b_counter,
                kernel_c: None,
            },
        })
    }

    pub fn view(&self) -> Result<View, AppError> {
        ViewQuery {
            metric: self.metric.clone(),
            node: self.node.clone(),
        }
        .parse()
    }
}

/// Both sides of a comparison, each run once.
pub(crate) struct CompareRun {
    pub spec: CompareSpec,
    pub a: Run,
    pub b: Run,
    pub labels: [String; 2],
    pub permalink: String,
}

impl CompareRun {
    pub fn new(spec: CompareSpec, kernel_c: &KernelCRegistry) -> Result<CompareRun, AppError> {
        let [sa, sb] = spec.sides();
        let labels = [side_label(&sa), side_label(&sb)];
        let (a, b) = (Run::new(sa, kernel_c)?, Run::new(sb, kernel_c)?);
        let mut spec = spec;
        spec.scenario.topology = a.spec.topology.clone();
        // A c: side's link pins the build it ran (on the side when it names its variant, else
        // on the scenario both sides start from).
        for (side, run) in [(&mut spec.a, &a), (&mut spec.b, &b)] {
            if run.spec.kernel_c.is_some() {
                match side.variant {
                    Some(_) => side.kernel_c = run.spec.kernel_c.clone(),
                    None => spec.scenario.kernel_c = run.spec.kernel_c.clone(),
                }
            }
        }
        let permalink = encode_link(&spec)?;
        Ok(CompareRun {
            a,
            b,
            spec,
            labels,
            permalink,
        })
    }

    pub(crate) fn text_report(&self, origin: &str) -> String {
        fn side<'a>(r: &'a Run, label: &str) -> Side<'a> {
            Side {
                label: label.to_string(),
                scenario: &r.scenario,
                outcome: &r.outcome,
                metrics: &r.metrics,
            }
        }
        let opts = TextOptions {
            topology_label: self.a.topology_label(),
            vectors: false,
            permalink: Some(format!("{origin}/c/{}", self.permalink)),
        };
        text::compare_report(&side(&self.a, &self.labels[0]), &side(&self.b, &self.labels[1]), &opts)
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "permalink": self.permalink,
            "a": self.a.json(),
            "b": self.b.json(),
        })
    }
}

pub(crate) struct CompareSideView {
    pub label: String,
    /// The line above this side's heatmap ("max 6 devices on a CPU (ideal 4): …").
    pub verdict: String,
    /// The variant and what code it models (says when it is a reconstruction).
    pub variant_line: String,
    /// The kernel releases this side's answer holds for.
    pub kernel_line: String,
    pub permalink: String,
    pub devices_line: String,
    pub irqs_line: String,
    pub nodes_line: String,
    pub heatmap_svg: String,
}

#[derive(Template)]
#[template(path = "compare/page.html")]
pub(crate) struct ComparePage {
    pub title: String,
    pub permalink: String,
    pub base_permalink: String,
    pub topology_summary: String,
    pub sides: Vec<CompareSideView>,
    /// Both verdicts in one line and how many vectors B moves.
    pub overall: String,
    pub diff_svg: String,
    /// The colour scale both heatmaps share, in words, and its maximum.
    pub scale_line: String,
    pub scale_max: u32,
    pub scale: String,
    /// Vectors that fire on another CPU under B: (device, vector, queue, A CPU, B CPU).
    pub vector_changes: Vec<(String, u32, String, String, String)>,
    /// Why each side runs the effective-CPU model it runs.
    pub effective_note: String,
    pub text: String,
    pub metric: &'static str,
    pub metrics: Vec<(&'static str, &'static str)>,
    pub node: String,
    pub nodes: Vec<u32>,
}

impl ComparePage {
    pub fn new(run: &CompareRun, view: &View, origin: &str) -> Result<ComparePage, AppError> {
        ComparePage::with_scale(run, view, origin, Scale::Shared)
    }

    pub(crate) fn with_scale(
        run: &CompareRun,
        view: &View,
        origin: &str,
        scale: Scale,
    ) -> Result<ComparePage, AppError> {
        let topo = run.a.scenario.topology();
        let scale_max = match scale {
            Scale::Shared => svg_compare::shared_max(&run.a.metrics, &run.b.metrics, view.metric),
            Scale::Absolute(n) => n,
        };
        let scale_line = match scale {
            Scale::Shared => format!(
                "One colour scale for A and B: 0 to {scale_max} {} (the larger maximum of the two)",
                view.metric.describe()
            ),
            Scale::Absolute(n) => format!(
                "One fixed colour scale for A and B: 0 to {n} {}",
                view.metric.describe()
            ),
        };
        let cpu = |c: Option<u32>| c.map_or_else(|| "off".to_string(), |c| c.to_string());
        let vector_changes: Vec<_> = text::vector_changes_list(&run.a.outcome, &run.b.outcome, &run.a.scenario)
            .into_iter()
            .map(|c| {
                let queue = c.queue.map_or_else(String::new, |q| q.to_string());
                (c.device, c.vector, queue, cpu(c.a), cpu(c.b))
            })
            .collect();
        let (default_model, why) = crate::catalogue::default_effective(run.a.scenario.topology());
        let effective_note = format!(
            "Effective-CPU model: A {}, B {}; with none named, {} (default {why}).",
            run.a.scenario.effective().name(),
            run.b.scenario.effective().name(),
            default_model.name()
        );
        let side = |r: &Run, label: &str, which: &str| CompareSideView {
            label: label.to_string(),
            verdict: summary::verdict_line(topo, &r.metrics, view.metric),
            variant_line: summary::variant_line(&r.scenario),
            kernel_line: format!(
                "kernel: {}",
                summary::range_line(&crate::scenario::kernel::holds_for(&r.scenario, &r.outcome))
            ),
            permalink: r.permalink.clone(),
            devices_line: summary::devices_line(&r.metrics),
            irqs_line: summary::irqs_line(&r.metrics),
            nodes_line: summary::nodes_line(&r.metrics),
            heatmap_svg: svg_compare::heatmap_on_scale(topo, &r.metrics, view.metric, view.node, scale_max, which),
        };
        let sides = vec![side(&run.a, &run.labels[0], "A"), side(&run.b, &run.labels[1], "B")];
        let overall = summary::compare_line(&sides[0].verdict, &sides[1].verdict, vector_changes.len());
        Ok(ComparePage {
            title: format!("{} vs {}", run.labels[0], run.labels[1]),
            overall,
            permalink: run.permalink.clone(),
            base_permalink: encode_link(&run.spec.scenario)?,
            topology_summary: format!("{}: {}", topo.name(), topo.summary()),
            sides,
            scale_line,
            scale_max,
            scale: match scale {
                Scale::Shared => String::new(),
                Scale::Absolute(n) => n.to_string(),
            },
            vector_changes,
            effective_note,
            diff_svg: svg::diff_heatmap(topo, &run.a.metrics, &run.b.metrics, view.metric, view.node),
            text: run.text_report(origin),
            metric: view.metric.name(),
            metrics: HeatMetric::ALL.iter().map(|h| (h.name(), h.describe())).collect(),
            node: view.node.map_or_else(String::new, |n| n.to_string()),
            nodes: topo.nodes_with_cpus().collect(),
        })
    }
}
