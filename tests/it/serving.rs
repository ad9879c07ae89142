//! Hostile work and fair service, against the real `irqscope serve` on loopback: a request's
//! work is estimated before it starts and refused over the budget; work in flight stops when
//! its client goes away or its deadline passes, read from the server's own CPU time
//! (`/proc/PID/stat`); heavy requests are limited per client address and in all; and idle
//! connections from one address leave the server to the others.

use crate::common::process::{free_port, KillOnDrop};
use irqscope::web::server::{serve, Limits};
use irqscope::web::{app, AppState};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The sweep of the report: 8,192 CPUs, 256 devices of 256 vectors, every variant, 4,096
/// counters, in 68 bytes and no token.
const HOSTILE: &str = "/sweep/json?topologies=synthetic-8192&mixes=256x256&variants=all&counters=0..4096";

/// A sweep of about half a minute of CPU in release (12,288 short runs), several minutes in a
/// debug build: long enough to be cut in the middle, each run short enough to stop at once.
const LONG: &str =
    "/sweep/json?topologies=synthetic-1024&mixes=64x64&variants=rotation,rotation-ohcl,rotation-v1r&counters=0..4096";

/// Most CPU an idle server may spend in a second (its timers; a clock tick is 10 ms).
const QUIET_CPU_MS: u64 = 50;

struct Server {
    child: KillOnDrop,
    port: u16,
    ms_per_tick: u64,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let port = free_port();
        let child = KillOnDrop(
            Command::new(env!("CARGO_BIN_EXE_irqscope"))
                .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
                .args(args)
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "irqscope serve did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let tck = Command::new("getconf").arg("CLK_TCK").output().unwrap();
        let hz: u64 = String::from_utf8_lossy(&tck.stdout).trim().parse().unwrap();
        Server {
            child,
            port,
            ms_per_tick: 1000 / hz,
        }
    }

    /// The server's CPU time so far (user + system, every thread, finished ones included).
    fn cpu_ms(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.0.id())).unwrap();
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        // Fields 14 and 15 of proc(5), counted from the state (field 3).
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        ticks * self.ms_per_tick
    }

    /// CPU spent over the next second.
    fn cpu_over_a_second(&self) -> u64 {
        let before = self.cpu_ms();
        std::thread::sleep(Duration::from_secs(1));
        self.cpu_ms() - before
    }

    /// Wait until the server has spent `ms` of CPU more than `from` (its work is running).
    fn wait_busy(&self, from: u64, ms: u64) {
        let t0 = Instant::now();
        while self.cpu_ms() < from + ms {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "the work never started: {} ms of CPU",
                self.cpu_ms() - from
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A connection from `source` (a loopback address) with `path` asked and nothing read.
    fn send_from(&self, source: Ipv4Addr, path: &str) -> TcpStream {
        let socket = socket_from(source, self.port);
        let mut s = socket;
        write!(s, "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").unwrap();
        s
    }

    fn send(&self, path: &str) -> TcpStream {
        self.send_from(Ipv4Addr::LOCALHOST, path)
    }
}

/// A blocking TCP connection to loopback `port` from `source` (all of 127.0.0.0/8 is loopback).
fn socket_from(source: Ipv4Addr, port: u16) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let s = rt.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::from((source, 0))).unwrap();
        socket
            .connect(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
            .await
            .unwrap()
    });
    let s = s.into_std().unwrap();
    s.set_nonblocking(false).unwrap();
    s
}

/// The whole answer on a `Connection: close` request: status, head, body.
fn answer(mut s: TcpStream, within: Duration) -> (u16, String, String) {
    s.set_read_timeout(Some(within)).unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got)
        .unwrap_or_else(|e| panic!("no answer within {within:?}: {e}"));
    let text = String::from_utf8_lossy(&got).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not HTTP: {text:?}"));
    (status, head.to_string(), body.to_string())
}

/// No answer yet after `wait`: the request is being worked on.
fn still_working(s: &mut TcpStream, wait: Duration) -> bool {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut b = [0u8; 1];
    matches!(s.read(&mut b), Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut))
}

#[test]
fn the_hostile_sweep_is_refused_with_its_estimate_before_any_work() {
    let server = Server::start(&[]);
    let before = server.cpu_ms();
    let (status, _, body) = answer(server.send(HOSTILE), Duration::from_secs(10));
    assert_eq!(status, 422, "{body}");
    // 4 variants that use the counter × 4,096 counters, 2 variants and a proposal once.
    assert!(
        body.contains("16,387 runs × 8,192 CPUs × 65,536 groups (256 devices)"),
        "{body}"
    );
    assert!(
        body.contains("Run it on the command line instead: irqscope sweep"),
        "{body}"
    );
    assert!(body.contains("--topologies synthetic-8192"), "{body}");
    // The refusal cost a parse and an estimate; nothing runs afterwards.
    let spent = server.cpu_ms() - before;
    assert!(spent < 500, "the refusal took {spent} ms of CPU");
    let quiet = server.cpu_over_a_second();
    assert!(
        quiet <= QUIET_CPU_MS,
        "{quiet} ms of CPU in the second after the refusal"
    );
}

