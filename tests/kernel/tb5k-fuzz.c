// SPDX-License-Identifier: MIT
/*
 * tb5k-fuzz - a bounded random-ioctl fuzzer for tb5.ko.
 *
 *   tb5k-fuzz [--seed S] [--calls N] [--min-calls M] [--seconds T]
 *             [--threads K] [--no-unplug] [--no-mmap] [--remote-peer]
 *
 * K threads (default 4) share 8 file descriptors of /dev/tb5_* (some with a
 * mapped completion queue, some without) and issue ioctls until N calls
 * (default 120000) or T seconds (default 300) are done: valid TB5_IOC_*
 * commands with random and boundary fields (NULL, unmapped, read-only and
 * kernel pointers, huge lengths, offsets near 2^64, counts 0/65/2^32-1, bad
 * handles and handles returned by earlier calls, file descriptors that are
 * not dma-bufs), the same commands with a wrong size or direction, and
 * random command numbers (minus the few the VFS handles itself, such as
 * FIFREEZE). Interleaved: closing and reopening descriptors, creating and
 * mapping completion queues, mmap() with bad sizes, offsets and protections
 * (each page of a mapping that succeeds is touched), writing the mapped
 * consumer index (and, where the mapping lets us, the rest), poll(),
 * read()/write(), and pulling and re-plugging pair 1's cable.
 *
 * The VM harness finds oopses in the kernel log; this program must only not
 * hang (alarm() watchdog) and, at the end, see pinned_pages back at its
 * baseline and every link "ready". It fails if fewer than M calls (default
 * 100000) were made. The seed is printed; with one thread a run repeats.
 *
 * --remote-peer: the links lead to another host (tb links on the emulated
 * fabric), so one link is enough, two of ours are never connected to each
 * other (the peer answers every connect, refusing it) and no cable is
 * pulled; vm-tests-fabric.sh runs a verified transfer on the same link
 * meanwhile, so that the random calls race with data actually moving.
 */
#include "tb5k.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#ifdef __has_include
#if __has_include(<linux/udmabuf.h>)
#include <linux/udmabuf.h>
#define HAVE_UDMABUF 1
#endif
#endif

#define NSLOTS		8
#define NKNOWN		64
#define PAGE		4096u
#define ARENA		(256u * 1024u)	/* read-write */
#define RO_LEN		(16u * 1024u)	/* read-only, after the arena */
#define MAX_THREADS	16

struct slot {
	int fd;
	int dev;
	int has_cq;
	void *ring;
	size_t map_size;
};

static struct slot slots[NSLOTS];
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static int ndev;
static int stop;
static uint64_t calls, max_calls = 120000, min_calls = 100000;
static uint64_t deadline_ms;
static int unplug = 1;
static int no_mmap;	/* --no-mmap: no mmap() while fuzzing (bisecting) */
static int remote_peer;	/* --remote-peer: our links are not loop pairs */
static int fuzzing;	/* the threads run */
static uint64_t seed;
static int have_udmabuf;

/* Values earlier calls returned, shared by every thread. */
static uint32_t known_handles[NKNOWN];
static uint64_t known_cookies[NKNOWN];

/* Statistics per command: [0..11] TB5_IOC_*, 12 mangled, 13 random. */
#define NSTAT 14
static uint64_t stat_calls[NSTAT], stat_ok[NSTAT];
/* do_connect_pair: tried, listened, connected, accepted, posted. */
static uint64_t stat_conn[5];
static int stat_conn_err[5];
static uint64_t stat_mmaps, stat_mmaps_ok, stat_reopens, stat_faults,
		stat_plugs;

static const unsigned long cmds[12] = {
	TB5_IOC_GET_VERSION, TB5_IOC_GET_INFO, TB5_IOC_REG_MEM,
	TB5_IOC_REG_DMABUF, TB5_IOC_DEREG_MEM, TB5_IOC_CQ_CREATE,
	TB5_IOC_LISTEN, TB5_IOC_CONNECT, TB5_IOC_ACCEPT, TB5_IOC_EP_CLOSE,
	TB5_IOC_EP_QUERY, TB5_IOC_POST,
};
static const char *const cmd_names[NSTAT] = {
	"GET_VERSION", "GET_INFO", "REG_MEM", "REG_DMABUF", "DEREG_MEM",
	"CQ_CREATE", "LISTEN", "CONNECT", "ACCEPT", "EP_CLOSE", "EP_QUERY",
	"POST", "mangled", "random",
};

