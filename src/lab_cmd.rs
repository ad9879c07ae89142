//! `irqscope lab`: boot a kernel in QEMU on a modelled machine (`lab run`), or check a
//! captured placement against the models (`lab check`). The work is `lab::run` and
//! `lab::check`; this is their command line.

use crate::{load_topology, read_text};
use clap::Subcommand;
use irqscope::catalogue;
use irqscope::render::columns::wrap;
use irqscope::scenario::spec::shell_word;
use irqscope::scenario::{self as scen, spec::ScenarioSpec};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Subcommand)]
pub(crate) enum LabCmd {
    /// Compare an agent capture with the model of the captured machine: per kind
    /// matched/total, the differences, `N matched, M differ` (exit 0 only when M is 0).
    Check(LabCheckArgs),
    /// Boot a kernel in QEMU (x86_64: q35; arm64: virt) on a preset, topology file or
    /// permalink's machine with its NVMe controllers; write the agent's captures as probed and
    /// bound one at a time.
    Run(Box<RunArgs>),
}

#[derive(clap::Args)]
pub(crate) struct LabCheckArgs {
    /// An `irqscope-agent capture` file (any released protocol version).
    capture: PathBuf,
    /// The kernel release that placed the interrupts (for captures that do not record it):
    /// variant, sort and hotplug rule default from it.
    #[arg(long)]
    kernel: Option<String>,
    #[command(flatten)]
    models: crate::model_cmd::ModelFlags,
    /// Also run every variant x sort x effective model and say which reproduce the capture.
    #[arg(long)]
    all: bool,
    /// The machine the capture was taken on, as drawn (preset, topology file or machine
    /// word): its SMT and cluster sets replace the capture's, which are the kernel's already;
    /// online CPUs stay as captured.
    #[arg(long)]
    machine: Option<String>,
}

