#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ci/rpm-install.sh [--dnf] - tb5's rpms (ci/package.sh rpm,
# build-pkg-rpm/packages) installed, upgraded and erased for real by rpm in a
# booted Debian 12 (the cached base system of ci/package-install.sh,
# $TB5_KCACHE/pkg-base/, unpacked into build-rpm-root/root, with Debian's rpm
# and dkms installed by apt and the rpms of three releases in /srv/rpms):
# the system boots under QEMU with its own kernel, systemd and udev, and
# ci/vm/rpm-guest.sh runs there as a systemd service:
#
#   1. rpm -i of every rpm: the scriptlets run (%post: group tb5, the udev
#      rule applied; %posttrans: DKMS builds and installs tb5.ko for the
#      running kernel; the exporter's unit preset); modprobe tb5, the
#      nodes, tb5-selftest and the exporter checked
#   2. /etc/modprobe.d/tb5.conf edited, then rpm -U to the same tree
#      packaged again as release 2 (CPack, no rebuild): the edit survives
#      (%config(noreplace)) and takes effect on the next load; DKMS has tb5
#      again after the old %preun and the new %posttrans; the new %post
#      applies the rule to the loaded module's nodes; the running exporter
#      is restarted
#   3. rpm -U to release 3, whose packaged tb5.conf changed: the edit stays,
#      release 3's file is written as tb5.conf.rpmnew
#   4. rpm -e of every tb5 package: the exporter stopped and disabled,
#      DKMS's entry, the module, /usr/src/tb5-*, the udev rule and the group
#      are gone; the edited conffile is kept as tb5.conf.rpmsave, as rpm does
#
# What is forced, and why: rpm -i and rpm -U run with --nodeps. The rpmdb of
# this system holds tb5's packages only: what they require from the
# distribution (dkms, shadow-utils, /bin/sh, libc.so.6, libstdc++.so.6,
# libmicrohttpd.so.12, ...) is installed by dpkg, which rpm cannot see. The
# requirements among tb5's own packages are checked all the same: rpm -e runs
# without --nodeps, and every step checks `rpm -q --requires` of tb5's
# packages is met by tb5's packages (--nodeps hides only the distribution's).
# Nothing else is forced (no --force, --replacefiles, --noscripts). The
# rpms have an RPM distribution's layout (libraries in /usr/lib64), which
# Debian's loader does not search: the system gets
# /etc/ld.so.conf.d/rpm-lib64.conf naming /usr/lib64, as an RPM
# distribution's loader has it built in (tb5-libs's %post runs ldconfig).
#
# --dnf adds dnf in a chroot of the same system as it was before the boot
# (the VM's disk is a snapshot: see dnf_test below), then dnf against the signed
# repository of ci/release.sh --rpm with gpgcheck=1 and repo_gpgcheck=1,
# and a copy of it altered after signing refused (dnf_signed).
#
# Needs root (re-runs itself through sudo otherwise). Work directory: build-rpm-root/ (console.log: the booted
# system's console). Knobs: TB5_KCACHE, and the VM's of ci/vm/boot-lib.sh
# (TB5_VM_TIMEOUT, default 1800 s here: DKMS builds tb5.ko three times under
# TCG).
# shellcheck disable=SC2016  # the inner shells' arguments
set -euo pipefail
# shellcheck source=ci/kernel-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/kernel-lib.sh"
# shellcheck source=ci/vm/boot-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/vm/boot-lib.sh"
# shellcheck source=ci/vm/system-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/vm/system-lib.sh"
cd "$TB5_ROOT"

RPM_BUILD=$TB5_ROOT/build-pkg-rpm
RPMS=$RPM_BUILD/packages
DEBS=$TB5_ROOT/build-pkg-deb/packages
WORK=$TB5_ROOT/build-rpm-root
ROOT=$WORK/root
ARCHIVES=$TB5_KCACHE/pkg-apt-archives
CONF=/etc/modprobe.d/tb5.conf
# The guest's test service (ci/vm/system-lib.sh), also run in the chroot
# for its check of what is installed.
GUEST=tb5-rpm-guest


in_root() {
	tb5_chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive "$@"
}

