#!/usr/bin/env python3
"""Write the live-mode fixture trees under tests/data/live/ (run from the repository root after
`cargo build --release`). Each tree is DIR/{proc,sys}: the sysfs topology comes from
`irqscope topology export sysfs PRESET`, the IRQ placement from `irqscope simulate --format json`
on the same machine (what the kernel model says), printed the way the kernel prints
/proc/interrupts on that architecture. Counters are made up and deterministic."""
import json, os, shutil, subprocess, sys

BIN = os.environ.get("IRQSCOPE", "target/release/irqscope")
OUT = "tests/data/live"

def cpulist(cpus):
    cpus = sorted(cpus); out = []; i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1: j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}"); i = j + 1
    return ",".join(out)

def parse_list(s):
    out = []
    for part in filter(None, s.strip().split(",")):
        a, _, b = part.partition("-")
        out += range(int(a), int(b or a) + 1)
    return out

MANA_BDF = "7870:00:00.0"  # a Hyper-V vPCI address, as Azure gives the MANA VF
SOFTIRQS = ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"]

def vector_name(dev, index):
    """The action name the driver gives vector `index` of `dev`."""
    if dev.get("driver") == "mana" or dev["name"].startswith("mana"):
        # gdma_main.c mana_gd_setup_irqs(): index 0 is the hardware channel.
        return f"mana_hwc@pci:{MANA_BDF}" if index == 0 else f"mana_q{index - 1}@pci:{MANA_BDF}"
    return f"{dev['name']}q{index}"

