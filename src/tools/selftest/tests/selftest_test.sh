#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# selftest_test.sh - ctest's tests of tb5-selftest, over the simulator:
#   selftest_test.sh loop  <tb5-selftest> <cmake> <check_json.cmake>
#       one process: the loop pair's round trip PASSes, the mesh link (no
#       peer process) SKIPs, exit status 0
#   selftest_test.sh mesh  ...
#       a responder (--respond --count 1) and a selftest process in one
#       fabric: the mesh round trip PASSes, the responder reports the
#       connection and exits 0
#   selftest_test.sh fake  ... [<tb5-fake-abi.so>]
#       a fake module tree (sysfs and /dev): the kernel checks PASS and FAIL
#       as they should; with the fake-ABI library (LD_PRELOAD, TB5_FAKE_ABI:
#       a module of another ABI version), abi FAILs as a version mismatch
#       naming both versions, not as a protocol break
#   selftest_test.sh gpu   ...
#       the loop pair's gpu:<link> lines: PASS with the stand-in DMA engine
#       (dma=standin), SKIP with none (dma=off), saying why
#   selftest_test.sh usage ...
#       bad command lines exit 2; --help names every check and exits 0
# Each run uses a fabric of its own, so tests may run in parallel.
set -u

case_=$1 exe=$2 cmake=$3 check_json=$4 fake_abi_lib=${5:-}
fabric="tb5st-${case_}-$$-${RANDOM}"
work=$(mktemp -d)
responder=
# The simulator keeps a fabric's shared memory for later processes; this
# test's fabric has no later process.
remove_fabric() {
	rm -f "/dev/shm/tb5sim.$fabric" "/dev/shm/tb5sim.$fabric".*
}
cleanup() {
	if [[ -n $responder ]] && kill -0 "$responder" 2>/dev/null; then
		kill "$responder"
		wait "$responder" 2>/dev/null
	fi
	rm -rf "$work"
	remove_fabric
}
trap cleanup EXIT

fail() {
	echo "FAILED: $*" >&2
	exit 1
}

# Runs the selftest (over the simulator) with --json into $work/out.json;
# fails the test unless its exit status is 0.
run_selftest() {
	local rc=0
	TB5_SIM=$fabric${1:+:$1} "$exe" --json --timeout 10 >"$work/out.json" || rc=$?
	cat "$work/out.json"
	[[ $rc -eq 0 ]] || fail "tb5-selftest exited $rc"
}

case $case_ in
loop)
	run_selftest
	"$cmake" -DJSON="$work/out.json" -P "$check_json" \
		'^roundtrip:sim_l0a<->sim_l0b$=PASS' \
		'^link:sim_l0[ab]$=PASS' \
		'^link:sim_h[0-9]+$=SKIP' \
		'^module$=SKIP' \
		'^plugin$=SKIP' || fail "unexpected JSON"
	;;
gpu)
	run_selftest hosts=1,loop=1,dma=standin
	"$cmake" -DJSON="$work/out.json" -P "$check_json" \
		'^gpu:sim_l0[ab]$=PASS' '^roundtrip:sim_l0a<->sim_l0b$=PASS' ||
		fail "unexpected JSON (dma=standin)"
	grep -q 'stand-in DMA engine' "$work/out.json" || fail "dma=standin: no word of the stand-in engine"
	remove_fabric
	fabric=$fabric-off
	run_selftest hosts=1,loop=1,dma=off
	"$cmake" -DJSON="$work/out.json" -P "$check_json" '^gpu:sim_l0[ab]$=SKIP' ||
		fail "unexpected JSON (dma=off)"
	grep -q 'GPU memory cannot be registered' "$work/out.json" || fail "dma=off: no reason given"
	;;
mesh)
	TB5_SIM=$fabric "$exe" --respond --count 1 >"$work/respond.log" 2>&1 &
	responder=$!
	# Wait until the responder is at work on its mesh link.
	for _ in $(seq 100); do
		grep -Eq 'sim_h[0-9]+' "$work/respond.log" && break
		kill -0 "$responder" 2>/dev/null || { cat "$work/respond.log"; fail "the responder exited"; }
		sleep 0.1
	done
	run_selftest
	for _ in $(seq 100); do
		kill -0 "$responder" 2>/dev/null || break
		sleep 0.1
	done
	cat "$work/respond.log"
	kill -0 "$responder" 2>/dev/null && fail "the responder did not exit after its connection"
	rc=0
	wait "$responder" || rc=$?
	responder=
	[[ $rc -eq 0 ]] || fail "the responder exited $rc"
	grep -Eq 'sim_h[0-9]+ connection 1 from host .*all as sent, closed by the peer' "$work/respond.log" ||
		fail "the responder did not report the connection"
	"$cmake" -DJSON="$work/out.json" -P "$check_json" \
		'^link:sim_h[0-9]+$=PASS' \
		'^roundtrip:sim_h[0-9]+$=PASS' \
		'^roundtrip:sim_l0a<->sim_l0b$=PASS' || fail "unexpected JSON"
	;;
