//! Read a host under a root directory and build a [`Snapshot`].
//!
//! [`read_proc`] and [`read_topology`] are the only functions here that touch files; they
//! collect text, bounded per file and in total. [`topology_of`] and [`build_snapshot`] are pure.
//! A root of `/` reads this machine; tests point it at a fixture tree holding `proc/interrupts`,
//! `proc/irq/N/…`, `proc/sys/kernel/random/boot_id`, `proc/sys/kernel/osrelease` and
//! `sys/devices/system/{cpu,node}`.
//!
//! [`Collector`] is the agent's reading loop: it keeps the `/proc/interrupts` text, the parsed
//! rows and the topology between readings, so a steady host re-reads files into the same
//! buffers and re-reads sysfs only when the online CPUs change.

use super::limits::IRQS_MAX;
use super::parse::{self, Interrupts, ParseError, INTERRUPTS_BYTES_MAX, IRQ_FILE_BYTES_MAX};
use super::protocol::{Snapshot, WireIrq, WireTopology, KERNEL_RELEASE_BYTES_MAX, PROTOCOL_VERSION};
use crate::topology::import::sysfs::{self, SysfsFiles};
use crate::topology::{CpuSet, Topology};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

mod collector;
pub use collector::{CollectError, Collector, INTERRUPTS_CHUNK_BYTES, IRQ_FILES_PER_READING, LANDED_OUTSIDE_READS_MAX};

/// The `/proc` text of one reading.
#[derive(Debug, Clone, Default)]
pub struct ProcFiles {
    pub interrupts: String,
    /// IRQ number → its files.
    pub irqs: BTreeMap<u32, IrqFiles>,
    pub boot_id: String,
    /// `/proc/sys/kernel/osrelease`, trimmed; empty when absent.
    pub kernel_release: String,
}

#[derive(Debug, Clone, Default)]
pub struct IrqFiles {
    pub(crate) smp_affinity_list: Option<String>,
    pub(crate) effective_affinity_list: Option<String>,
    pub(crate) node: Option<String>,
}

fn read_bounded(path: &Path, bytes_max: usize) -> std::io::Result<String> {
    let mut text = String::new();
    read_bounded_into(path, bytes_max, &mut text)?;
    Ok(text)
}

/// Read a file into `text` (cleared first, its capacity kept), refusing more than `bytes_max`.
fn read_bounded_into(path: &Path, bytes_max: usize, text: &mut String) -> std::io::Result<()> {
    text.clear();
    std::fs::File::open(path)?
        .take(bytes_max as u64 + 1)
        .read_to_string(text)?;
    if text.len() > bytes_max {
        return Err(std::io::Error::other(format!(
            "{}: larger than {bytes_max} bytes",
            path.display()
        )));
    }
    Ok(())
}

fn read_kernel_release(proc: &Path) -> String {
    read_bounded(&proc.join("sys/kernel/osrelease"), KERNEL_RELEASE_BYTES_MAX + 1)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
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
    let kernel_release = read_kernel_release(&proc);
    let irqs = read_irq_files(&proc)?;
    Ok(ProcFiles {
        interrupts,
        irqs,
        boot_id,
        kernel_release,
    })
}

/// `PROC/irq/N/{smp_affinity_list,effective_affinity_list,node}` of every IRQ directory.
fn read_irq_files(proc: &Path) -> std::io::Result<BTreeMap<u32, IrqFiles>> {
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
    Ok(irqs)
}

/// Read the sysfs topology files (`ROOT/sys/devices/system/{cpu,node}`).
pub fn read_topology(root: &Path) -> std::io::Result<SysfsFiles> {
    sysfs::read_tree(root)
}

