//! A [`Snapshot`] as Prometheus series (`irqscope-agent export`): the exporter is a view of a
//! reading, encoded with `prometheus-client` in the OpenMetrics text format (which Prometheus
//! scrapes and `promtool check metrics` reads).
//!
//! Series, every one labelled `host`:
//! * `irqscope_agent_info{host,kernel,version}` = 1;
//! * `irqscope_cpu_info{host,cpu,node,package,core,cluster,smt,online,present}` = 1, one per
//!   possible CPU: `node`, `package`, `core` and `cluster` are indexes into the snapshot's
//!   lists (`core` is the SMT group), `smt` the sibling cpulist, `online` and `present` `0`/`1`;
//! * `irqscope_node_distance{host,from,to}`, the SLIT matrix (CPU-less nodes included);
//! * `irqscope_irq_info{host,irq,chip,hwirq,name,device,affinity,effective,node,managed}` = 1,
//!   affinity and effective as kernel cpulists (`""` when the kernel gave none), `device` and
//!   `managed` (`0`/`1`) from `live::devices`' naming rules;
//! * `irqscope_interrupts_total{host,irq,cpu}`, only the CPUs with a non-zero count, at most
//!   [`ExportOptions::max_series`] of them (the rest counted in
//!   `irqscope_export_series_dropped{host}`).
//!
//! [`WireTopology`] is rebuilt from these series by `live::source` (the cpu_info labels carry
//! every list the topology is made of).

use super::devices::device_of;
use super::protocol::{Snapshot, WireIrq, WireTopology};
use crate::topology::{parse_cpulist, CPUS_MAX};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, LabelSetEncoder};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::fmt::Write as _;
use std::sync::Arc;

/// Default of `--max-series`: counters exported per scrape. 1,024 CPUs × 4,096 IRQs with every
/// count non-zero would be 4 M series; a host rarely has more than a few thousand non-zero
/// (IRQ, CPU) pairs, so this bound only cuts pathological hosts.
pub const SERIES_MAX_DEFAULT: usize = 200_000;
/// Most `--include` / `--exclude` patterns.
pub const FILTERS_MAX: usize = 64;

/// What `export` keeps of a snapshot.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// Most `irqscope_interrupts_total` series.
    pub max_series: usize,
    /// Keep only IRQs whose name (`/proc/interrupts` last column) contains one of these (all
    /// when empty).
    pub include: Vec<String>,
    /// Drop IRQs whose name contains one of these.
    pub exclude: Vec<String>,
    /// The `version` label of `irqscope_agent_info`.
    pub agent_version: String,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            max_series: SERIES_MAX_DEFAULT,
            include: Vec::new(),
            exclude: Vec::new(),
            agent_version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

impl ExportOptions {
    fn keeps(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|p| name.contains(p.as_str())))
            && !self.exclude.iter().any(|p| name.contains(p.as_str()))
    }
}

/// The HTTP content type of [`to_classic_text`]'s text (what `/metrics` serves: every
/// Prometheus, node_exporter's textfile collector and `promtool check metrics` read it).
pub const CLASSIC_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A label set whose values are escaped as the exposition format requires (`\\`, `\"`, `\n`);
/// prometheus-client writes label values verbatim.
struct Labels<'a>(&'a [(&'static str, &'a str)]);

impl EncodeLabelSet for Labels<'_> {
    fn encode(&self, mut encoder: LabelSetEncoder) -> Result<(), std::fmt::Error> {
        for (k, v) in self.0 {
            let mut label = encoder.encode_label();
            let mut key = label.encode_label_key()?;
            key.write_str(k)?;
            let mut value = key.encode_label_value()?;
            for c in v.chars() {
                match c {
                    '\\' => value.write_str("\\\\")?,
                    '"' => value.write_str("\\\"")?,
                    '\n' => value.write_str("\\n")?,
                    c => value.write_char(c)?,
                }
            }
            value.finish()?;
        }
        Ok(())
    }
}

#[derive(Debug)]
struct SnapshotCollector {
    snap: Arc<Snapshot>,
    opts: Arc<ExportOptions>,
}

/// Index of the list of `lists` whose cpulist holds `cpu`, as text (`""` when none).
fn index_of(lists: &[Vec<u32>], cpu: u32) -> String {
    lists
        .iter()
        .position(|l| l.binary_search(&cpu).is_ok())
        .map(|i| i.to_string())
        .unwrap_or_default()
}

