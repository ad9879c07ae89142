//! `group_cpus_evenly` on a large machine: 8,192 CPUs, 64 nodes, SMT2, clusters of 8 CPUs, with
//! 1,024 and 8,192 groups, for every variant (the shape of perf-oracle's `shapes/p1-8192.toml`).
//! Absolute times only; the ratio against the kernel's own C, run side by side, comes from
//! `scripts/bench-vs-kernel-c` (see `docs/perf.md`).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use irqscope::kernel::{group_cpus_evenly, SortGen, Variant};
use irqscope::topology::{Topology, TopologySpec};
use std::hint::black_box;

fn machine() -> Topology {
    let spec: TopologySpec = toml::from_str(
        r#"
        name = "synthetic 8192"
        [generate]
        packages = 8
        nodes_per_package = 8
        cores_per_node = 64
        threads_per_core = 2
        clusters = 4
        "#,
    )
    .unwrap();
    Topology::new(&spec).unwrap()
}

fn bench(c: &mut Criterion) {
    let topo = machine();
    assert_eq!(topo.nr_cpu_ids(), 8192);
    let mut group = c.benchmark_group("group_cpus_evenly_8192cpus_64nodes");
    for numgrps in [1024u32, 8192] {
        for variant in Variant::ALL {
            group.bench_with_input(BenchmarkId::new(variant.name(), numgrps), &numgrps, |b, &n| {
                let mut counter = 0u32;
                let mut warnings = Vec::new();
                b.iter(|| {
                    let g = group_cpus_evenly(
                        &topo,
                        black_box(n),
                        variant,
                        SortGen::HeapV6_11,
                        &mut counter,
                        &mut warnings,
                    );
                    black_box(g)
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
