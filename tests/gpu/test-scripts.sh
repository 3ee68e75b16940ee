#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Checks run-validation.sh and run-benchmark.sh without a GPU: their syntax
# (bash -n, and shellcheck when installed), their argument handling (--help,
# bad --nranks refused with a message) and, with --dry-run, the commands
# they would run: one process per rank, --nranks N to nccl_check, and for
# the tb5 runs a fresh simulator fabric of N hosts (TB5_SIM=...:hosts=N,
# loop=0) with NCCL forced onto NET/TB5. Run by ctest (gpu.scripts):
#
#   tests/gpu/test-scripts.sh PLUGIN      (the built libnccl-net-tb5.so)
set -euo pipefail

dir=$(cd "$(dirname "$0")" && pwd)
plugin=${1:?usage: test-scripts.sh PLUGIN}
tmp=$(mktemp -d /tmp/tb5-gpu-scripts-XXXXXX)
trap 'rm -rf -- "$tmp"' EXIT
unset OUT
fails=0

ok() { echo "ok    $*"; }
bad() { echo "FAIL  $*"; fails=$((fails + 1)); }

# expect STATUS PATTERN CMD...: CMD exits with STATUS and its output
# matches PATTERN (extended regex).
expect() {
  local want=$1 re=$2 rc=0 out
  shift 2
  out=$("$@" 2>&1) || rc=$?
  if [[ $rc == "$want" ]] && grep -Eq -- "$re" <<<"$out"; then
    ok "${*##*/}: exit $rc, says '$re'"
  else
    bad "${*##*/}: exit $rc (wanted $want), output:"
    tail -5 <<<"$out" | while IFS= read -r l; do echo "      $l"; done
  fi
}

# count FILE PATTERN WANT: lines of FILE matching PATTERN, read as the
# commands are (commands.txt quotes them with printf %q: "a\,b" is "a,b").
count() {
  local n
  n=$(tr -d "\\\\" <"$1" | grep -Ec -- "$2" || true)
  if [[ $n == "$3" ]]; then ok "${1##*/}: $n lines match '$2'"
  else bad "${1##*/}: $n lines match '$2', wanted $3"; fi
}

for s in lib.sh run-validation.sh run-benchmark.sh; do
  if bash -n "$dir/$s"; then ok "bash -n $s"; else bad "bash -n $s"; fi
done
if command -v shellcheck >/dev/null 2>&1; then
  if (cd "$dir" && shellcheck -x run-validation.sh run-benchmark.sh lib.sh test-scripts.sh run-gpu-direct-session.sh run-ddp.sh probe-hang.sh test-stackdump.sh); then
    ok "shellcheck"
  else
    bad "shellcheck"
  fi
else
  echo "skip  shellcheck (not installed)"
fi

val=$dir/run-validation.sh bench=$dir/run-benchmark.sh
dry=(--dry-run --plugin "$plugin" --bin /bin/true)
for s in "$val" "$bench"; do
  expect 0 '--nranks N' "$s" --help
  expect 2 '--nranks 1: a number of processes .* from 2 to 16' "$s" --nranks 1 "${dry[@]}" --out "$tmp/x"
  expect 2 '--nranks 17: ' "$s" --nranks 17 "${dry[@]}" --out "$tmp/x"
  expect 2 '--nranks four: ' "$s" --nranks four "${dry[@]}" --out "$tmp/x"
  expect 2 '--nranks needs a value' "$s" "${dry[@]}" --out "$tmp/x" --nranks
  expect 2 'unknown option: --ranks' "$s" --ranks 4
done

# Validation, default: two ranks on a fabric of two hosts.
expect 0 'dry run' "$val" "${dry[@]}" --modes mp --out "$tmp/v2"
c=$tmp/v2/commands.txt
count "$c" 'TB5_SIM=tb5gpu-[^ ]*:hosts=2,loop=0 ' 2
count "$c" '--rank [01] --nranks 2 --device [01] ' 2

# Validation at four ranks, one process per GPU, every pair cabled.
expect 0 'mp: 4 processes, one GPU each, TB5_SIM=tb5gpu-[^ ]*:hosts=4,loop=0$' \
  "$val" "${dry[@]}" --modes mp --nranks 4 --out "$tmp/v4"
c=$tmp/v4/commands.txt
count "$c" '.' 4
for r in 0 1 2 3; do
  count "$c" "NCCL_DEBUG_FILE=[^ ]*/mp.rank$r.nccl.log .* --rank $r --nranks 4 --device $r " 1
done
count "$c" 'NCCL_NET=TB5 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 ' 4
count "$c" 'NCCL_DEBUG_SUBSYS=INIT,ENV,NET ' 4
count "$c" 'TB5_SIM=tb5gpu-[^ ]*:hosts=4,loop=0 ' 4
# One fabric for the run: every rank names the same one.
n=$(grep -o 'TB5_SIM=[^ ]*' "$c" | sort -u | wc -l)
if [[ $n == 1 ]]; then ok "one fabric for the four ranks"; else bad "$n fabrics for the four ranks"; fi

