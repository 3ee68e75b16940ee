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
 *
 *   tb5k-kill --side a|b --dev /dev/tb5_N [--iterations N] [--tolerance-mib T]
 *             [--seed S] [--connect-s N]
 *
 * The same as two processes, one per end of a link (the tb backend links
 * two hosts, each holding one end). The parents meet over the link as
 * tb5k-xfer's sides do (side a listens on a well-known service, side b
 * connects until a is there, --connect-s, 120 s) and agree on the options
 * and the host ids; that control connection stays up through every kill.
 * Each holds a 17 MiB registered receive region. Iteration i (4 by
 * default) has a victim host, b's for i even and a's for i odd, so that
 * both hosts' teardown runs; the other side survives:
 *   - the survivor listens, and a barrier hands its service and cookie to
 *     the victim host, which forks a child that opens /dev/tb5_N itself,
 *     registers 24 MiB (twice, overlapping, plus an unaligned 1-byte
 *     region), connects to the survivor's listener and posts a 16 MiB send
 *     that the survivor's receive grants, a send nobody grants and a
 *     receive nobody sends to; in iterations 2 and 3 (of every 4) it then
 *     registers and deregisters 8 MiB in a loop, so that the kill may land
 *     mid-pin, in the others it sleeps;
 *   - once a random share of the message's first half has arrived (its
 *     link's rx_bytes), the survivor says so in a message on the control
 *     connection (the victim host's own tx_bytes cannot tell: the whole
 *     message may go onto its TX ring at once), and the victim host
 *     SIGKILLs the child and checks that pinned_pages returns to what its
 *     parent alone holds, and so does the kernel's own count of pinned
 *     pages (/proc/vmstat: nr_foll_pin_acquired - nr_foll_pin_released),
 *     which sees pages left pinned even where pinned_pages was lowered;
 *   - the survivor checks that its endpoint reports PEER_CLOSED
 *     (-ECONNRESET) and its two receives complete (-ECONNRESET, or the
 *     large one whole: then every byte is the child's), closes the
 *     endpoint and the listener, and checks its pinned pages too. On the
 *     tb backend with its default ring (4096 frames of 4 KiB) the whole
 *     message is on the TX ring by the time of the kill, and the dying
 *     file's release lets the ring drain before it unmaps and unpins the
 *     region: the message arrives whole, and its bytes show that the NHI
 *     read the child's pages to the end (under swiotlb=force, an unmap
 *     before the drain would send stale bounce buffers);
 *   - both meet at a barrier: the parents' control connection survived.
 * At the end each host checks its kernel memory as above (the baseline
 * before iteration 2: after each host's first child) and, once the two
 * have ended in step and closed everything, pinned_pages at its baseline.
 * pinned_pages counts every process of a host: nothing else on it may pin
 * meanwhile. The program names itself kill-a or kill-b in its PASS/FAIL
 * lines.
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

/* Memory the kernel itself holds, in KiB. */
static uint64_t kernel_kib(void)
{
	return tb5k_meminfo_kib("SUnreclaim") + tb5k_meminfo_kib("VmallocUsed") +
	       tb5k_meminfo_kib("PageTables") + tb5k_meminfo_kib("KernelStack");
}

/*
 * Page cache and reclaimable slab come and go with whatever else the VM
 * does (tens of MiB either way): drop them before each look at MemFree, so
 * that what stays is memory that is really held. Root only; harmless if
 * refused.
 */
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

/*
 * What the kernel held for the children came back. Counted where a
 * module's memory lands (slab, vmalloc, page tables, stacks), not by
 * MemFree: that also moves with this process and the rest of the VM, by up
 * to 30 MiB either way between runs with caches dropped, while these stay
 * within a few hundred KiB.
 */
static void check_kernel_memory(uint64_t kern0, uint64_t free0,
				uint64_t tolerance, unsigned int children)
{
	uint64_t kern1, free1, t0 = tb5k_now_ms();

	do {
		drop_caches();
		kern1 = kernel_kib();
		if (kern1 <= kern0 + tolerance / 1024)
			break;
		usleep(100000);
	} while (tb5k_now_ms() - t0 < 10000);
	free1 = tb5k_meminfo_kib("MemFree");
	tb5k_note("kernel memory (SUnreclaim + VmallocUsed + PageTables + "
		  "KernelStack) at the baseline %llu KiB, after the last child "
		  "%llu KiB (%+lld KiB); tolerance %llu KiB; MemFree %+lld KiB",
		  (unsigned long long)kern0, (unsigned long long)kern1,
		  (long long)kern1 - (long long)kern0,
		  (unsigned long long)(tolerance / 1024),
		  (long long)free1 - (long long)free0);
	TB5K_CHECK(kern1 <= kern0 + tolerance / 1024, "meminfo",
		   "kernel memory grew from %llu KiB to %llu KiB (more than %llu "
		   "KiB) over %u killed children", (unsigned long long)kern0,
		   (unsigned long long)kern1,
		   (unsigned long long)(tolerance / 1024), children);
	tb5k_pass("meminfo (kernel memory %llu KiB before, %llu KiB after)",
		  (unsigned long long)kern0, (unsigned long long)kern1);
}

/* -- two processes, one per end ----------------------------------------- */

#define SVC2_CTRL	0x6b114000ull	/* a's well-known control listener */
#define SVC2_KILL	0x6b114100ull	/* + iteration: the survivor's listener */
#define SVC2_FIN	0x6b114200ull	/* the last connection, to end in step */
#define PROTO2		1		/* what the hello barrier's values mean */
#define WAIT2_MS	120000		/* one completion or barrier, under TCG */
#define MOVE2_MS	60000		/* the child's message moving */
#define CHILD_BYTE	0x5a		/* what the child's message holds */
#define SIG_TAG		0x6d0e		/* "moving", on the control connection */
#define SIG_RECV_UD	0x5160ull
#define SIG_SEND_UD	0x5161ull

static struct {
	int me;			/* 0: side a, 1: side b */
	int dev;
	int wait_s;
	unsigned int iterations;
	struct tb5k_ctx p;	/* the parent's open file */
	struct tb5k_ctl ctl;	/* the parents' control connection */
	uint8_t *rbuf;		/* the parent's receive region */
	uint32_t h;
	uint8_t *sig;		/* the "moving" message's region */
	uint32_t h_sig;
	uint64_t pinned_parent;	/* pinned_pages with what the parent holds */
	int64_t pins_parent;	/* foll_pins() then; -1: not counted */
	unsigned int mid;	/* kills of ours before the message was whole */
} k2;

/*
 * Pages pinned with FOLL_PIN on this host, by anyone: the kernel's own
 * count (nr_foll_pin_acquired - nr_foll_pin_released in /proc/vmstat), so
 * that pages left pinned are seen even when tb5's pinned_pages was
 * decremented for them. -1 when the kernel does not say.
 */
static int64_t foll_pins(void)
{
	unsigned long long v, acq = 0, rel = 0;
	int have = 0, fd;
	char key[64];
	FILE *f;

	/* Fold the CPUs' pending deltas into the totals first (root only). */
	fd = open("/proc/sys/vm/stat_refresh", O_WRONLY);
	if (fd >= 0) {
		if (write(fd, "1\n", 2) != 2)
			tb5k_note("stat_refresh: %s", strerror(errno));
		close(fd);
	}
	f = fopen("/proc/vmstat", "re");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %llu", key, &v) == 2) {
		if (!strcmp(key, "nr_foll_pin_acquired")) {
			acq = v;
			have |= 1;
		} else if (!strcmp(key, "nr_foll_pin_released")) {
			rel = v;
			have |= 2;
		}
	}
	fclose(f);
	return have == 3 ? (int64_t)(acq - rel) : -1;
}

