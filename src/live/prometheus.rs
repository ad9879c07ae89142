//! Live hosts read from a Prometheus (`irqscope serve --prometheus URL`) that scrapes
//! `irqscope-agent export`: a poller asks, once per poll interval, when each host was last
//! scraped (`timestamp(irqscope_agent_info)`), and for each host scraped since its last poll
//! reads all of that scrape's series in one instant query at the scrape's own timestamp. The
//! series become a [`Snapshot`] (`live::source`) that the hub keeps as if the host had pushed
//! it, with two things taken from Prometheus instead of computed by the store:
//! * the rates: `rate(irqscope_interrupts_total{host="H"}[W])` at the same instant, with the
//!   window `W` = 4 × the host's scrape interval, at least [`RATE_WINDOW_MS_MIN`]
//!   ([`rate_window_ms`]); the scrape interval is `serve --prometheus-scrape-ms`, else the
//!   `scrapeInterval` Prometheus reports for the host's job (`/api/v1/targets`), else
//!   [`SCRAPE_MS_DEFAULT`];
//! * the history of a host the hub does not know yet (first seen, or after a restart of this
//!   server): the device-interrupt rate over all CPUs and the busiest CPU, one point per scrape
//!   interval, up to the store's [`HISTORY_LEN_MAX`], from two `query_range` queries.
//!
//! Every page, live-vs-model and permalinks then run unchanged. Prometheus keeps the long
//! history; the hub keeps its usual window.
//!
//! Nothing a page or the API does waits for Prometheus: handlers read the hub and
//! [`PromStatus`]. Every query has a timeout ([`QUERY_TIMEOUT_MS`]) and a response bound
//! ([`RESPONSE_BYTES_MAX`]); a failure is kept as the status message the pages show and the
//! API answers 503 with. `https://` URLs go through rustls (the agent's TLS stack), trusting
//! the Mozilla roots and, with `--prometheus-ca-file`, a private CA.

use super::hub::Hub;
use super::limits::{HISTORY_LEN_MAX, HOSTS_MAX};
use super::protocol::{valid_host_name, Snapshot};
use super::source::{snapshot_from_series, HostSeries, Series};
use super::store::{HostState, Rates, Sample};
use axum::body::Body;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Longest one query may take (connect, send, the whole answer).
pub(crate) const QUERY_TIMEOUT_MS: u64 = 5_000;
/// Largest answer read from Prometheus (a 1,024-CPU host with every counter non-zero on 512
/// IRQs is about 100 MB of JSON; hosts that large should export with --max-series).
pub(crate) const RESPONSE_BYTES_MAX: usize = 64 << 20;
/// Default poll interval: the scrape interval the docs recommend.
pub const POLL_MS_DEFAULT: u64 = 1_000;
/// The scrape interval assumed for a host when neither `--prometheus-scrape-ms` nor
/// Prometheus' targets say it (Thanos and Mimir serve no `/api/v1/targets`): a common fleet
/// setting, and a window too long is only smoother, one too short has no rate at all.
pub(crate) const SCRAPE_MS_DEFAULT: u64 = 15_000;
/// Shortest `rate()` window, whatever the scrape interval.
pub(crate) const RATE_WINDOW_MS_MIN: u64 = 4_000;
/// Longest scrape interval believed (from the flag or from Prometheus): one hour.
pub(crate) const SCRAPE_MS_MAX: u64 = 3_600_000;
/// Polls between two readings of `/api/v1/targets` (a scrape interval changed by a reload of
/// Prometheus' configuration is seen within this many polls).
const TARGETS_REFRESH_POLLS: u32 = 60;
/// Longest accepted `--prometheus` URL.
pub(crate) const URL_BYTES_MAX: usize = 1_024;
/// Largest `--prometheus-ca-file` read.
pub(crate) const CA_FILE_BYTES_MAX: usize = 1 << 20;

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

