//! One boot and its retries: QEMU started on the staged files, the console followed for the
//! init's progress, and the boot judged by how it ended and by its captures.
//!
//! A boot that did not finish is tried again: multi-threaded TCG now and then kills a guest
//! with `Oops: int3` while the kernel patches its own text (seen on Debian's 6.12 and 7.2
//! kernels), and such a guest may hang instead of panicking. The console runs at a log level
//! that shows an oops; a guest that printed an oops and did not stop, or printed nothing for
//! `--silence`, is killed and tried again then rather than at the timeout. QEMU that ends by
//! itself before the guest printed anything never started it (a machine or file it refuses):
//! that is bad input, reported with QEMU's words and not tried again. KVM that cannot run the
//! guest gives way to TCG without counting as a try.

use super::{
    input, read_bounded, read_capture, AccelChoice, LabError, RunOptions, Staging, CAPTURE_BYTES_MAX, CONSOLE, QEMU_LOG,
};
use crate::lab::qemu::{self, Accel, BootFiles, DeviceKind, Platform, SlotDevice};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

/// A boot that finished: its wall time, the accelerator and CPU model it ran with, and the
/// boots it took (the failed ones before it included).
pub(super) struct Booted {
    pub(super) wall: Duration,
    pub(super) accel: Accel,
    pub(super) cpu: String,
    pub(super) tries: u32,
}

/// Boot until a boot finishes, at most `retries` more times; KVM that cannot run the guest
/// gives way to TCG without counting as a try.
pub(super) fn boot_with_retries(
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
            let capture = crate::lab::console::capture_from_console(&console, phase, CAPTURE_HOST, &scratch)?;
            let json = serde_json::to_string(&capture).map_err(|e| e.to_string())?;
            std::fs::write(out, json + "\n").map_err(|e| format!("{out}: {e}"))
        });
    let _ = std::fs::remove_dir_all(&scratch);
    result
}
