# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Helpers shared by run-validation.sh and run-benchmark.sh: paths, sizes,
# environments, launching ranks, reading NCCL logs. Sourced, never run.

# Every environment started on the GPU machine keeps NVLink multicast off.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ALWAYS_ENV=(NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1)

GPU_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$GPU_DIR/../.." && pwd)

die() { echo "${0##*/}: $*" >&2; exit 2; }
note() { echo "${0##*/}: $*"; }

# DRY_RUN=1 (--dry-run): every command is printed and recorded in
# commands.txt, none is run, and nccl_check is neither built nor needed.
DRY_RUN=${DRY_RUN:-0}

# check_nranks N: a number of ranks the simulator's fabric can hold (one
# process per GPU, one simulated host per process: 2..16).
check_nranks() {
  if ! [[ $1 =~ ^[0-9]+$ ]] || (($1 < 2 || $1 > 16)); then
    die "--nranks $1: a number of processes (one GPU each) from 2 to 16"
  fi
}

# sim_hosts N KEYS: the TB5_SIM keys of a run of N processes, one host of
# the fabric each, every pair cabled, no loop pairs; KEYS (may be empty)
# come after and may add more (uncabled=i-j, ring=, copy=, ...).
sim_hosts() {
  echo "hosts=$1,loop=0${2:+,$2}"
}

# A script's verdicts: record PASS|FAIL|WARN TEXT prints the line and
# keeps it in `results` ("PASS|FAIL  what", for the summary); anything but
# PASS or WARN sets `overall` to 1 (the exit status).
# shellcheck disable=SC2034  # read by the scripts that source this file
results=()
# shellcheck disable=SC2034
overall=0
record() {
  results+=("$1  $2")
  # shellcheck disable=SC2034
  [[ $1 == PASS || $1 == WARN ]] || overall=1
  echo "$1  $2"
}

# verdict STATUS TEXT: PASS when STATUS is 0, else FAIL.
verdict() {
  if [[ $1 == 0 ]]; then record PASS "$2"; else record FAIL "$2"; fi
}

# parse_bytes 1K|4M|1G|1024 -> bytes (K, M, G are powers of 1024; KiB etc. too)
parse_bytes() {
  local s=$1 num unit
  [[ $s =~ ^([0-9]+)([kKmMgG]?)(i?[bB]?)$ ]] || die "not a size: $s"
  num=${BASH_REMATCH[1]} unit=${BASH_REMATCH[2]}
  case $unit in
    k|K) echo $((num << 10)) ;;
    m|M) echo $((num << 20)) ;;
    g|G) echo $((num << 30)) ;;
    *) echo "$num" ;;
  esac
}

# size_list MIN MAX FACTOR NRANKS [EXTRA...] -> the sizes nccl_check runs, one
# per line: the geometric series plus the extras, rounded down to a multiple
# of 4 * NRANKS bytes, sorted, without duplicates (as nccl_check makes them).
size_list() {
  local min max factor n unit s
  min=$(parse_bytes "$1") max=$(parse_bytes "$2") factor=$3 n=$4
  shift 4
  [[ $factor =~ ^[0-9]+$ && $factor -ge 2 ]] || die "--factor must be an integer >= 2 here"
  unit=$((4 * n))
  {
    for ((s = min; s <= max; s *= factor)); do
      echo $(((s / unit > 0 ? s / unit : 1) * unit))
    done
    for s in "$@"; do
      s=$(parse_bytes "$s")
      echo $(((s / unit > 0 ? s / unit : 1) * unit))
    done
  } | sort -n -u
}

