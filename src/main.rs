//! The `irqscope` command: simulate a scenario, check golden vectors, inspect topologies,
//! serve the dashboard. Thin over the library: argument parsing, files, exit codes.
//!
//! Exit status: 0 success, 1 a check failed (`check-golden`), 2 bad input (with a one-line
//! message on stderr).

mod topology_cmd;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use irqscope::scenario::spec::{self, DeviceSpec, ScenarioSpec, TopologyRef};
use irqscope::scenario::{self as scen, Scenario};
use irqscope::topology::compact;
use irqscope::{catalogue, golden, metrics, render};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Where `irqscope serve` (and `irqscope` with no subcommand) listens.
const DEFAULT_SERVE_ADDR: &str = "127.0.0.1:8080";

/// Largest scenario or topology file read.
const INPUT_FILE_BYTES_MAX: u64 = 16 << 20;

#[derive(Parser)]
#[command(
    name = "irqscope",
    version,
    about = "Where do interrupts land? Kernel IRQ placement, bit-exact."
)]
struct Cli {
    /// Without a subcommand, serve the dashboard on the default address.
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario: a topology, devices probed in order, a kernel variant.
    Simulate(SimulateArgs),
    /// Check golden vectors: every *.json case under the given directories.
    CheckGolden {
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
    },
    /// Inspect, list and import topologies.
    #[command(subcommand)]
    Topology(topology_cmd::TopologyCommand),
    /// Map CPUs to blk-mq hardware queues with one of the kernel's mappers.
    BlkMq(BlkMqArgs),
    /// The same machine and devices under two sides (variant, sort, effective model, counter):
    /// the text of `/c/…/text`.
    Compare(CompareArgs),
    /// The MANA driver's IRQ set-up, before and after the low-vCPU patch (seed 001).
    Mana(ManaArgs),
    /// The scheduler's NUMA imbalance decision for a communicating pair (seed 003).
    Sched(SchedArgs),
    /// Judge variants and proposals on many machines at once: variants x topologies x device
    /// mixes x starting counters.
    Sweep(SweepArgs),
    /// Real kernels in the loop: boot one in QEMU on a modelled machine, or check a kernel's
    /// captured placement against the models.
    #[command(subcommand)]
    Lab(LabCmd),
    /// Start the dashboard.
    Serve {
        #[arg(long, default_value = DEFAULT_SERVE_ADDR)]
        addr: String,
        /// Open connections at most (SSE streams included); more wait to be accepted.
        #[arg(long, value_name = "N", default_value_t = irqscope::web::server::CONNECTIONS_MAX,
              value_parser = irqscope::web::server::parse_connections_max)]
        max_connections: usize,
        #[command(flatten)]
        live: LiveArgs,
    },
}

#[derive(clap::Args)]
struct RunArgs {
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
    /// Modules to load, comma-separated, dependencies added (default: nvme when there is one).
    #[arg(long)]
    modules: Option<String>,
    /// NVMe controllers as max_ioqpairs, comma-separated, in PCI order (default: the
    /// permalink's devices; none for a preset or file).
    #[arg(long)]
    nvme: Option<String>,
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
    /// Scratch directory (downloaded kernels are kept there).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// An apt-get `-o` option for the download (repeat), e.g. a private sources list.
    #[arg(long = "apt-option", value_name = "OPT")]
    apt_options: Vec<String>,
    /// The irqscope-agent binary (default: the one beside this program).
    #[arg(long)]
    agent: Option<PathBuf>,
    /// A static busybox (default: busybox on PATH).
    #[arg(long)]
    busybox: Option<PathBuf>,
    #[arg(long, default_value = "qemu-system-x86_64")]
    qemu: String,
}

/// Live mode: who may push snapshots, and where history is kept.
#[derive(clap::Args)]
struct LiveArgs {
    /// Ingestion tokens, one `TOKEN` or `HOST=TOKEN` per line (or the same text in the
    /// IRQSCOPE_LIVE_TOKENS variable). Without tokens, ingestion is disabled.
    #[arg(long, value_name = "FILE")]
    live_tokens: Option<PathBuf>,
    /// Viewer tokens, one per line: when given, the live pages, their JSON and SSE streams
    /// need one (Authorization: Bearer, or the cookie a visit with ?token=TOKEN sets).
    #[arg(long, value_name = "FILE")]
    live_viewer_tokens: Option<PathBuf>,
    /// A TLS proxy in front of the server (its address as the server sees it, e.g.
    /// 127.0.0.1): requests from it are counted against the client its X-Forwarded-For names
    /// (per-client SSE cap, import budget). Repeat for several.
    #[arg(long, value_name = "ADDR")]
    live_trusted_proxy: Vec<std::net::IpAddr>,
    /// Keep live history in this file (redb) so a restart loses none.
    #[arg(long, value_name = "FILE")]
    live_store: Option<PathBuf>,
    /// Drop a live host that has not pushed for this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = irqscope::live::limits::HOST_IDLE_MS_DEFAULT / 1000)]
    live_host_idle: u64,
    /// If the --live-store file is damaged, rename it to FILE.damaged-N and start empty.
    #[arg(long)]
    live_store_move_aside: bool,
    /// Also serve every host this Prometheus scrapes from `irqscope-agent export`
    /// (http://HOST:PORT or https://, or a Thanos/Mimir query URL).
    #[arg(long, value_name = "URL")]
    prometheus: Option<String>,
    /// How often to ask the Prometheus for new scrapes (its scrape interval).
    #[arg(long, value_name = "MS", default_value_t = irqscope::live::prometheus::POLL_MS_DEFAULT)]
    prometheus_poll_ms: u64,
    /// The hosts' scrape interval, for the rate() window (4 x it); default: what Prometheus'
    /// /api/v1/targets says for the host's job, else 15000.
    #[arg(long, value_name = "MS")]
    prometheus_scrape_ms: Option<u64>,
    /// PEM certificates of a private CA to trust for an https:// --prometheus.
    #[arg(long, value_name = "FILE")]
    prometheus_ca_file: Option<std::path::PathBuf>,
}

