//! Compare over HTTP and on the command line: one colour scale for both sides, the per-vector
//! difference (seed 002's P-core permutation), B's default, and `irqscope compare` printing the
//! text of `/c/…/text` with a command that reproduces it.

use crate::common;
use common::cli::irqscope;
use common::http::get;

/// The `data-scale-max` values on a page, in order.
fn scale_maxes(body: &str) -> Vec<u32> {
    body.split("data-scale-max=\"")
        .skip(1)
        .map(|rest| rest[..rest.find('"').unwrap()].parse().unwrap())
        .collect()
}

/// Seed 000 pre-cluster (max 6 devices on a CPU) against rotation (max 4): both heatmaps and
/// the note carry one maximum, the larger.
#[tokio::test]
async fn both_sides_share_one_scale() {
    let r = get("/compare?a=pre-cluster&b=rotation&metric=devices").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let maxes = scale_maxes(&r.body);
    assert_eq!(maxes, [6, 6, 6], "note, A, B");
    assert!(r.body.contains("data-side=\"A\"") && r.body.contains("data-side=\"B\""));
    let fixed = get("/compare?a=pre-cluster&b=rotation&metric=devices&scale=10").await;
    assert_eq!(scale_maxes(&fixed.body), [10, 10, 10]);
    let bad = get("/compare?scale=0").await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("fixed maximum"), "{}", bad.body);
}

/// Seed 002: the cluster patch permutes the P-core queues (queue 0..7 -> CPU 1,4,0,5,6,7,3,2).
#[tokio::test]
async fn seed002_permutation_listed_per_vector() {
    let r =
        get("/compare?preset=intel-core-ultra-7-265k&devices=20:name%3Dnvme0,pre%3D1&a=pre-cluster&b=cluster").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains(r#"data-moved="8""#), "8 vectors moved");
    let rows: Vec<(u32, u32)> = r
        .body
        .split("<tr><td>nvme0</td>")
        .skip(1)
        .map(|row| {
            let cells: Vec<&str> = row.split("<td>").map(|c| c.split('<').next().unwrap()).collect();
            (cells[2].parse().unwrap(), cells[4].parse().unwrap())
        })
        .collect();
    assert_eq!(
        rows,
        [(0, 1), (1, 4), (2, 0), (3, 5), (4, 6), (5, 7), (6, 3), (7, 2)],
        "queue -> CPU under B"
    );
}

/// With no variant named for B, the form compares A against another variant.
#[tokio::test]
async fn b_defaults_to_another_variant() {
    let r = get("/compare").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body
            .contains("cluster (heap-v6.11, x86-matrix, counter 0) vs pre-cluster ("),
        "{}",
        r.body
    );
    let r = get("/compare?a=rotation").await;
    assert!(r
        .body
        .contains("rotation (heap-v6.11, x86-matrix, counter 0) vs cluster"));
}