pub(crate) fn lab(cmd: LabCmd) -> anyhow::Result<ExitCode> {
    match cmd {
        LabCmd::Check(a) => {
            let text = read_text(&a.capture)?;
            if let Some(orders) = irqscope::lab::orders::OrdersCapture::parse(&text) {
                let (text, passed) = orders
                    .and_then(|o| irqscope::lab::orders::check(&o))
                    .map_err(|e| anyhow::anyhow!("{}: {e}", a.capture.display()))?;
                print!("{text}");
                return Ok(if passed { ExitCode::SUCCESS } else { ExitCode::from(1) });
            }
            let machine = a.machine.as_deref().map(load_topology).transpose()?;
            let report = irqscope::lab::check::check(
                &text,
                &irqscope::lab::check::CheckOptions {
                    kernel: a.kernel,
                    models: a.models.names(),
                    all: a.all,
                    machine,
                },
            )
            .map_err(|e| anyhow::anyhow!("{}: {e}", a.capture.display()))?;
            print!("{}", report.text);
            Ok(if report.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        LabCmd::Run(args) => lab_run(*args),
    }
}

#[derive(clap::Args)]
pub(crate) struct RunArgs {
    /// A preset name, a topology file, or a permalink (`/s/v1.…`, whose devices are used).
    machine: String,
    /// A kernel image (bzImage) file, or a Debian package name (`linux-image-…`) to download;
    /// in a package name each `*` stands for a version number, and the newest match in the apt
    /// index is booted (`linux-image-6.1.0-*-amd64`).
    #[arg(long)]
    kernel: String,
    /// The kernel build's lib/modules/VERSION tree (when NVMe is a module of an image file).
    #[arg(long, value_name = "DIR")]
    modules_dir: Option<PathBuf>,
    /// A Debian package holding the kernel's modules (a split 7.x kernel's
    /// linux-modules-VERSION; `*` as in --kernel).
    #[arg(long, value_name = "PACKAGE")]
    modules_package: Option<String>,
    /// Modules to load, comma-separated, dependencies added (default: nvme when there is one).
    #[arg(long)]
    modules: Option<String>,
    /// NVMe controllers as max_ioqpairs, comma-separated, in PCI order (default: the
    /// permalink's devices; none for a preset or file).
    #[arg(long)]
    nvme: Option<String>,
    /// virtio-blk devices after the controllers in PCI order: N, or N:QUEUES (every device
    /// QUEUES request queues), or N:Q1,Q2,... (one each); default 1 queue each.
    #[arg(long, value_name = "N[:QUEUES,...]")]
    virtio_blk: Option<String>,
    /// virtio-net devices after the virtio-blk ones: N, or N:QUEUES queue pairs each (above
    /// one, a multiqueue tap backend: the host needs /dev/net/tun and root).
    #[arg(long, value_name = "N[:QUEUES]")]
    virtio_net: Option<String>,
    /// Boot the same machine this many times and write PREFIX.orders.json, the spreading
    /// calls of every boot (x86), checked against the ordering model.
    #[arg(long, default_value_t = 1)]
    boots: u32,
    /// Memory per node in MiB, comma-separated (0: a memoryless node); default 512 per node with
    /// CPUs, 256 per node without.
    #[arg(long)]
    node_memory: Option<String>,
    /// Output prefix: PREFIX.boot.agent.json, PREFIX.seq.agent.json, PREFIX.console.
    #[arg(long, short, default_value = "lab")]
    output: PathBuf,
    /// auto (KVM when it works, else TCG), kvm or tcg.
    #[arg(long, default_value = "auto")]
    accel: String,
    /// QEMU -cpu model (default: host under KVM, qemu64,vendor=GenuineIntel under TCG).
    #[arg(long)]
    cpu: Option<String>,
    /// Extra kernel command-line words.
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    append: String,
    /// Boot again this many times when a boot does not finish.
    #[arg(long, default_value_t = 3)]
    retries: u32,
    /// Wall-clock limit of one boot, in seconds.
    #[arg(long, default_value_t = 900)]
    timeout: u64,
    /// Seconds a guest may print nothing before it is killed and booted again (default: 120,
    /// and 10 more per vCPU).
    #[arg(long, value_name = "SECS")]
    silence: Option<u64>,
    /// arm64: on boots QEMU virt with a GICv3 and its ITS (MSIs as LPIs), off with a GICv2 and
    /// GICv2m (MSIs as SPIs, at most 8 CPUs); default from the machine's controller.
    #[arg(long, value_parser = ["on", "off"])]
    its: Option<String>,
    /// Scratch directory (downloaded kernels are kept there).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// An apt-get `-o` option for the download (repeat), e.g. a private sources list.
    #[arg(long = "apt-option", value_name = "OPT")]
    apt_options: Vec<String>,
    /// The irqscope-agent binary for x86 guests (default: the one beside this program).
    #[arg(long)]
    agent: Option<PathBuf>,
    /// A static busybox of the guest's architecture (default: busybox on PATH for x86,
    /// Debian's busybox-static:arm64 downloaded to the work directory for arm64).
    #[arg(long)]
    busybox: Option<PathBuf>,
    /// The QEMU system emulator (default: qemu-system-x86_64 for x86_64 machines,
    /// qemu-system-aarch64 for arm64).
    #[arg(long)]
    qemu: Option<String>,
}

fn comma_list(text: &str, what: &str) -> anyhow::Result<Vec<u32>> {
    text.split(',')
        .map(|v| {
            v.trim()
                .parse::<u32>()
                .map_err(|_| anyhow::anyhow!("{what} {text:?}: give numbers like 3,5,6"))
        })
        .collect()
}

/// The queues of each device of `--virtio-blk N[:QUEUES,...]` or `--virtio-net N[:QUEUES]`.
fn virtio_list(text: Option<&str>, what: &str, several: bool) -> anyhow::Result<Vec<u32>> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    let form = if several { "N[:QUEUES,...]" } else { "N[:QUEUES]" };
    let (n, queues) = match text.split_once(':') {
        Some((n, q)) => (n, Some(q)),
        None => (text, None),
    };
    let n: usize = n
        .trim()
        .parse()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| anyhow::anyhow!("{what} {text:?}: give {form}, N at least 1 (2:4)"))?;
    let list = match queues {
        None => vec![1],
        Some(q) => comma_list(q, what)?,
    };
    match list.len() {
        1 => Ok(vec![list[0]; n]),
        k if several && k == n => Ok(list),
        k => anyhow::bail!(
            "{what} {text:?}: {k} queue counts for {n} devices (give one for all{})",
            if several { ", or one each" } else { "" }
        ),
    }
}

