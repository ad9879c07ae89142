//! Sweeps: one patch judged on every machine at once. Placements (the kernel variants and the
//! `policy` proposals) × topologies × device mixes × starting spread counters, one [`Row`] of
//! figures per combination, and one [`Aggregate`] per placement, machine and mix that keeps the
//! worst and the best counter (the counter's value at probe time is unknown on a real machine).
//!
//! Pure: it runs `scenario::run` and `metrics::compute` and reads the catalogue; no I/O, no
//! clock. Work may be spread over threads, but rows come back in the order of the
//! configuration (topology, mix, placement, counter), so the output is the same bytes on every
//! machine. Formatting lives in `render::sweep`; permalinks are made by the caller (`web`, the
//! CLI) from [`Sweep::spec`]. What a sweep is asked, and its limits, is [`config`].

use crate::analysis::orders::{self, CounterRange, Orders};
use crate::catalogue;
use crate::kernel::irq_affinity::IRQ_AFFINITY_MAX_SETS;
use crate::metrics::{self, Basis};
use crate::policy::ideal::{node_local_bound, within_nodes_bound};
use crate::scenario::spec::{self, ScenarioSpec, TopologyRef};
use crate::scenario::{self, Scenario};
use crate::topology::Topology;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

mod config;
pub use config::{parse_counters, ExternalRef, Mix, Placement, SweepConfig};
pub(crate) use config::{COUNTERS_MAX, MIXES_MAX, NAMED_MIXES, ROWS_MAX, THREADS_MAX};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SweepError(pub String);

/// The error of a sweep [`run_until`] stopped.
pub(crate) const STOPPED: &str = "the sweep was stopped before it finished";

fn err<T>(m: impl Into<String>) -> Result<T, SweepError> {
    Err(SweepError(m.into()))
}

/// The figures of one scenario run. IRQs are counted on the metrics' basis (managed vectors
/// when the scenario has any).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Figures {
    pub irqs_per_cpu_max: u32,
    pub(crate) irqs_per_cpu_min: u32,
    /// The node-local ideal bound (`policy::ideal::node_local_bound`).
    pub ideal_irqs_per_cpu: u32,
    /// `irqs_per_cpu_max - ideal_irqs_per_cpu`.
    pub gap_irqs: u32,
    /// The best maximum with this placement's per-node totals (`within_nodes_bound`).
    pub within_nodes_irqs_per_cpu: u32,
    pub cpus_idle: u32,
    /// Most hot (single-CPU mask) IRQs stacked on one CPU.
    pub hot_irqs_per_cpu_max: u32,
    /// The best stacking of the same per-node hot IRQs.
    pub hot_ideal_per_cpu: u32,
    pub(crate) devices_per_cpu_max: u32,
    pub node_irqs_max: u32,
    pub node_irqs_min: u32,
    /// Largest excess of a node over its fair share (by online CPUs), in thousandths of an IRQ.
    pub(crate) node_over_fair_milli: i64,
    pub(crate) per_node_irqs: Vec<u32>,
    pub kernel_warnings: u32,
    /// Vectors that got none and fire nowhere: refused by the vector space (`-ENOSPC`), or
    /// asked by a device whose whole allocation `alloc_descs()` refused (`-EINVAL`).
    pub(crate) vectors_failed: u32,
    /// Of `vectors_failed`, those of devices `alloc_descs()` refused (`-EINVAL`: an empty
    /// managed mask); the rest the vector space refused.
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) vectors_alloc_refused: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Figures {
    pub(crate) fn node_spread(&self) -> u32 {
        self.node_irqs_max - self.node_irqs_min
    }

    /// How a reviewer ranks placements: vectors lost to `-ENOSPC` (a placement that loses
    /// vectors only looks lighter), the busiest CPU, then hot stacking, then the node spread,
    /// then idle CPUs. Smaller is better.
    pub(crate) fn badness(&self) -> (u32, u32, u32, u32, u32) {
        (
            self.vectors_failed,
            self.irqs_per_cpu_max,
            self.hot_irqs_per_cpu_max,
            self.node_spread(),
            self.cpus_idle,
        )
    }
}

