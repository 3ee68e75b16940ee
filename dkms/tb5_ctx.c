// SPDX-License-Identifier: GPL-2.0-only
/*
 * tb5_ctx.c - a context: one open() of /dev/tb5_<n>, and its ioctls.
 *
 * Everything a context makes (regions, endpoints, the completion queue) is
 * found through its own handles and dies with it: release() closes every
 * endpoint, waits until the core has let go of each (a send's frames may
 * still be on the TX ring, reading the region), then frees the regions and
 * the queue. Every field that comes from user space is checked here before
 * the core sees it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/fs.h>
#include <linux/overflow.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait_bit.h>

#include "tb5_mod.h"

static int tb5_open(struct inode *inode, struct file *file)
{
	/* The file holds the end: a cable pulled meanwhile does not free it. */
	struct tb5_dev *dev = tb5_dev_get(iminor(inode));
	struct tb5_ctx *ctx;

	if (!dev)
		return -ENODEV;
	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx) {
		tb5_dev_put(dev);
		return -ENOMEM;
	}
	ctx->dev = dev;
	mutex_init(&ctx->lock);
	xa_init_flags(&ctx->mrs, XA_FLAGS_ALLOC1);
	xa_init_flags(&ctx->eps, XA_FLAGS_ALLOC1);
	atomic_set(&ctx->live_eps, 0);
	file->private_data = ctx;
	return nonseekable_open(inode, file);
}

static void kep_close(struct tb5_kep *kep)
{
	struct tb5_ep *ep = kep->ep;

	/* After this, only completions and TB5_EV_RELEASED reach @kep. */
	kep->ep = NULL;
	tb5_ep_close(ep);
}

static int tb5_release(struct inode *inode, struct file *file)
{
	struct tb5_ctx *ctx = file->private_data;
	struct tb5_dev *dev = ctx->dev;
	struct tb5_kep *kep;
	struct tb5_mr *mr;
	unsigned long id;

	mutex_lock(&ctx->lock);
	xa_for_each(&ctx->eps, id, kep) {
		xa_erase(&ctx->eps, id);
		kep_close(kep);
	}
	mutex_unlock(&ctx->lock);

	/* Frames still on the TX ring read our regions: wait them out. */
	while (!wait_var_event_timeout(&ctx->live_eps,
				       !atomic_read(&ctx->live_eps), 10 * HZ))
		pr_warn("tb5_%u: release waits for %d endpoint(s) to drain\n",
			ctx->dev->index, atomic_read(&ctx->live_eps));

	xa_for_each(&ctx->mrs, id, mr) {
		xa_erase(&ctx->mrs, id);
		tb5_mr_free(dev, mr);
	}
	xa_destroy(&ctx->mrs);
	xa_destroy(&ctx->eps);
	tb5_cq_destroy(ctx->cq);
	mutex_destroy(&ctx->lock);
	kfree(ctx);
	tb5_dev_put(dev);
	return 0;
}

/* -- endpoints ----------------------------------------------------------- */

/* Give back what @kep reserved on the queue. */
static void kep_release_rules(struct tb5_kep *kep)
{
	struct tb5_cq *cq = kep->ctx->cq;

	spin_lock_bh(&cq->lock);
	tb5_ep_rules_release(tb5_kep_rules(kep), tb5_cq_rules_acct(cq));
	spin_unlock_bh(&cq->lock);
}

/*
 * A new endpoint, with the completion entries for its events reserved
 * (-ENOSPC when the queue cannot promise them: the core's rules).
 */
static struct tb5_kep *kep_alloc(struct tb5_ctx *ctx, bool listener)
{
	struct tb5_cq *cq = ctx->cq;
	struct tb5_kep *kep;
	int ret;

