//! The scenario page (`/`, `/s/{permalink}`, the result block `POST /fragment` answers) and
//! its twins: [`Run`], a scenario resolved and run once (the web and `irqscope simulate` share
//! it), [`ScenarioView`] and [`ResultView`], the editor's state.

use super::seeds::{seed_of, SeedFigure, SeedTarget};
use super::{bad, encode_link, parse_metric, parse_node, registered_kernel_c, ViewError};
use crate::kernel::External;
use crate::kernel_c::registry::KernelCRegistry;
use crate::metrics::{self, Metrics};
use crate::render::heatmap::{self, NUMBERED_CELLS_MAX};
use crate::render::svg::HeatMetric;
use crate::render::text::{self, TextOptions};
use crate::render::{charts, summary};
use crate::scenario::kernel::ModelNames;
use crate::scenario::request::{spec_for_machine, Overrides};
use crate::scenario::spec::{self, DeviceSpec, ScenarioSpec, TopologyRef, KERNEL_C_PREFIX};
use crate::scenario::{self, permalink, Outcome, Scenario, ScenarioError};
use crate::topology::{CpuSet, Generator, SmtNumbering, Topology, TopologySpec};
use crate::{catalogue, kernel, render};
use serde::{Deserialize, Serialize};

/// Rows of the IRQ × CPU table shown before the rest is left to the JSON twin.
pub(crate) const VECTOR_ROWS_MAX: usize = 1024;
/// The same on machines whose heatmap cells carry no numbers (more than
/// `heatmap::NUMBERED_CELLS_MAX` CPUs): a 1,024-CPU page with 16 devices × 64 vectors held
/// 93 KB of rows.
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
    pub(crate) spec: ScenarioSpec,
    pub scenario: Scenario,
    pub outcome: Outcome,
    pub(crate) metrics: Metrics,
    pub permalink: String,
    /// Whether the input named the effective-CPU model (a permalink always does); `false` when
    /// the machine's default was taken, which the page then explains.
    pub(crate) effective_named: bool,
    /// The probe-order distribution the spec asks for (`orders`, `counter_to`); `None` for a
    /// fixed-order scenario.
    pub(crate) distribution: Option<crate::render::orders::OrdersShown>,
}

/// Finds built C for a `c:NAME` variant: its name and the sha256 a link pins.
pub type KernelCFinder<'a> = &'a dyn Fn(&str, Option<&str>) -> Result<External, ViewError>;

impl Run {
    /// Validate and run, with a permalink (the pages and their twins need one); a `c:NAME`
    /// variant runs a build this server registered. An inline topology travels as it came (a
    /// `[generate]` recipe keeps links short); one that cannot be written back as given (a
    /// recipe that left its cluster shape to the default) is stored in the explicit form
    /// `Topology::to_spec` gives.
    pub fn new(spec: ScenarioSpec, kernel_c: &KernelCRegistry) -> Result<Run, ViewError> {
        Run::with_link(spec, true, &registered_kernel_c(kernel_c))
    }

    /// [`Run::new`] for the command line: `c:NAME` found by `kernel_c` (the build cache), and a
    /// scenario too large for a permalink (a topology file of thousands of irregular CPUs)
    /// still runs; its `permalink` is then empty.
    pub fn resolve(spec: ScenarioSpec, kernel_c: KernelCFinder<'_>) -> Result<Run, ViewError> {
        Run::with_link(spec, false, kernel_c)
    }

    pub(crate) fn with_link(
        mut spec: ScenarioSpec,
        link_needed: bool,
        kernel_c: KernelCFinder<'_>,
    ) -> Result<Run, ViewError> {
        let external = match spec.variant.strip_prefix(KERNEL_C_PREFIX) {
            Some(name) => Some(kernel_c(name, spec.kernel_c.as_deref())?),
            None => None,
        };
        // A c: variant runs the build found; the link pins it by its sha256.
        if let Some(e) = &external {
            spec.kernel_c = Some(e.0.id().to_string());
        }
        let found = external.clone();
        let lookup = move |name: &str, _: Option<&str>| {
            found
                .clone()
                .ok_or_else(|| ScenarioError(format!("c:{name}: not registered on this server")))
        };
        let scenario = spec.resolve_with(catalogue::get, &lookup)?;
        let outcome = scenario::try_run(&scenario).map_err(|e| ViewError::BadInput(e.to_string()))?;
        let metrics = metrics::compute(&scenario, &outcome);
        let distribution = crate::render::orders::compute(&spec, &scenario).map_err(ViewError::BadInput)?;
        let permalink = match permalink::encode(&spec) {
            Ok(link) => link,
            Err(_) => {
                let explicit = TopologyRef::Inline(Box::new(scenario.topology().to_spec()));
                let given = std::mem::replace(&mut spec.topology, explicit);
                match encode_link(&spec) {
                    Ok(link) => link,
                    Err(e) if link_needed => return Err(e),
                    Err(_) => {
                        spec.topology = given;
                        String::new()
                    }
                }
            }
        };
        Ok(Run {
            spec,
            scenario,
            outcome,
            metrics,
            permalink,
            effective_named: true,
            distribution,
        })
    }

