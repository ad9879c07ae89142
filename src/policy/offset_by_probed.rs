//! Proposal `offset-by-probed`: group CPUs like `group_cpus_evenly` does (node-local groups of
//! near-equal size that cover every possible CPU), but place each new device's groups away from
//! the CPUs the devices probed before it already load.
//!
//! The seed-000 thread shows why the kernel cannot do this: `group_cpus_evenly` is called once
//! per device and knows only the topology and the group count, so identical devices stack their
//! single-CPU groups on the same CPUs; the rotation patch varies the start point blindly. This
//! proposal is told the per-CPU state left by earlier probes ([`ProbedLoad`]: counted IRQs and
//! single-CPU IRQs per CPU, managed vectors only — what the x86 vector matrix already holds) and uses it twice:
//!
//! 1. **Between nodes.** Every node with CPUs gets one group (when there are at least as many
//!    groups as nodes); each further group goes to the node whose per-CPU load would be lowest
//!    after taking it (ties: more online CPUs, then the lower node id), never more groups than
//!    the node has CPUs.
//! 2. **Inside a node** of `c` CPUs and `g` groups: the `g` least-loaded online CPUs (ties: fewer
//!    single-CPU IRQs, then the lower id) become the groups' anchors, where their vectors are
//!    meant to fire. The `c mod g` larger groups go to the anchors carrying the most single-CPU
//!    IRQs, so new single-CPU groups land on the CPUs with the fewest. Every other CPU joins the
//!    nearest anchor below it with room (else the nearest above), so a group stays within SMT
//!    siblings or a cluster where the numbering allows. "Nearest" looks first on the side that
//!    keeps the anchor where the vector fires ([`Fires`]): the x86 matrix breaks ties towards the
//!    highest CPU, a first-CPU model and a GICv3 ITS (ties to the lowest id) fire on the lowest.
//!
//! With fewer groups than nodes, whole nodes are dealt to groups in node order, as the kernel
//! does. The result covers every possible CPU exactly once, like the kernel's postcondition.
//! Pure and deterministic; nothing here calls `kernel`.

use crate::topology::{CpuSet, Topology};
use std::collections::BTreeSet;

/// The per-CPU state a probe sees, indexed by CPU id (`nr_cpu_ids` long).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProbedLoad {
    /// Managed IRQs whose effective CPU is this CPU (the x86 vector matrix's managed count).
    pub(crate) irqs: Vec<u32>,
    /// Of those, IRQs whose mask is this CPU alone.
    pub(crate) hot_irqs: Vec<u32>,
}

impl ProbedLoad {
    pub(crate) fn new(nr_cpu_ids: u32) -> ProbedLoad {
        ProbedLoad {
            irqs: vec![0; nr_cpu_ids as usize],
            hot_irqs: vec![0; nr_cpu_ids as usize],
        }
    }

    /// Count one vector firing on `cpu` with a mask of `mask_weight` CPUs.
    pub(crate) fn add(&mut self, cpu: u32, mask_weight: u32) {
        self.irqs[cpu as usize] += 1;
        if mask_weight == 1 {
            self.hot_irqs[cpu as usize] += 1;
        }
    }
}

/// Which CPU of a mask a vector fires on, as the proposal expects it (the effective-CPU model
/// in `kernel::vector_matrix`, named here without depending on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fires {
    /// The CPU with the fewest managed IRQs, ties to the highest id (the x86 vector matrix).
    LeastLoaded,
    /// The lowest CPU of the mask (GIC SPIs: GICv2m, Hyper-V vPCI on arm64).
    LowestCpu,
    /// The CPU with the fewest managed IRQs, ties to the lowest id (a GICv3 ITS; its
    /// allocation-time slots are not foreseen).
    LeastLoadedLowest,
}

impl Fires {
    /// The CPU of `mask` a vector is expected to fire on, among online CPUs.
    fn pick(self, mask: &CpuSet, online: &CpuSet, load: &ProbedLoad) -> Option<u32> {
        let mut cpus = mask.iter().filter(|&c| online.contains(c));
        match self {
            Fires::LowestCpu => cpus.next(),
            Fires::LeastLoaded => cpus.min_by_key(|&c| (load.irqs[c as usize], std::cmp::Reverse(c))),
            Fires::LeastLoadedLowest => cpus.min_by_key(|&c| (load.irqs[c as usize], c)),
        }
    }
}

