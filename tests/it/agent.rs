//! The agent side of live mode: a CPU-less last NUMA node (the lab's c5), captures of every
//! released protocol version, gzip push bodies and their bounds, delta pushes (protocol 3)
//! against full ones, the agent binary pushing over TLS to a local endpoint whose CA is made
//! here, falling back from a refused delta and stepping down to a version-2 server, and its
//! bounded token file.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use irqscope::live::auth::Tokens;
use irqscope::live::collect::Collector;
use irqscope::live::limits::SNAPSHOT_BYTES_MAX;
use irqscope::live::protocol::{
    encode_delta_body, encode_push_body, Capture, Delta, Snapshot, BASE_MISMATCH, DELTA_CONTENT_TYPE, PROTOCOL_VERSION,
};
use irqscope::topology::Topology;
use irqscope::web::{self, live::LiveState, AppState};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tower::ServiceExt;

use crate::common::fs::Scratch;
use crate::common::process::KillOnDrop;

const TOKEN: &str = "agent-test-token-0123456789abcdef";

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/live").join(rel)
}

fn live_app() -> (axum::Router, LiveState) {
    let (live, _) = LiveState::new(Tokens::parse(TOKEN).unwrap(), None).unwrap();
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

fn push(host: &str, encoding: Option<&str>, body: Vec<u8>) -> Request<Body> {
    let mut r = Request::post(format!("/api/live/{host}/snapshots"))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"));
    if let Some(e) = encoding {
        r = r.header(header::CONTENT_ENCODING, e);
    }
    r.body(Body::from(body)).unwrap()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

fn validate(snap: &Snapshot) -> Topology {
    snap.check().unwrap();
    Topology::new(&snap.topology.to_spec(&snap.host)).unwrap_or_else(|e| panic!("{}: {e}", snap.host))
}

#[tokio::test]
async fn a_cpu_less_last_node_gives_a_valid_snapshot_that_round_trips() {
    // The lab's c5: node 1 memoryless (CPUs, no memory), node 3 CPU-less (memory only), SLIT
    // 10/20/30/40. Version 1 sent 3 nodes and 4 distance rows, which the server refused.
    let snap = Collector::new(&data("c5-cpuless-node"), "c5").read(1_000).unwrap();
    assert_eq!(snap.version, PROTOCOL_VERSION);
    assert_eq!(snap.topology.nodes, ["0-3", "4-7", "8-11", ""]);
    assert_eq!(snap.topology.distances.as_ref().map(Vec::len), Some(4));
    let topo = validate(&snap);
    assert_eq!(topo.nr_node_ids(), 4);
    assert_eq!(topo.to_spec().nodes.unwrap().len(), 3, "to_spec keeps the count aside");
    // Kernel release and CPU sets as sysfs printed them.
    assert_eq!(snap.topology.kernel_release, "6.1.0-57-amd64");
    for set in [&snap.topology.possible, &snap.topology.present, &snap.topology.online] {
        assert_eq!(set.as_deref(), Some("0-11"));
    }
    let json = serde_json::to_vec(&snap).unwrap();
    assert_eq!(serde_json::from_slice::<Snapshot>(&json).unwrap(), snap);
    // The server takes it, plain and gzip-compressed.
    let (app, _) = live_app();
    let (st, body) = call(&app, push("c5", None, json)).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    // The next reading arrives no sooner than the agent's minimum interval (the server paces
    // pushes by its own clock).
    tokio::time::sleep(std::time::Duration::from_millis(
        irqscope::live::limits::AGENT_INTERVAL_MS_MIN,
    ))
    .await;
    let (mut scratch, mut gz) = (Vec::new(), Vec::new());
    let later = Snapshot {
        taken_unix_ms: 2_000,
        ..snap.clone()
    };
    encode_push_body(&later, &mut scratch, &mut gz).unwrap();
    let (st, body) = call(&app, push("c5", Some("gzip"), gz)).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert!(
        body.contains("\"seq\":2") && body.contains(&format!("\"version\":{PROTOCOL_VERSION}")),
        "{body}"
    );
}

#[tokio::test]
async fn captures_of_protocol_1_still_load() {
    let (app, _) = live_app();
    let mut seen = 0;
    for entry in std::fs::read_dir(data("captures-v1")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let raw: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(raw["version"], 1, "{}", path.display());
        let capture: Capture = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(capture.version, PROTOCOL_VERSION);
        for snap in &capture.snapshots {
            let topo = validate(snap);
            let rows = raw["snapshots"][0]["topology"]["distances"]
                .as_array()
                .map_or(0, Vec::len);
            if rows > 0 {
                assert_eq!(topo.nr_node_ids() as usize, rows, "{}", path.display());
            }
        }
        // The server's import takes the file as written by the old agent.
        let form = format!(
            "capture={}",
            text.bytes()
                .map(|b| if b.is_ascii_alphanumeric() {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                })
                .collect::<String>()
        );
        let req = Request::post("/live/_/import")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(form))
            .unwrap();
        let (st, body) = call(&app, req).await;
        assert!(
            st.is_success() || st.is_redirection(),
            "{}: {st} {body}",
            path.display()
        );
        seen += 1;
    }
    assert_eq!(seen, 4);
    // A version-1 push is upgraded too; versions never released are refused with a message.
    let c5: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data("captures-v1/c5-61.agent.json")).unwrap()).unwrap();
    let mut v1 = c5["snapshots"][0].clone();
    v1["host"] = "c5old".into();
    let (st, body) = call(&app, push("c5old", None, serde_json::to_vec(&v1).unwrap())).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    v1["version"] = 99.into();
    let (st, body) = call(&app, push("c5old", None, serde_json::to_vec(&v1).unwrap())).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert!(body.contains("protocol version 99 is not supported"), "{body}");
}

