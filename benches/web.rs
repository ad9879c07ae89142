//! Requests per second through `web::app().oneshot`: the scenario page for the seed machine
//! (azure-l96as-v4, six NVMe devices of 62 queues) against a static file of the same size, so
//! the cost of simulating and rendering stands beside the cost of the HTTP stack alone.

use axum::body::Body;
use axum::http::Request;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use http_body_util::BodyExt;
use irqscope::scenario::permalink;
use irqscope::scenario::spec::{DeviceSpec, ScenarioSpec, TopologyRef};
use irqscope::web::{self, AppState};
use tower::ServiceExt;

fn spec() -> ScenarioSpec {
    ScenarioSpec {
        topology: TopologyRef::Preset("azure-l96as-v4".into()),
        devices: vec![DeviceSpec {
            pre: 1,
            name: Some("nvme".into()),
            ..DeviceSpec::new(6, 62)
        }],
        variant: "cluster".into(),
        sort: "heap-v6.11".into(),
        effective: "x86-matrix".into(),
        spread_counter: 0,
        proposal: None,
        irqaffinity: None,
        isolcpus: None,
        nohz_full: None,
        vectors_held: None,
    }
}

async fn fetch(state: &AppState, uri: &str) -> usize {
    let resp = web::app(state.clone())
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{uri}: {}", resp.status());
    resp.into_body().collect().await.unwrap().to_bytes().len()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = std::env::temp_dir().join(format!("irqscope-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page_uri = format!("/s/{}", permalink::encode(&spec()).unwrap());
    let state = AppState {
        static_dir: dir.clone(),
        ..AppState::default()
    };
    let page_bytes = rt.block_on(fetch(&state, &page_uri));
    std::fs::write(dir.join("same-size.html"), "x".repeat(page_bytes)).unwrap();

    let mut g = c.benchmark_group("web");
    g.throughput(Throughput::Elements(1));
    g.bench_function("scenario_page_l96as_v4_6x62", |b| {
        b.iter(|| rt.block_on(fetch(&state, &page_uri)))
    });
    g.bench_function("static_file_same_size", |b| {
        b.iter(|| rt.block_on(fetch(&state, "/static/same-size.html")))
    });
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
