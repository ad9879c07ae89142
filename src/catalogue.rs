//! The preset machines of `topologies/`, embedded at build time (see `build.rs`).
//!
//! A preset's name is its file stem (`azure-l96as-v4`). Every preset is parsed and validated
//! once, on first use; a preset that fails validation is a bug caught by the catalogue test.

use crate::kernel::vector_matrix::EffectiveModel;
use crate::topology::{Arch, Irqchip, Topology, TopologySpec};
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
            .map(|(name, text)| {
                let topology = toml::from_str::<TopologySpec>(text)
                    .map_err(|e| e.to_string())
                    .and_then(|spec| {
                        Topology::new(&with_machine_facts(name, spec))
                            .map(Arc::new)
                            .map_err(|e| e.to_string())
                    });
                (*name, topology)
            })
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

/// The architecture and interrupt controller of every preset that is not an x86_64 machine
/// with a local APIC, by name. Released preset files are frozen (`tests/it/presets_frozen.rs`),
/// so these facts live here and are filled into a preset that does not state them; a file read
/// from elsewhere says them itself (`arch`, `irqchip`). The catalogue test checks every name
/// exists.
///
/// Azure's arm64 VMs (Dpds/Dplds v6, Cobalt 100) deliver device MSIs as SPIs through Hyper-V's
/// virtual PCI; Graviton, Ampere Altra and the synthetic arm64 servers have a GICv3 ITS.
pub(crate) const MACHINE_FACTS: &[(&str, Arch, Irqchip)] = &[
    ("ampere-altra-q80", Arch::Arm64, Irqchip::GicIts),
    ("arm64-2s-snc-cluster-spans", Arch::Arm64, Irqchip::GicIts),
    ("arm64-4node-diameter3", Arch::Arm64, Irqchip::GicIts),
    ("azure-d16plds-v6", Arch::Arm64, Irqchip::GicSpi),
    ("azure-d96plds-v6", Arch::Arm64, Irqchip::GicSpi),
    ("graviton3-64c", Arch::Arm64, Irqchip::GicIts),
];

/// The x86 presets with a legacy 8259 PIC (`nr_legacy_irqs() > 1`), whose kernel takes the PIC
/// cascade vector (`ISA_IRQ_VECTOR(PIC_CASCADE_IR)`) out of every CPU's device vectors
/// (`lapic_assign_system_vectors()`, arch/x86/kernel/apic/vector.c). Frozen preset files are
/// silent on it, so the fact lives here, as [`MACHINE_FACTS`] does.
///
/// Physical PCs and servers have one (the chipset's 8259, found by `probe_8259A()` or taken on
/// trust when the MADT says PCAT_COMPAT), and so do QEMU/KVM guests (q35, i440fx: the lab's VMs)
/// and the KVM-based clouds the `vm-*` shapes stand for. Presets not listed say nothing (Azure's
/// Hyper-V shapes, the synthetic machines, arm64): no cascade is counted for them.
pub(crate) const LEGACY_PIC: &[&str] = &[
    "amd-epyc-9654-1s-nps1",
    "amd-epyc-9654-2s-nps4",
    "intel-core-i9-13900k",
    "intel-core-ultra-7-265k",
    "intel-xeon-2s-56c-snc2",
    "vm-2vcpu-smt2",
    "vm-4vcpu-smt2-l2",
    "vm-8vcpu-hotplug-64",
    "vm-8vcpu-smt2",
    "xeon-2s-18c-nosmt-offline",
    "xeon-2s-18c-smt2",
];

/// A preset's spec with the facts of [`MACHINE_FACTS`] and [`LEGACY_PIC`] filled in where its
/// file is silent.
fn with_machine_facts(name: &str, mut spec: TopologySpec) -> TopologySpec {
    if let Some((_, arch, irqchip)) = MACHINE_FACTS.iter().find(|(n, _, _)| *n == name) {
        if spec.arch.is_none() && spec.irqchip.is_none() {
            spec.arch = Some(*arch);
            spec.irqchip = Some(*irqchip);
        }
    }
    if spec.legacy_pic.is_none() && LEGACY_PIC.contains(&name) {
        spec.legacy_pic = Some(true);
    }
    spec
}

/// The effective-CPU model a scenario on `topology` uses when it names none, and why, in words
/// for the page ("first-cpu: azure-d16plds-v6 is arm64 with MSIs as GIC SPIs …"): the machine's
/// interrupt controller decides.
pub(crate) fn default_effective(topology: &Topology) -> (EffectiveModel, String) {
    let chip = topology.irqchip();
    let model = EffectiveModel::for_irqchip(chip);
    (
        model,
        format!(
            "{}: {} is {} with {}",
            model.name(),
            topology.name(),
            topology.arch().name(),
            chip.describe()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_machine_facts_row_names_a_preset() {
        for (name, arch, irqchip) in MACHINE_FACTS {
            assert!(source_text(name).is_some(), "{name} is not a preset");
            let t = get(name).unwrap();
            assert_eq!((t.arch(), t.irqchip()), (*arch, *irqchip), "{name}");
        }
        for name in LEGACY_PIC {
            let t = get(name).unwrap_or_else(|| panic!("{name} is not a preset"));
            assert_eq!((t.arch(), t.legacy_pic()), (Arch::X86_64, Some(true)), "{name}");
        }
        assert_eq!(get("azure-l96as-v4").unwrap().legacy_pic(), None);
        let d16 = get("azure-d16plds-v6").unwrap();
        assert_eq!(default_effective(&d16).0, EffectiveModel::FirstCpu);
        assert_eq!(get("azure-l96as-v4").unwrap().arch(), Arch::X86_64);
        assert_eq!(
            default_effective(&get("azure-l96as-v4").unwrap()).0,
            EffectiveModel::X86Matrix
        );
        // Exported and read back, an arm64 preset stays arm64 (the fact travels in the file).
        let back = parse_preset(&toml::to_string(&d16.to_spec()).unwrap()).unwrap();
        assert_eq!((back.arch(), back.irqchip()), (Arch::Arm64, Irqchip::GicSpi));
    }
}
