//! The agent's reading on a synthetic 1,024-CPU × 4,096-IRQ host (`/proc/interrupts` about
//! 46 MB): parse, build + encode, and the whole reading (read the files, parse, build, encode a
//! gzip push body). The host is written under `target/live-bench-root/` (sysfs of the
//! `synthetic-1024` preset, `/proc/interrupts`, `/proc/irq/N/*`).
//!
//! Printed beside criterion's figures, measured in the same run on the same file: `wc -l`
//! (reading the bytes and counting newlines), two awk programs (`{s+=$2}` and a sum over every
//! column), and the push body bytes per reading (plain JSON, gzip, and a gzip of the counter
//! deltas against the previous reading, to decide whether deltas are worth a protocol change).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use irqscope::live::collect::{self, Collector};
use irqscope::live::parse::{format_interrupts, parse_interrupts, parse_interrupts_into, Interrupts, IrqRow};
use irqscope::live::protocol::{encode_push_body, gzip_into, Snapshot, PUSH_GZIP_LEVEL};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

const N_CPUS: u32 = 1024;
const N_IRQS: u32 = 4096;

/// Each device IRQ fires on one CPU (managed queues), a few on many; counts of every width.
/// `tick` advances the counters as a second reading would.
fn synthetic(tick: u64) -> Interrupts {
    let mut rows: Vec<IrqRow> = (0..N_IRQS)
        .map(|i| {
            let counts = if i % 64 == 0 {
                (0..N_CPUS)
                    .map(|c| (c, u64::from(c) * 7919 + u64::from(i) + tick * u64::from(c % 7)))
                    .filter(|c| c.1 != 0)
                    .collect()
            } else {
                vec![(i % N_CPUS, u64::from(i) * 104_729 + 1 + tick * u64::from(i % 13))]
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
        counts: (0..N_CPUS)
            .map(|c| (c, 1_000_000 + u64::from(c) + tick * 1000))
            .collect(),
        n_counts: N_CPUS,
        name: "Local timer interrupts".into(),
        ..Default::default()
    });
    rows.push(IrqRow {
        label: "ERR".into(),
        n_counts: 1,
        ..Default::default()
    });
    Interrupts {
        cpus: (0..N_CPUS).collect(),
        rows,
    }
}

/// The host tree: sysfs of the 1,024-CPU preset, /proc/interrupts, one /proc/irq/N per IRQ.
fn write_root(root: &Path, text: &str) {
    let _ = std::fs::remove_dir_all(root);
    let topo = irqscope::catalogue::get("synthetic-1024").expect("preset");
    irqscope::topology::import::export::write_sysfs(&topo, root).unwrap();
    let proc = root.join("proc");
    std::fs::create_dir_all(proc.join("sys/kernel/random")).unwrap();
    std::fs::write(proc.join("interrupts"), text).unwrap();
    std::fs::write(
        proc.join("sys/kernel/random/boot_id"),
        "0f0e0d0c-0b0a-4908-8706-050403020100\n",
    )
    .unwrap();
    std::fs::write(proc.join("sys/kernel/osrelease"), "6.12.107+deb12-cloud-amd64\n").unwrap();
    for i in 0..N_IRQS {
        let dir = proc.join(format!("irq/{}", 24 + i));
        std::fs::create_dir_all(&dir).unwrap();
        let cpu = i % N_CPUS;
        std::fs::write(dir.join("smp_affinity_list"), format!("{cpu}\n")).unwrap();
        std::fs::write(dir.join("effective_affinity_list"), format!("{cpu}\n")).unwrap();
        std::fs::write(dir.join("node"), format!("{}\n", cpu / 128)).unwrap();
    }
}

/// Best of `runs` wall times of a command (single-threaded, file in the page cache), in ms.
fn best_ms(runs: usize, program: &str, args: &[&str]) -> Option<f64> {
    let mut best = f64::MAX;
    for _ in 0..runs {
        let t = Instant::now();
        let out = std::process::Command::new(program).args(args).output().ok()?;
        if !out.status.success() {
            return None;
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e3);
    }
    Some(best)
}

/// CPU time this thread has run, in ns (`/proc/thread-self/schedstat`, first field): CPU,
/// not wall time, so the figures hold on a loaded machine.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// CPU ms per call of `f`, over `runs` calls.
fn cpu_ms(runs: u32, mut f: impl FnMut()) -> Option<f64> {
    f();
    let t = thread_cpu_ns()?;
    for _ in 0..runs {
        f();
    }
    Some((thread_cpu_ns()? - t) as f64 / 1e6 / f64::from(runs))
}

/// CPU ms (user + system) per run of a shell command, from bash's `times` after `runs` runs.
fn child_cpu_ms(runs: u32, command: &str) -> Option<f64> {
    let script = format!("for i in $(seq {runs}); do {command} >/dev/null; done; times");
    let out = std::process::Command::new("bash").args(["-c", &script]).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    // `times` prints the shell's then the children's "0m0.123s 0m0.004s".
    let children = text.lines().last()?;
    let secs = |w: &str| -> Option<f64> {
        let (m, s) = w.strip_suffix('s')?.split_once('m')?;
        Some(m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?)
    };
    let mut words = children.split_whitespace();
    let total = secs(words.next()?)? + secs(words.next()?)?;
    Some(total * 1e3 / f64::from(runs))
}

/// Bytes of `bytes` as a push body's gzip (zlib-rs, the agent's level).
fn gzip_len(bytes: &[u8]) -> usize {
    let mut out = Vec::new();
    gzip_into(bytes, PUSH_GZIP_LEVEL, &mut out).unwrap();
    out.len()
}

/// The same through flate2's miniz backend at level 1, the push encoder before zlib-rs.
fn miniz_gzip_len(bytes: &[u8]) -> usize {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(1));
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap().len()
}

