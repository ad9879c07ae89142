//! Probe order as a distribution (`simulate --orders all --counter A..B`): the distribution
//! equals the aggregate of the ordinary fixed-order scenarios it stands for, enumerated here
//! independently of `analysis::orders`.

use crate::common::cli::{irqscope, irqscope_output};
use serde_json::Value;
use std::collections::BTreeMap;

/// Every permutation of `items` (Heap's algorithm's plain recursive cousin).
pub(crate) fn permutations<T: Clone>(items: &[T]) -> Vec<Vec<T>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let first = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, first.clone());
            out.push(p);
        }
    }
    out
}

fn json(args: &[&str]) -> Value {
    serde_json::from_str(&irqscope(args)).unwrap()
}

/// The histograms the distribution of `devices` should have: each order and counter run as
/// its own fixed-order `simulate`.
fn by_hand(preset: &str, variant: &str, devices: &[&'static str], counters: u32) -> [BTreeMap<String, u64>; 2] {
    let mut irqs = BTreeMap::new();
    let mut devs = BTreeMap::new();
    for order in permutations(devices) {
        for c in 0..=counters {
            let c = c.to_string();
            let mut args = vec!["simulate", preset];
            args.extend(order.iter().copied());
            args.extend(["--variant", variant, "--counter", &c, "--format", "json"]);
            let v = json(&args);
            assert!(v.get("distribution").is_none(), "a fixed run has no distribution");
            let m = &v["metrics"];
            *irqs.entry(m["irqs_per_cpu_max"].to_string()).or_insert(0) += 1;
            *devs.entry(m["devices_per_cpu_max"].to_string()).or_insert(0) += 1;
        }
    }
    [irqs, devs]
}

fn distribution(preset: &str, variant: &str, devices: &[&str], counters: u32) -> Value {
    let range = format!("0..{counters}");
    let mut args = vec!["simulate", preset];
    args.extend(devices.iter().copied());
    args.extend([
        "--variant",
        variant,
        "--orders",
        "all",
        "--counter",
        &range,
        "--format",
        "json",
    ]);
    json(&args)["distribution"].clone()
}

fn histogram(v: &Value) -> BTreeMap<String, u64> {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, n)| (k.clone(), n.as_u64().unwrap()))
        .collect()
}

#[test]
fn distribution_is_the_aggregate_of_its_fixed_orders() {
    // Three devices of different sizes: under rotation-v1 and cluster (which moves with order
    // through the vector matrix alone) the worst CPU differs from order to order.
    let devices = ["3:name=a", "2:name=b", "1:name=c"];
    for variant in ["rotation-v1", "cluster"] {
        let d = distribution("vm-8vcpu-smt2", variant, &devices, 3);
        let [irqs, devs] = by_hand("vm-8vcpu-smt2", variant, &devices, 3);
        assert_eq!(d["runs"], 24, "{variant}: 3! orders × 4 counter starts");
        assert_eq!(d["exact"], true);
        assert_eq!(histogram(&d["worst_irqs_per_cpu"]), irqs, "{variant}");
        assert_eq!(histogram(&d["worst_devices_per_cpu"]), devs, "{variant}");
        assert!(irqs.len() > 1, "{variant}: a case where order matters: {irqs:?}");
    }
}

#[test]
fn identical_devices_count_every_equivalent_order() {
    // b0 and b1 differ only by name: 3! = 6 orders, of which 3 arrangements are distinct;
    // runs counts all 6 per counter start.
    let devices = ["3:name=a", "2x2:name=b"];
    let d = distribution("vm-8vcpu-smt2", "rotation-v1", &devices, 2);
    assert_eq!(d["runs"], 18);
    let [irqs, devs] = by_hand(
        "vm-8vcpu-smt2",
        "rotation-v1",
        &["3:name=a", "2:name=b0", "2:name=b1"],
        2,
    );
    assert_eq!(histogram(&d["worst_irqs_per_cpu"]), irqs);
    assert_eq!(histogram(&d["worst_devices_per_cpu"]), devs);
}

