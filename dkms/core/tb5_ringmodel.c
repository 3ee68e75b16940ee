// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tb5_ringmodel.c - two NHI-like rings wired back to back (see the header).
 */
#include "tb5_ringmodel.h"
#include "tb5_wire.h"

/* A TX descriptor: the frame as the core handed it over. */
struct rm_tx_desc {
	uint64_t cookie;
	struct tb5_mem payload;
	uint16_t len;
	uint8_t sof;
	uint8_t eof;
	uint8_t header[TB5_WIRE_MAX_LEN];
};

/* An RX descriptor: a posted buffer, and what landed in it. */
struct rm_rx_desc {
	uint8_t *buf;
	uint16_t len;
	uint8_t sof;
	uint8_t eof;
};

struct rm_end {
	struct tb5_link *link;
	uint64_t *done;			/* cookies of moved frames, to report */
	struct rm_tx_desc *tx;
	uint32_t tx_head;
	uint32_t tx_count;
	struct rm_rx_desc *rx;
	uint32_t rx_head;
	uint32_t rx_count;
	uint8_t *rx_buffers;
	bool paused;
};

struct tb5_rm_pair {
	/*
	 * Guards the rings. Never held while the model calls into a link, so
	 * a link's tx op (called under the link's lock) may take it.
	 */
	struct tb5_os_spinlock *lock;
	uint32_t plug_epoch;		/* bumped by unplug: stale peeks are void */
	uint32_t ring_size;
	tb5_rm_resolve_fn resolve;
	void *resolve_priv;
	bool plugged;
	struct rm_end end[2];
	struct tb5_rm_stats stats;
};

static void end_free(struct rm_end *e)
{
	tb5_os_free(e->rx_buffers);
	tb5_os_free(e->rx);
	tb5_os_free(e->tx);
	tb5_os_free(e->done);
}

static int end_init(struct rm_end *e, uint32_t ring_size)
{
	uint32_t i;

	e->tx = tb5_os_zalloc(sizeof(*e->tx) * ring_size);
	e->rx = tb5_os_zalloc(sizeof(*e->rx) * ring_size);
	e->done = tb5_os_zalloc(sizeof(*e->done) * ring_size);
	e->rx_buffers = tb5_os_zalloc((size_t)TB5_FRAME_MAX * ring_size);
	if (!e->tx || !e->rx || !e->done || !e->rx_buffers) {
		end_free(e);
		return -ENOMEM;
	}
	/* Prime the RX ring: every descriptor owns a buffer from the start. */
	for (i = 0; i < ring_size; i++)
		e->rx[i].buf = e->rx_buffers + (size_t)i * TB5_FRAME_MAX;
	return 0;
}

int tb5_rm_create(uint32_t ring_size, tb5_rm_resolve_fn resolve,
		  void *resolve_priv, struct tb5_rm_pair **out)
{
	struct tb5_rm_pair *pair;

	if (!resolve || !out || !ring_size || (ring_size & (ring_size - 1)) ||
	    ring_size < TB5_RING_SIZE_MIN || ring_size > TB5_RING_SIZE_MAX)
		return -EINVAL;
	pair = tb5_os_zalloc(sizeof(*pair));
	if (!pair)
		return -ENOMEM;
	pair->ring_size = ring_size;
	pair->resolve = resolve;
	pair->resolve_priv = resolve_priv;
	pair->plugged = true;
	pair->lock = tb5_os_lock_create();
	if (!pair->lock)
		goto err_free_pair;
	if (end_init(&pair->end[0], ring_size))
		goto err_free_lock;
	if (end_init(&pair->end[1], ring_size))
		goto err_free_end0;
	*out = pair;
	return 0;

err_free_end0:
	end_free(&pair->end[0]);
err_free_lock:
	tb5_os_lock_destroy(pair->lock);
err_free_pair:
	tb5_os_free(pair);
	return -ENOMEM;
}

void tb5_rm_destroy(struct tb5_rm_pair *pair)
{
	if (!pair)
		return;
	end_free(&pair->end[1]);
	end_free(&pair->end[0]);
	tb5_os_lock_destroy(pair->lock);
	tb5_os_free(pair);
}

