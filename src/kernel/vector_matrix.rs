//! The x86 per-CPU vector space and the effective CPU an interrupt finally fires on.
//!
//! [`IrqMatrix`] mirrors `kernel/irq/matrix.c` as `arch/x86/kernel/apic/vector.c` sets it up
//! (`arch_early_irq_init()`: `irq_alloc_matrix(NR_VECTORS, FIRST_EXTERNAL_VECTOR,
//! FIRST_SYSTEM_VECTOR)`, then `lapic_assign_system_vectors()` and `irq_matrix_online()` per CPU).
//! It keeps the per-CPU counts of `struct cpumap` (`available`, `allocated`, `managed`,
//! `managed_allocated`, `online`) and the global ones of `struct irq_matrix`
//! (`global_available`, `global_reserved`, `total_allocated`), and answers `-ENOSPC` where the
//! kernel does:
//!
//! * `irq_matrix_reserve_managed()`: a CPU of the managed mask has no free bit left for the
//!   reservation (the reservations already made on earlier CPUs of the mask are undone);
//! * `irq_matrix_alloc()`: no online CPU of the search mask has an available vector
//!   (`matrix_find_best_cpu()` finds none);
//! * `irq_matrix_alloc_managed()`: no online CPU of the mask, or no reserved bit left unallocated.
//!
//! Only counts are kept, not bit positions: the model answers "how many" and "where", never
//! "which vector number" (the kernel does not promise the same offset on every CPU either).
//!
//! [`VectorMatrix`] is the scenario's view: the state behind one of four effective-CPU models.
//!
//! * [`EffectiveModel::X86Matrix`]: managed vectors reserve a slot on every CPU of their mask
//!   when allocated and, when activated, go to the online CPU of the mask with the fewest
//!   managed allocations (ties to the highest id: the scan replaces the best on `<=`).
//!   Non-managed vectors go to the CPU of their target mask with the most available vectors
//!   (ties to the lowest id).
//! * [`EffectiveModel::FirstCpu`]: the lowest CPU of the mask, as the GIC routes an SPI
//!   (`gic_set_affinity()`: GICv2m, and MSIs a hypervisor delivers as SPIs); no vector space is
//!   tracked.
//! * [`EffectiveModel::Arm64Its`]: a GICv3 ITS ([`crate::kernel::irq_gic_v3_its`]): each vector
//!   first goes to the least-loaded online CPU of the machine when allocated, then to the
//!   least-loaded CPU of its mask when requested; per-CPU LPI counts, managed and unmanaged
//!   apart, ties to the lowest id. No vector space is tracked (LPIs are not a per-CPU space).
//! * [`EffectiveModel::Arm64GicV5`]: a GICv5 (v6.17 on): `gicv5_iri_irq_set_affinity()`
//!   (drivers/irqchip/irq-gic-v5.c), the `irq_set_affinity` of its SPI and LPI chips (the ITS's
//!   MSIs reach it through `irq_chip_set_affinity_parent()`), takes
//!   `cpumask_any_and(mask, cpu_online_mask)`, which include/linux/cpumask.h defines as
//!   `cpumask_first_and()`: the first online CPU of the mask (`force`: the
//!   first CPU of the mask, online or not, which the placement here never asks for). The same
//!   choice as first-cpu, under a name of its own for the code it models; no vector space is
//!   tracked and no count decides (LPIs are not a per-CPU space).
//!
//! How many vectors a CPU has is a fact of the release and the machine ([`VectorWindow`]):
//! 202 or 201 on current kernels (with a legacy PIC), 203 or 202 on v6.8 .. v6.9, 202 or 201
//! before; a scenario carries the count.
//!
//! Not modelled: vector moves caused by CPU hotplug, irqbalance or user writes, the cleanup
//! timer's timing, the legacy ISA vectors on the boot CPU (give them as held vectors), and what
//! a driver does after `-ENOSPC` (`docs/vector-space.md`).

use crate::kernel::irq_gic_v3_its::ItsLpiCounts;
use crate::topology::{CpuSet, Irqchip, Topology};
use std::fmt;

/// Vectors per CPU (`NR_VECTORS`, arch/x86/include/asm/irq_vectors.h).
pub(crate) const NR_VECTORS: u32 = 256;
/// First vector a device may get (`FIRST_EXTERNAL_VECTOR`, 0x20): below it are the exceptions.
pub(crate) const FIRST_EXTERNAL_VECTOR: u32 = 0x20;
/// First system vector (`FIRST_SYSTEM_VECTOR`: `LOCAL_TIMER_VECTOR`, 0xec, on x86-64 without
/// posted MSI): the allocation window ends here.
pub(crate) const FIRST_SYSTEM_VECTOR: u32 = 0xec;
/// System vectors inside the window (`systembits_inalloc`): `IA32_SYSCALL_VECTOR` (0x80), set
/// in `system_vectors` with IA32 emulation and handed to `irq_matrix_assign_system()`.
pub(crate) const SYSTEM_VECTORS_IN_ALLOC: u32 = 1;
/// Vectors a device may get on each online CPU at start (`irq_matrix_online()`:
/// `alloc_size - systembits_inalloc`): 203, the count of a v6.8 .. v6.9 kernel on a machine
/// without a legacy PIC ([`VectorWindow`]). Every scenario that names no kernel release and no
/// count keeps it, so links written before the count became a fact of release and machine keep
/// their numbers.
pub(crate) const VECTORS_AVAILABLE_START: u32 = FIRST_SYSTEM_VECTOR - FIRST_EXTERNAL_VECTOR - SYSTEM_VECTORS_IN_ALLOC;
/// The most vectors a device may get on a CPU: the whole space above the exceptions.
pub(crate) const VECTORS_PER_CPU_MAX: u32 = NR_VECTORS - FIRST_EXTERNAL_VECTOR;
/// `IA32_SYSCALL_VECTOR`, the one system vector in the window on every release.
pub(crate) const IA32_SYSCALL_VECTOR: u32 = 0x80;
/// `PIC_CASCADE_IR`'s vector, `ISA_IRQ_VECTOR(2)`: `lapic_assign_system_vectors()` makes it a
/// system vector when `nr_legacy_irqs() > 1` (a legacy 8259 PIC: QEMU q35 and i440fx, most PCs
/// and servers; not on hardware-reduced ACPI or where `probe_8259A()` finds none).
pub(crate) const PIC_CASCADE_VECTOR: u32 = 0x32;
/// `IRQ_MOVE_CLEANUP_VECTOR` before v6.8: `FIRST_EXTERNAL_VECTOR`, a system vector inside the
/// window.
pub(crate) const IRQ_MOVE_CLEANUP_VECTOR: u32 = FIRST_EXTERNAL_VECTOR;

