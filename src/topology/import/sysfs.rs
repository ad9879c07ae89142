//! A sysfs tree laid out like `/sys/devices/system/{cpu,node}`.
//!
//! [`read_tree`] is the only part that touches files: it collects the few files the topology
//! needs into a [`SysfsFiles`] map (path relative to `devices/system` → text), and [`parse`]
//! turns that map into a spec without I/O.
//!
//! Read: `cpu/{possible,present,online}`, `cpu/cpuN/topology/{thread_siblings_list
//! (or core_cpus_list), cluster_cpus_list, package_cpus_list (or core_siblings_list),
//! die_cpus_list}`, `node/nodeN/{cpulist,distance}` and the `node/nodeN/cpuM` links (the node of
//! every present CPU: `cpulist` lists online CPUs only; an in-memory tree may give the link the
//! other way, `cpu/cpuM/nodeN`). A CPU without a `topology/` directory
//! (offline CPUs on real machines) comes back as its own core with no cluster, in the package of
//! its node. An empty `cluster_cpus_list` means an empty cluster mask. On a live machine an online
//! CPU's sibling lists hold only online siblings, so SMT pairs with an offline half import as
//! single CPUs; trees written by [`super::export::write_sysfs`] list full sets.

use super::{
    parse_id, short, DistanceRow, Draft, Format, ImportError, Imported, NodeDistances, Place, INPUT_BYTES_MAX,
};
use crate::topology::{parse_cpulist, CpuSet, TopologySpec, CPUS_MAX, NODES_MAX};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const F: Format = Format::Sysfs;
/// Largest single sysfs file read (a cpulist of 8192 sparse CPUs is under 64 KiB).
pub(crate) const FILE_BYTES_MAX: usize = 64 << 10;
/// Most files accepted: a full `topology/` directory (16 files) and `online` per CPU, a few
/// per node. [`read_tree`] reads far fewer; an in-memory tree from the exporter has them all.
pub(crate) const FILES_MAX: usize = (CPUS_MAX as usize) * 24 + (NODES_MAX as usize) * 8 + 16;

/// Files under `devices/system`, keyed by relative path (`cpu/cpu3/topology/core_cpus_list`).
pub type SysfsFiles = BTreeMap<String, String>;

const CPU_TOPOLOGY_FILES: [&str; 6] = [
    "thread_siblings_list",
    "core_cpus_list",
    "cluster_cpus_list",
    "package_cpus_list",
    "core_siblings_list",
    "die_cpus_list",
];

/// The `devices/system` directory under a root: `ROOT/sys/devices/system` when it exists (so
/// `/` means this machine), else `ROOT` itself when it holds `cpu/`.
pub(crate) fn system_dir(root: &Path) -> PathBuf {
    let under = root.join("sys/devices/system");
    if under.is_dir() {
        under
    } else {
        root.to_path_buf()
    }
}

/// Read the files [`parse`] needs from `ROOT/sys/devices/system` (or `ROOT` itself).
pub fn read_tree(root: &Path) -> std::io::Result<SysfsFiles> {
    let base = system_dir(root);
    let cpu_dir = base.join("cpu");
    if !cpu_dir.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "{}: no cpu/ directory (expected ROOT/sys/devices/system/cpu)",
                base.display()
            ),
        ));
    }
    let mut tree = TreeReader {
        base: &base,
        files: SysfsFiles::new(),
        total_bytes: 0,
    };
    for name in ["possible", "present", "online"] {
        tree.read(format!("cpu/{name}"))?;
    }
    for id in dir_ids(&base.join("cpu"), "cpu")? {
        for f in CPU_TOPOLOGY_FILES {
            tree.read(format!("cpu/cpu{id}/topology/{f}"))?;
        }
        // Mark the directory even when it has no topology/ (offline CPU).
        tree.files.entry(format!("cpu/cpu{id}")).or_default();
    }
    let node_dir = base.join("node");
    for id in dir_ids(&node_dir, "node")? {
        tree.read(format!("node/node{id}/cpulist"))?;
        tree.read(format!("node/node{id}/distance"))?;
        tree.files.entry(format!("node/node{id}")).or_default();
        for cpu in node_cpu_links(&node_dir.join(format!("node{id}")))? {
            tree.check_count()?;
            tree.files.insert(format!("node/node{id}/cpu{cpu}"), String::new());
        }
    }
    Ok(tree.files)
}

