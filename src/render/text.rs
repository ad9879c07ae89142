//! Plain-text reports shaped like the tables reviewers paste into kernel mailing-list replies:
//! at most 72 columns where the data allows, per-CPU rows folded into cpulists of equal values,
//! per-node totals, the summary lines, and the command that reproduces the scenario.

use super::columns::permalink_block;
/// The layout helpers live in [`columns`](super::columns); kept here under their old paths.
pub use super::columns::{command_block, wrap, COLUMNS_MAX};
use super::summary;
use crate::metrics::{Metrics, NodeLoad};
use crate::scenario::request::format_sets;
use crate::scenario::spec::command_words;
use crate::scenario::{Outcome, Scenario};
use crate::topology::{plural, CpuSet, Topology};
use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Debug, Clone, Default)]
pub struct TextOptions {
    /// How the topology is named on the command line (preset name or file path).
    pub topology_label: String,
    /// Include every vector.
    pub vectors: bool,
    /// A permalink, printed last on its own line.
    pub permalink: Option<String>,
    /// The probe orders and counter starts the report stands for (`--orders all --counter
    /// 0..3`), said by the command in place of its `--counter N`; `None` for one run.
    pub orders_flags: Option<String>,
}

/// The full single-scenario report.
pub(crate) fn report(scenario: &Scenario, outcome: &Outcome, m: &Metrics, opts: &TextOptions) -> String {
    let topo = scenario.topology();
    let mut out = String::new();
    let n_dev = scenario.devices().len();
    out.push_str(&wrap(
        &format!(
            "{}, {n_dev} device{}, {}, {}",
            topo.name(),
            plural(n_dev),
            scenario.variant_name(),
            scenario.effective().name()
        ),
        "irqscope: ",
        "  ",
    ));
    command_block(
        &with_orders(command_words(scenario, &opts.topology_label), opts),
        &mut out,
    );
    out.push('\n');
    models_block(scenario, outcome, &mut out);
    out.push_str(&wrap(
        &format!(
            "{}: {} IRQ{} on {} online CPU{}",
            m.basis.describe(),
            m.irqs_total,
            plural(m.irqs_total as usize),
            m.ideal.cpus_online,
            plural(m.ideal.cpus_online as usize)
        ),
        "counted:  ",
        "          ",
    ));
    out.push('\n');
    out.push_str("Summary\n");
    // A refused allocation leads: the loads below are only what was placed without it.
    for line in summary::failure_lines(scenario, outcome) {
        out.push_str(&wrap(&line, "  ", "    "));
    }
    summary_block(m, &mut out);
    out.push('\n');
    per_cpu_table(m, &mut out);
    out.push('\n');
    per_node_table(&m.per_node, &mut out);
    out.push('\n');
    devices_block(scenario, outcome, opts.vectors, &mut out);
    let warnings: Vec<_> = outcome.warnings().collect();
    if !warnings.is_empty() {
        out.push_str("\nKernel warnings (the kernel would WARN or misbehave here)\n");
        for (device, w) in warnings {
            out.push_str(&wrap(&format!("{device}: {w}"), "  ", "    "));
        }
    }
    if crate::render::vector_space::shown(scenario, outcome) {
        crate::render::vector_space::text_block(scenario, outcome, &mut out);
    }
    permalink_block(opts.permalink.as_deref(), &mut out);
    out
}

