//! `irqscope lab check` on real-kernel agent captures, and one test per live-vs-model defect
//! the lab exposed (fixtures in tests/data/lab: captures of Debian 6.1 guests; `c5-61-v2` is
//! the c5 capture as a protocol 2 agent records it, kernel release included).

use irqscope::analysis::live_vs_model::{self, Comparison, ModelOptions};
use irqscope::lab::HotplugRule;
use irqscope::live::protocol::Snapshot;
use irqscope::topology::Topology;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lab").join(name)
}

use crate::common::cli::irqscope_output as run;

fn check(path: &Path, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["lab", "check", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    let (code, out, err) = run(&args);
    assert!(code == 0 || code == 1, "lab check {args:?}: exit {code}: {err}");
    (code, out)
}

fn last_line(out: &str) -> &str {
    out.lines().last().unwrap_or("")
}

fn snapshot(name: &str) -> Snapshot {
    let text = std::fs::read_to_string(data(name)).unwrap();
    irqscope::lab::check::read_capture(&text).unwrap()
}

fn compare(s: &Snapshot, opts: &ModelOptions) -> Comparison {
    let topo = Arc::new(Topology::new(&s.topology.to_spec(&s.host)).unwrap());
    live_vs_model::compare_with(s, &topo, opts).unwrap()
}

fn options(s: &Snapshot, release: &str) -> ModelOptions {
    live_vs_model::options_for(s, Some(release)).0
}

#[test]
fn every_lab_agent_capture_matches_with_its_kernel() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/lab/captures/agent");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|_| {
            panic!(
                "{} is missing: the lab lives in ../shared beside the checkout",
                dir.display()
            )
        })
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    for f in files
        .iter()
        .map(PathBuf::as_path)
        .chain([data("c2-61.agent.json").as_path()])
    {
        let name = f.file_name().unwrap().to_str().unwrap();
        let kernel = if name.contains("-612") {
            "6.12.107+deb12-cloud-amd64"
        } else {
            "6.1.0-57-amd64"
        };
        let (code, out) = check(f, &["--kernel", kernel]);
        let last = last_line(&out);
        assert!(last.ends_with(" matched, 0 differ"), "{name}:\n{out}");
        assert_eq!(code, 0, "{name}");
        let matched: usize = last.split(' ').next().unwrap().parse().unwrap();
        assert!(matched > 20, "{name}: {last}");
        for kind in [
            "managed mask: ",
            "managed effective CPU: ",
            "non-managed mask: ",
            "blk-mq map: ",
        ] {
            assert!(
                out.lines().any(|l| l.starts_with(kind)),
                "{name}: no {kind:?} line\n{out}"
            );
        }
    }
}

