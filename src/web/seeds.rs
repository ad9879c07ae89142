//! `/seeds` and its `/seeds/text` and `/seeds/json` twins: one call into `render::view::seeds`.

use super::pages::SeedsPage;
use super::{origin, text, AppError};
use crate::render::view::seeds::SeedsView;
use askama::Template;
use axum::http::HeaderMap;
use axum::response::{Html, Response};
use axum::Json;

pub(crate) async fn seeds_page() -> Result<Html<String>, AppError> {
    Ok(Html(SeedsPage::from(SeedsView::new()?).render()?))
}

pub(crate) async fn seeds_text(headers: HeaderMap) -> Result<Response, AppError> {
    Ok(text(SeedsView::new()?.text_report(&origin(&headers))))
}

pub(crate) async fn seeds_json() -> Result<Json<serde_json::Value>, AppError> {
    Ok(Json(SeedsView::new()?.json()))
}