/// The report's head lines: the machine, then which models ran (variant, masks, counter,
/// sort, effective CPU) and the kernel releases they hold for.
fn models_block(scenario: &Scenario, outcome: &Outcome, out: &mut String) {
    let topo = scenario.topology();
    out.push_str(&wrap(&topo.summary(), "machine:  ", "          "));
    for note in summary::machine_notes(topo) {
        out.push_str(&wrap(&note, "          ", "          "));
    }
    out.push_str(&wrap(
        &format!("{}: {}", scenario.variant_name(), scenario.variant_describe()),
        "variant:  ",
        "          ",
    ));
    if let Some(p) = scenario.proposal() {
        out.push_str(&wrap(
            &format!("{}: {}", p.name(), p.describe()),
            "masks:    ",
            "          ",
        ));
        out.push_str(&wrap(&format!("cost: {}", p.cost()), "          ", "          "));
    }
    if scenario.variant_uses_counter() {
        let _ = writeln!(
            out,
            "counter:  {} at start, {} after",
            scenario.spread_counter(),
            outcome.spread_counter_after
        );
    }
    let _ = writeln!(
        out,
        "sort:     {} ({}); effective CPU: {}",
        scenario.sort().name(),
        scenario.sort().kernels(),
        scenario.effective().name()
    );
    out.push_str(&wrap(
        &summary::irqchip_line(scenario.effective(), topo),
        "irqchip:  ",
        "          ",
    ));
    out.push_str(&wrap(
        &summary::range_line(&crate::scenario::kernel::holds_for(scenario, outcome)),
        "kernel:   ",
        "          ",
    ));
}

fn summary_block(m: &Metrics, out: &mut String) {
    out.push_str(&wrap(&summary::devices_line(m), "  ", "    "));
    out.push_str(&wrap(&summary::irqs_line(m), "  ", "    "));
    out.push_str(&wrap(
        &format!(
            "IRQs/CPU: max {} min {} (ideal max {}); devices/CPU: max {} min {} (ideal max {})",
            m.irqs_per_cpu_max,
            m.irqs_per_cpu_min,
            m.ideal.irqs_per_cpu_max,
            m.devices_per_cpu_max,
            m.devices_per_cpu_min,
            m.ideal.devices_per_cpu_max
        ),
        "  ",
        "    ",
    ));
    let hot_cpus = m.per_cpu.iter().filter(|c| c.hot_irqs > 0).count();
    out.push_str(&wrap(
        &format!(
            "hot (single-CPU) IRQs: {} on {hot_cpus} CPU{}, at most {} on one CPU",
            m.hot_irqs_total,
            plural(hot_cpus),
            m.hot_irqs_per_cpu_max
        ),
        "  ",
        "    ",
    ));
    let idle = m.cpus_idle.weight();
    // The idle CPUs' list is left out when the lines above already name exactly that group.
    let by_devices = m.group_online(|c| c.counted_devices(m.basis));
    let listed =
        by_devices.len() <= summary::PARTS_SHOWN_MAX && by_devices.iter().any(|(v, s)| *v == 0 && *s == m.cpus_idle);
    let busy: CpuSet = m
        .per_cpu
        .iter()
        .filter(|c| c.online && c.counted_irqs(m.basis) > 0)
        .map(|c| c.cpu)
        .collect();
    let used = format!(
        "{} CPU{} take IRQs{}; ",
        busy.weight(),
        plural(busy.weight() as usize),
        summary::per_node_note(m, &busy)
    );
    let idle_text = match (idle, listed) {
        (0, _) => "every online CPU takes an IRQ".to_string(),
        (_, true) => format!(
            "{used}{idle} online CPU{} take none (listed above)",
            plural(idle as usize)
        ),
        (_, false) => format!(
            "{used}{idle} online CPU{} take no IRQ: {}",
            plural(idle as usize),
            m.cpus_idle
        ),
    };
    out.push_str(&wrap(&idle_text, "  ", "    "));
    if m.vectors_shut_down > 0 {
        let _ = writeln!(
            out,
            "  {} managed vectors shut down (no online CPU in their mask)",
            m.vectors_shut_down
        );
    }
    out.push_str(&wrap(&summary::nodes_line(m), "  ", "    "));
}

fn per_cpu_table(m: &Metrics, out: &mut String) {
    out.push_str("Per CPU (CPUs with equal rows folded)\n");
    out.push_str("   IRQs  managed  devices  hot  CPUs\n");
    let mut rows: BTreeMap<(u32, u32, u32, u32, bool), CpuSet> = BTreeMap::new();
    for c in &m.per_cpu {
        rows.entry((c.irqs, c.managed_irqs, c.counted_devices(m.basis), c.hot_irqs, c.online))
            .or_default()
            .insert(c.cpu);
    }
    let mut ordered: Vec<_> = rows.into_iter().collect();
    ordered.sort_by_key(|(_, cpus)| cpus.first());
    for ((irqs, managed, devices, hot, online), cpus) in ordered {
        let lead = format!("  {irqs:>5}  {managed:>7}  {devices:>7}  {hot:>3}  ");
        let mut list = format!("{cpus} ({})", cpus.weight());
        if !online {
            list.push_str(" offline");
        }
        out.push_str(&wrap(&list, &lead, &" ".repeat(lead.len())));
    }
}

