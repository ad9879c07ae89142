//! Whether a sequence of spreading calls seen on a real kernel is one the probe-order model
//! allows: "is this call order one you allow?"
//!
//! The model's orders ([`super::orders`], `docs/probe-order.md`): any permutation of the
//! movable devices (a MANA device keeps its place), probed one after another (each NVMe
//! controller's admin tag set just before its own I/O spread) or in parallel (every admin tag
//! set first, then the spreads). The calls an order makes are the model's own: the scenario in
//! that order runs under `rotation-v1` from counter 0, where every `group_cpus_evenly()` call
//! takes the next counter value, so the values each device's calls consumed put the calls into
//! the order the model makes them.
//!
//! Admin tag sets that follow one another may come in any order: each is a one-group map
//! (every CPU on queue 0, whatever its offset), and a run of k of them takes k counter values
//! (`rotation-v1`) or none (the other variants) whatever their order, so every spread after
//! them gets the same offset and every device the same placement. The model runs them in the
//! order of the permutation; real parallel probes do not (the lab's boots of two controllers
//! map them in either order whatever the order of their I/O spreads), and the check compares
//! such runs as sets.

use super::orders::movable;
use crate::kernel::group_cpus::Variant;
use crate::kernel::sort::SortGen;
use crate::kernel::vector_matrix::EffectiveModel;
use crate::scenario::{Device, ProbeOrder, Scenario};
use crate::topology::Topology;
use std::sync::Arc;

/// What a `group_cpus_evenly()` call spread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum CallKind {
    /// An NVMe admin tag set's map (`blk_mq_map_queues()` of one queue).
    AdminTagSet,
    /// An interrupt set of `irq_create_affinity_masks()`.
    Affinity,
    /// A device's blk-mq map from `blk_mq_map_queues()`.
    BlkMqMap,
}

impl CallKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            CallKind::AdminTagSet => "admin",
            CallKind::Affinity => "irq",
            CallKind::BlkMqMap => "blk-mq",
        }
    }
}

/// One call: the device whose probe made it, what it spread, and `numgrps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub(crate) device: String,
    pub(crate) kind: CallKind,
    pub(crate) groups: u32,
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}({})", self.device, self.kind.name(), self.groups)
    }
}

/// An order the model allows that makes the calls seen: the devices in probe order and how
/// they probed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    pub(crate) order: Vec<String>,
    pub(crate) probe: ProbeOrder,
}

/// The calls the model makes when `devices` probe in `order` (indexes into `devices`) under
/// `probe`.
pub(crate) fn model_calls(
    topology: &Arc<Topology>,
    devices: &[Device],
    order: &[usize],
    probe: ProbeOrder,
) -> Result<Vec<Call>, String> {
    let list: Vec<Device> = order.iter().map(|&i| devices[i].clone()).collect();
    let scenario = Scenario::new(
        topology.clone(),
        list,
        Variant::RotationV1,
        SortGen::HeapV6_11,
        EffectiveModel::X86Matrix,
        0,
    )
    .map_err(|e| e.to_string())?
    .with_probe(Some(probe));
    let outcome = crate::scenario::try_run(&scenario).map_err(|e| e.to_string())?;
    let mut calls: Vec<(u32, Call)> = Vec::new();
    for (dev, out) in scenario.devices().iter().zip(&outcome.devices) {
        let call = |kind, groups| Call {
            device: dev.name.clone(),
            kind,
            groups,
        };
        for &at in out.admin_spread_offsets.iter().flatten() {
            calls.push((at, call(CallKind::AdminTagSet, 1)));
        }
        let sets = dev.sets.clone().unwrap_or_else(|| vec![dev.affinity_vectors()]);
        for (&at, &groups) in out.spread_offsets.iter().zip(&sets) {
            calls.push((at, call(CallKind::Affinity, groups)));
        }
        let queues = dev.blk_mq_queues.unwrap_or(sets[0]);
        for &at in out.blk_mq_spread_offsets.iter().flatten() {
            calls.push((at, call(CallKind::BlkMqMap, queues)));
        }
    }
    calls.sort_by_key(|(at, _)| *at);
    Ok(calls.into_iter().map(|(_, c)| c).collect())
}

/// Whether the model allows the calls `observed`: the order they imply (each device where its
/// first call other than an admin tag set's comes; devices that made none after the others,
/// in list order) must be one the model allows, and that order, probed one after another or
/// in parallel, must make exactly these calls. `Err` says why not.
pub(crate) fn allows(topology: &Arc<Topology>, devices: &[Device], observed: &[Call]) -> Result<Allowed, String> {
    let index = |name: &str| devices.iter().position(|d| d.name == name);
    let mut order: Vec<usize> = Vec::new();
    for c in observed {
        let Some(i) = index(&c.device) else {
            return Err(format!("a call of {}, which is not a device of the machine", c.device));
        };
        if c.kind != CallKind::AdminTagSet && !order.contains(&i) {
            order.push(i);
        }
    }
    order.extend((0..devices.len()).filter(|i| !order.contains(i)).collect::<Vec<_>>());
    for (place, &i) in order.iter().enumerate() {
        if !movable(&devices[i]) && place != i {
            return Err(format!(
                "{} probed in place {} of the list: the model keeps it at {}",
                devices[i].name,
                place + 1,
                i + 1
            ));
        }
    }
    let mut why = Vec::new();
    let seen = admin_runs_sorted(observed);
    for probe in ProbeOrder::ALL {
        let model = admin_runs_sorted(&model_calls(topology, devices, &order, probe)?);
        if model == seen {
            return Ok(Allowed {
                order: order.iter().map(|&i| devices[i].name.clone()).collect(),
                probe,
            });
        }
        why.push(format!("{}: {}", probe.name(), first_difference(&model, &seen)));
    }
    Err(format!(
        "no order the model allows makes these calls ({})",
        why.join("; ")
    ))
}

