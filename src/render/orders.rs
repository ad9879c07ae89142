//! A scenario's probe-order distribution on its twins: the `distribution` object of the JSON
//! twin and the text twin's histogram block (`analysis::orders` computes it).

use crate::analysis::orders::{self, CounterRange, Distribution, OrderRun, Orders};
use crate::render::columns::wrap;
use crate::render::heatmap::percent_heatmap;
use crate::render::svg::{push_escaped, svg_open};
use crate::render::sweep::group_digits;
use crate::scenario::spec::{spec_of, ScenarioSpec};
use crate::scenario::{permalink, Scenario};
use crate::topology::CpuSet;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The distribution a scenario asked for, with the permalinks of its best, median and worst
/// orders (each an ordinary fixed-order scenario; empty when too large for a link).
#[derive(Debug, Clone)]
pub(crate) struct OrdersShown {
    pub(crate) orders: Orders,
    pub(crate) counters: CounterRange,
    pub(crate) dist: Distribution,
    /// Best, median, worst: the device names in probe order and the permalink.
    pub(crate) picks: [(Vec<String>, String); 3],
}

/// The orders and counter range `spec` asks for (`None`: one fixed-order run, as every
/// scenario before distributions), or why they are refused.
pub(crate) fn asked(spec: &ScenarioSpec) -> Result<Option<(Orders, CounterRange)>, String> {
    if spec.orders.is_none() && spec.counter_to.is_none() {
        return Ok(None);
    }
    let orders = match spec.orders.as_deref() {
        Some(text) => Orders::parse(text)?,
        None => Orders::Fixed,
    };
    let counters = CounterRange {
        from: spec.spread_counter,
        to: spec.counter_to.unwrap_or(spec.spread_counter),
    };
    counters
        .check()
        .map_err(|why| format!("counter {}..{}: {why}", counters.from, counters.to))?;
    Ok(Some((orders, counters)))
}

/// Run the distribution `spec` asks for on its validated `scenario`.
pub(crate) fn compute(spec: &ScenarioSpec, scenario: &Scenario) -> Result<Option<OrdersShown>, String> {
    let Some((orders, counters)) = asked(spec)? else {
        return Ok(None);
    };
    let dist = orders::distribution(scenario, orders, counters).map_err(|e| e.to_string())?;
    let pick = |r: &OrderRun| {
        let s = orders::reordered(scenario, &r.order, r.counter);
        let names = s.devices().iter().map(|d| d.name.clone()).collect();
        let link = permalink::encode(&spec_of(&s, spec.topology.clone())).unwrap_or_default();
        (names, link)
    };
    let picks = [pick(&dist.best), pick(&dist.median), pick(&dist.worst)];
    Ok(Some(OrdersShown {
        orders,
        counters,
        dist,
        picks,
    }))
}

/// One line a value of a per-run histogram (`value` in `unit`s, singular and plural): the
/// value, the runs it was seen in and their share of `runs`.
fn share_lines(out: &mut String, histogram: &BTreeMap<u32, u64>, unit: (&str, &str), runs: u64) {
    for (value, seen) in histogram {
        out.push_str(&format!(
            "  {:>9}: {:>13} ({:5.1}%)\n",
            count(*value, unit.0, unit.1),
            count(*seen, "run", "runs"),
            percent(*seen, runs)
        ));
    }
}

/// "1 IRQ", "2 IRQs": a count with its noun in the number it takes.
pub(crate) fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

fn percent(k: u64, n: u64) -> f64 {
    100.0 * k as f64 / n.max(1) as f64
}

/// Per CPU share above the ideal: runs → the CPUs with that many, most first (none: omitted).
fn cpus_by_runs(d: &Distribution) -> Vec<(u64, CpuSet)> {
    let mut groups: BTreeMap<u64, CpuSet> = BTreeMap::new();
    let n = d.cpu_above_ideal.len() as u32;
    for (cpu, &k) in d.cpu_above_ideal.iter().enumerate() {
        if k > 0 {
            groups.entry(k).or_insert_with(|| CpuSet::new(n)).insert(cpu as u32);
        }
    }
    groups.into_iter().rev().collect()
}

