//! Permalink pages as immutable content, and the embedded static files.
//!
//! A permalink pins everything its page shows (scenario, variant, model names), so its bytes
//! depend only on the request (path, query, `Host`, which the text twins print) and on the
//! build. [`immutable`] wraps the permalink routes — the handlers stay as they are — and gives:
//! - a strong `ETag` from [`MODEL_VERSION`] and the request (one per encoding, `-gz` for gzip),
//! - `Cache-Control: public, max-age=PERMALINK_MAX_AGE_S, immutable`,
//! - `If-None-Match` answered 304 without rendering,
//! - a bounded LRU ([`PERMALINK_CACHE_BYTES_MAX`], counted in bytes) of each rendered body and
//!   its gzip encoding, so a link opened again costs a map look-up and a copy-free write.
//!
//! Only 200 answers are kept; errors pass through untouched. Brotli is not offered: on these
//! pages gzip already shrinks the body ten-fold, and serving from the cache makes the encoder's
//! cost a one-off, so a second encoder would add a dependency for a few hundred bytes.

use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper::body::Body as _;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::{Arc, Mutex};

/// The crate version and a hash of every input of a rendered page (see `build.rs`).
pub(crate) const MODEL_VERSION: &str = env!("IRQSCOPE_MODEL_VERSION");
/// Rendered permalink bodies and their encodings kept at most, in bytes.
pub(crate) const PERMALINK_CACHE_BYTES_MAX: usize = 64 << 20;
/// A body larger than this (with its encoding) is served but not kept.
pub(crate) const PERMALINK_CACHE_ENTRY_BYTES_MAX: usize = 4 << 20;
/// How long a browser or proxy may keep a permalink page without asking again. Pinned bytes
/// could be kept for ever, but a fix to a model or a page reaches readers within a day.
pub(crate) const PERMALINK_MAX_AGE_S: u64 = 86_400;

const PERMALINK_CACHE_CONTROL: &str = "public, max-age=86400, immutable";
const _: () = assert!(PERMALINK_MAX_AGE_S == 86_400, "update PERMALINK_CACHE_CONTROL");

include!(concat!(env!("OUT_DIR"), "/static_assets.rs"));

/// 64-bit FNV-1a, the same as `build.rs` uses for content tags.
fn fnv1a(state: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(state, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// Whether the client takes gzip: a `gzip`, `x-gzip` or `*` coding with a non-zero q-value
/// (the rule tower-http's compression layer applies too).
pub(crate) fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let mut parts = item.split(';').map(str::trim);
            let coding = parts.next().unwrap_or("");
            let q = parts
                .find_map(|p| p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")))
                .map(|q| q.parse::<f32>().unwrap_or(0.0))
                .unwrap_or(1.0);
            (coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") || coding == "*") && q > 0.0
        })
}

/// Whether `If-None-Match` names one of `tags` (or is `*`). Weak tags compare weakly, as
/// RFC 9110 §13.1.2 has it for this header.
fn none_match(headers: &HeaderMap, tags: &[&str]) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|t| t == "*" || tags.contains(&t.strip_prefix("W/").unwrap_or(t)))
}

fn gzip(bytes: &[u8]) -> Bytes {
    let mut gz =
        flate2::write::GzEncoder::new(Vec::with_capacity(bytes.len() / 8 + 64), flate2::Compression::default());
    gz.write_all(bytes).expect("writing to memory");
    Bytes::from(gz.finish().expect("writing to memory"))
}

/// One rendered permalink answer.
struct Entry {
    headers: HeaderMap,
    identity: Bytes,
    gzip: Bytes,
    used: u64,
}

impl Entry {
    fn cost(key: &str, identity: &Bytes, gzip: &Bytes) -> usize {
        key.len() * 2 + identity.len() + gzip.len() + 256
    }
}

#[derive(Default)]
struct Lru {
    map: HashMap<String, Entry>,
    /// Last use → key; the first is the one to evict.
    order: BTreeMap<u64, String>,
    bytes: usize,
    tick: u64,
}

