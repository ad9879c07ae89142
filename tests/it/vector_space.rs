//! The x86 vector space through the CLI and the HTTP twins: ENOSPC named with its device,
//! vector and stage; boot parameters (`irqaffinity=`, `isolcpus=managed_irq`, `nohz_full=`,
//! held vectors) changing exactly what the kernel changes; old permalinks and reports unchanged.

use crate::common::cli::irqscope;
use crate::common::http::get;
use irqscope::scenario::permalink;
use irqscope::scenario::spec::ScenarioSpec;
use serde_json::Value;
use std::process::Command;

fn json(args: &[&str]) -> Value {
    let mut a = vec!["simulate"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--format", "json"]);
    serde_json::from_str(&irqscope(&a)).unwrap()
}

fn text(args: &[&str]) -> String {
    let mut a = vec!["simulate"];
    a.extend_from_slice(args);
    irqscope(&a)
}

fn effective(v: &Value, device: usize) -> Vec<Value> {
    v["devices"][device]["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["effective_cpu"].clone())
        .collect()
}

/// Vectors a device may get per CPU on this q35-like VM under the newest release: the window
/// 0x20..0xeb (FIRST_SYSTEM_VECTOR is POSTED_MSI_NOTIFICATION_VECTOR from v6.10) less
/// IA32_SYSCALL_VECTOR and the legacy PIC's cascade (lapic_assign_system_vectors()).
const PER_CPU: u64 = 0xeb - 0x20 - 2;

/// 800 non-managed vectors on 2 CPUs of 201 vectors each: irq_matrix_alloc() (via
/// assign_irq_vector_any_locked()'s last search, all online CPUs) answers -ENOSPC at the 403rd.
#[test]
fn exhausting_cpu_0_names_the_failing_device_and_vector() {
    assert_eq!(PER_CPU, 201);
    let args = ["vm-2vcpu-smt2", "100x8:managed=no"];
    let t = text(&args);
    assert!(t.contains("ENOSPC"), "{t}");
    assert!(t.contains("dev50 vector 2 (non-managed) fails at allocation"), "{t}");
    // The summary says it too, with the count and why a CPU has that many.
    let words = t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("ENOSPC: 398 vectors of 50 devices got none, first dev50 vector 2; 201 vectors per CPU (window 0x20-0xea less IA32_SYSCALL_VECTOR (0x80) and the legacy PIC's cascade (0x32))"),
        "{t}"
    );
    assert!(t.contains("irq_matrix_alloc()"), "{t}");
    assert!(
        t.contains("is not modelled"),
        "the out-of-scope sentence is beside the warning: {t}"
    );
    let v = json(&args);
    let vs = &v["vector_space"];
    let first = &vs["first_failure"];
    assert_eq!(
        (
            first["device"].as_str(),
            first["vector"].as_u64(),
            first["stage"].as_str(),
            first["errno"].as_str()
        ),
        (Some("dev50"), Some(2), Some("allocation"), Some("ENOSPC"))
    );
    assert_eq!(vs["per_cpu"][0]["used"], PER_CPU);
    assert_eq!(vs["per_cpu"][0]["free"], 0);
    assert_eq!(vs["failures"], 800 - 2 * PER_CPU);
    assert_eq!(v["metrics"]["vectors_failed"], 800 - 2 * PER_CPU);
    assert_eq!(
        v["metrics"]["vectors_shut_down"], 0,
        "refused vectors are not shut down"
    );
    // Never more vectors on a CPU than its space holds.
    let on0 = effective(&v, 0).len();
    assert_eq!(on0, 8);
    let placed: usize = (0..100)
        .map(|d| effective(&v, d).iter().filter(|c| c.as_u64() == Some(0)).count())
        .sum();
    assert_eq!(placed as u64, PER_CPU);
    // The count of v6.8 .. v6.9 (0xec window, no move-cleanup vector) is one more.
    let v = json(&["vm-2vcpu-smt2", "100x8:managed=no", "--kernel", "6.8"]);
    assert_eq!(v["vector_space"]["per_cpu"][0]["used"], PER_CPU + 1);
}

/// irq_matrix_reserve_managed(): one reservation per CPU of each managed mask; the 202nd
/// single-queue device (mask 0-1) finds CPU 0 full at reservation time.
#[test]
fn managed_reservation_fails_on_the_first_full_cpu() {
    let v = json(&["vm-2vcpu-smt2", "250x1"]);
    let first = &v["vector_space"]["first_failure"];
    assert_eq!(first["device"], format!("dev{PER_CPU}"));
    assert_eq!(first["stage"], "reservation");
    assert_eq!(first["cpu"], 0);
    assert_eq!(first["managed"], true);
    assert!(first["message"]
        .as_str()
        .unwrap()
        .contains("irq_matrix_reserve_managed()"));
}

/// The first line of a text report's summary.
fn summary_head(report: &str) -> String {
    let mut lines = report.lines().skip_while(|l| *l != "Summary").skip(1);
    let mut head = lines
        .next()
        .unwrap_or_else(|| panic!("no summary: {report}"))
        .trim()
        .to_string();
    // Its continuation lines, indented deeper.
    for l in lines.take_while(|l| l.starts_with("    ")) {
        head.push(' ');
        head.push_str(l.trim());
    }
    head
}

/// The text a reader sees in the element `id` of a page (up to its closing tag `end`).
fn element_text(html: &str, id: &str, end: &str) -> String {
    let start = html.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no #{id}"));
    let body = &html[start..];
    let body = &body[body.find('>').unwrap() + 1..];
    let body = &body[..body.find(end).unwrap()];
    crate::common::http::plain(body).replace("&#39;", "'")
}

/// A refused allocation is the first thing every verdict says, above loads that are only what
/// was placed without it: the text twin's summary opens with it (-EINVAL from alloc_descs(),
/// -ENOSPC from the matrix), the page's headline and a compare's start with it.
#[tokio::test]
async fn a_failed_allocation_leads_the_verdict() {
    let einval = text(&["vm-8vcpu-smt2", "16:name=q,pre=1", "--kernel", "6.12"]);
    let head = summary_head(&einval);
    assert!(
        head.starts_with("EINVAL: q: MSI-X allocation fails with -EINVAL: alloc_descs() refuses vector 9"),
        "{einval}"
    );
    let enospc = text(&["vm-2vcpu-smt2", "100x8:managed=no"]);
    assert!(
        summary_head(&enospc).starts_with("ENOSPC: 398 vectors of 50 devices got none"),
        "{enospc}"
    );
    // Nothing failed: the summary opens with the devices line, as before.
    let fine = text(&["vm-8vcpu-smt2", "4:name=q,pre=1"]);
    assert!(
        summary_head(&fine).starts_with("4 CPUs (1,3,5,7) serve 1 device"),
        "{fine}"
    );

    let page = get("/?preset=vm-8vcpu-smt2&devices=16:name%3Dq,pre%3D1&kernel=6.12").await;
    let verdict = element_text(&page.body, "verdict", "</h2>");
    assert!(
        verdict.starts_with(
            "q's MSI-X allocation fails with -EINVAL (vector 9's affinity mask is empty); \
             of the vectors placed: max 0 = ideal"
        ),
        "{verdict}"
    );
    let page = get("/?preset=vm-2vcpu-smt2&devices=100x8:managed%3Dno").await;
    let verdict = element_text(&page.body, "verdict", "</h2>");
    assert!(
        verdict
            .starts_with("398 vectors of 50 devices get none (-ENOSPC), first dev50 vector 2; of the vectors placed: "),
        "{verdict}"
    );
    let page =
        get("/compare?preset=vm-8vcpu-smt2&devices=16:name%3Dq,pre%3D1&kernel=6.12&a=pre-cluster&b=cluster").await;
    let verdict = element_text(&page.body, "compare-verdict", "</h2>");
    assert!(
        verdict.starts_with("A and B: q's MSI-X allocation fails with -EINVAL"),
        "{verdict}"
    );
    // The compare twin names it before its table.
    let compare = irqscope(&[
        "compare",
        "vm-8vcpu-smt2",
        "16:name=q,pre=1",
        "--kernel",
        "6.12",
        "--a",
        "pre-cluster",
        "--b",
        "cluster",
    ]);
    let fails = compare
        .find("fails A:  q's MSI-X allocation fails")
        .unwrap_or_else(|| panic!("{compare}"));
    assert!(fails < compare.find("IRQs/CPU max").unwrap(), "{compare}");
}

/// Seed 000's L96as_v4 scenario never runs out: no block, no JSON key, no ENOSPC.
#[test]
fn seed_000_does_not_exhaust() {
    let args = ["azure-l96as-v4", "6x62:name=nvme,pre=1", "--variant", "pre-cluster"];
    let t = text(&args);
    assert!(!t.contains("ENOSPC") && !t.contains("Vector space"), "{t}");
    assert!(json(&args).get("vector_space").is_none());
    // Asked for, the table says every vector got one.
    let mut a = args.to_vec();
    a.push("--vector-space");
    let t = text(&a);
    assert!(t.contains("ENOSPC:   none"), "{t}");
    let v = json(&a);
    assert!(v["vector_space"]["first_failure"].is_null());
    assert_eq!(v["vector_space"]["per_cpu"].as_array().unwrap().len(), 96);
}

/// irq_do_set_affinity() (kernel/irq/manage.c) with HK_TYPE_MANAGED_IRQ: the programmed mask
/// is mask ∩ housekeeping when that holds an online CPU, else the whole mask. The managed
/// masks (and so the blk-mq map) do not change; only effective CPUs do.
#[test]
fn isolcpus_managed_irq_moves_effective_cpus_not_masks() {
    let base = ["vm-8vcpu-smt2", "4:blkmq=irq", "--variant", "pre-cluster"];
    let plain = json(&base);
    let mut a = base.to_vec();
    a.extend_from_slice(&["--isolcpus", "managed_irq,1-5"]);
    let iso = json(&a);
    assert_eq!(plain["devices"][0]["blk_mq_map"], iso["devices"][0]["blk_mq_map"]);
    let masks = |v: &Value| -> Vec<Value> {
        v["devices"][0]["vectors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["mask"].clone())
            .collect()
    };
    assert_eq!(masks(&plain), masks(&iso));
    assert_eq!(masks(&iso), ["0-1", "2-3", "4-5", "6-7"]);
    // Without isolation ties go to the highest CPU of each pair.
    assert_eq!(effective(&plain, 0), [1, 3, 5, 7]);
    // Housekeeping CPUs are 0, 6, 7: {0,1} → 0; {2,3} and {4,5} have none and keep their
    // CPU; {6,7} already fires on a housekeeping CPU.
    assert_eq!(effective(&iso, 0), [0, 3, 5, 7]);
    // The moved vector's first allocation on CPU 1 was freed at the end of the probe.
    assert_eq!(iso["vector_space"]["per_cpu"][1]["used"], 0);
    assert_eq!(iso["vector_space"]["per_cpu"][0]["used"], 1);
    // nohz_full= sets HK_TYPE_KERNEL_NOISE, which the IRQ core does not read.
    let mut n = base.to_vec();
    n.extend_from_slice(&["--nohz-full", "1-5"]);
    assert_eq!(effective(&json(&n), 0), effective(&plain, 0));
}

/// irq_affinity_setup() (kernel/irq/irqdesc.c) adds the boot CPU; non-managed interrupts then
/// start within irq_default_affinity (irq_setup_affinity()), and the pre vector's mask is that
/// mask (irq_create_affinity_masks() copies irq_default_affinity).
#[test]
fn irqaffinity_is_the_default_affinity_plus_the_boot_cpu() {
    let v = json(&["vm-8vcpu-smt2", "6:managed=no", "2:pre=1", "--irqaffinity", "4-7"]);
    for c in effective(&v, 0) {
        assert!([0, 4, 5, 6, 7].contains(&c.as_u64().unwrap()), "{c}");
    }
    assert_eq!(v["devices"][0]["vectors"][0]["mask"], "0,4-7");
    assert_eq!(v["devices"][1]["vectors"][0]["mask"], "0,4-7");
    assert_eq!(v["devices"][1]["vectors"][0]["managed"], false);
    // Managed vectors are untouched by irqaffinity=.
    assert_eq!(v["devices"][1]["vectors"][1]["mask"], "0-3");
    assert_eq!(v["scenario"]["irqaffinity"], "4-7");
}

/// Held vectors count as allocated: the admin (non-managed) vector goes to the CPU with the
/// most available vectors, as the lab's captures show it must.
#[test]
fn held_vectors_steer_non_managed_vectors() {
    assert_eq!(effective(&json(&["vm-2vcpu-smt2", "1:managed=no"]), 0), [0]);
    let v = json(&["vm-2vcpu-smt2", "1:managed=no", "--vectors-held", "0:5"]);
    assert_eq!(effective(&v, 0), [1]);
    assert_eq!(v["vector_space"]["per_cpu"][0]["used"], 5);
    assert_eq!(v["vector_space"]["per_cpu"][0]["free"], PER_CPU - 5);
}

/// The printed command line carries the new flags, and running it gives the same report.
#[test]
fn the_command_line_reproduces_boot_parameters() {
    let t = text(&[
        "vm-8vcpu-smt2",
        "4:pre=1",
        "--irqaffinity",
        "4-7",
        "--isolcpus",
        "managed_irq,1-5",
        "--nohz-full",
        "6",
        "--vectors-held",
        "0:3,1-2:1",
    ]);
    let mut cmd = String::new();
    for line in t.lines().skip(1) {
        let Some(rest) = line
            .trim_start()
            .strip_prefix("$ ")
            .or_else(|| (!cmd.is_empty()).then_some(line.trim()))
        else {
            continue;
        };
        cmd.push_str(rest.trim_end_matches('\\'));
        cmd.push(' ');
        if !line.ends_with('\\') {
            break;
        }
    }
    for flag in [
        "--irqaffinity 4-7",
        "--isolcpus managed_irq,1-5",
        "--nohz-full 6",
        "--vectors-held 0:3,1-2:1",
    ] {
        assert!(cmd.contains(flag), "{flag} not in {cmd:?}");
    }
    let words: Vec<&str> = cmd.split_whitespace().skip(2).collect();
    assert_eq!(text(&words), t);
}

#[test]
fn bad_boot_parameters_are_one_line_errors() {
    for (args, want) in [
        (&["--vectors-held", "0:500"][..], "more than the 201 vectors"),
        (&["--vectors-held", "0-9:1"][..], "below 2"),
        (&["--vectors-held", "0:1,0:2"][..], "given twice"),
        (&["--isolcpus", "bogus,1"][..], "unknown flag"),
        (&["--irqaffinity", "9"][..], "irqaffinity"),
        (&["--nohz-full", "x"][..], "nohz_full"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_irqscope"))
            .args(["simulate", "vm-2vcpu-smt2", "2"])
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr:?} lacks {want:?}");
    }
}

/// Links written before the boot fields decode and encode byte for byte, and a spec without
/// them serializes without them.
#[test]
fn old_permalinks_are_unchanged() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let link = std::fs::read_to_string(dir.join("permalink-before-mana.txt")).unwrap();
    let link = link.trim();
    let spec: ScenarioSpec = permalink::decode(link).unwrap();
    assert_eq!(spec.irqaffinity, None);
    assert_eq!(permalink::encode(&spec).unwrap(), link);
    let json = serde_json::to_string(&spec).unwrap();
    for key in ["irqaffinity", "isolcpus", "nohz_full", "vectors_held"] {
        assert!(!json.contains(key), "{key} in {json}");
    }
}

/// A link with boot fields round-trips and its twins show the vector space.
#[tokio::test]
async fn boot_fields_travel_in_permalinks() {
    let mut spec: ScenarioSpec = serde_json::from_value(serde_json::json!({
        "topology": "vm-2vcpu-smt2",
        "devices": [{"count": 100, "queues": 8, "managed": false}],
        "vectors_held": "0:3",
        "isolcpus": "managed_irq,1",
    }))
    .unwrap();
    let link = permalink::encode(&spec).unwrap();
    assert_eq!(permalink::decode::<ScenarioSpec>(&link).unwrap(), spec);
    let text = get(&format!("/s/{link}/text")).await;
    assert!(text.body.contains("--vectors-held 0:3"), "{}", text.body);
    assert!(text.body.contains("ENOSPC"), "{}", text.body);
    let page = get(&format!("/s/{link}")).await;
    assert!(page.body.contains("fails at allocation"), "the page lists the failure");
    let j: Value = serde_json::from_str(&get(&format!("/s/{link}/json")).await.body).unwrap();
    assert_eq!(j["vector_space"]["first_failure"]["errno"], "ENOSPC");
    assert_eq!(j["scenario"]["isolcpus"], "managed_irq,1");
    spec.vectors_held = Some("0:999".into());
    let bad = get(&format!("/s/{}", permalink::encode(&spec).unwrap())).await;
    assert!(bad.status.is_client_error(), "{}", bad.status);
}

/// The sweep's vector-space column: `vectors_failed` in CSV and JSON, and an ENOSPC line under
/// a placement that runs out (the text table stays at mail width). 250 single-queue devices
/// reserve on all 8 CPUs each; 201 fit under the newest release's vector window, as
/// `simulate` of the same machine and devices says (the two once differed: 203 and 201).
#[test]
fn the_sweep_counts_vectors_lost_to_enospc() {
    let args = [
        "sweep",
        "--topologies",
        "vm-8vcpu-smt2",
        "--mix",
        "big=250x1",
        "--variants",
        "cluster",
        "--counters",
        "0",
    ];
    let t = irqscope(&args);
    assert!(t.contains("ENOSPC: 49 vectors got none (counter 0)"), "{t}");
    let sim = irqscope(&["simulate", "vm-8vcpu-smt2", "250x1", "--variant", "cluster"]);
    assert!(sim.contains("ENOSPC: 49 vectors of 49 devices got none"), "{sim}");
    let mut a = args.to_vec();
    a.extend_from_slice(&["--format", "csv"]);
    let csv = irqscope(&a);
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = head.iter().position(|h| *h == "vectors_failed").unwrap();
    assert_eq!(lines.next().unwrap().split(',').nth(col), Some("49"));
    let mut a = args.to_vec();
    a.extend_from_slice(&["--format", "json"]);
    let v: Value = serde_json::from_str(&irqscope(&a)).unwrap();
    assert_eq!(v["rows"][0]["vectors_failed"], 49);
    // A sweep that never runs out has no such line.
    let t = irqscope(&[
        "sweep",
        "--topologies",
        "vm-8vcpu-smt2",
        "--mix",
        "big=4x1",
        "--variants",
        "cluster",
        "--counters",
        "0",
    ]);
    assert!(!t.contains("ENOSPC"), "{t}");
}

/// A device `alloc_descs()` refuses (-EINVAL: 16 queues on 8 CPUs under a numgrps release,
/// vector 9's mask empty) is its own line under the row, not counted among the vector
/// space's refusals; the JSON says how many of `vectors_failed` it holds.
#[test]
fn the_sweep_says_einval_apart_from_enospc() {
    let args = [
        "sweep",
        "--topologies",
        "vm-8vcpu-smt2",
        "--mix",
        "q=16:pre=1",
        "--variants",
        "pre-cluster",
        "--counters",
        "0",
        "--kernel",
        "6.12",
    ];
    let t = irqscope(&args);
    let flat = t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("EINVAL: alloc_descs() refused 17 vectors (counter 0): an empty managed mask"),
        "{t}"
    );
    assert!(!t.contains("ENOSPC"), "{t}");
    assert!(t.lines().all(|l| l.chars().count() <= 72), "{t}");
    let mut a = args.to_vec();
    a.extend_from_slice(&["--format", "json"]);
    let v: Value = serde_json::from_str(&irqscope(&a)).unwrap();
    assert_eq!(v["rows"][0]["vectors_failed"], 17);
    assert_eq!(v["rows"][0]["vectors_alloc_refused"], 17);
    // Under the newest release the same device is served: neither line, no such field.
    let t = irqscope(&args[..args.len() - 2]);
    assert!(!t.contains("EINVAL") && !t.contains("ENOSPC"), "{t}");
    let mut a = args[..args.len() - 2].to_vec();
    a.extend_from_slice(&["--format", "json"]);
    let v: Value = serde_json::from_str(&irqscope(&a)).unwrap();
    assert!(v["rows"][0].get("vectors_alloc_refused").is_none(), "{v}");
}

