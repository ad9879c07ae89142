//! The lab: real kernels booted in QEMU on a scenario's machine, and their placements checked
//! against the models.
//!
//! `qemu` turns a validated topology and NVMe list into a QEMU x86 command line (or refuses the
//! shapes QEMU cannot express), `initramfs` builds the busybox initramfs the guest boots into,
//! and `run` drives the boots (downloads, retries, progress). `run` is the one part that starts
//! processes and reads the clock; it sits at the top beside the binaries, nothing else in the
//! library calls it, and nothing else needs QEMU.
//!
//! [`check`] runs `irqscope lab check` on an agent capture, with the models the capture's kernel
//! release picks (`crate::kernel::release`, re-exported here as [`generation`]). The model itself (the
//! narrowed non-managed masks, parking, hotplug CPUs, held vectors) is shared with live mode in
//! [`crate::analysis::live_vs_model`].

pub(crate) mod calls;
pub mod check;
pub(crate) mod console;
pub(crate) mod fetch;
pub(crate) mod initramfs;
pub mod orders;
pub mod qemu;
pub mod run;

// The release table lives below every part that reads it; `lab` re-exports the names it used
// to define.
pub use crate::kernel::release::{generation, parse_release, Generation, HotplugRule};
