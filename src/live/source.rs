//! Where live readings come from besides pushes: a host's series (as `live::export` writes
//! them, read back from Prometheus or from exposition text) rebuilt into the [`Snapshot`] the
//! agent would have pushed, so the store, the pages, live-vs-model and permalinks run the same
//! code for every host whatever its source.
//!
//! Lossy on purpose in two places only: the order of the named `/proc/interrupts` rows (NMI,
//! LOC, …; numbered IRQs keep their order, by number) and the boot id, which the series do
//! not carry.

use super::limits::IRQS_MAX;
use super::protocol::{valid_host_name, Snapshot, WireIrq, WireTopology, PROTOCOL_VERSION};
use crate::topology::{CpuSet, CPUS_MAX, NODES_MAX};
use std::collections::BTreeMap;

/// One series and its value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Series {
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) value: f64,
}

impl Series {
    fn get(&self, k: &str) -> &str {
        self.labels.get(k).map(String::as_str).unwrap_or("")
    }
}

/// The series of one host at one scrape, by metric name.
#[derive(Debug, Clone, Default)]
pub struct HostSeries {
    pub(crate) agent_info: Vec<Series>,
    pub(crate) cpu_info: Vec<Series>,
    pub(crate) node_distance: Vec<Series>,
    pub(crate) irq_info: Vec<Series>,
    pub(crate) interrupts: Vec<Series>,
}

/// Most series per metric read back for one host (the counters: CPUs × IRQs would be 4 M at
/// the limits, the exporter's own default bound is far below this).
pub(crate) const HOST_SERIES_MAX: usize = 1 << 20;

impl HostSeries {
    /// Add one series of the metric `name` (others are ignored).
    pub(crate) fn push(&mut self, name: &str, s: Series) -> Result<(), String> {
        let v = match name {
            "irqscope_agent_info" => &mut self.agent_info,
            "irqscope_cpu_info" => &mut self.cpu_info,
            "irqscope_node_distance" => &mut self.node_distance,
            "irqscope_irq_info" => &mut self.irq_info,
            "irqscope_interrupts_total" => &mut self.interrupts,
            _ => return Ok(()),
        };
        if v.len() >= HOST_SERIES_MAX {
            return Err(format!("more than {HOST_SERIES_MAX} {name} series"));
        }
        v.push(s);
        Ok(())
    }
}

fn num(s: &Series, k: &str, max: u32) -> Result<u32, String> {
    s.get(k)
        .parse::<u32>()
        .ok()
        .filter(|n| *n < max)
        .ok_or_else(|| format!("label {k}={:?} is not a number below {max}", s.get(k)))
}

fn opt_num(s: &Series, k: &str, max: u32) -> Result<Option<u32>, String> {
    if s.get(k).is_empty() {
        Ok(None)
    } else {
        num(s, k, max).map(Some)
    }
}

/// Lists indexed by a label: `lists[i]` the CPUs whose label is `i` (ids must be dense).
fn grouped(cpus: &[(u32, Option<u32>)], what: &str) -> Result<Vec<String>, String> {
    let n = match cpus.iter().filter_map(|c| c.1).max() {
        None => return Ok(Vec::new()),
        Some(m) => m as usize + 1,
    };
    let mut sets = vec![CpuSet::new(CPUS_MAX); n];
    for &(cpu, i) in cpus {
        if let Some(i) = i {
            sets[i as usize].insert(cpu);
        }
    }
    if what != "node" && sets.iter().any(|s| s.is_empty()) {
        return Err(format!("{what} ids are not dense"));
    }
    Ok(sets.iter().map(CpuSet::to_cpulist).collect())
}

/// One `irqscope_cpu_info` series: a CPU and its labels.
struct CpuRow {
    cpu: u32,
    node: Option<u32>,
    package: Option<u32>,
    core: Option<u32>,
    cluster: Option<u32>,
    online: bool,
    present: bool,
}

