//! Probe order as a distribution: the orders the model allows and the counter values earlier
//! callers may leave, each run as an ordinary fixed-order scenario ([`super::try_run`]), and
//! what the runs add up to ([`Distribution`]).
//!
//! What the model allows (`docs/probe-order.md`): devices with no driver named and NVMe
//! controllers may be probed in any order, so `all` is every permutation of them; a MANA
//! device keeps its place in the list. With `probe=parallel` every NVMe admin tag set still
//! comes first, in the order of the permutation. Devices that differ only by name are
//! interchangeable: `all` runs each distinct arrangement once and counts it as many times as
//! there are orders giving it, so `runs` counts equivalent orders and never skips them.

use crate::kernel::ExternalError;
use crate::metrics::{self, Metrics};
use crate::scenario::{Device, Outcome, Scenario};
use std::collections::BTreeMap;

/// Most scenario runs one distribution enumerates; beyond it `all` is sampled.
pub const RUNS_BUDGET: u64 = 50_000;
/// Most orders a sample may draw (`sample:N`).
pub const SAMPLE_MAX: u32 = 50_000;
/// Orders drawn when `all` exceeds the budget.
pub const SAMPLE_FALLBACK: u32 = 2_000;
/// Widest counter range (`--counter A..B`): B - A.
pub const COUNTER_SPAN_MAX: u32 = 4_096;

/// Which probe orders a scenario stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Orders {
    /// The list order only (every scenario before orders could be named).
    Fixed,
    /// Every order the model allows, enumerated when within [`RUNS_BUDGET`].
    All,
    /// `n` orders drawn uniformly from those the model allows, from `seed`.
    Sample { n: u32, seed: u64 },
}

impl Orders {
    /// `fixed`, `all` or `sample:N[:SEED]`.
    pub fn parse(text: &str) -> Result<Orders, String> {
        let bad = |why: &str| format!("orders {text:?}: {why} (fixed, all or sample:N[:SEED])");
        match text {
            "fixed" => return Ok(Orders::Fixed),
            "all" => return Ok(Orders::All),
            _ => {}
        }
        let rest = text.strip_prefix("sample:").ok_or_else(|| bad("unknown"))?;
        let (n, seed) = match rest.split_once(':') {
            Some((n, seed)) => (n, Some(seed)),
            None => (rest, None),
        };
        let n: u32 = n.parse().map_err(|_| bad("N is not a number"))?;
        if n == 0 || n > SAMPLE_MAX {
            return Err(bad(&format!("N must be 1 to {SAMPLE_MAX}")));
        }
        let seed = match seed {
            Some(s) => s.parse().map_err(|_| bad("SEED is not a number"))?,
            None => 0,
        };
        Ok(Orders::Sample { n, seed })
    }

    /// The text [`Orders::parse`] reads back.
    pub fn name(self) -> String {
        match self {
            Orders::Fixed => "fixed".into(),
            Orders::All => "all".into(),
            Orders::Sample { n, seed: 0 } => format!("sample:{n}"),
            Orders::Sample { n, seed } => format!("sample:{n}:{seed}"),
        }
    }
}

/// Counter starts `from..=to`: unknown earlier callers of `group_cpus_evenly()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterRange {
    pub from: u32,
    pub to: u32,
}

impl CounterRange {
    /// `N` or `A..B` (both ends included).
    pub fn parse(text: &str) -> Result<CounterRange, String> {
        let bad = |why: &str| format!("counter {text:?}: {why} (N or A..B, both ends included)");
        let num = |s: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| bad(&format!("{s:?} is not a number")))
        };
        let range = match text.split_once("..") {
            Some((a, b)) => CounterRange {
                from: num(a)?,
                to: num(b)?,
            },
            None => {
                let n = num(text)?;
                CounterRange { from: n, to: n }
            }
        };
        range.check().map_err(|why| bad(&why))?;
        Ok(range)
    }

    /// Why the range is refused, if it is.
    pub fn check(self) -> Result<(), String> {
        if self.from > self.to {
            return Err(format!("{} is above {}", self.from, self.to));
        }
        if self.to - self.from > COUNTER_SPAN_MAX {
            return Err(format!("a range spans at most {COUNTER_SPAN_MAX}"));
        }
        Ok(())
    }

    /// How many starts the range holds.
    pub fn len(self) -> u64 {
        u64::from(self.to - self.from) + 1
    }

    pub fn is_empty(self) -> bool {
        false
    }
}

