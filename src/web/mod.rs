//! The dashboard: `app(state) -> Router`, thin handlers, askama pages, one [`AppError`].
//!
//! Handlers route and do three things: decode the input (query, permalink or JSON body), make
//! one call into `render::view` (which resolves, runs and builds the page's view as data, the
//! same resolve and run the CLI calls), and fill a template ([`pages`]). No placement math and
//! no kernel model is reached from here but through `render::view`; nothing below this module
//! imports it.
//!
//! Routes (see `docs/http-api.md`): `/`, `/s/{p}`, `/s/{p}/text`, `/s/{p}/json`, `/compare`,
//! `/c/{p}` (+ `/text`, `/json`), `/mana`, `/m/{p}` (+ `/text`, `/json`), `/sched`, `/n/{p}`
//! (+ `/text`, `/json`), `/sweep` (+ `/text`, `/csv`, `/json`), `/blkmq` (+ `/text`, `/json`),
//! `/seeds` (+ `/text`, `/json`), `/fleet` (+ `/text`, `/json`), `/r/{id}` (+ `/text`,
//! `/json`), `/review` and `POST /review`, `/review/job/{id}` (+ `/json`, `/events`), `POST /fragment`,
//! `POST /api/simulate`, `GET /api/topologies`, `GET /api/topologies/{name}`, `/static/*`,
//! `/favicon.ico`. Errors are one `text/plain` line, or an HTML page for `Accept: text/html`.

/// The four handlers of a page whose spec travels in its permalink and whose view takes one
/// detail choice from the query (MANA's `driver`, sched's `variant`): the form query, the
/// permalink page and its text and JSON twins. Each decodes its input, makes one call into
/// `render::view` and fills the template.
macro_rules! shown_page_handlers {
    (
        $query_fn:ident, $page_fn:ident, $text_fn:ident, $json_fn:ident;
        $Query:ty, $Detail:ty, $Spec:ty, $Shown:ident, $View:ident, $Page:ident;
        $parse:ident($field:ident)
    ) => {
        pub(crate) async fn $query_fn(
            State(state): State<AppState>,
            Query(q): Query<$Query>,
            headers: HeaderMap,
        ) -> Result<Html<String>, AppError> {
            let shown = $Shown::new(q.spec()?)?;
            let view = $View::new(&shown, $parse(q.$field.as_deref())?, &origin(&headers));
            Ok(Html(render_page(&$Page::from(view), &state.kernel_c)?))
        }

        pub(crate) async fn $page_fn(
            State(state): State<AppState>,
            Path(link): Path<String>,
            Query(v): Query<$Detail>,
            headers: HeaderMap,
        ) -> Result<Html<String>, AppError> {
            let shown = $Shown::new(permalink::decode::<$Spec>(&link)?)?;
            let view = $View::new(&shown, $parse(v.$field.as_deref())?, &origin(&headers));
            Ok(Html(render_page(&$Page::from(view), &state.kernel_c)?))
        }

        pub(crate) async fn $text_fn(Path(link): Path<String>, headers: HeaderMap) -> Result<Response, AppError> {
            let shown = $Shown::new(permalink::decode::<$Spec>(&link)?)?;
            Ok(text(shown.text_report(&origin(&headers))))
        }

        pub(crate) async fn $json_fn(Path(link): Path<String>) -> Result<Json<serde_json::Value>, AppError> {
            Ok(Json($Shown::new(permalink::decode::<$Spec>(&link)?)?.json()))
        }
    };
}

mod blkmq;
pub(crate) mod cache;
mod fleet;
pub mod kernel_c;
pub mod live;
mod mana;
mod pages;
mod review;
pub mod review_queue;
mod sched;
mod seeds;
pub mod server;
mod sweep;
pub mod work;

use crate::catalogue;
use crate::render::view::compare::{CompareQuery, CompareRun, CompareView};
use crate::render::view::scenario::{IndexQuery, ResultView, Run, ScenarioView, View, ViewQuery};
use crate::render::view::ViewError;
use crate::scenario::payloads::CompareSpec;
use crate::scenario::permalink::{self, PermalinkError};
use crate::scenario::spec::ScenarioSpec;
use crate::scenario::ScenarioError;
use askama::Template;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use pages::{render_page, ComparePage, ResultFragment, ScenarioPage};
use tower_http::compression::CompressionLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;
use work::Work;

