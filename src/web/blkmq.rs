//! `/blkmq` and its `/blkmq/text` and `/blkmq/json` twins (same query): one call into
//! `render::view::blkmq`, which runs `scenario::blkmq` as `irqscope blk-mq` does.

use super::pages::{render_page, BlkMqPage};
use super::{text, AppError, AppState};
use crate::render::view::blkmq::{BlkMqQuery, BlkMqShown, BlkMqView};
use axum::extract::{Query, State};
use axum::response::{Html, Response};
use axum::Json;

/// The query's maps; a `c:NAME` variant runs built C this server registered.
fn shown(state: &AppState, q: &BlkMqQuery) -> Result<BlkMqShown, AppError> {
    Ok(BlkMqShown::new(q.spec(), &state.kernel_c)?)
}

pub(crate) async fn blkmq_page(
    State(state): State<AppState>,
    Query(q): Query<BlkMqQuery>,
) -> Result<Html<String>, AppError> {
    let shown = shown(&state, &q)?;
    Ok(Html(render_page(
        &BlkMqPage::from(BlkMqView::new(&shown)),
        &state.kernel_c,
    )?))
}

pub(crate) async fn blkmq_text(
    State(state): State<AppState>,
    Query(q): Query<BlkMqQuery>,
) -> Result<Response, AppError> {
    Ok(text(shown(&state, &q)?.text_report()))
}

pub(crate) async fn blkmq_json(
    State(state): State<AppState>,
    Query(q): Query<BlkMqQuery>,
) -> Result<Json<serde_json::Value>, AppError> {
    Ok(Json(shown(&state, &q)?.json()))
}
