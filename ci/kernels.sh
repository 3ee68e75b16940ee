#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ci/kernels.sh [LABEL...] - prepare the kernel generations tb5.ko is built
# and booted against (default: all three labels below), in a cache
# ($TB5_KCACHE, default /var/cache/tb5-ci) so that later runs only check it:
#
#   6.1   Debian 12: linux-headers-amd64 installed on the host; the matching
#         linux-image extracted (apt-get download + dpkg-deb -x).
#   6.12  bookworm-backports, through a private apt configuration (the host's
#         sources stay as they are): image and headers extracted. The headers
#         are not installed because the 6.12 headers package depends on the
#         kernel image package, which must never be installed on the host.
#   sid   a debootstrap'ed sid chroot with gcc, make, kmod, dkms, openssl and
#         the newest linux-headers-amd64 (sid's kbuild tools need sid's libc);
#         the image (linux-binary-<kver>, linux-modules-<kver>,
#         linux-base-<kver>) extracted.
#
# Each kernel ends as $TB5_KCACHE/kernels/<label>.env (see kernel-lib.sh).
# Needs root (apt-get, debootstrap). TB5_KREFRESH=1 asks the mirrors again
# for newer kernels; without it a prepared kernel is reused as it is.
set -euo pipefail
# shellcheck source=ci/kernel-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/kernel-lib.sh"

((EUID == 0)) || tb5_die "run as root (apt-get, dpkg-deb into $TB5_KCACHE, debootstrap)"

KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
REFRESH=${TB5_KREFRESH:-0}
MIRROR=

# extract_debs DEST DEB...: unpack the packages into DEST, replacing it only
# once every package is unpacked (an interrupted run leaves no half tree).
extract_debs() {
	local dest=$1 deb
	shift
	rm -rf "$dest.tmp"
	mkdir -p "$dest.tmp"
	for deb in "$@"; do
		echo "extracting ${deb##*/}"
		dpkg-deb -x "$deb" "$dest.tmp"
	done
	rm -rf "$dest"
	mv "$dest.tmp" "$dest"
}

# depmod_root ROOT KVER: modules.dep for an extracted image (the packages
# leave it to depmod at install time); vm/run.sh resolves the dependencies
# of the modules it puts in the initramfs with it. depmod -b looks in
# ROOT/lib/modules: give merged-/usr packages (sid) a lib -> usr/lib link.
depmod_root() {
	local root=$1 kver=$2

	if [[ ! -e $root/lib && -d $root/usr/lib/modules ]]; then
		ln -s usr/lib "$root/lib"
	fi
	depmod -b "$root" "$kver"
}

# write_env LABEL KEY=VALUE...: the kernel's .env file, written last and
# atomically: its presence is what marks the kernel as prepared.
write_env() {
	local label=$1 env=$TB5_KCACHE/kernels/$1.env kv
	shift
	mkdir -p "$TB5_KCACHE/kernels"
	{
		echo "# Written by ci/kernels.sh on $(date -u +%F)"
		echo "TB5_K_LABEL=$label"
		for kv in "$@"; do
			printf '%s=%q\n' "${kv%%=*}" "${kv#*=}"
		done
	} >"$env.tmp"
	mv "$env.tmp" "$env"
}

# is_ready LABEL: the kernel was prepared and its files are still there.
is_ready() {
	[[ $REFRESH != 1 && -f $TB5_KCACHE/kernels/$1.env ]] || return 1
	tb5_kernel_env "$1"
	[[ -n $TB5_K_ROOT && -f $TB5_K_ROOT/lib/modules/$TB5_K_VER/modules.dep ]] &&
		tb5_kernel_image "$TB5_K_ROOT" >/dev/null || return 1
	if [[ -n $TB5_K_CHROOT ]]; then
		[[ -f $TB5_K_CHROOT$TB5_K_BUILD/Makefile ]]
	else
		[[ -f $TB5_K_BUILD/Makefile ]]
	fi
}

