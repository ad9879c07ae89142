//! Live mode over HTTP: authenticated ingestion, the host list, the live page with its SSE
//! stream, live vs model, and importing a capture (or a pasted `/proc/interrupts`).
//!
//! Routes: `POST /api/live/{host}/snapshots` (bearer token, [`SNAPSHOT_BYTES_MAX`] body),
//! `GET /api/live/{host}` (JSON), `GET /live`, `GET /live/{host}`
//! (`?variant=&effective=&mana=&node=`) and its text twin `GET /live/{host}/text`,
//! `GET /live/{host}/events` (SSE). Actions live under
//! [`ACTIONS_PREFIX`] (`POST /live/_/import`), which no host name can take (host names never
//! start with `_`), so `/live/HOST` means the host for every valid name, `import` included.
//! Everything a host sends (host names, IRQ names, chips) is escaped by askama; only
//! `render::svg*` output is `|safe`.
//!
//! Without configured tokens ingestion answers 403: the live path is never open by default.
//!
//! Viewing is open unless viewer tokens are configured (`serve --live-viewer-tokens FILE`,
//! [`LiveState::with_viewer_tokens`]); then every live page, its JSON, its SSE stream and the
//! import (and `/fleet`) need one: `Authorization: Bearer TOKEN`, or the [`VIEWER_COOKIE`] cookie, which a
//! page visit with `?token=TOKEN` sets (answered with a redirect to the same page without the
//! token, so it stays out of the address bar and of `Referer`); 401 with a message otherwise.
//! Ingestion and delete keep their own tokens.

use super::pages::render_page;
use super::work::{Estimate, Work};
use super::{AppError, AppState};
use crate::live::auth::{Tokens, ViewerTokens};
use crate::live::hub::{Clock, EventRenderer, Hub, HubError, HubPolicy, PushKind};
use crate::live::imports::{valid_id, IMPORTS_MAX};
use crate::live::limits::SNAPSHOT_BYTES_MAX;
use crate::live::persist::Persist;
use crate::live::prometheus::PromStatus;
use crate::live::protocol::{valid_host_name, PushBodyError, PROTOCOL_VERSION};
use crate::live::store::IngestError;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, DefaultBodyLimit, FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use futures_util::StreamExt;
use serde::Deserialize;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tower_http::limit::RequestBodyLimitLayer;

mod view;

pub use crate::live::hub::{
    SSE_STREAMS_MAX, SSE_STREAMS_PER_CLIENT_MAX, SSE_STREAMS_PER_HOST_MAX, SSE_STREAM_LIFETIME_MS,
};
use crate::render::view::live::{status_line, update_json};
pub use crate::render::view::live::{HostView, IrqRowView, LiveQuery, ModelRowView, HISTORY_CHART_LEN};
use view::{sse_event_body, HostsPage as Hosts};
pub(crate) use view::{HostListEntry, HostPage, ImportChoice};
/// Path segment under `/live/` that holds actions; host names may not start with `_`.
pub(crate) const ACTIONS_PREFIX: &str = "/live/_";
/// The cookie that carries a viewer token (set by a `?token=` visit).
pub(crate) const VIEWER_COOKIE: &str = "token";
/// Most addresses `serve --live-trusted-proxy` may name.
pub(crate) const TRUSTED_PROXIES_MAX: usize = 16;

/// The live half of [`AppState`]: the hub. Cheap to clone.
#[derive(Clone, Debug)]
pub struct LiveState {
    hub: Arc<Hub>,
    /// Hosts read from a Prometheus (`serve --prometheus`), when configured.
    prometheus: Option<Arc<PromStatus>>,
    /// Who may view live hosts; `None`: anyone.
    viewers: Option<Arc<ViewerTokens>>,
    /// Proxies whose `X-Forwarded-For` names the client (`serve --live-trusted-proxy`).
    trusted_proxies: Arc<[IpAddr]>,
}

impl Default for LiveState {
    fn default() -> Self {
        LiveState::new(Tokens::default(), None)
            .map(|(s, _)| s)
            .unwrap_or_else(|e| unreachable!("no store to read: {e}"))
    }
}

impl LiveState {
    /// Ingestion with `tokens` (empty: disabled), history kept in `persist` when given and
    /// restored from it now. Returns the state and notes about records that were skipped.
    pub fn new(tokens: Tokens, persist: Option<Persist>) -> Result<(LiveState, Vec<String>), String> {
        LiveState::with(tokens, persist, HubPolicy::default(), None)
    }