/// One set of `numgrps` groups. Returns `min(numgrps, possible CPUs)` masks (the caller gives
/// any further vectors the default mask, as `irq_create_affinity_masks` does) and adds to
/// `load` the IRQ each group's anchor is expected to take, so a following set of the same
/// device steers around it too.
pub(crate) fn offset_by_probed(topo: &Topology, numgrps: u32, fires: Fires, load: &mut ProbedLoad) -> Vec<CpuSet> {
    let width = topo.nr_cpu_ids();
    let nodes: Vec<(u32, Vec<u32>)> = topo
        .nodes_with_cpus()
        .map(|n| (n, topo.node_cpus(n).and(topo.possible()).iter().collect::<Vec<u32>>()))
        .filter(|(_, cpus)| !cpus.is_empty())
        .collect();
    if numgrps == 0 || nodes.is_empty() {
        return Vec::new();
    }
    let online = topo.online();
    if numgrps as usize <= nodes.len() {
        let mut masks = vec![CpuSet::new(width); numgrps as usize];
        for (i, (_, cpus)) in nodes.iter().enumerate() {
            for &cpu in cpus {
                masks[i % numgrps as usize].insert(cpu);
            }
        }
        for mask in &masks {
            if let Some(cpu) = fires.pick(mask, online, load) {
                load.add(cpu, mask.weight());
            }
        }
        return masks;
    }
    let groups = groups_per_node(&nodes, numgrps, online, load);
    let mut masks = Vec::with_capacity(groups.iter().sum::<u32>() as usize);
    for ((_, cpus), &g) in nodes.iter().zip(&groups) {
        masks.extend(node_groups(cpus, g, width, fires, online, load));
    }
    masks
}

/// Step 1, groups per node: one each, then each further group where the per-CPU load stays
/// lowest, up to `min(numgrps, possible CPUs)` in all.
fn groups_per_node(nodes: &[(u32, Vec<u32>)], numgrps: u32, online: &CpuSet, load: &ProbedLoad) -> Vec<u32> {
    let cpus_online: Vec<u64> = nodes
        .iter()
        .map(|(_, cpus)| cpus.iter().filter(|&&c| online.contains(c)).count() as u64)
        .collect();
    let mut node_irqs: Vec<u64> = nodes
        .iter()
        .map(|(_, cpus)| {
            cpus.iter()
                .filter(|&&c| online.contains(c))
                .map(|&c| u64::from(load.irqs[c as usize]))
                .sum()
        })
        .collect();
    let mut groups: Vec<u32> = vec![1; nodes.len()];
    for irqs in &mut node_irqs {
        *irqs += 1;
    }
    let total_cpus: u64 = nodes.iter().map(|(_, c)| c.len() as u64).sum();
    let target = u64::from(numgrps).min(total_cpus);
    for _ in nodes.len() as u64..target {
        // Pick the node minimising (irqs + 1) / online CPUs; nodes without online CPUs last.
        let mut best: Option<usize> = None;
        for n in 0..nodes.len() {
            if groups[n] as usize >= nodes[n].1.len() {
                continue;
            }
            best = match best {
                None => Some(n),
                Some(b) => {
                    let better = match (cpus_online[n], cpus_online[b]) {
                        (0, _) => false,
                        (_, 0) => true,
                        (cn, cb) => {
                            let ln = (node_irqs[n] + 1) * cb;
                            let lb = (node_irqs[b] + 1) * cn;
                            ln < lb || (ln == lb && cn > cb)
                        }
                    };
                    Some(if better { n } else { b })
                }
            };
        }
        let n = best.expect("fewer groups than CPUs leaves a node with room");
        groups[n] += 1;
        node_irqs[n] += 1;
    }
    groups
}

