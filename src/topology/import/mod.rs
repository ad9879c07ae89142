//! Import topologies from what real machines and tools print, and export them back.
//!
//! Every parser is pure (`&str -> TopologySpec`, or a map of file texts for sysfs), bounds its
//! input ([`INPUT_BYTES_MAX`], [`LINES_MAX`], [`CPUS_MAX`],
//! [`NODES_MAX`]) and reports bad input as an [`ImportError`] naming the line
//! or file and field; none panics. The only file access is [`sysfs::read_tree`] and
//! [`export::write_sysfs`], thin wrappers the CLI calls.
//!
//! Each parser fills a [`Draft`] (CPU → node, sibling sets, clusters, packages, distances);
//! [`Draft::finish`] checks what the tools can contradict (a CPU in two nodes, SMT siblings on
//! different nodes, a distance matrix that is not square or has a diagonal other than 10), then
//! validates with [`Topology::new`] and returns the canonical explicit spec
//! ([`Topology::to_spec`]), sets ordered by their first CPU.
//!
//! **What a source cannot carry is said, never invented silently.** Every parser has an
//! `import` function returning an [`Imported`]: the spec, one warning per thing the source
//! lost (clusters, distances, SMT, online state, …) naming the default filled in for it, and,
//! from hwloc XML with I/O objects, the NUMA node of each PCI device ([`DeviceLocality`]). The
//! warnings are also kept in the spec's `note`, so a saved topology file still says what was
//! assumed. `parse` is `import` without the side lists. See `docs/topology-import.md`.
//!
//! **Asymmetric distances are kept.** ACPI SLIT may be asymmetric and Linux stores and prints it
//! as given (see [`DISTANCE_MAX`](super::DISTANCE_MAX)); every importer and exporter keeps
//! `distances[a][b]` as `node_distance(a, b)`.

pub mod export;
pub mod hwloc;
pub mod lscpu;
pub mod numactl;
pub mod sysfs;

use super::{CpuSet, Topology, TopologySpec, CPUS_MAX, LOCAL_DISTANCE, NODES_MAX, NOTE_BYTES_MAX};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// Largest input text accepted (an hwloc XML of an 8192-CPU machine is a few MB).
pub const INPUT_BYTES_MAX: usize = 64 << 20;
/// Most lines accepted in one input.
pub const LINES_MAX: usize = 1_000_000;

/// An imported topology with what its source could not carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Imported {
    pub spec: TopologySpec,
    /// One sentence per thing the source cannot carry or did not say, naming the default filled
    /// in (`no cluster information in lscpu output …`). Empty when nothing was lost.
    pub warnings: Vec<String>,
    /// PCI devices and their NUMA node, in the order of the input (hwloc XML with I/O objects).
    pub devices: Vec<DeviceLocality>,
}

/// Where a PCI device sits: hwloc attaches an I/O object below the smallest object that holds
/// its `local_cpus`, so the node whose CPUs cover that object is the device's node
/// (`dev_to_node`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceLocality {
    /// PCI address, `0000:41:00.0`.
    pub pci_addr: String,
    /// PCI class and subclass, four hex digits (`0108` NVMe, `0200` Ethernet).
    pub class: String,
    /// `vendor:device` in hex, as hwloc prints them.
    pub vendor_device: String,
    /// The kernel names of the device (hwloc OS devices: `nvme0n1`, `eth0`, `mlx5_0`).
    pub os_names: Vec<String>,
    /// The NUMA node, `None` when the device's locality spans nodes (`NUMA_NO_NODE`).
    pub node: Option<u32>,
}

/// Most PCI devices read from one hwloc XML.
pub const DEVICES_MAX: usize = 4096;

impl DeviceLocality {
    /// A short name for the class (`NVMe`, `Ethernet`, …), or `class XXXX`.
    pub fn class_name(&self) -> String {
        let known = match self.class.as_str() {
            "0104" => "RAID",
            "0106" => "SATA",
            "0107" => "SAS",
            "0108" => "NVMe",
            "0200" => "Ethernet",
            "0207" => "InfiniBand",
            "0280" => "network",
            "0300" => "VGA",
            "0302" => "3D controller",
            "1200" => "accelerator",
            _ => "",
        };
        if known.is_empty() {
            format!("class {}", self.class)
        } else {
            known.to_string()
        }
    }