#[tokio::test]
async fn gzip_bodies_are_bounded_once_decompressed() {
    let (app, _) = live_app();
    // 17 MiB of JSON whitespace compresses to a few KiB: refused by the decompressed size.
    let bomb = gzip(&vec![b' '; SNAPSHOT_BYTES_MAX + (1 << 20)]);
    assert!(bomb.len() < 64 << 10);
    let (st, body) = call(&app, push("h1", Some("gzip"), bomb)).await;
    assert_eq!(st, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    let (st, body) = call(&app, push("h1", Some("br"), b"{}".to_vec())).await;
    assert_eq!(st, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{body}");
    let (st, body) = call(&app, push("h1", Some("gzip"), b"not gzip".to_vec())).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("gzip"), "{body}");
}

/// A TLS endpoint on loopback serving the irqscope app with a certificate for `localhost`
/// signed by a CA made here; returns the port, the CA's PEM and the app.
async fn tls_server() -> (u16, String, axum::Router, tokio::task::JoinHandle<()>) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    let config =
        rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
            )
            .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (app, _) = live_app();
    let served = app.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let acceptor = acceptor.clone();
            let app = served.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    app.clone().oneshot(req.map(Body::new))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (port, ca.pem(), app, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_pushes_over_tls_with_a_private_ca() {
    let (port, ca_pem, app, server) = tls_server().await;
    let dir = Scratch::new("agent-tls");
    let (ca_file, token_file) = (dir.join("ca.pem"), dir.join("token"));
    std::fs::write(&ca_file, &ca_pem).unwrap();
    std::fs::write(&token_file, TOKEN).unwrap();
    let agent = |host: &str, ca: Option<&Path>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_irqscope-agent"));
        c.args(["push", "--server", &format!("https://localhost:{port}"), "--host", host])
            .arg("--root")
            .arg(data("c5-cpuless-node"))
            .arg("--token-file")
            .arg(&token_file)
            .args(["--count", "1", "--interval-ms", "100", "--backoff-max-ms", "200"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(ca) = ca {
            c.arg("--ca-file").arg(ca);
        }
        KillOnDrop(c.spawn().unwrap())
    };
    // Trusting the CA: one push, then the agent exits 0.
    let mut trusted = agent("tls1", Some(&ca_file));
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = trusted.0.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the agent did not finish its push");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success());
    let (st, body) = call(&app, Request::get("/api/live/tls1").body(Body::empty()).unwrap()).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert!(body.contains("\"seq\":1"), "{body}");
    // Without it, the self-signed chain is refused and nothing arrives.
    let mut untrusted = agent("tls2", None);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(
        untrusted.0.try_wait().unwrap().is_none(),
        "push retries, never exits on refusal"
    );
    let _ = untrusted.0.kill();
    let mut err = String::new();
    std::io::Read::read_to_string(untrusted.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(err.contains("certificate") || err.contains("Unknown"), "{err}");
    let (st, _) = call(&app, Request::get("/api/live/tls2").body(Body::empty()).unwrap()).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    // A CA file that holds no certificate is one line and exit 2.
    std::fs::write(dir.join("empty.pem"), "nothing\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_irqscope-agent"))
        .args([
            "push",
            "--server",
            &format!("https://localhost:{port}"),
            "--host",
            "tls3",
        ])
        .arg("--ca-file")
        .arg(dir.join("empty.pem"))
        .arg("--token-file")
        .arg(&token_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no PEM CERTIFICATE") && err.trim().lines().count() == 1,
        "{err}"
    );
    server.abort();
}

/// An empty host tree under the temporary directory: the sysfs of a 2-CPU VM, no `/proc` yet.
fn two_cpu_host(name: &str) -> Scratch {
    let root = Scratch::new(&format!("agent-{name}"));
    let topo = irqscope::catalogue::get("vm-2vcpu-smt2").unwrap();
    irqscope::topology::import::export::write_sysfs(&topo, &root).unwrap();
    root
}

#[test]
fn a_large_host_refreshes_its_irq_files_in_turn() {
    use irqscope::live::collect::IRQ_FILES_PER_READING;
    let root = two_cpu_host("refresh");
    let n = 2 * IRQ_FILES_PER_READING + 88;
    let mut text = String::from("           CPU0       CPU1\n");
    for irq in 0..n {
        text.push_str(&format!("{irq:>4}: 1 0 PCI-MSIX 0-edge q{irq}\n"));
        let dir = root.join(format!("proc/irq/{irq}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("smp_affinity_list"), "0-1\n").unwrap();
    }
    std::fs::write(root.join("proc/interrupts"), text).unwrap();
    let mut c = Collector::new(&root, "big");
    let on_1 = |s: &Snapshot| s.irqs.iter().filter(|i| i.affinity.as_deref() == Some("1")).count();
    assert_eq!(on_1(&c.read(1).unwrap()), 0, "the first reading reads every IRQ");
    assert_eq!(c.irq_reads(), n as u64);
    for irq in 0..n {
        std::fs::write(root.join(format!("proc/irq/{irq}/smp_affinity_list")), "1\n").unwrap();
    }
    // The counts stay on CPU 0, inside both masks: only the rotation reads the files.
    for k in 1..=3 {
        assert_eq!(
            on_1(&c.read(1 + k as u64).unwrap()),
            n.min(k * IRQ_FILES_PER_READING),
            "reading {k} after the change refreshes its share"
        );
    }
    assert_eq!(c.irq_reads(), (n + 3 * IRQ_FILES_PER_READING) as u64);
}

/// A host of `n` IRQs on 2 CPUs, every IRQ's files saying CPU 0 ([`write_counts`] writes its
/// `/proc/interrupts`).
fn landing_host(name: &str, n: u32) -> Scratch {
    let root = two_cpu_host(name);
    for irq in 0..n {
        let dir = root.join(format!("proc/irq/{irq}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("smp_affinity_list"), "0-1\n").unwrap();
        std::fs::write(dir.join("effective_affinity_list"), "0\n").unwrap();
    }
    root
}

/// The `/proc/interrupts` of IRQs `0..n`: IRQ `k` counts `counts(k)` on (CPU 0, CPU 1).
fn write_counts(root: &Path, n: u32, counts: impl Fn(u32) -> (u64, u64)) {
    let mut text = String::from("           CPU0       CPU1\n");
    for irq in 0..n {
        let (c0, c1) = counts(irq);
        text.push_str(&format!("{irq:>4}: {c0:>10} {c1:>10}  PCI-MSIX {irq}-edge q{irq}\n"));
    }
    std::fs::write(root.join("proc/interrupts"), text).unwrap();
}

/// An IRQ moved to another CPU (irqbalance, a write to `smp_affinity_list`) counts there from
/// then on: the reading that first shows a count outside its effective affinity reads its
/// files at once, long before its turn in the rotation comes.
#[test]
fn an_irq_whose_interrupts_land_outside_its_mask_is_read_at_once() {
    use irqscope::live::collect::IRQ_FILES_PER_READING;
    let n = 4 * IRQ_FILES_PER_READING as u32;
    let root = landing_host("landing", n);
    let write = |counts: &dyn Fn(u32) -> (u64, u64)| write_counts(&root, n, counts);
    let (moved, quiet) = (n - 3, n - 2);
    let effective = |s: &Snapshot, irq: u32| s.irqs[irq as usize].effective.clone().unwrap();
    write(&|_| (5, 0));
    let mut c = Collector::new(&root, "land");
    assert_eq!(effective(&c.read(1).unwrap(), moved), "0");
    // Both IRQs move to CPU 1; only `moved` has had an interrupt since.
    for irq in [moved, quiet] {
        std::fs::write(root.join(format!("proc/irq/{irq}/effective_affinity_list")), "1\n").unwrap();
    }
    write(&|k| (5, u64::from(k == moved)));
    let before = c.irq_reads();
    let s = c.read(2).unwrap();
    assert_eq!(effective(&s, moved), "1", "read in the reading that shows the count");
    assert_eq!(effective(&s, quiet), "0", "its turn has not come");
    assert_eq!(c.irq_reads() - before, IRQ_FILES_PER_READING as u64 + 1);
    // Counting on CPU 1 now fits its files: no more re-reads for it.
    write(&|k| (5, 2 * u64::from(k == moved)));
    let before = c.irq_reads();
    c.read(3).unwrap();
    assert_eq!(c.irq_reads() - before, IRQ_FILES_PER_READING as u64);
}

/// A row whose counts never fit its files (here: counting on CPU 1 with an effective affinity
/// of CPU 0) is re-read at once, then after 2, 4, 8… readings, not on every one; and one reading re-reads
/// at most `LANDED_OUTSIDE_READS_MAX` IRQs however many land outside.
#[test]
fn landings_that_files_do_not_explain_back_off_and_are_bounded() {
    use irqscope::live::collect::{IRQ_FILES_PER_READING, LANDED_OUTSIDE_READS_MAX};
    // Fewer IRQs than the rotation: every reading reads them all, plus the re-reads.
    let n = IRQ_FILES_PER_READING as u32 / 2;
    let root = landing_host("backoff", n);
    let write = |counts: &dyn Fn(u32) -> (u64, u64)| write_counts(&root, n, counts);
    let mut c = Collector::new(&root, "backoff");
    let mut extra = Vec::new();
    for reading in 1..=41u64 {
        write(&|k| (1, if k == 7 { reading } else { 0 }));
        let before = c.irq_reads();
        c.read(reading).unwrap();
        if reading > 1 && c.irq_reads() - before > u64::from(n) {
            extra.push(reading);
        }
    }
    assert_eq!(extra, [2, 4, 8, 16, 32], "at once, then after 2, 4, 8 and 16 readings");

    let n = (IRQ_FILES_PER_READING + 2 * LANDED_OUTSIDE_READS_MAX) as u32;
    let root = landing_host("bound", n);
    let write = |counts: &dyn Fn(u32) -> (u64, u64)| write_counts(&root, n, counts);
    let mut c = Collector::new(&root, "bound");
    write(&|_| (1, 0));
    c.read(1).unwrap();
    // Every IRQ counts on CPU 1 from now on: the rotation's share plus the most re-reads.
    let most = (IRQ_FILES_PER_READING + LANDED_OUTSIDE_READS_MAX) as u64;
    let mut reads = Vec::new();
    for reading in 2..=12 {
        write(&|_| (1, reading));
        let before = c.irq_reads();
        c.read(reading).unwrap();
        reads.push(c.irq_reads() - before);
    }
    // Bounded while more land outside than one reading re-reads, then fewer as they back off.
    assert_eq!(reads[..3], [most; 3], "{reads:?}");
    assert!(reads.iter().all(|&r| r <= most), "{reads:?}");
    assert!(reads[10] < most, "{reads:?}");
}

/// An IRQ's node is fixed when its descriptor is made (`desc_smp_init()`): it is read for an IRQ
/// new to the agent and for a number given to another action, not on every refresh.
#[test]
fn the_node_file_is_read_once_per_action() {
    let root = two_cpu_host("node");
    let dir = root.join("proc/irq/30");
    std::fs::create_dir_all(&dir).unwrap();
    let interrupts = |name: &str| format!("           CPU0       CPU1\n  30: 1 0 PCI-MSIX 0-edge {name}\n");
    std::fs::write(root.join("proc/interrupts"), interrupts("nvme0q1")).unwrap();
    std::fs::write(dir.join("smp_affinity_list"), "0-1\n").unwrap();
    std::fs::write(dir.join("node"), "0\n").unwrap();
    let mut c = Collector::new(&root, "n");
    let node_and_affinity = |s: &Snapshot| (s.irqs[0].node, s.irqs[0].affinity.clone());
    assert_eq!(node_and_affinity(&c.read(1).unwrap()), (Some(0), Some("0-1".into())));
    // The same action: its affinity is refreshed, its node is not read again.
    std::fs::write(dir.join("smp_affinity_list"), "1\n").unwrap();
    std::fs::write(dir.join("node"), "1\n").unwrap();
    assert_eq!(node_and_affinity(&c.read(2).unwrap()), (Some(0), Some("1".into())));
    // The number now serves another device: a new descriptor, its node read.
    std::fs::write(root.join("proc/interrupts"), interrupts("eth0-rx-0")).unwrap();
    assert_eq!(node_and_affinity(&c.read(3).unwrap()), (Some(1), Some("1".into())));
}

/// An app whose push pacing runs on a clock the test moves.
fn clocked_app() -> (axum::Router, LiveState, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    use std::sync::atomic::{AtomicU64, Ordering};
    let now = std::sync::Arc::new(AtomicU64::new(1_000_000));
    let clock = now.clone();
    let (live, _) = LiveState::with_clock(
        Tokens::parse(TOKEN).unwrap(),
        None,
        std::sync::Arc::new(move || clock.load(Ordering::SeqCst)),
    )
    .unwrap();
    let app = web::app(AppState {
        live: live.clone(),
        ..Default::default()
    });
    (app, live, now)
}

fn gzip_body(snap: &Snapshot) -> Vec<u8> {
    let (mut json, mut gz) = (Vec::new(), Vec::new());
    encode_push_body(snap, &mut json, &mut gz).unwrap();
    gz
}

fn delta_push(host: &str, delta: &Delta) -> Request<Body> {
    let (mut json, mut gz) = (Vec::new(), Vec::new());
    encode_delta_body(delta, &mut json, &mut gz).unwrap();
    Request::post(format!("/api/live/{host}/snapshots"))
        .header(header::CONTENT_TYPE, DELTA_CONTENT_TYPE)
        .header(header::CONTENT_ENCODING, "gzip")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::from(gz))
        .unwrap()
}

/// Two readings of the c5 host: the second with counters moved, an affinity changed, an IRQ
/// gone and one new.
fn two_readings() -> (Snapshot, Snapshot) {
    let first = Collector::new(&data("c5-cpuless-node"), "c5").read(10_000).unwrap();
    let mut second = first.clone();
    second.taken_unix_ms = 11_000;
    let cpus = second.cpus.clone();
    for (k, irq) in second.irqs.iter_mut().enumerate() {
        if k % 2 == 0 {
            let cpu = cpus[k % cpus.len()];
            match irq.counts.iter_mut().find(|c| c.0 == cpu) {
                Some(c) => c.1 += 7 + k as u64,
                None => {
                    irq.counts.push((cpu, 3));
                    irq.counts.sort_unstable();
                }
            }
        }
    }
    let numbered: Vec<usize> = (0..second.irqs.len())
        .filter(|&k| second.irqs[k].label.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    assert!(numbered.len() >= 2, "the fixture has numbered IRQs");
    second.irqs[numbered[0]].affinity = Some("2-3".into());
    let mut new = second.irqs.remove(numbered[1]);
    new.label = "999".into();
    new.counts = vec![(cpus[0], 1)];
    second.irqs.insert(numbered[0] + 1, new);
    (first, second)
}

#[tokio::test]
async fn a_delta_push_keeps_the_state_a_full_push_keeps() {
    use std::sync::atomic::Ordering;
    let (first, second) = two_readings();
    let delta = Delta::between(&first, &second).expect("a delta");
    assert!(delta.labels.is_some() && !delta.irqs.is_empty() && !delta.counts.is_empty());
    let mut states = Vec::new();
    for use_delta in [false, true] {
        let (app, live, now) = clocked_app();
        let (st, body) = call(&app, push("c5", Some("gzip"), gzip_body(&first))).await;
        assert_eq!(st, StatusCode::OK, "{body}");
        now.fetch_add(1_000, Ordering::SeqCst);
        let req = if use_delta {
            delta_push("c5", &delta)
        } else {
            push("c5", Some("gzip"), gzip_body(&second))
        };
        let (st, body) = call(&app, req).await;
        assert_eq!(st, StatusCode::OK, "{body}");
        assert!(body.contains(&format!("\"version\":{PROTOCOL_VERSION}")), "{body}");
        let (st, json) = call(&app, Request::get("/api/live/c5").body(Body::empty()).unwrap()).await;
        assert_eq!(st, StatusCode::OK, "{json}");
        states.push((live.hub().host("c5").unwrap(), json));
    }
    let ((full, full_json), (rebuilt, rebuilt_json)) = (&states[0], &states[1]);
    assert_eq!(rebuilt.snapshot, second);
    assert_eq!(rebuilt.snapshot, full.snapshot);
    assert_eq!(
        (
            rebuilt.seq,
            &rebuilt.rates,
            &rebuilt.history,
            rebuilt.received_ms,
            rebuilt.next_push_ms
        ),
        (
            full.seq,
            &full.rates,
            &full.history,
            full.received_ms,
            full.next_push_ms
        )
    );
    assert!(rebuilt.rates.is_some(), "rates from the base reading");
    assert_eq!(rebuilt_json, full_json);
}

#[tokio::test]
async fn a_delta_against_another_base_is_409_and_version_2_pushes_still_land() {
    use std::sync::atomic::Ordering;
    let (first, second) = two_readings();
    let delta = Delta::between(&first, &second).unwrap();
    let (app, live, now) = clocked_app();
    // No such host yet (a restarted server): the base cannot match.
    let (st, body) = call(&app, delta_push("c5", &delta)).await;
    assert_eq!(st, StatusCode::CONFLICT, "{body}");
    assert!(body.starts_with(BASE_MISMATCH), "{body}");
    // An old agent's version-2 push is taken as it is.
    let mut v2: serde_json::Value = serde_json::to_value(&first).unwrap();
    v2["version"] = 2.into();
    let (st, body) = call(&app, push("c5", None, serde_json::to_vec(&v2).unwrap())).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(live.hub().host("c5").unwrap().snapshot, first);
    // Another reading landed since the delta's base.
    now.fetch_add(1_000, Ordering::SeqCst);
    let other = Snapshot {
        taken_unix_ms: 10_500,
        ..first.clone()
    };
    let (st, body) = call(&app, push("c5", Some("gzip"), gzip_body(&other))).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    now.fetch_add(1_000, Ordering::SeqCst);
    let (st, body) = call(&app, delta_push("c5", &delta)).await;
    assert_eq!(st, StatusCode::CONFLICT, "{body}");
    assert!(body.starts_with(BASE_MISMATCH), "{body}");
    assert_eq!(live.hub().host("c5").unwrap().seq, 2, "nothing stored");
    // A delta that names an IRQ the base lacks is bad input, not a conflict; and a delta
    // needs a token like any push.
    let mut wrong = Delta::between(&other, &second).unwrap();
    wrong.counts.push(("12345".into(), vec![(0, 1)]));
    let (st, body) = call(&app, delta_push("c5", &wrong)).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{body}");
    let mut anonymous = delta_push("c5", &delta);
    anonymous.headers_mut().remove(header::AUTHORIZATION);
    let (st, _) = call(&app, anonymous).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
}

/// `app` served on a loopback port: the port and the server's task.
async fn serve_on_loopback(app: axum::Router) -> (u16, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (port, server)
}

/// The agent pushing the c5 machine to loopback `port` as `host`: `count` readings
/// `interval_ms` apart (backing off to twice that), its stderr piped, its token in a file of a
/// directory of its own (returned, for the caller to remove).
fn spawn_push_agent(port: u16, host: &str, count: u32, interval_ms: u64) -> (KillOnDrop, Scratch) {
    let dir = Scratch::new(&format!("agent-{host}"));
    let token_file = dir.join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let agent = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_irqscope-agent"))
            .args(["push", "--server", &format!("http://127.0.0.1:{port}"), "--host", host])
            .arg("--root")
            .arg(data("c5-cpuless-node"))
            .arg("--token-file")
            .arg(&token_file)
            .args(["--count", &count.to_string(), "--interval-ms", &interval_ms.to_string()])
            .args(["--backoff-max-ms", &(2 * interval_ms).to_string()])
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    (agent, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_sends_deltas_and_falls_back_when_the_base_moved() {
    let (app, live) = live_app();
    let (port, server) = serve_on_loopback(app.clone()).await;
    let (mut agent, _dir) = spawn_push_agent(port, "d1", 6, 300);
    let deadline = Instant::now() + Duration::from_secs(60);
    // After the agent's second push (a delta), another reading lands for the host: the
    // agent's next delta has the wrong base.
    while live.hub().host("d1").is_none_or(|h| h.seq < 2) {
        assert!(Instant::now() < deadline, "the agent did not push");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut other = live.hub().host("d1").unwrap().snapshot.clone();
    other.taken_unix_ms += 1;
    loop {
        let (st, body) = call(&app, push("d1", Some("gzip"), gzip_body(&other))).await;
        match st {
            StatusCode::OK => break,
            // The server paces the host's pushes, ours included.
            StatusCode::TOO_MANY_REQUESTS => tokio::time::sleep(Duration::from_millis(20)).await,
            _ => panic!("{st} {body}"),
        }
    }
    let status = loop {
        if let Some(s) = agent.0.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the agent did not finish its pushes");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut err = String::new();
    std::io::Read::read_to_string(agent.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(err.contains("another base reading"), "{err}");
    let last = live.hub().host("d1").unwrap();
    assert_eq!(last.seq, 7, "six pushes and ours: {err}");
    // What the deltas rebuilt is what the agent reads.
    let direct = Collector::new(&data("c5-cpuless-node"), "d1")
        .read(last.snapshot.taken_unix_ms)
        .unwrap();
    assert_eq!(last.snapshot, direct);
    server.abort();
}

#[test]
fn the_token_file_is_bounded() {
    for (file, expect) in [
        ("/dev/zero", "larger than 4096 bytes"),
        ("/nonexistent/token", "reading"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_irqscope-agent"))
            .args([
                "push",
                "--server",
                "http://127.0.0.1:9",
                "--host",
                "t1",
                "--token-file",
                file,
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{file}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expect) && err.trim().lines().count() == 1, "{file}: {err}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_irqscope-agent"))
        .args([
            "push",
            "--server",
            "https://localhost:9",
            "--host",
            "t1",
            "--ca-file",
            "/dev/zero",
        ])
        .env("IRQSCOPE_AGENT_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("larger than 1048576 bytes") && err.trim().lines().count() == 1,
        "{err}"
    );
}

/// What a server of the release before deltas (protocol 2) was sent: each push's version and
/// content type, and the snapshots it took.
#[derive(Clone, Default)]
struct Version2Server {
    pushes: std::sync::Arc<std::sync::Mutex<Vec<(u64, String)>>>,
    taken: std::sync::Arc<std::sync::Mutex<Vec<Snapshot>>>,
}

/// That server's ingest: versions 1 and 2 taken and answered `{"seq": N}` (no version, as that
/// release answered), others refused with 400 and that release's words.
async fn version_2_push(
    axum::extract::State(old): axum::extract::State<Version2Server>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> (StatusCode, String) {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mut json = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&body[..]), &mut json).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let version = value["version"].as_u64().unwrap_or(0);
    old.pushes.lock().unwrap().push((version, content_type.clone()));
    if content_type != "application/json" {
        return (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("content type {content_type:?}\n"),
        );
    }
    if !(1..=2).contains(&version) {
        return (
            StatusCode::BAD_REQUEST,
            format!("bad snapshot: protocol version {version} is not supported (this server reads 1 to 2) at line 1 column 12\n"),
        );
    }
    let mut taken = old.taken.lock().unwrap();
    taken.push(serde_json::from_value(value).unwrap());
    (StatusCode::OK, format!("{{\"seq\":{}}}", taken.len()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_pushes_to_a_version_2_server_once_it_says_so() {
    let old = Version2Server::default();
    let app = axum::Router::new()
        .route("/api/live/{host}/snapshots", axum::routing::post(version_2_push))
        .with_state(old.clone());
    let (port, server) = serve_on_loopback(app).await;
    let (mut agent, _dir) = spawn_push_agent(port, "v2", 3, 100);
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = agent.0.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = agent.0.kill();
            break None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut err = String::new();
    std::io::Read::read_to_string(agent.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    let pushes = old.pushes.lock().unwrap().clone();
    assert!(
        status.is_some_and(|s| s.success()),
        "the agent did not finish its 3 pushes within 30 s ({status:?}); the server saw {pushes:?}\n{err}"
    );
    assert!(err.contains("the server reads protocol versions up to 2"), "{err}");
    // One refused push of this build's version, then full version-2 pushes only: no deltas.
    let json = "application/json".to_string();
    assert_eq!(
        pushes,
        [
            (u64::from(PROTOCOL_VERSION), json.clone()),
            (2, json.clone()),
            (2, json.clone()),
            (2, json)
        ]
    );
    // What that server took is this build's reading: read back (and upgraded as any version-2
    // snapshot is), it is what the agent reads.
    let taken = old.taken.lock().unwrap();
    let last = taken.last().unwrap();
    let direct = Collector::new(&data("c5-cpuless-node"), "v2")
        .read(last.taken_unix_ms)
        .unwrap();
    assert_eq!(*last, direct);
    server.abort();
}

/// The collector keeps the acknowledged reading and exchanges buffers with it instead of
/// copying, and writes an IRQ's file fields only when they changed since the reading a buffer
/// holds: whichever buffer a reading starts from, and whether readings are acknowledged,
/// forgotten or fail half way, it must equal a snapshot built from scratch from the same files.
#[test]
fn a_reading_does_not_depend_on_the_buffer_it_updates() {
    use irqscope::live::collect;
    let root = two_cpu_host("swap");
    const IRQS: u32 = 40;
    let affinity = |irq: u32, list: &str| {
        let dir = root.join(format!("proc/irq/{irq}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("smp_affinity_list"), format!("{list}\n")).unwrap();
        std::fs::write(dir.join("effective_affinity_list"), format!("{}\n", &list[..1])).unwrap();
    };
    let lists = ["0-1", "1", "0", "1-1", "0,1"];
    // Which IRQs are listed (the last ten only once a change lists them), their action
    // names, their counters.
    let mut present: Vec<bool> = (0..IRQS).map(|irq| irq < IRQS - 10).collect();
    let mut names: Vec<String> = (0..IRQS).map(|i| format!("q{i}")).collect();
    let mut counts = vec![1u64; IRQS as usize];
    let write_interrupts = |present: &[bool], names: &[String], counts: &[u64]| {
        let mut text = String::from("           CPU0       CPU1\n");
        for irq in 0..IRQS {
            if present[irq as usize] {
                let c = counts[irq as usize];
                text.push_str(&format!(
                    "{:>4}: {c} {} PCI-MSIX {irq}-edge {}\n",
                    30 + irq,
                    c / 2,
                    names[irq as usize]
                ));
            }
        }
        text.push_str("LOC: 100 200 Local timer interrupts\n");
        std::fs::write(root.join("proc/interrupts"), text).unwrap();
    };
    for irq in 0..IRQS {
        affinity(30 + irq, lists[irq as usize % lists.len()]);
    }
    write_interrupts(&present, &names, &counts);
    let mut plain = Collector::new(&root, "h");
    let mut acked = Collector::new(&root, "h");
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let (mut checked, mut deltas) = (0, 0);
    for reading in 1..=40u64 {
        // A bad affinity file on reading 17 fails both collectors half way; it is fixed after.
        // On reading 29 every IRQ gets a new name and a bad last line fails the parse after
        // every row was written: the next reading keeps the new names, which the rows then
        // hold already but no snapshot does.
        let bad = reading == 17 || reading == 29;
        if reading == 17 {
            std::fs::write(root.join("proc/irq/35/smp_affinity_list"), "zz\n").unwrap();
        }
        if reading == 29 {
            for (irq, name) in names.iter_mut().enumerate() {
                *name = format!("f{irq}");
            }
            write_interrupts(&present, &names, &counts);
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(root.join("proc/interrupts"))
                .unwrap();
            f.write_all(b"no colon here\n").unwrap();
        }
        let (a, b) = (plain.read_ref(reading).cloned(), acked.read_ref(reading).cloned());
        if bad {
            assert!(a.is_err() && b.is_err(), "a bad file fails the reading");
            affinity(35, "0");
        } else {
            let want = collect::build_snapshot(
                &collect::read_proc(&root).unwrap(),
                &a.as_ref().unwrap().topology,
                "h",
                reading,
            )
            .unwrap();
            assert_eq!(a.unwrap(), want, "reading {reading}, the collector that keeps no base");
            assert_eq!(b.unwrap(), want, "reading {reading}, the collector that acknowledges");
            // The collector's delta skips rows it did not write since the acknowledged
            // reading; it must be the one made by comparing every row.
            let by_rows = acked
                .acknowledged()
                .and_then(|base| Delta::between(base, acked.last_reading()));
            assert_eq!(acked.delta(), by_rows, "reading {reading}, the delta");
            deltas += usize::from(by_rows.is_some_and(|d| !d.irqs.is_empty()));
            assert_eq!(plain.delta(), None);
            checked += 1;
            match next(5) {
                0 => acked.forget_acknowledged(),
                1 => {}
                _ => {
                    acked.acknowledge();
                    assert_eq!(acked.acknowledged(), Some(&want));
                }
            }
        }
        // Change a few things for the next reading.
        for _ in 0..next(6) {
            let irq = next(u64::from(IRQS)) as u32;
            match next(4) {
                0 => affinity(30 + irq, lists[next(lists.len() as u64) as usize]),
                1 => present[irq as usize] = !present[irq as usize],
                2 => names[irq as usize] = format!("r{}", next(1000)),
                _ => counts[irq as usize] += 1 + next(50),
            }
        }
        write_interrupts(&present, &names, &counts);
    }
    assert_eq!(checked, 38);
    assert!(deltas >= 10, "{deltas} deltas that carry an IRQ in full");
    assert_eq!(plain.acknowledged(), None);
}
