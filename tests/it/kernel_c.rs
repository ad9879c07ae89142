//! `kernel-c`: the kernel's own lib/group_cpus.c from Debian's source trees, built in user
//! space and checked against the models; patches written here at test time (never kernel code
//! kept in the repository); broken C (a crash, a loop, a compile error) as clear errors in the
//! CLI and on pages while the server goes on serving.
//!
//! The trees come from the environment: `IRQSCOPE_KERNEL_C_612` and `IRQSCOPE_KERNEL_C_72`
//! name unpacked `linux-source-6.12` and `linux-source-7.x` trees (`.ci/run` fetches the
//! packages with `irqscope kernel-c build` and sets them). Without them these tests say so
//! and pass without checking.

use crate::common::fs::Scratch;
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use irqscope::kernel::External;
use irqscope::kernel_c::{self, KernelC, Limits};
use irqscope::kernel_c_tools::{self as tools, BuildOptions};
use irqscope::scenario::permalink;
use irqscope::scenario::spec::{DeviceSpec, ScenarioSpec, TopologyRef};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use tower::ServiceExt;

pub(crate) fn tree(var: &str) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(p) if Path::new(&p).join("lib/group_cpus.c").is_file() => Some(PathBuf::from(p)),
        _ => {
            eprintln!("{var} is not set to a kernel tree: kernel-c test skipped");
            None
        }
    }
}

/// `irqscope kernel-c build TREE --name NAME --patch PATCH` with `cache` as the cache.
pub(crate) fn build_patched(cache: &Path, tree: &Path, name: &str, patch: &Path) -> (i32, String, String) {
    irqscope(
        cache,
        &[
            "kernel-c",
            "build",
            tree.to_str().unwrap(),
            "--name",
            name,
            "--patch",
            patch.to_str().unwrap(),
        ],
    )
}

