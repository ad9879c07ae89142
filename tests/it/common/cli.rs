//! Running the `irqscope` binary from integration tests.

use std::process::Command;

/// Run `irqscope ARGS`: exit status (-1 when killed by a signal), standard output, standard
/// error.
pub fn irqscope_output(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_irqscope"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

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
