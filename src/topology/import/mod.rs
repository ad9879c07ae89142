//! Import topologies from what real machines and tools print, and export them back.
//!
//! Every parser is pure (`&str -> TopologySpec`, or a map of file texts for sysfs), bounds its
//! input ([`INPUT_BYTES_MAX`], [`LINES_MAX`], [`CPUS_MAX`](super::CPUS_MAX),
//! [`NODES_MAX`](super::NODES_MAX)) and reports bad input as an [`ImportError`] naming the line
//! or file and field; none panics. The only file access is [`sysfs::read_tree`] and
//! [`export::write_sysfs`], thin wrappers the CLI calls.
//!
//! Each parser fills a [`Draft`] (CPU → node, sibling sets, clusters, packages, distances);
//! [`Draft::finish`] checks what the tools can contradict (a CPU in two nodes, SMT siblings on
//! different nodes, a distance matrix that is not square or not symmetric), then validates with
//! [`Topology::new`] and returns the canonical explicit spec ([`Topology::to_spec`]), sets ordered
//! by their first CPU.
//!
//! **Asymmetric distances are rejected on import.** The kernel's SLIT parser warns about and
//! fixes up asymmetric tables only in odd firmware; none of the machines we know of need them,
//! and an asymmetric matrix from a tool is far more likely a truncated or mangled paste.

pub mod export;
pub mod hwloc;
pub mod lscpu;
pub mod numactl;
pub mod sysfs;

use super::{CpuSet, Topology, TopologySpec, CPUS_MAX, LOCAL_DISTANCE, NODES_MAX};
use std::collections::BTreeMap;
use std::fmt;

/// Largest input text accepted (an hwloc XML of an 8192-CPU machine is a few MB).
pub const INPUT_BYTES_MAX: usize = 64 << 20;
/// Most lines accepted in one input.
pub const LINES_MAX: usize = 1_000_000;

/// The input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Toml,
    Sysfs,
    Lscpu,
    Numactl,
    HwlocXml,
    Synthetic,
}

impl Format {
    pub fn name(self) -> &'static str {
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
    pub format: Format,
    /// Line number (1-based) when the input has lines.
    pub line: Option<usize>,
    /// The field, column or file; empty when the error is about the whole input.
    pub field: String,
    pub message: String,
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
    pub line: Option<usize>,
    pub field: String,
}

impl Place {
    pub fn new(line: Option<usize>, field: impl Into<String>) -> Place {
        Place {
            line,
            field: field.into(),
        }
    }

