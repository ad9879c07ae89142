//! The one place C is compiled and run: `cc` for a build ([`compile`]) and the harness
//! process of a build ([`spawn_harness`]). Nothing else in irqscope starts a compiler or
//! built code, so confining them (a sandbox) is a change to this file alone.
//!
//! Neither passes on what the C printed: the compiler's message is the compiler's (the
//! caller cleans it), and the harness's output is read only by the runner's protocol.

use super::Limits;
use std::ffi::OsString;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long one compile may take.
pub const COMPILE_TIME_MAX: Duration = Duration::from_secs(60);

/// Run the system's `cc` with `args` in `dir`, within [`COMPILE_TIME_MAX`].
pub fn compile(dir: &Path, args: &[OsString]) -> std::io::Result<Output> {
    let mut cmd = Command::new("cc");
    cmd.current_dir(dir).args(args).stdin(Stdio::null());
    output_within(&mut cmd, COMPILE_TIME_MAX)
}

/// Start a build's harness under `limits` (the harness sets its address-space and CPU-time
/// limits from its arguments before any kernel code runs), its stdin and stdout piped to the
/// caller and its stderr dropped.
pub(crate) fn spawn_harness(exe: &Path, limits: Limits) -> std::io::Result<Child> {
    Command::new(exe)
        .arg(limits.memory_mib.to_string())
        .arg(limits.cpu_s.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
}

/// Run a command to its end within `limit`, killing it past that.
fn output_within(cmd: &mut Command, limit: Duration) -> std::io::Result<Output> {
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let out = child.wait_with_output();
        let _ = tx.send(());
        out
    });
    if rx.recv_timeout(limit).is_err() {
        // Past the limit: end it the way a shell would (the process is ours, by its id).
        let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
    }
    waiter
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("the waiting thread failed")))
}
