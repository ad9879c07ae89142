//! Boot a kernel in QEMU on a lab machine and bring back the agent's captures.
//!
//! One boot: build the initramfs (busybox, `lab/init.sh`, `irqscope-agent` and the libraries
//! it links, the NVMe modules in dependency order), start `qemu-system-x86_64` with three
//! serial ports (console, capture as probed, capture after binding the controllers one at a
//! time), follow the console for progress, and accept the boot only when the guest said
//! `lab: done` and both captures parse as the agent's versioned format. A boot that did not
//! finish is tried again: multi-threaded TCG now and then kills a guest with `Oops: int3` while
//! the kernel patches its own text (seen on Debian's 6.12 and 7.2 kernels).

use super::initramfs::{self, Entry};
use super::qemu::{self, Accel, BootFiles, GuestMachine};
use crate::live::protocol::Capture;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The guest's PID 1.
pub(crate) const INIT_SCRIPT: &str = include_str!("../../lab/init.sh");
/// Largest capture read back from a serial port file.
pub(crate) const CAPTURE_BYTES_MAX: u64 = 64 << 20;
/// Most boots of one run (the first and its retries).
pub const TRIES_MAX: u32 = 20;
/// Size of each controller's (empty, sparse) disk image.
const DISK_BYTES: u64 = 16 << 20;

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The input cannot be booted (a refused machine, a missing file): exit 2.
    #[error("{0}")]
    Input(String),
    /// The boots ran and did not produce a complete capture: exit 1.
    #[error("{0}")]
    Boot(String),
}

fn input(msg: impl Into<String>) -> LabError {
    LabError::Input(msg.into())
}

/// How the accelerator is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccelChoice {
    /// KVM when `/dev/kvm` opens on a CPU with hardware virtualization and QEMU runs the guest
    /// with it, TCG otherwise.
    Auto,
    Only(Accel),
}

/// The kernel to boot.
#[derive(Debug, Clone)]
pub enum KernelSource {
    /// A bzImage, and the `lib/modules/VERSION` tree of the same build when NVMe is a module.
    Image { image: PathBuf, modules: Option<PathBuf> },
    /// A Debian package (`linux-image-*`, or the `linux-binary-*` part of a split kernel),
    /// fetched with `apt-get download` and unpacked with `dpkg-deb -x`.
    Package(String),
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub kernel: KernelSource,
    pub machine: GuestMachine,
    /// `max_ioqpairs` of each controller, in PCI order.
    pub ioqpairs: Vec<u32>,
    pub agent: PathBuf,
    pub busybox: PathBuf,
    pub qemu: String,
    /// Modules to load (dependencies added); `None`: `nvme` when the tree has it.
    pub modules: Option<Vec<String>>,
    pub accel: AccelChoice,
    pub cpu: Option<String>,
    pub append: String,
    /// Scratch: kernels, disks, the initramfs.
    pub work_dir: PathBuf,
    /// Output prefix: PREFIX.boot.agent.json, PREFIX.seq.agent.json, PREFIX.console.
    pub output: PathBuf,
    pub retries: u32,
    pub timeout: Duration,
    /// `-o` options for apt-get (a private sources list for kernels of another release).
    pub apt_options: Vec<String>,
}

/// What a successful run wrote.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub boot_capture: PathBuf,
    pub seq_capture: PathBuf,
    pub console: PathBuf,
    pub accel: Accel,
    /// Boots started, the successful one included.
    pub tries: u32,
    /// Wall time of the successful boot.
    pub wall: Duration,
    pub kernel_release: String,
    /// The Debian package booted (a pattern resolved to its newest match), if one was.
    pub package: Option<String>,
}

fn run_tool(cmd: &mut Command, what: &str) -> Result<String, LabError> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| input(format!("{what}: {e} (is it installed?)")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("failed");
        return Err(input(format!("{what}: {line}")));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A Debian package name as apt accepts it (no options, no paths).
fn valid_package_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.~:".contains(&b))
}

