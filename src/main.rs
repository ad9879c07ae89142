//! The `irqscope` command: simulate a scenario, check golden vectors, inspect topologies,
//! serve the dashboard. Thin over the library: argument parsing, files, exit codes.
//!
//! Exit status: 0 success, 1 a check failed (`check-golden`), 2 bad input (with a one-line
//! message on stderr).

mod kernel_c_cmd;
mod topology_cmd;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use irqscope::scenario::spec::{self, DeviceSpec, ScenarioSpec, TopologyRef};
use irqscope::scenario::{self as scen};
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
    /// Your kernel, your patch: build lib/group_cpus.c in user space as a variant `c:NAME`,
    /// and check it against the models.
    #[command(subcommand)]
    KernelC(kernel_c_cmd::KernelCCommand),
    /// Start the dashboard.
    Serve {
        #[arg(long, default_value = DEFAULT_SERVE_ADDR)]
        addr: String,
        /// Open connections at most (SSE streams included), shared by client address: when
        /// full, a newcomer takes the place of an idle connection of the address holding the
        /// most.
        #[arg(long, value_name = "N", default_value_t = irqscope::web::server::CONNECTIONS_MAX,
              value_parser = irqscope::web::server::parse_connections_max)]
        max_connections: usize,
        /// The most estimated CPU one request may cost (sweeps, comparisons, scenarios of large
        /// machines, imports); more is refused with 422 and the command that runs it here.
        #[arg(long, value_name = "MS", default_value_t = irqscope::web::work::REQUEST_CPU_MS_MAX,
              value_parser = irqscope::web::work::parse_request_cpu_ms)]
        request_cpu_ms: u64,
        /// How long a request may take: answered 408 then, and its work stops.
        #[arg(long, value_name = "MS", default_value_t = irqscope::web::REQUEST_TIMEOUT_MS,
              value_parser = irqscope::web::work::parse_request_timeout_ms)]
        request_timeout_ms: u64,
        #[command(flatten)]
        live: LiveArgs,
        /// Built C to offer as variant c:NAME: NAME=SOURCE (a kernel tree, a group_cpus.c or a
        /// linux-source-X.Y package), built at start-up; repeatable.
        #[arg(long = "kernel-c", value_name = "NAME=SOURCE")]
        kernel_c: Vec<String>,
        /// A patch for a --kernel-c source: NAME=FILE (mbox or diff); repeatable, in order.
        #[arg(long = "kernel-c-patch", value_name = "NAME=FILE")]
        kernel_c_patch: Vec<String>,
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
    /// current, v6.3, legacy-v5.1, legacy-v4.13, legacy-v4.10 (default: the release's).
    #[arg(long)]
    mapper: Option<String>,
    /// The kernel release whose mapper, variant and sort run (default: the newest modelled).
    #[arg(long, value_name = "RELEASE")]
    kernel: Option<String>,
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
    /// Last-level caches per node (sets imb_numa_nr); default 1, an assumption the report names.
    #[arg(long, value_name = "N")]
    llcs_per_node: Option<u32>,
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
    /// The kernel release every row is for: its heapsort, irq_create_affinity_masks era,
    /// blk-mq mapper and vectors per CPU (the variants stay the rows).
    #[arg(long, value_name = "RELEASE")]
    kernel: Option<String>,
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
    /// Side A's effective-CPU model (default: the machine's interrupt controller's: apic
    /// x86-matrix, gic-its arm64-its, gic-v2m and gic-spi first-cpu).
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
    /// Probe order of driver=nvme controllers: sequential (default) or parallel (every admin
    /// tag set before the first I/O spread).
    #[arg(long)]
    probe: Option<String>,
    #[command(flatten)]
    kernel: KernelArgs,
    #[command(flatten)]
    boot: BootArgs,
}

/// The kernel release and the models it picks beyond variant, sort and effective model
/// (`simulate` and `compare`).
#[derive(clap::Args)]
struct KernelArgs {
    /// The kernel release the answer is for (6.12, 6.1.0-57-amd64): picks the variant, sort,
    /// irq_create_affinity_masks era, blk-mq mapper, effective model and vectors per CPU
    /// together; flags still override. Default: the newest release modelled.
    #[arg(long, value_name = "RELEASE")]
    kernel: Option<String>,
    /// The irq_create_affinity_masks era: numgrps (.. v6.16) or nummasks (v6.17 ..).
    #[arg(long)]
    affinity: Option<String>,
    /// The blk-mq mapper of blkmq=cpumap devices: current, v6.3, legacy-v5.1, ….
    #[arg(long)]
    mapper: Option<String>,
    /// Vectors a device may get on each online x86 CPU (default: the release's window on this
    /// machine, 201 to 203).
    #[arg(long, value_name = "N")]
    vectors_per_cpu: Option<u32>,
}

