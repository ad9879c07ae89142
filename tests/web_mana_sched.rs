//! The MANA and sched pages over HTTP (`web::app(state).oneshot`), MANA devices in scenario
//! permalinks, and a permalink encoded before MANA devices existed, which must still give the
//! same bytes.

use axum::body::Body;
use axum::http::{header, HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use irqscope::web::{self, AppState};
use tower::ServiceExt;

struct Reply {
    status: StatusCode,
    #[allow(dead_code)]
    headers: HeaderMap,
    body: String,
}

async fn get(uri: &str) -> Reply {
    let req = Request::get(uri).header(header::HOST, "irqscope.test").body(Body::empty()).unwrap();
    let resp = web::app(AppState::default()).oneshot(req).await.unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    Reply { status, headers, body: String::from_utf8_lossy(&bytes).into_owned() }
}

fn data(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// `tests/data/permalink-before-mana.*` were recorded from the code before MANA devices were
/// added to scenarios: the link, its text twin and its JSON twin.
#[tokio::test]
async fn permalink_from_before_mana_devices_reproduces_exactly() {
    let link = data("permalink-before-mana.txt");
    let link = link.trim();
    let text = get(&format!("/s/{link}/text")).await;
    assert_eq!(text.status, StatusCode::OK, "{}", text.body);
    assert_eq!(text.body, data("permalink-before-mana.text"));
    let json = get(&format!("/s/{link}/json")).await;
    assert_eq!(json.status, StatusCode::OK, "{}", json.body);
    assert_eq!(json.body, data("permalink-before-mana.json"));
    let page = get(&format!("/s/{link}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains(&format!("/s/{link}")), "the page re-encodes to the same link");
}
