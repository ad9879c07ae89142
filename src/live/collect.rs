//! Read a host under a root directory and build a [`Snapshot`].
//!
//! [`read_proc`] and [`read_topology`] are the only functions here that touch files; they
//! collect text, bounded per file and in total. [`topology_of`] and [`build_snapshot`] are pure.
//! A root of `/` reads this machine; tests point it at a fixture tree holding `proc/interrupts`,
//! `proc/irq/N/…`, `proc/sys/kernel/random/boot_id` and `sys/devices/system/{cpu,node}`.

use super::limits::IRQS_MAX;
use super::parse::{self, ParseError, INTERRUPTS_BYTES_MAX, IRQ_FILE_BYTES_MAX};
use super::protocol::{Snapshot, WireIrq, WireTopology, PROTOCOL_VERSION};
use crate::topology::import::sysfs::{self, SysfsFiles};
use crate::topology::Topology;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// The `/proc` text of one reading.
#[derive(Debug, Clone, Default)]
pub struct ProcFiles {
    pub interrupts: String,
    /// IRQ number → its files.
    pub irqs: BTreeMap<u32, IrqFiles>,
    pub boot_id: String,
}

#[derive(Debug, Clone, Default)]
pub struct IrqFiles {
    pub smp_affinity_list: Option<String>,
    pub effective_affinity_list: Option<String>,
    pub node: Option<String>,
}

fn read_bounded(path: &Path, bytes_max: usize) -> std::io::Result<String> {
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(bytes_max as u64 + 1)
        .read_to_string(&mut text)?;
    if text.len() > bytes_max {
        return Err(std::io::Error::other(format!(
            "{}: larger than {bytes_max} bytes",
            path.display()
        )));
    }
    Ok(text)
}

/// Read `ROOT/proc/interrupts`, `ROOT/proc/irq/N/{smp_affinity_list,effective_affinity_list,
/// node}` and the boot id. Missing per-IRQ files are left out (older kernels have no
/// `effective_affinity_list`); a missing `/proc/interrupts` is an error.
pub fn read_proc(root: &Path) -> std::io::Result<ProcFiles> {
    let proc = root.join("proc");
    let interrupts = read_bounded(&proc.join("interrupts"), INTERRUPTS_BYTES_MAX)?;
    let boot_id = read_bounded(&proc.join("sys/kernel/random/boot_id"), 64)
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let mut irqs = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(proc.join("irq")) {
        for entry in entries {
            let entry = entry?;
            let Some(irq) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if irqs.len() >= IRQS_MAX {
                return Err(std::io::Error::other(format!("more than {IRQS_MAX} IRQ directories")));
            }
            let dir = entry.path();
            let get = |name: &str| read_bounded(&dir.join(name), IRQ_FILE_BYTES_MAX).ok();
            irqs.insert(
                irq,
                IrqFiles {
                    smp_affinity_list: get("smp_affinity_list"),
                    effective_affinity_list: get("effective_affinity_list"),
                    node: get("node"),
                },
            );
        }
    }
    Ok(ProcFiles {
        interrupts,
        irqs,
        boot_id,
    })
}

/// Read the sysfs topology files (`ROOT/sys/devices/system/{cpu,node}`).
pub fn read_topology(root: &Path) -> std::io::Result<SysfsFiles> {
    sysfs::read_tree(root)
}

/// The topology of a sysfs tree, validated, in wire form.
pub fn topology_of(files: &SysfsFiles, host: &str) -> Result<WireTopology, ParseError> {
    let mut spec = sysfs::parse(files).map_err(|e| ParseError::new("sysfs", e.line, e.to_string()))?;
    spec.name = host.to_string();
    let topo = Topology::new(&spec).map_err(|e| ParseError::new("sysfs", None, e.to_string()))?;
    Ok(WireTopology::from_topology(&topo))
}

/// Build a snapshot from one reading. Per-IRQ files that do not parse are reported, not
/// skipped: a reading is either whole or an error naming the file and line.
pub fn build_snapshot(
    proc: &ProcFiles,
    topology: &WireTopology,
    host: &str,
    taken_unix_ms: u64,
) -> Result<Snapshot, ParseError> {
    let parsed = parse::parse_interrupts(&proc.interrupts)?;
    let mut irqs = Vec::with_capacity(parsed.rows.len());
    for row in parsed.rows {
        let files = row.irq().and_then(|n| proc.irqs.get(&n).map(|f| (n, f)));
        let (affinity, effective, node) = match files {
            None => (None, None, None),
            Some((n, f)) => {
                let list = |name: &str, text: &Option<String>| -> Result<Option<String>, ParseError> {
                    text.as_deref()
                        .map(|t| {
                            parse::parse_affinity_list(&format!("/proc/irq/{n}/{name}"), t).map(|s| s.to_cpulist())
                        })
                        .transpose()
                };
                let node = match &f.node {
                    Some(t) => parse::parse_irq_node(&format!("/proc/irq/{n}/node"), t)?,
                    None => None,
                };
                (
                    list("smp_affinity_list", &f.smp_affinity_list)?,
                    list("effective_affinity_list", &f.effective_affinity_list)?,
                    node,
                )
            }
        };
        irqs.push(WireIrq {
            label: row.label,
            chip: row.chip,
            hwirq: row.hwirq,
            name: row.name,
            counts: row.counts,
            affinity,
            effective,
            node,
        });
    }
    Ok(Snapshot {
        version: PROTOCOL_VERSION,
        host: host.to_string(),
        taken_unix_ms,
        boot_id: proc.boot_id.clone(),
        topology: topology.clone(),
        cpus: parsed.cpus,
        irqs,
    })
}

/// A topology for a bare pasted `/proc/interrupts`: one node holding CPUs 0 to the highest
/// column, the columns online, no SMT or cluster facts.
pub fn topology_from_columns(cpus: &[u32]) -> WireTopology {
    let last = cpus.iter().copied().max().unwrap_or(0);
    let online = crate::topology::CpuSet::from_cpus(cpus.iter().copied());
    WireTopology {
        nodes: vec![if last == 0 { "0".into() } else { format!("0-{last}") }],
        online: Some(online.to_cpulist()),
        ..WireTopology::default()
    }
}
