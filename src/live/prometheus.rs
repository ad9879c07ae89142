//! Live hosts read from a Prometheus (`irqscope serve --prometheus URL`) that scrapes
//! `irqscope-agent export`: a poller asks, once per scrape interval, when each host was last
//! scraped (`timestamp(irqscope_agent_info)`), and for each host scraped since its last poll
//! reads all of that scrape's series in one instant query at the scrape's own timestamp. The
//! series become a [`Snapshot`] (`live::source`) that the hub keeps as if the host had pushed
//! it: rates are counter deltas between scrapes, exactly as between pushes, and every page,
//! live-vs-model and permalinks run unchanged. Prometheus keeps the long history; the hub
//! keeps its usual window.
//!
//! Nothing a page or the API does waits for Prometheus: handlers read the hub and
//! [`PromStatus`]. Every query has a timeout ([`QUERY_TIMEOUT_MS`]) and a response bound
//! ([`RESPONSE_BYTES_MAX`]); a failure is kept as the status message the pages show and the
//! API answers 503 with.

use super::hub::Hub;
use super::limits::HOSTS_MAX;
use super::protocol::valid_host_name;
use super::source::{snapshot_from_series, HostSeries, Series};
use axum::body::Body;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Longest one query may take (connect, send, the whole answer).
pub(crate) const QUERY_TIMEOUT_MS: u64 = 5_000;
/// Largest answer read from Prometheus (a 1,024-CPU host with every counter non-zero on 512
/// IRQs is about 100 MB of JSON; hosts that large should export with --max-series).
pub(crate) const RESPONSE_BYTES_MAX: usize = 64 << 20;
/// Default poll interval: the scrape interval the docs recommend.
pub const POLL_MS_DEFAULT: u64 = 1_000;
/// Longest accepted `--prometheus` URL.
pub(crate) const URL_BYTES_MAX: usize = 1_024;

/// Why a query failed; the text is what the pages show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromError {
    #[error("Prometheus at {0} is unreachable: {1}")]
    Unreachable(String, String),
    #[error("Prometheus at {0} did not answer within {1} ms")]
    Timeout(String, u128),
    #[error("Prometheus at {0} answered more than {RESPONSE_BYTES_MAX} bytes")]
    TooLarge(String),
    #[error("Prometheus at {0} answered something that is not a query result: {1}")]
    Garbage(String, String),
    #[error("Prometheus at {0} refused the query: {1}")]
    Refused(String, String),
}

/// A Prometheus HTTP API client (plain http; put a TLS proxy in front of an https one).
#[derive(Clone)]
pub struct PromClient {
    base: String,
    client: Client<HttpConnector, Body>,
    timeout: Duration,
}

#[derive(Deserialize)]
struct ApiReply {
    status: String,
    #[serde(default)]
    error: String,
    #[serde(default)]
    data: Option<ApiData>,
}

#[derive(Deserialize)]
struct ApiData {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<ApiSample>,
}

#[derive(Deserialize)]
struct ApiSample {
    metric: BTreeMap<String, String>,
    /// `[seconds, "value"]`.
    value: (f64, String),
}

/// Percent-encode a query-string value.
fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl PromClient {
    /// A client of the Prometheus at `base` (`http://host:port`, optionally with a path prefix
    /// as behind a Thanos/Mimir query frontend).
    pub fn new(base: &str) -> Result<PromClient, String> {
        if base.len() > URL_BYTES_MAX {
            return Err(format!("--prometheus URL longer than {URL_BYTES_MAX} bytes"));
        }
        let base = base.trim_end_matches('/');
        let uri: axum::http::Uri = base.parse().map_err(|e| format!("--prometheus {base:?}: {e}"))?;
        if uri.scheme_str() != Some("http") || uri.host().is_none() {
            return Err(format!("--prometheus {base:?}: give an http://HOST:PORT URL"));
        }
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(Duration::from_millis(QUERY_TIMEOUT_MS)));
        Ok(PromClient {
            base: base.to_string(),
            client: Client::builder(TokioExecutor::new()).build(connector),
            timeout: Duration::from_millis(QUERY_TIMEOUT_MS),
        })
    }

    /// With a shorter timeout (tests).
    pub fn with_timeout(mut self, timeout: Duration) -> PromClient {
        self.timeout = timeout;
        self
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// An instant query (`/api/v1/query`), at `time` (seconds, as Prometheus printed it) or now.
    pub async fn query(
        &self,
        promql: &str,
        time: Option<&str>,
    ) -> Result<Vec<(BTreeMap<String, String>, f64, f64)>, PromError> {
        let mut url = format!("{}/api/v1/query?query={}", self.base, encode_component(promql));
        if let Some(t) = time {
            url.push_str("&time=");
            url.push_str(&encode_component(t));
        }
        let base = self.base.clone();
        let body = tokio::time::timeout(self.timeout, async {
            let req = axum::http::Request::get(&url)
                .body(Body::empty())
                .map_err(|e| PromError::Unreachable(base.clone(), e.to_string()))?;
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| PromError::Unreachable(base.clone(), with_causes(&e)))?;
            let status = resp.status();
            let bytes = axum::body::to_bytes(Body::new(resp.into_body()), RESPONSE_BYTES_MAX)
                .await
                .map_err(|_| PromError::TooLarge(base.clone()))?;
            Ok::<_, PromError>((status, bytes))
        })
        .await
        .map_err(|_| PromError::Timeout(self.base.clone(), self.timeout.as_millis()))??;
        let (status, bytes) = body;
        let reply: ApiReply = serde_json::from_slice(&bytes)
            .map_err(|e| PromError::Garbage(self.base.clone(), format!("HTTP {}: {e}", status.as_u16())))?;
        if reply.status != "success" {
            return Err(PromError::Refused(self.base.clone(), reply.error));
        }
        let data = reply
            .data
            .ok_or_else(|| PromError::Garbage(self.base.clone(), "no data".into()))?;
        if data.result_type != "vector" {
            return Err(PromError::Garbage(
                self.base.clone(),
                format!("a {} result", data.result_type),
            ));
        }
        data.result
            .into_iter()
            .map(|s| {
                let v: f64 = s
                    .value
                    .1
                    .parse()
                    .map_err(|_| PromError::Garbage(self.base.clone(), format!("value {:?}", s.value.1)))?;
                Ok((s.metric, s.value.0, v))
            })
            .collect()
    }
}

