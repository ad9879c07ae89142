//! `irqscope lab run` without QEMU: machines and kernels refused before anything starts, and
//! whole runs against a fake QEMU (a shell script that records its arguments and then acts as
//! a guest that prints nothing, one that finished and wrote its captures, or a QEMU that
//! refuses to start). The real boots are `lab_boot`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lab").join(name)
}

/// Machines QEMU cannot build are refused before anything is downloaded or started: exit 2,
/// one line naming the rule.
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
        // Offline CPUs that no maxcpus= brings about: CPU 2 offline, 3 online.
        (
            "name = \"x\"\nnodes = [\"0-7\"]\nsmt = [\"0-1\", \"2-3\", \"4-5\", \"6-7\"]\nonline = \"0-1,3\"\n",
            "maxcpus=3, which brings up CPUs 0-2 (in id order) or 0,2,4 (x86 since 6.5",
        ),
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

/// The fake QEMU. It writes its arguments (NUL-separated) to `$FAKE_QEMU_ARGV`, then, as
/// `$FAKE_QEMU_MODE` says: `exit` (0 at once), `refuse` (QEMU's words on stderr, exit 1),
/// `abort` (QEMU's words, then SIGABRT), `capture` (a guest that finished: `lab: done` on the
/// console, `$FAKE_QEMU_CAPTURE` on both capture ports, as an x86 guest's agent writes them),
/// or by default a guest that prints nothing.
const FAKE_QEMU: &str = r#"#!/bin/sh
printf '%s\0' "$@" > "$FAKE_QEMU_ARGV"
case "$FAKE_QEMU_MODE" in
exit) exit 0 ;;
refuse)
	echo "qemu-system-x86_64: cannot set up guest memory 'mem0': Cannot allocate memory" >&2
	exit 1 ;;
abort)
	echo "qemu-system-x86_64: APIC ID 256 requires x2APIC feature in CPU" >&2
	kill -s ABRT $$ ;;
capture)
	port=0
	for a in "$@"; do
		case "$a" in
		stdio,*logfile=*) port=1; echo "lab: done" | tee "${a##*logfile=}" ;;
		file:*)
			port=$((port + 1))
			if [ $port = 1 ]; then echo "lab: done" > "${a#file:}"
			else cp "$FAKE_QEMU_CAPTURE" "${a#file:}"; fi ;;
		esac
	done
	exit 0 ;;
esac
exec sleep 600
"#;

/// A scratch directory with a space in its path (the saved command line must quote it), a
/// dummy kernel image, busybox and agent, and the fake QEMU.
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
        std::fs::write(dir.join("agent"), b"not an agent").unwrap();
        let qemu = dir.join("fake-qemu");
        std::fs::write(&qemu, FAKE_QEMU).unwrap();
        std::fs::set_permissions(&qemu, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        FakeLab { dir }
    }

    /// `irqscope lab run MACHINE` with the fake QEMU in `mode`, output prefix `out/NAME`.
    /// `capture` writes the t2 capture of Debian 6.12 booted as drawn, `capture-offline` the
    /// one booted with `maxcpus=10`.
    fn run_on(&self, machine: &Path, kernel: &Path, extra: &[&str], argv: &Path, mode: &str) -> Output {
        Command::new(env!("CARGO_BIN_EXE_irqscope"))
            .args(["lab", "run"])
            .arg(machine)
            .arg("--kernel")
            .arg(kernel)
            .arg("--busybox")
            .arg(self.dir.join("busybox"))
            .arg("--agent")
            .arg(self.dir.join("agent"))
            .arg("--qemu")
            .arg(self.dir.join("fake-qemu"))
            .arg("--work-dir")
            .arg(self.dir.join("work"))
            .arg("-o")
            .arg(self.out(machine))
            .args(extra)
            .env("FAKE_QEMU_ARGV", argv)
            .env("FAKE_QEMU_MODE", mode.trim_end_matches("-offline"))
            .env(
                "FAKE_QEMU_CAPTURE",
                match mode {
                    "capture-offline" => data("t2off-612.seq.agent.json"),
                    _ => PathBuf::from(T2_CAPTURE),
                },
            )
            .output()
            .unwrap()
    }

    /// `lab run` of the a8 arm64 machine (no agent goes into its initramfs), the guest silent.
    fn run(&self, kernel: &Path, extra: &[&str], argv: &Path) -> Output {
        self.run_on(&data("a8.toml"), kernel, extra, argv, "silent")
    }

    /// The output prefix of a machine's runs: `out/NAME`, NAME the file's stem.
    fn out(&self, machine: &Path) -> PathBuf {
        self.dir.join("out").join(machine.file_stem().unwrap())
    }

    /// A topology file in the scratch directory.
    fn machine(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.join(format!("{name}.toml"));
        std::fs::write(&p, text).unwrap();
        p
    }

    /// A run of the t2 machine, every CPU online, whose fake guest finished: the machine file,
    /// the fake QEMU's arguments and the run's output.
    fn t2_booted(&self, nvme: &str) -> (PathBuf, PathBuf, Output) {
        let machine = self.machine("t2", &t2_with_online("0-11"));
        let argv = self.dir.join("argv-run");
        let out = self.run_on(&machine, &self.dir.join("Image"), &["--nvme", nvme], &argv, "capture");
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        (machine, argv, out)
    }

    /// Every file of the output directory with its bytes.
    fn outputs(&self) -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(self.dir.join("out"))
            .unwrap()
            .map(|e| e.unwrap())
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        files.sort();
        files
    }
}

