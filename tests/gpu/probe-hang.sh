#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Where a hung NCCL run waits: runs CMD in the background and, AFTER
# seconds later, writes every thread's stack of every nccl_check process
# (gdb when the machine has it, else each thread's kernel wait channel and
# system call from /proc) to OUT, then waits for CMD (which its own
# timeout ends).
#
#   tests/gpu/probe-hang.sh AFTER OUT CMD...
set -uo pipefail
after=${1:?usage: probe-hang.sh AFTER OUT CMD...}
out=${2:?usage: probe-hang.sh AFTER OUT CMD...}
shift 2
"$@" &
job=$!
sleep "$after"
{
  for pid in $(pgrep -f 'build-nccl-check/nccl_check'); do
    echo "=== pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-200)"
    if command -v gdb >/dev/null 2>&1; then
      timeout 60 gdb -p "$pid" -batch -nx -ex 'set pagination off' \
        -ex 'thread apply all bt 25' 2>&1 | grep -v '^\[New LWP\|^warning:'
    else
      for t in /proc/"$pid"/task/*; do
        echo "${t##*/} $(cat "$t/comm") wchan=$(cat "$t/wchan") syscall=$(cut -d' ' -f1 "$t/syscall")"
      done
    fi
  done
} >"$out" 2>&1
wait "$job"
