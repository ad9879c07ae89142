//! Probe order as a distribution: the orders the model allows and the counter values earlier
//! callers may leave, each run as an ordinary fixed-order scenario ([`crate::scenario::try_run`]), and
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
use crate::scenario::{Device, ProbeWalk, Scenario, SpreadMemo};
use crate::topology::rng::SplitMix64;
use std::collections::BTreeMap;

/// Most scenario runs one distribution enumerates; beyond it `all` is sampled.
pub(crate) const RUNS_BUDGET: u64 = 50_000;
/// Most orders a sample may draw (`sample:N`).
pub(crate) const SAMPLE_MAX: u32 = 50_000;
/// Orders drawn when `all` exceeds the budget.
pub(crate) const SAMPLE_FALLBACK: u32 = 2_000;
/// Widest counter range (`--counter A..B`): B - A.
pub(crate) const COUNTER_SPAN_MAX: u32 = 4_096;

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
    pub(crate) fn name(self) -> String {
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
    pub(crate) fn check(self) -> Result<(), String> {
        if self.from > self.to {
            return Err(format!("{} is above {}", self.from, self.to));
        }
        if self.to - self.from > COUNTER_SPAN_MAX {
            return Err(format!("a range spans at most {COUNTER_SPAN_MAX}"));
        }
        Ok(())
    }

    /// How many starts the range holds.
    pub(crate) fn len(self) -> u64 {
        u64::from(self.to - self.from) + 1
    }
}

/// One run the distribution holds: the probe order (indexes into the scenario's device
/// list), the counter start, how many runs it stands for, and its worst CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderRun {
    pub(crate) order: Vec<usize>,
    pub(crate) counter: u32,
    pub(crate) weight: u64,
    pub irqs_per_cpu_max: u32,
    pub(crate) devices_per_cpu_max: u32,
}

/// What the runs add up to. Every count is in runs (an enumerated arrangement counts once
/// per order giving it).
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    pub runs: u64,
    /// Orders × counter starts the model allows (equal to `runs` when exact).
    pub(crate) population: u128,
    /// Every allowed order enumerated (`false`: sampled).
    pub exact: bool,
    /// `all` asked for more than [`RUNS_BUDGET`] runs and was sampled instead.
    pub(crate) over_budget: bool,
    /// The worst CPU's load (`metrics.irqs_per_cpu_max`) → runs.
    pub worst_irqs_per_cpu: BTreeMap<u32, u64>,
    /// The most devices on one CPU (`metrics.devices_per_cpu_max`) → runs.
    pub(crate) worst_devices_per_cpu: BTreeMap<u32, u64>,
    /// The ideal worst-CPU load (`metrics.ideal.irqs_per_cpu_max`; the same for every order).
    pub ideal_irqs_per_cpu: u32,
    /// Runs whose worst CPU is above the ideal.
    pub worst_above_ideal: u64,
    /// Per possible CPU (index = CPU): runs in which that online CPU serves more IRQs than the
    /// ideal worst-CPU load.
    pub cpu_above_ideal: Vec<u64>,
    /// How many online CPUs serve at least one counted IRQ ([`Metrics::cpus_with_irqs`])
    /// → runs.
    pub(crate) cpus_with_irqs: BTreeMap<u32, u64>,
    /// Sampled: the 95% Wilson interval on P(worst > ideal).
    pub(crate) interval: Option<(f64, f64)>,
    /// NUMA imbalance of a run: the most IRQs a node serves above its fair share (by online
    /// CPUs), in thousandths of an IRQ. Summed over the runs (weighted), and the worst run's.
    pub(crate) numa_excess_milli_sum: u128,
    pub(crate) numa_excess_milli_worst: u64,
    pub(crate) best: OrderRun,
    pub(crate) median: OrderRun,
    pub worst: OrderRun,
}

impl Distribution {
    /// The share of runs in which the worst CPU is above the ideal.
    pub fn p_worst_above_ideal(&self) -> f64 {
        self.worst_above_ideal as f64 / self.runs.max(1) as f64
    }

    /// The expected NUMA imbalance over the runs, in IRQs above a node's fair share.
    pub(crate) fn numa_excess_expected(&self) -> f64 {
        self.numa_excess_milli_sum as f64 / 1000.0 / self.runs.max(1) as f64
    }

