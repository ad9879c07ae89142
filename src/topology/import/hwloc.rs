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

use super::{check_text, parse_id, short, DeviceLocality, Draft, Format, ImportError, Imported, Place, DEVICES_MAX};
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
    const F: Format = Format::Synthetic;
    if text.len() > SYNTHETIC_BYTES_MAX {
        return Err(ImportError::new(
            F,
            None,
            "",
            format!("description longer than {SYNTHETIC_BYTES_MAX} bytes"),
        ));
    }
    let text = text.trim();
    // Split into `type:count(attributes)` tokens; attributes are skipped.
    let mut tokens: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for ch in text.chars() {
        match ch {
            '(' => depth += 1,
            ')' if depth == 0 => return Err(ImportError::new(F, None, "", "unbalanced ')'")),
            ')' => depth -= 1,
            '[' | ']' if depth == 0 => {
                return Err(ImportError::new(
                    F,
                    None,
                    "",
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
        return Err(ImportError::new(F, None, "", "unbalanced '(' (truncated attributes?)"));
    }
    if !cur.is_empty() {
        tokens.push(cur);
    }
    if tokens.is_empty() {
        return Err(ImportError::new(
            F,
            None,
            "",
            "empty description (expected e.g. \"pack:2 core:4 pu:2\")",
        ));
    }
    if tokens.len() > SYNTHETIC_LEVELS_MAX {
        return Err(ImportError::new(
            F,
            None,
            "",
            format!("more than {SYNTHETIC_LEVELS_MAX} levels"),
        ));
    }
    let mut levels: Vec<(Kind, u32)> = Vec::new();
    let mut n_pus: u64 = 1;
    for (i, tok) in tokens.iter().enumerate() {
        let field = format!("level {} ({})", i + 1, short(tok));
        let Some((name, count)) = tok.split_once(':') else {
            return Err(ImportError::new(F, None, field, "expected type:count, e.g. core:4"));
        };
        let Some(kind) = kind_of(name) else {
            return Err(ImportError::new(
                F,
                None,
                field,
                format!(
                    "unknown object type {:?} (use pack, numa, die, group, l1..l5, core, pu)",
                    short(name)
                ),
            ));
        };
        let count: u32 = match count.parse() {
            Ok(c) if c >= 1 => c,
            _ => {
                return Err(ImportError::new(
                    F,
                    None,
                    field,
                    format!("count {:?} is not a positive number", short(count)),
                ))
            }
        };
        n_pus = n_pus.saturating_mul(u64::from(count));
        if n_pus > u64::from(CPUS_MAX) {
            return Err(ImportError::new(F, None, field, format!("more than {CPUS_MAX} PUs")));
        }
        if levels.iter().any(|(k, _)| *k == Kind::Pu) {
            return Err(ImportError::new(F, None, field, "pu must be the last level"));
        }
        if kind != Kind::Other && levels.iter().any(|(k, _)| *k == kind) {
            return Err(ImportError::new(F, None, field, "this level appears twice"));
        }
        levels.push((kind, count));
    }
    if !levels.iter().any(|(k, _)| *k == Kind::Pu) {
        levels.push((Kind::Pu, 1));
    }
    let n_pus = n_pus as u32;
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
        return Err(ImportError::new(
            F,
            None,
            "numa",
            format!("more than {NODES_MAX} NUMA nodes"),
        ));
    }
    let mut draft = Draft::new(F, format!("hwloc synthetic {}", short(text)));
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
            Kind::Core if set.weight() > 1 => draft.smt.add(F, set, place)?,
            Kind::L2 => draft.clusters.add(F, set, place)?,
            Kind::Package => draft.packages.add(F, set, place)?,
            _ => {}
        }
    }
    // SMT siblings on different nodes (numa below core) are caught by `finish`.
    draft.finish()
}

/// Parse an hwloc XML topology (`lstopo --of xml`).
pub fn parse_xml(text: &str) -> Result<TopologySpec, ImportError> {
    import_xml(text).map(|i| i.spec)
}

