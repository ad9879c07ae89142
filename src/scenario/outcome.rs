//! What [`run`] gives: per device its vectors (affinity mask, managed or not, effective CPU),
//! its blk-mq map and the spreading calls' offsets, the vectors the kernel refused and why,
//! and the vector space the devices left ([`VectorSpace`]).

use super::{try_run, Scenario};
use crate::kernel::mana::ManaOutcome;
use crate::kernel::vector_matrix::{CpuMap, EffectiveModel, MatrixError, VectorMatrix};
use crate::kernel::KernelWarn;
use crate::topology::CpuSet;

/// One vector of one device after the probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorOutcome {
    pub(crate) index: u32,
    /// The requested affinity mask (the default all-CPU mask where the kernel sets no other).
    pub mask: CpuSet,
    pub managed: bool,
    /// Where the vector fires; `None` for a managed vector with no online CPU (shut down).
    pub effective_cpu: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceOutcome {
    pub name: String,
    /// `irq_create_affinity_masks` returned NULL or was not used.
    pub(crate) affinity_null: bool,
    /// Counter values this device's affinity calls consumed, in call order.
    pub(crate) spread_offsets: Vec<u32>,
    pub vectors: Vec<VectorOutcome>,
    pub(crate) blk_mq_map: Option<Vec<Option<u32>>>,
    pub(crate) blk_mq_spread_offsets: Option<Vec<u32>>,
    /// NVMe: counter values its admin tag set's `blk_mq_map_queues()` consumed (empty unless
    /// one-group calls take one); `None` for a device without an admin tag set.
    pub(crate) admin_spread_offsets: Option<Vec<u32>>,
    pub(crate) warnings: Vec<KernelWarn>,
    /// The MANA model's whole account (steps, load breakdown) for a MANA device.
    pub mana: Option<ManaOutcome>,
    /// The allocation failed before any vector was taken (the device got none).
    pub alloc_failed: Option<AllocFailure>,
}

/// Why a device's whole MSI-X allocation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocFailure {
    /// `alloc_descs()` refused a descriptor with an empty affinity mask (`-EINVAL`), as the
    /// `numgrps` era of `irq_create_affinity_masks()` gives a set with more vectors than groups
    /// could be made, and `rotation-v1` near 2^32 inside `nummasks` (`kernel::irqdesc`).
    EmptyMask { vector: u32 },
}

impl std::fmt::Display for AllocFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AllocFailure::EmptyMask { vector } => write!(
                f,
                "MSI-X allocation fails with -EINVAL: alloc_descs() refuses vector {vector}, whose affinity mask is empty, and the vectors before it are freed (the PCI core then retries with {vector} vectors: not modelled)"
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub devices: Vec<DeviceOutcome>,
    pub(crate) spread_counter_after: u32,
    /// The x86 vector space after the probe, and where it ran out.
    pub vector_space: VectorSpace,
}

/// A vector the kernel could not give a device (`-ENOSPC`, or `-EINVAL` for an empty mask).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VectorFailure {
    pub(crate) device: String,
    pub(crate) vector: u32,
    pub(crate) managed: bool,
    /// Which kernel call refused: `alloc_descs()`, or a matrix call (for a reservation, on
    /// which CPU).
    pub(crate) error: VectorError,
}

/// Why a vector got none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum VectorError {
    /// `-EINVAL` from `alloc_descs()` (kernel/irq/irqdesc.c), which refuses an affinity
    /// descriptor with an empty mask before any vector is looked for, failing the allocation
    /// (the `numgrps` era past the groups made; `rotation-v1` near 2^32 inside `nummasks`).
    /// The device's whole allocation fails ([`AllocFailure`]). MSI-X descriptors are allocated
    /// one by one (`__msi_domain_alloc_irqs()`), so `msi_handle_pci_fail()` returns the count
    /// allocated before the failing one and `__pci_enable_msix_range()` retries with that many
    /// vectors, spreading them anew; the retry is not modelled.
    EmptyAffinity,
    /// The vector matrix refused (`-ENOSPC`, or `-EINVAL` for an empty search mask).
    Matrix(MatrixError),
}

impl VectorError {
    /// The kernel's error number, as a word.
    pub(crate) fn errno(&self) -> &'static str {
        match self {
            VectorError::EmptyAffinity | VectorError::Matrix(MatrixError::EmptyMask) => "EINVAL",
            VectorError::Matrix(_) => "ENOSPC",
        }
    }

    /// The CPU a managed reservation failed on.
    pub(crate) fn cpu(&self) -> Option<u32> {
        match self {
            VectorError::Matrix(MatrixError::ReserveManaged { cpu }) => Some(*cpu),
            _ => None,
        }
    }
}

