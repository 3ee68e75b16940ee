// SPDX-License-Identifier: GPL-2.0-only
/*
 * tb5_mem.c - memory registration: pinned user pages and imported dma-bufs.
 *
 * A region is mapped into the kernel once, at registration, so that the
 * loop backend can read transmitted frames and the core can write received
 * ones without touching page tables on the data path. User pages are pinned
 * with FOLL_LONGTERM (they stay put for as long as they are registered),
 * charged to the process's RLIMIT_MEMLOCK, and counted in the module-wide
 * pinned_pages. Deregistration and the file's release undo all of it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-buf.h>
#include <linux/iosys-map.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/version.h>
#include <linux/vmalloc.h>

#include "tb5_mod.h"

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
MODULE_IMPORT_NS("DMA_BUF");
#else
MODULE_IMPORT_NS(DMA_BUF);
#endif

/* Pages pinned per call: bounds the time one call holds the mmap lock. */
#define TB5_PIN_CHUNK		512

/* 6.2 made dma_buf_vmap() expect the reservation lock held by the caller. */
static int mr_dmabuf_vmap(struct dma_buf *buf, struct iosys_map *map)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
	return dma_buf_vmap_unlocked(buf, map);
#else
	return dma_buf_vmap(buf, map);
#endif
}

static void mr_dmabuf_vunmap(struct dma_buf *buf, struct iosys_map *map)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
	dma_buf_vunmap_unlocked(buf, map);
#else
	dma_buf_vunmap(buf, map);
#endif
}

static int mr_install(struct tb5_ctx *ctx, struct tb5_mr *mr, u32 *handle)
{
	return xa_alloc(&ctx->mrs, handle, mr, XA_LIMIT(1, INT_MAX),
			GFP_KERNEL);
}

static void mr_unpin(struct tb5_mr *mr, unsigned long pinned)
{
	/* The module may have written any page: mark them dirty. */
	unpin_user_pages_dirty_lock(mr->pages, pinned, true);
}

int tb5_mr_reg_user(struct tb5_ctx *ctx, struct tb5_reg_mem *arg)
{
	unsigned long first, last, npages, done = 0;
	struct tb5_mr *mr;
	int ret;

	if (arg->flags)
		return -EINVAL;
	if (!arg->len || arg->len > TB5_UAPI_MSG_MAX ||
	    arg->addr + arg->len < arg->addr)
		return -EINVAL;
	if (!current->mm)
		return -EFAULT;
	first = arg->addr & PAGE_MASK;
	last = (arg->addr + arg->len - 1) & PAGE_MASK;
	npages = ((last - first) >> PAGE_SHIFT) + 1;
	if (npages > totalram_pages())
		return -ENOMEM;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return -ENOMEM;
	mr->pages = kvcalloc(npages, sizeof(*mr->pages), GFP_KERNEL);
	if (!mr->pages) {
		ret = -ENOMEM;
		goto err_free_mr;
	}
	mmgrab(current->mm);
	mr->mm = current->mm;
	ret = account_locked_vm(mr->mm, npages, true);
	if (ret)
		goto err_drop_mm;

	while (done < npages) {
		int n = pin_user_pages_fast(first + done * PAGE_SIZE,
					    min_t(unsigned long, npages - done,
						  TB5_PIN_CHUNK),
					    FOLL_WRITE | FOLL_LONGTERM,
					    mr->pages + done);

		if (n <= 0) {
			ret = n ? n : -EFAULT;
			goto err_unpin;
		}
		done += n;
	}
	mr->vmap_base = vmap(mr->pages, npages, VM_MAP, PAGE_KERNEL);
	if (!mr->vmap_base) {
		ret = -ENOMEM;
		goto err_unpin;
	}
	mr->npages = npages;
	mr->kva = (u8 *)mr->vmap_base + (arg->addr & ~PAGE_MASK);
	mr->len = arg->len;

	ret = mr_install(ctx, mr, &arg->handle);
	if (ret)
		goto err_vunmap;
	atomic64_add(npages, &tb5_pinned_pages);
	return 0;

err_vunmap:
	vunmap(mr->vmap_base);
err_unpin:
	mr_unpin(mr, done);
	account_locked_vm(mr->mm, npages, false);
err_drop_mm:
	mmdrop(mr->mm);
	kvfree(mr->pages);
err_free_mr:
	kfree(mr);
	return ret;
}

int tb5_mr_reg_dmabuf(struct tb5_ctx *ctx, struct tb5_reg_dmabuf *arg)
{
	struct iosys_map map;
	struct dma_buf *buf;
	struct tb5_mr *mr;
	int ret;

	if (arg->flags || arg->pad)
		return -EINVAL;
	if (!arg->len || !PAGE_ALIGNED(arg->offset))
		return -EINVAL;
	buf = dma_buf_get(arg->fd);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	if (arg->offset > buf->size || arg->len > buf->size - arg->offset) {
		ret = -EINVAL;
		goto err_put;
	}
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr) {
		ret = -ENOMEM;
		goto err_put;
	}
	ret = mr_dmabuf_vmap(buf, &map);
	if (ret)
		goto err_free_mr;
	if (map.is_iomem) {
		/* The loop backend copies with the CPU: I/O memory won't do. */
		ret = -EOPNOTSUPP;
		goto err_vunmap;
	}
	mr->dmabuf = buf;
	mr->dmabuf_vaddr = map.vaddr;
	mr->kva = (u8 *)map.vaddr + arg->offset;
	mr->len = arg->len;
	ret = mr_install(ctx, mr, &arg->handle);
	if (ret)
		goto err_vunmap;
	return 0;

err_vunmap:
	mr_dmabuf_vunmap(buf, &map);
err_free_mr:
	kfree(mr);
err_put:
	dma_buf_put(buf);
	return ret;
}

/* Undo a registration; nothing may use the region any more. */
void tb5_mr_free(struct tb5_mr *mr)
{
	if (mr->dmabuf) {
		struct iosys_map map = IOSYS_MAP_INIT_VADDR(mr->dmabuf_vaddr);

		mr_dmabuf_vunmap(mr->dmabuf, &map);
		dma_buf_put(mr->dmabuf);
	} else {
		vunmap(mr->vmap_base);
		mr_unpin(mr, mr->npages);
		account_locked_vm(mr->mm, mr->npages, false);
		mmdrop(mr->mm);
		kvfree(mr->pages);
		atomic64_sub(mr->npages, &tb5_pinned_pages);
	}
	kfree(mr);
}
