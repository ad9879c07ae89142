//! The compare page (`/compare`, `/c/{permalink}`) and its twins: both sides of a
//! comparison run once ([`CompareRun`], shared with `irqscope compare`), and [`CompareView`].

use super::scenario::{vector_rows_max, IndexQuery, KernelCFinder, Run, View, ViewQuery};
use super::seeds::{seed_of, SeedFigure, SeedTarget};
use super::{bad, encode_link, ViewError};
use crate::kernel_c::registry::KernelCRegistry;
use crate::render::heatmap;
use crate::render::summary;
use crate::render::svg::HeatMetric;
use crate::render::svg_compare::{self, Scale};
use crate::render::text::{self, Side, TextOptions};
use crate::scenario::payloads::{other_variant, side_label, CompareSpec, SideSpec};
use crate::scenario::permalink;
use crate::scenario::spec::ScenarioSpec;
use crate::topology::{CpuSet, Topology};
use serde::Deserialize;

/// `/compare?s=PERMALINK&a=VARIANT&b=VARIANT[&a_counter=…&b_effective=…]`, or the front
/// page's `preset`/`devices` in place of `s`.
#[derive(Debug, Default, Deserialize)]
pub struct CompareQuery {
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
    pub(crate) fn scale(&self) -> Result<Scale, ViewError> {
        match self.scale.as_deref().filter(|s| !s.is_empty()) {
            None | Some("shared") => Ok(Scale::Shared),
            Some(n) => match n.parse::<u32>() {
                Ok(v) if (1..=SCALE_MAX).contains(&v) => Ok(Scale::Absolute(v)),
                _ => Err(bad(format!("scale {n:?}: shared, or a fixed maximum 1 to {SCALE_MAX}"))),
            },
        }
    }

    pub fn spec(&self) -> Result<CompareSpec, ViewError> {
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
        Ok(self.sides_over(scenario))
    }

    /// The comparison of this query's two sides over `scenario` (the machine, devices and
    /// names both sides start from): what the page and `irqscope compare` run. A side's names
    /// override the scenario's; B without a variant runs another one than A's, so the sides
    /// differ.
    pub fn sides_over(&self, scenario: ScenarioSpec) -> CompareSpec {
        let empty = |s: &Option<String>| s.clone().filter(|v| !v.is_empty());
        let b_variant = empty(&self.b).or_else(|| {
            let a = empty(&self.a).unwrap_or_else(|| scenario.variant.clone());
            Some(other_variant(&a, scenario.kernel.as_deref()).to_string())
        });
        CompareSpec {
            scenario,
            a: SideSpec {
                variant: empty(&self.a),
                sort: empty(&self.a_sort),
                effective: empty(&self.a_effective),
                spread_counter: self.a_counter,
                kernel_c: None,
            },
            b: SideSpec {
                variant: b_variant,
                sort: empty(&self.b_sort),
                effective: empty(&self.b_effective),
                spread_counter: self.b_counter,
                kernel_c: None,
            },
        }
    }

    pub fn view(&self) -> Result<View, ViewError> {
        ViewQuery {
            metric: self.metric.clone(),
            node: self.node.clone(),
        }
        .parse()
    }
}

/// Both sides of a comparison, each run once.
pub struct CompareRun {
    pub(crate) spec: CompareSpec,
    pub(crate) a: Run,
    pub(crate) b: Run,
    pub(crate) labels: [String; 2],
    pub(crate) permalink: String,
}

impl CompareRun {
    /// Run both sides, with a permalink (the page and its twins need one).
    pub fn new(spec: CompareSpec, kernel_c: &KernelCRegistry) -> Result<CompareRun, ViewError> {
        CompareRun::with_link(spec, &super::registered_kernel_c(kernel_c), true)
    }

    /// [`CompareRun::new`] for the command line: `c:NAME` found by `kernel_c`, and a
    /// comparison too large for a permalink still runs, its `permalink` empty.
    pub fn resolve(spec: CompareSpec, kernel_c: KernelCFinder<'_>) -> Result<CompareRun, ViewError> {
        CompareRun::with_link(spec, kernel_c, false)
    }

