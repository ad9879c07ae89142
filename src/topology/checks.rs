//! The checks [`Topology::new`](super::Topology::new) runs over an explicit spec, one per field
//! or group of fields, in the order the fields are read: each error starts with the field it
//! rejects (`nodes[1]: CPU 3 is already in node 0`). The first failing check is the error.

use super::{
    invalid, parse_cpulist, Arch, CpuSet, Irqchip, TopologyError, TopologySpec, CPUS_MAX, DISTANCE_MAX, LOCAL_DISTANCE,
    NAME_BYTES_MAX, NODES_MAX, NONE, NOTE_BYTES_MAX, REMOTE_DISTANCE,
};

/// CPUs grouped into sets of one kind (SMT sibling sets, clusters, packages): the index of
/// each CPU's set ([`NONE`] for none) and the sets in order.
pub(super) struct Membership {
    pub(super) of_cpu: Vec<u32>,
    pub(super) sets: Vec<CpuSet>,
}

/// The possible CPUs as the nodes list them.
pub(super) struct Nodes {
    /// Per listed node, its CPUs (at most `nr_node_ids` entries; the caller pads).
    pub(super) node_cpus: Vec<CpuSet>,
    pub(super) possible: CpuSet,
    pub(super) nr_cpu_ids: u32,
}

/// `text` as a cpulist of `n_bits` bits, an error naming `field`.
fn cpulist(field: String, text: &str, n_bits: u32) -> Result<CpuSet, TopologyError> {
    parse_cpulist(text, n_bits).map_err(|source| TopologyError::Cpulist { field, source })
}

/// `name`, `note` and `source` within their byte limits.
pub(super) fn name_and_note(spec: &TopologySpec) -> Result<(), TopologyError> {
    if spec.name.len() > NAME_BYTES_MAX {
        return Err(invalid(format!("name: longer than {NAME_BYTES_MAX} bytes")));
    }
    if spec.note.len() > NOTE_BYTES_MAX || spec.source.len() > NOTE_BYTES_MAX {
        return Err(invalid(format!("note/source: longer than {NOTE_BYTES_MAX} bytes")));
    }
    Ok(())
}

/// The number of node ids: `nr_node_ids` when given (at least the listed nodes, at most
/// [`NODES_MAX`]), else the listed nodes, of which there must be one to [`NODES_MAX`].
pub(super) fn nr_node_ids(spec: &TopologySpec) -> Result<u32, TopologyError> {
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
    match spec.nr_node_ids {
        Some(n) if n as usize >= nodes.len() && n <= NODES_MAX => Ok(n),
        Some(n) => Err(invalid(format!(
            "nr_node_ids: {n} must be between the number of listed nodes ({}) and {NODES_MAX}",
            nodes.len()
        ))),
        None => Ok(nodes.len() as u32),
    }
}