fn per_node_table(nodes: &[NodeLoad], out: &mut String) {
    out.push_str("Per node\n");
    out.push_str("   node  CPUs  IRQs  fair share  hot\n");
    for n in nodes {
        let _ = writeln!(
            out,
            "  {:>5}  {:>4}  {:>4}  {:>10}  {:>3}",
            n.node,
            n.cpus_online,
            n.irqs,
            summary::milli(n.fair_share_milli),
            n.hot_irqs
        );
    }
}

fn devices_block(scenario: &Scenario, outcome: &Outcome, vectors: bool, out: &mut String) {
    out.push_str("Devices\n");
    for (dev, res) in scenario.devices().iter().zip(&outcome.devices) {
        let facts = match (dev.driver, &res.mana) {
            (crate::scenario::Driver::Mana { patched, mode }, Some(o)) => {
                mana_facts(scenario, dev, res, o, (patched, mode))
            }
            _ => device_facts(dev, res),
        };
        out.push_str(&wrap(&facts.join(", "), &format!("  {}: ", res.name), "    "));
        if vectors {
            vector_table(res, out);
        }
    }
}

/// "fires on 17 CPUs (0,38,…)".
fn fires_on(res: &crate::scenario::DeviceOutcome) -> String {
    let cpus: CpuSet = res.vectors.iter().filter_map(|v| v.effective_cpu).collect();
    format!(
        "fires on {} CPU{} ({cpus})",
        cpus.weight(),
        plural(cpus.weight() as usize)
    )
}

/// A MANA NIC's facts: driver version, vectors used, spread, where it fires, queue balance.
fn mana_facts(
    scenario: &Scenario,
    dev: &crate::scenario::Device,
    res: &crate::scenario::DeviceOutcome,
    o: &crate::kernel::mana::ManaOutcome,
    (patched, mode): (bool, crate::kernel::mana::MsixMode),
) -> Vec<String> {
    let q = &o.queue_irqs_per_cpu;
    vec![
        format!(
            "MANA ({}, {} MSI-X)",
            if patched { "patched" } else { "unpatched" },
            crate::scenario::spec::msix_mode_name(mode)
        ),
        format!(
            "{} of {} vector{} used (HWC + {} queue{})",
            o.num_msix_usable,
            dev.vectors,
            plural(dev.vectors as usize),
            o.queue_irq_count,
            plural(o.queue_irq_count as usize)
        ),
        format!("{} spread", o.setup_fn.as_str()),
        fires_on(res),
        format!(
            "queue IRQs per CPU max {} min {}",
            q.iter().max().unwrap_or(&0),
            q.iter()
                .zip(0u32..)
                .filter(|(_, c)| scenario.topology().online().contains(*c))
                .map(|(n, _)| *n)
                .min()
                .unwrap_or(0)
        ),
    ]
}

