//! The vector-space view: per-CPU vectors used / reserved / free, the global counts, and the
//! first vector the kernel could not give (`-ENOSPC`), in text and JSON. Shown when the space
//! runs out or the scenario sets a boot parameter, so every other report keeps its bytes.

use super::columns::wrap;
use crate::scenario::{Outcome, Scenario, VectorFailure, VectorSpace};
use serde_json::{json, Value};
use std::fmt::Write as _;

/// Most per-CPU rows in the text table (runs of equal rows fold into one).
const TEXT_ROWS_MAX: usize = 64;

/// What the report says about the kernel after a failure.
pub(crate) const OUT_OF_SCOPE: &str = "What the kernel does after a failed allocation (the driver's fallbacks: \
fewer vectors, legacy interrupts, a failed probe) is not modelled; placements after this failure \
are the model's, not the kernel's.";

/// Whether reports show the vector-space block for this run.
pub fn shown(scenario: &Scenario, outcome: &Outcome) -> bool {
    outcome.vector_space.exhausted() || !scenario.boot().is_empty()
}

fn failure_line(f: &VectorFailure) -> String {
    format!(
        "{} vector {} ({}) fails at {}: {}",
        f.device,
        f.vector,
        if f.managed { "managed" } else { "non-managed" },
        f.stage(),
        f.error
    )
}

/// One line naming the first failure (for warning lists), `None` when nothing failed.
pub(crate) fn warning_line(vs: &VectorSpace) -> Option<String> {
    vs.first_failure()
        .map(|f| format!("{}. {OUT_OF_SCOPE}", failure_line(f)))
}

/// The first failure, how many followed it, and what is out of scope after it.
fn failure_lines(vs: &VectorSpace, out: &mut String) {
    let Some(f) = vs.first_failure() else { return };
    out.push_str(&wrap(
        &failure_line(f),
        &format!("  {}:   ", f.error.errno()),
        "            ",
    ));
    if vs.failures.len() > 1 {
        out.push_str(&wrap(
            &format!(
                "{} more {} got none after it.",
                vs.failures.len() - 1,
                if vs.failures.len() == 2 { "vector" } else { "vectors" }
            ),
            "            ",
            "            ",
        ));
    }
    out.push_str(&wrap(OUT_OF_SCOPE, "            ", "            "));
}

/// The text block (starts with a blank line).
pub fn text_block(scenario: &Scenario, outcome: &Outcome, out: &mut String) {
    let vs = &outcome.vector_space;
    out.push_str("\nVector space (kernel/irq/matrix.c, arch/x86/kernel/apic/vector.c)\n");
    let boot = scenario.boot();
    let params: Vec<String> = [
        ("irqaffinity=", &boot.irqaffinity),
        ("isolcpus=", &boot.isolcpus),
        ("nohz_full=", &boot.nohz_full),
        ("vectors held ", &boot.vectors_held),
    ]
    .iter()
    .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}{v}")))
    .collect();
    if !params.is_empty() {
        out.push_str(&wrap(&params.join(" "), "  boot:     ", "            "));
    }
    if !vs.tracked {
        out.push_str(&wrap(
            "the first-cpu model tracks no vector space; held vectors change nothing",
            "  note:     ",
            "            ",
        ));
        // An empty affinity mask fails in alloc_descs(), under every effective model.
        failure_lines(vs, out);
        return;
    }
    failures_and_warnings(vs, out);
    let _ = writeln!(
        out,
        "  global:   available {}, reserved {}, allocated {} ({} per CPU)",
        vs.global_available, vs.global_reserved, vs.total_allocated, vs.capacity
    );
    let _ = writeln!(
        out,
        "  {:<24} {:>6} {:>9} {:>6}",
        "online CPUs", "used", "reserved", "free"
    );
    let rows = rows(vs);
    for (cpus, used, reserved, free) in rows.iter().take(TEXT_ROWS_MAX) {
        let _ = writeln!(out, "  {cpus:<24} {used:>6} {reserved:>9} {free:>6}");
    }
    if rows.len() > TEXT_ROWS_MAX {
        let _ = writeln!(
            out,
            "  ... {} more rows (JSON: vector_space.per_cpu)",
            rows.len() - TEXT_ROWS_MAX
        );
    }
}

