// SPDX-License-Identifier: MIT
/*
 * tb5k-xfer - messages over both loop pairs, both directions at once, every
 * byte verified, then the error semantics of one connection.
 *
 *   tb5k-xfer [--quick] [--big-mib N] [--seed S] [--pairs P]
 *
 * Pair p is /dev/tb5_<2p> <-> /dev/tb5_<2p+1>; each pair carries two flows,
 * one per direction, all four at once:
 *   mixed   sizes 0, 1, 4095, 4096, 4097, 65537, 1 MiB + 3 and a few more,
 *           all outstanding together, receives posted before and after the
 *           sends, two messages sharing a tag (they must pair in order),
 *           some receives larger than their message;
 *   big     one 64 MiB message per flow (as many flows at once as memory
 *           allows; --big-mib 0 leaves it out);
 *   errors  on pair 0: truncation (-EMSGSIZE on both sides, receive buffer
 *           untouched), zero-byte messages, a batch that stops at its bad
 *           operation, invalid posts, the per-endpoint operation limit, close
 *           (-ECANCELED here, -ECONNRESET and PEER_CLOSED there), and a
 *           completion queue too small to promise more (-ENOSPC);
 *   handles the first event of a new endpoint names it, however soon it
 *           comes: connects refused at once (nobody listens) and connects
 *           accepted at once (a thread that keeps accepting), many times.
 * Every completion's status, bytes, tag, endpoint and user_data is checked;
 * every receive buffer is verified byte by byte, and the bytes around it
 * must be untouched.
 */
#include "tb5k.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define UD_MAGIC	0xb5c0000000000000ull
#define UD_MASK		0xfff0000000000000ull
#define UNTOUCHED	0xee	/* what receive buffers hold before a receive */
#define GUARD		64	/* untouched bytes after each receive */
#define CQ_ENTRIES	1024
#define WAIT_MS		120000	/* longest wait for one completion (TCG) */

struct msg {
	uint64_t len;		/* message bytes */
	uint64_t recv_len;	/* the receive posted for it, >= len */
	uint32_t tag;
	int early;		/* send posted before the receives */
	uint64_t off;		/* offset in both regions */
	uint64_t seed;
};

struct flow {
	char name[32];
	int pair, dir;
	int sctx, rctx;		/* indexes in ctx[] */
	uint32_t s_ep, r_ep;
	uint8_t *sbuf, *rbuf;
	size_t len;		/* of each buffer */
	uint32_t s_mem, r_mem;
	struct msg *msgs;
	int nmsgs;
	uint64_t sent_bytes;
};

/* What a completion must look like; user_data = UD_MAGIC | index. */
struct expect {
	int ctx;
	uint16_t op;
	uint32_t ep, tag;
	uint64_t bytes;
	int32_t status;
	int done;
	struct flow *f;		/* receives to verify */
	int msg;
};

static struct tb5k_ctx ctx[4];
static struct tb5k_conn conn[2];
static int npairs = 2;
static uint64_t seed = 0x7b5c0ffee;
static struct expect *ex;
static size_t nex, capex;

static uint64_t expect(int c, uint16_t op, uint32_t ep, uint32_t tag,
		       uint64_t bytes, int32_t status, struct flow *f, int msg)
{
	struct expect *e;

	if (nex == capex) {
		capex = capex ? 2 * capex : 256;
		ex = realloc(ex, capex * sizeof(*ex));
		if (!ex)
			tb5k_fail("expect", "out of memory");
	}
	e = &ex[nex];
	memset(e, 0, sizeof(*e));
	e->ctx = c;
	e->op = op;
	e->ep = ep;
	e->tag = tag;
	e->bytes = bytes;
	e->status = status;
	e->f = f;
	e->msg = msg;
	return UD_MAGIC | nex++;
}

static void verify_recv(const char *name, struct flow *f, int i)
{
	const struct msg *m = &f->msgs[i];
	int64_t bad;

	bad = tb5k_verify(f->rbuf + m->off, m->len, m->seed, 0);
	TB5K_CHECK(bad < 0, name, "%s message %d (%llu bytes): byte %lld differs "
		   "(0x%02x, pattern 0x%02x)", f->name, i,
		   (unsigned long long)m->len, (long long)bad,
		   f->rbuf[m->off + bad], tb5k_pattern_byte(m->seed, bad));
	bad = tb5k_verify_byte(f->rbuf + m->off + m->len,
			       m->recv_len - m->len + GUARD, UNTOUCHED);
	TB5K_CHECK(bad < 0, name, "%s message %d (%llu bytes into a receive of "
		   "%llu): byte %lld past the message was written", f->name, i,
		   (unsigned long long)m->len, (unsigned long long)m->recv_len,
		   (long long)(m->len + bad));
}

