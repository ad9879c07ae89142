//! The CPU a GICv3 ITS sends each LPI (a PCI MSI on arm64) to: `drivers/irqchip/irq-gic-v3-its.c`,
//! as read in Linux v6.12 and v7.2 (the functions below are the same in both). The per-CPU LPI
//! counts and the least-loaded choice date from "irqchip/gic-v3-its: Balance initial LPI
//! affinity across CPUs" (May 2020, first in v5.8); before it every LPI started on the first
//! CPU of its mask. Pure: the counts are a value the caller owns.
//!
//! What the kernel does, and what this file keeps:
//!
//! * `struct cpu_lpi_count`: per CPU, two counters, `managed` and `unmanaged`. An interrupt only
//!   ever reads and moves the counter of its own kind (`its_read_lpi_count()`,
//!   `its_inc_lpi_count()`, `its_dec_lpi_count()`): managed vectors never see the unmanaged
//!   ones and the other way round.
//! * `cpumask_pick_least_loaded()`: the CPU of the mask with the smallest count of the
//!   interrupt's kind; the scan replaces the best only on a strictly smaller count, so ties go
//!   to the lowest id.
//! * `its_select_cpu()`: managed: the least-loaded CPU of the mask as given. Unmanaged: first
//!   the ITS's NUMA node ∩ mask ∩ online, then mask ∩ online, then every online CPU.
//! * Allocation. The PCI/MSI domain sets `MSI_FLAG_ACTIVATE_EARLY` and the ITS uses no
//!   reservation mode, so `msi_init_virq()` activates every vector as it is allocated:
//!   `its_irq_domain_activate()` picks `its_select_cpu(d, cpu_online_mask)` — the least-loaded
//!   online CPU of the whole machine, whatever the vector's mask — and counts it there. A managed
//!   vector whose mask has no online CPU is shut down instead and counted nowhere.
//! * Request. `request_irq()` → `irq_startup()` → `irq_do_set_affinity()` (managed: the mask ∩
//!   online, after the `isolcpus=managed_irq` step; unmanaged: `irq_setup_affinity()`'s target)
//!   → `its_set_affinity()`: release the count on the CPU it sits on, pick
//!   `its_select_cpu(d, mask)`, count it there. So each vector of a device first takes a slot
//!   somewhere on the machine and gives it back only when its own turn comes: the slots the
//!   later vectors of the same device still hold steer the earlier ones' choice.
//! * `its_irq_domain_deactivate()` (free) releases the count. NVMe's first single admin vector
//!   is activated, requested, freed and deactivated before the real allocation: no net count.
//!
//! Where the model simplifies:
//!
//! * The ITS is taken to sit on no NUMA node (`NUMA_NO_NODE`), so unmanaged LPIs skip the node
//!   step. With firmware that gives the ITS a node (SRAT ITS affinity, `numa-node-id`) an
//!   unmanaged LPI first looks among that node's online CPUs; the node of the ITS is a fact no
//!   topology here carries. Managed LPIs never look at it (except with the Cavium ThunderX
//!   erratum 23144 workaround, which confines them to the ITS's node; not modelled).
//! * Other LPIs (NICs, virtio, other drivers' MSIs) exist only as counts given at the start
//!   ([`ItsLpiCounts::hold`], as unmanaged); the order they were activated in relative to the
//!   modelled devices is not known.
//! * One count table for the machine, as the kernel's per-CPU `cpu_lpi_count` is shared by every
//!   ITS: the ITS's own collections (one per CPU and ITS, the target of `MOVI`) carry no count
//!   and decide nothing. vLPIs forwarded to vCPUs (GICv4) are not counted (`its_set_affinity()`
//!   refuses them) and not modelled; `force` moves (CPU hotplug) are not modelled.

use crate::topology::CpuSet;

/// `struct cpu_lpi_count` for every CPU id, and the online mask the choices are made within.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ItsLpiCounts {
    managed: Vec<u32>,
    unmanaged: Vec<u32>,
    online: CpuSet,
}

impl ItsLpiCounts {
    /// No LPI counted yet, for `nr_cpu_ids` CPUs of which `online` are online.
    pub(crate) fn new(nr_cpu_ids: u32, online: &CpuSet) -> ItsLpiCounts {
        ItsLpiCounts {
            managed: vec![0; nr_cpu_ids as usize],
            unmanaged: vec![0; nr_cpu_ids as usize],
            online: online.clone(),
        }
    }

    fn counts(&self, managed: bool) -> &[u32] {
        if managed {
            &self.managed
        } else {
            &self.unmanaged
        }
    }