/// Largest request body accepted (JSON scenarios, inline topologies included).
pub(crate) const BODY_BYTES_MAX: usize = 1 << 20;
/// Longest a request may take before it is answered 408.
pub const REQUEST_TIMEOUT_MS: u64 = 20_000;
/// Pages load scripts, styles and data only from this origin; SVG is inline markup.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// What the handlers share. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct AppState {
    /// Live mode: the host store, ingestion tokens, SSE updates.
    pub live: live::LiveState,
    /// Built C the server was started with (`serve --kernel-c`); empty by default.
    pub kernel_c: kernel_c::KernelCRegistry,
    /// Where `/r/<id>` finds reviews (`serve --review-dir`, written by `review --out`).
    pub review_dir: Option<std::sync::Arc<std::path::PathBuf>>,
    /// `serve --review`: the queue pasted patches are reviewed from (`None`: `/review` is 404).
    pub review_queue: Option<review_queue::ReviewQueue>,
}

/// The whole dashboard as a router; tests drive it with `oneshot`, `main` binds it to a port
/// (`server::serve`). Build it once and clone it: clones share the permalink cache and the
/// heavy-request slots. The serving policy's defaults (`work::Policy`).
pub fn app(state: AppState) -> Router {
    app_with(state, work::Policy::default())
}

/// `$router` with each page's route and its text and JSON twins (`PATH/text`, `PATH/json`).
macro_rules! with_twins {
    ($router:expr, $($path:literal => $page:path, $text:path, $json:path;)*) => {
        $router$(
            .route($path, get($page))
            .route(concat!($path, "/text"), get($text))
            .route(concat!($path, "/json"), get($json))
        )*
    };
}

/// [`app`] with a serving policy: what one request may cost and how long it may take
/// (`serve --request-cpu-ms`, `--request-timeout-ms`).
pub fn app_with(state: AppState, policy: work::Policy) -> Router {
    // Permalink pages and their twins: immutable content behind one bounded cache (the
    // outermost layer, `cache::immutable`).
    let permalinks = with_twins!(Router::new(),
        "/s/{link}" => scenario_page, scenario_text, scenario_json;
        "/c/{link}" => compare_page, compare_text, compare_json;
        "/m/{link}" => mana::mana_page, mana::mana_text, mana::mana_json;
        "/n/{link}" => sched::sched_page, sched::sched_text, sched::sched_json;
        "/r/{id}" => review::review_page, review::review_text, review::review_json;
    );
    let pages = with_twins!(Router::new(),
        "/fleet" => fleet::fleet_page, fleet::fleet_text, fleet::fleet_json;
        "/blkmq" => blkmq::blkmq_page, blkmq::blkmq_text, blkmq::blkmq_json;
        "/seeds" => seeds::seeds_page, seeds::seeds_text, seeds::seeds_json;
    );
    pages
        .route("/", get(index))
        .merge(permalinks)
        .route("/compare", get(compare_query))
        .route("/kernel-c", get(kernel_c::kernel_c_page))
        .merge(review::queue_routes())
        .route("/mana", get(mana::mana_query))
        .route("/sched", get(sched::sched_query))
        .route("/fragment", post(fragment))
        .route("/api/simulate", post(api_simulate))
        .route("/sweep", get(sweep::sweep_page))
        .route("/sweep/text", get(sweep::sweep_text))
        .route("/sweep/csv", get(sweep::sweep_csv))
        .route("/sweep/json", get(sweep::sweep_json))
        .route("/api/topologies", get(api_topologies))
        .route("/api/topologies/{name}", get(api_topology))
        .route("/static/{file}", get(cache::static_asset))
        .route("/favicon.ico", get(favicon))
        .layer(DefaultBodyLimit::max(BODY_BYTES_MAX))
        .layer(RequestBodyLimitLayer::new(BODY_BYTES_MAX))
        // Live routes set their own (larger) snapshot body limit.
        .merge(live::routes())
        .fallback(not_found)
        .with_state(state)
        .layer(axum::middleware::from_fn(html_errors))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        // Skips answers that carry their own encoding (permalinks, static files).
        .layer(CompressionLayer::new())
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            policy.request_timeout,
        ))
        .layer(axum::Extension(work::Serving::new(policy)))
        .layer(axum::middleware::map_request(
            |req: axum::extract::Request| async move { devices_plus_is_literal(req) },
        ))
        .layer(TraceLayer::new_for_http())
        // Outermost: a permalink opened again is answered before any layer above runs.
        .layer(axum::middleware::from_fn_with_state(
            cache::PermalinkCache::default(),
            cache::immutable,
        ))
}

