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
use irqscope::{catalogue, golden, metrics, render};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Where `irqscope serve` (and `irqscope` with no subcommand) listens.
const DEFAULT_SERVE_ADDR: &str = "127.0.0.1:8080";

/// Largest scenario or topology file read.
const INPUT_FILE_BYTES_MAX: u64 = 16 << 20;

#[derive(Parser)]
#[command(name = "irqscope", version, about = "Where do interrupts land? Kernel IRQ placement, bit-exact.")]
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
    /// Start the dashboard.
    Serve {
        #[arg(long, default_value = DEFAULT_SERVE_ADDR)]
        addr: String,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
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
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Also print every vector (mask, effective CPU).
    #[arg(long)]
    vectors: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Simulate(args)) => simulate(args),
        Some(Command::CheckGolden { dirs }) => check_golden(&dirs),
        Some(Command::Topology(cmd)) => topology_cmd::run(cmd),
        Some(Command::Serve { addr }) => serve(&addr),
        None => serve(DEFAULT_SERVE_ADDR),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("irqscope: {}", one_line(&e));
            ExitCode::from(2)
        }
    }
}

fn one_line(e: &anyhow::Error) -> String {
    let text = format!("{e:#}");
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
}

/// Read a text file with a size limit.
pub(crate) fn read_text(path: &Path) -> anyhow::Result<String> {
    let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
    anyhow::ensure!(
        meta.len() <= INPUT_FILE_BYTES_MAX,
        "{}: larger than {INPUT_FILE_BYTES_MAX} bytes",
        path.display()
    );
    std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))
}

/// A preset name or a topology file path.
pub(crate) fn load_topology(name_or_path: &str) -> anyhow::Result<Arc<irqscope::topology::Topology>> {
    if let Some(t) = catalogue::get(name_or_path) {
        return Ok(t);
    }
    let path = Path::new(name_or_path);
    anyhow::ensure!(
        path.exists(),
        "{name_or_path:?} is neither a preset (see `irqscope topology list`) nor a file"
    );
    let text = read_text(path)?;
    catalogue::parse_preset(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

fn simulate(args: SimulateArgs) -> anyhow::Result<ExitCode> {
    let (scenario, label) = match &args.scenario {
        Some(path) => {
            let text = read_text(path)?;
            let mut spec: ScenarioSpec =
                serde_json::from_str(&text).with_context(|| format!("{}", path.display()))?;
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
            let scenario = Scenario::new(
                topology,
                spec::expand_devices(&devices)?,
                spec::parse_variant(args.variant.as_deref().unwrap_or(spec::DEFAULT_VARIANT.name()))?,
                spec::parse_sort(args.sort.as_deref().unwrap_or(spec::DEFAULT_SORT.name()))?,
                spec::parse_effective(args.effective.as_deref().unwrap_or(spec::DEFAULT_EFFECTIVE.name()))?,
                args.counter.unwrap_or(0),
            )?;
            (scenario, topology_arg.clone())
        }
    };
    let outcome = scen::run(&scenario);
    let metrics = metrics::compute(&scenario, &outcome);
    match args.format {
        Format::Text => {
            let opts = render::text::TextOptions { topology_label: label, vectors: args.vectors, permalink: None };
            print!("{}", render::text::report(&scenario, &outcome, &metrics, &opts));
        }
        Format::Json => {
            let value = render::json::outcome_json(&scenario, &outcome, &metrics);
            println!("{}", serde_json::to_string_pretty(&value)?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn check_golden(dirs: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let report = golden::check_paths(dirs).map_err(anyhow::Error::msg)?;
    for (case, why) in &report.failed {
        println!("FAIL {case}: {why}");
    }
    println!("{}", report.summary_line());
    Ok(if report.ok() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn serve(addr: &str) -> anyhow::Result<ExitCode> {
    use tracing_subscriber::EnvFilter;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,tower_http=info")))
        .try_init();
    let addr: std::net::SocketAddr = addr.parse().with_context(|| format!("--addr {addr:?}: want HOST:PORT"))?;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("binding {addr}"))?;
        tracing::info!("irqscope dashboard on http://{}", listener.local_addr()?);
        let app = irqscope::web::app(irqscope::web::AppState::default());
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .context("serving")
    })?;
    Ok(ExitCode::SUCCESS)
}
