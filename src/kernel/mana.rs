//! Model of the MANA driver's IRQ setup (drivers/net/ethernet/microsoft/mana/gdma_main.c) before and after "net: mana: Optimize irq affinity for low vcpu configs", plus the x86 non-managed vector choice with pre-existing per-CPU load (kernel/irq/matrix.c). Pure: no I/O, no serde.
//!
//! What this module owns: the order of events during MANA probe (vector
//! activation, the two mask-spreading routines, mask application) and the
//! per-CPU vector count that decides which CPU of a mask an IRQ lands on.
//! The rules are those of spec Part A (`shared/spec/mana-and-sched-numa.md`).
//!
//! What it refuses: anything not decided by the driver or the vector matrix
//! (interrupt rates, softirq time, managed IRQs of other devices beyond their
//! vector count). Other devices appear only as `initial_vector_load`.
//!
//! The entry points are [`run`] (one driver version) and [`run_both`].
//! Both validate the input once and return a [`ManaError`] instead of
//! panicking on bad input.

use crate::kernel::vector_matrix::matrix_find_best_cpu;
use crate::topology::CpuSet;
use std::collections::BTreeMap;
use std::fmt;

/// Queue limit of the static MSI-X path (`MANA_MAX_NUM_QUEUES`).
pub(crate) const MANA_MAX_NUM_QUEUES: u32 = 64;
/// Largest CPU count the model accepts: the topology's own limit (one set of limits).
pub(crate) const CPUS_MAX: usize = crate::topology::CPUS_MAX as usize;
/// Largest node count the model accepts: the topology's own limit.
pub(crate) const NODES_MAX: usize = crate::topology::NODES_MAX as usize;
/// Largest MSI-X table a PCI function can have.
pub(crate) const MSIX_MAX: u32 = 2048;
/// Largest pre-existing vector count per CPU the model accepts. Real x86
/// CPUs have about 200 allocatable vectors; the cap only keeps the
/// arithmetic far from overflow.
pub(crate) const VECTOR_LOAD_MAX: u32 = 1 << 20;

/// How the PCI host hands out MSI-X vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MsixMode {
    /// Dynamic MSI-X (`pci_msix_can_alloc_dyn()`): the HWC vector first,
    /// the queue vectors later. This is the path the seed patch changes.
    Dynamic,
    /// Static MSI-X: every vector is allocated and requested at once.
    Static,
}

/// Which driver the model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DriverVersion {
    /// Before "net: mana: Optimize irq affinity for low vcpu configs".
    Unpatched,
    /// After it.
    Patched,
}

impl DriverVersion {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            DriverVersion::Unpatched => "unpatched",
            DriverVersion::Patched => "patched",
        }
    }
}

/// The machine and device as MANA sees them at probe time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManaInput {
    /// NUMA node of each CPU (index = CPU id).
    pub(crate) cpu_node: Vec<u32>,
    /// Core id of each CPU; CPUs with equal core id are SMT siblings.
    pub cpu_core: Vec<u32>,
    /// Node distance matrix (SLIT), `n_nodes` × `n_nodes`.
    pub(crate) node_distance: Vec<Vec<u32>>,
    /// Node of the PCI device; `-1` is `NUMA_NO_NODE`.
    pub(crate) device_node: i32,
    pub(crate) mode: MsixMode,
    /// MSI-X vectors the device offers.
    pub(crate) max_msix: u32,
    /// Vectors already taken on each CPU before MANA probes.
    pub initial_vector_load: Vec<u32>,
    /// Online flag per CPU.
    pub online: Vec<bool>,
    /// The `irqaffinity=` mask; `None` means all CPUs.
    pub default_affinity: Option<Vec<u32>>,
}

impl ManaInput {
    /// An input with every CPU online and the default IRQ affinity left at
    /// all CPUs.
    pub fn all_online(
        cpu_node: Vec<u32>,
        cpu_core: Vec<u32>,
        node_distance: Vec<Vec<u32>>,
        device_node: i32,
        mode: MsixMode,
        max_msix: u32,
        initial_vector_load: Vec<u32>,
    ) -> ManaInput {
        let online = vec![true; cpu_node.len()];
        ManaInput {
            cpu_node,
            cpu_core,
            node_distance,
            device_node,
            mode,
            max_msix,
            initial_vector_load,
            online,
            default_affinity: None,
        }
    }
}

/// Invalid input, or a probe the driver would fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManaError {
    NoCpus,
    TooManyCpus {
        n_cpus: usize,
    },
    /// A per-CPU array does not have one entry per CPU.
    LengthMismatch {
        field: &'static str,
        expected: usize,
        got: usize,
    },
    NoNodes,
    TooManyNodes {
        n_nodes: usize,
    },
    /// `node_distance` is not square.
    DistanceNotSquare {
        row: usize,
        len: usize,
        n_nodes: usize,
    },
    CpuNodeOutOfRange {
        cpu: usize,
        node: u32,
        n_nodes: usize,
    },
    DeviceNodeOutOfRange {
        node: i32,
        n_nodes: usize,
    },
    DefaultAffinityOutOfRange {
        cpu: u32,
        n_cpus: usize,
    },
    NoOnlineCpus,
    MaxMsixTooLarge {
        max_msix: u32,
    },
    VectorLoadTooLarge {
        cpu: usize,
        load: u32,
    },
    /// Dynamic MSI-X: `num_msix_usable <= 1` makes `mana_gd_setup_irqs` fail.
    ProbeFailed {
        num_msix_usable: u32,
    },
    /// Static MSI-X: fewer than two vectors (HWC plus one queue).
    TooFewVectors {
        nvec: u32,
    },
}

