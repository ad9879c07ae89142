//! Fuzz the `/proc/interrupts` parser: any bytes parse or give an error, never a panic; text
//! parses the same as bytes or as `&str`; what parses prints back (kernel layout) to the same
//! rows.
#![no_main]

use irqscope::live::parse::{format_interrupts, parse_interrupts, parse_interrupts_bytes_into, Interrupts};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut from_bytes = Interrupts::default();
    let bytes = parse_interrupts_bytes_into(data, &mut from_bytes);
    let Ok(text) = std::str::from_utf8(data) else { return };
    let parsed = parse_interrupts(text);
    assert_eq!(parsed.as_ref().err(), bytes.as_ref().err());
    if let Ok(p) = parsed {
        assert_eq!(p, from_bytes);
        let again = parse_interrupts(&format_interrupts(&p)).expect("printed rows parse");
        assert_eq!(again.cpus, p.cpus);
        assert_eq!(again.rows.len(), p.rows.len());
    }
});
