//! Import against output that real tools produced: hwloc's `lstopo` (synthetic topologies and
//! the sysfs trees irqscope exports), `lscpu` (this machine, and `--sysroot` on exported trees),
//! this machine's own `/sys`, and the captured fixtures in `tests/data/` (see its README).
//!
//! Tests that need `lstopo` or `lscpu` print `SKIPPED: …` and pass when the tool is absent,
//! unless `IRQSCOPE_REQUIRE_TOOLS=1` (CI sets it after `apt-get install hwloc`).

use irqscope::catalogue;
use irqscope::topology::import::{export, hwloc, lscpu, numactl, shape, sysfs};
use irqscope::topology::{Topology, TopologySpec};
use std::path::{Path, PathBuf};
use std::process::Command;

fn tool(name: &str) -> bool {
    let found = Command::new(name)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("IRQSCOPE_REQUIRE_TOOLS").is_none(),
            "{name} is required (IRQSCOPE_REQUIRE_TOOLS is set): apt-get install hwloc util-linux"
        );
        eprintln!(
            "SKIPPED: `{name}` is not installed (Debian: apt-get install {})",
            if name == "lstopo" { "hwloc" } else { "util-linux" }
        );
    }
    found
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn topo(spec: &TopologySpec) -> Topology {
    Topology::new(spec).unwrap_or_else(|e| panic!("{e}\n{spec:?}"))
}

/// The shape without what the compared tool cannot see.
fn without(t: &Topology, clusters: bool, present_online: bool) -> TopologySpec {
    let mut s = shape(t);
    s.nr_node_ids = None;
    if clusters {
        s.clusters.clear();
    }
    if present_online {
        s.present = None;
        s.online = None;
    }
    s
}

/// lscpu prints no distances either.
fn lscpu_view(t: &Topology) -> TopologySpec {
    let mut s = without(t, true, true);
    s.distances = None;
    s
}

fn data(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)).unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("import").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const SHAPES: [&str; 7] = [
    "pack:2 numa:2 core:4 pu:2",
    "pack:2 numa:2 l2:4 core:2 pu:2",
    "pack:1 core:8 pu:1",
    "pack:4 l3:2 l2:2 core:2 pu:2",
    "numa:2 pack:2 core:3 pu:1",
    "pack:2 numa:4 l3:1 l2:3 core:2 pu:4",
    "package:2 node:2 die:2 l2:2 l1:1 core:1 pu:2",
];

#[test]
fn lstopo_xml_of_a_synthetic_topology_imports_as_the_synthetic_string() {
    if !tool("lstopo") {
        return;
    }
    for desc in SHAPES {
        let xml = run(Command::new("lstopo").args(["-i", desc, "--of", "xml", "-"]));
        let from_xml = topo(&hwloc::parse_xml(&xml).unwrap_or_else(|e| panic!("{desc}: {e}")));
        let from_string = topo(&hwloc::parse_synthetic(desc).unwrap());
        assert_eq!(shape(&from_xml), shape(&from_string), "{desc}");
    }
}

#[test]
fn lstopo_reads_our_sysfs_export() {
    if !tool("lstopo") {
        return;
    }
    // hwloc's Linux backend reading the exported tree (as HWLOC_FSROOT) must see the same nodes,
    // SMT siblings, packages and distances. It folds clusters into cores or drops them, and sees
    // only online CPUs, so presets with offline or absent CPUs are left out.
    for name in [
        "intel-xeon-2s-56c-snc2",
        "amd-epyc-9654-2s-nps4",
        "intel-core-i9-13900k",
        "azure-l48s-v2",
        "arm64-4node-diameter3",
        "synthetic-sparse-ids",
    ] {
        let t = catalogue::get(name).unwrap();
        let dir = tmp(&format!("lstopo-{name}"));
        export::write_sysfs(&t, &dir).unwrap();
        let xml = run(Command::new("lstopo").arg("-i").arg(&dir).args(["--of", "xml", "-"]));
        let back = topo(&hwloc::parse_xml(&xml).unwrap_or_else(|e| panic!("{name}: {e}")));
        assert_eq!(without(&back, true, true), without(&t, true, true), "{name}");
    }
}

