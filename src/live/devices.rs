//! Group a snapshot's IRQs into devices, as far as the action names tell. Pure parsing: the
//! comparison with the model is `analysis::live_vs_model`.
//!
//! Grouping by action name (the names drivers give their vectors):
//! * NVMe `nvme{N}q{M}`: device `nvme{N}`; `q0` (the admin queue) is the pre-vector, the I/O
//!   queues follow in queue order; managed.
//! * virtio `virtio{N}-{queue}`: `virtio{N}-config` is the pre-vector; managed when the device
//!   has `-req.` queues (virtio-blk / virtio-scsi use `PCI_IRQ_AFFINITY`), not for virtio-net.
//! * mlx5 `mlx5_comp{M}@pci:{BDF}`: completion vectors, `mlx5_async*` / `mlx5_ctrl*` /
//!   `mlx5_cmd*` first; not managed (mlx5 spreads its own IRQ pool).
//! * MANA `mana_q{M}@pci:{BDF}` with `mana_hwc@pci:{BDF}` (MSI-X index 0, the hardware
//!   channel) first: the names `mana_gd_setup_irqs()` gives since "net: mana: Add names to irq";
//!   older drivers name every vector `mana_intr` (one device `mana`, the lowest IRQ is the HWC).
//!   Such a device is marked [`LiveDriver::Mana`] so the comparison runs the MANA driver model.
//!
//! Devices come out in probe order: the order of their lowest IRQ number. IRQs of no known
//! device are returned apart. Device names are cut to [`DEVICE_NAME_BYTES_MAX`] bytes.
//!
//! The controller that delivers an IRQ, from the chip column of `/proc/interrupts`
//! ([`controller_of_chip`]): the name of the outermost `irq_chip` of the interrupt's domain
//! hierarchy. Since per-device MSI domains (v6.2 onwards, `msi_create_device_irq_domain()`)
//! that name is the parent's prefix, the bus template's name and the device
//! (`ITS-PCI-MSIX-0000:00:01.0`, `GICv2m-PCI-MSIX-…`, `IR-PCI-MSIX-…`, `HV-PCI-MSIX-…`); older
//! kernels print one global name (`ITS-MSI`, `PCI-MSI`, `Hyper-V PCIe MSI`).

use super::limits::DEVICE_NAME_BYTES_MAX;
use super::protocol::Snapshot;
use crate::topology::{Arch, Irqchip};
use std::collections::BTreeMap;

/// What an IRQ's chip name tells about the controller that delivers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChipController {
    /// The name belongs to one controller.
    Known(Irqchip),
    /// Hyper-V's virtual PCI MSI chip (`Hyper-V PCIe MSI`; `HV-PCI-MSI…` with per-device
    /// domains, drivers/pci/controller/pci-hyperv.c), the same name on both architectures: x86
    /// delivers its MSIs through the APIC's vector space, arm64 as GIC SPIs.
    HyperV,
    /// A name no rule knows.
    Unknown,
}

/// The architecture a kernel release was built for, from Debian's and the usual flavour
/// suffixes (`6.12.117+deb12-cloud-arm64`, `…-arm64`, `aarch64`; `…-amd64`, `x86_64`).
pub(crate) fn release_arch(release: &str) -> Option<Arch> {
    let r = release.to_ascii_lowercase();
    if r.contains("arm64") || r.contains("aarch64") {
        Some(Arch::Arm64)
    } else if r.contains("amd64") || r.contains("x86_64") || r.contains("x86-64") {
        Some(Arch::X86_64)
    } else {
        None
    }
}