fake)
	# A fake module in a temporary tree (libtb5 reads TB5_SYSFS_CLASS and
	# TB5_DEV_DIR too); /dev/tb5_0 is a link to /dev/null, which is a
	# character device anyone may open, world-writable, and no tb5 device.
	unset TB5_SIM
	mkdir -p "$work/module/parameters" "$work/class/tb5_0" "$work/dev"
	echo 0.0.0 >"$work/module/version"
	echo live >"$work/module/initstate"
	echo 4096 >"$work/module/parameters/ring_size"
	echo 1 >"$work/module/parameters/loopback"
	echo 42 >"$work/class/pinned_pages"
	stat -L -c '%t %T' /dev/null | {
		read -r maj min
		echo "$((16#$maj)):$((16#$min))" >"$work/class/tb5_0/dev"
	}
	ln -s /dev/null "$work/dev/tb5_0"
	fake_env=()	# more of the environment for the next fake run
	fake() {
		local rc=0
		env "${fake_env[@]}" TB5_SYSFS_MODULE="$work/module" TB5_SYSFS_CLASS="$work/class" \
			TB5_DEV_DIR="$work/dev" "$exe" --json --timeout 1 >"$work/out.json" || rc=$?
		cat "$work/out.json"
		[[ $rc -eq 1 ]] || fail "tb5-selftest exited $rc, expected 1"
		"$cmake" -DJSON="$work/out.json" -DALLOW_FAIL=ON -P "$check_json" "$@" ||
			fail "unexpected JSON"
	}
	lib_version=$("$exe" --version)
	echo "$lib_version" >"$work/module/version"
	fake '^module$=PASS' '^params$=PASS' '^node:tb5_0$=PASS' '^perms:tb5_0$=FAIL' '^abi$=FAIL'
	echo "${lib_version%.*}.99" >"$work/module/version"	# patch level differs
	fake '^module$=PASS'
	echo "$((${lib_version%%.*} + 1)).0.0" >"$work/module/version"
	echo 1000 >"$work/module/parameters/ring_size"
	echo "0:0" >"$work/class/tb5_0/dev"
	fake '^module$=FAIL' '^params$=FAIL' '^node:tb5_0$=FAIL'
	rm "$work/dev/tb5_0"
	fake '^node:tb5_0$=FAIL' '^perms:tb5_0$=SKIP'
	if [[ -n $fake_abi_lib ]]; then
		# The tree as it was at first, and a module of ABI version 2
		# behind the node (the preloaded library answers
		# TB5_IOC_GET_VERSION for it): a version mismatch, both named.
		echo "$lib_version" >"$work/module/version"
		echo 4096 >"$work/module/parameters/ring_size"
		stat -L -c '%t %T' /dev/null | {
			read -r maj min
			echo "$((16#$maj)):$((16#$min))" >"$work/class/tb5_0/dev"
		}
		ln -s /dev/null "$work/dev/tb5_0"
		fake_env=(LD_PRELOAD="$fake_abi_lib" TB5_FAKE_ABI=2)
		fake '^module$=PASS' '^node:tb5_0$=PASS' '^abi$=FAIL'
		fake_env=()
		grep -q '"ABI version mismatch opening tb5_0: tb5_0: the tb5 module (9.0.0) speaks ABI version 2, this libtb5 ([0-9.]*) speaks ABI version 1: install tb5-dkms and libtb5 of the same release' "$work/out.json" ||
			fail "abi does not report the version mismatch with both versions"
		grep -q 'broke the protocol' "$work/out.json" && fail "a version mismatch reads as a protocol break"
	fi
	;;
usage)
	for bad in "--no-such-option" "--timeout" "--timeout 0" "--count 3" "extra"; do
		rc=0
		# shellcheck disable=SC2086  # split on purpose
		"$exe" $bad >/dev/null 2>&1 || rc=$?
		[[ $rc -eq 2 ]] || fail "'tb5-selftest $bad' exited $rc, expected 2"
	done
	"$exe" --help >"$work/help" || fail "--help exited $?"
	for word in module abi params 'node:' 'perms:' 'link:' 'roundtrip:' plugin --respond --json \
		    --link --timeout --plugin --count 'Exit status'; do
		grep -q -- "$word" "$work/help" || fail "--help does not mention $word"
	done
	"$exe" --version | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+' || fail "--version"
	;;
*)
	fail "unknown case $case_"
	;;
esac
echo "PASSED: $case_"
