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
use irqscope::live::prometheus::{poll_once, run, PollState, PromClient, PromStatus};
use irqscope::web::{self, live::LiveState, AppState};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower::ServiceExt;

use crate::common::fs::{copy_dir, Scratch};
use crate::common::process::{find_program, free_port, KillOnDrop};

const TOKEN: &str = "fleet-test-token-0123456789abcdef";
const HOST: &str = "vm1";
/// Longest the API may take to answer while Prometheus is in trouble.
const ANSWER_BOUND: Duration = Duration::from_secs(2);

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/live/x86-nvme-vm")
}

fn temp_dir(tag: &str) -> Scratch {
    Scratch::new(&format!("fleet-{tag}"))
}

/// The rate the counters of the `k`-th numbered IRQ row move at, on each CPU it fired on.
fn row_rate(k: usize) -> f64 {
    100.0 * (k as f64 + 1.0)
}

/// Move the counters of `root` steadily until `stop`: every non-zero counter of the `k`-th
/// numbered IRQ row is its fixture value plus `row_rate(k)` × the seconds since the start,
/// rewritten every 20 ms (atomically: a rename). Any two readings see these slopes.
fn advance_steadily(root: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    let path = root.join("proc/interrupts");
    let base = parse_interrupts(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::thread::spawn(move || {
        let t0 = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            let secs = t0.elapsed().as_secs_f64();
            let mut p = base.clone();
            for (k, r) in p.rows.iter_mut().filter(|r| r.irq().is_some()).enumerate() {
                for c in r.counts.iter_mut().filter(|c| c.1 > 0) {
                    c.1 += (row_rate(k) * secs) as u64;
                }
            }
            let tmp = root.join("proc/interrupts.new");
            std::fs::write(&tmp, format_interrupts(&p)).unwrap();
            std::fs::rename(tmp, &path).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
    })
}

/// The per-CPU device-interrupt rates the steady counters of `root`'s fixture have.
fn expected_per_cpu(root: &Path) -> Vec<(String, f64)> {
    let base = parse_interrupts(&std::fs::read_to_string(root.join("proc/interrupts")).unwrap()).unwrap();
    let mut per_cpu = std::collections::BTreeMap::<u32, f64>::new();
    for (k, r) in base.rows.iter().filter(|r| r.irq().is_some()).enumerate() {
        for c in r.counts.iter().filter(|c| c.1 > 0) {
            *per_cpu.entry(c.0).or_default() += row_rate(k);
        }
    }
    let mut v: Vec<(String, f64)> = per_cpu.into_iter().map(|(c, r)| (c.to_string(), r)).collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
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
    web::app(AppState {
        live: live.clone(),
        ..Default::default()
    })
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

/// Whether `got` is `want` within `tol` (relative), or both near 0.
fn close(got: f64, want: f64, tol: f64) -> bool {
    (got - want).abs() <= tol * want.abs().max(1.0)
}

/// Relative error allowed between two readings of the steady counters: each reading may see
/// counters up to one 20 ms rewrite old at either end of its interval (the push path's 2 s,
/// Prometheus' window of 4 scrapes), and Prometheus stamps a scrape when it starts.
const RATE_TOLERANCE: f64 = 0.08;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_hosts_match_the_push_path() {
    let Some(prometheus) = find_program(&["prometheus"]) else {
        panic!("prometheus not installed (apt-get install prometheus)");
    };
    let dir = temp_dir("e2e");
    let root = dir.join("root");
    copy_dir(&fixture(), &root);
    let expected = expected_per_cpu(&root);
    assert!(expected.iter().filter(|c| c.1 > 0.0).count() > 1);
    let stop = Arc::new(AtomicBool::new(false));
    let mover = advance_steadily(root.clone(), stop.clone());
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
    let base = format!("http://127.0.0.1:{prom_port}");
    let client = PromClient::new(&base, None).unwrap();
    let status = Arc::new(PromStatus::new(client.base()));
    let live = live.with_prometheus(status.clone());
    // The scrape interval is not given: it comes from Prometheus' targets (1 s, so the rate
    // window is 4 s; without it the window would be 4 × the 15 s default).
    let poller = tokio::spawn(run(client, live.hub().clone(), status.clone(), 250, None));
    let app = app_of(&live);

    // The host appears once Prometheus has scraped it, then has rates once the window holds
    // scrapes; read it when the window holds only steady counters (a few scrapes on).
    let t0 = Instant::now();
    let prom_json = loop {
        let (code, body, _) = call(&app, "/api/live/vm1").await;
        if code == StatusCode::OK {
            let j: serde_json::Value = serde_json::from_str(&body).unwrap();
            if j["interval_ms"].as_u64().is_some() && j["seq"].as_u64().unwrap() >= 7 {
                break j;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no rates from Prometheus: {code} {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(status.hosts(), [HOST]);
    // The rates are Prometheus' rate() over 4 scrapes, not deltas between two scrapes.
    assert_eq!(prom_json["interval_ms"].as_u64(), Some(4_000), "{prom_json}");
    let (code, page, _) = call(&app, "/live").await;
    assert_eq!(code, StatusCode::OK);
    assert!(page.contains(">vm1<") && !page.contains("live-problem"), "{page}");

    // The push path given the same counters: two readings 2 s apart.
    let (push, _) = LiveState::new(Tokens::parse(TOKEN).unwrap(), None).unwrap();
    let push_app = app_of(&push);
    let t_push = Instant::now();
    for k in 0..2 {
        if k == 1 {
            tokio::time::sleep(Duration::from_millis(2_000)).await;
        }
        let at = t_push.elapsed().as_millis() as u64 + 1;
        let snap = Collector::new(&root, HOST).read(at).unwrap();
        let req = Request::post("/api/live/vm1/snapshots")
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(serde_json::to_vec(&snap).unwrap()))
            .unwrap();
        let resp = push_app.clone().oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
    }
    let (_, body, _) = call(&push_app, "/api/live/vm1").await;
    let push_json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let (p, q) = (per_cpu(&prom_json), per_cpu(&push_json));
    assert_eq!(p.len(), q.len());
    assert!(p.iter().filter(|c| c.1 > 0.0).count() > 1);
    let want = |cpu: &str| expected.iter().find(|e| e.0 == cpu).map_or(0.0, |e| e.1);
    for ((c1, r1), (c2, r2)) in p.iter().zip(&q) {
        assert_eq!(c1, c2);
        assert!(
            close(*r1, *r2, RATE_TOLERANCE),
            "CPU {c1}: Prometheus {r1} vs push {r2}"
        );
        assert!(
            close(*r1, want(c1), RATE_TOLERANCE),
            "CPU {c1}: Prometheus {r1} vs {}",
            want(c1)
        );
        assert!(
            close(*r2, want(c2), RATE_TOLERANCE),
            "CPU {c2}: push {r2} vs {}",
            want(c2)
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

    // A server started afresh (or a host first seen) has the host's history from query_range
    // at its first poll: one point per scrape, the device-interrupt total and busiest CPU.
    let fresh = LiveState::default();
    let client = PromClient::new(&base, None).unwrap();
    let st2 = Arc::new(PromStatus::new(client.base()));
    let fresh = fresh.with_prometheus(st2.clone());
    assert_eq!(
        poll_once(&client, fresh.hub(), &st2, &mut PollState::new(Some(1_000)))
            .await
            .unwrap(),
        1
    );
    let (code, body, _) = call(&app_of(&fresh), "/api/live/vm1").await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let j: serde_json::Value = serde_json::from_str(&body).unwrap();
    let history = j["history"].as_array().unwrap();
    let seq = j["seq"].as_u64().unwrap();
    assert!(history.len() >= 5, "{j}");
    assert_eq!(
        history.len() as u64,
        seq,
        "one sample per reading, the current one last"
    );
    let total: f64 = expected.iter().map(|e| e.1).sum();
    let (busiest_cpu, busiest) = expected
        .iter()
        .fold(("", 0.0), |b, e| if e.1 > b.1 { (&e.0, e.1) } else { b });
    // Points whose window holds only steady counters (after the first few) carry the slope.
    for s in &history[history.len() - 3..] {
        assert!(
            close(s["irqs_per_s"].as_f64().unwrap(), total, RATE_TOLERANCE),
            "history {s} vs {total}"
        );
        assert!(
            close(s["busiest_irqs_per_s"].as_f64().unwrap(), busiest, RATE_TOLERANCE),
            "{s}"
        );
        // Rows with equal rates could tie; the fixture's busiest CPU is alone at the top.
        assert_eq!(
            s["busiest_cpu"].as_u64().map(|c| c.to_string()).as_deref(),
            Some(busiest_cpu),
            "{s}"
        );
    }
    let times: Vec<u64> = history.iter().map(|s| s["taken_unix_ms"].as_u64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    let (code, page, _) = call(&app_of(&fresh), "/live/vm1").await;
    assert_eq!(code, StatusCode::OK);
    assert!(
        page.contains(&format!("data-last-seq=\"{seq}\"")),
        "the chart shows the history"
    );

    poller.abort();
    stop.store(true, Ordering::Relaxed);
    mover.join().unwrap();
    drop(_prom);
    drop(_agent);
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
    let client = PromClient::new(&format!("http://127.0.0.1:{port}"), None)
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
    let (code, body, _) = call(&app, "/live").await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert!(
        body.contains("id=\"live-problem\"") && body.contains("has not answered yet"),
        "{body}"
    );

    let t0 = Instant::now();
    let e = poll_once(&client, live.hub(), &status, &mut PollState::new(None))
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
    // The host list still lists the pushed host, under the same message.
    let (code, body, took) = call(&app, "/live").await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert!(body.contains(">pushed<"), "{body}");
    let banner = body
        .split("<p class=\"error\" id=\"live-problem\">")
        .nth(1)
        .and_then(|b| b.split("</p>").next())
        .unwrap_or_else(|| panic!("no banner on /live: {body}"));
    assert!(banner.contains(expect), "{banner}");
    assert!(took < ANSWER_BOUND);
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

/// A Prometheus API over TLS on loopback, with a certificate for `localhost` signed by a CA
/// made here: it knows no host (`timestamp(irqscope_agent_info)` is empty). The port and the
/// CA's PEM.
async fn tls_prometheus() -> (u16, String) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let api = axum::Router::new().route(
        "/api/v1/query",
        axum::routing::get(|| async {
            axum::Json(serde_json::json!({"status": "success", "data": {"resultType": "vector", "result": []}}))
        }),
    );
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let (acceptor, api) = (acceptor.clone(), api.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    api.clone().oneshot(req.map(Body::new))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (port, ca.pem())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_prometheus_with_a_private_ca() {
    let (port, ca_pem) = tls_prometheus().await;
    let dir = temp_dir("tls");
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, &ca_pem).unwrap();
    let url = format!("https://localhost:{port}");
    let live = LiveState::default();

    // Trusting the CA: the poll succeeds (no host) and the pages have nothing to report.
    let client = PromClient::new(&url, Some(&ca_file)).unwrap();
    let status = Arc::new(PromStatus::new(client.base()));
    let live = live.with_prometheus(status.clone());
    assert_eq!(
        poll_once(&client, live.hub(), &status, &mut PollState::new(None))
            .await
            .unwrap(),
        0
    );
    assert_eq!(status.problem(), None);

    // Without it the certificate is refused, and that is the message the pages show.
    let untrusted = PromClient::new(&url, None).unwrap();
    let e = poll_once(&untrusted, live.hub(), &status, &mut PollState::new(None))
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("certificate") || e.to_string().contains("Unknown"),
        "{e}"
    );
    let (code, body, _) = call(&app_of(&live), "/live").await;
    assert_eq!(code, StatusCode::OK);
    assert!(body.contains("id=\"live-problem\""), "{body}");

    // Bad set-ups are refused when the client is made, with a message naming the flag.
    std::fs::write(dir.join("empty.pem"), "nothing\n").unwrap();
    let err = |r: Result<PromClient, String>| r.err().unwrap_or_default();
    assert!(err(PromClient::new(&url, Some(&dir.join("empty.pem")))).contains("no PEM CERTIFICATE"));
    assert!(err(PromClient::new(&format!("http://localhost:{port}"), Some(&ca_file))).contains("needs an https://"));
    assert!(err(PromClient::new(&url, Some(&dir.join("missing.pem")))).contains("--prometheus-ca-file"));
    assert!(err(PromClient::new("ftp://localhost", None)).contains("http:// or https://"));
}
