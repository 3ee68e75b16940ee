// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tb5_link.c - a link end: lifecycle, the hello exchange, receive dispatch
 * and the transmit scheduler.
 *
 * The transmit scheduler (tb5_pump) runs whenever something may have become
 * sendable: after a post, a received frame, a TX completion or a kick. It
 * queues frames on the TX ring until the ring refuses (-ENOSPC: the ring is
 * full, which is how end-to-end flow control reaches the core) or nothing is
 * left. Order of service: the payload frames of the burst in progress (a
 * burst is never interleaved with other frames on the wire), then the hello,
 * then link-level replies, then endpoints round-robin, one unit of work
 * (a control frame or one burst) each.
 */
#include "tb5_core_internal.h"

static bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

int32_t tb5_sanitize_status(int32_t status, int32_t fallback)
{
	/* Only a negative errno may reach the owner. */
	if (status < 0 && status >= -4095)
		return status;
	return fallback;
}

/*
 * The errno a received REJECT, CLOSE or ABORT fails its operation with: the
 * one its status code stands for, or -EPROTO for a code its type does not
 * carry, the frame then counted as malformed (it is still acted upon: the
 * peer did refuse, close or abort, only its reason is unreadable).
 */
int32_t tb5_rx_status(struct tb5_link *link, uint8_t type, int32_t code)
{
	int32_t err = tb5_wire_status_decode(type, code);

	tb5_os_assert_held(link->lock);
	if (err)
		return err;
	tb5_rx_error(link, TB5_DROP_MALFORMED, "unknown status");
	return -EPROTO;
}

/* A frame refused as out of protocol: rx_errors and its kind. */
void tb5_rx_error(struct tb5_link *link, enum tb5_drop_kind kind,
		  const char *what)
{
	tb5_os_assert_held(link->lock);
	link->stats.rx_errors++;
	link->stats.drops[kind]++;
	tb5_os_log(TB5_LOG_DEBUG, "link %llx: dropped frame: %s",
		   (unsigned long long)link->cfg.host_id, what);
}

/* A frame dropped without blame (its endpoint is gone): rx_dropped. */
void tb5_rx_drop(struct tb5_link *link, enum tb5_drop_kind kind)
{
	tb5_os_assert_held(link->lock);
	link->stats.rx_dropped++;
	link->stats.drops[kind]++;
}

/* Free what the graveyard @dead holds. */
static void reap(struct tb5_list *dead)
{
	while (!tb5_list_empty(dead)) {
		struct tb5_list *n = dead->next;

		tb5_list_del(n);
		tb5_os_free((char *)n - offsetof(struct tb5_ep, work));
	}
}

/* Drop the link's lock, then free the endpoints released under it. */
void tb5_link_unlock(struct tb5_link *link)
{
	struct tb5_list dead;

	tb5_os_assert_held(link->lock);
	tb5_list_init(&dead);
	if (!tb5_list_empty(&link->graveyard)) {
		dead.next = link->graveyard.next;
		dead.prev = link->graveyard.prev;
		dead.next->prev = &dead;
		dead.prev->next = &dead;
		tb5_list_init(&link->graveyard);
	}
	tb5_os_unlock(link->lock);
	reap(&dead);
}

int tb5_link_create(const struct tb5_link_config *cfg,
		    const struct tb5_link_ops *ops, void *priv,
		    struct tb5_link **out)
{
	struct tb5_link *link;
	uint32_t max_eps;

	if (!cfg || !ops || !out || !ops->tx || !ops->copy_to ||
	    !ops->complete || !ops->event)
		return -EINVAL;
	if (!is_pow2(cfg->ring_size) || cfg->ring_size < TB5_RING_SIZE_MIN ||
	    cfg->ring_size > TB5_RING_SIZE_MAX)
		return -EINVAL;
	if (cfg->burst_frames > TB5_BURST_FRAMES_MAX ||
	    cfg->max_endpoints > TB5_ENDPOINTS_MAX)
		return -EINVAL;
	max_eps = cfg->max_endpoints ? cfg->max_endpoints : TB5_ENDPOINTS_DEFAULT;

