//! `/r/<id>`: a review `irqscope review --out DIR` wrote, served from DIR by `irqscope serve
//! --review-dir DIR`: the verdict first, the ranked table, the worst case's per-CPU loads
//! before and after as heatmaps of the one figure system, a link to every scenario; its
//! twins `/r/<id>/text` (the mail reply) and `/r/<id>/json` (the file as written).
//!
//! The web reads the file's bytes; this module says whether they are the review the id
//! names. An id is 16 lowercase hex digits (the review's content hash); a file that does not
//! read as a review, or holds another id than its name, is refused with a message.

use super::ViewError;
use crate::render::heatmap::value_heatmap;
use crate::render::review::{self, Review};
use crate::topology::{Topology, TopologySpec};

/// Hex digits in a review id.
pub(crate) const ID_LEN: usize = 16;
/// Largest review file read.
pub(crate) const FILE_BYTES_MAX: u64 = 4 << 20;

/// Whether `id` has the form of a review id.
pub(crate) fn valid_id(id: &str) -> bool {
    id.len() == ID_LEN && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The review in `bytes`, checked to be the one `id` names.
pub(crate) fn parse(id: &str, bytes: &[u8]) -> Result<Review, ViewError> {
    let r: Review = serde_json::from_slice(bytes).map_err(|e| {
        ViewError::BadInput(format!(
            "review {id}: its file does not read as a review ({e}); write it again with irqscope review --out"
        ))
    })?;
    if r.id != id {
        return Err(ViewError::BadInput(format!(
            "review {id}: its file holds review {:?}: it was changed after it was written",
            r.id.chars().take(40).collect::<String>()
        )));
    }
    Ok(r)
}

/// One ranked row as the page shows it.
pub(crate) struct RowView {
    pub(crate) machine: String,
    pub(crate) mix: String,
    pub(crate) change: String,
    pub(crate) worst: String,
    pub(crate) ideal: String,
    pub(crate) p: String,
    pub(crate) numa: String,
    /// How many CPUs serve IRQs before and after; a dash for a review written before it was
    /// recorded.
    pub(crate) cpus: String,
    pub(crate) link: String,
}

/// What the page shows.
pub(crate) struct ReviewView {
    pub(crate) id: String,
    pub(crate) subject: String,
    pub(crate) verdict: String,
    pub(crate) rows: Vec<RowView>,
    pub(crate) worst_title: Option<String>,
    pub(crate) before_svg: Option<String>,
    pub(crate) after_svg: Option<String>,
    pub(crate) worst_link: Option<String>,
    /// What the search found of the mail's claimed improvement, and its case's link.
    pub(crate) claim: Option<String>,
    pub(crate) claim_link: Option<String>,
    pub(crate) base: String,
    pub(crate) builds: String,
    pub(crate) command: String,
    pub(crate) reply: String,
}

fn pct(p: f64) -> String {
    format!("{:.0}%", p * 100.0)
}

/// The worst case's loads as two heatmaps, on its own machine.
fn heatmaps(w: &review::WorstCase) -> Option<(String, String)> {
    let spec: TopologySpec = toml::from_str(&w.topology_toml).ok()?;
    let topo = Topology::new(&spec).ok()?;
    let values = |v: &[u32]| -> Vec<(u32, u64)> { w.cpu.iter().zip(v).map(|(&c, &x)| (c, u64::from(x))).collect() };
    Some((
        value_heatmap(&topo, &values(&w.before), "base: IRQs per CPU", "IRQs", None),
        value_heatmap(&topo, &values(&w.after), "patched: IRQs per CPU", "IRQs", None),
    ))
}

impl ReviewView {
    pub(crate) fn new(r: &Review) -> ReviewView {
        let rows = r
            .rows
            .iter()
            .map(|x| RowView {
                machine: x.machine.clone(),
                mix: x.mix.clone(),
                change: x.change.clone(),
                worst: format!("{} → {}", x.before.worst, x.after.worst),
                ideal: review::ideal_text(x, "→"),
                p: format!("{} → {}", pct(x.before.p_above_ideal), pct(x.after.p_above_ideal)),
                numa: format!("{:.1} → {:.1}", x.before.numa_excess, x.after.numa_excess),
                cpus: review::cpus_text(x, "→", "–").unwrap_or_else(|| "—".into()),
                link: x.link.clone(),
            })
            .collect();
        let maps = r.worst_case.as_ref().and_then(heatmaps);
        ReviewView {
            id: r.id.clone(),
            subject: r.subject.clone(),
            verdict: review::verdict(r),
            rows,
            worst_title: r.worst_case.as_ref().map(|w| {
                format!(
                    "{}, {} probed as {} from counter {}: the worst CPU {} → {} IRQs{}",
                    w.machine,
                    w.devices,
                    w.order.join(" "),
                    w.counter,
                    w.before_worst,
                    w.after_worst,
                    if w.confirmed { ", confirmed on the built C" } else { "" }
                )
            }),
            before_svg: maps.as_ref().map(|m| m.0.clone()),
            after_svg: maps.map(|m| m.1),
            worst_link: r.worst_case.as_ref().map(|w| w.link.clone()),
            claim: r.claim.as_ref().map(|c| review::claim_sentence(c).trim().to_string()),
            claim_link: r.claim.as_ref().and_then(|c| c.case.as_ref()).map(|w| w.link.clone()),
            base: format!("{} {}", r.base.package, r.base.version.clone().unwrap_or_default()),
            builds: format!(
                "c:{} {} · c:{} {} · models {}",
                r.base.build.name, r.base.build.build_id, r.patched.name, r.patched.build_id, r.model_version
            ),
            command: r.command.clone(),
            reply: review::text(r),
        }
    }
}
