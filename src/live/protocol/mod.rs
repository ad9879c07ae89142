//! The wire format shared by `irqscope-agent` and the server: the only place it is defined.
//!
//! A [`Snapshot`] carries raw counters (the server computes rates), the affinity files as the
//! kernel printed them, and the machine's topology as explicit cpulists ([`WireTopology`]).
//! `Topology` and `Outcome` are never sent: [`WireTopology::from_topology`] and
//! [`WireTopology::to_spec`] convert explicitly, and the server validates with
//! `Topology::new` like any other import. A change that an old peer would misread bumps
//! [`PROTOCOL_VERSION`]; every released version still reads (a snapshot or capture of an older
//! version is upgraded as it is deserialized, [`Snapshot::upgrade`]), other versions are refused
//! with a message.
//!
//! Versions:
//! * 1: the first release.
//! * 2: [`WireTopology`] carries the kernel release and the possible/present/online CPU sets as
//!   sysfs printed them, and lists every node up to the highest node id, a CPU-less last node as
//!   `""` (version 1 dropped trailing CPU-less nodes but kept their distance rows, so a machine
//!   with a memory-only last node gave `distances: 4 rows for 3 nodes`; reading a version-1
//!   snapshot restores those nodes). Push bodies may be gzip-compressed
//!   ([`encode_push_body`], [`decode_push_body`]). Counters stay raw and only non-zero ones are
//!   sent, as in version 1.
//! * 3: a push may be a [`Delta`] against the reading the server acknowledged last (sent with
//!   `Content-Type: `[`DELTA_CONTENT_TYPE`]): only the counters that moved, as increases, the
//!   IRQs that are new or whose other fields changed, in full, and the label order when IRQs
//!   came or went. The server rebuilds the full snapshot from the host's current one
//!   ([`Delta::apply`]) and ingests it as a full push; a base that is not the host's current
//!   reading is answered 409 with [`BASE_MISMATCH`], and the agent sends a full reading. Full
//!   snapshots are as in version 2, and version 1 and 2 pushes are still taken.
//! * 4: [`WireTopology`] carries the machine's architecture and the interrupt controller of its
//!   device MSIs (`arch`, `irqchip`), which the kernel's view of offline CPUs and the
//!   effective-CPU models depend on; [`WireTopology::to_spec`] keeps them. An agent stepping
//!   down for an older server leaves them out ([`ARCH_SINCE`]); otherwise full snapshots are
//!   as in version 2.

use super::limits::{HOST_NAME_BYTES_MAX, IRQS_MAX};
use super::parse::FIELD_BYTES_MAX;
use crate::topology::{parse_cpulist, Arch, Irqchip, Topology, TopologySpec, CPUS_MAX, NODES_MAX};
use serde::{Deserialize, Serialize};
use std::io::Read;

mod delta;
pub(crate) use delta::DeltaError;
pub use delta::{encode_delta_body, Delta, BASE_MISMATCH, DELTA_CONTENT_TYPE};

/// The version this build writes.
pub const PROTOCOL_VERSION: u32 = 4;
/// The first version whose topology carries `arch` and `irqchip`.
pub(crate) const ARCH_SINCE: u32 = 4;
/// The oldest version this build reads (and upgrades).
pub(crate) const PROTOCOL_VERSION_OLDEST: u32 = 1;
/// Longest kernel release accepted (`struct new_utsname` holds 64 bytes and a NUL).
pub(crate) const KERNEL_RELEASE_BYTES_MAX: usize = 64;
/// Longest CPU-set text accepted in a snapshot.
pub(crate) const CPU_SET_TEXT_BYTES_MAX: usize = crate::topology::cpulist::CPULIST_TEXT_BYTES_MAX;

/// The oldest version whose full snapshots are this build's once `arch` and `irqchip` (version
/// 4, [`ARCH_SINCE`]) are left out: version 3 added delta pushes and left the full snapshot as
/// version 2 wrote it, so a full snapshot stamped 2 reads the same on a version-2 server.
pub(crate) const FULL_SNAPSHOT_SAME_SINCE: u32 = 2;

