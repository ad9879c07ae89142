//! Permalink pages as immutable content, and the embedded static files.
//!
//! A permalink pins everything its page shows (scenario, variant, model names), so its bytes
//! depend only on the request (path, query, `Host`, which the text twins print) and on the
//! build. [`immutable`] wraps the whole router, outside every other layer, and acts on the
//! permalink paths alone ([`is_permalink`]; the handlers stay as they are). It gives:
//! - a strong `ETag` from [`MODEL_VERSION`] and the request, one per encoding (`-gz` for gzip,
//!   `-br` for brotli), as RFC 9110 §8.8.3.3 asks of content codings,
//! - `Cache-Control: public, max-age=PERMALINK_MAX_AGE_S, immutable`, `Vary: Accept-Encoding`,
//! - `If-None-Match` answered 304 without rendering,
//! - a bounded LRU ([`PERMALINK_CACHE_BYTES_MAX`], counted in bytes) of each rendered body and
//!   its gzip and brotli encodings, so a link opened again costs a map look-up and a copy-free
//!   write. An encoding is made the first time a client asks for it (a first view pays the
//!   render and its own encoding only), then kept beside the body with its whole head (the
//!   validators and the other layers' headers, made once); the cost counts all three.
//!
//! Outermost, a link opened again is answered before any other layer runs (no tracing span,
//! no timeout timer, no routing) and its `ETag`s are worked out only when a request carries
//! `If-None-Match` or the entry is made: `scripts/bench-http` measured the repeated gzip page
//! at 0.89 × nginx `gzip_static` with the cache inside the router (docs/perf.md).
//!
//! The encoding follows `Accept-Encoding` by q-value ([`negotiate`]). Only 200 answers are
//! kept; errors pass through untouched.

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
/// A body larger than this (with its encodings) is served but not kept.
pub(crate) const PERMALINK_CACHE_ENTRY_BYTES_MAX: usize = 4 << 20;
/// How long a browser or proxy may keep a permalink page without asking again. Pinned bytes
/// could be kept for ever, but a fix to a model or a page reaches readers within a day.
pub(crate) const PERMALINK_MAX_AGE_S: u64 = 86_400;
/// `Accept-Encoding` items read at most; the rest are ignored (a browser sends four or five).
pub(crate) const ACCEPT_ENCODING_ITEMS_MAX: usize = 32;
/// The brotli quality of a permalink body, made once per body on a first view that asks for
/// it. Chosen by measurement (docs/perf.md, `cargo bench --bench web -- encode/`): quality 5
/// is 30 % (L96as_v4 page) to 68 % (8,192-CPU page) smaller than gzip's default level, at
/// about 1.8 times gzip's time on the first and 0.7 times on the second; 4 is as fast as gzip
/// but 9–22 % bigger than 5, 6 saves under 1 % more, 11 takes a few hundred times as long.
pub(crate) const PERMALINK_BROTLI_QUALITY: i32 = 5;
/// Brotli window, log2 bytes: 4 MiB, which covers [`PERMALINK_CACHE_ENTRY_BYTES_MAX`].
const BROTLI_LGWIN: i32 = 22;

const PERMALINK_CACHE_CONTROL: &str = "public, max-age=86400, immutable";
const _: () = assert!(PERMALINK_MAX_AGE_S == 86_400, "update PERMALINK_CACHE_CONTROL");

/// A file of `static/` as `build.rs` embeds it.
struct StaticAsset {
    name: &'static str,
    bytes: &'static [u8],
    gzip: &'static [u8],
    brotli: &'static [u8],
    /// FNV-1a of `bytes`: the `ETag`'s base.
    tag: u64,
}

include!(concat!(env!("OUT_DIR"), "/static_assets.rs"));

/// 64-bit FNV-1a, the same as `build.rs` uses for content tags.
fn fnv1a(state: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(state, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// A content coding this server sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    Identity,
    Gzip,
    Br,
}

impl Encoding {
    fn header(self) -> Option<HeaderValue> {
        match self {
            Encoding::Identity => None,
            Encoding::Gzip => Some(HeaderValue::from_static("gzip")),
            Encoding::Br => Some(HeaderValue::from_static("br")),
        }
    }
}

/// A q-value in thousandths (RFC 9110 §12.4.2: at most three decimals, 0 to 1). Anything
/// else is read as 0, so a malformed weight never selects a coding.
fn qvalue(text: &str) -> u16 {
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return 0;
    }
    let frac = frac.bytes().chain(std::iter::repeat(b'0')).take(3);
    let milli = frac.fold(0u16, |m, b| m * 10 + u16::from(b - b'0'));
    match int {
        "0" => milli,
        "1" if milli == 0 => 1000,
        _ => 0,
    }
}

