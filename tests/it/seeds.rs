//! The figures of the seed threads (`../shared/seeds/`), reproduced through the CLI's text
//! output, as a reviewer would run them.

use crate::common;
use common::cli::irqscope;

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
    for variant in ["rotation", "rotation-v1r", "rotation-ohcl"] {
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
