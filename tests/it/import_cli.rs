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
        "node 0 cpus: 0 1\nnode 1 cpus: 2 3\nnode distances:\nnode 0 1\n0: 10 20\n1: 21 11\n",
    )
    .unwrap();
    bad(
        &["topology", "import", "numactl", f.to_str().unwrap()],
        "numactl: line 6 (distance from node 1): distance of node 1 to itself is 11, not 10",
    );
}

fn data(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

#[test]
fn import_warnings_go_to_stderr_and_stdout_stays_a_topology_file() {
    let o = irqscope(&[
        "topology",
        "import",
        "lscpu",
        &data("lscpu-p-amd-epyc-9654-2s-nps4.txt"),
    ]);
    let text = stdout(&o);
    let spec: irqscope::topology::TopologySpec = toml::from_str(&text).unwrap();
    irqscope::topology::Topology::new(&spec).unwrap();
    let err = String::from_utf8(o.stderr).unwrap();
    let warnings: Vec<&str> = err.lines().collect();
    assert!(warnings.iter().all(|l| l.starts_with("warning: lscpu: ")), "{err}");
    assert!(
        warnings.contains(
            &"warning: lscpu: no cluster information in lscpu output (no CLUSTER column): imported without \
              clusters, so cluster-aware spreading sees none; take clusters from sysfs cluster_cpus_list \
              (irqscope topology import sysfs)."
        ),
        "{err}"
    );
    assert!(
        err.contains("warning: lscpu: lscpu prints no NUMA distances: the default 10 (local) / 20 (remote) is filled in for the 8 nodes"),
        "{err}"
    );
    // The file keeps them in its note.
    assert!(spec.note.contains("lscpu prints no NUMA distances"), "{}", spec.note);

    // JSON carries the same list.
    let o = irqscope(&[
        "topology",
        "import",
        "numactl",
        &data("numactl-H-amd-epyc-9654-2s-nps4.txt"),
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let w = v["warnings"].as_array().unwrap();
    assert!(
        w.iter()
            .any(|w| w.as_str().unwrap().starts_with("numactl -H carries no SMT")),
        "{v}"
    );
    assert_eq!(v["spec"]["nodes"].as_array().unwrap().len(), 8);
    assert_eq!(v["devices"], serde_json::json!([]));

    // Nothing lost, nothing said.
    let o = irqscope(&["topology", "import", "synthetic", "pack:1 core:4 pu:2"]);
    stdout(&o);
    assert_eq!(String::from_utf8(o.stderr).unwrap(), "");
}

#[test]
fn hwloc_devices_come_with_their_node_and_the_simulate_line_runs() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("l96-io.toml");
    let o = irqscope(&[
        "topology",
        "import",
        "hwloc-xml",
        &data("hwloc-io-azure-l96as-v4.xml"),
        "--out",
        file.to_str().unwrap(),
    ]);
    stdout(&o);
    let err = String::from_utf8(o.stderr).unwrap();
    let devices: Vec<&str> = err.lines().filter(|l| l.starts_with("device: ")).collect();
    assert_eq!(
        devices,
        [
            "device: 0000:01:00.0 Ethernet [1414:00ba] (eth0) on node 0: QUEUES:name=eth0,node=0",
            "device: 0000:41:00.0 NVMe [144d:a808] (nvme0n1) on node 1: QUEUES:name=nvme0n1,node=1",
            "device: 0000:81:00.0 NVMe [144d:a808] (nvme1n1) on no single node (its locality spans nodes): QUEUES:name=nvme1n1",
        ],
        "{err}"
    );
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix("devices: irqscope "))
        .unwrap_or_else(|| panic!("{err}"));
    let line = line.split(" (replace").next().unwrap().replace("QUEUES", "8");
    let args: Vec<&str> = line.split(' ').collect();
    assert_eq!(args[1], file.to_str().unwrap());
    let report = stdout(&irqscope(&args));
    assert!(report.contains("nvme0n1"), "{report}");
    assert!(
        err.contains("warning: hwloc-xml: no cluster information in the hwloc XML"),
        "{err}"
    );
}
