//! Fuzz the hwloc_xml importer: any text gives a spec that validates, or an error; never a panic.
//! Device locality names only nodes the topology has.
#![no_main]

use irqscope::topology::import::{self, export, sysfs};
use irqscope::topology::Topology;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(imported) = import::hwloc::import_xml(text) {
        // An accepted import is valid, and exports and re-imports to the same shape.
        let t = Topology::new(&imported.spec).expect("an accepted import validates");
        for d in &imported.devices {
            assert!(d.node.is_none_or(|n| n < t.nr_node_ids()), "{d:?}");
        }
        assert!(imported.devices.len() <= import::DEVICES_MAX);
        let back = sysfs::parse(&export::sysfs_files(&t)).expect("the sysfs export re-imports");
        assert_eq!(import::shape(&Topology::new(&back).unwrap()), import::shape(&t));
    }
});
