//! Probe order as a distribution in a real browser at 1024 and 1920 px: the scenario page's
//! distribution block says what the distribution computed here says (the boots, the share
//! above the ideal, each bar of the histogram, each CPU's share in the heatmap, the picks'
//! links), and `/seeds` shows seed 000's machines with the share of boots in which the
//! rotation's claim holds. Nothing leaves the viewport. Screenshots:
//! `target/screenshots/orders-*.png`.

use crate::common;

use common::browser::*;
use irqscope::analysis::orders::{distribution, CounterRange, Orders};
use irqscope::scenario::permalink;
use irqscope::scenario::spec::{parse_device_token, ScenarioSpec, TopologyRef};
use serde_json::Value;

const WIDTHS: [u32; 2] = [1024, 1920];

/// Three devices of different sizes under cluster on an 8-vCPU SMT-2 guest: the worst CPU
/// differs from order to order.
fn spec() -> ScenarioSpec {
    ScenarioSpec {
        variant: "cluster".into(),
        orders: Some("all".into()),
        counter_to: Some(3),
        ..ScenarioSpec::new(
            TopologyRef::Preset("vm-8vcpu-smt2".into()),
            ["3:name=a", "2:name=b", "1:name=c"]
                .iter()
                .map(|t| parse_device_token(t).unwrap())
                .collect(),
        )
    }
}

const READ_JS: &str = r#"
const q = (s) => document.querySelector(s);
const vw = document.documentElement.clientWidth;
const out = { headline: q('#orders-headline').textContent, numa: q('#orders-numa').textContent,
  bars: [...document.querySelectorAll('#orders-histogram rect.bar')].map((r) => [r.dataset.load, Number(r.dataset.runs)]),
  cells: [...document.querySelectorAll('#orders-heatmap rect[data-cpu]')].map((r) => [Number(r.dataset.cpu), Number(r.dataset.v)]),
  picks: [...document.querySelectorAll('#orders-picks tr[data-pick]')].map((t) => [t.dataset.pick, t.querySelector('a') ? t.querySelector('a').getAttribute('href') : '']),
  wide: [...document.querySelectorAll('#orders .figure svg, #orders table')].filter((e) => e.getBoundingClientRect().right > vw + 0.5).length,
  scroll: document.documentElement.scrollWidth > window.innerWidth };
return out;
"#;