const PICK_NAMES: [&str; 3] = ["best", "median", "worst"];

impl OrdersShown {
    /// `--orders ... --counter A..B` as the command line says it.
    pub(crate) fn flags(&self) -> String {
        let counter = if self.counters.from == self.counters.to {
            self.counters.from.to_string()
        } else {
            format!("{}..{}", self.counters.from, self.counters.to)
        };
        format!("--orders {} --counter {counter}", self.orders.name())
    }

    /// The JSON twin's `distribution` object.
    pub(crate) fn json(&self) -> Value {
        let d = &self.dist;
        let hist = |m: &BTreeMap<u32, u64>| -> Value { m.iter().map(|(k, v)| (k.to_string(), json!(v))).collect() };
        let population = match u64::try_from(d.population) {
            Ok(n) => json!(n),
            Err(_) => json!(d.population.to_string()),
        };
        let mut v = json!({
            "orders": self.orders.name(),
            "counter_from": self.counters.from,
            "counter_to": self.counters.to,
            "runs": d.runs,
            "exact": d.exact,
            "population": population,
            "worst_irqs_per_cpu": hist(&d.worst_irqs_per_cpu),
            "worst_devices_per_cpu": hist(&d.worst_devices_per_cpu),
            "ideal_irqs_per_cpu": d.ideal_irqs_per_cpu,
            "worst_above_ideal_runs": d.worst_above_ideal,
            "p_worst_above_ideal": d.p_worst_above_ideal(),
            "cpu_above_ideal_runs": d.cpu_above_ideal,
            "numa_excess_expected": d.numa_excess_expected(),
            "numa_excess_worst": d.numa_excess_worst(),
        });
        if d.over_budget {
            v["sampled_over_budget"] = json!(orders::RUNS_BUDGET);
        }
        if let Some((lo, hi)) = d.interval {
            v["p_worst_above_ideal_95"] = json!([lo, hi]);
        }
        for (i, r) in [&d.best, &d.median, &d.worst].into_iter().enumerate() {
            let (names, link) = &self.picks[i];
            let mut o = json!({
                "order": names,
                "spread_counter": r.counter,
                "runs": r.weight,
                "irqs_per_cpu_max": r.irqs_per_cpu_max,
                "devices_per_cpu_max": r.devices_per_cpu_max,
            });
            if !link.is_empty() {
                o["permalink"] = json!(link);
            }
            v[PICK_NAMES[i]] = o;
        }
        v
    }

    /// The text twin's block (72 columns but for bare link lines); links under `origin`
    /// (`None`: `/s/…`).
    pub(crate) fn text_block(&self, origin: Option<&str>, out: &mut String) {
        let d = &self.dist;
        let how = if d.exact {
            "every order".to_string()
        } else if d.over_budget {
            format!("sampled: over {} runs", group_digits(orders::RUNS_BUDGET))
        } else {
            "sampled".to_string()
        };
        out.push_str(&format!("\nprobe orders: {} ({how})\n", self.flags()));
        self.load_lines(out);
        out.push_str(&wrap(&numa_line(d), "", "  "));
        for (k, cpus) in cpus_by_runs(d) {
            let line = format!("above the ideal in {:.1}% of runs: CPUs {cpus}", percent(k, d.runs));
            out.push_str(&wrap(&line, "  ", "    "));
        }
        self.pick_lines(origin, out);
    }

    /// The worst CPU's load and the most devices on one CPU, run by run, and the share of runs
    /// above the ideal.
    fn load_lines(&self, out: &mut String) {
        let d = &self.dist;
        out.push_str(&format!(
            "worst CPU load over {} (ideal {}):\n",
            count(d.runs, "run", "runs"),
            count(d.ideal_irqs_per_cpu, "IRQ", "IRQs")
        ));
        share_lines(out, &d.worst_irqs_per_cpu, ("IRQ", "IRQs"), d.runs);
        out.push_str("most devices on one CPU:\n");
        share_lines(out, &d.worst_devices_per_cpu, ("dev", "devs"), d.runs);
        let mut p = format!(
            "worst CPU above the ideal in {:.1}% of runs",
            percent(d.worst_above_ideal, d.runs)
        );
        if let Some((lo, hi)) = d.interval {
            p.push_str(&format!(" (95% interval {:.1}% to {:.1}%)", lo * 100.0, hi * 100.0));
        }
        out.push_str(&wrap(&p, "", "  "));
    }

