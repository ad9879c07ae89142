//! A validated machine as QEMU sees it: `-machine`, `-smp`, `-numa` and the NVMe controllers,
//! or a clear refusal of the shapes QEMU 7.2 cannot express. The machine's architecture picks
//! the emulator: x86_64 boots in `qemu-system-x86_64 -M q35`, arm64 in `qemu-system-aarch64 -M
//! virt` with a GICv3 and its ITS (MSIs as LPIs) or, `--its off`, a GICv2 with its GICv2m frame
//! (MSIs as SPIs).
//!
//! QEMU numbers vCPUs socket → (cluster →) core → thread, so the SMT siblings of a core are
//! adjacent (`2k, 2k+1` with two threads) and CPU ids are dense; every core has the same number
//! of threads. On q35 the guest's cluster (L2) is the core; on virt the device tree's `cpu-map`
//! carries sockets, clusters, cores and threads, so clusters of several cores are expressible.
//! The nvme driver asks for `1 + min(max_ioqpairs, possible CPUs)` vectors, the admin queue
//! being the one pre vector (drivers/nvme/host/pci.c, `nvme_setup_irqs()`), so a scenario
//! device maps back to a controller only in that shape.

use crate::topology::{Arch, CpuSet, Irqchip, Topology};

mod devices;
pub use devices::nvme_ioqpairs;
pub(crate) use devices::{slot_devices, DeviceKind, SlotDevice, NVME_MAX};

/// Memory of a node that has CPUs, unless `--node-memory` says otherwise.
pub(crate) const NODE_MEMORY_MIB_DEFAULT: u32 = 512;
/// Memory of a node without CPUs (it exists only through its memory).
pub(crate) const CPULESS_NODE_MEMORY_MIB_DEFAULT: u32 = 256;
/// Guest memory when the machine has one node.
pub(crate) const SINGLE_NODE_MEMORY_MIB: u32 = 1024;
/// QEMU's default MSI-X table size of an NVMe controller.
const MSIX_QSIZE_DEFAULT: u32 = 65;
/// Most CPUs a GICv2 addresses (its 8-bit CPU target lists; QEMU refuses more with
/// `gic-version=2`).
pub(crate) const GICV2_CPUS_MAX: u32 = 8;

/// Why a machine or device list cannot be booted in QEMU (the whole sentence).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unexpressible(pub String);

fn refuse(msg: impl Into<String>) -> Unexpressible {
    Unexpressible(format!("the lab cannot boot this: {}", msg.into()))
}

/// The interrupt controller of an arm64 `virt` guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gic {
    /// `gic-version=3,its=on`: MSIs are LPIs placed by drivers/irqchip/irq-gic-v3-its.c.
    V3Its,
    /// `gic-version=2`: the GICv2m frame turns MSIs into SPIs, routed by `gic_set_affinity()`.
    V2m,
}

/// The emulated board.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    /// `qemu-system-x86_64 -M q35`.
    Q35,
    /// `qemu-system-aarch64 -M virt` with this GIC.
    Virt(Gic),
}

impl Platform {
    /// The QEMU system emulator that boots it.
    pub fn qemu(self) -> &'static str {
        match self {
            Platform::Q35 => "qemu-system-x86_64",
            Platform::Virt(_) => "qemu-system-aarch64",
        }
    }
    /// The Debian package that holds [`Platform::qemu`].
    pub(crate) fn qemu_package(self) -> &'static str {
        match self {
            Platform::Q35 => "qemu-system-x86",
            Platform::Virt(_) => "qemu-system-arm",
        }
    }
    pub(crate) fn arch(self) -> Arch {
        match self {
            Platform::Q35 => Arch::X86_64,
            Platform::Virt(_) => Arch::Arm64,
        }
    }
    /// The guest's console device.
    pub(crate) fn console(self) -> &'static str {
        match self {
            Platform::Q35 => "ttyS0",
            Platform::Virt(_) => "ttyAMA0",
        }
    }
    /// `-machine`.
    fn machine(self) -> &'static str {
        match self {
            Platform::Q35 => "q35",
            Platform::Virt(Gic::V3Its) => "virt,gic-version=3,its=on",
            Platform::Virt(Gic::V2m) => "virt,gic-version=2",
        }
    }
    /// Words for reports: `q35`, `virt with GICv3 ITS`.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Platform::Q35 => "q35",
            Platform::Virt(Gic::V3Its) => "virt, GICv3 with ITS",
            Platform::Virt(Gic::V2m) => "virt, GICv2 with GICv2m",
        }
    }
}

