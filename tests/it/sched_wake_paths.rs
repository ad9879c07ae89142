//! Golden-style cases for the wake/fork path when both groups are fully busy or overloaded
//! (spec B.8): `numa_load_margin`, `imbalance_pct` and `avg_load`, which no case in the shared
//! golden set exercises. Each case is a golden `input`; the expected wake level and fork
//! placement are worked out by hand from spec B.6/B.8 (shown beside each case) and compared
//! with the golden comparison, so a missing or extra key fails as it would in `check-golden`.
//! `local_less_loaded` is unreachable (its test can only hold after the margin test failed
//! when it cannot); the generated inputs below check that it never appears.

use irqscope::golden::{first_difference, run_case};
use irqscope::kernel::sched::{self, GroupType, SchedInput, WakeChoice, WakePath};
use serde_json::{json, Value};

/// Two nodes at distance 20, `cpus` CPUs each, the pair on CPUs 0 and 1 of node 0.
fn case(cpus: u32, nr_running: &[u32]) -> Value {
    json!({"input": {
        "node_distance": [[10, 20], [20, 10]],
        "cpus_per_node": cpus,
        "nr_running": nr_running,
        "pair_cpus": [0, 1],
    }})
}

fn group(node: u32, weight: u32, sum: u32, kind: &str) -> Value {
    json!({"nodes": [node], "weight": weight, "sum_nr_running": sum, "idle_cpus": 0, "type": kind})
}

/// The one wake level of node 0 (NUMA-1, distance 20, fork balancing on) with both groups
/// busy: no has-spare numbers.
fn busy_level(groups: Value, choice: &str, path: &str) -> serde_json::Map<String, Value> {
    let v = json!({
        "level": 1, "distance": 20, "this_cpu": 0, "groups": groups, "idlest_group": 1,
        "imbalance": null, "allowance": null, "imb_numa_nr": null, "dst_running": null,
        "choice": choice, "path": path,
    });
    v.as_object().unwrap().clone()
}

/// Runs `case` as `check-golden` would and compares, for every variant, the wake levels and
/// the fork placement with the expected ones (the branch does not depend on the variant).
fn check(case: &Value, wake: serde_json::Map<String, Value>, fork: Value) {
    let actual = run_case(case, "sched").expect("valid case");
    let mut level = wake.clone();
    level.insert("balance_fork".into(), json!(true));
    let mut step = wake;
    step.insert("this_node".into(), json!(0));
    let mut fork = fork;
    let new_cpu = fork["new_cpu"].take();
    step.insert("new_cpu".into(), new_cpu);
    fork.as_object_mut().unwrap().remove("new_cpu");
    fork["steps"] = json!([Value::Object(step)]);
    for variant in ["upstream", "p12", "p123"] {
        let v = &actual["variants"][variant];
        let path = format!("expected.variants.{variant}");
        let expected_wake = json!([Value::Object(level.clone())]);
        if let Some(d) = first_difference(&expected_wake, &v["wake_levels"], &format!("{path}.wake_levels")) {
            panic!("{d}");
        }
        if let Some(d) = first_difference(&fork, &v["fork_placement"], &format!("{path}.fork_placement")) {
            panic!("{d}");
        }
    }
}

/// Wake snapshot (B taken off CPU 1): node 0 runs 1+1, node 1 runs 1+1. Both groups are
/// fully busy (sum 2 = weight 2, 2048*100 > 2048*117 fails), avg_load 1024 each;
/// 1024 + 174 >= 1024, so the task stays local on the NUMA load margin.
#[test]
fn numa_load_margin_keeps_the_task_local() {
    let c = case(2, &[1, 2, 1, 1]);
    let groups = json!([group(0, 2, 2, "fully_busy"), group(1, 2, 2, "fully_busy")]);
    check(
        &c,
        busy_level(groups, "local", "numa_load_margin"),
        json!({"new_cpu": null, "final_cpu": 0, "final_node": 0, "split": false}),
    );
}

