//! Serving a router on a TCP listener: the socket set-up and the limits against slow, silent
//! and too many clients, and a graceful shutdown.
//!
//! One HTTP/1.1 connection per task (hyper's connection builder, as `axum::serve` uses, but with
//! the limits it does not expose):
//! - `TCP_NODELAY` on every accepted socket: a response written in two parts (headers, then
//!   body) must not wait for the client's delayed ACK under Nagle's algorithm.
//! - [`HEADER_READ_TIMEOUT`]: a request head must arrive whole within this time of the server
//!   starting to wait for it (hyper's `header_read_timeout`), so a client trickling header bytes
//!   is closed.
//! - [`IDLE_TIMEOUT`]: a connection with no request in flight that has read nothing for this
//!   long is closed: a client that connects and says nothing, and an idle keep-alive connection.
//!   A request in flight (a slow page, an SSE stream) is never idle, whatever its pace.
//! - [`CONNECTIONS_MAX`] (`serve --max-connections N`, at most [`CONNECTIONS_MAX_LIMIT`]) open
//!   connections, shared by client address (an IPv4 address, an IPv6 /64): the server always
//!   accepts, and when the pool is full a newcomer takes the place of an idle connection (no
//!   request in flight: a silent client, a trickling head, a kept-alive connection), the
//!   longest idle one of the address that holds the most; when none is idle, the newest busy
//!   connection of an address holding at least two more than the newcomer's is cut; otherwise
//!   the newcomer is answered 503 with `Retry-After` and closed. So one address cannot take
//!   the server from the others, however many connections it opens.
//! - Shutdown: stop accepting, let every connection finish its request in flight (keep-alive
//!   connections close after it), and give up after [`SHUTDOWN_GRACE`].

use axum::body::Body;
use axum::http::{Request, Response};
use axum::Router;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, Ipv6Addr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify};

/// Longest wait for a whole request head, counted from when the server starts waiting for it.
pub(crate) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection with no request in flight and nothing read for this long is closed.
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// Open connections at most (SSE streams included) unless `serve --max-connections` says
/// otherwise; keep it under the descriptor limit (`ulimit -n`, often 1,024) with room for files.
pub const CONNECTIONS_MAX: usize = 512;
/// The most `--max-connections` may ask for: each connection is a descriptor, a task and its
/// buffers, and the kernel's own ceiling on descriptors per process is about a million.
pub(crate) const CONNECTIONS_MAX_LIMIT: usize = 65_536;

/// A `--max-connections` value: 1 to [`CONNECTIONS_MAX_LIMIT`].
pub fn parse_connections_max(text: &str) -> Result<usize, String> {
    super::work::parse_in_range(text, "connections", "connections", 1..=CONNECTIONS_MAX_LIMIT)
}
/// After a shutdown signal, how long requests in flight may take to finish.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// Pause after an accept error such as EMFILE, instead of spinning on it.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// The limits [`serve`] applies; `Default` is the named constants (tests shorten them).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub connections_max: usize,
    pub shutdown_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_read_timeout: HEADER_READ_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
            connections_max: CONNECTIONS_MAX,
            shutdown_grace: SHUTDOWN_GRACE,
        }
    }
}

/// Serve `app` on `listener` until `shutdown` resolves, then finish gracefully (within
/// `limits.shutdown_grace`). Returns once every connection is closed or the grace ran out.
pub async fn serve(listener: TcpListener, app: Router, limits: Limits, shutdown: impl Future<Output = ()>) {
    assert!(limits.connections_max > 0, "connections_max must be positive");
    let pool = Arc::new(Pool::new(limits.connections_max));
    let (stop_tx, stop_rx) = watch::channel(Stop::Run);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!("accept error: {e}");
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let activity = Arc::new(Activity::new());
        let Some(lease) = pool.admit(peer.ip(), &activity) else {
            tracing::debug!("{peer}: refused, the pool is full of busy connections");
            // Not read: the client sees the answer or a reset, and either way tries later.
            let _ = stream.try_write(POOL_FULL_ANSWER.as_bytes());
            continue;
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!("{peer}: TCP_NODELAY: {e}");
        }
        let app = app.clone();
        let stop = stop_rx.clone();
        tokio::spawn(async move {
            serve_connection(stream, peer, app, limits, stop, activity).await;
            drop(lease);
        });
    }
    drop(listener);
    let _ = stop_tx.send(Stop::Finish);
    let finished = tokio::time::timeout(limits.shutdown_grace, pool.closed()).await;
    match finished {
        Ok(()) => tracing::info!("shut down"),
        Err(_) => {
            tracing::warn!(
                "closing {} connection(s) still busy after {:?}",
                pool.connections(),
                limits.shutdown_grace
            );
            let _ = stop_tx.send(Stop::Close);
        }
    }
}