/// Defect 2: the snapshot's kernel release picks the sort (6.1 = heap-v5.1); heap-v6.11, the
/// one live mode always used, gets masks wrong on c5's equal nodes.
#[test]
fn defect2_the_kernel_release_picks_variant_and_sort() {
    let f = data("c5-61-v2.agent.json");
    let (code, out) = check(&f, &[]);
    assert!(out.contains("model: variant pre-cluster, sort heap-v5.1"), "{out}");
    assert_eq!((code, last_line(&out)), (0, "42 matched, 0 differ"), "{out}");
    let (code, out) = check(&f, &["--sort", "heap-v6.11"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("differ: managed mask"), "{out}");

    let s = snapshot("c5-61-v2.agent.json");
    let (opts, warnings) = live_vs_model::options_for(&s, None);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(compare(&s, &opts).mismatches(), 0);
    let old = ModelOptions {
        sort: "heap-v6.11".into(),
        ..opts
    };
    let wrong = compare(&s, &old)
        .vectors
        .iter()
        .filter(|v| v.managed && !v.mask_matches)
        .count();
    assert!(wrong > 0);

    // A protocol 1 capture carries no release: a warning, and `--kernel` supplies it.
    let s1 = snapshot("c2-61.agent.json");
    let (_, warnings) = live_vs_model::options_for(&s1, None);
    assert!(
        warnings.iter().any(|w| w.contains("kernel release unknown")),
        "{warnings:?}"
    );
}

/// Defect 3: the admin (non-managed) vector's mask as /proc shows it is the descriptor mask
/// narrowed to its first CPU's node, and its CPU is right only when the vector matrix starts
/// from the vectors the other interrupts hold.
#[test]
fn defect3_non_managed_masks_narrowed_and_matrix_starts_from_held_vectors() {
    let s = snapshot("c2-61.agent.json");
    let opts = options(&s, "6.1.0-57-amd64");
    let c = compare(&s, &opts);
    let admin: Vec<_> = c.vectors.iter().filter(|v| !v.managed).collect();
    assert_eq!(admin.len(), 3);
    for v in &admin {
        assert!(v.mask_matches && v.cpu_matches, "{v:?}");
        assert_eq!(v.predicted_mask, "0-3", "{v:?}");
    }
    assert!(c.spec.vectors_held.is_some());
    let empty = compare(
        &s,
        &ModelOptions {
            held_from_snapshot: false,
            ..opts
        },
    );
    assert!(
        empty.vectors.iter().any(|v| !v.managed && !v.cpu_matches),
        "matches with an empty matrix too"
    );
}

/// Defect 4: a managed vector whose mask holds no online CPU is shut down; x86 parks it and
/// reports CPU 0.
#[test]
fn defect4_shut_down_managed_vectors_report_cpu0() {
    let s = snapshot("c7-61.agent.json");
    let c = compare(&s, &options(&s, "6.1.0-57-amd64"));
    let online = [0u32, 1, 2, 3];
    let parked: Vec<_> = c
        .vectors
        .iter()
        .filter(|v| v.managed)
        .filter(|v| {
            let m = irqscope::topology::parse_cpulist(&v.actual_mask, 64).unwrap();
            !online.iter().any(|&c| m.contains(c))
        })
        .collect();
    assert!(parked.len() >= 3, "{parked:?}");
    for v in parked {
        assert_eq!((v.predicted_cpu, v.cpu_matches), (Some(0), true), "{v:?}");
        assert_eq!(v.actual_effective, "0");
    }
}

/// Defect 5: hotplug CPUs. 6.1 deals them round-robin over the online nodes (the lab's
/// c7-61.toml), 6.12 does not count them; a release between the measured ones warns.
#[test]
fn defect5_hotplug_cpus_get_the_release_rule() {
    let s = snapshot("c7-61.agent.json");
    let wire = live_vs_model::hotplug_topology(&s, HotplugRule::RoundRobinOnlineNodes).unwrap();
    assert_eq!(wire.nodes, ["0-4,6", "5,7"]);
    let wire = live_vs_model::hotplug_topology(&s, HotplugRule::IgnoreDisabled).unwrap();
    assert_eq!(
        (wire.nodes.as_slice(), wire.present.as_deref()),
        (&["0-3".to_string()][..], None)
    );

    let f = data("c7-61.agent.json");
    let (code, out) = check(&f, &["--kernel", "6.1.0-57-amd64"]);
    assert_eq!((code, last_line(&out)), (0, "38 matched, 0 differ"), "{out}");
    // The snapshot's own view (every hotplug CPU in node 0) gets masks wrong.
    let (code, out) = check(&f, &["--kernel", "6.5.0"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("cannot be known"), "{out}");
    assert!(out.contains("differ: managed mask"), "{out}");
}

/// `--all`: which variant x sort x effective model reproduces the capture.
#[test]
fn all_names_the_kernel() {
    let verdict = |out: &str| {
        out.lines()
            .find(|l| l.starts_with("verdict: "))
            .unwrap_or("")
            .to_string()
    };
    let (_, out) = check(&data("c5-61-v2.agent.json"), &["--all"]);
    assert_eq!(verdict(&out), "verdict: pre-cluster/heap-v5.1/x86-matrix", "{out}");
    let c5_612 = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/lab/captures/agent/c5-612.txt.agent.json");
    let (_, out) = check(&c5_612, &["--all", "--kernel", "6.12.107+deb12-cloud-amd64"]);
    assert!(
        verdict(&out).starts_with("verdict: pre-cluster/heap-v6.11/x86-matrix"),
        "{out}"
    );
    assert!(!verdict(&out).contains("heap-v5.1"), "{out}");
    // 7.2: no capture here; the release table makes it cluster-aware with the v6.11 sort.
    let (_, out) = check(&data("c2-61.agent.json"), &["--kernel", "7.2.13+deb14-cloud-amd64"]);
    assert!(out.contains("model: variant cluster, sort heap-v6.11"), "{out}");
}

#[test]
fn bad_input_is_one_line_exit_2() {
    let dir = std::env::temp_dir().join(format!("irqscope-lab-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"version\":99,\"snapshots\":[]}").unwrap();
    for args in [
        vec!["lab", "check", bad.to_str().unwrap()],
        vec!["lab", "check", "/nonexistent/capture.json"],
        vec![
            "lab",
            "check",
            data("c2-61.agent.json").to_str().unwrap(),
            "--kernel",
            "banana",
        ],
        vec![
            "lab",
            "check",
            data("c2-61.agent.json").to_str().unwrap(),
            "--sort",
            "quick",
        ],
    ] {
        let (code, out, err) = run(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The lab's text capture (`../shared/lab/captures/CONFIG-KERNEL.txt`, the `seq` phase) as the
/// protocol 2 agent would record it: sysfs node lists (hotplug CPUs, in no node list, go to
/// node 0 as the agent puts them), the kernel release from `@meta kernel=`.
fn text_capture_as_agent(text: &str, phase: &str) -> String {
    let field = |line: &str, key: &str| -> String {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{key}=")))
            .unwrap_or("")
            .to_string()
    };
    let value = |key: &str| -> String {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key} ")))
            .unwrap_or("")
            .to_string()
    };
    let release = text
        .lines()
        .find_map(|l| l.strip_prefix("@meta kernel="))
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .to_string();
    let list = |s: &str| irqscope::topology::parse_cpulist(s, 4096).unwrap();
    let (possible, present, online) = (value("cpu_possible"), value("cpu_present"), value("cpu_online"));
    let mut nodes = Vec::new();
    let mut distances = Vec::new();
    let (mut smt, mut clusters) = (Vec::<String>::new(), Vec::<String>::new());
    for l in text.lines() {
        if l.starts_with("node ") {
            nodes.push(list(&field(l, "cpulist")));
            distances.push(
                field(l, "distance")
                    .split(',')
                    .map(|d| d.parse::<u32>().unwrap())
                    .collect::<Vec<_>>(),
            );
        } else if l.starts_with("cpu ") {
            for (key, sets) in [("thread_siblings", &mut smt), ("cluster_cpus", &mut clusters)] {
                let s = field(l, key);
                if !s.is_empty() && !sets.contains(&s) {
                    sets.push(s);
                }
            }
        }
    }
    let mut unplaced = list(&possible);
    for n in &nodes {
        unplaced.andnot_assign(n);
    }
    nodes[0].or_assign(&unplaced);
    let mut irqs = Vec::new();
    for l in text
        .lines()
        .skip_while(|l| *l != format!("@section irq {phase}"))
        .skip(1)
        .take_while(|l| !l.starts_with('@'))
    {
        let chip = field(l, "chip");
        if chip == "-" {
            continue;
        }
        let (chip, hwirq) = chip.split_once('_').unwrap_or((&chip, ""));
        let opt = |s: String| (!s.is_empty()).then_some(s);
        irqs.push(serde_json::json!({
            "label": l.split_whitespace().nth(1).unwrap(), "chip": chip, "hwirq": hwirq, "name": field(l, "name"),
            "counts": [], "affinity": opt(field(l, "aff")), "effective": opt(field(l, "eff")),
            "node": field(l, "node").parse::<u32>().ok(),
        }));
    }
    let cpus: Vec<u32> = list(&online).iter().collect();
    serde_json::json!({"version": 2, "snapshots": [{
        "version": 2, "host": "irqlab", "taken_unix_ms": 1, "boot_id": "lab",
        "topology": {
            "nodes": nodes.iter().map(|n| n.to_cpulist()).collect::<Vec<_>>(),
            "smt": smt, "clusters": clusters, "packages": [],
            "present": present, "online": online, "possible": possible,
            "distances": distances, "kernel_release": release,
        },
        "cpus": cpus, "irqs": irqs,
    }]})
    .to_string()
}

/// Every text capture of the lab (c1, c2, c3, c5, c7 on 6.1 and 6.12), converted: the release
/// it records picks the model, and every vector matches.
#[test]
fn lab_text_captures_match_with_the_release_they_record() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/lab/captures");
    let mut seen = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().and_then(|x| x.to_str()) != Some("txt") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let report = irqscope::lab::check::check(&text_capture_as_agent(&text, "seq"), &Default::default())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(report.differ, 0, "{}:\n{}", path.display(), report.text);
        assert!(report.matched > 10, "{}:\n{}", path.display(), report.text);
        eprintln!("{}: {}", path.display(), report.text.lines().last().unwrap());
        seen += 1;
    }
    assert!(seen >= 10, "{seen} text captures");
}

/// The boot phase (controllers probed concurrently): masks still match; effective CPUs that
/// differ are reported as what concurrent probing does, not as a wrong mask.
#[test]
fn boot_phase_moves_effective_cpus_never_masks() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/lab/captures");
    let mut moved = 0;
    for config in ["c2-61", "c3-61", "c3-612", "c5-612"] {
        let text = std::fs::read_to_string(dir.join(format!("{config}.txt"))).unwrap();
        let r = irqscope::lab::check::check(&text_capture_as_agent(&text, "boot"), &Default::default()).unwrap();
        assert!(!r.text.contains("differ: managed mask"), "{config}:\n{}", r.text);
        if r.differ > 0 {
            moved += 1;
            assert!(r.text.contains("note: every mask matches"), "{config}:\n{}", r.text);
        }
    }
    assert!(moved > 0, "no boot capture moved an effective CPU");
}

/// The live page (an imported capture) runs the release's model and explains what it cannot
/// remove: a boot capture's effective CPUs moved by concurrent probing are not model errors.
#[tokio::test]
async fn live_page_uses_the_release_and_explains_moved_effective_cpus() {
    use axum::body::Body;
    use axum::http::{header, Request, StatusCode};
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/lab/captures/c3-61.txt"))
        .unwrap();
    let capture = text_capture_as_agent(&text, "boot");
    let report = irqscope::lab::check::check(&capture, &Default::default()).unwrap();
    assert!(report.differ > 0, "the boot capture moved nothing:\n{}", report.text);
    let app = irqscope::web::app(irqscope::web::AppState::default());
    let form: String = capture
        .bytes()
        .map(|b| match b.is_ascii_alphanumeric() {
            true => (b as char).to_string(),
            false => format!("%{b:02X}"),
        })
        .collect();
    let req = Request::post("/live/_/import")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!("capture={form}")))
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let to = resp.headers()[header::LOCATION].to_str().unwrap().to_string();
    let resp = app
        .oneshot(Request::get(to).body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let page = String::from_utf8(resp.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    assert!(
        page.contains("heap-v5.1") && page.contains("kernel 6.1.0-57-amd64"),
        "{page}"
    );
    assert!(page.contains("<strong>0</strong> differ"), "{page}");
    assert!(page.contains("id=\"model-moved\""), "{page}");
    assert!(page.contains("class=\"moved\""), "{page}");
}
