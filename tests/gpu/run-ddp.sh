#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run-ddp.sh - PyTorch DDP (the machine's own torch and the NCCL it bundles)
# over tb5 with GPU buffers, against the same training over NCCL's SHM
# transport, same seed (issue 35, deliverable 3).
#
#   1. tb5: ddp_check.py with NCCL on the plugin only (NCCL_NET=TB5, P2P and
#      SHM off), GPUDirect on (NCCL_NET_GDR_LEVEL=SYS, what the simulator
#      needs: docs/plugin.md), one simulated host per rank, every pair
#      cabled (TB5_SIM=<fabric>:hosts=N,loop=0); every rank's parameters
#      equal after the last step; every NCCL channel line of every rank
#      says `via NET/TB5/.../GDRDMA`, none another transport
#   2. SHM: the same training, NCCL_P2P_DISABLE=1 and no plugin
#   3. the two runs' losses compared, rank by rank and step by step:
#      bit for bit at 2 ranks (a sum of two is the same in any order), within
#      --rtol (default 1e-5) at more, where NCCL may choose another
#      algorithm or order for another transport
#
# Usage: tests/gpu/run-ddp.sh [--build DIR] [--plugin PATH] [--lib-dir DIRS]
#        [--nranks N] [--steps K] [--rtol R] [--out DIR] [--sim-keys KEYS]
# (--plugin and --lib-dir as run-benchmark.sh takes them: a plugin and
# libtb5 carried outside a build tree.)
# Needs python3 with torch and N GPUs. Prints PASS/FAIL lines; exits 0 when
# all pass. Results in --out (default ddp-out/): tb5.json, shm.json, the
# NCCL logs, summary.txt.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

build=$REPO/build plugin='' libdirs='' nranks=2 steps=20 rtol='' out=ddp-out sim_keys=''
usage() {
  sed -n '/^# Usage:/,/summary.txt\.$/p' "$0" | sed 's/^# \{0,1\}//'
}
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --plugin) plugin=$2; shift 2 ;;
    --lib-dir) libdirs=$2; shift 2 ;;
    --nranks) nranks=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --rtol) rtol=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --sim-keys) sim_keys=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
check_nranks "$nranks"
if ! [[ $steps =~ ^[0-9]+$ ]] || ((steps < 1)); then
  die "--steps $steps: a positive number"
fi
if [[ -z $rtol ]]; then
  rtol=1e-5
  ((nranks != 2)) || rtol=0
fi
python3 -c 'import torch' 2>/dev/null || die "python3 has no torch"
resolve_paths "$build" "$plugin" none "$libdirs"
check_plugin_loads
make_unset_args
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/*.json "$out"/*.nccl.log "$out/summary.txt"

# run NAME ENV...: ddp_check.py under exactly ENV (and the NVLS settings).
run() {
  local name=$1 rc=0
  shift
  rm -f "$out/$name.init"
  env "${UNSET_ARGS[@]}" "${ALWAYS_ENV[@]}" "$@" NCCL_DEBUG=INFO \
    NCCL_DEBUG_SUBSYS=INIT,ENV,NET NCCL_DEBUG_FILE="$out/$name.%h.%p.nccl.log" \
    timeout 1200 python3 "$GPU_DIR/ddp_check.py" --nranks "$nranks" --steps "$steps" \
    --init-file "$out/$name.init" --out "$out/$name.json" 2>&1 | tee "$out/$name.out" || rc=$?
  rm -f "$out/$name.init"
  verdict "$rc" "$name: DDP trained $steps steps on $nranks ranks, parameters equal on every rank"
  return "$rc"
}

fresh_fabric ddp
if run tb5 NCCL_NET_PLUGIN="$PLUGIN" NCCL_NET=TB5 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 \
  NCCL_NET_GDR_LEVEL=SYS NCCL_SOCKET_IFNAME=lo LD_LIBRARY_PATH="$TB5_LDPATH" \
  TB5_SIM="$FABRIC:$(sim_hosts "$nranks" "$sim_keys")"; then
  all=$(cat "$out"/tb5.*.nccl.log | grep -Ec 'Channel [0-9]+/[0-9]+ .* via ' || true)
  gdr=$(cat "$out"/tb5.*.nccl.log |
    grep -Ec 'Channel [0-9]+/[0-9]+ .* via NET/TB5/[0-9]+(\([0-9]+\))?/GDRDMA' || true)
  verdict $((all > 0 && gdr == all ? 0 : 1)) \
    "tb5: $gdr of $all NCCL channel lines 'via NET/TB5/.../GDRDMA'"
fi
cleanup_fabric "$FABRIC" || verdict 1 "tb5: the simulator left files in /dev/shm"
if run shm NCCL_P2P_DISABLE=1 NCCL_SOCKET_IFNAME=lo; then
  all=$(cat "$out"/shm.*.nccl.log | grep -Ec 'Channel [0-9]+/[0-9]+ .* via SHM' || true)
  verdict $((all > 0 ? 0 : 1)) "shm: $all NCCL channel lines 'via SHM'"
fi
if [[ -s $out/tb5.json && -s $out/shm.json ]]; then
  rc=0
  python3 "$GPU_DIR/ddp_check.py" --compare "$out/tb5.json" "$out/shm.json" --rtol "$rtol" || rc=$?
  verdict "$rc" "tb5 against shm: the same losses at every rank and step (rtol $rtol)"
  python3 - "$out/tb5.json" "$out/shm.json" <<'EOF' | tee -a "$out/summary.txt"
import json, statistics, sys
for path in sys.argv[1:]:
    r = json.load(open(path))
    steps = [s for rk in r["ranks"] for s in rk["step_s"][2:]] or [0]
    print(f"{path.rsplit('/', 1)[-1]}: torch {r['torch']} NCCL {r['nccl']}, median step "
          f"{statistics.median(steps) * 1e3:.1f} ms (steps 3 on, every rank), wall {r['wall_s']:.1f} s")
EOF
fi
printf '%s\n' "${results[@]}" | tee -a "$out/summary.txt"
exit "$overall"