    /// The device name to use in a device token: its first OS device name, else `pci-ADDR`.
    pub fn name(&self) -> String {
        self.os_names
            .first()
            .cloned()
            .unwrap_or_else(|| format!("pci-{}", self.pci_addr))
    }

    /// A device token with the node filled in and the queue count left to the user (hwloc does
    /// not know how many vectors a driver asks for): `QUEUES:name=nvme0n1,node=1`.
    pub fn token_hint(&self) -> String {
        match self.node {
            Some(node) => format!("QUEUES:name={},node={node}", self.name()),
            None => format!("QUEUES:name={}", self.name()),
        }
    }
}

/// The input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Toml,
    Sysfs,
    Lscpu,
    Numactl,
    HwlocXml,
    Synthetic,
}

impl Format {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Format::Toml => "toml",
            Format::Sysfs => "sysfs",
            Format::Lscpu => "lscpu",
            Format::Numactl => "numactl",
            Format::HwlocXml => "hwloc-xml",
            Format::Synthetic => "synthetic",
        }
    }
}

impl Format {
    /// How warnings name the source: `lscpu output`, `the hwloc XML`, ….
    fn source(self) -> &'static str {
        match self {
            Format::Toml => "the topology file",
            Format::Sysfs => "the sysfs tree",
            Format::Lscpu => "lscpu output",
            Format::Numactl => "numactl -H output",
            Format::HwlocXml => "the hwloc XML",
            Format::Synthetic => "an hwloc synthetic description",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Bad input: which format, where, what is wrong. Shown as one line:
/// `lscpu: line 4 (column NODE): node 5000 is beyond the limit …` or
/// `sysfs: node/node1/cpulist: CPU 2 is in node 1 here but in node 0 at node/node0/cpulist`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ImportError {
    pub(crate) format: Format,
    /// Line number (1-based) when the input has lines.
    pub(crate) line: Option<usize>,
    /// The field, column or file; empty when the error is about the whole input.
    pub(crate) field: String,
    pub(crate) message: String,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let place = Place::new(self.line, self.field.clone()).describe();
        if place.is_empty() {
            write!(f, "{}: {}", self.format, self.message)
        } else {
            write!(f, "{}: {place}: {}", self.format, self.message)
        }
    }
}

impl ImportError {
    /// An input over one of the importers' size limits: "more than `max` `what`".
    pub(crate) fn over_limit(format: Format, field: &str, max: impl std::fmt::Display, what: &str) -> Self {
        ImportError::new(format, None, field, format!("more than {max} {what}"))
    }

