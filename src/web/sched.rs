//! `/sched`, `/n/{permalink}` and its `/text` and `/json` twins: each handler decodes its
//! input, makes one call into `render::view::sched` and fills the template.

use super::pages::SchedPage;
use super::{origin, permalink, text, AppError};
use crate::render::view::sched::{parse_variant, SchedDetail, SchedQuery, SchedShown, SchedView};
use crate::scenario::sched::SchedSpec;
use askama::Template;
use axum::extract::{Path, Query};
use axum::http::HeaderMap;
use axum::response::{Html, Response};
use axum::Json;

pub(crate) async fn sched_query(Query(q): Query<SchedQuery>, headers: HeaderMap) -> Result<Html<String>, AppError> {
    let shown = SchedShown::new(q.spec()?)?;
    let view = SchedView::new(&shown, parse_variant(q.variant.as_deref())?, &origin(&headers));
    Ok(Html(SchedPage::from(view).render()?))
}

pub(crate) async fn sched_page(
    Path(link): Path<String>,
    Query(v): Query<SchedDetail>,
    headers: HeaderMap,
) -> Result<Html<String>, AppError> {
    let shown = SchedShown::new(permalink::decode::<SchedSpec>(&link)?)?;
    let view = SchedView::new(&shown, parse_variant(v.variant.as_deref())?, &origin(&headers));
    Ok(Html(SchedPage::from(view).render()?))
}

pub(crate) async fn sched_text(Path(link): Path<String>, headers: HeaderMap) -> Result<Response, AppError> {
    let shown = SchedShown::new(permalink::decode::<SchedSpec>(&link)?)?;
    Ok(text(shown.text_report(&origin(&headers))))
}

pub(crate) async fn sched_json(Path(link): Path<String>) -> Result<Json<serde_json::Value>, AppError> {
    Ok(Json(SchedShown::new(permalink::decode::<SchedSpec>(&link)?)?.json()))
}
