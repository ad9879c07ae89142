//! The topology file format (`topologies/*.toml`), as plain serde data.
//!
//! Two ways to say the same thing: explicit lists (`nodes`, `smt`, `clusters`, `packages`,
//! `present`, `online`, `distances`, all kernel cpulists) or a `[generate]` table that describes a
//! regular shape and expands to the explicit lists. `present`, `online` and `distances` may be
//! given beside `[generate]` to override its defaults. The generator covers regular machines:
//! several packages, several nodes per package (SNC/NPS), SMT numbered adjacent or offset,
//! clusters of N cores, per core, per node, per package or machine-wide, hybrid nodes made of
//! several core types (`core_types`), and sparse CPU ids (`package_cpu_stride`). Validation
//! happens in [`super::Topology::new`], not here.

use super::arch::{Arch, Irqchip};
use super::{TopologyError, CPUS_MAX, NODES_MAX};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologySpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// Where the shape comes from (a vendor document, a captured `lscpu`, a mailing-list post).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// Optional check: must equal the highest possible CPU + 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nr_cpu_ids: Option<u32>,
    /// Number of node ids; may exceed the listed nodes (memory-only nodes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nr_node_ids: Option<u32>,
    /// `nodes[i]` = cpulist of node `i`'s possible CPUs (`""` for a node without CPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<String>>,
    /// SMT sibling sets; CPUs not listed are their own sibling set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub smt: Vec<String>,
    /// Cluster sets; CPUs not listed have an empty cluster mask.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<String>,
    /// Packages (sockets); default one per node with CPUs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<String>,
    /// Present CPUs; default all possible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub present: Option<String>,
    /// Online CPUs; default all present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub online: Option<String>,
    /// Node distance matrix (SLIT); default 10 on the diagonal, 20 elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distances: Option<Vec<Vec<u32>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate: Option<Generator>,
    /// Instruction-set architecture; default x86_64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<Arch>,
    /// The interrupt controller that delivers device MSIs; default the architecture's
    /// (`apic` on x86_64, `gic-its` on arm64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irqchip: Option<Irqchip>,
    /// x86: the machine has a legacy 8259 PIC (`nr_legacy_irqs() > 1`), so the kernel takes
    /// the PIC cascade vector out of every CPU's device vectors. Unset: not stated (no cascade
    /// counted). Absent from every file written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legacy_pic: Option<bool>,
}

/// A regular machine: `packages × nodes_per_package × cores_per_node × threads_per_core`, or,
/// with `core_types`, nodes made of several kinds of core (hybrid parts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Generator {
    #[serde(default = "one")]
    pub(crate) packages: u32,
    /// NUMA nodes per package (SNC on Intel, NPS on AMD).
    #[serde(default = "one")]
    pub(crate) nodes_per_package: u32,
    /// Cores in each node (required unless `core_types` is given).
    #[serde(default)]
    pub(crate) cores_per_node: u32,
    #[serde(default = "one")]
    pub(crate) threads_per_core: u32,
    #[serde(default)]
    pub(crate) smt_numbering: SmtNumbering,
    #[serde(default, skip_serializing_if = "ClusterShape::is_unset")]
    pub(crate) clusters: ClusterShape,
    /// Hybrid nodes: each node holds these kinds of core, in this order (instead of
    /// `cores_per_node` and `threads_per_core`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) core_types: Vec<CoreType>,
    /// Sparse CPU ids: package `p` numbers its CPUs from `p * package_cpu_stride`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) package_cpu_stride: Option<u32>,
}

/// One kind of core in a hybrid node (`[[generate.core_types]]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CoreType {
    /// Cores of this kind in each node.
    pub(crate) cores: u32,
    #[serde(default = "one")]
    pub(crate) threads_per_core: u32,
    /// Clusters among cores of this kind: a core count, `"core"` or `"none"` (the default).
    #[serde(default, skip_serializing_if = "ClusterShape::is_unset")]
    pub(crate) clusters: ClusterShape,
}

fn one() -> u32 {
    1
}

/// How SMT threads are numbered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SmtNumbering {
    /// Siblings adjacent: core k owns CPUs `k*T .. k*T+T-1` (AMD, most VMs).
    #[default]
    Adjacent,
    /// The first thread of every core first, then the second threads (Intel and AMD bare
    /// metal: k / k+N). With `package_cpu_stride`, within each package.
    Offset,
}