# The plugin, its libraries and nccl_check. Sets PLUGIN (the NCCL_NET_PLUGIN
# value), LIBPATH (the plugin's library directories), TB5_LDPATH (the
# LD_LIBRARY_PATH of the tb5 runs) and BIN.
resolve_paths() {
  local build=$1 plugin=$2 bin=$3 libdirs=$4 d
  [[ $build = /* ]] || build=$REPO/$build
  if [[ -z $plugin ]]; then
    plugin=$build/plugin/libnccl-net-tb5.so
  fi
  if [[ $plugin = */* ]]; then
    [[ -f $plugin ]] || die "plugin not found: $plugin (build the plugin, or pass --build/--plugin)"
    plugin=$(cd "$(dirname "$plugin")" && pwd)/$(basename "$plugin")
  fi
  PLUGIN=$plugin
  LIBPATH=
  if [[ -z $libdirs ]]; then
    libdirs=$build/src/lib
    [[ $PLUGIN = */* ]] && libdirs+=":$(dirname "$PLUGIN")"
  fi
  local IFS=:
  for d in $libdirs; do
    [[ -d $d ]] || { note "warning: library directory $d does not exist"; continue; }
    LIBPATH+=${LIBPATH:+:}$(cd "$d" && pwd)
  done
  unset IFS
  # LD_LIBRARY_PATH of the tb5 runs: LIBPATH, then the caller's.
  TB5_LDPATH=$LIBPATH${LD_LIBRARY_PATH:+${LIBPATH:+:}$LD_LIBRARY_PATH}
  BIN=${bin:-$REPO/build-nccl-check/nccl_check}
  # "none": a script that runs no nccl_check (run-ddp.sh).
  [[ $BIN != none ]] || return 0
  if [[ ! -x $BIN && $DRY_RUN != 1 ]]; then
    note "building $BIN"
    "$GPU_DIR/build.sh" "$(dirname "$BIN")" || die "cannot build nccl_check"
  fi
}

# Checks that the plugin's libraries resolve, as NCCL will dlopen it.
check_plugin_loads() {
  [[ $PLUGIN = */* ]] || return 0
  local missing
  missing=$(LD_LIBRARY_PATH=$TB5_LDPATH ldd "$PLUGIN" 2>&1 | grep 'not found' || true)
  [[ -z $missing ]] || die "the plugin's libraries do not resolve (LD_LIBRARY_PATH=$LIBPATH): $missing"
}

# `env -u` for every NCCL_*/TB5_* variable of the caller's environment, so
# that each run gets exactly the settings it names and nothing inherited.
UNSET_ARGS=()
make_unset_args() {
  local v
  UNSET_ARGS=()
  while read -r v; do
    case $v in
      NCCL_NVLS_ENABLE) ;;
      NCCL_*|TB5_*) UNSET_ARGS+=(-u "$v") ;;
    esac
  done < <(compgen -e)
}