/// Does `name` match `pattern`, where each `*` stands for a version number (a digit, then digits
/// and dots)? On a match, the version numbers the stars took, in order.
fn match_version_pattern(pattern: &str, name: &str) -> Option<Vec<String>> {
    fn go(pattern: &[u8], name: &[u8], taken: &mut Vec<String>) -> bool {
        let Some(star) = pattern.iter().position(|&b| b == b'*') else {
            return pattern == name;
        };
        let (literal, rest) = (&pattern[..star], &pattern[star + 1..]);
        let Some(tail) = name.strip_prefix(literal) else {
            return false;
        };
        if !tail.first().is_some_and(u8::is_ascii_digit) {
            return false;
        }
        let run = tail
            .iter()
            .position(|b| !(b.is_ascii_digit() || *b == b'.'))
            .unwrap_or(tail.len());
        // Longest version first; a shorter one when the rest of the pattern needs its digits.
        for len in (1..=run).rev() {
            taken.push(String::from_utf8_lossy(&tail[..len]).into_owned());
            if go(rest, &tail[len..], taken) {
                return true;
            }
            taken.pop();
        }
        false
    }
    let mut taken = Vec::new();
    go(pattern.as_bytes(), name.as_bytes(), &mut taken).then_some(taken)
}

/// A version number as numbers, for ordering (`6.12.117` after `6.12.99`).
fn version_key(version: &str) -> Vec<u64> {
    version.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

/// The package a name stands for: itself, or for a pattern (`linux-image-6.1.0-*-amd64`, each
/// `*` a version number) the newest match the apt index has (`apt-cache search`, with the given
/// apt options). Debian replaces kernel ABIs every few weeks, so a pinned name stops
/// downloading; a pattern keeps working.
pub fn resolve_package(pattern: &str, apt_options: &[String]) -> Result<String, LabError> {
    if !pattern.contains('*') {
        return Ok(pattern.to_string());
    }
    if !valid_package_name(&pattern.replace('*', "0")) {
        return Err(input(format!(
            "{pattern:?} is not a package pattern (a package name where each * stands for a version number)"
        )));
    }
    // apt's search takes a POSIX extended regular expression over package names.
    let mut regex = String::from("^");
    for c in pattern.chars() {
        match c {
            '*' => regex.push_str("[0-9][0-9.]*"),
            '.' | '+' => {
                regex.push('\\');
                regex.push(c);
            }
            c => regex.push(c),
        }
    }
    regex.push('$');
    let mut apt = Command::new("apt-cache");
    for o in apt_options {
        apt.arg("-o").arg(o);
    }
    apt.args(["search", "--names-only", &regex]);
    let listed = run_tool(&mut apt, &format!("apt-cache search {pattern}"))?;
    let newest = listed
        .lines()
        .filter_map(|l| l.split(' ').next())
        .filter_map(|name| {
            match_version_pattern(pattern, name).map(|v| (v.iter().map(|s| version_key(s)).collect::<Vec<_>>(), name))
        })
        .max();
    match newest {
        Some((_, name)) => Ok(name.to_string()),
        None => Err(input(format!(
            "no package in the apt index matches {pattern} (run apt-get update{})",
            if apt_options.is_empty() {
                ""
            } else {
                " with the same --apt-option values"
            }
        ))),
    }
}

/// Download and unpack a kernel package (cached under `work_dir/kernels`); the image and its
/// module tree.
pub(crate) fn fetch_package(
    name: &str,
    work_dir: &Path,
    apt_options: &[String],
    progress: &mut dyn FnMut(&str),
) -> Result<(PathBuf, Option<PathBuf>), LabError> {
    if !valid_package_name(name) {
        return Err(input(format!(
            "{name:?} is neither a kernel image file nor a package name"
        )));
    }
    let dir = work_dir.join("kernels").join(name);
    let root = dir.join("root");
    if !root.is_dir() {
        std::fs::create_dir_all(&dir).map_err(|e| input(format!("{}: {e}", dir.display())))?;
        progress(&format!("downloading {name}"));
        let mut apt = Command::new("apt-get");
        apt.current_dir(&dir).arg("-q");
        for o in apt_options {
            apt.arg("-o").arg(o);
        }
        apt.arg("download").arg(name);
        run_tool(&mut apt, &format!("apt-get download {name}"))?;
        let deb = std::fs::read_dir(&dir)
            .map_err(|e| input(format!("{}: {e}", dir.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "deb"))
            .ok_or_else(|| input(format!("apt-get download {name} wrote no .deb")))?;
        let tmp = dir.join("root.tmp");
        let _ = std::fs::remove_dir_all(&tmp);
        run_tool(
            Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&tmp),
            &format!("dpkg-deb -x {}", deb.display()),
        )?;
        std::fs::rename(&tmp, &root).map_err(|e| input(format!("{}: {e}", root.display())))?;
        let _ = std::fs::remove_file(&deb);
    }
    find_kernel(&root).ok_or_else(|| {
        input(format!(
            "{name} holds no kernel image (since 7.x Debian splits a kernel: the image is in \
             linux-binary-unsigned-VERSION, usr/lib/modules/VERSION/vmlinuz.unsigned)"
        ))
    })
}

/// The image and module tree of an unpacked kernel package: `boot/vmlinuz-*` with
/// `lib/modules/*`, or the split layout's `usr/lib/modules/*/vmlinuz*`.
fn find_kernel(root: &Path) -> Option<(PathBuf, Option<PathBuf>)> {
    let list = |d: PathBuf| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        v.sort();
        v
    };
    let moddirs: Vec<PathBuf> = ["lib/modules", "usr/lib/modules"]
        .iter()
        .flat_map(|d| list(root.join(d)))
        .filter(|p| p.is_dir())
        .collect();
    let image = list(root.join("boot"))
        .into_iter()
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("vmlinuz"))
        })
        .or_else(|| {
            moddirs.iter().flat_map(|d| list(d.clone())).find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("vmlinuz"))
                    && p.is_file()
            })
        })?;
    let modules = moddirs.into_iter().find(|d| d.join("kernel").is_dir());
    Some((image, modules))
}

