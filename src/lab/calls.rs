//! The spreading calls of a lab boot: every `group_cpus_evenly()` the kernel made while the
//! devices probed, with its caller and number of groups, given to the device whose probe made
//! it.
//!
//! How they are recorded: kprobe events defined on the kernel command line (`kprobe_event=`,
//! [`KERNEL_ARGS`]), which the kernel registers and enables before any driver initcall, so the
//! built-in NVMe driver's first probe is already seen. Debian's 6.12 and 7.2 x86 kernels have
//! `CONFIG_KPROBE_EVENTS=y`; the events need no boot config (`CONFIG_BOOT_CONFIG` is off in
//! 6.12 cloud) and no debug information. `group_cpus_evenly()` itself cannot be probed there
//! (lib/ is built `notrace`: "Could not probe notrace function group_cpus_evenly"), so the
//! events sit on its two callers, which call it once per spread:
//!
//! - `lab/irq` at `irq_create_affinity_masks(nvecs, affd)`: the groups are `nvecs` less the
//!   pre and post vectors (`affd`'s first two words); a call with none spreads nothing. A
//!   driver with several interrupt sets (none of the lab's devices) shows as one call of
//!   their sum;
//! - `lab/blkmq` at `blk_mq_map_queues(qmap)`: the groups are `qmap->nr_queues` (the word
//!   after the map pointer);
//! - `lab/pci` at `pci_device_probe()` and `lab/virtio` at `virtio_dev_probe()`: the device
//!   name, read through `struct device`'s first member (its kobject, whose first member is the
//!   name pointer).
//!
//! A probe runs on one task from its start to its end (the async probe's worker, or the
//! writer of `bind`), so each call belongs to the device whose probe last started on the same
//! task. The guest's init prints the trace on the console between `@trace PHASE begin` and
//! `@trace PHASE end N`, each line as `@t LINE`, with `@t virtio virtioN PCI` lines first that
//! say which PCI device each virtio device sits on.

use super::qemu::SlotDevice;
use crate::live::protocol::{LabDevice, ProbeCall, ProbeCalls};
use std::collections::BTreeMap;

/// The kernel command-line words that record the calls on an x86-64 guest.
pub(crate) const KERNEL_ARGS: [&str; 2] = [
    "kprobe_event=p:lab/irq,irq_create_affinity_masks,nvecs=%di:u32,pre=+0(%si):u32,post=+4(%si):u32;\
     p:lab/blkmq,blk_mq_map_queues,groups=+8(%di):u32;\
     p:lab/pci,pci_device_probe,dev=+0(+0(%di)):string;\
     p:lab/virtio,virtio_dev_probe,dev=+0(+0(%di)):string",
    // One clock for every CPU, so the merged trace is in the order of the calls.
    "trace_clock=global",
];

/// What the calls were recorded with (the capture's `mechanism`).
pub(crate) const MECHANISM: &str = "kprobe_event";

/// Most lines of one trace block.
const TRACE_LINES_MAX: usize = 100_000;

/// The lines of the last complete `PHASE` trace block of a console, `None` when the console
/// has none (a guest without tracing); an incomplete block is an error.
fn trace_block<'a>(console: &'a str, phase: &str) -> Result<Option<Vec<&'a str>>, String> {
    let begin = format!("@trace {phase} begin");
    let end = format!("@trace {phase} end ");
    let lines: Vec<&str> = console.lines().map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    let Some(start) = lines.iter().rposition(|l| *l == begin) else {
        return Ok(None);
    };
    let mut out = Vec::new();
    for l in &lines[start + 1..] {
        if let Some(n) = l.strip_prefix(end.as_str()) {
            let n: usize = n.trim().parse().map_err(|_| format!("trace {phase}: bad end {l:?}"))?;
            if n != out.len() {
                return Err(format!("trace {phase}: {} lines, the guest said {n}", out.len()));
            }
            return Ok(Some(out));
        }
        match l.strip_prefix("@t ") {
            Some(t) if out.len() < TRACE_LINES_MAX => out.push(t),
            Some(_) => return Err(format!("trace {phase}: more than {TRACE_LINES_MAX} lines")),
            None => return Err(format!("trace {phase}: {l:?} is not a trace line")),
        }
    }
    Err(format!("trace {phase}: no end"))
}

/// One event of the trace: the task, the event name and its `key=value` fields.
#[derive(Debug, PartialEq, Eq)]
struct Event<'a> {
    task: &'a str,
    name: &'a str,
    fields: BTreeMap<&'a str, &'a str>,
}

/// A line of `/sys/kernel/tracing/trace`:
/// `  kworker/u8:1-40  [001] .....  1.234567: blkmq: (blk_mq_map_queues+0x4/0x140) groups=1`.
fn event(line: &str) -> Option<Event<'_>> {
    let (task, rest) = line.trim_start().split_once(" [")?;
    // `001] .....  1.234567: name: …`: the event follows the timestamp's colon.
    let (_, rest) = rest.split_once(": ")?;
    let (name, args) = rest.split_once(": ")?;
    let args = args.split_once(") ").map(|(_, a)| a).unwrap_or("");
    let fields = args
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k, v.trim_matches('"')))
        .collect();
    Some(Event {
        task: task.trim(),
        name: name.trim(),
        fields,
    })
}