	if (!cq)
		return ERR_PTR(-EINVAL);	/* create the queue first */
	kep = kzalloc(sizeof(*kep), GFP_KERNEL);
	if (!kep)
		return ERR_PTR(-ENOMEM);
	kep->ctx = ctx;
	spin_lock_bh(&cq->lock);
	ret = tb5_ep_rules_open(tb5_kep_rules(kep), tb5_cq_rules_acct(cq),
				tb5_cq_head(cq), listener);
	spin_unlock_bh(&cq->lock);
	if (ret) {
		kfree(kep);
		return ERR_PTR(ret);
	}
	/*
	 * The handle comes first, before the core sees @kep: the core may
	 * raise an event as soon as it has the endpoint (the peer's ACCEPT or
	 * REJECT, handled on another CPU before this ioctl returns), and that
	 * event must name the endpoint. The slot stays reserved (NULL to
	 * lookups) until kep_install() puts @kep in it. Cyclic: a closed
	 * endpoint's late completions name no newer one.
	 */
	ret = xa_alloc_cyclic(&ctx->eps, &kep->handle, NULL,
			      XA_LIMIT(1, INT_MAX), &ctx->next_ep, GFP_KERNEL);
	if (ret < 0) {
		kep_release_rules(kep);
		kfree(kep);
		return ERR_PTR(ret);
	}
	return kep;
}

/* Undo kep_alloc() for an endpoint the core never saw. */
static void kep_discard(struct tb5_kep *kep)
{
	xa_release(&kep->ctx->eps, kep->handle);
	kep_release_rules(kep);
	kfree(kep);
}

/* Publish @kep under its handle; the core endpoint @ep is made already. */
static int kep_install(struct tb5_kep *kep, struct tb5_ep *ep, u32 *handle)
{
	struct tb5_ctx *ctx = kep->ctx;
	int ret;

	kep->ep = ep;
	atomic_inc(&ctx->live_eps);
	/* The slot is reserved: storing allocates nothing, so cannot fail. */
	ret = xa_err(xa_store(&ctx->eps, kep->handle, kep, GFP_KERNEL));
	if (ret) {
		xa_release(&ctx->eps, kep->handle);
		/* The core owns @kep now: closing releases and frees it. */
		kep_close(kep);
		return ret;
	}
	*handle = kep->handle;
	return 0;
}

static int ioc_listen(struct tb5_ctx *ctx, struct tb5_listen *arg)
{
	struct tb5_addr addr;
	struct tb5_kep *kep;
	struct tb5_ep *ep;
	int ret;

	if (arg->flags & ~TB5_LISTEN_WELL_KNOWN)
		return -EINVAL;
	kep = kep_alloc(ctx, true);
	if (IS_ERR(kep))
		return PTR_ERR(kep);
	ret = tb5_listen(ctx->dev->link, arg->service, arg->flags, kep, &ep);
	if (ret) {
		kep_discard(kep);
		return ret;
	}
	tb5_listen_addr(ep, &addr);
	arg->cookie = addr.cookie;
	return kep_install(kep, ep, &arg->ep);
}

static int ioc_connect(struct tb5_ctx *ctx, struct tb5_connect *arg)
{
	struct tb5_addr addr = { .service = arg->service, .cookie = arg->cookie };
	struct tb5_kep *kep;
	struct tb5_ep *ep;
	int ret;

	if (arg->pad)
		return -EINVAL;
	kep = kep_alloc(ctx, false);
	if (IS_ERR(kep))
		return PTR_ERR(kep);
	ret = tb5_connect(ctx->dev->link, &addr, kep, &ep);
	if (ret) {
		kep_discard(kep);
		return ret;
	}
	return kep_install(kep, ep, &arg->ep);
}

static struct tb5_kep *kep_lookup(struct tb5_ctx *ctx, u32 handle)
{
	return handle ? xa_load(&ctx->eps, handle) : NULL;
}

