#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Issue 25 on a machine with four GPUs (nvidia-h100-x4), in one call of
# under 9 minutes, with NCCL's defaults (no NCCL_NET_MERGE_LEVEL, no
# topology override):
#   1. run-validation.sh --nranks 3 and --nranks 4 (mp, all six
#      collectives, 1K..256M): every channel via NET/TB5, every connection
#      on the cable that reaches its peer;
#   2. run-benchmark.sh, 2 ranks, all_reduce, two rate=40 cables
#      (cables=2) against one: busbw >= 9.0 GB/s from 64 MiB wanted;
#   3. run-benchmark.sh, 4 ranks, rate=80, alltoall, all_reduce and
#      all_gather from 16 to 128 MiB beside SHM and Socket 4x4, and with
#      the plugin's NCCL settings off (TB5_NCCL_DEFAULTS=0); then
#      alltoall alone, with the bytes each cable carried per rank (every
#      cable at least a quarter of the mean: counters4/summary.txt).
#
#   tests/gpu/run-mesh-session.sh OUTDIR [STAGE]
#
# STAGE holds libnccl-net-tb5.so and libtb5.so.1 built elsewhere and
# carried (default build-gpu-stage; see README.md); nccl_check is built
# here with tests/gpu/build.sh when missing. Everything goes to OUTDIR;
# OUTDIR/session.txt lists each step's result.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:?usage: run-mesh-session.sh OUTDIR [STAGE]}
stage=${2:-$repo/build-gpu-stage}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$repo" || exit 2
export PATH=/usr/local/cuda/bin:$PATH
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
unset NCCL_NET_MERGE_LEVEL NCCL_NET_FORCE_MERGE NCCL_TOPO_FILE

log=$out/session.txt
: >"$log"
step() {   # step NAME LIMIT_S CMD...: runs CMD, records its status
  local name=$1 limit=$2 rc=0 t0=$SECONDS
  shift 2
  echo "== $name: $*" | tee -a "$log"
  timeout -k 5 "$limit" "$@" >"$out/$name.log" 2>&1 || rc=$?
  tail -n 25 "$out/$name.log"
  echo "== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$log"
}

[[ -x build-nccl-check/nccl_check ]] || tests/gpu/build.sh >"$out/build.log" 2>&1 ||
  { echo "building nccl_check failed (see build.log)" | tee -a "$log"; exit 2; }
plug=(--plugin "$stage/libnccl-net-tb5.so" --lib-dir "$stage")
nvidia-smi -L >"$out/gpus.txt" 2>&1 || true

step validate3 120 tests/gpu/run-validation.sh "${plug[@]}" --nranks 3 --modes mp \
  --min 1K --max 256M --factor 4 --proc-timeout 110 --out "$out/validation3"
step validate4 140 tests/gpu/run-validation.sh "${plug[@]}" --nranks 4 --modes mp \
  --min 1K --max 256M --factor 4 --proc-timeout 130 --out "$out/validation4"
step cables2 70 tests/gpu/run-benchmark.sh "${plug[@]}" --nranks 2 --colls all_reduce \
  --min 1M --max 256M --factor 4 --extra-sizes '' --transports tb5 \
  --tb5-variant "tb5-rate40 sim=rate=40" --tb5-variant "tb5-rate40-cables2 sim=rate=40,cables=2" \
  --proc-timeout 30 --out "$out/cables2"
step mesh4 170 tests/gpu/run-benchmark.sh "${plug[@]}" --nranks 4 \
  --colls alltoall,all_reduce,all_gather --min 16M --max 128M --factor 2 --extra-sizes '' \
  --transports tb5,shm,socket4x4 --tb5-variant "tb5-rate80 sim=rate=80" \
  --tb5-variant "tb5-rate80-nodefaults sim=rate=80 TB5_NCCL_DEFAULTS=0" \
  --proc-timeout 35 --out "$out/mesh4"
# alltoall alone, for the bytes each cable carried under it
step counters4 50 tests/gpu/run-benchmark.sh "${plug[@]}" --nranks 4 \
  --colls alltoall --min 64M --max 128M --factor 2 --extra-sizes '' \
  --transports tb5 --tb5-variant "tb5-rate80 sim=rate=80" \
  --proc-timeout 40 --out "$out/counters4"
for d in validation3 validation4 cables2 mesh4 counters4; do
  [[ -f $out/$d/summary.txt ]] && { echo "-- $d"; cat "$out/$d/summary.txt"; } >>"$log"
done
cat "$log"
