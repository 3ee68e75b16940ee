#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Where a hung NCCL run waits: runs CMD in the background and, AFTER
# seconds later, writes every thread of every nccl_check process to OUT:
# its kernel wait channel, system call and kernel stack (/proc), and,
# where the process has libtb5-stackdump.so preloaded, its user-space
# stack (tests/gpu/stackdump.c: each thread is sent SIGRTMIN+7 and writes
# its frames to $TB5_STACKDUMP_DIR/stacks.<pid>.txt, appended to OUT here;
# the GPU machine has no gdb). TB5_PROBE_MATCH (a pgrep -f pattern) names
# other processes. Then waits for CMD (which its own timeout ends).
#
#   tests/gpu/probe-hang.sh AFTER OUT CMD...
set -uo pipefail
after=${1:?usage: probe-hang.sh AFTER OUT CMD...}
out=${2:?usage: probe-hang.sh AFTER OUT CMD...}
shift 2
"$@" &
job=$!
sleep "$after"
tgkill() {   # tgkill PID TID SIGNO
  python3 -c 'import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
sys.exit(libc.syscall(234, int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])) != 0)' "$@"
}
{
  sig=$(python3 -c 'import signal; print(int(signal.SIGRTMIN) + 7)')
  for pid in $(pgrep -f "${TB5_PROBE_MATCH:-^[^ ]*build-nccl-check/nccl_check}"); do
    echo "=== pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-200)"
    for t in /proc/"$pid"/task/*; do
      echo "${t##*/} $(cat "$t/comm") wchan=$(cat "$t/wchan") syscall=$(cut -d' ' -f1 "$t/syscall")"
      sed 's/^/    k: /' "$t/stack" 2>/dev/null | head -n 12
    done
    if grep -q libtb5-stackdump "/proc/$pid/maps" 2>/dev/null; then
      dir=$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^TB5_STACKDUMP_DIR=//p')
      grep -E 'libtb5|nccl-net-tb5|libnccl|libcuda' "/proc/$pid/maps" | awk '$3 == "00000000" {print "map:", $1, $6}'
      # The main thread last: a sleep it is in ends at the signal, and
      # the process may end with it.
      tids=()
      for t in /proc/"$pid"/task/*; do
        [[ ${t##*/} == "$pid" ]] || tids+=("${t##*/}")
      done
      for t in "${tids[@]}" "$pid"; do
        tgkill "$pid" "$t" "$sig" || echo "tgkill $t failed"
        sleep 0.2
      done
      sleep 1
      cat "${dir:-/tmp}/stacks.$pid.txt" 2>/dev/null || echo "no stacks.$pid.txt in ${dir:-/tmp}"
    fi
  done
} >"$out" 2>&1
wait "$job"
