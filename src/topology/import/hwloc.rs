//! hwloc: `lstopo --of xml` files (hwloc 1.x and 2.x) and synthetic description strings
//! (`"pack:2 numa:2 l2:4 core:2 pu:2"`).
//!
//! Mapping to the kernel's masks: a PU is a CPU (its `os_index`), a Core's PUs are SMT siblings,
//! a Package is a package (no Package at all: one package of every PU), the nearest NUMA node above a PU (hwloc 2 attaches NUMA nodes as
//! memory children of an ancestor; hwloc 1 puts them in the tree) is its node. The cluster mask
//! is a `Group` of subtype `Cluster` when the file has any (hwloc ≥ 2.5 reads the kernel's
//! `cluster_cpus`), else the unified or data L2 cache: on x86 the kernel's cluster *is* the L2
//! domain. Several NUMA nodes on one parent (DRAM beside HBM or CXL memory): the CPUs go to the
//! one with the lowest os_index, the others are memory-only.
//!
//! XML is parsed with `roxmltree`: a small, dependency-free, read-only DOM parser with a node
//! limit, so a hostile file cannot grow memory without bound.

use super::{
    check_text, parse_id, short, DeviceLocality, Draft, Format, ImportError, Imported, NodeDistances, Place,
    DEVICES_MAX,
};
use crate::topology::{CpuSet, TopologySpec, CPUS_MAX, NODES_MAX};
use std::collections::BTreeMap;

/// Most XML nodes (elements, attributes' text) in one document.
pub(crate) const XML_NODES_MAX: u32 = 4_000_000;
/// Deepest object nesting followed from a PU upwards (real trees are about 12 deep).
pub(crate) const XML_DEPTH_MAX: usize = 256;
/// Longest synthetic description.
pub(crate) const SYNTHETIC_BYTES_MAX: usize = 4096;
/// Most levels in a synthetic description.
pub(crate) const SYNTHETIC_LEVELS_MAX: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Package,
    Numa,
    Core,
    Pu,
    /// The unified or data L2: the kernel's cluster on x86.
    L2,
    /// Levels that change no kernel mask (die, group, other caches).
    Other,
}

fn kind_of(name: &str) -> Option<Kind> {
    let n = name.to_ascii_lowercase();
    Some(match n.as_str() {
        "pack" | "package" | "socket" => Kind::Package,
        "numa" | "node" | "numanode" => Kind::Numa,
        "core" => Kind::Core,
        "pu" | "thread" => Kind::Pu,
        "die" | "group" | "machine" => Kind::Other,
        _ => {
            // Caches: l<digit>[d|u|i][cache]
            let rest = n.strip_prefix('l')?;
            let digit = rest.chars().next()?.to_digit(10)?;
            let suffix = rest[1..].trim_end_matches("cache");
            if !["", "d", "u", "i"].contains(&suffix) {
                return None;
            }
            if digit == 2 && suffix != "i" {
                Kind::L2
            } else {
                Kind::Other
            }
        }
    })
}

/// Parse an hwloc synthetic description.
pub fn parse_synthetic(text: &str) -> Result<TopologySpec, ImportError> {
    import_synthetic(text).map(|i| i.spec)
}

