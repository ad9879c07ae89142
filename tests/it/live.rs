//! Live mode end to end: fixture trees through the parsers and the model, ingestion refusals
//! through `app().oneshot`, the agent binary pushing to a real loopback server observed through
//! SSE, a server killed and restarted under a running agent (`--live-store`), and the agent
//! reading this machine.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use irqscope::analysis::live_vs_model::{self, Comparison};
use irqscope::live::auth::Tokens;
use irqscope::live::collect;
use irqscope::live::devices;
use irqscope::live::hub::Clock;
use irqscope::live::limits::{AGENT_INTERVAL_MS_MIN, PUSH_EARLY_MS_MAX};
use irqscope::live::parse::{format_interrupts, parse_interrupts};
use irqscope::live::protocol::{Capture, Snapshot, PROTOCOL_VERSION};
use irqscope::web::{self, live::LiveState, AppState};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower::ServiceExt;

use crate::common;
use common::fs::{copy_dir, Scratch};
use common::process::{free_port, KillOnDrop};

const TOKEN: &str = "test-token-0123456789abcdef";
const BOUND: &str = "web1=bound-token-0123456789abcdef";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/live").join(name)
}

fn snapshot_of(name: &str, host: &str, t: u64) -> Snapshot {
    let root = fixture(name);
    let proc = collect::read_proc(&root).unwrap();
    let topo = collect::topology_of(&collect::read_topology(&root).unwrap(), host).unwrap();
    collect::build_snapshot(&proc, &topo, host, t).unwrap()
}

/// The snapshot's topology, validated as the store does on ingest.
fn topology_of(s: &Snapshot) -> std::sync::Arc<irqscope::topology::Topology> {
    std::sync::Arc::new(irqscope::topology::Topology::new(&s.topology.to_spec(&s.host)).unwrap())
}

fn compare(s: &Snapshot, variant: &str, effective: &str) -> Result<Comparison, irqscope::scenario::ScenarioError> {
    live_vs_model::compare(s, &topology_of(s), variant, effective)
}

#[test]
fn fixtures_parse_and_match_the_model() {
    // x86 VM, 4 NVMe devices with managed queues: the fixture was written from the model, so
    // the default comparison (cluster, x86-matrix) agrees on every vector.
    let s = snapshot_of("x86-nvme-vm", "x86", 1);
    assert_eq!(s.cpus.len(), 96);
    let (devs, other) = devices::group_devices(&s);
    assert_eq!(
        devs.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
        ["nvme0", "nvme1", "nvme2", "nvme3"]
    );
    assert!(devs.iter().all(|d| d.pre == 1 && d.vectors.len() == 9 && d.managed));
    assert!(other.len() >= 2, "timer and i8042 are not devices");
    let c = compare(&s, "cluster", "x86-matrix").unwrap();
    assert_eq!(c.vectors.len(), 36);
    assert_eq!(
        c.mismatches(),
        0,
        "{:#?}",
        c.vectors
            .iter()
            .filter(|v| !v.cpu_matches || !v.mask_matches)
            .collect::<Vec<_>>()
    );
    // Another variant predicts other CPUs somewhere.
    assert!(compare(&s, "pre-cluster", "first-cpu").unwrap().mismatches() > 0);

    // arm64 VM: GIC rows, IPI rows, one NVMe.
    let s = snapshot_of("arm64-vm", "arm", 1);
    assert!(s
        .irqs
        .iter()
        .any(|i| i.label == "IPI0" && i.name == "Rescheduling interrupts"));
    assert!(s
        .irqs
        .iter()
        .any(|i| i.chip == "GICv3" && i.hwirq == "27 Level" && i.name == "arch_timer"));
    assert_eq!(compare(&s, "cluster", "first-cpu").unwrap().mismatches(), 0);

    // Offline CPUs: only online CPUs are columns; the topology knows the rest.
    let s = snapshot_of("offline-cpus", "off", 1);
    assert_eq!(s.cpus.len(), 36);
    let topo = irqscope::topology::Topology::new(&s.topology.to_spec("off")).unwrap();
    assert_eq!(topo.possible().weight(), 72);
    assert_eq!(topo.online().weight(), 36);
    assert_eq!(compare(&s, "cluster", "x86-matrix").unwrap().mismatches(), 0);
}

