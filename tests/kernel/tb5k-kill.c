// SPDX-License-Identifier: MIT
/*
 * tb5k-kill - SIGKILL a process with transfers in flight; nothing stays
 * pinned.
 *
 *   tb5k-kill [--iterations N] [--tolerance-mib T] [--seed S]
 *
 * The parent listens on /dev/tb5_1 with a registered receive region. Each
 * iteration forks a child that
 *   - opens /dev/tb5_0, connects to the parent, registers 24 MiB (twice,
 *     overlapping, plus an unaligned 1-byte region) and posts a 16 MiB send
 *     that the parent's receive grants, a send nobody grants and a receive
 *     nobody sends to;
 *   - opens both ends of pair 1, connects them to each other and starts an
 *     8 MiB message between them plus operations that can only wait;
 *   - then either sleeps or (every other iteration) registers and
 *     deregisters 8 MiB in a loop, so that the kill may land mid-pin;
 * and SIGKILLs it once the 16 MiB message is moving. The parent then checks
 * that its own endpoint reports PEER_CLOSED (-ECONNRESET) and its receives
 * complete, and that /sys/class/tb5/pinned_pages returns to what the parent
 * alone holds. At the end the kernel's own memory (/proc/meminfo: slab,
 * vmalloc, page tables, stacks; caches dropped) must be back within the
 * tolerance of its value after the first child (before it, with one
 * iteration), and pinned_pages at its baseline once the parent closes too.
 */
#include "tb5k.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define WAIT_MS		60000
#define CHILD_BUF	(24 * TB5K_MIB)
#define BIG		(16 * TB5K_MIB)
#define PAIR1_BUF	(8 * TB5K_MIB)
#define PARENT_BUF	(BIG + TB5K_MIB)

static void child_fail(const char *what, int err)
{
	printf("# kill: child: %s: %s\n", what, tb5k_errname(err));
	fflush(stdout);
	_exit(1);
}

/* Everything here runs in the child, which reports by exiting early. */
static void child(int iter, int ready_fd, uint64_t service, uint64_t cookie)
{
	struct tb5k_ctx a, c2, c3;
	struct tb5k_conn cn;
	struct tb5_connect con;
	struct tb5_cqe cqe;
	uint8_t *buf = tb5k_alloc(CHILD_BUF);
	uint8_t *p2 = tb5k_alloc(PAIR1_BUF), *p3 = tb5k_alloc(PAIR1_BUF);
	uint32_t h, h2, h3;
	int ret;

	memset(buf, 0x5a, CHILD_BUF);
	memset(p2, 0x5b, PAIR1_BUF);
	memset(p3, 0x5c, PAIR1_BUF);

	tb5k_open(&a, 0, 256);
	h = tb5k_reg(&a, buf, CHILD_BUF);
	(void)tb5k_reg(&a, buf + 4096, CHILD_BUF - 8192);	/* overlapping */
	(void)tb5k_reg(&a, buf + 4095, 1);			/* unaligned */
	memset(&con, 0, sizeof(con));
	con.service = service;
	con.cookie = cookie;
	if (ioctl(a.fd, TB5_IOC_CONNECT, &con))
		child_fail("CONNECT", errno);
	if (!tb5k_wait_event(&a, con.ep, 0, &cqe, WAIT_MS))
		child_fail("no CONNECTED", ETIMEDOUT);
	if (cqe.event != TB5_EVENT_CONNECTED)
		child_fail("connect refused", -cqe.status);
	/* The message the parent grants, and two that can only wait. */
	if ((ret = tb5k_post1(&a, TB5_OP_SEND, con.ep, h, 1, 0, BIG, 1)) ||
	    (ret = tb5k_post1(&a, TB5_OP_SEND, con.ep, h, 3, BIG, TB5K_MIB, 2)) ||
	    (ret = tb5k_post1(&a, TB5_OP_RECV, con.ep, h, 9, BIG + TB5K_MIB,
			      TB5K_MIB, 3)))
		child_fail("posting on pair 0", -ret);

	/* Pair 1, both ends ours. */
	tb5k_open(&c2, 2, 256);
	tb5k_open(&c3, 3, 256);
	tb5k_connect("child", &c2, &c3, 0x4b1100 + (uint64_t)iter, &cn);
	h2 = tb5k_reg(&c2, p2, PAIR1_BUF);
	h3 = tb5k_reg(&c3, p3, PAIR1_BUF);
	if ((ret = tb5k_post1(&c2, TB5_OP_RECV, cn.ep_l, h2, 1, 0, PAIR1_BUF, 1)) ||
	    (ret = tb5k_post1(&c2, TB5_OP_SEND, cn.ep_l, h2, 6, 0, 4096, 2)) ||
	    (ret = tb5k_post1(&c3, TB5_OP_SEND, cn.ep_c, h3, 1, 0, PAIR1_BUF, 3)) ||
	    (ret = tb5k_post1(&c3, TB5_OP_RECV, cn.ep_c, h3, 5, 0, 4096, 4)))
		child_fail("posting on pair 1", -ret);

	if (write(ready_fd, "r", 1) != 1)
		_exit(1);
	if (iter % 2 == 0) {
		for (;;)
			pause();
	}
	/* Be killed in the middle of pinning and unpinning. */
	for (;;) {
		uint8_t *x = tb5k_alloc(PAIR1_BUF);
		uint32_t hx;

		memset(x, 1, PAIR1_BUF);
		if (!tb5k_try_reg(&c3, x, PAIR1_BUF, &hx))
			tb5k_dereg(&c3, hx);
		tb5k_free(x, PAIR1_BUF);
	}
}

