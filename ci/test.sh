#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ci/test.sh - the whole test suite, as CI runs it (.ci/run calls this).
# Works as root or as a user with sudo (sudo is used to install missing
# packages and by the scripts that need root). Stops at the first failing
# stage; the last line says how many stages passed. From the fuzzer and the
# kernel's VMs on, the stages run in two lanes at once (tb5_lanes, below;
# ci/README.md says why), where a failure stops its own lane.
#
#   - build dependencies (apt-get, skipped when all are installed)
#   - the host-tools audit (ci/host-tools-audit.py): every program the
#     scripts run on the host comes from a package that a deps list of
#     ci/lib.sh installs on the way there, or from the essential set
#   - kernel constraints: each dkms/core/*.c (and dkms/tb/*.c, the tb
#     backend's portable part) compiled alone with gcc,
#     freestanding, no FP registers, stack frames under 256 bytes, and
#     nothing called but the OS shim, memcpy and memset (build-ci-kernel/)
#   - the core and its kernel OS shim built with Kbuild, W=1, -Werror, against
#     Debian's kernel headers (ci/kbuild-core-check.sh)
#   - every public header compiled alone, as C and as C++, gcc and clang
#   - every file of tb5.ko checked by sparse, W=1 (ci/sparse-check.sh), and
#     by the kernel's checkpatch.pl (ci/checkpatch.sh)
#   - gcc, -Werror, RelWithDebInfo (build-ci/): build, ctest
#   - clang, ASan + UBSan (build-ci-san/): build, ctest
#   - clang, libFuzzer (build-ci-fuzz/): build, tests/fuzz/run.sh for 60 s
#     per fuzzer (tb5-fuzz-rx: the core's receive path; tb5-fuzz-tb: the tb
#     backend's login messages, login machine and descriptor check)
#   - tb5.ko built by DKMS for Debian 12's 6.1, bookworm-backports' 6.12 and
#     sid's newest kernel, warning-free, each booted under QEMU with the
#     module and tests/kernel's tests (ci/kernel-tests.sh, build-kernel/)
#   - the packages (ci/package.sh): debs and rpms built by CPack
#     (build-pkg-deb/, build-pkg-rpm/), lintian (no error, no warning) and
#     rpmlint (no error)
#   - the Debian source package built with debhelper (ci/deb-source.sh:
#     dpkg-buildpackage -S and -b, lintian --pedantic, its autopkgtest:
#     dkms-autopkgtest in a chroot, module-selftest in a QEMU machine
#     testbed) and its debs compared with CPack's (ci/deb-compare.sh)
#   - the rpms installed, upgraded and erased with rpm in a booted Debian
#     12 (QEMU, systemd and udev running), then with dnf from a createrepo_c
#     repository and from the signed one in a chroot (ci/rpm-install.sh)
#   - one version everywhere (ci/version-check.sh)
#   - the signed apt and dnf repositories (ci/release.sh --rpm)
#   - the packages installed (ci/package-install.sh --full): the signed apt
#     repository served over HTTP, a fresh Debian 12 (debootstrap), the
#     keyring and tb5.sources, tampered repositories refused, apt install
#     of the previous release (0.1.0, built from git history), an edited
#     conffile, the upgrade keeping it, tb5-nccl-server, the system booted
#     under QEMU with its own kernel and udev (modprobe, nodes tb5 0660,
#     tb5-selftest as a member of tb5, tb5-perf, the exporter under
#     systemd, the rule reaching existing nodes, a changed ring_size),
#     purge leaving nothing, and Debian's DKMS autopkgtest
#   - UEFI Secure Boot (ci/secureboot.sh): a Debian 12 booted through OVMF
#     with Microsoft's keys, the signed shim, grub and kernel; apt install
#     tb5-nccl-minimal and a kernel upgrade (DKMS builds and signs) in a
#     chroot of it, then booted: modprobe refused and tb5-selftest saying
#     what to do, mokutil --import, the MOK manager driven on the serial
#     console, the module loaded, copies signed by another key, stripped
#     or changed refused, the new kernel loading it with no new enrollment
#   - the main job, ci/main.sh (demo, benchmark, simulator, packages
#     installed into a fresh system and booted), run as a new user in a
#     fresh Debian 12 that has only minbase, git and sudo
#     (ci/fresh-system.sh): it must install what it needs itself
#
# TB5_FUZZ_SECONDS overrides the fuzzing time.
set -euo pipefail
# shellcheck source=ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap tb5_summary EXIT
cd "$TB5_ROOT"

