//! Fleets on Prometheus: `irqscope-agent export` checked by `promtool check metrics`, the real
//! `prometheus` scraping it on loopback at 1 s and the dashboard reading it back (rates and
//! live-vs-model verdicts equal to the push path's for the same counters), and a Prometheus
//! that is down, never answers or answers garbage (503 within a bound, pushed hosts unharmed).

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use irqscope::analysis::live_vs_model;
use irqscope::live::auth::Tokens;
use irqscope::live::collect::Collector;
use irqscope::live::parse::{format_interrupts, parse_interrupts};
use irqscope::live::prometheus::{poll_once, run, PromClient, PromStatus};
use irqscope::web::{self, live::LiveState, AppState};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower::ServiceExt;

use crate::common::fs::copy_dir;
use crate::common::process::{find_program, free_port, KillOnDrop};

const TOKEN: &str = "fleet-test-token-0123456789abcdef";
const HOST: &str = "vm1";
/// Longest the API may take to answer while Prometheus is in trouble.
const ANSWER_BOUND: Duration = Duration::from_secs(2);

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/live/x86-nvme-vm")
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("irqscope-fleet-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Add `per_irq` to every non-zero counter of numbered IRQs (atomically: a rename).
fn advance(root: &Path, per_irq: u64) {
    let path = root.join("proc/interrupts");
    let mut p = parse_interrupts(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for r in p.rows.iter_mut().filter(|r| r.irq().is_some()) {
        for c in r.counts.iter_mut().filter(|c| c.1 > 0) {
            c.1 += per_irq;
        }
    }
    let tmp = root.join("proc/interrupts.new");
    std::fs::write(&tmp, format_interrupts(&p)).unwrap();
    std::fs::rename(tmp, path).unwrap();
}

/// GET over a fresh connection (no client library: what a scraper sees).
fn http_get(port: u16, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_string())
}

fn start_exporter(root: &Path, port: u16) -> KillOnDrop {
    let child = Command::new(env!("CARGO_BIN_EXE_irqscope-agent"))
        .args([
            "export",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--host",
            HOST,
            "--root",
        ])
        .arg(root)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let k = KillOnDrop(child);
    let t0 = Instant::now();
    while http_get(port, "/metrics").is_none() {
        assert!(t0.elapsed() < Duration::from_secs(20), "the exporter did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    k
}

fn promtool_accepts(text: &str) {
    let Some(promtool) = find_program(&["promtool"]) else {
        panic!("promtool not installed (apt-get install prometheus)");
    };
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_exporter_output_passes_promtool() {
    let root = fixture();
    let port = free_port();
    let _agent = start_exporter(&root, port);
    let text = http_get(port, "/metrics").unwrap();
    promtool_accepts(&text);
    let snap = Collector::new(&root, HOST).read(0).unwrap();
    let nonzero: usize = snap
        .irqs
        .iter()
        .map(|i| i.counts.iter().filter(|c| c.1 > 0).count())
        .sum();
    let counters = text
        .lines()
        .filter(|l| l.starts_with("irqscope_interrupts_total{"))
        .count();
    assert_eq!(counters, nonzero, "one counter per non-zero (IRQ, CPU)");
    assert_eq!(
        text.lines().filter(|l| l.starts_with("irqscope_irq_info{")).count(),
        snap.irqs.len()
    );
    assert!(text.lines().all(|l| l.starts_with('#') || l.contains("host=\"vm1\"")));

    // The textfile form: the same series, written atomically, also accepted.
    let dir = temp_dir("textfile");
    let file = dir.join("irqscope.prom");
    let status = Command::new(env!("CARGO_BIN_EXE_irqscope-agent"))
        .args(["export", "--host", HOST, "--count", "1", "--textfile"])
        .arg(&file)
        .arg("--root")
        .arg(&root)
        .status()
        .unwrap();
    assert!(status.success());
    let written = std::fs::read_to_string(&file).unwrap();
    promtool_accepts(&written);
    assert_eq!(
        written
            .lines()
            .filter(|l| l.starts_with("irqscope_interrupts_total{"))
            .count(),
        nonzero
    );
    // Only the file is left: no temporary beside it.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    std::fs::remove_dir_all(&dir).unwrap();

    // Bad use is one line and exit 2.
    let out = Command::new(env!("CARGO_BIN_EXE_irqscope-agent"))
        .args(["export", "--host", HOST])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--listen"));
}

async fn call(app: &axum::Router, uri: &str) -> (StatusCode, String, Duration) {
    let t0 = Instant::now();
    let req = Request::get(uri)
        .header(header::HOST, "irqscope.test")
        .body(Body::empty())
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned(), t0.elapsed())
}

fn app_of(live: &LiveState) -> axum::Router {
    web::app(AppState { live: live.clone() })
}

/// Per-CPU rates of `/api/live/vm1`.
fn per_cpu(json: &serde_json::Value) -> Vec<(String, f64)> {
    let mut v: Vec<(String, f64)> = json["per_cpu"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_f64().unwrap()))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn verdicts(live: &LiveState) -> Vec<(String, u32, bool, bool)> {
    let st = live.hub().host(HOST).unwrap();
    let c = live_vs_model::compare(
        &st.snapshot,
        &st.topology,
        irqscope::scenario::spec::DEFAULT_VARIANT.name(),
        irqscope::scenario::spec::DEFAULT_EFFECTIVE.name(),
    )
    .unwrap();
    c.vectors
        .iter()
        .map(|v| (v.device.clone(), v.index, v.mask_matches, v.cpu_matches))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_hosts_match_the_push_path() {
    let Some(prometheus) = find_program(&["prometheus"]) else {
        panic!("prometheus not installed (apt-get install prometheus)");
    };
    let dir = temp_dir("e2e");
    let root = dir.join("root");
    copy_dir(&fixture(), &root);
    let (agent_port, prom_port) = (free_port(), free_port());
    let _agent = start_exporter(&root, agent_port);
    std::fs::write(
        dir.join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: irqscope\n    static_configs:\n      - targets: ['127.0.0.1:{agent_port}']\n"
        ),
    )
    .unwrap();
    let _prom = KillOnDrop(
        Command::new(prometheus)
            .arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );

    let live = LiveState::default();
    let client = PromClient::new(&format!("http://127.0.0.1:{prom_port}")).unwrap();
    let status = Arc::new(PromStatus::new(client.base()));
    let live = live.with_prometheus(status.clone());
    let poller = tokio::spawn(run(client, live.hub().clone(), status.clone(), 250));
    let app = app_of(&live);

    // The host appears once Prometheus has scraped it.
    let t0 = Instant::now();
    let first_seq = loop {
        let (code, body, _) = call(&app, "/api/live/vm1").await;
        if code == StatusCode::OK {
            let j: serde_json::Value = serde_json::from_str(&body).unwrap();
            break j["seq"].as_u64().unwrap();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no host from Prometheus: {code} {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(status.hosts(), [HOST]);
    let before = Collector::new(&root, HOST).read(0).unwrap();

    // Counters move once; the first reading with rates is the interval across the move.
    advance(&root, 1_000);
    let t0 = Instant::now();
    let prom_json = loop {
        let (code, body, _) = call(&app, "/api/live/vm1").await;
        assert_eq!(code, StatusCode::OK, "{body}");
        let j: serde_json::Value = serde_json::from_str(&body).unwrap();
        if j["seq"].as_u64().unwrap() > first_seq && j["irqs_per_s"].as_f64().unwrap_or(0.0) > 0.0 {
            break j;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no rates from Prometheus: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let taken = prom_json["taken_unix_ms"].as_u64().unwrap();
    let interval = prom_json["interval_ms"].as_u64().unwrap();
    // One scrape apart (the scrape interval, within Prometheus' jitter), not across several.
    assert!((500..=2_500).contains(&interval), "interval {interval} ms");
    let after = Collector::new(&root, HOST).read(0).unwrap();

    // The push path given the same counters at the same instants.
    let (push, _) = LiveState::new(Tokens::parse(TOKEN).unwrap(), None).unwrap();
    let push_app = app_of(&push);
    for (mut snap, at) in [(before, taken - interval), (after, taken)] {
        snap.taken_unix_ms = at;
        let req = Request::post("/api/live/vm1/snapshots")
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(serde_json::to_vec(&snap).unwrap()))
            .unwrap();
        let resp = push_app.clone().oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    let (_, body, _) = call(&push_app, "/api/live/vm1").await;
    let push_json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let (p, q) = (per_cpu(&prom_json), per_cpu(&push_json));
    assert_eq!(p.len(), q.len());
    assert!(p.iter().any(|c| c.1 > 0.0));
    for ((c1, r1), (c2, r2)) in p.iter().zip(&q) {
        assert_eq!(c1, c2);
        assert!(
            (r1 - r2).abs() <= 1e-9 * r2.abs().max(1.0),
            "CPU {c1}: {r1} vs push {r2}"
        );
    }

    // Live-vs-model: the same verdicts, and the pages render for the Prometheus host.
    let (v1, v2) = (verdicts(&live), verdicts(&push));
    assert!(!v1.is_empty());
    assert_eq!(v1, v2);
    let (code, page, _) = call(&app, "/live/vm1").await;
    assert_eq!(code, StatusCode::OK);
    assert!(page.contains("vm1"));
    // The SSE stream opens (its body runs for the stream's lifetime: only the head is read).
    let req = Request::get("/live/vm1/events").body(Body::empty()).unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    drop(resp);

    poller.abort();
    drop(_prom);
    drop(_agent);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A loopback server that accepts and then does `f` with each connection, on its own thread.
fn tiny_server(f: fn(std::net::TcpStream)) -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || f(s));
        }
    });
    port
}

async fn troubled(port: u16, expect: &str) {
    // A pushed host beside the Prometheus ones, answered as ever.
    let (live, _) = LiveState::new(Tokens::parse(TOKEN).unwrap(), None).unwrap();
    let client = PromClient::new(&format!("http://127.0.0.1:{port}"))
        .unwrap()
        .with_timeout(Duration::from_millis(500));
    let status = Arc::new(PromStatus::new(client.base()));
    let live = live.with_prometheus(status.clone());
    let app = app_of(&live);
    let mut snap = Collector::new(&fixture(), "pushed").read(1_000).unwrap();
    snap.host = "pushed".into();
    let req = Request::post("/api/live/pushed/snapshots")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(serde_json::to_vec(&snap).unwrap()))
        .unwrap();
    assert_eq!(app.clone().oneshot(req).await.unwrap().status(), StatusCode::OK);

    // Before the first poll ends: not yet.
    let (code, body, took) = call(&app, "/api/live/vm1").await;
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body.contains("has not answered yet"), "{body}");
    assert!(took < ANSWER_BOUND);

    let t0 = Instant::now();
    let e = poll_once(&client, live.hub(), &status, &mut HashMap::new())
        .await
        .unwrap_err();
    assert!(t0.elapsed() < ANSWER_BOUND, "the poll took {:?}", t0.elapsed());
    assert!(e.to_string().contains(expect), "{e}");
    for uri in ["/api/live/vm1", "/live/vm1"] {
        let (code, body, took) = call(&app, uri).await;
        assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE, "{uri}: {body}");
        assert!(body.contains(expect), "{uri}: {body}");
        assert!(took < ANSWER_BOUND);
    }
    let (code, _, _) = call(&app, "/api/live/pushed").await;
    assert_eq!(code, StatusCode::OK);
}

#[tokio::test]
async fn a_down_prometheus_gives_503() {
    troubled(free_port(), "unreachable").await;
}

#[tokio::test]
async fn a_silent_prometheus_gives_503_within_the_timeout() {
    let port = tiny_server(|s| {
        std::thread::sleep(Duration::from_secs(30));
        drop(s);
    });
    troubled(port, "did not answer within").await;
}

#[tokio::test]
async fn a_prometheus_answering_garbage_gives_503() {
    let port = tiny_server(|mut s| {
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf);
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot json!");
    });
    troubled(port, "not a query result").await;
}

