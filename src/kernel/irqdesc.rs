//! Model of the one check of `kernel/irq/irqdesc.c` that decides an allocation's fate before
//! any vector is taken: `alloc_descs()` refuses affinity descriptors with an empty mask.
//!
//! An MSI-X device's vectors reach `alloc_descs()` one descriptor each
//! (`__msi_domain_alloc_irqs()` calls `__irq_domain_alloc_irqs()` per `msi_desc`, with that
//! vector's `irq_affinity_desc`); the first empty mask fails with `-EINVAL`, and
//! `msi_handle_pci_fail()` (kernel/irq/msi.c) turns that into the count of vectors allocated
//! before it (or `-ENOSPC` when there are none). `msix_capability_init()` frees what it
//! allocated (`pci_free_msi_irqs()`) and hands the count back, and `__pci_enable_msix_range()`
//! loops: it retries with that many vectors when they are at least the driver's minimum,
//! spreading them anew (drivers/pci/msi/msi.c, 6.12). That retry, and the MSI and INTx
//! fallbacks of `pci_alloc_irq_vectors_affinity()` after a negative answer, are not modelled:
//! the model reports the failing attempt.
//!
//! Pure: descriptors in, the first refused index out.

use super::irq_affinity::IrqAffinityDesc;

/// `alloc_descs()`'s validation: the index of the first descriptor whose mask is empty
/// (`-EINVAL`), or `None` when every mask holds a CPU.
pub(crate) fn alloc_descs_empty_mask(descs: &[IrqAffinityDesc]) -> Option<u32> {
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
