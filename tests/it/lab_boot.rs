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
//! arm64 (`qemu-system-aarch64 -M virt`, TCG): with IRQSCOPE_LAB_ARM64=1 as well (CI sets it
//! once qemu-system-arm and the arm64 architecture are installed), the 8-CPU a8 machine
//! (tests/data/lab/a8.toml) boots IRQSCOPE_LAB_KERNEL_ARM64 (default the newest
//! `linux-image-6.12.*+deb12-cloud-arm64`, through multiarch) twice: with the GICv3 ITS and two
//! controllers of 3 queues, and with GICv2m (`--its off`) and controllers of 4 and 2 queues.
//!
//! Each boot's line (the package it resolved, its time) goes straight to the terminal, past the
//! test harness's capture, so a CI log shows which kernels ran.
//!
//! Each capture must be complete and valid: both phases, every controller's vectors
//! (`1 + min(max_ioqpairs, CPUs)`), every managed vector with an effective CPU inside its mask.
//! When the tree has `irqscope lab check` (and, for the ITS boot, the `arm64-its` model), it
//! must also report 0 differences on the capture with the model it picks itself, and `lab
//! run` must end with that verdict. The c2 boot on 6.12 is then booted again from its saved
//! `.cmd`, as a person pasting it would, and must capture again beside the first run's files,
//! leaving those as they were.
//!
//! `lab_run` runs `lab run` without QEMU (refusals, a fake QEMU).

use irqscope::live::protocol::Capture;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Boot {
    config: &'static str,
    /// A topology of tests/data/lab (else ../shared/lab/topologies/CONFIG.toml).
    local: bool,
    /// `--its` for an arm64 machine.
    its: Option<&'static str>,
    kernel_env: &'static str,
    kernel_default: Option<&'static str>,
    release_prefix: &'static str,
    /// Downloaded through the private apt configuration (IRQSCOPE_LAB_APT_OPTIONS).
    private_apt: bool,
    nvme: &'static [u32],
    node_memory: Option<&'static str>,
    /// Boot again from the saved `.cmd`.
    again: bool,
}

const ARM64_BOOTS: &[Boot] = &[
    Boot {
        config: "a8",
        local: true,
        its: Some("on"),
        kernel_env: "IRQSCOPE_LAB_KERNEL_ARM64",
        kernel_default: Some("linux-image-6.12.*+deb12-cloud-arm64"),
        release_prefix: "6.12.",
        private_apt: false,
        nvme: &[3, 3],
        node_memory: None,
        again: false,
    },
    Boot {
        config: "a8",
        local: true,
        its: Some("off"),
        kernel_env: "IRQSCOPE_LAB_KERNEL_ARM64",
        kernel_default: Some("linux-image-6.12.*+deb12-cloud-arm64"),
        release_prefix: "6.12.",
        private_apt: false,
        nvme: &[4, 2],
        node_memory: None,
        again: false,
    },
];

const BOOTS: &[Boot] = &[
    Boot {
        local: false,
        its: None,
        config: "c2",
        kernel_env: "IRQSCOPE_LAB_KERNEL_61",
        kernel_default: Some("linux-image-6.1.0-*-amd64"),
        release_prefix: "6.1.",
        private_apt: false,
        nvme: &[3, 5, 6],
        node_memory: None,
        again: false,
    },
    Boot {
        local: false,
        its: None,
        config: "c5",
        kernel_env: "IRQSCOPE_LAB_KERNEL_61",
        kernel_default: Some("linux-image-6.1.0-*-amd64"),
        release_prefix: "6.1.",
        private_apt: false,
        nvme: &[5, 6, 7],
        node_memory: Some("512,0,512,256"),
        again: false,
    },
    Boot {
        local: false,
        its: None,
        config: "c2",
        kernel_env: "IRQSCOPE_LAB_KERNEL_612",
        kernel_default: Some("linux-image-6.12.*+deb12-cloud-amd64"),
        release_prefix: "6.12.",
        private_apt: false,
        nvme: &[3, 5, 6],
        node_memory: None,
        again: true,
    },
    Boot {
        local: false,
        its: None,
        config: "c5",
        kernel_env: "IRQSCOPE_LAB_KERNEL_612",
        kernel_default: Some("linux-image-6.12.*+deb12-cloud-amd64"),
        release_prefix: "6.12.",
        private_apt: false,
        nvme: &[5, 6, 7],
        node_memory: Some("512,0,512,256"),
        again: false,
    },
    Boot {
        local: false,
        its: None,
        config: "c3",
        kernel_env: "IRQSCOPE_LAB_KERNEL_72",
        kernel_default: None,
        release_prefix: "7.2.",
        private_apt: true,
        nvme: &[7, 7, 7, 7],
        node_memory: None,
        again: false,
    },
];

