/* SPDX-License-Identifier: MIT */
/*
 * tb5_os_posix.h - platform types for the transport core in user space.
 *
 * The kernel module's counterpart is dkms/core/tb5_os_linux.h. Only what the
 * kernel also provides may appear here: fixed-width integers, bool, size_t,
 * NULL, Linux errno values and memcpy/memset, and the lock assertion that
 * the kernel has as lockdep_assert_held().
 */
#ifndef TB5_OS_POSIX_H
#define TB5_OS_POSIX_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Lock assertions: every lock records the thread that holds it, and
 * tb5_os_assert_held() checks that the caller is that thread, aborting with
 * the function and the lock named when it is not. Compiled in where
 * TB5_OS_LOCK_CHECKS is defined: by default in builds without NDEBUG, and
 * by CMake for the sanitized builds (TB5_SANITIZE), which are
 * RelWithDebInfo. Elsewhere the assertion is empty.
 */
#if !defined(TB5_OS_LOCK_CHECKS) && !defined(NDEBUG)
#define TB5_OS_LOCK_CHECKS 1
#endif

#ifdef __cplusplus
extern "C" {
#endif
struct tb5_os_spinlock;
void tb5_os_assert_held_at(struct tb5_os_spinlock *lock, const char *lock_name,
			   const char *func);
#ifdef __cplusplus
}
#endif

#ifdef TB5_OS_LOCK_CHECKS
#define tb5_os_assert_held(lock) \
	tb5_os_assert_held_at((lock), #lock, __func__)
#else
#define tb5_os_assert_held(lock) ((void)(lock))
#endif

#endif /* TB5_OS_POSIX_H */
