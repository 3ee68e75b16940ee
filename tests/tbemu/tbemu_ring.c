// SPDX-License-Identifier: GPL-2.0-only
/*
 * tbemu_ring.c - NHI rings, as drivers/thunderbolt/nhi.c gives them to a
 * service driver, with the engine thread as the DMA engine:
 *
 *  - a ring of @size descriptors holds at most @size - 1 frames; frames
 *    enqueued beyond that wait in @queue and are written to descriptors as
 *    completed ones are reaped (ring_write_descriptors());
 *  - TX: the engine takes posted descriptors in order, reads each frame by
 *    its DMA address (so a frame must have been synced for the device), and
 *    sends it on the HopID of the path enabled for the ring; without a path
 *    the frame completes and is lost, as at an adapter with no path;
 *  - RX: a frame on a HopID goes into the next posted descriptor of the RX
 *    ring that the path binds, written by DMA address (so the driver must
 *    sync for the CPU before reading); length 0 stands for 4096, as in the
 *    descriptor; with no posted descriptor the frame is dropped;
 *  - E2E flow control: when the TX ring and the peer's RX ring both have
 *    RING_FLAG_E2E, a frame leaves only against a credit, one per
 *    descriptor the receiver posted; a TX ring with E2E towards an RX ring
 *    without it gets no credits and stalls, as on the hardware;
 *  - interrupts: a completion raises the ring's interrupt in hard interrupt
 *    context (irq_work); with start_poll the interrupt is masked and
 *    start_poll called (under the ring's lock, as ring_msix() does) until
 *    tb_ring_poll_complete() unmasks it, and a completion while masked is
 *    raised at the unmask; without start_poll the ring's work calls each
 *    frame's callback in process context; tb_ring_stop() cancels every
 *    frame through the same callbacks; on 7.2, tb_ring_throttling() sets a
 *    minimum interval between a ring's interrupts;
 *  - misuse warns as nhi.c does (dev_WARN): starting a running ring,
 *    stopping a stopped one, freeing a running one, or a controller removed
 *    with rings still allocated.
 *
 * Locks: nhi->lock (the ring tables, hop bindings; the engine holds it for
 * a pass) -> ring->lock -> cable->path_lock.
 */
#define pr_fmt(fmt) "tbemu: " fmt

#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "tbemu.h"

static struct tbemu_cable *nhi_cable(struct tb_nhi *nhi)
{
	return dev_get_drvdata(tbemu_nhi_dev(nhi));
}

/*
 * A frame's memory, by the bus address the driver gave. Test VMs have no
 * IOMMU: dma-direct and swiotlb hand out physical addresses (swiotlb's are
 * its bounce slots), so this is what a bus master would touch.
 */
static void *tbemu_dma_va(dma_addr_t addr, size_t len)
{
	phys_addr_t phys = (phys_addr_t)addr;

	if (!len || len > TBEMU_FRAME_MAX || phys + len < phys)
		return NULL;
	if (!pfn_valid(PHYS_PFN(phys)) || !pfn_valid(PHYS_PFN(phys + len - 1)))
		return NULL;
	return phys_to_virt(phys);
}

static bool ring_full(const struct tb_ring *ring)
{
	return ((ring->head + 1) % ring->size) == ring->tail;
}

static bool ring_empty(const struct tb_ring *ring)
{
	return ring->head == ring->tail;
}

/* Descriptors posted and not yet completed by the "hardware". */
static u32 ring_hw_owned(const struct tbemu_ring *r)
{
	return (r->ring.head - r->hw + r->ring.size) % r->ring.size;
}

/* Under ring->lock: queued frames onto free descriptors. */
static void ring_write_descriptors(struct tbemu_ring *r)
{
	struct tb_ring *ring = &r->ring;
	struct ring_frame *frame, *n;
	struct tbemu_side *me = tbemu_me(r->cable);

	list_for_each_entry_safe(frame, n, &ring->queue, list) {
		struct tbemu_desc *d;

		if (ring_full(ring))
			break;
		list_move_tail(&frame->list, &ring->in_flight);
		d = &r->desc[ring->head];
		d->phys = frame->buffer_phy;
		d->flags = RING_DESC_POSTED | RING_DESC_INTERRUPT;
		if (ring->is_tx) {
			d->length = frame->size;
			d->eof = frame->eof;
			d->sof = frame->sof;
		} else {
			d->length = 0;
			d->eof = d->sof = 0;
		}
		ring->head = (ring->head + 1) % ring->size;
		if (!ring->is_tx && r->bound_hop >= 0) {
			/* An E2E credit for the sender, after the descriptor. */
			smp_wmb();
			WRITE_ONCE(me->rx_posted[r->bound_hop],
				   me->rx_posted[r->bound_hop] + 1);
		}
	}
}