/// activate_reserved() → assign_irq_vector_any_locked(): with the default affinity (CPU 0,
/// irqaffinity=0) full, the wider searches find CPU 1, and the kernel warns "Affinity broken
/// due to vector space exhaustion" (the effective CPU is outside the affinity mask); no ENOSPC.
#[test]
fn a_full_affinity_mask_breaks_affinity_instead_of_failing() {
    let args = [
        "vm-2vcpu-smt2",
        "1:managed=no",
        "--irqaffinity",
        "0",
        "--vectors-held",
        "0:201",
    ];
    let v = json(&args);
    assert_eq!(effective(&v, 0), [1]);
    let vs = &v["vector_space"];
    assert!(vs["first_failure"].is_null());
    assert_eq!(vs["affinity_broken"][0]["device"], "dev0");
    let t = text(&args);
    let words = t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("Affinity broken due to vector space exhaustion"), "{t}");
    assert!(t.contains("ENOSPC:   none"), "{t}");
}

/// The real-kernel lab (Debian 6.1 and 6.12 in QEMU, controllers bound one at a time,
/// `../shared/lab/README.md`): with the vectors the guest's other interrupts hold (IO-APIC lines
/// with a chip, counted on their effective CPUs) the model puts every NVMe vector, admin
/// vectors included, on the CPU the kernel chose, and every queue vector's mask matches;
/// without them the admin vectors land elsewhere. (The admin vector's /proc mask is the
/// narrowed start-up target, so only its CPU is compared.)
#[test]
fn lab_captures_match_only_with_held_vectors() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/lab");
    for (config, kernel, sort) in [
        ("c1", "61", "heap-v5.1"),
        ("c1", "612", "heap-v6.11"),
        ("c2", "61", "heap-v5.1"),
        ("c2", "612", "heap-v6.11"),
        ("c3", "61", "heap-v5.1"),
        ("c3", "612", "heap-v6.11"),
        ("c5", "61", "heap-v5.1"),
        ("c5", "612", "heap-v6.11"),
    ] {
        let at = format!("{config}-{kernel}");
        let Ok(capture) = std::fs::read_to_string(root.join(format!("captures/{at}.txt"))) else {
            panic!("../shared/lab/captures/{at}.txt is missing: the lab lives in ../shared beside the checkout");
        };
        let field = |line: &str, key: &str| -> String {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{key}=")))
                .unwrap_or("")
                .to_string()
        };
        let queues: Vec<String> = field(capture.lines().next().unwrap(), "nvme")
            .split(',')
            .map(String::from)
            .collect();
        let mut held = std::collections::BTreeMap::<u32, u32>::new();
        // (vector name, mask for queue vectors, effective CPU)
        let mut want: Vec<(String, String, String)> = Vec::new();
        for line in capture
            .lines()
            .skip_while(|l| *l != "@section irq seq")
            .skip(1)
            .take_while(|l| !l.starts_with('@'))
        {
            let name = field(line, "name");
            if name.starts_with("nvme") {
                let mask = if name.ends_with("q0") {
                    String::new()
                } else {
                    field(line, "aff")
                };
                want.push((name, mask, field(line, "eff")));
            } else if field(line, "chip") != "-" && !field(line, "eff").is_empty() {
                *held.entry(field(line, "eff").parse().unwrap()).or_default() += 1;
            }
        }
        want.sort();
        assert!(!want.is_empty(), "{at}: no NVMe vectors in the capture");
        let held: Vec<String> = held.iter().map(|(c, n)| format!("{c}:{n}")).collect();
        let held = held.join(",");
        let topo = root.join(format!("topologies/{config}.toml"));
        let tokens: Vec<String> = queues
            .iter()
            .enumerate()
            .map(|(i, q)| format!("{q}:name=nvme{i},pre=1"))
            .collect();
        let run = |extra: &[&str]| -> Vec<(String, String, String)> {
            let mut args = vec![topo.to_str().unwrap()];
            args.extend(tokens.iter().map(String::as_str));
            args.extend_from_slice(&["--variant", "pre-cluster", "--sort", sort]);
            args.extend_from_slice(extra);
            let v = json(&args);
            let mut got = Vec::new();
            for d in v["devices"].as_array().unwrap() {
                for x in d["vectors"].as_array().unwrap() {
                    let index = x["index"].as_u64().unwrap();
                    got.push((
                        format!("{}q{index}", d["name"].as_str().unwrap()),
                        if index == 0 {
                            String::new()
                        } else {
                            x["mask"].as_str().unwrap().to_string()
                        },
                        x["effective_cpu"].to_string(),
                    ));
                }
            }
            got.sort();
            got
        };
        assert_eq!(run(&["--vectors-held", &held]), want, "{at}: held {held}");
        assert_ne!(run(&[]), want, "{at}: the model matches without held vectors too");
    }
}
