#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ci/vm/run-pair.sh KERNEL TB5_KO TBEMU_KO TEST_DIR [LOG_DIR] - two hosts
# cabled together on the emulated USB4 fabric: boots two VMs of KERNEL at
# once (ci/vm/run.sh each), joined by TB5_FABRIC_CABLES cables (default 1);
# with TB5_FABRIC_HOSTS=3, three VMs cabled in a triangle (logs
# <kver>-triangle-{a,b,c}.log).
# A cable is a QEMU ivshmem-plain device in both VMs backed by one file in
# /dev/shm; in the guests tbemu.ko (tests/tbemu/) binds to it and stands in
# for thunderbolt.ko, so the tb5.ko that DKMS built runs its tb backend over
# it unchanged.
#
# Beside the cables, every two hosts share a serial line (a second UART in
# each VM, ttyS1, ttyS2, joined by a UNIX socket on this host): the network
# a cluster bootstraps NCCL over, which the guests have not otherwise. A
# guest finds its lines in TB5K_OOB ("b:/dev/ttyS1 c:/dev/ttyS2": which
# host each reaches).
#
# Each VM runs TEST_DIR/vm-tests-fabric.sh (or TB5_VM_SCRIPT) with
# TB5K_ROLE=a or b and TB5K_CABLES; tbemu.ko is copied beside it. Logs:
# LOG_DIR/<kver>-fabric-a.log and -b.log. Passes when both VMs pass
# (run.sh's verdict: end marker, rc 0, no kernel warning in either log).
#
# Knobs: TB5_FABRIC_CABLES, TB5_FABRIC_HOSTS, TB5_VM_APPEND (e.g. swiotlb=force) and the other
# knobs of ci/vm/run.sh; TB5_VM_SMP defaults to 1 here (two guests share
# the host's cores).
set -euo pipefail
# shellcheck source=ci/kernel-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../kernel-lib.sh"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
(($# >= 4 && $# <= 5)) || tb5_die "usage: ${0##*/} KERNEL TB5_KO TBEMU_KO TEST_DIR [LOG_DIR]"
KERNEL=$1
KO=$(realpath "$2")
EMU=$(realpath "$3")
TESTS=$(realpath "$4")
LOGDIR=$(realpath -m "${5:-$TB5_ROOT/build-kernel/vm-logs}")
CABLES=${TB5_FABRIC_CABLES:-1}
HOSTS=${TB5_FABRIC_HOSTS:-2}
SCRIPT=${TB5_VM_SCRIPT:-$TESTS/vm-tests-fabric.sh}
[[ -f $KO && -f $EMU && -f $SCRIPT ]] || tb5_die "missing $KO, $EMU or $SCRIPT"
[[ $CABLES =~ ^[1-4]$ ]] || tb5_die "TB5_FABRIC_CABLES=$CABLES: 1..4"
[[ $HOSTS == 2 || $HOSTS == 3 ]] || tb5_die "TB5_FABRIC_HOSTS=$HOSTS: 2 or 3"
((HOSTS == 2)) || CABLES=2	# each host of the triangle has two
mkdir -p "$LOGDIR"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tb5-pair.XXXXXX")
SHM=$(mktemp -d /dev/shm/tb5-fabric.XXXXXX)
trap 'rm -rf "$WORK" "$SHM"' EXIT
mkdir -p "$WORK/tests"
cp -a "$TESTS/." "$WORK/tests/"
cp "$EMU" "$WORK/tests/tbemu.ko"

# The cables: one zeroed file each, shared by the two VMs at its ends (the
# first tbemu.ko to bind lays it out); ivshmem wants a power of two. Two
# hosts: CABLES cables between a and b. Three: a triangle, one cable per
# pair of hosts.
ROLES=(a b)
((HOSTS == 3)) && ROLES=(a b c)
declare -A qemu_args=()
cable() {
	local name=$1 end
	shift
	truncate -s 4M "$SHM/$name"
	for end in "$@"; do
		qemu_args[$end]+=" -object memory-backend-file,id=$name,share=on,mem-path=$SHM/$name,size=4M"
		qemu_args[$end]+=" -device ivshmem-plain,memdev=$name"
	done
}
# The serial lines: the console stays the first UART (named explicitly,
# since any -serial replaces QEMU's default one); each line is the next
# UART of both its hosts, the first host serving the socket and the second
# connecting to it (again every second until it is there: the VMs start at
# once, and a retried boot restarts its QEMU).
declare -A oob=() uarts=()
line() {
	local a=$1 b=$2 sock=$WORK/oob-$1$2.sock
	for end in "$a" "$b"; do
		[[ -n ${uarts[$end]:-} ]] ||
			{ uarts[$end]=0; qemu_args[$end]+=" -serial mon:stdio"; }
		uarts[$end]=$((uarts[$end] + 1))
	done
	qemu_args[$a]+=" -chardev socket,id=oob$a$b,path=$sock,server=on,wait=off -serial chardev:oob$a$b"
	qemu_args[$b]+=" -chardev socket,id=oob$a$b,path=$sock,reconnect=1 -serial chardev:oob$a$b"
	oob[$a]+=" $b:/dev/ttyS${uarts[$a]}"
	oob[$b]+=" $a:/dev/ttyS${uarts[$b]}"
}
if ((HOSTS == 2)); then
	for ((i = 0; i < CABLES; i++)); do
		cable "cable$i" a b
	done
	line a b
else
	cable ab a b
	cable bc b c
	cable ca c a
	line a b
	line b c
	line a c
fi

kver() {
	# The release run.sh names its log after.
	if [[ -f $TB5_KCACHE/kernels/$KERNEL.env ]]; then
		tb5_kernel_env "$KERNEL"
		echo "$TB5_K_VER"
	else
		echo "$KERNEL"
	fi
}
KVER=$(kver)

start=$SECONDS
pids=()
tag=fabric
((HOSTS == 2)) || tag=triangle
for role in "${ROLES[@]}"; do
	TB5_VM_QEMU_ARGS="${qemu_args[$role]}" TB5_VM_LOG_NAME="$KVER-$tag-$role" \
		TB5_VM_SCRIPT="$SCRIPT" TB5_VM_SMP="${TB5_VM_SMP:-1}" \
		TB5K_ROLE=$role TB5K_CABLES=$CABLES TB5K_HOSTS=$HOSTS TB5K_OOB="${oob[$role]# }" \
		"$HERE/run.sh" "$KERNEL" "$KO" "$WORK/tests" "$LOGDIR" \
		>"$WORK/$role.out" 2>&1 &
	pids+=($!)
done
# A host that failed leaves the other waiting at a barrier: it gets 60 s
# to finish, then its VM is stopped (run.sh judges it as timed out).
rc=0
failed_at=
while :; do
	running=0
	for i in "${!pids[@]}"; do
		[[ -n ${pids[$i]} ]] || continue
		if kill -0 "${pids[$i]}" 2>/dev/null; then
			running=$((running + 1))
			continue
		fi
		wait "${pids[$i]}" || { rc=1; failed_at=${failed_at:-$SECONDS}; }
		pids[i]=
	done
	((running > 0)) || break
	if [[ -n $failed_at ]] && ((SECONDS - failed_at > 60)); then
		for i in "${!pids[@]}"; do
			[[ -n ${pids[$i]} ]] && pkill -TERM -P "${pids[$i]}" 2>/dev/null
		done
	fi
	sleep 2
done
for role in "${ROLES[@]}"; do
	sed "s/^/[$role] /" "$WORK/$role.out"
done
verdict=PASS
((rc == 0)) || verdict=FAIL
what="$CABLES cable(s)"
((HOSTS == 2)) || what="three hosts in a triangle"
echo "vm-pair: $KVER, $what${TB5_VM_APPEND:+, $TB5_VM_APPEND}: $verdict ($(tb5_fmt_secs $((SECONDS - start))))"
exit "$rc"
