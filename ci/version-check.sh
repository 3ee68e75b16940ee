#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ci/version-check.sh [BUILD-DIR...] - fails unless every place that carries
# tb5's version carries the one of the top-level CMakeLists.txt
# (project(tb5 VERSION x.y.z)):
#
#   sources     CHANGELOG.md has a "## [x.y.z]" section; the previous
#               release (packaging/previous-release, and its tag v<prev>
#               when the clone has it, at the same commit) is older
#   build dirs  (default: build-pkg-deb and build-pkg-rpm, those that exist)
#               the CMake cache's CMAKE_PROJECT_VERSION, the staged DKMS
#               tree dkms/tb5-x.y.z/ (dkms.conf's PACKAGE_VERSION and the
#               TB5_VERSION its MAKE passes to Kbuild, which becomes the
#               module's MODULE_VERSION; the VERSION file), a built tb5.ko's
#               `modinfo -F version` where the tree has one,
#               `tb5-selftest --version`, `tb5-perf --version`,
#               `tb5-exporter --version`, libtb5's file name and version
#               string (what the NCCL plugin logs as "libtb5 x.y.z"), the
#               man pages' footer, the Debian changelog
#   packages    every deb in BUILD-DIR/packages (Version x.y.z-N; tb5-dkms
#               holding /usr/src/tb5-x.y.z/dkms.conf of that version; the
#               meta-packages' exact dependencies) and every rpm (VERSION)
#
# Prints one line per check; exits 1 when any differs.
set -euo pipefail
# shellcheck source=ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TB5_ROOT"

FAILS=0
CHECKS=0

ok() {
	CHECKS=$((CHECKS + 1))
	printf 'ok    %s\n' "$*"
}
bad() {
	CHECKS=$((CHECKS + 1))
	FAILS=$((FAILS + 1))
	printf 'FAIL  %s\n' "$*"
}
# same WHAT GOT: GOT must be $V.
same() {
	if [[ $2 == "$V" ]]; then ok "$1: $2"; else bad "$1: '$2', expected $V"; fi
}

V=$(sed -nE 's/^project\(tb5 VERSION ([0-9]+\.[0-9]+\.[0-9]+)[ )].*/\1/p' CMakeLists.txt)
[[ -n $V ]] || tb5_die "no project(tb5 VERSION x.y.z) in CMakeLists.txt"
echo "version: $V (CMakeLists.txt)"

# ---- the sources ------------------------------------------------------------

if grep -qE "^## \[$V\]" CHANGELOG.md; then
	ok "CHANGELOG.md: a [$V] section"
else
	bad "CHANGELOG.md has no '## [$V]' section"
fi
# shellcheck disable=SC2016  # Kbuild's $(TB5_VERSION), literally
if grep -qE "^MODULE_VERSION\(TB5_VERSION_STRING\);" dkms/tb5_main.c &&
	grep -q 'TB5_VERSION_STRING=.*\$(TB5_VERSION)' dkms/Kbuild &&
	grep -q 'TB5_VERSION=@PROJECT_VERSION@' dkms/dkms.conf.in; then
	ok "MODULE_VERSION: from TB5_VERSION, which dkms.conf passes as the project's version"
else
	bad "tb5.ko's MODULE_VERSION no longer comes from dkms.conf's TB5_VERSION=@PROJECT_VERSION@"
fi

read -r PREV PREV_SHA <packaging/previous-release ||
	tb5_die "packaging/previous-release: expected 'VERSION SHA'"
if dpkg --compare-versions "$PREV" lt "$V"; then
	ok "previous release $PREV (packaging/previous-release) is older than $V"
else
	bad "previous release $PREV is not older than $V"
fi
if git rev-parse -q --verify "refs/tags/v$PREV" >/dev/null 2>&1; then
	tag_sha=$(git rev-parse "v$PREV^{commit}")
	if [[ $tag_sha == "$PREV_SHA" ]]; then
		ok "tag v$PREV is $PREV_SHA"
	else
		bad "tag v$PREV is $tag_sha, packaging/previous-release says $PREV_SHA"
	fi
fi
if git cat-file -e "$PREV_SHA^{commit}" 2>/dev/null; then
	prev_v=$(git show "$PREV_SHA:CMakeLists.txt" |
		sed -nE 's/^project\(tb5 VERSION ([0-9.]+)[ )].*/\1/p')
	if [[ $prev_v == "$PREV" ]]; then
		ok "commit $PREV_SHA is version $PREV"
	else
		bad "commit $PREV_SHA is version '$prev_v', packaging/previous-release says $PREV"
	fi
fi

# ---- built trees --------------------------------------------------------------

# The first executable named NAME under DIR.
find_bin() {
	find "$1" -path "$1/_CPack_Packages" -prune -o -type f -name "$2" -perm -u+x -print -quit
}

