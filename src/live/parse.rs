//! Pure parsers for what the agent reads: `/proc/interrupts`, `/proc/irq/N/{smp_affinity_list,
//! effective_affinity_list,node}`. `&str -> Result<T, ParseError>`, bounded input, line numbers
//! in errors, no panics (fuzzed: `fuzz/fuzz_targets/live_*.rs`).
//!
//! `/proc/interrupts` is printed by `show_interrupts()` (kernel/irq/proc.c) and the arch's
//! `arch_show_interrupts()`: a header naming the *online* CPUs (`CPU0 CPU3 …`, so columns move
//! with hotplug), then one row per IRQ with an action or a count: the label (`24:`, `NMI:`,
//! `IPI0:`), one decimal counter per column, then the chip name, the hardware IRQ number, the
//! flow handler name and the action names (`IR-PCI-MSIX-0000:00:04.0 1-edge nvme0q1`; arm64 with
//! `GENERIC_IRQ_SHOW_LEVEL`: `GICv3 27 Level arch_timer`). Arch rows print fewer counters or
//! none (`ERR:` and `MIS:` on x86 print one total) and a free-text description
//! (`Rescheduling interrupts`). Nothing here assumes the column count of a row: counters are read
//! while they are numbers and there are columns left.

use crate::topology::{parse_cpulist, CpuSet, CPUS_MAX};
use std::fmt;
use std::fmt::Write;

/// Largest `/proc/interrupts` accepted (8,192 CPUs × 16,384 IRQs of sparse counts fit).
pub(crate) const INTERRUPTS_BYTES_MAX: usize = 256 << 20;
/// Most rows of `/proc/interrupts` (IRQs plus the arch rows).
pub(crate) const ROWS_MAX: usize = super::limits::IRQS_MAX + 256;
/// Longest label, chip, hwirq or name field kept.
pub(crate) const FIELD_BYTES_MAX: usize = 256;
/// Largest `/proc/irq/N/*` file accepted.
pub(crate) const IRQ_FILE_BYTES_MAX: usize = 64 << 10;

/// Bad input: which file, which line (1-based), what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    pub file: String,
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}: line {l}: {}", self.file, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl ParseError {
    pub fn new(file: impl Into<String>, line: Option<usize>, message: impl Into<String>) -> ParseError {
        ParseError {
            file: file.into(),
            line,
            message: message.into(),
        }
    }
}

/// `/proc/interrupts`, parsed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Interrupts {
    /// The CPU of each counter column, in header order (online CPUs when it was read).
    pub cpus: Vec<u32>,
    pub rows: Vec<IrqRow>,
}

/// One row of `/proc/interrupts`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IrqRow {
    /// The label without its colon: `24`, `NMI`, `IPI0`.
    pub label: String,
    /// Non-zero counters as (CPU, count), ordered by CPU. Rows that print one total (`ERR`,
    /// `MIS`) have it under the first column's CPU.
    pub counts: Vec<(u32, u64)>,
    /// Counters printed (0 for a row without any).
    pub n_counts: u32,
    /// Chip name (`IR-PCI-MSIX-0000:00:04.0`, `GICv3`); empty for arch rows.
    pub chip: String,
    /// Hardware IRQ and flow (`1-edge`, `27 Level`); empty when not printed.
    pub hwirq: String,
    /// Action names for numbered IRQs (`nvme0q1`, `i8042, serio`); the description for arch
    /// rows (`Rescheduling interrupts`).
    pub name: String,
}

impl IrqRow {
    /// The Linux IRQ number, for numbered rows.
    pub fn irq(&self) -> Option<u32> {
        self.label.parse().ok()
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().fold(0u64, |a, &(_, c)| a.saturating_add(c))
    }
}

const FILE: &str = "/proc/interrupts";

/// Parse `/proc/interrupts` as the kernel prints it.
pub fn parse_interrupts(text: &str) -> Result<Interrupts, ParseError> {
    let mut out = Interrupts::default();
    parse_interrupts_into(text, &mut out)?;
    Ok(out)
}

/// [`parse_interrupts`] into `out`, reusing its rows' strings and counter vectors (see
/// [`parse_interrupts_bytes_into`]).
pub fn parse_interrupts_into(text: &str, out: &mut Interrupts) -> Result<(), ParseError> {
    parse_interrupts_bytes_into(text.as_bytes(), out)
}

/// `/proc/interrupts` as the bytes read, parsed into `out`, reusing its rows' strings and
/// counter vectors: the agent keeps one [`Interrupts`] and one byte buffer between readings, so
/// a steady host allocates nothing here. On an error `out` holds a partial reading; do not use
/// it.
///
/// The text is not checked as UTF-8 as a whole: the counter columns, which are nearly all of
/// the bytes on a large host (`" %10u"` per CPU, mostly `0`), are ASCII by construction, so
/// only the fields that become strings (the header, the description after the counters, and
/// any line that takes the line-at-a-time path) are checked, and a line that is not UTF-8 is an
/// error naming it. Lines are found with `memchr`; a row in the kernel's layout has its
/// counter columns compared with zero columns 32 at a time, and any other row its counters
/// classified 64 bytes at a time ([`scan_counters`]); only non-zero counts are converted.
pub fn parse_interrupts_bytes_into(bytes: &[u8], out: &mut Interrupts) -> Result<(), ParseError> {
    if bytes.len() > INTERRUPTS_BYTES_MAX {
        return Err(ParseError::new(
            FILE,
            None,
            format!("{} bytes, more than the limit of {INTERRUPTS_BYTES_MAX}", bytes.len()),
        ));
    }
    let mut stream = InterruptsStream::new();
    stream.feed(bytes, out)?;
    stream.finish(out)
}

/// [`parse_interrupts_bytes_into`] fed a piece at a time, so a reader can parse each chunk of
/// the file while it is still in the cache: every piece holds whole lines (each ends with `\n`,
/// except the input's last line, which may come without one in the last piece). Cutting the
/// input anywhere after a newline gives the rows and errors (line numbers included) of one
/// call on the whole input; the total size is the caller's to bound ([`INTERRUPTS_BYTES_MAX`]).
/// [`parse_interrupts_read_into`] is the reading loop.
#[derive(Debug, Default)]
pub struct InterruptsStream {
    /// Lines seen so far.
    no: usize,
    /// The CPU header has been parsed into `out.cpus`.
    header: bool,
    /// Rows written to `out.rows`.
    n_rows: usize,
    /// A row's description fields as parsed, before they are compared with the row's.
    text: RowText,
}

/// A row's chip, hwirq and name as parsed (reused buffers), and the rows whose text a parse
/// wrote.
#[derive(Debug, Default)]
struct RowText {
    chip: String,
    hwirq: String,
    name: String,
    /// Rows (in order) whose label, chip, hwirq or name differ from what `out.rows` held at
    /// that row before, or that `out.rows` did not hold.
    rewritten: Vec<u32>,
}

impl InterruptsStream {
    pub fn new() -> InterruptsStream {
        InterruptsStream::default()
    }