/// The x86 window a kernel release gives device vectors: `irq_alloc_matrix(NR_VECTORS,
/// FIRST_EXTERNAL_VECTOR, FIRST_SYSTEM_VECTOR)` and the system vectors `lapic_assign_system_vectors()`
/// marks inside it. What a release has is the table `kernel::release::VECTOR_WINDOWS`; whether
/// the machine has a legacy PIC is a fact of the machine (`Topology::legacy_pic`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VectorWindow {
    /// `FIRST_SYSTEM_VECTOR`: `LOCAL_TIMER_VECTOR` (0xec) before v6.10,
    /// `POSTED_MSI_NOTIFICATION_VECTOR` (0xeb) from v6.10.
    pub(crate) first_system_vector: u32,
    /// `IRQ_MOVE_CLEANUP_VECTOR` (0x20) is a system vector in the window (before v6.8).
    pub(crate) move_cleanup_vector: bool,
}

impl VectorWindow {
    /// System vectors inside the window: `IA32_SYSCALL_VECTOR` always (IA32 emulation on, the
    /// distribution default), `IRQ_MOVE_CLEANUP_VECTOR` where the release has it, the PIC
    /// cascade where the machine has a legacy PIC.
    pub(crate) fn systembits_inalloc(self, legacy_pic: bool) -> u32 {
        SYSTEM_VECTORS_IN_ALLOC + u32::from(self.move_cleanup_vector) + u32::from(legacy_pic)
    }

    /// `irq_matrix_online()`'s `available` on a CPU with nothing allocated.
    pub(crate) fn vectors_per_cpu(self, legacy_pic: bool) -> u32 {
        self.first_system_vector - FIRST_EXTERNAL_VECTOR - self.systembits_inalloc(legacy_pic)
    }

    /// What the count is made of, for reports: "window 0x20-0xea less IA32_SYSCALL_VECTOR and
    /// the PIC cascade".
    pub(crate) fn describe(self, legacy_pic: bool) -> String {
        let mut taken = vec![format!("IA32_SYSCALL_VECTOR (0x{IA32_SYSCALL_VECTOR:x})")];
        if self.move_cleanup_vector {
            taken.push(format!("IRQ_MOVE_CLEANUP_VECTOR (0x{IRQ_MOVE_CLEANUP_VECTOR:x})"));
        }
        if legacy_pic {
            taken.push(format!("the legacy PIC's cascade (0x{PIC_CASCADE_VECTOR:x})"));
        }
        let last = taken.pop().unwrap_or_default();
        let list = if taken.is_empty() {
            last
        } else {
            format!("{} and {last}", taken.join(", "))
        };
        format!(
            "window 0x{:x}-0x{:x} less {list}",
            FIRST_EXTERNAL_VECTOR,
            self.first_system_vector - 1
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EffectiveModel {
    X86Matrix,
    FirstCpu,
    /// drivers/irqchip/irq-gic-v3-its.c (named "arm64-its", frozen).
    Arm64Its,
    /// drivers/irqchip/irq-gic-v5.c (named "arm64-gicv5", frozen).
    Arm64GicV5,
}

impl EffectiveModel {
    pub const ALL: [EffectiveModel; 4] = [
        EffectiveModel::X86Matrix,
        EffectiveModel::FirstCpu,
        EffectiveModel::Arm64Its,
        EffectiveModel::Arm64GicV5,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EffectiveModel::X86Matrix => "x86-matrix",
            EffectiveModel::FirstCpu => "first-cpu",
            EffectiveModel::Arm64Its => "arm64-its",
            EffectiveModel::Arm64GicV5 => "arm64-gicv5",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<EffectiveModel> {
        EffectiveModel::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The model of the code that picks the CPU for a controller's MSIs.
    pub(crate) fn for_irqchip(chip: Irqchip) -> EffectiveModel {
        match chip {
            Irqchip::Apic => EffectiveModel::X86Matrix,
            Irqchip::GicIts => EffectiveModel::Arm64Its,
            Irqchip::GicV2m | Irqchip::GicSpi => EffectiveModel::FirstCpu,
            Irqchip::GicV5 => EffectiveModel::Arm64GicV5,
        }
    }
}

/// Why the matrix refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MatrixError {
    /// `-EINVAL`: the search mask is empty (`irq_matrix_alloc()`, `irq_matrix_alloc_managed()`).
    EmptyMask,
    /// `-ENOSPC` from `irq_matrix_reserve_managed()`: `cpu` has no free bit for the reservation.
    ReserveManaged { cpu: u32 },
    /// `-ENOSPC` from `irq_matrix_alloc()` (`managed: false`: no online CPU of the mask has an
    /// available vector) or `irq_matrix_alloc_managed()` (`managed: true`).
    Alloc { managed: bool },
}

impl fmt::Display for MatrixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatrixError::EmptyMask => write!(f, "the search mask is empty"),
            MatrixError::ReserveManaged { cpu } => write!(
                f,
                "irq_matrix_reserve_managed() finds no free vector on CPU {cpu} for the managed reservation"
            ),
            MatrixError::Alloc { managed: false } => write!(
                f,
                "irq_matrix_alloc() finds no online CPU of the search mask with an available vector"
            ),
            MatrixError::Alloc { managed: true } => {
                write!(f, "irq_matrix_alloc_managed() finds no reserved vector to allocate")
            }
        }
    }
}

/// `matrix_find_best_cpu()`: among `cpus` (ascending), the CPU with the most available vectors.
/// `available` answers `None` for an offline CPU. The scan keeps a CPU only when it has strictly
/// more than the best so far, starting from 0: ties go to the lowest id, and a CPU with no
/// available vector is never chosen (`None` is the kernel's `UINT_MAX`).
pub(crate) fn matrix_find_best_cpu(
    cpus: impl IntoIterator<Item = u32>,
    mut available: impl FnMut(u32) -> Option<u32>,
) -> Option<u32> {
    let mut best = None;
    let mut maxavl = 0;
    for cpu in cpus {
        match available(cpu) {
            Some(avl) if avl > maxavl => {
                best = Some(cpu);
                maxavl = avl;
            }
            _ => {}
        }
    }
    best
}

/// `matrix_find_best_cpu_managed()`: among `cpus` (ascending), the online CPU with the fewest
/// managed allocations. `managed_allocated` answers `None` for an offline CPU. The scan skips
/// only CPUs with strictly more than the best so far, so ties go to the highest id.
pub(crate) fn matrix_find_best_cpu_managed(
    cpus: impl IntoIterator<Item = u32>,
    mut managed_allocated: impl FnMut(u32) -> Option<u32>,
) -> Option<u32> {
    let mut best = None;
    let mut allocated = u32::MAX;
    for cpu in cpus {
        match managed_allocated(cpu) {
            Some(a) if a <= allocated => {
                best = Some(cpu);
                allocated = a;
            }
            _ => {}
        }
    }
    best
}

/// One CPU's counts (`struct cpumap`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CpuMap {
    /// Vectors still free for a non-managed allocation (online CPUs only; 0 when offline).
    pub(crate) available: u32,
    /// Vectors allocated: pre-existing, non-managed and activated managed ones.
    pub(crate) allocated: u32,
    /// Managed reservations (allocated or not).
    pub(crate) managed: u32,
    /// Managed reservations that are allocated.
    pub(crate) managed_allocated: u32,
    pub(crate) online: bool,
}