fn shared_topology(config: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../shared/lab/topologies/{config}.toml"))
}

fn topology(boot: &Boot) -> PathBuf {
    if boot.local {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/lab/{}.toml", boot.config))
    } else {
        shared_topology(boot.config)
    }
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

/// Where the boots run: the work directory (downloads kept there), the directory of the
/// captures, `lab check` when the tree has it, the private apt options of the 7.2 boot.
struct Lab {
    work_dir: PathBuf,
    out_dir: PathBuf,
    has_check: bool,
    apt: Vec<String>,
}

impl Lab {
    fn new(name: &str) -> Lab {
        let out_dir = std::env::temp_dir().join(format!("irqscope-lab-test-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&out_dir).unwrap();
        Lab {
            work_dir: std::env::var("IRQSCOPE_LAB_WORK_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|_| std::env::temp_dir().join("irqscope-lab")),
            out_dir,
            has_check: Command::new(env!("CARGO_BIN_EXE_irqscope"))
                .args(["lab", "check", "--help"])
                .output()
                .is_ok_and(|o| o.status.success()),
            apt: std::env::var("IRQSCOPE_LAB_APT_OPTIONS")
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_string)
                .collect(),
        }
    }

    /// Boot one configuration and check its captures; false when its kernel is not set.
    fn boot(&self, boot: &Boot) -> bool {
        let Some(kernel) = std::env::var(boot.kernel_env)
            .ok()
            .or(boot.kernel_default.map(str::to_string))
        else {
            eprintln!("lab_boot: {} skipped ({} not set)", boot.config, boot.kernel_env);
            return false;
        };
        let name = format!(
            "{}{}-{}",
            boot.config,
            boot.its.map(|i| format!("-its-{i}")).unwrap_or_default(),
            boot.release_prefix.trim_end_matches('.')
        );
        let prefix = self.out_dir.join(&name);
        let nvme = boot.nvme.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_irqscope"));
        cmd.args(["lab", "run"])
            .arg(topology(boot))
            .args(["--kernel", &kernel, "--nvme", &nvme, "--accel", "auto", "-o"])
            .arg(&prefix)
            .arg("--work-dir")
            .arg(&self.work_dir)
            .arg("--agent")
            .arg(env!("CARGO_BIN_EXE_irqscope-agent"));
        if let Some(m) = boot.node_memory {
            cmd.args(["--node-memory", m]);
        }
        if let Some(its) = boot.its {
            cmd.args(["--its", its]);
        }
        if boot.private_apt {
            for o in &self.apt {
                cmd.args(["--apt-option", o]);
            }
        }
        let t0 = std::time::Instant::now();
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name} on {kernel}: {stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = format!(
            "lab_boot: {name} on {kernel}: {:.1} s, {}; {}\n",
            t0.elapsed().as_secs_f64(),
            stdout.lines().next().unwrap_or(""),
            stdout.lines().last().unwrap_or("").trim()
        );
        // Past the harness's capture (which holds only print!/eprint!), so CI shows it.
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
        let ncpu = std::fs::read_to_string(topology(boot))
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
        let its_model = irqscope::kernel::vector_matrix::EffectiveModel::ALL
            .iter()
            .any(|m| m.name() == "arm64-its");
        if !self.has_check || (boot.its.is_some() && !its_model) {
            eprintln!("lab_boot: {name}: lab check skipped (this tree has no arm64-its model yet)");
            return true;
        }
        let seq = format!("{}.seq.agent.json", prefix.display());
        let check = Command::new(env!("CARGO_BIN_EXE_irqscope"))
            .args(["lab", "check", &seq])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&check.stdout);
        assert!(check.status.success(), "lab check {seq}:\n{text}");
        assert!(text.trim_end().ends_with(", 0 differ"), "lab check {seq}:\n{text}");
        // lab run ended with the same verdict.
        assert!(stdout.contains(&format!("lab check {seq}:\n")), "{stdout}");
        assert_eq!(stdout.lines().last().map(str::trim), text.lines().last(), "{stdout}");
        if boot.again {
            boot_again(&prefix, boot, ncpu);
        }
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
        true
    }
}

/// Boot again from a run's saved `.cmd`, as a shell runs it when pasted: the guest finishes
/// (the console on standard output says so), its captures are complete and went to
/// `PREFIX.again.*`, and the first run's files are as they were.
fn boot_again(prefix: &Path, boot: &Boot, ncpu: u32) {
    let p = |suffix: &str| PathBuf::from(format!("{}.{suffix}", prefix.display()));
    let first: Vec<Vec<u8>> = ["console", "boot.agent.json", "seq.agent.json"]
        .iter()
        .map(|s| std::fs::read(p(s)).unwrap())
        .collect();
    let cmd = std::fs::read_to_string(p("cmd")).unwrap();
    // The terminal: files, so that a long console never blocks QEMU on a full pipe.
    let (stdout, stderr) = (p("again-stdout"), p("again-stderr"));
    let t0 = std::time::Instant::now();
    let child = Command::new("sh")
        .arg("-c")
        .arg(&cmd)
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let mut child = crate::common::process::KillOnDrop(child);
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(t0.elapsed().as_secs() < 600, "{cmd}: no end after 600 s");
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let out = std::fs::read_to_string(&stdout).unwrap();
    let err = std::fs::read_to_string(&stderr).unwrap();
    assert!(status.success(), "{cmd}:\n{err}");
    assert!(out.contains("lab: done"), "{cmd}:\n{out}\n{err}");
    assert_eq!(std::fs::read_to_string(p("again.console")).unwrap(), out);
    for phase in ["boot", "seq"] {
        check_capture(&p(&format!("again.{phase}.agent.json")), boot, ncpu);
    }
    for (s, bytes) in ["console", "boot.agent.json", "seq.agent.json"].iter().zip(&first) {
        assert!(std::fs::read(p(s)).unwrap() == *bytes, "{s} changed");
    }
    let line = format!(
        "lab_boot: {} booted again from its .cmd in {:.1} s\n",
        prefix.display(),
        t0.elapsed().as_secs_f64()
    );
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
}

impl Drop for Lab {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.out_dir);
        }
    }
}