	link = tb5_os_zalloc(sizeof(*link));
	if (!link)
		return -ENOMEM;
	link->cfg = *cfg;
	link->cfg.max_endpoints = max_eps;
	if (!link->cfg.burst_frames)
		link->cfg.burst_frames = TB5_BURST_FRAMES_DEFAULT;
	link->ops = ops;
	link->priv = priv;
	link->state = TB5_LINK_DOWN;
	link->epoch = tb5_os_random_u64() | 1;
	tb5_list_init(&link->work);
	tb5_list_init(&link->graveyard);

	link->eps = tb5_os_zalloc(sizeof(*link->eps) * ((size_t)max_eps + 1));
	if (!link->eps)
		goto err_free_link;
	link->ep_gen = tb5_os_zalloc(sizeof(*link->ep_gen) * ((size_t)max_eps + 1));
	if (!link->ep_gen)
		goto err_free_eps;
	link->lock = tb5_os_lock_create();
	if (!link->lock)
		goto err_free_gen;

	*out = link;
	return 0;

err_free_gen:
	tb5_os_free(link->ep_gen);
err_free_eps:
	tb5_os_free(link->eps);
err_free_link:
	tb5_os_free(link);
	return -ENOMEM;
}

/* Our endpoint @id closed its connection to the peer's @peer. */
void tb5_closed_remember(struct tb5_link *link, uint32_t id, uint32_t peer)
{
	tb5_os_assert_held(link->lock);
	link->closed[link->closed_next].id = id;
	link->closed[link->closed_next].peer = peer;
	link->closed_next = (link->closed_next + 1) % TB5_CLOSED_MAX;
}

/*
 * Whether our endpoint @id closed its connection to the peer's @peer
 * lately; if so, forgotten now: a CLOSE crosses ours once.
 */
bool tb5_closed_forget(struct tb5_link *link, uint32_t id, uint32_t peer)
{
	uint32_t i;

	tb5_os_assert_held(link->lock);
	if (!id || !peer)
		return false;
	for (i = 0; i < TB5_CLOSED_MAX; i++) {
		if (link->closed[i].id == id && link->closed[i].peer == peer) {
			link->closed[i].id = 0;
			link->closed[i].peer = 0;
			return true;
		}
	}
	return false;
}

/* Forget every frame on the TX ring: the backend discarded them. */
static void link_drop_tx(struct tb5_link *link, int32_t status)
{
	uint32_t i;

	tb5_os_assert_held(link->lock);
	link->txb.active = false;
	link->txb.ep = NULL;
	link->rxb.active = false;
	link->rxb.ep = NULL;
	link->reply_count = 0;
	/* The peer's endpoints are gone with the link: nothing can cross. */
	memset(link->closed, 0, sizeof(link->closed));
	for (i = 1; i <= link->cfg.max_endpoints; i++)
		if (link->eps[i])
			tb5_ep_drop_tx_refs(link->eps[i], status);
}

void tb5_link_destroy(struct tb5_link *link)
{
	uint32_t i;

	if (!link)
		return;
	tb5_os_lock(link->lock);
	link->state = TB5_LINK_DOWN;
	link_drop_tx(link, -ESHUTDOWN);
	for (i = 1; i <= link->cfg.max_endpoints; i++)
		if (link->eps[i])
			tb5_ep_release_now(link->eps[i], -ESHUTDOWN);
	tb5_link_unlock(link);	/* frees the endpoints */

	tb5_os_lock_destroy(link->lock);
	tb5_os_free(link->ep_gen);
	tb5_os_free(link->eps);
	tb5_os_free(link);
}

void tb5_link_up(struct tb5_link *link)
{
	tb5_os_lock(link->lock);
	if (link->state == TB5_LINK_DOWN) {
		link->state = TB5_LINK_UP;
		link->need_hello = true;
		tb5_pump(link);
	}
	tb5_link_unlock(link);
}

/* Fail every connection; listeners stay and keep their service. */
static void link_reset_connections(struct tb5_link *link, int32_t status)
{
	uint32_t i;

	tb5_os_assert_held(link->lock);
	for (i = 1; i <= link->cfg.max_endpoints; i++) {
		struct tb5_ep *ep = link->eps[i];

		if (!ep)
			continue;
		if (ep->state == TB5_EP_LISTENING) {
			ep->backlog_count = 0;
			continue;
		}
		if (ep->state == TB5_EP_CONNECTING ||
		    ep->state == TB5_EP_CONNECTED)
			tb5_ep_fail(ep, TB5_EP_ERROR, status);
		/* fail() may have released a closed endpoint. */
		if (link->eps[i] == ep)
			tb5_ep_try_release(ep);
	}
}

