//! The counters of a `/proc/interrupts` row, read fast: the column reader for rows in the
//! kernel's own layout ([`scan_columns`]) and the word scanner for any other spacing
//! ([`scan_words`], which defines the result). The reference parser in `reference.rs` reads
//! rows independently of both, and the tests of the parent module hold them to it.
//!
//! The crate denies `unsafe` code; the two SSE2 blocks of [`classify`] are its only
//! exceptions.

/// Bytes classified at once by [`scan_counters`].
const BLOCK: usize = 64;

/// Per-byte bit masks of one [`BLOCK`]: spaces, `0` digits, `1`–`9` digits. SSE2 is part of
/// x86_64, so its classifier needs no run-time detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Classes {
    space: u64,
    zero: u64,
    nonzero: u64,
}

/// The portable classifier (and the reference the SSE2 one is tested against).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn classify_portable(block: &[u8; BLOCK]) -> Classes {
    let mut c = Classes {
        space: 0,
        zero: 0,
        nonzero: 0,
    };
    for (i, &b) in block.iter().enumerate() {
        c.space |= u64::from(b == b' ') << i;
        c.zero |= u64::from(b == b'0') << i;
        c.nonzero |= u64::from((b'1'..=b'9').contains(&b)) << i;
    }
    c
}

// The crate denies `unsafe`; these SSE2 intrinsics are its one exception (two blocks, each
// an unaligned 16-byte load inside `block` and compares).
#[allow(unsafe_code)]
#[cfg(target_arch = "x86_64")]
#[inline]
fn classify(block: &[u8; BLOCK]) -> Classes {
    use std::arch::x86_64::*;
    // Nearly every block of a large host is spaces and zeros: test that first with one OR and
    // one compare per 16 bytes (`b | 0x10 == 0x30` holds for `' '` and `'0'` only).
    let (mut space, mut space_or_zero) = (0u64, 0u64);
    for k in 0..BLOCK / 16 {
        // SAFETY: SSE2 is always available on x86_64, and the unaligned load reads the 16
        // bytes at 16 * k, inside `block`.
        let (sp, sz) = unsafe {
            let v = _mm_loadu_si128(block.as_ptr().add(16 * k).cast());
            (
                _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b' ' as i8))),
                _mm_movemask_epi8(_mm_cmpeq_epi8(
                    _mm_or_si128(v, _mm_set1_epi8(0x10)),
                    _mm_set1_epi8(0x30),
                )),
            )
        };
        let at = 16 * k as u32;
        space |= u64::from(sp as u16) << at;
        space_or_zero |= u64::from(sz as u16) << at;
    }
    if space_or_zero == u64::MAX {
        return Classes {
            space,
            zero: !space,
            nonzero: 0,
        };
    }
    let mut c = Classes {
        space,
        zero: 0,
        nonzero: 0,
    };
    for k in 0..BLOCK / 16 {
        // SAFETY: as above.
        let (zero, nonzero) = unsafe {
            let v = _mm_loadu_si128(block.as_ptr().add(16 * k).cast());
            // Signed compares: bytes >= 0x80 are negative, so never digits.
            let nonzero = _mm_and_si128(
                _mm_cmpgt_epi8(v, _mm_set1_epi8(b'0' as i8)),
                _mm_cmpgt_epi8(_mm_set1_epi8(b':' as i8), v),
            );
            (
                _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'0' as i8))),
                _mm_movemask_epi8(nonzero),
            )
        };
        let at = 16 * k as u32;
        c.zero |= u64::from(zero as u16) << at;
        c.nonzero |= u64::from(nonzero as u16) << at;
    }
    c
}

#[cfg(not(target_arch = "x86_64"))]
fn classify(block: &[u8; BLOCK]) -> Classes {
    classify_portable(block)
}

/// Read a row's counters after its `label:`: decimal words, at most one per column, stopping
/// at the first word that is not all digits. Non-zero values go to `counts` as (CPU, count).
/// Returns the number of counters and the offset where the description starts (whitespace
/// skipped), or the word that does not fit 64 bits.
///
/// Only a full-width row is sure to be counters; a short row may end in a number that belongs
/// to the description, but the kernel never prints one first.
///
/// A row in the kernel's fixed layout is read by [`scan_columns`]; any other by
/// [`scan_words`], whose answer is the definition.
pub(super) fn scan_counters<'a>(
    r: &'a [u8],
    cpus: &[u32],
    counts: &mut Vec<(u32, u64)>,
) -> Result<(u32, usize), &'a [u8]> {
    if let Some(done) = scan_columns(r, cpus, counts) {
        return Ok(done);
    }
    scan_words(r, cpus, counts)
}