impl CpuMap {
    /// Managed reservations not (yet) allocated.
    pub(crate) fn reserved(&self) -> u32 {
        self.managed - self.managed_allocated
    }
}

/// The vector matrix (`struct irq_matrix`), counts only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IrqMatrix {
    alloc_size: u32,
    systembits_inalloc: u32,
    global_available: u32,
    global_reserved: u32,
    total_allocated: u32,
    maps: Vec<CpuMap>,
}

impl IrqMatrix {
    /// The x86 matrix of `arch_early_irq_init()` with `online` CPUs brought up.
    #[cfg(test)]
    pub(crate) fn new(nr_cpu_ids: u32, online: &CpuSet) -> IrqMatrix {
        IrqMatrix::with_window(
            nr_cpu_ids,
            online,
            FIRST_SYSTEM_VECTOR - FIRST_EXTERNAL_VECTOR,
            SYSTEM_VECTORS_IN_ALLOC,
        )
    }

    /// `irq_alloc_matrix()` with an allocation window of `alloc_size` bits of which
    /// `systembits_inalloc` are system vectors, then `irq_matrix_online()` on every CPU of
    /// `online` (`available = alloc_size - managed - systembits_inalloc`, added to
    /// `global_available`).
    pub(crate) fn with_window(nr_cpu_ids: u32, online: &CpuSet, alloc_size: u32, systembits_inalloc: u32) -> IrqMatrix {
        let mut m = IrqMatrix {
            alloc_size,
            systembits_inalloc: systembits_inalloc.min(alloc_size),
            global_available: 0,
            global_reserved: 0,
            total_allocated: 0,
            maps: vec![CpuMap::default(); nr_cpu_ids as usize],
        };
        for cpu in online.iter().filter(|&c| c < nr_cpu_ids) {
            let capacity = m.capacity();
            let cm = &mut m.maps[cpu as usize];
            cm.available = capacity - cm.managed;
            cm.online = true;
            m.global_available += cm.available;
        }
        m
    }

    /// Vectors a device may hold on one CPU: the window minus its system vectors.
    pub(crate) fn capacity(&self) -> u32 {
        self.alloc_size - self.systembits_inalloc
    }

    /// Bits of the window neither system, managed-reserved nor allocated: what
    /// `matrix_alloc_area()` can still find on `cpu` (online or not).
    fn free_bits(&self, cpu: u32) -> u32 {
        let cm = &self.maps[cpu as usize];
        self.capacity() - cm.managed - (cm.allocated - cm.managed_allocated)
    }

    fn map(&self, cpu: u32) -> Option<&CpuMap> {
        self.maps.get(cpu as usize)
    }

    pub(crate) fn cpu(&self, cpu: u32) -> CpuMap {
        self.map(cpu).copied().unwrap_or_default()
    }

    pub(crate) fn nr_cpu_ids(&self) -> u32 {
        self.maps.len() as u32
    }

    pub(crate) fn global_available(&self) -> u32 {
        self.global_available
    }
    pub(crate) fn global_reserved(&self) -> u32 {
        self.global_reserved
    }
    pub(crate) fn total_allocated(&self) -> u32 {
        self.total_allocated
    }

    /// `irq_matrix_assign()`-style: mark one vector on `cpu` as taken by an interrupt set up
    /// before the scenario (legacy ISA vectors, timer, serial, ACPI, other drivers). Fails with
    /// `Alloc` when the CPU has no free bit or is not online.
    pub(crate) fn assign(&mut self, cpu: u32) -> Result<(), MatrixError> {
        if !self.map(cpu).is_some_and(|cm| cm.online) || self.free_bits(cpu) == 0 {
            return Err(MatrixError::Alloc { managed: false });
        }
        let cm = &mut self.maps[cpu as usize];
        cm.allocated += 1;
        cm.available -= 1;
        self.total_allocated += 1;
        self.global_available -= 1;
        Ok(())
    }

    /// `irq_matrix_reserve_managed()`: one managed bit on every CPU of `mask` (online or not).
    /// When a CPU has no free bit, the reservations made on the CPUs before it are removed
    /// again (`irq_matrix_remove_managed()` on each) and the answer is `-ENOSPC` naming it.
    pub(crate) fn reserve_managed(&mut self, mask: &CpuSet) -> Result<(), MatrixError> {
        let cpus: Vec<u32> = mask.iter().filter(|&c| c < self.nr_cpu_ids()).collect();
        for (k, &cpu) in cpus.iter().enumerate() {
            if self.free_bits(cpu) == 0 {
                for &done in &cpus[..k] {
                    self.remove_managed_one(done);
                }
                return Err(MatrixError::ReserveManaged { cpu });
            }
            let cm = &mut self.maps[cpu as usize];
            cm.managed += 1;
            if cm.online {
                cm.available -= 1;
                self.global_available -= 1;
            }
        }
        Ok(())
    }