void tb5_link_down(struct tb5_link *link, int reason)
{
	int32_t status = tb5_sanitize_status(reason, -ENOLINK);

	tb5_os_lock(link->lock);
	if (link->state != TB5_LINK_DOWN) {
		link->state = TB5_LINK_DOWN;
		link->need_hello = false;
		link->peer_host = 0;
		link->peer_epoch = 0;
		link->stats.peer_resets++;
		link_drop_tx(link, status);
		link_reset_connections(link, status);
	}
	tb5_link_unlock(link);
}

enum tb5_link_state tb5_link_state(struct tb5_link *link)
{
	enum tb5_link_state st;

	tb5_os_lock(link->lock);
	st = (enum tb5_link_state)link->state;
	tb5_link_unlock(link);
	return st;
}

int tb5_link_peer(struct tb5_link *link, uint64_t *host_id)
{
	int ret = -ENOTCONN;

	tb5_os_lock(link->lock);
	if (link->state == TB5_LINK_READY) {
		*host_id = link->peer_host;
		ret = 0;
	}
	tb5_link_unlock(link);
	return ret;
}

void tb5_link_get_stats(struct tb5_link *link, struct tb5_link_stats *st)
{
	tb5_os_lock(link->lock);
	*st = link->stats;
	tb5_link_unlock(link);
}

struct tb5_ep *tb5_ep_lookup(struct tb5_link *link, uint32_t id)
{
	uint32_t index = TB5_EP_INDEX(id);
	struct tb5_ep *ep;

	tb5_os_assert_held(link->lock);
	if (!index || index > link->cfg.max_endpoints)
		return NULL;
	ep = link->eps[index];
	if (!ep || ep->id != id)
		return NULL;
	return ep;
}

void tb5_ep_schedule(struct tb5_ep *ep)
{
	tb5_os_assert_held(ep->link->lock);
	if (!ep->on_work && tb5_ep_has_tx_work(ep)) {
		tb5_list_add_tail(&ep->work, &ep->link->work);
		ep->on_work = true;
	}
}

static int link_tx(struct tb5_link *link, const struct tb5_tx_frame *f)
{
	int ret;

	tb5_os_assert_held(link->lock);
	ret = link->ops->tx(link->priv, f);
	if (ret) {
		/* Anything but a full ring is the backend's trouble: stall too. */
		link->stats.tx_stalls++;
		if (ret != -ENOSPC && ret != -ENOLINK)
			tb5_os_log(TB5_LOG_WARN, "tx refused: %d", ret);
		return ret;
	}
	link->stats.tx_frames++;
	link->stats.tx_bytes += f->len;
	return 0;
}

int tb5_send_header(struct tb5_link *link, const struct tb5_wire_msg *msg,
		    uint8_t eof, uint64_t cookie)
{
	struct tb5_tx_frame f;

	tb5_os_assert_held(link->lock);
	memset(&f, 0, sizeof(f));
	f.sof = TB5_SOF_HEADER;
	f.eof = eof;
	f.len = (uint16_t)tb5_wire_encode(msg, link->hdr);
	f.header = link->hdr;
	f.cookie = cookie;
	return link_tx(link, &f);
}

/* Queue the payload frames of the burst in progress. */
int tb5_txb_continue(struct tb5_link *link)
{
	struct tb5_tx_frame f;
	int ret;

	tb5_os_assert_held(link->lock);
	memset(&f, 0, sizeof(f));
	f.sof = TB5_SOF_PAYLOAD;
	while (link->txb.left) {
		uint32_t len = link->txb.left < TB5_FRAME_MAX ?
			       (uint32_t)link->txb.left : TB5_FRAME_MAX;
		bool last = link->txb.left == len;

		f.len = (uint16_t)len;
		f.eof = last ? TB5_EOF_LAST : TB5_EOF_MORE;
		f.payload = link->txb.next;
		f.cookie = last ? link->txb.cookie : 0;
		ret = link_tx(link, &f);
		if (ret)
			return ret;
		link->txb.next.offset += len;
		link->txb.left -= len;
	}
	link->txb.active = false;
	link->txb.ep = NULL;
	return 0;
}

