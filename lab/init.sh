#!/bin/sh
# PID 1 of the initramfs `irqscope lab run` builds. Loads the modules listed in
# /etc/lab/modules, waits for the NVMe controllers, runs `irqscope-agent capture` as probed
# (written to the second serial port), unbinds every controller and binds them again one at a
# time in PCI order, captures again (third serial port), and powers off. Progress lines on the
# console start with "lab: " so the host can follow the boot.
#
# Kernel command line: lab.nvme=N controllers to wait for; lab.timeout=S seconds of uptime
# before giving up.

export PATH=/bin
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null

say() { echo "lab: $*" > /dev/console; }
param() { tr ' ' '\n' < /proc/cmdline | sed -n "s/^lab\\.$1=//p" | tail -n 1; }
uptime_s() { cut -d. -f1 /proc/uptime; }

want=$(param nvme); want=${want:-0}
limit=$(param timeout); limit=${limit:-600}

say "init $(uname -r), uptime $(cut -d' ' -f1 /proc/uptime)s"
# Open both capture ports now, so their interrupts are requested before any controller is bound
# again (opening a port later would take a vector in the middle of the sequence).
exec 4> /dev/ttyS1 5> /dev/ttyS2
stty -F /dev/ttyS1 raw -echo 2>/dev/null
stty -F /dev/ttyS2 raw -echo 2>/dev/null

while read -r mod; do
	[ -n "$mod" ] && { insmod "/lib/modules/$mod" || say "insmod $mod failed"; }
done < /etc/lab/modules

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

wait_for() { # wait_for ADDR...
	for a in "$@"; do
		until ready "$a"; do
			[ "$(uptime_s)" -lt "$limit" ] || { say "timeout waiting for $a"; return 1; }
			sleep 0.1
		done
	done
}

capture() { # capture FD PHASE
	irqscope-agent capture --host lab -o /tmp/$2.json || { say "agent capture failed ($2)"; return 1; }
	cat /tmp/$2.json >&$1
	say "captured $2 ($(wc -c < /tmp/$2.json) bytes)"
}

pci=$(controllers)
found=$(echo $pci | wc -w)
[ "$found" = "$want" ] || say "found $found NVMe controllers, expected $want"
ok=1
wait_for $pci || ok=0
say "probed $found controllers at uptime $(cut -d' ' -f1 /proc/uptime)s"
capture 4 boot || ok=0

if [ -n "$pci" ] && [ -d /sys/bus/pci/drivers/nvme ]; then
	for a in $pci; do echo "$a" > /sys/bus/pci/drivers/nvme/unbind; done
	for a in $pci; do
		echo "$a" > /sys/bus/pci/drivers/nvme/bind
		wait_for "$a" || ok=0
	done
	say "bound one at a time at uptime $(cut -d' ' -f1 /proc/uptime)s"
fi
capture 5 seq || ok=0
exec 4>&- 5>&-
[ "$ok" = 1 ] && say "done" || say "incomplete"
sync
sleep 0.2
poweroff -f
