//! Fuzz the toml importer: any text gives a spec that validates, or an error; never a panic.
//! An accepted import exports to sysfs and re-imports to the same shape
//! ([`irqscope_fuzz::check_accepted`], within its bounds).
#![no_main]

use irqscope::topology::import;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(spec) = import::parse_toml(text) {
        irqscope_fuzz::check_accepted(&spec);
    }
});
