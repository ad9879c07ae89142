//! What a request may cost the server: an estimate before any work, a budget per request, a
//! deadline that stops the work, and how many heavy requests one client address and the whole
//! server run at once. The serving layer's policy; handlers make one call
//! ([`Work::run`]) around their core call and stay as they were.
//!
//! - **Estimate from the input alone** ([`Estimate`]): the scenario runs a request asks for,
//!   the largest machine's CPUs and the most groups (affinity vectors) one run spreads, turned
//!   into milliseconds of CPU by a cost model measured on the release build (below). Nothing
//!   runs before the estimate is known.
//! - **Budget**: an estimate over the request's budget ([`REQUEST_CPU_MS_MAX`], `serve
//!   --request-cpu-ms`) is refused with 422, the numbers, and the command that runs the same
//!   work on the command line, where it costs only its user's machine.
//! - **Deadline**: heavy work runs on a blocking thread and is asked before each scenario run
//!   whether to stop ([`Deadline::expired`]): once the request's time ([`Policy::request_timeout`],
//!   the same the router answers 408 at) has passed, or once the request is gone (the client
//!   closed its connection, or the router gave up on it and dropped the handler), so the CPU goes
//!   quiet within one run of the answer.
//! - **Heavy requests at once**: work estimated at [`HEAVY_CPU_MS_MIN`] or more takes a slot, at
//!   most [`HEAVY_PER_CLIENT_MAX`] per client address and [`HEAVY_MAX`] in all; beyond, 503 with
//!   `Retry-After`. Lighter work runs inline, as every page did before.
//! - **Built C is always heavy** ([`Estimate::built_c`]): a `c:NAME` scenario, comparison, sweep
//!   or blk-mq map calls a harness process whose C may loop until its wall-clock limit, whatever
//!   the estimate says. It never runs on an async worker (where it would hold up every other
//!   client's requests): it takes a slot and runs on a blocking thread, and a call still
//!   running at the deadline is killed then (`kernel_c::with_deadline`).
//!
//! The cost model, per scenario run, in nanoseconds (release build, measured with `irqscope
//! sweep --threads 1` over machines of 2 to 8,192 CPUs and mixes of 1 to 256 devices and up to
//! 65,536 vectors; each term is rounded up from the largest per-unit cost seen):
//! [`RUN_NS`] + CPUs × [`CPU_NS`] + devices × CPUs × [`DEVICE_CPU_NS`] + vectors ×
//! ([`VECTOR_NS`] + CPUs × [`VECTOR_CPU_PS`] / 1000), and [`ROW_NS`] per sweep row rendered. A
//! run on built C (a `c:NAME` variant) costs [`EXTERNAL_RUN_FACTOR`] times as much: its calls
//! go to a harness process over a pipe, and the machine is written out for it.

use super::{AppError, AppState};
use crate::analysis::sweep::{Placement, SweepConfig};
use crate::catalogue;
// `1234567` as `1,234,567`.
use crate::render::sweep::group_digits as thousands;
use crate::scenario::payloads::CompareSpec;
use crate::scenario::spec::{DeviceSpec, ScenarioSpec, TopologyRef};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use std::collections::HashMap;
use std::net::IpAddr;
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Estimated CPU one request may cost unless `serve --request-cpu-ms` says otherwise: the
/// default catalogue sweep is about a tenth of it, one scenario of the largest machine
/// (8,192 CPUs, 65,536 vectors) about a thirtieth.
pub const REQUEST_CPU_MS_MAX: u64 = 4_000;
/// The most `--request-cpu-ms` may say: an hour of CPU.
pub(crate) const REQUEST_CPU_MS_LIMIT: u64 = 3_600_000;
/// Work estimated at this much CPU or more is heavy: it runs on a blocking thread, takes a
/// slot and stops at its deadline. Below, it runs inline.
pub(crate) const HEAVY_CPU_MS_MIN: u64 = 25;
/// Heavy requests one client address may have running at once.
pub(crate) const HEAVY_PER_CLIENT_MAX: usize = 2;
/// Heavy requests running at once in all (the machine serves other requests too).
pub(crate) const HEAVY_MAX: usize = 4;
/// What a refused heavy request is told to wait, in seconds.
pub(crate) const RETRY_AFTER_S: u64 = 2;

