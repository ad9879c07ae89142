//! `/r/<id>` and its twins: reviews made on the command line (`irqscope review --out DIR`),
//! served from DIR (`serve --review-dir DIR`). Immutable: the permalink cache keeps them like
//! `/s/` links. The file is read here; `render::view::review` checks it is the review named.

use super::pages::render_page;
use super::{text, AppError, AppState};
use crate::render::view::review::{parse, valid_id, ReviewView, FILE_BYTES_MAX};
use askama::Template;
use axum::extract::{Path, State};
use axum::response::{Html, Response};
use std::io::Read;

#[derive(Template)]
#[template(path = "review.html")]
struct ReviewPage {
    title: String,
    v: ReviewView,
}

fn load(state: &AppState, id: &str) -> Result<crate::render::review::Review, AppError> {
    let Some(dir) = &state.review_dir else {
        return Err(AppError::NotFound(
            "this server serves no reviews (irqscope serve --review-dir DIR)".into(),
        ));
    };
    if !valid_id(id) {
        return Err(AppError::BadInput(format!(
            "review id {:?}: 16 hexadecimal digits",
            id.chars().take(40).collect::<String>()
        )));
    }
    let path = dir.join(format!("{id}.json"));
    let file = std::fs::File::open(&path).map_err(|_| AppError::NotFound(format!("no review {id} here")))?;
    let mut bytes = Vec::new();
    file.take(FILE_BYTES_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| AppError::BadInput(format!("review {id}: {e}")))?;
    if bytes.len() as u64 > FILE_BYTES_MAX {
        return Err(AppError::BadInput(format!(
            "review {id}: its file is larger than {FILE_BYTES_MAX} bytes"
        )));
    }
    Ok(parse(id, &bytes)?)
}

