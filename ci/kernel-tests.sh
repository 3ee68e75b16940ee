#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ci/kernel-tests.sh - tb5.ko on three kernel generations, as CI runs it:
#
#   1. ci/kernels.sh: Debian 12's 6.1, bookworm-backports' 6.12 and sid's
#      newest kernel, cached in $TB5_KCACHE (default /var/cache/tb5-ci)
#   2. the DKMS source tree, staged by CMake (build-kernel/, target dkms-tree)
#   3. ci/dkms-build.sh: `dkms build` against each kernel, warning-free
#      (modules in build-kernel/modules/<kver>/)
#   4. the VM test programs: `make -C tests/kernel OUT=build-kernel/vm-tests`
#      (static, kernel-independent: built once) and static builds of
#      tb5-selftest, tb5-perf and libtb5's suites of tests/lib (LIB_SUITES,
#      run with TB5_TEST_BACKEND=kernel; build-kernel/tools-static); the
#      plugin's ABI harness and tb5-exporter, dynamic, each with the
#      libraries it loads and their loader (build-kernel/plugin-harness,
#      into vm-tests/plugin and vm-tests/exporter); or ci/vm/smoke while
#      tests/kernel/ has no vm-tests.sh
#   5. ci/vm/run.sh: each kernel booted under QEMU with its tb5.ko and the
#      tests (console logs in build-kernel/vm-logs/<kver>.log)
#   6. the emulated USB4 fabric: tbemu.ko built for each kernel
#      (tests/tbemu/build.sh, build-kernel/tbemu/<kver>/), then two VMs of
#      each kernel cabled together (ci/vm/run-pair.sh) running the tb
#      backend of the same tb5.ko (tests/kernel/vm-tests-fabric.sh; logs
#      <kver>-fabric-a.log and -b.log): 6.1 with one cable, 6.12 with two
#      and sid with one, the last two with swiotlb=force; and on 6.12 three
#      VMs cabled in a triangle (<kver>-triangle-{a,b,c}.log)
#   7. kernel memory checked on every VM above (ci/vm/run.sh: slub_debug,
#      init_on_free, KFENCE where the kernel has it; a report fails the
#      run), and shown to work: tb5k_memcheck.ko (tests/kernel/memcheck/,
#      built like tbemu.ko into build-kernel/memcheck/<kver>/) plants an
#      out-of-bounds write past a kmalloc() buffer in a VM of its own per
#      kernel (tests/kernel/vm-memcheck.sh; log <kver>-memcheck.log), which
#      fails unless SLUB (and KFENCE, where on) report it
#
# Prints one line per kernel (a failure says whether the tests failed or the
# VM never reached them), one line per VM boot that was retried (with its
# reason; ci/vm/run.sh retries a boot that never reached the tests, at most
# twice), the FAIL lines of each failed VM run (with the test lines before
# them) and "kernel-tests: N passed, M failed, R VM boot(s) retried"; exits
# non-zero when a kernel failed. Needs root (apt-get, dkms, chroot).
#
# Knobs: TB5_KERNELS (labels to test, default "6.1 6.12 sid"),
# TB5_KTEST_PARTS (which VM runs, default "vm fabric triangle memcheck":
# the single VM of each kernel, the two hosts of the fabric, the triangle,
# the planted write), TB5_DKMS_TREE
# (a staged tree to build instead of CMake's), TB5_VM_TESTS (a directory of
# built tests to run instead of building tests/kernel), and those of
# ci/kernels.sh and ci/vm/run.sh (TB5_KCACHE, TB5_VM_TIMEOUT, ...;
# TB5_VM_QUIET defaults to 1 here). Only the two-host fabric of 6.12, say:
#
#   TB5_KERNELS=6.12 TB5_KTEST_PARTS=fabric ci/kernel-tests.sh
#
# (steps 1-4 and tbemu.ko's build still run, for that kernel alone).
# --help prints this text; the script takes no other argument.
set -euo pipefail
if [[ $# -gt 0 ]]; then
	if [[ $1 == -h || $1 == --help ]]; then
		sed -n '3,/^set -euo pipefail$/{/^set -euo pipefail$/d; s/^# \{0,1\}//; p}' "$0"
		exit 0
	fi
	echo "usage: [TB5_KERNELS=...] [TB5_KTEST_PARTS=...] $0 [--help]" >&2
	exit 2
fi
# shellcheck source=ci/kernel-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/kernel-lib.sh"

BUILD=$TB5_ROOT/build-kernel
# Only the tests' lines of the VM consoles on stdout; the kernel's are in the
# logs (and the offending ones are printed on a failure).
export TB5_VM_QUIET=${TB5_VM_QUIET:-1}
read -r -a LABELS <<<"${TB5_KERNELS:-${TB5_KLABELS[*]}}"
# The fabric per kernel: cables between the two hosts, and kernel parameters.
# swiotlb=force bounces every DMA mapping, so that a missing dma_sync_*() or
# a buffer used after its unmapping corrupts data the tests verify; 131072
# slabs (256 MiB) instead of the default 64 MiB, which the rings' own DMA
# buffers of two links (2 x 2 x 4096 x 4 KiB) would fill, leaving nothing
# for the regions that zero-copy transmit maps.
declare -A FABRIC_CABLES=([6.1]=1 [6.12]=2 [sid]=1)
declare -A FABRIC_APPEND=([6.1]="" [6.12]="swiotlb=131072,force" [sid]="swiotlb=131072,force")
# And three hosts cabled in a triangle, on one kernel.
declare -A FABRIC_TRIANGLE=([6.12]=1)
read -r -a PARTS <<<"${TB5_KTEST_PARTS:-vm fabric triangle memcheck}"
TIMES=()
RESULTS=()

# want PART: the run PART is one of TB5_KTEST_PARTS.
want() {
	[[ " ${PARTS[*]} " == *" $1 "* ]]
}
RETRY_LINES=()
FAIL_LINES=()

# vm_status FILE: reads what ci/vm/run.sh wrote in FILE (its .status) into
# VM_RESULT, VM_BOOTS, VM_RETRIES, VM_RETRY_LINES (the retried boots'
# reasons) and VM_RETRIED (", after N boot retries (kinds)" or nothing).
vm_status() {
	local key val kinds=()

	VM_RESULT=unknown VM_BOOTS=0 VM_RETRIES=0 VM_RETRY_LINES=() VM_RETRIED=''
	[[ -f $1 ]] || return 0
	while IFS='=' read -r key val; do
		case $key in
		result) VM_RESULT=$val ;;
		boots) VM_BOOTS=$val ;;
		retries) VM_RETRIES=$val ;;
		retry)
			VM_RETRY_LINES+=("$val")
			kinds+=("${val%%:*}")
			;;
		esac
	done <"$1"
	if ((VM_RETRIES > 0)); then
		VM_RETRIED=", after $VM_RETRIES boot retr$( ((VM_RETRIES == 1)) && echo y || echo ies) (${kinds[*]})"
	fi
}