#[test]
fn picks_reproduce_as_fixed_order_links() {
    let d = distribution("vm-8vcpu-smt2", "cluster", &["3:name=a", "2:name=b", "1:name=c"], 0);
    for pick in ["best", "median", "worst"] {
        let order: Vec<String> = d[pick]["order"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| format!("{}:name={}", queues(n.as_str().unwrap()), n.as_str().unwrap()))
            .collect();
        let mut args = vec!["simulate", "vm-8vcpu-smt2", "--variant", "cluster", "--format", "json"];
        args.extend(order.iter().map(String::as_str));
        let v = json(&args);
        assert_eq!(v["metrics"]["irqs_per_cpu_max"], d[pick]["irqs_per_cpu_max"], "{pick}");
        assert!(d[pick]["permalink"].as_str().is_some_and(|l| l.starts_with("v1.")));
    }
    let best = d["best"]["irqs_per_cpu_max"].as_u64().unwrap();
    let worst = d["worst"]["irqs_per_cpu_max"].as_u64().unwrap();
    assert!(best < worst, "cluster on these three devices: {best} vs {worst}");
}

fn queues(name: &str) -> u32 {
    match name {
        "a" => 3,
        "b" => 2,
        _ => 1,
    }
}

/// `simulate`'s text report of devices a, b and c (3, 2 and 1 queues) on vm-8vcpu-smt2 under
/// `cluster`, over `orders` and counter starts 0..3.
fn simulate_abc(orders: &str) -> String {
    irqscope(&[
        "simulate",
        "vm-8vcpu-smt2",
        "3:name=a",
        "2:name=b",
        "1:name=c",
        "--variant",
        "cluster",
        "--orders",
        orders,
        "--counter",
        "0..3",
    ])
}

#[test]
fn text_block_fits_and_samples_say_so() {
    let out = simulate_abc("sample:50:7");
    assert!(
        out.contains("probe orders: --orders sample:50:7 --counter 0..3 (sampled)"),
        "{out}"
    );
    assert!(out.contains("worst CPU load over 50 runs"), "{out}");
    assert!(out.contains("95% interval"), "{out}");
    for line in out.lines().filter(|l| !l.trim_start().starts_with("/s/")) {
        assert!(line.chars().count() <= 72, "{line:?}");
    }
}

/// The report's reproducing command names the orders and counter starts, and running it as
/// printed gives the same report.
#[test]
fn the_printed_command_reproduces_the_distribution() {
    let out = simulate_abc("all");
    let mut command = String::new();
    for line in out.lines().skip_while(|l| !l.trim_start().starts_with("$ irqscope")) {
        let part = line.trim().trim_start_matches("$ ");
        command.push_str(part.trim_end_matches('\\'));
        command.push(' ');
        if !part.ends_with('\\') {
            break;
        }
    }
    assert!(command.contains("--orders all --counter 0..3"), "{command}");
    assert!(!command.contains("--counter 0 "), "{command}");
    let words: Vec<&str> = command.split_whitespace().skip(1).collect();
    assert_eq!(irqscope(&words), out);
}

#[test]
fn bad_orders_and_counters_exit_2() {
    for (flag, value) in [
        ("--orders", "every"),
        ("--orders", "sample:0"),
        ("--orders", "sample:99999999"),
        ("--orders", "sample:5:x"),
        ("--counter", "4..1"),
        ("--counter", "0..999999"),
        ("--counter", "x"),
    ] {
        let (code, out, err) = irqscope_output(&["simulate", "vm-8vcpu-smt2", "3", flag, value]);
        assert_eq!(code, 2, "{flag} {value}: {out}");
        assert!(err.contains(value), "{flag} {value}: {err}");
    }
}