/// One run the distribution holds: the probe order (indexes into the scenario's device
/// list), the counter start, how many runs it stands for, and its worst CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderRun {
    pub order: Vec<usize>,
    pub counter: u32,
    pub weight: u64,
    pub irqs_per_cpu_max: u32,
    pub devices_per_cpu_max: u32,
}

/// What the runs add up to. Every count is in runs (an enumerated arrangement counts once
/// per order giving it).
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    pub runs: u64,
    /// Orders × counter starts the model allows (equal to `runs` when exact).
    pub population: u128,
    /// Every allowed order enumerated (`false`: sampled).
    pub exact: bool,
    /// `all` asked for more than [`RUNS_BUDGET`] runs and was sampled instead.
    pub over_budget: bool,
    /// The worst CPU's load (`metrics.irqs_per_cpu_max`) → runs.
    pub worst_irqs_per_cpu: BTreeMap<u32, u64>,
    /// The most devices on one CPU (`metrics.devices_per_cpu_max`) → runs.
    pub worst_devices_per_cpu: BTreeMap<u32, u64>,
    /// The ideal worst-CPU load (`metrics.ideal.irqs_per_cpu_max`; the same for every order).
    pub ideal_irqs_per_cpu: u32,
    /// Runs whose worst CPU is above the ideal.
    pub worst_above_ideal: u64,
    /// Per possible CPU (index = CPU): runs in which that online CPU serves more IRQs than the
    /// ideal worst-CPU load.
    pub cpu_above_ideal: Vec<u64>,
    /// Sampled: the 95% Wilson interval on P(worst > ideal).
    pub interval: Option<(f64, f64)>,
    pub best: OrderRun,
    pub median: OrderRun,
    pub worst: OrderRun,
}

impl Distribution {
    /// The share of runs in which the worst CPU is above the ideal.
    pub fn p_worst_above_ideal(&self) -> f64 {
        self.worst_above_ideal as f64 / self.runs.max(1) as f64
    }
}

/// The scenario probed in `order` (indexes into its device list) from counter `counter`: an
/// ordinary fixed-order scenario.
pub fn reordered(scenario: &Scenario, order: &[usize], counter: u32) -> Scenario {
    scenario.reordered(order, counter)
}

/// Whether a device may be probed anywhere in the order (a MANA device keeps its place).
pub(crate) fn movable(d: &Device) -> bool {
    !d.driver.is_mana()
}

/// The devices' classes: equal devices but for the name share one.
fn classes(devices: &[Device]) -> Vec<usize> {
    let mut reps: Vec<Device> = Vec::new();
    devices
        .iter()
        .map(|d| {
            let key = Device {
                name: String::new(),
                ..d.clone()
            };
            match reps.iter().position(|r| *r == key) {
                Some(i) => i,
                None => {
                    reps.push(key);
                    reps.len() - 1
                }
            }
        })
        .collect()
}

fn factorial(n: usize) -> u128 {
    (1..=n as u128).fold(1u128, |a, b| a.saturating_mul(b))
}

/// Every distinct arrangement of the movable devices with the number of orders giving it.
/// `slots` are the movable positions; `class` the class of each device.
fn arrangements(slots: &[usize], class: &[usize], mut visit: impl FnMut(&[usize], u64)) {
    // Per class, its movable devices in list order (the k-th placed takes the k-th).
    let mut members: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &i in slots {
        members.entry(class[i]).or_default().push(i);
    }
    let weight: u64 = members.values().map(|m| factorial(m.len()) as u64).product();
    let mut walk = Walk {
        slots,
        placed: vec![0; members.len()],
        members: members.into_values().collect(),
        order: (0..class.len()).collect(),
    };
    walk.fill(0, &mut |order| visit(order, weight));
}

/// The state of [`arrangements`]: how many of each class are placed, and the order so far.
struct Walk<'a> {
    slots: &'a [usize],
    members: Vec<Vec<usize>>,
    placed: Vec<usize>,
    order: Vec<usize>,
}

