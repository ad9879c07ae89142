//! `irqscope topology …`: list the catalogue, show a machine, import one from what a real
//! machine or tool prints, export one to other formats. Thin: file reading and writing here,
//! parsing in `irqscope::topology::import`.

use anyhow::Context;
use clap::{Subcommand, ValueEnum};
use irqscope::catalogue;
use irqscope::render::columns::wrap;
use irqscope::topology::import::{self, export, hwloc, lscpu, numactl, sysfs, DeviceLocality, Imported};
use irqscope::topology::{CpuSet, Topology};
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
    /// print it as a topology file (TOML). What the source cannot carry is printed as
    /// `warning:` lines on standard error (and kept in the file's note); PCI devices found in
    /// hwloc XML are printed there as `device:` lines with their NUMA node.
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
        /// Print JSON instead: `{"spec": …, "warnings": […], "devices": […]}`.
        #[arg(long)]
        json: bool,
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
            print!("{}", folded_tree(&t));
        }
        TopologyCommand::Import {
            kind,
            path,
            out,
            name,
            json,
        } => {
            let mut imported = import_spec(kind, &path)?;
            if let Some(name) = name {
                imported.spec.name = name;
            }
            let text = if json {
                let mut t = serde_json::to_string_pretty(&imported).context("serialising the import")?;
                t.push('\n');
                t
            } else {
                toml::to_string(&imported.spec).context("serialising the imported topology")?
            };
            let mut err = String::new();
            for w in &imported.warnings {
                err.push_str(&format!("warning: {}: {w}\n", kind.name()));
            }
            err.push_str(&device_lines(&imported.devices, out.as_deref()));
            match out {
                Some(file) => std::fs::write(&file, text).with_context(|| format!("{}", file.display()))?,
                None => print!("{text}"),
            }
            eprint!("{err}");
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
                    export::write_sysfs(&t, &dir)
                        .with_context(|| format!("writing a sysfs tree under {}", dir.display()))?;
                    eprintln!("wrote {}", dir.join("sys/devices/system").display());
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

impl ImportKind {
    fn name(self) -> &'static str {
        match self {
            ImportKind::Sysfs => "sysfs",
            ImportKind::Lscpu => "lscpu",
            ImportKind::Numactl => "numactl",
            ImportKind::HwlocXml => "hwloc-xml",
            ImportKind::Synthetic => "synthetic",
            ImportKind::Toml => "toml",
        }
    }
}

fn import_spec(kind: ImportKind, path: &str) -> anyhow::Result<Imported> {
    let imported = match kind {
        ImportKind::Sysfs => {
            let files = sysfs::read_tree(Path::new(path)).with_context(|| format!("reading sysfs under {path}"))?;
            let mut imported = sysfs::import(&files)?;
            imported.spec.name = format!("imported from sysfs under {path}");
            imported
        }
        ImportKind::Synthetic => hwloc::import_synthetic(path)?,
        ImportKind::Lscpu => lscpu::import(&read_input(path)?)?,
        ImportKind::Numactl => numactl::import(&read_input(path)?)?,
        ImportKind::HwlocXml => hwloc::import_xml(&read_input(path)?)?,
        ImportKind::Toml => Imported {
            spec: import::parse_toml(&read_input(path)?)?,
            warnings: Vec::new(),
            devices: Vec::new(),
        },
    };
    // The parsers validate; this guards the printed file against a bug between them and here.
    Topology::new(&imported.spec).context("imported topology failed validation")?;
    Ok(imported)
}