/// [`parse_synthetic`] with the warnings (a synthetic description has no distances).
pub fn import_synthetic(text: &str) -> Result<Imported, ImportError> {
    let levels = synthetic_levels(&synthetic_tokens(text)?)?;
    let n_pus = levels.iter().map(|(_, c)| *c).product::<u32>();
    // below[i]: PUs under one object of level i.
    let mut below = vec![1u32; levels.len()];
    for i in (0..levels.len()).rev() {
        below[i] = if i + 1 < levels.len() {
            below[i + 1] * levels[i + 1].1
        } else {
            1
        };
    }
    let index_at = |kind: Kind, pu: u32| levels.iter().position(|(k, _)| *k == kind).map(|i| pu / below[i]);
    let n_nodes = index_at(Kind::Numa, n_pus - 1).map_or(1, |n| n + 1);
    if n_nodes > NODES_MAX {
        return Err(ImportError::over_limit(SYNTHETIC, "numa", NODES_MAX, "NUMA nodes"));
    }
    let mut draft = Draft::new(SYNTHETIC, format!("hwloc synthetic {}", short(text.trim())));
    let mut groups: BTreeMap<(Kind, u32), CpuSet> = BTreeMap::new();
    for pu in 0..n_pus {
        draft.set_node(pu, index_at(Kind::Numa, pu).unwrap_or(0), Place::default())?;
        for kind in [Kind::Core, Kind::L2, Kind::Package] {
            if let Some(idx) = index_at(kind, pu) {
                groups
                    .entry((kind, idx))
                    .or_insert_with(|| CpuSet::new(CPUS_MAX))
                    .insert(pu);
            }
        }
    }
    if !levels.iter().any(|(k, _)| *k == Kind::Package) {
        // No package level: the machine is one package, as hwloc's XML then has no Package.
        groups.insert((Kind::Package, 0), (0..n_pus).collect());
    }
    for ((kind, _), set) in groups {
        let place = Place::new(None, format!("{kind:?}").to_lowercase());
        match kind {
            Kind::Core if set.weight() > 1 => draft.smt.add(SYNTHETIC, set, place)?,
            Kind::L2 => draft.clusters.add(SYNTHETIC, set, place)?,
            Kind::Package => draft.packages.add(SYNTHETIC, set, place)?,
            _ => {}
        }
    }
    // SMT siblings on different nodes (numa below core) are caught by `finish`.
    draft.finish()
}

const SYNTHETIC: Format = Format::Synthetic;

/// A synthetic error that names no level.
fn synthetic_error(message: impl Into<String>) -> ImportError {
    ImportError::new(SYNTHETIC, None, "", message)
}

/// A synthetic description split into its `type:count(attributes)` tokens, the attributes
/// skipped: at most [`SYNTHETIC_BYTES_MAX`] bytes, parentheses balanced, no memory children,
/// one to [`SYNTHETIC_LEVELS_MAX`] tokens.
fn synthetic_tokens(text: &str) -> Result<Vec<String>, ImportError> {
    if text.len() > SYNTHETIC_BYTES_MAX {
        return Err(synthetic_error(format!(
            "description longer than {SYNTHETIC_BYTES_MAX} bytes"
        )));
    }
    let mut tokens: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for ch in text.trim().chars() {
        match ch {
            '(' => depth += 1,
            ')' if depth == 0 => return Err(synthetic_error("unbalanced ')'")),
            ')' => depth -= 1,
            '[' | ']' if depth == 0 => {
                return Err(synthetic_error(
                    "memory children in [..] are not supported; use a numa:N level",
                ))
            }
            c if c.is_whitespace() && depth == 0 && !cur.is_empty() => tokens.push(std::mem::take(&mut cur)),
            c if c.is_whitespace() && depth == 0 => {}
            c if depth == 0 => cur.push(c),
            _ => {}
        }
    }
    if depth != 0 {
        return Err(synthetic_error("unbalanced '(' (truncated attributes?)"));
    }
    if !cur.is_empty() {
        tokens.push(cur);
    }
    if tokens.is_empty() {
        return Err(synthetic_error(
            "empty description (expected e.g. \"pack:2 core:4 pu:2\")",
        ));
    }
    if tokens.len() > SYNTHETIC_LEVELS_MAX {
        return Err(synthetic_error(format!("more than {SYNTHETIC_LEVELS_MAX} levels")));
    }
    Ok(tokens)
}

