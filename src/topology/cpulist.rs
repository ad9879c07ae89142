//! CPU list and hex-mask text, parsed and printed the way the kernel does.
//!
//! * cpulist (`lib/bitmap-str.c`, `bitmap_parselist` / `%*pbl`): `0-3,8`, the strided form
//!   `a-b:used/group` (from every `group` ids starting at `a`, the first `used` are set), `N` for
//!   the highest id (`n_bits - 1`) and the keyword `all`. Printing folds runs of two or more ids
//!   into ranges; the empty set prints as the empty string.
//! * hex masks (`bitmap_parse` / `%*pb`, as `/proc/irq/*/smp_affinity` shows them): 32-bit
//!   chunks, most significant first, separated by commas; the first chunk is as wide as the bits it
//!   holds, the others are eight digits.
//!
//! The `cpulist` crate reads `a-b:n` as a stride, which is not the kernel's syntax; hence this file.

use super::CpuSet;
use std::fmt::Write;

/// Longest text accepted by the parsers; longer input is refused rather than scanned.
pub(crate) const CPULIST_TEXT_BYTES_MAX: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpulistError {
    #[error("bad CPU list {text:?}: {why}")]
    Invalid { text: String, why: &'static str },
    #[error("CPU {cpu} in {text:?} is beyond the last CPU id {last}")]
    OutOfRange { text: String, cpu: u64, last: i64 },
    #[error("CPU list is longer than {CPULIST_TEXT_BYTES_MAX} bytes")]
    TooLong,
}

/// A parser's input within [`CPULIST_TEXT_BYTES_MAX`], ASCII white space trimmed off both ends.
fn trimmed(text: &str) -> Result<&str, CpulistError> {
    if text.len() > CPULIST_TEXT_BYTES_MAX {
        return Err(CpulistError::TooLong);
    }
    Ok(text.trim_matches(|c: char| c.is_ascii_whitespace()))
}

/// [`CpulistError::Invalid`] of `text`, for the reason given.
fn invalid_in(text: &str) -> impl Fn(&'static str) -> CpulistError + Copy + '_ {
    move |why| CpulistError::Invalid {
        text: shorten(text),
        why,
    }
}

/// Parse a kernel cpulist for a bitmap of `n_bits` ids (`0..n_bits`).
pub fn parse_cpulist(text: &str, n_bits: u32) -> Result<CpuSet, CpulistError> {
    let body = trimmed(text)?;
    let invalid = invalid_in(text);
    let mut set = CpuSet::new(n_bits);
    if body.is_empty() {
        return Ok(set);
    }
    for region in body.split(',') {
        let region = region.trim_matches(|c: char| c == ' ' || c == '\t');
        if region.is_empty() {
            return Err(invalid("empty region"));
        }
        let (range, stride) = match region.split_once(':') {
            Some((range, stride)) => (range, Some(stride)),
            None => (region, None),
        };
        let (start, end) = if range == "all" {
            if n_bits == 0 {
                return Err(CpulistError::OutOfRange {
                    text: shorten(text),
                    cpu: 0,
                    last: -1,
                });
            }
            (0u64, u64::from(n_bits) - 1)
        } else {
            match range.split_once('-') {
                Some((a, b)) => (
                    parse_id(a, n_bits).map_err(invalid)?,
                    parse_id(b, n_bits).map_err(invalid)?,
                ),
                None => {
                    let a = parse_id(range, n_bits).map_err(invalid)?;
                    (a, a)
                }
            }
        };
        let (used, group_len) = match stride {
            None => (end.saturating_sub(start) + 1, end.saturating_sub(start) + 1),
            Some(stride) => {
                let (used, group) = stride
                    .split_once('/')
                    .ok_or_else(|| invalid("stride needs used/group"))?;
                (
                    parse_number(used).map_err(invalid)?,
                    parse_number(group).map_err(invalid)?,
                )
            }
        };
        if start > end {
            return Err(invalid("range start is above its end"));
        }
        if group_len == 0 || used > group_len {
            return Err(invalid("stride used/group must have 0 < group and used <= group"));
        }
        if end >= u64::from(n_bits) {
            return Err(CpulistError::OutOfRange {
                text: shorten(text),
                cpu: end,
                last: i64::from(n_bits) - 1,
            });
        }
        let mut group_start = start;
        while group_start <= end {
            let take = used.min(end - group_start + 1);
            for cpu in group_start..group_start + take {
                set.insert(cpu as u32);
            }
            group_start += group_len;
        }
    }
    Ok(set)
}

fn parse_id(text: &str, n_bits: u32) -> Result<u64, &'static str> {
    if text == "N" {
        return if n_bits == 0 {
            Err("N used on an empty bitmap")
        } else {
            Ok(u64::from(n_bits) - 1)
        };
    }
    parse_number(text)
}

fn parse_number(text: &str) -> Result<u64, &'static str> {
    if text.is_empty() {
        return Err("missing number");
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err("invalid character");
    }
    // Ids beyond u32 can never fit a bitmap; the kernel answers -EOVERFLOW/-ERANGE.
    text.parse::<u64>()
        .ok()
        .filter(|&v| v <= u64::from(u32::MAX))
        .ok_or("number too large")
}

fn shorten(text: &str) -> String {
    const SHOWN_CHARS_MAX: usize = 60;
    if text.chars().count() <= SHOWN_CHARS_MAX {
        text.to_string()
    } else {
        let head: String = text.chars().take(SHOWN_CHARS_MAX).collect();
        format!("{head}…")
    }
}

