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

use super::{parse_id, short, Draft, Format, ImportError, Imported, Place, INPUT_BYTES_MAX};
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
    let mut files = SysfsFiles::new();
    let mut total_bytes = 0usize;
    let mut read = |rel: String, files: &mut SysfsFiles| -> std::io::Result<()> {
        let path = base.join(&rel);
        let Ok(meta) = std::fs::metadata(&path) else {
            return Ok(());
        };
        if !meta.is_file() {
            return Ok(());
        }
        if files.len() >= FILES_MAX {
            return Err(std::io::Error::other(format!("more than {FILES_MAX} topology files")));
        }
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
        total_bytes += text.len();
        if total_bytes > INPUT_BYTES_MAX {
            return Err(std::io::Error::other(format!(
                "more than {INPUT_BYTES_MAX} bytes of topology files"
            )));
        }
        files.insert(rel, text);
        Ok(())
    };
    for name in ["possible", "present", "online"] {
        read(format!("cpu/{name}"), &mut files)?;
    }
    for (kind, prefix) in [("cpu", "cpu"), ("node", "node")] {
        let dir = base.join(kind);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut ids = Vec::new();
        for entry in entries {
            let name = entry?.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(id) = name.strip_prefix(prefix).and_then(|n| n.parse::<u32>().ok()) {
                if ids.len() >= CPUS_MAX as usize {
                    return Err(std::io::Error::other(format!(
                        "more than {CPUS_MAX} {kind} directories"
                    )));
                }
                ids.push(id);
            }
        }
        ids.sort_unstable();
        for id in ids {
            if kind == "cpu" {
                for f in CPU_TOPOLOGY_FILES {
                    read(format!("cpu/cpu{id}/topology/{f}"), &mut files)?;
                }
                // Mark the directory even when it has no topology/ (offline CPU).
                files.entry(format!("cpu/cpu{id}")).or_default();
            } else {
                read(format!("node/node{id}/cpulist"), &mut files)?;
                read(format!("node/node{id}/distance"), &mut files)?;
                files.entry(format!("node/node{id}")).or_default();
                for cpu in node_cpu_links(&dir.join(format!("node{id}")))? {
                    if files.len() >= FILES_MAX {
                        return Err(std::io::Error::other(format!("more than {FILES_MAX} topology files")));
                    }
                    files.insert(format!("node/node{id}/cpu{cpu}"), String::new());
                }
            }
        }
    }
    Ok(files)
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
    if files.len() > FILES_MAX {
        return Err(ImportError::new(F, None, "", format!("more than {FILES_MAX} files")));
    }
    // Count only the files read below (hex masks of a large machine are big and unused).
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
        return Err(ImportError::new(
            F,
            None,
            "",
            format!("more than {INPUT_BYTES_MAX} bytes of cpulist and distance files"),
        ));
    }
    let mut draft = Draft::new(F, "imported from sysfs");
    // A sysfs file is one line: the file names the place.
    let place = |file: &str| Place::new(None, file.to_string());
    let cpulist = |file: &str, text: &str| -> Result<CpuSet, ImportError> {
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
    };
    for (name, slot) in [("cpu/possible", 0), ("cpu/present", 1), ("cpu/online", 2)] {
        if let Some(text) = files.get(name) {
            let set = cpulist(name, text)?;
            match slot {
                0 => draft.possible = Some(set),
                1 => draft.present = Some(set),
                _ => draft.online = Some(set),
            }
        }
    }
    // cpu/cpuN directories and nodes.
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
    // The node links (`node/nodeN/cpuM`, or `cpu/cpuM/nodeN` the other way) name the node of
    // every present CPU, the offline ones included, which the cpulists leave out.
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
    let mut missing_topology = CpuSet::new(CPUS_MAX);
    for cpu in cpu_dirs.iter() {
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
        let Some((file, siblings)) = read(&["thread_siblings_list", "core_cpus_list"])? else {
            missing_topology.insert(cpu);
            continue;
        };
        if !siblings.contains(cpu) {
            return Err(ImportError::new(
                F,
                Some(1),
                file,
                format!("CPU {cpu}'s sibling list {siblings} does not contain CPU {cpu}"),
            ));
        }
        if siblings.weight() > 1 {
            draft.smt.add(F, siblings, place(&file))?;
        }
        if let Some((file, cluster)) = read(&["cluster_cpus_list"])? {
            if !cluster.is_empty() {
                if !cluster.contains(cpu) {
                    return Err(ImportError::new(
                        F,
                        Some(1),
                        file,
                        format!("cluster {cluster} does not contain CPU {cpu}"),
                    ));
                }
                draft.clusters.add(F, cluster, place(&file))?;
            }
        }
        if let Some((file, package)) = read(&["package_cpus_list", "core_siblings_list"])? {
            if !package.contains(cpu) {
                return Err(ImportError::new(
                    F,
                    Some(1),
                    file,
                    format!("package {package} does not contain CPU {cpu}"),
                ));
            }
            draft.packages.add(F, package, place(&file))?;
        }
    }
    if !missing_topology.is_empty() {
        draft.warnings.push(format!(
            "CPUs {} have no topology/ directory (offline); each imported as its own core, without a cluster.",
            short(&missing_topology.to_cpulist())
        ));
    }
    // Distances: node N's row lists the distance to every node directory, in id order.
    let rows: Vec<(Vec<u32>, Place)> = node_dirs
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
    if !rows.is_empty() {
        if rows.len() != node_dirs.len() {
            return Err(ImportError::new(
                F,
                None,
                "node",
                format!("{} node directories but {} distance files", node_dirs.len(), rows.len()),
            ));
        }
        draft.distances = Some((node_dirs.clone(), rows));
    }
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