    /// The machine's preset name, when it is one.
    pub(crate) fn preset(&self) -> Option<&str> {
        match &self.spec.topology {
            TopologyRef::Preset(name) => Some(name),
            TopologyRef::Inline(_) => None,
        }
    }

    pub(crate) fn topology_label(&self) -> String {
        topology_label(&self.spec.topology)
    }

    /// The mail-ready report, with the absolute permalink under the command.
    pub(crate) fn text_report(&self, origin: &str) -> String {
        self.report(&TextOptions {
            topology_label: self.topology_label(),
            vectors: false,
            permalink: Some(format!("{origin}/s/{}", self.permalink)),
            orders_flags: None,
        })
    }

    /// The mail-ready report as `opts` asks (the command line names the machine as it was
    /// given and may list every vector).
    pub fn report(&self, opts: &TextOptions) -> String {
        let opts = TextOptions {
            orders_flags: self.distribution.as_ref().map(|d| d.flags()),
            ..opts.clone()
        };
        let mut out = text::report(&self.scenario, &self.outcome, &self.metrics, &opts);
        if let Some(d) = &self.distribution {
            let origin = opts.permalink.as_deref().and_then(|l| l.split("/s/").next());
            d.text_block(origin, &mut out);
        }
        out
    }

    /// The JSON twin: the outcome, metrics and sentences, and the permalink when there is one.
    pub fn json(&self) -> serde_json::Value {
        let mut v = render::json::outcome_json(&self.scenario, &self.outcome, &self.metrics);
        if !self.permalink.is_empty() {
            v["permalink"] = serde_json::Value::String(self.permalink.clone());
        }
        if let Some(d) = &self.distribution {
            v["distribution"] = d.json();
        }
        v
    }
}

pub(crate) fn topology_label(t: &TopologyRef) -> String {
    match t {
        TopologyRef::Preset(name) => name.clone(),
        TopologyRef::Inline(spec) => crate::topology::compact::label(spec),
    }
}

/// How the pictures are drawn: which metric, and zoomed to one node or not.
#[derive(Debug, Clone, Copy)]
pub struct View {
    pub(crate) metric: HeatMetric,
    pub(crate) node: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
pub struct ViewQuery {
    pub(crate) metric: Option<String>,
    pub(crate) node: Option<String>,
}

impl ViewQuery {
    pub fn parse(&self) -> Result<View, ViewError> {
        Ok(View {
            metric: parse_metric(self.metric.as_deref())?,
            node: parse_node(self.node.as_deref())?,
        })
    }
}

/// `/?preset=NAME&devices=TOKENS&variant=…`: a scenario from a preset (or `blank`) and
/// compact device tokens separated by spaces.
#[derive(Debug, Default, Deserialize)]
pub struct IndexQuery {
    pub preset: Option<String>,
    pub devices: Option<String>,
    #[serde(flatten)]
    pub models: ModelNames,
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
pub(crate) fn parse_devices(tokens: &str) -> Result<Vec<DeviceSpec>, ViewError> {
    if tokens.len() > QUERY_DEVICES_BYTES_MAX {
        return Err(bad(format!("devices: longer than {QUERY_DEVICES_BYTES_MAX} bytes")));
    }
    Ok(tokens
        .split_whitespace()
        .map(spec::parse_device_token)
        .collect::<Result<Vec<_>, _>>()?)
}

impl IndexQuery {
    pub fn spec(&self) -> Result<ScenarioSpec, ViewError> {
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
        let overrides = Overrides {
            models: self.models.clone(),
            counter: self.counter,
            probe: self.probe.clone().filter(|p| !p.is_empty()),
            ..Overrides::default()
        };
        let resolved = topology.resolve(catalogue::get);
        let mut spec = overrides.apply(spec_for_machine(topology, devices));
        // The release (the newest without one) picks what the form leaves unnamed; a machine
        // that does not resolve is reported when the spec is.
        if let Ok(t) = resolved {
            let named = scenario::kernel::Named {
                models: self.models.given(),
                ..Default::default()
            };
            let kernel = self.kernel.as_deref().filter(|k| !k.is_empty());
            scenario::kernel::pick(&mut spec, &t, kernel, &named)?;
        }
        Ok(spec)
    }

