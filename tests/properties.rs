//! Invariants of the models on random machines (proptest): the kernel's own postcondition of
//! `group_cpus_evenly` (every possible CPU in exactly one group), balanced group sizes, and
//! cpulist round trips.

use irqscope::kernel::{group_cpus_evenly, SortGen, Variant};
use irqscope::topology::{format_cpulist, parse_cpulist, CpuSet, Topology, TopologySpec};
use proptest::prelude::*;

/// A random machine: 1-5 nodes (some may be empty), SMT 1-2, clusters of 1-4 cores or none,
/// some CPUs possible but not present.
fn machine() -> impl Strategy<Value = Topology> {
    (
        prop::collection::vec(0u32..12, 1..5),
        1u32..3,
        0u32..5,
        prop::collection::vec(any::<bool>(), 64),
    )
        .prop_map(|(cores_per_node, threads, cluster_cores, absent)| {
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
            let present: CpuSet = (0..next).filter(|&c| c == 0 || !absent[c as usize % 64]).collect();
            let spec = TopologySpec {
                name: "random".into(),
                nodes: Some(nodes),
                smt,
                clusters,
                present: Some(present.to_cpulist()),
                ..TopologySpec::default()
            };
            Topology::new(&spec).expect("generated topologies are valid")
        })
}

fn variant() -> impl Strategy<Value = Variant> {
    prop::sample::select(Variant::ALL.to_vec())
}

fn sort_gen() -> impl Strategy<Value = SortGen> {
    prop::sample::select(SortGen::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn every_cpu_in_exactly_one_group(t in machine(), numgrps in 1u32..80, v in variant(), s in sort_gen(), counter in any::<u32>()) {
        let mut c = counter;
        let mut warnings = Vec::new();
        let g = group_cpus_evenly(&t, numgrps, v, s, &mut c, &mut warnings).unwrap();
        let masks = g.masks();
        prop_assert_eq!(masks.len() as u32, numgrps);
        for cpu in t.possible().iter() {
            let holders = masks.iter().filter(|m| m.contains(cpu)).count();
            prop_assert_eq!(holders, 1, "CPU {} in {} groups", cpu, holders);
        }
        let covered: u32 = masks.iter().map(CpuSet::weight).sum();
        prop_assert_eq!(covered, t.possible().weight());
        prop_assert!(g.nummasks() <= numgrps);
        prop_assert!(masks.iter().take(g.nummasks() as usize).all(|m| !m.is_empty()));
        // The counter moves once per call with two or more groups, for rotation variants only.
        let moved = c != counter;
        prop_assert_eq!(moved, v.uses_counter() && numgrps >= 2);
    }

    /// `pre-cluster` with every CPU present: inside one node, group sizes differ by at most one.
    #[test]
    fn groups_within_a_node_are_balanced(t in machine(), numgrps in 1u32..80, s in sort_gen()) {
        let all_present = Topology::new(&TopologySpec { present: None, ..t.to_spec() }).unwrap();
        let mut c = 0;
        let mut warnings = Vec::new();
        let g = group_cpus_evenly(&all_present, numgrps, Variant::PreCluster, s, &mut c, &mut warnings).unwrap();
        for node in all_present.nodes_with_cpus() {
            let cpus = all_present.node_cpus(node);
            let sizes: Vec<u32> = g.masks().iter().filter(|m| m.is_subset(cpus) && !m.is_empty()).map(CpuSet::weight).collect();
            if let (Some(max), Some(min)) = (sizes.iter().max(), sizes.iter().min()) {
                prop_assert!(max - min <= 1, "node {}: sizes {:?}", node, sizes);
            }
        }
        prop_assert!(warnings.is_empty() || numgrps > all_present.possible().weight());
    }

    #[test]
    fn cpulist_round_trips(ids in prop::collection::btree_set(0u32..2048, 0..200)) {
        let set: CpuSet = ids.iter().copied().collect();
        let text = format_cpulist(&set);
        prop_assert_eq!(parse_cpulist(&text, 2048).unwrap(), set);
    }

    #[test]
    fn cpulist_parser_never_panics(text in "[0-9N,:/ a-l-]{0,40}") {
        let _ = parse_cpulist(&text, 64);
        let _ = irqscope::topology::parse_hex_mask(&text, 64);
    }
}
