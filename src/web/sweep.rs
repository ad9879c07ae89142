//! `/sweep`, `/sweep/text`, `/sweep/csv`, `/sweep/json`, all from the same query: the query
//! resolved into a `SweepConfig` (`render::view::sweep`; a `c:NAME` variant is built C this
//! server registered), one core call (`sweep::run_until`, through `work::Work`: estimated
//! first, on a blocking thread, stopped at the deadline), and the page or twin.

use super::kernel_c::KernelCRegistry;
use super::pages::{render_page, SweepPage};
use super::work::{Estimate, Work};
use super::{text, AppError, AppState};
use crate::analysis::sweep::{self, Sweep};
use crate::render;
use crate::render::view::sweep::{link, query_string, SweepQuery, SweepView};
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};

/// The sweep of a query, within the request's budget and deadline (`web::work`).
async fn run(q: &SweepQuery, kernel_c: &KernelCRegistry, work: Work) -> Result<Sweep, AppError> {
    let config = q.config(kernel_c)?;
    let estimate = Estimate::sweep(&config);
    work.run(estimate, move |deadline| {
        sweep::run_until(&config, &|| deadline.expired()).map_err(|e| AppError::BadInput(e.to_string()))
    })
    .await
}

pub(crate) async fn sweep_page(
    work: Work,
    State(state): State<AppState>,
    Query(q): Query<SweepQuery>,
) -> Result<Html<String>, AppError> {
    let s = run(&q, &state.kernel_c, work).await?;
    let view = SweepView::new(&s, query_string(&q), q.base.as_deref())?;
    Ok(Html(render_page(&SweepPage::from(view), &state.kernel_c)?))
}

pub(crate) async fn sweep_text(
    work: Work,
    State(state): State<AppState>,
    Query(q): Query<SweepQuery>,
) -> Result<Response, AppError> {
    Ok(text(render::sweep::text(&run(&q, &state.kernel_c, work).await?)))
}

pub(crate) async fn sweep_csv(
    work: Work,
    State(state): State<AppState>,
    Query(q): Query<SweepQuery>,
) -> Result<Response, AppError> {
    let body = render::sweep::csv(&run(&q, &state.kernel_c, work).await?, &link);
    Ok(([(header::CONTENT_TYPE, "text/csv; charset=utf-8")], body).into_response())
}

pub(crate) async fn sweep_json(
    work: Work,
    State(state): State<AppState>,
    Query(q): Query<SweepQuery>,
) -> Result<axum::Json<serde_json::Value>, AppError> {
    Ok(axum::Json(render::sweep::json(
        &run(&q, &state.kernel_c, work).await?,
        &link,
    )))
}
