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
pub const INTERRUPTS_BYTES_MAX: usize = 256 << 20;
/// Most rows of `/proc/interrupts` (IRQs plus the arch rows).
pub const ROWS_MAX: usize = super::limits::IRQS_MAX + 256;
/// Longest label, chip, hwirq or name field kept.
pub const FIELD_BYTES_MAX: usize = 256;
/// Largest `/proc/irq/N/*` file accepted.
pub const IRQ_FILE_BYTES_MAX: usize = 64 << 10;

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
pub const CHIP_WORDS_MAX: usize = 3;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
