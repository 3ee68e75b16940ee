/* SPDX-License-Identifier: MIT */
/*
 * tb5_os_posix.h - platform types for the transport core in user space.
 *
 * The kernel module's counterpart is dkms/core/tb5_os_linux.h. Only what the
 * kernel also provides may appear here: fixed-width integers, bool, size_t,
 * NULL, Linux errno values and memcpy/memset.
 */
#ifndef TB5_OS_POSIX_H
#define TB5_OS_POSIX_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#endif /* TB5_OS_POSIX_H */