# dep_of DEPENDS PREFIX: the first package in a Depends field named PREFIX*.
dep_of() {
	printf '%s\n' "${1//[,|]/$'\n'}" | sed 's/^ *//; s/ .*//' | grep -m1 "^$2" ||
		tb5_die "no '$2*' in: $1"
}

# --- 6.1: Debian 12 -----------------------------------------------------------

prepare_61() {
	local hdr kver pkgver dl try

	tb5_banner "kernels: 6.1 (Debian 12)"
	tb5_install_deps "${TB5_DEPS_KERNEL[@]}"
	for try in first upgraded; do
		# The installed meta-package names the headers and so the release.
		hdr=$(dep_of "$(dpkg-query -W -f='${Depends}' linux-headers-amd64)" linux-headers-)
		kver=${hdr#linux-headers-}
		pkgver=$(dpkg-query -W -f='${Version}' "$hdr")
		if is_ready 6.1 && [[ $TB5_K_VER == "$kver" ]]; then
			echo "cached: $kver"
			return 0
		fi
		dl=$(mktemp -d "$TB5_KCACHE/dl.XXXXXX")
		if (cd "$dl" && tb5_retry tb5_apt_get -o APT::Sandbox::User=root \
			download "linux-image-$kver=$pkgver"); then
			break
		fi
		rm -rf "$dl"
		[[ $try == first ]] || tb5_die "cannot download linux-image-$kver=$pkgver"
		# The mirror has moved past the installed headers (a point
		# release): upgrade them and take the image that matches.
		echo "linux-image-$kver=$pkgver is gone from the mirror: upgrading the headers"
		tb5_retry tb5_apt_get update
		tb5_retry tb5_apt_get install -y --no-install-recommends linux-headers-amd64
	done
	extract_debs "$TB5_KCACHE/roots/$kver" "$dl"/*.deb
	rm -rf "$dl"
	depmod_root "$TB5_KCACHE/roots/$kver" "$kver"
	write_env 6.1 "TB5_K_VER=$kver" "TB5_K_ROOT=$TB5_KCACHE/roots/$kver" \
		"TB5_K_BUILD=/lib/modules/$kver/build" TB5_K_HEADERS= TB5_K_CHROOT=
}

# --- 6.12: bookworm-backports -------------------------------------------------

BPO=$TB5_KCACHE/apt-bpo
BPO_APT=(-o "Dir::Etc::sourcelist=$BPO/sources.list" -o Dir::Etc::sourceparts=-
	-o "Dir::State::Lists=$BPO/lists" -o "Dir::Cache=$BPO/cache"
	-o APT::Sandbox::User=root)

prepare_612() {
	local kver hdrs dl deps common kbuild hdir

	tb5_banner "kernels: 6.12 (bookworm-backports)"
	# Kbuild of the backports kernel runs the host's gcc-12 and pahole (its
	# BTF step; CONFIG_PAHOLE_VERSION=124 is bookworm's pahole).
	tb5_install_deps "${TB5_DEPS_KERNEL[@]}"
	if is_ready 6.12; then
		echo "cached: $TB5_K_VER"
		return 0
	fi
	mkdir -p "$BPO/lists/partial" "$BPO/cache/archives/partial"
	echo "deb [signed-by=$KEYRING] $MIRROR bookworm-backports main" >"$BPO/sources.list"
	tb5_retry tb5_apt_get "${BPO_APT[@]}" update

	dl=$(mktemp -d "$TB5_KCACHE/dl.XXXXXX")
	(cd "$dl" && tb5_retry tb5_apt_get "${BPO_APT[@]}" download \
		linux-image-amd64/bookworm-backports linux-headers-amd64/bookworm-backports)
	kver=$(dep_of "$(dpkg-deb -f "$dl"/linux-image-amd64_*.deb Depends)" linux-image-)
	kver=${kver#linux-image-}
	hdrs=$(dep_of "$(dpkg-deb -f "$dl"/linux-headers-amd64_*.deb Depends)" linux-headers-)
	[[ $hdrs == "linux-headers-$kver" ]] ||
		tb5_die "backports' image ($kver) and headers ($hdrs) disagree"
	rm -f "$dl"/*.deb
	(cd "$dl" && tb5_retry tb5_apt_get "${BPO_APT[@]}" download \
		"linux-image-$kver/bookworm-backports" "$hdrs/bookworm-backports")
	deps=$(dpkg-deb -f "$dl/$hdrs"_*.deb Depends)
	common=$(dep_of "$deps" linux-headers-)
	kbuild=$(dep_of "$deps" linux-kbuild-)
	mkdir "$dl/hdr"
	mv "$dl/$hdrs"_*.deb "$dl/hdr/"
	(cd "$dl/hdr" && tb5_retry tb5_apt_get "${BPO_APT[@]}" download \
		"$common/bookworm-backports" "$kbuild/bookworm-backports")

	extract_debs "$TB5_KCACHE/roots/$kver" "$dl"/linux-image-*.deb
	depmod_root "$TB5_KCACHE/roots/$kver" "$kver"
	extract_debs "$TB5_KCACHE/headers/$kver" "$dl"/hdr/*.deb
	rm -rf "$dl"
	# The arch headers' Makefile includes the common headers by absolute
	# path (/usr/src/...): point it into the extracted tree. Its scripts/ and
	# tools/ symlinks are relative and resolve there already.
	hdir=$TB5_KCACHE/headers/$kver/usr/src/linux-headers-$kver
	sed -i "s|^include /usr/src/|include $TB5_KCACHE/headers/$kver/usr/src/|" "$hdir/Makefile"
	grep -q "^include $TB5_KCACHE/" "$hdir/Makefile" ||
		tb5_die "unexpected $hdir/Makefile: $(cat "$hdir/Makefile")"
	write_env 6.12 "TB5_K_VER=$kver" "TB5_K_ROOT=$TB5_KCACHE/roots/$kver" \
		"TB5_K_BUILD=$hdir" "TB5_K_HEADERS=$TB5_KCACHE/headers/$kver" TB5_K_CHROOT=
}

# --- sid ----------------------------------------------------------------------

SID=$TB5_KCACHE/sid
# openssl: DKMS signs the module with a throwaway key, as on the host.
SID_PKGS=(gcc make kmod dkms openssl xz-utils linux-headers-amd64)

# sid_missing: prints the packages of SID_PKGS not installed in the chroot
# (dpkg-query prints nothing at all for a package it never heard of).
sid_missing() {
	local installed pkg

	# shellcheck disable=SC2016  # dpkg's format
	installed=$(tb5_chroot "$SID" dpkg-query -W -f='${db:Status-Status} ${Package}\n' \
		2>/dev/null | awk '$1 == "installed" { print $2 }')
	for pkg in "${SID_PKGS[@]}"; do
		grep -qx "$pkg" <<<"$installed" || echo "$pkg"
	done
}

# shellcheck disable=SC2016  # dpkg's formats; inner shells expand the rest
prepare_sid() {
	local kver pkgver dl

	tb5_banner "kernels: sid"
	tb5_install_deps "${TB5_DEPS_KERNEL[@]}"
	if is_ready sid && [[ -z $(sid_missing) ]]; then
		echo "cached: $TB5_K_VER"
		return 0
	fi
	if [[ ! -f $SID/.tb5-bootstrapped ]]; then
		rm -rf "$SID"
		# debootstrap downloads everything again on a retry: start clean.
		tb5_retry bash -c 'rm -rf "$1" && debootstrap --variant=minbase sid "$1" "$2"' \
			_ "$SID" "$MIRROR"
		touch "$SID/.tb5-bootstrapped"
	fi
	# sid's Release file is at times past its Valid-Until on the mirror.
	cat >"$SID/etc/apt/apt.conf.d/99tb5-ci" <<-'EOF'
		Acquire::Check-Valid-Until "false";
		APT::Install-Recommends "false";
		APT::Sandbox::User "root";
		DPkg::Lock::Timeout "600";
	EOF
	tb5_retry tb5_chroot "$SID" apt-get -q update
	tb5_retry tb5_chroot "$SID" env DEBIAN_FRONTEND=noninteractive \
		apt-get -q install -y "${SID_PKGS[@]}"

	pkgver=$(tb5_chroot "$SID" dpkg-query -W -f='${Version}\n' linux-headers-amd64)
	kver=$(dep_of "$(tb5_chroot "$SID" dpkg-query -W -f='${Depends}\n' linux-headers-amd64)" \
		linux-headers-)
	kver=${kver#linux-headers-}
	# sid packages the kernel as linux-binary (vmlinuz), linux-modules and
	# linux-base (System.map, config) behind linux-image-<kver>.
	dl=/var/tmp/tb5-debs
	rm -rf "$SID$dl"
	mkdir -p "$SID$dl"
	tb5_retry tb5_chroot "$SID" sh -c 'cd "$1" && shift && apt-get -q download "$@"' _ "$dl" \
		"linux-binary-$kver=$pkgver" "linux-modules-$kver=$pkgver" "linux-base-$kver=$pkgver"
	extract_debs "$TB5_KCACHE/roots/$kver" "$SID$dl"/*.deb
	rm -rf "${SID:?}$dl"
	depmod_root "$TB5_KCACHE/roots/$kver" "$kver"
	write_env sid "TB5_K_VER=$kver" "TB5_K_ROOT=$TB5_KCACHE/roots/$kver" \
		"TB5_K_BUILD=/lib/modules/$kver/build" TB5_K_HEADERS= "TB5_K_CHROOT=$SID"
}

# prune: removes the images and headers no prepared kernel refers to any
# more (left by a kernel that a newer one replaced).
prune() {
	local dir label
	local -A keep=()

	for label in "${TB5_KLABELS[@]}"; do
		[[ -f $TB5_KCACHE/kernels/$label.env ]] || continue
		tb5_kernel_env "$label"
		keep[$TB5_K_ROOT]=1
		[[ -z $TB5_K_HEADERS ]] || keep[$TB5_K_HEADERS]=1
	done
	for dir in "$TB5_KCACHE"/roots/* "$TB5_KCACHE"/headers/*; do
		[[ -d $dir && -z ${keep[$dir]:-} ]] || continue
		echo "removing $dir (no prepared kernel uses it)"
		rm -rf "$dir"
	done
}

# --- main ---------------------------------------------------------------------

main() {
	local label start=$SECONDS labels=("$@")

	((${#labels[@]})) || labels=("${TB5_KLABELS[@]}")

	mkdir -p "$TB5_KCACHE"
	# One preparer at a time: CI jobs and developers share the cache.
	exec 9>"$TB5_KCACHE/.lock"
	flock -n 9 || { echo "waiting for another ci/kernels.sh ($TB5_KCACHE/.lock)"; flock 9; }
	rm -rf "$TB5_KCACHE"/dl.*
	tb5_install_deps "${TB5_DEPS_KERNEL[@]}"
	MIRROR=$(tb5_mirror)
	echo "mirror: $MIRROR, cache: $TB5_KCACHE"

	for label in "${labels[@]}"; do
		case $label in
		6.1) prepare_61 ;;
		6.12) prepare_612 ;;
		sid) prepare_sid ;;
		*) tb5_die "unknown kernel '$label' (known: ${TB5_KLABELS[*]})" ;;
		esac
	done

	prune

	tb5_banner "kernels: prepared in $(tb5_fmt_secs $((SECONDS - start)))"
	for label in "${labels[@]}"; do
		tb5_kernel_env "$label"
		printf '%-5s %-24s image %s\n      %-24s build %s%s\n' "$label" "$TB5_K_VER" \
			"$(tb5_kernel_image "$TB5_K_ROOT")" "" \
			"${TB5_K_CHROOT:+$TB5_K_CHROOT:}" "$TB5_K_BUILD"
	done
}

main "$@"