def tree(name, preset, devices, arch, effective, hyperv=False, softirqs=False):
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    subprocess.run([BIN, "topology", "export", "sysfs", preset, d], check=True, stdout=subprocess.DEVNULL)
    online = parse_list(open(f"{d}/sys/devices/system/cpu/online").read())
    nodes = {}
    ndir = f"{d}/sys/devices/system/node"
    for n in sorted(os.listdir(ndir)):
        if n.startswith("node"):
            for c in parse_list(open(f"{ndir}/{n}/cpulist").read()): nodes[c] = int(n[4:])
    # The timer and i8042 rows below hold one vector each on the first two online CPUs (x86).
    held = ["--vectors-held", f"{online[0]}:1,{online[1]}:1"] if arch == "x86" else []
    sim = json.loads(subprocess.run([BIN, "simulate", preset, *devices, "--effective", effective, *held, "--format", "json"],
                                    check=True, capture_output=True, text=True).stdout)
    rows = []  # (irq, counts{cpu:n}, chip, hwirq, name, mask, eff, node)
    if arch == "x86":
        rows.append((0, {online[0]: 41}, "IO-APIC", "2-edge", "timer", cpulist(online), online[0], 0))
        rows.append((1, {online[1]: 9}, "IO-APIC", "1-edge", "i8042", cpulist(online), online[1], 0))
        irq = 24
    else:
        rows.append((11, {c: 10000 + c for c in online}, "GICv3", "27 Level", "arch_timer", cpulist(online), None, 0))
        rows.append((13, {online[0]: 55}, "GICv3", "33 Level", "uart-pl011", cpulist(online), online[0], 0))
        irq = 40
    for dev in sim["devices"]:
        for v in dev["vectors"]:
            name = vector_name(dev, v["index"])
            eff = v["effective_cpu"]
            mask = v["mask"]
            if eff is None and v["managed"] and arch == "x86":
                # vector_assign_managed_shutdown(): parked on the first online CPU.
                eff = online[0]
            if not v["managed"] and not name.startswith("mana"):
                # alloc_descs() + irq_setup_affinity(): /proc shows the mask narrowed to the
                # online CPUs of its first CPU's node.
                cpus = parse_list(mask)
                local = [c for c in cpus if c in online and nodes.get(c) == nodes.get(cpus[0])]
                mask = cpulist(local or [c for c in cpus if c in online] or online)
            counts = {eff: 1000 * (v["index"] + 1) + irq} if eff is not None else {}
            if hyperv:
                # drivers/pci/controller/pci-hyperv.c: the MSI chip is "Hyper-V PCIe MSI".
                chip, hw = "Hyper-V PCIe MSI", f"{134250496 + irq * 4096 + v['index']}-edge"
            elif arch == "x86":
                chip, hw = f"PCI-MSIX-0000:00:{irq % 32:02x}.0", f"{v['index']}-edge"
            else:
                chip, hw = "ITS-MSI", f"{524288 + irq * 2048 + v['index']} Edge"
            first = parse_list(v["mask"])[0]
            rows.append((irq, counts, chip, hw, name, mask, eff, nodes.get(first, 0)))
            irq += 1
    os.makedirs(f"{d}/proc/sys/kernel/random", exist_ok=True)
    open(f"{d}/proc/sys/kernel/random/boot_id", "w").write("5f3c1a52-9c7e-4d38-9d51-" + name.encode().hex()[:12].ljust(12, "0") + "\n")
    open(f"{d}/proc/sys/kernel/hostname", "w").write(name + "\n")
    with open(f"{d}/proc/interrupts", "w") as f:
        f.write("     " + "".join(f" {'CPU%d' % c:>10}" for c in online) + "\n")
        for (n, counts, chip, hw, nm, mask, eff, node) in rows:
            f.write(f"{n:>4}:" + "".join(f" {counts.get(c, 0):>10}" for c in online) + f" {chip:>8} {hw}  {nm}\n")
            idir = f"{d}/proc/irq/{n}"
            os.makedirs(idir, exist_ok=True)
            open(f"{idir}/smp_affinity_list", "w").write(mask + "\n")
            open(f"{idir}/effective_affinity_list", "w").write(("" if eff is None else str(eff)) + "\n")
            open(f"{idir}/node", "w").write(f"{node}\n")
        if arch == "x86":
            for lbl, desc in [("NMI", "Non-maskable interrupts"), ("LOC", "Local timer interrupts"), ("CAL", "Function call interrupts"), ("TLB", "TLB shootdowns")]:
                f.write(f"{lbl:>4}:" + "".join(f" {(c * 7 + len(lbl)) * 13:>10}" for c in online) + f"   {desc}\n")
            f.write(f"{'ERR':>4}: {0:>10}\n{'MIS':>4}: {0:>10}\n")
        else:
            for i, desc in enumerate(["Rescheduling interrupts", "Function call interrupts", "CPU stop interrupts", "CPU stop (for crash dump) interrupts", "Timer broadcast interrupts", "IRQ work interrupts", "CPU wake-up interrupts"]):
                f.write(f"IPI{i}:" + "".join(f" {(c + 1) * (i + 1) * 11:>10}" for c in online) + f"       {desc}\n")
            f.write(f"{'Err':>4}: {0:>10}\n")
    if softirqs:
        # kernel/softirq.c show_softirqs(): one column per *possible* CPU.
        possible = parse_list(open(f"{d}/sys/devices/system/cpu/possible").read())
        net = {r[6] for r in rows if r[4].startswith("mana_q")}
        blk = {r[6] for r in rows if r[4].startswith("nvme")}
        with open(f"{d}/proc/softirqs", "w") as f:
            f.write("                    " + "".join(f"{'CPU%d' % c:<11}" for c in possible).rstrip() + "\n")
            for i, s in enumerate(SOFTIRQS):
                def count(c):
                    base = (c + 1) * (i + 3) * 17
                    if s == "NET_RX" and c in net: base += 500000
                    if s == "BLOCK" and c in blk: base += 300000
                    return base if c in online else 0
                f.write(f"{s + ':':>12}" + "".join(f" {count(c):>10}" for c in possible) + "\n")

tree("x86-nvme-vm", "azure-l96as-v4", ["4x8:name=nvme,pre=1"], "x86", "x86-matrix")
tree("arm64-vm", "graviton3-64c", ["1x8:name=nvme0,pre=1"], "arm64", "first-cpu")
tree("offline-cpus", "xeon-2s-18c-nosmt-offline", ["2x16:name=nvme,pre=1"], "x86", "x86-matrix")
# Azure-like 8 vCPU VM (D8ds-v6 shape): NVMe remote disk, then the MANA NIC (HWC + 8 queues),
# both behind Hyper-V vPCI; MANA placed by the MANA driver model on the load NVMe left.
tree("azure-mana-vm", "vm-8vcpu-smt2", ["8:name=nvme0,pre=1", "8:name=mana,driver=mana"], "x86", "x86-matrix", hyperv=True, softirqs=True)
print("ok")
