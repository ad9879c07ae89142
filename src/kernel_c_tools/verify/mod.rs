//! `kernel-c verify`: every stage a build holds against the models on random machines; the
//! first disagreement shrunk to a small machine and written as a golden-vector case.
//!
//! Machines are drawn as the kernel sees them from a [`Shape`] (nodes of SMT sets grouped in
//! clusters or drawn without clusters, sparse CPU ids, absent CPUs, CPUs present but offline
//! or never brought up, node ids given in reverse, memory-only nodes, x86 or arm64, whose
//! rules give the CPUs that are not online their masks), with boot parameters
//! (`irqaffinity=`, `isolcpus=managed_irq`, [`BootDraw`]). On each machine every stage the
//! build holds runs once with its own random input ([`stages::Input`]: group counts, devices
//! with pre and post vectors, interrupt sets and more queues than CPUs, managed and not,
//! counters), on the C and on the model (the functions of `kernel`, called directly), and the
//! two answers are compared field by field ([`Fields`]).
//!
//! Shrinking works on the shape, the boot parameters and the input: drop a node, halve one,
//! drop the holes, the absent and offline CPUs, the clusters, SMT, the boot parameters, then
//! lower the input's numbers, keeping each step that still disagrees. A disagreement is
//! written as a golden case (`../shared/golden/README.md`, and the kinds `docs/kernel-c.md`
//! adds for the later stages) with the C's answer as `expected`, so `irqscope check-golden
//! FILE` shows the model's side of it again.

pub(crate) mod stages;

use crate::kernel::blk_mq_cpumap::Mapper;
use crate::kernel::irq_affinity::AffinityEra;
use crate::kernel::manage::irq_affinity_setup;
use crate::kernel::{ExternalError, SortGen, Stage, Variant};
use crate::kernel_c::runner::KernelC;
use crate::kernel_c::stages::Boot;
use crate::topology::{Arch, CpuSet, Topology, TopologySpec};
use serde_json::{json, Value};
use stages::Input;

/// The generator a seed names a run by (the crate's one, `topology::rng`).
pub(crate) type Rng = crate::topology::rng::SplitMix64;

/// One node of a [`Shape`]: `cores` cores of `smt` threads, `cluster` cores to a cluster
/// (0: drawn without clusters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeShape {
    pub(crate) cores: u32,
    pub(crate) smt: u32,
    pub(crate) cluster: u32,
}

/// A machine as verify draws and shrinks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    pub nodes: Vec<NodeShape>,
    /// Unused CPU ids after each node (sparse ids).
    pub(crate) hole: u32,
    /// Positions (in possible-CPU order) of CPUs that are not present; CPU 0 stays present.
    pub(crate) absent: Vec<u32>,
    /// Positions of present CPUs that are not online (offline, or never brought up); CPU 0
    /// stays online.
    pub(crate) offline: Vec<u32>,
    /// Node ids handed out last block first.
    pub(crate) reversed: bool,
    /// Node ids without CPUs (memory-only), after the others.
    pub memoryless: u32,
    /// SMT siblings numbered apart (`0,N`) instead of adjacent (`0,1`).
    pub(crate) split_smt: bool,
    /// Whose rules give the CPUs that are not online their masks.
    pub arch: Arch,
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
        let mut all: Vec<u32> = blocks.iter().flatten().copied().collect();
        all.sort_unstable();
        let keep = |skip: &[u32], from: &[(usize, u32)]| -> Vec<(usize, u32)> {
            from.iter()
                .filter(|&&(i, c)| c == 0 || !skip.contains(&(i as u32)))
                .copied()
                .collect()
        };
        let indexed: Vec<(usize, u32)> = all.iter().copied().enumerate().collect();
        let present = keep(&self.absent, &indexed);
        let online = keep(&self.offline, &present);
        let ids = |v: &[(usize, u32)]| list(&v.iter().map(|&(_, c)| c).collect::<Vec<_>>());
        let mut spec: TopologySpec = toml::from_str("name = \"verify\"").expect("minimal spec");
        spec.nodes = Some(nodes);
        spec.smt = smt_sets;
        spec.clusters = clusters;
        if present.len() < all.len() {
            spec.present = Some(ids(&present));
        }
        if online.len() < present.len() {
            spec.online = Some(ids(&online));
        }
        if self.arch != Arch::X86_64 {
            spec.arch = Some(self.arch);
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

/// Boot parameters as verify draws them: CPU ids, cut to the machine when it is built.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BootDraw {
    /// `irqaffinity=LIST`.
    pub(crate) irqaffinity: Option<Vec<u32>>,
    /// `isolcpus=managed_irq,…`: the housekeeping CPUs (the CPUs not isolated).
    pub(crate) managed_irq: Option<Vec<u32>>,
}

