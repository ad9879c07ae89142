//! Mail text: every text twin and CLI report keeps to 72 columns (a line that is only a URL
//! excepted), and the command each prints, pasted into `sh -c` with the built binary on PATH,
//! prints the same report byte for byte, an edited machine included (it travels as a compact
//! `cpus:…` word, no file).

use irqscope::scenario::mana::ManaSpec;
use irqscope::scenario::permalink;
use irqscope::scenario::sched::SchedSpec;
use irqscope::scenario::spec::{DeviceSpec, ScenarioSpec, TopologyRef};
use std::process::Command;

use crate::common::http::get;

const COLUMNS_MAX: usize = 72;

fn assert_mail_width(what: &str, text: &str) {
    for line in text.lines() {
        let url_only = line.starts_with("http") && !line.contains(' ');
        assert!(
            line.chars().count() <= COLUMNS_MAX || url_only,
            "{what}: a line of {} columns:\n{line}\n--- in ---\n{text}",
            line.chars().count()
        );
    }
}

/// The `  $ irqscope …` command of a report, continuation lines and quoted line breaks
/// included, exactly as a reader would select and paste it.
fn printed_command(text: &str) -> String {
    let mut lines = text.lines().skip_while(|l| !l.starts_with("  $ "));
    let mut command = String::new();
    let mut quotes = 0;
    for line in lines.by_ref() {
        let line = line.strip_prefix("  $ ").unwrap_or(line);
        command.push_str(line);
        command.push('\n');
        quotes += line.matches('\'').count();
        if !line.ends_with('\\') && quotes % 2 == 0 {
            break;
        }
    }
    assert!(command.starts_with("irqscope "), "no command in:\n{text}");
    command
}

