#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Benchmarks NCCL through the tb5 plugin (over tb5's simulator) against
# NCCL's own transports, in one run on one machine, N processes (--nranks,
# default 2) with one GPU each every time:
#   tb5         NCCL_NET=TB5, P2P and SHM off (one or more variants), over a
#               simulated fabric of N hosts, every pair cabled
#               (TB5_SIM=<fabric>:hosts=N,loop=0)
#   shm         NCCL's SHM transport (P2P off, NCCL_NET not forced)
#   socket      NCCL_NET=Socket on lo, P2P and SHM off, NCCL's defaults
#   socket4x4   the same with 4 threads x 4 sockets
# Every result is verified element by element as well as timed. Prints a
# side-by-side markdown table; the raw JSON lines, the table, the commands
# and the NCCL logs go to the output directory.
#
#   tests/gpu/run-benchmark.sh [options]        (see --help)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

usage() {
  cat <<EOF
usage: ${0##*/} [options]
  --build DIR          plugin build tree (default: build-gpu)
  --plugin PATH|NAME   NCCL_NET_PLUGIN value (default: DIR/plugin/libnccl-net-tb5.so)
  --lib-dir DIRS       LD_LIBRARY_PATH for the tb5 runs (default: DIR/src/lib and
                       the plugin's directory)
  --bin PATH           nccl_check (default: build-nccl-check/nccl_check; built
                       with tests/gpu/build.sh when missing)
  --out DIR            results (default: \$OUT/tb5-benchmark when \$OUT is set,
                       else /tmp/tb5-benchmark-<time>)
  --nranks N           processes, one GPU each (2..16, default 2); the tb5 runs
                       get a fabric of N simulated hosts, every pair cabled
  --colls LIST         collectives (default: all_reduce with 2 ranks;
                       all_reduce,all_gather,alltoall with more)
  --min SIZE --max SIZE --factor N   sizes (default 1K, 1G, 4)
  --extra-sizes LIST   sizes added to the series (default: 128M; '' for none)
  --transports LIST    from tb5,shm,socket,socket4x4 (default: all, tb5 first)
  --tb5-variant SPEC   a tb5 run: "LABEL [sim=KEYS] [VAR=VALUE ...]"; sim= adds
                       TB5_SIM keys, the rest is environment. Repeatable; default
                       one variant "tb5". Example: --tb5-variant tb5
                       --tb5-variant "tb5-copy4 sim=copy=4"
  --tb5-env VAR=VALUE  environment for every tb5 variant (repeatable)
  --env VAR=VALUE      environment for every run (repeatable)
  --budget SIZE --min-iters N --max-iters N
                       timed iterations per size: budget/size within the bounds
                       (default 4G, 10, 200); warm-up: a tenth, at least 1
  --timeout S          nccl_check: no progress for S seconds is a hang (default 60)
  --proc-timeout S     limit for each transport's run (default 120)
  --dry-run            print (and record in commands.txt) the commands, run none
EOF
}

build=build-gpu plugin='' libdirs='' bin='' out=''
colls='' min=1K max=1G factor=4 extra_sizes=128M
transports=tb5,shm,socket,socket4x4
budget=4G min_iters=10 max_iters=200 hang_timeout=60 proc_timeout=120 nranks=2
variants=() tb5_env=() extra_env=()
while (($#)); do
  case $1 in --dry-run|-h|--help) ;; --*) (($# >= 2)) || die "$1 needs a value" ;; esac
  case $1 in
    --build) build=$2; shift ;;
    --plugin) plugin=$2; shift ;;
    --lib-dir) libdirs=$2; shift ;;
    --bin) bin=$2; shift ;;
    --out) out=$2; shift ;;
    --colls) colls=$2; shift ;;
    --min) min=$2; shift ;;
    --max) max=$2; shift ;;
    --factor) factor=$2; shift ;;
    --extra-sizes) extra_sizes=$2; shift ;;
    --transports) transports=$2; shift ;;
    --tb5-variant) variants+=("$2"); shift ;;
    --tb5-env) [[ $2 == *=* ]] || die "--tb5-env needs VAR=VALUE"; tb5_env+=("$2"); shift ;;
    --env) [[ $2 == *=* ]] || die "--env needs VAR=VALUE"; extra_env+=("$2"); shift ;;
    --budget) budget=$2; shift ;;
    --min-iters) min_iters=$2; shift ;;
    --max-iters) max_iters=$2; shift ;;
    --timeout) hang_timeout=$2; shift ;;
    --proc-timeout) proc_timeout=$2; shift ;;
    --nranks) nranks=$2; shift ;;
    --dry-run) DRY_RUN=1 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option: $1" ;;
  esac
  shift
