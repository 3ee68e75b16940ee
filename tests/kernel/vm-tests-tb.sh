#!/bin/sh
# SPDX-License-Identifier: MIT
#
# vm-tests-tb.sh - the tb backend in the test VM: the Thunderbolt bus is
# there (thunderbolt.ko, and configfs.ko on sid), no Thunderbolt hardware is.
# Run as root by vm-tests.sh with tb5 not loaded; leaves it not loaded.
#
# Checks that tb5.ko loads thunderbolt.ko with it and loads cleanly, that
# its service driver is registered on the Thunderbolt bus and no tb link
# appears without a cable, that thunderbolt_net can sit beside it, that the
# loop backend still works with the tb backend loaded, and that both unload
# cleanly, the Thunderbolt bus after tb5.
#
# Prints "PASS name", "SKIP name: reason" or "FAIL name: reason" per check
# (lines starting with "#" are notes); exits non-zero at the first failure.

CLASS=/sys/class/tb5
PARAMS=/sys/module/tb5/parameters
DRIVERS=/sys/bus/thunderbolt/drivers
TMP=${TMPDIR:-/tmp}

note() { echo "# $*"; }
pass() { echo "PASS $1"; }
skip() { echo "SKIP $1: $2"; }
fail() {
	echo "FAIL $1: $2"
	exit 1
}

nap() { sleep 0.1 2>/dev/null || sleep 1; }
# The names in directory $1 matching glob $2, on one line.
names() { (cd "$1" 2>/dev/null && for f in $2; do [ -e "$f" ] && printf '%s ' "$f"; done); }
loaded() { [ -d "/sys/module/$1" ]; }

# The kernel log lines after mark $1, without timestamps.
dmesg_since() {
	dmesg | tail -n +$(($1 + 1)) | sed 's/^\[[^]]*\] *//'
}

# Fail $1 if the kernel log since mark $2 has an error from tb5 or the bus
# (an unsigned out-of-tree module's taint notice is none).
log_clean() {
	bad=$(dmesg_since "$2" | grep -iE '(tb5|thunderbolt).*(error|fail|refused|unable|cannot)' |
		grep -v 'module verification failed' | head -n 3)
	[ -z "$bad" ] || fail "$1" "kernel log: $(echo "$bad" | tr '\n' '|')"
}

# Unload $1 if loaded; fail check $2 when that does not work.
unload() {
	loaded "$1" || return 0
	rmmod "$1" 2>"$TMP/rmmod.err" || fail "$2" "rmmod $1: $(cat "$TMP/rmmod.err")"
	loaded "$1" && fail "$2" "$1 still loaded after rmmod"
	return 0
}

echo "# tb backend VM tests on $(uname -r)"
loaded tb5 && fail tb.setup "tb5 is loaded already"
# Start from a bare bus: the earlier checks' modprobes loaded it.
unload thunderbolt_net tb.setup
unload thunderbolt tb.setup

# 1. modprobe tb5 brings the Thunderbolt bus (and what it needs) with it.
mark=$(dmesg | wc -l)
modprobe tb5 2>"$TMP/modprobe.err" || fail tb.load "modprobe tb5: $(cat "$TMP/modprobe.err")"
loaded thunderbolt || fail tb.load "thunderbolt.ko was not loaded with tb5"
[ -e /sys/module/thunderbolt/holders/tb5 ] ||
	fail tb.load "tb5 does not hold thunderbolt (holders: $(names /sys/module/thunderbolt/holders '*'))"
line=$(dmesg_since "$mark" | grep 'Thunderbolt backend: service "tb5" registered' | head -n 1)
[ -n "$line" ] || fail tb.load "no 'Thunderbolt backend' line in the kernel log: $(dmesg_since "$mark" | tr '\n' '|')"
log_clean tb.load "$mark"
pass "tb.load ($line)"

# 2. The service driver is on the bus; without a cable there is no link.
[ -d "$DRIVERS/tb5" ] || fail tb.driver "no $DRIVERS/tb5 (drivers: $(names "$DRIVERS" '*'))"
pass "tb.driver ($DRIVERS/tb5)"
links=$(names "$CLASS" 'tb5_*')
[ -z "$links" ] || fail tb.no-links "links without hardware: $links"
nodes=$(names /dev 'tb5_*')
[ -z "$nodes" ] || fail tb.no-links "device nodes without hardware: $nodes"
# A bound service would show as <domain>-<route>.<id>.
bound=$(names "$DRIVERS/tb5" '*-*')
[ -z "$bound" ] || fail tb.no-links "the driver is bound to $bound"
pass tb.no-links