/*
 * The victim host's child: its own open file of the link, a connection to
 * the survivor's listener, a message the survivor grants and two
 * operations that can only wait; then it sleeps, or pins and unpins, until
 * it is killed. It reports by exiting early.
 */
static void child2(int ready_fd, uint64_t service, uint64_t cookie,
		   int pin_loop)
{
	struct tb5k_ctx a;
	struct tb5_cqe cqe;
	uint8_t *buf = tb5k_alloc(CHILD_BUF);
	uint32_t h;
	int64_t ep;
	int ret;

	memset(buf, CHILD_BYTE, CHILD_BUF);
	tb5k_open(&a, k2.dev, 256);
	h = tb5k_reg(&a, buf, CHILD_BUF);
	(void)tb5k_reg(&a, buf + 4096, CHILD_BUF - 8192);	/* overlapping */
	(void)tb5k_reg(&a, buf + 4095, 1);			/* unaligned */
	ep = tb5k_connect_start(&a, service, cookie);
	if (ep < 0)
		child_fail("CONNECT", (int)-ep);
	if (!tb5k_wait_event(&a, (uint32_t)ep, 0, &cqe, WAIT2_MS))
		child_fail("no CONNECTED", ETIMEDOUT);
	if (cqe.event != TB5_EVENT_CONNECTED)
		child_fail("connect refused", -cqe.status);
	/* The message the survivor grants, and two that can only wait. */
	ret = tb5k_post1(&a, TB5_OP_SEND, (uint32_t)ep, h, 1, 0, BIG, 1);
	if (!ret)
		ret = tb5k_post1(&a, TB5_OP_SEND, (uint32_t)ep, h, 3, BIG,
				 TB5K_MIB, 2);
	if (!ret)
		ret = tb5k_post1(&a, TB5_OP_RECV, (uint32_t)ep, h, 9,
				 BIG + TB5K_MIB, TB5K_MIB, 3);
	if (ret)
		child_fail("posting", -ret);
	if (write(ready_fd, "r", 1) != 1)
		_exit(1);
	if (!pin_loop) {
		for (;;)
			pause();
	}
	/* Be killed in the middle of pinning and unpinning. */
	for (;;) {
		uint8_t *x = tb5k_alloc(PAIR1_BUF);
		uint32_t hx;

		memset(x, 1, PAIR1_BUF);
		if (!tb5k_try_reg(&a, x, PAIR1_BUF, &hx))
			tb5k_dereg(&a, hx);
		tb5k_free(x, PAIR1_BUF);
	}
}

