//! Export a topology: the native TOML, an hwloc synthetic string (when the shape is regular
//! enough), and a sysfs tree that tools reading `/sys/devices/system` (irqscope's own importer,
//! `lscpu --sysroot`, hwloc with `HWLOC_FSROOT`) can consume.
//!
//! The sysfs tree is richer than a live kernel's: every possible CPU gets a `topology/` directory
//! and sibling lists name offline siblings too, so that importing it gives back the same topology.

use super::sysfs::SysfsFiles;
use super::{shape, Format};
use crate::topology::{format_hex_mask, CpuSet, Topology};
use std::fmt::Write;
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("export to {format}: {message}")]
pub struct ExportError {
    pub(crate) format: Format,
    pub(crate) message: String,
}

fn fail(format: Format, message: impl Into<String>) -> ExportError {
    ExportError {
        format,
        message: message.into(),
    }
}

/// The native file format: the explicit spec as TOML.
pub fn to_toml(t: &Topology) -> String {
    // Serialising plain strings, integers and arrays cannot fail.
    toml::to_string(&t.to_spec()).unwrap_or_default()
}

/// An hwloc synthetic description, `pack:P numa:N l2:C core:K pu:T`, or an error saying why the
/// shape cannot be written as one.
pub fn to_synthetic(t: &Topology) -> Result<String, ExportError> {
    const F: Format = Format::Synthetic;
    if t.present() != t.possible() || t.online() != t.present() {
        return Err(fail(
            F,
            "a synthetic description cannot say that some CPUs are not present or offline",
        ));
    }
    let spec = t.to_spec();
    if spec.distances.is_some() {
        return Err(fail(
            F,
            "a synthetic description has no distance matrix (only the default 10/20 can be expressed)",
        ));
    }
    let n_nodes = t.nr_node_ids();
    if t.nodes_with_cpus().count() as u32 != n_nodes {
        return Err(fail(F, "a synthetic description cannot hold nodes without CPUs"));
    }
    let n_packages = t.package_sets().len() as u32;
    let n_clusters = t.drawn_cluster_sets().len() as u32;
    let n_cores = t.drawn_smt_sets().len() as u32;
    let n_cpus = t.possible().weight();
    let uneven = || {
        fail(
            F,
            "the shape is not regular: packages, nodes, clusters or cores differ in size",
        )
    };
    let mut levels = Vec::new();
    let mut above = 1u32; // objects above the next level
    if n_nodes >= n_packages {
        if !n_nodes.is_multiple_of(n_packages) {
            return Err(uneven());
        }
        levels.push(format!("pack:{n_packages}"));
        if n_nodes > 1 {
            levels.push(format!("numa:{}", n_nodes / n_packages));
        }
        above = n_nodes;
    } else {
        if !n_packages.is_multiple_of(n_nodes) {
            return Err(uneven());
        }
        levels.push(format!("numa:{n_nodes}"));
        levels.push(format!("pack:{}", n_packages / n_nodes));
        above = above.max(n_packages);
    }
    if n_clusters > 0 {
        if !n_clusters.is_multiple_of(above) || !n_cores.is_multiple_of(n_clusters) {
            return Err(fail(
                F,
                "clusters are not nested evenly inside nodes and packages (a cluster spanning nodes cannot be written)",
            ));
        }
        levels.push(format!("l2:{}", n_clusters / above));
        above = n_clusters;
    }
    if !n_cores.is_multiple_of(above) || !n_cpus.is_multiple_of(n_cores) {
        return Err(uneven());
    }
    levels.push(format!("core:{}", n_cores / above));
    levels.push(format!("pu:{}", n_cpus / n_cores));
    let text = levels.join(" ");
    // The arithmetic above only proposes; the parser decides whether it says the same thing
    // (CPU numbering, e.g. Intel's k / k+N siblings, is what it usually catches).
    let back = super::hwloc::parse_synthetic(&text).map_err(|e| fail(F, e.to_string()))?;
    let back = Topology::new(&back).map_err(|e| fail(F, e.to_string()))?;
    if shape(&back) != shape(t) {
        return Err(fail(
            F,
            format!("{text:?} would number CPUs differently (synthetic PUs are numbered depth-first, SMT siblings adjacent)"),
        ));
    }
    Ok(text)
}

