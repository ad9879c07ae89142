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

/// `serve --review` as a reviewer uses it, at 1024 and 1920 px: a patch pasted on `/review`,
/// the job's page following it, and the browser landing on the review's page with its
/// verdict. Needs Debian's 7.2 tree (`IRQSCOPE_KERNEL_C_72`); says so and passes without.
#[tokio::test]
async fn a_pasted_patch_lands_on_its_review() {
    let Some(t) = crate::kernel_c::tree("IRQSCOPE_KERNEL_C_72") else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let dir = Scratch::new("browser-review-queue");
    let anchor = "\textra_grps = ncpus - nv->ngroups * (ncpus / nv->ngroups);\n";
    let (_, mail) = crate::kernel_c::patched(
        &dir.join("patch"),
        &t,
        anchor,
        &format!("{anchor}\t/* the extra CPUs go to the first groups */\n"),
    );
    let patch = std::fs::read_to_string(&mail).unwrap();
    let queue = irqscope::web::review_queue::ReviewQueue::start(irqscope::web::review_queue::QueueConfig {
        program: env!("CARGO_BIN_EXE_irqscope").into(),
        dir: dir.join("reviews"),
        cache: dir.join("cache"),
        base: Some(t.display().to_string()),
        workers: 1,
        queue_max: 4,
        per_client_max: 2,
        deadline: std::time::Duration::from_secs(120),
        reviews_max: 10,
        check: irqscope::review::check_text,
    })
    .unwrap();
    let app = irqscope::web::app(irqscope::web::AppState {
        review_dir: Some(std::sync::Arc::new(dir.join("reviews"))),
        review_queue: Some(queue.clone()),
        ..Default::default()
    });
    let Some(mut h) = Harness::start_with(app).await else {
        queue.stop();
        return;
    };
    let c = h.session().await;
    for w in [1024u32, 1920] {
        c.set_window_size(w, 900).await.unwrap();
        c.goto(&format!("{}/review", h.base)).await.unwrap();
        screenshot(&c, &format!("review-submit-{w}")).await;
        c.execute(
            "document.getElementById('review-patch').value = arguments[0];",
            vec![serde_json::Value::String(patch.clone())],
        )
        .await
        .unwrap();
        click(&c, "#review-submit").await;
        // Builds and a whole review: longer than a page's wait.
        let started = std::time::Instant::now();
        let url = loop {
            let u = c.current_url().await.unwrap();
            if u.path().starts_with("/r/") {
                break u;
            }
            assert!(started.elapsed().as_secs() < 120, "still at {u}");
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        };
        let verdict = text_of(&c, "#review-verdict").await;
        assert!(verdict.contains("No machine changes"), "at {w} px, {url}: {verdict}");
        let subject = text_of(&c, "#review-subject").await;
        assert!(subject.contains("a change made by the test"), "{subject}");
        screenshot(&c, &format!("review-landed-{w}")).await;
    }
    assert!(h.console_errors(&c).await.is_empty());
    c.close().await.unwrap();
    queue.stop();
}