/// The topology of a sysfs tree, validated, in wire form, with the possible, present and
/// online sets as the kernel printed them (canonical cpulists; absent files left out).
pub fn topology_of(files: &SysfsFiles, host: &str) -> Result<WireTopology, ParseError> {
    let mut spec = sysfs::parse(files).map_err(|e| ParseError::new("sysfs", e.line, e.to_string()))?;
    spec.name = host.to_string();
    let topo = Topology::new(&spec).map_err(|e| ParseError::new("sysfs", None, e.to_string()))?;
    let mut wire = WireTopology::from_topology(&topo);
    // `sysfs::parse` has checked these files; print them in the kernel's canonical form.
    let set = |name: &str| -> Result<Option<String>, ParseError> {
        files
            .get(name)
            .map(|t| parse::parse_affinity_list(&format!("/sys/devices/system/{name}"), t).map(|s| s.to_cpulist()))
            .transpose()
    };
    wire.possible = set("cpu/possible")?;
    if let Some(present) = set("cpu/present")? {
        wire.present = Some(present);
    }
    if let Some(online) = set("cpu/online")? {
        wire.online = Some(online);
    }
    Ok(wire)
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
    build_snapshot_from(&parsed, proc, topology, host, taken_unix_ms)
}

/// The wire fields of one IRQ's `/proc/irq/N/` files: requested and effective affinity in
/// canonical cpulist form, and the node.
type IrqWireFields = (Option<String>, Option<String>, Option<u32>);

/// Parse IRQ `n`'s files into their wire fields; an error names the file.
fn irq_wire_fields(n: u32, f: &IrqFiles) -> Result<IrqWireFields, ParseError> {
    irq_fields_and_landing(n, f).map(|(fields, _)| fields)
}

/// [`irq_wire_fields`], and the CPUs the IRQ's interrupts may land on: its effective affinity,
/// else its requested one (a kernel without `effective_affinity_list`), else `None`.
fn irq_fields_and_landing(n: u32, f: &IrqFiles) -> Result<(IrqWireFields, Option<LandsOn>), ParseError> {
    let list = |name: &str, text: &Option<String>| -> Result<Option<CpuSet>, ParseError> {
        text.as_deref()
            .map(|t| parse::parse_affinity_list(&format!("/proc/irq/{n}/{name}"), t))
            .transpose()
    };
    let node = match &f.node {
        Some(t) => parse::parse_irq_node(&format!("/proc/irq/{n}/node"), t)?,
        None => None,
    };
    let affinity = list("smp_affinity_list", &f.smp_affinity_list)?;
    let effective = list("effective_affinity_list", &f.effective_affinity_list)?;
    let lands_on = effective.as_ref().or(affinity.as_ref()).map(LandsOn::of);
    let cpulist = |set: Option<CpuSet>| set.map(|s| s.to_cpulist());
    Ok(((cpulist(affinity), cpulist(effective), node), lands_on))
}

/// The CPUs an IRQ's interrupts may land on. Nearly every effective affinity is one CPU or one
/// span of CPUs, kept inline so that checking a reading's counts against it touches no other
/// memory; any other set is kept whole.
#[derive(Debug, Clone, PartialEq)]
enum LandsOn {
    /// `first..=last`.
    Span(u32, u32),
    Set(CpuSet),
}

impl LandsOn {
    fn of(set: &CpuSet) -> LandsOn {
        match (set.first(), set.last()) {
            (Some(first), Some(last)) if set.weight() == last - first + 1 => LandsOn::Span(first, last),
            _ => LandsOn::Set(set.clone()),
        }
    }
}

/// [`build_snapshot`] from rows already parsed.
pub fn build_snapshot_from(
    parsed: &Interrupts,
    proc: &ProcFiles,
    topology: &WireTopology,
    host: &str,
    taken_unix_ms: u64,
) -> Result<Snapshot, ParseError> {
    build_snapshot_with(parsed, proc, topology, host, taken_unix_ms, |n, f, irq, _, _| {
        set_wire_fields(irq, borrowed(&irq_wire_fields(n, f)?));
        Ok(())
    })
}

/// [`build_snapshot_from`] with the IRQ files' wire fields from `fields`.
fn build_snapshot_with(
    parsed: &Interrupts,
    proc: &ProcFiles,
    topology: &WireTopology,
    host: &str,
    taken_unix_ms: u64,
    fields: impl FnMut(u32, &IrqFiles, &mut WireIrq, bool, usize) -> Result<(), ParseError>,
) -> Result<Snapshot, ParseError> {
    let mut snap = Snapshot {
        version: PROTOCOL_VERSION,
        host: host.to_string(),
        taken_unix_ms,
        boot_id: proc.boot_id.clone(),
        topology: topology.clone(),
        cpus: Vec::new(),
        irqs: Vec::new(),
    };
    snap.topology.kernel_release = proc.kernel_release.clone();
    update_irqs(&mut snap, parsed, proc, |_| false, fields)?;
    Ok(snap)
}