/* Take completions off every context until expectations [from, to) are met. */
static void reap(const char *name, size_t from, size_t to)
{
	struct tb5k_ctx *cs[4];
	size_t left = 0, i;
	int n = 2 * npairs;

	for (i = 0; i < (size_t)n; i++)
		cs[i] = &ctx[i];
	for (i = from; i < to; i++)
		left += !ex[i].done;
	while (left) {
		struct tb5_cqe cqe;
		struct expect *e;
		int which;
		size_t idx;

		if (!tb5k_next_multi(cs, n, &which, &cqe, WAIT_MS)) {
			for (i = from; i < to && ex[i].done; i++)
				;
			tb5k_fail(name, "%zu completions missing after %d s; the "
				  "first: op %u on /dev/tb5_%d ep %u tag %u",
				  left, WAIT_MS / 1000, ex[i].op, ex[i].ctx,
				  ex[i].ep, ex[i].tag);
		}
		TB5K_CHECK(cqe.op != TB5_CQE_EVENT, name,
			   "unexpected event on /dev/tb5_%d: %s", which,
			   tb5k_cqe_str(&cqe));
		TB5K_CHECK((cqe.user_data & UD_MASK) == UD_MAGIC &&
			   (cqe.user_data & ~UD_MASK) < nex, name,
			   "a completion with user_data nobody posted: %s",
			   tb5k_cqe_str(&cqe));
		idx = cqe.user_data & ~UD_MASK;
		e = &ex[idx];
		TB5K_CHECK(!e->done, name, "a second completion for user_data "
			   "0x%llx: %s", (unsigned long long)cqe.user_data,
			   tb5k_cqe_str(&cqe));
		TB5K_CHECK(idx >= from && idx < to, name,
			   "a completion of an earlier step arrived now: %s",
			   tb5k_cqe_str(&cqe));
		TB5K_CHECK(which == e->ctx, name, "completion on /dev/tb5_%d, "
			   "posted on /dev/tb5_%d: %s", which, e->ctx,
			   tb5k_cqe_str(&cqe));
		TB5K_CHECK(cqe.op == e->op && cqe.ep == e->ep && cqe.tag == e->tag,
			   name, "expected op %u ep %u tag %u, got %s", e->op,
			   e->ep, e->tag, tb5k_cqe_str(&cqe));
		TB5K_CHECK(cqe.status == e->status, name,
			   "expected status %s, got %s", tb5k_errname(e->status),
			   tb5k_cqe_str(&cqe));
		TB5K_CHECK(cqe.event == 0, name, "a data completion with event "
			   "%u: %s", cqe.event, tb5k_cqe_str(&cqe));
		if (!e->status)
			TB5K_CHECK(cqe.bytes == e->bytes, name,
				   "expected %llu bytes, got %s",
				   (unsigned long long)e->bytes,
				   tb5k_cqe_str(&cqe));
		if (e->f && !e->status)
			verify_recv(name, e->f, e->msg);
		e->done = 1;
		left--;
	}
}

static void flow_init(struct flow *f, int pair, int dir, const char *what)
{
	memset(f, 0, sizeof(*f));
	f->pair = pair;
	f->dir = dir;
	f->sctx = 2 * pair + dir;
	f->rctx = 2 * pair + !dir;
	/* ctx[2p] holds the accepted endpoint, ctx[2p+1] the connecting one. */
	f->s_ep = dir ? conn[pair].ep_c : conn[pair].ep_l;
	f->r_ep = dir ? conn[pair].ep_l : conn[pair].ep_c;
	snprintf(f->name, sizeof(f->name), "%s tb5_%d->tb5_%d", what, f->sctx,
		 f->rctx);
}

/* Lay the messages out, allocate, fill, register. */
static void flow_setup(struct flow *f, uint64_t flow_seed)
{
	uint64_t cursor = 0;
	int i;

	for (i = 0; i < f->nmsgs; i++) {
		struct msg *m = &f->msgs[i];

		m->off = cursor + (uint64_t)(i * 7 + 3) % 64;
		m->seed = flow_seed * 1000003u + (uint64_t)i;
		cursor = (m->off + m->recv_len + GUARD + 63) & ~63ull;
	}
	f->len = cursor;
	f->sbuf = tb5k_alloc(f->len);
	f->rbuf = tb5k_alloc(f->len);
	memset(f->sbuf, 0x11, f->len);
	memset(f->rbuf, UNTOUCHED, f->len);
	for (i = 0; i < f->nmsgs; i++)
		tb5k_fill(f->sbuf + f->msgs[i].off, f->msgs[i].len,
			  f->msgs[i].seed, 0);
	f->s_mem = tb5k_reg(&ctx[f->sctx], f->sbuf, f->len);
	f->r_mem = tb5k_reg(&ctx[f->rctx], f->rbuf, f->len);
}

static void flow_teardown(const char *name, struct flow *f)
{
	int ret;

	ret = tb5k_dereg(&ctx[f->sctx], f->s_mem);
	TB5K_CHECK(!ret, name, "TB5_IOC_DEREG_MEM of %s's send region: %s",
		   f->name, tb5k_errname(ret));
	ret = tb5k_dereg(&ctx[f->rctx], f->r_mem);
	TB5K_CHECK(!ret, name, "TB5_IOC_DEREG_MEM of %s's receive region: %s",
		   f->name, tb5k_errname(ret));
	ret = tb5k_dereg(&ctx[f->rctx], f->r_mem);
	TB5K_CHECK(ret < 0, name, "a second TB5_IOC_DEREG_MEM of the same "
		   "handle succeeded");
	tb5k_free(f->sbuf, f->len);
	tb5k_free(f->rbuf, f->len);
	f->sbuf = f->rbuf = NULL;
}

static void post_sends(const char *name, struct flow *f, int early)
{
	int i, ret;

	for (i = 0; i < f->nmsgs; i++) {
		const struct msg *m = &f->msgs[i];
		uint64_t ud;

		if (m->early != early)
			continue;
		ud = expect(f->sctx, TB5_CQE_SEND, f->s_ep, m->tag, m->len, 0,
			    NULL, i);
		ret = tb5k_post1(&ctx[f->sctx], TB5_OP_SEND, f->s_ep, f->s_mem,
				 m->tag, m->off, m->len, ud);
		TB5K_CHECK(!ret, name, "%s: posting send %d (%llu bytes): %s",
			   f->name, i, (unsigned long long)m->len,
			   tb5k_errname(ret));
		f->sent_bytes += m->len;
	}
}