/// A Prometheus HTTP API client (`http://`, or `https://` through rustls).
#[derive(Clone)]
pub struct PromClient {
    base: String,
    client: Client<HttpsConnector<HttpConnector>, Body>,
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

/// One series of a `vector` (`value`) or `matrix` (`values`) result.
#[derive(Deserialize)]
struct ApiSample {
    metric: BTreeMap<String, String>,
    /// `[seconds, "value"]`.
    #[serde(default)]
    value: Option<(f64, String)>,
    #[serde(default)]
    values: Vec<(f64, String)>,
}

#[derive(Deserialize)]
struct TargetsReply {
    status: String,
    #[serde(default)]
    data: Option<TargetsData>,
}

#[derive(Deserialize)]
struct TargetsData {
    #[serde(rename = "activeTargets", default)]
    active: Vec<Target>,
}

#[derive(Deserialize)]
struct Target {
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(rename = "scrapeInterval", default)]
    scrape_interval: String,
}

/// One instant-query series: labels, timestamp (s), value.
pub(crate) type InstantSample = (BTreeMap<String, String>, f64, f64);
/// One range-query series: labels and its (timestamp (s), value) points.
pub(crate) type RangeSeries = (BTreeMap<String, String>, Vec<(f64, f64)>);

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

/// A Prometheus duration (`500ms`, `15s`, `1m30s`, `2h`, as `/api/v1/targets` prints them) in
/// milliseconds; `None` for anything else or beyond [`SCRAPE_MS_MAX`].
pub(crate) fn parse_duration_ms(s: &str) -> Option<u64> {
    let mut rest = s.trim();
    if rest.is_empty() || rest.len() > 32 {
        return None;
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let n: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total = total.checked_add(n.checked_mul(unit)?)?;
    }
    (total > 0 && total <= SCRAPE_MS_MAX).then_some(total)
}

/// The `rate()` window for a host scraped every `scrape_ms`: four scrapes (so a rate has
/// samples to work with even when one scrape is late or lost), at least [`RATE_WINDOW_MS_MIN`].
pub(crate) fn rate_window_ms(scrape_ms: u64) -> u64 {
    scrape_ms.saturating_mul(4).max(RATE_WINDOW_MS_MIN)
}