    /// Parse the whole lines in `bytes` into `out`. After an error, do not feed more.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Interrupts) -> Result<(), ParseError> {
        let mut lines = Lines {
            bytes,
            at: 0,
            no: self.no,
        };
        let r = self.feed_lines(&mut lines, out);
        self.no = lines.no;
        r
    }

    fn feed_lines(&mut self, lines: &mut Lines<'_>, out: &mut Interrupts) -> Result<(), ParseError> {
        if !self.header {
            let (header_no, header) = loop {
                match lines.next() {
                    None => return Ok(()),
                    Some((no, l)) => {
                        let l = utf8_line(no, l)?;
                        if !l.trim().is_empty() {
                            break (no, l);
                        }
                    }
                }
            };
            parse_header(header_no, header, &mut out.cpus)?;
            self.header = true;
        }
        parse_rows(lines, &out.cpus, &mut out.rows, &mut self.n_rows, &mut self.text)
    }

    /// The rows fed so far whose text differs from what `out.rows` held at that row before the
    /// first feed (or that it did not hold), in order.
    pub fn rewritten(&self) -> &[u32] {
        &self.text.rewritten
    }

    /// The end of the input: an input without a header is an error; rows left from an
    /// earlier reading are dropped.
    pub fn finish(&mut self, out: &mut Interrupts) -> Result<(), ParseError> {
        if !self.header {
            return Err(ParseError::new(FILE, None, "empty input (no CPU header)"));
        }
        out.rows.truncate(self.n_rows);
        Ok(())
    }
}

/// Why [`parse_interrupts_read_into`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Parse(#[from] ParseError),
}

/// Read `/proc/interrupts` from `r` in reads of `chunk` bytes into `buf` (kept between calls,
/// its allocation reused), parsing every complete line of a chunk while it is in the cache and
/// carrying the unfinished last line to the next read. More than `bytes_max` bytes is an I/O
/// error, as a bounded read of the whole file would give; a parse error is returned once the
/// file has been read to its end (so an oversized file is reported as such either way). The
/// result is that of [`parse_interrupts_bytes_into`] on the whole file.
pub fn parse_interrupts_read_into(
    r: impl std::io::Read,
    chunk: usize,
    bytes_max: usize,
    buf: &mut Vec<u8>,
    out: &mut Interrupts,
) -> Result<(), ReadError> {
    parse_interrupts_read_noting(r, chunk, bytes_max, buf, out, &mut Vec::new())
}

/// [`parse_interrupts_read_into`], noting in `rewritten` (cleared first) the rows whose label,
/// chip, hwirq or name differ from what `out` held at that row, or that it did not hold: a
/// reader that keeps `out` between readings learns which rows' text it must look at again.
/// Only rows are noted; after an error `rewritten` and `out` are both partial.
pub fn parse_interrupts_read_noting(
    r: impl std::io::Read,
    chunk: usize,
    bytes_max: usize,
    buf: &mut Vec<u8>,
    out: &mut Interrupts,
    rewritten: &mut Vec<u32>,
) -> Result<(), ReadError> {
    rewritten.clear();
    let mut stream = InterruptsStream::new();
    // The caller's buffer, so that it keeps its allocation between readings.
    std::mem::swap(&mut stream.text.rewritten, rewritten);
    let result = read_stream(r, chunk.max(1), bytes_max, buf, out, &mut stream);
    std::mem::swap(&mut stream.text.rewritten, rewritten);
    result
}

/// The reading loop of [`parse_interrupts_read_noting`].
fn read_stream(
    mut r: impl std::io::Read,
    chunk: usize,
    bytes_max: usize,
    buf: &mut Vec<u8>,
    out: &mut Interrupts,
    stream: &mut InterruptsStream,
) -> Result<(), ReadError> {
    let mut failed = None;
    // `buf[..filled]`: the carried line, without its newline. `buf` is only ever grown (its
    // bytes are overwritten by reads), so a steady reading neither allocates nor clears it.
    let mut filled = 0usize;
    let mut total = 0usize;
    loop {
        if buf.len() < filled + chunk {
            buf.resize(filled + chunk, 0);
        }
        let n = match r.read(&mut buf[filled..filled + chunk]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        total += n;
        if total > bytes_max {
            return Err(std::io::Error::other(format!("larger than {bytes_max} bytes")).into());
        }
        if failed.is_some() {
            continue;
        }
        let end = filled + n;
        match memchr::memrchr(b'\n', &buf[filled..end]) {
            None => filled = end,
            Some(i) => {
                let cut = filled + i + 1;
                if let Err(e) = stream.feed(&buf[..cut], out) {
                    failed = Some(e);
                    filled = 0;
                    continue;
                }
                buf.copy_within(cut..end, 0);
                filled = end - cut;
            }
        }
    }
    if let Some(e) = failed {
        return Err(e.into());
    }
    stream.feed(&buf[..filled], out)?;
    stream.finish(out)?;
    Ok(())
}

/// The CPU header (`CPU0 CPU1 …`, line `no`) into `cpus`.
fn parse_header(no: usize, header: &str, cpus: &mut Vec<u32>) -> Result<(), ParseError> {
    let err = |m: String| Err(ParseError::new(FILE, Some(no), m));
    cpus.clear();
    for word in header.split_ascii_whitespace() {
        let Some(id) = word.strip_prefix("CPU") else {
            return err(format!("header word {:?} is not CPUn", short(word)));
        };
        let cpu = match id.parse::<u32>() {
            Ok(c) if c < CPUS_MAX && (id.len() == 1 || !id.starts_with('0')) => c,
            _ => return err(format!("header word {:?}: a CPU number below {CPUS_MAX}", short(word))),
        };
        if cpus.last().is_some_and(|&last| last >= cpu) {
            return err(format!("CPU{cpu} is out of order in the header"));
        }
        cpus.push(cpu);
    }
    if cpus.is_empty() {
        return err("the header names no CPU".into());
    }
    Ok(())
}

/// The rows in what is left of `lines` (whole lines), written from `rows[*n_rows]` on.
fn parse_rows(
    lines: &mut Lines<'_>,
    cpus: &[u32],
    rows: &mut Vec<IrqRow>,
    n_rows: &mut usize,
    text: &mut RowText,
) -> Result<(), ParseError> {
    let err = |line: usize, m: String| Err(ParseError::new(FILE, Some(line), m));
    let bytes = lines.bytes;
    while lines.at < bytes.len() {
        // A row whose line starts with ASCII: its counters are scanned straight from the bytes
        // (a newline ends the scan) and its end is searched from the description on, so the
        // counter bytes are read once. Anything else takes the line-at-a-time path below.
        let mut p = lines.at;
        while p < bytes.len() && matches!(bytes[p], b' ' | b'\t' | 0x0b | 0x0c | b'\r') {
            p += 1;
        }
        if p < bytes.len() && bytes[p] != b'\n' && bytes[p] < 0x80 {
            if let Some(i) = memchr::memchr2(b':', b'\n', &bytes[p..]).filter(|&i| bytes[p + i] == b':') {
                let no = lines.no + 1;
                lines.no = no;
                if *n_rows >= ROWS_MAX {
                    return err(no, format!("more than {ROWS_MAX} rows"));
                }
                let label = check_label(no, &bytes[p..p + i])?;
                let rest = &bytes[p + i + 1..];
                let used = parse_row(no, label, rest, cpus, rows, n_rows, text)?;
                lines.at = (p + i + 1 + used + 1).min(bytes.len());
                continue;
            }
        }
        let Some((no, line)) = lines.next() else { break };
        let line = utf8_line(no, line)?;
        if line.trim().is_empty() {
            continue;
        }
        if *n_rows >= ROWS_MAX {
            return err(no, format!("more than {ROWS_MAX} rows"));
        }
        let body = line.trim_start();
        let Some(colon) = memchr::memchr(b':', body.as_bytes()) else {
            return err(no, format!("no `label:` at the start of {:?}", short(body)));
        };
        let label = check_label(no, &body.as_bytes()[..colon])?;
        parse_row(no, label, &body.as_bytes()[colon + 1..], cpus, rows, n_rows, text)?;
    }
    Ok(())
}

/// A line as text, or an error naming it.
fn utf8_line(no: usize, line: &[u8]) -> Result<&str, ParseError> {
    std::str::from_utf8(line).map_err(|e| {
        ParseError::new(
            FILE,
            Some(no),
            format!("not UTF-8 text (byte {} of the line)", e.valid_up_to() + 1),
        )
    })
}

/// A row label (`24`, `NMI`, `IPI0`): ASCII letters, digits, `_` and `-`, at most 32 bytes.
fn check_label(no: usize, label: &[u8]) -> Result<&str, ParseError> {
    let bad = || {
        ParseError::new(
            FILE,
            Some(no),
            format!("bad row label {:?}", short(&String::from_utf8_lossy(label))),
        )
    };
    if label.is_empty()
        || label.len() > 32
        || !label
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(bad());
    }
    std::str::from_utf8(label).map_err(|_| bad())
}