/* Under ring->lock: the ring's interrupt, now or when throttling allows. */
static void ring_raise(struct tbemu_ring *r)
{
	if (r->throttle_ns && ktime_get_ns() < r->next_irq_ns) {
		r->irq_pending = true;
		return;
	}
	r->irq_pending = false;
	r->next_irq_ns = ktime_get_ns() + r->throttle_ns;
	irq_work_queue(&r->irq);
}

/* The interrupt, in hard interrupt context. */
static void tbemu_ring_irq(struct irq_work *work)
{
	struct tbemu_ring *r = container_of(work, struct tbemu_ring, irq);
	struct tb_ring *ring = &r->ring;
	unsigned long flags;

	spin_lock_irqsave(&ring->lock, flags);
	if (ring->running) {
		if (!ring->start_poll) {
			schedule_work(&ring->work);
		} else if (r->irq_masked) {
			r->irq_pending = true;
		} else {
			r->irq_masked = true;
			ring->start_poll(ring->poll_data);
		}
	}
	spin_unlock_irqrestore(&ring->lock, flags);
}

/* As nhi.c's ring_work(): callbacks of completed (or canceled) frames. */
static void tbemu_ring_work(struct work_struct *work)
{
	struct tb_ring *ring = container_of(work, struct tb_ring, work);
	struct tbemu_ring *r = to_emu_ring(ring);
	struct ring_frame *frame;
	bool canceled = false;
	unsigned long flags;
	LIST_HEAD(done);

	spin_lock_irqsave(&ring->lock, flags);
	if (!ring->running) {
		list_splice_tail_init(&ring->in_flight, &done);
		list_splice_tail_init(&ring->queue, &done);
		canceled = true;
		goto invoke;
	}
	while (!ring_empty(ring)) {
		struct tbemu_desc *d = &r->desc[ring->tail];

		if (!(d->flags & RING_DESC_COMPLETED))
			break;
		frame = list_first_entry(&ring->in_flight, typeof(*frame), list);
		list_move_tail(&frame->list, &done);
		if (!ring->is_tx) {
			frame->size = d->length;
			frame->eof = d->eof;
			frame->sof = d->sof;
			frame->flags = d->flags;
		}
		ring->tail = (ring->tail + 1) % ring->size;
	}
	ring_write_descriptors(r);
invoke:
	spin_unlock_irqrestore(&ring->lock, flags);
	while (!list_empty(&done)) {
		frame = list_first_entry(&done, typeof(*frame), list);
		list_del_init(&frame->list);
		if (frame->callback)
			frame->callback(ring, frame, canceled);
	}
}

static struct tb_ring *tbemu_ring_alloc(struct tb_nhi *nhi, int hop, int size,
					bool transmit, unsigned int flags,
					int e2e_tx_hop, u16 sof_mask,
					u16 eof_mask,
					void (*start_poll)(void *),
					void *poll_data)
{
	struct tbemu_cable *c = nhi_cable(nhi);
	struct tbemu_ring **table;
	struct tbemu_ring *r;
	struct tb_ring *ring;
	unsigned long irqflags;

	if (!c || size < 2 || size > 0xffff)
		return NULL;
	if (hop >= (int)nhi->hop_count)
		return NULL;
	if (!transmit && (flags & RING_FLAG_E2E) &&
	    (e2e_tx_hop <= 0 || e2e_tx_hop >= (int)nhi->hop_count))
		return NULL;
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return NULL;
	r->desc = kvcalloc(size, sizeof(*r->desc), GFP_KERNEL);
	if (!r->desc) {
		kfree(r);
		return NULL;
	}
	r->cable = c;
	r->bound_hop = -1;
	init_irq_work(&r->irq, tbemu_ring_irq);
	ring = &r->ring;
	spin_lock_init(&ring->lock);
	INIT_LIST_HEAD(&ring->queue);
	INIT_LIST_HEAD(&ring->in_flight);
	INIT_WORK(&ring->work, tbemu_ring_work);
	ring->nhi = nhi;
	ring->size = size;
	ring->is_tx = transmit;
	ring->flags = flags;
	ring->e2e_tx_hop = transmit ? 0 : e2e_tx_hop;
	ring->sof_mask = sof_mask;
	ring->eof_mask = eof_mask;
	ring->start_poll = start_poll;
	ring->poll_data = poll_data;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 2, 0)
	init_waitqueue_head(&ring->wait);