void tb5_rm_attach(struct tb5_rm_pair *pair, int end, struct tb5_link *link)
{
	if (end != 0 && end != 1)
		return;
	tb5_os_lock(pair->lock);
	pair->end[end].link = link;
	tb5_os_unlock(pair->lock);
}

int tb5_rm_tx(struct tb5_rm_pair *pair, int end,
	      const struct tb5_tx_frame *f)
{
	struct rm_end *e;
	struct rm_tx_desc *d;

	int ret = 0;

	if (end != 0 && end != 1)
		return -EINVAL;
	if (!f->len || f->len > TB5_FRAME_MAX ||
	    (f->sof == TB5_SOF_HEADER && f->len > TB5_WIRE_MAX_LEN))
		return -EINVAL;
	e = &pair->end[end];
	tb5_os_lock(pair->lock);
	if (!pair->plugged) {
		ret = -ENOLINK;
		goto out;
	}
	if (e->tx_count == pair->ring_size) {
		pair->stats.tx_full++;
		ret = -ENOSPC;
		goto out;
	}
	d = &e->tx[(e->tx_head + e->tx_count) & (pair->ring_size - 1)];
	d->sof = f->sof;
	d->eof = f->eof;
	d->len = f->len;
	d->cookie = f->cookie;
	d->payload = f->payload;
	if (f->sof == TB5_SOF_HEADER)
		memcpy(d->header, f->header, f->len);
	e->tx_count++;
	if (e->tx_count > pair->stats.tx_high_water)
		pair->stats.tx_high_water = e->tx_count;
out:
	tb5_os_unlock(pair->lock);
	return ret;
}

/*
 * The DMA engine's part for one direction: TX ring of @from into the RX ring
 * of @to, while the RX ring has room (end-to-end flow control). The moves
 * happen under the pair's lock; the completions are reported after it is
 * dropped, because reporting one lets the link queue the next frame.
 */
static uint32_t move_frames(struct tb5_rm_pair *pair, struct rm_end *from,
			    struct rm_end *to, uint32_t budget)
{
	uint32_t mask = pair->ring_size - 1;
	struct tb5_link *link;
	uint32_t moved = 0;

	tb5_os_lock(pair->lock);
	link = from->link;
	while (moved < budget && from->tx_count && pair->plugged) {
		struct rm_tx_desc *d = &from->tx[from->tx_head];
		struct rm_rx_desc *r;
		const void *src = d->header;

		if (to->rx_count == pair->ring_size) {
			pair->stats.rx_full++;
			break;
		}
		r = &to->rx[(to->rx_head + to->rx_count) & mask];
		if (d->sof != TB5_SOF_HEADER)
			src = pair->resolve(pair->resolve_priv, &d->payload,
					    d->len);
		if (src) {
			memcpy(r->buf, src, d->len);
			r->sof = d->sof;
			r->eof = d->eof;
			r->len = d->len;
			to->rx_count++;
			if (to->rx_count > pair->stats.rx_high_water)
				pair->stats.rx_high_water = to->rx_count;
			pair->stats.moved++;
		} else {
			pair->stats.bad_payload++;
		}
		/* The frame left the TX ring: its memory is free again. */
		from->done[moved++] = d->cookie;
		from->tx_head = (from->tx_head + 1) & mask;
		from->tx_count--;
	}
	tb5_os_unlock(pair->lock);

	if (link && moved)
		tb5_link_tx_done_many(link, from->done, moved);
	return moved;
}

/*
 * The interrupt handler's part: hand received frames up, re-post buffers.
 * Only this (single) stepper consumes or fills an RX ring, so the frame at
 * the head stays put while the link reads it without the lock.
 */
