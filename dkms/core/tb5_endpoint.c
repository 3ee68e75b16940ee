// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tb5_endpoint.c - endpoints: ids, listen, connect, accept, close, and the
 * handshake frames (CONNECT, ACCEPT, REJECT, CLOSE).
 *
 * Handshake:
 *   connector                                   listener
 *     CONNECT {service, listen_cookie, conn_cookie}  ->
 *                        (cookie checked; queued in the backlog; the owner
 *                         is told TB5_EV_INCOMING and calls tb5_accept)
 *     <- ACCEPT {conn_cookie}, src = the new endpoint
 *   or
 *     <- REJECT {conn_cookie, status}
 *
 * An ACCEPT that finds no connecting endpoint (the connector gave up) is
 * answered with CLOSE, so the accepted endpoint does not wait forever.
 */
#include "tb5_core_internal.h"

static struct tb5_ep *ep_alloc(void *ctx)
{
	struct tb5_ep *ep = tb5_os_zalloc(sizeof(*ep));

	if (ep) {
		ep->ctx = ctx;
		tb5_list_init(&ep->work);
	}
	return ep;
}

/* Give @ep an id on @link. Called with the lock held. */
int tb5_ep_install(struct tb5_link *link, struct tb5_ep *ep)
{
	uint32_t max = link->cfg.max_endpoints;
	uint32_t i, index;

	tb5_os_assert_held(link->lock);
	for (i = 0; i < max; i++) {
		index = (link->ep_hint + i) % max + 1;
		if (!link->eps[index])
			break;
	}
	if (i == max)
		return -ENFILE;
	link->ep_hint = index % max;
	link->ep_gen[index]++;
	if (!link->ep_gen[index])
		link->ep_gen[index] = 1;	/* id 0 means "no endpoint" */
	ep->id = ((uint32_t)link->ep_gen[index] << 16) | index;
	ep->link = link;
	link->eps[index] = ep;
	return 0;
}

static void ep_uninstall(struct tb5_ep *ep)
{
	struct tb5_link *link = ep->link;

	tb5_os_assert_held(link->lock);
	if (ep->on_work) {
		tb5_list_del(&ep->work);
		ep->on_work = false;
	}
	if (link->rxb.ep == ep) {
		link->rxb.ep = NULL;
		link->rxb.discard = true;
	}
	link->eps[TB5_EP_INDEX(ep->id)] = NULL;
}

/* Free a closed endpoint once nothing on the rings refers to it. */
void tb5_ep_try_release(struct tb5_ep *ep)
{
	struct tb5_link *link = ep->link;

	tb5_os_assert_held(link->lock);
	if (!ep->closed || ep->tx_refs || ep->need_close || ep->need_accept ||
	    (link->txb.active && link->txb.ep == ep))
		return;
	ep_uninstall(ep);
	link->ops->event(link->priv, ep->ctx, TB5_EV_RELEASED, 0);
	tb5_list_add_tail(&ep->work, &link->graveyard);
}

/* Tear down at once (link destruction): complete everything, free. */
void tb5_ep_release_now(struct tb5_ep *ep, int32_t status)
{
	struct tb5_link *link = ep->link;

	tb5_os_assert_held(link->lock);
	tb5_ep_cancel_ops(ep, status);
	ep->tx_refs = 0;
	ep->need_close = false;
	ep->need_accept = false;
	ep_uninstall(ep);
	link->ops->event(link->priv, ep->ctx, TB5_EV_RELEASED, 0);
	tb5_list_add_tail(&ep->work, &link->graveyard);
}

/*
 * The connection ended (@state is TB5_EP_PEER_CLOSED or TB5_EP_ERROR):
 * complete what is outstanding with @status and tell the owner, unless the
 * owner already closed the endpoint.
 */
