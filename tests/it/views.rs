//! Every page's view model built without HTTP (`render::view`), one test per page, each
//! checked against a figure its seed thread or the kernel's own map states: the numbers a
//! page shows come from the view, so a handler that only fills a template cannot change them.

use irqscope::live::auth::Tokens;
use irqscope::live::collect;
use irqscope::live::hub::Hub;
use irqscope::render::view::blkmq::{BlkMqQuery, BlkMqShown, BlkMqView};
use irqscope::render::view::compare::{CompareQuery, CompareRun, CompareView};
use irqscope::render::view::fleet::{FleetQuery, FleetView};
use irqscope::render::view::live::{HostView, LiveQuery};
use irqscope::render::view::mana::{parse_driver, ManaQuery, ManaShown, ManaView};
use irqscope::render::view::scenario::{IndexQuery, Run, ScenarioView, ViewQuery};
use irqscope::render::view::sched::{parse_variant, SchedQuery, SchedShown, SchedView};
use irqscope::render::view::seeds::SeedsView;
use irqscope::render::view::sweep::{SweepQuery, SweepView};
use irqscope::render::view::{MachineQuery, ViewError};
use irqscope::scenario::kernel::ModelNames;
use std::path::Path;
use std::sync::Arc;

const ORIGIN: &str = "http://irqscope.test";

/// Seed 000 before the cluster patch: 28 CPUs (34-47,82-95) serve all 6 disks.
#[test]
fn scenario_view_leads_with_seed_000() {
    let q = IndexQuery {
        models: ModelNames {
            variant: Some("pre-cluster".into()),
            ..ModelNames::default()
        },
        ..IndexQuery::default()
    };
    let run = Run::new(q.spec().unwrap(), &Default::default()).unwrap();
    let v = ScenarioView::new(&run, &ViewQuery::default().parse().unwrap(), ORIGIN, false);
    assert!(
        v.r.devices_line.contains("28 CPUs (34-47,82-95) serve all 6"),
        "{}",
        v.r.devices_line
    );
    assert!(v.r.text.ends_with(&format!("{ORIGIN}/s/{}\n", run.permalink)));
    assert!(v.r.heatmap_svg.starts_with("<svg"));
    let bad = IndexQuery {
        preset: Some("no-such".into()),
        ..IndexQuery::default()
    };
    assert!(
        matches!(Run::new(bad.spec().unwrap(), &Default::default()), Err(ViewError::BadInput(m)) if m.contains("no-such"))
    );
}

/// Seed 002: the cluster patch permutes the P-core queues (queue 0..7 -> CPU 1,4,0,5,6,7,3,2).
#[test]
fn compare_view_lists_seed_002_permutation() {
    let q = CompareQuery {
        preset: Some("intel-core-ultra-7-265k".into()),
        devices: Some("20:name=nvme0,pre=1".into()),
        a: Some("pre-cluster".into()),
        b: Some("cluster".into()),
        ..CompareQuery::default()
    };
    let run = CompareRun::new(q.spec().unwrap(), &Default::default()).unwrap();
    let v = CompareView::new(&run, &q.view().unwrap(), ORIGIN).unwrap();
    let moved: Vec<(String, String)> = v
        .vector_rows
        .iter()
        .map(|c| (c.queue.clone(), c.b_cpu.clone()))
        .collect();
    let want: Vec<(String, String)> = [(0, 1), (1, 4), (2, 0), (3, 5), (4, 6), (5, 7), (6, 3), (7, 2)]
        .iter()
        .map(|(q, c)| (q.to_string(), c.to_string()))
        .collect();
    assert_eq!(moved, want);
}

/// Seed 001: with other interrupts on vCPUs 1-3, the unpatched driver stacks two queue IRQs
/// on one vCPU (imbalance 2); the patched one gives each vCPU one (imbalance 0).
#[test]
fn mana_view_shows_seed_001_imbalance() {
    let q = ManaQuery {
        machine: MachineQuery::preset("azure-4vcpu-smt2"),
        load: Some("0,1,1,1".into()),
        ..ManaQuery::default()
    };
    let shown = ManaShown::new(q.spec().unwrap()).unwrap();
    let v = ManaView::new(&shown, parse_driver(None).unwrap(), ORIGIN);
    let imbalance: Vec<(&str, u32)> = v.sides.iter().map(|s| (s.version, s.imbalance)).collect();
    assert_eq!(imbalance, [("unpatched", 2), ("patched", 0)]);
    assert_eq!(shown.json()["permalink"], v.permalink.as_str());
}

/// Seed 003: four nodes at diameter 3, the pair on node 1: upstream's periodic balance splits
/// the pair, p12 keeps it.
#[test]
fn sched_view_shows_seed_003_split() {
    let q = SchedQuery {
        machine: MachineQuery::preset("arm64-4node-diameter3"),
        pair_node: Some("1".into()),
        ..SchedQuery::default()
    };
    let shown = SchedShown::new(q.spec().unwrap()).unwrap();
    let v = SchedView::new(&shown, parse_variant(None).unwrap(), ORIGIN);
    let split = |name: &str| v.summary.iter().find(|s| s.variant == name).unwrap().split;
    assert!(split("upstream") && !split("p12"));
}