/// Cost model (see the module's text).
pub(crate) const RUN_NS: u64 = 20_000;
pub(crate) const CPU_NS: u64 = 40;
pub(crate) const DEVICE_CPU_NS: u64 = 12;
pub(crate) const VECTOR_NS: u64 = 450;
pub(crate) const VECTOR_CPU_PS: u64 = 160;
pub(crate) const ROW_NS: u64 = 5_000;
/// A run on built C against the same run on a model: the whole-catalogue sweep on Debian's
/// 7.2 `lib/group_cpus.c` took 2.2 to 2.8 times the `cluster` model's CPU, harness processes
/// started afresh and included (`cargo bench --bench kernel_c`); rounded up.
pub(crate) const EXTERNAL_RUN_FACTOR: u64 = 3;

/// The serving policy's knobs (the limits that are not constants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// The most estimated CPU one request may cost.
    pub request_cpu_ms_max: u64,
    /// How long a request may take: the router answers 408 then, and heavy work stops.
    pub request_timeout: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            request_cpu_ms_max: REQUEST_CPU_MS_MAX,
            request_timeout: Duration::from_millis(super::REQUEST_TIMEOUT_MS),
        }
    }
}

/// A `--request-cpu-ms` value: 1 to [`REQUEST_CPU_MS_LIMIT`].
pub fn parse_request_cpu_ms(text: &str) -> Result<u64, String> {
    parse_in_range(text, "milliseconds", "ms", 1..=REQUEST_CPU_MS_LIMIT)
}

/// A `--request-timeout-ms` value: 100 ms to 10 minutes.
pub fn parse_request_timeout_ms(text: &str) -> Result<u64, String> {
    parse_in_range(text, "milliseconds", "ms", 100..=600_000)
}

/// A number of `unit`s (`units` in full, for the message when it is not a number) within
/// `range`, from a command-line value.
pub(crate) fn parse_in_range<T>(text: &str, units: &str, unit: &str, range: RangeInclusive<T>) -> Result<T, String>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display,
{
    let n: T = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of {units}"))?;
    if !range.contains(&n) {
        return Err(format!("{n} {unit}: want {} to {}", range.start(), range.end()));
    }
    Ok(n)
}

/// What a request's work is estimated to cost, from its input alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Estimate {
    /// Scenario runs.
    pub(crate) runs: u64,
    /// CPUs of the largest machine.
    pub(crate) cpus: u64,
    /// Most groups (affinity vectors) one run spreads.
    pub(crate) groups: u64,
    /// Most devices in one run.
    pub(crate) devices: u64,
    /// The estimate, in milliseconds of CPU.
    pub(crate) cpu_ms: u64,
    /// The work calls built C (a `c:NAME` variant): heavy whatever `cpu_ms` says, since the C
    /// may take as long as its wall-clock limit.
    pub(crate) built_c: bool,
    /// The command that does the same work on the command line.
    pub(crate) command: Option<String>,
}

/// One run's cost in nanoseconds (the module's model), saturating.
fn run_ns(cpus: u64, devices: u64, vectors: u64) -> u64 {
    let per_vector = VECTOR_NS.saturating_add(cpus.saturating_mul(VECTOR_CPU_PS) / 1000);
    RUN_NS
        .saturating_add(cpus.saturating_mul(CPU_NS))
        .saturating_add(devices.saturating_mul(cpus).saturating_mul(DEVICE_CPU_NS))
        .saturating_add(vectors.saturating_mul(per_vector))
}

