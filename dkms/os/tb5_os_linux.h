/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tb5_os_linux.h - platform types for the transport core inside tb5.ko.
 *
 * The user-space counterpart is src/coreos/tb5_os_posix.h; both give the
 * core fixed-width integers, bool, size_t, NULL, errno values, offsetof and
 * memcpy/memset, and nothing else.
 */
#ifndef TB5_OS_LINUX_H
#define TB5_OS_LINUX_H

#include <linux/errno.h>
#include <linux/stddef.h>
#include <linux/string.h>
#include <linux/types.h>

#endif /* TB5_OS_LINUX_H */
