//! Where the C comes from: a kernel tree, a single `group_cpus.c`, or a Debian
//! `linux-source-X.Y` package; and the patches applied to a scratch copy of it.
//!
//! The user's tree is only read. Its files are copied into a scratch directory laid out like
//! a tree ([`BUILT_FILES`]), where Debian's `patch` applies the patches, so a mailed patch's
//! `a/lib/group_cpus.c` paths apply as they are.

use crate::kernel_c::KernelCError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Largest source or patch file read.
pub(crate) const SOURCE_BYTES_MAX: u64 = 4 << 20;
/// Most patches in one build.
pub(crate) const PATCHES_MAX: usize = 64;

/// The files of one source, read and hashed.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    /// What the user named (a path or a package).
    pub(crate) origin: String,
    /// `lib/group_cpus.c` as given (before patches).
    pub(crate) group_cpus: Vec<u8>,
    /// `lib/sort.c` of the same tree, when the source is a tree.
    pub(crate) sort: Option<Vec<u8>>,
    /// `kernel/irq/affinity.c` of the same tree, when the tree has it.
    pub(crate) affinity: Option<Vec<u8>>,
    /// `block/blk-mq-cpumap.c` of the same tree, when the tree has it.
    pub(crate) blk_mq_cpumap: Option<Vec<u8>>,
    /// The tree's kernel version from its Makefile (`7.2.13`), when the source is a tree.
    pub(crate) version: Option<String>,
    /// The Debian package version, when the source is a package.
    pub(crate) package_version: Option<String>,
}

/// A patch as read: its subject and bytes.
#[derive(Debug, Clone)]
pub(crate) struct Patch {
    pub(crate) path: PathBuf,
    pub(crate) subject: String,
    pub(crate) bytes: Vec<u8>,
}

/// A source or patch file of at most [`SOURCE_BYTES_MAX`] bytes, bounded by what is read
/// (`/dev/zero`, a FIFO or a growing file claim no size).
fn read_bounded(path: &Path) -> Result<Vec<u8>, KernelCError> {
    use std::io::Read;
    let too_big = || {
        KernelCError::input(format!(
            "{}: more than the {SOURCE_BYTES_MAX} bytes a source or patch may have",
            path.display()
        ))
    };
    let fail = |e: std::io::Error| KernelCError::input(format!("{}: {e}", path.display()));
    let meta = std::fs::metadata(path).map_err(fail)?;
    if meta.len() > SOURCE_BYTES_MAX {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(SOURCE_BYTES_MAX + 1).read_to_end(&mut bytes))
        .map_err(fail)?;
    if bytes.len() as u64 > SOURCE_BYTES_MAX {
        return Err(too_big());
    }
    Ok(bytes)
}

