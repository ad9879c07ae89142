//! `rotation-v1`, the rotation patch as first posted (microsoft/OHCL-Linux-Kernel
//! `e21bb8ee0b0b`): its golden vectors (`../shared/golden-rotation-v1`, from that C), the empty
//! masks near 2^32 failing the allocation in every output, and the NVMe admin tag sets whose
//! one-group calls take a counter value in the order the controllers probe.

use crate::common::cli::irqscope;
use crate::common::http::get;
use irqscope::golden::check_paths;
use irqscope::scenario::permalink;
use irqscope::scenario::spec::{parse_device_token, ScenarioSpec, TopologyRef};
use serde_json::Value;
use std::path::PathBuf;

/// Every case of `../shared/golden-rotation-v1`, field for field, through `check-golden`'s path.
#[test]
fn golden_rotation_v1_cases() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/golden-rotation-v1");
    assert!(dir.is_dir(), "{} is missing", dir.display());
    let report = check_paths(&[dir]).unwrap();
    let failures: Vec<String> = report.failed.iter().map(|(c, w)| format!("{c}: {w}")).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(report.passed >= 23, "only {} cases ran", report.passed);
}

/// Azure L96as_v4, 21 vectors at counter 2^32-6 (the machine and call of golden case
/// g-rotv1-022): the last group of node 0 is empty, so `alloc_descs()` refuses vector 21 with
/// -EINVAL, and the text, the JSON and the page say so as they say ENOSPC.
#[tokio::test]
async fn empty_mask_fails_the_allocation_in_text_json_and_page() {
    let args = [
        "simulate",
        "azure-l96as-v4",
        "21:name=nvme,pre=1",
        "--variant",
        "rotation-v1",
        "--counter",
        "4294967290",
    ];
    let text = irqscope(&args);
    assert!(
        text.contains("EINVAL:   nvme vector 21 (managed) fails at allocation: alloc_descs()"),
        "{text}"
    );
    let mut json_args = args.to_vec();
    json_args.extend(["--format", "json"]);
    let v: Value = serde_json::from_str(&irqscope(&json_args)).unwrap();
    let first = &v["vector_space"]["first_failure"];
    assert_eq!(
        (
            first["device"].as_str(),
            first["vector"].as_u64(),
            first["stage"].as_str(),
            first["errno"].as_str()
        ),
        (Some("nvme"), Some(21), Some("allocation"), Some("EINVAL"))
    );
    assert_eq!(v["devices"][0]["vectors"][21]["mask"], "");
    assert_eq!(v["devices"][0]["vectors"][21]["effective_cpu"], Value::Null);
    let spec = ScenarioSpec {
        variant: "rotation-v1".into(),
        spread_counter: 4294967290,
        ..ScenarioSpec::new(
            TopologyRef::Preset("azure-l96as-v4".into()),
            vec![parse_device_token("21:name=nvme,pre=1").unwrap()],
        )
    };
    let page = get(&format!("/s/{}", permalink::encode(&spec).unwrap())).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body
            .contains("nvme vector 21 (managed) fails at allocation: alloc_descs()"),
        "{}",
        page.body
    );
    // Under the first-cpu model (no vector space tracked) the failure is still reported.
    let mut arm = args.to_vec();
    arm.extend(["--effective", "first-cpu"]);
    let text = irqscope(&arm);
    assert!(text.contains("EINVAL:   nvme vector 21"), "{text}");
    // The reconstruction reduces the offset first and fills every group.
    let mut v1r = args.to_vec();
    v1r[4] = "rotation-v1r";
    assert!(!irqscope(&v1r).contains("EINVAL"));
}

/// The admin tag sets through the CLI, its JSON and a permalink: sequential probing gives the
/// I/O spreads c0+1, c0+3, c0+5; parallel probing c0+3, c0+4, c0+5; the command line and the
/// link carry the order, and a link without it is read as sequential.
#[tokio::test]
async fn admin_tag_sets_in_probe_order() {
    let offsets = |probe: &str| -> (Vec<Value>, Vec<Value>, String) {
        let out = irqscope(&[
            "simulate",
            "azure-l48s-v2",
            "3x32:name=nvme,pre=1,driver=nvme",
            "--variant",
            "rotation-v1",
            "--counter",
            "10",
            "--probe",
            probe,
            "--format",
            "json",
        ]);
        let v: Value = serde_json::from_str(&out).unwrap();
        let devices = v["devices"].as_array().unwrap();
        (
            devices.iter().map(|d| d["admin_spread_offsets"].clone()).collect(),
            devices.iter().map(|d| d["spread_offsets"].clone()).collect(),
            v["scenario"]["probe"].as_str().unwrap_or("").to_string(),
        )
    };
    let j = |v: &[u32]| v.iter().map(|&x| serde_json::json!([x])).collect::<Vec<_>>();
    assert_eq!(
        offsets("sequential"),
        (j(&[10, 12, 14]), j(&[11, 13, 15]), "sequential".into())
    );
    assert_eq!(
        offsets("parallel"),
        (j(&[10, 11, 12]), j(&[13, 14, 15]), "parallel".into())
    );
    let text = irqscope(&[
        "simulate",
        "azure-l48s-v2",
        "3x32:name=nvme,pre=1,driver=nvme",
        "--variant",
        "rotation-v1",
        "--probe",
        "parallel",
    ]);
    // Words, as the report wraps its lines between them.
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = words(&text);
    assert!(text.contains("--probe parallel"), "{text}");
    assert!(text.contains("3x32:name=nvme,driver=nvme,pre=1"), "{text}");
    assert!(text.contains("admin tag set offset 0, offset 3"), "{text}");
    let spec = ScenarioSpec {
        variant: "rotation-v1".into(),
        probe: Some("parallel".into()),
        ..ScenarioSpec::new(
            TopologyRef::Preset("azure-l48s-v2".into()),
            vec![parse_device_token("3x32:name=nvme,pre=1,driver=nvme").unwrap()],
        )
    };
    let link = permalink::encode(&spec).unwrap();
    let twin = get(&format!("/s/{link}/text")).await;
    assert_eq!(twin.status, 200, "{}", twin.body);
    assert!(
        words(&twin.body).contains("admin tag set offset 2, offset 5"),
        "{}",
        twin.body
    );
    // The page takes the order as a query field too.
    let page =
        get("/?preset=azure-l48s-v2&devices=3x32:name=nvme,pre=1,driver=nvme&variant=rotation-v1&probe=parallel").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("--probe parallel"), "{}", page.body);
    assert_eq!(
        get("/?preset=azure-l48s-v2&devices=8:driver=nvme&probe=random")
            .await
            .status,
        400
    );
    let bad = get("/?preset=azure-l48s-v2&devices=2x8:driver=scsi").await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    // Bad probe orders are refused with a message, not a panic.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_irqscope"))
        .args(["simulate", "azure-l48s-v2", "8:driver=nvme", "--probe", "random"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown probe order \"random\""));
}
