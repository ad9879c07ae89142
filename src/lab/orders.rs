//! The probe orders of several boots of one machine (`lab run --boots K`, `PREFIX.orders.json`)
//! and their check against the ordering model (`lab check PREFIX.orders.json`): the orders
//! seen with how often each came, and whether the model allows each
//! ([`crate::analysis::call_order::allows`]).
//!
//! A boot's calls ([`ProbeCall`]) become the model's: `irq_create_affinity_masks()` spreads an
//! interrupt set; `blk_mq_map_queues()` maps an NVMe controller's admin tag set when it comes
//! before the controller's I/O spread, else a blk-mq map. The machine's devices become
//! scenario devices the way their drivers ask for vectors: NVMe one admin vector and
//! `min(queues, CPUs)` managed ones; virtio-blk one configuration vector and `min(queues,
//! CPUs)` managed ones; virtio-net a vector per queue and one for its configuration, none
//! managed (`virtnet_find_vqs()` passes no affinity descriptor).

use crate::analysis::call_order::{self, Call, CallKind};
use crate::live::protocol::{LabDevice, ProbeCall, ProbeCalls, WireTopology};
use crate::render::columns::wrap;
use crate::scenario::{BlkMqSource, Device, Driver};
use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// The `format` of an orders file.
pub(crate) const FORMAT: &str = "irqscope-lab-orders";
/// Largest orders file read.
const ORDERS_BYTES_MAX: u64 = 16 << 20;

/// Where the boots come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    /// `uname -r` of the guest.
    pub(crate) kernel_release: String,
    /// The Debian package booted, if one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    pub(crate) kernel_command_line: String,
    /// The QEMU command line that boots the machine again (`PREFIX.cmd`, from the kept
    /// initramfs and disks).
    pub(crate) qemu_command: String,
    /// The day of the run, UTC (`2026-12-06`).
    pub(crate) date: String,
}

/// Several boots of one machine: each boot's spreading calls, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrdersCapture {
    pub(crate) format: String,
    pub(crate) version: u32,
    pub origin: Origin,
    /// The machine as the guest saw it (the first capture's).
    pub(crate) topology: WireTopology,
    pub devices: Vec<LabDevice>,
    /// How the calls were recorded (`kprobe_event`).
    pub mechanism: String,
    pub boots: Vec<Vec<ProbeCall>>,
}

impl OrdersCapture {
    pub(crate) fn new(
        origin: Origin,
        topology: WireTopology,
        devices: Vec<LabDevice>,
        observed: &[ProbeCalls],
    ) -> Self {
        OrdersCapture {
            format: FORMAT.to_string(),
            version: 1,
            origin,
            topology,
            devices,
            mechanism: super::calls::MECHANISM.to_string(),
            boots: observed.iter().map(|o| o.calls.clone()).collect(),
        }
    }

    pub fn write(&self, path: &Path) -> Result<(), String> {
        let json = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(path, json + "\n").map_err(|e| format!("{}: {e}", path.display()))
    }

    /// An orders file's text, checked; `None` when it is not one (another kind of capture).
    pub fn parse(text: &str) -> Option<Result<OrdersCapture, String>> {
        let value: serde_json::Value = serde_json::from_str(text).ok()?;
        if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
            return None;
        }
        Some(serde_json::from_value(value).map_err(|e| format!("not an orders file: {e}")))
    }
}

/// An orders file read from disk.
pub fn read(path: &Path) -> Result<Option<OrdersCapture>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if meta.len() > ORDERS_BYTES_MAX {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    OrdersCapture::parse(&text).transpose()
}

/// The scenario device of a lab device, as its driver asks for vectors on `cpus` CPUs.
pub(crate) fn scenario_device(d: &LabDevice, cpus: u32) -> Result<Device, String> {
    let queues = d.queues.min(cpus);
    let (driver, vectors, managed) = match d.kind.as_str() {
        "nvme" => (Driver::Nvme, 1 + queues, true),
        "virtio-blk" => (Driver::Generic, 1 + queues, true),
        "virtio-net" => (Driver::Generic, 1 + 2 * d.queues, false),
        other => return Err(format!("device {}: unknown kind {other:?}", d.name)),
    };
    Ok(Device {
        name: d.name.clone(),
        vectors,
        pre_vectors: u32::from(managed),
        post_vectors: 0,
        sets: None,
        managed_affinity: managed,
        node: None,
        hv_pci: false,
        blk_mq: managed.then_some(BlkMqSource::Irq),
        blk_mq_queues: None,
        driver,
    })
}

/// Every lab device as a scenario device on `topology`'s possible CPUs.
fn scenario_devices(devices: &[LabDevice], topology: &Topology) -> Result<Vec<Device>, String> {
    let cpus = topology.possible().weight();
    devices.iter().map(|d| scenario_device(d, cpus)).collect()
}

/// A boot's calls as the model's, or why one cannot be.
pub(crate) fn model_view(devices: &[LabDevice], calls: &[ProbeCall]) -> Result<Vec<Call>, String> {
    let mut spread: Vec<&str> = Vec::new();
    let mut out = Vec::with_capacity(calls.len());
    for (k, c) in calls.iter().enumerate() {
        let Some(name) = c.device.as_deref() else {
            return Err(format!(
                "call {} ({}, {} groups, task {}) came from no device's probe",
                k + 1,
                c.caller,
                c.groups,
                c.task
            ));
        };
        let nvme = devices.iter().any(|d| d.name == name && d.kind == "nvme");
        let kind = match c.caller.as_str() {
            "irq_create_affinity_masks" => {
                spread.push(name);
                CallKind::Affinity
            }
            "blk_mq_map_queues" if nvme && !spread.contains(&name) => CallKind::AdminTagSet,
            "blk_mq_map_queues" => CallKind::BlkMqMap,
            other => {
                return Err(format!(
                    "call {} of {name} from {other}, a caller the model has not",
                    k + 1
                ))
            }
        };
        out.push(Call {
            device: name.to_string(),
            kind,
            groups: c.groups,
        });
    }
    Ok(out)
}