/// Run a pasted command through `sh -c` with the test binary first on PATH.
fn run_pasted(command: &str) -> String {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_irqscope"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pasted command failed:\n{command}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A twin is the CLI report with the permalink line appended: check both directions.
fn check_twin(what: &str, twin: &str) {
    assert_mail_width(what, twin);
    let last = twin.lines().last().unwrap();
    assert!(
        last.starts_with("http://irqscope.test/"),
        "{what}: permalink not last:\n{twin}"
    );
    let report = twin.strip_suffix(&format!("\n{last}\n")).expect("permalink block");
    let command = printed_command(twin);
    let cli = run_pasted(&command);
    assert_eq!(
        cli, report,
        "{what}: the pasted command prints another report\n{command}"
    );
}

/// A CLI report: its own command reproduces it.
fn check_cli(what: &str, args: &[&str]) -> String {
    let text = crate::common::cli::irqscope(args);
    assert_mail_width(what, &text);
    let command = printed_command(&text);
    assert_eq!(run_pasted(&command), text, "{what}: {command}");
    text
}

fn seed_spec(topology: TopologyRef) -> ScenarioSpec {
    ScenarioSpec {
        variant: "pre-cluster".into(),
        ..ScenarioSpec::new(
            topology,
            vec![DeviceSpec {
                pre: 1,
                name: Some("nvme".into()),
                ..DeviceSpec::new(6, 62)
            }],
        )
    }
}

/// An edited machine: a preset's lists with a new name (quotes, `;` and a `%` in it), a
/// changed distance and offline CPUs.
fn edited(preset: &str) -> TopologyRef {
    let mut t = irqscope::catalogue::get(preset).unwrap().to_spec();
    t.name = format!("edited {preset}; 'ops' 100%");
    t.note.clear();
    let n = t.nodes.as_ref().unwrap().len();
    if n > 1 {
        let mut d = vec![vec![20; n]; n];
        for (i, row) in d.iter_mut().enumerate() {
            row[i] = 10;
        }
        d[0][1] = 32;
        d[1][0] = 32;
        t.distances = Some(d);
    }
    t.online = Some("0-5,8-40".into());
    TopologyRef::Inline(Box::new(t))
}

#[tokio::test]
async fn scenario_twins_paste_and_reproduce() {
    let mut cases = vec![
        (
            "preset".to_string(),
            seed_spec(TopologyRef::Preset("azure-l96as-v4".into())),
        ),
        ("edited 96".into(), seed_spec(edited("azure-l96as-v4"))),
        ("edited 384".into(), seed_spec(edited("amd-epyc-9654-2s-nps4"))),
    ];
    let mut boot = seed_spec(TopologyRef::Preset("azure-l96as-v4".into()));
    boot.irqaffinity = Some("0-3,48-51".into());
    boot.spread_counter = 3;
    boot.variant = "rotation".into();
    cases.push(("boot".into(), boot));
    for (what, spec) in cases {
        let link = permalink::encode(&spec).unwrap();
        let r = get(&format!("/s/{link}/text")).await;
        assert_eq!(r.status, 200, "{what}: {}", r.body);
        if what.starts_with("edited") {
            assert!(
                r.body.contains("'cpus:name=edited"),
                "{what}: no compact machine:\n{}",
                r.body
            );
            assert!(!r.body.contains("topology.toml"), "{what}");
        }
        check_twin(&what, &r.body);
    }
}

#[tokio::test]
async fn mana_and_sched_twins_paste_and_reproduce() {
    let mut mana = ManaSpec::seed();
    let r = get(&format!("/m/{}/text", permalink::encode(&mana).unwrap())).await;
    assert_eq!(r.status, 200, "{}", r.body);
    check_twin("mana seed", &r.body);
    mana.topology = match &mana.topology {
        TopologyRef::Preset(p) => edited(p),
        other => other.clone(),
    };
    if let TopologyRef::Inline(t) = &mut mana.topology {
        t.online = None;
        t.distances = None;
    }
    let r = get(&format!("/m/{}/text", permalink::encode(&mana).unwrap())).await;
    assert_eq!(r.status, 200, "{}", r.body);
    check_twin("mana edited", &r.body);

    let sched = SchedSpec::seed();
    let r = get(&format!("/n/{}/text", permalink::encode(&sched).unwrap())).await;
    assert_eq!(r.status, 200, "{}", r.body);
    check_twin("sched seed", &r.body);
}

/// The compare twin: the permalink last, and its first command (`irqscope compare …`, the
/// machine as a compact word when edited) pasted into `sh` prints the report byte for byte.
#[tokio::test]
async fn compare_twins_paste_and_reproduce() {
    use irqscope::scenario::payloads::{CompareSpec, SideSpec};
    let side = |variant: &str, counter: Option<u32>| SideSpec {
        variant: Some(variant.into()),
        sort: None,
        effective: None,
        spread_counter: counter,
        kernel_c: None,
    };
    let cases = [
        (
            "preset",
            CompareSpec {
                scenario: seed_spec(TopologyRef::Preset("azure-l96as-v4".into())),
                a: side("pre-cluster", None),
                b: side("rotation", Some(3)),
            },
        ),
        (
            "edited",
            CompareSpec {
                scenario: seed_spec(edited("azure-l96as-v4")),
                a: side("cluster", None),
                b: side("pre-cluster", None),
            },
        ),
    ];
    for (what, spec) in cases {
        let r = get(&format!("/c/{}/text", permalink::encode(&spec).unwrap())).await;
        assert_eq!(r.status, 200, "{what}: {}", r.body);
        assert!(r.body.contains("  $ irqscope compare "), "{what}:\n{}", r.body);
        assert_eq!(
            r.body.matches("http://irqscope.test/").count(),
            1,
            "{what}:\n{}",
            r.body
        );
        check_twin(&format!("compare {what}"), &r.body);
    }
}

#[tokio::test]
async fn sweep_twin_pastes_and_reproduces() {
    let r = get("/sweep/text?topologies=azure-l96as-v4,azure-4vcpu-smt2&counters=0..2&variants=cluster,pre-cluster,rotation,rotation-ohcl,rotation-v1r").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_mail_width("sweep", &r.body);
    let command = printed_command(&r.body);
    assert!(command.matches("--variants").count() >= 2, "list not cut:\n{command}");
    assert_eq!(run_pasted(&command), r.body, "{command}");
}

#[test]
fn cli_reports_print_a_command_that_reproduces_them() {
    check_cli(
        "blk-mq",
        &["blk-mq", "azure-l96as-v4", "--queues", "36", "--mapper", "legacy-v4.13"],
    );
    check_cli("blk-mq current", &["blk-mq", "amd-epyc-9654-2s-nps4", "--queues", "64"]);
    let mana = check_cli("mana", &["mana", "azure-d16plds-v6", "--load", &["1"; 16].join(",")]);
    assert!(mana.starts_with("  $ irqscope mana azure-d16plds-v6 "), "{mana}");
    check_cli("sched", &["sched", "azure-l96as-v4", "--noise", "2"]);
    let word = irqscope::topology::compact::encode(&irqscope::catalogue::get("azure-l96as-v4").unwrap());
    let sim = check_cli("simulate compact", &["simulate", &word, "4x8:name=nic"]);
    assert!(sim.contains("'cpus:name="), "{sim}");
}

#[test]
fn a_bad_machine_word_is_one_line_exit_2() {
    for word in [
        "cpus:nodes=0-3;bogus=1",
        "cpus:nodes=0-3;distances=10,x",
        "cpus:smt=0-1",
    ] {
        for args in [
            vec!["simulate", word, "2x2"],
            vec!["mana", word],
            vec!["sched", word],
            vec!["blk-mq", word, "--queues", "2"],
        ] {
            let out = Command::new(env!("CARGO_BIN_EXE_irqscope"))
                .args(&args)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2), "{args:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
            assert!(err.contains("machine word"), "{args:?}: {err}");
        }
    }
    // A word that reads but does not validate is refused by the topology's own check.
    let out = Command::new(env!("CARGO_BIN_EXE_irqscope"))
        .args(["simulate", "cpus:nodes=1-3", "2x2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stderr).trim_end().lines().count(), 1);
}

async fn get_accepting(uri: &str, accept: &str) -> crate::common::http::Reply {
    use axum::body::Body;
    use axum::http::{header, Request};
    crate::common::http::send(
        Request::get(uri)
            .header(header::HOST, "irqscope.test")
            .header(header::ACCEPT, accept)
            .body(Body::empty())
            .unwrap(),
    )
    .await
}

/// A damaged link: a page for a browser, the one-line text for curl, same status and message.
#[tokio::test]
async fn errors_are_html_for_browsers_and_text_for_curl() {
    let link = permalink::encode(&seed_spec(TopologyRef::Preset("azure-l96as-v4".into()))).unwrap();
    let damaged = format!("/s/{}", &link[..link.len() - 10]);
    let curl = get_accepting(&damaged, "*/*").await;
    assert_eq!(curl.status, 400);
    assert!(curl.headers["content-type"].to_str().unwrap().starts_with("text/plain"));
    assert_eq!(curl.body.lines().count(), 1, "{}", curl.body);
    let browser = get_accepting(
        &damaged,
        "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    )
    .await;
    assert_eq!(browser.status, 400);
    assert!(browser.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(browser.body.contains("<!doctype html>"), "{}", browser.body);
    assert!(browser.body.contains("400 Bad Request"));
    assert!(
        browser.body.contains(curl.body.trim().split('"').next().unwrap()),
        "{}",
        browser.body
    );
    assert!(browser.body.contains("href=\"/static/favicon.svg\""));
    // A message quoting the input is escaped in the page.
    let r = get_accepting("/sweep/text?topologies=%3Cscript%3Ealert(1)%3C/script%3E", "text/html").await;
    assert!(r.status.is_client_error());
    assert!(
        r.body.contains("&lt;script&gt;") || r.body.contains("&#60;script&#62;"),
        "{}",
        r.body
    );
    assert!(!r.body.contains("<script>alert"), "{}", r.body);
    let missing = get_accepting("/no/such/page", "text/html").await;
    assert_eq!(missing.status, 404);
    assert!(missing.body.contains("no such page") && missing.body.contains("<html"));
    // Successful pages are untouched.
    let ok = get_accepting("/sweep/text?topologies=azure-4vcpu-smt2&counters=0", "text/html").await;
    assert_eq!(ok.status, 200);
    assert!(ok.body.starts_with("irqscope sweep"));
}

#[tokio::test]
async fn the_favicon_is_served() {
    for uri in ["/favicon.ico", "/static/favicon.svg"] {
        let r = get(uri).await;
        assert_eq!(r.status, 200, "{uri}");
        assert_eq!(r.headers["content-type"], "image/svg+xml", "{uri}");
        assert!(r.body.starts_with("<svg"), "{uri}");
    }
}

/// `scenario` compared pre-cluster (A) against rotation from counter 3 (B).
fn pre_cluster_against_rotation(scenario: ScenarioSpec) -> irqscope::scenario::payloads::CompareSpec {
    use irqscope::scenario::payloads::{CompareSpec, SideSpec};
    CompareSpec {
        scenario,
        a: SideSpec {
            variant: Some("pre-cluster".into()),
            ..SideSpec::default()
        },
        b: SideSpec {
            variant: Some("rotation".into()),
            spread_counter: Some(3),
            ..SideSpec::default()
        },
    }
}

/// Words and list items of a line: split at spaces and commas.
fn tokens(line: &str) -> usize {
    line.split([' ', ',']).filter(|t| !t.is_empty()).count()
}

/// Each "1 IRQs"-style count of a text: a 1 standing alone (not part of a larger number, nor
/// the last of a list of counts such as "per node: 0 0 1 IRQs") before a plural unit.
fn one_plurals(text: &str) -> Vec<String> {
    const UNITS: [&str; 8] = [
        "IRQs", "CPUs", "devices", "nodes", "vectors", "queues", "clusters", "groups",
    ];
    let mut out = Vec::new();
    for line in text.lines() {
        let b = line.as_bytes();
        for (at, _) in line.match_indices("1 ") {
            let before = &b[..at];
            let number_goes_on = before.last().is_some_and(|c| c.is_ascii_digit() || b".,-+".contains(c));
            let in_a_list =
                before.len() >= 2 && before[before.len() - 1] == b' ' && before[before.len() - 2].is_ascii_digit();
            let word = line[at + 2..].split([' ', ',', ';', ')', ':']).next().unwrap_or("");
            if !number_goes_on && !in_a_list && UNITS.contains(&word) {
                out.push(line.to_string());
            }
        }
    }
    out
}

/// Every preset's text twin (a scenario and a compare, with several device mixes): no wrapped
/// line holds a single word, number or list item (a sentence ended "serve" / "3", a cpulist
/// "190-191)"), and no count of one takes a plural ("1 IRQs", "1 vectors").
#[tokio::test]
async fn preset_twins_leave_no_lone_token_and_say_1_irq() {
    // The checks themselves catch what they are for.
    assert_eq!(tokens("    3"), 1);
    assert_eq!(tokens("    188,190-191)"), 2);
    assert_eq!(
        one_plurals("counted: 1 IRQs on 8 CPUs\n  x: 1 vectors, 1 managed").len(),
        2
    );
    assert!(one_plurals("per node: 0 0 1 IRQs; 11 IRQs; 1 IRQ; 0.1 CPUs").is_empty());
    let mut problems = Vec::new();
    for name in irqscope::catalogue::names() {
        let mixes: &[&str] = if name == "synthetic-8192" {
            &["16x64", "1:name=x"]
        } else {
            &[
                "6x62:pre=1,name=nvme",
                "1:name=x",
                "4x8:pre=1,name=nvme 3:name=nic",
                "2x1",
            ]
        };
        for mix in mixes {
            let devices: Vec<DeviceSpec> = mix
                .split(' ')
                .map(|t| irqscope::scenario::spec::parse_device_token(t).unwrap())
                .collect();
            let spec = ScenarioSpec::new(TopologyRef::Preset(name.into()), devices);
            let cmp = pre_cluster_against_rotation(spec.clone());
            for uri in [
                format!("/s/{}/text", permalink::encode(&spec).unwrap()),
                format!("/c/{}/text", permalink::encode(&cmp).unwrap()),
            ] {
                let r = get(&uri).await;
                if r.status == 400 {
                    continue; // devices the machine cannot take
                }
                assert_eq!(r.status, 200, "{name} {mix}: {}", r.body);
                for line in r.body.lines().filter(|l| l.starts_with(' ')) {
                    if tokens(line) < 2 {
                        problems.push(format!("{name} {mix} {}: lone {line:?}", &uri[..2]));
                    }
                }
                for line in one_plurals(&r.body) {
                    problems.push(format!("{name} {mix} {}: {line:?}", &uri[..2]));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// Every text twin keeps to 72 columns on every preset, the 8,192-CPU machine's compare and
/// blk-mq map included; a line past 72 columns is only ever a URL alone.
#[tokio::test]
async fn every_twin_keeps_to_72_columns_on_every_preset() {
    for name in irqscope::catalogue::names() {
        let devices = if name == "synthetic-8192" {
            "16x64"
        } else {
            "6x62:pre=1,name=nvme"
        };
        let spec = ScenarioSpec::new(
            TopologyRef::Preset(name.into()),
            vec![irqscope::scenario::spec::parse_device_token(devices).unwrap()],
        );
        let link = permalink::encode(&spec).unwrap();
        let r = get(&format!("/s/{link}/text")).await;
        assert_eq!(r.status, 200, "{name}: {}", r.body);
        assert_mail_width(&format!("scenario {name}"), &r.body);
        let cmp = pre_cluster_against_rotation(spec);
        let r = get(&format!("/c/{}/text", permalink::encode(&cmp).unwrap())).await;
        assert_eq!(r.status, 200, "{name}: {}", r.body);
        assert_mail_width(&format!("compare {name}"), &r.body);
        let r = get(&format!("/blkmq/text?preset={name}&queues=64")).await;
        assert_eq!(r.status, 200, "{name}: {}", r.body);
        assert_mail_width(&format!("blk-mq {name}"), &r.body);
    }
    for (what, uri) in [
        ("mana", "/mana?preset=azure-l96as-v4"),
        ("sched", "/sched?preset=arm64-2s-snc-cluster-spans"),
    ] {
        let page = get(uri).await;
        assert_eq!(page.status, 200, "{what}: {}", page.body);
        let link = page.body.split(r#"id="permalink" href=""#).nth(1).unwrap();
        let link = &link[..link.find('"').unwrap()];
        let r = get(&format!("{link}/text")).await;
        assert_eq!(r.status, 200, "{what}: {}", r.body);
        assert_mail_width(what, &r.body);
    }
    for uri in ["/seeds/text", "/fleet/text"] {
        let r = get(uri).await;
        assert_eq!(r.status, 200, "{uri}: {}", r.body);
        assert_mail_width(uri, &r.body);
    }
}