#[derive(clap::Args)]
struct BlkMqArgs {
    /// A preset name or a topology file.
    topology: String,
    #[arg(long)]
    queues: u32,
    /// current, v6.3, legacy-v5.1, legacy-v4.13, legacy-v4.10.
    #[arg(long, default_value = "current")]
    mapper: String,
    #[arg(long, default_value_t = 0)]
    queue_offset: u32,
    /// group_cpus_evenly variant (current and v6.3 only).
    #[arg(long)]
    variant: Option<String>,
    #[arg(long)]
    sort: Option<String>,
    #[arg(long, default_value_t = 0)]
    counter: u32,
}

#[derive(clap::Args)]
struct ManaArgs {
    /// A preset name or topology file (every CPU id possible); or use --input.
    topology: Option<String>,
    /// A JSON file with a MANA `input` object (the golden-vector form), or a whole case.
    #[arg(long, conflicts_with = "topology")]
    input: Option<PathBuf>,
    /// NUMA node of the device; -1 for none.
    #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
    device_node: i32,
    /// dynamic or static MSI-X.
    #[arg(long, default_value = "dynamic")]
    mode: String,
    #[arg(long, default_value_t = 64)]
    max_msix: u32,
    /// Vectors already held on each CPU before the probe, e.g. 0,1,1,1.
    #[arg(long)]
    load: Option<String>,
    /// The irqaffinity= boot option (a cpulist).
    #[arg(long)]
    irqaffinity: Option<String>,
}

#[derive(clap::Args)]
struct SchedArgs {
    /// A preset name or topology file with a distance matrix; or use --input.
    topology: Option<String>,
    /// A JSON file with a sched `input` object (the golden-vector form), or a whole case.
    #[arg(long, conflicts_with = "topology")]
    input: Option<PathBuf>,
    /// Node running the communicating pair (on its two lowest CPUs).
    #[arg(long, default_value_t = 1)]
    pair_node: u32,
    /// Extra runnable tasks on otherwise idle CPUs of the pair's node.
    #[arg(long, default_value_t = 0)]
    noise: u32,
    #[arg(long, default_value_t = 30)]
    node_reclaim_distance: u32,
}

#[derive(clap::Args)]
struct SweepArgs {
    /// Presets separated by commas (default: the whole catalogue); repeat to add more.
    #[arg(long, conflicts_with = "all")]
    topologies: Vec<String>,
    /// The whole catalogue.
    #[arg(long)]
    all: bool,
    /// A named mix (nvme-6x32, nvme-6x14, nic-2x16-sets, nvme-4x8+nic-2x16) or device tokens
    /// separated by spaces, optionally NAME=TOKENS; repeat for several (default: the named mixes).
    #[arg(long)]
    mix: Vec<String>,
    /// Variants and proposals separated by commas, or `all` (default); repeat to add more.
    #[arg(long)]
    variants: Vec<String>,
    /// Starting spread counters: a..b (b excluded), a..=b or n.
    #[arg(long, default_value = "0..8")]
    counters: String,
    #[arg(long)]
    sort: Option<String>,
    #[arg(long)]
    effective: Option<String>,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    #[arg(long, value_enum, default_value_t = SweepFormat::Text)]
    format: SweepFormat,
}

#[derive(Clone, Copy, ValueEnum)]
enum SweepFormat {
    Text,
    Csv,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(clap::Args)]
struct CompareArgs {
    /// A preset name (`irqscope topology list`) or a topology file (.toml).
    topology: String,
    /// Devices: [COUNTx]QUEUES[:key=value,...], e.g. `6x62:pre=1,name=nvme`.
    #[arg(required = true)]
    devices: Vec<String>,
    /// Side A's variant (default: cluster).
    #[arg(long)]
    a: Option<String>,
    /// Side B's variant (default: another variant than A's).
    #[arg(long)]
    b: Option<String>,
    /// Side A's heapsort generation: heap-v5.1, heap-v6.9, heap-v6.11 (default).
    #[arg(long)]
    a_sort: Option<String>,
    /// Side B's heapsort generation (default: heap-v6.11).
    #[arg(long)]
    b_sort: Option<String>,
    /// Side A's effective-CPU model (default: from the preset's architecture; arm64: first-cpu).
    #[arg(long)]
    a_effective: Option<String>,
    /// Side B's effective-CPU model (default: as side A's default).
    #[arg(long)]
    b_effective: Option<String>,
    /// Side A's starting value of the rotation patch's spread counter (default 0).
    #[arg(long)]
    a_counter: Option<u32>,
    /// Side B's starting value of the rotation patch's spread counter (default 0).
    #[arg(long)]
    b_counter: Option<u32>,
    /// Both sides form their managed masks with a policy proposal instead (offset-by-probed).
    #[arg(long)]
    proposal: Option<String>,
    #[command(flatten)]
    boot: BootArgs,
}

