//! The MANA and sched results as JSON: the shape of the golden vectors
//! (`shared/golden/README-mana-sched.md`), which `check-golden` compares field for field, and
//! the `/m/{p}/json` and `/n/{p}/json` views, which add the permalink and the spec.

use serde_json::{json, Map, Value};

use crate::kernel::mana::ManaOutcome;
use crate::kernel::sched::{
    ForkPlacement, GroupLoad, LbResult, SchedOutcome, SchedTopology, VariantOutcome, WakeLevel, INTERPRETATION_NOTES,
};
use crate::scenario::mana::{ManaRun, ManaSpec};
use crate::scenario::sched::SchedSpec;

/// Both driver versions: `{"unpatched", "patched"}`.
pub fn mana_run_json(run: &ManaRun) -> Value {
    json!({
        "unpatched": mana_outcome_json(&run.unpatched),
        "patched": mana_outcome_json(&run.patched),
    })
}

/// The `/m/{permalink}/json` view.
pub(crate) fn mana_view(permalink: &str, spec: &ManaSpec, run: &ManaRun) -> Value {
    let mut v = mana_run_json(run);
    v["permalink"] = json!(permalink);
    v["spec"] = json!(spec);
    v["kernel"] = json!(super::mana_sched::MANA_KERNEL_LINE);
    v
}

/// Topology, variants and summary: `{"topology", "variants", "summary"}`.
pub fn sched_outcome_json(out: &SchedOutcome) -> Value {
    let mut variants = Map::new();
    for v in &out.variants {
        variants.insert(v.variant.as_str().to_string(), variant_json(v));
    }
    let mut summary = Map::new();
    for s in &out.summary {
        summary.insert(
            s.variant.as_str().to_string(),
            json!({
                "periodic_split": s.periodic_split,
                "fork_split": s.fork_split,
                "fork_final_node": s.fork_final_node,
            }),
        );
    }
    json!({
        "topology": sched_topology_json(&out.topology),
        "variants": Value::Object(variants),
        "summary": Value::Object(summary),
    })
}

/// The `/n/{permalink}/json` view: the outcome plus the permalink, the spec and the
/// interpretation notes.
pub(crate) fn sched_view(permalink: &str, spec: &SchedSpec, out: &SchedOutcome) -> Value {
    let mut v = sched_outcome_json(out);
    v["permalink"] = json!(permalink);
    v["spec"] = json!(spec);
    v["interpretation_notes"] = json!(INTERPRETATION_NOTES);
    v["kernel"] = json!(super::mana_sched::SCHED_KERNEL_LINE);
    v
}

/// One driver version's outcome, in the golden-vector shape.
pub(crate) fn mana_outcome_json(o: &ManaOutcome) -> Value {
    let irqs: Vec<Value> = o
        .irqs
        .iter()
        .map(|irq| {
            json!({
                "index": irq.index,
                "kind": irq.kind.as_str(),
                "affinity": match &irq.affinity {
                    Some(mask) => json!(mask),
                    None => json!("default"),
                },
                "request_cpu": irq.request_cpu,
                "effective_cpu": irq.effective_cpu,
            })
        })
        .collect();
    json!({
        "num_msix_usable": o.num_msix_usable,
        "queue_irq_count": o.queue_irq_count,
        "skip_first_cpu": o.skip_first_cpu,
        "setup_fn": o.setup_fn.as_str(),
        "irqs": irqs,
        "effective_cpus": o.effective_cpus,
        "queue_irqs_per_cpu": o.queue_irqs_per_cpu,
        "final_vector_load": o.final_vector_load,
    })
}

/// The built sched-domain topology.
pub(crate) fn sched_topology_json(t: &SchedTopology) -> Value {
    let nodes: Vec<Value> = t
        .nodes
        .iter()
        .map(|n| {
            let domains: Vec<Value> = n
                .numa_domains
                .iter()
                .map(|d| {
                    let groups: Vec<Value> = d
                        .groups
                        .iter()
                        .map(|g| {
                            json!({
                                "nodes": g.nodes,
                                "weight": g.weight,
                                "cores": g.cores,
                                "origin_level": g.origin_level,
                                "prefer_sibling": g.prefer_sibling,
                            })
                        })
                        .collect();
                    json!({
                        "level": d.level,
                        "distance": d.distance,
                        "span_nodes": d.span_nodes,
                        "span_weight": d.span_weight,
                        "degenerate": d.degenerate,
                        "imb_numa_nr": d.imb_numa_nr,
                        "balance_fork": d.balance_fork,
                        "unequal_weights": d.unequal_weights,
                        "groups": groups,
                    })
                })
                .collect();
            json!({ "node": n.node, "numa_domains": domains })
        })
        .collect();
    json!({ "distances": t.distances, "nodes": nodes })
}

