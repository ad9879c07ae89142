//! The sweep page in a real browser: Debian's `chromium` driven through `chromedriver`
//! (packages `chromium` and `chromium-driver`) with fantoccini. The harness is the one of
//! `tests/browser.rs`. Each test starts the app on a
//! loopback port, a chromedriver on a free port, and a headless Chromium with its own profile
//! directory; screenshots go to `target/screenshots/`.
//!
//! Without chromium or chromedriver these tests FAIL with a message naming the packages, unless
//! `IRQSCOPE_SKIP_BROWSER=1` is set.

use crate::common;

use common::browser::*;
use fantoccini::{Client, Locator};
const SWEEP_QUERY: &str = "/sweep?topologies=azure-l48s-v2,azure-l96as-v4,synthetic-sparse-ids&mixes=nvme-6x32;nvme-6x14&variants=pre-cluster,rotation,rotation-v1r,offset-by-probed&counters=0..4";

/// The `data-gap` of every table row, in page order.
/// The first machine's table (each machine's rows are folded in their own).
const TABLE: &str = "#sweep-machines details.machine:first-of-type table.sweep-table";

async fn gaps(c: &Client) -> Vec<u32> {
    let mut out = Vec::new();
    for row in c.find_all(Locator::Css(&format!("{TABLE} tbody tr"))).await.unwrap() {
        out.push(row.attr("data-gap").await.unwrap().unwrap().parse().unwrap());
    }
    out
}

