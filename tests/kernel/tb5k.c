// SPDX-License-Identifier: MIT
/*
 * tb5k.c - helpers shared by the VM tests of tb5.ko: reporting, sysfs,
 * contexts with their completion queue, endpoints, posting, patterns.
 */
#include "tb5k.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static const char *prog_name = "tb5k";

/* -- reporting ------------------------------------------------------------ */

static void watchdog(int sig)
{
	static const char pre[] = "FAIL ";
	static const char post[] = ".watchdog: the program hung; watchdog expired\n";

	(void)sig;
	/* Only async-signal-safe calls here. */
	if (write(STDOUT_FILENO, pre, sizeof(pre) - 1) < 0 ||
	    write(STDOUT_FILENO, prog_name, strlen(prog_name)) < 0 ||
	    write(STDOUT_FILENO, post, sizeof(post) - 1) < 0)
		_exit(3);
	_exit(3);
}

void tb5k_init(const char *prog, unsigned int watchdog_s)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

	prog_name = prog;
	setvbuf(stdout, NULL, _IOLBF, 0);
	setvbuf(stderr, NULL, _IOLBF, 0);
	/* The module counts pins against RLIMIT_MEMLOCK; we test more than 8 MiB. */
	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		tb5k_note("setrlimit(RLIMIT_MEMLOCK, unlimited): %s", strerror(errno));
	if (watchdog_s) {
		signal(SIGALRM, watchdog);
		alarm(watchdog_s);
	}
}

void tb5k_pass(const char *name_fmt, ...)
{
	va_list ap;

	printf("PASS %s.", prog_name);
	va_start(ap, name_fmt);
	vprintf(name_fmt, ap);
	va_end(ap);
	printf("\n");
}

void tb5k_skip(const char *name, const char *reason_fmt, ...)
{
	va_list ap;

	printf("SKIP %s.%s: ", prog_name, name);
	va_start(ap, reason_fmt);
	vprintf(reason_fmt, ap);
	va_end(ap);
	printf("\n");
}

