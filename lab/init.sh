#!/bin/sh
# PID 1 of the initramfs `irqscope lab run` builds. Loads the modules listed in
# /etc/lab/modules, waits for the NVMe controllers, captures the interrupts as probed, unbinds
# every controller and binds them again one at a time in PCI order, captures again, and powers
# off. Progress lines on the console start with "lab: " so the host can follow the boot and say
# which phase it waits on; a line "lab: error: ..." ends the run without a retry.
#
# Captures: with /bin/irqscope-agent (x86 guests), `irqscope-agent capture` writes each phase to
# its serial port (ttyS1 as probed, ttyS2 one at a time). Without it (arm64 guests: QEMU virt
# has one serial port and the x86 agent cannot run there), the files the agent reads are printed
# on the console between "@dump PHASE begin" and "@dump PHASE end N" (src/lab/console.rs reads
# them back and runs the agent's collector on the host).
#
# Spreading calls: when the kernel command line defines kprobe events (lab run on x86), the
# trace of each phase is printed on the console between "@trace PHASE begin" and "@trace PHASE
# end N", each line as "@t LINE", after one "@t virtio virtioN PCI-ADDRESS" line per virtio
# device (src/lab/calls.rs reads them), and cleared for the next phase.
#
# Kernel command line: lab.nvme=N controllers to wait for; lab.virtio_blk=N virtio-blk devices
# to wait for; lab.timeout=S seconds of uptime before giving up.

export PATH=/bin
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null

say() { echo "lab: $*" > /dev/console; }
param() { tr ' ' '\n' < /proc/cmdline | sed -n "s/^lab\\.$1=//p" | tail -n 1; }
uptime_s() { cut -d. -f1 /proc/uptime; }

want=$(param nvme); want=${want:-0}
want_vblk=$(param virtio_blk); want_vblk=${want_vblk:-0}
limit=$(param timeout); limit=${limit:-600}
agent=
[ -x /bin/irqscope-agent ] && agent=1

say "init $(uname -r), uptime $(cut -d' ' -f1 /proc/uptime)s"
if [ -n "$agent" ]; then
	# Open both capture ports now, so their interrupts are requested before any controller is
	# bound again (opening a port later would take a vector in the middle of the sequence).
	exec 4> /dev/ttyS1 5> /dev/ttyS2
	stty -F /dev/ttyS1 raw -echo 2>/dev/null
	stty -F /dev/ttyS2 raw -echo 2>/dev/null
fi

nmods=$(grep -c . /etc/lab/modules)
[ "$nmods" -gt 0 ] && say "loading $nmods modules"
while read -r mod; do
	[ -n "$mod" ] && { insmod "/lib/modules/$mod" || say "insmod $mod failed"; }
done < /etc/lab/modules

vblk_probed() { # the virtio-blk devices bound to their driver
	ls -d /sys/bus/virtio/drivers/virtio_blk/virtio* 2>/dev/null | wc -l
}
if [ "$want_vblk" -gt 0 ]; then
	say "waiting for $want_vblk virtio-blk devices to probe"
	until [ "$(vblk_probed)" -ge "$want_vblk" ]; do
		[ "$(uptime_s)" -lt "$limit" ] || { say "timeout waiting for virtio-blk ($(vblk_probed) of $want_vblk)"; break; }
		sleep 0.1
	done
fi

trace_dump() { # trace_dump PHASE: the calls the kprobe events recorded, on the console
	t=/sys/kernel/tracing
	[ -r $t/trace ] || mount -t tracefs tracefs $t 2>/dev/null
	[ -e $t/events/lab ] || return 0
	read -r level rest < /proc/sys/kernel/printk
	echo 1 > /proc/sys/kernel/printk
	: > /tmp/trace
	for v in /sys/bus/virtio/devices/virtio*; do
		[ -e "$v" ] && echo "virtio ${v##*/} $(basename "$(readlink -f "$v/..")")" >> /tmp/trace
	done
	grep -v '^#' $t/trace >> /tmp/trace
	echo "@trace $1 begin"
	sed 's/^/@t /' /tmp/trace
	echo "@trace $1 end $(wc -l < /tmp/trace)"
	echo > $t/trace
	echo "$level" > /proc/sys/kernel/printk
}

controllers() { # PCI addresses of NVMe functions (class 010802), in PCI order
	for dev in /sys/bus/pci/devices/*; do
		[ "$(cat "$dev/class")" = 0x010802 ] && echo "${dev##*/}"
	done | sort
}

ready() { # ready ADDR: the controller is live and has its namespace
	for c in /sys/bus/pci/devices/$1/nvme/nvme*; do
		[ "$(cat "$c/state" 2>/dev/null)" = live ] && ls -d "$c"/nvme*n* > /dev/null 2>&1 && return 0
	done
	return 1
}

