#!/bin/bash
# SPDX-License-Identifier: MIT
#
# ci/vm/install-guest.sh - runs inside the Debian 12 system that
# ci/package-install.sh installed tb5-nccl-minimal into and booted under
# QEMU, as a systemd service (root) once the system is up:
#
#   - modprobe tb5 loopback=1 takes ring_size from /etc/modprobe.d/tb5.conf
#     ($TB5_GUEST_RING: 4096, the default, or 2048 after the upgrade test's
#     edit)
#   - /dev/tb5_0 and /dev/tb5_1 appear with group tb5, mode 0660
#   - tb5-selftest passes run by "tester", an unprivileged member of tb5
#   - a short tb5-perf over the loop pair, as tester
#   - with TB5_GUEST_FULL=1: the udev rule reaches nodes that existed
#     before it (the package's postinst, run as dpkg runs it on install),
#     and ring_size=1024 written to the conffile takes effect after a reload
#
# Prints "TB5-VM-START:" first (the system reached the test),
# "TB5-VM-RESULT: rc=N" last, and powers the machine off.
set -uo pipefail

RING=${TB5_GUEST_RING:-4096}
FULL=${TB5_GUEST_FULL:-0}
CONF=/etc/modprobe.d/tb5.conf
RULE=/usr/lib/udev/rules.d/60-tb5.rules

say() { echo "guest: $*"; }
fail() {
	echo "FAIL $*"
	finish 1
}
finish() {
	echo "TB5-VM-RESULT: rc=$1"
	sync
	systemctl poweroff --force --force
	exit "$1"
}

wait_ready() {
	local n i
	for n in 0 1; do
		for ((i = 0; i < 200; i++)); do
			[[ $(cat "/sys/class/tb5/tb5_$n/state" 2>/dev/null) == ready ]] && break
			sleep 0.1
		done
		[[ $(cat "/sys/class/tb5/tb5_$n/state" 2>/dev/null) == ready ]] ||
			fail "tb5_$n is not ready"
	done
}

# load: modprobe tb5 with one loop pair; the rest comes from the conffile.
load() {
	modprobe tb5 loopback=1 || fail "modprobe tb5 loopback=1"
	udevadm settle --timeout=30
	wait_ready
}

unload() {
	modprobe -r tb5 || fail "modprobe -r tb5"
}

# nodes GROUP MODE: both nodes have this group and mode.
nodes() {
	local n got
	for n in 0 1; do
		got=$(stat -c '%G %a' "/dev/tb5_$n" 2>/dev/null) || fail "no /dev/tb5_$n"
		[[ $got == "$1 $2" ]] || fail "/dev/tb5_$n is '$got', expected '$1 $2'"
	done
	echo "PASS nodes: /dev/tb5_0, /dev/tb5_1 $1 $2"
}

ring() {
	local got
	got=$(cat /sys/module/tb5/parameters/ring_size)
	[[ $got == "$1" ]] || fail "ring_size is $got, expected $1 ($2)"
	echo "PASS ring_size=$got ($2)"
}

as_tester() {
	runuser -u tester -- "$@"
}

main() {
	# The start marker: the system booted and the test begins (the host
	# tells a boot that never got here from a failed test).
	echo "TB5-VM-START: kernel $(uname -r), $(nproc) CPUs"
	say "kernel $(uname -r), tb5-dkms $(dpkg-query -W -f='${Version}' tb5-dkms)," \
		"udev $(udevadm --version)"
	say "$CONF: $(grep '^options' "$CONF")"
	[[ -f /lib/modules/$(uname -r)/updates/dkms/tb5.ko ]] ||
		ls /lib/modules/"$(uname -r)"/updates/dkms/tb5.ko* >/dev/null 2>&1 ||
		fail "no tb5.ko from DKMS for $(uname -r)"

	load
	ring "$RING" "from $CONF"
	nodes tb5 660
	id tester
	as_tester tb5-selftest || fail "tb5-selftest as tester (group tb5)"
	echo "PASS tb5-selftest as tester"
	# Timings under TCG mean nothing: this shows the installed tool works.
	as_tester tb5-perf --loop --wait --test bw,lat --bw-sizes 4K:1M:16 \
		--lat-sizes 8:4K:8 --duration 0.05 --verify --no-progress ||
		fail "tb5-perf as tester"
	echo "PASS tb5-perf as tester"
	unload

	if [[ $FULL == 1 ]]; then
		# Nodes that exist before the rule does: without the rule they
		# are root's (devtmpfs), and the package's postinst, run as
		# dpkg runs it after unpacking, reaches them.
		mv "$RULE" /run/60-tb5.rules.away
		udevadm control --reload
		load
		nodes root 600
		mv /run/60-tb5.rules.away "$RULE"
		/var/lib/dpkg/info/tb5-dkms.postinst configure \
			"$(dpkg-query -W -f='${Version}' tb5-dkms)" ||
			fail "tb5-dkms.postinst configure"
		nodes tb5 660
		echo "PASS the postinst applied the udev rule to nodes already present"
		unload

		sed -i "s/^options tb5 ring_size=$RING\$/options tb5 ring_size=1024/" "$CONF"
		load
		ring 1024 "after editing $CONF and reloading"
		as_tester tb5-selftest >/dev/null || fail "tb5-selftest after the reload"
		echo "PASS tb5-selftest with ring_size=1024"
		unload
	fi
	finish 0
}

main
