// SPDX-License-Identifier: GPL-2.0-only
/*
 * tb5_dev.c - link ends: the tb5 class, /dev/tb5_<n>, sysfs attributes and
 * the callbacks through which the core reaches the backend and the owner.
 *
 * sysfs, per link end (/sys/class/tb5/tb5_<n>/):
 *   state      down | up | ready
 *   peer_id    the peer's host id (hex), or "none" before it said hello
 *   host_id    this end's host id (hex)
 *   ring_size  descriptors per ring
 *   speed_mbps link speed; 0 when the backend has no wire (loop)
 *   backend    loop | tb
 *   tx_frames tx_bytes rx_frames rx_bytes errors   counters
 *   plugged    loop ends only: 0/1, writing 0 pulls the pair's cable
 * (tb links add their own: tb5_tb.c), and for the module (/sys/class/tb5/):
 *   pinned_pages  user pages pinned by all contexts now
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/version.h>
#include <linux/wait_bit.h>
#include <linux/xarray.h>

#include "tb5_mod.h"

atomic64_t tb5_pinned_pages = ATOMIC64_INIT(0);
static dev_t tb5_devt;
/*
 * Index (minor) -> link end. An index is taken at creation and given back
 * when the end is unpublished, so that a cable plugged in again may get its
 * number back while a file still holds the old end. open() finds ends here,
 * under the array's lock, and only published ones.
 */
static DEFINE_XARRAY_ALLOC(tb5_devs);

static ssize_t pinned_pages_show(const struct class *class,
				 const struct class_attribute *attr, char *buf);

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 4, 0)
/* Before 6.4 class callbacks took non-const pointers. */
static ssize_t pinned_pages_show_old(struct class *class,
				     struct class_attribute *attr, char *buf)
{
	return pinned_pages_show(class, attr, buf);
}
static struct class_attribute class_attr_pinned_pages =
	__ATTR(pinned_pages, 0444, pinned_pages_show_old, NULL);
#else
static CLASS_ATTR_RO(pinned_pages);
#endif

static ssize_t pinned_pages_show(const struct class *class,
				 const struct class_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&tb5_pinned_pages));
}

static struct attribute *tb5_class_attrs[] = {
	&class_attr_pinned_pages.attr,
	NULL,
};
ATTRIBUTE_GROUPS(tb5_class);

struct class tb5_class = {
	.name = "tb5",
	.class_groups = tb5_class_groups,
};

/* -- per link attributes ------------------------------------------------- */

static struct tb5_dev *to_tb5(struct device *d)
{
	return dev_get_drvdata(d);
}

static ssize_t state_show(struct device *d, struct device_attribute *a,
			  char *buf)
{
	static const char *const names[] = { "down", "up", "ready" };
	enum tb5_link_state st = tb5_link_state(to_tb5(d)->link);

	return sysfs_emit(buf, "%s\n", st <= TB5_LINK_READY ? names[st] : "?");
}
static DEVICE_ATTR_RO(state);

static ssize_t peer_id_show(struct device *d, struct device_attribute *a,
			    char *buf)
{
	u64 peer;

	if (tb5_link_peer(to_tb5(d)->link, &peer))
		return sysfs_emit(buf, "none\n");
	return sysfs_emit(buf, "%#llx\n", peer);
}
static DEVICE_ATTR_RO(peer_id);

static ssize_t host_id_show(struct device *d, struct device_attribute *a,
			    char *buf)
{
	return sysfs_emit(buf, "%#llx\n", to_tb5(d)->host_id);
}
static DEVICE_ATTR_RO(host_id);

static ssize_t ring_size_show(struct device *d, struct device_attribute *a,
			      char *buf)
{
	return sysfs_emit(buf, "%u\n", tb5_ring_size);
}
static DEVICE_ATTR_RO(ring_size);

static ssize_t speed_mbps_show(struct device *d, struct device_attribute *a,
			       char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_tb5(d)->speed_mbps));
}
static DEVICE_ATTR_RO(speed_mbps);

