#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ci/vm/run.sh KERNEL TB5_KO TEST_DIR [LOG_DIR] - boot a Debian kernel under
# QEMU (TCG) with an initramfs holding busybox, the kernel modules tb5 may
# need, tb5.ko and the test programs, run TEST_DIR/vm-tests.sh inside, and
# judge the console log.
#
#   KERNEL    a label prepared by ci/kernels.sh (6.1, 6.12, sid), a kernel
#             release cached there (e.g. 6.1.0-56-amd64), or a directory
#             holding an extracted image (boot/vmlinuz-* or
#             usr/lib/modules/<kver>/vmlinuz, and lib/modules/<kver> with a
#             modules.dep)
#   TB5_KO    the tb5.ko built for that kernel, or "none"
#   TEST_DIR  vm-tests.sh (run by /init in /tests, a copy of TEST_DIR) and the
#             statically linked test programs (executables, put in /usr/bin)
#   LOG_DIR   where the console log goes, as <kver>.log (<kver>-<name>.log
#             for a TB5_VM_SCRIPT other than vm-tests.sh; default:
#             build-kernel/vm-logs in the source tree)
#
# Inside the VM: `modprobe tb5 [params]` works (tb5.ko sits in
# /lib/modules/<kver>/updates/, depmod has run), as does modprobe of
# thunderbolt (and configfs, which sid's thunderbolt needs) and any module in
# $TB5_VM_MODULES. Modules are decompressed for busybox.
#
# /init prints "TB5-VM-START:" right before the test script and
# "TB5-VM-RESULT: rc=N" after it. A boot that never prints the start marker
# (a panic, a hang past the boot watchdog, a QEMU error), or prints a kernel
# complaint before it, is retried, at most
# TB5_VM_BOOT_RETRIES times; a test is never retried. The test FAILS when the
# end marker is missing (panic, oops, deadlock, timeout), when N != 0, or
# when any console line - kernel or test output - contains one of the
# patterns of TB5_VM_BAD_PATTERNS (ci/vm/boot-lib.sh).
#
# Exit status (the verdict line says the same in words):
#   0  PASS
#   1  the test failed (the guest reached it)
#   2  the harness could not run (usage, a missing kernel or file)
#   3  boot panic: every boot died before the test (panic, oops, reset)
#   4  boot hang: no boot reached the test within the boot watchdog
#   5  QEMU error: QEMU itself failed on every boot
#   6  boot warning: the kernel complained (BUG:, WARNING:, ...) before the
#      start marker on every boot, before anything of the test had run
# (3-5: the last boot's kind.) LOG_DIR/<log name>.status says the same for
# ci/kernel-tests.sh and ci/vm/soak.sh, with the boots made and the reason
# of every retried one.
#
# Kernel memory is checked on every boot (TB5_VM_MEMCHECK=0 turns it off):
# slub_debug=FZPU (sanity checks, red zones, poisoning, alloc/free owner
# tracking on every slab cache), init_on_free=1, and KFENCE sampling
# (kfence.sample_interval=TB5_VM_KFENCE_MS, default 10) where the kernel
# is built with KFENCE. A report of theirs (MEMCHECK_REPORT_PATTERNS) fails
# the run like any other kernel complaint, its log and line printed. With
# TB5_VM_EXPECT_REPORTS=1 (tests/kernel/vm-memcheck.sh, which plants an
# out-of-bounds write) it is the other way round: the run fails unless the
# log has the planted write's SLUB report (and KFENCE's, where KFENCE is
# on), and nothing else a run must not have.
#
# The caller's TB5K_* environment variables (the knobs of
# tests/kernel/vm-tests.sh) are set inside the VM too.
#
# Knobs: TB5_VM_MEM (MiB, default 2048), TB5_VM_SMP (2), TB5_VM_TIMEOUT
# (seconds for the whole run, default 900), TB5_VM_BOOT_TIMEOUT (seconds to
# the start marker, default 120), TB5_VM_BOOT_RETRIES (2), TB5_VM_CPU,
# TB5_VM_TCG_THREAD, TB5_VM_CLOCK (see ci/vm/boot-lib.sh), TB5_VM_SCRIPT (a script to run instead of
# TEST_DIR/vm-tests.sh; it is copied to /tests), TB5_VM_MODULES (extra
# modules), TB5_VM_APPEND (extra kernel parameters), TB5_VM_QUIET=1 (only the
# test script's lines on stdout, not the kernel's; the log keeps both),
# TB5_VM_QEMU_ARGS (more QEMU arguments, e.g. the emulated fabric's cables:
# ci/vm/run-pair.sh), TB5_VM_LOG_NAME (the log's name instead of
# <kver>[-<script>], without .log).
set -euo pipefail
# shellcheck source=ci/kernel-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../kernel-lib.sh"
# shellcheck source=ci/vm/boot-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/boot-lib.sh"