/// One row after its `label:`. `rest` runs to the end of the line or beyond it (a newline
/// ends the row); returns the length of the row's part of `rest`.
fn parse_row(
    no: usize,
    label: &str,
    rest: &[u8],
    cpus: &[u32],
    rows: &mut Vec<IrqRow>,
    n_rows: &mut usize,
    text: &mut RowText,
) -> Result<usize, ParseError> {
    let err = |line: usize, m: String| Err(ParseError::new(FILE, Some(line), m));
    if *n_rows == rows.len() {
        rows.push(IrqRow::default());
    }
    let at = *n_rows;
    let row = &mut rows[at];
    *n_rows += 1;
    // A new row's label is empty, and a label never is.
    let mut same = row.label == label;
    if !same {
        row.label.clear();
        row.label.push_str(label);
    }
    row.counts.clear();
    let (n_counts, desc_at) = match scan_counters(rest, cpus, &mut row.counts) {
        Ok(done) => done,
        Err(word) => {
            return err(
                no,
                format!(
                    "counter {:?} does not fit 64 bits",
                    short(&String::from_utf8_lossy(word))
                ),
            )
        }
    };
    row.n_counts = n_counts;
    // Words are split on ASCII whitespace everywhere, so a row prints and parses back the
    // same (found by fuzzing: a form feed between a counter and a number).
    let line_end = desc_at + memchr::memchr(b'\n', &rest[desc_at..]).unwrap_or(rest.len() - desc_at);
    let desc = std::str::from_utf8(&rest[desc_at..line_end]).map_err(|e| {
        ParseError::new(
            FILE,
            Some(no),
            format!("not UTF-8 text (byte {} of the description)", e.valid_up_to() + 1),
        )
    })?;
    let desc = desc.trim_matches(|c: char| c.is_ascii_whitespace());
    text.chip.clear();
    text.hwirq.clear();
    text.name.clear();
    if label.bytes().all(|b| b.is_ascii_digit()) {
        split_description(desc, &mut text.chip, &mut text.hwirq, &mut text.name);
    } else {
        text.name.push_str(desc);
    }
    for (new, old) in [
        (&mut text.chip, &mut row.chip),
        (&mut text.hwirq, &mut row.hwirq),
        (&mut text.name, &mut row.name),
    ] {
        if new != old {
            std::mem::swap(new, old);
            same = false;
        }
    }
    if !same {
        text.rewritten.push(at as u32);
    }
    for (what, v) in [("chip", &row.chip), ("hwirq", &row.hwirq), ("name", &row.name)] {
        if v.len() > FIELD_BYTES_MAX {
            return err(no, format!("{what} is longer than {FIELD_BYTES_MAX} bytes"));
        }
    }
    if *n_rows > 1 && rows[*n_rows - 2].label == label {
        return err(no, format!("row {label} appears twice"));
    }
    Ok(line_end)
}

/// The lines of a text as `str::lines` gives them (split at `\n`, a `\r` before it dropped),
/// numbered from 1, found with `memchr`.
struct Lines<'a> {
    bytes: &'a [u8],
    at: usize,
    no: usize,
}

impl<'a> Iterator for Lines<'a> {
    type Item = (usize, &'a [u8]);

    fn next(&mut self) -> Option<(usize, &'a [u8])> {
        let bytes = self.bytes;
        if self.at >= bytes.len() {
            return None;
        }
        let start = self.at;
        self.no += 1;
        let line = match memchr::memchr(b'\n', &bytes[start..]) {
            Some(i) => {
                self.at = start + i + 1;
                let l = &bytes[start..start + i];
                l.strip_suffix(b"\r").unwrap_or(l)
            }
            None => {
                self.at = bytes.len();
                &bytes[start..]
            }
        };
        Some((self.no, line))
    }
}

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
fn scan_counters<'a>(r: &'a [u8], cpus: &[u32], counts: &mut Vec<(u32, u64)>) -> Result<(u32, usize), &'a [u8]> {
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
                    let mut s = closed;
                    while s != 0 {
                        let i = s.trailing_zeros();
                        s &= s - 1;
                        // A closed word ends at the next space, inside the block (so i < 63).
                        let end = (c.space & !((2u64 << i) - 1)).trailing_zeros();
                        let word = &block[i as usize..end as usize];
                        // Up to 19 digits cannot overflow; longer words take the checked path.
                        let v = if word.len() <= 19 {
                            word.iter().fold(0u64, |a, &d| a * 10 + u64::from(d - b'0'))
                        } else {
                            parse_u64(word).ok_or(&r[at + i as usize..at + end as usize])?
                        };
                        if v != 0 {
                            counts.push((cpus[n], v));
                        }
                        n += 1;
                    }
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

/// A word of ASCII digits as u64; `None` when it does not fit.
fn parse_u64(digits: &[u8]) -> Option<u64> {
    digits
        .iter()
        .try_fold(0u64, |a, &d| a.checked_mul(10)?.checked_add(u64::from(d - b'0')))
}

/// Most words of a chip name: Hyper-V's vPCI MSI chip is `Hyper-V PCIe MSI` (three words).
pub(crate) const CHIP_WORDS_MAX: usize = 3;

