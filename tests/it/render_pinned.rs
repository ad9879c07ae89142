//! The pictures and JSON twins pinned byte for byte: every preset's default page (heatmap in
//! each metric, NUMA chart, device strip), the 8,192-CPU × 16-device page and one of its nodes,
//! compare pages, MANA and sched pages, and the JSON twin of each. The pin is one FNV-1a hash
//! over all of them, so a rewrite of the SVG or JSON writers for speed that changes one byte
//! fails here. Only the parts `render::svg*`, `render::json*` and `render::vector_space` write
//! are hashed (the `<svg>` elements of each page, the JSON twins without their summary
//! sentences), so a change to a page's template or its sentences does not move the pin.
//!
//! `IRQSCOPE_PIN_DUMP=DIR` writes each hashed part to DIR, to see which one moved.

use irqscope::catalogue;
use serde_json::Value;

use crate::common::http::get;

/// The hash of every part below, as the writers before their speed rewrite produced them,
/// then moved once on purpose: the compare heatmaps became the scenario page's heatmap on a
/// fixed scale (ticks, boundaries, the ideal); only their 56 parts changed. Then once more:
/// the MANA queue bars carry their counts (8 parts). Then the GICv3 ITS presets (graviton3-64c,
/// ampere-altra-q80, arm64-2s-snc-cluster-spans, arm64-4node-diameter3) run `arm64-its` by
/// default instead of `first-cpu`: only their 48 parts changed (with `gic-its` answered by
/// `first-cpu` again the hash was the one before). Then the one figure system: every heatmap
/// (126 parts) and difference map (16) drawn at its size with rows cut at package, core kind,
/// cluster and core and colours anchored at the ideal, every device strip (81) at its size;
/// no NUMA chart for one node or past 16 nodes and no strip past 64 Ki cells (a sentence says
/// it instead: 33 parts fewer). The NUMA charts still drawn (44 parts), the MANA and sched
/// pictures and every JSON twin are as they were.
/// Then once more: the models read the kernel's view of the machine, so the two presets with
/// CPUs that are not online (`vm-8vcpu-hotplug-64`, `xeon-2s-18c-nosmt-offline`) place
/// differently and their JSON twins gain `machine_notes` (20 parts, all from those two
/// presets' pages, checked part by part against the build before; the nosmt preset's compare
/// page no longer has equal per-CPU loads on both sides, so it draws its two heatmaps and
/// their difference map again: 2 parts more).
/// Then the merge of the release table (and the GICv3 ITS, kernel view and release changes main
/// pinned as 1d91f23b93174b45): every answer names the kernel releases it holds for (`kernel`
/// in JSON twins, a `kernel:` line in text twins and pages), the scenario metrics count refused
/// vectors and the devices that asked (`vectors_failed`, `devices_asked`), the pages'
/// permalinks name the models the newest release picks (`affinity`, `mapper`,
/// `vectors_per_cpu`), the editor offers the releases, the MANA and sched reports name their
/// kernel code, and `/sched?preset=amd-epyc-9654-2s-nps4`, refused before (x86 numbering), now
/// draws its figures and JSON twin.
/// Then the kernel's cluster masks of machines drawn without clusters (docs/release-notes.md,
/// D3): the pages of azure-4vcpu-smt2, arm64-4node-diameter3 and azure-l96as-v4-noclusters
/// place as the kernel's C does and their JSON twins gain a `machine_notes` line (20 parts, all
/// from those three presets' pages, checked part by part against the build before).
/// Then the pages' figures (issue 35, 406 parts, the JSON twins as they were): every heatmap
/// (127 parts) with its rows balanced so none ends in a lone core, each row a group whose cells
/// carry no `y`, no `<title>` (the page's script says the hover text from `data-cpu`, `data-v`
/// and the figure's new `data-unit`) and no `data-cpus` but on a folded run, past 256 CPUs no
/// class, whole-pixel coordinates without ".0", one SMT path per row and legend steps as wide
/// as their labels; every difference map (17) green for fewer on B and purple for more, its
/// legend on two lines; every NUMA chart (44) with a dark fair-share line and each count above
/// it; no device strip past 128 CPUs (21 parts fewer: the page says the sentence). The MANA and
/// sched pictures and the strips still drawn are as they were (checked part by part against
/// the build before, served side by side).
/// Both together (the merge): 18 parts differ from the figures alone, every one of them a JSON
/// twin with a `machine_notes` line or a picture of the three presets D3 moves.
/// Then the unfilled-groups note by era (issue 37): under the newest release (7.x, the
/// nummasks era) it says the kernel returns nummasks and does not WARN; 30 JSON twins, that
/// line alone (checked part by part).
const PINNED: &str = "3c205b3b5e62f2b2";

