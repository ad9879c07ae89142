#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Golden vectors for the kernel's view of a drawn machine (tests/data/golden-view/).

Each machine below is a drawing: SMT sets, clusters, present and online CPUs, the
architecture. This script replays how that architecture's kernel builds the per-CPU sibling
and cluster masks as the CPUs come up and go down (x86: set_cpu_sibling_map() and
remove_siblinginfo() in arch/x86/kernel/smpboot.c; arm64: reset_cpu_topology(),
update_siblings_masks() and remove_cpu_topology() in drivers/base/arch_topology.c), hands
those masks to the kernel's own group_cpus_evenly() (harness.c linked with Debian's
lib/group_cpus.c: 6.12 for `pre-cluster`, 7.2 for `cluster`), and writes one golden case per
call with the drawing (not the masks) as its topology, so the product must derive the masks
itself.

Usage: gen.py HARNESS_6_12 HARNESS_7_2 OUTDIR
"""

import json
import subprocess
import sys
from pathlib import Path


def cpulist(cpus):
    """The kernel's cpulist text (%*pbl): ascending ranges, "a-b" for runs of two or more."""
    cpus = sorted(cpus)
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


class Machine:
    def __init__(self, name, arch, nodes, smt, clusters, present=None, online=None, note=""):
        self.name, self.arch, self.note = name, arch, note
        self.n = max(c for node in nodes for c in node) + 1
        self.node_of = {c: i for i, node in enumerate(nodes) for c in node}
        self.nr_node_ids = len(nodes)
        self.possible = sorted(self.node_of)
        self.present = sorted(present if present is not None else self.possible)
        self.online = sorted(online if online is not None else self.present)
        self.smt = {}
        for s in smt:
            for c in s:
                self.smt[c] = frozenset(s)
        for c in self.possible:
            self.smt.setdefault(c, frozenset([c]))
        self.cluster = {}
        for k in clusters:
            for c in k:
                self.cluster[c] = frozenset(k)
        # The drawing's packages are one per node (the topology file's default).
        self.package = self.node_of

    def kernel_masks(self):
        """Per-CPU (sibling, cluster) masks after bringing up every present CPU in id order
        and taking down those that are not online (nosmt brings the secondary threads up and
        down again; a CPU never brought up ends the same on both architectures)."""
        return {"x86_64": self._x86, "arm64": self._arm64}[self.arch]()

    def _x86(self):
        sib = {c: set() for c in range(self.n)}  # zeroed per-CPU maps
        l2c = {c: set() for c in range(self.n)}
        setup = set()

        def link(m, a, b):
            m[a].add(b)
            m[b].add(a)

        def set_cpu_sibling_map(cpu):
            setup.add(cpu)
            for i in sorted(setup):
                if i == cpu or i in self.smt[cpu]:
                    link(sib, cpu, i)
                # The drawing's "no cluster" is an empty mask; every x86 machine here draws one.
                if cpu in self.cluster and (i == cpu or i in self.cluster[cpu]):
                    link(l2c, cpu, i)

        def remove_siblinginfo(cpu):
            for m in (sib, l2c):
                for s in list(m[cpu]):
                    m[s].discard(cpu)
                m[cpu].clear()
            setup.discard(cpu)

        for cpu in self.present:
            set_cpu_sibling_map(cpu)
        for cpu in self.present:
            if cpu not in self.online:
                remove_siblinginfo(cpu)
        return {c: (sib[c], l2c[c]) for c in range(self.n)}

    def _arm64(self):
        # reset_cpu_topology() -> clear_cpu_topology(): every possible CPU alone.
        thread = {c: {c} for c in self.possible}
        clu = {c: {c} for c in self.possible}
        cluster_id = {c: (min(self.cluster[c]) if c in self.cluster else -1) for c in self.possible}
        core_id = {c: min(self.smt[c]) for c in self.possible}
        online = set()

        def update_siblings_masks(cpuid):
            for cpu in sorted(online | {cpuid}):
                if self.package[cpuid] != self.package[cpu]:
                    continue
                if cluster_id[cpuid] != cluster_id[cpu]:
                    continue
                if cluster_id[cpuid] >= 0:
                    clu[cpuid].add(cpu)
                    clu[cpu].add(cpuid)
                if core_id[cpuid] != core_id[cpu]:
                    continue
                thread[cpuid].add(cpu)
                thread[cpu].add(cpuid)
            online.add(cpuid)

        def remove_cpu_topology(cpu):
            for m in (thread, clu):
                for s in list(m[cpu]):
                    m[s].discard(cpu)
                m[cpu] = {cpu}
            online.discard(cpu)

        for cpu in self.present:
            update_siblings_masks(cpu)
        for cpu in self.present:
            if cpu not in self.online:
                remove_cpu_topology(cpu)
        return {c: (thread.get(c, set()), clu.get(c, set())) for c in range(self.n)}

    def topology_json(self):
        cpus = []
        for c in range(self.n):
            possible = c in self.node_of
            cpus.append({
                "cpu": c,
                "node": self.node_of.get(c, 0),
                "smt": cpulist(self.smt[c]) if possible else "",
                "cluster": cpulist(self.cluster.get(c, ())) if possible else "",
                "present": c in self.present,
                "possible": possible,
                "online": c in self.online,
            })
        return {"name": self.name, "note": self.note, "arch": self.arch,
                "nr_cpu_ids": self.n, "nr_node_ids": self.nr_node_ids, "cpus": cpus}

    def harness_input(self, calls):
        masks = self.kernel_masks()
        lines = [f"{self.n} {self.nr_node_ids}"]
        for c in range(self.n):
            sib, clu = masks[c]
            lines.append(" ".join(map(str, [
                self.node_of.get(c, 0), int(c in self.node_of), int(c in self.present),
                len(sib), *sorted(sib), len(clu), *sorted(clu)])))
        lines.append(" ".join(map(str, calls)))
        return "\n".join(lines) + "\n"


