//! The golden-vector wire format (`shared/golden/README-mana-sched.md`).
//!
//! It parses a case's `input` into the model types, runs the models through
//! `scenario::{mana, sched}`, and takes the value `render::json_mana_sched` builds in exactly
//! the shape of the case's `expected` (same keys, `null` where a field does not apply). The
//! comparison itself is `super::first_difference`.

use serde_json::Value;

use crate::kernel::mana::{ManaInput, MsixMode};
use crate::kernel::sched::{SchedInput, DEFAULT_NODE_RECLAIM_DISTANCE};
use crate::render::json_mana_sched::{mana_run_json, sched_outcome_json};
use crate::scenario::{mana, sched};

/// Runs a MANA case (`{"input": ...}`) and returns `{"unpatched", "patched"}`.
pub(crate) fn run_mana_case(case: &Value) -> Result<Value, String> {
    let input = parse_mana_input(field(case, "input")?)?;
    let run = mana::run_input(input).map_err(|e| e.0)?;
    Ok(mana_run_json(&run))
}

/// Runs a sched case and returns `{"topology", "variants", "summary"}`.
pub(crate) fn run_sched_case(case: &Value) -> Result<Value, String> {
    let input = parse_sched_input(field(case, "input")?)?;
    let run = sched::run_input(input).map_err(|e| e.0)?;
    Ok(sched_outcome_json(&run.outcome))
}

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
