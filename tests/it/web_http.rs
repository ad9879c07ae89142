//! The dashboard over HTTP, through `web::app(state).oneshot(request)`: every route, every
//! error path (4xx with a message, never 5xx), escaping, the CSP header, permalink round trips.

use axum::http::{header, StatusCode};
use irqscope::scenario::payloads::{CompareSpec, SideSpec};
use irqscope::scenario::permalink;
use irqscope::scenario::spec::{DeviceSpec, ScenarioSpec, TopologyRef};
use serde_json::Value;

use crate::common;
use common::http::{get, post, Reply};

fn link_of<T: serde::Serialize>(spec: &T) -> String {
    permalink::encode(spec).unwrap()
}

fn seed_spec(variant: &str) -> ScenarioSpec {
    ScenarioSpec {
        variant: variant.into(),
        ..ScenarioSpec::new(
            TopologyRef::Preset("azure-l96as-v4".into()),
            vec![DeviceSpec {
                pre: 1,
                name: Some("nvme".into()),
                ..DeviceSpec::new(6, 62)
            }],
        )
    }
}

/// A 4xx with a non-empty plain-text message containing `needle`.
fn assert_bad(r: &Reply, needle: &str) {
    assert!(r.status.is_client_error(), "status {} body {}", r.status, r.body);
    assert!(
        r.body.to_lowercase().contains(&needle.to_lowercase()),
        "{:?} not in {:?}",
        needle,
        r.body
    );
}

fn csp(r: &Reply) -> &str {
    r.headers
        .get(header::CONTENT_SECURITY_POLICY)
        .map(|v| v.to_str().unwrap())
        .unwrap_or("")
}

#[tokio::test]
async fn index_renders_the_seed_scenario_with_csp() {
    let r = get("/").await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(csp(&r).contains("script-src 'self'"), "{:?}", r.headers);
    assert!(r.body.contains("class=\"heatmap\""));
    assert!(r.body.contains("class=\"numa\""));
    assert!(r.body.contains("class=\"strip\""));
    assert_eq!(r.body.matches("<rect class=\"cpu").count(), 96);
    assert!(r.text().contains("serve all 6 devices"), "summary missing");
    assert!(r.body.contains("href=\"/s/v1."));
}

