//! Requests per second through `web::app().oneshot`, for the seed machine's scenario page
//! (azure-l96as-v4, six NVMe devices of 62 queues) and the 8,192-CPU × 16-device page: rendered
//! from scratch (a fresh router, so an empty permalink cache; plain, gzip, brotli), repeated
//! (served from the cache, gzip and brotli), against an embedded static file (gzip), so the
//! cost of simulating and rendering stands beside the HTTP stack alone. The `encode` group
//! times gzip and each brotli quality on both pages' bytes and prints their sizes, the
//! measurement behind `PERMALINK_BROTLI_QUALITY`.

use axum::body::Body;
use axum::http::{header, Request};
use axum::Router;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use http_body_util::BodyExt;
use irqscope::scenario::permalink;
use irqscope::scenario::spec::{DeviceSpec, ScenarioSpec, TopologyRef};
use irqscope::web::{self, AppState};
use tower::ServiceExt;

fn spec(preset: &str, devices: DeviceSpec) -> ScenarioSpec {
    ScenarioSpec::new(TopologyRef::Preset(preset.into()), vec![devices])
}

fn l96as_v4() -> ScenarioSpec {
    spec(
        "azure-l96as-v4",
        DeviceSpec {
            pre: 1,
            name: Some("nvme".into()),
            ..DeviceSpec::new(6, 62)
        },
    )
}

fn big() -> ScenarioSpec {
    spec("synthetic-8192", DeviceSpec::new(16, 64))
}

/// Fetches `uri` with `accept` as `Accept-Encoding` (none if empty); the body's bytes.
async fn fetch(app: Router, uri: &str, accept: &str) -> axum::body::Bytes {
    let mut req = Request::get(uri);
    if !accept.is_empty() {
        req = req.header(header::ACCEPT_ENCODING, accept);
    }
    let resp = app.oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
    assert!(resp.status().is_success(), "{uri}: {}", resp.status());
    resp.into_body().collect().await.unwrap().to_bytes()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

fn brotli(bytes: &[u8], quality: i32) -> Vec<u8> {
    let params = brotli::enc::BrotliEncoderParams {
        quality,
        lgwin: 22,
        size_hint: bytes.len(),
        mode: brotli::enc::backward_references::BrotliEncoderMode::BROTLI_MODE_TEXT,
        ..Default::default()
    };
    let mut out = Vec::new();
    brotli::BrotliCompress(&mut &bytes[..], &mut out, &params).unwrap();
    out
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let shared = web::app(AppState::default());

    let mut g = c.benchmark_group("web");
    g.throughput(Throughput::Elements(1));
    for (name, spec) in [("l96as_v4_6x62", l96as_v4()), ("8192_16x64", big())] {
        let uri = format!("/s/{}", permalink::encode(&spec).unwrap());
        let plain = rt.block_on(fetch(shared.clone(), &uri, ""));
        let gz = rt.block_on(fetch(shared.clone(), &uri, "gzip"));
        let br = rt.block_on(fetch(shared.clone(), &uri, "br"));
        eprintln!(
            "scenario page {name}: identity {} bytes, gzip {}, br {}",
            plain.len(),
            gz.len(),
            br.len()
        );
        for (what, accept) in [("", ""), ("_gzip", "gzip"), ("_br", "br")] {
            g.bench_function(format!("scenario_page_{name}_first_render{what}"), |b| {
                b.iter(|| rt.block_on(fetch(web::app(AppState::default()), &uri, accept)))
            });
        }
        for (what, accept) in [("gzip", "gzip"), ("br", "br")] {
            g.bench_function(format!("scenario_page_{name}_repeated_{what}"), |b| {
                b.iter(|| rt.block_on(fetch(shared.clone(), &uri, accept)))
            });
        }
    }
    g.bench_function("static_app_js_gzip", |b| {
        b.iter(|| rt.block_on(fetch(shared.clone(), "/static/app.js", "gzip")))
    });
    g.finish();

    // The encoders alone on the two pages' identity bytes.
    let mut g = c.benchmark_group("encode");
    for (name, spec) in [("l96as_v4_6x62", l96as_v4()), ("8192_16x64", big())] {
        let uri = format!("/s/{}", permalink::encode(&spec).unwrap());
        let page = rt.block_on(fetch(shared.clone(), &uri, ""));
        g.throughput(Throughput::Bytes(page.len() as u64));
        eprintln!(
            "encode {name}: identity {} bytes, gzip-6 {}",
            page.len(),
            gzip(&page).len()
        );
        g.bench_function(format!("{name}_gzip_6"), |b| b.iter(|| gzip(&page)));
        for quality in [1, 3, 4, 5, 6, 7, 9, 11] {
            eprintln!("encode {name}: br-{quality} {} bytes", brotli(&page, quality).len());
            g.bench_function(format!("{name}_br_{quality}"), |b| b.iter(|| brotli(&page, quality)));
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