#[tokio::test]
async fn the_scenario_page_shows_the_distribution() {
    let spec = spec();
    let s = spec.resolve(irqscope::catalogue::get).unwrap();
    let d = distribution(&s, Orders::All, CounterRange { from: 0, to: 3 }).unwrap();
    assert!(d.worst_irqs_per_cpu.len() > 1 && d.worst_above_ideal > 0, "{d:?}");
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    for w in WIDTHS {
        c.set_window_size(w, 1400).await.unwrap();
        c.goto(&format!("{}/s/{}", h.base, permalink::encode(&spec).unwrap()))
            .await
            .unwrap();
        let v: Value = wait_for("the distribution block", || async {
            c.execute(READ_JS, vec![]).await.ok()
        })
        .await;
        let headline = v["headline"].as_str().unwrap();
        let share = format!("{:.1}% of boots", 100.0 * d.p_worst_above_ideal());
        assert!(headline.starts_with(&format!("Over {} boots", d.runs)), "{headline}");
        assert!(headline.contains(&share), "{headline} / {share}");
        let bars: Vec<(String, u64)> = v["bars"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| (b[0].as_str().unwrap().to_string(), b[1].as_u64().unwrap()))
            .collect();
        let want: Vec<(String, u64)> = d.worst_irqs_per_cpu.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        assert_eq!(bars, want);
        // Each CPU's cell holds its share of boots above the ideal, rounded up to a percent.
        for cell in v["cells"].as_array().unwrap() {
            let cpu = cell[0].as_u64().unwrap() as usize;
            let k = d.cpu_above_ideal[cpu];
            assert_eq!(cell[1].as_u64().unwrap(), (100 * k).div_ceil(d.runs), "CPU {cpu}");
        }
        let cpus = s.topology().nr_cpu_ids() as usize;
        assert_eq!(v["cells"].as_array().unwrap().len(), cpus, "one cell per CPU");
        assert!(v["numa"].as_str().unwrap().starts_with("NUMA imbalance: "), "{v}");
        let picks: Vec<&str> = v["picks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[0].as_str().unwrap())
            .collect();
        assert_eq!(picks, ["best", "median", "worst"]);
        // The worst pick's link opens a fixed-order page whose worst CPU is the worst boot's.
        let worst = v["picks"][2][1].as_str().unwrap().to_string();
        assert!(worst.starts_with("/s/v1."), "{worst}");
        assert_eq!(v["wide"], 0, "a figure or table past the viewport at {w} px");
        assert_eq!(v["scroll"], false, "the page scrolls sideways at {w} px");
        screenshot(&c, &format!("orders-scenario-{w}")).await;
        c.goto(&format!("{}{worst}/json", h.base)).await.unwrap();
        let body = text_of(&c, "body").await;
        let j: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(j["metrics"]["irqs_per_cpu_max"], d.worst.irqs_per_cpu_max);
        assert!(j.get("distribution").is_none(), "a pick is one fixed-order boot");
    }
    c.close().await.unwrap();
}

#[tokio::test]
async fn seeds_show_the_claim_over_boots() {
    let view = irqscope::render::view::seeds::SeedsView::new().unwrap();
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    for w in WIDTHS {
        c.set_window_size(w, 1400).await.unwrap();
        c.goto(&format!("{}/seeds", h.base)).await.unwrap();
        let rows: Value = wait_for("the distributions table", || async {
            let v = c
                .execute(
                    r#"const vw = document.documentElement.clientWidth;
                    return [...document.querySelectorAll('table.seed-distributions tbody tr')].map((t) =>
                      [t.dataset.machine, t.dataset.variant, t.querySelector('td.claim').textContent,
                       t.querySelector('a').getAttribute('href'), t.getBoundingClientRect().right <= vw + 0.5]);"#,
                    vec![],
                )
                .await
                .ok()?;
            (v.as_array().is_some_and(|a| !a.is_empty())).then_some(v)
        })
        .await;
        let rows = rows.as_array().unwrap();
        assert_eq!(rows.len(), view.distributions.len());
        for (row, d) in rows.iter().zip(view.distributions) {
            assert_eq!(row[0], d.machine);
            assert_eq!(row[1], d.variant);
            assert_eq!(row[2], format!("{:.1}%", d.claim_percent()), "{row}");
            assert_eq!(row[3], d.link.as_str());
            assert_eq!(row[4], true, "row past the viewport at {w} px: {row}");
        }
        screenshot(&c, &format!("orders-seeds-{w}")).await;
    }
    c.close().await.unwrap();
}

/// A comparison of two distributions at 1024 and 1920 px: the change line says what the
/// distributions computed here say, each side's histogram has its bars, and each CPU's cell of
/// the diverging heatmap holds its change in points. Screenshots:
/// `target/screenshots/orders-compare-*.png`.
#[tokio::test]
async fn a_comparison_shows_both_distributions_and_their_change() {
    use irqscope::scenario::payloads::{CompareSpec, SideSpec};
    let scenario = spec();
    let sides = ["cluster", "rotation"].map(|v| {
        let s = ScenarioSpec {
            variant: v.into(),
            ..spec()
        }
        .resolve(irqscope::catalogue::get)
        .unwrap();
        distribution(&s, Orders::All, CounterRange { from: 0, to: 3 }).unwrap()
    });
    let side = |v: &str| SideSpec {
        variant: Some(v.into()),
        ..SideSpec::default()
    };
    let link = permalink::encode(&CompareSpec {
        scenario,
        a: side("cluster"),
        b: side("rotation"),
    })
    .unwrap();
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    for w in WIDTHS {
        c.set_window_size(w, 1400).await.unwrap();
        c.goto(&format!("{}/c/{link}", h.base)).await.unwrap();
        let v: Value = wait_for("the compared distributions", || async {
            c.execute(
                r#"const q = (s) => document.querySelector(s);
                const vw = document.documentElement.clientWidth;
                if (!q('#orders-change')) return null;
                return { change: q('#orders-change').textContent,
                  bars: [...document.querySelectorAll('#orders-compare .orders-side')].map((s) => s.querySelectorAll('rect.bar').length),
                  cells: [...document.querySelectorAll('#orders-diff rect[data-cpu]')].map((r) => [Number(r.dataset.cpu), Number(r.dataset.v)]),
                  wide: [...document.querySelectorAll('#orders-compare .figure svg')].filter((e) => e.getBoundingClientRect().right > vw + 0.5).length };"#,
                vec![],
            )
            .await
            .ok()
            .filter(|v| !v.is_null())
        })
        .await;
        let [a, b] = &sides;
        let want = format!(
            "P(worst > ideal) from {:.1}% under A to {:.1}% under B: {:+.1} points",
            100.0 * a.p_worst_above_ideal(),
            100.0 * b.p_worst_above_ideal(),
            100.0 * (b.p_worst_above_ideal() - a.p_worst_above_ideal())
        );
        assert_eq!(v["change"].as_str(), Some(want.as_str()));
        let bars: Vec<u64> = v["bars"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_u64().unwrap())
            .collect();
        assert_eq!(
            bars,
            [a.worst_irqs_per_cpu.len() as u64, b.worst_irqs_per_cpu.len() as u64]
        );
        let cells = v["cells"].as_array().unwrap();
        assert_eq!(cells.len(), 8);
        for cell in cells {
            let cpu = cell[0].as_u64().unwrap() as usize;
            let points =
                100.0 * (b.cpu_above_ideal[cpu] as f64 / b.runs as f64 - a.cpu_above_ideal[cpu] as f64 / a.runs as f64);
            assert_eq!(cell[1].as_i64(), Some(points.round() as i64), "CPU {cpu}");
        }
        assert!(
            cells.iter().any(|c| c[1].as_i64() != Some(0)),
            "some CPU changes: {cells:?}"
        );
        assert_eq!(v["wide"], 0, "a figure wider than {w} px");
        screenshot(&c, &format!("orders-compare-{w}")).await;
    }
}