#[test]
fn lscpu_sysroot_on_our_sysfs_export() {
    if !tool("lscpu") {
        return;
    }
    for name in [
        "intel-xeon-2s-56c-snc2",
        "amd-epyc-9654-2s-nps4",
        "intel-core-i9-13900k",
        "xeon-2s-18c-nosmt-offline",
        "synthetic-sparse-ids",
    ] {
        let t = catalogue::get(name).unwrap();
        let dir = tmp(&format!("lscpu-{name}"));
        export::write_sysfs(&t, &dir).unwrap();
        for args in [
            &["-p", "--all"][..],
            &["-e"][..],
            &["-p=CPU,CORE,SOCKET,NODE,ONLINE", "--all"][..],
        ] {
            let text = run(Command::new("lscpu").arg("--sysroot").arg(&dir).args(args));
            let back = topo(&lscpu::parse(&text).unwrap_or_else(|e| panic!("{name} {args:?}: {e}")));
            // lscpu cannot tell possible from present: compare online, and the shape without it.
            assert_eq!(lscpu_view(&back), lscpu_view(&t), "{name} {args:?}");
            // Without an ONLINE column lscpu -p says nothing of offline CPUs.
            if args.iter().any(|a| a.contains("ONLINE")) || args == ["-e"] {
                assert_eq!(back.online(), t.online(), "{name} {args:?}");
            }
        }
    }
}

#[test]
fn this_machine_sysfs_matches_lscpu() {
    let files = match sysfs::read_tree(Path::new("/")) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("SKIPPED: cannot read /sys/devices/system: {e}");
            return;
        }
    };
    let from_sysfs = topo(&sysfs::parse(&files).unwrap());
    eprintln!("this machine: {}", from_sysfs.summary());
    if !tool("lscpu") {
        eprintln!("SKIPPED: comparison with lscpu -p (lscpu is not installed)");
        return;
    }
    let text = run(Command::new("lscpu").args(["-p=CPU,CORE,SOCKET,NODE,ONLINE", "--all"]));
    let from_lscpu = topo(&lscpu::parse(&text).unwrap());
    // lscpu names present CPUs only and no clusters on x86.
    assert_eq!(lscpu_view(&from_lscpu), lscpu_view(&from_sysfs));
    assert_eq!(from_lscpu.online(), from_sysfs.online());
    let text = run(Command::new("lscpu").arg("-p"));
    let plain = topo(&lscpu::parse(&text).unwrap());
    assert_eq!(plain.online(), from_sysfs.online());
}

#[test]
fn captured_lscpu_fixtures() {
    for name in [
        "amd-epyc-9654-2s-nps4",
        "xeon-2s-18c-nosmt-offline",
        "intel-core-i9-13900k",
    ] {
        let t = catalogue::get(name).unwrap();
        for file in [format!("lscpu-p-cluster-{name}.txt"), format!("lscpu-e-{name}.txt")] {
            let back = topo(&lscpu::parse(&data(&file)).unwrap_or_else(|e| panic!("{file}: {e}")));
            assert_eq!(lscpu_view(&back), lscpu_view(&t), "{file}");
            assert_eq!(back.online(), t.online(), "{file}");
        }
        // Plain `lscpu -p` lists online CPUs only.
        let file = format!("lscpu-p-{name}.txt");
        let back = topo(&lscpu::parse(&data(&file)).unwrap());
        assert_eq!(back.possible(), t.online(), "{file}");
    }
}

#[test]
fn captured_numactl_fixtures() {
    let t = catalogue::get("amd-epyc-9654-2s-nps4").unwrap();
    let back = topo(&numactl::parse(&data("numactl-H-amd-epyc-9654-2s-nps4.txt")).unwrap());
    for node in 0..8 {
        assert_eq!(back.node_cpus(node), t.node_cpus(node));
        for other in 0..8 {
            assert_eq!(back.distance(node, other), t.distance(node, other));
        }
    }
    let mem = topo(&numactl::parse(&data("numactl-H-memory-only-node.txt")).unwrap());
    assert_eq!(mem.nr_node_ids(), 3);
    assert!(mem.node_cpus(2).is_empty());
    assert_eq!(mem.distance(0, 2), 14);
}

#[test]
fn captured_hwloc_fixtures() {
    let t = catalogue::get("amd-epyc-9654-2s-nps4").unwrap();
    let back = topo(&hwloc::parse_xml(&data("hwloc-linux-amd-epyc-9654-2s-nps4.xml")).unwrap());
    assert_eq!(without(&back, true, true), without(&t, true, true));
    let synth = topo(&hwloc::parse_xml(&data("hwloc-synthetic-pack2-numa2-l2x4.xml")).unwrap());
    assert_eq!(
        shape(&synth),
        shape(&topo(
            &hwloc::parse_synthetic("pack:2 numa:2 l2:4 core:2 pu:2").unwrap()
        ))
    );
    assert_eq!(synth.cluster(5).to_cpulist(), "4-7");
}

