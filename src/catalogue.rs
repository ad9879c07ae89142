//! The preset machines of `topologies/`, embedded at build time (see `build.rs`).
//!
//! A preset's name is its file stem (`azure-l96as-v4`). Every preset is parsed and validated
//! once, on first use; a preset that fails validation is a bug caught by the catalogue test.

use crate::topology::{Topology, TopologySpec};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

include!(concat!(env!("OUT_DIR"), "/presets.rs"));

/// Names of all presets, sorted.
pub fn names() -> impl Iterator<Item = &'static str> {
    PRESET_FILES.iter().map(|(name, _)| *name)
}

/// The file text of a preset.
pub fn source_text(name: &str) -> Option<&'static str> {
    PRESET_FILES.iter().find(|(n, _)| *n == name).map(|(_, text)| *text)
}

fn loaded() -> &'static BTreeMap<&'static str, Result<Arc<Topology>, String>> {
    static LOADED: OnceLock<BTreeMap<&'static str, Result<Arc<Topology>, String>>> = OnceLock::new();
    LOADED.get_or_init(|| {
        PRESET_FILES
            .iter()
            .map(|(name, text)| (*name, parse_preset(text)))
            .collect()
    })
}

/// Parse a topology file's text (TOML) and validate it.
pub fn parse_preset(text: &str) -> Result<Arc<Topology>, String> {
    let spec: TopologySpec = toml::from_str(text).map_err(|e| e.to_string())?;
    Topology::new(&spec).map(Arc::new).map_err(|e| e.to_string())
}

/// A validated preset by name.
pub fn get(name: &str) -> Option<Arc<Topology>> {
    loaded().get(name).and_then(|r| r.as_ref().ok()).cloned()
}

/// Every preset with its load result (for listings and the catalogue test).
pub fn all() -> impl Iterator<Item = (&'static str, &'static Result<Arc<Topology>, String>)> {
    loaded().iter().map(|(n, r)| (*n, r))
}
