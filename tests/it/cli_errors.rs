//! Bad input gets exit status 2 and one line naming the problem, never a panic.

use crate::common::fs::Scratch;
use std::process::Command;

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_irqscope"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn expect_error(args: &[&str], want: &str) {
    let (code, stderr) = run(args);
    assert_eq!(code, 2, "{args:?}: exit {code}, stderr {stderr:?}");
    assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "{args:?}: not one line: {stderr:?}"
    );
    assert!(stderr.contains(want), "{args:?}: {stderr:?} does not mention {want:?}");
}

fn write_temp(dir: &Scratch, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn bad_topologies() {
    let dir = Scratch::new("cli");
    let two_nodes = write_temp(&dir, "two.toml", "name = 'x'\nnodes = ['0-3', '3-7']\n");
    expect_error(&["simulate", &two_nodes, "4"], "CPU 3 is already in node 0");
    let smt = write_temp(&dir, "smt.toml", "name = 'x'\nnodes = ['0-3', '4-7']\nsmt = ['3-4']\n");
    expect_error(&["simulate", &smt, "4"], "different nodes");
    let dist = write_temp(
        &dir,
        "dist.toml",
        "name = 'x'\nnodes = ['0-3', '4-7']\ndistances = [[10, 20], [20]]\n",
    );
    expect_error(&["simulate", &dist, "4"], "square");
    let huge = write_temp(
        &dir,
        "huge.toml",
        "name = 'x'\n[generate]\npackages = 64\ncores_per_node = 256\nthreads_per_core = 2\n",
    );
    expect_error(&["simulate", &huge, "4"], "exceeds the limits");
    let not_toml = write_temp(&dir, "bad.toml", "name = \n");
    expect_error(&["simulate", &not_toml, "4"], "bad.toml");
    let unknown_key = write_temp(&dir, "key.toml", "name = 'x'\nnodes = ['0-3']\ncpus = 4\n");
    expect_error(&["simulate", &unknown_key, "4"], "unknown field");
    expect_error(&["simulate", "no-such-machine", "4"], "neither a preset");
}

#[test]
fn bad_scenarios() {
    let dir = Scratch::new("cli");
    expect_error(&["simulate", "azure-l48s-v2", "6xq"], "is not a number");
    expect_error(&["simulate", "azure-l48s-v2", "4:frob=1"], "unknown key");
    expect_error(
        &["simulate", "azure-l48s-v2", "4", "--variant", "rotation-v2"],
        "unknown variant \"rotation-v2\"",
    );
    expect_error(&["simulate", "azure-l48s-v2", "4", "--sort", "quick"], "unknown sort");
    expect_error(
        &["simulate", "azure-l48s-v2", "8:sets=6+6"],
        "more than its 8 affinity vectors",
    );
    expect_error(
        &["simulate", "azure-l48s-v2", "999999"],
        "vectors; a device has 1 to 2048",
    );
    expect_error(&["simulate", "azure-l48s-v2", "300x4"], "at most 256");
    expect_error(&["simulate", "azure-l48s-v2", "4:node=9"], "node 9 does not exist");
    expect_error(
        &["simulate", "azure-l48s-v2", "2x4:name=a", "1x4:name=a0"],
        "used twice",
    );
    let scenario = write_temp(
        &dir,
        "s.json",
        "{\"topology\": \"azure-l48s-v2\", \"devices\": [{\"queues\": 4}], \"variant\": \"x\"}",
    );
    expect_error(&["simulate", "--scenario", &scenario], "unknown variant");
    let broken = write_temp(&dir, "b.json", "{\"topology\": ");
    expect_error(&["simulate", "--scenario", &broken], "b.json");
    expect_error(&["blk-mq", "azure-l48s-v2", "--queues", "0"], "queues 0: 1 to");
    expect_error(
        &["blk-mq", "azure-l48s-v2", "--queues", "4", "--mapper", "v9"],
        "unknown mapper",
    );
}

#[test]
fn check_golden_contract() {
    // A directory without cases: nothing passed, so the check fails (exit 1, not 0).
    let empty = Scratch::new("empty");
    let out = Command::new(env!("CARGO_BIN_EXE_irqscope"))
        .args(["check-golden", empty.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("0 passed, 0 failed\n"));
    // A case of a kind nobody can run counts as failed.
    let odd = Scratch::new("odd");
    let dir = odd.join("odd");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("c.json"), "{\"id\": \"c\", \"expected\": {}}").unwrap();
    std::fs::write(dir.join("manifest.json"), "{\"cases\": []}").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_irqscope"))
        .args(["check-golden", dir.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL c"), "{stdout}");
    assert!(stdout.ends_with("0 passed, 1 failed\n"), "{stdout}");
    expect_error(&["check-golden", "/no/such/dir"], "no such file or directory");
}

#[test]
fn bad_model_inputs() {
    expect_error(&["mana", "azure-4vcpu-smt2", "--load", "0,1"], "one per CPU (4)");
    expect_error(&["mana", "azure-4vcpu-smt2", "--mode", "weird"], "dynamic or static");
    expect_error(&["mana", "azure-4vcpu-smt2", "--max-msix", "1"], "probe fails");
    expect_error(
        &["sched", "arm64-4node-diameter3", "--pair-node", "9"],
        "the machine has 4 node(s)",
    );
    expect_error(
        &["sched", "azure-4vcpu-smt2", "--pair-node", "0"],
        "at least 2 are needed",
    );
    expect_error(
        &["sched", "xeon-2s-18c-smt2", "--llcs-per-node", "5"],
        "llcs_per_node 5 does not divide",
    );
}

#[test]
fn argument_errors_are_one_line() {
    expect_error(&["simulate", "--frob"], "unexpected argument '--frob'");
    expect_error(&["simulate", "--varient", "x"], "similar argument exists: '--variant'");
    expect_error(&["blk-mq", "azure-l48s-v2", "--queues", "q"], "irqscope blk-mq --help");
    expect_error(&["topology", "import"], "<KIND> <PATH>");
    expect_error(&["topology"], "a subcommand is required");
    expect_error(&["frob"], "unrecognized subcommand 'frob'");
    expect_error(&["serve", "--addr"], "a value is required for '--addr");
    // Help and version still print in full, on stdout, with exit 0.
    let out = Command::new(env!("CARGO_BIN_EXE_irqscope"))
        .args(["simulate", "--help"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.lines().count() > 10 && help.contains("--scenario"), "{help}");
}

#[test]
fn input_files_are_read_within_their_limit() {
    let dir = Scratch::new("cli");
    // A character device has no size in its metadata; the limit holds on what is read.
    expect_error(
        &["simulate", "--scenario", "/dev/zero"],
        "/dev/zero: larger than 16777216 bytes",
    );
    expect_error(&["simulate", "/dev/zero", "4"], "larger than");
    expect_error(&["mana", "--input", "/dev/zero"], "larger than");
    let big = write_temp(&dir, "big.json", &" ".repeat((16 << 20) + 1));
    expect_error(&["simulate", "--scenario", &big], "larger than");
    let latin1 = dir.join("latin1.json");
    std::fs::write(&latin1, b"{\"topology\": \"\xe9\"}").unwrap();
    expect_error(&["simulate", "--scenario", latin1.to_str().unwrap()], "not UTF-8");
}