# fabric_retries LABEL KVER TAG: the boot retries of the fabric's VMs
# (<kver>-TAG-<host>.status), counted and listed like the others.
fabric_retries() {
	local f reason

	for f in "$BUILD/vm-logs/$2-$3"-?.status; do
		[[ -f $f ]] || continue
		vm_status "$f"
		retries=$((retries + VM_RETRIES))
		for reason in "${VM_RETRY_LINES[@]}"; do
			RETRY_LINES+=("$(printf '%-5s %s host %s: boot retried: %s' "$1" "$3" \
				"$(basename "$f" .status | sed 's/.*-//')" "$reason")")
		done
	done
}

# fail_lines LABEL PART LOG...: keeps the FAIL lines of the logs of a failed
# run and the script's exit status, each with the test lines just before it
# (the failing test's account of the links and cables, or the shell's
# error), for the summary: CI shows only the end of the output, and the logs
# stay on the machine that ran it.
fail_lines() {
	local label=$1 part=$2 log line who
	shift 2
	for log in "$@"; do
		[[ -f $log ]] || continue
		# A host's log of the fabric or triangle: <kver>-PART-<host>.log.
		who=$part
		[[ $log == *-"$part"-?.log ]] && who+=" host ${log: -5:1}"
		while IFS= read -r line; do
			FAIL_LINES+=("$(printf '%-5s %s: %s' "$label" "$who" "$line")")
		done < <(tr -d '\r' <"$log" |
			grep -B6 -E '^(#[[:space:]]+)?FAIL |^TB5-VM-RESULT: rc=[1-9]' |
			grep -v -E '^\[ *[0-9]+\.[0-9]+\]|^--$' | tail -n 16)
	done
}

