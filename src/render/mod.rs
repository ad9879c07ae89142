//! Views of outcomes as plain text (mail-ready), JSON and SVG. Rendering only: no I/O, no HTTP.
//!
//! `render` owns every view of a model's result: the sentences ([`summary`]), the mail text
//! ([`text`]), the JSON API ([`json`], whose core is also the golden `system` shape that
//! `golden` compares), the pictures, and every page's view model as data ([`view`]). It reads
//! `scenario`, `metrics`, `analysis` and `live` (the live pages' host states); it never reads
//! `golden` or `web`.

pub(crate) mod charts;
pub mod columns;
pub(crate) mod heatmap;
pub(crate) mod json;
pub mod json_mana_sched;
pub mod mana_sched;
pub(crate) mod orders;
pub mod review;
pub mod summary;
pub(crate) mod svg;
pub(crate) mod svg_blkmq;
pub(crate) mod svg_compare;
pub(crate) mod svg_live;
pub(crate) mod svg_mana_sched;
pub mod sweep;
pub mod text;
pub mod vector_space;
pub mod view;
