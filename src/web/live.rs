//! Live mode over HTTP: authenticated ingestion, the host list, the live page with its SSE
//! stream, live vs model, and importing a capture (or a pasted `/proc/interrupts`).
//!
//! Routes: `POST /api/live/{host}/snapshots` (bearer token, [`SNAPSHOT_BYTES_MAX`] body),
//! `GET /api/live/{host}` (JSON), `GET /live`, `GET /live/{host}`
//! (`?variant=&effective=&mana=&node=`), `GET /live/{host}/events` (SSE). Actions live under
//! [`ACTIONS_PREFIX`] (`POST /live/_/import`), which no host name can take (host names never
//! start with `_`), so `/live/HOST` means the host for every valid name, `import` included.
//! Everything a host sends (host names, IRQ names, chips) is escaped by askama; only
//! `render::svg*` output is `|safe`.
//!
//! Without configured tokens ingestion answers 403: the live path is never open by default.

use super::{AppError, AppState};
use crate::live::auth::{Tokens, Verdict};
use crate::live::collect::topology_from_columns;
use crate::live::devices::{self, Comparison};
use crate::live::imports::{valid_id, ImportStore, IMPORTS_MAX};
use crate::live::limits::{CAPTURE_SNAPSHOTS_MAX, SNAPSHOT_BYTES_MAX};
use crate::live::parse::parse_interrupts;
use crate::live::persist::Persist;
use crate::live::protocol::{valid_host_name, Capture, Snapshot, WireIrq, PROTOCOL_VERSION};
use crate::live::store::{HostState, IngestError, LiveStore};
use crate::render::svg;
use crate::render::svg_live::{history_chart, HistoryPoint};
use crate::scenario::spec;
use askama::Template;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use serde::Deserialize;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;
use tower_http::limit::RequestBodyLimitLayer;

/// Most SSE streams open at once; more answer 503.
pub const SSE_STREAMS_MAX: usize = 256;
/// Update notices buffered (one ring shared by every SSE stream) before a slow reader skips to
/// the latest state. A stream holds no queue of its own: it renders the host's current state
/// when the client is ready for it, at most once per accepted snapshot (by `seq`).
const UPDATES_BUFFERED: usize = 64;
/// History samples listed as text on the page.
const HISTORY_SHOWN: usize = 20;
/// History samples on the chart, and the most an SSE event carries (the JSON has them all).
pub const HISTORY_CHART_LEN: usize = 120;
/// Path segment under `/live/` that holds actions; host names may not start with `_`.
pub const ACTIONS_PREFIX: &str = "/live/_";

/// The live half of [`AppState`]. Cheap to clone.
#[derive(Clone, Debug)]
pub struct LiveState {
    inner: Arc<LiveInner>,
}

#[derive(Debug)]
struct LiveInner {
    store: Mutex<LiveStore>,
    imports: Mutex<ImportStore>,
    /// Insertion counter of imports (their persisted order).
    import_order: AtomicU64,
    tokens: Tokens,
    persist: Option<Persist>,
    updates: broadcast::Sender<String>,
    streams: AtomicUsize,
}

impl Default for LiveState {
    fn default() -> Self {
        LiveState::with(Tokens::default(), None, LiveStore::new(), ImportStore::new())
    }
}

impl LiveState {
    fn with(tokens: Tokens, persist: Option<Persist>, store: LiveStore, imports: ImportStore) -> LiveState {
        let (updates, _) = broadcast::channel(UPDATES_BUFFERED);
        let import_order = AtomicU64::new(imports.len() as u64);
        LiveState {
            inner: Arc::new(LiveInner {
                store: Mutex::new(store),
                imports: Mutex::new(imports),
                import_order,
                tokens,
                persist,
                updates,
                streams: AtomicUsize::new(0),
            }),
        }
    }