CORE=dkms/core
COREOS=src/coreos
# The tb backend's portable part lives by the same rules as the core.
TBPROTO=dkms/tb

# The flags the kernel constraints are checked with. -O2 because kbuild
# builds at -O2 and inlining changes frame sizes.
KERNEL_CFLAGS=(-std=gnu11 -O2 -ffreestanding -fno-builtin -mgeneral-regs-only
	-Wframe-larger-than=256 -Wvla -Wall -Wextra -Werror)
# What a core object may leave undefined: its own and the shim's tb5_*
# functions, and the two functions tb5_os.h says every platform provides.
KERNEL_ALLOWED_UNDEF='^(tb5_[A-Za-z0-9_]+|memcpy|memset)$'

# Public headers: every header of the core but its internal ones, libtb5's C
# API and the module's uAPI. (The kernel's platform header,
# dkms/os/tb5_os_linux.h, is Kbuild's to check.)
LIBAPI=src/include/tb5
UAPI=dkms/include/uapi
mapfile -t PUBLIC_HEADERS < <(find "$CORE" "$TBPROTO" "$LIBAPI" "$UAPI" -maxdepth 1 \
	-name '*.h' ! -name '*_internal.h' | sort)

kernel_constraints() {
	local out=build-ci-kernel src obj bad n=0

	rm -rf "$out"
	mkdir -p "$out"
	for src in "$CORE"/*.c "$TBPROTO"/*.c; do
		obj=$out/$(basename "$src" .c).o
		echo "gcc ${KERNEL_CFLAGS[*]} -c $src"
		gcc "${KERNEL_CFLAGS[@]}" -I "$CORE" -I "$COREOS" -I "$TBPROTO" -c "$src" -o "$obj"
		bad=$(nm -u "$obj" | awk '{ print $2 }' |
			grep -Ev "$KERNEL_ALLOWED_UNDEF" | tr '\n' ' ' || true)
		if [[ -n $bad ]]; then
			echo "$src calls outside the OS shim: $bad" >&2
			return 1
		fi
		n=$((n + 1))
	done
	((n > 0)) || tb5_die "no core sources in $CORE"
	echo "kernel constraints: $n core files OK"
}

headers_alone() {
	local hdr cc n=0
	local -a compilers=(
		"gcc -x c -std=gnu11"
		"clang -x c -std=gnu11"
		"g++ -x c++ -std=c++20"
		"clang++ -x c++ -std=c++20"
	)

	((${#PUBLIC_HEADERS[@]} > 0)) || tb5_die "no public headers in $CORE"
	for hdr in "${PUBLIC_HEADERS[@]}"; do
		for cc in "${compilers[@]}"; do
			# Twice, so that a missing include guard shows too.
			# shellcheck disable=SC2086  # $cc is a command line
			printf '#include "%s"\n#include "%s"\n' \
				"${hdr##*/}" "${hdr##*/}" |
				$cc -Wall -Wextra -Werror -I "$CORE" -I "$COREOS" -I "$TBPROTO" \
					-I "$LIBAPI" -I "$UAPI" -fsyntax-only - ||
				{ echo "$hdr does not compile alone: $cc" >&2; return 1; }
			n=$((n + 1))
		done
		echo "$hdr: C and C++, gcc and clang: OK"
	done
	echo "headers: $n compilations OK"
}

# tb5_use_ccache: every CMake build configured from here on, by this script
# and the scripts it runs (ci/package.sh, ci/kernel-tests.sh, debhelper's in
# ci/deb-source.sh), compiles through ccache. A CI run builds the same
# sources in up to eight trees, and the next run, of a fresh clone, builds
# them again: ccache keeps the objects in $TB5_KCACHE/ccache, and hashes
# paths relative to the checkout (base_dir, no hash_dir) so that a clone
# at another path hits them too. Only as root, where every build of the run
# writes the same cache (as a user, the scripts that re-run themselves
# through sudo would leave root's files in the user's cache); and never for
# ci/main.sh or ci/fresh-system.sh's new user, whose first build is a cold
# one. TB5_CCACHE=0 turns it off.
tb5_use_ccache() {
	if [[ ${TB5_CCACHE:-1} == 0 ]] || ((EUID != 0)) || ! command -v ccache >/dev/null; then
		echo "ccache: not used"
		return 0
	fi
	export CCACHE_DIR=${CCACHE_DIR:-${TB5_KCACHE:-/var/cache/tb5-ci}/ccache}
	export CCACHE_BASEDIR=$TB5_ROOT CCACHE_NOHASHDIR=true
	export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-4G}
	export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
	mkdir -p "$CCACHE_DIR"
	echo "ccache: $CCACHE_DIR ($(ccache --get-config max_size) at most)"
}