/// No "1 IRQs", "1 runs" or "1 devs": counts of one take the singular in the text twin and on
/// the page, where devices a, b and c (3, 2, 1 queues) on 8 CPUs make an ideal of 1 IRQ and a
/// worst CPU of 1 IRQ in most runs.
#[tokio::test]
async fn counts_of_one_are_singular() {
    let plural_one = |text: &str| {
        ["IRQs", "runs", "devs", "boots", "probe orders"]
            .iter()
            .flat_map(|noun| [format!(" 1 {noun}"), format!("(1 {noun}"), format!(">1 {noun}")])
            .filter(|bad| text.contains(bad.as_str()))
            .collect::<Vec<_>>()
    };
    let text = simulate_abc("all");
    assert!(text.contains("(ideal 1 IRQ):"), "{text}");
    assert!(text.contains("      1 IRQ: "), "{text}");
    assert!(text.contains("     2 IRQs: "), "{text}");
    assert!(text.contains("(1 IRQ, 1 dev, counter"), "{text}");
    assert_eq!(plural_one(&text), Vec::<String>::new(), "{text}");
    let spec = irqscope::scenario::spec::ScenarioSpec {
        orders: Some("all".into()),
        counter_to: Some(3),
        ..abc_spec("cluster")
    };
    let html = scenario_page(&spec).await;
    let block = &html[html.find("id=\"orders\"").expect("the distribution block")..];
    let block = &block[..block.find("</section>").unwrap()];
    assert!(block.contains("the ideal 1 IRQ in "), "{block}");
    assert!(block.contains(">1 IRQ</td>"), "{block}");
    assert!(block.contains("worst CPU 1 IRQ: 16 of 24 boots"), "{block}");
    assert_eq!(plural_one(block), Vec::<String>::new(), "{block}");
}

/// `all` over the enumeration budget (nine different devices: 362,880 orders) is sampled, and
/// the text twin, the JSON twin and the page say so.
#[tokio::test]
async fn all_over_the_budget_is_sampled_and_said() {
    let devices: Vec<String> = (1..=9).map(|q| format!("{q}:name=d{q}")).collect();
    let mut args = vec!["simulate", "vm-8vcpu-smt2"];
    args.extend(devices.iter().map(String::as_str));
    args.extend(["--variant", "cluster", "--orders", "all"]);
    let text = irqscope(&args);
    assert!(
        text.contains("--orders all --counter 0 (sampled: over 50,000 runs)"),
        "{text}"
    );
    assert!(text.contains("worst CPU load over 2000 runs"), "{text}");
    assert!(text.contains("(95% interval "), "{text}");
    let v = json(&[&args[..], &["--format", "json"]].concat());
    let d = &v["distribution"];
    assert_eq!(
        (d["exact"].as_bool(), d["runs"].as_u64()),
        (Some(false), Some(2000)),
        "{d}"
    );
    assert_eq!(d["sampled_over_budget"], 50_000);
    let spec = irqscope::scenario::spec::ScenarioSpec {
        variant: "cluster".into(),
        orders: Some("all".into()),
        ..irqscope::scenario::spec::ScenarioSpec::new(
            irqscope::scenario::spec::TopologyRef::Preset("vm-8vcpu-smt2".into()),
            devices
                .iter()
                .map(|t| irqscope::scenario::spec::parse_device_token(t).unwrap())
                .collect(),
        )
    };
    let html = scenario_page(&spec).await;
    let note = html
        .split("id=\"orders-sampled\">")
        .nth(1)
        .expect("the page says it sampled");
    assert!(
        note.starts_with("Every order would take more than 50,000 runs, so 2,000 orders were drawn at random"),
        "{note}"
    );
    assert!(
        html.contains("a sample of 2000 probe orders") || html.contains("a sample of 2,000 probe orders"),
        "{html}"
    );
}

