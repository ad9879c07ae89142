//! The agent's reading on a synthetic 1,024-CPU × 4,096-IRQ host (`/proc/interrupts` about
//! 46 MB): read, parse, build, encode, and the whole reading (read the files, parse, build,
//! encode a gzip push body, full or as a delta against the previous reading). The host is
//! written under `target/live-bench-root/` (sysfs of the `synthetic-1024` preset,
//! `/proc/interrupts`, `/proc/irq/N/*`).
//!
//! Printed beside criterion's figures, measured in the same run on the same file: `wc -l`
//! (reading the bytes and counting newlines), two awk programs (`{s+=$2}` and a sum over every
//! column), this thread's CPU per step, and the push body bytes per reading (JSON and gzip,
//! full and delta); and the whole process: the release `irqscope-agent push` against the
//! release `irqscope serve` on loopback, its own CPU time per steady reading.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use irqscope::live::collect::{self, Collector};
use irqscope::live::parse::{
    format_interrupts, parse_interrupts, parse_interrupts_bytes_into, parse_interrupts_into,
    parse_interrupts_read_into, Interrupts, IrqRow,
};
use irqscope::live::protocol::{encode_delta_body, encode_push_body, gzip_into, Delta, PUSH_GZIP_LEVEL};
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

/// CPU time this thread has run, in ns (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`): CPU, not
/// wall time, so the figures hold on a loaded machine. Exact when called: the kernel brings a
/// running thread's count up to date for it, where `/proc/thread-self/schedstat` shows the
/// count as of the last tick or switch (up to 4 ms behind at HZ=250, which a read of a few ms
/// cannot afford).
fn thread_cpu_ns() -> Option<u64> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Some(t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64)
}