# The same tree packaged again as release 2 and as release 3 (a configure
# and cpack of build-pkg-rpm, no compiling), then back to release 1.
# Release 3's /etc/modprobe.d/tb5.conf has one more comment line (a CPack
# pre-build script appends it to the staged file): a packaged conffile that
# changed, for rpm's .rpmnew.
release23() {
	local r out
	cat >"$WORK/conf-changed.cmake" <<-'EOS'
		file(GLOB_RECURSE _c "${CPACK_TEMPORARY_DIRECTORY}/*/etc/modprobe.d/tb5.conf")
		foreach(_f IN LISTS _c)
		  file(APPEND ${_f} "# release 3 (ci/rpm-install.sh)\n")
		endforeach()
	EOS
	for r in 2 3; do
		out=$WORK/rpms-$r
		rm -rf "$out" "$RPM_BUILD/_CPack_Packages"
		cmake -B "$RPM_BUILD" -DTB5_PACKAGE_RELEASE=$r >/dev/null
		local -a extra=()
		((r == 2)) || extra=(-D "CPACK_PRE_BUILD_SCRIPTS=$WORK/conf-changed.cmake")
		(cd "$RPM_BUILD" && cpack -B "$out" "${extra[@]}" >"$WORK/cpack-$r.log" 2>&1) ||
			{ cmake -B "$RPM_BUILD" -DTB5_PACKAGE_RELEASE=1 >/dev/null; tb5_die "cpack of release $r failed ($WORK/cpack-$r.log)"; }
		rm -rf "$out/_CPack_Packages"
		echo "release $r: $(find "$out" -name '*.rpm' | wc -l) rpms in $out"
	done
	cmake -B "$RPM_BUILD" -DTB5_PACKAGE_RELEASE=1 >/dev/null
}

# The distribution's packages that tb5's packages need: what CPack's debs
# (build-pkg-deb/packages) depend on beyond tb5's own, the first of each
# alternative, without versions (one per line). The rpms need the same
# (rpm -qpR: dkms, shadow-utils, the same sonames).
dist_deps() {
	local f
	for f in "$DEBS"/*.deb; do
		dpkg-deb -f "$f" Depends
	done | tr ',' '\n' | sed 's/([^)]*)//g; s/|.*//; s/ //g' | grep -v '^$' |
		grep -vE '^(lib)?tb5' | sort -u
}