/// A device's facts: vectors, pre/post, sets, managed, offsets, where it fires, blk-mq.
fn device_facts(dev: &crate::scenario::Device, res: &crate::scenario::DeviceOutcome) -> Vec<String> {
    let managed = res.vectors.iter().filter(|v| v.managed).count();
    let mut facts = vec![format!("{} vector{}", dev.vectors, plural(dev.vectors as usize))];
    for (n, what) in [(dev.pre_vectors, "pre"), (dev.post_vectors, "post")] {
        if n > 0 {
            facts.push(format!("{n} {what}"));
        }
    }
    if let Some(sets) = &dev.sets {
        facts.push(format!("sets {}", format_sets(sets)));
    }
    facts.push(if res.affinity_null {
        "no affinity masks".into()
    } else {
        format!("{managed} managed")
    });
    if let Some(f) = res.alloc_failed {
        facts.push(f.to_string());
    }
    if let Some(admin) = res.admin_spread_offsets.as_ref().filter(|a| !a.is_empty()) {
        let offs: Vec<String> = admin.iter().map(u32::to_string).collect();
        facts.push(format!("admin tag set offset {}", offs.join(",")));
    }
    if !res.spread_offsets.is_empty() {
        let offs: Vec<String> = res.spread_offsets.iter().map(u32::to_string).collect();
        facts.push(format!("offset {}", offs.join(",")));
    }
    facts.push(fires_on(res));
    if let Some(map) = &res.blk_mq_map {
        let queues: std::collections::BTreeSet<u32> = map.iter().flatten().copied().collect();
        facts.push(format!("blk-mq uses {} queue{}", queues.len(), plural(queues.len())));
    }
    facts
}

/// Every vector of a device: index, managed, effective CPU, mask.
fn vector_table(res: &crate::scenario::DeviceOutcome, out: &mut String) {
    out.push_str("    vec  managed  effective  mask\n");
    for v in &res.vectors {
        let eff = v.effective_cpu.map_or("off".to_string(), |c| c.to_string());
        let lead = format!(
            "    {:>3}  {:>7}  {:>9}  ",
            v.index,
            if v.managed { "yes" } else { "no" },
            eff
        );
        out.push_str(&wrap(&v.mask.to_cpulist(), &lead, &" ".repeat(lead.len())));
    }
}

/// One side of a comparison.
pub(crate) struct Side<'a> {
    pub(crate) label: String,
    pub(crate) scenario: &'a Scenario,
    pub(crate) outcome: &'a Outcome,
    pub(crate) metrics: &'a Metrics,
}

/// Two runs of the same machine and devices side by side, with the per-CPU difference.
pub(crate) fn compare_report(a: &Side<'_>, b: &Side<'_>, opts: &TextOptions) -> String {
    let mut out = wrap(a.scenario.topology().name(), "irqscope compare: ", "  ");
    let mut words = compare_command_words(a.scenario, b.scenario, &opts.topology_label);
    if let Some(flags) = &opts.orders_flags {
        words.push(flags.clone());
    }
    command_block(&words, &mut out);
    out.push_str(&wrap(&a.label, "A: ", "   "));
    command_block(
        &with_orders(command_words(a.scenario, &opts.topology_label), opts),
        &mut out,
    );
    out.push_str(&wrap(&b.label, "B: ", "   "));
    command_block(
        &with_orders(command_words(b.scenario, &opts.topology_label), opts),
        &mut out,
    );
    for (side, s) in [("A", a), ("B", b)] {
        out.push_str(&wrap(
            &summary::range_line(&crate::scenario::kernel::holds_for(s.scenario, s.outcome)),
            &format!("kernel {side}: "),
            "          ",
        ));
    }
    // A side whose allocation the kernel refuses says so before any figure.
    for (side, s) in [("A", a), ("B", b)] {
        if let Some(f) = summary::allocation_failures(s.outcome) {
            out.push_str(&wrap(&f, &format!("fails {side}:  "), "          "));
        }
    }
    out.push('\n');
    compare_table(a.metrics, b.metrics, &mut out);
    out.push('\n');
    out.push_str(&wrap(&summary::devices_line(a.metrics), "  A: ", "     "));
    out.push_str(&wrap(&summary::devices_line(b.metrics), "  B: ", "     "));
    out.push('\n');
    out.push_str("Per-CPU change, B - A (counted IRQs; CPUs folded)\n");
    let (ma, mb) = (a.metrics, b.metrics);
    let mut delta: BTreeMap<i64, CpuSet> = BTreeMap::new();
    for (ca, cb) in ma.per_cpu.iter().zip(&mb.per_cpu) {
        let d = i64::from(cb.counted_irqs(mb.basis)) - i64::from(ca.counted_irqs(ma.basis));
        delta.entry(d).or_default().insert(ca.cpu);
    }
    for (d, cpus) in delta {
        let lead = format!("  {d:>+5}  ");
        out.push_str(&wrap(
            &format!("{cpus} ({})", cpus.weight()),
            &lead,
            &" ".repeat(lead.len()),
        ));
    }
    vector_changes(a.outcome, b.outcome, a.scenario, &mut out);
    permalink_block(opts.permalink.as_deref(), &mut out);
    out
}

