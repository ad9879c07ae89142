//! Fuzz the `/proc/interrupts` parser: any bytes parse or give an error, never a panic; read
//! in pieces of any size (the agent's chunked reader, chunk and read sizes taken from the
//! input) it gives the same rows or the same error; what parses (as UTF-8 text) prints back
//! (kernel layout) to the same rows.
//!
//! The chunked reader parses into the rows an earlier reading left, as the agent keeps them: an
//! input holding four form feeds in a row is two readings, the one before them parsed first
//! (into fresh rows; it may fail and leave them partial), and without them the input is read
//! twice (a steady host). Fewer form feeds are the parser's to read (ASCII whitespace). The
//! second reading must give what a parse into fresh rows gives, and note exactly the rows whose
//! label, chip, hwirq or name differ from the row held there before, or that were not held.
#![no_main]

use irqscope::live::parse::{
    format_interrupts, parse_interrupts, parse_interrupts_bytes_into, parse_interrupts_read_noting, Interrupts, IrqRow,
    ReadError,
};
use libfuzzer_sys::fuzz_target;

/// A reader that hands out at most `step` bytes per call, as a pipe or a seq_file may.
struct Pieces<'a> {
    data: &'a [u8],
    step: usize,
}

impl std::io::Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// Larger than any input libFuzzer makes here: the size bound is tested in the unit tests.
const BYTES_MAX: usize = 64 << 20;

/// Separates the two readings of an input.
const READINGS_APART: &[u8; 4] = b"\x0c\x0c\x0c\x0c";

fn text(r: &IrqRow) -> (&str, &str, &str, &str) {
    (&r.label, &r.chip, &r.hwirq, &r.name)
}

fuzz_target!(|input: &[u8]| {
    let (earlier, data) = match input.windows(4).position(|w| w == READINGS_APART) {
        Some(at) => (Some(&input[..at]), &input[at + 4..]),
        None => (None, input),
    };
    let mut from_bytes = Interrupts::default();
    let bytes = parse_interrupts_bytes_into(data, &mut from_bytes);
    // What the earlier reading left (a reading of the same bytes leaves what a fresh parse of
    // them gives, partial rows after an error included).
    let mut kept = match earlier {
        Some(earlier) => {
            let mut kept = Interrupts::default();
            let _ = parse_interrupts_bytes_into(earlier, &mut kept);
            kept
        }
        None => from_bytes.clone(),
    };
    let before = kept.rows.clone();
    let (chunk, step) = match data {
        [a, b, ..] => (1 + usize::from(*a) % 97, 1 + usize::from(*b) % 131),
        _ => (1, 1),
    };
    let (mut buf, mut rewritten) = (Vec::new(), Vec::new());
    let read = parse_interrupts_read_noting(
        Pieces { data, step },
        chunk,
        BYTES_MAX,
        &mut buf,
        &mut kept,
        &mut rewritten,
    );
    match (&bytes, read) {
        (Ok(()), Ok(())) => {
            assert_eq!(kept, from_bytes, "chunk {chunk}, step {step}");
            let want: Vec<u32> = (0..kept.rows.len())
                .filter(|&i| before.get(i).map(text) != Some(text(&kept.rows[i])))
                .map(|i| i as u32)
                .collect();
            assert_eq!(rewritten, want, "rows noted as rewritten");
        }
        (Err(a), Err(ReadError::Parse(b))) => assert_eq!(*a, b, "chunk {chunk}, step {step}"),
        (a, b) => panic!("whole buffer {a:?}, chunked (chunk {chunk}, step {step}) {b:?}"),
    }
    // `parse_interrupts(&str)` is the bytes parser on the text's bytes: parsing the text again
    // would repeat the same code on the same bytes, so only the printed rows are parsed again.
    if bytes.is_ok() && std::str::from_utf8(data).is_ok() {
        let again = parse_interrupts(&format_interrupts(&from_bytes)).expect("printed rows parse");
        assert_eq!(again.cpus, from_bytes.cpus);
        assert_eq!(again.rows.len(), from_bytes.rows.len());
    }
});
