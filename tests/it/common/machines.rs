//! Random machines for property tests.
#![allow(dead_code)]

use irqscope::topology::{format_cpulist, CpuSet, Topology, TopologySpec};
use proptest::prelude::*;

/// A random machine: 1-5 nodes (some may be empty), SMT 1-2, clusters or none, some CPUs
/// possible but not present and some present but offline.
pub fn machine() -> impl Strategy<Value = Topology> {
    (
        prop::collection::vec(0u32..10, 1..5),
        1u32..3,
        0u32..4,
        prop::collection::vec(0u8..8, 64),
    )
        .prop_map(|(cores_per_node, threads, cluster_cores, state)| {
            let mut nodes = Vec::new();
            let mut smt = Vec::new();
            let mut clusters = Vec::new();
            let mut next = 0u32;
            for &cores in &cores_per_node {
                let first = next;
                let mut core_sets = Vec::new();
                for _ in 0..cores {
                    let set: CpuSet = (next..next + threads).collect();
                    next += threads;
                    core_sets.push(set);
                }
                if cluster_cores > 0 {
                    for chunk in core_sets.chunks(cluster_cores as usize) {
                        let mut c = CpuSet::default();
                        chunk.iter().for_each(|s| c.or_assign(s));
                        clusters.push(c.to_cpulist());
                    }
                }
                smt.extend(core_sets.iter().filter(|s| s.weight() > 1).map(CpuSet::to_cpulist));
                nodes.push(format_cpulist(&(first..next).collect()));
            }
            if next == 0 {
                nodes[0] = "0".into();
                next = 1;
            }
            // state 0: absent; 1: present, offline; otherwise online. CPU 0 stays online.
            let present: CpuSet = (0..next).filter(|&c| c == 0 || state[c as usize % 64] != 0).collect();
            let online: CpuSet = present
                .iter()
                .filter(|&c| c == 0 || state[c as usize % 64] > 1)
                .collect();
            let spec = TopologySpec {
                name: "random".into(),
                nodes: Some(nodes),
                smt,
                clusters,
                present: Some(present.to_cpulist()),
                online: Some(online.to_cpulist()),
                ..TopologySpec::default()
            };
            Topology::new(&spec).expect("generated topologies are valid")
        })
}
