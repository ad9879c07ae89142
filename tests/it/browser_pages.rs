//! Every page in a real browser at 1024 and 1920 px: the page never scrolls sideways
//! (`document.documentElement.scrollWidth` within `window.innerWidth`), no figure leaves the
//! viewport and no SVG leaves its figure (measured with `getBoundingClientRect`). A screenshot
//! of each page at each width goes to `target/screenshots/pages-NAME-WIDTH.png`.

use crate::common;

use common::browser::*;
use fantoccini::Client;
use irqscope::scenario::permalink;
use irqscope::scenario::spec::{parse_device_token, ScenarioSpec, TopologyRef};
use std::time::Duration;

const WIDTHS: [u32; 2] = [1024, 1920];

/// Seed 000 as a permalink: the figure the thread quotes (pre-cluster, six NVMe disks).
fn seed_000_link() -> String {
    let spec = ScenarioSpec {
        variant: "pre-cluster".into(),
        ..ScenarioSpec::new(
            TopologyRef::Preset("azure-l96as-v4".into()),
            vec![parse_device_token("6x62:pre=1,name=nvme").unwrap()],
        )
    };
    format!("/s/{}", permalink::encode(&spec).unwrap())
}

/// (name, path, CSS of an element the page has once drawn).
fn pages() -> Vec<(&'static str, String, &'static str)> {
    vec![
        ("front", "/".into(), "#topo-editor table"),
        ("seed000", seed_000_link(), "#heatmap svg"),
        (
            "compare",
            "/compare?a=pre-cluster&b=rotation&metric=devices".into(),
            "#diff svg",
        ),
        ("blkmq", "/blkmq".into(), ".figure svg"),
        ("seeds", "/seeds".into(), "main a"),
        (
            "sweep",
            "/sweep?topologies=azure-l96as-v4,azure-4vcpu-smt2&counters=0..2".into(),
            "#sweep-chart svg",
        ),
        ("mana", "/mana".into(), "main svg"),
        ("sched", "/sched".into(), "main svg"),
        ("live", "/live".into(), "main"),
        ("fleet", "/fleet".into(), "main"),
        ("big", "/?preset=synthetic-8192&devices=16x64".into(), "#heatmap svg"),
        ("damaged-link", "/s/v1.this-is-not-a-link".into(), "main"),
    ]
}

/// What is wrong with the page's width, as messages: sideways scroll, a figure outside the
/// viewport, an SVG outside its figure.
const WIDTH_PROBLEMS_JS: &str = r#"
const out = [];
const de = document.documentElement;
if (de.scrollWidth > window.innerWidth) {
  const wide = [...document.querySelectorAll('body *')]
    .filter((e) => e.getBoundingClientRect().right > de.clientWidth + 0.5)
    .slice(0, 5)
    .map((e) => `${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''}${e.className && typeof e.className === 'string' ? '.' + e.className.split(' ').join('.') : ''} right ${Math.round(e.getBoundingClientRect().right)}`);
  out.push(`page scrolls sideways: scrollWidth ${de.scrollWidth} > innerWidth ${window.innerWidth}; widest: ${wide.join(', ')}`);
}
const vw = de.clientWidth;
for (const fig of document.querySelectorAll('.figure')) {
  const box = fig.getBoundingClientRect();
  const name = fig.id || fig.className;
  if (box.left < -0.5 || box.right > vw + 0.5) out.push(`${name}: box ${box.left}..${box.right} outside viewport ${vw}`);
  for (const svg of fig.querySelectorAll('svg')) {
    const r = svg.getBoundingClientRect();
    if (r.left < box.left - 0.5 || r.right > box.right + 0.5) out.push(`${name}: svg ${r.left}..${r.right} overflows ${box.left}..${box.right}`);
    // A scaling figure grows to at most 1.6 x its drawn size: text in it stays body-sized.
    const drawn = Number(svg.dataset.w) || Number((svg.getAttribute('viewBox') || '').split(/[\s,]+/)[2]);
    if (svg.getAttribute('width') === '100%' && drawn > 0 && r.width > drawn * 1.6 + 1) out.push(`${name}: svg ${Math.round(r.width)} px wide, drawn ${drawn}: over 1.6 x`);
  }
}
return out;
"#;

async fn open(c: &Client, base: &str, path: &str, ready: &str, width: u32) {
    c.set_window_size(width, 1000).await.unwrap();
    c.goto(&format!("{base}{path}")).await.unwrap();
    let css = ready.to_string();
    wait_for(&format!("{path}: {ready}"), || {
        let css = css.clone();
        async move {
            let js = format!("return document.querySelector({css:?}) !== null");
            c.execute(&js, vec![]).await.ok()?.as_bool()?.then_some(())
        }
    })
    .await;
    // Let the editor script and layout settle before measuring.
    tokio::time::sleep(Duration::from_millis(300)).await;
}

#[tokio::test]
async fn every_page_fits_at_1024_and_1920() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    let mut problems = Vec::new();
    for (name, path, ready) in pages() {
        for w in WIDTHS {
            open(&c, &h.base, &path, ready, w).await;
            screenshot(&c, &format!("pages-{name}-{w}")).await;
            let inner = c.execute("return window.innerWidth", vec![]).await.unwrap();
            assert_eq!(
                inner.as_u64(),
                Some(u64::from(w)),
                "{name}: the window is not {w} px wide"
            );
            let bad: Vec<String> = serde_json::from_value(c.execute(WIDTH_PROBLEMS_JS, vec![]).await.unwrap()).unwrap();
            problems.extend(bad.into_iter().map(|b| format!("{name} at {w} px: {b}")));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The damaged link is an HTML page in a browser, naming the problem, not a bare text line.
#[tokio::test]
async fn a_damaged_link_is_a_page_in_a_browser() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    open(&c, &h.base, "/s/v1.this-is-not-a-link", "main", 1024).await;
    let text = text_of(&c, "main").await;
    assert!(text.to_lowercase().contains("link"), "{text}");
    let nav = c
        .execute("return document.querySelectorAll('header nav a').length", vec![])
        .await
        .unwrap();
    assert!(nav.as_u64().unwrap() > 3, "the error page has the site's header");
}
