//! The wire format shared by `irqscope-agent` and the server: the only place it is defined.
//!
//! A [`Snapshot`] carries raw counters (the server computes rates), the affinity files as the
//! kernel printed them, and the machine's topology as explicit cpulists ([`WireTopology`]).
//! `Topology` and `Outcome` are never sent: [`WireTopology::from_topology`] and
//! [`WireTopology::to_spec`] convert explicitly, and the server validates with
//! `Topology::new` like any other import. A change that an old peer would misread bumps
//! [`PROTOCOL_VERSION`]; the server refuses other versions with a message.

use super::limits::{HOST_NAME_BYTES_MAX, IRQS_MAX};
use super::parse::FIELD_BYTES_MAX;
use crate::topology::{Topology, TopologySpec, CPUS_MAX, NODES_MAX};
use serde::{Deserialize, Serialize};

/// The version this build writes and accepts.
pub const PROTOCOL_VERSION: u32 = 1;

/// One reading of a host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    pub version: u32,
    /// The host name the agent reports (`[A-Za-z0-9._-]`, checked by [`valid_host_name`]).
    pub host: String,
    /// The agent's wall clock when it read the counters, in milliseconds since the epoch.
    pub taken_unix_ms: u64,
    /// `/proc/sys/kernel/random/boot_id`: a new value means the counters restarted.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub boot_id: String,
    pub topology: WireTopology,
    /// The CPU of each `/proc/interrupts` column (the online CPUs when it was read).
    pub cpus: Vec<u32>,
    pub irqs: Vec<WireIrq>,
}

/// One `/proc/interrupts` row plus its `/proc/irq/N/` files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireIrq {
    /// `24`, `NMI`, `IPI0`.
    pub label: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub chip: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hwirq: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Non-zero raw counters as `[cpu, count]`, ordered by CPU.
    #[serde(default)]
    pub counts: Vec<(u32, u64)>,
    /// `smp_affinity_list` (requested affinity), as the kernel printed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<String>,
    /// `effective_affinity_list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective: Option<String>,
    /// `node` (absent for -1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
}

/// A topology as explicit kernel cpulists (the sysfs facts, nothing derived).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct WireTopology {
    /// `nodes[i]`: node i's possible CPUs.
    pub nodes: Vec<String>,
    #[serde(default)]
    pub smt: Vec<String>,
    #[serde(default)]
    pub clusters: Vec<String>,
    #[serde(default)]
    pub packages: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub present: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub online: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distances: Option<Vec<Vec<u32>>>,
}

impl WireTopology {
    pub fn from_topology(t: &Topology) -> WireTopology {
        let s = t.to_spec();
        WireTopology {
            nodes: s.nodes.unwrap_or_default(),
            smt: s.smt,
            clusters: s.clusters,
            packages: s.packages,
            present: s.present,
            online: s.online,
            distances: s.distances,
        }
    }

    /// The topology file form; validate it with `Topology::new`.
    pub fn to_spec(&self, host: &str) -> TopologySpec {
        TopologySpec {
            name: host.to_string(),
            source: "irqscope-agent snapshot".into(),
            nodes: Some(self.nodes.clone()),
            smt: self.smt.clone(),
            clusters: self.clusters.clone(),
            packages: self.packages.clone(),
            present: self.present.clone(),
            online: self.online.clone(),
            distances: self.distances.clone(),
            ..TopologySpec::default()
        }
    }
}

/// A capture file (`irqscope-agent capture`): snapshots of one host, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capture {
    pub version: u32,
    pub snapshots: Vec<Snapshot>,
}

/// Host names: 1 to [`HOST_NAME_BYTES_MAX`] bytes of `[A-Za-z0-9._-]`, not starting with `.`
/// or `_` (the server keeps `/live/_/…` for its actions, so no host name is ever a route).
pub fn valid_host_name(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= HOST_NAME_BYTES_MAX
        && !host.starts_with('.')
        && !host.starts_with('_')
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

impl Snapshot {
    /// Check the version and every size limit; the topology is validated separately.
    pub fn check(&self) -> Result<(), String> {
        if self.version != PROTOCOL_VERSION {
            return Err(format!(
                "protocol version {} is not supported (this server speaks {PROTOCOL_VERSION})",
                self.version
            ));
        }
        if !valid_host_name(&self.host) {
            return Err(format!(
                "host name must be 1 to {HOST_NAME_BYTES_MAX} bytes of A-Z a-z 0-9 . _ -, not starting with . or _"
            ));
        }
        if self.cpus.len() > CPUS_MAX as usize || self.cpus.iter().any(|&c| c >= CPUS_MAX) {
            return Err(format!("more than {CPUS_MAX} CPUs, or a CPU id beyond it"));
        }
        if self.cpus.windows(2).any(|w| w[0] >= w[1]) {
            return Err("cpus must be strictly increasing".into());
        }
        if self.irqs.len() > IRQS_MAX {
            return Err(format!("{} IRQs; at most {IRQS_MAX}", self.irqs.len()));
        }
        if self.topology.nodes.len() > NODES_MAX as usize {
            return Err(format!("more than {NODES_MAX} nodes"));
        }
        if self.boot_id.len() > 64 {
            return Err("boot_id is longer than 64 bytes".into());
        }
        for irq in &self.irqs {
            for (what, v) in [
                ("label", &irq.label),
                ("chip", &irq.chip),
                ("hwirq", &irq.hwirq),
                ("name", &irq.name),
            ] {
                if v.len() > FIELD_BYTES_MAX {
                    return Err(format!(
                        "IRQ {:?}: {what} is longer than {FIELD_BYTES_MAX} bytes",
                        super::parse::short(&irq.label)
                    ));
                }
            }
            if irq.label.is_empty() {
                return Err("an IRQ has an empty label".into());
            }
            if irq.counts.len() > self.cpus.len() || irq.counts.windows(2).any(|w| w[0].0 >= w[1].0) {
                return Err(format!(
                    "IRQ {}: counts must be one per CPU column, ordered by CPU",
                    super::parse::short(&irq.label)
                ));
            }
            if irq.counts.iter().any(|(c, _)| self.cpus.binary_search(c).is_err()) {
                return Err(format!(
                    "IRQ {}: a count for a CPU that is not a column",
                    super::parse::short(&irq.label)
                ));
            }
            for v in [&irq.affinity, &irq.effective].into_iter().flatten() {
                if v.len() > FIELD_BYTES_MAX * 16 {
                    return Err(format!(
                        "IRQ {}: affinity list too long",
                        super::parse::short(&irq.label)
                    ));
                }
            }
        }
        Ok(())
    }
}
