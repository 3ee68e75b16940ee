#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# sparse-check.sh [KERNEL_BUILD_DIR] - run sparse over every file of tb5.ko
# (make C=2), W=1, against Debian 12's kernel headers by default, and fail on
# any warning. The build happens in a temporary copy: dkms/ stays clean.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
kdir=${1:-}
if [[ -z $kdir ]]; then
	for d in /lib/modules/*/build; do
		[[ -f $d/Makefile ]] && kdir=$d && break
	done
fi
[[ -n $kdir ]] || { echo "sparse-check: no kernel build directory" >&2; exit 1; }
command -v sparse >/dev/null || { echo "sparse-check: sparse is not installed" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$top/dkms/." "$work/"
log=$work/sparse.log
make -C "$kdir" M="$work" TB5_VERSION=0.0.0 C=2 CHECK=sparse W=1 \
	-j"$(nproc)" modules >"$log" 2>&1 || { cat "$log"; exit 1; }
if grep -E 'warning:|error:' "$log"; then
	echo "sparse-check: sparse or the compiler complained (above)" >&2
	exit 1
fi
echo "sparse-check: $(grep -c '  CHECK ' "$log") files clean under sparse against $kdir"
