//! The heatmap's colours: the load scale anchored at the ideal, the sequential scale where
//! there is no ideal, and the diverging scale of a difference. The rules are the module's
//! "Colour" paragraph ([`super`]).

use crate::render::svg::Fill;

/// Offline CPUs, and unchanged ones on a difference map.
const OFFLINE_FILL: &str = "#c8c8c8";
pub(super) const UNCHANGED_FILL: &str = "#e3e6ea";
pub(super) const OFFLINE: Fill = Fill::from_hex(OFFLINE_FILL);
const UNCHANGED: Fill = Fill::from_hex(UNCHANGED_FILL);
pub(super) const ZERO: Fill = Fill::from_hex("#f4f6fa");

/// Sequential scale, pale → dark blue, for `v` in `0..=max` (no ideal to anchor at).
pub(crate) fn seq_colour(v: u32, max: u32) -> Fill {
    if max == 0 || v == 0 {
        return ZERO;
    }
    let t = f64::from(v.min(max)) / f64::from(max);
    let lerp = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    Fill::rgb(lerp(214.0, 8.0), lerp(228.0, 48.0), lerp(242.0, 107.0))
}

/// The load scale anchored at the ideal: 0 pale; `1..=ideal` light to mid blue (never hot);
/// above the ideal orange to dark red at `max`. Without an ideal, [`seq_colour`].
pub(crate) fn load_colour(v: u32, ideal: Option<u32>, max: u32) -> Fill {
    let Some(ideal) = ideal else {
        return seq_colour(v, max);
    };
    if v == 0 {
        return ZERO;
    }
    let lerp = |t: f64, a: [f64; 3], b: [f64; 3]| {
        let c = |i: usize| (a[i] + (b[i] - a[i]) * t).round() as u8;
        Fill::rgb(c(0), c(1), c(2))
    };
    // Each step darker than the one below it: pale blues up to the ideal, then the warm ramp
    // from an orange darker than the ideal's blue to dark red.
    if v <= ideal {
        let t = if ideal <= 1 {
            1.0
        } else {
            f64::from(v - 1) / f64::from(ideal - 1)
        };
        return lerp(t, [222.0, 235.0, 247.0], [146.0, 192.0, 223.0]);
    }
    let span = max.saturating_sub(ideal).max(1);
    let t = if span == 1 {
        1.0
    } else {
        f64::from((v - ideal).min(span) - 1) / f64::from(span - 1)
    };
    lerp(t, [236.0, 128.0, 48.0], [153.0, 0.0, 13.0])
}

/// Diverging scale for a difference: fewer (negative) green, zero grey, more (positive)
/// purple, saturating at `span`. Neither end is blue or red: on the compare page those mean
/// "at or below the ideal" and "above it" in A's and B's heatmaps.
pub(super) fn div_colour(d: i64, span: i64) -> Fill {
    if d == 0 || span == 0 {
        // Unchanged: a neutral grey that stands apart from the page and from a faint change.
        return UNCHANGED;
    }
    let t = (d.unsigned_abs() as f64 / span as f64).min(1.0);
    let fade = |c: f64| (255.0 + (c - 255.0) * (0.25 + 0.75 * t)).round() as u8;
    if d > 0 {
        Fill::rgb(fade(118.0), fade(42.0), fade(131.0))
    } else {
        Fill::rgb(fade(27.0), fade(120.0), fade(55.0))
    }
}

/// Whether white text reads better than dark on a fill.
pub(super) fn is_dark(fill: Fill) -> bool {
    let fill = fill.as_str();
    let ch = |i: usize| u32::from_str_radix(fill.get(i..i + 2).unwrap_or("ff"), 16).unwrap_or(255);
    let luma = 299 * ch(1) + 587 * ch(3) + 114 * ch(5);
    luma < 140_000
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At or below the ideal never looks hot: a placement at the ideal is lighter than any
    /// value above it, and the scale's colours get darker as the load rises.
    #[test]
    fn colours_are_anchored_at_the_ideal() {
        let luma = |f: Fill| {
            let s = f.as_str();
            let ch = |i: usize| u32::from_str_radix(&s[i..i + 2], 16).unwrap();
            299 * ch(1) + 587 * ch(3) + 114 * ch(5)
        };
        let (ideal, max) = (4, 12);
        for v in 0..max {
            assert!(luma(load_colour(v + 1, Some(ideal), max)) < luma(load_colour(v, Some(ideal), max)));
        }
        // The ideal on a page where it is also the maximum: the same mid blue, not the darkest.
        assert_eq!(load_colour(4, Some(4), 4), load_colour(4, Some(4), 12));
        assert!(luma(load_colour(4, Some(4), 4)) > 100_000);
    }

    /// Hue in degrees of a fill.
    fn hue(f: Fill) -> f64 {
        let s = f.as_str();
        let ch = |i: usize| f64::from(u8::from_str_radix(&s[i..i + 2], 16).unwrap()) / 255.0;
        let (r, g, b) = (ch(1), ch(3), ch(5));
        let (max, min) = (r.max(g).max(b), r.min(g).min(b));
        let d = max - min;
        if d == 0.0 {
            0.0
        } else if max == r {
            60.0 * ((g - b) / d).rem_euclid(6.0)
        } else if max == g {
            60.0 * ((b - r) / d + 2.0)
        } else {
            60.0 * ((r - g) / d + 4.0)
        }
    }

    /// The compare page's difference map shares no hue with the load scale beside it: blue
    /// there is "at or below the ideal" and orange to red "above it", so "fewer on B" and
    /// "more on B" take hues at least 40 degrees from every load colour.
    #[test]
    fn difference_colours_keep_away_from_the_load_scale() {
        let dist = |a: f64, b: f64| {
            let d = (a - b).abs() % 360.0;
            d.min(360.0 - d)
        };
        let loads: Vec<f64> = (1..=12).map(|v| hue(load_colour(v, Some(4), 12))).collect();
        for d in (-6..=6).filter(|&d| d != 0) {
            let h = hue(div_colour(d, 6));
            for &l in &loads {
                assert!(
                    dist(h, l) >= 40.0,
                    "difference {d} (hue {h:.0}) near a load colour (hue {l:.0})"
                );
            }
        }
    }
}