    fn with_link(
        mut spec: CompareSpec,
        kernel_c: KernelCFinder<'_>,
        link_needed: bool,
    ) -> Result<CompareRun, ViewError> {
        let [sa, sb] = spec.sides();
        let labels = [side_label(&sa), side_label(&sb)];
        let (a, b) = if link_needed {
            (Run::with_link(sa, true, kernel_c)?, Run::with_link(sb, true, kernel_c)?)
        } else {
            (Run::resolve(sa, kernel_c)?, Run::resolve(sb, kernel_c)?)
        };
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
        let permalink = match encode_link(&spec) {
            Ok(link) => link,
            Err(e) if link_needed => return Err(e),
            Err(_) => String::new(),
        };
        Ok(CompareRun {
            a,
            b,
            spec,
            labels,
            permalink,
        })
    }

    /// The mail-ready report with the absolute permalink last.
    pub(crate) fn text_report(&self, origin: &str) -> String {
        self.report(&self.a.topology_label(), Some(format!("{origin}/c/{}", self.permalink)))
    }

    /// The mail-ready report, the machine named `topology_label` in its commands.
    pub fn report(&self, topology_label: &str, permalink: Option<String>) -> String {
        fn side<'a>(r: &'a Run, label: &str) -> Side<'a> {
            Side {
                label: label.to_string(),
                scenario: &r.scenario,
                outcome: &r.outcome,
                metrics: &r.metrics,
            }
        }
        let opts = TextOptions {
            topology_label: topology_label.to_string(),
            vectors: false,
            permalink,
            orders_flags: self.a.distribution.as_ref().map(|d| d.flags()),
        };
        let mut out = text::compare_report(&side(&self.a, &self.labels[0]), &side(&self.b, &self.labels[1]), &opts);
        if let Some(o) = self.orders() {
            o.text_block(&mut out);
        }
        out
    }

    pub fn json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "permalink": self.permalink,
            "a": self.a.json(),
            "b": self.b.json(),
        });
        if let Some(o) = self.orders() {
            v["distribution_change"] = o.json();
        }
        v
    }

    /// Both sides' distributions, when the comparison asks for orders.
    pub(crate) fn orders(&self) -> Option<crate::render::orders::OrdersCompared<'_>> {
        match (&self.a.distribution, &self.b.distribution) {
            (Some(a), Some(b)) => Some(crate::render::orders::OrdersCompared { a, b }),
            _ => None,
        }
    }
}

pub(crate) struct CompareSideView {
    pub(crate) label: String,
    /// The line above this side's heatmap ("max 6 devices on a CPU (ideal 4): …").
    pub(crate) verdict: String,
    /// The variant and what code it models (says when it is a reconstruction).
    pub(crate) variant_line: String,
    /// The kernel releases this side's answer holds for.
    pub(crate) kernel_line: String,
    pub(crate) permalink: String,
    pub(crate) devices_line: String,
    pub(crate) irqs_line: String,
    pub(crate) nodes_line: String,
    pub(crate) heatmap_svg: String,
}

/// A vector whose effective CPU or requested mask differs between the sides, or (folded) one
/// such vector on each of several nodes, all placed alike within their nodes.
#[derive(Debug, Clone)]
pub struct VectorChangeRow {
    pub(crate) device: String,
    /// The vector's index, or a folded row's indices ("0-63 on nodes 0-63").
    pub(crate) vector: String,
    /// Its blk-mq hardware queue, when it is one ("" otherwise; a folded row's list).
    pub queue: String,
    pub(crate) a_cpu: String,
    pub b_cpu: String,
    pub(crate) a_mask: String,
    pub(crate) b_mask: String,
    /// The effective CPU differs (else only the mask does).
    pub(crate) moved: bool,
    /// The row stands for one vector on each of several nodes `n`: its CPUs are written as
    /// their place in the node ("#126 in node n") and its masks as nodes ("node n+1").
    pub(crate) folded: bool,
}

/// One vector that differs between the sides, as the outcomes hold it.
struct Change<'a> {
    device: &'a str,
    vector: u32,
    queue: Option<u32>,
    a: Option<u32>,
    b: Option<u32>,
    a_mask: &'a CpuSet,
    b_mask: &'a CpuSet,
}

impl Change<'_> {
    fn moved(&self) -> bool {
        self.a != self.b
    }

    fn row(&self) -> VectorChangeRow {
        let cpu = |c: Option<u32>| c.map_or_else(|| "off".to_string(), |c| c.to_string());
        VectorChangeRow {
            device: self.device.to_string(),
            vector: self.vector.to_string(),
            queue: self.queue.map_or_else(String::new, |q| q.to_string()),
            a_cpu: cpu(self.a),
            b_cpu: cpu(self.b),
            a_mask: summary::page_cpulist(self.a_mask),
            b_mask: summary::page_cpulist(self.b_mask),
            moved: self.moved(),
            folded: false,
        }
    }
}

