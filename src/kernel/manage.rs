//! Model of the part of `kernel/irq/manage.c` that picks where a non-managed interrupt may go
//! when it is started: `irq_setup_affinity()` with the descriptor's node.

use crate::topology::{CpuSet, Topology};

/// Target mask of a non-managed vector at request time.
///
/// `set` is the vector's affinity mask when it has an affinity descriptor whose mask holds an
/// online CPU, else the default affinity; the result is `online ∩ set` (all online CPUs if that
/// is empty), narrowed to the descriptor node's online CPUs when that leaves any.
pub fn irq_setup_affinity(topo: &Topology, mask: Option<&CpuSet>, node: Option<u32>) -> CpuSet {
    let online = topo.online();
    let default = CpuSet::full(topo.nr_cpu_ids());
    let set = match mask {
        Some(m) if m.intersects(online) => m,
        _ => &default,
    };
    let mut target = online.and(set);
    if target.is_empty() {
        target = online.clone();
    }
    if let Some(node) = node {
        let local = target.and(topo.node_cpus(node));
        if !local.is_empty() {
            target = local;
        }
    }
    target
}