/// Does a QEMU program boot `platform`? Known by its name (`qemu-system-x86_64`,
/// `qemu-system-aarch64`, a path ending so); another name (a wrapper) is taken at its word.
pub(crate) fn qemu_boots(qemu: &str, platform: Platform) -> Result<(), Unexpressible> {
    let name = std::path::Path::new(qemu)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(qemu);
    let other = match platform {
        Platform::Q35 => "aarch64",
        Platform::Virt(_) => "x86_64",
    };
    if name.starts_with("qemu-system-") && name.contains(other) {
        let arch = platform.arch().name();
        return Err(Unexpressible(format!(
            "the machine is {arch}: it boots in {} -M {}, not in {qemu} (leave --qemu out, or name {})",
            platform.qemu(),
            platform.machine().split(',').next().unwrap_or("virt"),
            platform.qemu()
        )));
    }
    Ok(())
}

/// One NUMA node of the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GuestNode {
    /// vCPU indexes (possible CPUs), possibly empty.
    pub(crate) cpus: Vec<u32>,
    /// Memory in MiB; 0 for a memoryless node.
    pub(crate) memory_mib: u32,
}

/// The machine as QEMU's `-machine`/`-smp`/`-numa` options describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestMachine {
    pub platform: Platform,
    pub(crate) sockets: u32,
    /// Clusters per socket (always 1 on q35, where the cluster is the core).
    pub(crate) clusters: u32,
    /// Cores per cluster.
    pub(crate) cores: u32,
    pub(crate) threads: u32,
    /// vCPUs present at boot (`cpus=`); the rest up to `maxcpus` are hotplug slots.
    pub(crate) cpus: u32,
    pub maxcpus: u32,
    /// The CPUs the topology has online, which `kernel_args` bring up.
    pub(crate) online: Vec<u32>,
    /// Kernel command-line words the machine needs (`maxcpus=` for offline CPUs).
    pub(crate) kernel_args: Vec<String>,
    /// Empty for a machine without NUMA.
    pub(crate) nodes: Vec<GuestNode>,
    /// Off-diagonal distances `(src, dst, value)`, empty when all are the defaults 10/20.
    pub(crate) distances: Vec<(u32, u32, u32)>,
    /// What the guest shows differently from the topology (nothing refused, but worth saying).
    pub notes: Vec<String>,
}

fn ids(set: &CpuSet) -> Vec<u32> {
    set.iter().collect()
}

/// The board a topology boots on: its architecture decides the emulator; on arm64 `its` (the
/// `--its` option) or else the machine's controller decides the GIC. A machine whose MSIs are
/// SPIs behind a hypervisor's virtual PCI (`gic-spi`, Azure arm64) has no QEMU counterpart of
/// its own: it boots with an ITS, saying so in a note.
fn platform(t: &Topology, its: Option<bool>, notes: &mut Vec<String>) -> Result<Platform, Unexpressible> {
    if t.arch() == Arch::X86_64 {
        if its.is_some() {
            return Err(refuse(format!(
                "--its chooses the GIC of an arm64 machine; {} is x86_64",
                t.name()
            )));
        }
        return Ok(Platform::Q35);
    }
    let gic = match (its, t.irqchip()) {
        (Some(true), _) => Gic::V3Its,
        (Some(false), _) => Gic::V2m,
        (None, Irqchip::GicV2m) => Gic::V2m,
        (None, Irqchip::GicSpi) => {
            notes.push(format!(
                "{}'s MSIs are SPIs through the hypervisor's virtual PCI, which QEMU virt cannot \
                 build (GICv2m, its only SPI-backed MSI, reaches {GICV2_CPUS_MAX} CPUs; a GICv3 \
                 without ITS has no MSI): booted with an ITS, so masks are the machine's and \
                 effective CPUs the ITS's",
                t.name()
            ));
            Gic::V3Its
        }
        (None, Irqchip::GicV5) => {
            notes.push(format!(
                "{} has a GICv5, which the lab's QEMU virt does not build: booted with a GICv3 \
                 ITS, so masks are the machine's and effective CPUs the ITS's",
                t.name()
            ));
            Gic::V3Its
        }
        (None, _) => Gic::V3Its,
    };
    let n = t.possible().weight();
    if gic == Gic::V2m && n > GICV2_CPUS_MAX {
        return Err(refuse(format!(
            "{n} CPUs with GICv2m: a GICv2 addresses at most {GICV2_CPUS_MAX} CPUs, and a GICv3 \
             without ITS offers no MSI (NVMe falls back to one shared interrupt per controller); \
             boot it with the ITS (--its on)"
        )));
    }
    Ok(Platform::Virt(gic))
}

