#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tests/tbemu/build.sh [--src DIR] OUT [LABEL...] - build tbemu.ko (the
# emulated USB4 fabric) for kernels prepared by ci/kernels.sh (6.1, 6.12,
# sid by default), warning-free (W=1), into OUT/<kver>/tbemu.ko. Test code:
# never packaged. With --src, the test module whose Kbuild and sources are
# in DIR instead (tests/kernel/memcheck: tb5k_memcheck.ko), into
# OUT/<kver>/<its obj-m>.ko.
#
# With CONFIG_MODVERSIONS, tbemu's exports carry thunderbolt.ko's CRCs from
# the kernel's Module.symvers (symvers-crc.sh says why), so that the tb5.ko
# DKMS built against the real bus loads against this one unchanged.
set -euo pipefail
# shellcheck source=ci/kernel-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../ci/kernel-lib.sh"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$HERE
if [[ ${1:-} == --src ]]; then
	(($# >= 2)) || tb5_die "usage: ${0##*/} [--src DIR] OUT [6.1|6.12|sid]..."
	SRC=$(realpath "$2")
	shift 2
fi
(($# >= 1)) || tb5_die "usage: ${0##*/} [--src DIR] OUT [6.1|6.12|sid]..."
OUT=$(realpath -m "$1")
shift
LABELS=("$@")
((${#LABELS[@]})) || LABELS=("${TB5_KLABELS[@]}")
# The module's name: the one obj-m of its Kbuild.
NAME=$(sed -n 's/^obj-m[[:space:]]*:=[[:space:]]*\([a-z0-9_]*\)\.o[[:space:]]*$/\1/p' "$SRC/Kbuild")
[[ -n $NAME ]] || tb5_die "$SRC/Kbuild names no single obj-m"

build_one() {
	local label=$1 host_work work run=() out log symvers rc=0 crc=()

	tb5_kernel_env "$label"
	out=$OUT/$TB5_K_VER
	rm -rf "$out"
	mkdir -p "$out"
	if [[ -n $TB5_K_CHROOT ]]; then
		host_work=$(mktemp -d "$TB5_K_CHROOT/var/tmp/tbemu.XXXXXX")
		work=${host_work#"$TB5_K_CHROOT"}
		run=(tb5_chroot "$TB5_K_CHROOT")
		symvers=$TB5_K_CHROOT$TB5_K_BUILD/Module.symvers
	else
		host_work=$(mktemp -d "${TMPDIR:-/tmp}/tbemu.XXXXXX")
		work=$host_work
		symvers=$TB5_K_BUILD/Module.symvers
	fi
	cp "$SRC"/*.c "$SRC"/Kbuild "$host_work/"
	cp "$SRC"/*.h "$host_work/" 2>/dev/null || true
	# Only a module that exports symbols for another's sake has the CRC
	# script (tbemu).
	if [[ -f $SRC/symvers-crc.sh ]]; then
		cp "$SRC/symvers-crc.sh" "$host_work/"
		crc=(genksyms="sh $work/symvers-crc.sh")
	fi
	[[ -f $symvers ]] || tb5_die "$symvers missing"
	log=$out/make.log
	"${run[@]}" env TBEMU_SYMVERS="${symvers#"${TB5_K_CHROOT:-}"}" \
		make -C "$TB5_K_BUILD" M="$work" W=1 \
		"${crc[@]}" modules >"$log" 2>&1 || rc=$?
	if ((rc == 0)); then
		cp "$host_work/$NAME.ko" "$out/$NAME.ko"
	fi
	rm -rf "$host_work"
	if ((rc != 0)) || grep -in 'warning:\|error:' "$log" >&2; then
		cat "$log" >&2
		echo "$NAME: $label ($TB5_K_VER): BUILD FAILED (or warnings)" >&2
		return 1
	fi
	echo "$NAME: $label ($TB5_K_VER): OK, $out/$NAME.ko"
}

failed=0
for label in "${LABELS[@]}"; do
	build_one "$label" || failed=1
done
exit "$failed"
