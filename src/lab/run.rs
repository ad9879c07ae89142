//! Boot a kernel in QEMU on a lab machine and bring back the agent's captures.
//!
//! One boot: build the initramfs (busybox, `lab/init.sh`, the NVMe modules in dependency order,
//! and on x86 `irqscope-agent` with the libraries it links), start QEMU (`qemu-system-x86_64
//! -M q35` with three serial ports: console, capture as probed, capture after binding the
//! controllers one at a time; or `qemu-system-aarch64 -M virt`, whose one serial port carries
//! the console and the files of both captures, read back by [`super::console`]), follow the
//! console for progress, and accept the boot only when the guest said `lab: done` and both
//! captures parse as the agent's versioned format.
//!
//! Before any boot the kernel must have NVMe ([`fetch::nvme_in_kernel`]). A boot that did not
//! finish is tried again: multi-threaded TCG now and then kills a guest with `Oops: int3` while
//! the kernel patches its own text (seen on Debian's 6.12 and 7.2 kernels), and such a guest may
//! hang instead of panicking. The console runs at a log level that shows an oops; a guest that
//! printed an oops and did not stop, or printed nothing for `silence`, is killed and tried again
//! then rather than at the timeout. QEMU that ends by itself before the guest printed anything
//! never started it (a machine or file it refuses): that is bad input, reported with QEMU's
//! words and not tried again.
//!
//! A run writes into a staging directory beside its output and moves the files into place only
//! once a boot succeeded, so that a run that fails leaves an earlier run's files as they were.
//! It keeps the initramfs and the disk images with the captures, and saves the QEMU command
//! line that boots them again (`PREFIX.cmd`), its console on the terminal and its captures
//! beside the run's (`PREFIX.again.*`), never over them.

use super::fetch::{self, KernelFiles, Nvme};
use super::initramfs::{self, Entry};
use super::qemu::{self, Accel, BootFiles, DeviceKind, GuestMachine, Platform, SlotDevice};
use crate::live::protocol::{Capture, ProbeCalls};
use crate::topology::Arch;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) use super::fetch::resolve_package;

/// The guest's PID 1.
pub(crate) const INIT_SCRIPT: &str = include_str!("../../lab/init.sh");
/// Largest capture read back from a serial port file, and largest console read for one.
pub(crate) const CAPTURE_BYTES_MAX: u64 = 64 << 20;
/// Most boots of one run (the first and its retries).
pub(crate) const TRIES_MAX: u32 = 20;
/// Size of each controller's (empty, sparse) disk image.
const DISK_BYTES: u64 = 16 << 20;
/// How long a guest that printed an oops may take to stop by itself (`oops=panic`,
/// `panic=-1`, QEMU's `-no-reboot`) before it is killed.
const OOPS_GRACE: Duration = Duration::from_secs(20);
/// A line on progress while nothing new came from the init for this long.
const WAITING_EVERY: Duration = Duration::from_secs(60);
/// Console lines that end a kernel: an oops (x86 prints `Oops:` at the default log level,
/// arm64 `Internal error: Oops`), a panic, a fatal `BUG:`. A soft-lockup report is only a
/// warning (a slow TCG guest prints one and carries on).
const FATAL_MARKS: [&str; 5] = [
    "Oops",
    "Kernel panic",
    "Internal error:",
    "BUG: kernel",
    "BUG: unable to handle",
];
/// Host name in the captures (what `irqscope-agent capture --host lab` writes in the guest).
const CAPTURE_HOST: &str = "lab";

/// How long a guest may print nothing before it is taken for hung: two minutes, and ten
/// seconds more per vCPU, since TCG slows with every vCPU on the host's cores (a 16-vCPU arm64
/// guest was silent for three minutes while freeing its init memory, then finished).
pub fn silence_default(vcpus: u32) -> Duration {
    Duration::from_secs(120 + 10 * u64::from(vcpus))
}

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
    /// KVM when `/dev/kvm` opens on a CPU with hardware virtualization of the guest's
    /// architecture and QEMU runs the guest with it, TCG otherwise.
    Auto,
    Only(Accel),
}

/// The kernel to boot.
#[derive(Debug, Clone)]
pub enum KernelSource {
    /// A kernel image, and the `lib/modules/VERSION` tree of the same build when NVMe is a module.
    Image { image: PathBuf, modules: Option<PathBuf> },
    /// A Debian package (`linux-image-*`, or the `linux-binary-*` part of a split kernel),
    /// fetched with `apt-get download` and unpacked with `dpkg-deb -x`.
    Package(String),
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub kernel: KernelSource,
    /// A package holding the kernel's modules (`linux-modules-VERSION` of a split 7.x kernel).
    pub modules_package: Option<String>,
    pub machine: GuestMachine,
    /// `max_ioqpairs` of each controller, in PCI order.
    pub ioqpairs: Vec<u32>,
    /// Request queues of each virtio-blk device, after the controllers in PCI order.
    pub virtio_blk: Vec<u32>,
    /// Queue pairs of each virtio-net device, after the virtio-blk devices.
    pub virtio_net: Vec<u32>,
    /// Boots of the same machine (`--boots`): more than one writes `PREFIX.orders.json`, the
    /// spreading calls of each.
    pub boots: u32,
    /// `irqscope-agent` for x86 guests (arm64 guests print the files it reads instead).
    pub agent: PathBuf,
    /// A static busybox of the guest's architecture; `None`: `busybox` on PATH for x86,
    /// Debian's `busybox-static:arm64` (downloaded to the work directory) for arm64.
    pub busybox: Option<PathBuf>,
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
    /// A guest that prints nothing for this long is killed and tried again.
    pub silence: Duration,
    /// `-o` options for apt-get (a private sources list for kernels of another release).
    pub apt_options: Vec<String>,
}