/// The guest machine for a topology, or why QEMU cannot build it. `node_memory_mib`, when
/// given, sets every node's memory (0: memoryless), since topologies do not carry memory;
/// `its` chooses an arm64 machine's GIC (None: from the machine's controller).
pub fn guest_machine(
    t: &Topology,
    node_memory_mib: Option<&[u32]>,
    its: Option<bool>,
) -> Result<GuestMachine, Unexpressible> {
    let mut notes = Vec::new();
    let platform = platform(t, its, &mut notes)?;
    let virt = platform != Platform::Q35;
    let (n, cpus) = dense_cpu_ids(t, virt)?;
    let threads = threads_per_core(t, cpus, virt)?;
    let (per_package, sockets) = sockets(t, n, threads)?;
    // Clusters: on virt, runs of whole cores of one size inside a package; on q35 the core.
    let clusters = if virt {
        virt_clusters(t, n, threads, per_package, &mut notes)?
    } else {
        1
    };
    if !virt && t.drawn_cluster_sets().is_empty() {
        notes.push("the topology has no clusters; the guest's cluster is the core".to_string());
    }
    let cores = per_package / threads / clusters;
    let kernel_args = offline_cpus_args(t, platform, threads, &mut notes)?;
    let (nodes, distances) = guest_nodes(t, node_memory_mib)?;
    Ok(GuestMachine {
        platform,
        sockets,
        clusters,
        cores,
        threads,
        cpus,
        maxcpus: n,
        online: ids(t.online()),
        kernel_args,
        nodes,
        distances,
        notes,
    })
}

/// The possible CPUs (`n`) and the present ones (`cpus`), both numbered densely from 0 as
/// QEMU numbers vCPUs; on virt, which has no CPU hotplug, every possible CPU present.
fn dense_cpu_ids(t: &Topology, virt: bool) -> Result<(u32, u32), Unexpressible> {
    let possible = ids(t.possible());
    let n = possible.len() as u32;
    if possible.iter().copied().ne(0..n) {
        return Err(refuse(format!(
            "possible CPUs {} are not 0..{}: QEMU numbers vCPUs densely from 0 (sparse ids)",
            t.possible(),
            n.saturating_sub(1)
        )));
    }
    let present = ids(t.present());
    let cpus = present.len() as u32;
    if present.iter().copied().ne(0..cpus) {
        return Err(refuse(format!(
            "present CPUs {} are not the first {cpus} ids: QEMU plugs vCPUs 0..cpus at boot",
            t.present()
        )));
    }
    if virt && cpus != n {
        return Err(refuse(format!(
            "CPUs {} are hotplug slots (possible, not present): QEMU virt has no CPU hotplug",
            t.possible().andnot(t.present())
        )));
    }
    Ok((n, cpus))
}

/// Threads per core, from the siblings of the present CPUs (hotplug CPUs have none yet): the
/// same on every core, numbered adjacently, and on q35 each cluster the core.
fn threads_per_core(t: &Topology, cpus: u32, virt: bool) -> Result<u32, Unexpressible> {
    let threads = t.drawn_smt(0).weight().max(1);
    for cpu in 0..cpus {
        let smt = ids(t.drawn_smt(cpu));
        if smt.len() as u32 != threads {
            return Err(refuse(format!(
                "CPU {cpu} has {} SMT thread(s), CPU 0 has {threads}: QEMU gives every core the same \
                 number of threads (hybrid cores)",
                smt.len()
            )));
        }
        let first = cpu - cpu % threads;
        if smt.iter().copied().ne(first..first + threads) {
            return Err(refuse(format!(
                "SMT siblings of CPU {cpu} are {}: QEMU numbers the threads of a core adjacently \
                 ({first}-{}), offset SMT numbering is not expressible",
                t.drawn_smt(cpu),
                first + threads - 1
            )));
        }
        let cluster = t.drawn_cluster(cpu);
        if !virt && !cluster.is_empty() && ids(cluster) != smt {
            return Err(refuse(format!(
                "cluster of CPU {cpu} is {}, its core is {}: the q35 guest's cluster is the core \
                 (clusters other than the core are not expressible on x86)",
                cluster,
                t.drawn_smt(cpu)
            )));
        }
    }
    Ok(threads)
}

/// CPUs per package and sockets: the packages all of one size, whole cores, in id order.
fn sockets(t: &Topology, n: u32, threads: u32) -> Result<(u32, u32), Unexpressible> {
    let packages = t.package_sets();
    let per_package = packages.first().map(CpuSet::weight).unwrap_or(n).max(1);
    if !per_package.is_multiple_of(threads) {
        return Err(refuse(format!(
            "{per_package} CPUs per package is not a whole number of {threads}-thread cores"
        )));
    }
    for cpu in 0..n {
        if t.cpu_to_package(cpu) != cpu / per_package {
            return Err(refuse(format!(
                "CPU {cpu} is in package {}, QEMU puts it in socket {} (packages of {per_package} \
                 consecutive CPUs)",
                t.cpu_to_package(cpu),
                cpu / per_package
            )));
        }
    }
    if !n.is_multiple_of(per_package) {
        return Err(refuse(format!("{n} CPUs do not fill packages of {per_package}")));
    }
    Ok((per_package, n / per_package))
}