#[tokio::test]
async fn sort_by_gap_then_open_a_permalink() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    c.goto(&format!("{}{SWEEP_QUERY}", h.base)).await.unwrap();
    assert_eq!(
        c.find_all(Locator::Css("#sweep-chart svg g.panel"))
            .await
            .unwrap()
            .len(),
        3
    );
    assert_eq!(
        c.find_all(Locator::Css("#sweep-machines details.machine"))
            .await
            .unwrap()
            .len(),
        3,
        "one folded table per machine"
    );
    // The first machine's rows, unfolded.
    c.find(Locator::Css("#sweep-machines details.machine summary"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let before = gaps(&c).await;
    assert_eq!(before.len(), 2 * 4);

    // First click: largest gap first.
    c.find(Locator::Css(&format!("{TABLE} th.sort-gap button")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let sorted = wait_for("rows sorted by gap, descending", || async {
        let g = gaps(&c).await;
        g.windows(2).all(|w| w[0] >= w[1]).then_some(g)
    })
    .await;
    let mut want = before.clone();
    want.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(sorted, want);
    assert_eq!(
        c.find(Locator::Css(TABLE))
            .await
            .unwrap()
            .attr("data-sorted")
            .await
            .unwrap()
            .as_deref(),
        Some("gap:desc")
    );
    let first = c.find(Locator::Css(&format!("{TABLE} tbody tr"))).await.unwrap();
    let top = (
        first.attr("data-topology").await.unwrap().unwrap(),
        first.attr("data-placement").await.unwrap().unwrap(),
        first.attr("data-irqs").await.unwrap().unwrap(),
    );
    screenshot(&c, "sweep-sorted-by-gap").await;

    // Second click: smallest first.
    c.find(Locator::Css(&format!("{TABLE} th.sort-gap button")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for("rows sorted by gap, ascending", || async {
        let g = gaps(&c).await;
        (g.windows(2).all(|w| w[0] <= w[1]) && g.first() != g.last()).then_some(())
    })
    .await;

    // Back to descending, then open the worst row's scenario.
    c.find(Locator::Css(&format!("{TABLE} th.sort-gap button")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for("descending again", || async { (gaps(&c).await == want).then_some(()) }).await;
    let link = c
        .find(Locator::Css(&format!("{TABLE} tbody tr a.permalink")))
        .await
        .unwrap();
    let href = link.attr("href").await.unwrap().unwrap();
    assert!(href.starts_with("/s/v1."), "{href}");
    link.click().await.unwrap();
    let irqs_line = wait_for("the scenario page", || async {
        match c.find(Locator::Css("#irqs-line")).await {
            Ok(e) => e.text().await.ok(),
            Err(_) => None,
        }
    })
    .await;
    let url = c.current_url().await.unwrap();
    assert_eq!(url.path(), href, "the row's permalink opened");
    let topo_line = text_of(&c, "#result-body p.topo").await;
    eprintln!("worst row {top:?} opened: {topo_line} / {irqs_line}");
    // The scenario page reports the same busiest CPU as the sweep row.
    let source = c.source().await.unwrap();
    assert!(
        source.contains(&format!("IRQs/CPU: max {} ", top.2)),
        "{top:?} not on the page: {irqs_line}"
    );
    if top.1 != "offset-by-probed" {
        let variant = prop_of(&c, "#kernel-editor #variant", "value").await;
        assert_eq!(
            variant.as_deref(),
            Some(top.1.as_str()),
            "the variant is pinned by the link"
        );
    }
    screenshot(&c, "sweep-row-permalink").await;
    c.close().await.unwrap();
}

/// With orders asked, every row of the unfolded table shows P(worst > ideal) as the JSON twin
/// computes it (the placement over every order and counter swept), with its interval when
/// sampled; the column stays inside the viewport at 1024 and 1920 px. Screenshots:
/// `target/screenshots/sweep-orders-*.png`.
#[tokio::test]
async fn the_orders_column_reads_as_the_json_twin() {
    let q = "?topologies=vm-8vcpu-smt2,azure-l96as-v4&mixes=d=2x62:pre=1%203x8:pre=1%201x4&variants=cluster,rotation,rotation-v1&counters=0..4";
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    for (orders, w) in [("all", 1024), ("sample:300:5", 1920)] {
        let config = irqscope::analysis::sweep::SweepConfig {
            topologies: vec!["vm-8vcpu-smt2".into(), "azure-l96as-v4".into()],
            mixes: vec![irqscope::analysis::sweep::Mix::parse("d=2x62:pre=1 3x8:pre=1 1x4").unwrap()],
            placements: irqscope::analysis::sweep::SweepConfig::parse_placements("cluster,rotation,rotation-v1")
                .unwrap(),
            counters: (0..4).collect(),
            orders: irqscope::analysis::orders::Orders::parse(orders).unwrap(),
            ..irqscope::analysis::sweep::SweepConfig::catalogue_default()
        };
        let s = irqscope::analysis::sweep::run(&config).unwrap();
        let json = irqscope::render::sweep::json(&s, &|_| None);
        c.set_window_size(w, 1200).await.unwrap();
        c.goto(&format!("{}/sweep{q}&orders={orders}", h.base)).await.unwrap();
        for s in c
            .find_all(Locator::Css("#sweep-machines details.machine summary"))
            .await
            .unwrap()
        {
            s.click().await.unwrap();
        }
        let v: serde_json::Value = wait_for("the P(worst > ideal) cells", || async {
            c.execute(
                r#"const vw = document.documentElement.clientWidth;
                const cells = [...document.querySelectorAll('#sweep-machines tr[data-placement]')].map((tr) => {
                  const td = tr.querySelector('td.p-worst');
                  return [tr.dataset.topology, tr.dataset.placement, td ? td.innerText : null,
                          td ? td.getBoundingClientRect().right <= vw + 0.5 && td.getBoundingClientRect().width > 0 : false];
                });
                return cells.length ? cells : null;"#,
                vec![],
            )
            .await
            .ok()
            .filter(|v| !v.is_null())
        })
        .await;
        let cells = v.as_array().unwrap();
        let aggs = json["aggregates"].as_array().unwrap();
        assert_eq!(cells.len(), aggs.len());
        for a in aggs {
            let o = &a["orders"];
            let mut want = format!("{:.1}%", 100.0 * o["p_worst_above_ideal"].as_f64().unwrap());
            if let Some(ci) = o["p_worst_above_ideal_95"].as_array() {
                want.push_str(&format!(
                    "\n95%: {:.1}–{:.1}%",
                    100.0 * ci[0].as_f64().unwrap(),
                    100.0 * ci[1].as_f64().unwrap()
                ));
            }
            let cell = cells
                .iter()
                .find(|c| c[0] == a["topology"] && c[1] == a["placement"])
                .unwrap_or_else(|| panic!("no row for {a}"));
            assert_eq!(cell[2].as_str(), Some(want.as_str()), "{a}");
            assert_eq!(cell[3], true, "the cell is inside the viewport at {w} px: {cell}");
        }
        screenshot(&c, &format!("sweep-orders-{w}")).await;
    }
}