struct thr {
	int id;
	pthread_t tid;
	uint64_t rng;
	uint8_t *base;		/* guard | arena | read-only | guard */
	uint8_t *arena, *ro, *guard_hi;
	int null_fd, pipe_fd[2], memfd, dmabuf_fd;
	size_t dmabuf_len;
};

static __thread sigjmp_buf probe_jb;
static __thread volatile int probing;

/* -- randomness --------------------------------------------------------- */

static uint64_t rnd(struct thr *t)
{
	/* xorshift64* */
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return t->rng * 0x2545f4914f6cdd1dull;
}

static uint64_t below(struct thr *t, uint64_t n)
{
	return n ? rnd(t) % n : 0;
}

static uint64_t boundary64(struct thr *t)
{
	static const uint64_t v[] = {
		0, 1, 2, 7, 63, 64, 65, 4095, 4096, 4097, 65535, 65536, 65537,
		0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ull,
		1ull << 40, (1ull << 40) + 1, 1ull << 62, 1ull << 63,
		~0ull, ~0ull - 1, ~0ull - 4095, ~0ull - 4096, ~0ull << 12,
		0xffff800000000000ull, 0x00007ffffffff000ull,
	};

	switch (below(t, 4)) {
	case 0:
		return rnd(t);
	case 1:
		return rnd(t) & 0xffff;
	default:
		return v[below(t, sizeof(v) / sizeof(v[0]))];
	}
}

static uint32_t boundary32(struct thr *t)
{
	return (uint32_t)boundary64(t);
}

static uint32_t a_handle(struct thr *t)
{
	switch (below(t, 6)) {
	case 0:
		return boundary32(t);
	case 1:
		return (uint32_t)below(t, 16);
	default:
		return __atomic_load_n(&known_handles[below(t, NKNOWN)],
				       __ATOMIC_RELAXED);
	}
}

static void remember_handle(struct thr *t, uint32_t h)
{
	__atomic_store_n(&known_handles[below(t, NKNOWN)], h, __ATOMIC_RELAXED);
}

static uint64_t a_cookie(struct thr *t)
{
	if (below(t, 4) == 0)
		return boundary64(t);
	return __atomic_load_n(&known_cookies[below(t, NKNOWN)], __ATOMIC_RELAXED);
}

static uint64_t a_service(struct thr *t)
{
	return below(t, 8) ? 1 + below(t, 4) : boundary64(t);
}

static uint32_t small_flags(struct thr *t)
{
	return below(t, 8) ? 0 : boundary32(t);
}

/* A pointer for an ioctl's argument of @size bytes: mostly good. */
static void *arg_ptr(struct thr *t, size_t size)
{
	switch (below(t, 24)) {
	case 0:
		return NULL;
	case 1:
		return t->ro + RO_LEN - size / 2;	/* runs into the guard */
	case 2:
		return t->guard_hi;
	case 3:
		return t->ro;				/* read-only */
	case 4:
		return (void *)0xffff888000000000ull;	/* kernel */
	case 5:
		return (void *)(uintptr_t)(~0ull - 7);
	case 6:
		return (void *)(uintptr_t)1;
	case 7:
		return t->arena + ARENA - size / 2;	/* into read-only */
	default:
		return t->arena + (below(t, ARENA - 1024) & ~7ull);
	}
}

/* An address range for REG_MEM: good, partly bad, or absurd. */
static void mem_range(struct thr *t, __u64 *addr, __u64 *len)
{
	uint64_t off = below(t, ARENA);

	switch (below(t, 12)) {
	case 0:
		*addr = boundary64(t);
		*len = boundary64(t);
		return;
	case 1:
		*addr = (uintptr_t)t->arena + off;
		*len = boundary64(t);
		return;
	case 2:
		*addr = (uintptr_t)t->ro;
		*len = 1 + below(t, RO_LEN);
		return;
	case 3:
		*addr = (uintptr_t)t->arena + off;
		*len = ARENA - off + 1 + below(t, 3 * PAGE);	/* into RO, guard */
		return;
	case 4:
		*addr = (uintptr_t)t->guard_hi;
		*len = PAGE;
		return;
	case 5:
		*addr = ~0ull - below(t, 8192);
		*len = 1 + below(t, 16384);
		return;
	default:
		*addr = (uintptr_t)t->arena + off;
		*len = 1 + below(t, ARENA - off);
		return;
	}
}

static int a_fd(struct thr *t)
{
	return __atomic_load_n(&slots[below(t, NSLOTS)].fd, __ATOMIC_RELAXED);
}