/// What a newcomer is told when every connection is busy and no address holds more than its
/// share: nothing of its request has been read.
const POOL_FULL_ANSWER: &str = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n\
    Content-Type: text/plain; charset=utf-8\r\nContent-Length: 49\r\nConnection: close\r\n\r\n\
    every connection is busy; try again in a second\n";

/// What the accept loop tells its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Run,
    /// Finish the request in flight, then close.
    Finish,
    /// Close now: the grace is over.
    Close,
}

/// What the pool asks of a connection it evicts.
const EVICT_NONE: u8 = 0;
/// Close if idle; a request that started meanwhile finishes first.
const EVICT_IDLE: u8 = 1;
/// Close now, request in flight or not.
const EVICT_CUT: u8 = 2;

/// What the idle rule and the pool look at: requests whose response has not been sent whole,
/// when the connection last read a byte or finished a response (milliseconds since it was
/// accepted), and whether the pool wants it closed.
struct Activity {
    epoch: Instant,
    in_flight: AtomicUsize,
    last_ms: AtomicU64,
    evict: AtomicU8,
    evicted: Notify,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            epoch: Instant::now(),
            in_flight: AtomicUsize::new(0),
            last_ms: AtomicU64::new(0),
            evict: AtomicU8::new(EVICT_NONE),
            evicted: Notify::new(),
        }
    }

    fn touch(&self) {
        self.last_ms
            .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    fn idle(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
    }

    /// When the connection last did something.
    fn last(&self) -> Instant {
        self.epoch + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }

    /// When the connection becomes idle if nothing happens (`None` while a request is in flight).
    fn idle_deadline(&self, idle: Duration) -> Option<tokio::time::Instant> {
        if !self.idle() {
            return None;
        }
        Some(tokio::time::Instant::from_std(self.last() + idle))
    }

    fn evict(&self, how: u8) {
        self.evict.store(how, Ordering::Release);
        // Stored when the connection is not waiting: it sees it at its next wait.
        self.evicted.notify_one();
    }
}

/// Which connections of the pool one address counts as: an IPv4 address, or an IPv6 /64 (one
/// machine usually holds a whole /64); IPv4-mapped IPv6 addresses as IPv4.
pub(crate) fn share_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        },
    }
}

/// The open connections by client address (see the module's rule).
struct Pool {
    connections_max: usize,
    inner: Mutex<PoolInner>,
    /// Told when the last connection closes.
    emptied: Notify,
}

#[derive(Default)]
struct PoolInner {
    next_id: u64,
    /// Connections not asked to close, which are what the cap counts.
    counted: usize,
    /// Every connection still open, by share key, oldest first.
    by_client: HashMap<IpAddr, Vec<Member>>,
}

struct Member {
    id: u64,
    activity: Arc<Activity>,
    /// Asked to close (no longer counted against the cap or its address).
    evicted: bool,
}

impl PoolInner {
    fn counted_of(&self, key: &IpAddr) -> usize {
        self.by_client
            .get(key)
            .map_or(0, |m| m.iter().filter(|m| !m.evicted).count())
    }

    /// The connection to close for a newcomer from `key` when the pool is full, and how: the
    /// longest idle of the address holding the most; else the newest busy one of an address
    /// holding at least two more than the newcomer's.
    fn victim(&self, key: &IpAddr) -> Option<(IpAddr, u64, u8)> {
        let mut idle: Option<(usize, Instant, IpAddr, u64)> = None;
        let mut busy: Option<(usize, IpAddr, u64)> = None;
        for (client, members) in &self.by_client {
            let held = members.iter().filter(|m| !m.evicted).count();
            for m in members.iter().filter(|m| !m.evicted) {
                if m.activity.idle() {
                    let last = m.activity.last();
                    let better = idle.is_none_or(|(h, l, _, _)| held > h || (held == h && last < l));
                    if better {
                        idle = Some((held, last, *client, m.id));
                    }
                } else if busy.is_none_or(|(h, _, id)| held > h || (held == h && m.id > id)) {
                    busy = Some((held, *client, m.id));
                }
            }
        }
        if let Some((_, _, client, id)) = idle {
            return Some((client, id, EVICT_IDLE));
        }
        let mine = self.counted_of(key);
        busy.filter(|(held, _, _)| *held >= mine + 2)
            .map(|(_, client, id)| (client, id, EVICT_CUT))
    }
}

