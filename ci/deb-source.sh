#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ci/deb-source.sh [--autopkgtest] - tb5 as a Debian source package built with debhelper
# (issue 15), beside CPack's debs (ci/package.sh deb):
#
#   1. a clean export of the tree (git archive of HEAD, or of the working
#      tree's uncommitted state where there is one: git stash create) as
#      tb5_<version>.orig.tar.xz; <version> is CMakeLists.txt's
#      project(VERSION), the Debian revision TB5_PACKAGE_RELEASE (1)
#   2. packaging/debian-src/debian placed as debian/ in it, with
#      debian/copyright from packaging/debian/copyright and debian/changelog
#      from packaging/debian/changelog.in (the files CPack uses)
#   3. dpkg-buildpackage -us -uc -S (the source package) and -b (the debs)
#   4. lintian --pedantic over the source package and the debs: any error
#      or warning fails; pedantic and info tags are printed (the accepted
#      ones are listed in packaging/README.md)
#   5. with --autopkgtest: debian/tests/control run by autopkgtest over the
#      debs just built, in a chroot of a fresh Debian 12 (the cached base
#      system of ci/package-install.sh, $TB5_KCACHE/pkg-base/):
#      dkms-autopkgtest must pass; module-selftest (isolation-machine: it
#      loads the module) is skipped there, which autopkgtest's exit code 2
#      says and nothing else may
#   6. with --autopkgtest also: module-selftest on a machine testbed,
#      autopkgtest-virt-qemu, as Debian's CI runs isolation-machine tests:
#      a fresh Debian 12 (the same base system) prepared by autopkgtest's
#      own setup-testbed (a root shell on ttyS1 for autopkgtest, its apt
#      configuration) with the test's distribution dependencies installed
#      beforehand (dkms, the compiler, the headers: nothing to download
#      under TCG), booted under QEMU TCG with its own kernel
#      (ci/vm/autopkgtest-qemu); autopkgtest installs the debs just built
#      there (tb5-dkms's postinst has DKMS build tb5.ko), and the test loads
#      the module, checks the conffile, the nodes and tb5-selftest: it must
#      pass, not be skipped
#
# Output: build-deb-src/ (the .dsc, the tarballs, the .changes, the debs).
# ci/deb-compare.sh then compares the debs with CPack's.
set -euo pipefail
# shellcheck source=ci/kernel-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/kernel-lib.sh"
# shellcheck source=ci/vm/system-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/vm/system-lib.sh"
cd "$TB5_ROOT"

OUT=$TB5_ROOT/build-deb-src
REV=${TB5_PACKAGE_RELEASE:-1}

version() {
	sed -n 's/^project(tb5 VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt
}

# autopkgtest DIR: the tests of DIR's debian/tests/control over the debs
# of $OUT, in a fresh Debian 12 chroot ($OUT/autopkgtest-root), with /proc
# and a /dev/pts of its own in a private mount namespace.
run_autopkgtest() {
	local dir=$1 root=$OUT/autopkgtest-root rc=0
	tb5_install_deps "${TB5_DEPS_AUTOPKGTEST[@]}"
	rm -rf "$OUT/autopkgtest-out"
	tb5_sys_unpack "$root"
	# shellcheck disable=SC2016  # the inner shell expands them
	unshare -m --propagation private -- sh -c '
		mount -t proc proc "$1/proc" && mount -t devpts -o newinstance,ptmxmode=0666 devpts "$1/dev/pts" || exit 99
		r=$1 d=$2 o=$3
		shift 3
		exec autopkgtest -U -B "$@" "$d/" --output-dir "$o" -- chroot "$r"
	' tb5-autopkgtest "$root" "$dir" "$OUT/autopkgtest-out" "$OUT"/*.deb \
		>"$OUT/autopkgtest.log" 2>&1 || rc=$?
	grep -E '^(dkms-autopkgtest|module-selftest) |^I: (PASS|FAIL|SKIP) ' "$OUT/autopkgtest.log" | sort -u
	# 0: all passed; 2: some skipped (module-selftest needs a machine).
	if ((rc != 0 && rc != 2)) || ! grep -q '^dkms-autopkgtest *PASS' "$OUT/autopkgtest.log"; then
		tail -n 40 "$OUT/autopkgtest.log"
		tb5_die "autopkgtest failed (exit $rc; log: $OUT/autopkgtest.log)"
	fi
	echo "autopkgtest: dkms-autopkgtest passed (exit $rc)"
}

