//! Generated inputs, valid and invalid: the models must return a value or a
//! typed error, never panic, and keep their own invariants.

use irqscope::kernel::mana::{self, ManaInput, MsixMode};
use irqscope::kernel::sched::{self, SchedInput};

/// A small deterministic generator (64-bit LCG), so failures reproduce.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

#[allow(clippy::needless_range_loop)]
fn random_distance(rng: &mut Lcg, n: usize, symmetric: bool) -> Vec<Vec<u32>> {
    let mut d = vec![vec![10u32; n]; n];
    for i in 0..n {
        for j in 0..n {
            if i < j || (!symmetric && i != j) {
                d[i][j] = 11 + rng.below(30) as u32;
                if symmetric {
                    d[j][i] = d[i][j];
                }
            }
        }
    }
    d
}

#[test]
fn mana_generated_inputs() {
    let mut rng = Lcg(1);
    let (mut n_ok, mut n_err) = (0, 0);
    for _ in 0..400 {
        let n_nodes = 1 + rng.below(4) as usize;
        let n_cpus = 1 + rng.below(24) as usize;
        let smt = 1 + rng.below(2) as u32;
        let mut input = ManaInput::all_online(
            (0..n_cpus).map(|_| rng.below(n_nodes as u64) as u32).collect(),
            (0..n_cpus as u32).map(|c| c / smt).collect(),
            random_distance(&mut rng, n_nodes, true),
            rng.below(n_nodes as u64 + 1) as i32 - 1,
            if rng.below(2) == 0 {
                MsixMode::Dynamic
            } else {
                MsixMode::Static
            },
            rng.below(40) as u32,
            (0..n_cpus).map(|_| rng.below(4) as u32).collect(),
        );
        if rng.below(3) == 0 {
            input.online = (0..n_cpus).map(|_| rng.below(4) != 0).collect();
        }
        if rng.below(4) == 0 {
            input.default_affinity = Some((0..rng.below(3)).map(|_| rng.below(n_cpus as u64) as u32).collect());
        }
        if rng.below(10) == 0 {
            input.cpu_core.pop();
        }
        match mana::run_both(&input) {
            Err(e) => {
                n_err += 1;
                assert!(!e.to_string().is_empty());
            }
            Ok((u, p)) => {
                n_ok += 1;
                for o in [&u, &p] {
                    assert_eq!(o.irqs.len() as u32, o.num_msix_usable);
                    let total: u32 = o.final_vector_load.iter().sum();
                    let initial: u32 = input.initial_vector_load.iter().sum();
                    assert!(total >= initial + o.num_msix_usable);
                    for (c, b) in o.load_breakdown.iter().enumerate() {
                        assert_eq!(b.pre_existing + b.mana_held + b.left_behind, o.final_vector_load[c]);
                    }
                    for irq in &o.irqs {
                        assert!(input.online[irq.effective_cpu as usize]);
                        if let Some(mask) = &irq.affinity {
                            assert!(mask.contains(&irq.effective_cpu));
                        }
                    }
                }
            }
        }
    }
    assert!(
        n_ok > 100 && n_err > 10,
        "generator coverage: {n_ok} ok, {n_err} errors"
    );
}