impl Pool {
    fn new(connections_max: usize) -> Pool {
        Pool {
            connections_max,
            inner: Mutex::new(PoolInner::default()),
            emptied: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PoolInner> {
        // Every update is a few field writes that cannot panic half-way.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for a connection from `ip`, evicting another when the pool is full; `None`:
    /// refused (every connection busy, none of an address over the newcomer's share).
    fn admit(self: &Arc<Self>, ip: IpAddr, activity: &Arc<Activity>) -> Option<Lease> {
        let key = share_key(ip);
        let mut inner = self.lock();
        if inner.counted >= self.connections_max {
            let (client, id, how) = inner.victim(&key)?;
            if let Some(m) = inner
                .by_client
                .get_mut(&client)
                .and_then(|ms| ms.iter_mut().find(|m| m.id == id))
            {
                m.evicted = true;
                m.activity.evict(how);
            }
            inner.counted -= 1;
        }
        inner.next_id += 1;
        let id = inner.next_id;
        inner.counted += 1;
        inner.by_client.entry(key).or_default().push(Member {
            id,
            activity: activity.clone(),
            evicted: false,
        });
        Some(Lease {
            pool: self.clone(),
            key,
            id,
        })
    }

    fn connections(&self) -> usize {
        self.lock().by_client.values().map(Vec::len).sum()
    }

    /// Resolves once every connection has closed.
    async fn closed(&self) {
        loop {
            let emptied = self.emptied.notified();
            if self.lock().by_client.is_empty() {
                return;
            }
            emptied.await;
        }
    }
}

/// A connection's place in the pool, given back when its task ends.
struct Lease {
    pool: Arc<Pool>,
    key: IpAddr,
    id: u64,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut inner = self.pool.lock();
        let Some(members) = inner.by_client.get_mut(&self.key) else {
            return;
        };
        let Some(at) = members.iter().position(|m| m.id == self.id) else {
            return;
        };
        let gone = members.remove(at);
        if members.is_empty() {
            inner.by_client.remove(&self.key);
        }
        if !gone.evicted {
            inner.counted -= 1;
        }
        if inner.by_client.is_empty() {
            drop(inner);
            self.pool.emptied.notify_one();
        }
    }
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    app: Router,
    limits: Limits,
    mut stop: watch::Receiver<Stop>,
    activity: Arc<Activity>,
) {
    let io = TokioIo::new(ReadWatch {
        inner: stream,
        activity: activity.clone(),
    });
    let service = Tracked {
        inner: TowerToHyperService::new(app),
        activity: activity.clone(),
        peer,
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let conn = builder.serve_connection(io, service).with_upgrades();
    let mut conn = std::pin::pin!(conn);
    let mut closing = false;
    // Re-check while a request is in flight: its end restarts the idle clock.
    let poll_in_flight = limits.idle_timeout.max(Duration::from_millis(100));
    loop {
        let wake = activity
            .idle_deadline(limits.idle_timeout)
            .unwrap_or_else(|| tokio::time::Instant::now() + poll_in_flight);
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!("connection: {e}");
                }
                return;
            }
            r = stop.changed() => {
                let now = if r.is_ok() { *stop.borrow_and_update() } else { Stop::Close };
                match now {
                    Stop::Run => {}
                    Stop::Finish if !closing => {
                        closing = true;
                        conn.as_mut().graceful_shutdown();
                    }
                    Stop::Finish => {}
                    Stop::Close => return,
                }
            }
            () = tokio::time::sleep_until(wake), if !closing => {
                if activity.idle_deadline(limits.idle_timeout).is_some_and(|d| d <= tokio::time::Instant::now()) {
                    closing = true;
                    conn.as_mut().graceful_shutdown();
                }
            }
            () = activity.evicted.notified() => {
                // Evicted for a newcomer: an idle connection (or a cut one) closes now, one
                // whose request started meanwhile after it.
                if activity.idle() || activity.evict.load(Ordering::Acquire) == EVICT_CUT {
                    return;
                }
                if !closing {
                    closing = true;
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// The socket, noting each read that brings bytes.
struct ReadWatch {
    inner: tokio::net::TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for ReadWatch {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        r
    }
}

impl AsyncWrite for ReadWatch {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The router as a hyper service that counts a request in flight until its response body has
/// been sent whole (or dropped), and tells handlers the peer's address (`ConnectInfo`, which
/// the live hub's per-client budgets key on).
#[derive(Clone)]
struct Tracked {
    inner: TowerToHyperService<Router>,
    activity: Arc<Activity>,
    peer: std::net::SocketAddr,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl hyper::service::Service<Request<Incoming>> for Tracked {
    type Response = Response<InFlightBody>;
    type Error = std::convert::Infallible;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn call(&self, mut req: Request<Incoming>) -> Self::Future {
        req.extensions_mut().insert(axum::extract::ConnectInfo(self.peer));
        self.activity.in_flight.fetch_add(1, Ordering::AcqRel);
        let guard = InFlight(self.activity.clone());
        let fut = self.inner.call(req);
        Box::pin(async move {
            let resp = fut.await?;
            Ok(resp.map(|body| InFlightBody { body, _guard: guard }))
        })
    }
}

/// Ends a request's time in flight when dropped.
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that holds its request's [`InFlight`] until hyper drops it.
struct InFlightBody {
    body: Body,
    _guard: InFlight,
}

impl HttpBody for InFlightBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }
    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }
    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
