// SPDX-License-Identifier: GPL-2.0-only
/*
 * tb5_cq.c - the completion queue a context shares with user space.
 *
 * One vmalloc_user() area holds struct tb5_cq_ring (the indices) and the
 * entries; user space maps it with mmap(). The module keeps its own producer
 * index and only publishes it (store-release) after the entry is written;
 * the consumer index comes from user space and is only trusted as far as it
 * is consistent, so a confused process can only confuse itself.
 *
 * Entries are promised before they can be produced: every posted operation
 * and every endpoint reserves what it may complete or raise, so production
 * never finds the queue full. The accounting, and the rules of when an entry
 * is promised, produced or given back, are the portable core's
 * (core/tb5_ctxrules.c), shared with libtb5's simulator; this file holds the
 * memory and the waiting.
 */
#include <linux/build_bug.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/version.h>
#include <linux/vmalloc.h>

#include "tb5_mod.h"

#define TB5_CQ_ENTRIES_OFFSET	sizeof(struct tb5_cq_ring)

struct tb5_cq *tb5_cq_create(u32 entries)
{
	struct tb5_cq_acct acct;
	struct tb5_cq *cq;
	int ret;

	BUILD_BUG_ON(TB5_UAPI_CQ_MIN != TB5_CQ_ENTRIES_MIN);
	BUILD_BUG_ON(TB5_UAPI_CQ_MAX != TB5_CQ_ENTRIES_MAX);
	ret = tb5_cq_acct_init(&acct, entries);
	if (ret)
		return ERR_PTR(ret);
	cq = kzalloc(sizeof(*cq), GFP_KERNEL);
	if (!cq)
		return ERR_PTR(-ENOMEM);
	cq->size = PAGE_ALIGN(TB5_CQ_ENTRIES_OFFSET +
			      (size_t)entries * sizeof(struct tb5_cqe));
	cq->ring = vmalloc_user(cq->size);
	if (!cq->ring) {
		kfree(cq);
		return ERR_PTR(-ENOMEM);
	}
	cq->entries = (struct tb5_cqe *)((u8 *)cq->ring + TB5_CQ_ENTRIES_OFFSET);
	cq->acct = acct;
	cq->ring->entries = entries;
	spin_lock_init(&cq->lock);
	init_waitqueue_head(&cq->wait);
	return cq;
}

void tb5_cq_destroy(struct tb5_cq *cq)
{
	if (!cq)
		return;
	vfree(cq->ring);
	kfree(cq);
}

/* The consumer's index, as user space left it; cq->lock held. */
u32 tb5_cq_head(struct tb5_cq *cq)
{
	lockdep_assert_held(&cq->lock);
	return READ_ONCE(cq->ring->head);
}

/*
 * Write the entry that the core's accounting produced at @index and
 * publish it; cq->lock held. tb5_cq_wake() after unlocking.
 */
void tb5_cq_write(struct tb5_cq *cq, u32 index, const struct tb5_cqe *cqe)
{
	lockdep_assert_held(&cq->lock);
	cq->entries[index] = *cqe;
	/* The entry is visible before the index that publishes it. */
	smp_store_release(&cq->ring->tail, cq->acct.tail);
}

/*
 * What the core's rules (core/tb5_ctxrules.h) work on: the queue's
 * accounting and an endpoint's rules, both covered by cq->lock, which the
 * rules expect held. Every call of a rule reaches them through these, so
 * lockdep checks each caller: producing, posting, releasing, unposting and
 * reading an endpoint's error alike.
 */
struct tb5_cq_acct *tb5_cq_rules_acct(struct tb5_cq *cq)
{
	lockdep_assert_held(&cq->lock);
	return &cq->acct;
}

struct tb5_ep_rules *tb5_kep_rules(struct tb5_kep *kep)
{
	lockdep_assert_held(&kep->ctx->cq->lock);
	return &kep->rules;
}

void tb5_cq_wake(struct tb5_cq *cq)
{
	wake_up_interruptible(&cq->wait);
}

bool tb5_cq_readable(struct tb5_cq *cq)
{
	bool readable;

	spin_lock_bh(&cq->lock);
	readable = tb5_cq_acct_used(tb5_cq_rules_acct(cq), tb5_cq_head(cq)) > 0;
	spin_unlock_bh(&cq->lock);
	return readable;
}

int tb5_cq_mmap(struct tb5_cq *cq, struct vm_area_struct *vma)
{
	unsigned long len = vma->vm_end - vma->vm_start;

	if (vma->vm_pgoff || len > cq->size)
		return -EINVAL;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
#endif
	return remap_vmalloc_range(vma, cq->ring, 0);
}
