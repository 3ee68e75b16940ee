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
#include <linux/dma-mapping.h>
#include <linux/iosys-map.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
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

/* The same change for mapping an attachment. */
static struct sg_table *mr_dmabuf_map(struct dma_buf_attachment *attach)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
	return dma_buf_map_attachment_unlocked(attach, DMA_TO_DEVICE);
#else
	return dma_buf_map_attachment(attach, DMA_TO_DEVICE);
#endif
}

static void mr_dmabuf_unmap(struct dma_buf_attachment *attach,
			    struct sg_table *sgt)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
	dma_buf_unmap_attachment_unlocked(attach, sgt, DMA_TO_DEVICE);
#else
	dma_buf_unmap_attachment(attach, sgt, DMA_TO_DEVICE);
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

	tb5_dev_mr_attach(ctx->dev, mr);
	ret = mr_install(ctx, mr, &arg->handle);
	if (ret)
		goto err_detach;
	atomic64_add(npages, &tb5_pinned_pages);
	return 0;

err_detach:
	tb5_dev_mr_detach(ctx->dev, mr);
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
	mr->dmabuf_offset = arg->offset;
	mr->kva = (u8 *)map.vaddr + arg->offset;
	mr->len = arg->len;
	tb5_dev_mr_attach(ctx->dev, mr);
	ret = mr_install(ctx, mr, &arg->handle);
	if (ret)
		goto err_detach;
	return 0;

err_detach:
	tb5_dev_mr_detach(ctx->dev, mr);
err_vunmap:
	mr_dmabuf_vunmap(buf, &map);
err_free_mr:
	kfree(mr);
err_put:
	dma_buf_put(buf);
	return ret;
}

