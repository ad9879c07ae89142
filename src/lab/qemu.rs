//! A validated machine as QEMU x86 sees it: `-smp`, `-numa` and the NVMe controllers, or a
//! clear refusal of the shapes QEMU 7.2's x86 machine cannot express.
//!
//! QEMU numbers vCPUs socket → core → thread, so the SMT siblings of a core are adjacent
//! (`2k, 2k+1` with two threads) and CPU ids are dense; the guest's cluster (L2) is the core;
//! every core has the same number of threads. The nvme driver asks for
//! `1 + min(max_ioqpairs, possible CPUs)` vectors, the admin queue being the one pre vector
//! (drivers/nvme/host/pci.c, `nvme_setup_irqs()`), so a scenario device maps back to a
//! controller only in that shape.

use crate::scenario::{Device, Driver};
use crate::topology::{CpuSet, Topology};

/// Memory of a node that has CPUs, unless `--node-memory` says otherwise.
pub(crate) const NODE_MEMORY_MIB_DEFAULT: u32 = 512;
/// Memory of a node without CPUs (it exists only through its memory).
pub(crate) const CPULESS_NODE_MEMORY_MIB_DEFAULT: u32 = 256;
/// Guest memory when the machine has one node.
pub(crate) const SINGLE_NODE_MEMORY_MIB: u32 = 1024;
/// Most NVMe controllers a lab machine gets (PCI slots 0x10 onwards on the q35 root bus).
pub(crate) const NVME_MAX: usize = 16;
/// Most I/O queue pairs one controller offers (QEMU's `max_ioqpairs` limit is far higher; the
/// guest never uses more than one per CPU).
pub(crate) const IOQPAIRS_MAX: u32 = 1024;
/// QEMU's default MSI-X table size of an NVMe controller.
const MSIX_QSIZE_DEFAULT: u32 = 65;

/// Why a machine or device list cannot be booted in QEMU.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("QEMU x86 cannot express this machine: {0}")]
pub struct Unexpressible(pub String);

fn refuse(msg: impl Into<String>) -> Unexpressible {
    Unexpressible(msg.into())
}

/// One NUMA node of the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestNode {
    /// vCPU indexes (possible CPUs), possibly empty.
    pub cpus: Vec<u32>,
    /// Memory in MiB; 0 for a memoryless node.
    pub memory_mib: u32,
}

/// The machine as QEMU's `-smp`/`-numa` options describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestMachine {
    pub sockets: u32,
    pub cores: u32,
    pub threads: u32,
    /// vCPUs present at boot (`cpus=`); the rest up to `maxcpus` are hotplug slots.
    pub cpus: u32,
    pub maxcpus: u32,
    /// Empty for a machine without NUMA.
    pub nodes: Vec<GuestNode>,
    /// Off-diagonal distances `(src, dst, value)`, empty when all are the defaults 10/20.
    pub distances: Vec<(u32, u32, u32)>,
    /// What the guest shows differently from the topology (nothing refused, but worth saying).
    pub notes: Vec<String>,
}

fn ids(set: &CpuSet) -> Vec<u32> {
    set.iter().collect()
}

/// The guest machine for a topology, or why QEMU cannot build it. `node_memory_mib`, when
/// given, sets every node's memory (0: memoryless), since topologies do not carry memory.
pub fn guest_machine(t: &Topology, node_memory_mib: Option<&[u32]>) -> Result<GuestMachine, Unexpressible> {
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
    if t.online() != t.present() {
        return Err(refuse(format!(
            "offline CPUs {}: a guest brings every present vCPU online",
            t.present().andnot(t.online())
        )));
    }
    // Threads per core from the siblings of the present CPUs (hotplug CPUs have none yet).
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
        if !cluster.is_empty() && ids(cluster) != smt {
            return Err(refuse(format!(
                "cluster of CPU {cpu} is {}, its core is {}: the guest's cluster is the core \
                 (clusters other than the core are not expressible)",
                cluster,
                t.drawn_smt(cpu)
            )));
        }
    }
    let mut notes = Vec::new();
    if t.drawn_cluster_sets().is_empty() {
        notes.push("the topology has no clusters; the guest's cluster is the core".to_string());
    }
    // Sockets: the packages, all of one size and in id order.
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
    let sockets = n / per_package;
    let cores = per_package / threads;
    // NUMA nodes.
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
    if nr_nodes > 1 || node_memory_mib.is_some() {
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
    }
    Ok(GuestMachine {
        sockets,
        cores,
        threads,
        cpus,
        maxcpus: n,
        nodes,
        distances,
        notes,
    })
}