/// The controller of a host's device MSIs, from the chip names of its interrupts: a GICv5, an ITS, a
/// GICv2m frame, the x86 APIC (MSI and IO-APIC chips), or, on arm64 with none of the first two
/// (Hyper-V's PCI, or only GIC SPIs), the GIC's SPIs. `None` when no name tells.
pub(crate) fn machine_irqchip<'a>(chips: impl Iterator<Item = &'a str>) -> Option<Irqchip> {
    let mut seen = [false; Irqchip::ALL.len()];
    for chip in chips {
        if let ChipController::Known(c) = controller_of_chip(chip) {
            seen[Irqchip::ALL.iter().position(|&k| k == c).expect("a known controller")] = true;
        }
    }
    [
        Irqchip::GicV5,
        Irqchip::GicIts,
        Irqchip::GicV2m,
        Irqchip::Apic,
        Irqchip::GicSpi,
    ]
    .into_iter()
    .find(|c| seen[Irqchip::ALL.iter().position(|k| k == c).expect("a known controller")])
}

/// The controller behind a `/proc/interrupts` chip name:
/// * `GICv5-…` (`GICv5-SPI`, `GICv5-LPI`, `GICv5-ITS-MSI`, `GICv5-IPI`, `GICv5-PPI`: the
///   `irq_chip` names of drivers/irqchip/irq-gic-v5*.c) and `ITS-v5-…` (the GICv5 ITS's MSI
///   parent prefix, irq-gic-its-msi-parent.c: `ITS-v5-PCI-MSIX-<bdf>`, and
///   `ITS-v5-GICv5-IWB-<dev>` for wires behind an IWB): a GICv5 (v6.17 on);
/// * `ITS-…` (`ITS-MSI`, `ITS-pMSI`, `ITS-PCI-MSIX-<bdf>`): LPIs of a GICv3 ITS
///   (drivers/irqchip/irq-gic-v3-its*.c);
/// * `GICv2m…`: MSIs as SPIs through a GICv2m frame (drivers/irqchip/irq-gic-v2m.c);
/// * `GICv3`, `GICv2`, `GIC-0`: wired SPIs and PPIs of the GIC itself (`gic_set_affinity()`);
/// * `Hyper-V PCIe MSI`, `HV-…`: Hyper-V vPCI, see [`ChipController::HyperV`];
/// * `PCI-MSI…`, `IR-PCI-MSI…`, `IO-APIC`, `IR-IO-APIC`, `HPET…`, `DMAR-MSI`, `AMD-IR-…`,
///   `INTEL-IR-…`, `VMD-MSI…`: x86 (arm64's MSI parents always prefix their own name).
pub(crate) fn controller_of_chip(chip: &str) -> ChipController {
    let starts = |prefixes: &[&str]| prefixes.iter().any(|p| chip.starts_with(p));
    if starts(&["GICv5-", "ITS-v5-"]) {
        ChipController::Known(Irqchip::GicV5)
    } else if chip == "ITS" || chip.starts_with("ITS-") {
        ChipController::Known(Irqchip::GicIts)
    } else if chip.starts_with("GICv2m") {
        ChipController::Known(Irqchip::GicV2m)
    } else if chip == "GICv3" || chip == "GICv2" || chip == "GIC" || chip.starts_with("GIC-") {
        ChipController::Known(Irqchip::GicSpi)
    } else if chip == "Hyper-V PCIe MSI" || chip.starts_with("HV-") {
        ChipController::HyperV
    } else if starts(&[
        "PCI-MSI",
        "IR-PCI-MSI",
        "IO-APIC",
        "IR-IO-APIC",
        "HPET",
        "IR-HPET",
        "DMAR-MSI",
        "AMD-IR-",
        "INTEL-IR-",
        "VMD-MSI",
    ]) {
        ChipController::Known(Irqchip::Apic)
    } else {
        ChipController::Unknown
    }
}

/// The controller of an IRQ from its chip name, with the architecture settling Hyper-V's
/// chip; `None` when neither tells.
pub(crate) fn irqchip_of(chip: &str, arch: Option<Arch>) -> Option<Irqchip> {
    match (controller_of_chip(chip), arch) {
        (ChipController::Known(c), _) => Some(c),
        (ChipController::HyperV, Some(Arch::Arm64)) => Some(Irqchip::GicSpi),
        (ChipController::HyperV, Some(Arch::X86_64)) => Some(Irqchip::Apic),
        _ => None,
    }
}

