//! `devices[].spread_offsets` and `blk_mq_spread_offsets` list the counter values a device
//! consumed (`../shared/golden/README.md`): a `group_cpus_evenly` call with `numgrps == 1` uses
//! offset 0 but does not advance the counter, so it adds nothing. Golden-style cases on the
//! machine of `d16plds_v6-2nvme-rotation-firstcpu-c1`, run through the `check-golden` code path.

use irqscope::golden::run_case;
use serde_json::{json, Value};
use std::path::PathBuf;

/// The golden case's input with `devices` and the counter replaced.
fn case(variant: &str, counter: u32, devices: Value) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/golden/system/d16plds_v6-2nvme-rotation-firstcpu-c1.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut case: Value = serde_json::from_str(&text).unwrap();
    case["variant"] = json!(variant);
    case["spread_counter"] = json!(counter);
    case["devices"] = devices;
    case
}

fn device(name: &str, vectors: u32, pre: u32, sets: Value, blk_mq: Value, queues: Value) -> Value {
    json!({"name": name, "vectors": vectors, "pre_vectors": pre, "post_vectors": 0, "sets": sets,
           "managed_affinity": true, "node": null, "blk_mq": blk_mq, "blk_mq_queues": queues})
}

/// (per-device spread_offsets, per-device blk_mq_spread_offsets, spread_counter_after)
fn offsets(case: &Value) -> (Vec<Value>, Vec<Value>, Value) {
    let out = run_case(case, "system").unwrap();
    let devices = out["devices"].as_array().unwrap();
    (
        devices.iter().map(|d| d["spread_offsets"].clone()).collect(),
        devices.iter().map(|d| d["blk_mq_spread_offsets"].clone()).collect(),
        out["spread_counter_after"].clone(),
    )
}

/// A one-vector device under `rotation` consumes nothing; the next device takes the counter's
/// first value.
#[test]
fn one_vector_rotation_device_consumes_no_offset() {
    let devices = json!([
        device("one", 1, 0, Value::Null, Value::Null, Value::Null),
        device("six", 7, 1, Value::Null, Value::Null, Value::Null),
    ]);
    let (spread, _, after) = offsets(&case("rotation", 5, devices));
    assert_eq!(spread, [json!([]), json!([5])]);
    assert_eq!(after, json!(6));
}

/// Sets `[1, 3]`: the one-vector set uses offset 0 and consumes nothing, the 3-vector set
/// consumes the counter's value; the same for every rotation revision.
#[test]
fn one_vector_set_consumes_no_offset() {
    for variant in ["rotation", "rotation-ohcl", "rotation-v1r"] {
        let devices = json!([device("sets", 5, 1, json!([1, 3]), Value::Null, Value::Null)]);
        let (spread, _, after) = offsets(&case(variant, 9, devices));
        assert_eq!(spread, [json!([9])], "{variant}");
        assert_eq!(after, json!(10), "{variant}");
    }
}

/// A one-queue `blk_mq_map_queues` call consumes nothing either; a two-queue call does (each
/// device: its affinity call first, then its map).
#[test]
fn one_queue_cpumap_consumes_no_offset() {
    let devices = json!([
        device("q1", 3, 1, Value::Null, json!("cpumap"), json!(1)),
        device("q2", 3, 1, Value::Null, json!("cpumap"), json!(2)),
    ]);
    let (spread, blk, after) = offsets(&case("rotation", 0, devices));
    assert_eq!(spread, [json!([0]), json!([1])]);
    assert_eq!(blk, [json!([]), json!([2])]);
    assert_eq!(after, json!(3));
    let devices = json!([device("q1", 2, 1, Value::Null, json!("cpumap"), json!(1))]);
    let (spread, blk, after) = offsets(&case("rotation", 7, devices));
    assert_eq!((spread, blk, after), (vec![json!([])], vec![json!([])], json!(7)));
}

/// Non-rotation variants never list offsets.
#[test]
fn upstream_variants_list_none() {
    for variant in ["pre-cluster", "cluster"] {
        let devices = json!([device("sets", 5, 1, json!([1, 3]), json!("cpumap"), json!(2))]);
        let (spread, blk, after) = offsets(&case(variant, 3, devices));
        assert_eq!(
            (spread, blk, after),
            (vec![json!([])], vec![json!([])], json!(3)),
            "{variant}"
        );
    }
}
