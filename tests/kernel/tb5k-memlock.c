// SPDX-License-Identifier: MIT
/*
 * tb5k-memlock - registered pages are charged to RLIMIT_MEMLOCK.
 *
 *   tb5k-memlock
 *
 * A child opens /dev/tb5_0 as root, then becomes nobody (no CAP_IPC_LOCK)
 * with RLIMIT_MEMLOCK at 1 MiB. Registrations must then be charged page by
 * page (an unaligned 2-byte region spans 2 pages) to the process's locked
 * memory (VmLck in /proc/self/status) and to pinned_pages, be refused once
 * they would exceed the limit, and be uncharged on deregistration and when
 * the file is closed.
 */
#include "tb5k.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define KIB 1024u

static void expect_lck(const char *name, uint64_t want_kib, uint64_t pinned0,
		       uint64_t want_pages)
{
	uint64_t v = tb5k_vmlck_kib(), p = tb5k_pinned_pages();

	TB5K_CHECK(v == want_kib, name, "VmLck is %llu kB, wanted %llu kB",
		   (unsigned long long)v, (unsigned long long)want_kib);
	TB5K_CHECK(p == pinned0 + want_pages, name, "pinned_pages is %llu, "
		   "wanted %llu", (unsigned long long)p,
		   (unsigned long long)(pinned0 + want_pages));
}

static void child(uint64_t pinned0)
{
	struct rlimit rl = { 1024 * KIB, 1024 * KIB };
	struct tb5k_ctx c;
	uint8_t *buf = tb5k_alloc(4 * 1024 * KIB);
	uint32_t h1, h2, h3, h4;
	int ret;

	memset(buf, 1, 4 * 1024 * KIB);
	tb5k_open(&c, 0, 64);
	TB5K_CHECK(!setrlimit(RLIMIT_MEMLOCK, &rl), "setup", "setrlimit: %s",
		   strerror(errno));
	TB5K_CHECK(!setresgid(65534, 65534, 65534) &&
		   !setresuid(65534, 65534, 65534), "setup",
		   "becoming nobody: %s", strerror(errno));
	expect_lck("start", 0, pinned0, 0);

	h1 = tb5k_reg(&c, buf, 512 * KIB);
	expect_lck("charge", 512, pinned0, 128);
	h2 = tb5k_reg(&c, buf + 4095, 2);	/* two pages */
	expect_lck("charge-unaligned", 520, pinned0, 130);
	h3 = tb5k_reg(&c, buf + 1024 * KIB, 256 * KIB);
	expect_lck("charge", 776, pinned0, 194);
	tb5k_pass("charge (VmLck and pinned_pages follow each registration)");

	ret = tb5k_try_reg(&c, buf + 2048 * KIB, 512 * KIB, &h4);
	TB5K_CHECK(ret == -ENOMEM || ret == -EPERM, "limit", "a registration "
		   "beyond RLIMIT_MEMLOCK: %s, wanted ENOMEM",
		   ret ? tb5k_errname(ret) : "accepted");
	expect_lck("limit", 776, pinned0, 194);
	tb5k_pass("limit (%s beyond RLIMIT_MEMLOCK, nothing charged)",
		  tb5k_errname(ret));

	TB5K_CHECK(!tb5k_dereg(&c, h1), "uncharge", "DEREG_MEM failed");
	expect_lck("uncharge", 264, pinned0, 66);
	h4 = tb5k_reg(&c, buf + 2048 * KIB, 512 * KIB);
	expect_lck("uncharge", 776, pinned0, 194);
	(void)h2;
	(void)h3;
	(void)h4;
	tb5k_close(&c);
	expect_lck("close", 0, pinned0, 0);
	tb5k_pass("uncharge (deregistration and close give it all back)");
	exit(0);
}

int main(void)
{
	uint64_t pinned0;
	int status;
	pid_t pid;

	tb5k_init("memlock", 120);
	pinned0 = tb5k_pinned_pages();
	pid = fork();
	TB5K_CHECK(pid >= 0, "fork", "%s", strerror(errno));
	if (!pid)
		child(pinned0);
	TB5K_CHECK(waitpid(pid, &status, 0) == pid, "wait", "%s", strerror(errno));
	TB5K_CHECK(WIFEXITED(status) && !WEXITSTATUS(status), "child",
		   "the child failed (status 0x%x)", status);
	tb5k_check_pinned_back(pinned0);
	return 0;
}
