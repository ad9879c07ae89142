//! The one place C is compiled and run: `cc` for a build ([`compile`]) and the harness
//! process of a build ([`spawn_harness`]). Nothing else in irqscope starts a compiler or
//! built code, so their confinement lives here alone.
//!
//! A patch from a mail is hostile until someone has read it, so each step runs in a sandbox
//! of its own (Debian's `bwrap`, bubblewrap): new user, mount, PID, network, IPC and UTS
//! namespaces; no capabilities; an empty environment but `PATH` and `LANG`; a root holding
//! only `/usr` read-only, a private `/tmp` and what the step needs (the compile: the scratch
//! tree read-only and its `build/` directory writable; the harness: the built binary
//! read-only). Run as root, the sandbox is started as `nobody` (uid 65534), so that its
//! process limit binds and nothing it does outside counts as root's. Resource limits are set
//! in the child before `bwrap` runs (`setrlimit` from `pre_exec`, inherited by everything
//! the sandbox starts): address space, processes, file size and CPU time. Each step is its
//! own process group, killed as a group at its deadline; the sandbox's PID namespace ends
//! with its first process, so nothing it started outlives it. The harness also installs a
//! seccomp filter of its own before it reads anything (`kernel-c/harness.c`).
//!
//! `--unconfined` ([`set_unconfined`]) runs both steps with the user's rights (the limits
//! and the process group stay); only the command line offers it, never `serve`.
//!
//! Neither step passes on what the C printed: the compiler's message is the compiler's (the
//! caller keeps only its diagnostics about the scratch tree), and the harness's output is
//! read only by the runner's protocol.

use super::Limits;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, OnceLock};
use std::time::Duration;

/// How long one compile may take.
pub(crate) const COMPILE_TIME_MAX: Duration = Duration::from_secs(60);
/// The address space of every process of a compile (cc1 is the large one).
pub(crate) const COMPILE_MEMORY_MIB: u64 = 2048;
/// The largest file a compile may write (objects, the harness).
const COMPILE_FILE_BYTES_MAX: u64 = 256 << 20;
/// The largest file a harness may write (it writes none: its output is a pipe).
const HARNESS_FILE_BYTES_MAX: u64 = 1 << 20;
/// Processes (threads included) a sandbox's user may have beyond those it has already.
const PROCESSES_MAX: u64 = 256;
/// The most of a compile's output kept (the rest is read and dropped).
const COMPILE_OUTPUT_BYTES_MAX: u64 = 1 << 20;
/// The unprivileged user a sandbox started by root runs as.
const NOBODY: u32 = 65534;

static UNCONFINED: AtomicBool = AtomicBool::new(false);

/// Run every later compile and harness without the sandbox (the command line's
/// `--unconfined`; the caller says so on stderr).
pub fn set_unconfined() {
    UNCONFINED.store(true, Ordering::SeqCst);
}

/// Whether [`set_unconfined`] was called.
pub(crate) fn unconfined() -> bool {
    UNCONFINED.load(Ordering::SeqCst)
}

/// The limits every process of one step runs under.
#[derive(Debug, Clone, Copy)]
struct Rlimits {
    memory_bytes: u64,
    cpu_s: u64,
    file_bytes: u64,
}

/// Where a build's scratch tree goes: `cache/scratch`, but for a sandbox that runs as nobody
/// (irqscope run as root), which may not reach into a cache below a private directory (root's
/// home, a 0700 temporary directory): then a fresh directory of its own in `/tmp`.
pub(crate) fn scratch_base(cache: &Path) -> PathBuf {
    if !unconfined() && running_as_root() {
        PathBuf::from("/tmp")
    } else {
        cache.join("scratch")
    }
}