/// The files of a sysfs tree for the topology, keyed by path relative to `sys/devices/system`.
pub fn sysfs_files(t: &Topology) -> SysfsFiles {
    let mut files = SysfsFiles::new();
    cpu_range_files(t, &mut files);
    cpu_topology_files(t, &mut files);
    node_files(t, &mut files);
    files
}

/// `cpu/possible`, `present`, `online`, `offline` and `kernel_max`.
fn cpu_range_files(t: &Topology, files: &mut SysfsFiles) {
    let list = |s: &CpuSet| format!("{}\n", s.to_cpulist());
    files.insert("cpu/possible".into(), list(t.possible()));
    files.insert("cpu/present".into(), list(t.present()));
    files.insert("cpu/online".into(), list(t.online()));
    let offline = t.possible().andnot(t.online());
    files.insert("cpu/offline".into(), list(&offline));
    files.insert("cpu/kernel_max".into(), format!("{}\n", crate::topology::CPUS_MAX - 1));
}

/// Each CPU's package index and the `core_id` of each sibling set (by its first CPU).
fn package_and_core_ids(t: &Topology) -> (Vec<usize>, std::collections::BTreeMap<u32, u32>) {
    let n_bits = t.nr_cpu_ids();
    // Each CPU's package index, in one pass over the packages (a search per CPU is quadratic on a
    // machine of many one-CPU packages).
    let mut package_index = vec![0usize; n_bits as usize];
    for (i, p) in t.package_sets().iter().enumerate().rev() {
        for cpu in p.iter() {
            if let Some(slot) = package_index.get_mut(cpu as usize) {
                *slot = i;
            }
        }
    }
    let package_of = |cpu: u32| package_index.get(cpu as usize).copied().unwrap_or(0);
    // core_id: the ordinal of the sibling set inside its package, as the kernel numbers them
    // per package.
    let mut core_ids = std::collections::BTreeMap::new();
    let mut per_package = vec![0u32; t.package_sets().len().max(1)];
    for set in t.drawn_smt_sets() {
        let first = set.first().unwrap_or(0);
        let p = package_of(first);
        core_ids.insert(first, per_package[p]);
        per_package[p] += 1;
    }
    (package_index, core_ids)
}

/// `cpu/cpuN/topology/*` and `cpu/cpuN/online` of every possible CPU.
fn cpu_topology_files(t: &Topology, files: &mut SysfsFiles) {
    let n_bits = t.nr_cpu_ids();
    let list = |s: &CpuSet| format!("{}\n", s.to_cpulist());
    let mask = |s: &CpuSet| format!("{}\n", format_hex_mask(s, n_bits));
    let (package_index, core_ids) = package_and_core_ids(t);
    let package_of = |cpu: u32| package_index.get(cpu as usize).copied().unwrap_or(0);
    let mut cluster_index = std::collections::HashMap::new();
    for (i, c) in t.drawn_cluster_sets().iter().enumerate() {
        for cpu in c.iter() {
            cluster_index.insert(cpu, i as i64);
        }
    }
    let empty = CpuSet::new(n_bits);
    // The list and mask text of each sibling, cluster and package set, made once per set rather
    // than once per CPU and file: a package's mask is nr_cpu_ids / 4 digits, so formatting it for
    // each of its CPUs is quadratic. The sets are borrowed from `t` for the whole export, so a
    // set's address names it.
    let mut texts: std::collections::HashMap<*const CpuSet, (String, String)> = std::collections::HashMap::new();
    let mut text_of = |s: &CpuSet| -> (String, String) {
        texts
            .entry(std::ptr::from_ref(s))
            .or_insert_with(|| (list(s), mask(s)))
            .clone()
    };
    for cpu in t.possible().iter() {
        let dir = format!("cpu/cpu{cpu}");
        let (smt_list, smt_mask) = text_of(t.drawn_smt(cpu));
        let (cluster_list, cluster_mask) = text_of(t.drawn_cluster(cpu));
        let p = package_of(cpu);
        let (package_list, package_mask) = text_of(t.package_sets().get(p).unwrap_or(&empty));
        let core_id = core_ids
            .get(&t.drawn_smt(cpu).first().unwrap_or(cpu))
            .copied()
            .unwrap_or(0);
        let cluster_id = cluster_index.get(&cpu).copied().unwrap_or(-1);
        let mut put = |name: &str, text: String| {
            files.insert(format!("{dir}/topology/{name}"), text);
        };
        put("thread_siblings_list", smt_list.clone());
        put("thread_siblings", smt_mask.clone());
        put("core_cpus_list", smt_list);
        put("core_cpus", smt_mask);
        put("cluster_cpus_list", cluster_list);
        put("cluster_cpus", cluster_mask);
        put("package_cpus_list", package_list.clone());
        put("package_cpus", package_mask.clone());
        put("core_siblings_list", package_list.clone());
        put("core_siblings", package_mask.clone());
        put("die_cpus_list", package_list);
        put("die_cpus", package_mask);
        put("physical_package_id", format!("{p}\n"));
        put("die_id", "0\n".into());
        put("core_id", format!("{core_id}\n"));
        put("cluster_id", format!("{cluster_id}\n"));
        files.insert(
            format!("{dir}/online"),
            format!("{}\n", u8::from(t.online().contains(cpu))),
        );
    }
}