/// The machine and NVMe devices a `lab run` boots: a permalink's (`/s/v1.…`), or a preset's
/// or topology file's without devices.
fn lab_machine(machine: &str) -> anyhow::Result<(std::sync::Arc<irqscope::topology::Topology>, Vec<scen::Device>)> {
    let link = machine.rsplit("/s/").next().unwrap_or(machine);
    if link.starts_with("v1.") {
        let spec: ScenarioSpec =
            scen::permalink::decode(link).map_err(|e| anyhow::anyhow!("permalink {machine:?}: {e}"))?;
        let scenario = spec.resolve(catalogue::get)?;
        Ok((scenario.topology_arc().clone(), scenario.devices().to_vec()))
    } else {
        Ok((load_topology(machine)?, Vec::new()))
    }
}

/// The kernel a `lab run` boots: an image file (with its modules tree) or a package name.
fn lab_kernel(args: &RunArgs) -> anyhow::Result<irqscope::lab::run::KernelSource> {
    use irqscope::lab::run::KernelSource;
    if Path::new(&args.kernel).is_file() {
        return Ok(KernelSource::Image {
            image: args.kernel.clone().into(),
            modules: args.modules_dir.clone(),
        });
    }
    anyhow::ensure!(
        args.modules_dir.is_none(),
        "--modules-dir goes with a kernel image file"
    );
    Ok(KernelSource::Package(args.kernel.clone()))
}

fn lab_run(args: RunArgs) -> anyhow::Result<ExitCode> {
    use irqscope::lab::{qemu, run};
    let (topology, devices) = lab_machine(&args.machine)?;
    let kernel = lab_kernel(&args)?;
    let memory = args
        .node_memory
        .as_deref()
        .map(|m| comma_list(m, "--node-memory"))
        .transpose()?;
    let machine = qemu::guest_machine(&topology, memory.as_deref(), args.its.as_deref().map(|i| i == "on"))?;
    let ioqpairs = match &args.nvme {
        Some(list) => comma_list(list, "--nvme")?,
        None => qemu::nvme_ioqpairs(&devices, topology.possible().weight())?,
    };
    let accel = match args.accel.as_str() {
        "auto" => run::AccelChoice::Auto,
        "kvm" => run::AccelChoice::Only(qemu::Accel::Kvm),
        "tcg" => run::AccelChoice::Only(qemu::Accel::Tcg),
        other => anyhow::bail!("--accel {other:?}: auto, kvm or tcg"),
    };
    let agent = match args.agent {
        Some(a) => a,
        None => std::env::current_exe()?.with_file_name("irqscope-agent"),
    };
    anyhow::ensure!(
        agent.is_file() || machine.platform != qemu::Platform::Q35,
        "{}: no irqscope-agent (build it, or give --agent)",
        agent.display()
    );
    for note in &machine.notes {
        eprintln!("lab: note: {note}");
    }
    let vcpus = machine.maxcpus;
    let qemu = args.qemu.unwrap_or_else(|| machine.platform.qemu().to_string());
    let opts = run::RunOptions {
        kernel,
        modules_package: args.modules_package,
        machine,
        ioqpairs,
        virtio_blk: virtio_list(args.virtio_blk.as_deref(), "--virtio-blk", true)?,
        virtio_net: virtio_list(args.virtio_net.as_deref(), "--virtio-net", false)?,
        boots: args.boots,
        agent,
        busybox: args.busybox,
        qemu,
        modules: args
            .modules
            .map(|m| m.split(',').map(|s| s.trim().to_string()).collect()),
        accel,
        cpu: args.cpu,
        append: args.append,
        work_dir: args
            .work_dir
            .unwrap_or_else(|| std::env::temp_dir().join("irqscope-lab")),
        output: args.output,
        retries: args.retries,
        timeout: std::time::Duration::from_secs(args.timeout),
        silence: args
            .silence
            .map(std::time::Duration::from_secs)
            .unwrap_or_else(|| run::silence_default(vcpus)),
        apt_options: args.apt_options,
    };
    lab_result(run::run(&opts, &mut |line| eprintln!("lab: {line}")))
}

