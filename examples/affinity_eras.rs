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

/// One case: a name, a preset and a request (vectors, pre, post, sets).
type Case = (&'static str, &'static str, u32, u32, u32, Option<&'static [u32]>);

/// More vectors than CPUs, exactly as many, sets on either side of the CPU count, several
/// nodes, clusters, the few-groups walk.
const CASES: &[Case] = &[
    ("vm8-q16-pre1", "vm-8vcpu-smt2", 17, 1, 0, None),
    ("vm8-q8-pre1", "vm-8vcpu-smt2", 9, 1, 0, None),
    ("vm8-sets6+4-pre1-post1", "vm-8vcpu-smt2", 12, 1, 1, Some(&[6, 4])),
    ("vm8-sets12+8-pre1", "vm-8vcpu-smt2", 21, 1, 0, Some(&[12, 8])),
    ("vm8-sets8+12-pre1", "vm-8vcpu-smt2", 21, 1, 0, Some(&[8, 12])),
    ("vm4-sets2x4-pre1", "vm-4vcpu-smt2-l2", 9, 1, 0, Some(&[2, 2, 2, 2])),
    ("vm2-q5-post2", "vm-2vcpu-smt2", 7, 0, 2, None),
    ("xeon72-q80-pre1", "xeon-2s-18c-smt2", 81, 1, 0, None),
    ("xeon72-q3-pre1", "xeon-2s-18c-smt2", 4, 1, 0, None),
    ("xeon72-sets64+16", "xeon-2s-18c-smt2", 80, 0, 0, Some(&[64, 16])),
    ("ultra265k-q24-pre1", "intel-core-ultra-7-265k", 25, 1, 0, None),
    ("ultra265k-q20-pre1", "intel-core-ultra-7-265k", 21, 1, 0, None),
    ("l96as-q100-pre1", "azure-l96as-v4", 101, 1, 0, None),
    ("d16plds-q6-pre1", "azure-d16plds-v6", 7, 1, 0, None),
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
fn harness_input(t: &Topology, &(_, _, nvecs, pre, post, sets): &Case) -> String {
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
    let sets = sets.unwrap_or(&[]);
    s.push_str(&format!("request {nvecs} {pre} {post} {}", sets.len()));
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
    for c @ &(name, preset, nvecs, pre, post, sets) in CASES {
        let t = irqscope::catalogue::get(preset).ok_or_else(|| format!("no preset {preset}"))?;
        if t.online() != t.possible() {
            return Err(format!("{preset}: every CPU must be online"));
        }
        let input = harness_input(&t, c);
        for ((era, tree, variant, sort), harness) in ERAS.iter().zip([numgrps, nummasks]) {
            let expected = run_harness(harness, &input)?;
            let doc = json!({
                "name": format!("{name}-{era}"),
                "description": format!(
                    "irq_create_affinity_masks({nvecs}, pre {pre}, post {post}, sets {sets:?}) on {preset} by the kernel C of {tree}"
                ),
                "input": {
                    "topology": preset,
                    "nvecs": nvecs,
                    "pre_vectors": pre,
                    "post_vectors": post,
                    "sets": sets,
                    "era": era,
                    "variant": variant,
                    "sort": sort,
                    "tree": tree,
                },
                "expected": expected,
            });
            let path = format!("{outdir}/{name}-{era}.json");
            let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())? + "\n";
            std::fs::write(&path, text).map_err(|e| format!("{path}: {e}"))?;
        }
    }
    Ok(())
}