/// `device:` lines for the PCI devices an import located, and the `simulate` arguments that
/// place them (the queue count is the user's: hwloc does not know what a driver asks for).
fn device_lines(devices: &[DeviceLocality], out: Option<&Path>) -> String {
    if devices.is_empty() {
        return String::new();
    }
    let mut text = String::new();
    for d in devices {
        let names = if d.os_names.is_empty() {
            String::new()
        } else {
            format!(" ({})", d.os_names.join(", "))
        };
        let place = match d.node {
            Some(n) => format!("node {n}"),
            None => "no single node (its locality spans nodes)".to_string(),
        };
        text.push_str(&format!(
            "device: {} {} [{}]{names} on {place}: {}\n",
            d.pci_addr,
            d.class_name(),
            d.vendor_device,
            d.token_hint()
        ));
    }
    let file = out.map_or("FILE".to_string(), |p| p.display().to_string());
    let tokens: Vec<String> = devices.iter().map(DeviceLocality::token_hint).collect();
    text.push_str(&format!(
        "devices: irqscope simulate {file} {} (replace QUEUES with each device's vector count)\n",
        tokens.join(" ")
    ));
    text
}

/// A file or standard input (`-`), bounded like every import.
fn read_input(path: &str) -> anyhow::Result<String> {
    let limit = import::INPUT_BYTES_MAX as u64;
    let mut text = String::new();
    if path == "-" {
        std::io::stdin()
            .take(limit + 1)
            .read_to_string(&mut text)
            .context("standard input")?;
    } else {
        std::fs::File::open(path)
            .and_then(|f| f.take(limit + 1).read_to_string(&mut text))
            .with_context(|| path.to_string())?;
    }
    anyhow::ensure!(text.len() as u64 <= limit, "{path}: larger than {limit} bytes");
    Ok(text)
}

/// An lstopo-like tree, folded: packages (when they are not the nodes), nodes with their
/// distances, then runs of identical clusters (or cores, when a CPU has no cluster) counted
/// rather than listed, each run with the cpulist it covers.
///
/// ```text
/// Xeon SNC2: 224 CPUs (0-223), 4 nodes, SMT2, 112 clusters
/// package 0: 112 CPUs (0-55,112-167)
///   node 0: 56 CPUs (0-27,112-139); distances 10 12 21 21
///     28 clusters of 1 core x 2 threads (0-27,112-139)
/// ```
fn folded_tree(t: &Topology) -> String {
    /// Nodes shown in full; the rest are counted.
    const NODES_SHOWN_MAX: usize = 16;
    let mut out = wrap(&t.summary(), &format!("{}: ", t.name()), "  ");
    let nodes: Vec<u32> = (0..t.nr_node_ids()).collect();
    let packages_are_nodes = t
        .package_sets()
        .iter()
        .all(|p| nodes.iter().any(|&n| t.node_cpus(n) == p));
    // (package heading or None, nodes under it)
    let mut groups: Vec<(Option<String>, Vec<u32>)> = Vec::new();
    if packages_are_nodes {
        groups.push((None, nodes.clone()));
    } else {
        for (p, package) in t.package_sets().iter().enumerate() {
            let under = nodes
                .iter()
                .copied()
                .filter(|&n| t.node_cpus(n).intersects(package))
                .collect();
            groups.push((
                Some(format!("package {p}: {} CPUs ({package})", package.weight())),
                under,
            ));
        }
        groups.push((
            None,
            nodes.iter().copied().filter(|&n| t.node_cpus(n).is_empty()).collect(),
        ));
    }
    let mut shown = 0usize;
    let mut hidden = 0usize;
    for (heading, under) in groups {
        if shown >= NODES_SHOWN_MAX {
            hidden += under.len();
            continue;
        }
        let indent = if heading.is_some() { "  " } else { "" };
        if let Some(h) = heading {
            out.push_str(&wrap(&h, "", "    "));
        }
        for node in under {
            if shown >= NODES_SHOWN_MAX {
                hidden += 1;
                continue;
            }
            shown += 1;
            out.push_str(&node_block(t, node, indent));
        }
    }
    if hidden > 0 {
        out.push_str(&format!("… {hidden} more node{}\n", if hidden == 1 { "" } else { "s" }));
    }
    out
}