    /// The worst run's NUMA imbalance, in IRQs above a node's fair share.
    pub(crate) fn numa_excess_worst(&self) -> f64 {
        self.numa_excess_milli_worst as f64 / 1000.0
    }
}

/// The scenario probed in `order` (indexes into its device list) from counter `counter`: an
/// ordinary fixed-order scenario.
pub(crate) fn reordered(scenario: &Scenario, order: &[usize], counter: u32) -> Scenario {
    scenario.reordered(order, counter)
}

/// Whether a device may be probed anywhere in the order (a MANA device keeps its place).
pub(crate) fn movable(d: &Device) -> bool {
    !d.driver.is_mana()
}

fn factorial(n: usize) -> u128 {
    (1..=n as u128).fold(1u128, |a, b| a.saturating_mul(b))
}

/// Every distinct arrangement of the movable devices with the number of orders giving it.
/// `slots` are the movable positions; `class` the class of each device.
fn arrangements(slots: &[usize], class: &[usize], mut visit: impl FnMut(&[usize], u64)) {
    let mut tree = Tree::new(slots, class);
    let _ = tree.grow::<(), ()>(0, (), &mut |_, _| Ok(()), &mut |order, weight, ()| {
        visit(order, weight);
        Ok(())
    });
}

/// What [`Tree::grow`] does with each whole order: the order, its weight and the state.
type Leaf<'a, S, E> = dyn FnMut(&[usize], u64, S) -> Result<(), E> + 'a;

/// The arrangements of [`arrangements`] as a tree of prefixes: a state carried down it (a
/// boot part-way through its probes) is extended once per prefix and cloned where the
/// orders part.
struct Tree<'a> {
    slots: &'a [usize],
    /// Per class, its movable devices in list order (the k-th placed takes the k-th).
    members: Vec<Vec<usize>>,
    placed: Vec<usize>,
    order: Vec<usize>,
    /// Orders per arrangement: the product of the classes' factorials.
    weight: u64,
}