#[test]
fn work_stops_when_its_client_goes_away() {
    let server = Server::start(&["--request-cpu-ms", "3600000"]);
    let before = server.cpu_ms();
    let mut s = server.send(LONG);
    server.wait_busy(before, 500);
    // Minutes of work left (more in a debug build) when the client goes away.
    assert!(
        still_working(&mut s, Duration::from_millis(100)),
        "the sweep already answered"
    );
    drop(s);
    std::thread::sleep(Duration::from_secs(1));
    let after = server.cpu_over_a_second();
    assert!(
        after <= QUIET_CPU_MS,
        "{after} ms of CPU in the second but one after the client left"
    );
}

#[test]
fn work_stops_at_its_deadline() {
    let server = Server::start(&["--request-cpu-ms", "3600000", "--request-timeout-ms", "1500"]);
    let t0 = Instant::now();
    let (status, _, body) = answer(server.send(LONG), Duration::from_secs(10));
    let took = t0.elapsed();
    assert_eq!(status, 408, "{body}");
    assert!(
        took >= Duration::from_millis(1400) && took < Duration::from_secs(5),
        "answered after {took:?}"
    );
    std::thread::sleep(Duration::from_secs(1));
    let after = server.cpu_over_a_second();
    assert!(after <= QUIET_CPU_MS, "{after} ms of CPU a second after the deadline");
}

#[test]
fn heavy_requests_are_limited_per_address_and_in_all() {
    let server = Server::start(&["--request-cpu-ms", "3600000"]);
    let a = Ipv4Addr::new(127, 0, 0, 1);
    let mut held: Vec<TcpStream> = (0..2).map(|_| server.send_from(a, LONG)).collect();
    for s in &mut held {
        assert!(
            still_working(s, Duration::from_millis(300)),
            "a heavy request was not taken"
        );
    }
    let (status, head, body) = answer(server.send_from(a, LONG), Duration::from_secs(10));
    assert_eq!(status, 503, "{body}");
    assert!(head.to_ascii_lowercase().contains("\r\nretry-after: 2"), "{head}");
    assert!(body.contains("from this address"), "{body}");
    // Another address still gets its share, until the server's total is reached.
    let b = Ipv4Addr::new(127, 0, 0, 2);
    for _ in 0..2 {
        let mut s = server.send_from(b, LONG);
        assert!(
            still_working(&mut s, Duration::from_millis(300)),
            "a second address was refused"
        );
        held.push(s);
    }
    let (status, _, body) = answer(
        server.send_from(Ipv4Addr::new(127, 0, 0, 3), LONG),
        Duration::from_secs(10),
    );
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("busy with 4 heavy requests"), "{body}");
    // Light pages are answered beside them.
    let (status, _, _) = answer(
        server.send_from(Ipv4Addr::new(127, 0, 0, 3), "/static/style.css"),
        Duration::from_secs(5),
    );
    assert_eq!(status, 200);
    // Everyone leaves: all four stop.
    held.clear();
    std::thread::sleep(Duration::from_secs(1));
    let after = server.cpu_over_a_second();
    assert!(after <= QUIET_CPU_MS, "{after} ms of CPU after every client left");
}

/// 5,000 connections from one address that say nothing (a pool of 512): a second address's
/// `GET /` is answered within a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_from_one_address_leave_room_for_another() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, app(AppState::default()), Limits::default(), async {
        let _ = stopped.await;
    }));
    let mut idle = Vec::with_capacity(5_000);
    for _ in 0..5_000 {
        idle.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from(([127, 0, 0, 2], 0))).unwrap();
    let t0 = Instant::now();
    let mut s = socket.connect(addr).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(1), s.read_to_end(&mut got))
        .await
        .unwrap_or_else(|_| panic!("GET / from a second address took over 1 s"))
        .unwrap();
    let took = t0.elapsed();
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200"), "{}", &text[..text.len().min(200)]);
    assert!(text.contains("</html>"), "the page came whole");
    assert!(took < Duration::from_secs(1), "{took:?}");
    // The pool kept its cap: the first address's oldest connections were closed for newer
    // ones, at most `CONNECTIONS_MAX` of them are still open.
    let mut b = [0u8; 1];
    let open = idle
        .iter()
        .filter(|c| matches!(c.try_read(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock))
        .count();
    assert!(
        open <= irqscope::web::server::CONNECTIONS_MAX,
        "{open} of the idle connections still open"
    );
    drop(idle);
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(15), server)
        .await
        .unwrap()
        .unwrap();
}