impl fmt::Display for ManaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ManaError::NoCpus => write!(f, "no CPUs given"),
            ManaError::TooManyCpus { n_cpus } => {
                write!(f, "{n_cpus} CPUs given, at most {CPUS_MAX} are supported")
            }
            ManaError::LengthMismatch { field, expected, got } => {
                write!(f, "{field} has {got} entries, expected one per CPU ({expected})")
            }
            ManaError::NoNodes => write!(f, "node_distance is empty"),
            ManaError::TooManyNodes { n_nodes } => {
                write!(f, "{n_nodes} nodes given, at most {NODES_MAX} are supported")
            }
            ManaError::DistanceNotSquare { row, len, n_nodes } => write!(
                f,
                "node_distance row {row} has {len} entries, expected {n_nodes} (matrix must be square)"
            ),
            ManaError::CpuNodeOutOfRange { cpu, node, n_nodes } => {
                write!(f, "CPU {cpu} is on node {node}, but there are only {n_nodes} nodes")
            }
            ManaError::DeviceNodeOutOfRange { node, n_nodes } => {
                write!(f, "device_node {node} is neither -1 nor a node below {n_nodes}")
            }
            ManaError::DefaultAffinityOutOfRange { cpu, n_cpus } => {
                write!(f, "default_affinity names CPU {cpu}, but there are only {n_cpus} CPUs")
            }
            ManaError::NoOnlineCpus => write!(f, "no CPU is online"),
            ManaError::MaxMsixTooLarge { max_msix } => {
                write!(f, "max_msix {max_msix} exceeds the MSI-X limit of {MSIX_MAX}")
            }
            ManaError::VectorLoadTooLarge { cpu, load } => write!(
                f,
                "initial_vector_load of CPU {cpu} is {load}, at most {VECTOR_LOAD_MAX} is supported"
            ),
            ManaError::ProbeFailed { num_msix_usable } => write!(
                f,
                "probe fails: num_msix_usable = {num_msix_usable} leaves no vector for a queue"
            ),
            ManaError::TooFewVectors { nvec } => {
                write!(
                    f,
                    "probe fails: static MSI-X gives nvec = {nvec}, at least 2 are needed"
                )
            }
        }
    }
}

impl std::error::Error for ManaError {}

/// HWC (hardware channel, MSI-X index 0) or a queue IRQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IrqKind {
    Hwc,
    Queue,
}

impl IrqKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            IrqKind::Hwc => "hwc",
            IrqKind::Queue => "queue",
        }
    }
}

/// The routine that chose the queue IRQ masks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetupFn {
    /// `irq_setup()`, renamed `mana_irq_setup_numa_aware()` by the patch.
    NumaAware,
    /// `mana_irq_setup_linear()`, added by the patch.
    Linear,
}

impl SetupFn {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SetupFn::NumaAware => "numa_aware",
            SetupFn::Linear => "linear",
        }
    }
}

/// Which candidate set an activation took its CPU from (spec A.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ActivationSet {
    /// Online CPUs of the device node that are in the default affinity.
    NodeAndDefault,
    /// Online CPUs of the device node.
    Node,
    /// Online CPUs in the default affinity.
    Default,
    /// All online CPUs.
    AllOnline,
}

/// What happened to the vector an IRQ had before a move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OldVector {
    /// Still counted until setup ends (no interrupt arrived on the new one).
    LeftBehind,
    /// Released because an interrupt arrived on the new vector (the HWC in
    /// dynamic mode).
    Freed,
}

/// Result of applying a mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AffinityAction {
    /// The current CPU is online and in the mask: nothing changes.
    Kept,
    /// A new vector was taken on `to_cpu`.
    Moved { to_cpu: u32, old_vector: OldVector },
}

/// One event of MANA setup, in the order it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SetupStep {
    /// `request_irq()` bound the reserved vector to `cpu`.
    Activate {
        index: u32,
        kind: IrqKind,
        searched: ActivationSet,
        cpu: u32,
        /// `L[cpu]` after the vector was taken.
        load_after: u32,
    },
    /// A spread routine ran over IRQs `first_index..first_index + len`.
    Spread {
        setup_fn: SetupFn,
        first_index: u32,
        len: u32,
        skip_first_cpu: bool,
        /// The sibling mask the skip used up, if any.
        skipped_core: Option<Vec<u32>>,
    },
    /// `irq_set_affinity_and_hint()` with `mask`.
    SetAffinity {
        index: u32,
        kind: IrqKind,
        mask: Vec<u32>,
        from_cpu: u32,
        action: AffinityAction,
    },
}

/// Final placement of one IRQ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrqPlacement {
    pub(crate) index: u32,
    pub(crate) kind: IrqKind,
    /// Mask the driver set; `None` if it never set one ("default").
    pub affinity: Option<Vec<u32>>,
    /// CPU whose vector was taken at activation.
    pub(crate) request_cpu: u32,
    /// CPU the IRQ is delivered to after setup.
    pub effective_cpu: u32,
}