    pub(crate) fn new(
        format: Format,
        line: Option<usize>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ImportError {
            format,
            line,
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Where a fact came from, for error messages.
#[derive(Debug, Clone, Default)]
pub(crate) struct Place {
    pub(crate) line: Option<usize>,
    pub(crate) field: String,
}

impl Place {
    pub(crate) fn new(line: Option<usize>, field: impl Into<String>) -> Place {
        Place {
            line,
            field: field.into(),
        }
    }

    /// `line 4 (node 0 cpus)`, `line 4`, or the field alone.
    pub(crate) fn describe(&self) -> String {
        match (self.line, self.field.is_empty()) {
            (Some(l), false) => format!("line {l} ({})", self.field),
            (Some(l), true) => format!("line {l}"),
            (None, _) => self.field.clone(),
        }
    }
}

/// Check the size limits shared by the text parsers.
pub(crate) fn check_text(format: Format, text: &str) -> Result<(), ImportError> {
    if text.len() > INPUT_BYTES_MAX {
        return Err(ImportError::new(
            format,
            None,
            "",
            format!(
                "input is {} bytes, more than the limit of {INPUT_BYTES_MAX}",
                text.len()
            ),
        ));
    }
    let n_lines = text.lines().take(LINES_MAX + 1).count();
    if n_lines > LINES_MAX {
        return Err(ImportError::over_limit(format, "", LINES_MAX, "lines"));
    }
    Ok(())
}

/// Parse a CPU or node number with its limit.
pub(crate) fn parse_id(format: Format, place: &Place, text: &str, what: &str, limit: u32) -> Result<u32, ImportError> {
    let err = |m: String| Err(ImportError::new(format, place.line, place.field.clone(), m));
    match text.trim().parse::<u64>() {
        Ok(n) if n < u64::from(limit) => Ok(n as u32),
        Ok(n) => err(format!(
            "{what} {n} is beyond the limit ({what}s must be below {limit})"
        )),
        Err(_) => err(format!("{what}: {:?} is not a number", short(text))),
    }
}

/// A bounded excerpt of bad input for messages.
pub(crate) fn short(text: &str) -> String {
    const SHOWN_CHARS_MAX: usize = 40;
    let t = text.trim();
    if t.chars().count() <= SHOWN_CHARS_MAX {
        t.to_string()
    } else {
        format!("{}…", t.chars().take(SHOWN_CHARS_MAX).collect::<String>())
    }
}

/// Sets that must not overlap (SMT sibling sets, clusters, packages), deduplicated: a tool
/// prints each sibling set once per member CPU.
#[derive(Debug, Default)]
pub(crate) struct Partition {
    what: &'static str,
    sets: Vec<(CpuSet, Place)>,
    owner: BTreeMap<u32, usize>,
}

impl Partition {
    pub(crate) fn new(what: &'static str) -> Partition {
        Partition {
            what,
            ..Default::default()
        }
    }

    /// Add a set; the same set again is fine, an overlapping different one is an error.
    pub(crate) fn add(&mut self, format: Format, set: CpuSet, place: Place) -> Result<(), ImportError> {
        let Some(first) = set.first() else { return Ok(()) };
        if let Some(&i) = self.owner.get(&first) {
            if self.sets[i].0 == set {
                return Ok(());
            }
        }
        for cpu in set.iter() {
            if let Some(&i) = self.owner.get(&cpu) {
                let (other, other_place) = &self.sets[i];
                let at = other_place.describe();
                return Err(ImportError::new(
                    format,
                    place.line,
                    place.field,
                    format!(
                        "{} {set} overlaps {} {other} (from {at}) at CPU {cpu}",
                        self.what, self.what
                    ),
                ));
            }
        }
        let idx = self.sets.len();
        for cpu in set.iter() {
            self.owner.insert(cpu, idx);
        }
        self.sets.push((set, place));
        Ok(())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    pub(crate) fn contains(&self, cpu: u32) -> bool {
        self.owner.contains_key(&cpu)
    }

    fn sorted(&self) -> Vec<&(CpuSet, Place)> {
        let mut v: Vec<_> = self.sets.iter().collect();
        v.sort_by_key(|(s, _)| s.first());
        v
    }
}

/// One row of a distance matrix and where it was read.
pub(crate) type DistanceRow = (Vec<u32>, Place);

/// The node ids a source names and their rows of distances.
pub(crate) type NodeDistances = (Vec<u32>, Vec<DistanceRow>);

/// What a parser learned, before validation.
#[derive(Debug)]
pub(crate) struct Draft {
    pub(crate) format: Format,
    pub(crate) name: String,
    /// What the source lost or left unsaid, and the default filled in (see [`Imported`]).
    pub(crate) warnings: Vec<String>,
    /// PCI device locality (hwloc XML).
    pub(crate) devices: Vec<DeviceLocality>,
    /// CPU → (node, where that was said).
    pub(crate) cpu_node: BTreeMap<u32, (u32, Place)>,
    /// Node ids seen (some may have no CPUs).
    pub(crate) node_ids: Vec<u32>,
    pub(crate) smt: Partition,
    pub(crate) clusters: Partition,
    pub(crate) packages: Partition,
    pub(crate) possible: Option<CpuSet>,
    pub(crate) present: Option<CpuSet>,
    pub(crate) online: Option<CpuSet>,
    /// Node ids of the columns, and each row with where it was.
    pub(crate) distances: Option<(Vec<u32>, Vec<DistanceRow>)>,
}

impl Draft {
    pub(crate) fn new(format: Format, name: impl Into<String>) -> Draft {
        Draft {
            format,
            name: name.into(),
            warnings: Vec::new(),
            devices: Vec::new(),
            cpu_node: BTreeMap::new(),
            node_ids: Vec::new(),
            smt: Partition::new("SMT sibling set"),
            clusters: Partition::new("cluster"),
            packages: Partition::new("package"),
            possible: None,
            present: None,
            online: None,
            distances: None,
        }
    }

    pub(crate) fn err(&self, place: &Place, message: impl Into<String>) -> ImportError {
        ImportError::new(self.format, place.line, place.field.clone(), message)
    }

    pub(crate) fn add_node_id(&mut self, node: u32) {
        if !self.node_ids.contains(&node) {
            self.node_ids.push(node);
        }
    }

    /// Put a CPU in a node; a CPU already in another node is an error.
    pub(crate) fn set_node(&mut self, cpu: u32, node: u32, place: Place) -> Result<(), ImportError> {
        self.add_node_id(node);
        if let Some((other, other_place)) = self.cpu_node.get(&cpu) {
            if *other != node {
                let at = other_place.describe();
                return Err(self.err(
                    &place,
                    format!("CPU {cpu} is in node {node} here but in node {other} at {at}"),
                ));
            }
            return Ok(());
        }
        if self.cpu_node.len() >= CPUS_MAX as usize {
            return Err(self.err(&place, format!("more than {CPUS_MAX} CPUs")));
        }
        self.cpu_node.insert(cpu, (node, place));
        Ok(())
    }

    /// Say that the source carries no distance matrix (when there is more than one node).
    fn warn_no_distances(&mut self, nr_node_ids: u32) {
        let format = self.format;
        let why = match format {
            Format::Lscpu => "lscpu prints no NUMA distances",
            Format::Numactl => "numactl -H output has no `node distances:` matrix",
            Format::HwlocXml => "the hwloc XML has no NUMANode distances2 matrix (hwloc 1.x <distances> are not read)",
            Format::Synthetic => "an hwloc synthetic description carries no NUMA distances",
            Format::Sysfs => "the sysfs tree has no node*/distance files",
            Format::Toml => "the topology file has no distances",
        };
        self.warnings.push(format!(
            "{why}: the default 10 (local) / 20 (remote) is filled in for the {nr_node_ids} nodes, \
             so a machine with other distances (SNC/NPS, more than one hop) differs; take them from \
             sysfs node*/distance or numactl -H."
        ));
    }

    /// Check, validate and return the canonical explicit spec with the warnings.
    pub(crate) fn finish(mut self) -> Result<Imported, ImportError> {
        let format = self.format;
        let possible = self.possible_cpus()?;
        self.place_homeless(&possible)?;
        self.check_smt_nodes()?;
        let (nr_node_ids, node_sets) = self.node_sets()?;
        let packages = self.packages_of(&possible, &node_sets);
        let distances = match self.distances.take() {
            None => {
                if nr_node_ids > 1 {
                    self.warn_no_distances(nr_node_ids);
                }
                None
            }
            Some((ids, rows)) => self.check_distances(&ids, &rows, nr_node_ids)?,
        };
        let list = |p: &Partition| p.sorted().into_iter().map(|(s, _)| s.to_cpulist()).collect::<Vec<_>>();
        let spec = TopologySpec {
            name: self.name.clone(),
            note: note_of(format, &self.warnings),
            source: String::new(),
            nr_cpu_ids: None,
            nr_node_ids: Some(nr_node_ids),
            nodes: Some(node_sets.iter().map(CpuSet::to_cpulist).collect()),
            smt: list(&self.smt),
            clusters: list(&self.clusters),
            packages: packages.iter().map(CpuSet::to_cpulist).collect(),
            present: self.present.as_ref().map(CpuSet::to_cpulist),
            online: self.online.as_ref().map(CpuSet::to_cpulist),
            distances,
            generate: None,
            arch: None,
            irqchip: None,
            legacy_pic: None,
        };
        let topology = Topology::new(&spec).map_err(|e| ImportError::new(format, None, "", e.to_string()))?;
        let mut spec = topology.to_spec();
        if let Some(w) = topology.cluster_split_warning() {
            self.warnings.push(format!("{w}."));
            spec.note = note_of(format, &self.warnings);
        }
        Ok(Imported {
            spec,
            warnings: self.warnings,
            devices: self.devices,
        })
    }

    /// Every CPU the input names (in a node, the possible set, an SMT, cluster or package
    /// set); an error when there is none or one lies outside a `possible` set given.
    fn possible_cpus(&self) -> Result<CpuSet, ImportError> {
        let whole = Place::default();
        let mut possible: CpuSet = self.cpu_node.keys().copied().collect();
        if let Some(p) = &self.possible {
            possible.or_assign(p);
        }
        for part in [&self.smt, &self.clusters, &self.packages] {
            for (set, _) in &part.sets {
                possible.or_assign(set);
            }
        }
        if possible.is_empty() {
            return Err(self.err(&whole, "no CPUs found"));
        }
        if let Some(p) = &self.possible {
            if let Some(cpu) = possible.andnot(p).first() {
                return Err(self.err(
                    &whole,
                    format!("CPU {cpu} is described but not in the possible set {p}"),
                ));
            }
        }
        Ok(possible)
    }

    /// CPUs the tool names but puts in no node (x86 leaves hot-pluggable CPUs out of
    /// node*/cpulist) go to the lowest node, said in the note.
    fn place_homeless(&mut self, possible: &CpuSet) -> Result<(), ImportError> {
        // CPUs the tool names but puts in no node (x86 leaves hot-pluggable CPUs out of
        // node*/cpulist) go to the lowest node, said in the note.
        let homeless: CpuSet = possible.iter().filter(|c| !self.cpu_node.contains_key(c)).collect();
        if !homeless.is_empty() {
            let node = self.node_ids.iter().copied().min().unwrap_or(0);
            if !self.cpu_node.is_empty() {
                self.warnings.push(format!(
                    "CPUs {} are in no node's CPU list; placed in node {node}.",
                    short(&homeless.to_cpulist())
                ));
            }
            for cpu in homeless.iter() {
                self.set_node(cpu, node, Place::new(None, "(no node)"))?;
            }
        }
        Ok(())
    }

    /// SMT siblings share a node.
    fn check_smt_nodes(&self) -> Result<(), ImportError> {
        // SMT siblings share a node.
        for (set, place) in &self.smt.sets {
            let first = set.first().unwrap_or(0);
            let node0 = self.cpu_node.get(&first).map_or(0, |(n, _)| *n);
            for cpu in set.iter() {
                let node = self.cpu_node.get(&cpu).map_or(0, |(n, _)| *n);
                if node != node0 {
                    return Err(self.err(
                        place,
                        format!("SMT siblings {first} and {cpu} are on different nodes ({node0} and {node})"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// `nr_node_ids` (within [`NODES_MAX`]) and each node's CPUs.
    fn node_sets(&self) -> Result<(u32, Vec<CpuSet>), ImportError> {
        let whole = Place::default();
        let nr_node_ids = self.node_ids.iter().max().map_or(1, |m| m + 1);
        if nr_node_ids > NODES_MAX {
            return Err(self.err(
                &whole,
                format!("node id {} is beyond the limit ({NODES_MAX} nodes)", nr_node_ids - 1),
            ));
        }
        let mut node_sets = vec![CpuSet::new(CPUS_MAX); nr_node_ids as usize];
        for (&cpu, (node, _)) in &self.cpu_node {
            node_sets[*node as usize].insert(cpu);
        }
        Ok((nr_node_ids, node_sets))
    }

    /// The packages: CPUs no package names (offline CPUs without sysfs topology) join the
    /// package of the lowest CPU of their node that has one, or their own when none has;
    /// none when they are one a node (the default).
    fn packages_of(&mut self, possible: &CpuSet, node_sets: &[CpuSet]) -> Vec<CpuSet> {
        let mut packages: Vec<CpuSet> = self.packages.sorted().into_iter().map(|(s, _)| s.clone()).collect();
        if !packages.is_empty() {
            let lost: Vec<u32> = possible.iter().filter(|&c| !self.packages.contains(c)).collect();
            for cpu in &lost {
                let node = self.cpu_node[cpu].0;
                let home = node_sets[node as usize]
                    .iter()
                    .find_map(|c| packages.iter().position(|p| p.contains(c)));
                match home {
                    Some(i) => packages[i].insert(*cpu),
                    None => packages.push(CpuSet::from_cpus([*cpu])),
                }
            }
            if !lost.is_empty() {
                let lost: CpuSet = lost.into_iter().collect();
                self.warnings.push(format!(
                    "CPUs {} have no package information; placed with their node.",
                    short(&lost.to_cpulist())
                ));
            }
            packages.sort_by_key(CpuSet::first);
            // One package per node is the default: say so, whatever order the nodes are in.
            let mut per_node: Vec<CpuSet> = node_sets.iter().filter(|s| !s.is_empty()).cloned().collect();
            per_node.sort_by_key(CpuSet::first);
            if packages == per_node {
                packages.clear();
            }
        }
        packages
    }

    /// The matrix must be square with 10 on the diagonal (the rest is [`Topology::new`]'s
    /// range check); it may be asymmetric, as the SLIT may. Node ids without a row get the
    /// default distances, and a matrix that holds only defaults is `None`, so that node ids
    /// named sparsely (`node 0`, `node 891`) cost no nr_node_ids² table.
    fn check_distances(
        &self,
        ids: &[u32],
        rows: &[(Vec<u32>, Place)],
        nr_node_ids: u32,
    ) -> Result<Option<Vec<Vec<u32>>>, ImportError> {
        let n = ids.len();
        let whole = rows.first().map(|(_, p)| p.clone()).unwrap_or_default();
        if rows.len() != n {
            return Err(self.err(
                &whole,
                format!(
                    "distance matrix has {} rows for {n} nodes (it must be square)",
                    rows.len()
                ),
            ));
        }
        for (row, place) in rows {
            if row.len() != n {
                return Err(self.err(
                    place,
                    format!(
                        "distance row has {} entries for {n} nodes (the matrix must be square)",
                        row.len()
                    ),
                ));
            }
        }
        for (i, (row, place)) in rows.iter().enumerate() {
            if row[i] != LOCAL_DISTANCE {
                return Err(self.err(
                    place,
                    format!(
                        "distance of node {} to itself is {}, not {LOCAL_DISTANCE}",
                        ids[i], row[i]
                    ),
                ));
            }
        }
        let size = nr_node_ids as usize;
        if let Some(&id) = ids.iter().find(|&&id| id as usize >= size) {
            return Err(self.err(
                &whole,
                format!("distance matrix names node {id}, which has no CPUs or memory listed"),
            ));
        }
        let default = rows.iter().enumerate().all(|(i, (row, _))| {
            row.iter().enumerate().all(|(j, &d)| {
                d == if ids[i] == ids[j] {
                    LOCAL_DISTANCE
                } else {
                    super::REMOTE_DISTANCE
                }
            })
        });
        if default {
            return Ok(None);
        }
        let mut out: Vec<Vec<u32>> = vec![vec![super::REMOTE_DISTANCE; size]; size];
        for (i, row) in out.iter_mut().enumerate() {
            row[i] = LOCAL_DISTANCE;
        }
        for (i, &a) in ids.iter().enumerate() {
            for (j, &b) in ids.iter().enumerate() {
                out[a as usize][b as usize] = rows[i].0[j];
            }
        }
        Ok(Some(out))
    }
}

/// The spec's note for an import: the warnings, bounded by [`NOTE_BYTES_MAX`].
fn note_of(format: Format, warnings: &[String]) -> String {
    if warnings.is_empty() {
        return String::new();
    }
    let mut note = format!("Imported from {}: {}", format.source(), warnings.join(" "));
    if note.len() > NOTE_BYTES_MAX {
        let mut end = NOTE_BYTES_MAX - '…'.len_utf8();
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        note.truncate(end);
        note.push('…');
    }
    note
}

/// Parse a topology file (TOML) and return its canonical explicit spec.
pub fn parse_toml(text: &str) -> Result<TopologySpec, ImportError> {
    check_text(Format::Toml, text)?;
    let spec: TopologySpec = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text.get(..s.start).unwrap_or(text).matches('\n').count() + 1);
        ImportError::new(Format::Toml, line, "", e.message().to_string())
    })?;
    let t = Topology::new(&spec).map_err(|e| ImportError::new(Format::Toml, None, "", e.to_string()))?;
    Ok(t.to_spec())
}

/// The shape of a topology alone: its explicit spec without name, note and source, sets ordered
/// by first CPU, packages left out when they are the nodes. Two machines with equal shapes group
/// CPUs identically. The architecture and interrupt controller are not part of the shape: most
/// import formats cannot see them.
pub fn shape(t: &Topology) -> TopologySpec {
    let mut spec = t.to_spec();
    spec.name.clear();
    spec.note.clear();
    spec.source.clear();
    spec.arch = None;
    spec.irqchip = None;
    // A fact of the machine no import format carries (as arch and irqchip).
    spec.legacy_pic = None;
    let key = |s: &String| super::parse_cpulist(s, CPUS_MAX).ok().and_then(|c| c.first());
    spec.smt.sort_by_key(key);
    spec.clusters.sort_by_key(key);
    spec.packages.sort_by_key(key);
    // Packages that are exactly the nodes (in any order) are the default.
    let mut per_node: Vec<String> = spec.nodes.iter().flatten().filter(|s| !s.is_empty()).cloned().collect();
    per_node.sort_by_key(key);
    if spec.packages == per_node {
        spec.packages.clear();
    }
    spec
}