/// The first `-ENOSPC` (and how many more), the reservation and broken-affinity warnings.
fn failures_and_warnings(vs: &VectorSpace, out: &mut String) {
    match vs.first_failure() {
        Some(_) => failure_lines(vs, out),
        None => out.push_str("  ENOSPC:   none; every vector got one\n"),
    }
    if let Some((d, v)) = &vs.reservation_exceeded {
        out.push_str(&wrap(
            &format!(
                "irq_matrix_reserve() prints \"Interrupt reservation exceeds available resources\" at {d} vector {v}"
            ),
            "  warning:  ",
            "            ",
        ));
    }
    if let Some((d, v)) = vs.affinity_broken.first() {
        out.push_str(&wrap(
            &format!(
                "{} non-managed {} placed outside {} affinity mask, first {d} vector {v} \
                 (\"Affinity broken due to vector space exhaustion\")",
                vs.affinity_broken.len(),
                if vs.affinity_broken.len() == 1 {
                    "vector"
                } else {
                    "vectors"
                },
                if vs.affinity_broken.len() == 1 { "its" } else { "their" }
            ),
            "  warning:  ",
            "            ",
        ));
    }
}

/// Online CPUs in runs of equal (used, reserved, free), as cpulists.
fn rows(vs: &VectorSpace) -> Vec<(String, u32, u32, u32)> {
    let mut rows: Vec<(String, u32, u32, u32)> = Vec::new();
    let mut run: Option<(u32, u32, (u32, u32, u32))> = None;
    let mut flush = |run: Option<(u32, u32, (u32, u32, u32))>| {
        if let Some((a, b, (u, r, f))) = run {
            let cpus = if a == b { a.to_string() } else { format!("{a}-{b}") };
            rows.push((cpus, u, r, f));
        }
    };
    for (cpu, cm) in vs.per_cpu.iter().enumerate().filter(|(_, cm)| cm.online) {
        let cpu = cpu as u32;
        let key = (cm.allocated, cm.reserved(), cm.available);
        run = match run {
            Some((a, b, k)) if k == key && b + 1 == cpu => Some((a, cpu, k)),
            other => {
                flush(other);
                Some((cpu, cpu, key))
            }
        };
    }
    flush(run);
    rows
}

/// The JSON view of the vector space.
pub fn json(vs: &VectorSpace) -> Value {
    let first = vs.first_failure().map(|f| {
        json!({
            "device": f.device,
            "vector": f.vector,
            "managed": f.managed,
            "stage": f.stage(),
            "errno": f.error.errno(),
            "cpu": f.error.cpu(),
            "message": f.error.to_string(),
        })
    });
    json!({
        "tracked": vs.tracked,
        "capacity_per_cpu": vs.capacity,
        "global_available": vs.global_available,
        "global_reserved": vs.global_reserved,
        "total_allocated": vs.total_allocated,
        "per_cpu": vs.per_cpu.iter().enumerate().filter(|(_, cm)| cm.online).map(|(cpu, cm)| json!({
            "cpu": cpu, "used": cm.allocated, "reserved": cm.reserved(), "free": cm.available,
            "managed": cm.managed, "managed_allocated": cm.managed_allocated,
        })).collect::<Vec<_>>(),
        "first_failure": first,
        "failures": vs.failures.len(),
        "reservation_exceeded": vs.reservation_exceeded.as_ref().map(|(d, v)| json!({"device": d, "vector": v})),
        "affinity_broken": vs.affinity_broken.iter().map(|(d, v)| json!({"device": d, "vector": v})).collect::<Vec<_>>(),
        "out_of_scope": OUT_OF_SCOPE,
    })
}

/// Add the vector space and the boot parameters to an outcome's JSON when [`shown`].
pub(crate) fn add_to_json(value: &mut Value, scenario: &Scenario, outcome: &Outcome) {
    if !shown(scenario, outcome) {
        return;
    }
    for (key, v) in scenario.boot().named() {
        if let Some(v) = v {
            value["scenario"][key] = json!(v);
        }
    }
    value["vector_space"] = json(&outcome.vector_space);
}