def run_harness(binary, machine, calls):
    out = subprocess.run([binary], input=machine.harness_input(calls), capture_output=True,
                         text=True, check=True).stdout
    results, cur = {}, None
    for line in out.splitlines():
        words = line.split()
        if words[0] == "call":
            cur = {"numgrps": int(words[1]), "masks": []}
            results[cur["numgrps"]] = cur
        elif words[0] == "null":
            cur["null"] = True
        elif words[0] == "nummasks":
            cur["nummasks"] = int(words[1])
        elif words[0] == "warnings":
            cur["warnings"] = int(words[1])
        else:
            cur["masks"].append(cpulist(int(w) for w in words[1:]))
    return results


def pairs(lo, hi):
    return [list(range(c, c + 2)) for c in range(lo, hi, 2)]


def blocks(lo, hi, size):
    return [list(range(c, min(c + size, hi))) for c in range(lo, hi, size)]


def machines():
    m = []
    # Issue 22's nosmt8.toml: SMT pairs, clusters the same, second threads offline.
    for arch in ("x86_64", "arm64"):
        m.append((Machine(f"nosmt8-{arch}", arch, [range(8)], pairs(0, 8), pairs(0, 8),
                          online=[0, 2, 4, 6],
                          note="8 CPUs, SMT pairs = clusters, CPUs 1,3,5,7 offline (nosmt)"),
                  [1, 2, 3, 4, 8]))
    # xeon-2s-18c-nosmt-offline: offset numbering (k, k+36), per-core clusters, 36-71 offline.
    n0 = list(range(0, 18)) + list(range(36, 54))
    n1 = list(range(18, 36)) + list(range(54, 72))
    core_sets = [[k, k + 36] for k in range(36)]
    m.append((Machine("xeon-2s-18c-nosmt-offline", "x86_64", [n0, n1], core_sets, core_sets,
                      online=range(36),
                      note="2 nodes x 18 cores x 2 threads, offset numbering, CPUs 36-71 offline"),
              [4, 18, 36, 72]))
    # vm-8vcpu-hotplug-64: 64 possible, 8 present (x86: CPUs never brought up).
    m.append((Machine("vm-8vcpu-hotplug-64", "x86_64", [range(64)], pairs(0, 64), pairs(0, 64),
                      present=range(8),
                      note="64 possible CPUs, 0-7 present; SMT pairs, per-core clusters"),
              [8, 16, 36, 64]))
    m.append((Machine("arm64-hotplug-64", "arm64", [range(64)], [], blocks(0, 64, 4),
                      present=range(8),
                      note="64 possible CPUs, 0-7 present; no SMT, clusters of 4"),
              [8, 16, 36, 64]))
    # Two nodes, clusters of two SMT cores, CPUs offline inside clusters and cores, 14-15
    # not present.
    for arch in ("x86_64", "arm64"):
        m.append((Machine(f"mixed-2node-{arch}", arch, [range(8), range(8, 16)], pairs(0, 16),
                          blocks(0, 16, 4), present=range(14),
                          online=[0, 1, 2, 4, 5, 6, 8, 9, 10, 11, 12],
                          note="2 nodes, SMT2, clusters of 2 cores; 3,7,13 offline, 14-15 not present"),
                  [3, 4, 6, 8, 16]))
    # Clusters that split SMT sets (the kernel accepts them).
    shifted = [[0], [1, 2], [3, 4], [5, 6], [7]]
    for arch in ("x86_64", "arm64"):
        m.append((Machine(f"split-shifted-{arch}", arch, [range(8)], pairs(0, 8), shifted,
                          note="SMT pairs 2k,2k+1; clusters 0, 1-2, 3-4, 5-6, 7 (every pair split)"),
                  [2, 3, 4, 5, 8]))
    m.append((Machine("split-shifted-offline", "x86_64", [range(8)], pairs(0, 8), shifted,
                      online=range(6),
                      note="split-shifted with CPUs 6-7 offline"),
              [2, 3, 4, 8]))
    inter = [[b + k, b + k + 4] for b in (0, 8) for k in range(4)]
    for arch in ("x86_64", "arm64"):
        m.append((Machine(f"split-interleaved-2node-{arch}", arch, [range(8), range(8, 16)], inter,
                          pairs(0, 16),
                          note="2 nodes, SMT siblings k,k+4 in each node, clusters of consecutive pairs"),
                  [2, 4, 6, 8, 16]))
    return m