    /// Ingestion with `tokens` (empty: disabled), history kept in `persist` when given and
    /// restored from it now. Returns the state and notes about records that were skipped.
    pub fn new(tokens: Tokens, persist: Option<Persist>) -> Result<(LiveState, Vec<String>), String> {
        let mut store = LiveStore::new();
        let mut imports = ImportStore::new();
        let mut notes = Vec::new();
        if let Some(p) = &persist {
            for (id, bytes) in p.load_imports().map_err(|e| e.to_string())? {
                match serde_json::from_slice::<Capture>(&bytes) {
                    Ok(c) => {
                        imports.restore(id, c, bytes);
                    }
                    Err(e) => notes.push(format!("import {}: {e}", crate::live::parse::short(&id))),
                }
            }
            let (records, bad) = p.load_all().map_err(|e| e.to_string())?;
            notes.extend(bad);
            for rec in records {
                let host = rec.snapshot.host.clone();
                if let Err(e) = store.restore(rec) {
                    notes.push(format!("{host}: {e}"));
                }
            }
        }
        Ok((LiveState::with(tokens, persist, store, imports), notes))
    }

    fn imports(&self) -> std::sync::MutexGuard<'_, ImportStore> {
        self.inner.imports.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn store(&self) -> std::sync::MutexGuard<'_, LiveStore> {
        // A panic while holding the lock cannot leave the store half-updated: ingest builds
        // the new host state before inserting it.
        self.inner.store.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The live routes; merged into `web::app` outside the dashboard's 1 MiB body limit because
/// snapshots of large machines are bigger.
pub fn routes() -> Router<AppState> {
    let big_body = || {
        (
            DefaultBodyLimit::max(SNAPSHOT_BYTES_MAX),
            RequestBodyLimitLayer::new(SNAPSHOT_BYTES_MAX),
        )
    };
    let (d1, r1) = big_body();
    let (d2, r2) = big_body();
    Router::new()
        .route("/live", get(hosts_page))
        .route("/live/_/import/{id}", get(import_page))
        .route(
            "/live/_/import",
            post(import)
                .layer::<_, std::convert::Infallible>(d1)
                .layer::<_, std::convert::Infallible>(r1),
        )
        .route("/live/{host}", get(host_page))
        .route("/live/{host}/events", get(events))
        .route("/api/live/{host}", get(host_json))
        .route(
            "/api/live/{host}/snapshots",
            post(ingest)
                .layer::<_, std::convert::Infallible>(d2)
                .layer::<_, std::convert::Infallible>(r2),
        )
}

/// A refusal at the ingestion edge: status and message.
fn refuse(status: StatusCode, message: &str) -> Response {
    let mut r = (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{message}\n"),
    )
        .into_response();
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer realm=\"irqscope-live\""),
        );
    }
    r
}

async fn ingest(State(app): State<AppState>, Path(host): Path<String>, headers: HeaderMap, body: Bytes) -> Response {
    let live = app.live.clone();
    if live.inner.tokens.is_empty() {
        return refuse(
            StatusCode::FORBIDDEN,
            "live ingestion is disabled: start the server with --live-tokens FILE or IRQSCOPE_LIVE_TOKENS",
        );
    }
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
        .map(<[u8]>::to_vec);
    let Some(presented) = presented else {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "a bearer token is required (Authorization: Bearer TOKEN)",
        );
    };
    if !valid_host_name(&host) {
        return refuse(
            StatusCode::BAD_REQUEST,
            "bad host name: 1 to 64 bytes of A-Z a-z 0-9 . _ -, not starting with . or _",
        );
    }
    match live.inner.tokens.check(&presented, &host) {
        Verdict::Accepted => {}
        Verdict::Unknown => return refuse(StatusCode::UNAUTHORIZED, "unknown token"),
        Verdict::WrongHost => return refuse(StatusCode::FORBIDDEN, "this token may not push for this host"),
    }
    let encoding = headers.get(header::CONTENT_ENCODING).map(|v| v.to_str().unwrap_or("?"));
    let snap: Snapshot = match crate::live::protocol::decode_push_body(encoding, &body, SNAPSHOT_BYTES_MAX) {
        Ok(s) => s,
        Err(e) => {
            return refuse(
                StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_REQUEST),
                &e.to_string(),
            )
        }
    };
    let live2 = live.clone();
    let host2 = host.clone();
    let result = tokio::task::spawn_blocking(move || -> Result<u64, (StatusCode, String)> {
        let mut store = live2.store();
        let state = store.ingest(&host2, snap).map_err(|e| {
            let status = match e {
                IngestError::Bad(_) | IngestError::HostMismatch { .. } => StatusCode::BAD_REQUEST,
                IngestError::TooManyHosts => StatusCode::CONFLICT,
                IngestError::TooFast { .. } => StatusCode::TOO_MANY_REQUESTS,
            };
            (status, e.to_string())
        })?;
        let seq = state.seq;
        if let Some(p) = &live2.inner.persist {
            if let Err(e) = p.save(&state.persisted()) {
                tracing::error!("{e}");
            }
        }
        Ok(seq)
    })
    .await;
    match result {
        Ok(Ok(seq)) => {
            let _ = live.inner.updates.send(host);
            (
                StatusCode::OK,
                Json(serde_json::json!({ "seq": seq, "version": PROTOCOL_VERSION })),
            )
                .into_response()
        }
        Ok(Err((status, message))) => refuse(status, &message),
        Err(e) => AppError::Internal(format!("ingest task: {e}")).into_response(),
    }
}

