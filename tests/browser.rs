//! The dashboard in a real browser: Debian's `chromium` driven through `chromedriver`
//! (packages `chromium` and `chromium-driver`) with fantoccini. Each test starts the app on a
//! loopback port, a chromedriver on a free port, and a headless Chromium with its own profile
//! directory; screenshots go to `target/screenshots/`.
//!
//! Without chromium or chromedriver these tests FAIL with a message naming the packages, unless
//! `IRQSCOPE_SKIP_BROWSER=1` is set.

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;
use std::net::TcpListener as StdListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long to wait for the page to reflect a change.
const WAIT_MS_MAX: u64 = 20_000;

/// Browsers are heavy; run one test at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn find_program(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in names {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// `None` when the tests should be skipped (explicitly asked); panics when tools are missing.
fn tools() -> Option<(PathBuf, PathBuf)> {
    if std::env::var("IRQSCOPE_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("IRQSCOPE_SKIP_BROWSER=1: browser tests skipped");
        return None;
    }
    let chromium = find_program(&["chromium", "chromium-browser"]);
    let driver = find_program(&["chromedriver"]);
    match (chromium, driver) {
        (Some(c), Some(d)) => Some((c, d)),
        (c, d) => panic!(
            "browser tests need Debian's `chromium` ({}) and `chromedriver` ({}) on PATH: \
             apt-get install -y chromium chromium-driver (or set IRQSCOPE_SKIP_BROWSER=1 to skip)",
            if c.is_some() { "found" } else { "missing" },
            if d.is_some() { "found" } else { "missing" },
        ),
    }
}

fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

struct Harness {
    base: String,
    driver_url: String,
    chromium: PathBuf,
    driver: Child,
    profiles: Vec<PathBuf>,
    server: tokio::task::JoinHandle<()>,
}

impl Harness {
    async fn start() -> Option<Harness> {
        let (chromium, chromedriver) = tools()?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = irqscope::web::app(irqscope::web::AppState::default());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        let port = free_port();
        let driver = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", chromedriver.display()));
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(20), "chromedriver did not listen on port {port}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Some(Harness { base, driver_url: format!("http://127.0.0.1:{port}"), chromium, driver, profiles: Vec::new(), server })
    }

