//! The one-line summaries reviewers write by hand, from [`Metrics`]: "28 CPUs (34-47,82-95)
//! serve all 6 devices; 68 CPUs (0-33,48-81) serve 3". The mail text, the JSON view and the
//! pages print the same sentences. Also the page headlines naming the ideal and the variant;
//! the lines that name an answer's assumptions (kernel releases, the kernel's view of the
//! machine, the effective-CPU model) are [`assumptions`].

use crate::metrics::{CpuLoad, Metrics};
use crate::render::svg::HeatMetric;
use crate::scenario::{AllocFailure, Outcome, Scenario};
use crate::topology::{plural, CpuSet, Topology};

mod assumptions;
pub(crate) use assumptions::{effective_line, irqchip_line, machine_notes, variant_line};
pub use assumptions::{range_json, range_line};

/// Why a CPU has the vectors the scenario gives it: "201 vectors per CPU (window 0x20-0xea
/// less IA32_SYSCALL_VECTOR (0x80) and the legacy PIC's cascade (0x32))".
pub(crate) fn vectors_per_cpu_line(scenario: &Scenario) -> String {
    use crate::kernel::release;
    let pick = scenario.kernel_pick();
    let n = pick.vectors();
    let pic = scenario.topology().legacy_pic().unwrap_or(false);
    let window = match pick.release() {
        Some(r) => Some(release::generation(r).window),
        None if pick.vectors_per_cpu.is_some() => Some(release::generation(release::NEWEST).window),
        None => release::VECTOR_WINDOWS
            .iter()
            .map(|w| w.model)
            .find(|w| w.vectors_per_cpu(false) == n && !w.move_cleanup_vector),
    };
    let why = match window {
        Some(w) if w.vectors_per_cpu(pic) == n => w.describe(pic),
        Some(w) if pick.vectors_per_cpu.is_none() && w.vectors_per_cpu(false) == n => {
            format!("{}; a scenario that names no count keeps it", w.describe(false))
        }
        _ => "as given".into(),
    };
    format!("{n} vectors per CPU ({why})")
}

/// The sentences for vectors the kernel refused, for the summary: "ENOSPC: 680 vectors of 76
/// devices got none, first dev180 vector 1; 201 vectors per CPU (…)" and one for each device
/// whose allocation `alloc_descs()` refused. Empty when nothing failed.
pub(crate) fn failure_lines(scenario: &Scenario, outcome: &Outcome) -> Vec<String> {
    let mut out = Vec::new();
    let vs = &outcome.vector_space;
    // The matrix's refusals; a device refused by alloc_descs() has its own line below.
    let nospc: Vec<_> = vs.matrix_failures().collect();
    if let Some(first) = nospc.first() {
        let devices: std::collections::BTreeSet<&str> = nospc.iter().map(|f| f.device.as_str()).collect();
        let n = nospc.len();
        out.push(format!(
            "ENOSPC: {n} vector{} of {} device{} got none, first {} vector {}; {}",
            plural(n),
            devices.len(),
            plural(devices.len()),
            first.device,
            first.vector,
            vectors_per_cpu_line(scenario)
        ));
    }
    for d in outcome.devices.iter().filter(|d| d.alloc_failed.is_some()) {
        if let Some(f) = d.alloc_failed {
            out.push(format!(
                "EINVAL: {}: {f} ({} masks)",
                d.name,
                scenario.kernel_pick().affinity_era().name()
            ));
        }
    }
    out
}

