//! The preset machines of `topologies/`, embedded at build time (see `build.rs`).
//!
//! A preset's name is its file stem (`azure-l96as-v4`). Every preset is parsed and validated
//! once, on first use; a preset that fails validation is a bug caught by the catalogue test.

use crate::kernel::vector_matrix::EffectiveModel;
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

/// The instruction-set architecture of a machine: it decides which effective-CPU model the
/// kernel's interrupt code follows when a scenario names none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    X86_64,
    Arm64,
}

impl Arch {
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Arm64 => "arm64",
        }
    }

    /// The effective-CPU model of this architecture's interrupt code: x86 spreads through the
    /// vector matrix (arch/x86/kernel/apic/vector.c), arm64's GICv3 `its_set_affinity` /
    /// `gic_set_affinity` fire on the first online CPU of the mask.
    pub(crate) fn effective_model(self) -> EffectiveModel {
        match self {
            Arch::X86_64 => EffectiveModel::X86Matrix,
            Arch::Arm64 => EffectiveModel::FirstCpu,
        }
    }
}

/// The architecture of every preset that is not x86_64, by name. Released preset files are
/// frozen (`tests/it/presets_frozen.rs`), so the architecture lives here rather than in them;
/// a preset missing from this table is x86_64. The catalogue test checks every name exists.
pub(crate) const ARCHITECTURES: &[(&str, Arch)] = &[
    ("ampere-altra-q80", Arch::Arm64),
    ("arm64-2s-snc-cluster-spans", Arch::Arm64),
    ("arm64-4node-diameter3", Arch::Arm64),
    ("azure-d16plds-v6", Arch::Arm64),
    ("azure-d96plds-v6", Arch::Arm64),
    ("graviton3-64c", Arch::Arm64),
];

/// The architecture of a preset (x86_64 when the table does not name it).
pub fn architecture(name: &str) -> Arch {
    ARCHITECTURES
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(Arch::X86_64, |(_, a)| *a)
}

/// The effective-CPU model a scenario on `preset` uses when it names none, and why, in words
/// for the page ("first-cpu: azure-d16plds-v6 is arm64"). `None` is a machine that is not a
/// preset (edited or imported): x86_64 as before.
pub fn default_effective(preset: Option<&str>) -> (EffectiveModel, String) {
    match preset {
        Some(name) => {
            let arch = architecture(name);
            let model = arch.effective_model();
            (model, format!("{}: {name} is {}", model.name(), arch.name()))
        }
        None => (
            EffectiveModel::X86Matrix,
            "x86-matrix: a machine that is not a preset is taken as x86_64".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_architecture_row_names_a_preset() {
        for (name, _) in ARCHITECTURES {
            assert!(source_text(name).is_some(), "{name} is not a preset");
        }
        assert_eq!(architecture("azure-d16plds-v6"), Arch::Arm64);
        assert_eq!(architecture("azure-l96as-v4"), Arch::X86_64);
        assert_eq!(default_effective(Some("graviton3-64c")).0, EffectiveModel::FirstCpu);
        assert_eq!(default_effective(None).0, EffectiveModel::X86Matrix);
    }
}
