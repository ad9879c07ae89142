//! Hostile C: what a stranger's patch could do to the machine that builds and runs it, each
//! tried for real and each contained with a clear error (exit 2) and nothing left behind. The
//! patches are written here at run time (a block of C inserted after a line of the tree's own
//! lib/group_cpus.c), never kernel text kept in the repository.
//!
//! One build holds the run-time cases, picked by the group count asked: a fork bomb, a read
//! of a file outside the tree printed as the answer, a write of a file outside, a connection
//! to a port this test listens on, an exec of /bin/sh, a 10 GB allocation, a loop. Compile-
//! time cases build apart: `#include "/dev/zero"`, and an include of a secret file.

use crate::common::fs::Scratch;
use crate::kernel_c::{build_patched, irqscope, patched, tree};
use std::path::Path;
use std::time::{Duration, Instant};

/// The line of the tree's group_cpus_evenly() the hostile block goes after.
const ENTRY: &str = "\tif (numgrps == 0)\n\t\treturn NULL;\n\n\tif (!zalloc_cpumask_var(&nmsk, GFP_KERNEL))";

/// Processes whose command line names `needle` (a cache path, unique to one test), with their
/// ids.
fn processes_naming(needle: &str) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(needle) {
            found.push((pid, cmd));
        }
    }
    found
}

/// Processes running a program built under `dir` (their `/proc/PID/exe` is one of its files,
/// by device and inode, whatever namespace they run in), with their command lines. Only this
/// test's builds live there, so harnesses other tests start at the same time never count.
pub(crate) fn processes_running_from(dir: &Path) -> Vec<(u32, String)> {
    use std::os::unix::fs::MetadataExt;
    let mut files = std::collections::BTreeSet::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                todo.push(e.path());
            } else if m.is_file() {
                files.insert((m.dev(), m.ino()));
            }
        }
    }
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(exe) = std::fs::metadata(e.path().join("exe")) else {
            continue;
        };
        if files.contains(&(exe.dev(), exe.ino())) {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            found.push((pid, String::from_utf8_lossy(&cmd).replace('\0', " ")));
        }
    }
    found
}

/// The hostile block: C statements run when `numgrps` is one of the cases' numbers.
fn hostile_block(secret: &Path, outside: &Path, shell_out: &Path, port: u16, token: &str) -> String {
    format!(
        "\tif (numgrps == 101) {{ /* fork bomb */\n\
         \t\tint i;\n\
         \t\tfor (i = 0; i < 20; i++)\n\
         \t\t\tif (fork() == 0)\n\
         \t\t\t\tfor (;;)\n\
         \t\t\t\t\tpause();\n\
         \t}}\n\
         \tif (numgrps == 102) {{ /* read a file outside and print it as the answer */\n\
         \t\tchar b[256] = {{0}};\n\
         \t\tlong fd = syscall(SYS_openat, -100, \"{secret}\", 0);\n\
         \t\tif (fd >= 0 && syscall(SYS_read, fd, b, sizeof(b) - 1) > 0) {{\n\
         \t\t\tprintf(\"%s\\nmasks %s\\n\", b, b);\n\
         \t\t\tfflush(stdout);\n\
         \t\t}}\n\
         \t}}\n\
         \tif (numgrps == 103) {{ /* write a file outside */\n\
         \t\tlong fd = syscall(SYS_openat, -100, \"{outside}\", 0101, 0644);\n\
         \t\tif (fd >= 0)\n\
         \t\t\tsyscall(SYS_write, fd, \"x\\n\", 2);\n\
         \t}}\n\
         \tif (numgrps == 104) {{ /* connect to 127.0.0.1:{port} */\n\
         \t\tunsigned char sa[16] = {{2, 0, {hi}, {lo}, 127, 0, 0, 1}};\n\
         \t\tlong fd = syscall(SYS_socket, 2, 1, 0);\n\
         \t\tif (fd >= 0)\n\
         \t\t\tsyscall(SYS_connect, fd, sa, sizeof(sa));\n\
         \t}}\n\
         \tif (numgrps == 105) {{ /* a shell */\n\
         \t\tchar *argv[] = {{\"/bin/sh\", \"-c\", \"echo shell > {shell_out}\", NULL}};\n\
         \t\texecve(\"/bin/sh\", argv, NULL);\n\
         \t}}\n\
         \tif (numgrps == 106) {{ /* 10 GB */\n\
         \t\tchar *p = malloc(10UL << 30);\n\
         \t\tmemset(p, 1, 10UL << 30);\n\
         \t}}\n\
         \tif (numgrps == 107) /* a loop */\n\
         \t\tfor (;;)\n\
         \t\t\t;\n\
         \tif (numgrps == 108) {{ /* text of its own where the answer goes */\n\
         \t\tprintf(\"{token}\\n\");\n\
         \t\tfflush(stdout);\n\
         \t}}\n",
        secret = secret.display(),
        outside = outside.display(),
        shell_out = shell_out.display(),
        hi = port >> 8,
        lo = port & 0xff,
    )
}