done
((${#variants[@]})) || variants=(tb5)
check_nranks "$nranks"
if [[ -z $colls ]]; then
  if ((nranks == 2)); then colls=all_reduce; else colls=all_reduce,all_gather,alltoall; fi
fi

if [[ -z $out ]]; then
  if [[ -n ${OUT:-} ]]; then out=$OUT/tb5-benchmark; else out=/tmp/tb5-benchmark-$(date +%Y%m%d-%H%M%S); fi
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
: >"$out/commands.txt"
: >"$out/results.jsonl"

IFS=, read -r -a transport_list <<<"$transports"
want_tb5=0
for t in "${transport_list[@]}"; do
  case $t in
    tb5) want_tb5=1 ;;
    shm|socket|socket4x4) ;;
    *) die "unknown transport: $t" ;;
  esac
done
if ((want_tb5)); then
  resolve_paths "$build" "$plugin" "$bin" "$libdirs"
  check_plugin_loads
else
  PLUGIN='(not used)' LIBPATH='' TB5_LDPATH=''
  BIN=${bin:-$REPO/build-nccl-check/nccl_check}
  [[ -x $BIN || $DRY_RUN == 1 ]] || "$GPU_DIR/build.sh" "$(dirname "$BIN")"
fi
make_unset_args
machine_info | tee "$out/machine.txt"

# shellcheck disable=SC2054  # the commas are inside a value
common_env=(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,NET NCCL_SOCKET_IFNAME=lo)
bench_args=(--bench --colls "$colls" --min "$min" --max "$max" --factor "$factor"
  --budget "$budget" --min-iters "$min_iters" --max-iters "$max_iters" --timeout "$hang_timeout")