/// Read `file` to its end through `buf` (each read fills at most all of it), as the
/// collector's reads do without the parse.
fn read_through(file: &Path, buf: &mut [u8]) -> Option<()> {
    use std::io::Read;
    let mut f = std::fs::File::open(file).ok()?;
    while f.read(buf).ok()? != 0 {}
    Some(())
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

/// A process's CPU time so far: every thread's run time in ns (`/proc/PID/task/*/schedstat`,
/// first field), and user and system in ms (`/proc/PID/stat` fields 14 and 15, in clock ticks
/// of 10 ms, `CLK_TCK` 100 as Linux builds it on x86: only their split is taken from these).
fn process_cpu(pid: u32) -> Option<(u64, u64, u64)> {
    let mut ns = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        ns += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split(' ').collect();
    Some((
        ns,
        fields.get(11)?.parse::<u64>().ok()? * 10,
        fields.get(12)?.parse::<u64>().ok()? * 10,
    ))
}

/// `seq` of the live host `host` on the server at `port` (a raw HTTP/1.1 GET), if it has one.
fn host_seq(port: u16, host: &str) -> Option<u64> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(
        s,
        "GET /api/live/{host} HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let body = text.split_once("\r\n\r\n")?.1;
    serde_json::from_str::<serde_json::Value>(body).ok()?["seq"].as_u64()
}

/// Kills (and reaps) a child when dropped.
struct Child(std::process::Child);

/// `cmd` started with its output discarded and its log level at `warn`.
fn spawn_quiet(cmd: &mut std::process::Command) -> Option<Child> {
    cmd.env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()
        .map(Child)
}
impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The agent process's CPU per steady reading, and what a bare reader of the same file pays.
#[derive(Clone, Copy)]
struct ProcessCpu {
    user: f64,
    system: f64,
    /// A thread that only reads the stand-in `/proc/interrupts` in the agent's chunks, once a
    /// second like the agent, measured in the same run: the kernel's copy of the file, which
    /// any reader of it pays and which depends on the file system the stand-in is on.
    bare_read: Option<f64>,
}

/// The real agent (`irqscope-agent push`, at its default interval of one second) against the
/// real server (`irqscope serve`) on loopback, reading a copy of the host made under `under`
/// while a thread writes the next tick of every counter into its `/proc/interrupts` after each
/// reading the server takes (so every reading is a steady one with counters moved, a delta
/// push): the agent process's own CPU time per reading, user and system, over `readings`
/// readings after the first three (the first is a full reading of every `/proc/irq`
/// directory). `None` when a binary, the port or `under` is not there.
///
/// Where the stand-in lives decides what its read costs the kernel: a tmpfs (`/dev/shm`)
/// copies it a 4 KiB page at a time, looking each page up (`shmem_file_read_iter`), where a
/// disk file system's page cache copies large folios found in batches (`filemap_read`). A real
/// `/proc/interrupts` is neither: a seq_file the kernel prints into one buffer and copies out
/// whole. The bench measures both and the bare read of each beside the agent.
fn agent_process_cpu(readings: u64, under: &Path) -> Option<ProcessCpu> {
    use std::sync::atomic::{AtomicBool, Ordering};
    if !under.is_dir() {
        return None;
    }
    let root = under.join(format!("irqscope-agent-bench-{}", std::process::id()));
    // The copy of the host (46 MB in memory) goes whichever way this returns.
    struct Remove(PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let _remove = Remove(root.clone());
    write_root(&root, &format_interrupts(&synthetic(0)));
    let token = root.join("token");
    std::fs::write(&token, "agent-bench-token-0123456789").ok()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let _server = spawn_quiet(
        std::process::Command::new(env!("CARGO_BIN_EXE_irqscope"))
            .args(["serve", "--addr", &format!("127.0.0.1:{port}"), "--live-tokens"])
            .arg(&token),
    )?;
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if t0.elapsed().as_secs() > 30 {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The next tick of every counter is written just after each reading the server takes,
    // while the agent waits for its next one, and in place (same length: every column is
    // padded to 10 digits), so the agent reads pages already in the page cache, as it would
    // read a file the kernel prints on demand, and the writer's work never overlaps a reading.
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, file) = (stop.clone(), root.join("proc/interrupts"));
        std::thread::spawn(move || {
            use std::io::{Seek, Write};
            let mut seen = 0;
            for tick in 1.. {
                // Wait for the server to take the next reading.
                loop {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    match host_seq(port, "bench") {
                        Some(seq) if seq > seen => {
                            seen = seq;
                            break;
                        }
                        _ => std::thread::sleep(std::time::Duration::from_millis(10)),
                    }
                }
                let text = format_interrupts(&synthetic(tick));
                // The directory is gone when the measurement returned early.
                let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&file) else {
                    break;
                };
                if f.metadata().map(|m| m.len()).ok() != Some(text.len() as u64)
                    || f.seek(std::io::SeekFrom::Start(0)).is_err()
                    || f.write_all(text.as_bytes()).is_err()
                {
                    break;
                }
            }
        })
    };
    let agent = spawn_quiet(
        std::process::Command::new(env!("CARGO_BIN_EXE_irqscope-agent"))
            .arg("push")
            .arg("--root")
            .arg(&root)
            .args(["--host", "bench", "--server", &format!("http://127.0.0.1:{port}")])
            .arg("--token-file")
            .arg(&token),
    )?;
    let wait_seq = |at_least: u64| -> Option<u64> {
        let t = Instant::now();
        loop {
            if let Some(seq) = host_seq(port, "bench").filter(|&s| s >= at_least) {
                return Some(seq);
            }
            if t.elapsed().as_secs() > 60 + 3 * readings {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    // The bare reader: the same file, once a second, its thread's CPU per read.
    let bare = {
        let (stop, file) = (stop.clone(), root.join("proc/interrupts"));
        std::thread::spawn(move || -> Option<f64> {
            let mut buf = vec![0u8; collect::INTERRUPTS_CHUNK_BYTES];
            let (mut ns, mut reads) = (0u64, 0u32);
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_secs(1));
                let t = thread_cpu_ns()?;
                read_through(&file, &mut buf)?;
                ns += thread_cpu_ns()? - t;
                reads += 1;
            }
            (reads > 0).then(|| ns as f64 / 1e6 / f64::from(reads))
        })
    };
    let pid = agent.0.id();
    let measured = (|| {
        // Each count is taken 300 ms after a push arrived, while the agent sleeps until its
        // next reading: a sleeping thread's schedstat is exact (a running one's lags by up to
        // a tick).
        let settle = || std::thread::sleep(std::time::Duration::from_millis(300));
        let seq0 = wait_seq(3)?;
        settle();
        let cpu0 = process_cpu(pid)?;
        let seq1 = wait_seq(seq0 + readings)?;
        settle();
        let cpu1 = process_cpu(pid)?;
        let n = (seq1 - seq0) as f64;
        let (user, system) = ((cpu1.1 - cpu0.1) as f64, (cpu1.2 - cpu0.2) as f64);
        let total = (cpu1.0 - cpu0.0) as f64 / 1e6 / n;
        // The ticks' split, applied to the exact total.
        let user_share = if user + system > 0.0 {
            user / (user + system)
        } else {
            0.5
        };
        Some((total * user_share, total * (1.0 - user_share)))
    })();
    drop(agent);
    stop.store(true, Ordering::Relaxed);
    let _ = writer.join();
    let bare_read = bare.join().ok().flatten();
    measured.map(|(user, system)| ProcessCpu {
        user,
        system,
        bare_read,
    })
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
    let bytes = text.as_bytes();
    let mut parsed = parse_interrupts(&text).unwrap();
    let parse_cpu = cpu_ms(20, || {
        parse_interrupts_bytes_into(black_box(bytes), &mut parsed).unwrap()
    });
    let parse_str_cpu = cpu_ms(10, || parse_interrupts_into(black_box(&text), &mut parsed).unwrap());
    // Reading the files alone: /proc/interrupts into a kept buffer, as bytes (the agent) and
    // as a UTF-8-checked String (before), and the IRQ directories one reading refreshes.
    let mut byte_buf = Vec::new();
    let read_cpu = cpu_ms(20, || {
        use std::io::Read;
        byte_buf.clear();
        std::fs::File::open(file).unwrap().read_to_end(&mut byte_buf).unwrap();
    });
    let mut text_buf = String::new();
    let read_str_cpu = cpu_ms(10, || {
        use std::io::Read;
        text_buf.clear();
        std::fs::File::open(file)
            .unwrap()
            .read_to_string(&mut text_buf)
            .unwrap();
    });
    // The collector's step: read in chunks, each parsed as it is read, at several chunk sizes;
    // and the same reads without the parse.
    const INTERRUPTS_BYTES_MAX: usize = 256 << 20;
    let mut chunk_buf = Vec::new();
    let mut streamed = Vec::new();
    for chunk in [64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20] {
        let read_only = cpu_ms(20, || {
            chunk_buf.resize(chunk, 0);
            read_through(Path::new(file), &mut chunk_buf[..chunk]).unwrap();
        });
        let read_parse = cpu_ms(20, || {
            let f = std::fs::File::open(file).unwrap();
            parse_interrupts_read_into(f, chunk, INTERRUPTS_BYTES_MAX, &mut chunk_buf, &mut parsed).unwrap()
        });
        streamed.push((chunk, read_only, read_parse));
    }
    let stream_cpu = streamed
        .iter()
        .find(|s| s.0 == collect::INTERRUPTS_CHUNK_BYTES)
        .and_then(|s| s.2);
    // The IRQ directories step as the collector runs it (after a first reading has read them
    // all): the next IRQ_FILES_PER_READING directories, through its reused buffer.
    let mut collector = Collector::new(&root, "bench");
    collector.read_ref(5).unwrap();
    let irq_cpu = cpu_ms(20, || collector.refresh_irq_files(false));
    // The collector's reading (read, parse, IRQ directories, the snapshot updated in place),
    // and the pure build that allocates a new snapshot, for comparison.
    let collect_cpu = cpu_ms(20, || {
        black_box(collector.read_ref(5).unwrap());
    });
    let proc_files = collect::read_proc(&root).unwrap();
    let topo = collector.read_ref(5).unwrap().topology.clone();
    let alloc_build_cpu = cpu_ms(10, || {
        black_box(collect::build_snapshot_from(&parsed, &proc_files, &topo, "bench", 3).unwrap());
    });
    // A second reading with counters moved (every non-zero counter of this synthetic host
    // moves, a worst case for deltas), built from the same IRQ files.
    let base = collector.read_ref(1).unwrap().clone();
    let second = collect::build_snapshot(
        &collect::ProcFiles {
            interrupts: format_interrupts(&synthetic(1)),
            ..collect::read_proc(&root).unwrap()
        },
        &base.topology,
        "bench",
        2,
    )
    .unwrap();
    let (mut json, mut body) = (Vec::new(), Vec::new());
    let full_json_cpu = cpu_ms(20, || {
        json.clear();
        serde_json::to_writer(&mut json, &second).unwrap();
    });
    let full_json_len = json.len();
    let full_gzip_cpu = cpu_ms(20, || gzip_into(black_box(&json), PUSH_GZIP_LEVEL, &mut body).unwrap());
    let full_gzip_len = body.len();
    let delta_cpu = cpu_ms(20, || {
        black_box(Delta::between(&base, &second).unwrap());
    });
    let delta = Delta::between(&base, &second).unwrap();
    let delta_json_cpu = cpu_ms(20, || {
        json.clear();
        serde_json::to_writer(&mut json, &delta).unwrap();
    });
    let delta_json_len = json.len();
    let delta_gzip_cpu = cpu_ms(20, || gzip_into(black_box(&json), PUSH_GZIP_LEVEL, &mut body).unwrap());
    let delta_gzip_len = body.len();
    // What keeping the acknowledged reading with `clone_from` would cost; the agent swaps it
    // with the collector's instead (`Collector::acknowledge`), which copies nothing.
    let mut acked = base.clone();
    let keep_cpu = cpu_ms(20, || {
        acked.clone_from(black_box(&second));
        acked.clone_from(black_box(&base));
    })
    .map(|ms| ms / 2.0);
    // Whole readings: the collector's reading, then a full gzip body.
    let whole_full_cpu = cpu_ms(20, || {
        let snap = collector.read_ref(5).unwrap();
        encode_push_body(snap, &mut json, &mut body).unwrap();
    });
    let f = |v: Option<f64>| v.map_or("?".to_string(), |v| format!("{v:.1}"));
    eprintln!(
        "CPU ms: wc -l {}, awk '{{s+=$2}}' {}, awk sum of every column {}",
        f(wc),
        f(awk_sum2),
        f(awk_all)
    );
    eprintln!(
        "CPU ms: read /proc/interrupts whole as bytes {} (as a String {}), parse from memory {} (as &str {}), {} IRQ directories {}",
        f(read_cpu),
        f(read_str_cpu),
        f(parse_cpu),
        f(parse_str_cpu),
        collect::IRQ_FILES_PER_READING,
        f(irq_cpu)
    );
    for (chunk, read_only, read_parse) in &streamed {
        eprintln!(
            "CPU ms: chunks of {} KiB: read only {}, read and parse {} (parse as read, by difference: {})",
            chunk >> 10,
            f(*read_only),
            f(*read_parse),
            f(read_parse.zip(*read_only).map(|(a, b)| a - b))
        );
    }
    if let (Some(p), Some(a2), Some(aa)) = (parse_cpu, awk_sum2, awk_all) {
        eprintln!(
            "parse from memory: {:.3} x awk '{{s+=$2}}', {:.3} x awk sum of every column",
            p / a2,
            p / aa
        );
    }
    if let (Some(s), Some(a2)) = (stream_cpu, awk_sum2) {
        eprintln!(
            "read and parse in chunks (the collector's step): {:.3} x awk '{{s+=$2}}'",
            s / a2
        );
    }
    let build_in_place = match (collect_cpu, stream_cpu, irq_cpu) {
        (Some(c), Some(s), Some(i)) => Some(c - s - i),
        _ => None,
    };
    eprintln!(
        "CPU ms: collector reading {} (build in place, by difference: {}; a new snapshot built: {}), keep the acknowledged reading: swapped (a clone_from would take {})",
        f(collect_cpu),
        f(build_in_place),
        f(alloc_build_cpu),
        f(keep_cpu)
    );
    eprintln!(
        "CPU ms: full body: JSON {} ({full_json_len} bytes), gzip {} ({full_gzip_len} bytes); delta: compute {}, JSON {} ({delta_json_len} bytes), gzip {} ({delta_gzip_len} bytes, {:.0} % of the full gzip body)",
        f(full_json_cpu),
        f(full_gzip_cpu),
        f(delta_cpu),
        f(delta_json_cpu),
        f(delta_gzip_cpu),
        100.0 * delta_gzip_len as f64 / full_gzip_len as f64
    );
    let whole_delta = match (collect_cpu, delta_cpu, delta_json_cpu, delta_gzip_cpu) {
        (Some(c), Some(d), Some(j), Some(z)) => Some(c + d + j + z),
        _ => None,
    };
    eprintln!(
        "CPU ms: whole reading with a full body (measured) {}; with a delta body (sum of the steps above) {}",
        f(whole_full_cpu),
        f(whole_delta)
    );
    // The whole process: the release agent pushing to the release server, 30 steady readings,
    // with the stand-in on the file system of the in-thread figures above, then on a tmpfs.
    const AGENT_READINGS: u64 = 30;
    let target = root.parent().expect("target/");
    for (fs, under) in [
        ("the build's file system", target),
        ("a tmpfs, /dev/shm", Path::new("/dev/shm")),
    ] {
        let p = agent_process_cpu(AGENT_READINGS, under);
        eprintln!(
            "CPU ms: the agent process per steady reading (irqscope-agent push, {AGENT_READINGS} readings, counters moving; stand-in on {fs}): {} (user {}, system {}); a bare read of the same file at the same interval: {}; the agent beyond it: {}",
            f(p.map(|p| p.user + p.system)),
            f(p.map(|p| p.user)),
            f(p.map(|p| p.system)),
            f(p.and_then(|p| p.bare_read)),
            f(p.and_then(|p| Some(p.user + p.system - p.bare_read?))),
        );
    }

    let mut g = c.benchmark_group("live");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(text.len() as u64));
    assert_eq!(parsed.rows.len(), N_IRQS as usize + 2);
    g.bench_function("parse_interrupts_1024cpu_4096irq", |b| {
        b.iter(|| parse_interrupts_bytes_into(black_box(bytes), &mut parsed).unwrap())
    });
    g.bench_function("delta_encode_1024cpu_4096irq", |b| {
        b.iter(|| {
            let d = Delta::between(&base, &second).unwrap();
            encode_delta_body(&d, &mut json, &mut body).unwrap();
            body.len()
        })
    });
    g.bench_function("whole_reading_1024cpu_4096irq", |b| {
        b.iter(|| {
            let snap = collector.read_ref(4).unwrap();
            encode_push_body(snap, &mut json, &mut body).unwrap();
            body.len()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