run_ctest() {
	ctest --test-dir "$1" --output-on-failure --no-tests=error -j "$TB5_JOBS"
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

tb5_stage "build dependencies (every list the stages install)" tb5_install_deps "${TB5_DEPS_ALL[@]}"
tb5_use_ccache
tb5_stage "host tools: every program the scripts run comes from a package they install (ci/host-tools-audit.py)" \
	python3 ci/host-tools-audit.py
tb5_stage "kernel constraints of the core (gcc, freestanding)" kernel_constraints
tb5_stage "the core as kernel code (Kbuild, W=1)" bash ci/kbuild-core-check.sh
tb5_stage "public headers alone, as C and as C++" headers_alone
tb5_stage "tb5.ko under sparse (C=2, W=1)" bash ci/sparse-check.sh
tb5_stage "tb5.ko under checkpatch.pl" bash ci/checkpatch.sh
tb5_stage "build (gcc, -Werror, RelWithDebInfo, build-ci/)" tb5_build build-ci \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTB5_WERROR=ON \
	-DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++
tb5_stage "unit tests (gcc)" run_ctest build-ci
tb5_stage "build (clang, ASan+UBSan, build-ci-san/)" tb5_build build-ci-san \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTB5_WERROR=ON \
	-DTB5_SANITIZE=address,undefined \
	-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
tb5_stage "unit tests (clang, ASan+UBSan)" run_ctest build-ci-san

# The rest runs in two lanes at once (tb5_lanes): the kernel's VMs, then
# the main job in a fresh system; and the fuzzer, then the packages, each
# stage after the one whose output it takes.
lane_kernel() {
	tb5_stage "tb5.ko: DKMS builds and VM tests on 6.1, 6.12, sid (ci/kernel-tests.sh)" \
		ci/kernel-tests.sh
	tb5_stage "main job in a fresh Debian 12 (minbase, git, sudo): ci/main.sh as a new user (ci/fresh-system.sh)" \
		ci/fresh-system.sh ci/main.sh
}

lane_packages() {
	tb5_stage "build (clang, libFuzzer, build-ci-fuzz/)" tb5_build build-ci-fuzz \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTB5_WERROR=ON \
		-DTB5_BUILD_FUZZERS=ON -DTB5_BUILD_BENCHMARKS=OFF \
		-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
	tb5_stage "fuzz tb5-fuzz-rx (${TB5_FUZZ_SECONDS:-60} s)" \
		bash tests/fuzz/run.sh build-ci-fuzz "${TB5_FUZZ_SECONDS:-60}" rx
	tb5_stage "fuzz tb5-fuzz-tb (${TB5_FUZZ_SECONDS:-60} s)" \
		bash tests/fuzz/run.sh build-ci-fuzz "${TB5_FUZZ_SECONDS:-60}" tb
	tb5_stage "packages: deb + rpm, lintian, rpmlint (ci/package.sh)" ci/package.sh
	tb5_stage "packages: Debian source package (debhelper), lintian --pedantic, autopkgtest in a chroot and a QEMU testbed (ci/deb-source.sh)" \
		ci/deb-source.sh --autopkgtest
	tb5_stage "packages: debhelper's debs against CPack's (ci/deb-compare.sh)" ci/deb-compare.sh
	tb5_stage "packages: rpm -i/-U/-e in a booted Debian 12, dnf in a chroot (ci/rpm-install.sh --dnf)" \
		ci/rpm-install.sh --dnf
	tb5_stage "one version everywhere (ci/version-check.sh)" ci/version-check.sh
	tb5_stage "signed apt and dnf repositories (ci/release.sh --rpm)" \
		env TB5_RELEASE_LINT=1 ci/release.sh --rpm
	tb5_stage "packages: install, boot, upgrade, purge, DKMS autopkgtest (ci/package-install.sh --full)" \
		ci/package-install.sh --full
	tb5_stage "Secure Boot: install, refused, MOK enrolled, loaded, refusals, kernel upgrade (ci/secureboot.sh)" \
		ci/secureboot.sh
}

tb5_lanes kernel lane_kernel packages lane_packages