/// The allocations the kernel refused, in a few words, for the head of a verdict: "q's MSI-X
/// allocation fails with -EINVAL (vector 9's affinity mask is empty)", "680 vectors of 76
/// devices get none (-ENOSPC), first dev180 vector 1". `None` when every allocation
/// succeeded. [`failure_lines`] gives the same failures in full for the summary.
pub(crate) fn allocation_failures(outcome: &Outcome) -> Option<String> {
    let mut parts = Vec::new();
    let refused: Vec<_> = outcome
        .devices
        .iter()
        .filter_map(|d| d.alloc_failed.map(|f| (d.name.as_str(), f)))
        .collect();
    match refused.as_slice() {
        [] => {}
        [(name, AllocFailure::EmptyMask { vector })] => parts.push(format!(
            "{name}'s MSI-X allocation fails with -EINVAL (vector {vector}'s affinity mask is empty)"
        )),
        many => {
            let names: Vec<&str> = many.iter().map(|(name, _)| *name).collect();
            let listed = match names.len() > PARTS_SHOWN_MAX {
                true => format!(
                    "{}, … {} more",
                    names[..PARTS_SHOWN_MAX - 1].join(", "),
                    names.len() + 1 - PARTS_SHOWN_MAX
                ),
                false => names.join(", "),
            };
            parts.push(format!(
                "the MSI-X allocations of {} devices ({listed}) fail with -EINVAL (an affinity mask is empty)",
                many.len()
            ))
        }
    }
    // The matrix's refusals, by error number (-ENOSPC, or -EINVAL for an empty search mask).
    let mut by_errno: std::collections::BTreeMap<&str, Vec<_>> = std::collections::BTreeMap::new();
    for f in outcome.vector_space.matrix_failures() {
        by_errno.entry(f.error.errno()).or_default().push(f);
    }
    for (errno, failures) in by_errno.iter().rev() {
        let devices: std::collections::BTreeSet<&str> = failures.iter().map(|f| f.device.as_str()).collect();
        let n = failures.len();
        let first = failures[0];
        parts.push(format!(
            "{n} vector{} of {} device{} get{} none (-{errno}), first {} vector {}",
            plural(n),
            devices.len(),
            plural(devices.len()),
            if n == 1 { "s" } else { "" },
            first.device,
            first.vector
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// A verdict led by the allocations that failed, when any did: the failure first, then what
/// the placed vectors give ("q's MSI-X allocation fails with -EINVAL (…); of the vectors
/// placed: max 0 = ideal, …"). Unchanged when nothing failed.
pub(crate) fn verdict_after_failures(failures: Option<&str>, verdict: &str) -> String {
    match failures {
        Some(f) => {
            // A sentence ("Per-CPU loads are …") continues after the colon in lower case.
            // (An initialism such as "CPUs" keeps its capitals.)
            let mut chars = verdict.chars();
            let rest: String = match (chars.next(), verdict.chars().nth(1)) {
                (Some(c), Some(d)) if d.is_lowercase() => c.to_lowercase().chain(chars).collect(),
                _ => verdict.to_string(),
            };
            bounded(format!("{f}; of the vectors placed: {rest}"))
        }
        None => verdict.to_string(),
    }
}

/// Most parts of a sentence shown; the middle ones are folded into a count.
pub(crate) const PARTS_SHOWN_MAX: usize = 4;

/// "28 CPUs (34-47,82-95) serve all 6 devices; 68 CPUs (0-33,48-81) serve 3".
pub(crate) fn devices_line(m: &Metrics) -> String {
    fold_parts(devices_parts(
        m,
        &m.group_online(|c| c.counted_devices(m.basis)),
        &|s| format!("({s})"),
    ))
}

/// The parts of [`devices_line`], each group's CPUs written by `list`.
fn devices_parts(m: &Metrics, groups: &[(u32, CpuSet)], list: &dyn Fn(&CpuSet) -> String) -> Vec<String> {
    groups
        .iter()
        .rev()
        .enumerate()
        .map(|(i, (value, cpus))| {
            let n = cpus.weight();
            let what = if i == 0 {
                if *value == 2 && m.devices_total == 2 && m.devices_total == m.devices_asked {
                    "serve both devices".to_string()
                } else if *value == m.devices_total && m.devices_total > 1 && m.devices_total == m.devices_asked {
                    format!("serve all {value} devices")
                } else if *value == 0 && m.devices_total == 0 && m.devices_asked > 0 {
                    format!(
                        "serve none of the {} device{}",
                        m.devices_asked,
                        plural(m.devices_asked as usize)
                    )
                } else if *value == m.devices_total && m.devices_total < m.devices_asked {
                    format!("serve {value} of the {} devices", m.devices_asked)
                } else {
                    format!(
                        "serve{} {value} device{}",
                        if n == 1 { "s" } else { "" },
                        plural(*value as usize)
                    )
                }
            } else {
                format!("serve{} {value}", if n == 1 { "s" } else { "" })
            };
            format!("{n} CPU{} {} {what}", plural(n as usize), list(cpus))
        })
        .collect()
}

/// "32 CPUs (...) get 3 IRQs; 16 CPUs (...) get 6" (the seed-000 thread's own sentence, so
/// its lists stay even where they are the devices line's).
pub(crate) fn irqs_line(m: &Metrics) -> String {
    fold_parts(irqs_parts(&m.group_online(|c| c.counted_irqs(m.basis)), &|s| {
        format!("({s})")
    }))
}

/// The parts of [`irqs_line`], each group's CPUs written by `list`.
fn irqs_parts(groups: &[(u32, CpuSet)], list: &dyn Fn(&CpuSet) -> String) -> Vec<String> {
    groups
        .iter()
        .enumerate()
        .map(|(i, (value, cpus))| {
            let n = cpus.weight();
            let unit = if i == 0 {
                format!(" IRQ{}", plural(*value as usize))
            } else {
                String::new()
            };
            format!(
                "{n} CPU{} {} get{} {value}{unit}",
                plural(n as usize),
                list(cpus),
                if n == 1 { "s" } else { "" }
            )
        })
        .collect()
}

/// "per node: 36 36 30 30 30 30 IRQs (fair share 32)".
pub(crate) fn nodes_line(m: &Metrics) -> String {
    let counts: Vec<String> = m.per_node.iter().map(|n| n.irqs.to_string()).collect();
    let shares: Vec<u64> = m.per_node.iter().map(|n| n.fair_share_milli).collect();
    let share = if shares.windows(2).all(|w| w[0] == w[1]) {
        format!("fair share {}", milli(shares.first().copied().unwrap_or(0)))
    } else {
        format!(
            "fair shares {}",
            shares.iter().map(|&s| milli(s)).collect::<Vec<_>>().join(" ")
        )
    };
    // One node: "1 IRQ"; a list of counts keeps the plural unit after it.
    let unit = match m.per_node[..] {
        [ref one] => format!("IRQ{}", plural(one.irqs as usize)),
        _ => "IRQs".into(),
    };
    format!("per node: {} {unit} ({share})", counts.join(" "))
}

/// "ideal: at most 32 IRQs and 2 devices per CPU (managed (queue) vectors)".
pub(crate) fn ideal_line(m: &Metrics) -> String {
    let (irqs, devices) = (m.ideal.irqs_per_cpu_max, m.ideal.devices_per_cpu_max);
    format!(
        "ideal: at most {irqs} IRQ{} and {devices} device{} per CPU ({})",
        plural(irqs as usize),
        plural(devices as usize),
        m.basis.describe()
    )
}

/// The first words of a verdict ("max 6 devices on a CPU (ideal 4)", "max 4 = ideal"): the
/// number and the bound, without the CPU lists.
fn verdict_head(verdict: &str) -> &str {
    let cut = verdict
        .find(": ")
        .or_else(|| verdict.find(", "))
        .unwrap_or(verdict.len());
    &verdict[..cut]
}

/// The line over a comparison: "A: max 6 devices on a CPU (ideal 4) / B: max 4 = ideal;
/// B moves 120 vectors", from the two sides' verdicts and the vectors that change CPU.
pub(crate) fn compare_line(verdict_a: &str, verdict_b: &str, moved: usize) -> String {
    let moves = match moved {
        0 => "no vector changes CPU".to_string(),
        n => format!("B moves {n} vector{}", plural(n)),
    };
    bounded(format!(
        "A: {} / B: {}; {moves}",
        verdict_head(verdict_a),
        verdict_head(verdict_b)
    ))
}

/// The line over a comparison whose per-CPU loads are the same on both sides: the change is
/// in which vector fires where. "Per-CPU loads are the same under A and B; B moves 8 vectors
/// to other CPUs" (and how many change only their mask).
pub(crate) fn equal_loads_line(moved: usize, masks_only: usize) -> String {
    let moves = match moved {
        0 => "every vector fires on the same CPU".to_string(),
        n => format!("B moves {n} vector{} to other CPUs", plural(n)),
    };
    let masks = match masks_only {
        0 => String::new(),
        n => format!("; {n} more change{} only their mask", if n == 1 { "s" } else { "" }),
    };
    format!("Per-CPU loads are the same under A and B; {moves}{masks}")
}

/// At most [`PARTS_SHOWN_MAX`] parts; the middle ones are folded into a count.
fn fold_parts(parts: Vec<String>) -> String {
    if parts.len() <= PARTS_SHOWN_MAX {
        return parts.join("; ");
    }
    let mut shown: Vec<String> = parts[..PARTS_SHOWN_MAX - 1].to_vec();
    shown.push(format!("… {} more groups", parts.len() - (PARTS_SHOWN_MAX - 1)));
    shown.join("; ")
}

/// Thousandths as a short decimal: 32000 → "32", 21333 → "21.3".
pub(crate) fn milli(v: u64) -> String {
    if v.is_multiple_of(1000) {
        (v / 1000).to_string()
    } else {
        format!("{}.{}", v / 1000, (v % 1000) / 100)
    }
}

/// Longest bullet the pages print: a line a reviewer reads, not a wall of cpulists.
pub(crate) const BULLET_CHARS_MAX: usize = 400;
/// A cpulist in a page bullet is cut after this many characters (the count stays exact).
const LIST_CHARS_MAX: usize = 60;

/// "(0-3,8-11,… 40 ranges)": a cpulist cut at a range boundary once it passes `chars_max`.
fn short_list(cpus: &CpuSet, chars_max: usize) -> String {
    let full = cpus.to_cpulist();
    if full.len() <= chars_max {
        return format!("({full})");
    }
    let ranges: Vec<&str> = full.split(',').collect();
    let mut shown = String::new();
    for r in &ranges {
        if shown.len() + r.len() + 1 > chars_max {
            break;
        }
        shown.push_str(r);
        shown.push(',');
    }
    format!("({shown}… {} ranges)", ranges.len())
}

/// A cpulist on a page line outside the bullets (a device's CPUs over its vector table) is cut
/// past this many characters.
pub(crate) const LINE_LIST_CHARS_MAX: usize = 120;

/// "0-1,3,5,7,… 40 ranges, 63 CPUs": a cpulist for a page line, whole when it is at most
/// [`LINE_LIST_CHARS_MAX`] characters, otherwise cut at a range with the exact count.
pub(crate) fn page_cpulist(cpus: &CpuSet) -> String {
    let full = cpus.to_cpulist();
    if full.len() <= LINE_LIST_CHARS_MAX {
        return full;
    }
    let cut = short_list(cpus, LINE_LIST_CHARS_MAX);
    let inner = cut.trim_start_matches('(').trim_end_matches(')');
    format!("{inner}, {} CPU{}", cpus.weight(), plural(cpus.weight() as usize))
}

/// Cut a line to [`BULLET_CHARS_MAX`] characters (at a char boundary, marked with "…").
fn bounded(line: String) -> String {
    if line.chars().count() <= BULLET_CHARS_MAX {
        return line;
    }
    let mut out: String = line.chars().take(BULLET_CHARS_MAX - 1).collect();
    out.push('…');
    out
}

/// When every node with CPUs has the same number of CPUs and the same value at each position
/// (its n-th CPU in ascending order), the groups of positions: value → positions.
fn same_on_every_node(topo: &Topology, m: &Metrics, value: &dyn Fn(&CpuLoad) -> u32) -> Option<Vec<(u32, CpuSet)>> {
    let nodes: Vec<u32> = topo.nodes_with_cpus().collect();
    if nodes.len() < 2 {
        return None;
    }
    let load = |cpu: u32| {
        m.per_cpu
            .binary_search_by_key(&cpu, |c| c.cpu)
            .ok()
            .map(|i| &m.per_cpu[i])
    };
    // Per position: None when offline, else the value.
    let pattern = |node: u32| -> Vec<Option<u32>> {
        topo.node_cpus(node)
            .iter()
            .map(|cpu| load(cpu).filter(|c| c.online).map(value))
            .collect()
    };
    let first = pattern(nodes[0]);
    if nodes[1..].iter().any(|&n| pattern(n) != first) {
        return None;
    }
    let mut groups: std::collections::BTreeMap<u32, CpuSet> = std::collections::BTreeMap::new();
    for (slot, v) in first.iter().enumerate() {
        if let Some(v) = v {
            groups.entry(*v).or_default().insert(slot as u32);
        }
    }
    Some(groups.into_iter().collect())
}

fn every_node_prefix(topo: &Topology) -> String {
    let nodes = topo.nodes_with_cpus().count();
    let per = topo.nodes_with_cpus().next().map_or(0, |n| topo.node_cpus(n).weight());
    format!(
        "every node the same ({nodes} nodes × {per} CPU{}): ",
        plural(per as usize)
    )
}

/// [`devices_line`] for a page: on a machine whose nodes all look alike, one node's pattern
/// ("every node the same (64 nodes × 128 CPUs): 16 CPUs (112-127 of each node) serve all 16
/// devices; …"); otherwise the same sentence with long cpulists cut. A line that already fits
/// is the mail text's and the JSON's own. Never longer than [`BULLET_CHARS_MAX`].
pub(crate) fn page_devices_line(topo: &Topology, m: &Metrics) -> String {
    let value = |c: &CpuLoad| c.counted_devices(m.basis);
    page_line(topo, m, devices_line(m), &value, &|groups, list| {
        devices_parts(m, groups, list)
    })
}

/// [`irqs_line`] for a page, folded as [`page_devices_line`].
pub(crate) fn page_irqs_line(topo: &Topology, m: &Metrics) -> String {
    page_line(
        topo,
        m,
        irqs_line(m),
        &|c: &CpuLoad| c.counted_irqs(m.basis),
        &irqs_parts,
    )
}

/// The CPU groups of a line (count, CPUs) worded as its parts, each group's CPUs as the
/// second argument writes them.
type Parts<'a> = &'a dyn Fn(&[(u32, CpuSet)], &dyn Fn(&CpuSet) -> String) -> Vec<String>;

/// A page's line on one per-CPU count (`value`): `plain` when it fits; on a machine whose
/// nodes all look alike, one node's pattern; otherwise the same sentence with long cpulists
/// cut (an example at [`page_devices_line`]).
fn page_line(topo: &Topology, m: &Metrics, plain: String, value: &dyn Fn(&CpuLoad) -> u32, parts: Parts) -> String {
    if plain.chars().count() <= BULLET_CHARS_MAX {
        return plain;
    }
    let line = match same_on_every_node(topo, m, value) {
        Some(groups) if groups.len() > 1 => {
            let parts = parts(&groups, &|s| format!("(positions {s} of each node)"));
            format!("{}{}", every_node_prefix(topo), fold_parts(parts))
        }
        _ => fold_parts(parts(&m.group_online(value), &|s| short_list(s, LIST_CHARS_MAX))),
    };
    bounded(line)
}

/// [`nodes_line`] for a page: beyond [`NODES_LISTED_MAX`] nodes, nodes grouped by their count
/// ("per node: 16 IRQs on 48 nodes (0-47), 17 on 16 nodes (48-63) (fair share 16.2)").
pub(crate) fn page_nodes_line(m: &Metrics) -> String {
    if m.per_node.len() <= NODES_LISTED_MAX {
        return bounded(nodes_line(m));
    }
    let mut by_count: std::collections::BTreeMap<u32, CpuSet> = std::collections::BTreeMap::new();
    for n in &m.per_node {
        by_count.entry(n.irqs).or_default().insert(n.node);
    }
    let parts: Vec<String> = by_count
        .iter()
        .enumerate()
        .map(|(i, (irqs, nodes))| {
            let k = nodes.weight();
            format!(
                "{irqs}{} on {k} node{} {}",
                if i == 0 {
                    format!(" IRQ{}", plural(*irqs as usize))
                } else {
                    String::new()
                },
                plural(k as usize),
                short_list(nodes, LIST_CHARS_MAX)
            )
        })
        .collect();
    let shares: Vec<u64> = m.per_node.iter().map(|n| n.fair_share_milli).collect();
    let share = if shares.windows(2).all(|w| w[0] == w[1]) {
        format!("fair share {}", milli(shares.first().copied().unwrap_or(0)))
    } else {
        let lo = shares.iter().copied().min().unwrap_or(0);
        let hi = shares.iter().copied().max().unwrap_or(0);
        format!("fair shares {}–{}", milli(lo), milli(hi))
    };
    bounded(format!("per node: {} ({share})", fold_parts(parts)))
}

/// Where each device's vectors fire, for a machine too large for the device strip: devices
/// grouped by how many CPUs and nodes they fire on ("each of 16 devices fires on 64 CPUs in
/// 64 nodes; nvme16 fires on 8 CPUs in 1 node").
pub(crate) fn strip_line(topo: &Topology, outcome: &crate::scenario::Outcome) -> String {
    let mut groups: Vec<((u32, u32), Vec<&str>)> = Vec::new();
    for d in &outcome.devices {
        let cpus: CpuSet = d.vectors.iter().filter_map(|v| v.effective_cpu).collect();
        let mut nodes: Vec<u32> = cpus.iter().map(|c| topo.cpu_to_node(c)).collect();
        nodes.sort_unstable();
        nodes.dedup();
        let key = (cpus.weight(), nodes.len() as u32);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, names)) => names.push(&d.name),
            None => groups.push((key, vec![&d.name])),
        }
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|((cpus, nodes), names)| {
            let on = format!(
                "{cpus} CPU{} in {nodes} node{}",
                plural(*cpus as usize),
                plural(*nodes as usize)
            );
            match names[..] {
                [one] => format!("{one} fires on {on}"),
                _ => format!("each of {} devices fires on {on}", names.len()),
            }
        })
        .collect();
    bounded(fold_parts(parts))
}

/// " (13 per node)" when `cpus` lie on several nodes, as many on each (the seed-000 D96plds
/// figure: "26 vCPUs, 13 per node"); empty otherwise.
pub(crate) fn per_node_note(m: &Metrics, cpus: &CpuSet) -> String {
    let mut per_node: std::collections::BTreeMap<u32, u32> = std::collections::BTreeMap::new();
    for c in cpus.iter() {
        if let Ok(i) = m.per_cpu.binary_search_by_key(&c, |l| l.cpu) {
            *per_node.entry(m.per_cpu[i].node).or_default() += 1;
        }
    }
    let mut counts = per_node.values();
    match counts.next() {
        Some(&k) if per_node.len() > 1 && counts.all(|&c| c == k) => format!(" ({k} per node)"),
        _ => String::new(),
    }
}

/// Nodes listed one by one in [`page_nodes_line`]; beyond, grouped by count.
pub(crate) const NODES_LISTED_MAX: usize = 16;

/// The one line above a heatmap, in reviewers' words: "max 6 devices on a CPU (ideal 4): 28
/// CPUs 34-47,82-95 serve all 6" or "max 4 = ideal, all 96 CPUs used".
/// On a machine whose nodes all look alike the CPU lists name one node's positions ("CPUs
/// 112-127 of each node").
pub(crate) fn verdict_line(topo: &Topology, m: &Metrics, metric: HeatMetric) -> String {
    let value = |c: &CpuLoad| metric.value(c, m.basis);
    let groups = m.group_online(value);
    let online: u32 = groups.iter().map(|(_, s)| s.weight()).sum();
    // The lists to print: machine-wide, or one node's positions when every node is the same.
    let (list_groups, each) = match same_on_every_node(topo, m, &value) {
        Some(g) if online > 256 => (g, true),
        _ => (groups.clone(), false),
    };
    let list_of = |v: u32| -> String {
        let s = list_groups
            .iter()
            .find(|(x, _)| *x == v)
            .map(|(_, s)| s.clone())
            .unwrap_or_default();
        let l = short_list(&s, LIST_CHARS_MAX);
        let l = l.trim_start_matches('(').trim_end_matches(')');
        if each {
            format!("at positions {l} of each node")
        } else {
            l.to_string()
        }
    };
    let Some((max, hot)) = groups.last() else {
        return "no online CPUs".into();
    };
    let unit = metric_unit(metric, *max == 1);
    let idle = groups.first().filter(|(v, _)| *v == 0).map(|(_, s)| s);
    let used = match idle {
        None => format!("all {online} CPU{} used", plural(online as usize)),
        Some(s) => format!(
            "{} of {online} CPU{} get{} none ({})",
            s.weight(),
            plural(online as usize),
            if s.weight() == 1 { "s" } else { "" },
            list_of(0)
        ),
    };
    let n = hot.weight();
    let list = list_of(*max);
    let verb = hot_verb(metric, m, *max, n);
    let line = match metric.ideal(m) {
        Some(ideal) if *max > ideal => {
            format!(
                "max {max} {unit} on a CPU (ideal {ideal}): {n} CPU{}{} {list} {verb}",
                plural(n as usize),
                per_node_note(m, hot)
            )
        }
        Some(ideal) if *max == ideal => format!("max {max} = ideal, {used}"),
        Some(ideal) => format!("max {max} (ideal {ideal}), {used}"),
        None if *max == 0 => format!("no {unit}"),
        None => format!(
            "max {max} {unit} on a CPU: {n} CPU{}{} {list} {verb}",
            plural(n as usize),
            per_node_note(m, hot)
        ),
    };
    bounded(line)
}

/// The verdict's unit, singular for one.
fn metric_unit(metric: HeatMetric, one: bool) -> &'static str {
    match (metric, one) {
        (HeatMetric::Irqs, false) => "IRQs",
        (HeatMetric::Irqs, true) => "IRQ",
        (HeatMetric::Managed, false) => "managed IRQs",
        (HeatMetric::Managed, true) => "managed IRQ",
        (HeatMetric::Devices, false) => "devices",
        (HeatMetric::Devices, true) => "device",
        (HeatMetric::Hot, false) => "hot single-CPU IRQs",
        (HeatMetric::Hot, true) => "hot single-CPU IRQ",
    }
}