/// Wake snapshot: node 0 runs 2+1+2+2 = 7 tasks, node 1 runs 6 on 4 CPUs; both overloaded.
/// avg_load 7*1024/4 = 1792 and 1536: 1536 + 174 < 1792, but 100*1792 = 179200 <=
/// 117*1536 = 179712, so the local group is within imbalance_pct.
#[test]
fn imbalance_pct_keeps_the_task_local() {
    let c = case(4, &[2, 2, 2, 2, 2, 2, 1, 1]);
    let groups = json!([group(0, 4, 7, "overloaded"), group(1, 4, 6, "overloaded")]);
    check(
        &c,
        busy_level(groups, "local", "imbalance_pct"),
        json!({"new_cpu": null, "final_cpu": 0, "final_node": 0, "split": false}),
    );
}

/// Wake snapshot: node 0 runs 3+1+2+2 = 8 tasks (avg_load 2048), node 1 runs 6 (1536).
/// 100*2048 > 117*1536, so the idlest group wins on avg_load; the fork walk places B on the
/// first CPU of node 1 with the fewest tasks (CPU 6, one task) and the pair splits.
#[test]
fn avg_load_picks_the_idlest_group() {
    let c = case(4, &[3, 2, 2, 2, 2, 2, 1, 1]);
    let groups = json!([group(0, 4, 8, "overloaded"), group(1, 4, 6, "overloaded")]);
    check(
        &c,
        busy_level(groups, "idlest", "avg_load"),
        json!({"new_cpu": 6, "final_cpu": 6, "final_node": 1, "split": true}),
    );
    let summary = &run_case(&c, "sched").unwrap()["summary"]["upstream"];
    assert_eq!(summary["fork_split"], json!(true));
}

/// The old model-only labels are gone from every wake path name.
#[test]
fn no_wake_path_keeps_an_old_label() {
    for old in [
        "avg_load_numa_margin",
        "avg_load_local_lighter",
        "avg_load_within_pct",
        "avg_load_exceeds",
    ] {
        assert!(WakePath::ALL.iter().all(|p| p.as_str() != old), "{old}");
    }
}

/// Many busy two- and three-node snapshots: whenever both groups are fully busy or
/// overloaded, the path is one of the four B.8 names, agrees with the choice, and is never
/// `local_less_loaded`; every one of the three reachable names turns up.
#[test]
fn busy_branch_paths_over_generated_snapshots() {
    let mut seen = std::collections::BTreeSet::new();
    for n_nodes in 2..=3usize {
        for cpus in [2u32, 4] {
            for seed in 0..200u64 {
                let n_cpus = n_nodes * cpus as usize;
                let nr_running: Vec<u32> = (0..n_cpus)
                    .map(|c| 1 + ((seed.wrapping_mul(2654435761) >> (c % 16)) % 3) as u32)
                    .collect();
                let node_distance: Vec<Vec<u32>> = (0..n_nodes)
                    .map(|a| (0..n_nodes).map(|b| if a == b { 10 } else { 20 }).collect())
                    .collect();
                let input = SchedInput {
                    node_distance,
                    cpus_per_node: vec![cpus; n_nodes],
                    smt: 1,
                    llcs_per_node: 1,
                    node_reclaim_distance: 30,
                    nr_running,
                    pair_cpus: [0, 1],
                };
                let out = sched::run(&input).expect("valid input");
                for v in &out.variants {
                    let steps = v.fork_placement.steps.iter().map(|s| &s.eval);
                    for w in v.wake_levels.iter().chain(steps) {
                        let Some(i) = w.idlest_group else { continue };
                        let (l, d) = (&w.groups[0], &w.groups[i]);
                        if l.group_type != d.group_type || l.group_type == GroupType::HasSpare {
                            continue;
                        }
                        assert_ne!(w.path, WakePath::LocalLessLoaded);
                        let expect_choice = if w.path == WakePath::AvgLoad {
                            WakeChoice::Idlest
                        } else {
                            WakeChoice::Local
                        };
                        assert!(
                            matches!(
                                w.path,
                                WakePath::NumaLoadMargin | WakePath::ImbalancePct | WakePath::AvgLoad
                            ),
                            "{:?}",
                            w.path
                        );
                        assert_eq!(w.choice, expect_choice, "{:?}", w.path);
                        seen.insert(w.path.as_str());
                    }
                }
            }
        }
    }
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        vec!["avg_load", "imbalance_pct", "numa_load_margin"]
    );
}
