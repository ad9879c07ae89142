//! Probe order as a distribution (`simulate --orders all --counter 0..5`), against the naive
//! loop that runs every order as its own scenario.
//!
//! - `seed000_l96as_v4_6x62`: seed 000's six disks on the L96as v4 (720 orders × counter
//!   starts 0..5) under `rotation` and `rotation-v1`. `distribution` walks the orders as a
//!   tree of prefixes and counts the interchangeable disks' 720 orders as one arrangement;
//!   `naive` runs all 4,320 scenarios. The goal: ≤ 1 s, ≥ 10 × faster than naive.
//! - `six_distinct_l96as_v4`: six disks of different sizes (62 down to 57 queues), so every
//!   one of the 720 orders is a distinct arrangement: what the prefix walk and the spreads
//!   remembered per (device, counter) save on their own (`run_by_run` runs each order as a
//!   scenario of its own, counting nothing twice either way).
//!
//! Every variant is checked to give the naive loop's histogram before it is timed.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use irqscope::analysis::orders::{distribution, distribution_run_by_run, CounterRange, Orders};
use irqscope::kernel::vector_matrix::EffectiveModel;
use irqscope::kernel::{SortGen, Variant};
use irqscope::metrics;
use irqscope::scenario::spec::{expand_devices, parse_device_token};
use irqscope::scenario::{try_run, Scenario};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

const COUNTERS: CounterRange = CounterRange { from: 0, to: 5 };

fn scenario(tokens: &[&str], variant: Variant) -> Scenario {
    let specs: Vec<_> = tokens.iter().map(|t| parse_device_token(t).unwrap()).collect();
    Scenario::new(
        irqscope::catalogue::get("azure-l96as-v4").unwrap(),
        expand_devices(&specs).unwrap(),
        variant,
        SortGen::HeapV6_11,
        EffectiveModel::X86Matrix,
        0,
    )
    .unwrap()
}

/// Every permutation of `0..n`.
fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for at in 0..=p.len() {
            let mut q = p.clone();
            q.insert(at, n - 1);
            out.push(q);
        }
    }
    out
}

/// The naive loop: each order and counter start its own scenario; the worst CPU's load →
/// runs.
fn naive(s: &Scenario) -> BTreeMap<u32, u64> {
    let mut worst = BTreeMap::new();
    for order in permutations(s.devices().len()) {
        for counter in COUNTERS.from..=COUNTERS.to {
            let r = s.reordered(&order, counter);
            let m = metrics::compute(&r, &try_run(&r).unwrap());
            *worst.entry(m.irqs_per_cpu_max).or_insert(0) += 1;
        }
    }
    worst
}

fn bench(c: &mut Criterion) {
    let seed000 = ["6x62:name=nvme,pre=1"];
    let distinct = [
        "62:name=a,pre=1",
        "61:name=b,pre=1",
        "60:name=c,pre=1",
        "59:name=d,pre=1",
        "58:name=e,pre=1",
        "57:name=f,pre=1",
    ];
    for (group, tokens) in [
        ("seed000_l96as_v4_6x62", &seed000[..]),
        ("six_distinct_l96as_v4", &distinct[..]),
    ] {
        let mut g = c.benchmark_group(group);
        g.sample_size(10).measurement_time(Duration::from_secs(20));
        for variant in [Variant::Rotation, Variant::RotationV1] {
            let s = scenario(tokens, variant);
            let want = naive(&s);
            assert_eq!(want.values().sum::<u64>(), 4320);
            let d = distribution(&s, Orders::All, COUNTERS).unwrap();
            assert!(d.exact);
            assert_eq!(d.worst_irqs_per_cpu, want, "{group} {}", variant.name());
            g.bench_with_input(BenchmarkId::new("distribution", variant.name()), &s, |b, s| {
                b.iter(|| black_box(distribution(s, Orders::All, COUNTERS).unwrap()))
            });
            g.bench_with_input(BenchmarkId::new("run_by_run", variant.name()), &s, |b, s| {
                b.iter(|| black_box(distribution_run_by_run(s, Orders::All, COUNTERS).unwrap()))
            });
            g.bench_with_input(BenchmarkId::new("naive", variant.name()), &s, |b, s| {
                b.iter(|| black_box(naive(s)))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