/// The calls with each run of consecutive admin tag sets in device-name order: sequences equal
/// so are equal up to the order inside such runs, which changes no placement.
fn admin_runs_sorted(calls: &[Call]) -> Vec<Call> {
    let mut out = calls.to_vec();
    for run in out.chunk_by_mut(|a, b| a.kind == CallKind::AdminTagSet && b.kind == CallKind::AdminTagSet) {
        run.sort_by(|a, b| a.device.cmp(&b.device));
    }
    out
}

/// Where two call sequences part.
fn first_difference(model: &[Call], seen: &[Call]) -> String {
    let at = model.iter().zip(seen).take_while(|(a, b)| a == b).count();
    match (model.get(at), seen.get(at)) {
        (Some(m), Some(s)) => format!("call {} is {s}, the model makes {m}", at + 1),
        (Some(m), None) => format!("the model makes {m} after the {at} calls seen"),
        (None, Some(s)) => format!("call {} ({s}) is one the model never makes", at + 1),
        (None, None) => "the same calls".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Driver;

    fn topology() -> Arc<Topology> {
        let spec: crate::topology::TopologySpec =
            toml::from_str("name = \"t4\"\nnodes = [\"0-3\"]\nsmt = [\"0-1\", \"2-3\"]").unwrap();
        Arc::new(Topology::new(&spec).unwrap())
    }

    fn device(name: &str, queues: u32, driver: Driver) -> Device {
        Device {
            name: name.to_string(),
            vectors: 1 + queues,
            pre_vectors: 1,
            post_vectors: 0,
            sets: None,
            managed_affinity: true,
            node: None,
            hv_pci: false,
            blk_mq: None,
            blk_mq_queues: None,
            driver,
        }
    }

    fn call(device: &str, kind: CallKind, groups: u32) -> Call {
        Call {
            device: device.to_string(),
            kind,
            groups,
        }
    }

    /// Calls as the messages write them: `n1:admin(1) n0:irq(3)`.
    fn calls(text: &str) -> Vec<Call> {
        text.split_whitespace()
            .map(|c| {
                let (device, rest) = c.split_once(':').expect("device:kind(groups)");
                let (kind, groups) = rest.trim_end_matches(')').split_once('(').expect("kind(groups)");
                let kind = match kind {
                    "admin" => CallKind::AdminTagSet,
                    "irq" => CallKind::Affinity,
                    _ => panic!("unknown call kind in {c}"),
                };
                call(device, kind, groups.parse().expect("a group count"))
            })
            .collect()
    }

    fn devices() -> Vec<Device> {
        vec![
            device("n0", 3, Driver::Nvme),
            device("n1", 2, Driver::Nvme),
            device("vb0", 2, Driver::Generic),
        ]
    }

    #[test]
    fn the_model_makes_admin_sets_first_when_probes_run_in_parallel() {
        let t = topology();
        let parallel = model_calls(&t, &devices(), &[1, 0, 2], ProbeOrder::Parallel).unwrap();
        assert_eq!(
            parallel,
            calls("n1:admin(1) n0:admin(1) n1:irq(2) n0:irq(3) vb0:irq(2)")
        );
        let sequential = model_calls(&t, &devices(), &[1, 0, 2], ProbeOrder::Sequential).unwrap();
        assert_eq!(sequential[1], call("n1", CallKind::Affinity, 2));
    }

    #[test]
    fn observed_orders_are_checked_against_the_model() {
        let t = topology();
        let seen = calls("n1:admin(1) n0:admin(1) n1:irq(2) n0:irq(3) vb0:irq(2)");
        // Admin tag sets in one order, the spreads in another (seen in the lab): the same
        // placements as the model's parallel order.
        let crossed = calls("n0:admin(1) n1:admin(1) n1:irq(2) n0:irq(3) vb0:irq(2)");
        for observed in [&seen, &crossed] {
            let ok = allows(&t, &devices(), observed).unwrap();
            assert_eq!(
                (ok.order.join(","), ok.probe),
                ("n1,n0,vb0".to_string(), ProbeOrder::Parallel)
            );
        }
        let one_by_one = calls("vb0:irq(2) n0:admin(1) n0:irq(3) n1:admin(1) n1:irq(2)");
        assert_eq!(
            allows(&t, &devices(), &one_by_one).unwrap().probe,
            ProbeOrder::Sequential
        );
        // An admin tag set after its controller's I/O spread: the model maps it first.
        let late_admin = calls("n0:admin(1) n0:irq(3) n1:irq(2) n1:admin(1) vb0:irq(2)");
        let why = allows(&t, &devices(), &late_admin).unwrap_err();
        assert!(
            why.contains("call 3 is n1:irq(2), the model makes n1:admin(1)"),
            "{why}"
        );
        // An admin tag set between two spreads does not join the run before them.
        let split = calls("n0:admin(1) vb0:irq(2) n1:admin(1) n1:irq(2) n0:irq(3)");
        assert!(allows(&t, &devices(), &split).is_err());
        // A call of a size the device never asks for.
        let mut wrong = seen.clone();
        wrong[3].groups = 4;
        assert!(allows(&t, &devices(), &wrong).is_err());
    }

    #[test]
    fn a_mana_device_keeps_its_place() {
        let t = topology();
        let mut d = devices();
        d[0].driver = Driver::Mana {
            patched: false,
            mode: crate::kernel::mana::MsixMode::Dynamic,
        };
        d[0].managed_affinity = false;
        let seen = calls("vb0:irq(2) n1:admin(1) n1:irq(2)");
        let why = allows(&t, &d, &seen).unwrap_err();
        assert!(why.contains("keeps it at 1"), "{why}");
    }
}
