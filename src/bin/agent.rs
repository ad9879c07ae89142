//! `irqscope-agent`: read a host's interrupts and topology and push them to an irqscope server,
//! or write them to a capture file. Thin: configuration, the clock, files and sockets; reading
//! and parsing are `irqscope::live::collect`, the wire types `irqscope::live::protocol`.
//!
//! `push` never exits because of the server: a refused, slow or absent server is logged and
//! retried with capped exponential backoff; every attempt sends a fresh reading (counters are
//! cumulative, so nothing is lost by skipping a stale one).
//!
//! Bodies are gzip-compressed JSON (`Content-Encoding: gzip`). Once a server has acknowledged a
//! reading and answered with protocol 3 or later, a reading whose delta against the last
//! acknowledged one is less than half the last full body goes as that delta; a 409
//! `base-mismatch` answer makes the agent send the full reading at once. `https://` servers are reached
//! through rustls, trusting the Mozilla roots compiled in and, with `--ca-file`, the PEM
//! certificates of that file. Connections are kept alive and set `TCP_NODELAY`.
#![deny(unsafe_code)]

use anyhow::Context;
use axum::body::Body;
use clap::{Parser, Subcommand};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use irqscope::live::collect::Collector;
use irqscope::live::export::{self, ExportOptions};
use irqscope::live::limits::{AGENT_INTERVAL_MS_MIN, CAPTURE_SNAPSHOTS_MAX};
use irqscope::live::protocol::{
    encode_delta_body, encode_push_body, version_for_older_server, Capture, Delta, Snapshot, BASE_MISMATCH,
    DELTA_CONTENT_TYPE, PROTOCOL_VERSION,
};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Longest a push may take before it counts as failed.
const PUSH_TIMEOUT_MS: u64 = 10_000;
/// Largest server reply read.
const REPLY_BYTES_MAX: usize = 64 << 10;
/// Largest `--ca-file` read.
const CA_FILE_BYTES_MAX: usize = 1 << 20;
/// Largest `--token-file` read (a token is one short line).
const TOKEN_FILE_BYTES_MAX: usize = 4 << 10;

#[derive(Parser)]
#[command(
    name = "irqscope-agent",
    version,
    about = "Report where this host's interrupts land to an irqscope server."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct Source {
    /// Read `proc/` and `sys/` under this directory (`/` is this machine).
    #[arg(long, default_value = "/")]
    root: PathBuf,
    /// The host name to report (default: this machine's host name).
    #[arg(long)]
    host: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Push a snapshot to the server every interval.
    Push {
        #[command(flatten)]
        source: Source,
        /// Server base URL: `http://127.0.0.1:8080`, or `https://irqscope.example:8443`.
        #[arg(long)]
        server: String,
        /// PEM file of CA certificates to trust for an https:// server, besides the Mozilla
        /// roots built in (e.g. a private CA).
        #[arg(long, value_name = "PEM")]
        ca_file: Option<PathBuf>,
        /// File holding the bearer token (or set IRQSCOPE_AGENT_TOKEN).
        #[arg(long, value_name = "FILE")]
        token_file: Option<PathBuf>,
        #[arg(long, default_value_t = 1000)]
        interval_ms: u64,
        /// Cap of the retry backoff.
        #[arg(long, default_value_t = 30_000)]
        backoff_max_ms: u64,
        /// Stop after this many successful pushes (0: run until killed).
        #[arg(long, default_value_t = 0)]
        count: u64,
    },
    /// Serve the host's readings as Prometheus series on /metrics (a fresh reading per scrape),
    /// and/or write them to a file for node_exporter's textfile collector.
    Export {
        #[command(flatten)]
        source: Source,
        /// Address to serve /metrics on (e.g. 127.0.0.1:9477).
        #[arg(long, value_name = "ADDR")]
        listen: Option<std::net::SocketAddr>,
        /// Also (or only) write the series to this file every interval, atomically.
        #[arg(long, value_name = "PATH")]
        textfile: Option<PathBuf>,
        /// Interval of --textfile writes.
        #[arg(long, default_value_t = 15_000)]
        interval_ms: u64,
        /// With --textfile and no --listen: stop after this many writes (0: run until killed).
        #[arg(long, default_value_t = 0)]
        count: u64,
        /// Most irqscope_interrupts_total series per scrape.
        #[arg(long, default_value_t = irqscope::live::export::SERIES_MAX_DEFAULT)]
        max_series: usize,
        /// Export only IRQs whose name contains this (repeatable).
        #[arg(long, value_name = "SUBSTRING")]
        include: Vec<String>,
        /// Leave out IRQs whose name contains this (repeatable).
        #[arg(long, value_name = "SUBSTRING")]
        exclude: Vec<String>,
    },
    /// Write snapshots to a file instead: one, or N over T seconds.
    Capture {
        #[command(flatten)]
        source: Source,
        /// Output file (`-` for standard output).
        #[arg(long, short)]
        output: PathBuf,
        #[arg(long, default_value_t = 1)]
        count: usize,
        /// Spread the snapshots over this many seconds.
        #[arg(long, default_value_t = 0.0)]
        over_s: f64,
    },
}

fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn host_name(source: &Source) -> anyhow::Result<String> {
    let name = match &source.host {
        Some(h) => h.clone(),
        None => std::fs::read_to_string(source.root.join("proc/sys/kernel/hostname"))
            .or_else(|_| std::fs::read_to_string("/proc/sys/kernel/hostname"))
            .context("reading the host name (give --host)")?
            .trim()
            .to_string(),
    };
    anyhow::ensure!(
        irqscope::live::protocol::valid_host_name(&name),
        "host name {name:?}: 1 to 64 bytes of A-Z a-z 0-9 . _ -, not starting with . or _"
    );
    Ok(name)
}

/// Reads a host (buffers and the sysfs topology kept between readings).
struct Reader {
    collector: Collector,
}

impl Reader {
    fn new(source: &Source) -> anyhow::Result<Reader> {
        Ok(Reader {
            collector: Collector::new(&source.root, &host_name(source)?),
        })
    }

    fn read(&mut self) -> anyhow::Result<Snapshot> {
        Ok(self.collector.read(now_unix_ms())?)
    }
}

fn main() -> ExitCode {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .try_init();
    let result = match Cli::parse().command {
        Command::Push {
            source,
            server,
            ca_file,
            token_file,
            interval_ms,
            backoff_max_ms,
            count,
        } => push(
            source,
            &server,
            ca_file.as_deref(),
            token_file.as_deref(),
            interval_ms,
            backoff_max_ms,
            count,
        ),
        Command::Capture {
            source,
            output,
            count,
            over_s,
        } => capture(source, &output, count, over_s),
        Command::Export {
            source,
            listen,
            textfile,
            interval_ms,
            count,
            max_series,
            include,
            exclude,
        } => export(
            source,
            listen,
            textfile,
            interval_ms,
            count,
            ExportOptions {
                max_series,
                include,
                exclude,
                ..ExportOptions::default()
            },
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("irqscope-agent: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The exporter's state: one reader, shared by scrapes (a scrape reads the host afresh).
struct Exporter {
    reader: std::sync::Mutex<Reader>,
    opts: Arc<ExportOptions>,
}

impl Exporter {
    fn text(&self) -> anyhow::Result<String> {
        let snap = self
            .reader
            .lock()
            .map_err(|_| anyhow::anyhow!("reader poisoned"))?
            .read()?;
        Ok(export::encode(Arc::new(snap), self.opts.clone()))
    }
}

fn export(
    source: Source,
    listen: Option<std::net::SocketAddr>,
    textfile: Option<PathBuf>,
    interval_ms: u64,
    count: u64,
    opts: ExportOptions,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        listen.is_some() || textfile.is_some(),
        "give --listen ADDR, --textfile PATH or both"
    );
    anyhow::ensure!(
        opts.include.len() + opts.exclude.len() <= export::FILTERS_MAX,
        "at most {} --include/--exclude patterns",
        export::FILTERS_MAX
    );
    anyhow::ensure!(
        interval_ms >= AGENT_INTERVAL_MS_MIN,
        "--interval-ms must be at least {AGENT_INTERVAL_MS_MIN}"
    );
    let exporter = Arc::new(Exporter {
        reader: std::sync::Mutex::new(Reader::new(&source)?),
        opts: Arc::new(opts),
    });
    // Fail now, with the reading's error, rather than on the first scrape.
    let first = exporter.text()?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        let writer =
            textfile.map(|path| tokio::spawn(write_textfile_every(exporter.clone(), path, first, interval_ms, count)));
        match listen {
            Some(addr) => serve_metrics(addr, exporter).await?,
            None => {
                if let Some(w) = writer {
                    w.await?;
                }
            }
        }
        Ok(())
    })
}

/// `--textfile`: the exposition (`first`, then a fresh reading) written every `interval_ms`,
/// `count` times (0: for ever); a failed write is logged and tried again next time.
async fn write_textfile_every(exporter: Arc<Exporter>, path: PathBuf, first: String, interval_ms: u64, count: u64) {
    let mut text = Some(first);
    let mut written = 0u64;
    loop {
        let t = match text.take() {
            Some(t) => Ok(t),
            None => exporter.text(),
        };
        match t.and_then(|t| Ok(export::write_textfile(&path, &export::to_classic_text(&t))?)) {
            Ok(()) => written += 1,
            Err(e) => tracing::warn!("writing {}: {e:#}", path.display()),
        }
        if count > 0 && written >= count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(interval_ms)).await;
    }
}