/// The levels of a synthetic description, top down, each a known type with a positive count,
/// at most [`CPUS_MAX`] PUs in all, `pu` last (added when absent) and no kernel level twice.
/// An error names the level by its position and text.
fn synthetic_levels(tokens: &[String]) -> Result<Vec<(Kind, u32)>, ImportError> {
    let mut levels: Vec<(Kind, u32)> = Vec::new();
    let mut n_pus: u64 = 1;
    for (i, tok) in tokens.iter().enumerate() {
        let field = format!("level {} ({})", i + 1, short(tok));
        let error = |message: String| Err(ImportError::new(SYNTHETIC, None, field.clone(), message));
        let Some((name, count)) = tok.split_once(':') else {
            return error("expected type:count, e.g. core:4".into());
        };
        let Some(kind) = kind_of(name) else {
            return error(format!(
                "unknown object type {:?} (use pack, numa, die, group, l1..l5, core, pu)",
                short(name)
            ));
        };
        let count: u32 = match count.parse() {
            Ok(c) if c >= 1 => c,
            _ => return error(format!("count {:?} is not a positive number", short(count))),
        };
        n_pus = n_pus.saturating_mul(u64::from(count));
        if n_pus > u64::from(CPUS_MAX) {
            return error(format!("more than {CPUS_MAX} PUs"));
        }
        if levels.iter().any(|(k, _)| *k == Kind::Pu) {
            return error("pu must be the last level".into());
        }
        if kind != Kind::Other && levels.iter().any(|(k, _)| *k == kind) {
            return error("this level appears twice".into());
        }
        levels.push((kind, count));
    }
    if !levels.iter().any(|(k, _)| *k == Kind::Pu) {
        levels.push((Kind::Pu, 1));
    }
    Ok(levels)
}

/// Parse an hwloc XML topology (`lstopo --of xml`).
pub fn parse_xml(text: &str) -> Result<TopologySpec, ImportError> {
    import_xml(text).map(|i| i.spec)
}

/// [`parse_xml`] with what the file could not carry (clusters hwloc removed, distances,
/// packages, CPUs it did not list) and the NUMA node of each PCI device (`PCIDev` objects,
/// written by `lstopo` when I/O discovery is on, the default).
pub fn import_xml(text: &str) -> Result<Imported, ImportError> {
    check_text(XML, text)?;
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        nodes_limit: XML_NODES_MAX,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(text, opts).map_err(|e| {
        let pos = e.pos();
        ImportError::new(XML, Some(pos.row as usize), "", format!("not well-formed XML: {e}"))
    })?;
    let lines = Lines::of(text);
    let root = doc.root_element();
    if root.tag_name().name() != "topology" {
        return Err(ImportError::new(
            XML,
            Some(lines.of_node(root)),
            "",
            format!("root element is <{}>, not <topology>", short(root.tag_name().name())),
        ));
    }
    let has_cluster_groups = doc.descendants().any(|n| is_cluster(&n));
    let mut draft = Draft::new(XML, "imported from hwloc XML");
    let numa_child = numa_nodes(&doc, &lines, &mut draft)?;
    let pus = pu_sets(&doc, &lines, &numa_child, has_cluster_groups, &mut draft)?;
    for (set, place) in pus.cores.into_values() {
        if set.weight() > 1 {
            draft.smt.add(XML, set, place)?;
        }
    }
    draft
        .warnings
        .extend(cluster_warning(has_cluster_groups, &pus.clusters, &pus.all));
    for (set, place) in pus.clusters.into_values() {
        draft.clusters.add(XML, set, place)?;
    }
    for (set, place) in pus.packages.into_values() {
        draft.packages.add(XML, set, place)?;
    }
    // hwloc drops the Package level when it cannot tell packages apart: one package then.
    if draft.packages.is_empty() {
        draft
            .warnings
            .push("no Package objects in the hwloc XML: every CPU is imported in one package.".to_string());
        draft.packages.add(XML, pus.all.clone(), Place::new(None, "Machine"))?;
    }
    // hwloc lists the PUs it may use; the root's complete_cpuset also holds offline ones.
    let (cpuset, complete) = (
        root_object_attr(&root, "cpuset"),
        root_object_attr(&root, "complete_cpuset"),
    );
    if let (Some(c), Some(all)) = (cpuset, complete) {
        if c != all {
            draft.warnings.push(
                "the hwloc XML lists only the PUs hwloc could use (its complete_cpuset is larger): \
                 offline and not-present CPUs are missing, and every imported CPU is online."
                    .to_string(),
            );
        }
    }
    draft.devices = pci_devices(&doc, &draft, &lines)?;
    draft.distances = distances(&doc, &lines)?;
    draft.finish()
}

