//! The live store on disk: one redb file with each host's latest snapshot, its history as
//! append-only samples (one row per accepted snapshot, the oldest dropped past
//! `HISTORY_LEN_MAX`), and the kept imports (id → canonical capture JSON). Written before a push
//! is acknowledged (readings arriving together share one transaction and one commit: group
//! commit, [`Persist::wait`]), read once at start, so a server restart loses nothing acknowledged. Like
//! `sysfs::read_tree`, the only file access in its module tree; the records are validated again
//! on load exactly as a pushed snapshot is.
//!
//! A failed write (a full disk, an I/O error) closes the database; the next write opens it
//! again, so persistence resumes by itself once the disk allows it.
//!
//! Why redb: pure Rust (no C toolchain or system SQLite), one file, transactional commits, and a
//! key-value table is all this needs.

use super::limits::HISTORY_LEN_MAX;
use super::protocol::Snapshot;
use super::store::{HostState, PersistedHost, Sample};
use redb::{Database, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Host name → `HostRow` JSON (the latest snapshot and its seq).
const HOSTS: TableDefinition<&str, &[u8]> = TableDefinition::new("live_hosts_v2");
/// `(host, seq)` → `Sample` JSON: the history, one row per accepted snapshot.
const SAMPLES: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("live_samples_v1");
/// The first format: host → the whole `PersistedHost` (history included) rewritten per push.
/// Read once and moved into the tables above.
const HOSTS_V1: TableDefinition<&str, &[u8]> = TableDefinition::new("live_hosts_v1");

#[derive(Serialize, Deserialize)]
struct HostRow {
    snapshot: Snapshot,
    seq: u64,
}
/// Import id → `(order, canonical capture JSON)`; `order` restores oldest-first eviction.
const IMPORTS: TableDefinition<&str, (u64, &[u8])> = TableDefinition::new("live_imports_v1");

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("live store: {0}")]
pub struct PersistError(pub String);

fn e(err: impl std::fmt::Display) -> PersistError {
    PersistError(err.to_string())
}

pub struct Persist {
    path: PathBuf,
    /// `None` after a failed write: reopened by the next one.
    db: Mutex<Option<Database>>,
    /// Accepted readings waiting for their commit (group commit, [`Persist::wait`]).
    queue: Mutex<Queue>,
    /// Signalled when a batch's commit finished.
    committed: Condvar,
}

/// Where a queued reading waits: the number of the batch it is committed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket(u64);

/// One queued change, applied in queue order: a host deleted or expired while one of its
/// readings still waits for a commit stays deleted, and a host that pushes again after its
/// deletion keeps its new readings.
enum Op {
    Reading(Arc<HostState>),
    Remove(Vec<String>),
}

/// The group-commit queue.
#[derive(Default)]
struct Queue {
    /// Changes of batch `next_batch`, not yet taken by a writer.
    pending: Vec<Op>,
    next_batch: u64,
    /// A writer is committing a batch (it holds no lock while it writes).
    writing: bool,
    /// Finished batches: readings not yet told, and the outcome.
    outcomes: HashMap<u64, (usize, Result<(), PersistError>)>,
}

impl Queue {
    /// The outcome of `batch` once it finished, counting its readers down.
    fn take_outcome(&mut self, batch: u64) -> Option<Result<(), PersistError>> {
        let (left, outcome) = self.outcomes.get_mut(&batch)?;
        let outcome = outcome.clone();
        *left -= 1;
        if *left == 0 {
            self.outcomes.remove(&batch);
        }
        Some(outcome)
    }
}

fn lock_queue(q: &Mutex<Queue>) -> MutexGuard<'_, Queue> {
    q.lock().unwrap_or_else(|p| p.into_inner())
}

impl std::fmt::Debug for Persist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Persist(redb {})", self.path.display())
    }
}

fn open_db(path: &Path) -> Result<Database, PersistError> {
    Database::create(path).map_err(|err| PersistError(format!("{}: {err}", path.display())))
}

/// What to tell the operator about a store file that cannot be opened as one.
fn damaged(path: &Path, what: &str) -> PersistError {
    PersistError(format!(
        "{}: {what}; move it away (or start with --live-store-move-aside to rename it and begin empty)",
        path.display()
    ))
}

