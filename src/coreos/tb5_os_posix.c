// SPDX-License-Identifier: MIT
/*
 * tb5_os_posix.c - the transport core's OS shim in user space: calloc,
 * pthread mutexes that know their owner, CLOCK_MONOTONIC, getrandom and
 * stderr.
 */
#include "tb5_os.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

struct tb5_os_spinlock {
	pthread_mutex_t mutex;
	/*
	 * The holder's thread_tag, NULL while free: written by the holder
	 * only, read by tb5_os_assert_held_at() in any thread (hence atomic;
	 * relaxed suffices, as only the holder itself can read its own tag).
	 * Kept in every build, so that objects built with and without
	 * TB5_OS_LOCK_CHECKS agree.
	 */
	const void *owner;
};

/* One per thread: its address tells the threads apart. */
static _Thread_local char thread_tag;

void *tb5_os_zalloc(size_t size)
{
	return calloc(1, size);
}

void tb5_os_free(void *ptr)
{
	free(ptr);
}

struct tb5_os_spinlock *tb5_os_lock_create(void)
{
	struct tb5_os_spinlock *lock = calloc(1, sizeof(*lock));

	if (lock && pthread_mutex_init(&lock->mutex, NULL) != 0) {
		free(lock);
		return NULL;
	}
	return lock;
}

void tb5_os_lock_destroy(struct tb5_os_spinlock *lock)
{
	if (!lock)
		return;
	pthread_mutex_destroy(&lock->mutex);
	free(lock);
}

void tb5_os_lock(struct tb5_os_spinlock *lock)
{
	pthread_mutex_lock(&lock->mutex);
	__atomic_store_n(&lock->owner, &thread_tag, __ATOMIC_RELAXED);
}

void tb5_os_unlock(struct tb5_os_spinlock *lock)
{
	__atomic_store_n(&lock->owner, NULL, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&lock->mutex);
}

void tb5_os_assert_held_at(struct tb5_os_spinlock *lock, const char *lock_name,
			   const char *func)
{
	if (__atomic_load_n(&lock->owner, __ATOMIC_RELAXED) == &thread_tag)
		return;
	fprintf(stderr,
		"tb5: %s() must be called with %s held; the calling thread does not hold it\n",
		func, lock_name);
	abort();
}

uint64_t tb5_os_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t tb5_os_random_u64(void)
{
	uint64_t v = 0;

	/* getrandom() of 8 bytes does not return short once the pool is up. */
	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = tb5_os_now_ns() * 0x9e3779b97f4a7c15ull;
	return v;
}

/*
 * TB5_LOG selects the level that reaches stderr: err (default), warn, info,
 * debug.
 */
static enum tb5_os_log_level log_threshold(void)
{
	static int cached = -1;
	const char *env;

	if (cached >= 0)
		return (enum tb5_os_log_level)cached;
	env = getenv("TB5_LOG");
	cached = TB5_LOG_ERR;
	if (env && !strcmp(env, "warn"))
		cached = TB5_LOG_WARN;
	else if (env && !strcmp(env, "info"))
		cached = TB5_LOG_INFO;
	else if (env && !strcmp(env, "debug"))
		cached = TB5_LOG_DEBUG;
	return (enum tb5_os_log_level)cached;
}

void tb5_os_log(enum tb5_os_log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	va_list ap;

	if (level > log_threshold())
		return;
	fprintf(stderr, "tb5: %s: ", names[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
