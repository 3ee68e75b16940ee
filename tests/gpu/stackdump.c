// SPDX-License-Identifier: MIT
//
// stackdump.c - every thread's user-space stack of a hung process, on a
// machine without gdb (the GPU machine has none). Preloaded into the
// processes under test (LD_PRELOAD=libtb5-stackdump.so); probe-hang.sh
// then sends each thread TB5_STACKDUMP_SIGNAL (SIGRTMIN+7) with tgkill,
// and the thread writes its own backtrace, one line per frame as
//
//   tid 1234 (comm) #3 0x7f..  /path/libtb5.so.1+0x1a2b3 symbol+0x10
//
// to $TB5_STACKDUMP_DIR/stacks.<pid>.txt (default /tmp). The offset in the
// object is what addr2line takes for the same build (symbols hidden from
// the dynamic table, as most of libtb5's are, show only there).
//
// backtrace() is not async-signal-safe in general; it is called once at
// load time so that its unwinder is loaded before any signal, and a dump
// is a diagnosis of a process that is hung anyway.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_FRAMES 48

static int dump_fd = -1;
static volatile int dump_lock;

static void dump_line(const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(dump_fd, s, n);

		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	void *frames[MAX_FRAMES];
	char comm[17] = "?", line[512];
	long tid = syscall(SYS_gettid);
	int n, i;

	(void)sig;
	(void)si;
	(void)uc;
	if (dump_fd < 0)
		return;
	prctl(PR_GET_NAME, comm);
	n = backtrace(frames, MAX_FRAMES);
	while (__atomic_exchange_n(&dump_lock, 1, __ATOMIC_ACQUIRE))
		;
	for (i = 1; i < n; i++) {	/* 0 is this handler */
		Dl_info di;
		int len;

		memset(&di, 0, sizeof(di));
		if (dladdr(frames[i], &di) && di.dli_fname) {
			len = snprintf(line, sizeof(line), "tid %ld (%s) #%d %p %s+%#lx %s+%#lx\n",
				       tid, comm, i, frames[i], di.dli_fname,
				       (unsigned long)((char *)frames[i] - (char *)di.dli_fbase),
				       di.dli_sname ? di.dli_sname : "?",
				       di.dli_saddr ? (unsigned long)((char *)frames[i] -
								      (char *)di.dli_saddr) : 0UL);
		} else {
			len = snprintf(line, sizeof(line), "tid %ld (%s) #%d %p ?\n", tid, comm,
				       i, frames[i]);
		}
		if (len > 0)
			dump_line(line, (size_t)len < sizeof(line) ? (size_t)len : sizeof(line) - 1);
	}
	dump_line("\n", 1);
	__atomic_store_n(&dump_lock, 0, __ATOMIC_RELEASE);
}

__attribute__((constructor)) static void stackdump_init(void)
{
	const char *dir = getenv("TB5_STACKDUMP_DIR");
	char path[4096];
	struct sigaction sa;
	void *warm[2];

	snprintf(path, sizeof(path), "%s/stacks.%d.txt", dir && *dir ? dir : "/tmp",
		 (int)getpid());
	dump_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (dump_fd < 0) {
		fprintf(stderr, "stackdump: cannot open %s: %m\n", path);
		return;
	}
	backtrace(warm, 2);	/* loads the unwinder now, not in a handler */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGRTMIN + 7, &sa, NULL);
}
