//! The live hub: the one object the web layer calls. It owns the host store, the kept imports,
//! persistence, the ingestion tokens, the SSE slots and the broadcast of updates, and it holds
//! the ingestion policy (who may push, what is accepted, what is kept, what viewers are told).
//!
//! Locks are held only to read or swap `Arc`s: a snapshot is parsed before the store lock is
//! taken, and persisted and rendered after it is released. The SSE event body of an accepted
//! snapshot is rendered once (by the [`EventRenderer`] the web layer hands in) and every stream
//! sends the same bytes.
//!
//! Blocking: [`Hub::ingest`], [`Hub::import`], [`Hub::replay_import`] and
//! [`Hub::latest_event`] parse, persist or render; callers on an async executor run them on a
//! blocking thread.

use super::auth::{Tokens, Verdict};
use super::imports::{snapshots_of_text, BadImport, ImportStore, ImportStoreError};
use super::limits::{HOST_IDLE_MS_DEFAULT, SNAPSHOT_BYTES_MAX};
use super::persist::{Persist, PersistError};
use super::protocol::{decode_delta_body, DeltaError, BASE_MISMATCH};
use super::protocol::{decode_push_body, valid_host_name, Capture, PushBodyError, Snapshot, PROTOCOL_VERSION};
use super::store::{Arrival, HostState, IngestError, LiveStore};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use tokio::sync::broadcast;

/// Most SSE streams open at once; more are refused ([`HubError::TooManyStreams`]).
pub const SSE_STREAMS_MAX: usize = 256;
/// Most SSE streams open for one host.
pub const SSE_STREAMS_PER_HOST_MAX: usize = 64;
/// Most SSE streams open from one client address ([`HubError::TooManyStreamsFromClient`]).
pub const SSE_STREAMS_PER_CLIENT_MAX: usize = 16;
/// Longest an SSE stream stays open; then it ends and the browser's `EventSource` reconnects
/// (and is counted again against the caps).
pub const SSE_STREAM_LIFETIME_MS: u64 = 30 * 60 * 1000;
/// Updates buffered (one ring shared by every SSE stream) before a slow reader skips to the
/// latest event of its host.
const UPDATES_BUFFERED: usize = 64;

/// An SSE event body, rendered once and shared by every stream.
pub(crate) type EventBody = Arc<str>;

/// Renders the SSE event body of a host state (the web layer's view).
pub(crate) type EventRenderer = Arc<dyn Fn(&HostState) -> String + Send + Sync>;

/// Imports one client address may make per [`IMPORT_WINDOW_MS`] (`POST /live/_/import` needs
/// no token, and each runs ingest, the model and a render).
pub const IMPORTS_PER_CLIENT_MAX: u32 = 10;
/// Bytes of imported text one client address may send per [`IMPORT_WINDOW_MS`].
pub(crate) const IMPORT_BYTES_PER_CLIENT_MAX: u64 = 64 << 20;
/// The window of the per-client import budget.
pub(crate) const IMPORT_WINDOW_MS: u64 = 60_000;
/// Imports (and kept-import pages, which replay and run the model) worked on at once; more
/// answer 503 at once rather than queue.
pub const IMPORTS_CONCURRENT_MAX: usize = 2;
/// Client addresses tracked by the import budget; past this, finished windows are forgotten.
const IMPORT_CLIENTS_TRACKED: usize = 4_096;

/// One accepted snapshot, as the streams learn of it.
#[derive(Debug, Clone)]
pub(crate) struct Update {
    pub host: Arc<str>,
    pub seq: u64,
    pub body: EventBody,
}