/// A C that forks, reads, writes, connects, execs, allocates, loops or prints text of its own
/// is ended with exit 2 and a clear error, in bounded time; no process outlives the call, the
/// secret (in a file, or in the C itself) appears in no output, no file is written, no
/// connection arrives.
#[test]
fn hostile_c_at_run_time_is_contained() {
    let Some(t) = tree("IRQSCOPE_KERNEL_C_72") else { return };
    let s = Scratch::new("hostile");
    let cache = s.path().join("cache");
    let token = format!("irqscope-secret-{}-{}", std::process::id(), line!());
    let secret = s.path().join("secret.txt");
    std::fs::write(&secret, format!("{token}\n")).unwrap();
    let outside = s.path().join("written-by-the-c");
    let shell_out = s.path().join("written-by-the-shell");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let to = format!(
        "\tif (numgrps == 0)\n\t\treturn NULL;\n{}\n\tif (!zalloc_cpumask_var(&nmsk, GFP_KERNEL))",
        hostile_block(&secret, &outside, &shell_out, port, &token)
    );
    let (plain, _) = patched(s.path(), &t, ENTRY, &to);
    let tree = t.to_str().unwrap();
    let patch = plain.to_str().unwrap();
    let (code, out, err) = build_patched(&cache, &t, "hostile", &plain);
    assert_eq!(code, 0, "the hostile C compiles: {out}{err}");
    let cases = [
        (101, "fork bomb", "the sandbox refuses"),
        (102, "read outside", "the sandbox refuses"),
        (103, "write outside", "the sandbox refuses"),
        (104, "connect", "the sandbox refuses"),
        (105, "exec", "the sandbox refuses"),
        (106, "10 GB", "SIGSEGV"),
        (107, "loop", "wall-clock limit"),
        (108, "printed text", "cannot read (line 3 of its reply, "),
    ];
    for (numgrps, what, want) in cases {
        let started = Instant::now();
        let n = numgrps.to_string();
        let (code, out, err) = irqscope(
            &cache,
            &[
                "kernel-c",
                "time",
                tree,
                "--name",
                "hostile",
                "--patch",
                patch,
                "vm-8vcpu-smt2",
                &n,
            ],
        );
        let took = started.elapsed();
        assert_eq!(code, 2, "{what}: {out}{err}");
        assert!(err.contains(want), "{what}: {err}");
        assert!(took < Duration::from_secs(30), "{what}: {took:?}");
        assert!(
            !out.contains(&token) && !err.contains(&token),
            "{what}: the secret came back: {out}{err}"
        );
        // Nothing left running from this test's builds (fork bomb children included).
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let left = processes_running_from(&cache);
            if left.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: processes outlived the call: {left:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(!outside.exists(), "{what}: the C wrote a file outside its tree");
        assert!(!shell_out.exists(), "{what}: a shell ran");
        assert!(listener.accept().is_err(), "{what}: a connection arrived");
    }
}

/// `#include "/dev/zero"` ends at the compiler's memory limit (exit 2 in < 30 s, cc1 never
/// past 2 GiB), and an include of a file outside the tree neither finds it nor repeats it.
#[test]
fn hostile_c_at_compile_time_is_contained() {
    let Some(t) = tree("IRQSCOPE_KERNEL_C_72") else { return };
    let s = Scratch::new("hostile-cc");
    let token = format!("irqscope-secret-{}-{}", std::process::id(), line!());
    let secret = s.path().join("secret.h");
    std::fs::write(&secret, format!("int {token} = ;\n{token}\n")).unwrap();
    let cases = [
        ("zero", "/dev/zero".to_string(), "memory"),
        ("secret", secret.display().to_string(), "does not compile"),
    ];
    for (name, file, want) in cases {
        let dir = s.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let to = ENTRY.replace("return NULL;\n", &format!("return NULL;\n#include \"{file}\"\n"));
        let (plain, _) = patched(&dir, &t, ENTRY, &to);
        let cache = dir.join("cache");
        let cache_s = cache.to_str().unwrap().to_string();
        // Watch the compiler's memory while it runs (cc1 names the scratch tree in its
        // arguments).
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watcher = {
            let done = done.clone();
            std::thread::spawn(move || {
                let mut peak_kib = 0u64;
                while !done.load(std::sync::atomic::Ordering::SeqCst) {
                    for (pid, _) in processes_naming(&cache_s) {
                        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                        if let Some(kib) = status
                            .lines()
                            .find_map(|l| l.strip_prefix("VmPeak:"))
                            .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
                        {
                            peak_kib = peak_kib.max(kib);
                        }
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                peak_kib
            })
        };
        let started = Instant::now();
        let (code, out, err) = build_patched(&cache, &t, name, &plain);
        let took = started.elapsed();
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        let peak_kib = watcher.join().unwrap();
        assert_eq!(code, 2, "{name}: {out}{err}");
        assert!(err.contains(want), "{name}: {err}");
        assert!(took < Duration::from_secs(30), "{name}: {took:?}");
        assert!(peak_kib <= 2 << 20, "{name}: a compiler process reached {peak_kib} KiB");
        assert!(
            !out.contains(&token) && !err.contains(&token),
            "{name}: the secret came back: {err}"
        );
        assert!(
            processes_naming(cache.to_str().unwrap()).is_empty(),
            "{name}: the compiler outlived the call"
        );
    }
}

/// A patch argument is read to its byte limit and no further: `/dev/zero` stops with exit 2.
#[test]
fn a_patch_of_endless_bytes_stops_at_the_limit() {
    let s = Scratch::new("hostile-zero");
    let source = s.path().join("group_cpus.c");
    std::fs::write(
        &source,
        "/* read before the patches */\nstruct cpumask *group_cpus_evenly(unsigned int numgrps);\n",
    )
    .unwrap();
    let started = Instant::now();
    let (code, out, err) = irqscope(
        &s.path().join("cache"),
        &["kernel-c", "build", source.to_str().unwrap(), "--patch", "/dev/zero"],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(err.contains("/dev/zero: more than the"), "{err}");
}

/// `serve` never runs built C without its sandbox: --unconfined is refused, with or without
/// the subcommand's name.
#[test]
fn serve_refuses_unconfined() {
    let s = Scratch::new("hostile-serve");
    for args in [
        &["serve", "--unconfined", "--addr", "127.0.0.1:1"][..],
        &["--unconfined"][..],
    ] {
        let (code, out, err) = irqscope(s.path(), args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains("serve does not take --unconfined"), "{args:?}: {err}");
    }
}
