//! The figures of the seed threads (`../shared/seeds/`), reproduced through the CLI's text
//! output, as a reviewer would run them.

use crate::common;
use common::cli::irqscope;
use irqscope::scenario::spec::{parse_device_token, parse_probe, ScenarioSpec, TopologyRef};

/// Managed (queue) IRQs per CPU id, from the library (the counter sweeps below run hundreds of
/// scenarios; the figures themselves are checked through the CLI).
fn managed_per_cpu(
    preset: &str,
    devices: &str,
    variant: &str,
    effective: &str,
    counter: u32,
    probe: Option<&str>,
) -> Vec<u32> {
    let spec = ScenarioSpec {
        variant: variant.into(),
        effective: effective.into(),
        spread_counter: counter,
        probe: probe.map(|p| parse_probe(p).unwrap().name().to_string()),
        ..ScenarioSpec::new(
            TopologyRef::Preset(preset.into()),
            vec![parse_device_token(devices).unwrap()],
        )
    };
    let scenario = spec.resolve(irqscope::catalogue::get).unwrap();
    let outcome = irqscope::scenario::run(&scenario);
    irqscope::metrics::per_cpu(&scenario, &outcome)
        .iter()
        .map(|c| c.managed_irqs)
        .collect()
}

/// How many CPUs take each count of IRQs, ascending by count, zero excluded.
fn histogram(loads: &[u32]) -> Vec<(u32, usize)> {
    let mut h = std::collections::BTreeMap::new();
    for &n in loads.iter().filter(|&&n| n > 0) {
        *h.entry(n).or_insert(0) += 1;
    }
    h.into_iter().collect()
}

/// Kelley's v1 figures (seed 000), as he states them.
fn l48s_v1_figure(loads: &[u32]) -> bool {
    loads.iter().min() == Some(&3) && loads.iter().max() == Some(&5)
}
fn d16_v1_figure(loads: &[u32]) -> bool {
    histogram(loads) == [(1, 4), (2, 4)]
}
/// "spread across 26 vCPUs (13 in each NUMA node) with counts ranging from 1 to 6 [...] the
/// pattern for each NUMA node is the same" (nodes 0-47 and 48-95).
fn d96_v1_figure(loads: &[u32]) -> bool {
    let (n0, n1) = loads.split_at(48);
    let used = |n: &[u32]| n.iter().filter(|&&x| x > 0).count();
    let h = histogram(loads);
    used(n0) == 13
        && used(n1) == 13
        && h.first().map(|x| x.0) == Some(1)
        && h.last().map(|x| x.0) == Some(6)
        && histogram(n0) == histogram(n1)
}

/// `rotation-v1` on a preset from a given counter: the managed IRQs per CPU.
fn v1_run(
    preset: &'static str,
    effective: &'static str,
    device: &'static str,
    probe: Option<&'static str>,
) -> impl Fn(u32) -> Vec<u32> {
    move |c| managed_per_cpu(preset, device, "rotation-v1", effective, c, probe)
}

/// The counter starts (0..n) at which `figure` comes out, with consecutive I/O offsets from the
/// start (no admin tag set call) or under a probe order with `driver=nvme` from that counter.
fn starts(n: u32, figure: impl Fn(&[u32]) -> bool, run: impl Fn(u32) -> Vec<u32>) -> Vec<u32> {
    (0..n).filter(|&c| figure(&run(c))).collect()
}

/// The report's summary section, with wrapped lines joined back.
fn summary(text: &str) -> String {
    let block: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "Summary")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    let mut out = String::new();
    for line in block {
        if line.starts_with("    ") {
            let t = line.trim();
            if !out.ends_with(',') {
                out.push(' ');
            }
            out.push_str(t);
        } else {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(line.trim());
        }
    }
    out
}

/// The summary of `rotation-v1` on a preset under a probe order, through the CLI as /seeds'
/// command runs it.
fn v1_summary(preset: &str, devices: &str, effective: &str, probe: &str) -> String {
    summary(&irqscope(&[
        "simulate",
        preset,
        devices,
        "--variant",
        "rotation-v1",
        "--effective",
        effective,
        "--probe",
        probe,
    ]))
}