impl Drop for FakeLab {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The words a fake QEMU was given.
fn words(p: &Path) -> Vec<String> {
    std::fs::read(p)
        .unwrap()
        .split(|&b| b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect()
}

/// The word after `flag` (`-initrd FILE`).
fn after<'a>(words: &'a [String], flag: &str) -> &'a str {
    let i = words
        .iter()
        .position(|w| w == flag)
        .unwrap_or_else(|| panic!("no {flag}: {words:?}"));
    &words[i + 1]
}

/// The t2 machine booted as drawn on Debian 6.12.117: `lab check` says 58 matched, 0 differ.
const T2_CAPTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/lab/captures/offline-cpus/t2-612.seq.agent.json"
);

/// The t2 machine of the offline-CPU captures (`../shared/lab/captures/offline-cpus/t2.toml`:
/// 16 possible CPUs in 3 nodes, 12 present) with `online` CPUs.
fn t2_with_online(online: &str) -> String {
    let t2 = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/lab/captures/offline-cpus/t2.toml");
    format!("{}online = \"{online}\"\n", std::fs::read_to_string(t2).unwrap())
}

/// A guest that prints nothing is killed and booted again after `--silence`, not at the
/// timeout, and the failure says which phase was waited on.
#[test]
fn a_silent_guest_is_retried_early() {
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
    let ran = words(&argv);
    assert!(
        ran.iter().any(|w| w.starts_with("console=ttyAMA0 loglevel=7 ")),
        "{ran:?}"
    );
}

