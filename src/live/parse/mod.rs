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
    pub(crate) file: String,
    pub(crate) line: Option<usize>,
    pub(crate) message: String,
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
    pub(crate) fn new(file: impl Into<String>, line: Option<usize>, message: impl Into<String>) -> ParseError {
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

    #[cfg(test)]
    pub(crate) fn total(&self) -> u64 {
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
pub(crate) struct InterruptsStream {
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
    pub(crate) fn new() -> InterruptsStream {
        InterruptsStream::default()
    }

    /// Parse the whole lines in `bytes` into `out`. After an error, do not feed more.
    pub(crate) fn feed(&mut self, bytes: &[u8], out: &mut Interrupts) -> Result<(), ParseError> {
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

    /// The end of the input: an input without a header is an error; rows left from an
    /// earlier reading are dropped.
    pub(crate) fn finish(&mut self, out: &mut Interrupts) -> Result<(), ParseError> {
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

mod columns;
use columns::scan_counters;

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
mod reference;

#[cfg(test)]
mod tests;
