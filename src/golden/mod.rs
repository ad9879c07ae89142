//! Golden-vector cases (`../shared/golden/`): read a case, run the model, compare every field.
//!
//! This is the `irqscope check-golden DIR...` contract (DESIGN.md §3): a file is a case when it
//! is a JSON object with an `expected` key; its kind is its `kind` field or, without one, the
//! name of its directory. The model's result is rebuilt in exactly the shape of `expected` and
//! compared key by key; the first difference is reported with its path.
//!
//! `golden` is a consumer at the top, beside the binaries: it reads `scenario`, `render` and
//! `kernel`, and nothing in the library depends on it. A `system` case is compared against the
//! JSON view the API serves ([`render::json::system_view`]), so the contract checks the
//! public bytes rather than a copy of them. It walks directories ([`collect_files`]) because
//! the test suite and the CLI must run the very same check.

pub mod mana_sched;
pub(crate) mod pipeline;

use crate::kernel::blk_mq_cpumap::{blk_mq_map_queues, Mapper};
use crate::kernel::vector_matrix::EffectiveModel;
use crate::kernel::{group_cpus_evenly, SortGen, Variant};
use crate::render;
use crate::scenario::{self, BlkMqSource, Device, Scenario};
use crate::topology::{Arch, CpuSet, Topology, TopologySpec};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Largest golden file read.
pub(crate) const CASE_BYTES_MAX: u64 = 64 << 20;

/// The result of checking one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaseResult {
    Pass,
    /// The model ran and differs: the first differing field.
    Fail(String),
    /// The case could not be run (unknown kind, malformed input).
    Error(String),
}

#[derive(Debug, Default)]
pub struct Report {
    pub passed: usize,
    pub failed: Vec<(String, String)>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.failed.is_empty() && self.passed > 0
    }
    pub fn summary_line(&self) -> String {
        format!("{} passed, {} failed", self.passed, self.failed.len())
    }
}

/// Every `*.json` under the given paths (files are taken as they are), sorted.
pub fn collect_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &mut out).map_err(|e| format!("{}: {e}", path.display()))?;
        } else if path.exists() {
            // A file named on the command line is read as it is (a device or a FIFO too, within
            // `CASE_BYTES_MAX`).
            out.push(path.clone());
        } else {
            return Err(format!("{}: no such file or directory", path.display()));
        }
    }
    out.sort();
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.path());
    for entry in entries {
        let path = entry.path();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            walk(&path, out)?;
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
    Ok(())
}

/// Check every case file under `paths`. Files that are not cases (no `expected`) are skipped.
pub fn check_paths(paths: &[PathBuf]) -> Result<Report, String> {
    let mut report = Report::default();
    for file in collect_files(paths)? {
        let name = file.display().to_string();
        let value = match read_json(&file) {
            Ok(v) => v,
            Err(e) => {
                report.failed.push((name, e));
                continue;
            }
        };
        if !value.as_object().is_some_and(|o| o.contains_key("expected")) {
            continue;
        }
        let dir_kind = file
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or("");
        let id = value
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| name.clone());
        match check_case(&value, dir_kind) {
            CaseResult::Pass => report.passed += 1,
            CaseResult::Fail(why) | CaseResult::Error(why) => report.failed.push((format!("{id} ({name})"), why)),
        }
    }
    Ok(report)
}

fn read_json(file: &Path) -> Result<Value, String> {
    read_json_within(file, CASE_BYTES_MAX)
}

