//! Live vs model: group a snapshot's IRQs into devices, build the scenario the kernel would
//! have computed for that topology and device list, and line predicted placement up with the
//! actual one.
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
//!   A MANA device is modelled by [`crate::kernel::mana`] (`driver=mana`: the driver spreads its
//!   own non-managed IRQs), not as a generic device; that model places IRQs by the x86 vector
//!   matrix, so under another effective model, or on a machine it does not take, the device is
//!   listed as not modelled.
//!
//! Devices are probed in the order of their lowest IRQ number. Other IRQs are listed as not
//! modelled. The model knows the topology and the device list only: the order other drivers
//! took vectors in, and anything irqbalance moved, show up as mismatches.

use super::protocol::Snapshot;
use crate::scenario::spec::{self, DeviceSpec, ScenarioSpec, TopologyRef};
use crate::scenario::{self, ScenarioError, DEVICE_NAME_BYTES_MAX};
use crate::topology::{parse_cpulist, CPUS_MAX};
use std::collections::BTreeMap;

/// The driver that set a live device's IRQs up, as far as the names tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveDriver {
    /// `pci_alloc_irq_vectors_affinity()` (NVMe, virtio, mlx5's pool seen as one device).
    Generic,
    /// The MANA NIC driver: modelled by `kernel::mana`.
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

/// One vector, predicted beside actual.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorComparison {
    pub device: String,
    pub index: u32,
    /// Index into `snapshot.irqs`.
    pub irq: usize,
    pub predicted_mask: String,
    pub actual_mask: String,
    pub predicted_cpu: Option<u32>,
    pub actual_effective: String,
    pub mask_matches: bool,
    /// The predicted CPU is the one the kernel chose (the effective list is that one CPU).
    pub cpu_matches: bool,
}

#[derive(Debug, Clone)]
pub struct Comparison {
    /// The scenario for this snapshot (topology inline), ready for a permalink.
    pub spec: ScenarioSpec,
    pub vectors: Vec<VectorComparison>,
    /// Devices seen but not modelled (no queue vectors), and IRQs of no known device.
    pub not_modelled: Vec<String>,
}

impl Comparison {
    pub fn mismatches(&self) -> usize {
        self.vectors
            .iter()
            .filter(|v| !v.cpu_matches || !v.mask_matches)
            .count()
    }
}

/// What to compare a snapshot against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelOptions {
    pub variant: String,
    pub effective: String,
    /// MANA devices run the driver after "net: mana: Optimize irq affinity for low vcpu
    /// configs" (default: before it).
    pub mana_patched: bool,
}

/// Build the scenario the kernel would have computed for this snapshot, run it, and compare
/// (MANA devices as the unpatched driver).
pub fn compare(snap: &Snapshot, variant: &str, effective: &str) -> Result<Comparison, ScenarioError> {
    compare_with(
        snap,
        &ModelOptions {
            variant: variant.into(),
            effective: effective.into(),
            mana_patched: false,
        },
    )
}

/// Why the MANA model cannot place this device here, if it cannot.
fn mana_refusal(snap: &Snapshot, effective: &str) -> Option<String> {
    if effective != crate::kernel::vector_matrix::EffectiveModel::X86Matrix.name() {
        return Some("the MANA model places IRQs by the x86 vector matrix; choose effective x86-matrix".into());
    }
    if snap.topology.nodes.len() > crate::kernel::mana::NODES_MAX {
        return Some(format!(
            "the MANA model takes at most {} nodes",
            crate::kernel::mana::NODES_MAX
        ));
    }
    None
}

/// [`compare`] with every option.
pub fn compare_with(snap: &Snapshot, opts: &ModelOptions) -> Result<Comparison, ScenarioError> {
    let (variant, effective) = (opts.variant.as_str(), opts.effective.as_str());
    let (devices, other) = group_devices(snap);
    let mut not_modelled: Vec<String> = other
        .iter()
        .map(|&i| format!("IRQ {} {}", snap.irqs[i].label, snap.irqs[i].name))
        .collect();
    let mana_refused = mana_refusal(snap, effective);
    let mut modelled: Vec<&LiveDevice> = Vec::new();
    for d in &devices {
        if d.vectors.len() as u32 <= d.pre {
            not_modelled.push(format!("{} (no queue vectors)", d.name));
        } else if let (LiveDriver::Mana, Some(why)) = (d.driver, &mana_refused) {
            not_modelled.push(format!("{} ({why})", d.name));
        } else {
            modelled.push(d);
        }
    }
    let spec = ScenarioSpec {
        topology: TopologyRef::Inline(Box::new(snap.topology.to_spec(&snap.host))),
        devices: modelled
            .iter()
            .map(|d| match d.driver {
                // The HWC plus one vector per queue: the MSI-X table the driver used.
                LiveDriver::Mana => DeviceSpec {
                    name: Some(d.name.clone()),
                    patched: opts.mana_patched,
                    ..DeviceSpec::mana(d.vectors.len() as u32 - 1)
                },
                LiveDriver::Generic => DeviceSpec {
                    name: Some(d.name.clone()),
                    pre: d.pre,
                    managed: d.managed,
                    ..DeviceSpec::new(1, d.vectors.len() as u32 - d.pre)
                },
            })
            .collect(),
        variant: variant.to_string(),
        sort: spec::DEFAULT_SORT.name().into(),
        effective: effective.to_string(),
        spread_counter: 0,
        proposal: None,
        irqaffinity: None,
        isolcpus: None,
        nohz_full: None,
        vectors_held: None,
    };
    let scenario = spec.resolve(|_| None)?;
    let outcome = scenario::run(&scenario);
    // Inline topologies travel in explicit form so the permalink reproduces this machine.
    let spec = ScenarioSpec {
        topology: TopologyRef::Inline(Box::new(scenario.topology().to_spec())),
        ..spec
    };
    let mut vectors = Vec::new();
    for (d, o) in modelled.iter().zip(&outcome.devices) {
        if d.vectors.len() > o.vectors.len() {
            not_modelled.push(format!(
                "{}: {} of its {} IRQs (the model uses fewer vectors)",
                d.name,
                d.vectors.len() - o.vectors.len(),
                d.vectors.len()
            ));
        }
        for (v, &irq_idx) in o.vectors.iter().zip(&d.vectors) {
            let irq = &snap.irqs[irq_idx];
            let parse = |s: &Option<String>| s.as_deref().and_then(|t| parse_cpulist(t, CPUS_MAX).ok());
            let actual_mask = parse(&irq.affinity);
            let actual_eff = parse(&irq.effective);
            let predicted_mask = v.mask.to_cpulist();
            vectors.push(VectorComparison {
                device: d.name.clone(),
                index: v.index,
                irq: irq_idx,
                mask_matches: actual_mask.as_ref().is_some_and(|m| m.to_cpulist() == predicted_mask),
                predicted_mask,
                actual_mask: irq.affinity.clone().unwrap_or_else(|| "?".into()),
                cpu_matches: match (&actual_eff, v.effective_cpu) {
                    (Some(e), Some(c)) => e.weight() == 1 && e.contains(c),
                    (Some(e), None) => e.is_empty(),
                    (None, _) => false,
                },
                predicted_cpu: v.effective_cpu,
                actual_effective: irq.effective.clone().unwrap_or_else(|| "?".into()),
            });
        }
    }
    Ok(Comparison {
        spec,
        vectors,
        not_modelled,
    })
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