VARIANTS = [("pre-cluster", 0, "Debian linux-source-6.12 lib/group_cpus.c"),
            ("cluster", 1, "Debian linux-source-7.2 lib/group_cpus.c")]


def dump(case):
    """JSON with one CPU per line (the files stay short and readable)."""
    cpus = case["topology"].pop("cpus")
    text = json.dumps(case, indent=1)
    rows = ",\n".join("   " + json.dumps(c, separators=(", ", ": ")) for c in cpus)
    head, tail = text.split('\n "variant"', 1)
    head = head.rstrip().rstrip(",").rstrip().rstrip("}").rstrip()
    return f'{head},\n  "cpus": [\n{rows}\n  ]\n }},\n "variant"{tail}\n'


def main():
    harness = sys.argv[1:3]
    outdir = Path(sys.argv[3])
    outdir.mkdir(parents=True, exist_ok=True)
    n_cases = 0
    for machine, calls in machines():
        for variant, which, source in VARIANTS:
            results = run_harness(harness[which], machine, calls)
            for g in calls:
                r = results[g]
                case_id = f"view-{machine.name}-g{g}-{variant}"
                case = {
                    "format": "irqscope-golden/1",
                    "model_version": "kernel-c-view-1",
                    "id": case_id,
                    "kind": "group_cpus_evenly",
                    "description": f"{machine.note}; {machine.arch} masks; {source}",
                    "notes": [f"WARN_ON hits in the call: {r['warnings']}"] if r["warnings"] else [],
                    "topology": machine.topology_json(),
                    "variant": variant,
                    "sort": "heap-v6.11",
                    "numgrps": g,
                    "spread_counter": 0,
                    "expected": {
                        "null": r.get("null", False),
                        "nummasks": None if r.get("null") else r["nummasks"],
                        "masks": None if r.get("null") else r["masks"],
                        "spread_offset": None,
                        "spread_counter_after": 0,
                    },
                }
                (outdir / f"{case_id}.json").write_text(dump(case))
                n_cases += 1
    print(f"gen.py: {n_cases} cases in {outdir}")


if __name__ == "__main__":
    main()
