//! What the MANA and sched pages share: which machine a query names, the preset menu, and
//! number lists as the forms show them.

use super::{permalink, AppError};
use crate::catalogue;
use crate::scenario::spec::{ScenarioSpec, TopologyRef};

/// The machine a query names: `preset` (non-empty) first, then a scenario permalink `s`, then
/// `base` (the page's own spec), then `default`.
pub(super) fn query_topology(
    preset: &Option<String>,
    s: &Option<String>,
    base: Option<&TopologyRef>,
    default: &str,
) -> Result<TopologyRef, AppError> {
    if let Some(p) = preset.as_deref().filter(|p| !p.is_empty()) {
        return Ok(TopologyRef::Preset(p.to_string()));
    }
    if let Some(link) = s.as_deref().filter(|l| !l.is_empty()) {
        return Ok(permalink::decode::<ScenarioSpec>(link)?.topology);
    }
    Ok(base
        .cloned()
        .unwrap_or_else(|| TopologyRef::Preset(default.to_string())))
}

pub(super) fn preset_choices(t: &TopologyRef) -> (Vec<(&'static str, bool)>, bool) {
    let current = match t {
        TopologyRef::Preset(p) => Some(p.as_str()),
        TopologyRef::Inline(_) => None,
    };
    (
        catalogue::names().map(|n| (n, Some(n) == current)).collect(),
        current.is_none(),
    )
}

pub(super) fn list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}