/*
 * pinned_pages back to what the parent alone holds within 10 s, and the
 * kernel's count of pinned pages back to what it was then.
 */
static void check_pinned_parent(const char *name, const char *when)
{
	uint64_t pinned = tb5k_wait_pinned(k2.pinned_parent, 10000), t0;
	int64_t pins;

	TB5K_CHECK(pinned == k2.pinned_parent, name, "pinned_pages is %llu 10 s "
		   "after %s; the parent alone holds %llu",
		   (unsigned long long)pinned, when,
		   (unsigned long long)k2.pinned_parent);
	if (k2.pins_parent < 0)
		return;
	t0 = tb5k_now_ms();
	while ((pins = foll_pins()) != k2.pins_parent &&
	       tb5k_now_ms() - t0 < 10000)
		usleep(20000);
	TB5K_CHECK(pins == k2.pins_parent, name, "the kernel counts %lld pages "
		   "pinned (/proc/vmstat: nr_foll_pin_acquired - released) 10 "
		   "s after %s, %lld with the parent alone: pages left pinned "
		   "while pinned_pages reads %llu", (long long)pins, when,
		   (long long)k2.pins_parent, (unsigned long long)pinned);
}

/* The victim host's half of iteration @i: fork, wait, kill, look. */
static void victim2(const char *name, unsigned int i, uint64_t service,
		    uint64_t cookie, uint64_t *got)
{
	int pipefd[2], status = 0, pin_loop = (i / 2) % 2, ret;
	struct tb5_cqe cqe;
	uint64_t tx0, arrived;
	pid_t pid;
	char c;

	/*
	 * Before the fork: the survivor may grant the message at once. It
	 * tells us when the message is moving, in a message of its own on
	 * the control connection: our tx_bytes cannot, as the whole 16 MiB
	 * may go onto the TX ring at once and leave it at the link's pace.
	 */
	tx0 = tb5k_link_u64(k2.dev, "tx_bytes");
	ret = tb5k_post1(&k2.p, TB5_OP_RECV, k2.ctl.ep, k2.h_sig, SIG_TAG, 0, 8,
			 SIG_RECV_UD);
	TB5K_CHECK(!ret, name, "post the receive of \"moving\": %s",
		   tb5k_errname(ret));
	TB5K_CHECK(!pipe(pipefd), name, "pipe: %s", strerror(errno));
	pid = fork();
	TB5K_CHECK(pid >= 0, name, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(pipefd[0]);
		/* The parent's file is none of the child's business. */
		tb5k_close(&k2.p);
		child2(pipefd[1], service, cookie, pin_loop);
		_exit(0);
	}
	close(pipefd[1]);
	if (!wait_readable(pipefd[0], WAIT2_MS) || read(pipefd[0], &c, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		tb5k_fail(name, "the child did not get ready (exit status 0x%x)",
			  status);
	}
	close(pipefd[0]);

	/* Kill it once the survivor says the message is moving. */
	if (!tb5k_wait_user_data(&k2.p, SIG_RECV_UD, &cqe, MOVE2_MS + WAIT2_MS)) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		tb5k_fail(name, "side %c never said that the message moves",
			  tb5k_side_ch(!k2.me));
	}
	TB5K_CHECK(!kill(pid, SIGKILL), name, "kill: %s", strerror(errno));
	*got = tb5k_link_u64(k2.dev, "tx_bytes") - tx0;
	TB5K_CHECK(cqe.op == TB5_CQE_RECV && !cqe.status && cqe.bytes == 8,
		   name, "the \"moving\" message: %s", tb5k_cqe_str(&cqe));
	TB5K_CHECK(waitpid(pid, &status, 0) == pid, name, "waitpid: %s",
		   strerror(errno));
	TB5K_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, name,
		   "the child ended by itself (status 0x%x)", status);
	memcpy(&arrived, k2.sig, sizeof(arrived));
	tb5k_note("%s: killed our child as side %c had %llu bytes; %llu had "
		  "gone onto our TX ring%s", name, tb5k_side_ch(!k2.me),
		  (unsigned long long)arrived, (unsigned long long)*got,
		  pin_loop ? ", while it pinned and unpinned" : "");

	check_pinned_parent(name, "the kill");
	tb5k_pass("%s.pinned (our child killed: pinned_pages back to %llu%s)",
		  name, (unsigned long long)k2.pinned_parent,
		  k2.pins_parent < 0 ? "" : ", and the kernel's count of pinned "
		  "pages");
}

