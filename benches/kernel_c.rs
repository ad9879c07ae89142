//! `kernel-c`: building the kernel's own `lib/group_cpus.c` and running it as a variant, against
//! the Rust model on the same work. The figures of the README's kernel-C lines.
//!
//! The C comes from an unpacked Debian tree: `IRQSCOPE_KERNEL_C_72` (the cluster-aware 7.x
//! file, compared with the `cluster` model) or else `IRQSCOPE_KERNEL_C_612` (compared with
//! `pre-cluster`), as `.ci/run` sets them. Without either the bench says so and measures
//! nothing.
//!
//! * `kernel_c/build_cold`: one `kernel-c build` of the tree with an empty cache (the compile
//!   included), wall time.
//! * `kernel_c/sweep_catalogue/{MODEL,c:NAME}`: `irqscope sweep` of the whole catalogue (the
//!   named mixes, counters 0..8, one thread) on the model and on the built C; each C sweep
//!   starts with a fresh build handle (no answers remembered, harness started), as the command
//!   line does. What the runner derives from the catalogue's machines (each machine's key and
//!   the text the harness reads, about 2 ms for the whole catalogue, most of it
//!   `synthetic-8192`) is made once per process, like the catalogue itself, so only the
//!   first C sweep of the run pays it.
//!
//! * `kernel_c/sweep_counters/{rotation,c:benchrot}/0..N`: the catalogue sweep over counters
//!   0..8, 0..16, 0..24 and 0..32 on C that reads a rotation counter (the tree's file with a
//!   file-static `atomic_t` declared after its includes, a patch made here at run time, so
//!   that every counter is a question of its own) and on the `rotation` model, which also runs
//!   every counter; one harness throughout each C sweep. After them the bench prints the CPU
//!   per row of each range, the C's beside the model's, and the cost of the rows each range
//!   adds: the C's cost per row should not grow with the range.
//!
//! After criterion's figures the bench prints the CPU time (this process and its children:
//! the harness processes, the compiler) of the two sweeps run alternately, side by side in the
//! same run, with the load average, since the machine this runs on is shared.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use irqscope::analysis::sweep::{self, ExternalRef, Placement, SweepConfig};
use irqscope::kernel::{External, Variant};
use irqscope::kernel_c::{Built, KernelC, Limits};
use irqscope::kernel_c_tools::{self as tools, BuildOptions};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The tree and the model its version selects.
fn tree() -> Option<(PathBuf, Variant)> {
    for (var, model) in [
        ("IRQSCOPE_KERNEL_C_72", Variant::Cluster),
        ("IRQSCOPE_KERNEL_C_612", Variant::PreCluster),
    ] {
        if let Some(p) = std::env::var_os(var).map(PathBuf::from) {
            if p.join("lib/group_cpus.c").is_file() {
                return Some((p, model));
            }
        }
    }
    eprintln!("kernel_c bench: set IRQSCOPE_KERNEL_C_72 or IRQSCOPE_KERNEL_C_612 to a Debian tree; nothing measured");
    None
}

fn options(tree: &std::path::Path, cache: PathBuf) -> BuildOptions {
    BuildOptions {
        source: tree.display().to_string(),
        name: Some("bench".into()),
        patches: Vec::new(),
        apt_options: Vec::new(),
        sort: None,
        cache,
        strict: false,
    }
}