wait_for() { # wait_for ADDR...: a line every 30 s of waiting says which
	for a in "$@"; do
		next=$(( $(uptime_s) + 30 ))
		until ready "$a"; do
			now=$(uptime_s)
			[ "$now" -lt "$limit" ] || { say "timeout waiting for $a"; return 1; }
			[ "$now" -lt "$next" ] || { say "still waiting for $a (uptime ${now}s)"; next=$((now + 30)); }
			sleep 0.1
		done
	done
}

n=0
rec() { echo "$*"; n=$((n + 1)); }
val() { # val FILE: a one-line file as "@v PATH TEXT", an empty one as "@e PATH"
	[ -r "$1" ] || return 0
	v=
	if IFS= read -r v < "$1" || [ -n "$v" ]; then rec "@v ${1#/} $v"; return; fi
	# The shell's read gets nothing from sysfs binary attributes (topology/*_list, node
	# cpulist): cat them, keeping the difference between an empty file and an empty line.
	v=$(cat "$1"; echo .)
	v=${v%.}
	if [ -z "$v" ]; then rec "@e ${1#/}"; else rec "@v ${1#/} ${v%
}"; fi
}

dump() { # dump PHASE: the files irqscope-agent reads, on the console
	n=0
	read -r level rest < /proc/sys/kernel/printk
	# Only emergency messages (a panic) may interleave with the records.
	echo 1 > /proc/sys/kernel/printk
	echo "@dump $1 begin"
	val /proc/sys/kernel/osrelease
	val /proc/sys/kernel/random/boot_id
	cat /proc/interrupts > /tmp/interrupts
	rec "@f proc/interrupts $(wc -l < /tmp/interrupts)"
	cat /tmp/interrupts
	for d in /proc/irq/[0-9]*; do
		for f in smp_affinity_list effective_affinity_list node; do val "$d/$f"; done
	done
	s=/sys/devices/system
	for f in possible present online; do val "$s/cpu/$f"; done
	for c in "$s"/cpu/cpu[0-9]*; do
		rec "@d ${c#/}"
		for f in thread_siblings_list core_cpus_list cluster_cpus_list package_cpus_list \
			core_siblings_list die_cpus_list; do
			val "$c/topology/$f"
		done
	done
	for d in "$s"/node/node[0-9]*; do
		[ -d "$d" ] || continue
		rec "@d ${d#/}"
		val "$d/cpulist"
		val "$d/distance"
		for l in "$d"/cpu[0-9]*; do [ -e "$l" ] && rec "@l ${l#/}"; done
	done
	echo "@dump $1 end $n"
	echo "$level" > /proc/sys/kernel/printk
	say "captured $1 ($n records)"
}

capture() { # capture FD PHASE
	if [ -z "$agent" ]; then
		dump "$2" > /dev/console
		return
	fi
	irqscope-agent capture --host lab -o /tmp/$2.json || { say "agent capture failed ($2)"; return 1; }
	cat /tmp/$2.json >&$1
	say "captured $2 ($(wc -c < /tmp/$2.json) bytes)"
}

pci=$(controllers)
found=$(echo $pci | wc -w)
[ "$found" = "$want" ] || say "found $found NVMe controllers, expected $want"
if [ "$found" -gt 0 ] && [ ! -d /sys/bus/pci/drivers/nvme ]; then
	say "error: no nvme driver in kernel $(uname -r): it is neither built in nor among the modules loaded"
	poweroff -f
fi
ok=1
say "waiting for $found controllers to probe"
wait_for $pci || ok=0
say "probed $found controllers at uptime $(cut -d' ' -f1 /proc/uptime)s"
capture 4 boot || ok=0
trace_dump boot > /dev/console

if [ -n "$pci" ] && [ -d /sys/bus/pci/drivers/nvme ]; then
	say "unbinding $found controllers"
	for a in $pci; do echo "$a" > /sys/bus/pci/drivers/nvme/unbind; done
	k=0
	for a in $pci; do
		k=$((k + 1))
		say "binding $a ($k of $found)"
		echo "$a" > /sys/bus/pci/drivers/nvme/bind
		wait_for "$a" || ok=0
	done
	say "bound one at a time at uptime $(cut -d' ' -f1 /proc/uptime)s"
fi
capture 5 seq || ok=0
trace_dump seq > /dev/console
[ -n "$agent" ] && exec 4>&- 5>&-
[ "$ok" = 1 ] && say "done" || say "incomplete"
sync
sleep 0.2
poweroff -f