/// `--listen`: `/metrics` answered with a fresh reading, 503 when the host cannot be read.
async fn serve_metrics(addr: std::net::SocketAddr, exporter: Arc<Exporter>) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))?;
    tracing::info!("serving /metrics on {}", listener.local_addr()?);
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let exporter = exporter.clone();
            async move {
                use axum::http::{header, StatusCode};
                use axum::response::IntoResponse;
                match exporter.text() {
                    Ok(t) => (
                        [(header::CONTENT_TYPE, export::CLASSIC_CONTENT_TYPE)],
                        export::to_classic_text(&t),
                    )
                        .into_response(),
                    Err(e) => (StatusCode::SERVICE_UNAVAILABLE, format!("reading the host: {e:#}\n")).into_response(),
                }
            }
        }),
    );
    axum::serve(listener, app).await?;
    Ok(())
}

fn capture(source: Source, output: &Path, count: usize, over_s: f64) -> anyhow::Result<()> {
    anyhow::ensure!(
        (1..=CAPTURE_SNAPSHOTS_MAX).contains(&count),
        "--count: 1 to {CAPTURE_SNAPSHOTS_MAX}"
    );
    anyhow::ensure!(
        over_s.is_finite() && over_s >= 0.0,
        "--over-s must be a number of seconds"
    );
    let gap = if count > 1 {
        Duration::from_secs_f64(over_s / (count - 1) as f64)
    } else {
        Duration::ZERO
    };
    anyhow::ensure!(
        count == 1 || gap.as_millis() as u64 >= AGENT_INTERVAL_MS_MIN,
        "snapshots would be closer than {AGENT_INTERVAL_MS_MIN} ms"
    );
    let mut reader = Reader::new(&source)?;
    let mut snapshots = Vec::with_capacity(count);
    for i in 0..count {
        if i > 0 {
            std::thread::sleep(gap);
        }
        snapshots.push(reader.read()?);
    }
    let json = serde_json::to_string(&Capture {
        version: PROTOCOL_VERSION,
        snapshots,
        probe_calls: None,
    })?;
    if output == Path::new("-") {
        println!("{json}");
    } else {
        std::fs::write(output, json + "\n").with_context(|| format!("writing {}", output.display()))?;
    }
    Ok(())
}

fn push(
    source: Source,
    server: &str,
    ca_file: Option<&Path>,
    token_file: Option<&Path>,
    interval_ms: u64,
    backoff_max_ms: u64,
    count: u64,
) -> anyhow::Result<()> {
    let token = read_token(token_file)?;
    let interval_ms = interval_ms.max(AGENT_INTERVAL_MS_MIN);
    let backoff_max_ms = backoff_max_ms.max(interval_ms);
    let host = host_name(&source)?;
    let url = snapshots_url(server, &host, ca_file)?;
    let tls = tls_config(ca_file)?;
    let mut reader = Reader {
        collector: Collector::new(&source.root, &host),
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        let client = push_client(tls);
        let mut failures: u32 = 0;
        let mut pushed: u64 = 0;
        let (mut json, mut body) = (Vec::new(), Vec::new());
        let mut deltas = Deltas::default();
        loop {
            let started = tokio::time::Instant::now();
            let collector = &mut reader.collector;
            let outcome = match collector.read_ref(now_unix_ms()) {
                Ok(_) => {
                    let delta = if deltas.server_takes_deltas { collector.delta() } else { None };
                    let snap = collector.last_reading();
                    push_reading(&client, &url, &token, snap, delta, &mut deltas, (&mut json, &mut body)).await
                }
                Err(e) => Err(format!("reading: {e:#}")),
            };
            if std::mem::take(&mut deltas.forget_base) {
                collector.forget_acknowledged();
            }
            if outcome.is_ok() {
                // The reading just pushed is the base of the next delta (kept, not copied).
                collector.acknowledge();
            }
            if let Some(version) = deltas.step_down.take() {
                // An older server: the same full snapshots under its version, no deltas, and
                // this reading again at once (at most once per version below this build's).
                tracing::warn!(
                    "the server reads protocol versions up to {version}: pushing version-{version} snapshots, no deltas (upgrade the server to push deltas)"
                );
                reader.collector.stamp_version(version);
                deltas.server_takes_deltas = false;
                continue;
            }
            let wait_ms = match outcome {
                Ok(()) => {
                    if failures > 0 {
                        tracing::info!("pushing again after {failures} failed attempts");
                    }
                    failures = 0;
                    pushed += 1;
                    if count > 0 && pushed >= count {
                        return Ok(());
                    }
                    interval_ms
                }
                Err(e) => {
                    failures = failures.saturating_add(1);
                    let backoff = interval_ms.saturating_mul(1u64 << failures.min(16)).min(backoff_max_ms);
                    tracing::warn!("push failed ({e}); retrying in {backoff} ms");
                    backoff
                }
            };
            tokio::time::sleep_until(started + Duration::from_millis(wait_ms)).await;
        }
    })
}