# fresh_fabric TAG: sets FABRIC to a simulator fabric name that no earlier run
# used (1..64 of [A-Za-z0-9_.-]).
FABRIC_SEQ=0
FABRIC=''
fresh_fabric() {
  FABRIC_SEQ=$((FABRIC_SEQ + 1))
  local name
  name="tb5gpu-$$-$(date +%s)-$FABRIC_SEQ-$1"
  name=${name//[^A-Za-z0-9_.-]/_}
  # shellcheck disable=SC2034  # read by the scripts that source this file
  FABRIC=${name:0:64}
}

# Removes what a fabric left in /dev/shm; says so when something was left.
cleanup_fabric() {
  local fabric=$1 left
  left=$(compgen -G "/dev/shm/tb5sim.$fabric*" || true)
  if [[ -n $left ]]; then
    note "warning: the simulator left $(echo "$left" | wc -l) file(s) of fabric $fabric in /dev/shm; removing"
    rm -f -- "/dev/shm/tb5sim.$fabric"*
    return 1
  fi
  return 0
}

# Records and prints one command exactly as it runs.
show_cmd() {
  local file=$1
  shift
  local line
  line=$(printf '%q ' "$@")
  echo "+ $line" | tee -a "$file"
}

# launch_ranks NAME NRANKS PROC_TIMEOUT OUTDIR ENV... -- ARGS...
# Starts NRANKS processes of $BIN (rank r on GPU r), each with the given
# environment, its own NCCL log (OUTDIR/NAME.rank<r>.nccl.log) and output
# (OUTDIR/NAME.rank<r>.out). When one rank fails, the others get 10 s to
# notice and are then stopped. Returns the first non-zero exit status.
launch_ranks() {
  local name=$1 n=$2 ptimeout=$3 out=$4
  shift 4
  local envs=() args=() r
  while (($#)); do
    if [[ $1 == -- ]]; then shift; args=("$@"); break; fi
    envs+=("$1")
    shift
  done
  local idfile=$out/$name.ncclid
  rm -f -- "$idfile"
  local pids=() rcs=()
  for ((r = 0; r < n; r++)); do
    local cmd=(env "${UNSET_ARGS[@]}" "${ALWAYS_ENV[@]}" "${envs[@]}"
      NCCL_DEBUG_FILE="$out/$name.rank$r.nccl.log"
      timeout -k 10 "$ptimeout" "$BIN" --mode mp --rank "$r" --nranks "$n" --device "$r"
      --id-file "$idfile" "${args[@]}")
    rm -f -- "$out/$name.rank$r.nccl.log"
    show_cmd "$out/commands.txt" "${cmd[@]}"
    [[ $DRY_RUN == 1 ]] && continue
    "${cmd[@]}" >"$out/$name.rank$r.out" 2>&1 &
    pids+=($!)
    rcs+=("")
  done
  [[ $DRY_RUN == 1 ]] && return 0
  local running=$n failed_at=-1 stopped=0 first_rc=0 rc
  while ((running > 0)); do
    sleep 0.5
    running=0
    for ((r = 0; r < n; r++)); do
      [[ -n ${rcs[r]} ]] && continue
      if kill -0 "${pids[r]}" 2>/dev/null; then
        running=$((running + 1))
        continue
      fi
      rc=0
      wait "${pids[r]}" || rc=$?
      rcs[r]=$rc
      if ((rc != 0)); then
        note "$name: rank $r exited with status $rc"
        ((first_rc == 0)) && first_rc=$rc
        ((failed_at < 0)) && failed_at=$SECONDS
      fi
    done
    if ((running > 0 && failed_at >= 0 && !stopped && SECONDS - failed_at > 10)); then
      for ((r = 0; r < n; r++)); do
        if [[ -z ${rcs[r]} ]]; then
          note "$name: stopping rank $r (pid ${pids[r]}): another rank failed"
          kill -TERM "${pids[r]}" 2>/dev/null || true
        fi
      done
      stopped=1
    fi
  done
  return "$first_rc"
}

# launch_single NAME PROC_TIMEOUT OUTDIR ENV... -- ARGS...: one process, all GPUs.
launch_single() {
  local name=$1 ptimeout=$2 out=$3
  shift 3
  local envs=() args=()
  while (($#)); do
    if [[ $1 == -- ]]; then shift; args=("$@"); break; fi
    envs+=("$1")
    shift
  done
  local cmd=(env "${UNSET_ARGS[@]}" "${ALWAYS_ENV[@]}" "${envs[@]}"
    NCCL_DEBUG_FILE="$out/$name.nccl.log"
    timeout -k 10 "$ptimeout" "$BIN" --mode sp "${args[@]}")
  rm -f -- "$out/$name.nccl.log"
  show_cmd "$out/commands.txt" "${cmd[@]}"
  [[ $DRY_RUN == 1 ]] && return 0
  local rc=0
  "${cmd[@]}" >"$out/$name.out" 2>&1 || rc=$?
  ((rc == 0)) || note "$name: exited with status $rc"
  return "$rc"
}

# routes_of LOG: the plugin's lines saying which link each connection took,
# one per connection: "connect host <id> service <id> over <link>" (from
# its "connecting to host ... over <link>") and "accept on <link>".
routes_of() {
  sed -nE -e 's/.*NET\/TB5.*connecting to host (0x[0-9a-f]+) service (0x[0-9a-f]+) over ([^ ]+).*/connect host \1 service \2 over \3/p' \
    -e 's/.*NET\/TB5.*accepted a connection on ([^ ]+).*/accept on \1/p' "$1" 2>/dev/null || true
}

# cable_totals LOG: "<link> <bytes sent> <bytes received>" for each link
# the plugin closed (its "link <name> closed: <n> B sent ..., <n> B
# received" lines: the live counters at the end of the job).
cable_totals() {
  sed -nE 's/.*NET\/TB5.*link ([^ ]+) closed: ([0-9]+) B sent in [0-9]+ ops, ([0-9]+) B received.*/\1 \2 \3/p' "$1" 2>/dev/null || true
}

# channel_counts LOG: "<all> <tb5>": NCCL's channel lines ("Channel ... via
# X") in LOG, and how many of them are via NET/TB5.
channel_counts() {
  local all tb5
  all=$(grep -Ec 'Channel [0-9]+/[0-9]+ .* via ' "$1" 2>/dev/null || true)
  tb5=$(grep -Ec 'Channel [0-9]+/[0-9]+ .* via NET/TB5' "$1" 2>/dev/null || true)
  echo "${all:-0} ${tb5:-0}"
}

# log_has FILE PATTERN (extended regex): does the NCCL log hold such a line?
log_has() { grep -Eq -- "$2" "$1" 2>/dev/null; }

# The machine, for the record.
machine_info() {
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname) $(uname -r)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') x $(nproc)"
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  fi
  if command -v git >/dev/null 2>&1 && git -C "$REPO" rev-parse --short HEAD >/dev/null 2>&1; then
    echo "tb5: $(git -C "$REPO" rev-parse --short HEAD)$(git -C "$REPO" diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
  fi
  echo "nccl_check: $BIN"
  echo "plugin: $PLUGIN"
  echo "LD_LIBRARY_PATH for tb5: $LIBPATH"
}