    /// The best, median and worst orders with their links.
    fn pick_lines(&self, origin: Option<&str>, out: &mut String) {
        let d = &self.dist;
        for (i, r) in [&d.best, &d.median, &d.worst].into_iter().enumerate() {
            let (names, link) = &self.picks[i];
            let head = format!(
                "{} order ({}, {}, counter {}): {}",
                PICK_NAMES[i],
                count(r.irqs_per_cpu_max, "IRQ", "IRQs"),
                count(r.devices_per_cpu_max, "dev", "devs"),
                r.counter,
                names.join(" ")
            );
            out.push_str(&wrap(&head, "", "  "));
            if !link.is_empty() {
                out.push_str(&format!("  {}/s/{link}\n", origin.unwrap_or("")));
            }
        }
    }
}

/// "NUMA imbalance: the busiest node 1.5 IRQs above its fair share on average, 6.0 at
/// worst".
fn numa_line(d: &Distribution) -> String {
    format!(
        "NUMA imbalance: the busiest node {:.1} IRQs above its fair share on average, {:.1} at worst",
        d.numa_excess_expected(),
        d.numa_excess_worst()
    )
}

/// One pick of the page: which (best, median, worst), the order's device names, its counter
/// start, its worst CPU and its permalink.
pub(crate) struct PickRow {
    pub(crate) which: &'static str,
    pub(crate) order: String,
    pub(crate) counter: u32,
    pub(crate) devices_per_cpu_max: u32,
    /// "1 IRQ", "5 IRQs".
    pub(crate) worst: String,
    pub(crate) link: String,
}

/// The distribution on the scenario page: the sentence that leads, the histogram of the
/// worst CPU's load, the per-CPU probability heatmap, the NUMA line and the picks.
pub(crate) struct OrdersPage {
    /// "Over 4,320 boots (every order of the devices × counter starts 0..5) …".
    pub(crate) headline: String,
    /// Said when `all` was over the budget and the runs are a sample.
    pub(crate) sampled_note: Option<String>,
    pub(crate) histogram_svg: String,
    pub(crate) heatmap_svg: String,
    pub(crate) numa_line: String,
    pub(crate) picks: Vec<PickRow>,
}

impl OrdersShown {
    /// "Over 24 boots (every probe order the model allows × counter starts 0..3): the worst
    /// CPU serves more than the ideal 1 IRQ in 33.3% of boots".
    fn headline(&self) -> String {
        let d = &self.dist;
        let how = if d.exact {
            "every probe order the model allows".to_string()
        } else {
            format!("a sample of {}", count(d.runs, "probe order", "probe orders"))
        };
        let starts = if self.counters.from == self.counters.to {
            format!("counter start {}", self.counters.from)
        } else {
            format!("counter starts {}..{}", self.counters.from, self.counters.to)
        };
        let mut headline = format!(
            "Over {} ({how} × {starts}): the worst CPU serves more than the ideal {} in {:.1}% of boots",
            count(d.runs, "boot", "boots"),
            count(d.ideal_irqs_per_cpu, "IRQ", "IRQs"),
            percent(d.worst_above_ideal, d.runs)
        );
        if let Some((lo, hi)) = d.interval {
            headline.push_str(&format!(" (95% interval {:.1}% to {:.1}%)", lo * 100.0, hi * 100.0));
        }
        headline
    }