/// The bounded cache behind [`immutable`]. Cheap to clone (shared).
#[derive(Clone)]
pub struct PermalinkCache {
    lru: Arc<Mutex<Lru>>,
    bytes_max: usize,
}

impl Default for PermalinkCache {
    fn default() -> Self {
        PermalinkCache::new(PERMALINK_CACHE_BYTES_MAX)
    }
}

impl PermalinkCache {
    pub fn new(bytes_max: usize) -> PermalinkCache {
        PermalinkCache {
            lru: Arc::new(Mutex::new(Lru::default())),
            bytes_max,
        }
    }

    /// Bytes held now (entries and their keys).
    pub fn bytes(&self) -> usize {
        self.lru.lock().unwrap_or_else(|e| e.into_inner()).bytes
    }

    fn get(&self, key: &str) -> Option<(HeaderMap, Bytes, Bytes)> {
        let mut guard = self.lru.lock().unwrap_or_else(|e| e.into_inner());
        let lru = &mut *guard;
        lru.tick += 1;
        let tick = lru.tick;
        let entry = lru.map.get_mut(key)?;
        let key = lru.order.remove(&entry.used).expect("order names every entry");
        entry.used = tick;
        let found = (entry.headers.clone(), entry.identity.clone(), entry.gzip.clone());
        lru.order.insert(tick, key);
        Some(found)
    }

    fn put(&self, key: String, headers: HeaderMap, identity: Bytes, gzip: Bytes) {
        let cost = Entry::cost(&key, &identity, &gzip);
        if cost > PERMALINK_CACHE_ENTRY_BYTES_MAX.min(self.bytes_max) {
            return;
        }
        let mut guard = self.lru.lock().unwrap_or_else(|e| e.into_inner());
        let lru = &mut *guard;
        lru.tick += 1;
        let tick = lru.tick;
        if let Some(old) = lru.map.remove(&key) {
            lru.order.remove(&old.used);
            lru.bytes -= Entry::cost(&key, &old.identity, &old.gzip);
        }
        while lru.bytes + cost > self.bytes_max {
            let Some((_, victim)) = lru.order.pop_first() else {
                break;
            };
            if let Some(e) = lru.map.remove(&victim) {
                lru.bytes -= Entry::cost(&victim, &e.identity, &e.gzip);
            }
        }
        lru.bytes += cost;
        lru.order.insert(tick, key.clone());
        lru.map.insert(
            key,
            Entry {
                headers,
                identity,
                gzip,
                used: tick,
            },
        );
    }
}

fn tags(tag: u64) -> [String; 2] {
    [format!("\"{tag:016x}\""), format!("\"{tag:016x}-gz\"")]
}