/// The boot-parameter flags `simulate` and `compare` share.
#[derive(clap::Args)]
struct BootArgs {
    /// The irqaffinity= boot parameter: default affinity of non-managed interrupts (a cpulist).
    #[arg(long, value_name = "LIST")]
    irqaffinity: Option<String>,
    /// The isolcpus= boot parameter, e.g. managed_irq,2-5.
    #[arg(long, value_name = "[FLAGS,]LIST")]
    isolcpus: Option<String>,
    /// The nohz_full= boot parameter (a cpulist; checked, moves no interrupt).
    #[arg(long, value_name = "LIST")]
    nohz_full: Option<String>,
    /// Vectors other interrupts hold before the first device, e.g. 0:16,1-3:2.
    #[arg(long, value_name = "CPUS:N,...")]
    vectors_held: Option<String>,
}

impl BootArgs {
    fn params(&self) -> scen::BootParams {
        scen::BootParams {
            irqaffinity: self.irqaffinity.clone(),
            isolcpus: self.isolcpus.clone(),
            nohz_full: self.nohz_full.clone(),
            vectors_held: self.vectors_held.clone(),
        }
    }
}

#[derive(clap::Args)]
struct SimulateArgs {
    /// A preset name (`irqscope topology list`) or a topology file (.toml); with --scenario, omit.
    topology: Option<String>,
    /// Devices: [COUNTx]QUEUES[:key=value,...], e.g. `6x62:pre=1,name=nvme`.
    devices: Vec<String>,
    /// Read the whole scenario from a JSON file instead.
    #[arg(long, conflicts_with_all = ["topology", "devices"])]
    scenario: Option<PathBuf>,
    /// Default pre vectors for devices that do not say (NVMe's admin queue is 1).
    #[arg(long, default_value_t = 0)]
    pre: u32,
    #[arg(long, default_value_t = 0)]
    post: u32,
    /// Default interrupt sets, e.g. 4+2.
    #[arg(long)]
    sets: Option<String>,
    /// Devices allocate without managed affinity.
    #[arg(long)]
    unmanaged: bool,
    /// Default blk-mq map: irq or cpumap.
    #[arg(long)]
    blk_mq: Option<String>,
    /// group_cpus_evenly variant: pre-cluster, cluster, rotation, rotation-ohcl, rotation-v1r.
    #[arg(long)]
    variant: Option<String>,
    /// Heapsort generation: heap-v5.1, heap-v6.9, heap-v6.11.
    #[arg(long)]
    sort: Option<String>,
    /// Effective-CPU model: x86-matrix or first-cpu.
    #[arg(long)]
    effective: Option<String>,
    /// Starting value of the rotation patch's spread counter.
    #[arg(long)]
    counter: Option<u32>,
    /// Form the managed masks with a policy proposal instead (offset-by-probed).
    #[arg(long)]
    proposal: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Also print every vector (mask, effective CPU).
    #[arg(long)]
    vectors: bool,
    #[command(flatten)]
    boot: BootArgs,
    /// Always report the vector space per CPU (shown anyway when it runs out or a boot
    /// parameter is set).
    #[arg(long)]
    vector_space: bool,
}

#[derive(Subcommand)]
enum LabCmd {
    /// Compare an agent capture with the model of the captured machine: per kind
    /// matched/total, the differences, `N matched, M differ` (exit 0 only when M is 0).
    Check(LabCheckArgs),
    /// Boot a kernel in qemu-system-x86_64 on a preset, topology file or permalink's machine
    /// with its NVMe controllers; write the agent's captures as probed and bound one at a time.
    Run(Box<RunArgs>),
}

#[derive(clap::Args)]
struct LabCheckArgs {
    /// An `irqscope-agent capture` file (any released protocol version).
    capture: PathBuf,
    /// The kernel release that placed the interrupts (for captures that do not record it):
    /// variant, sort and hotplug rule default from it.
    #[arg(long)]
    kernel: Option<String>,
    #[arg(long)]
    variant: Option<String>,
    #[arg(long)]
    sort: Option<String>,
    #[arg(long)]
    effective: Option<String>,
    /// Also run every variant x sort x effective model and say which reproduce the capture.
    #[arg(long)]
    all: bool,
}