/// The root certificates a client trusts: the Mozilla roots, plus the PEM certificates of
/// `ca_file` when given (at most [`CA_FILE_BYTES_MAX`] bytes, at least one certificate).
fn tls_config(ca_file: Option<&Path>) -> Result<rustls::ClientConfig, String> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    use std::io::Read;
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = ca_file {
        let shown = path.display();
        let file = std::fs::File::open(path).map_err(|e| format!("--prometheus-ca-file {shown}: {e}"))?;
        let mut pem = Vec::new();
        file.take(CA_FILE_BYTES_MAX as u64 + 1)
            .read_to_end(&mut pem)
            .map_err(|e| format!("--prometheus-ca-file {shown}: {e}"))?;
        if pem.len() > CA_FILE_BYTES_MAX {
            return Err(format!(
                "--prometheus-ca-file {shown}: larger than {CA_FILE_BYTES_MAX} bytes"
            ));
        }
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| format!("--prometheus-ca-file {shown}: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("--prometheus-ca-file {shown}: a certificate rustls refuses: {e}"))?;
            added += 1;
        }
        if added == 0 {
            return Err(format!("--prometheus-ca-file {shown}: no PEM CERTIFICATE in it"));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

impl PromClient {
    /// A client of the Prometheus at `base` (`http://host:port` or `https://host:port`,
    /// optionally with a path prefix as behind a Thanos/Mimir query frontend); `ca_file` adds
    /// a private CA to the roots an `https://` Prometheus is checked against.
    pub fn new(base: &str, ca_file: Option<&Path>) -> Result<PromClient, String> {
        if base.len() > URL_BYTES_MAX {
            return Err(format!("--prometheus URL longer than {URL_BYTES_MAX} bytes"));
        }
        let base = base.trim_end_matches('/');
        let uri: axum::http::Uri = base.parse().map_err(|e| format!("--prometheus {base:?}: {e}"))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(format!("--prometheus {base:?}: give an http:// or https:// URL")),
        };
        if uri.host().is_none() {
            return Err(format!("--prometheus {base:?}: give an http:// or https:// URL"));
        }
        if ca_file.is_some() && !https {
            return Err("--prometheus-ca-file needs an https:// --prometheus URL".into());
        }
        let tls = tls_config(ca_file)?;
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        http.enforce_http(false);
        http.set_connect_timeout(Some(Duration::from_millis(QUERY_TIMEOUT_MS)));
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
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

    /// GET `path_and_query` under the base: the body, within the timeout and the size bound.
    async fn get(&self, path_and_query: &str) -> Result<(u16, axum::body::Bytes), PromError> {
        let url = format!("{}{path_and_query}", self.base);
        let base = self.base.clone();
        tokio::time::timeout(self.timeout, async {
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
            Ok::<_, PromError>((status.as_u16(), bytes))
        })
        .await
        .map_err(|_| PromError::Timeout(self.base.clone(), self.timeout.as_millis()))?
    }

    /// A query answer's series, checked to be of `want` result type.
    async fn api(&self, path_and_query: &str, want: &str) -> Result<Vec<ApiSample>, PromError> {
        let (status, bytes) = self.get(path_and_query).await?;
        let reply: ApiReply = serde_json::from_slice(&bytes)
            .map_err(|e| PromError::Garbage(self.base.clone(), format!("HTTP {status}: {e}")))?;
        if reply.status != "success" {
            return Err(PromError::Refused(self.base.clone(), reply.error));
        }
        let data = reply
            .data
            .ok_or_else(|| PromError::Garbage(self.base.clone(), "no data".into()))?;
        if data.result_type != want {
            return Err(PromError::Garbage(
                self.base.clone(),
                format!("a {} result", data.result_type),
            ));
        }
        Ok(data.result)
    }

    fn number(&self, v: &str) -> Result<f64, PromError> {
        v.parse()
            .map_err(|_| PromError::Garbage(self.base.clone(), format!("value {v:?}")))
    }

    /// An instant query (`/api/v1/query`), at `time` (seconds, as Prometheus printed it) or now.
    pub(crate) async fn query(&self, promql: &str, time: Option<&str>) -> Result<Vec<InstantSample>, PromError> {
        let mut q = format!("/api/v1/query?query={}", encode_component(promql));
        if let Some(t) = time {
            q.push_str("&time=");
            q.push_str(&encode_component(t));
        }
        self.api(&q, "vector")
            .await?
            .into_iter()
            .map(|s| {
                let (t, v) = s
                    .value
                    .ok_or_else(|| PromError::Garbage(self.base.clone(), "a sample without a value".into()))?;
                Ok((s.metric, t, self.number(&v)?))
            })
            .collect()
    }

    /// A range query (`/api/v1/query_range`) from `start` to `end` (seconds) every `step_ms`.
    pub(crate) async fn query_range(
        &self,
        promql: &str,
        start: f64,
        end: f64,
        step_ms: u64,
    ) -> Result<Vec<RangeSeries>, PromError> {
        let q = format!(
            "/api/v1/query_range?query={}&start={start:.3}&end={end:.3}&step={:.3}",
            encode_component(promql),
            step_ms as f64 / 1000.0
        );
        self.api(&q, "matrix")
            .await?
            .into_iter()
            .map(|s| {
                let points = s
                    .values
                    .iter()
                    .map(|(t, v)| Ok((*t, self.number(v)?)))
                    .collect::<Result<Vec<_>, PromError>>()?;
                Ok((s.metric, points))
            })
            .collect()
    }

    /// The scrape interval of each job (`/api/v1/targets`; the longest where a job's targets
    /// differ), in milliseconds.
    pub(crate) async fn scrape_intervals(&self) -> Result<HashMap<String, u64>, PromError> {
        let (status, bytes) = self.get("/api/v1/targets?state=active").await?;
        let reply: TargetsReply = serde_json::from_slice(&bytes)
            .map_err(|e| PromError::Garbage(self.base.clone(), format!("HTTP {status}: {e}")))?;
        let data = match reply.data {
            Some(d) if reply.status == "success" => d,
            _ => return Err(PromError::Refused(self.base.clone(), "no targets".into())),
        };
        let mut jobs: HashMap<String, u64> = HashMap::new();
        for t in data.active {
            let (Some(job), Some(ms)) = (t.labels.get("job"), parse_duration_ms(&t.scrape_interval)) else {
                continue;
            };
            let e = jobs.entry(job.clone()).or_insert(ms);
            *e = (*e).max(ms);
        }
        Ok(jobs)
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
    pub(crate) fn has(&self, host: &str) -> bool {
        self.lock().hosts.contains(host)
    }

    pub fn hosts(&self) -> Vec<String> {
        self.lock().hosts.iter().cloned().collect()
    }
}

/// What the poller remembers between polls.
#[derive(Debug, Default)]
pub struct PollState {
    /// Each host's last scrape read (its timestamp as queried).
    seen: HashMap<String, String>,
    /// `--prometheus-scrape-ms`: the scrape interval of every host, never asked.
    scrape_ms: Option<u64>,
    /// Scrape intervals by job, from `/api/v1/targets` (`None`: not read, or not served).
    jobs: Option<HashMap<String, u64>>,
    /// Polls since `jobs` was read.
    polls_since_targets: u32,
}

impl PollState {
    /// `scrape_ms`: the scrape interval of every host (`--prometheus-scrape-ms`); `None` asks
    /// Prometheus' targets, then assumes [`SCRAPE_MS_DEFAULT`].
    pub fn new(scrape_ms: Option<u64>) -> PollState {
        PollState {
            scrape_ms: scrape_ms.map(|s| s.clamp(1, SCRAPE_MS_MAX)),
            ..PollState::default()
        }
    }

    /// The scrape interval of a host scraped by `job`, reading the targets when due.
    async fn scrape_ms(&mut self, client: &PromClient, job: Option<&str>) -> u64 {
        if let Some(s) = self.scrape_ms {
            return s;
        }
        let due = self.polls_since_targets >= TARGETS_REFRESH_POLLS || self.jobs.is_none();
        if due {
            self.polls_since_targets = 0;
            self.jobs = match client.scrape_intervals().await {
                Ok(j) => Some(j),
                Err(e) => {
                    tracing::info!("scrape intervals: {e}; assuming {SCRAPE_MS_DEFAULT} ms");
                    Some(HashMap::new())
                }
            };
        }
        job.and_then(|j| self.jobs.as_ref()?.get(j).copied())
            .unwrap_or(SCRAPE_MS_DEFAULT)
    }
}

/// Poll once: find the hosts, read each one scraped since its last poll, hand them to the
/// hub. Returns how many snapshots the hub took.
pub async fn poll_once(
    client: &PromClient,
    hub: &Arc<Hub>,
    status: &PromStatus,
    state: &mut PollState,
) -> Result<usize, PromError> {
    state.polls_since_targets = state.polls_since_targets.saturating_add(1);
    let result = poll_inner(client, hub, status, state).await;
    status.lock().last = Some(result.as_ref().map(|_| ()).map_err(|e| e.to_string()));
    result
}

/// A label selector value, as PromQL reads it inside `"..."` (host names need no escape; any
/// other text is escaped all the same).
fn quoted(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"")
}

async fn poll_inner(
    client: &PromClient,
    hub: &Arc<Hub>,
    status: &PromStatus,
    state: &mut PollState,
) -> Result<usize, PromError> {
    // `timestamp()` keeps the host (and job) labels and gives each host's last scrape time.
    let hosts = client.query("timestamp(irqscope_agent_info)", None).await?;
    let mut scraped: BTreeMap<String, (f64, Option<String>)> = BTreeMap::new();
    for (labels, _, ts) in hosts {
        let Some(h) = labels.get("host").filter(|h| valid_host_name(h)) else {
            continue;
        };
        let job = labels.get("job").cloned();
        let e = scraped.entry(h.clone()).or_insert((ts, job.clone()));
        if ts > e.0 {
            *e = (ts, job);
        }
    }
    {
        let mut st = status.lock();
        st.hosts = scraped.keys().take(HOSTS_MAX).cloned().collect();
    }
    let mut taken = 0;
    for (host, (ts, job)) in scraped.into_iter().take(HOSTS_MAX) {
        // Prometheus timestamps are milliseconds: three decimals say the instant exactly.
        let t = format!("{ts:.3}");
        if state.seen.get(&host) == Some(&t) {
            continue;
        }
        let q = format!(
            "{{__name__=~\"irqscope_(agent_info|cpu_info|node_distance|irq_info|interrupts_total)\",host=\"{}\"}}",
            quoted(&host)
        );
        let mut series = HostSeries::default();
        for (mut labels, _, v) in client.query(&q, Some(&t)).await? {
            let name = labels.remove("__name__").unwrap_or_default();
            series
                .push(&name, Series { labels, value: v })
                .map_err(|e| PromError::Garbage(client.base().to_string(), e))?;
        }
        let taken_ms = (ts * 1000.0).round() as u64;
        let snap = match snapshot_from_series(&host, taken_ms, &series) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("prometheus host {host}: {e}");
                continue;
            }
        };
        let scrape_ms = state.scrape_ms(client, job.as_deref()).await;
        let window_ms = rate_window_ms(scrape_ms);
        let rates = read_rates(client, &host, &t, window_ms, &snap).await?;
        let history = if hub.host(&host).is_none() {
            read_history(client, &host, ts, scrape_ms, window_ms).await?
        } else {
            None
        };
        let h = hub.clone();
        let ingest = move || h.ingest_source_with(snap, move |st| amend(st, rates, history));
        match tokio::task::spawn_blocking(ingest).await {
            Ok(Ok(_)) => {
                taken += 1;
                state.seen.insert(host, t);
            }
            Ok(Err(e)) => tracing::warn!("prometheus host {host}: {e}"),
            Err(e) => tracing::warn!("prometheus host {host}: {e}"),
        }
    }
    Ok(taken)
}