/// One order seen: its calls, the boots that made it, and the model's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub calls: Vec<Call>,
    pub boots: usize,
    pub verdict: Result<call_order::Allowed, String>,
}

/// The orders of an orders file, most frequent first, each with the model's verdict.
pub fn seen_orders(o: &OrdersCapture) -> Result<Vec<Seen>, String> {
    let topology = Arc::new(Topology::new(&o.topology.to_spec("lab")).map_err(|e| format!("topology: {e}"))?);
    let devices = scenario_devices(&o.devices, &topology)?;
    let mut count: BTreeMap<Vec<String>, (usize, usize)> = BTreeMap::new();
    let mut views = Vec::new();
    for (b, calls) in o.boots.iter().enumerate() {
        let view = model_view(&o.devices, calls).map_err(|e| format!("boot {}: {e}", b + 1))?;
        let key: Vec<String> = view.iter().map(Call::to_string).collect();
        let entry = count.entry(key).or_insert((0, views.len()));
        if entry.0 == 0 {
            views.push(view);
        }
        entry.0 += 1;
    }
    let mut seen: Vec<Seen> = count
        .into_values()
        .map(|(boots, at)| Seen {
            verdict: call_order::allows(&topology, &devices, &views[at]),
            calls: views[at].clone(),
            boots,
        })
        .collect();
    seen.sort_by_key(|s| std::cmp::Reverse(s.boots));
    Ok(seen)
}

/// `lab check` of an orders file: the origin, each order seen with its frequency and verdict,
/// and a last line; passed when every order is allowed.
pub fn check(o: &OrdersCapture) -> Result<(String, bool), String> {
    let seen = seen_orders(o)?;
    let mut out = String::new();
    let origin = &o.origin;
    out.push_str(&wrap(
        &format!(
            "orders: {} boots of {}{} on {} ({}), calls from {}",
            o.boots.len(),
            origin.kernel_release,
            origin.package.as_deref().map(|p| format!(" ({p})")).unwrap_or_default(),
            origin.date,
            device_list(&o.devices),
            o.mechanism
        ),
        "",
        "  ",
    ));
    for (k, s) in seen.iter().enumerate() {
        let verdict = match &s.verdict {
            Ok(a) => format!("allowed ({}: {})", a.probe.name(), a.order.join(",")),
            Err(why) => format!("FORBIDDEN: {why}"),
        };
        out.push_str(&wrap(
            &format!("order {}: {} of {} boots, {verdict}", k + 1, s.boots, o.boots.len()),
            "",
            "  ",
        ));
        let calls: Vec<String> = s.calls.iter().map(Call::to_string).collect();
        out.push_str(&wrap(&calls.join(" "), "  ", "  "));
    }
    let forbidden = seen.iter().filter(|s| s.verdict.is_err()).count();
    let passed = forbidden == 0 && !seen.is_empty();
    out.push_str(&match (seen.len(), forbidden) {
        (0, _) => "no boot recorded a call: nothing to check\n".to_string(),
        (n, 0) => format!("{n} orders seen, all allowed\n"),
        (n, f) => format!("{n} orders seen, {f} forbidden by the model\n"),
    });
    Ok((out, passed))
}

/// `lab check` of one capture that recorded its boot's calls (`probe_calls`): the order as
/// the model reads it, and whether the model allows it, on the capture's machine
/// (`topology`); `true` when it does.
pub(crate) fn check_one(topology: &Arc<Topology>, pc: &ProbeCalls) -> Result<(String, bool), String> {
    let devices = scenario_devices(&pc.devices, topology)?;
    let view = model_view(&pc.devices, &pc.calls).map_err(|e| format!("probe_calls: {e}"))?;
    let calls: Vec<String> = view.iter().map(Call::to_string).collect();
    let (verdict, allowed) = match call_order::allows(topology, &devices, &view) {
        Ok(a) => (format!("allowed ({}: {})", a.probe.name(), a.order.join(",")), true),
        Err(why) => (format!("not allowed by the model: {why}"), false),
    };
    let mut out = wrap(
        &format!(
            "probe order: {} calls from {} ({}), {verdict}",
            calls.len(),
            pc.mechanism,
            device_list(&pc.devices)
        ),
        "",
        "  ",
    );
    if !calls.is_empty() {
        out.push_str(&wrap(&calls.join(" "), "  ", "  "));
    }
    Ok((out, allowed))
}

/// `n0 nvme(3), vb0 virtio-blk(2)`.
fn device_list(devices: &[LabDevice]) -> String {
    devices
        .iter()
        .map(|d| format!("{} {}({})", d.name, d.kind, d.queues))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The day of a time as `YYYY-MM-DD` (UTC), from days since the epoch (the civil calendar).
pub(crate) fn utc_date(unix_seconds: u64) -> String {
    let days = (unix_seconds / 86_400) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_date(951_782_400), "2000-02-29");
        assert_eq!(utc_date(1_796_515_200), "2026-12-06");
    }
}