/// The snapshot with each counter replaced by its increase since `prev` (unchanged ones left
/// out): what a delta encoding against the last acknowledged reading would send.
fn delta_of(cur: &Snapshot, prev: &Snapshot) -> Snapshot {
    let mut d = cur.clone();
    for (irq, old) in d.irqs.iter_mut().zip(&prev.irqs) {
        irq.counts = irq
            .counts
            .iter()
            .filter_map(|&(cpu, n)| {
                let before = old.counts.iter().find(|c| c.0 == cpu).map_or(0, |c| c.1);
                (n != before).then_some((cpu, n - before))
            })
            .collect();
    }
    d
}

fn bench(c: &mut Criterion) {
    let text = format_interrupts(&synthetic(0));
    let root: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/live-bench-root");
    write_root(&root, &text);
    let file = root.join("proc/interrupts");
    let file = file.to_str().unwrap();
    let mb = text.len() as f64 / 1e6;
    eprintln!("/proc/interrupts: {N_CPUS} CPUs x {N_IRQS} IRQs, {mb:.1} MB");
    // References on the same file, best of five (process start included).
    for (what, program, args) in [
        ("wc -l", "wc", vec!["-l", file]),
        ("awk '{s+=$2} END{print s}'", "awk", vec!["{s+=$2} END{print s}", file]),
        (
            "awk '{for(i=2;i<=NF;i++)s+=$i} END{print s}'",
            "awk",
            vec!["{for(i=2;i<=NF;i++)s+=$i} END{print s}", file],
        ),
    ] {
        if let Some(ms) = best_ms(5, program, &args) {
            eprintln!("reference {what}: {ms:.1} ms ({:.0} MB/s)", mb / (ms / 1e3));
        }
    }
    // CPU time side by side (user + system of the awk processes; this thread's CPU for ours).
    let awk_sum2 = child_cpu_ms(10, &format!("awk '{{s+=$2}} END{{print s}}' {file}"));
    let awk_all = child_cpu_ms(3, &format!("awk '{{for(i=2;i<=NF;i++)s+=$i}} END{{print s}}' {file}"));
    let wc = child_cpu_ms(10, &format!("wc -l {file}"));
    let mut parsed = parse_interrupts(&text).unwrap();
    let parse_cpu = cpu_ms(20, || parse_interrupts_into(black_box(&text), &mut parsed).unwrap());
    let proc_files = collect::read_proc(&root).unwrap();
    let topo = Collector::new(&root, "bench").read(0).unwrap().topology;
    let mut snap = None;
    let build_cpu = cpu_ms(20, || {
        snap = Some(collect::build_snapshot_from(&parsed, &proc_files, &topo, "bench", 3).unwrap())
    });
    let snap = snap.unwrap();
    let mut json_buf = Vec::new();
    let json_cpu = cpu_ms(20, || {
        json_buf.clear();
        serde_json::to_writer(&mut json_buf, &snap).unwrap();
    });
    let mut gz_buf = Vec::new();
    let gzip_cpu = cpu_ms(20, || {
        gzip_into(black_box(&json_buf), PUSH_GZIP_LEVEL, &mut gz_buf).unwrap()
    });
    let miniz_cpu = cpu_ms(5, || {
        black_box(miniz_gzip_len(&json_buf));
    });
    if let (Some(b), Some(j), Some(z), Some(m)) = (build_cpu, json_cpu, gzip_cpu, miniz_cpu) {
        eprintln!(
            "CPU ms: build {b:.1}, JSON {j:.1} ({} bytes), gzip zlib-rs level {PUSH_GZIP_LEVEL} {z:.1} ({} bytes), \
             miniz level 1 {m:.1} ({} bytes)",
            json_buf.len(),
            gz_buf.len(),
            miniz_gzip_len(&json_buf)
        );
    }
    // Reading the files alone: /proc/interrupts into a kept buffer, and the 512 IRQ
    // directories one reading refreshes.
    let mut text_buf = String::new();
    let read_cpu = cpu_ms(20, || {
        use std::io::Read;
        text_buf.clear();
        std::fs::File::open(file)
            .unwrap()
            .read_to_string(&mut text_buf)
            .unwrap();
    });
    let irq_cpu = cpu_ms(5, || {
        for i in 0..collect::IRQ_FILES_PER_READING as u32 {
            for name in ["smp_affinity_list", "effective_affinity_list", "node"] {
                black_box(std::fs::read(root.join(format!("proc/irq/{}/{name}", 24 + i))).ok());
            }
        }
    });
    if let (Some(r), Some(i)) = (read_cpu, irq_cpu) {
        eprintln!(
            "CPU ms: read /proc/interrupts {r:.1}, {} IRQ directories {i:.1}",
            collect::IRQ_FILES_PER_READING
        );
    }
    let mut reading_collector = Collector::new(&root, "bench");
    let (mut s1, mut b1) = (Vec::new(), Vec::new());
    let reading_cpu = cpu_ms(20, || {
        let snap = reading_collector.read(5).unwrap();
        encode_push_body(&snap, &mut s1, &mut b1).unwrap();
    });
    if let (Some(a2), Some(aa), Some(wc), Some(p), Some(r)) = (awk_sum2, awk_all, wc, parse_cpu, reading_cpu) {
        eprintln!("CPU ms: wc -l {wc:.1}, awk '{{s+=$2}}' {a2:.1}, awk sum of every column {aa:.1}");
        eprintln!(
            "CPU ms: parse {p:.1} ({:.3} x awk '{{s+=$2}}', {:.3} x awk sum of every column); whole reading (read, parse, build, gzip) {r:.1}",
            p / a2,
            p / aa
        );
    }
    // Push body bytes per reading.
    let mut collector = Collector::new(&root, "bench");
    let first = collector.read(1).unwrap();
    let json = serde_json::to_vec(&first).unwrap();
    let (mut scratch, mut body) = (Vec::new(), Vec::new());
    encode_push_body(&first, &mut scratch, &mut body).unwrap();
    let second_text = format_interrupts(&synthetic(1));
    let proc = collect::ProcFiles {
        interrupts: second_text,
        ..collect::read_proc(&root).unwrap()
    };
    let second = collect::build_snapshot(&proc, &first.topology, "bench", 2).unwrap();
    let delta = serde_json::to_vec(&delta_of(&second, &first)).unwrap();
    eprintln!(
        "push body per reading: JSON {} bytes, gzip {} bytes; a delta against the previous reading: JSON {} bytes, gzip {} bytes ({:.0} % of the full gzip body)",
        json.len(),
        body.len(),
        delta.len(),
        gzip_len(&delta),
        100.0 * gzip_len(&delta) as f64 / body.len() as f64
    );

    let mut g = c.benchmark_group("live");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(text.len() as u64));
    assert_eq!(parsed.rows.len(), N_IRQS as usize + 2);
    g.bench_function("parse_interrupts_1024cpu_4096irq", |b| {
        b.iter(|| parse_interrupts_into(black_box(&text), &mut parsed).unwrap())
    });
    let proc = collect::read_proc(&root).unwrap();
    g.bench_function("build_encode_1024cpu_4096irq", |b| {
        b.iter(|| {
            let snap = collect::build_snapshot_from(&parsed, &proc, &first.topology, "bench", 3).unwrap();
            encode_push_body(&snap, &mut scratch, &mut body).unwrap();
            body.len()
        })
    });
    g.bench_function("whole_reading_1024cpu_4096irq", |b| {
        b.iter(|| {
            let snap = collector.read(4).unwrap();
            encode_push_body(&snap, &mut scratch, &mut body).unwrap();
            body.len()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