#[test]
fn real_kernels_boot_and_capture() {
    if std::env::var("IRQSCOPE_LAB").as_deref() != Ok("1") {
        eprintln!("lab_boot: skipped (set IRQSCOPE_LAB=1, with qemu-system-x86 and busybox-static installed)");
        return;
    }
    let lab = Lab::new("x86");
    let booted = BOOTS.iter().filter(|b| lab.boot(b)).count();
    assert!(booted >= 4, "only {booted} kernels booted");
}

/// arm64 kernels in QEMU virt: the ITS boot and the GICv2m boot of the a8 machine.
#[test]
fn arm64_kernels_boot_and_capture() {
    if std::env::var("IRQSCOPE_LAB").as_deref() != Ok("1") || std::env::var("IRQSCOPE_LAB_ARM64").as_deref() != Ok("1")
    {
        eprintln!(
            "lab_boot: arm64 boots skipped (set IRQSCOPE_LAB=1 and IRQSCOPE_LAB_ARM64=1, with \
             qemu-system-arm installed and the arm64 architecture added to dpkg)"
        );
        return;
    }
    let lab = Lab::new("arm64");
    let booted = ARM64_BOOTS.iter().filter(|b| lab.boot(b)).count();
    assert_eq!(booted, ARM64_BOOTS.len(), "only {booted} arm64 boots");
}