/// The files read so far under `base`, within [`FILES_MAX`] files, [`FILE_BYTES_MAX`] bytes
/// each and [`INPUT_BYTES_MAX`] in all.
struct TreeReader<'a> {
    base: &'a Path,
    files: SysfsFiles,
    total_bytes: usize,
}

impl TreeReader<'_> {
    fn check_count(&self) -> std::io::Result<()> {
        if self.files.len() >= FILES_MAX {
            return Err(std::io::Error::other(format!("more than {FILES_MAX} topology files")));
        }
        Ok(())
    }

    /// Read the file at `rel` if it is one; a missing file is no error.
    fn read(&mut self, rel: String) -> std::io::Result<()> {
        let path = self.base.join(&rel);
        let Ok(meta) = std::fs::metadata(&path) else {
            return Ok(());
        };
        if !meta.is_file() {
            return Ok(());
        }
        self.check_count()?;
        let mut text = String::new();
        use std::io::Read;
        std::fs::File::open(&path)?
            .take(FILE_BYTES_MAX as u64 + 1)
            .read_to_string(&mut text)?;
        if text.len() > FILE_BYTES_MAX {
            return Err(std::io::Error::other(format!(
                "{}: larger than {FILE_BYTES_MAX} bytes",
                path.display()
            )));
        }
        self.total_bytes += text.len();
        if self.total_bytes > INPUT_BYTES_MAX {
            return Err(std::io::Error::other(format!(
                "more than {INPUT_BYTES_MAX} bytes of topology files"
            )));
        }
        self.files.insert(rel, text);
        Ok(())
    }
}

/// The ids of the `PREFIXN` directories under `dir` (`cpu/cpu12` → 12), ascending; none when
/// `dir` cannot be read; at most [`CPUS_MAX`].
fn dir_ids(dir: &Path, prefix: &str) -> std::io::Result<Vec<u32>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut ids = Vec::new();
    for entry in entries {
        let name = entry?.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(id) = name.strip_prefix(prefix).and_then(|n| n.parse::<u32>().ok()) {
            if ids.len() >= CPUS_MAX as usize {
                return Err(std::io::Error::other(format!(
                    "more than {CPUS_MAX} {prefix} directories"
                )));
            }
            ids.push(id);
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// `cpu12` → `12` for `prefix` `cpu` (digits only).
fn id_after<'a>(name: &'a str, prefix: &str) -> Option<&'a str> {
    name.strip_prefix(prefix)
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The CPUs linked under a node directory (`nodeN/cpuM`, symbolic links to `cpu/cpuM`): every
/// present CPU of the node, online or not. `register_cpu_under_node()` (drivers/base/node.c)
/// makes the link when a CPU is registered (`register_cpu()`, drivers/base/cpu.c, for each
/// present CPU) and `node_dev_init()` for the present CPUs of each node, while
/// `nodeN/cpulist` prints the node's mask ANDed with `cpu_online_mask` (`cpulist_read()`), so
/// the links are the only place sysfs names the node of a present CPU that is offline (booted
/// with `maxcpus=`, or taken down).
fn node_cpu_links(node_dir: &Path) -> std::io::Result<Vec<u32>> {
    let mut cpus = Vec::new();
    let Ok(entries) = std::fs::read_dir(node_dir) else {
        return Ok(cpus);
    };
    for entry in entries {
        let name = entry?.file_name();
        if let Some(cpu) = name
            .to_str()
            .and_then(|n| n.strip_prefix("cpu"))
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<u32>().ok())
        {
            if cpus.len() >= CPUS_MAX as usize {
                return Err(std::io::Error::other(format!(
                    "{}: more than {CPUS_MAX} CPU links",
                    node_dir.display()
                )));
            }
            cpus.push(cpu);
        }
    }
    cpus.sort_unstable();
    Ok(cpus)
}

