//! The two heatmaps of a comparison on one colour scale, so equal loads look equal on both
//! sides: the scenario page's heatmap ([`heatmap_on_scale`](super::heatmap::heatmap_on_scale)) with the scale fixed. The
//! root element carries `data-side` and `data-scale-max`, every cell `data-cpu(s)` and
//! `data-v`, so a browser test can read the scale the page drew.

use super::svg::{self, HeatMetric};
use crate::metrics::Metrics;
use crate::topology::Topology;

/// How the colour scale of a comparison is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scale {
    /// The larger maximum of the two sides (the default).
    Shared,
    /// A fixed maximum given by the reader, the same for every comparison.
    Absolute(u32),
}

/// The largest value of `metric` on any online CPU of either side.
pub(crate) fn shared_max(a: &Metrics, b: &Metrics, metric: HeatMetric) -> u32 {
    [a, b]
        .iter()
        .flat_map(|m| m.per_cpu.iter().filter(|c| c.online).map(|c| metric.value(c, m.basis)))
        .max()
        .unwrap_or(0)
}

/// One side's heatmap, drawn as the scenario page draws it (ticks, core / cluster / package
/// boundaries, SMT siblings side by side, the ideal outlined, the node × slot overview on
/// large machines) on the colour scale `0..=max`, its root tagged with the side and the scale.
pub(crate) fn heatmap_on_scale(
    topo: &Topology,
    m: &Metrics,
    metric: HeatMetric,
    zoom: Option<u32>,
    max: u32,
    side: &str,
) -> String {
    let drawn = super::heatmap::heatmap_on_scale(topo, m, metric, zoom, max);
    let tag = format!(
        r#"<svg data-scale="shared" data-side="{}" data-scale-max="{max}" "#,
        svg::escape(side)
    );
    drawn.replacen("<svg ", &tag, 1)
}
