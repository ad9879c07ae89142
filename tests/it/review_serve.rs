//! `serve --review`: a real server takes pasted patches. A fork bomb queued beside a harmless
//! patch fails with a clear message while the harmless one lands on its `/r/<id>`, the server
//! answers throughout, and nothing the hostile C started outlives it. Admission is checked on
//! the way: what is not a patch is refused at once, and one address may hold two jobs. The
//! patches are written here at run time from Debian's tree; without `IRQSCOPE_KERNEL_C_72` the
//! test says so and passes without checking.

use crate::common::fs::Scratch;
use crate::common::process::{free_port, KillGroupOnDrop};
use crate::kernel_c::{patched, tree};
use crate::kernel_c_hostile::processes_running_from;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One HTTP/1.1 exchange on a fresh connection: the status, the headers' text, the body.
fn http(port: u16, method: &str, path: &str, body: Option<(&str, &[u8])>) -> (u16, String, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    if let Some((ty, b)) = body {
        req.push_str(&format!("Content-Type: {ty}\r\nContent-Length: {}\r\n", b.len()));
    }
    req.push_str("\r\n");
    let mut bytes = req.into_bytes();
    if let Some((_, b)) = body {
        bytes.extend_from_slice(b);
    }
    s.write_all(&bytes).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let out = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

/// The job a `POST /review` answer sends the browser to.
fn job_of(head: &str) -> String {
    head.lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("location: /review/job/")
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("no job in {head}"))
}

/// Form-encode a patch as the page's form sends it.
fn form(patch: &str) -> Vec<u8> {
    let mut out = b"patch=".to_vec();
    for b in patch.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => out.push(b),
            b' ' => out.push(b'+'),
            _ => out.extend_from_slice(format!("%{b:02X}").as_bytes()),
        }
    }
    out
}

#[test]
fn a_fork_bomb_beside_a_harmless_patch_fails_alone() {
    let Some(t) = tree("IRQSCOPE_KERNEL_C_72") else { return };
    let dir = Scratch::new("review-serve");
    let cache = dir.join("cache");
    let reviews = dir.join("reviews");
    // Every call of group_cpus_evenly() forks 64 times.
    let (head, tail) = (
        "\tif (numgrps == 0)\n\t\treturn NULL;\n",
        "\n\tif (!zalloc_cpumask_var(&nmsk, GFP_KERNEL))",
    );
    let bomb_dir = dir.join("bomb");
    let (bomb, _) = patched(
        &bomb_dir,
        &t,
        &format!("{head}{tail}"),
        &format!("{head}\t{{\n\t\tint i;\n\n\t\tfor (i = 0; i < 64; i++)\n\t\t\tfork();\n\t}}\n{tail}"),
    );
    let calm_dir = dir.join("calm");
    let anchor = "\textra_grps = ncpus - nv->ngroups * (ncpus / nv->ngroups);\n";
    let (_, calm) = patched(
        &calm_dir,
        &t,
        anchor,
        &format!("{anchor}\t/* the extra CPUs go to the first groups */\n"),
    );
    let port = free_port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_irqscope"));
    cmd.env("IRQSCOPE_KERNEL_C_DIR", &cache)
        .env("IRQSCOPE_KERNEL_C_CALL_MS", "2000")
        .args([
            "serve",
            "--addr",
            &format!("127.0.0.1:{port}"),
            "--review",
            "--review-base",
        ])
        .arg(&t)
        .arg("--review-dir")
        .arg(&reviews)
        .args(["--review-workers", "1", "--review-seconds", "240"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    let _server = KillGroupOnDrop(cmd.spawn().unwrap());
    let up = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(up.elapsed() < Duration::from_secs(20), "the server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (code, _, page) = http(port, "GET", "/review", None);
    assert_eq!(code, 200, "{page}");
    assert!(page.contains("id=\"review-form\""), "{page}");

    // The fork bomb first, as curl sends a file; the harmless one as the page's form does.
    let bomb_text = std::fs::read(&bomb).unwrap();
    let (code, head, body) = http(port, "POST", "/review", Some(("text/plain", &bomb_text)));
    assert_eq!(code, 303, "{head}{body}");
    let hostile = job_of(&head);
    let calm_text = std::fs::read_to_string(&calm).unwrap();
    let (code, head, body) = http(
        port,
        "POST",
        "/review",
        Some(("application/x-www-form-urlencoded", &form(&calm_text))),
    );
    assert_eq!(code, 303, "{head}{body}");
    let harmless = job_of(&head);
    // Not a patch: refused at once. A third job from the same address: refused too.
    let (code, _, body) = http(port, "POST", "/review", Some(("text/plain", b"hello")));
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("not a patch"), "{body}");
    let (code, _, body) = http(port, "POST", "/review", Some(("text/plain", &bomb_text)));
    assert_eq!(code, 429, "{body}");
    assert!(body.contains("at most 2 per address"), "{body}");

    // Both end; the server answers other pages all the while.
    let started = Instant::now();
    let state = |job: &str| {
        let (code, _, body) = http(port, "GET", &format!("/review/job/{job}/json"), None);
        assert_eq!(code, 200, "{body}");
        serde_json::from_str::<serde_json::Value>(&body).unwrap()
    };
    let (h, c) = loop {
        let (h, c) = (state(&hostile), state(&harmless));
        let finished = |v: &serde_json::Value| v["state"] == "done" || v["state"] == "failed";
        if finished(&h) && finished(&c) {
            break (h, c);
        }
        let (code, _, _) = http(port, "GET", "/api/topologies", None);
        assert_eq!(code, 200, "the server stopped answering while reviews ran");
        assert!(started.elapsed() < Duration::from_secs(240), "{h} {c}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(h["state"], "failed", "{h}");
    assert!(h["message"].as_str().unwrap().contains("the sandbox refuses"), "{h}");
    assert_eq!(c["state"], "done", "{c}");
    let review = c["review"].as_str().unwrap();
    let (code, _, page) = http(port, "GET", &format!("/review/job/{harmless}"), None);
    assert_eq!(code, 303, "a finished job sends its page on to the review: {page}");
    let (code, _, page) = http(port, "GET", &format!("/r/{review}"), None);
    assert_eq!(code, 200, "{page}");
    assert!(page.contains("a change made by the test"), "the subject: {page}");
    let (_, _, reply) = http(port, "GET", &format!("/r/{review}/text"), None);
    assert!(reply.contains("No machine changes."), "{reply}");
    // The failed job's page says why; its event stream ends with the same.
    let (code, _, page) = http(port, "GET", &format!("/review/job/{hostile}"), None);
    assert_eq!(code, 200);
    assert!(
        page.contains("The review failed:") && page.contains("the sandbox refuses"),
        "{page}"
    );
    let (code, head, events) = http(port, "GET", &format!("/review/job/{hostile}/events"), None);
    assert_eq!(code, 200, "{head}");
    assert!(
        events.contains("event: status") && events.contains("\"state\":\"failed\""),
        "{events}"
    );
    // Nothing the reviews' C started is left running.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_running_from(&cache).is_empty() {
        assert!(
            Instant::now() < deadline,
            "left running: {:?}",
            processes_running_from(&cache)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Now the address may queue again.
    let (code, head, body) = http(port, "POST", "/review", Some(("text/plain", &bomb_text)));
    assert_eq!(code, 303, "{head}{body}");
}