/// Every vector whose effective CPU or mask differs, in device then vector order (both sides
/// run the same devices, so vectors pair by position).
fn vector_changes(run: &CompareRun) -> Vec<Change<'_>> {
    let devices = run.a.outcome.devices.iter().zip(&run.b.outcome.devices);
    let mut out = Vec::new();
    for ((da, db), dev) in devices.zip(run.a.scenario.devices()) {
        for (va, vb) in da.vectors.iter().zip(&db.vectors) {
            if va.effective_cpu == vb.effective_cpu && va.mask == vb.mask {
                continue;
            }
            out.push(Change {
                device: &da.name,
                vector: va.index,
                queue: va
                    .index
                    .checked_sub(dev.pre_vectors)
                    .filter(|q| *q < dev.queue_vectors()),
                a: va.effective_cpu,
                b: vb.effective_cpu,
                a_mask: &va.mask,
                b_mask: &vb.mask,
            });
        }
    }
    out
}

/// Where a vector's CPU or mask sits relative to the node `n` of its CPU under A: a place in
/// node `n + offset` (node numbers wrapping), or a list of its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Place {
    /// The CPU at this position (from 0, ascending) of node n + offset.
    Cpu { position: u32, offset: u32 },
    /// Exactly the CPUs of node n + offset.
    Node(u32),
    /// Anything else, as written.
    Literal(String),
}

impl Place {
    fn text(&self) -> String {
        let node = |offset: u32| match offset {
            0 => "node n".to_string(),
            k => format!("node n+{k}"),
        };
        match self {
            Place::Cpu { position, offset } => format!("#{position} in {}", node(*offset)),
            Place::Node(offset) => node(*offset),
            Place::Literal(s) => s.clone(),
        }
    }
}

/// A folded row's key: the device, whether it moves, and the places of A's CPU, B's CPU, A's
/// mask and B's mask relative to the node of A's CPU.
type FoldKey = (String, bool, [Place; 4]);

/// The per-vector rows folded by node pattern, as the scenario page folds its bullets: the
/// vectors of one device that sit alike in their nodes (A's CPU at the same position of its
/// node n, B's at the same position of node n+k, the masks the same nodes relative to n)
/// become one row when they lie on two nodes or more. Only on a machine whose nodes are 0..N,
/// each with CPUs (else positions would not line up); a vector shut down on a side never
/// folds. Rows keep the order of their first vector.
fn fold_by_node(topo: &Topology, changes: &[Change<'_>]) -> Vec<VectorChangeRow> {
    let nodes: Vec<u32> = topo.nodes_with_cpus().collect();
    let n_nodes = nodes.len() as u32;
    if n_nodes < 2 || nodes.iter().zip(0..).any(|(&n, i)| n != i) {
        return changes.iter().map(Change::row).collect();
    }
    let place_of = |cpu: u32| -> (u32, u32) {
        let node = topo.cpu_to_node(cpu);
        let position = topo.node_cpus(node).iter().take_while(|&c| c < cpu).count() as u32;
        (node, position)
    };
    let relative = |mask: &CpuSet, n: u32| -> Place {
        (0..n_nodes)
            .find(|k| topo.node_cpus((n + k) % n_nodes) == mask)
            .map_or_else(|| Place::Literal(summary::page_cpulist(mask)), Place::Node)
    };
    let key_of = |c: &Change<'_>| -> Option<(FoldKey, u32)> {
        let (n, pa) = place_of(c.a?);
        let (nb, pb) = place_of(c.b?);
        let places = [
            Place::Cpu {
                position: pa,
                offset: 0,
            },
            Place::Cpu {
                position: pb,
                offset: (nb + n_nodes - n) % n_nodes,
            },
            relative(c.a_mask, n),
            relative(c.b_mask, n),
        ];
        Some(((c.device.to_string(), c.moved(), places), n))
    };
    // Each group: its key (none: a row of its own), its changes, the nodes n they lie on.
    let mut groups: Vec<(Option<FoldKey>, Vec<usize>, CpuSet)> = Vec::new();
    let mut index: std::collections::HashMap<FoldKey, usize> = std::collections::HashMap::new();
    for (i, c) in changes.iter().enumerate() {
        match key_of(c) {
            Some((key, n)) => match index.get(&key) {
                Some(&g) => {
                    groups[g].1.push(i);
                    groups[g].2.insert(n);
                }
                None => {
                    index.insert(key.clone(), groups.len());
                    groups.push((Some(key), vec![i], CpuSet::from_cpus([n])));
                }
            },
            None => groups.push((None, vec![i], CpuSet::default())),
        }
    }
    let mut out = Vec::new();
    for (key, members, on) in groups {
        match key {
            Some((device, moved, [a_cpu, b_cpu, a_mask, b_mask])) if on.weight() > 1 => {
                let vectors: CpuSet = members.iter().map(|&i| changes[i].vector).collect();
                let queues: CpuSet = members.iter().filter_map(|&i| changes[i].queue).collect();
                out.push(VectorChangeRow {
                    device,
                    vector: format!("{} on nodes {}", vectors.to_cpulist(), on.to_cpulist()),
                    queue: queues.to_cpulist(),
                    a_cpu: a_cpu.text(),
                    b_cpu: b_cpu.text(),
                    a_mask: a_mask.text(),
                    b_mask: b_mask.text(),
                    moved,
                    folded: true,
                });
            }
            _ => out.extend(members.iter().map(|&i| changes[i].row())),
        }
    }
    out
}