/// Where the vectors counted on one CPU at the end of setup come from.
/// `pre_existing + mana_held + left_behind` is the CPU's final load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuVectorLoad {
    /// Other devices' vectors (`initial_vector_load`).
    pub pre_existing: u32,
    /// MANA IRQs whose effective CPU this is.
    pub mana_held: u32,
    /// Old vectors of MANA IRQs that moved away and were not yet freed.
    pub left_behind: u32,
}

/// Everything one driver version does during probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManaOutcome {
    pub(crate) version: DriverVersion,
    /// Vectors in use, HWC included.
    pub num_msix_usable: u32,
    /// Queue IRQs (HWC excluded).
    pub(crate) queue_irq_count: u32,
    /// Whether the NUMA-aware spread skipped its first core.
    pub(crate) skip_first_cpu: bool,
    /// Which routine set the queue IRQ masks.
    pub setup_fn: SetupFn,
    /// One entry per IRQ in MSI-X index order; index 0 is the HWC.
    pub irqs: Vec<IrqPlacement>,
    pub effective_cpus: Vec<u32>,
    /// Queue IRQs (not the HWC) per effective CPU.
    pub(crate) queue_irqs_per_cpu: Vec<u32>,
    /// `L` at the end of setup, pre-existing load included.
    pub final_vector_load: Vec<u32>,
    /// Event log for a step-by-step view.
    pub(crate) steps: Vec<SetupStep>,
    /// Per-CPU split of `final_vector_load`.
    pub load_breakdown: Vec<CpuVectorLoad>,
}

/// Runs the unpatched and the patched driver on the same input.
pub fn run_both(input: &ManaInput) -> Result<(ManaOutcome, ManaOutcome), ManaError> {
    let machine = Machine::new(input)?;
    let unpatched = mana_gd_probe_irqs(&machine, DriverVersion::Unpatched)?;
    let patched = mana_gd_probe_irqs(&machine, DriverVersion::Patched)?;
    Ok((unpatched, patched))
}

/// Runs one driver version.
pub fn run(input: &ManaInput, version: DriverVersion) -> Result<ManaOutcome, ManaError> {
    let machine = Machine::new(input)?;
    mana_gd_probe_irqs(&machine, version)
}

// ---------------------------------------------------------------------------
// Validated machine

/// The validated input plus everything derived from it that does not change
/// during setup: online mask, sibling masks, activation candidates and the
/// hop walk from the device node.
struct Machine<'a> {
    input: &'a ManaInput,
    n_cpus: usize,
    online: CpuSet,
    n_online: u32,
    /// Online CPUs per core id, ascending: the sibling masks.
    core_members: BTreeMap<u32, Vec<u32>>,
    /// The candidate sets of an activation, in search order, each already
    /// restricted to online CPUs (spec A.2).
    activation_sets: Vec<(ActivationSet, Vec<u32>)>,
    /// Hop masks visited by `for_each_numa_hop_mask()` from the device node.
    hop_walk: Vec<CpuSet>,
}

/// The input's shape and limits: CPU and node counts, one entry a CPU in every
/// per-CPU field, a square `node_distance`, every `cpu_node` and the `device_node` in range,
/// `max_msix` and `initial_vector_load` within the model's bounds. Returns the CPU count.
fn check_input(input: &ManaInput) -> Result<usize, ManaError> {
    let n_cpus = input.cpu_node.len();
    if n_cpus == 0 {
        return Err(ManaError::NoCpus);
    }
    if n_cpus > CPUS_MAX {
        return Err(ManaError::TooManyCpus { n_cpus });
    }
    for (field, got) in [
        ("cpu_core", input.cpu_core.len()),
        ("initial_vector_load", input.initial_vector_load.len()),
        ("online", input.online.len()),
    ] {
        if got != n_cpus {
            return Err(ManaError::LengthMismatch {
                field,
                expected: n_cpus,
                got,
            });
        }
    }
    let n_nodes = input.node_distance.len();
    if n_nodes == 0 {
        return Err(ManaError::NoNodes);
    }
    if n_nodes > NODES_MAX {
        return Err(ManaError::TooManyNodes { n_nodes });
    }
    for (row, r) in input.node_distance.iter().enumerate() {
        if r.len() != n_nodes {
            return Err(ManaError::DistanceNotSquare {
                row,
                len: r.len(),
                n_nodes,
            });
        }
    }
    for (cpu, &node) in input.cpu_node.iter().enumerate() {
        if node as usize >= n_nodes {
            return Err(ManaError::CpuNodeOutOfRange { cpu, node, n_nodes });
        }
    }
    if input.device_node < -1 || input.device_node >= n_nodes as i32 {
        return Err(ManaError::DeviceNodeOutOfRange {
            node: input.device_node,
            n_nodes,
        });
    }
    if input.max_msix > MSIX_MAX {
        return Err(ManaError::MaxMsixTooLarge {
            max_msix: input.max_msix,
        });
    }
    for (cpu, &load) in input.initial_vector_load.iter().enumerate() {
        if load > VECTOR_LOAD_MAX {
            return Err(ManaError::VectorLoadTooLarge { cpu, load });
        }
    }
    Ok(n_cpus)
}

/// `irq_default_affinity` as a flag a CPU (`default_affinity`; every CPU when unset).
fn default_mask(input: &ManaInput, n_cpus: usize) -> Result<Vec<bool>, ManaError> {
    let mut in_default = vec![input.default_affinity.is_none(); n_cpus];
    if let Some(list) = &input.default_affinity {
        for &cpu in list {
            match in_default.get_mut(cpu as usize) {
                Some(flag) => *flag = true,
                None => return Err(ManaError::DefaultAffinityOutOfRange { cpu, n_cpus }),
            }
        }
    }
    Ok(in_default)
}