/// Split a numbered row's text after the counters into chip, hwirq + flow, and action names.
///
/// The kernel prints ` %8s` chip name, then (with an irq domain) ` %*lu` hwirq, then with
/// `GENERIC_IRQ_SHOW_LEVEL` ` %-8s` Level/Edge, then `-%-8s` the flow name (x86: `1-edge`),
/// then the actions (`  name`, `, name`…). Older x86 kernels glue chip and flow
/// (`IR-PCI-MSI-edge`). A chip name may hold spaces (`Hyper-V PCIe MSI 1946157057-edge
/// mana_q0@pci:7870:00:00.0` on Azure): when the word after the first is not an hwirq but one
/// of the next [`CHIP_WORDS_MAX`] is, the words before it are the chip (a word with a comma
/// belongs to the action list, which the kernel joins with `, `).
fn split_description(desc: &str, chip_out: &mut String, hw: &mut String, name: &mut String) {
    let is_hwirq = |w: &str| {
        let digits = w.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && (digits == w.len() || w.as_bytes()[digits] == b'-')
    };
    // The first CHIP_WORDS_MAX + 1 words with their end offsets (on the stack).
    let mut spans: [(&str, usize); CHIP_WORDS_MAX + 1] = [("", 0); CHIP_WORDS_MAX + 1];
    let mut n_spans = 0;
    let mut at = 0;
    while n_spans <= CHIP_WORDS_MAX {
        let rest = &desc[at..];
        let start = at + (rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_whitespace()).len());
        let len = desc[start..]
            .find(|c: char| c.is_ascii_whitespace())
            .unwrap_or(desc.len() - start);
        if len == 0 {
            break;
        }
        spans[n_spans] = (&desc[start..start + len], start + len);
        n_spans += 1;
        at = start + len;
    }
    let spans = &spans[..n_spans];
    if spans.is_empty() {
        return;
    }
    let chip_words = (1..spans.len())
        .take_while(|&k| !spans[k].0.starts_with('-') && !spans[k].0.contains(','))
        .find(|&k| is_hwirq(spans[k].0))
        .unwrap_or(1);
    let chip_end = spans[chip_words - 1].1;
    let chip = &desc[..chip_end];
    let rest = desc[chip_end..].trim_start_matches(|c: char| c.is_ascii_whitespace());
    let mut rest = rest;
    if let Some(w) = rest.split_ascii_whitespace().next().filter(|w| is_hwirq(w)) {
        hw.push_str(w);
        rest = rest[w.len()..].trim_start_matches(|c: char| c.is_ascii_whitespace());
        if let Some(flow) = rest
            .split_ascii_whitespace()
            .next()
            .filter(|f| matches!(*f, "Level" | "Edge") || f.starts_with("Level-") || f.starts_with("Edge-"))
        {
            hw.push(' ');
            hw.push_str(flow);
            rest = rest[flow.len()..].trim_start_matches(|c: char| c.is_ascii_whitespace());
        }
    } else if let Some(flow) = rest.split_ascii_whitespace().next().filter(|f| f.starts_with('-')) {
        hw.push_str(flow);
        rest = rest[flow.len()..].trim_start_matches(|c: char| c.is_ascii_whitespace());
    }
    chip_out.push_str(chip);
    name.push_str(rest.trim_end_matches(|c: char| c.is_ascii_whitespace()));
}

/// Print rows the way the kernel does (used to write fixtures and bench inputs; the parser
/// reads its own output back unchanged).
pub fn format_interrupts(irqs: &Interrupts) -> String {
    let width = irqs.rows.iter().map(|r| r.label.len()).max().unwrap_or(3).max(3);
    let mut out = String::with_capacity(irqs.rows.len() * (irqs.cpus.len() * 11 + 48));
    let _ = write!(out, "{:width$} ", "");
    for cpu in &irqs.cpus {
        let _ = write!(out, " {:>10}", format!("CPU{cpu}"));
    }
    out.push('\n');
    for r in &irqs.rows {
        let _ = write!(out, "{:>width$}:", r.label);
        let mut k = 0;
        for &cpu in irqs.cpus.iter().take(r.n_counts as usize) {
            let c = match r.counts.get(k) {
                Some(&(c_cpu, c)) if c_cpu == cpu => {
                    k += 1;
                    c
                }
                _ => 0,
            };
            let _ = write!(out, " {c:>10}");
        }
        if !r.chip.is_empty() {
            let _ = write!(out, " {:>8}", r.chip);
        }
        if !r.hwirq.is_empty() {
            let _ = write!(out, " {}", r.hwirq);
        }
        if !r.name.is_empty() {
            let _ = write!(out, "  {}", r.name);
        }
        out.push('\n');
    }
    out
}

/// Parse a `/proc/irq/N/{smp_affinity_list,effective_affinity_list}` file with the kernel's
/// cpulist grammar.
pub fn parse_affinity_list(file: &str, text: &str) -> Result<CpuSet, ParseError> {
    let line = one_line(file, text)?;
    parse_cpulist(line.trim(), CPUS_MAX).map_err(|e| ParseError::new(file, Some(1), e.to_string()))
}

/// Parse `/proc/irq/N/node`: a node number, or -1 for none.
pub fn parse_irq_node(file: &str, text: &str) -> Result<Option<u32>, ParseError> {
    let line = one_line(file, text)?.trim();
    match line {
        "-1" => Ok(None),
        _ => match line.parse::<u32>() {
            Ok(n) if n < crate::topology::NODES_MAX => Ok(Some(n)),
            _ => Err(ParseError::new(
                file,
                Some(1),
                format!("{:?} is not a node number or -1", short(line)),
            )),
        },
    }
}

fn one_line<'a>(file: &str, text: &'a str) -> Result<&'a str, ParseError> {
    if text.len() > IRQ_FILE_BYTES_MAX {
        return Err(ParseError::new(
            file,
            None,
            format!("larger than {IRQ_FILE_BYTES_MAX} bytes"),
        ));
    }
    let t = text.strip_suffix('\n').unwrap_or(text);
    if t.contains('\n') {
        return Err(ParseError::new(file, Some(2), "expected one line"));
    }
    Ok(t)
}

pub(crate) fn short(text: &str) -> String {
    const SHOWN_CHARS_MAX: usize = 40;
    if text.chars().count() <= SHOWN_CHARS_MAX {
        text.to_string()
    } else {
        let mut s: String = text.chars().take(SHOWN_CHARS_MAX).collect();
        s.push('…');
        s
    }
}

/// The byte-at-a-time parser the fast one replaced, kept as the definition it must agree with.
#[cfg(test)]
mod reference {
    use super::*;

    const FILE: &str = "/proc/interrupts";

