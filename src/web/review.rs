//! `/r/<id>` and its twins: reviews made on the command line (`irqscope review --out DIR`),
//! served from DIR (`serve --review-dir DIR`). Immutable: the permalink cache keeps them like
//! `/s/` links. The file is read here; `render::view::review` checks it is the review named.

use super::pages::render_page;
use super::{text, AppError, AppState};
use crate::render::view::review::{parse, valid_id, ReviewView, FILE_BYTES_MAX};
use askama::Template;
use axum::extract::{Path, State};
use axum::response::{Html, Response};
use std::io::Read;

#[derive(Template)]
#[template(path = "review.html")]
struct ReviewPage {
    title: String,
    v: ReviewView,
}

fn load(state: &AppState, id: &str) -> Result<crate::render::review::Review, AppError> {
    let Some(dir) = &state.review_dir else {
        return Err(AppError::NotFound(
            "this server serves no reviews (irqscope serve --review-dir DIR)".into(),
        ));
    };
    if !valid_id(id) {
        return Err(AppError::BadInput(format!(
            "review id {:?}: 16 hexadecimal digits",
            id.chars().take(40).collect::<String>()
        )));
    }
    let path = dir.join(format!("{id}.json"));
    let file = std::fs::File::open(&path).map_err(|_| AppError::NotFound(format!("no review {id} here")))?;
    let mut bytes = Vec::new();
    file.take(FILE_BYTES_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| AppError::BadInput(format!("review {id}: {e}")))?;
    if bytes.len() as u64 > FILE_BYTES_MAX {
        return Err(AppError::BadInput(format!(
            "review {id}: its file is larger than {FILE_BYTES_MAX} bytes"
        )));
    }
    Ok(parse(id, &bytes)?)
}

/// `/r/<id>`: the page.
pub(crate) async fn review_page(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Html<String>, AppError> {
    let r = load(&state, &id)?;
    let page = ReviewPage {
        title: format!("review {}", r.id),
        v: ReviewView::new(&r),
    };
    Ok(Html(render_page(&page, &state.kernel_c)?))
}

/// `/r/<id>/text`: the mail reply.
pub(crate) async fn review_text(State(state): State<AppState>, Path(id): Path<String>) -> Result<Response, AppError> {
    Ok(text(crate::render::review::text(&load(&state, &id)?)))
}

/// `/r/<id>/json`: the review as data.
pub(crate) async fn review_json(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<axum::Json<crate::render::review::Review>, AppError> {
    Ok(axum::Json(load(&state, &id)?))
}
