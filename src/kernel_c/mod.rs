//! The engine that runs built C as a variant (`c:NAME`): the harness process and its line
//! protocol ([`runner`]) with the machine as it is sent ([`machine`]), the builds a server
//! registered ([`registry`], what a `c:NAME` link resolves through), the one place C is
//! compiled and run ([`exec`]), and what a build records about itself ([`Provenance`]).
//!
//! The engine sits below `render` and reads only `kernel` and `topology` (and the preset
//! catalogue, to key its machines once): [`runner::KernelC`] implements
//! [`crate::kernel::ExternalGroupCpus`], so every caller of the models (scenario, sweep,
//! blk-mq) runs it where it would run a named variant. The tools that make builds (`kernel-c
//! build`: apt-get, patch, cc) and check them (`kernel-c verify`) sit at the top, in
//! `kernel_c_tools`, beside `golden`.
//!
//! This module does I/O (files, processes, the clock for limits); the models in `kernel`
//! stay pure. Kernel code is never part of the tree: it comes from the user's files or
//! Debian's packages at run time and lives only in the cache directory ([`cache_dir`]).

pub mod exec;
mod machine;
pub(crate) mod registry;
pub mod runner;
pub(crate) mod stages;

pub use runner::{KernelC, Limits};

thread_local! {
    /// When the calls this thread makes must end ([`with_deadline`]).
    static CALLS_END_AT: std::cell::Cell<Option<std::time::Instant>> = const { std::cell::Cell::new(None) };
}

/// Run `f` with every harness call it makes on this thread killed at `at` at the latest (or
/// at its own wall-clock limit, if sooner): a server's request deadline reaches into a call
/// of C that loops.
pub(crate) fn with_deadline<T>(at: std::time::Instant, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<std::time::Instant>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CALLS_END_AT.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(CALLS_END_AT.with(|c| c.replace(Some(at))));
    f()
}

/// The deadline [`with_deadline`] set for this thread's calls, if any.
pub(crate) fn calls_end_at() -> Option<std::time::Instant> {
    CALLS_END_AT.with(std::cell::Cell::get)
}

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

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
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
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

/// What a build records about itself: shown on pages and in reports, pinned in permalinks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    pub name: String,
    /// The build's id: sha256 over the patched source and the sort it uses.
    pub id: String,
    /// What the user named.
    pub origin: String,
    /// sha256 of `lib/group_cpus.c` as given, before patches.
    pub source_sha256: String,
    /// The tree's kernel version (its Makefile), when known.
    pub version: Option<String>,
    pub package_version: Option<String>,
    /// The subjects of the patches applied, in order.
    pub patches: Vec<String>,
    /// `lib/sort.c of the tree` or `irqscope heap-v6.11`.
    pub sort: String,
    /// The file-static rotation counter the harness sets and reads, when there is one.
    pub counter: Option<String>,
    /// `group_cpus_evenly(numgrps)` (before the nummasks out-parameter) or
    /// `group_cpus_evenly(numgrps, &nummasks)`.
    pub api: String,
    /// How long the compile took (milliseconds), when this build compiled it.
    #[serde(default)]
    pub compile_ms: u64,
    /// The stages built from the tree beside `group_cpus_evenly` (`kernel::Stage` names:
    /// `irq_create_affinity_masks`, `blk_mq_map_queues`, …); empty for a single file and for
    /// builds made before stages were built.
    #[serde(default)]
    pub stages: Vec<String>,
    /// The patches' hunks that applied at an offset or with fuzz (`SUBJECT: FILE: Hunk #N
    /// succeeded at L (offset K lines)`): the tree is not quite the one they were made against.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patch_notes: Vec<String>,
}

impl Provenance {
    /// One line: name, version, patches, hash.
    pub(crate) fn describe(&self) -> String {
        let mut s = format!("built C: {}", self.origin);
        if let Some(v) = &self.version {
            s.push_str(&format!(", Linux {v}"));
        }
        if !self.patches.is_empty() {
            s.push_str(&format!(", patches: {}", self.patches.join("; ")));
        }
        s.push_str(&format!(", sha256 {}", &self.id[..16.min(self.id.len())]));
        s.push_str(&format!("; {}", self.stages_line()));
        s
    }

    /// Which stages run from this C and which from the models.
    pub fn stages_line(&self) -> String {
        let mut from_c = vec!["group_cpus_evenly()".to_string()];
        from_c.extend(self.stages.iter().map(|s| format!("{s}()")));
        let models: Vec<String> = crate::kernel::Stage::ALL
            .iter()
            .filter(|st| st.name() != "group_cpus_evenly" && !self.stages.iter().any(|s| s == st.name()))
            .map(|st| format!("{}()", st.name()))
            .collect();
        let mut line = format!("from its C: {}", from_c.join(", "));
        if !models.is_empty() {
            line.push_str(&format!("; from the models: {}", models.join(", ")));
        }
        line
    }
}

/// A finished build: its executable and what it is.
#[derive(Debug, Clone)]
pub struct Built {
    pub(crate) exe: PathBuf,
    pub provenance: Provenance,
}

/// A build registered under `name` in the cache (what `c:NAME` names on the command line).
pub fn load(cache: &Path, name: &str) -> Result<Built, KernelCError> {
    let io = |path: &Path, e: std::io::Error| KernelCError::input(format!("{}: {e}", path.display()));
    if !valid_name(name) {
        return Err(KernelCError::input(format!("c:{name}: not a build name")));
    }
    let key = std::fs::read_to_string(cache.join("names").join(name)).map_err(|_| {
        KernelCError::input(format!(
            "c:{name}: no build of that name in {} (irqscope kernel-c build SOURCE --name {name})",
            cache.display()
        ))
    })?;
    let dir = cache.join("builds").join(key.trim());
    let json = std::fs::read_to_string(dir.join("build.json")).map_err(|e| io(&dir, e))?;
    let provenance: Provenance =
        serde_json::from_str(&json).map_err(|e| KernelCError::input(format!("{}: {e}", dir.display())))?;
    Ok(Built {
        exe: dir.join("harness"),
        provenance,
    })
}