static void post_recvs(const char *name, struct flow *f)
{
	struct tb5_post_op ops[64];
	uint32_t posted;
	int i, ret;

	if (f->nmsgs > 64)
		tb5k_fail(name, "too many messages");
	memset(ops, 0, sizeof(ops));
	for (i = 0; i < f->nmsgs; i++) {
		const struct msg *m = &f->msgs[i];

		ops[i].op = TB5_OP_RECV;
		ops[i].ep = f->r_ep;
		ops[i].mem = f->r_mem;
		ops[i].tag = m->tag;
		ops[i].offset = m->off;
		ops[i].len = m->recv_len;
		ops[i].user_data = expect(f->rctx, TB5_CQE_RECV, f->r_ep, m->tag,
					  m->len, 0, f, i);
	}
	/* One batch: the receives go in, in order, with one ioctl. */
	ret = tb5k_post(&ctx[f->rctx], ops, (uint32_t)f->nmsgs, &posted);
	TB5K_CHECK(!ret, name, "%s: posting %d receives: %s (posted %u)",
		   f->name, f->nmsgs, tb5k_errname(ret), posted);
}

/* Verify the whole receive buffer: messages, and nothing else touched. */
static void sweep(const char *name, struct flow *f)
{
	uint64_t pos = 0;
	int64_t bad;
	int i;

	for (i = 0; i < f->nmsgs; i++) {
		const struct msg *m = &f->msgs[i];

		bad = tb5k_verify_byte(f->rbuf + pos, m->off - pos, UNTOUCHED);
		TB5K_CHECK(bad < 0, name, "%s: byte %lld of the receive region "
			   "(before message %d) was written", f->name,
			   (long long)(pos + bad), i);
		bad = tb5k_verify(f->rbuf + m->off, m->len, m->seed, 0);
		TB5K_CHECK(bad < 0, name, "%s: message %d changed after its "
			   "completion (byte %lld)", f->name, i, (long long)bad);
		pos = m->off + m->len;
	}
	bad = tb5k_verify_byte(f->rbuf + pos, f->len - pos, UNTOUCHED);
	TB5K_CHECK(bad < 0, name, "%s: byte %lld of the receive region (after "
		   "the last message) was written", f->name, (long long)(pos + bad));
}

/* -- mixed sizes, four flows at once ---------------------------------- */

static const struct msg mixed[] = {
	/* len          recv_len            tag  early */
	{ 0,            0,                  100, 1, 0, 0 },
	{ 1,            1,                  101, 0, 0, 0 },
	{ 4095,         4095 + 100,         102, 1, 0, 0 },
	{ 4096,         4096,               103, 0, 0, 0 },
	{ 4097,         4097 + 100,         104, 1, 0, 0 },
	{ 65537,        65537,              105, 0, 0, 0 },
	{ (1 << 20) + 3, (1 << 20) + 3 + 4101, 106, 1, 0, 0 },
	/* Equal tags pair up in posting order: swapped, they would truncate. */
	{ 4096,         4096,               42,  1, 0, 0 },
	{ 4097,         4097,               42,  1, 0, 0 },
	{ 0,            16,                 107, 0, 0, 0 },	/* 0 B into 16 */
	{ 3 * 4096 + 1, 3 * 4096 + 1,       108, 0, 0, 0 },
	{ 300000,       300000,             109, 1, 0, 0 },
	{ 4096 * 40,    4096 * 40,          110, 0, 0, 0 },	/* > 1 burst */
};

#define NMIXED ((int)(sizeof(mixed) / sizeof(mixed[0])))

static void phase_mixed(int quick)
{
	const char *name = "mixed";
	struct flow f[4];
	uint64_t tx0[4], rx0[4], txf0[4];
	size_t first = nex;
	int nf = 2 * npairs, i, k;

	for (i = 0; i < nf; i++) {
		flow_init(&f[i], i / 2, i % 2, "mixed");
		f[i].nmsgs = quick ? 6 : NMIXED;
		f[i].msgs = calloc((size_t)NMIXED, sizeof(struct msg));
		memcpy(f[i].msgs, mixed, sizeof(mixed));
		flow_setup(&f[i], seed + 16 * (uint64_t)i);
	}
	for (i = 0; i < nf; i++) {
		tx0[i] = tb5k_link_u64(i, "tx_bytes");
		txf0[i] = tb5k_link_u64(i, "tx_frames");
		rx0[i] = tb5k_link_u64(i, "rx_bytes");
	}
	/* Sends first on every flow, then receives, then the other sends. */
	for (i = 0; i < nf; i++)
		post_sends(name, &f[i], 1);
	for (i = 0; i < nf; i++)
		post_recvs(name, &f[i]);
	for (i = 0; i < nf; i++)
		post_sends(name, &f[i], 0);
	reap(name, first, nex);
	for (i = 0; i < nf; i++)
		sweep(name, &f[i]);
	tb5k_pass("mixed-sizes (%d messages per flow, %d flows at once, "
		  "every byte verified)", f[0].nmsgs, nf);

	/* The counters moved at least by the payload each link carried. */
	for (i = 0; i < nf; i++) {
		uint64_t sent = f[i].sent_bytes, frames = 0;
		int s = f[i].sctx, r = f[i].rctx;
		uint64_t dtx = tb5k_link_u64(s, "tx_bytes") - tx0[s];
		uint64_t dtxf = tb5k_link_u64(s, "tx_frames") - txf0[s];
		uint64_t drx = tb5k_link_u64(r, "rx_bytes") - rx0[r];

		for (k = 0; k < f[i].nmsgs; k++)
			frames += (f[i].msgs[k].len + 4095) / 4096;
		TB5K_CHECK(dtx >= sent && drx >= sent && dtxf >= frames,
			   "counters", "%s carried %llu payload bytes in >= %llu "
			   "frames, but tx_bytes grew by %llu, tx_frames by %llu, "
			   "the peer's rx_bytes by %llu", f[i].name,
			   (unsigned long long)sent, (unsigned long long)frames,
			   (unsigned long long)dtx, (unsigned long long)dtxf,
			   (unsigned long long)drx);
	}
	tb5k_pass("counters");
	for (i = 0; i < nf; i++) {
		flow_teardown(name, &f[i]);
		free(f[i].msgs);
	}
}