/// Whether every online CPU takes the same load under A and B (IRQs and devices served).
fn loads_equal(run: &CompareRun) -> bool {
    let (a, b) = (&run.a.metrics, &run.b.metrics);
    a.per_cpu.iter().zip(&b.per_cpu).all(|(ca, cb)| {
        ca.counted_irqs(a.basis) == cb.counted_irqs(b.basis)
            && ca.counted_devices(a.basis) == cb.counted_devices(b.basis)
    })
}

/// The compare page's headline: both verdicts and the vectors B moves, or, when every CPU
/// takes the same load on both sides, that sentence; led by an allocation either side's kernel
/// refused ("A and B: q's MSI-X allocation fails with -EINVAL (…); of the vectors placed: …").
fn headline(run: &CompareRun, view: &View, loads_equal: bool, moved: usize, masks_only: usize) -> String {
    let topo = run.a.scenario.topology();
    let overall = if loads_equal {
        summary::equal_loads_line(moved, masks_only)
    } else {
        let plain = |r: &Run| summary::verdict_line(topo, &r.metrics, view.metric);
        summary::compare_line(&plain(&run.a), &plain(&run.b), moved)
    };
    let failed = match [&run.a, &run.b].map(|r| summary::allocation_failures(&r.outcome)) {
        [Some(a), Some(b)] if a == b => Some(format!("A and B: {a}")),
        [Some(a), Some(b)] => Some(format!("A: {a} / B: {b}")),
        [Some(a), None] => Some(format!("A: {a}")),
        [None, Some(b)] => Some(format!("B: {b}")),
        [None, None] => None,
    };
    summary::verdict_after_failures(failed.as_deref(), &overall)
}

/// The compare page. It leads with its headline (both verdicts and the vectors B moves, or,
/// when every CPU takes the same load on both sides, that sentence), then the figures (one
/// heatmap for both sides when the loads are equal) and each side's summary; the per-vector
/// change comes last, folded by node pattern.
pub struct CompareView {
    pub(crate) title: String,
    pub(crate) permalink: String,
    pub(crate) base_permalink: String,
    /// The seed figure this comparison is, when it is one.
    pub(crate) seed: Option<&'static SeedFigure>,
    pub(crate) topology_summary: String,
    pub(crate) sides: Vec<CompareSideView>,
    /// The headline: both verdicts and how many vectors B moves, or (loads equal) that.
    pub(crate) overall: String,
    /// Every online CPU takes the same load under A and B.
    pub(crate) loads_equal: bool,
    pub(crate) diff_svg: String,
    /// The colour scale both heatmaps share, in words, and its maximum.
    pub(crate) scale_line: String,
    pub(crate) scale_max: u32,
    pub(crate) scale: String,
    /// The per-vector table's rows: every vector whose effective CPU or mask differs under B,
    /// folded by node pattern ([`fold_by_node`]), at most as many rows as the scenario page's
    /// vector table shows (`vector_rows_max`).
    pub vector_rows: Vec<VectorChangeRow>,
    /// Rows past that limit, left to the JSON twin.
    pub(crate) rows_left_out: usize,
    /// Some row stands for a vector on each of several nodes (the table says how to read it).
    pub(crate) rows_folded: bool,
    /// Vectors whose effective CPU or mask differs under B.
    pub(crate) changed: usize,
    /// Of those, the vectors that fire on another CPU.
    pub(crate) moved: usize,
    /// Why each side runs the effective-CPU model it runs.
    pub(crate) effective_note: String,
    pub(crate) text: String,
    pub(crate) metric: &'static str,
    pub(crate) metrics: Vec<(&'static str, &'static str)>,
    pub(crate) node: String,
    pub(crate) nodes: Vec<u32>,
    /// Both sides as distributions, when the comparison asks for orders.
    pub(crate) orders: Option<crate::render::orders::OrdersComparePage>,
}

