#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tests/tbemu/build.sh OUT [LABEL...] - build tbemu.ko (the emulated USB4
# fabric) for kernels prepared by ci/kernels.sh (6.1, 6.12, sid by default),
# warning-free (W=1), into OUT/<kver>/tbemu.ko. Test code: never packaged.
#
# With CONFIG_MODVERSIONS, the exports carry thunderbolt.ko's CRCs from the
# kernel's Module.symvers (symvers-crc.sh says why), so that the tb5.ko DKMS
# built against the real bus loads against this one unchanged.
set -euo pipefail
# shellcheck source=ci/kernel-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../ci/kernel-lib.sh"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
(($# >= 1)) || tb5_die "usage: ${0##*/} OUT [6.1|6.12|sid]..."
OUT=$(realpath -m "$1")
shift
LABELS=("$@")
((${#LABELS[@]})) || LABELS=("${TB5_KLABELS[@]}")

build_one() {
	local label=$1 host_work work run=() out log symvers rc=0

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
	cp "$HERE"/*.c "$HERE"/*.h "$HERE"/Kbuild "$HERE"/symvers-crc.sh "$host_work/"
	[[ -f $symvers ]] || tb5_die "$symvers missing"
	log=$out/make.log
	"${run[@]}" env TBEMU_SYMVERS="${symvers#"${TB5_K_CHROOT:-}"}" \
		make -C "$TB5_K_BUILD" M="$work" W=1 \
		genksyms="sh $work/symvers-crc.sh" modules >"$log" 2>&1 || rc=$?
	if ((rc == 0)); then
		cp "$host_work/tbemu.ko" "$out/tbemu.ko"
	fi
	rm -rf "$host_work"
	if ((rc != 0)) || grep -in 'warning:\|error:' "$log" >&2; then
		cat "$log" >&2
		echo "tbemu: $label ($TB5_K_VER): BUILD FAILED (or warnings)" >&2
		return 1
	fi
	echo "tbemu: $label ($TB5_K_VER): OK, $out/tbemu.ko"
}

failed=0
for label in "${LABELS[@]}"; do
	build_one "$label" || failed=1
done
exit "$failed"
