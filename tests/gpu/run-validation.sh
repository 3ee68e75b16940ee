#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Validates the tb5 NCCL net plugin on a machine with GPUs: every collective
# of nccl_check, every size, checked element by element on every rank, with
# NCCL forced onto the plugin over tb5's simulator, in two set-ups:
#   mp  N processes (--nranks, default 2), one GPU each, each a host of a
#       simulated fabric of N hosts, every pair cabled
#       (TB5_SIM=<fabric>:hosts=N,loop=0)
#   sp  one process driving both GPUs over an in-process loop pair
#       (TB5_SIM=<fabric>:hosts=1,loop=1)
# and checks from the NCCL logs that every channel went through NET/TB5,
# recording which link each of the plugin's connections took.
#
#   tests/gpu/run-validation.sh [options]       (see --help)
#
# Exit status 0 when every check passed.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

usage() {
  cat <<EOF
usage: ${0##*/} [options]
  --build DIR        plugin build tree (default: build-gpu): the plugin is
                     DIR/plugin/libnccl-net-tb5.so, libtb5 is in DIR/src/lib
  --plugin PATH|NAME NCCL_NET_PLUGIN value (default: the plugin in --build)
  --lib-dir DIRS     colon-separated directories for LD_LIBRARY_PATH
                     (default: DIR/src/lib and the plugin's directory)
  --bin PATH         nccl_check (default: build-nccl-check/nccl_check; built
                     with tests/gpu/build.sh when missing)
  --out DIR          logs and results (default: \$OUT/tb5-validation when \$OUT
                     is set, else /tmp/tb5-validation-<time>)
  --min SIZE --max SIZE --factor N   sizes (default 1K, 1G, 2)
  --colls LIST       collectives (default: all six)
  --modes LIST       mp,sp (default: both)
  --nranks N         processes in mp mode, one GPU each (2..16, default 2):
                     a fabric of N simulated hosts, every pair cabled
  --timeout S        nccl_check: no progress for S seconds is a hang (default 120)
  --proc-timeout S   limit for each run as a whole (default 240)
  --sim-keys KEYS    more TB5_SIM keys for both modes, e.g. ring=4096
  --env VAR=VALUE    more environment for every run (repeatable)
  --gdr              GPUDirect over tb5: NCCL_NET_GDR_LEVEL=SYS (the simulated
                     links have no PCI path: docs/plugin.md), and every
                     channel line must say GDRDMA
  --dry-run          print (and record in commands.txt) the commands, run none
EOF
}

build=build-gpu plugin='' libdirs='' bin='' out=''
min=1K max=1G factor=2 colls=all_reduce,all_gather,reduce_scatter,broadcast,alltoall,sendrecv
modes=mp,sp nranks=2 hang_timeout=120 proc_timeout=240 sim_keys='' gdr=0
extra_env=()
while (($#)); do
  case $1 in --dry-run|--gdr|-h|--help) ;; --*) (($# >= 2)) || die "$1 needs a value" ;; esac
  case $1 in
    --build) build=$2; shift ;;
    --plugin) plugin=$2; shift ;;
    --lib-dir) libdirs=$2; shift ;;
    --bin) bin=$2; shift ;;
    --out) out=$2; shift ;;
    --min) min=$2; shift ;;
    --max) max=$2; shift ;;
    --factor) factor=$2; shift ;;
    --colls) colls=$2; shift ;;
    --modes) modes=$2; shift ;;
    --nranks) nranks=$2; shift ;;
    --timeout) hang_timeout=$2; shift ;;
    --proc-timeout) proc_timeout=$2; shift ;;
    --sim-keys) sim_keys=$2; shift ;;
    --env) [[ $2 == *=* ]] || die "--env needs VAR=VALUE"; extra_env+=("$2"); shift ;;
    --gdr) gdr=1 ;;
    --dry-run) DRY_RUN=1 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option: $1" ;;
  esac
  shift
done
check_nranks "$nranks"
((gdr)) && extra_env+=(NCCL_NET_GDR_LEVEL=SYS)

if [[ -z $out ]]; then
  if [[ -n ${OUT:-} ]]; then out=$OUT/tb5-validation; else out=/tmp/tb5-validation-$(date +%Y%m%d-%H%M%S); fi
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
: >"$out/commands.txt"

resolve_paths "$build" "$plugin" "$bin" "$libdirs"
check_plugin_loads
make_unset_args
machine_info | tee "$out/machine.txt"

