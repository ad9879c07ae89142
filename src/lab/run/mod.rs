//! Boot a kernel in QEMU on a lab machine and bring back the agent's captures.
//!
//! A run, in the order [`run`] takes it: check the options, fetch the kernel (refused when it
//! is built for another architecture or will have no NVMe driver, [`fetch::nvme_in_kernel`]),
//! stage what the guest boots from ([`guest`]: the initramfs, the disk images, the kernel
//! command line), boot it until a boot finishes ([`boot`]: QEMU started and watched, retried
//! when the guest dies or hangs), record the spreading calls the guest logged, and keep the
//! files.
//!
//! x86 guests boot `qemu-system-x86_64 -M q35` with three serial ports: the console, the
//! capture as probed and the capture after binding the controllers one at a time. arm64
//! guests boot `qemu-system-aarch64 -M virt`, whose one serial port carries the console and
//! the files of both captures, read back by [`super::console`]. A boot counts only when the
//! guest said `lab: done` and both captures parse as the agent's versioned format.
//!
//! A run writes into a staging directory beside its output and moves the files into place only
//! once a boot succeeded, so that a run that fails leaves an earlier run's files as they were.
//! It keeps the initramfs and the disk images with the captures, and saves the QEMU command
//! line that boots them again (`PREFIX.cmd`), its console on the terminal and its captures
//! beside the run's (`PREFIX.again.*`), never over them.

mod boot;
mod guest;

use super::fetch::{self, KernelFiles, Nvme};
use super::initramfs;
use super::qemu::{self, Accel, BootFiles, GuestMachine, Platform, SlotDevice};
use crate::live::protocol::{Capture, ProbeCalls};
use crate::topology::Arch;
use boot::{boot_with_retries, Booted};
use guest::{path_text, stage_boot};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) use super::fetch::resolve_package;

/// Largest capture read back from a serial port file, and largest console read for one.
pub(crate) const CAPTURE_BYTES_MAX: u64 = 64 << 20;
/// Most boots of one run (the first and its retries).
pub(crate) const TRIES_MAX: u32 = 20;

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
