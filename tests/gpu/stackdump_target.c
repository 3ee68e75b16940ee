// SPDX-License-Identifier: MIT
//
// stackdump_target.c - a process with a thread blocked the way a hung
// NCCL proxy thread is (on a lock another thread holds), for
// test-stackdump.sh: its stack, taken by probe-hang.sh through
// libtb5-stackdump.so, must name stackdump_target_waits().
#define _GNU_SOURCE
#include <pthread.h>
#include <time.h>

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;

// Exported (the executable is linked with its symbols dynamic) so that
// dladdr() names it in the dump.
__attribute__((noinline)) void *stackdump_target_waits(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&held);
	pthread_mutex_unlock(&held);
	return NULL;
}

int main(void)
{
	struct timespec now, end;
	pthread_t t;

	pthread_mutex_lock(&held);
	if (pthread_create(&t, NULL, stackdump_target_waits, NULL))
		return 1;
	pthread_setname_np(t, "tb5-waiter");
	// Five seconds, whatever signals cut the sleeps short.
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += 5;
	do {
		struct timespec step = { 0, 100 * 1000 * 1000 };

		nanosleep(&step, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec < end.tv_sec);
	pthread_mutex_unlock(&held);
	pthread_join(t, NULL);
	return 0;
}