    /// A new browser session with a fresh profile.
    async fn session(&mut self) -> Client {
        let profile = std::env::temp_dir().join(format!("irqscope-chromium-{}-{}", std::process::id(), free_port()));
        std::fs::create_dir_all(&profile).unwrap();
        self.profiles.push(profile.clone());
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": self.chromium,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--no-first-run", "--window-size=1400,1100",
                    format!("--user-data-dir={}", profile.display()),
                ],
            }),
        );
        ClientBuilder::new(HttpConnector::new())
            .capabilities(caps)
            .connect(&self.driver_url)
            .await
            .unwrap_or_else(|e| panic!("starting chromium through chromedriver: {e}"))
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        self.server.abort();
        for p in &self.profiles {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

async fn screenshot(c: &Client, name: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let png = c.screenshot().await.unwrap();
    std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
}

/// Text of the first element matching `css`. The page replaces its result block whenever an
/// input changes, so an element found a moment ago may be gone: look it up again then.
async fn text_of(c: &Client, css: &str) -> String {
    const TRIES_MAX: u32 = 50;
    let mut last = String::new();
    for _ in 0..TRIES_MAX {
        match c.find(Locator::Css(css)).await {
            Ok(el) => match el.text().await {
                Ok(text) => return text,
                Err(e) => last = e.to_string(),
            },
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{css}: {last}");
}

/// Poll until `f` gives `Some`, or fail after [`WAIT_MS_MAX`].
async fn wait_for<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(started.elapsed() < Duration::from_millis(WAIT_MS_MAX), "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

const SEED_QUERY: &str = "/?preset=azure-l96as-v4&devices=6x62:pre=1,name=nvme";

async fn summary(c: &Client) -> String {
    format!("{}\n{}\n{}", text_of(c, "#devices-line").await, text_of(c, "#irqs-line").await, text_of(c, "#nodes-line").await)
}

#[tokio::test]
async fn editing_queue_count_updates_heatmap_and_summary() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    c.goto(&format!("{}{SEED_QUERY}", h.base)).await.unwrap();
    let before = summary(&c).await;
    assert!(before.contains("serve all 6 devices"), "{before}");
    let heat_before = c.find(Locator::Css("#heatmap svg")).await.unwrap().html(false).await.unwrap();
    screenshot(&c, "seed-before").await;

    let queues = c.find(Locator::Css("#devices input.queues")).await.unwrap();
    queues.clear().await.unwrap();
    queues.send_keys("8\u{E004}").await.unwrap();
    let after = wait_for("summary to change", || async {
        let s = summary(&c).await;
        (s != before && s.contains("IRQ")).then_some(s)
    })
    .await;
    let heat_after = c.find(Locator::Css("#heatmap svg")).await.unwrap().html(false).await.unwrap();
    assert_ne!(heat_before, heat_after, "heatmap did not change");
    let url = c.current_url().await.unwrap();
    assert!(url.path().starts_with("/s/v1."), "URL is not a permalink: {url}");
    screenshot(&c, "seed-8-queues").await;
    eprintln!("after editing: {after}");
    c.close().await.unwrap();
}

#[tokio::test]
async fn adding_a_numa_node_in_the_editor() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    c.goto(&format!("{}{SEED_QUERY}", h.base)).await.unwrap();
    assert_eq!(c.find_all(Locator::Css("#nodes tr.node-row")).await.unwrap().len(), 2);
    c.find(Locator::Css("#add-node")).await.unwrap().click().await.unwrap();
    wait_for("three nodes in the result", || async {
        let topo = text_of(&c, "#result p.topo").await;
        topo.contains("3 nodes").then_some(())
    })
    .await;
    assert_eq!(c.find_all(Locator::Css("#nodes tr.node-row")).await.unwrap().len(), 3);
    assert_eq!(c.find_all(Locator::Css("#heatmap g.node")).await.unwrap().len(), 3);
    let nodes_line = text_of(&c, "#nodes-line").await;
    assert_eq!(nodes_line.split(" IRQs").next().unwrap().split_whitespace().count(), 2 + 3, "{nodes_line}");
    screenshot(&c, "three-nodes").await;
    c.close().await.unwrap();
}

#[tokio::test]
async fn compare_pre_cluster_with_rotation() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    c.goto(&format!("{}{SEED_QUERY}", h.base)).await.unwrap();
    c.find(Locator::Css("#compare-form select[name=a]")).await.unwrap().select_by_value("pre-cluster").await.unwrap();
    c.find(Locator::Css("#compare-form select[name=b]")).await.unwrap().select_by_value("rotation").await.unwrap();
    c.find(Locator::Css("#compare-go")).await.unwrap().click().await.unwrap();
    let text = wait_for("the compare page", || async {
        match c.find(Locator::Css("#compare-text")).await {
            Ok(e) => e.text().await.ok(),
            Err(_) => None,
        }
    })
    .await;
    assert!(text.contains("--variant pre-cluster") && text.contains("--variant rotation"), "{text}");
    assert!(text.contains("Per-CPU change, B - A"), "{text}");
    assert_eq!(c.find_all(Locator::Css("svg.heatmap")).await.unwrap().len(), 3, "A, B and the difference");
    screenshot(&c, "compare-pre-cluster-rotation").await;
    c.close().await.unwrap();
}

#[tokio::test]
async fn copied_permalink_reproduces_in_a_new_session() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    c.goto(&format!("{}{SEED_QUERY}", h.base)).await.unwrap();
    c.find(Locator::Css("#kernel-editor #variant")).await.unwrap().select_by_value("rotation").await.unwrap();
    wait_for("the URL to become a permalink", || async {
        let url = c.current_url().await.unwrap();
        url.path().starts_with("/s/v1.").then_some(())
    })
    .await;
    let want = summary(&c).await;
    let button = c.find(Locator::Css("#result .copy-link")).await.unwrap();
    button.click().await.unwrap();
    let link = wait_for("the copy button to copy", || async {
        c.find(Locator::Css("#result .copy-link")).await.ok()?.attr("data-copied").await.ok().flatten()
    })
    .await;
    assert!(link.contains("/s/v1."), "{link}");
    c.close().await.unwrap();

    let fresh = h.session().await;
    fresh.goto(&link).await.unwrap();
    let got = summary(&fresh).await;
    assert_eq!(got, want);
    let variant = fresh.find(Locator::Css("#kernel-editor #variant")).await.unwrap().prop("value").await.unwrap();
    assert_eq!(variant.as_deref(), Some("rotation"), "the variant is pinned by the link");
    screenshot(&fresh, "permalink-new-session").await;
    fresh.close().await.unwrap();
}
