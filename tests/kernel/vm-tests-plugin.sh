#!/bin/sh
# SPDX-License-Identifier: MIT
#
# vm-tests-plugin.sh - the NCCL plugin's ABI harness (tests/plugin) over the
# module's loop pairs, in the test VM: every exported version, one rank on
# each end of a loop pair, in one process and in two.
#
# The harness and the plugin are ordinary dynamic programs: ci/kernel-tests.sh
# puts them in plugin/ beside this script with the C and C++ runtimes they
# were linked against, and they run through that directory's own loader
# (the VM has no libc of its own). Run as root by vm-tests.sh with tb5
# loaded (loopback=2). Prints "PASS name" or "FAIL name: reason".

TMP=${TMPDIR:-/tmp}
here=$(cd "$(dirname "$0")" && pwd)
dir=$here/plugin

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; exit 1; }

[ -x "$dir/test_plugin_abi" ] ||
	fail plugin-abi "the harness is not in the VM (ci/kernel-tests.sh builds it)"
[ -d /sys/module/tb5 ] || fail plugin-abi "tb5 is not loaded"

# 16 MiB at most per message: the VM has 2 GiB and emulated CPUs.
TB5_PLUGIN_TEST_BACKEND=kernel TB5_PLUGIN_PATH=$dir/libnccl-net-tb5.so \
TB5_PLUGIN_TEST_MAX_MIB=16 TB5_SYSFS_CLASS=/sys/class/tb5 \
	"$dir/ld-linux-x86-64.so.2" --library-path "$dir" "$dir/test_plugin_abi" \
	--gtest_brief=1 >"$TMP/plugin-abi.txt" 2>&1
rc=$?
sed 's/^/# /' "$TMP/plugin-abi.txt"
[ $rc -eq 0 ] || fail plugin-abi "the harness exited with status $rc"
n=$(grep -o '\[  PASSED  \] [0-9]* tests' "$TMP/plugin-abi.txt" | grep -o '[0-9]*')
[ -n "$n" ] && [ "$n" -ge 70 ] || fail plugin-abi "only '${n:-no}' tests passed"
pass "plugin-abi ($n harness tests, v7..v12, loop pairs)"
exit 0
