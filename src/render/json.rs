//! The JSON views of an outcome. [`system_view`] is the core: the devices, their vectors and
//! the per-CPU counts, in the shape of a golden `system` case's `expected` (so `golden` checks
//! the very bytes the API serves). [`outcome_json`] is the public JSON API: that core plus the
//! scenario's names, warnings, metrics and summary sentences.

use super::summary;
use crate::metrics::{self, Metrics};
use crate::scenario::{Outcome, Scenario};
use serde_json::{json, Map, Value};

/// A scenario's outcome in the golden `system` shape (also the JSON API's core).
pub(crate) fn system_view(scenario: &Scenario, outcome: &Outcome) -> Value {
    let devices: Vec<Value> = outcome
        .devices
        .iter()
        .map(|d| {
            json!({
                "name": d.name,
                "affinity_null": d.affinity_null,
                "spread_offsets": d.spread_offsets,
                "vectors": d.vectors.iter().map(|v| json!({
                    "index": v.index, "mask": v.mask.to_cpulist(),
                    "managed": v.managed, "effective_cpu": v.effective_cpu,
                })).collect::<Vec<_>>(),
                "blk_mq_map": d.blk_mq_map,
                "blk_mq_spread_offsets": d.blk_mq_spread_offsets,
            })
        })
        .collect();
    let per_cpu = metrics::per_cpu(scenario, outcome);
    let per_cpu: Vec<Value> = per_cpu
        .iter()
        .map(|c| {
            json!({"cpu": c.cpu, "irqs": c.irqs, "managed_irqs": c.managed_irqs,
                   "devices": c.devices, "managed_devices": c.managed_devices})
        })
        .collect();
    let mut out = Map::new();
    out.insert("devices".into(), Value::Array(devices));
    out.insert("per_cpu".into(), Value::Array(per_cpu));
    out.insert("spread_counter_after".into(), json!(outcome.spread_counter_after));
    Value::Object(out)
}

/// The public JSON API's view of a scenario run (`/s/…/json`, `simulate --format json`).
pub(crate) fn outcome_json(scenario: &Scenario, outcome: &Outcome, m: &Metrics) -> Value {
    let mut value = system_view(scenario, outcome);
    value["scenario"] = json!({
        "topology": scenario.topology().name(),
        "variant": scenario.variant_name(),
        "variant_description": scenario.variant_describe(),
        "sort": scenario.sort().name(),
        "effective": scenario.effective().name(),
        "spread_counter": scenario.spread_counter(),
    });
    // MANA devices carry the model's own account (golden `expected` shape); other devices,
    // and so every scenario without a MANA device, are unchanged.
    for (i, d) in outcome.devices.iter().enumerate() {
        if let Some(o) = &d.mana {
            value["devices"][i]["mana"] = super::json_mana_sched::mana_outcome_json(o);
        }
        // NVMe devices (driver=nvme): the counter values their admin tag set consumed.
        if let Some(admin) = &d.admin_spread_offsets {
            value["devices"][i]["admin_spread_offsets"] = json!(admin);
        }
    }
    if let Some(p) = scenario.probe() {
        value["scenario"]["probe"] = json!(p.name());
    }
    let notes = summary::machine_notes(scenario.topology());
    if !notes.is_empty() {
        value["machine_notes"] = json!(notes);
    }
    for (i, d) in outcome.devices.iter().enumerate() {
        if let Some(f) = d.alloc_failed {
            value["devices"][i]["alloc_failed"] = json!(f.to_string());
        }
    }
    value["kernel"] = summary::range_json(&crate::scenario::kernel::holds_for(scenario, outcome));
    value["warnings"] = outcome
        .warnings()
        .map(|(device, w)| json!({"device": device, "warning": w.to_string()}))
        .collect();
    value["metrics"] = json!({
        "basis": m.basis.describe(),
        "irqs_total": m.irqs_total,
        "irqs_per_cpu_max": m.irqs_per_cpu_max,
        "irqs_per_cpu_min": m.irqs_per_cpu_min,
        "devices_total": m.devices_total,
        "devices_per_cpu_max": m.devices_per_cpu_max,
        "devices_per_cpu_min": m.devices_per_cpu_min,
        "hot_irqs_total": m.hot_irqs_total,
        "hot_irqs_per_cpu_max": m.hot_irqs_per_cpu_max,
        "cpus_idle": m.cpus_idle.to_cpulist(),
        "vectors_shut_down": m.vectors_shut_down,
        "vectors_failed": m.vectors_failed,
        "devices_asked": m.devices_asked,
        "ideal": {"irqs_per_cpu_max": m.ideal.irqs_per_cpu_max,
                  "devices_per_cpu_max": m.ideal.devices_per_cpu_max},
        "per_node": m.per_node.iter().map(|n| json!({
            "node": n.node, "cpus_online": n.cpus_online, "irqs": n.irqs,
            "hot_irqs": n.hot_irqs, "fair_share_milli": n.fair_share_milli,
        })).collect::<Vec<_>>(),
        "hot_per_cpu": m.per_cpu.iter().map(|c| c.hot_irqs).collect::<Vec<_>>(),
        "summary": [summary::devices_line(m), summary::irqs_line(m), summary::nodes_line(m)],
    });
    crate::render::vector_space::add_to_json(&mut value, scenario, outcome);
    value
}
