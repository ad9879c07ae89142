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
//! must also report 0 differences on the capture with the model it picks itself.
//!
//! The other tests here need no QEMU: they run `lab run` against a fake QEMU (a shell script)
//! or stop it before any boot.

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
        let line = format!(
            "lab_boot: {name} on {kernel}: {:.1} s, {}\n",
            t0.elapsed().as_secs_f64(),
            String::from_utf8_lossy(&out.stdout).trim()
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

/// A scratch directory with a space in its path (the saved command line must quote it), a
/// dummy kernel image and busybox, and a fake QEMU: a script that writes its arguments
/// (NUL-separated) to `$FAKE_QEMU_ARGV` and then prints nothing, sleeping, unless
/// `$FAKE_QEMU_EXIT` is set.
struct FakeLab {
    dir: PathBuf,
}

impl FakeLab {
    fn new(name: &str) -> FakeLab {
        let dir = std::env::temp_dir().join(format!("irqscope lab {name} {}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("Image"), b"not a kernel").unwrap();
        std::fs::write(dir.join("busybox"), b"not busybox").unwrap();
        let qemu = dir.join("fake-qemu");
        std::fs::write(
            &qemu,
            "#!/bin/sh\nprintf '%s\\0' \"$@\" > \"$FAKE_QEMU_ARGV\"\n[ -n \"$FAKE_QEMU_EXIT\" ] && exit 0\nexec sleep 600\n",
        )
        .unwrap();
        std::fs::set_permissions(&qemu, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        FakeLab { dir }
    }

    /// `irqscope lab run` of the a8 arm64 machine (no agent goes into its initramfs) with the
    /// fake QEMU.
    fn run(&self, kernel: &Path, extra: &[&str], argv: &Path) -> std::process::Output {
        let a8 = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lab/a8.toml");
        Command::new(env!("CARGO_BIN_EXE_irqscope"))
            .args(["lab", "run"])
            .arg(&a8)
            .arg("--kernel")
            .arg(kernel)
            .arg("--busybox")
            .arg(self.dir.join("busybox"))
            .arg("--qemu")
            .arg(self.dir.join("fake-qemu"))
            .arg("--work-dir")
            .arg(self.dir.join("work"))
            .arg("-o")
            .arg(self.dir.join("out/a8"))
            .args(extra)
            .env("FAKE_QEMU_ARGV", argv)
            .env_remove("FAKE_QEMU_EXIT")
            .output()
            .unwrap()
    }
}

impl Drop for FakeLab {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A guest that prints nothing is killed and booted again after `--silence`, not at the
/// timeout, and the failure says which phase was waited on. The saved `.cmd` is a shell
/// command: `bash -n` accepts it, and run by bash it gives QEMU the very arguments `lab run`
/// gave (paths with spaces included).
#[test]
fn a_silent_guest_is_retried_early_and_the_saved_command_pastes() {
    let lab = FakeLab::new("silent");
    let argv = lab.dir.join("argv-run");
    let t0 = std::time::Instant::now();
    let out = lab.run(
        &lab.dir.join("Image"),
        &["--nvme", "3,3", "--silence", "2", "--retries", "1", "--timeout", "600"],
        &argv,
    );
    let elapsed = t0.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(elapsed < std::time::Duration::from_secs(60), "{elapsed:?}\n{stderr}");
    for boot in 1..=2 {
        assert!(
            stderr.contains(&format!(
                "lab: boot {boot} failed: the guest printed nothing for 2 s while waiting for the \
                 kernel to start init"
            )),
            "{stderr}"
        );
    }
    assert!(stderr.contains("note: nothing beside"), "{stderr}");

    let cmd = lab.dir.join("out/a8.cmd");
    let syntax = Command::new("bash").arg("-n").arg(&cmd).output().unwrap();
    assert!(syntax.status.success(), "{}", String::from_utf8_lossy(&syntax.stderr));
    let again = lab.dir.join("argv-pasted");
    let pasted = Command::new("bash")
        .arg(&cmd)
        .env("FAKE_QEMU_ARGV", &again)
        .env("FAKE_QEMU_EXIT", "1")
        .output()
        .unwrap();
    assert!(pasted.status.success(), "{}", String::from_utf8_lossy(&pasted.stderr));
    let words = |p: &Path| -> Vec<String> {
        std::fs::read(p)
            .unwrap()
            .split(|&b| b == 0)
            .filter(|w| !w.is_empty())
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect()
    };
    let (ran, rerun) = (words(&argv), words(&again));
    assert_eq!(ran, rerun);
    assert!(ran.iter().any(|w| w.contains("irqscope lab silent")), "{ran:?}");
    assert!(
        ran.iter().any(|w| w.starts_with("console=ttyAMA0 loglevel=7 ")),
        "{ran:?}"
    );
}

/// A kernel whose NVMe is a module is refused before it boots when no module tree holds it,
/// with the fix; given the tree, it boots (the fake QEMU starts).
#[test]
fn a_kernel_without_its_nvme_module_is_refused_before_booting() {
    let lab = FakeLab::new("nvme");
    let boot = lab.dir.join("boot");
    std::fs::create_dir_all(&boot).unwrap();
    std::fs::rename(lab.dir.join("Image"), boot.join("vmlinuz-9.9.9-arm64")).unwrap();
    std::fs::write(
        boot.join("config-9.9.9-arm64"),
        "CONFIG_NVME_CORE=m\nCONFIG_BLK_DEV_NVME=m\n",
    )
    .unwrap();
    let kernel = boot.join("vmlinuz-9.9.9-arm64");
    let run = |extra: &[&str], argv: &Path| {
        let mut args = vec!["--nvme", "3", "--silence", "1", "--retries", "0"];
        args.extend_from_slice(extra);
        lab.run(&kernel, &args, argv)
    };
    let argv = lab.dir.join("argv");
    let out = run(&[], &argv);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let last = stderr.trim_end().lines().last().unwrap_or("");
    assert!(
        last.contains("CONFIG_BLK_DEV_NVME=m") && last.contains("--modules-dir"),
        "{stderr}"
    );
    assert!(!argv.exists(), "QEMU was started");
    // The module tree of the same build, with nvme.ko and its dependency.
    let tree = lab.dir.join("lib/modules/9.9.9-arm64");
    let host = tree.join("kernel/drivers/nvme/host");
    std::fs::create_dir_all(&host).unwrap();
    std::fs::write(host.join("nvme.ko"), b"\0depends=nvme-core\0").unwrap();
    std::fs::write(host.join("nvme-core.ko"), b"\0depends=\0").unwrap();
    let out = run(&["--modules-dir", tree.to_str().unwrap()], &argv);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("NVMe is a module"), "{stderr}");
    assert!(argv.exists(), "QEMU was not started:\n{stderr}");
}

/// arm64 presets boot in qemu-system-aarch64 (QEMU virt expresses their clusters): the x86
/// emulator is refused with words about the architecture, and the default emulator takes them
/// (the run then stops at the missing busybox, after the machine and kernel were accepted).
#[test]
fn arm64_presets_are_refused_for_x86_qemu_and_accepted_for_aarch64() {
    let lab = FakeLab::new("preset");
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_irqscope"))
            .args([
                "lab",
                "run",
                "ampere-altra-q80",
                "--nvme",
                "3",
                "--busybox",
                "/nonexistent/busybox",
            ])
            .arg("--kernel")
            .arg(lab.dir.join("Image"))
            .arg("--work-dir")
            .arg(lab.dir.join("work"))
            .args(extra)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, stderr) = run(&["--qemu", "qemu-system-x86_64"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("arm64") && stderr.contains("qemu-system-aarch64 -M virt"),
        "{stderr}"
    );
    assert!(!stderr.contains("cluster"), "{stderr}");
    let (code, stderr) = run(&[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr
            .trim_end()
            .ends_with("busybox /nonexistent/busybox: no such file"),
        "{stderr}"
    );
    // GICv2m reaches 8 CPUs: an 80-CPU machine is refused with the reason and the way out.
    let (code, stderr) = run(&["--its", "off"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("at most 8 CPUs") && stderr.contains("--its on"),
        "{stderr}"
    );
}