impl std::fmt::Display for VectorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VectorError::EmptyAffinity => write!(
                f,
                "alloc_descs() refuses its empty affinity mask and the MSI-X allocation fails \
                 there; the PCI core then retries with as many vectors as were allocated before \
                 it (msi_handle_pci_fail(), __pci_enable_msix_range())"
            ),
            VectorError::Matrix(e) => e.fmt(f),
        }
    }
}

impl VectorFailure {
    /// "reservation" or "allocation".
    pub(crate) fn stage(&self) -> &'static str {
        match self.error {
            VectorError::Matrix(MatrixError::ReserveManaged { .. }) => "reservation",
            _ => "allocation",
        }
    }
}

/// The vector matrix after the probe (x86 model only; `tracked == false` under `first-cpu`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VectorSpace {
    pub(crate) tracked: bool,
    /// Vectors a device may hold on one CPU.
    pub(crate) capacity: u32,
    /// Per possible CPU (index = CPU id).
    pub(crate) per_cpu: Vec<CpuMap>,
    pub(crate) global_available: u32,
    pub(crate) global_reserved: u32,
    pub(crate) total_allocated: u32,
    /// Vectors that got none, in probe order; the first is the kernel's first failure.
    pub(crate) failures: Vec<VectorFailure>,
    /// Non-managed vectors placed outside their affinity mask because it was full (the
    /// kernel prints "Affinity broken due to vector space exhaustion").
    pub(crate) affinity_broken: Vec<(String, u32)>,
    /// The first non-managed allocation whose global reservation met `global_available`
    /// (`irq_matrix_reserve()` prints "Interrupt reservation exceeds available resources").
    pub(crate) reservation_exceeded: Option<(String, u32)>,
}

impl VectorSpace {
    pub(crate) fn first_failure(&self) -> Option<&VectorFailure> {
        self.failures.first()
    }
    /// The vectors the matrix refused: every failure but `alloc_descs()`'s, whose device's
    /// whole allocation failed and is told by its [`AllocFailure`].
    pub(crate) fn matrix_failures(&self) -> impl Iterator<Item = &VectorFailure> {
        self.failures
            .iter()
            .filter(|f| !matches!(f.error, VectorError::EmptyAffinity))
    }
    /// Whether the vector space ran out anywhere (a failure, a broken affinity or an
    /// over-reservation).
    pub(crate) fn exhausted(&self) -> bool {
        !self.failures.is_empty() || !self.affinity_broken.is_empty() || self.reservation_exceeded.is_some()
    }
}

impl Outcome {
    pub(crate) fn warnings(&self) -> impl Iterator<Item = (&str, &KernelWarn)> {
        self.devices
            .iter()
            .flat_map(|d| d.warnings.iter().map(move |w| (d.name.as_str(), w)))
    }
}

/// Probe every device in order and report where each vector landed.
///
/// Vector space (x86 model): before the first device the matrix holds `vectors_held`. For each
/// device, allocation (`x86_vector_alloc_irqs()`, index order) reserves a managed slot on every
/// CPU of each managed mask (`irq_matrix_reserve_managed()`) and makes a global reservation
/// for each non-managed vector (`irq_matrix_reserve()`); activation (index order) allocates the
/// real vector. A vector whose reservation or allocation fails gets no CPU and is recorded in
/// [`VectorSpace::failures`]; the devices go on as if the driver had ignored the error, which
/// the kernel does not promise (driver fallbacks are out of scope). A managed vector moved to
/// a housekeeping CPU (`isolcpus=managed_irq`) keeps its first vector until the device's probe
/// ends, then frees it (`irq_matrix_free()`, the reservation stays).
///
/// Under `arm64-its` allocation activates each vector on the least-loaded online CPU of the
/// machine (`its_irq_domain_activate()`), and the request moves it to the least-loaded CPU of
/// the mask the kernel programs (`its_set_affinity()`), releasing the first slot; the held
/// vectors count as other drivers' unmanaged LPIs.
///
/// For scenarios of named models only (what [`ScenarioSpec::resolve`] and
/// [`Scenario::new`] give): only outside code can fail, so every caller that may hold a `c:`
/// scenario (the pages, the CLI, sweeps, golden cases, live-vs-model) calls [`try_run`].
///
/// [`ScenarioSpec::resolve`]: super::spec::ScenarioSpec::resolve
pub fn run(scenario: &Scenario) -> Outcome {
    try_run(scenario).expect("a named model answers every call; c: variants run through try_run")
}

impl VectorSpace {
    pub(super) fn finish(mut self, matrix: &VectorMatrix) -> VectorSpace {
        let m = matrix.matrix();
        self.tracked = matrix.model() == EffectiveModel::X86Matrix;
        self.capacity = m.capacity();
        self.per_cpu = (0..m.nr_cpu_ids()).map(|c| m.cpu(c)).collect();
        self.global_available = m.global_available();
        self.global_reserved = m.global_reserved();
        self.total_allocated = m.total_allocated();
        self
    }
}