    /// `irq_matrix_remove_managed()`: drop one unallocated managed reservation on every CPU of
    /// `mask` (the kernel WARNs and skips a CPU with none).
    #[cfg(test)]
    pub(crate) fn remove_managed(&mut self, mask: &CpuSet) {
        let n = self.nr_cpu_ids();
        for cpu in mask.iter().filter(|&c| c < n) {
            self.remove_managed_one(cpu);
        }
    }

    fn remove_managed_one(&mut self, cpu: u32) {
        let cm = &mut self.maps[cpu as usize];
        if cm.managed == 0 || cm.reserved() == 0 {
            return;
        }
        cm.managed -= 1;
        if cm.online {
            cm.available += 1;
            self.global_available += 1;
        }
    }

    /// `irq_matrix_alloc_managed()`: allocate a reserved managed vector on the online CPU of
    /// `mask` with the fewest managed allocations.
    pub(crate) fn alloc_managed(&mut self, mask: &CpuSet) -> Result<u32, MatrixError> {
        if mask.is_empty() {
            return Err(MatrixError::EmptyMask);
        }
        let cpu = matrix_find_best_cpu_managed(mask.iter(), |c| {
            self.map(c).filter(|cm| cm.online).map(|cm| cm.managed_allocated)
        })
        .ok_or(MatrixError::Alloc { managed: true })?;
        let cm = &mut self.maps[cpu as usize];
        if cm.reserved() == 0 {
            return Err(MatrixError::Alloc { managed: true });
        }
        cm.allocated += 1;
        cm.managed_allocated += 1;
        self.total_allocated += 1;
        Ok(cpu)
    }

    /// `irq_matrix_reserve()`: a global reservation for a non-managed interrupt, made at
    /// allocation time; the real vector comes at activation. Returns `true` when the kernel
    /// prints "Interrupt reservation exceeds available resources" (`global_reserved ==
    /// global_available` before the increment); the reservation is made either way.
    pub(crate) fn reserve(&mut self) -> bool {
        let exceeds = self.global_reserved == self.global_available;
        self.global_reserved += 1;
        exceeds
    }

    /// `irq_matrix_remove_reserved()`.
    #[cfg(test)]
    pub(crate) fn remove_reserved(&mut self) {
        self.global_reserved = self.global_reserved.saturating_sub(1);
    }

    /// `irq_matrix_alloc()`: a non-managed vector on the online CPU of `mask` with the most
    /// available vectors; `reserved` consumes a global reservation made by [`Self::reserve`].
    pub(crate) fn alloc(&mut self, mask: &CpuSet, reserved: bool) -> Result<u32, MatrixError> {
        if mask.is_empty() {
            return Err(MatrixError::EmptyMask);
        }
        let cpu = matrix_find_best_cpu(mask.iter(), |c| {
            self.map(c).filter(|cm| cm.online).map(|cm| cm.available)
        })
        .ok_or(MatrixError::Alloc { managed: false })?;
        // matrix_alloc_area() cannot fail here: an online CPU's `available` counts its free bits.
        let cm = &mut self.maps[cpu as usize];
        cm.allocated += 1;
        cm.available -= 1;
        self.total_allocated += 1;
        self.global_available -= 1;
        if reserved {
            self.global_reserved = self.global_reserved.saturating_sub(1);
        }
        Ok(cpu)
    }

    /// `irq_matrix_free()`: release an allocated vector. A managed one keeps its reservation
    /// (`available` does not change); a non-managed one becomes available again.
    pub(crate) fn free(&mut self, cpu: u32, managed: bool) {
        let Some(cm) = self.maps.get_mut(cpu as usize) else {
            return;
        };
        if cm.allocated == 0 || (managed && cm.managed_allocated == 0) {
            return; // the kernel WARNs: the bit was not allocated
        }
        cm.allocated -= 1;
        if managed {
            cm.managed_allocated -= 1;
        }
        if cm.online {
            self.total_allocated -= 1;
        }
        if !managed {
            cm.available += 1;
            if cm.online {
                self.global_available += 1;
            }
        }
    }
}

/// Where a non-managed activation found its vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NonManagedActivation {
    pub(crate) cpu: u32,
    /// The target mask had no available vector and a wider search of
    /// `assign_irq_vector_any_locked()` found one outside the descriptor's affinity mask: the
    /// kernel prints "Affinity broken due to vector space exhaustion".
    pub(crate) affinity_broken: bool,
}

/// The state behind an effective-CPU model, for the CPUs of one topology: the x86 vector
/// matrix, or the ITS's per-CPU LPI counts.
/// [`VectorMatrix::allocations`]: the counts a probe's steps must balance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Allocations {
    pub(crate) x86: u32,
    pub(crate) its_lpis: u32,
}

#[derive(Debug, Clone)]
pub(crate) struct VectorMatrix {
    model: EffectiveModel,
    online: CpuSet,
    matrix: IrqMatrix,
    /// The LPI counts of [`EffectiveModel::Arm64Its`] (untouched under the other models).
    its: ItsLpiCounts,
}

impl VectorMatrix {
    /// The matrix with `per_cpu` vectors a device may get on each online CPU (a release's
    /// [`VectorWindow`] on this machine). Only the count matters to the model, so the window is
    /// that many bits with no system vector in it.
    pub(crate) fn with_vectors_per_cpu(topo: &Topology, model: EffectiveModel, per_cpu: u32) -> VectorMatrix {
        VectorMatrix {
            model,
            online: topo.online().clone(),
            matrix: IrqMatrix::with_window(topo.nr_cpu_ids(), topo.online(), per_cpu, 0),
            its: ItsLpiCounts::new(topo.nr_cpu_ids(), topo.online()),
        }
    }

    pub(crate) fn model(&self) -> EffectiveModel {
        self.model
    }

    /// The counts behind the model (all zero unless it is [`EffectiveModel::X86Matrix`]).
    pub(crate) fn matrix(&self) -> &IrqMatrix {
        &self.matrix
    }

