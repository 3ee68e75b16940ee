#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ci/prev-release.sh [--dir] - the debs of tb5's previous release, built from
# git history, for the upgrade test of ci/package-install.sh --full.
#
# packaging/previous-release says which release and which commit
# ("0.1.0 <sha>"): a fresh clone may carry no tags, so the commit is what
# counts; where the tag v<version> exists it must name the same commit. The
# commit's tree (git archive) is unpacked in build-prev-release/<sha>/ and
# its own ci/package.sh builds its debs, as that release was built; they are
# kept in $TB5_KCACHE/prev-release/<sha>/ (default
# /var/cache/tb5-ci/prev-release/<sha>/), so later runs skip the build.
#
# --dir prints that directory (after building it if it is not there yet)
# and nothing else on stdout.
set -euo pipefail
# shellcheck source=ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TB5_ROOT"

TB5_KCACHE=${TB5_KCACHE:-/var/cache/tb5-ci}
PRINT_DIR=0
case ${1:-} in
--dir) PRINT_DIR=1 ;;
"") ;;
*) tb5_die "usage: ${0##*/} [--dir]" ;;
esac

read -r PREV SHA <packaging/previous-release ||
	tb5_die "packaging/previous-release: expected 'VERSION SHA'"
[[ $PREV =~ ^[0-9]+\.[0-9]+\.[0-9]+$ && $SHA =~ ^[0-9a-f]{40}$ ]] ||
	tb5_die "packaging/previous-release: '$PREV $SHA' is not 'x.y.z <40-hex sha>'"

# The tag, where the clone has it, must be the recorded commit.
if git rev-parse -q --verify "refs/tags/v$PREV" >/dev/null; then
	tag_sha=$(git rev-parse "v$PREV^{commit}")
	[[ $tag_sha == "$SHA" ]] ||
		tb5_die "tag v$PREV is $tag_sha, but packaging/previous-release says $SHA"
fi
git cat-file -e "$SHA^{commit}" 2>/dev/null ||
	tb5_die "commit $SHA (tb5 $PREV) is not in this clone (shallow? git fetch --unshallow)"

OUT=$TB5_KCACHE/prev-release/$SHA
WORK=$TB5_ROOT/build-prev-release/$SHA

build() {
	local v n

	v=$(git show "$SHA:CMakeLists.txt" | sed -nE 's/^project\(tb5 VERSION ([0-9.]+)[ )].*/\1/p')
	[[ $v == "$PREV" ]] || tb5_die "commit $SHA is version '$v', not $PREV"
	echo "previous release: tb5 $PREV at $SHA, building its debs in $WORK"
	rm -rf "$WORK"
	mkdir -p "$WORK"
	git archive --format=tar "$SHA" | tar -C "$WORK" -xf -
	# Its own ci/package.sh, as the release was built (0.1.0's also packs
	# its tree as release 0 beside release 1: only packages/ is kept).
	(cd "$WORK" && bash ci/package.sh deb) >"$WORK.log" 2>&1 || {
		tail -n 40 "$WORK.log"
		tb5_die "building tb5 $PREV's debs failed (log: $WORK.log)"
	}
	n=$(find "$WORK/build-pkg-deb/packages" -name "*_$PREV-*.deb" | wc -l)
	((n > 0)) || tb5_die "tb5 $PREV's build made no debs of version $PREV"
	rm -rf "$OUT.tmp"
	mkdir -p "$OUT.tmp"
	cp "$WORK"/build-pkg-deb/packages/*.deb "$OUT.tmp/"
	printf '%s %s\n' "$PREV" "$SHA" >"$OUT.tmp/RELEASE"
	rm -rf "$OUT"
	mv "$OUT.tmp" "$OUT"
	rm -rf "$WORK"
	echo "previous release: $n debs of tb5 $PREV in $OUT"
}

mkdir -p "$TB5_KCACHE/prev-release"
(
	# One build at a time per cache; a second run waits and finds it.
	flock 9
	if [[ -f $OUT/RELEASE ]]; then
		((PRINT_DIR)) || echo "previous release: tb5 $PREV ($SHA), cached in $OUT"
	elif ((PRINT_DIR)); then
		build >&2
	else
		build
	fi
) 9>"$TB5_KCACHE/prev-release/.lock"
if ((PRINT_DIR)); then
	echo "$OUT"
fi
