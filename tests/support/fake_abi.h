/* SPDX-License-Identifier: MIT */
/*
 * fake_abi.h - ioctl() as the tests stand it in for a tb5 module: with
 * @abi not 0, TB5_IOC_GET_VERSION is answered as tb5.ko 9.0.0 of ABI
 * version @abi would answer it, whatever the file; every other request
 * (and every request with @abi 0) goes to the kernel. The tests that
 * replace ioctl() call it: test_kernel_backend and test_plugin_versions
 * (their own ioctl()), the tools' tests through fake_abi.c (LD_PRELOAD).
 * C and C++.
 */
#ifndef TB5_SUPPORT_FAKE_ABI_H
#define TB5_SUPPORT_FAKE_ABI_H

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tb5_uapi.h"

static inline int tb5_fake_abi_ioctl(int fd, unsigned long req, void *arg, __u32 abi)
{
	if (req == TB5_IOC_GET_VERSION && abi) {
		struct tb5_version *v = (struct tb5_version *)arg;

		memset(v, 0, sizeof(*v));
		v->abi_version = abi;
		v->module_major = 9;
		return 0;
	}
	return (int)syscall(SYS_ioctl, fd, req, arg);
}

#endif /* TB5_SUPPORT_FAKE_ABI_H */