/// A run that boots (the fake guest finishes) keeps what its saved `.cmd` names: the
/// initramfs and the disk images beside the captures. Pasted into a shell, the command gives
/// QEMU the run's machine, kernel, initramfs and disks (paths with spaces included), puts the
/// console on the terminal and writes its captures to `PREFIX.again.*`: the first run's
/// console and captures stay as they were. The run ends with `lab check`'s verdict on its
/// capture.
#[test]
fn a_run_keeps_what_its_command_names_and_ends_with_the_check_verdict() {
    let lab = FakeLab::new("again");
    let (machine, argv, out) = lab.t2_booted("5,9,16");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let prefix = lab.out(&machine);
    let p = |suffix: &str| format!("{}.{suffix}", prefix.display());
    // What the run kept, and no staging directory beside it.
    let names: Vec<String> = lab.outputs().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "t2.boot.agent.json",
            "t2.cmd",
            "t2.console",
            "t2.initramfs.cpio.gz",
            "t2.nvme0.img",
            "t2.nvme1.img",
            "t2.nvme2.img",
            "t2.qemu.log",
            "t2.seq.agent.json",
        ],
        "{stderr}"
    );
    let first = lab.outputs();

    let cmd = PathBuf::from(p("cmd"));
    let syntax = Command::new("bash").arg("-n").arg(&cmd).output().unwrap();
    assert!(syntax.status.success(), "{}", String::from_utf8_lossy(&syntax.stderr));
    let again = lab.dir.join("argv-pasted");
    let pasted = Command::new("bash")
        .arg("-c")
        .arg(std::fs::read_to_string(&cmd).unwrap())
        .env("FAKE_QEMU_ARGV", &again)
        .env("FAKE_QEMU_MODE", "capture")
        .env("FAKE_QEMU_CAPTURE", T2_CAPTURE)
        .output()
        .unwrap();
    assert!(pasted.status.success(), "{}", String::from_utf8_lossy(&pasted.stderr));
    assert_eq!(String::from_utf8_lossy(&pasted.stdout), "lab: done\n");
    let (ran, rerun) = (words(&argv), words(&again));
    // The same machine, kernel and command line; the initramfs and disks the run kept.
    for flag in ["-machine", "-smp", "-cpu", "-kernel", "-append", "-m"] {
        assert_eq!(after(&ran, flag), after(&rerun, flag), "{flag}");
    }
    let initrd = after(&rerun, "-initrd");
    assert_eq!(initrd, p("initramfs.cpio.gz"));
    assert!(std::fs::read(initrd).unwrap().starts_with(&[0x1f, 0x8b]));
    let drives: Vec<&String> = rerun.iter().filter(|w| w.starts_with("file=")).collect();
    assert_eq!(drives.len(), 3, "{rerun:?}");
    for (k, d) in drives.iter().enumerate() {
        assert!(d.starts_with(&format!("file={},", p(&format!("nvme{k}.img")))), "{d}");
    }
    assert!(rerun.iter().any(|w| w.contains("irqscope lab again")), "{rerun:?}");
    // The first run's files are as they were; the pasted boot's are new.
    let mut now = lab.outputs();
    now.retain(|(name, _)| !name.contains(".again."));
    assert_eq!(now, first);
    for suffix in ["again.console", "again.boot.agent.json", "again.seq.agent.json"] {
        assert!(Path::new(&p(suffix)).is_file(), "{suffix}");
    }

    // The verdict: lab check on the seq capture (the t2 boot of 6.12.117).
    assert!(
        stdout.contains(&format!("boot it again: sh '{}'", p("cmd"))),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("lab check '{}':\n", p("seq.agent.json"))),
        "{stdout}"
    );
    assert!(
        stdout.contains("\n  model: variant pre-cluster, sort heap-v6.11"),
        "{stdout}"
    );
    assert!(stdout.ends_with("\n  58 matched, 0 differ\n"), "{stdout}");
}

/// A machine with offline CPUs boots with the `maxcpus=` that brings up its online CPUs: in
/// id order with `cpuhp.parallel=0` (x86 kernels since 6.5 would start primary threads first),
/// primary threads first as such, with a note; a guest that brought up others is named in a
/// warning.
#[test]
fn offline_cpus_boot_with_maxcpus() {
    let lab = FakeLab::new("offline");
    for (online, words_wanted, note) in [
        ("0-9", " maxcpus=10 cpuhp.parallel=0", false),
        ("0-8,10", " maxcpus=10", true),
    ] {
        let machine = lab.machine("t2off", &t2_with_online(online));
        let argv = lab.dir.join("argv");
        let out = lab.run_on(
            &machine,
            &lab.dir.join("Image"),
            &["--nvme", "5"],
            &argv,
            "capture-offline",
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.ends_with("\n  58 matched, 0 differ\n"), "{stdout}");
        let append = after(&words(&argv), "-append").to_string();
        assert!(append.ends_with(words_wanted), "{append}");
        assert_eq!(
            stderr.contains("lab: note: maxcpus=10: x86 kernels since 6.5 bring up CPUs 0-8,10"),
            note,
            "{stderr}"
        );
        // The capture's guest (6.12) brought up 0-8,10.
        assert_eq!(
            stderr.contains("warning: the guest brought up CPUs 0-8,10 with maxcpus=10, the machine has 0-9 online"),
            online == "0-9",
            "{stderr}"
        );
    }
}

