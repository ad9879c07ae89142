//! Import against output that real tools produced: hwloc's `lstopo` (synthetic topologies and
//! the sysfs trees irqscope exports), `lscpu` (this machine, and `--sysroot` on exported trees),
//! this machine's own `/sys`, and the captured fixtures in `tests/data/` (see its README).
//!
//! Tests that need `lstopo` or `lscpu` print `SKIPPED: …` and pass when the tool is absent,
//! unless `IRQSCOPE_REQUIRE_TOOLS=1` (CI sets it after `apt-get install hwloc`).

use irqscope::catalogue;
use irqscope::topology::import::{export, hwloc, lscpu, numactl, shape, sysfs, Imported};
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
    assert_eq!(synth.drawn_cluster(5).to_cpulist(), "4-7");
}

#[test]
fn synthetic_names_and_attributes() {
    let a = topo(&hwloc::parse_synthetic("Package:2 NUMANode:2 L2Cache:2 Core:2 PU:2").unwrap());
    let b = topo(&hwloc::parse_synthetic("pack:2(indexes=0,1) numa:2(memory=1GB) l2:2 core:2 pu:2").unwrap());
    assert_eq!(shape(&a), shape(&b));
    assert_eq!(a.nr_node_ids(), 4);
    assert_eq!(a.package_sets().len(), 2);
    assert_eq!(a.drawn_smt(3).to_cpulist(), "2-3");
    assert_eq!(a.drawn_cluster(3).to_cpulist(), "0-3");
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
    assert_eq!(t.drawn_smt(2).to_cpulist(), "0,2");
    assert_eq!(t.drawn_cluster(3).to_cpulist(), "1,3");
    assert!(t.drawn_cluster(4).is_empty());
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
    assert_eq!(t.drawn_cluster(1).to_cpulist(), "0-1");
    assert_eq!(t.drawn_cluster_sets().len(), 2);
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
    assert_eq!(t.drawn_smt(3).to_cpulist(), "3");
    assert_eq!(t.drawn_smt(2).to_cpulist(), "0,2");
    assert_eq!(t.package_sets()[0].to_cpulist(), "0-3");
}

/// The warning that contains `want`, or a panic listing them all.
fn warning<'a>(imported: &'a Imported, want: &str) -> &'a str {
    imported
        .warnings
        .iter()
        .find(|w| w.contains(want))
        .unwrap_or_else(|| panic!("no warning containing {want:?} in {:#?}", imported.warnings))
}

fn no_warning(imported: &Imported, unwanted: &str) {
    assert!(
        !imported.warnings.iter().any(|w| w.contains(unwanted)),
        "unexpected warning {unwanted:?} in {:#?}",
        imported.warnings
    );
}

#[test]
fn lscpu_says_it_lost_the_clusters_and_distances() {
    if !tool("lscpu") {
        return;
    }
    // Azure L96as_v4: a cluster per SMT pair (48 clusters) on 2 nodes at the default 10/20.
    let t = catalogue::get("azure-l96as-v4").unwrap();
    assert_eq!(t.drawn_cluster_sets().len(), 48);
    let dir = tmp("warn-lscpu-l96as");
    export::write_sysfs(&t, &dir).unwrap();
    let plain = run(Command::new("lscpu").arg("--sysroot").arg(&dir).arg("-p"));
    let imported = lscpu::import(&plain).unwrap();
    let back = topo(&imported.spec);
    assert!(back.drawn_cluster_sets().is_empty());
    assert_eq!(
        warning(&imported, "no cluster information"),
        "no cluster information in lscpu output (no CLUSTER column): imported without clusters, so \
         cluster-aware spreading sees none; take clusters from sysfs cluster_cpus_list (irqscope \
         topology import sysfs)."
    );
    warning(
        &imported,
        "no ONLINE column in lscpu output: every listed CPU is taken as online",
    );
    warning(&imported, "lscpu does not tell possible from present CPUs");
    // Two nodes and no distances from lscpu: the default is said even when it is right.
    warning(
        &imported,
        "lscpu prints no NUMA distances: the default 10 (local) / 20 (remote) is filled in for the 2 nodes",
    );
    // The warnings travel in the file too.
    assert!(
        back.note().contains("no cluster information in lscpu output"),
        "{}",
        back.note()
    );

    // Asking for the column does not help on x86: util-linux 2.38 leaves it empty.
    let cols = run(Command::new("lscpu")
        .arg("--sysroot")
        .arg(&dir)
        .args(["-p=CPU,CORE,SOCKET,NODE,CLUSTER,ONLINE", "--all"]));
    let imported = lscpu::import(&cols).unwrap();
    let back = topo(&imported.spec);
    if back.drawn_cluster_sets().is_empty() {
        warning(
            &imported,
            "no cluster information in lscpu output (the CLUSTER column is empty, as util-linux 2.38 prints it on x86)",
        );
    } else {
        // A later lscpu that fills the column must not be warned about.
        assert_eq!(back.drawn_cluster_sets(), t.drawn_cluster_sets());
        no_warning(&imported, "no cluster information");
    }
    no_warning(&imported, "no ONLINE column");
}

