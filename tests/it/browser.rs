//! The dashboard in a real browser: Debian's `chromium` driven through `chromedriver`
//! (packages `chromium` and `chromium-driver`) with fantoccini. Each test starts the app on a
//! loopback port, a chromedriver on a free port, and a headless Chromium with its own profile
//! directory; screenshots go to `target/screenshots/`.
//!
//! Without chromium or chromedriver these tests FAIL with a message naming the packages, unless
//! `IRQSCOPE_SKIP_BROWSER=1` is set.

use crate::common;

use common::browser::*;
use fantoccini::{Client, Locator};
const SEED_QUERY: &str = "/?preset=azure-l96as-v4&devices=6x62:pre=1,name=nvme";

async fn summary(c: &Client) -> String {
    format!(
        "{}\n{}\n{}",
        text_of(c, "#devices-line").await,
        text_of(c, "#irqs-line").await,
        text_of(c, "#nodes-line").await
    )
}

#[tokio::test]
async fn editing_queue_count_updates_heatmap_and_summary() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    c.goto(&format!("{}{SEED_QUERY}", h.base)).await.unwrap();
    let before = summary(&c).await;
    assert!(before.contains("serve all 6 devices"), "{before}");
    let heat_before = c
        .find(Locator::Css("#heatmap svg"))
        .await
        .unwrap()
        .html(false)
        .await
        .unwrap();
    screenshot(&c, "seed-before").await;

    let queues = c.find(Locator::Css("#devices input.queues")).await.unwrap();
    queues.clear().await.unwrap();
    queues.send_keys("8\u{E004}").await.unwrap();
    let after = wait_for("summary to change", || async {
        let s = summary(&c).await;
        (s != before && s.contains("IRQ")).then_some(s)
    })
    .await;
    let heat_after = c
        .find(Locator::Css("#heatmap svg"))
        .await
        .unwrap()
        .html(false)
        .await
        .unwrap();
    assert_ne!(heat_before, heat_after, "heatmap did not change");
    let url = c.current_url().await.unwrap();
    assert!(url.path().starts_with("/s/v1."), "URL is not a permalink: {url}");
    screenshot(&c, "seed-8-queues").await;
    eprintln!("after editing: {after}");
    c.close().await.unwrap();
}

#[tokio::test]
async fn adding_a_numa_node_in_the_editor() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    c.goto(&format!("{}{SEED_QUERY}", h.base)).await.unwrap();
    // The editor's rows are drawn by the page's script after load: wait for them.
    wait_for("the editor's two node rows", || async {
        let rows = c.find_all(Locator::Css("#nodes tr.node-row")).await.unwrap().len();
        (rows == 2).then_some(())
    })
    .await;
    c.find(Locator::Css("#add-node")).await.unwrap().click().await.unwrap();
    wait_for("three nodes in the result", || async {
        let topo = text_of(&c, "#result p.topo").await;
        topo.contains("3 nodes").then_some(())
    })
    .await;
    assert_eq!(c.find_all(Locator::Css("#nodes tr.node-row")).await.unwrap().len(), 3);
    assert_eq!(c.find_all(Locator::Css("#heatmap g.node")).await.unwrap().len(), 3);
    let nodes_line = text_of(&c, "#nodes-line").await;
    assert_eq!(
        nodes_line.split(" IRQs").next().unwrap().split_whitespace().count(),
        2 + 3,
        "{nodes_line}"
    );
    screenshot(&c, "three-nodes").await;
    c.close().await.unwrap();
}

#[tokio::test]
async fn compare_pre_cluster_with_rotation() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    c.goto(&format!("{}{SEED_QUERY}", h.base)).await.unwrap();
    select(&c, "#compare-form select[name=a]", "pre-cluster").await;
    select(&c, "#compare-form select[name=b]", "rotation").await;
    c.find(Locator::Css("#compare-go"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let text = wait_for("the compare page", || async {
        // The mail text sits in a closed <details> under the pictures: read its content.
        match c.find(Locator::Css("#compare-text")).await {
            Ok(e) => e.prop("textContent").await.ok().flatten(),
            Err(_) => None,
        }
    })
    .await;
    assert!(
        text.contains("--variant pre-cluster") && text.contains("--variant rotation"),
        "{text}"
    );
    assert!(text.contains("Per-CPU change, B - A"), "{text}");
    assert_eq!(
        c.find_all(Locator::Css("svg.heatmap")).await.unwrap().len(),
        3,
        "A, B and the difference"
    );
    screenshot(&c, "compare-pre-cluster-rotation").await;
    c.close().await.unwrap();
}

#[tokio::test]
async fn copied_permalink_reproduces_in_a_new_session() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    c.goto(&format!("{}{SEED_QUERY}", h.base)).await.unwrap();
    select(&c, "#kernel-editor #variant", "rotation").await;
    wait_for("the URL to become a permalink", || async {
        let url = c.current_url().await.unwrap();
        url.path().starts_with("/s/v1.").then_some(())
    })
    .await;
    let want = summary(&c).await;
    let button = c.find(Locator::Css("#result .copy-link")).await.unwrap();
    button.click().await.unwrap();
    let link = wait_for("the copy button to copy", || async {
        c.find(Locator::Css("#result .copy-link"))
            .await
            .ok()?
            .attr("data-copied")
            .await
            .ok()
            .flatten()
    })
    .await;
    assert!(link.contains("/s/v1."), "{link}");
    c.close().await.unwrap();

    let fresh = h.session().await;
    fresh.goto(&link).await.unwrap();
    let got = summary(&fresh).await;
    assert_eq!(got, want);
    let variant = prop_of(&fresh, "#kernel-editor #variant", "value").await;
    assert_eq!(
        variant.as_deref(),
        Some("rotation"),
        "the variant is pinned by the link"
    );
    screenshot(&fresh, "permalink-new-session").await;
    fresh.close().await.unwrap();
}
