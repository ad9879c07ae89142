//! `kernel-c verify`: a build against a Rust model on random machines; the first disagreement
//! shrunk to a small machine and written as a golden-vector case.
//!
//! Machines are drawn from a [`Shape`] (nodes of SMT sets grouped in clusters, sparse CPU
//! ids, absent CPUs, node ids given in reverse, memory-only nodes), so shrinking works on the
//! shape: drop a node, halve one, drop the holes, the absent CPUs, the clusters, SMT, then
//! lower `numgrps` and the counter, keeping each step that still disagrees. Each case runs on
//! the C and on the model (the functions of `kernel`, called directly), and the two answers
//! are compared field by field ([`Fields`]); a disagreement is written as a golden case
//! (`../shared/golden/README.md`) with the C's answer as `expected`, so `irqscope
//! check-golden FILE` shows the model's side of it again.

use crate::kernel::{ExternalError, Grouping, SortGen, Variant};
use crate::kernel_c::runner::{Answer, KernelC};
use crate::topology::{CpuSet, Topology, TopologySpec};
use serde_json::{json, Value};

/// Most cases one run may ask for.
pub const CASES_MAX: u32 = 1_000_000;

/// A small deterministic generator (splitmix64), so a seed names a run.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + (self.next() % u64::from(hi - lo + 1)) as u32
    }
    fn chance(&mut self, percent: u32) -> bool {
        self.range(1, 100) <= percent
    }
}

/// One node of a [`Shape`]: `cores` cores of `smt` threads, `cluster` cores to a cluster
/// (0: no cluster masks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeShape {
    pub cores: u32,
    pub smt: u32,
    pub cluster: u32,
}

/// A machine as verify draws and shrinks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    pub nodes: Vec<NodeShape>,
    /// Unused CPU ids after each node (sparse ids).
    pub hole: u32,
    /// Positions (in possible-CPU order) of CPUs that are not present; CPU 0 stays present.
    pub absent: Vec<u32>,
    /// Node ids handed out last block first.
    pub reversed: bool,
    /// Node ids without CPUs (memory-only), after the others.
    pub memoryless: u32,
    /// SMT siblings numbered apart (`0,N`) instead of adjacent (`0,1`).
    pub split_smt: bool,
}

/// One case: a machine, a group count and the counter before the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    pub shape: Shape,
    pub numgrps: u32,
    pub counter: u32,
}

impl Shape {
    pub fn cpus(&self) -> u32 {
        self.nodes.iter().map(|n| n.cores * n.smt).sum()
    }

    /// The machine as a topology file.
    pub fn spec(&self) -> TopologySpec {
        let mut next = 0u32;
        let mut blocks: Vec<Vec<u32>> = Vec::new();
        let (mut smt_sets, mut clusters) = (Vec::new(), Vec::new());
        for node in &self.nodes {
            let ncpu = node.cores * node.smt;
            let ids: Vec<u32> = (next..next + ncpu).collect();
            next += ncpu + self.hole;
            // Core k's threads: adjacent ids, or one id from each of `smt` runs of `cores`.
            let core = |k: u32| -> Vec<u32> {
                (0..node.smt)
                    .map(|t| {
                        if self.split_smt {
                            ids[(t * node.cores + k) as usize]
                        } else {
                            ids[(k * node.smt + t) as usize]
                        }
                    })
                    .collect()
            };
            for k in 0..node.cores {
                smt_sets.push(list(&core(k)));
            }
            if node.cluster > 0 {
                let mut k = 0;
                while k < node.cores {
                    let mut c: Vec<u32> = (k..(k + node.cluster).min(node.cores)).flat_map(core).collect();
                    c.sort_unstable();
                    clusters.push(list(&c));
                    k += node.cluster;
                }
            }
            blocks.push(ids);
        }
        if self.reversed {
            blocks.reverse();
        }
        let mut nodes: Vec<String> = blocks.iter().map(|b| list(b)).collect();
        nodes.extend((0..self.memoryless).map(|_| String::new()));
        let all: Vec<u32> = {
            let mut a: Vec<u32> = blocks.iter().flatten().copied().collect();
            a.sort_unstable();
            a
        };
        let present: Vec<u32> = all
            .iter()
            .enumerate()
            .filter(|(i, &c)| c == 0 || !self.absent.contains(&(*i as u32)))
            .map(|(_, &c)| c)
            .collect();
        let mut spec: TopologySpec = toml::from_str("name = \"verify\"").expect("minimal spec");
        spec.nodes = Some(nodes);
        spec.smt = smt_sets;
        spec.clusters = clusters;
        if present.len() < all.len() {
            spec.present = Some(list(&present));
        }
        spec
    }