/* -- one big message per flow ------------------------------------------ */

static void phase_big(uint64_t big)
{
	const char *name = "big";
	uint64_t avail = tb5k_meminfo_kib("MemAvailable") * 1024;
	uint64_t per_flow = 2 * (big + 8192), margin = 96 * TB5K_MIB;
	int nf = 2 * npairs, at_once, start, i;
	struct flow f[4];

	at_once = nf;
	while (at_once > 1 && (uint64_t)at_once * per_flow + margin > avail)
		at_once /= 2;
	if (per_flow + margin > avail) {
		tb5k_skip("big", "MemAvailable is %llu MiB; one %llu MiB message "
			  "needs %llu MiB", (unsigned long long)(avail >> 20),
			  (unsigned long long)(big >> 20),
			  (unsigned long long)((per_flow + margin) >> 20));
		return;
	}
	tb5k_note("big: %llu MiB per flow, %d of %d flows at once (MemAvailable "
		  "%llu MiB)", (unsigned long long)(big >> 20), at_once, nf,
		  (unsigned long long)(avail >> 20));

	for (start = 0; start < nf; start += at_once) {
		size_t first = nex;
		uint64_t t0 = tb5k_now_ms();

		for (i = start; i < start + at_once; i++) {
			struct msg *m;
			int ret;

			flow_init(&f[i], i / 2, i % 2, "big");
			f[i].nmsgs = 1;
			f[i].msgs = m = calloc(1, sizeof(*m));
			m->len = big;
			m->recv_len = big;
			m->tag = 7;
			flow_setup(&f[i], seed + 0x100 + (uint64_t)i);
			post_recvs(name, &f[i]);
			/* An outstanding receive keeps its region registered. */
			ret = tb5k_dereg(&ctx[f[i].rctx], f[i].r_mem);
			TB5K_CHECK(ret == -EBUSY, name, "TB5_IOC_DEREG_MEM of a "
				   "region with a posted receive: %s, not EBUSY",
				   tb5k_errname(ret));
		}
		for (i = start; i < start + at_once; i++)
			post_sends(name, &f[i], 0);
		reap(name, first, nex);
		for (i = start; i < start + at_once; i++) {
			sweep(name, &f[i]);
			flow_teardown(name, &f[i]);
			free(f[i].msgs);
		}
		tb5k_note("big: flows %d..%d done in %llu ms", start,
			  start + at_once - 1,
			  (unsigned long long)(tb5k_now_ms() - t0));
	}
	tb5k_pass("big-message (%llu MiB per flow, %d flows, every byte verified)",
		  (unsigned long long)(big >> 20), nf);
}

/* -- error semantics on pair 0 ------------------------------------------ */

static void expect_post_fail(const char *name, struct tb5k_ctx *c,
			     const struct tb5_post_op *op, uint32_t count,
			     const char *what, const int *errs)
{
	struct tb5_post p;
	int ret, i;

	memset(&p, 0, sizeof(p));
	p.ops = (uintptr_t)op;
	p.count = count;
	ret = ioctl(c->fd, TB5_IOC_POST, &p);
	TB5K_CHECK(ret == -1, name, "TB5_IOC_POST with %s succeeded", what);
	for (i = 0; errs[i]; i++)
		if (errno == errs[i])
			break;
	TB5K_CHECK(errs[i], name, "TB5_IOC_POST with %s failed with %s", what,
		   tb5k_errname(errno));
	TB5K_CHECK(p.posted == 0, name, "TB5_IOC_POST with %s says posted = %u",
		   what, p.posted);
}