/// Turn the files of a sysfs tree into a spec.
pub fn parse(files: &SysfsFiles) -> Result<TopologySpec, ImportError> {
    import(files).map(|i| i.spec)
}

/// [`parse`] with what the tree did not say (CPUs without `topology/`, missing distance files).
pub fn import(files: &SysfsFiles) -> Result<Imported, ImportError> {
    check_size(files)?;
    let mut draft = Draft::new(F, "imported from sysfs");
    for name in ["cpu/possible", "cpu/present", "cpu/online"] {
        if let Some(text) = files.get(name) {
            let set = Some(cpulist(name, text)?);
            match name {
                "cpu/possible" => draft.possible = set,
                "cpu/present" => draft.present = set,
                _ => draft.online = set,
            }
        }
    }
    let (cpu_dirs, node_dirs) = directories(files)?;
    if cpu_dirs.is_empty() && draft.possible.is_none() {
        return Err(ImportError::new(
            F,
            None,
            "cpu",
            "no cpu/possible and no cpu/cpuN directories",
        ));
    }
    for &node in &node_dirs {
        draft.add_node_id(node);
        let file = format!("node/node{node}/cpulist");
        if let Some(text) = files.get(&file) {
            for cpu in cpulist(&file, text)?.iter() {
                draft.set_node(cpu, node, place(&file))?;
            }
        }
    }
    node_links(files, &mut draft)?;
    let mut missing_topology = CpuSet::new(CPUS_MAX);
    for cpu in cpu_dirs.iter() {
        if !cpu_topology(files, cpu, &mut draft)? {
            missing_topology.insert(cpu);
        }
    }
    if !missing_topology.is_empty() {
        draft.warnings.push(format!(
            "CPUs {} have no topology/ directory (offline); each imported as its own core, without a cluster.",
            short(&missing_topology.to_cpulist())
        ));
    }
    draft.distances = distances(files, &node_dirs)?;
    if let (Some(possible), Some(present)) = (&draft.possible, &draft.present) {
        if let Some(cpu) = present.andnot(possible).first() {
            return Err(ImportError::new(
                F,
                Some(1),
                "cpu/present",
                format!(
                    "CPU {cpu} is present but not in cpu/possible {}",
                    short(&possible.to_cpulist())
                ),
            ));
        }
    }
    draft.finish()
}

/// At most [`FILES_MAX`] files and [`INPUT_BYTES_MAX`] bytes in the files [`import`] reads
/// (hex masks of a large machine are big and unused, so they do not count).
fn check_size(files: &SysfsFiles) -> Result<(), ImportError> {
    if files.len() > FILES_MAX {
        return Err(ImportError::over_limit(F, "", FILES_MAX, "files"));
    }
    let used = |k: &str| {
        k.ends_with("_list")
            || k.ends_with("/cpulist")
            || k.ends_with("/distance")
            || k.starts_with("cpu/p")
            || k == "cpu/online"
    };
    let total: usize = files
        .iter()
        .filter(|(k, _)| used(k))
        .map(|(k, v)| k.len() + v.len())
        .sum();
    if total > INPUT_BYTES_MAX {
        return Err(ImportError::over_limit(
            F,
            "",
            INPUT_BYTES_MAX,
            "bytes of cpulist and distance files",
        ));
    }
    Ok(())
}

/// A sysfs file is one line: the file names the place.
fn place(file: &str) -> Place {
    Place::new(None, file.to_string())
}