/// The architecture the chip names of a snapshot belong to, when they name one and only one.
pub(crate) fn arch_of_chips<'a>(chips: impl IntoIterator<Item = &'a str>) -> Option<Arch> {
    let mut arch = None;
    for chip in chips {
        if let ChipController::Known(c) = controller_of_chip(chip) {
            match arch {
                None => arch = Some(c.arch()),
                Some(a) if a != c.arch() => return None,
                Some(_) => {}
            }
        }
    }
    arch
}

/// The driver that set a live device's IRQs up, as far as the names tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveDriver {
    /// `pci_alloc_irq_vectors_affinity()` (NVMe, virtio, mlx5's pool seen as one device).
    Generic,
    /// The MANA NIC driver (its own IRQ spreading, not `PCI_IRQ_AFFINITY`).
    Mana,
}

/// A device found in a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveDevice {
    pub name: String,
    /// Indices into `snapshot.irqs`: pre-vectors (IRQ order), then queues (queue order). For
    /// MANA the pre-vector is the HWC.
    pub vectors: Vec<usize>,
    pub pre: u32,
    pub managed: bool,
    pub driver: LiveDriver,
}

fn split_num_prefix(s: &str) -> Option<(u32, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 9 {
        return None;
    }
    Some((s[..digits].parse().ok()?, &s[digits..]))
}

enum Role {
    Pre,
    Queue(u32),
    /// Role decided by IRQ order (legacy `mana_intr`: the lowest is the HWC).
    ByIrqOrder,
}

/// The device name of MANA IRQs named the pre-6.x way (`mana_intr`, no PCI address).
const MANA_LEGACY_DEVICE: &str = "mana";

/// (device name, role, managed) for one action name.
fn classify(name: &str) -> Option<(String, Role, bool)> {
    if name == "mana_intr" {
        return Some((MANA_LEGACY_DEVICE.into(), Role::ByIrqOrder, false));
    }
    if let Some(rest) = name.strip_prefix("nvme") {
        let (n, rest) = split_num_prefix(rest)?;
        let (q, tail) = split_num_prefix(rest.strip_prefix('q')?)?;
        if !tail.is_empty() {
            return None;
        }
        return Some((
            format!("nvme{n}"),
            if q == 0 { Role::Pre } else { Role::Queue(q) },
            true,
        ));
    }
    if let Some(rest) = name.strip_prefix("virtio") {
        let (n, rest) = split_num_prefix(rest)?;
        let queue = rest.strip_prefix('-')?;
        if queue == "config" {
            return Some((format!("virtio{n}"), Role::Pre, false));
        }
        let idx = queue.rsplit_once('.').and_then(|(_, i)| i.parse().ok()).unwrap_or(0);
        // Queue order: kind, then index (req.0, req.1 …; input.0, output.0 … by IRQ order).
        return Some((format!("virtio{n}"), Role::Queue(idx), queue.starts_with("req.")));
    }
    if let Some((what, bdf)) = name.split_once("@pci:") {
        if let Some(q) = what.strip_prefix("mlx5_comp") {
            let (q, tail) = split_num_prefix(q)?;
            return tail.is_empty().then(|| (format!("mlx5@{bdf}"), Role::Queue(q), false));
        }
        if ["mlx5_async", "mlx5_ctrl", "mlx5_cmd"]
            .iter()
            .any(|p| what.starts_with(p))
        {
            return Some((format!("mlx5@{bdf}"), Role::Pre, false));
        }
        if let Some(q) = what.strip_prefix("mana_q") {
            let (q, tail) = split_num_prefix(q)?;
            return tail.is_empty().then(|| (format!("mana@{bdf}"), Role::Queue(q), false));
        }
        if what == "mana_hwc" {
            return Some((format!("mana@{bdf}"), Role::Pre, false));
        }
    }
    None
}

