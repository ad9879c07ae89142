//! Machine topology: CPU ids, SMT sibling sets, clusters, packages, NUMA nodes and their
//! distances, and the possible/present/online sets.
//!
//! Input arrives as a [`TopologySpec`] (the hand-writable file format, see `topologies/README.md`)
//! and is validated once by [`Topology::new`]. After that the fields are private and nothing
//! re-checks them: every possible CPU has exactly one node, one SMT sibling set (containing it,
//! inside its node) and at most one cluster; `present ⊆ possible`, `online ⊆ present`, CPU 0 is
//! present. This module reads no files and knows nothing of HTTP.

mod arch;
mod checks;
pub mod compact;
pub mod cpulist;
mod cpuset;
pub mod import;
pub(crate) mod rng;
pub(crate) mod spec;
mod view;

pub use arch::{Arch, Irqchip};
pub use cpulist::{format_cpulist, format_hex_mask, parse_cpulist, parse_hex_mask, CpulistError};
pub(crate) use cpuset::nth_bit;
pub use cpuset::CpuSet;
pub use spec::{ClusterShape, Generator, SmtNumbering, TopologySpec};
use view::{Drawing, MaskRule, Slot, View};

/// Highest number of CPU ids a topology may have (`nr_cpu_ids`).
pub const CPUS_MAX: u32 = 8192;
/// Highest number of NUMA node ids (`nr_node_ids`).
pub(crate) const NODES_MAX: u32 = 1024;
/// Longest topology name accepted.
pub(crate) const NAME_BYTES_MAX: usize = 200;
/// Longest note accepted.
pub(crate) const NOTE_BYTES_MAX: usize = 2000;

/// The kernel's `LOCAL_DISTANCE` and the default distance between two nodes.
pub(crate) const LOCAL_DISTANCE: u32 = 10;
pub(crate) const REMOTE_DISTANCE: u32 = 20;
/// Largest distance: the ACPI SLIT holds one byte per entry, and the kernel's `slit_valid`
/// (drivers/acpi/numa/srat.c) takes any value above `LOCAL_DISTANCE` off the diagonal.
///
/// The matrix may be asymmetric: `slit_valid` checks only the diagonal and the lower bound,
/// `acpi_numa_slit_init` stores entry (i, j) with `numa_set_distance(from, to, d)` as given, and
/// `node_read_distance` (drivers/base/node.c) prints row N of `nodeN/distance` as
/// `node_distance(N, i)` for each online node i. So `distances[a][b]` is `node_distance(a, b)`,
/// and every importer and exporter keeps the two directions apart.
pub(crate) const DISTANCE_MAX: u32 = 255;

const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    #[error("{field}: {source}")]
    Cpulist { field: String, source: CpulistError },
    #[error("{0}")]
    Invalid(String),
}

fn invalid(msg: impl Into<String>) -> TopologyError {
    TopologyError::Invalid(msg.into())
}

/// A validated machine topology. Build one with [`Topology::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    name: String,
    note: String,
    source: String,
    nr_cpu_ids: u32,
    nr_node_ids: u32,
    possible: CpuSet,
    present: CpuSet,
    online: CpuSet,
    cpu_node: Vec<u32>,
    cpu_package: Vec<u32>,
    cpu_smt: Vec<u32>,
    cpu_cluster: Vec<u32>,
    smt_sets: Vec<CpuSet>,
    cluster_sets: Vec<CpuSet>,
    package_sets: Vec<CpuSet>,
    node_cpus: Vec<CpuSet>,
    /// Per node, the words of its CPU set from the first to the last that holds a CPU (empty
    /// for a node without CPUs): a node's CPUs are usually a few words of a wide mask.
    node_words: Vec<std::ops::Range<usize>>,
    /// `node_distance` as a flat nr_node_ids² table, or `None` for the defaults (10 on the
    /// diagonal, 20 elsewhere): a machine with sparse high node ids and no SLIT costs nothing.
    distances: Option<Vec<u32>>,
    arch: Arch,
    irqchip: Irqchip,
    legacy_pic: Option<bool>,
    empty: CpuSet,
    /// The kernel's sibling and cluster masks, derived from the drawn sets ([`view`]).
    view: View,
    /// Drawn clusters that split a drawn SMT sibling set: (cluster index, SMT set index).
    splits: Vec<(u32, u32)>,
}

impl Topology {
    /// Validate a spec (explicit or generated) into a topology. The spec is the drawn machine;
    /// the kernel's masks follow from it by the rules of its architecture ([`view`]).
    pub fn new(spec: &TopologySpec) -> Result<Topology, TopologyError> {
        Topology::build(spec, None)
    }

