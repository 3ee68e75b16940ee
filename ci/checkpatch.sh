#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# checkpatch.sh - the kernel's checkpatch.pl over every file of tb5.ko
# (dkms/) and of the emulated fabric's tbemu.ko (tests/tbemu/), failing on any error or warning but those an out-of-tree,
# multi-kernel module cannot avoid:
#   LINUX_VERSION_CODE, CONSTANT_COMPARISON  version guards for 6.1 .. sid
#   EMBEDDED_FILENAME                        our files open with their name
#   PREFER_DEFINED_ATTRIBUTE_MACRO           core headers also build in user
#                                            space, where __printf is unknown
# checkpatch.pl comes from Debian's linux-source package (not installed: only
# the script and its data files are extracted), cached in $TB5_KCACHE.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${TB5_KCACHE:-/var/cache/tb5-ci}/checkpatch
# The machine's cache is written as root (the other scripts go through
# sudo): a user who cannot write it and finds no script there keeps one in
# a cache of their own.
if [[ ! -f $cache/scripts/checkpatch.pl ]] && ! { mkdir -p "$cache" 2>/dev/null && [[ -w $cache ]]; }; then
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/tb5-ci/checkpatch
fi
script=$cache/scripts/checkpatch.pl

if [[ ! -f $script ]]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	pkg=$(apt-cache depends linux-source 2>/dev/null |
		awk '/Depends: linux-source-/ { print $2; exit }')
	[[ -n $pkg ]] || pkg=linux-source-6.1
	# apt-get download as root warns that _apt cannot write $tmp: harmless.
	(cd "$tmp" && apt-get download "$pkg" >/dev/null 2>&1)
	dpkg-deb --fsys-tarfile "$tmp"/"$pkg"_*.deb |
		tar -x -C "$tmp" --wildcards './usr/src/linux-source-*.tar.xz'
	mkdir -p "$cache"
	tar -xf "$tmp"/usr/src/linux-source-*.tar.xz -C "$cache" \
		--strip-components=1 --wildcards \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' \
		'*/scripts/const_structs.checkpatch'
fi

# The module, and the emulated fabric's module that the tests load (kernel
# code too, held to the same rules).
cd "$top"
mapfile -t files < <(find dkms tests/tbemu -name '*.[ch]' ! -name '*.mod.c' | sort)
log=$(mktemp)
rc=0
perl "$script" --no-tree --terse --show-types \
	--ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON,EMBEDDED_FILENAME,PREFER_DEFINED_ATTRIBUTE_MACRO \
	-f "${files[@]}" >"$log" 2>&1 || rc=$?
# --terse prints nothing for a clean file; any line is a complaint, and a
# bad option or a broken script exits non-zero.
if ((rc != 0)) || [[ -s $log ]]; then
	cat "$log"
	rm -f "$log"
	echo "checkpatch: complaints above (exit $rc)" >&2
	exit 1
fi
rm -f "$log"
echo "checkpatch: ${#files[@]} files of dkms/ and tests/tbemu/ clean"