/// Widest value in a column of the compare table; a longer one (the IRQs of many nodes) is
/// written under the table instead.
const COMPARE_CELL_CHARS_MAX: usize = 20;

/// The two sides' figures in a table, A and B side by side.
fn compare_table(ma: &Metrics, mb: &Metrics, out: &mut String) {
    let row = |a: u32, b: u32| (a.to_string(), b.to_string());
    let rows: Vec<(&str, (String, String))> = vec![
        ("IRQs/CPU max", row(ma.irqs_per_cpu_max, mb.irqs_per_cpu_max)),
        ("IRQs/CPU min", row(ma.irqs_per_cpu_min, mb.irqs_per_cpu_min)),
        ("  ideal max", row(ma.ideal.irqs_per_cpu_max, mb.ideal.irqs_per_cpu_max)),
        ("devices/CPU max", row(ma.devices_per_cpu_max, mb.devices_per_cpu_max)),
        ("devices/CPU min", row(ma.devices_per_cpu_min, mb.devices_per_cpu_min)),
        (
            "  ideal max",
            row(ma.ideal.devices_per_cpu_max, mb.ideal.devices_per_cpu_max),
        ),
        (
            "gap to ideal (IRQs)",
            (
                gap(ma.irqs_per_cpu_max, ma.ideal.irqs_per_cpu_max),
                gap(mb.irqs_per_cpu_max, mb.ideal.irqs_per_cpu_max),
            ),
        ),
        ("CPUs taking no IRQ", row(ma.cpus_idle.weight(), mb.cpus_idle.weight())),
        ("CPUs with hot IRQs", row(hot_cpus(ma) as u32, hot_cpus(mb) as u32)),
        (
            "hot IRQs max/CPU",
            row(ma.hot_irqs_per_cpu_max, mb.hot_irqs_per_cpu_max),
        ),
        ("IRQs per node", (nodes(ma), nodes(mb))),
    ];
    let _ = writeln!(out, "  {:<22} {:>20} {:>20}", "", "A", "B");
    let mut long = Vec::new();
    for (name, (va, vb)) in rows {
        if va.len() > COMPARE_CELL_CHARS_MAX || vb.len() > COMPARE_CELL_CHARS_MAX {
            long.push((name, va, vb));
            continue;
        }
        let _ = writeln!(out, "  {name:<22} {va:>20} {vb:>20}");
    }
    for (name, va, vb) in long {
        let _ = writeln!(out, "  {name}:");
        out.push_str(&wrap(&va, "    A: ", "       "));
        out.push_str(&wrap(&vb, "    B: ", "       "));
    }
}

/// Rows of the per-vector difference printed per device before the rest is counted only.
pub(crate) const VECTOR_CHANGES_SHOWN_MAX: usize = 32;

/// One vector whose effective CPU differs between the two sides of a comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VectorChange {
    pub(crate) device: String,
    /// The vector's index within its device.
    pub(crate) vector: u32,
    /// Its blk-mq hardware queue (the vector's place among the device's queue vectors), when
    /// it is one.
    pub(crate) queue: Option<u32>,
    pub(crate) a: Option<u32>,
    pub(crate) b: Option<u32>,
}

/// Every vector whose effective CPU differs between `a` and `b`, in device then vector order.
/// Both sides run the same devices, so vectors pair by position.
pub(crate) fn vector_changes_list(a: &Outcome, b: &Outcome, scenario: &Scenario) -> Vec<VectorChange> {
    let mut changes = Vec::new();
    for ((da, db), dev) in a.devices.iter().zip(&b.devices).zip(scenario.devices()) {
        for (va, vb) in da.vectors.iter().zip(&db.vectors) {
            if va.effective_cpu != vb.effective_cpu {
                let queue = va
                    .index
                    .checked_sub(dev.pre_vectors)
                    .filter(|q| *q < dev.queue_vectors());
                changes.push(VectorChange {
                    device: da.name.clone(),
                    vector: va.index,
                    queue,
                    a: va.effective_cpu,
                    b: vb.effective_cpu,
                });
            }
        }
    }
    changes
}

