#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Issue 35 on a machine with 4 GPUs (nvidia-h100-x4), in one call of under
# 10 minutes: NCCL's GPUDirect path through the plugin over the simulator
# (TB5_SIM's default engine dma=cuda: the GPUs' copy engines move GPU
# buffers), with the one setting docs/plugin.md names (NCCL_NET_GDR_LEVEL=SYS).
#   0. sim-cuda: libtb5's CUDA engine alone (STAGE/test_sim_cuda, built
#      with the stage): cudaMalloc memory by CUDA IPC, cuMem allocations
#      by their shareable handle, between two processes;
#   1. diag: what NCCL decides for a tb5 link under its defaults and with
#      the setting (its "GPU Direct RDMA" and channel lines), and the
#      plugin's stats at 1M and 64M, rate=80;
#   2. validate-gdr-*: run-validation.sh --gdr: 2 GPUs mp (all six
#      collectives 1K..1G), sp (1K..64M), 3 and 4 ranks mp (1K..256M);
#   3. bench1..3: run-benchmark.sh, 2 ranks, all_reduce 1K..256M (factor
#      4), tb5 rate=80 with GPU buffers (NCCL's cuMem buffers, and
#      cudaMalloc ones with NCCL_CUMEM_ENABLE=0) and with host staging
#      (today's path), SHM and Socket 4x4 beside them, three times;
#   4. probe-1m, probe-sp: a first collective of 1 MiB with GPU buffers
#      (mp), and sp, each probed some seconds in (probe-hang.sh: every
#      thread's stack through STAGE/libtb5-stackdump.so), for a run that
#      hangs;
#   5. ddp2, ddp4: run-ddp.sh, PyTorch DDP over tb5 with GPU buffers
#      against SHM, 2 and 4 ranks;
#   6. mesh4: 4 ranks, every pair cabled, rate=80, alltoall, all_reduce
#      and all_gather 64M..256M with GPU buffers and host staging beside
#      SHM and Socket 4x4; cables2: 2 ranks, two rate=40 cables against
#      one, GPU buffers, 64M..256M.
#
#   tests/gpu/run-gpu-direct-session.sh [--dry-run] [--stage-only]
#       [--steps LIST] OUTDIR [STAGE]
#
# --steps runs only the named steps (comma-separated, from sim-cuda, diag,
# validate-gdr-2, validate-gdr-sp, validate-gdr-3, validate-gdr-4, bench
# (all three series, or one of bench1..3), probe-1m, probe-sp, ddp2, ddp4,
# mesh4, cables2; default: sim-cuda through bench, the steps of the first
# session).
#
# The plugin and libtb5 are built here (Release, build-gpu) when cmake is
# there and --stage-only is not given; else STAGE holds libnccl-net-tb5.so,
# libtb5.so.1 and test_sim_cuda built elsewhere and carried (default
# build-gpu-stage). --dry-run records the steps in OUTDIR/commands.txt
# and runs none (tests/gpu/test-scripts.sh). OUTDIR/session.txt lists each
# step's result and ends with every summary table.
set -uo pipefail

dry=0 stage_only=0 steps=sim-cuda,diag,validate-gdr-2,validate-gdr-sp,validate-gdr-3,validate-gdr-4,bench
[[ ${1:-} == --dry-run ]] && { dry=1; shift; }
[[ ${1:-} == --stage-only ]] && { stage_only=1; shift; }
[[ ${1:-} == --steps ]] && { steps=${2:?--steps needs a list}; shift 2; }
known=,sim-cuda,diag,validate-gdr-2,validate-gdr-sp,validate-gdr-3,validate-gdr-4,bench,bench1,bench2,bench3,probe-1m,probe-sp,ddp2,ddp4,mesh4,cables2,
for s in ${steps//,/ }; do
  [[ $known == *",$s,"* ]] || { echo "unknown step: $s (known: ${known:1:-1})" >&2; exit 2; }
done
wanted() { [[ ,$steps, == *",$1,"* ]]; }
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:?usage: run-gpu-direct-session.sh [--dry-run] [--stage-only] OUTDIR [STAGE]}
stage=${2:-$repo/build-gpu-stage}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$repo" || exit 2
export PATH=/usr/local/cuda/bin:$PATH
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0,1}
unset NCCL_PROTO NCCL_ALGO NCCL_TUNER_PLUGIN NCCL_NET_MERGE_LEVEL NCCL_TOPO_FILE \
  NCCL_NET_GDR_LEVEL NCCL_NET_GDR_READ

log=$out/session.txt
: >"$log"
step() {   # step NAME LIMIT_S CMD...: runs CMD, records its status
  local name=$1 limit=$2 rc=0 t0=$SECONDS
  shift 2
  wanted "$name" || { [[ $name == bench[1-3] ]] && wanted bench; } || return 0
  if ((dry)); then
    printf '%s\n' "$*" >>"$out/commands.txt"
    return 0
  fi
  echo "== $name: $*" | tee -a "$log"
  timeout -k 5 "$limit" "$@" >"$out/$name.log" 2>&1 || rc=$?
  tail -n 30 "$out/$name.log"
  echo "== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$log"
}