    /// Parse `/proc/interrupts` as the kernel prints it.
    pub(super) fn parse_interrupts(text: &str) -> Result<Interrupts, ParseError> {
        let err = |line: usize, m: String| Err(ParseError::new(FILE, Some(line), m));
        if text.len() > INTERRUPTS_BYTES_MAX {
            return Err(ParseError::new(
                FILE,
                None,
                format!("{} bytes, more than the limit of {INTERRUPTS_BYTES_MAX}", text.len()),
            ));
        }
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
        let Some((_, header)) = lines.by_ref().find(|(_, l)| !l.trim().is_empty()) else {
            return Err(ParseError::new(FILE, None, "empty input (no CPU header)"));
        };
        let header_no = text.lines().position(|l| !l.trim().is_empty()).unwrap_or(0) + 1;
        let mut cpus = Vec::new();
        for word in header.split_ascii_whitespace() {
            let Some(id) = word.strip_prefix("CPU") else {
                return err(header_no, format!("header word {:?} is not CPUn", short(word)));
            };
            let cpu = match id.parse::<u32>() {
                Ok(c) if c < CPUS_MAX && (id.len() == 1 || !id.starts_with('0')) => c,
                _ => {
                    return err(
                        header_no,
                        format!("header word {:?}: a CPU number below {CPUS_MAX}", short(word)),
                    )
                }
            };
            if cpus.last().is_some_and(|&last| last >= cpu) {
                return err(header_no, format!("CPU{cpu} is out of order in the header"));
            }
            cpus.push(cpu);
        }
        if cpus.is_empty() {
            return err(header_no, "the header names no CPU".into());
        }
        let mut rows: Vec<IrqRow> = Vec::new();
        for (no, line) in lines {
            if line.trim().is_empty() {
                continue;
            }
            if rows.len() >= ROWS_MAX {
                return err(no, format!("more than {ROWS_MAX} rows"));
            }
            let body = line.trim_start();
            let Some((label, rest)) = body.split_once(':') else {
                return err(no, format!("no `label:` at the start of {:?}", short(body)));
            };
            if label.is_empty()
                || label.len() > 32
                || !label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            {
                return err(no, format!("bad row label {:?}", short(label)));
            }
            // Counters: decimal words, at most one per column.
            let mut counts = Vec::new();
            let mut n_counts = 0u32;
            let mut rest = rest;
            loop {
                let trimmed = rest.trim_start_matches(|c: char| c.is_ascii_whitespace());
                if n_counts as usize >= cpus.len() {
                    rest = trimmed;
                    break;
                }
                let end = trimmed.find(|c: char| c.is_ascii_whitespace()).unwrap_or(trimmed.len());
                let word = &trimmed[..end];
                if word.is_empty() || !word.bytes().all(|b| b.is_ascii_digit()) {
                    rest = trimmed;
                    break;
                }
                // Only a full-width row is sure to be counters; a short row may end in a number
                // that belongs to the description, but the kernel never prints one first.
                let Ok(count) = word.parse::<u64>() else {
                    return err(no, format!("counter {:?} does not fit 64 bits", short(word)));
                };
                if count != 0 {
                    counts.push((cpus[n_counts as usize], count));
                }
                n_counts += 1;
                rest = &trimmed[end..];
            }
            // Words are split on ASCII whitespace everywhere, so a row prints and parses back the
            // same (found by fuzzing: a form feed between a counter and a number).
            let desc = rest.trim_matches(|c: char| c.is_ascii_whitespace());
            let (chip, hwirq, name) = if label.bytes().all(|b| b.is_ascii_digit()) {
                split_description(desc)
            } else {
                (String::new(), String::new(), desc.to_string())
            };
            for (what, v) in [("chip", &chip), ("hwirq", &hwirq), ("name", &name)] {
                if v.len() > FIELD_BYTES_MAX {
                    return err(no, format!("{what} is longer than {FIELD_BYTES_MAX} bytes"));
                }
            }
            if rows.iter().rev().take(1).any(|r| r.label == label) {
                return err(no, format!("row {label} appears twice"));
            }
            rows.push(IrqRow {
                label: label.to_string(),
                counts,
                n_counts,
                chip,
                hwirq,
                name,
            });
        }
        Ok(Interrupts { cpus, rows })
    }

    /// Most words of a chip name: Hyper-V's vPCI MSI chip is `Hyper-V PCIe MSI` (three words).
    const CHIP_WORDS_MAX: usize = 3;