#[test]
fn mana_nic_is_compared_with_the_mana_model() {
    // Azure-like 8 vCPU VM behind Hyper-V vPCI (chip "Hyper-V PCIe MSI", three words): an NVMe
    // disk probed first, then a MANA NIC whose IRQs the MANA driver model placed on the load
    // NVMe left (tests/data/live/make-fixtures.py).
    let s = snapshot_of("azure-mana-vm", "azure8", 1);
    let hwc = s.irqs.iter().find(|i| i.name.starts_with("mana_hwc")).unwrap();
    assert_eq!(
        (hwc.chip.as_str(), hwc.name.as_str()),
        ("Hyper-V PCIe MSI", "mana_hwc@pci:7870:00:00.0")
    );
    let (devs, _) = devices::group_devices(&s);
    assert_eq!(
        devs.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
        ["nvme0", "mana@7870:00:00.0"]
    );
    let mana = &devs[1];
    assert_eq!(
        (mana.driver, mana.pre, mana.vectors.len(), mana.managed),
        (devices::LiveDriver::Mana, 1, 9, false)
    );
    assert_eq!(
        s.irqs[mana.vectors[0]].name, "mana_hwc@pci:7870:00:00.0",
        "the HWC is vector 0"
    );
    assert_eq!(s.irqs[mana.vectors[1]].name, "mana_q0@pci:7870:00:00.0");

    let c = compare(&s, "cluster", "x86-matrix").unwrap();
    assert_eq!(
        c.spec.devices[1].driver.as_deref(),
        Some("mana"),
        "MANA runs the MANA model"
    );
    assert_eq!(c.spec.devices[1].queues, 8);
    let rows: Vec<_> = c.vectors.iter().filter(|v| v.device.starts_with("mana")).collect();
    eprintln!("MANA vector: model mask / actual mask, model CPU / actual effective");
    for v in &rows {
        eprintln!(
            "  {} {:>9} / {:<9} {:>2} / {}",
            v.index,
            v.predicted_mask,
            v.actual_mask,
            v.predicted_cpu.unwrap(),
            v.actual_effective
        );
    }
    assert_eq!(rows.len(), 9);
    // The MANA model's own masks (core sibling pairs), which a generic non-managed device (the
    // default mask 0-7 everywhere) would not predict.
    let shown: Vec<(String, Option<u32>)> = rows
        .iter()
        .map(|v| (v.predicted_mask.clone(), v.predicted_cpu))
        .collect();
    // (The fixture's timer and i8042 hold a vector on CPUs 0 and 1.)
    let want = [
        ("0-1", 0),
        ("0-1", 0),
        ("2-3", 2),
        ("4-5", 5),
        ("6-7", 6),
        ("0-1", 1),
        ("2-3", 3),
        ("4-5", 4),
        ("6-7", 6),
    ];
    assert_eq!(
        shown,
        want.iter().map(|&(m, c)| (m.to_string(), Some(c))).collect::<Vec<_>>()
    );
    assert_eq!(
        c.mismatches(),
        0,
        "{:#?}",
        c.vectors
            .iter()
            .filter(|v| !v.cpu_matches || !v.mask_matches)
            .collect::<Vec<_>>()
    );
    // The permalink scenario reproduces the MANA device.
    assert!(c.spec.resolve(|_| None).unwrap().devices()[1].driver.is_mana());

    // The patched driver chooses differently on 8 vCPUs with 8 queues; first-cpu is refused
    // for MANA (the model needs the x86 matrix) and the NIC is listed as not modelled.
    let patched = live_vs_model::compare_with(
        &s,
        &topology_of(&s),
        &live_vs_model::ModelOptions {
            variant: "cluster".into(),
            effective: "x86-matrix".into(),
            mana_patched: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(patched.spec.devices[1].patched);
    let fc = compare(&s, "cluster", "first-cpu").unwrap();
    assert!(fc.vectors.iter().all(|v| v.device == "nvme0"));
    assert!(
        fc.not_modelled
            .iter()
            .any(|n| n.starts_with("mana@7870:00:00.0 (") && n.contains("x86-matrix")),
        "{:?}",
        fc.not_modelled
    );

    // Drivers before "net: mana: Add names to irq" call every vector mana_intr.
    let mut old = s.clone();
    for irq in old.irqs.iter_mut().filter(|i| i.name.starts_with("mana_")) {
        irq.name = "mana_intr".into();
    }
    let (devs, _) = devices::group_devices(&old);
    assert_eq!(
        (devs[1].name.as_str(), devs[1].driver, devs[1].pre),
        ("mana", devices::LiveDriver::Mana, 1)
    );
    assert_eq!(compare(&old, "cluster", "x86-matrix").unwrap().mismatches(), 0);
}

/// A clock that moves one agent interval per reading: every push is on schedule.
fn paced_clock() -> Clock {
    let t = Arc::new(AtomicU64::new(0));
    Arc::new(move || t.fetch_add(AGENT_INTERVAL_MS_MIN, Ordering::Relaxed))
}

/// A clock the test sets.
fn manual_clock() -> (Clock, Arc<AtomicU64>) {
    let t = Arc::new(AtomicU64::new(0));
    let read = t.clone();
    (Arc::new(move || read.load(Ordering::Relaxed)), t)
}

fn live_app(tokens: &str) -> (axum::Router, LiveState) {
    live_app_with(tokens, paced_clock())
}

fn live_app_with(tokens: &str, clock: Clock) -> (axum::Router, LiveState) {
    let (live, _) = LiveState::with_clock(Tokens::parse(tokens).unwrap(), None, clock).unwrap();
    (
        web::app(AppState {
            live: live.clone(),
            ..Default::default()
        }),
        live,
    )
}

async fn call(app: &axum::Router, req: Request<Body>) -> (StatusCode, String) {
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

fn push_req(host: &str, token: Option<&str>, body: impl Into<Body>) -> Request<Body> {
    let mut r = Request::post(format!("/api/live/{host}/snapshots")).header(header::CONTENT_TYPE, "application/json");
    if let Some(t) = token {
        r = r.header(header::AUTHORIZATION, format!("Bearer {t}"));
    }
    r.body(body.into()).unwrap()
}

async fn seq_of(app: &axum::Router, host: &str) -> Option<u64> {
    let (status, body) = call(
        app,
        Request::get(format!("/api/live/{host}")).body(Body::empty()).unwrap(),
    )
    .await;
    (status == StatusCode::OK).then(|| {
        serde_json::from_str::<serde_json::Value>(&body).unwrap()["seq"]
            .as_u64()
            .unwrap()
    })
}

#[tokio::test]
async fn pushes_are_refused_without_the_right_token_and_leave_history_alone() {
    let s1 = serde_json::to_string(&snapshot_of("x86-nvme-vm", "web1", 1_000)).unwrap();
    let s2 = serde_json::to_string(&snapshot_of("x86-nvme-vm", "web1", 2_000)).unwrap();

    // No tokens configured: ingestion is disabled, never open.
    let (closed, _) = live_app("");
    let (st, body) = call(&closed, push_req("web1", Some(TOKEN), s1.clone())).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("disabled"), "{body}");

    let (clock, now) = manual_clock();
    let (app, _) = live_app_with(&format!("{TOKEN}\n{BOUND}\n"), clock);
    assert_eq!(
        call(&app, push_req("web1", Some(TOKEN), s1.clone())).await.0,
        StatusCode::OK
    );
    assert_eq!(seq_of(&app, "web1").await, Some(1));

    let cases: Vec<(&str, Request<Body>, StatusCode)> = vec![
        ("no token", push_req("web1", None, s2.clone()), StatusCode::UNAUTHORIZED),
        (
            "wrong token",
            push_req("web1", Some("not-the-token-0123456789"), s2.clone()),
            StatusCode::UNAUTHORIZED,
        ),
        (
            "bound to another host",
            push_req(
                "web2",
                Some("bound-token-0123456789abcdef"),
                s2.replace("\"web1\"", "\"web2\""),
            ),
            StatusCode::FORBIDDEN,
        ),
        (
            "body names another host",
            push_req("web1", Some(TOKEN), s2.replace("\"web1\"", "\"web9\"")),
            StatusCode::BAD_REQUEST,
        ),
        (
            "malformed",
            push_req("web1", Some(TOKEN), "{\"version\":1,"),
            StatusCode::BAD_REQUEST,
        ),
        (
            "wrong version",
            push_req(
                "web1",
                Some(TOKEN),
                s2.replacen(&format!("\"version\":{PROTOCOL_VERSION}"), "\"version\":99", 1),
            ),
            StatusCode::BAD_REQUEST,
        ),
        (
            "oversized",
            push_req(
                "web1",
                Some(TOKEN),
                vec![b' '; irqscope::live::limits::SNAPSHOT_BYTES_MAX + 1],
            ),
            StatusCode::PAYLOAD_TOO_LARGE,
        ),
        (
            "too fast",
            push_req(
                "web1",
                Some(TOKEN),
                s2.replace("\"taken_unix_ms\":2000", "\"taken_unix_ms\":1001"),
            ),
            StatusCode::TOO_MANY_REQUESTS,
        ),
        (
            "too fast by the server's clock, whatever the stamp says",
            push_req("web1", Some(TOKEN), s2.clone()),
            StatusCode::TOO_MANY_REQUESTS,
        ),
        (
            "bad host name",
            push_req("web%3Cx%3E", Some(TOKEN), s2.clone()),
            StatusCode::BAD_REQUEST,
        ),
    ];
    for (what, req, want) in cases {
        let (st, body) = call(&app, req).await;
        assert_eq!(st, want, "{what}: {body}");
        assert_eq!(seq_of(&app, "web1").await, Some(1), "{what} changed the history");
    }
    assert_eq!(seq_of(&app, "web2").await, None);
    // The bound token works for its host, one interval later.
    now.store(AGENT_INTERVAL_MS_MIN, Ordering::Relaxed);
    let (st, body) = call(&app, push_req("web1", Some("bound-token-0123456789abcdef"), s2)).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(seq_of(&app, "web1").await, Some(2));
}

#[tokio::test]
async fn push_rate_is_measured_by_the_server_clock() {
    // The server's own clock.
    let (live, _) = LiveState::new(Tokens::parse(TOKEN).unwrap(), None).unwrap();
    let app = web::app(AppState {
        live,
        ..Default::default()
    });
    // Forged stamps a second apart, sent back to back: limited like any other burst.
    let started = Instant::now();
    let (mut accepted, mut refused) = (0u64, 0u64);
    for i in 0..20u64 {
        let body = serde_json::to_string(&snapshot_of("x86-nvme-vm", "forger", 1_000 * (i + 1))).unwrap();
        let (st, text) = call(&app, push_req("forger", Some(TOKEN), body)).await;
        match st {
            StatusCode::OK => accepted += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                assert!(text.contains("server's clock"), "{text}");
                refused += 1
            }
            other => panic!("{other}: {text}"),
        }
    }
    let elapsed = started.elapsed().as_millis() as u64;
    assert!(refused > 0, "20 pushes in {elapsed} ms all accepted");
    assert!(
        accepted <= 1 + (elapsed + PUSH_EARLY_MS_MAX) / AGENT_INTERVAL_MS_MIN,
        "{accepted} accepted in {elapsed} ms"
    );
    // An agent at its minimum interval whose stamps are closer than that (it stamps after
    // reading, and reading takes a varying time): never refused.
    // The wait starts at the answer, so arrivals are at least the interval apart however long
    // the server took (a loaded machine), while the stamps stay 90 ms apart.
    for i in 0..5u64 {
        let body = serde_json::to_string(&snapshot_of("x86-nvme-vm", "agent", 10_000 + 90 * i)).unwrap();
        let (st, text) = call(&app, push_req("agent", Some(TOKEN), body)).await;
        assert_eq!(st, StatusCode::OK, "push {i}: {text}");
        tokio::time::sleep(Duration::from_millis(AGENT_INTERVAL_MS_MIN)).await;
    }
    assert_eq!(seq_of(&app, "agent").await, Some(5));
}

#[tokio::test]
async fn idle_hosts_expire_admins_delete_and_unbound_tokens_have_a_quota() {
    use irqscope::live::hub::HubPolicy;
    use irqscope::live::limits::UNBOUND_TOKEN_HOSTS_MAX;
    const ADMIN: &str = "admin-token-0123456789abcdef";
    let (clock, now) = manual_clock();
    let tokens = Tokens::parse(&format!("{TOKEN}\n{BOUND}\n_admin={ADMIN}\n")).unwrap();
    let policy = HubPolicy { host_idle_ms: 60_000 };
    let (live, _) = LiveState::with(tokens, None, policy, Some(clock)).unwrap();
    let app = web::app(AppState {
        live,
        ..Default::default()
    });
    let push = |host: &str| push_req(host, Some(TOKEN), reading("azure-mana-vm", host, 0));
    // The unbound token creates hosts up to its quota.
    for i in 0..UNBOUND_TOKEN_HOSTS_MAX {
        let (st, body) = call(&app, push(&format!("h{i}"))).await;
        assert_eq!(st, StatusCode::OK, "{body}");
    }
    let (st, body) = call(&app, push("one-more")).await;
    assert_eq!(st, StatusCode::CONFLICT, "{body}");
    assert!(body.contains("HOST=TOKEN"), "{body}");
    // A bound token still creates its host.
    let bound = push_req(
        "web1",
        Some("bound-token-0123456789abcdef"),
        reading("azure-mana-vm", "web1", 0),
    );
    assert_eq!(call(&app, bound).await.0, StatusCode::OK);

    // Delete: admin token only.
    let delete = |host: &str, token: Option<&str>| {
        let mut r = Request::delete(format!("/api/live/{host}"));
        if let Some(t) = token {
            r = r.header(header::AUTHORIZATION, format!("Bearer {t}"));
        }
        r.body(Body::empty()).unwrap()
    };
    let (st, _) = call(&app, delete("h0", None)).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    assert_eq!(call(&app, delete("h0", Some(TOKEN))).await.0, StatusCode::FORBIDDEN);
    assert_eq!(seq_of(&app, "h0").await, Some(1));
    assert_eq!(call(&app, delete("h0", Some(ADMIN))).await.0, StatusCode::NO_CONTENT);
    assert_eq!(seq_of(&app, "h0").await, None);
    assert_eq!(call(&app, delete("h0", Some(ADMIN))).await.0, StatusCode::NOT_FOUND);
    // The freed slot of the quota takes a new host.
    assert_eq!(call(&app, push("one-more")).await.0, StatusCode::OK);

    // A minute idle: every host but the one that pushed again is dropped.
    now.store(50_000, Ordering::Relaxed);
    let again = push_req(
        "web1",
        Some("bound-token-0123456789abcdef"),
        reading("azure-mana-vm", "web1", 1),
    );
    assert_eq!(call(&app, again).await.0, StatusCode::OK);
    now.store(100_000, Ordering::Relaxed);
    let (_, list) = call(&app, Request::get("/live").body(Body::empty()).unwrap()).await;
    assert!(list.contains("href=\"/live/web1\""), "{list}");
    assert!(!list.contains("href=\"/live/h1\""), "{list}");
    assert_eq!(seq_of(&app, "h1").await, None);
    assert_eq!(seq_of(&app, "web1").await, Some(2));
}

#[tokio::test]
async fn sse_streams_only_for_known_hosts_within_per_client_and_per_host_caps() {
    use irqscope::web::live::{SSE_STREAMS_PER_CLIENT_MAX, SSE_STREAMS_PER_HOST_MAX};
    let (app, _) = live_app(TOKEN);
    let open = |host: &str, client: [u8; 4]| {
        let mut r = Request::get(format!("/live/{host}/events"))
            .body(Body::empty())
            .unwrap();
        let addr = std::net::SocketAddr::from((client, 40_000));
        r.extensions_mut().insert(axum::extract::ConnectInfo(addr));
        r
    };
    // A host nobody pushes for holds no stream.
    let (st, body) = call(&app, open("nobody", [127, 0, 0, 1])).await;
    assert_eq!(st, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(
        call(&app, push_req("h", Some(TOKEN), reading("azure-mana-vm", "h", 0)))
            .await
            .0,
        StatusCode::OK
    );
    // One client: its cap, then 429; the streams it holds stay open.
    let mut held = Vec::new();
    for _ in 0..SSE_STREAMS_PER_CLIENT_MAX {
        let resp = app.clone().oneshot(open("h", [127, 0, 0, 1])).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        held.push(resp);
    }
    let (st, body) = call(&app, open("h", [127, 0, 0, 1])).await;
    assert_eq!(st, StatusCode::TOO_MANY_REQUESTS, "{body}");
    // Other clients fill the host's cap, then 503.
    for i in SSE_STREAMS_PER_CLIENT_MAX..SSE_STREAMS_PER_HOST_MAX {
        let resp = app.clone().oneshot(open("h", [127, 0, 1, i as u8])).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        held.push(resp);
    }
    let (st, body) = call(&app, open("h", [127, 0, 2, 1])).await;
    assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    // Closing streams frees their slots.
    held.clear();
    let resp = app.clone().oneshot(open("h", [127, 0, 0, 1])).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

/// A 1 MiB tmpfs at a fresh directory, unmounted on drop; `None` where mounting is not allowed.
struct SmallDisk(Scratch);

impl SmallDisk {
    fn mount(tag: &str) -> Option<SmallDisk> {
        let dir = temp_dir(tag);
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
            .arg(dir.path())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(SmallDisk(dir))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[tokio::test]
async fn a_full_disk_answers_503_keeps_every_acknowledged_push_and_recovers() {
    let Some(disk) = SmallDisk::mount("full") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    let file = disk.0.join("live.redb");
    let open = || {
        let persist = irqscope::live::persist::Persist::open(&file).unwrap();
        let (live, _) = LiveState::with_clock(Tokens::parse(TOKEN).unwrap(), Some(persist), paced_clock()).unwrap();
        web::app(AppState {
            live,
            ..Default::default()
        })
    };
    let app = open();
    // Leave the store a little room.
    let filler = disk.0.join("filler");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&filler).unwrap();
        let mut len = 0u64;
        while f.write_all(&[0u8; 4096]).is_ok() {
            len += 4096;
        }
        f.set_len(len.saturating_sub(256 << 10)).unwrap();
    }
    let seq_of_body = |body: &str| {
        serde_json::from_str::<serde_json::Value>(body).unwrap()["seq"]
            .as_u64()
            .unwrap()
    };
    let mut acked = Vec::new();
    let mut refused = None;
    let mut next = 0u64;
    for _ in 0..3_000 {
        next += 1;
        let (st, body) = call(&app, push_req("h", Some(TOKEN), reading("x86-nvme-vm", "h", next))).await;
        match st {
            StatusCode::OK => acked.push(seq_of_body(&body)),
            StatusCode::SERVICE_UNAVAILABLE => {
                refused = Some(body);
                break;
            }
            other => panic!("{other}: {body}"),
        }
    }
    let refused = refused.expect("the disk filled up");
    assert!(refused.contains("not kept"), "{refused}");
    assert!(!acked.is_empty());
    // Still full: still refused. Space again: the same process resumes persisting by itself.
    next += 1;
    let (st, body) = call(&app, push_req("h", Some(TOKEN), reading("x86-nvme-vm", "h", next))).await;
    assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "still full: {body}");
    std::fs::remove_file(&filler).unwrap();
    next += 1;
    let (st, body) = call(&app, push_req("h", Some(TOKEN), reading("x86-nvme-vm", "h", next))).await;
    assert_eq!(st, StatusCode::OK, "after freeing space: {body}");
    let seq = seq_of_body(&body);
    drop(app);
    // After a restart every acknowledged push is there (and only those).
    let persist = irqscope::live::persist::Persist::open(&file).unwrap();
    let (hosts, bad) = persist.load_all().unwrap();
    assert!(bad.is_empty(), "{bad:?}");
    let kept: Vec<u64> = hosts[0].history.iter().map(|s| s.seq).collect();
    acked.push(seq);
    assert_eq!(kept, acked, "history on disk");
}

#[tokio::test]
async fn pages_escape_hostile_names_and_imports_show_the_same_views() {
    let (app, _) = live_app(TOKEN);
    let mut s = snapshot_of("x86-nvme-vm", "web1", 1_000);
    s.irqs[0].name = "<script>alert(1)</script>".into();
    s.irqs[1].chip = "\"><img src=x>".into();
    assert_eq!(
        call(&app, push_req("web1", Some(TOKEN), serde_json::to_string(&s).unwrap()))
            .await
            .0,
        StatusCode::OK
    );
    s.taken_unix_ms = 2_000;
    for irq in &mut s.irqs {
        for c in &mut irq.counts {
            c.1 += 500;
        }
    }
    assert_eq!(
        call(&app, push_req("web1", Some(TOKEN), serde_json::to_string(&s).unwrap()))
            .await
            .0,
        StatusCode::OK
    );
    let (st, page) = call(&app, Request::get("/live/web1").body(Body::empty()).unwrap()).await;
    assert_eq!(st, StatusCode::OK, "{page}");
    assert!(
        !page.contains("<script>alert") && page.contains("&#60;script&#62;alert"),
        "IRQ name not escaped"
    );
    assert!(!page.contains("<img src=x>"));
    assert_eq!(
        page.matches("<rect class=\"cpu").count(),
        96,
        "one heatmap cell per CPU"
    );
    assert!(page.contains("id=\"freeze\" href=\"/s/v1."), "permalink missing");
    assert!(page.contains("0</strong> differ"), "x86 fixture should match the model");
    let link = page
        .split("id=\"freeze\" href=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    let (st, frozen) = call(&app, Request::get(&link).body(Body::empty()).unwrap()).await;
    assert_eq!(st, StatusCode::OK, "{frozen}");
    assert!(frozen.contains("nvme3"));
    let (st, list) = call(&app, Request::get("/live").body(Body::empty()).unwrap()).await;
    assert_eq!(st, StatusCode::OK);
    assert!(list.contains("href=\"/live/web1\""));
    // Variant by query; an unknown one is a 4xx.
    let (st, page) = call(
        &app,
        Request::get("/live/web1?variant=pre-cluster&effective=first-cpu")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    assert!(page.contains("class=\"mismatch\""));
    assert!(call(
        &app,
        Request::get("/live/web1?variant=nope").body(Body::empty()).unwrap()
    )
    .await
    .0
    .is_client_error());
    assert_eq!(
        call(&app, Request::get("/live/nohost").body(Body::empty()).unwrap())
            .await
            .0,
        StatusCode::NOT_FOUND
    );

    // Import: a capture file with two readings, and a pasted /proc/interrupts.
    let mut a = snapshot_of("offline-cpus", "imported-host", 10_000);
    let mut b = a.clone();
    b.taken_unix_ms = 11_000;
    for irq in &mut b.irqs {
        for c in &mut irq.counts {
            c.1 += 100;
        }
    }
    a.irqs.truncate(a.irqs.len());
    let capture = serde_json::to_string(&Capture {
        version: 1,
        snapshots: vec![a, b],
        probe_calls: None,
    })
    .unwrap();
    let form = |text: &str| {
        let body: String = url_encode(text);
        Request::post("/live/_/import")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(format!("capture={body}")))
            .unwrap()
    };
    let (st, page) = follow(&app, form(&capture)).await;
    assert_eq!(st, StatusCode::OK, "{page}");
    assert!(page.contains("imported-host") && page.contains("imported"));
    assert!(
        page.contains("100.0") || page.contains(">100<"),
        "rates from the two readings"
    );
    let pasted = std::fs::read_to_string(fixture("arm64-vm/proc/interrupts")).unwrap();
    let (st, page) = follow(&app, form(&pasted)).await;
    assert_eq!(st, StatusCode::OK, "{page}");
    assert!(page.contains("Rescheduling interrupts"));
    // One reading without /proc/irq files: nothing compared, no vector marked as differing.
    assert!(page.contains("Not compared with the kernel model"), "{page}");
    assert!(!page.contains("class=\"mismatch\""), "{page}");
    let (st, msg) = call(&app, form("CPU0\n 1: x\nnot a row\n")).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert!(msg.contains("line 3"), "{msg}");
}

/// `snapshot_of` with every device counter moved on by `step * seq`, `seq` readings 100 ms apart.
fn reading(name: &str, host: &str, seq: u64) -> String {
    let mut s = snapshot_of(name, host, 1_000 + 100 * seq);
    for irq in s
        .irqs
        .iter_mut()
        .filter(|i| i.label.bytes().all(|b| b.is_ascii_digit()))
    {
        for c in &mut irq.counts {
            c.1 += 7 * seq;
        }
    }
    serde_json::to_string(&s).unwrap()
}

/// The next SSE `snapshot` event's data within `wait`, or `None`.
async fn next_event(body: &mut Body, buf: &mut String, wait: Duration) -> Option<serde_json::Value> {
    let until = tokio::time::Instant::now() + wait;
    loop {
        if let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            if let Some(data) = block.lines().find_map(|l| l.strip_prefix("data: ")) {
                return Some(serde_json::from_str(data).unwrap());
            }
            continue;
        }
        let frame = tokio::time::timeout_at(until, body.frame())
            .await
            .ok()?
            .unwrap()
            .unwrap();
        if let Ok(data) = frame.into_data() {
            buf.push_str(&String::from_utf8_lossy(&data));
        }
    }
}

#[tokio::test]
async fn sse_sends_one_bounded_event_per_reading_with_the_history_chart() {
    use irqscope::web::live::HISTORY_CHART_LEN;
    let (app, _) = live_app(TOKEN);
    assert_eq!(
        call(&app, push_req("h", Some(TOKEN), reading("azure-mana-vm", "h", 0)))
            .await
            .0,
        StatusCode::OK
    );
    let resp = app
        .clone()
        .oneshot(Request::get("/live/h/events").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let (mut body, mut buf) = (resp.into_body(), String::new());
    let first = next_event(&mut body, &mut buf, Duration::from_secs(5))
        .await
        .expect("first event");
    assert_eq!(first["seq"], 1);
    assert!(first["history_svg"].as_str().unwrap().contains("data-last-seq=\"1\""));

    // Many more readings than the notice ring holds, plus another host's, while the client
    // reads nothing: it then gets the latest reading once, with a bounded history.
    let pushes = (HISTORY_CHART_LEN + 80) as u64;
    for seq in 1..=pushes {
        assert_eq!(
            call(&app, push_req("h", Some(TOKEN), reading("azure-mana-vm", "h", seq)))
                .await
                .0,
            StatusCode::OK
        );
    }
    for seq in 0..5 {
        assert_eq!(
            call(
                &app,
                push_req("other", Some(TOKEN), reading("azure-mana-vm", "other", seq))
            )
            .await
            .0,
            StatusCode::OK
        );
    }
    let ev = next_event(&mut body, &mut buf, Duration::from_secs(5))
        .await
        .expect("latest event");
    let last = pushes + 1;
    assert_eq!(ev["seq"], last);
    assert_eq!(
        ev["history"].as_array().unwrap().len(),
        HISTORY_CHART_LEN,
        "SSE carries the chart's samples only"
    );
    let chart = ev["history_svg"].as_str().unwrap();
    assert!(
        chart.contains(&format!("data-last-seq=\"{last}\""))
            && chart.contains(&format!("data-points=\"{HISTORY_CHART_LEN}\""))
    );
    assert!(chart.contains("class=\"history-line\""), "rates were drawn");
    assert_eq!(
        ev["history_text"][0],
        format!("#{last} 1400 irq/s"),
        "{}",
        ev["history_text"]
    );
    assert!(
        next_event(&mut body, &mut buf, Duration::from_millis(300))
            .await
            .is_none(),
        "a reading was sent twice"
    );
    // One more reading: exactly one more event.
    assert_eq!(
        call(
            &app,
            push_req("h", Some(TOKEN), reading("azure-mana-vm", "h", pushes + 1))
        )
        .await
        .0,
        StatusCode::OK
    );
    assert_eq!(
        next_event(&mut body, &mut buf, Duration::from_secs(5)).await.unwrap()["seq"],
        last + 1
    );
    assert!(next_event(&mut body, &mut buf, Duration::from_millis(300))
        .await
        .is_none());
    // The JSON API still has the whole history; the page shows the chart too.
    let (_, json) = call(&app, Request::get("/api/live/h").body(Body::empty()).unwrap()).await;
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&json).unwrap()["history"]
            .as_array()
            .unwrap()
            .len() as u64,
        last + 1
    );
    let (_, page) = call(&app, Request::get("/live/h").body(Body::empty()).unwrap()).await;
    assert!(page.contains("<div id=\"live-history\"><svg class=\"history\""));
}

#[tokio::test]
async fn no_host_name_collides_with_an_action() {
    let (app, _) = live_app(TOKEN);
    // A host literally named like the import action is an ordinary host.
    for seq in 0..2 {
        assert_eq!(
            call(
                &app,
                push_req("import", Some(TOKEN), reading("azure-mana-vm", "import", seq))
            )
            .await
            .0,
            StatusCode::OK
        );
    }
    let (st, page) = call(&app, Request::get("/live/import").body(Body::empty()).unwrap()).await;
    assert_eq!(st, StatusCode::OK, "{page}");
    assert!(page.contains("data-live-host=\"import\""), "{page}");
    assert_eq!(seq_of(&app, "import").await, Some(2));
    let resp = app
        .clone()
        .oneshot(Request::get("/live/import/events").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let (_, list) = call(&app, Request::get("/live").body(Body::empty()).unwrap()).await;
    assert!(list.contains("href=\"/live/import\"") && list.contains("action=\"/live/_/import\""));
    // The action is under /live/_/, which no host can take.
    let pasted = std::fs::read_to_string(fixture("arm64-vm/proc/interrupts")).unwrap();
    let form = Request::post("/live/_/import")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!("capture={}", url_encode(&pasted))))
        .unwrap();
    let resp = app.clone().oneshot(form).await.unwrap();
    assert!(
        resp.status().is_success() || resp.status().is_redirection(),
        "{}",
        resp.status()
    );
    for host in ["_", "_import", "_x.y"] {
        let (st, body) = call(&app, push_req(host, Some(TOKEN), reading("azure-mana-vm", host, 0))).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{host}: {body}");
    }
    assert!(!irqscope::live::protocol::valid_host_name("_import"));
    assert!(irqscope::live::protocol::valid_host_name("import") && irqscope::live::protocol::valid_host_name("a_b"));
}