fn read_file(path: &Path, what: &str) -> Result<Vec<u8>, LabError> {
    let meta = std::fs::metadata(path).map_err(|e| input(format!("{what} {}: {e}", path.display())))?;
    if meta.len() > initramfs::FILE_BYTES_MAX {
        return Err(input(format!(
            "{what} {}: larger than {} bytes",
            path.display(),
            initramfs::FILE_BYTES_MAX
        )));
    }
    std::fs::read(path).map_err(|e| input(format!("{what} {}: {e}", path.display())))
}

/// A module's bytes, decompressed when the tree stores it compressed.
fn read_module(path: &Path) -> std::io::Result<Vec<u8>> {
    let name = path.to_string_lossy();
    let tool = if name.ends_with(".xz") {
        Some("xz")
    } else if name.ends_with(".zst") {
        Some("zstd")
    } else if name.ends_with(".gz") {
        Some("gzip")
    } else {
        None
    };
    match tool {
        None => std::fs::read(path),
        Some(t) => {
            let out = Command::new(t).arg("-dc").arg(path).stdin(Stdio::null()).output()?;
            if !out.status.success() {
                return Err(std::io::Error::other(format!("{t} -dc failed")));
            }
            Ok(out.stdout)
        }
    }
}

/// The agent without its debug information when `strip` is there (a debug build is mostly
/// DWARF, which the guest never reads), else as it is.
fn stripped(agent: &Path) -> Result<Vec<u8>, LabError> {
    let tmp = std::env::temp_dir().join(format!("irqscope-agent-stripped-{}", std::process::id()));
    let ok = Command::new("strip")
        .arg("--strip-debug")
        .arg("-o")
        .arg(&tmp)
        .arg(agent)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let data = if ok {
        read_file(&tmp, "irqscope-agent")
    } else {
        read_file(agent, "irqscope-agent")
    };
    let _ = std::fs::remove_file(&tmp);
    data
}

/// The libraries `ldd` says a binary loads (none for a static one).
fn libraries(binary: &Path) -> Vec<String> {
    match Command::new("ldd").arg(binary).stdin(Stdio::null()).output() {
        Ok(out) if out.status.success() => initramfs::ldd_paths(&String::from_utf8_lossy(&out.stdout)),
        _ => Vec::new(),
    }
}

