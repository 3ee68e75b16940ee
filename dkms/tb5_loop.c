// SPDX-License-Identifier: GPL-2.0-only
/*
 * tb5_loop.c - the loop backend: pairs of link ends wired back to back.
 *
 * Each pair is the core's ring model (tb5_ringmodel): two NHI-like rings of
 * ring_size descriptors per end, 4 KiB frames, end-to-end flow control. A
 * work item plays the DMA engine and the interrupt handler: it steps the
 * model until it is idle, so completions and received frames always reach
 * the core from the work item, never inline in the caller that queued a
 * frame. Writing 0 to either end's `plugged` attribute pulls the pair's
 * cable: every frame on its rings is lost and both links go down; 1 plugs it
 * back in and both links say hello again.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/workqueue.h>

#include "tb5_mod.h"

/* Frames moved per end and direction before the work item yields. */
#define TB5_LOOP_BUDGET		64

struct tb5_loop_pair {
	struct tb5_rm_pair *rm;
	struct tb5_dev *ends[2];
	struct work_struct work;
	struct mutex plug_lock;		/* serialises unplug and plug */
};

static struct workqueue_struct *tb5_loop_wq;
static struct tb5_loop_pair **tb5_pairs;
static unsigned int tb5_npairs;

/* A payload reference from the core: a region and an offset in it. */
static const void *loop_resolve(void *priv, const struct tb5_mem *mem,
				uint32_t len)
{
	struct tb5_mr *mr = mem->region;

	if (!mr || mem->offset > mr->len || len > mr->len - mem->offset)
		return NULL;
	return (const u8 *)mr->kva + mem->offset;
}

static void loop_work(struct work_struct *work)
{
	struct tb5_loop_pair *pair = container_of(work, struct tb5_loop_pair,
						  work);

	while (tb5_rm_step(pair->rm, TB5_LOOP_BUDGET))
		cond_resched();
}

/* Which of its pair's two ends @dev is. */
static int loop_end(const struct tb5_loop_pair *pair, const struct tb5_dev *dev)
{
	return pair->ends[1] == dev;
}

static int loop_tx(struct tb5_dev *dev, const struct tb5_tx_frame *frame)
{
	struct tb5_loop_pair *pair = dev->backend;
	int ret;

	/* The pair outlives its ends' links: this only guards the contract. */
	if (!pair)
		return -ENOLINK;
	ret = tb5_rm_tx(pair->rm, loop_end(pair, dev), frame);
	if (!ret)
		queue_work(tb5_loop_wq, &pair->work);
	return ret;
}

static int loop_plugged(struct tb5_dev *dev)
{
	struct tb5_loop_pair *pair = dev->backend;

	return pair && tb5_rm_plugged(pair->rm);
}

static int loop_set_plugged(struct tb5_dev *dev, bool plugged)
{
	struct tb5_loop_pair *pair = dev->backend;

	if (!pair)
		return -ENODEV;
	mutex_lock(&pair->plug_lock);
	if (plugged) {
		tb5_rm_plug(pair->rm);
		queue_work(tb5_loop_wq, &pair->work);
	} else {
		tb5_rm_unplug(pair->rm);
	}
	mutex_unlock(&pair->plug_lock);
	return 0;
}

static const struct tb5_backend_ops tb5_loop_ops = {
	.name = "loop",
	.features = TB5_FEATURE_LOOP,
	.tx = loop_tx,
	.plugged = loop_plugged,
	.set_plugged = loop_set_plugged,
};

static void loop_pair_destroy(struct tb5_loop_pair *pair)
{
	int i;

	/* No sysfs writer and no opener may race with the teardown. */
	for (i = 0; i < 2; i++)
		tb5_dev_unpublish(pair->ends[i]);
	tb5_rm_unplug(pair->rm);
	cancel_work_sync(&pair->work);
	for (i = 0; i < 2; i++) {
		tb5_rm_attach(pair->rm, i, NULL);
		if (!pair->ends[i])
			continue;
		/* A file still open keeps the end, not the pair. */
		tb5_dev_detach_backend(pair->ends[i]);
		tb5_dev_destroy(pair->ends[i]);
	}
	tb5_rm_destroy(pair->rm);
	mutex_destroy(&pair->plug_lock);
	kfree(pair);
}

static struct tb5_loop_pair *loop_pair_create(u32 first_index, u64 host_base)
{
	struct tb5_loop_pair *pair;
	int i, ret;

	pair = kzalloc(sizeof(*pair), GFP_KERNEL);
	if (!pair)
		return ERR_PTR(-ENOMEM);
	INIT_WORK(&pair->work, loop_work);
	mutex_init(&pair->plug_lock);
	ret = tb5_rm_create(tb5_ring_size, loop_resolve, NULL, &pair->rm);
	if (ret)
		goto err_free;
	for (i = 0; i < 2; i++) {
		struct tb5_dev *dev = tb5_dev_create(first_index + i,
						     host_base | (first_index + i),
						     &tb5_loop_ops, pair);

		if (IS_ERR(dev)) {
			ret = PTR_ERR(dev);
			goto err_destroy;
		}
		pair->ends[i] = dev;
		tb5_rm_attach(pair->rm, i, dev->link);
	}
	for (i = 0; i < 2; i++) {
		ret = tb5_dev_publish(pair->ends[i]);
		if (ret)
			goto err_destroy;
	}
	/* The rings run: both ends say hello. */
	tb5_link_up(pair->ends[0]->link);
	tb5_link_up(pair->ends[1]->link);
	queue_work(tb5_loop_wq, &pair->work);
	return pair;

err_destroy:
	loop_pair_destroy(pair);
	return ERR_PTR(ret);
err_free:
	mutex_destroy(&pair->plug_lock);
	kfree(pair);
	return ERR_PTR(ret);
}

int tb5_loop_init(unsigned int pairs, u32 first_index, u64 host_base)
{
	unsigned int i;
	int ret;

	if (!pairs)
		return 0;
	tb5_loop_wq = alloc_workqueue("tb5_loop", WQ_UNBOUND, 0);
	if (!tb5_loop_wq)
		return -ENOMEM;
	tb5_pairs = kcalloc(pairs, sizeof(*tb5_pairs), GFP_KERNEL);
	if (!tb5_pairs) {
		ret = -ENOMEM;
		goto err_wq;
	}
	for (i = 0; i < pairs; i++) {
		struct tb5_loop_pair *pair;

		pair = loop_pair_create(first_index + 2 * i, host_base);
		if (IS_ERR(pair)) {
			ret = PTR_ERR(pair);
			goto err_pairs;
		}
		tb5_pairs[i] = pair;
		tb5_npairs = i + 1;
	}
	return 0;

err_pairs:
	tb5_loop_exit();
	return ret;
err_wq:
	destroy_workqueue(tb5_loop_wq);
	tb5_loop_wq = NULL;
	return ret;
}

void tb5_loop_exit(void)
{
	unsigned int i;

	for (i = tb5_npairs; i > 0; i--)
		loop_pair_destroy(tb5_pairs[i - 1]);
	tb5_npairs = 0;
	kfree(tb5_pairs);
	tb5_pairs = NULL;
	if (tb5_loop_wq)
		destroy_workqueue(tb5_loop_wq);
	tb5_loop_wq = NULL;
}