#[tokio::test]
async fn index_with_query_blank_and_views() {
    let r = get("/?preset=azure-l96as-v4&devices=2x8:pre=1&variant=rotation&metric=hot&node=1").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body.matches("<rect class=\"cpu").count(), 48, "zoomed to node 1");
    let r = get("/?preset=blank").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body.contains("custom"));
    assert_bad(&get("/?preset=no-such-machine").await, "unknown topology preset");
    assert_bad(&get("/?devices=6xq").await, "not a number");
    assert_bad(&get("/?metric=bogus").await, "unknown metric");
    assert_bad(&get("/?node=x").await, "not a number");
    assert_bad(&get("/?variant=cluster-next").await, "unknown variant");
    // The three model names reach the spec together (one flattened group), the counter beside
    // them still as a number.
    let r =
        get("/?preset=vm-8vcpu-smt2&devices=2x4:pre=1&variant=rotation&sort=heap-v6.9&effective=first-cpu&counter=3")
            .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let spec = r#""variant":"rotation","sort":"heap-v6.9","effective":"first-cpu","spread_counter":3"#;
    assert!(r.body.contains(spec), "the page's spec lacks {spec}");
    assert_bad(&get("/?sort=heap-v7").await, "unknown sort");
    assert_bad(&get("/?effective=gic-v9").await, "unknown effective");
    assert_eq!(get("/?counter=x").await.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn permalink_round_trip_matches_the_api() {
    let spec = seed_spec("rotation");
    let link = link_of(&spec);
    let api: Value =
        serde_json::from_str(&post("/api/simulate", serde_json::to_vec(&spec).unwrap()).await.body).unwrap();
    let page = get(&format!("/s/{link}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(csp(&page).contains("default-src 'none'"));
    let text = get(&format!("/s/{link}/text")).await;
    assert_eq!(text.status, StatusCode::OK);
    assert!(text.headers[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    assert!(
        text.body.contains(&format!("http://irqscope.test/s/{link}")),
        "{}",
        text.body
    );
    assert!(text.body.contains("--variant rotation"));
    let summary = api["metrics"]["summary"].as_array().unwrap();
    assert_eq!(summary.len(), 3);
    for line in summary {
        let line = line.as_str().unwrap();
        // The text twin wraps at 72 columns; compare words.
        let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words(&text.body).contains(&words(line)), "{line:?} not in text twin");
        assert!(page.text().contains(line), "{line:?} not on the page");
    }
    let json: Value = serde_json::from_str(&get(&format!("/s/{link}/json")).await.body).unwrap();
    assert_eq!(json["devices"], api["devices"]);
    assert_eq!(json["metrics"], api["metrics"]);
    assert_eq!(json["permalink"], Value::String(link.clone()));
    assert_eq!(api["scenario"]["variant"], "rotation", "the variant is pinned");
}

#[tokio::test]
async fn fragment_returns_html_and_the_permalink() {
    let spec = seed_spec("pre-cluster");
    let r = post("/fragment?metric=devices", serde_json::to_vec(&spec).unwrap()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let link = r.headers["x-permalink"].to_str().unwrap();
    assert_eq!(permalink::decode::<ScenarioSpec>(link).unwrap(), spec);
    assert!(r.body.contains("class=\"heatmap\"") && !r.body.contains("<html"));
    assert_bad(&post("/fragment", "{").await, "bad JSON");
    assert_bad(
        &post("/fragment?metric=x", serde_json::to_vec(&spec).unwrap()).await,
        "unknown metric",
    );
}

#[tokio::test]
async fn user_strings_are_escaped() {
    let mut spec = seed_spec("cluster");
    spec.devices[0].name = Some("<script>alert(1)</script>".into());
    spec.devices[0].count = 1;
    for r in [
        post("/fragment", serde_json::to_vec(&spec).unwrap()).await,
        get(&format!("/s/{}", link_of(&spec))).await,
    ] {
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        assert!(!r.body.contains("<script>alert"), "unescaped device name");
        assert!(
            r.body.contains("&lt;script&gt;alert(1)") || r.body.contains("&#60;script&#62;alert(1)"),
            "escaped name missing"
        );
    }
    let mut inline = seed_spec("cluster");
    let mut topo = irqscope::catalogue::get("azure-4vcpu-smt2").unwrap().to_spec();
    topo.name = "\"><img src=x onerror=alert(1)>".into();
    inline.topology = TopologyRef::Inline(Box::new(topo));
    inline.devices = vec![DeviceSpec::new(1, 2)];
    let r = get(&format!("/s/{}", link_of(&inline))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(!r.body.contains("<img src=x"), "unescaped topology name");
}

#[tokio::test]
async fn damaged_permalinks_are_4xx() {
    let link = link_of(&seed_spec("rotation"));
    assert_bad(&get(&format!("/s/{}", &link[..link.len() - 10])).await, "permalink");
    assert_bad(&get(&format!("/s/{}", link.replacen("v1.", "v7.", 1))).await, "version");
    assert_bad(&get("/s/v1.@@@@").await, "base64");
    assert_bad(&get("/s/garbage").await, "version");
    let mut tampered = link.clone().into_bytes();
    for i in (10..tampered.len()).step_by(7) {
        tampered[i] = if tampered[i] == b'x' { b'y' } else { b'x' };
    }
    let tampered = String::from_utf8(tampered).unwrap();
    for path in [
        format!("/s/{tampered}"),
        format!("/s/{tampered}/text"),
        format!("/s/{tampered}/json"),
        format!("/c/{tampered}"),
    ] {
        let r = get(&path).await;
        assert!(
            r.status.is_client_error() && !r.body.trim().is_empty(),
            "{path}: {} {}",
            r.status,
            r.body
        );
    }
    // A well-formed link whose scenario names a variant this build does not have.
    let bad = link_of(&seed_spec("rotation-v9"));
    assert_bad(&get(&format!("/s/{bad}")).await, "unknown variant");
    let long = format!("/s/v1.{}", "A".repeat(50_000));
    assert_bad(&get(&long).await, "longer");
}

#[tokio::test]
async fn api_errors_are_4xx_with_messages() {
    assert_bad(&post("/api/simulate", "not json").await, "bad JSON");
    assert_bad(
        &post(
            "/api/simulate",
            r#"{"topology":"azure-l96as-v4","devices":[{"queues":4}],"variant":"best"}"#,
        )
        .await,
        "unknown variant",
    );
    assert_bad(
        &post(
            "/api/simulate",
            r#"{"topology":"azure-l96as-v4","devices":[{"queues":4}],"sort":"quick"}"#,
        )
        .await,
        "unknown sort",
    );
    assert_bad(
        &post(
            "/api/simulate",
            r#"{"topology":"azure-l96as-v4","devices":[{"queues":4}],"bogus":1}"#,
        )
        .await,
        "unknown field",
    );
    assert_bad(
        &post(
            "/api/simulate",
            r#"{"topology":"azure-l96as-v4","devices":[{"count":300,"queues":4}]}"#,
        )
        .await,
        "at most",
    );
    let huge_topology = r#"{"topology":{"name":"big","nodes":["0-9000"]},"devices":[{"queues":4}]}"#;
    let r = post("/api/simulate", huge_topology).await;
    assert!(
        r.status.is_client_error() && r.body.contains("topology"),
        "{} {}",
        r.status,
        r.body
    );
    let oversized = format!(
        r#"{{"topology":"azure-l96as-v4","devices":[],"pad":"{}"}}"#,
        "x".repeat(2 << 20)
    );
    let r = post("/api/simulate", oversized).await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(!r.body.trim().is_empty());
    let r = get("/no/such/page").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn topologies_api() {
    let r = get("/api/topologies").await;
    assert_eq!(r.status, StatusCode::OK);
    let list: Value = serde_json::from_str(&r.body).unwrap();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"azure-l96as-v4"), "{names:?}");
    assert!(list[0]["summary"].as_str().unwrap().contains("CPUs"));
    let r = get("/api/topologies/azure-l96as-v4").await;
    assert_eq!(r.status, StatusCode::OK);
    let spec: irqscope::topology::TopologySpec = serde_json::from_str(&r.body).unwrap();
    let t = irqscope::topology::Topology::new(&spec).unwrap();
    assert_eq!(t.possible().weight(), 96);
    assert_bad(&get("/api/topologies/nope").await, "no topology preset");
}

#[tokio::test]
async fn compare_routes() {
    let r = get("/compare?preset=azure-l96as-v4&devices=6x62:pre=1&a=pre-cluster&b=rotation").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body.contains("class=\"heatmap diff\""));
    assert_eq!(r.body.matches("class=\"heatmap\"").count(), 2);
    let spec = CompareSpec {
        scenario: seed_spec("cluster"),
        a: SideSpec {
            variant: Some("pre-cluster".into()),
            ..Default::default()
        },
        b: SideSpec {
            variant: Some("rotation".into()),
            spread_counter: Some(1),
            ..Default::default()
        },
    };
    let link = link_of(&spec);
    let page = get(&format!("/c/{link}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(csp(&page).contains("script-src 'self'"));
    let text = get(&format!("/c/{link}/text")).await;
    assert!(text.body.starts_with("irqscope compare:"), "{}", text.body);
    assert!(text.body.contains("--variant pre-cluster") && text.body.contains("--variant rotation"));
    let json: Value = serde_json::from_str(&get(&format!("/c/{link}/json")).await.body).unwrap();
    assert_eq!(json["b"]["scenario"]["spread_counter"], 1);
    let s = link_of(&seed_spec("cluster"));
    let r = get(&format!(
        "/compare?s={s}&a=cluster&b=rotation&b_counter=2&metric=devices&node=0"
    ))
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_bad(&get("/compare?a=cluster&b=nope").await, "unknown variant");
    assert_bad(&get("/compare?s=v1.zzz&a=cluster").await, "permalink");
}

#[tokio::test]
async fn static_files() {
    let r = get("/static/app.js").await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.contains("fragment"));
    assert_eq!(get("/static/style.css").await.status, StatusCode::OK);
    assert!(!get("/static/../Cargo.toml").await.status.is_success());
}

#[tokio::test]
async fn big_machines_fold_and_zoom() {
    // A generated machine sent as JSON, `clusters` left out: the server stores it explicitly.
    let body = r#"{"topology":{"name":"8k","generate":{"packages":8,"nodes_per_package":2,
        "cores_per_node":256,"threads_per_core":2}},"devices":[{"count":4,"queues":64,"pre":1}]}"#;
    let r = post("/fragment", body).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let link = r.headers["x-permalink"].to_str().unwrap().to_string();
    assert!(link.len() < 32 << 10, "permalink is {} bytes", link.len());
    let r = get(&format!("/s/{link}")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // Heatmap cells are the rects with a value (`data-v`).
    let cells = r.body.matches(" data-v=\"").count();
    assert!(cells < 1000, "8192 CPUs should fold, drew {cells} cells");
    assert!(r.body.contains("folded"));
    let r = get(&format!("/s/{link}?node=3")).await;
    assert_eq!(
        r.body.matches(" data-v=\"").count(),
        512,
        "zoom draws one node unfolded"
    );
    assert!(r.body.len() < 4 << 20, "page is {} bytes", r.body.len());
}

#[tokio::test]
async fn every_page_links_the_other_views_in_the_top_bar() {
    let s = link_of(&seed_spec("cluster"));
    for page in [
        "/".to_string(),
        format!("/s/{s}"),
        "/sweep".into(),
        "/mana".into(),
        "/sched".into(),
        "/live".into(),
        format!("/compare?s={s}&a=cluster&b=rotation"),
    ] {
        let r = get(&page).await;
        assert_eq!(r.status, StatusCode::OK, "{page}: {}", r.body);
        let nav = &r.body[r.body.find("<nav>").unwrap_or_else(|| panic!("{page}: no nav"))..];
        let nav = &nav[..nav.find("</nav>").unwrap()];
        for (id, href) in [
            ("nav-sweep", "/sweep"),
            ("nav-mana", "/mana"),
            ("nav-sched", "/sched"),
            ("nav-live", "/live"),
        ] {
            assert!(
                nav.contains(&format!("href=\"{href}\" id=\"{id}\"")),
                "{page}: {id} missing from {nav}"
            );
        }
    }
}

/// The editor gets the machine in explicit form (its SMT sets and clusters as runs of lists
/// that step alike, `LIST*COUNT+STEP`, which the script expands; no distances, which it keeps
/// per node) and each node's CPUs and package, so it can keep an irregular machine exactly;
/// and the proposal names for the kernel controls.
#[tokio::test]
async fn editor_state_carries_the_exact_machine() {
    let r = get("/?preset=intel-core-ultra-7-265k&devices=4").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let open = "<script type=\"application/json\" id=\"state\">";
    let at = r.body.find(open).unwrap() + open.len();
    let json = &r.body[at..at + r.body[at..].find("</script>").unwrap()];
    let state: Value = serde_json::from_str(json).unwrap();
    let mut want = irqscope::catalogue::get("intel-core-ultra-7-265k").unwrap().to_spec();
    want.distances = None;
    let mut base: irqscope::topology::TopologySpec = serde_json::from_value(state["editor"]["base"].clone()).unwrap();
    assert_eq!(
        base.clusters,
        ["0*8+1", "8-11*3+4"],
        "P-cores one each, E-cores four each"
    );
    let expand = |lists: &[String]| -> Vec<String> {
        let mut out = Vec::new();
        for l in lists {
            match l.split_once('*') {
                None => out.push(l.clone()),
                Some((list, rest)) => {
                    let (count, step) = rest.split_once('+').unwrap();
                    let first = irqscope::topology::parse_cpulist(list, 8192).unwrap();
                    for k in 0..count.parse::<u32>().unwrap() {
                        let shifted: irqscope::topology::CpuSet =
                            first.iter().map(|c| c + k * step.parse::<u32>().unwrap()).collect();
                        out.push(shifted.to_cpulist());
                    }
                }
            }
        }
        out
    };
    base.smt = expand(&base.smt);
    base.clusters = expand(&base.clusters);
    assert_eq!(base, want);
    assert_eq!(state["editor"]["preset"], "intel-core-ultra-7-265k");
    assert_eq!(state["editor"]["nodes"][0]["cpus"], "0-19");
    assert_eq!(state["editor"]["nodes"][0]["package"], 0);
    assert!(state["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p == "offset-by-probed"));
}

/// The editor state sits in a JSON script element: a machine named with `</script>`, `<!--`
/// and `&` cannot end or change it, and the JSON reads back to the same name.
#[tokio::test]
async fn editor_state_script_cannot_be_closed_by_its_content() {
    use irqscope::scenario::permalink;
    use irqscope::scenario::spec::{parse_device_token, ScenarioSpec, TopologyRef};
    let mut t = irqscope::catalogue::get("azure-4vcpu-smt2").unwrap().to_spec();
    let name = "x</script><script>alert(1)</script><!-- & -->";
    t.name = name.into();
    let spec = ScenarioSpec::new(TopologyRef::Inline(Box::new(t)), vec![parse_device_token("4").unwrap()]);
    let r = get(&format!("/s/{}", permalink::encode(&spec).unwrap())).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let open = "<script type=\"application/json\" id=\"state\">";
    let at = r.body.find(open).unwrap() + open.len();
    let json = &r.body[at..at + r.body[at..].find("</script>").unwrap()];
    assert!(
        !json.contains('<') && !json.contains('>') && !json.contains('&'),
        "{json}"
    );
    assert!(json.contains("\\u003c/script\\u003e"), "{json}");
    let state: Value = serde_json::from_str(json).unwrap();
    assert_eq!(state["editor"]["name"], name);
    assert!(
        !r.body.contains("<script>alert(1)"),
        "the name reached the page unescaped"
    );
}

/// Every view names the variant it ran, and says when it is the reconstructed v1.
#[tokio::test]
async fn pages_name_the_variant_and_flag_the_reconstruction() {
    let r = get("/?preset=azure-l48s-v2&devices=6x32:pre=1&variant=rotation-v1r").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(
        r.body.contains("variant rotation-v1r: RECONSTRUCTION of the posted v1"),
        "{}",
        r.body
    );
    let r = get("/?preset=azure-l48s-v2&devices=6x32:pre=1&variant=pre-cluster").await;
    assert!(r.body.contains("variant pre-cluster: lib/group_cpus.c as of v6.3"));
    assert!(!r.body.contains("RECONSTRUCTION"));
    let r = get("/compare?preset=azure-l48s-v2&devices=6x32:pre=1&a=pre-cluster&b=rotation-v1r").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body.contains("variant rotation-v1r: RECONSTRUCTION"), "{}", r.body);
}

/// `web::server::serve` on a real loopback socket: slow, silent and idle clients are closed
/// within their bound, slow requests and SSE streams are not, the connection cap holds, and a
/// shutdown finishes requests in flight within its grace. Limits are shortened to keep it quick.
mod server {
    use axum::response::sse::{Event, Sse};
    use axum::routing::get;
    use axum::Router;
    use irqscope::web::server::{serve, Limits};
    use irqscope::web::{app, AppState};
    use std::time::{Duration, Instant};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    const LIMITS: Limits = Limits {
        header_read_timeout: Duration::from_millis(1500),
        idle_timeout: Duration::from_millis(500),
        connections_max: 64,
        shutdown_grace: Duration::from_millis(800),
    };

    /// A router with a slow page and an SSE stream faster than the idle timeout, beside the app.
    fn test_router() -> Router {
        Router::new()
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_millis(1200)).await;
                    "done"
                }),
            )
            .route(
                "/events",
                get(|| async {
                    let ticks = futures_util::stream::unfold(0u32, |n| async move {
                        tokio::time::sleep(Duration::from_millis(150)).await;
                        Some((
                            Ok::<_, std::convert::Infallible>(Event::default().data(n.to_string())),
                            n + 1,
                        ))
                    });
                    Sse::new(ticks)
                }),
            )
            .merge(app(AppState::default()))
    }

    /// Serve `router` with `limits`; the sender shuts it down, the handle ends with it.
    async fn start(
        router: Router,
        limits: Limits,
    ) -> (
        std::net::SocketAddr,
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<()>,
    ) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let handle = tokio::spawn(serve(listener, router, limits, async {
            let _ = rx.await;
        }));
        (addr, tx, handle)
    }

    /// Wait until the server closes `s` (EOF or reset); how long that took, or `None` after `max`.
    async fn closed_within(s: &mut TcpStream, max: Duration) -> Option<Duration> {
        let t0 = Instant::now();
        let mut buf = [0u8; 4096];
        while t0.elapsed() < max {
            match tokio::time::timeout(Duration::from_millis(50), s.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return Some(t0.elapsed()),
                Ok(Ok(_)) | Err(_) => {}
            }
        }
        None
    }

    /// One request on a kept-alive connection: the response head and its Content-Length body.
    async fn request(s: &mut TcpStream, path: &str) -> String {
        s.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 65536];
        loop {
            let n = s.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed mid-response: {:?}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got).into_owned();
            if let Some(end) = text.find("\r\n\r\n") {
                let len: usize = text[..end]
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length: ")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .expect("content-length");
                if got.len() >= end + 4 + len {
                    return text;
                }
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slowloris_and_silent_clients_are_closed_within_their_bounds() {
        let (addr, _stop, _h) = start(test_router(), LIMITS).await;
        // One header byte every 200 ms: never idle, but the head never completes.
        let mut slow = TcpStream::connect(addr).await.unwrap();
        let head = b"GET / HTTP/1.1\r\nHost: t\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        let t0 = Instant::now();
        let mut closed = None;
        for b in head.iter() {
            if slow.write_all(&[*b]).await.is_err() {
                closed = Some(t0.elapsed());
                break;
            }
            if closed_within(&mut slow, Duration::from_millis(200)).await.is_some() {
                closed = Some(t0.elapsed());
                break;
            }
        }
        let closed = closed.expect("a trickling client was never closed");
        assert!(
            closed >= LIMITS.header_read_timeout - Duration::from_millis(100)
                && closed < LIMITS.header_read_timeout + Duration::from_millis(700),
            "slowloris closed after {closed:?}, header timeout {:?}",
            LIMITS.header_read_timeout
        );
        // A client that connects and sends nothing.
        let mut silent = TcpStream::connect(addr).await.unwrap();
        let closed = closed_within(&mut silent, Duration::from_secs(5))
            .await
            .expect("silent client kept");
        assert!(
            closed < LIMITS.idle_timeout + Duration::from_millis(500),
            "silent client closed after {closed:?}"
        );
        // An idle keep-alive connection after one answered request.
        let mut idle = TcpStream::connect(addr).await.unwrap();
        let r = request(&mut idle, "/static/style.css").await;
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        let closed = closed_within(&mut idle, Duration::from_secs(5))
            .await
            .expect("idle keep-alive kept");
        assert!(
            closed < LIMITS.idle_timeout + Duration::from_millis(500),
            "idle connection closed after {closed:?}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_requests_and_sse_streams_outlive_the_idle_timeout() {
        let (addr, _stop, _h) = start(test_router(), LIMITS).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        let r = request(&mut s, "/slow").await;
        assert!(r.starts_with("HTTP/1.1 200") && r.ends_with("done"), "{r}");
        let mut sse = TcpStream::connect(addr).await.unwrap();
        sse.write_all(b"GET /events HTTP/1.1\r\nHost: t\r\n\r\n").await.unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(1800) {
            if let Ok(r) = tokio::time::timeout(Duration::from_millis(100), sse.read(&mut buf)).await {
                let n = r.unwrap();
                assert!(n > 0, "SSE stream closed after {:?}", t0.elapsed());
                got.extend_from_slice(&buf[..n]);
            }
        }
        let text = String::from_utf8_lossy(&got);
        assert!(text.contains("data: 9\n"), "{text}");
    }

    /// A connection from `source` (all of 127.0.0.0/8 is loopback).
    async fn connect_from(source: [u8; 4], addr: std::net::SocketAddr) -> TcpStream {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind((source, 0).into()).unwrap();
        socket.connect(addr).await.unwrap()
    }

    /// The pool's rule beyond its cap: a newcomer takes the place of the longest-idle
    /// connection; when every connection is busy, of the newest busy one of an address holding
    /// two more than the newcomer's; else it is answered 503 and closed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connections_beyond_the_cap_take_the_place_of_idle_ones() {
        let limits = Limits {
            connections_max: 2,
            idle_timeout: Duration::from_secs(30),
            header_read_timeout: Duration::from_secs(30),
            ..LIMITS
        };
        let (addr, _stop, _h) = start(test_router(), limits).await;
        let mut first = TcpStream::connect(addr).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut second = TcpStream::connect(addr).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut third = TcpStream::connect(addr).await.unwrap();
        let r = tokio::time::timeout(Duration::from_secs(3), request(&mut third, "/static/style.css"))
            .await
            .expect("a newcomer beyond the cap was not served");
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        assert!(
            closed_within(&mut first, Duration::from_secs(1)).await.is_some(),
            "the longest-idle connection was kept"
        );
        assert!(closed_within(&mut second, Duration::from_millis(200)).await.is_none());
        drop((second, third));
        tokio::time::sleep(Duration::from_millis(200)).await;

        // Both places busy with one address's slow requests: another request from the same
        // address is refused, one from another address takes the newest busy place.
        let a = [127, 0, 0, 1];
        let mut busy1 = connect_from(a, addr).await;
        busy1.write_all(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut busy2 = connect_from(a, addr).await;
        busy2.write_all(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut refused = connect_from(a, addr).await;
        let mut got = Vec::new();
        tokio::time::timeout(Duration::from_secs(2), refused.read_to_end(&mut got))
            .await
            .expect("the refused connection stayed open")
            .ok();
        let text = String::from_utf8_lossy(&got);
        assert!(text.is_empty() || text.starts_with("HTTP/1.1 503"), "{text}");
        assert!(text.is_empty() || text.contains("Retry-After: 1"), "{text}");
        let mut other = connect_from([127, 0, 0, 2], addr).await;
        let r = tokio::time::timeout(Duration::from_secs(3), request(&mut other, "/static/style.css"))
            .await
            .expect("a second address was not served");
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        let r = request(&mut busy1, "/static/style.css").await;
        assert!(
            r.starts_with("HTTP/1.1 200") && r.contains("done"),
            "the oldest busy request was cut: {r}"
        );
        let mut cut = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(2), busy2.read_to_end(&mut cut)).await;
        assert!(
            cut.is_empty(),
            "the newest busy request finished: {}",
            String::from_utf8_lossy(&cut)
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shutdown_finishes_requests_in_flight_within_the_grace() {
        // A slow request in flight when the shutdown starts is answered whole.
        let limits = Limits {
            shutdown_grace: Duration::from_secs(5),
            ..LIMITS
        };
        let (addr, stop, handle) = start(test_router(), limits).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let t0 = Instant::now();
        stop.send(()).unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("HTTP/1.1 200") && text.ends_with("done"), "{text}");
        tokio::time::timeout(Duration::from_secs(2), handle)
            .await
            .expect("serve kept running")
            .unwrap();
        assert!(
            t0.elapsed() < Duration::from_secs(2),
            "shutdown took {:?}",
            t0.elapsed()
        );
        assert!(
            TcpStream::connect(addr).await.is_err(),
            "still accepting after shutdown"
        );

        // An endless SSE stream is cut when the grace runs out.
        let (addr, stop, handle) = start(test_router(), LIMITS).await;
        let mut sse = TcpStream::connect(addr).await.unwrap();
        sse.write_all(b"GET /events HTTP/1.1\r\nHost: t\r\n\r\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let t0 = Instant::now();
        stop.send(()).unwrap();
        tokio::time::timeout(LIMITS.shutdown_grace + Duration::from_secs(1), handle)
            .await
            .expect("serve outlived its grace")
            .unwrap();
        assert!(t0.elapsed() >= LIMITS.shutdown_grace - Duration::from_millis(50));
        let closed = closed_within(&mut sse, Duration::from_secs(2)).await;
        assert!(closed.is_some(), "the SSE stream survived the shutdown");
    }
}

/// `+` inside a device token is the token's own `+` (`sets=4+2`), never a space that would add a
/// device; devices are separated by `%20`.
#[tokio::test]
async fn plus_in_the_devices_query_never_adds_a_device() {
    let plus = get("/?preset=azure-l48s-v2&devices=6x62:sets=4%2B2").await;
    assert_eq!(plus.status, StatusCode::OK, "{}", plus.body);
    let raw = get("/?preset=azure-l48s-v2&devices=6x62:sets=4+2").await;
    assert_eq!(raw.status, StatusCode::OK, "{}", raw.body);
    assert_eq!(raw.body, plus.body);
    assert!(
        raw.body.contains("serve all 6 devices") || raw.body.contains("6 devices"),
        "{}",
        raw.body
    );
    // Two devices, the second of 2 vectors, only when a space says so.
    let two = get("/?preset=azure-l48s-v2&devices=6x62:sets=4%202").await;
    assert_eq!(two.status, StatusCode::OK, "{}", two.body);
    assert_ne!(two.body, raw.body);
    // The compare page reads `devices` the same way.
    let c = get("/compare?preset=azure-l48s-v2&devices=2x8:sets=4+2&a=cluster&b=rotation").await;
    let c2 = get("/compare?preset=azure-l48s-v2&devices=2x8:sets=4%2B2&a=cluster&b=rotation").await;
    assert_eq!(c.status, StatusCode::OK, "{}", c.body);
    assert_eq!(c.body, c2.body);
    // Other parameters still decode `+` as a space (a bad variant name shows it).
    assert_bad(&get("/?preset=azure-l48s-v2&variant=a+b").await, "\"a b\"");
}

/// Permalink pages and twins: strong ETag per encoding, immutable caching, 304 on a match, the
/// same bytes from the cache as from the first render, errors never cached.
#[tokio::test]
async fn permalinks_are_immutable_content() {
    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let app = irqscope::web::app(irqscope::web::AppState::default());
    let send = |uri: String, headers: Vec<(header::HeaderName, String)>| {
        let app = app.clone();
        async move {
            let mut req = Request::get(uri).header(header::HOST, "irqscope.test");
            for (k, v) in headers {
                req = req.header(k, v);
            }
            let resp = app.oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
            let (parts, body) = resp.into_parts();
            (parts.status, parts.headers, body.collect().await.unwrap().to_bytes())
        }
    };
    let gunzip = |b: &[u8]| {
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(b).read_to_end(&mut out).unwrap();
        out
    };
    let link = link_of(&seed_spec("cluster"));
    let compare = link_of(&CompareSpec {
        scenario: seed_spec("cluster"),
        a: SideSpec::default(),
        b: SideSpec {
            variant: Some("rotation".into()),
            ..SideSpec::default()
        },
    });
    for uri in [
        format!("/s/{link}"),
        format!("/s/{link}/text"),
        format!("/s/{link}/json"),
        format!("/s/{link}?metric=hot&node=1"),
        format!("/c/{compare}"),
        format!("/c/{compare}/text"),
    ] {
        let gz = vec![(header::ACCEPT_ENCODING, "gzip, deflate".to_string())];
        let (status, h1, plain) = send(uri.clone(), vec![]).await;
        assert_eq!(status, StatusCode::OK, "{uri}");
        assert_eq!(h1[header::CACHE_CONTROL], "public, max-age=86400, immutable", "{uri}");
        assert_eq!(h1[header::VARY], "accept-encoding");
        assert!(h1.get(header::CONTENT_ENCODING).is_none());
        let etag = h1[header::ETAG].to_str().unwrap().to_string();
        assert!(
            etag.starts_with('"') && etag.ends_with('"') && !etag.starts_with("W/"),
            "{etag}"
        );
        // From the cache now: gzip of the same bytes, its own strong tag.
        let (_, h2, zipped) = send(uri.clone(), gz.clone()).await;
        assert_eq!(h2[header::CONTENT_ENCODING], "gzip", "{uri}");
        let gz_etag = h2[header::ETAG].to_str().unwrap().to_string();
        assert_ne!(gz_etag, etag);
        assert_eq!(gunzip(&zipped), plain.to_vec(), "{uri}: gzip differs from the page");
        let (_, _, again) = send(uri.clone(), vec![]).await;
        assert_eq!(again, plain, "{uri}: the cached page differs from the first render");
        // The same page rendered by a fresh router is byte-identical (nothing stale is kept).
        let fresh = get(&uri).await;
        assert_eq!(fresh.body.as_bytes(), &plain[..], "{uri}");
        for tag in [&etag, &gz_etag] {
            let (status, h, body) = send(uri.clone(), vec![(header::IF_NONE_MATCH, format!("\"other\", {tag}"))]).await;
            assert_eq!(status, StatusCode::NOT_MODIFIED, "{uri}");
            assert!(body.is_empty());
            assert_eq!(h[header::ETAG].to_str().unwrap(), etag);
        }
        let (status, _, _) = send(uri.clone(), vec![(header::IF_NONE_MATCH, "\"other\"".to_string())]).await;
        assert_eq!(status, StatusCode::OK);
    }
    // The text twin prints absolute links from `Host`: another host is another entry and tag.
    let (_, h, _) = send(format!("/s/{link}/text"), vec![]).await;
    let req = Request::get(format!("/s/{link}/text"))
        .header(header::HOST, "other.test")
        .body(Body::empty())
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    assert_ne!(resp.headers()[header::ETAG], h[header::ETAG]);
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    assert!(String::from_utf8_lossy(&body).contains("http://other.test/s/"));
    // Errors are neither cached nor marked immutable.
    for _ in 0..2 {
        let (status, h, _) = send("/s/v1.zzz".into(), vec![]).await;
        assert!(status.is_client_error());
        assert!(h.get(header::ETAG).is_none() && h.get(header::CACHE_CONTROL).is_none());
    }
}

#[tokio::test]
async fn static_files_are_embedded_with_their_gzip_encoding() {
    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let on_disk = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/static/app.js")).unwrap();
    let app = irqscope::web::app(irqscope::web::AppState::default());
    let req = Request::get("/static/app.js")
        .header(header::ACCEPT_ENCODING, "gzip")
        .body(Body::empty())
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.headers()[header::CONTENT_ENCODING], "gzip");
    assert_eq!(resp.headers()[header::CONTENT_TYPE], "text/javascript; charset=utf-8");
    assert_eq!(resp.headers()[header::VARY], "accept-encoding");
    let etag = resp.headers()[header::ETAG].clone();
    let zipped = resp.into_body().collect().await.unwrap().to_bytes();
    assert!(zipped.len() * 2 < on_disk.len());
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&zipped[..]), &mut out).unwrap();
    assert_eq!(out, on_disk);
    let plain = get("/static/app.js").await;
    assert_eq!(plain.body.as_bytes(), &on_disk[..]);
    assert!(plain.headers.get(header::CONTENT_ENCODING).is_none());
    let req = Request::get("/static/app.js")
        .header(header::IF_NONE_MATCH, etag)
        .body(Body::empty())
        .unwrap();
    assert_eq!(app.oneshot(req).await.unwrap().status(), StatusCode::NOT_MODIFIED);
    assert_eq!(get("/static/nope.js").await.status, StatusCode::NOT_FOUND);
}

