//! The kernel release table: which model of each piece of kernel code a release runs, and the
//! range of releases each model holds for. Data only: no model runs here.
//!
//! A release picks, together: the `group_cpus_evenly` variant, the heapsort generation of
//! `lib/sort.c`, the era of `irq_create_affinity_masks()`, the blk-mq mapper of
//! `blk_mq_map_queues()`, the effective-CPU model of each interrupt controller, the x86 hotplug
//! rule and the x86 vector window (how many vectors a device may get on a CPU). Each table row
//! names its sources. Releases are `(major, minor)`; a range holds both of its ends.
//!
//! The table sits below every part that reads it (`scenario`, `analysis`, `lab`, the CLI and
//! the pages), so none of them imports another to learn what a release runs.

use super::blk_mq_cpumap::{HwFallback, Mapper};
use super::group_cpus::Variant;
use super::irq_affinity::AffinityEra;
use super::sort::SortGen;
use super::vector_matrix::{EffectiveModel, VectorWindow};
use crate::topology::{Arch, Irqchip};
use std::fmt;

/// A kernel release, `(major, minor)`.
pub(crate) type Release = (u32, u32);

/// Releases `from ..= to`; an end that is `None` is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub(crate) from: Option<Release>,
    pub(crate) to: Option<Release>,
}

impl Range {
    /// Every release.
    pub(crate) const ALL: Range = Range { from: None, to: None };

    pub(crate) const fn new(from: Option<Release>, to: Option<Release>) -> Range {
        Range { from, to }
    }

    pub(crate) fn contains(&self, r: Release) -> bool {
        self.from.is_none_or(|f| r >= f) && self.to.is_none_or(|t| r <= t)
    }

    /// The releases both ranges hold, `None` when there are none.
    pub(crate) fn intersect(&self, other: &Range) -> Option<Range> {
        let from = match (self.from, other.from) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let to = match (self.to, other.to) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match (from, to) {
            (Some(f), Some(t)) if f > t => None,
            _ => Some(Range { from, to }),
        }
    }
}

fn release_name(r: Release) -> String {
    format!("v{}.{}", r.0, r.1)
}

/// `v6.3 .. v6.16`, `v7.0 ..`, `.. v6.19`, `every release`; one release is `v6.12`.
impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.from, self.to) {
            (None, None) => write!(f, "every release"),
            (Some(a), Some(b)) if a == b => write!(f, "{}", release_name(a)),
            (Some(a), Some(b)) => write!(f, "{} .. {}", release_name(a), release_name(b)),
            (Some(a), None) => write!(f, "{} ..", release_name(a)),
            (None, Some(b)) => write!(f, ".. {}", release_name(b)),
        }
    }
}

/// One row of a table: the model a range of releases runs, and where that is known from.
#[derive(Debug, Clone, Copy)]
pub struct Row<T: 'static> {
    pub(crate) range: Range,
    pub(crate) model: T,
    /// The commit, file or measurement the row rests on.
    pub source: &'static str,
}

const fn row<T>(from: Option<Release>, to: Option<Release>, model: T, source: &'static str) -> Row<T> {
    Row {
        range: Range::new(from, to),
        model,
        source,
    }
}

/// `lib/group_cpus.c` (and before v6.3 the same spreading inside `kernel/irq/affinity.c`).
pub const VARIANTS: &[Row<Variant>] = &[
    row(
        None,
        Some((6, 19)),
        Variant::PreCluster,
        "lib/group_cpus.c from its creation in v6.3 (Debian 6.1.y took it as a stable \
         backport) up to the parent of torvalds/linux 136114e0abf0; the same placement as \
         irq_build_affinity_masks() of v5.x .. v6.2. Measured on Debian 6.1.0-57 and 6.12.107",
    ),
    row(
        Some((7, 0)),
        None,
        Variant::Cluster,
        "torvalds/linux 136114e0abf0 \"lib/group_cpus: make group CPU cluster aware\", carried by \
         the merge of mm-nonmm-stable-2026-02-12 in the v7.0 merge window. Measured on Debian \
         7.2.13",
    ),
];