impl CompareView {
    pub fn new(run: &CompareRun, view: &View, origin: &str) -> Result<CompareView, ViewError> {
        CompareView::with_scale(run, view, origin, Scale::Shared)
    }

    pub(crate) fn with_scale(
        run: &CompareRun,
        view: &View,
        origin: &str,
        scale: Scale,
    ) -> Result<CompareView, ViewError> {
        let topo = run.a.scenario.topology();
        let scale_max = match scale {
            Scale::Shared => svg_compare::shared_max(&run.a.metrics, &run.b.metrics, view.metric),
            Scale::Absolute(n) => n,
        };
        let scale_line = scale_line(scale, scale_max, view.metric);
        let changes = vector_changes(run);
        let changed = changes.len();
        let moved = changes.iter().filter(|c| c.moved()).count();
        let mut vector_rows = fold_by_node(topo, &changes);
        let rows_left_out = vector_rows.len().saturating_sub(vector_rows_max(topo));
        vector_rows.truncate(vector_rows_max(topo));
        let effective_note = effective_note(run);
        let side = |r: &Run, label: &str, which: &str| CompareSideView {
            label: label.to_string(),
            verdict: summary::verdict_after_failures(
                summary::allocation_failures(&r.outcome).as_deref(),
                &summary::verdict_line(topo, &r.metrics, view.metric),
            ),
            variant_line: summary::variant_line(&r.scenario),
            kernel_line: format!(
                "kernel: {}",
                summary::range_line(&crate::scenario::kernel::holds_for(&r.scenario, &r.outcome))
            ),
            permalink: r.permalink.clone(),
            devices_line: summary::page_devices_line(topo, &r.metrics),
            irqs_line: summary::page_irqs_line(topo, &r.metrics),
            nodes_line: summary::page_nodes_line(&r.metrics),
            heatmap_svg: svg_compare::heatmap_on_scale(topo, &r.metrics, view.metric, view.node, scale_max, which),
        };
        let sides = vec![side(&run.a, &run.labels[0], "A"), side(&run.b, &run.labels[1], "B")];
        let loads_equal = loads_equal(run);
        let overall = headline(run, view, loads_equal, moved, changed - moved);
        Ok(CompareView {
            title: format!("{} vs {}", run.labels[0], run.labels[1]),
            overall,
            loads_equal,
            seed: seed_of(&SeedTarget::Compare(run.spec.clone())),
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
            rows_folded: vector_rows.iter().any(|r| r.folded),
            vector_rows,
            rows_left_out,
            changed,
            moved,
            effective_note,
            diff_svg: heatmap::diff_heatmap(topo, &run.a.metrics, &run.b.metrics, view.metric, view.node),
            orders: run.orders().map(|o| o.page(&run.labels, &run.a.scenario, view.node)),
            text: run.text_report(origin),
            metric: view.metric.name(),
            metrics: HeatMetric::ALL.iter().map(|h| (h.name(), h.describe())).collect(),
            node: view.node.map_or_else(String::new, |n| n.to_string()),
            nodes: topo.nodes_with_cpus().collect(),
        })
    }
}

/// The line under the heatmaps that says which colour scale both sides share.
fn scale_line(scale: Scale, scale_max: u32, metric: HeatMetric) -> String {
    match scale {
        Scale::Shared => format!(
            "One colour scale for A and B: 0 to {scale_max} {} (the larger maximum of the two), \
             blue up to the ideal",
            metric.describe()
        ),
        Scale::Absolute(n) => format!(
            "One fixed colour scale for A and B: 0 to {n} {}, blue up to the ideal",
            metric.describe()
        ),
    }
}

/// Which effective-CPU model each side ran, and the machine's default.
fn effective_note(run: &CompareRun) -> String {
    let (default_model, why) = crate::catalogue::default_effective(run.a.scenario.topology());
    format!(
        "Effective-CPU model: A {}, B {}; with none named, {} (default {why}).",
        run.a.scenario.effective().name(),
        run.b.scenario.effective().name(),
        default_model.name()
    )
}
