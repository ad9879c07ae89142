//! Real kernels booted in QEMU through `irqscope lab run` (runs only with IRQSCOPE_LAB=1, which
//! CI sets after installing qemu-system-x86 and busybox-static; skips otherwise so that a
//! developer's `cargo test` needs no QEMU).
//!
//! Kernels: IRQSCOPE_LAB_KERNEL_61 and IRQSCOPE_LAB_KERNEL_612 (Debian package names or
//! patterns; by default the newest `linux-image-6.1.0-*-amd64` and
//! `linux-image-6.12.*+deb12-cloud-amd64` the system's apt index has, since Debian replaces
//! kernel ABIs every few weeks), and IRQSCOPE_LAB_KERNEL_72 with IRQSCOPE_LAB_APT_OPTIONS (the
//! private apt configuration for Debian unstable, `-o` options separated by spaces) for the
//! cluster-aware 7.2 kernel, booted only when both are set. The private options reach only that
//! boot: the 6.1 and 6.12 packages are in the system's own sources, not in unstable's.
//!
//! Each boot's line (the package it resolved, its time) goes straight to the terminal, past the
//! test harness's capture, so a CI log shows which kernels ran.
//!
//! Each capture must be complete and valid: both phases, every controller's vectors
//! (`1 + min(max_ioqpairs, CPUs)`), every managed vector with an effective CPU inside its mask.
//! When the tree has `irqscope lab check`, it must also report 0 differences on the capture.

use irqscope::live::protocol::Capture;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Boot {
    config: &'static str,
    kernel_env: &'static str,
    kernel_default: Option<&'static str>,
    release_prefix: &'static str,
    /// Downloaded through the private apt configuration (IRQSCOPE_LAB_APT_OPTIONS).
    private_apt: bool,
    nvme: &'static [u32],
    node_memory: Option<&'static str>,
}

const BOOTS: &[Boot] = &[
    Boot {
        config: "c2",
        kernel_env: "IRQSCOPE_LAB_KERNEL_61",
        kernel_default: Some("linux-image-6.1.0-*-amd64"),
        release_prefix: "6.1.",
        private_apt: false,
        nvme: &[3, 5, 6],
        node_memory: None,
    },
    Boot {
        config: "c5",
        kernel_env: "IRQSCOPE_LAB_KERNEL_61",
        kernel_default: Some("linux-image-6.1.0-*-amd64"),
        release_prefix: "6.1.",
        private_apt: false,
        nvme: &[5, 6, 7],
        node_memory: Some("512,0,512,256"),
    },
    Boot {
        config: "c2",
        kernel_env: "IRQSCOPE_LAB_KERNEL_612",
        kernel_default: Some("linux-image-6.12.*+deb12-cloud-amd64"),
        release_prefix: "6.12.",
        private_apt: false,
        nvme: &[3, 5, 6],
        node_memory: None,
    },
    Boot {
        config: "c5",
        kernel_env: "IRQSCOPE_LAB_KERNEL_612",
        kernel_default: Some("linux-image-6.12.*+deb12-cloud-amd64"),
        release_prefix: "6.12.",
        private_apt: false,
        nvme: &[5, 6, 7],
        node_memory: Some("512,0,512,256"),
    },
    Boot {
        config: "c3",
        kernel_env: "IRQSCOPE_LAB_KERNEL_72",
        kernel_default: None,
        release_prefix: "7.2.",
        private_apt: true,
        nvme: &[7, 7, 7, 7],
        node_memory: None,
    },
];

fn shared_topology(config: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../shared/lab/topologies/{config}.toml"))
}

/// What the capture must hold whatever the model says: every phase complete.
fn check_capture(path: &Path, boot: &Boot, ncpu: u32) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let capture: Capture = serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let snap = &capture.snapshots[0];
    snap.check().unwrap();
    assert!(
        snap.topology.kernel_release.starts_with(boot.release_prefix),
        "{}: kernel {}",
        path.display(),
        snap.topology.kernel_release
    );
    let nvme: Vec<_> = snap.irqs.iter().filter(|i| i.name.starts_with("nvme")).collect();
    let expected: u32 = boot.nvme.iter().map(|q| 1 + q.min(&ncpu)).sum();
    assert_eq!(nvme.len() as u32, expected, "{}: NVMe vectors", path.display());
    for irq in &nvme {
        let aff = irq.affinity.as_deref().unwrap_or("");
        let eff = irq.effective.as_deref().unwrap_or("");
        assert!(
            !aff.is_empty() && !eff.is_empty(),
            "{}: {} has no mask",
            path.display(),
            irq.name
        );
        let mask = irqscope::topology::cpulist::parse_cpulist(aff, ncpu).unwrap();
        let cpu: u32 = eff.parse().unwrap_or_else(|_| panic!("{}: effective {eff}", irq.name));
        assert!(
            mask.contains(cpu),
            "{}: {} effective {cpu} outside {aff}",
            path.display(),
            irq.name
        );
    }
}

