//! The sweep: the seed-000 figures through the CLI's text output, the catalogue snapshot that
//! guards every model against silent change, the CSV and JSON forms, and the `/sweep` routes
//! through `app().oneshot`.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use expect_test::expect_file;
use http_body_util::BodyExt;
use irqscope::analysis::sweep::{self, SweepConfig};
use std::process::Command;
use tower::ServiceExt;

use crate::common;
use common::cli::irqscope;

/// The table line of one placement in the block of one machine and mix.
fn line<'a>(text: &'a str, machine: &str, mix: &str, placement: &str) -> &'a str {
    let block = text
        .split("\n\n")
        .find(|b| b.starts_with(&format!("{machine}:")) && b.contains(&format!("mix {mix}")))
        .unwrap_or_else(|| panic!("no block for {machine} / {mix} in:\n{text}"));
    block
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{placement} ")))
        .unwrap_or_else(|| panic!("no {placement} line in:\n{block}"))
}

fn cells(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Seed 000, the reviewer's configuration 1 (L48s v2, 6 NVMe x 32 queues): existing code gives
/// 3 and 6 IRQs per CPU, the v1 patch 3..5 with the nodes still 36/36/30x4, and the newest
/// rotation balances the nodes; the ideal is 4.
#[test]
fn seed000_l48s_v2_through_the_cli() {
    let text = irqscope(&[
        "sweep",
        "--topologies",
        "azure-l48s-v2",
        "--mix",
        "nvme-6x32",
        "--variants",
        "pre-cluster,cluster,rotation,rotation-v1r,offset-by-probed",
        "--counters",
        "0",
    ]);
    // placement case IRQs ideal gap idle hot nodes over
    assert_eq!(
        cells(line(&text, "azure-l48s-v2", "nvme-6x32", "pre-cluster")),
        ["pre-cluster", "any", "3..6", "4", "2", "0", "6/3", "30..36", "+4"]
    );
    assert_eq!(
        cells(line(&text, "azure-l48s-v2", "nvme-6x32", "cluster")),
        ["cluster", "any", "3..6", "4", "2", "0", "6/3", "30..36", "+4"]
    );
    assert_eq!(
        cells(line(&text, "azure-l48s-v2", "nvme-6x32", "rotation-v1r"))[2..],
        ["3..5", "4", "1", "0", "3/3", "30..36", "+4"]
    );
    assert_eq!(
        cells(line(&text, "azure-l48s-v2", "nvme-6x32", "rotation"))[7..],
        ["32..32", "+0"]
    );
    assert_eq!(
        cells(line(&text, "azure-l48s-v2", "nvme-6x32", "offset-by-probed"))[2..5],
        ["4..4", "4", "0"]
    );
    assert!(
        text.contains("beats every kernel variant: 1 of 1: azure-l48s-v2/nvme-6x32"),
        "{text}"
    );
    assert!(text.contains("cost: needs, at each probe"), "{text}");
    for l in text
        .lines()
        .filter(|l| !l.starts_with("  $ ") && !l.starts_with("      "))
    {
        assert!(l.chars().count() <= 72, "{l:?}");
    }
    // The per-node figures behind "36/36/30x4", from the JSON form.
    let json: serde_json::Value = serde_json::from_str(&irqscope(&[
        "sweep",
        "--topologies",
        "azure-l48s-v2",
        "--mix",
        "nvme-6x32",
        "--variants",
        "rotation-v1r",
        "--counters",
        "0",
        "--format",
        "json",
    ]))
    .unwrap();
    let mut nodes: Vec<u64> = json["rows"][0]["per_node_irqs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    nodes.sort_unstable();
    assert_eq!(nodes, [30, 30, 30, 30, 36, 36]);
}

/// Over a counter range the rotation patch has a worst and a best case.
#[test]
fn counter_range_gives_worst_and_best() {
    let text = irqscope(&[
        "sweep",
        "--topologies",
        "synthetic-sparse-ids",
        "--mix",
        "nvme-6x14",
        "--variants",
        "rotation",
        "--counters",
        "0..8",
    ]);
    assert!(
        line(&text, "synthetic-sparse-ids", "nvme-6x14", "rotation").contains("worst"),
        "{text}"
    );
    assert!(text.contains(" best "), "{text}");
}

#[test]
fn csv_and_json_forms() {
    let csv = irqscope(&[
        "sweep",
        "--topologies",
        "azure-l48s-v2,vm-8vcpu-smt2",
        "--mix",
        "nvme-6x32",
        "--mix",
        "disks=2x8:name=d",
        "--variants",
        "cluster,rotation",
        "--counters",
        "0..2",
        "--format",
        "csv",
    ]);
    assert_eq!(csv.lines().count(), 1 + 2 * 2 * 2 * 2);
    assert!(csv.lines().skip(1).all(|l| l.contains(",/s/v1.")), "{csv}");
    let json: serde_json::Value = serde_json::from_str(&irqscope(&[
        "sweep",
        "--topologies",
        "vm-8vcpu-smt2",
        "--mix",
        "nvme-6x14",
        "--variants",
        "all",
        "--counters",
        "0..2",
        "--format",
        "json",
    ]))
    .unwrap();
    // `all`: the six kernel variants and the one proposal.
    assert_eq!(json["rows"].as_array().unwrap().len(), 7 * 2);
    assert_eq!(json["aggregates"].as_array().unwrap().len(), 7);
    assert!(json["proposals"][0]["cost"]
        .as_str()
        .unwrap()
        .contains("group_cpus_evenly knows only"));
    assert!(json["rows"][0]["permalink"].as_str().unwrap().starts_with("/s/v1."));
}

#[test]
fn bad_input_exits_2() {
    for args in [
        &["sweep", "--topologies", "nope"][..],
        &["sweep", "--variants", "cluster,nope"],
        &["sweep", "--counters", "5..2"],
        &["sweep", "--mix", "6x"],
        &["sweep", "--topologies", "vm-2vcpu-smt2", "--mix", "2:node=7"],
        &["sweep", "--orders", "some"],
        &["sweep", "--orders", "sample:0"],
        &["sweep", "--counter", "5..2"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_irqscope"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// The regression guard: the whole catalogue x the named mixes x every variant and proposal x
/// counters 0..8. A change that moves any figure of any model shows up here in review. Bless
/// with `UPDATE_EXPECT=1 cargo test --release --test sweep`.
#[test]
fn catalogue_snapshot() {
    let config = SweepConfig::catalogue_default();
    let text = irqscope::render::sweep::text(&sweep::run(&config).unwrap());
    expect_file!["snapshots/sweep.txt"].assert_eq(&text);
}

async fn get(uri: &str) -> (StatusCode, String) {
    let app = irqscope::web::app(irqscope::web::AppState::default());
    let resp = app
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

#[tokio::test]
async fn sweep_routes() {
    let q = "?topologies=azure-l48s-v2,vm-8vcpu-smt2&mixes=nvme-6x32;2x8:name=d&variants=pre-cluster,rotation,offset-by-probed&counters=0..3";
    let (status, html) = get(&format!("/sweep{q}")).await;
    assert_eq!(status, StatusCode::OK, "{html}");
    // Every combination's row (folded per machine) links its scenario; the ranked tables of
    // losses and wins link theirs too.
    let rows = &html[html.find("id=\"sweep-machines\"").unwrap()..];
    assert_eq!(rows.matches("<a class=\"permalink\" href=\"/s/v1.").count(), 2 * 2 * 3);
    assert_eq!(html.matches("<g class=\"panel\"").count(), 2);
    let (status, text) = get(&format!("/sweep/text{q}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        text.starts_with("irqscope sweep: 2 machines x 2 mixes x 3 placements x 3 counters"),
        "{text}"
    );
    let (status, csv) = get(&format!("/sweep/csv{q}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(csv.lines().count(), 1 + 2 * 2 * 3 * 3);
    let (status, json) = get(&format!("/sweep/json{q}")).await;
    assert_eq!(status, StatusCode::OK);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    // A row's permalink opens its scenario, proposal included.
    let link = v["aggregates"][2]["permalink"].as_str().unwrap().to_string();
    let (status, page) = get(&format!("{link}/text")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("--proposal offset-by-probed"), "{page}");
    for bad in [
        "?topologies=nope",
        "?variants=x",
        "?counters=9..1",
        "?mixes=6x",
        "?sort=heap-v0",
    ] {
        let (status, body) = get(&format!("/sweep{bad}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
}

/// With orders asked every row carries P(worst > ideal) from the distribution code itself:
/// each row's is `analysis::orders::distribution` over every order from the row's counter, and
/// a placement's over the counters swept is the distribution over orders × those counters. The
/// text twin prints it under each placement, within 72 columns.
#[test]
fn orders_give_each_row_p_worst_above_ideal() {
    use irqscope::analysis::orders::{distribution, CounterRange, Orders};
    let mix = "d=5:name=a,pre=1 3:name=b,pre=1 2x2:name=c";
    let args = [
        "sweep",
        "--topologies",
        "vm-8vcpu-smt2",
        "--mix",
        mix,
        "--variants",
        "rotation-v1,cluster",
        "--counter",
        "0..3",
        "--orders",
        "all",
    ];
    let json: serde_json::Value =
        serde_json::from_str(&irqscope(&[&args[..], &["--format", "json"]].concat())).unwrap();
    let config = SweepConfig {
        topologies: vec!["vm-8vcpu-smt2".into()],
        mixes: vec![sweep::Mix::parse(mix).unwrap()],
        placements: SweepConfig::parse_placements("rotation-v1,cluster").unwrap(),
        counters: (0..4).collect(),
        orders: Orders::All,
        ..SweepConfig::catalogue_default()
    };
    let s = sweep::run(&config).unwrap();
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2 * 4);
    let mut shares = std::collections::BTreeSet::new();
    for (row, r) in rows.iter().zip(&s.rows) {
        let scenario = s
            .spec(&r.topology, &r.mix, r.placement, r.counter)
            .resolve(irqscope::catalogue::get)
            .unwrap();
        let c = r.counter;
        let d = distribution(&scenario, Orders::All, CounterRange { from: c, to: c }).unwrap();
        let o = &row["orders"];
        assert_eq!(o["runs"], d.runs, "{row}");
        assert_eq!(o["worst_above_ideal_runs"], d.worst_above_ideal, "{row}");
        assert_eq!(o["ideal_irqs_per_cpu"], d.ideal_irqs_per_cpu, "{row}");
        assert_eq!(o["p_worst_above_ideal"].as_f64().unwrap(), d.p_worst_above_ideal());
        assert_eq!(o["exact"], true);
        shares.insert(d.worst_above_ideal);
        // The row's link opens the same distribution.
        assert!(row["permalink"].as_str().unwrap().starts_with("/s/v1."));
    }
    // Rows that differ, so the comparison above can tell one from another.
    assert!(shares.len() > 1, "{shares:?}");
    let text = irqscope(&args);
    for a in json["aggregates"].as_array().unwrap() {
        let scenario = s
            .spec(
                a["topology"].as_str().unwrap(),
                "d",
                sweep::Placement::from_name(a["placement"].as_str().unwrap()).unwrap(),
                0,
            )
            .resolve(irqscope::catalogue::get)
            .unwrap();
        let d = distribution(&scenario, Orders::All, CounterRange { from: 0, to: 3 }).unwrap();
        assert_eq!(a["orders"]["runs"], d.runs, "{a}");
        assert_eq!(a["orders"]["worst_above_ideal_runs"], d.worst_above_ideal, "{a}");
        let want = format!(
            "P(worst > ideal {}): {:.1}% of {} boots",
            d.ideal_irqs_per_cpu,
            100.0 * d.p_worst_above_ideal(),
            d.runs
        );
        assert!(text.contains(&want), "{want} not in:\n{text}");
    }
    for l in text.lines().filter(|l| !l.starts_with("  $ ")) {
        assert!(l.chars().count() <= 72, "{l:?}");
    }
    // CSV: the same figures at the end of each line.
    let csv = irqscope(&[&args[..], &["--format", "csv"]].concat());
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let at = head.iter().position(|h| *h == "p_worst_above_ideal").unwrap();
    for (line, row) in csv.lines().skip(1).zip(rows) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), head.len(), "{line}");
        let p: f64 = cells[at].parse().unwrap();
        assert!((p - row["orders"]["p_worst_above_ideal"].as_f64().unwrap()).abs() < 1e-4);
    }
}

/// `orders=all` over the request's budget is sampled, and the page, the text and the JSON
/// say so: 26 machines × 6 different devices (720 orders) × 2 placements × 4 counters would
/// take 93,730 runs.
#[tokio::test]
async fn orders_over_the_budget_are_sampled_and_said() {
    let q =
        "?topologies=all&mixes=1x2%201x3%201x4%201x5%201x6%201x7&variants=cluster,rotation&counters=0..4&orders=all";
    let (status, html) = get(&format!("/sweep{q}")).await;
    assert_eq!(status, StatusCode::OK, "{html}");
    let note = html
        .split("id=\"sweep-sampled\">")
        .nth(1)
        .expect("the page says it sampled");
    assert!(
        note.starts_with("Sampled: every probe order on every row would take 93,730 runs"),
        "{note}"
    );
    assert!(html.contains("P(worst &gt; ideal)</button>"), "the column");
    assert!(html.contains("95%: "), "each cell's interval");
    let (status, text) = get(&format!("/sweep/text{q}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(text.contains("--orders all"), "{text}");
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("Sampled: every order would take 93,730 runs"), "{text}");
    assert!(flat.contains("% (95% "), "{text}");
    let (_, json) = get(&format!("/sweep/json{q}")).await;
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["orders_sampled_for_budget"], 93_730);
    let o = &v["rows"][0]["orders"];
    assert_eq!(
        (o["exact"].as_bool(), o["runs"].as_u64()),
        (
            Some(false),
            Some(
                v["orders"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("sample:")
                    .parse()
                    .unwrap()
            )
        )
    );
    assert!(o["p_worst_above_ideal_95"].is_array(), "{o}");
    // Within the budget every order runs and nothing is said.
    let small = "?topologies=vm-8vcpu-smt2&mixes=1x2%201x3%201x4&variants=cluster&counters=0..2&orders=all";
    let (_, html) = get(&format!("/sweep{small}")).await;
    assert!(
        !html.contains("sweep-sampled") && html.contains("P(worst &gt; ideal)"),
        "{html}"
    );
    let (status, body) = get("/sweep?orders=sample:x").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}