# timed NAME COMMAND...: runs COMMAND, records how long it took.
timed() {
	local name=$1 start=$SECONDS rc=0
	shift
	"$@" || rc=$?
	TIMES+=("$(printf '  %-40s %s%s' "$name" "$(tb5_fmt_secs $((SECONDS - start)))" \
		"$( ((rc == 0)) || echo "  (failed, exit $rc)")")")
	return "$rc"
}

stage_dkms_tree() {
	# A tree configured earlier with another generator cannot be reused.
	if [[ -f $BUILD/CMakeCache.txt ]] &&
		! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$BUILD/CMakeCache.txt"; then
		rm -rf "$BUILD/CMakeCache.txt" "$BUILD/CMakeFiles"
	fi
	# Only the tree is wanted here: no tests, no benchmarks.
	cmake -S "$TB5_ROOT" -B "$BUILD" -G Ninja -DBUILD_TESTING=OFF \
		-DTB5_BUILD_BENCHMARKS=OFF >/dev/null
	cmake --build "$BUILD" --target dkms-tree
}

# libtb5's suites of tests/lib that run over tb5.ko too (TB5_TEST_BACKEND=
# kernel): vm-tests-lib.sh runs them on the loop pairs, vm-tests-fabric.sh
# the two-host ones between the hosts. Each must build: one that does not,
# or that tests/lib no longer defines, fails the run (and vm-tests-lib.sh
# fails a suite that is missing in the VM or runs no test there).
LIB_SUITES=(test_loop_pair test_two_hosts test_copies test_cq_bounds)

# tb5-selftest and tb5-perf as static programs (the VM has no libc), next
# to the uAPI test programs: vm-tests-tools.sh runs them on the loop pairs;
# and the suites of LIB_SUITES, static too, in lib/.
build_static_tools() {
	local dir=$BUILD/tools-static t targets log

	if [[ -f $dir/CMakeCache.txt ]] &&
		! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$dir/CMakeCache.txt"; then
		rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
	fi
	cmake -S "$TB5_ROOT" -B "$dir" -G Ninja -DTB5_STATIC_TOOLS=ON \
		-DBUILD_TESTING=ON -DTB5_BUILD_BENCHMARKS=OFF >/dev/null
	targets=$(ninja -C "$dir" -t targets all)
	for t in "${LIB_SUITES[@]}"; do
		grep -qx "$t: phony" <<<"$targets" ||
			tb5_die "tests/lib defines no suite $t (LIB_SUITES names it)"
	done
	# Static glibc warns that getgrnam() and dlopen() need its shared
	# parts at run time; in the VM they fail cleanly (no group tb5, no
	# plugin), which the checks report as SKIP. (And getaddrinfo(), for
	# gtest's streaming listener, which the suites never use.) A failed
	# build stops here: an older binary left in $dir must not run.
	log=$dir/static-build.log
	if ! cmake --build "$dir" --target tb5-selftest tb5-perf "${LIB_SUITES[@]}" \
			>"$log" 2>&1; then
		cat "$log" >&2
		tb5_die "the static tools or libtb5's suites (${LIB_SUITES[*]}) did not build"
	fi
	grep -v -e 'statically linked applications requires at runtime' \
		-e 'in function .testing::internal::StreamingListener' "$log" || true
	[[ -x $dir/src/tools/selftest/tb5-selftest && -x $dir/src/tools/perf/tb5-perf ]] ||
		tb5_die "the static tools did not build"
	cp "$dir/src/tools/selftest/tb5-selftest" "$dir/src/tools/perf/tb5-perf" "$TESTS/"
	rm -rf "${TESTS:?}/lib"
	mkdir -p "$TESTS/lib"
	for t in "${LIB_SUITES[@]}"; do
		[[ -x $dir/tests/lib/$t ]] || tb5_die "the static $t did not build"
		cp "$dir/tests/lib/$t" "$TESTS/lib/"
	done
}