/// The one error type at the HTTP edge. Bad input gets its message and a 4xx; internal
/// failures are logged and answered with a generic 500.
#[derive(Debug)]
pub(crate) enum AppError {
    BadInput(String),
    NotFound(String),
    Internal(String),
    /// 401 with `WWW-Authenticate: Bearer`: no credential, or an unknown one.
    Unauthorized(String),
    /// 403: a known credential that may not do this, or an action that is switched off.
    Forbidden(String),
    /// 409: the request conflicts with what the server keeps (a full table).
    Conflict(String),
    /// 429: too many requests from this client or for this resource.
    TooManyRequests(String),
    /// 503: the server cannot take this now (a full slot table, a failing store).
    Unavailable(String),
    /// 413: a body larger than its limit (after decompression).
    TooLarge(String),
    /// 415: a `Content-Encoding` the server does not read.
    UnsupportedEncoding(String),
    /// 422: well-formed, but more work than one request may cost (`work::Estimate`).
    TooMuchWork(String),
    /// 503 with `Retry-After`: the server runs as many heavy requests as it takes.
    Busy {
        message: String,
        retry_after_s: u64,
    },
    /// 408: the work stopped at the request's deadline.
    Timeout(String),
}

/// The realm named in `WWW-Authenticate` on a 401.
pub(crate) const BEARER_CHALLENGE: &str = "Bearer realm=\"irqscope-live\"";

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let mut retry_after = None;
        let (status, message) = match self {
            AppError::BadInput(m) => (StatusCode::BAD_REQUEST, m),
            AppError::NotFound(m) => (StatusCode::NOT_FOUND, m),
            AppError::Internal(m) => {
                tracing::error!("internal error: {m}");
                (StatusCode::INTERNAL_SERVER_ERROR, "internal error".to_string())
            }
            AppError::Unauthorized(m) => (StatusCode::UNAUTHORIZED, m),
            AppError::Forbidden(m) => (StatusCode::FORBIDDEN, m),
            AppError::Conflict(m) => (StatusCode::CONFLICT, m),
            AppError::TooManyRequests(m) => (StatusCode::TOO_MANY_REQUESTS, m),
            AppError::Unavailable(m) => (StatusCode::SERVICE_UNAVAILABLE, m),
            AppError::TooLarge(m) => (StatusCode::PAYLOAD_TOO_LARGE, m),
            AppError::UnsupportedEncoding(m) => (StatusCode::UNSUPPORTED_MEDIA_TYPE, m),
            AppError::TooMuchWork(m) => (StatusCode::UNPROCESSABLE_ENTITY, m),
            AppError::Busy { message, retry_after_s } => {
                retry_after = Some(retry_after_s);
                (StatusCode::SERVICE_UNAVAILABLE, message)
            }
            AppError::Timeout(m) => (StatusCode::REQUEST_TIMEOUT, m),
        };
        let mut response = (
            status,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("{message}\n"),
        )
            .into_response();
        // Kept for [`html_errors`], which turns it into a page for a browser.
        response.extensions_mut().insert(ErrorText(message));
        if let Some(s) = retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(BEARER_CHALLENGE));
        }
        response
    }
}

/// The message of an [`AppError`] answer, carried beside its text body.
#[derive(Debug, Clone)]
struct ErrorText(String);

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage {
    title: String,
    status: String,
    message: String,
}

/// Does the client ask for a page (`Accept: text/html`, as browsers do)? `curl` and the
/// agent send `*/*` or nothing and keep the one-line text.
fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.split(';').next().map(str::trim) == Some("text/html"))
}

/// Error answers as an HTML page for a browser, the same status and message (escaped by the
/// template); everyone else keeps the `text/plain` line. Headers such as `WWW-Authenticate`
/// stay.
async fn html_errors(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let html = wants_html(req.headers());
    let mut response = next.run(req).await;
    if !html {
        return response;
    }
    let Some(ErrorText(message)) = response.extensions_mut().remove::<ErrorText>() else {
        return response;
    };
    let status = response.status();
    let page = ErrorPage {
        title: format!("{} {}", status.as_u16(), status.canonical_reason().unwrap_or("error")),
        status: format!("{} {}", status.as_u16(), status.canonical_reason().unwrap_or("error")),
        message,
    };
    let Ok(body) = page.render() else {
        return response;
    };
    let (mut parts, _) = response.into_parts();
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(body))
}