    /// `its_read_lpi_count()`: the count of the interrupt's kind on `cpu`.
    pub(crate) fn its_read_lpi_count(&self, managed: bool, cpu: u32) -> u32 {
        self.counts(managed).get(cpu as usize).copied().unwrap_or(0)
    }

    /// The counter of the interrupt's kind on `cpu` (`None` beyond `nr_cpu_ids`).
    fn count_mut(&mut self, managed: bool, cpu: u32) -> Option<&mut u32> {
        let counts = if managed {
            &mut self.managed
        } else {
            &mut self.unmanaged
        };
        counts.get_mut(cpu as usize)
    }

    /// `its_inc_lpi_count()`.
    fn its_inc_lpi_count(&mut self, managed: bool, cpu: u32) {
        if let Some(c) = self.count_mut(managed, cpu) {
            *c += 1;
        }
    }

    /// `its_dec_lpi_count()`. The kernel's counter is an `atomic_t` that every decrement
    /// follows an increment of; the model never decrements below zero either.
    fn its_dec_lpi_count(&mut self, managed: bool, cpu: u32) {
        if let Some(c) = self.count_mut(managed, cpu) {
            debug_assert!(*c > 0, "LPI count of CPU {cpu} released below zero");
            *c = c.saturating_sub(1);
        }
    }

    /// LPIs of other interrupts that sit on `cpu` before the modelled devices (counted as
    /// unmanaged: other drivers' MSIs).
    pub(crate) fn hold(&mut self, cpu: u32, n: u32) {
        for _ in 0..n {
            self.its_inc_lpi_count(false, cpu);
        }
    }

    /// `cpumask_pick_least_loaded()`: the CPU of `mask` with the smallest count of the
    /// interrupt's kind, ties to the lowest id (the scan keeps the first CPU with a count
    /// strictly below the best so far); `None` (the kernel's `nr_cpu_ids`) for an empty mask.
    pub(crate) fn cpumask_pick_least_loaded(&self, managed: bool, mask: &CpuSet) -> Option<u32> {
        let mut best = None;
        let mut count = u32::MAX;
        for cpu in mask.iter() {
            let this_count = self.its_read_lpi_count(managed, cpu);
            if this_count < count {
                best = Some(cpu);
                count = this_count;
            }
        }
        best
    }

    /// `its_select_cpu()` with the ITS on no NUMA node (see the module comment): managed, the
    /// least-loaded CPU of `aff_mask` as given (the callers hand it online CPUs only);
    /// unmanaged, of `aff_mask ∩ online`, or of every online CPU when that is empty.
    pub(crate) fn its_select_cpu(&self, managed: bool, aff_mask: &CpuSet) -> Option<u32> {
        if managed {
            return self.cpumask_pick_least_loaded(true, aff_mask);
        }
        let mut tmpmask = aff_mask.and(&self.online);
        if tmpmask.is_empty() {
            tmpmask = self.online.clone();
        }
        self.cpumask_pick_least_loaded(false, &tmpmask)
    }

    /// `its_irq_domain_activate()`, reached from the allocation (`MSI_FLAG_ACTIVATE_EARLY`):
    /// `its_select_cpu(d, cpu_online_mask)`, counted there. `None` only with no CPU online.
    pub(crate) fn its_irq_domain_activate(&mut self, managed: bool) -> Option<u32> {
        let online = self.online.clone();
        let cpu = self.its_select_cpu(managed, &online)?;
        self.its_inc_lpi_count(managed, cpu);
        Some(cpu)
    }

    /// `its_set_affinity(d, mask, force = false)` on a vector now on `prev_cpu`: release that
    /// count, pick `its_select_cpu(d, mask)` and count it. When no CPU can be picked the
    /// kernel counts `prev_cpu` again and answers `-EINVAL`: `None` here, the vector stays.
    pub(crate) fn its_set_affinity(&mut self, managed: bool, prev_cpu: u32, mask: &CpuSet) -> Option<u32> {
        self.its_dec_lpi_count(managed, prev_cpu);
        match self.its_select_cpu(managed, mask) {
            Some(cpu) => {
                self.its_inc_lpi_count(managed, cpu);
                Some(cpu)
            }
            None => {
                self.its_inc_lpi_count(managed, prev_cpu);
                None
            }
        }
    }