    fn tracks(&self) -> bool {
        self.model == EffectiveModel::X86Matrix
    }

    /// What the devices hold: vectors allocated in the x86 matrix and LPIs an ITS counts
    /// (managed and unmanaged), for the balance checks of a probe.
    pub(crate) fn allocations(&self) -> Allocations {
        let its_lpis = (0..self.matrix.nr_cpu_ids())
            .map(|cpu| self.its.its_read_lpi_count(true, cpu) + self.its.its_read_lpi_count(false, cpu))
            .sum();
        Allocations {
            x86: self.matrix.total_allocated(),
            its_lpis,
        }
    }

    /// Vectors other interrupts hold on `cpu` before the scenario starts (under
    /// [`EffectiveModel::Arm64Its`]: unmanaged LPIs of other drivers).
    pub(crate) fn hold(&mut self, cpu: u32, n: u32) -> Result<(), MatrixError> {
        if self.model == EffectiveModel::Arm64Its {
            self.its.hold(cpu, n);
            return Ok(());
        }
        if !self.tracks() {
            return Ok(());
        }
        for _ in 0..n {
            self.matrix.assign(cpu)?;
        }
        Ok(())
    }

    /// Allocation of a managed vector (`reserve_managed_vector()` → `irq_matrix_reserve_managed()`).
    pub(crate) fn reserve_managed(&mut self, mask: &CpuSet) -> Result<(), MatrixError> {
        if !self.tracks() {
            return Ok(());
        }
        self.matrix.reserve_managed(mask)
    }

    /// Allocation of a non-managed vector without a target (`reserve_irq_vector()` →
    /// `irq_matrix_reserve()`): `true` when the kernel warns that reservations exceed what is
    /// available.
    pub(crate) fn reserve(&mut self) -> bool {
        self.tracks() && self.matrix.reserve()
    }

    /// Allocation under a controller that activates each MSI as it is allocated
    /// (`MSI_FLAG_ACTIVATE_EARLY` without reservation mode): under
    /// [`EffectiveModel::Arm64Its`], `msi_init_virq()` → `its_irq_domain_activate()`, the
    /// least-loaded online CPU of the machine, where the vector is counted until it is
    /// requested. `None` under the other models (the x86 vector domain only reserves here;
    /// first-cpu keeps no state) and for a managed vector whose mask has no online CPU, which
    /// `msi_init_virq()` shuts down instead.
    pub(crate) fn activate_early(&mut self, managed: bool, mask: &CpuSet) -> Option<u32> {
        if self.model != EffectiveModel::Arm64Its || (managed && !mask.intersects(&self.online)) {
            return None;
        }
        self.its.its_irq_domain_activate(managed)
    }

    /// Request of a vector [`Self::activate_early`] placed on `early`: `irq_do_set_affinity()`
    /// hands `target` (online CPUs only: the managed mask after the `isolcpus=managed_irq`
    /// step, or `irq_setup_affinity()`'s target) to `its_set_affinity()`, which releases
    /// `early` and takes the least-loaded CPU of `target`. With nothing to pick the vector
    /// stays on `early` (the kernel's `-EINVAL`).
    pub(crate) fn request_early(&mut self, managed: bool, early: u32, target: &CpuSet) -> u32 {
        self.its.its_set_affinity(managed, early, target).unwrap_or(early)
    }

    /// Activation of a managed vector (`activate_managed()` → `assign_managed_vector()` →
    /// `irq_matrix_alloc_managed()` on `mask ∩ online`). `Ok(None)` when no CPU of the mask
    /// is online: the vector stays shut down.
    pub(crate) fn activate_managed(&mut self, mask: &CpuSet) -> Result<Option<u32>, MatrixError> {
        let target = mask.and(&self.online);
        if target.is_empty() {
            return Ok(None);
        }
        match self.model {
            // arm64-its places its vectors through activate_early/request_early; a managed
            // vector that reaches this point has no online CPU and returned above.
            EffectiveModel::FirstCpu | EffectiveModel::Arm64Its | EffectiveModel::Arm64GicV5 => Ok(target.first()),
            EffectiveModel::X86Matrix => self.matrix.alloc_managed(&target).map(Some),
        }
    }

    /// `apic_set_affinity()` on an activated managed vector now on `current`
    /// (`assign_managed_vector()`): nothing changes when `current` is in `dest ∩ online`;
    /// otherwise a reserved vector is allocated on the best CPU of `dest ∩ online ∩ mask` and
    /// the new CPU returned. The old vector stays allocated until [`Self::free_managed`].
    pub(crate) fn set_affinity_managed(
        &mut self,
        current: u32,
        dest: &CpuSet,
        mask: &CpuSet,
    ) -> Result<u32, MatrixError> {
        let search = dest.and(&self.online).and(mask);
        if search.contains(current) {
            return Ok(current);
        }
        match self.model {
            EffectiveModel::FirstCpu | EffectiveModel::Arm64Its | EffectiveModel::Arm64GicV5 => {
                Ok(search.first().unwrap_or(current))
            }
            EffectiveModel::X86Matrix => self.matrix.alloc_managed(&search),
        }
    }

    /// `irq_matrix_free()` of a managed vector's old allocation after a move (the
    /// reservation stays).
    pub(crate) fn free_managed(&mut self, cpu: u32) {
        if self.tracks() {
            self.matrix.free(cpu, true);
        }
    }