/// Send a request; on a redirect, GET its Location. Returns the final status and body.
async fn follow(app: &axum::Router, req: Request<Body>) -> (StatusCode, String) {
    let resp = app.clone().oneshot(req).await.unwrap();
    if resp.status() == StatusCode::SEE_OTHER {
        let to = resp.headers()[header::LOCATION].to_str().unwrap().to_string();
        return call(app, Request::get(to).body(Body::empty()).unwrap()).await;
    }
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

fn import_form(text: &str, extra: &str) -> Request<Body> {
    Request::post("/live/_/import")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!("capture={}{extra}", url_encode(text))))
        .unwrap()
}

async fn import_location(app: &axum::Router, text: &str, extra: &str) -> String {
    let resp = app.clone().oneshot(import_form(text, extra)).await.unwrap();
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    resp.headers()[header::LOCATION].to_str().unwrap().to_string()
}

#[tokio::test]
async fn imports_get_a_stable_link_that_survives_a_restart() {
    let dir = temp_dir("imports");
    let db = dir.join("live.redb");
    let open = || {
        LiveState::new(
            Tokens::parse(TOKEN).unwrap(),
            Some(irqscope::live::persist::Persist::open(&db).unwrap()),
        )
        .unwrap()
        .0
    };
    let live = open();
    let app = web::app(AppState {
        live: live.clone(),
        ..Default::default()
    });
    let a = snapshot_of("azure-mana-vm", "shared-vm", 10_000);
    let mut b = a.clone();
    b.taken_unix_ms = 11_000;
    for irq in &mut b.irqs {
        for c in &mut irq.counts {
            c.1 += 50;
        }
    }
    let capture = serde_json::to_string(&Capture {
        version: 1,
        snapshots: vec![a, b],
        probe_calls: None,
    })
    .unwrap();
    let link = import_location(&app, &capture, "&variant=pre-cluster").await;
    let (path, query) = link.split_once('?').unwrap();
    assert!(
        path.starts_with("/live/_/import/") && query == "variant=pre-cluster",
        "{link}"
    );
    let id = path.rsplit('/').next().unwrap().to_string();
    assert!(irqscope::live::imports::valid_id(&id), "{id}");
    // The same content gets the same link; a different one another.
    assert_eq!(import_location(&app, &capture, "").await, path);
    let pasted = std::fs::read_to_string(fixture("arm64-vm/proc/interrupts")).unwrap();
    let other = import_location(&app, &pasted, "").await;
    assert_ne!(other, path);
    let (st, page) = call(&app, Request::get(path).body(Body::empty()).unwrap()).await;
    assert_eq!(st, StatusCode::OK, "{page}");
    assert!(page.contains("shared-vm") && page.contains(&format!("id=\"import-link\" href=\"{path}\"")));
    assert!(page.contains("mana@7870:00:00.0"), "live vs model on the import");
    assert!(
        page.contains(">50.0<") || page.contains(">50<"),
        "rates from the two readings"
    );
    let (st, _) = call(
        &app,
        Request::get(format!("{path}?effective=first-cpu"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    for bad in [
        "/live/_/import/0123",
        "/live/_/import/ffffffffffffffffffffffffffffffff",
        "/live/_/import/..%2F..%2Fetc",
    ] {
        assert_eq!(
            call(&app, Request::get(bad).body(Body::empty()).unwrap()).await.0,
            StatusCode::NOT_FOUND,
            "{bad}"
        );
    }
    // A restart with the same --live-store keeps the link.
    drop(app);
    drop(live);
    let app = web::app(AppState {
        live: open(),
        ..Default::default()
    });
    let (st, again) = call(&app, Request::get(path).body(Body::empty()).unwrap()).await;
    assert_eq!(st, StatusCode::OK, "{again}");
    assert!(again.contains("shared-vm"));
    assert_eq!(
        call(&app, Request::get(&other).body(Body::empty()).unwrap()).await.0,
        StatusCode::OK
    );
    // Refused imports are not kept.
    assert_eq!(
        app.clone()
            .oneshot(import_form("CPU0\n 1: x\nnot a row\n", ""))
            .await
            .unwrap()
            .status(),
        StatusCode::BAD_REQUEST
    );
    drop(app);
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

// ---- agent + real server ----

fn temp_dir(tag: &str) -> Scratch {
    Scratch::new(&format!("live-{tag}"))
}

/// Add `per_irq` to every counter of numbered IRQs on the CPU they fire on.
fn advance(root: &Path, per_irq: u64) {
    let path = root.join("proc/interrupts");
    let mut p = parse_interrupts(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for r in p.rows.iter_mut().filter(|r| r.irq().is_some()) {
        for c in r.counts.iter_mut() {
            c.1 += per_irq;
        }
    }
    let tmp = root.join("proc/interrupts.new");
    std::fs::write(&tmp, format_interrupts(&p)).unwrap();
    std::fs::rename(tmp, path).unwrap();
}

struct Agent(Child);
impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_agent(server: &str, root: &Path, host: &str, token_file: &Path, interval_ms: u64) -> Agent {
    Agent(
        Command::new(env!("CARGO_BIN_EXE_irqscope-agent"))
            .args([
                "push",
                "--server",
                server,
                "--host",
                host,
                "--interval-ms",
                &interval_ms.to_string(),
                "--backoff-max-ms",
                "800",
            ])
            .arg("--root")
            .arg(root)
            .arg("--token-file")
            .arg(token_file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// Reads `snapshot` events from an SSE response body.
struct SseReader {
    body: Body,
    buf: String,
}

impl SseReader {
    async fn open(base: &str, host: &str) -> SseReader {
        let client: hyper_util::client::legacy::Client<_, Body> =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http();
        let resp = client
            .get(format!("{base}/live/{host}/events").parse().unwrap())
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "text/event-stream");
        SseReader {
            body: Body::new(resp.into_body()),
            buf: String::new(),
        }
    }

    async fn next(&mut self) -> serde_json::Value {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                if let Some(data) = block.lines().find_map(|l| l.strip_prefix("data: ")) {
                    return serde_json::from_str(data).unwrap();
                }
                continue;
            }
            let frame = tokio::time::timeout(Duration::from_secs(20), self.body.frame())
                .await
                .expect("SSE event within 20 s")
                .unwrap()
                .unwrap();
            if let Ok(data) = frame.into_data() {
                self.buf.push_str(&String::from_utf8_lossy(&data));
            }
        }
    }

    /// The next event whose total rate satisfies `f`.
    async fn until(&mut self, f: impl Fn(f64) -> bool) -> serde_json::Value {
        let started = Instant::now();
        loop {
            let ev = self.next().await;
            if ev["irqs_per_s"].as_f64().is_some_and(&f) {
                return ev;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no matching event; last {}",
                ev["irqs_per_s"]
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_pushes_and_sse_shows_rates_change() {
    let root = temp_dir("e2e");
    copy_dir(&fixture("x86-nvme-vm"), &root);
    let token_file = root.join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let (live, _) = LiveState::new(Tokens::parse(TOKEN).unwrap(), None).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = web::app(AppState {
        live,
        ..Default::default()
    });
    let server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let _agent = start_agent(&base, &root, "vm1", &token_file, 200);
    // Streams are for known hosts: open it once the agent's first reading is in.
    wait_seq(&format!("{base}/api/live/vm1"), 1).await;
    let mut sse = SseReader::open(&base, "vm1").await;
    // Counters still: the rate settles at 0.
    let ev = sse.until(|r| r == 0.0).await;
    assert!(ev["heatmap"].as_str().unwrap().contains("class=\"heatmap live\""));
    // Advance every device IRQ: 36 NVMe vectors + 2 legacy IRQs, 1,000 each per step.
    let n_device_irqs = 38.0;
    let mut seen = Vec::new();
    for step in 0..3 {
        advance(&root, 1_000);
        let ev = sse.until(|r| r > 0.0).await;
        let rate = ev["irqs_per_s"].as_f64().unwrap();
        seen.push(rate);
        // The jump lands in one agent interval (about 200 ms): 38,000 interrupts / ~0.2 s.
        assert!(
            rate > n_device_irqs * 1_000.0 && rate < n_device_irqs * 1_000.0 / 0.05,
            "step {step}: {rate}"
        );
        let busiest = ev["per_cpu"]
            .as_object()
            .unwrap()
            .values()
            .filter(|v| v.as_f64().unwrap() > 0.0)
            .count();
        assert!(busiest >= 4, "several CPUs get the new interrupts");
        sse.until(|r| r == 0.0).await;
    }
    server.abort();
}

type Server = KillOnDrop;

fn start_server(port: u16, tokens: &Path, store: &Path) -> Server {
    let child = Command::new(env!("CARGO_BIN_EXE_irqscope"))
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .arg("--live-tokens")
        .arg(tokens)
        .arg("--live-store")
        .arg(store)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < Duration::from_secs(20), "server did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    KillOnDrop(child)
}

async fn get_json(url: &str) -> Option<serde_json::Value> {
    let client: hyper_util::client::legacy::Client<_, Body> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http();
    let resp = client.get(url.parse().ok()?).await.ok()?;
    if resp.status() != StatusCode::OK {
        return None;
    }
    let bytes = resp.into_body().collect().await.ok()?.to_bytes();
    serde_json::from_slice(&bytes).ok()
}

async fn wait_seq(url: &str, at_least: u64) -> serde_json::Value {
    let started = Instant::now();
    loop {
        if let Some(v) = get_json(url).await {
            if v["seq"].as_u64().unwrap_or(0) >= at_least {
                return v;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "seq {at_least} not reached at {url}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_restart_keeps_history_and_the_agent_reconnects() {
    let root = temp_dir("restart");
    copy_dir(&fixture("offline-cpus"), &root);
    let (tokens, token_file, store) = (root.join("tokens"), root.join("token"), root.join("live.redb"));
    std::fs::write(&tokens, format!("h1={TOKEN}\n")).unwrap();
    std::fs::write(&token_file, TOKEN).unwrap();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/api/live/h1");
    let mut server = start_server(port, &tokens, &store);
    let _agent = start_agent(&format!("http://127.0.0.1:{port}"), &root, "h1", &token_file, 200);
    let before = wait_seq(&url, 4).await;
    // Kill the server (no clean shutdown) while the agent runs.
    let _ = server.0.kill();
    let _ = server.0.wait();
    advance(&root, 5_000);
    tokio::time::sleep(Duration::from_millis(700)).await;
    server = start_server(port, &tokens, &store);
    let seq_before = before["seq"].as_u64().unwrap();
    // History survived the restart: the first reading after it is not seq 1.
    let after = wait_seq(&url, seq_before + 2).await;
    let history = after["history"].as_array().unwrap();
    assert!(
        history.len() as u64 >= seq_before + 2,
        "history lost: {} samples",
        history.len()
    );
    assert_eq!(history[0]["seq"], 1);
    // The interval across the outage still has rates: the counters advanced while down.
    assert!(
        history.iter().any(|s| s["irqs_per_s"].as_f64().unwrap() > 0.0),
        "{history:?}"
    );
    drop(server);
}

#[test]
fn agent_captures_this_machine() {
    let dir = temp_dir("real");
    let out = dir.join("capture.json");
    let status = Command::new(env!("CARGO_BIN_EXE_irqscope-agent"))
        .args([
            "capture",
            "--root",
            "/",
            "--host",
            "this-machine",
            "--count",
            "2",
            "--over-s",
            "0.3",
            "-o",
        ])
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let c: Capture = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(c.snapshots.len(), 2);
    let s = &c.snapshots[0];
    assert!(!s.cpus.is_empty() && !s.irqs.is_empty());
    let topo = irqscope::topology::Topology::new(&s.topology.to_spec("this-machine")).unwrap();
    assert_eq!(
        topo.online().weight() as usize,
        s.cpus.len(),
        "columns are the online CPUs"
    );
    assert!(c.snapshots[1].taken_unix_ms >= s.taken_unix_ms + 250);
    let mut store = irqscope::live::store::LiveStore::new();
    for snap in c.snapshots.clone() {
        let at = irqscope::live::store::Arrival {
            received_ms: snap.taken_unix_ms,
            unbound: None,
        };
        store.ingest("this-machine", snap, at).unwrap();
    }
    assert!(store.host("this-machine").unwrap().rates.is_some());
}

#[test]
fn a_damaged_store_file_is_one_line_and_exit_2_and_can_be_moved_aside() {
    let dir = temp_dir("damaged");
    let file = dir.join("live.redb");
    // A real store with one host in it, then cut in half.
    {
        let persist = irqscope::live::persist::Persist::open(&file).unwrap();
        let (live, _) = LiveState::with_clock(Tokens::parse(TOKEN).unwrap(), Some(persist), paced_clock()).unwrap();
        let body = reading("x86-nvme-vm", "h", 1);
        live.hub()
            .ingest("h", Some(TOKEN.as_bytes()), None, body.as_bytes())
            .unwrap();
    }
    let len = std::fs::metadata(&file).unwrap().len();
    let serve = |extra: &[&str]| {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_irqscope"))
            .args(["serve", "--addr", &format!("127.0.0.1:{port}"), "--live-store"])
            .arg(&file)
            .args(extra)
            .env("RUST_LOG", "off")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        (KillOnDrop(child), port)
    };
    let exits_with_one_line = |what: &str| {
        let (mut child, _) = serve(&[]);
        let started = Instant::now();
        let status = loop {
            if let Some(st) = child.0.try_wait().unwrap() {
                break st;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{what}: the server started"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(child.0.stderr.as_mut().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(2), "{what}: {err}");
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(
            err.contains("live.redb") && err.contains("--live-store-move-aside"),
            "{what}: {err}"
        );
    };
    for cut in [len / 2, 4096, 0] {
        let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
        f.set_len(cut).unwrap();
        drop(f);
        exits_with_one_line(&format!("cut to {cut} bytes"));
    }
    // The flag moves it aside and starts empty.
    let (_server, port) = serve(&["--live-store-move-aside"]);
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < Duration::from_secs(20), "server did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(dir.join("live.redb.damaged-1").exists());
}

#[tokio::test]
async fn imports_have_a_per_client_budget_and_a_concurrency_limit() {
    use irqscope::live::hub::{IMPORTS_CONCURRENT_MAX, IMPORTS_PER_CLIENT_MAX};
    let (app, live) = live_app(TOKEN);
    let pasted = std::fs::read_to_string(fixture("arm64-vm/proc/interrupts")).unwrap();
    let from = |client: [u8; 4]| {
        let mut r = import_form(&pasted, "");
        let addr = std::net::SocketAddr::from((client, 40_000));
        r.extensions_mut().insert(axum::extract::ConnectInfo(addr));
        r
    };
    for i in 0..IMPORTS_PER_CLIENT_MAX {
        let (st, body) = call(&app, from([127, 0, 0, 1])).await;
        assert_eq!(st, StatusCode::SEE_OTHER, "import {i}: {body}");
    }
    let (st, body) = call(&app, from([127, 0, 0, 1])).await;
    assert_eq!(st, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert!(body.contains("import budget"), "{body}");
    // Another address has its own budget.
    assert_eq!(call(&app, from([127, 0, 0, 2])).await.0, StatusCode::SEE_OTHER);
    // At most IMPORTS_CONCURRENT_MAX at once; the next is refused, not queued.
    let slots: Vec<_> = (0..IMPORTS_CONCURRENT_MAX)
        .map(|_| live.hub().import_slot().unwrap())
        .collect();
    let (st, body) = call(&app, from([127, 0, 0, 3])).await;
    assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    drop(slots);
    assert_eq!(call(&app, from([127, 0, 0, 3])).await.0, StatusCode::SEE_OTHER);
}

const VIEWER: &str = "viewer-token-0123456789";

/// With viewer tokens, every live read needs one (bearer header or the cookie a `?token=`
/// visit sets, the visit redirecting to the page without it); ingestion keeps its own tokens.
#[tokio::test]
async fn viewer_tokens_guard_pages_json_and_streams() {
    use irqscope::live::auth::ViewerTokens;
    let (live, _) = LiveState::with_clock(Tokens::parse(TOKEN).unwrap(), None, paced_clock()).unwrap();
    let live = live.with_viewer_tokens(ViewerTokens::parse(&format!("# viewers\n{VIEWER}\n")).unwrap());
    let app = web::app(AppState {
        live,
        ..Default::default()
    });
    // Pushing needs the push token only.
    let (st, body) = call(&app, push_req("v1", Some(TOKEN), reading("azure-mana-vm", "v1", 0))).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let get = |path: &str, auth: Option<(&'static str, String)>| {
        let mut r = Request::get(path);
        if let Some((name, value)) = auth {
            r = r.header(name, value);
        }
        r.body(Body::empty()).unwrap()
    };
    for path in ["/live", "/live/v1", "/api/live/v1", "/live/v1/events", "/fleet"] {
        let (st, body) = call(&app, get(path, None)).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{path}: {body}");
        assert!(body.contains("viewer token"), "{path}: {body}");
        let (st, body) = call(
            &app,
            get(path, Some(("authorization", "Bearer wrong-token-0123456789".into()))),
        )
        .await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{path}: {body}");
        let (st, body) = call(&app, get(path, Some(("cookie", format!("other=1; token={VIEWER}x"))))).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{path}: {body}");
    }
    // The bearer header and the cookie each let a reader in.
    let (st, body) = call(
        &app,
        get("/api/live/v1", Some(("authorization", format!("Bearer {VIEWER}")))),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let (st, body) = call(&app, get("/live/v1", Some(("cookie", format!("a=b; token={VIEWER}"))))).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert!(body.contains("v1"));
    let (st, body) = call(&app, get("/fleet", Some(("cookie", format!("token={VIEWER}"))))).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert!(body.contains("v1"), "the fleet lists the host once the viewer is in");
    let resp = app
        .clone()
        .oneshot(get("/live/v1/events", Some(("cookie", format!("token={VIEWER}")))))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let mut events = resp.into_body();
    let mut buf = String::new();
    let ev = next_event(&mut events, &mut buf, Duration::from_secs(10)).await;
    assert_eq!(ev.expect("the latest event")["seq"].as_u64(), Some(1));
    // A `?token=` visit: the cookie, and a redirect to the same page without the token.
    let resp = app
        .clone()
        .oneshot(get(&format!("/live/v1?variant=cluster&token={VIEWER}"), None))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    assert_eq!(resp.headers()[header::LOCATION], "/live/v1?variant=cluster");
    let cookie = resp.headers()[header::SET_COOKIE].to_str().unwrap().to_string();
    assert!(
        cookie.starts_with(&format!("token={VIEWER};")) && cookie.contains("HttpOnly"),
        "{cookie}"
    );
    assert!(!cookie.contains("Secure"), "plain HTTP: {cookie}");
    let resp = app
        .clone()
        .oneshot(
            Request::get(format!("/live?token={VIEWER}"))
                .header("x-forwarded-proto", "https")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(resp.headers()[header::LOCATION], "/live");
    assert!(resp.headers()[header::SET_COOKIE].to_str().unwrap().contains("Secure"));
    let (st, body) = call(&app, get("/live/v1?token=not-a-viewer-token-000", None)).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED, "{body}");
    // Import needs it too.
    let (st, _) = call(&app, import_form("nothing", "")).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
}

/// `serve --live-viewer-tokens` reads the file once; a bad one stops the server with one line.
#[test]
fn serve_refuses_a_bad_viewer_tokens_file_in_one_line() {
    let dir = temp_dir("viewer-file");
    std::fs::write(dir.join("viewers"), "short\n").unwrap();
    std::fs::write(dir.join("empty"), "# nobody\n").unwrap();
    for (file, want) in [("viewers", "line 1"), ("empty", "no viewer token")] {
        let out = Command::new(env!("CARGO_BIN_EXE_irqscope"))
            .args(["serve", "--addr", &format!("127.0.0.1:{}", free_port())])
            .arg("--live-viewer-tokens")
            .arg(dir.join(file))
            .env("RUST_LOG", "off")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(want) && err.trim().lines().count() == 1, "{err}");
    }
}

/// `serve --max-connections N`: at most N connections are open; a newcomer when the pool is
/// full takes the place of the longest-idle connection (of the address holding the most), so
/// it is served at once and that idle one is closed; 0 and values past the limit are refused
/// in one line.
#[test]
fn serve_max_connections_holds_the_cap() {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    for bad in ["0", "65537", "many"] {
        let out = Command::new(env!("CARGO_BIN_EXE_irqscope"))
            .args(["serve", "--max-connections", bad])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(
            err.contains("--max-connections") && err.trim().lines().count() == 1,
            "{bad}: {err}"
        );
    }
    let port = free_port();
    let _server = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_irqscope"))
            .args([
                "serve",
                "--addr",
                &format!("127.0.0.1:{port}"),
                "--max-connections",
                "2",
            ])
            .env("RUST_LOG", "off")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    let connect = || loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => break s,
            Err(_) => {
                assert!(started.elapsed() < Duration::from_secs(20), "server did not listen");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    };
    let ask = |s: &mut TcpStream, wait: Duration| -> Option<String> {
        s.set_read_timeout(Some(wait)).unwrap();
        s.write_all(b"GET /static/live.js HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        let mut buf = [0u8; 256];
        match s.read(&mut buf) {
            Ok(n) if n > 0 => Some(String::from_utf8_lossy(&buf[..n]).into_owned()),
            _ => None,
        }
    };
    // The first connection is probed until the server answers (it has started).
    let mut a = connect();
    assert!(ask(&mut a, Duration::from_secs(10)).is_some_and(|r| r.starts_with("HTTP/1.1 200")));
    let mut b = connect();
    assert!(
        ask(&mut b, Duration::from_secs(5)).is_some(),
        "the second of 2 is served"
    );
    // A third, with both idle (kept alive, well within the 5 s idle timeout): it takes the
    // place of the longest-idle one, `a`, which the server closes; `b` stays open.
    let mut c = connect();
    assert!(
        ask(&mut c, Duration::from_secs(5)).is_some_and(|r| r.starts_with("HTTP/1.1 200")),
        "a third connection past the cap is served in an idle one's place"
    );
    // Read what is left of a connection's first answer: true when the server closed it, false
    // when it stays open past `wait`.
    let closed_within = |s: &mut TcpStream, wait: Duration| -> bool {
        s.set_read_timeout(Some(wait)).unwrap();
        let mut rest = [0u8; 4096];
        loop {
            match s.read(&mut rest) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                    return false
                }
                Err(_) => return true,
            }
        }
    };
    assert!(
        closed_within(&mut a, Duration::from_secs(5)),
        "the longest-idle connection is closed"
    );
    assert!(
        !closed_within(&mut b, Duration::from_millis(500)),
        "the other stays open"
    );
    assert!(
        ask(&mut b, Duration::from_secs(5)).is_some_and(|r| r.starts_with("HTTP/1.1 200")),
        "and is served"
    );
}

/// Behind a trusted proxy the per-client SSE cap counts the clients its `X-Forwarded-For`
/// names; from any other peer the header changes nothing.
#[tokio::test]
async fn a_trusted_proxy_forwards_the_client_for_the_per_client_caps() {
    use irqscope::web::live::SSE_STREAMS_PER_CLIENT_MAX;
    let proxy = std::net::IpAddr::from([127, 0, 0, 1]);
    let (plain, _) = live_app(TOKEN);
    let (live, _) = LiveState::with_clock(Tokens::parse(TOKEN).unwrap(), None, paced_clock()).unwrap();
    let behind = web::app(AppState {
        live: live.with_trusted_proxies(&[proxy]).unwrap(),
        ..Default::default()
    });
    let open = |peer: [u8; 4], forwarded: &str| {
        let mut r = Request::get("/live/h/events")
            .header("x-forwarded-for", forwarded)
            .body(Body::empty())
            .unwrap();
        let addr = std::net::SocketAddr::from((peer, 40_000));
        r.extensions_mut().insert(axum::extract::ConnectInfo(addr));
        r
    };
    for app in [&plain, &behind] {
        let (st, body) = call(app, push_req("h", Some(TOKEN), reading("azure-mana-vm", "h", 0))).await;
        assert_eq!(st, StatusCode::OK, "{body}");
    }
    let mut held = Vec::new();
    // Through the proxy: one client's cap, then 429 for it while another client still gets in.
    for _ in 0..SSE_STREAMS_PER_CLIENT_MAX {
        let resp = behind
            .clone()
            .oneshot(open([127, 0, 0, 1], "192.0.2.7, 198.51.100.1"))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        held.push(resp);
    }
    let (st, _) = call(&behind, open([127, 0, 0, 1], "192.0.2.8, 198.51.100.1")).await;
    assert_eq!(
        st,
        StatusCode::TOO_MANY_REQUESTS,
        "the last entry (the proxy's) is the client"
    );
    let resp = behind
        .clone()
        .oneshot(open([127, 0, 0, 1], "198.51.100.2"))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK, "another client behind the proxy");
    held.push(resp);
    // A peer that is not the proxy: the header is ignored, the peer is the client.
    for i in 0..SSE_STREAMS_PER_CLIENT_MAX {
        let resp = behind
            .clone()
            .oneshot(open([10, 0, 0, 9], &format!("203.0.113.{i}")))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        held.push(resp);
    }
    let (st, _) = call(&behind, open([10, 0, 0, 9], "203.0.113.200")).await;
    assert_eq!(st, StatusCode::TOO_MANY_REQUESTS);
    // Without a trusted proxy, the same requests from 127.0.0.1 are one client.
    for i in 0..SSE_STREAMS_PER_CLIENT_MAX {
        let resp = plain
            .clone()
            .oneshot(open([127, 0, 0, 1], &format!("203.0.113.{i}")))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        held.push(resp);
    }
    let (st, _) = call(&plain, open([127, 0, 0, 1], "203.0.113.201")).await;
    assert_eq!(st, StatusCode::TOO_MANY_REQUESTS);
}

/// Five unbound tokens cannot lock a bound host out: each holds at most its share of the host
/// table (256 / 5 = 51 hosts), so a bound host finds a place; and when bound hosts fill the
/// table, a new one takes the place of the unbound host idle longest.
#[tokio::test]
async fn five_unbound_tokens_cannot_lock_a_bound_host_out() {
    let unbound: Vec<String> = (0..5).map(|i| format!("unbound-token-{i}-0123456789")).collect();
    let tokens = format!(
        "{}\nbound-a=bound-a-token-0123456789\nbound-b=bound-b-token-0123456789\n",
        unbound.join("\n")
    );
    let (app, _) = live_app(&tokens);
    let body = |host: &str| serde_json::to_string(&snapshot_of("x86-nvme-vm", host, 1_000)).unwrap();
    let mut created = 0;
    for (i, token) in unbound.iter().enumerate() {
        for n in 0.. {
            let host = format!("u{i}-{n}");
            let (st, reply) = call(&app, push_req(&host, Some(token), body(&host))).await;
            if st == StatusCode::CONFLICT {
                assert!(reply.contains("this token already pushes for"), "{reply}");
                break;
            }
            assert_eq!(st, StatusCode::OK, "{host}: {reply}");
            created += 1;
        }
    }
    assert_eq!(created, 5 * 51);
    // The first bound host finds the table's last place; the second takes the place of the
    // unbound host idle longest (the first one pushed).
    for (host, token) in [
        ("bound-a", "bound-a-token-0123456789"),
        ("bound-b", "bound-b-token-0123456789"),
    ] {
        let (st, reply) = call(&app, push_req(host, Some(token), body(host))).await;
        assert_eq!(st, StatusCode::OK, "{host}: {reply}");
        assert_eq!(seq_of(&app, host).await, Some(1));
    }
    assert_eq!(seq_of(&app, "u0-0").await, None, "the longest-idle unbound host stayed");
    assert_eq!(seq_of(&app, "u0-1").await, Some(1));
    // The table is full: an unbound token under its quota may not push another one out.
    let (st, reply) = call(&app, push_req("u0-new", Some(&unbound[0]), body("u0-new"))).await;
    assert_eq!(st, StatusCode::CONFLICT, "{reply}");
    assert!(reply.contains("already keeps 256 hosts"), "{reply}");
}
