//! Numbers derived from an outcome: per CPU, per node, against the ideal. Numbers only: the
//! sentences reviewers write by hand from them ("28 CPUs (34-47,82-95) serve all 6 devices")
//! are [`crate::render::summary`].
//!
//! Counting follows spec §9.5: a vector counts on its effective CPU. When the scenario has
//! managed vectors, the headline figures count managed (I/O queue) vectors only, as the seed
//! threads do; [`Basis`] says which was used. Names carry their unit (`irqs`, `devices`).

use crate::policy::ideal::{ideal_bound, IdealBound};
use crate::scenario::{Outcome, Scenario, VectorOutcome};
use crate::topology::{CpuSet, Topology};
use std::collections::BTreeMap;

/// Per possible CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuLoad {
    pub(crate) cpu: u32,
    pub(crate) node: u32,
    pub(crate) online: bool,
    /// Vectors whose effective CPU is this CPU.
    pub(crate) irqs: u32,
    pub managed_irqs: u32,
    /// Distinct devices with at least one vector here.
    pub(crate) devices: u32,
    pub managed_devices: u32,
    /// Vectors here whose requested mask is this single CPU ("hot" IRQs).
    pub(crate) hot_irqs: u32,
}

/// Which vectors the headline figures count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Basis {
    /// Managed vectors only (the I/O queues), when the scenario has any.
    Managed,
    All,
}