/// `/favicon.ico`, asked for by browsers on pages that name no icon (the SVG icon).
async fn favicon(headers: HeaderMap) -> Response {
    cache::static_asset(Path("favicon.svg".to_string()), headers).await
}

impl From<ScenarioError> for AppError {
    fn from(e: ScenarioError) -> Self {
        AppError::BadInput(e.0)
    }
}
impl From<ViewError> for AppError {
    fn from(e: ViewError) -> Self {
        match e {
            ViewError::BadInput(m) => AppError::BadInput(m),
            ViewError::NotFound(m) => AppError::NotFound(m),
            ViewError::Internal(m) => AppError::Internal(m),
        }
    }
}
impl From<PermalinkError> for AppError {
    fn from(e: PermalinkError) -> Self {
        AppError::BadInput(e.to_string())
    }
}
impl From<askama::Error> for AppError {
    fn from(e: askama::Error) -> Self {
        AppError::Internal(format!("template: {e}"))
    }
}

fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, AppError> {
    serde_json::from_slice(body).map_err(|e| AppError::BadInput(format!("bad JSON: {e}")))
}

/// `http://host` from the request, for absolute permalinks in the text twins.
fn origin(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1:8080");
    let host: String = host
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "-.:[]".contains(*c))
        .take(255)
        .collect();
    format!("http://{host}")
}

/// A scenario run within the request's budget and deadline (`work`): estimated from the spec
/// first, inline when light, on a blocking thread in a heavy slot otherwise.
async fn run_scenario(work: Work, kernel_c: &kernel_c::KernelCRegistry, spec: ScenarioSpec) -> Result<Run, AppError> {
    let kernel_c = kernel_c.clone();
    work.run(work::Estimate::scenario(&spec), move |_| Ok(Run::new(spec, &kernel_c)?))
        .await
}

/// Both sides of a comparison, as [`run_scenario`].
async fn run_compare(
    work: Work,
    kernel_c: &kernel_c::KernelCRegistry,
    spec: CompareSpec,
) -> Result<CompareRun, AppError> {
    let kernel_c = kernel_c.clone();
    work.run(work::Estimate::compare(&spec), move |_| {
        Ok(CompareRun::new(spec, &kernel_c)?)
    })
    .await
}

fn text(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response()
}

/// The handlers of a run whose spec travels in its permalink (`/` with `/s/LINK`, `/compare`
/// with `/c/LINK`): the form query, the permalink page and its text and JSON twins. Each
/// decodes its input, runs it within the request's budget (`$run`), builds the view and fills
/// the template: `$query_view` from the run and the form, `$link_view` from the run and the
/// permalink page's `ViewQuery`.
macro_rules! run_handlers {
    (
        $query_fn:ident, $page_fn:ident, $text_fn:ident, $json_fn:ident;
        $Query:ty, $Spec:ty, $run:ident, $Page:ident;
        $query_view:expr, $link_view:expr
    ) => {
        async fn $query_fn(
            work: Work,
            State(state): State<AppState>,
            Query(q): Query<$Query>,
            headers: HeaderMap,
        ) -> Result<Html<String>, AppError> {
            let run = $run(work, &state.kernel_c, q.spec()?).await?;
            let view = $query_view(run, &q, &origin(&headers))?;
            Ok(Html(render_page(&$Page::from(view), &state.kernel_c)?))
        }

        async fn $page_fn(
            work: Work,
            State(state): State<AppState>,
            Path(link): Path<String>,
            Query(v): Query<ViewQuery>,
            headers: HeaderMap,
        ) -> Result<Html<String>, AppError> {
            let run = $run(work, &state.kernel_c, permalink::decode::<$Spec>(&link)?).await?;
            let view = $link_view(&run, &v.parse()?, &origin(&headers))?;
            Ok(Html(render_page(&$Page::from(view), &state.kernel_c)?))
        }

        async fn $text_fn(
            work: Work,
            State(state): State<AppState>,
            Path(link): Path<String>,
            headers: HeaderMap,
        ) -> Result<Response, AppError> {
            let run = $run(work, &state.kernel_c, permalink::decode::<$Spec>(&link)?).await?;
            Ok(text(run.text_report(&origin(&headers))))
        }

        async fn $json_fn(
            work: Work,
            State(state): State<AppState>,
            Path(link): Path<String>,
        ) -> Result<Json<serde_json::Value>, AppError> {
            let run = $run(work, &state.kernel_c, permalink::decode::<$Spec>(&link)?).await?;
            Ok(Json(run.json()))
        }
    };
}