/*
 * The survivor's half of iteration @i: accept the victim's child, grant
 * its message, and see the kill. 1 when the message arrived whole.
 */
static int survivor2(const char *name, uint32_t listener, uint64_t rx0)
{
	/* Somewhere in the first half of the message. */
	uint64_t at = 64 * 1024 + (uint64_t)random() % (BIG / 2), got, t0;
	int got_event = 0, left = 2, whole = 0, signalled = 0, ret;
	struct tb5_cqe cqe;
	uint32_t ep;

	ep = tb5k_accept_one(name, &k2.p, listener, WAIT2_MS,
			     "the other host's child");
	ret = tb5k_post1(&k2.p, TB5_OP_RECV, ep, k2.h, 1, 0, BIG, 0x10);
	TB5K_CHECK(!ret, name, "post recv: %s", tb5k_errname(ret));
	ret = tb5k_post1(&k2.p, TB5_OP_RECV, ep, k2.h, 2, BIG, TB5K_MIB, 0x11);
	TB5K_CHECK(!ret, name, "post recv: %s", tb5k_errname(ret));

	/*
	 * Tell the victim's host once @at bytes have arrived. Without a
	 * pause: the message takes tens of ms, a poll that sleeps may wake
	 * to find it whole.
	 */
	t0 = tb5k_now_ms();
	while ((got = tb5k_link_u64(k2.dev, "rx_bytes") - rx0) < at) {
		if (tb5k_now_ms() - t0 >= MOVE2_MS) {
			tb5k_note("%s: the message did not move %llu bytes within "
				  "%d s", name, (unsigned long long)at,
				  MOVE2_MS / 1000);
			break;
		}
	}
	memcpy(k2.sig, &got, 8);
	ret = tb5k_post1(&k2.p, TB5_OP_SEND, k2.ctl.ep, k2.h_sig, SIG_TAG, 0, 8,
			 SIG_SEND_UD);
	TB5K_CHECK(!ret, name, "post \"moving\": %s", tb5k_errname(ret));

	/* Our end of the connection learns that the peer is gone. */
	while (left || !got_event || !signalled) {
		TB5K_CHECK(tb5k_next(&k2.p, &cqe, MOVE2_MS + WAIT2_MS), name,
			   "%d receives or the PEER_CLOSED event missing: side "
			   "%c's child was not killed, or we were not told",
			   left, tb5k_side_ch(!k2.me));
		if (cqe.op == TB5_CQE_EVENT) {
			TB5K_CHECK(cqe.ep == ep &&
				   cqe.event == TB5_EVENT_PEER_CLOSED &&
				   cqe.status == -ECONNRESET, name,
				   "got %s, wanted PEER_CLOSED -ECONNRESET",
				   tb5k_cqe_str(&cqe));
			TB5K_CHECK(!got_event, name, "a second event: %s",
				   tb5k_cqe_str(&cqe));
			got_event = 1;
			continue;
		}
		if (cqe.user_data == SIG_SEND_UD) {
			TB5K_CHECK(cqe.op == TB5_CQE_SEND && !cqe.status &&
				   cqe.ep == k2.ctl.ep && !signalled, name,
				   "\"moving\" completed as %s",
				   tb5k_cqe_str(&cqe));
			signalled = 1;
			continue;
		}
		TB5K_CHECK(cqe.op == TB5_CQE_RECV && cqe.ep == ep &&
			   (cqe.user_data == 0x10 || cqe.user_data == 0x11),
			   name, "unexpected %s", tb5k_cqe_str(&cqe));
		/* The big one may have arrived whole before the kill. */
		if (cqe.user_data == 0x10 && !cqe.status) {
			int64_t bad;

			TB5K_CHECK(cqe.bytes == BIG, name, "%s",
				   tb5k_cqe_str(&cqe));
			bad = tb5k_verify_byte(k2.rbuf, BIG, CHILD_BYTE);
			TB5K_CHECK(bad < 0, name, "the message arrived whole but "
				   "byte %lld is 0x%02x, not the child's 0x%02x",
				   (long long)bad, k2.rbuf[bad < 0 ? 0 : bad],
				   CHILD_BYTE);
			whole = 1;
		} else {
			TB5K_CHECK(cqe.status == -ECONNRESET, name, "a receive "
				   "completed with %s, wanted -ECONNRESET",
				   tb5k_cqe_str(&cqe));
		}
		left--;
	}
	TB5K_CHECK(tb5k_verify_byte(k2.rbuf + BIG, TB5K_MIB, 0xee) < 0, name,
		   "the receive nobody sent to was written");
	TB5K_CHECK(!tb5k_ep_close(&k2.p, ep) && !tb5k_ep_close(&k2.p, listener),
		   name, "closing the endpoint and listener failed");
	check_pinned_parent(name, "the peer's kill");
	tb5k_pass("%s.peer (side %c's child killed after %llu bytes had "
		  "arrived: receives completed%s, PEER_CLOSED -ECONNRESET, "
		  "pinned_pages %llu)", name, tb5k_side_ch(!k2.me),
		  (unsigned long long)got, whole ? ", the message whole" : "",
		  (unsigned long long)k2.pinned_parent);
	return whole;
}