static int ioc_accept(struct tb5_ctx *ctx, struct tb5_accept *arg)
{
	struct tb5_kep *l = kep_lookup(ctx, arg->listener);
	struct tb5_kep *kep;
	struct tb5_ep *ep;
	struct tb5_cq *cq;
	int ret;

	/* A listener exists only once the queue does. */
	if (!l || !l->rules.listener)
		return -EINVAL;
	kep = kep_alloc(ctx, false);
	if (IS_ERR(kep))
		return PTR_ERR(kep);
	/*
	 * Re-arm INCOMING before looking at the backlog (the core's rule):
	 * a connection that arrives while we look is then reported, never
	 * lost, so "accept until -EAGAIN" cannot miss one.
	 */
	cq = ctx->cq;
	spin_lock_bh(&cq->lock);
	tb5_ep_rules_accepting(tb5_kep_rules(l), tb5_cq_rules_acct(cq),
			       tb5_cq_head(cq));
	spin_unlock_bh(&cq->lock);
	ret = tb5_accept(l->ep, kep, &ep);
	if (ret) {
		kep_discard(kep);
		return ret;
	}
	return kep_install(kep, ep, &arg->ep);
}

static int ioc_ep_close(struct tb5_ctx *ctx, struct tb5_ep_close *arg)
{
	struct tb5_kep *kep;

	if (arg->pad || !arg->ep)
		return -EINVAL;
	kep = xa_erase(&ctx->eps, arg->ep);
	if (!kep)
		return -EINVAL;
	kep_close(kep);
	return 0;
}

static int ioc_ep_query(struct tb5_ctx *ctx, struct tb5_ep_query *arg)
{
	struct tb5_kep *kep = kep_lookup(ctx, arg->ep);

	/* The uAPI's values are the core's: keep them so. */
	BUILD_BUG_ON(TB5_EP_STATE_LISTENING != TB5_EP_LISTENING);
	BUILD_BUG_ON(TB5_EP_STATE_CONNECTING != TB5_EP_CONNECTING);
	BUILD_BUG_ON(TB5_EP_STATE_CONNECTED != TB5_EP_CONNECTED);
	BUILD_BUG_ON(TB5_EP_STATE_PEER_CLOSED != TB5_EP_PEER_CLOSED);
	BUILD_BUG_ON(TB5_EP_STATE_ERROR != TB5_EP_ERROR);
	if (!kep)
		return -EINVAL;
	arg->state = tb5_ep_state(kep->ep);
	spin_lock_bh(&ctx->cq->lock);
	arg->error = tb5_ep_rules_error(tb5_kep_rules(kep));
	spin_unlock_bh(&ctx->cq->lock);
	arg->pad = 0;
	return 0;
}

/* -- posting ------------------------------------------------------------- */

static int post_one(struct tb5_ctx *ctx, const struct tb5_post_op *op)
{
	struct tb5_kep *kep = kep_lookup(ctx, op->ep);
	struct tb5_mr *mr = op->mem ? xa_load(&ctx->mrs, op->mem) : NULL;
	bool send = op->op == TB5_OP_SEND;
	struct tb5_cq *cq = ctx->cq;
	struct tb5_mem mem;
	u32 slot;
	int ret;

	BUILD_BUG_ON(TB5_OP_SEND != TB5_COMPLETION_SEND);
	BUILD_BUG_ON(TB5_OP_RECV != TB5_COMPLETION_RECV);
	if (op->op != TB5_OP_SEND && op->op != TB5_OP_RECV)
		return -EINVAL;
	if (!kep || kep->rules.listener || !mr)
		return -EINVAL;
	if (op->len > TB5_UAPI_MSG_MAX)
		return -EMSGSIZE;
	if (op->offset > mr->len || op->len > mr->len - op->offset)
		return -EINVAL;

	/* A completion entry first (-ENOSPC), then a slot (-EAGAIN). */
	spin_lock_bh(&cq->lock);
	ret = tb5_ep_rules_post(tb5_kep_rules(kep), tb5_cq_rules_acct(cq),
				tb5_cq_head(cq), op->op, op->user_data, mr,
				&slot);
	if (!ret)
		atomic_inc(&mr->inflight);
	spin_unlock_bh(&cq->lock);
	if (ret)
		return ret;

	mem.region = mr;
	mem.offset = op->offset;
	if (send)
		ret = tb5_post_send(kep->ep, &mem, op->len, op->tag, slot);
	else
		ret = tb5_post_recv(kep->ep, &mem, op->len, op->tag, slot);
	if (ret) {
		spin_lock_bh(&cq->lock);
		if (tb5_ep_rules_unpost(tb5_kep_rules(kep),
					tb5_cq_rules_acct(cq), slot))
			atomic_dec(&mr->inflight);
		spin_unlock_bh(&cq->lock);
	}
	return ret;
}

