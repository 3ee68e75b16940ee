#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# probe-hang.sh's stacks, checked without a GPU: a process with
# libtb5-stackdump.so preloaded and a thread blocked on a lock
# (stackdump_target) is probed as a hung nccl_check is; the dump must
# show the blocked thread by name, in stackdump_target_waits(), and the
# kernel side (its wait channel) of every thread.
#
#   tests/gpu/test-stackdump.sh LIBTB5_STACKDUMP STACKDUMP_TARGET
set -euo pipefail
lib=${1:?usage: test-stackdump.sh LIB TARGET}
target=${2:?usage: test-stackdump.sh LIB TARGET}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
TB5_PROBE_MATCH="^$target" TB5_STACKDUMP_DIR=$dir LD_PRELOAD=$lib \
  "$here/probe-hang.sh" 2 "$dir/probe.txt" "$target"
cat "$dir/probe.txt"
fail=0
grep -q 'wchan=' "$dir/probe.txt" || { echo "FAIL: no wait channels"; fail=1; }
grep -Eq '^tid [0-9]+ \(tb5-waiter\) #[0-9]+ .* stackdump_target_waits\+' "$dir/probe.txt" ||
  { echo "FAIL: the blocked thread's stack does not name stackdump_target_waits"; fail=1; }
grep -Eq '^tid [0-9]+ \([^)]*\) #[0-9]+ .* main\+' "$dir/probe.txt" ||
  { echo "FAIL: the main thread's stack does not name main"; fail=1; }
((fail)) || echo "PASS: every thread's stack, through libtb5-stackdump.so"
exit "$fail"
