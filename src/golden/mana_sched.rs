//! The golden-vector wire format (`shared/golden/README-mana-sched.md`).
//!
//! It parses a case's `input` into
//! the model types, runs the models, and builds a value with exactly the
//! shape of the case's `expected` (same keys, `null` where a field does not
//! apply). The comparison itself is `super::first_difference`.

use serde_json::{json, Map, Value};

use crate::kernel::mana::{self, ManaInput, ManaOutcome, MsixMode};
use crate::kernel::sched_numa::{
    self, ForkPlacement, GroupLoad, LbResult, SchedInput, Topology, VariantOutcome, WakeLevel,
    DEFAULT_NODE_RECLAIM_DISTANCE,
};

/// Runs a MANA case (`{"input": ...}`) and returns `{"unpatched", "patched"}`.
pub fn run_mana_case(case: &Value) -> Result<Value, String> {
    let input = parse_mana_input(field(case, "input")?)?;
    let (unpatched, patched) = mana::run_both(&input).map_err(|e| e.to_string())?;
    Ok(json!({
        "unpatched": mana_outcome_json(&unpatched),
        "patched": mana_outcome_json(&patched),
    }))
}

/// Runs a sched case and returns `{"topology", "variants", "summary"}`.
pub fn run_sched_case(case: &Value) -> Result<Value, String> {
    let input = parse_sched_input(field(case, "input")?)?;
    let out = sched_numa::run(&input).map_err(|e| e.to_string())?;
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
    Ok(json!({
        "topology": topology_json(&out.topology),
        "variants": Value::Object(variants),
        "summary": Value::Object(summary),
    }))
}

/// The first place where `actual` differs from `expected`, as
/// `path: expected X, got Y`; `None` if they are equal.

// ---------------------------------------------------------------------------
// Parsing

fn field<'v>(obj: &'v Value, key: &str) -> Result<&'v Value, String> {
    obj.get(key).ok_or_else(|| format!("missing key {key:?}"))
}

fn as_u32(v: &Value, what: &str) -> Result<u32, String> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| format!("{what}: expected a non-negative integer, got {v}"))
}

fn as_i32(v: &Value, what: &str) -> Result<i32, String> {
    v.as_i64()
        .and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| format!("{what}: expected an integer, got {v}"))
}

fn as_array<'v>(v: &'v Value, what: &str) -> Result<&'v Vec<Value>, String> {
    v.as_array()
        .ok_or_else(|| format!("{what}: expected an array, got {v}"))
}

fn u32_list(v: &Value, what: &str) -> Result<Vec<u32>, String> {
    as_array(v, what)?.iter().map(|x| as_u32(x, what)).collect()
}

fn u32_matrix(v: &Value, what: &str) -> Result<Vec<Vec<u32>>, String> {
    as_array(v, what)?.iter().map(|row| u32_list(row, what)).collect()
}

fn optional_u32(input: &Value, key: &str, default: u32) -> Result<u32, String> {
    match input.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => as_u32(v, key),
    }
}

pub fn parse_mana_input(input: &Value) -> Result<ManaInput, String> {
    let cpu_node = u32_list(field(input, "cpu_node")?, "cpu_node")?;
    let mode = match field(input, "mode")?.as_str() {
        Some("dynamic") => MsixMode::Dynamic,
        Some("static") => MsixMode::Static,
        _ => {
            return Err(format!(
                "mode: expected \"dynamic\" or \"static\", got {}",
                input["mode"]
            ))
        }
    };
    let online = match input.get("online") {
        None | Some(Value::Null) => vec![true; cpu_node.len()],
        Some(v) => as_array(v, "online")?
            .iter()
            .map(|b| b.as_bool().ok_or_else(|| format!("online: expected booleans, got {b}")))
            .collect::<Result<_, _>>()?,
    };
    let default_affinity = match input.get("default_affinity") {
        None | Some(Value::Null) => None,
        Some(v) => Some(u32_list(v, "default_affinity")?),
    };
    Ok(ManaInput {
        cpu_core: u32_list(field(input, "cpu_core")?, "cpu_core")?,
        node_distance: u32_matrix(field(input, "node_distance")?, "node_distance")?,
        device_node: as_i32(field(input, "device_node")?, "device_node")?,
        mode,
        max_msix: as_u32(field(input, "max_msix")?, "max_msix")?,
        initial_vector_load: u32_list(field(input, "initial_vector_load")?, "initial_vector_load")?,
        online,
        default_affinity,
        cpu_node,
    })
}

pub fn parse_sched_input(input: &Value) -> Result<SchedInput, String> {
    let node_distance = u32_matrix(field(input, "node_distance")?, "node_distance")?;
    let cpn = field(input, "cpus_per_node")?;
    let cpus_per_node = if cpn.is_array() {
        u32_list(cpn, "cpus_per_node")?
    } else {
        vec![as_u32(cpn, "cpus_per_node")?; node_distance.len()]
    };
    let pair = u32_list(field(input, "pair_cpus")?, "pair_cpus")?;
    let pair_cpus: [u32; 2] = pair
        .as_slice()
        .try_into()
        .map_err(|_| format!("pair_cpus: expected 2 CPUs, got {}", pair.len()))?;
    Ok(SchedInput {
        node_distance,
        cpus_per_node,
        smt: optional_u32(input, "smt", 1)?,
        llcs_per_node: optional_u32(input, "llcs_per_node", 1)?,
        node_reclaim_distance: optional_u32(input, "node_reclaim_distance", DEFAULT_NODE_RECLAIM_DISTANCE)?,
        nr_running: u32_list(field(input, "nr_running")?, "nr_running")?,
        pair_cpus,
    })
}

// ---------------------------------------------------------------------------
// Building the expected shape

pub fn mana_outcome_json(o: &ManaOutcome) -> Value {
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

pub fn topology_json(t: &Topology) -> Value {
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
