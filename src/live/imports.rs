//! Imported captures kept so they can be shared: each under a content id (a hash of its
//! canonical JSON), at most [`IMPORTS_MAX`] of them and [`IMPORTS_BYTES_MAX`] bytes in all,
//! the oldest dropped first. Pure: no clock, no files (persistence is [`super::persist`]).
//!
//! The id is FNV-1a-128 of the canonical bytes, hex. It is not a cryptographic hash, so the
//! store compares content on insert: a different capture whose id is taken gets the next free
//! id derived from it, and an id never names other content than it was given for.

use super::collect::topology_from_columns;
use super::limits::CAPTURE_SNAPSHOTS_MAX;
use super::parse::parse_interrupts;
use super::protocol::{Capture, Snapshot, WireIrq, PROTOCOL_VERSION};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// Why a pasted or uploaded text is not an import.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadImport(pub String);

/// The host name of a bare pasted `/proc/interrupts`.
pub const PASTED_HOST: &str = "pasted";

/// The snapshots an import holds: a capture file (`{"snapshots": …}`), one snapshot (JSON), or
/// a bare `/proc/interrupts` (anything not starting with `{`), which becomes one snapshot of
/// host [`PASTED_HOST`] on a one-node topology of its columns.
pub fn snapshots_of_text(text: &str) -> Result<Vec<Snapshot>, BadImport> {
    let bad = |m: String| BadImport(m);
    let t = text.trim_start();
    if !t.starts_with('{') {
        let parsed = parse_interrupts(text).map_err(|e| bad(e.to_string()))?;
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
            topology: topology_from_columns(&parsed.cpus),
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
pub const IMPORTS_MAX: usize = 64;
/// Most canonical JSON bytes kept over all imports.
pub const IMPORTS_BYTES_MAX: usize = 64 << 20;
/// Hex digits of an import id.
pub const IMPORT_ID_LEN: usize = 32;
/// Ids tried for one capture before giving up (only colliding content needs more than one).
const ID_PROBES_MAX: u32 = 8;

fn fnv1a_128(parts: &[&[u8]]) -> u128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013b;
    let mut h = OFFSET;
    for part in parts {
        for &b in *part {
            h ^= u128::from(b);
            h = h.wrapping_mul(PRIME);
        }
    }
    h
}

/// The id `probe` of `bytes` (probe 0 is the plain content hash).
pub fn content_id(bytes: &[u8], probe: u32) -> String {
    let h = if probe == 0 {
        fnv1a_128(&[bytes])
    } else {
        fnv1a_128(&[bytes, b"#", probe.to_string().as_bytes()])
    };
    format!("{h:032x}")
}

/// An id as it may appear in a URL: exactly [`IMPORT_ID_LEN`] lowercase hex digits.
pub fn valid_id(id: &str) -> bool {
    id.len() == IMPORT_ID_LEN && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// One kept import.
#[derive(Debug, Clone)]
pub struct StoredImport {
    pub capture: Arc<Capture>,
    /// The canonical JSON (what the id hashes and what is persisted).
    pub bytes: Arc<[u8]>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportStoreError {
    #[error("the capture is {0} bytes; imports are kept up to {IMPORTS_BYTES_MAX} bytes in all")]
    TooLarge(usize),
    #[error("no free id for this capture")]
    NoId,
}

/// What [`ImportStore::insert`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inserted {
    pub id: String,
    /// Ids dropped to make room (oldest first).
    pub evicted: Vec<String>,
    /// The same content was already kept under `id`.
    pub existed: bool,
}

#[derive(Debug, Clone, Default)]
pub struct ImportStore {
    by_id: BTreeMap<String, StoredImport>,
    /// Ids, oldest first.
    order: VecDeque<String>,
    bytes: usize,
}

impl ImportStore {
    pub fn new() -> ImportStore {
        ImportStore::default()
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    pub fn get(&self, id: &str) -> Option<&StoredImport> {
        self.by_id.get(id)
    }

    /// Ids, oldest first.
    pub fn ids(&self) -> impl Iterator<Item = &String> {
        self.order.iter()
    }

    /// Keep `capture` (whose canonical JSON is `bytes`); the same content gives the same id.
    pub fn insert(&mut self, capture: Capture, bytes: Vec<u8>) -> Result<Inserted, ImportStoreError> {
        if bytes.len() > IMPORTS_BYTES_MAX {
            return Err(ImportStoreError::TooLarge(bytes.len()));
        }
        let mut id = None;
        for probe in 0..ID_PROBES_MAX {
            let candidate = content_id(&bytes, probe);
            match self.by_id.get(&candidate) {
                Some(kept) if *kept.bytes == *bytes => {
                    return Ok(Inserted {
                        id: candidate,
                        evicted: Vec::new(),
                        existed: true,
                    });
                }
                Some(_) => continue,
                None => {
                    id = Some(candidate);
                    break;
                }
            }
        }
        let id = id.ok_or(ImportStoreError::NoId)?;
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
    pub fn restore(&mut self, id: String, capture: Capture, bytes: Vec<u8>) -> Vec<String> {
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
        }
    }

    #[test]
    fn content_ids_are_stable_bounded_and_never_reused() {
        let mut s = ImportStore::new();
        let a = s.insert(cap(), b"a".to_vec()).unwrap();
        assert!(valid_id(&a.id) && !a.existed);
        assert_eq!(a.id, content_id(b"a", 0));
        assert_eq!(
            s.insert(cap(), b"a".to_vec()).unwrap(),
            Inserted {
                id: a.id.clone(),
                evicted: vec![],
                existed: true
            }
        );
        // An id taken by other content (as a hash collision would): the next probe.
        let mut s2 = ImportStore::new();
        s2.restore(content_id(b"b", 0), cap(), b"not b".to_vec());
        let b = s2.insert(cap(), b"b".to_vec()).unwrap();
        assert_eq!(b.id, content_id(b"b", 1));
        assert_eq!(&*s2.get(&content_id(b"b", 0)).unwrap().bytes, b"not b");
        // Bounded by count, oldest first.
        for i in 0..IMPORTS_MAX + 3 {
            s.insert(cap(), format!("x{i}").into_bytes()).unwrap();
        }
        assert_eq!(s.len(), IMPORTS_MAX);
        assert!(s.get(&a.id).is_none(), "the oldest went first");
        assert!(s
            .get(&content_id(format!("x{}", IMPORTS_MAX + 2).as_bytes(), 0))
            .is_some());
        assert!(matches!(
            s.insert(cap(), vec![b' '; IMPORTS_BYTES_MAX + 1]),
            Err(ImportStoreError::TooLarge(_))
        ));
        assert!(!valid_id("../etc") && !valid_id(&"A".repeat(IMPORT_ID_LEN)));
    }
}
