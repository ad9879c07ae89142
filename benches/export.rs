//! `irqscope-agent export` on a synthetic 1,024-CPU × 4,096-IRQ host: the time to encode one
//! scrape and its bytes, beside the push path's JSON encoding of the same snapshot (the
//! reference, measured in the same run). Then the server's side of a Prometheus host: the
//! scrape's series rebuilt into a snapshot (what `serve --prometheus` does per scrape, without
//! the HTTP round trip), and `GET /live/HOST` of the host so rebuilt, beside the same page of
//! the host as pushed (the reference).

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use criterion::{criterion_group, criterion_main, Criterion};
use http_body_util::BodyExt;
use irqscope::live::auth::Tokens;
use irqscope::live::export::{encode, to_classic_text, ExportOptions};
use irqscope::live::protocol::{Snapshot, WireIrq, WireTopology, PROTOCOL_VERSION};
use irqscope::live::source::{parse_text, snapshot_from_series};
use irqscope::web::{self, live::LiveState, AppState};
use std::hint::black_box;
use std::sync::Arc;
use tower::ServiceExt;

const N_CPUS: u32 = 1024;
const N_IRQS: u32 = 4096;

/// Managed queues firing on one CPU each, one IRQ in 64 on every CPU (as benches/live.rs).
fn synthetic() -> Snapshot {
    let topo = irqscope::catalogue::get("synthetic-1024").expect("preset");
    let mut topology = WireTopology::from_topology(&topo);
    topology.kernel_release = "6.12.107+deb12-cloud-amd64".into();
    let irqs = (0..N_IRQS)
        .map(|i| {
            let cpu = i % N_CPUS;
            let counts = if i % 64 == 0 {
                (0..N_CPUS)
                    .map(|c| (c, u64::from(c) * 7919 + u64::from(i) + 1))
                    .collect()
            } else {
                vec![(cpu, u64::from(i) * 104_729 + 1)]
            };
            WireIrq {
                label: (24 + i).to_string(),
                chip: format!("IR-PCI-MSIX-0000:{:02x}:00.0", i / 64),
                hwirq: format!("{}-edge", i % 64),
                name: format!("nvme{}q{}", i / 64, i % 64),
                counts,
                affinity: Some(cpu.to_string()),
                effective: Some(cpu.to_string()),
                node: Some(cpu / 128),
            }
        })
        .collect();
    Snapshot {
        version: PROTOCOL_VERSION,
        host: "bench".into(),
        taken_unix_ms: 0,
        boot_id: String::new(),
        topology,
        cpus: (0..N_CPUS).collect(),
        irqs,
    }
}

fn bench(c: &mut Criterion) {
    let snap = Arc::new(synthetic());
    let opts = Arc::new(ExportOptions::default());
    let text = to_classic_text(&encode(snap.clone(), opts.clone()));
    let series = text.lines().filter(|l| !l.starts_with('#')).count();
    let json = serde_json::to_vec(&*snap).unwrap();
    eprintln!(
        "export: {series} series, {:.1} MB of text; push JSON of the same snapshot: {:.1} MB",
        text.len() as f64 / 1e6,
        json.len() as f64 / 1e6
    );
    let mut g = c.benchmark_group("export_1024x4096");
    g.sample_size(10);
    g.bench_function("encode_scrape", |b| {
        b.iter(|| to_classic_text(&encode(black_box(snap.clone()), opts.clone())))
    });
    g.bench_function("reference_push_json", |b| {
        b.iter(|| serde_json::to_vec(black_box(&*snap)).unwrap())
    });
    g.bench_function("rebuild_from_series", |b| {
        b.iter(|| {
            let hosts = parse_text(black_box(&text)).unwrap();
            snapshot_from_series("bench", 0, &hosts["bench"]).unwrap()
        })
    });
    g.finish();

    // Two readings of each host (so the page has rates): "prom", rebuilt from its series,
    // and "bench", the pushed snapshot itself.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let token = "bench-token-0123456789abcdef";
    let (live, _) = LiveState::new(Tokens::parse(token).unwrap(), None).unwrap();
    let app = web::app(AppState {
        live,
        ..Default::default()
    });
    let later = |s: &Snapshot| {
        let mut s = s.clone();
        s.taken_unix_ms += 1_000;
        for irq in &mut s.irqs {
            for c in &mut irq.counts {
                c.1 += 1_000;
            }
        }
        s
    };
    let rebuilt = |s: &Snapshot| {
        let text = to_classic_text(&encode(Arc::new(s.clone()), opts.clone()));
        let mut back = snapshot_from_series("bench", s.taken_unix_ms, &parse_text(&text).unwrap()["bench"]).unwrap();
        back.host = "prom".into();
        back
    };
    let pushed = [(*snap).clone(), later(&snap)];
    let from_prom = [rebuilt(&pushed[0]), rebuilt(&pushed[1])];
    rt.block_on(async {
        for pair in [[&pushed[0], &from_prom[0]], [&pushed[1], &from_prom[1]]] {
            for s in pair {
                let req = Request::post(format!("/api/live/{}/snapshots", s.host))
                    .header(header::AUTHORIZATION, format!("Bearer {token}"))
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(Body::from(serde_json::to_vec(s).unwrap()))
                    .unwrap();
                assert_eq!(app.clone().oneshot(req).await.unwrap().status(), StatusCode::OK);
            }
            tokio::time::sleep(std::time::Duration::from_millis(150)).await;
        }
    });
    let page = |host: &'static str| {
        let app = app.clone();
        let rt = &rt;
        move || {
            rt.block_on(async {
                let req = Request::get(format!("/live/{host}")).body(Body::empty()).unwrap();
                let resp = app.clone().oneshot(req).await.unwrap();
                assert_eq!(resp.status(), StatusCode::OK);
                resp.into_body().collect().await.unwrap().to_bytes().len()
            })
        }
    };
    let mut g = c.benchmark_group("live_page_1024x4096");
    g.sample_size(10);
    let prom_page = page("prom");
    g.bench_function("prometheus_host", |b| b.iter(&prom_page));
    let push_page = page("bench");
    g.bench_function("reference_pushed_host", |b| b.iter(&push_page));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