static void phase_errors(void)
{
	static const int einval[] = { EINVAL, 0 };
	static const int range[] = { EINVAL, ERANGE, EOVERFLOW, EFAULT, 0 };
	static const int badh[] = { EINVAL, EBADF, ENOENT, 0 };
	static const int toobig[] = { EINVAL, EMSGSIZE, ERANGE, EOVERFLOW, 0 };
	struct tb5k_ctx *a = &ctx[0], *b = &ctx[1];
	uint32_t a_ep = conn[0].ep_l, b_ep = conn[0].ep_c;
	const size_t len = 64 * 1024;
	uint8_t *abuf = tb5k_alloc(len), *bbuf = tb5k_alloc(len);
	uint32_t a_mem, b_mem, posted, i, nrecv;
	struct tb5_post_op ops[TB5_UAPI_POST_MAX + 1];
	struct tb5_ep_query q;
	struct tb5_cqe cqe;
	size_t first;
	int ret, batch_err;

	tb5k_fill(abuf, len, seed + 0x200, 0);
	memset(bbuf, UNTOUCHED, len);
	a_mem = tb5k_reg(a, abuf, len);
	b_mem = tb5k_reg(b, bbuf, len);

	/* Truncation: 5000 bytes against a 1000-byte receive. */
	first = nex;
	ret = tb5k_post1(b, TB5_OP_RECV, b_ep, b_mem, 77, 0, 1000,
			 expect(1, TB5_CQE_RECV, b_ep, 77, 0, -EMSGSIZE, NULL, 0));
	TB5K_CHECK(!ret, "truncation", "post recv: %s", tb5k_errname(ret));
	ret = tb5k_post1(a, TB5_OP_SEND, a_ep, a_mem, 77, 0, 5000,
			 expect(0, TB5_CQE_SEND, a_ep, 77, 0, -EMSGSIZE, NULL, 0));
	TB5K_CHECK(!ret, "truncation", "post send: %s", tb5k_errname(ret));
	reap("truncation", first, nex);
	TB5K_CHECK(tb5k_verify_byte(bbuf, len, UNTOUCHED) < 0, "truncation",
		   "the receive buffer was written");
	tb5k_pass("truncation (-EMSGSIZE on both sides, buffer untouched)");

	/* The connection survives a truncation. */
	first = nex;
	ret = tb5k_post1(b, TB5_OP_RECV, b_ep, b_mem, 78, 0, 5000,
			 expect(1, TB5_CQE_RECV, b_ep, 78, 5000, 0, NULL, 0));
	TB5K_CHECK(!ret, "after-truncation", "post recv: %s", tb5k_errname(ret));
	ret = tb5k_post1(a, TB5_OP_SEND, a_ep, a_mem, 78, 0, 5000,
			 expect(0, TB5_CQE_SEND, a_ep, 78, 5000, 0, NULL, 0));
	TB5K_CHECK(!ret, "after-truncation", "post send: %s", tb5k_errname(ret));
	reap("after-truncation", first, nex);
	TB5K_CHECK(tb5k_verify(bbuf, 5000, seed + 0x200, 0) < 0, "after-truncation",
		   "data differs");
	TB5K_CHECK(tb5k_verify_byte(bbuf + 5000, len - 5000, UNTOUCHED) < 0,
		   "after-truncation", "bytes past the message were written");
	tb5k_pass("after-truncation");

	/* Zero bytes, into an empty and a 16-byte receive. */
	memset(bbuf, UNTOUCHED, len);
	first = nex;
	ret = tb5k_post1(b, TB5_OP_RECV, b_ep, b_mem, 79, 100, 16,
			 expect(1, TB5_CQE_RECV, b_ep, 79, 0, 0, NULL, 0));
	TB5K_CHECK(!ret, "zero-byte", "a 16-byte receive: %s", tb5k_errname(ret));
	/* Zero bytes at the very end of the region is still inside it. */
	ret = tb5k_post1(b, TB5_OP_RECV, b_ep, b_mem, 80, len, 0,
			 expect(1, TB5_CQE_RECV, b_ep, 80, 0, 0, NULL, 0));
	TB5K_CHECK(!ret, "zero-byte", "a zero-byte receive at offset %zu of a "
		   "%zu-byte region: %s", len, len, tb5k_errname(ret));
	ret = tb5k_post1(a, TB5_OP_SEND, a_ep, a_mem, 79, 0, 0,
			 expect(0, TB5_CQE_SEND, a_ep, 79, 0, 0, NULL, 0));
	TB5K_CHECK(!ret, "zero-byte", "a zero-byte send: %s", tb5k_errname(ret));
	ret = tb5k_post1(a, TB5_OP_SEND, a_ep, a_mem, 80, len, 0,
			 expect(0, TB5_CQE_SEND, a_ep, 80, 0, 0, NULL, 0));
	TB5K_CHECK(!ret, "zero-byte", "a zero-byte send at the region's end: %s",
		   tb5k_errname(ret));
	reap("zero-byte", first, nex);
	TB5K_CHECK(tb5k_verify_byte(bbuf, len, UNTOUCHED) < 0, "zero-byte",
		   "a zero-byte message wrote into the receive buffer");
	tb5k_pass("zero-byte");

	/* A batch stops at its first bad operation; the ones before it stay. */
	memset(ops, 0, sizeof(ops));
	for (i = 0; i < 3; i++) {
		ops[i].op = TB5_OP_RECV;
		ops[i].ep = b_ep;
		ops[i].mem = b_mem;
		ops[i].tag = 81 + i;
		ops[i].len = 100;
	}
	ops[1].offset = len - 50;	/* offset + len beyond the region */
	first = nex;
	ops[0].user_data = expect(1, TB5_CQE_RECV, b_ep, 81, 100, 0, NULL, 0);
	ops[2].user_data = UD_MAGIC | 0xfffffffffull;	/* must never show */
	ret = tb5k_post(b, ops, 3, &posted);
	batch_err = ret;
	TB5K_CHECK(ret < 0 && posted == 1, "batch-stop", "a batch whose second "
		   "operation lies outside its region: %s with posted %u, "
		   "wanted an error with posted 1", tb5k_errname(ret), posted);
	TB5K_CHECK(ret == -EINVAL || ret == -ERANGE || ret == -EOVERFLOW,
		   "batch-stop", "the bad operation failed with %s",
		   tb5k_errname(ret));
	ret = tb5k_post1(a, TB5_OP_SEND, a_ep, a_mem, 81, 0, 100,
			 expect(0, TB5_CQE_SEND, a_ep, 81, 100, 0, NULL, 0));
	TB5K_CHECK(!ret, "batch-stop", "post send: %s", tb5k_errname(ret));
	reap("batch-stop", first, nex);
	tb5k_pass("batch-stop (%s, posted 1 of 3)", tb5k_errname(batch_err));

	/* Posts that must be refused whole. */
	memset(ops, 0, sizeof(ops));
	ops[0].op = TB5_OP_RECV;
	ops[0].ep = b_ep;
	ops[0].mem = b_mem;
	ops[0].len = 10;
	expect_post_fail("bad-post", b, ops, 0, "count 0", einval);
	for (i = 1; i <= TB5_UAPI_POST_MAX; i++)
		ops[i] = ops[0];
	expect_post_fail("bad-post", b, ops, TB5_UAPI_POST_MAX + 1, "count 65",
			 einval);
	expect_post_fail("bad-post", b, NULL, 1, "a NULL ops pointer",
			 (const int[]){ EFAULT, 0 });
	ops[1] = ops[0];
	ops[1].op = 3;
	expect_post_fail("bad-post", b, &ops[1], 1, "op 3", einval);
	ops[1] = ops[0];
	ops[1].mem = b_mem + 1000;
	expect_post_fail("bad-post", b, &ops[1], 1, "an unknown region", badh);
	ops[1] = ops[0];
	ops[1].ep = b_ep + 1000;
	expect_post_fail("bad-post", b, &ops[1], 1, "an unknown endpoint", badh);
	ops[1] = ops[0];
	ops[1].mem = a_mem;	/* a handle of the other context */
	ops[1].ep = a_ep;
	if (a_mem != b_mem || a_ep != b_ep)
		TB5K_CHECK(ioctl(b->fd, TB5_IOC_POST,
				 &(struct tb5_post){ (uintptr_t)&ops[1], 1, 0 }) == -1,
			   "bad-post", "another context's handles were accepted");
	ops[1] = ops[0];
	ops[1].offset = ~0ull - 1;
	ops[1].len = 2;
	expect_post_fail("bad-post", b, &ops[1], 1, "offset + len wrapping 2^64",
			 range);
	ops[1] = ops[0];
	ops[1].offset = len;
	ops[1].len = 1;
	expect_post_fail("bad-post", b, &ops[1], 1, "offset at the region's end",
			 range);
	ops[1] = ops[0];
	ops[1].len = TB5_UAPI_MSG_MAX + 1;
	expect_post_fail("bad-post", b, &ops[1], 1, "len 2^40 + 1", toobig);
	tb5k_pass("bad-post");

	/* At most TB5_UAPI_EP_OPS_MAX receives outstanding per endpoint. */
	memset(bbuf, UNTOUCHED, len);
	first = nex;
	for (nrecv = 0; nrecv < TB5_UAPI_EP_OPS_MAX + 1; nrecv++) {
		uint64_t ud = expect(1, TB5_CQE_RECV, b_ep, 200 + nrecv, 0,
				     -ECANCELED, NULL, 0);

		ret = tb5k_post1(b, TB5_OP_RECV, b_ep, b_mem, 200 + nrecv,
				 nrecv * 64, 64, ud);
		if (ret) {
			nex--;	/* not posted: no completion */
			break;
		}
	}
	TB5K_CHECK(nrecv == TB5_UAPI_EP_OPS_MAX && ret == -EAGAIN, "ops-limit",
		   "receive %u was refused with %s; wanted %u accepted, then "
		   "EAGAIN", nrecv + 1, tb5k_errname(ret), TB5_UAPI_EP_OPS_MAX);
	tb5k_pass("ops-limit (%u outstanding receives, then EAGAIN)", nrecv);

	/* A send nobody grants, then close on the receiving side. */
	ret = tb5k_post1(a, TB5_OP_SEND, a_ep, a_mem, 999, 0, 100,
			 expect(0, TB5_CQE_SEND, a_ep, 999, 0, -ECONNRESET, NULL, 0));
	TB5K_CHECK(!ret, "close", "post send: %s", tb5k_errname(ret));
	ret = tb5k_ep_close(b, b_ep);
	TB5K_CHECK(!ret, "close", "TB5_IOC_EP_CLOSE: %s", tb5k_errname(ret));
	TB5K_CHECK(tb5k_wait_event(a, a_ep, 0, &cqe, WAIT_MS), "close",
		   "no event on the peer's endpoint after close");
	TB5K_CHECK(cqe.event == TB5_EVENT_PEER_CLOSED && cqe.status == -ECONNRESET,
		   "close", "the peer got %s, wanted PEER_CLOSED -ECONNRESET",
		   tb5k_cqe_str(&cqe));
	reap("close", first, nex);
	TB5K_CHECK(tb5k_verify_byte(bbuf, len, UNTOUCHED) < 0, "close",
		   "cancelled receives wrote into their buffer");
	ret = tb5k_ep_query(a, a_ep, &q);
	TB5K_CHECK(!ret && q.state == TB5_EP_STATE_PEER_CLOSED, "close",
		   "EP_QUERY of the peer's endpoint: %s, state %u",
		   tb5k_errname(ret), q.state);
	ret = tb5k_post1(a, TB5_OP_SEND, a_ep, a_mem, 1, 0, 1, 1);
	TB5K_CHECK(ret == -ECONNRESET, "close", "posting on a peer-closed "
		   "endpoint: %s, not ECONNRESET", tb5k_errname(ret));
	ret = tb5k_post1(b, TB5_OP_RECV, b_ep, b_mem, 1, 0, 1, 1);
	TB5K_CHECK(ret < 0, "close", "posting on a closed endpoint succeeded");
	ret = tb5k_ep_close(a, a_ep);
	TB5K_CHECK(!ret, "close", "TB5_IOC_EP_CLOSE of the peer-closed "
		   "endpoint: %s", tb5k_errname(ret));
	ret = tb5k_ep_close(a, a_ep);
	TB5K_CHECK(ret < 0, "close", "a second TB5_IOC_EP_CLOSE succeeded");
	ret = tb5k_ep_query(a, a_ep, &q);
	TB5K_CHECK(ret < 0, "close", "EP_QUERY of a closed handle succeeded");
	/* Nothing else may turn up: no stray completion of the batch above. */
	TB5K_CHECK(!tb5k_next(a, &cqe, 200) && !tb5k_next(b, &cqe, 200), "close",
		   "an unexpected completion: %s", tb5k_cqe_str(&cqe));
	tb5k_pass("close (%u receives -ECANCELED, peer PEER_CLOSED -ECONNRESET)",
		  nrecv);

	TB5K_CHECK(!tb5k_dereg(a, a_mem) && !tb5k_dereg(b, b_mem), "close",
		   "deregistering after close failed");
	tb5k_free(abuf, len);
	tb5k_free(bbuf, len);
}