    pub fn topology(&self) -> Result<Topology, String> {
        Topology::new(&self.spec()).map_err(|e| e.to_string())
    }
}

fn list(cpus: &[u32]) -> String {
    let mut s = CpuSet::new(cpus.iter().max().map_or(1, |m| m + 1));
    cpus.iter().for_each(|&c| s.insert(c));
    s.to_cpulist()
}

/// Draw one case.
pub fn draw(rng: &mut Rng) -> Case {
    let n_nodes = rng.range(1, 4);
    let nodes: Vec<NodeShape> = (0..n_nodes)
        .map(|_| {
            let smt = [1, 1, 2, 2, 4][rng.range(0, 4) as usize];
            let cores = rng.range(1, if smt == 4 { 4 } else { 10 });
            let cluster = if rng.chance(50) { rng.range(1, cores) } else { 0 };
            NodeShape { cores, smt, cluster }
        })
        .collect();
    let mut shape = Shape {
        nodes,
        hole: if rng.chance(20) { rng.range(1, 3) } else { 0 },
        absent: Vec::new(),
        reversed: rng.chance(20),
        memoryless: if rng.chance(15) { rng.range(1, 2) } else { 0 },
        split_smt: rng.chance(25),
    };
    if rng.chance(30) {
        let cpus = shape.cpus();
        let k = rng.range(1, cpus.max(2) - 1);
        let mut absent: Vec<u32> = (0..k).map(|_| rng.range(1, cpus.max(2) - 1)).collect();
        absent.sort_unstable();
        absent.dedup();
        shape.absent = absent;
    }
    let cpus = shape.cpus();
    let numgrps = match rng.range(0, 9) {
        0 => 1,
        1 => rng.range(1, n_nodes + 1),
        2 => cpus + rng.range(0, 3),
        _ => rng.range(1, cpus + 1),
    };
    let counter = match rng.range(0, 5) {
        0 => 0,
        1 => u32::MAX - rng.range(0, 40),
        2 => (1u32 << 31) - rng.range(0, 8),
        _ => rng.range(0, 64),
    };
    Case {
        shape,
        numgrps,
        counter,
    }
}

/// The topology in the golden format.
pub fn golden_topology(topo: &Topology) -> Value {
    let cpus: Vec<Value> = (0..topo.nr_cpu_ids())
        .map(|cpu| {
            if topo.possible().contains(cpu) {
                json!({"cpu": cpu, "node": topo.cpu_to_node(cpu), "smt": topo.smt(cpu).to_cpulist(),
                       "cluster": topo.cluster(cpu).to_cpulist(),
                       "present": topo.present().contains(cpu), "possible": true})
            } else {
                json!({"cpu": cpu, "node": 0, "smt": "", "cluster": "", "present": false, "possible": false})
            }
        })
        .collect();
    json!({"name": topo.name(), "nr_cpu_ids": topo.nr_cpu_ids(), "nr_node_ids": topo.nr_node_ids(), "cpus": cpus})
}

/// The C's answer in the golden `expected` shape of `variant`. The offset the C used is read
/// from its counter, not from a model's rule: a rotation revision takes its offset with
/// `atomic_fetch_inc()`, which returns the value before, so a call that advanced the counter
/// used `counter` and one that did not used 0 (the later revisions skip one-group calls; the
/// first posted one, `rotation-v1`, takes every call's value).
fn expected_of(answer: &Answer, variant: Variant, counter: u32) -> Value {
    let offset = variant
        .uses_counter()
        .then_some(if answer.counter_after != counter { counter } else { 0 });
    match &answer.masks {
        None => json!({"null": true, "nummasks": null, "masks": null, "spread_offset": null,
                       "spread_counter_after": answer.counter_after}),
        Some(m) => json!({
            "null": false,
            "nummasks": answer.nummasks,
            "masks": m.iter().map(CpuSet::to_cpulist).collect::<Vec<_>>(),
            "spread_offset": offset,
            "spread_counter_after": answer.counter_after,
        }),
    }
}

/// A case as a golden file, with the C's answer as `expected`.
pub fn golden_case(id: &str, topo: &Topology, case: &Case, variant: Variant, sort: SortGen, expected: Value) -> Value {
    json!({
        "format": "irqscope-golden/1",
        "model_version": "irqscope-kernel-c-1",
        "id": id,
        "kind": "group_cpus_evenly",
        "description": format!("kernel-c verify: the built C against {}", variant.name()),
        "notes": ["expected is the built C's answer; the model under test is the variant named"],
        "topology": golden_topology(topo),
        "variant": variant.name(),
        "numgrps": case.numgrps,
        "sort": sort.name(),
        "spread_counter": case.counter,
        "expected": expected,
    })
}