# The harness's own errors exit 2, apart from a failed test (1) and the
# boot failures (3-5).
tb5_die() {
	printf '%s: error: %s\n' "${0##*/}" "$*" >&2
	exit "$TB5_VM_RC_HARNESS"
}

# The reports of the kernel's memory checkers (SLUB's debugging, KFENCE;
# KASAN and "BUG:" are boot-lib.sh's already): any fails a run, and
# general protection faults too. SLUB's header line is "BUG <cache> (...):
# <what>", no "BUG:": 6.1 names the fault there, 6.12 on says "Object
# corrupt" and names it on the line before ("[Right Redzone overwritten]").
MEMCHECK_REPORT_PATTERNS=('KFENCE:' 'Redzone' 'Poison overwritten'
	'Object padding' 'Padding overwritten' 'Object corrupt'
	'Freepointer corrupt' 'Freechain corrupt' 'Object already free'
	'Invalid object pointer' 'Wrong object count' 'Objects remaining')
TB5_VM_BAD_PATTERNS+=("${MEMCHECK_REPORT_PATTERNS[@]}" 'general protection')

# Modules tb5 may need: the Thunderbolt bus (with what it depends on:
# configfs on sid; tb5.ko's own "depends" brings it too), thunderbolt_net
# (which the tb backend must coexist with) and udmabuf where it is a module
# (built in on 6.12 and sid, absent on 6.1).
WANT_MODULES=(thunderbolt configfs thunderbolt_net udmabuf)


# resolve_kernel KERNEL: sets ROOT (image root), VMLINUZ, MODDIR, KVER.
resolve_kernel() {
	local arg=$1

	if [[ -d $arg ]]; then
		ROOT=$(realpath "$arg")
	elif [[ -f $TB5_KCACHE/kernels/$arg.env ]]; then
		tb5_kernel_env "$arg"
		ROOT=$TB5_K_ROOT
	elif [[ -d $TB5_KCACHE/roots/$arg ]]; then
		ROOT=$TB5_KCACHE/roots/$arg
	else
		tb5_die "unknown kernel '$arg': not a directory, a label or a release in $TB5_KCACHE"
	fi
	VMLINUZ=$(tb5_kernel_image "$ROOT") || tb5_die "no vmlinuz in $ROOT"
	MODDIR=$(tb5_kernel_moddir "$ROOT") || tb5_die "no lib/modules/<kver> in $ROOT"
	KVER=${MODDIR##*/}
	[[ -f $MODDIR/modules.dep ]] ||
		tb5_die "$MODDIR/modules.dep missing: run depmod -b $ROOT $KVER (ci/kernels.sh does)"
}

# module_paths NAME: the module's path in modules.dep and those of all it
# depends on (modules.dep lists the whole closure), relative to MODDIR.
# Prints nothing for a module that is built in or absent.
module_paths() {
	local name=${1//-/_}

	awk -v want="$name" -F': ?' '{
		base = $1; sub(/.*\//, "", base); sub(/\.ko(\.(xz|zst|gz))?$/, "", base)
		gsub(/-/, "_", base)
		if (base == want) { print $1; n = split($2, dep, " "); for (i = 1; i <= n; i++) print dep[i]; exit }
	}' "$MODDIR/modules.dep"
}

# copy_module REL: MODDIR/REL into the initramfs, decompressed (busybox
# insmod/modprobe take plain .ko files only).
copy_module() {
	local rel=$1 dest

	dest=$RD/lib/modules/$KVER/${rel%.*}
	[[ $rel == *.ko ]] && dest=$RD/lib/modules/$KVER/$rel
	[[ -f $dest ]] && return 0
	mkdir -p "${dest%/*}"
	case $rel in
	*.ko) cp "$MODDIR/$rel" "$dest" ;;
	*.ko.xz) xz -dc "$MODDIR/$rel" >"$dest" ;;
	*.ko.zst) zstd -qdc "$MODDIR/$rel" >"$dest" ;;
	*.ko.gz) gzip -dc "$MODDIR/$rel" >"$dest" ;;
	*) tb5_die "unexpected module file $rel" ;;
	esac
}

# is_static FILE: not a dynamically linked ELF (scripts pass too).
is_static() {
	[[ $(head -c4 "$1") != $'\x7fELF' ]] && return 0
	! readelf -l "$1" 2>/dev/null | grep 'program interpreter' >/dev/null
}

# write_vm_env: the environment /init sets up for the test script: which
# script, and the caller's TB5K_* variables, quoted for sh.
write_vm_env() {
	local var val q="'" e="'\\''"

	echo "TB5_VM_SCRIPT=${SCRIPT##*/}"
	while IFS= read -r var; do
		val=${!var}
		echo "export $var='${val//$q/$e}'"
	done < <(compgen -v TB5K_ || true)
}

