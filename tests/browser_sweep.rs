//! The sweep page in a real browser: Debian's `chromium` driven through `chromedriver`
//! (packages `chromium` and `chromium-driver`) with fantoccini. The harness is the one of
//! `tests/browser.rs`. Each test starts the app on a
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

async fn text_of(c: &Client, css: &str) -> String {
    c.find(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css}: {e}")).text().await.unwrap()
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

const SWEEP_QUERY: &str = "/sweep?topologies=azure-l48s-v2,azure-l96as-v4,synthetic-sparse-ids&mixes=nvme-6x32;nvme-6x14&variants=pre-cluster,rotation,rotation-v1r,offset-by-probed&counters=0..4";

/// The `data-gap` of every table row, in page order.
async fn gaps(c: &Client) -> Vec<u32> {
    let mut out = Vec::new();
    for row in c.find_all(Locator::Css("#sweep-table tbody tr")).await.unwrap() {
        out.push(row.attr("data-gap").await.unwrap().unwrap().parse().unwrap());
    }
    out
}

#[tokio::test]
async fn sort_by_gap_then_open_a_permalink() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    c.goto(&format!("{}{SWEEP_QUERY}", h.base)).await.unwrap();
    assert_eq!(c.find_all(Locator::Css("#sweep-chart svg g.panel")).await.unwrap().len(), 3);
    let before = gaps(&c).await;
    assert_eq!(before.len(), 3 * 2 * 4);

    // First click: largest gap first.
    c.find(Locator::Css("#sort-gap button")).await.unwrap().click().await.unwrap();
    let sorted = wait_for("rows sorted by gap, descending", || async {
        let g = gaps(&c).await;
        (g.windows(2).all(|w| w[0] >= w[1]) && g != before).then_some(g)
    })
    .await;
    let mut want = before.clone();
    want.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(sorted, want);
    assert_eq!(c.find(Locator::Css("#sweep-table")).await.unwrap().attr("data-sorted").await.unwrap().as_deref(), Some("gap:desc"));
    let first = c.find(Locator::Css("#sweep-table tbody tr")).await.unwrap();
    let top = (
        first.attr("data-topology").await.unwrap().unwrap(),
        first.attr("data-placement").await.unwrap().unwrap(),
        first.attr("data-irqs").await.unwrap().unwrap(),
    );
    screenshot(&c, "sweep-sorted-by-gap").await;

    // Second click: smallest first.
    c.find(Locator::Css("#sort-gap button")).await.unwrap().click().await.unwrap();
    wait_for("rows sorted by gap, ascending", || async {
        let g = gaps(&c).await;
        (g.windows(2).all(|w| w[0] <= w[1]) && g.first() != g.last()).then_some(())
    })
    .await;

    // Back to descending, then open the worst row's scenario.
    c.find(Locator::Css("#sort-gap button")).await.unwrap().click().await.unwrap();
    wait_for("descending again", || async { (gaps(&c).await == want).then_some(()) }).await;
    let link = c.find(Locator::Css("#sweep-table tbody tr a.permalink")).await.unwrap();
    let href = link.attr("href").await.unwrap().unwrap();
    assert!(href.starts_with("/s/v1."), "{href}");
    link.click().await.unwrap();
    let irqs_line = wait_for("the scenario page", || async {
        match c.find(Locator::Css("#irqs-line")).await {
            Ok(e) => e.text().await.ok(),
            Err(_) => None,
        }
    })
    .await;
    let url = c.current_url().await.unwrap();
    assert_eq!(url.path(), href, "the row's permalink opened");
    let topo_line = text_of(&c, "#result p.topo").await;
    eprintln!("worst row {top:?} opened: {topo_line} / {irqs_line}");
    // The scenario page reports the same busiest CPU as the sweep row.
    let source = c.source().await.unwrap();
    assert!(source.contains(&format!("IRQs/CPU: max {} ", top.2)), "{top:?} not on the page: {irqs_line}");
    if top.1 != "offset-by-probed" {
        let variant = c.find(Locator::Css("#kernel-editor #variant")).await.unwrap().prop("value").await.unwrap();
        assert_eq!(variant.as_deref(), Some(top.1.as_str()), "the variant is pinned by the link");
    }
    screenshot(&c, "sweep-row-permalink").await;
    c.close().await.unwrap();
}
