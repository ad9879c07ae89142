//! One `group_cpus_evenly` call of irqscope's model, dumped or timed, in the format of the kernel C
//! harness (`gce-bench -d`): `nummasks N`, then one `INDEX CPULIST` line per group.
//!
//! ```text
//! gce_dump TOPOLOGY.toml VARIANT NUMGRPS [ITERS [DUMPFILE]]
//! gce_dump TOPOLOGY.toml --check-shape NCPUS NODES SMT CLUSTER_CPUS
//! ```
//!
//! Without ITERS the masks go to standard output. With ITERS the call is also timed ITERS times
//! after 5 untimed calls and one line `rust VARIANT NUMGRPS iters=… median_us=… min_us=…
//! max_us=…` is printed, the masks going to DUMPFILE when given. `--check-shape` exits 1 unless
//! the topology is the harness's regular shape (node k = the k-th block of NCPUS/NODES CPUs,
//! SMT siblings adjacent, clusters aligned blocks of CLUSTER_CPUS, 0 = none), so a comparison
//! never runs on two different machines. Bad input: exit 2 with one line.
//!
//! This is the `DUMPER` of the kernel-C comparison (`check-equal.sh`) and the Rust side of
//! `scripts/bench-vs-kernel-c`.

use irqscope::kernel::{group_cpus_evenly, SortGen, Variant};
use irqscope::topology::{CpuSet, Topology, TopologySpec};
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Instant;

/// Largest ITERS accepted (a bound on the run time of one invocation).
const ITERS_MAX: u32 = 1_000_000;
/// Largest NUMGRPS accepted (the model's own bound on a device's vectors is far below).
const NUMGRPS_MAX: u32 = 1 << 20;
/// Largest topology file read.
const TOPOLOGY_BYTES_MAX: u64 = 4 << 20;

fn main() -> ExitCode {
    match run(&std::env::args().skip(1).collect::<Vec<_>>()) {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("gce_dump: {msg}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String]) -> Result<ExitCode, String> {
    const USAGE: &str = "usage: gce_dump TOPOLOGY.toml VARIANT NUMGRPS [ITERS [DUMPFILE]] \
                         | gce_dump TOPOLOGY.toml --check-shape NCPUS NODES SMT CLUSTER_CPUS";
    let (Some(path), Some(second)) = (args.first(), args.get(1)) else {
        return Err(USAGE.into());
    };
    let topo = load(path)?;
    if second == "--check-shape" {
        let nums: Vec<u32> = args[2..]
            .iter()
            .map(|a| number(a, u32::MAX))
            .collect::<Result<_, _>>()?;
        let [ncpus, nodes, smt, cluster] = nums[..] else {
            return Err(USAGE.into());
        };
        return Ok(match check_shape(&topo, ncpus, nodes, smt, cluster) {
            Ok(()) => ExitCode::SUCCESS,
            Err(msg) => {
                eprintln!("gce_dump: {path}: {msg}");
                ExitCode::from(1)
            }
        });
    }
    if args.len() > 5 {
        return Err(USAGE.into());
    }
    let variant = Variant::from_name(second).ok_or_else(|| format!("unknown variant {second:?}"))?;
    let numgrps = number(args.get(2).ok_or(USAGE)?, NUMGRPS_MAX)?;
    let iters = args.get(3).map(|a| number(a, ITERS_MAX)).transpose()?;
    let dump = args.get(4);

    let call = || {
        let (mut counter, mut warnings) = (0u32, Vec::new());
        group_cpus_evenly(&topo, numgrps, variant, SortGen::HeapV6_11, &mut counter, &mut warnings)
    };
    let grouping = call().ok_or("numgrps 0: the kernel returns NULL")?;
    let mut text = format!("nummasks {}\n", grouping.nummasks());
    for (i, mask) in grouping.masks().iter().enumerate() {
        let _ = writeln!(text, "{i} {}", CpuSet::to_cpulist(mask));
    }
    let Some(iters) = iters.filter(|&n| n > 0) else {
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    };
    if let Some(file) = dump {
        std::fs::write(file, &text).map_err(|e| format!("{file}: {e}"))?;
    }
    for _ in 0..5 {
        drop(std::hint::black_box(call()));
    }
    let mut t: Vec<f64> = (0..iters)
        .map(|_| {
            let t0 = Instant::now();
            drop(std::hint::black_box(call()));
            t0.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    t.sort_by(f64::total_cmp);
    println!(
        "rust {} {numgrps} iters={iters} median_us={:.1} min_us={:.1} max_us={:.1} nummasks={}",
        variant.name(),
        t[t.len() / 2],
        t[0],
        t[t.len() - 1],
        grouping.nummasks()
    );
    Ok(ExitCode::SUCCESS)
}

fn number(text: &str, max: u32) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if n <= max => Ok(n),
        _ => Err(format!("{text:?}: expected a number 0..={max}")),
    }
}

fn load(path: &str) -> Result<Topology, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let mut text = String::new();
    file.take(TOPOLOGY_BYTES_MAX + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("{path}: {e}"))?;
    if text.len() as u64 > TOPOLOGY_BYTES_MAX {
        return Err(format!("{path}: larger than {TOPOLOGY_BYTES_MAX} bytes"));
    }
    let spec: TopologySpec = toml::from_str(&text).map_err(|e| format!("{path}: {}", e.message()))?;
    Topology::new(&spec).map_err(|e| format!("{path}: {e}"))
}

/// The regular shape of the C harness, CPU by CPU.
fn check_shape(topo: &Topology, ncpus: u32, nodes: u32, smt: u32, cluster: u32) -> Result<(), String> {
    if topo.nr_cpu_ids() != ncpus || topo.nr_node_ids() != nodes || nodes == 0 || smt == 0 {
        return Err(format!(
            "{} CPUs in {} nodes, expected {ncpus} in {nodes}",
            topo.nr_cpu_ids(),
            topo.nr_node_ids()
        ));
    }
    let block = |cpu: u32, size: u32| CpuSet::from_cpus(cpu - cpu % size..cpu - cpu % size + size);
    for cpu in 0..ncpus {
        if !topo.possible().contains(cpu) || !topo.present().contains(cpu) {
            return Err(format!("CPU {cpu} is not possible and present"));
        }
        if topo.cpu_to_node(cpu) != cpu / (ncpus / nodes) {
            return Err(format!("CPU {cpu} is in node {}", topo.cpu_to_node(cpu)));
        }
        if *topo.drawn_smt(cpu) != block(cpu, smt) {
            return Err(format!("CPU {cpu} has SMT siblings {}", topo.drawn_smt(cpu)));
        }
        let want = if cluster == 0 {
            CpuSet::default()
        } else {
            block(cpu, cluster)
        };
        if *topo.drawn_cluster(cpu) != want {
            return Err(format!("CPU {cpu} has cluster {}", topo.drawn_cluster(cpu)));
        }
    }
    Ok(())
}