/// Print a set as a kernel cpulist: ascending, runs of two or more ids as `a-b`.
pub fn format_cpulist(set: &CpuSet) -> String {
    let mut out = String::new();
    push_cpulist(&mut out, set.iter());
    out
}

/// Appends the cpulist (`0-3,8`) of ascending CPU ids to `out`, as [`format_cpulist`] prints
/// a set (no formatter, no allocation).
pub(crate) fn push_cpulist(out: &mut String, cpus: impl Iterator<Item = u32>) {
    let mut iter = cpus.peekable();
    let mut first = true;
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end = iter.next().unwrap_or(end);
        }
        if !first {
            out.push(',');
        }
        first = false;
        push_u64(out, u64::from(start));
        if end != start {
            out.push('-');
            push_u64(out, u64::from(end));
        }
    }
}

/// Appends `v` in decimal, as `Display` writes it (no formatter, no allocation).
pub(crate) fn push_u64(out: &mut String, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&buf[i..]).expect("ASCII digits"));
}

/// Print a set as the kernel's comma-grouped hex mask of `n_bits` bits.
pub fn format_hex_mask(set: &CpuSet, n_bits: u32) -> String {
    if n_bits == 0 {
        return String::new();
    }
    let chunks = n_bits.div_ceil(32);
    let mut out = String::new();
    for chunk in (0..chunks).rev() {
        let mut value: u32 = 0;
        for bit in 0..32 {
            let cpu = chunk * 32 + bit;
            if cpu < n_bits && set.contains(cpu) {
                value |= 1 << bit;
            }
        }
        if chunk == chunks - 1 {
            let bits_here = n_bits - chunk * 32;
            let width = bits_here.div_ceil(4) as usize;
            let _ = write!(out, "{value:0width$x}");
        } else {
            let _ = write!(out, ",{value:08x}");
        }
    }
    out
}

/// Parse a comma-grouped hex mask (`bitmap_parse`): chunks of at most eight hex digits,
/// least significant chunk last; leading zero digits may be omitted.
pub fn parse_hex_mask(text: &str, n_bits: u32) -> Result<CpuSet, CpulistError> {
    let body = trimmed(text)?;
    let invalid = invalid_in(text);
    if body.is_empty() {
        return Err(invalid("empty mask"));
    }
    let mut set = CpuSet::new(n_bits);
    for (chunk_index, chunk) in body.rsplit(',').enumerate() {
        if chunk.is_empty() || chunk.len() > 8 {
            return Err(invalid("each comma-separated chunk holds 1 to 8 hex digits"));
        }
        let value = u32::from_str_radix(chunk, 16).map_err(|_| invalid("invalid hex digit"))?;
        for bit in 0..32u64 {
            if value & (1 << bit) != 0 {
                let cpu = chunk_index as u64 * 32 + bit;
                if cpu >= u64::from(n_bits) {
                    return Err(CpulistError::OutOfRange {
                        text: shorten(text),
                        cpu,
                        last: i64::from(n_bits) - 1,
                    });
                }
                set.insert(cpu as u32);
            }
        }
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(text: &str, n: u32) -> Vec<u32> {
        parse_cpulist(text, n).unwrap().iter().collect()
    }

    #[test]
    fn parses_kernel_forms() {
        assert_eq!(ids("0-3,8", 16), vec![0, 1, 2, 3, 8]);
        assert_eq!(ids("", 16), Vec::<u32>::new());
        assert_eq!(ids("5\n", 16), vec![5]);
        assert_eq!(ids("all", 4), vec![0, 1, 2, 3]);
        assert_eq!(ids("N", 4), vec![3]);
        assert_eq!(ids("2-N", 5), vec![2, 3, 4]);
        // The kernel's documented example: 0-1023:2/256.
        assert_eq!(ids("0-1023:2/256", 1024), vec![0, 1, 256, 257, 512, 513, 768, 769]);
        assert_eq!(ids("0-9:1/3", 10), vec![0, 3, 6, 9]);
        assert_eq!(ids("all:1/2", 6), vec![0, 2, 4]);
    }

    #[test]
    fn rejects_bad_lists() {
        for bad in ["3-1", "a", "1,,2", "1-", "-1", "0-7:3/2", "0-7:1/0", "0-7:1", "1 2"] {
            assert!(parse_cpulist(bad, 16).is_err(), "{bad:?} must be refused");
        }
        assert!(matches!(parse_cpulist("16", 16), Err(CpulistError::OutOfRange { .. })));
        assert!(parse_cpulist("99999999999999999999", 16).is_err());
    }

    #[test]
    fn prints_ranges() {
        let set = CpuSet::from_cpus([0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(format_cpulist(&set), "0-3,8,10-11");
        assert_eq!(format_cpulist(&CpuSet::new(8)), "");
        assert_eq!(format_cpulist(&CpuSet::from_cpus([12, 48])), "12,48");
    }

    #[test]
    fn hex_masks_like_proc() {
        assert_eq!(format_hex_mask(&CpuSet::full(8), 8), "ff");
        assert_eq!(format_hex_mask(&CpuSet::full(40), 40), "ff,ffffffff");
        assert_eq!(
            format_hex_mask(&CpuSet::from_cpus([0, 95]), 96),
            "80000000,00000000,00000001"
        );
        assert_eq!(format_hex_mask(&CpuSet::from_cpus([1]), 4), "2");
        assert_eq!(parse_hex_mask("ff,ffffffff", 40).unwrap(), CpuSet::full(40));
        assert_eq!(parse_hex_mask("1,00000000", 64).unwrap(), CpuSet::from_cpus([32]));
        assert!(parse_hex_mask("1,00000000", 16).is_err());
        assert!(parse_hex_mask("xyz", 16).is_err());
    }
}
