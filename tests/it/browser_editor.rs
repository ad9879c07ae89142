//! The scenario page's editors in a real browser (the shared harness of `tests/common/browser.rs`):
//! irregular machines stay exact unless a node's shape changes, the package split, the device
//! table's node / blk-mq / driver columns, the proposal control and the custom-machine choice.
//!
//! Without chromium or chromedriver these tests FAIL with a message naming the packages, unless
//! `IRQSCOPE_SKIP_BROWSER=1` is set.

use crate::common;

use common::browser::*;
use fantoccini::{Client, Locator};
use irqscope::scenario::permalink;
use irqscope::scenario::spec::{DeviceSpec, ScenarioSpec, TopologyRef};
use irqscope::topology::{CpuSet, Topology};

/// The scenario the page's URL holds once it is a permalink whose spec satisfies `ok`.
async fn url_spec(c: &Client, what: &str, ok: impl Fn(&ScenarioSpec) -> bool) -> ScenarioSpec {
    wait_for(what, || async {
        let url = c.current_url().await.ok()?;
        let link = url.path().strip_prefix("/s/")?;
        let spec: ScenarioSpec = permalink::decode(link).ok()?;
        ok(&spec).then_some(spec)
    })
    .await
}

fn inline(spec: &ScenarioSpec) -> Option<Topology> {
    match &spec.topology {
        TopologyRef::Inline(t) => Topology::new(t).ok(),
        TopologyRef::Preset(_) => None,
    }
}

fn lists(sets: &[CpuSet]) -> Vec<String> {
    let mut v: Vec<String> = sets.iter().map(CpuSet::to_cpulist).collect();
    v.sort();
    v
}

/// Everything but the online CPUs and the packages, as comparable text.
fn shape(t: &Topology) -> Vec<String> {
    let n = t.nr_node_ids();
    let mut out = vec![
        format!("possible {}", t.possible().to_cpulist()),
        format!("present {}", t.present().to_cpulist()),
        format!("smt {:?}", lists(t.drawn_smt_sets())),
        format!("clusters {:?}", lists(t.drawn_cluster_sets())),
    ];
    for a in 0..n {
        out.push(format!(
            "node {a}: {} distances {:?}",
            t.node_cpus(a).to_cpulist(),
            (0..n).map(|b| t.distance(a, b)).collect::<Vec<_>>()
        ));
    }
    out
}