#[test]
fn lscpu_says_it_filled_in_the_distances_of_a_diameter_3_machine() {
    if !tool("lscpu") {
        return;
    }
    let t = catalogue::get("arm64-4node-diameter3").unwrap();
    let dir = tmp("warn-lscpu-diameter3");
    export::write_sysfs(&t, &dir).unwrap();
    let text = run(Command::new("lscpu").arg("--sysroot").arg(&dir).args(["-e"]));
    let imported = lscpu::import(&text).unwrap();
    let back = topo(&imported.spec);
    assert_eq!((t.distance(0, 3), back.distance(0, 3)), (37, 20));
    assert_eq!(
        warning(&imported, "NUMA distances"),
        "lscpu prints no NUMA distances: the default 10 (local) / 20 (remote) is filled in for the 4 \
         nodes, so a machine with other distances (SNC/NPS, more than one hop) differs; take them \
         from sysfs node*/distance or numactl -H."
    );
    // The same tree through sysfs loses nothing.
    let from_sysfs = sysfs::import(&sysfs::read_tree(&dir).unwrap()).unwrap();
    assert_eq!(from_sysfs.warnings, Vec::<String>::new());
    assert_eq!(topo(&from_sysfs.spec).distance(0, 3), 37);
}

#[test]
fn lstopo_says_it_lost_the_clusters() {
    if !tool("lstopo") {
        return;
    }
    // hwloc reads cluster_cpus_list but removes a cluster equal to its core: nothing is left.
    let t = catalogue::get("azure-l96as-v4").unwrap();
    let dir = tmp("warn-lstopo-l96as");
    export::write_sysfs(&t, &dir).unwrap();
    let xml = run(Command::new("lstopo").arg("-i").arg(&dir).args(["--of", "xml", "-"]));
    let imported = hwloc::import_xml(&xml).unwrap();
    let back = topo(&imported.spec);
    assert!(back.drawn_cluster_sets().is_empty());
    assert_eq!(without(&back, true, true), without(&t, true, true));
    assert_eq!(
        warning(&imported, "cluster"),
        "no cluster information in the hwloc XML (no Group of subtype Cluster and no L2 cache: hwloc \
         removes a cluster equal to a core, and hwloc before 2.5 has none): imported without \
         clusters; take clusters from sysfs cluster_cpus_list."
    );
    // hwloc's Linux backend reads node*/distance: distances are not lost.
    no_warning(&imported, "distances");

    // Clusters of two cores survive as hwloc Cluster groups: no warning then.
    let t = catalogue::get("intel-core-i9-13900k").unwrap();
    let dir = tmp("warn-lstopo-13900k");
    export::write_sysfs(&t, &dir).unwrap();
    let xml = run(Command::new("lstopo").arg("-i").arg(&dir).args(["--of", "xml", "-"]));
    let imported = hwloc::import_xml(&xml).unwrap();
    let back = topo(&imported.spec);
    // The E-core clusters of four survive; the P-core clusters (one SMT pair each) do not.
    let multi_core: Vec<_> = t
        .drawn_cluster_sets()
        .iter()
        .filter(|c| c.weight() > t.drawn_smt(c.first().unwrap()).weight())
        .cloned()
        .collect();
    assert_eq!(back.drawn_cluster_sets(), &multi_core[..]);
    assert_eq!(
        warning(&imported, "Cluster group"),
        "CPUs 0-15 are in no Cluster group of the hwloc XML (hwloc removes a cluster equal to its \
         core or L2): imported without a cluster; take clusters from sysfs cluster_cpus_list."
    );
}

