#!/bin/sh
# SPDX-License-Identifier: MIT
#
# vm-tests-fabric.sh - one host of the emulated USB4 fabric (ci/vm/run-pair.sh
# boots two VMs, each running this script; TB5K_ROLE is "a" or "b"). Each
# host loads the fabric's bus, tbemu.ko (tests/tbemu/, the stand-in for
# thunderbolt.ko), and the unmodified tb5.ko that DKMS built, with no loop
# pairs: every link is a tb link over an emulated cable to the other VM.
#
# Checks, on both hosts:
#   fabric.links    one tb5_<n> per cable, backend tb, ready, its peer the
#                   other host (its peer_uuid is the host UUID the cable's
#                   other end published), E2E on
#   fabric.perf     tb5-perf between the hosts over every cable: a server on
#                   host a, the client on host b, bw and bibw (both
#                   directions at once) with every byte verified, and lat
#   fabric.selftest tb5-selftest with its round trip on every tb link
#   fabric.unload   tb5 unloads (LOGOUT to the peer), then the bus
# The two hosts meet at barriers: a host waits for the peer's tb5 link to be
# ready before each step, and the other side's steps are timed to match.
#
# Knobs (TB5K_*, passed into the VM by ci/vm/run.sh): TB5K_ROLE (a|b),
# TB5K_CABLES (cables between the two hosts, default 1), TB5K_PERF_SIZES.
# Prints PASS/FAIL lines; exits non-zero at the first failure.

TMP=${TMPDIR:-/tmp}
here=$(cd "$(dirname "$0")" && pwd)
PATH="$here:$PATH"
ROLE=${TB5K_ROLE:-a}
CABLES=${TB5K_CABLES:-1}
SIZES=${TB5K_PERF_SIZES:-4,4K,64K,1M}
CLASS=/sys/class/tb5

pass() { echo "PASS $1"; }
note() { echo "# $*"; }
fail() {
	for l in "$CLASS"/tb5_*; do
		[ -e "$l" ] || continue
		echo "# ${l##*/}: state $(cat "$l/state") tb_state $(cat "$l/tb_state" 2>/dev/null)" \
			"tx_frames $(cat "$l/tx_frames") rx_frames $(cat "$l/rx_frames")" \
			"errors $(cat "$l/errors") ring_errors $(cat "$l/ring_errors" 2>/dev/null)"
	done
	for d in /sys/bus/pci/drivers/tbemu/0*; do
		[ -d "$d/tbemu" ] || continue
		echo "# cable ${d##*/}: $(cd "$d/tbemu" && for f in *; do printf '%s=%s ' "$f" "$(cat "$f")"; done)"
	done
	echo "FAIL $1: $2"
	exit 1
}
nap() { sleep 0.2 2>/dev/null || sleep 1; }

# wait_ready N SECONDS: N tb links, all ready.
wait_ready() {
	want=$1 left=$(($2 * 5))
	while [ "$left" -gt 0 ]; do
		n=0
		for l in "$CLASS"/tb5_*; do
			[ -e "$l/state" ] && [ "$(cat "$l/state")" = ready ] && n=$((n + 1))
		done
		[ "$n" -ge "$want" ] && return 0
		nap
		left=$((left - 1))
	done
	return 1
}

echo "# fabric host $ROLE on $(uname -r), $CABLES cable(s)"
kver=$(uname -r)
insmod "$here/tbemu.ko" || fail fabric.setup "insmod tbemu.ko"
insmod "/lib/modules/$kver/updates/tb5.ko" loopback=0 ||
	fail fabric.setup "insmod tb5.ko"

# -- links -----------------------------------------------------------------
wait_ready "$CABLES" 120 || fail fabric.links "$CABLES ready tb link(s) did not appear in 120 s"
for l in "$CLASS"/tb5_*; do
	name=${l##*/}
	[ "$(cat "$l/backend")" = tb ] || fail fabric.links "$name: backend $(cat "$l/backend")"
	[ "$(cat "$l/peer_id")" != none ] || fail fabric.links "$name: no peer id"
	[ "$(cat "$l/e2e")" = 1 ] || fail fabric.links "$name: end-to-end flow control off"
	[ "$(cat "$l/tb_state")" = connected ] || fail fabric.links "$name: tb_state $(cat "$l/tb_state")"
	note "$name: peer $(cat "$l/peer_id") uuid $(cat "$l/peer_uuid") ($(cat "$l/peer_name")), $(cat "$l/speed_mbps") Mb/s"
done
pass fabric.links

# -- data --------------------------------------------------------------------
# The hosts may number the cables differently (links appear in the order the
# peers answer): a serves one client on each of its links, b runs a client
# on each of its own.
if [ "$ROLE" = a ]; then
	pids=
	for l in "$CLASS"/tb5_*; do
		name=${l##*/}
		tb5-perf --server --once --link "$name" --timeout 240 \
			>"$TMP/perf-$name.out" 2>&1 &
		pids="$pids $!"
	done
	rc=0
	for p in $pids; do wait "$p" || rc=1; done
	for l in "$CLASS"/tb5_*; do sed 's/^/#   /' "$TMP/perf-${l##*/}.out"; done
	[ "$rc" = 0 ] || fail fabric.perf "a server failed"
else
	for l in "$CLASS"/tb5_*; do
		name=${l##*/}
		tb5-perf --client --link "$name" -t bw,bibw,lat -s "$SIZES" --verify \
			--min-iters 4 -D 0.2 --no-memcpy --no-progress --timeout 240 \
			>"$TMP/perf.out" 2>&1 ||
			{ cat "$TMP/perf.out"; fail fabric.perf "$name: the client failed"; }
		sed 's/^/#   /' "$TMP/perf.out"
	done
fi
pass fabric.perf

# -- the operator's check -------------------------------------------------------
# Host a answers (the responder, one connection per cable), host b checks.
if [ "$ROLE" = a ]; then
	tb5-selftest --respond --count "$CABLES" >"$TMP/selftest.out" 2>&1 ||
		{ cat "$TMP/selftest.out"; fail fabric.selftest "the responder failed"; }
else
	sleep 3
	tb5-selftest >"$TMP/selftest.out" 2>&1 ||
		{ cat "$TMP/selftest.out"; fail fabric.selftest "tb5-selftest failed"; }
	n=$(grep -cE '^PASS +roundtrip:tb5_' "$TMP/selftest.out")
	[ "$n" -eq "$CABLES" ] ||
		{ cat "$TMP/selftest.out"; fail fabric.selftest "$n round trip(s) passed, not $CABLES"; }
fi
sed 's/^/#   /' "$TMP/selftest.out"
pass fabric.selftest

# -- teardown ---------------------------------------------------------------------
# Host b leaves first: a sees the LOGOUT (its links go down, not away).
if [ "$ROLE" = a ]; then
	left=600
	while [ "$left" -gt 0 ]; do
		down=1
		for l in "$CLASS"/tb5_*; do
			[ -e "$l/state" ] && [ "$(cat "$l/state")" = ready ] && down=0
		done
		[ "$down" = 1 ] && break
		nap
		left=$((left - 1))
	done
	[ "$left" -gt 0 ] || fail fabric.unload "the peer's links did not go down"
fi
rmmod tb5 || fail fabric.unload "rmmod tb5"
rmmod tbemu || fail fabric.unload "rmmod tbemu"
pass fabric.unload