/// A permalink page opens with its editor folded: unfold it.
async fn open_editor(c: &Client) {
    c.find(Locator::Css("#inputs-box > summary"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for("the editor unfolded", || async {
        (prop_of(c, "#inputs-box", "open").await.as_deref() == Some("true")).then_some(())
    })
    .await;
}

async fn set_text(c: &Client, css: &str, text: &str) {
    let input = c.find(Locator::Css(css)).await.unwrap();
    // Select the old value and type over it (clearing would fire a `change` of its own).
    input.send_keys("\u{E009}a\u{E000}").await.unwrap();
    // Tab fires `change`; an input whose change redraws the editor is gone when send_keys
    // returns, so only the outcome (checked by the caller) counts.
    let _ = input.send_keys(&format!("{text}\u{E004}")).await;
}

async fn value(c: &Client, css: &str) -> String {
    c.find(Locator::Css(css))
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap()
        .unwrap_or_default()
}

#[tokio::test]
async fn editing_offline_cpus_keeps_irregular_machines_exactly() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    for preset in [
        "intel-core-ultra-7-265k",
        "synthetic-sparse-ids",
        "vm-8vcpu-hotplug-64",
        "xeon-2s-18c-nosmt-offline",
    ] {
        let want = irqscope::catalogue::get(preset).unwrap();
        // The highest online CPU of node 0 goes offline.
        let cpu = want.node_cpus(0).and(want.online()).last().unwrap();
        c.goto(&format!("{}/?preset={preset}&devices=4:name=nvme", h.base))
            .await
            .unwrap();
        let offline_css = "#nodes tr.node-row:nth-of-type(2) input.offline";
        let before = value(&c, offline_css).await;
        let text = if before.is_empty() {
            cpu.to_string()
        } else {
            format!("{before},{cpu}")
        };
        set_text(&c, offline_css, &text).await;
        let spec = url_spec(&c, &format!("{preset}: the edited machine in the URL"), |s| {
            inline(s).is_some_and(|t| !t.online().contains(cpu))
        })
        .await;
        let got = inline(&spec).unwrap();
        assert_eq!(shape(&got), shape(&want), "{preset}: only the online CPUs may change");
        assert_eq!(
            lists(got.package_sets()),
            lists(want.package_sets()),
            "{preset}: packages"
        );
        let mut online = want.online().clone();
        online.remove(cpu);
        assert_eq!(got.online().to_cpulist(), online.to_cpulist(), "{preset}");
        // The machine choice says the machine is a custom one derived from the preset.
        let choice = text_of(&c, "#preset option:checked").await;
        assert_eq!(choice, format!("custom (from {preset})"), "{preset}");
        assert_eq!(value(&c, "#preset").await, "custom");
        let status = text_of(&c, "#nodes tr.node-row td.status").await;
        assert!(!status.contains("regenerated"), "{preset}: {status}");
        screenshot(&c, &format!("editor-offline-{preset}")).await;
    }
    c.close().await.unwrap();
}

#[tokio::test]
async fn package_split_and_shape_changes_in_the_editor() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    // Two sockets, one node each: put node 1 in package 0.
    let preset = "xeon-2s-18c-nosmt-offline";
    let want = irqscope::catalogue::get(preset).unwrap();
    c.goto(&format!("{}/?preset={preset}&devices=4", h.base)).await.unwrap();
    assert_eq!(value(&c, "#nodes tr.node-row:nth-of-type(3) input.package").await, "1");
    set_text(&c, "#nodes tr.node-row:nth-of-type(3) input.package", "0").await;
    let spec = url_spec(&c, "one package", |s| {
        inline(s).is_some_and(|t| t.package_sets().len() == 1)
    })
    .await;
    let got = inline(&spec).unwrap();
    assert_eq!(
        shape(&got),
        shape(&want),
        "a package edit keeps the rest of the machine"
    );
    assert_eq!(got.online(), want.online());

    // The hybrid part: its node is irregular, and says so until its shape changes.
    let preset = "intel-core-ultra-7-265k";
    c.goto(&format!("{}/?preset={preset}&devices=4", h.base)).await.unwrap();
    let status = text_of(&c, "#nodes tr.node-row td.status").await;
    assert!(
        status.contains("irregular") && status.contains("kept exactly"),
        "{status}"
    );
    set_text(&c, "#nodes tr.node-row input.cores", "10").await;
    let spec = url_spec(&c, "the regenerated node", |s| {
        inline(s).is_some_and(|t| t.possible().weight() == 10)
    })
    .await;
    let got = inline(&spec).unwrap();
    assert_eq!(got.possible().to_cpulist(), "0-9", "the node reuses its CPU ids");
    let status = text_of(&c, "#nodes tr.node-row td.status").await;
    assert!(status.starts_with("regenerated: 10 cores"), "{status}");
    assert_eq!(
        text_of(&c, "#preset option:checked").await,
        format!("custom (from {preset})")
    );
    screenshot(&c, "editor-hybrid-regenerated").await;
    c.close().await.unwrap();
}

