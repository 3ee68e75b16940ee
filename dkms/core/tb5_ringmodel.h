/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * tb5_ringmodel.h - two NHI-like rings wired back to back, in memory.
 *
 * Each end of a pair has a TX ring and an RX ring of ring_size descriptors.
 * The RX ring's descriptors own TB5_FRAME_MAX-byte buffers, posted in
 * advance, as a driver primes an NHI RX ring. tb5_rm_step() plays the DMA
 * engine and the interrupt handler:
 *
 *  1. moves frames from each end's TX ring into the other end's RX ring, in
 *     order, copying the bytes, but only while that RX ring has a free
 *     descriptor (end-to-end flow control: a frame never lands in a full RX
 *     ring; it waits on the TX ring, and once the TX ring is full the core is
 *     told -ENOSPC and stalls);
 *  2. reports the moved frames to their sender with tb5_link_tx_done_many();
 *  3. hands received frames to the receiving link with tb5_link_rx() and
 *     re-posts their descriptors.
 *
 * tb5_rm_tx() only queues: no callback ever runs inside it, so completions
 * are always asynchronous to the caller, as on hardware.
 *
 * Threads: one thread at a time steps a pair (the kernel's loop backend from
 * a work item, the tests directly); any thread may call tb5_rm_tx(), pause,
 * unplug and plug meanwhile. The pair's own lock guards the rings and is
 * never held while the model calls into a link, so a link's tx op, which
 * runs under the link's lock, may call tb5_rm_tx().
 *
 * Unplugging a pair drops every frame on its rings and tells both links
 * tb5_link_down(-ENOLINK); plugging it back brings both links up again.
 */
#ifndef TB5_RINGMODEL_H
#define TB5_RINGMODEL_H

#include "tb5_core.h"

#ifdef __cplusplus
extern "C" {
#endif

struct tb5_rm_pair;

/*
 * Turns a payload reference into a pointer to @len readable bytes; NULL if
 * the range is not valid (the frame is then dropped and counted).
 */
typedef const void *(*tb5_rm_resolve_fn)(void *priv, const struct tb5_mem *mem,
					  uint32_t len);

struct tb5_rm_stats {
	uint64_t moved;		/* frames moved TX -> RX */
	uint64_t delivered;	/* frames handed to a link */
	uint64_t tx_full;	/* tb5_rm_tx() refused: TX ring full */
	uint64_t rx_full;	/* a move waited: peer RX ring full */
	uint64_t bad_payload;	/* payload reference did not resolve */
	uint32_t rx_high_water;	/* most RX descriptors in use at once */
	uint32_t tx_high_water;	/* most TX descriptors in use at once */
};

int tb5_rm_create(uint32_t ring_size, tb5_rm_resolve_fn resolve,
		  void *resolve_priv, struct tb5_rm_pair **out);
/* Links must have been detached (or destroyed after tb5_rm_unplug). */
void tb5_rm_destroy(struct tb5_rm_pair *pair);
/* Attach the link for end 0 or 1; NULL detaches. */
void tb5_rm_attach(struct tb5_rm_pair *pair, int end, struct tb5_link *link);

/* For the link's tx op: queue a frame on end @end's TX ring. 0 or -ENOSPC. */
int tb5_rm_tx(struct tb5_rm_pair *pair, int end,
	      const struct tb5_tx_frame *frame);

/*
 * Move and deliver up to @budget frames per end and direction. Returns the
 * number of frames moved or delivered; 0 means the pair is idle (or all its
 * traffic waits on a paused receiver).
 */
uint32_t tb5_rm_step(struct tb5_rm_pair *pair, uint32_t budget);
/* tb5_rm_step() until idle, at most @max_steps times. Returns steps taken. */
uint32_t tb5_rm_run(struct tb5_rm_pair *pair, uint32_t max_steps);

/* A paused end stops consuming its RX ring, like a receiver that is busy. */
void tb5_rm_pause_rx(struct tb5_rm_pair *pair, int end, bool paused);

/* Pull the cable / plug it back in (both links go down / up). */
void tb5_rm_unplug(struct tb5_rm_pair *pair);
void tb5_rm_plug(struct tb5_rm_pair *pair);
bool tb5_rm_plugged(struct tb5_rm_pair *pair);

/* Descriptors in use on an end's rings. */
uint32_t tb5_rm_tx_used(struct tb5_rm_pair *pair, int end);
uint32_t tb5_rm_rx_used(struct tb5_rm_pair *pair, int end);
void tb5_rm_get_stats(struct tb5_rm_pair *pair, struct tb5_rm_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* TB5_RINGMODEL_H */