/// An answer as named fields in order (`null`, `nummasks`, `masks[3]`, ...), so that the C's
/// and the model's are compared field by field and the first difference is named.
pub type Fields = Vec<(String, String)>;

/// The fields of one `group_cpus_evenly()` answer: whether it is NULL, the count of
/// initialized masks, every mask, the offset a rotation used and the counter after.
fn grouping_fields(masks: Option<&[CpuSet]>, nummasks: u32, offset: Option<u32>, after: u32) -> Fields {
    let mut f = vec![("null".to_string(), masks.is_none().to_string())];
    if let Some(masks) = masks {
        f.push(("nummasks".into(), nummasks.to_string()));
        f.push(("masks".into(), format!("{} masks", masks.len())));
        f.extend(
            masks
                .iter()
                .enumerate()
                .map(|(i, m)| (format!("masks[{i}]"), m.to_cpulist())),
        );
        f.push(("spread_offset".into(), format!("{offset:?}")));
    }
    f.push(("spread_counter_after".into(), after.to_string()));
    f
}

/// The first field where two answers differ: its name and both values.
pub fn first_difference(c: &Fields, model: &Fields) -> Option<(String, String, String)> {
    let none = || "(none)".to_string();
    let n = c.len().max(model.len());
    (0..n).find_map(|i| {
        let (cf, mf) = (c.get(i), model.get(i));
        match (cf, mf) {
            (Some((cn, cv)), Some((mn, mv))) if cn == mn && cv == mv => None,
            (Some((cn, cv)), Some((_, mv))) => Some((cn.clone(), cv.clone(), mv.clone())),
            (Some((cn, cv)), None) => Some((cn.clone(), cv.clone(), none())),
            (None, Some((mn, mv))) => Some((mn.clone(), none(), mv.clone())),
            (None, None) => None,
        }
    })
}

/// How one case came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Agree,
    /// The first differing field, and the case in the golden format.
    Differ {
        field: String,
        c: String,
        model: String,
        golden: Value,
    },
    /// The shape does not make a valid machine (not counted).
    Skip,
}

/// Run one case on the C and on the model.
pub fn check(c: &KernelC, case: &Case, variant: Variant, sort: SortGen) -> Result<Verdict, ExternalError> {
    let Ok(topo) = case.shape.topology() else {
        return Ok(Verdict::Skip);
    };
    let answer = c.call(&topo, case.numgrps, case.counter)?;
    let expected = expected_of(&answer, variant, case.counter);
    let c_offset = expected["spread_offset"].as_u64().map(|o| o as u32);
    let c_fields = grouping_fields(answer.masks.as_deref(), answer.nummasks, c_offset, answer.counter_after);
    let (mut counter, mut warnings) = (case.counter, Vec::new());
    let model = crate::kernel::group_cpus_evenly(&topo, case.numgrps, variant, sort, &mut counter, &mut warnings);
    let masks = model.as_ref().map(Grouping::masks);
    let m_fields = grouping_fields(
        masks.as_deref(),
        model.as_ref().map_or(0, Grouping::nummasks),
        model.as_ref().and_then(Grouping::spread_offset),
        counter,
    );
    Ok(match first_difference(&c_fields, &m_fields) {
        None => Verdict::Agree,
        Some((field, c, model)) => Verdict::Differ {
            field,
            c,
            model,
            golden: golden_case("kernel-c-verify", &topo, case, variant, sort, expected),
        },
    })
}

/// Smaller cases than `case`, most promising first.
fn candidates(case: &Case) -> Vec<Case> {
    let mut out = Vec::new();
    let with = |f: &dyn Fn(&mut Case)| {
        let mut c = case.clone();
        f(&mut c);
        c
    };
    let s = &case.shape;
    for i in 0..s.nodes.len() {
        if s.nodes.len() > 1 {
            out.push(with(&|c| {
                c.shape.nodes.remove(i);
            }));
        }
        let n = &s.nodes[i];
        if n.cores > 1 {
            for cores in [n.cores / 2, n.cores - 1] {
                out.push(with(&|c| {
                    let node = &mut c.shape.nodes[i];
                    node.cores = cores.max(1);
                    node.cluster = node.cluster.min(node.cores);
                }));
            }
        }
        if n.smt > 1 {
            out.push(with(&|c| c.shape.nodes[i].smt /= 2));
        }
        if n.cluster > 0 {
            out.push(with(&|c| c.shape.nodes[i].cluster = 0));
            if n.cluster > 1 {
                out.push(with(&|c| c.shape.nodes[i].cluster -= 1));
            }
        }
    }
    if s.hole > 0 {
        out.push(with(&|c| c.shape.hole = 0));
    }
    for k in 0..s.absent.len() {
        out.push(with(&|c| {
            c.shape.absent.remove(k);
        }));
    }
    if s.reversed {
        out.push(with(&|c| c.shape.reversed = false));
    }
    if s.memoryless > 0 {
        out.push(with(&|c| c.shape.memoryless -= 1));
    }
    if s.split_smt {
        out.push(with(&|c| c.shape.split_smt = false));
    }
    if case.numgrps > 1 {
        out.push(with(&|c| c.numgrps = case.numgrps / 2));
        out.push(with(&|c| c.numgrps = case.numgrps - 1));
    }
    if case.counter > 0 {
        out.push(with(&|c| c.counter = 0));
        out.push(with(&|c| c.counter = case.counter / 2));
        out.push(with(&|c| c.counter = case.counter - 1));
    }
    // Absent positions past the machine's end mean nothing; drop them.
    for c in &mut out {
        let cpus = c.shape.cpus();
        c.shape.absent.retain(|&a| a < cpus);
    }
    out
}