#[tokio::test]
async fn device_driver_columns_and_the_proposal_survive_edits() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    let devices = vec![
        DeviceSpec {
            name: Some("nvme".into()),
            node: Some(1),
            blk_mq: Some("cpumap".into()),
            blk_mq_queues: Some(4),
            pre: 1,
            ..DeviceSpec::new(2, 16)
        },
        DeviceSpec {
            name: Some("eth".into()),
            patched: true,
            msix: Some("static".into()),
            node: Some(0),
            ..DeviceSpec::mana(8)
        },
        DeviceSpec::new(1, 4),
    ];
    let spec = ScenarioSpec {
        variant: "rotation".into(),
        proposal: Some("offset-by-probed".into()),
        ..ScenarioSpec::new(TopologyRef::Preset("azure-l96as-v4".into()), devices.clone())
    };
    c.goto(&format!("{}/s/{}", h.base, permalink::encode(&spec).unwrap()))
        .await
        .unwrap();
    open_editor(&c).await;
    let row = |i: usize, css: &str| format!("#devices tr.dev-row:nth-of-type({}) {css}", i + 2);
    assert_eq!(value(&c, &row(0, "input.node")).await, "1");
    assert_eq!(value(&c, &row(0, "select.blkmq")).await, "cpumap");
    assert_eq!(value(&c, &row(0, "input.blkmq-queues")).await, "4");
    assert_eq!(value(&c, &row(0, "select.driver")).await, "");
    assert_eq!(value(&c, &row(1, "select.driver")).await, "mana");
    assert_eq!(value(&c, &row(1, "select.msix")).await, "static");
    let patched = c
        .find(Locator::Css(&row(1, "input.patched")))
        .await
        .unwrap()
        .prop("checked")
        .await
        .unwrap();
    assert_eq!(patched.as_deref(), Some("true"));
    assert_eq!(value(&c, "#proposal").await, "offset-by-probed");

    // A kernel control changes; every device field and the proposal stay.
    set_text(&c, "#counter", "3").await;
    let got = url_spec(&c, "counter 3 in the link", |s| s.spread_counter == 3).await;
    assert_eq!(got.devices, devices);
    assert_eq!(got.proposal.as_deref(), Some("offset-by-probed"));
    assert_eq!(got.topology, spec.topology, "an untouched preset travels by name");

    // The third device becomes a patched MANA NIC on node 1 with a blk-mq queue count.
    c.find(Locator::Css(&row(2, "select.driver")))
        .await
        .unwrap()
        .select_by_value("mana")
        .await
        .unwrap();
    c.find(Locator::Css(&row(2, "input.patched")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    set_text(&c, &row(2, "input.node"), "1").await;
    let got = url_spec(&c, "the third device as a patched MANA NIC", |s| {
        s.devices
            .get(2)
            .is_some_and(|d| d.driver.as_deref() == Some("mana") && d.patched && d.node == Some(1))
    })
    .await;
    assert_eq!(got.devices[..2], devices[..2]);
    assert_eq!(got.devices[2].msix, None, "dynamic MSI-X is the default");
    let text = wait_for("the mail text of the edited scenario", || async {
        let t = c
            .find(Locator::Css("#mail-text"))
            .await
            .ok()?
            .prop("textContent")
            .await
            .ok()??;
        t.contains("driver=mana,patched=yes,node=1").then_some(t)
    })
    .await;
    assert!(text.contains("driver=mana"), "{text}");
    assert!(text.contains("--proposal offset-by-probed"), "{text}");

    // Back to no proposal.
    select(&c, "#proposal", "").await;
    let got = url_spec(&c, "no proposal", |s| s.proposal.is_none()).await;
    assert_eq!(got.spread_counter, 3);
    screenshot(&c, "editor-devices-proposal").await;
    c.close().await.unwrap();
}

/// The boot-parameter fields: typed values reach the permalink and the mail text (with the
/// ENOSPC line when the held vectors fill the machine); an emptied field leaves the spec.
#[tokio::test]
async fn boot_parameter_fields_reach_the_permalink() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    let spec: ScenarioSpec = serde_json::from_value(serde_json::json!({
        "topology": "vm-2vcpu-smt2",
        "devices": [{"count": 2, "queues": 8, "managed": false}],
        "isolcpus": "managed_irq,1",
    }))
    .unwrap();
    c.goto(&format!("{}/s/{}", h.base, permalink::encode(&spec).unwrap()))
        .await
        .unwrap();
    open_editor(&c).await;
    assert_eq!(value(&c, "#boot-isolcpus").await, "managed_irq,1");
    assert_eq!(value(&c, "#boot-irqaffinity").await, "");
    set_text(&c, "#boot-vectors-held", "0-1:200").await;
    let got = url_spec(&c, "vectors_held in the link", |s| {
        s.vectors_held.as_deref() == Some("0-1:200")
    })
    .await;
    assert_eq!(got.isolcpus.as_deref(), Some("managed_irq,1"));
    let text = wait_for("the ENOSPC line in the mail text", || async {
        let t = c
            .find(Locator::Css("#mail-text"))
            .await
            .ok()?
            .prop("textContent")
            .await
            .ok()??;
        t.contains("ENOSPC").then_some(t)
    })
    .await;
    assert!(text.contains("--vectors-held 0-1:200"), "{text}");
    // Backspace over the selected value empties the field.
    set_text(&c, "#boot-isolcpus", "\u{E003}").await;
    let got = url_spec(&c, "isolcpus gone from the link", |s| s.isolcpus.is_none()).await;
    assert_eq!(got.vectors_held.as_deref(), Some("0-1:200"));
    c.close().await.unwrap();
}