/// The `max_ioqpairs` of the controller that makes the nvme driver ask for a device's vectors.
pub fn nvme_ioqpairs(devices: &[Device], possible: u32) -> Result<Vec<u32>, Unexpressible> {
    if devices.len() > NVME_MAX {
        return Err(refuse(format!(
            "{} devices, a lab machine has at most {NVME_MAX}",
            devices.len()
        )));
    }
    devices
        .iter()
        .map(|d| {
            let nvme_like = matches!(d.driver, Driver::Generic | Driver::Nvme)
                && d.pre_vectors == 1
                && d.post_vectors == 0
                && d.sets.is_none()
                && d.managed_affinity;
            if !nvme_like {
                return Err(refuse(format!(
                    "device {:?} is not an NVMe controller (one pre vector, managed, no post vectors \
                     or sets)",
                    d.name
                )));
            }
            let qp = d.vectors.saturating_sub(1);
            if qp == 0 || qp > possible {
                return Err(refuse(format!(
                    "device {:?} has {} vectors: an NVMe controller gets 1 + min(queues, {possible} CPUs)",
                    d.name, d.vectors
                )));
            }
            Ok(qp)
        })
        .collect()
}

/// Check an explicit `max_ioqpairs` list.
pub(crate) fn check_ioqpairs(list: &[u32]) -> Result<(), Unexpressible> {
    if list.len() > NVME_MAX {
        return Err(refuse(format!("{} controllers, at most {NVME_MAX}", list.len())));
    }
    if let Some(q) = list.iter().find(|&&q| q == 0 || q > IOQPAIRS_MAX) {
        return Err(refuse(format!("max_ioqpairs {q}: give 1..={IOQPAIRS_MAX}")));
    }
    Ok(())
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
    /// The CPU model: the host's under KVM; under TCG an Intel-vendor qemu64, because an AMD
    /// CPU without `topoext` (which TCG lacks) hides the SMT siblings from Linux.
    pub(crate) fn default_cpu(self) -> &'static str {
        match self {
            Accel::Kvm => "host",
            Accel::Tcg => "qemu64,vendor=GenuineIntel",
        }
    }
}

/// Files and settings of one boot.
#[derive(Debug, Clone)]
pub(crate) struct BootFiles {
    pub kernel: String,
    pub initrd: String,
    /// One raw image per controller.
    pub disks: Vec<String>,
    /// Serial ports: console, boot-phase capture, one-at-a-time capture.
    pub console: String,
    pub boot_capture: String,
    pub seq_capture: String,
    pub append: String,
}