/// A cpulist file: one line of at most [`FILE_BYTES_MAX`] bytes.
fn cpulist(file: &str, text: &str) -> Result<CpuSet, ImportError> {
    if text.len() > FILE_BYTES_MAX {
        return Err(ImportError::new(
            F,
            None,
            file,
            format!("larger than {FILE_BYTES_MAX} bytes"),
        ));
    }
    let line = text.trim_end_matches('\n');
    if line.contains('\n') {
        return Err(ImportError::new(F, Some(2), file, "a cpulist file has one line"));
    }
    parse_cpulist(line.trim(), CPUS_MAX).map_err(|e| ImportError::new(F, Some(1), file, e.to_string()))
}

/// The `cpu/cpuN` directories as a set and the `node/nodeN` ones in id order.
fn directories(files: &SysfsFiles) -> Result<(CpuSet, Vec<u32>), ImportError> {
    let mut cpu_dirs = CpuSet::new(CPUS_MAX);
    let mut node_dirs = Vec::new();
    for key in files.keys() {
        let mut parts = key.split('/');
        match (parts.next(), parts.next()) {
            (Some("cpu"), Some(d))
                if d.starts_with("cpu") && d[3..].bytes().all(|b| b.is_ascii_digit()) && d.len() > 3 =>
            {
                cpu_dirs.insert(parse_id(F, &place(key), &d[3..], "CPU", CPUS_MAX)?);
            }
            (Some("node"), Some(d))
                if d.starts_with("node") && d[4..].bytes().all(|b| b.is_ascii_digit()) && d.len() > 4 =>
            {
                let id = parse_id(F, &place(key), &d[4..], "node", NODES_MAX)?;
                if !node_dirs.contains(&id) {
                    node_dirs.push(id);
                }
            }
            _ => {}
        }
    }
    node_dirs.sort_unstable();
    Ok((cpu_dirs, node_dirs))
}

/// The node links (`node/nodeN/cpuM`, or `cpu/cpuM/nodeN` the other way) name the node of
/// every present CPU, the offline ones included, which the cpulists leave out.
fn node_links(files: &SysfsFiles, draft: &mut Draft) -> Result<(), ImportError> {
    for key in files.keys() {
        let parts: Vec<&str> = key.split('/').collect();
        let link = match parts.as_slice() {
            ["node", node, cpu] => id_after(node, "node").zip(id_after(cpu, "cpu")).map(|(n, c)| (c, n)),
            ["cpu", cpu, node] => id_after(cpu, "cpu").zip(id_after(node, "node")),
            _ => None,
        };
        if let Some((cpu, node)) = link {
            let cpu = parse_id(F, &place(key), cpu, "CPU", CPUS_MAX)?;
            let node = parse_id(F, &place(key), node, "node", NODES_MAX)?;
            draft.set_node(cpu, node, place(key))?;
        }
    }
    Ok(())
}

/// A CPU's `topology/` lists into the draft: its siblings (containing it), its cluster (empty,
/// or containing it) and its package (containing it). `false` when it has no sibling list,
/// as an offline CPU has no `topology/`.
fn cpu_topology(files: &SysfsFiles, cpu: u32, draft: &mut Draft) -> Result<bool, ImportError> {
    let dir = format!("cpu/cpu{cpu}/topology");
    let read = |names: &[&str]| -> Result<Option<(String, CpuSet)>, ImportError> {
        for n in names {
            let file = format!("{dir}/{n}");
            if let Some(text) = files.get(&file) {
                return Ok(Some((file.clone(), cpulist(&file, text)?)));
            }
        }
        Ok(None)
    };
    let must_contain = |file: String, set: &CpuSet, message: String| {
        if set.contains(cpu) {
            Ok(())
        } else {
            Err(ImportError::new(F, Some(1), file, message))
        }
    };
    let Some((file, siblings)) = read(&["thread_siblings_list", "core_cpus_list"])? else {
        return Ok(false);
    };
    must_contain(
        file.clone(),
        &siblings,
        format!("CPU {cpu}'s sibling list {siblings} does not contain CPU {cpu}"),
    )?;
    if siblings.weight() > 1 {
        draft.smt.add(F, siblings, place(&file))?;
    }
    if let Some((file, cluster)) = read(&["cluster_cpus_list"])? {
        if !cluster.is_empty() {
            must_contain(
                file.clone(),
                &cluster,
                format!("cluster {cluster} does not contain CPU {cpu}"),
            )?;
            draft.clusters.add(F, cluster, place(&file))?;
        }
    }
    if let Some((file, package)) = read(&["package_cpus_list", "core_siblings_list"])? {
        must_contain(
            file.clone(),
            &package,
            format!("package {package} does not contain CPU {cpu}"),
        )?;
        draft.packages.add(F, package, place(&file))?;
    }
    Ok(true)
}