/// A run that fails leaves an earlier run's files as they were, whether its guest hung or
/// QEMU refused to start; and a QEMU that does not start (it refused the machine, it
/// aborted) ends the run at once, with exit 2 and QEMU's own words, after one boot.
#[test]
fn a_failed_run_leaves_the_earlier_one_and_qemu_start_up_errors_exit_2() {
    let lab = FakeLab::new("rerun");
    let (machine, argv, _) = lab.t2_booted("5");
    let kernel = lab.dir.join("Image");
    let first = lab.outputs();
    assert!(
        first
            .iter()
            .any(|(name, bytes)| name == "t2.seq.agent.json" && bytes.len() > 1000),
        "{first:?}"
    );
    let failed = ["--silence", "1", "--retries", "1"];
    let out = lab.run_on(
        &machine,
        &kernel,
        &[&["--nvme", "5"][..], &failed].concat(),
        &argv,
        "silent",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let mut now = lab.outputs();
    now.retain(|(name, _)| !name.contains(".failed"));
    assert_eq!(now, first, "{stderr}");
    for (mode, said) in [
        ("refuse", "cannot set up guest memory 'mem0': Cannot allocate memory"),
        ("abort", "APIC ID 256 requires x2APIC feature in CPU"),
    ] {
        let t0 = std::time::Instant::now();
        let out = lab.run_on(
            &machine,
            &kernel,
            &[&["--nvme", "5"][..], &failed].concat(),
            &argv,
            mode,
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{mode}: {stderr}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(30), "{mode}: {stderr}");
        let last = stderr.trim_end().lines().last().unwrap_or("");
        assert!(
            last.starts_with("irqscope: QEMU did not start the guest (") && last.ends_with(said),
            "{mode}: {stderr}"
        );
        assert!(!stderr.contains("boot 2"), "{mode}: {stderr}");
        let mut now = lab.outputs();
        now.retain(|(name, _)| !name.contains(".failed"));
        assert_eq!(now, first, "{mode}: {stderr}");
    }
}

/// A run with no controller is refused before anything is downloaded or started.
#[test]
fn a_run_without_a_controller_is_refused_up_front() {
    let lab = FakeLab::new("none");
    let argv = lab.dir.join("argv");
    let out = lab.run(&lab.dir.join("Image"), &["--silence", "1", "--retries", "0"], &argv);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("no NVMe controller to boot with: give --nvme"),
        "{stderr}"
    );
    assert!(!argv.exists(), "QEMU was started");
}

/// A kernel of the other architecture than the machine's is refused before it is downloaded
/// (a package named `…-amd64` for the arm64 a8) or booted (an x86 boot image for a8, an arm64
/// `Image` for an x86 machine), saying the architecture is wrong.
#[test]
fn a_kernel_of_the_other_architecture_is_refused() {
    let lab = FakeLab::new("arch");
    let argv = lab.dir.join("argv");
    let mut bzimage = vec![0u8; 0x400];
    bzimage[0x202..0x206].copy_from_slice(b"HdrS");
    std::fs::write(lab.dir.join("bzImage"), &bzimage).unwrap();
    let mut image = vec![0u8; 0x400];
    image[0x38..0x3c].copy_from_slice(b"ARM\x64");
    std::fs::write(lab.dir.join("arm64-Image"), &image).unwrap();
    let c2 = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/lab/topologies/c2.toml");
    let cases: [(&Path, PathBuf, &str); 3] = [
        (
            &data("a8.toml"),
            PathBuf::from("linux-image-6.12.*+deb12-cloud-amd64"),
            "linux-image-6.12.*+deb12-cloud-amd64 is a package for x86_64 (amd64), and the machine \
             is arm64: it boots arm64 kernels in qemu-system-aarch64 (name the arm64 package, as \
             linux-image-6.12.*+deb12-cloud-arm64)",
        ),
        (
            &data("a8.toml"),
            lab.dir.join("bzImage"),
            "bzImage is built for x86_64, and the machine is arm64",
        ),
        (
            &c2,
            lab.dir.join("arm64-Image"),
            "arm64-Image is built for arm64, and the machine is x86_64",
        ),
    ];
    for (machine, kernel, said) in cases {
        let out = lab.run_on(machine, &kernel, &["--nvme", "3"], &argv, "exit");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        let last = stderr.trim_end().lines().last().unwrap_or("");
        assert!(
            last.starts_with("irqscope: wrong architecture: ") && last.contains(said),
            "{said}: {stderr}"
        );
        assert!(!stderr.contains("downloading"), "{stderr}");
        assert!(!argv.exists(), "QEMU was started");
    }
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
