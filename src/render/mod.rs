//! Views of outcomes as plain text (mail-ready), JSON and SVG. Rendering only: no I/O, no HTTP.

pub mod json;
pub mod json_mana_sched;
pub mod mana_sched;
pub mod svg;
pub mod svg_live;
pub mod svg_mana_sched;
pub mod sweep;
pub mod text;
