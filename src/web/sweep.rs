//! `/sweep`, `/sweep/text`, `/sweep/csv`, `/sweep/json`, all from the same query: the query
//! resolved into a `SweepConfig` (`render::view::sweep`), one core call (`sweep::run`, on a
//! blocking thread), and the page or twin.

use super::pages::SweepPage;
use super::{text, AppError};
use crate::analysis::sweep::{self, Sweep};
use crate::render;
use crate::render::view::sweep::{link, query_string, SweepQuery, SweepView};
use askama::Template;
use axum::extract::Query;
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};

async fn run(q: &SweepQuery) -> Result<Sweep, AppError> {
    let config = q.config()?;
    tokio::task::spawn_blocking(move || sweep::run(&config))
        .await
        .map_err(|e| AppError::Internal(format!("sweep worker: {e}")))?
        .map_err(|e| AppError::BadInput(e.to_string()))
}

pub(crate) async fn sweep_page(Query(q): Query<SweepQuery>) -> Result<Html<String>, AppError> {
    let s = run(&q).await?;
    let view = SweepView::new(&s, query_string(&q), q.base.as_deref())?;
    Ok(Html(SweepPage::from(view).render()?))
}

pub(crate) async fn sweep_text(Query(q): Query<SweepQuery>) -> Result<Response, AppError> {
    Ok(text(render::sweep::text(&run(&q).await?)))
}

pub(crate) async fn sweep_csv(Query(q): Query<SweepQuery>) -> Result<Response, AppError> {
    let body = render::sweep::csv(&run(&q).await?, &link);
    Ok(([(header::CONTENT_TYPE, "text/csv; charset=utf-8")], body).into_response())
}

pub(crate) async fn sweep_json(Query(q): Query<SweepQuery>) -> Result<axum::Json<serde_json::Value>, AppError> {
    Ok(axum::Json(render::sweep::json(&run(&q).await?, &link)))
}
