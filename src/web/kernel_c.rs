//! Built C registered by whoever runs the server (`serve --kernel-c NAME=SOURCE`): looked up
//! by `c:NAME` variants and pinned by their sha256; listed with provenance on `/kernel-c`.
//!
//! The web never compiles anything it received: the registry is filled once at start-up, by
//! the binary. A source that did not build stays registered with the compiler's message, so a
//! link to it answers 400 with that message while the server goes on serving; a link to a
//! build this server lacks answers 404 saying what is missing and how to register it.

use super::AppError;
use crate::kernel::External;
use crate::kernel_c::Provenance;
use crate::scenario::spec::ScenarioSpec;
use crate::scenario::ScenarioError;
use axum::response::Html;
use std::sync::RwLock;

/// One registration: a build, or why it failed.
#[derive(Clone)]
pub struct Registered {
    pub name: String,
    pub source: String,
    pub build: Result<(Provenance, External), String>,
}

static REGISTRY: RwLock<Vec<Registered>> = RwLock::new(Vec::new());

/// Register a source under `name` (a later registration of the name replaces it).
pub fn register(entry: Registered) {
    let mut r = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    r.retain(|e| e.name != entry.name);
    r.push(entry);
}

/// Every registration, in registration order.
pub fn registered() -> Vec<Registered> {
    REGISTRY.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The build a spec's `c:NAME` variant names: 404 when this server has no such build (or not
/// the one the link pins), 400 with the compiler's message when it did not build.
pub(crate) fn resolve(spec: &ScenarioSpec) -> Result<Option<External>, AppError> {
    let Some(name) = spec.variant.strip_prefix(crate::scenario::spec::KERNEL_C_PREFIX) else {
        return Ok(None);
    };
    let all = registered();
    let pinned = spec.kernel_c.as_deref();
    let how = format!("register it with `irqscope serve --kernel-c {name}=SOURCE`");
    let entry = all.iter().find(|e| {
        e.name == name
            && match (&e.build, pinned) {
                (Ok((p, _)), Some(sha)) => p.id == sha,
                _ => true,
            }
    });
    let entry = match (entry, pinned) {
        (Some(e), _) => e,
        (None, Some(sha)) => {
            // The link may name the build by another name here.
            match all.iter().find(|e| matches!(&e.build, Ok((p, _)) if p.id == sha)) {
                Some(e) => e,
                None => {
                    return Err(AppError::NotFound(format!(
                        "this link runs built C c:{name} with sha256 {sha}, which this server \
                         does not have; {how} (SOURCE giving that sha256)"
                    )))
                }
            }
        }
        (None, None) => {
            return Err(AppError::NotFound(format!(
                "variant c:{name} names built C this server does not have; {how}"
            )))
        }
    };
    match &entry.build {
        Ok((_, e)) => Ok(Some(e.clone())),
        Err(message) => Err(AppError::BadInput(format!(
            "c:{name} ({}) did not build: {message}",
            entry.source
        ))),
    }
}

/// The lookup `ScenarioSpec::resolve_with` takes, once [`resolve`] found the build.
pub(crate) fn fixed(found: Option<External>) -> impl Fn(&str, Option<&str>) -> Result<External, ScenarioError> {
    move |name, _| {
        found
            .clone()
            .ok_or_else(|| ScenarioError(format!("c:{name}: not registered on this server")))
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `/kernel-c`: the registered sources with their provenance.
pub(crate) async fn kernel_c_page() -> Html<String> {
    let mut rows = String::new();
    for e in registered() {
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