build_initramfs() {
	local name rel f deps=() mods=()
	local -A seen=()

	mkdir -p "$RD"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,root,etc,tests}
	mkdir -p "$RD/lib/modules/$KVER"
	cp /bin/busybox "$RD/bin/busybox"
	is_static "$RD/bin/busybox" || tb5_die "/bin/busybox is not static: apt-get install busybox-static"
	install -m 0755 "$HERE/init.sh" "$RD/init"

	# Modules: what tb5.ko declares it depends on, plus WANT_MODULES.
	if [[ $KO != none ]]; then
		IFS=, read -r -a deps <<<"$(modinfo -F depends "$KO")"
	fi
	read -r -a mods <<<"${TB5_VM_MODULES:-}"
	for name in "${WANT_MODULES[@]}" "${deps[@]}" "${mods[@]}"; do
		[[ -n $name ]] || continue
		while read -r rel; do
			[[ -n $rel && -z ${seen[$rel]:-} ]] || continue
			seen[$rel]=1
			copy_module "$rel"
		done < <(module_paths "$name")
	done
	# modules.builtin tells modprobe that a built-in module needs no file.
	for f in modules.order modules.builtin modules.builtin.modinfo; do
		[[ -f $MODDIR/$f ]] && cp "$MODDIR/$f" "$RD/lib/modules/$KVER/"
	done
	if [[ $KO != none ]]; then
		mkdir -p "$RD/lib/modules/$KVER/updates"
		cp "$KO" "$RD/lib/modules/$KVER/updates/tb5.ko"
	fi
	depmod -b "$RD" "$KVER"
	echo "vm: modules in the initramfs: $(cd "$RD/lib/modules/$KVER" && find . -name '*.ko' |
		sed 's|.*/||; s|\.ko$||' | sort | tr '\n' ' ')"

	# The tests: the whole directory in /tests, its programs in /usr/bin.
	cp -a "$TESTS/." "$RD/tests/"
	for f in "$TESTS"/*; do
		[[ -f $f && -x $f && $f != *.sh ]] || continue
		is_static "$f" || tb5_die "$f is dynamically linked: the VM has no libc (link it with -static)"
		cp "$f" "$RD/usr/bin/"
	done
	cp "$SCRIPT" "$RD/tests/"
	write_vm_env >"$RD/etc/tb5-vm.env"

	(cd "$RD" && find . -print0 | cpio --null -o -H newc -R 0:0 --quiet) |
		gzip -1 >"$WORK/initramfs.gz"
	echo "vm: initramfs $(($(stat -c %s "$WORK/initramfs.gz") / 1024)) KiB"
}

# memcheck_append: sets MEMCHECK_APPEND, the kernel parameters that check
# the kernel's memory (see the top): KFENCE's only where the kernel's config
# (boot/config-<kver> of its image, or lib/modules/<kver>/config, where sid
# keeps it) has CONFIG_KFENCE=y.
memcheck_append() {
	local cfg=$ROOT/boot/config-$KVER

	MEMCHECK_APPEND=''
	[[ ${TB5_VM_MEMCHECK:-1} == 1 ]] || return 0
	MEMCHECK_APPEND="slub_debug=FZPU init_on_free=1"
	[[ -f $cfg ]] || cfg=$MODDIR/config
	[[ -f $cfg ]] || tb5_die "no config-$KVER in $ROOT/boot or $MODDIR: cannot tell whether $KVER has KFENCE"
	if grep -qx 'CONFIG_KFENCE=y' "$cfg"; then
		MEMCHECK_APPEND+=" kfence.sample_interval=${TB5_VM_KFENCE_MS:-10}"
	fi
}

boot() {
	local append

	# On top of boot-lib.sh's: hung_task_panic=1 makes a task blocked for
	# 120 s (a deadlock) panic; every message, timestamped; the memory
	# checks.
	tb5_vm_qemu
	memcheck_append
	append="$VM_APPEND hung_task_panic=1 loglevel=7 printk.time=1 $MEMCHECK_APPEND ${TB5_VM_APPEND:-}"
	# Quiet: only the lines without a kernel timestamp, the tests' own.
	[[ ${TB5_VM_QUIET:-0} == 1 ]] && TB5_VM_SHOW=(grep --line-buffered -av '^\[ *[0-9]*\.[0-9]*\]')
	echo "vm: booting $KVER under QEMU TCG (${VM_QEMU[*]:1}; boot watchdog ${TB5_VM_BOOT_TIMEOUT:-120} s, timeout ${TB5_VM_TIMEOUT:-900} s)"
	# The log is written as the console goes: it can be followed while
	# the VM runs, and a stopped run keeps all of it.
	# More devices: the emulated fabric's cables (ci/vm/run-pair.sh).
	local -a extra=()
	read -r -a extra <<<"${TB5_VM_QEMU_ARGS:-}"
	tb5_vm_boot "$KVER" "$LOG" "${VM_QEMU[@]}" "${extra[@]}" \
		-kernel "$VMLINUZ" -initrd "$WORK/initramfs.gz" -append "$append" || true
}

# memcheck_verdict: the verdict of the planted write's run
# (TB5_VM_EXPECT_REPORTS=1). The reports it must cause: SLUB's red zone
# report, and KFENCE's where KFENCE is on; each is printed with its log
# line, and a missing one fails the run. The rest of the log, without the
# memory checkers' lines (and the WARNING with which SLUB's reports end
# from 6.12 on, in mm/slub.c), is judged as any run's (LOG-rest.log).
memcheck_verdict() {
	local rest=${LOG%.log}-rest.log pat line rc=0 want=('Redzone overwritten')

	[[ $MEMCHECK_APPEND == *kfence.sample_interval=* ]] && want+=('BUG: KFENCE:')
	grep -avF -f <(printf '%s\n' "${MEMCHECK_REPORT_PATTERNS[@]}" ' mm/slub.c:') \
		"$LOG" >"$rest" || true
	tb5_vm_verdict "$KVER" "$rest" "${SCRIPT##*/}" || rc=$?
	((rc == 0 || rc == TB5_VM_RC_TEST)) || return "$rc"
	[[ -n $MEMCHECK_APPEND ]] || {
		echo "vm: $KVER: memcheck: FAIL: TB5_VM_EXPECT_REPORTS=1 without the memory checks (TB5_VM_MEMCHECK=0)"
		return "$TB5_VM_RC_TEST"
	}
	for pat in "${want[@]}"; do
		# The kernel's own line (timestamped), not a test's echo of it.
		line=$(grep -an '^\[ *[0-9]*\.[0-9]*\]' "$LOG" | grep -F -m1 "$pat" || true)
		if [[ -n $line ]]; then
			echo "vm: $KVER: memcheck: the planted write was caught: $LOG:${line%%:*}: ${line#*:}"
		else
			echo "vm: $KVER: memcheck: FAIL: no '$pat' report in $LOG: the planted out-of-bounds write went unnoticed"
			rc=$TB5_VM_RC_TEST
		fi
	done
	return "$rc"
}