/*
 * A completion queue of TB5_UAPI_CQ_MIN entries cannot promise more than it
 * holds: posting stops with ENOSPC (or, at 64 receives, EAGAIN) and never
 * overruns the ring; reaping makes room again.
 */
static void phase_cq_full(void)
{
	const char *name = "cq-full";
	struct tb5k_ctx small, *a = &ctx[0];
	struct tb5k_conn cn;
	const size_t len = 4096 * 80;
	uint8_t *sbuf = tb5k_alloc(len), *abuf = tb5k_alloc(len);
	uint32_t s_mem, a_mem, n, i;
	struct tb5_cqe cqe;
	int ret = 0;

	tb5k_open(&small, 1, TB5_UAPI_CQ_MIN);
	tb5k_connect(name, &small, a, 0xc0f11, &cn);
	s_mem = tb5k_reg(&small, sbuf, len);
	a_mem = tb5k_reg(a, abuf, len);
	for (n = 0; n < TB5_UAPI_CQ_MIN + 1; n++) {
		ret = tb5k_post1(&small, TB5_OP_RECV, cn.ep_l, s_mem, 300 + n,
				 n * 4096, 4096, 0x5000 + n);
		if (ret)
			break;
	}
	TB5K_CHECK(ret == -ENOSPC || (n == TB5_UAPI_EP_OPS_MAX && ret == -EAGAIN),
		   name, "posting receive %u on a %u-entry queue: %s", n + 1,
		   TB5_UAPI_CQ_MIN, tb5k_errname(ret));
	tb5k_note("%s: %u receives fit a %u-entry queue, then %s", name, n,
		  TB5_UAPI_CQ_MIN, tb5k_errname(ret));
	/* Complete them all; closing the peer adds events on top. */
	for (i = 0; i < n; i++) {
		ret = tb5k_post1(a, TB5_OP_SEND, cn.ep_c, a_mem, 300 + i, 0, 8,
				 0x6000 + i);
		TB5K_CHECK(!ret, name, "send %u: %s", i, tb5k_errname(ret));
	}
	for (i = 0; i < n; i++) {
		TB5K_CHECK(tb5k_wait_user_data(a, 0x6000 + i, &cqe, WAIT_MS), name,
			   "send %u did not complete", i);
		TB5K_CHECK(!cqe.status, name, "send %u: %s", i, tb5k_cqe_str(&cqe));
	}
	/* Let the small queue fill up completely before reaping anything. */
	usleep(300000);
	tb5k_ep_close(a, cn.ep_c);
	usleep(300000);
	for (i = 0; i < n; i++) {
		TB5K_CHECK(tb5k_next(&small, &cqe, WAIT_MS), name,
			   "receive %u did not complete", i);
		TB5K_CHECK(cqe.op == TB5_CQE_RECV && !cqe.status &&
			   cqe.user_data == 0x5000 + i && cqe.bytes == 8, name,
			   "completion %u: %s", i, tb5k_cqe_str(&cqe));
	}
	TB5K_CHECK(tb5k_next(&small, &cqe, WAIT_MS), name,
		   "no PEER_CLOSED on the small queue's endpoint");
	TB5K_CHECK(cqe.op == TB5_CQE_EVENT && cqe.event == TB5_EVENT_PEER_CLOSED,
		   name, "after the receives came %s, not PEER_CLOSED",
		   tb5k_cqe_str(&cqe));
	/* After reaping, there is room again (for a new connection). */
	ret = tb5k_ep_close(&small, cn.ep_l);
	TB5K_CHECK(!ret, name, "closing the endpoint: %s", tb5k_errname(ret));
	ret = tb5k_ep_close(&small, cn.listener);
	TB5K_CHECK(!ret, name, "closing the listener: %s", tb5k_errname(ret));
	tb5k_connect(name, &small, a, 0xc0f12, &cn);
	ret = tb5k_post1(&small, TB5_OP_RECV, cn.ep_l, s_mem, 1, 0, 8, 0x7000);
	TB5K_CHECK(!ret, name, "posting after reaping: %s", tb5k_errname(ret));
	tb5k_close(&small);
	tb5k_ep_close(a, cn.ep_c);
	/* The peer of a context that went away: PEER_CLOSED. */
	TB5K_CHECK(tb5k_wait_event(a, cn.ep_c, 0, &cqe, 2000) == 0 ||
		   cqe.event == TB5_EVENT_PEER_CLOSED, name,
		   "unexpected event %s", tb5k_cqe_str(&cqe));
	tb5k_dereg(a, a_mem);
	tb5k_free(sbuf, len);
	tb5k_free(abuf, len);
	tb5k_pass("%s (%u receives then %s; no overrun)", name, n,
		  n == TB5_UAPI_EP_OPS_MAX ? "EAGAIN" : "ENOSPC");
}