/// The message beside the field matching `css` (its `.field-error` sibling), once shown.
async fn field_error(c: &Client, css: &str) -> String {
    let sibling = format!("{css} + .field-error");
    wait_for(&format!("a message beside {css}"), || async {
        let el = c.find(Locator::Css(&sibling)).await.ok()?;
        let text = el.text().await.ok()?;
        (!text.is_empty()).then_some(text)
    })
    .await
}

/// The front page with seed 000's machine and six 62-queue NVMe disks, in a new session.
async fn seed_000_editor(h: &mut Harness) -> Client {
    let c = h.session().await;
    c.goto(&format!("{}/?preset=azure-l96as-v4&devices=6x62:name=nvme", h.base))
        .await
        .unwrap();
    c
}

async fn stale_cleared(c: &Client) {
    wait_for("the stale mark cleared", || async {
        (!stale_shown(c).await).then_some(())
    })
    .await;
}

async fn stale_shown(c: &Client) -> bool {
    prop_of(c, "#stale-mark", "className")
        .await
        .is_some_and(|k| k.contains("shown"))
        && text_of(c, "#stale-mark").await.starts_with("out of date")
}

/// Bad values are named beside their field and not applied (no clamping), the result is
/// marked out of date until a valid value recomputes it, and node 0 cannot lose CPU 0 (which
/// would renumber the other nodes).
#[tokio::test]
async fn bad_values_are_named_beside_the_field_and_the_result_marked_stale() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = seed_000_editor(&mut h).await;
    let queues = "#devices tr.dev-row input.queues";
    set_text(&c, queues, "-3").await;
    let msg = field_error(&c, queues).await;
    assert!(
        msg.contains("queues") && msg.contains("-3") && msg.contains("0 to 2048"),
        "{msg}"
    );
    assert!(!msg.contains("JSON"), "{msg}");
    assert!(stale_shown(&c).await, "no stale mark after a bad value");
    assert!(text_of(&c, "#stale-mark").await.contains("fix the marked field"));
    screenshot(&c, "editor-bad-queues").await;
    // Not applied: the URL still holds the old scenario.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let url = c.current_url().await.unwrap();
    if let Some(link) = url.path().strip_prefix("/s/") {
        let spec: ScenarioSpec = permalink::decode(link).unwrap();
        assert_eq!(spec.devices[0].queues, 62, "a bad value was applied");
    }
    // A good value clears the message and, once recomputed, the stale mark.
    set_text(&c, queues, "8").await;
    url_spec(&c, "queues 8 in the URL", |s| s.devices[0].queues == 8).await;
    wait_for("the stale mark cleared", || async {
        (!prop_of(&c, "#stale-mark", "className")
            .await
            .is_some_and(|k| k.contains("shown")))
        .then_some(())
    })
    .await;
    assert_eq!(
        prop_of(&c, &format!("{queues} + .field-error"), "hidden")
            .await
            .as_deref(),
        Some("true")
    );

    let count = "#devices tr.dev-row input.count";
    set_text(&c, count, "0").await;
    let msg = field_error(&c, count).await;
    assert!(msg.contains("count") && msg.contains("out of range"), "{msg}");
    set_text(&c, count, "1").await;
    url_spec(&c, "count fixed", |s| s.devices[0].queues == 8).await;

    let offline = "#nodes tr.node-row:nth-of-type(2) input.offline";
    set_text(&c, offline, "foo").await;
    let msg = field_error(&c, offline).await;
    assert!(msg.contains("\"foo\" is not a CPU list"), "{msg}");
    set_text(&c, offline, "200").await;
    let msg = field_error(&c, offline).await;
    assert!(msg.contains("CPU 200 is not in this node"), "{msg}");
    set_text(&c, offline, "").await;

    let cores = "#nodes tr.node-row:nth-of-type(2) input.cores";
    set_text(&c, cores, "0").await;
    let msg = field_error(&c, cores).await;
    assert!(msg.contains("CPU 0"), "{msg}");
    assert_eq!(value(&c, cores).await, "0", "the typed value stays for the user to fix");
    c.close().await.unwrap();
}