/// `compare --orders all --counter 0..3`: each side is its own distribution (equal to
/// `analysis::orders::distribution` of that side), and the report and the JSON twin give the
/// change in P(worst > ideal) and, per CPU, in the share of boots above the ideal.
#[test]
fn compare_gives_both_distributions_and_their_change() {
    use irqscope::analysis::orders::{distribution, CounterRange, Orders};
    let args = [
        "compare",
        "vm-8vcpu-smt2",
        "3:name=a",
        "2:name=b",
        "1:name=c",
        "--a",
        "cluster",
        "--b",
        "rotation",
        "--orders",
        "all",
        "--counter",
        "0..3",
    ];
    let side = |variant: &str| {
        let s = abc_spec(variant).resolve(irqscope::catalogue::get).unwrap();
        distribution(&s, Orders::All, CounterRange { from: 0, to: 3 }).unwrap()
    };
    let (a, b) = (side("cluster"), side("rotation"));
    assert_ne!(a.worst_above_ideal, b.worst_above_ideal, "sides that differ");
    let v = json(&[&args[..], &["--format", "json"]].concat());
    assert_eq!(v["a"]["distribution"]["worst_above_ideal_runs"], a.worst_above_ideal);
    assert_eq!(v["b"]["distribution"]["worst_above_ideal_runs"], b.worst_above_ideal);
    let change = &v["distribution_change"];
    let want = b.p_worst_above_ideal() - a.p_worst_above_ideal();
    assert!(
        (change["p_worst_above_ideal_change"].as_f64().unwrap() - want).abs() < 1e-12,
        "{change}"
    );
    let per_cpu: Vec<f64> = change["cpu_above_ideal_change"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(per_cpu.len(), 8);
    for (cpu, d) in per_cpu.iter().enumerate() {
        let want = b.cpu_above_ideal[cpu] as f64 / b.runs as f64 - a.cpu_above_ideal[cpu] as f64 / a.runs as f64;
        assert!((d - want).abs() < 1e-12, "CPU {cpu}: {d} vs {want}");
    }
    let text = irqscope(&args);
    let line = format!(
        "P(worst > ideal) from {:.1}% under A to {:.1}% under B: {:+.1} points",
        100.0 * a.p_worst_above_ideal(),
        100.0 * b.p_worst_above_ideal(),
        100.0 * want
    );
    assert!(text.contains(&line), "{line} not in\n{text}");
    assert!(text.contains("--orders all --counter 0..3"), "{text}");
    for l in text.lines().filter(|l| !l.contains("/c/") && !l.contains("/s/")) {
        assert!(l.chars().count() <= 72, "{l:?}");
    }
    // Without orders: no distribution anywhere.
    let plain = json(&[&args[..7], &["--format", "json"]].concat());
    assert!(plain.get("distribution_change").is_none() && plain["a"].get("distribution").is_none());
}

/// The scenario page of `spec`, through the app; it answers 200.
async fn scenario_page(spec: &irqscope::scenario::spec::ScenarioSpec) -> String {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let link = irqscope::scenario::permalink::encode(spec).unwrap();
    let app = irqscope::web::app(irqscope::web::AppState::default());
    let resp = app
        .oneshot(
            axum::http::Request::get(format!("/s/{link}"))
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    String::from_utf8(resp.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap()
}

/// Devices a, b and c (3, 2 and 1 queues) on vm-8vcpu-smt2 under `variant`, as a spec.
fn abc_spec(variant: &str) -> irqscope::scenario::spec::ScenarioSpec {
    irqscope::scenario::spec::ScenarioSpec {
        variant: variant.into(),
        ..irqscope::scenario::spec::ScenarioSpec::new(
            irqscope::scenario::spec::TopologyRef::Preset("vm-8vcpu-smt2".into()),
            ["3:name=a", "2:name=b", "1:name=c"]
                .iter()
                .map(|t| irqscope::scenario::spec::parse_device_token(t).unwrap())
                .collect(),
        )
    }
}