/// Open an existing file as a redb database, refusing a 0-byte file and turning redb's
/// assertion on a damaged file into an error (the panic message is not printed).
fn open_existing(path: &Path) -> Result<Database, PersistError> {
    let len = std::fs::metadata(path)
        .map_err(|err| PersistError(format!("{}: {err}", path.display())))?
        .len();
    if len == 0 {
        return Err(damaged(path, "the file is empty (0 bytes), not a live store"));
    }
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let opened = std::panic::catch_unwind(|| Database::create(path));
    std::panic::set_hook(quiet);
    match opened {
        Ok(Ok(db)) => Ok(db),
        Ok(Err(err)) => Err(damaged(path, &format!("not a readable live store ({err})"))),
        Err(_) => Err(damaged(path, "the file is damaged (truncated?)")),
    }
}

/// Rename a damaged store file to `FILE.damaged-N` (the first free N) and return the new name.
pub(crate) fn move_aside(path: &Path) -> Result<PathBuf, PersistError> {
    for n in 1..=1_000u32 {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".damaged-{n}"));
        let to = PathBuf::from(name);
        if !to.exists() {
            std::fs::rename(path, &to).map_err(|err| PersistError(format!("{}: {err}", path.display())))?;
            return Ok(to);
        }
    }
    Err(PersistError(format!(
        "{}: too many damaged copies beside it",
        path.display()
    )))
}

impl Persist {
    /// Open (or create) the store file. A file that exists but is no store (0 bytes, damaged)
    /// is an error naming it, never started empty over.
    pub fn open(path: &Path) -> Result<Persist, PersistError> {
        let db = if path.exists() {
            open_existing(path)?
        } else {
            open_db(path)?
        };
        Ok(Persist {
            path: path.to_path_buf(),
            db: Mutex::new(Some(db)),
            queue: Mutex::new(Queue::default()),
            committed: Condvar::new(),
        })
    }