impl KernelArgs {
    /// The models named on the command line beside these flags.
    fn named(
        &self,
        variant: Option<&String>,
        sort: Option<&String>,
        effective: Option<&String>,
    ) -> scen::kernel::Named {
        scen::kernel::Named {
            variant: variant.cloned(),
            sort: sort.cloned(),
            effective: effective.cloned(),
            affinity: self.affinity.clone(),
            mapper: self.mapper.clone(),
            vectors_per_cpu: self.vectors_per_cpu,
        }
    }
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
    /// group_cpus_evenly variant: pre-cluster, cluster, rotation, rotation-ohcl, rotation-v1r,
    /// rotation-v1.
    #[arg(long)]
    variant: Option<String>,
    /// Heapsort generation: heap-v5.1, heap-v6.9, heap-v6.11.
    #[arg(long)]
    sort: Option<String>,
    /// Effective-CPU model: x86-matrix, first-cpu or arm64-its (default: the machine's
    /// interrupt controller's).
    #[arg(long)]
    effective: Option<String>,
    /// Starting value of the rotation patch's spread counter.
    #[arg(long)]
    counter: Option<u32>,
    /// Form the managed masks with a policy proposal instead (offset-by-probed).
    #[arg(long)]
    proposal: Option<String>,
    /// Probe order of driver=nvme controllers: sequential (default: each admin tag set, then
    /// its I/O spread) or parallel (every admin tag set before the first I/O spread).
    #[arg(long)]
    probe: Option<String>,
    #[command(flatten)]
    kernel: KernelArgs,
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
    /// Boot a kernel in QEMU (x86_64: q35; arm64: virt) on a preset, topology file or
    /// permalink's machine with its NVMe controllers; write the agent's captures as probed and
    /// bound one at a time.
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
    /// Effective-CPU model for every IRQ (default: each IRQ's controller, from its chip name
    /// in /proc/interrupts; else the kernel release's architecture).
    #[arg(long)]
    effective: Option<String>,
    /// Also run every variant x sort x effective model and say which reproduce the capture.
    #[arg(long)]
    all: bool,
    /// The machine the capture was taken on, as drawn (preset, topology file or machine
    /// word): its SMT and cluster sets replace the capture's, which are the kernel's already;
    /// online CPUs stay as captured.
    #[arg(long)]
    machine: Option<String>,
}