main() {
	(($# >= 3 && $# <= 4)) || tb5_die "usage: ${0##*/} KERNEL TB5_KO|none TEST_DIR [LOG_DIR]"
	HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	START=$SECONDS
	KO=$2
	[[ $KO == none || -f $KO ]] || tb5_die "no module $KO"
	[[ $KO == none ]] || KO=$(realpath "$KO")
	TESTS=$(realpath "$3")
	SCRIPT=$(realpath "${TB5_VM_SCRIPT:-$TESTS/vm-tests.sh}")
	[[ -f $SCRIPT ]] || tb5_die "$SCRIPT missing"
	LOGDIR=${4:-$TB5_ROOT/build-kernel/vm-logs}
	resolve_kernel "$1"
	if [[ $KO != none ]]; then
		local magic
		magic=$(modinfo -F vermagic "$KO")
		[[ $magic == "$KVER "* ]] || tb5_die "$KO is built for '${magic%% *}', not $KVER"
	fi

	tb5_install_deps "${TB5_DEPS_KERNEL[@]}"
	mkdir -p "$LOGDIR"
	# <kver>.log for vm-tests.sh, <kver>-<name>.log for another script: a
	# demo run does not overwrite the tests' log.
	LOG=$(realpath "$LOGDIR")/$KVER.log
	[[ ${SCRIPT##*/} == vm-tests.sh ]] ||
		LOG=${LOG%.log}-$(basename "$SCRIPT" .sh).log
	[[ -z ${TB5_VM_LOG_NAME:-} ]] || LOG=$(realpath "$LOGDIR")/$TB5_VM_LOG_NAME.log
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/tb5-vm.XXXXXX")
	RD=$WORK/root
	trap 'tb5_vm_kill_qemu; rm -rf "$WORK"' EXIT

	build_initramfs
	boot
	local rc=0
	if [[ ${TB5_VM_EXPECT_REPORTS:-0} == 1 ]]; then
		TB5_VM_TAIL=${TB5_VM_QUIET:-0} memcheck_verdict || rc=$?
	else
		TB5_VM_TAIL=${TB5_VM_QUIET:-0} tb5_vm_verdict "$KVER" "$LOG" "${SCRIPT##*/}" || rc=$?
	fi
	tb5_vm_write_status "${LOG%.log}.status" "$rc"
	return "$rc"
}

main "$@"