fn with_causes(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

/// What the pages and the API know of the Prometheus source, updated by every poll.
#[derive(Debug)]
pub struct PromStatus {
    base: String,
    inner: Mutex<StatusInner>,
}

#[derive(Debug, Default)]
struct StatusInner {
    /// `None` before the first poll ends; then the last poll's outcome.
    last: Option<Result<(), String>>,
    hosts: BTreeSet<String>,
}

impl PromStatus {
    pub fn new(base: &str) -> PromStatus {
        PromStatus {
            base: base.to_string(),
            inner: Mutex::new(StatusInner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, StatusInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The message to show instead of data, when the source is not healthy.
    pub fn problem(&self) -> Option<String> {
        match &self.lock().last {
            None => Some(format!("Prometheus at {} has not answered yet", self.base)),
            Some(Ok(())) => None,
            Some(Err(e)) => Some(e.clone()),
        }
    }

    /// Whether `host` came from Prometheus.
    pub fn has(&self, host: &str) -> bool {
        self.lock().hosts.contains(host)
    }

    pub fn hosts(&self) -> Vec<String> {
        self.lock().hosts.iter().cloned().collect()
    }

    pub fn base(&self) -> &str {
        &self.base
    }
}

/// Poll once: find the hosts, read each one scraped since `seen` says, hand them to the hub.
/// Returns how many snapshots the hub took.
pub async fn poll_once(
    client: &PromClient,
    hub: &Arc<Hub>,
    status: &PromStatus,
    seen: &mut HashMap<String, String>,
) -> Result<usize, PromError> {
    let result = poll_inner(client, hub, status, seen).await;
    status.lock().last = Some(result.as_ref().map(|_| ()).map_err(|e| e.to_string()));
    result
}

async fn poll_inner(
    client: &PromClient,
    hub: &Arc<Hub>,
    status: &PromStatus,
    seen: &mut HashMap<String, String>,
) -> Result<usize, PromError> {
    // `timestamp()` keeps the host label and gives the last scrape's time of each host.
    let hosts = client.query("timestamp(irqscope_agent_info)", None).await?;
    let mut scraped: BTreeMap<String, f64> = BTreeMap::new();
    for (labels, _, ts) in hosts {
        let Some(h) = labels.get("host").filter(|h| valid_host_name(h)) else {
            continue;
        };
        let e = scraped.entry(h.clone()).or_insert(ts);
        *e = e.max(ts);
    }
    {
        let mut st = status.lock();
        st.hosts = scraped.keys().take(HOSTS_MAX).cloned().collect();
    }
    let mut taken = 0;
    for (host, ts) in scraped.into_iter().take(HOSTS_MAX) {
        // Prometheus timestamps are milliseconds: three decimals say the instant exactly.
        let t = format!("{ts:.3}");
        if seen.get(&host) == Some(&t) {
            continue;
        }
        let q = format!(
            "{{__name__=~\"irqscope_(agent_info|cpu_info|node_distance|irq_info|interrupts_total)\",host=\"{host}\"}}"
        );
        let mut series = HostSeries::default();
        for (mut labels, _, v) in client.query(&q, Some(&t)).await? {
            let name = labels.remove("__name__").unwrap_or_default();
            series
                .push(&name, Series { labels, value: v })
                .map_err(|e| PromError::Garbage(client.base().to_string(), e))?;
        }
        let snap = match snapshot_from_series(&host, (ts * 1000.0).round() as u64, &series) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("prometheus host {host}: {e}");
                continue;
            }
        };
        let h = hub.clone();
        match tokio::task::spawn_blocking(move || h.ingest_source(snap)).await {
            Ok(Ok(_)) => {
                taken += 1;
                seen.insert(host, t);
            }
            Ok(Err(e)) => tracing::warn!("prometheus host {host}: {e}"),
            Err(e) => tracing::warn!("prometheus host {host}: {e}"),
        }
    }
    Ok(taken)
}

/// Poll every `poll_ms` until the runtime stops.
pub async fn run(client: PromClient, hub: Arc<Hub>, status: Arc<PromStatus>, poll_ms: u64) {
    let mut seen = HashMap::new();
    let mut tick = tokio::time::interval(Duration::from_millis(poll_ms.max(100)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = poll_once(&client, &hub, &status, &mut seen).await {
            tracing::warn!("{e}");
        }
    }
}