/// A row's probe-order distribution (`analysis::orders::distribution` over the orders asked,
/// from the row's counter start), or an aggregate's (its rows' summed): what the column
/// "P(worst > ideal)" reads. The ideal is the distribution's: `metrics.ideal.irqs_per_cpu_max`,
/// IRQs over online CPUs rounded up, the scenario report's "ideal max".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OrdersFigures {
    /// Runs (orders × counter starts, equivalent orders counted).
    pub(crate) runs: u64,
    /// Every allowed order enumerated (`false`: sampled).
    pub(crate) exact: bool,
    /// `all` was over `orders::RUNS_BUDGET` runs and sampled instead.
    pub(crate) over_budget: bool,
    pub(crate) ideal_irqs_per_cpu: u32,
    /// Runs whose worst CPU serves more IRQs than the ideal.
    pub(crate) worst_above_ideal: u64,
}

impl OrdersFigures {
    fn of(d: &orders::Distribution) -> OrdersFigures {
        OrdersFigures {
            runs: d.runs,
            exact: d.exact,
            over_budget: d.over_budget,
            ideal_irqs_per_cpu: d.ideal_irqs_per_cpu,
            worst_above_ideal: d.worst_above_ideal,
        }
    }

    /// The rows of one placement added up (the same orders from each counter start).
    fn sum<'a>(all: impl IntoIterator<Item = &'a OrdersFigures>) -> Option<OrdersFigures> {
        all.into_iter().copied().reduce(|a, b| OrdersFigures {
            runs: a.runs + b.runs,
            exact: a.exact && b.exact,
            over_budget: a.over_budget || b.over_budget,
            ideal_irqs_per_cpu: a.ideal_irqs_per_cpu.max(b.ideal_irqs_per_cpu),
            worst_above_ideal: a.worst_above_ideal + b.worst_above_ideal,
        })
    }

    /// P(worst > ideal).
    pub(crate) fn p_worst_above_ideal(&self) -> f64 {
        self.worst_above_ideal as f64 / self.runs.max(1) as f64
    }

    /// The 95% Wilson interval on P(worst > ideal) when sampled.
    pub(crate) fn interval(&self) -> Option<(f64, f64)> {
        (!self.exact).then(|| orders::wilson(self.worst_above_ideal, self.runs))
    }
}

impl Serialize for OrdersFigures {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("runs", &self.runs)?;
        m.serialize_entry("exact", &self.exact)?;
        if self.over_budget {
            m.serialize_entry("sampled_over_budget", &orders::RUNS_BUDGET)?;
        }
        m.serialize_entry("ideal_irqs_per_cpu", &self.ideal_irqs_per_cpu)?;
        m.serialize_entry("worst_above_ideal_runs", &self.worst_above_ideal)?;
        m.serialize_entry("p_worst_above_ideal", &self.p_worst_above_ideal())?;
        if let Some((lo, hi)) = self.interval() {
            m.serialize_entry("p_worst_above_ideal_95", &[lo, hi])?;
        }
        m.end()
    }
}

/// One combination.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    pub topology: String,
    pub mix: String,
    pub placement: Placement,
    pub counter: u32,
    #[serde(flatten)]
    pub figures: Figures,
    /// With orders asked: the distribution over them from this row's counter start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) orders: Option<OrdersFigures>,
}

/// One placement on one machine with one mix, over the counter range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Aggregate {
    pub(crate) topology: String,
    pub(crate) mix: String,
    pub(crate) placement: Placement,
    /// Every counter gave the same figures.
    pub(crate) counter_independent: bool,
    pub(crate) worst_counter: u32,
    pub(crate) worst: Figures,
    pub(crate) best_counter: u32,
    pub(crate) best: Figures,
    /// With orders asked: the distribution over them from every counter start swept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) orders: Option<OrdersFigures>,
}