/// What a server that refused a push for its version reads: `(oldest, newest)`, from the words
/// of [`version_supported`] ("this server reads A to B"), which every release since version 2
/// answers with (400, within the text of the refusal). `None` for any other refusal.
fn refused_for_version(text: &str) -> Option<(u32, u32)> {
    const WORDS: &str = "is not supported (this server reads ";
    let rest = &text[text.find(WORDS)? + WORDS.len()..];
    let (range, _) = rest.split_once(')')?;
    let (a, b) = range.split_once(" to ")?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// The version an agent stamps its full snapshots with for a server that answered `text`
/// refusing this build's: the newest the server reads, when that one still reads this build's
/// full snapshots as they are ([`FULL_SNAPSHOT_SAME_SINCE`]). `None` when no older stamp
/// would be taken.
pub fn version_for_older_server(text: &str) -> Option<u32> {
    let (oldest, newest) = refused_for_version(text)?;
    (oldest <= newest && (FULL_SNAPSHOT_SAME_SINCE..PROTOCOL_VERSION).contains(&newest)).then_some(newest)
}

fn version_supported(version: u32) -> Result<(), String> {
    if (PROTOCOL_VERSION_OLDEST..=PROTOCOL_VERSION).contains(&version) {
        Ok(())
    } else {
        Err(format!(
            "protocol version {version} is not supported (this server reads {PROTOCOL_VERSION_OLDEST} to {PROTOCOL_VERSION})"
        ))
    }
}

/// One reading of a host.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "AnySnapshot")]
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

/// A snapshot of any readable version, as it arrives; [`Snapshot`] deserializes through it and
/// [`Snapshot::upgrade`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnySnapshot {
    version: u32,
    host: String,
    taken_unix_ms: u64,
    #[serde(default)]
    boot_id: String,
    topology: WireTopology,
    cpus: Vec<u32>,
    irqs: Vec<WireIrq>,
}

impl TryFrom<AnySnapshot> for Snapshot {
    type Error = String;

    fn try_from(a: AnySnapshot) -> Result<Snapshot, String> {
        version_supported(a.version)?;
        let snap = Snapshot {
            version: a.version,
            host: a.host,
            taken_unix_ms: a.taken_unix_ms,
            boot_id: a.boot_id,
            topology: a.topology,
            cpus: a.cpus,
            irqs: a.irqs,
        };
        Ok(snap.upgrade())
    }
}

/// One `/proc/interrupts` row plus its `/proc/irq/N/` files.
#[derive(Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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

// Clone by hand so that `clone_from` reuses every string and vector: the agent keeps its last
// acknowledged reading with `clone_from` on each push.
impl Clone for Snapshot {
    fn clone(&self) -> Snapshot {
        Snapshot {
            version: self.version,
            host: self.host.clone(),
            taken_unix_ms: self.taken_unix_ms,
            boot_id: self.boot_id.clone(),
            topology: self.topology.clone(),
            cpus: self.cpus.clone(),
            irqs: self.irqs.clone(),
        }
    }

    fn clone_from(&mut self, from: &Snapshot) {
        self.version = from.version;
        self.host.clone_from(&from.host);
        self.taken_unix_ms = from.taken_unix_ms;
        self.boot_id.clone_from(&from.boot_id);
        if self.topology != from.topology {
            self.topology.clone_from(&from.topology);
        }
        self.cpus.clone_from(&from.cpus);
        self.irqs.clone_from(&from.irqs);
    }
}

impl Clone for WireIrq {
    fn clone(&self) -> WireIrq {
        WireIrq {
            label: self.label.clone(),
            chip: self.chip.clone(),
            hwirq: self.hwirq.clone(),
            name: self.name.clone(),
            counts: self.counts.clone(),
            affinity: self.affinity.clone(),
            effective: self.effective.clone(),
            node: self.node,
        }
    }

    fn clone_from(&mut self, from: &WireIrq) {
        self.label.clone_from(&from.label);
        self.chip.clone_from(&from.chip);
        self.hwirq.clone_from(&from.hwirq);
        self.name.clone_from(&from.name);
        self.counts.clone_from(&from.counts);
        self.affinity.clone_from(&from.affinity);
        self.effective.clone_from(&from.effective);
        self.node = from.node;
    }
}

