//! A kernel release picks its models together (`--kernel`, `kernel::release`), every answer
//! names the releases it holds for, and the examples of issue 22 §1 bullets 3-4 and §4 through
//! the CLI: more queues than CPUs under a v6.3 .. v6.16 release fail the allocation (-EINVAL),
//! the vector count is a fact of release and machine, and `sched` takes x86 numbering.

use crate::common::cli::irqscope;
use serde_json::Value;

fn json(args: &[&str]) -> Value {
    let mut a = vec!["simulate"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--format", "json"]);
    serde_json::from_str(&irqscope(&a)).unwrap()
}

fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `simulate vm-8vcpu-smt2 16:name=q,pre=1` under 6.12: `irq_create_affinity_masks()` copies all
/// 16 groups' masks, 8 of them empty, and `alloc_descs()` refuses vector 9 (-EINVAL): no vector
/// fires and none is "shut down". Under the newest release (nummasks) vectors 9-16 get the
/// default mask, as before.
#[test]
fn more_queues_than_cpus_fail_under_a_numgrps_release() {
    let old = json(&["vm-8vcpu-smt2", "16:name=q,pre=1", "--kernel", "6.12"]);
    let q = &old["devices"][0];
    assert_eq!(
        q["alloc_failed"],
        "MSI-X allocation fails with -EINVAL: alloc_descs() refuses vector 9, whose affinity mask is empty, \
         and the vectors before it are freed (the PCI core then retries with 9 vectors: not modelled)"
    );
    assert!(q["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .all(|v| v["effective_cpu"].is_null()));
    assert_eq!(q["vectors"][9]["mask"], "");
    assert_eq!(old["metrics"]["vectors_failed"], 17);
    assert_eq!(old["metrics"]["vectors_shut_down"], 0);
    assert_eq!(old["scenario"]["variant"], "pre-cluster");
    assert_eq!(old["kernel"]["named"], "6.12");
    assert_eq!(old["kernel"]["holds_for"], serde_json::json!(["v6.11 .. v6.16"]));
    let text = irqscope(&["simulate", "vm-8vcpu-smt2", "16:name=q,pre=1", "--kernel", "6.12"]);
    assert!(
        text.contains("kernel:   v6.12: holds for v6.11 .. v6.16 (set by heap-v6.11, numgrps)\n"),
        "{text}"
    );
    assert!(
        words(&text).contains("EINVAL: q: MSI-X allocation fails with -EINVAL"),
        "{text}"
    );
    assert!(text.contains("serve none of the 1 device"), "{text}");

    let new = json(&["vm-8vcpu-smt2", "16:name=q,pre=1"]);
    assert!(new["devices"][0].get("alloc_failed").is_none());
    assert_eq!(new["devices"][0]["vectors"][9]["mask"], "0-7");
    assert_eq!(new["devices"][0]["vectors"][9]["managed"], true);
    assert_eq!(new["kernel"]["holds_for"], serde_json::json!(["v7.0 .."]));
    // Naming the pre-cluster variant alone keeps the nummasks era: v6.17 .. v6.19.
    let mixed = json(&["vm-8vcpu-smt2", "16:name=q,pre=1", "--variant", "pre-cluster"]);
    assert_eq!(mixed["kernel"]["holds_for"], serde_json::json!(["v6.17 .. v6.19"]));
    // An explicit era overrides the release's.
    let era = json(&[
        "vm-8vcpu-smt2",
        "16:name=q,pre=1",
        "--kernel",
        "6.12",
        "--affinity",
        "nummasks",
    ]);
    assert!(era["devices"][0].get("alloc_failed").is_none());
}

/// `--kernel` picks variant, sort, era, mapper and vector count; flags override; the printed
/// command gives the same report back; models and their sources go to stderr.
#[test]
fn kernel_picks_every_model_and_the_command_reproduces() {
    let args = [
        "simulate",
        "xeon-2s-18c-smt2",
        "4x8:pre=1,blkmq=cpumap",
        "--kernel",
        "6.1",
    ];
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_irqscope"))
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        words(&stderr)
            .contains("variant pre-cluster, sort heap-v5.1, affinity numgrps, mapper legacy-v5.1 from --kernel 6.1"),
        "{stderr}"
    );
    assert!(
        words(&text.replace('\\', " "))
            .contains("--variant pre-cluster --sort heap-v5.1 --effective x86-matrix --counter 0 --kernel 6.1"),
        "{text}"
    );
    // The mapper is a model of the answer here (cpumap devices): it ends the range at v6.2 (the
    // line names as many of the bounding models as fit; the JSON names each).
    assert!(
        text.contains("kernel:   v6.1: holds for v5.1 .. v6.2 (set by heap-v5.1)\n"),
        "{text}"
    );
    let mut cmd = Vec::new();
    for line in text.lines().skip_while(|l| !l.trim_start().starts_with("$ ")) {
        cmd.extend(
            line.trim_start()
                .trim_start_matches("$ ")
                .trim_end_matches('\\')
                .split_whitespace()
                .map(String::from),
        );
        if !line.ends_with('\\') {
            break;
        }
    }
    let again: Vec<&str> = cmd.iter().skip(1).map(String::as_str).collect();
    assert_eq!(irqscope(&again), text);
    let v = json(&[
        "xeon-2s-18c-smt2",
        "4x8:pre=1",
        "--kernel",
        "6.1",
        "--variant",
        "cluster",
    ]);
    assert_eq!(
        (v["scenario"]["variant"].as_str(), v["scenario"]["sort"].as_str()),
        (Some("cluster"), Some("heap-v5.1"))
    );
    assert_eq!(v["kernel"]["holds_for"], serde_json::json!([]));
    assert_eq!(
        v["kernel"]["line"],
        "v6.1: no release: cluster (v7.0 ..) with heap-v5.1 (v5.1 .. v6.8)"
    );
    for bad in [["--kernel", "banana"], ["--affinity", "both"], ["--mapper", "v9"]] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_irqscope"))
            .args(["simulate", "vm-2vcpu-smt2", "2"])
            .args(bad)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
}

/// Issue 22 §1 bullet 4: `2x203:managed=no` on a 2-vCPU q35-like VM runs out (201 vectors per
/// CPU: the 0xeb window less IA32_SYSCALL_VECTOR and the PIC cascade) and the summary says
/// ENOSPC; `256x8:pre=1` no longer calls refused vectors shut down nor says "all".
#[test]
fn the_summary_says_enospc_with_the_machines_vector_count() {
    let t = irqscope(&["simulate", "vm-2vcpu-smt2", "2x203:managed=no"]);
    assert!(
        words(&t).contains("ENOSPC: 4 vectors of 1 device got none, first dev1 vector 199; 201 vectors per CPU"),
        "{t}"
    );
    // The same machine said to have no PIC, under v6.8 .. v6.9 (no move-cleanup vector):
    // 203 per CPU, and the 406 vectors fit.
    let v = json(&[
        "vm-2vcpu-smt2",
        "2x203:managed=no",
        "--kernel",
        "6.9",
        "--vectors-per-cpu",
        "203",
    ]);
    assert!(v["vector_space"].is_null(), "{}", v["vector_space"]);
    let t = irqscope(&["simulate", "vm-8vcpu-smt2", "256x8:pre=1"]);
    assert!(!t.contains("shut down"), "{t}");
    assert!(t.contains("of the 256 devices"), "{t}");
    assert!(!t.contains("serve all"), "{t}");
    assert!(words(&t).contains("ENOSPC: 696 vectors of 78 devices got none"), "{t}");
    // The kernel line counts the vector window only when the space ran out: 201 on a PIC
    // machine is the window of v6.10 .. (and .. v6.7), so cluster still sets it.
    assert!(t.contains("kernel:   holds for v7.0 .. (set by cluster)"), "{t}");
}

/// Issue 22 §4: `sched` takes x86 numbering (seed 003's 2-socket x86 sentence: equal-weight
/// groups, so patches 1-2 change nothing) and names its LLC assumption.
#[test]
fn sched_takes_x86_numbering_and_names_its_llc_assumption() {
    let t = irqscope(&["sched", "xeon-2s-18c-smt2", "--pair-node", "0"]);
    assert!(
        words(&t).contains("assumed: 1 LLC per node, not stated (sets imb_numa_nr; --llcs-per-node)"),
        "{t}"
    );
    assert!(words(&t).contains("pair on machine CPUs 0 and 1"), "{t}");
    for v in ["upstream", "p12", "p123"] {
        assert!(
            t.lines().any(|l| l.starts_with(v) && l.contains("keeps the pair")),
            "{v}: {t}"
        );
    }
    let t2 = irqscope(&["sched", "xeon-2s-18c-smt2", "--pair-node", "1", "--llcs-per-node", "2"]);
    assert!(
        words(&t2).contains("assumed: 2 LLCs per node (sets imb_numa_nr; --llcs-per-node)"),
        "{t2}"
    );
    assert!(words(&t2).contains("pair on machine CPUs 18 and 19"), "{t2}");
    assert!(t2.contains("--llcs-per-node 2"), "the command names it: {t2}");
}

/// `blk-mq --kernel` picks the release's mapper and says which releases the map holds for.
#[test]
fn blk_mq_names_its_release_range() {
    let t = irqscope(&["blk-mq", "vm-8vcpu-smt2", "--queues", "4", "--kernel", "6.12"]);
    assert!(t.contains("--mapper v6.3"), "{t}");
    assert!(t.contains("kernel: v6.12: holds for v6.11 .. v6.16"), "{t}");
    let t = irqscope(&["blk-mq", "vm-8vcpu-smt2", "--queues", "4"]);
    assert!(t.contains("--mapper current") && t.contains("holds for v7.0 .."), "{t}");
}

/// The page's kernel field: `/?…&kernel=6.12` runs what 6.12 runs, the page and its twins name
/// the range, and the permalink keeps the models it ran (with the release).
#[tokio::test]
async fn the_page_takes_a_kernel_release() {
    use crate::common::http::get;
    let page = get("/?preset=vm-8vcpu-smt2&devices=16:name=q,pre=1&kernel=6.12").await;
    assert_eq!(page.status, axum::http::StatusCode::OK, "{}", page.body);
    assert!(
        page.body
            .contains("kernel: v6.12: holds for v6.11 .. v6.16 (set by heap-v6.11, numgrps)"),
        "{}",
        page.body
    );
    let at = page.body.find("href=\"/s/").unwrap() + 9;
    let link = &page.body[at..at + page.body[at..].find('"').unwrap()];
    let spec: irqscope::scenario::spec::ScenarioSpec = irqscope::scenario::permalink::decode(link).unwrap();
    assert_eq!(
        (spec.kernel.as_deref(), spec.affinity.as_deref(), spec.vectors_per_cpu),
        (Some("6.12"), Some("numgrps"), Some(201))
    );
    let j: Value = serde_json::from_str(&get(&format!("/s/{link}/json")).await.body).unwrap();
    assert!(j["devices"][0]["alloc_failed"].as_str().unwrap().contains("-EINVAL"));
    let text = get(&format!("/s/{link}/text")).await.body;
    assert!(text.contains("--kernel 6.12"), "{text}");
    let bad = get("/?preset=vm-8vcpu-smt2&kernel=banana").await;
    assert!(bad.status.is_client_error(), "{}", bad.status);
}

/// The masks of a device's vectors, in index order.
fn masks_of(v: &Value, device: usize) -> Vec<String> {
    v["devices"][device]["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["mask"].as_str().unwrap().to_string())
        .collect()
}

/// D1 (kernel/irq/affinity.c, both eras): a managed vector past the masks a set initialized
/// gets `irq_default_affinity`, which is `irqaffinity=` plus the boot CPU (irqdesc.c
/// `irq_affinity_setup()`), not every CPU. Nine queues on eight CPUs under 7.2: vector 8.
#[test]
fn a_vector_past_the_masks_gets_the_default_affinity() {
    let v = json(&["vm-8vcpu-smt2", "9:name=q", "--kernel", "7.2", "--irqaffinity", "1"]);
    let masks = masks_of(&v, 0);
    assert_eq!(masks.len(), 9);
    assert_eq!(masks[8], "0-1");
    assert_eq!(v["devices"][0]["vectors"][8]["managed"], true);
    // Without irqaffinity= the default is every CPU.
    let v = json(&["vm-8vcpu-smt2", "9:name=q", "--kernel", "7.2"]);
    assert_eq!(masks_of(&v, 0)[8], "0-7");
}

/// D2: a device whose allocation failed (6.12 copies empty masks; alloc_descs() refuses them)
/// shows the pre and post vectors' masks the C gave them: irq_default_affinity.
#[test]
fn a_failed_allocation_keeps_the_default_affinity_of_its_pre_and_post_vectors() {
    let v = json(&[
        "vm-8vcpu-smt2",
        "11:name=q,pre=1,post=1",
        "--kernel",
        "6.12",
        "--irqaffinity",
        "1",
    ]);
    assert!(v["devices"][0]["alloc_failed"].is_string(), "{v}");
    let masks = masks_of(&v, 0);
    assert_eq!((masks[0].as_str(), masks.last().unwrap().as_str()), ("0-1", "0-1"));
}

/// D3: a machine drawn without clusters has the cluster masks an x86 kernel gives it (each
/// CPU with its SMT siblings; here each CPU alone), so 7.2's cluster-aware grouping sorts
/// eight one-CPU clusters with the kernel's heapsort: the same order as Debian 7.2.13's
/// lib/group_cpus.c built by `kernel-c` gives.
#[test]
fn a_machine_drawn_without_clusters_groups_as_the_kernel_does() {
    let dir = crate::common::fs::Scratch::new("flat8");
    let file = dir.path().join("flat8.toml");
    std::fs::write(&file, "name = \"flat8\"\nnodes = [\"0-7\"]\n").unwrap();
    let v = json(&[file.to_str().unwrap(), "8", "--kernel", "7.2"]);
    assert_eq!(masks_of(&v, 0), ["1", "3", "4", "5", "6", "7", "2", "0"]);
    let notes = v["machine_notes"].to_string();
    assert!(notes.contains("CPUs 0-7 drawn without a cluster"), "{v}");
}

/// A GICv5 machine (`irqchip=gic-v5`) runs the `arm64-gicv5` model, which fires each vector on
/// the first online CPU of its mask (`gicv5_iri_irq_set_affinity()`); the driver exists from
/// v6.17, so an answer for it holds from there and a 6.12 kernel is out of range. The page of
/// its permalink names the model and what the controller does.
#[tokio::test]
async fn a_gicv5_machine_fires_on_the_first_online_cpu_from_v6_17() {
    use crate::common::http::get;
    use irqscope::topology::parse_cpulist;
    let machine = "cpus:name=v5;nodes=0-3+4-7;online=0,2-7;irqchip=gic-v5";
    let j = json(&[machine, "8:name=q", "6:name=net"]);
    assert_eq!(j["scenario"]["effective"], "arm64-gicv5");
    let online = parse_cpulist("0,2-7", 8).unwrap();
    let mut fired = 0;
    for d in j["devices"].as_array().unwrap() {
        for v in d["vectors"].as_array().unwrap() {
            let mask = parse_cpulist(v["mask"].as_str().unwrap(), 8).unwrap();
            let first = mask.and(&online).first();
            assert_eq!(v["effective_cpu"].as_u64().map(|c| c as u32), first, "{v}");
            fired += u32::from(first.is_some());
        }
    }
    assert!(fired >= 12, "{fired} vectors fired");
    let models = j["kernel"]["models"].as_array().unwrap();
    assert!(
        models.contains(&serde_json::json!({"model": "arm64-gicv5", "holds_for": ["v6.17 .."]})),
        "{models:?}"
    );
    let text = irqscope(&["simulate", machine, "8:name=q", "--kernel", "6.12"]);
    assert!(
        text.contains("kernel:   not v6.12: holds for v6.17 .. v6.19 (set by arm64-gicv5"),
        "{text}"
    );
    let link = j["permalink"].as_str().unwrap();
    let page = get(&format!("/s/{link}")).await;
    assert_eq!(page.status, axum::http::StatusCode::OK, "{}", page.body);
    assert!(
        page.body.contains(
            "effective CPU: arm64-gicv5 (named in the link; also the default for this arm64 machine (gic-v5))"
        ),
        "{}",
        page.body
    );
    let text = get(&format!("/s/{link}/text")).await.body;
    assert!(
        words(&text).contains("gic-v5 on arm64, so arm64-gicv5: the GICv5 driver fires each SPI and LPI on the first online CPU of its mask"),
        "{text}"
    );
}

/// A Hyper-V vPCI device the host gives no NUMA node (`hv_pci=yes`, no `node`): from v7.0
/// `hv_pci_assign_numa_node()` sets node 0, so on an arm64 machine its vectors without
/// affinity descriptors stay on node 0's CPUs; up to v6.19 arm64 leaves NUMA_NO_NODE and they
/// spread over the machine. A device not marked keeps NUMA_NO_NODE under every release, and
/// x86 (node 0 either way) names no rule.
#[test]
fn a_hyperv_pci_device_without_a_node_gets_node_0_from_v7_0() {
    let arm = "cpus:name=hv;nodes=0-3+4-7;arch=arm64;irqchip=gic-its";
    let cpus = |j: &Value| -> Vec<u64> {
        j["devices"][0]["vectors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["effective_cpu"].as_u64().unwrap())
            .collect()
    };
    let rule = |j: &Value| -> Option<Value> {
        j["kernel"]["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["model"].as_str().unwrap().starts_with("hv-pci"))
            .cloned()
    };
    let before = json(&[arm, "8:name=eth,managed=no,hv_pci=yes", "--kernel", "6.19"]);
    assert_eq!(cpus(&before), [0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(
        rule(&before),
        Some(serde_json::json!({"model": "hv-pci unset node", "holds_for": [".. v6.19"]}))
    );
    let after = json(&[arm, "8:name=eth,managed=no,hv_pci=yes", "--kernel", "7.0"]);
    assert_eq!(cpus(&after), [0, 1, 2, 3, 0, 1, 2, 3]);
    assert_eq!(
        rule(&after),
        Some(serde_json::json!({"model": "hv-pci node 0", "holds_for": ["v7.0 .."]}))
    );
    // The newest release, as with no --kernel, and the link keeps the mark.
    let newest = json(&[arm, "8:name=eth,managed=no,hv_pci=yes"]);
    assert_eq!(cpus(&newest), cpus(&after));
    let spec: irqscope::scenario::spec::ScenarioSpec =
        irqscope::scenario::permalink::decode(newest["permalink"].as_str().unwrap()).unwrap();
    assert!(spec.devices[0].hv_pci && spec.devices[0].node.is_none());
    let text = irqscope(&["simulate", arm, "8:name=eth,managed=no,hv_pci=yes"]);
    assert!(words(&text).contains("managed=no,hv_pci=yes"), "{text}");
    // Not marked: NUMA_NO_NODE under 7.0 too, and no rule named.
    let plain = json(&[arm, "8:name=eth,managed=no", "--kernel", "7.0"]);
    assert_eq!(cpus(&plain), cpus(&before));
    assert_eq!(rule(&plain), None);
    // x86: the bus data already gave node 0 before v7.0.
    let x86 = json(&[
        "cpus:name=hv;nodes=0-3+4-7",
        "8:name=eth,managed=no,hv_pci=yes",
        "--kernel",
        "6.12",
    ]);
    assert_eq!(rule(&x86), None);
    let (code, _, err) = crate::common::cli::irqscope_output(&["simulate", arm, "8:hv_pci=maybe"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("hv_pci is yes or no"), "{err}");
}