/// How a proposal fares against every kernel variant of the sweep on one machine and mix,
/// worst case against worst case ([`Figures::badness`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Verdict {
    /// Strictly better than every kernel variant.
    BeatsAll,
    /// As good as the best kernel variant, not better.
    TiesBest,
    /// Some kernel variant is strictly better.
    Behind,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Comparison {
    pub(crate) topology: String,
    pub(crate) mix: String,
    pub(crate) proposal: Placement,
    pub(crate) verdict: Verdict,
    /// The best kernel variant (worst case over counters).
    pub(crate) best_kernel: Placement,
}

#[derive(Debug, Clone)]
pub struct Sweep {
    pub(crate) config: SweepConfig,
    /// In configuration order: topology, mix, placement, counter.
    pub rows: Vec<Row>,
    /// In configuration order: topology, mix, placement.
    pub(crate) aggregates: Vec<Aggregate>,
    pub(crate) comparisons: Vec<Comparison>,
}

/// Run the sweep.
pub fn run(config: &SweepConfig) -> Result<Sweep, SweepError> {
    run_until(config, &|| false)
}

/// Run the sweep unless `stop` says to give up: it is asked before each scenario run (by every
/// worker), so the work ends within one run of the answer turning `true` (the web layer's
/// deadline, or a client that went away). A stopped sweep is an error.
pub(crate) fn run_until(config: &SweepConfig, stop: &(dyn Fn() -> bool + Sync)) -> Result<Sweep, SweepError> {
    check_config(config)?;
    let bases = bases(config, kernel_generation(config)?)?;
    let jobs = jobs(config, bases.len());
    let figures = run_jobs(config, &bases, &jobs, stop)?;
    let (rows, aggregates) = rows_and_aggregates(config, &figures);
    let comparisons = compare(&aggregates, config.placements.len());
    Ok(Sweep {
        config: config.clone(),
        rows,
        aggregates,
        comparisons,
    })
}

/// The sweep's size within its limits.
fn check_config(config: &SweepConfig) -> Result<(), SweepError> {
    if config.topologies.is_empty()
        || config.mixes.is_empty()
        || config.placements.is_empty()
        || config.counters.is_empty()
    {
        return err("a sweep needs at least one topology, mix, variant and counter");
    }
    if config.mixes.len() > MIXES_MAX {
        return err(format!("{} mixes; at most {MIXES_MAX}", config.mixes.len()));
    }
    if config.counters.len() > COUNTERS_MAX as usize {
        return err(format!("{} counters; at most {COUNTERS_MAX}", config.counters.len()));
    }
    if config.rows() > ROWS_MAX {
        return err(format!("{} combinations; at most {ROWS_MAX}", config.rows()));
    }
    Ok(())
}

/// What --kernel picks beyond the variant, sort and effective model, as each row's permalink
/// carries it (Sweep::spec); without one, the newest release's, as `simulate` and the pages
/// take it (the vectors per CPU of its window among them).
fn kernel_generation(config: &SweepConfig) -> Result<Option<crate::kernel::release::Generation>, SweepError> {
    Ok(match config.kernel.as_deref() {
        None => Some(crate::kernel::release::generation(crate::kernel::release::NEWEST)),
        Some(k) => Some(
            crate::kernel::release::parse_release(k)
                .map(crate::kernel::release::generation)
                .ok_or_else(|| SweepError(format!("kernel {k:?}: not a kernel release (e.g. 6.12)")))?,
        ),
    })
}

