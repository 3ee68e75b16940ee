/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * tb5_core_internal.h - the core's objects, shared by tb5_link.c (link
 * lifecycle, receive dispatch, transmit scheduling), tb5_endpoint.c
 * (listen/connect/accept/close) and tb5_msg.c (sends, receives, bursts).
 * Not for use outside dkms/core.
 *
 * The functions declared at the end, but tb5_sanitize_status(), run with
 * the link's lock held and assert it (tb5_os_assert_held()), as do the
 * static helpers of those files that touch a link or an endpoint;
 * tb5_link_unlock() drops it.
 */
#ifndef TB5_CORE_INTERNAL_H
#define TB5_CORE_INTERNAL_H

#include "tb5_core.h"
#include "tb5_wire.h"

/* Intrusive circular doubly-linked list (the kernel's list_head, portably). */
struct tb5_list {
	struct tb5_list *next;
	struct tb5_list *prev;
};

static inline void tb5_list_init(struct tb5_list *l)
{
	l->next = l;
	l->prev = l;
}

static inline bool tb5_list_empty(const struct tb5_list *l)
{
	return l->next == l;
}

static inline void tb5_list_add_tail(struct tb5_list *n, struct tb5_list *head)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static inline void tb5_list_del(struct tb5_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	tb5_list_init(n);
}

#define TB5_OPS_MASK		(TB5_EP_MAX_OPS - 1)

/*
 * A receive's seq is (counter << TB5_SEQ_SLOT_BITS) | slot: the slot finds
 * the receive, the counter (the endpoint's receives in posting order,
 * TB5_SEQ_COUNTER_BITS wide, wrapping) tells one posting of a slot from the
 * next and orders an endpoint's grants on the wire.
 */
#define TB5_SEQ_SLOT_BITS	6
#define TB5_SEQ_COUNTER_BITS	(32 - TB5_SEQ_SLOT_BITS)
#define TB5_SEQ_COUNTER_MASK	((1u << TB5_SEQ_COUNTER_BITS) - 1)
#if (1u << TB5_SEQ_SLOT_BITS) != TB5_EP_MAX_OPS
#error "a receive's seq must name exactly TB5_EP_MAX_OPS slots"
#endif

#define TB5_REPLIES_MAX		128u	/* link-level replies waiting for the TX ring */
#define TB5_CLOSED_MAX		32u	/* connections this side closed, remembered */
#define TB5_EP_INDEX(id)	((id) & 0xffffu)
#define TB5_EP_GEN(id)		((id) >> 16)

/* A send, from posting to completion. */
enum tb5_send_state {
	TB5_SEND_FREE = 0,
	TB5_SEND_WAITING,	/* posted, no grant with its tag yet */
	TB5_SEND_MATCHED,	/* granted: bursts go out */
	TB5_SEND_DRAINING,	/* nothing more to issue; waits for its frames */
};

struct tb5_send {
	uint64_t user_id;
	struct tb5_mem mem;
	uint64_t len;
	uint64_t issued;	/* bytes handed to the TX ring */
	uint64_t order;		/* posting order, for FIFO among equals */
	uint32_t tag;
	uint32_t seq;		/* the receiver's grant this send fills */
	uint32_t gen;		/* tells a stale TX cookie from a reused slot */
	uint32_t inflight;	/* bursts whose last frame is still on the TX ring */
	int32_t status;		/* what it completes with once drained */
	uint8_t state;		/* enum tb5_send_state */
};

enum tb5_recv_state {
	TB5_RECV_FREE = 0,
	TB5_RECV_POSTED,	/* CTS not sent yet */
	TB5_RECV_GRANTED,	/* CTS sent: data may arrive */
};

struct tb5_recv {
	uint64_t user_id;
	struct tb5_mem mem;
	uint64_t len;		/* posted size */
	uint64_t received;	/* bytes landed, in order */
	uint64_t msg_len;	/* announced by the first DATA header */
	uint32_t tag;
	uint32_t seq;		/* (counter << 6) | slot, echoed by the sender */
	bool msg_len_known;
	uint8_t state;		/* enum tb5_recv_state */
};

