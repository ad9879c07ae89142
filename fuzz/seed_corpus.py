#!/usr/bin/env python3
"""Seed fuzz/corpus/<target>/ from the repository's own fixtures (topologies/, tests/data/).

The corpora grow while fuzzing and stay out of git (fuzz/corpus is ignored); this script makes
the same starting point anywhere. Files are named by the SHA-1 of their contents, as libFuzzer
names what it adds.
"""
import base64
import glob
import hashlib
import os
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def files(pattern):
    return sorted(p for p in glob.glob(os.path.join(ROOT, pattern), recursive=True) if os.path.isfile(p))


def read(p):
    with open(p, "rb") as f:
        return f.read()


def link(js):
    # The permalink form: "v1." + base64url(raw deflate(JSON)), unpadded.
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return "v1." + base64.urlsafe_b64encode(c.compress(js.encode()) + c.flush()).decode().rstrip("=")


for p in files("topologies/*.toml") + files("tests/data/import-*.toml"):
    put("import_toml", read(p))
for p in files("tests/data/lscpu-*.txt"):
    put("import_lscpu", read(p))
for p in files("tests/data/numactl-*.txt"):
    put("import_numactl", read(p))
for p in files("tests/data/hwloc-*.xml"):
    put("import_hwloc_xml", read(p))
for s in [
    "pack:2 numa:2 l2:4 core:2 pu:2",
    "Package:2 NUMANode:2 L2Cache:2 Core:2 PU:2",
    "pack:2(indexes=0,1) numa:2(memory=1GB) l2:2 core:2 pu:2",
    "pack:2 core:4",
    "numa:4 core:8 pu:2",
    "pack:1 die:2 l3:2 core:4 pu:1",
]:
    put("import_synthetic", s)
# The live fixtures' sysfs trees, written as the import_sysfs target reads them: one
# `path=contents` line per file, the path relative to devices/system, newlines as `\n`.
for system in sorted(glob.glob(os.path.join(ROOT, "tests/data/live/*/sys/devices/system"))):
    lines = []
    for p in sorted(p for p in glob.glob(system + "/**/*", recursive=True) if os.path.isfile(p)):
        text = read(p).decode(errors="replace").replace("\n", "\\n")
        lines.append(os.path.relpath(p, system) + "=" + text)
    put("import_sysfs", "\n".join(lines) + "\n")
    for p in sorted(glob.glob(system + "/**/*list", recursive=True))[:40]:
        put("cpulist", read(p))
for s in ["0-3,8-11", "0", "0-8191", "1,3,5-7", "ff,ffffffff", "00000000,0000000f", "0-63:2/4",
          "6x62:pre=1,name=nvme", "4x16:sets=4+2", "2x8:managed=false,node=1"]:
    put("cpulist", s)
for p in files("tests/data/live/*/proc/interrupts"):
    put("live_interrupts", read(p))
    # Two readings (the target's four form feeds between them) that fit in its -max_len: the
    # file's first lines, then the same with a row gone, a name changed and a row added, as a
    # host's next reading may be.
    lines = read(p).splitlines(keepends=True)
    head, size = [], 0
    for line in lines:
        size += len(line)
        if size > 1800:
            break
        head.append(line)
    if len(head) > 3:
        later = head[:2] + head[3:]
        later[-1] = later[-1].replace(b"edge", b"level", 1).replace(b"  ", b" x ", 1)
        later.append(head[1].replace(b":", b"9:", 1))
        put("live_interrupts", b"".join(head) + b"\x0c" * 4 + b"".join(later))
for p in files("tests/data/live/*/proc/irq/*/*"):
    put("live_irq_files", read(p))
for p in files("tests/data/lab/*.json") + files("tests/data/live/captures-v1/*.json"):
    put("live_snapshot", read(p))
for js in [
    '{"topology":"xeon-2s-18c-smt2","devices":[{"count":2,"name":"nvme","queues":16,"pre":1,"blk_mq":"irq"},'
    '{"name":"nic","queues":4,"managed":false,"node":1},{"name":"q","queues":6,"post":1,"sets":[4,2]}],'
    '"variant":"rotation","sort":"heap-v6.9","effective":"x86-matrix","spread_counter":3}',
    '{"topology":"vm-2vcpu-smt2","devices":[{"name":"nvme","queues":4}]}',
    '{"topology":"azure-4vcpu-smt2","devices":[{"count":1,"name":"nvme","queues":8,"pre":1}],'
    '"irqaffinity":"0-1","isolcpus":"2"}',
]:
    # The target decodes both the text and "v1." + text, so the body alone is a seed too.
    put("permalink_decode", link(js))
    put("permalink_decode", link(js)[3:])
for t in sorted(os.listdir(CORPUS)):
    print(t, len(os.listdir(os.path.join(CORPUS, t))))
