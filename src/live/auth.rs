//! Bearer tokens for ingestion and administration. Each push token may be bound to one host
//! name; comparison takes the same time whatever the presented token holds (`subtle`), and
//! every configured token is compared.
//!
//! Token text (a file given to `--live-tokens`, or the `IRQSCOPE_LIVE_TOKENS` variable):
//! entries separated by newlines or commas, each `TOKEN` (pushes for any host, at most
//! [`UNBOUND_TOKEN_HOSTS_MAX`](super::limits::UNBOUND_TOKEN_HOSTS_MAX) of them), `HOST=TOKEN` (pushes for that host) or
//! [`ADMIN_ENTRY`]`=TOKEN` (may delete hosts; `_` starts no host name); `#` starts a comment
//! line. Tokens are 16 to 256 bytes without whitespace, `,` or `=`.
//!
//! Viewer tokens (`serve --live-viewer-tokens FILE`, [`ViewerTokens`]): when set, the live
//! pages, their JSON and their SSE streams need one. One token per line, `#` starts a comment
//! line; 16 to 256 bytes of `A-Z a-z 0-9 . _ ~ -` (characters a URL query and a cookie carry as
//! they are, so `?token=` and the cookie need no decoding).

use super::limits::{TOKENS_MAX, TOKEN_BYTES_MAX, TOKEN_BYTES_MIN};
use super::protocol::valid_host_name;
use subtle::ConstantTimeEq;

/// The name before `=` that makes an entry an admin token.
pub(crate) const ADMIN_ENTRY: &str = "_admin";

#[derive(Clone, Default)]
pub struct Tokens {
    entries: Vec<(Vec<u8>, Option<String>)>,
    admins: Vec<Vec<u8>>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tokens({} configured)", self.entries.len())
    }
}

/// The answer to a presented token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// May push for this host: through a token bound to it (`unbound: None`), or through the
    /// unbound token with this index, which counts against its host quota.
    Accepted { unbound: Option<u32> },
    /// No token matches.
    Unknown,
    /// The token is valid but bound to another host.
    WrongHost,
}

impl Tokens {
    pub fn parse(text: &str) -> Result<Tokens, String> {
        let mut entries = Vec::new();
        let mut admins = Vec::new();
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
                    if !valid_host_name(h) && h != ADMIN_ENTRY {
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
                if entries.len() + admins.len() >= TOKENS_MAX {
                    return Err(format!("tokens: more than {TOKENS_MAX}"));
                }
                if host.as_deref() == Some(ADMIN_ENTRY) {
                    admins.push(token.as_bytes().to_vec());
                } else {
                    entries.push((token.as_bytes().to_vec(), host));
                }
            }
        }
        Ok(Tokens { entries, admins })
    }

    /// No admin token is configured (deleting hosts is off).
    pub(crate) fn no_admin(&self) -> bool {
        self.admins.is_empty()
    }

    /// The presented token is an admin token. Every admin token is compared in full.
    pub(crate) fn is_admin(&self, presented: &[u8]) -> bool {
        self.admins
            .iter()
            .fold(false, |found, t| found | bool::from(presented.ct_eq(t)))
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Push tokens bound to no host (each has a host quota, `live::store`).
    pub(crate) fn unbound_count(&self) -> usize {
        self.entries.iter().filter(|(_, bound)| bound.is_none()).count()
    }

    /// Check a presented token for `host`. Every entry is compared in full; a token bound to
    /// the host wins over the same text unbound.
    pub(crate) fn check(&self, presented: &[u8], host: &str) -> Verdict {
        let mut verdict = Verdict::Unknown;
        for (i, (token, bound)) in self.entries.iter().enumerate() {
            // `subtle`: the time depends on the lengths only, never on where bytes differ.
            if bool::from(presented.ct_eq(token)) {
                verdict = match (verdict, bound.as_deref()) {
                    (_, Some(b)) if b == host => Verdict::Accepted { unbound: None },
                    (Verdict::Accepted { unbound: None }, _) => verdict,
                    (_, None) => Verdict::Accepted {
                        unbound: Some(i as u32),
                    },
                    (Verdict::Accepted { .. }, Some(_)) => verdict,
                    (_, Some(_)) => Verdict::WrongHost,
                };
            }
        }
        verdict
    }
}

