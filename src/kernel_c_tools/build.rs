//! `kernel-c build`: a source and its patches compiled with `cc` against irqscope's stand-ins
//! into a harness executable, cached under `cache/builds/ID/` by the hash of everything that
//! went into it, and named under `cache/names/NAME`.
//!
//! The stand-in headers, the harness and irqscope's own heapsort are embedded in the binary
//! (`kernel-c/` in the repository) and written next to each build, so a build works from any
//! directory and records exactly the stand-ins it used.

use super::source::{self, Patch, Source};
use crate::kernel::{SortGen, Stage};
use crate::kernel_c::{exec, sha256_hex, valid_name, Built, KernelCError, Provenance};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The stand-ins and the harness (path inside the build directory, contents).
pub(crate) const KC_FILES: &[(&str, &str)] = &[
    ("harness.c", include_str!("../../kernel-c/harness.c")),
    ("sort.c", include_str!("../../kernel-c/sort.c")),
    ("stage_affinity.c", include_str!("../../kernel-c/stage_affinity.c")),
    ("stage_blk_mq.c", include_str!("../../kernel-c/stage_blk_mq.c")),
    (
        "include/irqscope_kc.h",
        include_str!("../../kernel-c/include/irqscope_kc.h"),
    ),
];

/// The `<linux/...>` headers the stand-ins provide; each is written into the build as one line,
/// `#include <irqscope_kc.h>`. A header not listed is missing on purpose, so a build names it.
pub(crate) const LINUX_HEADERS: &[&str] = &[
    "atomic",
    "bitmap",
    "bitops",
    "bug",
    "build_bug",
    "compiler",
    "cpu",
    "cpuhotplug",
    "cpumask",
    "device/bus",
    "export",
    "gfp",
    "group_cpus",
    "init",
    "interrupt",
    "kernel",
    "log2",
    "math",
    "minmax",
    "mm",
    "module",
    "nodemask",
    "numa",
    "printk",
    "sched",
    "sched/isolation",
    "slab",
    "smp",
    "sort",
    "string",
    "threads",
    "topology",
    "types",
];

/// The block layer's own headers `block/blk-mq-cpumap.c` includes as `"blk.h"` and
/// `"blk-mq.h"`; each is written into the build's include directory as the same one line.
pub(crate) const LOCAL_HEADERS: &[&str] = &["blk.h", "blk-mq.h"];

/// The flags of every compile: the kernel's `-fno-strict-aliasing -fwrapv`, at `-O2`.
const CFLAGS: &[&str] = &[
    "-O2",
    "-g",
    "-std=gnu11",
    "-fno-strict-aliasing",
    "-fwrapv",
    "-Werror=implicit-function-declaration",
    "-Werror=implicit-int",
];

/// How the compiler reports (not part of a build's key: they change no code): one line per
/// diagnostic, never the source line under it (which could hold an included file's text),
/// and no more errors than are shown.
const DIAGNOSTIC_FLAGS: &[&str] = &[
    "-fdiagnostics-plain-output",
    "-fno-diagnostics-show-caret",
    "-fmax-errors=40",
];

/// Most lines of compiler output shown, and the most characters of each.
const COMPILER_LINES_MAX: usize = 40;
const COMPILER_LINE_CHARS_MAX: usize = 200;

/// What to build.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// A kernel tree, a `group_cpus.c`, or a Debian `linux-source-X.Y` package.
    pub source: String,
    /// The name `c:NAME` uses (default: from the source).
    pub name: Option<String>,
    pub patches: Vec<PathBuf>,
    /// apt options for a package (`Dir::Etc::SourceList=...`), as `lab run` takes them.
    pub apt_options: Vec<String>,
    /// The heapsort for a single file without its tree (default heap-v6.11).
    pub sort: Option<SortGen>,
    /// Refuse a patch whose hunks apply only at an offset or with fuzz.
    pub strict: bool,
    pub cache: PathBuf,
}

/// The file-static `atomic_t` a rotation patch counts callers with (the first one declared
/// at file scope), if any.
fn find_counter(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix("static atomic_t ")?;
        let name: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        (!name.is_empty()).then_some(name)
    })
}

