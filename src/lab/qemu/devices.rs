//! The lab machine's devices as QEMU gets them: NVMe controllers (from a scenario's nvme
//! devices, or given as `max_ioqpairs` counts), then virtio-blk and virtio-net devices, each
//! in its own PCI slot on the root bus.

use super::{refuse, Unexpressible};
use crate::scenario::{Device, Driver};

/// Most NVMe controllers a lab machine gets (PCI slots 0x10 onwards on the q35 root bus).
pub(crate) const NVME_MAX: usize = 16;
/// Most I/O queue pairs one controller offers (QEMU's `max_ioqpairs` limit is far higher; the
/// guest never uses more than one per CPU).
pub(crate) const IOQPAIRS_MAX: u32 = 1024;

/// The `max_ioqpairs` of the controller that makes the nvme driver ask for a device's vectors.
pub fn nvme_ioqpairs(devices: &[Device], possible: u32) -> Result<Vec<u32>, Unexpressible> {
    if devices.len() > NVME_MAX {
        return Err(refuse(format!(
            "{} devices, a lab machine has at most {NVME_MAX}",
            devices.len()
        )));
    }
    devices
        .iter()
        .map(|d| {
            let nvme_like = matches!(d.driver, Driver::Generic | Driver::Nvme)
                && d.pre_vectors == 1
                && d.post_vectors == 0
                && d.sets.is_none()
                && d.managed_affinity;
            if !nvme_like {
                return Err(refuse(format!(
                    "device {:?} is not an NVMe controller (one pre vector, managed, no post vectors \
                     or sets)",
                    d.name
                )));
            }
            let qp = d.vectors.saturating_sub(1);
            if qp == 0 || qp > possible {
                return Err(refuse(format!(
                    "device {:?} has {} vectors: an NVMe controller gets 1 + min(queues, {possible} CPUs)",
                    d.name, d.vectors
                )));
            }
            Ok(qp)
        })
        .collect()
}

/// The kinds of PCI device a lab machine gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeviceKind {
    /// QEMU's `nvme`: a controller of `max_ioqpairs` I/O queue pairs.
    Nvme,
    /// `virtio-blk-pci` of `num-queues` request queues (MSI-X, a vector per queue and one for
    /// its configuration).
    VirtioBlk,
    /// `virtio-net-pci` of that many queue pairs (`mq=on` above one).
    VirtioNet,
}

impl DeviceKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            DeviceKind::Nvme => "nvme",
            DeviceKind::VirtioBlk => "virtio-blk",
            DeviceKind::VirtioNet => "virtio-net",
        }
    }

    /// The start of its devices' names: `n0` (the NVMe serial), `vb0`, `vn0`.
    fn prefix(self) -> &'static str {
        match self {
            DeviceKind::Nvme => "n",
            DeviceKind::VirtioBlk => "vb",
            DeviceKind::VirtioNet => "vn",
        }
    }
}

/// A device of a lab machine at its PCI slot: NVMe controllers from slot 0x10, then the
/// virtio-blk devices, then the virtio-net ones, so PCI order is that order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SlotDevice {
    pub(crate) kind: DeviceKind,
    /// Its place among the devices of its kind.
    pub(crate) index: usize,
    pub(crate) queues: u32,
    pub(crate) slot: u32,
}

impl SlotDevice {
    /// `n0`, `vb1`, `vn0`.
    pub(crate) fn name(&self) -> String {
        format!("{}{}", self.kind.prefix(), self.index)
    }

    /// The guest's PCI address (`0000:00:10.0`).
    pub(crate) fn pci(&self) -> String {
        format!("0000:00:{:02x}.0", self.slot)
    }

    /// Its disk image's file name (`nvme0.img`, `vb0.img`); none for a network device.
    pub(crate) fn disk(&self) -> Option<String> {
        match self.kind {
            DeviceKind::Nvme => Some(format!("nvme{}.img", self.index)),
            DeviceKind::VirtioBlk => Some(format!("{}.img", self.name())),
            DeviceKind::VirtioNet => None,
        }
    }
}

/// The machine's devices in PCI order: the controllers (`max_ioqpairs`), the virtio-blk
/// devices and the virtio-net devices (queues each).
pub(crate) fn slot_devices(
    nvme: &[u32],
    virtio_blk: &[u32],
    virtio_net: &[u32],
) -> Result<Vec<SlotDevice>, Unexpressible> {
    check_ioqpairs(nvme)?;
    let all = nvme.len() + virtio_blk.len() + virtio_net.len();
    if all > NVME_MAX {
        return Err(refuse(format!(
            "{all} devices, a lab machine has at most {NVME_MAX} (PCI slots 0x10 to 0x{:x})",
            0x10 + NVME_MAX - 1
        )));
    }
    let kinds = [
        (DeviceKind::Nvme, nvme),
        (DeviceKind::VirtioBlk, virtio_blk),
        (DeviceKind::VirtioNet, virtio_net),
    ];
    let mut out = Vec::with_capacity(all);
    for (kind, queues) in kinds {
        for (index, &q) in queues.iter().enumerate() {
            if kind != DeviceKind::Nvme && (q == 0 || q > VIRTIO_QUEUES_MAX) {
                return Err(refuse(format!(
                    "{} {q} queues: give 1..={VIRTIO_QUEUES_MAX}",
                    kind.name()
                )));
            }
            let slot = 0x10 + out.len() as u32;
            out.push(SlotDevice {
                kind,
                index,
                queues: q,
                slot,
            });
        }
    }
    Ok(out)
}

/// Most queues of a virtio device (QEMU's virtio-blk `num-queues` and virtio-net queue pair
/// limits are far higher; the guest uses at most one per CPU).
pub(crate) const VIRTIO_QUEUES_MAX: u32 = 256;

/// Check an explicit `max_ioqpairs` list.
pub(crate) fn check_ioqpairs(list: &[u32]) -> Result<(), Unexpressible> {
    if list.is_empty() {
        return Err(Unexpressible(
            "no NVMe controller to boot with: give --nvme with each controller's max_ioqpairs \
             (--nvme 3,5), or a permalink whose devices are NVMe controllers"
                .to_string(),
        ));
    }
    if list.len() > NVME_MAX {
        return Err(refuse(format!("{} controllers, at most {NVME_MAX}", list.len())));
    }
    if let Some(q) = list.iter().find(|&&q| q == 0 || q > IOQPAIRS_MAX) {
        return Err(refuse(format!("max_ioqpairs {q}: give 1..={IOQPAIRS_MAX}")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_controller_list_is_refused() {
        let e = check_ioqpairs(&[]).unwrap_err().to_string();
        assert!(e.contains("no NVMe controller") && e.contains("--nvme"), "{e}");
        assert!(check_ioqpairs(&[3, 5]).is_ok());
    }

    #[test]
    fn non_nvme_devices_are_refused() {
        let mut d =
            crate::scenario::spec::expand_devices(&[crate::scenario::spec::parse_device_token("2x5:pre=1").unwrap()])
                .unwrap();
        assert_eq!(nvme_ioqpairs(&d, 8).unwrap(), vec![5, 5]);
        d[0].pre_vectors = 0;
        assert!(nvme_ioqpairs(&d, 8).is_err());
    }
}