/// Item text of every `<li>` in the page's summary list.
fn summary_bullets(body: &str) -> Vec<String> {
    let start = body.find(r#"<ul id="summary""#).expect("summary list");
    let end = start + body[start..].find("</ul>").expect("end of summary");
    body[start..end]
        .split("<li")
        .skip(1)
        .map(|li| {
            let text = &li[li.find('>').unwrap() + 1..];
            text[..text.find("</li>").unwrap_or(text.len())].to_string()
        })
        .collect()
}

/// The 8,192-CPU machine with 16 devices: the page stays under 300 KB (the issue's goal; it is
/// 203 KB since the editor state left its HTML-escaped attribute, so 230 KB catches that coming
/// back), its summary bullets are folded by node pattern and none passes 400 characters, and
/// the heatmap is the node × slot overview (one row per node), not 8,192 cells.
#[tokio::test]
async fn big_machine_page_is_light_and_folded() {
    const BIG_PAGE_BYTES_MAX: usize = 230_000;
    let r = get("/?preset=synthetic-8192&devices=16x64").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    eprintln!("8192 CPUs x 16 devices: page {} bytes", r.body.len());
    assert!(r.body.len() < BIG_PAGE_BYTES_MAX, "page is {} bytes", r.body.len());
    assert!(
        !r.body.contains("data-state="),
        "the editor state is back in an attribute"
    );
    let bullets = summary_bullets(&r.body);
    assert_eq!(bullets.len(), 4, "{bullets:?}");
    for b in &bullets {
        assert!(b.chars().count() <= 400, "{} chars: {b}", b.chars().count());
    }
    assert!(
        bullets[0].starts_with("every node the same (64 nodes × 128 CPUs)"),
        "{}",
        bullets[0]
    );
    let heat = &r.body[r.body.find(r#"id="heatmap""#).unwrap()..];
    let heat = &heat[..heat.find("</svg>").unwrap()];
    assert_eq!(heat.matches(r#"<g class="node""#).count(), 64);
    assert!(
        heat.matches(r#"<rect class="cpu"#).count() < 1024,
        "overview should fold runs"
    );
    // Drill-down: one node drawn CPU by CPU.
    let r = get("/?preset=synthetic-8192&devices=16x64&node=5").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let heat = &r.body[r.body.find(r#"id="heatmap""#).unwrap()..];
    let heat = &heat[..heat.find("</svg>").unwrap()];
    assert_eq!(heat.matches(r#"<rect class="cpu"#).count(), 128);
}

/// Seed 000 (pre-cluster): the page leads with the seed's own sentence, then the verdict
/// above the heatmap names the hot CPUs; the heatmap is drawn at its size (width and height in
/// pixels, no inline style, which the CSP would refuse) and numbers its CPUs.
#[tokio::test]
async fn seed_000_verdict_and_fixed_size_heatmap() {
    let r = get("/?preset=azure-l96as-v4&devices=6x62:pre=1,name=nvme&variant=pre-cluster&metric=devices").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(
        r.text()
            .contains("max 6 devices on a CPU (ideal 4): 28 CPUs (14 per node) 34-47,82-95 serve all 6"),
        "no verdict"
    );
    assert!(
        r.body.contains(r#"<p class="verdict" id="verdict">"#),
        "the verdict follows the seed's sentence"
    );
    let heat = &r.body[r.body.find(r#"id="heatmap""#).unwrap()..];
    let open = &heat[heat.find("<svg").unwrap()..];
    let open = &open[..open.find('>').unwrap()];
    assert!(
        r.text()
            .contains("L96as v4, 6 NVMe x 62 queues: 28 CPUs (34-47,82-95) serve all 6 disks")
            && r.body.contains(r#"<h2 class="headline" id="headline">"#),
        "the seed's sentence leads"
    );
    let w = open
        .split(r#" width=""#)
        .nth(1)
        .and_then(|t| t.split('"').next())
        .unwrap();
    assert!(
        open.contains(&format!(r#"data-w="{w}""#)) && open.contains("viewBox="),
        "{open}"
    );
    assert!(open.contains(" height=") && !open.contains("style="), "{open}");
    let heat = &heat[..heat.find("</svg>").unwrap()];
    assert_eq!(heat.matches(r#"<text class="n"#).count(), 96, "one CPU number per cell");
    assert!(heat.contains(r#"class="ideal""#), "the ideal is marked in the legend");
}

/// `/sweep?mixes=` reads `+` as `/?devices=` does: `sets=4+2` stays one device whether the `+`
/// comes raw or as `%2B`, and a `+` meant as a space is an error that says so, never a silent
/// change of the mix.
#[tokio::test]
async fn plus_in_the_sweep_mixes_query_is_literal() {
    let q = "/sweep/text?topologies=azure-l48s-v2&variants=cluster&counters=0&mixes=m%3D2x8:sets%3D4";
    let encoded = get(&format!("{q}%2B4")).await;
    assert_eq!(encoded.status, StatusCode::OK, "{}", encoded.body);
    let raw = get(&format!("{q}+4")).await;
    assert_eq!(raw.status, StatusCode::OK, "{}", raw.body);
    assert_eq!(raw.body, encoded.body);
    assert!(raw.body.contains("sets=4+4"), "{}", raw.body);
    // A space (%20) makes a second device: another sweep.
    let spaced = get(&format!("{q}%204")).await;
    assert_eq!(spaced.status, StatusCode::OK, "{}", spaced.body);
    assert_ne!(spaced.body, raw.body);
    // The page and its other twins read the query the same way.
    let page = get("/sweep?topologies=azure-l48s-v2&variants=cluster&counters=0&mixes=m%3D2x8:sets%3D4+4").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("sets%3D4%2B4"), "the page's own links keep the +");
    // Two devices joined by a + (a space in form encoding): an error naming the +.
    let bad = get("/sweep/text?topologies=azure-l48s-v2&variants=cluster&counters=0&mixes=2x8+4x8").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.body);
    assert!(bad.body.contains("a + in mixes is kept as a +"), "{}", bad.body);
}
