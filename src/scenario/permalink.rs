//! The permalink codec: a whole scenario (or comparison) in a URL path segment, no database.
//! No HTTP here: the web pages, the CLI (`sweep` links) and the fuzz target share it. What
//! travels inside a link is listed in [`payloads`](super::payloads).
//!
//! Format: `v1.` + base64url (no padding) of the raw-deflate-compressed JSON of the spec.
//! The JSON is the same [`ScenarioSpec`](crate::scenario::spec::ScenarioSpec) the HTTP API
//! takes, so variant, sort and effective model travel by their frozen names and are never
//! substituted: an unknown name fails to resolve, it does not fall back.
//!
//! A preset travels by name. Presets are frozen under their names (a corrected machine gets a
//! new file and a new name), so the name reproduces the machine; it also keeps links short.
//! A topology edited in the browser travels inline as a `TopologySpec`.
//!
//! Decoding is hostile-input safe: the encoded text, the compressed bytes and the inflated JSON
//! each have a limit (inflation reads through `take`, so a zip bomb stops at the limit), and an
//! unknown version, bad base64, bad deflate or bad JSON is a [`PermalinkError`], never a panic.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use flate2::Compression;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::io::{Read, Write};

/// The version prefix this build writes and reads.
pub(crate) const VERSION_PREFIX: &str = "v1.";
/// Largest compressed payload accepted. 32 KiB keeps the whole link under the 64 KiB that
/// HTTP libraries accept in a request line; an explicit 8,192-CPU machine needs a few KiB.
pub(crate) const COMPRESSED_BYTES_MAX: usize = 32 << 10;
/// Largest inflated JSON accepted.
pub(crate) const JSON_BYTES_MAX: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PermalinkError {
    #[error("unknown permalink version (this server reads {VERSION_PREFIX}…)")]
    Version,
    #[error("permalink is longer than {COMPRESSED_BYTES_MAX} compressed bytes")]
    TooLong,
    #[error("permalink is not valid base64url")]
    Base64,
    #[error("permalink is damaged or truncated (deflate: {0})")]
    Deflate(String),
    #[error("permalink expands beyond {JSON_BYTES_MAX} bytes")]
    TooBig,
    #[error("permalink does not hold a valid scenario: {0}")]
    Json(String),
    #[error("cannot encode this scenario: {0}")]
    Encode(String),
}

/// Encode a spec. Fails only when the spec holds a value serde cannot write (the pages
/// store inline topologies in explicit form, so their specs always encode).
pub fn encode<T: Serialize>(spec: &T) -> Result<String, PermalinkError> {
    let json = serde_json::to_vec(spec).map_err(|e| PermalinkError::Encode(e.to_string()))?;
    let mut enc = DeflateEncoder::new(Vec::new(), Compression::best());
    enc.write_all(&json)
        .map_err(|e| PermalinkError::Encode(e.to_string()))?;
    let bytes = enc.finish().map_err(|e| PermalinkError::Encode(e.to_string()))?;
    Ok(format!("{VERSION_PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes)))
}

/// Decode and check a permalink.
pub fn decode<T: DeserializeOwned>(link: &str) -> Result<T, PermalinkError> {
    let body = link.strip_prefix(VERSION_PREFIX).ok_or(PermalinkError::Version)?;
    if body.len() > COMPRESSED_BYTES_MAX.div_ceil(3) * 4 {
        return Err(PermalinkError::TooLong);
    }
    let bytes = URL_SAFE_NO_PAD.decode(body).map_err(|_| PermalinkError::Base64)?;
    if bytes.len() > COMPRESSED_BYTES_MAX {
        return Err(PermalinkError::TooLong);
    }
    let mut json = Vec::new();
    DeflateDecoder::new(&bytes[..])
        .take(JSON_BYTES_MAX as u64 + 1)
        .read_to_end(&mut json)
        .map_err(|e| PermalinkError::Deflate(e.to_string()))?;
    if json.len() > JSON_BYTES_MAX {
        return Err(PermalinkError::TooBig);
    }
    serde_json::from_slice(&json).map_err(|e| PermalinkError::Json(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::spec::{DeviceSpec, ScenarioSpec, TopologyRef};

    fn spec() -> ScenarioSpec {
        ScenarioSpec {
            variant: "rotation".into(),
            spread_counter: 3,
            ..ScenarioSpec::new(
                TopologyRef::Preset("azure-l96as-v4".into()),
                vec![DeviceSpec {
                    pre: 1,
                    ..DeviceSpec::new(6, 62)
                }],
            )
        }
    }

    #[test]
    fn round_trip() {
        let link = encode(&spec()).unwrap();
        assert!(link.starts_with("v1.") && link.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)));
        assert_eq!(decode::<ScenarioSpec>(&link).unwrap(), spec());
    }

    #[test]
    fn rejects_damage() {
        let link = encode(&spec()).unwrap();
        assert_eq!(
            decode::<ScenarioSpec>(&link.replacen("v1.", "v9.", 1)),
            Err(PermalinkError::Version)
        );
        assert!(decode::<ScenarioSpec>(&link[..link.len() - 6]).is_err());
        assert_eq!(decode::<ScenarioSpec>("v1.!!!"), Err(PermalinkError::Base64));
        let mut tampered = link.into_bytes();
        let mid = tampered.len() / 2;
        tampered[mid] = if tampered[mid] == b'A' { b'B' } else { b'A' };
        assert!(decode::<ScenarioSpec>(std::str::from_utf8(&tampered).unwrap()).is_err());
    }

    #[test]
    fn rejects_zip_bomb() {
        let zeros = vec![b' '; JSON_BYTES_MAX * 2];
        let mut enc = DeflateEncoder::new(Vec::new(), Compression::best());
        enc.write_all(&zeros).unwrap();
        let link = format!("{VERSION_PREFIX}{}", URL_SAFE_NO_PAD.encode(enc.finish().unwrap()));
        assert_eq!(decode::<ScenarioSpec>(&link), Err(PermalinkError::TooBig));
    }
}