static ssize_t backend_show(struct device *d, struct device_attribute *a,
			    char *buf)
{
	return sysfs_emit(buf, "%s\n", to_tb5(d)->ops->name);
}
static DEVICE_ATTR_RO(backend);

#define TB5_STAT_ATTR(name, expr)					\
static ssize_t name##_show(struct device *d, struct device_attribute *a, \
			   char *buf)					\
{									\
	struct tb5_link_stats st;					\
									\
	tb5_link_get_stats(to_tb5(d)->link, &st);			\
	return sysfs_emit(buf, "%llu\n", (unsigned long long)(expr));	\
}									\
static DEVICE_ATTR_RO(name)

TB5_STAT_ATTR(tx_frames, st.tx_frames);
TB5_STAT_ATTR(tx_bytes, st.tx_bytes);
TB5_STAT_ATTR(rx_frames, st.rx_frames);
TB5_STAT_ATTR(rx_bytes, st.rx_bytes);
TB5_STAT_ATTR(errors, st.rx_errors);

/* drops/<kind>: received frames dropped or refused, by why. */
TB5_STAT_ATTR(malformed, st.drops[TB5_DROP_MALFORMED]);
TB5_STAT_ATTR(unknown_connection, st.drops[TB5_DROP_UNKNOWN_CONN]);
TB5_STAT_ATTR(out_of_window, st.drops[TB5_DROP_OUT_OF_WINDOW]);
TB5_STAT_ATTR(ring_overflow, st.drops[TB5_DROP_OVERFLOW]);
TB5_STAT_ATTR(sequence_gap, st.drops[TB5_DROP_SEQ_GAP]);

static struct attribute *tb5_drops_attrs[] = {
	&dev_attr_malformed.attr,
	&dev_attr_unknown_connection.attr,
	&dev_attr_out_of_window.attr,
	&dev_attr_ring_overflow.attr,
	&dev_attr_sequence_gap.attr,
	NULL,
};

const struct attribute_group tb5_drops_group = {
	.name = "drops",
	.attrs = tb5_drops_attrs,
};

static ssize_t plugged_show(struct device *d, struct device_attribute *a,
			    char *buf)
{
	struct tb5_dev *dev = to_tb5(d);

	return sysfs_emit(buf, "%d\n", dev->ops->plugged(dev));
}

static ssize_t plugged_store(struct device *d, struct device_attribute *a,
			     const char *buf, size_t count)
{
	struct tb5_dev *dev = to_tb5(d);
	bool plugged;
	int ret = kstrtobool(buf, &plugged);

	if (ret)
		return ret;
	ret = dev->ops->set_plugged(dev, plugged);
	return ret ? ret : count;
}
static DEVICE_ATTR_RW(plugged);

static struct attribute *tb5_link_attrs[] = {
	&dev_attr_state.attr,
	&dev_attr_peer_id.attr,
	&dev_attr_host_id.attr,
	&dev_attr_ring_size.attr,
	&dev_attr_speed_mbps.attr,
	&dev_attr_backend.attr,
	&dev_attr_tx_frames.attr,
	&dev_attr_tx_bytes.attr,
	&dev_attr_rx_frames.attr,
	&dev_attr_rx_bytes.attr,
	&dev_attr_errors.attr,
	&dev_attr_plugged.attr,
	NULL,
};

static umode_t tb5_link_attr_visible(struct kobject *kobj,
				     struct attribute *attr, int n)
{
	struct tb5_dev *dev = to_tb5(kobj_to_dev(kobj));

	if (attr == &dev_attr_plugged.attr &&
	    !(dev->ops->plugged && dev->ops->set_plugged))
		return 0;
	return attr->mode;
}

const struct attribute_group tb5_link_group = {
	.attrs = tb5_link_attrs,
	.is_visible = tb5_link_attr_visible,
};

static const struct attribute_group *tb5_link_groups[] = {
	&tb5_link_group,
	&tb5_drops_group,
	NULL,
};

/* -- the core's callbacks ------------------------------------------------ */