#endif

	table = transmit ? c->tx_rings : c->rx_rings;
	spin_lock_irqsave(&nhi->lock, irqflags);
	if (hop < 0) {
		/* Ring 0 is the control channel's. */
		for (hop = 1; hop < (int)nhi->hop_count; hop++)
			if (!table[hop])
				break;
	}
	if (hop <= 0 || hop >= (int)nhi->hop_count || table[hop]) {
		spin_unlock_irqrestore(&nhi->lock, irqflags);
		dev_dbg(tbemu_nhi_dev(nhi), "no free %s ring\n",
			transmit ? "TX" : "RX");
		kvfree(r->desc);
		kfree(r);
		return NULL;
	}
	ring->hop = hop;
	table[hop] = r;
	spin_unlock_irqrestore(&nhi->lock, irqflags);
	return ring;
}

struct tb_ring *tb_ring_alloc_tx(struct tb_nhi *nhi, int hop, int size,
				 unsigned int flags)
{
	return tbemu_ring_alloc(nhi, hop, size, true, flags, 0, 0, 0, NULL,
				NULL);
}
EXPORT_SYMBOL_GPL(tb_ring_alloc_tx);

struct tb_ring *tb_ring_alloc_rx(struct tb_nhi *nhi, int hop, int size,
				 unsigned int flags, int e2e_tx_hop,
				 u16 sof_mask, u16 eof_mask,
				 void (*start_poll)(void *), void *poll_data)
{
	return tbemu_ring_alloc(nhi, hop, size, false, flags, e2e_tx_hop,
				sof_mask, eof_mask, start_poll, poll_data);
}
EXPORT_SYMBOL_GPL(tb_ring_alloc_rx);

/* Under nhi->lock: the RX side of @hop in our end of the cable. */
static void hop_publish(struct tbemu_cable *c, int hop, struct tbemu_ring *r)
{
	struct tbemu_side *me = tbemu_me(c);

	WRITE_ONCE(me->rx_posted[hop], 0);
	/* A sender reading the new epoch never sees the old count. */
	smp_wmb();
	WRITE_ONCE(me->rx_epoch[hop], me->rx_epoch[hop] + 1);
	WRITE_ONCE(me->rx_e2e[hop], r && (r->ring.flags & RING_FLAG_E2E));
	/* The new epoch before its first credits. */
	smp_wmb();
	if (r && r->ring.running)
		WRITE_ONCE(me->rx_posted[hop], ring_hw_owned(r));
}

void tbemu_hop_rebind(struct tbemu_cable *c, int hop, struct tbemu_ring *r)
{
	struct tbemu_ring *old;
	unsigned long flags;

	if (hop < 0 || hop >= TBEMU_HOPS)
		return;
	spin_lock_irqsave(&c->nhi->lock, flags);
	old = c->hop_ring[hop];
	if (old) {
		spin_lock(&old->ring.lock);
		old->bound_hop = -1;
		spin_unlock(&old->ring.lock);
	}
	c->hop_ring[hop] = r;
	if (r) {
		spin_lock(&r->ring.lock);
		r->bound_hop = hop;
		hop_publish(c, hop, r);
		spin_unlock(&r->ring.lock);
	} else if (old) {
		hop_publish(c, hop, NULL);
	}
	spin_unlock_irqrestore(&c->nhi->lock, flags);
}