# autopkgtest_machine: the source package's module-selftest (the .dsc of
# $OUT: the testbed unpacks it, as Debian's CI does) over the debs of $OUT
# in a QEMU testbed (autopkgtest-virt-qemu).
autopkgtest_machine() {
	local root=$OUT/autopkgtest-machine img=$OUT/autopkgtest-machine.img kver rc=0 attempt
	local log=$OUT/autopkgtest-machine.log
	tb5_install_deps "${TB5_DEPS_AUTOPKGTEST[@]}"
	rm -rf "$OUT/autopkgtest-machine-out"
	tb5_sys_unpack "$root"
	tb5_retry tb5_chroot "$root" apt-get -q update
	# The test's dependencies from the distribution (debian/tests/control)
	# and tb5-dkms's (dkms, the compiler), installed natively here.
	tb5_retry tb5_chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get -q install -y \
		dkms build-essential kmod linux-headers-amd64 </dev/null
	# As autopkgtest-build-qemu prepares its images.
	MIRROR=$(tb5_mirror) RELEASE=bookworm /usr/share/autopkgtest/setup-commands/setup-testbed "$root" \
		>"$OUT/setup-testbed.log" 2>&1 || { tail -n 20 "$OUT/setup-testbed.log"; tb5_die "setup-testbed failed"; }
	kver=$(tb5_sys_kver "$root")
	echo "/dev/vda / ext4 rw,relatime 0 1" >"$root/etc/fstab"
	tb5_sys_image "$root" "$img" 1024
	cp "$root/boot/vmlinuz-$kver" "$root/boot/initrd.img-$kver" "$OUT/"
	rm -rf "$root"
	echo "testbed: Debian 12, kernel $kver"
	# autopkgtest-virt-qemu gives the testbed's root shell 5 s to answer
	# each of its first commands (setup_config), which a TCG guest sharing
	# its core with another lane of ci/test.sh may miss: a testbed failure
	# (exit 16) before any test ran is retried, twice at most, each time
	# from the unchanged image (autopkgtest boots an overlay of it).
	for attempt in 1 2 3; do
		rc=0
		rm -rf "$OUT/autopkgtest-machine-out"
		TB5_APT_KERNEL=$OUT/vmlinuz-$kver TB5_APT_INITRD=$OUT/initrd.img-$kver \
			timeout 1500 autopkgtest -B --test-name=module-selftest "$OUT"/*.dsc "$OUT"/*.deb \
			--output-dir "$OUT/autopkgtest-machine-out" --timeout-test=900 -- \
			qemu --qemu-command "$TB5_ROOT/ci/vm/autopkgtest-qemu" --qemu-architecture x86_64 \
			--qemu-options='-cpu max' --boot=none --cpus 2 --ram-size 2048 --timeout-reboot 600 \
			"$img" >"$log" 2>&1 || rc=$?
		if ((rc != 16 || attempt == 3)) || grep -q '^module-selftest ' "$log"; then
			break
		fi
		echo "autopkgtest: testbed failure before the test (attempt $attempt):" \
			"$(grep -m1 -E 'Timeout|testbed failure' "$log")"
		cp "$log" "$log.attempt$attempt"
	done
	grep -E '^module-selftest |^I: ' "$log" | sort -u
	if ((rc != 0)) || ! grep -q '^module-selftest *PASS' "$log"; then
		tail -n 60 "$log"
		tb5_die "module-selftest on the machine testbed failed (exit $rc; log: $log)"
	fi
	grep -E '^(PASS|tb5-selftest|[0-9]+ passed)' "$OUT/autopkgtest-machine-out/module-selftest-stdout" 2>/dev/null | tail -n 3 || true
	echo "autopkgtest: module-selftest passed on a QEMU machine testbed (kernel $kver)"
	rm -f "$img" "$OUT/vmlinuz-$kver" "$OUT/initrd.img-$kver"
}

main() {
	local v tree date dir rc=0 out e w apt=0
	[[ ${1:-} != --autopkgtest ]] || apt=1

	tb5_install_deps "${TB5_DEPS_DEBSRC[@]}"
	v=$(version)
	[[ -n $v ]] || tb5_die "no project(tb5 VERSION ...) in CMakeLists.txt"
	tree=$(git stash create)
	tree=${tree:-HEAD}
	date=$(git log -1 --format=%ct HEAD)
	rm -rf "$OUT"
	mkdir -p "$OUT"
	dir=$OUT/tb5-$v
	git archive --format=tar --prefix="tb5-$v/" "$tree" | xz -T0 -6 >"$OUT/tb5_$v.orig.tar.xz"
	tar -C "$OUT" -xf "$OUT/tb5_$v.orig.tar.xz"
	cp -a "$dir/packaging/debian-src/debian" "$dir/debian"
	cp "$dir/packaging/debian/copyright" "$dir/debian/copyright"
	sed -e "s/@TB5_DEB_VERSION@/$v-$REV/" -e "s/@PROJECT_VERSION@/$v/" \
		-e "s/@TB5_PACKAGE_RELEASE@/$REV/" \
		-e "s/@TB5_MAINTAINER@/The tb5 authors <tb5@tb5.invalid>/" \
		-e "s/@TB5_CHANGELOG_DATE@/$(LC_ALL=C date -u -d "@$date" '+%a, %d %b %Y %H:%M:%S +0000')/" \
		"$dir/packaging/debian/changelog.in" >"$dir/debian/changelog"
	echo "source package tb5 $v-$REV from $tree in $dir"

	tb5_banner "dpkg-buildpackage -S (source package)"
	(cd "$dir" && dpkg-buildpackage -us -uc -S -nc) >"$OUT/source.log" 2>&1 || {
		tail -n 40 "$OUT/source.log"
		tb5_die "dpkg-buildpackage -S failed (log: $OUT/source.log)"
	}
	tb5_banner "dpkg-buildpackage -b (binary packages)"
	(cd "$dir" && dpkg-buildpackage -us -uc -b -j"$TB5_JOBS") >"$OUT/binary.log" 2>&1 || {
		tail -n 60 "$OUT/binary.log"
		tb5_die "dpkg-buildpackage -b failed (log: $OUT/binary.log)"
	}
	(cd "$OUT" && ls -l -- *.dsc *.deb)

	tb5_banner "lintian --pedantic (source package and debs)"
	out=$(lintian --pedantic --display-info --tag-display-limit 0 \
		"$OUT/tb5_$v-${REV}_source.changes" "$OUT/tb5_$v-${REV}_$(dpkg --print-architecture).changes" 2>&1) || true
	[[ -n $out ]] && printf '%s\n' "$out"
	e=$(grep -c '^E: ' <<<"$out" || true)
	w=$(grep -c '^W: ' <<<"$out" || true)
	echo "lintian: $e errors, $w warnings, $(grep -c '^P: ' <<<"$out" || true) pedantic," \
		"$(grep -c '^I: ' <<<"$out" || true) info"
	((e == 0 && w == 0)) || rc=1
	if ((apt)); then
		tb5_banner "autopkgtest (chroot of a fresh Debian 12)"
		run_autopkgtest "$dir"
		tb5_banner "autopkgtest module-selftest (QEMU machine testbed, autopkgtest-virt-qemu)"
		autopkgtest_machine
	fi
	return "$rc"
}

# The autopkgtests unpack a root file system and chroot into it: root,
# through sudo when not root, as ci/lib.sh installs packages.
[[ ${1:-} != --autopkgtest ]] || tb5_rerun_as_root "$@"
main "$@"
