//! The MANA and sched pages over HTTP (`web::app(state).oneshot`), MANA devices in scenario
//! permalinks, and a permalink encoded before MANA devices existed, which must still give the
//! same bytes.

use axum::http::{header, StatusCode};
use irqscope::catalogue;
use irqscope::kernel::sched::INTERPRETATION_NOTES;
use irqscope::scenario::mana::ManaSpec;
use irqscope::scenario::permalink;
use irqscope::scenario::sched::SchedSpec;
use irqscope::scenario::spec::TopologyRef;
use serde_json::{json, Value};

use crate::common;
use common::http::{get, Reply};

fn data(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// A report without the paragraphs added since a fixture was recorded: the kernel range
/// ("kernel:", "kernel A:", …), the interrupt controller ("irqchip:") and the sched model's
/// assumptions ("assumed:"), each with its indented continuation lines.
fn without_added_paragraphs(text: &str) -> String {
    let mut out = Vec::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.starts_with("kernel") || line.starts_with("irqchip:") || line.starts_with("assumed:") {
            skipping = true;
            continue;
        }
        if skipping && line.starts_with("  ") && !line.trim_start().starts_with('$') {
            continue;
        }
        skipping = false;
        out.push(line);
    }
    out.join("\n")
}

/// The words of the first command block of a report (`  $ irqscope …`, continued with `\`).
fn command_of(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let body = match line.trim_start().strip_prefix("$ ") {
            Some(b) => b,
            None if inside => line.trim(),
            None => continue,
        };
        inside = line.trim_end().ends_with('\\');
        words.extend(body.trim_end_matches('\\').split_whitespace().map(String::from));
        if !inside {
            break;
        }
    }
    words
}

/// `tests/data/permalink-before-mana.*` were recorded from the code before MANA devices were
/// added to scenarios: the link, its text twin and its JSON twin. One line of the text twin
/// was re-worded since, on purpose: the idle CPUs' line names how many CPUs take IRQs and
/// no longer repeats a list the lines above give. The numbers are the same; the text now names
/// the kernel range its answer holds for, the interrupt controller and its command the vector
/// count the link runs (203, the count of every link written before a release could be named),
/// and a paragraph no longer ends in a line of one word, so its words are compared, not where
/// its lines break; the JSON adds the range and two counts.
#[tokio::test]
async fn permalink_from_before_mana_devices_reproduces_exactly() {
    let link = data("permalink-before-mana.txt");
    let link = link.trim();
    let text = get(&format!("/s/{link}/text")).await;
    assert_eq!(text.status, StatusCode::OK, "{}", text.body);
    let before = data("permalink-before-mana.text");
    let mut want = command_of(&before);
    want.extend(["--vectors-per-cpu".to_string(), "203".to_string()]);
    assert_eq!(command_of(&text.body), want);
    let after_command = |t: &str| {
        let kept = without_added_paragraphs(&t[t.find("\nmachine:").unwrap()..]);
        // The words in order: a list broken at another comma reads the same.
        kept.split_whitespace().collect::<Vec<_>>().join(" ").replace(", ", ",")
    };
    assert_eq!(after_command(&text.body), after_command(&before));
    assert!(
        text.body
            .contains("kernel:   no release: rotation is a proposed patch\n"),
        "{}",
        text.body
    );
    let json = get(&format!("/s/{link}/json")).await;
    assert_eq!(json.status, StatusCode::OK, "{}", json.body);
    let mut now: Value = serde_json::from_str(&json.body).unwrap();
    let old: Value = serde_json::from_str(&data("permalink-before-mana.json")).unwrap();
    assert_eq!(now["kernel"]["line"], "no release: rotation is a proposed patch");
    now.as_object_mut().unwrap().remove("kernel");
    let metrics = now["metrics"].as_object_mut().unwrap();
    assert_eq!(metrics.remove("vectors_failed"), Some(json!(0)));
    assert!(metrics.remove("devices_asked").is_some());
    assert_eq!(now, old);
    let page = get(&format!("/s/{link}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.body.contains(&format!("/s/{link}")),
        "the page re-encodes to the same link"
    );
}

/// `tests/data/permalink-mana-seed-irqaffinity.*` were recorded from the code before MANA
/// and sched went through `scenario`: the `/m/` link reproduces its text and JSON twins byte
/// for byte.
#[tokio::test]
async fn old_mana_permalink_reproduces_exactly() {
    let link = data("permalink-mana-seed-irqaffinity.txt");
    let link = link.trim();
    let text = get(&format!("/m/{link}/text")).await;
    assert_eq!(text.status, StatusCode::OK, "{}", text.body);
    // The same report but for the added line naming the kernel code of each side.
    assert!(
        text.body.contains("\nkernel: unpatched is gdma_main.c"),
        "{}",
        text.body
    );
    assert_eq!(
        without_added_paragraphs(&text.body),
        without_added_paragraphs(&data("permalink-mana-seed-irqaffinity.text"))
    );
    let json = get(&format!("/m/{link}/json")).await;
    assert_eq!(json.status, StatusCode::OK, "{}", json.body);
    let mut now: Value = serde_json::from_str(&json.body).unwrap();
    assert!(now.as_object_mut().unwrap().remove("kernel").is_some());
    let old: Value = serde_json::from_str(&data("permalink-mana-seed-irqaffinity.json")).unwrap();
    assert_eq!(now, old);
    let page = get(&format!("/m/{link}")).await;
    assert!(
        page.body.contains(&format!("/m/{link}")),
        "the page re-encodes to the same link"
    );
}

/// The text without the interpretation note on the wake path names (the one note the
/// spec B.8 names changed), from its `  - ` line to the next one.
fn without_wake_names_note(text: &str) -> String {
    let mut out = Vec::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.starts_with("  - ") {
            skipping = line.starts_with("  - Wake path with both groups fully busy or overloaded");
        }
        if !skipping {
            out.push(line);
        }
    }
    out.join("\n")
}

