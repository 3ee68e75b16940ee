// SPDX-License-Identifier: MIT
/*
 * fake_abi.c - an LD_PRELOAD library for the tools' tests: while
 * TB5_FAKE_ABI is set, TB5_IOC_GET_VERSION is answered as a tb5 module
 * 9.0.0 of that ABI version would answer it, whatever the file; every other
 * ioctl goes to the kernel (fake_abi.h). With a plain file as the device
 * node (TB5_DEV_DIR), that is a module of another ABI version to libtb5, in
 * a program that the test does not build itself (tb5-selftest, tb5-perf).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdlib.h>

#include "fake_abi.h"

int ioctl(int fd, unsigned long req, ...);

int ioctl(int fd, unsigned long req, ...)
{
	const char *abi = getenv("TB5_FAKE_ABI");
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	return tb5_fake_abi_ioctl(fd, req, arg,
				  abi ? (__u32)strtoul(abi, NULL, 0) : 0);
}