impl WireIrq {
    /// The fields other than the counters are the same.
    fn same_but_counts(&self, other: &WireIrq) -> bool {
        self.label == other.label
            && self.chip == other.chip
            && self.hwirq == other.hwirq
            && self.name == other.name
            && self.affinity == other.affinity
            && self.effective == other.effective
            && self.node == other.node
    }
}

/// The machine as its kernel sees it: explicit kernel cpulists (the sysfs facts, nothing
/// derived), and the kernel release that decides how some of them are read (version 2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct WireTopology {
    /// `nodes[i]`: node i's possible CPUs; `""` for a node without CPUs (memory-only: CXL,
    /// HBM). Version 2 lists every node up to the highest node id.
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
    /// `/sys/devices/system/cpu/possible` as the kernel printed it (version 2; `present` and
    /// `online` above are then always given, from the files of the same name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub possible: Option<String>,
    /// `/proc/sys/kernel/osrelease` (`6.1.0-57-amd64`): which kernel generation placed these
    /// interrupts. Empty when unknown (version 1).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kernel_release: String,
    /// The instruction-set architecture (version 4); `None`: not known (older versions, a
    /// host whose interrupts name no controller), read as x86_64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<Arch>,
    /// The controller of the device MSIs, from the chip names of the host's interrupts
    /// (version 4); `None`: the architecture's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irqchip: Option<Irqchip>,
}

impl WireTopology {
    pub fn from_topology(t: &Topology) -> WireTopology {
        let s = t.to_spec();
        let mut nodes = s.nodes.unwrap_or_default();
        // `to_spec` leaves trailing CPU-less nodes to `nr_node_ids`; the wire lists them.
        if let Some(n) = s.nr_node_ids {
            if nodes.len() < n as usize {
                nodes.resize(n as usize, String::new());
            }
        }
        WireTopology {
            nodes,
            smt: s.smt,
            clusters: s.clusters,
            packages: s.packages,
            present: s.present,
            online: s.online,
            distances: s.distances,
            possible: None,
            kernel_release: String::new(),
            arch: None,
            irqchip: None,
        }
    }

    /// The topology file form, with the architecture and the controller; validate it with
    /// `Topology::new`.
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
            arch: self.arch,
            irqchip: self.irqchip,
            ..TopologySpec::default()
        }
    }
}

/// A capture file (`irqscope-agent capture`): snapshots of one host, oldest first. A capture
/// of an older version reads as the current one (its snapshots upgraded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "AnyCapture")]
pub struct Capture {
    pub version: u32,
    pub snapshots: Vec<Snapshot>,
    /// What a lab boot recorded of its probes (`irqscope lab run` adds it; an agent never
    /// writes it, and captures without it read as before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_calls: Option<ProbeCalls>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnyCapture {
    version: u32,
    snapshots: Vec<Snapshot>,
    #[serde(default)]
    probe_calls: Option<ProbeCalls>,
}

/// The spreading calls of a lab boot, in the order the kernel made them: every
/// `group_cpus_evenly()` with its caller and number of groups, each given to the device whose
/// probe made it (the probe that last started on the same task).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeCalls {
    /// How the calls were recorded (`kprobe_event`: boot-time kprobe events).
    pub(crate) mechanism: String,
    /// The machine's devices, in PCI order.
    pub(crate) devices: Vec<LabDevice>,
    pub(crate) calls: Vec<ProbeCall>,
}

/// A device of a lab machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabDevice {
    /// `n0`, `vb0`, `vn0`: the serial (NVMe) or name the lab gave it.
    pub(crate) name: String,
    /// `nvme`, `virtio-blk` or `virtio-net`.
    pub(crate) kind: String,
    /// PCI address (`0000:00:10.0`).
    pub(crate) pci: String,
    /// I/O queue pairs (NVMe `max_ioqpairs`), request queues (virtio-blk `num-queues`) or
    /// queue pairs (virtio-net).
    pub(crate) queues: u32,
}

/// One `group_cpus_evenly()` call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeCall {
    /// The device whose probe made the call (`None`: no probe had started on its task).
    pub device: Option<String>,
    /// The calling function (`irq_create_affinity_masks`, `blk_mq_map_queues`).
    pub caller: String,
    /// `numgrps`.
    pub(crate) groups: u32,
    /// The task that made it (`kworker/u8:2-57`).
    pub(crate) task: String,
}

