//! `irqscope serve`: the dashboard on a socket, with live mode configured from files and
//! flags (ingestion and viewer tokens, the history store, a trusted proxy, a Prometheus to
//! read hosts from). Everything it serves is `web::app`.

use crate::read_text;
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

/// Live mode: who may push snapshots, and where history is kept.
#[derive(clap::Args)]
pub(crate) struct LiveArgs {
    /// Ingestion tokens, one `TOKEN` or `HOST=TOKEN` per line (or the same text in the
    /// IRQSCOPE_LIVE_TOKENS variable). Without tokens, ingestion is disabled.
    #[arg(long, value_name = "FILE")]
    pub(crate) live_tokens: Option<PathBuf>,
    /// Viewer tokens, one per line: when given, the live pages, their JSON and SSE streams
    /// need one (Authorization: Bearer, or the cookie a visit with ?token=TOKEN sets).
    #[arg(long, value_name = "FILE")]
    pub(crate) live_viewer_tokens: Option<PathBuf>,
    /// A TLS proxy in front of the server (its address as the server sees it, e.g.
    /// 127.0.0.1): requests from it are counted against the client its X-Forwarded-For names
    /// (per-client SSE cap, import budget). Repeat for several.
    #[arg(long, value_name = "ADDR")]
    pub(crate) live_trusted_proxy: Vec<std::net::IpAddr>,
    /// Keep live history in this file (redb) so a restart loses none.
    #[arg(long, value_name = "FILE")]
    pub(crate) live_store: Option<PathBuf>,
    /// Drop a live host that has not pushed for this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = irqscope::live::limits::HOST_IDLE_MS_DEFAULT / 1000)]
    pub(crate) live_host_idle: u64,
    /// If the --live-store file is damaged, rename it to FILE.damaged-N and start empty.
    #[arg(long)]
    pub(crate) live_store_move_aside: bool,
    /// Also serve every host this Prometheus scrapes from `irqscope-agent export`
    /// (http://HOST:PORT or https://, or a Thanos/Mimir query URL).
    #[arg(long, value_name = "URL")]
    pub(crate) prometheus: Option<String>,
    /// How often to ask the Prometheus for new scrapes (its scrape interval).
    #[arg(long, value_name = "MS", default_value_t = irqscope::live::prometheus::POLL_MS_DEFAULT)]
    pub(crate) prometheus_poll_ms: u64,
    /// The hosts' scrape interval, for the rate() window (4 x it); default: what Prometheus'
    /// /api/v1/targets says for the host's job, else 15000.
    #[arg(long, value_name = "MS")]
    pub(crate) prometheus_scrape_ms: Option<u64>,
    /// PEM certificates of a private CA to trust for an https:// --prometheus.
    #[arg(long, value_name = "FILE")]
    pub(crate) prometheus_ca_file: Option<std::path::PathBuf>,
}

impl Default for LiveArgs {
    /// What `irqscope` without a subcommand serves with: no ingestion, no store, no Prometheus.
    fn default() -> Self {
        LiveArgs {
            live_tokens: None,
            live_viewer_tokens: None,
            live_trusted_proxy: Vec::new(),
            live_store: None,
            live_host_idle: irqscope::live::limits::HOST_IDLE_MS_DEFAULT / 1000,
            live_store_move_aside: false,
            prometheus: None,
            prometheus_poll_ms: irqscope::live::prometheus::POLL_MS_DEFAULT,
            prometheus_scrape_ms: None,
            prometheus_ca_file: None,
        }
    }
}

/// Reviews: those made on the command line, and (`--review`) patches pasted on `/review`.
#[derive(clap::Args, Default)]
pub(crate) struct ReviewServeArgs {
    /// Serve the reviews `irqscope review --out DIR` wrote there as /r/<id> (with --review,
    /// where its reviews go; default: reviews/ in the build cache).
    #[arg(long, value_name = "DIR")]
    pub(crate) review_dir: Option<PathBuf>,
    /// Take patches on /review: each is queued, built and reviewed in its sandbox, and lands
    /// on /r/<id>. Off by default.
    #[arg(long)]
    pub(crate) review: bool,
    /// The tree or linux-source-X.Y every pasted patch is reviewed against (default: the
    /// newest Debian source it applies to).
    #[arg(long, value_name = "SOURCE", requires = "review")]
    pub(crate) review_base: Option<String>,
    /// Reviews run at once.
    #[arg(long, value_name = "N", default_value_t = 2, requires = "review")]
    pub(crate) review_workers: usize,
    /// Reviews queued or running in all.
    #[arg(long, value_name = "N", default_value_t = 16, requires = "review")]
    pub(crate) review_queue: usize,
    /// Reviews queued or running for one address (an IPv6 /64).
    #[arg(long, value_name = "N", default_value_t = 2, requires = "review")]
    pub(crate) review_per_client: usize,
    /// Longest a review may run before it is stopped.
    #[arg(long, value_name = "SECS", default_value_t = 300, requires = "review")]
    pub(crate) review_seconds: u64,
    /// Reviews the server takes before it must be restarted (each writes up to 4 MiB).
    #[arg(long, value_name = "N", default_value_t = 10_000, requires = "review")]
    pub(crate) review_max: u64,
}

