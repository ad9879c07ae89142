//! `/seeds`: one call into `render::view::seeds`.

use super::pages::SeedsPage;
use super::AppError;
use crate::render::view::seeds::SeedsView;
use askama::Template;
use axum::response::Html;

pub(crate) async fn seeds_page() -> Result<Html<String>, AppError> {
    Ok(Html(SeedsPage::from(SeedsView::new()?).render()?))
}