if ((!dry)); then
  { cmake --version; nvidia-smi -L; nproc; date -u; git log --oneline -1; uname -r; id
    echo "kernel.yama.ptrace_scope: $(cat /proc/sys/kernel/yama/ptrace_scope 2>&1)"
  } >"$out/machine.txt" 2>&1
  if ((!stage_only)) && command -v cmake >/dev/null 2>&1; then
    echo "== building the plugin into build-gpu (Release)" | tee -a "$log"
    if { cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF &&
         cmake --build build-gpu -j 16 --target nccl-net-tb5 tb5; } >"$out/build-plugin.log" 2>&1; then
      stage=$repo/build-gpu-built
      mkdir -p "$stage"
      cp -L build-gpu/plugin/libnccl-net-tb5.so build-gpu/src/lib/libtb5.so.1 "$stage/"
    else
      echo "building the plugin failed (see build-plugin.log); using $stage" | tee -a "$log"
    fi
  fi
  [[ -f $stage/libnccl-net-tb5.so && -f $stage/libtb5.so.1 ]] ||
    { echo "no plugin in $stage and none built" | tee -a "$log"; exit 2; }
  echo "== plugin from $stage" | tee -a "$log"
  [[ -x build-nccl-check/nccl_check ]] || tests/gpu/build.sh >"$out/build.log" 2>&1 ||
    { echo "building nccl_check failed (see build.log)" | tee -a "$log"; exit 2; }
fi
plug=(--plugin "$stage/libnccl-net-tb5.so" --lib-dir "$stage")
gdr="NCCL_NET_GDR_LEVEL=SYS"
dbg="NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH"

# 0. The CUDA engine alone (its two-process tests: CUDA IPC and cuMem
# shareable handles).
step sim-cuda 60 env LD_LIBRARY_PATH="$stage" "$stage/test_sim_cuda"

# 1. NCCL's decision under its defaults and with the one setting; where
# the time goes with NCCL's own buffers (cuMem, which CUDA IPC cannot
# export: through the ring) and with cudaMalloc ones (NCCL_CUMEM_ENABLE=0:
# by reference).
step diag 60 tests/gpu/run-benchmark.sh "${plug[@]}" --nranks 2 --colls all_reduce \
  --min 1M --max 64M --factor 64 --extra-sizes '' --transports tb5 --budget 256M \
  --min-iters 5 --max-iters 5 \
  --tb5-variant "tb5-default sim=rate=80 $dbg" \
  --tb5-variant "tb5-gdr sim=rate=80 $gdr $dbg TB5_NCCL_STATS=1" \
  --tb5-variant "tb5-gdr-cumem0 sim=rate=80 $gdr NCCL_CUMEM_ENABLE=0 $dbg TB5_NCCL_STATS=1" \
  --tb5-variant "tb5-host sim=rate=80 $dbg TB5_NCCL_STATS=1" \
  --proc-timeout 20 --out "$out/diag"

# 2. Correctness with GPU buffers: 2 GPUs (mp; sp, one process driving
# both, apart so that a hang there costs its own step), 3 and 4.
step validate-gdr-2 60 tests/gpu/run-validation.sh "${plug[@]}" --gdr --modes mp \
  --proc-timeout 45 --out "$out/validation-gdr-2"
step validate-gdr-sp 60 tests/gpu/run-validation.sh "${plug[@]}" --gdr --modes sp --max 64M \
  --timeout 20 --proc-timeout 45 --out "$out/validation-gdr-sp"
CUDA_VISIBLE_DEVICES=0,1,2 step validate-gdr-3 60 tests/gpu/run-validation.sh "${plug[@]}" \
  --gdr --modes mp --nranks 3 --max 256M --proc-timeout 45 --out "$out/validation-gdr-3"
CUDA_VISIBLE_DEVICES=0,1,2,3 step validate-gdr-4 60 tests/gpu/run-validation.sh "${plug[@]}" \
  --gdr --modes mp --nranks 4 --max 256M --proc-timeout 45 --out "$out/validation-gdr-4"

# 3. The series, three times: GPU buffers (NCCL's cuMem ones, and
# cudaMalloc ones), host staging (today's path), SHM, Socket 4x4.
for i in 1 2 3; do
  step "bench$i" 90 tests/gpu/run-benchmark.sh "${plug[@]}" --nranks 2 --colls all_reduce \
    --min 1K --max 256M --factor 4 --extra-sizes '' --transports tb5,shm,socket4x4 \
    --budget 512M --min-iters 5 --max-iters 50 \
    --tb5-variant "tb5-gdr-rate80 sim=rate=80 $gdr" \
    --tb5-variant "tb5-gdr-cumem0-rate80 sim=rate=80 $gdr NCCL_CUMEM_ENABLE=0" \
    --tb5-variant "tb5-host-rate80 sim=rate=80" \
    --proc-timeout 25 --out "$out/bench$i"