static int tb5_dev_tx(void *priv, const struct tb5_tx_frame *frame)
{
	struct tb5_dev *dev = priv;

	return dev->ops->tx(dev, frame);
}

static int tb5_dev_copy_to(void *priv, const struct tb5_mem *dst,
			   const void *src, uint32_t len)
{
	struct tb5_mr *mr = dst->region;

	/* The core checked the range against the posted receive; so did post. */
	if (!mr || dst->offset > mr->len || len > mr->len - dst->offset)
		return -EFAULT;
	memcpy((u8 *)mr->kva + dst->offset, src, len);
	return 0;
}

static void tb5_dev_complete(void *priv, void *ep_ctx,
			     const struct tb5_completion *c)
{
	struct tb5_kep *kep = ep_ctx;
	struct tb5_cq *cq = kep->ctx->cq;
	struct tb5_cqe ucqe = {};
	struct tb5_mr *mr;
	void *region;
	u32 index;
	int ret;

	ucqe.bytes = c->bytes;
	ucqe.status = c->status;
	ucqe.tag = c->tag;
	ucqe.op = c->op == TB5_COMPLETION_SEND ? TB5_CQE_SEND : TB5_CQE_RECV;
	ucqe.ep = kep->handle;
	spin_lock_bh(&cq->lock);
	/* The entry was reserved when the operation was posted. */
	ret = tb5_ep_rules_complete(tb5_kep_rules(kep), tb5_cq_rules_acct(cq),
				    tb5_cq_head(cq), c->user_id,
				    &ucqe.user_data, &region, &index);
	if (ret == -EINVAL) {
		spin_unlock_bh(&cq->lock);
		return;		/* no such operation: nothing to free */
	}
	mr = region;
	atomic_dec(&mr->inflight);
	if (!ret)
		tb5_cq_write(cq, index, &ucqe);
	spin_unlock_bh(&cq->lock);
	if (!ret)
		tb5_cq_wake(cq);
}

static void tb5_dev_event(void *priv, void *ep_ctx, enum tb5_event ev,
			  int status)
{
	struct tb5_kep *kep = ep_ctx;
	struct tb5_ctx *ctx = kep->ctx;
	struct tb5_cq *cq = ctx->cq;
	struct tb5_cqe ucqe = {};
	u32 index;
	int raise;

	if (ev == TB5_EV_RELEASED) {
		spin_lock_bh(&cq->lock);
		tb5_ep_rules_release(tb5_kep_rules(kep), tb5_cq_rules_acct(cq));
		spin_unlock_bh(&cq->lock);
		kfree(kep);
		/*
		 * tb5_release() may free @ctx as soon as the count reaches
		 * zero: wake_up_var() only hashes the address, it does not
		 * touch @ctx.
		 */
		if (atomic_dec_and_test(&ctx->live_eps))
			wake_up_var(&ctx->live_eps);
		return;
	}

	ucqe.status = status;
	ucqe.op = TB5_CQE_EVENT;
	ucqe.ep = kep->handle;
	switch (ev) {
	case TB5_EV_CONNECTED:
		ucqe.event = TB5_EVENT_CONNECTED;
		break;
	case TB5_EV_INCOMING:
		ucqe.event = TB5_EVENT_INCOMING;
		break;
	case TB5_EV_PEER_CLOSED:
		ucqe.event = TB5_EVENT_PEER_CLOSED;
		break;
	default:
		ucqe.event = TB5_EVENT_ERROR;
		break;
	}
	spin_lock_bh(&cq->lock);
	/* One INCOMING at a time, and only with a credit: the core's rules. */
	raise = tb5_ep_rules_event(tb5_kep_rules(kep), tb5_cq_rules_acct(cq),
				   tb5_cq_head(cq), ev, status, &index);
	if (raise > 0)
		tb5_cq_write(cq, index, &ucqe);
	spin_unlock_bh(&cq->lock);
	if (raise > 0)
		tb5_cq_wake(cq);
}

