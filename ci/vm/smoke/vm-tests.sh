#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The VM harness's smoke test (busybox sh): the kernel boots, its modules
# load through modprobe, and so does tb5.ko when the initramfs has one.
# ci/kernel-tests.sh runs it where tests/kernel/ has no tests yet.
set -eu

echo "uname -r: $(uname -r)"
ls "/lib/modules/$(uname -r)"
# thunderbolt pulls configfs in on sid: dependencies resolve.
modprobe thunderbolt
lsmod
if [ -f "/lib/modules/$(uname -r)/updates/tb5.ko" ]; then
	modprobe tb5
	echo "tb5 parameters:"
	grep -H . /sys/module/tb5/parameters/* || true
	rmmod tb5
fi
[ -e /dev/udmabuf ] && echo "udmabuf: /dev/udmabuf" || echo "udmabuf: none"
echo "smoke: OK"