/// The guest's NUMA nodes (with their memory) and the distances that differ from QEMU's
/// default (10 local, 20 remote); none for a one-node machine without `--node-memory`.
#[allow(clippy::type_complexity)]
fn guest_nodes(
    t: &Topology,
    node_memory_mib: Option<&[u32]>,
) -> Result<(Vec<GuestNode>, Vec<(u32, u32, u32)>), Unexpressible> {
    let nr_nodes = t.nr_node_ids();
    let mut nodes = Vec::new();
    let mut distances = Vec::new();
    if let Some(mem) = node_memory_mib {
        if mem.len() as u32 != nr_nodes {
            return Err(refuse(format!(
                "--node-memory names {} node(s), the machine has {nr_nodes}",
                mem.len()
            )));
        }
    }
    if nr_nodes <= 1 && node_memory_mib.is_none() {
        return Ok((nodes, distances));
    }
    for node in 0..nr_nodes {
        let cpus_of = ids(t.node_cpus(node));
        let memory_mib = match node_memory_mib {
            Some(mem) => mem[node as usize],
            None if cpus_of.is_empty() => CPULESS_NODE_MEMORY_MIB_DEFAULT,
            None => NODE_MEMORY_MIB_DEFAULT,
        };
        if cpus_of.is_empty() && memory_mib == 0 {
            return Err(refuse(format!("node {node} has neither CPUs nor memory")));
        }
        nodes.push(GuestNode {
            cpus: cpus_of,
            memory_mib,
        });
    }
    if nodes.iter().all(|g| g.memory_mib == 0) {
        return Err(refuse("no node has memory"));
    }
    let default = (0..nr_nodes).all(|a| (0..nr_nodes).all(|b| t.distance(a, b) == if a == b { 10 } else { 20 }));
    if !default {
        for a in 0..nr_nodes {
            for b in 0..nr_nodes {
                if a != b {
                    distances.push((a, b, t.distance(a, b)));
                }
            }
        }
    }
    Ok((nodes, distances))
}

/// The first `k` CPUs of `order`, as a set.
fn first_of(order: &[u32], k: u32) -> CpuSet {
    CpuSet::from_cpus(order.iter().copied().take(k as usize))
}

/// The kernel arguments that boot a machine with offline CPUs: `maxcpus=K` brings up K of the
/// present CPUs, in the order the kernel starts them. A kernel starts them in id order, except
/// that x86 kernels since 6.5 (parallel bring-up) start the first thread of every core before
/// any second one. An online set that is the first K in id order also gets `cpuhp.parallel=0`
/// on x86 where the two orders differ: it makes those kernels start CPUs one at a time, in id
/// order (kernels without the parameter ignore it). An online set that is the first K with
/// primary threads first boots as such on x86, with a note that older kernels bring up others.
/// Any other set of offline CPUs cannot be asked for at boot.
fn offline_cpus_args(
    t: &Topology,
    platform: Platform,
    threads: u32,
    notes: &mut Vec<String>,
) -> Result<Vec<String>, Unexpressible> {
    if t.online() == t.present() {
        return Ok(Vec::new());
    }
    let present = ids(t.present());
    let k = t.online().weight();
    let by_id = first_of(&present, k);
    let maxcpus = format!("maxcpus={k}");
    // On arm64 the id order is the only one.
    let primary_first = if platform == Platform::Q35 {
        let (primary, secondary): (Vec<u32>, Vec<u32>) = present.iter().copied().partition(|&cpu| cpu % threads == 0);
        first_of(&[primary, secondary].concat(), k)
    } else {
        by_id.clone()
    };
    if *t.online() == by_id {
        return Ok(if by_id == primary_first {
            vec![maxcpus]
        } else {
            vec![maxcpus, "cpuhp.parallel=0".to_string()]
        });
    }
    if *t.online() == primary_first {
        notes.push(format!(
            "{maxcpus}: x86 kernels since 6.5 bring up CPUs {primary_first} (primary threads \
             first), as the topology has them; older kernels bring up {by_id}"
        ));
        return Ok(vec![maxcpus]);
    }
    let orders = if by_id != primary_first {
        format!("{by_id} (in id order) or {primary_first} (x86 since 6.5, primary threads first)")
    } else {
        format!("{by_id}")
    };
    Err(refuse(format!(
        "offline CPUs {}: the guest boots with {maxcpus}, which brings up CPUs {orders}, not {}",
        t.present().andnot(t.online()),
        t.online()
    )))
}

