# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# ci/lib.sh - shared by the ci/*.sh scripts: banners, stage bookkeeping, the
# build dependencies, and configure+build. Sourced, never run.

TB5_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TB5_JOBS=$(nproc)

# Every package a script installs is in one of these lists, and every
# program a script runs on the host comes from a package of a list it
# installs (or from Debian's essential and required set, which every system
# has): ci/host-tools-audit.py checks both, with the map ci/host-tools.tsv.
#
# What the build needs (ci/main.sh), and what the whole test suite adds on top
# (ci/test.sh): clang with its libFuzzer and sanitizer runtimes, the
# headers of Debian's kernel to build the core with Kbuild, gnuplot and
# xmllint for tb5-perf --plot's tests, shellcheck for the GPU scripts'
# check, shfmt for the host-tools audit.
TB5_DEPS_BUILD=(build-essential cmake ninja-build pkg-config
		googletest libgtest-dev libgmock-dev libbenchmark-dev
		libcli11-dev nlohmann-json3-dev libmicrohttpd-dev libyaml-cpp-dev
		go-md2man python3)
# shellcheck disable=SC2034  # used by ci/test.sh
TB5_DEPS_TEST=("${TB5_DEPS_BUILD[@]}" clang libclang-rt-14-dev linux-headers-amd64
		sparse socat curl openssl prometheus man-db gnuplot-nox libxml2-utils
		shellcheck shfmt procps ccache)
# What the packages need (ci/package.sh, ci/release.sh,
# ci/package-install.sh): CPack's DEB helpers, rpmbuild, the linters, a
# signed apt repository, a Debian 12 made with debootstrap, its disk image,
# QEMU, modinfo (kmod) for the installed module, man for its pages;
# fakeroot for debhelper's dh_installdeb when not run as root.
# shellcheck disable=SC2034  # used by ci/package.sh and ci/package-install.sh
TB5_DEPS_PACKAGE=(dpkg-dev debhelper fakeroot file rpm lintian rpmlint apt-utils
		debootstrap e2fsprogs zstd qemu-system-x86 gnupg gpgv python3 kmod man-db)
# The signed dnf repository and the rpm install tests (ci/release.sh --rpm,
# ci/rpm-install.sh).
# shellcheck disable=SC2034  # used by ci/release.sh and ci/rpm-install.sh
TB5_DEPS_RPM=(rpm createrepo-c zstd debootstrap e2fsprogs)
# The kernels, DKMS builds and VMs of ci/kernel-tests.sh (ci/kernels.sh,
# ci/dkms-build.sh, ci/vm/run.sh): Debian 12's headers, Kbuild of the
# backports kernel (gcc-12, pahole), a sid chroot, the VMs' initramfs.
# shellcheck disable=SC2034  # used by the kernel scripts
TB5_DEPS_KERNEL=(build-essential cmake ninja-build linux-headers-amd64 gcc-12 make
		pahole libelf1 libssl3 debootstrap dkms kmod xz-utils zstd openssl
		qemu-system-x86 busybox-static cpio binutils)
# The Debian source package (ci/deb-source.sh): its Build-Depends and the
# linters; with --autopkgtest, autopkgtest and its QEMU machine testbed.
# shellcheck disable=SC2034  # used by ci/deb-source.sh
TB5_DEPS_DEBSRC=(build-essential debhelper dh-dkms cmake ninja-build pkg-config libcli11-dev
		nlohmann-json3-dev libmicrohttpd-dev libyaml-cpp-dev libcrypt-dev go-md2man
		python3 man-db dpkg-dev lintian fakeroot)
# shellcheck disable=SC2034  # used by ci/deb-source.sh
TB5_DEPS_AUTOPKGTEST=(autopkgtest zstd qemu-system-x86 qemu-utils e2fsprogs)
# The fresh system that ci/fresh-system.sh runs the main job in: its minbase
# Debian 12 (cached as a zstd tarball) and the clone of the checkout.
# shellcheck disable=SC2034  # used by ci/fresh-system.sh
TB5_DEPS_FRESH=(debootstrap zstd git)
# The Secure Boot system of ci/secureboot.sh: OVMF's Secure Boot firmware
# and Microsoft-key variable store, its ESP made without a loop device (a
# GPT by sfdisk, FAT by mkfs.vfat, files by mtools), QEMU, the serial
# console's driver (python3), the disk image (e2fsprogs), the cached base
# system (debootstrap, zstd). The guest's shim-signed,
# grub-efi-amd64-signed, mokutil and openssl are installed by apt in its
# chroot, not here.
# shellcheck disable=SC2034  # used by ci/secureboot.sh
TB5_DEPS_SECUREBOOT=(ovmf fdisk dosfstools mtools qemu-system-x86 python3 e2fsprogs
		debootstrap zstd)