static int ioc_post(struct tb5_ctx *ctx, struct tb5_post *arg)
{
	struct tb5_post_op *ops;
	u32 i;
	int ret = 0;

	arg->posted = 0;
	if (!arg->count || arg->count > TB5_UAPI_POST_MAX)
		return -EINVAL;
	if (!ctx->cq)
		return -EINVAL;
	ops = memdup_user(u64_to_user_ptr(arg->ops),
			  array_size(arg->count, sizeof(*ops)));
	if (IS_ERR(ops))
		return PTR_ERR(ops);
	for (i = 0; i < arg->count; i++) {
		ret = post_one(ctx, &ops[i]);
		if (ret)
			break;
		arg->posted++;
	}
	kfree(ops);
	return ret;
}

/* -- the rest ------------------------------------------------------------ */

static int ioc_dereg(struct tb5_ctx *ctx, struct tb5_dereg_mem *arg)
{
	struct tb5_mr *mr;

	if (arg->pad || !arg->handle)
		return -EINVAL;
	mr = xa_load(&ctx->mrs, arg->handle);
	if (!mr)
		return -EINVAL;
	/* Posting happens under ctx->lock too: the count cannot rise now. */
	if (atomic_read(&mr->inflight))
		return -EBUSY;
	xa_erase(&ctx->mrs, arg->handle);
	tb5_mr_free(ctx->dev, mr);
	return 0;
}

static int ioc_cq_create(struct tb5_ctx *ctx, struct tb5_cq_create *arg)
{
	struct tb5_cq *cq;

	if (arg->flags)
		return -EINVAL;
	if (ctx->cq)
		return -EEXIST;
	cq = tb5_cq_create(arg->entries);
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	/* mmap() and poll() read it without ctx->lock. */
	smp_store_release(&ctx->cq, cq);
	arg->mmap_size = cq->size;
	arg->entries_offset = (u8 *)cq->entries - (u8 *)cq->ring;
	return 0;
}

static void ioc_info(struct tb5_ctx *ctx, struct tb5_info *arg)
{
	struct tb5_dev *dev = ctx->dev;
	u64 peer = 0;

	BUILD_BUG_ON(TB5_STATE_DOWN != TB5_LINK_DOWN);
	BUILD_BUG_ON(TB5_STATE_UP != TB5_LINK_UP);
	BUILD_BUG_ON(TB5_STATE_READY != TB5_LINK_READY);
	BUILD_BUG_ON(TB5_UAPI_FRAME_MAX != TB5_FRAME_MAX);
	BUILD_BUG_ON(TB5_UAPI_MSG_MAX != TB5_MSG_MAX);
	BUILD_BUG_ON(TB5_UAPI_EP_OPS_MAX != TB5_EP_MAX_OPS);
	BUILD_BUG_ON(TB5_LISTEN_WELL_KNOWN != TB5_LF_WELL_KNOWN);
	memset(arg, 0, sizeof(*arg));
	arg->local_host = dev->host_id;
	arg->state = tb5_link_state(dev->link);
	if (!tb5_link_peer(dev->link, &peer))
		arg->peer_host = peer;
	arg->link_index = dev->index;
	arg->ring_size = tb5_ring_size;
	arg->max_frame = TB5_FRAME_MAX;
	arg->speed_mbps = READ_ONCE(dev->speed_mbps);
	arg->features = TB5_FEATURE_HOST_MEM | TB5_FEATURE_DMABUF |
			TB5_FEATURE_WELL_KNOWN | TB5_FEATURE_STATS |
			dev->ops->features;
}

