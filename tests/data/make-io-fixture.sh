#!/bin/sh
# Regenerate hwloc-io-azure-l96as-v4.xml (see README.md here): hwloc's Linux backend reading the
# sysfs tree `irqscope topology export sysfs azure-l96as-v4` writes, plus three PCI devices laid
# out as the kernel shows them under /sys/devices/pci*/ and /sys/bus/pci/devices/.
# Needs: hwloc (lstopo 2.9), a debug build of irqscope (or IRQSCOPE=path). An argument writes
# the XML there instead (the integration tests run the recipe against the installed hwloc).
set -eu
out=$(realpath -m "${1:-$(dirname "$0")/hwloc-io-azure-l96as-v4.xml}")
cd "$(dirname "$0")"
irqscope=${IRQSCOPE:-../../target/debug/irqscope}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$irqscope" topology export sysfs azure-l96as-v4 "$tmp" 2>/dev/null
sys=$tmp/sys
mkdir -p "$sys/bus/pci/devices" "$sys/class/block" "$sys/class/net"
# pci_dev ROOT_PORT BDF CLASS VENDOR DEVICE NUMA_NODE LOCAL_CPUS(hex) LOCAL_CPULIST
pci_dev() {
    dir=$sys/devices/pci0000:${2%%:*}/$1/$2
    mkdir -p "$dir"
    echo "$3" > "$dir/class"
    echo "$4" > "$dir/vendor"
    echo "$5" > "$dir/device"
    echo 0x00 > "$dir/revision"
    echo "$6" > "$dir/numa_node"
    echo "$7" > "$dir/local_cpus"
    echo "$8" > "$dir/local_cpulist"
    ln -s "../../../devices/pci0000:${2%%:*}/$1/$2" "$sys/bus/pci/devices/$2"
}
# An NVMe drive on node 1 (CPUs 48-95).
pci_dev 0000:40:01.1 0000:41:00.0 0x010802 0x144d 0xa808 1 ffffffff,ffff0000,00000000 48-95
nvme=devices/pci0000:40/0000:40:01.1/0000:41:00.0/nvme/nvme0/nvme0n1
mkdir -p "$sys/$nvme"
echo 259:0 > "$sys/$nvme/dev"
echo 1953525168 > "$sys/$nvme/size"
ln -s "../../$nvme" "$sys/class/block/nvme0n1"
# A NIC on node 0 (CPUs 0-47).
pci_dev 0000:00:01.1 0000:01:00.0 0x020000 0x1414 0x00ba 0 00000000,0000ffff,ffffffff 0-47
net=devices/pci0000:00/0000:00:01.1/0000:01:00.0/net/eth0
mkdir -p "$sys/$net"
echo 00:0d:3a:00:00:01 > "$sys/$net/address"
echo 1 > "$sys/$net/type"
ln -s "../../$net" "$sys/class/net/eth0"
# A second NVMe drive whose firmware gives no locality (numa_node -1, every CPU local).
pci_dev 0000:80:01.1 0000:81:00.0 0x010802 0x144d 0xa808 -1 ffffffff,ffffffff,ffffffff 0-95
nvme=devices/pci0000:80/0000:80:01.1/0000:81:00.0/nvme/nvme1/nvme1n1
mkdir -p "$sys/$nvme"
echo 259:1 > "$sys/$nvme/dev"
echo 1953525168 > "$sys/$nvme/size"
ln -s "../../$nvme" "$sys/class/block/nvme1n1"
lstopo -i "$tmp" --of xml - 2>/dev/null > "$out"