/* Iteration @i; 1 when the child killed in it was ours. */
static int iteration2(unsigned int i)
{
	int victim = i % 2 == 0, mine = k2.me == victim;
	uint64_t cookie = 0, mine_v[2] = { 0, 0 }, peer_v[2], rx0 = 0;
	uint32_t listener = 0;
	char name[32];

	snprintf(name, sizeof(name), "iter%u", i);
	tb5k_note("%s: side %c's child is killed", name, tb5k_side_ch(victim));
	if (!mine) {
		memset(k2.rbuf, 0xee, PARENT_BUF);
		listener = tb5k_listen(name, &k2.p, SVC2_KILL + i, 0, &cookie);
		rx0 = tb5k_link_u64(k2.dev, "rx_bytes");
	}
	tb5k_ctl_barrier("listen", &k2.ctl, &cookie, 1, mine ? &cookie : NULL);
	if (mine)
		victim2(name, i, SVC2_KILL + i, cookie, &mine_v[0]);
	else
		mine_v[0] = (uint64_t)survivor2(name, listener, rx0);
	/* The parents' control connection lived through it. */
	tb5k_ctl_barrier("killed", &k2.ctl, mine_v, 1, peer_v);
	if (mine) {
		tb5k_note("%s: side %c %s the message whole", name,
			  tb5k_side_ch(!k2.me), peer_v[0] ? "received" :
			  "did not receive");
		k2.mid += !peer_v[0];
	} else {
		tb5k_note("%s: side %c killed its child when %llu bytes had "
			  "gone onto its TX ring", name, tb5k_side_ch(!k2.me),
			  (unsigned long long)peer_v[0]);
	}
	return mine;
}