const XML: Format = Format::HwlocXml;

/// The line a node starts on, as roxmltree's `text_pos_at` counts it (1 + the newlines before
/// it), from the newline offsets found once: `text_pos_at` rescans the text from the start,
/// and a line is taken for every PU, node and device, which made a large file quadratic.
struct Lines(Vec<usize>);

impl Lines {
    fn of(text: &str) -> Lines {
        Lines(
            text.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i)
                .collect(),
        )
    }

    fn of_node(&self, n: roxmltree::Node) -> usize {
        1 + self.0.partition_point(|&i| i < n.range().start)
    }
}

fn is_obj(n: &roxmltree::Node, ty: &str) -> bool {
    n.is_element() && n.tag_name().name() == "object" && n.attribute("type") == Some(ty)
}

/// A unified or data L2 cache (hwloc 2's `L2Cache`, hwloc 1's `Cache` of depth 2).
fn is_l2(n: &roxmltree::Node) -> bool {
    n.is_element()
        && n.tag_name().name() == "object"
        && match n.attribute("type") {
            Some("L2Cache") => true,
            Some("Cache") => n.attribute("depth") == Some("2"),
            _ => false,
        }
        && n.attribute("cache_type") != Some("2")
}

fn is_cluster(n: &roxmltree::Node) -> bool {
    is_obj(n, "Group")
        && n.attribute("subtype")
            .is_some_and(|s| s.eq_ignore_ascii_case("cluster"))
}

/// The `os_index` of an object, a `what` id below `limit`.
fn os_index(lines: &Lines, n: roxmltree::Node, what: &str, limit: u32) -> Result<u32, ImportError> {
    let place = Place::new(Some(lines.of_node(n)), format!("{what} os_index"));
    let Some(v) = n.attribute("os_index") else {
        return Err(ImportError::new(
            XML,
            place.line,
            place.field,
            "missing os_index attribute",
        ));
    };
    parse_id(XML, &place, v, what, limit)
}

/// Every NUMANode's id into the draft (ones without CPUs stay memory-only), and the node each
/// parent object carries as a memory child (lowest os_index first), keyed by the parent's
/// offset, so that finding a PU's node costs its depth, not its ancestors' child counts.
fn numa_nodes(
    doc: &roxmltree::Document,
    lines: &Lines,
    draft: &mut Draft,
) -> Result<BTreeMap<usize, u32>, ImportError> {
    for n in doc.descendants().filter(|n| is_obj(n, "NUMANode")) {
        draft.add_node_id(os_index(lines, n, "node", NODES_MAX)?);
    }
    let mut numa_child: BTreeMap<usize, u32> = BTreeMap::new();
    for n in doc.descendants().filter(|n| is_obj(n, "NUMANode")) {
        let id = os_index(lines, n, "node", NODES_MAX)?;
        if let Some(parent) = n.parent() {
            let e = numa_child.entry(parent.range().start).or_insert(id);
            *e = (*e).min(id);
        }
    }
    Ok(numa_child)
}

