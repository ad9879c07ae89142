//! The `irqscope` command: simulate a scenario, compare, sweep, check golden vectors, inspect
//! topologies, boot kernels in the lab, build the user's own C, serve the dashboard. Thin over the library: argument
//! parsing, files, exit codes. The model commands (`model_cmd`) build the spec a page's form
//! builds and call the same resolve, run and render functions as the pages (`render::view`).
//!
//! Exit status: 0 success, 1 a check failed (`check-golden`, `lab check`), 2 bad input (with
//! a one-line message on stderr).
#![deny(unsafe_code)]

mod kernel_c_cmd;
mod lab_cmd;
mod model_cmd;
mod review_cmd;
mod serve_cmd;
mod topology_cmd;

use anyhow::Context;
use clap::{Parser, Subcommand};
use irqscope::scenario::spec::TopologyRef;
use irqscope::topology::{compact, Topology, TopologySpec};
use irqscope::{catalogue, golden};
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
    /// Compile and run built C (c:NAME, kernel-c) without its sandbox, with this user's
    /// rights: only for C you have read, on a machine without bubblewrap. Not for serve.
    #[arg(long, global = true)]
    unconfined: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario: a topology, devices probed in order, a kernel variant.
    Simulate(model_cmd::SimulateArgs),
    /// Check golden vectors: every *.json case under the given directories.
    CheckGolden {
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
    },
    /// Inspect, list and import topologies.
    #[command(subcommand)]
    Topology(topology_cmd::TopologyCommand),
    /// Map CPUs to blk-mq hardware queues with one of the kernel's mappers (or all: the text of
    /// `/blkmq`).
    BlkMq(model_cmd::BlkMqArgs),
    /// The same machine and devices under two sides (variant, sort, effective model, counter):
    /// the text of `/c/…/text`.
    Compare(model_cmd::CompareArgs),
    /// The MANA driver's IRQ set-up, before and after the low-vCPU patch (seed 001).
    Mana(model_cmd::ManaArgs),
    /// The scheduler's NUMA imbalance decision for a communicating pair (seed 003).
    Sched(model_cmd::SchedArgs),
    /// Judge variants and proposals on many machines at once: variants x topologies x device
    /// mixes x starting counters.
    Sweep(model_cmd::SweepArgs),
    /// Real kernels in the loop: boot one in QEMU on a modelled machine, or check a kernel's
    /// captured placement against the models.
    #[command(subcommand)]
    Lab(lab_cmd::LabCmd),
    /// Your kernel, your patch: build lib/group_cpus.c in user space as a variant `c:NAME`,
    /// and check it against the models.
    #[command(subcommand)]
    KernelC(kernel_c_cmd::KernelCCommand),
    /// Review a mailed patch: build the base and the patched tree, say what the patch is,
    /// where it changes the placement and the worst case found, as a mail reply (exit 0: no
    /// machine changes, 1: some do, 2: bad input).
    Review(review_cmd::ReviewArgs),
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
        live: serve_cmd::LiveArgs,
        /// Built C to offer as variant c:NAME: NAME=SOURCE (a kernel tree, a group_cpus.c or a
        /// linux-source-X.Y package), built at start-up; repeatable.
        #[arg(long = "kernel-c", value_name = "NAME=SOURCE")]
        kernel_c: Vec<String>,
        /// A patch for a --kernel-c source: NAME=FILE (mbox or diff); repeatable, in order.
        #[arg(long = "kernel-c-patch", value_name = "NAME=FILE")]
        kernel_c_patch: Vec<String>,
        #[command(flatten)]
        review: serve_cmd::ReviewServeArgs,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return argument_error(e),
    };
    if cli.unconfined {
        if matches!(cli.command, None | Some(Command::Serve { .. })) {
            eprintln!(
                "irqscope: serve does not take --unconfined: a server runs built C in its sandbox only (see `irqscope serve --help`)"
            );
            return ExitCode::from(2);
        }
        irqscope::kernel_c::exec::set_unconfined();
        eprintln!("irqscope: --unconfined: built C is compiled and run without its sandbox, with this user's rights");
    }
    let result = match cli.command {
        Some(Command::Simulate(args)) => model_cmd::simulate(args),
        Some(Command::CheckGolden { dirs }) => check_golden(&dirs),
        Some(Command::Topology(cmd)) => topology_cmd::run(cmd),
        Some(Command::BlkMq(args)) => model_cmd::blk_mq(args),
        Some(Command::Compare(args)) => model_cmd::compare(args),
        Some(Command::Mana(args)) => model_cmd::mana(args),
        Some(Command::Sched(args)) => model_cmd::sched(args),
        Some(Command::Sweep(args)) => model_cmd::sweep(args),
        Some(Command::Lab(cmd)) => lab_cmd::lab(cmd),
        Some(Command::KernelC(cmd)) => kernel_c_cmd::run(cmd),
        Some(Command::Review(args)) => review_cmd::run(args),
        Some(Command::Serve {
            addr,
            max_connections,
            request_cpu_ms,
            request_timeout_ms,
            live,
            kernel_c,
            kernel_c_patch,
            review,
        }) => kernel_c_cmd::register_for_serve(&kernel_c, &kernel_c_patch).and_then(|kernel_c| {
            let policy = irqscope::web::work::Policy {
                request_cpu_ms_max: request_cpu_ms,
                request_timeout: std::time::Duration::from_millis(request_timeout_ms),
            };
            serve_cmd::serve(&addr, max_connections, policy, live, kernel_c, review)
        }),
        None => serve_cmd::serve(
            DEFAULT_SERVE_ADDR,
            irqscope::web::server::CONNECTIONS_MAX,
            irqscope::web::work::Policy::default(),
            serve_cmd::LiveArgs::default(),
            Default::default(),
            serve_cmd::ReviewServeArgs::default(),
        ),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("irqscope: {}", error_text(&e));
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

/// An error as one line, but a compiler's message keeps its lines: each names a file and line.
fn error_text(e: &anyhow::Error) -> String {
    // The compiler's diagnostics keep their lines.
    let kept = e
        .downcast_ref::<irqscope::kernel_c::KernelCError>()
        .map(|k| k.to_string())
        .or_else(|| e.downcast_ref::<irqscope::review::ReviewError>().map(|r| r.to_string()));
    match kept {
        Some(text) if text.contains('\n') => text,
        _ => one_line(e),
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

/// A machine named on the command line, as the specs carry it (`reference`) and as the
/// printed command names it (`label`).
pub(crate) struct Machine {
    pub reference: TopologyRef,
    pub label: String,
}

/// A preset name, a compact machine word (`cpus:nodes=0-3+4-7;…`, labelled in its canonical
/// form: the reader ignores the whitespace a pasted word carries) or a topology file (read and
/// checked here, so that an error names the file; labelled by its path).
pub(crate) fn machine(arg: &str) -> anyhow::Result<Machine> {
    if catalogue::get(arg).is_some() {
        return Ok(Machine {
            reference: TopologyRef::Preset(arg.to_string()),
            label: arg.to_string(),
        });
    }
    if compact::is_compact(arg) {
        let spec = compact::decode(arg).map_err(anyhow::Error::msg)?;
        let t = Topology::new(&spec).map_err(|e| anyhow::anyhow!("machine word: {e}"))?;
        return Ok(Machine {
            reference: TopologyRef::Inline(Box::new(spec)),
            label: compact::encode(&t),
        });
    }
    let path = Path::new(arg);
    anyhow::ensure!(
        path.exists(),
        "{arg:?} is neither a preset (see `irqscope topology list`) nor a file"
    );
    let spec: TopologySpec =
        toml::from_str(&read_text(path)?).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Topology::new(&spec).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(Machine {
        reference: TopologyRef::Inline(Box::new(spec)),
        label: arg.to_string(),
    })
}

/// [`machine`], validated: the machine itself.
pub(crate) fn load_topology(arg: &str) -> anyhow::Result<Arc<Topology>> {
    Ok(machine(arg)?.reference.resolve(catalogue::get)?)
}

/// The `input` object of a golden-style JSON file (a whole case or the object itself).
fn input_object(path: &Path) -> anyhow::Result<serde_json::Value> {
    let value: serde_json::Value =
        serde_json::from_str(&read_text(path)?).with_context(|| format!("{}", path.display()))?;
    Ok(value.get("input").cloned().unwrap_or(value))
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