/// Which form of `group_cpus_evenly()` the file defines.
fn numgrps_only(text: &str) -> bool {
    let squashed: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    squashed.contains("group_cpus_evenly(unsigned int numgrps)")
}

fn io(path: &Path, e: std::io::Error) -> KernelCError {
    KernelCError::input(format!("{}: {e}", path.display()))
}

/// Build (or find in the cache) a source with its patches.
pub fn build(opts: &BuildOptions) -> Result<Built, KernelCError> {
    let src: Source = if source::is_package_name(&opts.source) {
        source::read_package(&opts.source, &opts.cache, &opts.apt_options)?
    } else {
        source::read_path(Path::new(&opts.source))?
    };
    let patches: Vec<Patch> = source::read_patches(&opts.patches)?;
    if opts.sort.is_some() && src.sort.is_some() {
        return Err(KernelCError::input(
            "--sort is for a single group_cpus.c; a tree's build uses its own lib/sort.c",
        ));
    }
    let name = match &opts.name {
        Some(n) if valid_name(n) => n.clone(),
        Some(n) => {
            return Err(KernelCError::input(format!(
                "name {n:?}: 1 to 64 letters, digits, '.', '_' or '-'"
            )))
        }
        None => default_name(&src, &patches),
    };
    std::fs::create_dir_all(&opts.cache).map_err(|e| io(&opts.cache, e))?;
    // The scratch tree: the user's files are never patched in place.
    let scratch = tempdir(&opts.cache)?;
    let result = build_in(&scratch, &src, &patches, &name, opts);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn default_name(src: &Source, patches: &[Patch]) -> String {
    let base = match (&src.version, &src.package_version) {
        (Some(v), _) => v.clone(),
        (None, _) => "file".into(),
    };
    let mut name = if patches.is_empty() {
        base
    } else {
        format!("{base}-patched")
    };
    name.retain(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    name
}

fn tempdir(cache: &Path) -> Result<PathBuf, KernelCError> {
    let base = exec::scratch_base(cache);
    std::fs::create_dir_all(&base).map_err(|e| io(&base, e))?;
    for i in 0..1000u32 {
        let d = base.join(format!("irqscope-kernel-c-{}-{i}", std::process::id()));
        // A new directory only (never one someone else made), readable by the sandbox's user
        // whatever the umask.
        if std::fs::create_dir(&d).is_ok() {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).map_err(|e| io(&d, e))?;
            return Ok(d);
        }
    }
    Err(KernelCError::input(format!("{}: no scratch directory", base.display())))
}

/// The files of a build after its patches, read back from the scratch tree.
struct Patched {
    /// Hunks applied at an offset or with fuzz.
    notes: Vec<String>,
    group_cpus: Vec<u8>,
    sort: Option<Vec<u8>>,
    affinity: Option<Vec<u8>>,
    blk_mq_cpumap: Option<Vec<u8>>,
}

impl Patched {
    /// Write the source's files into the scratch tree, apply the patches there, read them back.
    fn make(scratch: &Path, src: &Source, patches: &[Patch], strict: bool) -> Result<Patched, KernelCError> {
        let files = [
            (source::GROUP_CPUS, Some(&src.group_cpus)),
            (source::SORT, src.sort.as_ref()),
            (source::AFFINITY, src.affinity.as_ref()),
            (source::BLK_MQ_CPUMAP, src.blk_mq_cpumap.as_ref()),
        ];
        for (rel, bytes) in files {
            if let Some(bytes) = bytes {
                let path = scratch.join(rel);
                let dir = path.parent().expect("a tree path has a directory");
                std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
                std::fs::write(&path, bytes).map_err(|e| io(&path, e))?;
            }
        }
        let notes = source::apply_patches(scratch, patches, strict)?;
        let back = |rel: &str, had: bool| -> Result<Option<Vec<u8>>, KernelCError> {
            let path = scratch.join(rel);
            had.then(|| std::fs::read(&path).map_err(|e| io(&path, e))).transpose()
        };
        Ok(Patched {
            notes,
            group_cpus: back(source::GROUP_CPUS, true)?.unwrap_or_default(),
            sort: back(source::SORT, src.sort.is_some())?,
            affinity: back(source::AFFINITY, src.affinity.is_some())?,
            blk_mq_cpumap: back(source::BLK_MQ_CPUMAP, src.blk_mq_cpumap.is_some())?,
        })
    }

    /// The bytes the build id hashes: the patched source, the sort it is linked with, and the
    /// later stages' files (a single file hashes as builds before stages did).
    fn id_bytes(&self, sort_gen: SortGen) -> Vec<u8> {
        let mut idbytes = self.group_cpus.clone();
        idbytes.extend_from_slice(b"\0sort\0");
        match &self.sort {
            Some(s) => idbytes.extend_from_slice(s),
            None => idbytes.extend_from_slice(sort_gen.name().as_bytes()),
        }
        for (tag, file) in [("affinity", &self.affinity), ("blk-mq-cpumap", &self.blk_mq_cpumap)] {
            if let Some(bytes) = file {
                idbytes.extend_from_slice(format!("\0{tag}\0").as_bytes());
                idbytes.extend_from_slice(bytes);
            }
        }
        idbytes
    }

    /// The stages the tree's files bring beside `group_cpus_evenly()`.
    fn stages(&self) -> Vec<Stage> {
        let has = |file: &Option<Vec<u8>>, f: &str| {
            file.as_ref()
                .is_some_and(|b| String::from_utf8_lossy(b).contains(&format!("{f}(")))
        };
        let mut stages = Vec::new();
        if has(&self.affinity, "irq_create_affinity_masks") {
            stages.extend([Stage::IrqCreateAffinityMasks, Stage::IrqCalcAffinityVectors]);
        }
        if has(&self.blk_mq_cpumap, "blk_mq_map_queues") {
            stages.push(Stage::BlkMqMapQueues);
        }
        if has(&self.blk_mq_cpumap, "blk_mq_map_hw_queues") {
            stages.push(Stage::BlkMqMapHwQueues);
        }
        stages
    }
}

fn build_in(
    scratch: &Path,
    src: &Source,
    patches: &[Patch],
    name: &str,
    opts: &BuildOptions,
) -> Result<Built, KernelCError> {
    let patched = Patched::make(scratch, src, patches, opts.strict)?;
    let sort_gen = opts.sort.unwrap_or(SortGen::HeapV6_11);
    let sort_label = match &patched.sort {
        Some(_) => "lib/sort.c of the tree".to_string(),
        None => format!("irqscope {}", sort_gen.name()),
    };
    // The id pins the code; the cache key adds the stand-ins and the flags, so a new irqscope
    // rebuilds.
    let idbytes = patched.id_bytes(sort_gen);
    let id = sha256_hex(&idbytes);
    let mut keybytes = idbytes;
    for (path, text) in KC_FILES {
        keybytes.extend_from_slice(path.as_bytes());
        keybytes.extend_from_slice(text.as_bytes());
    }
    keybytes.extend_from_slice(CFLAGS.join(" ").as_bytes());
    let key = sha256_hex(&keybytes);
    let text = String::from_utf8_lossy(&patched.group_cpus).into_owned();
    let stages = patched.stages();
    let mut provenance = Provenance {
        name: name.to_string(),
        id,
        origin: src.origin.clone(),
        source_sha256: sha256_hex(&src.group_cpus),
        version: src.version.clone(),
        package_version: src.package_version.clone(),
        patches: patches.iter().map(|p| p.subject.clone()).collect(),
        sort: sort_label,
        counter: find_counter(&text),
        api: if numgrps_only(&text) {
            "group_cpus_evenly(numgrps)".into()
        } else {
            "group_cpus_evenly(numgrps, &nummasks)".into()
        },
        compile_ms: 0,
        stages: stages.iter().map(|s| s.name().to_string()).collect(),
        patch_notes: patched.notes.clone(),
    };
    let dir = opts.cache.join("builds").join(&key);
    let exe = dir.join("harness");
    if !exe.is_file() {
        let started = std::time::Instant::now();
        compile(scratch, &patched, &provenance, &stages, sort_gen)?;
        provenance.compile_ms = started.elapsed().as_millis() as u64;
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        let tmp = dir.join(format!("harness.{}", std::process::id()));
        std::fs::copy(scratch.join("build/harness"), &tmp).map_err(|e| io(&tmp, e))?;
        std::fs::rename(&tmp, &exe).map_err(|e| io(&exe, e))?;
        std::fs::write(dir.join("group_cpus.c"), &patched.group_cpus).map_err(|e| io(&dir, e))?;
    }
    let json = serde_json::to_string_pretty(&provenance).expect("provenance serializes");
    std::fs::write(dir.join("build.json"), json).map_err(|e| io(&dir, e))?;
    let names = opts.cache.join("names");
    std::fs::create_dir_all(&names).map_err(|e| io(&names, e))?;
    std::fs::write(names.join(name), &key).map_err(|e| io(&names, e))?;
    Ok(Built { exe, provenance })
}

/// The stand-ins and the harness written into `work`: the embedded files, and one line per
/// header the stand-ins provide.
fn write_stand_ins(work: &Path) -> Result<(), KernelCError> {
    let stub = "/* irqscope stand-in: everything is in irqscope_kc.h */\n#include <irqscope_kc.h>\n";
    let headers = LINUX_HEADERS
        .iter()
        .map(|h| format!("include/linux/{h}.h"))
        .chain(LOCAL_HEADERS.iter().map(|h| format!("include/{h}")));
    for (path, text) in KC_FILES
        .iter()
        .map(|(p, t)| (p.to_string(), *t))
        .chain(headers.map(|h| (h, stub)))
    {
        let file = work.join(&path);
        let dir = file.parent().expect("a file in the build has a directory");
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        std::fs::write(&file, text).map_err(|e| io(&file, e))?;
    }
    Ok(())
}

/// Run `cc` once (through `kernel_c::exec`): the harness with lib/group_cpus.c included, the
/// sort, and the later stages' files the tree has.
fn compile(
    scratch: &Path,
    patched: &Patched,
    provenance: &Provenance,
    stages: &[Stage],
    sort_gen: SortGen,
) -> Result<(), KernelCError> {
    let work = scratch.join("build");
    write_stand_ins(&work)?;
    let source = |rel: &str| format!("\"{}\"", scratch.join(rel).display());
    let mut args: Vec<OsString> = CFLAGS.iter().chain(DIAGNOSTIC_FLAGS).map(OsString::from).collect();
    args.push("-I".into());
    args.push(work.join("include").into());
    args.push(format!("-DKC_SOURCE={}", source(source::GROUP_CPUS)).into());
    if let Some(c) = &provenance.counter {
        args.push(format!("-DKC_COUNTER={c}").into());
    }
    if provenance.api == "group_cpus_evenly(numgrps)" {
        args.push("-DKC_GCE_NUMGRPS_ONLY".into());
    }
    args.push(work.join("harness.c").into());
    if patched.sort.is_some() {
        args.push(scratch.join(source::SORT).into());
    } else {
        let gen = match sort_gen {
            SortGen::HeapV5_1 => "51",
            SortGen::HeapV6_9 => "69",
            SortGen::HeapV6_11 => "611",
        };
        args.push(format!("-DKC_SORT_GEN={gen}").into());
        args.push(work.join("sort.c").into());
    }
    if stages.contains(&Stage::IrqCreateAffinityMasks) {
        args.push("-DKC_AFFINITY".into());
        args.push(format!("-DKC_AFFINITY_SOURCE={}", source(source::AFFINITY)).into());
        args.push(work.join("stage_affinity.c").into());
    }
    if stages.contains(&Stage::BlkMqMapQueues) {
        args.push("-DKC_BLK_MQ".into());
        if stages.contains(&Stage::BlkMqMapHwQueues) {
            args.push("-DKC_BLK_MQ_HW".into());
        }
        args.push(format!("-DKC_BLK_MQ_SOURCE={}", source(source::BLK_MQ_CPUMAP)).into());
        args.push(work.join("stage_blk_mq.c").into());
    }
    args.push("-o".into());
    args.push(work.join("harness").into());
    let out = exec::compile(scratch, &args).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            KernelCError::Compile("no C compiler: `cc` is not on PATH (Debian: apt-get install gcc)".into())
        }
        // The sandbox cannot be set up: the machine's to fix, said by exec.
        std::io::ErrorKind::Unsupported => KernelCError::Compile(e.to_string()),
        _ => KernelCError::input(format!("cc: {e}")),
    })?;
    if out.status.success() {
        return Ok(());
    }
    let raw = String::from_utf8_lossy(&out.stderr);
    let mut msg = compiler_summary(&raw, scratch, &work);
    if let Some(why) = ended_by_limit(out.status, &raw) {
        msg.push('\n');
        msg.push_str(why);
    }
    Err(KernelCError::input(msg))
}

