//! `irqscope review`: patches written here at run time from Debian's tree (never kernel code
//! kept in the repository), reviewed against that tree: a comment changes no machine (exit
//! 0), a new remainder rule regresses catalogue machines and a shrunk case confirmed on the C
//! (exit 1), a patch that does not apply, not a patch, a patch to other files (exit 2), and
//! seed 000's rotation as a patch of its own. Without `IRQSCOPE_KERNEL_C_72` the tests that
//! need a tree say so and pass without checking.

use crate::common::fs::Scratch;
use crate::kernel_c::{irqscope, make_patch_of, patched, tree};
use std::path::Path;

/// The remainder rule of `assign_cpus_to_groups()` in Debian's 7.2 tree.
const REMAINDER: &str = "\t\tcpus_per_grp = ncpus / nv->ngroups;

\t\t/* Account for extra groups to compensate rounding errors */
\t\tif (extra_grps) {
\t\t\tcpus_per_grp++;
\t\t\t--extra_grps;
\t\t}
";

/// Every group one CPU but the last, which takes the rest.
const LAST_TAKES_ALL: &str = "\t\tcpus_per_grp = v == nv->ngroups - 1 ?
\t\t\tncpus - (nv->ngroups - 1) : 1;
";

fn review(cache: &Path, tree: &Path, patch: &Path, more: &[&str]) -> (i32, String, String) {
    let mut args = vec!["review", patch.to_str().unwrap(), "--base", tree.to_str().unwrap()];
    args.extend_from_slice(more);
    irqscope(cache, &args)
}

/// Every line of a reply within 72 columns, bare link and path lines aside (one word on a
/// line of its own: it cannot be broken).
fn assert_fits(reply: &str) {
    for line in reply.lines() {
        let word = line.trim().trim_end_matches('\\').trim_end();
        let bare = word.starts_with('/') && !word.contains(' ');
        assert!(line.chars().count() <= 72 || bare, "longer than 72 columns: {line:?}");
    }
}

