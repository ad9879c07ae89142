//! Imported captures kept so they can be shared: each under a content id (a hash of its
//! canonical JSON), at most [`IMPORTS_MAX`] of them and [`IMPORTS_BYTES_MAX`] bytes in all,
//! the oldest dropped first. Pure: no clock, no files (persistence is [`super::persist`]).
//!
//! The id is the SHA-256 of the canonical bytes, 64 hex digits: the same content gives the same
//! id, and no other content can be made to take it, so there is no probing. Ids of the first
//! format (32 hex digits of FNV-1a-128, kept by older servers) still resolve: they are restored
//! under their own keys and never made again.

use super::collect::topology_from_columns;
use super::limits::CAPTURE_SNAPSHOTS_MAX;
use super::parse::parse_interrupts;
use super::protocol::{Capture, Snapshot, WireIrq, PROTOCOL_VERSION};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// Why a pasted or uploaded text is not an import.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct BadImport(pub(crate) String);

/// The host name of a bare pasted `/proc/interrupts`.
pub(crate) const PASTED_HOST: &str = "pasted";

/// The snapshots an import holds: a capture file (`{"snapshots": …}`), one snapshot (JSON), or
/// a bare `/proc/interrupts` (anything not starting with `{`), which becomes one snapshot of
/// host [`PASTED_HOST`] on a one-node topology of its columns.
pub(crate) fn snapshots_of_text(text: &str) -> Result<Vec<Snapshot>, BadImport> {
    let bad = |m: String| BadImport(m);
    let t = text.trim_start();
    if !t.starts_with('{') {
        let parsed = parse_interrupts(text).map_err(|e| bad(e.to_string()))?;
        let topology = topology_from_columns(&parsed.cpus, parsed.rows.iter().map(|r| r.chip.as_str()));
        let irqs = parsed
            .rows
            .into_iter()
            .map(|r| WireIrq {
                label: r.label,
                chip: r.chip,
                hwirq: r.hwirq,
                name: r.name,
                counts: r.counts,
                affinity: None,
                effective: None,
                node: None,
            })
            .collect();
        return Ok(vec![Snapshot {
            version: PROTOCOL_VERSION,
            host: PASTED_HOST.into(),
            taken_unix_ms: 0,
            boot_id: String::new(),
            topology,
            cpus: parsed.cpus,
            irqs,
        }]);
    }
    let v: serde_json::Value = serde_json::from_str(t).map_err(|e| bad(format!("bad capture JSON: {e}")))?;
    if v.get("snapshots").is_none() {
        return Ok(vec![
            serde_json::from_value(v).map_err(|e| bad(format!("bad snapshot: {e}")))?
        ]);
    }
    let c: Capture = serde_json::from_value(v).map_err(|e| bad(format!("bad capture: {e}")))?;
    if c.version != PROTOCOL_VERSION {
        return Err(bad(format!(
            "capture version {} is not supported (this server reads {PROTOCOL_VERSION})",
            c.version
        )));
    }
    if c.snapshots.is_empty() || c.snapshots.len() > CAPTURE_SNAPSHOTS_MAX {
        return Err(bad(format!("a capture holds 1 to {CAPTURE_SNAPSHOTS_MAX} snapshots")));
    }
    Ok(c.snapshots)
}

/// Most imports kept.
pub(crate) const IMPORTS_MAX: usize = 64;
/// Most canonical JSON bytes kept over all imports.
pub(crate) const IMPORTS_BYTES_MAX: usize = 64 << 20;
/// Hex digits of an import id.
pub(crate) const IMPORT_ID_LEN: usize = 64;
/// Hex digits of an id of the first format (still resolved, never made).
pub(crate) const LEGACY_IMPORT_ID_LEN: usize = 32;