    /// [`LiveState::new`] with push pacing by `clock` (tests drive time with it).
    pub fn with_clock(
        tokens: Tokens,
        persist: Option<Persist>,
        clock: Clock,
    ) -> Result<(LiveState, Vec<String>), String> {
        LiveState::with(tokens, persist, HubPolicy::default(), Some(clock))
    }

    /// Every knob: the policy, and the pacing clock (`None`: the monotonic clock).
    pub fn with(
        tokens: Tokens,
        persist: Option<Persist>,
        policy: HubPolicy,
        clock: Option<Clock>,
    ) -> Result<(LiveState, Vec<String>), String> {
        let render: EventRenderer = Arc::new(sse_event_body);
        let (hub, notes) = Hub::new(tokens, persist, render).map_err(|e| e.to_string())?;
        let hub = hub.with_policy(policy);
        let hub = match clock {
            Some(c) => hub.with_clock(c),
            None => hub,
        };
        Ok((
            LiveState {
                hub: Arc::new(hub),
                prometheus: None,
                viewers: None,
                trusted_proxies: Arc::from([]),
            },
            notes,
        ))
    }

    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    /// Serve the hosts of a Prometheus too: `status` is what its poller
    /// (`live::prometheus::run`, fed this state's hub) last saw.
    pub fn with_prometheus(mut self, status: Arc<PromStatus>) -> LiveState {
        self.prometheus = Some(status);
        self
    }

    pub(crate) fn prometheus(&self) -> Option<&Arc<PromStatus>> {
        self.prometheus.as_ref()
    }

    /// Take the client address of a request from these proxies from the last
    /// `X-Forwarded-For` entry (the one the proxy added), for the per-client SSE cap and import
    /// budget; from any other peer the header is ignored (a client could write anything there).
    /// At most [`TRUSTED_PROXIES_MAX`].
    pub fn with_trusted_proxies(mut self, proxies: &[IpAddr]) -> Result<LiveState, String> {
        if proxies.len() > TRUSTED_PROXIES_MAX {
            return Err(format!("at most {TRUSTED_PROXIES_MAX} trusted proxies"));
        }
        self.trusted_proxies = Arc::from(proxies);
        Ok(self)
    }

    /// The client a request is counted against: the peer address, or for a trusted proxy the
    /// address it forwarded for (the peer when the header is missing or not an address).
    pub(crate) fn client_of(&self, extensions: &axum::http::Extensions, headers: &HeaderMap) -> Option<IpAddr> {
        let peer = extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(a)| a.ip())?;
        if !self.trusted_proxies.contains(&peer) {
            return Some(peer);
        }
        let forwarded = headers
            .get_all("x-forwarded-for")
            .iter()
            .next_back()
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit(',').next())
            .and_then(|last| last.trim().parse::<IpAddr>().ok());
        Some(forwarded.unwrap_or(peer))
    }

    /// Require one of `tokens` to view live hosts (none: viewing stays open).
    pub fn with_viewer_tokens(mut self, tokens: ViewerTokens) -> LiveState {
        self.viewers = (!tokens.is_empty()).then(|| Arc::new(tokens));
        self
    }

    /// Let a viewer in, or say how to get in. `visit`: a page a browser opens, where
    /// `?token=` is taken, stored in the cookie and dropped from the address by a redirect
    /// (returned as `Ok(Some(response))`).
    pub(crate) fn admit(&self, uri: &Uri, headers: &HeaderMap, visit: bool) -> Result<Option<Response>, AppError> {
        let Some(viewers) = &self.viewers else {
            return Ok(None);
        };
        let query = uri.query().unwrap_or("");
        let in_query = query.split('&').find_map(|kv| kv.strip_prefix("token="));
        if let (true, Some(token)) = (visit, in_query) {
            if !viewers.accepts(token.as_bytes()) {
                return Err(AppError::Unauthorized("unknown viewer token".into()));
            }
            let rest: Vec<&str> = query
                .split('&')
                .filter(|kv| !kv.starts_with("token=") && !kv.is_empty())
                .collect();
            let mut location = uri.path().to_string();
            if !rest.is_empty() {
                location.push('?');
                location.push_str(&rest.join("&"));
            }
            let https = headers
                .get("x-forwarded-proto")
                .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"https"));
            let cookie = format!(
                "{VIEWER_COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax{}",
                if https { "; Secure" } else { "" }
            );
            return Ok(Some(
                (
                    StatusCode::SEE_OTHER,
                    [(header::LOCATION, location), (header::SET_COOKIE, cookie)],
                )
                    .into_response(),
            ));
        }
        match viewer_token(headers) {
            Some(t) if viewers.accepts(t) => Ok(None),
            Some(_) => Err(AppError::Unauthorized("unknown viewer token".into())),
            None => Err(AppError::Unauthorized(
                "viewing live hosts needs a viewer token: open the page once with ?token=TOKEN (a cookie \
                 keeps it) or send Authorization: Bearer TOKEN"
                    .into(),
            )),
        }
    }

    /// The host, or why not: 404 for an unknown host; 503 with the source's message for a
    /// Prometheus host (or an unknown one, which may be one) while Prometheus is not answering.
    /// Pushed hosts are answered as without a Prometheus.
    fn host(&self, host: &str) -> Result<Arc<crate::live::store::HostState>, AppError> {
        let st = self.hub.host(host);
        if let Some(p) = &self.prometheus {
            if st.is_none() || p.has(host) {
                if let Some(problem) = p.problem() {
                    return Err(AppError::Unavailable(problem));
                }
            }
        }
        st.ok_or_else(|| no_host(host))
    }
}