pub(crate) fn irqscope(cache: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_irqscope"))
        .env("IRQSCOPE_KERNEL_C_DIR", cache)
        .env("IRQSCOPE_KERNEL_C_CALL_MS", "2000")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A unified diff of `lib/group_cpus.c` from `old` to `new`, made by `diff -u` here.
fn make_patch(dir: &Path, old: &str, new: &str) -> String {
    make_patch_of(dir, "lib/group_cpus.c", old, new)
}

/// A unified diff of the tree file `rel` from `old` to `new`.
pub(crate) fn make_patch_of(dir: &Path, rel: &str, old: &str, new: &str) -> String {
    for (side, text) in [("a", old), ("b", new)] {
        let file = dir.join(side).join(rel);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    let out = Command::new("diff")
        .current_dir(dir)
        .args(["-u", &format!("a/{rel}"), &format!("b/{rel}")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "diff found a change");
    String::from_utf8(out.stdout).unwrap()
}

/// The Debian file with one change, as a diff file and as a mail holding the same diff.
pub(crate) fn patched(dir: &Path, tree: &Path, from: &str, to: &str) -> (PathBuf, PathBuf) {
    patched_file(dir, tree, "lib/group_cpus.c", from, to)
}

/// The tree file `rel` with one change, as a diff file and as a mail holding the same diff.
fn patched_file(dir: &Path, tree: &Path, rel: &str, from: &str, to: &str) -> (PathBuf, PathBuf) {
    let old = std::fs::read_to_string(tree.join(rel)).unwrap();
    assert_eq!(old.matches(from).count(), 1, "the line to change is in the file once");
    let diff = make_patch_of(dir, rel, &old, &old.replace(from, to));
    let plain = dir.join("change.diff");
    std::fs::write(&plain, &diff).unwrap();
    let mail = dir.join("change.mbox");
    std::fs::write(
        &mail,
        format!(
            "From 1234 Mon Sep 17 00:00:00 2001\nFrom: A Tester <t@example.org>\nDate: Tue, 1 Dec 2026 10:00:00 +0000\n\
             Subject: [PATCH v2] lib/group_cpus: a change made by\n the test\n\nWhy it changes.\n\n\
             Signed-off-by: A Tester <t@example.org>\n---\n lib/group_cpus.c | 2 +-\n\n{diff}-- \n2.47.0\n"
        ),
    )
    .unwrap();
    (plain, mail)
}

/// Every stage of Debian's 6.12 and 7.x trees (both eras of irq_create_affinity_masks(), both
/// mappers) agrees with the models on 2,000 machines each.
#[test]
fn debian_trees_agree_with_their_models() {
    for (var, models) in [
        (
            "IRQSCOPE_KERNEL_C_612",
            "pre-cluster (heap-v6.11, numgrps, mapper v6.3)",
        ),
        ("IRQSCOPE_KERNEL_C_72", "cluster (heap-v6.11, nummasks, mapper current)"),
    ] {
        let Some(t) = tree(var) else { continue };
        let s = Scratch::new("agree");
        let (code, out, err) = irqscope(
            s.path(),
            &["kernel-c", "verify", t.to_str().unwrap(), "--cases", "2000"],
        );
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.lines().any(|l| l == format!("against {models}:")), "{out}");
        for stage in [
            "group_cpus_evenly",
            "irq_create_affinity_masks",
            "irq_calc_affinity_vectors",
            "blk_mq_map_queues",
            "blk_mq_map_hw_queues",
        ] {
            assert!(
                out.lines()
                    .any(|l| l.split_whitespace().collect::<Vec<_>>() == [stage, "2000", "agree"]),
                "{stage}: {out}"
            );
        }
        assert!(out.lines().any(|l| l == "2000 machines, 5 stages: all agree"), "{out}");
    }
}

/// The CPU count of a shrunk case's machine line ("6 CPUs, 2 nodes, …", "1 CPU, 1 node, …").
fn shrunk_cpus(out: &str) -> u32 {
    out.lines()
        .find_map(|l| {
            let (n, rest) = l.split_once(' ')?;
            (rest.starts_with("CPUs, ") || rest.starts_with("CPU, ")).then(|| n.parse().unwrap())
        })
        .unwrap_or_else(|| panic!("a shrunk case: {out}"))
}

/// A patch of kernel/irq/affinity.c (written here: the vectors past the initialized masks get
/// every CPU instead of irq_default_affinity, the answer D1 fixed in the model) is caught in
/// its stage and shrunk, its case file fails check-golden, and `compare` of the tree against
/// the patched tree shows the vector that moved.
#[test]
fn a_different_affinity_c_is_caught_small_and_compare_shows_what_moved() {
    let Some(t) = tree("IRQSCOPE_KERNEL_C_72") else { return };
    let s = Scratch::new("affinity");
    let (plain, _) = patched_file(
        s.path(),
        &t,
        "kernel/irq/affinity.c",
        "for (; curvec < nvecs; curvec++)\n\t\tcpumask_copy(&masks[curvec].mask, irq_default_affinity);",
        "for (; curvec < nvecs; curvec++)\n\t\tcpumask_setall(&masks[curvec].mask);",
    );
    let cache = s.path().join("cache");
    let tree = t.to_str().unwrap();
    let out_dir = s.path().to_str().unwrap();
    let (code, out, err) = irqscope(
        &cache,
        &[
            "kernel-c",
            "verify",
            tree,
            "--name",
            "setall",
            "--patch",
            plain.to_str().unwrap(),
            "--out",
            out_dir,
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("irq_create_affinity_masks")
                && l.ends_with("agree, then a disagreement")),
        "{out}"
    );
    assert!(shrunk_cpus(&out) <= 16, "{out}");
    assert!(
        out.contains("irqaffinity="),
        "only irqaffinity= tells the two apart: {out}"
    );
    assert!(out.contains("first difference: descs["), "{out}");
    let case = std::fs::read_dir(s.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("the case file");
    let (code, gout, _) = irqscope(&cache, &["check-golden", case.to_str().unwrap()]);
    assert_eq!((code, gout.contains("0 passed, 1 failed")), (1, true), "{gout}");
    let (code, _, err) = irqscope(&cache, &["kernel-c", "build", tree, "--name", "base"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = irqscope(
        &cache,
        &[
            "compare",
            "vm-8vcpu-smt2",
            "9:name=q",
            "--kernel",
            "7.2",
            "--irqaffinity",
            "1",
            "--a",
            "c:base",
            "--b",
            "c:setall",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("q: 1 of 9 vectors moved"), "{out}");
    let moved: Vec<&str> = out
        .lines()
        .find(|l| l.trim_start().starts_with("vec    8"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(moved, ["vec", "8", "queue", "8", "1", "->", "7"], "{out}");
    // A patched build's answer is the tree's plus its patch, not a release model's range.
    let (code, out, err) = irqscope(
        &cache,
        &["simulate", "vm-8vcpu-smt2", "9:name=q", "--variant", "c:setall"],
    );
    assert_eq!(code, 0, "{err}");
    let line = out.lines().find(|l| l.starts_with("kernel:")).unwrap();
    assert!(
        line.starts_with("kernel:   7.2.") && line.contains(" tree + 1 patch (") && line.ends_with("), built C"),
        "{line}"
    );
    let (_, out, _) = irqscope(
        &cache,
        &["simulate", "vm-8vcpu-smt2", "9:name=q", "--variant", "c:base"],
    );
    let line = out.lines().find(|l| l.starts_with("kernel:")).unwrap();
    assert!(
        line.starts_with("kernel:   7.2.") && line.ends_with(" tree, built C"),
        "{line}"
    );
}

/// A patch of block/blk-mq-cpumap.c that maps the queues past the initialized masks to masks
/// that are empty is caught in blk_mq_map_queues() and shrunk.
#[test]
fn a_different_blk_mq_cpumap_c_is_caught_small() {
    let Some(t) = tree("IRQSCOPE_KERNEL_C_72") else { return };
    let s = Scratch::new("cpumap");
    let (plain, _) = patched_file(
        s.path(),
        &t,
        "block/blk-mq-cpumap.c",
        "&masks[queue % nr_masks]",
        "&masks[queue]",
    );
    let (code, out, err) = irqscope(
        &s.path().join("cache"),
        &[
            "kernel-c",
            "verify",
            t.to_str().unwrap(),
            "--patch",
            plain.to_str().unwrap(),
            "--out",
            s.path().to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("blk_mq_map_queues(): nr_queues "), "{out}");
    assert!(shrunk_cpus(&out) <= 4, "{out}");
    assert!(out.contains("first difference: map["), "{out}");
}

#[test]
fn a_changed_rounding_is_caught_small_and_the_mail_applies_the_same() {
    let Some(t) = tree("IRQSCOPE_KERNEL_C_72") else { return };
    let s = Scratch::new("round");
    // alloc_groups_to_nodes(): round the share up instead of down.
    let (plain, mail) = patched(
        s.path(),
        &t,
        "numgrps * ncpus / remaining_ncpus);",
        "(numgrps * ncpus + remaining_ncpus - 1) / remaining_ncpus);",
    );
    let cache = s.path().join("cache");
    // `name` None: the default name (`7.2.13-patched`), the same for every patch.
    let run = |patch: &Path, name: Option<&str>| {
        let mut args = vec![
            "kernel-c",
            "verify",
            t.to_str().unwrap(),
            "--patch",
            patch.to_str().unwrap(),
        ];
        if let Some(n) = name {
            args.extend(["--name", n]);
        }
        args.extend(["--cases", "2000", "--out", s.path().to_str().unwrap()]);
        irqscope(&cache, &args)
    };
    let (code, out, err) = run(&plain, None);
    assert_eq!(code, 1, "{out}{err}");
    let cpus = shrunk_cpus(&out);
    assert!(cpus <= 16, "shrunk to {cpus} CPUs: {out}");
    // The first stage to meet the change may be a later one that calls group_cpus_evenly().
    assert!(
        out.contains("first difference: masks[")
            || out.contains("first difference: map[")
            || out.contains("first difference: descs["),
        "{out}"
    );
    // Every line fits 72 columns but those carrying the paths this test chose.
    for l in out
        .lines()
        .filter(|l| !l.contains(&*s.path().to_string_lossy()) && !l.contains(&*t.to_string_lossy()))
    {
        assert!(l.chars().count() <= 72, "a line over 72 columns: {l:?}");
    }
    // The case file is a golden case the model fails, field by field.
    let cases = || -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(s.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with("-seed1.json"))
            .collect();
        v.sort();
        v
    };
    let first = cases();
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(
        first[0].to_string_lossy().contains("disagreement-7.2.13-patched-"),
        "{first:?}"
    );
    let (code, gout, _) = irqscope(&cache, &["check-golden", first[0].to_str().unwrap()]);
    assert_eq!(code, 1, "{gout}");
    assert!(gout.contains("0 passed, 1 failed"), "{gout}");
    // Another patch under the same name and seed keeps its own file (named by its build).
    let other = s.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let (setall, _) = patched_file(
        &other,
        &t,
        "kernel/irq/affinity.c",
        "for (; curvec < nvecs; curvec++)\n\t\tcpumask_copy(&masks[curvec].mask, irq_default_affinity);",
        "for (; curvec < nvecs; curvec++)\n\t\tcpumask_setall(&masks[curvec].mask);",
    );
    let (code, out3, err3) = run(&setall, None);
    assert_eq!(code, 1, "{out3}{err3}");
    assert_eq!(cases().len(), 2, "{:?}", cases());
    // The same change as a mail: the same build, the same verdict.
    let (code2, out2, err2) = run(&mail, Some("mail"));
    assert_eq!(code2, 1, "{out2}{err2}");
    let tail = |o: &str| {
        let lines: Vec<&str> = o.lines().skip_while(|l| *l != "shrunk to").take(6).collect();
        assert_eq!(lines.len(), 6, "{o}");
        lines.join("\n")
    };
    assert_eq!(tail(&out), tail(&out2));
    let (_, b1, _) = irqscope(
        &cache,
        &[
            "kernel-c",
            "build",
            t.to_str().unwrap(),
            "--patch",
            plain.to_str().unwrap(),
        ],
    );
    let (_, b2, _) = irqscope(
        &cache,
        &[
            "kernel-c",
            "build",
            t.to_str().unwrap(),
            "--patch",
            mail.to_str().unwrap(),
        ],
    );
    let id = |o: &str| {
        o.lines()
            .find(|l| l.trim_start().starts_with("id "))
            .unwrap()
            .to_string()
    };
    assert_eq!(id(&b1), id(&b2));
    assert!(
        b2.contains("[PATCH v2] lib/group_cpus: a change made by the test"),
        "{b2}"
    );
}

#[test]
fn broken_c_is_a_clear_error_in_the_cli() {
    let Some(t) = tree("IRQSCOPE_KERNEL_C_72") else { return };
    let s = Scratch::new("broken");
    let cache = s.path().join("cache");
    let entry = "\tif (numgrps == 0)\n\t\treturn NULL;\n\n\tif (!zalloc_cpumask_var(&nmsk, GFP_KERNEL))";
    let cases = [
        ("crash", "\tif (numgrps == 0)\n\t\treturn NULL;\n\t*(volatile int *)8 = 1;\n\n\tif (!zalloc_cpumask_var(&nmsk, GFP_KERNEL))", "SIGSEGV"),
        ("loop", "\tif (numgrps == 0)\n\t\treturn NULL;\n\tfor (;;)\n\t\t;\n\n\tif (!zalloc_cpumask_var(&nmsk, GFP_KERNEL))", "wall-clock limit"),
        ("nocompile", "\tif (numgrps == 0)\n\t\treturn NULL;\n\tirqscope_no_such_helper();\n\n\tif (!zalloc_cpumask_var(&nmsk, GFP_KERNEL))", "calls irqscope_no_such_helper()"),
    ];
    for (name, to, want) in cases {
        let dir = s.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let (plain, _) = patched(&dir, &t, entry, to);
        let started = std::time::Instant::now();
        let (code, out, err) = build_patched(&cache, &t, name, &plain);
        if name == "nocompile" {
            assert_eq!(code, 2, "{out}{err}");
            assert!(err.contains(want) && err.contains("lib/group_cpus.c:"), "{err}");
            // The compiler's message keeps its lines, one error or note a line.
            assert!(
                err.lines()
                    .any(|l| l.starts_with("lib/group_cpus.c:") && l.contains("error:")),
                "{err}"
            );
            continue;
        }
        assert_eq!(code, 0, "{out}{err}");
        let (code, out, err) = irqscope(
            &cache,
            &["simulate", "azure-l48s-v2", "2x8", "--variant", &format!("c:{name}")],
        );
        assert_eq!(code, 2, "{out}{err}");
        // One error line, after the lines saying where each model came from.
        let errors: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("irqscope: ") && !l.starts_with("irqscope: models: "))
            .collect();
        assert!(errors.len() == 1 && errors[0].contains(want), "{err}");
        assert!(err.lines().last().is_some_and(|l| l.contains(want)), "{err}");
        assert!(started.elapsed().as_secs() < 30, "within its limits");
    }
    // A hunk that does not apply names itself.
    let dir = s.path().join("stale");
    std::fs::create_dir_all(&dir).unwrap();
    let diff = make_patch(&dir, "int a;\nint b;\nint c;\n", "int a;\nint B;\nint c;\n");
    std::fs::write(dir.join("stale.diff"), diff).unwrap();
    let (code, _, err) = irqscope(
        &cache,
        &[
            "kernel-c",
            "build",
            t.to_str().unwrap(),
            "--patch",
            dir.join("stale.diff").to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("does not apply") && err.contains("Hunk #1 FAILED"),
        "{err}"
    );
}

async fn get(app: &axum::Router, uri: &str) -> (StatusCode, String) {
    let req = Request::get(uri).header(header::HOST, "irqscope.test");
    let resp = app.clone().oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
    let status = resp.status();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

pub(crate) fn link(variant: &str, pin: Option<&str>) -> String {
    let spec = ScenarioSpec {
        variant: variant.into(),
        kernel_c: pin.map(str::to_string),
        ..ScenarioSpec::new(TopologyRef::Preset("azure-l48s-v2".into()), vec![DeviceSpec::new(2, 8)])
    };
    format!("/s/{}", permalink::encode(&spec).unwrap())
}

#[tokio::test]
async fn pages_run_registered_c_and_survive_broken_c() {
    use irqscope::web::kernel_c::{KernelCRegistry, Registered};
    let Some(t) = tree("IRQSCOPE_KERNEL_C_72") else { return };
    let s = Scratch::new("web");
    let build = |name: &str, patches: Vec<PathBuf>| {
        tools::build(&BuildOptions {
            source: t.display().to_string(),
            name: Some(name.into()),
            patches,
            apt_options: Vec::new(),
            sort: None,
            cache: s.path().join("cache"),
            strict: false,
        })
    };
    let limits = Limits {
        call: std::time::Duration::from_secs(2),
        ..Limits::default()
    };
    let ok = build("webok", Vec::new()).unwrap();
    let id = ok.provenance.id.clone();
    let entry = |name: &str, b: Result<kernel_c::Built, kernel_c::KernelCError>| Registered {
        name: name.into(),
        source: t.display().to_string(),
        build: b
            .map(|b| (b.provenance.clone(), External(Arc::new(KernelC::new(b, limits)))))
            .map_err(|e| e.to_string()),
    };
    let mut entries = vec![entry("webok", Ok(ok))];
    let (crash, _) = patched(
        s.path(),
        &t,
        "\tif (numgrps == 0)\n\t\treturn NULL;\n\n\tif (!zalloc_cpumask_var(&nmsk, GFP_KERNEL))",
        "\tif (numgrps == 0)\n\t\treturn NULL;\n\t*(volatile int *)8 = 1;\n\n\tif (!zalloc_cpumask_var(&nmsk, GFP_KERNEL))",
    );
    entries.push(entry("webcrash", build("webcrash", vec![crash])));
    let bad = s.path().join("bad.diff");
    let old = std::fs::read_to_string(t.join("lib/group_cpus.c")).unwrap();
    let dir = s.path().join("badpatch");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        &bad,
        make_patch(&dir, &old, &old.replace("return NULL;", "return irqscope_undefined;")),
    )
    .unwrap();
    entries.push(entry("webbroken", build("webbroken", vec![bad])));

    let app = irqscope::web::app(irqscope::web::AppState {
        kernel_c: KernelCRegistry::new(entries),
        ..Default::default()
    });
    let (status, body) = get(&app, &link("c:webok", None)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("c:webok"), "the page names the variant");
    // The C gives the model's answer on this machine: the same text as `cluster`, renamed.
    let (_, c_text) = get(&app, &format!("{}/text", link("c:webok", Some(&id)))).await;
    let (_, m_text) = get(&app, &format!("{}/text", link("cluster", None))).await;
    let summary = |t: &str| {
        t.lines()
            .filter(|l| l.contains("CPUs") && l.contains("serve"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert!(!summary(&m_text).is_empty());
    assert_eq!(summary(&c_text), summary(&m_text));
    let (status, body) = get(&app, &link("c:webcrash", None)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("SIGSEGV"), "{body}");
    let (status, body) = get(&app, &link("c:webbroken", None)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("irqscope_undefined"), "{body}");
    let (status, body) = get(&app, &link("c:webok", Some(&"0".repeat(64)))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(body.contains("--kernel-c webok=SOURCE"), "{body}");
    // Still serving, and the list shows provenance.
    let (status, body) = get(&app, "/kernel-c").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains(&id) && body.contains("did not build"), "{body}");
    let (status, _) = get(&app, &link("c:webok", Some(&id))).await;
    assert_eq!(status, StatusCode::OK);
}

/// Outside code for the pages, without a compiler: the `cluster` model behind a `c:` name, or
/// code that fails every call as a crashed harness does; built from a tree of `version` with
/// `patches` on it.
struct Fake {
    name: String,
    id: String,
    fails: bool,
    version: Option<String>,
    patches: Vec<String>,
}

impl irqscope::kernel::ExternalGroupCpus for Fake {
    fn name(&self) -> &str {
        &self.name
    }
    fn tree_version(&self) -> Option<&str> {
        self.version.as_deref()
    }
    fn patches(&self) -> &[String] {
        &self.patches
    }
    fn describe(&self) -> &str {
        "built C: a stand-in for the test"
    }
    fn id(&self) -> &str {
        &self.id
    }
    fn uses_counter(&self) -> bool {
        false
    }
    fn group_cpus_evenly(
        &self,
        topo: &irqscope::topology::Topology,
        numgrps: u32,
        counter: &mut u32,
        warnings: &mut Vec<irqscope::kernel::KernelWarn>,
    ) -> Result<Option<irqscope::kernel::Grouping>, irqscope::kernel::ExternalError> {
        if self.fails {
            return Err(irqscope::kernel::ExternalError(format!(
                "{}: the C crashed (SIGSEGV: a wild read or write)",
                self.name
            )));
        }
        Ok(irqscope::kernel::group_cpus_evenly(
            topo,
            numgrps,
            irqscope::kernel::Variant::Cluster,
            irqscope::kernel::SortGen::HeapV6_11,
            counter,
            warnings,
        ))
    }
}

pub(crate) fn fake(name: &str, fails: bool) -> irqscope::web::kernel_c::Registered {
    let id = format!("{:064x}", name.len() + 7 * usize::from(fails));
    let provenance = kernel_c::Provenance {
        name: name.into(),
        id: id.clone(),
        origin: "test".into(),
        source_sha256: id.clone(),
        version: None,
        package_version: None,
        patches: Vec::new(),
        sort: "irqscope heap-v6.11".into(),
        counter: None,
        api: "group_cpus_evenly(numgrps, &nummasks)".into(),
        compile_ms: 0,
        stages: Vec::new(),
        patch_notes: Vec::new(),
    };
    let code = Fake {
        name: format!("c:{name}"),
        id,
        fails,
        version: None,
        patches: Vec::new(),
    };
    irqscope::web::kernel_c::Registered {
        name: name.into(),
        source: "test".into(),
        build: Ok((provenance, External(Arc::new(code)))),
    }
}

async fn send(app: &axum::Router, method: &str, uri: &str, body: Option<String>) -> (StatusCode, String) {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::HOST, "irqscope.test")
        .header(header::CONTENT_TYPE, "application/json");
    let req = req.body(body.map(Body::from).unwrap_or_else(Body::empty)).unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// Every page and API that runs a scenario, sent a `c:` variant: the registered build runs, a
/// build that fails at run time or did not compile is a 400 with why, a name the server lacks
/// a 404 saying how to register it; never a panic, and the server goes on serving.
#[tokio::test]
async fn every_scenario_page_answers_a_c_variant_clearly() {
    use irqscope::scenario::payloads::{CompareSpec, SideSpec};
    use irqscope::web::kernel_c::{KernelCRegistry, Registered};
    let registry = KernelCRegistry::new(vec![
        fake("fake", false),
        fake("crashy", true),
        Registered {
            name: "nobuild".into(),
            source: "/src/linux".into(),
            build: Err("the C does not compile against irqscope's stand-ins".into()),
        },
    ]);
    let ids: std::collections::HashMap<String, String> = registry
        .registered()
        .filter_map(|r| r.build.as_ref().ok().map(|(p, _)| (r.name.clone(), p.id.clone())))
        .collect();
    let app = irqscope::web::app(irqscope::web::AppState {
        kernel_c: registry,
        ..Default::default()
    });
    let cases: [(&str, StatusCode, &str); 4] = [
        ("fake", StatusCode::OK, "c:fake"),
        ("crashy", StatusCode::BAD_REQUEST, "c:crashy: the C crashed (SIGSEGV"),
        (
            "nobuild",
            StatusCode::BAD_REQUEST,
            "c:nobuild (/src/linux) did not build",
        ),
        (
            "absent",
            StatusCode::NOT_FOUND,
            "irqscope serve --kernel-c absent=SOURCE",
        ),
    ];
    for (name, want, says) in cases {
        let variant = format!("c:{name}");
        let spec = ScenarioSpec {
            variant: variant.clone(),
            kernel_c: ids.get(name).cloned(),
            ..ScenarioSpec::new(TopologyRef::Preset("azure-l48s-v2".into()), vec![DeviceSpec::new(2, 8)])
        };
        let json = serde_json::to_string(&spec).unwrap();
        let s = permalink::encode(&spec).unwrap();
        let compare = CompareSpec {
            scenario: ScenarioSpec {
                variant: "cluster".into(),
                kernel_c: None,
                ..spec.clone()
            },
            a: SideSpec {
                variant: Some(variant.clone()),
                kernel_c: ids.get(name).cloned(),
                ..SideSpec::default()
            },
            b: SideSpec::default(),
        };
        let c = permalink::encode(&compare).unwrap();
        let q = "preset=azure-l48s-v2&devices=2x8";
        let requests: Vec<(&str, String, Option<String>)> = vec![
            ("GET", format!("/?{q}&variant={variant}"), None),
            ("GET", format!("/s/{s}"), None),
            ("GET", format!("/s/{s}/text"), None),
            ("GET", format!("/s/{s}/json"), None),
            ("POST", "/api/simulate".into(), Some(json.clone())),
            ("POST", "/fragment".into(), Some(json.clone())),
            ("GET", format!("/compare?{q}&a={variant}&b=cluster"), None),
            ("GET", format!("/compare?{q}&a=cluster&b={variant}"), None),
            ("GET", format!("/c/{c}"), None),
            ("GET", format!("/c/{c}/text"), None),
            ("GET", format!("/c/{c}/json"), None),
            (
                "GET",
                format!("/sweep?topologies=azure-l48s-v2&variants={variant}&counters=0..2"),
                None,
            ),
            (
                "GET",
                format!("/sweep/text?topologies=azure-l48s-v2&variants=cluster,{variant}"),
                None,
            ),
            (
                "GET",
                format!("/sweep/csv?topologies=azure-l48s-v2&variants={variant}"),
                None,
            ),
            (
                "GET",
                format!("/sweep/json?topologies=azure-l48s-v2&variants={variant}"),
                None,
            ),
            (
                "GET",
                format!("/blkmq?preset=azure-l48s-v2&queues=8&variant={variant}"),
                None,
            ),
        ];
        for (method, uri, body) in requests {
            let (status, text) = send(&app, method, &uri, body).await;
            assert_eq!(status, want, "{method} {uri}: {text}");
            if want == StatusCode::OK {
                assert!(text.contains(says), "{method} {uri} names {says}");
            } else {
                assert!(text.contains(says), "{method} {uri}: {text}");
                assert_eq!(text.lines().count(), 1, "{method} {uri}: one line: {text}");
            }
        }
    }
    // A compare link pins the build each c: side ran, and reproduces itself.
    let (status, body) = send(
        &app,
        "GET",
        "/compare?preset=azure-l48s-v2&devices=2x8&a=c:fake&b=cluster",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let link = body
        .split("/c/")
        .nth(1)
        .and_then(|r| r.split(['"', '/', '?', '<']).next())
        .expect("the page links its permalink");
    let decoded: CompareSpec = permalink::decode(link).unwrap();
    assert_eq!(decoded.a.kernel_c.as_deref(), ids.get("fake").map(String::as_str));
    let (status, _) = send(&app, "GET", "/", None).await;
    assert_eq!(status, StatusCode::OK, "still serving");
}

/// A server with builds links `/kernel-c` from every page's navigation, and the list is a page
/// of the site (its navigation too); a server without builds does not link it.
#[tokio::test]
async fn the_navigation_links_built_c_only_when_the_server_has_some() {
    use irqscope::web::kernel_c::KernelCRegistry;
    let with = irqscope::web::app(irqscope::web::AppState {
        kernel_c: KernelCRegistry::new(vec![fake("fake", false)]),
        ..Default::default()
    });
    let without = irqscope::web::app(irqscope::web::AppState::default());
    let nav = "<a href=\"/kernel-c\" id=\"nav-kernel-c\">";
    let c_link = link("c:fake", None);
    for uri in [
        "/",
        c_link.as_str(),
        "/compare",
        "/sweep",
        "/mana",
        "/sched",
        "/blkmq",
        "/seeds",
        "/live",
        "/fleet",
        "/kernel-c",
    ] {
        let (status, body) = get(&with, uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        assert!(body.contains(nav), "{uri}: no link to /kernel-c");
        if uri != c_link {
            let (_, body) = get(&without, uri).await;
            assert!(
                !body.contains("nav-kernel-c"),
                "{uri}: a link to /kernel-c without builds"
            );
        }
    }
    let (_, list) = get(&with, "/kernel-c").await;
    assert!(
        list.contains("<code>c:fake</code>") && list.contains("id=\"nav-live\""),
        "{list}"
    );
}

/// A comparison whose side A is built C and that names no side B runs B on the model of the
/// scenario's kernel release, the code the build patches: the newest release's (`cluster`)
/// when none is named, v6.1's (`pre-cluster`) for `kernel=6.1`.
#[tokio::test]
async fn a_built_c_side_is_compared_with_its_release_model_by_default() {
    use irqscope::web::kernel_c::KernelCRegistry;
    let app = irqscope::web::app(irqscope::web::AppState {
        kernel_c: KernelCRegistry::new(vec![fake("fake", false)]),
        ..Default::default()
    });
    for (kernel, want) in [("", "cluster"), ("6.1", "pre-cluster")] {
        let uri = format!("/compare?preset=azure-l48s-v2&devices=2x8&a=c:fake&kernel={kernel}");
        let (status, body) = get(&app, &uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        assert!(
            body.contains(": A c:fake (") && body.contains(&format!(" · B {want} (")),
            "{uri}: {body}"
        );
    }
}

/// A hunk that applies only at an offset (the tree moved since the patch was made) is built
/// and said, and refused with --strict.
#[test]
fn a_hunk_applied_at_an_offset_is_said_and_refused_with_strict() {
    let Some(t) = tree("IRQSCOPE_KERNEL_C_72") else { return };
    let s = Scratch::new("offset");
    let old = std::fs::read_to_string(t.join("lib/group_cpus.c")).unwrap();
    let from = "numgrps * ncpus / remaining_ncpus);";
    assert_eq!(old.matches(from).count(), 1);
    // The patch is made against the file with three lines less at its top.
    let cut: String = old.lines().skip(3).map(|l| format!("{l}\n")).collect();
    let diff = make_patch(
        s.path(),
        &cut,
        &cut.replace(from, "(numgrps * ncpus + 1) / remaining_ncpus);"),
    );
    let patch = s.path().join("moved.diff");
    std::fs::write(&patch, diff).unwrap();
    let cache = s.path().join("cache");
    let args = |strict: bool| {
        let mut a = vec![
            "kernel-c",
            "build",
            t.to_str().unwrap(),
            "--patch",
            patch.to_str().unwrap(),
        ];
        if strict {
            a.push("--strict");
        }
        a
    };
    let (code, out, err) = irqscope(&cache, &args(false));
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("lib/group_cpus.c: Hunk #1 succeeded at") && err.contains("(offset 3 lines)"),
        "{err}"
    );
    let (code, _, err) = irqscope(&cache, &args(true));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("applies only with an offset or fuzz (--strict)"), "{err}");
}

/// A `c:` variant's kernel line and JSON say it is a tree (and its patches), not the range of
/// the release model it stands in for: "7.2.13 tree + 2 patches (…), built C", the subjects cut
/// to fit 62 columns in text and whole in JSON.
#[test]
fn a_patched_build_says_it_is_a_patch_on_its_tree() {
    use irqscope::render::summary::{range_json, range_line};
    let run = |version: Option<&str>, patches: &[&str]| {
        let spec = ScenarioSpec::new(TopologyRef::Preset("vm-8vcpu-smt2".into()), vec![DeviceSpec::new(1, 8)]);
        let code = Fake {
            name: "c:patched".into(),
            id: "0123456789abcdef".repeat(4),
            fails: false,
            version: version.map(str::to_string),
            patches: patches.iter().map(|p| p.to_string()).collect(),
        };
        let scenario = spec
            .resolve(irqscope::catalogue::get)
            .unwrap()
            .with_external(Some(External(Arc::new(code))));
        irqscope::scenario::kernel::holds_for(&scenario, &irqscope::scenario::run(&scenario))
    };
    let two = run(
        Some("7.2.13"),
        &[
            "lib/group_cpus: spread the leftovers over the last node",
            "genirq/affinity: copy the default mask",
        ],
    );
    let line = range_line(&two);
    assert!(
        line.starts_with("7.2.13 tree + 2 patches (lib/group_cpus: spread"),
        "{line}"
    );
    assert!(line.ends_with("…), built C"), "{line}");
    assert!(line.chars().count() <= 62, "{line}");
    let j = range_json(&two);
    assert_eq!(j["built"]["version"], "7.2.13");
    assert_eq!(j["built"]["patches"][1], "genirq/affinity: copy the default mask");
    assert_eq!(j["holds_for"], serde_json::json!(["v7.2"]));
    assert_eq!(j["line"], line.as_str());
    assert_eq!(
        range_line(&run(Some("6.12.118"), &["a.diff"])),
        "6.12.118 tree + 1 patch (a.diff), built C"
    );
    assert_eq!(range_line(&run(Some("6.12.118"), &[])), "6.12.118 tree, built C");
    assert_eq!(range_line(&run(None, &[])), "a tree of unknown version, built C");
}

/// The live processes whose parent is `pid` (read from `/proc/*/stat`).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let child: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).ok()?;
        let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
        (fields.get(1)?.parse::<u32>().ok()? == pid && fields.first()? != &"Z").then_some(child)
    })
    .collect()
}

/// How long a whole answer to `GET path` (on a connection of its own) takes.
fn time_get(port: u16, path: &str) -> std::time::Duration {
    use std::io::{Read, Write};
    let t0 = std::time::Instant::now();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    assert!(
        got.starts_with(b"HTTP/1.1 200"),
        "{path}: {}",
        String::from_utf8_lossy(&got)
    );
    t0.elapsed()
}

/// Built C that never returns, reached by two permalinks at once, holds up nobody else: every
/// `c:` scenario runs on a blocking thread, never on one of the server's async workers (two on
/// a machine of two CPUs, which two such requests inline would both hold until the harness's
/// wall-clock limit). The index page and a static file from another client answer within
/// 100 ms (the median of seven each; the slowest within a second: the harnesses spin on both
/// CPUs meanwhile and the machine may be shared, so one slow answer is noise, while a held-up
/// answer waits seconds for the harness's limit). At the request's deadline the looping calls
/// are killed, not at their own wall-clock limit.
#[test]
fn looping_c_holds_up_no_other_client() {
    use crate::common::process::{free_port, KillGroupOnDrop};
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};
    let Some(t) = tree("IRQSCOPE_KERNEL_C_72") else { return };
    let s = Scratch::new("loopserve");
    let (plain, _) = patched(
        s.path(),
        &t,
        "\tif (numgrps == 0)\n\t\treturn NULL;\n\n\tif (!zalloc_cpumask_var(&nmsk, GFP_KERNEL))",
        "\tif (numgrps == 0)\n\t\treturn NULL;\n\tfor (;;)\n\t\t;\n\n\tif (!zalloc_cpumask_var(&nmsk, GFP_KERNEL))",
    );
    let port = free_port();
    let server = KillGroupOnDrop(
        Command::new(env!("CARGO_BIN_EXE_irqscope"))
            .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
            .args(["--kernel-c", &format!("loop={}", t.display())])
            .args(["--kernel-c-patch", &format!("loop={}", plain.display())])
            .args(["--request-timeout-ms", "3000"])
            .env("IRQSCOPE_KERNEL_C_DIR", s.path().join("cache"))
            .env("IRQSCOPE_KERNEL_C_CALL_MS", "10000")
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "irqscope serve did not listen"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid = server.0.id();
    // Two looping requests in flight (two permalinks: neither waits for the other's answer).
    let looping: Vec<std::net::TcpStream> = [8, 9]
        .map(|n| {
            let spec = ScenarioSpec {
                variant: "c:loop".into(),
                ..ScenarioSpec::new(TopologyRef::Preset("azure-l48s-v2".into()), vec![DeviceSpec::new(2, n)])
            };
            let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            let path = format!("/s/{}", permalink::encode(&spec).unwrap());
            std::io::Write::write_all(
                &mut c,
                format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes(),
            )
            .unwrap();
            c
        })
        .into();
    let t0 = Instant::now();
    while children_of(pid).len() < 2 {
        assert!(t0.elapsed() < Duration::from_secs(5), "the harnesses did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let times = |path: &str| {
        let mut took: Vec<Duration> = (0..7).map(|_| time_get(port, path)).collect();
        took.sort();
        took
    };
    let (index, asset) = (times("/"), times("/static/style.css"));
    eprintln!("GET / {index:?}; a static file {asset:?}");
    for (what, took) in [("GET /", &index), ("a static file", &asset)] {
        assert!(
            took[3] < Duration::from_millis(100) && took[6] < Duration::from_secs(1),
            "{what} took {took:?}: the median over 100 ms or the slowest over 1 s"
        );
    }
    // Measured while both calls still looped.
    assert!(
        t0.elapsed() < Duration::from_millis(2500),
        "measured too late: {:?}",
        t0.elapsed()
    );
    assert_eq!(children_of(pid).len(), 2, "both harnesses still loop");
    // The looping requests are answered 408 at their deadline (3 s), and their harnesses are
    // killed then, not at the call's own limit (10 s).
    for mut c in looping {
        let mut got = Vec::new();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let _ = std::io::Read::read_to_end(&mut c, &mut got);
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    }
    while !children_of(pid).is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(6),
            "the harnesses outlived the deadline: {:?}",
            t0.elapsed()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