/// The per-vector section: which vectors fire on another CPU under B, and the blk-mq
/// hardware queues whose CPUs differ.
fn vector_changes(a: &Outcome, b: &Outcome, scenario: &Scenario, out: &mut String) {
    let changes = vector_changes_list(a, b, scenario);
    out.push('\n');
    if changes.is_empty() {
        out.push_str("Per-vector change: every vector fires on the same CPU\n");
    } else {
        out.push_str("Per-vector change, effective CPU A -> B\n");
        let cpu = |c: Option<u32>| c.map_or("off".to_string(), |c| c.to_string());
        for (da, dev) in a.devices.iter().zip(scenario.devices()) {
            let mine: Vec<&VectorChange> = changes.iter().filter(|c| c.device == da.name).collect();
            if mine.is_empty() {
                continue;
            }
            let _ = writeln!(
                out,
                "  {}: {} of {} vector{} moved",
                da.name,
                mine.len(),
                dev.vectors,
                plural(dev.vectors as usize)
            );
            for c in mine.iter().take(VECTOR_CHANGES_SHOWN_MAX) {
                let queue = c.queue.map_or(String::new(), |q| format!("queue {q}"));
                let _ = writeln!(
                    out,
                    "    vec {:>4}  {queue:<10}  {:>5} -> {}",
                    c.vector,
                    cpu(c.a),
                    cpu(c.b)
                );
            }
            if mine.len() > VECTOR_CHANGES_SHOWN_MAX {
                let _ = writeln!(out, "    ... {} more", mine.len() - VECTOR_CHANGES_SHOWN_MAX);
            }
        }
    }
    for (da, db) in a.devices.iter().zip(&b.devices) {
        let (Some(ma), Some(mb)) = (&da.blk_mq_map, &db.blk_mq_map) else {
            continue;
        };
        let by_queue = |map: &[Option<u32>]| {
            let mut q: BTreeMap<u32, CpuSet> = BTreeMap::new();
            for (cpu, queue) in map.iter().enumerate() {
                if let Some(queue) = queue {
                    q.entry(*queue).or_default().insert(cpu as u32);
                }
            }
            q
        };
        let (qa, qb) = (by_queue(ma), by_queue(mb));
        let queues: std::collections::BTreeSet<u32> = qa.keys().chain(qb.keys()).copied().collect();
        let text = |m: &BTreeMap<u32, CpuSet>, q: &u32| m.get(q).map(|c| c.to_string());
        let differ: Vec<u32> = queues.into_iter().filter(|q| text(&qa, q) != text(&qb, q)).collect();
        if differ.is_empty() {
            let _ = writeln!(out, "  {} blk-mq map: the same under A and B", da.name);
            continue;
        }
        let _ = writeln!(
            out,
            "  {} blk-mq map: {} queue{} differ",
            da.name,
            differ.len(),
            plural(differ.len())
        );
        for q in differ.iter().take(VECTOR_CHANGES_SHOWN_MAX) {
            let show = |m: &BTreeMap<u32, CpuSet>| m.get(q).map_or("none".to_string(), |c| c.to_string());
            let lead = format!("    queue {q:>4}  ");
            out.push_str(&wrap(
                &format!("{} -> {}", show(&qa), show(&qb)),
                &lead,
                &" ".repeat(lead.len()),
            ));
        }
        if differ.len() > VECTOR_CHANGES_SHOWN_MAX {
            let _ = writeln!(out, "    ... {} more", differ.len() - VECTOR_CHANGES_SHOWN_MAX);
        }
    }
}

