//! What the importer targets share: the check that an accepted import exports to sysfs and
//! re-imports to the same shape, within a bound on the exported tree's size.

use irqscope::topology::import::{self, export, sysfs};
use irqscope::topology::Topology;

/// Largest round trip made per input, in mask bits: possible CPUs x nr_cpu_ids. The exported
/// tree holds five hex masks of nr_cpu_ids bits per CPU, so its size grows as that product and
/// one 8192-CPU round trip takes seconds. Larger machines go through the same export and
/// re-import code, only for longer, and every preset up to 8192 CPUs is round-tripped by
/// `tests/it/catalogue.rs` (`sysfs_round_trip_in_memory`). 2^13 admits 90 dense CPUs (two mask
/// words, comma-grouped hex) or one CPU with an id up to 8191; at 2^16 the round trip of the
/// larger inputs took most of an execution.
pub const ROUND_TRIP_MASK_BITS_MAX: u64 = 1 << 13;

/// Largest distance matrix round-tripped per input, in entries (nr_node_ids²: every node's
/// `node*/distance` file lists its distance to every node, default or not). A few bytes can
/// name node 1000, and the exported files then hold a million numbers; 2^13 admits 90 nodes.
/// `tests/it/import.rs` (`sparse_node_ids_keep_their_distances_without_a_full_table`)
/// round-trips an 892-node matrix.
pub const ROUND_TRIP_DISTANCES_MAX: u64 = 1 << 13;

/// An accepted import is valid and, within the bounds above, exports and re-imports to the
/// same shape. Panics (the fuzzer's finding) otherwise; returns the topology.
pub fn check_accepted(spec: &irqscope::topology::TopologySpec) -> Topology {
    let t = Topology::new(spec).expect("an accepted import validates");
    let mask_bits = u64::from(t.possible().weight()) * u64::from(t.nr_cpu_ids());
    let distances = u64::from(t.nr_node_ids()).pow(2);
    if mask_bits <= ROUND_TRIP_MASK_BITS_MAX && distances <= ROUND_TRIP_DISTANCES_MAX {
        let back = sysfs::parse(&export::sysfs_files(&t)).expect("the sysfs export re-imports");
        assert_eq!(import::shape(&Topology::new(&back).unwrap()), import::shape(&t));
    }
    t
}
