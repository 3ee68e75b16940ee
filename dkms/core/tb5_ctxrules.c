// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tb5_ctxrules.c - operation slots, event credits and completion accounting
 * of a context; see tb5_ctxrules.h. Compiled into tb5.ko and into libtb5's
 * simulator, so that both refuse the same work with the same error.
 */
#include "tb5_ctxrules.h"

int tb5_cq_acct_init(struct tb5_cq_acct *cq, uint32_t entries)
{
	if (entries < TB5_CQ_ENTRIES_MIN || entries > TB5_CQ_ENTRIES_MAX ||
	    (entries & (entries - 1)))
		return -EINVAL;
	cq->entries = entries;
	cq->tail = 0;
	cq->reserved = 0;
	return 0;
}

uint32_t tb5_cq_acct_used(const struct tb5_cq_acct *cq, uint32_t head)
{
	uint32_t used = cq->tail - head;

	/* A head ahead of the tail, or too far behind, is nonsense. */
	return used > cq->entries ? cq->entries : used;
}

int tb5_cq_acct_reserve(struct tb5_cq_acct *cq, uint32_t head, uint32_t n)
{
	/* 64 bits: used, reserved and n are each at most 2^32 - 1. */
	if ((uint64_t)tb5_cq_acct_used(cq, head) + cq->reserved + n >
	    cq->entries)
		return -ENOSPC;
	cq->reserved += n;
	return 0;
}

void tb5_cq_acct_unreserve(struct tb5_cq_acct *cq, uint32_t n)
{
	cq->reserved -= n < cq->reserved ? n : cq->reserved;
}

int tb5_cq_acct_produce(struct tb5_cq_acct *cq, uint32_t head, uint32_t *index)
{
	/* The promise is kept or broken now, either way it is spent. */
	tb5_cq_acct_unreserve(cq, 1);
	if (tb5_cq_acct_used(cq, head) >= cq->entries)
		return -ENOSPC;
	*index = cq->tail & (cq->entries - 1);
	cq->tail++;
	return 0;
}

int tb5_ep_rules_open(struct tb5_ep_rules *ep, struct tb5_cq_acct *cq,
		      uint32_t head, bool listener)
{
	uint32_t credits = listener ? TB5_CTX_LISTEN_CREDITS :
				      TB5_CTX_EVENT_CREDITS;
	int ret = tb5_cq_acct_reserve(cq, head, credits);

	if (ret)
		return ret;
	memset(ep, 0, sizeof(*ep));
	ep->listener = listener;
	ep->incoming_armed = listener;
	ep->credits = credits;
	return 0;
}

void tb5_ep_rules_release(struct tb5_ep_rules *ep, struct tb5_cq_acct *cq)
{
	tb5_cq_acct_unreserve(cq, ep->credits);
	ep->credits = 0;
	ep->incoming_armed = false;
}

int tb5_ep_rules_post(struct tb5_ep_rules *ep, struct tb5_cq_acct *cq,
		      uint32_t head, uint32_t op, uint64_t user_data,
		      void *region, uint32_t *slot)
{
	uint32_t first, end, i;
	int ret;

	if (ep->listener || !region)
		return -EINVAL;
	if (op == TB5_COMPLETION_SEND)
		first = 0;
	else if (op == TB5_COMPLETION_RECV)
		first = TB5_EP_MAX_OPS;
	else
		return -EINVAL;
	ret = tb5_cq_acct_reserve(cq, head, 1);
	if (ret)
		return ret;
	end = first + TB5_EP_MAX_OPS;
	for (i = first; i < end; i++)
		if (!ep->ops[i].region)
			break;
	if (i == end) {
		tb5_cq_acct_unreserve(cq, 1);
		return -EAGAIN;
	}
	ep->ops[i].user_data = user_data;
	ep->ops[i].region = region;
	*slot = i;
	return 0;
}

void *tb5_ep_rules_unpost(struct tb5_ep_rules *ep, struct tb5_cq_acct *cq,
			  uint32_t slot)
{
	void *region;

	if (slot >= TB5_CTX_OPS || !ep->ops[slot].region)
		return NULL;
	region = ep->ops[slot].region;
	ep->ops[slot].region = NULL;
	tb5_cq_acct_unreserve(cq, 1);
	return region;
}

int tb5_ep_rules_complete(struct tb5_ep_rules *ep, struct tb5_cq_acct *cq,
			  uint32_t head, uint64_t user_id,
			  uint64_t *user_data, void **region, uint32_t *index)
{
	struct tb5_ctx_op *op;

	if (user_id >= TB5_CTX_OPS || !ep->ops[user_id].region)
		return -EINVAL;
	op = &ep->ops[user_id];
	*user_data = op->user_data;
	*region = op->region;
	op->region = NULL;
	/* The entry was reserved when the operation was posted. */
	return tb5_cq_acct_produce(cq, head, index);
}

int tb5_ep_rules_event(struct tb5_ep_rules *ep, struct tb5_cq_acct *cq,
		       uint32_t head, enum tb5_event ev, int status,
		       uint32_t *index)
{
	bool raise;
	int ret;

	if (ev == TB5_EV_RELEASED)
		return -EINVAL;
	if (ev == TB5_EV_ERROR)
		ep->error = status;
	if (ev == TB5_EV_INCOMING) {
		/* One INCOMING at a time: accept until -EAGAIN re-arms it. */
		raise = ep->incoming_armed && ep->credits;
		ep->incoming_armed = false;
	} else {
		raise = ep->credits > 0;
	}
	if (!raise)
		return 0;
	ep->credits--;
	ret = tb5_cq_acct_produce(cq, head, index);
	return ret ? ret : 1;
}

void tb5_ep_rules_accepting(struct tb5_ep_rules *listener,
			    struct tb5_cq_acct *cq, uint32_t head)
{
	if (!listener->listener)
		return;
	if (!listener->incoming_armed && !listener->credits &&
	    !tb5_cq_acct_reserve(cq, head, 1))
		listener->credits = 1;
	listener->incoming_armed = listener->credits > 0;
}

int tb5_ep_rules_error(const struct tb5_ep_rules *ep)
{
	return ep->error;
}