/* Make the control connection and agree on the options and host ids. */
static void meet2(void)
{
	const char *name = "connect";
	uint64_t mine[6], peer[6];
	struct tb5_info info;
	char other = tb5k_side_ch(!k2.me);

	tb5k_ctl_meet(name, &k2.ctl, &k2.p, k2.me, SVC2_CTRL, k2.wait_s,
		      WAIT2_MS + MOVE2_MS);
	/* A child must not share the page the module writes into. */
	TB5K_CHECK(!madvise(k2.ctl.buf, 4096, MADV_DONTFORK), name,
		   "madvise(MADV_DONTFORK): %s", strerror(errno));
	tb5k_get_info(&k2.p, &info);
	mine[0] = PROTO2;
	mine[1] = (uint64_t)k2.me;
	mine[2] = k2.iterations;
	mine[3] = BIG;
	mine[4] = info.local_host;
	mine[5] = info.peer_host;
	tb5k_ctl_barrier("hello", &k2.ctl, mine, 6, peer);
	TB5K_CHECK(peer[0] == PROTO2 && peer[3] == BIG, name, "side %c speaks "
		   "protocol %llu with %llu-byte messages, we %u with %llu",
		   other, (unsigned long long)peer[0],
		   (unsigned long long)peer[3], PROTO2,
		   (unsigned long long)BIG);
	TB5K_CHECK(peer[1] == (uint64_t)!k2.me, name, "the peer is side %c too: "
		   "one side a and one side b, please", tb5k_side_ch(k2.me));
	TB5K_CHECK(peer[2] == k2.iterations, name, "side %c runs %llu "
		   "iterations, we %u", other, (unsigned long long)peer[2],
		   k2.iterations);
	TB5K_CHECK(peer[4] == info.peer_host && peer[5] == info.local_host, name,
		   "host ids: we are 0x%llx with peer 0x%llx, side %c says it is "
		   "0x%llx with peer 0x%llx", (unsigned long long)info.local_host,
		   (unsigned long long)info.peer_host, other,
		   (unsigned long long)peer[4], (unsigned long long)peer[5]);
	tb5k_pass("connect (side %c on /dev/tb5_%d: met side %c, host 0x%llx)",
		  tb5k_side_ch(k2.me), k2.dev, other,
		  (unsigned long long)info.peer_host);
}

/*
 * End in step (as tb5k-unplug's sides do): b closes its end of a last
 * connection once its last barrier is over; a, seeing that, closes the
 * control connection, and b closes its end after a's: nobody closes under
 * the other's send.
 */