/// Read `file` as JSON, refusing it once more than `max` bytes came: the bound is on what is
/// read, not on the size the file claims (a device, a FIFO or a growing file claims none).
fn read_json_within(file: &Path, max: u64) -> Result<Value, String> {
    use std::io::Read;
    let size = std::fs::metadata(file).map_err(|e| e.to_string())?.len();
    if size > max {
        return Err(format!("larger than {max} bytes (the most a case file may be)"));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(max + 1).read_to_end(&mut bytes))
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > max {
        return Err(format!("larger than {max} bytes (the most a case file may be)"));
    }
    let text = String::from_utf8(bytes).map_err(|e| format!("not UTF-8 text: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))
}

/// Run one case (already parsed) and compare with its `expected`.
pub fn check_case(case: &Value, dir_kind: &str) -> CaseResult {
    let kind = case.get("kind").and_then(Value::as_str).unwrap_or(dir_kind);
    let actual = match run_case(case, kind) {
        Ok(v) => v,
        Err(e) => return CaseResult::Error(e),
    };
    match first_difference(&case["expected"], &actual, "expected") {
        None => CaseResult::Pass,
        Some(diff) => CaseResult::Fail(diff),
    }
}

/// Run a case of the given kind; the result has the shape of its `expected`.
pub fn run_case(case: &Value, kind: &str) -> Result<Value, String> {
    match kind {
        "group_cpus_evenly" => run_group_cpus(case),
        "system" => run_system(case),
        "blk_mq" => run_blk_mq(case),
        "irq_create_affinity_masks" => pipeline::run_affinity(case),
        "irq_calc_affinity_vectors" => pipeline::run_calc(case),
        "blk_mq_map_hw_queues" => pipeline::run_map_hw(case),
        "mana" => mana_sched::run_mana_case(case),
        "sched" => mana_sched::run_sched_case(case),
        other => Err(format!("cannot run cases of kind {other:?}")),
    }
}

/// Path and values of the first place where `actual` differs from `expected`.
pub fn first_difference(expected: &Value, actual: &Value, path: &str) -> Option<String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (key, ev) in e {
                let p = format!("{path}.{key}");
                match a.get(key) {
                    None => return Some(format!("{p}: missing (expected {})", brief(ev))),
                    Some(av) => {
                        if let Some(d) = first_difference(ev, av, &p) {
                            return Some(d);
                        }
                    }
                }
            }
            a.keys()
                .find(|k| !e.contains_key(*k))
                .map(|k| format!("{path}.{k}: not expected"))
        }
        (Value::Array(e), Value::Array(a)) => {
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                if let Some(d) = first_difference(ev, av, &format!("{path}[{i}]")) {
                    return Some(d);
                }
            }
            (e.len() != a.len()).then(|| format!("{path}: expected {} items, got {}", e.len(), a.len()))
        }
        (e, a) if e == a => None,
        (e, a) => Some(format!("{path}: expected {}, got {}", brief(e), brief(a))),
    }
}

fn brief(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 120 {
        format!("{}…", &s[..s.char_indices().nth(117).map_or(s.len(), |(i, _)| i)])
    } else {
        s
    }
}

fn field<'a>(case: &'a Value, key: &str) -> Result<&'a Value, String> {
    case.get(key).ok_or_else(|| format!("missing key {key:?}"))
}

fn u32_field(case: &Value, key: &str) -> Result<u32, String> {
    field(case, key)?
        .as_u64()
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| format!("{key:?} is not a u32"))
}

/// A case's or device's `"sets"`: `null` (no sets) or a list of set sizes.
fn sets_field(case: &Value) -> Result<Option<Vec<u32>>, String> {
    match field(case, "sets")? {
        Value::Null => Ok(None),
        Value::Array(items) => items
            .iter()
            .map(|v| {
                v.as_u64()
                    .and_then(|v| u32::try_from(v).ok())
                    .ok_or_else(|| "a set size is not a u32".to_string())
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        _ => Err("\"sets\" is not a list".into()),
    }
}

fn str_field<'a>(case: &'a Value, key: &str) -> Result<&'a str, String> {
    field(case, key)?
        .as_str()
        .ok_or_else(|| format!("{key:?} is not a string"))
}

/// The golden files' topology form (`cpus: [{cpu, node, smt, cluster, present, possible}]`).
///
/// Two readings, told apart by the topology's `arch` key (`README.md` beside the vectors that
/// use it, `tests/data/golden-view/`):
/// - without `arch` (`../shared/golden/`), `smt` and `cluster` are the kernel's own masks for
///   every possible CPU, as the kernel C was run with them, and online = present;
/// - with `arch` (`"x86_64"` or `"arm64"`), they are the drawn machine: each CPU may say
///   `online` (default: its `present`), and the product derives the masks the kernel has
///   from the drawing by that architecture's rules ([`Topology::smt`]).
pub fn topology_from_golden(t: &Value) -> Result<Topology, String> {
    let nr_cpu_ids = u32_field(t, "nr_cpu_ids")?;
    let nr_node_ids = u32_field(t, "nr_node_ids")?;
    let cpus = field(t, "cpus")?.as_array().ok_or("\"cpus\" is not a list")?;
    if nr_node_ids == 0 || nr_node_ids > crate::topology::NODES_MAX {
        return Err(format!("nr_node_ids {nr_node_ids} out of range"));
    }
    let arch = match t.get("arch") {
        None => None,
        Some(v) => {
            let name = v.as_str().ok_or("\"arch\" is not a string")?;
            Some(Arch::from_name(name).ok_or_else(|| format!("unknown arch {name:?}"))?)
        }
    };
    let mut nodes = vec![CpuSet::new(nr_cpu_ids); nr_node_ids as usize];
    let mut present = CpuSet::new(nr_cpu_ids);
    let mut online = CpuSet::new(nr_cpu_ids);
    let mut smt: Vec<String> = Vec::new();
    let mut clusters: Vec<String> = Vec::new();
    for c in cpus {
        if !field(c, "possible")?.as_bool().ok_or("\"possible\" is not a bool")? {
            continue;
        }
        let cpu = u32_field(c, "cpu")?;
        let node = u32_field(c, "node")?;
        nodes
            .get_mut(node as usize)
            .ok_or_else(|| format!("CPU {cpu}: node {node} out of range"))?
            .insert(cpu);
        let is_present = field(c, "present")?.as_bool().ok_or("\"present\" is not a bool")?;
        if is_present {
            present.insert(cpu);
        }
        let is_online = match c.get("online") {
            None => is_present,
            Some(v) => v.as_bool().ok_or("\"online\" is not a bool")?,
        };
        if is_online {
            online.insert(cpu);
        }
        for (key, list) in [("smt", &mut smt), ("cluster", &mut clusters)] {
            let text = str_field(c, key)?;
            if !text.is_empty() && !list.iter().any(|s| s == text) {
                list.push(text.to_string());
            }
        }
    }
    let spec = TopologySpec {
        name: t
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("golden")
            .chars()
            .take(200)
            .collect(),
        nr_cpu_ids: Some(nr_cpu_ids),
        nr_node_ids: Some(nr_node_ids),
        nodes: Some(nodes.iter().map(CpuSet::to_cpulist).collect()),
        smt,
        clusters,
        present: Some(present.to_cpulist()),
        online: Some(online.to_cpulist()),
        arch,
        ..TopologySpec::default()
    };
    let topology = match arch {
        Some(_) => Topology::new(&spec),
        None => Topology::with_masks_as_given(&spec),
    };
    topology.map_err(|e| format!("topology: {e}"))
}