static int a_dmabuf_fd(struct thr *t)
{
	switch (below(t, 10)) {
	case 0:
		return -1;
	case 1:
		return t->null_fd;
	case 2:
		return t->pipe_fd[below(t, 2)];
	case 3:
		return t->memfd;
	case 4:
		return a_fd(t);
	case 5:
		return (int)boundary32(t);
	case 6:
		return 1 << 20;
	default:
		return t->dmabuf_fd >= 0 ? t->dmabuf_fd : t->memfd;
	}
}

/* Whether [p, p + size) lies inside the read-write arena (no wrapping). */
static int in_arena(const struct thr *t, const void *p, size_t size)
{
	uintptr_t a = (uintptr_t)t->arena, x = (uintptr_t)p;

	return x >= a && size <= ARENA && x - a <= ARENA - size;
}

/* -- page probing under a signal guard ------------------------------ */

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	const ucontext_t *u = uc;
	char buf[160];
	int n;

	if (probing) {
		probing = 0;
		siglongjmp(probe_jb, 1);
	}
	/* A fault of our own: say where, then die of it. */
	n = snprintf(buf, sizeof(buf), "# fuzz: signal %d at address %p, ip 0x%llx\n",
		     sig, si->si_addr,
		     (unsigned long long)u->uc_mcontext.gregs[REG_RIP]);
	if (n > 0 && write(STDOUT_FILENO, buf, (size_t)n) < 0)
		n = 0;
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Read (and maybe write) every page of [p, p + len); faults are caught. */
static void probe(struct thr *t, volatile uint8_t *p, size_t len, int write)
{
	volatile size_t off;

	for (off = 0; off < len && off < 64 * PAGE; off += PAGE) {
		if (sigsetjmp(probe_jb, 1)) {
			__atomic_fetch_add(&stat_faults, 1, __ATOMIC_RELAXED);
			continue;
		}
		probing = 1;
		(void)p[off];
		if (write)
			p[off] = (uint8_t)rnd(t);
		probing = 0;
	}
}

/* -- actions ------------------------------------------------------------ */

static void count(int which, int ok)
{
	__atomic_fetch_add(&stat_calls[which], 1, __ATOMIC_RELAXED);
	if (ok)
		__atomic_fetch_add(&stat_ok[which], 1, __ATOMIC_RELAXED);
	if (__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED) >= max_calls)
		__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
}

static void fill_ops(struct thr *t, struct tb5_post_op *ops, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		ops[i].op = below(t, 8) ? 1 + (uint32_t)below(t, 2) : boundary32(t);
		ops[i].ep = a_handle(t);
		ops[i].mem = a_handle(t);
		ops[i].tag = (uint32_t)below(t, 4);
		if (below(t, 4)) {
			ops[i].offset = below(t, 8192);
			ops[i].len = below(t, 16384);
		} else {
			ops[i].offset = boundary64(t);
			ops[i].len = boundary64(t);
		}
		ops[i].user_data = rnd(t);
	}
}