/// `lib/sort.c`.
pub(crate) const SORTS: &[Row<SortGen>] = &[
    row(
        Some((5, 1)),
        Some((6, 8)),
        SortGen::HeapV5_1,
        "lib/sort.c of v5.1; measured on Debian 6.1.0-57",
    ),
    row(
        Some((6, 9)),
        Some((6, 10)),
        SortGen::HeapV6_9,
        "the min-heap rewrite of lib/sort.c merged for v6.9",
    ),
    row(
        Some((6, 11)),
        None,
        SortGen::HeapV6_11,
        "lib/sort.c of v6.11; measured on Debian 6.12.107 and 7.2.13",
    ),
];

/// `kernel/irq/affinity.c`: `irq_create_affinity_masks()`.
pub(crate) const AFFINITY_ERAS: &[Row<AffinityEra>] = &[
    row(
        None,
        Some((6, 16)),
        AffinityEra::NumGrps,
        "kernel/irq/affinity.c of Debian 6.1.192 and 6.12.x: every set copies this_vecs masks \
         and advances by this_vecs (before v6.3 irq_build_affinity_masks() filled the same \
         slots)",
    ),
    row(
        Some((6, 17)),
        None,
        AffinityEra::NumMasks,
        "\"lib/group_cpus: Let group_cpu_evenly() return the number of initialized masks\" \
         (Daniel Wagner, posted 2025-06-17, Acked-by Thomas Gleixner; in the block tree by \
         2025-07-02, so first in v6.17); kernel/irq/affinity.c of Debian 7.2.13",
    ),
];

/// `block/blk-mq-cpumap.c`: `blk_mq_map_queues()`.
pub(crate) const MAPPERS: &[Row<Mapper>] = &[
    row(
        Some((4, 10)),
        Some((4, 12)),
        Mapper::LegacyV4_10,
        "block/blk-mq-cpumap.c of v4.10 (the version fe631457 fixed)",
    ),
    row(
        Some((4, 13)),
        Some((5, 0)),
        Mapper::LegacyV4_13,
        "torvalds/linux fe631457 \"blk-mq: map all HWQ also in hyperthreaded system\" (v4.13)",
    ),
    row(
        Some((5, 1)),
        Some((6, 2)),
        Mapper::LegacyV5_1,
        "block/blk-mq-cpumap.c of v5.1; still in Debian 6.1.192 (get_first_sibling())",
    ),
    row(
        Some((6, 3)),
        Some((6, 16)),
        Mapper::V6_3,
        "\"blk-mq: build default queue map via group_cpus_evenly()\" (v6.3); Debian 6.12.x",
    ),
    row(
        Some((6, 17)),
        None,
        Mapper::Current,
        "the same nummasks commit as the affinity era (masks[queue % nr_masks]); Debian 7.2.13",
    ),
];

/// The driver-side map from IRQ affinity (NVMe): what a queue whose vector has no mask does.
pub(crate) const HW_FALLBACKS: &[Row<HwFallback>] = &[
    row(
        None,
        Some((6, 13)),
        HwFallback::Clear,
        "block/blk-mq-pci.c blk_mq_pci_map_queues(): WARN_ON_ONCE(nr_queues > 1) and \
         blk_mq_clear_mq_map(); drivers/nvme/host/pci.c of Debian 6.12.118 calls it",
    ),
    row(
        Some((6, 14)),
        None,
        HwFallback::MapQueues,
        "blk_mq_map_hw_queues() (block/blk-mq-cpumap.c, the bus's irq_get_affinity(), v6.14) \
         falls back to blk_mq_map_queues(); drivers/nvme/host/pci.c of Debian 7.2.13 calls it",
    ),
];