# --sim-keys come after: a mesh with a cable missing.
expect 0 'dry run' "$val" "${dry[@]}" --modes mp --nranks 4 --sim-keys uncabled=0-3 --out "$tmp/vu"
count "$tmp/vu/commands.txt" 'TB5_SIM=tb5gpu-[^ ]*:hosts=4,loop=0,uncabled=0-3 ' 4

# --gdr: GPUDirect over tb5, with the settings docs/plugin.md names.
expect 0 'dry run' "$val" "${dry[@]}" --gdr --out "$tmp/vg"
count "$tmp/vg/commands.txt" 'NCCL_NET=TB5 .*NCCL_NET_GDR_LEVEL=SYS ' 3
count "$tmp/v2/commands.txt" 'NCCL_NET_GDR' 0

# The GPU-direct session, dry: every step it would run, none run.
expect 0 'dry run: 9 steps' "$dir/run-gpu-direct-session.sh" --dry-run "$tmp/gs" "$tmp/nostage"
c=$tmp/gs/commands.txt
count "$c" 'nostage/test_sim_cuda$' 1
count "$c" 'run-validation.sh .*--gdr' 4
count "$c" 'run-benchmark.sh .*tb5-gdr-rate80 sim=rate=80 NCCL_NET_GDR_LEVEL=SYS --' 3
count "$c" 'run-benchmark.sh .*--transports tb5,shm,socket4x4 ' 3
# The later steps, chosen by --steps.
expect 0 'dry run: 6 steps' "$dir/run-gpu-direct-session.sh" --dry-run \
  --steps probe-1m,probe-sp,ddp2,ddp4,mesh4,cables2 "$tmp/gs2" "$tmp/nostage"
c=$tmp/gs2/commands.txt
count "$c" '^.*probe-hang.sh 15 .*LD_PRELOAD=.*nostage/libtb5-stackdump.so' 2
count "$c" 'run-ddp.sh --plugin .*nostage/libnccl-net-tb5.so --lib-dir .*--nranks [24] ' 2
count "$c" 'run-benchmark.sh .*--nranks 4 .*tb5-gdr-rate80 sim=rate=80 NCCL_NET_GDR_LEVEL=SYS' 1
count "$c" 'run-benchmark.sh .*tb5-gdr-rate40-cables2 sim=rate=40,cables=2 NCCL_NET_GDR_LEVEL=SYS' 1
expect 2 'unknown step: bogus' "$dir/run-gpu-direct-session.sh" --dry-run --steps bogus "$tmp/gs3"

# The DDP run's arguments (it needs torch and GPUs to go further).
expect 0 'Usage: tests/gpu/run-ddp.sh' "$dir/run-ddp.sh" --help
expect 2 'nranks 1: a number of processes' "$dir/run-ddp.sh" --nranks 1
expect 2 'steps 0: a positive number' "$dir/run-ddp.sh" --steps 0
expect 2 'unknown argument: --bogus' "$dir/run-ddp.sh" --bogus
expect 2 'init-file .* exists' python3 "$dir/ddp_check.py" --init-file "$dir" --out "$tmp/x.json"

# Benchmark at four ranks: tb5 beside SHM, Socket and Socket 4x4, the three
# collectives, four processes each.
expect 0 'dry run' "$bench" "${dry[@]}" --nranks 4 --out "$tmp/b4" \
  --tb5-variant tb5 --tb5-variant "tb5-copy4 sim=copy=4"
c=$tmp/b4/commands.txt
count "$c" '.' 20
count "$c" '--nranks 4 ' 20
count "$c" '--colls all_reduce,all_gather,alltoall ' 20
count "$c" 'NCCL_NET=TB5 .*TB5_SIM=tb5gpu-[^ ]*:hosts=4,loop=0 .*--label tb5 $' 4
count "$c" 'NCCL_NET=TB5 .*TB5_SIM=tb5gpu-[^ ]*:hosts=4,loop=0,copy=4 .*--label tb5-copy4 $' 4
count "$c" 'NCCL_P2P_DISABLE=1 .*--label shm $' 4
count "$c" '(NCCL_NET=TB5|TB5_SIM).*--label (shm|socket)' 0
count "$c" 'NCCL_NET=Socket .*--label socket $' 4
count "$c" 'NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4 .*--label socket-4x4 $' 4

# Benchmark, default: two ranks, all_reduce as before.
expect 0 'dry run' "$bench" "${dry[@]}" --transports tb5 --out "$tmp/b2"
count "$tmp/b2/commands.txt" 'TB5_SIM=tb5gpu-[^ ]*:hosts=2,loop=0 .*--nranks 2 .*--colls all_reduce ' 2

if ((fails)); then
  echo "test-scripts.sh: $fails check(s) failed"
  exit 1
fi
echo "test-scripts.sh: all checks passed"
