#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ci/deb-compare.sh [CPACK-DIR [DH-DIR]] - CPack's debs (ci/package.sh deb,
# build-pkg-deb/packages) against the debhelper build of the Debian source
# package (ci/deb-source.sh, build-deb-src): the same package names, and per
# package the same files (dpkg-deb -c: type, mode, owner, path, link target;
# not sizes or dates; the tree's root "./", which dpkg-deb -b lists and
# CPack's data.tar does not, left out) and the same control fields Package, Version, Depends,
# Pre-Depends, Recommends, Suggests, Provides, Conflicts, Breaks, Replaces,
# Section, Architecture (dependency lists compared as sets). The control
# members are listed side by side; of those that both builds take from
# CMake (tb5-dkms's maintainer scripts and conffiles, libtb5-1's symbols,
# triggers and shlibs) or from debhelper (tb5-exporter's maintainer
# scripts, packaging/debian/dh-exporter-scripts.sh) the contents are
# compared too.
# Any difference fails, but for the accepted ones below, each with its
# reason.
set -euo pipefail
# shellcheck source=ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CPACK=${1:-$TB5_ROOT/build-pkg-deb/packages}
DH=${2:-$TB5_ROOT/build-deb-src}
FIELDS=(Package Version Depends Pre-Depends Recommends Suggests Provides Conflicts
	Breaks Replaces Section Architecture)

# Accepted differences, as "package|field or files|the line that differs
# (< CPack, > debhelper)|why". A difference not listed fails.
ACCEPTED=(
	# dh_dkms adds dkms to ${misc:Depends} with the version that has
	# common.postinst (2.1.0.0); every dkms Debian 12 has satisfies both.
	'tb5-dkms|Depends|< dkms|dh_dkms versions the dkms dependency (>= 2.1.0.0): met by every supported dkms'
	'tb5-dkms|Depends|> dkms (>= 2.1.0.0)|dh_dkms versions the dkms dependency (>= 2.1.0.0): met by every supported dkms'
	# dh_makeshlibs makes the shlibs dependency on the upstream version,
	# CPack (GENERATE_SHLIBS_POLICY ">=") on the full version; the symbols
	# file, which dpkg-shlibdeps prefers, is the same.
	'libtb5-1|shlibs|< libtb5 1 libtb5-1 (>= @DEB_VERSION@)|dh_makeshlibs: shlibs on the upstream version; the symbols file rules'
	'libtb5-1|shlibs|> libtb5 1 libtb5-1 (>= @UPSTREAM@)|dh_makeshlibs: shlibs on the upstream version; the symbols file rules'
)

accepted() {
	local pkg=$1 what=$2 line=$3 a
	for a in "${ACCEPTED[@]}"; do
		IFS='|' read -r ap aw al _ <<<"$a"
		al=${al//@DEB_VERSION@/$VERSION}
		al=${al//@UPSTREAM@/${VERSION%-*}}
		[[ $ap == "$pkg" && $aw == "$what" && $al == "$line" ]] && return 0
	done
	return 1
}

files() {
	dpkg-deb -c "$1" | awk '{ $3 = ""; $4 = ""; $5 = ""; print }' | sed -E 's/  +/ /g' | grep -v ' \./$' | sort
}

field() {
	dpkg-deb -f "$1" "$2" 2>/dev/null | tr ',' '\n' | sed -E 's/^ +//; s/ +$//' | grep -v '^$' | sort || true
}

# A control member's content: FILE of DEB, comments and order left out
# (dh_makeshlibs sorts the symbols file and comments the trigger).
member() {
	local tmp
	tmp=$(mktemp -d)
	dpkg-deb -e "$1" "$tmp"
	if [[ -f $tmp/$2 ]]; then
		case $2 in
		symbols | triggers | conffiles) grep -v '^#' "$tmp/$2" | sort ;;
		*) cat "$tmp/$2" ;;
		esac
	fi
	rm -rf "$tmp"
}

members() {
	dpkg-deb --ctrl-tarfile "$1" | tar -t | sed 's#^\./##' | grep -v '^$' | sort | tr '\n' ' '
}

main() {
	local fail=0 naccepted=0 p a b f line
	declare -A cp dh
	for f in "$CPACK"/*.deb; do cp[$(dpkg-deb -f "$f" Package)]=$f; done
	for f in "$DH"/*.deb; do dh[$(dpkg-deb -f "$f" Package)]=$f; done
	((${#cp[@]} > 0)) || tb5_die "no debs in $CPACK (ci/package.sh deb)"
	((${#dh[@]} > 0)) || tb5_die "no debs in $DH (ci/deb-source.sh)"
	VERSION=$(dpkg-deb -f "${cp[libtb5-1]}" Version)

	a=$(printf '%s\n' "${!cp[@]}" | sort)
	b=$(printf '%s\n' "${!dh[@]}" | sort)
	if [[ $a != "$b" ]]; then
		diff <(echo "$a") <(echo "$b") || true
		tb5_die "the package names differ (< CPack, > debhelper)"
	fi
	echo "packages: $(wc -l <<<"$a") in both: $(tr '\n' ' ' <<<"$a")"

	cmp_lines() { # PKG WHAT CPACK-LINES DH-LINES
		local out
		out=$(diff <(printf '%s\n' "$3") <(printf '%s\n' "$4") | grep -E '^[<>]' || true)
		[[ -n $out ]] || return 0
		while IFS= read -r line; do
			if accepted "$1" "$2" "$line"; then
				echo "  accepted: $1 $2: $line"
				naccepted=$((naccepted + 1))
			else
				echo "  DIFFERS:  $1 $2: $line"
				fail=1
			fi
		done <<<"$out"
	}

	for p in $a; do
		cmp_lines "$p" files "$(files "${cp[$p]}")" "$(files "${dh[$p]}")"
		for f in "${FIELDS[@]}"; do
			cmp_lines "$p" "$f" "$(field "${cp[$p]}" "$f")" "$(field "${dh[$p]}" "$f")"
		done
		# The control members both builds take from CMake: the same.
		for f in conffiles symbols triggers shlibs; do
			cmp_lines "$p" "$f" "$(member "${cp[$p]}" $f)" "$(member "${dh[$p]}" $f)"
		done
		# tb5-dkms's maintainer scripts (CMake's) and tb5-exporter's
		# (dh_installsystemd's in both builds): the same.
		if [[ $p == tb5-dkms || $p == tb5-exporter ]]; then
			for f in postinst prerm postrm; do
				cmp_lines "$p" "$f" "$(member "${cp[$p]}" $f)" "$(member "${dh[$p]}" $f)"
			done
		fi
		printf '  %-17s control members: CPack: %s| debhelper: %s\n' "$p" \
			"$(members "${cp[$p]}")" "$(members "${dh[$p]}")"
	done
	if ((fail)); then
		tb5_die "CPack's and debhelper's debs differ (lines marked DIFFERS above)"
	fi
	echo "deb-compare: the same ${#cp[@]} packages, files and control fields ($naccepted accepted differences)"
}

main "$@"