static void do_tb5_ioctl(struct thr *t)
{
	int which = (int)below(t, 12), fd = a_fd(t), ret;
	unsigned long cmd = cmds[which];
	size_t size = _IOC_SIZE(cmd);
	uint8_t *arg;
	union {
		struct tb5_reg_mem rm;
		struct tb5_reg_dmabuf rd;
		struct tb5_dereg_mem dm;
		struct tb5_cq_create cq;
		struct tb5_listen li;
		struct tb5_connect co;
		struct tb5_accept ac;
		struct tb5_ep_close ec;
		struct tb5_ep_query eq;
		struct tb5_post po;
	} u;

	memset(&u, 0, sizeof(u));
	switch (cmd) {
	case TB5_IOC_REG_MEM:
		mem_range(t, &u.rm.addr, &u.rm.len);
		u.rm.flags = small_flags(t);
		break;
	case TB5_IOC_REG_DMABUF:
		u.rd.fd = a_dmabuf_fd(t);
		u.rd.flags = small_flags(t);
		if (below(t, 2) && t->dmabuf_len) {
			u.rd.offset = below(t, 3) ? PAGE * below(t, t->dmabuf_len / PAGE + 1)
						  : below(t, t->dmabuf_len);
			u.rd.len = below(t, t->dmabuf_len + 2 * PAGE);
		} else {
			u.rd.offset = boundary64(t);
			u.rd.len = boundary64(t);
		}
		u.rd.pad = small_flags(t);
		break;
	case TB5_IOC_DEREG_MEM:
		u.dm.handle = a_handle(t);
		u.dm.pad = small_flags(t);
		break;
	case TB5_IOC_CQ_CREATE:
		u.cq.entries = below(t, 2) ? 64u << below(t, 11) : boundary32(t);
		u.cq.flags = small_flags(t);
		break;
	case TB5_IOC_LISTEN:
		u.li.service = a_service(t);
		u.li.flags = small_flags(t);
		break;
	case TB5_IOC_CONNECT:
		u.co.service = a_service(t);
		u.co.cookie = a_cookie(t);
		u.co.pad = small_flags(t);
		break;
	case TB5_IOC_ACCEPT:
		u.ac.listener = a_handle(t);
		break;
	case TB5_IOC_EP_CLOSE:
		u.ec.ep = a_handle(t);
		u.ec.pad = small_flags(t);
		break;
	case TB5_IOC_EP_QUERY:
		u.eq.ep = a_handle(t);
		break;
	case TB5_IOC_POST: {
		static const uint32_t counts[] = { 0, 1, 2, 3, 63, 64, 65,
						   0xffffffffu, 0x80000000u };
		uint32_t n = below(t, 2) ? 1 + (uint32_t)below(t, 8)
					 : counts[below(t, 9)];
		uint32_t fillable = n < 64 ? n : 64;
		struct tb5_post_op *ops = (struct tb5_post_op *)
			(t->arena + (below(t, ARENA / 2) & ~7ull));

		fill_ops(t, ops, fillable);
		u.po.count = n;
		u.po.ops = below(t, 6) ? (uintptr_t)ops
				       : (uintptr_t)arg_ptr(t, 64 * sizeof(*ops));
		u.po.posted = boundary32(t);
		break;
	}
	default:
		break;
	}

	arg = arg_ptr(t, size);
	/* A good pointer gets the fields; a bad one is passed as it is. */
	if (in_arena(t, arg, size))
		memcpy(arg, &u, size);
	ret = ioctl(fd, cmd, arg);
	count(which, ret == 0);
	if (ret || !in_arena(t, arg, size))
		return;

	/* Keep what came back, for later calls. */
	memcpy(&u, arg, size);
	switch (cmd) {
	case TB5_IOC_REG_MEM:
		remember_handle(t, u.rm.handle);
		/* Do not let pins pile up without bound. */
		if (below(t, 2)) {
			struct tb5_dereg_mem d = { u.rm.handle, 0 };

			count(4, ioctl(fd, TB5_IOC_DEREG_MEM, &d) == 0);
		}
		break;
	case TB5_IOC_REG_DMABUF:
		remember_handle(t, u.rd.handle);
		break;
	case TB5_IOC_LISTEN:
		remember_handle(t, u.li.ep);
		__atomic_store_n(&known_cookies[below(t, NKNOWN)], u.li.cookie,
				 __ATOMIC_RELAXED);
		break;
	case TB5_IOC_CONNECT:
		remember_handle(t, u.co.ep);
		break;
	case TB5_IOC_ACCEPT:
		remember_handle(t, u.ac.ep);
		break;
	default:
		break;
	}
}

static unsigned long random_cmd(struct thr *t, int *which)
{
	static const unsigned int vfs_types[] = { 0x00, 0x03, 0x12, 0x15, 0x54,
						  0x58, 0x66, 0x94 };
	unsigned long cmd, base = cmds[below(t, 12)];
	unsigned int i, type;

	*which = 12;
	switch (below(t, 4)) {
	case 0:	/* a tb5 command with the wrong size */
		return _IOC(_IOC_DIR(base), TB5_IOC_MAGIC, _IOC_NR(base),
			    (_IOC_SIZE(base) + 1 + below(t, 64)) & _IOC_SIZEMASK);
	case 1:	/* ... or the wrong direction, or a number not (yet) used */
		return below(t, 2) ?
		       _IOC((_IOC_DIR(base) + 1 + below(t, 3)) & 3, TB5_IOC_MAGIC,
			    _IOC_NR(base), _IOC_SIZE(base)) :
		       _IOC(below(t, 4), TB5_IOC_MAGIC, 12 + below(t, 244),
			    below(t, 256));
	default:
		break;
	}
	*which = 13;
	cmd = (unsigned long)(uint32_t)rnd(t);
	type = (unsigned int)_IOC_TYPE(cmd);
	/* The VFS answers these itself (FIFREEZE, FICLONE, FIONREAD, ...). */
	for (i = 0; i < sizeof(vfs_types) / sizeof(vfs_types[0]); i++)
		if (type == vfs_types[i])
			cmd = (cmd & ~(0xfful << _IOC_TYPESHIFT)) |
			      (0xb6ul << _IOC_TYPESHIFT);
	return cmd;
}

