//! Permalinks and static files in every encoding over HTTP: `Accept-Encoding` by q-value,
//! one strong ETag per encoding and 304 for each, every encoded body decoding to the identity
//! body (from the first render and from the cache), errors never tagged or cached.

use axum::body::Body;
use axum::http::{header, HeaderMap, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use irqscope::scenario::permalink;
use irqscope::scenario::spec::{DeviceSpec, ScenarioSpec, TopologyRef};
use tower::ServiceExt;

fn spec() -> ScenarioSpec {
    ScenarioSpec::new(
        TopologyRef::Preset("azure-l96as-v4".into()),
        vec![DeviceSpec {
            pre: 1,
            name: Some("nvme".into()),
            ..DeviceSpec::new(6, 62)
        }],
    )
}

async fn send(app: &Router, uri: &str, headers: &[(header::HeaderName, &str)]) -> (StatusCode, HeaderMap, Vec<u8>) {
    let mut req = Request::get(uri).header(header::HOST, "irqscope.test");
    for (k, v) in headers {
        req = req.header(k, *v);
    }
    let resp = app.clone().oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
    let (parts, body) = resp.into_parts();
    (
        parts.status,
        parts.headers,
        body.collect().await.unwrap().to_bytes().to_vec(),
    )
}

fn decode(coding: Option<&str>, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match coding {
        None => out.extend_from_slice(body),
        Some("gzip") => {
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(body), &mut out).unwrap();
        }
        Some("br") => brotli::BrotliDecompress(&mut &body[..], &mut out).unwrap(),
        Some(other) => panic!("unexpected coding {other}"),
    }
    out
}

fn coding(h: &HeaderMap) -> Option<&str> {
    h.get(header::CONTENT_ENCODING).map(|v| v.to_str().unwrap())
}

/// Accept-Encoding values a client sends, and the coding each must get.
const CASES: [(&str, Option<&str>); 9] = [
    ("gzip, deflate, br, zstd", Some("br")),
    ("br;q=1.0, gzip;q=0.5", Some("br")),
    ("gzip, br;q=0", Some("gzip")),
    ("br;q=0.4, gzip;q=0.6", Some("gzip")),
    ("gzip, br", Some("br")),
    ("deflate", None),
    ("br;q=0, gzip;q=0", None),
    ("*", Some("br")),
    ("", None),
];

#[tokio::test]
async fn permalinks_negotiate_and_tag_each_encoding() {
    let link = permalink::encode(&spec()).unwrap();
    for uri in [
        format!("/s/{link}"),
        format!("/s/{link}/json"),
        format!("/s/{link}/text"),
    ] {
        // The identity body from a router of its own: what every encoding must decode to.
        let (status, h, plain) = send(&irqscope::web::app(Default::default()), &uri, &[]).await;
        assert_eq!(status, StatusCode::OK, "{uri}");
        assert!(coding(&h).is_none());
        // Each case twice on one fresh router per case: the first render and the cached answer.
        let mut tags: Vec<(Option<&str>, String)> = Vec::new();
        for (accept, want) in CASES {
            let app = irqscope::web::app(Default::default());
            let mut first: Option<HeaderMap> = None;
            for round in ["first render", "cached"] {
                let (status, h, body) = send(&app, &uri, &[(header::ACCEPT_ENCODING, accept)]).await;
                assert_eq!(status, StatusCode::OK, "{uri} {accept:?} {round}");
                // The cached answer (made by the outermost layer) has the first one's whole
                // head, the other layers' headers among them.
                assert!(h.contains_key(header::CONTENT_SECURITY_POLICY), "{uri} {round}: {h:?}");
                assert_eq!(h[header::X_CONTENT_TYPE_OPTIONS], "nosniff", "{uri} {round}");
                match &first {
                    None => first = Some(h.clone()),
                    Some(f) => assert_eq!(&h, f, "{uri} {accept:?}: the cached head differs"),
                }
                assert_eq!(coding(&h), want, "{uri} {accept:?} {round}");
                assert_eq!(h[header::VARY], "accept-encoding");
                assert_eq!(decode(want, &body), plain, "{uri} {accept:?} {round}: body differs");
                if want.is_some() {
                    assert!(
                        body.len() * 2 < plain.len(),
                        "{uri} {accept:?}: {} of {}",
                        body.len(),
                        plain.len()
                    );
                }
                let etag = h[header::ETAG].to_str().unwrap().to_string();
                assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
                let suffix = etag.trim_matches('"').rsplit_once('-').map(|(_, s)| s);
                let expected = match want {
                    None => None,
                    Some("gzip") => Some("gz"),
                    _ => Some("br"),
                };
                assert_eq!(suffix, expected, "{etag}");
                tags.push((want, etag));
            }
        }
        // One tag per encoding, the same for every request that gets that encoding.
        tags.sort();
        tags.dedup();
        assert_eq!(tags.len(), 3, "{uri}: {tags:?}");
        // If-None-Match with any encoding's tag: 304 with the tag of the negotiated one.
        let app = irqscope::web::app(Default::default());
        for (_, tag) in &tags {
            for (accept, want) in CASES {
                let (status, h, body) = send(
                    &app,
                    &uri,
                    &[(header::ACCEPT_ENCODING, accept), (header::IF_NONE_MATCH, tag)],
                )
                .await;
                assert_eq!(status, StatusCode::NOT_MODIFIED, "{uri} {accept:?} {tag}");
                assert!(body.is_empty());
                let own = &tags.iter().find(|(c, _)| *c == want).unwrap().1;
                assert_eq!(h[header::ETAG].to_str().unwrap(), own);
            }
        }
    }
    // Errors are neither tagged nor cached, whatever the client accepts (the router's own
    // compression layer may still gzip them).
    let app = irqscope::web::app(Default::default());
    for _ in 0..2 {
        let (status, h, _) = send(&app, "/s/v1.zzz", &[(header::ACCEPT_ENCODING, "br, gzip")]).await;
        assert!(status.is_client_error());
        assert!(h.get(header::ETAG).is_none() && h.get(header::CACHE_CONTROL).is_none());
    }
}

#[tokio::test]
async fn static_files_are_served_in_every_encoding() {
    let app = irqscope::web::app(Default::default());
    for file in ["app.js", "style.css"] {
        let on_disk = std::fs::read(format!("{}/static/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let uri = format!("/static/{file}");
        let mut tags = Vec::new();
        for (accept, want) in CASES {
            let (status, h, body) = send(&app, &uri, &[(header::ACCEPT_ENCODING, accept)]).await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(coding(&h), want, "{file} {accept:?}");
            assert_eq!(decode(want, &body), on_disk, "{file} {accept:?}");
            let etag = h[header::ETAG].to_str().unwrap().to_string();
            let (status, h304, _) = send(
                &app,
                &uri,
                &[(header::ACCEPT_ENCODING, accept), (header::IF_NONE_MATCH, &etag)],
            )
            .await;
            assert_eq!(status, StatusCode::NOT_MODIFIED, "{file} {accept:?}");
            assert_eq!(h304[header::ETAG].to_str().unwrap(), etag);
            tags.push((want, etag, body.len()));
        }
        tags.sort();
        tags.dedup();
        assert_eq!(tags.len(), 3, "{file}: {tags:?}");
        // Built at the best level and quality: brotli is the smallest.
        let size = |c: Option<&str>| tags.iter().find(|t| t.0 == c).unwrap().2;
        assert!(
            size(Some("br")) < size(Some("gzip")) && size(Some("gzip")) * 2 < size(None),
            "{tags:?}"
        );
    }
}