/// The `irqscope compare …` command that reproduces a comparison: `a`'s machine, devices,
/// proposal and boot parameters, then every name of each side spelled out (no default
/// involved, so the command means the same whatever later defaults become).
/// A scenario's command with its `--counter N` replaced by the orders and counter starts the
/// report stands for, when it stands for a distribution.
fn with_orders(mut words: Vec<String>, opts: &TextOptions) -> Vec<String> {
    if let Some(flags) = &opts.orders_flags {
        if let Some(counter) = words.iter_mut().find(|w| w.starts_with("--counter ")) {
            *counter = flags.clone();
        }
    }
    words
}

pub(crate) fn compare_command_words(a: &Scenario, b: &Scenario, topology: &str) -> Vec<String> {
    let side_flags = ["--variant ", "--sort ", "--effective ", "--counter "];
    let mut words: Vec<String> = command_words(a, topology)
        .into_iter()
        .filter(|w| !side_flags.iter().any(|f| w.starts_with(f)))
        .collect();
    words[1] = "compare".into();
    for (side, s) in [("a", a), ("b", b)] {
        words.push(format!("--{side} {}", s.variant_name()));
        words.push(format!("--{side}-sort {}", s.sort().name()));
        words.push(format!("--{side}-effective {}", s.effective().name()));
        words.push(format!("--{side}-counter {}", s.spread_counter()));
    }
    words
}

fn gap(max: u32, ideal: u32) -> String {
    format!("{:+}", i64::from(max) - i64::from(ideal))
}

fn hot_cpus(m: &Metrics) -> usize {
    m.per_cpu.iter().filter(|c| c.hot_irqs > 0).count()
}

/// IRQs per node, "186/186"; every node the same: "64 x 16"; many nodes: separated by spaces
/// (the table then writes them under it, wrapped).
fn nodes(m: &Metrics) -> String {
    let counts: Vec<String> = m.per_node.iter().map(|n| n.irqs.to_string()).collect();
    if counts.len() > 2 && counts.windows(2).all(|w| w[0] == w[1]) {
        return format!("{} x {}", counts.len(), counts[0]);
    }
    let joined = counts.join("/");
    if joined.len() <= COMPARE_CELL_CHARS_MAX {
        joined
    } else {
        counts.join(" ")
    }
}

/// A blk-mq queue map as text, under the variant given by name (a model's, or `c:NAME`).
pub(crate) fn queue_map_report_named(
    topo: &Topology,
    mapper: crate::kernel::blk_mq_cpumap::Mapper,
    variant: &str,
    nr_queues: u32,
    queue_offset: u32,
    map: &[Option<u32>],
) -> String {
    let mut out = String::new();
    let via = if mapper.uses_group_cpus() {
        format!(" over {variant}")
    } else {
        String::new()
    };
    out.push_str(&wrap(
        &format!(
            "blk-mq {}{via}: {nr_queues} queue{} on {}",
            mapper.name(),
            plural(nr_queues as usize),
            topo.summary()
        ),
        "",
        "  ",
    ));
    let mut by_queue: BTreeMap<u32, CpuSet> = BTreeMap::new();
    for (cpu, q) in map.iter().enumerate() {
        if let Some(q) = q {
            by_queue.entry(*q).or_default().insert(cpu as u32);
        }
    }
    out.push_str("   queue  CPUs\n");
    for (q, cpus) in &by_queue {
        let lead = format!("  {q:>6}  ");
        out.push_str(&wrap(
            &format!("{cpus} ({})", cpus.weight()),
            &lead,
            &" ".repeat(lead.len()),
        ));
    }
    let expected: CpuSet = (queue_offset..queue_offset.saturating_add(nr_queues)).collect();
    let used: CpuSet = by_queue.keys().copied().collect();
    let unmapped = expected.andnot(&used);
    out.push_str(&wrap(
        &format!(
            "{} of {nr_queues} queue{} {} CPUs{}",
            used.and_weight(&expected),
            plural(nr_queues as usize),
            if used.and_weight(&expected) == 1 { "has" } else { "have" },
            if unmapped.is_empty() {
                String::new()
            } else {
                format!("; unmapped queues: {unmapped}")
            }
        ),
        "",
        "  ",
    ));
    out
}