/// Clusters per socket of a virt guest: the topology's clusters must be runs of consecutive
/// whole cores, all of one size, none across a package (QEMU's `-smp clusters=`); a topology
/// without clusters gets one per socket (the device tree's `cpu-map` always has the level).
fn virt_clusters(
    t: &Topology,
    n: u32,
    threads: u32,
    per_package: u32,
    notes: &mut Vec<String>,
) -> Result<u32, Unexpressible> {
    let sets = t.drawn_cluster_sets();
    let Some(size) = sets.first().map(CpuSet::weight) else {
        notes.push("the topology has no clusters; the guest has one cluster per socket".to_string());
        return Ok(1);
    };
    if !size.is_multiple_of(threads) || !per_package.is_multiple_of(size) {
        return Err(refuse(format!(
            "clusters of {size} CPUs with {threads}-thread cores in packages of {per_package}: QEMU \
             builds clusters of whole cores that divide a socket"
        )));
    }
    for cpu in 0..n {
        let first = cpu - cpu % size;
        if ids(t.drawn_cluster(cpu)).into_iter().ne(first..first + size) {
            return Err(refuse(format!(
                "cluster of CPU {cpu} is {}: QEMU numbers clusters as runs of {size} consecutive \
                 CPUs ({first}-{}), every cluster of one size",
                t.drawn_cluster(cpu),
                first + size - 1
            )));
        }
    }
    Ok(per_package / size)
}

/// The accelerator a boot uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    Kvm,
    Tcg,
}

impl Accel {
    pub fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
    /// The CPU model: the host's under KVM; under x86 TCG an Intel-vendor qemu64, because an
    /// AMD CPU without `topoext` (which TCG lacks) hides the SMT siblings from Linux; under
    /// arm64 TCG a Cortex-A57 (a GICv3 CPU interface, and far quicker to emulate than `max`).
    pub(crate) fn default_cpu(self, platform: Platform) -> &'static str {
        match (self, platform) {
            (Accel::Kvm, _) => "host",
            (Accel::Tcg, Platform::Q35) => "qemu64,vendor=GenuineIntel",
            (Accel::Tcg, Platform::Virt(_)) => "cortex-a57",
        }
    }
}

/// Files and settings of one boot.
#[derive(Debug, Clone)]
pub(crate) struct BootFiles {
    pub(crate) kernel: String,
    pub(crate) initrd: String,
    /// One raw image per controller.
    pub(crate) disks: Vec<String>,
    /// Serial ports: console, boot-phase capture, one-at-a-time capture (virt has one serial
    /// port, the console: its guest prints both captures there).
    pub(crate) console: String,
    /// The console on QEMU's standard output, `console` its log, instead of only the file (the
    /// saved command line, for a person watching the boot).
    pub(crate) console_on_terminal: bool,
    pub(crate) boot_capture: String,
    pub(crate) seq_capture: String,
    pub(crate) append: String,
}

/// A value inside a QEMU option list (`file=…,if=none`), whose commas QEMU reads doubled.
fn option_value(v: &str) -> String {
    v.replace(',', ",,")
}

/// The devices at slots 0x10, 0x11, ... in list order, so that PCI order is list order;
/// `disks` are the images of the devices that have one, in the same order.
fn device_args(devices: &[SlotDevice], disks: &[String]) -> Vec<String> {
    let mut a = Vec::new();
    let mut disks = disks.iter();
    for d in devices {
        let (name, addr, q) = (d.name(), d.slot, d.queues);
        let disk = d.disk().and_then(|_| disks.next());
        if let Some(disk) = disk {
            a.push("-drive".to_string());
            a.push(format!("file={},if=none,id={name}d,format=raw", option_value(disk)));
        }
        let device = match d.kind {
            DeviceKind::Nvme => format!(
                "nvme,serial={name},drive={name}d,max_ioqpairs={q},msix_qsize={},addr=0x{addr:x}",
                (q + 1).max(MSIX_QSIZE_DEFAULT)
            ),
            DeviceKind::VirtioBlk => {
                format!("virtio-blk-pci,serial={name},drive={name}d,num-queues={q},addr=0x{addr:x}")
            }
            DeviceKind::VirtioNet => {
                // A queue pair per queue needs a backend of as many queues: user networking
                // has one, a tap device (host root and /dev/net/tun) as many as asked.
                a.push("-netdev".to_string());
                a.push(if q == 1 {
                    format!("user,id={name}")
                } else {
                    format!("tap,id={name},queues={q},script=no,downscript=no,vhost=off")
                });
                let mq = if q == 1 {
                    String::new()
                } else {
                    format!(",mq=on,vectors={}", 2 * q + 2)
                };
                format!("virtio-net-pci,netdev={name}{mq},addr=0x{addr:x}")
            }
        };
        a.push("-device".to_string());
        a.push(device);
    }
    a
}