/// Every machine × mix as a validated scenario, once, before any work.
fn bases(
    config: &SweepConfig,
    generation: Option<crate::kernel::release::Generation>,
) -> Result<Vec<Scenario>, SweepError> {
    let mut bases: Vec<Scenario> = Vec::with_capacity(config.topologies.len() * config.mixes.len());
    for name in &config.topologies {
        let topo = catalogue::get(name).ok_or_else(|| SweepError(format!("unknown topology preset {name:?}")))?;
        let pick = generation.as_ref().map(|g| crate::scenario::KernelPick {
            kernel: config.kernel.clone(),
            affinity: Some(g.affinity),
            mapper: Some(g.mapper),
            vectors_per_cpu: Some(g.window.vectors_per_cpu(topo.legacy_pic().unwrap_or(false))),
        });
        for mix in &config.mixes {
            let devices =
                spec::expand_devices(&mix.devices).map_err(|e| SweepError(format!("{name}, mix {}: {e}", mix.name)))?;
            let scenario = Scenario::new(
                Arc::clone(&topo),
                devices,
                spec::DEFAULT_VARIANT,
                config.sort,
                config.effective,
                0,
            )
            .map_err(|e| SweepError(format!("{name}, mix {}: {e}", mix.name)))?;
            let scenario = match &pick {
                Some(p) => scenario
                    .with_kernel(p.clone())
                    .map_err(|e| SweepError(format!("{name}, mix {}: {e}", mix.name)))?,
                None => scenario,
            };
            bases.push(scenario);
        }
    }
    Ok(bases)
}

/// One job per base × placement × distinct counter (one counter when it cannot matter).
fn jobs(config: &SweepConfig, bases: usize) -> Vec<(usize, Placement, u32)> {
    let mut jobs: Vec<(usize, Placement, u32)> = Vec::new();
    for b in 0..bases {
        for &p in &config.placements {
            if p.uses_counter() {
                jobs.extend(config.counters.iter().map(|&c| (b, p, c)));
            } else {
                jobs.push((b, p, config.counters[0]));
            }
        }
    }
    jobs
}

/// A job's figures, and with orders asked its distribution's.
type JobFigures = (Figures, Option<OrdersFigures>);

/// The figures of `scenario` in its list order, and with `orders` other than `Fixed` the
/// distribution over them from its counter start.
fn job_figures(scenario: &Scenario, orders: Orders) -> Result<JobFigures, crate::kernel::ExternalError> {
    let figures = try_figures(scenario)?;
    if orders == Orders::Fixed {
        return Ok((figures, None));
    }
    let c = scenario.spread_counter();
    let d = orders::distribution(scenario, orders, CounterRange { from: c, to: c })?;
    Ok((figures, Some(OrdersFigures::of(&d))))
}

/// Every job's figures, on `config.threads` threads, in job order; [`STOPPED`] when `stop`
/// said so first.
fn run_jobs(
    config: &SweepConfig,
    bases: &[Scenario],
    jobs: &[(usize, Placement, u32)],
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Vec<JobFigures>, SweepError> {
    let results: Vec<Mutex<Option<Result<JobFigures, crate::kernel::ExternalError>>>> =
        jobs.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let stopped = AtomicBool::new(false);
    let work = || loop {
        if stopped.load(Ordering::Relaxed) || stop() {
            stopped.store(true, Ordering::Relaxed);
            break;
        }
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(&(b, p, c)) = jobs.get(i) else { break };
        let scenario = bases[b]
            .with(p.variant(), config.sort, config.effective, c)
            .with_proposal(match p {
                Placement::Proposal(q) => Some(q),
                Placement::Kernel(_) | Placement::External(_) => None,
            })
            .with_external(match p {
                Placement::External(e) => Some(e.external().clone()),
                _ => None,
            });
        *results[i].lock().expect("no worker panics while holding a result") =
            Some(job_figures(&scenario, config.orders));
    };
    let threads = config.threads.clamp(1, THREADS_MAX).min(jobs.len());
    if threads <= 1 {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(work);
            }
        });
    }
    if stopped.into_inner() {
        return err(STOPPED);
    }
    results
        .into_iter()
        .map(|m| m.into_inner().expect("workers finished").expect("every job ran"))
        .collect::<Result<_, _>>()
        .map_err(|e: crate::kernel::ExternalError| SweepError(e.to_string()))
}