/// `tests/data/permalink-sched-seed*` were recorded before the wake-path names followed spec
/// B.8: the old `/n/` link still decodes to the same spec, and its twins are the same bytes
/// except the interpretation note that called those names the model's own, and where a note
/// that ended in a line of one word breaks its lines (its words are compared).
#[tokio::test]
async fn old_sched_permalink_reproduces_but_for_the_wake_names_note() {
    let link = data("permalink-sched-seed.txt");
    let link = link.trim();
    let before = data("permalink-sched-seed-before-wake-names.text");
    let text = get(&format!("/n/{link}/text")).await;
    assert_eq!(text.status, StatusCode::OK, "{}", text.body);
    assert_ne!(text.body, before);
    let words = |t: &str| {
        let kept = without_wake_names_note(&without_added_paragraphs(t));
        kept.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    assert_eq!(words(&text.body), words(&before));
    assert!(before.contains("avg_load_*") && !text.body.contains("avg_load_*"));

    let json = get(&format!("/n/{link}/json")).await;
    assert_eq!(json.status, StatusCode::OK, "{}", json.body);
    let mut now: Value = serde_json::from_str(&json.body).unwrap();
    let mut old: Value = serde_json::from_str(&data("permalink-sched-seed-before-wake-names.json")).unwrap();
    let note = |v: &mut Value| -> Value {
        let notes = v["interpretation_notes"].as_array_mut().unwrap();
        let i = notes
            .iter()
            .position(|n| n.as_str().unwrap().starts_with("Wake path with both groups fully busy"))
            .unwrap();
        notes.remove(i)
    };
    let (now_note, old_note) = (note(&mut now), note(&mut old));
    assert_ne!(now_note, old_note);
    assert!(now.as_object_mut().unwrap().remove("kernel").is_some());
    assert_eq!(now, old);
    assert_eq!(now["permalink"], json!(link));
}

/// A 4xx with a plain-text message containing `needle`.
fn assert_bad(r: &Reply, needle: &str) {
    assert!(r.status.is_client_error(), "status {} body {}", r.status, r.body);
    let ct = r
        .headers
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap())
        .unwrap_or("");
    assert!(ct.starts_with("text/plain"), "{ct}");
    assert!(
        r.body.to_lowercase().contains(&needle.to_lowercase()),
        "{needle:?} not in {:?}",
        r.body
    );
}

