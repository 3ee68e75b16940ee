#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ci/package.sh [deb|rpm|lint]... - build tb5's packages with CPack and lint
# them (default: deb rpm lint).
#
#   deb   build-pkg-deb/ (prefix /usr, Debian's multiarch libdir, Debian's
#         hardening flags): the debs of this build in
#         build-pkg-deb/packages/ (the install test upgrades to them from
#         the previous release's, built by ci/prev-release.sh)
#   rpm   build-pkg-rpm/ (prefix /usr, libdir lib64): the rpms
#   lint  lintian over every deb (any error or warning fails; overrides
#         live in packaging/lintian/ with their reasons) and rpmlint over
#         every rpm (any error fails)
#
# Works as root or as a user with sudo (for apt-get only).
set -euo pipefail
# shellcheck source=ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TB5_ROOT"

DEB_DIR=$TB5_ROOT/build-pkg-deb
RPM_DIR=$TB5_ROOT/build-pkg-rpm

# The distribution's build flags, as a Debian package build would use them
# (with every hardening feature: PIE, bindnow).
flags() {
	DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get "$1"
}

configure() {
	local dir=$1
	shift
	if [[ -f $dir/CMakeCache.txt ]] &&
		! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$dir/CMakeCache.txt"; then
		rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
	fi
	cmake -S "$TB5_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_INSTALL_PREFIX=/usr -DBUILD_TESTING=OFF -DTB5_BUILD_BENCHMARKS=OFF \
		-DTB5_WERROR=ON -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
		-DCMAKE_C_FLAGS="$(flags CPPFLAGS) $(flags CFLAGS)" \
		-DCMAKE_CXX_FLAGS="$(flags CPPFLAGS) $(flags CXXFLAGS)" \
		-DCMAKE_EXE_LINKER_FLAGS="$(flags LDFLAGS)" \
		-DCMAKE_SHARED_LINKER_FLAGS="$(flags LDFLAGS)" \
		-DCMAKE_MODULE_LINKER_FLAGS="$(flags LDFLAGS)" "$@" >/dev/null
}

# cpack_into DIR OUT: the packages of DIR's current configuration in OUT.
cpack_into() {
	local dir=$1 out=$2
	rm -rf "$out" "$dir/_CPack_Packages"
	(cd "$dir" && cpack -B "$out" >"$dir/cpack.log" 2>&1) || {
		tail -n 40 "$dir/cpack.log"
		tb5_die "cpack failed (log: $dir/cpack.log)"
	}
	rm -rf "$out/_CPack_Packages"
}

build_deb() {
	tb5_install_deps "${TB5_DEPS_BUILD[@]}" "${TB5_DEPS_PACKAGE[@]}"
	configure "$DEB_DIR" -DTB5_PACKAGE=DEB -DTB5_PACKAGE_RELEASE=1
	cmake --build "$DEB_DIR" -j "$TB5_JOBS"
	cpack_into "$DEB_DIR" "$DEB_DIR/packages"
	# What an older ci/package.sh left beside them.
	rm -rf "$DEB_DIR/packages-prev"
	echo "debs (release 1), $DEB_DIR/packages:"
	(cd "$DEB_DIR/packages" && ls -l -- *.deb)
}

build_rpm() {
	tb5_install_deps "${TB5_DEPS_BUILD[@]}" "${TB5_DEPS_PACKAGE[@]}"
	# rpm's layout: lib64, shared objects executable; both hash styles
	# (rpmlint wants a .hash section).
	configure "$RPM_DIR" -DTB5_PACKAGE=RPM -DTB5_PACKAGE_RELEASE=1 \
		-DCMAKE_INSTALL_LIBDIR=lib64 -DCMAKE_INSTALL_SO_NO_EXE=OFF \
		-DCMAKE_SHARED_LINKER_FLAGS="$(flags LDFLAGS) -Wl,--hash-style=both" \
		-DCMAKE_MODULE_LINKER_FLAGS="$(flags LDFLAGS) -Wl,--hash-style=both"
	cmake --build "$RPM_DIR" -j "$TB5_JOBS"
	cpack_into "$RPM_DIR" "$RPM_DIR/packages"
	echo "rpms, $RPM_DIR/packages:"
	(cd "$RPM_DIR/packages" && ls -l -- *.rpm)
}

lint() {
	local debs rpms out e w rc=0

	tb5_install_deps "${TB5_DEPS_PACKAGE[@]}"
	mapfile -t debs < <(find "$DEB_DIR/packages" -name '*.deb' | sort)
	mapfile -t rpms < <(find "$RPM_DIR/packages" -name '*.rpm' | sort)
	((${#debs[@]} > 0)) || tb5_die "no debs in $DEB_DIR/packages: run ci/package.sh deb"
	((${#rpms[@]} > 0)) || tb5_die "no rpms in $RPM_DIR/packages: run ci/package.sh rpm"

	tb5_banner "lintian (${#debs[@]} debs)"
	out=$(lintian --no-tag-display-limit --display-info "${debs[@]}" 2>&1) || true
	[[ -n $out ]] && printf '%s\n' "$out"
	e=$(grep -c '^E: ' <<<"$out" || true)
	w=$(grep -c '^W: ' <<<"$out" || true)
	echo "lintian: $e errors, $w warnings ($(grep -c '^I: ' <<<"$out" || true) info) over ${#debs[@]} packages"
	((e == 0 && w == 0)) || rc=1

	tb5_banner "rpmlint (${#rpms[@]} rpms)"
	out=$(rpmlint -r "$TB5_ROOT/packaging/rpm/rpmlintrc" "${rpms[@]}" 2>&1) || true
	printf '%s\n' "$out"
	e=$(grep -cE '^[^ ]+: E: ' <<<"$out" || true)
	w=$(grep -cE '^[^ ]+: W: ' <<<"$out" || true)
	echo "rpmlint: $e errors, $w warnings over ${#rpms[@]} packages"
	((e == 0)) || rc=1
	return "$rc"
}

main() {
	local step
	(($# > 0)) || set -- deb rpm lint
	for step in "$@"; do
		case $step in
		deb) build_deb ;;
		rpm) build_rpm ;;
		lint) lint ;;
		*) tb5_die "unknown step '$step' (deb, rpm, lint)" ;;
		esac
	done
}

main "$@"
