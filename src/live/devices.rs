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

use super::limits::DEVICE_NAME_BYTES_MAX;
use super::protocol::Snapshot;
use std::collections::BTreeMap;

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
        let n = |s: &str| classify(s).map(|(d, r, m)| (d, matches!(r, Role::Pre), m));
        assert_eq!(n("nvme0q0"), Some(("nvme0".into(), true, true)));
        assert_eq!(n("nvme12q31"), Some(("nvme12".into(), false, true)));
        assert_eq!(n("nvme0q"), None);
        assert_eq!(n("virtio3-req.0"), Some(("virtio3".into(), false, true)));
        assert_eq!(n("virtio3-config"), Some(("virtio3".into(), true, false)));
        assert_eq!(n("virtio1-input.2"), Some(("virtio1".into(), false, false)));
        assert_eq!(
            n("mlx5_comp7@pci:0000:08:00.0"),
            Some(("mlx5@0000:08:00.0".into(), false, false))
        );
        assert_eq!(
            n("mlx5_async0@pci:0000:08:00.0"),
            Some(("mlx5@0000:08:00.0".into(), true, false))
        );
        assert_eq!(
            n("mana_q3@pci:7870:00:00.0"),
            Some(("mana@7870:00:00.0".into(), false, false))
        );
        assert_eq!(
            n("mana_hwc@pci:7870:00:00.0"),
            Some(("mana@7870:00:00.0".into(), true, false))
        );
        assert_eq!(n("mana_intr"), Some(("mana".into(), false, false)));
        assert_eq!(n("mana_q"), None);
        assert_eq!(n("mana_qx@pci:1"), None);
        assert_eq!(n("i8042"), None);
    }
}
