//! The patches a review reads, and the base they fit: the tree named, or the newest Debian
//! `linux-source-X.Y` the cache (else apt) has that they apply to.

use super::{BaseInfo, BuildInfo, Builds, PatchInfo, Progress, ReviewError, ReviewOptions};
use crate::kernel_c::sha256_hex;
use crate::kernel_c_tools::source::{self, BUILT_FILES};
use crate::kernel_c_tools::{build as build_c, BuildOptions};
use std::path::{Path, PathBuf};

/// A patch read and checked.
pub(crate) struct ReadPatch {
    pub(crate) info: PatchInfo,
    pub(crate) subject: String,
    /// The words of its subject or message that claim an improvement ([`claim`]).
    pub(crate) claim: Option<String>,
}

/// Read the patches; refuse what is not a patch, and a patch that changes files irqscope
/// does not build (documentation aside), since that change would not be reviewed.
pub(crate) fn read(paths: &[PathBuf]) -> Result<Vec<ReadPatch>, ReviewError> {
    if paths.is_empty() {
        return Err(ReviewError::new("no patch named (irqscope review PATCH...)"));
    }
    let patches = source::read_patches(paths)?;
    let mut out = Vec::new();
    for p in patches {
        let shown = p.path.display().to_string();
        let text = String::from_utf8_lossy(&p.bytes);
        check(&shown, &text)?;
        out.push(ReadPatch {
            claim: claim(&text),
            info: PatchInfo {
                file: shown,
                subject: p.subject.clone(),
                sha256: sha256_hex(&p.bytes),
            },
            subject: p.subject,
        });
    }
    Ok(out)
}

/// Refuse what is not a patch, and a patch that changes files a review does not build
/// (documentation aside). `shown` names the patch in the message.
pub(crate) fn check(shown: &str, text: &str) -> Result<(), ReviewError> {
    let files = source::patched_files(text);
    if files.is_empty() {
        return Err(ReviewError::new(format!(
            "{shown}: not a patch (no `+++ b/FILE` line: a unified diff, an mbox or \
             git format-patch output)"
        )));
    }
    let other: Vec<&str> = files
        .iter()
        .map(String::as_str)
        .filter(|f| !BUILT_FILES.contains(f) && !f.starts_with("Documentation/"))
        .collect();
    if !other.is_empty() {
        return Err(ReviewError::new(format!(
            "{shown}: changes {}, which a review does not build (it builds {})",
            other.join(", "),
            BUILT_FILES.join(", ")
        )));
    }
    Ok(())
}

/// A patch as a review server takes it (`serve --review`): checked as [`read`] checks a
/// file, with its subject (the mail's, else `None`), or the message saying why not.
pub fn check_text(text: &str) -> Result<Option<String>, String> {
    check("the patch", text).map_err(|e| e.0)?;
    Ok(source::mail_subject(text))
}

/// Word stems that claim a patch makes placement better (a word starting with one; `spread`
/// is not one: this code's own verb, it describes as often as it claims).
const CLAIM_STEMS: &[&str] = &["improv", "better", "balanc", "fairer", "reduc", "fewer", "avoid", "fix"];

/// The sentence of a patch's subject or message (before the diff) that claims an
/// improvement: the first holding a word of [`CLAIM_STEMS`], cut to 60 characters; `None`
/// when none does.
pub(crate) fn claim(text: &str) -> Option<String> {
    let subject = source::mail_subject(text);
    let mailed = subject.is_some();
    // The message: after the mail's headers (a bare diff has none) up to the diff; its
    // paragraphs joined, then cut into sentences.
    let body: Vec<&str> = text
        .lines()
        .skip_while(|l| mailed && !l.is_empty())
        .take_while(|l| !(*l == "---" || l.starts_with("diff ") || l.starts_with("--- ") || l.starts_with("Index: ")))
        .collect();
    let mut sentences: Vec<String> = subject
        .iter()
        .map(|s| {
            s.split_once(']')
                .map_or(s.as_str(), |(_, rest)| rest)
                .trim()
                .to_string()
        })
        .collect();
    for paragraph in body.split(|l| l.trim().is_empty()) {
        let joined = paragraph.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
        let mut rest = joined.as_str();
        while let Some(end) = rest.find(". ").or_else(|| rest.find("! ")).or_else(|| rest.find("? ")) {
            sentences.push(rest[..=end].to_string());
            rest = &rest[end + 2..];
        }
        sentences.push(rest.to_string());
    }
    let claims = |s: &String| {
        s.split(|c: char| !c.is_ascii_alphanumeric())
            .map(str::to_ascii_lowercase)
            .any(|w| CLAIM_STEMS.iter().any(|stem| w.starts_with(stem)))
    };
    sentences.into_iter().find(claims).map(|l| {
        if l.chars().count() > 60 {
            l.chars().take(57).collect::<String>() + "..."
        } else {
            l
        }
    })
}

