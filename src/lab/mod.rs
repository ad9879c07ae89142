//! The lab: real kernels booted in QEMU on a scenario's machine, and their captures.
//!
//! `qemu` turns a validated topology and NVMe list into a QEMU x86 command line (or refuses the
//! shapes QEMU cannot express), `initramfs` builds the busybox initramfs the guest boots into,
//! and `run` drives the boots (downloads, retries, progress). `run` is the one part that starts
//! processes and reads the clock; it sits at the top beside the binaries, nothing else in the
//! library calls it, and nothing else needs QEMU.

pub mod initramfs;
pub mod qemu;
pub mod run;
