#!/usr/bin/env python3
"""Write tests/data/live/c5-cpuless-node (run from the repository root after `cargo build`).

The shape of the lab's configuration c5 (QEMU q35, 3 sockets x 2 cores x 2 threads, 4 NUMA
nodes: node 1 memoryless, node 3 CPU-less, SLIT 10/20/30/40): the sysfs tree from
`irqscope topology export sysfs` of that machine, /proc from an `irqscope-agent capture` taken
in the guest on Debian's 6.1.0-57 kernel (its IRQ rows, masks and effective CPUs; counters as
captured). The node-3 directory has an empty cpulist and a distance row, which is what made the
agent's snapshot invalid ("distances: 4 rows for 3 nodes")."""
import json, os, shutil, subprocess, sys

OUT = "tests/data/live/c5-cpuless-node"
TOML = sys.argv[1] if len(sys.argv) > 1 else "../shared/lab/topologies/c5.toml"
CAPTURE = sys.argv[2] if len(sys.argv) > 2 else "../shared/lab/captures/agent/c5-61.txt.agent.json"

shutil.rmtree(OUT, ignore_errors=True)
subprocess.run(["target/debug/irqscope", "topology", "export", "sysfs", TOML, OUT], check=True, stdout=subprocess.DEVNULL)
snap = json.load(open(CAPTURE))["snapshots"][0]
cpus = snap["cpus"]
os.makedirs(f"{OUT}/proc/sys/kernel/random", exist_ok=True)
open(f"{OUT}/proc/sys/kernel/random/boot_id", "w").write(snap["boot_id"] + "\n")
open(f"{OUT}/proc/sys/kernel/hostname", "w").write("c5\n")
open(f"{OUT}/proc/sys/kernel/osrelease", "w").write("6.1.0-57-amd64\n")
width = max(3, max(len(i["label"]) for i in snap["irqs"]))
with open(f"{OUT}/proc/interrupts", "w") as f:
    f.write(" " * (width + 1) + "".join(f" {'CPU%d' % c:>10}" for c in cpus) + "\n")
    for irq in snap["irqs"]:
        counts = dict((c, n) for c, n in irq["counts"])
        numbered = irq["label"].isdigit()
        n_cols = len(cpus) if numbered or irq["label"] not in ("ERR", "MIS") else 1
        line = f"{irq['label']:>{width}}:" + "".join(f" {counts.get(c, 0):>10}" for c in cpus[:n_cols])
        if irq.get("chip"):
            line += f" {irq['chip']:>8}"
        if irq.get("hwirq"):
            line += f" {irq['hwirq']}"
        if irq.get("name"):
            line += f"  {irq['name']}"
        f.write(line + "\n")
        if numbered:
            d = f"{OUT}/proc/irq/{irq['label']}"
            os.makedirs(d, exist_ok=True)
            for key, name in [("affinity", "smp_affinity_list"), ("effective", "effective_affinity_list")]:
                if key in irq:
                    open(f"{d}/{name}", "w").write(irq[key] + "\n")
            open(f"{d}/node", "w").write(f"{irq.get('node', -1)}\n")
print("ok")
