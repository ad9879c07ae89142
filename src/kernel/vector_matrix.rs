//! Models of the effective CPU an interrupt finally fires on.
//!
//! * [`EffectiveModel::X86Matrix`]: `kernel/irq/matrix.c` as driven by
//!   `arch/x86/kernel/apic/vector.c`. Managed vectors reserve a slot on every CPU of their mask
//!   when allocated and, when activated, go to the online CPU of the mask with the fewest
//!   managed allocations (ties to the highest id: the scan replaces the best on `<=`).
//!   Non-managed vectors go to the CPU of their target mask with the most free vectors (ties to
//!   the lowest id).
//! * [`EffectiveModel::FirstCpu`]: the lowest CPU of the mask, as a GIC-based arm64 guest does.
//!
//! Simplifications (stated in the spec): every online CPU starts with the same number of free
//! vectors, no exhaustion, no other devices, no vector moves.

use crate::topology::{CpuSet, Topology};

/// Free vectors per CPU at start: the 0x20..0xEB window minus one system vector. Only
/// differences between CPUs matter.
pub const VECTORS_AVAILABLE_START: u32 = 203;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EffectiveModel {
    X86Matrix,
    FirstCpu,
}

impl EffectiveModel {
    pub const ALL: [EffectiveModel; 2] = [EffectiveModel::X86Matrix, EffectiveModel::FirstCpu];

    pub fn name(self) -> &'static str {
        match self {
            EffectiveModel::X86Matrix => "x86-matrix",
            EffectiveModel::FirstCpu => "first-cpu",
        }
    }

    pub fn from_name(name: &str) -> Option<EffectiveModel> {
        EffectiveModel::ALL.into_iter().find(|m| m.name() == name)
    }

    pub fn describe(self) -> &'static str {
        match self {
            EffectiveModel::X86Matrix => "x86 vector matrix (kernel/irq/matrix.c)",
            EffectiveModel::FirstCpu => "first CPU of the mask (arm64 GIC guests)",
        }
    }
}

/// Per-CPU vector state (`struct cpumap` of the matrix), for online CPUs.
#[derive(Debug, Clone)]
pub struct VectorMatrix {
    model: EffectiveModel,
    online: CpuSet,
    available: Vec<u32>,
    managed_allocated: Vec<u32>,
}

impl VectorMatrix {
    pub fn new(topo: &Topology, model: EffectiveModel) -> VectorMatrix {
        let n = topo.nr_cpu_ids() as usize;
        VectorMatrix {
            model,
            online: topo.online().clone(),
            available: vec![VECTORS_AVAILABLE_START; n],
            managed_allocated: vec![0; n],
        }
    }

    /// `irq_matrix_reserve_managed()`: one managed slot on every CPU of the mask.
    pub fn reserve_managed(&mut self, mask: &CpuSet) {
        if self.model != EffectiveModel::X86Matrix {
            return;
        }
        for cpu in mask.iter().filter(|&c| self.online.contains(c)) {
            self.available[cpu as usize] = self.available[cpu as usize].saturating_sub(1);
        }
    }

    /// Activate a managed vector: `None` when no CPU of its mask is online (shut down).
    pub fn activate_managed(&mut self, mask: &CpuSet) -> Option<u32> {
        let target = mask.and(&self.online);
        match self.model {
            EffectiveModel::FirstCpu => target.first(),
            EffectiveModel::X86Matrix => {
                // matrix_find_best_cpu_managed(): scan ascending, keep the CPU with the fewest
                // managed allocations, replacing on equal counts (so ties go to the highest id).
                let mut best: Option<u32> = None;
                for cpu in target.iter() {
                    let alloc = self.managed_allocated[cpu as usize];
                    if best.is_none_or(|b| alloc <= self.managed_allocated[b as usize]) {
                        best = Some(cpu);
                    }
                }
                let cpu = best?;
                self.managed_allocated[cpu as usize] += 1;
                Some(cpu)
            }
        }
    }

    /// Activate a non-managed vector on its target mask (see `manage::irq_setup_affinity`).
    pub fn activate_non_managed(&mut self, target: &CpuSet) -> Option<u32> {
        match self.model {
            EffectiveModel::FirstCpu => target.first(),
            EffectiveModel::X86Matrix => {
                // matrix_find_best_cpu(): the most free vectors, replacing only on more (ties to
                // the lowest id).
                let mut best: Option<u32> = None;
                for cpu in target.iter().filter(|&c| self.online.contains(c)) {
                    if best.is_none_or(|b| self.available[cpu as usize] > self.available[b as usize]) {
                        best = Some(cpu);
                    }
                }
                let cpu = best?;
                self.available[cpu as usize] = self.available[cpu as usize].saturating_sub(1);
                Some(cpu)
            }
        }
    }

    /// Vectors in use on each CPU (`VECTORS_AVAILABLE_START - available`): managed
    /// reservations and non-managed allocations. Offline CPUs hold none. Always zero under
    /// [`EffectiveModel::FirstCpu`], which tracks no vectors.
    pub fn vector_load(&self) -> Vec<u32> {
        self.available
            .iter()
            .map(|&a| VECTORS_AVAILABLE_START - a.min(VECTORS_AVAILABLE_START))
            .collect()
    }

    /// Set the vectors in use per online CPU (after a driver that did its own allocation, like
    /// MANA, reports what it holds); no-op under [`EffectiveModel::FirstCpu`].
    pub fn set_vector_load(&mut self, load: &[u32]) {
        if self.model != EffectiveModel::X86Matrix {
            return;
        }
        for (cpu, &l) in load.iter().enumerate() {
            if self.online.contains(cpu as u32) {
                if let Some(a) = self.available.get_mut(cpu) {
                    *a = VECTORS_AVAILABLE_START.saturating_sub(l);
                }
            }
        }
    }
}
