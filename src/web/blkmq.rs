//! `/blkmq` and its `/blkmq/text` and `/blkmq/json` twins (same query): one call into
//! `render::view::blkmq`, which runs `scenario::blkmq` as `irqscope blk-mq` does, through
//! `work::Work` (light on a model, inline; built C on a blocking thread in a heavy slot).

use super::pages::{render_page, BlkMqPage};
use super::work::{Estimate, Work};
use super::{text, AppError, AppState};
use crate::render::view::blkmq::{BlkMqQuery, BlkMqShown, BlkMqView};
use axum::extract::{Query, State};
use axum::response::{Html, Response};
use axum::Json;

/// The query's maps; a `c:NAME` variant runs built C this server registered.
async fn shown(work: Work, state: &AppState, q: &BlkMqQuery) -> Result<BlkMqShown, AppError> {
    let spec = q.spec();
    let built_c = spec.variant.starts_with(crate::scenario::spec::KERNEL_C_PREFIX);
    let kernel_c = state.kernel_c.clone();
    work.run(Estimate::light(built_c), move |_| Ok(BlkMqShown::new(spec, &kernel_c)?))
        .await
}

pub(crate) async fn blkmq_page(
    work: Work,
    State(state): State<AppState>,
    Query(q): Query<BlkMqQuery>,
) -> Result<Html<String>, AppError> {
    let shown = shown(work, &state, &q).await?;
    Ok(Html(render_page(
        &BlkMqPage::from(BlkMqView::new(&shown)),
        &state.kernel_c,
    )?))
}

pub(crate) async fn blkmq_text(
    work: Work,
    State(state): State<AppState>,
    Query(q): Query<BlkMqQuery>,
) -> Result<Response, AppError> {
    Ok(text(shown(work, &state, &q).await?.text_report()))
}

pub(crate) async fn blkmq_json(
    work: Work,
    State(state): State<AppState>,
    Query(q): Query<BlkMqQuery>,
) -> Result<Json<serde_json::Value>, AppError> {
    Ok(Json(shown(work, &state, &q).await?.json()))
}
