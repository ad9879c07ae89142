//! `GET /fleet`: the viewer check, then one call into `render::view::fleet` (on a blocking
//! thread: it runs the model once per host).

use super::pages::FleetPage;
use super::{AppError, AppState};
use crate::render::view::fleet::{FleetQuery, FleetView};
use askama::Template;
use axum::extract::{Query, State};
use axum::response::{Html, IntoResponse, Response};

pub(crate) async fn fleet_page(
    State(app): State<AppState>,
    Query(q): Query<FleetQuery>,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
) -> Result<Response, AppError> {
    // The fleet shows every live host: the same viewer tokens as the live pages guard it.
    if let Some(redirect) = app.live.admit(&uri, &headers, true)? {
        return Ok(redirect);
    }
    let choice = q.choice()?;
    let hosts = app.live.hub().hosts();
    let problem = app.live.prometheus().and_then(|p| p.problem());
    let view = tokio::task::spawn_blocking(move || FleetView::new(&hosts, choice, problem))
        .await
        .map_err(|e| AppError::Internal(format!("fleet task: {e}")))?;
    Ok(Html(FleetPage::from(view).render()?).into_response())
}