impl Walk<'_> {
    fn fill(&mut self, depth: usize, visit: &mut dyn FnMut(&[usize])) {
        if depth == self.slots.len() {
            visit(&self.order);
            return;
        }
        for k in 0..self.members.len() {
            if self.placed[k] == self.members[k].len() {
                continue;
            }
            self.order[self.slots[depth]] = self.members[k][self.placed[k]];
            self.placed[k] += 1;
            self.fill(depth + 1, visit);
            self.placed[k] -= 1;
        }
    }
}

/// The number of distinct arrangements of the movable devices.
fn distinct_arrangements(slots: &[usize], class: &[usize]) -> u128 {
    let mut sizes: BTreeMap<usize, usize> = BTreeMap::new();
    for &i in slots {
        *sizes.entry(class[i]).or_default() += 1;
    }
    // n! / Π k! as a product of binomials, saturating.
    let mut placed = 0usize;
    let mut total: u128 = 1;
    for &k in sizes.values() {
        placed += k;
        total = total.saturating_mul(binomial(placed, k));
    }
    total
}

fn binomial(n: usize, k: usize) -> u128 {
    let mut r: u128 = 1;
    for i in 0..k {
        r = r.saturating_mul((n - i) as u128) / (i as u128 + 1);
    }
    r
}

/// splitmix64: a small deterministic generator for samples.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` ≥ 1).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