# Everything ci/test.sh's stages install, installed by its first stage: its
# lanes (tb5_lanes) then run at once and never call apt-get at the same
# time.
# shellcheck disable=SC2034  # used by ci/test.sh
TB5_DEPS_ALL=("${TB5_DEPS_TEST[@]}" "${TB5_DEPS_PACKAGE[@]}" "${TB5_DEPS_RPM[@]}"
		"${TB5_DEPS_KERNEL[@]}" "${TB5_DEPS_DEBSRC[@]}" "${TB5_DEPS_AUTOPKGTEST[@]}"
		"${TB5_DEPS_FRESH[@]}" "${TB5_DEPS_SECUREBOOT[@]}")

tb5_banner() {
	printf '\n==== %s ====\n' "$*"
}

tb5_die() {
	printf '%s: error: %s\n' "${0##*/}" "$*" >&2
	exit 1
}

tb5_fmt_secs() {
	printf '%dm%02ds' $(($1 / 60)) $(($1 % 60))
}

# Prints the packages among "$@" that dpkg does not list as installed.
tb5_missing_pkgs() {
	local pkg status
	for pkg in "$@"; do
		status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null) || status=
		[[ $status == installed ]] || printf '%s\n' "$pkg"
	done
}

# Installs the packages among "$@" that are missing, with apt-get: directly
# when root, through sudo otherwise. Does nothing (and asks for no password)
# when everything is installed already.
tb5_install_deps() {
	local -a missing as_root=()

	if ! command -v dpkg-query >/dev/null; then
		echo "dependencies: not a Debian system, not installing: $*"
		return 0
	fi
	mapfile -t missing < <(tb5_missing_pkgs "$@")
	if ((${#missing[@]} == 0)); then
		echo "dependencies: all installed ($# packages)"
		return 0
	fi
	if ((EUID != 0)); then
		command -v sudo >/dev/null ||
			tb5_die "missing packages (${missing[*]}): run as root, or install sudo"
		as_root=(sudo)
	fi
	echo "dependencies: installing ${missing[*]}"
	"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get \
		-o DPkg::Lock::Timeout=600 update
	# Some are installed for a tool only (prometheus for promtool): their
	# services are not started (policy-rc.d 101, for this install only).
	local policy=/usr/sbin/policy-rc.d own_policy=0 rc=0
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\n# tb5 ci/lib.sh: installing test tools\nexit 101\n' |
			"${as_root[@]}" tee "$policy" >/dev/null
		"${as_root[@]}" chmod 755 "$policy"
		own_policy=1
	fi
	"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends \
		"${missing[@]}" || rc=$?
	if ((own_policy)); then
		"${as_root[@]}" rm -f "$policy"
	fi
	return "$rc"
}

# tb5_rerun_as_root ARGS...: a script that needs root calls this before its
# work, with its own arguments: as root it returns; otherwise it runs the
# script again through sudo, with the same environment (as tb5_install_deps
# uses sudo), and never returns.
tb5_rerun_as_root() {
	((EUID != 0)) || return 0
	command -v sudo >/dev/null || tb5_die "run as root, or install sudo"
	exec sudo --preserve-env "$0" "$@"
}

# tb5_build DIR CMAKE-ARGS...: configure the tree in $TB5_ROOT/DIR with Ninja
# and build everything on all cores.
tb5_build() {
	local dir=$TB5_ROOT/$1
	shift
	# A tree configured earlier with another generator cannot be reused.
	if [[ -f $dir/CMakeCache.txt ]] &&
		! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$dir/CMakeCache.txt"; then
		rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
	fi
	cmake -S "$TB5_ROOT" -B "$dir" -G Ninja "$@"
	cmake --build "$dir" -j "$TB5_JOBS"
}

# Stages: tb5_stage NAME COMMAND... runs one stage under a banner and records
# its time; tb5_summary (the EXIT trap) prints the table and the closing line.
TB5_STAGE=
TB5_STAGES_PASSED=0
TB5_STAGE_TIMES=()
TB5_START=$SECONDS

tb5_stage() {
	local start=$SECONDS

	TB5_STAGE=$1
	shift
	tb5_banner "${0##*/}: $TB5_STAGE"
	"$@"
	TB5_STAGE_TIMES+=("$(printf '  %-52s %s' "$TB5_STAGE" \
		"$(tb5_fmt_secs $((SECONDS - start)))")")
	TB5_STAGES_PASSED=$((TB5_STAGES_PASSED + 1))
	TB5_STAGE=
}

# Lanes: tb5_lanes NAME FUNCTION [NAME FUNCTION...] runs each FUNCTION, a
# sequence of tb5_stage calls, in a subshell of its own, all at the same
# time, each line of a lane's output prefixed with "[NAME] ". Most of the
# long stages boot one QEMU guest, which TCG runs on one thread, so two
# lanes keep both cores of the CI machine busy where one left one idle.
# Lanes must not share a build directory or call apt-get on the host (the
# first stage installs every deps list; see TB5_DEPS_ALL). A failed stage
# ends its lane, the others run to their end; then the lanes' stage times
# join this script's table (prefixed with the lane), and the first failed
# stage, in lane order, is this script's failure.
tb5_lanes() {
	local dir name i line n=0 rc=0 first_failed='' lane_rc
	local -a names=()

	dir=$(mktemp -d "${TMPDIR:-/tmp}/tb5-lanes.XXXXXX")
	while (($# >= 2)); do
		names+=("$1")
		(
			# Its own table and verdict, written for the parent at exit.
			trap 'tb5_lane_exit "$dir/$n"' EXIT
			# shellcheck disable=SC2030  # the subshell's own, on purpose
			TB5_STAGE_TIMES=() TB5_STAGES_PASSED=0 TB5_STAGE=
			"$2"
		) 2>&1 | tee "$dir/$n.log" | sed -u "s/^/[$1] /" &
		n=$((n + 1))
		shift 2
	done
	wait
	for ((i = 0; i < n; i++)); do
		name=${names[i]}
		TB5_LANE_RC=1 TB5_LANE_STAGE='?' TB5_LANE_PASSED=0 TB5_LANE_TIMES=()
		# shellcheck source=/dev/null
		[[ -f $dir/$i ]] && source "$dir/$i"
		# shellcheck disable=SC2031  # the parent's, not the lane's
		for line in "${TB5_LANE_TIMES[@]}"; do
			TB5_STAGE_TIMES+=("$(printf '  [%s]%s' "$name" "$line")")
		done
		# shellcheck disable=SC2031  # the parent's, not the lane's
		TB5_STAGES_PASSED=$((TB5_STAGES_PASSED + TB5_LANE_PASSED))
		lane_rc=$TB5_LANE_RC
		if ((lane_rc != 0)); then
			echo "lane $name: FAILED in stage '$TB5_LANE_STAGE' (exit $lane_rc)"
			tb5_lane_failure "$name" "$dir/$i.log"
			if [[ -z $first_failed ]]; then
				first_failed="[$name] $TB5_LANE_STAGE" rc=$lane_rc
			fi
		else
			echo "lane $name: ${TB5_LANE_PASSED} stages passed"
		fi
	done
	rm -rf "$dir"
	if [[ -n $first_failed ]]; then
		TB5_STAGE=$first_failed
		exit "$rc"
	fi
}

# tb5_lane_failure NAME LOG: what a failed lane said last, again, after
# every lane's end: the other lane's output interleaves with it, and only
# the end of a CI log may be kept.
tb5_lane_failure() {
	[[ -s $2 ]] || return 0
	echo "lane $1: its FAIL and error lines (the last 30):"
	grep -aE '(^|[^A-Za-z_])(FAIL|error:)' "$2" | tail -n 30 | sed "s/^/  [$1] /" || true
	echo "lane $1: the last 30 lines of its output:"
	tail -n 30 "$2" | sed "s/^/  [$1] /"
}

# tb5_lane_exit FILE: a lane's EXIT trap: its verdict and table in FILE.
tb5_lane_exit() {
	local rc=$?

	[[ -z $TB5_STAGE ]] || ((rc != 0)) || rc=1
	{
		printf 'TB5_LANE_RC=%d\n' "$rc"
		printf 'TB5_LANE_STAGE=%q\n' "$TB5_STAGE"
		printf 'TB5_LANE_PASSED=%d\n' "$TB5_STAGES_PASSED"
		printf 'TB5_LANE_TIMES=('
		((${#TB5_STAGE_TIMES[@]} == 0)) || printf '%q ' "${TB5_STAGE_TIMES[@]}"
		printf ')\n'
	} >"$1"
}

tb5_summary() {
	local rc=$? total

	total=$(tb5_fmt_secs $((SECONDS - TB5_START)))
	tb5_banner "${0##*/}: summary"
	if ((${#TB5_STAGE_TIMES[@]})); then
		printf '%s\n' "${TB5_STAGE_TIMES[@]}"
	fi
	if ((rc == 0)) && [[ -z $TB5_STAGE ]]; then
		echo "${0##*/}: all ${TB5_STAGES_PASSED} stages passed in $total"
		echo "stages: ${TB5_STAGES_PASSED} passed, 0 failed"
	else
		((rc != 0)) || rc=1
		echo "${0##*/}: FAILED in stage '${TB5_STAGE:-?}' (exit $rc) after $total"
		echo "stages: ${TB5_STAGES_PASSED} passed, 1 failed"
	fi
	exit "$rc"
}