/// The PUs of an hwloc XML and the sets they share, each keyed by its object's offset with
/// the place of its first PU.
struct PuSets {
    all: CpuSet,
    cores: BTreeMap<usize, (CpuSet, Place)>,
    clusters: BTreeMap<usize, (CpuSet, Place)>,
    packages: BTreeMap<usize, (CpuSet, Place)>,
}

/// Every PU once, its node set in the draft and its core, cluster (a Cluster group when the
/// file has any, else the L2) and package gathered; at least one PU.
fn pu_sets(
    doc: &roxmltree::Document,
    lines: &Lines,
    numa_child: &BTreeMap<usize, u32>,
    has_cluster_groups: bool,
    draft: &mut Draft,
) -> Result<PuSets, ImportError> {
    let mut sets = PuSets {
        all: CpuSet::new(CPUS_MAX),
        cores: BTreeMap::new(),
        clusters: BTreeMap::new(),
        packages: BTreeMap::new(),
    };
    for pu in doc.descendants().filter(|n| is_obj(n, "PU")) {
        let cpu = os_index(lines, pu, "PU", CPUS_MAX)?;
        let place = Place::new(Some(lines.of_node(pu)), "PU");
        if sets.all.contains(cpu) {
            return Err(ImportError::new(
                XML,
                place.line,
                place.field,
                format!("PU os_index {cpu} appears twice"),
            ));
        }
        sets.all.insert(cpu);
        let up = pu_ancestors(pu, lines, &place, numa_child, has_cluster_groups)?;
        draft.set_node(cpu, up.node.unwrap_or(0), place.clone())?;
        for (key, map) in [
            (up.core, &mut sets.cores),
            (up.cluster, &mut sets.clusters),
            (up.package, &mut sets.packages),
        ] {
            if let Some(k) = key {
                map.entry(k)
                    .or_insert_with(|| (CpuSet::new(CPUS_MAX), place.clone()))
                    .0
                    .insert(cpu);
            }
        }
    }
    if sets.all.is_empty() {
        return Err(ImportError::new(
            XML,
            None,
            "",
            "no PU objects (is this an lstopo --of xml file?)",
        ));
    }
    Ok(sets)
}

/// What a PU belongs to, found walking up from it: the offsets of its nearest core, cluster
/// and package, and its nearest NUMA node (an ancestor, or an ancestor's memory child).
struct Above {
    core: Option<usize>,
    cluster: Option<usize>,
    package: Option<usize>,
    node: Option<u32>,
}

fn pu_ancestors(
    pu: roxmltree::Node,
    lines: &Lines,
    place: &Place,
    numa_child: &BTreeMap<usize, u32>,
    has_cluster_groups: bool,
) -> Result<Above, ImportError> {
    let mut up = Above {
        core: None,
        cluster: None,
        package: None,
        node: None,
    };
    for (depth, a) in pu.ancestors().skip(1).enumerate() {
        if depth > XML_DEPTH_MAX {
            return Err(ImportError::new(
                XML,
                place.line,
                "PU",
                format!("nested deeper than {XML_DEPTH_MAX} objects"),
            ));
        }
        if up.core.is_none() && is_obj(&a, "Core") {
            up.core = Some(a.range().start);
        }
        if up.cluster.is_none() && (if has_cluster_groups { is_cluster(&a) } else { is_l2(&a) }) {
            up.cluster = Some(a.range().start);
        }
        if up.package.is_none() && (is_obj(&a, "Package") || is_obj(&a, "Socket")) {
            up.package = Some(a.range().start);
        }
        if up.node.is_none() {
            up.node = if is_obj(&a, "NUMANode") {
                Some(os_index(lines, a, "node", NODES_MAX)?)
            } else {
                numa_child.get(&a.range().start).copied()
            };
        }
    }
    Ok(up)
}

