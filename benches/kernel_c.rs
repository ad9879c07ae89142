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

/// One catalogue sweep on fresh built C; the harness processes ended and waited for after it.
fn c_sweep(built: &Built) -> sweep::Sweep {
    let c = Arc::new(KernelC::new(built.clone(), Limits::default()));
    // A placement lives for the process (the command line registers one per name): a small
    // handle per sweep here, the processes it started ended below.
    let placement = Placement::External(ExternalRef::register(External(c.clone())));
    let s = sweep::run(&config(placement)).expect("the built C answers every call");
    c.stop();
    s
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
