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
 * Entries are promised before they can be produced (tb5_cq_reserve): every
 * posted operation and every endpoint reserves what it may complete or
 * raise, so production never finds the queue full.
 */
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/version.h>
#include <linux/vmalloc.h>

#include "tb5_mod.h"

#define TB5_CQ_ENTRIES_OFFSET	sizeof(struct tb5_cq_ring)

struct tb5_cq *tb5_cq_create(u32 entries)
{
	struct tb5_cq *cq;

	if (!is_power_of_2(entries) || entries < TB5_UAPI_CQ_MIN ||
	    entries > TB5_UAPI_CQ_MAX)
		return ERR_PTR(-EINVAL);
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
	cq->nentries = entries;
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

/* Entries user space has not consumed yet; lock held. */
static u32 cq_used(struct tb5_cq *cq)
{
	u32 used = cq->tail - READ_ONCE(cq->ring->head);

	/* A head that is ahead of the tail, or too far behind, is nonsense. */
	return used > cq->nentries ? cq->nentries : used;
}

int tb5_cq_reserve(struct tb5_cq *cq, u32 n)
{
	int ret = 0;

	spin_lock_bh(&cq->lock);
	if ((u64)cq_used(cq) + cq->reserved + n > cq->nentries)
		ret = -ENOSPC;
	else
		cq->reserved += n;
	spin_unlock_bh(&cq->lock);
	return ret;
}

void tb5_cq_unreserve(struct tb5_cq *cq, u32 n)
{
	spin_lock_bh(&cq->lock);
	cq->reserved -= min(n, cq->reserved);
	spin_unlock_bh(&cq->lock);
}

/* Produce one reserved entry and wake whoever polls. */
void tb5_cq_produce(struct tb5_cq *cq, const struct tb5_cqe *cqe)
{
	spin_lock_bh(&cq->lock);
	if (cq->reserved)
		cq->reserved--;
	cq->entries[cq->tail & (cq->nentries - 1)] = *cqe;
	cq->tail++;
	/* The entry is visible before the index that publishes it. */
	smp_store_release(&cq->ring->tail, cq->tail);
	spin_unlock_bh(&cq->lock);
	wake_up_interruptible(&cq->wait);
}

bool tb5_cq_readable(struct tb5_cq *cq)
{
	bool readable;

	spin_lock_bh(&cq->lock);
	readable = cq_used(cq) > 0;
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
