//! The live hub: the one object the web layer calls. It owns the host store, the kept imports,
//! persistence, the ingestion tokens, the SSE slots and the broadcast of updates, and it holds
//! the ingestion policy (who may push, what is accepted, what is kept, what viewers are told).
//!
//! Locks are held only to read or swap `Arc`s: a snapshot is parsed and validated before the
//! store lock is taken, and persisted and rendered after it is released. Persisting is group
//! commit (`Persist::wait`): pushes arriving together share one transaction and one fsync, and
//! each is answered once its batch is on disk. The SSE event body of an accepted snapshot is
//! rendered once (by the [`EventRenderer`] the web layer hands in) on the hub's publisher
//! thread, only for hosts someone watches, and every stream of the host sends the same bytes:
//! a push is answered without waiting for rendering or for viewers, and each push wakes only
//! its own host's streams (one broadcast channel per watched host).
//!
//! Blocking: [`Hub::ingest`], [`Hub::import`], [`Hub::replay_import`] and
//! [`Hub::latest_event`] parse, persist or render; callers on an async executor run them on a
//! blocking thread.

use super::auth::{Tokens, Verdict};
use super::imports::{snapshots_of_text, BadImport, ImportStore, ImportStoreError};
use super::limits::{HOST_IDLE_MS_DEFAULT, SNAPSHOT_BYTES_MAX};
use super::persist::{Persist, PersistError, Ticket};
use super::protocol::{decode_push_body, valid_host_name, Capture, PushBodyError, Snapshot, PROTOCOL_VERSION};
use super::protocol::{Delta, DeltaError, BASE_MISMATCH};
use super::store::{self, Arrival, HostState, IngestError, LiveStore};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
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
/// Updates buffered per watched host (a ring shared by that host's SSE streams) before a slow
/// reader skips to the latest event of its host.
const UPDATES_BUFFERED_PER_HOST: usize = 4;

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
    pub(crate) host: Arc<str>,
    pub(crate) seq: u64,
    pub(crate) body: EventBody,
}

/// What a push carries ([`Hub::ingest_push`]): a full snapshot, or a delta against the host's
/// current one (protocol 3, sent as `live::protocol::DELTA_CONTENT_TYPE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PushKind {
    Snapshot,
    Delta,
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
    /// Renders events and tells the streams (its own thread).
    publisher: Arc<Publisher>,
    imports: Mutex<ImportStore>,
    /// Insertion counter of imports (their persisted order).
    import_order: AtomicU64,
    tokens: Tokens,
    persist: Option<Persist>,
    streams: AtomicUsize,
    /// Open streams per host and per client address.
    stream_counts: Mutex<StreamCounts>,
    /// Per client address: (window start, imports, bytes) in the current window.
    import_budget: Mutex<HashMap<IpAddr, (u64, u32, u64)>>,
    imports_running: AtomicUsize,
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

/// The rendering and broadcasting half of the hub, shared with its publisher thread.
struct Publisher {
    render: EventRenderer,
    /// The latest rendered event body of each host.
    events: Mutex<HashMap<String, CachedEvent>>,
    /// One channel per host with open streams (made by the first, dropped with the last).
    channels: Mutex<HashMap<String, broadcast::Sender<Update>>>,
    /// Accepted states not yet published, the latest per host (a newer one replaces an older:
    /// bounded by the hosts kept), and whether the hub is gone.
    pending: Mutex<(HashMap<String, Arc<HostState>>, bool)>,
    wake: Condvar,
}

impl Publisher {
    fn new(render: EventRenderer) -> Arc<Publisher> {
        Arc::new(Publisher {
            render,
            events: Mutex::new(HashMap::new()),
            channels: Mutex::new(HashMap::new()),
            pending: Mutex::new((HashMap::new(), false)),
            wake: Condvar::new(),
        })
    }

    /// Start the publisher thread; it ends once [`Publisher::close`] was called.
    fn start(self: &Arc<Self>) {
        let me = self.clone();
        let started = std::thread::Builder::new()
            .name("live-publish".into())
            .spawn(move || me.run());
        if let Err(e) = started {
            // Without the thread streams still get every host's latest event on connect and
            // after falling behind; say why updates do not flow.
            tracing::error!("live: cannot start the publisher thread: {e}");
        }
    }