/// The coding to send for a request's `Accept-Encoding`: the one of br and gzip with the
/// higher q-value (an explicit entry, else `*`'s), brotli when they are equal, and identity
/// when neither is acceptable (q=0 or absent) or `identity` is weighted strictly higher.
pub(crate) fn negotiate(headers: &HeaderMap) -> Encoding {
    let (mut br, mut gzip, mut identity, mut any) = (None, None, None, None);
    let items = headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .take(ACCEPT_ENCODING_ITEMS_MAX);
    for item in items {
        let mut parts = item.split(';').map(str::trim);
        let coding = parts.next().unwrap_or("");
        let q = parts
            .find_map(|p| p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")))
            .map_or(1000, qvalue);
        let slot = if coding.eq_ignore_ascii_case("br") {
            &mut br
        } else if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            &mut gzip
        } else if coding.eq_ignore_ascii_case("identity") {
            &mut identity
        } else if coding == "*" {
            &mut any
        } else {
            continue;
        };
        // A coding listed twice keeps its first weight.
        slot.get_or_insert(q);
    }
    let br = br.or(any).unwrap_or(0);
    let gzip = gzip.or(any).unwrap_or(0);
    let best = br.max(gzip);
    if best == 0 || identity.is_some_and(|q| q > best) {
        Encoding::Identity
    } else if br == best {
        Encoding::Br
    } else {
        Encoding::Gzip
    }
}

/// Whether `If-None-Match` names one of `tags` (or is `*`). Weak tags compare weakly, as
/// RFC 9110 §13.1.2 has it for this header.
fn none_match(headers: &HeaderMap, tags: &[String]) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|t| t == "*" || tags.iter().any(|tag| tag == t.strip_prefix("W/").unwrap_or(t)))
}

fn gzip(bytes: &[u8]) -> Bytes {
    let mut gz =
        flate2::write::GzEncoder::new(Vec::with_capacity(bytes.len() / 8 + 64), flate2::Compression::default());
    gz.write_all(bytes).expect("writing to memory");
    Bytes::from(gz.finish().expect("writing to memory"))
}

/// Brotli at `quality` (0–11).
pub(crate) fn brotli(bytes: &[u8], quality: i32) -> Bytes {
    let params = brotli::enc::BrotliEncoderParams {
        quality,
        lgwin: BROTLI_LGWIN,
        size_hint: bytes.len(),
        mode: brotli::enc::backward_references::BrotliEncoderMode::BROTLI_MODE_TEXT,
        ..Default::default()
    };
    let mut out = Vec::with_capacity(bytes.len() / 10 + 64);
    brotli::BrotliCompress(&mut &bytes[..], &mut out, &params).expect("writing to memory");
    Bytes::from(out)
}

fn encode(bytes: &[u8], encoding: Encoding) -> Bytes {
    match encoding {
        Encoding::Identity => Bytes::copy_from_slice(bytes),
        Encoding::Gzip => gzip(bytes),
        Encoding::Br => brotli(bytes, PERMALINK_BROTLI_QUALITY),
    }
}

/// One rendered permalink answer: the body and the encodings made so far, each with the
/// whole head it is sent with.
struct Entry {
    headers: HeaderMap,
    identity: Bytes,
    gzip: Option<Bytes>,
    br: Option<Bytes>,
    /// The heads of identity, gzip and brotli ([`head`]), each made with its body.
    heads: [Option<HeaderMap>; 3],
    used: u64,
}

impl Entry {
    fn cost(&self, key: &str) -> usize {
        let len = |b: &Option<Bytes>| b.as_ref().map_or(0, Bytes::len);
        key.len() * 2 + self.identity.len() + len(&self.gzip) + len(&self.br) + 256
    }

    fn encoded(&self, encoding: Encoding) -> Option<Bytes> {
        match encoding {
            Encoding::Identity => Some(self.identity.clone()),
            Encoding::Gzip => self.gzip.clone(),
            Encoding::Br => self.br.clone(),
        }
    }

    fn head(&mut self, encoding: Encoding) -> &mut Option<HeaderMap> {
        &mut self.heads[encoding as usize]
    }