done

# 4. Where a hung run waits: a first collective of 1 MiB with GPU buffers
# (mp), and sp; every thread's stack 15 s in.
dump=(--env "LD_PRELOAD=$stage/libtb5-stackdump.so" --env "TB5_STACKDUMP_DIR=$out/stackdump")
((dry)) || mkdir -p "$out/stackdump"
step probe-1m 75 tests/gpu/probe-hang.sh 15 "$out/probe-1m-stacks.txt" \
  tests/gpu/run-benchmark.sh "${plug[@]}" --nranks 2 --colls all_reduce \
  --min 1M --max 1M --extra-sizes '' --transports tb5 --budget 64M \
  --min-iters 5 --max-iters 5 --tb5-variant "tb5-gdr sim=rate=80 $gdr" "${dump[@]}" \
  --timeout 40 --proc-timeout 50 --out "$out/probe-1m"
step probe-sp 75 tests/gpu/probe-hang.sh 15 "$out/probe-sp-stacks.txt" \
  tests/gpu/run-validation.sh "${plug[@]}" --gdr --modes sp --colls all_reduce --max 64K \
  "${dump[@]}" --timeout 40 --proc-timeout 50 --out "$out/probe-sp"

# 5. PyTorch DDP over tb5 with GPU buffers against SHM, same seed.
step ddp2 150 tests/gpu/run-ddp.sh "${plug[@]}" --nranks 2 --out "$out/ddp2"
CUDA_VISIBLE_DEVICES=0,1,2,3 step ddp4 150 tests/gpu/run-ddp.sh "${plug[@]}" --nranks 4 \
  --out "$out/ddp4"

# 6. The mesh and two cables, GPU buffers.
CUDA_VISIBLE_DEVICES=0,1,2,3 step mesh4 200 tests/gpu/run-benchmark.sh "${plug[@]}" --nranks 4 \
  --colls alltoall,all_reduce,all_gather --min 64M --max 256M --factor 4 --extra-sizes '' \
  --transports tb5,shm,socket4x4 --budget 1G --min-iters 5 --max-iters 20 \
  --tb5-variant "tb5-gdr-rate80 sim=rate=80 $gdr" --tb5-variant "tb5-host-rate80 sim=rate=80" \
  --proc-timeout 45 --out "$out/mesh4"
step cables2 90 tests/gpu/run-benchmark.sh "${plug[@]}" --nranks 2 --colls all_reduce \
  --min 64M --max 256M --factor 4 --extra-sizes '' --transports tb5 --budget 1G \
  --min-iters 5 --max-iters 20 \
  --tb5-variant "tb5-gdr-rate40 sim=rate=40 $gdr" \
  --tb5-variant "tb5-gdr-rate40-cables2 sim=rate=40,cables=2 $gdr" \
  --tb5-variant "tb5-host-rate40-cables2 sim=rate=40,cables=2" \
  --proc-timeout 40 --out "$out/cables2"

if ((dry)); then
  echo "dry run: $(wc -l <"$out/commands.txt") steps in $out/commands.txt, none run"
  exit 0
fi

for d in diag validation-gdr-2 validation-gdr-sp validation-gdr-3 validation-gdr-4 bench1 bench2 \
  bench3 probe-1m probe-sp ddp2 ddp4 mesh4 cables2; do
  [[ -f $out/$d/summary.txt ]] && { echo "-- $d"; cat "$out/$d/summary.txt"; } >>"$log"
done
# NCCL's GPUDirect decisions and channel lines, per diag variant.
grep -h "GPU Direct RDMA\|GDRDMA\|via NET" "$out"/diag/*.log 2>/dev/null | sed 's/^[^ ]* [^ ]* //' |
  sort | uniq -c | head -60 >"$out/diag-gdr.txt" || true
grep -h "stats " "$out"/diag/*.log 2>/dev/null | sed 's/^.*stats /stats /' >"$out/diag-stats.txt" || true
# What the simulator said about GPU regions it could not export or open.
grep -rh "tb5-sim\[" "$out" 2>/dev/null | sed 's/^tb5-sim\[[0-9]*\]: //; s/0x[0-9a-f]*/ADDR/g' |
  sort | uniq -c | sort -rn | head -40 >"$out/diag-notes.txt" || true
# Everything else in one archive (the device call brings back few files),
# written beside OUTDIR first: tar reads a directory that does not change.
tgz=$(mktemp "${out%/}.XXXXXX.tgz")
if tar czf "$tgz" -C "$out" --exclude=./session.txt .; then
  (cd "$out" && find . -mindepth 1 -maxdepth 1 ! -name session.txt ! -name 'diag-*.txt' \
    ! -name 'probe-*-stacks.txt' -exec rm -rf {} +)
  mv "$tgz" "$out/logs.tgz"
else
  echo "packing the logs failed; they stay in $out" | tee -a "$log"
  rm -f "$tgz"
fi
cat "$log"
