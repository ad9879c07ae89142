//! Fuzz the `/proc/irq/N/{smp_affinity_list,effective_affinity_list,node}` parsers: errors or
//! values, never a panic; an accepted list prints back to itself.
#![no_main]

use irqscope::live::parse::{parse_affinity_list, parse_irq_node};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(set) = parse_affinity_list("f", text) {
        assert_eq!(parse_affinity_list("f", &set.to_cpulist()).unwrap(), set);
    }
    let _ = parse_irq_node("n", text);
});
