//! Analyses that run the model over many inputs and put the answers side by side.
//!
//! * [`sweep`]: placements × presets × device mixes × counters, with figures per row.
//! * [`live_vs_model`]: a live host's IRQs (grouped into devices by `live::devices`) against
//!   the scenario the kernel would have computed for that machine.
//!
//! Both sit above `scenario` and `metrics` and below `render`/`web`; `live` stays a leaf that
//! knows nothing of the model.

pub(crate) mod call_order;
pub mod live_vs_model;
pub mod orders;
pub mod sweep;