/// The `irqscope_cpu_info` series as rows, by CPU, one a CPU.
fn cpu_rows(s: &HostSeries) -> Result<Vec<CpuRow>, String> {
    let mut cpus = Vec::with_capacity(s.cpu_info.len());
    for c in &s.cpu_info {
        cpus.push(CpuRow {
            cpu: num(c, "cpu", CPUS_MAX)?,
            node: opt_num(c, "node", NODES_MAX)?,
            package: opt_num(c, "package", CPUS_MAX)?,
            core: opt_num(c, "core", CPUS_MAX)?,
            cluster: opt_num(c, "cluster", CPUS_MAX)?,
            online: c.get("online") != "0",
            present: c.get("present") != "0",
        });
    }
    cpus.sort_by_key(|c| c.cpu);
    cpus.dedup_by_key(|c| c.cpu);
    Ok(cpus)
}

/// The `irqscope_node_distance` series as a square matrix (none without series).
fn distances(s: &HostSeries) -> Result<Option<Vec<Vec<u32>>>, String> {
    if s.node_distance.is_empty() {
        return Ok(None);
    }
    let mut cells = Vec::with_capacity(s.node_distance.len());
    for d in &s.node_distance {
        cells.push((num(d, "from", NODES_MAX)?, num(d, "to", NODES_MAX)?, d.value));
    }
    let n = cells.iter().map(|c| c.0.max(c.1)).max().unwrap_or(0) as usize + 1;
    let mut m = vec![vec![0u32; n]; n];
    for (f, t, v) in cells {
        m[f as usize][t as usize] = v as u32;
    }
    Ok(Some(m))
}

/// The `irqscope_irq_info` series with their `irqscope_interrupts` counts (non-zero, by CPU),
/// numbered IRQs first in order, then the named ones.
fn wire_irqs(host: &str, s: &HostSeries) -> Result<Vec<WireIrq>, String> {
    if s.irq_info.len() > IRQS_MAX {
        return Err(format!("host {host}: more than {IRQS_MAX} IRQs"));
    }
    let mut counts: BTreeMap<&str, Vec<(u32, u64)>> = BTreeMap::new();
    for c in &s.interrupts {
        let cpu = num(c, "cpu", CPUS_MAX)?;
        if !(c.value.is_finite() && c.value >= 0.0) {
            return Err(format!(
                "host {host}: counter {} on CPU {cpu} is {}",
                c.get("irq"),
                c.value
            ));
        }
        counts.entry(c.get("irq")).or_default().push((cpu, c.value as u64));
    }
    let mut irqs: Vec<WireIrq> = s
        .irq_info
        .iter()
        .map(|i| {
            let some = |k: &str| Some(i.get(k).to_string()).filter(|v| !v.is_empty());
            let mut c = counts.remove(i.get("irq")).unwrap_or_default();
            c.sort_unstable();
            c.retain(|x| x.1 > 0);
            Ok(WireIrq {
                label: i.get("irq").to_string(),
                chip: i.get("chip").to_string(),
                hwirq: i.get("hwirq").to_string(),
                name: i.get("name").to_string(),
                counts: c,
                affinity: some("affinity"),
                effective: some("effective"),
                node: opt_num(i, "node", NODES_MAX)?,
            })
        })
        .collect::<Result<_, String>>()?;
    irqs.sort_by(|a, b| {
        let key = |l: &str| {
            l.parse::<u32>()
                .map_or((1, 0, l.to_string()), |n| (0, n, String::new()))
        };
        key(&a.label).cmp(&key(&b.label))
    });
    Ok(irqs)
}