/* -- handles: an endpoint's first event names it ----------------------- */

#define HANDLE_ITERS	300
#define HANDLE_SERVICE	0x4a4d000ull

struct acceptor {
	struct tb5k_ctx *l;
	uint32_t listener;
	volatile int stop;
	int err;		/* an errno other than EAGAIN */
};

/* Accept as fast as it can, so the ACCEPT races the connector's ioctl. */
static void *acceptor_main(void *arg)
{
	struct acceptor *a = arg;
	struct tb5_cqe cqe;
	uint32_t last = 0;

	while (!a->stop) {
		struct tb5_accept ac;

		memset(&ac, 0, sizeof(ac));
		ac.listener = a->listener;
		if (!ioctl(a->l->fd, TB5_IOC_ACCEPT, &ac)) {
			/* Its connector is done with it: the next one came. */
			if (last)
				tb5k_ep_close(a->l, last);
			last = ac.ep;
		} else if (errno != EAGAIN) {
			a->err = errno;
		}
		/* Reap INCOMING and the rest: the queue must not fill up. */
		while (tb5k_next(a->l, &cqe, 0))
			;
	}
	return NULL;
}

/* Connect to @service and check the endpoint's first event. */
static void connect_first_event(const char *name, struct tb5k_ctx *c,
				uint64_t service, int it, uint16_t want_event,
				int32_t want_status)
{
	struct tb5_connect cn;
	struct tb5_cqe cqe;
	int ret;

	memset(&cn, 0, sizeof(cn));
	cn.service = service;
	TB5K_CHECK(!ioctl(c->fd, TB5_IOC_CONNECT, &cn), name,
		   "TB5_IOC_CONNECT %d: %s", it, tb5k_errname(errno));
	/* Nothing else is open on @c: the next entry is this endpoint's. */
	TB5K_CHECK(tb5k_next(c, &cqe, WAIT_MS), name,
		   "connect %d (endpoint %u): no event", it, cn.ep);
	TB5K_CHECK(cqe.op == TB5_CQE_EVENT && cqe.ep == cn.ep, name,
		   "connect %d: the first entry is %s, not an event of endpoint "
		   "%u (an event raised before TB5_IOC_CONNECT returned "
		   "without the endpoint's handle?)", it, tb5k_cqe_str(&cqe),
		   cn.ep);
	TB5K_CHECK(cqe.event == want_event && cqe.status == want_status, name,
		   "connect %d: %s", it, tb5k_cqe_str(&cqe));
	ret = tb5k_ep_close(c, cn.ep);
	TB5K_CHECK(!ret, name, "closing endpoint %u: %s", cn.ep,
		   tb5k_errname(ret));
	/* A PEER_CLOSED may follow the CONNECTED: drop it with the endpoint. */
	while (tb5k_next(c, &cqe, 0))
		TB5K_CHECK(cqe.ep == cn.ep, name, "connect %d: a stray %s", it,
			   tb5k_cqe_str(&cqe));
}