/// The distance rows: node N's `distance` lists the distance to every node directory, in id
/// order. A tree with some distance files has one per node directory; `None` without any.
fn distances(files: &SysfsFiles, node_dirs: &[u32]) -> Result<Option<NodeDistances>, ImportError> {
    let rows: Vec<DistanceRow> = node_dirs
        .iter()
        .filter_map(|&node| {
            let file = format!("node/node{node}/distance");
            files.get(&file).map(|text| (file, text))
        })
        .map(|(file, text)| {
            let p = place(&file);
            if text.trim_end_matches('\n').contains('\n') {
                return Err(ImportError::new(F, Some(2), file, "a distance file has one line"));
            }
            let row = text
                .split_whitespace()
                .map(|w| parse_id(F, &p, w, "distance", 256))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((row, p))
        })
        .collect::<Result<_, ImportError>>()?;
    if rows.is_empty() {
        return Ok(None);
    }
    if rows.len() != node_dirs.len() {
        return Err(ImportError::new(
            F,
            None,
            "node",
            format!("{} node directories but {} distance files", node_dirs.len(), rows.len()),
        ));
    }
    Ok(Some((node_dirs.to_vec(), rows)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(pairs: &[(&str, &str)]) -> SysfsFiles {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    /// A two-node machine booted with CPUs 1 and 3 present but offline: the node cpulists
    /// name online CPUs only, the links name all present ones.
    #[test]
    fn offline_cpus_take_their_node_from_the_links() {
        let mut f = files(&[
            ("cpu/possible", "0-3\n"),
            ("cpu/present", "0-3\n"),
            ("cpu/online", "0,2\n"),
            ("node/node0/cpulist", "0\n"),
            ("node/node1/cpulist", "2\n"),
            ("node/node0/cpu0", ""),
            ("node/node0/cpu1", ""),
            ("node/node1/cpu2", ""),
            ("node/node1/cpu3", ""),
        ]);
        for cpu in 0..4 {
            f.insert(format!("cpu/cpu{cpu}"), String::new());
        }
        let spec = parse(&f).unwrap();
        assert_eq!(spec.nodes, Some(vec!["0-1".to_string(), "2-3".to_string()]));
        // Without the links the offline CPUs fall to node 0, as agents did before.
        f.retain(|k, _| !(k.starts_with("node/") && k.split('/').nth(2).and_then(|c| id_after(c, "cpu")).is_some()));
        let spec = parse(&f).unwrap();
        assert_eq!(spec.nodes, Some(vec!["0-1,3".to_string(), "2".to_string()]));
        // The reverse link says the same; a link that contradicts a cpulist is an error.
        f.insert("cpu/cpu3/node1".into(), String::new());
        f.insert("cpu/cpu1/node0".into(), String::new());
        assert_eq!(
            parse(&f).unwrap().nodes,
            Some(vec!["0-1".to_string(), "2-3".to_string()])
        );
        f.insert("cpu/cpu2/node0".into(), String::new());
        let e = parse(&f).unwrap_err().to_string();
        assert!(e.contains("CPU 2"), "{e}");
    }
}
