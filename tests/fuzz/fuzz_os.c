// SPDX-License-Identifier: MIT
/*
 * fuzz_os.c - the transport core's OS shim for the fuzzer.
 *
 * It replaces src/coreos/tb5_os_posix.c so that a crashing input replays
 * exactly: random numbers come from a generator the harness reseeds for
 * every input, and time advances only when the harness says so. Its locks
 * abort on re-entry instead of deadlocking, because the core must never call
 * itself (or be called from a callback) with its lock held, and its lock
 * assertions are always on. Logging is off
 * unless TB5_FUZZ_LOG is set: malformed frames are the normal case here.
 */
#include "tb5_os.h"
#include "fuzz_os_hooks.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

struct tb5_os_spinlock {
	int held;
};

static uint64_t rng_state = 1;
static uint64_t clock_ns;
static int fail_next_alloc;
static unsigned locks_held;
static unsigned locks_live;

void tb5_fuzz_os_reset(uint64_t seed)
{
	rng_state = seed | 1;
	clock_ns = 1000000000ull;
	fail_next_alloc = 0;
}

void tb5_fuzz_os_fail_next_alloc(void)
{
	fail_next_alloc = 1;
}

int tb5_fuzz_os_alloc_fail_pending(void)
{
	return fail_next_alloc;
}

void tb5_fuzz_os_advance_ns(uint64_t ns)
{
	clock_ns += ns;
}

unsigned tb5_fuzz_os_locks_held(void)
{
	return locks_held;
}

unsigned tb5_fuzz_os_locks_live(void)
{
	return locks_live;
}

void *tb5_os_zalloc(size_t size)
{
	/* tb5_core.h promises to allocate only before taking the lock. */
	if (locks_held) {
		fprintf(stderr, "tb5-fuzz: allocation with a core lock held\n");
		abort();
	}
	if (fail_next_alloc) {
		fail_next_alloc = 0;
		return NULL;
	}
	return calloc(1, size);
}

void tb5_os_free(void *ptr)
{
	free(ptr);
}

struct tb5_os_spinlock *tb5_os_lock_create(void)
{
	struct tb5_os_spinlock *lock = calloc(1, sizeof(*lock));

	if (lock)
		locks_live++;
	return lock;
}

void tb5_os_lock_destroy(struct tb5_os_spinlock *lock)
{
	if (!lock)
		return;
	if (lock->held) {
		fprintf(stderr, "tb5-fuzz: lock destroyed while held\n");
		abort();
	}
	locks_live--;
	free(lock);
}

void tb5_os_lock(struct tb5_os_spinlock *lock)
{
	if (lock->held) {
		fprintf(stderr, "tb5-fuzz: lock taken twice (would deadlock)\n");
		abort();
	}
	lock->held = 1;
	locks_held++;
}

void tb5_os_unlock(struct tb5_os_spinlock *lock)
{
	if (!lock->held) {
		fprintf(stderr, "tb5-fuzz: unlock of a lock not held\n");
		abort();
	}
	lock->held = 0;
	locks_held--;
}

/* One thread: held is held by the caller. */
void tb5_os_assert_held_at(struct tb5_os_spinlock *lock, const char *lock_name,
			   const char *func)
{
	if (lock->held)
		return;
	fprintf(stderr, "tb5-fuzz: %s() must be called with %s held\n", func,
		lock_name);
	abort();
}

uint64_t tb5_os_now_ns(void)
{
	return clock_ns;
}

/* xorshift64*: cheap, and the same sequence for the same seed. */
uint64_t tb5_os_random_u64(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

void tb5_os_log(enum tb5_os_log_level level, const char *fmt, ...)
{
	static int enabled = -1;
	va_list ap;

	if (enabled < 0)
		enabled = getenv("TB5_FUZZ_LOG") != NULL;
	if (!enabled)
		return;
	fprintf(stderr, "tb5: %d: ", (int)level);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