/// One row per machine × mix × placement × counter, and per machine × mix × placement its
/// worst and best counters.
fn rows_and_aggregates(config: &SweepConfig, figures: &[JobFigures]) -> (Vec<Row>, Vec<Aggregate>) {
    let mut rows = Vec::with_capacity(config.rows());
    let mut aggregates = Vec::new();
    let mut at = 0;
    for topo_name in &config.topologies {
        for mix in &config.mixes {
            for &p in &config.placements {
                let per_counter: Vec<(u32, &JobFigures)> = if p.uses_counter() {
                    let slice = &figures[at..at + config.counters.len()];
                    at += config.counters.len();
                    config.counters.iter().copied().zip(slice.iter()).collect()
                } else {
                    at += 1;
                    config.counters.iter().map(|&c| (c, &figures[at - 1])).collect()
                };
                for (c, (f, o)) in &per_counter {
                    rows.push(Row {
                        topology: topo_name.clone(),
                        mix: mix.name.clone(),
                        placement: p,
                        counter: *c,
                        figures: f.clone(),
                        orders: *o,
                    });
                }
                let worst = per_counter
                    .iter()
                    .max_by_key(|(c, (f, _))| (f.badness(), std::cmp::Reverse(*c)))
                    .expect("counters");
                let best = per_counter
                    .iter()
                    .min_by_key(|(c, (f, _))| (f.badness(), *c))
                    .expect("counters");
                aggregates.push(Aggregate {
                    topology: topo_name.clone(),
                    mix: mix.name.clone(),
                    placement: p,
                    counter_independent: per_counter.iter().all(|(_, (f, _))| *f == per_counter[0].1 .0),
                    worst_counter: worst.0,
                    worst: worst.1 .0.clone(),
                    best_counter: best.0,
                    best: best.1 .0.clone(),
                    orders: OrdersFigures::sum(per_counter.iter().filter_map(|(_, (_, o))| o.as_ref())),
                });
            }
        }
    }
    (rows, aggregates)
}

/// Each proposal against the kernel variants of the same machine and mix.
fn compare(aggregates: &[Aggregate], per_group: usize) -> Vec<Comparison> {
    let mut out = Vec::new();
    for group in aggregates.chunks(per_group) {
        let kernels: Vec<&Aggregate> = group.iter().filter(|a| !a.placement.is_proposal()).collect();
        let Some(best_kernel) = kernels.iter().min_by_key(|a| a.worst.badness()) else {
            continue;
        };
        for prop in group.iter().filter(|a| a.placement.is_proposal()) {
            let mine = prop.worst.badness();
            let verdict = if kernels.iter().all(|k| mine < k.worst.badness()) {
                Verdict::BeatsAll
            } else if mine <= best_kernel.worst.badness() {
                Verdict::TiesBest
            } else {
                Verdict::Behind
            };
            out.push(Comparison {
                topology: prop.topology.clone(),
                mix: prop.mix.clone(),
                proposal: prop.placement,
                verdict,
                best_kernel: best_kernel.placement,
            });
        }
    }
    out
}

/// Run one scenario and derive its figures.
pub fn figures(scenario: &Scenario) -> Figures {
    try_figures(scenario).expect("a named model answers every call")
}

