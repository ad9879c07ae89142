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

fn offline_cpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/lab/captures/offline-cpus")
}

/// The offline-cpus captures (t2 on Debian 6.12.117, booted as is and with `maxcpus=10`): the
/// corrected ones match exactly and raise no offline-CPU warning; the one an agent that read
/// only `nodeN/cpulist` took (CPUs 9 and 11 in node 0) differs, and says why it may.
#[test]
fn offline_cpus_captures_match_and_the_misplaced_one_warns() {
    let warning = "are present but offline and all sit in node 0";
    for name in ["t2-612.seq.agent.json", "t2off-612.seq.agent.json"] {
        let (code, out) = check(&offline_cpus_dir().join(name), &[]);
        assert_eq!((code, last_line(&out)), (0, "58 matched, 0 differ"), "{name}:\n{out}");
        assert!(!out.contains(warning), "{name}:\n{out}");
    }
    let (code, out) = check(&offline_cpus_dir().join("t2off-612.seq.as-captured.json"), &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(&format!("warning: CPUs 9,11 {warning}")), "{out}");
    // The same machine booted again (`lab run t2.toml --append maxcpus=10`, Debian
    // 6.12.117 cloud) with an agent that reads the node links: the capture needs no correction.
    let fresh = data("t2off-612.seq.agent.json");
    let (code, out) = check(&fresh, &[]);
    assert_eq!((code, last_line(&out)), (0, "58 matched, 0 differ"), "{out}");
    assert!(!out.contains(warning), "{out}");
    let topology = |p: &Path| {
        irqscope::lab::check::read_capture(&std::fs::read_to_string(p).unwrap())
            .unwrap()
            .topology
    };
    let (mut got, want) = (
        topology(&fresh),
        topology(&offline_cpus_dir().join("t2off-612.seq.agent.json")),
    );
    assert_eq!(got.online.as_deref(), Some("0-8,10"));
    got.kernel_release.clone_from(&want.kernel_release);
    assert_eq!(got, want);
}