/// Devices and vectors of a device list as written (before any check: saturating).
/// The most runs a scenario's probe-order distribution may take (1 for a fixed order from one
/// counter): a sample's size, else every order of its devices times its counter starts,
/// within [`crate::analysis::orders::RUNS_BUDGET`]. An upper bound: the cost of a request
/// is judged before it runs.
fn distribution_runs(spec: &ScenarioSpec) -> u64 {
    use crate::analysis::orders::{Orders, RUNS_BUDGET};
    let counters = spec
        .counter_to
        .map_or(1, |to| u64::from(to.saturating_sub(spec.spread_counter)) + 1);
    let devices: u64 = spec.devices.iter().map(|d| u64::from(d.count)).sum();
    let orders = spec.orders.as_deref().map(Orders::parse);
    match orders {
        None | Some(Err(_)) | Some(Ok(Orders::Fixed)) => counters.min(RUNS_BUDGET),
        Some(Ok(Orders::Sample { n, .. })) => u64::from(n).min(RUNS_BUDGET),
        Some(Ok(Orders::All)) => {
            let all = (1..=devices.min(20))
                .try_fold(counters, |acc, k| acc.checked_mul(k))
                .unwrap_or(u64::MAX);
            // Over the budget the distinct arrangements (devices alike are interchangeable)
            // may still fit it and all run, else SAMPLE_FALLBACK orders: at most the budget.
            all.min(RUNS_BUDGET)
        }
    }
}

/// The runs one sweep row's distribution may take (1 without orders): a sample's size, else
/// the distinct arrangements of the mix (devices of one token are interchangeable; a MANA
/// device keeps its place), or the fallback sample when they are over the budget. An upper
/// bound, as [`distribution_runs`].
pub(crate) fn sweep_row_orders_runs(devices: &[DeviceSpec], orders: crate::analysis::orders::Orders) -> u64 {
    use crate::analysis::orders::{Orders, RUNS_BUDGET, SAMPLE_FALLBACK};
    match orders {
        Orders::Fixed => 1,
        Orders::Sample { n, .. } => u64::from(n).min(RUNS_BUDGET),
        Orders::All => {
            // n! / (k1! k2! …) as a product of binomials, saturating.
            let mut placed = 0u64;
            let mut total = 1u64;
            let movable = devices.iter().filter(|d| d.driver.as_deref() != Some("mana"));
            for k in movable.map(|d| u64::from(d.count)) {
                for i in 1..=k {
                    total = (total.saturating_mul(placed + i)) / i;
                    if total > RUNS_BUDGET {
                        return u64::from(SAMPLE_FALLBACK);
                    }
                }
                placed += k;
            }
            total
        }
    }
}

fn devices_and_vectors(devices: &[DeviceSpec]) -> (u64, u64) {
    devices.iter().fold((0u64, 0u64), |(d, v), s| {
        let count = u64::from(s.count);
        let each = u64::from(s.pre) + u64::from(s.queues) + u64::from(s.post) + u64::from(s.driver.is_some());
        (d.saturating_add(count), v.saturating_add(count.saturating_mul(each)))
    })
}

/// CPUs of a scenario's machine: a preset's, an inline machine's stated or generated count,
/// else the most a machine may have.
fn cpus_of(topology: &TopologyRef) -> u64 {
    let max = u64::from(crate::topology::CPUS_MAX);
    match topology {
        TopologyRef::Preset(name) => catalogue::get(name).map_or(max, |t| u64::from(t.nr_cpu_ids())),
        TopologyRef::Inline(spec) => match (spec.nr_cpu_ids, &spec.generate) {
            (Some(n), _) => u64::from(n).min(max),
            (None, Some(g)) => {
                let n = [g.nodes_per_package, g.cores_per_node, g.threads_per_core]
                    .iter()
                    .fold(u64::from(g.packages), |n, &k| n.saturating_mul(u64::from(k)));
                if n == 0 {
                    max
                } else {
                    n.min(max)
                }
            }
            (None, None) => max,
        },
    }
}

impl Estimate {
    /// `runs` runs on `cpus` CPUs, each spreading `groups` vectors over `devices` devices.
    pub(crate) fn runs(runs: u64, cpus: u64, devices: u64, groups: u64) -> Estimate {
        Estimate {
            runs,
            cpus,
            groups,
            devices,
            cpu_ms: runs.saturating_mul(run_ns(cpus, devices, groups)) / 1_000_000,
            built_c: false,
            command: None,
        }
    }

    /// Light work on a model (`built_c` false), or any work on built C (true): the blk-mq
    /// maps, which cost little on a model.
    pub(crate) fn light(built_c: bool) -> Estimate {
        Estimate {
            built_c,
            ..Estimate::runs(1, 0, 0, 0)
        }
    }

    /// Heavy: it takes a slot and runs on a blocking thread under the deadline.
    pub(crate) fn is_heavy(&self) -> bool {
        self.built_c || self.cpu_ms >= HEAVY_CPU_MS_MIN
    }

