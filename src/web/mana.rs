//! `/mana`, `/m/{permalink}` and its `/text` and `/json` twins: each handler decodes its
//! input, makes one call into `render::view::mana` and fills the template.

use super::pages::{render_page, ManaPage};
use super::{origin, permalink, text, AppError, AppState};
use crate::render::view::mana::{parse_driver, ManaDetail, ManaQuery, ManaShown, ManaView};
use crate::scenario::mana::ManaSpec;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{Html, Response};
use axum::Json;

pub(crate) async fn mana_query(
    State(state): State<AppState>,
    Query(q): Query<ManaQuery>,
    headers: HeaderMap,
) -> Result<Html<String>, AppError> {
    let shown = ManaShown::new(q.spec()?)?;
    let view = ManaView::new(&shown, parse_driver(q.driver.as_deref())?, &origin(&headers));
    Ok(Html(render_page(&ManaPage::from(view), &state.kernel_c)?))
}

pub(crate) async fn mana_page(
    State(state): State<AppState>,
    Path(link): Path<String>,
    Query(v): Query<ManaDetail>,
    headers: HeaderMap,
) -> Result<Html<String>, AppError> {
    let shown = ManaShown::new(permalink::decode::<ManaSpec>(&link)?)?;
    let view = ManaView::new(&shown, parse_driver(v.driver.as_deref())?, &origin(&headers));
    Ok(Html(render_page(&ManaPage::from(view), &state.kernel_c)?))
}

pub(crate) async fn mana_text(Path(link): Path<String>, headers: HeaderMap) -> Result<Response, AppError> {
    let shown = ManaShown::new(permalink::decode::<ManaSpec>(&link)?)?;
    Ok(text(shown.text_report(&origin(&headers))))
}

pub(crate) async fn mana_json(Path(link): Path<String>) -> Result<Json<serde_json::Value>, AppError> {
    Ok(Json(ManaShown::new(permalink::decode::<ManaSpec>(&link)?)?.json()))
}
