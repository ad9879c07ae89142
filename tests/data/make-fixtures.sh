#!/bin/sh
# Regenerate the captured fixtures in tests/data (see README.md there).
# Needs: util-linux (lscpu), hwloc (lstopo), a debug build of irqscope.
set -eu
cd "$(dirname "$0")"
irqscope=../../target/debug/irqscope
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for preset in amd-epyc-9654-2s-nps4 xeon-2s-18c-nosmt-offline intel-core-i9-13900k; do
    "$irqscope" topology export sysfs "$preset" "$tmp/$preset" 2>/dev/null
    lscpu --sysroot "$tmp/$preset" -p > "lscpu-p-$preset.txt"
    lscpu --sysroot "$tmp/$preset" -e > "lscpu-e-$preset.txt"
    lscpu --sysroot "$tmp/$preset" -p=CPU,CORE,SOCKET,NODE,CLUSTER,ONLINE --all > "lscpu-p-cluster-$preset.txt"
done
"$irqscope" topology export sysfs amd-epyc-9654-2s-nps4 "$tmp/nps4" 2>/dev/null
lstopo -i "$tmp/nps4" --of xml - > hwloc-linux-amd-epyc-9654-2s-nps4.xml 2>/dev/null
lstopo -i "pack:2 numa:2 l2:4 core:2 pu:2" --of xml - > hwloc-synthetic-pack2-numa2-l2x4.xml
