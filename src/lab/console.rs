//! Captures a guest prints on its console: the files `irqscope-agent` reads, turned back into a
//! tree and read by the agent's own collector, so an arm64 guest (which cannot run the x86
//! agent, and whose QEMU `virt` board has one serial port) gives captures in the same format,
//! with the same checks, as an x86 guest's agent.
//!
//! `lab/init.sh` prints, for each phase, a block of records between `@dump PHASE begin` and
//! `@dump PHASE end N` (N records):
//!
//! | record | meaning |
//! |---|---|
//! | `@d PATH` | a directory (`sys/devices/system/cpu/cpu3`, present even without `topology/`) |
//! | `@v PATH TEXT` | a one-line file holding `TEXT` and a newline |
//! | `@e PATH` | an empty file |
//! | `@l PATH` | a node's CPU link (`sys/devices/system/node/node2/cpu9`) |
//! | `@f PATH N` | a file of the N lines that follow (`proc/interrupts`) |
//!
//! Paths are relative to `/` and must lie under `proc/` or `sys/devices/system/`. The console
//! turns `\n` into `\r\n`; a `\r` at a line's end is dropped. A line inside a block that is not
//! a record (a kernel message that slipped in), a count that does not match or a block that
//! does not end makes the capture incomplete, and the boot is tried again.

use crate::live::collect::Collector;
use crate::live::protocol::{Capture, PROTOCOL_VERSION};
use std::path::{Path, PathBuf};

/// Most records in one block (a 1,024-CPU guest with 4,096 IRQs prints about 20,000).
pub(crate) const RECORDS_MAX: usize = 200_000;
/// Most lines of one `@f` file.
const FILE_LINES_MAX: usize = 100_000;

/// One record of a dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Record {
    Dir(String),
    File(String, String),
    Link(String),
}

/// A path as the guest printed it, checked: relative, plain components, under `proc/` or
/// `sys/devices/system/`.
fn checked_path(path: &str) -> Result<&str, String> {
    let plain = path.split('/').all(|c| {
        !c.is_empty() && c != "." && c != ".." && c.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b))
    });
    if !plain || path.len() > 256 || !(path.starts_with("proc/") || path.starts_with("sys/devices/system/")) {
        return Err(format!(
            "a record names {path:?}, not a file under proc/ or sys/devices/system/"
        ));
    }
    Ok(path)
}

/// The records of the last complete `PHASE` block of a console text.
pub(crate) fn parse_dump(console: &str, phase: &str) -> Result<Vec<Record>, String> {
    let begin = format!("@dump {phase} begin");
    let end = format!("@dump {phase} end ");
    let lines: Vec<&str> = console.lines().map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    let start = lines
        .iter()
        .rposition(|l| *l == begin)
        .ok_or_else(|| format!("the console holds no {phase} capture"))?;
    let mut records = Vec::new();
    let mut i = start + 1;
    loop {
        let Some(line) = lines.get(i) else {
            return Err(format!("the {phase} capture on the console does not end"));
        };
        i += 1;
        if let Some(count) = line.strip_prefix(&end) {
            let count: usize = count
                .trim()
                .parse()
                .map_err(|_| format!("{phase} capture: bad end line {line:?}"))?;
            if count != records.len() {
                return Err(format!(
                    "{phase} capture: {} records on the console, the guest printed {count}",
                    records.len()
                ));
            }
            return Ok(records);
        }
        if records.len() >= RECORDS_MAX {
            return Err(format!("{phase} capture: more than {RECORDS_MAX} records"));
        }
        let (tag, rest) = line.split_once(' ').unwrap_or((line, ""));
        let record = match tag {
            "@d" => Record::Dir(checked_path(rest)?.to_string()),
            "@l" => Record::Link(checked_path(rest)?.to_string()),
            "@e" => Record::File(checked_path(rest)?.to_string(), String::new()),
            "@v" => {
                let (path, text) = rest.split_once(' ').unwrap_or((rest, ""));
                Record::File(checked_path(path)?.to_string(), format!("{text}\n"))
            }
            "@f" => {
                let (path, n) = rest.rsplit_once(' ').unwrap_or((rest, ""));
                let n: usize = n
                    .parse()
                    .ok()
                    .filter(|&n| n <= FILE_LINES_MAX)
                    .ok_or_else(|| format!("{phase} capture: bad line count in {line:?}"))?;
                let body = lines
                    .get(i..i + n)
                    .ok_or_else(|| format!("the {phase} capture on the console does not end"))?;
                i += n;
                let mut text = String::new();
                for l in body {
                    text.push_str(l);
                    text.push('\n');
                }
                Record::File(checked_path(path)?.to_string(), text)
            }
            _ => {
                let short: String = line.chars().take(80).collect();
                return Err(format!(
                    "{phase} capture: a line that is not a record (a kernel message?): {short:?}"
                ));
            }
        };
        records.push(record);
    }
}

/// Write the records as a tree under `root` (which must not exist yet).
pub(crate) fn write_tree(records: &[Record], root: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(root)?;
    for r in records {
        match r {
            Record::Dir(p) => std::fs::create_dir_all(root.join(p))?,
            Record::File(p, text) => {
                let path = root.join(p);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(path, text)?;
            }
            Record::Link(p) => {
                let path = root.join(p);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                std::os::unix::fs::symlink(format!("../../cpu/{name}"), &path)?;
            }
        }
    }
    Ok(())
}