    /// Split a numbered row's text after the counters into chip, hwirq + flow, and action names.
    ///
    /// The kernel prints ` %8s` chip name, then (with an irq domain) ` %*lu` hwirq, then with
    /// `GENERIC_IRQ_SHOW_LEVEL` ` %-8s` Level/Edge, then `-%-8s` the flow name (x86: `1-edge`),
    /// then the actions (`  name`, `, name`…). Older x86 kernels glue chip and flow
    /// (`IR-PCI-MSI-edge`). A chip name may hold spaces (`Hyper-V PCIe MSI 1946157057-edge
    /// mana_q0@pci:7870:00:00.0` on Azure): when the word after the first is not an hwirq but one
    /// of the next [`CHIP_WORDS_MAX`] is, the words before it are the chip (a word with a comma
    /// belongs to the action list, which the kernel joins with `, `).
    fn split_description(desc: &str) -> (String, String, String) {
        let is_hwirq = |w: &str| {
            let digits = w.bytes().take_while(u8::is_ascii_digit).count();
            digits > 0 && (digits == w.len() || w.as_bytes()[digits] == b'-')
        };
        // The first CHIP_WORDS_MAX + 1 words with their end offsets.
        let mut spans: Vec<(&str, usize)> = Vec::with_capacity(CHIP_WORDS_MAX + 1);
        let mut at = 0;
        while spans.len() <= CHIP_WORDS_MAX {
            let rest = &desc[at..];
            let start = at + (rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_whitespace()).len());
            let len = desc[start..]
                .find(|c: char| c.is_ascii_whitespace())
                .unwrap_or(desc.len() - start);
            if len == 0 {
                break;
            }
            spans.push((&desc[start..start + len], start + len));
            at = start + len;
        }
        if spans.is_empty() {
            return Default::default();
        }
        let chip_words = (1..spans.len())
            .take_while(|&k| !spans[k].0.starts_with('-') && !spans[k].0.contains(','))
            .find(|&k| is_hwirq(spans[k].0))
            .unwrap_or(1);
        let chip_end = spans[chip_words - 1].1;
        let chip = &desc[..chip_end];
        let rest = desc[chip_end..].trim_start_matches(|c: char| c.is_ascii_whitespace());
        let mut hw = String::new();
        let mut rest = rest;
        if let Some(w) = rest.split_ascii_whitespace().next().filter(|w| is_hwirq(w)) {
            hw.push_str(w);
            rest = rest[w.len()..].trim_start_matches(|c: char| c.is_ascii_whitespace());
            if let Some(flow) = rest
                .split_ascii_whitespace()
                .next()
                .filter(|f| matches!(*f, "Level" | "Edge") || f.starts_with("Level-") || f.starts_with("Edge-"))
            {
                hw.push(' ');
                hw.push_str(flow);
                rest = rest[flow.len()..].trim_start_matches(|c: char| c.is_ascii_whitespace());
            }
        } else if let Some(flow) = rest.split_ascii_whitespace().next().filter(|f| f.starts_with('-')) {
            hw.push_str(flow);
            rest = rest[flow.len()..].trim_start_matches(|c: char| c.is_ascii_whitespace());
        }
        (
            chip.to_string(),
            hw,
            rest.trim_end_matches(|c: char| c.is_ascii_whitespace()).to_string(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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

    const X86: &str = "            CPU0       CPU1       CPU2       CPU3
   0:         41          0          0          0   IO-APIC   2-edge      timer
   1:          0          9          0          0   IO-APIC   1-edge      i8042
  24:          0          0       1203          0  PCI-MSIX-0000:00:04.0 1-edge nvme0q1
  25:       5000          0          0          0  IR-PCI-MSI 524288-edge      nvme0q0
  26:          1          2          3          4  IR-PCI-MSI-edge      eth0-rx-0, eth0-tx-0
 NMI:          0          0          0          0   Non-maskable interrupts
 LOC:      12345      23456      34567      45678   Local timer interrupts
 IWI:          0          0          0          0   IRQ work interrupts
 ERR:          0
 MIS:          7
";

    #[test]
    fn x86_rows() {
        let p = parse_interrupts(X86).unwrap();
        assert_eq!(p.cpus, vec![0, 1, 2, 3]);
        let r = |l: &str| p.rows.iter().find(|r| r.label == l).unwrap().clone();
        let nvme = r("24");
        assert_eq!(
            (nvme.chip.as_str(), nvme.hwirq.as_str(), nvme.name.as_str()),
            ("PCI-MSIX-0000:00:04.0", "1-edge", "nvme0q1")
        );
        assert_eq!(nvme.counts, vec![(2, 1203)]);
        let admin = r("25");
        assert_eq!(
            (admin.chip.as_str(), admin.hwirq.as_str(), admin.name.as_str()),
            ("IR-PCI-MSI", "524288-edge", "nvme0q0")
        );
        let old = r("26");
        assert_eq!(
            (old.chip.as_str(), old.hwirq.as_str(), old.name.as_str()),
            ("IR-PCI-MSI-edge", "", "eth0-rx-0, eth0-tx-0")
        );
        assert_eq!(old.total(), 10);
        assert_eq!(r("NMI").name, "Non-maskable interrupts");
        assert_eq!(r("ERR").n_counts, 1);
        assert_eq!(r("MIS").counts, vec![(0, 7)]);
        assert_eq!(r("LOC").counts.len(), 4);
        let again = parse_interrupts(&format_interrupts(&p)).unwrap();
        assert_eq!(again, p);
    }

    #[test]
    fn hyperv_chip_names_hold_spaces() {
        let text = "            CPU0       CPU1
  24:          0         10  Hyper-V PCIe MSI 1946157056-edge      mana_hwc@pci:7870:00:00.0
  25:          5          0  Hyper-V PCIe MSI 134250496-edge      nvme0q0
  26:          1          0  HV-PCI-MSI-edge      eth0, eth1 2-edge
  27:          1          0   IO-APIC   9-fasteoi   acpi
";
        let p = parse_interrupts(text).unwrap();
        let f = |i: usize| {
            (
                p.rows[i].chip.as_str(),
                p.rows[i].hwirq.as_str(),
                p.rows[i].name.as_str(),
            )
        };
        assert_eq!(
            f(0),
            ("Hyper-V PCIe MSI", "1946157056-edge", "mana_hwc@pci:7870:00:00.0")
        );
        assert_eq!(f(1), ("Hyper-V PCIe MSI", "134250496-edge", "nvme0q0"));
        // Glued chip and flow, no hwirq: a number among the names stays a name.
        assert_eq!(f(2), ("HV-PCI-MSI-edge", "", "eth0, eth1 2-edge"));
        assert_eq!(f(3), ("IO-APIC", "9-fasteoi", "acpi"));
        assert_eq!(parse_interrupts(&format_interrupts(&p)).unwrap(), p);
    }

    #[test]
    fn arm64_rows_and_offline_columns() {
        let text = "           CPU0       CPU2
 11:      10123       9876     GICv3  27 Level     arch_timer
 12:          0          0     GICv3  33 Level     uart-pl011
 45:          3          0  ITS-MSI 524288 Edge      nvme0q0
IPI0:       1234       5678       Rescheduling interrupts
IPI1:         12         34       Function call interrupts
Err:          0
";
        let p = parse_interrupts(text).unwrap();
        assert_eq!(p.cpus, vec![0, 2]);
        let t = &p.rows[0];
        assert_eq!(
            (t.chip.as_str(), t.hwirq.as_str(), t.name.as_str()),
            ("GICv3", "27 Level", "arch_timer")
        );
        assert_eq!(t.counts, vec![(0, 10123), (2, 9876)]);
        assert_eq!(p.rows[2].name, "nvme0q0");
        assert_eq!(p.rows[3].label, "IPI0");
        assert_eq!(p.rows[3].name, "Rescheduling interrupts");
        assert_eq!(p.rows[5].n_counts, 1);
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_interrupts("CPU0 CPU1\n 1: 0 0 x\nbogus line\n").unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        assert!(parse_interrupts("").is_err());
        assert!(parse_interrupts("CPU1 CPU0\n")
            .unwrap_err()
            .to_string()
            .contains("out of order"));
        assert!(parse_interrupts("CPU0\n 1: 99999999999999999999999 x\n")
            .unwrap_err()
            .to_string()
            .contains("64 bits"));
        assert!(parse_interrupts("CPU0 CPU99999\n").is_err());
    }

    #[test]
    fn bytes_that_are_not_utf8_are_an_error_on_their_line() {
        let mut out = Interrupts::default();
        // In a description, after counters (the fast path), and on a line of its own.
        for (text, line) in [
            (&b"CPU0 CPU1\n 1: 0 0 x\n 2: 5 0 IO-APIC \xff-edge q\n"[..], 3),
            (&b"CPU0\n 1: 0 ok\n\xc3\n"[..], 3),
            (&b"\n\xfeCPU0\n"[..], 2),
            (&b"CPU0\n 1: 7\xa0\n"[..], 2),
        ] {
            let e = parse_interrupts_bytes_into(text, &mut out).unwrap_err();
            assert_eq!(e.line, Some(line), "{e}");
            assert!(e.message.contains("not UTF-8"), "{e}");
        }
        // Non-ASCII UTF-8 in a name is kept as it is.
        parse_interrupts_bytes_into("CPU0\n 1: 3 IO-APIC 1-edge caf\u{e9}\n".as_bytes(), &mut out).unwrap();
        assert_eq!(out.rows[0].name, "caf\u{e9}");
        assert_eq!(out.rows[0].counts, vec![(0, 3)]);
    }

    #[test]
    fn rows_print_and_parse_back() {
        // Found by fuzzing: a form feed glued a counter to a number in a short row.
        for text in [
            "CPU0 CPU1 CPU2\n 0: 0\x0c5555 x\n",
            "CPU0 CPU1\n 7: 1 2 3-edge  a b\n",
            "CPU0\n 1: 4 \u{a0}x 5-edge y\n",
        ] {
            let Ok(p) = parse_interrupts(text) else { continue };
            assert_eq!(parse_interrupts(&format_interrupts(&p)).unwrap(), p, "{text:?}");
        }
    }

    #[test]
    fn irq_files() {
        assert_eq!(parse_affinity_list("a", "0-3,8\n").unwrap().to_cpulist(), "0-3,8");
        assert_eq!(parse_affinity_list("a", "0-7:2/4\n").unwrap().to_cpulist(), "0-1,4-5");
        assert!(parse_affinity_list("a", "0\n1\n")
            .unwrap_err()
            .to_string()
            .contains("line 2"));
        assert_eq!(parse_irq_node("n", "-1\n").unwrap(), None);
        assert_eq!(parse_irq_node("n", "1\n").unwrap(), Some(1));
        assert!(parse_irq_node("n", "x\n").is_err());
    }
    /// The fast parser and the reference agree on every input: the same rows, or an error on
    /// the same line.
    fn same_as_reference(text: &str) {
        let fast = parse_interrupts(text);
        let slow = super::reference::parse_interrupts(text);
        match (&fast, &slow) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{text:?}"),
            (Err(a), Err(b)) => assert_eq!((a.line, &a.message), (b.line, &b.message), "{text:?}"),
            _ => panic!("fast {fast:?} but reference {slow:?} for {text:?}"),
        }
        // Reusing a buffer that held another reading gives the same answer.
        let mut reused = parse_interrupts(X86).unwrap();
        let again = parse_interrupts_into(text, &mut reused).map(|()| reused);
        assert_eq!(again.is_ok(), fast.is_ok());
        if let (Ok(a), Ok(b)) = (&again, &fast) {
            assert_eq!(a, b);
        }
        let n = text.len();
        same_in_chunks(text.as_bytes(), (1..=64).chain([n / 2 + 1, n, n + 1]));
    }

    /// A reader that hands out at most `pattern[i % len]` bytes on its i-th read: short reads
    /// of every size, as a pipe or a seq_file may give.
    struct ShortReads<'a> {
        bytes: &'a [u8],
        pattern: &'a [usize],
        i: usize,
    }

