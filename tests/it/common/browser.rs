//! The browser-test harness shared by every `tests/browser*.rs`: Debian's `chromium` driven
//! through `chromedriver` (packages `chromium` and `chromium-driver`) with fantoccini, the app
//! on a loopback port, one headless Chromium profile per session, screenshots under
//! `target/screenshots/`.
//!
//! Without chromium or chromedriver the tests FAIL with a message naming the packages, unless
//! `IRQSCOPE_SKIP_BROWSER=1` is set.
#![allow(dead_code)]

pub use super::process::{find_program, free_port};
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long to wait for the page to reflect a change.
pub const WAIT_MS_MAX: u64 = 20_000;

/// Browsers are heavy; run one test at a time.
pub static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// `None` when the tests should be skipped (explicitly asked); panics when tools are missing.
pub fn tools() -> Option<(PathBuf, PathBuf)> {
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

pub struct Harness {
    pub base: String,
    driver_url: String,
    chromium: PathBuf,
    driver: Child,
    /// Directories removed on drop: chromedriver's temporary directory and each session's
    /// profile.
    profiles: Vec<PathBuf>,
    server: tokio::task::JoinHandle<()>,
}

impl Harness {
    /// The dashboard with its embedded defaults, chromedriver, no session yet.
    pub async fn start() -> Option<Harness> {
        Harness::start_with(irqscope::web::app(irqscope::web::AppState::default())).await
    }

    /// [`Harness::start`] serving `app` (a live or fleet set-up) instead.
    pub async fn start_with(app: axum::Router) -> Option<Harness> {
        let (chromium, chromedriver) = tools()?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        let port = free_port();
        // The temporary files chromedriver and its browsers make (Chromium's scoped_dir and
        // org.chromium.Chromium.* directories) go to a directory of the harness's own, removed
        // with the profiles when it is dropped.
        let tmp = std::env::temp_dir().join(format!("irqscope-chromedriver-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        // chromedriver leads a process group of its own, and the browsers it starts stay in it,
        // so that dropping the harness ends them too (see `Drop`).
        let driver = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .env("TMPDIR", &tmp)
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", chromedriver.display()));
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "chromedriver did not listen on port {port}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Some(Harness {
            base,
            driver_url: format!("http://127.0.0.1:{port}"),
            chromium,
            driver,
            profiles: vec![tmp],
            server,
        })
    }

    /// A new browser session with a fresh profile.
    pub async fn session(&mut self) -> Client {
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
        // The browser's console (errors, CSP refusals) for `console_errors`.
        caps.insert("goog:loggingPrefs".into(), json!({ "browser": "ALL" }));
        ClientBuilder::new(HttpConnector::new())
            .capabilities(caps)
            .connect(&self.driver_url)
            .await
            .unwrap_or_else(|e| panic!("starting chromium through chromedriver: {e}"))
    }
}

impl Harness {
    /// The console messages at level SEVERE (script errors, refused inline styles or scripts,
    /// failed loads) the browser logged since the last call, read from chromedriver's log
    /// endpoint (the session was opened with `goog:loggingPrefs`).
    pub async fn console_errors(&self, c: &Client) -> Vec<String> {
        use http_body_util::BodyExt;
        let id = c.session_id().await.unwrap().expect("a session");
        let req = hyper::Request::post(format!("{}/session/{id}/se/log", self.driver_url))
            .header("content-type", "application/json")
            .body(http_body_util::Full::new(hyper::body::Bytes::from(
                r#"{"type":"browser"}"#,
            )))
            .unwrap();
        let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(HttpConnector::new());
        let resp = client.request(req).await.expect("chromedriver's log endpoint");
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        v["value"]
            .as_array()
            .map(|entries| {
                entries
                    .iter()
                    .filter(|e| e["level"] == "SEVERE")
                    .map(|e| e["message"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        // A session a test did not close (a failed assertion, an early return) leaves its
        // browser running once chromedriver is gone: end the whole group, browsers first.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.driver.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        self.server.abort();
        for p in &self.profiles {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

/// Tallest screenshot taken (a page taller than this is cut).
const SCREENSHOT_PX_MAX: u64 = 6000;

/// The whole page (up to [`SCREENSHOT_PX_MAX`] tall) as `target/screenshots/NAME.png`: the
/// window grows to the page's height for the shot and gets its size back after.
pub async fn screenshot(c: &Client, name: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let (w, h) = c.get_window_size().await.unwrap();
    let page = c
        .execute("return document.documentElement.scrollHeight", vec![])
        .await
        .ok()
        .and_then(|v| v.as_u64())
        .unwrap_or(h);
    // The window's outer height adds the browser's chrome to the viewport's.
    let chrome = h.saturating_sub(
        c.execute("return window.innerHeight", vec![])
            .await
            .ok()
            .and_then(|v| v.as_u64())
            .unwrap_or(h),
    );
    let tall = (page + chrome).clamp(h, SCREENSHOT_PX_MAX);
    if tall > h {
        c.set_window_size(w as u32, tall as u32).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let png = c.screenshot().await.unwrap();
    if tall > h {
        c.set_window_size(w as u32, h as u32).await.unwrap();
    }
    std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
}

/// Text of the first element matching `css`. The page replaces its result block whenever an
/// input changes, so an element found a moment ago may be gone: look it up again then.
pub async fn text_of(c: &Client, css: &str) -> String {
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
pub async fn wait_for<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            started.elapsed() < Duration::from_millis(WAIT_MS_MAX),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

/// Choose `value` in the `<select>` matching `css`.
pub async fn select(c: &Client, css: &str, value: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .select_by_value(value)
        .await
        .unwrap_or_else(|e| panic!("{css} = {value}: {e}"));
}

/// Click the element matching `css`.
pub async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .click()
        .await
        .unwrap_or_else(|e| panic!("clicking {css}: {e}"));
}

/// A DOM property (`value`, `checked`, …) of the element matching `css`.
pub async fn prop_of(c: &Client, css: &str, name: &str) -> Option<String> {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .prop(name)
        .await
        .unwrap()
}
