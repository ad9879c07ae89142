//! `/kernel-c`: the built C registered by whoever runs the server (`serve --kernel-c
//! NAME=SOURCE`, kept in `kernel_c::registry`), listed with provenance.
//!
//! The web never compiles anything it received: the registry ([`KernelCRegistry`], a field
//! of [`super::AppState`]) is made once at start-up, by the binary, and never changes. A
//! `c:NAME` link resolves through it in `render::view` (404 for a build this server lacks,
//! 400 with the compiler's message for one that did not build).

use super::AppState;
pub use crate::kernel_c::registry::{KernelCRegistry, Registered};
use axum::extract::State;
use axum::response::Html;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `/kernel-c`: the registered sources with their provenance.
pub(crate) async fn kernel_c_page(State(state): State<AppState>) -> Html<String> {
    let mut rows = String::new();
    for e in state.kernel_c.registered() {
        match &e.build {
            Ok((p, _)) => rows.push_str(&format!(
                "<tr><td><code>c:{}</code></td><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>\n",
                esc(&e.name),
                esc(&p.origin),
                esc(p.version.as_deref().unwrap_or("")),
                esc(&p.id),
                esc(&p.patches.join("; ")),
            )),
            Err(m) => rows.push_str(&format!(
                "<tr><td><code>c:{}</code></td><td>{}</td><td colspan=\"3\">did not build: <pre>{}</pre></td></tr>\n",
                esc(&e.name),
                esc(&e.source),
                esc(m)
            )),
        }
    }
    if rows.is_empty() {
        rows.push_str("<tr><td colspan=\"5\">none: start the server with --kernel-c NAME=SOURCE</td></tr>\n");
    }
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>irqscope: built C</title>\
         <link rel=\"stylesheet\" href=\"/static/style.css\"></head><body><main>\
         <h1>Built C variants</h1><p>Sources this server's operator registered; use them as \
         <code>variant=c:NAME</code>. Links pin the build by its sha256.</p>\
         <table><thead><tr><th>variant</th><th>source</th><th>version</th><th>sha256</th>\
         <th>patches</th></tr></thead><tbody>\n{rows}</tbody></table></main></body></html>\n"
    ))
}