const struct tb5_link_ops tb5_dev_link_ops = {
	.tx = tb5_dev_tx,
	.copy_to = tb5_dev_copy_to,
	.complete = tb5_dev_complete,
	.event = tb5_dev_event,
};

/* -- lifecycle ----------------------------------------------------------- */

/*
 * A new link end of the backend @ops, with a reference for the caller.
 * @index is the n of /dev/tb5_<n>, or TB5_DEV_INDEX_ANY for the lowest free
 * one; @backend is the backend's state for the end (dev->backend).
 */
struct tb5_dev *tb5_dev_create(u32 index, u64 host_id,
			       const struct tb5_backend_ops *ops, void *backend)
{
	struct tb5_link_config cfg = {
		.ring_size = tb5_ring_size,
		.host_id = host_id,
	};
	struct tb5_dev *dev;
	int ret;

	if (index != TB5_DEV_INDEX_ANY && index >= TB5_MAX_LINKS)
		return ERR_PTR(-ENOSPC);
	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return ERR_PTR(-ENOMEM);
	kref_init(&dev->ref);
	mutex_init(&dev->mr_lock);
	INIT_LIST_HEAD(&dev->dma_mrs);
	dev->host_id = host_id;
	dev->ops = ops;
	dev->backend = backend;
	if (index == TB5_DEV_INDEX_ANY)
		ret = xa_alloc(&tb5_devs, &dev->index, dev,
			       XA_LIMIT(0, TB5_MAX_LINKS - 1), GFP_KERNEL);
	else
		ret = xa_insert(&tb5_devs, index, dev, GFP_KERNEL);
	if (ret) {
		kfree(dev);
		return ERR_PTR(ret == -EBUSY ? -ENOSPC : ret);
	}
	if (index != TB5_DEV_INDEX_ANY)
		dev->index = index;
	dev->indexed = true;
	ret = tb5_link_create(&cfg, &tb5_dev_link_ops, dev, &dev->link);
	if (ret) {
		xa_erase(&tb5_devs, dev->index);
		kfree(dev);
		return ERR_PTR(ret);
	}
	return dev;
}

/* Make /dev/tb5_<n> and its sysfs directory appear. */
int tb5_dev_publish(struct tb5_dev *dev)
{
	dev_t devt = MKDEV(MAJOR(tb5_devt), dev->index);
	struct device *device;
	struct cdev *cdev;
	int ret;

	/*
	 * The character device is allocated on its own: an open file may
	 * hold it after the end is unpublished, and frees it with its last
	 * reference.
	 */
	cdev = cdev_alloc();
	if (!cdev)
		return -ENOMEM;
	cdev->owner = THIS_MODULE;
	cdev->ops = &tb5_fops;
	ret = cdev_add(cdev, devt, 1);
	if (ret) {
		kobject_put(&cdev->kobj);
		return ret;
	}
	device = device_create_with_groups(&tb5_class, dev->parent, devt, dev,
					   dev->groups ?: tb5_link_groups,
					   "tb5_%u", dev->index);
	if (IS_ERR(device)) {
		cdev_del(cdev);
		return PTR_ERR(device);
	}
	dev->cdev = cdev;
	dev->device = device;
	xa_lock(&tb5_devs);
	dev->published = true;
	xa_unlock(&tb5_devs);
	return 0;
}

/*
 * Make /dev/tb5_<n> and its sysfs directory go away, and give the index
 * back. Files open on the end keep it.
 */
void tb5_dev_unpublish(struct tb5_dev *dev)
{
	if (!dev)
		return;
	xa_lock(&tb5_devs);
	dev->published = false;
	if (dev->indexed)
		__xa_erase(&tb5_devs, dev->index);
	dev->indexed = false;
	xa_unlock(&tb5_devs);
	if (!dev->device)
		return;
	device_destroy(&tb5_class, MKDEV(MAJOR(tb5_devt), dev->index));
	cdev_del(dev->cdev);
	dev->device = NULL;
	dev->cdev = NULL;
}

