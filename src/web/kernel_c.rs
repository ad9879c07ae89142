//! Built C registered by whoever runs the server (`serve --kernel-c NAME=SOURCE`): looked up
//! by `c:NAME` variants and pinned by their sha256; listed with provenance on `/kernel-c`.
//!
//! The web never compiles anything it received: the registry ([`KernelCRegistry`], a field
//! of [`super::AppState`]) is made once at start-up, by the binary, and never changes. A source that did not build stays registered with the compiler's message, so a
//! link to it answers 400 with that message while the server goes on serving; a link to a
//! build this server lacks answers 404 saying what is missing and how to register it.

use super::{AppError, AppState};
use crate::analysis::sweep::ExternalRef;
use crate::kernel::External;
use crate::kernel_c::Provenance;
use crate::scenario::spec::{ScenarioSpec, KERNEL_C_PREFIX};
use crate::scenario::ScenarioError;
use axum::extract::State;
use axum::response::Html;
use std::sync::Arc;

/// One registration: a build, or why it failed.
#[derive(Clone)]
pub struct Registered {
    pub name: String,
    pub source: String,
    pub build: Result<(Provenance, External), String>,
}

/// The built C a server runs, made once when it starts ([`KernelCRegistry::new`]) and shared
/// by every handler through [`AppState`]. The default is empty: every `c:` link answers 404.
#[derive(Clone, Default)]
pub struct KernelCRegistry(Arc<Vec<Entry>>);

#[derive(Clone)]
struct Entry {
    registered: Registered,
    /// The build as a sweep placement; made once here, so a sweep request keeps nothing.
    placement: Option<ExternalRef>,
}

impl std::fmt::Debug for KernelCRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|e| e.registered.name.as_str()).collect();
        write!(f, "KernelCRegistry({names:?})")
    }
}

impl KernelCRegistry {
    /// The registrations in order; a later one of a name replaces an earlier one.
    pub fn new(entries: Vec<Registered>) -> KernelCRegistry {
        let mut kept: Vec<Entry> = Vec::with_capacity(entries.len());
        for registered in entries {
            kept.retain(|e| e.registered.name != registered.name);
            let placement = match &registered.build {
                Ok((_, e)) => Some(ExternalRef::register(e.clone())),
                Err(_) => None,
            };
            kept.push(Entry { registered, placement });
        }
        KernelCRegistry(Arc::new(kept))
    }

    /// Every registration, in registration order.
    pub fn registered(&self) -> impl Iterator<Item = &Registered> {
        self.0.iter().map(|e| &e.registered)
    }

    /// A build by name, for a placement (`/sweep?variants=c:NAME`): 404 when this server has
    /// none of that name, 400 with the compiler's message when it did not build.
    pub(crate) fn placement(&self, name: &str) -> Result<ExternalRef, AppError> {
        let how = format!("register it with `irqscope serve --kernel-c {name}=SOURCE`");
        let entry = self.0.iter().find(|e| e.registered.name == name).ok_or_else(|| {
            AppError::NotFound(format!(
                "variant c:{name} names built C this server does not have; {how}"
            ))
        })?;
        match (&entry.placement, &entry.registered.build) {
            (Some(p), _) => Ok(*p),
            (None, Err(message)) => Err(did_not_build(name, &entry.registered.source, message)),
            (None, Ok(_)) => Err(AppError::Internal(format!("c:{name}: a build without its placement"))),
        }
    }

    /// The build a spec's `c:NAME` variant names: 404 when this server has no such build (or
    /// not the one the link pins), 400 with the compiler's message when it did not build.
    pub(crate) fn resolve(&self, spec: &ScenarioSpec) -> Result<Option<External>, AppError> {
        let Some(name) = spec.variant.strip_prefix(KERNEL_C_PREFIX) else {
            return Ok(None);
        };
        let all: Vec<&Registered> = self.registered().collect();
        resolve_in(&all, name, spec.kernel_c.as_deref())
    }

    /// The build a `c:NAME` variant names with no pin (`/blkmq?variant=c:NAME`).
    pub(crate) fn by_name(&self, name: &str) -> Result<External, AppError> {
        let all: Vec<&Registered> = self.registered().collect();
        resolve_in(&all, name, None)?.ok_or_else(|| AppError::Internal(format!("c:{name}: not resolved")))
    }
}

fn did_not_build(name: &str, source: &str, message: &str) -> AppError {
    AppError::BadInput(format!("c:{name} ({source}) did not build: {message}"))
}

fn resolve_in(all: &[&Registered], name: &str, pinned: Option<&str>) -> Result<Option<External>, AppError> {
    let how = format!("register it with `irqscope serve --kernel-c {name}=SOURCE`");
    let entry = all.iter().copied().find(|e| {
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
            match all
                .iter()
                .copied()
                .find(|e| matches!(&e.build, Ok((p, _)) if p.id == sha))
            {
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
        Err(message) => Err(did_not_build(name, &entry.source, message)),
    }
}

/// The lookup `ScenarioSpec::resolve_with` takes, once [`KernelCRegistry::resolve`] found the
/// build.
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