static uint32_t deliver_frames(struct tb5_rm_pair *pair, struct rm_end *e,
			       uint32_t budget)
{
	uint32_t mask = pair->ring_size - 1;
	uint32_t delivered = 0;

	while (delivered < budget) {
		struct rm_rx_desc *r;
		struct tb5_link *link;
		uint32_t epoch;

		tb5_os_lock(pair->lock);
		if (!e->rx_count || e->paused || !pair->plugged) {
			tb5_os_unlock(pair->lock);
			break;
		}
		r = &e->rx[e->rx_head];
		link = e->link;
		epoch = pair->plug_epoch;
		tb5_os_unlock(pair->lock);

		if (link)
			tb5_link_rx(link, r->sof, r->eof, r->buf, r->len);

		tb5_os_lock(pair->lock);
		/* An unplug meanwhile emptied the ring: nothing to re-post. */
		if (epoch == pair->plug_epoch) {
			e->rx_head = (e->rx_head + 1) & mask;
			e->rx_count--;
			pair->stats.delivered++;
		}
		tb5_os_unlock(pair->lock);
		delivered++;
	}
	return delivered;
}

uint32_t tb5_rm_step(struct tb5_rm_pair *pair, uint32_t budget)
{
	uint32_t work = 0;

	work += move_frames(pair, &pair->end[0], &pair->end[1], budget);
	work += move_frames(pair, &pair->end[1], &pair->end[0], budget);
	work += deliver_frames(pair, &pair->end[0], budget);
	work += deliver_frames(pair, &pair->end[1], budget);
	return work;
}

uint32_t tb5_rm_run(struct tb5_rm_pair *pair, uint32_t max_steps)
{
	uint32_t steps = 0;

	while (steps < max_steps && tb5_rm_step(pair, pair->ring_size))
		steps++;
	return steps;
}

void tb5_rm_pause_rx(struct tb5_rm_pair *pair, int end, bool paused)
{
	if (end != 0 && end != 1)
		return;
	tb5_os_lock(pair->lock);
	pair->end[end].paused = paused;
	tb5_os_unlock(pair->lock);
}

void tb5_rm_unplug(struct tb5_rm_pair *pair)
{
	struct tb5_link *links[2];
	int i;

	tb5_os_lock(pair->lock);
	if (!pair->plugged) {
		tb5_os_unlock(pair->lock);
		return;
	}
	pair->plugged = false;
	pair->plug_epoch++;
	/* Everything on the rings is lost, as with a pulled cable. */
	for (i = 0; i < 2; i++) {
		pair->end[i].tx_head = 0;
		pair->end[i].tx_count = 0;
		pair->end[i].rx_head = 0;
		pair->end[i].rx_count = 0;
		links[i] = pair->end[i].link;
	}
	tb5_os_unlock(pair->lock);
	for (i = 0; i < 2; i++)
		if (links[i])
			tb5_link_down(links[i], -ENOLINK);
}

void tb5_rm_plug(struct tb5_rm_pair *pair)
{
	struct tb5_link *links[2];
	int i;

	tb5_os_lock(pair->lock);
	if (pair->plugged) {
		tb5_os_unlock(pair->lock);
		return;
	}
	pair->plugged = true;
	links[0] = pair->end[0].link;
	links[1] = pair->end[1].link;
	tb5_os_unlock(pair->lock);
	for (i = 0; i < 2; i++)
		if (links[i])
			tb5_link_up(links[i]);
}

bool tb5_rm_plugged(struct tb5_rm_pair *pair)
{
	bool plugged;

	tb5_os_lock(pair->lock);
	plugged = pair->plugged;
	tb5_os_unlock(pair->lock);
	return plugged;
}

uint32_t tb5_rm_tx_used(struct tb5_rm_pair *pair, int end)
{
	uint32_t n = 0;

	if (end != 0 && end != 1)
		return 0;
	tb5_os_lock(pair->lock);
	n = pair->end[end].tx_count;
	tb5_os_unlock(pair->lock);
	return n;
}

uint32_t tb5_rm_rx_used(struct tb5_rm_pair *pair, int end)
{
	uint32_t n = 0;

	if (end != 0 && end != 1)
		return 0;
	tb5_os_lock(pair->lock);
	n = pair->end[end].rx_count;
	tb5_os_unlock(pair->lock);
	return n;
}

void tb5_rm_get_stats(struct tb5_rm_pair *pair, struct tb5_rm_stats *st)
{
	tb5_os_lock(pair->lock);
	*st = pair->stats;
	tb5_os_unlock(pair->lock);
}