static void finish2(void)
{
	const char *name = "end";
	struct tb5k_ctx *c = &k2.p;
	uint64_t cookie = 0;
	struct tb5_cqe cqe;
	uint32_t l = 0, ep;

	if (k2.me == 0)
		l = tb5k_listen(name, c, SVC2_FIN, 0, &cookie);
	tb5k_ctl_barrier("end", &k2.ctl, &cookie, 1, k2.me ? &cookie : NULL);
	if (k2.me == 0) {
		ep = tb5k_accept_one(name, c, l, WAIT2_MS, "the last connection");
		TB5K_CHECK(tb5k_wait_event(c, ep, 0, &cqe, 2 * WAIT2_MS), name,
			   "side b did not close its last endpoint");
		TB5K_CHECK(cqe.event == TB5_EVENT_PEER_CLOSED, name, "the last "
			   "connection: %s, wanted PEER_CLOSED",
			   tb5k_cqe_str(&cqe));
		TB5K_CHECK(!tb5k_ep_close(c, ep) && !tb5k_ep_close(c, l) &&
			   !tb5k_ep_close(c, k2.ctl.ep), name,
			   "closing at the end");
	} else {
		int64_t e = tb5k_connect_start(c, SVC2_FIN, cookie);

		TB5K_CHECK(e > 0, name, "TB5_IOC_CONNECT: %s",
			   tb5k_errname((int)e));
		tb5k_connect_wait(name, c, (uint32_t)e, WAIT2_MS,
				  "the last connection");
		TB5K_CHECK(!tb5k_ep_close(c, (uint32_t)e), name, "closing the "
			   "last connection");
		TB5K_CHECK(tb5k_wait_event(c, k2.ctl.ep, 0, &cqe, 2 * WAIT2_MS),
			   name, "side a did not close the control connection");
		TB5K_CHECK(cqe.event == TB5_EVENT_PEER_CLOSED, name, "the control "
			   "connection: %s, wanted PEER_CLOSED",
			   tb5k_cqe_str(&cqe));
		TB5K_CHECK(!tb5k_ep_close(c, k2.ctl.ep), name, "closing the "
			   "control connection");
	}
	tb5k_ctl_release(name, &k2.ctl);
	TB5K_CHECK(!tb5k_next(c, &cqe, 100), name, "unexpected at the end: %s",
		   tb5k_cqe_str(&cqe));
	tb5k_pass("end (%u barriers on the control connection, which lived "
		  "through %u kills; side %c is done too)", k2.ctl.step,
		  k2.iterations, tb5k_side_ch(!k2.me));
}