/// The `qemu-system-x86_64` arguments for a machine, its controllers and the boot files.
pub(crate) fn qemu_args(m: &GuestMachine, ioqpairs: &[u32], accel: Accel, cpu: &str, f: &BootFiles) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    let mut push = |xs: &[&str]| a.extend(xs.iter().map(|s| s.to_string()));
    push(&["-nodefaults", "-nographic", "-no-reboot", "-machine", "q35"]);
    push(&["-accel", accel.name(), "-cpu", cpu]);
    let smp = if m.cpus == m.maxcpus {
        format!(
            "{},sockets={},cores={},threads={}",
            m.cpus, m.sockets, m.cores, m.threads
        )
    } else {
        format!(
            "cpus={},maxcpus={},sockets={},cores={},threads={}",
            m.cpus, m.maxcpus, m.sockets, m.cores, m.threads
        )
    };
    push(&["-smp", &smp]);
    let mut total = 0;
    if m.nodes.is_empty() {
        total = SINGLE_NODE_MEMORY_MIB;
    }
    for (i, node) in m.nodes.iter().enumerate() {
        let mut opt = format!("node,nodeid={i}");
        if node.memory_mib > 0 {
            push(&[
                "-object",
                &format!("memory-backend-ram,id=mem{i},size={}M", node.memory_mib),
            ]);
            opt.push_str(&format!(",memdev=mem{i}"));
            total += node.memory_mib;
        }
        let set = CpuSet::from_cpus(node.cpus.iter().copied());
        if !node.cpus.is_empty() {
            for range in set.to_string().split(',') {
                opt.push_str(&format!(",cpus={range}"));
            }
        }
        push(&["-numa", &opt]);
    }
    for (s, d, v) in &m.distances {
        push(&["-numa", &format!("dist,src={s},dst={d},val={v}")]);
    }
    push(&["-m", &format!("{total}M")]);
    // Controllers at slots 0x10, 0x11, ... so that PCI order is list order.
    for (k, (qp, disk)) in ioqpairs.iter().zip(&f.disks).enumerate() {
        let msix = (qp + 1).max(MSIX_QSIZE_DEFAULT);
        push(&["-drive", &format!("file={disk},if=none,id=d{k},format=raw")]);
        push(&[
            "-device",
            &format!(
                "nvme,serial=n{k},drive=d{k},max_ioqpairs={qp},msix_qsize={msix},addr=0x{:x}",
                0x10 + k
            ),
        ]);
    }
    push(&["-kernel", &f.kernel, "-initrd", &f.initrd, "-append", &f.append]);
    for port in [&f.console, &f.boot_capture, &f.seq_capture] {
        push(&["-serial", &format!("file:{port}")]);
    }
    push(&["-monitor", "none", "-display", "none"]);
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
        let m = guest_machine(&topo(C5), Some(&[512, 0, 512, 256])).unwrap();
        assert_eq!((m.sockets, m.cores, m.threads, m.cpus, m.maxcpus), (3, 2, 2, 12, 12));
        assert_eq!(m.nodes[1].memory_mib, 0);
        assert!(m.nodes[3].cpus.is_empty());
        assert!(m.distances.contains(&(0, 3, 40)));
        let f = BootFiles {
            kernel: "k".into(),
            initrd: "i".into(),
            disks: vec!["a".into(), "b".into()],
            console: "c".into(),
            boot_capture: "b".into(),
            seq_capture: "s".into(),
            append: "x".into(),
        };
        let args = qemu_args(&m, &[5, 70], Accel::Tcg, Accel::Tcg.default_cpu(), &f).join(" ");
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
        let e = guest_machine(&t, None).unwrap_err().to_string();
        assert!(e.contains("offset SMT numbering"), "{e}");
    }

    #[test]
    fn hybrid_cores_sparse_ids_and_wide_clusters_are_refused() {
        let hybrid = topo("name = \"x\"\nnodes = [\"0-3\"]\nsmt = [\"0-1\", \"2\", \"3\"]\n");
        assert!(guest_machine(&hybrid, None).unwrap_err().to_string().contains("hybrid"));
        let sparse = topo("name = \"x\"\nnodes = [\"0-1,4-5\"]\n");
        assert!(guest_machine(&sparse, None).unwrap_err().to_string().contains("sparse"));
        let wide = topo("name = \"x\"\nnodes = [\"0-3\"]\nsmt = [\"0-1\", \"2-3\"]\nclusters = [\"0-3\"]\n");
        assert!(guest_machine(&wide, None)
            .unwrap_err()
            .to_string()
            .contains("clusters other"));
    }

    #[test]
    fn non_nvme_devices_are_refused() {
        let mut d =
            crate::scenario::spec::expand_devices(&[crate::scenario::spec::parse_device_token("2x5:pre=1").unwrap()])
                .unwrap();
        assert_eq!(nvme_ioqpairs(&d, 8).unwrap(), vec![5, 5]);
        d[0].pre_vectors = 0;
        assert!(nvme_ioqpairs(&d, 8).is_err());
    }
}
