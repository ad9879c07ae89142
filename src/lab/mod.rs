//! The lab: real kernels booted in QEMU on a scenario's machine, and their placements checked
//! against the models.
//!
//! `qemu` turns a validated topology and NVMe list into a QEMU x86 command line (or refuses the
//! shapes QEMU cannot express), `initramfs` builds the busybox initramfs the guest boots into,
//! and `run` drives the boots (downloads, retries, progress). `run` is the one part that starts
//! processes and reads the clock; it sits at the top beside the binaries, nothing else in the
//! library calls it, and nothing else needs QEMU.
//!
//! [`generation`] is the table of kernel releases → the model generation that placed their
//! interrupts; [`check`] runs `irqscope lab check` on an agent capture. The model itself (the
//! narrowed non-managed masks, parking, hotplug CPUs, held vectors) is shared with live mode in
//! [`crate::analysis::live_vs_model`].

pub mod check;
pub mod console;
pub mod fetch;
pub mod initramfs;
pub mod qemu;
pub mod run;

/// How a kernel gives not-yet-present (hotplug) CPUs a NUMA node. Sysfs does not show it: the
/// node lists hold the CPUs that were brought up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HotplugRule {
    /// x86 `numa_init_array()` (arch/x86/mm/numa.c, up to 6.1 at least): every possible CPU
    /// without a node is dealt round-robin over the online nodes, from the first one.
    RoundRobinOnlineNodes,
    /// The x86 topology code of 6.12 (`topology_register_apic()`) does not count MADT entries that are neither enabled nor online-capable (QEMU 7.2's
    /// hotplug slots): possible = present.
    IgnoreDisabled,
}

impl HotplugRule {
    pub fn describe(self) -> &'static str {
        match self {
            HotplugRule::RoundRobinOnlineNodes => {
                "hotplug CPUs dealt round-robin over the online nodes (numa_init_array())"
            }
            HotplugRule::IgnoreDisabled => {
                "CPUs possible but not present left out, as this kernel leaves out QEMU's disabled MADT entries (online-capable hotplug slots of real firmware would count, on nodes sysfs does not show)"
            }
        }
    }
}

/// What a kernel release tells about the model to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generation {
    pub release: (u32, u32),
    pub variant: &'static str,
    pub sort: &'static str,
    /// `None`: this release's rule is not known (a warning, the snapshot's nodes are kept).
    pub hotplug: Option<HotplugRule>,
}

/// `6.1.0-57-amd64`, `6.12.107+deb12-cloud-amd64`, `7.2.13+deb14-cloud-amd64`, `v6.9-rc1` →
/// (major, minor).
pub(crate) fn parse_release(release: &str) -> Option<(u32, u32)> {
    let r = release.trim().trim_start_matches('v');
    let mut parts = r.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    (major > 0 && major < 100 && minor < 1000).then_some((major, minor))
}

/// The release table. Sources:
/// - sort: `heap-v5.1` before 6.9 (lib/sort.c of v5.1); `heap-v6.9` in 6.9–6.10 (the min-heap
///   rewrite of lib/sort.c merged for v6.9); `heap-v6.11` from 6.11 (the v6.11 lib/sort.c);
///   measured on Debian 6.1.0-57 (heap-v5.1 only) and 6.12.107 (heap-v6.11 only);
/// - variant: `cluster` from v7.0, the release whose merge window took torvalds/linux
///   136114e0abf0 ("Merge tag 'mm-nonmm-stable-2026-02-12-10-48'", the pull that carries
///   "lib/group_cpus: make group CPU cluster aware"; it sits between the v6.20-rc1/v7.0 tags of
///   that window); measured on Debian 7.2.13 (cluster only); `pre-cluster` before;
/// - hotplug: round-robin measured on Debian 6.1 (`numa_init_array()`, there since the x86
///   NUMA unification of 2.6.38; taken from 4.0), disabled MADT entries ignored measured on
///   6.12 (config c7 of the lab; taken for 6.12 and later). Releases 6.2–6.11 lie between the
///   two measurements and the change was not pinned to one release: unknown, with a warning.
pub fn generation(release: (u32, u32)) -> Generation {
    let sort = if release < (6, 9) {
        "heap-v5.1"
    } else if release < (6, 11) {
        "heap-v6.9"
    } else {
        "heap-v6.11"
    };
    let variant = if release < (7, 0) { "pre-cluster" } else { "cluster" };
    let hotplug = if release < (4, 0) {
        None
    } else if release < (6, 2) {
        Some(HotplugRule::RoundRobinOnlineNodes)
    } else if release < (6, 12) {
        None
    } else {
        Some(HotplugRule::IgnoreDisabled)
    };
    Generation {
        release,
        variant,
        sort,
        hotplug,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_parse_and_map() {
        assert_eq!(parse_release("6.1.0-57-amd64"), Some((6, 1)));
        assert_eq!(parse_release("6.12.107+deb12-cloud-amd64"), Some((6, 12)));
        assert_eq!(parse_release("v6.9-rc1"), Some((6, 9)));
        assert_eq!(parse_release("banana"), None);
        assert_eq!(parse_release("6"), None);
        let g = |r| generation(parse_release(r).unwrap());
        assert_eq!(
            (g("6.1.0-57-amd64").variant, g("6.1.0-57-amd64").sort),
            ("pre-cluster", "heap-v5.1")
        );
        assert_eq!(g("6.10.3").sort, "heap-v6.9");
        assert_eq!(
            (g("6.12.107").variant, g("6.12.107").sort),
            ("pre-cluster", "heap-v6.11")
        );
        assert_eq!(
            (g("7.2.13+deb14-cloud-amd64").variant, g("7.2.13").sort),
            ("cluster", "heap-v6.11")
        );
        assert_eq!(g("6.19.1").variant, "pre-cluster");
        assert_eq!(g("6.1.0").hotplug, Some(HotplugRule::RoundRobinOnlineNodes));
        assert_eq!(g("6.12.0").hotplug, Some(HotplugRule::IgnoreDisabled));
        assert_eq!(g("3.10.0").hotplug, None);
        assert_eq!(g("6.8.0").hotplug, None);
    }
}
