//! `GET /fleet`: the viewer check, then one call into `render::view::fleet` (on a blocking
//! thread: it runs the model once per host).

use super::live::{Viewer, Visit};
use super::pages::{render_page, FleetPage};
use super::{AppError, AppState};
use crate::render::view::fleet::{FleetQuery, FleetView};
use axum::extract::{Query, State};
use axum::response::{Html, Response};

/// The fleet's view, built on a blocking thread (it runs the model once per host).
async fn view(app: &AppState, q: &FleetQuery) -> Result<FleetView, AppError> {
    let choice = q.choice()?;
    let hosts = app.live.hub().hosts();
    let problem = app.live.prometheus().and_then(|p| p.problem());
    tokio::task::spawn_blocking(move || FleetView::new(&hosts, choice, problem))
        .await
        .map_err(|e| AppError::Internal(format!("fleet task: {e}")))
}

pub(crate) async fn fleet_page(
    State(app): State<AppState>,
    Query(q): Query<FleetQuery>,
    // The fleet shows every live host: the same viewer tokens as the live pages guard it.
    _: Visit,
) -> Result<Html<String>, AppError> {
    Ok(Html(render_page(
        &FleetPage::from(view(&app, &q).await?),
        &app.kernel_c,
    )?))
}

pub(crate) async fn fleet_text(
    State(app): State<AppState>,
    Query(q): Query<FleetQuery>,
    _: Viewer,
) -> Result<Response, AppError> {
    Ok(super::text(view(&app, &q).await?.text_report()))
}

pub(crate) async fn fleet_json(
    State(app): State<AppState>,
    Query(q): Query<FleetQuery>,
    _: Viewer,
) -> Result<axum::Json<serde_json::Value>, AppError> {
    Ok(axum::Json(view(&app, &q).await?.json()))
}