/// Bytes of one counter column as the kernel prints it: a space, then the count right-aligned
/// in 10 places (`seq_put_decimal_ull_width(p, " ", n, 10)`; before 6.10 `"%10u "` after a
/// `": "`, the same bytes). An `unsigned int` never needs more than 10 digits.
const COLUMN: usize = 11;

/// Columns compared with [`ZERO_COLUMNS`] at once.
const SPAN: usize = 32;

/// [`SPAN`] columns of `0`.
const ZERO_COLUMNS: [u8; SPAN * COLUMN] = {
    let mut z = [b' '; SPAN * COLUMN];
    let mut k = 0;
    while k < SPAN {
        z[k * COLUMN + COLUMN - 1] = b'0';
        k += 1;
    }
    z
};

/// [`scan_counters`] for a row in the kernel's own layout: one [`COLUMN`] per CPU, then
/// whitespace or the end. Nearly every column of a large host is `0`, so [`SPAN`] columns at a
/// time are compared with [`ZERO_COLUMNS`] (one `memcmp`, no per-word work) and only a
/// span that differs is read column by column. `None`, with `counts` as it was, when the row is
/// not in that layout (a shorter row, other whitespace, a wider number, a word that is not
/// digits): [`scan_words`], which defines the result, takes it then. When this answers, the
/// answer is the one [`scan_words`] gives: every column is a space and then one word of digits
/// that ends at the column's end, so the words and their columns are the same.
fn scan_columns(r: &[u8], cpus: &[u32], counts: &mut Vec<(u32, u64)>) -> Option<(u32, usize)> {
    let len = cpus.len() * COLUMN;
    let body = r.get(..len)?;
    let kept = counts.len();
    // The last span holds the columns left over (fewer than SPAN).
    let fits = body
        .chunks(SPAN * COLUMN)
        .zip(cpus.chunks(SPAN))
        .all(|(span, cpus)| span == &ZERO_COLUMNS[..span.len()] || read_columns(span, cpus, counts));
    // The byte after the columns is checked last: read first, it would wait for memory that
    // the reads in order are about to bring.
    if !fits || r.get(len).is_some_and(|b| !b.is_ascii_whitespace()) {
        counts.truncate(kept);
        return None;
    }
    // The description starts after the whitespace, as in [`scan_words`].
    let mut at = len;
    while r.get(at).is_some_and(|&b| b != b'\n' && b.is_ascii_whitespace()) {
        at += 1;
    }
    Some((cpus.len() as u32, at))
}

/// Each [`COLUMN`] of `columns` (one per CPU of `cpus`): non-zero counts to `counts`. False
/// when a column is not a space, then spaces, then 1 to 10 digits.
fn read_columns(columns: &[u8], cpus: &[u32], counts: &mut Vec<(u32, u64)>) -> bool {
    // A `0` column as two overlapping words (bytes 0-7 and 3-10): a span that differs is
    // mostly zero columns still, each passed over with two compares.
    const ZERO_HEAD: u64 = u64::from_le_bytes(*b"        ");
    const ZERO_TAIL: u64 = u64::from_le_bytes(*b"       0");
    for (col, &cpu) in columns.chunks_exact(COLUMN).zip(cpus) {
        let col: &[u8; COLUMN] = col.try_into().expect("COLUMN bytes");
        let head = u64::from_le_bytes(col[..8].try_into().expect("8 bytes"));
        let tail = u64::from_le_bytes(col[3..].try_into().expect("8 bytes"));
        if head == ZERO_HEAD && tail == ZERO_TAIL {
            continue;
        }
        match column_value(col) {
            None => return false,
            Some(0) => {}
            Some(v) => counts.push((cpu, v)),
        }
    }
    true
}