/// The selector of `host`'s counters of numbered (device) IRQs, the ones the pages' per-CPU
/// rates count.
fn device_counters(host: &str) -> String {
    format!("irqscope_interrupts_total{{host=\"{}\",irq=~\"[0-9]+\"}}", quoted(host))
}

/// `host`'s rates at `t` over `window_ms`, in the shape the store computes from two readings:
/// per online CPU (numbered IRQs only) and per row of `snap`. `None` when Prometheus has no
/// rate yet (fewer than two scrapes in the window) although the host counts interrupts.
async fn read_rates(
    client: &PromClient,
    host: &str,
    t: &str,
    window_ms: u64,
    snap: &Snapshot,
) -> Result<Option<Rates>, PromError> {
    let q = format!(
        "rate(irqscope_interrupts_total{{host=\"{}\"}}[{window_ms}ms])",
        quoted(host)
    );
    let answer = client.query(&q, Some(t)).await?;
    Ok(rates_of(snap, window_ms, &answer))
}

/// The [`Rates`] that per-(IRQ, CPU) `rate()` samples say for `snap`.
fn rates_of(snap: &Snapshot, window_ms: u64, samples: &[InstantSample]) -> Option<Rates> {
    let counting = snap.irqs.iter().any(|i| !i.counts.is_empty());
    if samples.is_empty() && counting {
        return None;
    }
    let mut per_cpu: BTreeMap<u32, f64> = snap.cpus.iter().map(|&c| (c, 0.0)).collect();
    let mut by_irq: HashMap<&str, f64> = HashMap::new();
    for (labels, _, v) in samples {
        let (Some(irq), Some(cpu)) = (labels.get("irq"), labels.get("cpu").and_then(|c| c.parse::<u32>().ok())) else {
            continue;
        };
        if !v.is_finite() || *v < 0.0 {
            continue;
        }
        *by_irq.entry(irq.as_str()).or_insert(0.0) += v;
        if irq.bytes().all(|b| b.is_ascii_digit()) {
            if let Some(r) = per_cpu.get_mut(&cpu) {
                *r += v;
            }
        }
    }
    let per_irq = snap
        .irqs
        .iter()
        .map(|i| match by_irq.get(i.label.as_str()) {
            Some(&r) => Some(r),
            // No counter series: the IRQ never fired, so its rate is 0.
            None if i.counts.is_empty() => Some(0.0),
            // Counters but no rate: too new for the window.
            None => None,
        })
        .collect();
    Some(Rates {
        interval_ms: window_ms,
        per_cpu,
        per_irq,
    })
}

