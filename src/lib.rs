//! irqscope: where do interrupts land?
//!
//! Bit-exact models of the kernel's interrupt placement (`group_cpus_evenly`,
//! `irq_create_affinity_masks`, blk-mq queue maps, the effective-CPU choice), the scenarios that
//! drive them, the metrics reviewers compute, and text made for mailing-list review.
//! `ARCHITECTURE.md` is the map; dependencies point one way:
//! `topology` ← `kernel`/`policy` ← `scenario` ← `metrics` ← `render`.
//!
//! No `unsafe` code, but for the SSE2 classifier of the `/proc/interrupts` reader
//! (`live::parse::columns::classify`), which allows it for its two blocks.
#![deny(unsafe_code)]
// The module docs carry the code map's details and link to the crate's own items; they are
// read with `cargo doc --document-private-items` (scripts/test builds them so, warnings denied).
#![allow(rustdoc::private_intra_doc_links)]

pub mod analysis;
pub mod catalogue;
pub mod golden;
pub mod kernel;
pub mod kernel_c;
pub mod kernel_c_tools;
pub mod lab;
pub mod live;
pub mod metrics;
pub mod policy;
pub mod render;
pub mod review;
pub mod scenario;
pub mod topology;
pub mod web;