    /// `its_irq_domain_deactivate()`: the vector on `cpu` stops counting.
    #[cfg(test)]
    pub(crate) fn its_irq_domain_deactivate(&mut self, managed: bool, cpu: u32) {
        self.its_dec_lpi_count(managed, cpu);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(cpus: &[u32]) -> CpuSet {
        CpuSet::from_cpus(cpus.iter().copied())
    }

    fn its(n: u32) -> ItsLpiCounts {
        ItsLpiCounts::new(n, &CpuSet::full(n))
    }

    /// `cpumask_pick_least_loaded()` replaces only on a strictly smaller count: ties low.
    #[test]
    fn pick_least_loaded_ties_to_the_lowest_id() {
        let mut c = its(4);
        c.hold(0, 2);
        c.hold(1, 1);
        c.hold(3, 1);
        assert_eq!(c.cpumask_pick_least_loaded(false, &set(&[0, 1, 2, 3])), Some(2));
        assert_eq!(c.cpumask_pick_least_loaded(false, &set(&[0, 1, 3])), Some(1));
        assert_eq!(c.cpumask_pick_least_loaded(false, &CpuSet::new(4)), None);
    }

    /// Managed and unmanaged interrupts read, take and release their own counter only.
    #[test]
    fn managed_and_unmanaged_are_counted_apart() {
        let mut c = its(2);
        c.hold(0, 5);
        assert_eq!(
            c.its_irq_domain_activate(true),
            Some(0),
            "the unmanaged LPIs on 0 do not count"
        );
        assert_eq!(c.its_irq_domain_activate(false), Some(1));
        assert_eq!(c.its_read_lpi_count(true, 0), 1);
        assert_eq!(c.its_read_lpi_count(false, 0), 5);
        assert_eq!(c.its_read_lpi_count(false, 1), 1);
        c.its_irq_domain_deactivate(true, 0);
        assert_eq!(c.its_read_lpi_count(true, 0), 0);
        assert_eq!(c.its_read_lpi_count(false, 0), 5);
    }

    /// `its_set_affinity()` releases the old count before it chooses: a vector alone on the
    /// least-loaded CPU of its mask stays there.
    #[test]
    fn set_affinity_releases_before_it_picks() {
        let mut c = its(4);
        // Two managed vectors activated: CPUs 0 and 1.
        assert_eq!(c.its_irq_domain_activate(true), Some(0));
        assert_eq!(c.its_irq_domain_activate(true), Some(1));
        // The first asks for 0-1: its own slot on 0 is released, 0 is free again, so 0.
        assert_eq!(c.its_set_affinity(true, 0, &set(&[0, 1])), Some(0));
        // The second asks for 0-1 too: 1 released, 0 holds one, so 1.
        assert_eq!(c.its_set_affinity(true, 1, &set(&[0, 1])), Some(1));
        assert_eq!((c.its_read_lpi_count(true, 0), c.its_read_lpi_count(true, 1)), (1, 1));
    }

    /// Unmanaged: the mask ∩ online, or every online CPU when that is empty; managed: the mask
    /// as given. With nothing to pick, the old CPU is counted again and the answer is `None`.
    #[test]
    fn select_cpu_falls_back_to_online_for_unmanaged_only() {
        let mut c = ItsLpiCounts::new(4, &set(&[0, 1]));
        c.hold(0, 1);
        assert_eq!(c.its_select_cpu(false, &set(&[2, 3])), Some(1));
        assert_eq!(c.its_select_cpu(false, &set(&[0, 2])), Some(0));
        assert_eq!(c.its_select_cpu(true, &set(&[2, 3])), Some(2));
        assert_eq!(c.its_irq_domain_activate(true), Some(0));
        let before = c.clone();
        assert_eq!(c.its_set_affinity(true, 0, &CpuSet::new(4)), None);
        assert_eq!(c, before);
    }

    /// The two stages on a small machine, as the smoke4 boot in the lab shows them
    /// (../shared/lab/arm64/smoke4.cmp.txt: 4 vCPUs, two NVMe controllers with 2 queues each,
    /// masks 0-1 and 2-3): nvme0 on 0,0,2 and nvme1 on 1,1,3.
    #[test]
    fn two_controllers_of_two_queues_as_a_real_kernel_places_them() {
        let mut c = its(4);
        let all = CpuSet::full(4);
        let masks = [set(&[0, 1]), set(&[2, 3])];
        let mut placed = Vec::new();
        for _ in 0..2 {
            // Allocation: the admin vector (unmanaged), then the two queues (managed).
            let admin = c.its_irq_domain_activate(false).unwrap();
            let queues: Vec<u32> = masks.iter().map(|_| c.its_irq_domain_activate(true).unwrap()).collect();
            // Request, in vector order.
            placed.push(c.its_set_affinity(false, admin, &all).unwrap());
            for (m, &q) in masks.iter().zip(&queues) {
                placed.push(c.its_set_affinity(true, q, m).unwrap());
            }
        }
        assert_eq!(placed, [0, 0, 2, 1, 1, 3]);
    }
}
