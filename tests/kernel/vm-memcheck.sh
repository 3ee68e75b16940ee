#!/bin/sh
# SPDX-License-Identifier: MIT
#
# vm-memcheck.sh - the kernel memory checking of the test VMs catches a
# planted out-of-bounds write (run in a VM of its own by ci/kernel-tests.sh,
# part "memcheck", through ci/vm/run.sh with TB5_VM_EXPECT_REPORTS=1, which
# fails the run unless the console log has the reports the plants cause).
#
# Checks that the checkers are on (slub_debug's red zones, poisoning,
# sanity checks and owner tracking on the kmalloc caches; init_on_free;
# KFENCE sampling where the kernel line has it), then loads
# tb5k_memcheck.ko (tests/kernel/memcheck/, beside this script) to write 8
# bytes past a 64-byte kmalloc() buffer and free it: once in a slab buffer,
# which SLUB must report ("Right Redzone overwritten"), and, with KFENCE,
# once in a KFENCE buffer, which KFENCE must report. Not tb5.ko: the module
# is test code that breaks the rules on purpose.
#
# Prints PASS/FAIL lines as vm-tests.sh does; exits 0 when all passed.

here=$(cd "$(dirname "$0")" && pwd)
MOD=$here/tb5k_memcheck.ko
npass=0

note() { echo "# $*"; }
pass() { echo "PASS $1"; npass=$((npass + 1)); }
fail() { echo "FAIL $1: $2"; exit 1; }

# The kernel log lines after mark $1, without timestamps.
dmesg_since() {
	dmesg | tail -n +$(($1 + 1)) | sed 's/^\[[^]]*\] *//'
}

cmdline=$(cat /proc/cmdline)
note "kernel command line: $cmdline"
[ -f "$MOD" ] || fail setup "$MOD missing"

# slub_debug=FZPU: every flag on the cache the plant's buffer comes from.
slab=/sys/kernel/slab/kmalloc-64
for flag in sanity_checks red_zone poison store_user; do
	[ "$(cat "$slab/$flag" 2>/dev/null)" = 1 ] ||
		fail slub-debug "$slab/$flag is '$(cat "$slab/$flag" 2>/dev/null)', not 1"
done
pass "slub-debug (kmalloc-64: sanity checks, red zone, poison, owner tracking)"

# init_on_free=1: the kernel says so as it starts (freed pages zeroed; the
# slab caches' objects are poisoned instead, slub_debug's P taking
# precedence, which it says too).
line=$(dmesg | grep -m1 'mem auto-init: stack:')
case $line in
*"heap free:on"*) pass "init-on-free ($(echo "$line" | sed 's/^\[[^]]*\] *//'))" ;;
*) fail init-on-free "no 'heap free:on' in the kernel's mem auto-init line: '$line'" ;;
esac
case $(dmesg) in
*"SLAB_POISON will take precedence"*) note "slab objects are poisoned on free, not zeroed (slub_debug's P over init_on_free)" ;;
esac

kfence=0
case " $cmdline " in
*" kfence.sample_interval="*)
	kfence=1
	ms=$(cat /sys/module/kfence/parameters/sample_interval 2>/dev/null)
	if [ -z "$ms" ] || [ "$ms" -le 0 ]; then
		fail kfence "sample_interval is '$ms' with kfence.sample_interval on the command line"
	fi
	pass "kfence (sampling every $ms ms)"
	;;
*)
	note "no KFENCE on this kernel: its plant is skipped (ci/vm/run.sh enables KFENCE wherever the kernel's config has it)"
	;;
esac

# plant WHO PATTERN: write past a buffer of WHO's, expect PATTERN in the log.
plant() {
	mark=$(dmesg | wc -l)
	insmod "$MOD" plant="$1" oob=8 ||
		fail "plant-$1" "insmod $MOD plant=$1 failed: $(dmesg_since "$mark" | tail -n 3)"
	rmmod tb5k_memcheck || fail "plant-$1" "rmmod tb5k_memcheck failed"
	report=$(dmesg_since "$mark" | grep -m1 -F "$2")
	[ -n "$report" ] ||
		fail "plant-$1" "8 bytes written past a $1 buffer and no '$2' report: $(dmesg_since "$mark" | tail -n 5)"
	pass "plant-$1 (reported: $report)"
}

plant slub 'Redzone overwritten'
[ "$kfence" = 0 ] || plant kfence 'KFENCE:'
note "$npass checks passed"