/// arm64 guests under QEMU virt (`lab run tests/data/lab/a8.toml`, Debian 6.12.117
/// cloud-arm64, TCG): `a8-v2m-612` with GICv2m (`--its off --nvme 4,2`), whose SPIs go to the
/// first CPU of the mask (`gic_set_affinity()`), and `a8-its-612` with the ITS (`--nvme 3,3`),
/// which spreads the second controller's vectors. Masks match either way; the ITS capture was
/// bound one at a time, so the note blames the effective-CPU model, not concurrent probing.
#[test]
fn arm64_captures_check_and_name_what_differs() {
    let (code, out) = check(&data("a8-v2m-612.seq.agent.json"), &["--effective", "first-cpu"]);
    assert_eq!((code, last_line(&out)), (0, "16 matched, 0 differ"), "{out}");
    assert!(out.contains("managed mask: 6/6"), "{out}");
    for f in [
        data("a8-its-612.seq.agent.json"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/lab/arm64/d16-its.seq.capture.json"),
    ] {
        let (code, out) = check(&f, &["--effective", "x86-matrix"]);
        assert_eq!(code, 1, "{out}");
        assert!(!out.contains("differ: managed mask"), "{out}");
        assert!(
            out.contains("note: every mask matches, and each controller's vectors were allocated in one piece"),
            "{out}"
        );
        assert!(
            !out.contains("compare one taken with the controllers bound one at a time"),
            "{out}"
        );
    }
    // Debian 7.2.13's generic arm64 kernel (`--kernel 'linux-binary-unsigned-7.2.*+deb*-arm64'
    // --modules-package 'linux-modules-7.2.*+deb*-arm64' --nvme 3,3`): the cluster-aware
    // grouping its release picks places every mask on a8's clusters of two; the grouping
    // before it does not.
    let f = data("a8-its-72.seq.agent.json");
    let (_, out) = check(&f, &[]);
    assert!(out.contains("model: variant cluster, sort heap-v6.11"), "{out}");
    assert!(out.contains("managed mask: 6/6"), "{out}");
    let (_, out) = check(&f, &["--variant", "pre-cluster"]);
    assert!(out.contains("differ: managed mask"), "{out}");
    // With the ITS model in the tree, the model lab check picks for the ITS captures places
    // every vector.
    if irqscope::kernel::vector_matrix::EffectiveModel::ALL
        .iter()
        .any(|m| m.name() == "arm64-its")
    {
        for name in ["a8-its-612.seq.agent.json", "a8-its-72.seq.agent.json"] {
            let (code, out) = check(&data(name), &[]);
            assert_eq!((code, last_line(&out)), (0, "16 matched, 0 differ"), "{name}:\n{out}");
        }
    }
}

/// A sysfs tree as Debian 6.12 shows the t2 machine booted with `maxcpus=10` (x86 brings the
/// primary threads up first, so CPUs 9 and 11 stay offline): node cpulists and sibling lists
/// name online CPUs only (`cpulist_read()`, `set_cpu_sibling_map()`), offline CPUs have no
/// `topology/` directory, and every present CPU is linked under its node
/// (`register_cpu_under_node()`). With `links` false the tree lacks the node links.
fn t2off_sysfs(root: &Path, links: bool) {
    let sys = root.join("sys/devices/system");
    let write = |rel: &str, text: &str| {
        let p = sys.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("{text}\n")).unwrap();
    };
    write("cpu/possible", "0-11");
    write("cpu/present", "0-11");
    write("cpu/online", "0-8,10");
    let online = |c: u32| c <= 8 || c == 10;
    for cpu in 0..12u32 {
        std::fs::create_dir_all(sys.join(format!("cpu/cpu{cpu}"))).unwrap();
        if !online(cpu) {
            continue;
        }
        let core: Vec<u32> = [cpu & !1, cpu | 1].into_iter().filter(|&c| online(c)).collect();
        let core = if core.len() == 2 {
            format!("{}-{}", core[0], core[1])
        } else {
            core[0].to_string()
        };
        let package = if cpu < 8 { "0-7" } else { "8,10" };
        for (file, text) in [
            ("thread_siblings_list", core.as_str()),
            ("core_cpus_list", &core),
            ("cluster_cpus_list", &core),
            ("package_cpus_list", package),
            ("die_cpus_list", package),
        ] {
            write(&format!("cpu/cpu{cpu}/topology/{file}"), text);
        }
    }
    let nodes: [(&str, std::ops::Range<u32>, &str); 3] = [
        ("0-3", 0..4, "10 20 20"),
        ("4-7", 4..8, "20 10 20"),
        ("8,10", 8..12, "20 20 10"),
    ];
    for (n, (cpulist, present, distance)) in nodes.into_iter().enumerate() {
        write(&format!("node/node{n}/cpulist"), cpulist);
        write(&format!("node/node{n}/distance"), distance);
        for cpu in present.filter(|_| links) {
            std::os::unix::fs::symlink(
                format!("../../cpu/cpu{cpu}"),
                sys.join(format!("node/node{n}/cpu{cpu}")),
            )
            .unwrap();
        }
    }
    let proc = root.join("proc");
    std::fs::create_dir_all(proc.join("sys/kernel")).unwrap();
    std::fs::write(proc.join("sys/kernel/osrelease"), "6.12.117+deb12-amd64\n").unwrap();
    std::fs::write(
        proc.join("interrupts"),
        "           CPU0       CPU1\n  0:         40          0   IO-APIC   2-edge      timer\n",
    )
    .unwrap();
}