/* A grant from the peer, waiting for a send with its tag. */
struct tb5_grant {
	uint64_t len;
	uint64_t order;
	uint32_t seq;
	uint32_t tag;
	bool valid;
};

/* A connection waiting in a listener's backlog. */
struct tb5_pending_conn {
	uint64_t conn_cookie;
	uint32_t peer_ep;
};

/* A sender-side refusal of a grant, waiting to go out as ABORT. */
struct tb5_abort {
	uint32_t seq;
	int32_t status;
};

struct tb5_ep {
	struct tb5_link *link;
	void *ctx;
	uint32_t id;			/* gen << 16 | index */
	uint32_t peer_id;		/* the peer's endpoint, once connected */
	uint8_t state;			/* enum tb5_ep_state */
	bool closed;			/* the owner closed it: only draining */
	bool need_connect;		/* CONNECT not sent yet */
	bool need_accept;		/* ACCEPT not sent yet */
	bool need_close;		/* CLOSE not sent yet */
	bool on_work;			/* linked on link->work */
	int32_t error;			/* why the endpoint is in TB5_EP_ERROR */
	uint32_t tx_refs;		/* bursts of this endpoint on the TX ring */
	uint64_t service;		/* listener: service id */
	uint64_t listen_cookie;		/* listener: connectors must present it */
	uint64_t conn_cookie;		/* the connection's cookie */
	struct tb5_list work;		/* on link->work while it has frames to send */

	/* Listener. */
	struct tb5_pending_conn backlog[TB5_BACKLOG_MAX];
	uint32_t backlog_head;
	uint32_t backlog_count;

	/* Sender side. */
	struct tb5_send sends[TB5_EP_MAX_OPS];
	struct tb5_grant grants[TB5_EP_MAX_OPS];
	struct tb5_abort aborts[TB5_EP_MAX_OPS];
	uint32_t abort_head;
	uint32_t abort_count;
	uint32_t matched;		/* sends in TB5_SEND_MATCHED */
	uint64_t send_order;
	uint64_t grant_order;
	uint32_t send_gen;
	uint32_t cts_last;		/* counter of the newest grant taken */
	bool cts_seen;			/* a grant was taken: cts_last is set */

	/* Receiver side. */
	struct tb5_recv recvs[TB5_EP_MAX_OPS];
	uint8_t cts_queue[TB5_EP_MAX_OPS];	/* recv slots whose CTS waits */
	uint32_t cts_head;
	uint32_t cts_count;
	uint32_t recv_counter;
};

/* A link-level frame that answers the peer, waiting for the TX ring. */
struct tb5_reply {
	uint64_t cookie;
	uint32_t dst;
	uint32_t src;			/* the endpoint the answer speaks for */
	int32_t status;
	uint8_t type;			/* TB5_WIRE_REJECT or TB5_WIRE_CLOSE */
};

/* A connection this side closed, and told its peer of (CLOSE sent). */
struct tb5_closed_conn {
	uint32_t id;			/* our endpoint, released since */
	uint32_t peer;			/* the peer's endpoint */
};

struct tb5_link {
	struct tb5_os_spinlock *lock;
	const struct tb5_link_ops *ops;
	void *priv;
	struct tb5_link_config cfg;
	uint8_t state;			/* enum tb5_link_state */
	bool need_hello;
	uint64_t epoch;			/* this link object's incarnation */
	uint64_t peer_host;
	uint64_t peer_epoch;

	struct tb5_ep **eps;		/* index 0 unused */
	uint16_t *ep_gen;
	uint32_t ep_hint;
	struct tb5_list work;		/* endpoints with frames to send */
	/*
	 * Released endpoints, freed once the lock is dropped: the kernel's
	 * kvfree() may sleep, which it must not do under a spinlock.
	 */
	struct tb5_list graveyard;

	struct tb5_reply replies[TB5_REPLIES_MAX];
	uint32_t reply_head;
	uint32_t reply_count;

	/*
	 * The last connections closed from this side (a ring, 0: empty).
	 * When both sides close at once, the peer's CLOSE crosses ours and
	 * finds the endpoint released: the ordinary end of a connection, not
	 * a frame to count as a drop (tb5_rx_close).
	 */
	struct tb5_closed_conn closed[TB5_CLOSED_MAX];
	uint32_t closed_next;

