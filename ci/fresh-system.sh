#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ci/fresh-system.sh [COMMAND...] - the README's main command run as a new
# user runs it: in a Debian 12 that has nothing but what `debootstrap
# --variant=minbase` lays down (the essential and required packages), git
# and sudo, a fresh clone of this checkout's HEAD, and there, as an ordinary
# user who may use sudo, `ci/main.sh` (or COMMAND, run in the clone). It
# must install everything it needs itself: a program the scripts call that
# no deps list brings fails here, as it would on a new machine (issue 24:
# `modinfo`).
#
# The system is a chroot in a private mount namespace (its own /proc, /sys,
# the host's /dev; it shares the host's network and kernel), remade from a
# cached minbase tarball on every run. Shared with the host, so that a run
# costs minutes and not a second download:
#   - the kernel and base-system caches ($TB5_KCACHE, /var/cache/tb5-ci),
#     bound in at the same path, as a second checkout on the same machine
#     would use them;
#   - the .debs apt downloads ($TB5_KCACHE/fresh/apt-archives, bound on the
#     chroot's /var/cache/apt/archives): every package is still installed
#     by the run itself, only its download is kept.
# Uncommitted changes are not in the clone: commit first (CI tests a clean
# clone anyway).
#
# Work directory: build-fresh/ (the root, removed at the end unless
# TB5_FRESH_KEEP=1). Runs as root, or re-runs itself through sudo.
set -euo pipefail
# shellcheck source=ci/kernel-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/kernel-lib.sh"

tb5_rerun_as_root "$@"

WORK=$TB5_ROOT/build-fresh
ROOT=$WORK/root
CACHE=$TB5_KCACHE/fresh
BASE=$CACHE/bookworm-minbase.tar.zst
ARCHIVES=$CACHE/apt-archives
# The new user: an account with a home, allowed sudo (what "root or a user
# who may use sudo" means in the README).
NEW_USER=newuser
# What a new user has beyond minbase (ci/host-tools-audit.py's
# NEW_USER_PACKAGES: the audit and this run agree on it).
NEW_USER_PKGS=(git sudo)

# The minbase system with git and sudo, cached as a tarball.
make_base() {
	local tmp mirror

	if [[ -f $BASE && ${TB5_KREFRESH:-0} != 1 ]]; then
		echo "cached: $BASE ($(du -h "$BASE" | cut -f1))"
		return 0
	fi
	mirror=$(tb5_mirror)
	tmp=$CACHE/tmp-root
	mkdir -p "$CACHE"
	tb5_retry bash -c 'rm -rf "$1" && debootstrap --variant=minbase --include="$3" bookworm "$1" "$2"' \
		_ "$tmp" "$mirror" "$(IFS=,; echo "${NEW_USER_PKGS[*]}")"
	rm -rf "$tmp/var/cache/apt/archives/"*.deb "$tmp/var/lib/apt/lists/"*
	tar -C "$tmp" --zstd -cf "$BASE.tmp" .
	mv "$BASE.tmp" "$BASE"
	rm -rf "$tmp"
	echo "made: $BASE ($(du -h "$BASE" | cut -f1))"
}