void tb5k_note(const char *fmt, ...)
{
	va_list ap;

	printf("# %s: ", prog_name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

void tb5k_fail(const char *name, const char *reason_fmt, ...)
{
	va_list ap;

	printf("FAIL %s.%s: ", prog_name, name);
	va_start(ap, reason_fmt);
	vprintf(reason_fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

const char *tb5k_errname(int err)
{
	static __thread char buf[24];
	const char *s;

	if (err < 0)
		err = -err;
	if (err == 0)
		return "0";
	s = strerrorname_np(err);
	if (s)
		return s;
	snprintf(buf, sizeof(buf), "errno %d", err);
	return buf;
}

uint64_t tb5k_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* -- sysfs --------------------------------------------------------------- */

int tb5k_read_text(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

int tb5k_write_text(const char *path, const char *text)
{
	size_t len = strlen(text);
	ssize_t n;
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	if (n < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (close(fd))
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

uint64_t tb5k_read_u64(const char *name, const char *path)
{
	char buf[128], *end;
	unsigned long long v;
	int ret = tb5k_read_text(path, buf, sizeof(buf));

	if (ret)
		tb5k_fail(name, "cannot read %s: %s", path, tb5k_errname(ret));
	errno = 0;
	v = strtoull(buf, &end, 0);
	if (errno || end == buf || *end)
		tb5k_fail(name, "%s reads \"%s\", not a number", path, buf);
	return v;
}

void tb5k_link_attr_path(char *buf, size_t size, int n, const char *attr)
{
	snprintf(buf, size, TB5K_SYSFS_CLASS "/tb5_%d/%s", n, attr);
}

uint64_t tb5k_link_u64(int n, const char *attr)
{
	char path[128];

	tb5k_link_attr_path(path, sizeof(path), n, attr);
	return tb5k_read_u64("sysfs", path);
}

int tb5k_link_text(int n, const char *attr, char *buf, size_t size)
{
	char path[128];

	tb5k_link_attr_path(path, sizeof(path), n, attr);
	return tb5k_read_text(path, buf, size);
}

int tb5k_wait_link_state(int n, const char *state, unsigned int timeout_ms)
{
	uint64_t end = tb5k_now_ms() + timeout_ms;
	char buf[32];

	for (;;) {
		if (!tb5k_link_text(n, "state", buf, sizeof(buf)) &&
		    !strcmp(buf, state))
			return 0;
		if (tb5k_now_ms() >= end)
			return -ETIMEDOUT;
		usleep(20000);
	}
}

uint64_t tb5k_pinned_pages(void)
{
	return tb5k_read_u64("sysfs", TB5K_SYSFS_CLASS "/pinned_pages");
}

uint64_t tb5k_wait_pinned(uint64_t want, unsigned int timeout_ms)
{
	uint64_t end = tb5k_now_ms() + timeout_ms;
	uint64_t v;

	for (;;) {
		v = tb5k_pinned_pages();
		if (v == want || tb5k_now_ms() >= end)
			return v;
		usleep(20000);
	}
}

uint64_t tb5k_meminfo_kib(const char *field)
{
	char line[256];
	size_t flen = strlen(field);
	unsigned long long v = 0;
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		tb5k_fail("meminfo", "cannot open /proc/meminfo: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, field, flen) && line[flen] == ':') {
			v = strtoull(line + flen + 1, NULL, 10);
			fclose(f);
			return v;
		}
	}
	fclose(f);
	tb5k_fail("meminfo", "no %s in /proc/meminfo", field);
}

/* -- contexts and the completion queue -------------------------------- */

int tb5k_open_raw(int n)
{
	char path[64];

	snprintf(path, sizeof(path), "/dev/tb5_%d", n);
	return open(path, O_RDWR | O_CLOEXEC);
}

void tb5k_open(struct tb5k_ctx *c, int n, uint32_t cq_entries)
{
	struct tb5_cq_create cq;
	void *map;

	memset(c, 0, sizeof(*c));
	c->index = n;
	c->fd = tb5k_open_raw(n);
	if (c->fd < 0)
		tb5k_fail("open", "open /dev/tb5_%d: %s", n, strerror(errno));
	if (ioctl(c->fd, TB5_IOC_GET_VERSION, &c->version))
		tb5k_fail("open", "TB5_IOC_GET_VERSION on /dev/tb5_%d: %s", n,
			  tb5k_errname(errno));
	if (c->version.abi_version != TB5_ABI_VERSION)
		tb5k_fail("open", "/dev/tb5_%d: module ABI version %u, tests built for %u",
			  n, c->version.abi_version, TB5_ABI_VERSION);
	c->stash_cap = 4096;
	c->stash = calloc(c->stash_cap, sizeof(*c->stash));
	if (!c->stash)
		tb5k_fail("open", "out of memory");
	if (!cq_entries)
		return;

	memset(&cq, 0, sizeof(cq));
	cq.entries = cq_entries;
	if (ioctl(c->fd, TB5_IOC_CQ_CREATE, &cq))
		tb5k_fail("open", "TB5_IOC_CQ_CREATE(%u) on /dev/tb5_%d: %s",
			  cq_entries, n, tb5k_errname(errno));
	if (cq.mmap_size < sizeof(struct tb5_cq_ring) ||
	    cq.entries_offset < sizeof(struct tb5_cq_ring) ||
	    cq.entries_offset % 8 ||
	    cq.entries_offset + (uint64_t)cq_entries * sizeof(struct tb5_cqe) >
	    cq.mmap_size)
		tb5k_fail("open", "TB5_IOC_CQ_CREATE(%u): mmap_size %llu and "
			  "entries_offset %llu cannot hold the ring", cq_entries,
			  (unsigned long long)cq.mmap_size,
			  (unsigned long long)cq.entries_offset);
	map = mmap(NULL, cq.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   c->fd, 0);
	if (map == MAP_FAILED)
		tb5k_fail("open", "mmap of the completion queue (%llu bytes): %s",
			  (unsigned long long)cq.mmap_size, strerror(errno));
	c->ring = map;
	c->map_size = cq.mmap_size;
	c->cqes = (struct tb5_cqe *)((char *)map + cq.entries_offset);
	c->entries = cq_entries;
	if (c->ring->entries != cq_entries)
		tb5k_fail("open", "the mapped ring says %u entries, %u were asked for",
			  c->ring->entries, cq_entries);
	c->head = __atomic_load_n(&c->ring->head, __ATOMIC_RELAXED);
	if (c->head != 0 || __atomic_load_n(&c->ring->tail, __ATOMIC_ACQUIRE) != 0)
		tb5k_fail("open", "a new completion queue has head %u, tail %u",
			  c->head, c->ring->tail);
}

void tb5k_close(struct tb5k_ctx *c)
{
	if (c->ring)
		munmap(c->ring, c->map_size);
	if (c->fd >= 0)
		close(c->fd);
	free(c->stash);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

void tb5k_get_info(struct tb5k_ctx *c, struct tb5_info *info)
{
	memset(info, 0xa5, sizeof(*info));
	if (ioctl(c->fd, TB5_IOC_GET_INFO, info))
		tb5k_fail("info", "TB5_IOC_GET_INFO on /dev/tb5_%d: %s", c->index,
			  tb5k_errname(errno));
}

/* One completion off the ring, if there is one. */
static int ring_pop(struct tb5k_ctx *c, struct tb5_cqe *out)
{
	uint32_t tail;

	if (c->stash_len) {
		*out = c->stash[0];
		c->stash_len--;
		memmove(c->stash, c->stash + 1, c->stash_len * sizeof(*c->stash));
		return 1;
	}
	if (!c->ring)
		return 0;
	tail = __atomic_load_n(&c->ring->tail, __ATOMIC_ACQUIRE);
	if (tail == c->head)
		return 0;
	if (tail - c->head > c->entries)
		tb5k_fail("cq", "/dev/tb5_%d: tail %u is %u entries ahead of head %u "
			  "in a ring of %u (the module overran the queue)",
			  c->index, tail, tail - c->head, c->head, c->entries);
	*out = c->cqes[c->head & (c->entries - 1)];
	c->head++;
	__atomic_store_n(&c->ring->head, c->head, __ATOMIC_RELEASE);
	return 1;
}

void tb5k_stash(struct tb5k_ctx *c, const struct tb5_cqe *cqe)
{
	if (c->stash_len == c->stash_cap) {
		struct tb5_cqe *n = realloc(c->stash, 2 * c->stash_cap * sizeof(*n));

		if (!n)
			tb5k_fail("cq", "out of memory");
		c->stash = n;
		c->stash_cap *= 2;
	}
	c->stash[c->stash_len++] = *cqe;
}

/* Append, in arrival order, behind what is stashed already. */
static void stash_tail(struct tb5k_ctx *c, const struct tb5_cqe *cqe)
{
	tb5k_stash(c, cqe);
}

int tb5k_next_multi(struct tb5k_ctx **cs, int n, int *which,
		    struct tb5_cqe *out, int timeout_ms)
{
	uint64_t end = tb5k_now_ms() + (timeout_ms < 0 ? 0 : timeout_ms);
	struct pollfd pfd[16];
	int i;

	if (n > 16)
		tb5k_fail("cq", "too many contexts");
	for (;;) {
		uint64_t now;
		int ret;

		for (i = 0; i < n; i++) {
			if (ring_pop(cs[i], out)) {
				if (which)
					*which = i;
				return 1;
			}
		}
		now = tb5k_now_ms();
		if (now >= end)
			return 0;
		for (i = 0; i < n; i++) {
			pfd[i].fd = cs[i]->fd;
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		ret = poll(pfd, n, (int)(end - now));
		if (ret < 0 && errno != EINTR)
			tb5k_fail("cq", "poll: %s", strerror(errno));
		for (i = 0; i < n; i++)
			if (pfd[i].revents & (POLLERR | POLLNVAL))
				tb5k_fail("cq", "poll on /dev/tb5_%d: revents 0x%x",
					  cs[i]->index, pfd[i].revents);
	}
}

int tb5k_next(struct tb5k_ctx *c, struct tb5_cqe *out, int timeout_ms)
{
	return tb5k_next_multi(&c, 1, NULL, out, timeout_ms);
}

/* Wait for a completion that @match accepts; stash the others. */
static int wait_match(struct tb5k_ctx *c, struct tb5_cqe *out, int timeout_ms,
		      int (*match)(const struct tb5_cqe *, const void *),
		      const void *arg)
{
	uint64_t end = tb5k_now_ms() + (timeout_ms < 0 ? 0 : timeout_ms);
	struct tb5_cqe *held = NULL;
	uint32_t nheld = 0, i;
	int found = 0;

	/* Look through what is stashed first, without losing its order. */
	for (i = 0; i < c->stash_len; i++) {
		if (match(&c->stash[i], arg)) {
			*out = c->stash[i];
			c->stash_len--;
			memmove(c->stash + i, c->stash + i + 1,
				(c->stash_len - i) * sizeof(*c->stash));
			return 1;
		}
	}
	/* Then take new ones off the ring, keeping the rest aside. */
	held = malloc(sizeof(*held) * (c->stash_len + 1));
	if (!held)
		tb5k_fail("cq", "out of memory");
	nheld = c->stash_len;
	memcpy(held, c->stash, nheld * sizeof(*held));
	c->stash_len = 0;
	for (;;) {
		struct tb5_cqe cqe;
		uint64_t now = tb5k_now_ms();

		if (!tb5k_next(c, &cqe, now >= end ? 0 : (int)(end - now)))
			break;
		if (match(&cqe, arg)) {
			*out = cqe;
			found = 1;
			break;
		}
		held = realloc(held, sizeof(*held) * (nheld + 1));
		if (!held)
			tb5k_fail("cq", "out of memory");
		held[nheld++] = cqe;
	}
	for (i = 0; i < nheld; i++)
		stash_tail(c, &held[i]);
	free(held);
	return found;
}

struct event_match {
	uint32_t ep;
	uint16_t event;
};

static int match_event(const struct tb5_cqe *cqe, const void *arg)
{
	const struct event_match *m = arg;

	return cqe->op == TB5_CQE_EVENT &&
	       (m->ep == TB5K_ANY || cqe->ep == m->ep) &&
	       (!m->event || cqe->event == m->event);
}

int tb5k_wait_event(struct tb5k_ctx *c, uint32_t ep, uint16_t event,
		    struct tb5_cqe *out, int timeout_ms)
{
	struct event_match m = { ep, event };

	return wait_match(c, out, timeout_ms, match_event, &m);
}

static int match_user_data(const struct tb5_cqe *cqe, const void *arg)
{
	return cqe->op != TB5_CQE_EVENT &&
	       cqe->user_data == *(const uint64_t *)arg;
}

int tb5k_wait_user_data(struct tb5k_ctx *c, uint64_t user_data,
			struct tb5_cqe *out, int timeout_ms)
{
	return wait_match(c, out, timeout_ms, match_user_data, &user_data);
}

const char *tb5k_cqe_str(const struct tb5_cqe *cqe)
{
	static __thread char buf[192];
	static const char *const ops[] = { "?", "SEND", "RECV", "EVENT" };
	static const char *const evs[] = { "-", "CONNECTED", "INCOMING",
					   "PEER_CLOSED", "ERROR" };

	snprintf(buf, sizeof(buf),
		 "{op=%s event=%s status=%d(%s) bytes=%llu tag=%u ep=%u user_data=0x%llx}",
		 cqe->op < 4 ? ops[cqe->op] : "?",
		 cqe->event < 5 ? evs[cqe->event] : "?", cqe->status,
		 tb5k_errname(cqe->status), (unsigned long long)cqe->bytes,
		 cqe->tag, cqe->ep, (unsigned long long)cqe->user_data);
	return buf;
}

/* -- memory ------------------------------------------------------------- */

void *tb5k_alloc(size_t len)
{
	void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		tb5k_fail("alloc", "mmap of %zu bytes: %s", len, strerror(errno));
	return p;
}

void tb5k_free(void *p, size_t len)
{
	if (p)
		munmap(p, len ? len : 1);
}

int tb5k_try_reg(struct tb5k_ctx *c, const void *addr, uint64_t len,
		 uint32_t *handle)
{
	struct tb5_reg_mem r;

	memset(&r, 0, sizeof(r));
	r.addr = (uintptr_t)addr;
	r.len = len;
	if (ioctl(c->fd, TB5_IOC_REG_MEM, &r))
		return -errno;
	*handle = r.handle;
	return 0;
}

uint32_t tb5k_reg(struct tb5k_ctx *c, const void *addr, uint64_t len)
{
	uint32_t h = 0;
	int ret = tb5k_try_reg(c, addr, len, &h);

	if (ret)
		tb5k_fail("reg_mem", "TB5_IOC_REG_MEM of %llu bytes on /dev/tb5_%d: %s",
			  (unsigned long long)len, c->index, tb5k_errname(ret));
	return h;
}

int tb5k_dereg(struct tb5k_ctx *c, uint32_t handle)
{
	struct tb5_dereg_mem d;

	memset(&d, 0, sizeof(d));
	d.handle = handle;
	return ioctl(c->fd, TB5_IOC_DEREG_MEM, &d) ? -errno : 0;
}

/* -- endpoints and posting -------------------------------------------- */

void tb5k_connect_to(const char *name, struct tb5k_ctx *l, uint32_t listener,
		     uint64_t service, uint64_t cookie, struct tb5k_ctx *c,
		     struct tb5k_conn *conn)
{
	struct tb5_connect cn;
	struct tb5_accept ac;
	struct tb5_cqe cqe;
	uint64_t end;

	memset(conn, 0, sizeof(*conn));
	conn->listener = listener;
	conn->cookie = cookie;

	memset(&cn, 0, sizeof(cn));
	cn.service = service;
	cn.cookie = cookie;
	if (ioctl(c->fd, TB5_IOC_CONNECT, &cn))
		tb5k_fail(name, "TB5_IOC_CONNECT on /dev/tb5_%d: %s", c->index,
			  tb5k_errname(errno));
	conn->ep_c = cn.ep;

	if (!tb5k_wait_event(l, listener, TB5_EVENT_INCOMING, &cqe, 15000))
		tb5k_fail(name, "no TB5_EVENT_INCOMING on /dev/tb5_%d's listener "
			  "within 15 s", l->index);
	if (cqe.status)
		tb5k_fail(name, "TB5_EVENT_INCOMING with status %s",
			  tb5k_errname(cqe.status));

	end = tb5k_now_ms() + 15000;
	for (;;) {
		memset(&ac, 0, sizeof(ac));
		ac.listener = listener;
		if (!ioctl(l->fd, TB5_IOC_ACCEPT, &ac))
			break;
		if (errno != EAGAIN)
			tb5k_fail(name, "TB5_IOC_ACCEPT on /dev/tb5_%d: %s",
				  l->index, tb5k_errname(errno));
		if (tb5k_now_ms() > end)
			tb5k_fail(name, "TB5_IOC_ACCEPT still EAGAIN 15 s after "
				  "TB5_EVENT_INCOMING");
		usleep(1000);
	}
	conn->ep_l = ac.ep;
	/*
	 * Accept until EAGAIN: the module raises the next INCOMING only once
	 * the backlog was seen empty (edge-triggered).
	 */
	memset(&ac, 0, sizeof(ac));
	ac.listener = listener;
	if (!ioctl(l->fd, TB5_IOC_ACCEPT, &ac))
		tb5k_fail(name, "a second TB5_IOC_ACCEPT found a connection "
			  "nobody made (endpoint %u)", ac.ep);
	if (errno != EAGAIN)
		tb5k_fail(name, "a second TB5_IOC_ACCEPT: %s, wanted EAGAIN",
			  tb5k_errname(errno));

	if (!tb5k_wait_event(c, conn->ep_c, 0, &cqe, 15000))
		tb5k_fail(name, "no event on the connecting endpoint %u "
			  "(/dev/tb5_%d) within 15 s", conn->ep_c, c->index);
	if (cqe.event != TB5_EVENT_CONNECTED || cqe.status)
		tb5k_fail(name, "the connecting endpoint got %s, not CONNECTED",
			  tb5k_cqe_str(&cqe));
	if (cqe.user_data || cqe.bytes)
		tb5k_fail(name, "TB5_EVENT_CONNECTED carries user_data/bytes: %s",
			  tb5k_cqe_str(&cqe));
}

void tb5k_connect(const char *name, struct tb5k_ctx *l, struct tb5k_ctx *c,
		  uint64_t service, struct tb5k_conn *conn)
{
	struct tb5_listen li;

	memset(&li, 0, sizeof(li));
	li.service = service;
	if (ioctl(l->fd, TB5_IOC_LISTEN, &li))
		tb5k_fail(name, "TB5_IOC_LISTEN(0x%llx) on /dev/tb5_%d: %s",
			  (unsigned long long)service, l->index,
			  tb5k_errname(errno));
	tb5k_connect_to(name, l, li.ep, service, li.cookie, c, conn);
}

int tb5k_ep_close(struct tb5k_ctx *c, uint32_t ep)
{
	struct tb5_ep_close ec;

	memset(&ec, 0, sizeof(ec));
	ec.ep = ep;
	return ioctl(c->fd, TB5_IOC_EP_CLOSE, &ec) ? -errno : 0;
}

int tb5k_ep_query(struct tb5k_ctx *c, uint32_t ep, struct tb5_ep_query *q)
{
	memset(q, 0, sizeof(*q));
	q->ep = ep;
	return ioctl(c->fd, TB5_IOC_EP_QUERY, q) ? -errno : 0;
}

int tb5k_post(struct tb5k_ctx *c, const struct tb5_post_op *ops, uint32_t n,
	      uint32_t *posted)
{
	uint32_t done = 0;
	int ret = 0;

	while (done < n) {
		struct tb5_post p;
		uint32_t chunk = n - done;

		if (chunk > TB5_UAPI_POST_MAX)
			chunk = TB5_UAPI_POST_MAX;
		memset(&p, 0, sizeof(p));
		p.ops = (uintptr_t)(ops + done);
		p.count = chunk;
		p.posted = 0xdeadbeef;
		if (ioctl(c->fd, TB5_IOC_POST, &p)) {
			ret = -errno;
			if (p.posted > chunk)
				tb5k_fail("post", "TB5_IOC_POST failed (%s) with "
					  "posted = %u of %u", tb5k_errname(ret),
					  p.posted, chunk);
			done += p.posted;
			break;
		}
		if (p.posted != chunk)
			tb5k_fail("post", "TB5_IOC_POST succeeded with posted = %u "
				  "of %u", p.posted, chunk);
		done += chunk;
	}
	if (posted)
		*posted = done;
	return ret;
}

int tb5k_post1(struct tb5k_ctx *c, uint32_t op, uint32_t ep, uint32_t mem,
	       uint32_t tag, uint64_t offset, uint64_t len, uint64_t user_data)
{
	struct tb5_post_op o;

	memset(&o, 0, sizeof(o));
	o.op = op;
	o.ep = ep;
	o.mem = mem;
	o.tag = tag;
	o.offset = offset;
	o.len = len;
	o.user_data = user_data;
	return tb5k_post(c, &o, 1, NULL);
}

/* -- data patterns ----------------------------------------------------- */

/* splitmix64 of (seed, word index): 8 pattern bytes. */
static inline uint64_t pattern_word(uint64_t seed, uint64_t word)
{
	uint64_t z = seed + (word + 1) * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint8_t tb5k_pattern_byte(uint64_t seed, uint64_t off)
{
	return (uint8_t)(pattern_word(seed, off >> 3) >> (8 * (off & 7)));
}

void tb5k_fill(void *buf, size_t len, uint64_t seed, uint64_t off0)
{
	uint8_t *p = buf;
	size_t i = 0;

	for (; i < len && ((off0 + i) & 7); i++)
		p[i] = tb5k_pattern_byte(seed, off0 + i);
	for (; i + 8 <= len; i += 8) {
		uint64_t w = pattern_word(seed, (off0 + i) >> 3);

		memcpy(p + i, &w, 8);	/* little endian: byte k is bits 8k.. */
	}
	for (; i < len; i++)
		p[i] = tb5k_pattern_byte(seed, off0 + i);
}

int64_t tb5k_verify(const void *buf, size_t len, uint64_t seed, uint64_t off0)
{
	const uint8_t *p = buf;
	size_t i = 0;

	while (i < len && ((off0 + i) & 7)) {
		if (p[i] != tb5k_pattern_byte(seed, off0 + i))
			return (int64_t)i;
		i++;
	}
	for (; i + 8 <= len; i += 8) {
		uint64_t w = pattern_word(seed, (off0 + i) >> 3), got;

		memcpy(&got, p + i, 8);
		if (got != w)
			break;	/* the bytewise loop finds the first bad one */
	}
	for (; i < len; i++)
		if (p[i] != tb5k_pattern_byte(seed, off0 + i))
			return (int64_t)i;
	return -1;
}

int64_t tb5k_verify_byte(const void *buf, size_t len, uint8_t byte)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != byte)
			return (int64_t)i;
	return -1;
}

/* -- two processes, one per end of a link ------------------------------ */

#define CTL_TAG		0xb5c7u
#define CTL_UD		0xc7c1000000000000ull	/* + step << 1 (| 1: receive) */
#define CTL_MAGIC	0x7462356b63746c31ull	/* "tb5kctl1", read big-endian */
#define CTL_VALS	8
#define CTL_SLOT	256	/* bytes per direction in the control region */
#define CTL_GUARD	64	/* untouched bytes after the received message */
#define CTL_UNTOUCHED	0xee

/* A control message: a barrier, with a few values for the peer. */
struct ctl_msg {
	uint64_t magic;
	uint32_t step;		/* the sender's barrier count */
	uint32_t nvals;
	uint64_t vals[CTL_VALS];
	char name[32];		/* the sender's barrier name */
};

char tb5k_side_ch(int side)
{
	return side ? 'b' : 'a';
}

uint64_t tb5k_vmlck_kib(void)
{
	char line[256];
	unsigned long long v = ~0ull;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		tb5k_fail("pinned", "/proc/self/status: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmLck:", 6))
			v = strtoull(line + 6, NULL, 10);
	fclose(f);
	if (v == ~0ull)
		tb5k_fail("pinned", "no VmLck in /proc/self/status");
	return v;
}

void tb5k_check_vmlck_back(uint64_t lck0)
{
	uint64_t end = tb5k_now_ms() + 5000, lck;

	while ((lck = tb5k_vmlck_kib()) != lck0 && tb5k_now_ms() < end)
		usleep(20000);
	TB5K_CHECK(lck == lck0, "pinned", "VmLck is %llu kB after closing "
		   "everything, was %llu kB", (unsigned long long)lck,
		   (unsigned long long)lck0);
	tb5k_pass("pinned (VmLck back to %llu kB)", (unsigned long long)lck0);
}

void tb5k_check_pinned_back(uint64_t pinned0)
{
	TB5K_CHECK(tb5k_wait_pinned(pinned0, 5000) == pinned0, "pinned",
		   "pinned_pages is %llu after closing everything, was %llu",
		   (unsigned long long)tb5k_pinned_pages(),
		   (unsigned long long)pinned0);
	tb5k_pass("pinned (back to %llu)", (unsigned long long)pinned0);
}

uint32_t tb5k_listen(const char *name, struct tb5k_ctx *c, uint64_t service,
		     uint32_t flags, uint64_t *cookie)
{
	struct tb5_listen li;

	memset(&li, 0, sizeof(li));
	li.service = service;
	li.flags = flags;
	TB5K_CHECK(!ioctl(c->fd, TB5_IOC_LISTEN, &li), name,
		   "TB5_IOC_LISTEN(0x%llx, flags 0x%x) on /dev/tb5_%d: %s",
		   (unsigned long long)service, flags, c->index,
		   tb5k_errname(errno));
	if (flags & TB5_LISTEN_WELL_KNOWN)
		TB5K_CHECK(li.cookie == 0, name, "a well-known listener got "
			   "cookie 0x%llx", (unsigned long long)li.cookie);
	else
		TB5K_CHECK(li.cookie != 0, name, "a listener got cookie 0");
	if (cookie)
		*cookie = li.cookie;
	return li.ep;
}

int64_t tb5k_connect_start(struct tb5k_ctx *c, uint64_t service,
			   uint64_t cookie)
{
	struct tb5_connect cn;

	memset(&cn, 0, sizeof(cn));
	cn.service = service;
	cn.cookie = cookie;
	if (ioctl(c->fd, TB5_IOC_CONNECT, &cn))
		return -errno;
	return cn.ep;
}

void tb5k_connect_wait(const char *name, struct tb5k_ctx *c, uint32_t ep,
		       int timeout_ms, const char *what)
{
	struct tb5_cqe cqe;

	TB5K_CHECK(tb5k_wait_event(c, ep, 0, &cqe, timeout_ms), name,
		   "%s: no event on the connecting endpoint %u within %d s",
		   what, ep, timeout_ms / 1000);
	TB5K_CHECK(cqe.event == TB5_EVENT_CONNECTED && !cqe.status, name,
		   "%s: the connecting endpoint got %s, not CONNECTED", what,
		   tb5k_cqe_str(&cqe));
	TB5K_CHECK(!cqe.user_data && !cqe.bytes, name, "%s: CONNECTED carries "
		   "user_data/bytes: %s", what, tb5k_cqe_str(&cqe));
}

uint32_t tb5k_accept_one(const char *name, struct tb5k_ctx *l,
			 uint32_t listener, int timeout_ms, const char *what)
{
	struct tb5_accept ac;
	struct tb5_cqe cqe;
	uint64_t end;
	uint32_t ep;

	TB5K_CHECK(tb5k_wait_event(l, listener, TB5_EVENT_INCOMING, &cqe,
				   timeout_ms), name,
		   "%s: nobody connected within %d s", what, timeout_ms / 1000);
	TB5K_CHECK(!cqe.status, name, "%s: TB5_EVENT_INCOMING with status %s",
		   what, tb5k_errname(cqe.status));
	end = tb5k_now_ms() + 15000;
	for (;;) {
		memset(&ac, 0, sizeof(ac));
		ac.listener = listener;
		if (!ioctl(l->fd, TB5_IOC_ACCEPT, &ac))
			break;
		TB5K_CHECK(errno == EAGAIN, name, "%s: TB5_IOC_ACCEPT: %s", what,
			   tb5k_errname(errno));
		TB5K_CHECK(tb5k_now_ms() < end, name, "%s: TB5_IOC_ACCEPT still "
			   "EAGAIN 15 s after TB5_EVENT_INCOMING", what);
		usleep(1000);
	}
	ep = ac.ep;
	/* Accept until EAGAIN: nobody else may wait. */
	memset(&ac, 0, sizeof(ac));
	ac.listener = listener;
	TB5K_CHECK(ioctl(l->fd, TB5_IOC_ACCEPT, &ac), name, "%s: a second "
		   "TB5_IOC_ACCEPT found a connection nobody made (endpoint %u)",
		   what, ac.ep);
	TB5K_CHECK(errno == EAGAIN, name, "%s: a second TB5_IOC_ACCEPT: %s, "
		   "wanted EAGAIN", what, tb5k_errname(errno));
	return ep;
}

uint32_t tb5k_connect_retry(const char *name, struct tb5k_ctx *c,
			    uint64_t service, int wait_s, int answer_ms)
{
	uint64_t t0 = tb5k_now_ms(), end = t0 + (uint64_t)wait_s * 1000;
	unsigned int refused = 0, nolink = 0;
	struct tb5_cqe cqe;

	for (;;) {
		int64_t ep = tb5k_connect_start(c, service, 0);

		if (ep == -ENOLINK) {
			/* The link went down again since it read ready. */
			nolink++;
			TB5K_CHECK(tb5k_now_ms() < end, name, "TB5_IOC_CONNECT "
				   "on /dev/tb5_%d: ENOLINK for %d s", c->index,
				   wait_s);
			usleep(250000);
			continue;
		}
		TB5K_CHECK(ep > 0, name, "TB5_IOC_CONNECT(0x%llx) on /dev/tb5_%d: %s",
			   (unsigned long long)service, c->index,
			   tb5k_errname((int)ep));
		TB5K_CHECK(tb5k_wait_event(c, (uint32_t)ep, 0, &cqe, answer_ms),
			   name, "no answer to a connect to service 0x%llx "
			   "within %d s", (unsigned long long)service,
			   answer_ms / 1000);
		if (cqe.event == TB5_EVENT_CONNECTED && !cqe.status) {
			tb5k_note("service 0x%llx answered after %llu ms (%u "
				  "connects refused, %u ENOLINK)",
				  (unsigned long long)service,
				  (unsigned long long)(tb5k_now_ms() - t0),
				  refused, nolink);
			return (uint32_t)ep;
		}
		TB5K_CHECK(cqe.event == TB5_EVENT_ERROR &&
			   cqe.status == -ECONNREFUSED, name,
			   "connecting to service 0x%llx: %s",
			   (unsigned long long)service, tb5k_cqe_str(&cqe));
		TB5K_CHECK(!tb5k_ep_close(c, (uint32_t)ep), name,
			   "closing a refused endpoint failed");
		refused++;
		TB5K_CHECK(tb5k_now_ms() < end, name, "nobody listened on "
			   "service 0x%llx within %d s (%u connects refused)",
			   (unsigned long long)service, wait_s, refused);
		usleep(250000);
	}
}

void tb5k_ctl_meet(const char *name, struct tb5k_ctl *ctl, struct tb5k_ctx *c,
		   int me, uint64_t service, int wait_s, int wait_ms)
{
	memset(ctl, 0, sizeof(*ctl));
	ctl->c = c;
	ctl->me = me;
	ctl->wait_ms = wait_ms;
	TB5K_CHECK(c->version.features & TB5_FEATURE_WELL_KNOWN, name,
		   "the module has no TB5_FEATURE_WELL_KNOWN (features 0x%x): "
		   "the sides cannot meet", c->version.features);
	if (me == 0) {
		uint32_t l = tb5k_listen(name, c, service, TB5_LISTEN_WELL_KNOWN,
					 NULL);

		ctl->ep = tb5k_accept_one(name, c, l, wait_s * 1000,
					  "side b on the control service");
		TB5K_CHECK(!tb5k_ep_close(c, l), name, "closing the control "
			   "listener");
	} else {
		ctl->ep = tb5k_connect_retry(name, c, service, wait_s, wait_ms);
	}
	ctl->buf = tb5k_alloc(2 * CTL_SLOT);
	ctl->mem = tb5k_reg(c, ctl->buf, 2 * CTL_SLOT);
}

void tb5k_ctl_barrier(const char *name, struct tb5k_ctl *ctl,
		      const uint64_t *vals, uint32_t n, uint64_t *peer_vals)
{
	struct tb5k_ctx *c = ctl->c;
	struct ctl_msg *out = (struct ctl_msg *)ctl->buf;
	struct ctl_msg *in = (struct ctl_msg *)(ctl->buf + CTL_SLOT);
	uint64_t ud = CTL_UD | (uint64_t)ctl->step << 1;
	char peer = tb5k_side_ch(!ctl->me);
	struct tb5_cqe cqe;
	int ret;

	if (n > CTL_VALS)
		tb5k_fail(name, "too many values for a barrier");
	memset(out, 0, sizeof(*out));
	out->magic = CTL_MAGIC;
	out->step = ctl->step;
	out->nvals = n;
	if (n)
		memcpy(out->vals, vals, n * sizeof(*vals));
	snprintf(out->name, sizeof(out->name), "%s", name);
	memset(in, CTL_UNTOUCHED, CTL_SLOT);

	ret = tb5k_post1(c, TB5_OP_RECV, ctl->ep, ctl->mem, CTL_TAG, CTL_SLOT,
			 CTL_SLOT - CTL_GUARD, ud | 1);
	TB5K_CHECK(!ret, name, "barrier %u: posting the control receive: %s",
		   ctl->step, tb5k_errname(ret));
	ret = tb5k_post1(c, TB5_OP_SEND, ctl->ep, ctl->mem, CTL_TAG, 0,
			 sizeof(*out), ud);
	TB5K_CHECK(!ret, name, "barrier %u: posting the control send: %s",
		   ctl->step, tb5k_errname(ret));

	TB5K_CHECK(tb5k_wait_user_data(c, ud | 1, &cqe, ctl->wait_ms), name,
		   "barrier %u (%s): side %c did not come within %d s", ctl->step,
		   name, peer, ctl->wait_ms / 1000);
	TB5K_CHECK(cqe.op == TB5_CQE_RECV && !cqe.status && cqe.tag == CTL_TAG &&
		   cqe.ep == ctl->ep && cqe.bytes == sizeof(*in), name,
		   "barrier %u: the control receive completed as %s", ctl->step,
		   tb5k_cqe_str(&cqe));
	TB5K_CHECK(tb5k_wait_user_data(c, ud, &cqe, ctl->wait_ms), name,
		   "barrier %u: the control send did not complete", ctl->step);
	TB5K_CHECK(cqe.op == TB5_CQE_SEND && !cqe.status && cqe.tag == CTL_TAG &&
		   cqe.ep == ctl->ep && cqe.bytes == sizeof(*out), name,
		   "barrier %u: the control send completed as %s", ctl->step,
		   tb5k_cqe_str(&cqe));

	TB5K_CHECK(in->magic == CTL_MAGIC, name, "barrier %u: a control message "
		   "with magic 0x%llx", ctl->step, (unsigned long long)in->magic);
	in->name[sizeof(in->name) - 1] = '\0';
	TB5K_CHECK(in->step == ctl->step && !strcmp(in->name, out->name), name,
		   "side %c is at barrier %u (%s), we are at %u (%s): the sides "
		   "run different schedules", peer, in->step, in->name,
		   ctl->step, out->name);
	TB5K_CHECK(in->nvals == n, name, "barrier %u: side %c sent %u values, "
		   "we %u", ctl->step, peer, in->nvals, n);
	TB5K_CHECK(tb5k_verify_byte(ctl->buf + CTL_SLOT + sizeof(*in),
				    CTL_SLOT - sizeof(*in), CTL_UNTOUCHED) < 0,
		   name, "barrier %u: bytes past the control message were "
		   "written", ctl->step);
	if (peer_vals && n)
		memcpy(peer_vals, in->vals, n * sizeof(*peer_vals));
	ctl->step++;
}

void tb5k_ctl_release(const char *name, struct tb5k_ctl *ctl)
{
	int ret = tb5k_dereg(ctl->c, ctl->mem);

	TB5K_CHECK(!ret, name, "deregistering the control region: %s",
		   tb5k_errname(ret));
	tb5k_free(ctl->buf, 2 * CTL_SLOT);
	ctl->buf = NULL;
}