/// `assign_irq_vector_any_locked()`'s candidate sets in search order: the device node's CPUs
/// within the default mask, the device node, the default mask, then anything online.
fn activation_sets(input: &ManaInput, online_list: &[u32], in_default: &[bool]) -> Vec<(ActivationSet, Vec<u32>)> {
    let on_node = |cpu: &u32| input.device_node >= 0 && input.cpu_node[*cpu as usize] as i32 == input.device_node;
    let in_default_mask = |cpu: &u32| in_default[*cpu as usize];
    let mut activation_sets = Vec::with_capacity(4);
    if input.device_node >= 0 {
        activation_sets.push((
            ActivationSet::NodeAndDefault,
            online_list
                .iter()
                .copied()
                .filter(|c| on_node(c) && in_default_mask(c))
                .collect(),
        ));
        activation_sets.push((
            ActivationSet::Node,
            online_list.iter().copied().filter(on_node).collect(),
        ));
    }
    activation_sets.push((
        ActivationSet::Default,
        online_list.iter().copied().filter(in_default_mask).collect(),
    ));
    activation_sets.push((ActivationSet::AllOnline, online_list.to_vec()));
    activation_sets
}

/// The masks `for_each_numa_hop_mask()` visits from the device node: the online CPUs within
/// each distinct distance, nearest first; all online CPUs for `NUMA_NO_NODE`.
fn hop_walk(input: &ManaInput, online: &CpuSet, online_list: &[u32]) -> Vec<CpuSet> {
    let n_cpus = input.cpu_node.len();
    if input.device_node < 0 {
        // NUMA_NO_NODE: a single mask, all online CPUs.
        vec![online.clone()]
    } else {
        let dn = input.device_node as usize;
        let mut distinct: Vec<u32> = input.node_distance.iter().flatten().copied().collect();
        distinct.sort_unstable();
        distinct.dedup();
        distinct
            .iter()
            .map(|&hop_distance| {
                let mut m = CpuSet::new(n_cpus as u32);
                for &c in online_list {
                    let node = input.cpu_node[c as usize] as usize;
                    if input.node_distance[dn][node] <= hop_distance {
                        m.insert(c);
                    }
                }
                m
            })
            .collect()
    }
}

impl<'a> Machine<'a> {
    fn new(input: &'a ManaInput) -> Result<Machine<'a>, ManaError> {
        let n_cpus = check_input(input)?;
        let mut online = CpuSet::new(n_cpus as u32);
        for (cpu, &on) in input.online.iter().enumerate() {
            if on {
                online.insert(cpu as u32);
            }
        }
        let online_list: Vec<u32> = online.iter().collect();
        if online_list.is_empty() {
            return Err(ManaError::NoOnlineCpus);
        }
        let in_default = default_mask(input, n_cpus)?;
        let mut core_members: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for &cpu in &online_list {
            core_members.entry(input.cpu_core[cpu as usize]).or_default().push(cpu);
        }
        let activation_sets = activation_sets(input, &online_list, &in_default);
        let hop_walk = hop_walk(input, &online, &online_list);
        Ok(Machine {
            input,
            n_cpus,
            online,
            n_online: online_list.len() as u32,
            core_members,
            activation_sets,
            hop_walk,
        })
    }

    /// `topology_sibling_cpumask()`: online CPUs sharing `cpu`'s core id.
    fn siblings(&self, cpu: usize) -> &[u32] {
        self.input
            .cpu_core
            .get(cpu)
            .and_then(|core| self.core_members.get(core))
            .map_or(&[], |v| v.as_slice())
    }

    /// Lowest online CPU of the first non-empty hop mask.
    fn first_hop_cpu(&self) -> Option<u32> {
        self.hop_walk.iter().find_map(|h| h.first())
    }
}

// ---------------------------------------------------------------------------
// The x86 vector matrix (non-managed, reservation mode)

/// Per-CPU vector count `L` plus the bookkeeping for the load breakdown.
///
/// The MANA model counts the vectors each CPU holds and leaves the size of the vector space to
/// the scenario's matrix (`kernel::vector_matrix`): for the shared best-CPU scan it presents
/// each CPU's available count as [`MANA_VECTOR_SPACE`] minus its load, a space no valid input
/// fills, so the choice is "smallest `L`" exactly as before.
struct IrqMatrix {
    load: Vec<u32>,
    left_behind: Vec<u32>,
}

/// The vector space the MANA model's best-CPU scan counts availability from. Loads stay far
/// below it (`VECTOR_LOAD_MAX` plus two vectors per MSI-X entry).
const MANA_VECTOR_SPACE: u32 = u32::MAX;

impl IrqMatrix {
    fn new(initial: &[u32]) -> IrqMatrix {
        IrqMatrix {
            load: initial.to_vec(),
            left_behind: vec![0; initial.len()],
        }
    }

    /// `matrix_find_best_cpu()` over the online CPUs of `mask` (ascending): the most available
    /// vectors, i.e. the smallest `L`; ties go to the lower CPU.
    fn matrix_find_best_cpu(&self, mask: &[u32], online: &CpuSet) -> Option<usize> {
        matrix_find_best_cpu(mask.iter().copied(), |c| {
            online.contains(c).then(|| MANA_VECTOR_SPACE - self.load[c as usize])
        })
        .map(|c| c as usize)
    }

