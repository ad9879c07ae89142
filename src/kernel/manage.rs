//! Model of the parts of `kernel/irq/manage.c` (and `irqdesc.c`) that pick where an interrupt
//! may go when it is started: `irq_setup_affinity()` with the descriptor's node and the default
//! affinity (`irqaffinity=`), and the housekeeping step of `irq_do_set_affinity()` for managed
//! interrupts (`isolcpus=managed_irq,…`).

use crate::topology::{CpuSet, Topology};

/// Target mask of a non-managed vector at request time.
///
/// `set` is the vector's affinity mask when it has an affinity descriptor whose mask holds an
/// online CPU, else the default affinity; the result is `online ∩ set` (all online CPUs if that
/// is empty), narrowed to the descriptor node's online CPUs when that leaves any.
pub(crate) fn irq_setup_affinity(topo: &Topology, mask: Option<&CpuSet>, node: Option<u32>) -> CpuSet {
    irq_setup_affinity_with(topo, mask, node, &CpuSet::full(topo.nr_cpu_ids()))
}

/// `irq_setup_affinity()` with `irq_default_affinity` = `default_affinity` (the
/// `irqaffinity=` boot parameter, see [`irq_affinity_setup`]): as [`irq_setup_affinity`], with
/// `set` falling back to the default affinity instead of all CPUs.
pub(crate) fn irq_setup_affinity_with(
    topo: &Topology,
    mask: Option<&CpuSet>,
    node: Option<u32>,
    default_affinity: &CpuSet,
) -> CpuSet {
    let online = topo.online();
    let set = match mask {
        Some(m) if m.intersects(online) => m,
        _ => default_affinity,
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

/// `irq_affinity_setup()` (`irqaffinity=`, kernel/irq/irqdesc.c): the parsed list with the
/// boot CPU (CPU 0) always added, so the default affinity is never empty. Without the
/// parameter `init_irq_default_affinity()` sets every bit.
pub(crate) fn irq_affinity_setup(list: &CpuSet, nr_cpu_ids: u32) -> CpuSet {
    let mut default = CpuSet::new(nr_cpu_ids);
    for cpu in list.iter().filter(|&c| c < nr_cpu_ids) {
        default.insert(cpu);
    }
    default.insert(0);
    default
}

/// The mask `irq_do_set_affinity()` programs for a managed interrupt when
/// `HK_TYPE_MANAGED_IRQ` housekeeping is enabled (`isolcpus=managed_irq,…`): the requested mask
/// narrowed to the housekeeping CPUs when that keeps an online CPU, else the requested mask
/// unchanged (the isolated CPUs then serve the interrupt). The managed mask itself, and so the
/// reservations and the blk-mq map, do not change. `None` housekeeping: the mask as given.
pub(crate) fn managed_irq_prog_mask(mask: &CpuSet, housekeeping: Option<&CpuSet>, online: &CpuSet) -> CpuSet {
    match housekeeping {
        Some(hk) => {
            let tmp = mask.and(hk);
            if tmp.intersects(online) {
                tmp
            } else {
                mask.clone()
            }
        }
        None => mask.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// irq_affinity_setup(): "Set at least the boot cpu" — irqaffinity=4-7 still holds CPU 0.
    #[test]
    fn irqaffinity_always_holds_the_boot_cpu() {
        let list = CpuSet::from_cpus([4, 5, 6, 7]);
        assert_eq!(irq_affinity_setup(&list, 8).to_cpulist(), "0,4-7");
        assert_eq!(irq_affinity_setup(&CpuSet::new(8), 8).to_cpulist(), "0");
    }

    /// irq_do_set_affinity(): with HK_TYPE_MANAGED_IRQ the programmed mask is mask ∩ hk when
    /// that intersects cpu_online_mask, else the requested mask.
    #[test]
    fn managed_irq_housekeeping_narrows_only_when_it_keeps_an_online_cpu() {
        let online = CpuSet::full(8);
        let hk = CpuSet::from_cpus([0, 1]);
        let mask = CpuSet::from_cpus([1, 2, 3]);
        assert_eq!(managed_irq_prog_mask(&mask, Some(&hk), &online).to_cpulist(), "1");
        let isolated_only = CpuSet::from_cpus([4, 5]);
        assert_eq!(
            managed_irq_prog_mask(&isolated_only, Some(&hk), &online).to_cpulist(),
            "4-5"
        );
        // The housekeeping CPU of the mask is offline: the whole mask is kept.
        let online = CpuSet::from_cpus([0, 2, 3, 4, 5, 6, 7]);
        assert_eq!(managed_irq_prog_mask(&mask, Some(&hk), &online).to_cpulist(), "1-3");
        assert_eq!(managed_irq_prog_mask(&mask, None, &online), mask);
    }
}