#[test]
fn lstopo_synthetic_has_no_distances_and_says_so() {
    if !tool("lstopo") {
        return;
    }
    let xml = run(Command::new("lstopo").args(["-i", "pack:2 numa:2 core:2 pu:2", "--of", "xml", "-"]));
    let imported = hwloc::import_xml(&xml).unwrap();
    if xml.contains("<distances2") {
        no_warning(&imported, "distances");
    } else {
        warning(
            &imported,
            "the hwloc XML has no NUMANode distances2 matrix (hwloc 1.x <distances> are not read): the default 10 (local) / 20 (remote) is filled in for the 4 nodes",
        );
    }
    // No cache level in the description, so no cluster either, and the warning says so.
    warning(&imported, "no cluster information in the hwloc XML");
    let synth = hwloc::import_synthetic("pack:2 numa:2 core:2 pu:2").unwrap();
    warning(&synth, "an hwloc synthetic description carries no NUMA distances");
}

#[test]
fn numactl_says_it_has_no_smt_clusters_or_packages() {
    let imported = numactl::import(&data("numactl-H-amd-epyc-9654-2s-nps4.txt")).unwrap();
    assert_eq!(
        warning(&imported, "SMT"),
        "numactl -H carries no SMT, cluster or package information: each CPU is imported as its own \
         core, without clusters, one package per node."
    );
    warning(&imported, "every listed CPU is taken as present and online");
    no_warning(&imported, "distances");
    let no_matrix =
        numactl::import("node 0 cpus: 0 1\nnode 1 cpus: 2 3\nNo distance information available.\n").unwrap();
    warning(
        &no_matrix,
        "numactl -H output has no `node distances:` matrix: the default 10 (local) / 20 (remote) is filled in for the 2 nodes",
    );
}

#[test]
fn sparse_node_ids_keep_their_distances_without_a_full_table() {
    // Node ids 0 and 891: nr_node_ids is 892, and the distances of the nodes in between are
    // the defaults whether or not the matrix names them.
    let sparse = |matrix: &str| {
        let text = format!("node 0 cpus: 0\nnode 891 cpus: 1\nnode distances:\nnode 0 891\n{matrix}");
        Topology::new(&numactl::parse(&text).unwrap()).unwrap()
    };
    let default = sparse("0: 10 20\n891: 20 10\n");
    assert_eq!(default.nr_node_ids(), 892);
    assert_eq!(
        default.to_spec().distances,
        None,
        "a matrix of defaults is the defaults"
    );
    assert_eq!(
        (
            default.distance(0, 891),
            default.distance(891, 891),
            default.distance(5, 6)
        ),
        (20, 10, 20)
    );
    let far = sparse("0: 10 31\n891: 32 10\n");
    let rows = far
        .to_spec()
        .distances
        .expect("a matrix other than the defaults is kept");
    assert_eq!((rows.len(), rows[0].len()), (892, 892));
    assert_eq!((far.distance(0, 891), far.distance(891, 0)), (31, 32));
    assert_eq!(
        (far.distance(5, 5), far.distance(5, 6), far.distance(0, 5)),
        (10, 20, 20)
    );
    // The same machine written out in full gives the same topology, and so does its sysfs
    // export (892 node*/distance files of 892 numbers) read back.
    assert_eq!(Topology::new(&far.to_spec()).unwrap(), far);
    let back = Topology::new(&sysfs::parse(&export::sysfs_files(&far)).unwrap()).unwrap();
    assert_eq!(shape(&back), shape(&far));
    // A spec that spells the defaults out equals one that leaves them out.
    let mut spelled = default.to_spec();
    spelled.distances = Some(
        (0..892)
            .map(|i| (0..892).map(|j| if i == j { 10 } else { 20 }).collect())
            .collect(),
    );
    assert_eq!(Topology::new(&spelled).unwrap(), default);
}

