//! The tools around built C, at the top beside `golden`: `kernel-c build`
//! ([`build`](mod@build): a source from a tree, a file or a Debian package ([`source`]),
//! mailed patches applied to a scratch copy, compiled against irqscope's stand-ins) and
//! `kernel-c verify` ([`verify`]: a build against the models on random machines, the first
//! disagreement shrunk and written as a golden case).
//!
//! They read the engine (`kernel_c`: the runner, the one place C is compiled and run), the
//! models (`kernel`, `topology`) and `golden` (only to write a disagreement file); nothing
//! below them reads them.

pub(crate) mod build;
pub mod source;
pub mod verify;

pub use build::{build, BuildOptions};
