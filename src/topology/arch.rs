//! Two facts of a machine that decide which kernel code places its interrupts: the
//! instruction-set architecture and the interrupt controller that delivers device MSIs.
//!
//! Both are facts of the topology (file, compact word, editor, permalink, import, capture), not
//! of a preset's name: a machine exported from an arm64 preset and read back is still arm64.
//! The architecture decides how the kernel builds the sibling and cluster masks of CPUs that are
//! not online; the controller decides which CPU of a vector's mask an interrupt fires on (the
//! effective-CPU models of `kernel`).

use serde::{Deserialize, Serialize};

/// The instruction-set architecture.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Arch {
    #[default]
    #[serde(rename = "x86_64")]
    X86_64,
    #[serde(rename = "arm64")]
    Arm64,
}

impl Arch {
    pub const ALL: [Arch; 2] = [Arch::X86_64, Arch::Arm64];

    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Arm64 => "arm64",
        }
    }

    pub fn from_name(name: &str) -> Option<Arch> {
        Arch::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The controller a machine of this architecture has when its file names none: the local
    /// APIC on x86, a GICv3 with an ITS on arm64 (Graviton, Ampere Altra, QEMU `virt`).
    pub fn default_irqchip(self) -> Irqchip {
        match self {
            Arch::X86_64 => Irqchip::Apic,
            Arch::Arm64 => Irqchip::GicIts,
        }
    }
}

/// The interrupt controller that delivers a device's MSIs, as far as it decides the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Irqchip {
    /// x86 local APIC: vectors from the per-CPU vector space (kernel/irq/matrix.c driven by
    /// arch/x86/kernel/apic/vector.c).
    #[serde(rename = "apic")]
    Apic,
    /// arm64 GICv3 with an ITS: MSIs are LPIs, placed by drivers/irqchip/irq-gic-v3-its.c.
    #[serde(rename = "gic-its")]
    GicIts,
    /// arm64 GICv2m: MSIs are SPIs, routed by `gic_set_affinity()` to one CPU of the mask.
    #[serde(rename = "gic-v2m")]
    GicV2m,
    /// arm64 MSIs delivered as SPIs by a hypervisor's virtual PCI (Hyper-V vPCI on Azure arm64),
    /// routed by the GIC's `gic_set_affinity()` like GICv2m.
    #[serde(rename = "gic-spi")]
    GicSpi,
    /// arm64 GICv5 (drivers/irqchip/irq-gic-v5*.c, v6.17 on): wired interrupts are IRS SPIs,
    /// MSIs are LPIs through a GICv5 ITS; both are routed by `gicv5_iri_irq_set_affinity()` to
    /// one CPU of the mask.
    #[serde(rename = "gic-v5")]
    GicV5,
}

impl Irqchip {
    pub const ALL: [Irqchip; 5] = [
        Irqchip::Apic,
        Irqchip::GicIts,
        Irqchip::GicV2m,
        Irqchip::GicSpi,
        Irqchip::GicV5,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Irqchip::Apic => "apic",
            Irqchip::GicIts => "gic-its",
            Irqchip::GicV2m => "gic-v2m",
            Irqchip::GicSpi => "gic-spi",
            Irqchip::GicV5 => "gic-v5",
        }
    }

    pub fn from_name(name: &str) -> Option<Irqchip> {
        Irqchip::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The architecture this controller belongs to.
    pub fn arch(self) -> Arch {
        match self {
            Irqchip::Apic => Arch::X86_64,
            Irqchip::GicIts | Irqchip::GicV2m | Irqchip::GicSpi | Irqchip::GicV5 => Arch::Arm64,
        }
    }

    /// A few words for pages and reports.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Irqchip::Apic => "x86 local APIC (per-CPU vector space)",
            Irqchip::GicIts => "GICv3 ITS (MSIs as LPIs)",
            Irqchip::GicV2m => "GICv2m (MSIs as SPIs)",
            Irqchip::GicSpi => "MSIs as GIC SPIs through the hypervisor's virtual PCI (Hyper-V vPCI)",
            Irqchip::GicV5 => "GICv5 (SPIs through the IRS, MSIs as LPIs through its ITS)",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_controllers_belong_to_one_architecture() {
        for a in Arch::ALL {
            assert_eq!(Arch::from_name(a.name()), Some(a));
            assert_eq!(a.default_irqchip().arch(), a);
        }
        for c in Irqchip::ALL {
            assert_eq!(Irqchip::from_name(c.name()), Some(c));
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.name()));
        }
        assert_eq!(serde_json::to_string(&Arch::X86_64).unwrap(), "\"x86_64\"");
        assert_eq!(Arch::from_name("aarch64"), None);
    }
}