/// `node/possible`, `online`, `has_cpu` and each node's `cpulist`, `cpumap` and `distance`.
fn node_files(t: &Topology, files: &mut SysfsFiles) {
    let n_bits = t.nr_cpu_ids();
    let list = |s: &CpuSet| format!("{}\n", s.to_cpulist());
    let mask = |s: &CpuSet| format!("{}\n", format_hex_mask(s, n_bits));
    let all_nodes: Vec<u32> = (0..t.nr_node_ids()).collect();
    let node_list = |ids: &[u32]| {
        let s: CpuSet = ids.iter().copied().collect();
        format!("{}\n", s.to_cpulist())
    };
    files.insert("node/possible".into(), node_list(&all_nodes));
    files.insert("node/online".into(), node_list(&all_nodes));
    files.insert(
        "node/has_cpu".into(),
        node_list(&t.nodes_with_cpus().collect::<Vec<_>>()),
    );
    for node in 0..t.nr_node_ids() {
        let cpus = t.node_cpus(node);
        files.insert(format!("node/node{node}/cpulist"), list(cpus));
        files.insert(format!("node/node{node}/cpumap"), mask(cpus));
        // node_read_distance(): every node's distance, space-separated (4 bytes each at most).
        let mut row = String::with_capacity(4 * t.nr_node_ids() as usize + 1);
        for other in 0..t.nr_node_ids() {
            if other > 0 {
                row.push(' ');
            }
            crate::topology::cpulist::push_u64(&mut row, u64::from(t.distance(node, other)));
        }
        row.push('\n');
        files.insert(format!("node/node{node}/distance"), row);
    }
}

/// Write [`sysfs_files`] under `root/sys/devices/system`, plus a minimal `root/proc/cpuinfo`
/// (one stanza per online CPU) for `lscpu --sysroot`, which reads the sysfs topology only for CPUs
/// whose cpuinfo stanza names a vendor and model.
pub fn write_sysfs(t: &Topology, root: &Path) -> std::io::Result<()> {
    let base = root.join("sys/devices/system");
    for (rel, text) in sysfs_files(t) {
        let path = base.join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, text)?;
    }
    let mut cpuinfo = String::new();
    for cpu in t.online().iter() {
        let _ = write!(
            cpuinfo,
            "processor\t: {cpu}\nvendor_id\t: irqscope\ncpu family\t: 0\nmodel\t\t: 0\nmodel name\t: irqscope sysfs export\n\n"
        );
    }
    std::fs::create_dir_all(root.join("proc"))?;
    std::fs::write(root.join("proc/cpuinfo"), cpuinfo)
}