fn lab(cmd: LabCmd) -> anyhow::Result<ExitCode> {
    match cmd {
        LabCmd::Check(a) => {
            let text = read_text(&a.capture)?;
            let machine = a.machine.as_deref().map(load_topology).transpose()?;
            let report = irqscope::lab::check::check(
                &text,
                &irqscope::lab::check::CheckOptions {
                    kernel: a.kernel,
                    variant: a.variant,
                    sort: a.sort,
                    effective: a.effective,
                    all: a.all,
                    machine,
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
        Some(Command::KernelC(cmd)) => kernel_c_cmd::run(cmd),
        Some(Command::Serve {
            addr,
            max_connections,
            request_cpu_ms,
            request_timeout_ms,
            live,
            kernel_c,
            kernel_c_patch,
        }) => kernel_c_cmd::register_for_serve(&kernel_c, &kernel_c_patch).and_then(|kernel_c| {
            serve(
                &addr,
                max_connections,
                irqscope::web::work::Policy {
                    request_cpu_ms_max: request_cpu_ms,
                    request_timeout: std::time::Duration::from_millis(request_timeout_ms),
                },
                live,
                kernel_c,
            )
        }),
        None => serve(
            DEFAULT_SERVE_ADDR,
            irqscope::web::server::CONNECTIONS_MAX,
            irqscope::web::work::Policy::default(),
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
            Default::default(),
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
    match run::run(&opts, &mut |line| eprintln!("lab: {line}")) {
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
    let named = args
        .kernel
        .named(args.variant.as_ref(), args.sort.as_ref(), args.effective.as_ref());
    let (scenario, label, provenance) = match &args.scenario {
        Some(path) => {
            let text = read_text(path)?;
            let mut spec: ScenarioSpec = serde_json::from_str(&text).with_context(|| format!("{}", path.display()))?;
            // A file names its models; --kernel picks them again (flags still override), and
            // without it each flag overrides the file's name.
            let provenance = match &args.kernel.kernel {
                Some(k) => {
                    let topology = spec.topology.resolve(catalogue::get)?;
                    let picked = scen::kernel::pick(&mut spec, &topology, Some(k), &named)?;
                    Some(scen::kernel::provenance(&picked))
                }
                None => {
                    for (field, flag) in [
                        (&mut spec.variant, &named.variant),
                        (&mut spec.sort, &named.sort),
                        (&mut spec.effective, &named.effective),
                    ] {
                        if let Some(v) = flag {
                            *field = v.clone();
                        }
                    }
                    if named.affinity.is_some() {
                        spec.affinity = named.affinity.clone();
                    }
                    if named.mapper.is_some() {
                        spec.mapper = named.mapper.clone();
                    }
                    if named.vectors_per_cpu.is_some() {
                        spec.vectors_per_cpu = named.vectors_per_cpu;
                    }
                    None
                }
            };
            if let Some(c) = args.counter {
                spec.spread_counter = c;
            }
            if let Some(p) = &args.proposal {
                spec.proposal = Some(p.clone());
            }
            if let Some(p) = &args.probe {
                spec.probe = Some(p.clone());
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
            (spec.resolve_with(catalogue::get, &kernel_c_cmd::lookup)?, label, provenance)
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
            let boot = args.boot.params();
            let mut spec = ScenarioSpec {
                spread_counter: args.counter.unwrap_or(0),
                proposal: args.proposal.clone(),
                irqaffinity: boot.irqaffinity,
                isolcpus: boot.isolcpus,
                nohz_full: boot.nohz_full,
                vectors_held: boot.vectors_held,
                probe: args.probe.clone(),
                ..ScenarioSpec::new(TopologyRef::Preset(label.clone()), devices)
            };
            let picked = scen::kernel::pick(&mut spec, &topology, args.kernel.kernel.as_deref(), &named)?;
            // A topology file or machine word is read once; the spec names it by its label.
            let scenario = spec.resolve_with(|_| Some(topology.clone()), &kernel_c_cmd::lookup)?;
            (scenario, label, Some(scen::kernel::provenance(&picked)))
        }
    };
    // Where each model came from goes to stderr: the report itself is the page's text twin and
    // its printed command reproduces it.
    if let Some(p) = &provenance {
        eprintln!("{}", render::text::wrap(p, "irqscope: models: ", "  ").trim_end());
    }
    let outcome = scen::try_run(&scenario)?;
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

fn compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    use irqscope::scenario::payloads::{other_variant, side_label, CompareSpec, SideSpec};
    let topology = load_topology(&args.topology)?;
    let devices = args
        .devices
        .iter()
        .map(|t| spec::parse_device_token(t))
        .collect::<Result<Vec<_>, _>>()?;
    let mut base = ScenarioSpec {
        proposal: args.proposal.clone(),
        irqaffinity: args.boot.irqaffinity.clone(),
        isolcpus: args.boot.isolcpus.clone(),
        nohz_full: args.boot.nohz_full.clone(),
        vectors_held: args.boot.vectors_held.clone(),
        probe: args.probe.clone(),
        ..ScenarioSpec::new(TopologyRef::Preset(args.topology.clone()), devices)
    };
    // Both sides run what the release picks (the newest without --kernel); side A's variant
    // is --a or the release's, side B's another one unless --b names it.
    let named = args.kernel.named(args.a.as_ref(), None, None);
    let picked = scen::kernel::pick(&mut base, &topology, args.kernel.kernel.as_deref(), &named)?;
    let b_variant = args.b.clone().unwrap_or_else(|| other_variant(&base.variant).into());
    let cmp = CompareSpec {
        scenario: base,
        a: SideSpec {
            variant: None,
            sort: args.a_sort.clone(),
            effective: args.a_effective.clone(),
            spread_counter: args.a_counter,
            kernel_c: None,
        },
        b: SideSpec {
            variant: Some(b_variant),
            sort: args.b_sort.clone(),
            effective: args.b_effective.clone(),
            spread_counter: args.b_counter,
            kernel_c: None,
        },
    };
    // A topology file is read once and shared by both sides.
    let lookup = |_: &str| Some(topology.clone());
    let [sa, sb] = cmp.sides();
    let c = &kernel_c_cmd::lookup;
    let (a, b) = (sa.resolve_with(lookup, c)?, sb.resolve_with(lookup, c)?);
    let (oa, ob) = (scen::try_run(&a)?, scen::try_run(&b)?);
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
    eprintln!(
        "{}",
        render::text::wrap(&scen::kernel::provenance(&picked), "irqscope: models: ", "  ").trim_end()
    );
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
    // The release's heapsort, era, mapper and vectors per CPU (the variants are the rows).
    let release = match &args.kernel {
        Some(k) => irqscope::kernel::release::generation(
            irqscope::kernel::release::parse_release(k)
                .ok_or_else(|| anyhow::anyhow!("--kernel {k:?}: not a kernel release (e.g. 6.12)"))?,
        ),
        None => irqscope::kernel::release::generation(irqscope::kernel::release::NEWEST),
    };
    let mixes = if args.mix.is_empty() {
        Mix::named()
    } else {
        args.mix.iter().map(|m| Mix::parse(m)).collect::<Result<_, _>>()?
    };
    // Built C (`c:NAME`) joins the placements; the rest are names of models and proposals.
    let (c_names, model_names): (Vec<&str>, Vec<&str>) = variants
        .split(',')
        .map(str::trim)
        .partition(|v| v.starts_with(spec::KERNEL_C_PREFIX));
    let mut placements = if model_names.iter().all(|v| v.is_empty()) && !c_names.is_empty() {
        Vec::new()
    } else {
        SweepConfig::parse_placements(&model_names.join(","))?
    };
    for name in c_names {
        let (_, external) = kernel_c_cmd::variant_arg(Some(name))?;
        let e = external.expect("a c: name is built C");
        placements.push(sweep::Placement::External(sweep::ExternalRef::register(e)));
    }
    let config = SweepConfig {
        topologies,
        mixes,
        placements,
        counters: sweep::parse_counters(&args.counters)?,
        sort: spec::parse_sort(args.sort.as_deref().unwrap_or(release.sort))?,
        effective: spec::parse_effective(args.effective.as_deref().unwrap_or(spec::DEFAULT_EFFECTIVE.name()))?,
        kernel: args.kernel.clone(),
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
    use irqscope::kernel::blk_mq_cpumap::{blk_mq_map_queues_with, Mapper};
    let topology = load_topology(&args.topology)?;
    let release = match &args.kernel {
        Some(k) => irqscope::kernel::release::parse_release(k)
            .ok_or_else(|| anyhow::anyhow!("--kernel {k:?}: not a kernel release (e.g. 6.12 or 6.1.0-57-amd64)"))?,
        None => irqscope::kernel::release::NEWEST,
    };
    let g = irqscope::kernel::release::generation(release);
    let mapper = match &args.mapper {
        Some(name) => Mapper::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = Mapper::ALL.iter().map(|m| m.name()).collect();
            anyhow::anyhow!("unknown mapper {:?} (known: {})", name, known.join(", "))
        })?,
        None => g.mapper,
    };
    anyhow::ensure!(
        (1..=scen::VECTORS_PER_DEVICE_MAX).contains(&args.queues),
        "--queues {}: 1 to {}",
        args.queues,
        scen::VECTORS_PER_DEVICE_MAX
    );
    let (variant, external) = kernel_c_cmd::variant_arg(Some(args.variant.as_deref().unwrap_or(g.variant)))?;
    let sort = spec::parse_sort(args.sort.as_deref().unwrap_or(g.sort))?;
    let mut counter = args.counter;
    let mut warnings = Vec::new();
    let spreader = match &external {
        Some(e) => irqscope::kernel::Spreader::External(&*e.0),
        None => irqscope::kernel::Spreader::Model(variant, sort),
    };
    let map = blk_mq_map_queues_with(
        &topology,
        mapper,
        args.queues,
        args.queue_offset,
        spreader,
        &mut counter,
        &mut warnings,
    )?;
    let variant_name = external.as_ref().map_or(variant.name(), |e| e.0.name());
    let mut words = vec![
        "irqscope".to_string(),
        "blk-mq".into(),
        spec::shell_word(&machine_label(&args.topology, &topology)),
        format!("--queues {}", args.queues),
        format!("--mapper {}", mapper.name()),
        format!("--queue-offset {}", args.queue_offset),
    ];
    if let Some(k) = &args.kernel {
        words.push(format!("--kernel {}", spec::shell_word(k)));
    }
    if mapper.uses_group_cpus() {
        words.push(format!("--variant {variant_name}"));
        words.push(format!("--sort {}", sort.name()));
        words.push(format!("--counter {}", args.counter));
    }
    let mut out = String::new();
    render::text::command_block(&words, &mut out);
    let holds = scen::kernel::holds_for_map(args.kernel.clone(), mapper, variant, sort);
    out.push_str(&render::text::wrap(
        &render::summary::range_line(&holds),
        "  kernel: ",
        "          ",
    ));
    out.push('\n');
    out.push_str(&render::text::queue_map_report_named(
        &topology,
        mapper,
        variant_name,
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
                llcs_per_node: args.llcs_per_node,
            };
            (spec.resolve(catalogue::get)?.run()?, spec.command_line())
        }
        (None, None) => anyhow::bail!("give a topology (preset or file) or --input FILE"),
    };
    let report = render::mana_sched::sched_run_report(&run);
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

fn serve(
    addr: &str,
    max_connections: usize,
    policy: irqscope::web::work::Policy,
    live: LiveArgs,
    kernel_c: irqscope::web::kernel_c::KernelCRegistry,
) -> anyhow::Result<ExitCode> {
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
            kernel_c,
        };
        let app = irqscope::web::app_with(state, policy);
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