# carry_dynamic DIR OUT FILE...: FILE (programs and shared objects built in
# DIR) into OUT, a directory of its own, with libtb5 (both without their
# debug information) and every library they load from the system, and the
# loader: the VM has no libc, so a program of OUT runs as
# OUT/ld-linux-x86-64.so.2 --library-path OUT OUT/<program>.
carry_dynamic() {
	local dir=$1 out=$2 lib
	shift 2

	rm -rf "$out"
	mkdir -p "$out"
	cp "$@" "$out/"
	cp -L "$dir/src/lib/libtb5.so.1" "$out/"
	# Their debug information would be most of the initramfs they add.
	strip --strip-debug "$out"/*
	for lib in $(ldd "$out"/* |
			awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\/.*ld-linux/ { print $1 }' |
			sort -u); do
		[[ $lib == "$dir"/* ]] && continue
		cp -L "$lib" "$out/"
	done
	[[ -e $out/ld-linux-x86-64.so.2 ]] || tb5_die "no loader found for $out"
}

# The dynamic programs, each in a directory of its own (carry_dynamic): the
# plugin's ABI harness with the plugin (plugin/: vm-tests-plugin.sh runs it
# over the loop pairs, vm-tests-fabric.sh between the hosts), and
# tb5-exporter (exporter/: vm-tests-fabric.sh reads the drop metric on the
# attacked host after fabric.hostile).
build_dynamic_programs() {
	local dir=$BUILD/plugin-harness

	if [[ -f $dir/CMakeCache.txt ]] &&
		! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$dir/CMakeCache.txt"; then
		rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
	fi
	cmake -S "$TB5_ROOT" -B "$dir" -G Ninja -DTB5_BUILD_BENCHMARKS=OFF \
		-DTB5_BUILD_TOOLS=ON >/dev/null
	cmake --build "$dir" --target test_plugin_abi nccl-net-tb5 tb5-exporter >/dev/null ||
		tb5_die "the plugin's ABI harness or tb5-exporter did not build"
	carry_dynamic "$dir" "$TESTS/plugin" "$dir/tests/plugin/test_plugin_abi" \
		"$dir/plugin/libnccl-net-tb5.so"
	carry_dynamic "$dir" "$TESTS/exporter" "$dir/src/tools/exporter/tb5-exporter"
}

build_vm_tests() {
	if [[ -n ${TB5_VM_TESTS:-} ]]; then
		TESTS=$(realpath "$TB5_VM_TESTS")
		echo "VM tests: $TESTS (TB5_VM_TESTS)"
	elif [[ -f $TB5_ROOT/tests/kernel/Makefile && -f $TB5_ROOT/tests/kernel/vm-tests.sh ]]; then
		TESTS=$BUILD/vm-tests
		make -C "$TB5_ROOT/tests/kernel" -j "$TB5_JOBS" OUT="$TESTS"
		build_static_tools
		build_dynamic_programs
	else
		TESTS=$TB5_ROOT/ci/vm/smoke
		echo "VM tests: tests/kernel/vm-tests.sh does not exist yet: running the smoke test $TESTS"
	fi
}

# memcheck_run LABEL KVER: the planted out-of-bounds write, in a VM of its
# own (no tb5.ko): ci/vm/run.sh with TB5_VM_EXPECT_REPORTS=1 passes only
# when the kernel's memory checking reported it.
memcheck_run() {
	local label=$1 kver=$2 dir=$BUILD/memcheck/$2/tests rc=0 reason
	local log=$BUILD/vm-logs/$2-memcheck.log

	tb5_banner "kernel-tests: memory checking, $label ($kver): a planted out-of-bounds write"
	rm -rf "$dir" "${log%.log}.status"
	mkdir -p "$dir"
	cp "$TB5_ROOT/tests/kernel/vm-memcheck.sh" "$BUILD/memcheck/$kver/tb5k_memcheck.ko" "$dir/"
	TB5_VM_EXPECT_REPORTS=1 TB5_VM_SCRIPT=$dir/vm-memcheck.sh TB5_VM_LOG_NAME=$kver-memcheck \
		timed "memcheck, $label" "$TB5_ROOT/ci/vm/run.sh" "$label" none "$dir" \
		"$BUILD/vm-logs" || rc=$?
	vm_status "${log%.log}.status"
	retries=$((retries + VM_RETRIES))
	if ((rc == 0)); then
		RESULTS+=("$(printf '%-5s %-24s PASS  memcheck: the planted out-of-bounds write was reported%s' \
			"$label" "$kver" "$VM_RETRIED")")
		ok=$((ok + 1))
	else
		RESULTS+=("$(printf '%-5s %-24s FAIL  memcheck: %s%s (%s)' "$label" "$kver" \
			"$( ((rc == 1)) && echo "the planted write went unreported, or the run failed" ||
				echo "VM never reached the test: $VM_RESULT")" "$VM_RETRIED" "$log")")
		failed=$((failed + 1))
		fail_lines "$label" memcheck "$log"
	fi
	for reason in "${VM_RETRY_LINES[@]}"; do
		RETRY_LINES+=("$(printf '%-5s memcheck: boot retried: %s' "$label" "$reason")")
	done
}

main() {
	local label tree ok=0 failed=0 start=$SECONDS kver ko rc retries=0 reason log script
	local -A built=()

	tb5_install_deps "${TB5_DEPS_KERNEL[@]}"

	tb5_banner "kernel-tests: kernels (ci/kernels.sh)"
	timed "kernels (ci/kernels.sh)" "$TB5_ROOT/ci/kernels.sh" "${LABELS[@]}" ||
		tb5_die "the kernels could not be prepared"

	tb5_banner "kernel-tests: DKMS source tree"
	if [[ -n ${TB5_DKMS_TREE:-} ]]; then
		tree=$(realpath "$TB5_DKMS_TREE")
		echo "DKMS tree: $tree (TB5_DKMS_TREE)"
	else
		timed "DKMS tree (cmake, dkms-tree)" stage_dkms_tree ||
			tb5_die "cmake could not stage the DKMS tree"
		tree=$(find "$BUILD/dkms" -mindepth 1 -maxdepth 1 -type d -name 'tb5-*' -print -quit)
		[[ -n $tree ]] || tb5_die "cmake staged no tree in $BUILD/dkms"
	fi

	for label in "${LABELS[@]}"; do
		timed "dkms build, $label" "$TB5_ROOT/ci/dkms-build.sh" "$tree" \
			"$BUILD/modules" "$label" && built[$label]=1
	done

	tb5_banner "kernel-tests: VM test programs"
	timed "VM test programs" build_vm_tests || tb5_die "the VM tests do not build"

	tb5_banner "kernel-tests: the emulated USB4 fabric (tbemu.ko)"
	timed "tbemu.ko builds" "$TB5_ROOT/tests/tbemu/build.sh" "$BUILD/tbemu" \
		"${LABELS[@]}" || tb5_die "tbemu.ko does not build"
	if want memcheck; then
		tb5_banner "kernel-tests: the planted write's module (tb5k_memcheck.ko)"
		timed "tb5k_memcheck.ko builds" "$TB5_ROOT/tests/tbemu/build.sh" \
			--src "$TB5_ROOT/tests/kernel/memcheck" "$BUILD/memcheck" \
			"${LABELS[@]}" || tb5_die "tb5k_memcheck.ko does not build"
	fi

	for label in "${LABELS[@]}"; do
		tb5_kernel_env "$label"
		kver=$TB5_K_VER
		ko=$BUILD/modules/$kver/tb5.ko
		if [[ -z ${built[$label]:-} ]]; then
			RESULTS+=("$(printf '%-5s %-24s FAIL  dkms build failed (%s)' "$label" "$kver" \
				"$BUILD/modules/$kver/make.log")")
			failed=$((failed + 1))
			continue
		fi
		if want vm; then
			tb5_banner "kernel-tests: VM, $label ($kver)"
			rc=0
			# run.sh's log name: <kver>.log, <kver>-<script>.log for another
			# script than vm-tests.sh (TB5_VM_SCRIPT); .status beside it.
			log=$BUILD/vm-logs/$kver.log
			script=$(basename "${TB5_VM_SCRIPT:-vm-tests.sh}" .sh)
			[[ $script == vm-tests ]] || log=${log%.log}-$script.log
			rm -f "${log%.log}.status"
			timed "VM, $label" "$TB5_ROOT/ci/vm/run.sh" "$label" "$ko" "$TESTS" \
				"$BUILD/vm-logs" || rc=$?
			vm_status "${log%.log}.status"
			retries=$((retries + VM_RETRIES))
			case $rc in
			0)
				RESULTS+=("$(printf '%-5s %-24s PASS  built warning-free, VM tests passed%s' \
					"$label" "$kver" "$VM_RETRIED")")
				ok=$((ok + 1))
				;;
			1)
				RESULTS+=("$(printf '%-5s %-24s FAIL  VM tests failed%s (%s)' "$label" "$kver" \
					"$VM_RETRIED" "$log")")
				failed=$((failed + 1))
				fail_lines "$label" vm "$log"
				;;
			3 | 4 | 5 | 6)
				RESULTS+=("$(printf '%-5s %-24s FAIL  VM never reached the tests: %s in %s boots (%s)' \
					"$label" "$kver" "$VM_RESULT" "$VM_BOOTS" "$log")")
				failed=$((failed + 1))
				;;
			*)
				RESULTS+=("$(printf '%-5s %-24s FAIL  ci/vm/run.sh could not run (exit %s)' \
					"$label" "$kver" "$rc")")
				failed=$((failed + 1))
				;;
			esac
			for reason in "${VM_RETRY_LINES[@]}"; do
				RETRY_LINES+=("$(printf '%-5s boot retried: %s' "$label" "$reason")")
			done
		fi
		want memcheck && memcheck_run "$label" "$kver"
		[[ -f $TESTS/vm-tests-fabric.sh ]] || continue
		if want fabric; then
			tb5_banner "kernel-tests: fabric, $label ($kver), two hosts"
			rm -f "$BUILD/vm-logs/$kver"-fabric-?.status
			if TB5_FABRIC_CABLES=${FABRIC_CABLES[$label]:-1} \
				TB5_VM_APPEND="${FABRIC_APPEND[$label]:-}" \
				timed "fabric, $label" "$TB5_ROOT/ci/vm/run-pair.sh" "$label" "$ko" \
				"$BUILD/tbemu/$kver/tbemu.ko" "$TESTS" "$BUILD/vm-logs"; then
				RESULTS+=("$(printf '%-5s %-24s PASS  fabric: %s cable(s)%s, tb backend tests passed' \
					"$label" "$kver" "${FABRIC_CABLES[$label]:-1}" \
					"${FABRIC_APPEND[$label]:+, ${FABRIC_APPEND[$label]}}")")
				ok=$((ok + 1))
			else
				RESULTS+=("$(printf '%-5s %-24s FAIL  fabric (%s, %s)' "$label" "$kver" \
					"$BUILD/vm-logs/$kver-fabric-a.log" "-b.log")")
				failed=$((failed + 1))
				fail_lines "$label" fabric "$BUILD/vm-logs/$kver"-fabric-?.log
			fi
			fabric_retries "$label" "$kver" fabric
		fi
		[[ -n ${FABRIC_TRIANGLE[$label]:-} ]] && want triangle || continue
		rm -f "$BUILD/vm-logs/$kver"-triangle-?.status
		tb5_banner "kernel-tests: fabric, $label ($kver), three hosts in a triangle"
		if TB5_FABRIC_HOSTS=3 timed "triangle, $label" "$TB5_ROOT/ci/vm/run-pair.sh" \
			"$label" "$ko" "$BUILD/tbemu/$kver/tbemu.ko" "$TESTS" "$BUILD/vm-logs"; then
			RESULTS+=("$(printf '%-5s %-24s PASS  fabric: three hosts in a triangle' \
				"$label" "$kver")")
			ok=$((ok + 1))
		else
			RESULTS+=("$(printf '%-5s %-24s FAIL  triangle (%s)' "$label" "$kver" \
				"$BUILD/vm-logs/$kver-triangle-{a,b,c}.log")")
			failed=$((failed + 1))
			fail_lines "$label" triangle "$BUILD/vm-logs/$kver"-triangle-?.log
		fi
		fabric_retries "$label" "$kver" triangle
	done

	tb5_banner "kernel-tests: summary ($(tb5_fmt_secs $((SECONDS - start))))"
	printf '%s\n' "${TIMES[@]}"
	printf '%s\n' "${RESULTS[@]}"
	((${#RETRY_LINES[@]} == 0)) || printf '%s\n' "${RETRY_LINES[@]}"
	((${#FAIL_LINES[@]} == 0)) || printf '%s\n' "${FAIL_LINES[@]}"
	echo "kernel-tests: $ok passed, $failed failed, $retries VM boot(s) retried"
	((failed == 0))
}

# Root for apt-get, dkms, chroot and unshare: through sudo when not root,
# as ci/lib.sh installs packages.
tb5_rerun_as_root "$@"
main "$@"
