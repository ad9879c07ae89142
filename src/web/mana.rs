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

shown_page_handlers!(
    mana_query, mana_page, mana_text, mana_json;
    ManaQuery, ManaDetail, ManaSpec, ManaShown, ManaView, ManaPage;
    parse_driver(driver)
);
