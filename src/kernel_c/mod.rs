//! The user's own `lib/group_cpus.c`, built in user space and run as a variant (`c:NAME`).
//!
//! `kernel-c build` takes the C from a kernel tree, a single file or a Debian
//! `linux-source-X.Y` package ([`source`]), applies mailed patches to a scratch copy, and
//! compiles it with the system's `cc` against irqscope's own stand-ins for the kernel headers
//! plus a harness (`kernel-c/` at the top of the repository, embedded in the binary)
//! ([`build`]). The result runs as a separate, limited process that answers
//! `group_cpus_evenly()` calls over a line protocol ([`runner`]); [`runner::KernelC`]
//! implements [`crate::kernel::ExternalGroupCpus`], so every caller of the models (scenario,
//! sweep, blk-mq) runs it where it would run a named variant. [`verify`] checks a build
//! against a model on random machines and shrinks the first disagreement.
//!
//! This module does I/O (files, processes, the clock for limits); the models in `kernel`
//! stay pure. Kernel code is never part of the tree: it comes from the user's files or
//! Debian's packages at run time and lives only in the cache directory ([`cache_dir`]).

pub mod build;
pub mod registry;
pub mod runner;
pub mod source;
pub mod verify;

pub use build::{build, load, BuildOptions, Built, Provenance};
pub use runner::{KernelC, Limits};

use std::path::PathBuf;

/// What went wrong, by who can fix it: bad input (a source, a patch, C that does not
/// compile or fails at run time: exit 2, a 4xx) or the machine (no compiler).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KernelCError {
    #[error("{0}")]
    Input(String),
    #[error("{0}")]
    Compile(String),
}

impl KernelCError {
    pub(crate) fn input(m: impl Into<String>) -> KernelCError {
        KernelCError::Input(m.into())
    }
}

/// sha256 of bytes as lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Where builds and unpacked packages are kept: `$IRQSCOPE_KERNEL_C_DIR`, else
/// `$XDG_CACHE_HOME/irqscope/kernel-c`, else `$HOME/.cache/irqscope/kernel-c`, else
/// `/tmp/irqscope-kernel-c`.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("IRQSCOPE_KERNEL_C_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("irqscope/kernel-c");
    }
    if let Some(d) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join(".cache/irqscope/kernel-c");
    }
    PathBuf::from("/tmp/irqscope-kernel-c")
}

/// A build name: what `c:NAME` carries. Letters, digits, `.`, `_`, `-`; 1 to 64 bytes.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        && !name.starts_with('.')
}