[[ -n $extra_sizes ]] && bench_args+=(--extra-sizes "$extra_sizes")
IFS=, read -r -a coll_list <<<"$colls"
read -r -a extra_list <<<"${extra_sizes//,/ }"
n_sizes=$(size_list "$min" "$max" "$factor" "$nranks" "${extra_list[@]}" | wc -l)
want_rows=$((${#coll_list[@]} * n_sizes))

summary=()
overall=0
cols=() ratios=()

# run_transport LABEL TITLE WANT_RE FORBID_RE ENV...: one run of $nranks
# processes, then its checks: exit status, every row verified and recording
# nranks, the NCCL logs show the transport that was meant and none other.
run_transport() {
  local label=$1 title=$2 want_re=$3 forbid_re=$4
  shift 4
  local rc=0 start=$SECONDS
  echo
  note "== $label: $title =="
  launch_ranks "$label" "$nranks" "$proc_timeout" "$out" "${common_env[@]}" "$@" "${extra_env[@]}" \
    -- "${bench_args[@]}" --label "$label" || rc=$?
  cols+=(--col "$label=$title")
  [[ $DRY_RUN == 1 ]] && return 0
  grep -v '^{' "$out/$label.rank0.out" || true
  grep '^{' "$out/$label.rank0.out" >"$out/$label.jsonl" || true
  cat "$out/$label.jsonl" >>"$out/results.jsonl"

  local problems=() r log rows other_n
  ((rc == 0)) || problems+=("exit status $rc")
  rows=$(grep -c '"verified":true' "$out/$label.jsonl" || true)
  ((rows == want_rows)) || problems+=("$rows of $want_rows rows verified")
  other_n=$(grep -vc "\"nranks\":$nranks," "$out/$label.jsonl" || true)
  ((other_n == 0)) || problems+=("$other_n rows do not record nranks $nranks")
  for ((r = 0; r < nranks; r++)); do
    log=$out/$label.rank$r.nccl.log
    log_has "$log" "$want_re" || problems+=("rank $r's NCCL log lacks '$want_re'")
    if log_has "$log" "$forbid_re"; then
      problems+=("rank $r's NCCL log has '$(grep -Eom1 "$forbid_re" "$log")'")
    fi
  done
  if [[ $label == tb5* ]]; then
    # Bytes per cable, per rank (the plugin's live counters when each link
    # closed), and whether every cable carried a quarter of the mean.
    local totals=$out/$label.cables.txt
    : >"$totals"
    for ((r = 0; r < nranks; r++)); do
      cable_totals "$out/$label.rank$r.nccl.log" | sed "s/^/rank$r /" >>"$totals"
    done
    if [[ -s $totals ]]; then
      echo "bytes per cable (rank link sent received), $totals:"
      sed 's/^/    /' "$totals"
      summary+=("INFO  $label: $(awk '{ n++; s += $3; if (n == 1 || $3 < m) m = $3 }
        END { printf "%d cables; sent per cable min %.0f B, mean %.0f B: %s", n, m, s / n,
          (m * 4 >= s / n) ? "every cable at least a quarter of the mean" : "a cable under a quarter of the mean" }' "$totals")")
    fi
  fi
  local took=$((SECONDS - start))
  if ((${#problems[@]} == 0)); then
    summary+=("PASS  $label ($title): $rows rows verified, NCCL logs show '$want_re' on every rank, ${took} s")
  else
    overall=1
    local joined p
    joined=${problems[0]}
    for p in "${problems[@]:1}"; do joined+="; $p"; done
    summary+=("FAIL  $label ($title): $joined (${took} s)")
  fi
}

total_start=$SECONDS
for t in "${transport_list[@]}"; do
  case $t in
    tb5)
      for spec in "${variants[@]}"; do
        read -r -a words <<<"$spec"
        label=${words[0]} sim='' venv=()
        for w in "${words[@]:1}"; do
          case $w in
            sim=*) sim+=,${w#sim=} ;;
            *=*) venv+=("$w") ;;
            *) die "--tb5-variant '$spec': '$w' is neither sim=KEYS nor VAR=VALUE" ;;
          esac
        done
        fresh_fabric "$label"
        run_transport "$label" "$label" 'via NET/TB5' 'via NET/Socket|via SHM|via P2P|Using network Socket' \
          NCCL_NET_PLUGIN="$PLUGIN" NCCL_NET=TB5 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 \
          TB5_SIM="$FABRIC:$(sim_hosts "$nranks" "${sim#,}")" LD_LIBRARY_PATH="$TB5_LDPATH" \
          "${tb5_env[@]}" "${venv[@]}"
        [[ $DRY_RUN == 1 ]] || cleanup_fabric "$FABRIC" || summary+=("WARN  $label: the simulator left files in /dev/shm")
        ratios+=(--ratio "$label/shm" --ratio "$label/socket-4x4")
      done
      ;;
    shm)
      run_transport shm "SHM" 'via SHM' 'via NET/|via P2P' NCCL_P2P_DISABLE=1
      ;;
    socket)
      run_transport socket "Socket default" 'via NET/Socket' 'via SHM|via P2P|NET/TB5' \
        NCCL_NET=Socket NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
      ;;
    socket4x4)
      run_transport socket-4x4 "Socket 4x4" 'via NET/Socket' 'via SHM|via P2P|NET/TB5' \
        NCCL_NET=Socket NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4
      ;;
  esac
done

if [[ $DRY_RUN == 1 ]]; then
  note "dry run: nothing was run; the commands are in $out/commands.txt"
  exit 0
fi
{
  echo "# tb5 GPU benchmark"
  echo
  sed 's/^/    /' "$out/machine.txt"
  echo
  echo "Each run: $nranks processes, one GPU each; sizes $min..$max by $factor${extra_sizes:+ plus $extra_sizes};"
  echo "timed iterations per size: $budget / size within [$min_iters, $max_iters]; busbw as nccl-tests;"
  echo "time: median per op of the slowest rank. Every result verified. Commands: commands.txt."
  if command -v python3 >/dev/null 2>&1; then
    python3 "$GPU_DIR/bench_table.py" "${cols[@]}" "${ratios[@]}" "$out/results.jsonl"
  else
    echo "(python3 not found: no table; see results.jsonl)"
  fi
} >"$out/table.md"
echo
cat "$out/table.md"
{
  echo
  echo "== tb5 GPU benchmark summary ($out, $((SECONDS - total_start)) s) =="
  printf '%s\n' "${summary[@]}"
  if ((overall == 0)); then echo "RESULT: PASS"; else echo "RESULT: FAIL"; fi
} | tee "$out/summary.txt"
exit "$overall"
