//! TLS termination in front of `irqscope serve` as `docs/tls.md` documents it: the nginx site of
//! that file, run with the test's ports and a certificate for `localhost` signed by a CA made
//! here; the agent pushes over https through it, and the host page and an SSE event of a later
//! push come back through it. Needs `/usr/sbin/nginx` (Debian `nginx-light`): skipped with the
//! reason printed when it is missing, a failure when `IRQSCOPE_REQUIRE_TOOLS=1`.

use crate::common::fs::Scratch;
use crate::common::process::{free_port, KillGroupOnDrop, KillOnDrop};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const NGINX: &str = "/usr/sbin/nginx";
const TOKEN: &str = "tls-proxy-test-token-0123456789";

/// The nginx site of `docs/tls.md` (its one `nginx` block).
fn documented_site() -> String {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/tls.md")).unwrap();
    let start = doc.find("```nginx\n").expect("docs/tls.md has an nginx block") + "```nginx\n".len();
    let len = doc[start..].find("```").unwrap();
    doc[start..start + len].to_string()
}

/// Replace `from` (which must be in `text`) by `to`.
fn swap(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "docs/tls.md no longer holds {from:?}");
    text.replace(from, to)
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// A CA and a certificate for `localhost` it signed: (CA PEM, certificate PEM, key PEM).
fn test_ca() -> (String, String, String) {
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
    (ca.pem(), leaf.pem(), leaf_key.serialize_pem())
}

fn wait_listening(port: u16, what: &str) {
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < Duration::from_secs(20), "{what} did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A TLS client trusting only `ca_pem`, to `localhost:port`.
fn tls_connect(port: u16, ca_pem: &str) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    rustls::StreamOwned::new(conn, tcp)
}

/// `GET path` over TLS with `Connection: close`: the whole response, head and body.
fn https_get(port: u16, ca_pem: &str, path: &str) -> String {
    let mut s = tls_connect(port, ca_pem);
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = Vec::new();
    // nginx may close without a TLS close_notify; what was read is the answer.
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// One agent push over https through the proxy (`--count 1`); panics unless it exits 0.
fn push_once(port: u16, host: &str, ca_file: &Path, token_file: &Path) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/live/c5-cpuless-node");
    let mut agent = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_irqscope-agent"))
            .args(["push", "--server", &format!("https://localhost:{port}"), "--host", host])
            .arg("--root")
            .arg(&fixture)
            .arg("--token-file")
            .arg(token_file)
            .arg("--ca-file")
            .arg(ca_file)
            .args(["--count", "1", "--interval-ms", "100", "--backoff-max-ms", "200"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = agent.0.try_wait().unwrap() {
            assert!(status.success(), "the agent's push through nginx failed: {status}");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the agent did not finish its push through nginx"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_documented_nginx_site_carries_pushes_pages_and_events() {
    if !Path::new(NGINX).exists() {
        assert!(
            std::env::var_os("IRQSCOPE_REQUIRE_TOOLS").is_none(),
            "{NGINX} is required (IRQSCOPE_REQUIRE_TOOLS is set): apt-get install nginx-light"
        );
        println!("skipped: {NGINX} not found (apt-get install nginx-light)");
        return;
    }
    let dir = Scratch::new("tls-proxy");
    let (ca, cert, key) = test_ca();
    let (ca_file, cert_file, key_file) = (dir.join("ca.pem"), dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&ca_file, &ca).unwrap();
    std::fs::write(&cert_file, &cert).unwrap();
    std::fs::write(&key_file, &key).unwrap();
    std::fs::write(dir.join("tokens"), format!("{TOKEN}\n")).unwrap();
    std::fs::write(dir.join("token"), TOKEN).unwrap();

    let (port, nport) = (free_port(), free_port());
    let _server = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_irqscope"))
            .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
            .args(["--live-trusted-proxy", "127.0.0.1", "--live-tokens"])
            .arg(dir.join("tokens"))
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_listening(port, "irqscope serve");

    let site = documented_site();
    let site = swap(&site, "server 127.0.0.1:8080;", &format!("server 127.0.0.1:{port};"));
    let site = swap(&site, "listen 443 ssl;", &format!("listen 127.0.0.1:{nport} ssl;"));
    let site = swap(
        &site,
        "/etc/ssl/irqscope/fullchain.pem",
        &cert_file.display().to_string(),
    );
    let site = swap(&site, "/etc/ssl/irqscope/privkey.pem", &key_file.display().to_string());
    // The test's own frame around the site: foreground, files under the test directory (as
    // root, workers would run as `nobody`, who may not write there).
    let d = dir.display();
    let conf = format!(
        "{user}daemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\nevents {{ worker_connections 256; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  \
         fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n{site}\n}}\n",
        user = if running_as_root() { "user root;\n" } else { "" },
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let nginx = KillGroupOnDrop(
        Command::new(NGINX)
            .process_group(0)
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_listening(nport, "nginx");

    // The agent's push over https, trusting the test CA.
    push_once(nport, "tls-web1", &ca_file, &dir.join("token"));
    let page = https_get(nport, &ca, "/live/tls-web1");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("tls-web1"), "the host page through nginx: {page}");

    // An SSE stream through nginx: the latest event at once, then the next push's event as it
    // happens (nginx buffering would hold it back).
    let mut sse = tls_connect(nport, &ca);
    write!(sse, "GET /live/tls-web1/events HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 16384];
    let read_until = |sse: &mut rustls::StreamOwned<rustls::ClientConnection, TcpStream>,
                      got: &mut Vec<u8>,
                      buf: &mut [u8],
                      want: &str| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !String::from_utf8_lossy(got).contains(want) {
            assert!(
                Instant::now() < deadline,
                "no {want:?} through nginx: {}",
                String::from_utf8_lossy(got)
            );
            let n = sse.read(buf).expect("reading the stream through nginx");
            assert!(n > 0, "stream closed: {}", String::from_utf8_lossy(got));
            got.extend_from_slice(&buf[..n]);
        }
    };
    read_until(&mut sse, &mut got, &mut buf, "id: 1\n");
    let head = String::from_utf8_lossy(&got).into_owned();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase().contains("content-type: text/event-stream"),
        "{head}"
    );
    // The server paces pushes per host (100 ms); the agent's start-up is longer than that.
    push_once(nport, "tls-web1", &ca_file, &dir.join("token"));
    read_until(&mut sse, &mut got, &mut buf, "id: 2\n");
    assert!(String::from_utf8_lossy(&got).contains("event: snapshot"));
    drop(sse);
    // nginx forks its workers: the whole group goes, none is left listening.
    let group = nginx.0.id();
    assert!(
        !KillGroupOnDrop::members(group).is_empty(),
        "nginx's group is not where the test looks"
    );
    drop(nginx);
    let t0 = Instant::now();
    while !KillGroupOnDrop::members(group).is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "nginx processes left: {:?}",
            KillGroupOnDrop::members(group)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