fn node_block(t: &Topology, node: u32, indent: &str) -> String {
    let cpus = t.node_cpus(node);
    /// Rows longer than this are summarised as value × count.
    const DISTANCES_LISTED_MAX: u32 = 8;
    let dist: Vec<String> = if t.nr_node_ids() <= DISTANCES_LISTED_MAX {
        (0..t.nr_node_ids()).map(|m| t.distance(node, m).to_string()).collect()
    } else {
        let mut counts = std::collections::BTreeMap::new();
        for m in (0..t.nr_node_ids()).filter(|&m| m != node) {
            *counts.entry(t.distance(node, m)).or_insert(0u32) += 1;
        }
        counts.into_iter().map(|(d, n)| format!("{d} x{n}")).collect()
    };
    let head = if cpus.is_empty() {
        format!("node {node}: no CPUs (memory only)")
    } else {
        format!(
            "node {node}: {} CPU{} ({cpus})",
            cpus.weight(),
            if cpus.weight() == 1 { "" } else { "s" }
        )
    };
    let mut out = wrap(
        &format!("{head}; distances {}", dist.join(" ")),
        indent,
        &format!("{indent}    "),
    );
    for line in unit_runs(t, cpus) {
        out.push_str(&wrap(&line, &format!("{indent}  "), &format!("{indent}      ")));
    }
    out
}

/// Runs of same-shaped units (a cluster's part in the node, or a core) inside a node.
fn unit_runs(t: &Topology, node_cpus: &CpuSet) -> Vec<String> {
    let mut runs: Vec<(String, u32, CpuSet)> = Vec::new();
    let mut rest = node_cpus.clone();
    while let Some(c) = rest.first() {
        let cluster = t.drawn_cluster(c);
        let (kind, unit) = if cluster.is_empty() {
            ("core", t.drawn_smt(c).and(node_cpus))
        } else {
            ("cluster", cluster.and(node_cpus))
        };
        rest.andnot_assign(&unit);
        let mut threads = Vec::new();
        let mut left = unit.clone();
        while let Some(x) = left.first() {
            let core = t.drawn_smt(x).and(&unit);
            left.andnot_assign(&core);
            threads.push(core.weight());
        }
        let n_cores = threads.len();
        let t_max = threads.iter().copied().max().unwrap_or(1);
        let plural = |n: usize, w: &str| if n == 1 { format!("1 {w}") } else { format!("{n} {w}s") };
        let mut shape = if kind == "cluster" {
            format!("of {} x {}", plural(n_cores, "core"), plural(t_max as usize, "thread"))
        } else {
            format!("x {}", plural(t_max as usize, "thread"))
        };
        let spans = kind == "cluster" && !cluster.is_subset(node_cpus);
        if spans {
            // Kept in the key so only parts of the same spanning shape fold together.
            shape.push_str(&format!("|part of cluster {cluster}, which spans nodes"));
        }
        let key = format!("{kind} {shape}");
        match runs.last_mut() {
            Some((k, n, set)) if *k == key => {
                *n += 1;
                set.or_assign(&unit);
            }
            _ => runs.push((key, 1, unit)),
        }
    }
    runs.into_iter()
        .map(|(key, n, set)| {
            let (kind, shape) = key.split_once(' ').unwrap_or((&key, ""));
            let (shape, spans) = shape.split_once('|').unwrap_or((shape, ""));
            let mut line = if n == 1 {
                format!("{kind} {shape} ({set})")
            } else {
                format!("{n} {kind}s {shape} ({set})")
            };
            if !spans.is_empty() {
                line.push_str(&format!("; {spans}"));
            }
            let absent = set.andnot(t.present());
            if !absent.is_empty() {
                line.push_str(&format!("; not present {absent}"));
            }
            let offline = set.and(t.present()).andnot(t.online());
            if !offline.is_empty() {
                line.push_str(&format!("; offline {offline}"));
            }
            line
        })
        .collect()
}
