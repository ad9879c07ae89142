//! Machine topology: CPU ids, SMT sibling sets, clusters, packages, NUMA nodes and their
//! distances, and the possible/present/online sets.
//!
//! Input arrives as a [`TopologySpec`] (the hand-writable file format, see `topologies/README.md`)
//! and is validated once by [`Topology::new`]. After that the fields are private and nothing
//! re-checks them: every possible CPU has exactly one node, one SMT sibling set (containing it,
//! inside its node) and at most one cluster; `present ⊆ possible`, `online ⊆ present`, CPU 0 is
//! present. This module reads no files and knows nothing of HTTP.

mod arch;
pub mod compact;
pub mod cpulist;
mod cpuset;
pub mod import;
pub mod spec;

pub use arch::{Arch, Irqchip};
pub use cpulist::{format_cpulist, format_hex_mask, parse_cpulist, parse_hex_mask, CpulistError};
pub use cpuset::CpuSet;
pub use spec::{ClusterShape, Generator, SmtNumbering, TopologySpec};

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
    distances: Vec<u32>,
    arch: Arch,
    irqchip: Irqchip,
    empty: CpuSet,
}

impl Topology {
    /// Validate a spec (explicit or generated) into a topology.
    pub fn new(spec: &TopologySpec) -> Result<Topology, TopologyError> {
        let spec = spec.to_explicit()?;
        let cpulist = |field: String, text: &str, n_bits: u32| {
            parse_cpulist(text, n_bits).map_err(|source| TopologyError::Cpulist { field, source })
        };
        if spec.name.len() > NAME_BYTES_MAX {
            return Err(invalid(format!("name: longer than {NAME_BYTES_MAX} bytes")));
        }
        if spec.note.len() > NOTE_BYTES_MAX || spec.source.len() > NOTE_BYTES_MAX {
            return Err(invalid(format!("note/source: longer than {NOTE_BYTES_MAX} bytes")));
        }
        let nodes = spec.nodes.as_deref().unwrap_or_default();
        if nodes.is_empty() {
            return Err(invalid("nodes: at least one node is needed"));
        }
        if nodes.len() as u64 > u64::from(NODES_MAX) {
            return Err(invalid(format!(
                "nodes: {} nodes, at most {NODES_MAX} are allowed",
                nodes.len()
            )));
        }
        let nr_node_ids = match spec.nr_node_ids {
            Some(n) if n as usize >= nodes.len() && n <= NODES_MAX => n,
            Some(n) => {
                return Err(invalid(format!(
                    "nr_node_ids: {n} must be between the number of listed nodes ({}) and {NODES_MAX}",
                    nodes.len()
                )))
            }
            None => nodes.len() as u32,
        };

        // Nodes define the possible CPUs.
        let mut node_cpus: Vec<CpuSet> = Vec::with_capacity(nr_node_ids as usize);
        let mut possible = CpuSet::new(CPUS_MAX);
        for (node, text) in nodes.iter().enumerate() {
            let set = cpulist(format!("nodes[{node}]"), text, CPUS_MAX)?;
            if let Some(cpu) = set.and(&possible).first() {
                let other = node_cpus.iter().position(|s| s.contains(cpu)).unwrap_or(0);
                return Err(invalid(format!("nodes[{node}]: CPU {cpu} is already in node {other}")));
            }
            possible.or_assign(&set);
            node_cpus.push(set);
        }
        let Some(last_cpu) = possible.last() else {
            return Err(invalid("nodes: no node has any CPU"));
        };
        let nr_cpu_ids = last_cpu + 1;
        if let Some(n) = spec.nr_cpu_ids {
            if n != nr_cpu_ids {
                return Err(invalid(format!(
                    "nr_cpu_ids: {n} given, but the highest possible CPU is {last_cpu} (nr_cpu_ids is one more)"
                )));
            }
        }
        node_cpus.resize(nr_node_ids as usize, CpuSet::new(nr_cpu_ids));

        let present = match &spec.present {
            Some(text) => cpulist("present".into(), text, nr_cpu_ids)?,
            None => possible.clone(),
        };
        if let Some(cpu) = present.andnot(&possible).first() {
            return Err(invalid(format!(
                "present: CPU {cpu} is present but in no node (not possible)"
            )));
        }
        if !present.contains(0) {
            return Err(invalid("present: CPU 0 must be present (the boot CPU)"));
        }
        let online = match &spec.online {
            Some(text) => cpulist("online".into(), text, nr_cpu_ids)?,
            None => present.clone(),
        };
        if let Some(cpu) = online.andnot(&present).first() {
            return Err(invalid(format!("online: CPU {cpu} is online but not present")));
        }
        if online.is_empty() {
            return Err(invalid("online: at least one CPU must be online"));
        }

        let mut cpu_node = vec![0u32; nr_cpu_ids as usize];
        for (node, set) in node_cpus.iter().enumerate() {
            for cpu in set.iter() {
                cpu_node[cpu as usize] = node as u32;
            }
        }

        // SMT sibling sets: listed ones, every other possible CPU its own set.
        let mut cpu_smt = vec![NONE; nr_cpu_ids as usize];
        let mut smt_sets = Vec::new();
        for (i, text) in spec.smt.iter().enumerate() {
            let set = cpulist(format!("smt[{i}]"), text, nr_cpu_ids)?;
            let Some(first) = set.first() else {
                return Err(invalid(format!("smt[{i}]: empty sibling set")));
            };
            for cpu in set.iter() {
                if !possible.contains(cpu) {
                    return Err(invalid(format!("smt[{i}]: CPU {cpu} is not in any node")));
                }
                if cpu_smt[cpu as usize] != NONE {
                    return Err(invalid(format!(
                        "smt[{i}]: CPU {cpu} is already in another sibling set"
                    )));
                }
                if cpu_node[cpu as usize] != cpu_node[first as usize] {
                    return Err(invalid(format!(
                        "smt[{i}]: SMT siblings {first} and {cpu} are on different nodes ({} and {})",
                        cpu_node[first as usize], cpu_node[cpu as usize]
                    )));
                }
                cpu_smt[cpu as usize] = smt_sets.len() as u32;
            }
            smt_sets.push(set);
        }
        for cpu in possible.iter() {
            if cpu_smt[cpu as usize] == NONE {
                cpu_smt[cpu as usize] = smt_sets.len() as u32;
                smt_sets.push(CpuSet::from_cpus([cpu]));
            }
        }

        let mut cpu_cluster = vec![NONE; nr_cpu_ids as usize];
        let mut cluster_sets = Vec::new();
        for (i, text) in spec.clusters.iter().enumerate() {
            let set = cpulist(format!("clusters[{i}]"), text, nr_cpu_ids)?;
            if set.is_empty() {
                return Err(invalid(format!(
                    "clusters[{i}]: empty cluster (leave the CPUs out instead)"
                )));
            }
            for cpu in set.iter() {
                if !possible.contains(cpu) {
                    return Err(invalid(format!("clusters[{i}]: CPU {cpu} is not in any node")));
                }
                if cpu_cluster[cpu as usize] != NONE {
                    return Err(invalid(format!(
                        "clusters[{i}]: CPU {cpu} is already in another cluster"
                    )));
                }
                cpu_cluster[cpu as usize] = cluster_sets.len() as u32;
            }
            cluster_sets.push(set);
        }
        // The kernel's cluster mask always contains the SMT mask (build_sched_domain refuses a
        // child domain that is not a subset of its parent: "BUG: arch topology borken"; on x86
        // cpu_clustergroup_mask is the L2-sharing mask, which holds every SMT sibling; on arm64
        // cpu_clustergroup_mask falls back to the SMT mask). A cluster that splits a sibling set
        // cannot come from a real machine.
        for (i, cluster) in cluster_sets.iter().enumerate() {
            for cpu in cluster.iter() {
                let s = cpu_smt[cpu as usize] as usize;
                let siblings = &smt_sets[s];
                if let Some(out) = siblings.andnot(cluster).first() {
                    return Err(invalid(format!(
                        "clusters[{i}]: cluster {cluster} splits SMT sibling set smt[{s}] {siblings} \
                         (CPU {cpu} is in the cluster, its sibling {out} is not); a cluster must hold whole sibling sets"
                    )));
                }
            }
        }

        // Packages are for display; by default one package per node with CPUs.
        let mut cpu_package = vec![NONE; nr_cpu_ids as usize];
        let mut package_sets = Vec::new();
        if spec.packages.is_empty() {
            for set in node_cpus.iter().filter(|s| !s.is_empty()) {
                for cpu in set.iter() {
                    cpu_package[cpu as usize] = package_sets.len() as u32;
                }
                package_sets.push(set.clone());
            }
        } else {
            for (i, text) in spec.packages.iter().enumerate() {
                let set = cpulist(format!("packages[{i}]"), text, nr_cpu_ids)?;
                for cpu in set.iter() {
                    if !possible.contains(cpu) {
                        return Err(invalid(format!("packages[{i}]: CPU {cpu} is not in any node")));
                    }
                    if cpu_package[cpu as usize] != NONE {
                        return Err(invalid(format!(
                            "packages[{i}]: CPU {cpu} is already in another package"
                        )));
                    }
                    cpu_package[cpu as usize] = i as u32;
                }
                package_sets.push(set);
            }
            if let Some(cpu) = possible.iter().find(|&c| cpu_package[c as usize] == NONE) {
                return Err(invalid(format!("packages: CPU {cpu} is in no package")));
            }
        }
        for p in cpu_package.iter_mut().filter(|p| **p == NONE) {
            *p = 0;
        }

        let n = nr_node_ids as usize;
        let distances = match &spec.distances {
            None => (0..n * n)
                .map(|i| {
                    if i / n == i % n {
                        LOCAL_DISTANCE
                    } else {
                        REMOTE_DISTANCE
                    }
                })
                .collect(),
            Some(rows) => {
                if rows.len() != n {
                    return Err(invalid(format!("distances: {} rows for {n} nodes", rows.len())));
                }
                let mut flat = Vec::with_capacity(n * n);
                for (i, row) in rows.iter().enumerate() {
                    if row.len() != n {
                        return Err(invalid(format!(
                            "distances[{i}]: {} columns for {n} nodes (the matrix must be square)",
                            row.len()
                        )));
                    }
                    for (j, &d) in row.iter().enumerate() {
                        if i == j && d != LOCAL_DISTANCE {
                            return Err(invalid(format!(
                                "distances[{i}][{j}]: a node's distance to itself is 10, not {d}"
                            )));
                        }
                        if i != j && !(LOCAL_DISTANCE + 1..=DISTANCE_MAX).contains(&d) {
                            return Err(invalid(format!(
                                "distances[{i}][{j}]: {d} is outside 11..{DISTANCE_MAX}"
                            )));
                        }
                    }
                    flat.extend_from_slice(row);
                }
                flat
            }
        };

        let arch = spec
            .arch
            .or(spec.irqchip.map(Irqchip::arch))
            .unwrap_or_default();
        let irqchip = spec.irqchip.unwrap_or(arch.default_irqchip());
        if irqchip.arch() != arch {
            return Err(invalid(format!(
                "irqchip: {} is an {} interrupt controller, but arch is {}",
                irqchip.name(),
                irqchip.arch().name(),
                arch.name()
            )));
        }

        // Keep every stored set at the topology's width.
        let fit = |mut s: CpuSet| {
            let mut out = CpuSet::new(nr_cpu_ids);
            out.or_assign(&s);
            s = out;
            s
        };
        Ok(Topology {
            name: spec.name.clone(),
            note: spec.note.clone(),
            source: spec.source.clone(),
            nr_cpu_ids,
            nr_node_ids,
            possible: fit(possible.and(&CpuSet::full(nr_cpu_ids))),
            present,
            online,
            cpu_node,
            cpu_package,
            cpu_smt,
            cpu_cluster,
            smt_sets,
            cluster_sets,
            package_sets,
            node_cpus: node_cpus
                .into_iter()
                .map(|s| fit(s.and(&CpuSet::full(nr_cpu_ids))))
                .collect(),
            distances,
            arch,
            irqchip,
            empty: CpuSet::new(nr_cpu_ids),
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
    pub fn arch(&self) -> Arch {
        self.arch
    }
    /// The interrupt controller that delivers device MSIs.
    pub fn irqchip(&self) -> Irqchip {
        self.irqchip
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
    /// SMT siblings of a possible CPU, itself included (`topology_sibling_cpumask`).
    pub fn smt(&self, cpu: u32) -> &CpuSet {
        match self.cpu_smt.get(cpu as usize) {
            Some(&i) if i != NONE => &self.smt_sets[i as usize],
            _ => &self.empty,
        }
    }
    /// Cluster of a CPU (`topology_cluster_cpumask`); the empty set when it has none.
    pub fn cluster(&self, cpu: u32) -> &CpuSet {
        match self.cpu_cluster.get(cpu as usize) {
            Some(&i) if i != NONE => &self.cluster_sets[i as usize],
            _ => &self.empty,
        }
    }
    pub fn smt_sets(&self) -> &[CpuSet] {
        &self.smt_sets
    }
    pub fn cluster_sets(&self) -> &[CpuSet] {
        &self.cluster_sets
    }
    pub fn package_sets(&self) -> &[CpuSet] {
        &self.package_sets
    }
    /// `node_distance(a, b)`.
    pub fn distance(&self, a: u32, b: u32) -> u32 {
        let n = self.nr_node_ids as usize;
        self.distances
            .get(a as usize * n + b as usize)
            .copied()
            .unwrap_or(REMOTE_DISTANCE)
    }
    /// Highest number of SMT threads in one core.
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

    /// The explicit spec that rebuilds this topology exactly.
    pub fn to_spec(&self) -> TopologySpec {
        let n = self.nr_node_ids as usize;
        let default_distances = (0..n * n).all(|i| {
            self.distances[i]
                == if i / n == i % n {
                    LOCAL_DISTANCE
                } else {
                    REMOTE_DISTANCE
                }
        });
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
            distances: (!default_distances).then(|| self.distances.chunks(n).map(<[u32]>::to_vec).collect()),
            generate: None,
            arch: (self.arch != Arch::default()).then_some(self.arch),
            irqchip: (self.irqchip != self.arch.default_irqchip()).then_some(self.irqchip),
        }
    }
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
        assert_eq!(t.cluster(6).to_cpulist(), "4-7");
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
nodes=["0-3"]
smt=["0-1","2-3"]
clusters=["0","1-3"]"#,
                "clusters[0]: cluster 0 splits SMT sibling set smt[0] 0-1 (CPU 0 is in the cluster, its sibling 1 is not)",
            ),
            (
                r#"name="x"
nodes=["0-3"]
smt=["0,2","1,3"]
clusters=["0-1","2-3"]"#,
                "clusters[0]: cluster 0-1 splits SMT sibling set smt[0] 0,2",
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
        assert!(t.cluster(4).is_empty());
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
        let err = Topology::new(&spec("name = \"t\"\nnodes = [\"0-3\"]\narch = \"x86_64\"\nirqchip = \"gic-its\"\n"))
            .unwrap_err()
            .to_string();
        assert_eq!(err, "irqchip: gic-its is an arm64 interrupt controller, but arch is x86_64");
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