fn assert_has(text: &str, want: &str) {
    assert!(text.contains(want), "missing {want:?} in:\n{text}");
}

/// Seed 000: L96as_v4, 6 NVMe x 62 I/O queues + admin: "28 CPUs (34-47, 82-95) served all 6
/// disks and the other 68 served only 3".
#[test]
fn seed000_l96as_v4_before() {
    let text = irqscope(&[
        "simulate",
        "azure-l96as-v4",
        "6x62:name=nvme,pre=1",
        "--variant",
        "pre-cluster",
        "--effective",
        "x86-matrix",
    ]);
    let s = summary(&text);
    assert_has(
        &s,
        "28 CPUs (34-47,82-95) serve all 6 devices; 68 CPUs (0-33,48-81) serve 3",
    );
    assert_has(&s, "hot (single-CPU) IRQs: 168 on 28 CPUs");
}

/// Seed 000, after the rotation: "no CPU serves more than 4 disks, and all 96 CPUs are used".
#[test]
fn seed000_l96as_v4_after() {
    for variant in ["rotation", "rotation-v1", "rotation-v1r", "rotation-ohcl"] {
        let s = summary(&irqscope(&[
            "simulate",
            "azure-l96as-v4",
            "6x62:name=nvme,pre=1",
            "--variant",
            variant,
        ]));
        assert_has(&s, "devices/CPU: max 4");
        assert_has(&s, "every online CPU takes an IRQ");
    }
}

