// SPDX-License-Identifier: MIT
/*
 * tb5k-xfer - messages over both loop pairs, both directions at once, every
 * byte verified, then the error semantics of one connection; or the same
 * as two processes, one per end of a link.
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
 *
 *   tb5k-xfer --side a|b --dev /dev/tb5_N [--quick] [--big-mib N] [--seed S]
 *             [--connect-s N]
 *
 * The same checks as two processes, one per end of a link: the tb backend
 * links two hosts, each holding one end. Each side opens only its device;
 * the link is the only channel between them. Side a listens on a well-known
 * service (cookie 0); side b connects, and is refused and tries again until
 * side a listens: each waits --connect-s (120 s) for the other, since the
 * hosts start at different times. Over that control connection
 * they agree on the schedule (--seed, --quick, --big-mib; a mismatch fails
 * both) and check each other's host ids, and a barrier message each way
 * separates the phases. The other connections come from listeners with
 * cookies, handed over the control connection (a wrong cookie is refused).
 * Both derive the messages from the seed: each knows what it sends and
 * what it must receive, sizes, tags, offsets and patterns.
 *   mixed   the table above, a->b and b->a at once on one connection; each
 *           side checks its sends, its receives (every byte, the bytes
 *           around), and its end's counters;
 *   big     one message each way, both at once (one after the other, or
 *           none, if either side lacks the memory);
 *   errors  split by who can see them, both ways at once on two
 *           connections (a sends and b receives on one, b sends and a
 *           receives on the other): each side checks its send's and its
 *           receive's -EMSGSIZE and its buffer, zero-byte messages, a batch
 *           stopping at its bad operation, invalid posts (and another
 *           context's handles, from a second context on the same device),
 *           the operation limit, and the close: -ECANCELED for the receives
 *           of the endpoint it closes, -ECONNRESET and PEER_CLOSED for its
 *           send that the peer never granted;
 *   cq-full each side's 64-entry queue, filled by the peer's sends and
 *           PEER_CLOSED: the receiving context is the small one's, the
 *           counting is local, the filling is the peer's;
 *   handles each side connects to a service nobody listens on at the peer
 *           (ERROR names the new endpoint) and to the peer's well-known
 *           listener, whose thread keeps accepting (CONNECTED names it).
 * No check needs both ends in one process. Two things differ: one link per
 * pair of processes (run a pair per link for more), and pinned_pages, which
 * counts every process of a host (of both sides, on a loop pair): each side
 * checks that its own VmLck comes back instead. The sides end in step: a
 * last barrier, then each closes its own "fin" endpoint and waits until the
 * peer has closed its own, so that neither closes the link under a send of
 * the other's still leaving its ring (it would complete -ECONNRESET).
 * The program names itself xfer-a or xfer-b in its PASS/FAIL lines.
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
	int sctx, rctx;		/* indexes in ctx[]; -1: the peer's half */
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
static int nctx;		/* contexts reap() watches: ctx[0 .. nctx) */
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
	int n = nctx;

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
				  left, WAIT_MS / 1000, ex[i].op,
				  ctx[ex[i].ctx].index, ex[i].ep, ex[i].tag);
		}
		TB5K_CHECK(cqe.op != TB5_CQE_EVENT, name,
			   "unexpected event on /dev/tb5_%d: %s", cs[which]->index,
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
			   "posted on /dev/tb5_%d: %s", cs[which]->index,
			   ctx[e->ctx].index, tb5k_cqe_str(&cqe));
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

/* Flow @i of the loop pairs: pair i / 2, direction i % 2. */
static void flow_init(struct flow *f, int i, const char *what)
{
	int pair = i / 2, dir = i % 2;

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

/*
 * Lay the messages out: offsets and pattern seeds follow from the table and
 * @flow_seed alone, so that two processes, one per end, agree on them.
 */
static void flow_layout(struct flow *f, uint64_t flow_seed)
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
}

/* Lay the messages out; allocate, fill and register the halves held here. */
static void flow_setup(struct flow *f, uint64_t flow_seed)
{
	int i;

	flow_layout(f, flow_seed);
	if (f->sctx >= 0) {
		f->sbuf = tb5k_alloc(f->len);
		memset(f->sbuf, 0x11, f->len);
		for (i = 0; i < f->nmsgs; i++)
			tb5k_fill(f->sbuf + f->msgs[i].off, f->msgs[i].len,
				  f->msgs[i].seed, 0);
		f->s_mem = tb5k_reg(&ctx[f->sctx], f->sbuf, f->len);
	}
	if (f->rctx >= 0) {
		f->rbuf = tb5k_alloc(f->len);
		memset(f->rbuf, UNTOUCHED, f->len);
		f->r_mem = tb5k_reg(&ctx[f->rctx], f->rbuf, f->len);
	}
}

/* Deregister and free the halves held here, and the messages. */
static void flow_teardown(const char *name, struct flow *f)
{
	static const char *const half[2] = { "send", "receive" };
	const int c[2] = { f->sctx, f->rctx };
	const uint32_t mem[2] = { f->s_mem, f->r_mem };
	int h, last = 0, ret;

	for (h = 0; h < 2; h++) {
		if (c[h] < 0)
			continue;
		ret = tb5k_dereg(&ctx[c[h]], mem[h]);
		TB5K_CHECK(!ret, name, "TB5_IOC_DEREG_MEM of %s's %s region: %s",
			   f->name, half[h], tb5k_errname(ret));
		last = h;
	}
	ret = tb5k_dereg(&ctx[c[last]], mem[last]);
	TB5K_CHECK(ret < 0, name, "a second TB5_IOC_DEREG_MEM of the same "
		   "handle succeeded");
	tb5k_free(f->sbuf, f->len);
	tb5k_free(f->rbuf, f->len);
	free(f->msgs);
	f->sbuf = f->rbuf = NULL;
	f->msgs = NULL;
}

