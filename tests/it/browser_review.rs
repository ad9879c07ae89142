//! `/r/<id>` in Chromium at 1024 and 1920 px: the verdict is on the first screen and the
//! reply is 72 columns at most (bare URL lines aside).

use crate::common::browser::*;
use crate::common::fs::Scratch;
use crate::review::{review_app, sample_review};

#[tokio::test]
async fn a_review_page_leads_with_its_verdict() {
    let _one = ONE_AT_A_TIME.lock().await;
    let dir = Scratch::new("browser-review");
    let r = sample_review();
    std::fs::write(dir.join(format!("{}.json", r.id)), serde_json::to_string(&r).unwrap()).unwrap();
    let Some(mut h) = Harness::start_with(review_app(&dir)).await else {
        return;
    };
    let c = h.session().await;
    for w in [1024u32, 1920] {
        c.set_window_size(w, 900).await.unwrap();
        c.goto(&format!("{}/r/{}", h.base, r.id)).await.unwrap();
        let v = c
            .execute(
                r#"
const v = document.getElementById('review-verdict').getBoundingClientRect();
const reply = document.getElementById('review-reply').textContent;
return { top: v.top + window.scrollY, bottom: v.bottom + window.scrollY, height: v.height,
         fold: window.innerHeight, reply };
"#,
                vec![],
            )
            .await
            .unwrap();
        screenshot(&c, &format!("review-{w}")).await;
        let (bottom, fold) = (v["bottom"].as_f64().unwrap(), v["fold"].as_f64().unwrap());
        assert!(v["height"].as_f64().unwrap() > 0.0, "the verdict is drawn: {v}");
        assert!(bottom < fold, "at {w} px the verdict ends below the first screen: {v}");
        let reply = v["reply"].as_str().unwrap();
        assert!(reply.contains("This patch changes where interrupts land."));
        for line in reply.lines() {
            assert!(line.chars().count() <= 72 || line.starts_with("/c/"), "{line:?}");
        }
    }
    assert!(h.console_errors(&c).await.is_empty());
    c.close().await.unwrap();
}