/// A base to try: what the build takes, and how the review names it.
struct Candidate {
    source: String,
    package: String,
    version: Option<String>,
}

/// The bases to try, newest first: `--base`, or the Debian sources in the cache, then the
/// packages apt may have (7.2, 6.12) that the cache does not.
fn candidates(opts: &ReviewOptions) -> Vec<Candidate> {
    if let Some(b) = &opts.base {
        return vec![Candidate {
            source: b.clone(),
            package: b.clone(),
            version: None,
        }];
    }
    let mut cached: Vec<((u32, u32), Candidate)> = source::cached_packages(&opts.cache)
        .into_iter()
        .filter_map(|(package, version, files)| {
            let mm = source::major_minor(package.strip_prefix("linux-source-")?)?;
            let source = files.display().to_string();
            Some((
                mm,
                Candidate {
                    source,
                    package,
                    version: Some(version),
                },
            ))
        })
        .collect();
    cached.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.version.cmp(&a.1.version)));
    cached.dedup_by(|a, b| a.0 == b.0);
    let mut out: Vec<Candidate> = Vec::new();
    for mm in [(7, 2), (6, 12)] {
        if !cached.iter().any(|c| c.0 == mm) {
            let name = format!("linux-source-{}.{}", mm.0, mm.1);
            cached.push((
                mm,
                Candidate {
                    source: name.clone(),
                    package: name,
                    version: None,
                },
            ));
        }
    }
    cached.sort_by_key(|c| std::cmp::Reverse(c.0));
    out.extend(cached.into_iter().map(|(_, c)| c));
    out
}

fn options(opts: &ReviewOptions, source: &str, name: String, patches: Vec<PathBuf>) -> BuildOptions {
    BuildOptions {
        source: source.to_string(),
        name: Some(name),
        patches,
        apt_options: opts.apt_options.clone(),
        sort: None,
        strict: false,
        cache: opts.cache.clone(),
    }
}

fn short_hash(text: &str) -> String {
    sha256_hex(text.as_bytes())[..10].to_string()
}

