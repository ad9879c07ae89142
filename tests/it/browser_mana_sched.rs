//! The MANA and sched pages in a real browser, with the harness of `tests/browser.rs`: Debian's
//! `chromium` driven through `chromedriver` with fantoccini, the app on a loopback port, a fresh
//! profile per session; screenshots go to `target/screenshots/`.
//!
//! Without chromium or chromedriver these tests FAIL with a message naming the packages, unless
//! `IRQSCOPE_SKIP_BROWSER=1` is set.

use crate::common;

use common::browser::*;
use fantoccini::{Client, Locator};
async fn dots(c: &Client, css: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in c.find_all(Locator::Css(&format!("{css} circle.eff"))).await.unwrap() {
        out.push(e.attr("data-cpu").await.unwrap().unwrap().parse().unwrap());
    }
    out
}

async fn attr_of(c: &Client, css: &str, name: &str) -> Option<String> {
    c.find(Locator::Css(css)).await.ok()?.attr(name).await.ok().flatten()
}

#[tokio::test]
async fn mana_seed_preset_and_the_driver_toggle() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    c.goto(&h.base).await.unwrap();
    c.find(Locator::Css("#nav-mana")).await.unwrap().click().await.unwrap();
    wait_for("the MANA page", || async {
        c.find(Locator::Css("#seed-001")).await.ok()
    })
    .await;
    c.find(Locator::Css("#seed-001")).await.unwrap().click().await.unwrap();
    wait_for("the seed-001 load in the form", || async {
        let v = c
            .find(Locator::Css("#load"))
            .await
            .ok()?
            .prop("value")
            .await
            .ok()
            .flatten()?;
        (v == "0,1,1,1").then_some(())
    })
    .await;
    assert_eq!(dots(&c, "#grid-unpatched").await, [0, 0, 2, 0, 3]);
    assert_eq!(dots(&c, "#grid-patched").await, [0, 0, 1, 2, 3]);
    assert_eq!(dots(&c, "#grid-focus").await, [0, 0, 2, 0, 3]);
    let unpatched_side = text_of(&c, "#side-unpatched").await;
    assert!(unpatched_side.contains("imbalance 2"), "{unpatched_side}");
    let steps_before = text_of(&c, "#steps").await;
    assert!(steps_before.contains("numa_aware spread over 4 IRQs"), "{steps_before}");
    screenshot(&c, "mana-seed001-unpatched").await;

    select(&c, "#driver", "patched").await;
    let focus = wait_for("the focus grid to show the patched driver", || async {
        let d = dots(&c, "#grid-focus").await;
        (d == [0, 0, 1, 2, 3]).then_some(d)
    })
    .await;
    assert_eq!(focus, [0, 0, 1, 2, 3]);
    let steps_after = text_of(&c, "#steps").await;
    assert!(steps_after.contains("linear spread over 4 IRQs"), "{steps_after}");
    assert_eq!(
        dots(&c, "#grid-unpatched").await,
        [0, 0, 2, 0, 3],
        "both versions stay side by side"
    );
    screenshot(&c, "mana-seed001-patched").await;

    // The permalink reproduces the same grids in a new session.
    let link = attr_of(&c, "#permalink", "href").await.unwrap();
    assert!(link.starts_with("/m/v1."), "{link}");
    c.close().await.unwrap();
    let fresh = h.session().await;
    fresh.goto(&format!("{}{link}", h.base)).await.unwrap();
    assert_eq!(dots(&fresh, "#grid-unpatched").await, [0, 0, 2, 0, 3]);
    fresh.close().await.unwrap();
}

/// The text of every decision cell of `variant`, and how many of them are splits.
async fn decisions(c: &Client, variant: &str) -> (Vec<String>, usize) {
    let cells = c
        .find_all(Locator::Css(&format!("#decisions td.decision[data-variant={variant}]")))
        .await
        .unwrap();
    let mut texts = Vec::new();
    let mut splits = 0;
    for e in cells {
        if e.attr("class")
            .await
            .unwrap()
            .unwrap_or_default()
            .split_whitespace()
            .any(|k| k == "split")
        {
            splits += 1;
        }
        texts.push(e.text().await.unwrap());
    }
    (texts, splits)
}