    impl std::io::Read for ShortReads<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.pattern[self.i % self.pattern.len()]
                .min(buf.len())
                .min(self.bytes.len());
            self.i += 1;
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    /// Parsing `bytes` read in chunks of each of `chunks` bytes (and with short reads) gives
    /// exactly what one call on the whole buffer gives: the same rows, or the same error.
    fn same_in_chunks(bytes: &[u8], chunks: impl IntoIterator<Item = usize>) {
        let mut whole = parse_interrupts(X86).unwrap();
        let want = parse_interrupts_bytes_into(bytes, &mut whole).map(|()| whole);
        let (mut buf, mut out) = (Vec::new(), parse_interrupts(X86).unwrap());
        let check = |what: &str, got: Result<(), ReadError>, out: &Interrupts| match (&want, got) {
            (Ok(w), Ok(())) => assert_eq!(w, out, "{what}"),
            (Err(w), Err(ReadError::Parse(e))) => assert_eq!(w, &e, "{what}"),
            (w, got) => panic!("{what}: whole buffer {w:?}, in chunks {got:?}"),
        };
        for chunk in chunks {
            // `buf` and `out` are kept from the previous size, as the collector keeps them.
            let got = parse_interrupts_read_into(bytes, chunk, INTERRUPTS_BYTES_MAX, &mut buf, &mut out);
            check(&format!("chunks of {chunk} bytes"), got, &out);
        }
        for pattern in [&[1usize, 7, 300, 2][..], &[4096, 1, 2, 63]] {
            let r = ShortReads { bytes, pattern, i: 0 };
            let got = parse_interrupts_read_into(r, 256, INTERRUPTS_BYTES_MAX, &mut buf, &mut out);
            check(&format!("short reads {pattern:?}"), got, &out);
        }
    }