void tb_ring_start(struct tb_ring *ring)
{
	struct tbemu_ring *r = to_emu_ring(ring);
	struct tb_nhi *nhi = ring->nhi;
	unsigned long flags;

	spin_lock_irqsave(&nhi->lock, flags);
	spin_lock(&ring->lock);
	if (ring->running) {
		dev_WARN(tbemu_nhi_dev(nhi), "%s ring %d already started\n",
			 ring->is_tx ? "TX" : "RX", ring->hop);
		goto out;
	}
	ring->head = 0;
	ring->tail = 0;
	r->hw = 0;
	memset(r->desc, 0, ring->size * sizeof(*r->desc));
	r->irq_masked = false;
	r->irq_pending = false;
	ring->running = true;
	if (r->bound_hop >= 0)
		hop_publish(r->cable, r->bound_hop, r);
out:
	spin_unlock(&ring->lock);
	spin_unlock_irqrestore(&nhi->lock, flags);
}
EXPORT_SYMBOL_GPL(tb_ring_start);

void tb_ring_stop(struct tb_ring *ring)
{
	struct tbemu_ring *r = to_emu_ring(ring);
	struct tb_nhi *nhi = ring->nhi;
	unsigned long flags;

	spin_lock_irqsave(&nhi->lock, flags);
	spin_lock(&ring->lock);
	if (!ring->running) {
		dev_WARN(tbemu_nhi_dev(nhi), "%s ring %d already stopped\n",
			 ring->is_tx ? "TX" : "RX", ring->hop);
		goto out;
	}
	ring->running = false;
	ring->head = 0;
	ring->tail = 0;
	r->hw = 0;
	/* The descriptors are gone: no credits for them any more. */
	if (r->bound_hop >= 0)
		hop_publish(r->cable, r->bound_hop, r);
out:
	spin_unlock(&ring->lock);
	spin_unlock_irqrestore(&nhi->lock, flags);
	/* Every frame still on the ring is canceled through its callback. */
	schedule_work(&ring->work);
	flush_work(&ring->work);
}
EXPORT_SYMBOL_GPL(tb_ring_stop);

void tb_ring_free(struct tb_ring *ring)
{
	struct tbemu_ring *r = to_emu_ring(ring);
	struct tbemu_cable *c = r->cable;
	struct tb_nhi *nhi = ring->nhi;
	unsigned long flags;
	int h;

	spin_lock_irqsave(&nhi->lock, flags);
	if (ring->running)
		dev_WARN(tbemu_nhi_dev(nhi), "%s ring %d still running\n",
			 ring->is_tx ? "TX" : "RX", ring->hop);
	if (ring->is_tx)
		c->tx_rings[ring->hop] = NULL;
	else
		c->rx_rings[ring->hop] = NULL;
	for (h = 0; h < TBEMU_HOPS; h++) {
		if (c->hop_ring[h] == r) {
			c->hop_ring[h] = NULL;
			hop_publish(c, h, NULL);
		}
	}
	spin_unlock_irqrestore(&nhi->lock, flags);
	irq_work_sync(&r->irq);
	flush_work(&ring->work);
	kvfree(r->desc);
	kfree(r);
}
EXPORT_SYMBOL_GPL(tb_ring_free);

int __tb_ring_enqueue(struct tb_ring *ring, struct ring_frame *frame)
{
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&ring->lock, flags);
	if (ring->running) {
		list_add_tail(&frame->list, &ring->queue);
		ring_write_descriptors(to_emu_ring(ring));
	} else {
		ret = -ESHUTDOWN;
	}
	spin_unlock_irqrestore(&ring->lock, flags);
	return ret;
}
EXPORT_SYMBOL_GPL(__tb_ring_enqueue);

struct ring_frame *tb_ring_poll(struct tb_ring *ring)
{
	struct tbemu_ring *r = to_emu_ring(ring);
	struct ring_frame *frame = NULL;
	unsigned long flags;

	spin_lock_irqsave(&ring->lock, flags);
	if (!ring->running || ring_empty(ring))
		goto unlock;
	if (r->desc[ring->tail].flags & RING_DESC_COMPLETED) {
		struct tbemu_desc *d = &r->desc[ring->tail];

		frame = list_first_entry(&ring->in_flight, typeof(*frame), list);
		list_del_init(&frame->list);
		if (!ring->is_tx) {
			frame->size = d->length;
			frame->eof = d->eof;
			frame->sof = d->sof;
			frame->flags = d->flags;
		}
		ring->tail = (ring->tail + 1) % ring->size;
	}
unlock:
	spin_unlock_irqrestore(&ring->lock, flags);
	return frame;
}
EXPORT_SYMBOL_GPL(tb_ring_poll);