/// The push token: `--token-file`'s text, else `IRQSCOPE_AGENT_TOKEN`; one word.
fn read_token(token_file: Option<&Path>) -> anyhow::Result<String> {
    let token = match token_file {
        Some(p) => {
            let bytes = read_limited(p, TOKEN_FILE_BYTES_MAX)?;
            String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{}: not UTF-8 text", p.display()))?
        }
        None => std::env::var("IRQSCOPE_AGENT_TOKEN").context("no --token-file and no IRQSCOPE_AGENT_TOKEN")?,
    };
    let token = token.trim().to_string();
    anyhow::ensure!(
        !token.is_empty() && !token.contains(char::is_whitespace),
        "the token is empty or holds spaces"
    );
    Ok(token)
}

/// Where `host`'s snapshots go on `--server` (http or https; https with `--ca-file`).
fn snapshots_url(server: &str, host: &str, ca_file: Option<&Path>) -> anyhow::Result<axum::http::Uri> {
    let url: axum::http::Uri = format!("{}/api/live/{host}/snapshots", server.trim_end_matches('/'))
        .parse()
        .with_context(|| format!("--server {server:?} is not a URL"))?;
    anyhow::ensure!(
        matches!(url.scheme_str(), Some("http" | "https")),
        "--server: an http:// or https:// URL"
    );
    anyhow::ensure!(
        ca_file.is_none() || url.scheme_str() == Some("https"),
        "--ca-file needs an https:// server"
    );
    Ok(url)
}

/// An HTTP/1 client for http:// and https:// (with `tls`), without Nagle's delay.
fn push_client(tls: rustls::ClientConfig) -> Client<HttpsConnector<HttpConnector>, Body> {
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    http.enforce_http(false);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Client::builder(TokioExecutor::new()).build(connector)
}

/// What the agent knows for deltas besides the acknowledged reading (which the collector
/// keeps): whether the server takes deltas (it answered with protocol 3 or later), and the
/// last full body's size.
#[derive(Default)]
struct Deltas {
    /// Set when the server no longer holds the acknowledged reading as its base (or refused a
    /// delta): the collector forgets it, and the next push is whole.
    forget_base: bool,
    server_takes_deltas: bool,
    full_body_bytes: usize,
    /// Set when the server refused the reading's version and reads an older one that takes
    /// the same full snapshot: the version to stamp from now on.
    step_down: Option<u32>,
}