    fn run(&self) {
        loop {
            let batch = {
                let mut pending = lock(&self.pending);
                while pending.0.is_empty() && !pending.1 {
                    pending = self.wake.wait(pending).unwrap_or_else(|p| p.into_inner());
                }
                if pending.1 {
                    return;
                }
                std::mem::take(&mut pending.0)
            };
            for (host, state) in batch {
                self.publish_now(&host, &state);
            }
        }
    }

    /// Hand `state` to the thread (replacing an older state of its host not yet published).
    fn submit(&self, host: &str, state: Arc<HostState>) {
        let mut pending = lock(&self.pending);
        if pending.0.get(host).is_none_or(|p| p.seq < state.seq) {
            pending.0.insert(host.to_string(), state);
        }
        drop(pending);
        self.wake.notify_one();
    }

    fn close(&self) {
        lock(&self.pending).1 = true;
        self.wake.notify_all();
    }

    /// Render `state`'s event, keep it as the host's latest and send it to the host's streams;
    /// a host nobody watches is not rendered (its first viewer renders it, `latest_event`).
    fn publish_now(&self, host: &str, state: &HostState) {
        let Some(tx) = lock(&self.channels).get(host).cloned() else {
            return;
        };
        let body = self.render_and_cache(host, state);
        // Every stream may have ended meanwhile: not an error.
        let _ = tx.send(Update {
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
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.publisher.close();
    }
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
        if !counts.by_host.contains_key(&self.host) {
            lock(&self.hub.publisher.channels).remove(&self.host);
        }
        if let Some(c) = &self.client {
            release(&mut counts.by_client, c);
        }
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

/// Hosts the store dropped (idle or deleted), with their queued removal from the store file.
struct Gone {
    hosts: Vec<String>,
    ticket: Option<Ticket>,
}

impl Hub {
    /// A hub with `tokens` (empty: ingestion off), history kept in `persist` when given and
    /// restored from it now. Returns the hub and notes about records that were skipped.
    pub fn new(
        tokens: Tokens,
        persist: Option<Persist>,
        render: EventRenderer,
    ) -> Result<(Hub, Vec<String>), PersistError> {
        let mut store = LiveStore::new().with_unbound_tokens(tokens.unbound_count());
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
        let import_order = AtomicU64::new(imports.len() as u64);
        let publisher = Publisher::new(render);
        publisher.start();
        let hub = Hub {
            store: Mutex::new(store),
            publisher,
            imports: Mutex::new(imports),
            import_order,
            tokens,
            persist,
            streams: AtomicUsize::new(0),
            stream_counts: Mutex::new(StreamCounts::default()),
            import_budget: Mutex::new(HashMap::new()),
            imports_running: AtomicUsize::new(0),
            clock: monotonic_clock(),
            policy: HubPolicy::default(),
        };
        Ok((hub, notes))
    }

    /// The same hub paced by `clock` instead of the monotonic clock (tests drive time).
    pub(crate) fn with_clock(mut self, clock: Clock) -> Hub {
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
    /// host name and the body (`content_encoding` as sent: identity or gzip), keep it, persist it
    /// (group commit: answered once its batch is on disk), and hand it to the publisher thread,
    /// which renders its event once and tells the streams. Returns the host's new `seq`.
    /// Blocking.
    pub fn ingest(
        &self,
        host: &str,
        bearer: Option<&[u8]>,
        content_encoding: Option<&str>,
        body: &[u8],
    ) -> Result<u64, HubError> {
        self.ingest_push(PushKind::Snapshot, host, bearer, content_encoding, body)
    }

    /// Accept a push of either kind. A snapshot is kept as [`Hub::ingest`] says. A delta
    /// (protocol 3, `live::protocol::Delta`) has the same checks, then the full snapshot is
    /// rebuilt from the host's current one and kept exactly as a full push (same validation,
    /// limits, store contents, persistence and events). A base that is not the host's current
    /// reading when the rebuilt one is stored (no such host, another reading landed, the host
    /// expired) is [`HubError::BaseMismatch`]. Blocking.
    pub(crate) fn ingest_push(
        &self,
        kind: PushKind,
        host: &str,
        bearer: Option<&[u8]>,
        content_encoding: Option<&str>,
        body: &[u8],
    ) -> Result<u64, HubError> {
        let unbound = self.admit_push(host, bearer)?;
        match kind {
            PushKind::Snapshot => {
                let snap =
                    decode_push_body::<Snapshot>(content_encoding, body, SNAPSHOT_BYTES_MAX).map_err(HubError::Body)?;
                self.keep_pushed(host, snap, unbound, None)
            }
            PushKind::Delta => {
                let delta =
                    decode_push_body::<Delta>(content_encoding, body, SNAPSHOT_BYTES_MAX).map_err(HubError::Body)?;
                let base = self.host(host).ok_or(HubError::BaseMismatch)?;
                // Rebuilt outside the lock; kept only if `base` is still the host's state.
                let snap = delta.apply(&base.snapshot).map_err(|e| match e {
                    DeltaError::BaseMismatch => HubError::BaseMismatch,
                    DeltaError::Bad(_) => HubError::Body(PushBodyError::Bad(e.to_string())),
                })?;
                self.keep_pushed(host, snap, unbound, Some(base))
            }
        }
    }

    /// Ingestion is on, the host name is valid and the bearer token may push for it; whether
    /// the token is bound to no host.
    fn admit_push(&self, host: &str, bearer: Option<&[u8]>) -> Result<Option<u32>, HubError> {
        if self.tokens.is_empty() {
            return Err(HubError::Disabled);
        }
        let presented = bearer.ok_or(HubError::TokenMissing)?;
        if !valid_host_name(host) {
            return Err(HubError::BadHostName);
        }
        match self.tokens.check(presented, host) {
            Verdict::Accepted { unbound } => Ok(unbound),
            Verdict::Unknown => Err(HubError::TokenUnknown),
            Verdict::WrongHost => Err(HubError::WrongHost),
        }
    }

    /// Keep a pushed snapshot (validated before the store lock), persist it (group commit:
    /// answered once its batch is on disk) and hand it to the publisher. With `base` (a
    /// delta's), only while `base` is still the host's current state.
    fn keep_pushed(
        &self,
        host: &str,
        snap: Snapshot,
        unbound: Option<u32>,
        base: Option<Arc<HostState>>,
    ) -> Result<u64, HubError> {
        let topology = store::check(host, &snap).map_err(HubError::Ingest)?;
        let received_ms = (self.clock)();
        let (state, expired) = {
            let mut store = lock(&self.store);
            let expired = self.expire_locked(&mut store, received_ms);
            let current = base.is_none_or(|b| store.host(host).is_some_and(|now| Arc::ptr_eq(now, &b)));
            let state = if current {
                let at = Arrival { received_ms, unbound };
                store.ingest_checked(host, snap, topology, at).map_err(HubError::Ingest)
            } else {
                Err(HubError::BaseMismatch)
            };
            let expired = self.make_room(&mut store, expired);
            // Queued under the store lock, so one host's readings reach the disk in seq order.
            let ticket = match (&state, &self.persist) {
                (Ok(st), Some(p)) => Some(p.enqueue(st.clone())),
                _ => None,
            };
            ((state, ticket), expired)
        };
        self.forget(expired);
        let (state, ticket) = state;
        let state = state?;
        // Acknowledged only once kept on disk (when a store is configured). A reading that
        // could not be kept stays in memory (rates stay continuous) but is not announced nor
        // acknowledged: the agent pushes a newer one, and only acknowledged readings are
        // promised to survive a restart.
        if let (Some(p), Some(ticket)) = (&self.persist, ticket) {
            if let Err(e) = p.wait(ticket) {
                tracing::error!("{e}");
                return Err(HubError::Store(e.to_string()));
            }
        }
        let seq = state.seq;
        self.publish(host, state);
        Ok(seq)
    }

    /// Accept a snapshot the server read itself (`live::prometheus`): no token, not persisted
    /// (its source keeps the history), otherwise the path of a push: the same store, pacing,
    /// rendering and streams. The source brings its own rates and history: `amend` changes the
    /// kept state in place, under the store lock, before it is published. Blocking.
    pub(crate) fn ingest_source_with(
        &self,
        snap: Snapshot,
        amend: impl FnOnce(&mut HostState),
    ) -> Result<u64, HubError> {
        let host = snap.host.clone();
        if !valid_host_name(&host) {
            return Err(HubError::BadHostName);
        }
        let topology = store::check(&host, &snap).map_err(HubError::Ingest)?;
        let received_ms = (self.clock)();
        let (state, expired) = {
            let mut store = lock(&self.store);
            let expired = self.expire_locked(&mut store, received_ms);
            let at = Arrival {
                received_ms,
                unbound: None,
            };
            let state = store.ingest_checked(&host, snap, topology, at).map(|kept| {
                drop(kept);
                store.amend(&host, amend)
            });
            let expired = self.make_room(&mut store, expired);
            (state, expired)
        };
        self.forget(expired);
        let state = state
            .map_err(HubError::Ingest)?
            .ok_or_else(|| HubError::NoHost(host.clone()))?;
        let seq = state.seq;
        self.publish(&host, state);
        Ok(seq)
    }

    /// Hand an accepted state to the publisher thread (renders its event when the host is
    /// watched and tells its streams). Never waits for rendering.
    fn publish(&self, host: &str, state: Arc<HostState>) {
        self.publisher.submit(host, state);
    }

    /// The host's current state (a pointer: nothing is copied under the lock).
    pub fn host(&self, host: &str) -> Option<Arc<HostState>> {
        lock(&self.store).host(host).cloned()
    }

    /// Every host's current state, by name (idle ones dropped first).
    pub fn hosts(&self) -> Vec<Arc<HostState>> {
        let (hosts, expired) = {
            let mut store = lock(&self.store);
            let expired = self.expire_locked(&mut store, (self.clock)());
            (store.hosts().map(|(_, st)| st.clone()).collect(), expired)
        };
        self.forget(expired);
        hosts
    }

    /// Delete `host` with an admin token. Blocking (persists).
    pub(crate) fn delete(&self, host: &str, bearer: Option<&[u8]>) -> Result<(), HubError> {
        if self.tokens.no_admin() {
            return Err(HubError::NoAdmin);
        }
        let presented = bearer.ok_or(HubError::TokenMissing)?;
        if !self.tokens.is_admin(presented) {
            return Err(HubError::NotAdmin);
        }
        let gone = {
            let mut store = lock(&self.store);
            if !store.remove(host) {
                return Err(HubError::NoHost(super::parse::short(host)));
            }
            self.gone(vec![host.to_string()])
        };
        self.forget(gone);
        Ok(())
    }

    /// Drop the hosts idle past the policy's limit from the store (held locked by the caller).
    fn expire_locked(&self, store: &mut LiveStore, now_ms: u64) -> Gone {
        let hosts = store.expire(now_ms, self.policy.host_idle_ms);
        self.gone(hosts)
    }

    /// `gone` and the hosts the store dropped to make room for a new one (held locked by the
    /// caller): one removal from the store file for both.
    fn make_room(&self, store: &mut LiveStore, gone: Gone) -> Gone {
        let evicted = store.take_evicted();
        if evicted.is_empty() {
            return gone;
        }
        for h in &evicted {
            tracing::info!("live host {h} evicted to make room for a new host");
        }
        // Queued after the expired hosts' removal: waiting for this one waits for both.
        let ticket = match &self.persist {
            Some(p) => Some(p.enqueue_removal(evicted.clone())),
            None => gone.ticket,
        };
        let mut hosts = gone.hosts;
        hosts.extend(evicted);
        Gone { hosts, ticket }
    }

    /// Hosts just dropped from the store, their removal from the store file queued while the
    /// store lock is still held: behind every reading of theirs queued before, ahead of any
    /// reading a new push of the same name queues after.
    fn gone(&self, hosts: Vec<String>) -> Gone {
        let ticket = match &self.persist {
            Some(p) if !hosts.is_empty() => Some(p.enqueue_removal(hosts.clone())),
            _ => None,
        };
        Gone { hosts, ticket }
    }

    /// Drop the cached events of hosts the store no longer keeps and wait until their records
    /// are gone from the store file.
    fn forget(&self, gone: Gone) {
        if gone.hosts.is_empty() {
            return;
        }
        let mut events = lock(&self.publisher.events);
        for h in &gone.hosts {
            events.remove(h);
            tracing::info!("live host {h} dropped");
        }
        drop(events);
        if let (Some(p), Some(ticket)) = (&self.persist, gone.ticket) {
            if let Err(e) = p.wait(ticket) {
                tracing::error!("{e}");
            }
        }
    }

    /// The latest event of `host`: the cached bytes, or rendered now for a host restored from
    /// disk that has not pushed since. Blocking (may render).
    pub(crate) fn latest_event(&self, host: &str) -> Option<(u64, EventBody)> {
        let state = self.host(host)?;
        if let Some(cached) = lock(&self.publisher.events).get(host).filter(|c| c.0 >= state.seq) {
            return Some(cached.clone());
        }
        let body = self.publisher.render_and_cache(host, &state);
        Some((state.seq, body))
    }

    /// A viewer's stream of one host's events, as (seq, the bytes rendered once): the latest
    /// at once, then one per accepted snapshot, skipping readings already sent; a reader that
    /// fell behind the shared ring gets the latest. It holds its slot ([`Hub::open_stream`]'s
    /// limits) until it is dropped, and ends when the hub does; the caller bounds its lifetime.
    pub(crate) async fn stream(
        self: &Arc<Self>,
        host: &str,
        client: Option<IpAddr>,
    ) -> Result<impl futures_util::Stream<Item = (u64, EventBody)> + Send + 'static, HubError> {
        // Subscribe first, then read the latest event: a snapshot accepted in between is either
        // in that event or announced on `rx` (and then skipped by seq).
        let (slot, rx) = self.open_stream(host, client)?;
        let first = self.latest_event_off_thread(host.to_string()).await;
        let sent = first.as_ref().map(|f| f.0);
        Ok(futures_util::stream::unfold(
            (rx, first, sent, slot),
            |(mut rx, first, sent, slot)| async move {
                if let Some(ev) = first {
                    return Some((ev, (rx, None, sent, slot)));
                }
                loop {
                    let (seq, body) = match rx.recv().await {
                        Ok(Update { host, seq, body }) if *host == *slot.host => (seq, body),
                        Ok(_) => continue,
                        // Updates were dropped: this host may have had some.
                        Err(broadcast::error::RecvError::Lagged(_)) => {
                            match slot.hub.latest_event_off_thread(slot.host.clone()).await {
                                Some(latest) => latest,
                                None => continue,
                            }
                        }
                        Err(broadcast::error::RecvError::Closed) => return None,
                    };
                    if sent.is_none_or(|s| seq > s) {
                        return Some(((seq, body), (rx, None, Some(seq), slot)));
                    }
                }
            },
        ))
    }

    /// [`Hub::latest_event`] on a blocking thread (it may render).
    async fn latest_event_off_thread(self: &Arc<Self>, host: String) -> Option<(u64, EventBody)> {
        let hub = self.clone();
        tokio::task::spawn_blocking(move || hub.latest_event(&host))
            .await
            .ok()
            .flatten()
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
        let rx = lock(&self.publisher.channels)
            .entry(host.to_string())
            .or_insert_with(|| broadcast::channel(UPDATES_BUFFERED_PER_HOST).0)
            .subscribe();
        drop(counts);
        let slot = StreamSlot {
            hub: self.clone(),
            host: host.to_string(),
            client,
        };
        Ok((slot, rx))
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
    pub(crate) fn import(&self, text: &str) -> Result<String, HubError> {
        let capture = Capture {
            version: PROTOCOL_VERSION,
            snapshots: snapshots_of_text(text)?,
            probe_calls: None,
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
