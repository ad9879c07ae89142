//! Driving the dashboard's router with `oneshot`, as the axum testing example does.

use axum::body::Body;
use axum::http::{header, HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use irqscope::web::{self, AppState};
use tower::ServiceExt;

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Reply {
    /// The body's text without its markup (a page writes cpulists with `<span>` and `<wbr>`
    /// so they break only between ranges): what a reader sees, to look sentences up in.
    pub fn text(&self) -> String {
        plain(&self.body)
    }
}

/// `html` without its tags.
pub fn plain(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

pub async fn send(req: Request<Body>) -> Reply {
    let resp = web::app(AppState::default()).oneshot(req).await.unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    Reply {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

pub async fn get(uri: &str) -> Reply {
    send(
        Request::get(uri)
            .header(header::HOST, "irqscope.test")
            .body(Body::empty())
            .unwrap(),
    )
    .await
}

pub async fn post(uri: &str, body: impl Into<Body>) -> Reply {
    send(
        Request::post(uri)
            .header(header::CONTENT_TYPE, "application/json")
            .body(body.into())
            .unwrap(),
    )
    .await
}
