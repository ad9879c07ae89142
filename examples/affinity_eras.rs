//! Writes the golden-style vectors of `tests/data/affinity-eras/`: each case's machine and
//! request fed to the kernel's own `irq_create_affinity_masks()` of both eras, built from
//! Debian's sources by `tests/data/affinity-eras/gen.sh` (which runs this).
//!
//! ```text
//! affinity_eras HARNESS_NUMGRPS HARNESS_NUMMASKS OUTDIR
//! ```
//!
//! HARNESS_NUMGRPS is the harness built from linux-source-6.12 (the `numgrps` era, pre-cluster
//! grouping), HARNESS_NUMMASKS the one built from linux-source-7.2 (`nummasks`, cluster-aware).
//! The machine each harness gets is the one irqscope's models see: every possible CPU's node,
//! SMT siblings and cluster as the `Topology` accessors give them. Only machines whose CPUs are
//! all online are used. Bad input: exit 2 with one line.

use irqscope::topology::{CpuSet, Topology};
use serde_json::{json, Value};
use std::io::Write as _;
use std::process::{Command, ExitCode, Stdio};

/// One case: a preset and a request (vectors, pre, post, sets).
struct Case {
    name: &'static str,
    preset: &'static str,
    nvecs: u32,
    pre: u32,
    post: u32,
    sets: Option<&'static [u32]>,
}

const fn case(
    name: &'static str,
    preset: &'static str,
    nvecs: u32,
    pre: u32,
    post: u32,
    sets: Option<&'static [u32]>,
) -> Case {
    Case {
        name,
        preset,
        nvecs,
        pre,
        post,
        sets,
    }
}

/// More vectors than CPUs, exactly as many, sets on either side of the CPU count, several
/// nodes, clusters, the few-groups walk.
const CASES: &[Case] = &[
    case("vm8-q16-pre1", "vm-8vcpu-smt2", 17, 1, 0, None),
    case("vm8-q8-pre1", "vm-8vcpu-smt2", 9, 1, 0, None),
    case("vm8-sets6+4-pre1-post1", "vm-8vcpu-smt2", 12, 1, 1, Some(&[6, 4])),
    case("vm8-sets12+8-pre1", "vm-8vcpu-smt2", 21, 1, 0, Some(&[12, 8])),
    case("vm8-sets8+12-pre1", "vm-8vcpu-smt2", 21, 1, 0, Some(&[8, 12])),
    case("vm4-sets2x4-pre1", "vm-4vcpu-smt2-l2", 9, 1, 0, Some(&[2, 2, 2, 2])),
    case("vm2-q5-post2", "vm-2vcpu-smt2", 7, 0, 2, None),
    case("xeon72-q80-pre1", "xeon-2s-18c-smt2", 81, 1, 0, None),
    case("xeon72-q3-pre1", "xeon-2s-18c-smt2", 4, 1, 0, None),
    case("xeon72-sets64+16", "xeon-2s-18c-smt2", 80, 0, 0, Some(&[64, 16])),
    case("ultra265k-q24-pre1", "intel-core-ultra-7-265k", 25, 1, 0, None),
    case("ultra265k-q20-pre1", "intel-core-ultra-7-265k", 21, 1, 0, None),
    case("l96as-q100-pre1", "azure-l96as-v4", 101, 1, 0, None),
    case("d16plds-q6-pre1", "azure-d16plds-v6", 7, 1, 0, None),
];

/// The two eras and the harness that runs each, with the grouping its tree has.
const ERAS: [(&str, &str, &str, &str); 2] = [
    ("numgrps", "linux-source-6.12", "pre-cluster", "heap-v6.11"),
    ("nummasks", "linux-source-7.2", "cluster", "heap-v6.11"),
];

fn main() -> ExitCode {
    match run(&std::env::args().skip(1).collect::<Vec<_>>()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("affinity_eras: {msg}");
            ExitCode::from(2)
        }
    }
}

fn list(s: &CpuSet) -> String {
    let l = s.to_cpulist();
    if l.is_empty() {
        "-".into()
    } else {
        l
    }
}

/// The harness's input: the machine as the models see it, then the request.
fn harness_input(t: &Topology, c: &Case) -> String {
    let mut s = format!(
        "nr_cpu_ids {}\nnr_node_ids {}\npossible {}\npresent {}\n",
        t.nr_cpu_ids(),
        t.nr_node_ids(),
        list(t.possible()),
        list(t.present())
    );
    for cpu in t.possible().iter() {
        s.push_str(&format!(
            "cpu {cpu} {} {} {}\n",
            t.cpu_to_node(cpu),
            list(t.smt(cpu)),
            list(t.cluster(cpu))
        ));
    }
    let sets = c.sets.unwrap_or(&[]);
    s.push_str(&format!("request {} {} {} {}", c.nvecs, c.pre, c.post, sets.len()));
    for n in sets {
        s.push_str(&format!(" {n}"));
    }
    s.push('\n');
    s
}

fn run_harness(path: &str, input: &str) -> Result<Value, String> {
    let mut child = Command::new(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{path}: {e}"))?;
    child
        .stdin
        .take()
        .ok_or("no stdin")?
        .write_all(input.as_bytes())
        .map_err(|e| format!("{path}: {e}"))?;
    let out = child.wait_with_output().map_err(|e| format!("{path}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{path} failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("{path}: not JSON: {e}"))
}

fn run(args: &[String]) -> Result<(), String> {
    let [numgrps, nummasks, outdir] = args else {
        return Err("usage: affinity_eras HARNESS_NUMGRPS HARNESS_NUMMASKS OUTDIR".into());
    };
    for c in CASES {
        let t = irqscope::catalogue::get(c.preset).ok_or_else(|| format!("no preset {}", c.preset))?;
        if t.online() != t.possible() {
            return Err(format!("{}: every CPU must be online", c.preset));
        }
        let input = harness_input(&t, c);
        for ((era, tree, variant, sort), harness) in ERAS.iter().zip([numgrps, nummasks]) {
            let expected = run_harness(harness, &input)?;
            let doc = json!({
                "name": format!("{}-{era}", c.name),
                "description": format!(
                    "irq_create_affinity_masks({}, pre {}, post {}, sets {:?}) on {} by the kernel C of {tree}",
                    c.nvecs, c.pre, c.post, c.sets, c.preset
                ),
                "input": {
                    "topology": c.preset,
                    "nvecs": c.nvecs,
                    "pre_vectors": c.pre,
                    "post_vectors": c.post,
                    "sets": c.sets,
                    "era": era,
                    "variant": variant,
                    "sort": sort,
                    "tree": tree,
                },
                "expected": expected,
            });
            let path = format!("{outdir}/{}-{era}.json", c.name);
            let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())? + "\n";
            std::fs::write(&path, text).map_err(|e| format!("{path}: {e}"))?;
        }
    }
    Ok(())
}