void tb5_ep_fail(struct tb5_ep *ep, uint8_t state, int32_t status)
{
	struct tb5_link *link = ep->link;

	tb5_os_assert_held(link->lock);
	ep->state = state;
	ep->error = status;
	ep->need_connect = false;
	ep->need_accept = false;
	ep->need_close = false;
	tb5_ep_cancel_ops(ep, status);
	if (!ep->closed)
		link->ops->event(link->priv, ep->ctx,
				 state == TB5_EP_PEER_CLOSED ?
				 TB5_EV_PEER_CLOSED : TB5_EV_ERROR, status);
}

static struct tb5_ep *find_listener(struct tb5_link *link, uint64_t service)
{
	uint32_t i;

	tb5_os_assert_held(link->lock);
	for (i = 1; i <= link->cfg.max_endpoints; i++) {
		struct tb5_ep *ep = link->eps[i];

		if (ep && !ep->closed && ep->state == TB5_EP_LISTENING &&
		    ep->service == service)
			return ep;
	}
	return NULL;
}

int tb5_listen(struct tb5_link *link, uint64_t service, uint32_t flags,
	       void *ctx, struct tb5_ep **out)
{
	struct tb5_ep *ep;
	int ret;

	if (!link || !out || (flags & ~TB5_LF_WELL_KNOWN))
		return -EINVAL;
	ep = ep_alloc(ctx);
	if (!ep)
		return -ENOMEM;
	ep->state = TB5_EP_LISTENING;
	ep->service = service;
	ep->listen_cookie = 0;
	while (!(flags & TB5_LF_WELL_KNOWN) && !ep->listen_cookie)
		ep->listen_cookie = tb5_os_random_u64();

	tb5_os_lock(link->lock);
	ret = find_listener(link, service) ? -EADDRINUSE :
					     tb5_ep_install(link, ep);
	tb5_link_unlock(link);
	if (ret) {
		tb5_os_free(ep);
		return ret;
	}
	*out = ep;
	return 0;
}

int tb5_listen_addr(struct tb5_ep *listener, struct tb5_addr *addr)
{
	int ret = -EINVAL;

	if (!listener || !addr)
		return -EINVAL;
	tb5_os_lock(listener->link->lock);
	if (listener->state == TB5_EP_LISTENING) {
		addr->service = listener->service;
		addr->cookie = listener->listen_cookie;
		ret = 0;
	}
	tb5_link_unlock(listener->link);
	return ret;
}

int tb5_connect(struct tb5_link *link, const struct tb5_addr *addr, void *ctx,
		struct tb5_ep **out)
{
	struct tb5_ep *ep;
	int ret = 0;

	if (!link || !addr || !out)
		return -EINVAL;
	ep = ep_alloc(ctx);
	if (!ep)
		return -ENOMEM;
	ep->state = TB5_EP_CONNECTING;
	ep->service = addr->service;
	ep->listen_cookie = addr->cookie;
	ep->conn_cookie = tb5_os_random_u64();
	ep->need_connect = true;

	tb5_os_lock(link->lock);
	if (link->state == TB5_LINK_DOWN)
		ret = -ENOLINK;
	else
		ret = tb5_ep_install(link, ep);
	if (!ret) {
		tb5_ep_schedule(ep);
		tb5_pump(link);
	}
	tb5_link_unlock(link);
	if (ret) {
		tb5_os_free(ep);
		return ret;
	}
	*out = ep;
	return 0;
}

int tb5_accept(struct tb5_ep *listener, void *ctx, struct tb5_ep **out)
{
	struct tb5_link *link;
	struct tb5_pending_conn *pc;
	struct tb5_ep *ep;
	int ret;

	if (!listener || !out)
		return -EINVAL;
	link = listener->link;
	/* Allocate before the lock; give it back if nothing waits. */
	ep = ep_alloc(ctx);
	if (!ep)
		return -ENOMEM;

	tb5_os_lock(link->lock);
	if (listener->state != TB5_EP_LISTENING) {
		ret = -EINVAL;
	} else if (!listener->backlog_count) {
		ret = -EAGAIN;
	} else {
		ret = tb5_ep_install(link, ep);
		/* Out of ids: the connection stays queued for a later try. */
	}
	if (!ret) {
		pc = &listener->backlog[listener->backlog_head];
		listener->backlog_head = (listener->backlog_head + 1) %
					 TB5_BACKLOG_MAX;
		listener->backlog_count--;
		ep->state = TB5_EP_CONNECTED;
		ep->peer_id = pc->peer_ep;
		ep->conn_cookie = pc->conn_cookie;
		ep->service = listener->service;
		ep->need_accept = true;
		tb5_ep_schedule(ep);
		tb5_pump(link);
	}
	tb5_link_unlock(link);
	if (ret) {
		tb5_os_free(ep);
		return ret;
	}
	*out = ep;
	return 0;
}