/// What a successful run wrote.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub boot_capture: PathBuf,
    pub seq_capture: PathBuf,
    /// The QEMU command line of the boot, which boots it again when pasted into a shell.
    pub cmd: PathBuf,
    /// Where that command keeps its console (its captures go beside, as `PREFIX.again.*`).
    pub again_console: PathBuf,
    /// The calls of every boot (`PREFIX.orders.json`), when the run booted more than once.
    pub orders: Option<PathBuf>,
    pub accel: Accel,
    /// Boots started, the successful one included.
    pub tries: u32,
    /// Wall time of the successful boot.
    pub wall: Duration,
    pub kernel_release: String,
    /// The Debian package booted (a pattern resolved to its newest match), if one was.
    pub package: Option<String>,
    /// What the guest made differently from the machine asked for (hotplug slots it dropped).
    pub warnings: Vec<String>,
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

/// The modules a guest loads: named by `--modules` (`required`: each must be in the tree),
/// or a device's drivers, loaded when the tree has them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Modules<'a> {
    pub(crate) names: &'a [String],
    pub(crate) required: bool,
}

/// Build the initramfs image for a module tree; returns its bytes. Without an agent (arm64
/// guests) the init prints the files the agent reads on the console.
pub(crate) fn build_initramfs(
    agent: Option<&Path>,
    busybox: &Path,
    moddir: Option<&Path>,
    modules: Modules,
) -> Result<Vec<u8>, LabError> {
    let mut entries = base_entries(busybox)?;
    // A dynamically linked agent (or busybox) brings its libraries, at the same paths. Without
    // an agent (arm64) the init prints the files it would read.
    let mut libs = libraries(busybox);
    if let Some(agent) = agent {
        entries.push(Entry::File {
            path: "bin/irqscope-agent".into(),
            mode: 0o755,
            data: stripped(agent)?,
        });
        libs.extend(libraries(agent));
    }
    entries.extend(library_entries(libs)?);
    let list = match moddir {
        Some(dir) => module_entries(dir, modules, &mut entries)?,
        None if modules.required && !modules.names.is_empty() => {
            return Err(input("modules to load need the kernel's module tree (--modules-dir)"));
        }
        None => String::new(),
    };
    entries.push(Entry::File {
        path: "etc/lab/modules".into(),
        mode: 0o644,
        data: list.into_bytes(),
    });
    initramfs::cpio_gz(&entries).map_err(|e| input(format!("building the initramfs: {e}")))
}

/// The directories, the init and busybox.
fn base_entries(busybox: &Path) -> Result<Vec<Entry>, LabError> {
    let mut entries: Vec<Entry> = [
        "bin",
        "dev",
        "proc",
        "sys",
        "tmp",
        "etc",
        "etc/lab",
        "lib",
        "lib/modules",
    ]
    .into_iter()
    .map(|d| Entry::Dir(d.to_string()))
    .collect();
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
    Ok(entries)
}

/// The shared libraries at their own paths, with the directories they need.
fn library_entries(mut libs: Vec<String>) -> Result<Vec<Entry>, LabError> {
    libs.sort();
    libs.dedup();
    let mut entries = Vec::new();
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
    Ok(entries)
}

/// The modules to load with their dependencies, dependencies first, added to `entries`;
/// returns the list the init loads in order.
fn module_entries(dir: &Path, modules: Modules, entries: &mut Vec<Entry>) -> Result<String, LabError> {
    let index = initramfs::index_modules(dir).map_err(|e| input(format!("{}: {e}", dir.display())))?;
    let wanted: Vec<String> = modules
        .names
        .iter()
        .filter(|m| modules.required || index.contains_key(&m.replace('-', "_")))
        .cloned()
        .collect();
    let order = initramfs::module_order(&wanted, &index, &mut read_module).map_err(input)?;
    let mut list = String::new();
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
    Ok(list)
}

/// Whether KVM can run a guest of this platform here: the host is of the guest's architecture,
/// `/dev/kvm` opens and, on x86, the CPU has hardware virtualization (`vmx` or `svm`; a
/// `/dev/kvm` without either, an emulated one, accepts QEMU and then hangs or stops the guest).
fn kvm_usable(platform: Platform) -> bool {
    let same_arch = match platform {
        Platform::Q35 => cfg!(target_arch = "x86_64"),
        Platform::Virt(_) => cfg!(target_arch = "aarch64"),
    };
    let opens = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok();
    let flags = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let vmx = flags
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|f| f == "vmx" || f == "svm"));
    same_arch && opens && (vmx || platform != Platform::Q35)
}

fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// A file's text, at most `bytes_max` bytes (longer: an error).
fn read_bounded(path: &Path, bytes_max: u64) -> Result<String, String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .take(bytes_max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() as u64 > bytes_max {
        return Err(format!("{}: larger than {bytes_max} bytes", path.display()));
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A capture file read back and checked: the agent's versioned format, valid snapshots.
pub(crate) fn read_capture(path: &Path) -> Result<Capture, String> {
    let text = read_bounded(path, CAPTURE_BYTES_MAX)?;
    let capture: Capture = serde_json::from_str(text.trim()).map_err(|e| format!("{}: {e}", path.display()))?;
    if capture.snapshots.is_empty() {
        return Err(format!("{}: no snapshot", path.display()));
    }
    for s in &capture.snapshots {
        s.check().map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(capture)
}

/// The QEMU command line as a shell reads it: each word quoted where it needs to be, so that
/// the saved `.cmd` pastes into a shell and reruns the boot.
pub(crate) fn shell_command(qemu: &str, args: &[String]) -> String {
    std::iter::once(qemu)
        .chain(args.iter().map(String::as_str))
        .map(crate::scenario::spec::shell_word)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The hotplug slots of the machine the guest's kernel does not count as possible CPUs (6.12
/// leaves QEMU 7.2's disabled MADT entries out), said rather than dropped in silence.
fn dropped_hotplug_slots(m: &GuestMachine, capture: &Capture) -> Option<String> {
    let topology = &capture.snapshots.last()?.topology;
    let possible = crate::topology::cpulist::parse_cpulist(topology.possible.as_deref()?, m.maxcpus.max(1)).ok()?;
    let slots = crate::topology::CpuSet::from_cpus(m.cpus..m.maxcpus);
    let dropped = slots.andnot(&possible);
    if dropped.is_empty() {
        return None;
    }
    Some(format!(
        "hotplug slots {dropped} (QEMU -smp maxcpus={}) are not possible CPUs in the guest: \
         kernel {} leaves them out, so its captures describe a machine of {} possible CPUs, \
         not {}",
        m.maxcpus,
        if topology.kernel_release.is_empty() {
            "unknown"
        } else {
            &topology.kernel_release
        },
        possible.weight(),
        m.maxcpus
    ))
}

/// The online CPUs of the guest when they are not the machine's: `maxcpus=` brings up CPUs in
/// the order of the kernel's bring-up (x86 kernels before 6.5 in id order, later ones primary
/// threads first), which may not be the order the topology assumed.
fn online_cpus_differ(m: &GuestMachine, capture: &Capture) -> Option<String> {
    let topology = &capture.snapshots.last()?.topology;
    let online = crate::topology::cpulist::parse_cpulist(topology.online.as_deref()?, m.maxcpus.max(1)).ok()?;
    let wanted = crate::topology::CpuSet::from_cpus(m.online.iter().copied());
    if online == wanted {
        return None;
    }
    let maxcpus = m.kernel_args.iter().find(|a| a.starts_with("maxcpus="));
    Some(format!(
        "the guest brought up CPUs {online}{}, the machine has {wanted} online: the captures \
         describe the CPUs kernel {} brought up",
        maxcpus.map(|a| format!(" with {a}")).unwrap_or_default(),
        if topology.kernel_release.is_empty() {
            "unknown"
        } else {
            &topology.kernel_release
        },
    ))
}

enum Outcome {
    Done {
        wall: Duration,
    },
    /// QEMU could not start with KVM.
    NoKvm(String),
    Failed(String),
    /// The guest said it cannot work (`lab: error: …`): no retry.
    Fatal(String),
    /// QEMU did not start the guest (it refused the machine or a file, or is not installed):
    /// bad input, no retry.
    Startup(String),
}

/// QEMU's own words when it stopped before the guest printed anything: its log, at most a few
/// lines.
fn startup_message(qemu: &str, status: std::process::ExitStatus, log: &str) -> String {
    let said: Vec<&str> = log.lines().map(str::trim).filter(|l| !l.is_empty()).take(8).collect();
    if said.is_empty() {
        format!("{qemu} ended before the guest started ({status}), saying nothing")
    } else {
        format!("QEMU did not start the guest ({status}): {}", said.join(" "))
    }
}

/// What the host waits for, from the guest's last progress line.
fn phase_words(last: Option<&str>) -> String {
    match last {
        None => "the kernel to start init".to_string(),
        Some(msg) => format!("the guest after \"{msg}\""),
    }
}

/// One boot: start QEMU, follow the console, wait for the end, the timeout, an oops that does
/// not end the guest, or a silence of `opts.silence`.
fn boot_once(
    args: &[String],
    accel: Accel,
    opts: &RunOptions,
    files: &BootFiles,
    qemu_log: &Path,
    progress: &mut dyn FnMut(&str),
) -> Outcome {
    for f in [&files.console, &files.boot_capture, &files.seq_capture] {
        let _ = std::fs::remove_file(f);
    }
    let t0 = Instant::now();
    let mut child = match start_qemu(args, opts, qemu_log) {
        Ok(c) => c,
        Err(o) => return o,
    };
    let mut console = Console::new(t0);
    let status = match watch(&mut child, &mut console, opts, files, qemu_log, progress) {
        Ok(status) => status,
        Err(o) => {
            let _ = child.kill();
            let _ = child.wait();
            return o;
        }
    };
    judge(status, console, accel, opts, files, qemu_log, t0.elapsed())
}

/// QEMU started with `args`, its output into `qemu_log`.
fn start_qemu(args: &[String], opts: &RunOptions, qemu_log: &Path) -> Result<std::process::Child, Outcome> {
    let log = std::fs::File::create(qemu_log).map_err(|e| Outcome::Failed(format!("{}: {e}", qemu_log.display())))?;
    Command::new(&opts.qemu)
        .args(args)
        .stdin(Stdio::null())
        .stdout(log.try_clone().map(Stdio::from).unwrap_or_else(|_| Stdio::null()))
        .stderr(log)
        .spawn()
        .map_err(|e| {
            let package = opts.machine.platform.qemu_package();
            Outcome::Startup(format!("{}: {e} (install {package})", opts.qemu))
        })
}

/// What the guest's console has said so far: the init script's `lab: ` lines (progress, `done`,
/// `error: `) and the first sign of a dying kernel.
struct Console {
    t0: Instant,
    offset: u64,
    partial: String,
    done: bool,
    error: Option<String>,
    oops: Option<(String, Instant)>,
    last_lab: Option<String>,
    last_output: Instant,
    last_said: Instant,
}

impl Console {
    fn new(t0: Instant) -> Console {
        Console {
            t0,
            offset: 0,
            partial: String::new(),
            done: false,
            error: None,
            oops: None,
            last_lab: None,
            last_output: t0,
            last_said: t0,
        }
    }

    fn stamp(&self, t: Instant) -> String {
        format!("[{:5.1}s]", t.duration_since(self.t0).as_secs_f64())
    }

    /// Read what the console file gained since the last read (at most 1 MiB), line by line.
    fn read_new(&mut self, path: &str, now: Instant, progress: &mut dyn FnMut(&str)) {
        let Ok(mut f) = std::fs::File::open(path) else { return };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let mut buf = Vec::new();
        let Ok(n) = f.take(1 << 20).read_to_end(&mut buf) else {
            return;
        };
        if n > 0 {
            self.last_output = now;
        }
        self.offset += n as u64;
        self.partial.push_str(&String::from_utf8_lossy(&buf));
        while let Some(pos) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=pos).collect();
            self.line(line.trim_end(), now, progress);
        }
    }

    fn line(&mut self, line: &str, now: Instant, progress: &mut dyn FnMut(&str)) {
        if line.starts_with('@') {
            return; // a capture record (arm64)
        }
        if let Some(msg) = line.find("lab: ").map(|i| &line[i + 5..]) {
            progress(&format!("{} {msg}", self.stamp(now)));
            self.done |= msg == "done";
            if let Some(e) = msg.strip_prefix("error: ") {
                self.error = Some(e.to_string());
            }
            self.last_lab = Some(msg.to_string());
            self.last_said = now;
        } else if self.oops.is_none() && FATAL_MARKS.iter().any(|k| line.contains(k)) {
            progress(&format!("{} kernel: {line}", self.stamp(now)));
            self.oops = Some((line.to_string(), now));
        }
    }
}

/// Follow a running guest until QEMU exits (its status; `None` when waiting failed), or end it
/// (`Err`) when KVM cannot run it, it hangs after an oops, stays silent past `--silence` or
/// runs past `--timeout`.
fn watch(
    child: &mut std::process::Child,
    console: &mut Console,
    opts: &RunOptions,
    files: &BootFiles,
    qemu_log: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<Option<std::process::ExitStatus>, Outcome> {
    let mut exited = None;
    loop {
        let now = Instant::now();
        console.read_new(&files.console, now, progress);
        // Once QEMU has exited, the console is read once more (what the guest printed last,
        // after the read before), then the loop ends.
        if let Some(status) = exited {
            return Ok(status);
        }
        match child.try_wait() {
            Ok(Some(status)) => {
                exited = Some(Some(status));
                continue;
            }
            Ok(None) => {}
            Err(_) => return Ok(None),
        }
        // KVM that cannot run the guest stops it with an internal error and waits.
        if std::fs::read_to_string(qemu_log).is_ok_and(|l| l.contains("KVM internal error")) {
            return Err(Outcome::NoKvm("KVM internal error".to_string()));
        }
        let phase = phase_words(console.last_lab.as_deref());
        if let Some((line, at)) = &console.oops {
            if now.duration_since(*at) > OOPS_GRACE {
                return Err(Outcome::Failed(format!(
                    "the guest printed \"{line}\" and did not stop within {} s",
                    OOPS_GRACE.as_secs()
                )));
            }
        }
        if now.duration_since(console.last_output) > opts.silence {
            return Err(Outcome::Failed(format!(
                "the guest printed nothing for {} s while waiting for {phase} (--silence)",
                opts.silence.as_secs()
            )));
        }
        if now.duration_since(console.t0) > opts.timeout {
            return Err(Outcome::Failed(format!(
                "no end after {} s (--timeout) while waiting for {phase}",
                opts.timeout.as_secs()
            )));
        }
        if now.duration_since(console.last_said) > WAITING_EVERY {
            progress(&format!(
                "{} waiting for {phase}; console quiet for {} s",
                console.stamp(now),
                now.duration_since(console.last_output).as_secs()
            ));
            console.last_said = now;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// What a boot that QEMU ended came to: the guest's own error, a QEMU that never started
/// the guest, a failure, or captures that read back whole.
fn judge(
    status: Option<std::process::ExitStatus>,
    console: Console,
    accel: Accel,
    opts: &RunOptions,
    files: &BootFiles,
    qemu_log: &Path,
    wall: Duration,
) -> Outcome {
    let log_text = std::fs::read_to_string(qemu_log).unwrap_or_default();
    let ok_exit = status.is_some_and(|s| s.success());
    if let Some(e) = console.error {
        return Outcome::Fatal(e);
    }
    // QEMU that ended by itself (an error, an abort) before the guest printed a byte never
    // started it: a machine or file it refuses (too many vCPUs, memory it cannot allocate),
    // or KVM that does not work here (then `auto` tries TCG).
    if let (false, 0, Some(status)) = (ok_exit, console.offset, status) {
        if accel == Accel::Kvm && opts.accel == AccelChoice::Auto && log_text.to_ascii_lowercase().contains("kvm") {
            return Outcome::NoKvm(log_text.lines().next().unwrap_or("").to_string());
        }
        return Outcome::Startup(startup_message(&opts.qemu, status, &log_text));
    }
    if !ok_exit {
        let line = log_text.lines().find(|l| !l.trim().is_empty()).unwrap_or("no message");
        return Outcome::Failed(format!("qemu failed: {line}"));
    }
    if !console.done {
        return Outcome::Failed(match console.oops {
            Some((o, _)) => format!("the guest did not finish: {o}"),
            None => "the guest did not finish (see the console log)".to_string(),
        });
    }
    if opts.machine.platform != Platform::Q35 {
        if let Err(e) = captures_from_console(opts, files) {
            return Outcome::Failed(format!("capture incomplete: {e}"));
        }
    }
    for f in [&files.boot_capture, &files.seq_capture] {
        if let Err(e) = read_capture(Path::new(f)) {
            return Outcome::Failed(format!("capture incomplete: {e}"));
        }
    }
    Outcome::Done { wall }
}

/// The captures an arm64 guest printed on its console, written where an x86 guest's serial
/// ports put them.
fn captures_from_console(opts: &RunOptions, files: &BootFiles) -> Result<(), String> {
    let console = read_bounded(Path::new(&files.console), CAPTURE_BYTES_MAX)?;
    let scratch = opts.work_dir.join(format!("console-{}", std::process::id()));
    let result = [("boot", &files.boot_capture), ("seq", &files.seq_capture)]
        .into_iter()
        .try_for_each(|(phase, out)| {
            let capture = super::console::capture_from_console(&console, phase, CAPTURE_HOST, &scratch)?;
            let json = serde_json::to_string(&capture).map_err(|e| e.to_string())?;
            std::fs::write(out, json + "\n").map_err(|e| format!("{out}: {e}"))
        });
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// Refuse a kernel that will not have an NVMe driver in the guest, before anything boots.
fn check_nvme(k: &KernelFiles, what: &str, progress: &mut dyn FnMut(&str)) -> Result<(), LabError> {
    let text = |p: &Option<PathBuf>| p.as_deref().and_then(|p| read_bounded(p, 16 << 20).ok());
    let in_tree = match &k.modules {
        Some(d) => initramfs::index_modules(d)
            .map_err(|e| input(format!("{}: {e}", d.display())))?
            .contains_key("nvme"),
        None => false,
    };
    match fetch::nvme_in_kernel(text(&k.config).as_deref(), text(&k.builtin).as_deref(), in_tree) {
        Ok(Nvme::BuiltIn(why)) => progress(&format!("NVMe is built in ({why})")),
        Ok(Nvme::Module) => progress("NVMe is a module: nvme.ko and its dependencies go into the initramfs"),
        Ok(Nvme::Unknown) => progress(&format!(
            "note: nothing beside {what} says whether NVMe is built in (no config, no \
             modules.builtin); if it is a module, {}",
            k.modules_hint
        )),
        Err(why) => return Err(input(format!("{what}: {why}: {}", k.modules_hint))),
    }
    Ok(())
}

/// The guest's busybox: the one given, `busybox` on PATH for x86, Debian's static arm64
/// busybox (through multiarch, cached in the work directory) for arm64.
fn guest_busybox(opts: &RunOptions, progress: &mut dyn FnMut(&str)) -> Result<PathBuf, LabError> {
    if let Some(b) = &opts.busybox {
        return if b.is_file() {
            Ok(b.clone())
        } else {
            Err(input(format!("busybox {}: no such file", b.display())))
        };
    }
    match opts.machine.platform {
        Platform::Q35 => std::env::var_os("PATH")
            .and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join("busybox"))
                    .find(|f| f.is_file())
            })
            .ok_or_else(|| input("busybox not found (install busybox-static, or give --busybox)")),
        Platform::Virt(_) => {
            // From the system's own sources: the private apt options are a kernel's.
            let system = fetch::Packages {
                work_dir: &opts.work_dir,
                arch: Some("arm64"),
                apt_options: &[],
            };
            let root = system.fetch("busybox-static", progress)?;
            let b = root.join("bin/busybox");
            b.is_file()
                .then_some(b)
                .ok_or_else(|| input("busybox-static:arm64 holds no bin/busybox"))
        }
    }
}

/// A Debian architecture name of a machine architecture.
fn debian_arch(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 => "amd64",
        Arch::Arm64 => "arm64",
    }
}

/// Refuse a package named for another architecture than the machine's (`…-amd64` for an arm64
/// machine), before anything is downloaded.
fn package_of_arch(name: &str, platform: Platform) -> Result<(), LabError> {
    let Some(named) = fetch::package_arch(name).filter(|&a| a != platform.arch()) else {
        return Ok(());
    };
    let (theirs, ours) = (debian_arch(named), debian_arch(platform.arch()));
    Err(input(format!(
        "wrong architecture: {name} is a package for {} ({theirs}), and the machine is {}: it \
         boots {} kernels in {} (name the {ours} package, as {})",
        named.name(),
        platform.arch().name(),
        platform.arch().name(),
        platform.qemu(),
        name.replace(theirs, ours)
    )))
}

/// The kernel a run boots: its files, what to call it in messages, and the package it came
/// from (a pattern resolved to its newest match), if one.
struct Kernel {
    files: KernelFiles,
    what: String,
    package: Option<String>,
}

/// A boot that finished: its wall time, the accelerator and CPU model it ran with, and the
/// boots it took (the failed ones before it included).
struct Booted {
    wall: Duration,
    accel: Accel,
    cpu: String,
    tries: u32,
}

/// The options checked before anything is fetched or built; the machine's devices in PCI
/// order.
fn checked_options(opts: &RunOptions) -> Result<Vec<SlotDevice>, LabError> {
    if opts.retries + 1 > TRIES_MAX {
        return Err(input(format!("--retries {}: at most {}", opts.retries, TRIES_MAX - 1)));
    }
    if opts.boots == 0 || opts.boots > BOOTS_MAX {
        return Err(input(format!("--boots {}: give 1..={BOOTS_MAX}", opts.boots)));
    }
    let platform = opts.machine.platform;
    qemu::qemu_boots(&opts.qemu, platform).map_err(|e| input(e.0))?;
    let devices =
        qemu::slot_devices(&opts.ioqpairs, &opts.virtio_blk, &opts.virtio_net).map_err(|e| input(e.to_string()))?;
    if platform != Platform::Q35 && devices.len() > opts.ioqpairs.len() {
        return Err(input(
            "virtio devices boot on x86 machines only (q35); an arm64 guest gets NVMe controllers",
        ));
    }
    std::fs::create_dir_all(&opts.work_dir).map_err(|e| input(format!("{}: {e}", opts.work_dir.display())))?;
    let named = match &opts.kernel {
        KernelSource::Package(p) => Some(p),
        KernelSource::Image { .. } => None,
    };
    for name in named.into_iter().chain(&opts.modules_package) {
        package_of_arch(name, platform)?;
    }
    if let Some(parent) = opts.output.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| input(format!("{}: {e}", parent.display())))?;
    }
    Ok(devices)
}

/// A package name, resolved to the newest match of a pattern (said when it is one).
fn resolved(pattern: &str, opts: &RunOptions, progress: &mut dyn FnMut(&str)) -> Result<String, LabError> {
    let name = resolve_package(pattern, &opts.apt_options)?;
    if name != *pattern {
        progress(&format!("{pattern} is {name} (the newest in the apt index)"));
    }
    Ok(name)
}

/// The kernel's files: the image given, or the package downloaded and unpacked (with the
/// modules package); refused when built for another architecture or without NVMe.
fn fetch_kernel(opts: &RunOptions, progress: &mut dyn FnMut(&str)) -> Result<Kernel, LabError> {
    let platform = opts.machine.platform;
    let packages = fetch::Packages {
        work_dir: &opts.work_dir,
        arch: (platform != Platform::Q35).then_some("arm64"),
        apt_options: &opts.apt_options,
    };
    let modules_package = match &opts.modules_package {
        Some(p) => Some(resolved(p, opts, progress)?),
        None => None,
    };
    let kernel = match &opts.kernel {
        KernelSource::Image { image, modules } => {
            if !image.is_file() {
                return Err(input(format!("kernel image {}: no such file", image.display())));
            }
            let mut k = fetch::image_kernel(image, modules.as_deref());
            if let Some(m) = &modules_package {
                k.modules = Some(packages.modules(m, progress)?);
            }
            Kernel {
                files: k,
                what: image.display().to_string(),
                package: None,
            }
        }
        KernelSource::Package(pattern) => {
            let name = resolved(pattern, opts, progress)?;
            Kernel {
                files: packages.kernel(&name, modules_package.as_deref(), progress)?,
                what: name.clone(),
                package: Some(name),
            }
        }
    };
    progress(&format!(
        "kernel {}{}",
        kernel.files.image.display(),
        kernel
            .files
            .modules
            .as_ref()
            .map(|m| format!(", modules {}", m.display()))
            .unwrap_or_default()
    ));
    if let Some(built) = fetch::image_file_arch(&kernel.files.image).filter(|&a| a != platform.arch()) {
        return Err(input(format!(
            "wrong architecture: kernel image {} is built for {}, and the machine is {}: it \
             boots {} kernels in {} ({})",
            kernel.files.image.display(),
            built.name(),
            platform.arch().name(),
            platform.arch().name(),
            platform.qemu(),
            platform.describe()
        )));
    }
    check_nvme(&kernel.files, &kernel.what, progress)?;
    Ok(kernel)
}

/// The modules a guest loads when `--modules` names none: the drivers of its devices that the
/// tree has as modules (the rest are built in, or missing, which the guest then says).
fn device_modules(devices: &[SlotDevice]) -> Vec<String> {
    let mut wanted = vec!["nvme"];
    if devices.iter().any(|d| d.kind != DeviceKind::Nvme) {
        wanted.push("virtio_pci");
    }
    for (kind, module) in [
        (DeviceKind::VirtioBlk, "virtio_blk"),
        (DeviceKind::VirtioNet, "virtio_net"),
    ] {
        if devices.iter().any(|d| d.kind == kind) {
            wanted.push(module);
        }
    }
    wanted.into_iter().map(str::to_string).collect()
}

/// The guest's kernel command line: the console, the init's parameters, on x86 the kprobe
/// events that record the spreading calls and asynchronous probing of virtio-blk, the
/// machine's words, then `--append`'s.
fn kernel_command_line(opts: &RunOptions, devices: &[SlotDevice]) -> String {
    let platform = opts.machine.platform;
    let vblk = devices.iter().filter(|d| d.kind == DeviceKind::VirtioBlk).count();
    let mut append = format!(
        // loglevel=7: the console shows an oops (x86 prints "Oops:" at the default level, which
        // `quiet` hides) and enough of the boot that a silent guest is a hung one. An oops ends
        // the boot at once (panic, then QEMU's -no-reboot exit) when it can.
        "console={} loglevel=7 panic=-1 oops=panic lab.nvme={} lab.timeout={}",
        platform.console(),
        opts.ioqpairs.len(),
        opts.timeout.as_secs(),
    );
    if vblk > 0 {
        append.push_str(&format!(" lab.virtio_blk={vblk} driver_async_probe=virtio_blk"));
    }
    let trace = (platform == Platform::Q35).then_some(super::calls::KERNEL_ARGS.as_slice());
    let words = trace.into_iter().flatten().copied();
    for word in words
        .chain(opts.machine.kernel_args.iter().map(String::as_str))
        .chain([opts.append.as_str()])
    {
        if !word.is_empty() {
            append.push(' ');
            append.push_str(word);
        }
    }
    append
}

/// Everything a boot needs in the staging directory: the initramfs, a disk image per block
/// device, and the files and command line of the boot.
fn stage_boot(
    opts: &RunOptions,
    kernel: &KernelFiles,
    devices: &[SlotDevice],
    staging: &Staging,
    progress: &mut dyn FnMut(&str),
) -> Result<BootFiles, LabError> {
    let busybox = guest_busybox(opts, progress)?;
    let agent = (opts.machine.platform == Platform::Q35).then_some(opts.agent.as_path());
    let defaults = device_modules(devices);
    let modules = opts.modules.as_deref().unwrap_or(&defaults);
    let initrd_bytes = build_initramfs(
        agent,
        &busybox,
        kernel.modules.as_deref(),
        Modules {
            names: modules,
            required: opts.modules.is_some(),
        },
    )?;
    let initrd = staging.file(INITRD);
    std::fs::write(&initrd, &initrd_bytes).map_err(|e| input(format!("{}: {e}", initrd.display())))?;
    let mut disks = Vec::new();
    for name in devices.iter().filter_map(SlotDevice::disk) {
        let p = staging.file(&name);
        let f = std::fs::File::create(&p).map_err(|e| input(format!("{}: {e}", p.display())))?;
        f.set_len(DISK_BYTES)
            .map_err(|e| input(format!("{}: {e}", p.display())))?;
        disks.push(path_text(p));
    }
    Ok(BootFiles {
        kernel: path_text(kernel.image.clone()),
        initrd: path_text(initrd),
        disks,
        console: path_text(staging.file(CONSOLE)),
        console_on_terminal: false,
        boot_capture: path_text(staging.file(BOOT_CAPTURE)),
        seq_capture: path_text(staging.file(SEQ_CAPTURE)),
        append: kernel_command_line(opts, devices),
    })
}

fn path_text(p: PathBuf) -> String {
    p.to_string_lossy().into_owned()
}

/// Boot until a boot finishes, at most `retries` more times; KVM that cannot run the guest
/// gives way to TCG without counting as a try.
fn boot_with_retries(
    opts: &RunOptions,
    devices: &[SlotDevice],
    files: &BootFiles,
    staging: &Staging,
    progress: &mut dyn FnMut(&str),
) -> Result<Booted, LabError> {
    let platform = opts.machine.platform;
    let mut accel = match opts.accel {
        AccelChoice::Only(a) => a,
        AccelChoice::Auto if kvm_usable(platform) => Accel::Kvm,
        AccelChoice::Auto => Accel::Tcg,
    };
    let mut tries = 0;
    loop {
        let cpu = opts
            .cpu
            .clone()
            .unwrap_or_else(|| accel.default_cpu(platform).to_string());
        let args = qemu::qemu_args(&opts.machine, devices, accel, &cpu, files);
        tries += 1;
        progress(&format!(
            "boot {tries} ({}, {}, {} vCPUs, {})",
            accel.name(),
            platform.describe(),
            opts.machine.maxcpus,
            device_words(devices)
        ));
        match boot_once(&args, accel, opts, files, &staging.file(QEMU_LOG), progress) {
            Outcome::Done { wall } => {
                return Ok(Booted {
                    wall,
                    accel,
                    cpu,
                    tries,
                })
            }
            Outcome::NoKvm(why) if opts.accel == AccelChoice::Auto && accel == Accel::Kvm => {
                progress(&format!("KVM unusable ({why}); using TCG"));
                accel = Accel::Tcg;
                tries -= 1;
            }
            Outcome::Startup(why) => return Err(input(why)),
            Outcome::Fatal(why) => {
                return Err(LabError::Boot(format!("the guest cannot capture: {why}")));
            }
            Outcome::NoKvm(why) | Outcome::Failed(why) => {
                progress(&format!("boot {tries} failed: {why}"));
                // A failed boot's console and QEMU's messages, under names of their own.
                staging.keep_as(CONSOLE, &format!("{CONSOLE}.failed{tries}"));
                if std::fs::metadata(staging.file(QEMU_LOG)).is_ok_and(|m| m.len() > 0) {
                    staging.keep_as(QEMU_LOG, &format!("{QEMU_LOG}.failed{tries}"));
                }
                if tries > opts.retries {
                    return Err(LabError::Boot(format!("{tries} boot(s) did not finish; last: {why}")));
                }
            }
        }
    }
}

/// `3 NVMe` or `2 NVMe, 1 virtio-blk, 1 virtio-net`.
fn device_words(devices: &[SlotDevice]) -> String {
    let mut words = Vec::new();
    for (kind, name) in [
        (DeviceKind::Nvme, "NVMe"),
        (DeviceKind::VirtioBlk, "virtio-blk"),
        (DeviceKind::VirtioNet, "virtio-net"),
    ] {
        let n = devices.iter().filter(|d| d.kind == kind).count();
        if n > 0 || kind == DeviceKind::Nvme {
            words.push(format!("{n} {name}"));
        }
    }
    words.join(", ")
}

/// The spreading calls of a finished boot's two phases, written into its captures (none when
/// the guest recorded none: arm64, or a kernel without kprobe events). Returns the boot
/// phase's.
fn record_calls(files: &BootFiles, devices: &[SlotDevice]) -> Result<Option<ProbeCalls>, LabError> {
    let console = read_bounded(Path::new(&files.console), CAPTURE_BYTES_MAX).map_err(LabError::Boot)?;
    let mut boot_calls = None;
    for (phase, file) in [("boot", &files.boot_capture), ("seq", &files.seq_capture)] {
        let Some(calls) = super::calls::probe_calls(&console, phase, devices).map_err(LabError::Boot)? else {
            continue;
        };
        let mut capture = read_capture(Path::new(file)).map_err(LabError::Boot)?;
        capture.probe_calls = Some(calls.clone());
        let json = serde_json::to_string(&capture).map_err(|e| LabError::Boot(e.to_string()))?;
        std::fs::write(file, json + "\n").map_err(|e| LabError::Boot(format!("{file}: {e}")))?;
        if phase == "boot" {
            boot_calls = Some(calls);
        }
    }
    Ok(boot_calls)
}

/// Boot and capture, with retries, `opts.boots` times; `progress` gets one line per step.
pub fn run(opts: &RunOptions, progress: &mut dyn FnMut(&str)) -> Result<RunReport, LabError> {
    let devices = checked_options(opts)?;
    let kernel = fetch_kernel(opts, progress)?;
    let staging = Staging::new(&opts.output)?;
    let files = stage_boot(opts, &kernel.files, &devices, &staging, progress)?;
    let mut observed = Vec::new();
    let mut booted: Option<Booted> = None;
    for k in 1..=opts.boots {
        if opts.boots > 1 {
            progress(&format!("boot {k} of {}", opts.boots));
        }
        let b = boot_with_retries(opts, &devices, &files, &staging, progress)?;
        if let Some(calls) = record_calls(&files, &devices)? {
            observed.push(calls);
        }
        booted = Some(match booted {
            None => b,
            Some(first) => Booted {
                tries: first.tries + b.tries,
                ..b
            },
        });
    }
    let booted = booted.expect("at least one boot");
    finish(opts, &devices, &files, &staging, booted, kernel.package, &observed)
}

/// After the last boot: its files take the place of an earlier run's, the command line that
/// boots it again is saved, and a run of several boots writes their calls.
fn finish(
    opts: &RunOptions,
    devices: &[SlotDevice],
    files: &BootFiles,
    staging: &Staging,
    booted: Booted,
    package: Option<String>,
    observed: &[ProbeCalls],
) -> Result<RunReport, LabError> {
    let seq = read_capture(Path::new(&files.seq_capture)).map_err(LabError::Boot)?;
    let kernel_release = seq.snapshots[0].topology.kernel_release.clone();
    let warnings = [
        dropped_hotplug_slots(&opts.machine, &seq),
        online_cpus_differ(&opts.machine, &seq),
    ]
    .into_iter()
    .flatten()
    .collect();
    let disks: Vec<String> = devices.iter().filter_map(SlotDevice::disk).collect();
    keep_files(staging, &disks)?;
    let (cmd, again_console, command) = save_command(opts, devices, files, staging, &booted, &disks)?;
    let orders = if opts.boots > 1 {
        let file = staging.out(ORDERS);
        let origin = super::orders::Origin {
            kernel_release: kernel_release.clone(),
            package: package.clone(),
            kernel_command_line: files.append.clone(),
            qemu_command: command,
            date: super::orders::utc_date(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
            ),
        };
        let topology = seq.snapshots[0].topology.clone();
        let record = super::orders::OrdersCapture::new(origin, topology, super::calls::lab_devices(devices), observed);
        record.write(&file).map_err(LabError::Boot)?;
        Some(file)
    } else {
        None
    };
    Ok(RunReport {
        boot_capture: staging.out(BOOT_CAPTURE),
        seq_capture: staging.out(SEQ_CAPTURE),
        cmd,
        again_console,
        orders,
        accel: booted.accel,
        tries: booted.tries,
        wall: booted.wall,
        kernel_release,
        package,
        warnings,
    })
}

/// The boot succeeded: its files take the place of an earlier run's (the disk images of
/// controllers an earlier run had and this one has not go).
fn keep_files(staging: &Staging, disks: &[String]) -> Result<(), LabError> {
    let mut kept: Vec<String> = [CONSOLE, BOOT_CAPTURE, SEQ_CAPTURE, QEMU_LOG, INITRD]
        .into_iter()
        .map(str::to_string)
        .collect();
    kept.extend(disks.iter().cloned());
    for name in &kept {
        staging.keep(name)?;
    }
    for k in 0..qemu::NVME_MAX {
        let name = format!("nvme{k}.img");
        if !disks.contains(&name) {
            let _ = std::fs::remove_file(staging.out(&name));
        }
    }
    Ok(())
}

/// The saved command line boots the same machine from the files just kept, with the console
/// on the terminal (and in PREFIX.again.console) and the captures beside this run's, never
/// over them. Returns the command's file, its console's and the command.
fn save_command(
    opts: &RunOptions,
    devices: &[SlotDevice],
    files: &BootFiles,
    staging: &Staging,
    booted: &Booted,
    disks: &[String],
) -> Result<(PathBuf, PathBuf, String), LabError> {
    let again = BootFiles {
        initrd: path_text(staging.out(INITRD)),
        disks: disks.iter().map(|d| path_text(staging.out(d))).collect(),
        console: path_text(staging.out(&format!("again.{CONSOLE}"))),
        console_on_terminal: true,
        boot_capture: path_text(staging.out(&format!("again.{BOOT_CAPTURE}"))),
        seq_capture: path_text(staging.out(&format!("again.{SEQ_CAPTURE}"))),
        ..files.clone()
    };
    let cmd = staging.out(CMD);
    let args = qemu::qemu_args(&opts.machine, devices, booted.accel, &booted.cpu, &again);
    let command = shell_command(&opts.qemu, &args);
    std::fs::write(&cmd, command.clone() + "\n").map_err(|e| input(format!("{}: {e}", cmd.display())))?;
    Ok((cmd, PathBuf::from(again.console), command))
}

/// The files a run writes, as suffixes of the output prefix (`PREFIX.console`, …).
const CONSOLE: &str = "console";
const BOOT_CAPTURE: &str = "boot.agent.json";
const SEQ_CAPTURE: &str = "seq.agent.json";
const QEMU_LOG: &str = "qemu.log";
const INITRD: &str = "initramfs.cpio.gz";
const CMD: &str = "cmd";
/// The calls of every boot of a run of several (`--boots`).
const ORDERS: &str = "orders.json";
/// Most boots of one run (`--boots`).
pub(crate) const BOOTS_MAX: u32 = 100;

/// Where a run writes while it boots: a directory beside the output (`.NAME.lab-PID`), whose
/// files take their places (`PREFIX.console`, …) only once a boot succeeded, so that a run
/// that fails leaves an earlier run's captures, console and command line as they were. The
/// directory goes when the run ends.
struct Staging {
    dir: PathBuf,
    output: PathBuf,
}

impl Staging {
    fn new(output: &Path) -> Result<Staging, LabError> {
        let name = output
            .file_name()
            .ok_or_else(|| input(format!("-o {}: give a file name prefix", output.display())))?;
        let parent = output
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let dir = parent.join(format!(".{}.lab-{}", name.to_string_lossy(), std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| input(format!("{}: {e}", dir.display())))?;
        Ok(Staging {
            dir,
            output: output.to_path_buf(),
        })
    }

    /// A file while the run lasts.
    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Where a kept file goes: `PREFIX.NAME`.
    fn out(&self, name: &str) -> PathBuf {
        with_suffix(&self.output, &format!(".{name}"))
    }

    /// Move a file to its place.
    fn keep(&self, name: &str) -> Result<(), LabError> {
        let to = self.out(name);
        std::fs::rename(self.file(name), &to).map_err(|e| input(format!("{}: {e}", to.display())))
    }

    /// Move a file to `PREFIX.AS` when it is there (a failed boot's console).
    fn keep_as(&self, name: &str, to: &str) {
        let _ = std::fs::rename(self.file(name), self.out(to));
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_command_lines_quote_what_the_shell_would_split() {
        let args: Vec<String> = [
            "-append",
            "console=ttyS0 loglevel=7",
            "-kernel",
            "/tmp/a b/vmlinuz",
            "-x",
            "it's",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            shell_command("qemu-system-x86_64", &args),
            "qemu-system-x86_64 -append 'console=ttyS0 loglevel=7' -kernel '/tmp/a b/vmlinuz' -x 'it'\\''s'"
        );
    }

    #[test]
    fn dropped_hotplug_slots_are_named() {
        let t2: crate::topology::TopologySpec = toml::from_str(
            "name = \"t2\"\nnodes = [\"0-3\", \"4-7\"]\nsmt = [\"0-1\", \"2-3\", \"4-5\", \"6-7\"]\npresent = \"0-5\"\n",
        )
        .unwrap();
        let m = qemu::guest_machine(&crate::topology::Topology::new(&t2).unwrap(), None, None).unwrap();
        assert_eq!((m.cpus, m.maxcpus), (6, 8));
        let capture = |possible: &str| -> Capture {
            serde_json::from_str(&format!(
                r#"{{"version":3,"snapshots":[{{"version":3,"host":"lab","taken_unix_ms":0,"boot_id":"",
                "topology":{{"nodes":["0-2","3-5"],"possible":"{possible}","present":"0-5","online":"0-5",
                "kernel_release":"6.12.117+deb12-amd64"}},"cpus":[],"irqs":[]}}]}}"#
            ))
            .unwrap()
        };
        let w = dropped_hotplug_slots(&m, &capture("0-5")).unwrap();
        assert!(w.contains("hotplug slots 6-7") && w.contains("6.12.117"), "{w}");
        assert_eq!(dropped_hotplug_slots(&m, &capture("0-7")), None);
    }
}
