//! The SVG writing primitives every picture shares: escaping, number writers that match the
//! formatter byte for byte, fills, the root element (drawn at its size: width and height in
//! pixels, never scaled up; no inline style, which the pages' CSP refuses), and which per-CPU
//! number a heatmap shows ([`HeatMetric`]). The pictures are `heatmap` (per-CPU grids),
//! `charts` (NUMA balance, device strips) and the page-specific `svg_*` modules; their styles
//! are `static/figures.css`, which a downloaded figure carries inside it.
//!
//! Pure string output: no axum, no askama, no files, no fonts. Every piece of text written
//! goes through [`escape`] (or plotters' own escaping), so the output may be embedded in HTML
//! as-is.

use crate::metrics::{Basis, CpuLoad, Metrics};
use std::fmt::Write;

/// Which per-CPU number a heatmap shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeatMetric {
    /// Vectors whose effective CPU is this CPU, counted on the metrics' basis (managed
    /// vectors only when the scenario has any, as the summary lines count them).
    Irqs,
    /// Managed vectors only.
    Managed,
    /// Distinct devices served (same basis).
    Devices,
    /// Vectors whose requested mask is this single CPU.
    Hot,
}

impl HeatMetric {
    pub(crate) const ALL: [HeatMetric; 4] = [
        HeatMetric::Irqs,
        HeatMetric::Managed,
        HeatMetric::Devices,
        HeatMetric::Hot,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            HeatMetric::Irqs => "irqs",
            HeatMetric::Managed => "managed",
            HeatMetric::Devices => "devices",
            HeatMetric::Hot => "hot",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<HeatMetric> {
        HeatMetric::ALL.into_iter().find(|m| m.name() == name)
    }

    pub(crate) fn describe(self) -> &'static str {
        match self {
            HeatMetric::Irqs => "IRQs (as the summary counts them)",
            HeatMetric::Managed => "managed IRQs",
            HeatMetric::Devices => "devices served",
            HeatMetric::Hot => "hot single-CPU IRQs",
        }
    }

    pub(crate) fn value(self, c: &CpuLoad, basis: Basis) -> u32 {
        match self {
            HeatMetric::Irqs => c.counted_irqs(basis),
            HeatMetric::Managed => c.managed_irqs,
            HeatMetric::Devices => c.counted_devices(basis),
            HeatMetric::Hot => c.hot_irqs,
        }
    }

    /// The ideal per-CPU maximum for this metric, where one is defined (the ideal bound is
    /// computed on the metrics' basis).
    pub(crate) fn ideal(self, m: &Metrics) -> Option<u32> {
        match self {
            HeatMetric::Irqs => Some(m.ideal.irqs_per_cpu_max),
            HeatMetric::Managed if m.basis == Basis::Managed => Some(m.ideal.irqs_per_cpu_max),
            HeatMetric::Devices => Some(m.ideal.devices_per_cpu_max),
            HeatMetric::Managed | HeatMetric::Hot => None,
        }
    }
}

/// Escape text for SVG/HTML content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_escaped(&mut out, text);
    out
}

/// [`escape`] appended to `out`: runs without a special character are copied in one piece.
pub(crate) fn push_escaped(out: &mut String, text: &str) {
    let mut rest = text;
    while let Some(i) = rest.find(['&', '<', '>', '"', '\'']) {
        out.push_str(&rest[..i]);
        out.push_str(match rest.as_bytes()[i] {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            _ => "&#39;",
        });
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
}

/// Appends `v` in decimal (the cpulist writer's, shared).
pub(crate) use crate::topology::cpulist::push_u64;

pub(crate) fn push_i64(out: &mut String, v: i64) {
    if v < 0 {
        out.push('-');
    }
    push_u64(out, v.unsigned_abs());
}

/// Appends `v` as `format!("{v:.1}")` writes it, byte for byte: the exact binary value rounded
/// to one decimal, ties to even. Computed from the float's mantissa and exponent in integers;
/// values outside `0 ≤ v < 10^15` (never drawn here) go through the formatter.
pub(crate) fn push_f1(out: &mut String, v: f64) {
    if !(v.is_finite() && v.is_sign_positive() && v < 1e15) {
        let _ = write!(out, "{v:.1}");
        return;
    }
    let bits = v.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    // v = m · 2^e exactly.
    let (m, e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), exp - 1075)
    };
    let tenths = if e >= 0 {
        // An integer below 10^15.
        (u128::from(m) << e) * 10
    } else if e > -120 {
        let s = (-e) as u32;
        let num = u128::from(m) * 10;
        let q = num >> s;
        let rem = num - (q << s);
        let half = 1u128 << (s - 1);
        if rem > half || (rem == half && q & 1 == 1) {
            q + 1
        } else {
            q
        }
    } else {
        0
    };
    push_u64(out, (tenths / 10) as u64);
    out.push('.');
    out.push(char::from(b'0' + (tenths % 10) as u8));
}

