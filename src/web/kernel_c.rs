//! `/kernel-c`: the built C registered by whoever runs the server (`serve --kernel-c
//! NAME=SOURCE`, kept in `kernel_c::registry`), listed with provenance.
//!
//! The web never compiles anything it received: the registry ([`KernelCRegistry`], a field
//! of [`super::AppState`]) is made once at start-up, by the binary, and never changes. A
//! `c:NAME` link resolves through it in `render::view` (404 for a build this server lacks,
//! 400 with the compiler's message for one that did not build).

use super::pages::render_page;
use super::{AppError, AppState};
pub use crate::kernel_c::registry::{KernelCRegistry, Registered};
use askama::Template;
use axum::extract::State;
use axum::response::Html;

/// One registered source as the page lists it.
struct BuildRow {
    name: String,
    /// Where it came from: the build's origin, or the source path of one that failed.
    source: String,
    version: String,
    id: String,
    patches: String,
    /// The compiler's message, for a source that did not build.
    failed: Option<String>,
}

#[derive(Template)]
#[template(path = "kernel_c.html")]
struct KernelCPage {
    title: String,
    builds: Vec<BuildRow>,
}

/// `/kernel-c`: the registered sources with their provenance.
pub(crate) async fn kernel_c_page(State(state): State<AppState>) -> Result<Html<String>, AppError> {
    let builds = state
        .kernel_c
        .registered()
        .map(|e| match &e.build {
            Ok((p, _)) => BuildRow {
                name: e.name.clone(),
                source: p.origin.clone(),
                version: p.version.clone().unwrap_or_default(),
                id: p.id.clone(),
                patches: p.patches.join("; "),
                failed: None,
            },
            Err(m) => BuildRow {
                name: e.name.clone(),
                source: e.source.clone(),
                version: String::new(),
                id: String::new(),
                patches: String::new(),
                failed: Some(m.clone()),
            },
        })
        .collect();
    let page = KernelCPage {
        title: "built C".into(),
        builds,
    };
    Ok(Html(render_page(&page, &state.kernel_c)?))
}
