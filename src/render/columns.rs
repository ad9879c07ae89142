//! Text laid out for mail: the 72-column limit, word wrapping that breaks only between whole
//! tokens (a cpulist longer than a line at its commas), the reproducing command with shell
//! continuations, and the permalink on its own last line. Every text report (`text`,
//! `mana_sched`, `sweep`, `vector_space`) writes through these; this module imports no other
//! part of `render`.

/// Mail line width.
pub const COLUMNS_MAX: usize = 72;

/// Word-wrap `text` to [`COLUMNS_MAX`], the first line prefixed by `first`, the others by
/// `rest`. Words longer than a line are split at commas (cpulists) or kept whole. A last line
/// that would hold one word, number or list item ("serve" / "3", "190-191)") takes the word or
/// item before it along.
pub fn wrap(text: &str, first: &str, rest: &str) -> String {
    // Each line as its pieces, each piece with whether it follows the one before without a
    // space (the pieces of one split word).
    let mut lines: Vec<Vec<(String, bool)>> = vec![Vec::new()];
    let mut len = first.len();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let mut glue = false;
        for piece in split_long(word, COLUMNS_MAX - rest.len()) {
            let line = lines.last_mut().expect("one line at least");
            if !line.is_empty() && len + 1 + piece.len() > COLUMNS_MAX {
                len = rest.len();
                lines.push(Vec::new());
            }
            let line = lines.last_mut().expect("one line at least");
            len += usize::from(!line.is_empty() && !glue) + piece.len();
            line.push((piece, glue));
            glue = true;
        }
    }
    no_widow(&mut lines, rest.len());
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        out.push_str(if i == 0 { first } else { rest });
        for (k, (piece, glued)) in line.iter().enumerate() {
            if k > 0 && !glued {
                out.push(' ');
            }
            out.push_str(piece);
        }
        let end = out.trim_end().len();
        out.truncate(end);
        out.push('\n');
    }
    out
}

/// Words and list items on a line: its pieces split at spaces and commas.
fn tokens(line: &[(String, bool)]) -> usize {
    line.iter()
        .map(|(p, _)| p.split(',').filter(|t| !t.is_empty()).count())
        .sum()
}

/// A wrapped text whose last line holds one token takes the token before it down with it
/// (the last word, or the last item of a list), when that fits within `rest` and leaves the
/// line before with a token (two, when it is itself a continuation).
fn no_widow(lines: &mut [Vec<(String, bool)>], rest: usize) {
    let n = lines.len();
    if n < 2 || tokens(&lines[n - 1]) != 1 {
        return;
    }
    let (before, after) = lines.split_at_mut(n - 1);
    let (prev, last) = (&mut before[n - 2], &mut after[0]);
    let Some((piece, glued)) = prev.last().cloned() else {
        return;
    };
    // The last line goes on with the piece's word (a list split over lines).
    let continues = last.first().is_some_and(|(_, g)| *g);
    let needs = if n == 2 { 1 } else { 2 };
    let last_len: usize = last
        .iter()
        .enumerate()
        .map(|(k, (p, g))| p.len() + usize::from(k > 0 && !g))
        .sum();
    // What can move: the whole piece (a word, or a list that stays whole), else its last
    // list item; a piece of a list split over lines gives its last item first.
    let items: Vec<&str> = piece.split_inclusive(',').collect();
    let last_item = (items.len() > 1).then(|| {
        let k = items.len() - 1;
        (Some(items[..k].concat()), (items[k].to_string(), true))
    });
    let whole = (None, (piece.clone(), glued));
    let choices = match (glued || continues, last_item) {
        (true, Some(item)) => vec![item],
        (false, Some(item)) => vec![whole, item],
        (_, None) => vec![whole],
    };
    for (keep, moved) in choices {
        // The moved text is followed by a space unless the line goes on with its word.
        let follows = usize::from(!continues);
        let keep_tokens = tokens(prev) - tokens(std::slice::from_ref(&moved));
        if keep_tokens < needs || rest + moved.0.len() + follows + last_len > COLUMNS_MAX {
            continue;
        }
        match keep {
            Some(k) => *prev.last_mut().expect("a piece") = (k, glued),
            None => {
                prev.pop();
            }
        }
        last.insert(0, moved);
        return;
    }
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
pub(crate) fn words_of(command: &str) -> Vec<String> {
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
pub(crate) fn permalink_block(link: Option<&str>, out: &mut String) {
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

    /// A last line of one word, number or list item takes the one before it along.
    #[test]
    fn wrap_leaves_no_lone_token_on_a_last_line() {
        // The ampere-altra-q80 twin's devices line ended "serve" / "3".
        let text = "44 CPUs (0-1,4-5,40-79) serve all 6 devices; 36 CPUs (2-3,6-39) serve 3";
        assert_eq!(
            wrap(text, "  ", "    "),
            "  44 CPUs (0-1,4-5,40-79) serve all 6 devices; 36 CPUs (2-3,6-39)\n    serve 3\n"
        );
        // A cpulist split over lines whose last piece is one range.
        let list: Vec<String> = (0..40).map(|i| (i * 3).to_string()).chain(["190-191".into()]).collect();
        let list = format!("({})", list.join(","));
        for width in 0..40 {
            let text = format!("{} fires on {list}", "x".repeat(width));
            let w = wrap(&text, "  ", "    ");
            let last = w.lines().last().unwrap();
            assert!(
                last.trim().split([',', ' ']).filter(|t| !t.is_empty()).count() > 1,
                "{w}"
            );
            assert!(w.lines().all(|l| l.len() <= COLUMNS_MAX), "{w}");
            let joined: String = w.lines().map(str::trim).collect::<Vec<_>>().join(" ");
            assert_eq!(joined.replace(", ", ","), text.trim().replace(", ", ","), "{w}");
        }
        // A list that fitted whole on its line gives its last item to a lone count after it.
        let list = (0..17).map(|i| (i * 11 + 12).to_string()).collect::<Vec<_>>().join(",");
        let w = wrap(&format!("{list} (17)"), "     -1  ", "         ");
        assert!(w.ends_with(",\n         188 (17)\n"), "{w}");
        // Nothing to take along: a single long word stays as it is.
        let long = "y".repeat(80);
        assert_eq!(wrap(&format!("a {long}"), "", "  "), format!("a\n  {long}\n"));
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