    /// One scenario (a page, its twins, the API).
    pub(crate) fn scenario(spec: &ScenarioSpec) -> Estimate {
        let (devices, vectors) = devices_and_vectors(&spec.devices);
        let mut e = Estimate::runs(distribution_runs(spec), cpus_of(&spec.topology), devices, vectors);
        if spec.variant.starts_with(crate::scenario::spec::KERNEL_C_PREFIX) {
            e.cpu_ms = e.cpu_ms.saturating_mul(EXTERNAL_RUN_FACTOR);
            e.built_c = true;
        }
        e
    }

    /// Both sides of a comparison.
    pub(crate) fn compare(spec: &CompareSpec) -> Estimate {
        let [a, b] = spec.sides().map(|s| Estimate::scenario(&s));
        Estimate {
            runs: 2,
            cpus: a.cpus.max(b.cpus),
            groups: a.groups.max(b.groups),
            devices: a.devices.max(b.devices),
            cpu_ms: a.cpu_ms.saturating_add(b.cpu_ms),
            built_c: a.built_c || b.built_c,
            command: None,
        }
    }

    /// A sweep: every machine × mix × its runs, and the rows rendered.
    pub(crate) fn sweep(config: &SweepConfig) -> Estimate {
        let per_base = config.runs_per_base();
        // The same runs, each on built C counted EXTERNAL_RUN_FACTOR times.
        let weighted = config
            .placements
            .iter()
            .map(|p| match p {
                Placement::External(_) => config.runs_of(p).saturating_mul(EXTERNAL_RUN_FACTOR),
                _ => config.runs_of(p),
            })
            .fold(0u64, u64::saturating_add);
        let mut e = Estimate::runs(0, 0, 0, 0);
        let mut ns = config.row_count().saturating_mul(ROW_NS);
        for name in &config.topologies {
            let cpus = cpus_of(&TopologyRef::Preset(name.clone()));
            e.cpus = e.cpus.max(cpus);
            for mix in &config.mixes {
                let (devices, vectors) = devices_and_vectors(&mix.devices);
                // Each row's list-order run, and with orders asked its distribution's runs.
                let orders = match config.orders {
                    crate::analysis::orders::Orders::Fixed => 1,
                    o => 1 + sweep_row_orders_runs(&mix.devices, o),
                };
                e.devices = e.devices.max(devices);
                e.groups = e.groups.max(vectors);
                e.runs = e.runs.saturating_add(per_base.saturating_mul(orders));
                ns = ns.saturating_add(
                    weighted
                        .saturating_mul(orders)
                        .saturating_mul(run_ns(cpus, devices, vectors)),
                );
            }
        }
        e.cpu_ms = ns / 1_000_000;
        e.built_c = config.placements.iter().any(|p| matches!(p, Placement::External(_)));
        e.command = Some(crate::render::sweep::command_line(config));
        e
    }

    /// A kept import's page: its snapshots replayed, then the model run once for the host.
    pub(crate) fn replay(capture: &crate::live::protocol::Capture) -> Estimate {
        let last = capture.snapshots.last();
        let cpus = last.map_or(0, |s| s.cpus.len() as u64);
        let irqs = last.map_or(0, |s| s.irqs.len() as u64);
        let mut e = Estimate::runs(1, cpus, irqs, irqs);
        e.cpu_ms = e
            .cpu_ms
            .saturating_add(capture.snapshots.len() as u64 * cpus.saturating_mul(irqs) / 2_000_000);
        e
    }

    /// An import of `bytes` of text (parsed, checked and replayed): about a CPU-millisecond
    /// per 50 KB, as measured on captures of 1,024 CPUs.
    pub(crate) fn import(bytes: usize) -> Estimate {
        Estimate {
            cpu_ms: bytes as u64 / 50_000,
            ..Estimate::runs(1, 0, 0, 0)
        }
    }

