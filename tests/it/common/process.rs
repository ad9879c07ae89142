//! Child processes and ports for tests that run real servers, agents and browsers.

use std::path::PathBuf;
use std::process::Child;

/// The first of `names` found on `PATH`.
pub fn find_program(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .find(|p| p.is_file())
}

/// A loopback port free right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child process killed (and reaped) when the test lets go of it, even on panic.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A child started as the leader of a process group of its own (`Command::process_group(0)`)
/// whose whole group is killed when the test lets go of it, so servers that fork workers
/// (nginx) leave none behind.
pub struct KillGroupOnDrop(pub Child);

impl KillGroupOnDrop {
    /// The live (not zombie) processes of the group, read from `/proc/*/stat`.
    pub fn members(pgid: u32) -> Vec<u32> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(|e| {
            let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // pid (comm) state ppid pgrp ...: comm may hold spaces, so read after its ')'.
            let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
            let (state, pgrp) = (fields.first()?, fields.get(2)?.parse::<u32>().ok()?);
            (pgrp == pgid && *state != "Z").then_some(pid)
        })
        .collect()
    }
}

impl Drop for KillGroupOnDrop {
    fn drop(&mut self) {
        let pgid = self.0.id();
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{pgid}")])
            .status();
        let _ = self.0.wait();
    }
}