#[test]
fn hwloc_device_locality_from_the_io_fixture() {
    // lstopo 2.9 read an exported L96as_v4 tree with three PCI devices (tests/data/README.md).
    let imported = hwloc::import_xml(&data("hwloc-io-azure-l96as-v4.xml")).unwrap();
    let got: Vec<(String, String, Vec<String>, Option<u32>)> = imported
        .devices
        .iter()
        .map(|d| (d.pci_addr.clone(), d.class.clone(), d.os_names.clone(), d.node))
        .collect();
    let dev =
        |addr: &str, class: &str, name: &str, node| (addr.to_string(), class.to_string(), vec![name.to_string()], node);
    assert_eq!(
        got,
        [
            dev("0000:01:00.0", "0200", "eth0", Some(0)),
            dev("0000:41:00.0", "0108", "nvme0n1", Some(1)),
            dev("0000:81:00.0", "0108", "nvme1n1", None),
        ]
    );
    assert_eq!(imported.devices[0].vendor_device, "1414:00ba");
    assert_eq!(imported.devices[1].class_name(), "NVMe");
    assert_eq!(imported.devices[1].token_hint(), "QUEUES:name=nvme0n1,node=1");
    assert_eq!(imported.devices[2].token_hint(), "QUEUES:name=nvme1n1");
    // The CPUs are those of the preset (clusters aside, which hwloc removed).
    let t = catalogue::get("azure-l96as-v4").unwrap();
    assert_eq!(without(&topo(&imported.spec), true, true), without(&t, true, true));
}

#[test]
fn lstopo_places_pci_devices_on_their_node() {
    if !tool("lstopo") {
        return;
    }
    // The fixture's recipe, run against this machine's hwloc.
    let out = tmp("io-fixture").join("io.xml");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/make-io-fixture.sh");
    let status = Command::new("sh")
        .arg(script)
        .arg(&out)
        .env("IRQSCOPE", env!("CARGO_BIN_EXE_irqscope"))
        .status()
        .unwrap();
    assert!(status.success());
    let xml = std::fs::read_to_string(&out).unwrap();
    let imported = hwloc::import_xml(&xml).unwrap();
    let nodes: Vec<(String, Option<u32>)> = imported.devices.iter().map(|d| (d.name(), d.node)).collect();
    assert_eq!(
        nodes,
        [
            ("eth0".to_string(), Some(0)),
            ("nvme0n1".to_string(), Some(1)),
            ("nvme1n1".to_string(), None)
        ]
    );
}

#[test]
fn hwloc_1x_device_under_a_numa_node() {
    // hwloc 1.x puts I/O objects in the tree below the NUMANode that holds them.
    let v1 = r#"<topology><object type="Machine" os_index="0">
      <object type="NUMANode" os_index="0"><object type="Socket" os_index="0">
        <object type="Core" os_index="0"><object type="PU" os_index="0"/></object></object>
        <object type="Bridge"><object type="PCIDev" pci_busid="0000:02:00.0" pci_type="0200 [8086:1572] [0000:0000] 01">
          <object type="OSDev" name="ens1f0" osdev_type="2"/></object></object>
      </object>
      <object type="NUMANode" os_index="1"><object type="Socket" os_index="1">
        <object type="Core" os_index="0"><object type="PU" os_index="1"/></object></object>
        <object type="Bridge"><object type="PCIDev" pci_busid="0000:82:00.0" pci_type="0108 [144d:a808] [0000:0000] 00"/></object>
      </object></object></topology>"#;
    let imported = hwloc::import_xml(v1).unwrap();
    let got: Vec<(String, Option<u32>)> = imported.devices.iter().map(|d| (d.name(), d.node)).collect();
    assert_eq!(
        got,
        [
            ("ens1f0".to_string(), Some(0)),
            ("pci-0000:82:00.0".to_string(), Some(1))
        ]
    );
}