/// Why the hub refused a request. Each kind maps to one HTTP status at the edge.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HubError {
    /// No tokens configured: ingestion is off.
    #[error("live ingestion is disabled: start the server with --live-tokens FILE or IRQSCOPE_LIVE_TOKENS")]
    Disabled,
    #[error("a bearer token is required (Authorization: Bearer TOKEN)")]
    TokenMissing,
    #[error("unknown token")]
    TokenUnknown,
    #[error("this token may not push for this host")]
    WrongHost,
    #[error("bad host name: 1 to 64 bytes of A-Z a-z 0-9 . _ -, not starting with . or _")]
    BadHostName,
    #[error("bad snapshot JSON: {0}")]
    BadJson(String),
    /// A push body that does not decode (encoding, size, JSON, version).
    #[error("{0}")]
    Body(PushBodyError),
    /// The store refused the snapshot (bad content, too many hosts, too fast).
    #[error("{0}")]
    Ingest(IngestError),
    /// An import that is not a capture, or does not replay.
    #[error("{0}")]
    BadImport(String),
    #[error("too many live streams open")]
    TooManyStreams,
    #[error("too many live streams open from this address (at most {SSE_STREAMS_PER_CLIENT_MAX})")]
    TooManyStreamsFromClient,
    #[error(
        "import budget spent: {IMPORTS_PER_CLIENT_MAX} imports or {IMPORT_BYTES_PER_CLIENT_MAX} bytes per address per {IMPORT_WINDOW_MS} ms"
    )]
    ImportBudget,
    #[error("the server is busy with other imports; try again in a moment")]
    ImportsBusy,
    #[error("deleting hosts is disabled: add an _admin=TOKEN line to the live tokens")]
    NoAdmin,
    #[error("this token may not delete hosts")]
    NotAdmin,
    #[error("no live host {0:?}")]
    NoHost(String),
    /// A delta push whose base is not the host's current reading: 409, the agent sends a full
    /// reading.
    #[error("{BASE_MISMATCH}: the delta's base is not this host's latest reading; send a full reading")]
    BaseMismatch,
    /// Persisting failed: the push is not acknowledged (the store reopens on the next write).
    #[error("{0}; this snapshot was not kept, push again later")]
    Store(String),
}

/// The hub's policy knobs (the limits that are not constants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HubPolicy {
    /// A host that has not pushed for this long is dropped (server clock).
    pub host_idle_ms: u64,
}

impl Default for HubPolicy {
    fn default() -> Self {
        HubPolicy {
            host_idle_ms: HOST_IDLE_MS_DEFAULT,
        }
    }
}

impl From<BadImport> for HubError {
    fn from(e: BadImport) -> Self {
        HubError::BadImport(e.0)
    }
}

/// What the hub keeps of a rendered event: the reading it shows, and its bytes.
type CachedEvent = (u64, EventBody);

pub struct Hub {
    store: Mutex<LiveStore>,
    /// The latest rendered event body of each host.
    events: Mutex<HashMap<String, CachedEvent>>,
    imports: Mutex<ImportStore>,
    /// Insertion counter of imports (their persisted order).
    import_order: AtomicU64,
    tokens: Tokens,
    persist: Option<Persist>,
    updates: broadcast::Sender<Update>,
    streams: AtomicUsize,
    /// Open streams per host and per client address.
    stream_counts: Mutex<StreamCounts>,
    /// Per client address: (window start, imports, bytes) in the current window.
    import_budget: Mutex<HashMap<IpAddr, (u64, u32, u64)>>,
    imports_running: AtomicUsize,
    render: EventRenderer,
    /// The server's clock for push pacing, in milliseconds (monotonic; the wall clock never
    /// paces).
    clock: Clock,
    policy: HubPolicy,
}

/// A monotonic clock in milliseconds.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// Milliseconds since the first call (`Instant`: monotonic, never steps).
pub(crate) fn monotonic_clock() -> Clock {
    let started = Instant::now();
    Arc::new(move || u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX))
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("tokens", &self.tokens)
            .field("persist", &self.persist)
            .field("streams", &self.streams)
            .finish_non_exhaustive()
    }
}

/// Lock, riding over poisoning: every update builds its new value before swapping it in, so a
/// panic while a lock was held cannot leave a half-updated value behind.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[derive(Debug, Default)]
struct StreamCounts {
    by_host: HashMap<String, usize>,
    by_client: HashMap<IpAddr, usize>,
}

fn release<K: std::hash::Hash + Eq>(map: &mut HashMap<K, usize>, key: &K) {
    if let Some(n) = map.get_mut(key) {
        *n -= 1;
        if *n == 0 {
            map.remove(key);
        }
    }
}

