//! `/proc/interrupts` parsing speed on a synthetic 1,024-CPU × 4,096-IRQ file (about 44 MB),
//! reported in MB/s. The same file is written to `target/live-bench-interrupts.txt` and
//! `wc -l` timed on it for a floor: reading the bytes and counting newlines.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use irqscope::live::parse::{format_interrupts, parse_interrupts, Interrupts, IrqRow};
use std::hint::black_box;
use std::time::Instant;

const N_CPUS: u32 = 1024;
const N_IRQS: u32 = 4096;

/// Each device IRQ fires on one CPU (managed queues), a few on many; counts of every width.
fn synthetic() -> String {
    let mut rows: Vec<IrqRow> = (0..N_IRQS)
        .map(|i| {
            let counts = if i % 64 == 0 {
                (0..N_CPUS)
                    .map(|c| (c, u64::from(c) * 7919 + u64::from(i)))
                    .filter(|c| c.1 != 0)
                    .collect()
            } else {
                vec![(i % N_CPUS, u64::from(i) * 104_729 + 1)]
            };
            IrqRow {
                label: (24 + i).to_string(),
                counts,
                n_counts: N_CPUS,
                chip: format!("IR-PCI-MSIX-0000:{:02x}:00.0", i / 64),
                hwirq: format!("{}-edge", i % 64),
                name: format!("nvme{}q{}", i / 64, i % 64),
            }
        })
        .collect();
    rows.push(IrqRow {
        label: "LOC".into(),
        counts: (0..N_CPUS).map(|c| (c, 1_000_000 + u64::from(c))).collect(),
        n_counts: N_CPUS,
        name: "Local timer interrupts".into(),
        ..Default::default()
    });
    rows.push(IrqRow {
        label: "ERR".into(),
        n_counts: 1,
        ..Default::default()
    });
    format_interrupts(&Interrupts {
        cpus: (0..N_CPUS).collect(),
        rows,
    })
}

fn bench(c: &mut Criterion) {
    let text = synthetic();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/live-bench-interrupts.txt");
    std::fs::write(&path, &text).unwrap();
    // The floor: wc -l on the same bytes (best of five, file in the page cache).
    let mut wc_best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let out = std::process::Command::new("wc").arg("-l").arg(&path).output();
        if out.map(|o| o.status.success()).unwrap_or(false) {
            wc_best = wc_best.min(t.elapsed().as_secs_f64());
        }
    }
    let mb = text.len() as f64 / 1e6;
    if wc_best < f64::MAX {
        eprintln!(
            "wc -l on {mb:.1} MB: {:.1} ms ({:.0} MB/s, process start included)",
            wc_best * 1e3,
            mb / wc_best
        );
    }
    let parsed = parse_interrupts(&text).unwrap();
    assert_eq!(parsed.rows.len(), N_IRQS as usize + 2);
    let mut g = c.benchmark_group("live");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.sample_size(10);
    g.bench_function("parse_interrupts_1024cpu_4096irq", |b| {
        b.iter(|| parse_interrupts(black_box(&text)).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