/* The published end with minor @minor, with a reference; NULL if none. */
struct tb5_dev *tb5_dev_get(unsigned int minor)
{
	struct tb5_dev *dev;

	xa_lock(&tb5_devs);
	dev = xa_load(&tb5_devs, minor);
	if (dev && dev->published)
		kref_get(&dev->ref);
	else
		dev = NULL;
	xa_unlock(&tb5_devs);
	return dev;
}

static void tb5_dev_release(struct kref *ref)
{
	struct tb5_dev *dev = container_of(ref, struct tb5_dev, ref);

	tb5_link_destroy(dev->link);
	/* Every file freed its regions: nothing is left mapped. */
	WARN_ON(!list_empty(&dev->dma_mrs));
	mutex_destroy(&dev->mr_lock);
	kfree(dev);
}

void tb5_dev_put(struct tb5_dev *dev)
{
	kref_put(&dev->ref, tb5_dev_release);
}

/* -- regions mapped for the backend's DMA device ------------------------- */

/*
 * A region registered on @dev: map it for the backend's DMA device, if the
 * backend has one and is still there. A region that cannot be mapped is
 * left unmapped; its frames are then copied (tb5_mem.c).
 */
void tb5_dev_mr_attach(struct tb5_dev *dev, struct tb5_mr *mr)
{
	struct device *dma_dev;
	const char *what;
	int ret;

	if (!dev->ops->dma_device)
		return;
	mutex_lock(&dev->mr_lock);
	dma_dev = dev->backend ? dev->ops->dma_device(dev) : NULL;
	if (dma_dev) {
		ret = tb5_mr_dma_map(dev, mr, dma_dev, &what);
		if (!ret)
			list_add_tail(&mr->dma_node, &dev->dma_mrs);
		else
			pr_info_ratelimited("tb5_%u: a %s region of %llu bytes is not mapped for DMA (%s: %d): its frames will be copied\n",
					    dev->index,
					    mr->dmabuf ? "dma-buf" : "memory",
					    mr->len, what, ret);
	}
	mutex_unlock(&dev->mr_lock);
}

/* A region of @dev is freed: unmap it, unless the backend did already. */
void tb5_dev_mr_detach(struct tb5_dev *dev, struct tb5_mr *mr)
{
	mutex_lock(&dev->mr_lock);
	if (mr->dma_dev) {
		tb5_mr_dma_unmap(dev, mr);
		list_del(&mr->dma_node);
	}
	mutex_unlock(&dev->mr_lock);
}

/*
 * The backend lets go of @dev (its rings are stopped: no frame is in any
 * device's hands): no backend any more, and every region still mapped for
 * its DMA device is unmapped now, while that device is surely there. The
 * files keep their regions, unmapped; their link stays down.
 */
void tb5_dev_detach_backend(struct tb5_dev *dev)
{
	struct tb5_mr *mr, *next;

	mutex_lock(&dev->mr_lock);
	WRITE_ONCE(dev->backend, NULL);
	list_for_each_entry_safe(mr, next, &dev->dma_mrs, dma_node) {
		tb5_mr_dma_unmap(dev, mr);
		list_del(&mr->dma_node);
	}
	mutex_unlock(&dev->mr_lock);
}

/*
 * The backend has stopped its rings and lets go (tb5_dev_detach_backend()):
 * the end disappears, and its link is destroyed once no file holds it any
 * more.
 */
void tb5_dev_destroy(struct tb5_dev *dev)
{
	if (!dev)
		return;
	tb5_dev_unpublish(dev);
	tb5_dev_put(dev);
}

int tb5_dev_init(void)
{
	int ret;

	ret = class_register(&tb5_class);
	if (ret)
		return ret;
	ret = alloc_chrdev_region(&tb5_devt, 0, TB5_MAX_LINKS, "tb5");
	if (ret)
		goto err_class;
	return 0;

err_class:
	class_unregister(&tb5_class);
	return ret;
}

void tb5_dev_exit(void)
{
	unregister_chrdev_region(tb5_devt, TB5_MAX_LINKS);
	class_unregister(&tb5_class);
}