/// The x86 vector window: `FIRST_SYSTEM_VECTOR` and the system vectors inside the window.
pub(crate) const VECTOR_WINDOWS: &[Row<VectorWindow>] = &[
    row(
        None,
        Some((6, 7)),
        VectorWindow {
            first_system_vector: 0xec,
            move_cleanup_vector: true,
        },
        "arch/x86/include/asm/irq_vectors.h of Debian 6.1.192: FIRST_SYSTEM_VECTOR is \
         LOCAL_TIMER_VECTOR (0xec) and IRQ_MOVE_CLEANUP_VECTOR (0x20) is a system vector inside \
         the window (idt.c apic_idts)",
    ),
    row(
        Some((6, 8)),
        Some((6, 9)),
        VectorWindow {
            first_system_vector: 0xec,
            move_cleanup_vector: false,
        },
        "\"x86/vector: Replace IRQ_MOVE_CLEANUP_VECTOR with a timer\" (v6.8) frees 0x20",
    ),
    row(
        Some((6, 10)),
        None,
        VectorWindow {
            first_system_vector: 0xeb,
            move_cleanup_vector: false,
        },
        "\"x86/irq: Reserve a per CPU IDT vector for posted MSIs\" (v6.10): FIRST_SYSTEM_VECTOR \
         is POSTED_MSI_NOTIFICATION_VECTOR (0xeb) whether CONFIG_X86_POSTED_MSI is set or not \
         (irq_vectors.h of Debian 6.12.x and 7.2.13)",
    ),
];

/// How a kernel gives not-yet-present (hotplug) CPUs a NUMA node. Sysfs does not show it: the
/// node lists hold the CPUs that were brought up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HotplugRule {
    /// x86 `numa_init_array()` (arch/x86/mm/numa.c, up to 6.1 at least): every possible CPU
    /// without a node is dealt round-robin over the online nodes, from the first one.
    RoundRobinOnlineNodes,
    /// The x86 topology code of 6.12 (`topology_register_apic()`) does not count MADT entries
    /// that are neither enabled nor online-capable (QEMU 7.2's hotplug slots): possible =
    /// present.
    IgnoreDisabled,
}

impl HotplugRule {
    pub(crate) fn describe(self) -> &'static str {
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

/// The x86 hotplug rule. `None`: not known for these releases (a warning; the snapshot's nodes
/// are kept). Round-robin measured on Debian 6.1 (`numa_init_array()`, there since the x86 NUMA
/// unification of 2.6.38; taken from 4.0); disabled MADT entries ignored, measured on 6.12
/// (config c7 of the lab; taken for 6.12 and later). 6.2 .. 6.11 lie between the two
/// measurements and the change was not pinned to one release.
pub(crate) const HOTPLUG: &[Row<Option<HotplugRule>>] = &[
    row(None, Some((3, 99)), None, "not measured"),
    row(
        Some((4, 0)),
        Some((6, 1)),
        Some(HotplugRule::RoundRobinOnlineNodes),
        "numa_init_array() (arch/x86/mm/numa.c); lab config c7 on Debian 6.1",
    ),
    row(
        Some((6, 2)),
        Some((6, 11)),
        None,
        "between the two measurements; not pinned to one release",
    ),
    row(
        Some((6, 12)),
        None,
        Some(HotplugRule::IgnoreDisabled),
        "topology_register_apic(); lab config c7 on Debian 6.12",
    ),
];

/// The NUMA node `hv_pci_assign_numa_node()` (drivers/pci/controller/pci-hyperv.c) leaves a
/// Hyper-V vPCI device the host gives no NUMA information (no `HV_PCI_DEVICE_FLAG_NUMA_AFFINITY`,
/// or a node past `num_possible_nodes()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HvPciNode {
    /// The node stays what the PCI core set: on x86 the bus's `pci_sysdata.node`, which the
    /// driver's zeroed bus structure leaves 0; on arm64 `NUMA_NO_NODE`.
    Unset,
    /// `set_dev_node(&dev->dev, 0)` before the affinity check: node 0 on every architecture.
    Zero,
}

impl HvPciNode {
    /// The node a device without NUMA information gets on `arch` (`None`: `NUMA_NO_NODE`).
    pub(crate) fn node(self, arch: Arch) -> Option<u32> {
        match (self, arch) {
            (HvPciNode::Zero, _) | (HvPciNode::Unset, Arch::X86_64) => Some(0),
            (HvPciNode::Unset, Arch::Arm64) => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            HvPciNode::Unset => "hv-pci unset node",
            HvPciNode::Zero => "hv-pci node 0",
        }
    }
}

