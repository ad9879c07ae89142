//! The live page's history chart: device interrupts per second over the last readings, one
//! point per reading, baselines (first reading, reboot, clock step) as gaps. Pure; every text
//! escaped.

use super::svg::escape;
use std::fmt::Write;

/// One reading on the chart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct HistoryPoint {
    pub(crate) seq: u64,
    /// `None`: a baseline, no rate.
    pub(crate) value: Option<f64>,
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 120.0;
const LEFT: f64 = 56.0;
const TOP: f64 = 8.0;
const BOTTOM: f64 = 20.0;

fn fmt_value(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// A line chart of `points` (oldest first). `data-last-seq` names the newest reading shown.
pub(crate) fn history_chart(points: &[HistoryPoint], label: &str, unit: &str) -> String {
    let mut out = String::with_capacity(256 + points.len() * 16);
    let last_seq = points.last().map_or(0, |p| p.seq);
    let max = points
        .iter()
        .filter_map(|p| p.value)
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let top = if max > 0.0 { max } else { 1.0 };
    let _ = write!(
        out,
        r#"<svg class="history" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{}" data-last-seq="{last_seq}" data-points="{}">"#,
        escape(label),
        points.len()
    );
    let _ = write!(out, "<title>{}</title>", escape(label));
    let (x0, x1, y0, y1) = (LEFT, WIDTH - 4.0, TOP, HEIGHT - BOTTOM);
    let _ = write!(
        out,
        r##"<line x1="{x0}" y1="{y1}" x2="{x1}" y2="{y1}" stroke="#999"/><line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="#999"/>"##
    );
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" font-size="10" text-anchor="end">{} {}</text>"#,
        x0 - 4.0,
        y0 + 8.0,
        fmt_value(max),
        escape(unit)
    );
    let _ = write!(
        out,
        r#"<text x="{}" y="{y1}" font-size="10" text-anchor="end">0</text>"#,
        x0 - 4.0
    );
    if let (Some(first), Some(last)) = (points.first(), points.last()) {
        let _ = write!(
            out,
            r#"<text x="{x0}" y="{}" font-size="10">#{}</text>"#,
            HEIGHT - 4.0,
            first.seq
        );
        let _ = write!(
            out,
            r#"<text x="{x1}" y="{}" font-size="10" text-anchor="end">#{}</text>"#,
            HEIGHT - 4.0,
            last.seq
        );
    }
    let step = if points.len() > 1 {
        (x1 - x0) / (points.len() - 1) as f64
    } else {
        0.0
    };
    let mut path = String::new();
    let mut pen_down = false;
    for (i, p) in points.iter().enumerate() {
        let Some(v) = p.value.filter(|v| v.is_finite()) else {
            pen_down = false;
            continue;
        };
        let x = x0 + step * i as f64;
        let y = y1 - (v.max(0.0) / top) * (y1 - y0);
        let _ = write!(path, "{}{x:.1},{y:.1} ", if pen_down { "L" } else { "M" });
        pen_down = true;
    }
    if !path.is_empty() {
        let _ = write!(
            out,
            r##"<path class="history-line" d="{}" fill="none" stroke="#c0392b" stroke-width="1.5"/>"##,
            path.trim_end()
        );
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_for_baselines_and_escaped_labels() {
        let pts = [
            HistoryPoint { seq: 1, value: None },
            HistoryPoint {
                seq: 2,
                value: Some(10.0),
            },
            HistoryPoint {
                seq: 3,
                value: Some(20.0),
            },
            HistoryPoint { seq: 4, value: None },
            HistoryPoint {
                seq: 5,
                value: Some(f64::NAN),
            },
            HistoryPoint {
                seq: 6,
                value: Some(5.0),
            },
        ];
        let svg = history_chart(&pts, "<x>", "irq/s");
        assert!(svg.contains("data-last-seq=\"6\""));
        assert_eq!(svg.matches('M').count() - svg.matches("M ").count(), 2, "{svg}");
        assert!(svg.contains("&lt;x&gt;") || svg.contains("&#60;x&#62;"));
        assert!(!svg.contains("<x>"));
        assert!(history_chart(&[], "h", "u").ends_with("</svg>"));
    }
}