impl BootDraw {
    fn set(cpus: &[u32], topo: &Topology) -> Option<CpuSet> {
        let n = topo.nr_cpu_ids();
        let set = CpuSet::from_cpus(cpus.iter().copied().filter(|&c| c < n)).resized(n);
        (!set.is_empty()).then_some(set)
    }

    /// What the harness is sent.
    pub(crate) fn boot(&self, topo: &Topology) -> Boot {
        Boot {
            irqaffinity: self.irqaffinity.as_deref().and_then(|c| Self::set(c, topo)),
            managed_irq: self.managed_irq.as_deref().and_then(|c| Self::set(c, topo)),
        }
    }

    /// `irq_default_affinity` as the model computes it (`irq_affinity_setup()`).
    pub(crate) fn default_affinity(&self, topo: &Topology) -> CpuSet {
        match self.boot(topo).irqaffinity {
            Some(list) => irq_affinity_setup(&list, topo.nr_cpu_ids()),
            None => CpuSet::full(topo.nr_cpu_ids()),
        }
    }

    /// The parameters as a kernel command line would carry them.
    pub fn describe(&self, topo: &Topology) -> String {
        let b = self.boot(topo);
        let mut words = Vec::new();
        if let Some(s) = b.irqaffinity {
            words.push(format!("irqaffinity={s}"));
        }
        if let Some(s) = b.managed_irq {
            let isolated = topo.possible().andnot(&s);
            words.push(format!("isolcpus=managed_irq,{isolated}"));
        }
        words.join(" ")
    }
}

/// One case: a machine, its boot parameters and one stage's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    pub shape: Shape,
    pub boot: BootDraw,
    pub input: Input,
}

/// The models a build is compared with: what the tree's release runs (`kernel::release`), or
/// a variant named with `--against`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Models {
    pub variant: Variant,
    pub sort: SortGen,
    pub era: AffinityEra,
    pub mapper: Mapper,
}

/// Draw a machine.
pub(crate) fn draw_shape(rng: &mut Rng) -> Shape {
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
        offline: Vec::new(),
        reversed: rng.chance(20),
        memoryless: if rng.chance(15) { rng.range(1, 2) } else { 0 },
        split_smt: rng.chance(25),
        arch: if rng.chance(30) { Arch::Arm64 } else { Arch::X86_64 },
    };
    let cpus = shape.cpus();
    let positions = |rng: &mut Rng| -> Vec<u32> {
        let k = rng.range(1, cpus.max(2) - 1);
        let mut p: Vec<u32> = (0..k).map(|_| rng.range(1, cpus.max(2) - 1)).collect();
        p.sort_unstable();
        p.dedup();
        p
    };
    if rng.chance(30) {
        shape.absent = positions(rng);
    }
    if rng.chance(30) {
        shape.offline = positions(rng);
    }
    shape
}

