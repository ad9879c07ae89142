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
//! - [`CONNECTIONS_MAX`] (`serve --max-connections N`, at most [`CONNECTIONS_MAX_LIMIT`]):
//!   beyond this many open connections the server stops accepting until one closes (new clients
//!   wait in the listen backlog), so idle sockets cannot exhaust descriptors.
//! - Shutdown: stop accepting, let every connection finish its request in flight (keep-alive
//!   connections close after it), and give up after [`SHUTDOWN_GRACE`].

use axum::body::Body;
use axum::http::{Request, Response};
use axum::Router;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

/// Longest wait for a whole request head, counted from when the server starts waiting for it.
pub(crate) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection with no request in flight and nothing read for this long is closed.
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// Open connections at most (SSE streams included) unless `serve --max-connections` says
/// otherwise; keep it under the descriptor limit (`ulimit -n`, often 1,024) with room for files.
pub const CONNECTIONS_MAX: usize = 512;
/// The most `--max-connections` may ask for: each connection is a descriptor, a task and its
/// buffers, and the kernel's own ceiling on descriptors per process is about a million.
pub const CONNECTIONS_MAX_LIMIT: usize = 65_536;

/// A `--max-connections` value: 1 to [`CONNECTIONS_MAX_LIMIT`].
pub fn parse_connections_max(text: &str) -> Result<usize, String> {
    let n: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of connections"))?;
    if n == 0 || n > CONNECTIONS_MAX_LIMIT {
        return Err(format!("{n} connections: want 1 to {CONNECTIONS_MAX_LIMIT}"));
    }
    Ok(n)
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
    let permits = Arc::new(Semaphore::new(limits.connections_max));
    let (stop_tx, stop_rx) = watch::channel(Stop::Run);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
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
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!("{peer}: TCP_NODELAY: {e}");
        }
        let app = app.clone();
        let stop = stop_rx.clone();
        tokio::spawn(async move {
            serve_connection(stream, peer, app, limits, stop).await;
            drop(permit);
        });
    }
    drop(listener);
    let _ = stop_tx.send(Stop::Finish);
    let all = u32::try_from(limits.connections_max).unwrap_or(u32::MAX);
    let finished = tokio::time::timeout(limits.shutdown_grace, permits.acquire_many(all)).await;
    match finished {
        Ok(_) => tracing::info!("shut down"),
        Err(_) => {
            tracing::warn!(
                "closing {} connection(s) still busy after {:?}",
                limits.connections_max - permits.available_permits(),
                limits.shutdown_grace
            );
            let _ = stop_tx.send(Stop::Close);
        }
    }
}

/// What the accept loop tells its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Run,
    /// Finish the request in flight, then close.
    Finish,
    /// Close now: the grace is over.
    Close,
}

/// What the idle rule looks at: requests whose response has not been sent whole, and when the
/// connection last read a byte or finished a response (milliseconds since it was accepted).
struct Activity {
    epoch: Instant,
    in_flight: AtomicUsize,
    last_ms: AtomicU64,
}

impl Activity {
    fn touch(&self) {
        self.last_ms
            .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// When the connection becomes idle if nothing happens (`None` while a request is in flight).
    fn idle_deadline(&self, idle: Duration) -> Option<tokio::time::Instant> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let last = self.epoch + Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        Some(tokio::time::Instant::from_std(last + idle))
    }
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    app: Router,
    limits: Limits,
    mut stop: watch::Receiver<Stop>,
) {
    let activity = Arc::new(Activity {
        epoch: Instant::now(),
        in_flight: AtomicUsize::new(0),
        last_ms: AtomicU64::new(0),
    });
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