static void do_random_ioctl(struct thr *t)
{
	int which, ret;
	unsigned long cmd = random_cmd(t, &which);
	void *arg = below(t, 4) ? arg_ptr(t, 256) : (void *)(uintptr_t)rnd(t);

	if (in_arena(t, arg, 256) && below(t, 2)) {
		uint64_t *w = arg;
		int i;

		for (i = 0; i < 32; i++)
			w[i] = boundary64(t);
	}
	ret = ioctl(a_fd(t), cmd, arg);
	count(which, ret == 0);
}

static void do_reopen(struct thr *t)
{
	struct slot *s = &slots[below(t, NSLOTS)];
	struct tb5_cq_create cq;
	void *map;
	int fd;

	pthread_mutex_lock(&slot_lock);
	if (s->ring)
		munmap(s->ring, s->map_size);
	s->ring = NULL;
	if (s->fd >= 0)
		close(s->fd);
	s->dev = (int)below(t, ndev);
	fd = tb5k_open_raw(s->dev);
	/* Others may use the descriptor while its queue is being mapped. */
	if (!no_mmap)
		__atomic_store_n(&s->fd, fd, __ATOMIC_RELAXED);
	__atomic_fetch_add(&stat_reopens, 1, __ATOMIC_RELAXED);
	s->has_cq = 0;
	if (fd >= 0 && below(t, 3)) {
		memset(&cq, 0, sizeof(cq));
		cq.entries = 64u << below(t, 7);
		s->has_cq = !ioctl(fd, TB5_IOC_CQ_CREATE, &cq);
		if (s->has_cq && cq.mmap_size &&
		    cq.mmap_size < (64u << 20) && (!no_mmap || !fuzzing)) {
			map = mmap(NULL, cq.mmap_size, PROT_READ | PROT_WRITE,
				   MAP_SHARED, fd, 0);
			if (map != MAP_FAILED) {
				s->ring = map;
				s->map_size = cq.mmap_size;
			}
		}
	}
	__atomic_store_n(&s->fd, fd, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&slot_lock);
}

static void do_mmap(struct thr *t)
{
	static const size_t lens[] = { 0, 1, PAGE - 1, PAGE, 2 * PAGE,
				       16 * PAGE, 64 * PAGE, 1 << 20, 1 << 30,
				       (size_t)1 << 40 };
	static const uint64_t offs[] = { 0, 1, PAGE, 2 * PAGE, 1ull << 40,
					 ~0ull & ~(uint64_t)(PAGE - 1),
					 1ull << 63, 0x7ffffffff000ull };
	static const int prots[] = { PROT_READ, PROT_READ | PROT_WRITE,
				     PROT_READ | PROT_WRITE | PROT_EXEC,
				     PROT_WRITE, PROT_NONE, PROT_EXEC };
	size_t len = below(t, 4) ? lens[below(t, 10)] : below(t, 1 << 20);
	uint64_t off = below(t, 3) ? offs[below(t, 8)] : rnd(t) & ~4095ull;
	int prot = prots[below(t, 6)];
	int flags = below(t, 4) ? MAP_SHARED : MAP_PRIVATE;
	void *p;

	if (below(t, 4) == 0)
		off = 0;
	p = mmap(NULL, len, prot, flags, a_fd(t), (off_t)off);
	__atomic_fetch_add(&stat_mmaps, 1, __ATOMIC_RELAXED);
	if (p == MAP_FAILED)
		return;
	__atomic_fetch_add(&stat_mmaps_ok, 1, __ATOMIC_RELAXED);
	if (prot & PROT_READ)
		probe(t, p, len, (prot & PROT_WRITE) && below(t, 2));
	munmap(p, len);
}

static void do_ring(struct thr *t)
{
	struct slot *s = &slots[below(t, NSLOTS)];

	pthread_mutex_lock(&slot_lock);
	if (s->ring) {
		struct tb5_cq_ring *r = s->ring;
		uint32_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);

		switch (below(t, 16)) {
		case 0:	/* garbage head */
			__atomic_store_n(&r->head, boundary32(t), __ATOMIC_RELEASE);
			break;
		case 1:	/* write where only the module should */
			probe(t, (volatile uint8_t *)s->ring + below(t, s->map_size),
			      1, 1);
			break;
		default:	/* consume everything */
			__atomic_store_n(&r->head, tail, __ATOMIC_RELEASE);
			break;
		}
	}
	pthread_mutex_unlock(&slot_lock);
}

