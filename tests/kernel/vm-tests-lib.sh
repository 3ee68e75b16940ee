#!/bin/sh
# SPDX-License-Identifier: MIT
#
# vm-tests-lib.sh [loop | serve | stop | remote] - libtb5's own suites
# (tests/lib) over tb5.ko, in the test VMs: the same binaries ctest runs over
# the simulator, with TB5_TEST_BACKEND=kernel (tests/lib/lib_harness.hpp).
#
# loop (the default; run by vm-tests.sh with tb5 loaded, loopback=2): over
# the first loop pair
#   test_loop_pair  every test; the simulator's settings (SimConfig) skip
#   test_copies     every test but CopiesTwoHosts, which needs a second host
#                   (vm-tests-fabric.sh runs it); the copy engine's workers
#                   (SimCopyThreads, SimCopyConfig) skip
#   test_cq_bounds  every test
# Not here: test_two_hosts (every test needs two hosts, the fabric's), and
# test_sim_rate (the simulator's rate model: nothing of it runs on tb5.ko).
#
# On the emulated fabric (vm-tests-fabric.sh, fabric.lib), between two hosts
# over their tb links: "serve" (host a) starts the serving halves in the
# background, TB5_TEST_ROLE=serve, on every link: test_two_hosts's echo
# service and the peer of test_copies's CopiesTwoHosts; "remote" (host b)
# runs test_two_hosts (the simulator's processes-as-hosts tests skip) and
# CopiesTwoHosts against them; "stop" (a, after b is done) stops the servers
# and passes when each served a session and none failed.
#
# The suites are static programs (ci/kernel-tests.sh builds them into lib/
# beside this script; one that is missing fails the run). A suite passes
# when gtest exits 0, reports PASSED for one test or more (a suite whose
# tests all skipped, or that a filter left empty, ran nothing on the kernel
# and fails) and FAILED for none, and every skipped test says why (a message
# after "Skipped"). Prints "PASS name" or "FAIL name: reason"; exits non-zero
# at the first failure.

TMP=${TMPDIR:-/tmp}
here=$(cd "$(dirname "$0")" && pwd)
dir=$here/lib

pass() { echo "PASS $1"; }
fail() {
	for l in /sys/class/tb5/tb5_*; do
		echo "# ${l##*/}: state $(cat "$l/state") tx_frames $(cat "$l/tx_frames")" \
			"rx_frames $(cat "$l/rx_frames") errors $(cat "$l/errors")"
	done
	echo "FAIL $1: $2"
	exit 1
}

[ -d /sys/module/tb5 ] || fail lib "tb5 is not loaded"

# gtest_check NAME OUT: the verdict on a suite's output (rc checked before).
gtest_check() {
	grep -q '^\[  FAILED  \]' "$2" && fail "$1" "a test failed (the FAILED lines above)"
	n=$(grep -o '^\[  PASSED  \] [0-9]* test' "$2" | grep -o '[0-9]*')
	[ -n "$n" ] || fail "$1" "no PASSED line"
	[ "$n" -gt 0 ] || fail "$1" "no test ran on the kernel (all skipped, or none matched)"
	# A skipped test's result line follows its message; one that follows
	# gtest's "Skipped" line directly gave no reason.
	bad=$(awk '/^\[  SKIPPED \] .*\([0-9]+ ms\)$/ { if (prev ~ /: Skipped$/) print $3 }
		{ prev = $0 }' "$2")
	[ -z "$bad" ] || fail "$1" "skipped without a reason: $bad"
	SKIPPED=$(grep -c '^\[  SKIPPED \] .*([0-9]* ms)$' "$2")
	PASSED=$n
}

# suite NAME [GTEST ARGS...]: runs lib/NAME over the kernel.
suite() {
	name=$1
	shift
	[ -x "$dir/$name" ] || fail "lib.$name" "$dir/$name is not in the VM (ci/kernel-tests.sh builds it)"
	t0=$(date +%s)
	TB5_TEST_BACKEND=kernel "$dir/$name" "$@" >"$TMP/lib-$name.txt" 2>&1
	rc=$?
	t=$(($(date +%s) - t0))
	sed 's/^/# /' "$TMP/lib-$name.txt"
	[ $rc -eq 0 ] || fail "lib.$name" "exit status $rc after $t s"
	gtest_check "lib.$name" "$TMP/lib-$name.txt"
	pass "lib.$name ($PASSED passed, $SKIPPED skipped with a reason, $t s)"
}

# serve NAME: starts lib/NAME's serving half in the background.
serve() {
	[ -x "$dir/$1" ] || fail lib.serve "$dir/$1 is not in the VM (ci/kernel-tests.sh builds it)"
	TB5_TEST_BACKEND=kernel TB5_TEST_ROLE=serve "$dir/$1" >"$TMP/serve-$1.txt" 2>&1 &
	echo "$1 $!" >>"$TMP/lib-serve.pids"
}

# stop: stops what serve started; each must have served a session, all ok.
stop() {
	[ -f "$TMP/lib-serve.pids" ] || fail lib.serve "nothing was served"
	while read -r name pid; do
		# The client on the other host is done, but the server may still
		# be finishing its session (the peer's close, the check of what
		# arrived): on a loaded machine that took seconds. Give it up to
		# 60 s to report a session before stopping it.
		i=0
		while ! grep -q 'session [0-9]*: ' "$TMP/serve-$name.txt" && [ $i -lt 600 ]; do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1 2>/dev/null || sleep 1
			i=$((i + 1))
		done
		# Another shell started it: no wait; its last line says how it
		# ended.
		kill -TERM "$pid" 2>/dev/null
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
			sleep 0.1 2>/dev/null || sleep 1
			i=$((i + 1))
		done
		sed 's/^/# /' "$TMP/serve-$name.txt"
		grep -q 'FAILED' "$TMP/serve-$name.txt" && fail "lib.serve.$name" "a session failed"
		grep -q '^serve: stopped$' "$TMP/serve-$name.txt" ||
			fail "lib.serve.$name" "the server did not stop cleanly"
		n=$(grep -c 'session [0-9]*: ok' "$TMP/serve-$name.txt")
		[ "$n" -ge 1 ] || fail "lib.serve.$name" "it served no session"
		pass "lib.serve.$name ($n session(s) served)"
	done <"$TMP/lib-serve.pids"
	rm -f "$TMP/lib-serve.pids"
}

case ${1:-loop} in
loop)
	suite test_loop_pair
	suite test_copies --gtest_filter='-CopiesTwoHosts.*'
	suite test_cq_bounds
	;;
serve)
	rm -f "$TMP/lib-serve.pids"
	serve test_two_hosts
	serve test_copies
	;;
stop) stop ;;
remote)
	suite test_two_hosts
	suite test_copies --gtest_filter='CopiesTwoHosts.*'
	;;
*) fail lib "usage: vm-tests-lib.sh [loop | serve | stop | remote]" ;;
esac
exit 0