/// What ended a compile that did not end by itself: its time or its memory (from the exit
/// status and the compiler's own words, which quote no file).
fn ended_by_limit(status: std::process::ExitStatus, raw: &str) -> Option<&'static str> {
    use std::os::unix::process::ExitStatusExt;
    // bwrap passes on a signal that ended the compiler as 128 + the signal.
    let signal = status
        .signal()
        .or_else(|| status.code().filter(|c| (129..160).contains(c)).map(|c| c - 128));
    let memory = ["out of memory", "memory exhausted", "cannot allocate memory"];
    match signal {
        Some(9) | Some(24) => Some("the compile was stopped at its time limit"),
        Some(_) => Some("the compiler was ended by a signal (its memory or file-size limit)"),
        None if memory.iter().any(|m| raw.to_ascii_lowercase().contains(m)) => {
            Some("the compiler ran out of memory (its address-space limit)")
        }
        None if raw.contains("signal terminated program") => {
            Some("the compiler was ended by a signal (its memory, time or file-size limit)")
        }
        None => None,
    }
}

/// What a compiler diagnostic says the tree needs that the stand-ins lack ("includes `<h>`",
/// "calls f()", "uses s", "links against s"), if it says so.
fn lacking(line: &str) -> Option<String> {
    let quoted = |l: &str| l.split(['‘', '’', '\'', '`']).nth(1).map(str::to_string);
    if let Some(i) = line.find("fatal error: ") {
        let (header, _) = line[i + 13..].split_once(": No such file")?;
        Some(format!("includes <{header}>"))
    } else if line.contains("implicit declaration of function") {
        quoted(line.split("function").nth(1).unwrap_or("")).map(|f| format!("calls {f}()"))
    } else if line.contains("undeclared") && line.contains("error:") {
        quoted(line.split("error:").nth(1).unwrap_or("")).map(|s| format!("uses {s}"))
    } else if line.contains("undefined reference to") {
        quoted(line.split("undefined reference to").nth(1).unwrap_or("")).map(|s| format!("links against {s}"))
    } else {
        None
    }
}