impl<'a> Tree<'a> {
    fn new(slots: &'a [usize], class: &[usize]) -> Tree<'a> {
        let mut members: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for &i in slots {
            members.entry(class[i]).or_default().push(i);
        }
        Tree {
            slots,
            weight: members.values().map(|m| factorial(m.len()) as u64).product(),
            placed: vec![0; members.len()],
            members: members.into_values().collect(),
            order: (0..class.len()).collect(),
        }
    }

    /// Fill positions `at..` in every distinct way: `push` extends the state by the device
    /// probed at the next position (fixed positions keep their own), `leaf` takes each
    /// whole order with its weight and state. Arrangements come in one order, always.
    fn grow<S: Clone, E>(
        &mut self,
        at: usize,
        state: S,
        push: &mut dyn FnMut(&mut S, usize) -> Result<(), E>,
        leaf: &mut Leaf<'_, S, E>,
    ) -> Result<(), E> {
        if at == self.order.len() {
            return leaf(&self.order, self.weight, state);
        }
        if !self.slots.contains(&at) {
            let mut state = state;
            push(&mut state, at)?;
            return self.grow(at + 1, state, push, leaf);
        }
        let open: Vec<usize> = (0..self.members.len())
            .filter(|&k| self.placed[k] < self.members[k].len())
            .collect();
        let mut state = Some(state);
        for (n, &k) in open.iter().enumerate() {
            let device = self.members[k][self.placed[k]];
            self.order[at] = device;
            // The last choice takes the state itself; the others a copy.
            let mut next = match n + 1 == open.len() {
                true => state.take(),
                false => state.clone(),
            }
            .expect("the state is taken by the last choice only");
            push(&mut next, device)?;
            self.placed[k] += 1;
            let grown = self.grow(at + 1, next, push, leaf);
            self.placed[k] -= 1;
            grown?;
        }
        Ok(())
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

/// The 95% Wilson score interval on a proportion of `k` in `n`.
pub(crate) fn wilson(k: u64, n: u64) -> (f64, f64) {
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

/// How the runs are made: [`distribution`] walks the orders as a tree of prefixes with each
/// device's spreads remembered; [`distribution_run_by_run`] runs every order as its own
/// fixed-order scenario (the reference the first must equal, and its benchmark's baseline).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Method {
    Walk,
    RunByRun,
}

/// Run the scenario under every order and counter start asked (or a sample of them) and add
/// the runs up. `Orders::Fixed` with one counter start is one run. Orders sharing a prefix
/// probe it once, and each device's masks and blk-mq map are computed once per counter value
/// it receives (`scenario::SpreadMemo`).
pub fn distribution(
    scenario: &Scenario,
    orders: Orders,
    counters: CounterRange,
) -> Result<Distribution, ExternalError> {
    collect(scenario, orders, counters, Method::Walk)
}

/// [`distribution`] with every run an ordinary fixed-order scenario of its own
/// ([`Scenario::reordered`], `scenario::try_run`): the same answer, slower.
pub fn distribution_run_by_run(
    scenario: &Scenario,
    orders: Orders,
    counters: CounterRange,
) -> Result<Distribution, ExternalError> {
    collect(scenario, orders, counters, Method::RunByRun)
}

fn collect(
    scenario: &Scenario,
    orders: Orders,
    counters: CounterRange,
    method: Method,
) -> Result<Distribution, ExternalError> {
    let devices = scenario.devices();
    let class = scenario.device_classes();
    let slots: Vec<usize> = match orders {
        Orders::Fixed => Vec::new(),
        _ => (0..devices.len()).filter(|&i| movable(&devices[i])).collect(),
    };
    let population = factorial(slots.len()).saturating_mul(u128::from(counters.len()));
    let enumerated = distinct_arrangements(&slots, &class).saturating_mul(u128::from(counters.len()));
    let over_budget = orders == Orders::All && enumerated > u128::from(RUNS_BUDGET);
    let sample = match orders {
        Orders::Sample { n, seed } => Some((n, seed)),
        Orders::All if over_budget => Some((SAMPLE_FALLBACK, 0)),
        _ => None,
    };
    let mut acc = Accumulator::new(scenario);
    let mut memo = SpreadMemo::new(scenario);
    let mut run = |order: &[usize], counter: u32| -> Result<Metrics, ExternalError> {
        let outcome = match method {
            Method::Walk => {
                let mut walk = ProbeWalk::start(scenario, counter, &mut memo)?;
                for &i in order {
                    walk.push(i, &mut memo)?;
                }
                walk.finish()
            }
            Method::RunByRun => crate::scenario::try_run(&reordered(scenario, order, counter))?,
        };
        Ok(metrics::compute(scenario, &outcome))
    };
    match sample {
        None if method == Method::Walk => {
            let mut tree = Tree::new(&slots, &class);
            for counter in counters.from..=counters.to {
                let start = ProbeWalk::start(scenario, counter, &mut memo)?;
                let mut seq = u64::from(counter - counters.from);
                tree.grow(
                    0,
                    start,
                    &mut |walk, i| walk.push(i, &mut memo),
                    &mut |order, weight, walk| {
                        let m = metrics::compute(scenario, &walk.finish());
                        acc.add(order, counter, weight, seq, &m);
                        seq += counters.len();
                        Ok(())
                    },
                )?;
            }
        }
        None => {
            let mut all = Vec::new();
            arrangements(&slots, &class, |o, w| all.push((o.to_vec(), w)));
            let mut seq = 0;
            for (order, weight) in all {
                for counter in counters.from..=counters.to {
                    acc.add(&order, counter, weight, seq, &run(&order, counter)?);
                    seq += 1;
                }
            }
        }
        Some((n, seed)) => {
            let mut rng = SplitMix64::new(seed);
            for seq in 0..u64::from(n) {
                let order = shuffled(&mut rng, devices.len(), &slots);
                let counter = counters.from + rng.below(counters.len()) as u32;
                acc.add(&order, counter, 1, seq, &run(&order, counter)?);
            }
        }
    }
    Ok(acc.finish(population, sample.is_none(), over_budget))
}

/// The list order with the devices at the movable positions `slots` shuffled (Fisher–Yates).
fn shuffled(rng: &mut SplitMix64, devices: usize, slots: &[usize]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..devices).collect();
    for i in (1..slots.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        order.swap(slots[i], slots[j]);
    }
    order
}

/// The runs added so far.
struct Accumulator {
    /// Each run with its place in the enumeration (arrangement by arrangement, counter
    /// starts within), which breaks ties between equal runs.
    runs: Vec<(u64, OrderRun)>,
    worst_irqs: BTreeMap<u32, u64>,
    worst_devices: BTreeMap<u32, u64>,
    cpu_above: Vec<u64>,
    cpus_with_irqs: BTreeMap<u32, u64>,
    worst_above: u64,
    ideal: Option<u32>,
    numa_sum: u128,
    numa_worst: u64,
}

impl Accumulator {
    fn new(scenario: &Scenario) -> Accumulator {
        Accumulator {
            runs: Vec::new(),
            worst_irqs: BTreeMap::new(),
            worst_devices: BTreeMap::new(),
            cpu_above: vec![0; scenario.topology().nr_cpu_ids() as usize],
            cpus_with_irqs: BTreeMap::new(),
            worst_above: 0,
            ideal: None,
            numa_sum: 0,
            numa_worst: 0,
        }
    }

    fn add(&mut self, order: &[usize], counter: u32, weight: u64, seq: u64, m: &Metrics) {
        let ideal = m.ideal.irqs_per_cpu_max;
        self.ideal.get_or_insert(ideal);
        *self.worst_irqs.entry(m.irqs_per_cpu_max).or_default() += weight;
        *self.worst_devices.entry(m.devices_per_cpu_max).or_default() += weight;
        *self.cpus_with_irqs.entry(m.cpus_with_irqs()).or_default() += weight;
        if m.irqs_per_cpu_max > ideal {
            self.worst_above += weight;
        }
        for c in m.per_cpu.iter().filter(|c| c.online) {
            if c.counted_irqs(m.basis) > ideal {
                self.cpu_above[c.cpu as usize] += weight;
            }
        }
        let excess = m
            .per_node
            .iter()
            .map(|n| (u64::from(n.irqs) * 1000).saturating_sub(n.fair_share_milli))
            .max()
            .unwrap_or(0);
        self.numa_sum += u128::from(excess) * u128::from(weight);
        self.numa_worst = self.numa_worst.max(excess);
        self.runs.push((
            seq,
            OrderRun {
                order: order.to_vec(),
                counter,
                weight,
                irqs_per_cpu_max: m.irqs_per_cpu_max,
                devices_per_cpu_max: m.devices_per_cpu_max,
            },
        ));
    }

    fn finish(self, population: u128, exact: bool, over_budget: bool) -> Distribution {
        let mut runs = self.runs;
        let total: u64 = runs.iter().map(|(_, r)| r.weight).sum();
        // Best to worst by the worst CPU's IRQs, then its devices; ties keep the enumeration's
        // order.
        runs.sort_by_key(|(seq, r)| (r.irqs_per_cpu_max, r.devices_per_cpu_max, *seq));
        let runs: Vec<OrderRun> = runs.into_iter().map(|(_, r)| r).collect();
        let half = total.div_ceil(2);
        let mut seen = 0;
        let median = runs
            .iter()
            .find(|r| {
                seen += r.weight;
                seen >= half
            })
            .cloned()
            .expect("at least one run");
        Distribution {
            runs: total,
            population: if exact { u128::from(total) } else { population },
            exact,
            over_budget,
            worst_irqs_per_cpu: self.worst_irqs,
            worst_devices_per_cpu: self.worst_devices,
            ideal_irqs_per_cpu: self.ideal.unwrap_or(0),
            worst_above_ideal: self.worst_above,
            cpu_above_ideal: self.cpu_above,
            cpus_with_irqs: self.cpus_with_irqs,
            interval: (!exact).then(|| wilson(self.worst_above, total)),
            numa_excess_milli_sum: self.numa_sum,
            numa_excess_milli_worst: self.numa_worst,
            best: runs[0].clone(),
            median,
            worst: runs[runs.len() - 1].clone(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::kernel::vector_matrix::EffectiveModel;
    use crate::kernel::{SortGen, Variant};
    use crate::scenario::spec::{expand_devices, parse_device_token};
    use crate::scenario::ProbeOrder;

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

    /// A catalogue machine with devices as tokens (`2x6:name=nvme,pre=1`), a named variant and
    /// an effective-CPU model.
    pub(crate) fn scenario(preset: &str, tokens: &[&str], variant: &str, effective: EffectiveModel) -> Scenario {
        let specs: Vec<_> = tokens.iter().map(|t| parse_device_token(t).unwrap()).collect();
        Scenario::new(
            crate::catalogue::get(preset).unwrap(),
            expand_devices(&specs).unwrap(),
            Variant::from_name(variant).unwrap(),
            SortGen::HeapV6_11,
            effective,
            0,
        )
        .unwrap()
    }

    /// The walk over prefixes with remembered spreads gives, field for field, what running
    /// every order as its own scenario gives: sequential and parallel probes, admin tag sets
    /// under rotation-v1, a MANA device in its place, blk-mq maps from the CPUs, a device
    /// whose mask is empty, an ITS, a proposal (nothing remembered), and samples.
    #[test]
    fn the_walk_equals_running_each_order() {
        let x86 = EffectiveModel::X86Matrix;
        let nvme = ["5:name=a,pre=1,driver=nvme", "3:name=b,pre=1,driver=nvme", "2x2:name=c"];
        let cases = [
            scenario("vm-8vcpu-smt2", &nvme, "rotation-v1", x86),
            scenario("vm-8vcpu-smt2", &nvme, "rotation-v1", x86).with_probe(Some(ProbeOrder::Parallel)),
            scenario("vm-8vcpu-smt2", &nvme, "cluster", x86),
            scenario(
                "azure-4vcpu-smt2",
                &[
                    "3:name=a",
                    "8:name=nic,driver=mana",
                    "2:name=b,blkmq=cpumap",
                    "6:name=c,pre=1",
                ],
                "rotation",
                x86,
            ),
            scenario(
                "azure-d16plds-v6",
                &["6:name=a,pre=1", "4:name=b", "2:name=c"],
                "rotation-v1",
                EffectiveModel::FirstCpu,
            ),
            scenario(
                "vm-8vcpu-smt2",
                &["5:name=a", "3:name=b", "2:name=c"],
                "pre-cluster",
                x86,
            )
            .with_proposal(Some(crate::policy::Proposal::OffsetByProbed)),
        ];
        let counters = CounterRange { from: 0, to: 3 };
        for s in &cases {
            for orders in [Orders::All, Orders::Sample { n: 40, seed: 3 }, Orders::Fixed] {
                let walk = distribution(s, orders, counters).unwrap();
                let each = distribution_run_by_run(s, orders, counters).unwrap();
                assert_eq!(walk, each, "{orders:?} {:?}", s.devices());
            }
        }
        // Cases where the order matters, so the comparison above can tell.
        let d = distribution(&cases[0], Orders::All, counters).unwrap();
        assert!(d.worst_irqs_per_cpu.len() > 1, "{d:?}");
    }

    /// Seed 000's configuration 2 (D16plds v6: 16 CPUs in one cluster, each interrupt on
    /// the first CPU of its mask; two NVMe of six queues). Six groups of 16 CPUs are four of
    /// three and two of two, first CPUs 0, 3, 6, 9, 12 and 14, the same for both disks: six
    /// CPUs serve the twelve queue IRQs in every run (the admin vectors are not counted).
    /// The rotation gives the second disk the next offset, groups of 3, 3, 3, 2, 2, 3 first
    /// at 0, 3, 6, 9, 11 and 13: eight CPUs, as the thread's "4 vCPUs still have 2 IRQs,
    /// while 4 vCPUs have 1 IRQ".
    #[test]
    fn cpus_with_irqs_counts_the_cpus_serving_any() {
        let disks = ["2x6:name=nvme,pre=1"];
        let counters = CounterRange { from: 0, to: 0 };
        for (variant, cpus) in [("cluster", 6), ("rotation-v1", 8)] {
            let s = scenario("azure-d16plds-v6", &disks, variant, EffectiveModel::FirstCpu);
            let d = distribution(&s, Orders::All, counters).unwrap();
            assert_eq!(d.cpus_with_irqs, BTreeMap::from([(cpus, d.runs)]), "{variant}");
        }
    }

    #[test]
    fn wilson_interval() {
        let (lo, hi) = wilson(50, 100);
        assert!((lo - 0.4038).abs() < 1e-3 && (hi - 0.5962).abs() < 1e-3, "{lo} {hi}");
        assert_eq!(wilson(0, 10).0, 0.0);
    }
}