impl TryFrom<AnyCapture> for Capture {
    type Error = String;

    fn try_from(a: AnyCapture) -> Result<Capture, String> {
        version_supported(a.version)?;
        Ok(Capture {
            version: PROTOCOL_VERSION,
            snapshots: a.snapshots,
            probe_calls: a.probe_calls,
        })
    }
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
    /// The same reading in the current version. Version 1 lost trailing CPU-less nodes from
    /// `nodes` while keeping their distance rows (the distance matrix has one row per node id):
    /// they come back as `""`. Before version 4 the topology had no architecture or controller:
    /// the controller the interrupts' chips name, and its architecture (else the kernel
    /// release's), fill them in, as the agent of version 4 does.
    pub(crate) fn upgrade(mut self) -> Snapshot {
        if self.version < ARCH_SINCE && self.topology.arch.is_none() && self.topology.irqchip.is_none() {
            let irqchip = super::devices::machine_irqchip(self.irqs.iter().map(|i| i.chip.as_str()));
            self.topology.irqchip = irqchip;
            self.topology.arch = irqchip
                .map(Irqchip::arch)
                .or_else(|| super::devices::release_arch(&self.topology.kernel_release));
        }
        if self.version == 1 {
            let t = &mut self.topology;
            if let Some(d) = &t.distances {
                let square = d.iter().all(|row| row.len() == d.len());
                if square && d.len() > t.nodes.len() && d.len() <= NODES_MAX as usize {
                    t.nodes.resize(d.len(), String::new());
                }
            }
        }
        self.version = PROTOCOL_VERSION;
        self
    }

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
        let release = &self.topology.kernel_release;
        if release.len() > KERNEL_RELEASE_BYTES_MAX || !release.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(format!(
                "kernel_release must be at most {KERNEL_RELEASE_BYTES_MAX} printable ASCII bytes without spaces"
            ));
        }
        if let Some(possible) = &self.topology.possible {
            if possible.len() > CPU_SET_TEXT_BYTES_MAX {
                return Err(format!("possible is longer than {CPU_SET_TEXT_BYTES_MAX} bytes"));
            }
            parse_cpulist(possible, CPUS_MAX).map_err(|e| format!("possible: {e}"))?;
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

/// Why a push body was refused, with the HTTP status it deserves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PushBodyError {
    /// A `Content-Encoding` other than identity or gzip: 415.
    #[error("Content-Encoding {0:?} is not supported (send identity or gzip)")]
    Encoding(String),
    /// More than the limit once decompressed: 413.
    #[error("the snapshot is larger than {0} bytes once decompressed")]
    TooLarge(usize),
    /// Not gzip, not JSON, or not a snapshot of a readable version: 400.
    #[error("{0}")]
    Bad(String),
}

impl PushBodyError {
    #[cfg(test)]
    pub(crate) fn status(&self) -> u16 {
        match self {
            PushBodyError::Encoding(_) => 415,
            PushBodyError::TooLarge(_) => 413,
            PushBodyError::Bad(_) => 400,
        }
    }
}

/// What a push body holds: a whole [`Snapshot`], or a [`Delta`] ([`DELTA_CONTENT_TYPE`]);
/// `NOUN` names it in the message about bad JSON.
pub(crate) trait PushBody: serde::de::DeserializeOwned {
    const NOUN: &'static str;
}

impl PushBody for Snapshot {
    const NOUN: &'static str = "snapshot";
}

impl PushBody for Delta {
    const NOUN: &'static str = "delta";
}

/// A push body as the agent sends it: JSON, gzip-compressed when `content_encoding` says so,
/// at most `bytes_max` bytes after decompression (a gzip bomb stops there). Older protocol
/// versions are upgraded. Limits and the topology are checked by the store, as for any snapshot.
pub(crate) fn decode_push_body<T: PushBody>(
    content_encoding: Option<&str>,
    body: &[u8],
    bytes_max: usize,
) -> Result<T, PushBodyError> {
    let json = push_json(content_encoding, body, bytes_max)?;
    serde_json::from_slice(&json).map_err(|e| PushBodyError::Bad(format!("bad {} JSON: {e}", T::NOUN)))
}