# 3. Its parameters, with their defaults.
for p in tb_e2e:Y tb_poll_us:0 tb_irq_ns:-1; do
	name=${p%%:*}
	want=${p#*:}
	[ -f "$PARAMS/$name" ] || fail tb.params "no $PARAMS/$name"
	got=$(cat "$PARAMS/$name")
	[ "$got" = "$want" ] || fail tb.params "$name is $got, not $want"
done
pass "tb.params (tb_e2e=Y tb_poll_us=0 tb_irq_ns=-1)"

# 4. thunderbolt_net beside it: both drivers registered, both unload.
mark=$(dmesg | wc -l)
if modprobe thunderbolt_net 2>/dev/null || modprobe thunderbolt-net 2>/dev/null; then
	[ -d "$DRIVERS/thunderbolt-net" ] ||
		fail tb.coexist "thunderbolt_net loaded but $DRIVERS/thunderbolt-net is missing"
	[ -d "$DRIVERS/tb5" ] || fail tb.coexist "$DRIVERS/tb5 vanished"
	log_clean tb.coexist "$mark"
	unload thunderbolt_net tb.coexist
	[ -d "$DRIVERS/tb5" ] || fail tb.coexist "$DRIVERS/tb5 vanished with thunderbolt_net"
	pass "tb.coexist (thunderbolt-net and tb5 on one bus)"
else
	skip tb.coexist "no thunderbolt_net module in this VM"
fi

# 5. Unload: the driver leaves the bus, the bus stays until we unload it.
mark=$(dmesg | wc -l)
unload tb5 tb.unload
[ -d "$DRIVERS/tb5" ] && fail tb.unload "$DRIVERS/tb5 is still there"
loaded thunderbolt || fail tb.unload "thunderbolt went away with tb5"
log_clean tb.unload "$mark"
pass tb.unload

# 6. The loop backend with the tb backend loaded, and without end-to-end
# flow control offered: a loop pair still comes up and says hello.
mark=$(dmesg | wc -l)
modprobe tb5 loopback=1 ring_size=64 tb_e2e=0 2>"$TMP/modprobe.err" ||
	fail tb.loop "modprobe tb5 loopback=1 tb_e2e=0: $(cat "$TMP/modprobe.err")"
[ "$(cat $PARAMS/tb_e2e)" = N ] || fail tb.loop "tb_e2e reads $(cat $PARAMS/tb_e2e)"
dmesg_since "$mark" | grep -q 'end-to-end flow control not offered' ||
	fail tb.loop "tb_e2e=0 is not in the kernel log"
i=0
while [ $i -lt 200 ]; do
	[ "$(cat $CLASS/tb5_0/state 2>/dev/null)" = ready ] &&
		[ "$(cat $CLASS/tb5_1/state 2>/dev/null)" = ready ] && break
	nap
	i=$((i + 1))
done
[ "$(cat $CLASS/tb5_0/state 2>/dev/null)" = ready ] ||
	fail tb.loop "tb5_0 is \"$(cat $CLASS/tb5_0/state 2>/dev/null)\", not ready"
[ "$(cat $CLASS/tb5_0/backend)" = loop ] ||
	fail tb.loop "tb5_0's backend reads \"$(cat $CLASS/tb5_0/backend)\""
[ "$(cat $CLASS/tb5_0/speed_mbps)" = 0 ] ||
	fail tb.loop "a loop end has speed $(cat $CLASS/tb5_0/speed_mbps)"
[ -e $CLASS/tb5_0/lane_gbps ] && fail tb.loop "a loop end has tb attributes"
[ -e $CLASS/tb5_2 ] && fail tb.loop "tb5_2 exists with one loop pair and no cable"
[ "$(cat $CLASS/tb5_0/peer_id)" = "$(cat $CLASS/tb5_1/host_id)" ] ||
	fail tb.loop "tb5_0's peer is $(cat $CLASS/tb5_0/peer_id), not tb5_1's $(cat $CLASS/tb5_1/host_id)"
log_clean tb.loop "$mark"
unload tb5 tb.loop
pass "tb.loop (a loop pair beside the tb backend, tb_e2e=0)"

# 7. The bus unloads after tb5, and loads again with it.
unload thunderbolt tb.bus-unload
loaded configfs && note "configfs stays loaded (others may use it)"
modprobe tb5 2>"$TMP/modprobe.err" || fail tb.reload "modprobe tb5: $(cat "$TMP/modprobe.err")"
[ -d "$DRIVERS/tb5" ] || fail tb.reload "no $DRIVERS/tb5 after reloading"
unload tb5 tb.reload
unload thunderbolt tb.reload
pass "tb.reload (tb5 and thunderbolt load and unload again)"

echo "# vm-tests-tb: all checks passed on $(uname -r)"
exit 0
