#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Issue 26 on a machine with 2 GPUs or more (nvidia-h100-x4: GPUs 0 and 1
# are used), in one call of under 9 minutes:
#   1. diag: tb5 rate=80 all_reduce 1K, 256K and 1M with NCCL's tuning
#      log (which algorithm, protocol and channels NCCL took, with and
#      without the tb5 tuner), the plugin's data-path trace (TB5_NCCL_TRACE:
#      isend/irecv/completions/test per request, both ranks, one clock)
#      and where the proxy threads' time went (TB5_NCCL_STATS);
#   2. bench1..3: run-benchmark.sh, 2 ranks, all_reduce 1K..1G (factor 4)
#      three times: tb5 rate=80 (the tuner on, the default), rate=80 with
#      the tuner's channel counts off (NCCL's), rate=80 with the tuner
#      off, rate=40, uncapped; SHM and Socket 4x4 beside them;
#   3. validate, validate-rate80: run-validation.sh, both set-ups (mp and
#      sp), all six collectives 1K..1G, without and with rate=80.
#
#   tests/gpu/run-midsize-session.sh OUTDIR [STAGE]
#
# STAGE holds libnccl-net-tb5.so and libtb5.so.1 built elsewhere and
# carried (default build-gpu-stage; tests/gpu/README.md); when it has
# none and cmake is there, they are built into build-gpu first.
# nccl_check is built here with tests/gpu/build.sh when missing.
# Everything goes to OUTDIR; OUTDIR/session.txt lists each step's result
# and ends with every summary table.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:?usage: run-midsize-session.sh OUTDIR [STAGE]}
stage=${2:-$repo/build-gpu-stage}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$repo" || exit 2
export PATH=/usr/local/cuda/bin:$PATH
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0,1}
unset NCCL_PROTO NCCL_ALGO NCCL_TUNER_PLUGIN NCCL_NET_MERGE_LEVEL NCCL_TOPO_FILE

log=$out/session.txt
: >"$log"
step() {   # step NAME LIMIT_S CMD...: runs CMD, records its status
  local name=$1 limit=$2 rc=0 t0=$SECONDS
  shift 2
  echo "== $name: $*" | tee -a "$log"
  timeout -k 5 "$limit" "$@" >"$out/$name.log" 2>&1 || rc=$?
  tail -n 30 "$out/$name.log"
  echo "== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$log"
}

if [[ ! -f $stage/libnccl-net-tb5.so || ! -f $stage/libtb5.so.1 ]]; then
  if command -v cmake >/dev/null 2>&1; then
    echo "== building the plugin into build-gpu (no stage at $stage)" | tee -a "$log"
    { cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF &&
      cmake --build build-gpu -j 16 --target nccl-net-tb5 tb5; } >"$out/build-plugin.log" 2>&1 ||
      { echo "building the plugin failed (see build-plugin.log)" | tee -a "$log"; exit 2; }
    stage=$repo/build-gpu-stage
    mkdir -p "$stage"
    cp -L build-gpu/plugin/libnccl-net-tb5.so build-gpu/src/lib/libtb5.so.1 "$stage/"
  else
    echo "no plugin in $stage and no cmake to build one" | tee -a "$log"
    exit 2
  fi
fi
[[ -x build-nccl-check/nccl_check ]] || tests/gpu/build.sh >"$out/build.log" 2>&1 ||
  { echo "building nccl_check failed (see build.log)" | tee -a "$log"; exit 2; }
plug=(--plugin "$stage/libnccl-net-tb5.so" --lib-dir "$stage")
{ nvidia-smi -L; nproc; date -u; git log --oneline -1; } >"$out/machine.txt" 2>&1 || true

# 1. What NCCL chose and where the time went, at 256K and 1M.
mkdir -p "$out/trace"
step diag-1k 40 tests/gpu/run-benchmark.sh "${plug[@]}" --nranks 2 --colls all_reduce \
  --min 1K --max 1K --extra-sizes '' --transports tb5 --budget 1M --min-iters 200 --max-iters 200 \
  --tb5-variant "tb5-rate80-trace sim=rate=80 TB5_NCCL_TRACE=$out/trace/small" \
  --proc-timeout 20 --out "$out/diag-1k"
step diag 40 tests/gpu/run-benchmark.sh "${plug[@]}" --nranks 2 --colls all_reduce \
  --min 256K --max 1M --factor 4 --extra-sizes '' --transports tb5 \
  --budget 16M --min-iters 10 --max-iters 20 \
  --tb5-variant "tb5-rate80-trace sim=rate=80 NCCL_DEBUG_SUBSYS=INIT,ENV,NET,TUNING TB5_NCCL_TRACE=$out/trace/tuner TB5_NCCL_STATS=1" \
  --tb5-variant "tb5-rate80-notuner-trace sim=rate=80 TB5_NCCL_TUNER=0 NCCL_DEBUG_SUBSYS=INIT,ENV,NET,TUNING TB5_NCCL_TRACE=$out/trace/notuner TB5_NCCL_STATS=1" \
  --proc-timeout 20 --out "$out/diag"

# 2. The series, three times in one go.
for i in 1 2 3; do
  step "bench$i" 100 tests/gpu/run-benchmark.sh "${plug[@]}" --nranks 2 --colls all_reduce \
    --min 1K --max 1G --factor 4 --extra-sizes '' --transports tb5,shm,socket4x4 \
    --budget 1G --min-iters 5 --max-iters 50 \
    --tb5-variant "tb5-rate80 sim=rate=80" \
    --tb5-variant "tb5-rate80-ncclchannels sim=rate=80 TB5_NCCL_TUNER_CHANNEL_BYTES=0" \
    --tb5-variant "tb5-rate80-notuner sim=rate=80 TB5_NCCL_TUNER=0" \
    --tb5-variant "tb5-rate40 sim=rate=40" \
    --tb5-variant "tb5" \
    --proc-timeout 30 --out "$out/bench$i"
done

# 3. Correctness, both set-ups, without and with the link model.
step validate 65 tests/gpu/run-validation.sh "${plug[@]}" --proc-timeout 30 \
  --out "$out/validation"
step validate-rate80 65 tests/gpu/run-validation.sh "${plug[@]}" --sim-keys rate=80 \
  --proc-timeout 30 --out "$out/validation-rate80"

for d in diag-1k diag bench1 bench2 bench3 validation validation-rate80; do
  [[ -f $out/$d/summary.txt ]] && { echo "-- $d"; cat "$out/$d/summary.txt"; } >>"$log"
done
# NCCL's choices per size (TUNING lines), for the record.
grep -h "AllReduce.*\(Algo\|algo\)\|Tuner\|tuner" "$out"/diag/*.log 2>/dev/null | sort | uniq -c |
  head -40 >"$out/diag-tuning.txt" || true
# Where the proxy threads' time went, and a 1 KiB all_reduce's timeline.
{ echo "-- TB5_NCCL_STATS (diag)"; grep -h "stats " "$out"/diag/*.log 2>/dev/null | sed 's/^.*stats /stats /'
  for p in small tuner notuner; do
    ls "$out/trace/$p".* >/dev/null 2>&1 || continue
    echo "-- trace $p"; python3 "$here/trace_timeline.py" --window 80 --events 60 "$out/trace/$p".* 2>&1 | head -75
  done; } >"$out/diag-timeline.txt"
cat "$log"