/// Run the system's `cc` with `args` in `dir`, within [`COMPILE_TIME_MAX`], confined: `dir`
/// (the scratch tree) read-only at its own path, `dir/build` writable.
pub(crate) fn compile(dir: &Path, args: &[OsString]) -> std::io::Result<Output> {
    let limits = Rlimits {
        memory_bytes: COMPILE_MEMORY_MIB << 20,
        cpu_s: COMPILE_TIME_MAX.as_secs(),
        file_bytes: COMPILE_FILE_BYTES_MAX,
    };
    let mut cmd = if unconfined() {
        let mut cmd = Command::new("cc");
        cmd.args(args).current_dir(dir);
        with_limits(&mut cmd, limits, Vec::new(), false);
        cmd
    } else {
        // No `current_dir` on the host side: std changes directory after it has dropped root,
        // and nobody may not reach the scratch tree (a 0700 temporary directory); bwrap's
        // --chdir does it inside, where the tree is bound at its own path.
        let cc = host_cc()?;
        let build = dir.join("build");
        // The compile writes only into build/: as nobody, it must own it.
        if running_as_root() {
            std::os::unix::fs::chown(&build, Some(NOBODY), Some(NOBODY))?;
        }
        let mut sb = Sandbox::new();
        sb.arg("--proc").arg("/proc").arg("--dev").arg("/dev");
        sb.bind_fd("--ro-bind-fd", dir, dir)?;
        sb.bind_fd("--bind-fd", &build, &build)?;
        sb.arg("--chdir").arg(dir);
        let mut cmd = sb.command(&cc, args)?;
        with_limits(&mut cmd, limits, sb.fds, true);
        cmd
    };
    cmd.stdin(Stdio::null());
    output_within(&mut cmd, COMPILE_TIME_MAX)
}

/// Start a build's harness under `limits` (the harness also sets its address-space and
/// CPU-time limits from its arguments, then its seccomp filter, before any kernel code
/// runs), its stdin and stdout piped to the caller and its stderr dropped. The child is the
/// leader of its own process group: end it with [`kill`].
pub(crate) fn spawn_harness(exe: &Path, limits: Limits) -> std::io::Result<Child> {
    let rl = Rlimits {
        memory_bytes: limits.memory_mib << 20,
        cpu_s: limits.cpu_s,
        file_bytes: HARNESS_FILE_BYTES_MAX,
    };
    let harness_args = [
        OsString::from(limits.memory_mib.to_string()),
        OsString::from(limits.cpu_s.to_string()),
    ];
    let mut cmd = if unconfined() {
        let mut cmd = Command::new(exe);
        cmd.args(&harness_args);
        with_limits(&mut cmd, rl, Vec::new(), false);
        cmd
    } else {
        let inside = Path::new("/harness");
        let mut sb = Sandbox::new();
        sb.copy_in(exe, inside)?;
        let mut cmd = sb.command(inside, &harness_args)?;
        with_limits(&mut cmd, rl, sb.fds, true);
        cmd
    };
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
}

/// End a child started here and everything in its process group (for a sandbox: `bwrap`,
/// whose PID namespace ends with it). A child already reaped is left alone, so the id is
/// never another process's.
pub(crate) fn kill(child: &mut Child) {
    if let Ok(None) = child.try_wait() {
        kill_group(child.id());
    }
}