    fn take(&mut self, cpu: usize) {
        self.load[cpu] += 1;
    }
}

/// Setup state of one driver run.
struct Setup<'m, 'a> {
    machine: &'m Machine<'a>,
    matrix: IrqMatrix,
    request_cpu: Vec<u32>,
    effective_cpu: Vec<u32>,
    affinity: Vec<Option<Vec<u32>>>,
    steps: Vec<SetupStep>,
}

fn irq_kind(index: u32) -> IrqKind {
    if index == 0 {
        IrqKind::Hwc
    } else {
        IrqKind::Queue
    }
}

impl<'m, 'a> Setup<'m, 'a> {
    fn new(machine: &'m Machine<'a>) -> Setup<'m, 'a> {
        Setup {
            machine,
            matrix: IrqMatrix::new(&machine.input.initial_vector_load),
            request_cpu: Vec::new(),
            effective_cpu: Vec::new(),
            affinity: Vec::new(),
            steps: Vec::new(),
        }
    }

    /// `request_irq()` on a vector allocated in reservation mode: the real
    /// vector is bound now, while the IRQ's mask is still the default one.
    /// The first candidate set with an online CPU is searched.
    fn activate_reserved(&mut self, index: u32) {
        let m = self.machine;
        let chosen = m
            .activation_sets
            .iter()
            .find_map(|(set, cpus)| self.matrix.matrix_find_best_cpu(cpus, &m.online).map(|cpu| (*set, cpu)));
        // The last set holds every online CPU and the online set is not
        // empty (validated), so a CPU is always found.
        let (searched, cpu) = chosen.unwrap_or((ActivationSet::AllOnline, 0));
        self.matrix.take(cpu);
        debug_assert_eq!(self.request_cpu.len(), index as usize);
        self.request_cpu.push(cpu as u32);
        self.effective_cpu.push(cpu as u32);
        self.affinity.push(None);
        self.steps.push(SetupStep::Activate {
            index,
            kind: irq_kind(index),
            searched,
            cpu: cpu as u32,
            load_after: self.matrix.load[cpu],
        });
    }

    /// `irq_set_affinity_and_hint()` → `apic_set_affinity()`: keep the
    /// current vector if its CPU is online and in the mask, otherwise take
    /// a vector on the best CPU of the mask. `free_old` says whether the old
    /// vector is released before the next event (see spec A.2).
    fn apic_set_affinity(&mut self, index: u32, mask: &[u32], free_old: bool) {
        let idx = index as usize;
        let m = self.machine;
        let from = self.effective_cpu[idx] as usize;
        self.affinity[idx] = Some(mask.to_vec());
        let action = if m.online.contains(from as u32) && mask.contains(&(from as u32)) {
            AffinityAction::Kept
        } else {
            match self.matrix.matrix_find_best_cpu(mask, &m.online) {
                // Masks handed out by the spread routines always hold an
                // online CPU; an empty one would leave the IRQ where it is.
                None => AffinityAction::Kept,
                Some(to) => {
                    self.matrix.take(to);
                    self.effective_cpu[idx] = to as u32;
                    let old_vector = if free_old {
                        self.matrix.load[from] -= 1;
                        OldVector::Freed
                    } else {
                        self.matrix.left_behind[from] += 1;
                        OldVector::LeftBehind
                    };
                    AffinityAction::Moved {
                        to_cpu: to as u32,
                        old_vector,
                    }
                }
            }
        };
        self.steps.push(SetupStep::SetAffinity {
            index,
            kind: irq_kind(index),
            mask: mask.to_vec(),
            from_cpu: from as u32,
            action,
        });
    }

    /// Applies spread masks to IRQs `first_index..` in index order.
    fn apply_masks(&mut self, first_index: u32, masks: &[Vec<u32>], free_old: bool) {
        for (k, mask) in masks.iter().enumerate() {
            self.apic_set_affinity(first_index + k as u32, mask, free_old);
        }
    }