/// What the file says of clusters, when it is less than every CPU's: hwloc removes a Group
/// equal to its child or parent, so a cluster of one core (AMD, the Azure L*as machines) or
/// equal to the L2 leaves no trace; before 2.5 there are none.
fn cluster_warning(
    has_cluster_groups: bool,
    clusters: &BTreeMap<usize, (CpuSet, Place)>,
    pus: &CpuSet,
) -> Option<String> {
    let in_cluster: CpuSet = clusters.values().flat_map(|(s, _)| s.iter()).collect();
    let clusterless = pus.andnot(&in_cluster);
    if has_cluster_groups {
        (!clusterless.is_empty()).then(|| {
            format!(
                "CPUs {} are in no Cluster group of the hwloc XML (hwloc removes a cluster equal to \
                 its core or L2): imported without a cluster; take clusters from sysfs cluster_cpus_list.",
                short(&clusterless.to_cpulist())
            )
        })
    } else if clusters.is_empty() {
        Some(
            "no cluster information in the hwloc XML (no Group of subtype Cluster and no L2 cache: \
             hwloc removes a cluster equal to a core, and hwloc before 2.5 has none): imported \
             without clusters; take clusters from sysfs cluster_cpus_list."
                .to_string(),
        )
    } else {
        Some(format!(
            "no Group of subtype Cluster in the hwloc XML: clusters are taken from the L2 caches \
             (the kernel's cluster on x86; elsewhere it may differ){}.",
            if clusterless.is_empty() {
                String::new()
            } else {
                format!("; CPUs {} have no L2 and no cluster", short(&clusterless.to_cpulist()))
            }
        ))
    }
}

/// The NUMA distances of hwloc 2 (`<distances2 type="NUMANode" nbobjs=N><indexes>…
/// <u64values>…`), as the node ids and the rows; `None` without them.
fn distances(doc: &roxmltree::Document, lines: &Lines) -> Result<Option<NodeDistances>, ImportError> {
    let Some(d) = doc.descendants().find(|n| {
        n.is_element()
            && n.tag_name().name() == "distances2"
            && n.attribute("type") == Some("NUMANode")
            && n.attribute("name").is_none_or(|s| s == "NUMALatency")
    }) else {
        return Ok(None);
    };
    let line = lines.of_node(d);
    let at = |field: &str| Place::new(Some(line), field);
    let nums = |tag: &str, limit: u32| -> Result<Vec<u32>, ImportError> {
        let mut out = Vec::new();
        for c in d.children().filter(|c| c.is_element() && c.tag_name().name() == tag) {
            for w in c.text().unwrap_or("").split_whitespace() {
                if out.len() > (NODES_MAX * NODES_MAX) as usize {
                    return Err(ImportError::new(XML, Some(line), tag, "too many values"));
                }
                out.push(parse_id(XML, &at(tag), w, tag, limit)?);
            }
        }
        Ok(out)
    };
    let ids = nums("indexes", NODES_MAX)?;
    let values = nums("u64values", 256)?;
    let n = ids.len();
    if n == 0 || values.len() != n * n {
        return Err(ImportError::new(
            XML,
            Some(line),
            "distances2",
            format!(
                "{} values for {n} nodes (the matrix must be square: {} values)",
                values.len(),
                n * n
            ),
        ));
    }
    let rows = values
        .chunks(n)
        .enumerate()
        .map(|(i, r)| (r.to_vec(), at(&format!("distances2 row {i}"))))
        .collect();
    Ok(Some((ids, rows)))
}

/// An attribute of the root's first `object` (the Machine).
fn root_object_attr<'a>(root: &roxmltree::Node<'a, '_>, name: &str) -> Option<&'a str> {
    root.children()
        .find(|n| n.is_element() && n.tag_name().name() == "object")
        .and_then(|m| m.attribute(name))
}