/// The compiler's diagnostics about the scratch tree, its paths taken out, led by one line per
/// header or symbol the stand-ins lack (with the file:line that used it). Only lines that
/// name a file of the tree (or of irqscope's stand-ins) and a line in it are kept, each cut
/// to [`COMPILER_LINE_CHARS_MAX`], at most [`COMPILER_LINES_MAX`] of them: a diagnostic
/// about a file outside the tree (`#include "/etc/..."`) would quote that file's text.
pub(crate) fn compiler_summary(raw: &str, scratch: &Path, work: &Path) -> String {
    let scratch_s = format!("{}/", scratch.display());
    let work_s = format!("{}/", work.display());
    let cleaned = raw.replace(&work_s, "irqscope:").replace(&scratch_s, "");
    let about_tree: Vec<&str> = cleaned.lines().filter(|l| names_a_tree_line(l)).collect();
    let mut missing = Vec::new();
    for line in &about_tree {
        let at = |l: &str| {
            let mut parts = l.splitn(3, ':');
            match (parts.next(), parts.next()) {
                (Some(f), Some(n)) if n.chars().all(|c| c.is_ascii_digit()) => format!("{f}:{n}"),
                _ => String::new(),
            }
        };
        if let Some(what) = lacking(line) {
            missing.push(format!(
                "{}: {what}, which irqscope's stand-ins do not provide",
                at(line)
            ));
        }
    }
    missing.dedup();
    let mut msg = String::from("the C does not compile against irqscope's stand-ins");
    for m in missing.iter().take(COMPILER_LINES_MAX) {
        msg.push_str("\n  ");
        msg.extend(m.chars().take(COMPILER_LINE_CHARS_MAX));
    }
    msg.push_str("\ncompiler output (its diagnostics about the tree):\n");
    for line in about_tree.iter().take(COMPILER_LINES_MAX) {
        msg.extend(line.chars().take(COMPILER_LINE_CHARS_MAX));
        msg.push('\n');
    }
    let left = about_tree.len().saturating_sub(COMPILER_LINES_MAX);
    let dropped = cleaned.lines().count() - about_tree.len();
    if left > 0 {
        msg.push_str(&format!("[{left} more lines about the tree left out]\n"));
    }
    if dropped > 0 {
        msg.push_str(&format!(
            "[{dropped} other lines left out: context, and files outside the tree]\n"
        ));
    }
    msg.truncate(msg.trim_end().len());
    msg
}