/// An open SSE slot; released when dropped.
#[derive(Debug)]
pub(crate) struct StreamSlot {
    hub: Arc<Hub>,
    host: String,
    client: Option<IpAddr>,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.hub.streams.fetch_sub(1, Ordering::Relaxed);
        let mut counts = lock(&self.hub.stream_counts);
        release(&mut counts.by_host, &self.host);
        if let Some(c) = &self.client {
            release(&mut counts.by_client, c);
        }
    }
}

impl StreamSlot {
    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }
}

/// A running import; released when dropped.
#[derive(Debug)]
pub struct ImportSlot(Arc<Hub>);

impl Drop for ImportSlot {
    fn drop(&mut self) {
        self.0.imports_running.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Replay a capture into a scratch store, so its last reading has rates as a pushed host's would.
pub(crate) fn replay(capture: &Capture) -> Result<Arc<HostState>, HubError> {
    let first = capture
        .snapshots
        .first()
        .ok_or_else(|| HubError::BadImport("an empty capture".into()))?;
    let host = first.host.clone();
    let mut store = LiveStore::new();
    let mut last = None;
    // A capture is paced by its own timestamps (the agent read it at its interval).
    for s in capture.snapshots.iter().cloned() {
        let received = Arrival {
            received_ms: s.taken_unix_ms,
            unbound: None,
        };
        last = Some(
            store
                .ingest(&host, s, received)
                .map_err(|e| HubError::BadImport(e.to_string()))?,
        );
    }
    last.ok_or_else(|| HubError::BadImport("an empty capture".into()))
}

impl Hub {
    /// A hub with `tokens` (empty: ingestion off), history kept in `persist` when given and
    /// restored from it now. Returns the hub and notes about records that were skipped.
    pub fn new(
        tokens: Tokens,
        persist: Option<Persist>,
        render: EventRenderer,
    ) -> Result<(Hub, Vec<String>), PersistError> {
        let mut store = LiveStore::new();
        let mut imports = ImportStore::new();
        let mut notes = Vec::new();
        if let Some(p) = &persist {
            for (id, bytes) in p.load_imports()? {
                match serde_json::from_slice::<Capture>(&bytes) {
                    Ok(c) => {
                        imports.restore(id, c, bytes);
                    }
                    Err(e) => notes.push(format!("import {}: {e}", super::parse::short(&id))),
                }
            }
            let (records, bad) = p.load_all()?;
            notes.extend(bad);
            for rec in records {
                let host = rec.snapshot.host.clone();
                // Restored hosts' idle time counts from now (the clock starts at 0).
                if let Err(e) = store.restore(rec, 0) {
                    notes.push(format!("{host}: {e}"));
                }
            }
        }
        let (updates, _) = broadcast::channel(UPDATES_BUFFERED);
        let import_order = AtomicU64::new(imports.len() as u64);
        let hub = Hub {
            store: Mutex::new(store),
            events: Mutex::new(HashMap::new()),
            imports: Mutex::new(imports),
            import_order,
            tokens,
            persist,
            updates,
            streams: AtomicUsize::new(0),
            stream_counts: Mutex::new(StreamCounts::default()),
            import_budget: Mutex::new(HashMap::new()),
            imports_running: AtomicUsize::new(0),
            render,
            clock: monotonic_clock(),
            policy: HubPolicy::default(),
        };
        Ok((hub, notes))
    }

    /// The same hub paced by `clock` instead of the monotonic clock (tests drive time).
    pub fn with_clock(mut self, clock: Clock) -> Hub {
        self.clock = clock;
        self
    }

    /// The same hub with `policy`.
    pub(crate) fn with_policy(mut self, policy: HubPolicy) -> Hub {
        self.policy = policy;
        self
    }

    /// Ingestion is on (tokens are configured).
    pub(crate) fn ingestion_enabled(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// Accept a pushed snapshot: check the token presented (`bearer`, without `Bearer `), the
    /// host name and the body (`content_encoding` as sent: identity or gzip), keep it, persist it, render its event once and tell the streams.
    /// Returns the host's new `seq`. Blocking.
    pub fn ingest(
        &self,
        host: &str,
        bearer: Option<&[u8]>,
        content_encoding: Option<&str>,
        body: &[u8],
    ) -> Result<u64, HubError> {
        if self.tokens.is_empty() {
            return Err(HubError::Disabled);
        }
        let presented = bearer.ok_or(HubError::TokenMissing)?;
        if !valid_host_name(host) {
            return Err(HubError::BadHostName);
        }
        let unbound = match self.tokens.check(presented, host) {
            Verdict::Accepted { unbound } => unbound,
            Verdict::Unknown => return Err(HubError::TokenUnknown),
            Verdict::WrongHost => return Err(HubError::WrongHost),
        };
        let snap = decode_push_body(content_encoding, body, SNAPSHOT_BYTES_MAX).map_err(HubError::Body)?;
        let received_ms = (self.clock)();
        let (state, expired) = {
            let mut store = lock(&self.store);
            let expired = store.expire(received_ms, self.policy.host_idle_ms);
            let at = Arrival { received_ms, unbound };
            (store.ingest(host, snap, at), expired)
        };
        self.forget(&expired);
        let state = state.map_err(HubError::Ingest)?;
        // Acknowledged only once kept on disk (when a store is configured). A reading that
        // could not be kept stays in memory (rates stay continuous) but is not announced nor
        // acknowledged: the agent pushes a newer one, and only acknowledged readings are
        // promised to survive a restart.
        if let Some(p) = &self.persist {
            if let Err(e) = p.append(&state) {
                tracing::error!("{e}");
                return Err(HubError::Store(e.to_string()));
            }
        }
        self.publish(host, &state);
        Ok(state.seq)
    }

    /// Accept a delta push (protocol 3, `live::protocol::Delta`): the checks of
    /// [`Hub::ingest`], then the full snapshot rebuilt from the host's current one and ingested
    /// exactly as a full push (same validation, limits, store contents, persistence and
    /// events). A base that is not the host's current reading when the rebuilt one is stored
    /// (no such host, another reading landed, the host expired) is [`HubError::BaseMismatch`].
    /// Blocking.
    pub fn ingest_delta(
        &self,
        host: &str,
        bearer: Option<&[u8]>,
        content_encoding: Option<&str>,
        body: &[u8],
    ) -> Result<u64, HubError> {
        if self.tokens.is_empty() {
            return Err(HubError::Disabled);
        }
        let presented = bearer.ok_or(HubError::TokenMissing)?;
        if !valid_host_name(host) {
            return Err(HubError::BadHostName);
        }
        let unbound = match self.tokens.check(presented, host) {
            Verdict::Accepted { unbound } => unbound,
            Verdict::Unknown => return Err(HubError::TokenUnknown),
            Verdict::WrongHost => return Err(HubError::WrongHost),
        };
        let delta = decode_delta_body(content_encoding, body, SNAPSHOT_BYTES_MAX).map_err(HubError::Body)?;
        let base = self.host(host).ok_or(HubError::BaseMismatch)?;
        // Rebuilt outside the lock; stored only if `base` is still the host's state.
        let snap = delta.apply(&base.snapshot).map_err(|e| match e {
            DeltaError::BaseMismatch => HubError::BaseMismatch,
            DeltaError::Bad(_) => HubError::Body(PushBodyError::Bad(e.to_string())),
        })?;
        let received_ms = (self.clock)();
        let (state, expired) = {
            let mut store = lock(&self.store);
            let expired = store.expire(received_ms, self.policy.host_idle_ms);
            let state = match store.host(host) {
                Some(now) if Arc::ptr_eq(now, &base) => {
                    // Let go of the base so the store can take its history without a copy.
                    drop(base);
                    let at = Arrival { received_ms, unbound };
                    store.ingest(host, snap, at).map_err(HubError::Ingest)
                }
                _ => Err(HubError::BaseMismatch),
            };
            (state, expired)
        };
        self.forget(&expired);
        let state = state?;
        if let Some(p) = &self.persist {
            if let Err(e) = p.append(&state) {
                tracing::error!("{e}");
                return Err(HubError::Store(e.to_string()));
            }
        }
        self.publish(host, &state);
        Ok(state.seq)
    }

    /// Accept a snapshot the server read itself (`live::prometheus`): no token, not persisted
    /// (its source keeps the history), otherwise the path of a push: the same store, pacing,
    /// rendering and streams. Blocking.
    pub(crate) fn ingest_source(&self, snap: Snapshot) -> Result<u64, HubError> {
        let host = snap.host.clone();
        if !valid_host_name(&host) {
            return Err(HubError::BadHostName);
        }
        let received_ms = (self.clock)();
        let (state, expired) = {
            let mut store = lock(&self.store);
            let expired = store.expire(received_ms, self.policy.host_idle_ms);
            let at = Arrival {
                received_ms,
                unbound: None,
            };
            (store.ingest(&host, snap, at), expired)
        };
        self.forget(&expired);
        let state = state.map_err(HubError::Ingest)?;
        self.publish(&host, &state);
        Ok(state.seq)
    }

    /// Render `state`'s event (no lock held), keep it as the host's latest and broadcast it.
    fn publish(&self, host: &str, state: &HostState) {
        let body = self.render_and_cache(host, state);
        // No receiver (no stream open) is not an error.
        let _ = self.updates.send(Update {
            host: host.into(),
            seq: state.seq,
            body,
        });
    }

    /// Render `state`'s event and keep it unless a newer one is kept already.
    fn render_and_cache(&self, host: &str, state: &HostState) -> EventBody {
        let body: EventBody = (self.render)(state).into();
        let mut events = lock(&self.events);
        if events.get(host).is_none_or(|(seq, _)| *seq < state.seq) {
            events.insert(host.to_string(), (state.seq, body.clone()));
        }
        body
    }

    /// The host's current state (a pointer: nothing is copied under the lock).
    pub fn host(&self, host: &str) -> Option<Arc<HostState>> {
        lock(&self.store).host(host).cloned()
    }

    /// Every host's current state, by name (idle ones dropped first).
    pub fn hosts(&self) -> Vec<Arc<HostState>> {
        let (hosts, expired) = {
            let mut store = lock(&self.store);
            let expired = store.expire((self.clock)(), self.policy.host_idle_ms);
            (store.hosts().map(|(_, st)| st.clone()).collect(), expired)
        };
        self.forget(&expired);
        hosts
    }

    /// Delete `host` with an admin token. Blocking (persists).
    pub fn delete(&self, host: &str, bearer: Option<&[u8]>) -> Result<(), HubError> {
        if self.tokens.no_admin() {
            return Err(HubError::NoAdmin);
        }
        let presented = bearer.ok_or(HubError::TokenMissing)?;
        if !self.tokens.is_admin(presented) {
            return Err(HubError::NotAdmin);
        }
        if !lock(&self.store).remove(host) {
            return Err(HubError::NoHost(super::parse::short(host)));
        }
        self.forget(&[host.to_string()]);
        Ok(())
    }

    /// Drop the cached events and stored records of hosts the store no longer keeps.
    fn forget(&self, hosts: &[String]) {
        if hosts.is_empty() {
            return;
        }
        let mut events = lock(&self.events);
        for h in hosts {
            events.remove(h);
            tracing::info!("live host {h} dropped");
        }
        drop(events);
        if let Some(p) = &self.persist {
            if let Err(e) = p.remove_hosts(hosts) {
                tracing::error!("{e}");
            }
        }
    }

    /// The latest event of `host`: the cached bytes, or rendered now for a host restored from
    /// disk that has not pushed since. Blocking (may render).
    pub(crate) fn latest_event(&self, host: &str) -> Option<(u64, EventBody)> {
        let state = self.host(host)?;
        if let Some(cached) = lock(&self.events).get(host).filter(|c| c.0 >= state.seq) {
            return Some(cached.clone());
        }
        let body = self.render_and_cache(host, &state);
        Some((state.seq, body))
    }

    /// Take an SSE slot and subscribe to updates, or refuse when [`SSE_STREAMS_MAX`] are open.
    /// Streams are for hosts the hub keeps, at most [`SSE_STREAMS_PER_HOST_MAX`] per host and
    /// [`SSE_STREAMS_PER_CLIENT_MAX`] per client address (when known).
    pub(crate) fn open_stream(
        self: &Arc<Self>,
        host: &str,
        client: Option<IpAddr>,
    ) -> Result<(StreamSlot, broadcast::Receiver<Update>), HubError> {
        if self.host(host).is_none() {
            return Err(HubError::NoHost(super::parse::short(host)));
        }
        let mut counts = lock(&self.stream_counts);
        if client.is_some_and(|c| counts.by_client.get(&c).copied().unwrap_or(0) >= SSE_STREAMS_PER_CLIENT_MAX) {
            return Err(HubError::TooManyStreamsFromClient);
        }
        if counts.by_host.get(host).copied().unwrap_or(0) >= SSE_STREAMS_PER_HOST_MAX {
            return Err(HubError::TooManyStreams);
        }
        if self.streams.fetch_add(1, Ordering::Relaxed) >= SSE_STREAMS_MAX {
            self.streams.fetch_sub(1, Ordering::Relaxed);
            return Err(HubError::TooManyStreams);
        }
        *counts.by_host.entry(host.to_string()).or_insert(0) += 1;
        if let Some(c) = client {
            *counts.by_client.entry(c).or_insert(0) += 1;
        }
        drop(counts);
        let slot = StreamSlot {
            hub: self.clone(),
            host: host.to_string(),
            client,
        };
        Ok((slot, self.updates.subscribe()))
    }

    /// Charge an import of `bytes` to `client`'s budget (no address known: not charged).
    pub(crate) fn charge_import(&self, client: Option<IpAddr>, bytes: usize) -> Result<(), HubError> {
        let Some(client) = client else { return Ok(()) };
        let now = (self.clock)();
        let mut budget = lock(&self.import_budget);
        if budget.len() >= IMPORT_CLIENTS_TRACKED {
            budget.retain(|_, (start, _, _)| now.saturating_sub(*start) < IMPORT_WINDOW_MS);
        }
        let entry = budget.entry(client).or_insert((now, 0, 0));
        if now.saturating_sub(entry.0) >= IMPORT_WINDOW_MS {
            *entry = (now, 0, 0);
        }
        let bytes = bytes as u64;
        if entry.1 >= IMPORTS_PER_CLIENT_MAX || entry.2 + bytes > IMPORT_BYTES_PER_CLIENT_MAX {
            return Err(HubError::ImportBudget);
        }
        entry.1 += 1;
        entry.2 += bytes;
        Ok(())
    }

    /// A slot to work on an import, or [`HubError::ImportsBusy`] when
    /// [`IMPORTS_CONCURRENT_MAX`] are running.
    pub fn import_slot(self: &Arc<Self>) -> Result<ImportSlot, HubError> {
        if self.imports_running.fetch_add(1, Ordering::Relaxed) >= IMPORTS_CONCURRENT_MAX {
            self.imports_running.fetch_sub(1, Ordering::Relaxed);
            return Err(HubError::ImportsBusy);
        }
        Ok(ImportSlot(self.clone()))
    }

    /// Keep an import (a capture, a snapshot or a pasted `/proc/interrupts`) and return its id.
    /// What would not replay is refused before it is kept. Blocking.
    pub fn import(&self, text: &str) -> Result<String, HubError> {
        let capture = Capture {
            version: PROTOCOL_VERSION,
            snapshots: snapshots_of_text(text)?,
        };
        replay(&capture)?;
        let bytes = serde_json::to_vec(&capture).map_err(|e| HubError::BadImport(e.to_string()))?;
        let kept = lock(&self.imports)
            .insert(capture, bytes.clone())
            .map_err(|e: ImportStoreError| HubError::BadImport(e.to_string()))?;
        if let (Some(p), false) = (&self.persist, kept.existed) {
            let order = self.import_order.fetch_add(1, Ordering::Relaxed);
            if let Err(e) = p.save_import(&kept.id, order, &bytes, &kept.evicted) {
                tracing::error!("{e}");
            }
        }
        Ok(kept.id)
    }

    /// A kept import, if `id` names one.
    pub(crate) fn import_capture(&self, id: &str) -> Option<Arc<Capture>> {
        lock(&self.imports).get(id).map(|i| i.capture.clone())
    }

    /// A kept import replayed as the page shows it. Blocking.
    pub(crate) fn replay_import(&self, capture: &Capture) -> Result<Arc<HostState>, HubError> {
        replay(capture)
    }
}