	/* The payload frames of the burst being transmitted. */
	struct {
		bool active;
		struct tb5_ep *ep;
		struct tb5_mem next;	/* where the next payload frame starts */
		uint64_t left;		/* payload bytes still to queue */
		uint64_t cookie;	/* carried by the burst's last frame */
	} txb;

	/* The payload frames of the burst being received. */
	struct {
		bool active;
		bool discard;		/* consume and drop: no valid target */
		bool last;		/* the burst ends its message */
		struct tb5_ep *ep;
		uint32_t slot;
		uint64_t offset;	/* where the next payload frame lands */
		uint64_t left;		/* payload bytes still expected */
	} rxb;

	struct tb5_link_stats stats;
	uint8_t hdr[TB5_WIRE_MAX_LEN];	/* scratch for encoding headers */
};

/* Start a header from @ep to its peer's endpoint. */
static inline void tb5_ep_msg(const struct tb5_ep *ep, uint8_t type,
			      struct tb5_wire_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->dst = ep->peer_id;
	m->src = ep->id;
}

/* tb5_link.c */
void tb5_link_unlock(struct tb5_link *link);
void tb5_closed_remember(struct tb5_link *link, uint32_t id, uint32_t peer);
bool tb5_closed_forget(struct tb5_link *link, uint32_t id, uint32_t peer);
struct tb5_ep *tb5_ep_lookup(struct tb5_link *link, uint32_t id);
void tb5_ep_schedule(struct tb5_ep *ep);
int tb5_send_header(struct tb5_link *link, const struct tb5_wire_msg *msg,
		    uint8_t eof, uint64_t cookie);
void tb5_queue_reply(struct tb5_link *link, uint8_t type, uint32_t dst,
		     uint32_t src, uint64_t cookie, int32_t status);
void tb5_pump(struct tb5_link *link);
void tb5_rx_error(struct tb5_link *link, enum tb5_drop_kind kind,
		  const char *what);
void tb5_rx_drop(struct tb5_link *link, enum tb5_drop_kind kind);
int32_t tb5_rx_status(struct tb5_link *link, uint8_t type, int32_t code);
int32_t tb5_sanitize_status(int32_t status, int32_t fallback);

/* tb5_endpoint.c */
int tb5_ep_install(struct tb5_link *link, struct tb5_ep *ep);
void tb5_ep_try_release(struct tb5_ep *ep);
void tb5_ep_fail(struct tb5_ep *ep, uint8_t state, int32_t status);
void tb5_ep_release_now(struct tb5_ep *ep, int32_t status);
void tb5_rx_connect(struct tb5_link *link, const struct tb5_wire_msg *m);
void tb5_rx_accept(struct tb5_link *link, const struct tb5_wire_msg *m);
void tb5_rx_reject(struct tb5_link *link, const struct tb5_wire_msg *m);
void tb5_rx_close(struct tb5_link *link, const struct tb5_wire_msg *m);
int tb5_ep_tx_control(struct tb5_ep *ep);
int tb5_ep_tx_close(struct tb5_ep *ep);

/* tb5_msg.c */
bool tb5_ep_has_tx_work(const struct tb5_ep *ep);
int tb5_ep_tx_one(struct tb5_ep *ep);
int tb5_txb_continue(struct tb5_link *link);
void tb5_tx_done_cookie(struct tb5_link *link, uint64_t cookie);
void tb5_ep_cancel_ops(struct tb5_ep *ep, int32_t status);
void tb5_ep_drop_tx_refs(struct tb5_ep *ep, int32_t status);
void tb5_rx_cts(struct tb5_link *link, const struct tb5_wire_msg *m);
void tb5_rx_abort(struct tb5_link *link, const struct tb5_wire_msg *m);
void tb5_rx_data(struct tb5_link *link, const struct tb5_wire_msg *m,
		 uint8_t eof);
void tb5_rx_payload(struct tb5_link *link, uint8_t eof, const void *data,
		    uint32_t len);
void tb5_rxb_abandon(struct tb5_link *link, int32_t status);

#endif /* TB5_CORE_INTERNAL_H */