/// Whether a compiler line is a diagnostic about a line of a file in the scratch tree (its
/// path made relative, `lib/group_cpus.c:40:9: error: ...`; a link error of `-g` code,
/// `lib/group_cpus.c:40:(.text+0x1): undefined reference ...`) or of irqscope's stand-ins
/// (`irqscope:include/irqscope_kc.h:12:3: ...`).
fn names_a_tree_line(line: &str) -> bool {
    let line = line.strip_prefix("irqscope:").unwrap_or(line);
    let mut parts = line.splitn(3, ':');
    let (Some(file), Some(n), Some(_)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    !file.is_empty()
        && !file.starts_with('/')
        && !file.split('/').any(|c| c == ".." || c.is_empty())
        && file.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-/".contains(&b))
        && !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_and_api_detection() {
        let src = "static int x;\nstatic atomic_t group_spread_cnt = ATOMIC_INIT(0);\nstruct cpumask *group_cpus_evenly(unsigned int numgrps)\n{";
        assert_eq!(find_counter(src).as_deref(), Some("group_spread_cnt"));
        assert!(numgrps_only(src));
        assert!(!numgrps_only(
            "struct cpumask *group_cpus_evenly(unsigned int numgrps, unsigned int *nummasks)"
        ));
        assert_eq!(find_counter("static void f(void);"), None);
    }

    #[test]
    fn compiler_messages_name_what_is_missing() {
        let raw = "/s/lib/group_cpus.c:12:10: fatal error: linux/foo.h: No such file or directory\n\
                   /s/lib/group_cpus.c:40:9: error: implicit declaration of function ‘bar’ [-Werror=implicit-function-declaration]\n\
                   /s/lib/group_cpus.c:41:9: error: ‘BAZ’ undeclared (first use in this function)\n";
        let m = compiler_summary(raw, Path::new("/s"), Path::new("/s/build"));
        assert!(m.contains("lib/group_cpus.c:12: includes <linux/foo.h>"), "{m}");
        assert!(m.contains("lib/group_cpus.c:40: calls bar()"), "{m}");
        assert!(m.contains("lib/group_cpus.c:41: uses BAZ"), "{m}");
        assert!(!m.contains("/s/"), "{m}");
    }

    #[test]
    fn compiler_output_keeps_only_diagnostics_about_the_tree_and_is_bounded() {
        let raw = "In file included from /s/lib/group_cpus.c:11:\n\
                   /etc/secret:1:5: error: unknown type name 'TOKEN'\n\
                   \x20   1 | TOKEN\n\
                   /s/lib/group_cpus.c:12:10: error: expected ';' before '}' token\n\
                   /s/build/include/irqscope_kc.h:3:1: note: declared here\n\
                   cc1: note: TOKEN\n";
        let m = compiler_summary(raw, Path::new("/s"), Path::new("/s/build"));
        assert!(m.contains("\nlib/group_cpus.c:12:10: error: expected"), "{m}");
        assert!(m.contains("\nirqscope:include/irqscope_kc.h:3:1: note"), "{m}");
        assert!(!m.contains("TOKEN") && !m.contains("/etc/secret"), "{m}");
        let many: String = (1..=100)
            .map(|i| format!("/s/lib/group_cpus.c:{i}:1: error: {}\n", "x".repeat(500)))
            .collect();
        let m = compiler_summary(&many, Path::new("/s"), Path::new("/s/build"));
        assert!(m.lines().count() <= COMPILER_LINES_MAX + 3, "{m}");
        assert!(m.lines().all(|l| l.chars().count() <= COMPILER_LINE_CHARS_MAX), "{m}");
        assert!(m.contains("[60 more lines about the tree left out]"), "{m}");
    }
}
