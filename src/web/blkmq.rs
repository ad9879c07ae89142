//! `/blkmq` and its `/blkmq/text` and `/blkmq/json` twins (same query): one call into
//! `render::view::blkmq`, which runs `scenario::blkmq` as `irqscope blk-mq` does.

use super::pages::BlkMqPage;
use super::{text, AppError};
use crate::render::view::blkmq::{BlkMqQuery, BlkMqShown, BlkMqView};
use askama::Template;
use axum::extract::Query;
use axum::response::{Html, Response};
use axum::Json;

pub(crate) async fn blkmq_page(Query(q): Query<BlkMqQuery>) -> Result<Html<String>, AppError> {
    let shown = BlkMqShown::new(q.spec())?;
    Ok(Html(BlkMqPage::from(BlkMqView::new(&shown)).render()?))
}

pub(crate) async fn blkmq_text(Query(q): Query<BlkMqQuery>) -> Result<Response, AppError> {
    Ok(text(BlkMqShown::new(q.spec())?.text_report()))
}

pub(crate) async fn blkmq_json(Query(q): Query<BlkMqQuery>) -> Result<Json<serde_json::Value>, AppError> {
    Ok(Json(BlkMqShown::new(q.spec())?.json()))
}