static void ioc_stats(struct tb5_ctx *ctx, struct tb5_stats *arg)
{
	struct tb5_link_stats st;
	int i;

	BUILD_BUG_ON(TB5_UAPI_DROP_KINDS != TB5_DROP_KINDS);
	BUILD_BUG_ON(TB5_UAPI_DROP_MALFORMED != TB5_DROP_MALFORMED);
	BUILD_BUG_ON(TB5_UAPI_DROP_UNKNOWN_CONN != TB5_DROP_UNKNOWN_CONN);
	BUILD_BUG_ON(TB5_UAPI_DROP_OUT_OF_WINDOW != TB5_DROP_OUT_OF_WINDOW);
	BUILD_BUG_ON(TB5_UAPI_DROP_RING_OVERFLOW != TB5_DROP_OVERFLOW);
	BUILD_BUG_ON(TB5_UAPI_DROP_SEQ_GAP != TB5_DROP_SEQ_GAP);
	tb5_link_get_stats(ctx->dev->link, &st);
	memset(arg, 0, sizeof(*arg));
	arg->tx_frames = st.tx_frames;
	arg->tx_bytes = st.tx_bytes;
	arg->rx_frames = st.rx_frames;
	arg->rx_bytes = st.rx_bytes;
	arg->rx_errors = st.rx_errors;
	arg->rx_dropped = st.rx_dropped;
	arg->peer_resets = st.peer_resets;
	for (i = 0; i < TB5_UAPI_DROP_KINDS; i++)
		arg->drops[i] = st.drops[i];
}

static void ioc_version(struct tb5_version *arg)
{
	memset(arg, 0, sizeof(*arg));
	arg->abi_version = TB5_ABI_VERSION;
	arg->features = TB5_FEATURE_HOST_MEM | TB5_FEATURE_DMABUF |
			TB5_FEATURE_LOOP | TB5_FEATURE_WELL_KNOWN |
			TB5_FEATURE_STATS;
	if (sscanf(TB5_VERSION_STRING, "%u.%u.%u", &arg->module_major,
		   &arg->module_minor, &arg->module_patch) != 3)
		arg->module_major = arg->module_minor = arg->module_patch = 0;
}

/* Every argument struct, by size: the largest bounds the stack copy. */
union tb5_ioc_arg {
	struct tb5_version version;
	struct tb5_info info;
	struct tb5_reg_mem reg_mem;
	struct tb5_reg_dmabuf reg_dmabuf;
	struct tb5_dereg_mem dereg;
	struct tb5_cq_create cq_create;
	struct tb5_listen listen;
	struct tb5_connect connect;
	struct tb5_accept accept;
	struct tb5_ep_close ep_close;
	struct tb5_ep_query ep_query;
	struct tb5_post post;
	struct tb5_stats stats;
};

