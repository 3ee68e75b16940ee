# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# ci/vm/guest-lib.sh - what the booted systems' tests share
# (ci/vm/install-guest.sh for the debs, ci/vm/rpm-guest.sh for the rpms):
# the verdict and power-off, tb5 loaded with one loop pair and unloaded, the
# nodes' owner and mode, ring_size, a unit coming up, the test user, a
# scrape of the exporter. ci/vm/system-lib.sh installs it beside the test as
# /usr/local/lib/tb5-guest-lib.sh; sourced, never run.
#
# TB5_GUEST_SERVICE (default 1): the test runs as the booted system's
# service, so the end marker is printed and the machine powered off at the
# end; 0 where a check runs in a chroot of the system instead.

# shellcheck disable=SC2034  # used by the tests that source this
TB5_GUEST_CONF=/etc/modprobe.d/tb5.conf
# shellcheck disable=SC2034
TB5_GUEST_RULE=/usr/lib/udev/rules.d/60-tb5.rules

say() { echo "guest: $*"; }

fail() {
	echo "FAIL $*"
	finish 1
}

# finish RC: the end marker, and the power-off (as the service).
finish() {
	[[ ${TB5_GUEST_SERVICE:-1} == 1 ]] || exit "$1"
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

# nodes OWNER:GROUP MODE: both nodes have them.
nodes() {
	local n got
	for n in 0 1; do
		got=$(stat -c '%U:%G %a' "/dev/tb5_$n" 2>/dev/null) || fail "no /dev/tb5_$n"
		[[ $got == "$1 $2" ]] || fail "/dev/tb5_$n is '$got', expected '$1 $2'"
	done
	echo "PASS nodes: /dev/tb5_0, /dev/tb5_1 $1 $2"
}

# ring SIZE WHY: the loaded module's ring_size.
ring() {
	local got
	got=$(cat /sys/module/tb5/parameters/ring_size)
	[[ $got == "$1" ]] || fail "ring_size is $got, expected $1 ($2)"
	echo "PASS ring_size=$got ($2)"
}

# wait_active UNIT WHEN: UNIT is active within 20 s; fails with the end of
# its journal otherwise.
wait_active() {
	local i
	for ((i = 0; i < 100; i++)); do
		[[ $(systemctl is-active "$1") == active ]] && return 0
		sleep 0.2
	done
	fail "$1 is $(systemctl is-active "$1") $2: $(journalctl -u "$1" -b --no-pager | tail -n 5)"
}

# as_tester COMMAND...: as "tester", the unprivileged user of the base
# system (a member of tb5 once the test adds it).
as_tester() {
	runuser -u tester -- "$@"
}

# scrape: GET /metrics from the exporter on this host (bash's /dev/tcp: the
# system has no HTTP client); the body on stdout.
scrape() {
	local reply
	exec 3<>/dev/tcp/127.0.0.1/9435 || return 1
	printf 'GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
	reply=$(timeout 20 cat <&3)
	exec 3<&-
	[[ $reply == "HTTP/1."?" 200"* ]] || return 1
	printf '%s\n' "${reply#*$'\r\n\r\n'}"
}
