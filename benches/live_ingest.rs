//! Live ingest latency with 100 SSE viewers attached: a real server on loopback, 4 hosts of 96
//! CPUs and 192 device IRQs each, 25 viewers reading each host's event stream, and snapshots
//! pushed round-robin over the hosts (each host no faster than the agent's minimum interval,
//! stamped with the real clock). Criterion reports the mean push round trip; the bench prints
//! p50 / p99 / max over every push it timed.
//!
//! `cargo bench --bench live_ingest`

use axum::body::Body;
use criterion::{criterion_group, criterion_main, Criterion};
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use irqscope::live::auth::Tokens;
use irqscope::live::limits::AGENT_INTERVAL_MS_MIN;
use irqscope::live::protocol::{Snapshot, WireIrq, WireTopology, PROTOCOL_VERSION};
use irqscope::web::{self, live::LiveState, AppState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const TOKEN: &str = "bench-token-0123456789abcdef";
const HOSTS: usize = 4;
const VIEWERS: usize = 100;
const CPUS: u32 = 96;
const IRQS: u32 = 192;
/// Slack above the agent's minimum interval between two pushes of one host.
const PACE_SLACK_MS: u64 = 10;

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

/// Reading `round` of `host`: every device IRQ fired `round * (irq + 1)` times on its CPU.
fn snapshot(host: &str, round: u64) -> Vec<u8> {
    let irqs = (0..IRQS)
        .map(|i| WireIrq {
            label: (24 + i).to_string(),
            chip: "IR-PCI-MSIX-0000:01:00.0".into(),
            hwirq: format!("{i}-edge"),
            name: format!("nvme{}q{}", i / 48, i % 48 + 1),
            counts: vec![(i % CPUS, round * u64::from(i + 1) + 1)],
            affinity: Some((i % CPUS).to_string()),
            effective: Some((i % CPUS).to_string()),
            node: None,
        })
        .collect();
    let snap = Snapshot {
        version: PROTOCOL_VERSION,
        host: host.into(),
        taken_unix_ms: now_ms(),
        boot_id: "bench".into(),
        topology: WireTopology {
            nodes: vec![format!("0-{}", CPUS / 2 - 1), format!("{}-{}", CPUS / 2, CPUS - 1)],
            ..Default::default()
        },
        cpus: (0..CPUS).collect(),
        irqs,
    };
    serde_json::to_vec(&snap).unwrap()
}

struct Rig {
    base: String,
    client: Client<hyper_util::client::legacy::connect::HttpConnector, Body>,
    last_push: Vec<Option<Instant>>,
    round: u64,
    next_host: usize,
    events: Arc<AtomicU64>,
}

impl Rig {
    async fn start() -> Rig {
        let (live, _) = LiveState::new(Tokens::parse(TOKEN).unwrap(), None).unwrap();
        let app = web::app(AppState {
            live,
            ..Default::default()
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let client = Client::builder(TokioExecutor::new()).build_http();
        let mut rig = Rig {
            base,
            client,
            last_push: vec![None; HOSTS],
            round: 0,
            next_host: 0,
            events: Arc::new(AtomicU64::new(0)),
        };
        // Every host exists before the viewers attach.
        for _ in 0..HOSTS {
            rig.push().await;
        }
        for v in 0..VIEWERS {
            let url = format!("{}/live/bench{}/events", rig.base, v % HOSTS);
            let resp = rig.client.get(url.parse().unwrap()).await.unwrap();
            assert_eq!(resp.status(), 200);
            let events = rig.events.clone();
            tokio::spawn(async move {
                let mut body = resp.into_body();
                while let Some(Ok(frame)) = body.frame().await {
                    if let Ok(data) = frame.into_data() {
                        let n = data.windows(2).filter(|w| w == b"\n\n").count();
                        events.fetch_add(n as u64, Ordering::Relaxed);
                    }
                }
            });
        }
        rig
    }

    /// One paced push; returns its round trip (the pacing wait is not counted).
    async fn push(&mut self) -> Duration {
        let h = self.next_host;
        self.next_host = (h + 1) % HOSTS;
        if h == 0 {
            self.round += 1;
        }
        let pace = Duration::from_millis(AGENT_INTERVAL_MS_MIN + PACE_SLACK_MS);
        if let Some(last) = self.last_push[h] {
            let since = last.elapsed();
            if since < pace {
                tokio::time::sleep(pace - since).await;
            }
        }
        let body = snapshot(&format!("bench{h}"), self.round);
        let req = axum::http::Request::post(format!("{}/api/live/bench{h}/snapshots", self.base))
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {TOKEN}"))
            .body(Body::from(body))
            .unwrap();
        self.last_push[h] = Some(Instant::now());
        let started = Instant::now();
        let resp = self.client.request(req).await.unwrap();
        let status = resp.status();
        let _ = resp.into_body().collect().await.unwrap();
        let took = started.elapsed();
        assert_eq!(status, 200, "push refused");
        took
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let rig = Arc::new(tokio::sync::Mutex::new(rt.block_on(Rig::start())));
    let all = Arc::new(Mutex::new(Vec::<Duration>::new()));
    let mut g = c.benchmark_group("live_ingest");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g.bench_function("push_with_100_sse_viewers", |b| {
        b.iter_custom(|iters| {
            let rig = rig.clone();
            let all = all.clone();
            rt.block_on(async move {
                let mut rig = rig.lock().await;
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let d = rig.push().await;
                    all.lock().unwrap().push(d);
                    total += d;
                }
                total
            })
        })
    });
    g.finish();
    let mut lat = all.lock().unwrap().clone();
    lat.sort();
    let events = rt.block_on(async { rig.lock().await.events.load(Ordering::Relaxed) });
    eprintln!(
        "live_ingest: {} pushes, {VIEWERS} viewers ({events} events read): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        lat.len(),
        percentile(&lat, 0.50).as_secs_f64() * 1e3,
        percentile(&lat, 0.99).as_secs_f64() * 1e3,
        lat.last().unwrap().as_secs_f64() * 1e3,
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