static int wait_readable(int fd, int timeout_ms)
{
	struct pollfd pfd = { fd, POLLIN, 0 };

	return poll(&pfd, 1, timeout_ms) == 1;
}

/*
 * Page cache and reclaimable slab come and go with whatever else the VM
 * does (tens of MiB either way): drop them before each look at MemFree, so
 * that what stays is memory that is really held. Root only; harmless if
 * refused.
 */
/* Memory the kernel itself holds, in KiB. */
static uint64_t kernel_kib(void)
{
	return tb5k_meminfo_kib("SUnreclaim") + tb5k_meminfo_kib("VmallocUsed") +
	       tb5k_meminfo_kib("PageTables") + tb5k_meminfo_kib("KernelStack");
}

static void drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);

	if (fd < 0)
		return;
	sync();
	if (write(fd, "3\n", 2) != 2)
		tb5k_note("could not drop caches: %s", strerror(errno));
	close(fd);
}

int main(int argc, char **argv)
{
	unsigned int iterations = 3, i;
	uint64_t tolerance = 16 * TB5K_MIB, seed = 0x6b111;
	uint64_t pinned0, pinned_parent, kern0 = 0, kern1, free0 = 0, free1, t0;
	struct tb5k_ctx p;
	uint8_t *rbuf;
	uint32_t h;

	for (i = 1; i < (unsigned int)argc; i++) {
		if (!strcmp(argv[i], "--iterations") && i + 1 < (unsigned int)argc)
			iterations = (unsigned int)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--tolerance-mib") &&
			 i + 1 < (unsigned int)argc)
			tolerance = strtoull(argv[++i], NULL, 0) * TB5K_MIB;
		else if (!strcmp(argv[i], "--seed") && i + 1 < (unsigned int)argc)
			seed = strtoull(argv[++i], NULL, 0);
		else {
			fprintf(stderr, "usage: %s [--iterations N] "
				"[--tolerance-mib T] [--seed S]\n", argv[0]);
			return 2;
		}
	}
	tb5k_init("kill", 600);
	srandom((unsigned int)seed);
	pinned0 = tb5k_pinned_pages();
	tb5k_note("seed 0x%llx, %u iterations, baseline pinned_pages %llu",
		  (unsigned long long)seed, iterations,
		  (unsigned long long)pinned0);

	tb5k_open(&p, 1, 1024);
	rbuf = tb5k_alloc(PARENT_BUF);
	memset(rbuf, 0xee, PARENT_BUF);
	/* Children never see the parent's pinned region. */
	TB5K_CHECK(!madvise(rbuf, PARENT_BUF, MADV_DONTFORK), "setup",
		   "madvise(MADV_DONTFORK): %s", strerror(errno));
	h = tb5k_reg(&p, rbuf, PARENT_BUF);
	pinned_parent = tb5k_pinned_pages();
	TB5K_CHECK(pinned_parent >= pinned0 + PARENT_BUF / 4096, "accounting",
		   "registering %llu MiB raised pinned_pages only from %llu to "
		   "%llu", (unsigned long long)(PARENT_BUF >> 20),
		   (unsigned long long)pinned0, (unsigned long long)pinned_parent);
	tb5k_pass("accounting (%llu MiB registered: pinned_pages %llu -> %llu)",
		  (unsigned long long)(PARENT_BUF >> 20),
		  (unsigned long long)pinned0, (unsigned long long)pinned_parent);

	for (i = 0; i < iterations; i++) {
		/*
		 * The baseline comes after the first child: it pays for what
		 * the kernel allocates once and keeps (worker pools, slab
		 * pages; about 14 MiB in the test VM), which is no leak.
		 */
		if (i == (iterations > 1)) {
			drop_caches();
			kern0 = kernel_kib();
			free0 = tb5k_meminfo_kib("MemFree");
		}
		char name[32], c;
		struct tb5_listen li;
		struct tb5_accept ac;
		struct tb5_cqe cqe;
		int pipefd[2], status, got_event = 0, left = 2, ret;
		uint64_t rx0, got, pinned;
		unsigned int delay_ms = (unsigned int)(random() % 30);
		pid_t pid;

		snprintf(name, sizeof(name), "iter%u", i);
		memset(&li, 0, sizeof(li));
		li.service = 0x4b1000 + i;
		TB5K_CHECK(!ioctl(p.fd, TB5_IOC_LISTEN, &li), name, "LISTEN: %s",
			   tb5k_errname(errno));
		TB5K_CHECK(!pipe(pipefd), name, "pipe: %s", strerror(errno));
		pid = fork();
		TB5K_CHECK(pid >= 0, name, "fork: %s", strerror(errno));
		if (pid == 0) {
			close(pipefd[0]);
			/* The parent's context is none of the child's business. */
			tb5k_close(&p);
			child((int)i, pipefd[1], li.service, li.cookie);
			_exit(0);
		}
		close(pipefd[1]);

		/* Accept the child, grant its message, and one more receive. */
		TB5K_CHECK(tb5k_wait_event(&p, li.ep, TB5_EVENT_INCOMING, &cqe,
					   WAIT_MS), name,
			   "the child did not connect");
		memset(&ac, 0, sizeof(ac));
		ac.listener = li.ep;
		t0 = tb5k_now_ms();
		while (ioctl(p.fd, TB5_IOC_ACCEPT, &ac)) {
			TB5K_CHECK(errno == EAGAIN && tb5k_now_ms() - t0 < 10000,
				   name, "ACCEPT: %s", tb5k_errname(errno));
			usleep(1000);
		}
		rx0 = tb5k_link_u64(1, "rx_bytes");
		ret = tb5k_post1(&p, TB5_OP_RECV, ac.ep, h, 1, 0, BIG, 0x10);
		TB5K_CHECK(!ret, name, "post recv: %s", tb5k_errname(ret));
		ret = tb5k_post1(&p, TB5_OP_RECV, ac.ep, h, 2, BIG, TB5K_MIB, 0x11);
		TB5K_CHECK(!ret, name, "post recv: %s", tb5k_errname(ret));
		if (!wait_readable(pipefd[0], WAIT_MS) || read(pipefd[0], &c, 1) != 1) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			tb5k_fail(name, "the child did not get ready (exit status "
				  "0x%x)", status);
		}
		close(pipefd[0]);

		/* Kill it once the message is moving. */
		t0 = tb5k_now_ms();
		while ((got = tb5k_link_u64(1, "rx_bytes") - rx0) < TB5K_MIB &&
		       tb5k_now_ms() - t0 < 20000)
			usleep(1000);
		usleep(delay_ms * 1000);
		TB5K_CHECK(!kill(pid, SIGKILL), name, "kill: %s", strerror(errno));
		TB5K_CHECK(waitpid(pid, &status, 0) == pid, name, "waitpid: %s",
			   strerror(errno));
		TB5K_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, name,
			   "the child ended by itself (status 0x%x)", status);
		tb5k_note("%s: killed the child %u ms after %llu bytes had "
			  "arrived%s", name, delay_ms, (unsigned long long)got,
			  i % 2 ? " (while it pinned and unpinned)" : "");

		/* Our side of the connection learns the peer is gone. */
		while (left || !got_event) {
			TB5K_CHECK(tb5k_next(&p, &cqe, WAIT_MS), name,
				   "%d receives or the PEER_CLOSED event missing "
				   "after the kill", left);
			if (cqe.op == TB5_CQE_EVENT) {
				TB5K_CHECK(cqe.ep == ac.ep &&
					   cqe.event == TB5_EVENT_PEER_CLOSED &&
					   cqe.status == -ECONNRESET, name,
					   "got %s, wanted PEER_CLOSED "
					   "-ECONNRESET", tb5k_cqe_str(&cqe));
				got_event = 1;
				continue;
			}
			TB5K_CHECK(cqe.op == TB5_CQE_RECV && cqe.ep == ac.ep &&
				   (cqe.user_data == 0x10 || cqe.user_data == 0x11),
				   name, "unexpected %s", tb5k_cqe_str(&cqe));
			/* The big one may have arrived whole before the kill. */
			TB5K_CHECK(cqe.status == -ECONNRESET ||
				   (cqe.user_data == 0x10 && !cqe.status &&
				    cqe.bytes == BIG), name,
				   "a receive completed with %s, wanted "
				   "-ECONNRESET", tb5k_cqe_str(&cqe));
			left--;
		}
		TB5K_CHECK(!tb5k_ep_close(&p, ac.ep) && !tb5k_ep_close(&p, li.ep),
			   name, "closing the endpoint and listener failed");
		tb5k_pass("%s.peer (receives completed, PEER_CLOSED -ECONNRESET)",
			  name);

		pinned = tb5k_wait_pinned(pinned_parent, 10000);
		TB5K_CHECK(pinned == pinned_parent, name, "pinned_pages is %llu "
			   "10 s after the kill; the parent alone holds %llu",
			   (unsigned long long)pinned,
			   (unsigned long long)pinned_parent);
		tb5k_pass("%s.pinned (back to %llu)", name,
			  (unsigned long long)pinned);
	}

	/*
	 * What the kernel held for the children came back. Counted where a
	 * module's memory lands (slab, vmalloc, page tables, stacks), not by
	 * MemFree: that also moves with this process and the rest of the VM,
	 * by up to 30 MiB either way between runs with caches dropped, while
	 * these stay within a few hundred KiB.
	 */
	t0 = tb5k_now_ms();
	do {
		drop_caches();
		kern1 = kernel_kib();
		if (kern1 <= kern0 + tolerance / 1024)
			break;
		usleep(100000);
	} while (tb5k_now_ms() - t0 < 10000);
	free1 = tb5k_meminfo_kib("MemFree");
	tb5k_note("kernel memory (SUnreclaim + VmallocUsed + PageTables + "
		  "KernelStack) after the first child %llu KiB, after the last "
		  "%llu KiB (%+lld KiB); tolerance %llu KiB; MemFree %+lld KiB",
		  (unsigned long long)kern0, (unsigned long long)kern1,
		  (long long)kern1 - (long long)kern0,
		  (unsigned long long)(tolerance / 1024),
		  (long long)free1 - (long long)free0);
	TB5K_CHECK(kern1 <= kern0 + tolerance / 1024, "meminfo",
		   "kernel memory grew from %llu KiB to %llu KiB (more than %llu "
		   "KiB) over %u killed children", (unsigned long long)kern0,
		   (unsigned long long)kern1,
		   (unsigned long long)(tolerance / 1024),
		   iterations - (iterations > 1));
	tb5k_pass("meminfo (kernel memory %llu KiB before, %llu KiB after)",
		  (unsigned long long)kern0, (unsigned long long)kern1);

	TB5K_CHECK(!tb5k_dereg(&p, h), "final", "deregistering: %s",
		   tb5k_errname(errno));
	tb5k_close(&p);
	tb5k_free(rbuf, PARENT_BUF);
	TB5K_CHECK(tb5k_wait_pinned(pinned0, 5000) == pinned0, "final",
		   "pinned_pages is %llu after the parent closed, baseline %llu",
		   (unsigned long long)tb5k_pinned_pages(),
		   (unsigned long long)pinned0);
	tb5k_pass("final (pinned_pages back to %llu)", (unsigned long long)pinned0);
	return 0;
}
