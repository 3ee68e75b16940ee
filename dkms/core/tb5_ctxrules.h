/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * tb5_ctxrules.h - the rules of a context, written once for both backends.
 *
 * A *context* is what libtb5 calls a device: one open() of /dev/tb5_<n> in
 * the kernel module, one SimDevice in the simulator. It owns a completion
 * queue and endpoints; each endpoint holds slots for its outstanding
 * operations and credits for the events it may raise. The kernel module
 * (dkms/tb5_ctx.c, tb5_dev.c, tb5_cq.c) and the simulator
 * (src/lib/sim/sim_device.cc) keep their own objects around these structs,
 * but decide nothing themselves: every rule below is here.
 *
 * Completion accounting. A queue of @entries (a power of two,
 * TB5_CQ_ENTRIES_MIN..MAX) never overflows, because every entry is promised
 * before the work that produces it is accepted:
 *   - an endpoint reserves TB5_CTX_EVENT_CREDITS entries when it is made
 *     (a listener TB5_CTX_LISTEN_CREDITS), for the events it may raise;
 *   - a send or receive reserves one when it is posted;
 *   - producing an entry turns one reservation into a used entry, and the
 *     consumer frees it by moving its head past it;
 *   - what an endpoint still holds is given back when it is released.
 * Work that cannot reserve is refused with -ENOSPC, before anything else
 * happens; the caller polls and tries again.
 *
 * Operations. Sends take slots 0..TB5_EP_MAX_OPS-1, receives the next
 * TB5_EP_MAX_OPS; the slot number is the user id given to the core, and its
 * region is what the operation names (NULL: the slot is free). A full side
 * refuses with -EAGAIN, after the queue entry was found (-ENOSPC first).
 *
 * Events. An endpoint raises an event only while it holds a credit. A
 * listener raises TB5_EV_INCOMING once and then only after an accept has
 * re-armed it, which it does before looking at the backlog and only if the
 * queue can promise the entry: the owner accepts until -EAGAIN and misses
 * no connection. Every TB5_EV_ERROR's status is kept (tb5_ep_rules_error()),
 * raised or not.
 *
 * Locking: the caller holds one lock that covers the queue's accounting and
 * the rules of every endpoint of the context (the kernel: the queue's
 * spinlock; the simulator: its queue mutex). Nothing here sleeps, allocates
 * or calls out. @head is the consumer's index as the caller reads it (in
 * the kernel, from the page user space writes): it is trusted only as far
 * as it is consistent, so a confused consumer confuses only itself.
 */
#ifndef TB5_CTXRULES_H
#define TB5_CTXRULES_H

#include "tb5_core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TB5_CQ_ENTRIES_MIN	64u	/* completion queue entries */
#define TB5_CQ_ENTRIES_MAX	65536u
#define TB5_CQ_ENTRIES_DEFAULT	16384u	/* what libtb5 asks for */
#define TB5_CTX_OPS		(2 * TB5_EP_MAX_OPS)	/* sends + receives */
#define TB5_CTX_EVENT_CREDITS	2u	/* events a connection may raise */
#define TB5_CTX_LISTEN_CREDITS	1u	/* a listener: one INCOMING at a time */

/**
 * struct tb5_cq_acct - the accounting of one completion queue.
 * @entries:	its size, a power of two
 * @tail:	entries produced (the producer's index, wrapping)
 * @reserved:	entries promised to work accepted but not produced yet
 */
struct tb5_cq_acct {
	uint32_t entries;
	uint32_t tail;
	uint32_t reserved;
};

/**
 * struct tb5_ctx_op - an operation the core holds for the owner.
 * @user_data:	the owner's, returned in its completion
 * @region:	the region it names; NULL: the slot is free
 */
struct tb5_ctx_op {
	uint64_t user_data;
	void *region;
};

/**
 * struct tb5_ep_rules - what one endpoint may still complete and raise.
 * @listener:	a listener (no operations, INCOMING rule)
 * @incoming_armed: a listener may raise TB5_EV_INCOMING
 * @credits:	queue entries reserved for events
 * @error:	the status of the last TB5_EV_ERROR, 0 before one
 * @ops:	sends in 0..TB5_EP_MAX_OPS-1, receives after them
 */