/// What the `n` CPUs at the maximum `max` do: "serve all 6", "serve 3 of the 4 devices",
/// "get 2".
fn hot_verb(metric: HeatMetric, m: &Metrics, max: u32, n: u32) -> String {
    match metric {
        HeatMetric::Devices if max == 2 && m.devices_total == 2 && m.devices_total == m.devices_asked => {
            "serve both".to_string()
        }
        HeatMetric::Devices if max == m.devices_total && m.devices_total > 1 && m.devices_total == m.devices_asked => {
            format!("serve all {max}")
        }
        HeatMetric::Devices if max == m.devices_total && m.devices_total < m.devices_asked => {
            format!("serve {max} of the {} devices", m.devices_asked)
        }
        HeatMetric::Devices => format!("serve{} {max}", if n == 1 { "s" } else { "" }),
        _ => format!("get{} {max}", if n == 1 { "s" } else { "" }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::spec::{parse_device_token, ScenarioSpec, TopologyRef};

    fn metrics_of(preset: &str, devices: &str, variant: &str) -> Metrics {
        let spec = ScenarioSpec {
            variant: variant.into(),
            ..ScenarioSpec::new(
                TopologyRef::Preset(preset.into()),
                devices.split(' ').map(|t| parse_device_token(t).unwrap()).collect(),
            )
        };
        let scenario = spec.resolve(crate::catalogue::get).unwrap();
        let outcome = crate::scenario::run(&scenario);
        crate::metrics::compute(&scenario, &outcome)
    }

    /// The metrics of a run on a preset and their verdict line on `metric`.
    fn verdict_of(preset: &str, devices: &str, variant: &str, metric: HeatMetric) -> (Metrics, String) {
        let m = metrics_of(preset, devices, variant);
        let v = verdict_line(&crate::catalogue::get(preset).unwrap(), &m, metric);
        (m, v)
    }

    /// The seed-000 thread's sentences (six NVMe disks on the 96-vCPU, 6-node VM), read from
    /// the numbers rather than written here: every CPU named once, counts matching the metrics.
    #[test]
    fn sentences_agree_with_the_numbers() {
        let m = metrics_of("azure-l96as-v4", "6x62:pre=1,name=nvme", "cluster");
        let d = devices_line(&m);
        let total: u32 = d
            .split("; ")
            .map(|part| part.split(' ').next().unwrap().parse::<u32>().unwrap())
            .sum();
        assert_eq!(total, m.ideal.cpus_online, "{d}");
        assert!(d.contains(&format!("serve all {} devices", m.devices_total)), "{d}");
        let i = irqs_line(&m);
        assert!(i.contains(&format!("get {} IRQs", m.irqs_per_cpu_min)), "{i}");
        let n = nodes_line(&m);
        let counts: Vec<String> = m.per_node.iter().map(|n| n.irqs.to_string()).collect();
        assert!(n.starts_with(&format!("per node: {} IRQs", counts.join(" "))), "{n}");
        let ideal = ideal_line(&m);
        assert!(
            ideal.contains(&format!("at most {} IRQs", m.ideal.irqs_per_cpu_max)),
            "{ideal}"
        );
    }

    /// Seed 000's figure: six NVMe disks of 62 queues (one pre-vector) on the 96-vCPU VM,
    /// pre-cluster. The verdict names the hottest group from the metrics and the ideal bound.
    #[test]
    fn seed_000_verdict_names_the_hot_cpus() {
        let (m, v) = verdict_of(
            "azure-l96as-v4",
            "6x62:name=nvme,pre=1",
            "pre-cluster",
            HeatMetric::Devices,
        );
        let groups = m.group_online(|c| c.counted_devices(m.basis));
        let (max, hot) = groups.last().unwrap();
        assert!(*max > m.ideal.devices_per_cpu_max, "seed 000 is over the ideal: {v}");
        assert_eq!(
            v,
            format!(
                "max {max} devices on a CPU (ideal {}): {} CPUs ({} per node) {hot} serve all {}",
                m.ideal.devices_per_cpu_max,
                hot.weight(),
                hot.weight() / 2,
                m.devices_total
            )
        );
        assert_eq!(
            v,
            "max 6 devices on a CPU (ideal 4): 28 CPUs (14 per node) 34-47,82-95 serve all 6"
        );
    }

    /// A placement at the ideal says so and that every CPU is used.
    #[test]
    fn verdict_at_the_ideal() {
        let (m, v) = verdict_of("azure-l96as-v4", "1x96", "cluster", HeatMetric::Irqs);
        assert_eq!(m.ideal.irqs_per_cpu_max, 1);
        assert_eq!(v, "max 1 = ideal, all 96 CPUs used");
    }

    /// The compare line keeps each verdict's number and bound and counts the moved vectors.
    #[test]
    fn compare_line_heads_both_verdicts() {
        let a = "max 6 devices on a CPU (ideal 4): 28 CPUs 34-47,82-95 serve all 6";
        let b = "max 4 = ideal, all 96 CPUs used";
        assert_eq!(
            compare_line(a, b, 120),
            "A: max 6 devices on a CPU (ideal 4) / B: max 4 = ideal; B moves 120 vectors"
        );
        assert_eq!(
            compare_line(b, b, 1),
            "A: max 4 = ideal / B: max 4 = ideal; B moves 1 vector"
        );
        assert!(compare_line(b, b, 0).ends_with("; no vector changes CPU"));
    }

    /// A device's CPU list on the page stays whole when short and is cut, with its count,
    /// when long.
    #[test]
    fn page_cpulist_cuts_long_lists() {
        let short = crate::topology::cpulist::parse_cpulist("0-1,3,5", 8).unwrap();
        assert_eq!(page_cpulist(&short), "0-1,3,5");
        let mut long = CpuSet::new(8192);
        for c in (0..8192).step_by(128) {
            long.insert(c);
        }
        let line = page_cpulist(&long);
        assert!(line.len() <= LINE_LIST_CHARS_MAX + 30, "{line}");
        assert!(line.starts_with("0,128,256,"), "{line}");
        assert!(line.ends_with("… 64 ranges, 64 CPUs"), "{line}");
    }

    /// At 8,192 CPUs the page bullets fold to one node's pattern and stay short.
    #[test]
    fn large_machine_bullets_fold() {
        let spec_m = metrics_of("synthetic-8192", "16x64", "cluster");
        let topo = crate::catalogue::get("synthetic-8192").unwrap();
        let lines = [
            page_devices_line(&topo, &spec_m),
            page_irqs_line(&topo, &spec_m),
            page_nodes_line(&spec_m),
            verdict_line(&topo, &spec_m, HeatMetric::Irqs),
        ];
        for l in &lines {
            assert!(
                l.chars().count() <= BULLET_CHARS_MAX,
                "{} chars: {l}",
                l.chars().count()
            );
        }
        assert!(
            devices_line(&spec_m).len() > BULLET_CHARS_MAX,
            "the unfolded line is the long one"
        );
        assert_eq!(lines[2], "per node: 16 IRQs on 64 nodes (0-63) (fair share 16)");
        assert_eq!(
            lines[3],
            "max 1 = ideal, 7168 of 8192 CPUs get none (at positions 0-111 of each node)"
        );
    }

    #[test]
    fn long_lists_are_cut_at_a_range() {
        let s = CpuSet::from_cpus((0..400).step_by(2));
        let l = short_list(&s, 20);
        assert!(l.starts_with("(0,2,4,") && l.ends_with("… 200 ranges)"), "{l}");
        assert!(l.len() < 40, "{l}");
        assert_eq!(short_list(&CpuSet::from_cpus([1, 2, 3]), 20), "(1-3)");
    }

    #[test]
    fn milli_is_short() {
        assert_eq!(milli(32_000), "32");
        assert_eq!(milli(21_333), "21.3");
        assert_eq!(milli(999), "0.9");
    }

    #[test]
    fn many_groups_fold() {
        let parts: Vec<String> = (0..6).map(|i| format!("p{i}")).collect();
        assert_eq!(fold_parts(parts[..4].to_vec()), "p0; p1; p2; p3");
        assert_eq!(fold_parts(parts), "p0; p1; p2; … 3 more groups");
    }
}