void tb_ring_poll_complete(struct tb_ring *ring)
{
	struct tbemu_ring *r = to_emu_ring(ring);
	unsigned long flags;

	spin_lock_irqsave(&ring->nhi->lock, flags);
	spin_lock(&ring->lock);
	if (ring->start_poll) {
		r->irq_masked = false;
		/* Latched while masked: it fires now. */
		if (r->irq_pending && ring->running)
			ring_raise(r);
	}
	spin_unlock(&ring->lock);
	spin_unlock_irqrestore(&ring->nhi->lock, flags);
}
EXPORT_SYMBOL_GPL(tb_ring_poll_complete);

#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 2, 0)
int tb_ring_throttling(struct tb_ring *ring, unsigned int ns)
{
	struct tbemu_ring *r = to_emu_ring(ring);
	unsigned long flags;

	spin_lock_irqsave(&ring->lock, flags);
	r->throttle_ns = ns;
	ring->interval_nsec = ns;
	spin_unlock_irqrestore(&ring->lock, flags);
	return 0;
}
EXPORT_SYMBOL_GPL(tb_ring_throttling);
#endif

/* -- the engine's DMA passes -------------------------------------------------- */

/* Under nhi->lock and ring->lock: send what the TX ring has posted. */
static int ring_tx_step(struct tbemu_cable *c, struct tbemu_ring *r)
{
	struct tb_ring *ring = &r->ring;
	struct tbemu_side *peer = tbemu_peer(c);
	int n = 0;

	while (ring->running && r->hw != ring->head && n < 64) {
		struct tbemu_desc *d = &r->desc[r->hw];
		u32 len = d->length ?: TBEMU_FRAME_MAX;
		int hop = tbemu_tx_hop(c, ring->hop);
		const void *src;

		if (hop >= 0 && tbemu_connected_now(c)) {
			/* Pairs with hop_publish(): credits of this epoch. */
			u32 epoch = smp_load_acquire(&peer->rx_epoch[hop]);
			struct tbemu_slot *s;

			if (epoch != c->tx_epoch[hop]) {
				c->tx_epoch[hop] = epoch;
				c->tx_sent[hop] = 0;
			}
			/* (Past them when a hostile flood ignored them.) */
			if ((ring->flags & RING_FLAG_E2E) &&
			    (!READ_ONCE(peer->rx_e2e[hop]) ||
			     (s32)(READ_ONCE(peer->rx_posted[hop]) -
				   c->tx_sent[hop]) <= 0))
				break;	/* no credit: wait */
			s = tbemu_wire_slot(c);
			if (!s)
				break;	/* the wire is full */
			src = tbemu_dma_va(d->phys, len);
			if (!src) {
				dev_err_ratelimited(&c->pdev->dev,
						    "TX ring %d: DMA from %pad (%u bytes) is not memory\n",
						    ring->hop, &d->phys, len);
				len = 0;
			} else {
				memcpy(s->data, src, len);
			}
			s->kind = TBEMU_SLOT_DATA;
			s->hop = hop;
			s->len = len;
			s->gen = READ_ONCE(c->shm->plug_gen);
			s->epoch = epoch;
			s->sof = d->sof;
			s->eof = d->eof;
			if (READ_ONCE(c->atk->mode) &&
			    !tbemu_attack_tx(c, hop, epoch, s))
				goto sent;	/* the hostile peer kept it */
			tbemu_wire_push(c);
			c->tx_sent[hop]++;
			atomic64_inc(&c->tx_frames);
			if (READ_ONCE(c->atk->mode))
				tbemu_attack_sent(c, r, hop, epoch, s);
		} else {
			/* No path (or no cable): the frame leaves for nowhere. */
			atomic64_inc(&c->tx_no_path);
		}
sent:
		d->flags |= RING_DESC_COMPLETED;
		r->hw = (r->hw + 1) % ring->size;
		n++;
	}
	if (n)
		ring_raise(r);
	return n;
}

