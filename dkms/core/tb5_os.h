/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * tb5_os.h - the OS shim the portable transport core is written against.
 *
 * The core (tb5_link.c, tb5_endpoint.c, tb5_msg.c, tb5_wire.c,
 * tb5_ringmodel.c) includes this header and nothing else from its
 * environment. A platform header supplies fixed-width integer types, bool,
 * size_t, NULL, offsetof, the Linux errno values and memcpy/memset; the
 * functions declared below are implemented once per platform:
 *   - in the kernel module by dkms/os/tb5_os_linux.h and tb5_os_linux.c,
 *   - in user space by src/coreos/tb5_os_posix.h / tb5_os_posix.c.
 *
 * Rules for the core, so that the same files compile into tb5.ko: no floating
 * point, no recursion, no variable-length arrays, stack frames under 256
 * bytes, no allocation while a lock is held, no sleeping while a lock is held.
 */
#ifndef TB5_OS_H
#define TB5_OS_H

#ifdef __KERNEL__
#include "tb5_os_linux.h"
#else
#include "tb5_os_posix.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct tb5_os_spinlock;

/* Zeroed allocation; NULL on failure. Never called with a core lock held. */
void *tb5_os_zalloc(size_t size);
void tb5_os_free(void *ptr);

/*
 * A lock that never sleeps while held (a spinlock in the kernel, taken with
 * bottom halves disabled because ring completions may run in softirq
 * context). Nothing inside it may sleep or allocate.
 */
struct tb5_os_spinlock *tb5_os_lock_create(void);
void tb5_os_lock_destroy(struct tb5_os_spinlock *lock);
void tb5_os_lock(struct tb5_os_spinlock *lock);
void tb5_os_unlock(struct tb5_os_spinlock *lock);

/*
 * tb5_os_assert_held(lock): the calling thread holds @lock. Every core
 * function that needs the link's lock starts with it, so that a caller
 * without the lock is caught where it calls, not later as corrupted state.
 * The platform header defines it, as a macro that costs nothing where the
 * check is off: lockdep_assert_held() in the kernel (a warning that names
 * the core's file and line, on kernels with lockdep); in user space an
 * owner check that aborts naming the function and the lock, in builds with
 * TB5_OS_LOCK_CHECKS (those without NDEBUG, and the sanitized ones).
 */
#ifndef tb5_os_assert_held
#error "the platform header must define tb5_os_assert_held()"
#endif

/* Monotonic time in nanoseconds. */
uint64_t tb5_os_now_ns(void);

/* 64 unpredictable bits, used for cookies. */
uint64_t tb5_os_random_u64(void);

enum tb5_os_log_level {
	TB5_LOG_ERR,
	TB5_LOG_WARN,
	TB5_LOG_INFO,
	TB5_LOG_DEBUG,
};

/* printf-style logging; rate limiting is the platform's business. */
void tb5_os_log(enum tb5_os_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif

#endif /* TB5_OS_H */