void tb5_ep_close(struct tb5_ep *ep)
{
	struct tb5_link *link;

	if (!ep)
		return;
	link = ep->link;
	tb5_os_lock(link->lock);
	ep->closed = true;
	if (ep->state == TB5_EP_LISTENING) {
		/* Whoever waits in the backlog is refused, not left hanging. */
		while (ep->backlog_count) {
			struct tb5_pending_conn *pc =
				&ep->backlog[ep->backlog_head];

			tb5_queue_reply(link, TB5_WIRE_REJECT, pc->peer_ep,
					ep->id, pc->conn_cookie, -ECONNREFUSED);
			ep->backlog_head = (ep->backlog_head + 1) %
					   TB5_BACKLOG_MAX;
			ep->backlog_count--;
		}
	} else if (ep->state == TB5_EP_CONNECTED) {
		if (ep->need_accept) {
			/* Accepted but never told: refuse instead. */
			tb5_queue_reply(link, TB5_WIRE_REJECT, ep->peer_id,
					ep->id, ep->conn_cookie, -ECONNREFUSED);
			ep->need_accept = false;
		} else {
			ep->need_close = true;
		}
	}
	ep->need_connect = false;
	tb5_ep_cancel_ops(ep, -ECANCELED);
	if (ep->on_work && !tb5_ep_has_tx_work(ep)) {
		tb5_list_del(&ep->work);
		ep->on_work = false;
	}
	tb5_ep_schedule(ep);
	tb5_ep_try_release(ep);
	tb5_pump(link);
	tb5_link_unlock(link);
}

enum tb5_ep_state tb5_ep_state(struct tb5_ep *ep)
{
	enum tb5_ep_state st;

	tb5_os_lock(ep->link->lock);
	st = (enum tb5_ep_state)ep->state;
	tb5_link_unlock(ep->link);
	return st;
}

/* Queue the endpoint's next handshake frame. 1 sent, 0 none due, <0 full. */
int tb5_ep_tx_control(struct tb5_ep *ep)
{
	struct tb5_link *link = ep->link;
	struct tb5_wire_msg m;
	int ret;

	tb5_os_assert_held(link->lock);
	memset(&m, 0, sizeof(m));
	m.src = ep->id;
	if (ep->need_connect) {
		m.type = TB5_WIRE_CONNECT;
		m.u.connect.service = ep->service;
		m.u.connect.listen_cookie = ep->listen_cookie;
		m.u.connect.conn_cookie = ep->conn_cookie;
		ret = tb5_send_header(link, &m, TB5_EOF_LAST, 0);
		if (!ret)
			ep->need_connect = false;
		return ret ? ret : 1;
	}
	if (ep->need_accept) {
		m.type = TB5_WIRE_ACCEPT;
		m.dst = ep->peer_id;
		m.u.accept.conn_cookie = ep->conn_cookie;
		ret = tb5_send_header(link, &m, TB5_EOF_LAST, 0);
		if (!ret)
			ep->need_accept = false;
		return ret ? ret : 1;
	}
	return 0;
}