/// One column's count: a space, then spaces, then 1 to 10 digits; `None` otherwise. A count
/// below 10^8 (the first three bytes spaces) is read from the last eight bytes as one word,
/// without a branch per byte; a larger one byte by byte ([`column_value_bytes`], the
/// definition).
fn column_value(col: &[u8; COLUMN]) -> Option<u64> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    if col[..3] != *b"   " {
        return column_value_bytes(col);
    }
    // The text's first byte is the word's lowest.
    let x = u64::from_le_bytes(col[3..].try_into().expect("8 bytes"));
    // The high bit of each byte that is not a space (exact per byte: no carry leaves a byte).
    let t = x ^ (b' ' as u64 * ONES);
    let other = (((t & !HIGH) + 0x7f * ONES) | t) & HIGH;
    // The spaces before the first other byte become `0`; then every byte must be a digit (a
    // space after a digit is not).
    let leading = other.trailing_zeros() / 8;
    if leading == 8 {
        return None;
    }
    let spaces = (1u64 << (8 * leading)) - 1;
    let digits = x ^ (spaces & (0x10 * ONES));
    if digits & (0xf0 * ONES) != 0x30 * ONES || ((digits & (0x0f * ONES)) + 6 * ONES) & (0xf0 * ONES) != 0 {
        return None;
    }
    // Eight decimal digits to their value: pairs, then fours, then the eight.
    let d = digits - 0x30 * ONES;
    let d = d.wrapping_mul(10).wrapping_add(d >> 8);
    const MASK: u64 = 0x0000_00ff_0000_00ff;
    let d = ((d & MASK).wrapping_mul(100 + (1_000_000 << 32)))
        .wrapping_add(((d >> 16) & MASK).wrapping_mul(1 + (10_000 << 32)))
        >> 32;
    Some(d)
}

/// [`column_value`] a byte at a time.
fn column_value_bytes(col: &[u8; COLUMN]) -> Option<u64> {
    if col[0] != b' ' {
        return None;
    }
    let digits = &col[1 + col[1..].iter().take_while(|&&b| b == b' ').count()..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(digits.iter().fold(0u64, |a, &d| a * 10 + u64::from(d - b'0')))
}

/// [`scan_counters`] on any spacing: the definition of the result.
///
/// The fast path takes a block of [`BLOCK`] bytes that holds only spaces and digits and counts
/// the words that start in it; only blocks with a non-zero digit convert words. A word that
/// runs past the block's end is read to its end at once and the next block starts after it;
/// otherwise the next block is the next 64 bytes, so the common block (spaces and zeros, a
/// space last) advances by a constant and the loads of the next blocks need not wait for this
/// one's classification. Anything else (other whitespace, the description, the column limit, a
/// word that is not all digits) takes one word through the byte-at-a-time path, which is the
/// definition the fast path must agree with.
fn scan_words<'a>(r: &'a [u8], cpus: &[u32], counts: &mut Vec<(u32, u64)>) -> Result<(u32, usize), &'a [u8]> {
    let cols = cpus.len();
    let mut n = 0usize;
    // Invariant: `at` is at a word boundary (the start, or r[at - 1] or r[at] is whitespace).
    let mut at = 0usize;
    loop {
        if let Some(block) = r.get(at..at + BLOCK) {
            let block: &[u8; BLOCK] = block.try_into().expect("BLOCK bytes");
            let c = classify(block);
            let digit = c.zero | c.nonzero;
            // A word starts at a digit after a space, or at the block's start (a boundary).
            let starts = digit & ((c.space << 1) | 1);
            let k = starts.count_ones() as usize;
            if c.space | digit == u64::MAX && n + k <= cols {
                // The last word runs past the block when its last byte is a digit.
                let open = digit >> 63 == 1;
                // An open word starts in the block, so `starts` is not empty then; a block of
                // spaces only has no start at all.
                let open_at = if open { 63 - starts.leading_zeros() } else { 0 };
                let closed = if open { starts & !(1u64 << open_at) } else { starts };
                // The bytes before the open word (all of them when none is open).
                let closed_bytes = if open { (1u64 << open_at) - 1 } else { u64::MAX };
                if c.nonzero & closed_bytes != 0 {
                    let block_text = &r[at..at + BLOCK];
                    n = convert_closed_words(block_text, c.space, closed, cpus, n, counts)?;
                } else {
                    n += closed.count_ones() as usize;
                }
                if !open {
                    at += BLOCK;
                    continue;
                }
                // The open word, read to its end: a counter when it ends at whitespace or at the
                // end of the text; otherwise the byte path below takes it from its start.
                let start = at + open_at as usize;
                let mut end = at + BLOCK;
                while end < r.len() && r[end].is_ascii_digit() {
                    end += 1;
                }
                if end == r.len() || r[end].is_ascii_whitespace() {
                    let word = &r[start..end];
                    let v = parse_u64(word).ok_or(word)?;
                    if v != 0 {
                        counts.push((cpus[n], v));
                    }
                    n += 1;
                    at = end;
                    continue;
                }
                at = start;
            }
        }
        // One word, byte by byte.
        while at < r.len() && r[at] != b'\n' && r[at].is_ascii_whitespace() {
            at += 1;
        }
        if n >= cols {
            break;
        }
        let start = at;
        let mut end = at;
        while end < r.len() && !r[end].is_ascii_whitespace() {
            end += 1;
        }
        let word = &r[start..end];
        if word.is_empty() || !word.iter().all(u8::is_ascii_digit) {
            break;
        }
        let v = parse_u64(word).ok_or(word)?;
        if v != 0 {
            counts.push((cpus[n], v));
        }
        n += 1;
        at = end;
    }
    Ok((n as u32, at))
}

