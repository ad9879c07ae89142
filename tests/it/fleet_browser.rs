//! `/fleet` in real headless Chromium (Debian `chromium` + `chromium-driver`) at 1024 and
//! 1920 px: every host listed, sorting by a column header (click, then the order read back),
//! the "only hosts that match the model" filter hiding the host the model disagrees with,
//! each host linking to its live page, no horizontal overflow; screenshots to
//! `target/screenshots/fleet-*.png`. `IRQSCOPE_SKIP_BROWSER=1` skips; without the tools the
//! test fails naming the packages.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use fantoccini::Locator;
use http_body_util::BodyExt;
use irqscope::live::auth::Tokens;
use irqscope::live::collect::Collector;
use irqscope::web::{self, live::LiveState, AppState};
use serde_json::json;
use std::path::Path;
use std::time::Duration;
use tower::ServiceExt;

use crate::common::browser::{screenshot, text_of, tools, wait_for, Harness, ONE_AT_A_TIME};

const TOKEN: &str = "fleet-browser-token-0123456789abcdef";
/// The group_cpus variants the page may be asked to compare against.
const VARIANTS: [&str; 5] = ["pre-cluster", "cluster", "rotation", "rotation-ohcl", "rotation-v1r"];

async fn get(app: &axum::Router, uri: &str) -> (StatusCode, String) {
    let resp = app
        .clone()
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// Three pushed hosts: the fixture as read (`a-good`), the same with every device IRQ on
/// CPU 0 (`b-odd`: the most stacking, the model disagrees), and with half of them moved to
/// CPU 1 (`c-half`, in between).
async fn fleet_app() -> axum::Router {
    let (live, _) = LiveState::new(Tokens::parse(TOKEN).unwrap(), None).unwrap();
    let app = web::app(AppState {
        live,
        ..Default::default()
    });
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/live/x86-nvme-vm");
    let good = Collector::new(&root, "a-good").read(1_000).unwrap();
    let mut odd = good.clone();
    odd.host = "b-odd".into();
    let mut half = good.clone();
    half.host = "c-half".into();
    let numbered = |i: &&mut irqscope::live::protocol::WireIrq| i.label.parse::<u32>().is_ok();
    for irq in odd.irqs.iter_mut().filter(numbered) {
        irq.effective = Some("0".into());
        irq.affinity = Some("0".into());
    }
    for (k, irq) in half.irqs.iter_mut().filter(numbered).enumerate() {
        if k % 2 == 0 {
            irq.effective = Some("1".into());
            irq.affinity = Some("1".into());
        }
    }
    // Two readings each, so every host has rates: one IRQ of each host fires `hot` times
    // more than the others (the busiest CPU share differs by host).
    let mut second = Vec::new();
    for (snap, hot) in [(&good, 10u64), (&odd, 1), (&half, 100)] {
        let mut next = snap.clone();
        next.taken_unix_ms += 1_000;
        for (k, irq) in next.irqs.iter_mut().filter(numbered).enumerate() {
            for c in irq.counts.iter_mut() {
                c.1 += if k == 0 { 100 * hot } else { 100 };
            }
        }
        second.push(next);
    }
    for round in [vec![good, odd, half], second] {
        for snap in &round {
            let req = Request::post(format!("/api/live/{}/snapshots", snap.host))
                .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(serde_json::to_vec(snap).unwrap()))
                .unwrap();
            assert_eq!(app.clone().oneshot(req).await.unwrap().status(), StatusCode::OK);
        }
        // The store paces each host's readings by the server's clock.
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    app
}

/// The host column, top to bottom, as the browser shows it.
async fn hosts_shown(c: &fantoccini::Client) -> Vec<String> {
    let v = c
        .execute(
            "return Array.from(document.querySelectorAll('#fleet-list tbody tr td:first-child')).map(t => t.textContent);",
            vec![],
        )
        .await
        .unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// Click the header link of column `n` (1-based) and wait for the new page's order.
async fn sort_by(c: &fantoccini::Client, n: usize, sort: &str) -> Vec<String> {
    c.find(Locator::Css(&format!("#fleet-list thead th:nth-child({n}) a")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let want = format!("sort={sort}");
    wait_for(&format!("the page sorted by {sort}"), || async {
        let url = c.current_url().await.ok()?;
        url.as_str().contains(&want).then_some(())
    })
    .await;
    hosts_shown(c).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fleet_page_in_chromium() {
    if tools().is_none() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().await;
    let app = fleet_app().await;

    // The model under which the fixture host matches (the filter must keep it).
    let mut matching_variant = None;
    for v in VARIANTS {
        let (code, page) = get(&app, &format!("/fleet?variant={v}&matching=1")).await;
        assert_eq!(code, StatusCode::OK, "{page}");
        assert!(!page.contains(">b-odd<"), "{v}: {page}");
        if page.contains(">a-good<") {
            matching_variant = Some(v);
            break;
        }
    }
    let variant = matching_variant.expect("a-good matches no group_cpus variant");

    let mut harness = Harness::start_with(app.clone()).await.expect("the browser tools");
    let base = harness.base.clone();
    let c = harness.session().await;

    for width in [1024u32, 1920] {
        c.set_window_size(width, 900).await.unwrap();
        c.goto(&format!("{base}/fleet")).await.unwrap();
        // Every host, by name first (the default order).
        assert_eq!(hosts_shown(&c).await, ["a-good", "b-odd", "c-half"]);
        // By the most IRQs on one CPU: every device IRQ on CPU 0, then half of them, then none.
        assert_eq!(sort_by(&c, 4, "stacking").await, ["b-odd", "c-half", "a-good"]);
        let stacking: Vec<u32> = c
            .execute(
                "return Array.from(document.querySelectorAll('#fleet-list tbody tr td:nth-child(4)')).map(t => Number(t.textContent));",
                vec![],
            )
            .await
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        assert!(stacking.windows(2).all(|w| w[0] > w[1]), "{stacking:?}");
        let marked = text_of(&c, "#fleet-list th[aria-sort=descending]").await;
        assert!(marked.starts_with("most IRQs on one CPU"), "{marked}");
        // By the busiest CPU's share: the host whose one IRQ fires most first.
        assert_eq!(sort_by(&c, 3, "busiest").await, ["c-half", "a-good", "b-odd"]);
        // Back by host name.
        assert_eq!(sort_by(&c, 1, "host").await, ["a-good", "b-odd", "c-half"]);

        // Nothing wider than the window.
        let overflow = c
            .execute(
                "return [document.documentElement.scrollWidth, document.documentElement.clientWidth];",
                vec![],
            )
            .await
            .unwrap();
        let (scroll, client) = (overflow[0].as_u64().unwrap(), overflow[1].as_u64().unwrap());
        assert!(
            scroll <= client,
            "{width} px: the page is {scroll} px wide in a {client} px window"
        );
        screenshot(&c, &format!("fleet-{width}")).await;

        // "Only hosts that match the model", through the form as a reader uses it.
        let form = c.form(Locator::Css("#fleet-form")).await.unwrap();
        form.set_by_name("variant", variant).await.unwrap();
        c.find(Locator::Css("#fleet-form input[name=matching]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        form.submit().await.unwrap();
        wait_for("the filtered page", || async {
            let url = c.current_url().await.ok()?;
            url.as_str().contains("matching=1").then_some(())
        })
        .await;
        let shown = hosts_shown(&c).await;
        assert!(shown.contains(&"a-good".to_string()), "{shown:?}");
        assert!(!shown.contains(&"b-odd".to_string()), "{shown:?}");
        screenshot(&c, &format!("fleet-{width}-matching")).await;

        // Each host links to its live page.
        c.goto(&format!("{base}/fleet")).await.unwrap();
        let hrefs = c
            .execute(
                "return Array.from(document.querySelectorAll('#fleet-list tbody tr td:first-child a')).map(a => a.getAttribute('href'));",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(hrefs, json!(["/live/a-good", "/live/b-odd", "/live/c-half"]));
        c.find(Locator::Css("#fleet-list tbody tr:nth-child(3) td:first-child a"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        wait_for("the host page", || async {
            let url = c.current_url().await.ok()?;
            url.as_str().ends_with("/live/c-half").then_some(())
        })
        .await;
        let title = c.title().await.unwrap();
        assert!(title.contains("c-half"), "{title}");
    }
    c.close().await.unwrap();
}