    /// The page's block; `zoom` the node the page shows alone.
    pub(crate) fn page(&self, scenario: &Scenario, zoom: Option<u32>) -> OrdersPage {
        let d = &self.dist;
        let headline = self.headline();
        let sampled_note = d.over_budget.then(|| {
            format!(
                "Every order would take more than {} runs, so {} orders were drawn at random (seed 0); the shares are estimates.",
                group_digits(orders::RUNS_BUDGET),
                group_digits(d.runs)
            )
        });
        let percent_of: Vec<(u32, u32)> = d
            .cpu_above_ideal
            .iter()
            .enumerate()
            .map(|(cpu, &k)| (cpu as u32, (100 * k).div_ceil(d.runs.max(1)) as u32))
            .collect();
        OrdersPage {
            headline,
            sampled_note,
            histogram_svg: histogram_svg(d),
            heatmap_svg: percent_heatmap(
                scenario.topology(),
                &percent_of,
                "per-CPU share of boots above the ideal",
                zoom,
            ),
            numa_line: numa_line(d),
            picks: [&d.best, &d.median, &d.worst]
                .into_iter()
                .enumerate()
                .map(|(i, r)| PickRow {
                    which: PICK_NAMES[i],
                    order: self.picks[i].0.join(" "),
                    counter: r.counter,
                    devices_per_cpu_max: r.devices_per_cpu_max,
                    worst: count(r.irqs_per_cpu_max, "IRQ", "IRQs"),
                    link: self.picks[i].1.clone(),
                })
                .collect(),
        }
    }
}

/// The worst CPU's load over the runs: one bar per load, its share of runs over it and the
/// load under it; loads at or below the ideal blue, above it orange (the heatmap's colours).
pub(crate) fn histogram_svg(d: &Distribution) -> String {
    const BAR: u32 = 44;
    const GAP: u32 = 12;
    const H: u32 = 120;
    let n = d.worst_irqs_per_cpu.len() as u32;
    let width = (n * (BAR + GAP) + 40).max(320);
    let height = H + 76;
    let mut out = svg_open(
        "histogram",
        "the worst CPU's IRQs: share of boots by load",
        width,
        height,
    );
    let base = H + 20;
    let _ = write!(
        out,
        r##"<line x1="10" y1="{base}" x2="{}" y2="{base}" stroke="#333" stroke-width="1"/>"##,
        width - 10
    );
    for (i, (&load, &runs)) in d.worst_irqs_per_cpu.iter().enumerate() {
        let x = 20 + i as u32 * (BAR + GAP);
        let h = ((runs as f64 / d.runs.max(1) as f64) * f64::from(H)).round().max(1.0) as u32;
        let fill = if load > d.ideal_irqs_per_cpu {
            "#e6550d"
        } else {
            "#3182bd"
        };
        let _ = write!(
            out,
            r##"<rect class="bar" data-load="{load}" data-runs="{runs}" x="{x}" y="{}" width="{BAR}" height="{h}" fill="{fill}"><title>"##,
            base - h
        );
        push_escaped(
            &mut out,
            &format!(
                "worst CPU {}: {runs} of {}",
                count(load, "IRQ", "IRQs"),
                count(d.runs, "boot", "boots")
            ),
        );
        let _ = write!(
            out,
            r#"</title></rect><text class="tick" x="{}" y="{}" text-anchor="middle">{:.1}%</text><text class="lbl" x="{}" y="{}" text-anchor="middle">{load}</text>"#,
            x + BAR / 2,
            base - h - 4,
            percent(runs, d.runs),
            x + BAR / 2,
            base + 14
        );
    }
    let _ = write!(
        out,
        r#"<text class="lbl" x="10" y="{}">the worst CPU's IRQs (ideal {}); orange: above the ideal</text></svg>"#,
        base + 34,
        d.ideal_irqs_per_cpu
    );
    out
}

/// The two sides of a comparison, each a distribution over the same orders and counter
/// starts: per side the worst CPU's load and P(worst > ideal), the change in it, and per CPU
/// the change in the share of boots above the ideal.
pub(crate) struct OrdersCompared<'a> {
    pub(crate) a: &'a OrdersShown,
    pub(crate) b: &'a OrdersShown,
}