/// The snapshot `host`'s series describe, as read at `taken_unix_ms`.
pub fn snapshot_from_series(host: &str, taken_unix_ms: u64, s: &HostSeries) -> Result<Snapshot, String> {
    if !valid_host_name(host) {
        return Err(format!("bad host name {host:?}"));
    }
    let kernel_release = s
        .agent_info
        .first()
        .map(|a| a.get("kernel").to_string())
        .unwrap_or_default();
    if s.cpu_info.is_empty() {
        return Err(format!("host {host}: no irqscope_cpu_info series"));
    }
    let cpus = cpu_rows(s)?;
    let pick = |f: fn(&CpuRow) -> Option<u32>| cpus.iter().map(|c| (c.cpu, f(c))).collect::<Vec<_>>();
    let mut nodes = grouped(&pick(|c| c.node), "node")?;
    let packages = grouped(&pick(|c| c.package), "package")?;
    let smt = grouped(&pick(|c| c.core), "core")?;
    let clusters = grouped(&pick(|c| c.cluster), "cluster")?;
    let set =
        |keep: fn(&CpuRow) -> bool| CpuSet::from_cpus(cpus.iter().filter(|c| keep(c)).map(|c| c.cpu)).to_cpulist();
    let possible = set(|_| true);
    let online = set(|c| c.online);
    let present = set(|c| c.present);

    let distances = distances(s)?;
    // CPU-less nodes are the rows past the last node with CPUs.
    if let Some(m) = &distances {
        if nodes.len() < m.len() {
            nodes.resize(m.len(), String::new());
        }
    }
    let irqs = wire_irqs(host, s)?;
    // The exposition has no architecture: the controller the chips name tells it.
    let irqchip = super::devices::machine_irqchip(irqs.iter().map(|i: &WireIrq| i.chip.as_str()));
    Ok(Snapshot {
        version: PROTOCOL_VERSION,
        host: host.to_string(),
        taken_unix_ms,
        boot_id: String::new(),
        topology: WireTopology {
            nodes,
            smt,
            clusters,
            packages,
            present: Some(present),
            online: Some(online.clone()),
            distances,
            possible: Some(possible),
            kernel_release,
            arch: irqchip.map(crate::topology::Irqchip::arch),
            irqchip,
        },
        cpus: cpus.iter().filter(|c| c.online).map(|c| c.cpu).collect(),
        irqs,
    })
}

/// Most bytes of exposition text [`parse_text`] reads.
pub(crate) const TEXT_BYTES_MAX: usize = 64 << 20;

