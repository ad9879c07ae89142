//! Fuzz the hwloc_xml importer: any text gives a spec that validates, or an error; never a panic.
//! Device locality names only nodes the topology has, and an accepted import exports to sysfs
//! and re-imports to the same shape ([`irqscope_fuzz::check_accepted`], within its bounds).
#![no_main]

use irqscope::topology::import;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(imported) = import::hwloc::import_xml(text) {
        let t = irqscope_fuzz::check_accepted(&imported.spec);
        for d in &imported.devices {
            assert!(d.node.is_none_or(|n| n < t.nr_node_ids()), "{d:?}");
        }
        assert!(imported.devices.len() <= import::DEVICES_MAX);
    }
});