#[test]
fn a_comment_changes_no_machine() {
    let Some(t) = tree("IRQSCOPE_KERNEL_C_72") else { return };
    let dir = Scratch::new("review-comment");
    let anchor = "\textra_grps = ncpus - nv->ngroups * (ncpus / nv->ngroups);\n";
    let (_, mail) = patched(
        &dir,
        &t,
        anchor,
        &format!("{anchor}\t/* the extra CPUs go to the first groups */\n"),
    );
    let (code, out, err) = review(&dir.join("cache"), &t, &mail, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("> "), "the subject quoted first: {out}");
    assert!(out.contains("No machine changes."), "{out}");
    assert!(
        out.contains("irqscope review"),
        "the command that makes it again: {out}"
    );
    assert_fits(&out);
    let (code, json, err) = review(&dir.join("cache"), &t, &mail, &["--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["exit_status"], 0);
    assert_eq!(v["rows"].as_array().unwrap().len(), 0);
    assert_eq!(v["classification"]["same_as_base"], true);
    assert_ne!(v["base"]["build"]["build_id"], v["patched"]["build_id"]);
}

#[test]
fn a_new_remainder_rule_regresses_and_shrinks() {
    let Some(t) = tree("IRQSCOPE_KERNEL_C_72") else { return };
    let dir = Scratch::new("review-remainder");
    let (_, mail) = patched(&dir, &t, REMAINDER, LAST_TAKES_ALL);
    let out_dir = dir.join("out");
    let (code, json, err) = review(
        &dir.join("cache"),
        &t,
        &mail,
        &["--format", "json", "--out", out_dir.to_str().unwrap()],
    );
    assert_eq!(code, 1, "{json}{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let worse: Vec<_> = rows.iter().filter(|r| r["change"] == "regression").collect();
    assert!(!worse.is_empty(), "a regression on the catalogue: {json}");
    for r in &worse {
        assert!(r["after"]["worst"].as_u64() >= r["before"]["worst"].as_u64());
        assert!(r["link"].as_str().unwrap().starts_with("/c/"));
    }
    assert_eq!(v["classification"]["same_as_base"], false);
    assert!(v["classification"]["group_cpus_differ"].as_u64().unwrap() > 0);
    let w = &v["worst_case"];
    assert!(w["cpus"].as_u64().unwrap() <= 16, "shrunk to 16 CPUs or fewer: {w}");
    assert!(w["after_worst"].as_u64() > w["before_worst"].as_u64(), "{w}");
    assert_eq!(w["confirmed"], true);
    let id = v["id"].as_str().unwrap();
    assert!(out_dir.join(format!("{id}.json")).is_file());
    assert!(out_dir.join(format!("{id}-worst.toml")).is_file());
    // The same review as text: the table, the per-CPU counts, the links.
    let (code, text, _) = review(&dir.join("cache"), &t, &mail, &[]);
    assert_eq!(code, 1);
    assert!(text.contains("This patch changes where interrupts land."), "{text}");
    assert!(text.contains("Machines that changed most"), "{text}");
    assert!(text.contains("  before  ") && text.contains("  after   "), "{text}");
    assert!(text.lines().any(|l| l.starts_with("/c/")), "{text}");
    assert_fits(&text);
}

#[test]
fn a_patch_that_does_not_apply_names_the_hunk() {
    let Some(t) = tree("IRQSCOPE_KERNEL_C_72") else { return };
    let dir = Scratch::new("review-stale");
    let old = std::fs::read_to_string(t.join("lib/group_cpus.c")).unwrap();
    // Made against a tree whose comment reads otherwise: the removed lines do not match.
    let elsewhere = old.replace(
        "/* Account for extra groups to compensate rounding errors */",
        "/* Extra groups for the rounding */",
    );
    let from = REMAINDER.replace(
        "/* Account for extra groups to compensate rounding errors */",
        "/* Extra groups for the rounding */",
    );
    let diff = make_patch_of(
        &dir,
        "lib/group_cpus.c",
        &elsewhere,
        &elsewhere.replace(&from, LAST_TAKES_ALL),
    );
    let file = dir.join("stale.diff");
    std::fs::write(&file, diff).unwrap();
    let (code, out, err) = review(&dir.join("cache"), &t, &file, &[]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.is_empty(), "nothing on stdout: {out}");
    assert!(
        err.contains("Hunk #1 FAILED") && err.contains("lib/group_cpus.c"),
        "{err}"
    );
}

#[test]
fn not_a_patch_and_other_files_are_refused() {
    let dir = Scratch::new("review-refused");
    let text = dir.join("notes.txt");
    std::fs::write(&text, "Hello,\nthis is not a patch.\n").unwrap();
    let diff = make_patch_of(&dir, "mm/page_alloc.c", "int a;\n", "int b;\n");
    let other = dir.join("other.diff");
    std::fs::write(&other, diff).unwrap();
    let cache = dir.join("cache");
    let tree = dir.join("no-tree");
    for (file, says) in [(&text, "not a patch"), (&other, "mm/page_alloc.c")] {
        let (code, out, err) = review(&cache, &tree, file, &[]);
        assert_eq!(code, 2, "{out}{err}");
        assert!(err.contains(says), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// Seed 000's rotation as a patch of these tests' own: it rotates which groups take the extra
/// CPUs by a file-static counter advanced once per call (the rotation revisions' own code is
/// in no Debian package and is never kept here). Written from the tree's file into `dir`.
fn seed_000_rotation(dir: &Path, t: &Path) -> std::path::PathBuf {
    let old = std::fs::read_to_string(t.join("lib/group_cpus.c")).unwrap();
    let mut new = old.clone();
    for (from, to) in [
        (
            "#include <linux/group_cpus.h>\n",
            "#include <linux/group_cpus.h>\n\n/* Which groups take the extra CPUs: one step per call */\n\
             static atomic_t extra_rotation;\nstatic unsigned int extra_offset;\n",
        ),
        (
            "\tif (numgrps == 0)\n\t\treturn NULL;\n\n\tif (!zalloc_cpumask_var(&nmsk, GFP_KERNEL))",
            "\tif (numgrps == 0)\n\t\treturn NULL;\n\textra_offset = atomic_fetch_inc(&extra_rotation);\n\n\
             \tif (!zalloc_cpumask_var(&nmsk, GFP_KERNEL))",
        ),
        (
            "\t\t/* Account for extra groups to compensate rounding errors */\n\t\tif (extra_grps) {\n\
             \t\t\tcpus_per_grp++;\n\t\t\t--extra_grps;\n\t\t}\n",
            "\t\t/* The extra CPUs go to the groups the call's offset picks */\n\
             \t\tif ((v + extra_offset) % nv->ngroups < extra_grps)\n\t\t\tcpus_per_grp++;\n",
        ),
    ] {
        assert_eq!(new.matches(from).count(), 1, "{from:?} once in the tree's file");
        new = new.replace(from, to);
    }
    // Mailed with the claim the thread's patch made, for the review to check.
    let diff = make_patch_of(dir, "lib/group_cpus.c", &old, &new);
    let patch = dir.join("rotation.mbox");
    std::fs::write(
        &patch,
        format!(
            "From 1234 Mon Sep 17 00:00:00 2001\nFrom: A Tester <t@example.org>\n\
             Subject: [PATCH] lib/group_cpus: rotate the extra CPUs\n\n\
             Identical devices stack their single-CPU interrupts on the same CPUs. Fix\n\
             this by rotating which groups take the extra CPUs.\n\n\
             Signed-off-by: A Tester <t@example.org>\n---\n{diff}-- \n2.47.0\n"
        ),
    )
    .unwrap();
    patch
}

/// Seed 000 as a review ([`seed_000_rotation`]): the reply names each catalogue machine whose
/// worst CPU it changes, with its figures before and after.
#[test]
fn seed_000_as_a_review_names_the_machines_it_changes() {
    let Some(t) = tree("IRQSCOPE_KERNEL_C_72") else { return };
    let dir = Scratch::new("review-seed-000");
    let patch = seed_000_rotation(&dir, &t);
    let cache = dir.join("cache");
    let (code, json, err) = review(&cache, &t, &patch, &["--format", "json"]);
    assert_eq!(code, 1, "{json}{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v["classification"]["group_cpus_differ"].as_u64().unwrap() > 0);
    assert_eq!(v["classification"]["stage_changed"], "group_cpus_evenly");
    let moved: Vec<&serde_json::Value> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["before"]["worst"] != r["after"]["worst"])
        .collect();
    assert!(!moved.is_empty(), "some catalogue machine's worst CPU changes: {json}");
    // The mail claims a better spread: the search checks it where the base had room.
    let claim = &v["claim"];
    assert_eq!(
        claim["claim"], "Fix this by rotating which groups take the extra CPUs.",
        "{json}"
    );
    let (room, improved) = (
        claim["with_room"].as_u64().unwrap(),
        claim["improved"].as_u64().unwrap(),
    );
    assert!(room > 0 && improved <= room, "{claim}");
    let (code, text, _) = review(&cache, &t, &patch, &[]);
    assert_eq!(code, 1);
    assert!(text.contains("The mail says \"Fix this by rotating"), "{text}");
    if let Some(case) = claim["case"].as_object() {
        assert!(case["after_worst"].as_u64() >= case["before_worst"].as_u64(), "{claim}");
        assert!(case["before_worst"].as_u64() > claim["case_ideal"].as_u64(), "{claim}");
        assert!(text.contains("Where the claimed improvement does not hold"), "{text}");
    }
    for r in moved.iter().take(10) {
        let machine = r["machine"].as_str().unwrap();
        assert!(
            text.contains(&format!("{machine}, {}:", r["mix"].as_str().unwrap())),
            "{machine}: {text}"
        );
        let figures = format!("{} -> {}", r["before"]["worst"], r["after"]["worst"]);
        assert!(text.contains(&figures), "{figures}: {text}");
    }
    assert_fits(&text);
}

/// Seed 000's configuration 3 (D96plds v6, arm64 with MSIs as GIC SPIs, six NVMe of 14
/// queues): each interrupt fires on the first CPU of its mask, so the base stacks six IRQs on
/// each of 14 CPUs and the rotation moves some of them. The review runs each machine with
/// its own effective-CPU model, as `compare` does, and lists the pair; its link names that
/// model too. (Run under x86's vector matrix, as it once was, every IRQ had a CPU of its own
/// on both builds and the pair read unchanged.)
#[test]
fn seed_000_configuration_3_changes_under_the_machines_own_effective_model() {
    let Some(t) = tree("IRQSCOPE_KERNEL_C_72") else { return };
    let dir = Scratch::new("review-seed-000-d96");
    let patch = seed_000_rotation(&dir, &t);
    let machines = ["--machines", "azure-d96plds-v6", "--format", "json", "--search", "0"];
    let (code, json, err) = review(&dir.join("cache"), &t, &patch, &machines);
    assert_eq!(code, 1, "{json}{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let row = rows
        .iter()
        .find(|r| r["machine"] == "azure-d96plds-v6" && r["mix"] == "nvme-6x14")
        .unwrap_or_else(|| panic!("D96plds v6 with nvme-6x14 is listed: {json}"));
    // Fourteen CPUs with six IRQs each before, as the thread says.
    assert_eq!(row["before"]["worst"], 6, "{row}");
    assert_eq!(row["before"]["ideal"], 1, "{row}");
    let link = row["link"].as_str().unwrap();
    let cmp: irqscope::scenario::payloads::CompareSpec =
        irqscope::scenario::permalink::decode(link.trim_start_matches("/c/")).unwrap();
    assert_eq!(cmp.scenario.effective, "first-cpu", "{link}");
    assert_eq!(cmp.scenario.kernel.as_deref(), Some("7.2"), "{link}");
    // The worst CPU keeps its six IRQs, but the rotation spreads them over more CPUs: the
    // fourteen of every order before, more in every order after.
    assert_eq!(row["after"]["worst"], 6, "{row}");
    let cpus = |side: &str, end: &str| row[side]["cpus_with_irqs"][end].as_u64().unwrap();
    assert_eq!((cpus("before", "fewest"), cpus("before", "most")), (14, 14), "{row}");
    assert!(cpus("after", "fewest") > 14, "{row}");
    // The reply says so under the table.
    let review: irqscope::render::review::Review = serde_json::from_str(&json).unwrap();
    let text = irqscope::render::review::text(&review);
    let after = match (cpus("after", "fewest"), cpus("after", "most")) {
        (a, b) if a == b => a.to_string(),
        (a, b) => format!("{a}-{b}"),
    };
    assert!(
        text.lines().any(|l| l.starts_with("  azure-d96plds-v6 ")
            && l.contains("nvme-6x14")
            && l.ends_with(&format!(" 14 -> {after}"))),
        "{text}"
    );
    assert_fits(&text);
}

/// A review as `review --out` writes it, made here from its parts (no C needed): a
/// regression on one catalogue pair and a 4-CPU worst case.
pub(crate) fn sample_review() -> irqscope::render::review::Review {
    use irqscope::render::review::*;
    let figures = |worst, p| Figures {
        worst,
        ideal: 1,
        p_above_ideal: p,
        numa_excess: 0.0,
        runs: 15,
        cpus_with_irqs: Some(CpusWithIrqs { fewest: 4, most: 4 }),
    };
    let build = |name: &str, c: char| BuildInfo {
        name: name.into(),
        build_id: std::iter::repeat_n(c, 64).collect(),
    };
    Review {
        claim: None,
        id: "0123456789abcdef".into(),
        subject: "[PATCH] lib/group_cpus: the last group takes the remainder".into(),
        patches: vec![PatchInfo {
            file: "/tmp/remainder.mbox".into(),
            subject: "[PATCH] lib/group_cpus: the last group takes the remainder".into(),
            sha256: "ab".repeat(32),
        }],
        base: BaseInfo {
            package: "linux-source-7.2".into(),
            version: Some("7.2.13-1".into()),
            source: "linux-source-7.2".into(),
            build: build("base-1", 'a'),
            tried: vec!["linux-source-7.2: the patches apply".into()],
        },
        patched: build("patched-1", 'b'),
        model_version: "0.1.0".into(),
        classification: Classification {
            cases: 2000,
            seed: 1,
            base_model: "cluster".into(),
            same_as_base: false,
            behaves_as: None,
            group_cpus_differ: 1058,
            group_cpus_cases: 2000,
            first_difference: Some("4 CPUs, numgrps 2, counter 0: masks 0-1 2-3 before, 0 1-3 after".into()),
            stage_changed: Some("group_cpus_evenly".into()),
            stage_difference: None,
        },
        pairs_run: 104,
        rows: vec![Row {
            machine: "amd-epyc-9654-1s-nps1".into(),
            mix: "nvme-4x8+nic-2x16".into(),
            before: figures(1, 0.0),
            after: figures(8, 1.0),
            change: "regression".into(),
            order: vec!["nvme0".into()],
            counter: 0,
            link: "/c/v1.x".into(),
        }],
        worst_case: Some(WorstCase {
            machine: "4 CPUs, 1 node, x86_64".into(),
            cpus: 4,
            devices: "2x2:name=nvme,pre=1".into(),
            order: vec!["nvme0".into(), "nvme1".into()],
            counter: 0,
            cpu: vec![0, 1, 2, 3],
            before: vec![2, 2, 1, 1],
            after: vec![3, 1, 1, 1],
            before_worst: 2,
            after_worst: 3,
            // One node of four CPUs, the way a topology file writes it.
            topology_toml: "name = \"verify\"\nnodes = [\"0-3\"]\n".into(),
            confirmed: true,
            tried: 1000,
            shrink_steps: 12,
            link: "/c/v1.y".into(),
        }),
        command: "irqscope review /tmp/remainder.mbox --base linux-source-7.2 --cases 2000 --seed 1".into(),
        exit_status: 1,
    }
}

/// A server with `dir` as its review directory.
pub(crate) fn review_app(dir: &Path) -> axum::Router {
    irqscope::web::app(irqscope::web::AppState {
        review_dir: Some(std::sync::Arc::new(dir.to_path_buf())),
        ..Default::default()
    })
}

async fn get(app: &axum::Router, uri: &str) -> (axum::http::StatusCode, axum::http::HeaderMap, String) {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let req = axum::http::Request::get(uri).header(axum::http::header::HOST, "irqscope.test");
    let resp = app
        .clone()
        .oneshot(req.body(axum::body::Body::empty()).unwrap())
        .await
        .unwrap();
    let (status, headers) = (resp.status(), resp.headers().clone());
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

/// `/r/<id>`: the page leads with the verdict, its text twin is the reply (72 columns), its
/// JSON twin the review; immutable like a permalink; an unknown id is 404, a malformed one
/// 400, a changed file a clear 400 (never 500).
#[tokio::test]
async fn a_review_is_served_with_its_twins() {
    use axum::http::StatusCode;
    let dir = Scratch::new("review-serve");
    let r = sample_review();
    std::fs::write(
        dir.join(format!("{}.json", r.id)),
        serde_json::to_string_pretty(&r).unwrap(),
    )
    .unwrap();
    let app = review_app(&dir);
    let (status, headers, page) = get(&app, "/r/0123456789abcdef").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(headers[axum::http::header::CACHE_CONTROL]
        .to_str()
        .unwrap()
        .contains("immutable"));
    let verdict = page.find("id=\"review-verdict\"").expect("a verdict");
    assert!(
        verdict < page.find("id=\"review-rows\"").expect("the table"),
        "the verdict first"
    );
    assert!(page.contains("This patch changes where interrupts land."), "{page}");
    assert!(page.contains("id=\"review-before\"") && page.contains("id=\"review-after\""));
    assert!(page.contains("href=\"/c/v1.x\""), "a link to the scenario");
    let (status, _, text) = get(&app, "/r/0123456789abcdef/text").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(text, irqscope::render::review::text(&r));
    assert!(text.starts_with("> [PATCH]"), "{text}");
    assert_fits(&text);
    let (status, _, json) = get(&app, "/r/0123456789abcdef/json").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        serde_json::from_str::<irqscope::render::review::Review>(&json).unwrap(),
        r
    );
    let (status, _, body) = get(&app, "/r/fedcba9876543210").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, _, body) = get(&app, "/r/..%2F..%2Fetc%2Fpasswd").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    // A file changed after it was written: another id inside, or not a review at all.
    let other = irqscope::render::review::Review {
        id: "1111111111111111".into(),
        ..r.clone()
    };
    std::fs::write(
        dir.join("2222222222222222.json"),
        serde_json::to_string(&other).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.join("3333333333333333.json"), "{\"id\": \"3333333333333333\"").unwrap();
    for (id, says) in [
        ("2222222222222222", "changed after"),
        ("3333333333333333", "does not read"),
    ] {
        let (status, _, body) = get(&app, &format!("/r/{id}/text")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(body.contains(says), "{body}");
    }
    let (status, _, _) = get(&irqscope::web::app(Default::default()), "/r/0123456789abcdef").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "a server without --review-dir");
}

/// A row whose worst CPU's load stays says how many CPUs serve IRQs before and after: the
/// reply lists it under the table (and links it) even when the table has no room for it, the
/// page has a column for it.
#[tokio::test]
async fn a_row_whose_worst_stays_says_how_many_cpus_serve_irqs() {
    use irqscope::render::review::CpusWithIrqs;
    let mut r = sample_review();
    let regression = r.rows[0].clone();
    r.rows = (0..11)
        .map(|k| irqscope::render::review::Row {
            machine: format!("machine-{k}"),
            ..regression.clone()
        })
        .collect();
    let mut stays = regression.clone();
    stays.machine = "azure-d96plds-v6".into();
    stays.mix = "nvme-6x14".into();
    stays.before.worst = 6;
    stays.after.worst = 6;
    stays.change = "changed".into();
    stays.link = "/c/v1.stays".into();
    stays.before.cpus_with_irqs = Some(CpusWithIrqs { fewest: 14, most: 14 });
    stays.after.cpus_with_irqs = Some(CpusWithIrqs { fewest: 22, most: 26 });
    r.rows.push(stays);
    let text = irqscope::render::review::text(&r);
    assert_fits(&text);
    let line = text
        .lines()
        .find(|l| l.starts_with("  azure-d96plds-v6 "))
        .unwrap_or_else(|| panic!("the row that stays is listed:\n{text}"));
    assert!(line.contains("nvme-6x14") && line.ends_with(" 14 -> 22-26"), "{line}");
    assert!(
        text.contains("  azure-d96plds-v6, nvme-6x14:\n/c/v1.stays\n"),
        "its link: {text}"
    );
    // Only rows whose worst CPU stays are listed there.
    assert!(!text.contains("4 -> 4"), "{text}");
    let dir = Scratch::new("review-cpus");
    std::fs::write(dir.join(format!("{}.json", r.id)), serde_json::to_string(&r).unwrap()).unwrap();
    let (status, _, page) = get(&review_app(&dir), &format!("/r/{}", r.id)).await;
    assert_eq!(status, axum::http::StatusCode::OK);
    assert!(page.contains(">CPUs with IRQs</th>"), "{page}");
    assert!(page.contains("<td>14 → 22–26</td>"), "{page}");
}

/// A review written before the CPUs with IRQs were recorded still reads and is served:
/// its rows say nothing of them.
#[tokio::test]
async fn a_review_without_cpus_with_irqs_still_loads() {
    let r = sample_review();
    let mut v = serde_json::to_value(&r).unwrap();
    for side in ["before", "after"] {
        let figures = v["rows"][0][side].as_object_mut().unwrap();
        assert!(figures.remove("cpus_with_irqs").is_some(), "{figures:?}");
    }
    let old: irqscope::render::review::Review = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(old.rows[0].before.cpus_with_irqs, None);
    let mut worst_stays = v.clone();
    worst_stays["rows"][0]["after"]["worst"] = worst_stays["rows"][0]["before"]["worst"].clone();
    let dir = Scratch::new("review-old");
    std::fs::write(
        dir.join(format!("{}.json", r.id)),
        serde_json::to_string(&worst_stays).unwrap(),
    )
    .unwrap();
    let app = review_app(&dir);
    let (status, _, page) = get(&app, &format!("/r/{}", r.id)).await;
    assert_eq!(status, axum::http::StatusCode::OK, "{page}");
    assert!(page.contains("<td>—</td>"), "{page}");
    let (status, _, text) = get(&app, &format!("/r/{}/text", r.id)).await;
    assert_eq!(status, axum::http::StatusCode::OK, "{text}");
    assert!(!text.contains("CPUs with IRQs"), "{text}");
}

/// A patch can change how many vectors start (a mask of offline CPUs only leaves its vector
/// shut down), and so the ideal: the reply's table and the page then show both ideals, and
/// the reply says why.
#[tokio::test]
async fn an_ideal_that_moves_is_shown_both_ways() {
    let mut r = sample_review();
    r.rows[0].before.ideal = 5;
    r.rows[0].after.ideal = 6;
    let text = irqscope::render::review::text(&r);
    assert_fits(&text);
    let row = text
        .lines()
        .find(|l| {
            l.trim_start()
                .starts_with(&r.rows[0].machine[..r.rows[0].machine.len().min(20)])
        })
        .unwrap_or_else(|| panic!("no row for {}:\n{text}", r.rows[0].machine));
    assert!(row.contains("5 -> 6"), "{row}");
    assert!(text.contains("Where the ideal moves"), "{text}");
    let dir = Scratch::new("review-ideal");
    std::fs::write(dir.join(format!("{}.json", r.id)), serde_json::to_string(&r).unwrap()).unwrap();
    let (status, _, page) = get(&review_app(&dir), &format!("/r/{}", r.id)).await;
    assert_eq!(status, axum::http::StatusCode::OK);
    assert!(page.contains("5 → 6"), "the page shows both ideals");
}