/// The JSON of a push body: the body itself, or its gzip stream inflated, within `bytes_max`.
fn push_json<'a>(
    content_encoding: Option<&str>,
    body: &'a [u8],
    bytes_max: usize,
) -> Result<std::borrow::Cow<'a, [u8]>, PushBodyError> {
    match content_encoding.map(str::trim) {
        None | Some("") | Some("identity") => {
            if body.len() > bytes_max {
                return Err(PushBodyError::TooLarge(bytes_max));
            }
            Ok(body.into())
        }
        Some(e) if e.eq_ignore_ascii_case("gzip") || e.eq_ignore_ascii_case("x-gzip") => {
            let mut json = Vec::with_capacity(body.len().saturating_mul(4).min(bytes_max));
            flate2::read::GzDecoder::new(body)
                .take(bytes_max as u64 + 1)
                .read_to_end(&mut json)
                .map_err(|e| PushBodyError::Bad(format!("bad gzip body: {e}")))?;
            if json.len() > bytes_max {
                return Err(PushBodyError::TooLarge(bytes_max));
            }
            Ok(json.into())
        }
        Some(other) => Err(PushBodyError::Encoding(super::parse::short(other))),
    }
}

/// Deflate level of push bodies (zlib-rs; see [`encode_push_body`]).
pub const PUSH_GZIP_LEVEL: i32 = 1;

/// Encode a snapshot as a gzip push body into `out`, through `json` (both cleared first;
/// reuse them between readings). The gzip stream comes from zlib-rs at level 1 (zlib-ng's
/// `deflate_quick`), in one call into a buffer sized by the deflate bound: on a large host's
/// counters it is several times faster than miniz at level 1 for a body a few percent larger.
/// Any gzip decoder reads it; the permalink codec keeps its own encoder and bytes.
pub fn encode_push_body(snap: &Snapshot, json: &mut Vec<u8>, out: &mut Vec<u8>) -> std::io::Result<()> {
    json.clear();
    serde_json::to_writer(&mut *json, snap)?;
    gzip_into(json, PUSH_GZIP_LEVEL, out)
}