/// The 64-node preset lists one folded row for its identical nodes, which expands to the 64
/// rows; every figure of the result carries a "download SVG" link holding the figure.
#[tokio::test]
async fn identical_nodes_fold_into_one_row_and_figures_download() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    c.goto(&format!("{}/?preset=synthetic-8192&devices=4:name=nvme", h.base))
        .await
        .unwrap();
    let group = text_of(&c, "#nodes tr.node-group td.group-size").await;
    assert_eq!(group, "64 nodes × 128 CPUs (64 cores × 2 threads, clusters of 1 core)");
    let cpus = text_of(&c, "#nodes tr.node-group td.cpus").await;
    assert_eq!(cpus, "0-8191", "the folded row names its nodes' CPUs");
    let rows = c.find_all(Locator::Css("#nodes tr.node-row")).await.unwrap();
    assert_eq!(rows.len(), 0, "folded nodes listed one by one");
    // At the narrowest width served, the button is inside the visible part of the editor's
    // scrolling box, not past the group's CPU list.
    c.set_window_size(1024, 900).await.unwrap();
    let placed = c
        .execute(
            "const b = document.querySelector('#nodes button.expand-group');
             const box = b.closest('.editor').getBoundingClientRect(), r = b.getBoundingClientRect();
             return [r.left >= box.left && r.right <= box.right && r.width > 0, r.left, r.right, box.left, box.right];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        placed[0], true,
        "expand button outside the editor's visible box: {placed:?}"
    );
    screenshot(&c, "editor-groups-folded-1024").await;
    c.find(Locator::Css("#nodes button.expand-group"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let rows = wait_for("64 node rows", || async {
        let rows = c.find_all(Locator::Css("#nodes tr.node-row")).await.ok()?;
        (rows.len() == 64).then_some(rows)
    })
    .await;
    assert_eq!(rows.len(), 64);
    screenshot(&c, "editor-groups-expanded").await;

    c.goto(&format!("{}/?preset=azure-l96as-v4&devices=6x62:name=nvme", h.base))
        .await
        .unwrap();
    let (figures, links, first): (u64, u64, String) = wait_for("download links", || async {
        let v = c
            .execute(
                "const svgs = [...document.querySelectorAll('#result svg')].filter((s) => !s.parentElement.closest('svg'));
                 const links = [...document.querySelectorAll('#result a.svg-download')];
                 return [svgs.length, links.length, links.length ? links[0].getAttribute('download') + ' ' + links[0].href : ''];",
                vec![],
            )
            .await
            .ok()?;
        let a = v.as_array()?;
        let t = (a[0].as_u64()?, a[1].as_u64()?, a[2].as_str()?.to_string());
        (t.0 > 0 && t.1 == t.0).then_some(t)
    })
    .await;
    assert_eq!(figures, links, "every figure has its link");
    let (name, href) = first.split_once(' ').unwrap();
    assert!(name.starts_with("irqscope-") && name.ends_with(".svg"), "{name}");
    let encoded = href
        .strip_prefix("data:image/svg+xml;charset=utf-8,")
        .expect("a data URL");
    let body: String = c
        .execute("return decodeURIComponent(arguments[0]);", vec![encoded.into()])
        .await
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        body.starts_with("<?xml") && body.contains("<svg") && body.contains("xmlns=\"http://www.w3.org/2000/svg\""),
        "{}",
        &body[..body.len().min(300)]
    );
    c.close().await.unwrap();
}

/// Sets the editor field `css` to `text` and fires its `change`, from the page's own script
/// (no keystrokes in between: what follows happens before any recompute can answer).
const SET_FIELD_JS: &str = r#"
for (const [css, text] of arguments[0]) {
  const input = document.querySelector(css);
  input.value = text;
  input.dispatchEvent(new Event('change', { bubbles: true }));
}
return true;"#;

/// A recompute asked for before a field turned invalid lands after it: the result is the
/// last valid input's, so the stale mark stays (it used to be cleared, the result looking
/// current beside a marked field) until the field is fixed.
#[tokio::test]
async fn a_late_recompute_leaves_the_stale_mark_over_an_invalid_field() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = seed_000_editor(&mut h).await;
    let queues = "#devices tr.dev-row input.queues";
    let count = "#devices tr.dev-row input.count";
    // A valid edit (its recompute waits 250 ms), then at once an invalid one.
    c.execute(SET_FIELD_JS, vec![serde_json::json!([[queues, "8"], [count, "0"]])])
        .await
        .unwrap();
    let msg = field_error(&c, count).await;
    assert!(msg.contains("out of range"), "{msg}");
    // The recompute of the valid edit lands: the link holds it ...
    url_spec(&c, "queues 8 in the URL", |s| s.devices[0].queues == 8).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // ... and the result is still marked, the marked field not in it.
    assert!(
        stale_shown(&c).await,
        "the stale mark was cleared beside an invalid field"
    );
    assert!(text_of(&c, "#stale-mark").await.contains("fix the marked field"));
    screenshot(&c, "editor-late-recompute-stale").await;
    // Fixed, it recomputes and the mark goes.
    set_text(&c, count, "2").await;
    url_spec(&c, "count 2 in the URL", |s| s.devices[0].count == 2).await;
    stale_cleared(&c).await;
    c.close().await.unwrap();
}