/// Query of the host page: the model to compare against, and a node to zoom to.
#[derive(Debug, Default, Deserialize)]
pub struct LiveQuery {
    pub variant: Option<String>,
    pub effective: Option<String>,
    /// MANA driver version: `unpatched` (default) or `patched`.
    pub mana: Option<String>,
    pub node: Option<String>,
}

struct ModelChoice {
    variant: String,
    effective: String,
    mana_patched: bool,
    node: Option<u32>,
}

impl LiveQuery {
    fn choice(&self) -> Result<ModelChoice, AppError> {
        let pick = |v: &Option<String>, d: &str| v.clone().filter(|s| !s.is_empty()).unwrap_or_else(|| d.to_string());
        let variant = pick(&self.variant, spec::DEFAULT_VARIANT.name());
        let effective = pick(&self.effective, spec::DEFAULT_EFFECTIVE.name());
        spec::parse_variant(&variant)?;
        spec::parse_effective(&effective)?;
        let mana_patched = match self.mana.as_deref() {
            None | Some("") | Some("unpatched") => false,
            Some("patched") => true,
            Some(m) => {
                return Err(AppError::BadInput(format!(
                    "mana {:?}: unpatched or patched",
                    crate::live::parse::short(m)
                )))
            }
        };
        let node = match self.node.as_deref() {
            None | Some("") | Some("all") => None,
            Some(n) => Some(
                n.parse::<u32>()
                    .map_err(|_| AppError::BadInput(format!("node {n:?} is not a number")))?,
            ),
        };
        Ok(ModelChoice {
            variant,
            effective,
            mana_patched,
            node,
        })
    }
}

pub struct IrqRowView {
    pub label: String,
    pub name: String,
    pub chip: String,
    pub device: String,
    pub affinity: String,
    pub effective: String,
    pub rate: String,
    /// Sort key for the rate column (-1 without a rate).
    pub rate_key: f64,
}

pub struct ModelRowView {
    pub device: String,
    pub index: u32,
    pub irq: String,
    pub name: String,
    pub predicted_mask: String,
    pub actual_mask: String,
    pub predicted_cpu: String,
    pub actual_effective: String,
    pub mismatch: bool,
}