/// The 95% Wilson score interval on a proportion of `k` in `n`.
pub fn wilson(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let (n, p) = (n as f64, k as f64 / n as f64);
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// Run the scenario under every order and counter start asked (or a sample of them) and add
/// the runs up. `Orders::Fixed` with one counter start is one run.
pub fn distribution(
    scenario: &Scenario,
    orders: Orders,
    counters: CounterRange,
) -> Result<Distribution, ExternalError> {
    let devices = scenario.devices();
    let class = classes(devices);
    let slots: Vec<usize> = (0..devices.len()).filter(|&i| movable(&devices[i])).collect();
    let orders_allowed = match orders {
        Orders::Fixed => 1,
        _ => factorial(slots.len()),
    };
    let population = orders_allowed.saturating_mul(u128::from(counters.len()));
    let enumerated = match orders {
        Orders::Fixed => 1,
        _ => distinct_arrangements(&slots, &class),
    }
    .saturating_mul(u128::from(counters.len()));
    let over_budget = orders == Orders::All && enumerated > u128::from(RUNS_BUDGET);
    let sample = match orders {
        Orders::Sample { n, seed } => Some((n, seed)),
        Orders::All if over_budget => Some((SAMPLE_FALLBACK, 0)),
        _ => None,
    };
    let mut acc = Accumulator::new(scenario);
    match sample {
        None => {
            let identity: Vec<usize> = (0..devices.len()).collect();
            let mut each = |order: &[usize], weight: u64| -> Result<(), ExternalError> {
                for counter in counters.from..=counters.to {
                    acc.add(scenario, order, counter, weight)?;
                }
                Ok(())
            };
            if orders == Orders::Fixed {
                each(&identity, 1)?;
            } else {
                let mut all = Vec::new();
                arrangements(&slots, &class, |o, w| all.push((o.to_vec(), w)));
                for (o, w) in all {
                    each(&o, w)?;
                }
            }
        }
        Some((n, seed)) => {
            let mut rng = SplitMix(seed);
            for _ in 0..n {
                let mut order: Vec<usize> = (0..devices.len()).collect();
                if orders != Orders::Fixed {
                    // Fisher–Yates over the movable positions.
                    for i in (1..slots.len()).rev() {
                        let j = rng.below(i as u64 + 1) as usize;
                        order.swap(slots[i], slots[j]);
                    }
                }
                let counter = counters.from + rng.below(counters.len()) as u32;
                acc.add(scenario, &order, counter, 1)?;
            }
        }
    }
    Ok(acc.finish(population, sample.is_none(), over_budget))
}

/// The runs added so far.
struct Accumulator {
    runs: Vec<OrderRun>,
    worst_irqs: BTreeMap<u32, u64>,
    worst_devices: BTreeMap<u32, u64>,
    cpu_above: Vec<u64>,
    worst_above: u64,
    ideal: Option<u32>,
}

impl Accumulator {
    fn new(scenario: &Scenario) -> Accumulator {
        Accumulator {
            runs: Vec::new(),
            worst_irqs: BTreeMap::new(),
            worst_devices: BTreeMap::new(),
            cpu_above: vec![0; scenario.topology().nr_cpu_ids() as usize],
            worst_above: 0,
            ideal: None,
        }
    }

    fn add(&mut self, scenario: &Scenario, order: &[usize], counter: u32, weight: u64) -> Result<(), ExternalError> {
        let s = reordered(scenario, order, counter);
        let outcome: Outcome = crate::scenario::try_run(&s)?;
        let m: Metrics = metrics::compute(&s, &outcome);
        let ideal = m.ideal.irqs_per_cpu_max;
        self.ideal.get_or_insert(ideal);
        *self.worst_irqs.entry(m.irqs_per_cpu_max).or_default() += weight;
        *self.worst_devices.entry(m.devices_per_cpu_max).or_default() += weight;
        if m.irqs_per_cpu_max > ideal {
            self.worst_above += weight;
        }
        for c in m.per_cpu.iter().filter(|c| c.online) {
            if c.counted_irqs(m.basis) > ideal {
                self.cpu_above[c.cpu as usize] += weight;
            }
        }
        self.runs.push(OrderRun {
            order: order.to_vec(),
            counter,
            weight,
            irqs_per_cpu_max: m.irqs_per_cpu_max,
            devices_per_cpu_max: m.devices_per_cpu_max,
        });
        Ok(())
    }

    fn finish(mut self, population: u128, exact: bool, over_budget: bool) -> Distribution {
        let runs: u64 = self.runs.iter().map(|r| r.weight).sum();
        // Best to worst by the worst CPU's IRQs, then its devices; ties keep the run order.
        self.runs.sort_by_key(|r| (r.irqs_per_cpu_max, r.devices_per_cpu_max));
        let half = runs.div_ceil(2);
        let mut seen = 0;
        let median = self
            .runs
            .iter()
            .find(|r| {
                seen += r.weight;
                seen >= half
            })
            .cloned()
            .expect("at least one run");
        Distribution {
            runs,
            population: if exact { u128::from(runs) } else { population },
            exact,
            over_budget,
            worst_irqs_per_cpu: self.worst_irqs,
            worst_devices_per_cpu: self.worst_devices,
            ideal_irqs_per_cpu: self.ideal.unwrap_or(0),
            worst_above_ideal: self.worst_above,
            cpu_above_ideal: self.cpu_above,
            interval: (!exact).then(|| wilson(self.worst_above, runs)),
            best: self.runs[0].clone(),
            median,
            worst: self.runs[self.runs.len() - 1].clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_orders_and_counters() {
        assert_eq!(Orders::parse("all"), Ok(Orders::All));
        assert_eq!(Orders::parse("sample:10"), Ok(Orders::Sample { n: 10, seed: 0 }));
        assert_eq!(Orders::parse("sample:10:7"), Ok(Orders::Sample { n: 10, seed: 7 }));
        for bad in [
            "",
            "any",
            "sample:",
            "sample:0",
            "sample:x",
            "sample:1:y",
            "sample:999999",
        ] {
            assert!(Orders::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(CounterRange::parse("3"), Ok(CounterRange { from: 3, to: 3 }));
        assert_eq!(CounterRange::parse("0..5"), Ok(CounterRange { from: 0, to: 5 }));
        for bad in ["", "a", "5..2", "0..", "0..99999", "-1"] {
            assert!(CounterRange::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn arrangements_count_every_order() {
        // Classes a, a, b, c: 12 distinct arrangements, each standing for 2 orders.
        let class = [0, 0, 1, 2];
        let slots = [0, 1, 2, 3];
        let mut seen = std::collections::BTreeSet::new();
        let mut weight = 0;
        arrangements(&slots, &class, |o, w| {
            seen.insert(o.iter().map(|&i| class[i]).collect::<Vec<_>>());
            weight += w;
        });
        assert_eq!(seen.len(), 12);
        assert_eq!(distinct_arrangements(&slots, &class), 12);
        assert_eq!(weight, 24);
    }

    #[test]
    fn wilson_interval() {
        let (lo, hi) = wilson(50, 100);
        assert!((lo - 0.4038).abs() < 1e-3 && (hi - 0.5962).abs() < 1e-3, "{lo} {hi}");
        assert_eq!(wilson(0, 10).0, 0.0);
    }
}
