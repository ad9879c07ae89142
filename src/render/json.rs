//! The JSON view of an outcome: the golden `system` shape plus metrics and warnings.

use crate::golden::system_expected;
use crate::metrics::Metrics;
use crate::scenario::{Outcome, Scenario};
use serde_json::{json, Value};

pub fn outcome_json(scenario: &Scenario, outcome: &Outcome, m: &Metrics) -> Value {
    let mut value = system_expected(scenario, outcome);
    value["scenario"] = json!({
        "topology": scenario.topology().name(),
        "variant": scenario.variant().name(),
        "variant_description": scenario.variant().describe(),
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
    }
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
        "ideal": {"irqs_per_cpu_max": m.ideal.irqs_per_cpu_max,
                  "devices_per_cpu_max": m.ideal.devices_per_cpu_max},
        "per_node": m.per_node.iter().map(|n| json!({
            "node": n.node, "cpus_online": n.cpus_online, "irqs": n.irqs,
            "hot_irqs": n.hot_irqs, "fair_share_milli": n.fair_share_milli,
        })).collect::<Vec<_>>(),
        "hot_per_cpu": m.per_cpu.iter().map(|c| c.hot_irqs).collect::<Vec<_>>(),
        "summary": [m.devices_line(), m.irqs_line(), m.nodes_line()],
    });
    value
}