/// SIGKILL to the process group `leader` leads (a child of this process not yet reaped, so
/// the group's id is still its own).
fn kill_group(leader: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(leader as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// A `bwrap` command line being put together.
struct Sandbox {
    args: Vec<OsString>,
    /// Descriptors `bwrap` binds: copies the child keeps across exec ([`with_limits`]).
    fds: Vec<OwnedFd>,
}

impl Sandbox {
    /// The namespaces, the user, the environment and the read-only `/usr` every step has.
    fn new() -> Sandbox {
        let mut sb = Sandbox {
            args: Vec::new(),
            fds: Vec::new(),
        };
        for a in [
            "--unshare-all",
            "--unshare-user",
            "--uid",
            "65534",
            "--gid",
            "65534",
            "--cap-drop",
            "ALL",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
            "--setenv",
            "PATH",
            "/usr/bin:/bin",
            "--setenv",
            "LANG",
            "C",
            "--ro-bind",
            "/usr",
            "/usr",
            "--size",
            "268435456",
            "--tmpfs",
            "/tmp",
        ] {
            sb.arg(a);
        }
        // A merged /usr has /bin, /lib, /lib64 and /sbin as links into it; an older layout
        // has them as directories.
        for top in ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"] {
            let p = Path::new(top);
            match std::fs::read_link(p) {
                Ok(to) => {
                    sb.arg("--symlink").arg(to).arg(top);
                }
                Err(_) if p.is_dir() => {
                    sb.arg("--ro-bind").arg(top).arg(top);
                }
                Err(_) => {}
            }
        }
        sb
    }

    fn arg(&mut self, a: impl AsRef<OsStr>) -> &mut Sandbox {
        self.args.push(a.as_ref().to_os_string());
        self
    }

    /// Bind what `fd` holds open at `dest` (`--ro-bind-fd` or `--bind-fd`): `bwrap` needs no
    /// right to the path the file was opened by (a cache under root's home).
    fn bind_fd(&mut self, how: &str, path: &Path, dest: &Path) -> std::io::Result<()> {
        let fd = open_path(path)?;
        self.arg(how).arg(fd.as_raw_fd().to_string()).arg(dest);
        self.fds.push(fd);
        Ok(())
    }

    /// A read-only, executable copy of the file `path` at `dest`, made by `bwrap` from a
    /// descriptor open for reading: the sandbox's user needs no right to the path (a build
    /// in a cache under root's home).
    fn copy_in(&mut self, path: &Path, dest: &Path) -> std::io::Result<()> {
        let fd = OwnedFd::from(std::fs::File::open(path)?);
        self.arg("--perms").arg("0555");
        self.arg("--ro-bind-data").arg(fd.as_raw_fd().to_string()).arg(dest);
        self.fds.push(fd);
        Ok(())
    }

    /// The command: `bwrap`, these arguments, then `program` and its `args` in the sandbox.
    fn command(&self, program: &Path, args: &[OsString]) -> std::io::Result<Command> {
        let bwrap = probe()?;
        let mut cmd = Command::new(bwrap);
        cmd.args(&self.args).arg("--").arg(program).args(args);
        Ok(cmd)
    }
}

/// Open `path` as a descriptor that names it (O_PATH): no read of its contents.
fn open_path(path: &Path) -> std::io::Result<OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::PATH.bits() as i32)
        .open(path)?;
    Ok(OwnedFd::from(f))
}

fn running_as_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The host's `cc`, followed through its links (Debian's goes through /etc/alternatives,
/// which the sandbox does not show); it must be under /usr, which the sandbox shows.
fn host_cc() -> std::io::Result<PathBuf> {
    let found = on_path("cc").ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))?;
    let real = std::fs::canonicalize(&found)?;
    if !real.starts_with("/usr") {
        return Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            format!(
                "cc is {}, outside /usr, the only tree the compile's sandbox shows",
                real.display()
            ),
        ));
    }
    Ok(real)
}

fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// `bwrap`, once it has shown it can set up a sandbox on this machine (tried once per
/// process); otherwise what is missing.
fn probe() -> std::io::Result<PathBuf> {
    static PROBE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            let bwrap = on_path("bwrap").ok_or_else(|| {
                "bwrap not found: the sandbox for built C needs bubblewrap (Debian: apt-get install \
                 bubblewrap), or run the command line with --unconfined"
                    .to_string()
            })?;
            let sb = Sandbox::new();
            let mut cmd = Command::new(&bwrap);
            cmd.args(&sb.args).arg("--").arg("/usr/bin/true");
            cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
            with_limits(
                &mut cmd,
                Rlimits {
                    memory_bytes: 256 << 20,
                    cpu_s: 10,
                    file_bytes: HARNESS_FILE_BYTES_MAX,
                },
                Vec::new(),
                true,
            );
            let out =
                output_within(&mut cmd, Duration::from_secs(10)).map_err(|e| format!("bwrap does not start: {e}"))?;
            if out.status.success() {
                return Ok(bwrap);
            }
            Err(why_no_sandbox(&String::from_utf8_lossy(&out.stderr)))
        })
        .clone()
        .map_err(|m| std::io::Error::new(std::io::ErrorKind::Unsupported, m))
}

