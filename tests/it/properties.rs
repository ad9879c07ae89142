//! Invariants of the models on random machines (proptest): the kernel's own postcondition of
//! `group_cpus_evenly` (every possible CPU in exactly one group), balanced group sizes, and
//! cpulist round trips.

use irqscope::kernel::{group_cpus_evenly, SortGen, Variant};
use irqscope::topology::{format_cpulist, parse_cpulist, CpuSet, Topology, TopologySpec};
use proptest::prelude::*;

use crate::common;
use common::machines::machine;

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
        // The counter moves once per call with two or more groups, for rotation variants only
        // (and for one group too where the variant reads it before testing `numgrps`).
        let moved = c != counter;
        prop_assert_eq!(moved, v.uses_counter() && (numgrps >= 2 || v.counts_one_group_calls()));
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
