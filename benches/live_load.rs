//! Live mode under load with persistence: the real `irqscope serve` binary on loopback with
//! `--live-store` (a temporary redb file) and a tokens file, 200 simulated agents pushing
//! gzip snapshots of the `tests/data/live/x86-nvme-vm` fixture at 1 Hz (each its own host name,
//! token and keep-alive connection, start times spread over the first second) and 100 SSE
//! viewers on `/live/HOST/events` (100 distinct hosts). The run lasts `LOAD_SECS` (60 s) and
//! stops by itself; it prints the push round-trip p50 / p99 / max (request sent to response
//! read), the SSE lag p50 / p99 / max (push sent to the viewer reading the event with that
//! push's `seq`), and the server's RSS (sampled every second, and its peak from `VmHWM`).
//!
//! The server caps SSE streams at 16 per client address: the viewers connect from distinct
//! loopback source addresses (127.0.0.2, 127.0.0.3, …; all of 127.0.0.0/8 is loopback on
//! Linux), 15 per address, so the server's caps stay as shipped.
//!
//! `cargo bench --bench live_load` (a release build; `LOAD_SECS=10` for a shorter run).

use axum::body::Body;
use http_body_util::BodyExt;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use irqscope::live::collect::Collector;
use irqscope::live::protocol::{encode_push_body, Snapshot};
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const AGENTS: usize = 200;
const VIEWERS: usize = 100;
/// Streams per viewer source address, below the server's per-client cap (16).
const VIEWERS_PER_ADDRESS: usize = 15;
const INTERVAL: Duration = Duration::from_secs(1);
/// Pushes and events of the first seconds (connections opening, hosts created) are not counted.
const WARM_UP: Duration = Duration::from_secs(3);

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

fn token(i: usize) -> String {
    format!("load-bench-token-{i:04}-0123456789")
}

fn host(i: usize) -> String {
    format!("load{i:03}")
}

/// `(host index, seq, instant)` records: pushes sent and events read.
type Log = Arc<Mutex<Vec<(usize, u64, Instant)>>>;
/// Pushes not acknowledged, by reason (the status, or the client's error).
type Refusals = Arc<Mutex<std::collections::BTreeMap<String, u64>>>;

/// One agent: a reading of the fixture every second, counters advanced by the round.
#[allow(clippy::too_many_arguments)]
async fn agent(
    i: usize,
    base: Arc<str>,
    fixture: Arc<Snapshot>,
    start: Instant,
    end: Instant,
    sent: Log,
    rtt: Log,
    refusals: Refusals,
) {
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    let client: Client<HttpConnector, Body> = Client::builder(TokioExecutor::new()).build(http);
    let url = format!("{base}/api/live/{}/snapshots", host(i));
    let auth = format!("Bearer {}", token(i));
    let (mut json, mut body) = (Vec::new(), Vec::new());
    let refuse = |why: String| *refusals.lock().unwrap().entry(why).or_insert(0) += 1;
    for round in 0u64.. {
        let at = start + INTERVAL * round as u32 + Duration::from_micros(i as u64 * 1_000_000 / AGENTS as u64);
        if at >= end {
            break;
        }
        tokio::time::sleep_until(at.into()).await;
        let mut snap = (*fixture).clone();
        snap.host = host(i);
        snap.taken_unix_ms = now_ms();
        for (k, irq) in snap.irqs.iter_mut().enumerate() {
            for c in &mut irq.counts {
                c.1 += round * (k as u64 + 1);
            }
        }
        encode_push_body(&snap, &mut json, &mut body).unwrap();
        let req = axum::http::Request::post(&url)
            .header("content-type", "application/json")
            .header("content-encoding", "gzip")
            .header("authorization", &auth)
            .body(Body::from(body.clone()))
            .unwrap();
        let t = Instant::now();
        let resp = match client.request(req).await {
            Ok(r) => r,
            Err(e) => {
                refuse(format!("client: {e}"));
                continue;
            }
        };
        let status = resp.status();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let done = Instant::now();
        let seq = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| v["seq"].as_u64());
        match (status.is_success(), seq) {
            (true, Some(seq)) => {
                sent.lock().unwrap().push((i, seq, t));
                rtt.lock().unwrap().push((i, (done - t).as_micros() as u64, t));
            }
            _ => refuse(format!("HTTP {status}")),
        }
    }
}

/// One viewer of host `h`, connected from `source`: every event's `id:` and when it was read.
async fn viewer(h: usize, source: IpAddr, base: Arc<str>, end: Instant, seen: Log) {
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    http.set_local_address(Some(source));
    let client: Client<HttpConnector, Body> = Client::builder(TokioExecutor::new()).build(http);
    let url = format!("{base}/live/{}/events", host(h));
    let resp = match client.get(url.parse().unwrap()).await {
        Ok(r) if r.status() == 200 => r,
        Ok(r) => return eprintln!("viewer of {}: HTTP {}", host(h), r.status()),
        Err(e) => return eprintln!("viewer of {}: {e}", host(h)),
    };
    let mut body = resp.into_body();
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let frame = match tokio::time::timeout_at(end.into(), body.frame()).await {
            Ok(Some(Ok(f))) => f,
            _ => break,
        };
        let Ok(data) = frame.into_data() else { continue };
        let now = Instant::now();
        buf.extend_from_slice(&data);
        while let Some(at) = buf.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = buf.drain(..at + 2).collect();
            let seq = event
                .split(|&b| b == b'\n')
                .find_map(|l| l.strip_prefix(b"id:"))
                .and_then(|v| std::str::from_utf8(v).ok()?.trim().parse::<u64>().ok());
            if let Some(seq) = seq {
                seen.lock().unwrap().push((h, seq, now));
            }
        }
    }
}