/// [`parse_xml`] with what the file could not carry (clusters hwloc removed, distances,
/// packages, CPUs it did not list) and the NUMA node of each PCI device (`PCIDev` objects,
/// written by `lstopo` when I/O discovery is on, the default).
pub fn import_xml(text: &str) -> Result<Imported, ImportError> {
    const F: Format = Format::HwlocXml;
    check_text(F, text)?;
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        nodes_limit: XML_NODES_MAX,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(text, opts).map_err(|e| {
        let pos = e.pos();
        ImportError::new(F, Some(pos.row as usize), "", format!("not well-formed XML: {e}"))
    })?;
    // The line a node starts on, as roxmltree's `text_pos_at` counts it (1 + the newlines before
    // it), from the newline offsets found once: `text_pos_at` rescans the text from the start,
    // and a line is taken for every PU, node and device, which made a large file quadratic.
    let newlines: Vec<usize> = text
        .bytes()
        .enumerate()
        .filter(|&(_, b)| b == b'\n')
        .map(|(i, _)| i)
        .collect();
    let line_of = |n: roxmltree::Node| 1 + newlines.partition_point(|&i| i < n.range().start);
    let root = doc.root_element();
    if root.tag_name().name() != "topology" {
        return Err(ImportError::new(
            F,
            Some(line_of(root)),
            "",
            format!("root element is <{}>, not <topology>", short(root.tag_name().name())),
        ));
    }
    let is_obj = |n: &roxmltree::Node, ty: &str| {
        n.is_element() && n.tag_name().name() == "object" && n.attribute("type") == Some(ty)
    };
    let is_l2 = |n: &roxmltree::Node| {
        n.is_element()
            && n.tag_name().name() == "object"
            && match n.attribute("type") {
                Some("L2Cache") => true,
                Some("Cache") => n.attribute("depth") == Some("2"),
                _ => false,
            }
            && n.attribute("cache_type") != Some("2")
    };
    let is_cluster = |n: &roxmltree::Node| {
        is_obj(n, "Group")
            && n.attribute("subtype")
                .is_some_and(|s| s.eq_ignore_ascii_case("cluster"))
    };
    let has_cluster_groups = doc.descendants().any(|n| is_cluster(&n));
    let os_index = |n: roxmltree::Node, what: &str, limit: u32| -> Result<u32, ImportError> {
        let place = Place::new(Some(line_of(n)), format!("{what} os_index"));
        let Some(v) = n.attribute("os_index") else {
            return Err(ImportError::new(
                F,
                place.line,
                place.field,
                "missing os_index attribute",
            ));
        };
        parse_id(F, &place, v, what, limit)
    };

    let mut draft = Draft::new(F, "imported from hwloc XML");
    // NUMA nodes: every NUMANode object; ones without CPUs stay memory-only.
    for n in doc.descendants().filter(|n| is_obj(n, "NUMANode")) {
        draft.add_node_id(os_index(n, "node", NODES_MAX)?);
    }
    // The NUMA node each parent object carries as a memory child (lowest os_index first), so
    // that finding a PU's node costs its depth, not its ancestors' child counts.
    let mut numa_child: BTreeMap<usize, u32> = BTreeMap::new();
    for n in doc.descendants().filter(|n| is_obj(n, "NUMANode")) {
        let id = os_index(n, "node", NODES_MAX)?;
        if let Some(parent) = n.parent() {
            let e = numa_child.entry(parent.range().start).or_insert(id);
            *e = (*e).min(id);
        }
    }
    let mut cores: BTreeMap<usize, (CpuSet, Place)> = BTreeMap::new();
    let mut clusters: BTreeMap<usize, (CpuSet, Place)> = BTreeMap::new();
    let mut packages: BTreeMap<usize, (CpuSet, Place)> = BTreeMap::new();
    let mut pus = CpuSet::new(CPUS_MAX);
    for pu in doc.descendants().filter(|n| is_obj(n, "PU")) {
        let cpu = os_index(pu, "PU", CPUS_MAX)?;
        let place = Place::new(Some(line_of(pu)), "PU");
        if pus.contains(cpu) {
            return Err(ImportError::new(
                F,
                place.line,
                place.field,
                format!("PU os_index {cpu} appears twice"),
            ));
        }
        pus.insert(cpu);
        let (mut core, mut cluster, mut package, mut node) = (None, None, None, None);
        for (depth, a) in pu.ancestors().skip(1).enumerate() {
            if depth > XML_DEPTH_MAX {
                return Err(ImportError::new(
                    F,
                    place.line,
                    "PU",
                    format!("nested deeper than {XML_DEPTH_MAX} objects"),
                ));
            }
            if core.is_none() && is_obj(&a, "Core") {
                core = Some(a.range().start);
            }
            if cluster.is_none() && (if has_cluster_groups { is_cluster(&a) } else { is_l2(&a) }) {
                cluster = Some(a.range().start);
            }
            if package.is_none() && (is_obj(&a, "Package") || is_obj(&a, "Socket")) {
                package = Some(a.range().start);
            }
            if node.is_none() {
                node = if is_obj(&a, "NUMANode") {
                    Some(os_index(a, "node", NODES_MAX)?)
                } else {
                    numa_child.get(&a.range().start).copied()
                };
            }
        }
        let node = node.unwrap_or(0);
        draft.set_node(cpu, node, place.clone())?;
        for (key, map) in [(core, &mut cores), (cluster, &mut clusters), (package, &mut packages)] {
            if let Some(k) = key {
                map.entry(k)
                    .or_insert_with(|| (CpuSet::new(CPUS_MAX), place.clone()))
                    .0
                    .insert(cpu);
            }
        }
    }
    if pus.is_empty() {
        return Err(ImportError::new(
            F,
            None,
            "",
            "no PU objects (is this an lstopo --of xml file?)",
        ));
    }
    for (set, place) in cores.into_values() {
        if set.weight() > 1 {
            draft.smt.add(F, set, place)?;
        }
    }
    // hwloc removes a Group equal to its child or parent, so a cluster of one core (AMD,
    // the Azure L*as machines) or equal to the L2 leaves no trace; before 2.5 there are none.
    let in_cluster: CpuSet = clusters.values().flat_map(|(s, _)| s.iter()).collect();
    let clusterless = pus.andnot(&in_cluster);
    if has_cluster_groups {
        if !clusterless.is_empty() {
            draft.warnings.push(format!(
                "CPUs {} are in no Cluster group of the hwloc XML (hwloc removes a cluster equal to \
                 its core or L2): imported without a cluster; take clusters from sysfs cluster_cpus_list.",
                short(&clusterless.to_cpulist())
            ));
        }
    } else if clusters.is_empty() {
        draft.warnings.push(
            "no cluster information in the hwloc XML (no Group of subtype Cluster and no L2 cache: \
             hwloc removes a cluster equal to a core, and hwloc before 2.5 has none): imported \
             without clusters; take clusters from sysfs cluster_cpus_list."
                .to_string(),
        );
    } else {
        draft.warnings.push(format!(
            "no Group of subtype Cluster in the hwloc XML: clusters are taken from the L2 caches \
             (the kernel's cluster on x86; elsewhere it may differ){}.",
            if clusterless.is_empty() {
                String::new()
            } else {
                format!("; CPUs {} have no L2 and no cluster", short(&clusterless.to_cpulist()))
            }
        ));
    }
    for (set, place) in clusters.into_values() {
        draft.clusters.add(F, set, place)?;
    }
    for (set, place) in packages.into_values() {
        draft.packages.add(F, set, place)?;
    }
    // hwloc drops the Package level when it cannot tell packages apart: one package then.
    if draft.packages.is_empty() {
        draft
            .warnings
            .push("no Package objects in the hwloc XML: every CPU is imported in one package.".to_string());
        draft.packages.add(F, pus.clone(), Place::new(None, "Machine"))?;
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
    draft.devices = pci_devices(&doc, &draft, &line_of)?;
    // Distances (hwloc 2): <distances2 type="NUMANode" nbobjs=N><indexes>…<u64values>….
    if let Some(d) = doc.descendants().find(|n| {
        n.is_element()
            && n.tag_name().name() == "distances2"
            && n.attribute("type") == Some("NUMANode")
            && n.attribute("name").is_none_or(|s| s == "NUMALatency")
    }) {
        let line = line_of(d);
        let at = |field: &str| Place::new(Some(line), field);
        let nums = |tag: &str, limit: u32| -> Result<Vec<u32>, ImportError> {
            let mut out = Vec::new();
            for c in d.children().filter(|c| c.is_element() && c.tag_name().name() == tag) {
                for w in c.text().unwrap_or("").split_whitespace() {
                    if out.len() > (NODES_MAX * NODES_MAX) as usize {
                        return Err(ImportError::new(F, Some(line), tag, "too many values"));
                    }
                    out.push(parse_id(F, &at(tag), w, tag, limit)?);
                }
            }
            Ok(out)
        };
        let ids = nums("indexes", NODES_MAX)?;
        let values = nums("u64values", 256)?;
        let n = ids.len();
        if n == 0 || values.len() != n * n {
            return Err(ImportError::new(
                F,
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
        draft.distances = Some((ids, rows));
    }
    draft.finish()
}

/// An attribute of the root's first `object` (the Machine).
fn root_object_attr<'a>(root: &roxmltree::Node<'a, '_>, name: &str) -> Option<&'a str> {
    root.children()
        .find(|n| n.is_element() && n.tag_name().name() == "object")
        .and_then(|m| m.attribute(name))
}

/// The PCI devices of an hwloc XML and the NUMA node each sits on: the node whose CPUs hold
/// every PU under the device's nearest non-I/O ancestor (hwloc 1.x and 2.x alike), else none.
fn pci_devices(
    doc: &roxmltree::Document,
    draft: &Draft,
    line_of: &dyn Fn(roxmltree::Node) -> usize,
) -> Result<Vec<DeviceLocality>, ImportError> {
    const F: Format = Format::HwlocXml;
    /// Most OS device names kept per PCI device.
    const OS_NAMES_MAX: usize = 16;
    let is_io = |n: &roxmltree::Node| matches!(n.attribute("type"), Some("Bridge") | Some("PCIDev") | Some("OSDev"));
    let is_pci = |n: &roxmltree::Node| {
        n.is_element() && n.tag_name().name() == "object" && n.attribute("type") == Some("PCIDev")
    };
    if !doc.descendants().any(|n| is_pci(&n)) {
        return Ok(Vec::new());
    }
    // The nodes of the PUs below each element, in one pass from the leaves up (children come
    // after their parent in document order), so nested parents cost no rescans.
    #[derive(Clone, Copy, PartialEq)]
    enum Nodes {
        NoPu,
        One(u32),
        Several,
    }
    let merge = |a: Nodes, b: Nodes| match (a, b) {
        (Nodes::NoPu, x) | (x, Nodes::NoPu) => x,
        (Nodes::One(x), Nodes::One(y)) if x == y => a,
        _ => Nodes::Several,
    };
    let order: Vec<roxmltree::NodeId> = doc.descendants().map(|n| n.id()).collect();
    let mut below = vec![Nodes::NoPu; doc.descendants().map(|n| n.id().get_usize()).max().unwrap_or(0) + 1];
    for &id in order.iter().rev() {
        let Some(n) = doc.get_node(id) else { continue };
        let mut here = below[id.get_usize()];
        if n.is_element() && n.attribute("type") == Some("PU") {
            if let Some(node) = n
                .attribute("os_index")
                .and_then(|v| v.parse::<u32>().ok())
                .and_then(|cpu| draft.cpu_node.get(&cpu))
            {
                here = merge(here, Nodes::One(node.0));
            }
            below[id.get_usize()] = here;
        }
        if let Some(parent) = n.parent() {
            let slot = &mut below[parent.id().get_usize()];
            *slot = merge(*slot, here);
        }
    }
    let mut out = Vec::new();
    for dev in doc.descendants().filter(|n| is_pci(n)) {
        if out.len() >= DEVICES_MAX {
            return Err(ImportError::new(
                F,
                Some(line_of(dev)),
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
            Nodes::One(n) => Some(n),
            Nodes::NoPu | Nodes::Several => None,
        };
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
        out.push(DeviceLocality {
            pci_addr: short(dev.attribute("pci_busid").unwrap_or("")),
            class: short(&class),
            vendor_device: short(&vendor_device),
            os_names,
            node,
        });
    }
    Ok(out)
}
