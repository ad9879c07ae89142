#!/usr/bin/env python3
"""Run fuzz targets to a number of executions each and print the table of fuzz/README.md.

    ./run_all.py                        # every target to 10 M, two at a time
    ./run_all.py --runs 100000 cpulist  # one target, a short run
    ./run_all.py --add import_lscpu=881152 ...   # count an earlier run of the same binary

Expects the instrumented build of README.md ("Build") in target/x86_64-unknown-linux-gnu/
release/ and the corpora of seed_corpus.py in corpus/; each run grows its target's corpus and
writes crash, leak, timeout and slow-unit inputs to artifacts/<target>-*. Every process runs
under `nice -n 19`, one libFuzzer process per target (no -fork, no -jobs, -reload=0), longest
first on --jobs workers, each with its -max_len (MAX_LEN below; libFuzzer's default, the largest
seed, for the others).

A row's executions are libFuzzer's own count (stat::number_of_executed_units) plus any --add;
the exit status is 1 when a run found a crash (an artifact other than a slow unit) or failed.
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.join(HERE, "target", "x86_64-unknown-linux-gnu", "release")
TARGETS = [
    "import_toml", "import_lscpu", "import_numactl", "import_hwloc_xml", "import_synthetic",
    "import_sysfs", "live_interrupts", "live_irq_files", "live_snapshot", "permalink_decode",
    "cpulist",
]
# Longest input libFuzzer makes per target. An execution costs about its input's length, and
# without a limit libFuzzer takes the largest seed's (118 KB of hwloc XML, 75 KB of sysfs tree,
# 47 KB of /proc/interrupts, 10 KB of lscpu): the grammar of each format is reached well within
# these, and whole files of every size are read by the tests (tests/it/import*.rs, live.rs).
# import_synthetic's is its input limit (SYNTHETIC_BYTES_MAX); import_toml's largest seed
# (under 1 KB) is limit enough.
MAX_LEN = {"import_lscpu": 4096, "import_numactl": 4096, "import_synthetic": 4096,
           "import_hwloc_xml": 8192, "import_sysfs": 4096, "live_interrupts": 4096}
# One process per corpus: nothing else writes to it, so it is never re-read (-reload=0; the
# re-reads took about a tenth of an importer's time).
COMMON = ["-reload=0"]
# Slowest first (exec/s of the short runs in fuzz/README.md, and of the runs before them for
# the fast targets, whose short-run rates were held down by the load), so that two workers
# finish close together.
ORDER = ["import_toml", "import_numactl", "import_sysfs", "import_synthetic", "import_lscpu",
         "live_interrupts", "import_hwloc_xml", "permalink_decode", "cpulist", "live_irq_files",
         "live_snapshot"]


def stat(log, key):
    m = re.findall(r"^stat::%s:\s+(\d+)" % key, log, re.M)
    return int(m[-1]) if m else None


def size_text(n):
    return f"{n / 1024:.0f} KiB" if n < 10 << 20 else f"{n / (1 << 20):.1f} MiB"


def corpus_size(d):
    names = os.listdir(d)
    return len(names), sum(os.path.getsize(os.path.join(d, n)) for n in names)


def run(target, runs, logs):
    corpus = os.path.join(HERE, "corpus", target)
    os.makedirs(os.path.join(HERE, "artifacts"), exist_ok=True)
    cmd = ["nice", "-n", "19", os.path.join(BIN, target), corpus, f"-runs={runs}",
           "-print_final_stats=1", f"-artifact_prefix={os.path.join(HERE, 'artifacts', target)}-",
           *COMMON, *([f"-max_len={MAX_LEN[target]}"] if target in MAX_LEN else [])]
    start = time.monotonic()
    with open(os.path.join(logs, f"{target}.log"), "w+") as out:
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT)
        out.seek(0)
        log = out.read()
    seconds = time.monotonic() - start
    crashes = [a for a in os.listdir(os.path.join(HERE, "artifacts"))
               if a.startswith(target + "-") and not a.startswith(target + "-slow-unit-")]
    return {
        "target": target, "rc": rc, "seconds": seconds,
        "executions": stat(log, "number_of_executed_units") or 0,
        "rate": stat(log, "average_exec_per_sec") or 0,
        "corpus": corpus_size(corpus), "crashes": len(crashes),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="*", help="default: all eleven")
    ap.add_argument("--runs", type=int, default=10_000_000, help="executions per target (default 10 M)")
    ap.add_argument("--jobs", type=int, default=2, help="targets run at once (default 2)")
    ap.add_argument("--add", action="append", default=[], metavar="TARGET=N",
                    help="executions of an earlier run of the same binary to count in")
    ap.add_argument("--logs", default=os.path.join(HERE, "artifacts", "logs"))
    a = ap.parse_args()
    targets = a.targets or TARGETS
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        ap.error(f"unknown targets {unknown}; known: {' '.join(TARGETS)}")
    earlier = {}
    for kv in a.add:
        t, _, n = kv.partition("=")
        if t not in TARGETS or not n.isdigit():
            ap.error(f"--add {kv!r}: want TARGET=N")
        earlier[t] = int(n)
    for t in targets:
        if not os.path.isdir(os.path.join(HERE, "corpus", t)):
            ap.error(f"no corpus for {t}: run ./seed_corpus.py first")
        if not os.access(os.path.join(BIN, t), os.X_OK):
            ap.error(f"no build of {t} in {BIN}: see README.md, Build")
    os.makedirs(a.logs, exist_ok=True)
    todo = sorted(targets, key=ORDER.index)
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        rows = list(pool.map(lambda t: run(t, a.runs - earlier.get(t, 0), a.logs), todo))
    print("| target | executions | exec/s | time | corpus (files / size) | crashes |")
    print("|---|---:|---:|---:|---|---:|")
    failed = False
    for r in sorted(rows, key=lambda r: TARGETS.index(r["target"])):
        files, size = r["corpus"]
        n = r["executions"] + earlier.get(r["target"], 0)
        note = f" ({earlier[r['target']]} earlier + {r['executions']})" if r["target"] in earlier else ""
        print(f"| `{r['target']}` | {n}{note} | {r['rate']} | {r['seconds']:.0f} s | "
              f"{files} / {size_text(size)} | {r['crashes']} |")
        failed |= r["rc"] != 0 or r["crashes"] > 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