int tbemu_rings_step(struct tbemu_cable *c)
{
	unsigned long flags;
	int i, n = 0;

	spin_lock_irqsave(&c->nhi->lock, flags);
	for (i = 0; i < TBEMU_RINGS; i++) {
		struct tbemu_ring *r = c->tx_rings[i];

		if (r) {
			spin_lock(&r->ring.lock);
			n += ring_tx_step(c, r);
			if (READ_ONCE(c->atk->mode))
				n += tbemu_attack_step(c, r);
			if (r->irq_pending && !r->irq_masked)
				ring_raise(r);
			spin_unlock(&r->ring.lock);
		}
		r = c->rx_rings[i];
		if (r && r->irq_pending && !r->irq_masked) {
			spin_lock(&r->ring.lock);
			ring_raise(r);
			spin_unlock(&r->ring.lock);
		}
	}
	spin_unlock_irqrestore(&c->nhi->lock, flags);
	return n;
}

/* A frame from the wire into the RX ring bound to its HopID. */
void tbemu_ring_rx_frame(struct tbemu_cable *c, const struct tbemu_slot *s)
{
	struct tbemu_side *me = tbemu_me(c);
	struct tbemu_ring *r;
	unsigned long flags;
	bool ok = false;

	if (s->hop >= TBEMU_HOPS || !s->len || s->len > 0xffff) {
		atomic64_inc(&c->rx_dropped);
		return;
	}
	spin_lock_irqsave(&c->nhi->lock, flags);
	if (c->atk->t_len)
		tbemu_attack_rx(c, s);
	r = c->hop_ring[s->hop];
	if (r) {
		struct tb_ring *ring = &r->ring;

		spin_lock(&ring->lock);
		/* Sent to an earlier binding of the HopID: lost on the way. */
		if (ring->running && s->epoch == READ_ONCE(me->rx_epoch[s->hop]) &&
		    r->hw != ring->head) {
			struct tbemu_desc *d = &r->desc[r->hw];
			u32 len = min_t(u32, s->len, TBEMU_FRAME_MAX);
			void *dst = tbemu_dma_va(d->phys, len);

			if (dst) {
				memcpy(dst, s->data, len);
				d->length = len & 0xfff;
				d->sof = s->sof;
				d->eof = s->eof;
				/*
				 * Written back by the NHI: its status, not
				 * POSTED (the same bit as BUFFER_OVERRUN),
				 * which says a frame longer than the buffer
				 * was cut to it.
				 */
				d->flags = RING_DESC_COMPLETED;
				if (s->len > TBEMU_FRAME_MAX)
					d->flags |= RING_DESC_BUFFER_OVERRUN;
			} else {
				dev_err_ratelimited(&c->pdev->dev,
						    "RX ring %d: DMA to %pad is not memory\n",
						    ring->hop, &d->phys);
				d->flags = RING_DESC_COMPLETED |
					   RING_DESC_BUFFER_OVERRUN;
			}
			r->hw = (r->hw + 1) % ring->size;
			ring_raise(r);
			ok = true;
		} else if (ring->running && me->rx_e2e[s->hop] &&
			   s->epoch == READ_ONCE(me->rx_epoch[s->hop])) {
			/*
			 * No descriptor on an E2E path: the sender ignored
			 * its credits (a hostile flood). The frame is dropped
			 * and its credit given back, so that the count stays
			 * that of the descriptors free.
			 */
			WRITE_ONCE(me->rx_posted[s->hop], me->rx_posted[s->hop] + 1);
		}
		spin_unlock(&ring->lock);
	}
	spin_unlock_irqrestore(&c->nhi->lock, flags);
	if (ok)
		atomic64_inc(&c->rx_frames);
	else
		atomic64_inc(&c->rx_dropped);
}

/* The controller goes: every ring must have been freed by its driver. */
void tbemu_rings_check_freed(struct tbemu_cable *c)
{
	int i;

	for (i = 0; i < TBEMU_RINGS; i++) {
		if (c->tx_rings[i])
			dev_WARN(&c->pdev->dev, "TX ring %d is still allocated\n", i);
		if (c->rx_rings[i])
			dev_WARN(&c->pdev->dev, "RX ring %d is still allocated\n", i);
	}
}
