#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ci/vm/soak.sh N [LABEL...] - boot each kernel N times under QEMU with a
# trivial test (ci/vm/soak/vm-tests.sh, no tb5.ko) and count how each boot
# ended: pass, test-failed, boot-panic, boot-hang, qemu-error, boot-warning
# (ci/vm/run.sh's exit statuses; see ci/vm/boot-lib.sh). The kernels take
# turns, so a change of the machine's load falls on all of them alike.
#
# The initramfs carries TB5_SOAK_BALLAST_MIB (default 40) MiB of random
# bytes, as big as the real tests' (about 41 MiB): the kernel unpacks it on
# one CPU while the other runs the late initcalls, and that overlap is where
# the boot failures were (a tiny initramfs is unpacked before and hides
# them; see ci/README.md).
#
#   LABEL  kernels prepared by ci/kernels.sh (default: $TB5_KERNELS, or
#          6.1 6.12 sid)
#
# Boots are not retried here (TB5_VM_BOOT_RETRIES=0; TB5_SOAK_RETRIES sets
# it): the counts are the raw rates that ci/vm/run.sh's retries cover. Prints
# one line per boot and a table per kernel (the last column: the median
# and the longest time from QEMU's start to the guest's start marker, in
# seconds, what the boot watchdog must leave room for); exits 1 when any
# boot failed.
# The logs of the failed boots are kept in build-kernel/soak/<label>-<n>/
# (TB5_SOAK_DIR; TB5_SOAK_KEEP=1 keeps those of the boots that passed too).
# Other knobs of ci/vm/run.sh apply (TB5_VM_CPU, TB5_VM_SMP,
# TB5_VM_APPEND, TB5_VM_BOOT_TIMEOUT, ...; TB5_VM_TIMEOUT defaults to 300
# here: the test takes a second).
set -euo pipefail
# shellcheck source=ci/kernel-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../kernel-lib.sh"

KINDS=(pass test-failed boot-panic boot-hang qemu-error boot-warning harness-error)

# median_of "N N ...": the median of the numbers (? for none).
median_of() {
	[[ -n ${1// /} ]] || { echo '?'; return; }
	tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

main() {
	local n=${1:-} label i rc kind start secs dir failed=0 k line
	local -a labels
	local -A count=() total=() maxsecs=() reached=() maxreach=()
	local reach

	[[ $n =~ ^[1-9][0-9]*$ ]] || tb5_die "usage: ${0##*/} N [LABEL...] (N: boots per kernel)"
	shift
	if (($#)); then
		labels=("$@")
	else
		read -r -a labels <<<"${TB5_KERNELS:-${TB5_KLABELS[*]}}"
	fi
	for label in "${labels[@]}"; do
		[[ -f $TB5_KCACHE/kernels/$label.env ]] ||
			tb5_die "kernel '$label' is not prepared: run ci/kernels.sh $label"
	done
	local out=${TB5_SOAK_DIR:-$TB5_ROOT/build-kernel/soak} ballast=${TB5_SOAK_BALLAST_MIB:-40}
	[[ $ballast =~ ^[0-9]+$ ]] || tb5_die "TB5_SOAK_BALLAST_MIB must be a number of MiB"
	# Each boot's directory is made anew below; nothing else there is removed.
	mkdir -p "$out"
	# The test directory: the trivial test and the ballast.
	TESTS=$(mktemp -d "${TMPDIR:-/tmp}/tb5-soak.XXXXXX")
	trap 'rm -rf "$TESTS"' EXIT
	cp "$TB5_ROOT/ci/vm/soak/vm-tests.sh" "$TESTS/"
	((ballast == 0)) || head -c "${ballast}M" /dev/urandom >"$TESTS/ballast"
	export TB5_VM_BOOT_RETRIES=${TB5_SOAK_RETRIES:-0}
	export TB5_VM_TIMEOUT=${TB5_VM_TIMEOUT:-300}
	export TB5_VM_QUIET=1
	echo "soak: $n boots of each of ${labels[*]} (boot watchdog ${TB5_VM_BOOT_TIMEOUT:-120} s," \
		"-cpu ${TB5_VM_CPU:-max}, TCG threads ${TB5_VM_TCG_THREAD:-single}," \
		"clock parameters ${TB5_VM_CLOCK-tsc=reliable}," \
		"${TB5_VM_SMP:-2} CPUs, retries $TB5_VM_BOOT_RETRIES," \
		"extra kernel parameters: ${TB5_VM_APPEND:-none}, ballast $ballast MiB);" \
		"logs of failures in $out"
	for ((i = 1; i <= n; i++)); do
		for label in "${labels[@]}"; do
			dir=$out/$label-$i
			rm -rf "$dir"
			mkdir -p "$dir"
			start=$SECONDS
			rc=0
			"$TB5_ROOT/ci/vm/run.sh" "$label" none "$TESTS" "$dir" \
				>"$dir/run.out" 2>&1 || rc=$?
			secs=$((SECONDS - start))
			case $rc in
			0) kind=pass ;;
			1) kind=test-failed ;;
			3) kind=boot-panic ;;
			4) kind=boot-hang ;;
			5) kind=qemu-error ;;
			6) kind=boot-warning ;;
			*) kind=harness-error ;;
			esac
			count[$label/$kind]=$((${count[$label/$kind]:-0} + 1))
			total[$label]=$((${total[$label]:-0} + 1))
			((secs <= ${maxsecs[$label]:-0})) || maxsecs[$label]=$secs
			reach=$(sed -n 's/^start_secs=//p' "$dir"/*.status 2>/dev/null || true)
			if [[ -n $reach ]]; then
				reached[$label]+=" $reach"
				((reach <= ${maxreach[$label]:-0})) || maxreach[$label]=$reach
			fi
			if [[ $kind == pass ]]; then
				echo "soak: $label $i/$n: pass (${secs} s, the test reached after ${reach:-?} s)"
				[[ ${TB5_SOAK_KEEP:-0} == 1 ]] || rm -rf "$dir"
			else
				failed=$((failed + 1))
				line=$(grep -a '^vm: .*: FAIL' "$dir/run.out" | tail -n1 ||
					tail -n1 "$dir/run.out")
				echo "soak: $label $i/$n: $kind (${secs} s): ${line#vm: }"
			fi
		done
	done

	echo
	printf '%-6s %6s' kernel boots
	printf ' %13s' "${KINDS[@]}"
	printf ' %9s %9s\n' 'max secs' 'to test'
	for label in "${labels[@]}"; do
		printf '%-6s %6s' "$label" "${total[$label]}"
		for k in "${KINDS[@]}"; do
			printf ' %13s' "${count[$label/$k]:-0}"
		done
		printf ' %9s %9s\n' "${maxsecs[$label]}" "$(median_of "${reached[$label]:-}")/${maxreach[$label]:-?}"
	done
	echo "soak: $((n * ${#labels[@]})) boots, $failed failed"
	((failed == 0))
}

main "$@"