fn assert_ok(r: &Reply) {
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

/// The permalink the page links to under `prefix` (`/m/` or `/n/`).
fn link_in(body: &str, prefix: &str) -> String {
    let needle = format!("id=\"permalink\" href=\"{prefix}");
    let at = body.find(&needle).expect("permalink on the page");
    let rest = &body[at + needle.len()..];
    rest[..rest.find('"').unwrap()].to_string()
}

/// Values of `data-cpu` of the effective-CPU dots inside the SVG with `id`.
fn dots(body: &str, id: &str) -> Vec<u32> {
    let start = body.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no {id}"));
    let svg = &body[start..start + body[start..].find("</svg>").unwrap()];
    svg.split("<circle class=\"eff\"")
        .skip(1)
        .map(|c| {
            let at = c.find("data-cpu=\"").unwrap() + 10;
            c[at..at + c[at..].find('"').unwrap()].parse().unwrap()
        })
        .collect()
}

// ---------------------------------------------------------------------------
// MANA

#[tokio::test]
async fn mana_page_defaults_to_the_seed_machine_with_both_grids() {
    let r = get("/mana").await;
    assert_ok(&r);
    assert!(r.headers.get(header::CONTENT_SECURITY_POLICY).is_some());
    for id in [
        "grid-unpatched",
        "grid-patched",
        "grid-focus",
        "queues-unpatched",
        "queues-patched",
        "load-focus",
    ] {
        assert!(r.body.contains(&format!("id=\"{id}\"")), "{id} missing");
    }
    // 5 IRQs x 4 CPUs in each of the three grids.
    assert_eq!(r.body.matches("<rect class=\"cell").count(), 3 * 20);
    assert!(r.body.contains("azure-4vcpu-smt2"));
    assert!(
        r.body.contains("href=\"/mana\"") && r.body.contains("href=\"/sched\""),
        "nav links"
    );
    assert!(r.body.contains("id=\"seed-001\""));
    // An idle machine: spec A.8's 0,1,2,1,2.
    assert_eq!(dots(&r.body, "grid-unpatched"), [0, 1, 2, 1, 2]);
    assert_eq!(dots(&r.body, "grid-patched"), [0, 0, 1, 2, 3]);
}

/// Seed 001 through the page and its text twin: the same tables tests/seeds.rs checks on the CLI.
#[tokio::test]
async fn mana_seed_preset_reproduces_seed001_through_http() {
    let r = get("/mana?preset=azure-4vcpu-smt2&load=0,1,1,1").await;
    assert_ok(&r);
    assert_eq!(dots(&r.body, "grid-unpatched"), [0, 0, 2, 0, 3]);
    assert_eq!(dots(&r.body, "grid-patched"), [0, 0, 1, 2, 3]);
    assert!(r.body.contains("imbalance 2"), "unpatched imbalance called out");
    assert!(r.body.contains("imbalance (max − min) = 2"));
    // The step log: q2 moves off CPU 1 and leaves its vector behind.
    assert!(
        r.body
            .contains("q2 mask 2-3: CPU 1 is not in it, moves to CPU 2 (old vector left behind)"),
        "step log"
    );
    let link = link_in(&r.body, "/m/");
    let text = get(&format!("/m/{link}/text")).await;
    assert_ok(&text);
    assert!(
        text.body.contains(
            "$ irqscope mana azure-4vcpu-smt2 --device-node 0 --mode dynamic \\\n     --max-msix 64 --load 0,1,1,1\n"
        ),
        "{}",
        text.body
    );
    assert!(text.body.contains(&format!("http://irqscope.test/m/{link}\n")));
    assert!(
        text.body.contains("effective CPUs   unpatched: 0 0 2 0 3\n"),
        "{}",
        text.body
    );
    assert!(text.body.contains("                 patched:   0 0 1 2 3\n"));
    assert!(text.body.contains("queue IRQs/CPU   unpatched: 2 0 1 1 (max-min 2)"));

    let boot = get("/mana?preset=azure-4vcpu-smt2&irqaffinity=0").await;
    let boot_text = get(&format!("/m/{}/text", link_in(&boot.body, "/m/"))).await;
    assert!(
        boot_text.body.contains("effective CPUs   unpatched: 0 0 2 0 3\n"),
        "{}",
        boot_text.body
    );
    assert!(boot_text.body.contains("irqaffinity= 0\n"));
    let idle = get("/mana?preset=azure-4vcpu-smt2").await;
    let idle_text = get(&format!("/m/{}/text", link_in(&idle.body, "/m/"))).await;
    assert!(
        idle_text.body.contains("effective CPUs   unpatched: 0 1 2 1 2\n"),
        "{}",
        idle_text.body
    );

    let json = get(&format!("/m/{link}/json")).await;
    assert_ok(&json);
    let v: Value = serde_json::from_str(&json.body).unwrap();
    assert_eq!(v["permalink"], link.as_str());
    assert_eq!(v["unpatched"]["effective_cpus"], serde_json::json!([0, 0, 2, 0, 3]));
    assert_eq!(v["patched"]["setup_fn"], "linear");
    assert_eq!(v["spec"]["load"], serde_json::json!([0, 1, 1, 1]));
}

#[tokio::test]
async fn mana_permalink_page_and_driver_toggle() {
    let link = permalink::encode(&ManaSpec::seed()).unwrap();
    let u = get(&format!("/m/{link}")).await;
    assert_ok(&u);
    assert_eq!(dots(&u.body, "grid-focus"), [0, 0, 2, 0, 3]);
    let p = get(&format!("/m/{link}?driver=patched")).await;
    assert_ok(&p);
    assert_eq!(dots(&p.body, "grid-focus"), [0, 0, 1, 2, 3]);
    assert!(p.body.contains("linear spread over 4 IRQs from q1"), "patched step log");
    assert_eq!(link_in(&p.body, "/m/"), link, "the view choice is not part of the link");
    // The form sends the page's own link as `from`; changing only the view keeps the spec.
    let again = get(&format!("/mana?from={link}&driver=patched")).await;
    assert_eq!(link_in(&again.body, "/m/"), link);
    // Changing a field from there changes the link and the result.
    let other = get(&format!("/mana?from={link}&load=0,0,0,0")).await;
    assert_ne!(link_in(&other.body, "/m/"), link);
    assert_eq!(dots(&other.body, "grid-unpatched"), [0, 1, 2, 1, 2]);
}

#[tokio::test]
async fn mana_takes_the_machine_of_a_scenario_permalink() {
    // The blank machine of the editor: 4 cores x 2 threads, inline in the scenario link.
    let page = get("/?preset=blank").await;
    assert_ok(&page);
    let at = page.body.find("href=\"/s/").unwrap() + 9;
    let s = &page.body[at..at + page.body[at..].find('"').unwrap()];
    assert!(
        page.body.contains(&format!("/mana?s={s}")),
        "scenario page links to the MANA page"
    );
    let r = get(&format!("/mana?s={s}")).await;
    assert_ok(&r);
    assert!(r.body.contains("edited machine"), "inline topology");
    // 8 CPUs: HWC + 8 queues in each of the three grids.
    assert_eq!(r.body.matches("<rect class=\"cell").count(), 3 * 9 * 8);
    let link = link_in(&r.body, "/m/");
    let spec: ManaSpec = permalink::decode(&link).unwrap();
    assert!(matches!(spec.topology, TopologyRef::Inline(_)));
    assert_ok(&get(&format!("/m/{link}/text")).await);
    let sched = get(&format!("/sched?s={s}")).await;
    assert_bad(&sched, "node");
}

#[tokio::test]
async fn mana_errors_are_4xx_with_messages() {
    let cases = [
        ("/mana?load=0,x", "load"),
        ("/mana?load=1,2", "initial_vector_load has 2 entries"),
        ("/mana?mode=turbo", "MSI-X mode"),
        ("/mana?node=5", "device_node 5"),
        ("/mana?node=minus", "not a number"),
        ("/mana?max_msix=1", "probe fails"),
        ("/mana?max_msix=99999", "max_msix"),
        ("/mana?max_msix=many", "max_msix \"many\" is not a number"),
        ("/mana?preset=no-such-machine", "unknown topology preset"),
        ("/mana?irqaffinity=99", "irqaffinity"),
        ("/mana?driver=both", "unknown driver version"),
        ("/mana?s=v1.AAAA", "permalink"),
        ("/mana?from=v9.abc", "version"),
        ("/m/v9.abc", "version"),
        ("/m/v1.!!!/text", "base64"),
        ("/m/v1.abc/json", "permalink"),
    ];
    for (uri, needle) in cases {
        assert_bad(&get(uri).await, needle);
    }
    // A sched link is not a MANA link.
    let sched_link = permalink::encode(&SchedSpec::seed()).unwrap();
    assert_bad(&get(&format!("/m/{sched_link}")).await, "unknown field");
    let link = permalink::encode(&ManaSpec::seed()).unwrap();
    assert_bad(&get(&format!("/m/{link}?driver=x")).await, "unknown driver version");
}

#[tokio::test]
async fn mana_and_sched_pages_escape_names() {
    let mut t = catalogue::get("azure-4vcpu-smt2").unwrap().to_spec();
    t.name = "<script>alert(1)</script>".into();
    let spec = ManaSpec {
        topology: TopologyRef::Inline(Box::new(t)),
        ..ManaSpec::seed()
    };
    let r = get(&format!("/m/{}", permalink::encode(&spec).unwrap())).await;
    assert_ok(&r);
    assert!(!r.body.contains("<script>alert"), "unescaped name");
    assert!(r.body.contains("alert(1)"));
    let bad = get("/mana?irqaffinity=%3Cscript%3E").await;
    assert_bad(&bad, "irqaffinity");

    let mut t = catalogue::get("arm64-4node-diameter3").unwrap().to_spec();
    t.name = "<img src=x onerror=alert(1)>".into();
    let spec = SchedSpec {
        topology: TopologyRef::Inline(Box::new(t)),
        ..SchedSpec::seed()
    };
    let r = get(&format!("/n/{}", permalink::encode(&spec).unwrap())).await;
    assert_ok(&r);
    assert!(!r.body.contains("<img src=x"), "unescaped name");
}

// ---------------------------------------------------------------------------
// sched

#[tokio::test]
async fn sched_page_defaults_to_seed003_with_every_part() {
    let r = get("/sched").await;
    assert_ok(&r);
    assert!(r.body.contains("arm64-4node-diameter3"));
    assert!(r.body.contains("class=\"distances\""), "distance heatmap");
    assert!(r.body.contains("<span id=\"levels\">10, 12, 35, 37, 40</span>"));
    assert_eq!(
        r.body
            .matches("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"ladder\"")
            .count(),
        4,
        "a ladder per node"
    );
    assert!(
        r.body.contains("<g class=\"domain degenerate\" data-level=\"2\">"),
        "node 1's NUMA-2 greyed"
    );
    assert!(
        r.body.contains("<g class=\"domain unequal\""),
        "unequal-weight domains marked"
    );
    assert!(r.body.contains("class=\"group descended"), "descended groups marked");
    assert!(
        r.body.contains("class=\"group local prefer\""),
        "prefer-sibling groups marked"
    );
    // One row per (idle dst node, kept level); three variant columns.
    assert_eq!(r.body.matches("<tr data-node=").count(), 12);
    assert_eq!(r.body.matches("<td class=\"decision").count(), 36);
    assert_eq!(r.body.matches("<li class=\"verdict").count(), 3);
    let notes_at = r.body.find("<ul id=\"notes\">").unwrap();
    let notes = &r.body[notes_at..notes_at + r.body[notes_at..].find("</ul>").unwrap()];
    assert_eq!(notes.matches("<li>").count(), INTERPRETATION_NOTES.len());
    assert!(notes.contains(INTERPRETATION_NOTES[0]));
    assert!(r.body.contains("id=\"seed-003\""));
}

fn split_cells(body: &str, variant: &str) -> usize {
    body.matches(&format!("<td class=\"decision split\" data-variant=\"{variant}\""))
        .count()
        + body
            .matches(&format!("<td class=\"decision split sel\" data-variant=\"{variant}\""))
            .count()
}

#[tokio::test]
async fn sched_noise_and_variant_change_the_decision_table() {
    let quiet = get("/sched?preset=arm64-4node-diameter3&pair_node=1&noise=0").await;
    assert_ok(&quiet);
    assert!(split_cells(&quiet.body, "upstream") > 0);
    assert_eq!(split_cells(&quiet.body, "p12"), 0);
    assert_eq!(split_cells(&quiet.body, "p123"), 0);
    assert!(quiet.body.contains("idle_diff"), "upstream's idle-difference phantom");
    let noisy = get("/sched?preset=arm64-4node-diameter3&pair_node=1&noise=1").await;
    assert!(split_cells(&noisy.body, "p12") > 0, "p12 splits once noise appears");
    assert_eq!(split_cells(&noisy.body, "p123"), 0);
    assert!(noisy.body.contains("busy_diff"));
    // Pair on node 0: the prefer-sibling path splits even under p123 with noise.
    let node0 = get("/sched?preset=arm64-4node-diameter3&pair_node=0&noise=1").await;
    assert!(split_cells(&node0.body, "p123") > 0);
    // The variant view highlights its column and shows its wake/fork walk.
    let link = link_in(&noisy.body, "/n/");
    let p12 = get(&format!("/n/{link}?variant=p12")).await;
    assert_ok(&p12);
    assert!(p12.body.contains("<th class=\"sel\">p12</th>"));
    assert!(
        p12.body
            .contains("Wake/fork placement of the pair&#39;s second task: p12")
            || p12.body.contains("second task: p12")
    );
    assert_eq!(link_in(&p12.body, "/n/"), link);
    let again = get(&format!("/sched?from={link}&variant=p123")).await;
    assert_eq!(link_in(&again.body, "/n/"), link);
    assert!(again.body.contains("<th class=\"sel\">p123</th>"));
}

/// Seed 003 through the text twin: the verdicts tests/seeds.rs checks on the CLI.
#[tokio::test]
async fn sched_text_twin_tells_the_seed003_story() {
    for (noise, want) in [
        (
            "0",
            [
                ("upstream", "SPLITS the pair"),
                ("p12", "keeps the pair"),
                ("p123", "keeps the pair"),
            ],
        ),
        (
            "1",
            [
                ("upstream", "SPLITS the pair"),
                ("p12", "SPLITS the pair"),
                ("p123", "keeps the pair"),
            ],
        ),
        (
            "2",
            [
                ("upstream", "SPLITS the pair"),
                ("p12", "SPLITS the pair"),
                ("p123", "keeps the pair"),
            ],
        ),
    ] {
        let page = get(&format!(
            "/sched?preset=arm64-4node-diameter3&pair_node=1&noise={noise}"
        ))
        .await;
        let link = link_in(&page.body, "/n/");
        let text = get(&format!("/n/{link}/text")).await;
        assert_ok(&text);
        assert!(
            text.body.contains(&format!(
                "$ irqscope sched arm64-4node-diameter3 --pair-node 1 --noise {noise} \\\n     --node-reclaim-distance 30\n"
            )),
            "{}",
            text.body
        );
        for (variant, verdict) in want {
            let line = text
                .body
                .lines()
                .find(|l| l.split_whitespace().next() == Some(variant))
                .unwrap();
            assert_eq!(line[10..31].trim(), verdict, "noise {noise} {variant}: {line}");
        }
        assert!(text.body.contains("Interpretations (the patches are not public):"));
        let json = get(&format!("/n/{link}/json")).await;
        assert_ok(&json);
        let v: Value = serde_json::from_str(&json.body).unwrap();
        assert_eq!(v["summary"]["upstream"]["periodic_split"], true);
        assert_eq!(v["summary"]["p123"]["periodic_split"], false);
        assert_eq!(v["topology"]["distances"], serde_json::json!([10, 12, 35, 37, 40]));
        assert_eq!(
            v["interpretation_notes"].as_array().unwrap().len(),
            INTERPRETATION_NOTES.len()
        );
    }
}

#[tokio::test]
async fn sched_errors_are_4xx_with_messages() {
    let cases = [
        ("/sched?pair_node=9", "the machine has 4 node"),
        ("/sched?pair_node=x", "not a number"),
        ("/sched?noise=31", "too few for the pair"),
        ("/sched?noise=-1", "not a number"),
        ("/sched?reclaim=abc", "not a number"),
        ("/sched?variant=p4", "unknown sched variant"),
        ("/sched?preset=azure-4vcpu-smt2", "sched"),
        ("/sched?preset=nope", "unknown topology preset"),
        ("/n/v2.abc", "version"),
        ("/n/v1.!!!", "base64"),
        ("/n/v1.abc/text", "permalink"),
    ];
    for (uri, needle) in cases {
        assert_bad(&get(uri).await, needle);
    }
    let mana_link = permalink::encode(&ManaSpec::seed()).unwrap();
    assert_bad(&get(&format!("/n/{mana_link}/json")).await, "unknown field");
    // x86 numbering (a node's second threads numbered after every first thread) and sparse ids
    // are renumbered node by node for the model, not refused.
    assert_ok(&get("/sched?preset=xeon-2s-18c-smt2&pair_node=0").await);
    assert_ok(&get("/sched?preset=synthetic-sparse-ids").await);
}

// ---------------------------------------------------------------------------
// MANA devices in scenarios

#[tokio::test]
async fn scenario_with_a_mana_device_over_http() {
    let r = get("/?preset=azure-4vcpu-smt2&devices=3:managed=no,name=other%204:driver=mana,name=eth").await;
    assert_ok(&r);
    let at = r.body.find("href=\"/s/").unwrap() + 9;
    let link = &r.body[at..at + r.body[at..].find('"').unwrap()];
    let text = get(&format!("/s/{link}/text")).await;
    assert_ok(&text);
    assert!(text.body.contains("4:name=eth,driver=mana"), "{}", text.body);
    assert!(
        text.body.contains("eth: MANA (unpatched, dynamic MSI-X)"),
        "{}",
        text.body
    );
    let json = get(&format!("/s/{link}/json")).await;
    let v: Value = serde_json::from_str(&json.body).unwrap();
    let eth = &v["devices"][1]["vectors"];
    assert_eq!(eth.as_array().unwrap().len(), 5);
    assert!(eth.as_array().unwrap().iter().all(|x| x["managed"] == false));
    assert_eq!(v["metrics"]["irqs_total"], 8);
    // The MANA model's account rides along; it started from the load `other` left (CPUs 0-2).
    assert_eq!(v["devices"][1]["mana"]["setup_fn"], "numa_aware");
    assert!(v["devices"][0].get("mana").is_none());
    let bad = get("/?preset=azure-4vcpu-smt2&devices=4:driver=mana&effective=first-cpu").await;
    assert_bad(&bad, "x86-matrix");
    let bad = get("/?preset=azure-4vcpu-smt2&devices=4:driver=mana,managed=yes").await;
    assert_bad(&bad, "not managed");
}

/// A 96-CPU machine: the page once weighed about 2 MB (a rect and a tooltip per grid cell).
/// Large grids fold runs of identical cells and leave tooltips to one hover script.
#[tokio::test]
async fn mana_page_for_96_cpus_stays_small() {
    const PAGE_BYTES_MAX: usize = 500_000;
    for query in [
        "/mana?preset=azure-l96as-v4",
        "/mana?preset=azure-l96as-v4&node=1&mode=static&irqaffinity=0-3",
        "/mana?preset=azure-d96plds-v6&max_msix=97",
    ] {
        let r = get(query).await;
        assert_ok(&r);
        assert!(
            r.body.len() < PAGE_BYTES_MAX,
            "{query}: the page is {} bytes",
            r.body.len()
        );
        let link = link_in(&r.body, "/m/");
        let json: Value = serde_json::from_str(&get(&format!("/m/{link}/json")).await.body).unwrap();
        for (grid, version) in [
            ("grid-unpatched", "unpatched"),
            ("grid-patched", "patched"),
            ("grid-focus", "unpatched"),
        ] {
            let want: Vec<u32> = json[version]["effective_cpus"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap() as u32)
                .collect();
            assert_eq!(
                dots(&r.body, grid),
                want,
                "{query}: {grid} has one dot per IRQ on its effective CPU"
            );
        }
        assert_eq!(
            r.body.matches("<rect class=\"cell").count(),
            0,
            "{query}: cells fold into runs"
        );
        assert!(
            r.body.contains("<rect class=\"run") && r.body.contains("data-tip="),
            "{query}"
        );
        eprintln!("{query}: {} bytes", r.body.len());
    }
}