/// `VERSION.PATCHLEVEL.SUBLEVEL` (+ `EXTRAVERSION`) of a top-level kernel Makefile.
pub(crate) fn makefile_version(makefile: &str) -> Option<String> {
    let field = |name: &str| {
        makefile.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    let (v, p) = (field("VERSION")?, field("PATCHLEVEL")?);
    let s = field("SUBLEVEL").unwrap_or_else(|| "0".into());
    let e = field("EXTRAVERSION").unwrap_or_default();
    (v.parse::<u32>().is_ok() && p.parse::<u32>().is_ok()).then(|| format!("{v}.{p}.{s}{e}"))
}

/// (major, minor) of a version string.
pub fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut it = version.split(|c: char| !c.is_ascii_digit());
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// The refusal for a tree from before v6.3, whose grouping lives in kernel/irq/affinity.c.
fn pre_6_3(origin: &str) -> KernelCError {
    KernelCError::input(format!(
        "{origin}: no lib/group_cpus.c; trees before v6.3 keep the grouping inside \
         kernel/irq/affinity.c (irq_build_affinity_masks()), which kernel-c does not build; \
         the pre-cluster model covers that code"
    ))
}

/// Read a source the user named: a directory (a kernel tree) or a file (`group_cpus.c`).
pub(crate) fn read_path(path: &Path) -> Result<Source, KernelCError> {
    let origin = path.display().to_string();
    if path.is_dir() {
        let gc = path.join("lib/group_cpus.c");
        if !gc.is_file() {
            if path.join("kernel/irq/affinity.c").is_file() {
                return Err(pre_6_3(&origin));
            }
            return Err(KernelCError::input(format!(
                "{origin}: neither lib/group_cpus.c nor kernel/irq/affinity.c: not a kernel tree"
            )));
        }
        let version = std::fs::read_to_string(path.join("Makefile"))
            .ok()
            .and_then(|m| makefile_version(&m));
        let optional = |rel: &str| -> Result<Option<Vec<u8>>, KernelCError> {
            let f = path.join(rel);
            f.is_file().then(|| read_bounded(&f)).transpose()
        };
        return Ok(Source {
            origin,
            group_cpus: read_bounded(&gc)?,
            sort: optional(SORT)?,
            affinity: optional(AFFINITY)?,
            blk_mq_cpumap: optional(BLK_MQ_CPUMAP)?,
            version,
            package_version: None,
        });
    }
    if path.is_file() {
        let bytes = read_bounded(path)?;
        if !bytes.windows(17).any(|w| w == b"group_cpus_evenly") {
            return Err(KernelCError::input(format!(
                "{origin}: defines no group_cpus_evenly(); give lib/group_cpus.c, a kernel tree or a \
                 linux-source-X.Y package"
            )));
        }
        return Ok(Source {
            origin,
            group_cpus: bytes,
            sort: None,
            affinity: None,
            blk_mq_cpumap: None,
            version: None,
            package_version: None,
        });
    }
    Err(KernelCError::input(format!(
        "{origin}: no such file or directory (SOURCE is a kernel tree, a group_cpus.c or a \
         linux-source-X.Y package)"
    )))
}

/// Whether SOURCE names a Debian source package rather than a path.
pub(crate) fn is_package_name(source: &str) -> bool {
    source.starts_with("linux-source-")
        && !source.contains('/')
        && source.chars().all(|c| c.is_ascii_alphanumeric() || ".+-".contains(c))
}

fn run(cmd: &mut Command, what: &str) -> Result<String, KernelCError> {
    let out = cmd.output().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => KernelCError::input(format!(
            "{what}: the program is not installed (Debian: apt-get install apt dpkg tar xz-utils)"
        )),
        _ => KernelCError::input(format!("{what}: {e}")),
    })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(KernelCError::input(format!("{what} failed: {last}")));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A Debian `linux-source-X.Y` package: downloaded with `apt-get download` (with the given
/// apt options, e.g. a private configuration for unstable) and the few files taken out of its
/// tarball, cached under `cache/packages/NAME_VERSION/`.
pub(crate) fn read_package(name: &str, cache: &Path, apt_options: &[String]) -> Result<Source, KernelCError> {
    let version = package_version(name, apt_options)?;
    let dir = cache
        .join("packages")
        .join(format!("{name}_{}", version.replace([':', '/'], "_")));
    let done = dir.join("files");
    // The files a build takes, as tar patterns; a cache unpacked for another list is unpacked
    // again.
    let wanted: Vec<String> = std::iter::once("Makefile")
        .chain(BUILT_FILES)
        .map(|f| format!("*/{f}"))
        .collect();
    let stamp = dir.join("files.list");
    let stamped = std::fs::read_to_string(&stamp).is_ok_and(|t| t == wanted.join("\n"));
    if !done.join("Makefile").is_file() || !stamped {
        unpack_package(name, &version, &dir, &wanted, apt_options)?;
        std::fs::write(&stamp, wanted.join("\n"))
            .map_err(|e| KernelCError::input(format!("{}: {e}", stamp.display())))?;
    }
    let mut source = read_path(&done).map_err(|e| match e {
        KernelCError::Input(m) => KernelCError::Input(m.replace(&done.display().to_string(), name)),
        other => other,
    })?;
    source.origin = format!("{name} {version}");
    source.package_version = Some(version);
    Ok(source)
}

/// The Debian sources the cache holds unpacked (`read_package` made them): each package's
/// name, version and tree of files, in no particular order.
pub fn cached_packages(cache: &Path) -> Vec<(String, String, PathBuf)> {
    std::fs::read_dir(cache.join("packages"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let dir_name = e.file_name().to_string_lossy().into_owned();
            let (package, version) = dir_name.split_once('_')?;
            let files = e.path().join("files");
            files
                .join(GROUP_CPUS)
                .is_file()
                .then(|| (package.to_string(), version.to_string(), files))
        })
        .collect()
}

/// An apt program with the user's `-o` options.
fn apt(prog: &str, apt_options: &[String]) -> Command {
    let mut c = Command::new(prog);
    for o in apt_options {
        c.arg("-o").arg(o);
    }
    c
}

/// The version of `name` apt would download.
fn package_version(name: &str, apt_options: &[String]) -> Result<String, KernelCError> {
    let shown = run(
        apt("apt-cache", apt_options).args(["show", "--no-all-versions", name]),
        &format!("apt-cache show {name}"),
    )
    .map_err(|e| KernelCError::input(format!("{e} (is {name} in the apt sources? run apt-get update)")))?;
    Ok(shown
        .lines()
        .find_map(|l| l.strip_prefix("Version: "))
        .ok_or_else(|| KernelCError::input(format!("apt-cache show {name}: no Version")))?
        .trim()
        .to_string())
}

/// An empty directory at `path` (whatever was there removed).
fn fresh_dir(path: &Path) -> Result<(), KernelCError> {
    let _ = std::fs::remove_dir_all(path);
    std::fs::create_dir_all(path).map_err(|e| KernelCError::input(format!("{}: {e}", path.display())))
}

/// The first entry of `dir` that `pick` takes, or `missing` as the error.
fn first_entry(dir: &Path, pick: impl Fn(&Path) -> bool, missing: String) -> Result<PathBuf, KernelCError> {
    std::fs::read_dir(dir)
        .map_err(|e| KernelCError::input(format!("{}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| pick(p))
        .ok_or_else(|| KernelCError::input(missing))
}

/// Download `name=version` into `dir` and leave the `wanted` files of its source tarball in
/// `dir/files` (the tree's top directory renamed), the scratch directories removed.
fn unpack_package(
    name: &str,
    version: &str,
    dir: &Path,
    wanted: &[String],
    apt_options: &[String],
) -> Result<(), KernelCError> {
    let dl = dir.join("download");
    std::fs::create_dir_all(&dl).map_err(|e| KernelCError::input(format!("{}: {e}", dl.display())))?;
    run(
        apt("apt-get", apt_options)
            .current_dir(&dl)
            .args(["download", "-q"])
            .arg(format!("{name}={version}")),
        &format!("apt-get download {name}"),
    )?;
    let deb = first_entry(
        &dl,
        |p| p.extension().is_some_and(|x| x == "deb"),
        format!("apt-get download {name} wrote no .deb"),
    )?;
    let x = dir.join("x");
    fresh_dir(&x)?;
    run(
        Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&x),
        &format!("dpkg-deb -x {}", deb.display()),
    )?;
    let tarball = first_entry(
        &x.join("usr/src"),
        |p| p.to_string_lossy().ends_with(".tar.xz"),
        format!("{name}: no usr/src/*.tar.xz in the package"),
    )?;
    let t = dir.join("t");
    fresh_dir(&t)?;
    // Only these files leave the tarball; a tree before v6.3 has no lib/group_cpus.c.
    let _ = run(
        Command::new("tar")
            .arg("-xJf")
            .arg(&tarball)
            .arg("-C")
            .arg(&t)
            .args(["--wildcards", "--no-wildcards-match-slash"])
            .args(wanted),
        &format!("tar -xJf {}", tarball.display()),
    );
    let top = first_entry(&t, |p| p.is_dir(), format!("{name}: the source tarball holds no tree"))?;
    let done = dir.join("files");
    let _ = std::fs::remove_dir_all(&done);
    std::fs::rename(&top, &done).map_err(|e| KernelCError::input(format!("{}: {e}", done.display())))?;
    for scratch in [&x, &t, &dl] {
        let _ = std::fs::remove_dir_all(scratch);
    }
    Ok(())
}

/// The subject of a mailed patch (its `Subject:` header, unfolded), or `None` for a bare diff.
pub(crate) fn mail_subject(text: &str) -> Option<String> {
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if l.is_empty() || l.starts_with("diff ") || l.starts_with("--- ") {
            return None;
        }
        if let Some(s) = l.strip_prefix("Subject:") {
            let mut subject = s.trim().to_string();
            for more in lines.by_ref() {
                if more.starts_with([' ', '\t']) {
                    subject.push(' ');
                    subject.push_str(more.trim());
                } else {
                    break;
                }
            }
            return Some(subject);
        }
    }
    None
}

/// Read the patches the user named.
pub(crate) fn read_patches(paths: &[PathBuf]) -> Result<Vec<Patch>, KernelCError> {
    if paths.len() > PATCHES_MAX {
        return Err(KernelCError::input(format!(
            "{} patches; at most {PATCHES_MAX}",
            paths.len()
        )));
    }
    paths
        .iter()
        .map(|p| {
            let bytes = read_bounded(p)?;
            let text = String::from_utf8_lossy(&bytes);
            let subject = mail_subject(&text).unwrap_or_else(|| {
                p.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            });
            Ok(Patch {
                path: p.clone(),
                subject,
                bytes,
            })
        })
        .collect()
}

/// The files a patch touches (`+++ b/PATH` lines, the `b/` dropped).
pub(crate) fn patched_files(text: &str) -> Vec<String> {
    let mut files: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("+++ "))
        .map(|p| {
            let p = p.split('\t').next().unwrap_or(p).trim();
            p.strip_prefix("b/").unwrap_or(p).to_string()
        })
        .collect();
    files.dedup();
    files
}

/// `lib/group_cpus.c`: every build has it.
pub(crate) const GROUP_CPUS: &str = "lib/group_cpus.c";
/// `lib/sort.c`: a tree's heapsort.
pub(crate) const SORT: &str = "lib/sort.c";
/// `kernel/irq/affinity.c`: `irq_create_affinity_masks()`, `irq_calc_affinity_vectors()`.
pub(crate) const AFFINITY: &str = "kernel/irq/affinity.c";
/// `block/blk-mq-cpumap.c`: `blk_mq_map_queues()`, `blk_mq_map_hw_queues()`.
pub(crate) const BLK_MQ_CPUMAP: &str = "block/blk-mq-cpumap.c";

/// The files a build compiles from a tree; a patch may touch only these (a change to any
/// other file would not be built, so it is refused rather than silently dropped, unless it is
/// documentation).
pub(crate) const BUILT_FILES: [&str; 4] = [GROUP_CPUS, SORT, AFFINITY, BLK_MQ_CPUMAP];

/// The files a patch changes must be ones a build compiles and the source has (documentation
/// aside, which patch skips).
fn check_patched_files(scratch: &Path, patch: &Patch, files: &[String]) -> Result<(), KernelCError> {
    if files.is_empty() {
        return Err(KernelCError::input(format!(
            "patch {}: no diff in it (a unified diff or a mail holding one)",
            patch.path.display()
        )));
    }
    for f in files {
        if BUILT_FILES.contains(&f.as_str()) && !scratch.join(f).is_file() {
            return Err(KernelCError::input(format!(
                "patch {}: changes {f}, which the source does not have (give the kernel \
                 tree the patch is against)",
                patch.path.display()
            )));
        }
        let doc = f.starts_with("Documentation/") || f == "MAINTAINERS";
        if !BUILT_FILES.contains(&f.as_str()) && !doc {
            return Err(KernelCError::input(format!(
                "patch {}: changes {f}; kernel-c builds only {} (split the patch, or \
                 leave that part out)",
                patch.path.display(),
                BUILT_FILES.join(", ")
            )));
        }
    }
    Ok(())
}

/// What `patch` said of each file: the hunks that failed (or a patch already applied), and
/// the hunks it applied elsewhere than the patch says or with fuzz, as `FILE: Hunk #N …`.
fn read_patch_output(said: &str) -> (Vec<String>, Vec<String>) {
    let (mut file, mut failed, mut inexact) = (String::new(), Vec::new(), Vec::new());
    for line in said.lines() {
        if let Some(f) = line.strip_prefix("patching file ") {
            file = f.trim().trim_matches(['\'', '`']).to_string();
        } else if line.contains("FAILED") && line.starts_with("Hunk #") {
            failed.push(format!("{file}: {}", line.trim_end_matches('.')));
        } else if line.contains("Reversed (or previously applied) patch detected") {
            failed.push(format!(
                "{file}: already applied (the patch is reversed or in the source)"
            ));
        } else if line.starts_with("Hunk #") && (line.contains(" with fuzz ") || line.contains("(offset ")) {
            inexact.push(format!("{file}: {}", line.trim_end_matches('.')));
        }
    }
    (failed, inexact)
}

/// Apply `patches` in order inside `scratch` (a tree layout) with Debian's `patch -p1`. A hunk
/// that does not apply is an error naming the patch, the file and the hunk. A hunk applied at
/// an offset or with fuzz is returned as a note (`SUBJECT: FILE: Hunk #N succeeded at L
/// (offset K lines)`), and with `strict` refused: the tree is not the one the patch was made
/// against.
pub(crate) fn apply_patches(scratch: &Path, patches: &[Patch], strict: bool) -> Result<Vec<String>, KernelCError> {
    let mut notes = Vec::new();
    for patch in patches {
        let text = String::from_utf8_lossy(&patch.bytes);
        check_patched_files(scratch, patch, &patched_files(&text))?;
        let mut cmd = Command::new("patch");
        cmd.current_dir(scratch)
            .args(["-p1", "--batch", "--forward", "--no-backup-if-mismatch", "-r", "-"])
            .arg("-i")
            .arg(&patch.path);
        // Documentation hunks have no file here; patch skips them with --batch and says so.
        let out = cmd.output().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                KernelCError::input("`patch` is not installed (Debian: apt-get install patch)".to_string())
            }
            _ => KernelCError::input(format!("patch: {e}")),
        })?;
        let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        let (failed, inexact) = read_patch_output(&said);
        let built = |f: &&String| BUILT_FILES.iter().any(|b| f.starts_with(b));
        let built_failed: Vec<&String> = failed.iter().filter(built).collect();
        if !built_failed.is_empty() {
            return Err(KernelCError::input(format!(
                "patch {} ({}) does not apply: {}",
                patch.path.display(),
                patch.subject,
                built_failed.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("; ")
            )));
        }
        if !out.status.success() && failed.is_empty() {
            let last = said.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
            let doc_only = said.contains("can't find file to patch");
            if !doc_only {
                return Err(KernelCError::input(format!("patch {}: {last}", patch.path.display())));
            }
        }
        let inexact: Vec<&String> = inexact.iter().filter(built).collect();
        if strict && !inexact.is_empty() {
            return Err(KernelCError::input(format!(
                "patch {} ({}) applies only with an offset or fuzz (--strict): {}",
                patch.path.display(),
                patch.subject,
                inexact.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("; ")
            )));
        }
        notes.extend(inexact.iter().map(|n| format!("{}: {n}", patch.subject)));
    }
    Ok(notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_subjects() {
        let mk = "# SPDX\nVERSION = 7\nPATCHLEVEL = 2\nSUBLEVEL = 13\nEXTRAVERSION =\nNAME = x\n";
        assert_eq!(makefile_version(mk).as_deref(), Some("7.2.13"));
        assert_eq!(major_minor("6.12.117"), Some((6, 12)));
        let mail = "From x Mon Sep 17 00:00:00 2001\nFrom: A <a@b>\nSubject: [PATCH v2] lib/group_cpus:\n rotate extras\nDate: now\n\nbody\n";
        assert_eq!(
            mail_subject(mail).as_deref(),
            Some("[PATCH v2] lib/group_cpus: rotate extras")
        );
        assert_eq!(mail_subject("--- a/lib/group_cpus.c\n+++ b/lib/group_cpus.c\n"), None);
        assert_eq!(
            patched_files("--- a/lib/group_cpus.c\n+++ b/lib/group_cpus.c\t2020\n@@ -1 +1 @@\n"),
            ["lib/group_cpus.c"]
        );
        assert!(is_package_name("linux-source-6.12"));
        let said = "patching file lib/group_cpus.c\nHunk #1 succeeded at 420 (offset 3 lines).\n\
                    Hunk #2 succeeded at 500 with fuzz 1.\nHunk #3 succeeded.\npatching file kernel/irq/affinity.c\n\
                    Hunk #1 FAILED at 12.\n";
        let (failed, inexact) = read_patch_output(said);
        assert_eq!(failed, ["kernel/irq/affinity.c: Hunk #1 FAILED at 12"]);
        assert_eq!(
            inexact,
            [
                "lib/group_cpus.c: Hunk #1 succeeded at 420 (offset 3 lines)",
                "lib/group_cpus.c: Hunk #2 succeeded at 500 with fuzz 1"
            ]
        );
        assert!(!is_package_name("./linux-source-6.12"));
    }
}