#[test]
fn synthetic_names_and_attributes() {
    let a = topo(&hwloc::parse_synthetic("Package:2 NUMANode:2 L2Cache:2 Core:2 PU:2").unwrap());
    let b = topo(&hwloc::parse_synthetic("pack:2(indexes=0,1) numa:2(memory=1GB) l2:2 core:2 pu:2").unwrap());
    assert_eq!(shape(&a), shape(&b));
    assert_eq!(a.nr_node_ids(), 4);
    assert_eq!(a.package_sets().len(), 2);
    assert_eq!(a.smt(3).to_cpulist(), "2-3");
    assert_eq!(a.cluster(3).to_cpulist(), "0-3");
    // No pu level means one PU per core; no numa level means one node.
    let c = topo(&hwloc::parse_synthetic("pack:2 core:4").unwrap());
    assert_eq!(c.possible().weight(), 8);
    assert_eq!(c.nr_node_ids(), 1);
}

#[test]
fn hwloc_1x_layout_and_cluster_groups() {
    // hwloc 1.x: NUMANode in the tree, Socket, Cache objects with a depth.
    let v1 = r#"<?xml version="1.0"?>
<!DOCTYPE topology SYSTEM "hwloc.dtd">
<topology>
  <object type="Machine" os_index="0">
    <object type="NUMANode" os_index="0">
      <object type="Socket" os_index="0">
        <object type="Cache" depth="2" cache_type="0">
          <object type="Core" os_index="0"><object type="PU" os_index="0"/><object type="PU" os_index="2"/></object>
        </object>
        <object type="Cache" depth="2" cache_type="0">
          <object type="Core" os_index="1"><object type="PU" os_index="1"/><object type="PU" os_index="3"/></object>
        </object>
      </object>
    </object>
    <object type="NUMANode" os_index="1">
      <object type="Socket" os_index="1">
        <object type="Core" os_index="0"><object type="PU" os_index="4"/></object>
      </object>
    </object>
  </object>
</topology>"#;
    let t = topo(&hwloc::parse_xml(v1).unwrap());
    assert_eq!(t.node_cpus(0).to_cpulist(), "0-3");
    assert_eq!(t.node_cpus(1).to_cpulist(), "4");
    assert_eq!(t.smt(2).to_cpulist(), "0,2");
    assert_eq!(t.cluster(3).to_cpulist(), "1,3");
    assert!(t.cluster(4).is_empty());
    // hwloc 2.5+: Group objects of subtype Cluster win over the L2.
    let v2 = r#"<topology version="2.0"><object type="Machine" os_index="0">
      <object type="Package" os_index="0">
        <object type="NUMANode" os_index="0"/>
        <object type="Group" subtype="Cluster">
          <object type="L2Cache"><object type="Core" os_index="0"><object type="PU" os_index="0"/></object></object>
          <object type="L2Cache"><object type="Core" os_index="1"><object type="PU" os_index="1"/></object></object>
        </object>
        <object type="Group" subtype="Cluster">
          <object type="L2Cache"><object type="Core" os_index="2"><object type="PU" os_index="2"/></object></object>
          <object type="L2Cache"><object type="Core" os_index="3"><object type="PU" os_index="3"/></object></object>
        </object>
      </object></object></topology>"#;
    let t = topo(&hwloc::parse_xml(v2).unwrap());
    assert_eq!(t.cluster(1).to_cpulist(), "0-1");
    assert_eq!(t.cluster_sets().len(), 2);
}

#[test]
fn live_sysfs_with_offline_cpus() {
    // What a live kernel shows after `echo 0 > cpu3/online`: no topology/ for CPU 3, and its
    // sibling CPU 1 lists only itself.
    let mut files = sysfs::SysfsFiles::new();
    let mut put = |k: &str, v: &str| {
        files.insert(k.to_string(), format!("{v}\n"));
    };
    put("cpu/possible", "0-3");
    put("cpu/present", "0-3");
    put("cpu/online", "0-2");
    put("node/node0/cpulist", "0-3");
    put("node/node0/distance", "10");
    put("cpu/cpu0/topology/thread_siblings_list", "0,2");
    put("cpu/cpu2/topology/thread_siblings_list", "0,2");
    put("cpu/cpu1/topology/thread_siblings_list", "1");
    for cpu in 0..3 {
        put(&format!("cpu/cpu{cpu}/topology/package_cpus_list"), "0-2");
    }
    files.insert("cpu/cpu3".into(), String::new());
    let spec = sysfs::parse(&files).unwrap();
    assert!(
        spec.note.contains("CPUs 3 have no topology/ directory"),
        "{}",
        spec.note
    );
    let t = topo(&spec);
    assert_eq!(t.online().to_cpulist(), "0-2");
    assert_eq!(t.smt(3).to_cpulist(), "3");
    assert_eq!(t.smt(2).to_cpulist(), "0,2");
    assert_eq!(t.package_sets()[0].to_cpulist(), "0-3");
}
