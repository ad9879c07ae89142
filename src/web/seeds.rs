//! `/seeds` and its `/seeds/text` and `/seeds/json` twins: one call into `render::view::seeds`.

use super::pages::{render_page, SeedsPage};
use super::{origin, text, AppError, AppState};
use crate::render::view::seeds::SeedsView;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{Html, Response};
use axum::Json;

pub(crate) async fn seeds_page(State(state): State<AppState>) -> Result<Html<String>, AppError> {
    Ok(Html(render_page(&SeedsPage::from(SeedsView::new()?), &state.kernel_c)?))
}

pub(crate) async fn seeds_text(headers: HeaderMap) -> Result<Response, AppError> {
    Ok(text(SeedsView::new()?.text_report(&origin(&headers))))
}

pub(crate) async fn seeds_json() -> Result<Json<serde_json::Value>, AppError> {
    Ok(Json(SeedsView::new()?.json()))
}