/// A server-side message sits beside the field it concerns, not at the top of the column: a
/// boot parameter the kernel would refuse, and a device's sets larger than its vectors.
#[tokio::test]
async fn server_messages_appear_beside_their_field() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = seed_000_editor(&mut h).await;
    let beside = |css: &'static str| {
        let c = c.clone();
        async move {
            let js = format!(
                "const f = document.querySelector({css:?}); let e = f.nextElementSibling;
                 while (e && !e.classList.contains('server-error')) e = e.nextElementSibling;
                 const top = document.getElementById('input-error');
                 return [e ? e.textContent : '', top && !top.hidden ? top.textContent : ''];"
            );
            wait_for(&format!("a server message beside {css}"), || async {
                let v = c.execute(&js, vec![]).await.ok()?;
                (v[0] != "").then_some(v)
            })
            .await
        }
    };
    c.execute(SET_FIELD_JS, vec![serde_json::json!([["#boot-irqaffinity", "foo"]])])
        .await
        .unwrap();
    let v = beside("#boot-irqaffinity").await;
    assert!(
        v[0].as_str().unwrap().starts_with("irqaffinity: bad CPU list \"foo\""),
        "{v}"
    );
    assert_eq!(v[1], "", "the message is also at the top of the column: {v}");
    assert!(stale_shown(&c).await);
    screenshot(&c, "editor-server-error-boot").await;
    c.execute(SET_FIELD_JS, vec![serde_json::json!([["#boot-irqaffinity", ""]])])
        .await
        .unwrap();
    stale_cleared(&c).await;
    let sets = "#devices tr.dev-row input.sets";
    c.execute(SET_FIELD_JS, vec![serde_json::json!([[sets, "4+99"]])])
        .await
        .unwrap();
    let v = beside(sets).await;
    assert!(v[0].as_str().unwrap().contains("the sets add up to 103"), "{v}");
    assert_eq!(v[1], "", "{v}");
    c.close().await.unwrap();
}

/// Every field of the machine and device editors lies inside the editor's column at 1024 and
/// 1920 px: no table is cut at the column's edge (nor scrolls inside it).
#[tokio::test]
async fn the_editor_tables_are_not_clipped() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(mut h) = Harness::start().await else { return };
    let c = h.session().await;
    let cut = r#"
        const box = document.getElementById('inputs').getBoundingClientRect();
        const out = [];
        for (const e of document.querySelectorAll('#topo-editor input, #topo-editor select, #topo-editor button, #dev-editor input, #dev-editor select, #dev-editor button')) {
          const r = e.getBoundingClientRect();
          if (r.width === 0) continue;  // in a closed <details> (the distance matrix)
          if (r.right > box.right + 1 || r.left < box.left - 1) out.push((e.className || e.id) + ' at ' + Math.round(r.left) + '-' + Math.round(r.right));
        }
        for (const t of ['topo-editor', 'dev-editor']) {
          const e = document.getElementById(t);
          if (e.scrollWidth > e.clientWidth + 1) out.push(t + ' scrolls: ' + e.scrollWidth + ' > ' + e.clientWidth);
        }
        return [out, Math.round(box.left) + '-' + Math.round(box.right)];"#;
    for width in [1024u32, 1920] {
        c.set_window_size(width, 1000).await.unwrap();
        c.goto(&format!(
            "{}/?preset=xeon-2s-18c-smt2&devices=2x16:name=nvme,pre=1%208:name=mana0,driver=mana",
            h.base
        ))
        .await
        .unwrap();
        let v = wait_for("the editor drawn", || async {
            let v = c.execute(cut, vec![]).await.ok()?;
            c.find(Locator::Css("#devices tr.dev-row")).await.ok()?;
            Some(v)
        })
        .await;
        assert_eq!(v[0], serde_json::json!([]), "{width} px, column {}: {v}", v[1]);
        screenshot(&c, &format!("editor-tables-{width}")).await;
    }
    c.close().await.unwrap();
}