/// The comparison's block on its page.
pub(crate) struct OrdersComparePage {
    /// Per side: "A: cluster", its headline, its histogram.
    pub(crate) sides: Vec<(String, String, String)>,
    /// "P(worst > ideal) from 33.3% under A to 12.5% under B: -20.8 points".
    pub(crate) change_line: String,
    pub(crate) heatmap_svg: String,
}

fn share(k: u64, n: u64) -> f64 {
    k as f64 / n.max(1) as f64
}

impl OrdersCompared<'_> {
    /// Per CPU, B − A share of boots above the ideal in percentage points, rounded.
    pub(crate) fn cpu_change_points(&self) -> Vec<(u32, i64)> {
        let (a, b) = (&self.a.dist, &self.b.dist);
        a.cpu_above_ideal
            .iter()
            .zip(&b.cpu_above_ideal)
            .enumerate()
            .map(|(cpu, (&ka, &kb))| {
                let d = 100.0 * (share(kb, b.runs) - share(ka, a.runs));
                (cpu as u32, d.round() as i64)
            })
            .collect()
    }

    fn change_line(&self) -> String {
        let (a, b) = (&self.a.dist, &self.b.dist);
        let (pa, pb) = (a.p_worst_above_ideal(), b.p_worst_above_ideal());
        format!(
            "P(worst > ideal) from {:.1}% under A to {:.1}% under B: {:+.1} points",
            100.0 * pa,
            100.0 * pb,
            100.0 * (pb - pa)
        )
    }

    /// The JSON twin's `distribution_change`: P(worst > ideal) on each side and B − A, and
    /// per CPU the change in the share of boots above the ideal (B − A, a fraction).
    pub(crate) fn json(&self) -> Value {
        let (a, b) = (&self.a.dist, &self.b.dist);
        let per_cpu: Vec<f64> = a
            .cpu_above_ideal
            .iter()
            .zip(&b.cpu_above_ideal)
            .map(|(&ka, &kb)| share(kb, b.runs) - share(ka, a.runs))
            .collect();
        json!({
            "p_worst_above_ideal_a": a.p_worst_above_ideal(),
            "p_worst_above_ideal_b": b.p_worst_above_ideal(),
            "p_worst_above_ideal_change": b.p_worst_above_ideal() - a.p_worst_above_ideal(),
            "cpu_above_ideal_change": per_cpu,
        })
    }

    /// The text twin's block (72 columns): each side's loads, the change, and the CPUs by
    /// their change in points.
    pub(crate) fn text_block(&self, out: &mut String) {
        out.push_str(&format!("\nprobe orders: {}\n", self.a.flags()));
        for (side, o) in [("A", self.a), ("B", self.b)] {
            let mut block = String::new();
            o.load_lines(&mut block);
            out.push_str(&format!("{side}: {block}"));
        }
        out.push_str(&wrap(&self.change_line(), "", "  "));
        out.push_str("share of boots above the ideal, B - A, per CPU (points):\n");
        let n = self.a.dist.cpu_above_ideal.len() as u32;
        let mut by: BTreeMap<i64, CpuSet> = BTreeMap::new();
        for (cpu, d) in self.cpu_change_points() {
            by.entry(d).or_insert_with(|| CpuSet::new(n)).insert(cpu);
        }
        for (d, cpus) in by.into_iter().rev() {
            out.push_str(&wrap(&format!("CPUs {cpus}"), &format!("  {d:>+5}  "), "         "));
        }
    }

    /// The page's block; `zoom` the node the page shows alone.
    pub(crate) fn page(&self, labels: &[String; 2], scenario: &Scenario, zoom: Option<u32>) -> OrdersComparePage {
        OrdersComparePage {
            sides: [("A", self.a), ("B", self.b)]
                .into_iter()
                .zip(labels)
                .map(|((side, o), label)| (format!("{side}: {label}"), o.headline(), histogram_svg(&o.dist)))
                .collect(),
            change_line: self.change_line(),
            heatmap_svg: crate::render::heatmap::share_diff_heatmap(
                scenario.topology(),
                &self.cpu_change_points(),
                zoom,
            ),
        }
    }
}