fn parsed(lists: &[String]) -> Vec<Vec<u32>> {
    lists
        .iter()
        .map(|l| {
            let mut v: Vec<u32> = parse_cpulist(l, CPUS_MAX)
                .map(|s| s.iter().collect())
                .unwrap_or_default();
            v.sort_unstable();
            v
        })
        .collect()
}

fn cpu_set(text: &Option<String>) -> Option<Vec<u32>> {
    text.as_deref()
        .and_then(|t| parse_cpulist(t, CPUS_MAX).ok())
        .map(|s| s.iter().collect())
}

/// The possible CPUs of a topology: `possible`, or every CPU of a node.
pub(crate) fn possible_cpus(t: &WireTopology) -> Vec<u32> {
    if let Some(p) = cpu_set(&t.possible) {
        return p;
    }
    let mut all: Vec<u32> = parsed(&t.nodes).into_iter().flatten().collect();
    all.sort_unstable();
    all.dedup();
    all
}

impl Collector for SnapshotCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = &*self.snap;
        let host = s.host.as_str();
        let t = &s.topology;
        let version = self.opts.agent_version.as_str();
        let mut m = encoder.encode_descriptor(
            "irqscope_agent_info",
            "The exporting agent and the host's kernel release.",
            None,
            MetricType::Gauge,
        )?;
        let labels = [
            ("host", host),
            ("kernel", t.kernel_release.as_str()),
            ("version", version),
        ];
        m.encode_family(&Labels(&labels))?.encode_gauge(&1i64)?;

        self.encode_cpu_info(&mut encoder)?;
        self.encode_node_distance(&mut encoder)?;
        let kept: Vec<&WireIrq> = s.irqs.iter().filter(|i| self.opts.keeps(&i.name)).collect();
        self.encode_irq_info(&mut encoder, &kept)?;
        let dropped = self.encode_interrupts(&mut encoder, &kept)?;
        let mut m = encoder.encode_descriptor(
            "irqscope_export_series_dropped",
            "Interrupt counters left out by --max-series at the last scrape.",
            None,
            MetricType::Gauge,
        )?;
        let labels = [("host", host)];
        m.encode_family(&Labels(&labels))?.encode_gauge(&dropped)?;
        Ok(())
    }
}

impl SnapshotCollector {
    /// `irqscope_cpu_info`: one series a possible CPU.
    fn encode_cpu_info(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let host = self.snap.host.as_str();
        let t = &self.snap.topology;
        let nodes = parsed(&t.nodes);
        let packages = parsed(&t.packages);
        let smt = parsed(&t.smt);
        let clusters = parsed(&t.clusters);
        let online = cpu_set(&t.online);
        let present = cpu_set(&t.present);
        let flag = |set: &Option<Vec<u32>>, cpu: u32| match set {
            None => "1",
            Some(s) if s.contains(&cpu) => "1",
            Some(_) => "0",
        };
        let mut m = encoder.encode_descriptor(
            "irqscope_cpu_info",
            "One possible CPU and where it sits (indexes into the host's node, package, core and cluster lists).",
            None,
            MetricType::Gauge,
        )?;
        for cpu in possible_cpus(t) {
            let cpu_s = cpu.to_string();
            let node = index_of(&nodes, cpu);
            let package = index_of(&packages, cpu);
            let core = index_of(&smt, cpu);
            let cluster = index_of(&clusters, cpu);
            let siblings = core.parse::<usize>().ok().map(|i| t.smt[i].as_str()).unwrap_or("");
            let labels = [
                ("host", host),
                ("cpu", cpu_s.as_str()),
                ("node", node.as_str()),
                ("package", package.as_str()),
                ("core", core.as_str()),
                ("cluster", cluster.as_str()),
                ("smt", siblings),
                ("online", flag(&online, cpu)),
                ("present", flag(&present, cpu)),
            ];
            m.encode_family(&Labels(&labels))?.encode_gauge(&1i64)?;
        }
        Ok(())
    }

