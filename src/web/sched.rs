//! `/sched`, `/n/{permalink}` and its `/text` and `/json` twins: each handler decodes its
//! input, makes one call into `render::view::sched` and fills the template.

use super::pages::{render_page, SchedPage};
use super::{origin, permalink, text, AppError, AppState};
use crate::render::view::sched::{parse_variant, SchedDetail, SchedQuery, SchedShown, SchedView};
use crate::scenario::sched::SchedSpec;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{Html, Response};
use axum::Json;

pub(crate) async fn sched_query(
    State(state): State<AppState>,
    Query(q): Query<SchedQuery>,
    headers: HeaderMap,
) -> Result<Html<String>, AppError> {
    let shown = SchedShown::new(q.spec()?)?;
    let view = SchedView::new(&shown, parse_variant(q.variant.as_deref())?, &origin(&headers));
    Ok(Html(render_page(&SchedPage::from(view), &state.kernel_c)?))
}

pub(crate) async fn sched_page(
    State(state): State<AppState>,
    Path(link): Path<String>,
    Query(v): Query<SchedDetail>,
    headers: HeaderMap,
) -> Result<Html<String>, AppError> {
    let shown = SchedShown::new(permalink::decode::<SchedSpec>(&link)?)?;
    let view = SchedView::new(&shown, parse_variant(v.variant.as_deref())?, &origin(&headers));
    Ok(Html(render_page(&SchedPage::from(view), &state.kernel_c)?))
}

pub(crate) async fn sched_text(Path(link): Path<String>, headers: HeaderMap) -> Result<Response, AppError> {
    let shown = SchedShown::new(permalink::decode::<SchedSpec>(&link)?)?;
    Ok(text(shown.text_report(&origin(&headers))))
}

pub(crate) async fn sched_json(Path(link): Path<String>) -> Result<Json<serde_json::Value>, AppError> {
    Ok(Json(SchedShown::new(permalink::decode::<SchedSpec>(&link)?)?.json()))
}