/// Build the initramfs image for a module tree; returns its bytes.
pub(crate) fn build_initramfs(
    agent: &Path,
    busybox: &Path,
    moddir: Option<&Path>,
    modules: Option<&[String]>,
) -> Result<Vec<u8>, LabError> {
    let mut entries = Vec::new();
    for d in [
        "bin",
        "dev",
        "proc",
        "sys",
        "tmp",
        "etc",
        "etc/lab",
        "lib",
        "lib/modules",
    ] {
        entries.push(Entry::Dir(d.to_string()));
    }
    entries.push(Entry::File {
        path: "init".into(),
        mode: 0o755,
        data: INIT_SCRIPT.as_bytes().to_vec(),
    });
    entries.push(Entry::File {
        path: "bin/busybox".into(),
        mode: 0o755,
        data: read_file(busybox, "busybox")?,
    });
    entries.push(Entry::Symlink {
        path: "bin/sh".into(),
        target: "busybox".into(),
    });
    entries.push(Entry::File {
        path: "bin/irqscope-agent".into(),
        mode: 0o755,
        data: stripped(agent)?,
    });
    // A dynamically linked agent (or busybox) brings its libraries, at the same paths.
    let mut libs = libraries(agent);
    libs.extend(libraries(busybox));
    libs.sort();
    libs.dedup();
    for d in initramfs::parent_dirs(libs.iter().map(String::as_str)) {
        if !matches!(d.as_str(), "lib" | "bin" | "etc") {
            entries.push(Entry::Dir(d));
        }
    }
    for lib in &libs {
        let data = read_file(Path::new(lib), "library")?;
        entries.push(Entry::File {
            path: lib.trim_start_matches('/').to_string(),
            mode: 0o755,
            data,
        });
    }
    let mut list = String::new();
    if let Some(dir) = moddir {
        let index = initramfs::index_modules(dir).map_err(|e| input(format!("{}: {e}", dir.display())))?;
        let wanted: Vec<String> = match modules {
            Some(m) => m.to_vec(),
            None if index.contains_key("nvme") => vec!["nvme".into()],
            None => Vec::new(),
        };
        let order = initramfs::module_order(&wanted, &index, &mut read_module).map_err(input)?;
        for path in order {
            let name = initramfs::module_name(&path).unwrap_or_default();
            let data = read_module(&path).map_err(|e| input(format!("{}: {e}", path.display())))?;
            entries.push(Entry::File {
                path: format!("lib/modules/{name}.ko"),
                mode: 0o644,
                data,
            });
            list.push_str(&format!("{name}.ko\n"));
        }
    } else if modules.is_some_and(|m| !m.is_empty()) {
        return Err(input("modules to load need the kernel's module tree (--modules-dir)"));
    }
    entries.push(Entry::File {
        path: "etc/lab/modules".into(),
        mode: 0o644,
        data: list.into_bytes(),
    });
    initramfs::cpio_gz(&entries).map_err(|e| input(format!("building the initramfs: {e}")))
}

/// Whether KVM can run a guest here: `/dev/kvm` opens and the CPU has hardware
/// virtualization (`vmx` or `svm`); a `/dev/kvm` without either (an emulated one) accepts QEMU
/// and then hangs or stops the guest.
fn kvm_usable() -> bool {
    let opens = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok();
    let flags = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    opens
        && flags
            .lines()
            .filter(|l| l.starts_with("flags"))
            .any(|l| l.split_whitespace().any(|f| f == "vmx" || f == "svm"))
}

fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// A capture file read back and checked: the agent's versioned format, valid snapshots.
pub fn read_capture(path: &Path) -> Result<Capture, String> {
    let mut text = String::new();
    std::fs::File::open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .take(CAPTURE_BYTES_MAX + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if text.len() as u64 > CAPTURE_BYTES_MAX {
        return Err(format!("{}: larger than {CAPTURE_BYTES_MAX} bytes", path.display()));
    }
    let capture: Capture = serde_json::from_str(text.trim()).map_err(|e| format!("{}: {e}", path.display()))?;
    if capture.snapshots.is_empty() {
        return Err(format!("{}: no snapshot", path.display()));
    }
    for s in &capture.snapshots {
        s.check().map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(capture)
}

enum Outcome {
    Done {
        wall: Duration,
    },
    /// QEMU could not start with KVM.
    NoKvm(String),
    Failed(String),
}

/// One boot: start QEMU, follow the console, wait for the end or the timeout.
fn boot_once(args: &[String], opts: &RunOptions, files: &BootFiles, progress: &mut dyn FnMut(&str)) -> Outcome {
    for f in [&files.console, &files.boot_capture, &files.seq_capture] {
        let _ = std::fs::remove_file(f);
    }
    let qemu_log = with_suffix(&opts.output, ".qemu.log");
    let log = match std::fs::File::create(&qemu_log) {
        Ok(f) => f,
        Err(e) => return Outcome::Failed(format!("{}: {e}", qemu_log.display())),
    };
    let t0 = Instant::now();
    let mut child = match Command::new(&opts.qemu)
        .args(args)
        .stdin(Stdio::null())
        .stdout(log.try_clone().map(Stdio::from).unwrap_or_else(|_| Stdio::null()))
        .stderr(log)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return Outcome::Failed(format!("{}: {e} (install qemu-system-x86)", opts.qemu)),
    };
    let mut offset = 0u64;
    let mut partial = String::new();
    let mut done = false;
    let mut oops = None;
    let status = loop {
        // Progress: the init script's "lab: " lines, and the first sign of a dying kernel.
        if let Ok(mut f) = std::fs::File::open(&files.console) {
            if f.seek(SeekFrom::Start(offset)).is_ok() {
                let mut buf = Vec::new();
                if let Ok(n) = f.take(1 << 20).read_to_end(&mut buf) {
                    offset += n as u64;
                    partial.push_str(&String::from_utf8_lossy(&buf));
                    while let Some(pos) = partial.find('\n') {
                        let line: String = partial.drain(..=pos).collect();
                        let line = line.trim_end();
                        if let Some(msg) = line.find("lab: ").map(|i| &line[i + 5..]) {
                            progress(&format!("[{:5.1}s] {msg}", t0.elapsed().as_secs_f64()));
                            done |= msg == "done";
                        } else if oops.is_none() && ["Oops", "Kernel panic", "BUG:"].iter().any(|k| line.contains(k)) {
                            progress(&format!("[{:5.1}s] kernel: {line}", t0.elapsed().as_secs_f64()));
                            oops = Some(line.to_string());
                        }
                    }
                }
            }
        }
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(_) => break None,
        }
        // KVM that cannot run the guest stops it with an internal error and waits.
        if std::fs::read_to_string(&qemu_log).is_ok_and(|l| l.contains("KVM internal error")) {
            let _ = child.kill();
            let _ = child.wait();
            return Outcome::NoKvm("KVM internal error".to_string());
        }
        if t0.elapsed() > opts.timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Outcome::Failed(format!("no end after {} s (--timeout)", opts.timeout.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let wall = t0.elapsed();
    let log_text = std::fs::read_to_string(&qemu_log).unwrap_or_default();
    let ok_exit = status.is_some_and(|s| s.success());
    if !ok_exit && offset == 0 && log_text.to_ascii_lowercase().contains("kvm") {
        return Outcome::NoKvm(log_text.lines().next().unwrap_or("").to_string());
    }
    if !ok_exit {
        let line = log_text.lines().find(|l| !l.trim().is_empty()).unwrap_or("no message");
        return Outcome::Failed(format!("qemu failed: {line}"));
    }
    if !done {
        return Outcome::Failed(match oops {
            Some(o) => format!("the guest did not finish: {o}"),
            None => "the guest did not finish (see the console log)".to_string(),
        });
    }
    for f in [&files.boot_capture, &files.seq_capture] {
        if let Err(e) = read_capture(Path::new(f)) {
            return Outcome::Failed(format!("capture incomplete: {e}"));
        }
    }
    Outcome::Done { wall }
}

/// Boot and capture, with retries; `progress` gets one line per step.
pub fn run(opts: &RunOptions, progress: &mut dyn FnMut(&str)) -> Result<RunReport, LabError> {
    if opts.retries + 1 > TRIES_MAX {
        return Err(input(format!("--retries {}: at most {}", opts.retries, TRIES_MAX - 1)));
    }
    qemu::check_ioqpairs(&opts.ioqpairs).map_err(|e| input(e.to_string()))?;
    for d in [&opts.work_dir, &opts.work_dir.join("disks")] {
        std::fs::create_dir_all(d).map_err(|e| input(format!("{}: {e}", d.display())))?;
    }
    if let Some(parent) = opts.output.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| input(format!("{}: {e}", parent.display())))?;
    }
    let mut package = None;
    let (image, moddir) = match &opts.kernel {
        KernelSource::Image { image, modules } => {
            if !image.is_file() {
                return Err(input(format!("kernel image {}: no such file", image.display())));
            }
            (image.clone(), modules.clone())
        }
        KernelSource::Package(pattern) => {
            let name = resolve_package(pattern, &opts.apt_options)?;
            if name != *pattern {
                progress(&format!("{pattern} is {name} (the newest in the apt index)"));
            }
            let found = fetch_package(&name, &opts.work_dir, &opts.apt_options, progress)?;
            package = Some(name);
            found
        }
    };
    progress(&format!(
        "kernel {}{}",
        image.display(),
        moddir
            .as_ref()
            .map(|m| format!(", modules {}", m.display()))
            .unwrap_or_default()
    ));
    let initrd_bytes = build_initramfs(&opts.agent, &opts.busybox, moddir.as_deref(), opts.modules.as_deref())?;
    let initrd = opts.work_dir.join(format!("initramfs-{}.cpio.gz", std::process::id()));
    std::fs::write(&initrd, &initrd_bytes).map_err(|e| input(format!("{}: {e}", initrd.display())))?;
    let mut disks = Vec::new();
    for k in 0..opts.ioqpairs.len() {
        let p = opts.work_dir.join("disks").join(format!("nvme{k}.img"));
        let f = std::fs::File::create(&p).map_err(|e| input(format!("{}: {e}", p.display())))?;
        f.set_len(DISK_BYTES)
            .map_err(|e| input(format!("{}: {e}", p.display())))?;
        disks.push(p.to_string_lossy().into_owned());
    }
    let s = |suffix: &str| with_suffix(&opts.output, suffix).to_string_lossy().into_owned();
    let files = BootFiles {
        kernel: image.to_string_lossy().into_owned(),
        initrd: initrd.to_string_lossy().into_owned(),
        disks,
        console: s(".console"),
        boot_capture: s(".boot.agent.json"),
        seq_capture: s(".seq.agent.json"),
        append: format!(
            // An oops ends the boot at once (panic, then QEMU's -no-reboot exit) instead of
            // leaving a half-dead guest until the timeout.
            "console=ttyS0 quiet panic=-1 oops=panic lab.nvme={} lab.timeout={} {}",
            opts.ioqpairs.len(),
            opts.timeout.as_secs(),
            opts.append
        )
        .trim_end()
        .to_string(),
    };
    let mut accel = match opts.accel {
        AccelChoice::Only(a) => a,
        AccelChoice::Auto if kvm_usable() => Accel::Kvm,
        AccelChoice::Auto => Accel::Tcg,
    };
    let mut tries = 0;
    let result = loop {
        let cpu = opts.cpu.clone().unwrap_or_else(|| accel.default_cpu().to_string());
        let args = qemu::qemu_args(&opts.machine, &opts.ioqpairs, accel, &cpu, &files);
        let _ = std::fs::write(s(".cmd"), format!("{} {}\n", opts.qemu, args.join(" ")));
        tries += 1;
        progress(&format!(
            "boot {tries} ({}, {} vCPUs, {} NVMe)",
            accel.name(),
            opts.machine.maxcpus,
            opts.ioqpairs.len()
        ));
        match boot_once(&args, opts, &files, progress) {
            Outcome::Done { wall } => break Ok(wall),
            Outcome::NoKvm(why) if opts.accel == AccelChoice::Auto && accel == Accel::Kvm => {
                progress(&format!("KVM unusable ({why}); using TCG"));
                accel = Accel::Tcg;
                tries -= 1;
            }
            Outcome::NoKvm(why) | Outcome::Failed(why) => {
                progress(&format!("boot {tries} failed: {why}"));
                let _ = std::fs::rename(&files.console, s(&format!(".console.failed{tries}")));
                if tries > opts.retries {
                    break Err(LabError::Boot(format!("{tries} boot(s) did not finish; last: {why}")));
                }
            }
        }
    };
    let _ = std::fs::remove_file(&initrd);
    for d in &files.disks {
        let _ = std::fs::remove_file(d);
    }
    let wall = result?;
    let seq = read_capture(Path::new(&files.seq_capture)).map_err(LabError::Boot)?;
    let kernel_release = seq.snapshots[0].topology.kernel_release.clone();
    Ok(RunReport {
        boot_capture: files.boot_capture.into(),
        seq_capture: files.seq_capture.into(),
        console: files.console.into(),
        accel,
        tries,
        wall,
        kernel_release,
        package,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names_are_checked() {
        assert!(valid_package_name("linux-image-6.12.107+deb12-cloud-amd64"));
        assert!(!valid_package_name("-o=evil"));
        assert!(!valid_package_name("../x"));
        assert!(!valid_package_name(""));
    }

    #[test]
    fn version_patterns_match_only_version_numbers() {
        let p = "linux-image-6.1.0-*-amd64";
        assert_eq!(
            match_version_pattern(p, "linux-image-6.1.0-57-amd64"),
            Some(vec!["57".to_string()])
        );
        // `*` is a version number: the cloud, rt and unsigned flavours are other packages.
        for other in [
            "linux-image-6.1.0-57-cloud-amd64",
            "linux-image-6.1.0-57-rt-amd64",
            "linux-image-6.1.0-57-amd64-unsigned",
            "linux-image-6.1.0--amd64",
            "linux-image-6.1.0-57-amd64-dbg",
        ] {
            assert_eq!(match_version_pattern(p, other), None, "{other}");
        }
        let p = "linux-image-6.12.*+deb12-cloud-amd64";
        assert_eq!(
            match_version_pattern(p, "linux-image-6.12.117+deb12-cloud-amd64"),
            Some(vec!["117".to_string()])
        );
        // A star followed by digits gives them back.
        assert_eq!(
            match_version_pattern(
                "linux-binary-unsigned-7.*3+deb*-cloud-amd64",
                "linux-binary-unsigned-7.2.13+deb14-cloud-amd64"
            ),
            Some(vec!["2.1".to_string(), "14".to_string()])
        );
        assert!(version_key("6.12.117") > version_key("6.12.99"));
        assert!(version_key("57") > version_key("9"));
    }

    #[test]
    fn a_name_without_a_star_is_taken_as_it_is() {
        // No apt call is made for a plain name (this runs on machines without apt).
        assert_eq!(
            resolve_package("linux-image-6.1.0-57-amd64", &[]).unwrap(),
            "linux-image-6.1.0-57-amd64"
        );
        assert!(matches!(resolve_package("-o=x*", &[]), Err(LabError::Input(_))));
    }

    #[test]
    fn split_layout_is_found() {
        let root = std::env::temp_dir().join(format!("irqscope-lab-find-{}", std::process::id()));
        let v = root.join("usr/lib/modules/7.2.13+deb14-cloud-amd64");
        std::fs::create_dir_all(v.join("kernel")).unwrap();
        std::fs::write(v.join("vmlinuz.unsigned"), b"x").unwrap();
        let (image, modules) = find_kernel(&root).unwrap();
        assert_eq!(image, v.join("vmlinuz.unsigned"));
        assert_eq!(modules, Some(v));
        std::fs::remove_dir_all(&root).unwrap();
        assert!(find_kernel(&root).is_none());
    }
}
