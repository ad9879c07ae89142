//! Fuzz the `/proc/interrupts` parser: any bytes parse or give an error, never a panic; read
//! in pieces of any size (the agent's chunked reader, chunk and read sizes taken from the
//! input) it gives the same rows or the same error; what parses (as UTF-8 text) prints back
//! (kernel layout) to the same rows.
#![no_main]

use irqscope::live::parse::{
    format_interrupts, parse_interrupts, parse_interrupts_bytes_into, parse_interrupts_read_into, Interrupts, ReadError,
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

fuzz_target!(|data: &[u8]| {
    let mut from_bytes = Interrupts::default();
    let bytes = parse_interrupts_bytes_into(data, &mut from_bytes);
    let (chunk, step) = match data {
        [a, b, ..] => (1 + usize::from(*a) % 97, 1 + usize::from(*b) % 131),
        _ => (1, 1),
    };
    let (mut buf, mut streamed) = (Vec::new(), Interrupts::default());
    let read = parse_interrupts_read_into(Pieces { data, step }, chunk, BYTES_MAX, &mut buf, &mut streamed);
    match (&bytes, read) {
        (Ok(()), Ok(())) => assert_eq!(streamed, from_bytes, "chunk {chunk}, step {step}"),
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