fn lab(cmd: LabCmd) -> anyhow::Result<ExitCode> {
    match cmd {
        LabCmd::Check(a) => {
            let text = read_text(&a.capture)?;
            let report = irqscope::lab::check::check(
                &text,
                &irqscope::lab::check::CheckOptions {
                    kernel: a.kernel,
                    variant: a.variant,
                    sort: a.sort,
                    effective: a.effective,
                    all: a.all,
                },
            )
            .map_err(|e| anyhow::anyhow!("{}: {e}", a.capture.display()))?;
            print!("{}", report.text);
            Ok(if report.differ == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        LabCmd::Run(args) => lab_run(*args),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return argument_error(e),
    };
    let result = match cli.command {
        Some(Command::Simulate(args)) => simulate(args),
        Some(Command::CheckGolden { dirs }) => check_golden(&dirs),
        Some(Command::Topology(cmd)) => topology_cmd::run(cmd),
        Some(Command::BlkMq(args)) => blk_mq(args),
        Some(Command::Compare(args)) => compare(args),
        Some(Command::Mana(args)) => mana(args),
        Some(Command::Sched(args)) => sched(args),
        Some(Command::Sweep(args)) => sweep(args),
        Some(Command::Lab(cmd)) => lab(cmd),
        Some(Command::Serve {
            addr,
            max_connections,
            live,
        }) => serve(&addr, max_connections, live),
        None => serve(
            DEFAULT_SERVE_ADDR,
            irqscope::web::server::CONNECTIONS_MAX,
            LiveArgs {
                live_tokens: None,
                live_viewer_tokens: None,
                live_trusted_proxy: Vec::new(),
                live_store: None,
                live_host_idle: irqscope::live::limits::HOST_IDLE_MS_DEFAULT / 1000,
                live_store_move_aside: false,
                prometheus: None,
                prometheus_poll_ms: irqscope::live::prometheus::POLL_MS_DEFAULT,
                prometheus_scrape_ms: None,
                prometheus_ca_file: None,
            },
        ),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("irqscope: {}", one_line(&e));
            ExitCode::from(2)
        }
    }
}

/// `--help` and `--version` print in full (exit 0); every other parse error is one line on
/// stderr with exit status 2, like every other bad input: clap's message and its tip (a
/// similar argument, `--` before a value starting with `-`), without the usage block.
fn argument_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    let rendered = e.render().to_string();
    // The (sub)command the error is about, from the words of the command line that name one.
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut command = vec![cmd.get_name().to_string()];
    for arg in std::env::args().skip(1) {
        match cmd.find_subcommand(&arg) {
            Some(sub) => {
                command.push(sub.get_name().to_string());
                cmd = sub.clone();
            }
            None => break,
        }
    }
    let command = command.join(" ");
    let message = if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        "a subcommand is required".to_string()
    } else {
        // clap's paragraphs: "error: …" (with an indented list of missing arguments, say),
        // "tip: …", "Usage: …", "For more information, …"; keep the first two kinds.
        let mut parts: Vec<String> = rendered
            .split("\n\n")
            .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter_map(|p| {
                p.strip_prefix("error: ")
                    .or_else(|| p.strip_prefix("tip: "))
                    .map(str::to_string)
            })
            .collect();
        if parts.is_empty() {
            parts.push(rendered.lines().next().unwrap_or("bad arguments").trim().to_string());
        }
        parts.join("; ")
    };
    eprintln!("irqscope: {message} (see `{command} --help`)");
    ExitCode::from(2)
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

fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(name)).find(|f| f.is_file()))
}

fn lab_run(args: RunArgs) -> anyhow::Result<ExitCode> {
    use irqscope::lab::{qemu, run};
    let link = args.machine.rsplit("/s/").next().unwrap_or(&args.machine);
    let (topology, devices) = if link.starts_with("v1.") {
        let spec: ScenarioSpec =
            scen::permalink::decode(link).map_err(|e| anyhow::anyhow!("permalink {:?}: {e}", args.machine))?;
        let scenario = spec.resolve(catalogue::get)?;
        (scenario.topology_arc().clone(), scenario.devices().to_vec())
    } else {
        (load_topology(&args.machine)?, Vec::new())
    };
    let memory = args
        .node_memory
        .as_deref()
        .map(|m| comma_list(m, "--node-memory"))
        .transpose()?;
    let machine = qemu::guest_machine(&topology, memory.as_deref())?;
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
    let kernel = if Path::new(&args.kernel).is_file() {
        run::KernelSource::Image {
            image: args.kernel.clone().into(),
            modules: args.modules_dir.clone(),
        }
    } else {
        anyhow::ensure!(
            args.modules_dir.is_none(),
            "--modules-dir goes with a kernel image file"
        );
        run::KernelSource::Package(args.kernel.clone())
    };
    let agent = match args.agent {
        Some(a) => a,
        None => std::env::current_exe()?.with_file_name("irqscope-agent"),
    };
    anyhow::ensure!(
        agent.is_file(),
        "{}: no irqscope-agent (build it, or give --agent)",
        agent.display()
    );
    let busybox = args
        .busybox
        .or_else(|| find_on_path("busybox"))
        .ok_or_else(|| anyhow::anyhow!("busybox not found (install busybox-static, or give --busybox)"))?;
    for note in &machine.notes {
        eprintln!("lab: note: {note}");
    }
    let opts = run::RunOptions {
        kernel,
        machine,
        ioqpairs,
        agent,
        busybox,
        qemu: args.qemu,
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
        apt_options: args.apt_options,
    };
    match run::run(&opts, &mut |line| eprintln!("lab: {line}")) {
        Ok(r) => {
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
            Ok(ExitCode::SUCCESS)
        }
        Err(run::LabError::Boot(msg)) => {
            eprintln!("irqscope: lab run: {msg}");
            Ok(ExitCode::from(1))
        }
        Err(e) => Err(e.into()),
    }
}

