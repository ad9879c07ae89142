//! Text laid out for mail: the 72-column limit, word wrapping that breaks only between whole
//! tokens (a cpulist longer than a line at its commas), the reproducing command with shell
//! continuations, and the permalink on its own last line. Every text report (`text`,
//! `mana_sched`, `sweep`, `vector_space`) writes through these; this module imports no other
//! part of `render`.

/// Mail line width.
pub const COLUMNS_MAX: usize = 72;

/// Word-wrap `text` to [`COLUMNS_MAX`], the first line prefixed by `first`, the others by
/// `rest`. Words longer than a line are split at commas (cpulists) or kept whole.
pub fn wrap(text: &str, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut at_start = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        // Pieces of one split word follow each other without a space.
        let mut glue = false;
        for piece in split_long(word, COLUMNS_MAX - rest.len()) {
            if !at_start && line.len() + 1 + piece.len() > COLUMNS_MAX {
                out.push_str(line.trim_end());
                out.push('\n');
                line = rest.to_string();
                at_start = true;
            }
            if !at_start && !glue {
                line.push(' ');
            }
            line.push_str(&piece);
            at_start = false;
            glue = true;
        }
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// Split a long cpulist at commas into pieces that fit `width` (each piece but the last ends
/// with its comma, so re-joining without spaces gives the original).
fn split_long(word: &str, width: usize) -> Vec<String> {
    if word.len() <= width || !word.contains(',') {
        return vec![word.to_string()];
    }
    let mut pieces = Vec::new();
    let mut cur = String::new();
    for part in word.split(',') {
        // A finished piece carries its trailing comma, so it needs one column more.
        if !cur.is_empty() && cur.len() + 1 + part.len() + 1 > width {
            cur.push(',');
            pieces.push(std::mem::take(&mut cur));
        } else if !cur.is_empty() {
            cur.push(',');
        }
        cur.push_str(part);
    }
    pieces.push(cur);
    pieces
}

/// The command line, wrapped with shell continuations (` \\` at the end of a line, a break
/// only between words, so an option stays beside its value). A quoted compact machine word
/// (`'cpus:…'`, `topology::compact`) longer than a line is laid over lines inside its quotes,
/// broken after a `;` or `+` (after a `,` only inside a cpulist longer than a line): its reader
/// ignores whitespace, so the pasted command gives the same machine.
pub fn command_block(words: &[String], out: &mut String) {
    let mut line = String::from("  $");
    for (i, word) in words.iter().enumerate() {
        let last = i + 1 == words.len();
        let tail = if last { 0 } else { 2 };
        if line.len() + 1 + word.len() + tail > COLUMNS_MAX && line.len() > 4 {
            out.push_str(&line);
            out.push_str(" \\\n");
            line = String::from("     ");
        } else {
            line.push(' ');
        }
        if line.len() + word.len() + tail > COLUMNS_MAX && word.starts_with("'cpus:") {
            let pieces = machine_pieces(word, COLUMNS_MAX - MACHINE_INDENT.len() - tail);
            let n = pieces.len();
            for (k, piece) in pieces.into_iter().enumerate() {
                let need = if k + 1 == n { tail } else { 0 };
                if k > 0 && line.len() + piece.len() + need > COLUMNS_MAX {
                    out.push_str(&line);
                    out.push('\n');
                    line = String::from(MACHINE_INDENT);
                }
                line.push_str(&piece);
            }
        } else {
            line.push_str(word);
        }
    }
    out.push_str(&line);
    out.push('\n');
}

/// Indent of the lines of a machine word laid over lines (inside its quotes).
const MACHINE_INDENT: &str = "       ";

/// A compact machine word cut after each `;` and `+`; a piece still wider than `width` is cut
/// after its commas. Re-joined, the pieces give the word.
fn machine_pieces(word: &str, width: usize) -> Vec<String> {
    let mut coarse = Vec::new();
    let mut cur = String::new();
    for c in word.chars() {
        cur.push(c);
        if c == ';' || c == '+' {
            coarse.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        coarse.push(cur);
    }
    let mut pieces = Vec::new();
    for piece in coarse {
        if piece.len() <= width {
            pieces.push(piece);
            continue;
        }
        let mut cur = String::new();
        for c in piece.chars() {
            cur.push(c);
            if c == ',' {
                pieces.push(std::mem::take(&mut cur));
            }
        }
        if !cur.is_empty() {
            pieces.push(cur);
        }
    }
    pieces
}

/// A one-line command (`irqscope mana X --opt v …`) as [`command_block`] words: the leading
/// words, then each option with its value.
pub fn words_of(command: &str) -> Vec<String> {
    let mut chunks = command.split(" --");
    let mut words: Vec<String> = chunks
        .next()
        .unwrap_or("")
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    words.extend(chunks.map(|c| format!("--{c}")));
    words
}

/// The permalink last, alone on its line (the one line allowed past 72 columns).
pub fn permalink_block(link: Option<&str>, out: &mut String) {
    if let Some(link) = link {
        out.push('\n');
        out.push_str(link);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_keeps_cpulists_whole_when_they_fit() {
        let text = "28 CPUs (34-47,82-95) serve all 6 devices; 68 CPUs (0-33,48-81) serve 3";
        let w = wrap(text, "  ", "    ");
        assert!(w.lines().all(|l| l.len() <= COLUMNS_MAX), "{w}");
        assert!(w.contains("(34-47,82-95)"));
    }

    #[test]
    fn wrap_splits_long_cpulists_at_commas() {
        let list: Vec<String> = (0..100).map(|i| (i * 3).to_string()).collect();
        let w = wrap(&list.join(","), "  ", "  ");
        assert!(w.lines().all(|l| l.len() <= COLUMNS_MAX), "{w}");
        let joined: String = w.lines().map(str::trim).collect();
        assert_eq!(joined, list.join(","));
    }
}