/// Step 2, inside one node (`cpus`, its possible CPUs) making `g` groups: anchors, sizes,
/// members; adds to `load` the IRQ each group is expected to fire on.
fn node_groups(cpus: &[u32], g: u32, width: u32, fires: Fires, online: &CpuSet, load: &mut ProbedLoad) -> Vec<CpuSet> {
    let c = cpus.len() as u32;
    let mut by_load: Vec<u32> = cpus.to_vec();
    by_load.sort_by_key(|&cpu| {
        (
            !online.contains(cpu),
            load.irqs[cpu as usize],
            load.hot_irqs[cpu as usize],
            cpu,
        )
    });
    let mut anchors: Vec<u32> = by_load[..g as usize].to_vec();
    // The c mod g larger groups go to the anchors with the most single-CPU IRQs already.
    anchors.sort_by_key(|&cpu| {
        (
            std::cmp::Reverse(load.hot_irqs[cpu as usize]),
            std::cmp::Reverse(load.irqs[cpu as usize]),
            cpu,
        )
    });
    let (size, larger) = (c / g, c % g);
    let mut room: Vec<(u32, u32)> = anchors
        .iter()
        .enumerate()
        .map(|(i, &a)| (a, size + u32::from((i as u32) < larger) - 1))
        .collect();
    room.sort_unstable();
    let index_of = |cpu: u32, room: &[(u32, u32)]| room.binary_search_by_key(&cpu, |&(a, _)| a).ok();
    let mut open: BTreeSet<u32> = room.iter().filter(|&&(_, r)| r > 0).map(|&(a, _)| a).collect();
    let mut node_masks: Vec<CpuSet> = room
        .iter()
        .map(|&(a, _)| {
            let mut m = CpuSet::new(width);
            m.insert(a);
            m
        })
        .collect();
    for &cpu in cpus {
        if index_of(cpu, &room).is_some() {
            continue;
        }
        // Join an anchor on the side that keeps the anchor the CPU the vector fires on:
        // above it when ties go to the highest id, below it when the lowest CPU fires.
        let below = || open.range(..cpu).next_back();
        let above = || open.range(cpu..).next();
        let anchor = match fires {
            Fires::LeastLoaded => above().or_else(below),
            Fires::LowestCpu | Fires::LeastLoadedLowest => below().or_else(above),
        }
        .copied()
        .expect("group sizes add up to the node's CPUs");
        let i = index_of(anchor, &room).expect("open anchors are anchors");
        node_masks[i].insert(cpu);
        room[i].1 -= 1;
        if room[i].1 == 0 {
            open.remove(&anchor);
        }
    }
    // Count where each vector is expected to fire (the anchor, unless an equally loaded
    // member wins the effective-CPU tie-break).
    let fire: Vec<(u32, u32)> = node_masks
        .iter()
        .filter_map(|m| fires.pick(m, online, load).map(|c| (c, m.weight())))
        .collect();
    for (cpu, weight) in fire {
        load.add(cpu, weight);
    }
    node_masks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue;

    fn check_cover(topo: &Topology, masks: &[CpuSet]) {
        let mut seen = CpuSet::new(topo.nr_cpu_ids());
        for m in masks {
            assert!(!m.is_empty());
            assert!(!seen.intersects(m), "a CPU in two groups");
            seen.or_assign(m);
        }
        assert_eq!(seen, topo.possible().clone());
    }

    /// Seed 000, L48s v2: six devices of 32 groups reach the ideal 4 IRQs per CPU, 32 per node.
    #[test]
    fn l48s_six_devices_reach_four() {
        let topo = catalogue::get("azure-l48s-v2").unwrap();
        let mut load = ProbedLoad::new(topo.nr_cpu_ids());
        for _ in 0..6 {
            let masks = offset_by_probed(&topo, 32, Fires::LeastLoaded, &mut load);
            assert_eq!(masks.len(), 32);
            check_cover(&topo, &masks);
            for m in &masks {
                let node = topo.cpu_to_node(m.first().unwrap());
                assert!(m.iter().all(|c| topo.cpu_to_node(c) == node), "mask crosses nodes");
            }
        }
        assert!(load.irqs.iter().all(|&n| n == 4), "{:?}", load.irqs);
    }

    #[test]
    fn few_groups_and_many_groups() {
        let topo = catalogue::get("azure-l48s-v2").unwrap();
        let mut load = ProbedLoad::new(topo.nr_cpu_ids());
        let masks = offset_by_probed(&topo, 4, Fires::LowestCpu, &mut load);
        assert_eq!(masks.len(), 4);
        check_cover(&topo, &masks);
        let masks = offset_by_probed(&topo, 100, Fires::LeastLoaded, &mut load);
        assert_eq!(masks.len(), 48);
        check_cover(&topo, &masks);
        assert!(offset_by_probed(&topo, 0, Fires::LowestCpu, &mut load).is_empty());
    }
}