IFS=, read -r -a coll_list <<<"$colls"
n_colls=${#coll_list[@]}

# Environment of every run: NCCL on the plugin only, nothing else between the
# GPUs, a log per rank.
# shellcheck disable=SC2054  # the commas are inside values
base_env=(
  NCCL_NET_PLUGIN="$PLUGIN" NCCL_NET=TB5 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,NET NCCL_SOCKET_IFNAME=lo
  LD_LIBRARY_PATH="$TB5_LDPATH"
)
check_args=(--colls "$colls" --min "$min" --max "$max" --factor "$factor" --timeout "$hang_timeout"
  --label tb5)


# check_run NAME N_RANKS_IN_RUN RC LOG...
check_run() {
  local name=$1 n=$2 rc=$3
  shift 3
  local logs=("$@") stdout=$out/$name.rank0.out
  [[ -f $stdout ]] || stdout=$out/$name.out
  local sizes n_sizes want got
  sizes=$(size_list "$min" "$max" "$factor" "$n")
  n_sizes=$(echo "$sizes" | wc -l)
  want=$((n_colls * n_sizes))

  grep '^{' "$stdout" >"$out/$name.jsonl" || true
  if ((rc == 0)); then record PASS "$name: exit status 0"
  else record FAIL "$name: exit status $rc (2 verification, 3 NCCL/CUDA error, 4 hang, 124/137 time limit)"; fi
  got=$(grep '"verified":true' "$out/$name.jsonl" | grep -o '"coll":"[a-z_]*","bytes":[0-9]*' | sort -u | wc -l || true)
  local st=1
  ((got == want)) && grep -q '^# nccl_check: PASS' "$stdout" && st=0
  verdict "$st" "$name: $got of $want (collective, size) checks verified on all $n ranks"
  # (sed reads to the end: under pipefail a head that exits early would
  # kill grep with SIGPIPE)
  grep -h 'MISMATCH\|HANG\|error' "$out/$name"*.out 2>/dev/null | sed -n '1,5s/^/      /p' || true

  local bad_n
  bad_n=$(grep -vc "\"nranks\":$n," "$out/$name.jsonl" || true)
  verdict $((bad_n == 0 ? 0 : 1)) "$name: every JSON line records nranks $n ($bad_n do not)"

  local log ok_via=0 ok_load=0 ok_plugin=0 bad=0 warns=0 nlogs=${#logs[@]}
  local ch_all=0 ch_tb5=0 a t routes nroutes=0
  : >"$out/$name.routes.txt"
  for log in "${logs[@]}"; do
    if [[ ! -s $log ]]; then
      continue
    fi
    log_has "$log" 'via NET/TB5' && ok_via=$((ok_via + 1))
    read -r a t <<<"$(channel_counts "$log")"
    ch_all=$((ch_all + a)) ch_tb5=$((ch_tb5 + t))
    # The link each of the plugin's connections took, as it logged it.
    routes=$(routes_of "$log")
    if [[ -n $routes ]]; then
      nroutes=$((nroutes + $(wc -l <<<"$routes")))
      while read -r a; do echo "${log##*/}: $a"; done <<<"$routes" >>"$out/$name.routes.txt"
    fi
    log_has "$log" 'Loaded net plugin TB5|Using network TB5' && ok_load=$((ok_load + 1))
    # Counted, not grep -q: under pipefail a grep -q that stops at the
    # first match kills the first grep with SIGPIPE on a large log, and
    # the pipeline reads as "no such line".
    a=$(grep -E 'NET/TB5' "$log" | grep -vc 'via NET/TB5' || true)
    ((${a:-0} > 0)) && ok_plugin=$((ok_plugin + 1))
    if log_has "$log" 'via NET/Socket|Using network Socket|via SHM|via P2P'; then
      bad=$((bad + 1))
      grep -Em3 'via NET/Socket|Using network Socket|via SHM|via P2P' "$log" | sed 's/^/      /'
    fi
    warns=$((warns + $(grep -c 'NCCL WARN' "$log" || true)))
  done
  verdict $((ok_load == nlogs ? 0 : 1)) "$name: 'Loaded net plugin TB5' in $ok_load of $nlogs NCCL logs"
  verdict $((ok_plugin == nlogs ? 0 : 1)) "$name: the plugin's own NET/TB5 lines in $ok_plugin of $nlogs NCCL logs"
  verdict $((ok_via == nlogs ? 0 : 1)) "$name: channels 'via NET/TB5' in $ok_via of $nlogs NCCL logs"
  verdict $((ch_all > 0 && ch_all == ch_tb5 ? 0 : 1)) "$name: $ch_tb5 of $ch_all channel lines 'via NET/TB5'"
  if ((gdr)); then
    local ch_gdr=0
    for log in "${logs[@]}"; do
      a=$(grep -Ec 'Channel [0-9]+/[0-9]+ .* via NET/TB5/[0-9]+(\([0-9]+\))?/GDRDMA' "$log" 2>/dev/null || true)
      ch_gdr=$((ch_gdr + ${a:-0}))
    done
    verdict $((ch_all > 0 && ch_gdr == ch_all ? 0 : 1)) "$name: $ch_gdr of $ch_all channel lines 'via NET/TB5/.../GDRDMA'"
  fi
  verdict $((nroutes > 0 ? 0 : 1)) "$name: the plugin logged the link of $nroutes connections ($name.routes.txt)"
  if [[ $name == mp ]]; then
    # Every connection on a cable that reaches its peer. Each rank's
    # slot in the fabric is the one its device list lacks ("NET/TB5 : 3
    # devices: sim_h0 sim_h1 sim_h3" is slot 2), its host id the one its
    # listeners name ("listening on ..., host <id>"); a connection to
    # that host id must go over sim_h<slot> or a parallel cable
    # sim_h<slot>c<k>.
    local hostmap=$out/$name.hosts.txt wrong=0 checked=0 devs slot hid
    : >"$hostmap"
    for log in "${logs[@]}"; do
      devs=$(sed -nE 's/.*NET\/TB5 : [0-9]+ devices?: (.*) \(libtb5.*/\1/p' "$log" 2>/dev/null | sed -n '1p')
      for ((slot = 0; slot < n; slot++)); do
        [[ " $devs " == *" sim_h$slot "* ]] || break
      done
      while read -r hid; do
        [[ -n $hid ]] && echo "$hid $slot" >>"$hostmap"
      done < <(sed -nE 's/.*NET\/TB5.*listening on .*host (0x[0-9a-f]+) service.*/\1/p' "$log" 2>/dev/null | sort -u)
    done
    read -r checked wrong < <(awk -v map="$hostmap" '
      BEGIN { while ((getline l < map) > 0) { split(l, f, " "); slot[f[1]] = f[2] } }
      /connect host/ { h = $4; link = $NF; n++
        if (!(h in slot) || (link != "sim_h" slot[h] && link !~ ("^sim_h" slot[h] "c[0-9]+$"))) {
          bad++; print "      wrong cable: " $0 > "/dev/stderr" } }
      END { print n + 0, bad + 0 }' "$out/$name.routes.txt")
    verdict $((checked > 0 && wrong == 0 ? 0 : 1)) \
      "$name: $((checked - wrong)) of $checked connections on the cable that reaches their peer"
  fi
  if [[ -s $out/$name.routes.txt ]]; then
    # How many connections each link carried, every rank together.
    awk '{ print $NF }' "$out/$name.routes.txt" | sort | uniq -c | sed 's/^ */      /'
  fi
  verdict $((bad == 0 ? 0 : 1)) "$name: no channel via NET/Socket, SHM or P2P ($bad logs with one)"
  ((warns == 0)) || record WARN "$name: $warns 'NCCL WARN' lines in the NCCL logs"
}

IFS=, read -r -a mode_list <<<"$modes"
for mode in "${mode_list[@]}"; do
  case $mode in
    mp)
      fresh_fabric mp
      sim="$FABRIC:$(sim_hosts "$nranks" "$sim_keys")"
      note "mp: $nranks processes, one GPU each, TB5_SIM=$sim"
      rc=0
      SECONDS_START=$SECONDS
      launch_ranks mp "$nranks" "$proc_timeout" "$out" "${base_env[@]}" \
        TB5_SIM="$sim" "${extra_env[@]}" -- "${check_args[@]}" || rc=$?
      [[ $DRY_RUN == 1 ]] && continue
      note "mp: took $((SECONDS - SECONDS_START)) s"
      grep -v '^{' "$out/mp.rank0.out" || true
      logs=()
      for ((r = 0; r < nranks; r++)); do logs+=("$out/mp.rank$r.nccl.log"); done
      check_run mp "$nranks" "$rc" "${logs[@]}"
      if cleanup_fabric "$FABRIC"; then record PASS "mp: the simulator's files are gone from /dev/shm"
      else record WARN "mp: the simulator left files in /dev/shm"; fi
      ;;
    sp)
      fresh_fabric sp
      ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
      [[ -n ${CUDA_VISIBLE_DEVICES:-} ]] && ngpus=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .)
      ((ngpus >= 1)) || ngpus=2
      note "sp: one process, $ngpus GPUs, TB5_SIM=$FABRIC:hosts=1,loop=1${sim_keys:+,$sim_keys}"
      rc=0
      SECONDS_START=$SECONDS
      launch_single sp "$proc_timeout" "$out" "${base_env[@]}" \
        TB5_SIM="$FABRIC:hosts=1,loop=1${sim_keys:+,$sim_keys}" "${extra_env[@]}" -- "${check_args[@]}" || rc=$?
      [[ $DRY_RUN == 1 ]] && continue
      note "sp: took $((SECONDS - SECONDS_START)) s"
      grep -v '^{' "$out/sp.out" || true
      check_run sp "$ngpus" "$rc" "$out/sp.nccl.log"
      if cleanup_fabric "$FABRIC"; then record PASS "sp: the simulator's files are gone from /dev/shm"
      else record WARN "sp: the simulator left files in /dev/shm"; fi
      ;;
    *) die "unknown mode: $mode" ;;
  esac
done

if [[ $DRY_RUN == 1 ]]; then
  note "dry run: nothing was run; the commands are in $out/commands.txt"
  exit 0
fi
{
  echo
  echo "== tb5 GPU validation summary ($out) =="
  printf '%s\n' "${results[@]}"
  if ((overall == 0)); then echo "RESULT: PASS"; else echo "RESULT: FAIL"; fi
} | tee "$out/summary.txt"
exit "$overall"
