//! Fuzz the kernel cpulist and hex-mask parsers and the device grammar: never a panic; what
//! parses prints back to the same set.
#![no_main]

use irqscope::scenario::spec::{expand_devices, format_device_tokens, parse_device_token};
use irqscope::topology::{format_cpulist, format_hex_mask, parse_cpulist, parse_hex_mask};
use libfuzzer_sys::fuzz_target;

const N_BITS: u32 = 4096;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(set) = parse_cpulist(text, N_BITS) {
        assert_eq!(
            parse_cpulist(&format_cpulist(&set), N_BITS).expect("printed list parses"),
            set
        );
    }
    if let Ok(set) = parse_hex_mask(text, N_BITS) {
        assert_eq!(
            parse_hex_mask(&format_hex_mask(&set, N_BITS), N_BITS).expect("printed mask parses"),
            set
        );
    }
    if let Ok(spec) = parse_device_token(text) {
        if let Ok(devices) = expand_devices(&[spec]) {
            let tokens = format_device_tokens(&devices);
            let again: Vec<_> = tokens
                .iter()
                .map(|t| parse_device_token(t).expect("printed token parses"))
                .collect();
            assert_eq!(expand_devices(&again).expect("printed tokens expand"), devices);
        }
    }
});
