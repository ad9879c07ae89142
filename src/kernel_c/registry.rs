//! The built C this process offers as `c:NAME` variants, registered once at start-up by the
//! binary (`serve --kernel-c NAME=SOURCE`) and looked up by every page that resolves a
//! `c:NAME` link (`render::view`), pinned by its sha256. Nothing here compiles: a source that
//! did not build stays registered with the compiler's message.

use super::Provenance;
use crate::kernel::External;
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

/// Why a `c:NAME` link cannot run here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// This server has no such build (or not the one the link pins): how to register it.
    Missing(String),
    /// The source was registered but did not build: the compiler's message.
    Failed(String),
}

/// The build `c:NAME` (`pinned`: the sha256 a permalink carries) names.
pub fn find(name: &str, pinned: Option<&str>) -> Result<External, Unavailable> {
    let all = registered();
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
        // The link may name the build by another name here.
        (None, Some(sha)) => match all.iter().find(|e| matches!(&e.build, Ok((p, _)) if p.id == sha)) {
            Some(e) => e,
            None => {
                return Err(Unavailable::Missing(format!(
                    "this link runs built C c:{name} with sha256 {sha}, which this server \
                     does not have; {how} (SOURCE giving that sha256)"
                )))
            }
        },
        (None, None) => {
            return Err(Unavailable::Missing(format!(
                "variant c:{name} names built C this server does not have; {how}"
            )))
        }
    };
    match &entry.build {
        Ok((_, e)) => Ok(e.clone()),
        Err(message) => Err(Unavailable::Failed(format!(
            "c:{name} ({}) did not build: {message}",
            entry.source
        ))),
    }
}
