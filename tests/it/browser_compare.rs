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

/// A page of built C (`c:NAME`, here the registered stand-in of `kernel_c::fake`): the
/// editor's variant box and the compare form's side A show `c:NAME`, side B starts on the
/// model of the release the scenario is for (the newest: `cluster`), the navigation links
/// `/kernel-c`, and the comparison the form opens runs the build against that model.
#[tokio::test]
async fn a_built_c_page_compares_the_build_with_its_release() {
    use irqscope::web::kernel_c::KernelCRegistry;
    let _one = ONE_AT_A_TIME.lock().await;
    let app = irqscope::web::app(irqscope::web::AppState {
        kernel_c: KernelCRegistry::new(vec![crate::kernel_c::fake("fake", false)]),
        ..Default::default()
    });
    let Some(mut h) = Harness::start_with(app).await else {
        return;
    };
    let c = h.session().await;
    let page = format!("{}{}", h.base, crate::kernel_c::link("c:fake", None));
    let shown = r#"const sel = (css) => { const s = document.querySelector(css);
            return s && s.selectedIndex >= 0 ? [s.value, s.options[s.selectedIndex].text] : ['', '']; };
        const nav = document.getElementById('nav-kernel-c');
        return [sel('#variant'), sel('#compare-form select[name=a]'), sel('#compare-form select[name=b]'),
                nav ? nav.getAttribute('href') : ''];"#;
    for width in [1024u32, 1920] {
        c.set_window_size(width, 1000).await.unwrap();
        c.goto(&page).await.unwrap();
        let v = wait_for("the editor's variant box", || async {
            let v = c.execute(shown, vec![]).await.ok()?;
            (v[0][0] != "").then_some(v)
        })
        .await;
        assert_eq!(v[0], serde_json::json!(["c:fake", "c:fake"]), "variant box: {v}");
        assert_eq!(v[1], serde_json::json!(["c:fake", "c:fake"]), "compare side A: {v}");
        assert_eq!(v[2], serde_json::json!(["cluster", "cluster"]), "compare side B: {v}");
        assert_eq!(v[3], "/kernel-c", "navigation: {v}");
        click(&c, "#inputs-box > summary").await;
        screenshot(&c, &format!("kernel-c-variant-box-{width}")).await;
    }
    click(&c, "#compare-go").await;
    let sides = wait_for("the comparison", || async {
        let t = c
            .execute(
                "const t = document.querySelector('.compare p.topo'); return t ? t.textContent : '';",
                vec![],
            )
            .await
            .ok()?;
        let t = t.as_str()?.to_string();
        (!t.is_empty()).then_some(t)
    })
    .await;
    assert!(
        sides.contains(": A c:fake (") && sides.contains(" · B cluster ("),
        "{sides}"
    );
    screenshot(&c, "kernel-c-compare").await;
    c.close().await.unwrap();
}

/// The 8,192-CPU machine's compare (pre-cluster against rotation: equal loads, 960 vectors
/// moved) leads with its figure: at 1024 and 1920 px the heatmap's top is on the first screen
/// and above the per-vector table, which is folded by node pattern (one row per device, not
/// 960).
#[tokio::test]
async fn big_compare_leads_with_its_figure() {
    const BIG_COMPARE: &str = "/compare?preset=synthetic-8192&devices=16x64&a=pre-cluster&b=rotation";
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    for w in [1024u32, 1920] {
        c.set_window_size(w, 1000).await.unwrap();
        c.goto(&format!("{}{BIG_COMPARE}", h.base)).await.unwrap();
        let v = c
            .execute(
                r#"
const fig = document.querySelector('main .figure svg');
const table = document.getElementById('vector-changes');
const block = table.closest('details') || table;
const top = (e) => e.getBoundingClientRect().top + window.scrollY;
return { fig: top(fig), table: top(block), fold: window.innerHeight,
         rows: table.querySelectorAll('tbody tr').length };
"#,
                vec![],
            )
            .await
            .unwrap();
        screenshot(&c, &format!("compare-8192-{w}")).await;
        let (fig, table, fold) = (
            v["fig"].as_f64().unwrap(),
            v["table"].as_f64().unwrap(),
            v["fold"].as_f64().unwrap(),
        );
        assert!(fig < fold, "at {w} px the figure starts below the first screen: {v}");
        assert!(
            fig < table,
            "at {w} px the per-vector table comes before the figure: {v}"
        );
        assert!(
            v["rows"].as_u64().unwrap() <= 64,
            "at {w} px the table is not folded: {v}"
        );
    }
    c.close().await.unwrap();
}