fn groups_json(groups: &[GroupLoad]) -> Value {
    Value::Array(
        groups
            .iter()
            .map(|g| {
                json!({
                    "nodes": g.nodes,
                    "weight": g.weight,
                    "sum_nr_running": g.sum_nr_running,
                    "idle_cpus": g.idle_cpus,
                    "type": g.group_type.as_str(),
                })
            })
            .collect(),
    )
}

fn lb_result_json(r: &LbResult) -> Value {
    json!({
        "path": r.path.as_str(),
        "prefer_sibling": r.prefer_sibling,
        "forced_by_sibling_gate": r.forced_by_sibling_gate,
        "imbalance_raw": r.imbalance_raw,
        "allowance": r.allowance,
        "dst_running": r.dst_running,
        "imbalance_adjusted": r.imbalance_adjusted,
        "imbalance": r.imbalance,
        "migration_type": r.migration_type.map(|m| m.as_str()),
        "no_src_rq": r.no_src_rq,
        "move": r.moved,
        "src_cpu": r.src_cpu,
        "src_node": r.src_node,
        "active_balance": r.active_balance,
        "split": r.split,
    })
}

/// Keys shared by wake levels and fork steps.
fn wake_core_json(w: &WakeLevel) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("level".into(), json!(w.level));
    m.insert("distance".into(), json!(w.distance));
    m.insert("this_cpu".into(), json!(w.this_cpu));
    m.insert("groups".into(), groups_json(&w.groups));
    m.insert("idlest_group".into(), json!(w.idlest_group));
    m.insert("imbalance".into(), json!(w.imbalance));
    m.insert("allowance".into(), json!(w.allowance));
    m.insert("imb_numa_nr".into(), json!(w.imb_numa_nr));
    m.insert("dst_running".into(), json!(w.dst_running));
    m.insert("choice".into(), json!(w.choice.as_str()));
    m.insert("path".into(), json!(w.path.as_str()));
    m
}

fn fork_json(f: &ForkPlacement) -> Value {
    let steps: Vec<Value> = f
        .steps
        .iter()
        .map(|s| {
            let mut m = wake_core_json(&s.eval);
            m.insert("this_node".into(), json!(s.this_node));
            m.insert("new_cpu".into(), json!(s.new_cpu));
            Value::Object(m)
        })
        .collect();
    json!({
        "steps": steps,
        "final_cpu": f.final_cpu,
        "final_node": f.final_node,
        "split": f.split,
    })
}

/// One variant's periodic, wake and fork results.
pub fn variant_json(v: &VariantOutcome) -> Value {
    let periodic: Vec<Value> = v
        .periodic
        .iter()
        .map(|p| {
            let levels: Vec<Value> = p
                .levels
                .iter()
                .map(|l| {
                    json!({
                        "level": l.level,
                        "distance": l.distance,
                        "dst_cpu": l.dst_cpu,
                        "imb_numa_nr": l.imb_numa_nr,
                        "groups": groups_json(&l.groups),
                        "busiest_group": l.busiest_group,
                        "result": lb_result_json(&l.result),
                    })
                })
                .collect();
            json!({ "dst_node": p.dst_node, "dst_cpu": p.dst_cpu, "levels": levels })
        })
        .collect();
    let wake_levels: Vec<Value> = v
        .wake_levels
        .iter()
        .map(|w| {
            let mut m = wake_core_json(w);
            m.insert("balance_fork".into(), json!(w.balance_fork));
            Value::Object(m)
        })
        .collect();
    json!({
        "periodic": periodic,
        "periodic_split": v.periodic_split,
        "wake_levels": wake_levels,
        "fork_placement": fork_json(&v.fork_placement),
    })
}
