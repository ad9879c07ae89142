//! Running the `irqscope` binary from integration tests.

use std::process::Command;

/// Run `irqscope ARGS`, expect success, return standard output.
pub fn irqscope(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_irqscope"))
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "irqscope {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