/// `to = from`, keeping `to`'s allocation, and without writing when they are equal already;
/// whether `to` changed.
fn set_text(to: &mut String, from: &str) -> bool {
    let changed = to != from;
    if changed {
        to.clear();
        to.push_str(from);
    }
    changed
}

/// Write an IRQ's `/proc/irq/N/` wire fields.
fn set_wire_fields(irq: &mut WireIrq, (affinity, effective, node): (Option<&str>, Option<&str>, Option<u32>)) {
    set_opt_text(&mut irq.affinity, affinity);
    set_opt_text(&mut irq.effective, effective);
    irq.node = node;
}

fn borrowed((affinity, effective, node): &IrqWireFields) -> (Option<&str>, Option<&str>, Option<u32>) {
    (affinity.as_deref(), effective.as_deref(), *node)
}

fn set_opt_text(to: &mut Option<String>, from: Option<&str>) {
    match (to, from) {
        (Some(t), Some(f)) => {
            set_text(t, f);
        }
        (to, from) => {
            if to.as_deref() != from {
                *to = from.map(str::to_string);
            }
        }
    }
}

/// Bring `snap`'s columns and IRQs up to `parsed` in place: an IRQ's strings are written only
/// when they changed and its counter vector is reused, so a steady host's reading allocates
/// nothing here.
///
/// `text_same(i)` says that row `i`'s label, chip, hwirq and name are those `snap` holds at
/// that row already (a collector knows which rows its parse rewrote): they are then neither
/// compared nor written.
fn update_irqs(
    snap: &mut Snapshot,
    parsed: &Interrupts,
    proc: &ProcFiles,
    text_same: impl Fn(usize) -> bool,
    mut fields: impl FnMut(u32, &IrqFiles, &mut WireIrq, bool, usize) -> Result<(), ParseError>,
) -> Result<(), ParseError> {
    snap.cpus.clone_from(&parsed.cpus);
    let held = snap.irqs.len();
    snap.irqs.truncate(parsed.rows.len());
    for (i, row) in parsed.rows.iter().enumerate() {
        if i == snap.irqs.len() {
            snap.irqs.push(WireIrq::default());
        }
        let irq = &mut snap.irqs[i];
        // The row held this IRQ already (in the reading `snap` was built from).
        let same_irq = (i < held && text_same(i)) || {
            let same_label = !set_text(&mut irq.label, &row.label);
            set_text(&mut irq.chip, &row.chip);
            set_text(&mut irq.hwirq, &row.hwirq);
            set_text(&mut irq.name, &row.name);
            same_label
        };
        irq.counts.clear();
        irq.counts.extend_from_slice(&row.counts);
        match row.irq().and_then(|n| proc.irqs.get(&n).map(|f| (n, f))) {
            None => {
                irq.affinity = None;
                irq.effective = None;
                irq.node = None;
            }
            Some((n, f)) => fields(n, f, irq, same_irq, i)?,
        }
    }
    Ok(())
}

/// A topology for a bare pasted `/proc/interrupts`: one node holding CPUs 0 to the highest
/// column, the columns online, no SMT or cluster facts; the controller (and architecture) its
/// chip names tell.
pub(crate) fn topology_from_columns<'a>(cpus: &[u32], chips: impl Iterator<Item = &'a str>) -> WireTopology {
    let last = cpus.iter().copied().max().unwrap_or(0);
    let online = crate::topology::CpuSet::from_cpus(cpus.iter().copied());
    let irqchip = super::devices::machine_irqchip(chips);
    WireTopology {
        nodes: vec![if last == 0 { "0".into() } else { format!("0-{last}") }],
        online: Some(online.to_cpulist()),
        arch: irqchip.map(crate::topology::Irqchip::arch),
        irqchip,
        ..WireTopology::default()
    }
}