    pub(crate) fn view(&self) -> Result<View, ViewError> {
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
    pub(crate) name: String,
    /// The preset this machine is, when it is one (the editor names edits after it).
    pub(crate) preset: Option<String>,
    pub(crate) smt_numbering: &'static str,
    pub(crate) nodes: Vec<EditorNode>,
    pub(crate) distances: Vec<Vec<u32>>,
    /// The machine in explicit form, compactly ([`editor_base`]).
    pub(crate) base: TopologySpec,
}

/// The machine in explicit form as the page carries it for the editor: without distances (the
/// editor edits [`EditorModel::distances`]) and with its SMT sets and clusters as shifted runs
/// ([`shifted_runs`]). 8,192 CPUs' state was 119 KB, 105 KB of it this.
fn editor_base(t: &Topology) -> TopologySpec {
    let mut base = t.to_spec();
    base.distances = None;
    base.smt = shifted_runs(&base.smt);
    base.clusters = shifted_runs(&base.clusters);
    base
}

/// CPU lists with each run of lists that step by the same amount written once, as
/// `LIST*COUNT+STEP`: "0-1*4096+2" is 0-1, 2-3, …, 8190-8191, and "0,512*512+1" is 0,512,
/// 1,513, …, 511,1023. The editor's script expands them back (`expandRuns` in `app.js`);
/// a list that starts no run stays as it is.
pub(crate) fn shifted_runs(lists: &[String]) -> Vec<String> {
    let sets: Vec<Option<Vec<u32>>> = lists
        .iter()
        .map(|l| {
            crate::topology::parse_cpulist(l, crate::topology::CPUS_MAX)
                .ok()
                .map(|s| s.iter().collect())
        })
        .collect();
    // The step from `a` to `b` when `b` is `a` shifted up.
    let step = |a: &[u32], b: &[u32]| -> Option<u32> {
        let d = b.first()?.checked_sub(*a.first()?).filter(|&d| d > 0)?;
        (a.len() == b.len() && a.iter().zip(b).all(|(x, y)| y.checked_sub(*x) == Some(d))).then_some(d)
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < lists.len() {
        let mut j = i + 1;
        let mut run_step = None;
        while j < lists.len() {
            let (Some(prev), Some(next)) = (&sets[j - 1], &sets[j]) else {
                break;
            };
            match (run_step, step(prev, next)) {
                (None, Some(d)) => run_step = Some(d),
                (Some(r), Some(d)) if r == d => {}
                _ => break,
            }
            j += 1;
        }
        match run_step {
            Some(d) => out.push(format!("{}*{}+{d}", lists[i], j - i)),
            None => out.push(lists[i].clone()),
        }
        i = j;
    }
    out
}

#[derive(Debug, Serialize)]
pub(crate) struct EditorNode {
    pub(crate) cores: u32,
    pub(crate) threads: u32,
    /// Cores per cluster; 0 for no cluster masks.
    pub(crate) cluster: u32,
    pub(crate) offline: String,
    pub(crate) absent: String,
    /// The node's possible CPUs.
    pub(crate) cpus: String,
    /// The package holding the node's CPUs; `None` when they are in several packages.
    pub(crate) package: Option<u32>,
}

impl EditorModel {
    pub(crate) fn of(t: &Topology, topology: &TopologyRef) -> EditorModel {
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
            base: editor_base(t),
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
    /// The variants the editor offers ([`offered_variants`]).
    variants: Vec<&'a str>,
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

/// The variants a scenario's page offers (the editor's variant box, the compare form): the
/// built C it runs first (`c:NAME`, which no model's name is), then every model.
fn offered_variants(spec: &ScenarioSpec) -> Vec<&str> {
    let built = spec
        .variant
        .starts_with(KERNEL_C_PREFIX)
        .then_some(spec.variant.as_str());
    built.into_iter().chain(variant_names()).collect()
}

pub(crate) struct VectorRow {
    pub(crate) index: u32,
    pub(crate) managed: bool,
    pub(crate) mask: String,
    pub(crate) effective: String,
}

pub(crate) struct DeviceRows {
    pub(crate) name: String,
    pub(crate) n_vectors: usize,
    pub(crate) cpus: String,
    pub(crate) open: bool,
    pub(crate) rows: Vec<VectorRow>,
    pub(crate) warnings: Vec<String>,
}

/// The result block: the verdict, the figure that shows it, the summary, the other charts (or
/// the sentence that replaces a chart too dense to read), the vector table and the mail text.
/// Shared by the page and `/fragment`.
pub struct ResultView {
    pub(crate) permalink: String,
    /// The seed figure this scenario is, when it is one: the page leads with its sentence.
    pub(crate) seed: Option<&'static SeedFigure>,
    pub(crate) topology_summary: String,
    /// The kernel's view where it differs from the drawing, and cluster splits.
    pub(crate) machine_notes: Vec<String>,
    /// The variant and what code it models (says when it is a reconstruction).
    pub(crate) variant_line: String,
    /// Which effective-CPU model ran and why ("first-cpu (arm64 preset: …)").
    pub(crate) effective_line: String,
    /// The kernel releases the answer holds for ("holds for v7.0 .. (set by cluster)").
    pub(crate) kernel_line: String,
    pub devices_line: String,
    pub(crate) irqs_line: String,
    pub(crate) nodes_line: String,
    pub(crate) ideal: String,
    pub(crate) warnings: Vec<String>,
    pub(crate) metric: &'static str,
    pub(crate) metrics: Vec<(&'static str, &'static str)>,
    pub(crate) node: String,
    pub(crate) nodes: Vec<u32>,
    /// The allocations the kernel refused, when any: the headline says them first.
    pub(crate) failure: Option<String>,
    /// The line above the heatmap ("max 6 devices on a CPU (ideal 4): …"), the page's
    /// headline unless a seed's sentence leads; after a [`ResultView::failure`], "of the
    /// vectors placed: …".
    pub(crate) verdict: String,
    pub heatmap_svg: String,
    /// The NUMA chart, or `None` on a machine with too many nodes to read one (the page says
    /// [`ResultView::nodes_line`] instead).
    pub(crate) numa_svg: Option<String>,
    /// The device strip, or `None` when it would be too large; then this sentence says where
    /// each device's vectors fire.
    pub(crate) strip_svg: Option<String>,
    pub(crate) strip_line: String,
    pub(crate) devices: Vec<DeviceRows>,
    pub(crate) rows_left_out: usize,
    pub text: String,
    /// The probe-order distribution, when the link asks for one.
    pub(crate) orders: Option<crate::render::orders::OrdersPage>,
}

/// Rows of a page's vector table: [`VECTOR_ROWS_MAX`], or [`VECTOR_ROWS_BIG_MAX`] on a
/// machine of more than `heatmap::NUMBERED_CELLS_MAX` CPUs.
pub(crate) fn vector_rows_max(topo: &Topology) -> usize {
    if topo.nr_cpu_ids() > NUMBERED_CELLS_MAX {
        VECTOR_ROWS_BIG_MAX
    } else {
        VECTOR_ROWS_MAX
    }
}

/// Each device's vector table, at most [`vector_rows_max`] rows in all, and how many were
/// left out.
fn device_rows(run: &Run) -> (Vec<DeviceRows>, usize) {
    let topo = run.scenario.topology();
    let n_vectors: usize = run.outcome.devices.iter().map(|d| d.vectors.len()).sum();
    let mut budget = vector_rows_max(topo);
    let mut left_out = 0;
    let devices = run
        .outcome
        .devices
        .iter()
        .map(|d| {
            let take = d.vectors.len().min(budget);
            budget -= take;
            left_out += d.vectors.len() - take;
            let cpus: CpuSet = d.vectors.iter().filter_map(|v| v.effective_cpu).collect();
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
    (devices, left_out)
}

/// The sentence in place of a device strip too wide to read, with the way to draw one when
/// there is: a node picked alone.
fn strip_sentence(topo: &Topology, outcome: &Outcome, zoom: Option<u32>) -> String {
    let line = summary::strip_line(topo, outcome);
    let node_fits = |n: u32| topo.node_cpus(n).weight() as usize <= charts::STRIP_CPUS_MAX;
    if zoom.is_none() && topo.nodes_with_cpus().count() > 1 && topo.nodes_with_cpus().all(node_fits) {
        format!("{line} (pick a node above to draw its strip)")
    } else {
        line
    }
}

impl ResultView {
    /// `origin` (`http://host`) makes the permalink in the mail text absolute.
    pub(crate) fn new(run: &Run, view: &View, origin: &str) -> ResultView {
        let topo = run.scenario.topology();
        let m = &run.metrics;
        let (devices, rows_left_out) = device_rows(run);
        let failure = summary::allocation_failures(&run.outcome);
        ResultView {
            permalink: run.permalink.clone(),
            seed: seed_of(&SeedTarget::Scenario(run.spec.clone())),
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
                summary::range_line(&scenario::kernel::holds_for(&run.scenario, &run.outcome))
            ),
            verdict: match &failure {
                Some(_) => format!("of the vectors placed: {}", summary::verdict_line(topo, m, view.metric)),
                None => summary::verdict_line(topo, m, view.metric),
            },
            failure,
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
            metrics: HeatMetric::ALL.iter().map(|h| (h.name(), h.describe())).collect(),
            node: view.node.map_or_else(String::new, |n| n.to_string()),
            nodes: topo.nodes_with_cpus().collect(),
            heatmap_svg: heatmap::heatmap(topo, m, view.metric, view.node),
            numa_svg: charts::numa_chart(m),
            strip_svg: charts::device_strip(topo, &run.outcome, view.node),
            strip_line: strip_sentence(topo, &run.outcome, view.node),
            devices,
            rows_left_out,
            text: run.text_report(origin),
            orders: run.distribution.as_ref().map(|d| d.page(&run.scenario, view.node)),
        }
    }
}

/// The scenario page: the editor's state and the result block.
pub struct ScenarioView {
    pub(crate) title: String,
    /// The editor starts open (the front page) or folded (a permalink page, which leads with
    /// its result at full width).
    pub(crate) editor_open: bool,
    pub(crate) state_json: String,
    pub r: ResultView,
    /// Variant names, each with whether it is this scenario's (built C, `c:NAME`, first).
    pub(crate) variants: Vec<(String, bool)>,
    /// Side B the compare form starts on: empty for "another variant" (the form's default),
    /// or, when this scenario runs built C, the model of its kernel release, so that the
    /// comparison puts the build beside the code it patches.
    pub(crate) compare_b: &'static str,
}

impl ScenarioView {
    pub fn new(run: &Run, view: &View, origin: &str, editor_open: bool) -> ScenarioView {
        let state = EditorState {
            spec: &run.spec,
            editor: EditorModel::of(run.scenario.topology(), &run.spec.topology),
            presets: catalogue::names().collect(),
            variants: offered_variants(&run.spec),
            sorts: kernel::SortGen::ALL.iter().map(|s| s.name()).collect(),
            effectives: kernel::vector_matrix::EffectiveModel::ALL
                .iter()
                .map(|e| e.name())
                .collect(),
            proposals: crate::policy::Proposal::ALL.iter().map(|p| p.name()).collect(),
            irqchips: irqchip_choices(),
            releases: release_choices(),
        };
        ScenarioView {
            editor_open,
            title: format!("{} · {}", run.scenario.topology().name(), run.spec.variant),
            state_json: script_json(&state),
            r: ResultView::new(run, view, origin),
            variants: offered_variants(&run.spec)
                .into_iter()
                .map(|v| (v.to_string(), v == run.spec.variant))
                .collect(),
            compare_b: match run.spec.variant.starts_with(KERNEL_C_PREFIX) {
                true => crate::scenario::payloads::release_variant(run.spec.kernel.as_deref()),
                false => "",
            },
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `LIST*COUNT+STEP` back to its lists, as the editor's script does.
    fn expand(lists: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for l in lists {
            let Some((list, rest)) = l.split_once('*') else {
                out.push(l.clone());
                continue;
            };
            let (count, step) = rest.split_once('+').unwrap();
            let (count, step): (u32, u32) = (count.parse().unwrap(), step.parse().unwrap());
            let first = crate::topology::parse_cpulist(list, crate::topology::CPUS_MAX).unwrap();
            for k in 0..count {
                let shifted: CpuSet = first.iter().map(|c| c + k * step).collect();
                out.push(shifted.to_cpulist());
            }
        }
        out
    }

    /// Every preset's SMT sets and clusters come back from their runs exactly; the regular
    /// machines take one run each, and the 8,192-CPU machine's editor state is small.
    #[test]
    fn editor_base_runs_expand_to_the_machine() {
        for (name, t) in catalogue::all() {
            let t = t.as_ref().unwrap();
            let spec = t.to_spec();
            let base = editor_base(t);
            assert_eq!(expand(&base.smt), spec.smt, "{name}");
            assert_eq!(expand(&base.clusters), spec.clusters, "{name}");
            assert!(base.distances.is_none());
        }
        let big = catalogue::get("synthetic-8192").unwrap();
        let base = editor_base(&big);
        assert_eq!((base.smt.len(), base.clusters.len()), (1, 1), "{:?}", base.smt);
        let state = script_json(&EditorModel::of(&big, &TopologyRef::Preset("synthetic-8192".into())));
        assert!(state.len() < 30_000, "{} bytes", state.len());
        assert_eq!(
            shifted_runs(&["0,512".into(), "1,513".into(), "7".into()]),
            ["0,512*2+1", "7"]
        );
    }
}
