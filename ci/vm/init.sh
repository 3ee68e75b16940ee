#!/bin/busybox sh
# SPDX-License-Identifier: MIT
# shellcheck shell=sh
#
# /init of the test VM's initramfs (ci/vm/run.sh builds it): mount the
# kernel's file systems, run the test script (/tests/$TB5_VM_SCRIPT, from
# /etc/tb5-vm.env with the test knobs), print the end marker that the harness
# looks for, power off. Runs under busybox sh.

/bin/busybox --install -s
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t debugfs debugfs /sys/kernel/debug

echo "TB5-VM-START: kernel $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ { print $2 " kB" }' /proc/meminfo)"
TB5_VM_SCRIPT=vm-tests.sh
# shellcheck source=/dev/null
. /etc/tb5-vm.env
cd /tests || exit
sh "./$TB5_VM_SCRIPT"
rc=$?
echo "TB5-VM-RESULT: rc=$rc"
sync
poweroff -f