impl Basis {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Basis::Managed => "managed (queue) vectors",
            Basis::All => "all vectors",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeLoad {
    pub(crate) node: u32,
    pub(crate) cpus_online: u32,
    /// Counted IRQs (by [`Basis`]) on this node's CPUs.
    pub(crate) irqs: u32,
    pub(crate) hot_irqs: u32,
    /// The node's fair share of the counted IRQs, by online CPUs, in thousandths.
    pub(crate) fair_share_milli: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metrics {
    pub(crate) basis: Basis,
    pub(crate) per_cpu: Vec<CpuLoad>,
    pub(crate) per_node: Vec<NodeLoad>,
    /// Counted IRQs in all (vectors that fire somewhere).
    pub irqs_total: u32,
    pub irqs_per_cpu_max: u32,
    pub(crate) irqs_per_cpu_min: u32,
    pub(crate) devices_total: u32,
    pub devices_per_cpu_max: u32,
    pub(crate) devices_per_cpu_min: u32,
    pub(crate) hot_irqs_total: u32,
    pub(crate) hot_irqs_per_cpu_max: u32,
    /// Online CPUs that take no counted IRQ.
    pub(crate) cpus_idle: CpuSet,
    /// Managed vectors shut down because no CPU of their mask is online (vectors the kernel
    /// refused are [`Metrics::vectors_failed`], not these).
    pub(crate) vectors_shut_down: u32,
    /// Vectors that got none: `-ENOSPC` from the vector matrix, or a whole allocation
    /// `alloc_descs()` refused (`-EINVAL`).
    pub(crate) vectors_failed: u32,
    /// Devices that asked for vectors the headline figures count, placed or not
    /// ([`Metrics::devices_total`] counts those that got at least one).
    pub(crate) devices_asked: u32,
    pub ideal: IdealBound,
}

impl CpuLoad {
    /// IRQs counted under the basis.
    pub(crate) fn counted_irqs(&self, basis: Basis) -> u32 {
        match basis {
            Basis::Managed => self.managed_irqs,
            Basis::All => self.irqs,
        }
    }
    pub(crate) fn counted_devices(&self, basis: Basis) -> u32 {
        match basis {
            Basis::Managed => self.managed_devices,
            Basis::All => self.devices,
        }
    }
}

/// Spec §9.5: per possible CPU, ascending.
pub fn per_cpu(scenario: &Scenario, outcome: &Outcome) -> Vec<CpuLoad> {
    let topo = scenario.topology();
    let mut loads: Vec<CpuLoad> = topo
        .possible()
        .iter()
        .map(|cpu| CpuLoad {
            cpu,
            node: topo.cpu_to_node(cpu),
            online: topo.online().contains(cpu),
            irqs: 0,
            managed_irqs: 0,
            devices: 0,
            managed_devices: 0,
            hot_irqs: 0,
        })
        .collect();
    // Index of each possible CPU's load, by CPU id (ascending ids, so a table, not a map).
    let mut index = vec![u32::MAX; loads.last().map_or(0, |l| l.cpu as usize + 1)];
    for (i, l) in loads.iter().enumerate() {
        index[l.cpu as usize] = i as u32;
    }
    let mut seen = CpuSet::new(topo.nr_cpu_ids());
    let mut seen_managed = CpuSet::new(topo.nr_cpu_ids());
    for dev in &outcome.devices {
        seen.clear();
        seen_managed.clear();
        for v in &dev.vectors {
            let Some(cpu) = v.effective_cpu else { continue };
            let Some(&i) = index.get(cpu as usize).filter(|&&i| i != u32::MAX) else {
                continue;
            };
            let load = &mut loads[i as usize];
            load.irqs += 1;
            if v.managed {
                load.managed_irqs += 1;
                if !seen_managed.contains(cpu) {
                    seen_managed.insert(cpu);
                    load.managed_devices += 1;
                }
            }
            if !seen.contains(cpu) {
                seen.insert(cpu);
                load.devices += 1;
            }
            if v.mask.weight() == 1 {
                load.hot_irqs += 1;
            }
        }
    }
    loads
}

pub fn compute(scenario: &Scenario, outcome: &Outcome) -> Metrics {
    let topo = scenario.topology();
    let per_cpu = per_cpu(scenario, outcome);
    let any_managed = outcome.devices.iter().any(|d| d.vectors.iter().any(|v| v.managed));
    let basis = if any_managed { Basis::Managed } else { Basis::All };
    let online: Vec<&CpuLoad> = per_cpu.iter().filter(|c| c.online).collect();
    let irqs = |c: &CpuLoad| c.counted_irqs(basis);
    let devs = |c: &CpuLoad| c.counted_devices(basis);
    let irqs_total: u32 = per_cpu.iter().map(irqs).sum();
    let hot_irqs_total: u32 = per_cpu.iter().map(|c| c.hot_irqs).sum();
    let n_online = topo.online().weight();
    let per_node = per_node(topo, &online, basis, irqs_total);
    let (vectors_shut_down, vectors_failed) = vectors_lost(outcome);
    let counted = |v: &VectorOutcome| v.effective_cpu.is_some() && (basis == Basis::All || v.managed);
    let counted_per_device: Vec<u64> = outcome
        .devices
        .iter()
        .map(|d| d.vectors.iter().filter(|v| counted(v)).count() as u64)
        .collect();
    let devices_total = counted_per_device.iter().filter(|&&n| n > 0).count() as u32;
    Metrics {
        basis,
        irqs_total,
        irqs_per_cpu_max: online.iter().map(|c| irqs(c)).max().unwrap_or(0),
        irqs_per_cpu_min: online.iter().map(|c| irqs(c)).min().unwrap_or(0),
        devices_total,
        devices_per_cpu_max: online.iter().map(|c| devs(c)).max().unwrap_or(0),
        devices_per_cpu_min: online.iter().map(|c| devs(c)).min().unwrap_or(0),
        hot_irqs_total,
        hot_irqs_per_cpu_max: online.iter().map(|c| c.hot_irqs).max().unwrap_or(0),
        cpus_idle: online.iter().filter(|c| irqs(c) == 0).map(|c| c.cpu).collect(),
        vectors_shut_down,
        vectors_failed,
        devices_asked: outcome
            .devices
            .iter()
            .filter(|d| d.vectors.iter().any(|v| basis == Basis::All || v.managed))
            .count() as u32,
        ideal: ideal_bound(&counted_per_device, n_online),
        per_cpu,
        per_node,
    }
}

/// Each node with CPUs: its online CPUs, their counted and hot IRQs (one pass over the CPUs),
/// and its fair share of `irqs_total` by online CPUs.
fn per_node(topo: &Topology, online: &[&CpuLoad], basis: Basis, irqs_total: u32) -> Vec<NodeLoad> {
    let n_online = topo.online().weight();
    let mut node_sums = vec![(0u32, 0u32); topo.nr_node_ids() as usize];
    for c in online {
        if let Some(sum) = node_sums.get_mut(c.node as usize) {
            sum.0 += c.counted_irqs(basis);
            sum.1 += c.hot_irqs;
        }
    }
    (0..topo.nr_node_ids())
        .filter(|&n| !topo.node_cpus(n).is_empty())
        .map(|node| {
            let cpus_online = topo.node_cpus(node).and_weight(topo.online());
            let (irqs, hot_irqs) = node_sums[node as usize];
            NodeLoad {
                node,
                cpus_online,
                irqs,
                hot_irqs,
                fair_share_milli: u64::from(irqs_total) * 1000 * u64::from(cpus_online) / u64::from(n_online.max(1)),
            }
        })
        .collect()
}

/// Managed vectors shut down (no online CPU in their mask), and vectors the vector matrix
/// refused, a device whose whole allocation failed counting all its vectors, once.
fn vectors_lost(outcome: &Outcome) -> (u32, u32) {
    let refused: std::collections::BTreeSet<(&str, u32)> = outcome
        .vector_space
        .matrix_failures()
        .map(|f| (f.device.as_str(), f.vector))
        .collect();
    let shut_down = outcome
        .devices
        .iter()
        .filter(|d| d.alloc_failed.is_none())
        .flat_map(|d| d.vectors.iter().map(move |v| (d.name.as_str(), v)))
        .filter(|(d, v)| v.managed && v.effective_cpu.is_none() && !refused.contains(&(*d, v.index)))
        .count() as u32;
    let failed = refused.len() as u32
        + outcome
            .devices
            .iter()
            .filter(|d| d.alloc_failed.is_some())
            .map(|d| d.vectors.len() as u32)
            .sum::<u32>();
    (shut_down, failed)
}

impl Metrics {
    /// Online CPUs that take at least one counted IRQ: the online CPUs but
    /// [`Metrics::cpus_idle`].
    pub(crate) fn cpus_with_irqs(&self) -> u32 {
        let online = self.per_cpu.iter().filter(|c| c.online).count() as u32;
        online - self.cpus_idle.weight()
    }

    /// Online CPUs grouped by a value, ascending by value.
    pub(crate) fn group_online(&self, value: impl Fn(&CpuLoad) -> u32) -> Vec<(u32, CpuSet)> {
        let mut groups: BTreeMap<u32, CpuSet> = BTreeMap::new();
        for c in self.per_cpu.iter().filter(|c| c.online) {
            groups.entry(value(c)).or_default().insert(c.cpu);
        }
        groups.into_iter().collect()
    }
}
