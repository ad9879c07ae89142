//! The integration tests, one binary (ripgrep's layout): each module is one area, sharing the
//! helpers in `common`. Run one area with `cargo test --test it AREA::`.

mod agent;
mod browser;
mod browser_compare;
mod browser_editor;
mod browser_figures;
mod browser_mana_sched;
mod browser_sweep;
mod catalogue;
mod cli_errors;
mod common;
mod fleet;
mod fuzz_regressions;
mod golden;
mod ideal;
mod import;
mod import_cli;
mod import_errors;
mod lab_boot;
mod lab_check;
mod live;
mod live_browser;
mod mail_text;
mod mana_sched_robustness;
mod presets_frozen;
mod properties;
mod scenario_mana;
mod sched_wake_paths;
mod seed_presets;
mod seeds;
mod spread_offsets;
mod sweep;
mod vector_space;
mod web_compare;
mod web_http;
mod web_mana_sched;