/// The cluster masks a generated machine gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", untagged)]
pub enum ClusterShape {
    /// A number of cores per cluster (must divide `cores_per_node`).
    Cores(u32),
    Named(ClusterName),
    #[default]
    #[serde(skip)]
    Unset,
}

impl ClusterShape {
    /// No `clusters` key was given (empty cluster masks); such a generator serializes without it.
    pub(crate) fn is_unset(&self) -> bool {
        *self == ClusterShape::Unset
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClusterName {
    /// Empty cluster masks (x86 without L2 sharing information).
    None,
    /// One cluster per core: the SMT siblings (x86 L2 per core).
    Core,
    /// One cluster per node.
    Node,
    /// One cluster per package (spans the nodes of an SNC/NPS package).
    Package,
    /// One cluster holding every CPU (arm64 GENERIC_ARCH_TOPOLOGY), spanning nodes.
    All,
}

/// A core of a generated machine before its CPUs are numbered.
struct GenCore {
    package: u32,
    node: u32,
    threads: u32,
    /// Cores with equal keys share a cluster; `None` for an empty cluster mask.
    cluster: Option<(u32, u32, u32)>,
}

impl TopologySpec {
    /// The spec with `[generate]` expanded into explicit lists.
    pub fn to_explicit(&self) -> Result<TopologySpec, TopologyError> {
        let Some(gen) = &self.generate else {
            return Ok(self.clone());
        };
        if self.nodes.is_some() || !self.smt.is_empty() || !self.clusters.is_empty() || !self.packages.is_empty() {
            return Err(TopologyError::Invalid(
                "generate: give either [generate] or explicit nodes/smt/clusters/packages, not both".into(),
            ));
        }
        gen.check_counts()?;
        let types = gen.types();
        let n_nodes = gen.check_size(&types)?;
        let cores = gen.cores(&types)?;
        let core_cpus = gen.number_threads(&cores, &types);
        let list = |set: super::CpuSet| set.to_cpulist();
        let gather = |pick: &dyn Fn(&GenCore) -> bool| {
            list(
                (0..cores.len())
                    .filter(|&i| pick(&cores[i]))
                    .flat_map(|i| core_cpus[i].iter().copied())
                    .collect(),
            )
        };
        let nodes = (0..n_nodes).map(|n| gather(&|c| c.node == n)).collect();
        let smt = (0..cores.len())
            .filter(|&i| cores[i].threads > 1)
            .map(|i| list(core_cpus[i].iter().copied().collect()))
            .collect();
        let clusters = cluster_sets(&cores, &core_cpus).into_iter().map(list).collect();
        let packages = if gen.nodes_per_package > 1 {
            (0..gen.packages).map(|p| gather(&|c| c.package == p)).collect()
        } else {
            Vec::new()
        };
        Ok(TopologySpec {
            name: self.name.clone(),
            note: self.note.clone(),
            source: self.source.clone(),
            nr_cpu_ids: self.nr_cpu_ids,
            nr_node_ids: self.nr_node_ids,
            nodes: Some(nodes),
            smt,
            clusters,
            packages,
            present: self.present.clone(),
            online: self.online.clone(),
            distances: self.distances.clone(),
            generate: None,
            arch: self.arch,
            irqchip: self.irqchip,
            legacy_pic: self.legacy_pic,
        })
    }
}

/// A `[generate]` table's error: "generate: " and the message.
fn generate_error(message: impl std::fmt::Display) -> TopologyError {
    TopologyError::Invalid(format!("generate: {message}"))
}

impl Generator {
    /// Either `core_types` or `cores_per_node`/`threads_per_core`, and every count at least 1.
    fn check_counts(&self) -> Result<(), TopologyError> {
        let hybrid = !self.core_types.is_empty();
        if hybrid && (self.cores_per_node != 0 || self.threads_per_core != 1) {
            return Err(generate_error(
                "give either core_types or cores_per_node/threads_per_core, not both",
            ));
        }
        if !hybrid && self.cores_per_node == 0 {
            return Err(generate_error("cores_per_node must be at least 1 (or give core_types)"));
        }
        if self.packages == 0 || self.nodes_per_package == 0 || self.threads_per_core == 0 {
            return Err(generate_error("every count must be at least 1"));
        }
        if self.core_types.iter().any(|c| c.cores == 0 || c.threads_per_core == 0) {
            return Err(generate_error("core_types: every count must be at least 1"));
        }
        Ok(())
    }

    /// The kinds of core in each node: `core_types`, or the regular shape as the one kind, so
    /// both paths share the code that follows.
    fn types(&self) -> Vec<CoreType> {
        if self.core_types.is_empty() {
            vec![CoreType {
                cores: self.cores_per_node,
                threads_per_core: self.threads_per_core,
                clusters: self.clusters,
            }]
        } else {
            self.core_types.clone()
        }
    }

    /// The machine within [`CPUS_MAX`] and [`NODES_MAX`], its packages' CPU ids too when
    /// `package_cpu_stride` spreads them; the number of nodes.
    fn check_size(&self, types: &[CoreType]) -> Result<u32, TopologyError> {
        // Saturating: the counts come from a file, and a product past u64 is just "too many".
        let cpus_per_node: u64 = types
            .iter()
            .map(|c| u64::from(c.cores) * u64::from(c.threads_per_core))
            .fold(0u64, u64::saturating_add);
        let n_nodes = u64::from(self.packages) * u64::from(self.nodes_per_package);
        let n_cpus = n_nodes.saturating_mul(cpus_per_node);
        if n_cpus > u64::from(CPUS_MAX) || n_nodes > u64::from(NODES_MAX) {
            return Err(generate_error(format!(
                "{n_cpus} CPUs on {n_nodes} nodes exceeds the limits ({CPUS_MAX} CPUs, {NODES_MAX} nodes)"
            )));
        }
        let per_package_cpus = cpus_per_node.saturating_mul(u64::from(self.nodes_per_package));
        if let Some(stride) = self.package_cpu_stride {
            if u64::from(stride) < per_package_cpus {
                return Err(generate_error(format!(
                    "package_cpu_stride: {stride} is less than the {per_package_cpus} CPUs of a package"
                )));
            }
            let last = u64::from(stride) * u64::from(self.packages - 1) + per_package_cpus;
            if last > u64::from(CPUS_MAX) {
                return Err(generate_error(format!(
                    "package_cpu_stride: CPU ids reach {last}, beyond the limit of {CPUS_MAX}"
                )));
            }
        }
        Ok(n_nodes as u32)
    }

    /// Every core, package by package, node by node, core type by core type, with the
    /// cluster it shares; the first core type whose `clusters` does not fit is the error.
    fn cores(&self, types: &[CoreType]) -> Result<Vec<GenCore>, TopologyError> {
        let mut cores = Vec::new();
        for package in 0..self.packages {
            for node_in_package in 0..self.nodes_per_package {
                let node = package * self.nodes_per_package + node_in_package;
                for (type_idx, ct) in types.iter().enumerate() {
                    for k in 0..ct.cores {
                        cores.push(GenCore {
                            package,
                            node,
                            threads: ct.threads_per_core,
                            cluster: self.cluster_key(ct, package, node, type_idx as u32, k)?,
                        });
                    }
                }
            }
        }
        Ok(cores)
    }

    /// The cluster of core `k` of type `ct` (index `type_idx`) in `node` of `package`: cores
    /// with equal keys share one; `None` for an empty cluster mask.
    fn cluster_key(
        &self,
        ct: &CoreType,
        package: u32,
        node: u32,
        type_idx: u32,
        k: u32,
    ) -> Result<Option<(u32, u32, u32)>, TopologyError> {
        Ok(match (self.clusters, ct.clusters) {
            (ClusterShape::Named(ClusterName::Node), _) => Some((node, 0, 0)),
            (ClusterShape::Named(ClusterName::Package), _) => Some((package, 0, 0)),
            (ClusterShape::Named(ClusterName::All), _) => Some((0, 0, 0)),
            (_, ClusterShape::Unset | ClusterShape::Named(ClusterName::None)) => None,
            (_, ClusterShape::Named(ClusterName::Core)) => Some((node, type_idx, k)),
            (_, ClusterShape::Cores(0)) => return Err(generate_error("clusters: a cluster needs at least one core")),
            (_, ClusterShape::Cores(size)) if !ct.cores.is_multiple_of(size) => {
                let what = if self.core_types.is_empty() {
                    "cores per node"
                } else {
                    "cores of its core type"
                };
                return Err(generate_error(format!(
                    "clusters: {size} cores per cluster does not divide {} {what}",
                    ct.cores
                )));
            }
            (_, ClusterShape::Cores(size)) => Some((node, type_idx, k / size)),
            (_, ClusterShape::Named(_)) => {
                return Err(generate_error(
                    "core_types: clusters may be a core count, \"core\" or \"none\"",
                ))
            }
        })
    }

    /// The CPU ids of each core's threads: per package from its stride, else across the
    /// machine; siblings adjacent, or every core's first thread before any second one.
    fn number_threads(&self, cores: &[GenCore], types: &[CoreType]) -> Vec<Vec<u32>> {
        let mut core_cpus: Vec<Vec<u32>> = vec![Vec::new(); cores.len()];
        let threads_max = types.iter().map(|c| c.threads_per_core).max().unwrap_or(1);
        let groups: Vec<Vec<usize>> = match self.package_cpu_stride {
            Some(_) => (0..self.packages)
                .map(|p| (0..cores.len()).filter(|&i| cores[i].package == p).collect())
                .collect(),
            None => vec![(0..cores.len()).collect()],
        };
        for (g, members) in groups.iter().enumerate() {
            let mut next = self.package_cpu_stride.map_or(0, |s| s * g as u32);
            match self.smt_numbering {
                SmtNumbering::Adjacent => {
                    for &i in members {
                        for _ in 0..cores[i].threads {
                            core_cpus[i].push(next);
                            next += 1;
                        }
                    }
                }
                SmtNumbering::Offset => {
                    for t in 0..threads_max {
                        for &i in members.iter().filter(|&&i| cores[i].threads > t) {
                            core_cpus[i].push(next);
                            next += 1;
                        }
                    }
                }
            }
        }
        core_cpus
    }
}

/// The generated clusters in order of their first core; a map keeps 8192-CPU machines fast.
fn cluster_sets(cores: &[GenCore], core_cpus: &[Vec<u32>]) -> Vec<super::CpuSet> {
    let mut cluster_index: std::collections::HashMap<(u32, u32, u32), usize> = Default::default();
    let mut cluster_sets: Vec<super::CpuSet> = Vec::new();
    for (i, core) in cores.iter().enumerate() {
        if let Some(key) = core.cluster {
            let idx = *cluster_index.entry(key).or_insert_with(|| {
                cluster_sets.push(super::CpuSet::new(CPUS_MAX));
                cluster_sets.len() - 1
            });
            for &cpu in &core_cpus[i] {
                cluster_sets[idx].insert(cpu);
            }
        }
    }
    cluster_sets
}

#[cfg(test)]
mod tests {
    use super::super::Topology;
    use super::*;

    #[test]
    fn generated_intel_numbering() {
        let spec: TopologySpec = toml::from_str(
            r#"
            name = "xeon"
            [generate]
            packages = 2
            cores_per_node = 18
            threads_per_core = 2
            smt_numbering = "offset"
            clusters = "core"
            "#,
        )
        .unwrap();
        let t = Topology::new(&spec).unwrap();
        assert_eq!(t.nr_cpu_ids(), 72);
        assert_eq!(t.node_cpus(0).to_cpulist(), "0-17,36-53");
        assert_eq!(t.drawn_smt(3).to_cpulist(), "3,39");
        assert_eq!(t.drawn_cluster(40).to_cpulist(), "4,40");
    }

    #[test]
    fn generated_clusters_of_cores() {
        let spec: TopologySpec = toml::from_str(
            r#"
            name = "c"
            [generate]
            nodes_per_package = 2
            cores_per_node = 4
            threads_per_core = 2
            clusters = 2
            "#,
        )
        .unwrap();
        let t = Topology::new(&spec).unwrap();
        assert_eq!(t.drawn_cluster_sets().len(), 4);
        assert_eq!(t.drawn_cluster(5).to_cpulist(), "4-7");
        assert_eq!(t.package_sets().len(), 1);
        let bad: TopologySpec = toml::from_str("name='c'\n[generate]\ncores_per_node = 4\nclusters = 3\n").unwrap();
        assert!(Topology::new(&bad).unwrap_err().to_string().contains("does not divide"));
    }

    fn gen(text: &str) -> Topology {
        Topology::new(&toml::from_str::<TopologySpec>(&format!("name = 'g'\n[generate]\n{text}")).unwrap()).unwrap()
    }

    #[test]
    fn generated_hybrid_parts() {
        let t = gen(
            "[[generate.core_types]]\ncores = 8\nthreads_per_core = 2\nclusters = 'core'\n\
             [[generate.core_types]]\ncores = 16\nclusters = 4\n",
        );
        assert_eq!(t.nr_cpu_ids(), 32);
        assert_eq!(t.drawn_smt(1).to_cpulist(), "0-1");
        assert_eq!(t.drawn_smt(16).to_cpulist(), "16");
        assert_eq!(t.drawn_cluster(15).to_cpulist(), "14-15");
        assert_eq!(t.drawn_cluster(17).to_cpulist(), "16-19");
        assert_eq!(t.drawn_cluster_sets().len(), 12);
        // Offset numbering puts the P-cores' second threads after every first thread.
        let o = gen(
            "smt_numbering = 'offset'\n[[generate.core_types]]\ncores = 2\nthreads_per_core = 2\n\
             [[generate.core_types]]\ncores = 4\n",
        );
        assert_eq!(o.drawn_smt(0).to_cpulist(), "0,6");
        assert_eq!(o.drawn_smt(1).to_cpulist(), "1,7");
        assert_eq!(o.drawn_smt(2).to_cpulist(), "2");
    }

    #[test]
    fn generated_sparse_ids_and_package_clusters() {
        let t = gen("packages = 2\ncores_per_node = 4\nthreads_per_core = 2\npackage_cpu_stride = 16\n");
        assert_eq!(t.possible().to_cpulist(), "0-7,16-23");
        assert_eq!(t.node_cpus(1).to_cpulist(), "16-23");
        let o = gen("packages = 2\ncores_per_node = 4\nthreads_per_core = 2\nsmt_numbering = 'offset'\npackage_cpu_stride = 16\n");
        assert_eq!(o.drawn_smt(16).to_cpulist(), "16,20");
        let p = gen("packages = 2\nnodes_per_package = 2\ncores_per_node = 2\nclusters = 'package'\n");
        assert_eq!(p.drawn_cluster(0).to_cpulist(), "0-3");
        assert_eq!(p.node_cpus(0).to_cpulist(), "0-1");
        let bad = |text: &str| {
            Topology::new(&toml::from_str::<TopologySpec>(&format!("name = 'g'\n[generate]\n{text}")).unwrap())
                .unwrap_err()
                .to_string()
        };
        assert!(bad("packages = 2\ncores_per_node = 4\npackage_cpu_stride = 3\n").contains("less than the 4 CPUs"));
        assert!(bad("packages = 2\ncores_per_node = 4096\npackage_cpu_stride = 8000\n").contains("beyond the limit"));
        assert!(bad("cores_per_node = 4\n[[generate.core_types]]\ncores = 2\n").contains("not both"));
        assert!(bad("threads_per_core = 2\n").contains("cores_per_node must be at least 1"));
        assert!(bad("[[generate.core_types]]\ncores = 2\nclusters = 'node'\n").contains("core count"));
    }

    #[test]
    fn generated_present_and_online_overrides() {
        let spec: TopologySpec =
            toml::from_str("name = 'g'\npresent = '0-7'\nonline = '0-5'\n[generate]\ncores_per_node = 16\n").unwrap();
        let t = Topology::new(&spec).unwrap();
        assert_eq!(t.possible().to_cpulist(), "0-15");
        assert_eq!(t.present().to_cpulist(), "0-7");
        assert_eq!(t.online().to_cpulist(), "0-5");
    }
}

#[cfg(test)]
mod serialize_tests {
    use super::*;

    /// A generator without `clusters` writes back without it (and reads back the same).
    #[test]
    fn unset_clusters_round_trip() {
        let spec: TopologySpec = toml::from_str("name = 'x'\n[generate]\ncores_per_node = 4\n").unwrap();
        let text = toml::to_string(&spec).unwrap();
        assert!(!text.contains("clusters"), "{text}");
        assert_eq!(toml::from_str::<TopologySpec>(&text).unwrap(), spec);
        assert!(serde_json::to_string(&spec).is_ok());
    }
}