/// Hyper-V vPCI devices without NUMA information. Stable series took the fix as a backport in a
/// point release (the 5.15, 6.18 and 6.19 stable reviews of 2026-05-30 carry it); a release
/// here is `(major, minor)`, so such a series keeps the row of its minor.
pub(crate) const HV_PCI_NODES: &[Row<HvPciNode>] = &[
    row(
        None,
        Some((6, 19)),
        HvPciNode::Unset,
        "hv_pci_assign_numa_node() sets a node only when the host gives one (since 999dd956d838 \
         \"PCI: hv: Add support for protocol 1.3 and support PCI_BUS_RELATIONS2\")",
    ),
    row(
        Some((7, 0)),
        None,
        HvPciNode::Zero,
        "torvalds/linux 7b3b1e5a87b2 \"PCI: hv: Set default NUMA node to 0 for devices without \
         affinity info\" (Long Li), pulled as hyperv-fixes for v7.0-rc8 (merge 86782c16a81f, \
         2026-04-07)",
    ),
];

/// The releases a Hyper-V vPCI node rule holds for.
pub(crate) fn hv_pci_node_range(rule: HvPciNode) -> Option<Range> {
    range_of(HV_PCI_NODES, &rule)
}

fn lookup<T: Copy>(rows: &'static [Row<T>], release: Release) -> Option<&'static Row<T>> {
    rows.iter().find(|r| r.range.contains(release))
}

/// The range of releases a model of `rows` holds for (`None`: no release runs it).
fn range_of<T: PartialEq>(rows: &'static [Row<T>], model: &T) -> Option<Range> {
    rows.iter().find(|r| r.model == *model).map(|r| r.range)
}

/// The releases a `group_cpus_evenly` variant holds for; `None` for the rotation patches,
/// which no release carries.
pub fn variant_range(v: Variant) -> Option<Range> {
    range_of(VARIANTS, &v)
}

/// The releases a heapsort generation holds for.
pub(crate) fn sort_range(s: SortGen) -> Option<Range> {
    range_of(SORTS, &s)
}

/// The releases an `irq_create_affinity_masks()` era holds for.
pub(crate) fn affinity_range(e: AffinityEra) -> Option<Range> {
    range_of(AFFINITY_ERAS, &e)
}

/// The releases a blk-mq mapper holds for.
pub(crate) fn mapper_range(m: Mapper) -> Option<Range> {
    range_of(MAPPERS, &m)
}

/// The releases an effective-CPU model holds for on a controller (`None`: the model is not the
/// code that controller runs in any release).
/// - x86 local APIC: the vector matrix of kernel/irq/matrix.c, there since v4.15 ("genirq:
///   Add bitmap allocator" and the x86 vector rework of that release);
/// - GICv2m and SPIs through a hypervisor's PCI: `gic_set_affinity()` fires an SPI on the first
///   online CPU of its mask (drivers/irqchip/irq-gic-v3.c, irq-gic.c) in every release here;
/// - GICv3 ITS: `its_select_cpu()` picks the least-loaded CPU of the mask by the per-CPU LPI
///   counts (drivers/irqchip/irq-gic-v3-its.c), the `arm64-its` model, from v5.8 (read in
///   Debian's 6.12 and 7.2; `docs/effective-cpu.md`); first-cpu is not what an ITS kernel does;
/// - GICv5: `gicv5_iri_irq_set_affinity()` (drivers/irqchip/irq-gic-v5.c) fires SPIs and LPIs
///   on the first online CPU of the mask, the `arm64-gicv5` model, from v6.17, where the driver
///   first appears ([`GICV5_FROM`]).
pub(crate) fn effective_range(model: EffectiveModel, chip: Irqchip) -> Option<Range> {
    match (model, chip) {
        (EffectiveModel::X86Matrix, Irqchip::Apic) => Some(Range::new(Some((4, 15)), None)),
        (EffectiveModel::Arm64Its, Irqchip::GicIts) => Some(Range::new(Some((5, 8)), None)),
        (EffectiveModel::Arm64GicV5, Irqchip::GicV5) => Some(Range::new(Some(GICV5_FROM), None)),
        (EffectiveModel::FirstCpu, Irqchip::GicV2m | Irqchip::GicSpi) => Some(Range::ALL),
        _ => None,
    }
}

/// The first release with a GICv5 driver: the host driver (irq-gic-v5.c, -irs.c, -its.c,
/// -iwb.c, "irqchip/gic-v5: Add GICv5 PPI support" .. "arm64: Kconfig: Enable GICv5") came in
/// through the kvmarm-6.17 pull ("KVM/arm64 changes for 6.17, round #1"). Before it no kernel
/// drives a GICv5, so an answer for a `gic-v5` machine holds from here on.
pub(crate) const GICV5_FROM: Release = (6, 17);

/// Everything a kernel release picks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generation {
    pub(crate) release: Release,
    pub variant: &'static str,
    pub sort: &'static str,
    pub affinity: AffinityEra,
    pub mapper: Mapper,
    pub(crate) hw_fallback: HwFallback,
    pub(crate) window: VectorWindow,
    /// `None`: this release's rule is not known (a warning, the snapshot's nodes are kept).
    pub(crate) hotplug: Option<HotplugRule>,
    /// The node of a Hyper-V vPCI device the host gives no NUMA information.
    pub(crate) hv_pci_node: HvPciNode,
}

