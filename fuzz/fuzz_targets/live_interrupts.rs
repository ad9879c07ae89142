//! Fuzz the `/proc/interrupts` parser: any input parses or gives an error, never a panic; what
//! parses prints back (kernel layout) to the same rows.
#![no_main]

use irqscope::live::parse::{format_interrupts, parse_interrupts};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(p) = parse_interrupts(text) {
        let again = parse_interrupts(&format_interrupts(&p)).expect("printed rows parse");
        assert_eq!(again.cpus, p.cpus);
        assert_eq!(again.rows.len(), p.rows.len());
    }
});
