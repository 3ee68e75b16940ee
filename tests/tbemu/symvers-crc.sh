#!/bin/sh
# SPDX-License-Identifier: MIT
#
# symvers-crc.sh - stands in for the kernel's genksyms when tbemu.ko is
# built (tests/tbemu/build.sh passes it as Kbuild's `genksyms`).
#
# tbemu.ko replaces thunderbolt.ko, and tb5.ko was built against the real
# one: with CONFIG_MODVERSIONS the loader compares the CRC tb5.ko recorded
# for each Thunderbolt symbol with the CRC its exporter carries. genksyms
# would compute tbemu's from tbemu's own translation units, which see the
# thunderbolt driver's private structs as opaque and so hash differently
# even though the ABI is the same (tbemu defines every export with the
# prototype from <linux/thunderbolt.h> of that very kernel). So each symbol
# gets the CRC that the kernel's Module.symvers gives thunderbolt.ko's
# export of that name. A symbol the real module does not export is an
# error: tbemu exports nothing of its own.
#
# Input: the C source preprocessed with -D__GENKSYMS__ (stdin); output: the
# "#SYMVER <name> <crc>" lines that genksyms would print. TBEMU_SYMVERS
# names the kernel's Module.symvers.
set -eu
: "${TBEMU_SYMVERS:?TBEMU_SYMVERS must name the Module.symvers of the kernel}"
syms=$(grep -o 'EXPORT_SYMBOL[A-Z_]*[[:space:]]*([[:space:]]*[A-Za-z_][A-Za-z0-9_]*' |
	sed 's/.*([[:space:]]*//' | sort -u)
for sym in $syms; do
	crc=$(awk -v s="$sym" '$2 == s && $3 ~ /(^|\/)thunderbolt$/ { print $1; exit }' \
		"$TBEMU_SYMVERS")
	if [ -z "$crc" ]; then
		echo "symvers-crc.sh: $sym is not exported by this kernel's thunderbolt.ko" >&2
		exit 1
	fi
	echo "#SYMVER $sym $crc"
done
