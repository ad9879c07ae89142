//! The topology file format (`topologies/*.toml`), as plain serde data.
//!
//! Two ways to say the same thing: explicit lists (`nodes`, `smt`, `clusters`, `packages`,
//! `present`, `online`, `distances`, all kernel cpulists) or a `[generate]` table that describes a
//! regular shape and expands to the explicit lists. `present`, `online` and `distances` may be
//! given beside `[generate]` to override its defaults. Validation happens in
//! [`super::Topology::new`], not here.

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
}

/// A regular machine: `packages × nodes_per_package × cores_per_node × threads_per_core`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Generator {
    #[serde(default = "one")]
    pub packages: u32,
    #[serde(default = "one")]
    pub nodes_per_package: u32,
    pub cores_per_node: u32,
    #[serde(default = "one")]
    pub threads_per_core: u32,
    #[serde(default)]
    pub smt_numbering: SmtNumbering,
    #[serde(default)]
    pub clusters: ClusterShape,
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
    /// Thread t of core k is CPU `k + t*cores` (Intel bare metal: k / k+N).
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClusterName {
    /// Empty cluster masks (x86 without L2 sharing information).
    None,
    /// One cluster per core: the SMT siblings (x86 L2 per core).
    Core,
    /// One cluster per node.
    Node,
    /// One cluster holding every CPU (arm64 GENERIC_ARCH_TOPOLOGY), spanning nodes.
    All,
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
        let err = |m: String| Err(TopologyError::Invalid(format!("generate: {m}")));
        if gen.packages == 0 || gen.nodes_per_package == 0 || gen.cores_per_node == 0 || gen.threads_per_core == 0 {
            return err("every count must be at least 1".into());
        }
        let n_nodes = u64::from(gen.packages) * u64::from(gen.nodes_per_package);
        let n_cores = n_nodes * u64::from(gen.cores_per_node);
        let n_cpus = n_cores * u64::from(gen.threads_per_core);
        if n_cpus > u64::from(CPUS_MAX) || n_nodes > u64::from(NODES_MAX) {
            return err(format!("{n_cpus} CPUs on {n_nodes} nodes exceeds the limits ({CPUS_MAX} CPUs, {NODES_MAX} nodes)"));
        }
        let (n_nodes, n_cores, threads) = (n_nodes as u32, n_cores as u32, gen.threads_per_core);
        let cpu_of = |core: u32, t: u32| match gen.smt_numbering {
            SmtNumbering::Adjacent => core * threads + t,
            SmtNumbering::Offset => core + t * n_cores,
        };
        let list = |cores: std::ops::Range<u32>| {
            let set: super::CpuSet = cores.flat_map(|k| (0..threads).map(move |t| cpu_of(k, t))).collect();
            set.to_cpulist()
        };
        let cpn = gen.cores_per_node;
        let nodes = (0..n_nodes).map(|n| list(n * cpn..(n + 1) * cpn)).collect();
        let smt = if threads > 1 { (0..n_cores).map(|k| list(k..k + 1)).collect() } else { Vec::new() };
        let clusters = match gen.clusters {
            ClusterShape::Unset | ClusterShape::Named(ClusterName::None) => Vec::new(),
            ClusterShape::Named(ClusterName::Core) => (0..n_cores).map(|k| list(k..k + 1)).collect(),
            ClusterShape::Named(ClusterName::Node) => (0..n_nodes).map(|n| list(n * cpn..(n + 1) * cpn)).collect(),
            ClusterShape::Named(ClusterName::All) => vec![list(0..n_cores)],
            ClusterShape::Cores(0) => return err("clusters: a cluster needs at least one core".into()),
            ClusterShape::Cores(size) if cpn % size != 0 => {
                return err(format!("clusters: {size} cores per cluster does not divide {cpn} cores per node"))
            }
            ClusterShape::Cores(size) => (0..n_cores / size).map(|c| list(c * size..(c + 1) * size)).collect(),
        };
        let per_package = gen.nodes_per_package * cpn;
        let packages = if gen.nodes_per_package > 1 {
            (0..gen.packages).map(|p| list(p * per_package..(p + 1) * per_package)).collect()
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
        })
    }
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
        assert_eq!(t.smt(3).to_cpulist(), "3,39");
        assert_eq!(t.cluster(40).to_cpulist(), "4,40");
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
        assert_eq!(t.cluster_sets().len(), 4);
        assert_eq!(t.cluster(5).to_cpulist(), "4-7");
        assert_eq!(t.package_sets().len(), 1);
        let bad: TopologySpec = toml::from_str("name='c'\n[generate]\ncores_per_node = 4\nclusters = 3\n").unwrap();
        assert!(Topology::new(&bad).unwrap_err().to_string().contains("does not divide"));
    }
}