    /// `irqscope_node_distance`: one series a pair of nodes.
    fn encode_node_distance(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let host = self.snap.host.as_str();
        let mut m = encoder.encode_descriptor(
            "irqscope_node_distance",
            "NUMA distance from node to node (the firmware's SLIT).",
            None,
            MetricType::Gauge,
        )?;
        for (from, row) in self.snap.topology.distances.iter().flatten().enumerate() {
            for (to, d) in row.iter().enumerate() {
                let (f, tt) = (from.to_string(), to.to_string());
                let labels = [("host", host), ("from", f.as_str()), ("to", tt.as_str())];
                m.encode_family(&Labels(&labels))?.encode_gauge(&(*d as i64))?;
            }
        }
        Ok(())
    }

    /// `irqscope_irq_info`: one series a kept IRQ.
    fn encode_irq_info(&self, encoder: &mut DescriptorEncoder, kept: &[&WireIrq]) -> Result<(), std::fmt::Error> {
        let host = self.snap.host.as_str();
        let mut m = encoder.encode_descriptor(
            "irqscope_irq_info",
            "One /proc/interrupts row and its /proc/irq/N files (affinity and effective as kernel cpulists).",
            None,
            MetricType::Gauge,
        )?;
        for irq in kept {
            let (device, managed) = device_of(&irq.name).unwrap_or_default();
            let managed = if managed { "1" } else { "0" };
            let node = irq.node.map(|n| n.to_string()).unwrap_or_default();
            let labels = [
                ("host", host),
                ("irq", irq.label.as_str()),
                ("chip", irq.chip.as_str()),
                ("hwirq", irq.hwirq.as_str()),
                ("name", irq.name.as_str()),
                ("device", device.as_str()),
                ("affinity", irq.affinity.as_deref().unwrap_or("")),
                ("effective", irq.effective.as_deref().unwrap_or("")),
                ("node", node.as_str()),
                ("managed", managed),
            ];
            m.encode_family(&Labels(&labels))?.encode_gauge(&1i64)?;
        }
        Ok(())
    }

    /// `irqscope_interrupts`: one counter a kept IRQ and CPU with a non-zero count, up to
    /// `--max-series`; returns how many were left out.
    fn encode_interrupts(&self, encoder: &mut DescriptorEncoder, kept: &[&WireIrq]) -> Result<u64, std::fmt::Error> {
        let host = self.snap.host.as_str();
        let mut dropped = 0u64;
        let mut emitted = 0usize;
        let mut m = encoder.encode_descriptor(
            "irqscope_interrupts",
            "Interrupts of one IRQ on one CPU since boot (only non-zero counts).",
            None,
            MetricType::Counter,
        )?;
        for irq in kept {
            for &(cpu, count) in irq.counts.iter().filter(|c| c.1 > 0) {
                if emitted >= self.opts.max_series {
                    dropped += 1;
                    continue;
                }
                emitted += 1;
                let cpu_s = cpu.to_string();
                let labels = [("host", host), ("irq", irq.label.as_str()), ("cpu", cpu_s.as_str())];
                m.encode_family(&Labels(&labels))?
                    .encode_counter::<Labels, _, u64>(&count, None)?;
            }
        }
        Ok(dropped)
    }
}

/// The exposition text of a snapshot (ends with `# EOF`).
pub fn encode(snap: Arc<Snapshot>, opts: Arc<ExportOptions>) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(SnapshotCollector { snap, opts }));
    let mut out = String::new();
    // Writing to a String cannot fail; an error here would be a bug in the collector above.
    prometheus_client::encoding::text::encode(&mut out, &registry).expect("encoding into a String");
    out
}

/// Write `text` to `path` atomically (a temporary file beside it, then a rename), as
/// node_exporter's textfile collector requires: it must never read half a file.
pub fn write_textfile(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// The same text in the classic Prometheus text format (0.0.4), which node_exporter's textfile
/// collector reads: counter families are named with their `_total` suffix and there is no
/// `# EOF` line.
pub fn to_classic_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ").and_then(|r| r.strip_suffix(" counter")) {
            let _ = writeln!(out, "# TYPE {rest}_total counter");
        } else if let Some((name, help)) = line.strip_prefix("# HELP ").and_then(|r| r.split_once(' ')) {
            let counter = name == "irqscope_interrupts";
            let _ = writeln!(out, "# HELP {name}{} {help}", if counter { "_total" } else { "" });
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}