/// Find the base the patches fit and build both trees (the cache keeps each build).
pub(crate) fn build(
    opts: &ReviewOptions,
    patches: &[ReadPatch],
    progress: Progress<'_>,
) -> Result<(Builds, BaseInfo), ReviewError> {
    let mut tried = Vec::new();
    let hashes: String = patches.iter().map(|p| p.info.sha256.as_str()).collect();
    for cand in candidates(opts) {
        progress(&format!("building {} with the patches", cand.package), None);
        let tag = short_hash(&format!("{}\n{:?}", cand.source, cand.version));
        let patched_name = format!("patched-{}", short_hash(&format!("{tag}{hashes}")));
        let patched = match build_c(&options(opts, &cand.source, patched_name, opts.patches.clone())) {
            Ok(b) => b,
            Err(e) if opts.base.is_none() => {
                tried.push(format!("{}: {}", cand.package, e));
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        progress(&format!("building {}", cand.package), None);
        let base = build_c(&options(opts, &cand.source, format!("base-{tag}"), Vec::new()))?;
        let version = cand
            .version
            .clone()
            .or_else(|| base.provenance.package_version.clone())
            .or_else(|| base.provenance.version.clone());
        tried.push(format!("{}: the patches apply", cand.package));
        let info = BaseInfo {
            package: package_label(&cand, &base.provenance.origin),
            version,
            source: cand.source.clone(),
            build: BuildInfo {
                name: base.provenance.name.clone(),
                build_id: base.provenance.id.clone(),
            },
            tried,
        };
        return Ok((Builds::new(base, patched), info));
    }
    Err(ReviewError::new(format!(
        "no base the patches apply to: {}",
        tried.join("; ")
    )))
}

/// A package by its name; a tree by its path.
fn package_label(cand: &Candidate, origin: &str) -> String {
    if source::is_package_name(&cand.package) || Path::new(&cand.package).exists() {
        cand.package.clone()
    } else {
        origin.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::orders::{CounterRange, Orders};

    fn options(cache: &Path, base: Option<&str>) -> ReviewOptions {
        ReviewOptions {
            patches: Vec::new(),
            base: base.map(str::to_string),
            against: None,
            machines: Vec::new(),
            orders: Orders::All,
            counters: CounterRange { from: 0, to: 0 },
            cases: 1,
            seed: 1,
            search: 0,
            cache: cache.to_path_buf(),
            apt_options: Vec::new(),
        }
    }

    fn unpack(cache: &Path, dir: &str) {
        let lib = cache.join("packages").join(dir).join("files/lib");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join("group_cpus.c"), "/* a tree */\n").unwrap();
    }

    /// The cached Debian sources come newest first, then the packages apt may have that the
    /// cache lacks; `--base` is the one base tried.
    #[test]
    fn bases_are_tried_newest_first() {
        let cache = std::env::temp_dir().join(format!("irqscope-review-bases-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&cache);
        unpack(&cache, "linux-source-6.12_6.12.118-1~deb12u1");
        let tried = |base| -> Vec<String> {
            candidates(&options(&cache, base))
                .into_iter()
                .map(|c| format!("{} {:?}", c.package, c.version))
                .collect()
        };
        assert_eq!(
            tried(None),
            [
                "linux-source-7.2 None",
                "linux-source-6.12 Some(\"6.12.118-1~deb12u1\")"
            ]
        );
        unpack(&cache, "linux-source-7.2_7.2.13-1");
        // Without its tree a directory is not a cached source.
        std::fs::create_dir_all(cache.join("packages/linux-source-7.3_7.3.1-1")).unwrap();
        assert_eq!(
            tried(None),
            [
                "linux-source-7.2 Some(\"7.2.13-1\")",
                "linux-source-6.12 Some(\"6.12.118-1~deb12u1\")"
            ]
        );
        assert_eq!(tried(Some("/src/linux")), ["/src/linux None"]);
        let _ = std::fs::remove_dir_all(&cache);
    }

    #[test]
    fn a_claim_is_read_from_the_subject_or_the_message_not_the_diff() {
        let mail = "From: A <a@example.org>\nSubject: [PATCH v2] lib/group_cpus: rotate the\n extra CPUs\n\n\
                    group_cpus_evenly() spreads a device's interrupts over the CPUs. Identical\n\
                    devices stack theirs. Fix this by rotating\nthe extra CPUs.\n\n\
                    Signed-off-by: A <a@example.org>\n---\n \
                    lib/group_cpus.c | 2 +-\n--- a/lib/group_cpus.c\n+++ b/lib/group_cpus.c\n+better\n";
        assert_eq!(claim(mail).as_deref(), Some("Fix this by rotating the extra CPUs."));
        let subject = mail.replace("rotate the\n extra CPUs", "balance the\n extra CPUs");
        assert_eq!(
            claim(&subject).as_deref(),
            Some("lib/group_cpus: balance the extra CPUs")
        );
        // Spreading, a prefix, group_cpus_evenly() and words inside the diff claim nothing.
        let plain = "From: A\nSubject: [PATCH] lib/group_cpus: tidy group_cpus_evenly()\n\n\
                     It spreads the prefix as before.\n---\n--- a/x\n+++ b/x\n+/* better */\n";
        assert_eq!(claim(plain), None);
        assert_eq!(
            claim("--- a/lib/group_cpus.c\n+++ b/lib/group_cpus.c\n+improve\n"),
            None
        );
        let long = mail.replace("Fix this by", &format!("Fix {} this by", "x".repeat(80)));
        assert_eq!(claim(&long).unwrap().chars().count(), 60);
    }
}
