#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# kbuild-core-check.sh [KERNEL_BUILD_DIR...] - compile the portable transport
# core and its kernel OS shim with Kbuild, as they will be compiled into
# tb5.ko, with warnings as errors and W=1. Proves the core stays kernel code
# (no libc, no floating point, kernel-sized stack frames) before the module
# itself exists. With no argument, every installed /lib/modules/*/build is
# used.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dirs=("$@")
if [ ${#dirs[@]} -eq 0 ]; then
	while read -r d; do
		dirs+=("$d")
	done < <(for d in /lib/modules/*/build; do
			[ -f "$d/Makefile" ] && realpath "$d"
		done | sort -u)
fi
if [ ${#dirs[@]} -eq 0 ]; then
	echo "kbuild-core-check: no kernel build directory found" >&2
	echo "  install one: apt-get install linux-headers-amd64" >&2
	exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$top/dkms/core" "$top/dkms/os" "$work/"
cat >"$work/check_main.c" <<'C'
// SPDX-License-Identifier: GPL-2.0-only
#include <linux/module.h>
#include "tb5_core.h"
#include "tb5_ringmodel.h"
#include "tb5_ctxrules.h"

/* Reference the core so that every object is linked and checked by modpost. */
static int __init tb5_core_check_init(void)
{
	struct tb5_link_config cfg = { .ring_size = 0 };
	struct tb5_cq_acct cq;

	return tb5_link_create(&cfg, NULL, NULL, NULL) == -EINVAL &&
	       tb5_rm_create(0, NULL, NULL, NULL) == -EINVAL &&
	       tb5_cq_acct_init(&cq, 0) == -EINVAL ? 0 : -EINVAL;
}
module_init(tb5_core_check_init);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("tb5 transport core build check (never loaded)");
C
cat >"$work/Kbuild" <<'K'
obj-m := tb5_core_check.o
tb5_core_check-y := check_main.o os/tb5_os_linux.o core/tb5_wire.o \
	core/tb5_link.o core/tb5_endpoint.o core/tb5_msg.o core/tb5_ringmodel.o \
	core/tb5_ctxrules.o
ccflags-y := -I$(src)/core -I$(src)/os -Werror -Wframe-larger-than=512
K

for kdir in "${dirs[@]}"; do
	echo "== kbuild-core-check: $kdir"
	make -s -C "$kdir" M="$work" W=1 -j"$(nproc)" modules
	make -s -C "$kdir" M="$work" clean
done
echo "kbuild-core-check: the core builds as kernel code on ${#dirs[@]} kernel(s)"