    /// [`Persist::open`], or when the file is damaged, move it aside and start a new one
    /// (returns where the old file went).
    pub fn open_moving_aside(path: &Path) -> Result<(Persist, Option<PathBuf>), PersistError> {
        match Persist::open(path) {
            Ok(p) => Ok((p, None)),
            Err(_) if path.exists() => {
                let moved = move_aside(path)?;
                Ok((Persist::open(path)?, Some(moved)))
            }
            Err(err) => Err(err),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Database>> {
        self.db.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Run `f` on the database, opening it first if a failure closed it; a failure closes it.
    fn with_db<T>(&self, f: impl FnOnce(&Database) -> Result<T, PersistError>) -> Result<T, PersistError> {
        let mut guard = self.lock();
        let db = match guard.take() {
            Some(db) => db,
            None => open_db(&self.path)?,
        };
        let result = f(&db);
        if result.is_ok() {
            *guard = Some(db);
        }
        // On error `db` is dropped here: redb refuses writes after some I/O errors until the
        // file is opened again.
        result
    }

    /// Keep an accepted reading and wait until it is on disk: [`Persist::enqueue`] then
    /// [`Persist::wait`].
    #[cfg(test)]
    pub(crate) fn append(&self, state: &Arc<HostState>) -> Result<(), PersistError> {
        let ticket = self.enqueue(state.clone());
        self.wait(ticket)
    }

    /// Queue an accepted reading for the next commit and return the ticket to
    /// [`Persist::wait`] on. Cheap (no I/O): the hub calls it under its store lock, so the
    /// readings of one host are queued, and so written, in `seq` order.
    pub(crate) fn enqueue(&self, state: Arc<HostState>) -> Ticket {
        self.enqueue_op(Op::Reading(state))
    }

    /// Queue forgetting `hosts` (deleted or expired) behind every reading queued before, for
    /// [`Persist::wait`]. The hub calls it under its store lock, where it dropped them.
    pub(crate) fn enqueue_removal(&self, hosts: Vec<String>) -> Ticket {
        self.enqueue_op(Op::Remove(hosts))
    }

    fn enqueue_op(&self, op: Op) -> Ticket {
        let mut q = lock_queue(&self.queue);
        q.pending.push(op);
        Ticket(q.next_batch)
    }

    /// Wait until the batch holding the ticket's reading is committed (or failed). Group
    /// commit: the first waiter that finds no commit running takes every queued reading, writes
    /// them in one transaction and commits once (one fsync), while readings arriving meanwhile
    /// queue for the next batch; the outcome of a batch is every one of its readings' outcome.
    /// Blocking.
    pub(crate) fn wait(&self, ticket: Ticket) -> Result<(), PersistError> {
        let mut q = lock_queue(&self.queue);
        loop {
            if let Some(outcome) = q.take_outcome(ticket.0) {
                return outcome;
            }
            if !q.writing && q.next_batch == ticket.0 {
                let batch = std::mem::take(&mut q.pending);
                q.next_batch += 1;
                q.writing = true;
                drop(q);
                let outcome = self.write_batch(&batch);
                q = lock_queue(&self.queue);
                q.writing = false;
                q.outcomes.insert(ticket.0, (batch.len(), outcome));
                self.committed.notify_all();
                continue;
            }
            q = self.committed.wait(q).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Write a batch in one transaction: first every host removed in it (with the readings
    /// queued before its removal), then each remaining host's latest snapshot once (the highest
    /// `seq` of the batch) and one history sample per reading, dropping the samples that fell
    /// out of the history ring.
    fn write_batch(&self, ops: &[Op]) -> Result<(), PersistError> {
        if ops.is_empty() {
            return Ok(());
        }
        let mut batch: Vec<&HostState> = Vec::with_capacity(ops.len());
        let mut removed: Vec<&str> = Vec::new();
        for op in ops {
            match op {
                Op::Reading(st) => batch.push(st),
                Op::Remove(hosts) => {
                    for h in hosts {
                        batch.retain(|st| st.snapshot.host != *h);
                        removed.push(h);
                    }
                }
            }
        }
        let mut latest: HashMap<&str, &HostState> = HashMap::new();
        for st in &batch {
            let host = st.snapshot.host.as_str();
            if latest.get(host).is_none_or(|l| l.seq < st.seq) {
                latest.insert(host, st);
            }
        }
        let mut rows = Vec::with_capacity(latest.len());
        for (host, st) in latest {
            let row = HostRow {
                snapshot: st.snapshot.clone(),
                seq: st.seq,
            };
            rows.push((host, serde_json::to_vec(&row).map_err(e)?));
        }
        let mut samples = Vec::with_capacity(batch.len());
        for st in batch {
            if let Some(last) = st.history.back() {
                samples.push((
                    st.snapshot.host.as_str(),
                    last.seq,
                    serde_json::to_vec(last).map_err(e)?,
                ));
            }
        }
        self.with_db(|db| {
            let txn = db.begin_write().map_err(e)?;
            {
                let mut hosts = txn.open_table(HOSTS).map_err(e)?;
                let mut table = txn.open_table(SAMPLES).map_err(e)?;
                for h in &removed {
                    hosts.remove(*h).map_err(e)?;
                    table.retain_in((*h, 0)..=(*h, u64::MAX), |_, _| false).map_err(e)?;
                }
                for (host, row) in &rows {
                    hosts.insert(*host, row.as_slice()).map_err(e)?;
                }
                for (host, seq, bytes) in &samples {
                    table.insert((*host, *seq), bytes.as_slice()).map_err(e)?;
                    if let Some(old) = seq.checked_sub(HISTORY_LEN_MAX as u64) {
                        table.remove((*host, old)).map_err(e)?;
                    }
                }
            }
            txn.commit().map_err(e)
        })
    }

    /// Keep an import under `id` and drop the evicted ones, in one transaction.
    pub(crate) fn save_import(
        &self,
        id: &str,
        order: u64,
        bytes: &[u8],
        evicted: &[String],
    ) -> Result<(), PersistError> {
        self.with_db(|db| {
            let txn = db.begin_write().map_err(e)?;
            {
                let mut table = txn.open_table(IMPORTS).map_err(e)?;
                for old in evicted {
                    table.remove(old.as_str()).map_err(e)?;
                }
                table.insert(id, (order, bytes)).map_err(e)?;
            }
            txn.commit().map_err(e)
        })
    }

    /// Every kept import as `(id, canonical JSON)`, oldest first.
    pub(crate) fn load_imports(&self) -> Result<Vec<(String, Vec<u8>)>, PersistError> {
        self.with_db(|db| {
            let txn = db.begin_read().map_err(e)?;
            let table = match txn.open_table(IMPORTS) {
                Ok(t) => t,
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
                Err(err) => return Err(e(err)),
            };
            let mut out = Vec::new();
            for item in table.iter().map_err(e)? {
                let (k, v) = item.map_err(e)?;
                let (order, bytes) = v.value();
                out.push((order, k.value().to_string(), bytes.to_vec()));
            }
            out.sort_by_key(|r| r.0);
            Ok(out.into_iter().map(|(_, id, b)| (id, b)).collect())
        })
    }

    /// Move records of the first format (whole record per host) into the append-only tables.
    fn migrate_v1(db: &Database) -> Result<(), PersistError> {
        let txn = db.begin_write().map_err(e)?;
        {
            let old = match txn.open_table(HOSTS_V1) {
                Ok(t) => t,
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
                Err(err) => return Err(e(err)),
            };
            let mut hosts = txn.open_table(HOSTS).map_err(e)?;
            let mut samples = txn.open_table(SAMPLES).map_err(e)?;
            for item in old.iter().map_err(e)? {
                let (k, v) = item.map_err(e)?;
                // A record that does not parse is left out here and named by `load_all` no
                // more: it was unreadable before the move too.
                let Ok(rec) = serde_json::from_slice::<PersistedHost>(v.value()) else {
                    continue;
                };
                let row = serde_json::to_vec(&HostRow {
                    snapshot: rec.snapshot,
                    seq: rec.seq,
                })
                .map_err(e)?;
                hosts.insert(k.value(), row.as_slice()).map_err(e)?;
                for s in &rec.history {
                    let bytes = serde_json::to_vec(s).map_err(e)?;
                    samples.insert((k.value(), s.seq), bytes.as_slice()).map_err(e)?;
                }
            }
        }
        txn.delete_table(HOSTS_V1).map_err(e)?;
        txn.commit().map_err(e)
    }

    /// Every stored host with its history; records that no longer parse are skipped and named.
    pub fn load_all(&self) -> Result<(Vec<PersistedHost>, Vec<String>), PersistError> {
        self.with_db(|db| {
            Self::migrate_v1(db)?;
            let txn = db.begin_read().map_err(e)?;
            let table = match txn.open_table(HOSTS) {
                Ok(t) => t,
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok((Vec::new(), Vec::new())),
                Err(err) => return Err(e(err)),
            };
            let samples = match txn.open_table(SAMPLES) {
                Ok(t) => Some(t),
                Err(redb::TableError::TableDoesNotExist(_)) => None,
                Err(err) => return Err(e(err)),
            };
            let (mut ok, mut bad) = (Vec::new(), Vec::new());
            for item in table.iter().map_err(e)? {
                let (k, v) = item.map_err(e)?;
                let host = k.value();
                let row = match serde_json::from_slice::<HostRow>(v.value()) {
                    Ok(row) => row,
                    Err(err) => {
                        bad.push(format!("{}: {err}", super::parse::short(host)));
                        continue;
                    }
                };
                let mut history: Vec<Sample> = Vec::new();
                if let Some(samples) = &samples {
                    for item in samples.range((host, 0)..=(host, u64::MAX)).map_err(e)? {
                        let (_, v) = item.map_err(e)?;
                        match serde_json::from_slice::<Sample>(v.value()) {
                            Ok(s) => history.push(s),
                            Err(err) => bad.push(format!("{} sample: {err}", super::parse::short(host))),
                        }
                    }
                }
                ok.push(PersistedHost {
                    snapshot: row.snapshot,
                    seq: row.seq,
                    history,
                });
            }
            Ok((ok, bad))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::protocol::{WireIrq, WireTopology, PROTOCOL_VERSION};
    use crate::live::store::{Arrival, LiveStore};

    fn reading(host: &str, t: u64) -> Snapshot {
        Snapshot {
            version: PROTOCOL_VERSION,
            host: host.into(),
            taken_unix_ms: t,
            boot_id: "b".into(),
            topology: WireTopology {
                nodes: vec!["0-3".into()],
                ..Default::default()
            },
            cpus: vec![0, 1, 2, 3],
            irqs: vec![WireIrq {
                label: "24".into(),
                chip: "PCI-MSIX".into(),
                hwirq: "0-edge".into(),
                name: "nvme0q1".into(),
                counts: vec![(1, t)],
                affinity: None,
                effective: None,
                node: None,
            }],
        }
    }

    /// A directory of the test's own, emptied, and the database path in it.
    fn scratch(test: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("irqscope-persist-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("live.redb");
        (dir, path)
    }

    /// Every record of the database at `path` opened afresh; none may be unreadable.
    fn reopened(path: &std::path::Path) -> Vec<PersistedHost> {
        let (records, bad) = Persist::open(path).unwrap().load_all().unwrap();
        assert!(bad.is_empty(), "{bad:?}");
        records
    }

    /// Many pushes at once: every one is answered Ok only once on disk, each host's row is its
    /// newest reading and every reading's sample is kept, whatever batches they fell into.
    #[test]
    fn concurrent_appends_are_all_committed() {
        let (dir, path) = scratch("group");
        let persist = Arc::new(Persist::open(&path).unwrap());
        let store = Arc::new(Mutex::new(LiveStore::new()));
        const HOSTS: usize = 8;
        const READINGS: u64 = 5;
        let start = Arc::new(std::sync::Barrier::new(HOSTS * 2));
        let mut threads = Vec::new();
        // Two threads per host push in turn, so one host's readings meet in the queue.
        for t in 0..HOSTS * 2 {
            let (persist, store, start) = (persist.clone(), store.clone(), start.clone());
            threads.push(std::thread::spawn(move || {
                let host = format!("h{}", t % HOSTS);
                start.wait();
                for r in 0..READINGS {
                    let received_ms = (r * 2 + (t / HOSTS) as u64) * 1_000 + 1;
                    let ticket = {
                        let mut s = store.lock().unwrap();
                        let at = Arrival {
                            received_ms,
                            unbound: None,
                        };
                        let Ok(st) = s.ingest(&host, reading(&host, received_ms), at) else {
                            // The other thread of the host got there first within its pacing.
                            continue;
                        };
                        persist.enqueue(st)
                    };
                    persist.wait(ticket).unwrap();
                }
            }));
        }
        for t in threads {
            t.join().unwrap();
        }
        let kept = store
            .lock()
            .unwrap()
            .hosts()
            .map(|(h, st)| (h.clone(), st.seq))
            .collect::<Vec<_>>();
        drop(persist);
        let records = reopened(&path);
        assert_eq!(records.len(), HOSTS);
        for rec in &records {
            let seq = kept.iter().find(|(h, _)| *h == rec.snapshot.host).unwrap().1;
            assert_eq!(rec.seq, seq, "{}: the newest reading is the row", rec.snapshot.host);
            let seqs: Vec<u64> = rec.history.iter().map(|s| s.seq).collect();
            assert_eq!(
                seqs,
                (1..=seq).collect::<Vec<_>>(),
                "{}: every sample",
                rec.snapshot.host
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A host deleted while one of its readings waits for a commit stays deleted on disk; a
    /// host that pushes again after its deletion keeps the new reading.
    #[test]
    fn removals_apply_in_queue_order() {
        let (dir, path) = scratch("order");
        let persist = Persist::open(&path).unwrap();
        let mut store = LiveStore::new();
        let at = |received_ms| Arrival {
            received_ms,
            unbound: None,
        };
        // On disk already, then deleted with a second reading still queued: both go.
        let first = store.ingest("gone", reading("gone", 1_000), at(1_000)).unwrap();
        persist.append(&first).unwrap();
        let queued = store.ingest("gone", reading("gone", 3_000), at(3_000)).unwrap();
        let t1 = persist.enqueue(queued);
        assert!(store.remove("gone"));
        let t2 = persist.enqueue_removal(vec!["gone".into()]);
        // Deleted, then pushed again in the same batch: the new reading stays.
        let old = store.ingest("back", reading("back", 1_000), at(1_000)).unwrap();
        let t3 = persist.enqueue(old);
        assert!(store.remove("back"));
        let t4 = persist.enqueue_removal(vec!["back".into()]);
        let again = store.ingest("back", reading("back", 5_000), at(5_000)).unwrap();
        let t5 = persist.enqueue(again);
        for t in [t1, t2, t3, t4, t5] {
            persist.wait(t).unwrap();
        }
        drop(persist);
        let records = reopened(&path);
        let hosts: Vec<(&str, u64, usize)> = records
            .iter()
            .map(|r| (r.snapshot.host.as_str(), r.snapshot.taken_unix_ms, r.history.len()))
            .collect();
        assert_eq!(hosts, vec![("back", 5_000, 1)]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