#[tokio::test]
async fn sched_seed_preset_noise_and_variant() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    c.goto(&h.base).await.unwrap();
    c.find(Locator::Css("#nav-sched")).await.unwrap().click().await.unwrap();
    wait_for("the sched page", || async {
        c.find(Locator::Css("#seed-003")).await.ok()
    })
    .await;
    c.find(Locator::Css("#seed-003")).await.unwrap().click().await.unwrap();
    wait_for("the seed-003 preset", || async {
        let url = c.current_url().await.ok()?;
        url.query().is_some_and(|q| q.contains("pair_node=1")).then_some(())
    })
    .await;
    let (p12_quiet, p12_quiet_splits) = decisions(&c, "p12").await;
    let (_, upstream_splits) = decisions(&c, "upstream").await;
    assert!(upstream_splits > 0, "upstream splits the bare pair");
    assert_eq!(p12_quiet_splits, 0, "p12 keeps the bare pair");
    assert_eq!(c.find_all(Locator::Css("svg.ladder")).await.unwrap().len(), 4);
    // Each key of the legend is drawn in its own colour: a descended group is purple in an
    // unequal-weight domain too (it was drawn the domain's red).
    let strokes = c
        .execute(
            "const key = getComputedStyle(document.querySelector('.legend .key.descended')).borderTopColor; \
             const drawn = [...document.querySelectorAll('svg.ladder rect.group.descended')] \
               .map((r) => [r.closest('g').classList.contains('unequal'), getComputedStyle(r).stroke]); \
             return {key, drawn};",
            vec![],
        )
        .await
        .unwrap();
    let drawn = strokes["drawn"].as_array().unwrap();
    assert!(
        drawn.iter().any(|d| d[0] == true),
        "no descended group in an unequal domain: {strokes}"
    );
    assert!(
        drawn.iter().all(|d| d[1] == strokes["key"]),
        "descended groups not in the legend's colour: {strokes}"
    );
    assert_eq!(
        c.find_all(Locator::Css("#notes li")).await.unwrap().len(),
        irqscope::kernel::sched::INTERPRETATION_NOTES.len()
    );
    screenshot(&c, "sched-seed003-noise0").await;

    select(&c, "#noise", "1").await;
    let (p12_noisy, p12_noisy_splits) = wait_for("the table to reflect one noise task", || async {
        let (t, s) = decisions(&c, "p12").await;
        (s > 0).then_some((t, s))
    })
    .await;
    assert!(p12_noisy_splits > 0);
    assert_ne!(p12_quiet, p12_noisy, "the decision table changed");
    let (_, p123_splits) = decisions(&c, "p123").await;
    assert_eq!(p123_splits, 0, "p123 holds pair + 1 noise on node 1");
    let verdicts = text_of(&c, "#verdicts").await;
    assert!(verdicts.contains("p12: periodic balance SPLITS the pair"), "{verdicts}");
    screenshot(&c, "sched-seed003-noise1").await;

    select(&c, "#variant", "p123").await;
    wait_for("the p123 column to be highlighted", || async {
        let th = c
            .find(Locator::Css("#decisions th.sel"))
            .await
            .ok()?
            .text()
            .await
            .ok()?;
        (th == "p123").then_some(())
    })
    .await;
    let sel = c.find_all(Locator::Css("#decisions td.decision.sel")).await.unwrap();
    assert!(!sel.is_empty());
    assert_eq!(sel[0].attr("data-variant").await.unwrap().as_deref(), Some("p123"));
    let noise = prop_of(&c, "#noise", "value").await;
    assert_eq!(noise.as_deref(), Some("1"), "the noise survives a view change");
    screenshot(&c, "sched-seed003-noise1-p123").await;
    c.close().await.unwrap();
}