    fn finish(
        self,
        version: DriverVersion,
        num_msix_usable: u32,
        skip_first_cpu: bool,
        setup_fn: SetupFn,
    ) -> ManaOutcome {
        let n_cpus = self.machine.n_cpus;
        let irqs: Vec<IrqPlacement> = (0..self.request_cpu.len())
            .map(|i| IrqPlacement {
                index: i as u32,
                kind: irq_kind(i as u32),
                affinity: self.affinity[i].clone(),
                request_cpu: self.request_cpu[i],
                effective_cpu: self.effective_cpu[i],
            })
            .collect();
        let mut queue_irqs_per_cpu = vec![0u32; n_cpus];
        let mut held = vec![0u32; n_cpus];
        for irq in &irqs {
            held[irq.effective_cpu as usize] += 1;
            if irq.kind == IrqKind::Queue {
                queue_irqs_per_cpu[irq.effective_cpu as usize] += 1;
            }
        }
        let load_breakdown: Vec<CpuVectorLoad> = (0..n_cpus)
            .map(|c| CpuVectorLoad {
                pre_existing: self.machine.input.initial_vector_load[c],
                mana_held: held[c],
                left_behind: self.matrix.left_behind[c],
            })
            .collect();
        debug_assert!(load_breakdown
            .iter()
            .zip(&self.matrix.load)
            .all(|(b, &l)| b.pre_existing + b.mana_held + b.left_behind == l));
        ManaOutcome {
            version,
            num_msix_usable,
            queue_irq_count: num_msix_usable - 1,
            skip_first_cpu,
            setup_fn,
            effective_cpus: irqs.iter().map(|i| i.effective_cpu).collect(),
            irqs,
            queue_irqs_per_cpu,
            final_vector_load: self.matrix.load,
            steps: self.steps,
            load_breakdown,
        }
    }
}

// ---------------------------------------------------------------------------
// The two spread routines

/// `irq_setup()` (the patch renames it `mana_irq_setup_numa_aware()`): walk
/// the hop masks from the device node; in each hop, make passes over the
/// CPUs new to that hop, giving one IRQ per core per pass.
///
/// Returns the masks for the first IRQs (IRQs beyond the walk keep the
/// default mask, so the list may be shorter than `len`) and the sibling mask
/// the skip used up.
///
/// Why a pass gives one IRQ per core: after visiting CPU c, the pass removes
/// c's whole sibling mask from its working copy, so the next CPU it visits
/// is on another core. `weight` counts CPUs of the hop but drops by one per
/// visited core, so a hop with SMT-2 takes two passes and each core gets two
/// IRQs carrying the same sibling mask. The mask is the full sibling mask,
/// not clipped to the hop.
fn irq_setup(machine: &Machine<'_>, len: usize, mut skip_first_cpu: bool) -> (Vec<Vec<u32>>, Option<Vec<u32>>) {
    let mut masks: Vec<Vec<u32>> = Vec::with_capacity(len);
    let mut skipped = None;
    let mut prev = CpuSet::new(machine.n_cpus as u32);
    for hop in &machine.hop_walk {
        let fresh = hop.andnot(&prev);
        let mut weight = i64::from(fresh.weight());
        while weight > 0 {
            let mut cpus = fresh.clone();
            let mut cursor: i64 = -1;
            while let Some(cpu) = cpus.next(cursor) {
                cursor = i64::from(cpu);
                let sib = machine.siblings(cpu as usize);
                for &s in sib {
                    cpus.remove(s);
                }
                weight -= 1;
                if skip_first_cpu {
                    // The HWC already sits on this core.
                    skip_first_cpu = false;
                    skipped = Some(sib.to_vec());
                    continue;
                }
                if masks.len() == len {
                    return (masks, skipped);
                }
                masks.push(sib.to_vec());
            }
        }
        prev = hop.clone();
    }
    (masks, skipped)
}

/// `mana_irq_setup_linear()`: one online CPU per IRQ in ascending order,
/// node and core ignored. IRQs beyond the online count keep the default
/// mask.
fn mana_irq_setup_linear(machine: &Machine<'_>, len: usize) -> Vec<Vec<u32>> {
    machine.online.iter().take(len).map(|cpu| vec![cpu]).collect()
}

// ---------------------------------------------------------------------------
// Driver flows

/// Probe-time IRQ setup: `mana_gd_setup_hwc_irqs()`, then, with dynamic
/// MSI-X, `mana_gd_setup_remaining_irqs()` once the hardware channel has
/// reported `max_msix`.
fn mana_gd_probe_irqs(machine: &Machine<'_>, version: DriverVersion) -> Result<ManaOutcome, ManaError> {
    let mut setup = Setup::new(machine);
    let nvec = mana_gd_setup_hwc_irqs(&mut setup)?;
    match machine.input.mode {
        MsixMode::Dynamic => mana_gd_setup_remaining_irqs(setup, version),
        // The seed patch leaves the static path alone: both versions run
        // the same code, and every vector was set up with the HWC.
        MsixMode::Static => Ok(setup.finish(version, nvec, false, SetupFn::NumaAware)),
    }
}

/// `mana_gd_setup_hwc_irqs()`: with dynamic MSI-X only the HWC vector is
/// allocated now; without it, all `min(ncpu, MANA_MAX_NUM_QUEUES) + 1`
/// vectors (capped by the device) are. Either way `mana_gd_setup_irqs()`
/// sets them up. Returns the vector count.
fn mana_gd_setup_hwc_irqs(setup: &mut Setup<'_, '_>) -> Result<u32, ManaError> {
    let machine = setup.machine;
    let nvec = match machine.input.mode {
        MsixMode::Dynamic => 1,
        MsixMode::Static => {
            let nvec = (machine.n_online.min(MANA_MAX_NUM_QUEUES) + 1).min(machine.input.max_msix);
            // pci_alloc_irq_vectors() with min_vecs = 2: the HWC and a queue.
            if nvec < 2 {
                return Err(ManaError::TooFewVectors { nvec });
            }
            nvec
        }
    };
    mana_gd_setup_irqs(setup, nvec);
    Ok(nvec)
}

/// `mana_gd_setup_irqs()`: request every vector, then set the masks. With
/// more vectors than online CPUs the HWC gets a single-CPU mask (the first
/// CPU of the hop walk, as `cpumask_local_spread(0, node)` gives it) and the
/// spread covers the queues; otherwise the spread covers all vectors, HWC
/// included. In dynamic mode this runs for the HWC alone, whose interrupts
/// fire while the hardware channel is created: a moved HWC frees its old
/// vector before the queue IRQs are requested.
fn mana_gd_setup_irqs(setup: &mut Setup<'_, '_>, nvec: u32) {
    let machine = setup.machine;
    let free_old = machine.input.mode == MsixMode::Dynamic;
    for index in 0..nvec {
        setup.activate_reserved(index);
    }
    let first_index = if nvec > machine.n_online {
        if let Some(cpu) = machine.first_hop_cpu() {
            setup.apic_set_affinity(0, &[cpu], free_old);
        }
        1
    } else {
        0
    };
    let len = nvec - first_index;
    let (masks, _) = irq_setup(machine, len as usize, false);
    setup.steps.push(SetupStep::Spread {
        setup_fn: SetupFn::NumaAware,
        first_index,
        len,
        skip_first_cpu: false,
        skipped_core: None,
    });
    setup.apply_masks(first_index, &masks, free_old);
}

/// `mana_gd_setup_remaining_irqs()` (dynamic MSI-X only): allocate the
/// queue vectors 1..num_msix_usable-1 and set them up.
fn mana_gd_setup_remaining_irqs(mut setup: Setup<'_, '_>, version: DriverVersion) -> Result<ManaOutcome, ManaError> {
    // mana_gd_query_max_resources(): one vector per online CPU plus the HWC,
    // as far as the device allows.
    let num_msix_usable = setup.machine.input.max_msix.min(setup.machine.n_online + 1);
    if num_msix_usable <= 1 {
        return Err(ManaError::ProbeFailed { num_msix_usable });
    }
    let nvec = num_msix_usable - 1;
    let (skip_first_cpu, setup_fn) = mana_gd_setup_dyn_irqs(&mut setup, nvec, num_msix_usable, version);
    Ok(setup.finish(version, num_msix_usable, skip_first_cpu, setup_fn))
}

/// `mana_gd_setup_dyn_irqs()`: request the `nvec` queue IRQs (all of them
/// before any mask is set), then spread them. With no more vectors than
/// CPUs the first core is left to the HWC (`skip_first_cpu`). The patch
/// sends the other case, one queue IRQ per online CPU, to
/// `mana_irq_setup_linear()`. Returns (skip_first_cpu, routine used).
fn mana_gd_setup_dyn_irqs(
    setup: &mut Setup<'_, '_>,
    nvec: u32,
    num_msix_usable: u32,
    version: DriverVersion,
) -> (bool, SetupFn) {
    let machine = setup.machine;
    for index in 1..=nvec {
        setup.activate_reserved(index);
    }
    let skip = num_msix_usable <= machine.n_online;
    let (setup_fn, skip_first_cpu) = match version {
        DriverVersion::Unpatched => (SetupFn::NumaAware, skip),
        DriverVersion::Patched if skip => (SetupFn::NumaAware, true),
        DriverVersion::Patched => (SetupFn::Linear, false),
    };
    let (masks, skipped_core) = match setup_fn {
        SetupFn::NumaAware => irq_setup(machine, nvec as usize, skip_first_cpu),
        SetupFn::Linear => (mana_irq_setup_linear(machine, nvec as usize), None),
    };
    setup.steps.push(SetupStep::Spread {
        setup_fn,
        first_index: 1,
        len: nvec,
        skip_first_cpu,
        skipped_core,
    });
    setup.apply_masks(1, &masks, false);
    (skip_first_cpu, setup_fn)
}

/// Seed 001 machine: 4 vCPUs as 2 cores {0,1},{2,3}, one node, the device on node 0,
/// dynamic MSI-X with 64 vectors at most, `load` vectors already on each CPU (the tests'
/// common machine).
#[cfg(test)]
pub(crate) fn seed_4vcpu(load: [u32; 4]) -> ManaInput {
    ManaInput::all_online(
        vec![0; 4],
        vec![0, 0, 1, 1],
        vec![vec![10]],
        0,
        MsixMode::Dynamic,
        64,
        load.to_vec(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masks(o: &ManaOutcome) -> Vec<Option<Vec<u32>>> {
        o.irqs.iter().map(|i| i.affinity.clone()).collect()
    }

    #[test]
    fn seed_load_0111_reproduces_both_tables() {
        let (u, p) = run_both(&seed_4vcpu([0, 1, 1, 1])).unwrap();
        assert_eq!(u.effective_cpus, vec![0, 0, 2, 0, 3]);
        assert_eq!(p.effective_cpus, vec![0, 0, 1, 2, 3]);
        assert_eq!(u.setup_fn, SetupFn::NumaAware);
        assert!(!u.skip_first_cpu);
        assert_eq!(p.setup_fn, SetupFn::Linear);
        assert_eq!(u.queue_irqs_per_cpu, vec![2, 0, 1, 1]);
        assert_eq!(u.final_vector_load, vec![3, 2, 3, 2]);
        let s = |v: &[u32]| Some(v.to_vec());
        assert_eq!(
            masks(&u),
            vec![s(&[0, 1]), s(&[0, 1]), s(&[2, 3]), s(&[0, 1]), s(&[2, 3])]
        );
        assert_eq!(masks(&p), vec![s(&[0, 1]), s(&[0]), s(&[1]), s(&[2]), s(&[3])]);
        // q2 left its vector on CPU 1 and q3 left one on CPU 2.
        assert_eq!(
            u.load_breakdown[1],
            CpuVectorLoad {
                pre_existing: 1,
                mana_held: 0,
                left_behind: 1
            }
        );
        assert_eq!(
            u.load_breakdown[2],
            CpuVectorLoad {
                pre_existing: 1,
                mana_held: 1,
                left_behind: 1
            }
        );
    }

    #[test]
    fn seed_empty_machine_does_not_reproduce_unpatched_table() {
        let (u, p) = run_both(&seed_4vcpu([0, 0, 0, 0])).unwrap();
        assert_eq!(u.effective_cpus, vec![0, 1, 2, 1, 2]);
        assert_eq!(p.effective_cpus, vec![0, 0, 1, 2, 3]);
    }

    #[test]
    fn irqaffinity0_reproduces_unpatched_table() {
        let mut input = seed_4vcpu([0, 0, 0, 0]);
        input.default_affinity = Some(vec![0]);
        let (u, p) = run_both(&input).unwrap();
        assert!(u.irqs.iter().all(|i| i.request_cpu == 0));
        assert_eq!(u.effective_cpus, vec![0, 0, 2, 0, 3]);
        assert_eq!(p.effective_cpus, vec![0, 0, 1, 2, 3]);
        assert_eq!(u.final_vector_load, vec![5, 0, 1, 1]);
    }

    #[test]
    fn load_3300_moves_hwc_to_first_core() {
        let (u, _) = run_both(&seed_4vcpu([3, 3, 0, 0])).unwrap();
        assert_eq!(u.effective_cpus, vec![0, 1, 3, 0, 3]);
    }

    #[test]
    fn max_msix_limited_skips_first_core_in_both_versions() {
        let input = ManaInput::all_online(
            vec![0; 8],
            vec![0, 0, 1, 1, 2, 2, 3, 3],
            vec![vec![10]],
            0,
            MsixMode::Dynamic,
            4,
            vec![0; 8],
        );
        let (u, p) = run_both(&input).unwrap();
        assert!(u.skip_first_cpu && p.skip_first_cpu);
        assert_eq!(u.effective_cpus, vec![0, 2, 4, 6]);
        assert_eq!(u.irqs, p.irqs);
        assert!(matches!(
            u.steps.iter().find(|s| matches!(s, SetupStep::Spread { first_index: 1, .. })),
            Some(SetupStep::Spread { skipped_core: Some(c), .. }) if c == &vec![0, 1]
        ));
    }

    #[test]
    fn hwc_move_frees_old_vector_in_dynamic_mode() {
        let (u, _) = run_both(&seed_4vcpu([3, 3, 0, 0])).unwrap();
        let hwc_move = u.steps.iter().find_map(|s| match s {
            SetupStep::SetAffinity { index: 0, action, .. } => Some(*action),
            _ => None,
        });
        assert_eq!(
            hwc_move,
            Some(AffinityAction::Moved {
                to_cpu: 0,
                old_vector: OldVector::Freed
            })
        );
        assert_eq!(u.final_vector_load, vec![5, 4, 2, 2]);
    }

    #[test]
    fn static_mode_single_cpu_hwc_mask() {
        let mut input = seed_4vcpu([0, 1, 1, 1]);
        input.mode = MsixMode::Static;
        let (u, p) = run_both(&input).unwrap();
        assert_eq!(u.irqs[0].affinity, Some(vec![0]));
        assert_eq!(u.effective_cpus, vec![0, 0, 2, 0, 3]);
        assert_eq!(u.irqs, p.irqs);
    }

    #[test]
    fn errors_are_typed() {
        let mut input = seed_4vcpu([0; 4]);
        input.max_msix = 1;
        assert_eq!(
            run(&input, DriverVersion::Unpatched),
            Err(ManaError::ProbeFailed { num_msix_usable: 1 })
        );
        input.mode = MsixMode::Static;
        assert_eq!(
            run(&input, DriverVersion::Patched),
            Err(ManaError::TooFewVectors { nvec: 1 })
        );

        let mut input = seed_4vcpu([0; 4]);
        input.online = vec![false; 4];
        assert_eq!(run(&input, DriverVersion::Patched), Err(ManaError::NoOnlineCpus));

        let mut input = seed_4vcpu([0; 4]);
        input.cpu_core.pop();
        assert!(matches!(
            run_both(&input),
            Err(ManaError::LengthMismatch { field: "cpu_core", .. })
        ));

        let mut input = seed_4vcpu([0; 4]);
        input.device_node = 1;
        assert!(matches!(run_both(&input), Err(ManaError::DeviceNodeOutOfRange { .. })));

        let mut input = seed_4vcpu([0; 4]);
        input.cpu_node[3] = 2;
        assert!(matches!(
            run_both(&input),
            Err(ManaError::CpuNodeOutOfRange { cpu: 3, .. })
        ));

        let mut input = seed_4vcpu([0; 4]);
        input.node_distance = vec![vec![10, 20]];
        assert!(matches!(run_both(&input), Err(ManaError::DistanceNotSquare { .. })));

        let mut input = seed_4vcpu([0; 4]);
        input.default_affinity = Some(vec![7]);
        assert!(matches!(
            run_both(&input),
            Err(ManaError::DefaultAffinityOutOfRange { cpu: 7, .. })
        ));

        let input = ManaInput::all_online(vec![], vec![], vec![vec![10]], -1, MsixMode::Dynamic, 8, vec![]);
        assert_eq!(run_both(&input), Err(ManaError::NoCpus));
        assert!(!ManaError::NoCpus.to_string().is_empty());
    }
}