    fn slot(&mut self, encoding: Encoding) -> Option<&mut Option<Bytes>> {
        match encoding {
            Encoding::Identity => None,
            Encoding::Gzip => Some(&mut self.gzip),
            Encoding::Br => Some(&mut self.br),
        }
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

impl Lru {
    /// Drops least recently used entries other than `keep` until `more` bytes fit in `max`.
    fn make_room(&mut self, more: usize, max: usize, keep: &str) {
        let mut kept = None;
        while self.bytes + more > max {
            let Some((used, victim)) = self.order.pop_first() else {
                break;
            };
            if victim == keep {
                kept = Some((used, victim));
                continue;
            }
            if let Some(e) = self.map.remove(&victim) {
                self.bytes -= e.cost(&victim);
            }
        }
        if let Some((used, key)) = kept {
            self.order.insert(used, key);
        }
    }
}

/// What the cache holds for a key.
enum Hit {
    /// The asked-for encoding and its head.
    Ready(HeaderMap, Bytes),
    /// The rendered answer's headers and body: the encoding is not made yet.
    Identity(HeaderMap, Bytes),
}

/// The bounded cache behind [`immutable`]. Cheap to clone (shared).
#[derive(Clone)]
pub(crate) struct PermalinkCache {
    lru: Arc<Mutex<Lru>>,
    bytes_max: usize,
}

impl Default for PermalinkCache {
    fn default() -> Self {
        PermalinkCache::new(PERMALINK_CACHE_BYTES_MAX)
    }
}

impl PermalinkCache {
    pub(crate) fn new(bytes_max: usize) -> PermalinkCache {
        PermalinkCache {
            lru: Arc::new(Mutex::new(Lru::default())),
            bytes_max,
        }
    }

    /// Bytes held now (entries, their encodings and their keys).
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.lru.lock().unwrap_or_else(|e| e.into_inner()).bytes
    }

    fn entry_max(&self) -> usize {
        PERMALINK_CACHE_ENTRY_BYTES_MAX.min(self.bytes_max)
    }

    fn get(&self, key: &str, encoding: Encoding) -> Option<Hit> {
        let mut guard = self.lru.lock().unwrap_or_else(|e| e.into_inner());
        let lru = &mut *guard;
        lru.tick += 1;
        let tick = lru.tick;
        let entry = lru.map.get_mut(key)?;
        let key = lru.order.remove(&entry.used).expect("order names every entry");
        entry.used = tick;
        let hit = match (entry.encoded(encoding), entry.head(encoding).clone()) {
            (Some(body), Some(head)) => Hit::Ready(head, body),
            _ => Hit::Identity(entry.headers.clone(), entry.identity.clone()),
        };
        lru.order.insert(tick, key);
        Some(hit)
    }

    /// Keeps a rendered body and the one answer sent of it: its encoding (the body itself
    /// for identity) and its head.
    fn put(&self, key: String, headers: HeaderMap, identity: Bytes, sent: (Encoding, Bytes, HeaderMap)) {
        let mut entry = Entry {
            headers,
            identity,
            gzip: None,
            br: None,
            heads: [None, None, None],
            used: 0,
        };
        let (encoding, bytes, head) = sent;
        if let Some(slot) = entry.slot(encoding) {
            *slot = Some(bytes);
        }
        *entry.head(encoding) = Some(head);
        let cost = entry.cost(&key);
        if cost > self.entry_max() {
            return;
        }
        let mut guard = self.lru.lock().unwrap_or_else(|e| e.into_inner());
        let lru = &mut *guard;
        lru.tick += 1;
        let tick = lru.tick;
        if let Some(old) = lru.map.remove(&key) {
            lru.order.remove(&old.used);
            lru.bytes -= old.cost(&key);
        }
        lru.make_room(cost, self.bytes_max, &key);
        lru.bytes += cost;
        lru.order.insert(tick, key.clone());
        entry.used = tick;
        lru.map.insert(key, entry);
    }

    /// Adds an encoding made after the body was kept, with its head (no-op if the entry has
    /// gone, already has it, or would outgrow the entry bound).
    fn fill(&self, key: &str, encoding: Encoding, bytes: Bytes, head: HeaderMap) {
        let mut guard = self.lru.lock().unwrap_or_else(|e| e.into_inner());
        let lru = &mut *guard;
        let entry_max = self.entry_max();
        let Some(entry) = lru.map.get_mut(key) else {
            return;
        };
        let more = if encoding == Encoding::Identity { 0 } else { bytes.len() };
        if entry.cost(key) + more > entry_max {
            return;
        }
        if entry.head(encoding).is_some() {
            return;
        }
        match entry.slot(encoding) {
            Some(slot) if slot.is_none() => *slot = Some(bytes),
            Some(_) => return,
            None => {}
        }
        *entry.head(encoding) = Some(head);
        lru.make_room(more, self.bytes_max, key);
        lru.bytes += more;
    }
}

/// The tags of one content: identity, gzip, brotli.
fn tags(tag: u64) -> [String; 3] {
    [
        format!("\"{tag:016x}\""),
        format!("\"{tag:016x}-gz\""),
        format!("\"{tag:016x}-br\""),
    ]
}

fn tag_of(tags: &[String; 3], encoding: Encoding) -> &str {
    match encoding {
        Encoding::Identity => &tags[0],
        Encoding::Gzip => &tags[1],
        Encoding::Br => &tags[2],
    }
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

/// The head a permalink answer in `encoding` is sent with: the rendered answer's headers (the
/// other layers' among them), the validators and the coding.
fn head(mut headers: HeaderMap, encoding: Encoding, etag: &str) -> HeaderMap {
    validators(&mut headers, etag);
    headers.remove(header::CONTENT_LENGTH);
    if let Some(coding) = encoding.header() {
        headers.insert(header::CONTENT_ENCODING, coding);
    }
    headers
}

fn answer(head: HeaderMap, body: Bytes) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.headers_mut() = head;
    resp
}

/// Whether `path` is a permalink route's: `/s/`, `/c/`, `/m/`, `/n/` and the link, or `/r/`
/// and a review id (the router answers any other path under them 404, which is not kept).
pub(crate) fn is_permalink(path: &str) -> bool {
    ["/s/", "/c/", "/m/", "/n/", "/r/"].iter().any(|p| path.starts_with(p))
}

/// The tags of the content behind `key`.
fn tags_of(key: &str) -> [String; 3] {
    tags(fnv1a(fnv1a(FNV_OFFSET, MODEL_VERSION.as_bytes()), key.as_bytes()))
}

/// Middleware around the whole router, acting on the permalink routes (see the module
/// comment).
pub(crate) async fn immutable(State(cache): State<PermalinkCache>, mut req: Request, next: Next) -> Response {
    if (req.method() != Method::GET && req.method() != Method::HEAD) || !is_permalink(req.uri().path()) {
        return next.run(req).await;
    }
    let path_and_query = req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/");
    // The handlers print `super::origin(Host)`; that is what the bytes depend on.
    let key = format!("{}{path_and_query}", super::origin(req.headers()));
    let encoding = negotiate(req.headers());
    if req.headers().contains_key(header::IF_NONE_MATCH) {
        let tags = tags_of(&key);
        if none_match(req.headers(), &tags) {
            let mut resp = StatusCode::NOT_MODIFIED.into_response();
            validators(resp.headers_mut(), tag_of(&tags, encoding));
            return resp;
        }
    }
    match cache.get(&key, encoding) {
        Some(Hit::Ready(head, body)) => return answer(head, body),
        Some(Hit::Identity(headers, identity)) => {
            let body = match encoding {
                Encoding::Identity => identity,
                _ => encode(&identity, encoding),
            };
            let head = head(headers, encoding, tag_of(&tags_of(&key), encoding));
            cache.fill(&key, encoding, body.clone(), head.clone());
            return answer(head, body);
        }
        None => {}
    }
    let is_get = req.method() == Method::GET;
    // The body is kept as rendered and encoded here: the compression layer inside must not.
    req.headers_mut().remove(header::ACCEPT_ENCODING);
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
    let body = match encoding {
        Encoding::Identity => identity.clone(),
        _ => encode(&identity, encoding),
    };
    let head = head(parts.headers.clone(), encoding, tag_of(&tags_of(&key), encoding));
    cache.put(key, parts.headers, identity, (encoding, body.clone(), head.clone()));
    answer(head, body)
}

/// `GET /static/{file}`: the files of `static/`, embedded at build time with their gzip and
/// brotli encodings. Not fingerprinted in their URLs, so browsers revalidate (`no-cache`) and
/// get 304.
pub(crate) async fn static_asset(Path(file): Path<String>, headers: HeaderMap) -> Response {
    let Some(&StaticAsset {
        name,
        bytes,
        gzip,
        brotli,
        tag,
    }) = STATIC_ASSETS.iter().find(|a| a.name == file)
    else {
        return super::AppError::NotFound(format!("no static file {file:?}")).into_response();
    };
    let content_type = match name.rsplit('.').next() {
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("html") => "text/html; charset=utf-8",
        Some("svg") => "image/svg+xml",
        _ => "application/octet-stream",
    };
    let tags = tags(tag);
    let encoding = negotiate(&headers);
    let mut out = HeaderMap::new();
    out.insert(
        header::ETAG,
        HeaderValue::from_str(tag_of(&tags, encoding)).expect("hex digits and quotes"),
    );
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, no-cache"));
    out.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if none_match(&headers, &tags) {
        return (StatusCode::NOT_MODIFIED, out).into_response();
    }
    out.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Some(coding) = encoding.header() {
        out.insert(header::CONTENT_ENCODING, coding);
    }
    let body = match encoding {
        Encoding::Identity => bytes,
        Encoding::Gzip => gzip,
        Encoding::Br => brotli,
    };
    (out, Bytes::from_static(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &str) -> HeaderMap {
        let mut m = HeaderMap::new();
        m.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
        m
    }

    #[test]
    fn negotiation_by_q_value() {
        use Encoding::*;
        for (header, want) in [
            ("gzip, deflate, br, zstd", Br),
            ("gzip, deflate", Gzip),
            ("x-gzip", Gzip),
            ("br", Br),
            ("BR;Q=1", Br),
            ("br;q=1.0, gzip;q=0.5", Br),
            ("br;q=0.5, gzip;q=0.8", Gzip),
            ("gzip;q=0.8, br;q=0.800", Br),
            ("gzip, br;q=0", Gzip),
            ("br;q=0, gzip;q=0", Identity),
            ("gzip;q=0", Identity),
            ("deflate, zstd", Identity),
            ("identity", Identity),
            ("", Identity),
            ("*", Br),
            ("*;q=0", Identity),
            ("*, br;q=0", Gzip),
            ("*;q=0.1, gzip", Gzip),
            ("gzip;q=0.5, identity", Identity),
            ("gzip;q=0.5, identity;q=0.5", Gzip),
            // Malformed weights never select a coding.
            ("br;q=2, gzip", Gzip),
            ("br;q=0.5555, gzip;q=0.4", Gzip),
            ("br;q=abc", Identity),
            ("br;q=1.5", Identity),
            // A coding named twice keeps its first weight.
            ("br;q=0, br", Identity),
        ] {
            assert_eq!(negotiate(&accept(header)), want, "{header:?}");
        }
        assert_eq!(negotiate(&HeaderMap::new()), Identity);
        let mut two = accept("br;q=0");
        two.append(header::ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
        assert_eq!(negotiate(&two), Gzip, "several headers are one list");
        // Only the first ACCEPT_ENCODING_ITEMS_MAX items count.
        let long = format!("{}br", "x, ".repeat(ACCEPT_ENCODING_ITEMS_MAX));
        assert_eq!(negotiate(&accept(&long)), Identity);
    }

    #[test]
    fn q_values() {
        for (text, milli) in [
            ("1", 1000),
            ("1.000", 1000),
            ("0", 0),
            ("0.5", 500),
            ("0.05", 50),
            ("0.001", 1),
            ("1.001", 0),
            ("0.0001", 0),
            ("-0.5", 0),
            ("", 0),
            ("0.", 0),
        ] {
            assert_eq!(qvalue(text), milli, "{text:?}");
        }
    }

    #[test]
    fn brotli_decodes_to_its_input() {
        let text: String = (0..5000)
            .map(|i| format!("<rect x=\"{i}\" y=\"{}\"/>", i % 7))
            .collect();
        for quality in [0, 5, 11] {
            let br = brotli(text.as_bytes(), quality);
            assert!(br.len() * 5 < text.len(), "quality {quality}: {} bytes", br.len());
            let mut out = Vec::new();
            brotli::BrotliDecompress(&mut &br[..], &mut out).unwrap();
            assert_eq!(out, text.as_bytes());
        }
    }

    fn body(c: u8) -> Bytes {
        Bytes::from(vec![c; 1000])
    }

    /// Keeps `identity` as sent in `encoded` (itself, when `None`), with an empty head.
    fn put(cache: &PermalinkCache, key: &str, identity: Bytes, encoded: Option<(Encoding, Bytes)>) {
        let (encoding, bytes) = encoded.unwrap_or((Encoding::Identity, identity.clone()));
        cache.put(
            key.into(),
            HeaderMap::new(),
            identity,
            (encoding, bytes, HeaderMap::new()),
        );
    }

    fn fill(cache: &PermalinkCache, key: &str, encoding: Encoding, bytes: Bytes) {
        cache.fill(key, encoding, bytes, HeaderMap::new());
    }

    /// The encoding a hit holds ready, if it does.
    fn encoded(hit: Hit) -> Option<Bytes> {
        match hit {
            Hit::Ready(_, bytes) => Some(bytes),
            Hit::Identity(..) => None,
        }
    }

    /// The rendered body of an identity hit.
    fn identity(hit: Hit) -> Bytes {
        match hit {
            Hit::Ready(_, bytes) | Hit::Identity(_, bytes) => bytes,
        }
    }

    #[test]
    fn the_lru_keeps_within_its_bytes_and_drops_the_least_recent() {
        let cache = PermalinkCache::new(3 * (1000 + 2 + 256));
        for k in ["a", "b", "c"] {
            put(&cache, k, body(b'x'), None);
        }
        assert!(cache.get("a", Encoding::Identity).is_some()); // a is now the most recent
        put(&cache, "d", body(b'y'), None);
        assert!(
            cache.get("b", Encoding::Identity).is_none(),
            "the least recently used entry stayed"
        );
        for k in ["a", "c", "d"] {
            assert!(cache.get(k, Encoding::Identity).is_some(), "{k}");
        }
        assert!(cache.bytes() <= 3 * (1000 + 2 + 256));
        // Replacing an entry does not count it twice; too big an entry is not kept.
        put(&cache, "d", body(b'z'), None);
        assert_eq!(cache.bytes(), 3 * (1000 + 2 + 256));
        put(&cache, "huge", Bytes::from(vec![0; 10_000]), None);
        assert!(cache.get("huge", Encoding::Identity).is_none());
        assert_eq!(identity(cache.get("d", Encoding::Identity).unwrap())[0], b'z');
    }

    #[test]
    fn the_cost_counts_every_encoding() {
        let one = 1000 + 2 + 256;
        let cache = PermalinkCache::new(3 * one + 300);
        put(
            &cache,
            "a",
            body(b'a'),
            Some((Encoding::Gzip, Bytes::from(vec![1; 100]))),
        );
        assert_eq!(cache.bytes(), one + 100);
        let hit = cache.get("a", Encoding::Gzip).unwrap();
        assert_eq!(encoded(hit).unwrap().len(), 100);
        assert!(
            encoded(cache.get("a", Encoding::Br).unwrap()).is_none(),
            "br not made yet"
        );
        fill(&cache, "a", Encoding::Br, Bytes::from(vec![2; 80]));
        assert_eq!(cache.bytes(), one + 180);
        assert_eq!(encoded(cache.get("a", Encoding::Br).unwrap()).unwrap()[0], 2);
        // Filling twice keeps the first and counts it once.
        fill(&cache, "a", Encoding::Br, Bytes::from(vec![3; 80]));
        assert_eq!(cache.bytes(), one + 180);
        assert_eq!(encoded(cache.get("a", Encoding::Br).unwrap()).unwrap()[0], 2);
        // b and c fill the rest; filling a's encodings past the bound evicts the oldest (b),
        // never the entry being filled.
        put(&cache, "b", body(b'b'), None);
        put(&cache, "c", body(b'c'), None);
        assert_eq!(cache.bytes(), 3 * one + 180);
        put(&cache, "a", body(b'a'), Some((Encoding::Br, Bytes::from(vec![2; 80]))));
        fill(&cache, "a", Encoding::Gzip, Bytes::from(vec![1; 300]));
        assert!(cache.get("b", Encoding::Identity).is_none());
        assert!(encoded(cache.get("a", Encoding::Gzip).unwrap()).is_some());
        assert!(cache.bytes() <= 3 * one + 300, "{}", cache.bytes());
        // An encoding that would take the entry past its own bound is served, not kept.
        let small = PermalinkCache::new(one + 50);
        put(&small, "a", body(b'a'), None);
        fill(&small, "a", Encoding::Gzip, Bytes::from(vec![1; 100]));
        assert!(encoded(small.get("a", Encoding::Gzip).unwrap()).is_none());
        assert_eq!(small.bytes(), one);
    }
}
