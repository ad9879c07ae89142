//! Every preset in `topologies/` loads, validates and round-trips through every export format
//! that can express it: TOML, a sysfs tree (in memory and on disk), and hwloc's synthetic string.

use irqscope::catalogue;
use irqscope::topology::import::{self, export, hwloc, shape, sysfs};
use irqscope::topology::Topology;

fn presets() -> Vec<(&'static str, std::sync::Arc<Topology>)> {
    catalogue::all()
        .map(|(name, loaded)| match loaded {
            Ok(t) => (name, t.clone()),
            Err(e) => panic!("preset {name} does not load: {e}"),
        })
        .collect()
}

#[test]
fn catalogue_has_the_issue_shapes() {
    let names: Vec<&str> = catalogue::names().collect();
    for want in [
        "intel-xeon-2s-56c-snc2",
        "amd-epyc-9654-1s-nps1",
        "amd-epyc-9654-2s-nps4",
        "ampere-altra-q80",
        "graviton3-64c",
        "azure-hbv4-176",
        "azure-hx176",
        "vm-2vcpu-smt2",
        "vm-4vcpu-smt2-l2",
        "vm-8vcpu-smt2",
        "synthetic-1024",
        "synthetic-8192",
        "intel-core-i9-13900k",
        "vm-8vcpu-hotplug-64",
        "xeon-2s-18c-nosmt-offline",
        "synthetic-sparse-ids",
        "arm64-2s-snc-cluster-spans",
        "arm64-4node-diameter3",
    ] {
        assert!(names.contains(&want), "missing preset {want}");
    }
    for (name, t) in presets() {
        assert!(!t.source().is_empty(), "{name}: every preset names its source");
        assert!(!t.source().contains('\n'), "{name}: source is one line");
    }
    assert_eq!(catalogue::get("synthetic-8192").unwrap().possible().weight(), 8192);
    assert_eq!(catalogue::get("synthetic-1024").unwrap().possible().weight(), 1024);
}

#[test]
fn toml_round_trip_is_exact() {
    for (name, t) in presets() {
        let text = export::to_toml(&t);
        let back = Topology::new(&toml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))).unwrap();
        assert_eq!(back, *t, "{name}");
        let again = Topology::new(&import::parse_toml(&export::to_toml(&back)).unwrap()).unwrap();
        assert_eq!(again, *t, "{name}");
    }
}

#[test]
fn sysfs_round_trip_in_memory() {
    for (name, t) in presets() {
        let files = export::sysfs_files(&t);
        let imported = sysfs::import(&files).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(shape(&Topology::new(&imported.spec).unwrap()), shape(&t), "{name}");
        // The exported tree carries everything: nothing is lost, nothing is filled in.
        assert_eq!(imported.warnings, Vec::<String>::new(), "{name}");
        assert!(imported.spec.note.is_empty(), "{name}: {}", imported.spec.note);
    }
}

#[test]
fn sysfs_round_trip_on_disk() {
    let base = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("catalogue-sysfs");
    for (name, t) in presets().into_iter().filter(|(_, t)| t.possible().weight() <= 1024) {
        let root = base.join(name);
        let _ = std::fs::remove_dir_all(&root);
        export::write_sysfs(&t, &root).unwrap();
        let files = sysfs::read_tree(&root).unwrap();
        let spec = sysfs::parse(&files).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(shape(&Topology::new(&spec).unwrap()), shape(&t), "{name}");
    }
}

#[test]
fn synthetic_round_trip_where_expressible() {
    let mut expressible = Vec::new();
    for (name, t) in presets() {
        match export::to_synthetic(&t) {
            Ok(text) => {
                let back = Topology::new(&hwloc::parse_synthetic(&text).unwrap()).unwrap();
                assert_eq!(shape(&back), shape(&t), "{name}: {text}");
                expressible.push(name);
            }
            Err(e) => assert!(e.to_string().starts_with("export to synthetic: "), "{name}: {e}"),
        }
    }
    for want in [
        "vm-2vcpu-smt2",
        "vm-8vcpu-smt2",
        "azure-l96as-v4",
        "ampere-altra-q80",
        "synthetic-8192",
        "azure-4vcpu-smt2",
    ] {
        assert!(
            expressible.contains(&want),
            "{want} should be expressible; got {expressible:?}"
        );
    }
    for not in [
        "xeon-2s-18c-smt2",
        "intel-core-i9-13900k",
        "vm-8vcpu-hotplug-64",
        "arm64-4node-diameter3",
    ] {
        assert!(!expressible.contains(&not), "{not} should not be expressible");
    }
}