/* The sends marked @early, where the send half is held here. */
static void post_sends(const char *name, struct flow *f, int early)
{
	int i, ret;

	if (f->sctx < 0)
		return;
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

/* All the receives, where the receive half is held here. */
static void post_recvs(const char *name, struct flow *f)
{
	struct tb5_post_op ops[64];
	uint32_t posted;
	int i, ret;

	if (f->rctx < 0)
		return;
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

/*
 * Verify the whole receive buffer, where the receive half is held here:
 * messages, and nothing else touched.
 */
static void sweep(const char *name, struct flow *f)
{
	uint64_t pos = 0;
	int64_t bad;
	int i;

	if (f->rctx < 0)
		return;
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

/* The mixed table on @f (its first 6 messages with @quick), set up. */
static void flow_mixed(struct flow *f, int quick, uint64_t flow_seed)
{
	f->nmsgs = quick ? 6 : NMIXED;
	f->msgs = calloc((size_t)NMIXED, sizeof(struct msg));
	TB5K_CHECK(f->msgs, "mixed", "out of memory");
	memcpy(f->msgs, mixed, sizeof(mixed));
	flow_setup(f, flow_seed);
}

/*
 * Move the messages of flows @f[0 .. @nf) all at once, as far as this
 * process holds them: the early sends, then the receives (with @busy: the
 * receive region, with receives outstanding, must refuse TB5_IOC_DEREG_MEM),
 * then the other sends; reap them all and sweep every receive region.
 */
static void xfer_flows(const char *name, struct flow *f, int nf, int busy)
{
	size_t first = nex;
	int i, ret;

	for (i = 0; i < nf; i++)
		post_sends(name, &f[i], 1);
	for (i = 0; i < nf; i++) {
		post_recvs(name, &f[i]);
		if (!busy || f[i].rctx < 0)
			continue;
		ret = tb5k_dereg(&ctx[f[i].rctx], f[i].r_mem);
		TB5K_CHECK(ret == -EBUSY, name, "TB5_IOC_DEREG_MEM of a region "
			   "with a posted receive: %s, not EBUSY",
			   tb5k_errname(ret));
	}
	for (i = 0; i < nf; i++)
		post_sends(name, &f[i], 0);
	reap(name, first, nex);
	for (i = 0; i < nf; i++)
		sweep(name, &f[i]);
}

/*
 * One message of @big bytes on each of the flows @f[@start .. @start + @n)
 * (made by flow_init() or flow_init2()), all at once; then tear them down.
 */
static void big_round(const char *name, struct flow *f, int start, int n,
		      uint64_t big)
{
	int i;

	for (i = start; i < start + n; i++) {
		struct msg *m = calloc(1, sizeof(*m));

		TB5K_CHECK(m, name, "out of memory");
		m->len = big;
		m->recv_len = big;
		m->tag = 7;
		f[i].nmsgs = 1;
		f[i].msgs = m;
		flow_setup(&f[i], seed + 0x100 + (uint64_t)i);
	}
	xfer_flows(name, &f[start], n, 1);
	for (i = start; i < start + n; i++)
		flow_teardown(name, &f[i]);
}

/* How many frames @f's messages need at least: 4 KiB each. */
static uint64_t flow_frames(const struct flow *f)
{
	uint64_t frames = 0;
	int k;

	for (k = 0; k < f->nmsgs; k++)
		frames += (f->msgs[k].len + 4095) / 4096;
	return frames;
}

/* The byte and frame counters of a link. */
struct link_counts {
	uint64_t tx, txf, rx;
};

/* Those of /dev/tb5_@dev's link now; with @since, how much they grew. */
static struct link_counts link_counts_get(int dev,
					  const struct link_counts *since)
{
	struct link_counts lc;

	lc.tx = tb5k_link_u64(dev, "tx_bytes");
	lc.txf = tb5k_link_u64(dev, "tx_frames");
	lc.rx = tb5k_link_u64(dev, "rx_bytes");
	if (since) {
		lc.tx -= since->tx;
		lc.txf -= since->txf;
		lc.rx -= since->rx;
	}
	return lc;
}

static void phase_mixed(int quick)
{
	const char *name = "mixed";
	struct link_counts c0[4], grew[4];
	struct flow f[4];
	int nf = 2 * npairs, i;

	for (i = 0; i < nf; i++) {
		flow_init(&f[i], i, "mixed");
		flow_mixed(&f[i], quick, seed + 16 * (uint64_t)i);
	}
	for (i = 0; i < nf; i++)
		c0[i] = link_counts_get(i, NULL);
	/* Sends first on every flow, then receives, then the other sends. */
	xfer_flows(name, f, nf, 0);
	tb5k_pass("mixed-sizes (%d messages per flow, %d flows at once, "
		  "every byte verified)", f[0].nmsgs, nf);

	/* The counters moved at least by the payload each link carried. */
	for (i = 0; i < nf; i++)
		grew[i] = link_counts_get(i, &c0[i]);
	for (i = 0; i < nf; i++) {
		uint64_t sent = f[i].sent_bytes, frames = flow_frames(&f[i]);
		int s = f[i].sctx, r = f[i].rctx;
		uint64_t dtx = grew[s].tx, dtxf = grew[s].txf, drx = grew[r].rx;

		TB5K_CHECK(dtx >= sent && drx >= sent && dtxf >= frames,
			   "counters", "%s carried %llu payload bytes in >= %llu "
			   "frames, but tx_bytes grew by %llu, tx_frames by %llu, "
			   "the peer's rx_bytes by %llu", f[i].name,
			   (unsigned long long)sent, (unsigned long long)frames,
			   (unsigned long long)dtx, (unsigned long long)dtxf,
			   (unsigned long long)drx);
	}
	tb5k_pass("counters");
	for (i = 0; i < nf; i++)
		flow_teardown(name, &f[i]);
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
		uint64_t t0 = tb5k_now_ms();

		for (i = start; i < start + at_once; i++)
			flow_init(&f[i], i, "big");
		big_round(name, f, start, at_once, big);
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

/*
 * The ends the error checks use: this process sends on @s_ep of ctx[@sc]
 * and receives on @r_ep of ctx[@rc]. With both ends in one process they
 * are the two ends of one connection (pair 0: ctx[0] sends, ctx[1]
 * receives and closes); with one process per end, they are this side's
 * ends of two connections, both on ctx[0], and the peer process checks
 * the other halves (its receives of our sends, its sends to ours).
 */
struct err_ends {
	int sc, rc;		/* indexes in ctx[] */
	uint32_t s_ep, r_ep;
	uint64_t r_seed;	/* the pattern of the messages we receive */
	char peer;		/* the peer process's side, or 0: none */
	size_t len;		/* of each region */
	uint8_t *sbuf, *rbuf;
	uint32_t s_mem, r_mem;
	size_t first;		/* expectations the close reaps from */
	uint32_t nrecv;		/* receives outstanding when it closes */
};

/* The send region, filled with pattern @s_seed, and the receive region. */
static void err_setup(struct err_ends *e, uint64_t s_seed)
{
	e->len = 64 * 1024;
	e->sbuf = tb5k_alloc(e->len);
	e->rbuf = tb5k_alloc(e->len);
	tb5k_fill(e->sbuf, e->len, s_seed, 0);
	memset(e->rbuf, UNTOUCHED, e->len);
	e->s_mem = tb5k_reg(&ctx[e->sc], e->sbuf, e->len);
	e->r_mem = tb5k_reg(&ctx[e->rc], e->rbuf, e->len);
}

/* A receive on our receiving end that must complete with @bytes, @status. */
static int err_recv(const struct err_ends *e, uint32_t tag, uint64_t off,
		    uint64_t len, uint64_t bytes, int32_t status)
{
	return tb5k_post1(&ctx[e->rc], TB5_OP_RECV, e->r_ep, e->r_mem, tag, off,
			  len, expect(e->rc, TB5_CQE_RECV, e->r_ep, tag, bytes,
				      status, NULL, 0));
}

/* The same for a send on our sending end. */
static int err_send(const struct err_ends *e, uint32_t tag, uint64_t off,
		    uint64_t len, uint64_t bytes, int32_t status)
{
	return tb5k_post1(&ctx[e->sc], TB5_OP_SEND, e->s_ep, e->s_mem, tag, off,
			  len, expect(e->sc, TB5_CQE_SEND, e->s_ep, tag, bytes,
				      status, NULL, 0));
}

/*
 * Messages that go wrong and the connection that survives them:
 * truncation, zero bytes, a batch that stops at its bad operation.
 */
static void err_messages(const struct err_ends *e)
{
	const size_t len = e->len;
	struct tb5_post_op ops[3];
	uint32_t posted, i;
	size_t first;
	int ret, batch_err;

	/* Truncation: 5000 bytes against a 1000-byte receive. */
	first = nex;
	ret = err_recv(e, 77, 0, 1000, 0, -EMSGSIZE);
	TB5K_CHECK(!ret, "truncation", "post recv: %s", tb5k_errname(ret));
	ret = err_send(e, 77, 0, 5000, 0, -EMSGSIZE);
	TB5K_CHECK(!ret, "truncation", "post send: %s", tb5k_errname(ret));
	reap("truncation", first, nex);
	TB5K_CHECK(tb5k_verify_byte(e->rbuf, len, UNTOUCHED) < 0, "truncation",
		   "the receive buffer was written");
	tb5k_pass("truncation (-EMSGSIZE %s, buffer untouched)",
		  e->peer ? "for our send and our receive" : "on both sides");

	/* The connection survives a truncation. */
	first = nex;
	ret = err_recv(e, 78, 0, 5000, 5000, 0);
	TB5K_CHECK(!ret, "after-truncation", "post recv: %s", tb5k_errname(ret));
	ret = err_send(e, 78, 0, 5000, 5000, 0);
	TB5K_CHECK(!ret, "after-truncation", "post send: %s", tb5k_errname(ret));
	reap("after-truncation", first, nex);
	TB5K_CHECK(tb5k_verify(e->rbuf, 5000, e->r_seed, 0) < 0,
		   "after-truncation", "data differs");
	TB5K_CHECK(tb5k_verify_byte(e->rbuf + 5000, len - 5000, UNTOUCHED) < 0,
		   "after-truncation", "bytes past the message were written");
	tb5k_pass("after-truncation");

	/* Zero bytes, into a 16-byte and an empty receive. */
	memset(e->rbuf, UNTOUCHED, len);
	first = nex;
	ret = err_recv(e, 79, 100, 16, 0, 0);
	TB5K_CHECK(!ret, "zero-byte", "a 16-byte receive: %s", tb5k_errname(ret));
	/* Zero bytes at the very end of the region is still inside it. */
	ret = err_recv(e, 80, len, 0, 0, 0);
	TB5K_CHECK(!ret, "zero-byte", "a zero-byte receive at offset %zu of a "
		   "%zu-byte region: %s", len, len, tb5k_errname(ret));
	ret = err_send(e, 79, 0, 0, 0, 0);
	TB5K_CHECK(!ret, "zero-byte", "a zero-byte send: %s", tb5k_errname(ret));
	ret = err_send(e, 80, len, 0, 0, 0);
	TB5K_CHECK(!ret, "zero-byte", "a zero-byte send at the region's end: %s",
		   tb5k_errname(ret));
	reap("zero-byte", first, nex);
	TB5K_CHECK(tb5k_verify_byte(e->rbuf, len, UNTOUCHED) < 0, "zero-byte",
		   "a zero-byte message wrote into the receive buffer");
	tb5k_pass("zero-byte");

	/* A batch stops at its first bad operation; the ones before it stay. */
	memset(ops, 0, sizeof(ops));
	for (i = 0; i < 3; i++) {
		ops[i].op = TB5_OP_RECV;
		ops[i].ep = e->r_ep;
		ops[i].mem = e->r_mem;
		ops[i].tag = 81 + i;
		ops[i].len = 100;
	}
	ops[1].offset = len - 50;	/* offset + len beyond the region */
	first = nex;
	ops[0].user_data = expect(e->rc, TB5_CQE_RECV, e->r_ep, 81, 100, 0,
				  NULL, 0);
	ops[2].user_data = UD_MAGIC | 0xfffffffffull;	/* must never show */
	ret = tb5k_post(&ctx[e->rc], ops, 3, &posted);
	batch_err = ret;
	TB5K_CHECK(ret < 0 && posted == 1, "batch-stop", "a batch whose second "
		   "operation lies outside its region: %s with posted %u, "
		   "wanted an error with posted 1", tb5k_errname(ret), posted);
	TB5K_CHECK(ret == -EINVAL || ret == -ERANGE || ret == -EOVERFLOW,
		   "batch-stop", "the bad operation failed with %s",
		   tb5k_errname(ret));
	ret = err_send(e, 81, 0, 100, 100, 0);
	TB5K_CHECK(!ret, "batch-stop", "post send: %s", tb5k_errname(ret));
	reap("batch-stop", first, nex);
	TB5K_CHECK(tb5k_verify(e->rbuf, 100, e->r_seed, 0) < 0, "batch-stop",
		   "the posted receive's data differs");
	tb5k_pass("batch-stop (%s, posted 1 of 3)", tb5k_errname(batch_err));
}

/*
 * Posts that must be refused whole: local to the receiving end. The caller
 * adds its own checks of foreign handles and says PASS.
 */
static void err_bad_post(const struct err_ends *e)
{
	static const int einval[] = { EINVAL, 0 };
	static const int range[] = { EINVAL, ERANGE, EOVERFLOW, EFAULT, 0 };
	static const int badh[] = { EINVAL, EBADF, ENOENT, 0 };
	static const int toobig[] = { EINVAL, EMSGSIZE, ERANGE, EOVERFLOW, 0 };
	struct tb5_post_op ops[TB5_UAPI_POST_MAX + 1];
	struct tb5k_ctx *r = &ctx[e->rc];
	uint32_t i;

	memset(ops, 0, sizeof(ops));
	ops[0].op = TB5_OP_RECV;
	ops[0].ep = e->r_ep;
	ops[0].mem = e->r_mem;
	ops[0].len = 10;
	expect_post_fail("bad-post", r, ops, 0, "count 0", einval);
	for (i = 1; i <= TB5_UAPI_POST_MAX; i++)
		ops[i] = ops[0];
	expect_post_fail("bad-post", r, ops, TB5_UAPI_POST_MAX + 1, "count 65",
			 einval);
	expect_post_fail("bad-post", r, NULL, 1, "a NULL ops pointer",
			 (const int[]){ EFAULT, 0 });
	ops[1] = ops[0];
	ops[1].op = 3;
	expect_post_fail("bad-post", r, &ops[1], 1, "op 3", einval);
	ops[1] = ops[0];
	ops[1].mem = e->r_mem + 1000;
	expect_post_fail("bad-post", r, &ops[1], 1, "an unknown region", badh);
	ops[1] = ops[0];
	ops[1].ep = e->r_ep + 1000;
	expect_post_fail("bad-post", r, &ops[1], 1, "an unknown endpoint", badh);
	/* The sending end's handles, where another context holds it. */
	ops[1] = ops[0];
	ops[1].mem = e->s_mem;
	ops[1].ep = e->s_ep;
	if (e->sc != e->rc && (e->s_mem != e->r_mem || e->s_ep != e->r_ep))
		TB5K_CHECK(ioctl(r->fd, TB5_IOC_POST,
				 &(struct tb5_post){ (uintptr_t)&ops[1], 1, 0 }) == -1,
			   "bad-post", "another context's handles were accepted");
	ops[1] = ops[0];
	ops[1].offset = ~0ull - 1;
	ops[1].len = 2;
	expect_post_fail("bad-post", r, &ops[1], 1, "offset + len wrapping 2^64",
			 range);
	ops[1] = ops[0];
	ops[1].offset = e->len;
	ops[1].len = 1;
	expect_post_fail("bad-post", r, &ops[1], 1, "offset at the region's end",
			 range);
	ops[1] = ops[0];
	ops[1].len = TB5_UAPI_MSG_MAX + 1;
	expect_post_fail("bad-post", r, &ops[1], 1, "len 2^40 + 1", toobig);
}

/*
 * At most TB5_UAPI_EP_OPS_MAX receives outstanding per endpoint; they stay
 * until err_close() cancels them. Then a send that the peer never grants,
 * for the close to fail.
 */
static void err_ops_limit(struct err_ends *e)
{
	int ret = 0;

	memset(e->rbuf, UNTOUCHED, e->len);
	e->first = nex;
	for (e->nrecv = 0; e->nrecv < TB5_UAPI_EP_OPS_MAX + 1; e->nrecv++) {
		ret = err_recv(e, 200 + e->nrecv, e->nrecv * 64, 64, 0,
			       -ECANCELED);
		if (ret) {
			nex--;	/* not posted: no completion */
			break;
		}
	}
	TB5K_CHECK(e->nrecv == TB5_UAPI_EP_OPS_MAX && ret == -EAGAIN,
		   "ops-limit", "receive %u was refused with %s; wanted %u "
		   "accepted, then EAGAIN", e->nrecv + 1, tb5k_errname(ret),
		   TB5_UAPI_EP_OPS_MAX);
	tb5k_pass("ops-limit (%u outstanding receives, then EAGAIN)", e->nrecv);

	ret = err_send(e, 999, 0, 100, 0, -ECONNRESET);
	TB5K_CHECK(!ret, "close", "post send: %s", tb5k_errname(ret));
}

/*
 * Close our receiving end: its receives complete -ECANCELED. The peer of
 * our sending end closes too (our receiving end in one process, the peer
 * process's in two): PEER_CLOSED -ECONNRESET, and the send it never
 * granted completes -ECONNRESET. Then the regions go.
 */
static void err_close(struct err_ends *e)
{
	struct tb5k_ctx *s = &ctx[e->sc], *r = &ctx[e->rc];
	const char *s_name = e->peer ? "our sending endpoint" :
				       "the peer's endpoint";
	char closed[32] = "close";
	struct tb5_ep_query q;
	struct tb5_cqe cqe;
	int ret;

	if (e->peer)
		snprintf(closed, sizeof(closed), "side %c closed its end",
			 e->peer);
	ret = tb5k_ep_close(r, e->r_ep);
	TB5K_CHECK(!ret, "close", "TB5_IOC_EP_CLOSE: %s", tb5k_errname(ret));
	TB5K_CHECK(tb5k_wait_event(s, e->s_ep, 0, &cqe, WAIT_MS), "close",
		   "no event on %s after %s", s_name, closed);
	TB5K_CHECK(cqe.event == TB5_EVENT_PEER_CLOSED && cqe.status == -ECONNRESET,
		   "close", "%s got %s, wanted PEER_CLOSED -ECONNRESET", s_name,
		   tb5k_cqe_str(&cqe));
	reap("close", e->first, nex);
	TB5K_CHECK(tb5k_verify_byte(e->rbuf, e->len, UNTOUCHED) < 0, "close",
		   "cancelled receives wrote into their buffer");
	ret = tb5k_ep_query(s, e->s_ep, &q);
	TB5K_CHECK(!ret && q.state == TB5_EP_STATE_PEER_CLOSED, "close",
		   "EP_QUERY of %s: %s, state %u", s_name, tb5k_errname(ret),
		   q.state);
	ret = tb5k_post1(s, TB5_OP_SEND, e->s_ep, e->s_mem, 1, 0, 1, 1);
	TB5K_CHECK(ret == -ECONNRESET, "close", "posting on a peer-closed "
		   "endpoint: %s, not ECONNRESET", tb5k_errname(ret));
	ret = tb5k_post1(r, TB5_OP_RECV, e->r_ep, e->r_mem, 1, 0, 1, 1);
	TB5K_CHECK(ret < 0, "close", "posting on a closed endpoint succeeded");
	ret = tb5k_ep_close(s, e->s_ep);
	TB5K_CHECK(!ret, "close", "TB5_IOC_EP_CLOSE of the peer-closed "
		   "endpoint: %s", tb5k_errname(ret));
	ret = tb5k_ep_close(s, e->s_ep);
	TB5K_CHECK(ret < 0, "close", "a second TB5_IOC_EP_CLOSE succeeded");
	ret = tb5k_ep_query(s, e->s_ep, &q);
	TB5K_CHECK(ret < 0, "close", "EP_QUERY of a closed handle succeeded");
	/* Nothing else may turn up: no stray completion of the batch above. */
	TB5K_CHECK(!tb5k_next(s, &cqe, 200) &&
		   (r == s || !tb5k_next(r, &cqe, 200)), "close",
		   "an unexpected completion: %s", tb5k_cqe_str(&cqe));
	if (e->peer)
		tb5k_pass("close (%u receives -ECANCELED as we closed; our send "
			  "-ECONNRESET and PEER_CLOSED as side %c closed)",
			  e->nrecv, e->peer);
	else
		tb5k_pass("close (%u receives -ECANCELED, peer PEER_CLOSED "
			  "-ECONNRESET)", e->nrecv);

	TB5K_CHECK(!tb5k_dereg(s, e->s_mem) && !tb5k_dereg(r, e->r_mem), "close",
		   "deregistering after close failed");
	tb5k_free(e->sbuf, e->len);
	tb5k_free(e->rbuf, e->len);
}

/* Pair 0: ctx[0] sends on the accepted end, ctx[1] receives and closes. */
static void phase_errors(void)
{
	struct err_ends e = {
		.sc = 0, .s_ep = conn[0].ep_l,
		.rc = 1, .r_ep = conn[0].ep_c,
		.r_seed = seed + 0x200,
	};

	err_setup(&e, seed + 0x200);
	err_messages(&e);
	err_bad_post(&e);
	tb5k_pass("bad-post");
	err_ops_limit(&e);
	err_close(&e);
}

/*
 * Post 4 KiB receives on @ep of the small queue's context until it
 * refuses: receive i has tag 300 + i and user_data 0x5000 + i. Returns how
 * many went in.
 */
static uint32_t cq_fill(const char *name, struct tb5k_ctx *small, uint32_t ep,
			uint32_t mem)
{
	uint32_t n;
	int ret = 0;

	for (n = 0; n < TB5_UAPI_CQ_MIN + 1; n++) {
		ret = tb5k_post1(small, TB5_OP_RECV, ep, mem, 300 + n,
				 (uint64_t)n * 4096, 4096, 0x5000 + n);
		if (ret)
			break;
	}
	TB5K_CHECK(ret == -ENOSPC || (n == TB5_UAPI_EP_OPS_MAX && ret == -EAGAIN),
		   name, "posting receive %u on a %u-entry queue: %s", n + 1,
		   TB5_UAPI_CQ_MIN, tb5k_errname(ret));
	tb5k_note("%s: %u receives fit a %u-entry queue, then %s", name, n,
		  TB5_UAPI_CQ_MIN, tb5k_errname(ret));
	return n;
}

/*
 * The peer filled the @n receives of cq_fill() with 8 bytes each and closed
 * on top, before anything was reaped: the queue holds them all, in order,
 * then the PEER_CLOSED. Closing @ep and @listener makes room again.
 */
static void cq_reap(const char *name, struct tb5k_ctx *small, uint32_t ep,
		    uint32_t listener, uint32_t n)
{
	struct tb5_cqe cqe;
	uint32_t i;
	int ret;

	for (i = 0; i < n; i++) {
		TB5K_CHECK(tb5k_next(small, &cqe, WAIT_MS), name,
			   "receive %u did not complete", i);
		TB5K_CHECK(cqe.op == TB5_CQE_RECV && !cqe.status &&
			   cqe.user_data == 0x5000 + i && cqe.bytes == 8 &&
			   cqe.tag == 300 + i && cqe.ep == ep, name,
			   "completion %u: %s", i, tb5k_cqe_str(&cqe));
	}
	TB5K_CHECK(tb5k_next(small, &cqe, WAIT_MS), name,
		   "no PEER_CLOSED on the small queue's endpoint");
	TB5K_CHECK(cqe.op == TB5_CQE_EVENT && cqe.event == TB5_EVENT_PEER_CLOSED &&
		   cqe.ep == ep, name, "after the receives came %s, not "
		   "PEER_CLOSED", tb5k_cqe_str(&cqe));
	/* After reaping, there is room again (for a new connection). */
	ret = tb5k_ep_close(small, ep);
	TB5K_CHECK(!ret, name, "closing the endpoint: %s", tb5k_errname(ret));
	ret = tb5k_ep_close(small, listener);
	TB5K_CHECK(!ret, name, "closing the listener: %s", tb5k_errname(ret));
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
	int ret;

	tb5k_open(&small, 1, TB5_UAPI_CQ_MIN);
	tb5k_connect(name, &small, a, 0xc0f11, &cn);
	s_mem = tb5k_reg(&small, sbuf, len);
	a_mem = tb5k_reg(a, abuf, len);
	n = cq_fill(name, &small, cn.ep_l, s_mem);
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
	cq_reap(name, &small, cn.ep_l, cn.listener, n);
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
	pthread_t th;
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

/* A thread that accepts on a well-known listener of @l for @service. */
static void acceptor_start(const char *name, struct acceptor *a,
			   struct tb5k_ctx *l, uint64_t service)
{
	memset(a, 0, sizeof(*a));
	a->l = l;
	a->listener = tb5k_listen(name, l, service, TB5_LISTEN_WELL_KNOWN,
				  NULL);
	TB5K_CHECK(!pthread_create(&a->th, NULL, acceptor_main, a), name,
		   "pthread_create failed");
}

static void acceptor_stop(const char *name, struct acceptor *a)
{
	a->stop = 1;
	pthread_join(a->th, NULL);
	TB5K_CHECK(!a->err, name, "TB5_IOC_ACCEPT: %s", tb5k_errname(a->err));
}

/*
 * Connect to @service HANDLE_ITERS times, one endpoint at a time, and check
 * each endpoint's first event.
 */
static void connect_first_events(const char *name, struct tb5k_ctx *c,
				 uint64_t service, uint16_t want_event,
				 int32_t want_status)
{
	struct tb5_connect cn;
	struct tb5_cqe cqe;
	int it, ret;

	for (it = 0; it < HANDLE_ITERS; it++) {
		memset(&cn, 0, sizeof(cn));
		cn.service = service;
		TB5K_CHECK(!ioctl(c->fd, TB5_IOC_CONNECT, &cn), name,
			   "TB5_IOC_CONNECT %d: %s", it, tb5k_errname(errno));
		/* Nothing else is open on @c: the next entry is this one's. */
		TB5K_CHECK(tb5k_next(c, &cqe, WAIT_MS), name,
			   "connect %d (endpoint %u): no event", it, cn.ep);
		TB5K_CHECK(cqe.op == TB5_CQE_EVENT && cqe.ep == cn.ep, name,
			   "connect %d: the first entry is %s, not an event of "
			   "endpoint %u (an event raised before TB5_IOC_CONNECT "
			   "returned without the endpoint's handle?)", it,
			   tb5k_cqe_str(&cqe), cn.ep);
		TB5K_CHECK(cqe.event == want_event && cqe.status == want_status,
			   name, "connect %d: %s", it, tb5k_cqe_str(&cqe));
		ret = tb5k_ep_close(c, cn.ep);
		TB5K_CHECK(!ret, name, "closing endpoint %u: %s", cn.ep,
			   tb5k_errname(ret));
		/* A PEER_CLOSED may follow the CONNECTED: it goes with it. */
		while (tb5k_next(c, &cqe, 0))
			TB5K_CHECK(cqe.ep == cn.ep, name, "connect %d: a stray %s",
				   it, tb5k_cqe_str(&cqe));
	}
}

static void phase_handles(void)
{
	const char *name = "handles";
	struct tb5k_ctx l, c;
	struct acceptor a;

	tb5k_open(&l, 0, CQ_ENTRIES);
	tb5k_open(&c, 1, CQ_ENTRIES);

	/* Refused at once: the REJECT comes back on the loop's worker. */
	connect_first_events(name, &c, HANDLE_SERVICE, TB5_EVENT_ERROR,
			     -ECONNREFUSED);
	tb5k_pass("%s.refused (%d connects, each ERROR names its endpoint)",
		  name, HANDLE_ITERS);

	/* Accepted at once: the ACCEPT races the connector's ioctl. */
	acceptor_start(name, &a, &l, HANDLE_SERVICE + 1);
	connect_first_events(name, &c, HANDLE_SERVICE + 1, TB5_EVENT_CONNECTED,
			     0);
	acceptor_stop(name, &a);
	tb5k_pass("%s.accepted (%d connects, each CONNECTED names its endpoint)",
		  name, HANDLE_ITERS);

	tb5k_close(&c);
	tb5k_close(&l);
}

/* -- two processes, one per end ----------------------------------------- */

/*
 * Side a holds one end of a link, side b the other, each in its own process
 * (on its own host, for the tb backend). The link is their only channel:
 * a listens on a well-known service (cookie 0), b connects until a is there,
 * and everything else is said over that control connection.
 */
#define SVC_CTRL	0x5e7b2000ull	/* a's well-known listener */
#define SVC_CONN	0x5e7b2100ull	/* + connection index: cookie listeners */
#define SVC_OTHER	0x5e7b2200ull	/* + i: a second context's listeners */
#define SVC_CQ		0x5e7b2300ull	/* + 2 * round + side: the small queue's */
#define CTL_PROTO	1	/* what the control messages mean */
#define CTL_VALS	8	/* the most values a barrier carries */
#define BARRIER_MS	(2 * WAIT_MS)	/* the peer may be a phase behind */

/* The connections besides the control one; who listens for each. */
enum { CN_DATA, CN_ERR_A, CN_ERR_B, CN_FIN_A, CN_FIN_B, NCONN };

static const char *const conn_name[NCONN] = {
	"data", "errors a->b", "errors b->a", "fin a", "fin b"
};
/*
 * CN_ERR_A: a sends, b receives and closes; CN_ERR_B the other way round.
 * CN_FIN_A: a closes its end when it is done, b waits for that; CN_FIN_B
 * the other way round. The listening side alternates, so that both sides
 * listen, accept and connect.
 */
static const int conn_listener[NCONN] = { 0, 1, 0, 1, 0 };

static struct {
	int me;			/* 0: side a, 1: side b */
	struct tb5k_ctl ctl;	/* the control connection */
	uint32_t ep[NCONN];
} s2;

/*
 * Open the device, meet the peer over the link, agree on the schedule,
 * and make the other connections.
 */
static void setup2(int dev, int wait_s, int quick, uint64_t big)
{
	const char *name = "connect";
	struct tb5k_ctx *c = &ctx[0];
	uint64_t mine[CTL_VALS], peer[CTL_VALS];
	uint32_t listener[NCONN] = { 0 };
	struct tb5_info info;
	int k, first_out = -1;
	int64_t ep;

	tb5k_open(c, dev, CQ_ENTRIES);
	TB5K_CHECK(!tb5k_wait_link_state(dev, "ready", (unsigned int)wait_s * 1000),
		   name, "tb5_%d is not ready after %d s", dev, wait_s);
	tb5k_get_info(c, &info);
	tb5k_note("meeting side %c on service 0x%llx (well-known)",
		  tb5k_side_ch(!s2.me), (unsigned long long)SVC_CTRL);
	tb5k_ctl_meet(name, &s2.ctl, c, s2.me, SVC_CTRL, wait_s, BARRIER_MS);

	/* The same schedule on both sides, and the right peer. */
	mine[0] = CTL_PROTO;
	mine[1] = seed;
	mine[2] = (uint64_t)quick;
	mine[3] = big;
	mine[4] = (uint64_t)s2.me;
	mine[5] = info.local_host;
	mine[6] = info.peer_host;
	tb5k_ctl_barrier("hello", &s2.ctl, mine, 7, peer);
	TB5K_CHECK(peer[0] == CTL_PROTO, name, "side %c speaks control protocol "
		   "%llu, we %u", tb5k_side_ch(!s2.me),
		   (unsigned long long)peer[0], CTL_PROTO);
	TB5K_CHECK(peer[4] == (uint64_t)!s2.me, name, "the peer is side %c too: "
		   "one side a and one side b, please", tb5k_side_ch(s2.me));
	TB5K_CHECK(peer[1] == seed && peer[2] == (uint64_t)quick &&
		   peer[3] == big, name, "side %c runs --seed 0x%llx%s --big-mib "
		   "%llu, we --seed 0x%llx%s --big-mib %llu: the schedules differ",
		   tb5k_side_ch(!s2.me), (unsigned long long)peer[1],
		   peer[2] ? " --quick" : "", (unsigned long long)(peer[3] >> 20),
		   (unsigned long long)seed, quick ? " --quick" : "",
		   (unsigned long long)(big >> 20));
	TB5K_CHECK(peer[5] == info.peer_host && peer[6] == info.local_host, name,
		   "host ids: we are 0x%llx with peer 0x%llx, side %c says it is "
		   "0x%llx with peer 0x%llx", (unsigned long long)info.local_host,
		   (unsigned long long)info.peer_host, tb5k_side_ch(!s2.me),
		   (unsigned long long)peer[5], (unsigned long long)peer[6]);

	/* The other connections: listeners with cookies, handed over. */
	for (k = 0; k < NCONN; k++) {
		mine[k] = 0;
		if (conn_listener[k] == s2.me)
			listener[k] = tb5k_listen(name, c, SVC_CONN + k, 0,
						  &mine[k]);
	}
	tb5k_ctl_barrier("listen", &s2.ctl, mine, NCONN, peer);
	for (k = 0; k < NCONN; k++) {
		if (conn_listener[k] == s2.me)
			continue;
		if (first_out < 0) {
			struct tb5_cqe cqe;

			/* A wrong cookie is refused, and leaves no connection. */
			first_out = k;
			ep = tb5k_connect_start(c, SVC_CONN + k, peer[k] ^ 1);
			TB5K_CHECK(ep > 0, name, "TB5_IOC_CONNECT: %s",
				   tb5k_errname((int)ep));
			TB5K_CHECK(tb5k_wait_event(c, (uint32_t)ep, 0, &cqe, WAIT_MS),
				   name, "no event after a connect with a wrong "
				   "cookie");
			TB5K_CHECK(cqe.event == TB5_EVENT_ERROR &&
				   cqe.status == -ECONNREFUSED, name, "a connect "
				   "with a wrong cookie got %s", tb5k_cqe_str(&cqe));
			TB5K_CHECK(!tb5k_ep_close(c, (uint32_t)ep), name,
				   "closing the refused endpoint");
		}
		ep = tb5k_connect_start(c, SVC_CONN + k, peer[k]);
		TB5K_CHECK(ep > 0, name, "TB5_IOC_CONNECT (%s): %s", conn_name[k],
			   tb5k_errname((int)ep));
		s2.ep[k] = (uint32_t)ep;
	}
	for (k = 0; k < NCONN; k++) {
		if (conn_listener[k] != s2.me)
			continue;
		s2.ep[k] = tb5k_accept_one(name, c, listener[k], WAIT_MS,
					   conn_name[k]);
		TB5K_CHECK(!tb5k_ep_close(c, listener[k]), name,
			   "closing the %s listener", conn_name[k]);
	}
	for (k = 0; k < NCONN; k++)
		if (conn_listener[k] != s2.me)
			tb5k_connect_wait(name, c, s2.ep[k], WAIT_MS,
					  conn_name[k]);
	/* Both sides hear of their accepts before anything is posted. */
	tb5k_ctl_barrier("connected", &s2.ctl, NULL, 0, NULL);
	tb5k_pass("connect (side %c on /dev/tb5_%d: the control connection, "
		  "%d more; a wrong cookie refused)", tb5k_side_ch(s2.me), dev,
		  NCONN);
}

/*
 * Flow @dir (0: a->b, 1: b->a) over the data connection, as this side sees
 * it: the sender holds the send half, the receiver the receive half.
 */
static void flow_init2(struct flow *f, int dir, const char *what)
{
	memset(f, 0, sizeof(*f));
	f->dir = dir;
	f->sctx = dir == s2.me ? 0 : -1;
	f->rctx = dir != s2.me ? 0 : -1;
	f->s_ep = f->r_ep = s2.ep[CN_DATA];
	snprintf(f->name, sizeof(f->name), "%s %c->%c", what, tb5k_side_ch(dir),
		 tb5k_side_ch(!dir));
}

static void phase2_mixed(int quick)
{
	const char *name = "mixed";
	int dev = ctx[0].index, d, k, out = s2.me, in = !s2.me;
	struct link_counts c0, grew;
	uint64_t frames, got = 0;
	struct flow f[2];

	for (d = 0; d < 2; d++) {
		flow_init2(&f[d], d, "mixed");
		/* The seeds of the one-process mode's pair 0. */
		flow_mixed(&f[d], quick, seed + 16 * (uint64_t)d);
	}
	c0 = link_counts_get(dev, NULL);
	/* Counters read: the peer's messages may come now. */
	tb5k_ctl_barrier("mixed", &s2.ctl, NULL, 0, NULL);
	xfer_flows(name, f, 2, 0);
	tb5k_pass("mixed-sizes (%d messages each way, both directions at once, "
		  "every byte verified)", f[out].nmsgs);

	/* This end's counters moved at least by what it sent and received. */
	grew = link_counts_get(dev, &c0);
	frames = flow_frames(&f[out]);
	for (k = 0; k < f[in].nmsgs; k++)
		got += f[in].msgs[k].len;
	TB5K_CHECK(grew.tx >= f[out].sent_bytes && grew.txf >= frames &&
		   grew.rx >= got, "counters", "tb5_%d sent %llu payload bytes "
		   "in >= %llu frames and received %llu, but tx_bytes grew by "
		   "%llu, tx_frames by %llu, rx_bytes by %llu", dev,
		   (unsigned long long)f[out].sent_bytes,
		   (unsigned long long)frames, (unsigned long long)got,
		   (unsigned long long)grew.tx, (unsigned long long)grew.txf,
		   (unsigned long long)grew.rx);
	tb5k_pass("counters");
	for (d = 0; d < 2; d++)
		flow_teardown(name, &f[d]);
}

static void phase2_big(uint64_t big)
{
	const char *name = "big";
	uint64_t avail = tb5k_meminfo_kib("MemAvailable") * 1024;
	uint64_t per_flow = big + 8192, margin = 96 * TB5K_MIB;
	uint64_t can, peer_can;
	int at_once, start, d;
	struct flow f[2];

	/* Both flows at once (a send and a receive here), one, or none. */
	can = 2 * per_flow + margin <= avail ? 2 : per_flow + margin <= avail;
	tb5k_ctl_barrier("big", &s2.ctl, &can, 1, &peer_can);
	at_once = (int)(can < peer_can ? can : peer_can);
	if (!at_once) {
		tb5k_skip("big", "MemAvailable is %llu MiB here (%s there); one "
			  "%llu MiB message needs %llu MiB",
			  (unsigned long long)(avail >> 20),
			  peer_can ? "enough" : "too little",
			  (unsigned long long)(big >> 20),
			  (unsigned long long)((per_flow + margin) >> 20));
		return;
	}
	tb5k_note("big: %llu MiB each way, %d of 2 flows at once (MemAvailable "
		  "%llu MiB here)", (unsigned long long)(big >> 20), at_once,
		  (unsigned long long)(avail >> 20));

	for (start = 0; start < 2; start += at_once) {
		uint64_t t0 = tb5k_now_ms();

		for (d = start; d < start + at_once; d++)
			flow_init2(&f[d], d, "big");
		big_round(name, f, start, at_once, big);
		tb5k_note("big: %s done in %llu ms", at_once == 2 ? "both flows" :
			  f[start].name, (unsigned long long)(tb5k_now_ms() - t0));
	}
	tb5k_pass("big-message (%llu MiB each way, %s, every byte verified)",
		  (unsigned long long)(big >> 20),
		  at_once == 2 ? "both at once" : "one after the other");
}

static int handle_in(uint32_t h, const uint32_t *set, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (set[i] == h)
			return 1;
	return 0;
}

/*
 * Handles of another context on this device are not valid here: a second
 * context makes regions and endpoints until their handles are none of
 * ours, and posts naming them are refused.
 */
static void foreign_handles(const char *name, uint32_t ep, uint32_t mem,
			    const uint32_t *my_mems, int nmems)
{
	static const int badh[] = { EINVAL, EBADF, ENOENT, 0 };
	uint32_t my_eps[NCONN + 1], h = 0, oep = 0;
	struct tb5_post_op op;
	struct tb5k_ctx o;
	uint8_t *buf = tb5k_alloc(16 * 4096);
	int i, tries;

	for (i = 0; i < NCONN; i++)
		my_eps[i] = s2.ep[i];
	my_eps[NCONN] = s2.ctl.ep;
	tb5k_open(&o, ctx[0].index, 256);
	for (tries = 0; tries < 16; tries++) {
		h = tb5k_reg(&o, buf + tries * 4096, 4096);
		if (!handle_in(h, my_mems, nmems))
			break;
	}
	TB5K_CHECK(tries < 16, name, "16 regions of a second context all have "
		   "handles of ours");
	for (tries = 0; tries < 64; tries++) {
		oep = tb5k_listen(name, &o, SVC_OTHER + (uint64_t)tries, 0,
				  NULL);
		if (!handle_in(oep, my_eps, NCONN + 1))
			break;
	}
	TB5K_CHECK(tries < 64, name, "64 listeners of a second context all "
		   "have handles of ours");
	memset(&op, 0, sizeof(op));
	op.op = TB5_OP_RECV;
	op.ep = ep;
	op.mem = h;
	op.len = 10;
	expect_post_fail(name, &ctx[0], &op, 1, "another context's region", badh);
	op.ep = oep;
	op.mem = mem;
	expect_post_fail(name, &ctx[0], &op, 1, "another context's endpoint",
			 badh);
	tb5k_close(&o);
	tb5k_free(buf, 16 * 4096);
}

/*
 * The error semantics, split: on CN_ERR_A side a sends and side b receives
 * (and closes at the end), on CN_ERR_B the other way round, both at once.
 * Each side checks its own half of each: its sends' and its receives'
 * completions, its receive buffer, its local refusals.
 */
static void phase2_errors(void)
{
	/* We send on s_ep (the peer closes it); we receive on r_ep and close. */
	struct err_ends e = {
		.sc = 0, .s_ep = s2.ep[s2.me ? CN_ERR_B : CN_ERR_A],
		.rc = 0, .r_ep = s2.ep[s2.me ? CN_ERR_A : CN_ERR_B],
		.r_seed = seed + 0x200 + (uint64_t)!s2.me,
		.peer = tb5k_side_ch(!s2.me),
	};
	uint32_t mems[3];

	err_setup(&e, seed + 0x200 + (uint64_t)s2.me);
	tb5k_ctl_barrier("errors", &s2.ctl, NULL, 0, NULL);
	err_messages(&e);
	err_bad_post(&e);
	mems[0] = s2.ctl.mem;
	mems[1] = e.s_mem;
	mems[2] = e.r_mem;
	foreign_handles("bad-post", e.r_ep, e.r_mem, mems, 3);
	tb5k_pass("bad-post");
	err_ops_limit(&e);
	/* Once both sides have posted their ungranted send, each closes. */
	tb5k_ctl_barrier("errors.close", &s2.ctl, NULL, 0, NULL);
	err_close(&e);
	s2.ep[CN_ERR_A] = s2.ep[CN_ERR_B] = 0;
}

/*
 * A completion queue of TB5_UAPI_CQ_MIN entries, on each side at once:
 * its context listens, the peer's main context connects; it posts receives
 * until ENOSPC (or EAGAIN at 64), says how many, the peer fills each and
 * closes, and the queue must hold them all and the PEER_CLOSED, in order,
 * without overrunning. Reaped, it takes a new connection and a receive.
 */
static void phase2_cq_full(void)
{
	const char *name = "cq-full";
	struct tb5k_ctx small, *c = &ctx[0];
	const size_t len = 4096 * 80;
	uint8_t *sbuf = tb5k_alloc(len), *cbuf = tb5k_alloc(len);
	uint64_t cookie, peer_cookie, n = 0, peer_n = 0;
	uint32_t s_mem, c_mem, sl, s_ep, i;
	struct tb5_cqe cqe;
	int64_t c_ep;
	size_t first;
	int ret = 0, round;

	tb5k_open(&small, c->index, TB5_UAPI_CQ_MIN);
	s_mem = tb5k_reg(&small, sbuf, len);
	c_mem = tb5k_reg(c, cbuf, len);
	/* Round 0 fills the queue; round 1, after reaping, connects again. */
	for (round = 0; round < 2; round++) {
		sl = tb5k_listen(name, &small, SVC_CQ + 2 * round + s2.me, 0,
				 &cookie);
		tb5k_ctl_barrier(round ? "cq-full.listen2" : "cq-full.listen",
				 &s2.ctl, &cookie, 1, &peer_cookie);
		c_ep = tb5k_connect_start(c, SVC_CQ + 2 * round + !s2.me,
					  peer_cookie);
		TB5K_CHECK(c_ep > 0, name, "TB5_IOC_CONNECT: %s",
			   tb5k_errname((int)c_ep));
		s_ep = tb5k_accept_one(name, &small, sl, WAIT_MS,
				       "the small queue");
		tb5k_connect_wait(name, c, (uint32_t)c_ep, WAIT_MS,
				  "the peer's small queue");
		if (round)
			break;

		n = cq_fill(name, &small, s_ep, s_mem);
		/* Fill each of the peer's receives; then close on top. */
		tb5k_ctl_barrier("cq-full.posted", &s2.ctl, &n, 1, &peer_n);
		TB5K_CHECK(peer_n <= TB5_UAPI_CQ_MIN, name, "side %c posted %llu "
			   "receives on a %u-entry queue", tb5k_side_ch(!s2.me),
			   (unsigned long long)peer_n, TB5_UAPI_CQ_MIN);
		first = nex;
		for (i = 0; i < peer_n; i++) {
			ret = tb5k_post1(c, TB5_OP_SEND, (uint32_t)c_ep, c_mem,
					 300 + i, 0, 8,
					 expect(0, TB5_CQE_SEND, (uint32_t)c_ep,
						300 + i, 8, 0, NULL, 0));
			TB5K_CHECK(!ret, name, "send %u: %s", i, tb5k_errname(ret));
		}
		reap(name, first, nex);
		ret = tb5k_ep_close(c, (uint32_t)c_ep);
		TB5K_CHECK(!ret, name, "closing the endpoint: %s",
			   tb5k_errname(ret));
		/* The peer has filled ours and closed: reap nothing till now. */
		tb5k_ctl_barrier("cq-full.sent", &s2.ctl, NULL, 0, NULL);
		usleep(300000);
		cq_reap(name, &small, s_ep, sl, (uint32_t)n);
	}
	/* The peer heard of our accept: closing now is no refusal. */
	tb5k_ctl_barrier("cq-full.again", &s2.ctl, NULL, 0, NULL);
	ret = tb5k_post1(&small, TB5_OP_RECV, s_ep, s_mem, 1, 0, 8, 0x7000);
	TB5K_CHECK(!ret, name, "posting after reaping: %s", tb5k_errname(ret));
	tb5k_close(&small);
	/* The peer of a context that went away: PEER_CLOSED. */
	TB5K_CHECK(tb5k_wait_event(c, (uint32_t)c_ep, 0, &cqe, WAIT_MS), name,
		   "no event after side %c closed its small queue's context",
		   tb5k_side_ch(!s2.me));
	TB5K_CHECK(cqe.event == TB5_EVENT_PEER_CLOSED, name,
		   "after side %c closed its context: %s", tb5k_side_ch(!s2.me),
		   tb5k_cqe_str(&cqe));
	ret = tb5k_ep_close(c, (uint32_t)c_ep);
	TB5K_CHECK(!ret, name, "closing the endpoint: %s", tb5k_errname(ret));
	TB5K_CHECK(!tb5k_dereg(c, c_mem), name, "deregistering failed");
	tb5k_free(sbuf, len);
	tb5k_free(cbuf, len);
	tb5k_pass("%s (%llu receives then %s; no overrun; side %c filled %llu "
		  "of ours)", name, (unsigned long long)n,
		  n == TB5_UAPI_EP_OPS_MAX ? "EAGAIN" : "ENOSPC",
		  tb5k_side_ch(!s2.me), (unsigned long long)peer_n);
}

/* phase_handles() split: each side connects, each side accepts. */
static void phase2_handles(void)
{
	const char *name = "handles";
	struct tb5k_ctx l, c;
	struct acceptor a;

	tb5k_open(&l, ctx[0].index, CQ_ENTRIES);
	tb5k_open(&c, ctx[0].index, CQ_ENTRIES);

	/* Refused at once: nobody listens on the peer's end. */
	tb5k_ctl_barrier("handles", &s2.ctl, NULL, 0, NULL);
	connect_first_events(name, &c, HANDLE_SERVICE, TB5_EVENT_ERROR,
			     -ECONNREFUSED);
	tb5k_pass("%s.refused (%d connects to side %c, each ERROR names its "
		  "endpoint)", name, HANDLE_ITERS, tb5k_side_ch(!s2.me));

	/* Accepted at once: our ACCEPTs race the peer's ioctls, and theirs ours. */
	acceptor_start(name, &a, &l, HANDLE_SERVICE + 1);
	tb5k_ctl_barrier("handles.listen", &s2.ctl, NULL, 0, NULL);
	connect_first_events(name, &c, HANDLE_SERVICE + 1, TB5_EVENT_CONNECTED,
			     0);
	/* Keep accepting until the peer is through too. */
	tb5k_ctl_barrier("handles.done", &s2.ctl, NULL, 0, NULL);
	acceptor_stop(name, &a);
	tb5k_pass("%s.accepted (%d connects to side %c, each CONNECTED names its "
		  "endpoint)", name, HANDLE_ITERS, tb5k_side_ch(!s2.me));

	tb5k_close(&c);
	tb5k_close(&l);
}

/*
 * End in step. A last barrier: the peer has made all its checks. Then each
 * side closes its own FIN endpoint and waits for the peer's: the peer
 * closes it only once its barrier is over, its last send reaped, so that
 * closing everything now fails nothing the peer still waits for (a send
 * still leaving its ring would complete -ECONNRESET).
 */
static void finish2(void)
{
	const char *name = "end";
	struct tb5k_ctx *c = &ctx[0];
	uint32_t own = s2.ep[s2.me ? CN_FIN_B : CN_FIN_A];
	uint32_t theirs = s2.ep[s2.me ? CN_FIN_A : CN_FIN_B];
	struct tb5_cqe cqe;
	int ret;

	tb5k_ctl_barrier("end", &s2.ctl, NULL, 0, NULL);
	ret = tb5k_ep_close(c, own);
	TB5K_CHECK(!ret, name, "closing our fin endpoint: %s", tb5k_errname(ret));
	TB5K_CHECK(tb5k_wait_event(c, theirs, 0, &cqe, BARRIER_MS), name,
		   "side %c did not close its fin endpoint within %d s",
		   tb5k_side_ch(!s2.me), BARRIER_MS / 1000);
	TB5K_CHECK(cqe.event == TB5_EVENT_PEER_CLOSED && cqe.status == -ECONNRESET,
		   name, "the peer's fin endpoint: %s, wanted PEER_CLOSED",
		   tb5k_cqe_str(&cqe));
	tb5k_ctl_release(name, &s2.ctl);
	tb5k_close(c);
	tb5k_pass("end (%u barriers; side %c is done too)", s2.ctl.step,
		  tb5k_side_ch(!s2.me));
}

static int run2(int me, int dev, int wait_s, int quick, uint64_t big)
{
	uint64_t lck0;

	s2.me = me;
	nctx = 1;
	lck0 = tb5k_vmlck_kib();
	tb5k_note("side %c on /dev/tb5_%d, seed 0x%llx%s", tb5k_side_ch(me),
		  dev, (unsigned long long)seed, quick ? ", quick" : "");
	setup2(dev, wait_s, quick, big);
	phase2_mixed(quick);
	if (!quick && big)
		phase2_big(big);
	if (!quick) {
		phase2_errors();
		phase2_cq_full();
	}
	phase2_handles();
	finish2();

	/*
	 * This process's pins: pinned_pages counts the peer's too where both
	 * ends are on one host (a loop pair).
	 */
	tb5k_check_vmlck_back(lck0);
	return 0;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [--quick] [--big-mib N] [--seed S] [--pairs 1|2]\n"
		"       %s --side a|b --dev /dev/tb5_N [--quick] [--big-mib N] "
		"[--seed S] [--connect-s N]\n", prog, prog);
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t big = 64 * TB5K_MIB, pinned0;
	int quick = 0, i, side = -1, dev = -1, wait_s = 120, pairs_set = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = 1;
		} else if (!strcmp(argv[i], "--big-mib") && i + 1 < argc) {
			big = strtoull(argv[++i], NULL, 0) * TB5K_MIB;
		} else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			seed = strtoull(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--pairs") && i + 1 < argc) {
			pairs_set = 1;
			npairs = atoi(argv[++i]);
			if (npairs < 1 || npairs > 2)
				npairs = 2;
		} else if (!strcmp(argv[i], "--side") && i + 1 < argc) {
			i++;
			if (!strcmp(argv[i], "a"))
				side = 0;
			else if (!strcmp(argv[i], "b"))
				side = 1;
			else
				usage(argv[0]);
		} else if (!strcmp(argv[i], "--dev") && i + 1 < argc) {
			char tail;

			if (sscanf(argv[++i], "/dev/tb5_%d%c", &dev, &tail) != 1 ||
			    dev < 0)
				usage(argv[0]);
		} else if (!strcmp(argv[i], "--connect-s") && i + 1 < argc) {
			wait_s = atoi(argv[++i]);
			if (wait_s < 1)
				usage(argv[0]);
		} else {
			usage(argv[0]);
		}
	}
	if (side >= 0 || dev >= 0) {
		/* Two processes, one per end: --side and --dev go together. */
		if (side < 0 || dev < 0 || pairs_set)
			usage(argv[0]);
		tb5k_init(side ? "xfer-b" : "xfer-a",
			  (quick ? 300 : 1500) + (unsigned int)wait_s);
		return run2(side, dev, wait_s, quick, big);
	}
	nctx = 2 * npairs;
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
	tb5k_check_pinned_back(pinned0);
	return 0;
}