/// The headers every permalink answer (200 or 304) carries.
fn validators(headers: &mut HeaderMap, etag: &str) {
    headers.insert(
        header::ETAG,
        HeaderValue::from_str(etag).expect("hex digits and quotes"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(PERMALINK_CACHE_CONTROL));
    headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
}

fn answer(mut headers: HeaderMap, identity: Bytes, gz: Bytes, use_gzip: bool, etag: &str) -> Response {
    validators(&mut headers, etag);
    headers.remove(header::CONTENT_LENGTH);
    let body = if use_gzip {
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        gz
    } else {
        identity
    };
    let mut resp = Response::new(Body::from(body));
    *resp.headers_mut() = headers;
    resp
}

/// Middleware for the permalink routes (see the module comment).
pub async fn immutable(State(cache): State<PermalinkCache>, req: Request, next: Next) -> Response {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return next.run(req).await;
    }
    let path_and_query = req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/");
    // The handlers print `super::origin(Host)`; that is what the bytes depend on.
    let key = format!("{}{path_and_query}", super::origin(req.headers()));
    let tag = fnv1a(fnv1a(FNV_OFFSET, MODEL_VERSION.as_bytes()), key.as_bytes());
    let [plain_tag, gz_tag] = tags(tag);
    let use_gzip = accepts_gzip(req.headers());
    let etag = if use_gzip { &gz_tag } else { &plain_tag };
    if none_match(req.headers(), &[&plain_tag, &gz_tag]) {
        let mut resp = StatusCode::NOT_MODIFIED.into_response();
        validators(resp.headers_mut(), etag);
        return resp;
    }
    if let Some((headers, identity, gz)) = cache.get(&key) {
        return answer(headers, identity, gz, use_gzip, etag);
    }
    let is_get = req.method() == Method::GET;
    let resp = next.run(req).await;
    let small = resp
        .body()
        .size_hint()
        .upper()
        .is_some_and(|n| n <= PERMALINK_CACHE_ENTRY_BYTES_MAX as u64);
    if !is_get || resp.status() != StatusCode::OK || resp.headers().contains_key(header::CONTENT_ENCODING) || !small {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let Ok(identity) = axum::body::to_bytes(body, PERMALINK_CACHE_ENTRY_BYTES_MAX).await else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let gz = gzip(&identity);
    cache.put(key, parts.headers.clone(), identity.clone(), gz.clone());
    answer(parts.headers, identity, gz, use_gzip, etag)
}

/// `GET /static/{file}`: the files of `static/`, embedded at build time with their gzip
/// encoding. Not fingerprinted in their URLs, so browsers revalidate (`no-cache`) and get 304.
pub(crate) async fn static_asset(Path(file): Path<String>, headers: HeaderMap) -> Response {
    let Some(&(name, bytes, gz, tag)) = STATIC_ASSETS.iter().find(|a| a.0 == file) else {
        return super::AppError::NotFound(format!("no static file {file:?}")).into_response();
    };
    let content_type = match name.rsplit('.').next() {
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("html") => "text/html; charset=utf-8",
        Some("svg") => "image/svg+xml",
        _ => "application/octet-stream",
    };
    let [plain_tag, gz_tag] = tags(tag);
    let use_gzip = accepts_gzip(&headers);
    let etag = if use_gzip { &gz_tag } else { &plain_tag };
    let mut out = HeaderMap::new();
    out.insert(
        header::ETAG,
        HeaderValue::from_str(etag).expect("hex digits and quotes"),
    );
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, no-cache"));
    out.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if none_match(&headers, &[&plain_tag, &gz_tag]) {
        return (StatusCode::NOT_MODIFIED, out).into_response();
    }
    out.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    let body = if use_gzip {
        out.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        Bytes::from_static(gz)
    } else {
        Bytes::from_static(bytes)
    };
    (out, body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_encoding_rules() {
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
            m
        };
        assert!(accepts_gzip(&h("gzip, deflate, br")));
        assert!(accepts_gzip(&h("br;q=1.0, gzip;q=0.5")));
        assert!(accepts_gzip(&h("*")));
        assert!(!accepts_gzip(&h("gzip;q=0")));
        assert!(!accepts_gzip(&h("br, deflate")));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn the_lru_keeps_within_its_bytes_and_drops_the_least_recent() {
        let cache = PermalinkCache::new(3 * (1000 + 2 + 256));
        let body = |c: u8| Bytes::from(vec![c; 1000]);
        for k in ["a", "b", "c"] {
            cache.put(k.into(), HeaderMap::new(), body(b'x'), Bytes::new());
        }
        assert!(cache.get("a").is_some()); // a is now the most recent
        cache.put("d".into(), HeaderMap::new(), body(b'y'), Bytes::new());
        assert!(cache.get("b").is_none(), "the least recently used entry stayed");
        assert!(cache.get("a").is_some() && cache.get("c").is_some() && cache.get("d").is_some());
        assert!(cache.bytes() <= 3 * (1000 + 2 + 256));
        // Replacing an entry does not count it twice; too big an entry is not kept.
        cache.put("d".into(), HeaderMap::new(), body(b'z'), Bytes::new());
        assert_eq!(cache.bytes(), 3 * (1000 + 2 + 256));
        cache.put(
            "huge".into(),
            HeaderMap::new(),
            Bytes::from(vec![0; 10_000]),
            Bytes::new(),
        );
        assert!(cache.get("huge").is_none());
        assert_eq!(cache.get("d").unwrap().1[0], b'z');
    }
}
