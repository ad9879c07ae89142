//! Fuzz the sysfs importer: the input is a tree written as `path=contents` lines (`\n` in the
//! contents as `\\n`); any tree gives a spec that validates, or an error; never a panic.
#![no_main]

use irqscope::topology::import::sysfs::{self, SysfsFiles};
use irqscope::topology::Topology;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let files: SysfsFiles = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| {
            let v = if v.contains('\\') {
                v.replace("\\n", "\n")
            } else {
                v.to_string()
            };
            (k.to_string(), v)
        })
        .collect();
    if let Ok(spec) = sysfs::parse(&files) {
        Topology::new(&spec).expect("an accepted import validates");
    }
});