struct tb5_ep_rules {
	bool listener;
	bool incoming_armed;
	uint32_t credits;
	int32_t error;
	struct tb5_ctx_op ops[TB5_CTX_OPS];
};

/* -EINVAL unless @entries is a power of two in MIN..MAX. */
int tb5_cq_acct_init(struct tb5_cq_acct *cq, uint32_t entries);
/* Entries produced and not consumed, as far as @head is believable. */
uint32_t tb5_cq_acct_used(const struct tb5_cq_acct *cq, uint32_t head);
/* Promise @n entries; -ENOSPC when used + reserved + n would not fit. */
int tb5_cq_acct_reserve(struct tb5_cq_acct *cq, uint32_t head, uint32_t n);
/* Take back @n promised entries (never more than are promised). */
void tb5_cq_acct_unreserve(struct tb5_cq_acct *cq, uint32_t n);
/*
 * Produce one promised entry: *index is where to write it (tail modulo
 * entries), and the tail advances. -ENOSPC, writing nothing, if the queue
 * is full all the same (only a consumer that lies about @head does that).
 */
int tb5_cq_acct_produce(struct tb5_cq_acct *cq, uint32_t head, uint32_t *index);

/*
 * A new endpoint's rules, with its event credits reserved on @cq; -ENOSPC
 * when the queue cannot promise them (the endpoint is not made).
 */
int tb5_ep_rules_open(struct tb5_ep_rules *ep, struct tb5_cq_acct *cq,
		      uint32_t head, bool listener);
/*
 * The endpoint is gone (released by the core, or never given to it): give
 * back the credits it still holds. Its operations have completed.
 */
void tb5_ep_rules_release(struct tb5_ep_rules *ep, struct tb5_cq_acct *cq);

/*
 * Accept one operation: reserve its queue entry (-ENOSPC), then a slot of
 * its side (-EAGAIN); -EINVAL for a listener, an unknown @op (enum
 * tb5_completion_op) or no @region. *slot is the user id for the core.
 */
int tb5_ep_rules_post(struct tb5_ep_rules *ep, struct tb5_cq_acct *cq,
		      uint32_t head, uint32_t op, uint64_t user_data,
		      void *region, uint32_t *slot);
/* The core refused the operation in @slot: free it and its entry. */
void *tb5_ep_rules_unpost(struct tb5_ep_rules *ep, struct tb5_cq_acct *cq,
			  uint32_t slot);
/*
 * The operation of @user_id completed: its slot is freed, *user_data and
 * *region are what it was posted with, and its entry is produced at
 * *index. -EINVAL (nothing freed or produced) for a user id that names no
 * outstanding operation; -ENOSPC from tb5_cq_acct_produce() (the slot is
 * freed, nothing written).
 */
int tb5_ep_rules_complete(struct tb5_ep_rules *ep, struct tb5_cq_acct *cq,
			  uint32_t head, uint64_t user_id,
			  uint64_t *user_data, void **region, uint32_t *index);
/*
 * An event of the core for this endpoint. 1: report it, at *index; 0: it
 * is not reported (an INCOMING already reported and not accepted since, or
 * no credit left). TB5_EV_RELEASED is not an event of this kind: call
 * tb5_ep_rules_release(). Negative errno as tb5_cq_acct_produce().
 */
int tb5_ep_rules_event(struct tb5_ep_rules *ep, struct tb5_cq_acct *cq,
		       uint32_t head, enum tb5_event ev, int status,
		       uint32_t *index);
/*
 * An accept is about to look at @listener's backlog: re-arm INCOMING if
 * the queue can promise its entry, so that a connection arriving meanwhile
 * is reported (perhaps needlessly), never lost.
 */
void tb5_ep_rules_accepting(struct tb5_ep_rules *listener,
			    struct tb5_cq_acct *cq, uint32_t head);
/* The status of the endpoint's last TB5_EV_ERROR, 0 if none. */
int tb5_ep_rules_error(const struct tb5_ep_rules *ep);

#ifdef __cplusplus
}
#endif

#endif /* TB5_CTXRULES_H */
