// SPDX-License-Identifier: MIT
/*
 * tb5k-hold - keep tb5 busy while vm-tests.sh tries to rmmod it.
 *
 *   tb5k-hold            open /dev/tb5_0 and /dev/tb5_1, map both completion
 *                        queues, register memory, connect, post a receive;
 *   tb5k-hold --mmap-only
 *                        open /dev/tb5_0, map its completion queue, close
 *                        the fd: only the mapping holds the file;
 *
 * then print "ready" and wait for SIGTERM. On SIGTERM the full mode sends the
 * message the receive waits for and checks that it arrives intact (the
 * module, still loaded, still works); the mmap-only mode reads the mapping
 * and unmaps it. Exit status 0 when all went well.
 */
#include "tb5k.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define LEN	(1024 * 1024 + 13)

static void wait_term(void)
{
	sigset_t set;
	int sig = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	printf("ready\n");
	fflush(stdout);
	sigwait(&set, &sig);
}

int main(int argc, char **argv)
{
	struct tb5k_ctx a, b;
	struct tb5k_conn cn;
	struct tb5_cqe cqe;
	uint8_t *sbuf, *rbuf;
	uint32_t hs, hr;
	sigset_t set;
	int ret;

	/* Block SIGTERM before anything: sigwait() takes it. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	tb5k_init("hold", 600);

	if (argc == 2 && !strcmp(argv[1], "--mmap-only")) {
		volatile struct tb5_cq_ring *ring;
		size_t size;

		tb5k_open(&a, 0, 64);
		ring = a.ring;
		size = a.map_size;
		close(a.fd);	/* the mapping alone keeps the file open */
		wait_term();
		TB5K_CHECK(ring->entries == 64, "mmap-only", "the mapping reads "
			   "%u entries after the rmmod attempt", ring->entries);
		munmap((void *)ring, size);
		tb5k_pass("mmap-only (the mapping stayed valid)");
		return 0;
	}
	if (argc != 1) {
		fprintf(stderr, "usage: %s [--mmap-only]\n", argv[0]);
		return 2;
	}

	tb5k_open(&a, 0, 256);
	tb5k_open(&b, 1, 256);
	tb5k_connect("setup", &a, &b, 0x401d, &cn);
	sbuf = tb5k_alloc(LEN);
	rbuf = tb5k_alloc(LEN);
	tb5k_fill(sbuf, LEN, 0x401d, 0);
	hs = tb5k_reg(&a, sbuf, LEN);
	hr = tb5k_reg(&b, rbuf, LEN);
	ret = tb5k_post1(&b, TB5_OP_RECV, cn.ep_c, hr, 1, 0, LEN, 0x77);
	TB5K_CHECK(!ret, "setup", "post recv: %s", tb5k_errname(ret));

	wait_term();

	ret = tb5k_post1(&a, TB5_OP_SEND, cn.ep_l, hs, 1, 0, LEN, 0x66);
	TB5K_CHECK(!ret, "still-working", "post send after the rmmod attempt: %s",
		   tb5k_errname(ret));
	TB5K_CHECK(tb5k_wait_user_data(&b, 0x77, &cqe, 60000), "still-working",
		   "the receive did not complete");
	TB5K_CHECK(!cqe.status && cqe.bytes == LEN, "still-working", "receive: %s",
		   tb5k_cqe_str(&cqe));
	TB5K_CHECK(tb5k_verify(rbuf, LEN, 0x401d, 0) < 0, "still-working",
		   "the message arrived corrupted");
	TB5K_CHECK(tb5k_wait_user_data(&a, 0x66, &cqe, 60000) && !cqe.status,
		   "still-working", "the send did not complete cleanly");
	tb5k_close(&a);
	tb5k_close(&b);
	tb5k_pass("still-working (a message went through after the rmmod attempt)");
	return 0;
}
