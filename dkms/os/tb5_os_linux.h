/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tb5_os_linux.h - platform types for the transport core inside tb5.ko.
 *
 * The user-space counterpart is src/coreos/tb5_os_posix.h; both give the
 * core fixed-width integers, bool, size_t, NULL, errno values, offsetof and
 * memcpy/memset, and tb5_os_assert_held(), and nothing else.
 */
#ifndef TB5_OS_LINUX_H
#define TB5_OS_LINUX_H

#include <linux/errno.h>
#include <linux/lockdep.h>
#include <linux/spinlock.h>
#include <linux/stddef.h>
#include <linux/string.h>
#include <linux/types.h>

/*
 * Here rather than in tb5_os_linux.c, so that tb5_os_assert_held() is
 * lockdep_assert_held() at the call site: its warning names the core's
 * function, and a kernel without lockdep compiles it away.
 */
struct tb5_os_spinlock {
	spinlock_t lock;
};

#define tb5_os_assert_held(l)	lockdep_assert_held(&(l)->lock)

#endif /* TB5_OS_LINUX_H */
