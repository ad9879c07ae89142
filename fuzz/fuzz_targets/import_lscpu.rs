//! Fuzz the lscpu importer: any text gives a spec that validates, or an error; never a panic.
#![no_main]

use irqscope::topology::import::{self, export, sysfs};
use irqscope::topology::Topology;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(spec) = import::lscpu::parse(text) {
        // An accepted import is valid, and exports and re-imports to the same shape.
        let t = Topology::new(&spec).expect("an accepted import validates");
        let back = sysfs::parse(&export::sysfs_files(&t)).expect("the sysfs export re-imports");
        assert_eq!(import::shape(&Topology::new(&back).unwrap()), import::shape(&t));
    }
});