impl From<HubError> for AppError {
    fn from(e: HubError) -> Self {
        let m = e.to_string();
        match e {
            HubError::Disabled | HubError::WrongHost => AppError::Forbidden(m),
            HubError::TokenMissing | HubError::TokenUnknown => AppError::Unauthorized(m),
            HubError::BadHostName | HubError::BadJson(_) | HubError::BadImport(_) => AppError::BadInput(m),
            HubError::Body(PushBodyError::TooLarge(_)) => AppError::TooLarge(m),
            HubError::Body(PushBodyError::Encoding(_)) => AppError::UnsupportedEncoding(m),
            HubError::Body(PushBodyError::Bad(_)) => AppError::BadInput(m),
            HubError::Ingest(IngestError::Bad(_) | IngestError::HostMismatch { .. }) => AppError::BadInput(m),
            HubError::Ingest(IngestError::TooManyHosts | IngestError::QuotaExceeded) => AppError::Conflict(m),
            HubError::NoAdmin | HubError::NotAdmin => AppError::Forbidden(m),
            HubError::NoHost(_) => AppError::NotFound(m),
            HubError::Ingest(IngestError::TooFast { .. }) => AppError::TooManyRequests(m),
            HubError::TooManyStreams => AppError::Unavailable(m),
            HubError::TooManyStreamsFromClient => AppError::TooManyRequests(m),
            HubError::Store(_) | HubError::ImportsBusy => AppError::Unavailable(m),
            HubError::BaseMismatch => AppError::Conflict(m),
            HubError::ImportBudget => AppError::TooManyRequests(m),
        }
    }
}

/// Run blocking hub work (parsing, persisting, rendering, the model) off the async executor.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, AppError> + Send + 'static) -> Result<T, AppError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| AppError::Internal(format!("live task: {e}")))?
}

/// The live routes; merged into `web::app` outside the dashboard's 1 MiB body limit because
/// snapshots of large machines are bigger.
pub(crate) fn routes() -> Router<AppState> {
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
        .route("/live/{host}/text", get(host_text))
        .route("/live/{host}/events", get(events))
        .route("/api/live/{host}", get(host_json).delete(delete_host))
        .route(
            "/api/live/{host}/snapshots",
            post(ingest)
                .layer::<_, std::convert::Infallible>(d2)
                .layer::<_, std::convert::Infallible>(r2),
        )
}

/// A browser's visit to a live page, let in by [`LiveState::admit`] before the handler runs: a
/// `?token=` is answered with the redirect that stores it, a missing or unknown token with
/// the 401. An extractor; put it after the page's other extractors, so that theirs are the
/// errors a bad path or query gets.
pub(crate) struct Visit;

