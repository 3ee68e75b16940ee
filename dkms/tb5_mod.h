/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tb5_mod.h - the objects of tb5.ko around the transport core.
 *
 *   tb5_dev   one link end: a core link, a character device /dev/tb5_<n>,
 *             its sysfs attributes, and the backend that owns its rings
 *             (a loop pair, or a Thunderbolt cable: tb5_tb.c), reached
 *             through the backend's tb5_backend_ops; counted, so that a
 *             file left open across a hot-unplug keeps it alive
 *   tb5_ctx   one open() of a tb5_dev: memory regions, endpoints, the
 *             completion queue; all freed when the file is released
 *   tb5_mr    a registered memory region (pinned user pages or a dma-buf),
 *             mapped into the kernel so that the loop backend can read and
 *             the core can write it, and, where the backend has a DMA
 *             device (tb), mapped for that device so that TX frames are
 *             read straight from it (zero-copy transmit)
 *   tb5_kep   the module's side of a core endpoint: its handle, and its
 *             rules (core/tb5_ctxrules.h): slots for outstanding
 *             operations, the completion-queue entries it has reserved
 *   tb5_cq    the completion queue shared with user space
 */
#ifndef TB5_MOD_H
#define TB5_MOD_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "tb5_core.h"
#include "tb5_ctxrules.h"
#include "tb5_ringmodel.h"
#include "tb5_uapi.h"

#define TB5_MAX_LINKS		256	/* minors reserved for /dev/tb5_<n> */
#define TB5_DEV_INDEX_ANY	U32_MAX	/* tb5_dev_create(): the lowest free */
#define TB5_LOOPBACK_MAX	16	/* loop pairs */

extern unsigned int tb5_ring_size;
extern struct class tb5_class;
extern atomic64_t tb5_pinned_pages;

struct tb5_dev;

/**
 * struct tb5_backend_ops - what a link end asks of the backend that owns its
 * rings. Each backend fills one (tb5_loop.c, tb5_tb.c); tb5_dev.c and the
 * rest of the module reach backends only through it.
 * @name:	the backend's name in sysfs (`backend`)
 * @features:	TB5_FEATURE_* flags every link end of the backend has
 * @tx:		queue one frame on the end's TX ring; called by the core under
 *		its link lock, so it must not sleep. -ENOLINK once the backend
 *		has let go of the end (its @backend pointer is NULL).
 * @plugged:	optional: whether the end's cable is in (1) or out (0)
 * @set_plugged: optional: pull (false) or plug back (true) the end's cable;
 *		with @plugged, the `plugged` attribute appears
 * @dma_device:	optional: the device that reads TX frames by DMA. Regions
 *		registered on the end are mapped for it (tb5_dev_mr_attach())
 *		until the backend lets go (tb5_dev_detach_backend()), so that
 *		@tx can hand the device the region's own bytes. Called under
 *		the end's mr_lock with the backend present.
 */
struct tb5_backend_ops {
	const char *name;
	u32 features;
	int (*tx)(struct tb5_dev *dev, const struct tb5_tx_frame *frame);
	int (*plugged)(struct tb5_dev *dev);
	int (*set_plugged)(struct tb5_dev *dev, bool plugged);
	struct device *(*dma_device)(struct tb5_dev *dev);
};

/*
 * One link end. The backend creates it, publishes it, and lets go of it with
 * tb5_dev_destroy() once its rings are stopped; each open file holds a
 * reference too, and the core link is destroyed with the last one. An
 * unpublished end keeps working for the files still open on it: its link
 * is down, so their operations fail with -ENOLINK.
 */
struct tb5_dev {
	u32 index;			/* n of /dev/tb5_<n> */
	u64 host_id;
	struct tb5_link *link;
	struct cdev *cdev;		/* NULL until published */
	struct device *device;		/* NULL until published */
	struct device *parent;		/* sysfs parent: the tb service, or NULL */
	/* Attribute groups of the device; NULL: the common ones. */
	const struct attribute_group **groups;
	struct kref ref;		/* the backend's, and one per open file */
	bool published;			/* under tb5_devs' lock: open() may find it */
	bool indexed;			/* @index is reserved in tb5_devs */
	u32 speed_mbps;			/* the link's speed; 0: no wire (loop) */
	const struct tb5_backend_ops *ops;	/* set at creation, never NULL */
	/*
	 * The backend's own state for this end (a loop pair, a tb link);
	 * NULL once the backend has let go. Read with READ_ONCE(); written
	 * under mr_lock.
	 */
	void *backend;
	/*
	 * Regions of the end's files that are mapped for the backend's DMA
	 * device (tb5_mr.dma_node): unmapped when their file frees them or
	 * when the backend lets go, whichever comes first.
	 */
	struct mutex mr_lock;
	struct list_head dma_mrs;
};

/*
 * The completion queue. @lock, taken with bottom halves off, covers @acct
 * and the rules (tb5_kep.rules) of every endpoint of the context: the
 * core's rules of tb5_ctxrules.h run under it, and reach both through
 * tb5_cq_rules_acct() and tb5_kep_rules(), which assert it held.
 */
struct tb5_cq {
	spinlock_t lock;
	struct tb5_cq_ring *ring;	/* vmalloc_user(), mapped by mmap() */
	struct tb5_cqe *entries;
	size_t size;			/* bytes of the mapping */
	/* Size, producer index (the page's is a copy), promised entries. */
	struct tb5_cq_acct acct;
	wait_queue_head_t wait;
};