    /// Every fixture and lab capture (the captures are not `/proc/interrupts` text: their
    /// errors must agree too), read in chunks of every size from 1 byte to past any line, then
    /// of growing sizes up to the whole file.
    #[test]
    fn chunked_reads_agree_with_the_whole_buffer() {
        let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for dir in [here.join("tests/data/live"), here.join("../shared/lab/captures")] {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let p = entry.path();
                if p.join("proc/interrupts").is_file() {
                    files.push(p.join("proc/interrupts"));
                } else if p.extension().is_some_and(|e| e == "txt") {
                    files.push(p);
                }
            }
        }
        assert!(files.len() >= 5, "fixtures: {files:?}");
        let mut parsed_ok = 0;
        for f in &files {
            let bytes = std::fs::read(f).unwrap();
            parsed_ok += usize::from(parse_interrupts_bytes_into(&bytes, &mut Interrupts::default()).is_ok());
            let mut sizes: Vec<usize> = (1..=1200).collect();
            let mut s = 1200usize;
            while s <= bytes.len() {
                s = s * 3 / 2;
                sizes.push(s);
            }
            sizes.extend([bytes.len(), bytes.len() + 1]);
            same_in_chunks(&bytes, sizes);
        }
        assert!(parsed_ok >= 5, "{parsed_ok} fixtures parse");
        // An unfinished last line, a last line that is only a carriage return, an error on the
        // last line, and one past a line longer than the chunk.
        for text in [
            "CPU0 CPU1\n 1: 2 3 a\n 2: 4",
            "CPU0\n 1: 2\r",
            "CPU0\n 1: 2\n 1: 3",
            "\n\n\nCPU0\n 1: 2\n\n 3: 99999999999999999999\n 4: 1\n",
        ] {
            same_in_chunks(text.as_bytes(), 1..=text.len() + 1);
        }
    }

    #[test]
    fn chunked_reads_bound_the_file() {
        let text = b"CPU0\n 1: 2\n 2: 3\n";
        let (mut buf, mut out) = (Vec::new(), Interrupts::default());
        for chunk in [1, 4, 64] {
            let got = parse_interrupts_read_into(&text[..], chunk, text.len() - 1, &mut buf, &mut out);
            assert!(matches!(got, Err(ReadError::Io(_))), "{got:?}");
            assert!(parse_interrupts_read_into(&text[..], chunk, text.len(), &mut buf, &mut out).is_ok());
        }
        // A parse error early in an oversized file: the size is what is reported.
        let bad = b"CPU0\nxx\n 1: 2\n 2: 3\n";
        let got = parse_interrupts_read_into(&bad[..], 2, bad.len() - 1, &mut buf, &mut out);
        assert!(matches!(got, Err(ReadError::Io(_))), "{got:?}");
        let got = parse_interrupts_read_into(&bad[..], 2, bad.len(), &mut buf, &mut out);
        assert!(
            matches!(got, Err(ReadError::Parse(ParseError { line: Some(2), .. }))),
            "{got:?}"
        );
    }

    /// Found by fuzzing: a block of 64 spaces after a label has no word start, and the open
    /// word's position was computed from it anyway (a subtraction below zero, a panic where
    /// overflow is checked).
    #[test]
    fn a_block_of_spaces_after_the_label() {
        let pad = " ".repeat(64);
        for text in [
            format!("CPU0 CPU1 CPU2\n 24:{pad}5 0 7 PCI-MSI 1-edge nvme0q1\n"),
            format!("CPU0 CPU1\n 24:{pad}{pad}\n 25: 1{pad}2 x\n"),
            format!("CPU0\nNMI:{pad}{pad}{pad}"),
        ] {
            same_as_reference(&text);
        }
        let p = parse_interrupts(&format!("CPU0 CPU1 CPU2\n 24:{pad}5 0 7 PCI-MSI 1-edge nvme0q1\n")).unwrap();
        assert_eq!(p.rows[0].counts, vec![(0, 5), (2, 7)]);
    }

    #[test]
    fn fast_path_agrees_with_the_reference() {
        for text in [
            X86,
            "",
            "\n\n",
            "CPU0\n",
            "CPU0\r\n 1: 5\r\n",
            " CPU0 CPU1\n\u{a0}\n 1:\t0 0 x\n",
            "CPU0 CPU1\n\x0b 1: 3 4 a\r\n\r\n 2: 5\r\r\n 3 no colon\n",
            "CPU0\n 1: 2 x\n\u{85}\n 2: 1 y",
            "CPU0\n 1: 2\n 2: 3 : 4\n\t\n 3:\n",
            "CPU0\n 1: 2\nno colon at all",
            "CPU0\n 1: 2\n 1: 3\n",
        ] {
            same_as_reference(text);
        }
        // Wide rows: blocks that end inside a word, long numbers, the column limit inside a
        // block, a description starting with digits, tabs among the counters.
        let cpus = 40;
        let mut text: String = (0..cpus).map(|c| format!(" CPU{c}")).collect();
        text.push('\n');
        let values = [
            "0",
            "7",
            "00",
            "1234567890",
            "18446744073709551615",
            "18446744073709551616",
        ];
        for row in 0..200usize {
            text.push_str(&format!("{row}:"));
            for col in 0..cpus + row % 3 {
                let v = if (row * 7 + col * 13) % 11 == 0 {
                    values[(row + col) % 5]
                } else {
                    "0"
                };
                let pad = 1 + (row + col) % 12;
                text.push_str(&" ".repeat(pad));
                text.push_str(v);
            }
            text.push_str(if row % 5 == 0 {
                "\t9 x-edge  q\n"
            } else {
                "  12ab Level name\n"
            });
        }
        same_as_reference(&text);
        text.push_str("201:");
        text.push_str(&" 0".repeat(30));
        text.push_str(" 18446744073709551616 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n");
        same_as_reference(&text);
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

    /// A row as the kernel lays it out: `label:`, then ` %10u` per CPU, then `tail`.
    fn kernel_row(label: &str, values: &[u64], tail: &str) -> String {
        let mut row = format!("{label:>4}:");
        for v in values {
            row.push_str(&format!(" {v:>10}"));
        }
        row.push_str(tail);
        row
    }

    proptest::proptest! {
        /// A parse into rows kept from an earlier one notes exactly the rows whose label,
        /// chip, hwirq or name differ from the row held there before, and the rows it adds.
        #[test]
        fn a_parse_notes_the_rows_whose_text_it_rewrote(
            readings in prop::collection::vec(
                prop::collection::vec((0u32..6, 0u8..3, 0u8..3, 1u64..9), 0..8),
                2..5,
            ),
        ) {
            let text = |rows: &[(u32, u8, u8, u64)]| {
                let mut t = String::from("           CPU0       CPU1\n");
                for (k, (irq, chip, name, n)) in rows.iter().enumerate() {
                    let label = if *irq == 5 { format!("X{k}") } else { (10 * k as u32 + irq).to_string() };
                    let chip = ["PCI-MSI", "IO-APIC", "GIC"][*chip as usize];
                    let name = ["q", "eth0", "i8042, serio"][*name as usize];
                    t.push_str(&format!("{label:>4}: {n:>10} {:>10}  {chip} {irq}-edge {name}\n", n / 2));
                }
                t
            };
            let (mut buf, mut out, mut rewritten) = (Vec::new(), Interrupts::default(), Vec::new());
            for rows in &readings {
                let before = out.rows.clone();
                let t = text(rows);
                parse_interrupts_read_noting(t.as_bytes(), 64, INTERRUPTS_BYTES_MAX, &mut buf, &mut out, &mut rewritten).unwrap();
                prop_assert_eq!(&out, &parse_interrupts(&t).unwrap());
                let text_of = |r: &IrqRow| (r.label.clone(), r.chip.clone(), r.hwirq.clone(), r.name.clone());
                let want: Vec<u32> = (0..out.rows.len())
                    .filter(|&i| before.get(i).map(text_of) != Some(text_of(&out.rows[i])))
                    .map(|i| i as u32)
                    .collect();
                prop_assert_eq!(&rewritten, &want);
            }
        }
    }

    #[test]
    fn kernel_layout_rows_agree_with_the_reference() {
        // Column counts either side of a span of columns, values that fill the width, and the
        // ways a row leaves the layout: a wider number, a tab, a short row, a description
        // glued to the last count.
        for cpus in [1usize, 2, 31, 32, 33, 64, 65, 100] {
            let mut text: String = (0..cpus).map(|c| format!(" CPU{c}")).collect();
            text.push('\n');
            let mut values = vec![0u64; cpus];
            text.push_str(&kernel_row("0", &values, "  IO-APIC   2-edge      timer\n"));
            for (k, v) in [1u64, 4_294_967_295, 9_999_999_999, 10_000_000_000, 42]
                .iter()
                .enumerate()
            {
                values[(k * 7) % cpus] = *v;
                let tail = ["  PCI-MSIX 1-edge nvme0q1\n", "\tx\n", "\n", "x-edge\n", ""][k];
                text.push_str(&kernel_row(&(k + 1).to_string(), &values, tail));
                if !tail.ends_with('\n') {
                    text.push('\n');
                }
            }
            text.push_str(&kernel_row("LOC", &values[..cpus - 1], "   Local timer interrupts\n"));
            text.push_str(&kernel_row("NMI", &values, "   Non-maskable interrupts\n").replacen(' ', "\t", 6));
            text.push_str("ERR:          0\n");
            same_as_reference(&text);
            let p = parse_interrupts(&text).unwrap();
            assert_eq!(p.rows[0].counts, vec![], "{cpus} CPUs");
            assert_eq!(p.rows[2].counts.iter().map(|c| c.1).max(), Some(4_294_967_295));
        }
    }

    proptest::proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        /// Rows in the kernel's layout with a byte changed, put in or taken out here and there:
        /// the column reader and the word reader agree on each.
        #[test]
        fn kernel_layout_rows_with_damage_agree_with_the_reference(
            cpus in 1usize..80,
            rows in prop::collection::vec(
                (
                    prop::collection::vec(prop_oneof![6 => Just(0u64), 2 => 1u64..1000, 1 => 1u64..=4_294_967_295, 1 => 1u64..100_000_000_000], 80),
                    prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, prop::sample::select(b" 0123456789\t\nx\r-".to_vec())), 0..3),
                ),
                1..6,
            ),
        ) {
            let mut text: String = (0..cpus).map(|c| format!(" CPU{c}")).collect();
            text.push('\n');
            for (i, (values, damage)) in rows.iter().enumerate() {
                let mut row = kernel_row(&(24 + i).to_string(), &values[..cpus], "  PCI-MSI 1-edge  q").into_bytes();
                for (at, how, byte) in damage {
                    let at = at.index(row.len());
                    match how {
                        0 => row[at] = *byte,
                        1 => row.insert(at, *byte),
                        _ => {
                            row.remove(at);
                        }
                    }
                }
                text.push_str(&String::from_utf8(row).unwrap());
                text.push('\n');
            }
            same_as_reference(&text);
        }

        /// Rows from an alphabet near the kernel's: spaces, digits, a few other bytes.
        #[test]
        fn random_rows_agree_with_the_reference(
            cpus in 1usize..70,
            rows in prop::collection::vec(
                prop::collection::vec(
                    prop_oneof![
                        8 => Just(" ".to_string()),
                        4 => Just("0".to_string()),
                        3 => (1u64..u64::MAX).prop_map(|v| v.to_string()),
                        1 => prop::sample::select(vec!["\t", "x", "-edge", ",", "\u{a0}", "99999999999999999999", "\r", ":"])
                            .prop_map(str::to_string),
                    ],
                    0..200,
                ),
                0..12,
            ),
        ) {
            let mut text: String = (0..cpus).map(|c| format!(" CPU{c}")).collect();
            text.push('\n');
            for (i, row) in rows.iter().enumerate() {
                text.push_str(&format!(" {i}:"));
                for w in row {
                    text.push_str(w);
                }
                text.push('\n');
            }
            same_as_reference(&text);
        }
    }
}