impl FromRequestParts<AppState> for Visit {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Visit, Response> {
        match app.live.admit(&parts.uri, &parts.headers, true) {
            Ok(None) => Ok(Visit),
            Ok(Some(redirect)) => Err(redirect),
            Err(e) => Err(e.into_response()),
        }
    }
}

/// A viewer of a live page's text or JSON twin, let in by [`LiveState::admit`] (the token from
/// the header or the cookie; a `?token=` is not taken). An extractor, as [`Visit`].
pub(crate) struct Viewer;

impl FromRequestParts<AppState> for Viewer {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Viewer, AppError> {
        app.live.admit(&parts.uri, &parts.headers, false)?;
        Ok(Viewer)
    }
}

/// The viewer token presented: `Authorization: Bearer`, else the [`VIEWER_COOKIE`] cookie.
fn viewer_token(headers: &HeaderMap) -> Option<&[u8]> {
    if let Some(t) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
    {
        return Some(t);
    }
    headers
        .get_all(header::COOKIE)
        .iter()
        .flat_map(|v| v.as_bytes().split(|&b| b == b';'))
        .find_map(|c| {
            c.trim_ascii()
                .strip_prefix(VIEWER_COOKIE.as_bytes())?
                .strip_prefix(b"=")
        })
}

/// The token after `Authorization: Bearer `, if one was presented.
fn bearer(headers: &HeaderMap) -> Option<Vec<u8>> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
        .map(<[u8]>::to_vec)
}

async fn ingest(
    State(app): State<AppState>,
    Path(host): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, AppError> {
    let (hub, token) = (app.live.hub.clone(), bearer(&headers));
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap_or("?").to_string());
    let kind = match headers.get(header::CONTENT_TYPE) {
        Some(v) if v.as_bytes() == crate::live::protocol::DELTA_CONTENT_TYPE.as_bytes() => PushKind::Delta,
        _ => PushKind::Snapshot,
    };
    let seq = blocking(move || {
        let (token, encoding) = (token.as_deref(), encoding.as_deref());
        Ok(hub.ingest_push(kind, &host, token, encoding, &body)?)
    })
    .await?;
    Ok(Json(serde_json::json!({ "seq": seq, "version": PROTOCOL_VERSION })).into_response())
}

async fn hosts_page(State(app): State<AppState>, _: Visit) -> Result<Html<String>, AppError> {
    let hosts = app
        .live
        .hub
        .hosts()
        .iter()
        .map(|st| HostListEntry {
            host: st.snapshot.host.clone(),
            seq: st.seq,
            status: status_line(st),
        })
        .collect();
    let page = Hosts {
        title: "live hosts".into(),
        hosts,
        ingestion: app.live.hub.ingestion_enabled(),
        problem: app.live.prometheus.as_ref().and_then(|p| p.problem()),
    };
    Ok(Html(render_page(&page, &app.kernel_c)?))
}

/// `DELETE /api/live/{host}` with an admin token: the host, its history and its record go.
async fn delete_host(
    State(app): State<AppState>,
    Path(host): Path<String>,
    headers: HeaderMap,
) -> Result<StatusCode, AppError> {
    let (hub, token) = (app.live.hub.clone(), bearer(&headers));
    blocking(move || Ok(hub.delete(&host, token.as_deref())?)).await?;
    Ok(StatusCode::NO_CONTENT)
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
    _: Visit,
) -> Result<Html<String>, AppError> {
    let kernel_c = app.kernel_c.clone();
    let page = host_view(&app, &host, &q, move |v| {
        let title = format!("{} · live", v.host);
        Ok(render_page(&HostPage { title, v }, &kernel_c)?)
    })
    .await?;
    Ok(Html(page))
}

/// The live page's text twin: the host, its reading and the model comparison in words.
async fn host_text(
    State(app): State<AppState>,
    Path(host): Path<String>,
    Query(q): Query<LiveQuery>,
    _: Viewer,
) -> Result<Response, AppError> {
    let text = host_view(&app, &host, &q, |v| Ok(v.text_report())).await?;
    Ok(super::text(text))
}

/// The live view of `host` with the model choice `q` names, built on a blocking thread, and
/// what `answer` makes of it (the page or its text twin).
async fn host_view<T: Send + 'static>(
    app: &AppState,
    host: &str,
    q: &LiveQuery,
    answer: impl FnOnce(HostView) -> Result<T, AppError> + Send + 'static,
) -> Result<T, AppError> {
    let choice = q.choice()?;
    let st = app.live.host(host)?;
    blocking(move || answer(HostView::new(&st, &choice, true))).await
}