fn one_line(e: &anyhow::Error) -> String {
    let text = format!("{e:#}");
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Read a text file of at most [`INPUT_FILE_BYTES_MAX`] bytes. The limit is enforced on what is
/// read, not on the file's metadata: `/dev/zero`, a FIFO or a file still growing stop one byte
/// past the limit.
pub(crate) fn read_text(path: &Path) -> anyhow::Result<String> {
    use std::io::Read;
    let file = std::fs::File::open(path).with_context(|| format!("{}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(INPUT_FILE_BYTES_MAX + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("{}", path.display()))?;
    anyhow::ensure!(
        bytes.len() as u64 <= INPUT_FILE_BYTES_MAX,
        "{}: larger than {INPUT_FILE_BYTES_MAX} bytes",
        path.display()
    );
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{}: not UTF-8 text", path.display()))
}

/// A preset name, a compact machine word (`cpus:nodes=0-3+4-7;…`) or a topology file path.
pub(crate) fn load_topology(name_or_path: &str) -> anyhow::Result<Arc<irqscope::topology::Topology>> {
    if let Some(t) = catalogue::get(name_or_path) {
        return Ok(t);
    }
    if compact::is_compact(name_or_path) {
        let spec = compact::decode(name_or_path).map_err(anyhow::Error::msg)?;
        let t = irqscope::topology::Topology::new(&spec).map_err(|e| anyhow::anyhow!("machine word: {e}"))?;
        return Ok(Arc::new(t));
    }
    let path = Path::new(name_or_path);
    anyhow::ensure!(
        path.exists(),
        "{name_or_path:?} is neither a preset (see `irqscope topology list`) nor a file"
    );
    let text = read_text(path)?;
    catalogue::parse_preset(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// How the printed command names the machine given as `arg`: as given, except a compact word,
/// printed in its canonical form (the reader ignores the whitespace a pasted word carries).
fn machine_label(arg: &str, topology: &irqscope::topology::Topology) -> String {
    if compact::is_compact(arg) {
        compact::encode(topology)
    } else {
        arg.to_string()
    }
}

fn simulate(args: SimulateArgs) -> anyhow::Result<ExitCode> {
    let (scenario, label) = match &args.scenario {
        Some(path) => {
            let text = read_text(path)?;
            let mut spec: ScenarioSpec = serde_json::from_str(&text).with_context(|| format!("{}", path.display()))?;
            if let Some(v) = &args.variant {
                spec.variant = v.clone();
            }
            if let Some(s) = &args.sort {
                spec.sort = s.clone();
            }
            if let Some(e) = &args.effective {
                spec.effective = e.clone();
            }
            if let Some(c) = args.counter {
                spec.spread_counter = c;
            }
            if let Some(p) = &args.proposal {
                spec.proposal = Some(p.clone());
            }
            let boot = args.boot.params();
            for (field, flag) in [
                (&mut spec.irqaffinity, boot.irqaffinity),
                (&mut spec.isolcpus, boot.isolcpus),
                (&mut spec.nohz_full, boot.nohz_full),
                (&mut spec.vectors_held, boot.vectors_held),
            ] {
                if flag.is_some() {
                    *field = flag;
                }
            }
            let label = match &spec.topology {
                TopologyRef::Preset(name) => name.clone(),
                TopologyRef::Inline(_) => format!("--scenario {}", path.display()),
            };
            (spec.resolve(catalogue::get)?, label)
        }
        None => {
            let Some(topology_arg) = &args.topology else {
                anyhow::bail!("give a topology (preset or file) and devices, or --scenario FILE");
            };
            anyhow::ensure!(!args.devices.is_empty(), "give at least one device, e.g. 6x62:pre=1");
            let topology = load_topology(topology_arg)?;
            let label = machine_label(topology_arg, &topology);
            let mut devices = Vec::new();
            for token in &args.devices {
                let mut d: DeviceSpec = spec::parse_device_token(token)?;
                let explicit = token.split_once(':').map(|(_, o)| o).unwrap_or("");
                let has = |key: &str| explicit.split(',').any(|kv| kv.split('=').next() == Some(key));
                if !has("pre") {
                    d.pre = args.pre;
                }
                if !has("post") {
                    d.post = args.post;
                }
                if !has("sets") {
                    if let Some(sets) = &args.sets {
                        d.sets = Some(
                            sets.split('+')
                                .map(|s| s.trim().parse::<u32>().with_context(|| format!("--sets {sets:?}")))
                                .collect::<Result<_, _>>()?,
                        );
                    }
                }
                if !has("managed") && args.unmanaged {
                    d.managed = false;
                }
                if !has("blkmq") {
                    d.blk_mq = args.blk_mq.clone();
                }
                devices.push(d);
            }
            let effective = match args.effective.as_deref() {
                Some(name) => spec::parse_effective(name)?,
                None => effective_for(&topology),
            };
            let scenario = Scenario::new(
                topology,
                spec::expand_devices(&devices)?,
                spec::parse_variant(args.variant.as_deref().unwrap_or(spec::DEFAULT_VARIANT.name()))?,
                spec::parse_sort(args.sort.as_deref().unwrap_or(spec::DEFAULT_SORT.name()))?,
                effective,
                args.counter.unwrap_or(0),
            )?;
            let proposal = args.proposal.as_deref().map(spec::parse_proposal).transpose()?;
            let scenario = scenario.with_proposal(proposal);
            let boot = args.boot.params();
            let scenario = if boot.is_empty() {
                scenario
            } else {
                scenario.with_boot(boot)?
            };
            (scenario, label)
        }
    };
    let outcome = scen::run(&scenario);
    let metrics = metrics::compute(&scenario, &outcome);
    match args.format {
        Format::Text => {
            let opts = render::text::TextOptions {
                topology_label: label,
                vectors: args.vectors,
                permalink: None,
            };
            print!("{}", render::text::report(&scenario, &outcome, &metrics, &opts));
            if args.vector_space && !render::vector_space::shown(&scenario, &outcome) {
                let mut block = String::new();
                render::vector_space::text_block(&scenario, &outcome, &mut block);
                print!("{block}");
            }
        }
        Format::Json => {
            let mut value = render::json::outcome_json(&scenario, &outcome, &metrics);
            if args.vector_space {
                value["vector_space"] = render::vector_space::json(&outcome.vector_space);
            }
            println!("{}", serde_json::to_string_pretty(&value)?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The effective-CPU model when the command line names none: the machine's interrupt
/// controller decides (a preset's, or the one its file or machine word states).
fn effective_for(topology: &irqscope::topology::Topology) -> irqscope::kernel::vector_matrix::EffectiveModel {
    catalogue::default_effective(topology).0
}

fn compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    use irqscope::scenario::payloads::{other_variant, side_label, CompareSpec, SideSpec};
    let topology = load_topology(&args.topology)?;
    let devices = args
        .devices
        .iter()
        .map(|t| spec::parse_device_token(t))
        .collect::<Result<Vec<_>, _>>()?;
    let a_variant = args.a.clone().unwrap_or_else(|| spec::DEFAULT_VARIANT.name().into());
    let b_variant = args.b.clone().unwrap_or_else(|| other_variant(&a_variant).into());
    let base = ScenarioSpec {
        topology: TopologyRef::Preset(args.topology.clone()),
        devices,
        variant: a_variant,
        sort: spec::DEFAULT_SORT.name().into(),
        effective: effective_for(&topology).name().into(),
        spread_counter: 0,
        proposal: args.proposal.clone(),
        irqaffinity: args.boot.irqaffinity.clone(),
        isolcpus: args.boot.isolcpus.clone(),
        nohz_full: args.boot.nohz_full.clone(),
        vectors_held: args.boot.vectors_held.clone(),
    };
    let cmp = CompareSpec {
        scenario: base,
        a: SideSpec {
            variant: None,
            sort: args.a_sort.clone(),
            effective: args.a_effective.clone(),
            spread_counter: args.a_counter,
        },
        b: SideSpec {
            variant: Some(b_variant),
            sort: args.b_sort.clone(),
            effective: args.b_effective.clone(),
            spread_counter: args.b_counter,
        },
    };
    // A topology file is read once and shared by both sides.
    let lookup = |_: &str| Some(topology.clone());
    let [sa, sb] = cmp.sides();
    let (a, b) = (sa.resolve(lookup)?, sb.resolve(lookup)?);
    let (oa, ob) = (scen::run(&a), scen::run(&b));
    let (ma, mb) = (metrics::compute(&a, &oa), metrics::compute(&b, &ob));
    let side = |label: String, s, o, m| render::text::Side {
        label,
        scenario: s,
        outcome: o,
        metrics: m,
    };
    let opts = render::text::TextOptions {
        topology_label: machine_label(&args.topology, &topology),
        vectors: false,
        permalink: None,
    };
    print!(
        "{}",
        render::text::compare_report(
            &side(side_label(&sa), &a, &oa, &ma),
            &side(side_label(&sb), &b, &ob, &mb),
            &opts
        )
    );
    Ok(ExitCode::SUCCESS)
}

fn sweep(args: SweepArgs) -> anyhow::Result<ExitCode> {
    use irqscope::analysis::sweep::{self, Mix, SweepConfig};
    let topologies = if args.topologies.is_empty() || args.all {
        catalogue::names().map(str::to_string).collect()
    } else {
        SweepConfig::parse_topologies(&args.topologies.join(","))?
    };
    let variants = if args.variants.is_empty() {
        "all".to_string()
    } else {
        args.variants.join(",")
    };
    let mixes = if args.mix.is_empty() {
        Mix::named()
    } else {
        args.mix.iter().map(|m| Mix::parse(m)).collect::<Result<_, _>>()?
    };
    let config = SweepConfig {
        topologies,
        mixes,
        placements: SweepConfig::parse_placements(&variants)?,
        counters: sweep::parse_counters(&args.counters)?,
        sort: spec::parse_sort(args.sort.as_deref().unwrap_or(spec::DEFAULT_SORT.name()))?,
        effective: spec::parse_effective(args.effective.as_deref().unwrap_or(spec::DEFAULT_EFFECTIVE.name()))?,
        threads: args.threads,
    };
    let result = sweep::run(&config)?;
    let link = |s: &ScenarioSpec| scen::permalink::encode(s).ok().map(|l| format!("/s/{l}"));
    match args.format {
        SweepFormat::Text => print!("{}", render::sweep::text(&result)),
        SweepFormat::Csv => print!("{}", render::sweep::csv(&result, &link)),
        SweepFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&render::sweep::json(&result, &link))?
        ),
    }
    Ok(ExitCode::SUCCESS)
}

fn blk_mq(args: BlkMqArgs) -> anyhow::Result<ExitCode> {
    use irqscope::kernel::blk_mq_cpumap::{blk_mq_map_queues, Mapper};
    let topology = load_topology(&args.topology)?;
    let mapper = Mapper::from_name(&args.mapper).ok_or_else(|| {
        let known: Vec<&str> = Mapper::ALL.iter().map(|m| m.name()).collect();
        anyhow::anyhow!("unknown mapper {:?} (known: {})", args.mapper, known.join(", "))
    })?;
    anyhow::ensure!(
        (1..=scen::VECTORS_PER_DEVICE_MAX).contains(&args.queues),
        "--queues {}: 1 to {}",
        args.queues,
        scen::VECTORS_PER_DEVICE_MAX
    );
    let variant = spec::parse_variant(args.variant.as_deref().unwrap_or(spec::DEFAULT_VARIANT.name()))?;
    let sort = spec::parse_sort(args.sort.as_deref().unwrap_or(spec::DEFAULT_SORT.name()))?;
    let mut counter = args.counter;
    let mut warnings = Vec::new();
    let map = blk_mq_map_queues(
        &topology,
        mapper,
        args.queues,
        args.queue_offset,
        variant,
        sort,
        &mut counter,
        &mut warnings,
    );
    let mut words = vec![
        "irqscope".to_string(),
        "blk-mq".into(),
        spec::shell_word(&machine_label(&args.topology, &topology)),
        format!("--queues {}", args.queues),
        format!("--mapper {}", mapper.name()),
        format!("--queue-offset {}", args.queue_offset),
    ];
    if mapper.uses_group_cpus() {
        words.push(format!("--variant {}", variant.name()));
        words.push(format!("--sort {}", sort.name()));
        words.push(format!("--counter {}", args.counter));
    }
    let mut out = String::new();
    render::columns::command_block(&words, &mut out);
    out.push('\n');
    out.push_str(&render::text::queue_map_report(
        &topology,
        mapper,
        variant,
        args.queues,
        args.queue_offset,
        &map.map,
    ));
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

/// The `input` object of a golden-style JSON file (a whole case or the object itself).
fn input_object(path: &Path) -> anyhow::Result<serde_json::Value> {
    let value: serde_json::Value =
        serde_json::from_str(&read_text(path)?).with_context(|| format!("{}", path.display()))?;
    Ok(value.get("input").cloned().unwrap_or(value))
}

/// How the `mana` and `sched` commands name a machine: a preset by name, or a topology file
/// carried inline (validated by the scenario's `resolve`).
fn topology_ref(name_or_path: &str) -> anyhow::Result<TopologyRef> {
    if catalogue::get(name_or_path).is_some() {
        return Ok(TopologyRef::Preset(name_or_path.to_string()));
    }
    if compact::is_compact(name_or_path) {
        let spec = compact::decode(name_or_path).map_err(anyhow::Error::msg)?;
        return Ok(TopologyRef::Inline(Box::new(spec)));
    }
    let path = Path::new(name_or_path);
    anyhow::ensure!(
        path.exists(),
        "{name_or_path:?} is neither a preset (see `irqscope topology list`) nor a file"
    );
    let spec = toml::from_str(&read_text(path)?).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(TopologyRef::Inline(Box::new(spec)))
}

fn mana(args: ManaArgs) -> anyhow::Result<ExitCode> {
    use irqscope::scenario::mana::{self as m, ManaSpec};
    let (run, command) = match (&args.input, &args.topology) {
        (Some(path), _) => {
            let input = golden::mana_sched::parse_mana_input(&input_object(path)?)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            let command = format!(
                "irqscope mana --input {}",
                spec::shell_word(&path.display().to_string())
            );
            (m::run_input(input)?, command)
        }
        (None, Some(name)) => {
            let spec = ManaSpec {
                topology: topology_ref(name)?,
                device_node: args.device_node,
                mode: args.mode,
                max_msix: args.max_msix,
                load: args
                    .load
                    .as_deref()
                    .map(|l| m::parse_count_list(l, "--load"))
                    .transpose()?,
                irqaffinity: args.irqaffinity,
            };
            (spec.resolve(catalogue::get)?.run()?, spec.command_line())
        }
        (None, None) => anyhow::bail!("give a topology (preset or file) or --input FILE"),
    };
    let report = render::mana_sched::mana_report(&run.input, &run.unpatched, &run.patched);
    print!("{}", render::mana_sched::with_command(&command, &report, None));
    Ok(ExitCode::SUCCESS)
}

fn sched(args: SchedArgs) -> anyhow::Result<ExitCode> {
    use irqscope::scenario::sched::{self as s, SchedSpec};
    let (run, command) = match (&args.input, &args.topology) {
        (Some(path), _) => {
            let input = golden::mana_sched::parse_sched_input(&input_object(path)?)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            let command = format!(
                "irqscope sched --input {}",
                spec::shell_word(&path.display().to_string())
            );
            (s::run_input(input)?, command)
        }
        (None, Some(name)) => {
            let spec = SchedSpec {
                topology: topology_ref(name)?,
                pair_node: args.pair_node,
                noise: args.noise,
                node_reclaim_distance: args.node_reclaim_distance,
            };
            (spec.resolve(catalogue::get)?.run()?, spec.command_line())
        }
        (None, None) => anyhow::bail!("give a topology (preset or file) or --input FILE"),
    };
    let report = render::mana_sched::sched_report(&run.input, &run.outcome);
    print!("{}", render::mana_sched::with_command(&command, &report, None));
    Ok(ExitCode::SUCCESS)
}

fn check_golden(dirs: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let report = golden::check_paths(dirs).map_err(anyhow::Error::msg)?;
    for (case, why) in &report.failed {
        println!("FAIL {case}: {why}");
    }
    println!("{}", report.summary_line());
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn live_state(args: LiveArgs) -> anyhow::Result<irqscope::web::live::LiveState> {
    use irqscope::live::{auth::Tokens, persist::Persist};
    let text = match (&args.live_tokens, std::env::var("IRQSCOPE_LIVE_TOKENS")) {
        (Some(path), _) => read_text(path)?,
        (None, Ok(text)) => text,
        (None, Err(_)) => String::new(),
    };
    let tokens = Tokens::parse(&text).map_err(|e| anyhow::anyhow!(e))?;
    let persist = match args.live_store.as_deref() {
        Some(path) if args.live_store_move_aside => {
            let (p, moved) = Persist::open_moving_aside(path)?;
            if let Some(to) = moved {
                tracing::warn!("live store {} was damaged: moved to {}", path.display(), to.display());
            }
            Some(p)
        }
        Some(path) => Some(Persist::open(path)?),
        None => None,
    };
    let policy = irqscope::live::hub::HubPolicy {
        host_idle_ms: args.live_host_idle.saturating_mul(1000),
    };
    let (mut state, notes) =
        irqscope::web::live::LiveState::with(tokens.clone(), persist, policy, None).map_err(|e| anyhow::anyhow!(e))?;
    if let Some(path) = &args.live_viewer_tokens {
        let viewers = irqscope::live::auth::ViewerTokens::parse(&read_text(path)?)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        anyhow::ensure!(!viewers.is_empty(), "{}: no viewer token in the file", path.display());
        state = state.with_viewer_tokens(viewers);
    }
    if !args.live_trusted_proxy.is_empty() {
        state = state
            .with_trusted_proxies(&args.live_trusted_proxy)
            .map_err(|e| anyhow::anyhow!("--live-trusted-proxy: {e}"))?;
    }
    if let Some(url) = &args.prometheus {
        use irqscope::live::prometheus::{run, PromClient, PromStatus};
        let client = PromClient::new(url, args.prometheus_ca_file.as_deref()).map_err(|e| anyhow::anyhow!(e))?;
        let status = std::sync::Arc::new(PromStatus::new(client.base()));
        state = state.with_prometheus(status.clone());
        tracing::info!("reading live hosts from Prometheus at {}", client.base());
        let (poll_ms, scrape_ms) = (args.prometheus_poll_ms, args.prometheus_scrape_ms);
        tokio::spawn(run(client, state.hub().clone(), status, poll_ms, scrape_ms));
    }
    for n in notes {
        tracing::warn!("live store: skipped {n}");
    }
    if tokens.is_empty() {
        tracing::info!("live ingestion disabled (no --live-tokens / IRQSCOPE_LIVE_TOKENS)");
    }
    Ok(state)
}

fn serve(addr: &str, max_connections: usize, live: LiveArgs) -> anyhow::Result<ExitCode> {
    use tracing_subscriber::EnvFilter;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,tower_http=info")))
        .try_init();
    let addr: std::net::SocketAddr = addr
        .parse()
        .with_context(|| format!("--addr {addr:?}: want HOST:PORT"))?;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        tracing::info!("irqscope dashboard on http://{}", listener.local_addr()?);
        let state = irqscope::web::AppState {
            live: live_state(live)?,
        };
        let app = irqscope::web::app(state);
        irqscope::web::server::serve(
            listener,
            app,
            irqscope::web::server::Limits {
                connections_max: max_connections,
                ..Default::default()
            },
            shutdown_signal(),
        )
        .await;
        anyhow::Ok(())
    });
    // serve() has finished or cut every connection; blocking work still running (a sweep)
    // gets a moment, not a wait without bound.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    served?;
    Ok(ExitCode::SUCCESS)
}

/// SIGINT (Ctrl-C) or SIGTERM: stop accepting and let requests in flight finish.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = interrupt => {}
                    _ = term.recv() => {}
                }
            }
            Err(e) => {
                tracing::warn!("cannot watch SIGTERM: {e}");
                let _ = interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
    tracing::info!("shutting down: finishing requests in flight");
}
