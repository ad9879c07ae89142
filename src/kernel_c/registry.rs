//! The built C this process offers as `c:NAME` variants, registered once at start-up by the
//! binary (`serve --kernel-c NAME=SOURCE`) and looked up by every page that resolves a
//! `c:NAME` link (`render::view`), pinned by its sha256. Nothing here compiles: a source that
//! did not build stays registered with the compiler's message.

use super::Provenance;
use crate::kernel::External;
use std::sync::Arc;

/// One registration: a build, or why it failed.
#[derive(Clone)]
pub struct Registered {
    pub name: String,
    pub source: String,
    pub build: Result<(Provenance, External), String>,
}

/// The built C a server runs, made once when it starts ([`KernelCRegistry::new`]) and carried
/// by the server's state to every page that resolves a `c:NAME` link; it never changes. The
/// default is empty: every `c:` link answers 404.
#[derive(Clone, Default)]
pub struct KernelCRegistry(Arc<Vec<Entry>>);

#[derive(Clone)]
struct Entry {
    registered: Registered,
    /// The build made once into a `'static` reference, for sweep placements: a sweep request
    /// then keeps nothing.
    placement: Option<&'static External>,
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
                Ok((_, e)) => Some(&*Box::leak(Box::new(e.clone()))),
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

    /// The build `c:NAME` names (`pinned`: the sha256 a permalink carries).
    pub fn find(&self, name: &str, pinned: Option<&str>) -> Result<External, Unavailable> {
        let entry = find_in(self, name, pinned)?;
        match &entry.registered.build {
            Ok((_, e)) => Ok(e.clone()),
            Err(m) => Err(failed(name, &entry.registered.source, m)),
        }
    }

    /// A build by name made once for the life of the server, for a sweep placement.
    pub fn placement(&self, name: &str) -> Result<&'static External, Unavailable> {
        let entry = find_in(self, name, None)?;
        match (&entry.placement, &entry.registered.build) {
            (Some(p), _) => Ok(*p),
            (None, Err(m)) => Err(failed(name, &entry.registered.source, m)),
            (None, Ok(_)) => Err(Unavailable::Failed(format!("c:{name}: a build without its placement"))),
        }
    }
}

fn failed(name: &str, source: &str, message: &str) -> Unavailable {
    Unavailable::Failed(format!("c:{name} ({source}) did not build: {message}"))
}

/// Why a `c:NAME` link cannot run here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// This server has no such build (or not the one the link pins): how to register it.
    Missing(String),
    /// The source was registered but did not build: the compiler's message.
    Failed(String),
}

/// The entry `c:NAME` (`pinned`: the sha256 a permalink carries) names.
fn find_in<'a>(reg: &'a KernelCRegistry, name: &str, pinned: Option<&str>) -> Result<&'a Entry, Unavailable> {
    let all = &reg.0;
    let how = format!("register it with `irqscope serve --kernel-c {name}=SOURCE`");
    let entry = all.iter().find(|e| {
        e.registered.name == name
            && match (&e.registered.build, pinned) {
                (Ok((p, _)), Some(sha)) => p.id == sha,
                _ => true,
            }
    });
    match (entry, pinned) {
        (Some(e), _) => Ok(e),
        // The link may name the build by another name here.
        (None, Some(sha)) => all
            .iter()
            .find(|e| matches!(&e.registered.build, Ok((p, _)) if p.id == sha))
            .ok_or_else(|| {
                Unavailable::Missing(format!(
                    "this link runs built C c:{name} with sha256 {sha}, which this server \
                     does not have; {how} (SOURCE giving that sha256)"
                ))
            }),
        (None, None) => Err(Unavailable::Missing(format!(
            "variant c:{name} names built C this server does not have; {how}"
        ))),
    }
}