async fn host_json(
    State(app): State<AppState>,
    Path(host): Path<String>,
    _: Viewer,
) -> Result<Json<serde_json::Value>, AppError> {
    let st = app.live.host(&host)?;
    Ok(Json(update_json(&st)))
}

fn snapshot_event(seq: u64, body: &str) -> Event {
    Event::default().event("snapshot").id(seq.to_string()).data(body)
}

/// The host's SSE stream ([`crate::live::hub::Hub::stream`]) as server-sent events, for at
/// most [`SSE_STREAM_LIFETIME_MS`]: then it ends and `EventSource` reconnects.
async fn events(
    State(app): State<AppState>,
    Path(host): Path<String>,
    headers: HeaderMap,
    extensions: axum::http::Extensions,
    _: Viewer,
) -> Result<Response, AppError> {
    if !valid_host_name(&host) {
        return Err(no_host(&host));
    }
    let client = app.live.client_of(&extensions, &headers);
    let updates = app.live.hub.stream(&host, client).await.map_err(|e| match e {
        HubError::NoHost(_) => no_host(&host),
        e => e.into(),
    })?;
    let end = tokio::time::sleep(Duration::from_millis(SSE_STREAM_LIFETIME_MS));
    let events = updates
        .map(|(seq, body)| Ok::<_, std::convert::Infallible>(snapshot_event(seq, &body)))
        .take_until(end);
    Ok(Sse::new(events).keep_alive(KeepAlive::default()).into_response())
}

#[derive(Debug, Deserialize)]
pub(crate) struct ImportForm {
    pub(crate) capture: String,
    #[serde(default)]
    pub(crate) variant: Option<String>,
    #[serde(default)]
    pub(crate) effective: Option<String>,
}

/// Keep an import and answer with its link (303 to `/live/_/import/ID`, the model choice kept).
/// Unauthenticated, so each client address has a budget ([`crate::live::hub::IMPORTS_PER_CLIENT_MAX`]
/// imports and bytes per window) and the work runs on a blocking thread, a few at a time.
async fn import(
    State(app): State<AppState>,
    work: Work,
    uri: Uri,
    headers: HeaderMap,
    extensions: axum::http::Extensions,
    Form(form): Form<ImportForm>,
) -> Result<Response, AppError> {
    app.live.admit(&uri, &headers, false)?;
    let choice = ImportChoice::new(form.variant.as_deref(), form.effective.as_deref())?;
    let hub = app.live.hub.clone();
    hub.charge_import(app.live.client_of(&extensions, &headers), form.capture.len())?;
    let slot = hub.import_slot()?;
    let estimate = Estimate::import(form.capture.len());
    let id = work
        .run_blocking(estimate, move |_| {
            let _slot = slot;
            Ok(hub.import(&form.capture)?)
        })
        .await?;
    Ok((StatusCode::SEE_OTHER, [(header::LOCATION, choice.location(&id))]).into_response())
}

/// A kept import, by its link.
async fn import_page(
    State(app): State<AppState>,
    work: Work,
    Path(id): Path<String>,
    Query(q): Query<LiveQuery>,
    _: Visit,
) -> Result<Html<String>, AppError> {
    let choice = q.choice()?;
    let gone = || {
        AppError::NotFound(format!(
            "no kept import {:?} (the server keeps the last {IMPORTS_MAX}; import the capture again)",
            crate::live::parse::short(&id)
        ))
    };
    let capture = valid_id(&id)
        .then(|| app.live.hub.import_capture(&id))
        .flatten()
        .ok_or_else(gone)?;
    let hub = app.live.hub.clone();
    let kernel_c = app.kernel_c.clone();
    let slot = hub.import_slot()?;
    let page = work
        .run_blocking(Estimate::replay(&capture), move |_| {
            let _slot = slot;
            let st = hub.replay_import(&capture)?;
            let mut v = HostView::new(&st, &choice, false);
            v.share = format!("{ACTIONS_PREFIX}/import/{id}");
            let title = format!("{} · imported", v.host);
            Ok(render_page(&HostPage { title, v }, &kernel_c)?)
        })
        .await?;
    Ok(Html(page))
}