/// The tokens that may view live hosts. Empty: viewing is open.
#[derive(Clone, Default)]
pub struct ViewerTokens {
    tokens: Vec<Vec<u8>>,
}

impl std::fmt::Debug for ViewerTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ViewerTokens({} configured)", self.tokens.len())
    }
}

/// A byte a viewer token may hold: URL-unreserved, so a query and a cookie carry it unchanged.
fn viewer_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'-')
}

impl ViewerTokens {
    pub fn parse(text: &str) -> Result<ViewerTokens, String> {
        let mut tokens = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if line.len() < TOKEN_BYTES_MIN || line.len() > TOKEN_BYTES_MAX || !line.bytes().all(viewer_token_byte) {
                return Err(format!(
                    "viewer tokens: line {}: one token per line, {TOKEN_BYTES_MIN} to {TOKEN_BYTES_MAX} bytes of A-Z a-z 0-9 . _ ~ -",
                    i + 1
                ));
            }
            if tokens.len() >= TOKENS_MAX {
                return Err(format!("viewer tokens: more than {TOKENS_MAX}"));
            }
            tokens.push(line.as_bytes().to_vec());
        }
        Ok(ViewerTokens { tokens })
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The presented token is a viewer token. Every token is compared in full (`subtle`).
    pub(crate) fn accepts(&self, presented: &[u8]) -> bool {
        self.tokens
            .iter()
            .fold(false, |found, t| found | bool::from(presented.ct_eq(t)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viewer_tokens_one_per_line() {
        let v = ViewerTokens::parse("# viewers\nviewer-token-0123456789\n\n  abcdefghijklmnop.q_~  \n").unwrap();
        assert!(!v.is_empty());
        assert!(v.accepts(b"viewer-token-0123456789"));
        assert!(v.accepts(b"abcdefghijklmnop.q_~"));
        assert!(!v.accepts(b"viewer-token-012345678"));
        assert!(!v.accepts(b""));
        assert!(ViewerTokens::parse("").unwrap().is_empty());
        for bad in [
            "short",
            "host=viewer-token-0123456789",
            "viewer;token;0123456789",
            "viewer token 0123456789",
        ] {
            let e = ViewerTokens::parse(bad).unwrap_err();
            assert!(e.contains("line 1"), "{bad}: {e}");
        }
    }

    #[test]
    fn tokens_bind_hosts() {
        let t = Tokens::parse("# comment\nweb1=aaaaaaaaaaaaaaaaaaaa\nbbbbbbbbbbbbbbbbbbbb, cccccccccccccccccccc\n")
            .unwrap();
        assert_eq!(
            t.check(b"aaaaaaaaaaaaaaaaaaaa", "web1"),
            Verdict::Accepted { unbound: None }
        );
        assert_eq!(t.check(b"aaaaaaaaaaaaaaaaaaaa", "web2"), Verdict::WrongHost);
        assert_eq!(
            t.check(b"cccccccccccccccccccc", "any"),
            Verdict::Accepted { unbound: Some(2) }
        );
        assert_eq!(t.check(b"aaaaaaaaaaaaaaaaaaa", "web1"), Verdict::Unknown);
        assert_eq!(t.check(b"aaaaaaaaaaaaaaaaaaaab", "web1"), Verdict::Unknown);
        assert_eq!(t.check(b"", "web1"), Verdict::Unknown);
        assert!(Tokens::parse("short").is_err());
        assert!(Tokens::parse("bad host=aaaaaaaaaaaaaaaaaaaa").is_err());
        assert!(Tokens::parse("").unwrap().is_empty());
        let a = Tokens::parse("_admin=dddddddddddddddddddd\n").unwrap();
        assert!(a.is_empty() && !a.no_admin(), "an admin token pushes for no host");
        assert!(a.is_admin(b"dddddddddddddddddddd") && !a.is_admin(b"ddddddddddddddddddd"));
        assert!(!t.is_admin(b"aaaaaaaaaaaaaaaaaaaa") && t.no_admin());
    }
}