    /// The refusal's text: the numbers and the way to run it elsewhere.
    fn refusal(&self, budget_ms: u64) -> String {
        let mut m = format!(
            "too much work for one request: {} runs × {} CPUs × {} groups ({} devices) is about {} of CPU; \
             this server gives a request at most {}",
            thousands(self.runs),
            thousands(self.cpus),
            thousands(self.groups),
            thousands(self.devices),
            seconds(self.cpu_ms),
            seconds(budget_ms),
        );
        match &self.command {
            Some(c) => m.push_str(&format!(". Run it on the command line instead: {c}")),
            None => m.push_str(". Ask for less, or run it on the command line (irqscope --help)"),
        }
        m
    }
}

/// Milliseconds as `0.4 s`, `12 s`, `2,913 s`.
fn seconds(ms: u64) -> String {
    if ms < 10_000 {
        format!("{}.{} s", ms / 1000, ms % 1000 / 100)
    } else {
        format!("{} s", thousands(ms / 1000))
    }
}

/// When heavy work must stop: its deadline passed, or its request is gone.
#[derive(Debug, Clone)]
pub(crate) struct Deadline {
    at: Instant,
    dropped: Arc<AtomicBool>,
}

impl Deadline {
    fn after(timeout: Duration) -> Deadline {
        Deadline {
            at: Instant::now() + timeout,
            dropped: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Work that never stops (inline work, which is light).
    fn never() -> Deadline {
        Deadline::after(Duration::from_secs(365 * 24 * 3600))
    }

    /// Stop now: the deadline passed or nobody waits for the answer any more.
    pub(crate) fn expired(&self) -> bool {
        self.dropped.load(Ordering::Relaxed) || Instant::now() >= self.at
    }
}

/// Marks its deadline expired when dropped: the handler's future went away (the client closed
/// the connection, or the router's timeout answered) before the work ended.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Heavy requests running, in all and per client address.
#[derive(Debug, Default)]
struct Slots {
    inner: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

/// A heavy request's place, given back when its work ends (not when its answer is sent: work
/// a deadline stopped keeps its slot until it has stopped).
struct Slot {
    slots: Arc<Slots>,
    client: Option<IpAddr>,
}

impl Slots {
    fn take(self: &Arc<Self>, client: Option<IpAddr>) -> Result<Slot, AppError> {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (total, by_client) = &mut *inner;
        let mine = client.map_or(0, |c| by_client.get(&c).copied().unwrap_or(0));
        let message = if mine >= HEAVY_PER_CLIENT_MAX {
            format!("{HEAVY_PER_CLIENT_MAX} heavy requests from this address are already running; try again when one is done")
        } else if *total >= HEAVY_MAX {
            format!("the server is busy with {HEAVY_MAX} heavy requests; try again in a moment")
        } else {
            *total += 1;
            if let Some(c) = client {
                *by_client.entry(c).or_insert(0) += 1;
            }
            return Ok(Slot {
                slots: self.clone(),
                client,
            });
        };
        Err(AppError::Busy {
            message,
            retry_after_s: RETRY_AFTER_S,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut inner = self.slots.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (total, by_client) = &mut *inner;
        *total -= 1;
        if let Some(c) = self.client {
            if let Some(n) = by_client.get_mut(&c) {
                *n -= 1;
                if *n == 0 {
                    by_client.remove(&c);
                }
            }
        }
    }
}

/// The policy and the slots one router shares (an extension `web::app_with` installs).
#[derive(Debug, Clone, Default)]
pub(crate) struct Serving {
    pub(crate) policy: Policy,
    slots: Arc<Slots>,
}

impl Serving {
    pub(crate) fn new(policy: Policy) -> Serving {
        Serving {
            policy,
            slots: Arc::default(),
        }
    }
}

/// A request's right to work: the router's policy and the client it is counted against. An
/// extractor: a handler takes `work: Work` and calls [`Work::run`].
pub(crate) struct Work {
    serving: Serving,
    client: Option<IpAddr>,
}

impl FromRequestParts<AppState> for Work {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Work, Self::Rejection> {
        let serving = parts.extensions.get::<Serving>().cloned().unwrap_or_default();
        let client = state
            .live
            .client_of(&parts.extensions, &parts.headers)
            .map(super::server::share_key);
        Ok(Work { serving, client })
    }
}

impl Work {
    /// Do `f`, the request's work, if `estimate` is within the budget (422 with the numbers
    /// otherwise): inline when it is light and on a model; else (heavy, or built C) on a blocking thread, in a heavy slot (503
    /// with `Retry-After` when none is free), with a [`Deadline`] `f` asks before each run. Work
    /// that stopped at its deadline is answered 408 (when anyone still listens).
    pub(crate) async fn run<T: Send + 'static>(
        self,
        estimate: Estimate,
        f: impl FnOnce(&Deadline) -> Result<T, AppError> + Send + 'static,
    ) -> Result<T, AppError> {
        self.check(&estimate)?;
        if !estimate.is_heavy() {
            return f(&Deadline::never());
        }
        self.run_blocking(estimate, f).await
    }

    /// [`Work::run`] for work that blocks (files, persistence) and so never runs inline: on a
    /// blocking thread always, in a heavy slot when heavy.
    pub(crate) async fn run_blocking<T: Send + 'static>(
        self,
        estimate: Estimate,
        f: impl FnOnce(&Deadline) -> Result<T, AppError> + Send + 'static,
    ) -> Result<T, AppError> {
        self.check(&estimate)?;
        let policy = self.serving.policy;
        let slot = if estimate.is_heavy() {
            Some(self.serving.slots.take(self.client)?)
        } else {
            None
        };
        let deadline = Deadline::after(policy.request_timeout);
        let _stop_on_drop = StopOnDrop(deadline.dropped.clone());
        let timeout = policy.request_timeout;
        let at = deadline.at;
        tokio::task::spawn_blocking(move || {
            let _slot = slot;
            // A call of built C that outlives the deadline is killed then.
            let out = crate::kernel_c::with_deadline(at, || f(&deadline));
            if deadline.expired() && out.is_err() {
                return Err(AppError::Timeout(format!(
                    "stopped at the deadline of {} ms; ask for less, or run it on the command line",
                    timeout.as_millis()
                )));
            }
            out
        })
        .await
        .map_err(|e| AppError::Internal(format!("worker: {e}")))?
    }

    /// The most estimated CPU this request may cost, in milliseconds.
    pub(crate) fn budget_ms(&self) -> u64 {
        self.serving.policy.request_cpu_ms_max
    }

    /// Within the budget, or 422 with the numbers.
    fn check(&self, estimate: &Estimate) -> Result<(), AppError> {
        let budget_ms = self.serving.policy.request_cpu_ms_max;
        if estimate.cpu_ms > budget_ms {
            return Err(AppError::TooMuchWork(estimate.refusal(budget_ms)));
        }
        Ok(())
    }
}

/// A small sweep the tests price: the 96-vCPU VM, the one `mix`, `cluster` and `rotation`,
/// counters 0 to 4.
#[cfg(test)]
pub(crate) fn small_sweep(mix: &str) -> SweepConfig {
    SweepConfig {
        topologies: vec!["azure-l96as-v4".into()],
        mixes: vec![crate::analysis::sweep::Mix::parse(mix).unwrap()],
        placements: SweepConfig::parse_placements("cluster,rotation").unwrap(),
        counters: crate::analysis::sweep::parse_counters("0..4").unwrap(),
        ..SweepConfig::catalogue_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::sweep::{self, Mix};

    /// The command-line limits answer with the value, its unit and the range it must be in.
    #[test]
    fn limits_from_the_command_line_name_the_unit_and_the_range() {
        assert_eq!(parse_request_cpu_ms(" 250 "), Ok(250));
        assert_eq!(parse_request_cpu_ms("0"), Err("0 ms: want 1 to 3600000".to_string()));
        assert_eq!(
            parse_request_cpu_ms("x"),
            Err("\"x\" is not a number of milliseconds".to_string())
        );
        assert_eq!(parse_request_timeout_ms("600000"), Ok(600_000));
        assert_eq!(
            parse_request_timeout_ms("99"),
            Err("99 ms: want 100 to 600000".to_string())
        );
        let connections = super::super::server::parse_connections_max;
        assert_eq!(connections("65536"), Ok(65_536));
        assert_eq!(
            connections("65537"),
            Err("65537 connections: want 1 to 65536".to_string())
        );
        assert_eq!(
            connections("-1"),
            Err("\"-1\" is not a number of connections".to_string())
        );
    }

    fn hostile() -> SweepConfig {
        SweepConfig {
            topologies: vec!["synthetic-8192".into()],
            mixes: vec![Mix::parse("256x256").unwrap()],
            placements: SweepConfig::parse_placements("all").unwrap(),
            counters: sweep::parse_counters("0..4096").unwrap(),
            ..SweepConfig::catalogue_default()
        }
    }

    /// A distribution is charged for every run it may take: six disks in every order from
    /// six counter starts are 4,320 runs, a sample its size, ten devices in every order the
    /// budget, and a fixed order from one counter one run.
    #[test]
    fn a_distribution_is_charged_for_its_runs() {
        use crate::analysis::orders::RUNS_BUDGET;
        use crate::scenario::spec::parse_device_token;
        let spec = |devices: &str, orders: Option<&str>, counter_to: Option<u32>| ScenarioSpec {
            orders: orders.map(String::from),
            counter_to,
            ..ScenarioSpec::new(
                TopologyRef::Preset("azure-l96as-v4".into()),
                vec![parse_device_token(devices).unwrap()],
            )
        };
        let runs = |s: &ScenarioSpec| Estimate::scenario(s).runs;
        assert_eq!(runs(&spec("6x62:pre=1", None, None)), 1);
        assert_eq!(runs(&spec("6x62:pre=1", Some("all"), Some(5))), 720 * 6);
        assert_eq!(runs(&spec("6x62:pre=1", Some("sample:300:7"), Some(5))), 300);
        assert_eq!(runs(&spec("10x4", Some("all"), None)), RUNS_BUDGET);
        assert_eq!(runs(&spec("6x62:pre=1", None, Some(9))), 10);
        assert!(
            Estimate::scenario(&spec("6x62:pre=1", Some("all"), Some(5))).cpu_ms
                > Estimate::scenario(&spec("6x62:pre=1", None, None)).cpu_ms
        );
    }

    /// A sweep with orders is charged, per row, its list-order run and its distribution's
    /// runs: the distinct arrangements of the mix (1x2 1x3 2x4: 4!/2! = 12) or the sample.
    #[test]
    fn a_sweep_with_orders_is_charged_for_each_rows_distribution() {
        use crate::analysis::orders::Orders;
        let plain = small_sweep("1x2 1x3 2x4");
        let with = |orders| {
            Estimate::sweep(&SweepConfig {
                orders,
                ..plain.clone()
            })
        };
        let base = Estimate::sweep(&plain);
        assert_eq!(with(Orders::All).runs, base.runs * (1 + 12));
        assert_eq!(with(Orders::Sample { n: 50, seed: 0 }).runs, base.runs * 51);
        assert!(with(Orders::All).cpu_ms > base.cpu_ms, "{base:?}");
        // Ten different devices: over the enumeration budget, the fallback sample.
        let ten = Mix::parse("1x1 1x2 1x3 1x4 1x5 1x6 1x7 1x8 1x9 1x10").unwrap();
        assert_eq!(
            sweep_row_orders_runs(&ten.devices, Orders::All),
            u64::from(crate::analysis::orders::SAMPLE_FALLBACK)
        );
    }

    #[test]
    fn the_hostile_sweep_is_over_the_budget_and_the_default_is_not() {
        let e = Estimate::sweep(&hostile());
        // 4 counter-using variants × 4,096 counters + 2 variants and 1 proposal once = 16,387.
        let uses = SweepConfig::parse_placements("all")
            .unwrap()
            .iter()
            .filter(|p| p.uses_counter())
            .count() as u64;
        let all = SweepConfig::parse_placements("all").unwrap().len() as u64;
        assert_eq!(e.runs, uses * 4096 + (all - uses));
        assert_eq!((e.cpus, e.groups, e.devices), (8192, 65_536, 256));
        assert!(e.cpu_ms > 100 * REQUEST_CPU_MS_MAX, "{e:?}");
        let text = e.refusal(REQUEST_CPU_MS_MAX);
        assert!(text.contains("8,192 CPUs × 65,536 groups (256 devices)"), "{text}");
        assert!(text.contains("irqscope sweep"), "{text}");
        let default = Estimate::sweep(&SweepConfig::catalogue_default());
        assert!(default.cpu_ms * 4 < REQUEST_CPU_MS_MAX, "{default:?}");
    }

    #[test]
    fn a_scenario_of_the_largest_machine_fits_the_budget() {
        let spec = ScenarioSpec::new(
            TopologyRef::Preset("synthetic-8192".into()),
            Mix::parse("256x256").unwrap().devices,
        );
        let e = Estimate::scenario(&spec);
        assert_eq!((e.runs, e.cpus, e.groups), (1, 8192, 65_536));
        assert!(
            e.cpu_ms >= HEAVY_CPU_MS_MIN && e.cpu_ms * 10 < REQUEST_CPU_MS_MAX,
            "{e:?}"
        );
        let small = ScenarioSpec::new(
            TopologyRef::Preset("azure-l96as-v4".into()),
            Mix::parse("6x62:pre=1").unwrap().devices,
        );
        assert!(Estimate::scenario(&small).cpu_ms < HEAVY_CPU_MS_MIN);
    }

    /// Built C that is never called: the estimate reads only what the placement is.
    struct NeverCalled;

    impl crate::kernel::ExternalGroupCpus for NeverCalled {
        fn name(&self) -> &str {
            "c:never"
        }
        fn describe(&self) -> &str {
            "never called"
        }
        fn id(&self) -> &str {
            "0"
        }
        fn uses_counter(&self) -> bool {
            false
        }
        fn group_cpus_evenly(
            &self,
            _: &crate::topology::Topology,
            _: u32,
            _: &mut u32,
            _: &mut Vec<crate::kernel::KernelWarn>,
        ) -> Result<Option<crate::kernel::Grouping>, crate::kernel::ExternalError> {
            unreachable!("an estimate runs nothing")
        }
    }

    #[test]
    fn built_c_is_estimated_at_its_measured_cost() {
        let model = SweepConfig {
            placements: SweepConfig::parse_placements("cluster").unwrap(),
            ..SweepConfig::catalogue_default()
        };
        let c = SweepConfig {
            placements: vec![Placement::External(sweep::ExternalRef::register(
                crate::kernel::External(Arc::new(NeverCalled)),
            ))],
            ..model.clone()
        };
        let (m, k) = (Estimate::sweep(&model), Estimate::sweep(&c));
        assert_eq!(m.runs, k.runs);
        // The rows rendered cost the same; the runs EXTERNAL_RUN_FACTOR times as much.
        let rows_ms = model.row_count() * ROW_NS / 1_000_000;
        assert!(
            k.cpu_ms + 1 >= EXTERNAL_RUN_FACTOR * (m.cpu_ms - rows_ms),
            "{m:?} {k:?}"
        );
        assert!(k.cpu_ms <= EXTERNAL_RUN_FACTOR * m.cpu_ms, "{m:?} {k:?}");
        let mut spec = ScenarioSpec::new(
            TopologyRef::Preset("synthetic-8192".into()),
            Mix::parse("16x64").unwrap().devices,
        );
        let one = Estimate::scenario(&spec).cpu_ms;
        spec.variant = "c:mine".into();
        assert_eq!(Estimate::scenario(&spec).cpu_ms, EXTERNAL_RUN_FACTOR * one);
    }

    #[test]
    fn numbers_read_as_written() {
        assert_eq!(thousands(24_576), "24,576");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(seconds(450), "0.4 s");
        assert_eq!(seconds(2_913_456), "2,913 s");
    }

    #[test]
    fn slots_per_client_and_in_all() {
        let slots = Arc::new(Slots::default());
        let a: Option<IpAddr> = Some("127.0.0.1".parse().unwrap());
        let held: Vec<Slot> = (0..HEAVY_PER_CLIENT_MAX).map(|_| slots.take(a).unwrap()).collect();
        assert!(matches!(slots.take(a), Err(AppError::Busy { .. })));
        let others: Vec<Slot> = (HEAVY_PER_CLIENT_MAX..HEAVY_MAX)
            .map(|i| slots.take(Some(IpAddr::from([10, 0, 0, i as u8]))).unwrap())
            .collect();
        assert!(matches!(
            slots.take(Some("10.9.9.9".parse().unwrap())),
            Err(AppError::Busy { .. })
        ));
        drop(held);
        assert!(slots.take(a).is_ok());
        drop(others);
        assert_eq!(slots.inner.lock().unwrap().0, 0);
    }
}
