//! The live page in real headless Chromium (Debian `chromium` + `chromium-driver`): the agent
//! binary pushes a fixture whose counters the test advances, and the heatmap and the history
//! chart on the open page change through SSE without a reload. `IRQSCOPE_SKIP_BROWSER=1` skips; without the tools the
//! test fails naming the packages (as `tests/browser.rs` does).

use fantoccini::Locator;
use irqscope::live::auth::Tokens;
use irqscope::live::parse::{format_interrupts, parse_interrupts};
use irqscope::web::{self, live::LiveState, AppState};
use serde_json::json;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::browser::Harness;
use common::fs::{copy_dir, Scratch};
use common::process::KillOnDrop;

const TOKEN: &str = "browser-token-0123456789abcdef";

/// Add `n` to the counters of the NVMe IRQs of one device.
fn advance(root: &Path, device: &str, n: u64) {
    let path = root.join("proc/interrupts");
    let mut p = parse_interrupts(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for r in p.rows.iter_mut().filter(|r| r.name.starts_with(device)) {
        for c in r.counts.iter_mut() {
            c.1 += n;
        }
    }
    std::fs::write(root.join("proc/interrupts.new"), format_interrupts(&p)).unwrap();
    std::fs::rename(root.join("proc/interrupts.new"), path).unwrap();
}

/// The x86 NVMe fixture copied under a fresh `root` (named `name`), the browser harness serving
/// `live` and the agent binary pushing that root as `host` every 300 ms: the root, the harness
/// and the agent (killed on drop). `None` when browser tests are skipped.
async fn serve_pushed_fixture(name: &str, host: &str, live: LiveState) -> Option<(Scratch, Harness, KillOnDrop)> {
    let root = Scratch::new(name);
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/live/x86-nvme-vm"),
        &root,
    );
    std::fs::write(root.join("token"), TOKEN).unwrap();
    let harness = Harness::start_with(web::app(AppState {
        live,
        ..Default::default()
    }))
    .await?;
    let base = harness.base.clone();
    let agent = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_irqscope-agent"))
            .args(["push", "--server", &base, "--host", host, "--interval-ms", "300"])
            .arg("--root")
            .arg(&root)
            .arg("--token-file")
            .arg(root.join("token"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    Some((root, harness, agent))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_heatmap_follows_the_agent_in_chromium() {
    let (live, _) = LiveState::new(Tokens::parse(TOKEN).unwrap(), None).unwrap();
    let Some((root, mut harness, _agent)) = serve_pushed_fixture("live-browser", "vm1", live).await else {
        return;
    };
    let base = harness.base.clone();
    let c = harness.session().await;

    // Wait for the host to exist, then open its page once.
    let started = Instant::now();
    loop {
        c.goto(&format!("{base}/live/vm1")).await.unwrap();
        if c.find(Locator::Css("#live-heatmap svg")).await.is_ok() {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "live page never appeared");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let marker: serde_json::Value = c
        .execute("window.__irqscope_marker = 42; return 1;", vec![])
        .await
        .unwrap();
    assert_eq!(marker, json!(1));
    // Cells with a non-zero value, as the page shows them now.
    let hot_cells = r#"return Array.from(document.querySelectorAll('#live-heatmap rect.cpu')).filter(r => r.dataset.v !== '0').map(r => r.dataset.cpu).join(',');"#;
    let wait_cells = |want_nonempty: bool| {
        let c = c.clone();
        async move {
            let started = Instant::now();
            loop {
                let v = c.execute(hot_cells, vec![]).await.unwrap();
                let s = v.as_str().unwrap_or("").to_string();
                if s.is_empty() != want_nonempty {
                    return s;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(20),
                    "heatmap did not change (hot cells {s:?})"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    wait_cells(false).await;
    // The history chart follows the stream too: its newest reading moves on without a reload.
    let chart_seq = r#"const s = document.querySelector('#live-history svg'); const t = document.querySelector('#live-history-text .hist');
        return [s ? Number(s.dataset.lastSeq) : 0, t ? t.textContent : ''];"#;
    let v = c.execute(chart_seq, vec![]).await.unwrap();
    let seq0 = v[0].as_u64().unwrap();
    assert!(seq0 >= 1, "chart missing: {v}");
    let started = Instant::now();
    loop {
        let v = c.execute(chart_seq, vec![]).await.unwrap();
        let seq = v[0].as_u64().unwrap();
        if seq >= seq0 + 2 {
            assert!(
                v[1].as_str().unwrap().starts_with(&format!("#{seq} ")),
                "history text lags the chart: {v}"
            );
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "history chart did not move from #{seq0}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    advance(&root, "nvme2", 50_000);
    let hot = wait_cells(true).await;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("live-heatmap.png"), c.screenshot().await.unwrap()).unwrap();
    assert!(
        hot.split(',').count() >= 4,
        "nvme2's queues land on several CPUs: {hot}"
    );
    // Still the same page (no reload): the marker survived.
    let still: serde_json::Value = c.execute("return window.__irqscope_marker;", vec![]).await.unwrap();
    assert_eq!(still, json!(42), "the page reloaded");
    // The table sorts by rate: the busiest IRQ first after clicking the rate header.
    c.find(Locator::Css("#irq-table th:nth-child(6)"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    // Read in one script: an SSE update may replace the rows between a find and its text.
    let first = c
        .execute(
            "const td = document.querySelector('#irq-rows tr:first-child td:nth-child(2)'); return td ? td.textContent : '';",
            vec![],
        )
        .await
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();
    // Rates may have dropped back to 0 by now; then any order is right, else nvme2 leads.
    let rates_on = !c
        .execute(hot_cells, vec![])
        .await
        .unwrap()
        .as_str()
        .unwrap_or("")
        .is_empty();
    assert!(!rates_on || first.starts_with("nvme2"), "first row {first:?}");
    c.close().await.unwrap();
}

const VIEWER: &str = "browser-viewer-0123456789";

/// With viewer tokens the page refuses a visit without one; a `?token=` visit lands on the
/// page without the token in the address, and the page's `EventSource` (carrying the cookie)
/// keeps following the agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_token_visit_keeps_the_live_page_streaming() {
    let (live, _) = LiveState::new(Tokens::parse(TOKEN).unwrap(), None).unwrap();
    let live = live.with_viewer_tokens(irqscope::live::auth::ViewerTokens::parse(VIEWER).unwrap());
    let Some((_root, mut harness, _agent)) = serve_pushed_fixture("live-browser-viewer", "vm2", live).await else {
        return;
    };
    let base = harness.base.clone();
    let c = harness.session().await;
    // Without the token: the refusal, not the page.
    let started = Instant::now();
    loop {
        c.goto(&format!("{base}/live/vm2")).await.unwrap();
        let text = c.find(Locator::Css("body")).await.unwrap().text().await.unwrap();
        if text.contains("viewer token") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "no refusal: {text}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(c.find(Locator::Css("#live-heatmap")).await.is_err());
    // With it: the page, the token gone from the address.
    c.goto(&format!("{base}/live/vm2?token={VIEWER}")).await.unwrap();
    c.find(Locator::Css("#live-heatmap svg")).await.expect("the live page");
    let url = c.current_url().await.unwrap();
    assert_eq!(url.as_str(), format!("{base}/live/vm2"));
    // The stream follows the agent: the page's reading moves on by two without a reload.
    let seq = r#"return Number(document.getElementById('live').dataset.seq || 0);"#;
    let started = Instant::now();
    let mut first = None;
    loop {
        let now = c.execute(seq, vec![]).await.unwrap().as_u64().unwrap_or(0);
        match first {
            None if now > 0 => first = Some(now),
            Some(f) if now >= f + 2 => break,
            _ => {}
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the stream did not move (seq {now}, first {first:?})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stopped = c
        .execute("return document.getElementById('live').dataset.stopped || '';", vec![])
        .await
        .unwrap();
    assert_eq!(stopped, json!(""), "the stream was refused");
    c.close().await.unwrap();
}

/// The verdict of the page open in `c` starts with `says` and its box ends inside the window
/// (`size`, above the fold).
async fn assert_verdict_above_the_fold(c: &fantoccini::Client, says: &str, size: (u32, u32)) {
    let v = c
        .execute(
            r#"const e = document.getElementById('live-verdict');
               if (!e) return ['', false, -1];
               const r = e.getBoundingClientRect();
               return [e.textContent, r.height > 0 && r.bottom <= window.innerHeight, r.bottom];"#,
            vec![],
        )
        .await
        .unwrap();
    let text = v[0].as_str().unwrap_or("");
    assert!(text.starts_with(says), "{size:?}: {text:?}");
    assert!(
        v[1].as_bool().unwrap_or(false),
        "{size:?}: the verdict ends at {} px, below the fold",
        v[2]
    );
}

/// A live host's page leads with its verdict ("0 of 36 modelled vectors differ"), above the
/// fold at 1024×768 and 1920×1080, as a scenario page does; an imported single
/// `/proc/interrupts` reading (no rates, no /proc/irq files) says what it cannot compare
/// instead of painting every vector as differing, with no "?" and no row marked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_pages_lead_with_their_verdict_above_the_fold() {
    let _one = common::browser::ONE_AT_A_TIME.lock().await;
    let (live, _) = LiveState::new(Tokens::parse(TOKEN).unwrap(), None).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/live/x86-nvme-vm");
    let proc = irqscope::live::collect::read_proc(&root).unwrap();
    let topo =
        irqscope::live::collect::topology_of(&irqscope::live::collect::read_topology(&root).unwrap(), "vm1").unwrap();
    let body = serde_json::to_vec(&irqscope::live::collect::build_snapshot(&proc, &topo, "vm1", 1).unwrap()).unwrap();
    live.hub().ingest("vm1", Some(TOKEN.as_bytes()), None, &body).unwrap();
    let Some(mut harness) = Harness::start_with(web::app(AppState {
        live,
        ..Default::default()
    }))
    .await
    else {
        return;
    };
    let base = harness.base.clone();
    let c = harness.session().await;
    let pasted = std::fs::read_to_string(root.join("proc/interrupts")).unwrap();
    for (width, height) in [(1024u32, 768u32), (1920, 1080)] {
        c.set_window_size(width, height).await.unwrap();
        c.goto(&format!("{base}/live/vm1")).await.unwrap();
        assert_verdict_above_the_fold(
            &c,
            "0 of 36 modelled vectors differ from the kernel model",
            (width, height),
        )
        .await;
        common::browser::screenshot(&c, &format!("live-verdict-host-{width}")).await;

        // A pasted /proc/interrupts, imported through the page's own form.
        c.goto(&format!("{base}/live")).await.unwrap();
        c.execute(
            "document.getElementById('import-text').value = arguments[0];",
            vec![json!(pasted)],
        )
        .await
        .unwrap();
        common::browser::click(&c, "#import-go").await;
        let started = Instant::now();
        while c.find(Locator::Css("#model-table")).await.is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the import page never appeared"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_verdict_above_the_fold(
            &c,
            "Not compared with the kernel model: this reading records no mask or CPU",
            (width, height),
        )
        .await;
        let shown = c
            .execute(
                r#"return [document.querySelectorAll('#model-table tr.mismatch').length,
                           document.querySelectorAll('#model-table tbody tr').length,
                           document.getElementById('model-table').textContent.includes('?'),
                           (document.getElementById('live-limits') || {}).textContent || '',
                           document.querySelector('#live-heatmap') === null];"#,
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(shown[0], json!(0), "rows marked as differing: {shown}");
        assert_eq!(shown[1], json!(36), "{shown}");
        assert_eq!(shown[2], json!(false), "a '?' in the model table: {shown}");
        let limits = shown[3].as_str().unwrap();
        assert!(
            limits.contains("cannot show interrupt rates") && limits.contains("effective_affinity_list"),
            "{limits}"
        );
        assert_eq!(shown[4], json!(true), "an all-zero heatmap for a reading without rates");
        common::browser::screenshot(&c, &format!("live-verdict-import-{width}")).await;
    }
    c.close().await.unwrap();
}
