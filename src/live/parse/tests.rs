//! The parser against the reference (`reference.rs`) and the kernel's own output.

use super::*;
use proptest::prelude::*;

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