#[test]
fn sched_generated_inputs() {
    let mut rng = Lcg(7);
    let (mut n_ok, mut n_err) = (0, 0);
    for _ in 0..300 {
        let n_nodes = 2 + rng.below(5) as usize;
        let smt = 1 + rng.below(2) as u32;
        let cpus_per_node: Vec<u32> = (0..n_nodes).map(|_| smt * (1 + rng.below(4) as u32)).collect();
        let n_cpus: usize = cpus_per_node.iter().sum::<u32>() as usize;
        let mut nr_running: Vec<u32> = (0..n_cpus)
            .map(|_| if rng.below(3) == 0 { rng.below(4) as u32 } else { 0 })
            .collect();
        let node = rng.below(n_nodes as u64) as usize;
        let first: u32 = cpus_per_node[..node].iter().sum();
        let pair = if cpus_per_node[node] >= 2 {
            [first, first + 1]
        } else {
            [first, first]
        };
        for &c in &pair {
            nr_running[c as usize] = nr_running[c as usize].max(1);
        }
        let symmetric = rng.below(8) != 0;
        let input = SchedInput {
            node_distance: random_distance(&mut rng, n_nodes, symmetric),
            cpus_per_node,
            smt,
            llcs_per_node: 1,
            node_reclaim_distance: 20 + rng.below(20) as u32,
            nr_running,
            pair_cpus: pair,
        };
        match sched::run(&input) {
            Err(e) => {
                n_err += 1;
                assert!(!e.to_string().is_empty());
            }
            Ok(out) => {
                n_ok += 1;
                for node in &out.topology.nodes {
                    for d in &node.numa_domains {
                        // Groups cover the span and lie inside it.
                        let mut covered: Vec<u32> = d.groups.iter().flat_map(|g| g.nodes.clone()).collect();
                        covered.sort_unstable();
                        covered.dedup();
                        assert_eq!(covered, d.span_nodes);
                        assert!(d.groups[0].nodes.contains(&node.node));
                    }
                }
                for v in &out.variants {
                    for p in &v.periodic {
                        for l in &p.levels {
                            if l.result.moved {
                                assert!(l.result.imbalance > 0);
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(
        n_ok > 100 && n_err > 10,
        "generator coverage: {n_ok} ok, {n_err} errors"
    );
}

#[test]
fn sched_at_the_size_limits() {
    // The model's node limit, and the machine CPU limit spread over it.
    let n_nodes = sched::SCHED_NODES_MAX as usize;
    let per_node = irqscope::topology::CPUS_MAX / sched::SCHED_NODES_MAX;
    let node_distance: Vec<Vec<u32>> = (0..n_nodes)
        .map(|i: usize| {
            (0..n_nodes)
                .map(|j: usize| {
                    if i == j {
                        10
                    } else {
                        10 + (i.abs_diff(j) as u32).min(200) + 10
                    }
                })
                .collect()
        })
        .collect();
    let mut nr_running = vec![0u32; irqscope::topology::CPUS_MAX as usize];
    nr_running[0] = 1;
    nr_running[1] = 2;
    let input = SchedInput {
        node_distance,
        cpus_per_node: vec![per_node; n_nodes],
        smt: 2,
        llcs_per_node: 1,
        node_reclaim_distance: 30,
        nr_running,
        pair_cpus: [0, 1],
    };
    let out = sched::run(&input).expect("valid input at the limits");
    assert_eq!(out.topology.nodes.len(), n_nodes);
    let mut too_big = input.clone();
    too_big.cpus_per_node[0] = per_node + 1;
    too_big.nr_running.push(0);
    assert!(matches!(
        sched::run(&too_big),
        Err(sched::SchedError::TooManyCpus { .. })
    ));
    let mut too_many_nodes = input.clone();
    too_many_nodes.node_distance = vec![vec![20; n_nodes + 1]; n_nodes + 1];
    for (i, row) in too_many_nodes.node_distance.iter_mut().enumerate() {
        row[i] = 10;
    }
    too_many_nodes.cpus_per_node.push(1);
    too_many_nodes.nr_running.push(0);
    assert!(matches!(
        sched::run(&too_many_nodes),
        Err(sched::SchedError::TooManyNodes { .. })
    ));
}

#[test]
fn mana_at_the_size_limits() {
    let n_cpus = 8192;
    let input = ManaInput::all_online(
        (0..n_cpus).map(|c| (c / 128) as u32).collect(),
        (0..n_cpus).map(|c| (c / 2) as u32).collect(),
        (0..64)
            .map(|i: usize| {
                (0..64)
                    .map(|j: usize| if i == j { 10 } else { 20 + i.abs_diff(j) as u32 })
                    .collect()
            })
            .collect(),
        3,
        MsixMode::Dynamic,
        2048,
        vec![0; n_cpus],
    );
    let (u, p) = mana::run_both(&input).expect("valid input at the limits");
    assert_eq!(u.num_msix_usable, 2048);
    assert_eq!(p.setup_fn, u.setup_fn);
}
