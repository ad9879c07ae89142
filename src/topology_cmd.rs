//! `irqscope topology …`: list the catalogue, show a machine, import one from what a real
//! machine or tool prints, export one to other formats. Thin: file reading and writing here,
//! parsing in `irqscope::topology::import`.

use anyhow::Context;
use clap::{Subcommand, ValueEnum};
use irqscope::catalogue;
use irqscope::topology::import::{self, export, hwloc, lscpu, numactl, sysfs};
use irqscope::topology::{Topology, TopologySpec};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum TopologyCommand {
    /// List the preset machines.
    List,
    /// Show a preset or a topology file as a tree folded with cpulists.
    Show {
        /// Preset name or file path.
        topology: String,
    },
    /// Import a machine from sysfs, lscpu, numactl, hwloc XML or an hwloc synthetic string and
    /// print it as a topology file (TOML).
    Import {
        #[arg(value_enum)]
        kind: ImportKind,
        /// A file (`-` for standard input); for sysfs a root directory (`/` for this machine);
        /// for synthetic the description itself (`"pack:2 core:4 pu:2"`).
        path: String,
        /// Write the TOML to this file instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Name of the imported machine.
        #[arg(long)]
        name: Option<String>,
    },
    /// Export a preset or topology file: toml, synthetic, or a sysfs tree written under DIR.
    Export {
        #[arg(value_enum)]
        format: ExportFormat,
        /// Preset name or file path.
        topology: String,
        /// Directory to write the sysfs tree under (as DIR/sys/devices/system); sysfs only.
        dir: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ImportKind {
    Sysfs,
    Lscpu,
    Numactl,
    HwlocXml,
    Synthetic,
    Toml,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    Toml,
    Synthetic,
    Sysfs,
}

pub fn run(cmd: TopologyCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        TopologyCommand::List => {
            for (name, loaded) in catalogue::all() {
                match loaded {
                    Ok(t) => println!("{name:<32} {}", t.summary()),
                    Err(e) => println!("{name:<32} INVALID: {e}"),
                }
            }
        }
        TopologyCommand::Show { topology } => {
            let t = crate::load_topology(&topology)?;
            print!("{}", irqscope::render::text::topology_tree(&t));
        }
        TopologyCommand::Import { kind, path, out, name } => {
            let mut spec = import_spec(kind, &path)?;
            if let Some(name) = name {
                spec.name = name;
            }
            let text = toml::to_string(&spec).context("serialising the imported topology")?;
            match out {
                Some(file) => std::fs::write(&file, text).with_context(|| format!("{}", file.display()))?,
                None => print!("{text}"),
            }
        }
        TopologyCommand::Export { format, topology, dir } => {
            let t = crate::load_topology(&topology)?;
            match format {
                ExportFormat::Toml => print!("{}", export::to_toml(&t)),
                ExportFormat::Synthetic => println!("{}", export::to_synthetic(&t)?),
                ExportFormat::Sysfs => {
                    let Some(dir) = dir else {
                        anyhow::bail!("export sysfs needs a directory: irqscope topology export sysfs TOPOLOGY DIR");
                    };
                    export::write_sysfs(&t, &dir).with_context(|| format!("writing a sysfs tree under {}", dir.display()))?;
                    eprintln!("wrote {}", dir.join("sys/devices/system").display());
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn import_spec(kind: ImportKind, path: &str) -> anyhow::Result<TopologySpec> {
    let spec = match kind {
        ImportKind::Sysfs => {
            let files = sysfs::read_tree(Path::new(path)).with_context(|| format!("reading sysfs under {path}"))?;
            let mut spec = sysfs::parse(&files)?;
            spec.name = format!("imported from sysfs under {path}");
            spec
        }
        ImportKind::Synthetic => hwloc::parse_synthetic(path)?,
        ImportKind::Lscpu => lscpu::parse(&read_input(path)?)?,
        ImportKind::Numactl => numactl::parse(&read_input(path)?)?,
        ImportKind::HwlocXml => hwloc::parse_xml(&read_input(path)?)?,
        ImportKind::Toml => import::parse_toml(&read_input(path)?)?,
    };
    // The parsers validate; this guards the printed file against a bug between them and here.
    Topology::new(&spec).context("imported topology failed validation")?;
    Ok(spec)
}

/// A file or standard input (`-`), bounded like every import.
fn read_input(path: &str) -> anyhow::Result<String> {
    let limit = import::INPUT_BYTES_MAX as u64;
    let mut text = String::new();
    if path == "-" {
        std::io::stdin().take(limit + 1).read_to_string(&mut text).context("standard input")?;
    } else {
        std::fs::File::open(path)
            .and_then(|f| f.take(limit + 1).read_to_string(&mut text))
            .with_context(|| path.to_string())?;
    }
    anyhow::ensure!(text.len() as u64 <= limit, "{path}: larger than {limit} bytes");
    Ok(text)
}