    /// Activation of a non-managed vector with a global reservation on its target mask
    /// (`irq_matrix_alloc(.., reserved = true)`). When no CPU of the target has an available
    /// vector, the searches of `assign_irq_vector_any_locked()` that remain are tried in order
    /// (`wider`: the descriptor node's CPUs, the affinity mask, the online CPUs); `-ENOSPC` when none has
    /// one. `affinity` is the descriptor's affinity mask, which the kernel checks the result
    /// against (`activate_reserved()`).
    pub(crate) fn activate_non_managed(
        &mut self,
        target: &CpuSet,
        wider: impl FnOnce() -> Vec<CpuSet>,
        affinity: &CpuSet,
    ) -> Result<NonManagedActivation, MatrixError> {
        match self.model {
            // arm64-its: only reached with no CPU online at allocation (activate_early).
            EffectiveModel::FirstCpu | EffectiveModel::Arm64Its | EffectiveModel::Arm64GicV5 => target
                .first()
                .map(|cpu| NonManagedActivation {
                    cpu,
                    affinity_broken: false,
                })
                .ok_or(MatrixError::EmptyMask),
            EffectiveModel::X86Matrix => {
                let mut last = match self.matrix.alloc(target, true) {
                    Ok(cpu) => {
                        return Ok(NonManagedActivation {
                            cpu,
                            affinity_broken: false,
                        })
                    }
                    Err(e) => e,
                };
                // The wider searches are built only when the target is full.
                for search in wider() {
                    match self.matrix.alloc(&search, true) {
                        Ok(cpu) => {
                            return Ok(NonManagedActivation {
                                cpu,
                                affinity_broken: !affinity.contains(cpu),
                            })
                        }
                        Err(e) => last = e,
                    }
                }
                Err(last)
            }
        }
    }

    /// Vectors in use on each CPU (`VECTORS_AVAILABLE_START - available`): managed
    /// reservations and non-managed allocations. Offline CPUs hold none. Always zero under
    /// the GIC models, which track no vector space.
    pub(crate) fn vector_load(&self) -> Vec<u32> {
        (0..self.matrix.nr_cpu_ids())
            .map(|cpu| {
                let cm = self.matrix.cpu(cpu);
                if cm.online {
                    self.matrix.capacity() - cm.available
                } else {
                    0
                }
            })
            .collect()
    }

