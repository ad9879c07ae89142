//! Fuzz the permalink decoder with the scenario it carries: any text decodes or gives an error,
//! never a panic or an unbounded inflate; a decoded scenario re-encodes and decodes to itself,
//! and resolving it either validates or says why.
#![no_main]

use irqscope::scenario::permalink::{decode, encode};
use irqscope::scenario::spec::ScenarioSpec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for link in [text.to_string(), format!("v1.{text}")] {
        if let Ok(spec) = decode::<ScenarioSpec>(&link) {
            if let Ok(again) = encode(&spec) {
                assert_eq!(decode::<ScenarioSpec>(&again).expect("re-encoded link decodes"), spec);
            }
            if let Ok(scenario) = spec.resolve(irqscope::catalogue::get) {
                let outcome = irqscope::scenario::run(&scenario);
                assert_eq!(outcome.devices.len(), scenario.devices().len());
            }
        }
    }
});