    /// `line 4 (node 0 cpus)`, `line 4`, or the field alone.
    pub fn describe(&self) -> String {
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
        return Err(ImportError::new(
            format,
            None,
            "",
            format!("more than {LINES_MAX} lines"),
        ));
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
    pub fn new(what: &'static str) -> Partition {
        Partition {
            what,
            ..Default::default()
        }
    }

    /// Add a set; the same set again is fine, an overlapping different one is an error.
    pub fn add(&mut self, format: Format, set: CpuSet, place: Place) -> Result<(), ImportError> {
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

    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    pub fn contains(&self, cpu: u32) -> bool {
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

/// What a parser learned, before validation.
#[derive(Debug)]
pub(crate) struct Draft {
    pub format: Format,
    pub name: String,
    pub notes: Vec<String>,
    /// CPU → (node, where that was said).
    pub cpu_node: BTreeMap<u32, (u32, Place)>,
    /// Node ids seen (some may have no CPUs).
    pub node_ids: Vec<u32>,
    pub smt: Partition,
    pub clusters: Partition,
    pub packages: Partition,
    pub possible: Option<CpuSet>,
    pub present: Option<CpuSet>,
    pub online: Option<CpuSet>,
    /// Node ids of the columns, and each row with where it was.
    pub distances: Option<(Vec<u32>, Vec<DistanceRow>)>,
}

impl Draft {
    pub fn new(format: Format, name: impl Into<String>) -> Draft {
        Draft {
            format,
            name: name.into(),
            notes: Vec::new(),
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

    pub fn err(&self, place: &Place, message: impl Into<String>) -> ImportError {
        ImportError::new(self.format, place.line, place.field.clone(), message)
    }

    pub fn add_node_id(&mut self, node: u32) {
        if !self.node_ids.contains(&node) {
            self.node_ids.push(node);
        }
    }

    /// Put a CPU in a node; a CPU already in another node is an error.
    pub fn set_node(&mut self, cpu: u32, node: u32, place: Place) -> Result<(), ImportError> {
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

    /// Check, validate and return the canonical explicit spec.
    pub fn finish(mut self) -> Result<TopologySpec, ImportError> {
        let format = self.format;
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
        // CPUs the tool names but puts in no node (x86 leaves hot-pluggable CPUs out of
        // node*/cpulist) go to the lowest node, said in the note.
        let homeless: CpuSet = possible.iter().filter(|c| !self.cpu_node.contains_key(c)).collect();
        if !homeless.is_empty() {
            let node = self.node_ids.iter().copied().min().unwrap_or(0);
            if !self.cpu_node.is_empty() {
                self.notes.push(format!(
                    "CPUs {homeless} are in no node's CPU list; placed in node {node}."
                ));
            }
            for cpu in homeless.iter() {
                self.set_node(cpu, node, Place::new(None, "(no node)"))?;
            }
        }
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
        // Packages: CPUs no package names (offline CPUs without sysfs topology) join the package
        // of the lowest CPU of their node that has one, or their own when none has.
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
                self.notes.push(format!(
                    "CPUs {lost} have no package information; placed with their node."
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
        let distances = match self.distances.take() {
            None => None,
            Some((ids, rows)) => Some(self.check_distances(&ids, &rows, nr_node_ids)?),
        };
        let list = |p: &Partition| p.sorted().into_iter().map(|(s, _)| s.to_cpulist()).collect::<Vec<_>>();
        let spec = TopologySpec {
            name: self.name.clone(),
            note: self.notes.join(" "),
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
        };
        let topology = Topology::new(&spec).map_err(|e| ImportError::new(format, None, "", e.to_string()))?;
        Ok(topology.to_spec())
    }

    /// The matrix must be square, symmetric, 10 on the diagonal; node ids without a row get the
    /// default distances.
    fn check_distances(
        &self,
        ids: &[u32],
        rows: &[(Vec<u32>, Place)],
        nr_node_ids: u32,
    ) -> Result<Vec<Vec<u32>>, ImportError> {
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
        for i in 0..n {
            let (row, place) = &rows[i];
            for j in 0..n {
                if row[j] != rows[j].0[i] {
                    return Err(self.err(
                        place,
                        format!(
                            "distance matrix is not symmetric: node {} to {} is {}, but {} to {} is {}",
                            ids[i], ids[j], row[j], ids[j], ids[i], rows[j].0[i]
                        ),
                    ));
                }
            }
        }
        let size = nr_node_ids as usize;
        let mut out: Vec<Vec<u32>> = (0..size)
            .map(|i| {
                (0..size)
                    .map(|j| if i == j { LOCAL_DISTANCE } else { super::REMOTE_DISTANCE })
                    .collect()
            })
            .collect();
        for (i, &a) in ids.iter().enumerate() {
            for (j, &b) in ids.iter().enumerate() {
                if a as usize >= size || b as usize >= size {
                    return Err(self.err(
                        &whole,
                        format!(
                            "distance matrix names node {}, which has no CPUs or memory listed",
                            a.max(b)
                        ),
                    ));
                }
                out[a as usize][b as usize] = rows[i].0[j];
            }
        }
        Ok(out)
    }
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
/// by first CPU, packages left out when they are the nodes. Two machines with equal shapes place interrupts identically.
pub fn shape(t: &Topology) -> TopologySpec {
    let mut spec = t.to_spec();
    spec.name.clear();
    spec.note.clear();
    spec.source.clear();
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
