//! Fuzz the hwloc_xml importer: any text gives a spec that validates, or an error; never a panic.
//! Device locality names only nodes the topology has.
#![no_main]

use irqscope::topology::import::{self, export, sysfs};
use irqscope::topology::Topology;
use libfuzzer_sys::fuzz_target;

/// Largest round trip made per input, in mask bits: possible CPUs x nr_cpu_ids. The exported
/// tree holds five hex masks of nr_cpu_ids bits per CPU, so its size grows as that product and
/// one 8192-CPU round trip takes seconds. Larger machines go through the same export and
/// re-import code, only for longer, and every preset up to 8192 CPUs is round-tripped by
/// `tests/it/catalogue.rs` (`sysfs_round_trip_in_memory`). 2^13 admits 90 dense CPUs (two mask
/// words, comma-grouped hex) or one CPU with an id up to 8191; at 2^16 the round trip of the
/// larger inputs took most of an execution.
const ROUND_TRIP_MASK_BITS_MAX: u64 = 1 << 13;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(imported) = import::hwloc::import_xml(text) {
        // An accepted import is valid, and (within ROUND_TRIP_MASK_BITS_MAX) exports and re-imports
        // to the same shape.
        let t = Topology::new(&imported.spec).expect("an accepted import validates");
        for d in &imported.devices {
            assert!(d.node.is_none_or(|n| n < t.nr_node_ids()), "{d:?}");
        }
        assert!(imported.devices.len() <= import::DEVICES_MAX);
        if u64::from(t.possible().weight()) * u64::from(t.nr_cpu_ids()) <= ROUND_TRIP_MASK_BITS_MAX {
            let back = sysfs::parse(&export::sysfs_files(&t)).expect("the sysfs export re-imports");
            assert_eq!(import::shape(&Topology::new(&back).unwrap()), import::shape(&t));
        }
    }
});
