//! The reference parser of `/proc/interrupts`: `str::lines`, `split_once` and `parse`, one
//! row at a time, written for clarity rather than speed. The fast reader (`columns.rs` and the
//! row parser of the parent module) must give its answers on every input the tests make.

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
    let cpus = header_cpus(header, header_no)?;
    let mut rows: Vec<IrqRow> = Vec::new();
    for (no, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        if rows.len() >= ROWS_MAX {
            return err(no, format!("more than {ROWS_MAX} rows"));
        }
        let row = parse_row(no, line, &cpus)?;
        if rows.iter().rev().take(1).any(|r| r.label == row.label) {
            return err(no, format!("row {} appears twice", row.label));
        }
        rows.push(row);
    }
    Ok(Interrupts { cpus, rows })
}

/// The header's `CPUn` words: CPU numbers below [`CPUS_MAX`], ascending, at least one.
fn header_cpus(header: &str, header_no: usize) -> Result<Vec<u32>, ParseError> {
    let err = |line: usize, m: String| Err(ParseError::new(FILE, Some(line), m));
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
    Ok(cpus)
}

/// One row: `label:`, its counters, and the description split into chip, hwirq and name.
fn parse_row(no: usize, line: &str, cpus: &[u32]) -> Result<IrqRow, ParseError> {
    let err = |line: usize, m: String| Err(ParseError::new(FILE, Some(line), m));
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
    let (counts, n_counts, rest) = read_counts(no, rest, cpus)?;
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
    Ok(IrqRow {
        label: label.to_string(),
        counts,
        n_counts,
        chip,
        hwirq,
        name,
    })
}

/// A row's counters read: the non-zero ones by CPU, how many were read, and the rest of the
/// row.
type Counted<'a> = (Vec<(u32, u64)>, u32, &'a str);

/// Counters: decimal words, at most one per column.
fn read_counts<'a>(no: usize, rest: &'a str, cpus: &[u32]) -> Result<Counted<'a>, ParseError> {
    let err = |line: usize, m: String| Err(ParseError::new(FILE, Some(line), m));
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
    Ok((counts, n_counts, rest))
}

/// The description split as the parser splits it: [`super::split_description`] is the
/// definition of that step, and the reference reads the counters and labels on its own.
fn split_description(desc: &str) -> (String, String, String) {
    let (mut chip, mut hwirq, mut name) = (String::new(), String::new(), String::new());
    super::split_description(desc, &mut chip, &mut hwirq, &mut name);
    (chip, hwirq, name)
}
