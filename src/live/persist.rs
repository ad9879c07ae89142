//! The live store on disk: one redb table, host name → the host's latest snapshot and history
//! (`PersistedHost` as JSON), and one of kept imports (id → canonical capture JSON). Written after every accepted snapshot, read once at start, so a
//! server restart loses no history. Like `sysfs::read_tree`, the only file access in its module
//! tree; the records are validated again on load exactly as a pushed snapshot is.
//!
//! Why redb: pure Rust (no C toolchain or system SQLite), one file, transactional commits, and a
//! key-value table is all this needs.

use super::store::PersistedHost;
use redb::{Database, ReadableTable, TableDefinition};
use std::path::Path;

/// Table name carries the record version.
const HOSTS: TableDefinition<&str, &[u8]> = TableDefinition::new("live_hosts_v1");
/// Import id → `(order, canonical capture JSON)`; `order` restores oldest-first eviction.
const IMPORTS: TableDefinition<&str, (u64, &[u8])> = TableDefinition::new("live_imports_v1");

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("live store: {0}")]
pub struct PersistError(pub String);

fn e(err: impl std::fmt::Display) -> PersistError {
    PersistError(err.to_string())
}

pub struct Persist {
    db: Database,
}

impl std::fmt::Debug for Persist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Persist(redb)")
    }
}

impl Persist {
    /// Open (or create) the store file.
    pub fn open(path: &Path) -> Result<Persist, PersistError> {
        let db = Database::create(path).map_err(|err| PersistError(format!("{}: {err}", path.display())))?;
        Ok(Persist { db })
    }

    pub fn save(&self, rec: &PersistedHost) -> Result<(), PersistError> {
        let bytes = serde_json::to_vec(rec).map_err(e)?;
        let txn = self.db.begin_write().map_err(e)?;
        {
            let mut table = txn.open_table(HOSTS).map_err(e)?;
            table.insert(rec.snapshot.host.as_str(), bytes.as_slice()).map_err(e)?;
        }
        txn.commit().map_err(e)
    }

    /// Forget the hosts named (deleted or expired), in one transaction.
    pub fn remove_hosts(&self, hosts: &[String]) -> Result<(), PersistError> {
        if hosts.is_empty() {
            return Ok(());
        }
        let txn = self.db.begin_write().map_err(e)?;
        {
            let mut table = txn.open_table(HOSTS).map_err(e)?;
            for h in hosts {
                table.remove(h.as_str()).map_err(e)?;
            }
        }
        txn.commit().map_err(e)
    }

    /// Keep an import under `id` and drop the evicted ones, in one transaction.
    pub fn save_import(&self, id: &str, order: u64, bytes: &[u8], evicted: &[String]) -> Result<(), PersistError> {
        let txn = self.db.begin_write().map_err(e)?;
        {
            let mut table = txn.open_table(IMPORTS).map_err(e)?;
            for old in evicted {
                table.remove(old.as_str()).map_err(e)?;
            }
            table.insert(id, (order, bytes)).map_err(e)?;
        }
        txn.commit().map_err(e)
    }

    /// Every kept import as `(id, canonical JSON)`, oldest first.
    pub fn load_imports(&self) -> Result<Vec<(String, Vec<u8>)>, PersistError> {
        let txn = self.db.begin_read().map_err(e)?;
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
    }

    /// Every stored host; records that no longer parse are skipped and named.
    pub fn load_all(&self) -> Result<(Vec<PersistedHost>, Vec<String>), PersistError> {
        let txn = self.db.begin_read().map_err(e)?;
        let table = match txn.open_table(HOSTS) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok((Vec::new(), Vec::new())),
            Err(err) => return Err(e(err)),
        };
        let (mut ok, mut bad) = (Vec::new(), Vec::new());
        for item in table.iter().map_err(e)? {
            let (k, v) = item.map_err(e)?;
            match serde_json::from_slice::<PersistedHost>(v.value()) {
                Ok(rec) => ok.push(rec),
                Err(err) => bad.push(format!("{}: {err}", super::parse::short(k.value()))),
            }
        }
        Ok((ok, bad))
    }
}