prepare_root() {
	tb5_sys_unpack "$ROOT"
	if [[ -d $ARCHIVES ]]; then
		find "$ARCHIVES" -name '*.deb' -exec cp -t "$ROOT/var/cache/apt/archives/" {} +
	fi
	tb5_retry in_root apt-get -q update
	# rpm itself; what the rpms need from the distribution, which an RPM
	# distribution's dnf would install and Debian's apt installs here
	# (dist_deps: dkms with the compiler, the libraries; the kernel's
	# headers are in the base system); dnf for --dnf.
	local -a deps
	mapfile -t deps < <(dist_deps)
	echo "the distribution's packages the rpms need (the debs' dependencies): ${deps[*]}"
	tb5_retry in_root apt-get -q install -y rpm "${deps[@]}" "$@" </dev/null
	# Kept for the next run (a fresh machine runs this before
	# package-install.sh, which shares the directory, has made it).
	mkdir -p "$ARCHIVES"
	find "$ROOT/var/cache/apt/archives" -name '*.deb' -exec cp -n -t "$ARCHIVES/" {} +
	KVER=$(tb5_sys_kver "$ROOT")
	echo "the system's kernel: $KVER; $(in_root rpm --version)"
	in_root rpm --initdb
	echo /usr/lib64 >"$ROOT/etc/ld.so.conf.d/rpm-lib64.conf"
	mkdir -p "$ROOT/srv/rpms/1" "$ROOT/srv/rpms/2" "$ROOT/srv/rpms/3"
	cp "$RPMS"/*.rpm "$ROOT/srv/rpms/1/"
	cp "$WORK"/rpms-2/*.rpm "$ROOT/srv/rpms/2/"
	cp "$WORK"/rpms-3/*.rpm "$ROOT/srv/rpms/3/"
	tb5_sys_guest "$ROOT" "$GUEST" "$TB5_ROOT/ci/vm/rpm-guest.sh"
}

# The booted system: rpm -i, -U, -U, -e (ci/vm/rpm-guest.sh).
boot_test() {
	tb5_sys_image "$ROOT" "$WORK/root.img"
	TB5_VM_TIMEOUT=${TB5_VM_TIMEOUT:-1800} tb5_sys_boot "$ROOT" "$WORK/root.img" "$KVER" \
		"$WORK/console.log" rpm-guest.sh
	grep -a '^guest: .* took ' "$WORK/console.log" | sed 's/^/    /'
}

# check_installed RELEASE RING: the guest script's check, in the chroot.
check_installed() {
	in_root env TB5_GUEST_SERVICE=0 TB5_GUEST_KVER="$KVER" "/usr/local/sbin/$GUEST" installed "$1" "$2"
}

# --dnf: the same system (as it was before the boot) through dnf, from a repository
# made by createrepo_c over the rpms of both releases: dnf install
# tb5-nccl-minimal must resolve exactly the minimal set, dnf upgrade takes
# it to release 2 and 3 (the unedited conffile replaced, no .rpmnew), dnf remove of the meta-package takes the rest with it
# (clean_requirements_on_remove). What the rpms require from the
# distribution is provided by a stub package built here,
# tb5-ci-debian-provides, which Provides every such requirement (dkms,
# shadow-utils, /bin/sh, the sonames): the stand-in for the distribution's
# repository, which this Debian system does not have.
MINIMAL=(tb5-dkms tb5-libs tb5-nccl-minimal tb5-nccl-plugin tb5-tools)

stub_rpm() {
	local top=$WORK/stub spec req
	rm -rf "$top"
	mkdir -p "$top/SPECS"
	spec=$top/SPECS/stub.spec
	{
		echo "Name: tb5-ci-debian-provides"
		echo "Version: 1"
		echo "Release: 1"
		echo "Summary: What Debian provides to tb5's rpms (ci/rpm-install.sh)"
		echo "License: MIT"
		echo "BuildArch: noarch"
		rpm -qpR "$RPMS"/*.rpm "$WORK"/rpms-2/*.rpm 2>/dev/null | sed 's/ *$//' | sort -u |
			grep -vE '^(rpmlib\(|config\(|(lib)?tb5)' | while IFS= read -r req; do
				echo "Provides: $req"
			done
		echo "%description"
		echo "Stand-in for the distribution's packages."
		echo "%files"
	} >"$spec"
	rpmbuild --quiet -bb --define "_topdir $top" "$spec" >"$WORK/stub.log" 2>&1 ||
		tb5_die "rpmbuild of the stub failed ($WORK/stub.log)"
	echo "stub: $(grep -c '^Provides:' "$spec") provides"
}

dnf_repo() {
	local repo=$ROOT/srv/repo
	rm -rf "$repo"
	mkdir -p "$repo"
	cp "$@" "$repo/"
	createrepo_c --quiet "$repo"
}

dnf_in_root() {
	in_root dnf -y -q --setopt=reposdir=/dev/null --setopt=install_weak_deps=False \
		--setopt=cachedir=/var/cache/dnf-tb5 --releasever=12 --disableplugin='*' \
		--repofrompath=tb5,file:///srv/repo --repo=tb5 --nogpgcheck "$@" </dev/null
}

dnf_test() {
	local got want
	stub_rpm
	dnf_repo "$RPMS"/*.rpm "$WORK"/stub/RPMS/noarch/*.rpm
	dnf_in_root install tb5-ci-debian-provides
	dnf_in_root install tb5-nccl-minimal
	got=$(in_root rpm -qa --qf '%{NAME}\n' 'tb5*' | grep -v '^tb5-ci-' | sort | tr '\n' ' ')
	want=$(printf '%s\n' "${MINIMAL[@]}" | sort | tr '\n' ' ')
	[[ $got == "$want" ]] || tb5_die "dnf install tb5-nccl-minimal gave '$got', expected '$want'"
	echo "dnf install tb5-nccl-minimal: $got"
	check_installed 1 4096
	dnf_repo "$RPMS"/*.rpm "$WORK"/rpms-2/*.rpm "$WORK"/stub/RPMS/noarch/*.rpm
	dnf_in_root --refresh upgrade
	check_installed 2 4096
	dnf_repo "$WORK"/rpms-3/*.rpm "$WORK"/stub/RPMS/noarch/*.rpm
	dnf_in_root --refresh upgrade
	check_installed 3 4096
	[[ ! -e $ROOT$CONF.rpmnew ]] || tb5_die "dnf upgrade of an unedited $CONF left a .rpmnew"
	grep -qx '# release 3 (ci/rpm-install.sh)' "$ROOT$CONF" ||
		tb5_die "dnf upgrade did not replace the unedited $CONF with release 3's"
	dnf_in_root remove tb5-nccl-minimal
	got=$(in_root rpm -qa --qf '%{NAME}\n' 'tb5*' | grep -v '^tb5-ci-' || true)
	[[ -z $got ]] || tb5_die "dnf remove tb5-nccl-minimal left: $got"
	[[ -z $(in_root dkms status -m tb5) ]] || tb5_die "DKMS still has tb5 after dnf remove"
	echo "dnf: install resolved the minimal set, upgrades to releases 2 and 3 (unedited conffile replaced), remove took the set and DKMS's entry"
}

# dnf_from NAME ARGS...: dnf with the repository of /etc/tb5-NAME.repos.d
# alone (gpgcheck=1, repo_gpgcheck=1), a cache of its own.
dnf_from() {
	local name=$1
	shift
	in_root dnf -y --setopt=reposdir="/etc/tb5-$name.repos.d" --setopt=install_weak_deps=False \
		--setopt=cachedir="/var/cache/dnf-tb5-$name" --releasever=12 --disableplugin='*' \
		"$@" </dev/null
}

# The signed dnf repository of ci/release.sh --rpm, as an operator's
# tb5.repo points at it: gpgcheck=1 and repo_gpgcheck=1 with the key the
# repository carries; dnf installs the minimal set from it (the stub
# installed above stands for the distribution), then refuses a copy whose
# repomd.xml was altered after signing.
dnf_signed() {
	# A release of its own under WORK: this script runs as root, and
	# build-release/ belongs to ci/release.sh's own stage, which a user
	# who may use sudo runs as themself (files root made there stop it).
	local signed=$WORK/release/rpm got out dir
	"$TB5_ROOT/ci/release.sh" --rpm --out "$WORK/release" >"$WORK/release.log" 2>&1 ||
		tb5_die "ci/release.sh --rpm failed ($WORK/release.log)"
	for dir in signed tampered; do
		rm -rf "${ROOT:?}/srv/$dir" "$ROOT/etc/tb5-$dir.repos.d"
		cp -a "$signed" "$ROOT/srv/$dir"
		mkdir -p "$ROOT/etc/tb5-$dir.repos.d"
		cat >"$ROOT/etc/tb5-$dir.repos.d/tb5.repo" <<-EOF
			[tb5-$dir]
			name=tb5 ($dir)
			baseurl=file:///srv/$dir
			enabled=1
			gpgcheck=1
			repo_gpgcheck=1
			gpgkey=file:///srv/$dir/RPM-GPG-KEY-tb5
		EOF
	done
	sed -i 's#</repomd>#<!-- altered after signing --></repomd>#' "$ROOT/srv/tampered/repodata/repomd.xml"
	dnf_from signed -q install tb5-nccl-minimal
	got=$(in_root rpm -qa --qf '%{NAME}\n' 'tb5*' | grep -v '^tb5-ci-' | sort | tr '\n' ' ')
	[[ $got == "$(printf '%s\n' "${MINIMAL[@]}" | sort | tr '\n' ' ')" ]] ||
		tb5_die "dnf install from the signed repository gave '$got'"
	in_root rpm -q --qf '%{NAME} %{RSAHEADER:pgpsig}\n' "${MINIMAL[@]}" | tee "$WORK/signatures"
	! grep -q '(none)' "$WORK/signatures" || tb5_die "an rpm installed from the signed repository has no signature"
	echo "dnf with gpgcheck=1 repo_gpgcheck=1: installed $got from the signed repository, every rpm signed"
	dnf_from signed -q remove tb5-nccl-minimal
	if out=$(dnf_from tampered install tb5-nccl-minimal 2>&1); then
		tb5_die "dnf installed from a repository whose repomd.xml was altered after signing"
	fi
	grep -i 'gpg\|signature' <<<"$out" | head -n 3
	grep -qi 'gpg\|signature' <<<"$out" ||
		tb5_die "dnf refused the altered repository, but not for its signature: $out"
	echo "dnf refused the repository whose repomd.xml was altered after signing"
}

main() {
	local start=$SECONDS dnf=0 more=()
	[[ ${1:-} != --dnf ]] || { dnf=1; more=(dnf); }
	tb5_install_deps "${TB5_DEPS_RPM[@]}"
	[[ -n $(find "$RPMS" -name '*.rpm' 2>/dev/null) ]] ||
		tb5_die "no rpms in $RPMS: run ci/package.sh rpm first"
	[[ -n $(find "$DEBS" -name '*.deb' 2>/dev/null) ]] ||
		tb5_die "no debs in $DEBS: run ci/package.sh deb (they name the distribution's packages the rpms need)"
	mkdir -p "$WORK"
	tb5_timed "releases 2 and 3 of the same tree (cpack)" release23
	tb5_timed "fresh Debian 12 with rpm, dkms ${more[*]}" prepare_root "${more[@]}"
	tb5_timed "booted (QEMU TCG): rpm -i, edit, rpm -U, rpm -U, rpm -e" boot_test
	((dnf == 0)) || tb5_timed "dnf install, upgrade, remove (createrepo_c)" dnf_test
	((dnf == 0)) || tb5_timed "dnf from the signed repository (ci/release.sh --rpm)" dnf_signed
	tb5_banner "rpm-install: summary ($(tb5_fmt_secs $((SECONDS - start))))"
	printf '%s\n' "${TB5_STEP_TIMES[@]}"
	((SYS_BOOT_RETRIES == 0)) || printf '%s\n' "${SYS_BOOT_RETRY_LINES[@]}"
	echo "rpm-install: passed ($SYS_BOOT_RETRIES VM boot(s) retried)"
}

# Root for apt-get, chroot and the booted system's files: through sudo when
# not root, as the other scripts that need it do.
tb5_rerun_as_root "$@"
main "$@"