/// `irqscope compare` prints `/c/…/text` less its permalink line, within 72 columns, and its
/// first command reproduces it byte for byte.
#[tokio::test]
async fn cli_compare_is_the_page_text_and_reproduces_itself() {
    let text = irqscope(&[
        "compare",
        "intel-core-ultra-7-265k",
        "20:name=nvme0,pre=1",
        "--a",
        "pre-cluster",
    ]);
    for line in text.lines() {
        assert!(line.chars().count() <= 72, "{line:?}");
    }
    assert!(text.contains("nvme0: 8 of 21 vectors moved"), "{text}");
    assert!(text.contains("queue 0         0 -> 1"), "{text}");
    // The command: the lines after the title up to the first without a continuation.
    let mut command = String::new();
    for line in text.lines().skip(1) {
        let l = line.trim().trim_start_matches("$ ");
        command.push_str(l.trim_end_matches('\\'));
        if !l.ends_with('\\') {
            break;
        }
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(&words[..2], ["irqscope", "compare"]);
    assert_eq!(irqscope(&words[1..]), text);
    // The page's text twin is the same report with the permalink last, alone on its line.
    let page = get("/compare?preset=intel-core-ultra-7-265k&devices=20:name%3Dnvme0,pre%3D1&a=pre-cluster").await;
    let link = page
        .body
        .split("/c/")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    let twin = get(&format!("/c/{link}/text")).await;
    assert_eq!(twin.status, 200);
    let last = twin.body.lines().last().unwrap();
    assert!(last.starts_with("http://") && last.contains("/c/"), "{}", twin.body);
    assert_eq!(twin.body.matches("/c/").count(), 1, "{}", twin.body);
    let without_link = twin.body.strip_suffix(&format!("\n{last}\n")).expect("permalink block");
    assert_eq!(without_link, text);
}

/// The arm64 preset with no model named runs first-cpu: the seed-000 D16plds v6 figure.
#[test]
fn arm64_preset_defaults_to_first_cpu() {
    let text = irqscope(&[
        "simulate",
        "azure-d16plds-v6",
        "2x6:name=nvme,pre=1",
        "--variant",
        "pre-cluster",
    ]);
    assert!(text.contains("6 CPUs (0,3,6,9,12,14) serve both devices"), "{text}");
    let x86 = irqscope(&["simulate", "azure-l96as-v4", "6x62:name=nvme,pre=1"]);
    assert!(x86.contains("--effective x86-matrix"));
}

/// Seed 004 on `/blkmq`: v4.10's mapper leaves 28 of 64 queues without a CPU; v4.13 maps all.
#[tokio::test]
async fn blkmq_page_shows_seed004_unmapped_queues() {
    let r = get("/blkmq?preset=xeon-2s-18c-smt2&queues=64").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body.contains(r#"data-mapper="legacy-v4.10" data-unmapped="28""#),
        "{}",
        r.body
    );
    assert!(r.body.contains(r#"data-mapper="legacy-v4.13" data-unmapped="0""#));
    assert_eq!(r.body.matches(r#"class="queue unmapped""#).count(), 28);
    assert_eq!(get("/blkmq?queues=0").await.status, 400);
    assert_eq!(get("/blkmq?preset=nope").await.status, 400);
}

/// `/seeds`: every figure's link resolves, and each names its assumptions; the figures the
/// seed tests check are on the pages the links open.
#[tokio::test]
async fn seeds_gallery_links_resolve() {
    let r = get("/seeds").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let links: Vec<String> = r
        .body
        .split(r#"class="seed-link" href=""#)
        .skip(1)
        .map(|rest| rest[..rest.find('"').unwrap()].replace("&amp;", "&"))
        .collect();
    assert!(links.len() >= 14, "{} figures", links.len());
    for seed in ["000", "001", "002", "003", "004"] {
        assert!(r.body.contains(&format!(r#"data-seed="{seed}""#)), "seed {seed}");
    }
    let mut pages = Vec::new();
    for link in &links {
        let page = get(link).await;
        assert_eq!(page.status, 200, "{link}: {}", page.body);
        pages.push(page.text());
    }
    let all = pages.join("\n");
    assert!(all.contains("28 CPUs (34-47,82-95) serve all 6 devices"));
    assert!(all.contains("6 CPUs (0,3,6,9,12,14) serve both devices"));
    let bodies = {
        let mut b = Vec::new();
        for link in &links {
            b.push(get(link).await.body);
        }
        b.join("\n")
    };
    assert!(bodies.contains(r#"data-moved="8""#), "seed 002's permutation");
    assert!(bodies.contains(r#"data-mapper="legacy-v4.10" data-unmapped="28""#));
    assert!(r.body.contains("--load 0,1,1,1") && r.body.contains("counter 2"));
    assert!(
        get("/").await.body.contains(r#"href="/seeds""#),
        "linked from the top bar"
    );
}

/// A link that names a model keeps it on an arm64 preset (old links always carry one); the
/// front-page form with none named takes the preset's architecture's.
#[tokio::test]
async fn links_keep_their_model_forms_default_by_architecture() {
    use irqscope::scenario::permalink;
    use irqscope::scenario::spec::{parse_device_token, ScenarioSpec, TopologyRef};
    let spec = ScenarioSpec {
        variant: "pre-cluster".into(),
        ..ScenarioSpec::new(
            TopologyRef::Preset("azure-d16plds-v6".into()),
            vec![parse_device_token("2x6:name=nvme,pre=1").unwrap()],
        )
    };
    let old = get(&format!("/s/{}/text", permalink::encode(&spec).unwrap())).await;
    assert_eq!(old.status, 200, "{}", old.body);
    assert!(old.body.contains("--effective x86-matrix"), "{}", old.body);
    assert!(!old.text().contains("6 CPUs (0,3,6,9,12,14) serve both devices"));
    let form = get("/?preset=azure-d16plds-v6&devices=2x6:name%3Dnvme,pre%3D1&variant=pre-cluster").await;
    assert_eq!(form.status, 200, "{}", form.body);
    assert!(
        form.text().contains("6 CPUs (0,3,6,9,12,14) serve both devices"),
        "{}",
        form.body
    );
}

/// The text of the element with `id` (first tag carrying it), up to its closing `<`.
/// The text of the element with `id` (a `<p>`, `<h2>` or `<li>`: its markup up to its end tag).
fn text_by_id(body: &str, id: &str) -> String {
    let start = body.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no #{id}"));
    let open = &body[..start];
    let tag = &open[open.rfind('<').unwrap() + 1..];
    let tag = tag.split_whitespace().next().unwrap();
    let rest = &body[start..];
    let rest = &rest[rest.find('>').unwrap() + 1..];
    crate::common::http::plain(&rest[..rest.find(&format!("</{tag}>")).unwrap()])
}

/// The scenario page says which effective-CPU model ran and why: named in the URL or the
/// permalink, the preset architecture's default, or an edited machine's (x86_64).
#[tokio::test]
async fn scenario_page_says_which_effective_model_and_why() {
    use irqscope::scenario::permalink;
    let arm = get("/?preset=azure-d16plds-v6&devices=2x6:name%3Dnvme,pre%3D1&variant=pre-cluster").await;
    assert_eq!(arm.status, 200, "{}", arm.body);
    let line = text_by_id(&arm.body, "effective-line");
    assert!(
        line.starts_with("effective CPU: first-cpu (arm64 preset, gic-spi: "),
        "{line}"
    );
    assert!(
        line.contains("GIC fires each SPI on the first CPU of its mask)"),
        "{line}"
    );
    let x86 = get("/?preset=azure-l96as-v4").await;
    let line = text_by_id(&x86.body, "effective-line");
    assert!(
        line.starts_with("effective CPU: x86-matrix (x86_64 preset, apic: "),
        "{line}"
    );
    let named = get("/?preset=azure-d16plds-v6&effective=x86-matrix").await;
    assert_eq!(
        text_by_id(&named.body, "effective-line"),
        "effective CPU: x86-matrix (named in the link; with none named, this arm64 preset (gic-spi) would use first-cpu)"
    );
    let blank = get("/?preset=blank").await;
    let line = text_by_id(&blank.body, "effective-line");
    assert!(
        line.starts_with("effective CPU: x86-matrix (edited machine, x86_64 with apic: "),
        "{line}"
    );
    // The permalink of the arm64 page carries its model: the link named it.
    let link = text_by_id(&arm.body, "permalink");
    assert_eq!(link, "permalink");
    let p = arm.body.split("href=\"/s/").nth(1).unwrap().split('"').next().unwrap();
    assert!(permalink::decode::<irqscope::scenario::spec::ScenarioSpec>(p).is_ok());
    let page = get(&format!("/s/{p}")).await;
    assert_eq!(
        text_by_id(&page.body, "effective-line"),
        "effective CPU: first-cpu (named in the link; also the default for this arm64 preset (gic-spi))"
    );
}

/// /compare opens with one line for both verdicts and the vectors B moves, and each side's
/// picture has its own verdict line above it, numbers read from the page's own figures.
#[tokio::test]
async fn compare_has_verdict_lines() {
    let r = get("/compare?a=pre-cluster&b=rotation&metric=devices").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let moved: usize = r
        .body
        .split("data-moved=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(moved > 0);
    let overall = text_by_id(&r.body, "compare-verdict");
    assert_eq!(
        overall,
        format!("A: max 6 devices on a CPU (ideal 4) / B: max 4 = ideal; B moves {moved} vectors")
    );
    let sides: Vec<String> = r
        .body
        .split("<p class=\"verdict side-verdict\">")
        .skip(1)
        .map(|s| crate::common::http::plain(&s[..s.find("</p>").unwrap()]))
        .collect();
    assert_eq!(sides.len(), 2, "one verdict per side");
    assert_eq!(
        sides[0],
        "max 6 devices on a CPU (ideal 4): 28 CPUs (14 per node) 34-47,82-95 serve all 6"
    );
    assert!(sides[1].starts_with("max 4 = ideal, "), "{}", sides[1]);
    // The same comparison with B = A: every load is equal, nothing moves, and the headline
    // says so instead of two equal verdicts; one heatmap shows both sides.
    let same = get("/compare?a=cluster&b=cluster").await;
    assert_eq!(
        text_by_id(&same.body, "compare-verdict"),
        "Per-CPU loads are the same under A and B; every vector fires on the same CPU"
    );
    assert!(same.body.contains(r#"id="heatmap-both""#) && !same.body.contains(r#"id="diff""#));
}
