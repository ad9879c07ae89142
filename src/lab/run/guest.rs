//! What a lab guest boots from: the initramfs (busybox, `lab/init.sh`, on x86
//! `irqscope-agent` with the libraries it links, the modules in dependency order), an empty
//! disk image per block device, and the kernel command line.

use super::{input, LabError, RunOptions, Staging, BOOT_CAPTURE, CONSOLE, INITRD, SEQ_CAPTURE};
use crate::lab::calls;
use crate::lab::fetch::{self, KernelFiles};
use crate::lab::initramfs::{self, Entry};
use crate::lab::qemu::{BootFiles, DeviceKind, Platform, SlotDevice};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The guest's PID 1.
const INIT_SCRIPT: &str = include_str!("../../../lab/init.sh");

/// Size of each controller's (empty, sparse) disk image.
const DISK_BYTES: u64 = 16 << 20;

/// Everything a boot needs in the staging directory: the initramfs, a disk image per block
/// device, and the files and command line of the boot.
pub(super) fn stage_boot(
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

pub(super) fn path_text(p: PathBuf) -> String {
    p.to_string_lossy().into_owned()
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
    let trace = (platform == Platform::Q35).then_some(calls::KERNEL_ARGS.as_slice());
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
struct Modules<'a> {
    names: &'a [String],
    required: bool,
}

/// Build the initramfs image for a module tree; returns its bytes. Without an agent (arm64
/// guests) the init prints the files the agent reads on the console.
fn build_initramfs(
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
