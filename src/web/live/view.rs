//! The live pages' templates and the SSE event body (rendered once per accepted snapshot by
//! the hub), over the views of `render::view::live`.

use crate::live::store::HostState;
use crate::render::view::live::{
    heatmap_of, history_svg, history_text, irq_rows, status_line, update_json, HostView, IrqRowView, LiveQuery,
    HISTORY_CHART_LEN,
};
use crate::web::AppError;
use askama::Template;

#[derive(Template)]
#[template(path = "live/rows.html")]
pub(crate) struct RowsFragment<'a> {
    pub(crate) rows: &'a [IrqRowView],
}

#[derive(Template)]
#[template(path = "live/host.html")]
pub(crate) struct HostPage {
    pub(crate) title: String,
    pub(crate) v: HostView,
}

pub(crate) struct HostListEntry {
    pub(crate) host: String,
    pub(crate) seq: u64,
    pub(crate) status: String,
}

#[derive(Template)]
#[template(path = "live/hosts.html")]
pub(crate) struct HostsPage {
    pub(crate) title: String,
    pub(crate) hosts: Vec<HostListEntry>,
    pub(crate) ingestion: bool,
    /// Why the Prometheus source (`serve --prometheus`) is not answering, if it is not.
    pub(crate) problem: Option<String>,
}

/// The body of the SSE event for `st`: [`update_json`] with the newest [`HISTORY_CHART_LEN`]
/// history samples (not all of them) and the rendered status, heatmap, chart and table rows.
/// The hub renders it once per accepted snapshot and every stream sends these bytes.
pub(super) fn sse_event_body(st: &HostState) -> String {
    let mut data = update_json(st);
    let skip = st.history.len().saturating_sub(HISTORY_CHART_LEN);
    data["history"] = serde_json::json!(st.history.iter().skip(skip).collect::<Vec<_>>());
    data["status"] = serde_json::Value::String(status_line(st));
    data["heatmap"] = serde_json::Value::String(heatmap_of(st, None));
    data["history_svg"] = serde_json::Value::String(history_svg(st));
    data["history_text"] = serde_json::json!(history_text(st));
    data["rows"] = serde_json::Value::String(RowsFragment { rows: &irq_rows(st) }.render().unwrap_or_default());
    data.to_string()
}

/// The model choice of the import form, checked, and carried into the link the import answers
/// with.
pub(crate) struct ImportChoice {
    query: Vec<String>,
}

impl ImportChoice {
    pub(crate) fn new(variant: Option<&str>, effective: Option<&str>) -> Result<ImportChoice, AppError> {
        LiveQuery {
            variant: variant.map(Into::into),
            effective: effective.map(Into::into),
            mana: None,
            node: None,
        }
        .choice()?;
        // Both were checked against the known names: plain words.
        let query = [("variant", variant), ("effective", effective)]
            .into_iter()
            .filter_map(|(k, v)| v.filter(|v| !v.is_empty()).map(|v| format!("{k}={v}")))
            .collect();
        Ok(ImportChoice { query })
    }

    /// `/live/_/import/ID`, with the choice as its query.
    pub(crate) fn location(&self, id: &str) -> String {
        let mut location = format!("{}/import/{id}", super::ACTIONS_PREFIX);
        if !self.query.is_empty() {
            location.push('?');
            location.push_str(&self.query.join("&"));
        }
        location
    }
}