fn rss_kb(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn ms_percentiles(mut us: Vec<u64>) -> String {
    if us.is_empty() {
        return "none".into();
    }
    us.sort_unstable();
    let p = |q: f64| us[((us.len() - 1) as f64 * q).round() as usize] as f64 / 1e3;
    format!(
        "{} samples: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        us.len(),
        p(0.5),
        p(0.99),
        *us.last().unwrap() as f64 / 1e3
    )
}

fn main() {
    // `cargo bench` passes `--bench`. `cargo test --all-targets` runs bench targets without it:
    // a 60-second load is no test, so say how to run it and stop.
    if !std::env::args().any(|a| a == "--bench") {
        println!("live_load: a load measurement, not a test; run `cargo bench --bench live_load`");
        return;
    }
    let secs: u64 = std::env::var("LOAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/live-load-bench");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let tokens: String = (0..AGENTS).map(|i| format!("{}={}\n", host(i), token(i))).collect();
    std::fs::write(dir.join("tokens"), tokens).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/live/x86-nvme-vm");
    let fixture = Arc::new(Collector::new(&fixture, "load").read(now_ms()).expect("fixture"));

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_irqscope"))
        .args(["serve", "--addr", &format!("127.0.0.1:{port}"), "--live-tokens"])
        .arg(dir.join("tokens"))
        .arg("--live-store")
        .arg(dir.join("live.redb"))
        .env("RUST_LOG", "warn")
        .spawn()
        .expect("starting irqscope serve");
    let pid = server.id();
    let up = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(up.elapsed() < Duration::from_secs(10), "server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let base: Arc<str> = format!("http://127.0.0.1:{port}").into();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (sent, seen, rtt): (Log, Log, Log) = Default::default();
    let refusals = Refusals::default();
    let start = Instant::now() + Duration::from_millis(200);
    let end = start + Duration::from_secs(secs);
    let mut rss = Vec::new();
    rt.block_on(async {
        let mut tasks = Vec::new();
        for i in 0..AGENTS {
            tasks.push(tokio::spawn(agent(
                i,
                base.clone(),
                fixture.clone(),
                start,
                end,
                sent.clone(),
                rtt.clone(),
                refusals.clone(),
            )));
        }
        // Viewers attach once every host has pushed once.
        tokio::time::sleep_until((start + INTERVAL + Duration::from_millis(500)).into()).await;
        for v in 0..VIEWERS {
            let source = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2 + (v / VIEWERS_PER_ADDRESS) as u8));
            let h = v * AGENTS / VIEWERS;
            tasks.push(tokio::spawn(viewer(h, source, base.clone(), end, seen.clone())));
        }
        while Instant::now() < end {
            tokio::time::sleep(Duration::from_secs(1)).await;
            rss.extend(rss_kb(pid, "VmRSS:"));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
    let hwm = rss_kb(pid, "VmHWM:");
    let _ = server.kill();
    let _ = server.wait();

    let counted = start + WARM_UP;
    let rtt: Vec<u64> = rtt
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.2 >= counted)
        .map(|r| r.1)
        .collect();
    let sent: std::collections::HashMap<(usize, u64), Instant> =
        sent.lock().unwrap().iter().map(|&(h, s, t)| ((h, s), t)).collect();
    let seen = seen.lock().unwrap();
    let mut lag = Vec::new();
    let mut unmatched = 0usize;
    for &(h, s, got) in seen.iter() {
        match sent.get(&(h, s)) {
            Some(&t) if t >= counted => lag.push(got.saturating_duration_since(t).as_micros() as u64),
            Some(_) => {}
            None => unmatched += 1,
        }
    }
    eprintln!(
        "live_load: {AGENTS} agents at 1 Hz, {VIEWERS} SSE viewers, {secs} s, --live-store ({} pushes acknowledged)",
        sent.len()
    );
    for (why, n) in refusals.lock().unwrap().iter() {
        eprintln!("pushes not acknowledged: {n} × {why}");
    }
    eprintln!("push round trip: {}", ms_percentiles(rtt));
    eprintln!(
        "SSE lag (push sent to event read): {} ({unmatched} events of unacknowledged pushes or the first)",
        ms_percentiles(lag)
    );
    eprintln!(
        "server RSS: last {} MB, max sampled {} MB, peak (VmHWM) {} MB",
        rss.last().copied().unwrap_or(0) / 1024,
        rss.iter().max().copied().unwrap_or(0) / 1024,
        hwm.unwrap_or(0) / 1024
    );
    let _ = std::fs::remove_dir_all(&dir);
}