/// What keeps `bwrap` from setting up a sandbox, from the machine's settings and what it
/// said (its own message, not the C's).
fn why_no_sandbox(said: &str) -> String {
    let read = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string());
    let fix = if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        "unprivileged user namespaces are disabled: sysctl kernel.unprivileged_userns_clone=1"
    } else if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        "user namespaces are disabled: sysctl user.max_user_namespaces=10000"
    } else if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        "AppArmor refuses unprivileged user namespaces: sysctl \
         kernel.apparmor_restrict_unprivileged_userns=0, or a profile allowing userns for bwrap"
    } else {
        "the sandbox for built C cannot be set up here"
    };
    let first = said.lines().next().unwrap_or("").chars().take(200).collect::<String>();
    format!("{fix} (bwrap: {first}); or run the command line with --unconfined")
}

/// Every process the child starts runs under `limits` (set between fork and exec); the
/// child leads a process group of its own; the descriptors `bwrap` binds are passed to it;
/// with `drop_root`, a child of root runs as nobody.
fn with_limits(cmd: &mut Command, limits: Rlimits, fds: Vec<OwnedFd>, drop_root: bool) {
    let drop_root = drop_root && running_as_root();
    let uid = if drop_root {
        NOBODY
    } else {
        rustix::process::getuid().as_raw()
    };
    if drop_root {
        // std drops root's supplementary groups with it.
        cmd.uid(NOBODY).gid(NOBODY);
    }
    // NPROC counts every task of the user (its other processes too): this many more.
    let processes = tasks_of(uid) + PROCESSES_MAX;
    cmd.process_group(0);
    let set_all = move || -> std::io::Result<()> {
        use rustix::process::{setrlimit, Resource, Rlimit};
        let set = |what, v: u64| {
            setrlimit(
                what,
                Rlimit {
                    current: Some(v),
                    maximum: Some(v),
                },
            )
        };
        set(Resource::As, limits.memory_bytes)?;
        set(Resource::Cpu, limits.cpu_s)?;
        set(Resource::Fsize, limits.file_bytes)?;
        set(Resource::Nproc, processes)?;
        set(Resource::Core, 0)?;
        for fd in &fds {
            rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?;
        }
        Ok(())
    };
    // The one unsafe call of the crate: code between fork and exec must not allocate or take
    // a lock another thread may hold. The closure makes system calls only (setrlimit, fcntl
    // through rustix) on values computed before the fork.
    #[allow(unsafe_code)]
    // SAFETY: as above; the closure allocates nothing and touches no shared state.
    unsafe {
        cmd.pre_exec(set_all);
    }
}

/// The tasks (threads) `uid` has now, as RLIMIT_NPROC counts them.
fn tasks_of(uid: u32) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    dir.flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == uid))
        .map(|e| std::fs::read_dir(e.path().join("task")).map_or(1, |t| t.count() as u64))
        .sum()
}

/// Run a command to its end within `limit`, killing its process group past that; at most
/// [`COMPILE_OUTPUT_BYTES_MAX`] of each output kept.
fn output_within(cmd: &mut Command, limit: Duration) -> std::io::Result<Output> {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let pid = child.id();
    let bounded = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            if let Some(mut r) = r {
                let _ = (&mut r).take(COMPILE_OUTPUT_BYTES_MAX).read_to_end(&mut kept);
                let _ = std::io::copy(&mut r, &mut std::io::sink());
            }
            kept
        })
    };
    let out = bounded(child.stdout.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let err = bounded(child.stderr.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let status = child.wait();
        let _ = tx.send(());
        status
    });
    if rx.recv_timeout(limit).is_err() {
        // Past the limit: the whole group (the waiter has not reaped the leader, so the
        // group id is still the child's).
        kill_group(pid);
    }
    let status = waiter
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("the waiting thread failed")))?;
    Ok(Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}
