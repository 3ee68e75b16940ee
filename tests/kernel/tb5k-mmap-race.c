// SPDX-License-Identifier: MIT
/*
 * tb5k-mmap-race - mmap() of the completion queue racing with registration
 * on the same context.
 *
 *   tb5k-mmap-race [--seconds T]
 *
 * mmap() enters the driver with the process's mmap lock held; registration
 * pins pages and charges RLIMIT_MEMLOCK, which take the same lock. If the
 * driver takes a lock of its own on both paths in opposite orders, two
 * threads deadlock here within a fraction of a second: one thread maps and
 * unmaps the queue in a loop, another registers and deregisters freshly
 * mapped memory (so pinning takes the slow path), a third posts and reaps.
 * A hang ends in the watchdog's FAIL line (and in the kernel's hung-task
 * report).
 */
#include "tb5k.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

static struct tb5k_ctx ctx;
static uint64_t end_ms;
static uint64_t n_map, n_reg, n_info;

static void *mapper(void *arg)
{
	(void)arg;
	while (tb5k_now_ms() < end_ms) {
		volatile struct tb5_cq_ring *r;
		void *p = mmap(NULL, ctx.map_size, PROT_READ | PROT_WRITE,
			       MAP_SHARED, ctx.fd, 0);

		if (p == MAP_FAILED)
			tb5k_fail("mmap", "mmap of the queue: %s", strerror(errno));
		r = p;
		if (r->entries != ctx.entries)
			tb5k_fail("mmap", "a second mapping reads %u entries",
				  r->entries);
		munmap(p, ctx.map_size);
		n_map++;
	}
	return NULL;
}

static void *registrar(void *arg)
{
	const size_t len = 256 * 1024;

	(void)arg;
	while (tb5k_now_ms() < end_ms) {
		/* Fresh, untouched pages: pinning has to fault them in. */
		void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint32_t h;
		int ret;

		if (p == MAP_FAILED)
			tb5k_fail("reg", "mmap: %s", strerror(errno));
		ret = tb5k_try_reg(&ctx, p, len, &h);
		if (ret)
			tb5k_fail("reg", "REG_MEM: %s", tb5k_errname(ret));
		ret = tb5k_dereg(&ctx, h);
		if (ret)
			tb5k_fail("reg", "DEREG_MEM: %s", tb5k_errname(ret));
		munmap(p, len);
		n_reg++;
	}
	return NULL;
}

static void *other(void *arg)
{
	(void)arg;
	while (tb5k_now_ms() < end_ms) {
		struct tb5_info info;

		if (ioctl(ctx.fd, TB5_IOC_GET_INFO, &info))
			tb5k_fail("info", "GET_INFO: %s", tb5k_errname(errno));
		n_info++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned int seconds = 3;
	pthread_t t[3];
	uint64_t pinned0;
	int i;

	if (argc == 3 && !strcmp(argv[1], "--seconds"))
		seconds = (unsigned int)strtoul(argv[2], NULL, 0);
	tb5k_init("mmap-race", seconds + 60);
	pinned0 = tb5k_pinned_pages();
	tb5k_open(&ctx, 0, 256);
	end_ms = tb5k_now_ms() + seconds * 1000u;
	if (pthread_create(&t[0], NULL, mapper, NULL) ||
	    pthread_create(&t[1], NULL, registrar, NULL) ||
	    pthread_create(&t[2], NULL, other, NULL))
		tb5k_fail("setup", "pthread_create failed");
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	tb5k_close(&ctx);
	TB5K_CHECK(tb5k_wait_pinned(pinned0, 5000) == pinned0, "pinned",
		   "pinned_pages is %llu, was %llu",
		   (unsigned long long)tb5k_pinned_pages(),
		   (unsigned long long)pinned0);
	tb5k_pass("race (%u s: %llu mmaps, %llu registrations, %llu other "
		  "ioctls, no deadlock)", seconds, (unsigned long long)n_map,
		  (unsigned long long)n_reg, (unsigned long long)n_info);
	return 0;
}