/// `bytes` as one gzip member at deflate `level` into `out` (cleared first, capacity kept).
pub fn gzip_into(bytes: &[u8], level: i32, out: &mut Vec<u8>) -> std::io::Result<()> {
    // The zlib bound plus the gzip header and trailer's extra 12 bytes.
    let bound = zlib_rs::compress_bound(bytes.len()) + 32;
    out.clear();
    out.resize(bound, 0);
    let config = zlib_rs::DeflateConfig {
        level,
        // 15 + 16: a 32 KiB window with a gzip header and CRC-32 trailer.
        window_bits: 31,
        ..zlib_rs::DeflateConfig::default()
    };
    let (written, rc) = zlib_rs::compress_slice(out, bytes, config);
    let len = written.len();
    if rc != zlib_rs::ReturnCode::Ok {
        out.clear();
        return Err(std::io::Error::other(format!("gzip: {rc:?}")));
    }
    out.truncate(len);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The topology file form keeps the architecture and the controller (protocol 4), and a
    /// snapshot of an older protocol gets them from its chip names as it is read.
    #[test]
    fn the_wire_keeps_the_architecture() {
        let wire = WireTopology {
            nodes: vec!["0-3".into()],
            arch: Some(Arch::Arm64),
            irqchip: Some(Irqchip::GicV2m),
            ..WireTopology::default()
        };
        let spec = wire.to_spec("h");
        assert_eq!((spec.arch, spec.irqchip), (Some(Arch::Arm64), Some(Irqchip::GicV2m)));
        let t = Topology::new(&spec).unwrap();
        assert_eq!((t.arch(), t.irqchip()), (Arch::Arm64, Irqchip::GicV2m));
        let old = r#"{"version":3,"host":"h","taken_unix_ms":1,"boot_id":"","topology":{"nodes":["0-1"],"kernel_release":"6.12.117+deb12-cloud-arm64"},"cpus":[0,1],"irqs":[{"label":"18","chip":"ITS-PCI-MSIX-0000:00:10.0","hwirq":"0","name":"nvme0q0","counts":[]}]}"#;
        let s: Snapshot = serde_json::from_str::<Snapshot>(old).unwrap().upgrade();
        assert_eq!(
            (s.topology.arch, s.topology.irqchip),
            (Some(Arch::Arm64), Some(Irqchip::GicIts))
        );
        let none = old.replace("ITS-PCI-MSIX-0000:00:10.0", "something");
        let s: Snapshot = serde_json::from_str::<Snapshot>(&none).unwrap().upgrade();
        assert_eq!(
            (s.topology.arch, s.topology.irqchip),
            (Some(Arch::Arm64), None),
            "the release tells"
        );
    }

    #[test]
    fn an_agent_steps_down_only_for_a_server_that_reads_its_full_snapshots() {
        // The words a version-2 server answered a version-3 push with (its 400 body).
        let v2 = "bad snapshot: protocol version 3 is not supported (this server reads 1 to 2) at line 1 column 13";
        assert_eq!(refused_for_version(v2), Some((1, 2)));
        assert_eq!(version_for_older_server(v2), Some(2));
        // This build's own refusal names this build's range: nothing older to step down to.
        let own = version_supported(PROTOCOL_VERSION + 1).unwrap_err();
        assert_eq!(
            refused_for_version(&own),
            Some((PROTOCOL_VERSION_OLDEST, PROTOCOL_VERSION))
        );
        assert_eq!(version_for_older_server(&own), None);
        // A version-1 server would need another full snapshot (no CPU-less last nodes).
        assert_eq!(
            version_for_older_server("protocol version 3 is not supported (this server reads 1 to 1)"),
            None
        );
        for other in [
            "",
            "host table full",
            "protocol version 3 is not supported (this server reads 1 to x)",
            "protocol version 3 is not supported (this server reads 2 to 1)",
            "protocol version 3 is not supported (this server reads 1 to 2",
        ] {
            assert_eq!(version_for_older_server(other), None, "{other:?}");
        }
    }

    fn v1(nodes: &[&str], distances: Option<Vec<Vec<u32>>>) -> String {
        serde_json::json!({
            "version": 1, "host": "h", "taken_unix_ms": 5,
            "topology": { "nodes": nodes, "distances": distances },
            "cpus": [0, 1], "irqs": [{ "label": "24", "counts": [[1, 9]] }],
        })
        .to_string()
    }

    #[test]
    fn version_1_reads_as_2_with_its_cpu_less_last_nodes_back() {
        let d = vec![vec![10, 20, 30], vec![20, 10, 20], vec![30, 20, 10]];
        let s: Snapshot = serde_json::from_str(&v1(&["0", "1"], Some(d.clone()))).unwrap();
        assert_eq!(s.version, PROTOCOL_VERSION);
        assert_eq!(s.topology.nodes, ["0", "1", ""]);
        let topo = Topology::new(&s.topology.to_spec("h")).unwrap();
        assert_eq!(topo.nr_node_ids(), 3);
        // Nothing to restore without distances, and a matrix that is not square is left for
        // validation to refuse.
        let s: Snapshot = serde_json::from_str(&v1(&["0-1"], None)).unwrap();
        assert_eq!(s.topology.nodes, ["0-1"]);
        let s: Snapshot =
            serde_json::from_str(&v1(&["0", "1"], Some(vec![vec![10, 20], vec![20, 10], vec![1]]))).unwrap();
        assert_eq!(s.topology.nodes.len(), 2);
        // Written again, it is a version-2 snapshot that reads back the same.
        let again: Snapshot = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(again, s);
    }

    #[test]
    fn unknown_versions_and_fields_are_refused() {
        for v in [0, PROTOCOL_VERSION + 1] {
            let text = v1(&["0-1"], None).replace("\"version\":1", &format!("\"version\":{v}"));
            let e = serde_json::from_str::<Snapshot>(&text).unwrap_err().to_string();
            assert!(e.contains(&format!("protocol version {v} is not supported")), "{e}");
            let cap = format!("{{\"version\":{v},\"snapshots\":[]}}");
            assert!(serde_json::from_str::<Capture>(&cap).is_err());
        }
        let text = v1(&["0-1"], None).replace("\"host\"", "\"extra\":1,\"host\"");
        assert!(serde_json::from_str::<Snapshot>(&text)
            .unwrap_err()
            .to_string()
            .contains("unknown field"));
        let cap: Capture =
            serde_json::from_str(&format!("{{\"version\":1,\"snapshots\":[{}]}}", v1(&["0-1"], None))).unwrap();
        assert_eq!(
            (cap.version, cap.snapshots[0].version),
            (PROTOCOL_VERSION, PROTOCOL_VERSION)
        );
    }

    #[test]
    fn push_bodies_decode_plain_and_gzip_within_the_bound() {
        let s: Snapshot = serde_json::from_str(&v1(&["0-1"], None)).unwrap();
        let (mut json, mut gz) = (Vec::new(), Vec::new());
        encode_push_body(&s, &mut json, &mut gz).unwrap();
        assert!(gz.starts_with(&[0x1f, 0x8b]));
        let decode = |encoding, body: &[u8], bytes_max| decode_push_body::<Snapshot>(encoding, body, bytes_max);
        let status = |encoding, body: &[u8], bytes_max| decode(encoding, body, bytes_max).unwrap_err().status();
        assert_eq!(decode(Some("gzip"), &gz, 1 << 20).unwrap(), s);
        assert_eq!(decode(None, &json, 1 << 20).unwrap(), s);
        assert_eq!(decode(Some("identity"), &json, 1 << 20).unwrap(), s);
        // The bound applies after decompression, to the byte.
        assert_eq!(
            decode(Some("gzip"), &gz, json.len() - 1),
            Err(PushBodyError::TooLarge(json.len() - 1))
        );
        assert!(decode(Some("gzip"), &gz, json.len()).is_ok());
        assert_eq!(status(None, &json, json.len() - 1), 413);
        assert_eq!(status(Some("br"), &json, 1 << 20), 415);
        assert_eq!(status(Some("gzip"), &json, 1 << 20), 400);
        assert_eq!(status(Some("gzip"), &gz[..gz.len() / 2], 1 << 20), 400);
    }

    pub(super) fn irq(label: &str, counts: &[(u32, u64)], affinity: &str) -> WireIrq {
        WireIrq {
            label: label.into(),
            chip: "PCI-MSIX".into(),
            hwirq: "0-edge".into(),
            name: format!("q{label}"),
            counts: counts.to_vec(),
            affinity: Some(affinity.into()),
            effective: Some(affinity.into()),
            node: Some(0),
        }
    }

    pub(super) fn reading(t: u64, irqs: Vec<WireIrq>) -> Snapshot {
        let mut s: Snapshot = serde_json::from_str(&v1(&["0-3"], None)).unwrap();
        s.cpus = vec![0, 1, 2, 3];
        s.taken_unix_ms = t;
        s.boot_id = "b1".into();
        s.irqs = irqs;
        s
    }

    /// `cur` through a delta against `base`, serialized and read back as the server does.
    #[test]
    fn clone_from_gives_an_equal_snapshot() {
        let a = reading(10, vec![irq("24", &[(1, 5)], "1"), irq("25", &[], "2")]);
        let mut b = reading(3, vec![irq("7", &[(0, 1), (1, 2)], "0-1")]);
        b.clone_from(&a);
        assert_eq!(b, a);
        let mut c = a.clone();
        c.clone_from(&reading(4, vec![]));
        assert_eq!(c, reading(4, vec![]));
    }

    #[test]
    fn kernel_release_and_cpu_sets_are_checked() {
        let mut s: Snapshot = serde_json::from_str(&v1(&["0-1"], None)).unwrap();
        s.topology.kernel_release = "6.12.107+deb12-cloud-amd64".into();
        s.topology.possible = Some("0-1".into());
        s.check().unwrap();
        s.topology.kernel_release = "6.1 with space".into();
        assert!(s.check().unwrap_err().contains("kernel_release"));
        s.topology.kernel_release = "x".repeat(KERNEL_RELEASE_BYTES_MAX + 1);
        assert!(s.check().is_err());
        s.topology.kernel_release.clear();
        s.topology.possible = Some("0-x".into());
        assert!(s.check().unwrap_err().starts_with("possible"));
    }
}