/*
 * A real connection between two open descriptors of one pair, memory
 * registered on both and operations posted: so that the random calls around
 * it race with data actually moving.
 */
static void do_connect_pair(struct thr *t)
{
	int i = (int)below(t, NSLOTS), j, fi = -1, fj = -1, k;
	struct tb5_listen li;
	struct tb5_connect co;
	struct tb5_accept ac;
	struct tb5_reg_mem rm;
	struct tb5_post_op ops[8];
	struct tb5_post po;
	uint32_t mem[2];
	int fds[2];

	if (remote_peer)
		return;
	pthread_mutex_lock(&slot_lock);
	if (slots[i].has_cq && slots[i].fd >= 0) {
		for (j = 0; j < NSLOTS; j++) {
			if (slots[j].has_cq && slots[j].fd >= 0 &&
			    slots[j].dev == (slots[i].dev ^ 1)) {
				fi = slots[i].fd;
				fj = slots[j].fd;
				break;
			}
		}
	}
	pthread_mutex_unlock(&slot_lock);
	if (fi < 0)
		return;

	__atomic_fetch_add(&stat_conn[0], 1, __ATOMIC_RELAXED);
	memset(&li, 0, sizeof(li));
	li.service = 0x100 + below(t, 1000);
	k = ioctl(fi, TB5_IOC_LISTEN, &li);
	count(6, !k);
	if (k) {
		stat_conn_err[1] = errno;
		return;
	}
	__atomic_fetch_add(&stat_conn[1], 1, __ATOMIC_RELAXED);
	memset(&co, 0, sizeof(co));
	co.service = li.service;
	co.cookie = li.cookie;
	k = ioctl(fj, TB5_IOC_CONNECT, &co);
	count(7, !k);
	if (k) {
		stat_conn_err[2] = errno;
		return;
	}
	__atomic_fetch_add(&stat_conn[2], 1, __ATOMIC_RELAXED);
	memset(&ac, 0, sizeof(ac));
	for (k = 0; k < 100; k++) {
		ac.listener = li.ep;
		if (!ioctl(fi, TB5_IOC_ACCEPT, &ac)) {
			count(8, 1);
			__atomic_fetch_add(&stat_conn[3], 1, __ATOMIC_RELAXED);
			break;
		}
		stat_conn_err[3] = errno;
		count(8, 0);
		if (errno != EAGAIN)
			break;
		usleep(200);
	}
	remember_handle(t, li.ep);
	remember_handle(t, co.ep);
	remember_handle(t, ac.ep);
	fds[0] = fi;
	fds[1] = fj;
	for (k = 0; k < 2; k++) {
		uint64_t off = below(t, ARENA / 2);

		memset(&rm, 0, sizeof(rm));
		rm.addr = (uintptr_t)t->arena + off;
		rm.len = 1 + below(t, ARENA - off);
		mem[k] = 0;
		if (!ioctl(fds[k], TB5_IOC_REG_MEM, &rm))
			mem[k] = rm.handle;
		count(2, mem[k] != 0);
		remember_handle(t, mem[k]);
	}
	for (k = 0; k < 2; k++) {
		uint32_t n = 1 + (uint32_t)below(t, 8), m;

		fill_ops(t, ops, n);
		for (m = 0; m < n; m++) {
			ops[m].ep = k ? co.ep : ac.ep;
			ops[m].mem = mem[k];
			ops[m].op = 1 + (uint32_t)below(t, 2);
			ops[m].offset = below(t, 4096);
			ops[m].len = below(t, 3) ? below(t, 8192) : below(t, 65536);
		}
		memset(&po, 0, sizeof(po));
		po.ops = (uintptr_t)ops;
		po.count = n;
		if (!ioctl(fds[k], TB5_IOC_POST, &po)) {
			count(11, 1);
			__atomic_fetch_add(&stat_conn[4], 1, __ATOMIC_RELAXED);
		} else {
			count(11, 0);
			stat_conn_err[4] = errno;
		}
	}
}