/* CLOSE goes out after everything else the endpoint had queued. */
int tb5_ep_tx_close(struct tb5_ep *ep)
{
	struct tb5_wire_msg m;
	int ret;

	tb5_os_assert_held(ep->link->lock);
	tb5_ep_msg(ep, TB5_WIRE_CLOSE, &m);
	m.u.close.status = tb5_wire_status_encode(TB5_WIRE_CLOSE, -ECONNRESET);
	ret = tb5_send_header(ep->link, &m, TB5_EOF_LAST, 0);
	if (!ret) {
		ep->need_close = false;
		tb5_closed_remember(ep->link, ep->id, ep->peer_id);
	}
	return ret ? ret : 1;
}

void tb5_rx_connect(struct tb5_link *link, const struct tb5_wire_msg *m)
{
	struct tb5_ep *l = find_listener(link, m->u.connect.service);
	struct tb5_pending_conn *pc;

	tb5_os_assert_held(link->lock);
	if (!m->src) {
		tb5_rx_error(link, TB5_DROP_MALFORMED,
			     "CONNECT without a source endpoint");
		return;
	}
	if (!l || l->listen_cookie != m->u.connect.listen_cookie ||
	    l->backlog_count == TB5_BACKLOG_MAX) {
		tb5_queue_reply(link, TB5_WIRE_REJECT, m->src,
				l ? l->id : 0, m->u.connect.conn_cookie, -ECONNREFUSED);
		return;
	}
	pc = &l->backlog[(l->backlog_head + l->backlog_count) % TB5_BACKLOG_MAX];
	pc->peer_ep = m->src;
	pc->conn_cookie = m->u.connect.conn_cookie;
	l->backlog_count++;
	link->ops->event(link->priv, l->ctx, TB5_EV_INCOMING, 0);
}

void tb5_rx_accept(struct tb5_link *link, const struct tb5_wire_msg *m)
{
	struct tb5_ep *ep = tb5_ep_lookup(link, m->dst);

	tb5_os_assert_held(link->lock);
	if (!m->src) {
		tb5_rx_error(link, TB5_DROP_MALFORMED,
			     "ACCEPT without a source endpoint");
		return;
	}
	if (!ep || ep->closed || ep->state != TB5_EP_CONNECTING ||
	    ep->conn_cookie != m->u.accept.conn_cookie) {
		/*
		 * Nobody waits for this connection: tell the acceptor, in the
		 * name of the endpoint it believes it is connected to.
		 */
		tb5_rx_drop(link, TB5_DROP_UNKNOWN_CONN);
		tb5_queue_reply(link, TB5_WIRE_CLOSE, m->src, m->dst, 0,
				-ECONNRESET);
		return;
	}
	ep->peer_id = m->src;
	ep->state = TB5_EP_CONNECTED;
	link->ops->event(link->priv, ep->ctx, TB5_EV_CONNECTED, 0);
	tb5_ep_schedule(ep);
}

void tb5_rx_reject(struct tb5_link *link, const struct tb5_wire_msg *m)
{
	struct tb5_ep *ep = tb5_ep_lookup(link, m->dst);

	tb5_os_assert_held(link->lock);
	if (!ep || ep->state != TB5_EP_CONNECTING ||
	    ep->conn_cookie != m->u.reject.conn_cookie) {
		tb5_rx_drop(link, TB5_DROP_UNKNOWN_CONN);
		return;
	}
	tb5_ep_fail(ep, TB5_EP_ERROR,
		    tb5_rx_status(link, m->type, m->u.reject.status));
	tb5_ep_try_release(ep);
}

void tb5_rx_close(struct tb5_link *link, const struct tb5_wire_msg *m)
{
	struct tb5_ep *ep = tb5_ep_lookup(link, m->dst);

	tb5_os_assert_held(link->lock);
	if (!ep || ep->state != TB5_EP_CONNECTED || ep->peer_id != m->src) {
		/* Both sides closed at once: the peer's CLOSE crossed ours. */
		if (tb5_closed_forget(link, m->dst, m->src))
			return;
		tb5_rx_drop(link, TB5_DROP_UNKNOWN_CONN);
		return;
	}
	tb5_ep_fail(ep, TB5_EP_PEER_CLOSED,
		    tb5_rx_status(link, m->type, m->u.close.status));
	tb5_ep_try_release(ep);
}
