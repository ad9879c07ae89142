//! Probe orders seen on a real kernel against the ordering model: `c1-612.orders.json` is
//! `irqscope lab run ../shared/lab/topologies/c1.toml --kernel
//! 'linux-image-6.12.*+deb12-cloud-amd64' --nvme 3,2 --virtio-blk 2:2,3 --virtio-net 1
//! --boots 8` (Debian 6.12.118+deb12-cloud-amd64 under QEMU 10.0.2 TCG, 4 vCPUs; its `origin`
//! holds the kernel command line, the QEMU command and the date). The NVMe driver probes the
//! two controllers asynchronously at boot, so their calls interleave differently from boot to
//! boot; the virtio-blk driver, a module loaded by the init with `driver_async_probe=`, probes
//! its two devices after them, in either order.

use crate::common::cli::irqscope_output as run;
use irqscope::lab::orders::{self, OrdersCapture};
use std::path::{Path, PathBuf};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lab").join(name)
}

fn capture() -> OrdersCapture {
    orders::read(&data("c1-612.orders.json")).unwrap().unwrap()
}

#[test]
fn every_order_a_real_kernel_probed_in_is_one_the_model_allows() {
    let o = capture();
    assert_eq!(o.boots.len(), 8);
    assert!(o.origin.package.as_deref().unwrap().starts_with("linux-image-6.12."));
    let seen = orders::seen_orders(&o).unwrap();
    assert!(
        seen.len() > 1,
        "one order in 8 boots: the probes did not run in parallel"
    );
    assert_eq!(seen.iter().map(|s| s.boots).sum::<usize>(), 8);
    for s in &seen {
        assert!(s.verdict.is_ok(), "{:?}: {:?}", s.calls, s.verdict);
        assert_eq!(s.calls.len(), 6, "{:?}", s.calls);
    }
    let (code, out, err) = run(&["lab", "check", data("c1-612.orders.json").to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.ends_with("orders seen, all allowed\n"), "{out}");
    assert!(out.lines().all(|l| l.len() <= 72), "{out}");
}

#[test]
fn an_order_the_model_forbids_fails_the_check() {
    // The first boot with its first controller's admin tag set moved after that controller's
    // I/O spread: the model maps the admin tag set first.
    let mut o = capture();
    admin_after_spread(&mut o.boots[0]);
    let seen = orders::seen_orders(&o).unwrap();
    let forbidden: Vec<_> = seen.iter().filter(|s| s.verdict.is_err()).collect();
    assert_eq!(forbidden.len(), 1, "{seen:?}");
    assert_eq!(forbidden[0].boots, 1);
    let dir = std::env::temp_dir().join(format!("irqscope-lab-orders-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("mutated.orders.json");
    o.write(&file).unwrap();
    let (code, out, _) = run(&["lab", "check", file.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FORBIDDEN"), "{out}");
    assert!(out.ends_with("1 forbidden by the model\n"), "{out}");
}

/// The boot's first call (its first controller's admin tag set) moved after that
/// controller's I/O spread: an order the model forbids.
fn admin_after_spread(boot: &mut Vec<irqscope::live::protocol::ProbeCall>) {
    let first = boot[0].device.clone();
    let spread = boot
        .iter()
        .position(|c| c.device == first && c.caller == "irq_create_affinity_masks")
        .unwrap();
    let admin = boot.remove(0);
    boot.insert(spread, admin);
}

#[test]
fn a_call_no_probe_made_is_bad_input() {
    let mut o = capture();
    o.boots[0][0].device = None;
    let e = orders::seen_orders(&o).unwrap_err();
    assert!(e.starts_with("boot 1: call 1 ("), "{e}");
    assert!(e.contains("came from no device's probe"), "{e}");
}

/// A single capture that recorded its boot's calls (`probe_calls`, as `lab run` writes it):
/// `lab check` says the order and whether the model allows it, as for several boots, and
/// fails when the model forbids it. The capture is c1's first boot's calls put into a real
/// capture of another machine that checks clean on its own (vm8-nosmt-72).
#[test]
fn a_single_capture_with_its_calls_is_checked_against_the_model() {
    let o = capture();
    let base: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data("vm8-nosmt-72.agent.json")).unwrap()).unwrap();
    let dir = std::env::temp_dir().join(format!("irqscope-lab-one-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let check = |boot: &[irqscope::live::protocol::ProbeCall], name: &str| {
        let mut v = base.clone();
        v["probe_calls"] = serde_json::json!({
            "mechanism": o.mechanism,
            "devices": o.devices,
            "calls": boot,
        });
        let file = dir.join(name);
        std::fs::write(&file, v.to_string()).unwrap();
        run(&["lab", "check", file.to_str().unwrap()])
    };
    let (code, out, err) = check(&o.boots[0], "allowed.json");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("probe order: 6 calls from kprobe_event"), "{out}");
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains(", allowed ("), "{out}");
    // The order's lines fit mail (the capture's own header is lab check's as before).
    let order = &out[out.find("probe order:").unwrap()..];
    assert!(order.lines().all(|l| l.chars().count() <= 72), "{out}");
    // The first controller's admin tag set after its I/O spread: the model forbids it.
    let mut boot = o.boots[0].clone();
    admin_after_spread(&mut boot);
    let (code, out, _) = check(&boot, "forbidden.json");
    assert_eq!(code, 1, "{out}");
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("not allowed by the model: "), "{out}");
    // A call no device's probe made (6.1's NVMe maps its queues from its reset work, in a
    // kworker): the order is not checked, and the placement still is.
    let mut boot = o.boots[0].clone();
    boot[0].device = None;
    let (code, out, err) = check(&boot, "unnamed.json");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 0, "{out}{err}");
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("probe order: not checked: "), "{out}");
    assert!(out.trim_end().ends_with(", 0 differ"), "{out}");
}