/// [`figures`] for any scenario: built C may fail.
pub(crate) fn try_figures(scenario: &Scenario) -> Result<Figures, crate::kernel::ExternalError> {
    let outcome = scenario::try_run(scenario)?;
    let m = metrics::compute(scenario, &outcome);
    let node_cpus_online: Vec<u32> = m.per_node.iter().map(|n| n.cpus_online).filter(|&c| c > 0).collect();
    let ideal = node_local_bound(
        u64::from(m.irqs_total),
        &node_cpus_online,
        spanning_sets(scenario, m.basis),
    );
    let online_nodes = m.per_node.iter().filter(|n| n.cpus_online > 0);
    let within = within_nodes_bound(
        &online_nodes
            .clone()
            .map(|n| (u64::from(n.irqs), n.cpus_online))
            .collect::<Vec<_>>(),
    );
    let hot_ideal = within_nodes_bound(
        &online_nodes
            .clone()
            .map(|n| (u64::from(n.hot_irqs), n.cpus_online))
            .collect::<Vec<_>>(),
    );
    let node_irqs: Vec<u32> = online_nodes.clone().map(|n| n.irqs).collect();
    let node_over_fair_milli = online_nodes
        .map(|n| i64::from(n.irqs) * 1000 - n.fair_share_milli as i64)
        .max()
        .unwrap_or(0);
    Ok(Figures {
        irqs_per_cpu_max: m.irqs_per_cpu_max,
        irqs_per_cpu_min: m.irqs_per_cpu_min,
        ideal_irqs_per_cpu: ideal,
        gap_irqs: m.irqs_per_cpu_max.saturating_sub(ideal),
        within_nodes_irqs_per_cpu: within,
        cpus_idle: m.cpus_idle.weight(),
        hot_irqs_per_cpu_max: m.hot_irqs_per_cpu_max,
        hot_ideal_per_cpu: hot_ideal,
        devices_per_cpu_max: m.devices_per_cpu_max,
        node_irqs_max: node_irqs.iter().copied().max().unwrap_or(0),
        node_irqs_min: node_irqs.iter().copied().min().unwrap_or(0),
        node_over_fair_milli,
        per_node_irqs: m.per_node.iter().map(|n| n.irqs).collect(),
        kernel_warnings: outcome.warnings().count() as u32,
        vectors_failed: m.vectors_failed,
        vectors_alloc_refused: outcome
            .devices
            .iter()
            .filter(|d| d.alloc_failed.is_some())
            .map(|d| d.vectors.len() as u32)
            .sum(),
    })
}

/// The interrupt sets that must fire a counted vector in every node with online CPUs: managed
/// sets of at least as many groups as nodes with possible CPUs (`alloc_nodes_groups` then gives
/// every node a group, and a group with an online CPU fires there).
pub(crate) fn spanning_sets(scenario: &Scenario, basis: Basis) -> u32 {
    if basis != Basis::Managed {
        return 0;
    }
    let nodes = scenario.topology().nodes_with_cpus().count() as u64;
    scenario
        .devices()
        .iter()
        .filter(|d| d.managed_affinity && d.affinity_vectors() > 0)
        .map(|d| {
            let sets = d.sets.clone().unwrap_or_else(|| vec![d.affinity_vectors()]);
            if sets.len() > IRQ_AFFINITY_MAX_SETS || sets.contains(&0) {
                return 0;
            }
            sets.iter().filter(|&&s| u64::from(s) >= nodes).count() as u32
        })
        .sum()
}

impl Sweep {
    /// The scenario of one combination, as the permalink and the HTTP API take it.
    pub fn spec(&self, topology: &str, mix: &str, placement: Placement, counter: u32) -> ScenarioSpec {
        let devices = self
            .config
            .mixes
            .iter()
            .find(|m| m.name == mix)
            .map(|m| m.devices.clone())
            .unwrap_or_default();
        let release = match self.config.kernel.as_deref() {
            None => Some(crate::kernel::release::NEWEST),
            Some(k) => crate::kernel::release::parse_release(k),
        };
        let g = release.map(crate::kernel::release::generation);
        let pic = catalogue::get(topology).and_then(|t| t.legacy_pic()).unwrap_or(false);
        ScenarioSpec {
            // A proposal's scenario names the kernel variant it runs beside (the proposal is
            // its own field); built C is its `c:NAME`.
            variant: match placement {
                Placement::External(_) => placement.name().into(),
                _ => placement.variant().name().into(),
            },
            sort: self.config.sort.name().into(),
            effective: self.config.effective.name().into(),
            spread_counter: counter,
            proposal: match placement {
                Placement::Proposal(p) => Some(p.name().into()),
                Placement::Kernel(_) | Placement::External(_) => None,
            },
            kernel_c: match placement {
                Placement::External(e) => Some(e.external().0.id().to_string()),
                _ => None,
            },
            kernel: self.config.kernel.clone().filter(|_| g.is_some()),
            affinity: g.as_ref().map(|g| g.affinity.name().to_string()),
            mapper: g.as_ref().map(|g| g.mapper.name().to_string()),
            vectors_per_cpu: g.as_ref().map(|g| g.window.vectors_per_cpu(pic)),
            // With orders asked the link opens the row's distribution.
            orders: (self.config.orders != Orders::Fixed).then(|| self.config.orders.name()),
            ..ScenarioSpec::new(TopologyRef::Preset(topology.to_string()), devices)
        }
    }

