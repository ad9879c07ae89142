//! `irqscope-agent export` on a synthetic 1,024-CPU × 4,096-IRQ host: the time to encode one
//! scrape and its bytes, beside the push path's JSON encoding of the same snapshot (the
//! reference, measured in the same run).

use criterion::{criterion_group, criterion_main, Criterion};
use irqscope::live::export::{encode, to_classic_text, ExportOptions};
use irqscope::live::protocol::{Snapshot, WireIrq, WireTopology, PROTOCOL_VERSION};
use std::hint::black_box;
use std::sync::Arc;

const N_CPUS: u32 = 1024;
const N_IRQS: u32 = 4096;

/// Managed queues firing on one CPU each, one IRQ in 64 on every CPU (as benches/live.rs).
fn synthetic() -> Snapshot {
    let topo = irqscope::catalogue::get("synthetic-1024").expect("preset");
    let mut topology = WireTopology::from_topology(&topo);
    topology.kernel_release = "6.12.107+deb12-cloud-amd64".into();
    let irqs = (0..N_IRQS)
        .map(|i| {
            let cpu = i % N_CPUS;
            let counts = if i % 64 == 0 {
                (0..N_CPUS)
                    .map(|c| (c, u64::from(c) * 7919 + u64::from(i) + 1))
                    .collect()
            } else {
                vec![(cpu, u64::from(i) * 104_729 + 1)]
            };
            WireIrq {
                label: (24 + i).to_string(),
                chip: format!("IR-PCI-MSIX-0000:{:02x}:00.0", i / 64),
                hwirq: format!("{}-edge", i % 64),
                name: format!("nvme{}q{}", i / 64, i % 64),
                counts,
                affinity: Some(cpu.to_string()),
                effective: Some(cpu.to_string()),
                node: Some(cpu / 128),
            }
        })
        .collect();
    Snapshot {
        version: PROTOCOL_VERSION,
        host: "bench".into(),
        taken_unix_ms: 0,
        boot_id: String::new(),
        topology,
        cpus: (0..N_CPUS).collect(),
        irqs,
    }
}

fn bench(c: &mut Criterion) {
    let snap = Arc::new(synthetic());
    let opts = Arc::new(ExportOptions::default());
    let text = to_classic_text(&encode(snap.clone(), opts.clone()));
    let series = text.lines().filter(|l| !l.starts_with('#')).count();
    let json = serde_json::to_vec(&*snap).unwrap();
    eprintln!(
        "export: {series} series, {:.1} MB of text; push JSON of the same snapshot: {:.1} MB",
        text.len() as f64 / 1e6,
        json.len() as f64 / 1e6
    );
    let mut g = c.benchmark_group("export_1024x4096");
    g.sample_size(10);
    g.bench_function("encode_scrape", |b| {
        b.iter(|| to_classic_text(&encode(black_box(snap.clone()), opts.clone())))
    });
    g.bench_function("reference_push_json", |b| {
        b.iter(|| serde_json::to_vec(black_box(&*snap)).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