static int run2(uint64_t tolerance, uint64_t seed)
{
	/* After each host's first child: what the kernel keeps is no leak. */
	unsigned int i, base = k2.iterations > 2 ? 2 : 0, children = 0;
	uint64_t pinned0, kern0 = 0, free0 = 0;
	char buf[32];

	srandom((unsigned int)seed + (unsigned int)k2.me);
	TB5K_CHECK(!tb5k_link_text(k2.dev, "backend", buf, sizeof(buf)), "setup",
		   "no /sys/class/tb5/tb5_%d", k2.dev);
	TB5K_CHECK(!tb5k_wait_link_state(k2.dev, "ready",
					 (unsigned int)k2.wait_s * 1000),
		   "setup", "tb5_%d is not ready after %d s", k2.dev, k2.wait_s);
	pinned0 = tb5k_pinned_pages();
	tb5k_note("side %c on /dev/tb5_%d (%s), seed 0x%llx, %u iterations, "
		  "baseline pinned_pages %llu", tb5k_side_ch(k2.me), k2.dev, buf,
		  (unsigned long long)seed, k2.iterations,
		  (unsigned long long)pinned0);
	tb5k_open(&k2.p, k2.dev, 1024);
	meet2();

	k2.rbuf = tb5k_alloc(PARENT_BUF);
	/* Children never see the parent's pinned region. */
	TB5K_CHECK(!madvise(k2.rbuf, PARENT_BUF, MADV_DONTFORK), "setup",
		   "madvise(MADV_DONTFORK): %s", strerror(errno));
	k2.h = tb5k_reg(&k2.p, k2.rbuf, PARENT_BUF);
	k2.sig = tb5k_alloc(4096);
	TB5K_CHECK(!madvise(k2.sig, 4096, MADV_DONTFORK), "setup",
		   "madvise(MADV_DONTFORK): %s", strerror(errno));
	k2.h_sig = tb5k_reg(&k2.p, k2.sig, 4096);
	k2.pinned_parent = tb5k_pinned_pages();
	k2.pins_parent = foll_pins();
	if (k2.pins_parent < 0)
		tb5k_note("no nr_foll_pin_* in /proc/vmstat: pinned_pages alone "
			  "is checked");
	TB5K_CHECK(k2.pinned_parent >= pinned0 + PARENT_BUF / 4096 + 1,
		   "accounting",
		   "registering %llu MiB raised pinned_pages only from %llu to "
		   "%llu", (unsigned long long)(PARENT_BUF >> 20),
		   (unsigned long long)pinned0,
		   (unsigned long long)k2.pinned_parent);
	tb5k_pass("accounting (%llu MiB registered: pinned_pages %llu -> %llu)",
		  (unsigned long long)(PARENT_BUF >> 20),
		  (unsigned long long)pinned0,
		  (unsigned long long)k2.pinned_parent);

	for (i = 0; i < k2.iterations; i++) {
		if (i == base) {
			drop_caches();
			kern0 = kernel_kib();
			free0 = tb5k_meminfo_kib("MemFree");
		}
		if (iteration2(i) && i >= base)
			children++;
	}
	check_kernel_memory(kern0, free0, tolerance, children);
	tb5k_note("%u of our %u children were killed before the message had "
		  "arrived whole", k2.mid, (k2.iterations + (unsigned int)k2.me) / 2);

	finish2();
	TB5K_CHECK(!tb5k_dereg(&k2.p, k2.h) && !tb5k_dereg(&k2.p, k2.h_sig),
		   "final", "deregistering: %s", tb5k_errname(errno));
	tb5k_close(&k2.p);
	tb5k_free(k2.rbuf, PARENT_BUF);
	tb5k_free(k2.sig, 4096);
	TB5K_CHECK(tb5k_wait_pinned(pinned0, 5000) == pinned0, "final",
		   "pinned_pages is %llu after the parent closed, baseline %llu",
		   (unsigned long long)tb5k_pinned_pages(),
		   (unsigned long long)pinned0);
	tb5k_pass("final (pinned_pages back to %llu)", (unsigned long long)pinned0);
	return 0;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [--iterations N] [--tolerance-mib T] [--seed S]\n"
		"       %s --side a|b --dev /dev/tb5_N [--iterations N] "
		"[--tolerance-mib T] [--seed S] [--connect-s N]\n", prog, prog);
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned int iterations = 3, i;
	int two = 0, iterations_set = 0;
	uint64_t tolerance = 16 * TB5K_MIB, seed = 0x6b111;
	uint64_t pinned0, pinned_parent, kern0 = 0, free0 = 0, t0;
	struct tb5k_ctx p;
	uint8_t *rbuf;
	uint32_t h;

	k2.me = -1;
	k2.dev = -1;
	k2.wait_s = 120;
	for (i = 1; i < (unsigned int)argc; i++) {
		if (!strcmp(argv[i], "--iterations") && i + 1 < (unsigned int)argc) {
			iterations = (unsigned int)strtoul(argv[++i], NULL, 0);
			iterations_set = 1;
		} else if (!strcmp(argv[i], "--tolerance-mib") &&
			   i + 1 < (unsigned int)argc) {
			tolerance = strtoull(argv[++i], NULL, 0) * TB5K_MIB;
		} else if (!strcmp(argv[i], "--seed") && i + 1 < (unsigned int)argc) {
			seed = strtoull(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--side") && i + 1 < (unsigned int)argc) {
			i++;
			if (!strcmp(argv[i], "a"))
				k2.me = 0;
			else if (!strcmp(argv[i], "b"))
				k2.me = 1;
			else
				usage(argv[0]);
			two = 1;
		} else if (!strcmp(argv[i], "--dev") && i + 1 < (unsigned int)argc) {
			char tail;

			if (sscanf(argv[++i], "/dev/tb5_%d%c", &k2.dev, &tail) != 1 ||
			    k2.dev < 0)
				usage(argv[0]);
			two = 1;
		} else if (!strcmp(argv[i], "--connect-s") &&
			   i + 1 < (unsigned int)argc) {
			k2.wait_s = atoi(argv[++i]);
			two = 1;
		} else {
			usage(argv[0]);
		}
	}
	if (two) {
		/* Two processes, one per end: --side and --dev go together. */
		if (k2.me < 0 || k2.dev < 0 || k2.wait_s < 1)
			usage(argv[0]);
		k2.iterations = iterations_set ? iterations : 4;
		if (!k2.iterations)
			usage(argv[0]);
		tb5k_init(k2.me ? "kill-b" : "kill-a",
			  600 + 120 * k2.iterations + 2 * (unsigned int)k2.wait_s);
		return run2(tolerance, seed);
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

	check_kernel_memory(kern0, free0, tolerance,
			    iterations - (iterations > 1));

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