/// The agent on that tree writes the corrected capture's topology (offline CPUs 9 and 11 in
/// node 2 and its package), and without the links the topology the old agent wrote.
#[test]
fn the_agent_reads_offline_cpus_nodes_from_the_node_links() {
    let topology_of = |path: &Path| {
        let text = std::fs::read_to_string(path).unwrap();
        irqscope::lab::check::read_capture(&text).unwrap().topology
    };
    for (links, fixture) in [
        (true, "t2off-612.seq.agent.json"),
        (false, "t2off-612.seq.as-captured.json"),
    ] {
        let root = std::env::temp_dir().join(format!("irqscope-t2off-{}-{links}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        t2off_sysfs(&root, links);
        let out = root.join("capture.json");
        let run = std::process::Command::new(env!("CARGO_BIN_EXE_irqscope-agent"))
            .args(["capture", "--host", "lab", "--root"])
            .arg(&root)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        assert_eq!(
            topology_of(&out),
            topology_of(&offline_cpus_dir().join(fixture)),
            "links {links}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}

/// A capture with no device to compare (the t2 capture without its NVMe vectors) is no pass:
/// exit 1, saying there was nothing to compare.
#[test]
fn a_capture_with_nothing_to_compare_exits_1() {
    let mut capture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data("t2off-612.seq.agent.json")).unwrap()).unwrap();
    for snap in capture["snapshots"].as_array_mut().unwrap() {
        let irqs = snap["irqs"].as_array_mut().unwrap();
        let before = irqs.len();
        irqs.retain(|irq| !irq["name"].as_str().unwrap_or("").starts_with("nvme"));
        assert!(irqs.len() < before);
    }
    let dir = std::env::temp_dir().join(format!("irqscope-lab-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("no-nvme.agent.json");
    std::fs::write(&path, capture.to_string()).unwrap();
    let (code, out) = check(&path, &[]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(code, 1, "{out}");
    assert_eq!(last_line(&out), "0 matched, 0 differ: nothing to compare", "{out}");
    assert!(
        out.contains("note: the capture holds no queue vectors of a device the models place"),
        "{out}"
    );
}

/// A real arm64 7.2 boot with two CPUs present but never brought up (`lab run` of a8 with
/// `maxcpus=6`): the capture's topology keeps its architecture and controller (protocol 4), so
/// the model gives CPUs 6 and 7 arm64's masks of themselves alone, as the kernel did; read as
/// x86 (empty masks) it placed 20 of 60 fields elsewhere. A capture of an older protocol,
/// which had no `arch`, gets it from its chip names as it is read.
#[test]
fn an_arm64_capture_with_offline_cpus_keeps_its_architecture() {
    let path = data("a8-maxcpus6-72.seq.agent.json");
    let s = snapshot("a8-maxcpus6-72.seq.agent.json");
    assert_eq!(
        (s.topology.arch, s.topology.irqchip),
        (
            Some(irqscope::topology::Arch::Arm64),
            Some(irqscope::topology::Irqchip::GicIts)
        )
    );
    assert_eq!(s.topology.online.as_deref(), Some("0-5"));
    let (code, out) = check(&path, &[]);
    assert_eq!((code, last_line(&out)), (0, "60 matched, 0 differ"), "{out}");
    let (code, out) = check(&path, &["--machine", data("a8.toml").to_str().unwrap()]);
    assert_eq!((code, last_line(&out)), (0, "60 matched, 0 differ"), "{out}");
    let scratch = crate::common::fs::Scratch::new("arch");
    let edited = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        f(&mut v);
        let file = scratch.path().join(format!("{}.json", v.to_string().len()));
        std::fs::write(&file, v.to_string()).unwrap();
        file
    };
    // The same capture read as an x86 machine: the offline CPUs' empty masks move queues.
    let x86 = edited(&|v| {
        v["snapshots"][0]["topology"]["arch"] = "x86_64".into();
        v["snapshots"][0]["topology"]["irqchip"] = "apic".into();
    });
    let (code, out) = check(&x86, &["--effective", "arm64-its"]);
    assert_eq!((code, last_line(&out)), (1, "40 matched, 20 differ"), "{out}");
    // As a protocol 3 agent wrote it (no arch, no irqchip): the chips tell.
    let v3 = edited(&|v| {
        v["version"] = 3.into();
        v["snapshots"][0]["version"] = 3.into();
        let t = v["snapshots"][0]["topology"].as_object_mut().unwrap();
        t.remove("arch");
        t.remove("irqchip");
    });
    let (code, out) = check(&v3, &[]);
    assert_eq!((code, last_line(&out)), (0, "60 matched, 0 differ"), "{out}");
}