/// `nodes`: each CPU in one node at most, some CPU in one; the nodes define the possible
/// CPUs, and `nr_cpu_ids`, when given, must be one more than the highest.
pub(super) fn nodes(spec: &TopologySpec) -> Result<Nodes, TopologyError> {
    let nodes = spec.nodes.as_deref().unwrap_or_default();
    let mut node_cpus: Vec<CpuSet> = Vec::with_capacity(nodes.len());
    let mut possible = CpuSet::new(CPUS_MAX);
    for (node, text) in nodes.iter().enumerate() {
        let set = cpulist(format!("nodes[{node}]"), text, CPUS_MAX)?;
        if let Some(cpu) = set.iter().find(|&c| possible.contains(c)) {
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
    Ok(Nodes {
        node_cpus,
        possible,
        nr_cpu_ids,
    })
}

/// `present` (default: every possible CPU): possible CPUs only, CPU 0 among them.
pub(super) fn present(spec: &TopologySpec, possible: &CpuSet, nr_cpu_ids: u32) -> Result<CpuSet, TopologyError> {
    let present = match &spec.present {
        Some(text) => cpulist("present".into(), text, nr_cpu_ids)?,
        None => possible.clone(),
    };
    if let Some(cpu) = present.andnot(possible).first() {
        return Err(invalid(format!(
            "present: CPU {cpu} is present but in no node (not possible)"
        )));
    }
    if !present.contains(0) {
        return Err(invalid("present: CPU 0 must be present (the boot CPU)"));
    }
    Ok(present)
}

/// `online` (default: every present CPU): present CPUs only, at least one.
pub(super) fn online(spec: &TopologySpec, present: &CpuSet, nr_cpu_ids: u32) -> Result<CpuSet, TopologyError> {
    let online = match &spec.online {
        Some(text) => cpulist("online".into(), text, nr_cpu_ids)?,
        None => present.clone(),
    };
    if let Some(cpu) = online.andnot(present).first() {
        return Err(invalid(format!("online: CPU {cpu} is online but not present")));
    }
    if online.is_empty() {
        return Err(invalid("online: at least one CPU must be online"));
    }
    Ok(online)
}

/// The node of each CPU id (0 for ids that are not possible).
pub(super) fn cpu_nodes(node_cpus: &[CpuSet], nr_cpu_ids: u32) -> Vec<u32> {
    let mut cpu_node = vec![0u32; nr_cpu_ids as usize];
    for (node, set) in node_cpus.iter().enumerate() {
        for cpu in set.iter() {
            cpu_node[cpu as usize] = node as u32;
        }
    }
    cpu_node
}

/// Puts `cpu`, a member of set `index` of `field`, into that set: it must be possible and in
/// no other set of the same `kind`.
fn claim(
    field: &str,
    cpu: u32,
    possible: &CpuSet,
    of_cpu: &mut [u32],
    index: usize,
    kind: &str,
) -> Result<(), TopologyError> {
    if !possible.contains(cpu) {
        return Err(invalid(format!("{field}: CPU {cpu} is not in any node")));
    }
    if of_cpu[cpu as usize] != NONE {
        return Err(invalid(format!("{field}: CPU {cpu} is already in another {kind}")));
    }
    of_cpu[cpu as usize] = index as u32;
    Ok(())
}

/// `smt`: the listed SMT sibling sets, each non-empty, of possible CPUs in one node, no CPU in
/// two; every other possible CPU is a sibling set of its own.
pub(super) fn smt(
    spec: &TopologySpec,
    possible: &CpuSet,
    cpu_node: &[u32],
    nr_cpu_ids: u32,
) -> Result<Membership, TopologyError> {
    let mut of_cpu = vec![NONE; nr_cpu_ids as usize];
    let mut sets = Vec::new();
    for (i, text) in spec.smt.iter().enumerate() {
        let field = format!("smt[{i}]");
        let set = cpulist(field.clone(), text, nr_cpu_ids)?;
        let Some(first) = set.first() else {
            return Err(invalid(format!("{field}: empty sibling set")));
        };
        for cpu in set.iter() {
            claim(&field, cpu, possible, &mut of_cpu, sets.len(), "sibling set")?;
            if cpu_node[cpu as usize] != cpu_node[first as usize] {
                return Err(invalid(format!(
                    "{field}: SMT siblings {first} and {cpu} are on different nodes ({} and {})",
                    cpu_node[first as usize], cpu_node[cpu as usize]
                )));
            }
        }
        sets.push(set);
    }
    for cpu in possible.iter() {
        if of_cpu[cpu as usize] == NONE {
            of_cpu[cpu as usize] = sets.len() as u32;
            sets.push(CpuSet::from_cpus([cpu]));
        }
    }
    Ok(Membership { of_cpu, sets })
}

/// `clusters`: each non-empty, of possible CPUs, no CPU in two; CPUs not listed have none.
pub(super) fn clusters(spec: &TopologySpec, possible: &CpuSet, nr_cpu_ids: u32) -> Result<Membership, TopologyError> {
    let mut of_cpu = vec![NONE; nr_cpu_ids as usize];
    let mut sets = Vec::new();
    for (i, text) in spec.clusters.iter().enumerate() {
        let field = format!("clusters[{i}]");
        let set = cpulist(field.clone(), text, nr_cpu_ids)?;
        if set.is_empty() {
            return Err(invalid(format!("{field}: empty cluster (leave the CPUs out instead)")));
        }
        for cpu in set.iter() {
            claim(&field, cpu, possible, &mut of_cpu, sets.len(), "cluster")?;
        }
        sets.push(set);
    }
    Ok(Membership { of_cpu, sets })
}

/// The drawn clusters that split a drawn SMT sibling set, as (cluster, sibling set), each pair
/// once. Not an error: the kernel takes both masks as the firmware gives them.
/// `build_sched_domain()` (kernel/sched/topology.c) then finds the SMT domain not a subset of
/// the CLS domain, prints "BUG: arch topology borken" and widens its own copy of the domain
/// span; `topology_sibling_cpumask()` and `topology_cluster_cpumask()`, which the interrupt
/// code reads, stay as they were. So such a machine is accepted and each split is recorded for
/// the warning.
pub(super) fn cluster_splits(cluster_sets: &[CpuSet], cpu_smt: &[u32], smt_sets: &[CpuSet]) -> Vec<(u32, u32)> {
    let mut splits = Vec::new();
    let mut split_seen = vec![NONE; smt_sets.len()];
    for (i, cluster) in cluster_sets.iter().enumerate() {
        for cpu in cluster.iter() {
            let s = cpu_smt[cpu as usize];
            if split_seen[s as usize] != i as u32 && !smt_sets[s as usize].is_subset(cluster) {
                split_seen[s as usize] = i as u32;
                splits.push((i as u32, s));
            }
        }
    }
    splits
}

/// `packages` (for display): by default one package per node with CPUs; when listed, every
/// possible CPU in exactly one. Ids that are not possible count as package 0.
pub(super) fn packages(
    spec: &TopologySpec,
    possible: &CpuSet,
    node_cpus: &[CpuSet],
    nr_cpu_ids: u32,
) -> Result<Membership, TopologyError> {
    let mut of_cpu = vec![NONE; nr_cpu_ids as usize];
    let mut sets = Vec::new();
    if spec.packages.is_empty() {
        for set in node_cpus.iter().filter(|s| !s.is_empty()) {
            for cpu in set.iter() {
                of_cpu[cpu as usize] = sets.len() as u32;
            }
            sets.push(set.clone());
        }
    } else {
        for (i, text) in spec.packages.iter().enumerate() {
            let field = format!("packages[{i}]");
            let set = cpulist(field.clone(), text, nr_cpu_ids)?;
            for cpu in set.iter() {
                claim(&field, cpu, possible, &mut of_cpu, i, "package")?;
            }
            sets.push(set);
        }
        if let Some(cpu) = possible.iter().find(|&c| of_cpu[c as usize] == NONE) {
            return Err(invalid(format!("packages: CPU {cpu} is in no package")));
        }
    }
    for p in of_cpu.iter_mut().filter(|p| **p == NONE) {
        *p = 0;
    }
    Ok(Membership { of_cpu, sets })
}

/// `distances`: a square matrix over every node id, 10 on the diagonal and 11..[`DISTANCE_MAX`]
/// off it (the kernel's `slit_valid`), as a flat table; `None` for none or for the defaults.
pub(super) fn distances(spec: &TopologySpec, nr_node_ids: u32) -> Result<Option<Vec<u32>>, TopologyError> {
    let n = nr_node_ids as usize;
    let Some(rows) = &spec.distances else {
        return Ok(None);
    };
    if rows.len() != n {
        return Err(invalid(format!("distances: {} rows for {n} nodes", rows.len())));
    }
    let mut flat = Vec::with_capacity(n * n);
    let mut default = true;
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
            default &= i == j || d == REMOTE_DISTANCE;
        }
        flat.extend_from_slice(row);
    }
    // A matrix that says what the defaults say is the defaults.
    Ok((!default).then_some(flat))
}

/// `arch`, `irqchip` and `legacy_pic` agree: the interrupt controller is one of the
/// architecture's (each defaults from the other, then to x86_64 with an APIC), and only x86 has
/// an 8259 PIC.
pub(super) fn arch_and_irqchip(spec: &TopologySpec) -> Result<(Arch, Irqchip), TopologyError> {
    let arch = spec.arch.or(spec.irqchip.map(Irqchip::arch)).unwrap_or_default();
    let irqchip = spec.irqchip.unwrap_or(arch.default_irqchip());
    if irqchip.arch() != arch {
        return Err(invalid(format!(
            "irqchip: {} is an {} interrupt controller, but arch is {}",
            irqchip.name(),
            irqchip.arch().name(),
            arch.name()
        )));
    }
    if spec.legacy_pic == Some(true) && arch != Arch::X86_64 {
        return Err(invalid(format!(
            "legacy_pic: an 8259 PIC is an x86 fact, but arch is {}",
            arch.name()
        )));
    }
    Ok((arch, irqchip))
}