impl ReviewServeArgs {
    /// The directory `/r/<id>` reads and the queue (if any) the `/review` pages use.
    fn open(
        self,
    ) -> anyhow::Result<(
        Option<std::sync::Arc<PathBuf>>,
        Option<irqscope::web::review_queue::ReviewQueue>,
    )> {
        use irqscope::web::review_queue::{QueueConfig, ReviewQueue};
        if !self.review {
            if let Some(d) = &self.review_dir {
                anyhow::ensure!(d.is_dir(), "--review-dir {}: not a directory", d.display());
            }
            return Ok((self.review_dir.map(std::sync::Arc::new), None));
        }
        let cache = irqscope::kernel_c::cache_dir();
        let dir = self.review_dir.unwrap_or_else(|| cache.join("reviews"));
        let config = QueueConfig {
            program: std::env::current_exe().context("finding the irqscope binary the reviews run as")?,
            dir: dir.clone(),
            cache,
            base: self.review_base,
            workers: self.review_workers,
            queue_max: self.review_queue,
            per_client_max: self.review_per_client,
            deadline: std::time::Duration::from_secs(self.review_seconds),
            reviews_max: self.review_max,
            check: irqscope::review::check_text,
        };
        let queue = ReviewQueue::start(config).map_err(|e| anyhow::anyhow!(e))?;
        tracing::info!("taking patches on /review; reviews in {}", dir.display());
        Ok((Some(std::sync::Arc::new(dir)), Some(queue)))
    }
}

fn live_state(args: LiveArgs) -> anyhow::Result<irqscope::web::live::LiveState> {
    use irqscope::live::{auth::Tokens, persist::Persist};
    let text = match (&args.live_tokens, std::env::var("IRQSCOPE_LIVE_TOKENS")) {
        (Some(path), _) => read_text(path)?,
        (None, Ok(text)) => text,
        (None, Err(_)) => String::new(),
    };
    let tokens = Tokens::parse(&text).map_err(|e| anyhow::anyhow!(e))?;
    let persist = match args.live_store.as_deref() {
        Some(path) if args.live_store_move_aside => {
            let (p, moved) = Persist::open_moving_aside(path)?;
            if let Some(to) = moved {
                tracing::warn!("live store {} was damaged: moved to {}", path.display(), to.display());
            }
            Some(p)
        }
        Some(path) => Some(Persist::open(path)?),
        None => None,
    };
    let policy = irqscope::live::hub::HubPolicy {
        host_idle_ms: args.live_host_idle.saturating_mul(1000),
    };
    let (mut state, notes) =
        irqscope::web::live::LiveState::with(tokens.clone(), persist, policy, None).map_err(|e| anyhow::anyhow!(e))?;
    if let Some(path) = &args.live_viewer_tokens {
        let viewers = irqscope::live::auth::ViewerTokens::parse(&read_text(path)?)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        anyhow::ensure!(!viewers.is_empty(), "{}: no viewer token in the file", path.display());
        state = state.with_viewer_tokens(viewers);
    }
    if !args.live_trusted_proxy.is_empty() {
        state = state
            .with_trusted_proxies(&args.live_trusted_proxy)
            .map_err(|e| anyhow::anyhow!("--live-trusted-proxy: {e}"))?;
    }
    if let Some(url) = &args.prometheus {
        use irqscope::live::prometheus::{run, PromClient, PromStatus};
        let client = PromClient::new(url, args.prometheus_ca_file.as_deref()).map_err(|e| anyhow::anyhow!(e))?;
        let status = std::sync::Arc::new(PromStatus::new(client.base()));
        state = state.with_prometheus(status.clone());
        tracing::info!("reading live hosts from Prometheus at {}", client.base());
        let (poll_ms, scrape_ms) = (args.prometheus_poll_ms, args.prometheus_scrape_ms);
        tokio::spawn(run(client, state.hub().clone(), status, poll_ms, scrape_ms));
    }
    for n in notes {
        tracing::warn!("live store: skipped {n}");
    }
    if tokens.is_empty() {
        tracing::info!("live ingestion disabled (no --live-tokens / IRQSCOPE_LIVE_TOKENS)");
    }
    Ok(state)
}

pub(crate) fn serve(
    addr: &str,
    max_connections: usize,
    policy: irqscope::web::work::Policy,
    live: LiveArgs,
    kernel_c: irqscope::web::kernel_c::KernelCRegistry,
    review: ReviewServeArgs,
) -> anyhow::Result<ExitCode> {
    use tracing_subscriber::EnvFilter;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,tower_http=info")))
        .try_init();
    let addr: std::net::SocketAddr = addr
        .parse()
        .with_context(|| format!("--addr {addr:?}: want HOST:PORT"))?;
    let (review_dir, review_queue) = review.open()?;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        tracing::info!("irqscope dashboard on http://{}", listener.local_addr()?);
        let state = irqscope::web::AppState {
            live: live_state(live)?,
            kernel_c,
            review_dir,
            review_queue: review_queue.clone(),
        };
        let app = irqscope::web::app_with(state, policy);
        irqscope::web::server::serve(
            listener,
            app,
            irqscope::web::server::Limits {
                connections_max: max_connections,
                ..Default::default()
            },
            shutdown_signal(),
        )
        .await;
        anyhow::Ok(())
    });
    // serve() has finished or cut every connection; blocking work still running (a sweep)
    // gets a moment, not a wait without bound.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    if let Some(q) = review_queue {
        // Reviews still running end with their process groups.
        q.stop();
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    served?;
    Ok(ExitCode::SUCCESS)
}

/// SIGINT (Ctrl-C) or SIGTERM: stop accepting and let requests in flight finish.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = interrupt => {}
                    _ = term.recv() => {}
                }
            }
            Err(e) => {
                tracing::warn!("cannot watch SIGTERM: {e}");
                let _ = interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
    tracing::info!("shutting down: finishing requests in flight");
}