/// The history of `host` before `ts` (seconds): one sample per scrape interval, at most
/// [`HISTORY_LEN_MAX`] − 1 of them (the current reading is the last), the device-interrupt
/// rate over all CPUs and the busiest CPU (`topk(1, …)`). `None` when the question is too big
/// for the bounds (the host then starts with an empty history, as a pushed one); other
/// failures are the poll's.
async fn read_history(
    client: &PromClient,
    host: &str,
    ts: f64,
    scrape_ms: u64,
    window_ms: u64,
) -> Result<Option<Vec<Sample>>, PromError> {
    let step_s = scrape_ms as f64 / 1000.0;
    let end = ts - step_s;
    let start = end - (HISTORY_LEN_MAX as f64 - 2.0) * step_s;
    let rate = format!("rate({}[{window_ms}ms])", device_counters(host));
    let (total_q, busiest_q) = (format!("sum({rate})"), format!("topk(1, sum by (cpu) ({rate}))"));
    let total = client.query_range(&total_q, start, end, scrape_ms);
    let busiest = client.query_range(&busiest_q, start, end, scrape_ms);
    let (total, busiest) = match tokio::try_join!(total, busiest) {
        Ok(both) => both,
        Err(e @ (PromError::Timeout(..) | PromError::TooLarge(_))) => {
            tracing::warn!("prometheus host {host}: no history: {e}");
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    Ok(Some(history_of(&total, &busiest)))
}

/// Samples (oldest first, `seq` left 0 for the caller) from the range answers of the total
/// rate and of the busiest CPU's.
fn history_of(total: &[RangeSeries], busiest: &[RangeSeries]) -> Vec<Sample> {
    let ms = |t: f64| (t * 1000.0).round() as u64;
    let mut top: HashMap<u64, (u32, f64)> = HashMap::new();
    for (labels, points) in busiest {
        let Some(cpu) = labels.get("cpu").and_then(|c| c.parse::<u32>().ok()) else {
            continue;
        };
        for &(t, v) in points {
            top.insert(ms(t), (cpu, v));
        }
    }
    let mut points: Vec<(u64, f64)> = total
        .iter()
        .flat_map(|(_, p)| p.iter().map(|&(t, v)| (ms(t), v)))
        .filter(|p| p.1.is_finite() && p.1 >= 0.0)
        .collect();
    points.sort_by_key(|p| p.0);
    points.dedup_by_key(|p| p.0);
    let skip = points.len().saturating_sub(HISTORY_LEN_MAX - 1);
    let mut prev: Option<u64> = None;
    points
        .into_iter()
        .skip(skip)
        .map(|(t, v)| {
            let b = top.get(&t);
            let s = Sample {
                seq: 0,
                taken_unix_ms: t,
                interval_ms: prev.map_or(0, |p| t - p),
                reset: false,
                irqs_per_s: v,
                busiest_cpu: b.map(|b| b.0),
                busiest_irqs_per_s: b.map_or(0.0, |b| b.1),
            };
            prev = Some(t);
            s
        })
        .collect()
}

/// Put Prometheus' rates (and, for a new host, its history) into the state the store just
/// made of a scrape: the rates replace the store's counter deltas, the newest history sample
/// is remade from them, and the history's samples are numbered as readings before this one.
fn amend(st: &mut HostState, rates: Option<Rates>, history: Option<Vec<Sample>>) {
    let current = st.history.pop_back();
    if let Some(h) = history {
        let older: VecDeque<Sample> = h
            .into_iter()
            .filter(|s| s.taken_unix_ms < st.snapshot.taken_unix_ms)
            .collect();
        st.history = older;
        for (i, s) in st.history.iter_mut().enumerate() {
            s.seq = i as u64 + 1;
        }
        st.seq = st.history.len() as u64 + 1;
    }
    let prev_ms = st.history.back().map(|s| s.taken_unix_ms);
    let (irqs_per_s, busiest) = match &rates {
        Some(r) => (
            r.per_cpu.values().sum(),
            r.per_cpu
                .iter()
                .fold(None, |best: Option<(u32, f64)>, (&c, &v)| match best {
                    Some((_, bv)) if bv >= v => best,
                    _ => Some((c, v)),
                }),
        ),
        None => (0.0, None),
    };
    let sample = Sample {
        seq: st.seq,
        taken_unix_ms: st.snapshot.taken_unix_ms,
        interval_ms: match (&rates, prev_ms) {
            (Some(_), Some(p)) => st.snapshot.taken_unix_ms.saturating_sub(p),
            (Some(r), None) => r.interval_ms,
            (None, _) => 0,
        },
        reset: rates.is_none(),
        irqs_per_s,
        busiest_cpu: busiest.map(|b| b.0),
        busiest_irqs_per_s: busiest.map_or(0.0, |b| b.1),
    };
    debug_assert!(current.is_none_or(|c| c.taken_unix_ms == sample.taken_unix_ms));
    if st.history.len() >= HISTORY_LEN_MAX {
        st.history.pop_front();
    }
    st.history.push_back(sample);
    st.rates = rates;
}

/// Poll every `poll_ms` until the runtime stops; `scrape_ms` as [`PollState::new`].
pub async fn run(client: PromClient, hub: Arc<Hub>, status: Arc<PromStatus>, poll_ms: u64, scrape_ms: Option<u64>) {
    let mut state = PollState::new(scrape_ms);
    let mut tick = tokio::time::interval(Duration::from_millis(poll_ms.max(100)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = poll_once(&client, &hub, &status, &mut state).await {
            tracing::warn!("{e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::protocol::{WireIrq, WireTopology, PROTOCOL_VERSION};

    #[test]
    fn durations_read_as_prometheus_prints_them() {
        assert_eq!(parse_duration_ms("1s"), Some(1_000));
        assert_eq!(parse_duration_ms("15s"), Some(15_000));
        assert_eq!(parse_duration_ms("1m30s"), Some(90_000));
        assert_eq!(parse_duration_ms("500ms"), Some(500));
        assert_eq!(parse_duration_ms("1h"), Some(3_600_000));
        for bad in ["", "0s", "s", "1", "1x", "2h", "-1s", "1.5s"] {
            assert_eq!(parse_duration_ms(bad), None, "{bad:?}");
        }
        assert_eq!(rate_window_ms(1_000), RATE_WINDOW_MS_MIN);
        assert_eq!(rate_window_ms(15_000), 60_000);
        assert_eq!(rate_window_ms(u64::MAX), u64::MAX);
    }

    fn irq(label: &str, counts: Vec<(u32, u64)>) -> WireIrq {
        WireIrq {
            label: label.into(),
            chip: "PCI-MSI".into(),
            hwirq: "1-edge".into(),
            name: format!("dev{label}"),
            counts,
            affinity: None,
            effective: None,
            node: None,
        }
    }

    fn snap() -> Snapshot {
        Snapshot {
            version: PROTOCOL_VERSION,
            host: "h".into(),
            taken_unix_ms: 10_000,
            boot_id: String::new(),
            topology: WireTopology {
                nodes: vec!["0-3".into()],
                ..WireTopology::default()
            },
            cpus: vec![0, 1, 2, 3],
            irqs: vec![
                irq("24", vec![(0, 5), (2, 9)]),
                irq("25", vec![]),
                irq("26", vec![(3, 1)]),
                irq("LOC", vec![(0, 100), (1, 100)]),
            ],
        }
    }

    fn sample(irq: &str, cpu: &str, v: f64) -> InstantSample {
        let labels = [("host", "h"), ("irq", irq), ("cpu", cpu)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        (labels, 10.0, v)
    }

    #[test]
    fn rates_come_from_the_rate_samples() {
        let s = snap();
        let answer = [
            sample("24", "0", 1.5),
            sample("24", "2", 4.0),
            sample("LOC", "0", 100.0),
            sample("LOC", "1", 50.0),
            // A CPU that is no column of the snapshot counts for its IRQ, not as a CPU.
            sample("24", "9", 1.0),
        ];
        let r = rates_of(&s, 4_000, &answer).unwrap();
        assert_eq!(r.interval_ms, 4_000);
        // Named rows (LOC) are not device interrupts: not in the per-CPU rates.
        assert_eq!(r.per_cpu, BTreeMap::from([(0, 1.5), (1, 0.0), (2, 4.0), (3, 0.0)]));
        // 26 counts but has no rate yet; 25 never fired.
        assert_eq!(r.per_irq, vec![Some(6.5), Some(0.0), None, Some(150.0)]);
        // No rate at all while counters exist: a baseline, as a pushed host's first reading.
        assert_eq!(rates_of(&s, 4_000, &[]), None);
    }

    #[test]
    fn history_is_numbered_before_the_current_reading_and_bounded() {
        let cpu = |c: &str| BTreeMap::from([("cpu".to_string(), c.to_string())]);
        let total = vec![(BTreeMap::new(), vec![(7.0, 30.0), (8.0, 40.0), (9.0, 50.0)])];
        let busiest = vec![
            (cpu("2"), vec![(7.0, 20.0), (9.0, 25.0)]),
            (cpu("1"), vec![(8.0, 21.0)]),
        ];
        let h = history_of(&total, &busiest);
        assert_eq!(h.len(), 3);
        assert_eq!(
            h.iter().map(|s| (s.taken_unix_ms, s.busiest_cpu)).collect::<Vec<_>>(),
            [(7_000, Some(2)), (8_000, Some(1)), (9_000, Some(2))]
        );
        assert_eq!(h[1].interval_ms, 1_000);

        let s = snap();
        let topology = Arc::new(crate::topology::Topology::new(&s.topology.to_spec("h")).unwrap());
        let mut st = HostState {
            snapshot: s.clone(),
            topology,
            seq: 1,
            rates: None,
            history: VecDeque::from([Sample {
                seq: 1,
                taken_unix_ms: 10_000,
                interval_ms: 0,
                reset: true,
                irqs_per_s: 0.0,
                busiest_cpu: None,
                busiest_irqs_per_s: 0.0,
            }]),
            next_push_ms: 0,
            received_ms: 0,
            owner: None,
        };
        let rates = rates_of(&s, 4_000, &[sample("24", "2", 4.0)]);
        amend(&mut st, rates.clone(), Some(h));
        assert_eq!(st.seq, 4);
        assert_eq!(st.rates, rates);
        let seqs: Vec<u64> = st.history.iter().map(|s| s.seq).collect();
        assert_eq!(seqs, [1, 2, 3, 4]);
        let last = st.history.back().unwrap();
        assert_eq!((last.irqs_per_s, last.busiest_cpu, last.reset), (4.0, Some(2), false));
        assert_eq!(last.interval_ms, 1_000);

        // A long answer keeps the newest points, room left for the current reading.
        let long: Vec<(f64, f64)> = (0..HISTORY_LEN_MAX as u64 + 50).map(|i| (i as f64, 1.0)).collect();
        let h = history_of(&[(BTreeMap::new(), long)], &[]);
        assert_eq!(h.len(), HISTORY_LEN_MAX - 1);
        assert_eq!(h.last().unwrap().taken_unix_ms, (HISTORY_LEN_MAX as u64 + 49) * 1000);
    }
}