#[test]
fn real_kernels_boot_and_capture() {
    if std::env::var("IRQSCOPE_LAB").as_deref() != Ok("1") {
        eprintln!("lab_boot: skipped (set IRQSCOPE_LAB=1, with qemu-system-x86 and busybox-static installed)");
        return;
    }
    let out_dir = std::env::temp_dir().join(format!("irqscope-lab-test-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let work_dir = std::env::var("IRQSCOPE_LAB_WORK_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| std::env::temp_dir().join("irqscope-lab"));
    let has_check = Command::new(env!("CARGO_BIN_EXE_irqscope"))
        .args(["lab", "check", "--help"])
        .output()
        .is_ok_and(|o| o.status.success());
    let apt: Vec<String> = std::env::var("IRQSCOPE_LAB_APT_OPTIONS")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let mut booted = 0;
    for boot in BOOTS {
        let Some(kernel) = std::env::var(boot.kernel_env)
            .ok()
            .or(boot.kernel_default.map(str::to_string))
        else {
            eprintln!("lab_boot: {} skipped ({} not set)", boot.config, boot.kernel_env);
            continue;
        };
        let prefix = out_dir.join(format!("{}-{}", boot.config, boot.release_prefix.trim_end_matches('.')));
        let nvme = boot.nvme.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_irqscope"));
        cmd.args(["lab", "run"])
            .arg(shared_topology(boot.config))
            .args(["--kernel", &kernel, "--nvme", &nvme, "--accel", "auto", "-o"])
            .arg(&prefix)
            .arg("--work-dir")
            .arg(&work_dir)
            .arg("--agent")
            .arg(env!("CARGO_BIN_EXE_irqscope-agent"));
        if let Some(m) = boot.node_memory {
            cmd.args(["--node-memory", m]);
        }
        if boot.private_apt {
            for o in &apt {
                cmd.args(["--apt-option", o]);
            }
        }
        let t0 = std::time::Instant::now();
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{} on {kernel}: {stderr}", boot.config);
        let line = format!(
            "lab_boot: {} on {kernel}: {:.1} s, {}\n",
            boot.config,
            t0.elapsed().as_secs_f64(),
            String::from_utf8_lossy(&out.stdout).trim()
        );
        // Past the harness's capture (which holds only print!/eprint!), so CI shows it.
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
        let ncpu = std::fs::read_to_string(shared_topology(boot.config))
            .ok()
            .and_then(|t| irqscope::catalogue::parse_preset(&t).ok())
            .map(|t| t.possible().weight())
            .unwrap();
        for phase in ["boot", "seq"] {
            check_capture(
                Path::new(&format!("{}.{phase}.agent.json", prefix.display())),
                boot,
                ncpu,
            );
        }
        if has_check {
            let seq = format!("{}.seq.agent.json", prefix.display());
            let check = Command::new(env!("CARGO_BIN_EXE_irqscope"))
                .args(["lab", "check", &seq])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&check.stdout);
            assert!(check.status.success(), "lab check {seq}:\n{text}");
            assert!(text.trim_end().ends_with(", 0 differ"), "lab check {seq}:\n{text}");
            // "Which kernel is this?": the verdict across models names the generation this
            // release runs (src/lab/mod.rs's table), and that model reproduces the capture.
            let expected = match boot.release_prefix {
                "6.1." => "pre-cluster/heap-v5.1/",
                "6.12." => "pre-cluster/heap-v6.11/",
                _ => "cluster/heap-v6.11/",
            };
            let all = Command::new(env!("CARGO_BIN_EXE_irqscope"))
                .args(["lab", "check", &seq, "--all"])
                .output()
                .unwrap();
            let all_text = String::from_utf8_lossy(&all.stdout);
            let verdict = all_text.lines().find(|l| l.starts_with("verdict: ")).unwrap_or("");
            assert!(
                verdict.starts_with(&format!("verdict: {expected}")),
                "lab check --all {seq} on {kernel}:\n{all_text}"
            );
        }
        booted += 1;
    }
    assert!(booted >= 4, "only {booted} kernels booted");
    std::fs::remove_dir_all(&out_dir).unwrap();
}

/// Machines QEMU cannot build are refused before anything is downloaded or started: exit 2,
/// one line naming the rule. Needs no QEMU.
#[test]
fn unexpressible_machines_are_refused_with_one_line() {
    let dir = std::env::temp_dir().join(format!("irqscope-lab-refuse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        (
            "name = \"x\"\nnodes = [\"0-3\"]\nsmt = [\"0,2\", \"1,3\"]\n",
            "offset SMT numbering",
        ),
        (
            "name = \"x\"\nnodes = [\"0-3\"]\nsmt = [\"0-1\", \"2-3\"]\nclusters = [\"0-3\"]\n",
            "clusters other than the core",
        ),
        ("name = \"x\"\nnodes = [\"0-1,4-5\"]\n", "sparse ids"),
    ];
    for (i, (text, rule)) in cases.iter().enumerate() {
        let path = dir.join(format!("t{i}.toml"));
        std::fs::write(&path, text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_irqscope"))
            .args(["lab", "run"])
            .arg(&path)
            .args(["--kernel", "/nonexistent/bzImage", "--nvme", "3"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(rule), "{rule}: {stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