/// The id of `bytes`: SHA-256, lowercase hex.
pub(crate) fn content_id(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// An id as it may appear in a URL: [`IMPORT_ID_LEN`] (or [`LEGACY_IMPORT_ID_LEN`]) lowercase
/// hex digits.
pub fn valid_id(id: &str) -> bool {
    (id.len() == IMPORT_ID_LEN || id.len() == LEGACY_IMPORT_ID_LEN)
        && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// One kept import.
#[derive(Debug, Clone)]
pub(crate) struct StoredImport {
    pub(crate) capture: Arc<Capture>,
    /// The canonical JSON (what the id hashes and what is persisted).
    pub(crate) bytes: Arc<[u8]>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ImportStoreError {
    #[error("the capture is {0} bytes; imports are kept up to {IMPORTS_BYTES_MAX} bytes in all")]
    TooLarge(usize),
    #[error("another capture has this content id")]
    Collision,
}

/// What [`ImportStore::insert`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Inserted {
    pub(crate) id: String,
    /// Ids dropped to make room (oldest first).
    pub(crate) evicted: Vec<String>,
    /// The same content was already kept under `id`.
    pub(crate) existed: bool,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct ImportStore {
    by_id: BTreeMap<String, StoredImport>,
    /// Ids, oldest first.
    order: VecDeque<String>,
    bytes: usize,
}

impl ImportStore {
    pub(crate) fn new() -> ImportStore {
        ImportStore::default()
    }

    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }

    pub(crate) fn get(&self, id: &str) -> Option<&StoredImport> {
        self.by_id.get(id)
    }

    /// Keep `capture` (whose canonical JSON is `bytes`); the same content gives the same id.
    pub(crate) fn insert(&mut self, capture: Capture, bytes: Vec<u8>) -> Result<Inserted, ImportStoreError> {
        if bytes.len() > IMPORTS_BYTES_MAX {
            return Err(ImportStoreError::TooLarge(bytes.len()));
        }
        let id = content_id(&bytes);
        if let Some(kept) = self.by_id.get(&id) {
            // Equal hashes are equal content; the compare only guards the invariant.
            if *kept.bytes != *bytes {
                return Err(ImportStoreError::Collision);
            }
            return Ok(Inserted {
                id,
                evicted: Vec::new(),
                existed: true,
            });
        }
        let evicted = self.make_room(bytes.len());
        self.bytes += bytes.len();
        self.order.push_back(id.clone());
        self.by_id.insert(
            id.clone(),
            StoredImport {
                capture: Arc::new(capture),
                bytes: bytes.into(),
            },
        );
        Ok(Inserted {
            id,
            evicted,
            existed: false,
        })
    }

    /// Put back a persisted import under its id (oldest first), within the same bounds.
    pub(crate) fn restore(&mut self, id: String, capture: Capture, bytes: Vec<u8>) -> Vec<String> {
        if !valid_id(&id) || self.by_id.contains_key(&id) || bytes.len() > IMPORTS_BYTES_MAX {
            return Vec::new();
        }
        let evicted = self.make_room(bytes.len());
        self.bytes += bytes.len();
        self.order.push_back(id.clone());
        self.by_id.insert(
            id,
            StoredImport {
                capture: Arc::new(capture),
                bytes: bytes.into(),
            },
        );
        evicted
    }

    fn make_room(&mut self, incoming: usize) -> Vec<String> {
        let mut evicted = Vec::new();
        while !self.order.is_empty() && (self.order.len() >= IMPORTS_MAX || self.bytes + incoming > IMPORTS_BYTES_MAX) {
            if let Some(old) = self.order.pop_front() {
                if let Some(gone) = self.by_id.remove(&old) {
                    self.bytes -= gone.bytes.len();
                }
                evicted.push(old);
            }
        }
        evicted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::protocol::PROTOCOL_VERSION;

    fn cap() -> Capture {
        Capture {
            version: PROTOCOL_VERSION,
            snapshots: Vec::new(),
            probe_calls: None,
        }
    }

    #[test]
    fn content_ids_are_stable_bounded_and_never_reused() {
        let mut s = ImportStore::new();
        let a = s.insert(cap(), b"a".to_vec()).unwrap();
        assert!(valid_id(&a.id) && !a.existed);
        // SHA-256("a").
        assert_eq!(a.id, "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb");
        assert_eq!(
            s.insert(cap(), b"a".to_vec()).unwrap(),
            Inserted {
                id: a.id.clone(),
                evicted: vec![],
                existed: true
            }
        );
        // An id of the first format, restored from an older store, still resolves.
        let legacy = "0123456789abcdef0123456789abcdef";
        assert!(valid_id(legacy));
        let mut s2 = ImportStore::new();
        s2.restore(legacy.into(), cap(), b"old".to_vec());
        assert_eq!(&*s2.get(legacy).unwrap().bytes, b"old");
        // Bounded by count, oldest first.
        for i in 0..IMPORTS_MAX + 3 {
            s.insert(cap(), format!("x{i}").into_bytes()).unwrap();
        }
        assert_eq!(s.len(), IMPORTS_MAX);
        assert!(s.get(&a.id).is_none(), "the oldest went first");
        assert!(s.get(&content_id(format!("x{}", IMPORTS_MAX + 2).as_bytes())).is_some());
        assert!(matches!(
            s.insert(cap(), vec![b' '; IMPORTS_BYTES_MAX + 1]),
            Err(ImportStoreError::TooLarge(_))
        ));
        assert!(!valid_id("../etc") && !valid_id(&"A".repeat(IMPORT_ID_LEN)) && !valid_id(&"a".repeat(40)));
    }
}