static void do_misc(struct thr *t)
{
	int fd = a_fd(t);

	switch (below(t, 4)) {
	case 0: {
		struct pollfd pfd = { fd, POLLIN | POLLOUT, 0 };

		(void)poll(&pfd, 1, 0);
		break;
	}
	case 1:
		(void)!read(fd, t->arena, below(t, 8192));
		break;
	case 2:
		(void)!write(fd, t->arena, below(t, 8192));
		break;
	default:
		if (unplug && t->id == 0 && ndev >= 4) {
			char path[128];

			tb5k_link_attr_path(path, sizeof(path), 2 + (int)below(t, 2),
					    "plugged");
			tb5k_write_text(path, below(t, 2) ? "1" : "0");
			__atomic_fetch_add(&stat_plugs, 1, __ATOMIC_RELAXED);
		}
		break;
	}
}

static void thr_setup(struct thr *t)
{
	size_t total = PAGE + ARENA + RO_LEN + PAGE;

	t->base = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t->base == MAP_FAILED)
		tb5k_fail("setup", "mmap: %s", strerror(errno));
	t->arena = t->base + PAGE;
	t->ro = t->arena + ARENA;
	t->guard_hi = t->ro + RO_LEN;
	if (mprotect(t->arena, ARENA + RO_LEN, PROT_READ | PROT_WRITE))
		tb5k_fail("setup", "mprotect: %s", strerror(errno));
	memset(t->arena, 0x3c, ARENA + RO_LEN);
	if (mprotect(t->ro, RO_LEN, PROT_READ))
		tb5k_fail("setup", "mprotect: %s", strerror(errno));

	t->null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (pipe(t->pipe_fd))
		t->pipe_fd[0] = t->pipe_fd[1] = -1;
	t->memfd = memfd_create("tb5k-fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	t->dmabuf_fd = -1;
	t->dmabuf_len = 0;
	if (t->memfd >= 0 && !ftruncate(t->memfd, 16 * PAGE)) {
#ifdef HAVE_UDMABUF
		int u = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);

		if (u >= 0) {
			struct udmabuf_create c = { (uint32_t)t->memfd,
						    UDMABUF_FLAGS_CLOEXEC, 0,
						    16 * PAGE };

			fcntl(t->memfd, F_ADD_SEALS, F_SEAL_SHRINK);
			t->dmabuf_fd = ioctl(u, UDMABUF_CREATE, &c);
			if (t->dmabuf_fd >= 0)
				t->dmabuf_len = 16 * PAGE;
			close(u);
		}
#endif
	}
}