/// The words of a block that start at the bits of `closed` and end at a space inside it
/// (`space`, the block's space bits): each converted, the non-zero ones pushed for the CPUs
/// from column `n` on. Returns the column after the last; a word too large for 64 bits is
/// the error.
#[inline(always)]
fn convert_closed_words<'a>(
    block: &'a [u8],
    space: u64,
    closed: u64,
    cpus: &[u32],
    mut n: usize,
    counts: &mut Vec<(u32, u64)>,
) -> Result<usize, &'a [u8]> {
    let mut s = closed;
    while s != 0 {
        let i = s.trailing_zeros();
        s &= s - 1;
        // A closed word ends at the next space, inside the block (so i < 63).
        let end = (space & !((2u64 << i) - 1)).trailing_zeros();
        let word = &block[i as usize..end as usize];
        // Up to 19 digits cannot overflow; longer words take the checked path.
        let v = if word.len() <= 19 {
            word.iter().fold(0u64, |a, &d| a * 10 + u64::from(d - b'0'))
        } else {
            parse_u64(word).ok_or(word)?
        };
        if v != 0 {
            counts.push((cpus[n], v));
        }
        n += 1;
    }
    Ok(n)
}

/// A word of ASCII digits as u64; `None` when it does not fit.
fn parse_u64(digits: &[u8]) -> Option<u64> {
    digits
        .iter()
        .try_fold(0u64, |a, &d| a.checked_mul(10)?.checked_add(u64::from(d - b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_classifier_matches_the_portable_one() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut block = [b' '; BLOCK];
        for round in 0..70_000 {
            for (i, b) in block.iter_mut().enumerate() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Mostly the bytes that matter, sometimes any byte; a quarter of the blocks
                // spaces and zeros with one byte of every value (the fast test's edge).
                *b = match round % 4 {
                    0 => x as u8,
                    1 if i == (round / 4) % BLOCK => (round / 4 / BLOCK) as u8,
                    1 => b" 0"[(x % 2) as usize],
                    _ => b" 0123456789\t\xa0"[(x % 13) as usize],
                };
                if round < 256 && i == round % BLOCK {
                    *b = round as u8;
                }
            }
            assert_eq!(classify(&block), classify_portable(&block), "{block:?}");
        }
    }

    #[test]
    fn a_column_read_as_a_word_is_read_as_bytes() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut checked = 0;
        for round in 0..400_000u32 {
            let v = match round % 4 {
                0 => next() % 100,
                1 => next() % 100_000_000,
                2 => 99_999_990 + next() % 20,
                _ => next() % 10_000_000_000,
            };
            let mut col: [u8; COLUMN] = format!(" {v:>10}").into_bytes().try_into().unwrap();
            assert_eq!(column_value(&col), Some(v));
            // One byte or two set to anything: a space among digits, a digit in the first
            // place, a byte above ASCII; both readings must say the same.
            for _ in 0..1 + round % 2 {
                let r = next();
                col[(r % COLUMN as u64) as usize] = match (r >> 8) % 3 {
                    0 => (r >> 16) as u8,
                    1 => b' ',
                    _ => b"0123456789"[((r >> 16) % 10) as usize],
                };
            }
            let want = column_value_bytes(&col);
            assert_eq!(column_value(&col), want, "{:?}", String::from_utf8_lossy(&col));
            checked += usize::from(want.is_some());
        }
        assert!(checked > 100_000, "{checked} damaged columns still counts");
    }
}