/// Seed 004: v4.10's mapper leaves 28 of 64 queues without a CPU on 2 x 18 x 2; v4.13 maps all.
#[test]
fn blkmq_view_shows_seed_004_unmapped_queues() {
    let shown = BlkMqShown::new(BlkMqQuery::default().spec(), &Default::default()).unwrap();
    let v = BlkMqView::new(&shown);
    let unmapped = |name: &str| v.mappers.iter().find(|m| m.name == name).unwrap().unmapped.len();
    assert_eq!((unmapped("legacy-v4.10"), unmapped("legacy-v4.13")), (28, 0));
    assert_eq!(shown.json()["mappers"].as_array().unwrap().len(), 5);
    let bad = BlkMqQuery {
        queues: Some(0),
        ..BlkMqQuery::default()
    };
    assert!(matches!(
        BlkMqShown::new(bad.spec(), &Default::default()),
        Err(ViewError::BadInput(_))
    ));
}

/// A two-machine sweep: every aggregate becomes a table row linking to its scenario.
#[test]
fn sweep_view_from_a_query() {
    let q = SweepQuery {
        topologies: Some("azure-l48s-v2,azure-l96as-v4".into()),
        mixes: Some("seed=6x62:pre=1,name=nvme".into()),
        variants: Some("pre-cluster,rotation".into()),
        counters: Some("0..2".into()),
        ..SweepQuery::default()
    };
    let sweep = irqscope::analysis::sweep::run(&q.config(&Default::default()).unwrap()).unwrap();
    let v = SweepView::new(&sweep, String::new(), Some("pre-cluster")).unwrap();
    assert_eq!(v.machines.len(), 2);
    assert!(v.machines.iter().all(|m| m.rows.len() == 2));
    assert!(v
        .machines
        .iter()
        .flat_map(|m| &m.rows)
        .all(|r| r.link.starts_with("/s/v1.")));
    // Seed 000 (six disks of 62 queues on the L96as): rotation brings the busiest CPU from 6
    // IRQs to the ideal 4, so it wins there against pre-cluster.
    let win = v
        .wins
        .iter()
        .find(|c| c.topology == "azure-l96as-v4")
        .expect("a win on the L96as");
    assert_eq!((win.placement, win.metric), ("rotation", "IRQs on the busiest CPU"));
    assert_eq!((win.before, win.after), (6, 4));
    assert!(
        SweepView::new(&sweep, String::new(), Some("cluster")).is_err(),
        "not swept"
    );
}

/// Every seed figure links to a page the views build.
#[test]
fn seeds_view_links_decode() {
    let v = SeedsView::new().unwrap();
    assert!(v.figures.len() >= 12, "{}", v.figures.len());
    for f in v.figures.iter().filter(|f| f.link.starts_with("/s/")) {
        let spec = irqscope::scenario::permalink::decode(&f.link[3..]).unwrap();
        Run::new(spec, &Default::default()).unwrap();
    }
}

/// The threads' measured figures (fio IOPS, %soft, Gbps, MB/s) are listed as not modelled:
/// in the text twin under their own heading, seed by seed, and with each figure in the JSON
/// twin (the page prints the same list).
#[test]
fn seeds_list_what_is_not_modelled() {
    let v = SeedsView::new().unwrap();
    let text = v.text_report("http://x");
    let (_, listed) = text
        .split_once("\nMeasured in the threads, not modelled\n")
        .expect("the not-modelled heading");
    let json = v.json();
    for (seed, what) in [
        ("000", "fio"),
        ("001", "%soft"),
        ("001", "Gbps"),
        ("002", "fio"),
        ("003", "MB/s"),
        ("004", "fio"),
    ] {
        let para = listed.split(&format!("  seed {seed}: ")).nth(1).unwrap_or("");
        let para = &para[..para.find("\n  seed ").unwrap_or(para.len())];
        assert!(para.replace('\n', " ").contains(what), "seed {seed}'s text: {para:?}");
        let fig = json.as_array().unwrap().iter().find(|f| f["seed"] == seed).unwrap();
        assert!(fig["not_modelled"][0].as_str().unwrap_or("").contains(what), "{fig}");
    }
}

fn fixture_snapshot(host: &str) -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/live/x86-nvme-vm");
    let proc = collect::read_proc(&root).unwrap();
    let topo = collect::topology_of(&collect::read_topology(&root).unwrap(), host).unwrap();
    serde_json::to_vec(&collect::build_snapshot(&proc, &topo, host, 1).unwrap()).unwrap()
}

/// A host pushed to the hub (no server): its live view and its fleet row agree with the model
/// (the fixture was written from the model: no vector differs).
#[test]
fn live_and_fleet_views_from_a_hub() {
    let (hub, _) = Hub::new(
        Tokens::parse("views-test-token-0001").unwrap(),
        None,
        Arc::new(|_| String::new()),
    )
    .unwrap();
    hub.ingest("vm1", Some(b"views-test-token-0001"), None, &fixture_snapshot("vm1"))
        .unwrap();
    let hosts = hub.hosts();
    let choice = LiveQuery::default().choice().unwrap();
    let v = HostView::new(&hosts[0], &choice, true);
    assert_eq!((v.host.as_str(), v.model.mismatches), ("vm1", 0));
    assert!(!v.model.rows.is_empty());
    // Its text twin says the same, within 72 columns.
    let text = v.text_report();
    assert!(
        text.contains(&format!("{} modelled vectors, 0 differ", v.model.rows.len())),
        "{text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 72), "{text}");
    // It leads with the verdict, as the page does.
    let verdict = format!("verdict:  0 of {} modelled vectors differ", v.model.rows.len());
    assert!(text.lines().nth(1).is_some_and(|l| l.starts_with(&verdict)), "{text}");
    let fleet = FleetView::new(&hosts, FleetQuery::default().choice().unwrap(), None);
    assert_eq!(fleet.rows.len(), 1);
    assert!(!fleet.rows[0].differs, "{}", fleet.rows[0].verdict);
}