struct tb5_ctx {
	struct tb5_dev *dev;
	struct mutex lock;		/* ioctls of this file */
	struct xarray mrs;		/* handle -> struct tb5_mr */
	struct xarray eps;		/* handle -> struct tb5_kep */
	u32 next_ep;			/* the next endpoint handle to try */
	struct tb5_cq *cq;		/* NULL until TB5_IOC_CQ_CREATE */
	atomic_t live_eps;		/* core endpoints not yet released */
};

struct tb5_mr {
	void *kva;			/* start of the region in the kernel */
	u64 len;
	atomic_t inflight;		/* operations posted against it */
	/* Pinned user pages. */
	struct page **pages;
	unsigned long npages;
	void *vmap_base;		/* vmap() of pages, page aligned */
	struct mm_struct *mm;		/* whose locked_vm was charged */
	/* An imported dma-buf. */
	struct dma_buf *dmabuf;
	void *dmabuf_vaddr;
	u64 dmabuf_offset;		/* where the region starts in it */
	/*
	 * The region mapped for a backend's DMA device (tb5_mr_dma_map()),
	 * or dma_dev NULL: bus addresses of the region's pages, page 0 being
	 * the one that holds kva. Under the owning end's mr_lock.
	 */
	struct device *dma_dev;
	dma_addr_t *dma_pages;
	unsigned long dma_npages;
	u32 dma_first;			/* kva's offset in page 0 */
	struct sg_table *dma_sgt;	/* user pages: our table */
	struct dma_buf_attachment *dma_attach;	/* dma-buf: the exporter's */
	struct list_head dma_node;	/* on tb5_dev.dma_mrs while mapped */
};

struct tb5_kep {
	struct tb5_ctx *ctx;
	struct tb5_ep *ep;		/* the core's; NULL once closed */
	u32 handle;
	/* Operations (their regions: struct tb5_mr), credits; ctx->cq->lock. */
	struct tb5_ep_rules rules;
};

/* tb5_dev.c */
int tb5_dev_init(void);
void tb5_dev_exit(void);
struct tb5_dev *tb5_dev_create(u32 index, u64 host_id,
			       const struct tb5_backend_ops *ops, void *backend);
void tb5_dev_destroy(struct tb5_dev *dev);
int tb5_dev_publish(struct tb5_dev *dev);
void tb5_dev_unpublish(struct tb5_dev *dev);
struct tb5_dev *tb5_dev_get(unsigned int minor);
void tb5_dev_put(struct tb5_dev *dev);
void tb5_dev_mr_attach(struct tb5_dev *dev, struct tb5_mr *mr);
void tb5_dev_mr_detach(struct tb5_dev *dev, struct tb5_mr *mr);
void tb5_dev_detach_backend(struct tb5_dev *dev);
extern const struct tb5_link_ops tb5_dev_link_ops;
extern const struct attribute_group tb5_link_group;
extern const struct attribute_group tb5_drops_group;

/* tb5_ctx.c */
extern const struct file_operations tb5_fops;

/* tb5_mem.c */
int tb5_mr_reg_user(struct tb5_ctx *ctx, struct tb5_reg_mem *arg);
int tb5_mr_reg_dmabuf(struct tb5_ctx *ctx, struct tb5_reg_dmabuf *arg);
void tb5_mr_free(struct tb5_dev *dev, struct tb5_mr *mr);
int tb5_mr_dma_map(struct tb5_dev *dev, struct tb5_mr *mr,
		   struct device *dma_dev, const char **what);
void tb5_mr_dma_unmap(struct tb5_dev *dev, struct tb5_mr *mr);
bool tb5_mr_dma_range(const struct tb5_mr *mr, u64 offset, u32 len,
		      dma_addr_t *addr);
void tb5_mr_dma_sync_for_device(const struct tb5_mr *mr, u64 offset, u32 len);

/* tb5_cq.c */
struct tb5_cq *tb5_cq_create(u32 entries);
void tb5_cq_destroy(struct tb5_cq *cq);
u32 tb5_cq_head(struct tb5_cq *cq);
void tb5_cq_write(struct tb5_cq *cq, u32 index, const struct tb5_cqe *cqe);
struct tb5_cq_acct *tb5_cq_rules_acct(struct tb5_cq *cq);
struct tb5_ep_rules *tb5_kep_rules(struct tb5_kep *kep);
void tb5_cq_wake(struct tb5_cq *cq);
bool tb5_cq_readable(struct tb5_cq *cq);
int tb5_cq_mmap(struct tb5_cq *cq, struct vm_area_struct *vma);

/* tb5_loop.c */
int tb5_loop_init(unsigned int pairs, u32 first_index, u64 host_base);
void tb5_loop_exit(void);

/*
 * tb5_tb.c: the Thunderbolt backend. Kbuild builds it, and defines
 * TB5_TB_BACKEND, exactly when the kernel has the Thunderbolt bus
 * (IS_ENABLED(CONFIG_USB4)); without it tb5.ko has the loop backend only.
 */
#ifdef TB5_TB_BACKEND
int tb5_tb_init(void);
void tb5_tb_exit(void);
#else
static inline int tb5_tb_init(void)
{
	return 0;
}

static inline void tb5_tb_exit(void)
{
}
#endif

#endif /* TB5_MOD_H */