/// Shrink a disagreeing case: take the first smaller case that still disagrees, until none
/// does (at most `steps_max` checks).
pub fn shrink(
    c: &KernelC,
    mut case: Case,
    variant: Variant,
    sort: SortGen,
    steps_max: u32,
) -> Result<(Case, Verdict), ExternalError> {
    let mut verdict = check(c, &case, variant, sort)?;
    assert!(
        matches!(verdict, Verdict::Differ { .. }),
        "shrink starts from a disagreement"
    );
    let mut steps = 0;
    'outer: loop {
        for cand in candidates(&case) {
            steps += 1;
            if steps > steps_max {
                break 'outer;
            }
            let v = check(c, &cand, variant, sort)?;
            if matches!(v, Verdict::Differ { .. }) {
                (case, verdict) = (cand, v);
                continue 'outer;
            }
        }
        break;
    }
    Ok((case, verdict))
}

/// A verify run's result.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Cases that ran (valid machines).
    pub agreed: u32,
    /// The first disagreement, shrunk: the case and its verdict ([`Verdict::Differ`]).
    pub disagreement: Option<(Case, Verdict)>,
}

/// Run `cases` cases from `seed`.
pub fn verify(c: &KernelC, variant: Variant, sort: SortGen, cases: u32, seed: u64) -> Result<Outcome, ExternalError> {
    let mut rng = Rng::new(seed);
    let mut agreed = 0;
    let mut drawn = 0u64;
    while agreed < cases {
        drawn += 1;
        if drawn > u64::from(cases) * 4 + 100 {
            break;
        }
        let case = draw(&mut rng);
        match check(c, &case, variant, sort)? {
            Verdict::Agree => agreed += 1,
            Verdict::Skip => {}
            Verdict::Differ { .. } => {
                let shrunk = shrink(c, case, variant, sort, 2_000)?;
                return Ok(Outcome {
                    agreed,
                    disagreement: Some(shrunk),
                });
            }
        }
    }
    Ok(Outcome {
        agreed,
        disagreement: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drawn_shapes_make_valid_machines() {
        let mut rng = Rng::new(7);
        let mut valid = 0;
        for _ in 0..500 {
            let case = draw(&mut rng);
            if let Ok(t) = case.shape.topology() {
                valid += 1;
                assert_eq!(t.possible().weight(), case.shape.cpus());
            }
        }
        assert!(valid > 450, "{valid} of 500 shapes are valid machines");
    }

    #[test]
    fn the_offset_is_read_from_the_c_counter() {
        let answer = |counter_after| Answer {
            masks: Some(vec![CpuSet::from_cpus([0])]),
            nummasks: 1,
            counter_after,
            warnings: Vec::new(),
        };
        // A one-group call that advanced the counter (OHCL e21bb8ee) used the value before.
        assert_eq!(expected_of(&answer(8), Variant::RotationV1, 7)["spread_offset"], 7);
        assert_eq!(
            expected_of(&answer(0), Variant::RotationV1, u32::MAX)["spread_offset"],
            u32::MAX
        );
        // One that left it alone (the later revisions) used 0.
        assert_eq!(expected_of(&answer(7), Variant::Rotation, 7)["spread_offset"], 0);
        // Models without a counter have no offset.
        assert_eq!(
            expected_of(&answer(7), Variant::Cluster, 7)["spread_offset"],
            Value::Null
        );
    }

    #[test]
    fn candidates_are_smaller() {
        let mut rng = Rng::new(3);
        for _ in 0..100 {
            let case = draw(&mut rng);
            for c in candidates(&case) {
                assert_ne!(c, case);
                assert!(c.shape.cpus() <= case.shape.cpus());
                assert!(c.numgrps <= case.numgrps && c.counter <= case.counter);
            }
        }
    }
}
