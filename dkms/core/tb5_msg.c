// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tb5_msg.c - receiver-driven messages: posting, clear-to-send grants, tag
 * matching, bursts, reassembly, truncation and cancellation.
 *
 * A posted receive is granted to the peer with CTS {seq, tag, len}. The
 * sender matches each grant to its oldest waiting send with the same tag and
 * the oldest grant to each send, so that equal tags pair up in posting
 * order on both sides. Grants arrive in the order the peer posted its
 * receives; a CTS not newer than the last grant taken is a replay, dropped
 * and counted out_of_window. A matched send goes out as bursts: a DATA header
 * {seq, offset, msg_len, burst_len} and up to burst_frames payload frames
 * that point straight into the send's memory. The receiver checks every
 * header against the grant (offset in order, sizes within the posted
 * length) before a byte is copied, so nothing lands outside posted memory.
 *
 * A send larger than its grant fails with -EMSGSIZE at once and tells the
 * receiver with ABORT, which fails the receive with the same status; no
 * payload is sent.
 *
 * A send completes when the last frame of its last burst has left the TX
 * ring (tb5_link_tx_done with the burst's cookie), because until then the
 * ring still reads its memory.
 */
#include "tb5_core_internal.h"

#define COOKIE_SLOT_BITS	8
#define COOKIE_GEN_MASK		0xffffffu

static uint64_t send_cookie(const struct tb5_ep *ep, uint32_t slot,
			    const struct tb5_send *s)
{
	return ((uint64_t)ep->id << 32) |
	       ((uint64_t)(s->gen & COOKIE_GEN_MASK) << COOKIE_SLOT_BITS) | slot;
}

/* Hand one completion to the owner; a failed operation moved no bytes. */
static void report(struct tb5_ep *ep, uint32_t op, uint64_t user_id,
		   uint64_t bytes, uint32_t tag, int32_t status)
{
	struct tb5_link *link = ep->link;
	struct tb5_completion cqe;

	tb5_os_assert_held(link->lock);
	memset(&cqe, 0, sizeof(cqe));
	cqe.user_id = user_id;
	cqe.bytes = status ? 0 : bytes;
	cqe.status = status;
	cqe.tag = tag;
	cqe.op = op;
	if (!status && op == TB5_COMPLETION_SEND)
		link->stats.tx_msgs++;
	else if (!status)
		link->stats.rx_msgs++;
	link->ops->complete(link->priv, ep->ctx, &cqe);
}

static void complete_send(struct tb5_ep *ep, struct tb5_send *s, int32_t status)
{
	tb5_os_assert_held(ep->link->lock);
	if (s->state == TB5_SEND_MATCHED)
		ep->matched--;
	s->state = TB5_SEND_FREE;
	report(ep, TB5_COMPLETION_SEND, s->user_id, s->len, s->tag, status);
}

static void complete_recv(struct tb5_ep *ep, struct tb5_recv *r, int32_t status)
{
	tb5_os_assert_held(ep->link->lock);
	r->state = TB5_RECV_FREE;
	report(ep, TB5_COMPLETION_RECV, r->user_id, r->msg_len, r->tag, status);
}

bool tb5_ep_has_tx_work(const struct tb5_ep *ep)
{
	tb5_os_assert_held(ep->link->lock);
	if (ep->need_connect || ep->need_accept || ep->need_close)
		return true;
	return ep->state == TB5_EP_CONNECTED && !ep->closed &&
	       (ep->abort_count || ep->cts_count || ep->matched);
}

/* -- matching ------------------------------------------------------------ */

/* Pair send @s with grant @g. False when the refusal cannot be queued yet. */
static bool bind(struct tb5_ep *ep, struct tb5_send *s, struct tb5_grant *g)
{
	tb5_os_assert_held(ep->link->lock);
	if (s->len > g->len) {
		struct tb5_abort *a;

		if (ep->abort_count == TB5_EP_MAX_OPS)
			return false;	/* retried once an ABORT went out */
		a = &ep->aborts[(ep->abort_head + ep->abort_count) & TB5_OPS_MASK];
		a->seq = g->seq;
		a->status = -EMSGSIZE;
		ep->abort_count++;
		g->valid = false;
		complete_send(ep, s, -EMSGSIZE);
		return true;
	}
	s->seq = g->seq;
	s->state = TB5_SEND_MATCHED;
	ep->matched++;
	g->valid = false;
	return true;
}

static struct tb5_grant *oldest_grant(struct tb5_ep *ep, uint32_t tag)
{
	struct tb5_grant *best = NULL;
	uint32_t i;

	tb5_os_assert_held(ep->link->lock);
	for (i = 0; i < TB5_EP_MAX_OPS; i++) {
		struct tb5_grant *g = &ep->grants[i];

		if (g->valid && g->tag == tag && (!best || g->order < best->order))
			best = g;
	}
	return best;
}

static struct tb5_send *oldest_send(struct tb5_ep *ep, uint8_t state,
				    bool any_tag, uint32_t tag)
{
	struct tb5_send *best = NULL;
	uint32_t i;

	tb5_os_assert_held(ep->link->lock);
	for (i = 0; i < TB5_EP_MAX_OPS; i++) {
		struct tb5_send *s = &ep->sends[i];

		if (s->state == state && (any_tag || s->tag == tag) &&
		    (!best || s->order < best->order))
			best = s;
	}
	return best;
}

/*
 * Match every waiting send that a grant can serve. Only the oldest waiting
 * send of a tag may take that tag's oldest grant; binding it can make the
 * next one eligible, hence the repeat. Runs only after a deferred refusal.
 */
static void match_all(struct tb5_ep *ep)
{
	bool changed = true;

	tb5_os_assert_held(ep->link->lock);
	while (changed) {
		uint32_t i;

		changed = false;
		for (i = 0; i < TB5_EP_MAX_OPS; i++) {
			struct tb5_send *s = &ep->sends[i];
			struct tb5_grant *g;

			if (s->state != TB5_SEND_WAITING ||
			    oldest_send(ep, TB5_SEND_WAITING, false, s->tag) != s)
				continue;
			g = oldest_grant(ep, s->tag);
			if (g && bind(ep, s, g))
				changed = true;
		}
	}
}

/* -- posting ------------------------------------------------------------- */

static int ep_post_check(const struct tb5_ep *ep)
{
	tb5_os_assert_held(ep->link->lock);
	if (ep->closed)
		return -EBADF;
	switch (ep->state) {
	case TB5_EP_CONNECTED:
		return 0;
	case TB5_EP_CONNECTING:
		return -ENOTCONN;
	case TB5_EP_PEER_CLOSED:
		return -ECONNRESET;
	case TB5_EP_ERROR:
		return ep->error;
	default:
		return -EINVAL;
	}
}

static int post_args_check(const struct tb5_ep *ep, const struct tb5_mem *mem,
			   uint64_t len)
{
	if (!ep || !mem)
		return -EINVAL;
	if (len > TB5_MSG_MAX)
		return -EMSGSIZE;
	if (mem->offset > ~(uint64_t)0 - len)
		return -EINVAL;
	return 0;
}

int tb5_post_send(struct tb5_ep *ep, const struct tb5_mem *mem, uint64_t len,
		  uint32_t tag, uint64_t user_id)
{
	struct tb5_link *link;
	struct tb5_send *s = NULL;
	struct tb5_grant *g;
	uint32_t i;
	int ret = post_args_check(ep, mem, len);

	if (ret)
		return ret;
	link = ep->link;
	tb5_os_lock(link->lock);
	ret = ep_post_check(ep);
	if (ret)
		goto out;
	for (i = 0; i < TB5_EP_MAX_OPS && !s; i++)
		if (ep->sends[i].state == TB5_SEND_FREE)
			s = &ep->sends[i];
	if (!s) {
		ret = -EAGAIN;
		goto out;
	}
	memset(s, 0, sizeof(*s));
	s->user_id = user_id;
	s->mem = *mem;
	s->len = len;
	s->tag = tag;
	s->order = ep->send_order++;
	s->gen = ++ep->send_gen & COOKIE_GEN_MASK;
	s->state = TB5_SEND_WAITING;

	/* Older waiting sends of this tag found no grant: none is left. */
	if (oldest_send(ep, TB5_SEND_WAITING, false, tag) == s) {
		g = oldest_grant(ep, tag);
		if (g)
			bind(ep, s, g);
	}
	tb5_ep_schedule(ep);
	tb5_pump(link);
out:
	tb5_link_unlock(link);
	return ret;
}

int tb5_post_recv(struct tb5_ep *ep, const struct tb5_mem *mem, uint64_t len,
		  uint32_t tag, uint64_t user_id)
{
	struct tb5_link *link;
	struct tb5_recv *r = NULL;
	uint32_t i, slot = 0;
	int ret = post_args_check(ep, mem, len);

	if (ret)
		return ret;
	link = ep->link;
	tb5_os_lock(link->lock);
	ret = ep_post_check(ep);
	if (ret)
		goto out;
	for (i = 0; i < TB5_EP_MAX_OPS && !r; i++) {
		if (ep->recvs[i].state == TB5_RECV_FREE) {
			r = &ep->recvs[i];
			slot = i;
		}
	}
	if (!r) {
		ret = -EAGAIN;
		goto out;
	}
	memset(r, 0, sizeof(*r));
	r->user_id = user_id;
	r->mem = *mem;
	r->len = len;
	r->tag = tag;
	r->seq = (ep->recv_counter++ << TB5_SEQ_SLOT_BITS) | slot;
	r->state = TB5_RECV_POSTED;
	ep->cts_queue[(ep->cts_head + ep->cts_count) & TB5_OPS_MASK] =
		(uint8_t)slot;
	ep->cts_count++;
	tb5_ep_schedule(ep);
	tb5_pump(link);
out:
	tb5_link_unlock(link);
	return ret;
}

/* -- transmit ------------------------------------------------------------ */

static int tx_abort(struct tb5_ep *ep)
{
	struct tb5_abort *a = &ep->aborts[ep->abort_head];
	struct tb5_wire_msg m;
	int ret;

	tb5_os_assert_held(ep->link->lock);
	tb5_ep_msg(ep, TB5_WIRE_ABORT, &m);
	m.u.abort.seq = a->seq;
	m.u.abort.status = tb5_wire_status_encode(TB5_WIRE_ABORT, a->status);
	ret = tb5_send_header(ep->link, &m, TB5_EOF_LAST, 0);
	if (ret)
		return ret;
	ep->abort_head = (ep->abort_head + 1) & TB5_OPS_MASK;
	ep->abort_count--;
	match_all(ep);	/* a refusal may have waited for room */
	return 1;
}

static int tx_cts(struct tb5_ep *ep)
{
	struct tb5_recv *r = &ep->recvs[ep->cts_queue[ep->cts_head]];
	struct tb5_wire_msg m;
	int ret;

	tb5_os_assert_held(ep->link->lock);
	tb5_ep_msg(ep, TB5_WIRE_CTS, &m);
	m.u.cts.seq = r->seq;
	m.u.cts.tag = r->tag;
	m.u.cts.len = r->len;
	ret = tb5_send_header(ep->link, &m, TB5_EOF_LAST, 0);
	if (ret)
		return ret;
	r->state = TB5_RECV_GRANTED;
	ep->cts_head = (ep->cts_head + 1) & TB5_OPS_MASK;
	ep->cts_count--;
	return 1;
}

/* Start the next burst of the oldest matched send. */
static int tx_burst(struct tb5_ep *ep)
{
	struct tb5_link *link = ep->link;
	struct tb5_send *s = oldest_send(ep, TB5_SEND_MATCHED, true, 0);
	uint64_t max = (uint64_t)link->cfg.burst_frames * TB5_FRAME_MAX;
	uint64_t left, cookie;
	uint32_t burst;
	struct tb5_wire_msg m;
	int ret;

	tb5_os_assert_held(link->lock);
	if (!s)
		return 0;
	left = s->len - s->issued;
	burst = (uint32_t)(left < max ? left : max);
	cookie = send_cookie(ep, (uint32_t)(s - ep->sends), s);

	tb5_ep_msg(ep, TB5_WIRE_DATA, &m);
	m.u.data.seq = s->seq;
	m.u.data.flags = burst == left ? TB5_DATA_LAST : 0;
	m.u.data.offset = s->issued;
	m.u.data.msg_len = s->len;
	m.u.data.burst_len = burst;
	/* An empty burst is one frame: the header carries the cookie. */
	ret = tb5_send_header(link, &m, burst ? TB5_EOF_MORE : TB5_EOF_LAST,
			      burst ? 0 : cookie);
	if (ret)
		return ret;

	s->inflight++;
	ep->tx_refs++;
	if (burst) {
		link->txb.active = true;
		link->txb.ep = ep;
		link->txb.next.region = s->mem.region;
		link->txb.next.offset = s->mem.offset + s->issued;
		link->txb.left = burst;
		link->txb.cookie = cookie;
	}
	s->issued += burst;
	if (s->issued == s->len) {
		s->state = TB5_SEND_DRAINING;
		ep->matched--;
	}
	return 1;
}

/* One unit of the endpoint's work: 1 queued, 0 nothing due, <0 ring full. */
int tb5_ep_tx_one(struct tb5_ep *ep)
{
	int ret = tb5_ep_tx_control(ep);

	tb5_os_assert_held(ep->link->lock);
	if (ret)
		return ret;
	if (ep->state == TB5_EP_CONNECTED && !ep->closed) {
		if (ep->abort_count)
			return tx_abort(ep);
		if (ep->cts_count)
			return tx_cts(ep);
		if (ep->matched)
			return tx_burst(ep);
	}
	if (ep->need_close)
		return tb5_ep_tx_close(ep);
	return 0;
}

void tb5_tx_done_cookie(struct tb5_link *link, uint64_t cookie)
{
	struct tb5_ep *ep = tb5_ep_lookup(link, (uint32_t)(cookie >> 32));
	uint32_t slot = cookie & ((1u << COOKIE_SLOT_BITS) - 1);
	uint32_t gen = (uint32_t)(cookie >> COOKIE_SLOT_BITS) & COOKIE_GEN_MASK;
	struct tb5_send *s;

	tb5_os_assert_held(link->lock);
	if (!ep || slot >= TB5_EP_MAX_OPS)
		return;
	s = &ep->sends[slot];
	if (s->state == TB5_SEND_FREE || s->gen != gen || !s->inflight)
		return;
	s->inflight--;
	ep->tx_refs--;
	if (s->state == TB5_SEND_DRAINING && !s->inflight)
		complete_send(ep, s, s->status);
	tb5_ep_try_release(ep);
}

/* The backend dropped the TX ring: no completion will come for it. */
void tb5_ep_drop_tx_refs(struct tb5_ep *ep, int32_t status)
{
	uint32_t i;

	tb5_os_assert_held(ep->link->lock);
	for (i = 0; i < TB5_EP_MAX_OPS; i++) {
		struct tb5_send *s = &ep->sends[i];

		if (!s->inflight)
			continue;
		s->inflight = 0;
		/* Its frames may never have reached the peer. */
		if (s->state == TB5_SEND_DRAINING)
			complete_send(ep, s, s->status ? s->status : status);
	}
	ep->tx_refs = 0;
}

/* Complete everything outstanding with @status (sends on the ring drain). */
void tb5_ep_cancel_ops(struct tb5_ep *ep, int32_t status)
{
	struct tb5_link *link = ep->link;
	uint32_t i;

	tb5_os_assert_held(link->lock);
	if (link->rxb.active && link->rxb.ep == ep) {
		link->rxb.ep = NULL;
		link->rxb.discard = true;
	}
	for (i = 0; i < TB5_EP_MAX_OPS; i++) {
		struct tb5_recv *r = &ep->recvs[i];
		struct tb5_send *s = &ep->sends[i];

		ep->grants[i].valid = false;
		if (r->state != TB5_RECV_FREE)
			complete_recv(ep, r, status);
		if (s->state == TB5_SEND_FREE)
			continue;
		if (s->inflight) {
			/* The ring still reads its memory: finish later. */
			if (s->state == TB5_SEND_MATCHED)
				ep->matched--;
			s->state = TB5_SEND_DRAINING;
			if (!s->status)
				s->status = status;
		} else {
			complete_send(ep, s, status);
		}
	}
	ep->cts_count = 0;
	ep->abort_count = 0;
}

/* -- receive ------------------------------------------------------------- */

static struct tb5_ep *rx_conn_ep(struct tb5_link *link,
				 const struct tb5_wire_msg *m)
{
	struct tb5_ep *ep = tb5_ep_lookup(link, m->dst);

	tb5_os_assert_held(link->lock);
	if (!ep || ep->closed || ep->state != TB5_EP_CONNECTED) {
		tb5_rx_drop(link, TB5_DROP_UNKNOWN_CONN);
		return NULL;
	}
	if (ep->peer_id != m->src) {
		tb5_rx_error(link, TB5_DROP_UNKNOWN_CONN,
			     "frame from the wrong peer endpoint");
		return NULL;
	}
	return ep;
}

static struct tb5_recv *granted_recv(struct tb5_ep *ep, uint32_t seq)
{
	struct tb5_recv *r = &ep->recvs[seq & TB5_OPS_MASK];

	tb5_os_assert_held(ep->link->lock);
	if (r->state != TB5_RECV_GRANTED || r->seq != seq)
		return NULL;
	return r;
}

/*
 * Is the grant @seq newer than the last one @ep took? A peer sends its CTS
 * in posting order, each counter one past the last (receives cancelled
 * before their CTS went out end the connection), so a CTS whose counter is
 * not newer repeats a grant this end already took: a replay, which must
 * not match a send to a receive that is gone. Newer is serial-number
 * arithmetic (RFC 1982) on TB5_SEQ_COUNTER_BITS, so the wrap is no replay.
 * The first grant of a connection is taken whatever its counter.
 */
static bool cts_is_newer(const struct tb5_ep *ep, uint32_t seq)
{
	uint32_t diff = ((seq >> TB5_SEQ_SLOT_BITS) - ep->cts_last) &
			TB5_SEQ_COUNTER_MASK;

	if (!ep->cts_seen)
		return true;
	return diff && diff < (1u << (TB5_SEQ_COUNTER_BITS - 1));
}

void tb5_rx_cts(struct tb5_link *link, const struct tb5_wire_msg *m)
{
	struct tb5_ep *ep = rx_conn_ep(link, m);
	struct tb5_grant *g = NULL;
	struct tb5_send *s;
	uint32_t i;

	tb5_os_assert_held(link->lock);
	if (!ep)
		return;
	if (!cts_is_newer(ep, m->u.cts.seq)) {
		tb5_rx_error(link, TB5_DROP_OUT_OF_WINDOW,
			     "CTS not newer than the last grant");
		return;
	}
	for (i = 0; i < TB5_EP_MAX_OPS && !g; i++)
		if (!ep->grants[i].valid)
			g = &ep->grants[i];
	if (!g) {
		tb5_rx_error(link, TB5_DROP_OUT_OF_WINDOW,
			     "more grants than receives");
		return;
	}
	g->seq = m->u.cts.seq;
	g->tag = m->u.cts.tag;
	g->len = m->u.cts.len;
	g->order = ep->grant_order++;
	g->valid = true;
	ep->cts_last = m->u.cts.seq >> TB5_SEQ_SLOT_BITS;
	ep->cts_seen = true;
	/* Older grants of this tag found no send, so @g goes to the oldest. */
	if (oldest_grant(ep, g->tag) == g) {
		s = oldest_send(ep, TB5_SEND_WAITING, false, g->tag);
		if (s)
			bind(ep, s, g);
	}
	tb5_ep_schedule(ep);
}

void tb5_rx_abort(struct tb5_link *link, const struct tb5_wire_msg *m)
{
	struct tb5_ep *ep = rx_conn_ep(link, m);
	struct tb5_recv *r;

	tb5_os_assert_held(link->lock);
	if (!ep)
		return;
	r = granted_recv(ep, m->u.abort.seq);
	if (!r) {
		tb5_rx_error(link, TB5_DROP_OUT_OF_WINDOW,
			     "ABORT for no granted receive");
		return;
	}
	complete_recv(ep, r, tb5_rx_status(link, m->type, m->u.abort.status));
}

/* Fail the receive the current burst fills, and drop the rest of it. */
void tb5_rxb_abandon(struct tb5_link *link, int32_t status)
{
	tb5_os_assert_held(link->lock);
	if (link->rxb.active && !link->rxb.discard && link->rxb.ep)
		complete_recv(link->rxb.ep, &link->rxb.ep->recvs[link->rxb.slot],
			      status);
	link->rxb.active = false;
	link->rxb.ep = NULL;
}

/* Is the DATA header @m a valid next step for receive @r? */
static bool data_fits(const struct tb5_recv *r, const struct tb5_wire_msg *m)
{
	uint64_t msg_len = m->u.data.msg_len;
	uint64_t offset = m->u.data.offset;
	uint64_t burst = m->u.data.burst_len;

	if (msg_len > r->len || (r->msg_len_known && msg_len != r->msg_len))
		return false;
	if (offset != r->received || offset > msg_len ||
	    burst > msg_len - offset)
		return false;
	if ((m->u.data.flags & TB5_DATA_LAST) && offset + burst != msg_len)
		return false;
	return true;
}

void tb5_rx_data(struct tb5_link *link, const struct tb5_wire_msg *m,
		 uint8_t eof)
{
	uint32_t burst = m->u.data.burst_len;
	struct tb5_ep *ep;
	struct tb5_recv *r;

	tb5_os_assert_held(link->lock);
	if ((burst != 0) != (eof == TB5_EOF_MORE)) {
		tb5_rx_error(link, TB5_DROP_MALFORMED,
			     "DATA end marker disagrees with its length");
		return;
	}
	/* Until the header checks out, its payload frames are dropped. */
	link->rxb.active = burst != 0;
	link->rxb.discard = true;
	link->rxb.ep = NULL;
	link->rxb.left = burst;
	link->rxb.offset = 0;

	ep = rx_conn_ep(link, m);
	if (!ep)
		return;
	r = granted_recv(ep, m->u.data.seq);
	if (!r) {
		tb5_rx_error(link, TB5_DROP_OUT_OF_WINDOW,
			     "DATA for no granted receive");
		return;
	}
	if (m->u.data.offset != r->received &&
	    m->u.data.offset <= m->u.data.msg_len &&
	    m->u.data.msg_len <= r->len &&
	    (!r->msg_len_known || m->u.data.msg_len == r->msg_len)) {
		/* In the window, but not where the last burst ended. */
		tb5_rx_error(link, TB5_DROP_SEQ_GAP, "DATA skips or repeats bytes");
		complete_recv(ep, r, -EBADMSG);
		return;
	}
	if (!data_fits(r, m)) {
		tb5_rx_error(link, TB5_DROP_OUT_OF_WINDOW,
			     "DATA outside the granted receive");
		complete_recv(ep, r, -EPROTO);
		return;
	}
	r->msg_len = m->u.data.msg_len;
	r->msg_len_known = true;
	if (!burst) {
		if (m->u.data.flags & TB5_DATA_LAST)
			complete_recv(ep, r, 0);
		return;
	}
	link->rxb.discard = false;
	link->rxb.ep = ep;
	link->rxb.slot = (uint32_t)(r - ep->recvs);
	link->rxb.offset = m->u.data.offset;
	link->rxb.last = m->u.data.flags & TB5_DATA_LAST;
}

void tb5_rx_payload(struct tb5_link *link, uint8_t eof, const void *data,
		    uint32_t len)
{
	uint64_t left = link->rxb.left;
	uint32_t expect = left < TB5_FRAME_MAX ? (uint32_t)left : TB5_FRAME_MAX;
	bool last = left == expect;

	tb5_os_assert_held(link->lock);
	if (len != expect) {
		tb5_rx_error(link, TB5_DROP_MALFORMED,
			     "payload frame of the wrong size");
		tb5_rxb_abandon(link, -EPROTO);
		return;
	}
	if ((eof == TB5_EOF_LAST) != last) {
		/* Full-sized, but the burst ends early: frames went missing. */
		tb5_rx_error(link, TB5_DROP_SEQ_GAP,
			     "payload frame ends its burst early or late");
		tb5_rxb_abandon(link, -EBADMSG);
		return;
	}
	if (!link->rxb.discard) {
		struct tb5_ep *ep = link->rxb.ep;
		struct tb5_recv *r = &ep->recvs[link->rxb.slot];
		struct tb5_mem dst;
		int ret;

		/* data_fits() bounded offset + left by the posted length. */
		dst.region = r->mem.region;
		dst.offset = r->mem.offset + link->rxb.offset;
		ret = link->ops->copy_to(link->priv, &dst, data, len);
		if (ret) {
			complete_recv(ep, r, tb5_sanitize_status(ret, -EFAULT));
			link->rxb.discard = true;
			link->rxb.ep = NULL;
		} else {
			r->received += len;
		}
	}
	link->rxb.offset += len;
	link->rxb.left -= len;
	if (link->rxb.left)
		return;
	link->rxb.active = false;
	if (!link->rxb.discard && link->rxb.last)
		complete_recv(link->rxb.ep, &link->rxb.ep->recvs[link->rxb.slot], 0);
	link->rxb.ep = NULL;
}