/// Everything the live page shows, for a pushed host or an imported capture.
pub struct HostView {
    pub host: String,
    pub live: bool,
    /// For a kept import: its link (`/live/_/import/ID`).
    pub share: String,
    pub summary: String,
    pub seq: u64,
    pub status: String,
    pub heatmap_svg: String,
    pub rows: Vec<IrqRowView>,
    pub history: Vec<String>,
    pub history_svg: String,
    pub model_rows: Vec<ModelRowView>,
    pub model_error: String,
    pub not_modelled: Vec<String>,
    pub mismatches: usize,
    pub permalink: String,
    pub variant: String,
    pub effective: String,
    pub mana_patched: bool,
    pub variants: Vec<(&'static str, bool)>,
    pub effectives: Vec<(&'static str, bool)>,
}

fn fmt_rate(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

fn status_line(st: &HostState) -> String {
    match &st.rates {
        Some(r) => format!(
            "reading {} · device interrupts/s over the last {} ms: {} in all",
            st.seq,
            r.interval_ms,
            fmt_rate(r.per_cpu.values().sum())
        ),
        None => format!("reading {} · baseline (rates from the next reading on)", st.seq),
    }
}

fn heatmap_of(st: &HostState, node: Option<u32>) -> String {
    let values: Vec<(u32, u64)> = match &st.rates {
        Some(r) => r.per_cpu.iter().map(|(&c, &v)| (c, v.round() as u64)).collect(),
        None => Vec::new(),
    };
    svg::value_heatmap(
        &st.topology,
        &values,
        "device interrupts per second per CPU",
        "irq/s",
        node,
    )
}

fn irq_rows(st: &HostState) -> Vec<IrqRowView> {
    let (devices, _) = devices::group_devices(&st.snapshot);
    let mut device_of = vec![String::new(); st.snapshot.irqs.len()];
    for d in &devices {
        for &i in &d.vectors {
            device_of[i] = d.name.clone();
        }
    }
    st.snapshot
        .irqs
        .iter()
        .enumerate()
        .map(|(i, irq): (usize, &WireIrq)| {
            let rate = st.rates.as_ref().and_then(|r| r.per_irq.get(i).copied().flatten());
            IrqRowView {
                label: irq.label.clone(),
                name: irq.name.clone(),
                chip: irq.chip.clone(),
                device: std::mem::take(&mut device_of[i]),
                affinity: irq.affinity.clone().unwrap_or_default(),
                effective: irq.effective.clone().unwrap_or_default(),
                rate: rate.map_or_else(|| "–".into(), fmt_rate),
                rate_key: rate.unwrap_or(-1.0),
            }
        })
        .collect()
}

#[derive(Template)]
#[template(path = "live/rows.html")]
pub struct RowsFragment<'a> {
    pub rows: &'a [IrqRowView],
}

impl HostView {
    fn new(st: &HostState, choice: &ModelChoice, live: bool) -> HostView {
        let comparison: Result<Comparison, String> = devices::compare_with(
            &st.snapshot,
            &devices::ModelOptions {
                variant: choice.variant.clone(),
                effective: choice.effective.clone(),
                mana_patched: choice.mana_patched,
            },
        )
        .map_err(|e| e.to_string());
        let (model_rows, model_error, not_modelled, mismatches, permalink) = match comparison {
            Ok(c) => {
                let link = super::permalink::encode(&c.spec)
                    .ok()
                    .filter(|l| l.len() <= 48 << 10)
                    .unwrap_or_default();
                let rows = c
                    .vectors
                    .iter()
                    .map(|v| ModelRowView {
                        device: v.device.clone(),
                        index: v.index,
                        irq: st.snapshot.irqs[v.irq].label.clone(),
                        name: st.snapshot.irqs[v.irq].name.clone(),
                        predicted_mask: v.predicted_mask.clone(),
                        actual_mask: v.actual_mask.clone(),
                        predicted_cpu: v.predicted_cpu.map_or_else(|| "shut down".into(), |c| c.to_string()),
                        actual_effective: v.actual_effective.clone(),
                        mismatch: !v.cpu_matches || !v.mask_matches,
                    })
                    .collect();
                (rows, String::new(), c.not_modelled.clone(), c.mismatches(), link)
            }
            Err(e) => (Vec::new(), e, Vec::new(), 0, String::new()),
        };
        let history = history_text(st);
        HostView {
            host: st.snapshot.host.clone(),
            live,
            share: String::new(),
            summary: format!(
                "{} · {} IRQ rows · {} CPU columns",
                st.topology.summary(),
                st.snapshot.irqs.len(),
                st.snapshot.cpus.len()
            ),
            seq: st.seq,
            status: status_line(st),
            heatmap_svg: heatmap_of(st, choice.node),
            rows: irq_rows(st),
            history,
            history_svg: history_svg(st),
            model_rows,
            model_error,
            not_modelled,
            mismatches,
            permalink,
            variants: crate::kernel::Variant::ALL
                .iter()
                .map(|v| (v.name(), v.name() == choice.variant))
                .collect(),
            effectives: crate::kernel::vector_matrix::EffectiveModel::ALL
                .iter()
                .map(|e| (e.name(), e.name() == choice.effective))
                .collect(),
            variant: choice.variant.clone(),
            effective: choice.effective.clone(),
            mana_patched: choice.mana_patched,
        }
    }
}

/// The newest [`HISTORY_SHOWN`] samples as text, newest first.
fn history_text(st: &HostState) -> Vec<String> {
    st.history
        .iter()
        .rev()
        .take(HISTORY_SHOWN)
        .map(|s| {
            if s.reset {
                format!("#{} baseline", s.seq)
            } else {
                format!("#{} {} irq/s", s.seq, fmt_rate(s.irqs_per_s))
            }
        })
        .collect()
}

/// The chart of the newest [`HISTORY_CHART_LEN`] samples.
fn history_svg(st: &HostState) -> String {
    let skip = st.history.len().saturating_sub(HISTORY_CHART_LEN);
    let points: Vec<HistoryPoint> = st
        .history
        .iter()
        .skip(skip)
        .map(|s| HistoryPoint {
            seq: s.seq,
            value: (!s.reset).then_some(s.irqs_per_s),
        })
        .collect();
    history_chart(&points, "device interrupts per second, one point per reading", "irq/s")
}

#[derive(Template)]
#[template(path = "live/host.html")]
pub struct HostPage {
    pub title: String,
    pub v: HostView,
}

pub struct HostListEntry {
    pub host: String,
    pub seq: u64,
    pub status: String,
}

#[derive(Template)]
#[template(path = "live/hosts.html")]
pub struct HostsPage {
    pub title: String,
    pub hosts: Vec<HostListEntry>,
    pub ingestion: bool,
}

async fn hosts_page(State(app): State<AppState>) -> Result<Html<String>, AppError> {
    let hosts = app
        .live
        .store()
        .hosts()
        .map(|(h, st)| HostListEntry {
            host: h.clone(),
            seq: st.seq,
            status: status_line(st),
        })
        .collect();
    Ok(Html(
        HostsPage {
            title: "live hosts".into(),
            hosts,
            ingestion: !app.live.inner.tokens.is_empty(),
        }
        .render()?,
    ))
}

fn no_host(host: &str) -> AppError {
    AppError::NotFound(format!(
        "no live host {:?} (agents push to /api/live/HOST/snapshots)",
        crate::live::parse::short(host)
    ))
}

async fn host_page(
    State(app): State<AppState>,
    Path(host): Path<String>,
    Query(q): Query<LiveQuery>,
) -> Result<Html<String>, AppError> {
    let choice = q.choice()?;
    let view = {
        let store = app.live.store();
        let st = store.host(&host).ok_or_else(|| no_host(&host))?;
        HostView::new(st, &choice, true)
    };
    Ok(Html(
        HostPage {
            title: format!("{} · live", view.host),
            v: view,
        }
        .render()?,
    ))
}

async fn host_json(State(app): State<AppState>, Path(host): Path<String>) -> Result<Json<serde_json::Value>, AppError> {
    let store = app.live.store();
    let st = store.host(&host).ok_or_else(|| no_host(&host))?;
    Ok(Json(update_json(st)))
}

/// What an SSE update (and `GET /api/live/{host}`) carries.
fn update_json(st: &HostState) -> serde_json::Value {
    let per_cpu: serde_json::Map<String, serde_json::Value> = st
        .rates
        .as_ref()
        .map(|r| {
            r.per_cpu
                .iter()
                .map(|(c, v)| (c.to_string(), serde_json::json!(v)))
                .collect()
        })
        .unwrap_or_default();
    serde_json::json!({
        "host": st.snapshot.host,
        "seq": st.seq,
        "taken_unix_ms": st.snapshot.taken_unix_ms,
        "interval_ms": st.rates.as_ref().map(|r| r.interval_ms),
        "irqs_per_s": st.rates.as_ref().map(|r| r.per_cpu.values().sum::<f64>()),
        "per_cpu": per_cpu,
        "history": st.history,
    })
}

/// Releases an SSE slot when the stream ends.
struct StreamSlot(LiveState);

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.inner.streams.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The event for `host`'s current state, unless the stream already sent this reading (`sent`
/// is the last `seq` it sent): at most one event per accepted snapshot, and a bounded one (the
/// newest [`HISTORY_CHART_LEN`] history samples, not all of them).
fn sse_event(live: &LiveState, host: &str, sent: Option<u64>) -> Option<(Event, u64)> {
    let store = live.store();
    let st = store.host(host)?;
    if sent == Some(st.seq) {
        return None;
    }
    let mut data = update_json(st);
    let skip = st.history.len().saturating_sub(HISTORY_CHART_LEN);
    data["history"] = serde_json::json!(st.history.iter().skip(skip).collect::<Vec<_>>());
    data["status"] = serde_json::Value::String(status_line(st));
    data["heatmap"] = serde_json::Value::String(heatmap_of(st, None));
    data["history_svg"] = serde_json::Value::String(history_svg(st));
    data["history_text"] = serde_json::json!(history_text(st));
    data["rows"] = serde_json::Value::String(RowsFragment { rows: &irq_rows(st) }.render().unwrap_or_default());
    Some((
        Event::default()
            .event("snapshot")
            .id(st.seq.to_string())
            .data(data.to_string()),
        st.seq,
    ))
}

async fn events(State(app): State<AppState>, Path(host): Path<String>) -> Result<Response, AppError> {
    if !valid_host_name(&host) {
        return Err(no_host(&host));
    }
    let live = app.live.clone();
    if live.inner.streams.fetch_add(1, Ordering::Relaxed) >= SSE_STREAMS_MAX {
        live.inner.streams.fetch_sub(1, Ordering::Relaxed);
        return Ok(refuse(StatusCode::SERVICE_UNAVAILABLE, "too many live streams open"));
    }
    let slot = StreamSlot(live.clone());
    let rx = live.inner.updates.subscribe();
    // Subscribe first, then read the state: a snapshot accepted in between is either in the
    // first event or announced on `rx` (and then skipped by seq if the first event had it).
    let first = sse_event(&live, &host, None);
    let sent = first.as_ref().map(|f| f.1);
    let first = first.map(|f| f.0);
    let stream = futures_util::stream::unfold(
        (rx, first, sent, slot, host),
        |(mut rx, first, sent, slot, host)| async move {
            if let Some(ev) = first {
                return Some((Ok::<_, std::convert::Infallible>(ev), (rx, None, sent, slot, host)));
            }
            loop {
                let wanted = match rx.recv().await {
                    Ok(h) => h == host,
                    // Notices were dropped: this host may have had some. The seq check below
                    // keeps this from repeating a reading already sent.
                    Err(broadcast::error::RecvError::Lagged(_)) => true,
                    Err(broadcast::error::RecvError::Closed) => return None,
                };
                if wanted {
                    if let Some((ev, seq)) = sse_event(&slot.0, &host, sent) {
                        return Some((Ok(ev), (rx, None, Some(seq), slot, host)));
                    }
                }
            }
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()).into_response())
}

#[derive(Debug, Deserialize)]
pub struct ImportForm {
    pub capture: String,
    #[serde(default)]
    pub variant: Option<String>,
    #[serde(default)]
    pub effective: Option<String>,
}

/// Snapshots from an import: a capture file, one snapshot, or a bare `/proc/interrupts`.
fn import_snapshots(text: &str) -> Result<Vec<Snapshot>, AppError> {
    let t = text.trim_start();
    if t.starts_with('{') {
        let v: serde_json::Value =
            serde_json::from_str(t).map_err(|e| AppError::BadInput(format!("bad capture JSON: {e}")))?;
        if v.get("snapshots").is_some() {
            let c: Capture = serde_json::from_value(v).map_err(|e| AppError::BadInput(format!("bad capture: {e}")))?;
            if c.version != PROTOCOL_VERSION {
                return Err(AppError::BadInput(format!(
                    "capture version {} is not supported (this server reads {PROTOCOL_VERSION})",
                    c.version
                )));
            }
            if c.snapshots.is_empty() || c.snapshots.len() > CAPTURE_SNAPSHOTS_MAX {
                return Err(AppError::BadInput(format!(
                    "a capture holds 1 to {CAPTURE_SNAPSHOTS_MAX} snapshots"
                )));
            }
            Ok(c.snapshots)
        } else {
            Ok(vec![
                serde_json::from_value(v).map_err(|e| AppError::BadInput(format!("bad snapshot: {e}")))?
            ])
        }
    } else {
        let parsed = parse_interrupts(text).map_err(|e| AppError::BadInput(e.to_string()))?;
        let irqs = parsed
            .rows
            .into_iter()
            .map(|r| WireIrq {
                label: r.label,
                chip: r.chip,
                hwirq: r.hwirq,
                name: r.name,
                counts: r.counts,
                affinity: None,
                effective: None,
                node: None,
            })
            .collect();
        Ok(vec![Snapshot {
            version: PROTOCOL_VERSION,
            host: "pasted".into(),
            taken_unix_ms: 0,
            boot_id: String::new(),
            topology: topology_from_columns(&parsed.cpus),
            cpus: parsed.cpus,
            irqs,
        }])
    }
}

/// Render a capture as the page shows an import (a scratch store, so rates come out as for a
/// pushed host).
fn import_view(capture: &Capture, choice: &ModelChoice) -> Result<HostView, AppError> {
    let mut store = LiveStore::new();
    let host = capture
        .snapshots
        .first()
        .map(|s| s.host.clone())
        .ok_or_else(|| AppError::BadInput("an empty capture".into()))?;
    for s in capture.snapshots.iter().cloned() {
        store.ingest(&host, s).map_err(|e| AppError::BadInput(e.to_string()))?;
    }
    let st = store
        .host(&host)
        .ok_or_else(|| AppError::Internal("import lost its host".into()))?;
    Ok(HostView::new(st, choice, false))
}

/// Keep an import and answer with its link (303 to `/live/_/import/ID`, the model choice kept).
async fn import(State(app): State<AppState>, Form(form): Form<ImportForm>) -> Result<Response, AppError> {
    let choice = LiveQuery {
        variant: form.variant.clone(),
        effective: form.effective.clone(),
        mana: None,
        node: None,
    }
    .choice()?;
    let snapshots = import_snapshots(&form.capture)?;
    let live = app.live.clone();
    let id = tokio::task::spawn_blocking(move || -> Result<String, AppError> {
        let capture = Capture {
            version: PROTOCOL_VERSION,
            snapshots,
        };
        // Refuse what would not render before keeping it.
        import_view(&capture, &choice)?;
        let bytes = serde_json::to_vec(&capture).map_err(|e| AppError::Internal(e.to_string()))?;
        let kept = live
            .imports()
            .insert(capture, bytes.clone())
            .map_err(|e| AppError::BadInput(e.to_string()))?;
        if let (Some(p), false) = (&live.inner.persist, kept.existed) {
            let order = live.inner.import_order.fetch_add(1, Ordering::Relaxed);
            if let Err(e) = p.save_import(&kept.id, order, &bytes, &kept.evicted) {
                tracing::error!("{e}");
            }
        }
        Ok(kept.id)
    })
    .await
    .map_err(|e| AppError::Internal(e.to_string()))??;
    let mut query = Vec::new();
    for (k, v) in [("variant", &form.variant), ("effective", &form.effective)] {
        if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
            // Both were checked against the known names by `choice()`: plain words.
            query.push(format!("{k}={v}"));
        }
    }
    let mut location = format!("{ACTIONS_PREFIX}/import/{id}");
    if !query.is_empty() {
        location.push('?');
        location.push_str(&query.join("&"));
    }
    Ok((StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response())
}

/// A kept import, by its link.
async fn import_page(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<LiveQuery>,
) -> Result<Html<String>, AppError> {
    let choice = q.choice()?;
    let gone = || {
        AppError::NotFound(format!(
            "no kept import {:?} (the server keeps the last {IMPORTS_MAX}; import the capture again)",
            crate::live::parse::short(&id)
        ))
    };
    if !valid_id(&id) {
        return Err(gone());
    }
    let capture = app
        .live
        .imports()
        .get(&id)
        .map(|i| i.capture.clone())
        .ok_or_else(gone)?;
    let mut view = tokio::task::spawn_blocking(move || import_view(&capture, &choice))
        .await
        .map_err(|e| AppError::Internal(e.to_string()))??;
    view.share = format!("{ACTIONS_PREFIX}/import/{id}");
    Ok(Html(
        HostPage {
            title: format!("{} · imported", view.host),
            v: view,
        }
        .render()?,
    ))
}