run_handlers!(
    index, scenario_page, scenario_text, scenario_json;
    IndexQuery, ScenarioSpec, run_scenario, ScenarioPage;
    |mut run: Run, q: &IndexQuery, origin: &str| -> Result<ScenarioView, AppError> {
        run.effective_named = q.models.effective.is_some();
        Ok(ScenarioView::new(&run, &q.view()?, origin, true))
    },
    |run: &Run, v: &View, origin: &str| -> Result<ScenarioView, AppError> {
        Ok(ScenarioView::new(run, v, origin, false))
    }
);
run_handlers!(
    compare_query, compare_page, compare_text, compare_json;
    CompareQuery, CompareSpec, run_compare, ComparePage;
    |run: CompareRun, q: &CompareQuery, origin: &str| -> Result<CompareView, AppError> {
        Ok(CompareView::with_scale(&run, &q.view()?, origin, q.scale()?)?)
    },
    |run: &CompareRun, v: &View, origin: &str| -> Result<CompareView, AppError> {
        Ok(CompareView::new(run, v, origin)?)
    }
);

async fn fragment(
    work: Work,
    State(state): State<AppState>,
    Query(v): Query<ViewQuery>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, AppError> {
    let run = run_scenario(work, &state.kernel_c, parse_json::<ScenarioSpec>(&body)?).await?;
    let html = ResultFragment {
        r: ResultView::new(&run, &v.parse()?, &origin(&headers)),
    }
    .render()?;
    let link = HeaderValue::from_str(&run.permalink).map_err(|e| AppError::Internal(e.to_string()))?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            ),
            (header::HeaderName::from_static("x-permalink"), link),
        ],
        html,
    )
        .into_response())
}

async fn api_simulate(
    work: Work,
    State(state): State<AppState>,
    body: Bytes,
) -> Result<Json<serde_json::Value>, AppError> {
    let run = run_scenario(work, &state.kernel_c, parse_json::<ScenarioSpec>(&body)?).await?;
    Ok(Json(run.json()))
}

async fn api_topologies() -> Json<serde_json::Value> {
    let list: Vec<serde_json::Value> = catalogue::all()
        .filter_map(|(name, t)| t.as_ref().ok().map(|t| (name, t)))
        .map(|(name, t)| serde_json::json!({"name": name, "title": t.name(), "summary": t.summary()}))
        .collect();
    Json(serde_json::Value::Array(list))
}

async fn api_topology(Path(name): Path<String>) -> Result<Json<crate::topology::TopologySpec>, AppError> {
    let t = catalogue::get(&name).ok_or_else(|| AppError::NotFound(format!("no topology preset {name:?}")))?;
    Ok(Json(t.to_spec()))
}

/// Query parameters holding device tokens: `devices` (`/`, `/compare`) and `mixes`
/// (`/sweep`), where a `+` is part of a token.
pub(crate) const PLUS_LITERAL_PARAMS: [&str; 2] = ["devices=", "mixes="];

/// The device-token query parameters ([`PLUS_LITERAL_PARAMS`]) keep `+` literal. Their tokens
/// use `+` themselves (`sets=4+2`) and are separated by spaces (`%20`), so the form decoding
/// the `Query` extractor applies (`+` is a space) would silently split `6x62:sets=4+2` into a
/// second device `2`. Rewriting a raw `+` in those parameters to `%2B` before any extractor
/// runs fixes it for every route that reads them; every other parameter decodes as before.
fn devices_plus_is_literal<B>(mut req: axum::http::Request<B>) -> axum::http::Request<B> {
    let Some(query) = req.uri().query() else {
        return req;
    };
    let touches = |pair: &str| PLUS_LITERAL_PARAMS.iter().any(|p| pair.starts_with(p)) && pair.contains('+');
    if !query.split('&').any(touches) {
        return req;
    }
    let rewritten: Vec<String> = query
        .split('&')
        .map(|pair| {
            if touches(pair) {
                pair.replace('+', "%2B")
            } else {
                pair.to_string()
            }
        })
        .collect();
    let path_and_query = format!("{}?{}", req.uri().path(), rewritten.join("&"));
    let mut parts = req.uri().clone().into_parts();
    if let Ok(pq) = path_and_query.parse() {
        parts.path_and_query = Some(pq);
        if let Ok(uri) = axum::http::Uri::from_parts(parts) {
            *req.uri_mut() = uri;
        }
    }
    req
}

async fn not_found() -> AppError {
    AppError::NotFound("no such page".into())
}