    /// Raise the vectors in use per online CPU to `load` (after a driver that did its own
    /// allocation, like MANA, reports what it holds) by allocating non-managed vectors there;
    /// no-op under the GIC models. Fails with the first CPU, in ascending order,
    /// whose vector space `load` overfills (it is left full).
    pub(crate) fn set_vector_load(&mut self, load: &[u32]) -> Result<(), u32> {
        if !self.tracks() {
            return Ok(());
        }
        let before = self.vector_load();
        let mut first_full = None;
        for (cpu, (&want, &have)) in load.iter().zip(&before).enumerate() {
            let cpu = cpu as u32;
            if !self.online.contains(cpu) {
                continue;
            }
            for _ in have..want {
                if self.matrix.assign(cpu).is_err() {
                    first_full.get_or_insert(cpu);
                    break;
                }
            }
        }
        first_full.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The GICv5 model fires every vector on the first online CPU of its mask, managed or not,
    /// whatever earlier vectors did (no counts), and keeps no vector space; a gic-v5 machine
    /// picks it.
    #[test]
    fn gicv5_fires_on_the_first_online_cpu_of_the_mask() {
        let spec: crate::topology::TopologySpec =
            toml::from_str("name = \"v5\"\nnodes = [\"0-7\"]\nonline = \"0,2-7\"\nirqchip = \"gic-v5\"\n").unwrap();
        let topo = Topology::new(&spec).unwrap();
        let model = EffectiveModel::for_irqchip(topo.irqchip());
        assert_eq!((model, model.name()), (EffectiveModel::Arm64GicV5, "arm64-gicv5"));
        assert_eq!(EffectiveModel::from_name("arm64-gicv5"), Some(model));
        let mut m = VectorMatrix::with_vectors_per_cpu(&topo, model, 2);
        m.hold(2, 50).unwrap();
        // No ITS-style activation at allocation: the request decides.
        assert_eq!(m.activate_early(true, &set(&[2, 3])), None);
        m.reserve_managed(&set(&[0, 1, 2, 3])).unwrap();
        // CPU 1 is offline: the first online CPU of 1-3 is 2, again and again (no load counts).
        for _ in 0..5 {
            assert_eq!(m.activate_managed(&set(&[1, 2, 3])), Ok(Some(2)));
        }
        assert_eq!(m.activate_managed(&set(&[1])), Ok(None));
        let none = || Vec::new();
        for _ in 0..5 {
            let a = m
                .activate_non_managed(&set(&[5, 6, 7]), none, &set(&[5, 6, 7]))
                .unwrap();
            assert_eq!((a.cpu, a.affinity_broken), (5, false));
        }
        assert_eq!(m.set_affinity_managed(2, &set(&[4, 6]), &set(&[0, 4, 5, 6])), Ok(4));
        assert!(m.vector_load().iter().all(|&n| n == 0), "no vector space is tracked");
    }

    fn set(cpus: &[u32]) -> CpuSet {
        CpuSet::from_cpus(cpus.iter().copied())
    }

    /// A small window: `alloc_size` 4 with 1 system bit leaves 3 vectors per CPU.
    fn small(n: u32, online: &[u32]) -> IrqMatrix {
        IrqMatrix::with_window(n, &set(online), 4, 1)
    }

    /// Every count the kernel keeps agrees with the others (`irq_matrix_debug_show()` columns).
    fn consistent(m: &IrqMatrix) -> Result<(), String> {
        let mut avl = 0;
        let mut alloc = 0;
        for cpu in 0..m.nr_cpu_ids() {
            let cm = m.cpu(cpu);
            if cm.managed_allocated > cm.managed || cm.managed_allocated > cm.allocated {
                return Err(format!("CPU {cpu}: {cm:?}"));
            }
            let taken = cm.managed + (cm.allocated - cm.managed_allocated);
            if taken > m.capacity() {
                return Err(format!("CPU {cpu} holds {taken} of {}", m.capacity()));
            }
            if cm.online {
                if cm.available != m.capacity() - taken {
                    return Err(format!("CPU {cpu}: available {} with {taken} taken", cm.available));
                }
                avl += cm.available;
                alloc += cm.allocated;
            }
        }
        if avl != m.global_available() || alloc != m.total_allocated() {
            return Err(format!(
                "global_available {} (sum {avl}), total_allocated {} (sum {alloc})",
                m.global_available(),
                m.total_allocated()
            ));
        }
        Ok(())
    }

    /// `arch_early_irq_init()` → `irq_alloc_matrix(NR_VECTORS, FIRST_EXTERNAL_VECTOR,
    /// FIRST_SYSTEM_VECTOR)`, `irq_matrix_online()`: `available = alloc_size - systembits_inalloc`
    /// on online CPUs only, summed into `global_available`.
    #[test]
    fn irq_matrix_online_counts_the_window_minus_system_vectors() {
        let m = IrqMatrix::new(4, &set(&[0, 1, 3]));
        assert_eq!(m.capacity(), 0xec - 0x20 - 1);
        assert_eq!(m.capacity(), VECTORS_AVAILABLE_START);
        assert_eq!(m.cpu(0).available, 203);
        assert_eq!(m.cpu(2), CpuMap::default());
        assert_eq!(m.global_available(), 3 * 203);
        assert_eq!((m.global_reserved(), m.total_allocated()), (0, 0));
    }

    /// What a device may get per CPU: the window of the release (0x20..0xec before v6.10,
    /// ..0xeb after), less the system vectors in it: IA32_SYSCALL_VECTOR, the move-cleanup
    /// vector before v6.8 and the PIC cascade on a machine with a legacy PIC. Both extra system
    /// vectors lie inside every window.
    #[test]
    fn vectors_per_cpu_follow_the_window_and_the_pic() {
        let old = VectorWindow {
            first_system_vector: 0xec,
            move_cleanup_vector: true,
        };
        let v68 = VectorWindow {
            first_system_vector: 0xec,
            move_cleanup_vector: false,
        };
        let v610 = VectorWindow {
            first_system_vector: 0xeb,
            move_cleanup_vector: false,
        };
        assert_eq!((old.vectors_per_cpu(false), old.vectors_per_cpu(true)), (202, 201));
        assert_eq!((v68.vectors_per_cpu(false), v68.vectors_per_cpu(true)), (203, 202));
        assert_eq!((v610.vectors_per_cpu(false), v610.vectors_per_cpu(true)), (202, 201));
        assert_eq!(v68.vectors_per_cpu(false), VECTORS_AVAILABLE_START);
        for w in [old, v68, v610] {
            for v in [PIC_CASCADE_VECTOR, IRQ_MOVE_CLEANUP_VECTOR, IA32_SYSCALL_VECTOR] {
                assert!((FIRST_EXTERNAL_VECTOR..w.first_system_vector).contains(&v));
            }
        }
        assert_eq!(
            v610.describe(true),
            "window 0x20-0xea less IA32_SYSCALL_VECTOR (0x80) and the legacy PIC's cascade (0x32)"
        );
        let m = IrqMatrix::with_window(2, &set(&[0, 1]), v610.vectors_per_cpu(true), 0);
        assert_eq!((m.cpu(0).available, m.global_available()), (201, 402));
    }

    /// `matrix_find_best_cpu()`: replaces on `available > maxavl` from 0, skips offline CPUs.
    #[test]
    fn find_best_cpu_ties_low_and_never_an_empty_cpu() {
        let avl = |v: &'static [Option<u32>]| move |c: u32| v[c as usize];
        assert_eq!(
            matrix_find_best_cpu(0..4, avl(&[Some(5), Some(7), Some(7), None])),
            Some(1)
        );
        assert_eq!(matrix_find_best_cpu(0..3, avl(&[Some(0), None, Some(0)])), None);
        assert_eq!(matrix_find_best_cpu(0..3, avl(&[None, Some(1), Some(9)])), Some(2));
    }

    /// `matrix_find_best_cpu_managed()`: skips only `managed_allocated > allocated`, so equal
    /// counts move the choice up: ties go to the highest online id.
    #[test]
    fn find_best_cpu_managed_ties_high() {
        let ma = |v: &'static [Option<u32>]| move |c: u32| v[c as usize];
        assert_eq!(
            matrix_find_best_cpu_managed(0..4, ma(&[Some(1), Some(0), Some(0), None])),
            Some(2)
        );
        assert_eq!(matrix_find_best_cpu_managed(0..2, ma(&[None, None])), None);
        assert_eq!(
            matrix_find_best_cpu_managed(0..3, ma(&[Some(0), Some(2), Some(1)])),
            Some(0)
        );
    }

    /// `irq_matrix_reserve_managed()`: one bit on every CPU of the mask, offline ones included
    /// (their `available` is not touched); on a full CPU the earlier CPUs' reservations are
    /// removed again and the answer is -ENOSPC for that CPU.
    #[test]
    fn reserve_managed_reserves_everywhere_and_rolls_back_on_enospc() {
        let mut m = small(3, &[0, 1]);
        m.reserve_managed(&set(&[0, 1, 2])).unwrap();
        assert_eq!((m.cpu(0).managed, m.cpu(0).available), (1, 2));
        assert_eq!((m.cpu(2).managed, m.cpu(2).available), (1, 0));
        assert_eq!(m.global_available(), 4);
        // Fill CPU 1 with non-managed vectors, then a mask 0-1 cannot reserve on CPU 1.
        m.alloc(&set(&[1]), false).unwrap();
        m.alloc(&set(&[1]), false).unwrap();
        let before = m.clone();
        assert_eq!(
            m.reserve_managed(&set(&[0, 1])),
            Err(MatrixError::ReserveManaged { cpu: 1 })
        );
        assert_eq!(m, before, "CPU 0's reservation is undone");
        consistent(&m).unwrap();
    }

    /// `irq_matrix_alloc_managed()`: -EINVAL for an empty mask; the vector comes out of a
    /// reservation, so `available` does not move; -ENOSPC when the chosen CPU has no
    /// unallocated reservation left.
    #[test]
    fn alloc_managed_uses_the_reservation() {
        let mut m = small(2, &[0, 1]);
        assert_eq!(m.alloc_managed(&CpuSet::new(2)), Err(MatrixError::EmptyMask));
        m.reserve_managed(&set(&[0, 1])).unwrap();
        let avl = m.global_available();
        assert_eq!(m.alloc_managed(&set(&[0, 1])), Ok(1));
        assert_eq!(m.global_available(), avl);
        assert_eq!((m.cpu(1).allocated, m.cpu(1).managed_allocated), (1, 1));
        // CPU 0 has the fewest managed allocations now; its reservation is still free.
        assert_eq!(m.alloc_managed(&set(&[0, 1])), Ok(0));
        assert_eq!(m.alloc_managed(&set(&[0])), Err(MatrixError::Alloc { managed: true }));
        consistent(&m).unwrap();
    }

    /// `irq_matrix_alloc()`: the CPU with the most available vectors, -ENOSPC when every CPU of
    /// the mask is full; `reserved` consumes a global reservation (`irq_matrix_reserve()`).
    #[test]
    fn alloc_spreads_then_answers_enospc() {
        let mut m = small(2, &[0, 1]);
        assert!(!m.reserve());
        assert_eq!(m.global_reserved(), 1);
        assert_eq!(m.alloc(&set(&[0, 1]), true), Ok(0));
        assert_eq!(m.global_reserved(), 0);
        let cpus: Vec<u32> = (0..5).map(|_| m.alloc(&set(&[0, 1]), false).unwrap()).collect();
        assert_eq!(cpus, [1, 0, 1, 0, 1]);
        assert_eq!(
            m.alloc(&set(&[0, 1]), false),
            Err(MatrixError::Alloc { managed: false })
        );
        assert_eq!(m.global_available(), 0);
        consistent(&m).unwrap();
    }

    /// `irq_matrix_reserve()` warns once reservations reach `global_available`, and reserves
    /// anyway.
    #[test]
    fn reserve_warns_when_reservations_reach_availability() {
        let mut m = small(1, &[0]);
        let warned: Vec<bool> = (0..4).map(|_| m.reserve()).collect();
        assert_eq!(warned, [false, false, false, true]);
        assert_eq!(m.global_reserved(), 4);
        m.remove_reserved();
        assert_eq!(m.global_reserved(), 3);
    }

    /// `irq_matrix_free()`: a managed vector gives its bit back to the reservation
    /// (`available` unchanged); only `irq_matrix_remove_managed()` releases the reservation. A
    /// non-managed vector becomes available again.
    #[test]
    fn free_keeps_managed_reservations_until_removed() {
        let mut m = small(1, &[0]);
        m.reserve_managed(&set(&[0])).unwrap();
        let cpu = m.alloc_managed(&set(&[0])).unwrap();
        m.free(cpu, true);
        assert_eq!((m.cpu(0).managed, m.cpu(0).available, m.cpu(0).allocated), (1, 2, 0));
        m.remove_managed(&set(&[0]));
        assert_eq!(m.cpu(0).available, 3);
        let cpu = m.alloc(&set(&[0]), false).unwrap();
        m.free(cpu, false);
        assert_eq!(m, small(1, &[0]));
    }

    /// Pre-existing vectors (`irq_matrix_assign()`) count as allocated and fail on a full CPU.
    #[test]
    fn assign_fills_a_cpu() {
        let mut m = small(2, &[0, 1]);
        for _ in 0..3 {
            m.assign(0).unwrap();
        }
        assert_eq!(m.assign(0), Err(MatrixError::Alloc { managed: false }));
        assert_eq!(m.alloc(&set(&[0, 1]), false), Ok(1));
        consistent(&m).unwrap();
    }

    #[derive(Debug, Clone)]
    enum Op {
        ReserveManaged(Vec<u32>),
        AllocManaged(usize),
        Alloc(Vec<u32>),
        Free(usize),
        RemoveManaged(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        let mask = proptest::collection::vec(0u32..4, 1..4);
        prop_oneof![
            mask.clone().prop_map(Op::ReserveManaged),
            (0usize..16).prop_map(Op::AllocManaged),
            mask.prop_map(Op::Alloc),
            (0usize..16).prop_map(Op::Free),
            (0usize..16).prop_map(Op::RemoveManaged),
        ]
    }

    proptest! {
        /// Any sequence of kernel calls keeps every CPU within its window and the global counts
        /// equal to the per-CPU sums; a refused call changes nothing; releasing everything the
        /// way the kernel does (`irq_matrix_free()` keeps a managed reservation,
        /// `irq_matrix_remove_managed()` drops it) gives back the fresh matrix.
        #[test]
        fn allocation_never_exceeds_capacity(ops in proptest::collection::vec(op(), 1..60), offline in 0u32..4) {
            let online: Vec<u32> = (0..4).filter(|&c| c != offline).collect();
            let fresh = small(4, &online);
            let mut m = fresh.clone();
            // Reservations: mask and the CPU of its allocation, if any.
            let mut resv: Vec<(CpuSet, Option<u32>)> = Vec::new();
            let mut plain: Vec<u32> = Vec::new();
            for op in ops {
                let before = m.clone();
                match op {
                    Op::ReserveManaged(cpus) => {
                        let mask = set(&cpus);
                        match m.reserve_managed(&mask) {
                            Ok(()) => resv.push((mask, None)),
                            Err(_) => prop_assert_eq!(&m, &before),
                        }
                    }
                    Op::AllocManaged(i) => {
                        if let Some((mask, cpu @ None)) = resv.get_mut(i) {
                            match m.alloc_managed(&mask.and(&set(&online))) {
                                Ok(c) => {
                                    prop_assert!(mask.contains(c) && online.contains(&c));
                                    *cpu = Some(c);
                                }
                                Err(_) => prop_assert_eq!(&m, &before),
                            }
                        }
                    }
                    Op::Alloc(cpus) => match m.alloc(&set(&cpus), false) {
                        Ok(c) => {
                            prop_assert!(cpus.contains(&c) && online.contains(&c));
                            plain.push(c);
                        }
                        Err(_) => prop_assert_eq!(&m, &before),
                    },
                    Op::Free(i) => {
                        if i < plain.len() {
                            m.free(plain.remove(i), false);
                        } else if let Some((_, cpu @ Some(_))) = resv.get_mut(i - plain.len()) {
                            let avl = m.global_available();
                            m.free(cpu.take().unwrap(), true);
                            prop_assert_eq!(m.global_available(), avl, "a freed managed vector stays reserved");
                        }
                    }
                    Op::RemoveManaged(i) => {
                        if i < resv.len() && resv[i].1.is_none() {
                            let (mask, _) = resv.remove(i);
                            m.remove_managed(&mask);
                        }
                    }
                }
                prop_assert!(consistent(&m).is_ok(), "{:?}", consistent(&m));
            }
            for c in plain {
                m.free(c, false);
            }
            for (mask, cpu) in resv {
                if let Some(c) = cpu {
                    m.free(c, true);
                }
                m.remove_managed(&mask);
            }
            prop_assert_eq!(m, fresh);
        }
    }
}