/// Read exposition text (classic or OpenMetrics) into one host's series; comments skipped.
pub fn parse_text(text: &str) -> Result<BTreeMap<String, HostSeries>, String> {
    if text.len() > TEXT_BYTES_MAX {
        return Err(format!("exposition text over {TEXT_BYTES_MAX} bytes"));
    }
    let mut hosts: BTreeMap<String, HostSeries> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |m: &str| format!("line {}: {m}", n + 1);
        let (name, rest) = match line.find(['{', ' ']) {
            Some(i) => line.split_at(i),
            None => return Err(bad("no value")),
        };
        let mut labels = BTreeMap::new();
        let mut rest = rest;
        if let Some(r) = rest.strip_prefix('{') {
            let bytes = r.as_bytes();
            let mut i = 0;
            loop {
                match bytes.get(i) {
                    None => return Err(bad("unterminated labels")),
                    Some(b'}') => break,
                    Some(b',') => {
                        i += 1;
                        continue;
                    }
                    Some(_) => {}
                }
                let eq = r[i..].find("=\"").ok_or_else(|| bad("label without value"))? + i;
                let key = r[i..eq].to_string();
                let mut value = String::new();
                i = eq + 2;
                loop {
                    match bytes.get(i) {
                        None => return Err(bad("unterminated label value")),
                        Some(b'"') => break,
                        Some(b'\\') => {
                            match bytes.get(i + 1) {
                                Some(b'n') => value.push('\n'),
                                Some(b'\\') => value.push('\\'),
                                Some(b'"') => value.push('"'),
                                _ => return Err(bad("bad escape in a label value")),
                            }
                            i += 2;
                        }
                        Some(_) => {
                            let c = r[i..].chars().next().unwrap_or('\0');
                            value.push(c);
                            i += c.len_utf8();
                        }
                    }
                }
                labels.insert(key, value);
                i += 1;
            }
            rest = &r[i + 1..];
        }
        let value: f64 = rest
            .split_whitespace()
            .next()
            .ok_or_else(|| bad("no value"))?
            .parse()
            .map_err(|_| bad("value is not a number"))?;
        let host = labels.get("host").cloned().unwrap_or_default();
        hosts.entry(host).or_default().push(name, Series { labels, value })?;
    }
    Ok(hosts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::collect::Collector;
    use crate::live::export::{encode, to_classic_text, ExportOptions};
    use std::path::Path;
    use std::sync::Arc;

    fn fixture() -> Snapshot {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/live/x86-nvme-vm");
        Collector::new(&root, "vm1").read(1_000).expect("fixture reads")
    }

    /// The exporter's text read back gives the snapshot it was made of (up to the lossy parts
    /// named in the module doc), in both text formats.
    #[test]
    fn series_rebuild_the_snapshot() {
        let snap = fixture();
        let text = encode(Arc::new(snap.clone()), Arc::new(ExportOptions::default()));
        for t in [text.clone(), to_classic_text(&text)] {
            let hosts = parse_text(&t).unwrap();
            assert_eq!(hosts.keys().collect::<Vec<_>>(), ["vm1"]);
            let back = snapshot_from_series("vm1", 1_000, &hosts["vm1"]).unwrap();
            let mut want = snap.clone();
            want.boot_id.clear();
            let order = |s: &Snapshot| {
                let mut v: Vec<_> = s.irqs.iter().map(|i| i.label.clone()).collect();
                v.sort();
                v
            };
            assert_eq!(order(&back), order(&want));
            want.irqs.sort_by(|a, b| a.label.cmp(&b.label));
            let mut got = back.clone();
            got.irqs.sort_by(|a, b| a.label.cmp(&b.label));
            assert_eq!(got.irqs, want.irqs);
            assert_eq!(got.cpus, want.cpus);
            let (wt, gt) = (&want.topology, &got.topology);
            assert_eq!(gt.nodes, wt.nodes);
            assert_eq!(gt.smt, wt.smt);
            assert_eq!(gt.packages, wt.packages);
            assert_eq!(gt.clusters, wt.clusters);
            assert_eq!(gt.distances, wt.distances);
            // The rebuilt topology validates like a pushed one.
            crate::topology::Topology::new(&gt.to_spec("vm1")).unwrap();
        }
    }

    #[test]
    fn filters_and_series_bound_apply() {
        let snap = Arc::new(fixture());
        let nonzero: usize = snap
            .irqs
            .iter()
            .map(|i| i.counts.iter().filter(|c| c.1 > 0).count())
            .sum();
        assert!(nonzero > 10);
        let opts = ExportOptions {
            max_series: 10,
            ..ExportOptions::default()
        };
        let text = encode(snap.clone(), Arc::new(opts));
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("irqscope_interrupts_total{"))
                .count(),
            10
        );
        assert!(text.contains(&format!(
            "irqscope_export_series_dropped{{host=\"vm1\"}} {}",
            nonzero - 10
        )));
        let opts = ExportOptions {
            include: vec!["nvme".into()],
            exclude: vec!["q0".into()],
            ..ExportOptions::default()
        };
        let hosts = parse_text(&encode(snap.clone(), Arc::new(opts))).unwrap();
        let names: Vec<_> = hosts["vm1"]
            .irq_info
            .iter()
            .map(|s| s.get("name").to_string())
            .collect();
        assert!(!names.is_empty());
        assert!(
            names.iter().all(|n| n.contains("nvme") && !n.contains("q0")),
            "{names:?}"
        );
    }

    #[test]
    fn label_values_are_escaped_and_read_back() {
        let mut snap = fixture();
        snap.irqs[0].name = "a \"quoted\" \\ name\nx".into();
        let text = encode(Arc::new(snap.clone()), Arc::new(ExportOptions::default()));
        let hosts = parse_text(&text).unwrap();
        assert!(hosts["vm1"].irq_info.iter().any(|s| s.get("name") == snap.irqs[0].name));
        assert!(parse_text("x{host=\"a} 1").is_err());
        assert!(parse_text("x{host=\"a\"} nope").is_err());
    }
}
