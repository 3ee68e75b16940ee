#!/bin/sh
# SPDX-License-Identifier: MIT
#
# vm-tests-tools.sh - the operator's tools on the loop pairs, in the test VM:
# tb5-selftest (text and --json) must pass with a round trip on each pair,
# and a short tb5-perf size sweep over a loop pair must verify every byte.
# Run as root by vm-tests.sh with tb5 loaded, loopback=2; leaves it loaded.
#
# The tools are static builds (ci/kernel-tests.sh puts them beside this
# script). Prints "PASS name" or "FAIL name: reason" per check; exits
# non-zero at the first failure.

TMP=${TMPDIR:-/tmp}
here=$(cd "$(dirname "$0")" && pwd)
PATH="$here:$PATH"

pass() { echo "PASS $1"; }
fail() {
	# What the links looked like, for the log.
	for l in /sys/class/tb5/tb5_*; do
		echo "# ${l##*/}: state $(cat "$l/state") tx_frames $(cat "$l/tx_frames")" \
			"rx_frames $(cat "$l/rx_frames") errors $(cat "$l/errors")"
	done
	echo "FAIL $1: $2"
	exit 1
}

for t in tb5-selftest tb5-perf; do
	command -v $t >/dev/null 2>&1 ||
		fail tools "$t is not in the VM (ci/kernel-tests.sh builds it)"
done
[ -d /sys/module/tb5 ] || fail tools "tb5 is not loaded"

# tb5-selftest, as an operator runs it: its report goes to the log.
tb5-selftest >"$TMP/selftest.txt" 2>&1
rc=$?
sed 's/^/# /' "$TMP/selftest.txt"
[ $rc -eq 0 ] || fail selftest "exit status $rc"
grep -q '^FAIL' "$TMP/selftest.txt" && fail selftest "a check failed"
n=$(grep -c '^PASS  roundtrip:' "$TMP/selftest.txt")
[ "$n" -eq 2 ] || fail selftest "$n round trips passed, not 2 (one per loop pair)"
for c in module abi params; do
	grep -q "^PASS  $c " "$TMP/selftest.txt" || fail selftest "check $c did not pass"
done
pass "selftest (2 loop pairs round-tripped)"

tb5-selftest --json >"$TMP/selftest.json" 2>"$TMP/selftest.err" ||
	fail selftest.json "exit status $?: $(cat "$TMP/selftest.err")"
grep -q '"status": *"FAIL"' "$TMP/selftest.json" && fail selftest.json "a check failed"
grep -q '"roundtrip:' "$TMP/selftest.json" || fail selftest.json "no round trip in the JSON"
pass selftest.json

# A short sweep of every test kind over a loop pair, every byte checked.
# Sleeping in tb5_wait() (--wait) rather than busy polling: the VM's two
# emulated CPUs are shared by the client, the server and the loop backend's
# work item, and timings under TCG mean nothing anyway.
tb5-perf --loop --wait --test all --sizes 256:1M --duration 0.05 --verify \
	>"$TMP/perf.txt" 2>&1
rc=$?
sed 's/^/# /' "$TMP/perf.txt"
[ $rc -eq 0 ] || fail perf "tb5-perf --loop exited with status $rc"
pass "perf (--loop --wait --test all, 256 B .. 1 MiB, verified)"

tb5-perf --loop --wait --test bw --sizes 4K:64K --duration 0.02 --json \
	>"$TMP/perf.json" 2>"$TMP/perf.err" ||
	fail perf.json "exit status $?: $(cat "$TMP/perf.err")"
grep -q '"rows"' "$TMP/perf.json" || fail perf.json "no rows in the JSON"
pass perf.json
exit 0
