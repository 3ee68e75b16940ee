#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-split.sh - the plugin's ABI harness split across two hosts of the
# simulator, as the emulated fabric runs it across two VMs: two processes,
# each a host of one TB5_SIM fabric (hosts=2, one cable), each running the
# whole suite with one rank of every pair, meeting over a pseudo-terminal
# pair made by socat where the VMs have a serial line.
#
#   run-split.sh HARNESS [gtest options]
#
# Passes when both processes pass with the same number of tests; exits 77
# (ctest's skip) without socat.
set -eu

harness=${1:?usage: run-split.sh HARNESS [gtest options]}
shift
command -v socat >/dev/null || { echo "run-split.sh: needs socat (apt install socat)" >&2; exit 77; }
tmp=$(mktemp -d /tmp/tb5-split-XXXXXX)
cleanup() {
	if [ -n "${line:-}" ]; then kill "$line" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

socat "pty,raw,echo=0,link=$tmp/a" "pty,raw,echo=0,link=$tmp/b" &
line=$!
n=0
while [ ! -e "$tmp/a" ] || [ ! -e "$tmp/b" ]; do
	n=$((n + 1))
	[ "$n" -lt 100 ] || { echo "run-split.sh: socat made no line" >&2; exit 1; }
	sleep 0.05
done

export TB5_SIM="split$$:hosts=2,loop=0"
export TB5_PLUGIN_TEST_MAX_MIB="${TB5_PLUGIN_TEST_MAX_MIB:-16}"
for role in a b; do
	TB5_PLUGIN_TEST_REMOTE=$role TB5_PLUGIN_TEST_OOB=$tmp/$role \
		"$harness" --gtest_brief=1 "$@" >"$tmp/$role.out" 2>&1 &
	eval "pid_$role=\$!"
done
rc=0
# shellcheck disable=SC2154  # set by the eval above
wait "$pid_a" || rc=1
# shellcheck disable=SC2154
wait "$pid_b" || rc=1
for role in a b; do
	echo "---- rank $role"
	cat "$tmp/$role.out"
done
pa=$(grep -o '\[  PASSED  \] [0-9]* tests' "$tmp/a.out" | grep -o '[0-9]*' || true)
pb=$(grep -o '\[  PASSED  \] [0-9]* tests' "$tmp/b.out" | grep -o '[0-9]*' || true)
[ "$rc" = 0 ] || { echo "run-split.sh: a rank failed" >&2; exit 1; }
if [ -z "$pa" ] || [ "$pa" != "$pb" ]; then
	echo "run-split.sh: a passed '${pa:-no}' tests, b '${pb:-no}'" >&2
	exit 1
fi
echo "run-split.sh: both ranks passed $pa tests"
