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

shown_page_handlers!(
    sched_query, sched_page, sched_text, sched_json;
    SchedQuery, SchedDetail, SchedSpec, SchedShown, SchedView, SchedPage;
    parse_variant(variant)
);