/// A patch to the tree's `lib/group_cpus.c` declaring a file-static rotation counter after its
/// last `#include` (the C never reads it: it answers as before, once per counter), written
/// with `diff -u` into `dir`.
fn counter_patch(tree: &std::path::Path, dir: &std::path::Path) -> PathBuf {
    let old = std::fs::read_to_string(tree.join("lib/group_cpus.c")).unwrap();
    let at = old
        .rfind("\n#include")
        .and_then(|i| old[i + 1..].find('\n').map(|j| i + 2 + j))
        .unwrap();
    let new = format!("{}static atomic_t irqscope_bench_rotation;\n{}", &old[..at], &old[at..]);
    for (side, text) in [("a", &old), ("b", &new)] {
        let file = dir.join(side).join("lib/group_cpus.c");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    let out = std::process::Command::new("diff")
        .current_dir(dir)
        .args(["-u", "a/lib/group_cpus.c", "b/lib/group_cpus.c"])
        .output()
        .unwrap();
    let patch = dir.join("counter.diff");
    std::fs::write(&patch, out.stdout).unwrap();
    patch
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("irqscope-bench-kc-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn config(placement: Placement) -> SweepConfig {
    SweepConfig {
        placements: vec![placement],
        threads: 1,
        ..SweepConfig::catalogue_default()
    }
}

/// [`config`] over counters `0..to`.
fn config_to(placement: Placement, to: u32) -> SweepConfig {
    SweepConfig {
        counters: (0..to).collect(),
        ..config(placement)
    }
}

/// One catalogue sweep on fresh built C; the harness processes ended and waited for after it.
fn c_sweep(built: &Built) -> sweep::Sweep {
    c_sweep_to(built, 8)
}

/// [`c_sweep`] over counters `0..to`.
fn c_sweep_to(built: &Built, to: u32) -> sweep::Sweep {
    let c = Arc::new(KernelC::new(built.clone(), Limits::default()));
    // A placement lives for the process (the command line registers one per name): a small
    // handle per sweep here, the processes it started ended below.
    let placement = Placement::External(ExternalRef::register(External(c.clone())));
    let s = sweep::run(&config_to(placement, to)).expect("the built C answers every call");
    c.stop();
    s
}

/// Counter ranges `0..to` of the per-row figures.
const COUNTER_RANGES: [u32; 4] = [8, 16, 24, 32];

/// The catalogue sweep by counter range, on the model and on the built C: criterion's figures,
/// then the CPU per row of each (this process and its harness processes) over alternate
/// rounds, and what the rows each range adds cost.
fn by_counters(c: &mut Criterion, built: &Built) {
    let model = Variant::Rotation;
    let mut group = c.benchmark_group("kernel_c");
    group.sample_size(10).measurement_time(Duration::from_secs(10));
    for to in COUNTER_RANGES {
        group.bench_function(format!("sweep_counters/{}/0..{to}", model.name()), |b| {
            b.iter(|| sweep::run(&config_to(Placement::Kernel(model), to)).unwrap())
        });
        group.bench_function(format!("sweep_counters/c:benchrot/0..{to}"), |b| {
            b.iter(|| c_sweep_to(built, to))
        });
    }
    group.finish();
    const ROUNDS: u32 = 10;
    let before = loadavg();
    println!("kernel_c: catalogue sweep by counter range, CPU over {ROUNDS} alternate rounds (one harness a sweep):");
    println!(
        "  counters   rows   {:>8}  c:benchrot  c/model   added rows: model  c:benchrot",
        model.name()
    );
    let mut last: Option<(usize, f64, f64)> = None;
    for to in COUNTER_RANGES {
        let (mut model_s, mut c_s, mut rows) = (0.0, 0.0, 0);
        for _ in 0..ROUNDS {
            let t = cpu_s();
            rows = std::hint::black_box(sweep::run(&config_to(Placement::Kernel(model), to)).unwrap())
                .rows
                .len();
            let u = cpu_s();
            std::hint::black_box(c_sweep_to(built, to));
            model_s += u - t;
            c_s += cpu_s() - u;
        }
        let (m, k) = (model_s / f64::from(ROUNDS), c_s / f64::from(ROUNDS));
        let per_row = |s: f64, n: usize| s * 1e6 / n.max(1) as f64;
        let added = match last {
            Some((r0, m0, k0)) if rows > r0 => format!(
                "{:>10.1} µs  {:>7.1} µs",
                per_row(m - m0, rows - r0),
                per_row(k - k0, rows - r0)
            ),
            _ => String::new(),
        };
        println!(
            "  0..{to:<6} {rows:>5}  {:>6.1} µs  {:>7.1} µs  {:>7.2}   {added}",
            per_row(m, rows),
            per_row(k, rows),
            k / m.max(1e-9)
        );
        last = Some((rows, m, k));
    }
    println!("  (CPU per row; load average before {before}, after {})", loadavg());
}

/// CPU seconds of this process and its waited-for children (`/proc/self/stat` utime, stime,
/// cutime, cstime).
fn cpu_s() -> f64 {
    let (own, children) = cpu_split_s();
    own + children
}

/// CPU seconds of this process, and of its waited-for children (the harness processes, the
/// compiler).
fn cpu_split_s() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<f64> = after.split(' ').map(|x| x.parse().unwrap_or(0.0)).collect();
    // Fields 14..=17 of the file; `after` starts at field 3.
    ((f[11] + f[12]) / 100.0, (f[13] + f[14]) / 100.0)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split(' ')
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn bench(c: &mut Criterion) {
    let Some((tree, model)) = tree() else { return };
    let cache = scratch("cache");
    let built = tools::build(&options(&tree, cache.clone())).expect("the tree builds");
    let rot = tools::build(&BuildOptions {
        name: Some("benchrot".into()),
        patches: vec![counter_patch(&tree, &cache)],
        ..options(&tree, cache.clone())
    })
    .expect("the tree with a counter builds");
    by_counters(c, &rot);
    if std::env::var_os("IRQSCOPE_BENCH_COUNTERS_ONLY").is_some() {
        let _ = std::fs::remove_dir_all(&cache);
        return;
    }
    let mut group = c.benchmark_group("kernel_c");
    group.sample_size(10).measurement_time(Duration::from_secs(30));
    group.bench_function("build_cold", |b| {
        b.iter_batched(
            || scratch("cold"),
            |dir| {
                let out = tools::build(&options(&tree, dir.clone())).expect("the tree builds");
                let _ = std::fs::remove_dir_all(&dir);
                out
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function(format!("sweep_catalogue/{}", model.name()), |b| {
        b.iter(|| sweep::run(&config(Placement::Kernel(model))).unwrap())
    });
    group.bench_function("sweep_catalogue/c:bench", |b| b.iter(|| c_sweep(&built)));
    group.finish();

    // Side by side: the same rows from both, then CPU time over alternate rounds.
    let m = sweep::run(&config(Placement::Kernel(model))).unwrap();
    let k = c_sweep(&built);
    assert_eq!(m.rows.len(), k.rows.len());
    for (a, b) in m.rows.iter().zip(&k.rows) {
        // The C reports the WARNs it hits; the model also counts conditions 7.x reports as
        // `nummasks` (`KernelWarn::GroupsUnfilled`), so only the warning counts may differ.
        let (mut fa, mut fb) = (a.figures.clone(), b.figures.clone());
        (fa.kernel_warnings, fb.kernel_warnings) = (0, 0);
        assert_eq!(fa, fb, "{} {} counter {}", a.topology, a.mix, a.counter);
    }
    const ROUNDS: u32 = 40;
    let before = loadavg();
    let (mut model_s, mut c_s, mut harness_s) = (0.0, 0.0, 0.0);
    for _ in 0..ROUNDS {
        let t = cpu_s();
        std::hint::black_box(sweep::run(&config(Placement::Kernel(model))).unwrap());
        let u = cpu_split_s();
        std::hint::black_box(c_sweep(&built));
        let v = cpu_split_s();
        model_s += u.0 + u.1 - t;
        c_s += v.0 + v.1 - u.0 - u.1;
        harness_s += v.1 - u.1;
    }
    let t = cpu_s();
    let builds = 3;
    for _ in 0..builds {
        let dir = scratch("cpu");
        tools::build(&options(&tree, dir.clone())).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
    let build_s = (cpu_s() - t) / f64::from(builds);
    println!(
        "kernel_c: catalogue sweep ({} rows), CPU per sweep over {ROUNDS} alternate rounds:",
        m.rows.len()
    );
    println!(
        "  {}: {:.1} ms; c:bench: {:.1} ms (harness processes {:.1} ms); c / model {:.2}",
        model.name(),
        model_s * 1e3 / f64::from(ROUNDS),
        c_s * 1e3 / f64::from(ROUNDS),
        harness_s * 1e3 / f64::from(ROUNDS),
        c_s / model_s.max(1e-9)
    );
    println!("  cold build: {build_s:.2} s of CPU (cc included)");
    println!("  load average before {before}, after {}", loadavg());
    let _ = std::fs::remove_dir_all(&cache);
}

criterion_group!(benches, bench);
criterion_main!(benches);