/// The QEMU arguments for a machine, its devices and the boot files.
pub(crate) fn qemu_args(
    m: &GuestMachine,
    devices: &[SlotDevice],
    accel: Accel,
    cpu: &str,
    f: &BootFiles,
) -> Vec<String> {
    let mut a = words(&[
        "-nodefaults",
        "-nographic",
        "-no-reboot",
        "-machine",
        m.platform.machine(),
        "-accel",
        accel.name(),
        "-cpu",
        cpu,
    ]);
    a.extend(cpu_args(m));
    a.extend(memory_args(m));
    a.extend(device_args(devices, &f.disks));
    a.extend(boot_args(m, f));
    a
}

fn words(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

/// `-smp`: sockets, (clusters on virt,) cores and threads, and the hotplug slots.
fn cpu_args(m: &GuestMachine) -> Vec<String> {
    let clusters = if m.platform == Platform::Q35 {
        String::new()
    } else {
        format!("clusters={},", m.clusters)
    };
    let smp = if m.cpus == m.maxcpus {
        format!(
            "{},sockets={},{clusters}cores={},threads={}",
            m.cpus, m.sockets, m.cores, m.threads
        )
    } else {
        format!(
            "cpus={},maxcpus={},sockets={},{clusters}cores={},threads={}",
            m.cpus, m.maxcpus, m.sockets, m.cores, m.threads
        )
    };
    words(&["-smp", &smp])
}

/// The NUMA nodes with their memory and CPUs, the distances, and the memory in all.
fn memory_args(m: &GuestMachine) -> Vec<String> {
    let mut a = Vec::new();
    let mut total = 0;
    if m.nodes.is_empty() {
        total = SINGLE_NODE_MEMORY_MIB;
    }
    for (i, node) in m.nodes.iter().enumerate() {
        let mut opt = format!("node,nodeid={i}");
        if node.memory_mib > 0 {
            a.extend(words(&[
                "-object",
                &format!("memory-backend-ram,id=mem{i},size={}M", node.memory_mib),
            ]));
            opt.push_str(&format!(",memdev=mem{i}"));
            total += node.memory_mib;
        }
        let set = CpuSet::from_cpus(node.cpus.iter().copied());
        if !node.cpus.is_empty() {
            for range in set.to_string().split(',') {
                opt.push_str(&format!(",cpus={range}"));
            }
        }
        a.extend(words(&["-numa", &opt]));
    }
    for (s, d, v) in &m.distances {
        a.extend(words(&["-numa", &format!("dist,src={s},dst={d},val={v}")]));
    }
    a.extend(words(&["-m", &format!("{total}M")]));
    a
}

/// The kernel, the initramfs and the command line; the console and, on q35, the two capture
/// ports.
fn boot_args(m: &GuestMachine, f: &BootFiles) -> Vec<String> {
    let mut a = words(&["-kernel", &f.kernel, "-initrd", &f.initrd, "-append", &f.append]);
    if f.console_on_terminal {
        a.extend(words(&[
            "-chardev",
            &format!("stdio,id=console,signal=on,logfile={}", option_value(&f.console)),
            "-serial",
            "chardev:console",
        ]));
    } else {
        a.extend(words(&["-serial", &format!("file:{}", f.console)]));
    }
    if m.platform == Platform::Q35 {
        for port in [&f.boot_capture, &f.seq_capture] {
            a.extend(words(&["-serial", &format!("file:{port}")]));
        }
    }
    a.extend(words(&["-monitor", "none", "-display", "none"]));
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::spec::TopologySpec;

    fn topo(text: &str) -> Topology {
        let spec: TopologySpec = toml::from_str(text).unwrap();
        Topology::new(&spec).unwrap()
    }

    const C5: &str = r#"
name = "c5"
nodes = ["0-3", "4-7", "8-11", ""]
smt = ["0-1", "2-3", "4-5", "6-7", "8-9", "10-11"]
clusters = ["0-1", "2-3", "4-5", "6-7", "8-9", "10-11"]
packages = ["0-3", "4-7", "8-11"]
distances = [[10, 20, 30, 40], [20, 10, 20, 30], [30, 20, 10, 20], [40, 30, 20, 10]]
"#;

    #[test]
    fn c5_becomes_three_sockets_and_a_cpuless_node() {
        let m = guest_machine(&topo(C5), Some(&[512, 0, 512, 256]), None).unwrap();
        assert_eq!((m.sockets, m.cores, m.threads, m.cpus, m.maxcpus), (3, 2, 2, 12, 12));
        assert_eq!(m.nodes[1].memory_mib, 0);
        assert!(m.nodes[3].cpus.is_empty());
        assert!(m.distances.contains(&(0, 3, 40)));
        let args = tcg_args(&m, &[5, 70], Accel::Tcg.default_cpu(m.platform));
        assert!(args.contains("-smp 12,sockets=3,cores=2,threads=2"), "{args}");
        assert!(args.contains("-numa node,nodeid=1,cpus=4-7 "), "{args}");
        assert!(args.contains("-numa node,nodeid=3,memdev=mem3 "), "{args}");
        assert!(args.contains("max_ioqpairs=70,msix_qsize=71,addr=0x11"), "{args}");
        assert!(args.contains("max_ioqpairs=5,msix_qsize=65,addr=0x10"), "{args}");
        assert!(args.contains("-m 1280M"), "{args}");
    }

    #[test]
    fn offset_smt_numbering_is_refused() {
        let t = topo("name = \"x\"\nnodes = [\"0-3\"]\nsmt = [\"0,2\", \"1,3\"]\n");
        let e = guest_machine(&t, None, None).unwrap_err().to_string();
        assert!(e.contains("offset SMT numbering"), "{e}");
    }

    #[test]
    fn hybrid_cores_sparse_ids_and_wide_clusters_are_refused() {
        let hybrid = topo("name = \"x\"\nnodes = [\"0-3\"]\nsmt = [\"0-1\", \"2\", \"3\"]\n");
        assert!(guest_machine(&hybrid, None, None)
            .unwrap_err()
            .to_string()
            .contains("hybrid"));
        let sparse = topo("name = \"x\"\nnodes = [\"0-1,4-5\"]\n");
        assert!(guest_machine(&sparse, None, None)
            .unwrap_err()
            .to_string()
            .contains("sparse"));
        let wide = topo("name = \"x\"\nnodes = [\"0-3\"]\nsmt = [\"0-1\", \"2-3\"]\nclusters = [\"0-3\"]\n");
        assert!(guest_machine(&wide, None, None)
            .unwrap_err()
            .to_string()
            .contains("clusters other"));
    }

    /// Offline CPUs boot with the `maxcpus=` that brings up the online ones: the first in id
    /// order (with `cpuhp.parallel=0` where x86's primary-threads-first order would bring up
    /// others), or on x86 the first primary threads first (a note says older kernels differ);
    /// any other set is refused with both orders named.
    #[test]
    fn offline_cpus_boot_with_maxcpus() {
        let machine = |arch: &str, smt: &str, online: &str| {
            let t = topo(&format!(
                "name = \"t\"\narch = \"{arch}\"\nnodes = [\"0-3\", \"4-7\"]\nsmt = [{smt}]\nonline = \"{online}\"\n"
            ));
            guest_machine(&t, None, None).map(|m| (m.kernel_args.join(" "), m.notes.join("\n")))
        };
        let smt2 = "\"0-1\", \"2-3\", \"4-5\", \"6-7\"";
        assert_eq!(machine("x86_64", smt2, "0-7").unwrap().0, "");
        let (args, notes) = machine("x86_64", smt2, "0-4").unwrap();
        assert_eq!(args, "maxcpus=5 cpuhp.parallel=0");
        assert!(!notes.contains("maxcpus"), "{notes}");
        let (args, notes) = machine("x86_64", smt2, "0-2,4,6").unwrap();
        assert_eq!(args, "maxcpus=5");
        assert!(
            notes.contains("maxcpus=5: x86 kernels since 6.5 bring up CPUs 0-2,4,6 (primary threads first)")
                && notes.contains("older kernels bring up 0-4"),
            "{notes}"
        );
        // One CPU, or no SMT: both orders are the id order.
        assert_eq!(machine("x86_64", smt2, "0").unwrap().0, "maxcpus=1");
        let single = "\"0\", \"1\", \"2\", \"3\", \"4\", \"5\", \"6\", \"7\"";
        assert_eq!(machine("x86_64", single, "0-4").unwrap().0, "maxcpus=5");
        let e = machine("x86_64", smt2, "0-1,3").unwrap_err().to_string();
        assert!(
            e.contains("offline CPUs 2,4-7: the guest boots with maxcpus=3, which brings up CPUs 0-2 (in id order) or 0,2,4 (x86 since 6.5, primary threads first), not 0-1,3"),
            "{e}"
        );
        // arm64 brings CPUs up in id order only.
        assert_eq!(machine("arm64", smt2, "0-4").unwrap().0, "maxcpus=5");
        let e = machine("arm64", smt2, "0-2,4,6").unwrap_err().to_string();
        assert!(e.contains("brings up CPUs 0-4, not 0-2,4,6"), "{e}");
    }

    /// The QEMU command line of `m` under TCG with `cpu` and one NVMe disk per `nvme` entry
    /// (its I/O queues).
    fn tcg_args(m: &GuestMachine, nvme: &[u32], cpu: &str) -> String {
        qemu_args(m, &slot_devices(nvme, &[], &[]).unwrap(), Accel::Tcg, cpu, &files()).join(" ")
    }

    fn files() -> BootFiles {
        BootFiles {
            kernel: "k".into(),
            initrd: "i".into(),
            disks: vec!["a".into(), "b".into()],
            console: "c".into(),
            console_on_terminal: false,
            boot_capture: "b".into(),
            seq_capture: "s".into(),
            append: "x".into(),
        }
    }

    /// An arm64 preset boots on virt (its clusters of several cores are expressible there),
    /// with the ITS unless `--its off`; the x86 emulator is refused with words about the
    /// architecture, not about clusters.
    #[test]
    fn arm64_machines_boot_on_virt() {
        let altra = crate::catalogue::get("ampere-altra-q80").unwrap();
        let m = guest_machine(&altra, None, None).unwrap();
        assert_eq!(m.platform, Platform::Virt(Gic::V3Its));
        assert_eq!((m.sockets, m.clusters, m.cores, m.threads), (1, 40, 2, 1));
        let args = tcg_args(&m, &[4, 4], Accel::Tcg.default_cpu(m.platform));
        assert!(args.contains("-machine virt,gic-version=3,its=on "), "{args}");
        assert!(args.contains("-cpu cortex-a57 "), "{args}");
        assert!(
            args.contains("-smp 80,sockets=1,clusters=40,cores=2,threads=1 "),
            "{args}"
        );
        assert_eq!(args.matches("-serial").count(), 1, "{args}");
        let e = qemu_boots("/usr/bin/qemu-system-x86_64", m.platform)
            .unwrap_err()
            .to_string();
        assert!(e.contains("arm64") && e.contains("qemu-system-aarch64"), "{e}");
        assert!(!e.contains("cluster"), "{e}");
        assert!(qemu_boots("qemu-system-aarch64", m.platform).is_ok());
        assert!(qemu_boots("./fake-qemu", m.platform).is_ok());
        let x86 = guest_machine(&topo(C5), None, None).unwrap();
        assert!(qemu_boots("qemu-system-aarch64", x86.platform).is_err());
        let e = guest_machine(&topo(C5), None, Some(true)).unwrap_err().to_string();
        assert!(e.contains("--its") && e.contains("x86_64"), "{e}");
    }

    #[test]
    fn gicv2m_reaches_eight_cpus_and_spi_machines_boot_with_the_its() {
        let eight = topo("name = \"a8\"\narch = \"arm64\"\nnodes = [\"0-3\", \"4-7\"]\nclusters = [\"0-3\", \"4-7\"]\npackages = [\"0-7\"]\n");
        let m = guest_machine(&eight, None, Some(false)).unwrap();
        assert_eq!(m.platform, Platform::Virt(Gic::V2m));
        assert_eq!((m.sockets, m.clusters, m.cores), (1, 2, 4));
        let args = tcg_args(&m, &[3], "cortex-a57");
        assert!(args.contains("-machine virt,gic-version=2 "), "{args}");
        let d16 = crate::catalogue::get("azure-d16plds-v6").unwrap();
        let e = guest_machine(&d16, None, Some(false)).unwrap_err().to_string();
        assert!(e.contains("at most 8 CPUs") && e.contains("--its on"), "{e}");
        let m = guest_machine(&d16, None, None).unwrap();
        assert_eq!(m.platform, Platform::Virt(Gic::V3Its));
        assert!(m.notes.iter().any(|n| n.contains("SPIs")), "{:?}", m.notes);
        let odd = topo("name = \"x\"\narch = \"arm64\"\nnodes = [\"0-5\"]\nclusters = [\"0-1\", \"2-5\"]\n");
        let e = guest_machine(&odd, None, None).unwrap_err().to_string();
        assert!(e.contains("cluster"), "{e}");
        let hotplug = topo("name = \"x\"\narch = \"arm64\"\nnodes = [\"0-3\"]\npresent = \"0-1\"\n");
        let e = guest_machine(&hotplug, None, None).unwrap_err().to_string();
        assert!(e.contains("no CPU hotplug"), "{e}");
    }
}