static void phase_handles(void)
{
	const char *name = "handles";
	struct tb5k_ctx l, c;
	struct acceptor a;
	struct tb5_listen li;
	pthread_t th;
	int i;

	tb5k_open(&l, 0, CQ_ENTRIES);
	tb5k_open(&c, 1, CQ_ENTRIES);

	/* Refused at once: the REJECT comes back on the loop's worker. */
	for (i = 0; i < HANDLE_ITERS; i++)
		connect_first_event(name, &c, HANDLE_SERVICE, i,
				    TB5_EVENT_ERROR, -ECONNREFUSED);
	tb5k_pass("%s.refused (%d connects, each ERROR names its endpoint)",
		  name, HANDLE_ITERS);

	/* Accepted at once: the ACCEPT races the connector's ioctl. */
	memset(&li, 0, sizeof(li));
	li.service = HANDLE_SERVICE + 1;
	li.flags = TB5_LISTEN_WELL_KNOWN;
	TB5K_CHECK(!ioctl(l.fd, TB5_IOC_LISTEN, &li), name, "TB5_IOC_LISTEN: %s",
		   tb5k_errname(errno));
	memset(&a, 0, sizeof(a));
	a.l = &l;
	a.listener = li.ep;
	TB5K_CHECK(!pthread_create(&th, NULL, acceptor_main, &a), name,
		   "pthread_create failed");
	for (i = 0; i < HANDLE_ITERS; i++)
		connect_first_event(name, &c, li.service, i,
				    TB5_EVENT_CONNECTED, 0);
	a.stop = 1;
	pthread_join(th, NULL);
	TB5K_CHECK(!a.err, name, "TB5_IOC_ACCEPT: %s", tb5k_errname(a.err));
	tb5k_pass("%s.accepted (%d connects, each CONNECTED names its endpoint)",
		  name, HANDLE_ITERS);

	tb5k_close(&c);
	tb5k_close(&l);
}

int main(int argc, char **argv)
{
	uint64_t big = 64 * TB5K_MIB, pinned0;
	int quick = 0, i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = 1;
		} else if (!strcmp(argv[i], "--big-mib") && i + 1 < argc) {
			big = strtoull(argv[++i], NULL, 0) * TB5K_MIB;
		} else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			seed = strtoull(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--pairs") && i + 1 < argc) {
			npairs = atoi(argv[++i]);
			if (npairs < 1 || npairs > 2)
				npairs = 2;
		} else {
			fprintf(stderr, "usage: %s [--quick] [--big-mib N] [--seed S] "
				"[--pairs 1|2]\n", argv[0]);
			return 2;
		}
	}
	tb5k_init("xfer", quick ? 300 : 1500);
	tb5k_note("seed 0x%llx, %d pairs", (unsigned long long)seed, npairs);
	pinned0 = tb5k_pinned_pages();

	for (i = 0; i < 2 * npairs; i++)
		tb5k_open(&ctx[i], i, CQ_ENTRIES);
	for (i = 0; i < npairs; i++)
		tb5k_connect("connect", &ctx[2 * i], &ctx[2 * i + 1],
			     0x5e7000 + (uint64_t)i, &conn[i]);
	tb5k_pass("connect (%d pairs)", npairs);

	phase_mixed(quick);
	if (!quick && big)
		phase_big(big);
	if (!quick) {
		phase_errors();
		phase_cq_full();
	}
	phase_handles();

	for (i = 0; i < 2 * npairs; i++)
		tb5k_close(&ctx[i]);
	TB5K_CHECK(tb5k_wait_pinned(pinned0, 5000) == pinned0, "pinned",
		   "pinned_pages is %llu after closing everything, was %llu",
		   (unsigned long long)tb5k_pinned_pages(),
		   (unsigned long long)pinned0);
	tb5k_pass("pinned (back to %llu)", (unsigned long long)pinned0);
	return 0;
}