fn variant_of(case: &Value) -> Result<Variant, String> {
    let name = str_field(case, "variant")?;
    Variant::from_name(name).ok_or_else(|| format!("unknown variant {name:?}"))
}

fn sort_of(case: &Value) -> Result<SortGen, String> {
    let name = str_field(case, "sort")?;
    SortGen::from_name(name).ok_or_else(|| format!("unknown sort {name:?}"))
}

fn run_group_cpus(case: &Value) -> Result<Value, String> {
    let topo = topology_from_golden(field(case, "topology")?)?;
    let variant = variant_of(case)?;
    let sort = sort_of(case)?;
    let numgrps = u32_field(case, "numgrps")?;
    if numgrps > crate::topology::CPUS_MAX * 4 {
        return Err(format!("numgrps {numgrps} is beyond the model's limit"));
    }
    let mut counter = u32_field(case, "spread_counter")?;
    let mut warnings = Vec::new();
    let result = group_cpus_evenly(&topo, numgrps, variant, sort, &mut counter, &mut warnings);
    Ok(match result {
        None => json!({"null": true, "nummasks": null, "masks": null, "spread_offset": null,
                       "spread_counter_after": counter}),
        Some(g) => json!({
            "null": false,
            "nummasks": g.nummasks(),
            "masks": g.masks().iter().map(CpuSet::to_cpulist).collect::<Vec<_>>(),
            "spread_offset": g.spread_offset(),
            "spread_counter_after": counter,
        }),
    })
}

fn run_blk_mq(case: &Value) -> Result<Value, String> {
    let topo = topology_from_golden(field(case, "topology")?)?;
    let mapper_name = str_field(case, "mapper")?;
    let mapper = Mapper::from_name(mapper_name).ok_or_else(|| format!("unknown mapper {mapper_name:?}"))?;
    let variant = if mapper.uses_group_cpus() {
        variant_of(case)?
    } else {
        Variant::PreCluster
    };
    let sort = sort_of(case)?;
    let nr_queues = u32_field(case, "nr_queues")?;
    if nr_queues > scenario::VECTORS_PER_DEVICE_MAX * 4 {
        return Err(format!("nr_queues {nr_queues} is beyond the model's limit"));
    }
    let queue_offset = u32_field(case, "queue_offset")?;
    let mut counter = u32_field(case, "spread_counter")?;
    let mut warnings = Vec::new();
    let map = blk_mq_map_queues(
        &topo,
        mapper,
        nr_queues,
        queue_offset,
        variant,
        sort,
        &mut counter,
        &mut warnings,
    );
    Ok(json!({"map": map.map, "spread_counter_after": counter}))
}

/// Build a scenario from a `system` case.
pub(crate) fn scenario_from_golden(case: &Value) -> Result<Scenario, String> {
    let topo = topology_from_golden(field(case, "topology")?)?;
    let effective_name = str_field(case, "effective_model")?;
    let effective = EffectiveModel::from_name(effective_name)
        .ok_or_else(|| format!("unknown effective model {effective_name:?}"))?;
    let devices = field(case, "devices")?
        .as_array()
        .ok_or("\"devices\" is not a list")?
        .iter()
        .map(device_from_golden)
        .collect::<Result<Vec<_>, _>>()?;
    Scenario::new(
        Arc::new(topo),
        devices,
        variant_of(case)?,
        sort_of(case)?,
        effective,
        u32_field(case, "spread_counter")?,
    )
    .map_err(|e| e.to_string())
}

