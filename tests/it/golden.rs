//! Every golden vector in `../shared/golden`, field for field, through the same code path as
//! `irqscope check-golden`.

use irqscope::golden::{check_paths, collect_files};
use std::path::PathBuf;

fn golden_dir(kind: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/golden")
        .join(kind)
}

fn check(kind: &str, at_least: usize) {
    let dir = golden_dir(kind);
    assert!(
        dir.is_dir(),
        "{} is missing: the golden vectors live in ../shared beside the checkout",
        dir.display()
    );
    let report = check_paths(&[dir]).unwrap();
    let failures: Vec<String> = report.failed.iter().map(|(c, w)| format!("{c}: {w}")).collect();
    assert!(
        failures.is_empty(),
        "{} golden cases fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(report.passed >= at_least, "only {} {kind} cases ran", report.passed);
}

#[test]
fn group_cpus_evenly_cases() {
    check("group_cpus", 75);
}

#[test]
fn system_cases() {
    check("system", 38);
}

#[test]
fn blk_mq_cases() {
    check("blk_mq", 17);
}

#[test]
fn mana_cases() {
    check("mana", 17);
}

#[test]
fn sched_cases() {
    check("sched", 19);
}

/// The manifest is not a case and is skipped; every listed case is found.
#[test]
fn manifest_cases_exist() {
    let root = golden_dir("");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("irq-manifest.json")).unwrap()).unwrap();
    let files = collect_files(std::slice::from_ref(&root)).unwrap();
    for case in manifest["cases"].as_array().unwrap() {
        let file = root.join(case["file"].as_str().unwrap());
        assert!(files.contains(&file), "{} listed but not found", file.display());
    }
}

/// A wrong expectation must be reported with its path: the check can fail.
#[test]
fn a_changed_expectation_fails() {
    let path = golden_dir("group_cpus").join("edge-nonpresent-g6-pre-cluster.json");
    let mut case: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    case["expected"]["masks"][0] = "8-9".into();
    match irqscope::golden::check_case(&case, "group_cpus") {
        irqscope::golden::CaseResult::Fail(why) => assert!(why.contains("expected.masks[0]"), "{why}"),
        other => panic!("expected a failure, got {other:?}"),
    }
}