/// The PCI devices of an hwloc XML and the NUMA node each sits on: the node whose CPUs hold
/// every PU under the device's nearest non-I/O ancestor (hwloc 1.x and 2.x alike), else none.
fn pci_devices(doc: &roxmltree::Document, draft: &Draft, lines: &Lines) -> Result<Vec<DeviceLocality>, ImportError> {
    let is_io = |n: &roxmltree::Node| matches!(n.attribute("type"), Some("Bridge") | Some("PCIDev") | Some("OSDev"));
    if !doc.descendants().any(|n| is_obj(&n, "PCIDev")) {
        return Ok(Vec::new());
    }
    let below = nodes_below(doc, draft);
    let mut out = Vec::new();
    for dev in doc.descendants().filter(|n| is_obj(n, "PCIDev")) {
        if out.len() >= DEVICES_MAX {
            return Err(ImportError::new(
                XML,
                Some(lines.of_node(dev)),
                "PCIDev",
                format!("more than {DEVICES_MAX} PCI devices"),
            ));
        }
        let Some(parent) = dev
            .ancestors()
            .skip(1)
            .take(XML_DEPTH_MAX)
            .find(|a| a.is_element() && !is_io(a))
        else {
            continue;
        };
        let node = match below[parent.id().get_usize()] {
            NodesBelow::One(n) => Some(n),
            NodesBelow::NoPu | NodesBelow::Several => None,
        };
        out.push(device_locality(dev, node));
    }
    Ok(out)
}

/// The NUMA nodes of the PUs below an element.
#[derive(Clone, Copy, PartialEq)]
enum NodesBelow {
    NoPu,
    One(u32),
    Several,
}

/// The nodes of the PUs below each element, indexed by its document id, in one pass from the leaves
/// up (children come after their parent in document order), so nested parents cost no
/// rescans.
fn nodes_below(doc: &roxmltree::Document, draft: &Draft) -> Vec<NodesBelow> {
    let merge = |a: NodesBelow, b: NodesBelow| match (a, b) {
        (NodesBelow::NoPu, x) | (x, NodesBelow::NoPu) => x,
        (NodesBelow::One(x), NodesBelow::One(y)) if x == y => a,
        _ => NodesBelow::Several,
    };
    let order: Vec<roxmltree::NodeId> = doc.descendants().map(|n| n.id()).collect();
    let mut below = vec![NodesBelow::NoPu; doc.descendants().map(|n| n.id().get_usize()).max().unwrap_or(0) + 1];
    for &id in order.iter().rev() {
        let Some(n) = doc.get_node(id) else { continue };
        let mut here = below[id.get_usize()];
        if n.is_element() && n.attribute("type") == Some("PU") {
            if let Some(node) = n
                .attribute("os_index")
                .and_then(|v| v.parse::<u32>().ok())
                .and_then(|cpu| draft.cpu_node.get(&cpu))
            {
                here = merge(here, NodesBelow::One(node.0));
            }
            below[id.get_usize()] = here;
        }
        if let Some(parent) = n.parent() {
            let slot = &mut below[parent.id().get_usize()];
            *slot = merge(*slot, here);
        }
    }
    below
}

/// A `PCIDev` object as a device on `node`: its address, class, vendor:device and the names
/// of its OS devices.
fn device_locality(dev: roxmltree::Node, node: Option<u32>) -> DeviceLocality {
    /// Most OS device names kept per PCI device.
    const OS_NAMES_MAX: usize = 16;
    let pci_type = dev.attribute("pci_type").unwrap_or("");
    let mut words = pci_type.split_whitespace();
    let class = words.next().unwrap_or("").to_string();
    let vendor_device = words
        .next()
        .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
        .unwrap_or_default();
    let os_names = dev
        .children()
        .filter(|c| c.is_element() && c.attribute("type") == Some("OSDev"))
        .filter_map(|c| c.attribute("name"))
        .take(OS_NAMES_MAX)
        .map(short)
        .collect();
    DeviceLocality {
        pci_addr: short(dev.attribute("pci_busid").unwrap_or("")),
        class: short(&class),
        vendor_device: short(&vendor_device),
        os_names,
        node,
    }
}
