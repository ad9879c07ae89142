//! The GICv3 ITS effective-CPU model (`arm64-its`, drivers/irqchip/irq-gic-v3-its.c) against
//! what real arm64 kernels did, and the controller each IRQ of a capture names choosing the
//! model in `lab check`, `/live` and `/fleet` alike.
//!
//! The real kernels: Debian's 6.12.117 cloud-arm64 booted in QEMU `virt` by the lab
//! (`tests/data/lab/arm64-*.seq.capture.json`, copies of ../shared/lab/arm64/: the d16-its boot
//! is GICv3 + ITS with 16 vCPUs and 2 NVMe × 6 queues, v2m8 is GICv2m with 8 vCPUs and NVMe of
//! 3, 3 and 2 queues; controllers bound one at a time).

use crate::common::cli::irqscope;
use crate::common::fs::Scratch;
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use irqscope::analysis::live_vs_model::{self, DiffReason, ModelOptions};
use irqscope::kernel::vector_matrix::EffectiveModel;
use irqscope::lab::check::{check, read_capture, CheckOptions};
use irqscope::live::collect::Collector;
use irqscope::live::protocol::Snapshot;
use irqscope::scenario::kernel::ModelNames;
use irqscope::topology::Topology;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tower::ServiceExt;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn capture(name: &str) -> String {
    std::fs::read_to_string(data(&format!("lab/{name}"))).unwrap()
}

fn simulate_json(args: &[&str]) -> Value {
    let mut a = vec!["simulate"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--format", "json"]);
    serde_json::from_str(&irqscope(&a)).unwrap()
}

/// Each device's effective CPUs, vector by vector.
fn effective_cpus(v: &Value) -> Vec<Vec<u64>> {
    v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            d["vectors"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x["effective_cpu"].as_u64().unwrap())
                .collect()
        })
        .collect()
}

/// How many CPUs hold 1, 2, … managed vectors.
fn managed_stacking(v: &Value) -> BTreeMap<usize, usize> {
    let mut per_cpu: BTreeMap<u64, usize> = BTreeMap::new();
    for d in v["devices"].as_array().unwrap() {
        for x in d["vectors"].as_array().unwrap() {
            if x["managed"].as_bool().unwrap() {
                *per_cpu.entry(x["effective_cpu"].as_u64().unwrap()).or_default() += 1;
            }
        }
    }
    let mut hist = BTreeMap::new();
    for n in per_cpu.values() {
        *hist.entry(*n).or_default() += 1;
    }
    hist
}

/// The figure from the two-stage rule that predicted the real boots: on a Graviton3
/// (64 CPUs, one node) four NVMe of 16 queues put their 64 managed vectors on 51 CPUs, 38 with
/// one and 13 with two, where the first CPU of each mask stacks them 4 deep on 16. With no
/// model named the preset's controller (gic-its) picks arm64-its.
#[test]
fn graviton_spreads_four_controllers_over_51_cpus() {
    let its = simulate_json(&["graviton3-64c", "4x16:name=nvme,pre=1"]);
    assert_eq!(its["scenario"]["effective"], "arm64-its");
    assert_eq!(managed_stacking(&its), BTreeMap::from([(1, 38), (2, 13)]));
    let first = simulate_json(&["graviton3-64c", "4x16:name=nvme,pre=1", "--effective", "first-cpu"]);
    assert_eq!(managed_stacking(&first), BTreeMap::from([(4, 16)]));
}

/// Kelley's D16plds shape on an ITS kernel, from a file that says `irqchip = "gic-its"` (not a
/// preset name): the CPUs the d16-its boot (Debian 6.12, pre-cluster) reported, admin vector
/// first: nvme0 0 | 0,3,6,9,12,14 and nvme1 1 | 1,3,6,10,13,15.
#[test]
fn d16_on_an_its_kernel_gives_the_d16_its_boot() {
    let toml = irqscope(&["topology", "export", "toml", "azure-d16plds-v6"]);
    let dir = Scratch::new("its");
    let file = dir.join("d16-its.toml");
    assert!(toml.contains("irqchip = \"gic-spi\""), "{toml}");
    std::fs::write(&file, toml.replace("irqchip = \"gic-spi\"", "irqchip = \"gic-its\"")).unwrap();
    let v = simulate_json(&[
        file.to_str().unwrap(),
        "2x6:name=nvme,pre=1",
        "--variant",
        "pre-cluster",
    ]);
    assert_eq!(
        v["scenario"]["effective"], "arm64-its",
        "the file's controller picks the model"
    );
    assert_eq!(
        effective_cpus(&v),
        [vec![0, 0, 3, 6, 9, 12, 14], vec![1, 1, 3, 6, 10, 13, 15]]
    );
    // The same file on its Hyper-V controller (the real D16plds) fires on the first CPUs.
    let spi = simulate_json(&["azure-d16plds-v6", "2x6:name=nvme,pre=1", "--variant", "pre-cluster"]);
    assert_eq!(spi["scenario"]["effective"], "first-cpu");
    assert_eq!(
        effective_cpus(&spi),
        [vec![0, 0, 3, 6, 9, 12, 14], vec![0, 0, 3, 6, 9, 12, 14]]
    );
}