/// `/r/<id>`: the page.
pub(crate) async fn review_page(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Html<String>, AppError> {
    let r = load(&state, &id)?;
    let page = ReviewPage {
        title: format!("review {}", r.id),
        v: ReviewView::new(&r),
    };
    Ok(Html(render_page(&page, &state.kernel_c)?))
}

/// `/r/<id>/text`: the mail reply.
pub(crate) async fn review_text(State(state): State<AppState>, Path(id): Path<String>) -> Result<Response, AppError> {
    Ok(text(crate::render::review::text(&load(&state, &id)?)))
}

/// `/r/<id>/json`: the review as data.
pub(crate) async fn review_json(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<axum::Json<crate::render::review::Review>, AppError> {
    Ok(axum::Json(load(&state, &id)?))
}

// --- `serve --review`: the paste page, the queue's jobs ---

use super::review_queue::{JobState, JobStatus, Refused, ReviewQueue, PATCH_BYTES_MAX};
use axum::extract::{FromRequest, Request};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::IntoResponse;

/// `/review` and its jobs (`serve --review`; 404 without it).
pub(crate) fn queue_routes() -> axum::Router<AppState> {
    use axum::routing::get;
    axum::Router::new()
        .route("/review", get(submit_page).post(submit))
        .route("/review/job/{id}", get(job_page))
        .route("/review/job/{id}/json", get(job_json))
        .route("/review/job/{id}/events", get(job_events))
}

fn queue(state: &AppState) -> Result<&ReviewQueue, AppError> {
    state
        .review_queue
        .as_ref()
        .ok_or_else(|| AppError::NotFound("this server takes no reviews (irqscope serve --review)".into()))
}

#[derive(Template)]
#[template(path = "review_submit.html")]
struct SubmitPage {
    title: String,
    base: String,
    patch_kib: usize,
    per_client: usize,
    queue_max: usize,
    seconds: u64,
    queued: usize,
    running: usize,
}

/// `GET /review`: where a patch is pasted.
pub(crate) async fn submit_page(State(state): State<AppState>) -> Result<Html<String>, AppError> {
    let q = queue(&state)?;
    let c = q.config();
    let (queued, running) = q.counts();
    let page = SubmitPage {
        title: "review a patch".into(),
        base: c
            .base
            .clone()
            .unwrap_or_else(|| "the newest Debian linux-source it applies to".into()),
        patch_kib: PATCH_BYTES_MAX >> 10,
        per_client: c.per_client_max,
        queue_max: c.queue_max,
        seconds: c.deadline.as_secs(),
        queued,
        running,
    };
    Ok(Html(render_page(&page, &state.kernel_c)?))
}

#[derive(serde::Deserialize)]
struct PatchForm {
    patch: String,
}

/// `POST /review`: the page's form (`patch=`), or the patch itself as the body (`curl
/// --data-binary @PATCH`). Queued: 303 to the job's page.
pub(crate) async fn submit(State(state): State<AppState>, req: Request) -> Result<Response, AppError> {
    let q = queue(&state)?.clone();
    let client = state
        .live
        .client_of(req.extensions(), req.headers())
        .map_or(std::net::IpAddr::from([0, 0, 0, 0]), super::server::share_key);
    let form = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    let body = axum::body::Bytes::from_request(req, &state)
        .await
        .map_err(|e| AppError::BadInput(format!("the patch: {}", e.body_text())))?;
    // The page's form sends `patch=...`; `curl --data-binary @PATCH` sends the patch itself,
    // labelled as a form all the same.
    let patch: Vec<u8> = if form && body.starts_with(b"patch=") {
        let req = axum::http::Request::builder()
            .method("POST")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(axum::body::Body::from(body))
            .map_err(|e| AppError::Internal(e.to_string()))?;
        let axum::Form(f) = axum::Form::<PatchForm>::from_request(req, &state)
            .await
            .map_err(|e| AppError::BadInput(format!("the form: {}", e.body_text())))?;
        f.patch.replace("\r\n", "\n").into_bytes()
    } else {
        body.to_vec()
    };
    let id = q.submit(client, &patch).map_err(|r| match r {
        Refused::BadPatch(m) => AppError::BadInput(m),
        Refused::TooLarge(m) => AppError::TooLarge(m),
        Refused::ClientFull(m) => AppError::TooManyRequests(m),
        Refused::QueueFull(m) => AppError::Busy {
            message: m,
            retry_after_s: 30,
        },
    })?;
    let to = format!("/review/job/{id}");
    Ok((
        StatusCode::SEE_OTHER,
        [(header::LOCATION, to.clone())],
        format!("queued: {to}\n"),
    )
        .into_response())
}

fn job(state: &AppState, id: &str) -> Result<tokio::sync::watch::Receiver<JobStatus>, AppError> {
    let q = queue(state)?;
    if !valid_id(id) {
        return Err(AppError::BadInput(format!(
            "review job {:?}: 16 hexadecimal digits",
            id.chars().take(40).collect::<String>()
        )));
    }
    q.watch(id).ok_or_else(|| {
        AppError::NotFound(format!(
            "no review job {id} here (the server keeps the last jobs only; a finished review stays at /r/<id>)"
        ))
    })
}

/// How a job's page says where it is (the page's script writes the same words).
fn state_line(s: &JobState) -> String {
    match s {
        JobState::Queued { ahead: 0 } => "Queued: yours is next.".into(),
        JobState::Queued { ahead: 1 } => "Queued: 1 review ahead of yours.".into(),
        JobState::Queued { ahead } => format!("Queued: {ahead} reviews ahead of yours."),
        JobState::Running {
            step,
            done: Some(d),
            of: Some(o),
        } => format!("Running: {step}, {d} of {o}."),
        JobState::Running { step, .. } => format!("Running: {step}."),
        JobState::Done { review } => format!("Done: review {review}."),
        JobState::Failed { .. } => "The review failed:".into(),
    }
}

#[derive(Template)]
#[template(path = "review_job.html")]
struct JobPage {
    title: String,
    s: JobStatus,
    line: String,
    bar: Option<(u32, u32)>,
    message: Option<String>,
}

/// `GET /review/job/{id}`: where the job is; a finished review answers 303 to its page.
pub(crate) async fn job_page(State(state): State<AppState>, Path(id): Path<String>) -> Result<Response, AppError> {
    let s = job(&state, &id)?.borrow().clone();
    if let JobState::Done { review } = &s.state {
        return Ok((StatusCode::SEE_OTHER, [(header::LOCATION, format!("/r/{review}"))]).into_response());
    }
    let (bar, message) = match &s.state {
        JobState::Running {
            done: Some(d),
            of: Some(o),
            ..
        } => (Some((*d, *o)), None),
        JobState::Failed { message } => (None, Some(message.clone())),
        _ => (None, None),
    };
    let page = JobPage {
        title: format!("review job {id}"),
        line: state_line(&s.state),
        s,
        bar,
        message,
    };
    Ok(Html(render_page(&page, &state.kernel_c)?).into_response())
}

/// `GET /review/job/{id}/json`: the job's status.
pub(crate) async fn job_json(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<axum::Json<JobStatus>, AppError> {
    Ok(axum::Json(job(&state, &id)?.borrow().clone()))
}

/// `GET /review/job/{id}/events`: the job's status now and at every change, as `status`
/// events, until it is done or failed.
pub(crate) async fn job_events(State(state): State<AppState>, Path(id): Path<String>) -> Result<Response, AppError> {
    let rx = job(&state, &id)?;
    let events = futures_util::stream::unfold((rx, false, true), |(mut rx, ended, first)| async move {
        if ended || (!first && rx.changed().await.is_err()) {
            return None;
        }
        let s = rx.borrow_and_update().clone();
        let finished = s.state.finished();
        let event = Event::default()
            .event("status")
            .json_data(&s)
            .unwrap_or_else(|_| Event::default().event("status"));
        Some((Ok::<_, std::convert::Infallible>(event), (rx, finished, false)))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()).into_response())
}