    /// The preset behind a row's topology name.
    pub(crate) fn topology(&self, name: &str) -> Option<Arc<Topology>> {
        catalogue::get(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(topologies: &[&str], placements: &str, counters: &str) -> SweepConfig {
        SweepConfig {
            topologies: topologies.iter().map(|s| s.to_string()).collect(),
            mixes: vec![Mix::parse("nvme-6x32").unwrap()],
            placements: SweepConfig::parse_placements(placements).unwrap(),
            counters: parse_counters(counters).unwrap(),
            threads: 2,
            ..SweepConfig::catalogue_default()
        }
    }

    #[test]
    fn counters_and_mixes_parse() {
        assert_eq!(parse_counters("0..8").unwrap(), (0..8).collect::<Vec<_>>());
        assert_eq!(parse_counters("2..=3").unwrap(), [2, 3]);
        assert_eq!(parse_counters("5").unwrap(), [5]);
        for bad in ["", "3..3", "a..2", "0..5000"] {
            assert!(parse_counters(bad).is_err(), "{bad:?}");
        }
        let m = Mix::parse("disks=6x32:pre=1,name=nvme  2x8").unwrap();
        assert_eq!(
            (m.name.as_str(), m.tokens.as_str(), m.devices.len()),
            ("disks", "6x32:pre=1,name=nvme 2x8", 2)
        );
        assert_eq!(Mix::parse("6x32:pre=1").unwrap().name, "6x32:pre=1");
        assert!(Mix::parse("6x").is_err());
        assert!(SweepConfig::parse_placements("cluster,bogus").is_err());
    }

    /// Seed 000, L48s v2: the rows carry the thread's figures, and threads do not change them.
    #[test]
    fn l48s_rows_and_determinism() {
        let one = run(&SweepConfig {
            threads: 1,
            ..config(&["azure-l48s-v2"], "all", "0..4")
        })
        .unwrap();
        let two = run(&config(&["azure-l48s-v2"], "all", "0..4")).unwrap();
        assert_eq!(one.rows, two.rows);
        assert_eq!(one.rows.len(), Placement::all().len() * 4);
        let agg = |p: &str| one.aggregates.iter().find(|a| a.placement.name() == p).unwrap();
        let pre = agg("pre-cluster");
        assert!(pre.counter_independent);
        assert_eq!(
            (
                pre.worst.irqs_per_cpu_min,
                pre.worst.irqs_per_cpu_max,
                pre.worst.ideal_irqs_per_cpu
            ),
            (3, 6, 4)
        );
        assert_eq!((pre.worst.node_irqs_min, pre.worst.node_irqs_max), (30, 36));
        let prop = agg("offset-by-probed");
        assert_eq!(
            (
                prop.worst.irqs_per_cpu_max,
                prop.worst.gap_irqs,
                prop.worst.node_spread()
            ),
            (4, 0, 0)
        );
        assert_eq!(one.comparisons[0].verdict, Verdict::BeatsAll);
    }

    /// `run_until` asks before every run and gives up once told: a sweep of 195 runs told to
    /// stop after 10 questions runs no more than a question per worker beyond them.
    #[test]
    fn a_stopped_sweep_ends_between_runs() {
        let c = config(&["azure-l48s-v2"], "all", "0..64");
        let asked = AtomicUsize::new(0);
        let stop = || asked.fetch_add(1, Ordering::Relaxed) >= 10;
        assert_eq!(run_until(&c, &stop).unwrap_err().0, STOPPED);
        let asked = asked.into_inner();
        assert!((11..=11 + c.threads).contains(&asked), "asked {asked} times");
        assert!(run_until(&c, &|| false).is_ok());
    }
}