void tb5_queue_reply(struct tb5_link *link, uint8_t type, uint32_t dst,
		     uint32_t src, uint64_t cookie, int32_t status)
{
	struct tb5_reply *r;

	tb5_os_assert_held(link->lock);
	if (link->reply_count == TB5_REPLIES_MAX) {
		/* A peer that floods us with requests loses some answers. */
		link->stats.rx_errors++;
		link->stats.drops[TB5_DROP_OVERFLOW]++;
		return;
	}
	r = &link->replies[(link->reply_head + link->reply_count) %
			   TB5_REPLIES_MAX];
	r->type = type;
	r->dst = dst;
	r->src = src;
	r->cookie = cookie;
	r->status = status;
	link->reply_count++;
}

static int send_hello(struct tb5_link *link)
{
	struct tb5_wire_msg m;

	tb5_os_assert_held(link->lock);
	memset(&m, 0, sizeof(m));
	m.type = TB5_WIRE_HELLO;
	m.u.hello.host_id = link->cfg.host_id;
	m.u.hello.epoch = link->epoch;
	m.u.hello.ring_size = link->cfg.ring_size;
	return tb5_send_header(link, &m, TB5_EOF_LAST, 0);
}

static int send_reply(struct tb5_link *link, const struct tb5_reply *r)
{
	struct tb5_wire_msg m;

	tb5_os_assert_held(link->lock);
	memset(&m, 0, sizeof(m));
	m.type = r->type;
	m.dst = r->dst;
	m.src = r->src;
	if (r->type == TB5_WIRE_REJECT) {
		m.u.reject.conn_cookie = r->cookie;
		m.u.reject.status = tb5_wire_status_encode(r->type, r->status);
	} else {
		m.u.close.status = tb5_wire_status_encode(r->type, r->status);
	}
	return tb5_send_header(link, &m, TB5_EOF_LAST, 0);
}

void tb5_pump(struct tb5_link *link)
{
	tb5_os_assert_held(link->lock);
	if (link->state == TB5_LINK_DOWN)
		return;
	for (;;) {
		struct tb5_ep *ep;
		int ret;

		if (link->txb.active) {
			if (tb5_txb_continue(link))
				return;
			continue;
		}
		if (link->need_hello) {
			if (send_hello(link))
				return;
			link->need_hello = false;
			continue;
		}
		if (link->reply_count) {
			if (send_reply(link, &link->replies[link->reply_head]))
				return;
			link->reply_head = (link->reply_head + 1) % TB5_REPLIES_MAX;
			link->reply_count--;
			continue;
		}
		if (tb5_list_empty(&link->work))
			return;

		ep = (struct tb5_ep *)((char *)link->work.next -
				       offsetof(struct tb5_ep, work));
		ret = tb5_ep_tx_one(ep);
		if (ret < 0)
			return;
		tb5_list_del(&ep->work);
		ep->on_work = false;
		/*
		 * Round robin: an endpoint with more to send goes last. One
		 * that had nothing due stays off the list until its next post
		 * or frame, so a miscount can never spin here.
		 */
		if (ret > 0)
			tb5_ep_schedule(ep);
		tb5_ep_try_release(ep);
	}
}

/* The peer's hello: learn who is on the other end, or that it restarted. */
static void rx_hello(struct tb5_link *link, const struct tb5_wire_msg *m)
{
	bool known = link->state == TB5_LINK_READY;

	tb5_os_assert_held(link->lock);
	if (known && m->u.hello.host_id == link->peer_host &&
	    m->u.hello.epoch == link->peer_epoch)
		return;
	if (known) {
		/* Same cable, new incarnation: every connection is stale. */
		tb5_os_log(TB5_LOG_INFO, "peer %llx restarted",
			   (unsigned long long)m->u.hello.host_id);
		link->stats.peer_resets++;
		link_reset_connections(link, -ECONNRESET);
	}
	link->peer_host = m->u.hello.host_id;
	link->peer_epoch = m->u.hello.epoch;
	link->state = TB5_LINK_READY;
	/* Answer, so that a peer that came up after our hello learns us. */
	link->need_hello = true;
}