#[tokio::test]
async fn the_fleet_page_sorts_and_filters_by_model() {
    let (live, _) = LiveState::new(Tokens::parse(TOKEN).unwrap(), None).unwrap();
    let app = app_of(&live);
    let good = Collector::new(&fixture(), "a-good").read(1_000).unwrap();
    let mut odd = good.clone();
    odd.host = "b-odd".into();
    // Every device IRQ stacked on CPU 0: the model disagrees, and stacking is the IRQ count.
    let mut stacked = 0;
    for irq in odd.irqs.iter_mut().filter(|i| i.label.parse::<u32>().is_ok()) {
        irq.effective = Some("0".into());
        irq.affinity = Some("0".into());
        stacked += 1;
    }
    for snap in [&good, &odd] {
        let req = Request::post(format!("/api/live/{}/snapshots", snap.host))
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(serde_json::to_vec(snap).unwrap()))
            .unwrap();
        assert_eq!(app.clone().oneshot(req).await.unwrap().status(), StatusCode::OK);
    }
    let (code, page, _) = call(&app, "/fleet?sort=stacking").await;
    assert_eq!(code, StatusCode::OK, "{page}");
    let (a, b) = (page.find(">a-good<").unwrap(), page.find(">b-odd<").unwrap());
    assert!(b < a, "sorted by stacking, the stacked host first");
    assert!(page.contains(&format!("<td class=\"num\">{stacked}</td>")));
    let (_, page, _) = call(&app, "/fleet?sort=host").await;
    assert!(page.find(">a-good<").unwrap() < page.find(">b-odd<").unwrap());

    // "Which hosts match the model": b-odd never; a-good exactly when its row says 0 differ.
    let good_matches = page.contains("<td>0 of ");
    assert!(page.contains("vectors differ"), "{page}");
    let (_, only, _) = call(&app, "/fleet?matching=1").await;
    assert!(!only.contains(">b-odd<"), "{only}");
    assert_eq!(only.contains(">a-good<"), good_matches);

    let (code, _, _) = call(&app, "/fleet?sort=nope").await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    let (code, _, _) = call(&app, "/fleet?variant=nope").await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
}