impl Generation {
    /// The effective-CPU model of a machine with this controller.
    pub(crate) fn effective(&self, chip: Irqchip) -> EffectiveModel {
        EffectiveModel::for_irqchip(chip)
    }
}

/// The newest release the table knows a row for in every column: what the command line and the
/// pages run when no kernel is named (`cluster`, `heap-v6.11`, `nummasks`, the `current`
/// mapper, the v6.10 vector window).
pub const NEWEST: Release = (7, 2);

/// `6.1.0-57-amd64`, `6.12.107+deb12-cloud-amd64`, `7.2.13+deb14-cloud-amd64`, `v6.9-rc1`,
/// `6.12` → (major, minor).
pub fn parse_release(release: &str) -> Option<Release> {
    let r = release.trim().trim_start_matches('v');
    let mut parts = r.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    (major > 0 && major < 100 && minor < 1000).then_some((major, minor))
}

/// What `release` runs. Releases before the first row of a column take that column's oldest
/// model (the tables start where the models do).
pub fn generation(release: Release) -> Generation {
    fn pick<T: Copy>(rows: &'static [Row<T>], release: Release) -> T {
        lookup(rows, release).unwrap_or(&rows[0]).model
    }
    Generation {
        release,
        variant: pick(VARIANTS, release).name(),
        sort: pick(SORTS, release).name(),
        affinity: pick(AFFINITY_ERAS, release),
        mapper: pick(MAPPERS, release),
        hw_fallback: pick(HW_FALLBACKS, release),
        window: pick(VECTOR_WINDOWS, release),
        hotplug: lookup(HOTPLUG, release).and_then(|r| r.model),
        hv_pci_node: pick(HV_PCI_NODES, release),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each column's rows are in release order, do not overlap and leave no gap from their
    /// first release on: a release finds exactly one row.
    #[test]
    fn every_column_covers_releases_once() {
        fn check<T: Copy + fmt::Debug>(name: &str, rows: &'static [Row<T>]) {
            for w in rows.windows(2) {
                let (a, b) = (w[0].range, w[1].range);
                let end = a.to.expect("only the last row is open-ended");
                let next = b.from.expect("only the first row is open at its start");
                let follows = next == (end.0, end.1 + 1) || (next.1 == 0 && next.0 == end.0 + 1);
                assert!(follows, "{name}: {a} then {b}");
            }
            for major in 4..8 {
                for minor in 0..30 {
                    let n = rows.iter().filter(|r| r.range.contains((major, minor))).count();
                    assert!(n <= 1, "{name}: v{major}.{minor} in {n} rows");
                }
            }
            assert!(rows.last().unwrap().range.to.is_none(), "{name} reaches today");
            for r in rows {
                let words = r.source.split_whitespace().count();
                assert!(
                    words >= 3,
                    "{name}: {} does not say where it is known from: {:?}",
                    r.range,
                    r.source
                );
            }
        }
        check("variants", VARIANTS);
        check("sorts", SORTS);
        check("affinity", AFFINITY_ERAS);
        check("mappers", MAPPERS);
        check("hw fallbacks", HW_FALLBACKS);
        check("windows", VECTOR_WINDOWS);
        check("hv-pci nodes", HV_PCI_NODES);
    }

    /// A Hyper-V vPCI device without NUMA information: node 0 from v7.0; before, node 0 on x86
    /// (the zeroed bus data) and NUMA_NO_NODE on arm64.
    #[test]
    fn hv_pci_devices_get_node_0_from_v7_0() {
        let node = |r, a| generation(r).hv_pci_node.node(a);
        assert_eq!(node((6, 19), Arch::Arm64), None);
        assert_eq!(node((6, 12), Arch::X86_64), Some(0));
        assert_eq!(node((7, 0), Arch::Arm64), Some(0));
        assert_eq!(node((7, 2), Arch::X86_64), Some(0));
        assert_eq!(hv_pci_node_range(HvPciNode::Zero).unwrap().to_string(), "v7.0 ..");
    }

    #[test]
    fn releases_parse_and_map() {
        assert_eq!(parse_release("6.1.0-57-amd64"), Some((6, 1)));
        assert_eq!(parse_release("6.12.107+deb12-cloud-amd64"), Some((6, 12)));
        assert_eq!(parse_release("v6.9-rc1"), Some((6, 9)));
        assert_eq!(parse_release("6.12"), Some((6, 12)));
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
        // The eras of irq_create_affinity_masks() and blk_mq_map_queues() change together.
        assert_eq!(
            (g("6.12").affinity, g("6.12").mapper),
            (AffinityEra::NumGrps, Mapper::V6_3)
        );
        assert_eq!(
            (g("6.16").affinity, g("6.17").affinity),
            (AffinityEra::NumGrps, AffinityEra::NumMasks)
        );
        assert_eq!(g("6.17").mapper, Mapper::Current);
        assert_eq!(g("6.1").mapper, Mapper::LegacyV5_1);
        assert_eq!(
            (g("6.12").hw_fallback, g("7.2").hw_fallback),
            (HwFallback::Clear, HwFallback::MapQueues)
        );
        // Vectors a device may get per CPU without a legacy PIC: 202, 203, 202.
        let per_cpu = |r| g(r).window.vectors_per_cpu(false);
        assert_eq!(
            (per_cpu("6.1"), per_cpu("6.8"), per_cpu("6.9"), per_cpu("6.12")),
            (202, 203, 203, 202)
        );
        assert_eq!(g("6.12").window.vectors_per_cpu(true), 201);
    }

    #[test]
    fn ranges_print_and_intersect() {
        let r = |a, b| Range::new(a, b);
        assert_eq!(r(Some((6, 3)), Some((6, 16))).to_string(), "v6.3 .. v6.16");
        assert_eq!(r(Some((7, 0)), None).to_string(), "v7.0 ..");
        assert_eq!(r(None, Some((6, 19))).to_string(), ".. v6.19");
        assert_eq!(r(Some((6, 12)), Some((6, 12))).to_string(), "v6.12");
        assert_eq!(Range::ALL.to_string(), "every release");
        let pre = variant_range(Variant::PreCluster).unwrap();
        let sort = sort_range(SortGen::HeapV6_11).unwrap();
        assert_eq!(pre.intersect(&sort).unwrap().to_string(), "v6.11 .. v6.19");
        let cluster = variant_range(Variant::Cluster).unwrap();
        assert_eq!(cluster.intersect(&sort_range(SortGen::HeapV5_1).unwrap()), None);
        assert_eq!(variant_range(Variant::Rotation), None);
        assert!(cluster.contains(NEWEST) && sort.contains(NEWEST));
    }
}