fn device_from_golden(d: &Value) -> Result<Device, String> {
    let opt_u32 = |key: &str| -> Result<Option<u32>, String> {
        match field(d, key)? {
            Value::Null => Ok(None),
            v => v
                .as_u64()
                .and_then(|v| u32::try_from(v).ok())
                .map(Some)
                .ok_or_else(|| format!("{key:?} is not a u32")),
        }
    };
    let sets = sets_field(d)?;
    let blk_mq = match field(d, "blk_mq")? {
        Value::Null => None,
        Value::String(s) => Some(BlkMqSource::from_name(s).ok_or_else(|| format!("unknown blk_mq {s:?}"))?),
        _ => return Err("\"blk_mq\" is not a string".into()),
    };
    Ok(Device {
        name: str_field(d, "name")?.to_string(),
        vectors: u32_field(d, "vectors")?,
        pre_vectors: u32_field(d, "pre_vectors")?,
        post_vectors: u32_field(d, "post_vectors")?,
        sets,
        managed_affinity: field(d, "managed_affinity")?
            .as_bool()
            .ok_or("\"managed_affinity\" is not a bool")?,
        node: opt_u32("node")?,
        hv_pci: false,
        blk_mq,
        blk_mq_queues: opt_u32("blk_mq_queues")?,
        driver: crate::scenario::Driver::Generic,
    })
}

fn run_system(case: &Value) -> Result<Value, String> {
    let scenario = scenario_from_golden(case)?;
    let outcome = scenario::try_run(&scenario).map_err(|e| e.to_string())?;
    Ok(render::json::system_view(&scenario, &outcome))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_name_the_path() {
        let e = json!({"a": [1, {"b": "x"}], "c": null});
        assert_eq!(first_difference(&e, &e, "expected"), None);
        let a = json!({"a": [1, {"b": "y"}], "c": null});
        assert_eq!(
            first_difference(&e, &a, "expected").unwrap(),
            "expected.a[1].b: expected \"x\", got \"y\""
        );
        let a = json!({"a": [1], "c": null});
        assert!(first_difference(&e, &a, "expected")
            .unwrap()
            .contains("expected 2 items, got 1"));
        let a = json!({"a": [1, {"b": "x"}]});
        assert!(first_difference(&e, &a, "expected")
            .unwrap()
            .contains("expected.c: missing"));
    }

    /// A case file is read within its bound whatever size it claims: a file past the bound is a
    /// failed case naming it, and `/dev/zero` (size 0, endless) ends the same way.
    #[test]
    fn case_files_are_read_within_a_bound() {
        let dir = std::env::temp_dir().join(format!("irqscope-golden-bound-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("big.json");
        std::fs::write(&file, format!("{{\"expected\": \"{}\"}}", "x".repeat(100))).unwrap();
        assert!(read_json_within(&file, 200).is_ok());
        let e = read_json_within(&file, 50).unwrap_err();
        assert!(e.contains("larger than 50 bytes"), "{e}");
        // Through `check_paths`: the failed case is the file, with the reason.
        let sparse = dir.join("sparse.json");
        std::fs::File::create(&sparse)
            .unwrap()
            .set_len(CASE_BYTES_MAX + 1)
            .unwrap();
        let report = check_paths(std::slice::from_ref(&sparse)).unwrap();
        assert_eq!(report.passed, 0);
        assert_eq!(report.failed.len(), 1, "{:?}", report.failed);
        assert!(report.failed[0].0.contains("sparse.json"), "{:?}", report.failed);
        assert!(report.failed[0].1.contains("larger than"), "{:?}", report.failed);
        std::fs::remove_dir_all(&dir).unwrap();
        let zero = Path::new("/dev/zero");
        if zero.exists() {
            let report = check_paths(&[zero.to_path_buf()]).unwrap();
            assert_eq!(report.failed.len(), 1, "{:?}", report.failed);
            assert!(report.failed[0].1.contains("larger than"), "{:?}", report.failed);
        }
    }

    #[test]
    fn unknown_kind_is_an_error() {
        let case = json!({"kind": "nope", "expected": {}});
        assert!(matches!(check_case(&case, ""), CaseResult::Error(_)));
        assert!(matches!(
            check_case(&json!({"expected": {}}), "mana"),
            CaseResult::Error(_)
        ));
        assert!(matches!(
            check_case(&json!({"expected": {}}), "elsewhere"),
            CaseResult::Error(_)
        ));
    }
}
