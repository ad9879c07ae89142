//! Requests per second through `web::app().oneshot`, for the seed machine's scenario page
//! (azure-l96as-v4, six NVMe devices of 62 queues): rendered from scratch (a fresh router, so an
//! empty permalink cache), repeated (served from the cache, gzip), against an embedded static
//! file (gzip), so the cost of simulating and rendering stands beside the HTTP stack alone.

use axum::body::Body;
use axum::http::{header, Request};
use axum::Router;
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

async fn fetch(app: Router, uri: &str, gzip: bool) -> usize {
    let mut req = Request::get(uri);
    if gzip {
        req = req.header(header::ACCEPT_ENCODING, "gzip");
    }
    let resp = app.oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
    assert!(resp.status().is_success(), "{uri}: {}", resp.status());
    resp.into_body().collect().await.unwrap().to_bytes().len()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let page_uri = format!("/s/{}", permalink::encode(&spec()).unwrap());
    let shared = web::app(AppState::default());

    let mut g = c.benchmark_group("web");
    g.throughput(Throughput::Elements(1));
    g.bench_function("scenario_page_l96as_v4_6x62_first_render", |b| {
        b.iter(|| rt.block_on(fetch(web::app(AppState::default()), &page_uri, false)))
    });
    g.bench_function("scenario_page_l96as_v4_6x62_first_render_gzip", |b| {
        b.iter(|| rt.block_on(fetch(web::app(AppState::default()), &page_uri, true)))
    });
    g.bench_function("scenario_page_l96as_v4_6x62_repeated_gzip", |b| {
        b.iter(|| rt.block_on(fetch(shared.clone(), &page_uri, true)))
    });
    g.bench_function("static_app_js_gzip", |b| {
        b.iter(|| rt.block_on(fetch(shared.clone(), "/static/app.js", true)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