/// Seed 000's per-CPU "after" examples ("CPU 0: 4 disks CPU 2: 4 disks CPU 47: 4 disks CPU 1: 4
/// disks CPU 3: 4 disks") need the counter at 4 under `rotation` (/seeds says so): they hold at
/// the starts with start mod 24 in 4..=20 and at no other, every other variant of the patch alike.
#[test]
fn seed000_l96as_v4_after_per_cpu_examples_need_counter_4() {
    let disks = |variant: &str, counter: u32| -> Vec<u32> {
        let spec = ScenarioSpec {
            variant: variant.into(),
            spread_counter: counter,
            ..ScenarioSpec::new(
                TopologyRef::Preset("azure-l96as-v4".into()),
                vec![parse_device_token("6x62:name=nvme,pre=1").unwrap()],
            )
        };
        let scenario = spec.resolve(irqscope::catalogue::get).unwrap();
        let per_cpu = irqscope::metrics::per_cpu(&scenario, &irqscope::scenario::run(&scenario));
        [0, 1, 2, 3, 47].iter().map(|&c| per_cpu[c].managed_devices).collect()
    };
    assert_eq!(disks("rotation", 0), [3, 4, 3, 4, 4]);
    // Through the permalink /seeds links to, as a reader opens it.
    let text = irqscope(&[
        "simulate",
        "azure-l96as-v4",
        "6x62:name=nvme,pre=1",
        "--variant",
        "rotation",
        "--counter",
        "4",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for cpu in [0, 1, 2, 3, 47] {
        assert_eq!(v["per_cpu"][cpu]["managed_devices"], 4, "CPU {cpu}");
    }
    // The starts that give the examples: start mod 24 in 4..=20 (both edges and the wrap).
    let holds: Vec<u32> = (0..=28).filter(|&c| disks("rotation", c) == [4, 4, 4, 4, 4]).collect();
    let stated: Vec<u32> = (0..=28).filter(|c| (4..=20).contains(&(c % 24))).collect();
    assert_eq!(holds, stated);
    for c in [3, 4, 20, 21] {
        assert_eq!(
            disks("rotation-v1", c) == [4, 4, 4, 4, 4],
            (4..=20).contains(&c),
            "rotation-v1 counter {c}"
        );
    }
}

/// Seed 000, reviewer's configuration 1: L48s v2, 6 x 32 queues. Existing code: 32 vCPUs get 3
/// IRQs and 16 get 6; with the (v1) patch 3..5; nodes 36/36/30x4 in both.
#[test]
fn seed000_l48s_v2() {
    let before = summary(&irqscope(&[
        "simulate",
        "azure-l48s-v2",
        "6x32:name=nvme,pre=1",
        "--variant",
        "pre-cluster",
    ]));
    assert_has(
        &before,
        "32 CPUs (0-3,8-13,16-19,24-29,32-37,40-45) get 3 IRQs; 16 CPUs (4-7,14-15,20-23,30-31,38-39,46-47) get 6",
    );
    assert_has(&before, "per node: 36 30 36 30 30 30 IRQs (fair share 32)");
    let v1 = summary(&irqscope(&[
        "simulate",
        "azure-l48s-v2",
        "6x32:name=nvme,pre=1",
        "--variant",
        "rotation-v1r",
    ]));
    assert_has(&v1, "IRQs/CPU: max 5 min 3 (ideal max 4)");
    assert_has(&v1, "per node: 36 30 36 30 30 30 IRQs");
    // The published v1 code with the NVMe admin tag sets, probed in parallel (/seeds' link).
    let l48 = "azure-l48s-v2";
    let posted = v1_summary(l48, "6x32:name=nvme,pre=1,driver=nvme", "x86-matrix", "parallel");
    assert_has(&posted, "IRQs/CPU: max 5 min 3 (ideal max 4)");
    assert_has(&posted, "per node: 36 30 36 30 30 30 IRQs");
    let sequential = v1_summary(l48, "6x32:name=nvme,pre=1,driver=nvme", "x86-matrix", "sequential");
    assert_has(&sequential, "IRQs/CPU: max 6 min 3 (ideal max 4)");
    let newest = summary(&irqscope(&[
        "simulate",
        "azure-l48s-v2",
        "6x32:name=nvme,pre=1",
        "--variant",
        "rotation",
    ]));
    assert_has(&newest, "per node: 32 32 32 32 32 32 IRQs");
}

/// Seed 000, configuration 2: D16plds v6 (arm64), 2 x 6 queues: existing code gives 2 IRQs to
/// each of 6 vCPUs; with the v1 patch 4 vCPUs have 2 and 4 have 1.
#[test]
fn seed000_d16plds_v6() {
    let before = summary(&irqscope(&[
        "simulate",
        "azure-d16plds-v6",
        "2x6:name=nvme,pre=1",
        "--variant",
        "pre-cluster",
        "--effective",
        "first-cpu",
    ]));
    assert_has(&before, "6 CPUs (0,3,6,9,12,14) get 2");
    let v1 = summary(&irqscope(&[
        "simulate",
        "azure-d16plds-v6",
        "2x6:name=nvme,pre=1",
        "--variant",
        "rotation-v1r",
        "--effective",
        "first-cpu",
    ]));
    assert_has(&v1, "4 CPUs (11-14) get 1; 4 CPUs (0,3,6,9) get 2");
    // The published v1 code, the admin tag sets probed in parallel (/seeds' link).
    let d16 = "azure-d16plds-v6";
    let posted = v1_summary(d16, "2x6:name=nvme,pre=1,driver=nvme", "first-cpu", "parallel");
    assert_has(&posted, "4 CPUs (5-8) get 1; 4 CPUs (0,3,10,13) get 2");
}

/// Seed 000, configuration 3: D96plds v6, 6 x 14: existing code puts 6 IRQs on each of 14
/// vCPUs; with the v1 patch (counter at 2 when the disks probe) 26 vCPUs, 13 per node.
#[test]
fn seed000_d96plds_v6() {
    let before = summary(&irqscope(&[
        "simulate",
        "azure-d96plds-v6",
        "6x14:name=nvme,pre=1",
        "--variant",
        "pre-cluster",
        "--effective",
        "first-cpu",
    ]));
    assert_has(&before, "14 CPUs (0,7,14,21,28,35,42,48,55,62,69,76,83,90) get 6");
    let v1 = summary(&irqscope(&[
        "simulate",
        "azure-d96plds-v6",
        "6x14:name=nvme,pre=1",
        "--variant",
        "rotation-v1r",
        "--effective",
        "first-cpu",
        "--counter",
        "2",
    ]));
    assert_has(&v1, "70 online CPUs take no IRQ");
    assert_has(&v1, "IRQs/CPU: max 6 min 0");
    let d96 = "azure-d96plds-v6";
    let posted = v1_summary(d96, "6x14:name=nvme,pre=1,driver=nvme", "first-cpu", "parallel");
    assert_has(&posted, "70 online CPUs take no IRQ");
    assert_has(&posted, "IRQs/CPU: max 6 min 0");
}

/// The counter starts /seeds states for Kelley's v1 figures, against the published v1 code
/// (`rotation-v1`): with consecutive I/O offsets starting at `s`, L48s v2 gives 3..5 IRQs per
/// vCPU at every `s`, D16plds v6 gives "4 get 2, 4 get 1" iff `s mod 6` is in 0..=3, D96plds v6
/// gives "26 vCPUs, 13 per node" iff `s mod 7` is in 2..=6. Probed in parallel from counter `c`
/// the I/O offsets start at `c + controllers`; probed strictly one after another they are
/// `c+1, c+3, ...`, which gives 3..6 IRQs per vCPU on the L48s v2 and never the D16 figure.
#[test]
fn seed000_v1_figures_counter_starts_and_probe_order() {
    let l48 = |probe, device| v1_run("azure-l48s-v2", "x86-matrix", device, probe);
    let d16 = |probe, device| v1_run("azure-d16plds-v6", "first-cpu", device, probe);
    let d96 = |probe, device| v1_run("azure-d96plds-v6", "first-cpu", device, probe);
    let (l48_plain, l48_nvme) = ("6x32:name=nvme,pre=1", "6x32:name=nvme,pre=1,driver=nvme");
    let (d16_plain, d16_nvme) = ("2x6:name=nvme,pre=1", "2x6:name=nvme,pre=1,driver=nvme");
    let (d96_plain, d96_nvme) = ("6x14:name=nvme,pre=1", "6x14:name=nvme,pre=1,driver=nvme");
    let all: Vec<u32> = (0..24).collect();
    let modulo = |n: u32, m: u32, r: std::ops::RangeInclusive<u32>| -> Vec<u32> {
        (0..n).filter(|c| r.contains(&(c % m))).collect()
    };

    // Consecutive offsets from s (no admin call): the stated ranges.
    assert_eq!(starts(24, l48s_v1_figure, l48(None, l48_plain)), all);
    assert_eq!(starts(24, d16_v1_figure, d16(None, d16_plain)), modulo(24, 6, 0..=3));
    assert_eq!(starts(28, d96_v1_figure, d96(None, d96_plain)), modulo(28, 7, 2..=6));

    // Parallel probing: the admin tag sets take c .. c+k-1, the disks start at c + k.
    let shifted = |n: u32, k: u32, m: u32, r: std::ops::RangeInclusive<u32>| -> Vec<u32> {
        (0..n).filter(|c| r.contains(&((c + k) % m))).collect()
    };
    assert_eq!(starts(24, l48s_v1_figure, l48(Some("parallel"), l48_nvme)), all);
    assert_eq!(
        starts(24, d16_v1_figure, d16(Some("parallel"), d16_nvme)),
        shifted(24, 2, 6, 0..=3)
    );
    assert_eq!(
        starts(28, d96_v1_figure, d96(Some("parallel"), d96_nvme)),
        shifted(28, 6, 7, 2..=6)
    );

    // Strictly sequential probing: 3..6 IRQs per vCPU on the L48s v2, never the D16 figure.
    for c in 0..24 {
        let loads = l48(Some("sequential"), l48_nvme)(c);
        assert_eq!(
            (loads.iter().min(), loads.iter().max()),
            (Some(&3), Some(&6)),
            "counter {c}"
        );
    }
    assert_eq!(
        starts(24, d16_v1_figure, d16(Some("sequential"), d16_nvme)),
        Vec::<u32>::new()
    );
}

/// `/seeds` states those ranges and probe orders beside the figures, and none of the wrong
/// words it used to carry.
#[tokio::test]
async fn seeds_page_states_counter_starts_and_probe_orders() {
    let r = common::http::get("/seeds").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let text = r.body.replace("&#39;", "'").replace("&quot;", "\"");
    for want in [
        "s mod 6 in 0-3",
        "s mod 7 in 2-6",
        "start mod 24 in 4-20",
        "need --counter 4",
        "Strictly sequential probing gives 3 to 6 IRQs per vCPU",
        "Strictly sequential probing never gives this figure",
        "--probe parallel",
        "--probe sequential",
        "driver=nvme",
        "none of its revisions is merged",
        "One cluster of all 16 vCPUs, no SMT",
        "0 1 2 1 2",
        "0 0 1 2 3",
        "5316394b1752",
        "mana_irq_setup_linear()",
    ] {
        assert!(text.contains(want), "/seeds lacks {want:?}");
    }
    for gone in [
        "SMT-pair clusters",
        "merged patch",
        "look alike",
        "clusters are SMT pairs",
    ] {
        assert!(!text.contains(gone), "/seeds still says {gone:?}");
    }
}

/// Seed 002: Core Ultra 7 265K, 20 CPUs, IRQ-CPU 1:1. The cluster-aware code reorders the
/// P-cores (queue 0 lands on CPU 1, not CPU 0): heapsort over single-CPU clusters.
#[test]
fn seed002_core_ultra_order() {
    let vector = |variant: &str, index: &str| -> String {
        let text = irqscope(&[
            "simulate",
            "intel-core-ultra-7-265k",
            "20:name=nvme0,pre=1",
            "--variant",
            variant,
            "--vectors",
        ]);
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(index) && l.contains("yes"))
            .unwrap()
            .to_string();
        line.split_whitespace().last().unwrap().to_string()
    };
    assert_eq!(vector("pre-cluster", "1"), "0");
    let cluster: Vec<String> = (1..=8).map(|i| vector("cluster", &i.to_string())).collect();
    assert_eq!(cluster, ["1", "4", "0", "5", "6", "7", "3", "2"]);
}

/// Seed 004: 72 CPUs (2 x 18 x 2), 64 queues: v4.10's mapper leaves 28 queues unmapped; the fix
/// (fe631457, v4.13) maps all 64.
#[test]
fn seed004_unmapped_hwqs() {
    let before = irqscope(&[
        "blk-mq",
        "xeon-2s-18c-smt2",
        "--queues",
        "64",
        "--mapper",
        "legacy-v4.10",
    ]);
    assert_has(&before, "36 of 64 queues have CPUs; unmapped queues:");
    let after = irqscope(&[
        "blk-mq",
        "xeon-2s-18c-smt2",
        "--queues",
        "64",
        "--mapper",
        "legacy-v4.13",
    ]);
    assert_has(&after, "64 of 64 queues have CPUs\n");
}

/// The report's first lines carry a command that reproduces the same report.
#[test]
fn report_command_reproduces_itself() {
    let text = irqscope(&[
        "simulate",
        "azure-l48s-v2",
        "6x32:name=nvme,pre=1",
        "3:name=nic,managed=no",
        "--variant",
        "rotation",
        "--counter",
        "7",
    ]);
    let cmd: String = text
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("  $") || l.starts_with("     "))
        .map(|l| {
            l.trim_start_matches("  $")
                .trim()
                .trim_end_matches('\\')
                .trim()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join(" ");
    let words: Vec<&str> = cmd.split_whitespace().collect();
    assert_eq!(words[0], "irqscope");
    assert_eq!(irqscope(&words[1..]), text);
}

/// Every report line fits a mail reply where the data allows (cpulists may not).
#[test]
fn report_fits_72_columns() {
    let text = irqscope(&["simulate", "azure-l96as-v4", "6x62:name=nvme,pre=1", "--vectors"]);
    for line in text.lines() {
        assert!(line.len() <= 72, "{} columns: {line}", line.len());
    }
}

/// Seed 001: 4 vCPUs (2 cores), 5 MANA IRQs. With the pre-existing load the spec names
/// ([0,1,1,1]) the unpatched driver lands 0,0,2,0,3 and the patched one 0,0,1,2,3, the tables of
/// the posting; booting with irqaffinity=0 explains the same table without any pre-load.
#[test]
fn seed001_mana_tables() {
    let text = irqscope(&["mana", "azure-4vcpu-smt2", "--load", "0,1,1,1"]);
    assert_has(&text, "effective CPUs   unpatched: 0 0 2 0 3\n");
    assert_has(&text, "                 patched:   0 0 1 2 3\n");
    assert_has(&text, "queue IRQs/CPU   unpatched: 2 0 1 1 (max-min 2)");
    let boot = irqscope(&["mana", "azure-4vcpu-smt2", "--irqaffinity", "0"]);
    assert_has(&boot, "effective CPUs   unpatched: 0 0 2 0 3\n");
    // An idle machine does not give the posted table.
    let idle = irqscope(&["mana", "azure-4vcpu-smt2"]);
    assert_has(&idle, "effective CPUs   unpatched: 0 1 2 1 2\n");
}

/// Seed 003: on the diameter-3 matrix, upstream splits the bare pair on node 1; patches 1+2
/// split it only once noise appears; 1+2+3 keep it.
#[test]
fn seed003_sched_story() {
    let verdict = |noise: &str, variant: &str| -> String {
        let text = irqscope(&["sched", "arm64-4node-diameter3", "--pair-node", "1", "--noise", noise]);
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(variant))
            .unwrap();
        line[10..31].trim().to_string()
    };
    assert_eq!(verdict("0", "upstream"), "SPLITS the pair");
    assert_eq!(verdict("0", "p12"), "keeps the pair");
    assert_eq!(verdict("1", "p12"), "SPLITS the pair");
    assert_eq!(verdict("2", "p12"), "SPLITS the pair");
    for noise in ["0", "1", "2"] {
        assert_eq!(verdict(noise, "p123"), "keeps the pair");
    }
}

/// Seed 000 as distributions on `/seeds`: for each machine and rotation revision, the share
/// of boots in which no CPU serves more than 4 disks and the worst CPU's histogram equal a
/// count made here, every permutation of the disks (as distinct indexes, so all 720 orders
/// of six disks run) at every counter start 0..23, each an ordinary fixed-order scenario.
#[test]
fn seed_000_distributions_match_an_enumeration() {
    use irqscope::render::view::seeds::{
        SeedsView, CLAIM_DEVICES_PER_CPU_MAX, ROTATION_REVISIONS, SEED_000_MACHINES, SEED_COUNTER_TO,
    };
    use std::collections::BTreeMap;
    let view = SeedsView::new().unwrap();
    assert_eq!(
        view.distributions.len(),
        SEED_000_MACHINES.len() * ROTATION_REVISIONS.len()
    );
    let mut claim_differs = false;
    let cases = SEED_000_MACHINES
        .iter()
        .flat_map(|m| ROTATION_REVISIONS.iter().map(move |v| (*m, *v)));
    for ((m, variant), shown) in cases.zip(view.distributions) {
        let (machine, preset, disks, effective, parallel) = m;
        assert_eq!((shown.machine, shown.variant), (machine, variant));
        let spec = ScenarioSpec {
            variant: shown.variant.into(),
            effective: effective.into(),
            probe: parallel.then(|| "parallel".to_string()),
            ..ScenarioSpec::new(
                TopologyRef::Preset(preset.into()),
                vec![parse_device_token(disks).unwrap()],
            )
        };
        let s = spec.resolve(irqscope::catalogue::get).unwrap();
        let (mut runs, mut claim) = (0u64, 0u64);
        let mut worst: BTreeMap<u32, u64> = BTreeMap::new();
        let indexes: Vec<usize> = (0..s.devices().len()).collect();
        for order in crate::orders::permutations(&indexes) {
            for counter in 0..=SEED_COUNTER_TO {
                let r = s.reordered(&order, counter);
                let m = irqscope::metrics::compute(&r, &irqscope::scenario::run(&r));
                runs += 1;
                claim += u64::from(m.devices_per_cpu_max <= CLAIM_DEVICES_PER_CPU_MAX);
                *worst.entry(m.irqs_per_cpu_max).or_default() += 1;
            }
        }
        assert_eq!(shown.runs, runs, "{machine} {}", shown.variant);
        assert_eq!(shown.claim_runs, claim, "{machine} {}", shown.variant);
        assert_eq!(shown.worst_irqs_per_cpu, worst, "{machine} {}", shown.variant);
        claim_differs |= claim != runs;
    }
    assert!(claim_differs, "a machine where the claim fails in some boots");
    // The text twin says each share.
    let text = view.text_report("");
    assert!(
        text.contains("L96as v4, 6 x 62 under rotation: the claim holds in 100.0% of 17280"),
        "{text}"
    );
}
