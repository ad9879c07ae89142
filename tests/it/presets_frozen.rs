//! Presets are frozen under their names: permalinks name a preset rather than carrying it, so a
//! preset's text may never change once released, and no preset may disappear. A corrected
//! machine is a new file with a new name. `tests/data/preset-digests.txt` records every released
//! preset; a new preset is released by adding the line this test prints.

use irqscope::catalogue;
use std::collections::BTreeMap;

/// FNV-1a, 64 bit: a stable digest of the file text (not a security measure).
fn digest(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[test]
fn released_presets_never_change() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/preset-digests.txt");
    let recorded: BTreeMap<String, String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (name, d) = l.split_once(' ').unwrap();
            (name.to_string(), d.trim().to_string())
        })
        .collect();
    let mut problems = Vec::new();
    for (name, d) in &recorded {
        match catalogue::source_text(name) {
            None => problems.push(format!("{name}: released preset removed (old permalinks name it)")),
            Some(text) if digest(text) != *d => problems.push(format!(
                "{name}: released preset changed; add the corrected machine under a new name"
            )),
            Some(_) => {}
        }
    }
    for name in catalogue::names() {
        if !recorded.contains_key(name) {
            problems.push(format!(
                "{name}: not released yet; add this line to {}: {name} {}",
                path.display(),
                digest(catalogue::source_text(name).unwrap())
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Presets whose files never changed but whose answers did, and why; `docs/release-notes.md`
/// says the same. A preset missing here whose answer a model fix changed would fail below.
///
/// - `azure-4vcpu-smt2`, `arm64-4node-diameter3`, `azure-l96as-v4-noclusters`: drawn without
///   clusters. The kernel has no empty cluster mask (x86: `cpu_l2c_shared_mask` falls back to
///   the SMT siblings; arm64: `cluster_sibling` is the CPU alone), so `cluster` (v7.0 ..) now
///   groups their CPUs by those masks as Debian 7.2.13's lib/group_cpus.c does: three queues
///   on azure-4vcpu-smt2 were `0-1,2,3` and are `2-3,0,1`; azure-l96as-v4-noclusters now
///   places as azure-l96as-v4 (its SMT-pair clusters) does.
const ANSWERS_CHANGED_BY_UNCLUSTERED_MASKS: [&str; 3] =
    ["arm64-4node-diameter3", "azure-4vcpu-smt2", "azure-l96as-v4-noclusters"];

#[test]
fn presets_whose_answers_changed_say_why() {
    let unclustered: Vec<&str> = catalogue::names()
        .filter(|n| !catalogue::get(n).unwrap().unclustered().is_empty())
        .collect();
    assert_eq!(unclustered, ANSWERS_CHANGED_BY_UNCLUSTERED_MASKS);
    let out = crate::common::cli::irqscope(&["simulate", "azure-4vcpu-smt2", "3", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let masks: Vec<&str> = v["devices"][0]["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["mask"].as_str().unwrap())
        .collect();
    assert_eq!(masks, ["2-3", "0", "1"]);
    let notes = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/release-notes.md"))
        .unwrap();
    for name in ANSWERS_CHANGED_BY_UNCLUSTERED_MASKS {
        assert!(notes.contains(name), "docs/release-notes.md names {name}");
    }
}
