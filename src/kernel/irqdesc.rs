//! Model of the one check of `kernel/irq/irqdesc.c` that decides an allocation's fate before
//! any vector is taken: `alloc_descs()` refuses affinity descriptors with an empty mask.
//!
//! An MSI-X device's vectors reach `alloc_descs()` one descriptor each
//! (`__msi_domain_alloc_irqs()` calls `__irq_domain_alloc_irqs()` per `msi_desc`, with that
//! vector's `irq_affinity_desc`); the first empty mask fails with `-EINVAL`, the vectors
//! allocated before it are freed again (`msix_capability_init()` → `pci_free_msi_irqs()`), and
//! `__pci_enable_msix_range()` hands the error back without retrying fewer vectors (only a
//! positive answer means "try this many"). `pci_alloc_irq_vectors_affinity()` then tries MSI
//! with the same bounds (the device's MSI capability, at most 32 vectors; x86 without interrupt
//! remapping gives multi-message MSI one vector) and at last INTx when the driver accepts one
//! vector (`min_vecs == 1`, as NVMe does). Those fallbacks are not modelled.
//!
//! Pure: descriptors in, the first refused index out.

use super::irq_affinity::IrqAffinityDesc;

/// `alloc_descs()`'s validation: the index of the first descriptor whose mask is empty
/// (`-EINVAL`), or `None` when every mask holds a CPU.
pub fn alloc_descs_empty_mask(descs: &[IrqAffinityDesc]) -> Option<u32> {
    descs.iter().position(|d| d.mask.is_empty()).map(|i| i as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::CpuSet;

    #[test]
    fn the_first_empty_mask_is_refused() {
        let desc = |cpus: &[u32]| IrqAffinityDesc {
            mask: CpuSet::from_cpus(cpus.iter().copied()),
            is_managed: true,
        };
        assert_eq!(alloc_descs_empty_mask(&[desc(&[0]), desc(&[1, 2])]), None);
        assert_eq!(alloc_descs_empty_mask(&[desc(&[0]), desc(&[]), desc(&[])]), Some(1));
        assert_eq!(alloc_descs_empty_mask(&[]), None);
    }
}
