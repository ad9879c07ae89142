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