check_tree() {
	local dir=$1 got f conf

	echo "-- build tree $dir"
	got=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$dir/CMakeCache.txt")
	same "$dir: CMake cache CMAKE_PROJECT_VERSION" "$got"
	conf=$dir/dkms/tb5-$V/dkms.conf
	if [[ -f $conf ]]; then
		got=$(sed -nE 's/^PACKAGE_VERSION="(.*)"$/\1/p' "$conf")
		same "$conf: PACKAGE_VERSION" "$got"
		got=$(sed -nE 's/^MAKE\[0\]=.* TB5_VERSION=([^ ]+) .*/\1/p' "$conf")
		same "$conf: MAKE's TB5_VERSION (the module's MODULE_VERSION)" "$got"
		same "$dir/dkms/tb5-$V/VERSION" "$(cat "$dir/dkms/tb5-$V/VERSION")"
	else
		bad "$dir: no staged DKMS tree dkms/tb5-$V/ ($(find "$dir/dkms" -mindepth 1 -maxdepth 1 -printf '%f ' 2>/dev/null))"
	fi
	while IFS= read -r f; do
		same "$f: modinfo -F version" "$(modinfo -F version "$f")"
	done < <(find "$dir" -name tb5.ko -type f 2>/dev/null)
	for f in tb5-selftest tb5-perf tb5-exporter; do
		local bin
		bin=$(find_bin "$dir" "$f")
		if [[ -z $bin ]]; then
			bad "$dir: no $f built"
			continue
		fi
		got=$("$bin" --version 2>&1 | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -n1) || true
		same "$bin --version" "$got"
	done
	f=$(find "$dir" -path "$dir/_CPack_Packages" -prune -o -name 'libtb5.so.*.*.*' -type f -print -quit)
	if [[ -n $f ]]; then
		same "$dir: libtb5's file name ($(basename "$f"))" "${f##*/libtb5.so.}"
		# tb5_version(): what the plugin's "N devices: ... (libtb5 x.y.z)"
		# line and tb5-selftest print.
		got=$(/usr/bin/python3 -c 'import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.tb5_version.restype = ctypes.c_char_p
print(lib.tb5_version().decode())' "$f" 2>&1) || true
		same "$f: tb5_version() (the plugin's \"libtb5 x.y.z\" log line)" "$got"
	else
		bad "$dir: no libtb5.so.x.y.z built"
	fi
	for f in $(find "$dir" -path "$dir/_CPack_Packages" -prune -o -name 'tb5-selftest.1*' -type f -print -quit 2>/dev/null); do
		if zcat -f "$f" | grep "tb5 $V" >/dev/null; then
			ok "$f: footer tb5 $V"
		else
			bad "$f: footer is not tb5 $V"
		fi
	done
	f=$dir/packaging/changelog
	[[ -f $f ]] || f=$(find "$dir/packaging" -name 'changelog*' -type f -print -quit 2>/dev/null)
	if [[ -n $f && -f $f ]]; then
		got=$(head -n1 "$f" | sed -nE 's/^tb5 \(([^-)]+)-[^)]*\).*/\1/p')
		same "$f: Debian changelog" "$got"
	fi
}

check_debs() {
	local out=$1 deb got p tmp

	echo "-- debs in $out"
	for deb in "$out"/*.deb; do
		got=$(dpkg-deb -f "$deb" Version)
		same "$(basename "$deb"): Version (upstream part)" "${got%-*}"
		p=$(dpkg-deb -f "$deb" Package)
		if [[ $p == tb5-nccl-* ]]; then
			if dpkg-deb -f "$deb" Depends | tr ',' '\n' | grep -E '^ *(tb5|libtb5)' |
				grep -vqF "(= $got)"; then
				bad "$p: a dependency not on exactly $got: $(dpkg-deb -f "$deb" Depends)"
			else
				ok "$p: depends on exactly $got"
			fi
		fi
		if [[ $p == tb5-dkms ]]; then
			tmp=$(mktemp -d)
			dpkg-deb -x "$deb" "$tmp"
			if [[ -f $tmp/usr/src/tb5-$V/dkms.conf ]]; then
				got=$(sed -nE 's/^PACKAGE_VERSION="(.*)"$/\1/p' "$tmp/usr/src/tb5-$V/dkms.conf")
				same "tb5-dkms: /usr/src/tb5-$V/dkms.conf PACKAGE_VERSION" "$got"
			else
				bad "tb5-dkms holds no /usr/src/tb5-$V/dkms.conf: $(ls "$tmp/usr/src")"
			fi
			got=$(zcat "$tmp/usr/share/doc/tb5-dkms/changelog.Debian.gz" 2>/dev/null |
				head -n1 | sed -nE 's/^tb5 \(([^-)]+)-[^)]*\).*/\1/p')
			same "tb5-dkms: changelog.Debian.gz" "$got"
			rm -rf "$tmp"
		fi
	done
}

check_rpms() {
	local out=$1 rpm

	echo "-- rpms in $out"
	for rpm in "$out"/*.rpm; do
		same "$(basename "$rpm"): VERSION" "$(rpm -qp --qf '%{VERSION}' "$rpm" 2>/dev/null)"
	done
}

(($# > 0)) || set -- build-pkg-deb build-pkg-rpm
for dir in "$@"; do
	[[ -d $dir ]] || {
		echo "-- $dir: not built, skipped"
		continue
	}
	dir=$(cd "$dir" && pwd)
	[[ -f $dir/CMakeCache.txt ]] && check_tree "$dir"
	compgen -G "$dir/packages/*.deb" >/dev/null && check_debs "$dir/packages"
	compgen -G "$dir/packages/*.rpm" >/dev/null && check_rpms "$dir/packages"
done

echo "version-check: $CHECKS checks, $FAILS failed (version $V)"
((FAILS == 0))