static void rx_header(struct tb5_link *link, uint8_t eof, const void *data,
		      uint32_t len)
{
	struct tb5_wire_msg m;

	tb5_os_assert_held(link->lock);
	if (tb5_wire_decode(data, len, &m)) {
		tb5_rx_error(link, TB5_DROP_MALFORMED, "bad header");
		return;
	}
	if (m.type == TB5_WIRE_DATA) {
		tb5_rx_data(link, &m, eof);
		return;
	}
	if (eof != TB5_EOF_LAST) {
		tb5_rx_error(link, TB5_DROP_MALFORMED,
			     "control frame not marked last");
		return;
	}
	switch (m.type) {
	case TB5_WIRE_HELLO:
		rx_hello(link, &m);
		break;
	case TB5_WIRE_CONNECT:
		tb5_rx_connect(link, &m);
		break;
	case TB5_WIRE_ACCEPT:
		tb5_rx_accept(link, &m);
		break;
	case TB5_WIRE_REJECT:
		tb5_rx_reject(link, &m);
		break;
	case TB5_WIRE_CLOSE:
		tb5_rx_close(link, &m);
		break;
	case TB5_WIRE_CTS:
		tb5_rx_cts(link, &m);
		break;
	case TB5_WIRE_ABORT:
		tb5_rx_abort(link, &m);
		break;
	}
}

void tb5_link_rx(struct tb5_link *link, uint8_t sof, uint8_t eof,
		 const void *data, uint32_t len)
{
	tb5_os_lock(link->lock);
	link->stats.rx_frames++;
	link->stats.rx_bytes += len;
	if (link->state == TB5_LINK_DOWN) {
		tb5_rx_drop(link, TB5_DROP_UNKNOWN_CONN);
		goto out;
	}
	if (!data || !len || len > TB5_FRAME_MAX ||
	    (eof != TB5_EOF_MORE && eof != TB5_EOF_LAST)) {
		tb5_rx_error(link, TB5_DROP_MALFORMED, "bad descriptor");
		goto out;
	}
	if (sof == TB5_SOF_PAYLOAD) {
		if (link->rxb.active)
			tb5_rx_payload(link, eof, data, len);
		else
			tb5_rx_error(link, TB5_DROP_SEQ_GAP,
				     "payload outside a burst");
		goto out;
	}
	if (link->rxb.active) {
		/* A header where payload was due: the burst is broken. */
		tb5_rx_error(link, TB5_DROP_SEQ_GAP, "burst cut short");
		tb5_rxb_abandon(link, -EBADMSG);
	}
	if (sof == TB5_SOF_HEADER)
		rx_header(link, eof, data, len);
	else
		tb5_rx_error(link, TB5_DROP_MALFORMED,
			     "unknown start-of-frame marker");
out:
	tb5_pump(link);
	tb5_link_unlock(link);
}

void tb5_link_tx_done(struct tb5_link *link, uint64_t cookie)
{
	tb5_os_lock(link->lock);
	if (cookie && link->state != TB5_LINK_DOWN)
		tb5_tx_done_cookie(link, cookie);
	tb5_pump(link);
	tb5_link_unlock(link);
}

void tb5_link_tx_done_many(struct tb5_link *link, const uint64_t *cookies,
			   uint32_t n)
{
	uint32_t i;

	tb5_os_lock(link->lock);
	for (i = 0; i < n && link->state != TB5_LINK_DOWN; i++)
		if (cookies[i])
			tb5_tx_done_cookie(link, cookies[i]);
	tb5_pump(link);
	tb5_link_unlock(link);
}

void tb5_link_rx_refused(struct tb5_link *link, enum tb5_drop_kind kind,
			 uint32_t frames)
{
	if ((unsigned int)kind >= TB5_DROP_KINDS)
		kind = TB5_DROP_MALFORMED;
	tb5_os_lock(link->lock);
	link->stats.rx_errors += frames;
	link->stats.drops[kind] += frames;
	tb5_link_unlock(link);
}

void tb5_link_kick(struct tb5_link *link)
{
	tb5_os_lock(link->lock);
	tb5_pump(link);
	tb5_link_unlock(link);
}