/// The caller of `group_cpus_evenly()` an event stands for, and the groups it asks for.
fn spread(e: &Event) -> Option<(&'static str, u32)> {
    let field = |k: &str| e.fields.get(k).and_then(|v| v.parse::<u32>().ok());
    if e.name == "blkmq" {
        return Some(("blk_mq_map_queues", field("groups")?));
    }
    let (nvecs, pre, post) = (field("nvecs")?, field("pre")?, field("post")?);
    Some((
        "irq_create_affinity_masks",
        nvecs.saturating_sub(pre.saturating_add(post)),
    ))
}

/// The calls of a console's `PHASE` trace block, given to the machine's devices; `None` when
/// the console has no such block.
pub(crate) fn probe_calls(console: &str, phase: &str, devices: &[SlotDevice]) -> Result<Option<ProbeCalls>, String> {
    let Some(lines) = trace_block(console, phase)? else {
        return Ok(None);
    };
    let by_pci: BTreeMap<String, String> = devices.iter().map(|d| (d.pci(), d.name())).collect();
    let mut virtio: BTreeMap<&str, &str> = BTreeMap::new();
    let mut probing: BTreeMap<&str, Option<String>> = BTreeMap::new();
    let mut calls = Vec::new();
    for line in lines {
        if let Some(rest) = line.strip_prefix("virtio ") {
            if let Some((v, pci)) = rest.split_once(' ') {
                virtio.insert(v, pci.trim());
            }
            continue;
        }
        let Some(e) = event(line) else { continue };
        match e.name {
            "pci" | "virtio" => {
                let dev = e.fields.get("dev").copied().unwrap_or("");
                let pci = if e.name == "virtio" {
                    virtio.get(dev).copied().unwrap_or("")
                } else {
                    dev
                };
                probing.insert(e.task, by_pci.get(pci).cloned());
            }
            "irq" | "blkmq" => {
                let Some((caller, groups)) = spread(&e) else {
                    return Err(format!("trace {phase}: no group count in {line:?}"));
                };
                if groups > 0 {
                    calls.push(ProbeCall {
                        device: probing.get(e.task).cloned().flatten(),
                        caller: caller.to_string(),
                        groups,
                        task: e.task.to_string(),
                    });
                }
            }
            _ => {}
        }
    }
    Ok(Some(ProbeCalls {
        mechanism: MECHANISM.to_string(),
        devices: lab_devices(devices),
        calls,
    }))
}

/// The machine's devices as the capture names them.
pub(crate) fn lab_devices(devices: &[SlotDevice]) -> Vec<LabDevice> {
    devices
        .iter()
        .map(|d| LabDevice {
            name: d.name(),
            kind: d.kind.name().to_string(),
            pci: d.pci(),
            queues: d.queues,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::qemu::slot_devices;

    const CONSOLE: &str = "\
[    1.0] something\r
@trace boot begin\r
@t virtio virtio0 0000:00:12.0\r
@t   kworker/u8:1-40      [001] .....     0.900000: pci: (pci_device_probe+0x0/0x1c0) dev=\"0000:00:10.0\"\r
@t   kworker/u8:2-41      [000] .....     0.900100: pci: (pci_device_probe+0x0/0x1c0) dev=\"0000:00:11.0\"\r
@t   kworker/u8:1-40      [001] .....     0.910000: blkmq: (blk_mq_map_queues+0x4/0x140) groups=1\r
@t   kworker/u8:2-41      [000] .....     0.920000: blkmq: (blk_mq_map_queues+0x4/0x140) groups=1\r
@t   kworker/u8:2-41      [000] .....     0.930000: irq: (irq_create_affinity_masks+0x4/0x2a0) nvecs=5 pre=1 post=0\r
@t   kworker/u8:1-40      [001] .....     0.940000: irq: (irq_create_affinity_masks+0x4/0x2a0) nvecs=4 pre=1 post=0\r
@t   insmod-80            [002] .....     2.000000: virtio: (virtio_dev_probe+0x0/0x2c0) dev=\"virtio0\"\r
@t   insmod-80            [002] .....     2.100000: irq: (irq_create_affinity_masks+0x4/0x2a0) nvecs=3 pre=1 post=0\r
@trace boot end 9\r
";

    #[test]
    fn calls_go_to_the_probe_of_their_task() {
        let devices = slot_devices(&[3, 4], &[2], &[]).unwrap();
        let calls = probe_calls(CONSOLE, "boot", &devices).unwrap().unwrap();
        let got: Vec<(Option<&str>, &str, u32)> = calls
            .calls
            .iter()
            .map(|c| (c.device.as_deref(), c.caller.as_str(), c.groups))
            .collect();
        assert_eq!(
            got,
            [
                (Some("n0"), "blk_mq_map_queues", 1),
                (Some("n1"), "blk_mq_map_queues", 1),
                (Some("n1"), "irq_create_affinity_masks", 4),
                (Some("n0"), "irq_create_affinity_masks", 3),
                (Some("vb0"), "irq_create_affinity_masks", 2),
            ]
        );
        assert_eq!(calls.devices[2].pci, "0000:00:12.0");
        assert_eq!(calls.devices[2].kind, "virtio-blk");
        assert!(probe_calls(CONSOLE, "seq", &devices).unwrap().is_none());
    }

    #[test]
    fn an_incomplete_trace_block_is_an_error() {
        let devices = slot_devices(&[3, 4], &[2], &[]).unwrap();
        let cut = CONSOLE.replace("@trace boot end 9", "@trace boot end 8");
        assert!(probe_calls(&cut, "boot", &devices).unwrap_err().contains("9 lines"));
        let cut = &CONSOLE[..CONSOLE.find("@trace boot end").unwrap()];
        assert!(probe_calls(cut, "boot", &devices).unwrap_err().contains("no end"));
    }
}
