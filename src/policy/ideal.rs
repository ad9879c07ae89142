//! The ideal bound: the best per-CPU maximum any placement could reach for a scenario.
//!
//! Constraints: the same vectors fire somewhere (shut-down vectors stay shut down), each vector
//! on one online CPU, CPUs interchangeable. Then no placement can do better than
//! * IRQs per CPU: `ceil(counted IRQs / online CPUs)`;
//! * devices per CPU: each device touches at least `min(its counted IRQs, online CPUs)` CPUs,
//!   so some CPU serves at least `ceil(Σ that / online CPUs)` devices;
//!
//! and both are reached by dealing vectors round-robin over the CPUs, device after device, so
//! the bound is exact under these constraints.
//!
//! Two tighter bounds keep the kernel's own constraints ([`node_local_bound`]) or take the
//! per-node totals a placement produced as given ([`within_nodes_bound`]); see each function
//! for the constraints and the proof that the bound is reached. `policy` takes plain numbers:
//! the scenario layer (or `sweep`) counts them.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdealBound {
    pub irqs_per_cpu_max: u32,
    pub(crate) devices_per_cpu_max: u32,
    pub(crate) cpus_online: u32,
}

/// `irqs_per_device[d]`: the counted vectors of device `d` that fire somewhere.
pub(crate) fn ideal_bound(irqs_per_device: &[u64], cpus_online: u32) -> IdealBound {
    let cpus_online = cpus_online.max(1);
    let irqs: u64 = irqs_per_device.iter().sum();
    let touches: u64 = irqs_per_device.iter().map(|&n| n.min(u64::from(cpus_online))).sum();
    IdealBound {
        irqs_per_cpu_max: irqs.div_ceil(u64::from(cpus_online)) as u32,
        devices_per_cpu_max: touches.div_ceil(u64::from(cpus_online)) as u32,
        cpus_online,
    }
}

/// The node-local ideal: the least per-CPU maximum of counted IRQs any placement reaches when
///
/// * every counted vector fires on one online CPU;
/// * each of the `sets_spanning_nodes` interrupt sets (a set whose group count is at least the
///   number of nodes with possible CPUs) covers every CPU with masks that each lie within one
///   node, so it fires at least one vector in every node with online CPUs — exactly what
///   `group_cpus_evenly` guarantees (`alloc_nodes_groups` gives every node at least one group);
/// * nothing else: masks and the effective CPU inside them are free.
///
/// `node_cpus_online` lists the online CPUs of each node that has any. With `S` spanning sets
/// every node carries at least `S` IRQs, so its busiest CPU has at least `ceil(S / c_n)`; all
/// `irqs_total` IRQs share `C` CPUs, so some CPU has `ceil(N / C)`. The bound is the larger of
/// the two, and it is reached: give each node its `S` forced IRQs, deal the rest round-robin to
/// the CPUs with the lowest load (never raising a CPU above the bound, since
/// `S <= bound * c_n` and `N <= bound * C`), and let each set's remaining CPUs join a group of
/// that set in the same node.
pub(crate) fn node_local_bound(irqs_total: u64, node_cpus_online: &[u32], sets_spanning_nodes: u32) -> u32 {
    let cpus_online: u64 = node_cpus_online.iter().map(|&c| u64::from(c)).sum();
    if cpus_online == 0 {
        return 0;
    }
    let free = irqs_total.div_ceil(cpus_online);
    let forced = node_cpus_online
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| u64::from(sets_spanning_nodes).div_ceil(u64::from(c)))
        .max()
        .unwrap_or(0);
    // Forced IRQs exist only where IRQs are counted.
    let forced = if irqs_total == 0 { 0 } else { forced };
    free.max(forced) as u32
}

/// The within-nodes ideal: given how many counted IRQs (or hot single-CPU IRQs) a placement
/// put on each node, `(irqs, online CPUs)` per node, the least per-CPU maximum a placement with
/// the same per-node totals reaches: `max over nodes of ceil(irqs_n / c_n)` (pigeonhole, and
/// reached by dealing each node's IRQs round-robin over its CPUs). A placement's maximum minus
/// this is what it loses inside nodes; this minus [`node_local_bound`] is what it loses in how
/// it splits IRQs between nodes.
pub(crate) fn within_nodes_bound(per_node: &[(u64, u32)]) -> u32 {
    per_node
        .iter()
        .map(|&(irqs, cpus)| if cpus == 0 { 0 } else { irqs.div_ceil(u64::from(cpus)) })
        .max()
        .unwrap_or(0) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-made cases: a one-CPU node must take one IRQ of every spanning set.
    #[test]
    fn node_local_cases() {
        // L48s v2: 6 x 32 over 6 nodes of 8: forced 6 per node is under 4 per CPU; free 4.
        assert_eq!(node_local_bound(192, &[8; 6], 6), 4);
        // 8 devices x 2 queues on nodes of 1 and 7 CPUs: the lone CPU takes all 8.
        assert_eq!(node_local_bound(16, &[1, 7], 8), 8);
        // Sets too small to span the nodes force nothing.
        assert_eq!(node_local_bound(16, &[1, 7], 0), 2);
        assert_eq!(node_local_bound(0, &[1, 7], 3), 0);
        assert_eq!(within_nodes_bound(&[(36, 8), (30, 8)]), 5);
        assert_eq!(within_nodes_bound(&[]), 0);
    }

    /// Seed 000: 6 disks x 62 queues on 96 CPUs: no CPU needs more than 4 disks or IRQs.
    #[test]
    fn seed_l96as_v4() {
        let b = ideal_bound(&[62; 6], 96);
        assert_eq!((b.irqs_per_cpu_max, b.devices_per_cpu_max), (4, 4));
        // Seed 000, L48s v2: 6 x 32 on 48 CPUs: the "theoretical best of 4 IRQs/vCPU".
        assert_eq!(ideal_bound(&[32; 6], 48).irqs_per_cpu_max, 4);
        // More queues than CPUs: a device touches every CPU.
        assert_eq!(ideal_bound(&[20, 20], 8).devices_per_cpu_max, 2);
    }
}