/// Draw boot parameters for a machine of `cpus` CPU ids.
pub(crate) fn draw_boot(rng: &mut Rng, cpus: u32) -> BootDraw {
    let some = |rng: &mut Rng| -> Vec<u32> {
        let k = rng.range(1, cpus.max(1));
        let mut v: Vec<u32> = (0..k).map(|_| rng.range(0, cpus.max(1) - 1)).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    BootDraw {
        irqaffinity: rng.chance(35).then(|| some(rng)),
        managed_irq: rng.chance(20).then(|| some(rng)),
    }
}

/// The topology in the golden format: with `arch`, the drawn machine and which CPUs are
/// online (the reader derives the kernel's masks by the architecture's rules).
pub(crate) fn golden_topology(topo: &Topology) -> Value {
    let cpus: Vec<Value> = (0..topo.nr_cpu_ids())
        .map(|cpu| {
            if topo.possible().contains(cpu) {
                json!({"cpu": cpu, "node": topo.cpu_to_node(cpu), "smt": topo.drawn_smt(cpu).to_cpulist(),
                       "cluster": topo.drawn_cluster(cpu).to_cpulist(),
                       "present": topo.present().contains(cpu), "online": topo.online().contains(cpu),
                       "possible": true})
            } else {
                json!({"cpu": cpu, "node": 0, "smt": "", "cluster": "", "present": false, "possible": false})
            }
        })
        .collect();
    json!({"name": topo.name(), "arch": topo.arch().name(), "nr_cpu_ids": topo.nr_cpu_ids(),
           "nr_node_ids": topo.nr_node_ids(), "cpus": cpus})
}

/// An answer as named fields in order (`null`, `nummasks`, `masks[3]`, ...), so that the C's
/// and the model's are compared field by field and the first difference is named.
pub(crate) type Fields = Vec<(String, String)>;

/// The first field where two answers differ: its name and both values.
pub(crate) fn first_difference(c: &Fields, model: &Fields) -> Option<(String, String, String)> {
    let none = || "(none)".to_string();
    let n = c.len().max(model.len());
    (0..n).find_map(|i| match (c.get(i), model.get(i)) {
        (Some((cn, cv)), Some((mn, mv))) if cn == mn && cv == mv => None,
        (Some((cn, cv)), Some((_, mv))) => Some((cn.clone(), cv.clone(), mv.clone())),
        (Some((cn, cv)), None) => Some((cn.clone(), cv.clone(), none())),
        (None, Some((mn, mv))) => Some((mn.clone(), none(), mv.clone())),
        (None, None) => None,
    })
}

/// How one case came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Agree,
    /// The first differing field, both values, and the case in the golden format.
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
pub fn check(c: &KernelC, case: &Case, models: Models) -> Result<Verdict, ExternalError> {
    let Ok(topo) = case.shape.topology() else {
        return Ok(Verdict::Skip);
    };
    let run = stages::run(c, &topo, &case.boot, &case.input, models)?;
    Ok(match first_difference(&run.c, &run.model) {
        None => Verdict::Agree,
        Some((field, c, model)) => Verdict::Differ {
            field,
            c,
            model,
            golden: run.golden,
        },
    })
}

/// Smaller cases than `case`, most promising first: fewer or smaller nodes, a plainer
/// machine, fewer boot parameters, then a smaller input.
fn candidates(case: &Case) -> Vec<Case> {
    let mut out = smaller_nodes(case);
    out.extend(plainer_shape(case));
    out.extend(fewer_boot_parameters(case));
    out.extend(
        case.input
            .candidates()
            .into_iter()
            .map(|input| Case { input, ..case.clone() }),
    );
    // Positions past the machine's end mean nothing; drop them.
    for c in &mut out {
        let cpus = c.shape.cpus();
        c.shape.absent.retain(|&a| a < cpus);
        c.shape.offline.retain(|&a| a < cpus);
    }
    out
}

/// `case` changed by `f`.
fn with(case: &Case, f: impl Fn(&mut Case)) -> Case {
    let mut c = case.clone();
    f(&mut c);
    c
}

/// Each node removed, or with fewer cores, fewer threads, smaller or no clusters.
fn smaller_nodes(case: &Case) -> Vec<Case> {
    let mut out = Vec::new();
    let s = &case.shape;
    for i in 0..s.nodes.len() {
        if s.nodes.len() > 1 {
            out.push(with(case, |c| {
                c.shape.nodes.remove(i);
            }));
        }
        let n = &s.nodes[i];
        if n.cores > 1 {
            for cores in [n.cores / 2, n.cores - 1] {
                out.push(with(case, |c| {
                    let node = &mut c.shape.nodes[i];
                    node.cores = cores.max(1);
                    node.cluster = node.cluster.min(node.cores);
                }));
            }
        }
        if n.smt > 1 {
            out.push(with(case, |c| c.shape.nodes[i].smt /= 2));
        }
        if n.cluster > 0 {
            out.push(with(case, |c| c.shape.nodes[i].cluster = 0));
            if n.cluster > 1 {
                out.push(with(case, |c| c.shape.nodes[i].cluster -= 1));
            }
        }
    }
    out
}

/// The machine with one oddity less: no hole, each absent or offline CPU back, ids in order,
/// a memoryless node less, SMT unsplit, x86.
fn plainer_shape(case: &Case) -> Vec<Case> {
    let mut out = Vec::new();
    let s = &case.shape;
    if s.hole > 0 {
        out.push(with(case, |c| c.shape.hole = 0));
    }
    for k in 0..s.absent.len() {
        out.push(with(case, |c| {
            c.shape.absent.remove(k);
        }));
    }
    for k in 0..s.offline.len() {
        out.push(with(case, |c| {
            c.shape.offline.remove(k);
        }));
    }
    if s.reversed {
        out.push(with(case, |c| c.shape.reversed = false));
    }
    if s.memoryless > 0 {
        out.push(with(case, |c| c.shape.memoryless -= 1));
    }
    if s.split_smt {
        out.push(with(case, |c| c.shape.split_smt = false));
    }
    if s.arch != Arch::X86_64 {
        out.push(with(case, |c| c.shape.arch = Arch::X86_64));
    }
    out
}

/// Without `irqaffinity=` (or with one CPU of its list less) and without
/// `isolcpus=managed_irq`.
fn fewer_boot_parameters(case: &Case) -> Vec<Case> {
    let mut out = Vec::new();
    if let Some(list) = &case.boot.irqaffinity {
        out.push(with(case, |c| c.boot.irqaffinity = None));
        for k in (0..list.len()).take(8).filter(|_| list.len() > 1) {
            out.push(with(case, |c| {
                if let Some(l) = c.boot.irqaffinity.as_mut() {
                    l.remove(k);
                }
            }));
        }
    }
    if case.boot.managed_irq.is_some() {
        out.push(with(case, |c| c.boot.managed_irq = None));
    }
    out
}

/// Shrink a disagreeing case: take the first smaller case that still disagrees, until none
/// does (at most `steps_max` checks).
pub fn shrink(c: &KernelC, mut case: Case, models: Models, steps_max: u32) -> Result<(Case, Verdict), ExternalError> {
    let mut verdict = check(c, &case, models)?;
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
            let v = check(c, &cand, models)?;
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
    /// Machines every stage ran on.
    pub machines: u32,
    /// Per stage the build holds: the cases that agreed.
    pub agreed: Vec<(Stage, u32)>,
    /// The first disagreement, shrunk: the stage, the case and its verdict
    /// ([`Verdict::Differ`]).
    pub disagreement: Option<(Stage, Case, Verdict)>,
}

/// Run `cases` machines from `seed`, every stage the build holds on each.
pub fn verify(c: &KernelC, models: Models, cases: u32, seed: u64) -> Result<Outcome, ExternalError> {
    let mut rng = Rng::new(seed);
    let held: Vec<Stage> = c.stages().to_vec();
    let mut outcome = Outcome {
        machines: 0,
        agreed: held.iter().map(|&s| (s, 0)).collect(),
        disagreement: None,
    };
    let mut drawn = 0u64;
    while outcome.machines < cases && drawn <= u64::from(cases) * 4 + 100 {
        drawn += 1;
        let shape = draw_shape(&mut rng);
        let boot = draw_boot(&mut rng, shape.cpus() + shape.hole * shape.nodes.len() as u32);
        if shape.topology().is_err() {
            continue;
        }
        for (k, &stage) in held.iter().enumerate() {
            let input = Input::draw(stage, &mut rng, shape.cpus());
            let case = Case {
                shape: shape.clone(),
                boot: boot.clone(),
                input,
            };
            match check(c, &case, models)? {
                Verdict::Agree => outcome.agreed[k].1 += 1,
                Verdict::Skip => {}
                Verdict::Differ { .. } => {
                    let (case, verdict) = shrink(c, case, models, 2_000)?;
                    outcome.disagreement = Some((stage, case, verdict));
                    return Ok(outcome);
                }
            }
        }
        outcome.machines += 1;
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drawn_shapes_make_valid_machines() {
        let mut rng = Rng::new(7);
        let mut valid = 0;
        let mut arm64_offline = 0;
        for _ in 0..500 {
            let shape = draw_shape(&mut rng);
            if let Ok(t) = shape.topology() {
                valid += 1;
                assert_eq!(t.possible().weight(), shape.cpus());
                assert!(t.online().contains(0) && t.present().contains(0));
                if t.arch() == Arch::Arm64 && t.online() != t.present() {
                    arm64_offline += 1;
                }
            }
        }
        assert!(valid > 450, "{valid} of 500 shapes are valid machines");
        assert!(arm64_offline > 10, "{arm64_offline} arm64 machines with offline CPUs");
    }

    #[test]
    fn candidates_are_smaller() {
        let mut rng = Rng::new(3);
        for stage in Stage::ALL {
            for _ in 0..50 {
                let shape = draw_shape(&mut rng);
                let boot = draw_boot(&mut rng, shape.cpus());
                let input = Input::draw(stage, &mut rng, shape.cpus());
                let case = Case { shape, boot, input };
                for c in candidates(&case) {
                    assert_ne!(c, case);
                    assert!(c.shape.cpus() <= case.shape.cpus());
                }
            }
        }
    }

    #[test]
    fn boot_parameters_are_cut_to_the_machine() {
        let shape = Shape {
            nodes: vec![NodeShape {
                cores: 4,
                smt: 1,
                cluster: 0,
            }],
            hole: 0,
            absent: Vec::new(),
            offline: vec![2],
            reversed: false,
            memoryless: 0,
            split_smt: false,
            arch: Arch::Arm64,
        };
        let t = shape.topology().unwrap();
        assert_eq!(t.online().to_cpulist(), "0-1,3");
        let boot = BootDraw {
            irqaffinity: Some(vec![2, 9]),
            managed_irq: Some(vec![1, 3]),
        };
        assert_eq!(boot.default_affinity(&t).to_cpulist(), "0,2");
        assert_eq!(boot.describe(&t), "irqaffinity=2 isolcpus=managed_irq,0,2");
        assert_eq!(BootDraw::default().default_affinity(&t).to_cpulist(), "0-3");
    }
}