fn fnv1a(state: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(state, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// Every `<svg …>…</svg>` element of a page, in order.
fn svgs(page: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = page;
    while let Some(start) = rest.find("<svg") {
        let tail = &rest[start..];
        let end = tail.find("</svg>").expect("every <svg> is closed") + "</svg>".len();
        out.push(&tail[..end]);
        rest = &tail[end..];
    }
    out
}

/// The page's own permalink (`/s/…`, `/c/…`, `/m/…`, `/n/…`), from its JSON-twin link: the
/// first `…/json"` that is one (`<script type="application/json">` is not).
fn twin(page: &str) -> Option<String> {
    let mut from = 0;
    while let Some(at) = page[from..].find("/json\"").map(|i| i + from) {
        from = at + 1;
        let Some(start) = page[..at].rfind('"').map(|i| i + 1) else {
            continue;
        };
        let link = &page[start..at];
        let path = link
            .find("/s/v1.")
            .or(link.find("/c/v1."))
            .or(link.find("/m/v1."))
            .or(link.find("/n/v1."));
        if let Some(path) = path {
            return Some(format!("{}/json", &link[path..]));
        }
    }
    None
}

fn without_sentences(mut v: Value) -> Value {
    if let Some(m) = v.get_mut("metrics").and_then(Value::as_object_mut) {
        m.remove("summary");
    }
    for side in ["a", "b"] {
        if let Some(m) = v
            .get_mut(side)
            .and_then(|s| s.get_mut("metrics"))
            .and_then(Value::as_object_mut)
        {
            m.remove("summary");
        }
    }
    v
}

fn pages() -> Vec<String> {
    let mut uris = Vec::new();
    for (name, _) in catalogue::all() {
        uris.push(format!("/?preset={name}"));
        uris.push(format!(
            "/?preset={name}&devices=4x8:pre=1,name=nvme;3:name=nic&metric=irqs"
        ));
        uris.push(format!("/?preset={name}&metric=hot"));
        uris.push(format!(
            "/compare?preset={name}&a=pre-cluster&b=rotation&metric=devices"
        ));
    }
    uris.extend(
        [
            "/?preset=azure-l96as-v4&devices=6x62:pre=1,name=nvme&variant=cluster",
            "/?preset=azure-l96as-v4&devices=6x62:pre=1,name=nvme&variant=pre-cluster&metric=devices",
            "/?preset=synthetic-8192&devices=16x64",
            "/?preset=synthetic-8192&devices=16x64&node=5",
            "/compare?preset=synthetic-8192&devices=16x64&a=pre-cluster&b=cluster",
            "/compare?a=pre-cluster&b=rotation&metric=devices&scale=10",
            "/mana",
            "/mana?preset=azure-4vcpu-smt2&load=0,1,1,1",
            "/mana?preset=azure-4vcpu-smt2&irqaffinity=0",
            "/mana?preset=azure-l96as-v4",
            "/sched",
            "/sched?preset=azure-l96as-v4",
            "/sched?preset=amd-epyc-9654-2s-nps4",
        ]
        .map(String::from),
    );
    uris
}

#[tokio::test]
async fn svg_and_json_writers_are_byte_identical() {
    let dump = std::env::var_os("IRQSCOPE_PIN_DUMP").map(std::path::PathBuf::from);
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut parts = 0;
    let mut keep = |what: &str, bytes: &[u8]| {
        h = fnv1a(h, what.as_bytes());
        h = fnv1a(h, bytes);
        if let Some(dir) = &dump {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join(format!("{parts:04}")), bytes).unwrap();
        }
        parts += 1;
    };
    for uri in pages() {
        let r = get(&uri).await;
        if !r.status.is_success() {
            // A preset a scenario does not fit (too few CPUs for the devices): its error is
            // not ours to pin, but it must stay an error.
            assert!(r.status.is_client_error(), "{uri}: {}", r.status);
            keep(&uri, r.status.as_str().as_bytes());
            continue;
        }
        let shown = svgs(&r.body);
        assert!(!shown.is_empty(), "{uri}: no picture");
        for svg in shown {
            keep(&uri, svg.as_bytes());
        }
        // Every page links its JSON twin; a page whose link is not found would drop out of
        // the pin unseen.
        let json = twin(&r.body).unwrap_or_else(|| panic!("{uri}: no JSON-twin link found"));
        let t = get(&json).await;
        assert!(t.status.is_success(), "{json}: {}", t.status);
        let v = without_sentences(serde_json::from_str(&t.body).unwrap());
        keep(&json, serde_json::to_string(&v).unwrap().as_bytes());
    }
    assert!(parts > 300, "only {parts} parts hashed");
    assert_eq!(format!("{h:016x}"), PINNED, "{parts} parts hashed");
}
