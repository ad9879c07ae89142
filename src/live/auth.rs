//! Bearer tokens for ingestion. Each token may be bound to one host name; comparison takes the
//! same time whatever the presented token holds, and every configured token is compared.
//!
//! Token text (a file given to `--live-tokens`, or the `IRQSCOPE_LIVE_TOKENS` variable):
//! entries separated by newlines or commas, each `TOKEN` (any host) or `HOST=TOKEN`; `#` starts
//! a comment line. Tokens are 16 to 256 bytes without whitespace, `,` or `=`.

use super::limits::{TOKENS_MAX, TOKEN_BYTES_MAX, TOKEN_BYTES_MIN};
use super::protocol::valid_host_name;

#[derive(Clone, Default)]
pub struct Tokens {
    entries: Vec<(Vec<u8>, Option<String>)>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tokens({} configured)", self.entries.len())
    }
}

/// The answer to a presented token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Accepted,
    /// No token matches.
    Unknown,
    /// The token is valid but bound to another host.
    WrongHost,
}

impl Tokens {
    pub fn parse(text: &str) -> Result<Tokens, String> {
        let mut entries = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            for entry in line.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                let (host, token) = match entry.split_once('=') {
                    Some((h, t)) => (Some(h.trim().to_string()), t.trim()),
                    None => (None, entry),
                };
                if let Some(h) = &host {
                    if !valid_host_name(h) {
                        return Err(format!(
                            "tokens: line {}: {:?} is not a valid host name",
                            i + 1,
                            super::parse::short(h)
                        ));
                    }
                }
                if token.len() < TOKEN_BYTES_MIN
                    || token.len() > TOKEN_BYTES_MAX
                    || token.bytes().any(|b| b.is_ascii_whitespace() || b == b'=')
                {
                    return Err(format!(
                        "tokens: line {}: a token is {TOKEN_BYTES_MIN} to {TOKEN_BYTES_MAX} bytes without spaces, ',' or '='",
                        i + 1
                    ));
                }
                if entries.len() >= TOKENS_MAX {
                    return Err(format!("tokens: more than {TOKENS_MAX}"));
                }
                entries.push((token.as_bytes().to_vec(), host));
            }
        }
        Ok(Tokens { entries })
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Check a presented token for `host`. Every entry is compared in full.
    pub fn check(&self, presented: &[u8], host: &str) -> Verdict {
        let mut verdict = Verdict::Unknown;
        for (token, bound) in &self.entries {
            if ct_eq(presented, token) {
                let ok = bound.as_deref().is_none_or(|b| b == host);
                verdict = match (verdict, ok) {
                    (Verdict::Accepted, _) | (_, true) => Verdict::Accepted,
                    _ => Verdict::WrongHost,
                };
            }
        }
        verdict
    }
}

/// Constant-time equality: the time depends only on the configured token's length, never on
/// where the bytes differ.
fn ct_eq(presented: &[u8], expected: &[u8]) -> bool {
    let mut diff = (presented.len() ^ expected.len()) as u64;
    for (i, &e) in expected.iter().enumerate() {
        let p = presented.get(i).copied().unwrap_or(0);
        diff |= u64::from(std::hint::black_box(p ^ e));
    }
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_bind_hosts() {
        let t = Tokens::parse("# comment\nweb1=aaaaaaaaaaaaaaaaaaaa\nbbbbbbbbbbbbbbbbbbbb, cccccccccccccccccccc\n")
            .unwrap();
        assert_eq!(t.check(b"aaaaaaaaaaaaaaaaaaaa", "web1"), Verdict::Accepted);
        assert_eq!(t.check(b"aaaaaaaaaaaaaaaaaaaa", "web2"), Verdict::WrongHost);
        assert_eq!(t.check(b"cccccccccccccccccccc", "any"), Verdict::Accepted);
        assert_eq!(t.check(b"aaaaaaaaaaaaaaaaaaa", "web1"), Verdict::Unknown);
        assert_eq!(t.check(b"aaaaaaaaaaaaaaaaaaaab", "web1"), Verdict::Unknown);
        assert_eq!(t.check(b"", "web1"), Verdict::Unknown);
        assert!(Tokens::parse("short").is_err());
        assert!(Tokens::parse("bad host=aaaaaaaaaaaaaaaaaaaa").is_err());
        assert!(Tokens::parse("").unwrap().is_empty());
    }
}
