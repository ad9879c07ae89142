//! `irqscope topology import|export|show|list` end to end: output, files, and exit status 2 with
//! a one-line message on bad input.

use std::process::{Command, Output};

fn irqscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_irqscope"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn bad(args: &[&str], want: &str) {
    let o = irqscope(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line: {err:?}");
    assert!(err.contains(want), "{args:?}: {err:?} should contain {want:?}");
}

#[test]
fn import_prints_toml_that_loads() {
    let text = stdout(&irqscope(&[
        "topology",
        "import",
        "synthetic",
        "pack:2 numa:2 l2:2 core:2 pu:2",
    ]));
    assert!(
        text.contains("nodes = [\"0-7\", \"8-15\", \"16-23\", \"24-31\"]"),
        "{text}"
    );
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("imported.toml");
    let o = irqscope(&[
        "topology",
        "import",
        "synthetic",
        "pack:1 core:4 pu:2",
        "--out",
        file.to_str().unwrap(),
        "--name",
        "four by two",
    ]);
    stdout(&o);
    let shown = stdout(&irqscope(&["topology", "show", file.to_str().unwrap()]));
    assert!(shown.starts_with("four by two: 8 CPUs (0-7), 1 node, SMT2"), "{shown}");
    let root = dir.join("sysfs-root");
    let _ = std::fs::remove_dir_all(&root);
    stdout(&irqscope(&[
        "topology",
        "export",
        "sysfs",
        "azure-l48s-v2",
        root.to_str().unwrap(),
    ]));
    let back = stdout(&irqscope(&["topology", "import", "sysfs", root.to_str().unwrap()]));
    assert!(
        back.contains("nodes = [\"0-7\", \"8-15\", \"16-23\", \"24-31\", \"32-39\", \"40-47\"]"),
        "{back}"
    );
}

#[test]
fn export_and_list() {
    assert_eq!(
        stdout(&irqscope(&["topology", "export", "synthetic", "vm-8vcpu-smt2"])).trim(),
        "pack:1 l2:4 core:1 pu:2"
    );
    let toml = stdout(&irqscope(&["topology", "export", "toml", "intel-core-i9-13900k"]));
    assert!(toml.contains("smt = [\"0-1\""), "{toml}");
    let list = stdout(&irqscope(&["topology", "list"]));
    assert!(list.contains("synthetic-8192") && list.contains("8192 CPUs"), "{list}");
}

#[test]
fn bad_input_exits_2_with_one_line() {
    bad(
        &["topology", "import", "synthetic", "pack:2 core"],
        "synthetic: level 2 (core): expected type:count",
    );
    bad(
        &["topology", "import", "lscpu", "/nonexistent/lscpu.txt"],
        "/nonexistent/lscpu.txt",
    );
    bad(&["topology", "import", "sysfs", "/nonexistent"], "no cpu/ directory");
    bad(
        &["topology", "export", "synthetic", "xeon-2s-18c-smt2"],
        "export to synthetic",
    );
    bad(&["topology", "export", "sysfs", "vm-2vcpu-smt2"], "needs a directory");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli");
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad-numactl.txt");
    std::fs::write(
        &f,
        "node 0 cpus: 0 1\nnode 1 cpus: 2 3\nnode distances:\nnode 0 1\n0: 10 20\n1: 21 10\n",
    )
    .unwrap();
    bad(
        &["topology", "import", "numactl", f.to_str().unwrap()],
        "numactl: line 5 (distance from node 0): distance matrix is not symmetric",
    );
}