static void *thr_main(void *arg)
{
	struct thr *t = arg;
	uint64_t n = 0;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		uint64_t r = below(t, 1000);

		if (r < 650)
			do_tb5_ioctl(t);
		else if (r < 800)
			do_random_ioctl(t);
		else if (r < 830)
			do_reopen(t);
		else if (r < 880 && !no_mmap)
			do_mmap(t);
		else if (r < 940)
			do_ring(t);
		else if (r < 980)
			do_misc(t);
		else if (r < 995)
			do_connect_pair(t);
		else
			do_reopen(t);
		if ((++n & 255) == 0 && tb5k_now_ms() > deadline_ms)
			__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct thr thr[MAX_THREADS];
	struct sigaction sa;
	uint64_t seconds = 300, pinned0, pinned, t0;
	int nthreads = 4, i;
	char path[128];

	seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--calls") && i + 1 < argc)
			max_calls = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--min-calls") && i + 1 < argc)
			min_calls = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--no-unplug"))
			unplug = 0;
		else if (!strcmp(argv[i], "--no-mmap"))
			no_mmap = 1;
		else if (!strcmp(argv[i], "--remote-peer"))
			remote_peer = 1;
		else {
			fprintf(stderr, "usage: %s [--seed S] [--calls N] "
				"[--min-calls M] [--seconds T] [--threads K] "
				"[--no-unplug] [--no-mmap] [--remote-peer]\n",
				argv[0]);
			return 2;
		}
	}
	if (nthreads < 1 || nthreads > MAX_THREADS)
		nthreads = 4;
	if (min_calls > max_calls)
		min_calls = max_calls;
	tb5k_init("fuzz", (unsigned int)seconds + 180);
	tb5k_note("seed 0x%llx (rerun with --seed 0x%llx), %d threads, up to %llu "
		  "calls or %llu s", (unsigned long long)seed,
		  (unsigned long long)seed, nthreads,
		  (unsigned long long)max_calls, (unsigned long long)seconds);

	for (ndev = 0; ndev < 64; ndev++) {
		tb5k_link_attr_path(path, sizeof(path), ndev, "state");
		if (access(path, F_OK))
			break;
	}
	if (remote_peer)
		unplug = 0;
	TB5K_CHECK(ndev >= (remote_peer ? 1 : 2), "setup", "found %d tb5 links",
		   ndev);
	pinned0 = tb5k_pinned_pages();
	have_udmabuf = !access("/dev/udmabuf", F_OK);
	tb5k_note("%d links, pinned_pages %llu, udmabuf %s", ndev,
		  (unsigned long long)pinned0, have_udmabuf ? "yes" : "no");

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	for (i = 0; i < NSLOTS; i++) {
		slots[i].fd = -1;
		slots[i].ring = NULL;
	}
	{
		struct thr boot;

		memset(&boot, 0, sizeof(boot));
		boot.rng = seed ^ 0x5105;
		for (i = 0; i < NSLOTS; i++)
			do_reopen(&boot);
	}

	fuzzing = 1;
	t0 = tb5k_now_ms();
	deadline_ms = t0 + seconds * 1000;
	memset(thr, 0, sizeof(thr));
	for (i = 0; i < nthreads; i++) {
		thr[i].id = i;
		thr[i].rng = (seed + 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1)) | 1;
		thr_setup(&thr[i]);
	}
	for (i = 0; i < nthreads; i++)
		if (pthread_create(&thr[i].tid, NULL, thr_main, &thr[i]))
			tb5k_fail("setup", "pthread_create failed");
	for (i = 0; i < nthreads; i++)
		pthread_join(thr[i].tid, NULL);

	tb5k_note("%llu ioctl calls in %llu ms; %llu mmaps (%llu succeeded), "
		  "%llu reopens, %llu faults caught, %llu plug writes",
		  (unsigned long long)calls,
		  (unsigned long long)(tb5k_now_ms() - t0),
		  (unsigned long long)stat_mmaps, (unsigned long long)stat_mmaps_ok,
		  (unsigned long long)stat_reopens, (unsigned long long)stat_faults,
		  (unsigned long long)stat_plugs);
	tb5k_note("connections: %llu tried, %llu listened (last error %s), "
		  "%llu connected (%s), %llu accepted (%s), %llu batches posted "
		  "(%s)", (unsigned long long)stat_conn[0],
		  (unsigned long long)stat_conn[1], tb5k_errname(stat_conn_err[1]),
		  (unsigned long long)stat_conn[2], tb5k_errname(stat_conn_err[2]),
		  (unsigned long long)stat_conn[3], tb5k_errname(stat_conn_err[3]),
		  (unsigned long long)stat_conn[4], tb5k_errname(stat_conn_err[4]));
	for (i = 0; i < NSTAT; i++)
		tb5k_note("  %-12s %8llu calls, %8llu succeeded", cmd_names[i],
			  (unsigned long long)stat_calls[i],
			  (unsigned long long)stat_ok[i]);

	/* Tear down: everything closes, the cable goes back in. */
	for (i = 0; i < NSLOTS; i++) {
		if (slots[i].ring)
			munmap(slots[i].ring, slots[i].map_size);
		if (slots[i].fd >= 0)
			close(slots[i].fd);
	}
	for (i = 0; i < nthreads; i++) {
		if (thr[i].dmabuf_fd >= 0)
			close(thr[i].dmabuf_fd);
		close(thr[i].memfd);
		close(thr[i].null_fd);
		close(thr[i].pipe_fd[0]);
		close(thr[i].pipe_fd[1]);
	}
	if (unplug && ndev >= 4) {
		tb5k_link_attr_path(path, sizeof(path), 2, "plugged");
		tb5k_write_text(path, "1");
	}
	TB5K_CHECK(calls >= min_calls, "calls", "only %llu ioctl calls in %llu s "
		   "(wanted %llu)", (unsigned long long)calls,
		   (unsigned long long)seconds, (unsigned long long)min_calls);
	tb5k_pass("calls (%llu ioctls, seed 0x%llx)", (unsigned long long)calls,
		  (unsigned long long)seed);

	pinned = tb5k_wait_pinned(pinned0, 10000);
	TB5K_CHECK(pinned == pinned0, "pinned", "pinned_pages is %llu after "
		   "closing everything, was %llu", (unsigned long long)pinned,
		   (unsigned long long)pinned0);
	tb5k_pass("pinned (back to %llu)", (unsigned long long)pinned0);
	for (i = 0; i < ndev; i++)
		TB5K_CHECK(!tb5k_wait_link_state(i, "ready", 20000), "links",
			   "tb5_%d is not \"ready\" after the fuzzing", i);
	tb5k_pass("links (all %d ready)", ndev);
	return 0;
}