/// The capture of a phase printed on a console, as `irqscope-agent capture --host HOST` would
/// have written it in the guest: the files are written under `scratch` (removed afterwards)
/// and read by the agent's [`Collector`].
pub(crate) fn capture_from_console(console: &str, phase: &str, host: &str, scratch: &Path) -> Result<Capture, String> {
    let records = parse_dump(console, phase)?;
    let root: PathBuf = scratch.join(format!("{phase}-root"));
    let _ = std::fs::remove_dir_all(&root);
    let result = write_tree(&records, &root)
        .map_err(|e| format!("{}: {e}", root.display()))
        .and_then(|()| {
            let taken = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0);
            Collector::new(&root, host)
                .read(taken)
                .map_err(|e| format!("{phase} capture: {e}"))
        });
    let _ = std::fs::remove_dir_all(&root);
    let snapshot = result?;
    snapshot.check().map_err(|e| format!("{phase} capture: {e}"))?;
    Ok(Capture {
        version: PROTOCOL_VERSION,
        snapshots: vec![snapshot],
        probe_calls: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMP: &str = "[    9.1] nvme nvme0: 4/0/0 default/read/poll queues\r\n\
@dump seq begin\r\n\
@v proc/sys/kernel/osrelease 6.12.117+deb12-cloud-arm64\r\n\
@f proc/interrupts 3\r\n\
           CPU0       CPU1       \r\n\
 13:          0          0     GICv3  33 Level     uart-pl011\r\n\
 18:         20          0  ITS-PCI-MSIX-0000:00:10.0   0 Edge      nvme0q0\r\n\
@v proc/irq/13/smp_affinity_list 0-1\r\n\
@v proc/irq/13/effective_affinity_list 0\r\n\
@v proc/irq/18/smp_affinity_list 0-1\r\n\
@v proc/irq/18/effective_affinity_list 1\r\n\
@v proc/irq/18/node 0\r\n\
@v sys/devices/system/cpu/possible 0-1\r\n\
@v sys/devices/system/cpu/present 0-1\r\n\
@v sys/devices/system/cpu/online 0-1\r\n\
@d sys/devices/system/cpu/cpu0\r\n\
@v sys/devices/system/cpu/cpu0/topology/thread_siblings_list 0\r\n\
@v sys/devices/system/cpu/cpu0/topology/cluster_cpus_list 0-1\r\n\
@v sys/devices/system/cpu/cpu0/topology/package_cpus_list 0-1\r\n\
@d sys/devices/system/cpu/cpu1\r\n\
@v sys/devices/system/cpu/cpu1/topology/thread_siblings_list 1\r\n\
@v sys/devices/system/cpu/cpu1/topology/cluster_cpus_list 0-1\r\n\
@v sys/devices/system/cpu/cpu1/topology/package_cpus_list 0-1\r\n\
@d sys/devices/system/node/node0\r\n\
@v sys/devices/system/node/node0/cpulist 0-1\r\n\
@v sys/devices/system/node/node0/distance 10\r\n\
@l sys/devices/system/node/node0/cpu0\r\n\
@l sys/devices/system/node/node0/cpu1\r\n\
@dump seq end 23\r\n\
lab: done\r\n";

    #[test]
    fn a_console_dump_becomes_the_agents_capture() {
        let scratch = std::env::temp_dir().join(format!("irqscope-console-{}", std::process::id()));
        let c = capture_from_console(DUMP, "seq", "lab", &scratch).unwrap();
        let s = &c.snapshots[0];
        assert_eq!(s.host, "lab");
        assert_eq!(s.topology.kernel_release, "6.12.117+deb12-cloud-arm64");
        assert_eq!(s.topology.clusters, vec!["0-1".to_string()]);
        let nvme = s.irqs.iter().find(|i| i.name == "nvme0q0").unwrap();
        assert_eq!(nvme.chip, "ITS-PCI-MSIX-0000:00:10.0");
        assert_eq!(
            (nvme.affinity.as_deref(), nvme.effective.as_deref(), nvme.node),
            (Some("0-1"), Some("1"), Some(0))
        );
        assert!(!scratch.join("seq-root").exists());
        let _ = std::fs::remove_dir_all(&scratch);
    }

    #[test]
    fn damaged_dumps_are_refused() {
        let e = parse_dump(DUMP, "boot").unwrap_err();
        assert!(e.contains("no boot capture"), "{e}");
        // A kernel message inside the block.
        let bad = DUMP.replace(
            "@d sys/devices/system/node/node0\r\n",
            "[   12.0] rcu: INFO: stall\r\n@d sys/devices/system/node/node0\r\n",
        );
        assert!(parse_dump(&bad, "seq").unwrap_err().contains("not a record"));
        // A record lost.
        let lost = DUMP.replace("@l sys/devices/system/node/node0/cpu1\r\n", "");
        assert!(parse_dump(&lost, "seq").unwrap_err().contains("22 records"));
        // Cut short.
        let cut = &DUMP[..DUMP.find("@dump seq end").unwrap()];
        assert!(parse_dump(cut, "seq").unwrap_err().contains("does not end"));
        // Paths outside the two trees.
        for p in ["../etc/passwd", "/etc/passwd", "etc/shadow", "proc/../../x", "proc//x"] {
            let evil = DUMP.replace("@d sys/devices/system/cpu/cpu1", &format!("@d {p}"));
            assert!(parse_dump(&evil, "seq").is_err(), "{p}");
        }
    }
}
