//! The README's commands run as printed. Every line of its `sh` blocks is a command a newcomer
//! pastes: `cargo run --release -- ARGS` runs this build's `irqscope ARGS`, any other line
//! (`lscpu ... > file`) runs in bash, in order, in one scratch directory per block that has
//! `../shared` beside it as the checkout does. A command exits 0 unless its line says `# exit N`.
//! Lines that start a server or the whole suite (`cargo run --release` with no arguments,
//! `scripts/test`) are the two first-line commands and are not run here: the dashboard's start
//! is `web_http`'s and the suite is the run this test is part of.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Every `sh` block of `text`, as its lines.
fn sh_blocks(text: &str) -> Vec<Vec<String>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in text.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```sh") => current = Some(Vec::new()),
            (Some(_), "```") => blocks.push(current.take().unwrap()),
            (Some(b), l) => b.push(l.to_string()),
            (None, _) => {}
        }
    }
    assert!(current.is_none(), "an sh block of the README is not closed");
    blocks
}

/// The command of a line (its trailing `# comment` cut off) and the exit it says it expects.
fn command_of(line: &str) -> Option<(String, i32)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (cmd, comment) = match line.find("  #").or_else(|| line.find(" # ")) {
        Some(i) => (line[..i].trim(), line[i..].trim_start_matches([' ', '#'])),
        None => (line, ""),
    };
    let exit = comment
        .strip_prefix("exit ")
        .and_then(|n| n.split_whitespace().next())
        .map(|n| n.parse().expect("`# exit N` names a number"))
        .unwrap_or(0);
    Some((cmd.to_string(), exit))
}

/// A scratch directory `work` with `../shared` pointing at the checkout's neighbour.
fn scratch(n: usize) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest
        .join("target")
        .join(format!("readme-commands-{}", std::process::id()))
        .join(n.to_string());
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("work")).unwrap();
    std::os::unix::fs::symlink(manifest.join("..").join("shared"), root.join("shared")).unwrap();
    root.join("work")
}

const NOT_RUN_HERE: [&str; 2] = ["cargo run --release", "scripts/test"];

#[test]
fn every_readme_command_runs_as_printed() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let bin = env!("CARGO_BIN_EXE_irqscope");
    let mut ran = 0;
    let mut failures = Vec::new();
    for (n, block) in sh_blocks(&readme).iter().enumerate() {
        let dir = scratch(n);
        for line in block {
            let Some((cmd, want)) = command_of(line) else { continue };
            if NOT_RUN_HERE.contains(&cmd.as_str()) {
                continue;
            }
            let out = match cmd.strip_prefix("cargo run --release -- ") {
                Some(args) => Command::new("bash")
                    .arg("-c")
                    .arg(format!("\"$IRQSCOPE_BIN\" {args}"))
                    .env("IRQSCOPE_BIN", bin)
                    .current_dir(&dir)
                    .output(),
                None => {
                    assert!(!cmd.starts_with("cargo "), "a cargo command the test cannot map: {cmd}");
                    Command::new("bash").arg("-c").arg(&cmd).current_dir(&dir).output()
                }
            }
            .unwrap();
            ran += 1;
            let got = out.status.code().unwrap_or(-1);
            if got != want {
                failures.push(format!(
                    "{cmd}\n  exit {got}, the README expects {want}\n  stderr: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    }
    let _ = std::fs::remove_dir_all(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join(format!("readme-commands-{}", std::process::id())),
    );
    assert!(ran >= 10, "only {ran} README commands found: the blocks moved?");
    assert!(
        failures.is_empty(),
        "README commands that do not run as printed:\n{}",
        failures.join("\n")
    );
}

#[test]
fn the_readme_starts_with_what_it_is_then_its_two_commands() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let first = &sh_blocks(&readme)[0];
    let commands: Vec<String> = first.iter().filter_map(|l| command_of(l)).map(|c| c.0).collect();
    assert_eq!(
        commands, NOT_RUN_HERE,
        "the README's first block is the dashboard and the tests"
    );
    let before = &readme[..readme.find("```sh").unwrap()];
    assert!(before.lines().count() <= 12, "the two commands are on the first screen");
    assert!(
        before.contains("for kernel and driver developers"),
        "who it is for comes first"
    );
}

/// Every path of the tree that the README, ARCHITECTURE.md and the docs name in backticks
/// exists (a cargo example or fuzz target may be named by its target name).
#[test]
fn the_docs_name_only_paths_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![
        root.join("README.md"),
        root.join("ARCHITECTURE.md"),
        root.join("fuzz/README.md"),
        root.join("tests/data/README.md"),
    ];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        files.push(e.unwrap().path());
    }
    const TOP: [&str; 11] = [
        "src/",
        "tests/",
        "scripts/",
        "docs/",
        "benches/",
        "templates/",
        "static/",
        "topologies/",
        "kernel-c/",
        "examples/",
        "fuzz/",
    ];
    let mut missing = Vec::new();
    let mut checked = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, quoted) in text.split('`').enumerate() {
            if i % 2 == 0 || !TOP.iter().any(|t| quoted.starts_with(t)) {
                continue;
            }
            // A placeholder or pattern, not a path.
            if quoted.contains(['*', '{', '<', ' ', '…', '$']) || quoted.contains("SECTION") || quoted.contains("NAME")
            {
                continue;
            }
            let path = quoted.split(':').next().unwrap().trim_end_matches(['.', ',', ')']);
            let exists = root.join(path).exists()
                || root.join(format!("{path}.rs")).exists()
                || path
                    .strip_prefix("fuzz/")
                    .is_some_and(|t| root.join(format!("fuzz/fuzz_targets/{t}.rs")).exists());
            checked += 1;
            if !exists {
                missing.push(format!("{}: {quoted}", f.strip_prefix(root).unwrap().display()));
            }
        }
    }
    assert!(checked > 100, "only {checked} paths checked");
    assert!(missing.is_empty(), "named but not in the tree:\n{}", missing.join("\n"));
}