/// Most `differ:` lines `lab run` repeats from its check.
const VERDICT_DIFFER_LINES_MAX: usize = 12;

/// `lab check` on the capture a run made, as `lab run` ends: the model, the warnings, notes
/// and differences, and the count; the whole report is `lab check`'s.
fn verdict(seq: &Path) -> String {
    let shown = shell_word(&seq.to_string_lossy());
    let text = match read_text(seq)
        .map_err(|e| e.to_string())
        .and_then(|text| irqscope::lab::check::check(&text, &irqscope::lab::check::CheckOptions::default()))
    {
        Ok(report) => report.text,
        Err(e) => return format!("lab check {shown}: not run: {e}\n"),
    };
    let mut out = format!("lab check {shown}:\n");
    let mut differ = 0;
    for line in text.lines() {
        let keep = ["model:", "warning:", "note:", "differ:"]
            .iter()
            .any(|p| line.starts_with(p));
        if line.starts_with("differ:") {
            differ += 1;
            if differ > VERDICT_DIFFER_LINES_MAX {
                continue;
            }
        }
        if keep {
            out.push_str(&wrap(line, "  ", "    "));
        }
    }
    if differ > VERDICT_DIFFER_LINES_MAX {
        out.push_str(&format!(
            "  … {} more differences: irqscope lab check {shown}\n",
            differ - VERDICT_DIFFER_LINES_MAX
        ));
    }
    out.push_str(&format!("  {}\n", text.lines().last().unwrap_or("")));
    out
}

/// `lab check` on the orders file of a run of several boots.
fn orders_verdict(path: &Path) -> String {
    let shown = shell_word(&path.to_string_lossy());
    let checked = irqscope::lab::orders::read(path).and_then(|o| match o {
        Some(o) => irqscope::lab::orders::check(&o),
        None => Err("not an orders file".to_string()),
    });
    match checked {
        Ok((text, _)) => format!("lab check {shown}:\n{text}"),
        Err(e) => format!("lab check {shown}: not run: {e}\n"),
    }
}

/// What `lab run` prints of a boot: its warnings, then one line (exit 0); a boot that did not
/// finish is exit 1.
fn lab_result(result: Result<irqscope::lab::run::RunReport, irqscope::lab::run::LabError>) -> anyhow::Result<ExitCode> {
    use irqscope::lab::run::LabError;
    match result {
        Ok(r) => {
            for w in &r.warnings {
                eprintln!("lab: warning: {w}");
            }
            println!(
                "{}{} booted in {:.1} s ({}, {} boot{}): {} {}",
                r.kernel_release,
                r.package.as_deref().map(|p| format!(" ({p})")).unwrap_or_default(),
                r.wall.as_secs_f64(),
                r.accel.name(),
                r.tries,
                if r.tries == 1 { "" } else { "s" },
                r.boot_capture.display(),
                r.seq_capture.display()
            );
            println!(
                "boot it again: sh {} (console on the terminal and in {})",
                shell_word(&r.cmd.to_string_lossy()),
                r.again_console.display()
            );
            print!("{}", verdict(&r.seq_capture));
            if let Some(orders) = &r.orders {
                print!("{}", orders_verdict(orders));
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(LabError::Boot(msg)) => {
            eprintln!("irqscope: lab run: {msg}");
            Ok(ExitCode::from(1))
        }
        Err(e) => Err(e.into()),
    }
}
