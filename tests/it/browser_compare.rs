//! `/compare` in real Chromium: both heatmaps are drawn on one colour scale, read from the
//! rendered page (equal values get equal fills on A and B, one `data-scale-max`), and every
//! cell lies inside its figure's box. Same harness and skip rule as `browser.rs`.

use crate::common;

use common::browser::*;

#[tokio::test]
async fn compare_reads_one_shared_scale() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    c.goto(&format!("{}/compare?a=pre-cluster&b=rotation&metric=devices", h.base))
        .await
        .unwrap();
    let read = r#"
        const sides = {};
        for (const svg of document.querySelectorAll('svg[data-scale=shared]')) {
            const box = svg.getBoundingClientRect();
            const fills = {};
            let outside = 0;
            for (const cell of svg.querySelectorAll('rect.cpu')) {
                const r = cell.getBoundingClientRect();
                if (r.left < box.left - 0.5 || r.right > box.right + 0.5) outside++;
                fills[cell.dataset.v] = getComputedStyle(cell).fill;
            }
            sides[svg.dataset.side] = {max: svg.dataset.scaleMax, fills, outside,
                                       fits: box.right <= document.documentElement.clientWidth + 0.5};
        }
        return sides;"#;
    let sides = c.execute(read, vec![]).await.unwrap();
    screenshot(&c, "compare-shared-scale").await;
    let (a, b) = (&sides["A"], &sides["B"]);
    assert_eq!(a["max"], "6", "{sides}");
    assert_eq!(b["max"], "6", "pre-cluster's maximum is the shared one: {sides}");
    // Rotation's hottest CPUs (4 devices) and pre-cluster's CPUs with 4 look the same.
    let shared: Vec<&String> = a["fills"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|v| b["fills"].get(*v).is_some())
        .collect();
    assert!(!shared.is_empty(), "no value on both sides: {sides}");
    for v in shared {
        assert_eq!(a["fills"][v], b["fills"][v], "value {v} drawn differently: {sides}");
    }
    assert_ne!(a["fills"]["6"], b["fills"]["4"], "6 and 4 look alike: {sides}");
    for s in [a, b] {
        assert_eq!(s["outside"], 0, "cells outside their figure: {sides}");
        assert_eq!(s["fits"], true, "figure wider than the page: {sides}");
    }
    c.close().await.unwrap();
}