/// Push one reading: as `delta` (against the acknowledged reading, given when the server takes
/// deltas and one can be made) when its body is less than half the last full one, else in
/// full; a delta refused for its base is followed at once by the full reading. On success the
/// caller makes `snap` the acknowledged reading.
async fn push_reading(
    client: &Client<HttpsConnector<HttpConnector>, Body>,
    url: &axum::http::Uri,
    token: &str,
    snap: &Snapshot,
    delta: Option<Delta>,
    deltas: &mut Deltas,
    (json, body): (&mut Vec<u8>, &mut Vec<u8>),
) -> Result<(), String> {
    let mut reply = None;
    if let Some(delta) = delta {
        encode_delta_body(&delta, json, body).map_err(|e| format!("encoding: {e}"))?;
        if body.len() * 2 < deltas.full_body_bytes {
            match send(client, url, token, body, DELTA_CONTENT_TYPE).await {
                Err(Refused { status: 409, text }) if text.starts_with(BASE_MISMATCH) => {
                    tracing::info!("the server has another base reading; sending the full reading");
                    deltas.forget_base = true;
                }
                other => reply = Some(other),
            }
        }
    }
    let reply = match reply {
        Some(r) => r,
        None => {
            encode_push_body(snap, json, body).map_err(|e| format!("encoding: {e}"))?;
            deltas.full_body_bytes = body.len();
            send(client, url, token, body, "application/json").await
        }
    };
    match reply {
        Ok(version) => {
            deltas.server_takes_deltas = version >= 3;
            Ok(())
        }
        Err(e) => {
            // A delta the server refuses for another reason than pacing or load: send the
            // next reading in full.
            if (400..500).contains(&e.status) && e.status != 429 {
                deltas.forget_base = true;
            }
            if e.status == 400 {
                deltas.step_down = version_for_older_server(&e.text).filter(|&v| v < snap.version);
            }
            Err(e.to_string())
        }
    }
}

/// A file of at most `bytes_max` bytes (read up to one byte past it, so `/dev/zero` or a pipe
/// stops there too); a larger one is an error.
fn read_limited(path: &Path, bytes_max: usize) -> anyhow::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(bytes_max as u64 + 1).read_to_end(&mut bytes))
        .with_context(|| format!("reading {}", path.display()))?;
    anyhow::ensure!(
        bytes.len() <= bytes_max,
        "{}: larger than {bytes_max} bytes",
        path.display()
    );
    Ok(bytes)
}

/// rustls with the ring provider: the Mozilla roots, plus the certificates of `ca_file`.
fn tls_config(ca_file: Option<&Path>) -> anyhow::Result<rustls::ClientConfig> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = ca_file {
        let pem = read_limited(path, CA_FILE_BYTES_MAX)?;
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            roots
                .add(cert)
                .map_err(|e| anyhow::anyhow!("{}: a certificate rustls refuses: {e}", path.display()))?;
            added += 1;
        }
        anyhow::ensure!(added > 0, "{}: no PEM CERTIFICATE in it", path.display());
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS set-up")?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// A push that did not succeed: the HTTP status (0 when there was no answer) and the text.
#[derive(Debug)]
struct Refused {
    status: u16,
    text: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status {
            0 => write!(f, "{}", self.text),
            s => write!(f, "server answered {s}: {}", self.text),
        }
    }
}

/// POST one gzip body; the protocol version the server answered with.
async fn send(
    client: &Client<HttpsConnector<HttpConnector>, Body>,
    url: &axum::http::Uri,
    token: &str,
    body: &[u8],
    content_type: &str,
) -> Result<u32, Refused> {
    let failed = |text: String| Refused { status: 0, text };
    let req = axum::http::Request::post(url.clone())
        .header(axum::http::header::CONTENT_TYPE, content_type)
        .header(axum::http::header::CONTENT_ENCODING, "gzip")
        .header(axum::http::header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::from(body.to_vec()))
        .map_err(|e| failed(e.to_string()))?;
    let reply = tokio::time::timeout(Duration::from_millis(PUSH_TIMEOUT_MS), async {
        let resp = client.request(req).await.map_err(|e| with_causes(&e))?;
        let status = resp.status();
        let bytes = axum::body::to_bytes(Body::new(resp.into_body()), REPLY_BYTES_MAX)
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>((status, bytes))
    })
    .await
    .map_err(|_| failed(format!("no answer within {PUSH_TIMEOUT_MS} ms")))?
    .map_err(failed)?;
    if reply.0.is_success() {
        // `{"seq": N, "version": V}`; a server that names no version is taken as version 2.
        let version = serde_json::from_slice::<serde_json::Value>(&reply.1)
            .ok()
            .and_then(|v| v.get("version")?.as_u64())
            .map_or(2, |v| v.min(u64::from(u32::MAX)) as u32);
        Ok(version)
    } else {
        Err(Refused {
            status: reply.0.as_u16(),
            text: String::from_utf8_lossy(&reply.1).trim().to_string(),
        })
    }
}

/// An error and its causes on one line (the client's own message hides a refused certificate).
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let part = c.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        cause = c.source();
    }
    text
}