/// The device an IRQ's action name belongs to, and whether its driver asks for managed
/// affinity (`None` for names no rule knows).
pub(crate) fn device_of(name: &str) -> Option<(String, bool)> {
    classify(name).map(|(dev, _, managed)| (dev, managed))
}

/// Group the numbered IRQs of a snapshot into devices, in probe order.
pub fn group_devices(snap: &Snapshot) -> (Vec<LiveDevice>, Vec<usize>) {
    struct Acc {
        first_irq: u32,
        pre: Vec<(u32, usize)>,
        queues: Vec<(u32, u32, usize)>,
        managed: bool,
    }
    let mut acc: BTreeMap<String, Acc> = BTreeMap::new();
    let mut other = Vec::new();
    for (i, irq) in snap.irqs.iter().enumerate() {
        let Ok(n) = irq.label.parse::<u32>() else { continue };
        match classify(&irq.name) {
            Some((dev, role, managed)) => {
                let a = acc.entry(dev).or_insert(Acc {
                    first_irq: n,
                    pre: vec![],
                    queues: vec![],
                    managed: false,
                });
                a.first_irq = a.first_irq.min(n);
                a.managed |= managed;
                match role {
                    Role::Pre => a.pre.push((n, i)),
                    Role::Queue(q) => a.queues.push((q, n, i)),
                    Role::ByIrqOrder => a.queues.push((n, n, i)),
                }
            }
            None => other.push(i),
        }
    }
    let mut devices: Vec<(u32, LiveDevice)> = acc
        .into_iter()
        .map(|(name, mut a)| {
            a.pre.sort_unstable();
            a.queues.sort_unstable();
            let driver = if name.starts_with("mana@") || name == MANA_LEGACY_DEVICE {
                LiveDriver::Mana
            } else {
                LiveDriver::Generic
            };
            if name == MANA_LEGACY_DEVICE && a.pre.is_empty() && !a.queues.is_empty() {
                let (_, n, i) = a.queues.remove(0);
                a.pre.push((n, i));
            }
            let vectors = a.pre.iter().map(|p| p.1).chain(a.queues.iter().map(|q| q.2)).collect();
            let name: String = name
                .chars()
                .map(|c| {
                    if c.is_whitespace() || c.is_control() || c == ',' {
                        '_'
                    } else {
                        c
                    }
                })
                .take(DEVICE_NAME_BYTES_MAX)
                .collect();
            (
                a.first_irq,
                LiveDevice {
                    name,
                    vectors,
                    pre: a.pre.len() as u32,
                    managed: a.managed,
                    driver,
                },
            )
        })
        .collect();
    devices.sort_by_key(|d| d.0);
    (devices.into_iter().map(|d| d.1).collect(), other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_group_into_devices() {
        // The IRQ's name, then its device, whether it is a pre vector, whether managed.
        let cases = [
            ("nvme0q0", Some(("nvme0", true, true))),
            ("nvme12q31", Some(("nvme12", false, true))),
            ("nvme0q", None),
            ("virtio3-req.0", Some(("virtio3", false, true))),
            ("virtio3-config", Some(("virtio3", true, false))),
            ("virtio1-input.2", Some(("virtio1", false, false))),
            ("mlx5_comp7@pci:0000:08:00.0", Some(("mlx5@0000:08:00.0", false, false))),
            ("mlx5_async0@pci:0000:08:00.0", Some(("mlx5@0000:08:00.0", true, false))),
            ("mana_q3@pci:7870:00:00.0", Some(("mana@7870:00:00.0", false, false))),
            ("mana_hwc@pci:7870:00:00.0", Some(("mana@7870:00:00.0", true, false))),
            ("mana_intr", Some(("mana", false, false))),
            ("mana_q", None),
            ("mana_qx@pci:1", None),
            ("i8042", None),
        ];
        for (name, want) in cases {
            let got = classify(name).map(|(d, r, m)| (d, matches!(r, Role::Pre), m));
            assert_eq!(got, want.map(|(d, pre, m)| (d.to_string(), pre, m)), "{name}");
        }
    }

    /// Chip names as real kernels print them (the lab's arm64 and x86 captures, Hyper-V's
    /// driver) pick their controller; Hyper-V's needs the architecture.
    #[test]
    fn chip_names_pick_the_controller() {
        let known = |chip: &str| irqchip_of(chip, None);
        assert_eq!(known("ITS-PCI-MSIX-0000:00:01.0"), Some(Irqchip::GicIts));
        assert_eq!(known("ITS-MSI"), Some(Irqchip::GicIts));
        assert_eq!(known("GICv2m-PCI-MSIX-0000:00:02.0"), Some(Irqchip::GicV2m));
        assert_eq!(known("GICv3"), Some(Irqchip::GicSpi));
        assert_eq!(known("GIC-0"), Some(Irqchip::GicSpi));
        assert_eq!(known("PCI-MSIX-0000:00:18.0"), Some(Irqchip::Apic));
        assert_eq!(known("IR-PCI-MSIX-0000:3b:00.0"), Some(Irqchip::Apic));
        assert_eq!(known("IO-APIC"), Some(Irqchip::Apic));
        assert_eq!(known("Hyper-V PCIe MSI"), None);
        assert_eq!(known("HV-PCI-MSIX-7870:00:00.0"), None);
        assert_eq!(irqchip_of("Hyper-V PCIe MSI", Some(Arch::Arm64)), Some(Irqchip::GicSpi));
        assert_eq!(
            irqchip_of("HV-PCI-MSIX-1:00:00.0", Some(Arch::X86_64)),
            Some(Irqchip::Apic)
        );
        assert_eq!(known("-"), None);
        assert_eq!(known("ITSY"), None);
        assert_eq!(
            arch_of_chips(["GICv3", "Hyper-V PCIe MSI", "ITS-MSI"]),
            Some(Arch::Arm64)
        );
        assert_eq!(arch_of_chips(["IO-APIC", "Hyper-V PCIe MSI"]), Some(Arch::X86_64));
        assert_eq!(arch_of_chips(["Hyper-V PCIe MSI", "-"]), None);
        assert_eq!(arch_of_chips(["IO-APIC", "GICv3"]), None);
    }

    /// The names a GICv5 host prints: its driver's chips and the per-device domains under its
    /// ITS ("ITS-v5-" is that MSI parent's prefix, so it must not read as a GICv3 ITS).
    #[test]
    fn gicv5_chip_names_pick_gicv5() {
        let known = |chip: &str| irqchip_of(chip, None);
        for chip in [
            "GICv5-SPI",
            "GICv5-LPI",
            "GICv5-ITS-MSI",
            "GICv5-IPI",
            "GICv5-PPI",
            "ITS-v5-PCI-MSIX-0000:00:01.0",
            "ITS-v5-PCI-MSI-0000:00:02.0",
            "ITS-v5-GICv5-IWB-2f000000.interrupt-controller",
        ] {
            assert_eq!(known(chip), Some(Irqchip::GicV5), "{chip}");
        }
        assert_eq!(known("ITS-PCI-MSIX-0000:00:01.0"), Some(Irqchip::GicIts));
        assert_eq!(known("GICv5"), None);
        let host = ["GICv5-PPI", "GICv5-SPI", "ITS-v5-PCI-MSIX-0000:00:01.0", "GICv5-IPI"];
        assert_eq!(machine_irqchip(host.into_iter()), Some(Irqchip::GicV5));
        assert_eq!(arch_of_chips(host), Some(Arch::Arm64));
    }
}