/// `lab check` picks the model from the chip names (ITS-PCI-MSIX-… → arm64-its,
/// GICv2m-PCI-MSIX-… → first-cpu) and reproduces both boots; the other models do not, and an
/// arm64 release whose chips say nothing still runs the ITS, not the x86 matrix.
#[test]
fn lab_check_picks_the_controller_from_the_chip_names() {
    for (file, model) in [
        ("arm64-d16-its.seq.capture.json", "arm64-its (chip: gic-its)"),
        ("arm64-v2m8.seq.capture.json", "first-cpu (chip: gic-v2m)"),
    ] {
        let r = check(&capture(file), &CheckOptions::default()).unwrap();
        assert_eq!(r.differ, 0, "{file}:\n{}", r.text);
        assert!(r.text.contains(&format!("effective {model}\n")), "{file}:\n{}", r.text);
        assert!(r.matched >= 22, "{file}:\n{}", r.text);
    }
    // The lab's cmp tables: first-cpu gets 9 of 14 effective CPUs of the ITS boot, and 5
    // vectors differ; the x86 matrix more.
    let d16 = capture("arm64-d16-its.seq.capture.json");
    let named = |e: &str| CheckOptions {
        models: ModelNames {
            effective: Some(e.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let first = check(&d16, &named("first-cpu")).unwrap();
    assert_eq!(first.differ, 5, "{}", first.text);
    assert!(
        !first.text.contains("note: every mask matches"),
        "no order excuses first-cpu:\n{}",
        first.text
    );
    assert!(check(&d16, &named("x86-matrix")).unwrap().differ > 5);
    let v2m = capture("arm64-v2m8.seq.capture.json");
    assert!(check(&v2m, &named("arm64-its")).unwrap().differ > 0);

    // Chips that name no controller: the release's architecture decides.
    let mut snap = read_capture(&d16).unwrap();
    for irq in &mut snap.irqs {
        irq.chip = "MSI".into();
    }
    let (opts, _) = live_vs_model::options_for(&snap, None);
    let c = compare(&snap, &opts);
    assert_eq!(c.effective_summary(), "arm64-its (arm64 kernel, chip not named)");
    assert_eq!(c.mismatches(), 0);
    let (opts, _) = live_vs_model::options_for(&snap, Some("6.1.0-57-amd64"));
    assert_eq!(
        compare(&snap, &opts).effective_summary(),
        "x86-matrix (x86_64 kernel, chip not named)"
    );
    // lab check's default for an arm64 release (issue 24, item 4): not x86-matrix.
    let silent = serde_json::json!({"version": 3, "snapshots": [snap]}).to_string();
    for kernel in ["6.12.117+deb12-arm64", "6.12.117+deb12-cloud-arm64", "7.2.13-arm64"] {
        let r = check(
            &silent,
            &CheckOptions {
                kernel: Some(kernel.into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(
            r.text.contains("effective arm64-its (arm64 kernel, chip not named)\n"),
            "{kernel}:\n{}",
            r.text
        );
    }
}

fn compare(s: &Snapshot, opts: &ModelOptions) -> live_vs_model::Comparison {
    let topo = Arc::new(Topology::new(&s.topology.to_spec(&s.host)).unwrap());
    live_vs_model::compare_with(s, &topo, opts).unwrap()
}

/// Non-managed vectors whose mask matches and whose CPU does not are explained by activation
/// order (their CPU is the controller's least-loaded one when they were activated), as managed
/// ones are by probe order; neither excuse applies under first-cpu, where the mask alone
/// decides the CPU.
#[test]
fn cpu_only_differences_get_an_order_reason_where_order_decides() {
    // The ITS boot with both controllers' admin vectors swapped (the boot phase does that)
    // and one managed vector moved inside its mask.
    let mut snap = read_capture(&capture("arm64-d16-its.seq.capture.json")).unwrap();
    let set = |snap: &mut Snapshot, name: &str, cpu: &str| {
        snap.irqs.iter_mut().find(|i| i.name == name).unwrap().effective = Some(cpu.into());
    };
    set(&mut snap, "nvme0q0", "1");
    set(&mut snap, "nvme1q0", "0");
    set(&mut snap, "nvme1q2", "4");
    let (opts, _) = live_vs_model::options_for(&snap, None);
    let c = compare(&snap, &opts);
    let reason = |c: &live_vs_model::Comparison, name: &str| {
        c.vectors
            .iter()
            .find(|v| format!("{}q{}", v.device, v.index) == name)
            .map(|v| (v.cpu_matches, v.reason))
            .unwrap()
    };
    assert_eq!(reason(&c, "nvme0q0"), (false, Some(DiffReason::ActivationOrder)));
    assert_eq!(reason(&c, "nvme1q0"), (false, Some(DiffReason::ActivationOrder)));
    assert_eq!(reason(&c, "nvme1q2"), (false, Some(DiffReason::ProbeOrder)));
    assert_eq!(reason(&c, "nvme1q3"), (true, None));
    assert_eq!((c.mismatches(), c.unexplained()), (3, 0));
    let r = check(
        &serde_json::json!({"version": 3, "snapshots": [snap]}).to_string(),
        &CheckOptions::default(),
    )
    .unwrap();
    assert!(
        r.text.contains("(IRQ 18): model 0, kernel 1 (activation order)"),
        "{}",
        r.text
    );
    assert!(
        r.text.contains("note: 2 non-managed vectors with the model's mask"),
        "{}",
        r.text
    );

    // Under first-cpu the mask decides: the same differences have no excuse.
    let fc = compare(
        &snap,
        &ModelOptions {
            effective: EffectiveModel::FirstCpu.name().into(),
            ..opts.clone()
        },
    );
    assert!(fc.vectors.iter().all(|v| v.reason.is_none()));
    assert!(fc.unexplained() > 3);
    // A CPU outside the mask is no question of order either.
    set(&mut snap, "nvme1q4", "2");
    let c = compare(&snap, &opts);
    assert_eq!(reason(&c, "nvme1q4"), (false, None));
}

async fn call(app: &axum::Router, req: Request<Body>) -> (StatusCode, String) {
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

async fn page(app: &axum::Router, uri: &str) -> (StatusCode, String) {
    call(app, Request::get(uri).body(Body::empty()).unwrap()).await
}

/// The number in `<strong>N</strong> differ` on a host page, and in "N of M vectors differ" on
/// its fleet row.
fn live_count(page: &str) -> usize {
    let at = page.find("</strong> differ").unwrap_or_else(|| panic!("{page}"));
    page[..at].rsplit("<strong>").next().unwrap().parse().unwrap()
}

fn fleet_count(page: &str, host: &str) -> usize {
    let row = page
        .split(&format!(">{host}</a>"))
        .nth(1)
        .unwrap_or_else(|| panic!("{page}"));
    let at = row.find(" vectors differ").unwrap();
    let cell = &row[..at];
    let cell = &cell[cell.rfind("<td>").unwrap() + 4..];
    cell.split(" of ").next().unwrap().parse().unwrap()
}

/// `/live/HOST`, `/fleet` and `lab check` run the same models (release and chip names) and
/// count the same vectors, on an arm64 host (ITS chips), an x86 host and a Hyper-V host
/// (whose chip name alone tells no architecture): the arm64 host matches the ITS model and
/// neither page blames its effective CPUs on probing.
#[tokio::test]
async fn live_fleet_and_lab_check_agree_on_each_host() {
    const TOKEN: &str = "its-test-token-0123456789abcdef";
    let (live, _) =
        irqscope::web::live::LiveState::new(irqscope::live::auth::Tokens::parse(TOKEN).unwrap(), None).unwrap();
    let app = irqscope::web::app(irqscope::web::AppState {
        live,
        ..Default::default()
    });
    let hosts = [
        ("arm64-vm", "arm", 0),
        ("x86-nvme-vm", "x86", 0),
        ("azure-mana-vm", "hv", 2),
    ];
    for (fixture, host, _) in hosts {
        let snap = Collector::new(&data(&format!("live/{fixture}")), host)
            .read(1_000)
            .unwrap();
        let req = Request::post(format!("/api/live/{host}/snapshots"))
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(serde_json::to_vec(&snap).unwrap()))
            .unwrap();
        assert_eq!(call(&app, req).await.0, StatusCode::OK);
    }
    let (code, fleet) = page(&app, "/fleet").await;
    assert_eq!(code, StatusCode::OK, "{fleet}");
    for (fixture, host, min_differ) in hosts {
        let (code, host_page) = page(&app, &format!("/live/{host}")).await;
        assert_eq!(code, StatusCode::OK, "{host_page}");
        let n = live_count(&host_page);
        assert_eq!(fleet_count(&fleet, host), n, "{host}: /fleet and /live");
        assert!(n >= min_differ, "{host}: {n}");
        let snap = Collector::new(&data(&format!("live/{fixture}")), host)
            .read(1_000)
            .unwrap();
        let text = serde_json::json!({"version": 3, "snapshots": [snap]}).to_string();
        let r = check(&text, &CheckOptions::default()).unwrap();
        assert_eq!(r.differ == 0, n == 0, "{host}: lab check\n{}", r.text);
        if host == "arm" {
            assert_eq!(n, 0, "{host_page}");
            assert!(host_page.contains("arm64-its (chip: gic-its)"), "{host_page}");
            assert!(!host_page.contains("id=\"model-moved\""), "{host_page}");
            assert!(r.text.contains("effective arm64-its"), "{}", r.text);
        }
    }
    // A model named in the query is the model for every host, on both pages: under the x86
    // matrix (whose choice depends on what came before) the arm64 host's CPUs differ, as an
    // order the snapshot does not record could make them; under first-cpu they match.
    for (effective, moved) in [("x86-matrix", true), ("first-cpu", false)] {
        let (_, fleet) = page(&app, &format!("/fleet?effective={effective}")).await;
        let (_, host_page) = page(&app, &format!("/live/arm?effective={effective}")).await;
        assert_eq!(fleet_count(&fleet, "arm"), live_count(&host_page), "{effective}");
        assert_eq!(
            host_page.contains("id=\"model-moved\""),
            moved,
            "{effective}: {host_page}"
        );
        assert!(host_page.contains(&format!("{effective} (named)")), "{host_page}");
    }
}

/// The scenario page of an ITS preset runs `arm64-its` with none named and says why; its
/// permalink names the model; an old link naming `first-cpu` on the same preset keeps it and
/// its numbers (16 CPUs with 4 devices each); `sweep` takes the model by name.
#[tokio::test]
async fn pages_and_links_carry_the_its_model() {
    use crate::common::http::get;
    use irqscope::scenario::permalink;
    use irqscope::scenario::spec::{parse_device_token, ScenarioSpec, TopologyRef};
    let page = get("/?preset=graviton3-64c&devices=4x16:name%3Dnvme,pre%3D1").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body
            .contains("effective CPU: arm64-its (arm64 preset, gic-its: the GICv3 ITS driver"),
        "{}",
        page.body
    );
    let link = page.body.split("href=\"/s/").nth(1).unwrap().split('"').next().unwrap();
    let spec: ScenarioSpec = permalink::decode(link).unwrap();
    assert_eq!(spec.effective, "arm64-its");
    let old = ScenarioSpec {
        effective: "first-cpu".into(),
        ..ScenarioSpec::new(
            TopologyRef::Preset("graviton3-64c".into()),
            vec![parse_device_token("4x16:name=nvme,pre=1").unwrap()],
        )
    };
    let text = get(&format!("/s/{}/text", permalink::encode(&old).unwrap())).await;
    assert_eq!(text.status, 200, "{}", text.body);
    assert!(text.body.contains("--effective first-cpu"), "{}", text.body);
    assert!(text.body.contains("16 CPUs (0,4,8,12,"), "{}", text.body);
    let json = get(&format!("/s/{link}/json")).await;
    let v: Value = serde_json::from_str(&json.body).unwrap();
    assert_eq!(managed_stacking(&v), BTreeMap::from([(1, 38), (2, 13)]));

    // The sweep's pre-cluster row: the same 51 CPUs used, 13 idle.
    let sweep = irqscope(&[
        "sweep",
        "--topologies",
        "graviton3-64c",
        "--mix",
        "4x16:pre=1",
        "--variants",
        "pre-cluster",
        "--counters",
        "0",
        "--effective",
        "arm64-its",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_str(&sweep).unwrap();
    let row = &v["aggregates"][0];
    assert_eq!(
        (row["placement"].as_str(), row["worst"]["cpus_idle"].as_u64()),
        (Some("pre-cluster"), Some(13))
    );
    assert_eq!(row["worst"]["irqs_per_cpu_max"], 2);
}