# The system as a new machine has it: the release, its updates and security
# suites from the host's mirror, a host name, the host's DNS, the new user.
make_root() {
	local mirror

	rm -rf "$ROOT"
	mkdir -p "$ROOT" "$ARCHIVES/partial"
	tar -C "$ROOT" --zstd -xf "$BASE"
	mirror=$(tb5_mirror)
	cat >"$ROOT/etc/apt/sources.list" <<-EOF
		deb $mirror bookworm main
		deb $mirror bookworm-updates main
		deb ${mirror%/debian}/debian-security bookworm-security main
	EOF
	# The host's mirror may be a dated snapshot: take its Release files
	# as the host's apt does.
	if [[ $(apt-config dump Acquire::Check-Valid-Until) == *'"false"'* ]]; then
		echo 'Acquire::Check-Valid-Until "false";' >"$ROOT/etc/apt/apt.conf.d/99host-mirror"
	fi
	echo tb5-fresh >"$ROOT/etc/hostname"
	# The chroot shares the host's kernel and so its host name: sudo
	# looks it up.
	echo "127.0.1.1 $(uname -n)" >>"$ROOT/etc/hosts"
	cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"
	chroot "$ROOT" useradd --create-home --shell /bin/bash "$NEW_USER"
	echo "$NEW_USER ALL=(ALL:ALL) NOPASSWD: ALL" >"$ROOT/etc/sudoers.d/$NEW_USER"
	chmod 0440 "$ROOT/etc/sudoers.d/$NEW_USER"
	# The checkout, as the new user clones it.
	git clone --quiet --no-hardlinks "$TB5_ROOT" "$ROOT/home/$NEW_USER/tb5"
	chroot "$ROOT" chown -R "$NEW_USER:$NEW_USER" "/home/$NEW_USER/tb5"
	echo "fresh system: Debian 12 minbase + ${NEW_USER_PKGS[*]}," \
		"$(chroot "$ROOT" dpkg-query -W -f '.\n' | wc -l) packages;" \
		"clone of $(git -C "$TB5_ROOT" rev-parse --short HEAD)"
	if [[ -n $(git -C "$TB5_ROOT" status --porcelain --untracked-files=no) ]]; then
		echo "note: the checkout has uncommitted changes; the clone has HEAD only"
	fi
}

# COMMAND as the new user in the system, with its own /proc and /sys, the
# caches bound in; the mounts live in a private namespace and go with it.
run_inside() {
	local cmd

	printf -v cmd '%q ' "$@"
	mkdir -p "$ROOT$TB5_KCACHE"
	# shellcheck disable=SC2016  # the inner shell expands them
	unshare -m --propagation private -- bash -c '
		root=$1 kcache=$2 archives=$3 user=$4 cmd=$5
		# The root a mount point of its own, as a machine'"'"'s / is: the
		# scripts inside make their own private namespaces (unshare
		# --propagation private), which needs / to be a mount.
		mount --bind "$root" "$root"
		mount -t proc proc "$root/proc"
		mount -t sysfs sysfs "$root/sys"
		mount --rbind /dev "$root/dev"
		mount -t tmpfs tmpfs "$root/run"
		mount --bind "$kcache" "$root$kcache"
		mount --bind "$archives" "$root/var/cache/apt/archives"
		exec chroot "$root" /usr/bin/env -i HOME="/home/$user" USER="$user" \
			LOGNAME="$user" LANG=C.UTF-8 TERM=dumb \
			PATH=/usr/local/bin:/usr/bin:/bin \
			TB5_KCACHE="$kcache" \
			/usr/sbin/runuser -u "$user" -- bash -c "cd ~/tb5 && $cmd"
	' _ "$ROOT" "$TB5_KCACHE" "$ARCHIVES" "$NEW_USER" "$cmd"
}

# The command's status, kept for main (tb5_timed records the time, not it).
INSIDE_RC=0
run_command() {
	run_inside "$@" || INSIDE_RC=$?
}

main() {
	(($# > 0)) || set -- ci/main.sh
	tb5_install_deps "${TB5_DEPS_FRESH[@]}"
	mkdir -p "$WORK"
	tb5_timed "minbase Debian 12 with ${NEW_USER_PKGS[*]} (debootstrap, cached)" make_base
	tb5_timed "fresh system: unpacked, the new user, a clone of the checkout" make_root
	tb5_timed "in the fresh system, as $NEW_USER: $*" run_command "$@"
	if [[ ${TB5_FRESH_KEEP:-0} != 1 ]]; then
		rm -rf "$ROOT"
	fi
	tb5_banner "fresh-system.sh: summary"
	printf '%s\n' "${TB5_STEP_TIMES[@]}"
	((INSIDE_RC == 0)) || tb5_die "'$*' failed in the fresh system (exit $INSIDE_RC)"
	echo "fresh-system.sh: '$*' passed in a fresh Debian 12 (minbase + ${NEW_USER_PKGS[*]})"
}

main "$@"