/// [`push_f1`] without a ".0" on whole numbers (cell coordinates on the pixel grid).
pub(crate) fn push_num(out: &mut String, v: f64) {
    push_f1(out, v);
    if out.ends_with(".0") {
        out.truncate(out.len() - 2);
    }
}

/// A `#rrggbb` fill, made without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fill([u8; 7]);

impl Fill {
    pub(crate) const fn from_hex(text: &str) -> Fill {
        let b = text.as_bytes();
        assert!(b.len() == 7 && b[0] == b'#');
        Fill([b[0], b[1], b[2], b[3], b[4], b[5], b[6]])
    }

    pub(crate) fn rgb(r: u8, g: u8, b: u8) -> Fill {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let h = |v: u8| [HEX[usize::from(v >> 4)], HEX[usize::from(v & 15)]];
        let ([r0, r1], [g0, g1], [b0, b1]) = (h(r), h(g), h(b));
        Fill([b'#', r0, r1, g0, g1, b0, b1])
    }

    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("ASCII hex")
    }
}

impl std::fmt::Display for Fill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The root element of a picture drawn at `width` × `height` pixels (a page may shrink it to
/// its box, never grow it).
pub(crate) fn svg_open(class: &str, label: &str, width: u32, height: u32) -> String {
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="{class}" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{}" data-w="{width}" data-h="{height}">"#,
        escape(label)
    ) + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The writers match `format!` byte for byte: every multiple of 1/64 up to 2,000 (the
    /// drawn coordinates, ties to even included), values near ties, pseudo-random floats
    /// over many magnitudes, and the edges.
    #[test]
    fn number_writers_match_the_formatter() {
        let check = |v: f64| {
            let mut s = String::new();
            push_f1(&mut s, v);
            assert_eq!(s, format!("{v:.1}"), "{v:e}");
        };
        for i in 0..=128_000u32 {
            let v = f64::from(i) / 64.0;
            check(v);
            check(f64::from_bits(v.to_bits() + 1));
            check(f64::from_bits(v.to_bits().saturating_sub(1)));
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = f64::from_bits(x >> 2); // positive, exponents over the whole range
            check(v);
            check((x % 10_000_000) as f64 / 997.0);
        }
        for v in [
            0.0,
            -0.0,
            0.05,
            0.25,
            0.35,
            1e15,
            1e15 - 0.5,
            1e300,
            f64::MIN_POSITIVE,
            5e-324,
            -1.5,
            f64::NAN,
        ] {
            check(v);
        }
        for v in [0, 1, 9, 10, 99, 100, 12_345, u64::from(u32::MAX), u64::MAX] {
            let mut s = String::new();
            push_u64(&mut s, v);
            assert_eq!(s, v.to_string());
        }
        for v in [0, -1, 7, -12_345, i64::MIN, i64::MAX] {
            let mut s = String::new();
            push_i64(&mut s, v);
            assert_eq!(s, v.to_string());
        }
        for (r, g, b) in [(0, 0, 0), (255, 255, 255), (8, 48, 107), (203, 24, 29), (16, 15, 1)] {
            assert_eq!(Fill::rgb(r, g, b).as_str(), format!("#{r:02x}{g:02x}{b:02x}"));
        }
        assert_eq!(escape("a<b>&\"c'd\u{e9}"), "a&lt;b&gt;&amp;&quot;c&#39;d\u{e9}");
        assert_eq!(escape("&&"), "&amp;&amp;");
    }
}