static long tb5_ioctl(struct file *file, unsigned int cmd, unsigned long uarg)
{
	struct tb5_ctx *ctx = file->private_data;
	void __user *up = (void __user *)uarg;
	union tb5_ioc_arg arg;
	unsigned int size = _IOC_SIZE(cmd);
	long ret;

	switch (cmd) {
	case TB5_IOC_GET_VERSION:
	case TB5_IOC_GET_INFO:
	case TB5_IOC_REG_MEM:
	case TB5_IOC_REG_DMABUF:
	case TB5_IOC_DEREG_MEM:
	case TB5_IOC_CQ_CREATE:
	case TB5_IOC_LISTEN:
	case TB5_IOC_CONNECT:
	case TB5_IOC_ACCEPT:
	case TB5_IOC_EP_CLOSE:
	case TB5_IOC_EP_QUERY:
	case TB5_IOC_POST:
	case TB5_IOC_GET_STATS:
		break;
	default:
		return -ENOTTY;
	}
	if (size > sizeof(arg))
		return -ENOTTY;
	memset(&arg, 0, sizeof(arg));
	if ((_IOC_DIR(cmd) & _IOC_WRITE) && copy_from_user(&arg, up, size))
		return -EFAULT;

	mutex_lock(&ctx->lock);
	switch (cmd) {
	case TB5_IOC_GET_VERSION:
		ioc_version(&arg.version);
		ret = 0;
		break;
	case TB5_IOC_GET_INFO:
		ioc_info(ctx, &arg.info);
		ret = 0;
		break;
	case TB5_IOC_GET_STATS:
		ioc_stats(ctx, &arg.stats);
		ret = 0;
		break;
	case TB5_IOC_REG_MEM:
		ret = tb5_mr_reg_user(ctx, &arg.reg_mem);
		break;
	case TB5_IOC_REG_DMABUF:
		ret = tb5_mr_reg_dmabuf(ctx, &arg.reg_dmabuf);
		break;
	case TB5_IOC_DEREG_MEM:
		ret = ioc_dereg(ctx, &arg.dereg);
		break;
	case TB5_IOC_CQ_CREATE:
		ret = ioc_cq_create(ctx, &arg.cq_create);
		break;
	case TB5_IOC_LISTEN:
		ret = ioc_listen(ctx, &arg.listen);
		break;
	case TB5_IOC_CONNECT:
		ret = ioc_connect(ctx, &arg.connect);
		break;
	case TB5_IOC_ACCEPT:
		ret = ioc_accept(ctx, &arg.accept);
		break;
	case TB5_IOC_EP_CLOSE:
		ret = ioc_ep_close(ctx, &arg.ep_close);
		break;
	case TB5_IOC_EP_QUERY:
		ret = ioc_ep_query(ctx, &arg.ep_query);
		break;
	default:	/* TB5_IOC_POST */
		ret = ioc_post(ctx, &arg.post);
		/* How many went in matters even when one failed. */
		if (copy_to_user(up, &arg, size))
			ret = -EFAULT;
		mutex_unlock(&ctx->lock);
		return ret;
	}
	mutex_unlock(&ctx->lock);
	if (!ret && (_IOC_DIR(cmd) & _IOC_READ) && copy_to_user(up, &arg, size))
		ret = -EFAULT;
	return ret;
}

/*
 * No ctx->lock here: mmap() runs under the mmap lock, and TB5_IOC_REG_MEM
 * takes the mmap lock (pinning) under ctx->lock. The queue, once published,
 * lives as long as the file.
 */
static int tb5_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct tb5_ctx *ctx = file->private_data;
	/* Pairs with the release in ioc_cq_create(): a whole queue or none. */
	struct tb5_cq *cq = smp_load_acquire(&ctx->cq);

	return cq ? tb5_cq_mmap(cq, vma) : -EINVAL;
}

static __poll_t tb5_poll(struct file *file, poll_table *wait)
{
	struct tb5_ctx *ctx = file->private_data;
	/* Pairs with the release in ioc_cq_create(). */
	struct tb5_cq *cq = smp_load_acquire(&ctx->cq);

	if (!cq)
		return EPOLLERR;
	poll_wait(file, &cq->wait, wait);
	return tb5_cq_readable(cq) ? EPOLLIN | EPOLLRDNORM : 0;
}

const struct file_operations tb5_fops = {
	.owner = THIS_MODULE,
	.open = tb5_open,
	.release = tb5_release,
	.unlocked_ioctl = tb5_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = tb5_mmap,
	.poll = tb5_poll,
};