    /// As [`Topology::new`], but the spec's SMT and cluster sets are the kernel's own masks for
    /// every possible CPU, online or not: golden vectors written before the golden topology
    /// carried `arch` give the masks the kernel C was run with, not a drawing to derive them
    /// from. Such a topology is not rebuilt exactly by [`Topology::to_spec`].
    pub fn with_masks_as_given(spec: &TopologySpec) -> Result<Topology, TopologyError> {
        Topology::build(spec, Some(MaskRule::AsGiven))
    }

    fn build(spec: &TopologySpec, rule: Option<MaskRule>) -> Result<Topology, TopologyError> {
        let spec = spec.to_explicit()?;
        checks::name_and_note(&spec)?;
        let nr_node_ids = checks::nr_node_ids(&spec)?;
        let checks::Nodes {
            mut node_cpus,
            possible,
            nr_cpu_ids,
        } = checks::nodes(&spec)?;
        node_cpus.resize(nr_node_ids as usize, CpuSet::new(nr_cpu_ids));
        let present = checks::present(&spec, &possible, nr_cpu_ids)?;
        let online = checks::online(&spec, &present, nr_cpu_ids)?;
        let cpu_node = checks::cpu_nodes(&node_cpus, nr_cpu_ids);
        let checks::Membership {
            of_cpu: cpu_smt,
            sets: smt_sets,
        } = checks::smt(&spec, &possible, &cpu_node, nr_cpu_ids)?;
        let checks::Membership {
            of_cpu: cpu_cluster,
            sets: cluster_sets,
        } = checks::clusters(&spec, &possible, nr_cpu_ids)?;
        let splits = checks::cluster_splits(&cluster_sets, &cpu_smt, &smt_sets);
        let checks::Membership {
            of_cpu: cpu_package,
            sets: package_sets,
        } = checks::packages(&spec, &possible, &node_cpus, nr_cpu_ids)?;
        let distances = checks::distances(&spec, nr_node_ids)?;
        let (arch, irqchip) = checks::arch_and_irqchip(&spec)?;

        let rule = rule.unwrap_or(MaskRule::Arch(arch));
        let view = View::build(
            &Drawing {
                nr_cpu_ids,
                possible: &possible,
                online: &online,
                cpu_smt: &cpu_smt,
                cpu_cluster: &cpu_cluster,
                cpu_package: &cpu_package,
                smt_sets: &smt_sets,
                cluster_sets: &cluster_sets,
                package_sets: &package_sets,
            },
            rule,
        );

        // Keep every stored set at the topology's width.
        let fit = |s: &CpuSet| s.resized(nr_cpu_ids);
        Ok(Topology {
            name: spec.name.clone(),
            note: spec.note.clone(),
            source: spec.source.clone(),
            nr_cpu_ids,
            nr_node_ids,
            possible: fit(&possible),
            present,
            online,
            cpu_node,
            cpu_package,
            cpu_smt,
            cpu_cluster,
            smt_sets,
            cluster_sets,
            package_sets,
            node_words: node_cpus.iter().map(|s| s.nonzero_words().unwrap_or(0..0)).collect(),
            node_cpus: node_cpus.iter().map(fit).collect(),
            distances,
            arch,
            irqchip,
            legacy_pic: spec.legacy_pic,
            empty: CpuSet::new(nr_cpu_ids),
            view,
            splits,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn note(&self) -> &str {
        &self.note
    }
    pub fn source(&self) -> &str {
        &self.source
    }
    pub fn nr_cpu_ids(&self) -> u32 {
        self.nr_cpu_ids
    }
    pub fn nr_node_ids(&self) -> u32 {
        self.nr_node_ids
    }
    pub fn possible(&self) -> &CpuSet {
        &self.possible
    }
    pub fn present(&self) -> &CpuSet {
        &self.present
    }
    pub fn online(&self) -> &CpuSet {
        &self.online
    }
    /// The instruction-set architecture.
    pub(crate) fn arch(&self) -> Arch {
        self.arch
    }
    /// The interrupt controller that delivers device MSIs.
    pub(crate) fn irqchip(&self) -> Irqchip {
        self.irqchip
    }
    /// Whether the machine has a legacy 8259 PIC, whose cascade vector the x86 kernel takes
    /// from every CPU's device vectors; `None` when the machine does not say.
    pub(crate) fn legacy_pic(&self) -> Option<bool> {
        self.legacy_pic
    }
    /// Node of a possible CPU (0 for ids that are not possible).
    pub fn cpu_to_node(&self, cpu: u32) -> u32 {
        self.cpu_node.get(cpu as usize).copied().unwrap_or(0)
    }
    pub(crate) fn cpu_to_package(&self, cpu: u32) -> u32 {
        self.cpu_package.get(cpu as usize).copied().unwrap_or(0)
    }
    /// Possible CPUs of a node (the kernel's `node_to_cpumask`); empty for memory-only nodes.
    pub fn node_cpus(&self, node: u32) -> &CpuSet {
        self.node_cpus.get(node as usize).unwrap_or(&self.empty)
    }
    /// The words of a node's CPU set that hold its CPUs, and the index of the first: word `i`
    /// of the slice is word `lo + i` of [`Topology::node_cpus`] (the words outside are zero).
    pub(crate) fn node_cpu_words(&self, node: u32) -> (usize, &[u64]) {
        match self.node_words.get(node as usize) {
            Some(w) => (w.start, &self.node_cpus[node as usize].words()[w.clone()]),
            None => (0, &[]),
        }
    }
    /// The kernel's SMT sibling mask of a CPU (`topology_sibling_cpumask`): the drawn sibling
    /// set restricted to online CPUs for an online CPU; for a CPU that is not online, empty on
    /// x86 and the CPU alone on arm64 ([`view`]). Empty for ids that are not possible. Every
    /// kernel model reads this, never the drawing.
    pub fn smt(&self, cpu: u32) -> &CpuSet {
        self.view_mask(self.view.sibling.get(cpu as usize).copied())
    }
    /// The kernel's cluster mask of a CPU (`topology_cluster_cpumask`), by the same rules as
    /// [`Topology::smt`]; empty for an online CPU drawn without a cluster.
    pub fn cluster(&self, cpu: u32) -> &CpuSet {
        self.view_mask(self.view.cluster.get(cpu as usize).copied())
    }
    fn view_mask(&self, slot: Option<Slot>) -> &CpuSet {
        match slot {
            None | Some(Slot::Empty) => &self.empty,
            Some(Slot::DrawnSmt(i)) => &self.smt_sets[i as usize],
            Some(Slot::DrawnCluster(i)) => &self.cluster_sets[i as usize],
            Some(Slot::Own(i)) => &self.view.own[i as usize],
        }
    }
    /// The drawn SMT sibling set of a possible CPU, itself included, whether or not the CPUs
    /// are online: for pictures, the editor and exports, never for a kernel model.
    pub fn drawn_smt(&self, cpu: u32) -> &CpuSet {
        match self.cpu_smt.get(cpu as usize) {
            Some(&i) if i != NONE => &self.smt_sets[i as usize],
            _ => &self.empty,
        }
    }
    /// The drawn cluster of a CPU; the empty set when it has none (see [`Topology::drawn_smt`]).
    pub fn drawn_cluster(&self, cpu: u32) -> &CpuSet {
        match self.cpu_cluster.get(cpu as usize) {
            Some(&i) if i != NONE => &self.cluster_sets[i as usize],
            _ => &self.empty,
        }
    }
    /// The drawn SMT sibling sets (every possible CPU in exactly one).
    pub fn drawn_smt_sets(&self) -> &[CpuSet] {
        &self.smt_sets
    }
    /// The drawn clusters.
    pub fn drawn_cluster_sets(&self) -> &[CpuSet] {
        &self.cluster_sets
    }
    /// Every set [`Topology::smt`] and [`Topology::cluster`] hand out: the drawn SMT sets,
    /// the drawn clusters, and the kernel view's own (masks restricted to online CPUs, a CPU
    /// alone), so that a caller can name a mask by where it lives.
    pub(crate) fn kernel_mask_sets(&self) -> [&[CpuSet]; 3] {
        [&self.smt_sets, &self.cluster_sets, &self.view.own]
    }
    /// Drawn clusters that split a drawn SMT sibling set, as (cluster, sibling set) in the
    /// clusters' order: the kernel accepts them ("BUG: arch topology borken" from
    /// `build_sched_domain()`, no mask changed), and the pages warn.
    pub(crate) fn cluster_splits(&self) -> impl Iterator<Item = (&CpuSet, &CpuSet)> + '_ {
        self.splits
            .iter()
            .map(|&(c, s)| (&self.cluster_sets[c as usize], &self.smt_sets[s as usize]))
    }
    /// One sentence naming the drawn clusters that split an SMT sibling set (at most
    /// [`SPLITS_NAMED_MAX`] named, the rest counted), or `None` when no cluster does.
    pub(crate) fn cluster_split_warning(&self) -> Option<String> {
        if self.splits.is_empty() {
            return None;
        }
        let mut named: Vec<String> = self
            .cluster_splits()
            .take(SPLITS_NAMED_MAX)
            .map(|(c, s)| format!("cluster {} splits SMT siblings {}", cut_cpulist(c), cut_cpulist(s)))
            .collect();
        if self.splits.len() > SPLITS_NAMED_MAX {
            named.push(format!("{} more splits", self.splits.len() - SPLITS_NAMED_MAX));
        }
        Some(format!(
            "{}: the kernel accepts this (build_sched_domain() prints \"BUG: arch topology borken\") \
             and keeps both masks as the firmware gave them",
            named.join("; ")
        ))
    }
    /// Possible CPUs whose kernel masks ([`Topology::smt`], [`Topology::cluster`]) differ from
    /// their drawn sets, as (CPUs that are not online, online CPUs). The cluster mask of an
    /// online CPU drawn without a cluster is [`Topology::unclustered`]'s to tell.
    pub(crate) fn view_differs(&self) -> (CpuSet, CpuSet) {
        let mut down = CpuSet::new(self.nr_cpu_ids);
        let mut up = CpuSet::new(self.nr_cpu_ids);
        for cpu in self.possible.iter() {
            let drawn_cluster = self.drawn_cluster(cpu);
            let online_unclustered = drawn_cluster.is_empty() && self.online.contains(cpu);
            let cluster_differs = !online_unclustered && self.cluster(cpu) != drawn_cluster;
            if self.smt(cpu) != self.drawn_smt(cpu) || cluster_differs {
                if self.online.contains(cpu) {
                    up.insert(cpu);
                } else {
                    down.insert(cpu);
                }
            }
        }
        (down, up)
    }
    /// Online CPUs drawn without a cluster whose kernel cluster mask the architecture filled:
    /// x86's SMT siblings, arm64's CPU alone (`view.rs`). Empty for golden masks taken as
    /// given.
    pub fn unclustered(&self) -> CpuSet {
        let mut set = CpuSet::new(self.nr_cpu_ids);
        for cpu in self.online.iter() {
            if self.drawn_cluster(cpu).is_empty() && !self.cluster(cpu).is_empty() {
                set.insert(cpu);
            }
        }
        set
    }
    pub fn package_sets(&self) -> &[CpuSet] {
        &self.package_sets
    }
    /// `node_distance(a, b)`.
    pub fn distance(&self, a: u32, b: u32) -> u32 {
        let n = self.nr_node_ids as usize;
        match &self.distances {
            Some(table) => table
                .get(a as usize * n + b as usize)
                .copied()
                .unwrap_or(REMOTE_DISTANCE),
            None if a == b && a < self.nr_node_ids => LOCAL_DISTANCE,
            None => REMOTE_DISTANCE,
        }
    }
    /// Highest number of SMT threads in one drawn core.
    pub(crate) fn threads_per_core_max(&self) -> u32 {
        self.smt_sets.iter().map(CpuSet::weight).max().unwrap_or(1)
    }
    /// Node ids that have at least one possible CPU.
    pub fn nodes_with_cpus(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.nr_node_ids).filter(|&n| !self.node_cpus(n).is_empty())
    }

    /// One line describing the shape, e.g. `96 CPUs (0-95), 2 nodes, SMT2, 48 clusters`.
    pub fn summary(&self) -> String {
        let n_possible = self.possible.weight();
        let mut out = format!("{n_possible} CPUs ({})", self.possible);
        let nodes_used = self.nodes_with_cpus().count();
        out.push_str(&format!(
            ", {} node{}",
            self.nr_node_ids,
            plural(self.nr_node_ids as usize)
        ));
        if nodes_used as u32 != self.nr_node_ids {
            out.push_str(&format!(" ({nodes_used} with CPUs)"));
        }
        let smt = self.threads_per_core_max();
        if smt > 1 {
            out.push_str(&format!(", SMT{smt}"));
        }
        if !self.cluster_sets.is_empty() {
            out.push_str(&format!(
                ", {} cluster{}",
                self.cluster_sets.len(),
                plural(self.cluster_sets.len())
            ));
        }
        let absent = self.possible.andnot(&self.present);
        if !absent.is_empty() {
            out.push_str(&format!(", not present {absent}"));
        }
        let offline = self.present.andnot(&self.online);
        if !offline.is_empty() {
            out.push_str(&format!(", offline {offline}"));
        }
        out
    }

    /// This drawn machine as a kernel brought it up: the same machine with `online` as the
    /// kernel reports it (a capture's `cpu/online`), so boot parameters such as `nosmt` or
    /// `maxcpus=` come from the kernel while the sibling and cluster sets come from the
    /// drawing. `kernel` (the machine the kernel reported) must have the same possible and
    /// present CPUs on the same nodes; the first difference is the error.
    pub(crate) fn booted_as(&self, kernel: &Topology) -> Result<Topology, TopologyError> {
        if self.possible != kernel.possible {
            return Err(invalid(format!(
                "possible CPUs: the drawing has {}, the kernel {}",
                self.possible, kernel.possible
            )));
        }
        if self.present != kernel.present {
            return Err(invalid(format!(
                "present CPUs: the drawing has {}, the kernel {}",
                self.present, kernel.present
            )));
        }
        if let Some(cpu) = self
            .possible
            .iter()
            .find(|&c| self.cpu_to_node(c) != kernel.cpu_to_node(c))
        {
            return Err(invalid(format!(
                "CPU {cpu}: node {} in the drawing, node {} in the kernel",
                self.cpu_to_node(cpu),
                kernel.cpu_to_node(cpu)
            )));
        }
        let mut spec = self.to_spec();
        spec.online = (kernel.online != kernel.present).then(|| kernel.online.to_cpulist());
        Topology::new(&spec)
    }

    /// The explicit spec that rebuilds this topology exactly.
    pub fn to_spec(&self) -> TopologySpec {
        let n = self.nr_node_ids as usize;
        let default_packages = self
            .package_sets
            .iter()
            .eq(self.node_cpus.iter().filter(|s| !s.is_empty()));
        TopologySpec {
            name: self.name.clone(),
            note: self.note.clone(),
            source: self.source.clone(),
            nr_cpu_ids: None,
            nr_node_ids: if self.node_cpus.last().is_some_and(CpuSet::is_empty) {
                Some(self.nr_node_ids)
            } else {
                None
            },
            nodes: Some(
                self.node_cpus
                    .iter()
                    .rev()
                    .skip_while(|s| s.is_empty())
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .map(CpuSet::to_cpulist)
                    .collect(),
            ),
            smt: self
                .smt_sets
                .iter()
                .filter(|s| s.weight() > 1)
                .map(CpuSet::to_cpulist)
                .collect(),
            clusters: self.cluster_sets.iter().map(CpuSet::to_cpulist).collect(),
            packages: if default_packages {
                Vec::new()
            } else {
                self.package_sets.iter().map(CpuSet::to_cpulist).collect()
            },
            present: (self.present != self.possible).then(|| self.present.to_cpulist()),
            online: (self.online != self.present).then(|| self.online.to_cpulist()),
            distances: self
                .distances
                .as_ref()
                .map(|d| d.chunks(n).map(<[u32]>::to_vec).collect()),
            generate: None,
            arch: (self.arch != Arch::default()).then_some(self.arch),
            irqchip: (self.irqchip != self.arch.default_irqchip()).then_some(self.irqchip),
            legacy_pic: self.legacy_pic,
        }
    }
}

/// How many cluster splits [`Topology::cluster_split_warning`] names.
pub(crate) const SPLITS_NAMED_MAX: usize = 3;
/// A cpulist in a sentence is cut after this many characters ([`cut_cpulist`]).
pub(crate) const SENTENCE_LIST_CHARS_MAX: usize = 40;

/// A cpulist for a sentence: whole when it is at most [`SENTENCE_LIST_CHARS_MAX`] characters,
/// otherwise cut at a range with the CPU count, "1,3,5,7,9,… (4096 CPUs)".
pub(crate) fn cut_cpulist(cpus: &CpuSet) -> String {
    let full = cpus.to_cpulist();
    if full.len() <= SENTENCE_LIST_CHARS_MAX {
        return full;
    }
    let mut shown = String::new();
    for range in full.split(',') {
        if shown.len() + range.len() + 1 > SENTENCE_LIST_CHARS_MAX {
            break;
        }
        shown.push_str(range);
        shown.push(',');
    }
    format!("{shown}… ({} CPUs)", cpus.weight())
}

pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(toml_text: &str) -> TopologySpec {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn explicit_topology() {
        let t = Topology::new(&spec(
            r#"
            name = "t"
            nodes = ["0-3", "4-7", ""]
            smt = ["0-1", "2-3", "4-5", "6-7"]
            clusters = ["0-3", "4-7"]
            present = "0-6"
            distances = [[10, 20, 30], [20, 10, 30], [30, 30, 10]]
            "#,
        ))
        .unwrap();
        assert_eq!(t.nr_cpu_ids(), 8);
        assert_eq!(t.nr_node_ids(), 3);
        assert_eq!(t.smt(5).to_cpulist(), "4-5");
        assert_eq!(t.drawn_cluster(6).to_cpulist(), "4-7");
        // CPU 7 is not present: the kernel (x86) has not linked it.
        assert_eq!(t.cluster(6).to_cpulist(), "4-6");
        assert!(t.smt(7).is_empty());
        assert_eq!(t.node_cpus(2).weight(), 0);
        assert_eq!(t.present().to_cpulist(), "0-6");
        assert_eq!(t.distance(0, 2), 30);
        assert_eq!(Topology::new(&t.to_spec()).unwrap(), t);
    }

    #[test]
    fn rejects_inconsistent_input() {
        let cases = [
            (
                r#"name="x"
nodes=["0-3","3-5"]"#,
                "CPU 3 is already in node 0",
            ),
            (
                r#"name="x"
nodes=["0-3","4-7"]
smt=["3-4"]"#,
                "different nodes",
            ),
            (
                r#"name="x"
nodes=["0-3"]
present="1-3""#,
                "CPU 0 must be present",
            ),
            (
                r#"name="x"
nodes=["0-3","4-5"]
distances=[[10,20]]"#,
                "1 rows for 2 nodes",
            ),
            (
                r#"name="x"
nodes=["0-3","4-5"]
distances=[[10,20],[20,11]]"#,
                "itself is 10",
            ),
            (
                r#"name="x"
nodes=["0-9000"]"#,
                "beyond the last CPU id",
            ),
            (
                r#"name="x"
nodes=["0-3"]
clusters=["0-1","1-2"]"#,
                "already in another cluster",
            ),
            (
                r#"name="x"
nodes=["0-3"]
online="0-4""#,
                "beyond the last CPU id",
            ),
            (
                r#"name="x"
nodes=["0-3","4-5"]
distances=[[10,256],[20,10]]"#,
                "distances[0][1]: 256 is outside 11..255",
            ),
        ];
        for (text, want) in cases {
            let err = Topology::new(&spec(text)).unwrap_err().to_string();
            assert!(err.contains(want), "{text}: got {err:?}, want {want:?}");
        }
    }

    #[test]
    fn clusters_holding_whole_sibling_sets_are_accepted() {
        // A cluster of two SMT pairs, and CPUs outside any cluster.
        let t = Topology::new(&spec(
            r#"
            name = "t"
            nodes = ["0-5"]
            smt = ["0-1", "2-3", "4-5"]
            clusters = ["0-3"]
            "#,
        ))
        .unwrap();
        assert_eq!(t.cluster(3).to_cpulist(), "0-3");
        // Outside any drawn cluster: x86's L2 group is the SMT siblings.
        assert_eq!(t.cluster(4).to_cpulist(), "4-5");
        assert_eq!(t.unclustered().to_cpulist(), "4-5");
    }

    /// The kernel accepts a cluster that splits an SMT sibling set (`build_sched_domain()`
    /// only prints "BUG: arch topology borken"): the machine validates, both masks stay as
    /// drawn, and each split is recorded once, in the clusters' order.
    #[test]
    fn clusters_splitting_sibling_sets_are_accepted_and_recorded() {
        let t = Topology::new(&spec(
            r#"
            name = "t"
            nodes = ["0-5"]
            smt = ["0-1", "2-3", "4-5"]
            clusters = ["0", "1-2", "3"]
            "#,
        ))
        .unwrap();
        assert_eq!(t.smt(1).to_cpulist(), "0-1");
        assert_eq!(t.cluster(1).to_cpulist(), "1-2");
        assert_eq!(t.cluster(4).to_cpulist(), "4-5");
        let splits: Vec<String> = t.cluster_splits().map(|(c, s)| format!("{c}/{s}")).collect();
        assert_eq!(splits, ["0/0-1", "1-2/0-1", "1-2/2-3", "3/2-3"]);
        assert_eq!(Topology::new(&t.to_spec()).unwrap(), t);
        // Interleaved numbering split by consecutive clusters.
        let o = Topology::new(&spec(
            "name = \"o\"\nnodes = [\"0-3\"]\nsmt = [\"0,2\", \"1,3\"]\nclusters = [\"0-1\", \"2-3\"]\n",
        ))
        .unwrap();
        let splits: Vec<String> = o.cluster_splits().map(|(c, s)| format!("{c}/{s}")).collect();
        assert_eq!(splits, ["0-1/0,2", "0-1/1,3", "2-3/0,2", "2-3/1,3"]);
        // Whole sibling sets in a cluster are no split.
        let w = Topology::new(&spec(
            "name = \"w\"\nnodes = [\"0-3\"]\nsmt = [\"0-1\", \"2-3\"]\nclusters = [\"0-3\"]\n",
        ))
        .unwrap();
        assert_eq!(w.cluster_splits().count(), 0);
    }

    fn masks(t: &Topology) -> Vec<String> {
        t.possible()
            .iter()
            .map(|c| format!("{c}:{}/{}", t.smt(c), t.cluster(c)))
            .collect()
    }

    /// x86 (arch/x86/kernel/smpboot.c): `set_cpu_sibling_map()` links only CPUs that came up,
    /// `remove_siblinginfo()` empties an offlined CPU's masks and takes it out of its
    /// siblings'; a CPU never brought up keeps zeroed masks.
    #[test]
    fn x86_offline_and_never_present_cpus_have_empty_masks() {
        let t = Topology::new(&spec(
            r#"
            name = "t"
            nodes = ["0-7", "8-11"]
            smt = ["0-1", "2-3", "4-5", "6-7", "8-9", "10-11"]
            clusters = ["0-3", "4-7", "8-11"]
            present = "0-9"
            online = "0,2-5,8"
            "#,
        ))
        .unwrap();
        assert_eq!(
            masks(&t),
            [
                "0:0/0,2-3",
                "1:/",
                "2:2-3/0,2-3",
                "3:2-3/0,2-3",
                "4:4-5/4-5",
                "5:4-5/4-5",
                "6:/",
                "7:/",
                "8:8/8",
                "9:/",
                "10:/",
                "11:/"
            ]
        );
        // The drawing is unchanged.
        assert_eq!(t.drawn_smt(1).to_cpulist(), "0-1");
        assert_eq!(t.drawn_cluster(6).to_cpulist(), "4-7");
        let (down, up) = t.view_differs();
        assert_eq!(
            (down.to_cpulist().as_str(), up.to_cpulist().as_str()),
            ("1,6-7,9-11", "0,2-5,8")
        );
        assert_eq!(Topology::new(&t.to_spec()).unwrap(), t);
    }

    /// arm64 (drivers/base/arch_topology.c): `reset_cpu_topology()` and
    /// `remove_cpu_topology()` leave a CPU that is not online with both masks `{cpu}`;
    /// `update_siblings_masks()` links online CPUs only.
    #[test]
    fn arm64_cpus_not_online_see_themselves_alone() {
        let t = Topology::new(&spec(
            r#"
            name = "t"
            arch = "arm64"
            nodes = ["0-7"]
            smt = ["0-1", "2-3"]
            clusters = ["0-3", "4-5"]
            present = "0-6"
            online = "0,2-4"
            "#,
        ))
        .unwrap();
        assert_eq!(
            masks(&t),
            [
                "0:0/0,2-3",
                "1:1/1",
                "2:2-3/0,2-3",
                "3:2-3/0,2-3",
                "4:4/4",
                "5:5/5",
                "6:6/6",
                "7:7/7"
            ]
        );
        // CPU 6 is alone in the drawing too (no cluster drawn): only its cluster mask differs.
        let (down, up) = t.view_differs();
        assert_eq!(
            (down.to_cpulist().as_str(), up.to_cpulist().as_str()),
            ("1,5-7", "0,2-4")
        );
    }

    /// arm64 `update_siblings_masks()` compares the package, then the cluster, then the core:
    /// SMT siblings in another cluster (or one with a cluster, one without) are never linked,
    /// and a cluster holds only CPUs of the CPU's package. x86 links them as drawn.
    #[test]
    fn arm64_links_threads_only_inside_their_cluster_and_package() {
        let text = |arch: &str| {
            spec(&format!(
                r#"
            name = "t"
            arch = "{arch}"
            nodes = ["0-7"]
            smt = ["0-1", "2-3", "4-5", "6-7"]
            clusters = ["0", "1-2", "3", "6-7"]
            packages = ["0-3", "4-5", "6", "7"]
            "#
            ))
        };
        let arm = Topology::new(&text("arm64")).unwrap();
        assert_eq!(
            masks(&arm),
            ["0:0/0", "1:1/1-2", "2:2/1-2", "3:3/3", "4:4-5/4", "5:4-5/5", "6:6/6", "7:7/7"]
        );
        let x86 = Topology::new(&text("x86_64")).unwrap();
        assert_eq!(
            masks(&x86),
            [
                "0:0-1/0",
                "1:0-1/1-2",
                "2:2-3/1-2",
                "3:2-3/3",
                "4:4-5/4-5",
                "5:4-5/4-5",
                "6:6-7/6-7",
                "7:6-7/6-7"
            ]
        );
        // The splits are the drawing's, the same on both.
        assert_eq!(arm.cluster_splits().count(), 4);
        assert_eq!(x86.cluster_splits().count(), 4);
    }

    /// All online: the view is the drawing, shared rather than copied.
    #[test]
    fn all_online_the_view_is_the_drawing() {
        for arch in ["x86_64", "arm64"] {
            let t = Topology::new(&spec(&format!(
                "name = \"t\"\narch = \"{arch}\"\nnodes = [\"0-3\"]\nsmt = [\"0-1\"]\nclusters = [\"0-2\"]\n"
            )))
            .unwrap();
            for c in 0..3 {
                assert!(std::ptr::eq(t.smt(c), t.drawn_smt(c)), "{arch} {c}");
                assert_eq!(t.cluster(c), t.drawn_cluster(c), "{arch} {c}");
            }
            // CPU 3, drawn without a cluster, alone in its core: its cluster mask is its own
            // SMT set on both, shared rather than copied.
            assert!(std::ptr::eq(t.cluster(3), t.drawn_smt(3)), "{arch}");
            assert!(t.view.own.is_empty());
            let (down, up) = t.view_differs();
            assert!(down.is_empty() && up.is_empty());
        }
    }

    /// Masks as given (golden vectors of the kernel C run with explicit masks): nothing derived.
    #[test]
    fn masks_as_given_keep_the_drawn_sets_of_cpus_not_online() {
        let text = r#"
            name = "t"
            nodes = ["0-3"]
            smt = ["0-1", "2-3"]
            present = "0-2"
            online = "0"
            "#;
        let t = Topology::with_masks_as_given(&spec(text)).unwrap();
        assert_eq!(masks(&t), ["0:0-1/", "1:0-1/", "2:2-3/", "3:2-3/"]);
        assert_ne!(Topology::new(&spec(text)).unwrap(), t);
    }

    /// A drawn machine as the kernel brought it up: online from the kernel, sets drawn.
    #[test]
    fn booted_as_takes_online_from_the_kernel() {
        let drawn = Topology::new(&spec("name = \"d\"\nnodes = [\"0-3\"]\nsmt = [\"0-1\", \"2-3\"]\n")).unwrap();
        let kernel = Topology::new(&spec("name = \"k\"\nnodes = [\"0-3\"]\nonline = \"0,2\"\n")).unwrap();
        let booted = drawn.booted_as(&kernel).unwrap();
        assert_eq!(booted.online().to_cpulist(), "0,2");
        assert_eq!(booted.drawn_smt(1).to_cpulist(), "0-1");
        assert!(booted.smt(1).is_empty());
        let other = Topology::new(&spec("name = \"o\"\nnodes = [\"0-1\", \"2-3\"]\n")).unwrap();
        assert_eq!(
            drawn.booted_as(&other).unwrap_err().to_string(),
            "CPU 2: node 0 in the drawing, node 1 in the kernel"
        );
        let small = Topology::new(&spec("name = \"s\"\nnodes = [\"0-1\"]\n")).unwrap();
        assert_eq!(
            drawn.booted_as(&small).unwrap_err().to_string(),
            "possible CPUs: the drawing has 0-3, the kernel 0-1"
        );
    }

    #[test]
    fn architecture_and_controller_are_facts_of_the_file() {
        let x86 = Topology::new(&spec("name = \"t\"\nnodes = [\"0-3\"]\n")).unwrap();
        assert_eq!((x86.arch(), x86.irqchip()), (Arch::X86_64, Irqchip::Apic));
        assert_eq!((x86.to_spec().arch, x86.to_spec().irqchip), (None, None));
        let its = Topology::new(&spec("name = \"t\"\nnodes = [\"0-3\"]\narch = \"arm64\"\n")).unwrap();
        assert_eq!((its.arch(), its.irqchip()), (Arch::Arm64, Irqchip::GicIts));
        assert_eq!(Topology::new(&its.to_spec()).unwrap(), its);
        // A controller alone names its architecture.
        let spi = Topology::new(&spec("name = \"t\"\nnodes = [\"0-3\"]\nirqchip = \"gic-spi\"\n")).unwrap();
        assert_eq!((spi.arch(), spi.irqchip()), (Arch::Arm64, Irqchip::GicSpi));
        let back = spi.to_spec();
        assert_eq!((back.arch, back.irqchip), (Some(Arch::Arm64), Some(Irqchip::GicSpi)));
        assert_eq!(Topology::new(&back).unwrap(), spi);
        let err = Topology::new(&spec(
            "name = \"t\"\nnodes = [\"0-3\"]\narch = \"x86_64\"\nirqchip = \"gic-its\"\n",
        ))
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "irqchip: gic-its is an arm64 interrupt controller, but arch is x86_64"
        );
        let bad: Result<TopologySpec, _> = toml::from_str("name = \"t\"\nnodes = [\"0-3\"]\narch = \"sparc\"\n");
        assert!(bad.unwrap_err().to_string().contains("unknown variant `sparc`"));
    }

    #[test]
    fn asymmetric_distances_and_255_round_trip() {
        // ACPI SLIT may be asymmetric and hold 255; node_distance(a, b) keeps the direction.
        let t = Topology::new(&spec(
            r#"
            name = "t"
            nodes = ["0-1", "2-3", ""]
            distances = [[10, 21, 255], [31, 10, 12], [17, 13, 10]]
            "#,
        ))
        .unwrap();
        assert_eq!((t.distance(0, 1), t.distance(1, 0)), (21, 31));
        assert_eq!(t.distance(0, 2), 255);
        let back = Topology::new(&t.to_spec()).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.to_spec().distances, t.to_spec().distances);
    }
}