/* Undo a registration of @dev's; nothing may use the region any more. */
void tb5_mr_free(struct tb5_dev *dev, struct tb5_mr *mr)
{
	tb5_dev_mr_detach(dev, mr);
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

/* -- bus addresses for zero-copy transmit --------------------------------- */

/*
 * Record the bus address of each of the @n pages that the mapped table
 * @sgt holds from its page @skip on. Every DMA segment must cover whole
 * pages (ours always do; an exporter's might not): -EOPNOTSUPP otherwise.
 */
static int mr_dma_pages(struct tb5_mr *mr, struct sg_table *sgt,
			unsigned long skip, unsigned long n)
{
	unsigned long page = 0, k;
	struct scatterlist *sg;
	unsigned int i;

	mr->dma_pages = kvcalloc(n, sizeof(*mr->dma_pages), GFP_KERNEL);
	if (!mr->dma_pages)
		return -ENOMEM;
	for_each_sgtable_dma_sg(sgt, sg, i) {
		dma_addr_t addr = sg_dma_address(sg);
		unsigned int len = sg_dma_len(sg);

		if (!PAGE_ALIGNED(len))
			goto unsupported;
		for (k = 0; k < len >> PAGE_SHIFT; k++, page++)
			if (page >= skip && page - skip < n)
				mr->dma_pages[page - skip] =
					addr + ((dma_addr_t)k << PAGE_SHIFT);
	}
	if (page < skip + n)
		goto unsupported;
	mr->dma_npages = n;
	return 0;

unsupported:
	kvfree(mr->dma_pages);
	mr->dma_pages = NULL;
	return -EOPNOTSUPP;
}

/* The longest DMA segment @dev takes, in whole pages. */
static unsigned int mr_max_segment(struct device *dev)
{
	size_t max = min_t(size_t, dma_max_mapping_size(dev),
			   dma_get_max_seg_size(dev));

	max = min_t(size_t, max, UINT_MAX) & PAGE_MASK;
	return max ? max : PAGE_SIZE;
}

static int mr_dma_map_user(struct tb5_mr *mr, struct device *dma_dev,
			   const char **what)
{
	struct sg_table *sgt;
	int ret;

	*what = "the scatter-gather table";
	if (mr->npages > UINT_MAX)
		return -EOVERFLOW;
	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return -ENOMEM;
	/* Whole pages, so that every segment starts and ends on one. */
	ret = sg_alloc_table_from_pages_segment(sgt, mr->pages, mr->npages, 0,
						mr->npages << PAGE_SHIFT,
						mr_max_segment(dma_dev),
						GFP_KERNEL);
	if (ret)
		goto err_free;
	/* Out of bounce or IOMMU space is not worth a warning: we copy. */
	*what = "dma_map_sgtable()";
	ret = dma_map_sgtable(dma_dev, sgt, DMA_TO_DEVICE, DMA_ATTR_NO_WARN);
	if (ret)
		goto err_table;
	*what = "the bus addresses of its pages";
	ret = mr_dma_pages(mr, sgt, 0, mr->npages);
	if (ret)
		goto err_unmap;
	mr->dma_sgt = sgt;
	mr->dma_first = offset_in_page(mr->kva);
	return 0;

err_unmap:
	dma_unmap_sgtable(dma_dev, sgt, DMA_TO_DEVICE, 0);
err_table:
	sg_free_table(sgt);
err_free:
	kfree(sgt);
	return ret;
}

static int mr_dma_map_dmabuf(struct tb5_mr *mr, struct device *dma_dev,
			     const char **what)
{
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;
	int ret;

	*what = "dma_buf_attach()";
	attach = dma_buf_attach(mr->dmabuf, dma_dev);
	if (IS_ERR(attach))
		return PTR_ERR(attach);
	/* The exporter maps its own pages, as it chooses to. */
	*what = "the exporter's dma_buf_map_attachment()";
	sgt = mr_dmabuf_map(attach);
	if (IS_ERR(sgt)) {
		ret = PTR_ERR(sgt);
		goto err_detach;
	}
	/* Registration checked that the offset is page aligned. */
	*what = "the bus addresses of its pages (segments not whole pages)";
	ret = mr_dma_pages(mr, sgt, mr->dmabuf_offset >> PAGE_SHIFT,
			   DIV_ROUND_UP(mr->len, PAGE_SIZE));
	if (ret)
		goto err_unmap;
	mr->dma_attach = attach;
	mr->dma_sgt = sgt;
	mr->dma_first = 0;
	return 0;

err_unmap:
	mr_dmabuf_unmap(attach, sgt);
err_detach:
	dma_buf_detach(mr->dmabuf, attach);
	return ret;
}

/*
 * Map @mr, a region of @dev, for @dma_dev, which reads TX frames from it;
 * under @dev's mr_lock. On failure *@what names the step that failed, for
 * the log.
 */
int tb5_mr_dma_map(struct tb5_dev *dev, struct tb5_mr *mr,
		   struct device *dma_dev, const char **what)
{
	int ret;

	lockdep_assert_held(&dev->mr_lock);
	*what = "the region";
	if (mr->dma_dev)
		return -EBUSY;
	ret = mr->dmabuf ? mr_dma_map_dmabuf(mr, dma_dev, what) :
			   mr_dma_map_user(mr, dma_dev, what);
	if (!ret)
		mr->dma_dev = dma_dev;
	return ret;
}

/*
 * Undo tb5_mr_dma_map(), under @dev's mr_lock; no frame of the region may
 * be on a ring.
 */
void tb5_mr_dma_unmap(struct tb5_dev *dev, struct tb5_mr *mr)
{
	lockdep_assert_held(&dev->mr_lock);
	if (!mr->dma_dev)
		return;
	if (mr->dma_attach) {
		mr_dmabuf_unmap(mr->dma_attach, mr->dma_sgt);
		dma_buf_detach(mr->dmabuf, mr->dma_attach);
		mr->dma_attach = NULL;
	} else {
		dma_unmap_sgtable(mr->dma_dev, mr->dma_sgt, DMA_TO_DEVICE, 0);
		sg_free_table(mr->dma_sgt);
		kfree(mr->dma_sgt);
	}
	mr->dma_sgt = NULL;
	kvfree(mr->dma_pages);
	mr->dma_pages = NULL;
	mr->dma_npages = 0;
	mr->dma_dev = NULL;
}

/*
 * The bus address of @len bytes at @offset in @mr, when the device can
 * read them in one piece: the region is mapped, and the bytes lie in one
 * page or in pages whose bus addresses follow each other. The caller
 * checked the range against the region.
 */
bool tb5_mr_dma_range(const struct tb5_mr *mr, u64 offset, u32 len,
		      dma_addr_t *addr)
{
	unsigned long first, last, i;
	u64 pos;

	if (!mr->dma_dev || !len || offset > mr->len ||
	    len > mr->len - offset)
		return false;
	pos = mr->dma_first + offset;
	first = pos >> PAGE_SHIFT;
	last = (pos + len - 1) >> PAGE_SHIFT;
	if (last >= mr->dma_npages)
		return false;
	for (i = first; i < last; i++)
		if (mr->dma_pages[i] + PAGE_SIZE != mr->dma_pages[i + 1])
			return false;
	*addr = mr->dma_pages[first] + offset_in_page(pos);
	return true;
}

/*
 * Make what the CPU wrote to @len bytes at @offset in @mr visible to the
 * device, a page at a time: adjacent bus addresses may still belong to two
 * mappings (two pages bounced by swiotlb into adjacent slots), and a sync
 * must not run past the mapping it starts in. tb5_mr_dma_range() said yes.
 */
void tb5_mr_dma_sync_for_device(const struct tb5_mr *mr, u64 offset, u32 len)
{
	u64 pos = mr->dma_first + offset;

	while (len) {
		u32 in_page = offset_in_page(pos);
		u32 n = min_t(u32, len, PAGE_SIZE - in_page);

		dma_sync_single_for_device(mr->dma_dev,
					   mr->dma_pages[pos >> PAGE_SHIFT] +
					   in_page, n, DMA_TO_DEVICE);
		pos += n;
		len -= n;
	}
}
