// SPDX-License-Identifier: GPL-2.0-only
/*
 * tb5_tb.c - the tb backend: a Thunderbolt service driver on the XDomain bus.
 *
 * Every tb5 host publishes a property directory (key "tb5", its own UUID,
 * protocol id and version, and prtcstns saying whether it offers end-to-end
 * flow control). A peer that publishes it too appears as a tb_service under
 * the XDomain of the cable between the two hosts, and this driver binds to
 * it: one link end, /dev/tb5_<n>, per cable.
 *
 * probe:   TX ring, transmit HopID, RX ring (frame mode; E2E when both
 *          ends offer it), DMA buffers, the link end; then the login.
 * login:   each end sends LOGIN (its transmit HopID) over XDomain messages
 *          and answers the peer's; when both are done (tb5_tb_proto.c has
 *          the state machine, its retries and timeouts) the connection
 *          comes up, in this order: the peer's HopID reserved, TX and RX
 *          rings started, every RX buffer posted, the DMA paths enabled, and
 *          only then the core told that the rings run (its HELLO goes out).
 * traffic: the core's frames go out through the TX ring. A payload frame
 *          is read by the NHI straight from the registered region (mapped
 *          for the NHI at registration: tb5_mem.c), zero-copy, when its
 *          bytes are contiguous in bus space and aligned as
 *          TB5_TB_ZC_ALIGN says; headers, and payload that is not, are
 *          copied into the TX slot's own DMA buffer. RX interrupts schedule
 *          a poll that hands up to a budget of frames to the core and
 *          re-posts their buffers, then re-arms the interrupt (or, with
 *          tb_poll_us, keeps polling that long after the ring went idle).
 * down:    LOGOUT, unplug, suspend, remove and connect failures undo the
 *          connection's steps in reverse, and only then, with both rings
 *          stopped and no frame left in the NHI's hands, tell the core,
 *          which fails what is pending with -ENOLINK: a send completes only
 *          once the NHI can no longer read its memory. remove then unmaps
 *          the regions still mapped for the NHI and frees what probe made,
 *          in reverse.
 *
 * Frames reach the core only through tb5_link_rx/tx_done/kick/up/down: the
 * ring is the seam, and everything above it is the loop backend's code too.
 *
 * Locks: tb5_tb_links_lock (the list the XDomain message handler searches)
 * -> login_lock (the login state; never held across a Thunderbolt call that
 * waits on the control channel, whose receive path calls the handler) ;
 * conn_lock (the rings and paths, held across those calls) -> login_lock;
 * tx_lock (the TX slots; the core's link lock may be held around it).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/thunderbolt.h>
#include <linux/uuid.h>
#include <linux/version.h>
#include <linux/workqueue.h>

#include "tb5_mod.h"
#include "tb5_tb_proto.h"

/*
 * Thunderbolt API differences between the kernels tb5 is built for, all
 * here:
 *  - xd->link_width is a lane count (1 or 2) up to 6.4 and an enum
 *    tb_link_width mask from 6.5; tb5_tb_lanes() reads both.
 *  - tb_ring_throttling() (interrupt throttling per ring) is in the 7.2
 *    headers and not in 6.12's; before it every ring has the controller's
 *    default (128 us), and busy polling (tb_poll_us) is the latency knob.
 *  - The service API is exported without a symbol namespace on all of
 *    them, so no MODULE_IMPORT_NS (whose argument changed form in 6.13).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 2, 0)
#define TB5_TB_HAVE_THROTTLING	1
#else
#define TB5_TB_HAVE_THROTTLING	0
#endif

/* RX frames handed to the core per poll pass. */
#define TB5_TB_BUDGET		64

/*
 * The bus address alignment a zero-copy TX frame must have. The NHI's
 * descriptor takes a 64-bit address; no alignment rule for it is known to
 * us from hardware yet, so frames that do not start on 8 bytes are copied
 * (a page-aligned buffer's frames all do). Hardware bring-up confirms it.
 */
#define TB5_TB_ZC_ALIGN		8

static bool tb5_tb_e2e = true;
module_param_named(tb_e2e, tb5_tb_e2e, bool, 0444);
MODULE_PARM_DESC(tb_e2e,
		 "Offer end-to-end flow control on Thunderbolt links (default: true)");

static unsigned int tb5_tb_poll_us;
module_param_named(tb_poll_us, tb5_tb_poll_us, uint, 0644);
MODULE_PARM_DESC(tb_poll_us,
		 "Keep polling a Thunderbolt link's rings this many microseconds after they go idle before waiting for an interrupt (default: 0)");

static int tb5_tb_irq_ns = -1;
module_param_named(tb_irq_ns, tb5_tb_irq_ns, int, 0444);
MODULE_PARM_DESC(tb_irq_ns,
		 "Interrupt throttling of the rings in ns (7.2 and later); -1 keeps the controller's default (default: -1)");

/* One DMA buffer: a TX slot or an RX descriptor's frame. */
struct tb5_tb_buf {
	struct ring_frame frame;
	struct tb5_tb_link *tbl;
	void *va;
	dma_addr_t dma;
	u32 slot;
};

struct tb5_tb_link {
	struct list_head node;		/* on tb5_tb_links */
	struct tb_service *svc;
	struct tb_xdomain *xd;
	struct tb5_dev *dev;
	struct device *dma_dev;
	u32 ring_size;
	u32 features;			/* TB5_TB_F_* both ends use */
	u32 gbps, tx_lanes, rx_lanes;	/* from the XDomain */

	struct mutex login_lock;	/* login, stopping, force_down */
	struct tb5_tb_login login;
	bool stopping;			/* stop() under way: works do nothing */
	bool force_down;		/* conn_work tears down first */
	struct delayed_work login_work;
	struct work_struct conn_work;
	u32 resp[TB5_TB_MSG_WORDS];	/* our latest response, under login_lock */

	struct mutex conn_lock;		/* ledger, rings, paths, in_hopid */
	struct tb5_tb_ledger ledger;
	struct tb_ring *tx_ring;
	struct tb_ring *rx_ring;
	int out_hopid;			/* our transmit path, probe to remove */
	int in_hopid;			/* the peer's, while connected; -1 */
	struct tb5_tb_buf *tx_bufs;
	struct tb5_tb_buf *rx_bufs;

	spinlock_t tx_lock;		/* txq, running */
	struct tb5_tb_txq txq;
	bool running;			/* the core may transmit */

	struct work_struct poll_work;
	bool rx_running;		/* the poll may touch the RX ring */
	atomic_t rx_masked;		/* the RX interrupt waits for poll_complete */
	u64 poll_busy_ns;		/* when the rings last had work */

	atomic64_t ring_errors;		/* CRC, overrun, bad PDF, TX refusals */
	atomic64_t tx_zerocopy;		/* payload frames read from the region */
	atomic64_t tx_copied;		/* payload frames copied to a TX slot */
};

static uuid_t tb5_tb_dir_uuid_k;
static uuid_t tb5_tb_msg_uuid_k;
static struct tb_property_dir *tb5_tb_dir;
static struct workqueue_struct *tb5_tb_wq;	/* login and connection work */
static struct workqueue_struct *tb5_tb_poll_wq;	/* ring polls */
static DEFINE_MUTEX(tb5_tb_links_lock);
static LIST_HEAD(tb5_tb_links);
/* This host, on every Thunderbolt link: peers route to it by this id. */
static u64 tb5_tb_host_id;

/* -- sysfs: what a tb link adds ---------------------------------------- */

static struct tb5_tb_link *to_tbl(struct device *d)
{
	struct tb5_dev *dev = dev_get_drvdata(d);

	/* The attributes are removed before the backend lets go. */
	return dev->backend;
}

static ssize_t lane_gbps_show(struct device *d, struct device_attribute *a,
			      char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_tbl(d)->gbps));
}
static DEVICE_ATTR_RO(lane_gbps);

static ssize_t link_lanes_show(struct device *d, struct device_attribute *a,
			       char *buf)
{
	struct tb5_tb_link *tbl = to_tbl(d);

	return sysfs_emit(buf, "%u %u\n", READ_ONCE(tbl->tx_lanes),
			  READ_ONCE(tbl->rx_lanes));
}
static DEVICE_ATTR_RO(link_lanes);

static ssize_t peer_uuid_show(struct device *d, struct device_attribute *a,
			      char *buf)
{
	return sysfs_emit(buf, "%pUb\n", to_tbl(d)->xd->remote_uuid);
}
static DEVICE_ATTR_RO(peer_uuid);

static ssize_t peer_name_show(struct device *d, struct device_attribute *a,
			      char *buf)
{
	struct tb_xdomain *xd = to_tbl(d)->xd;
	ssize_t ret;

	mutex_lock(&xd->lock);
	ret = sysfs_emit(buf, "%s\n", xd->device_name ?: "");
	mutex_unlock(&xd->lock);
	return ret;
}
static DEVICE_ATTR_RO(peer_name);

static ssize_t e2e_show(struct device *d, struct device_attribute *a,
			char *buf)
{
	return sysfs_emit(buf, "%d\n", !!(to_tbl(d)->features & TB5_TB_F_E2E));
}
static DEVICE_ATTR_RO(e2e);

static ssize_t tb_state_show(struct device *d, struct device_attribute *a,
			     char *buf)
{
	struct tb5_tb_link *tbl = to_tbl(d);
	enum tb5_tb_login_state st;

	mutex_lock(&tbl->login_lock);
	st = tbl->login.state;
	mutex_unlock(&tbl->login_lock);
	return sysfs_emit(buf, "%s\n", tb5_tb_login_state_name(st));
}
static DEVICE_ATTR_RO(tb_state);

static ssize_t ring_errors_show(struct device *d, struct device_attribute *a,
				char *buf)
{
	return sysfs_emit(buf, "%lld\n",
			  atomic64_read(&to_tbl(d)->ring_errors));
}
static DEVICE_ATTR_RO(ring_errors);

static ssize_t tx_zerocopy_frames_show(struct device *d,
				       struct device_attribute *a, char *buf)
{
	return sysfs_emit(buf, "%lld\n",
			  atomic64_read(&to_tbl(d)->tx_zerocopy));
}
static DEVICE_ATTR_RO(tx_zerocopy_frames);

static ssize_t tx_copied_frames_show(struct device *d,
				     struct device_attribute *a, char *buf)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&to_tbl(d)->tx_copied));
}
static DEVICE_ATTR_RO(tx_copied_frames);

static struct attribute *tb5_tb_attrs[] = {
	&dev_attr_lane_gbps.attr,
	&dev_attr_link_lanes.attr,
	&dev_attr_peer_uuid.attr,
	&dev_attr_peer_name.attr,
	&dev_attr_e2e.attr,
	&dev_attr_tb_state.attr,
	&dev_attr_ring_errors.attr,
	&dev_attr_tx_zerocopy_frames.attr,
	&dev_attr_tx_copied_frames.attr,
	NULL,
};

static const struct attribute_group tb5_tb_group = {
	.attrs = tb5_tb_attrs,
};

static const struct attribute_group *tb5_tb_groups[] = {
	&tb5_link_group,
	&tb5_drops_group,
	&tb5_tb_group,
	NULL,
};

/* -- speed ---------------------------------------------------------------- */

static void tb5_tb_read_speed(struct tb5_tb_link *tbl)
{
	struct tb_xdomain *xd = tbl->xd;
	u32 tx, rx, gbps = READ_ONCE(xd->link_speed);

	tb5_tb_lanes((u32)READ_ONCE(xd->link_width), &tx, &rx);
	WRITE_ONCE(tbl->gbps, gbps);
	WRITE_ONCE(tbl->tx_lanes, tx);
	WRITE_ONCE(tbl->rx_lanes, rx);
	WRITE_ONCE(tbl->dev->speed_mbps, tb5_tb_speed_mbps(gbps, tx, rx));
}

/* -- the data path ------------------------------------------------------- */

/* A payload reference from the core: a region and an offset in it. */
static const void *tb5_tb_resolve(const struct tb5_mem *mem, u32 len)
{
	struct tb5_mr *mr = mem->region;

	if (!mr || mem->offset > mr->len || len > mr->len - mem->offset)
		return NULL;
	return (const u8 *)mr->kva + mem->offset;
}

/*
 * Where the NHI can read a payload frame in place: its region is mapped for
 * the NHI (tb5_dev_mr_attach(); the mapping stays while a send from the
 * region is in flight, and the core hands us no frame of any other), its
 * bytes are contiguous in bus space and aligned.
 */
static bool tb5_tb_zerocopy(const struct tb5_tx_frame *f, dma_addr_t *addr)
{
	const struct tb5_mr *mr = f->payload.region;

	return f->sof == TB5_SOF_PAYLOAD && mr &&
	       tb5_mr_dma_range(mr, f->payload.offset, f->len, addr) &&
	       IS_ALIGNED(*addr, TB5_TB_ZC_ALIGN);
}

/*
 * The core's tx op, under its link lock. A payload frame goes out from the
 * region itself where it can (tb5_tb_zerocopy()); anything else is copied
 * into the TX slot's own DMA buffer. Either way the send's memory is the
 * caller's again once the frame has left the ring, as the core expects:
 * the NHI reads a frame before it reports it sent.
 */
static int tb5_tb_tx(struct tb5_dev *dev, const struct tb5_tx_frame *f)
{
	/* The core never transmits on a link that is down; tb lets go after. */
	struct tb5_tb_link *tbl = READ_ONCE(dev->backend);
	const void *src;
	struct tb5_tb_buf *b;
	dma_addr_t addr;
	u8 pdf_sof, pdf_eof;
	u32 size, slot;
	int ret;

	if (!tbl)
		return -ENOLINK;
	ret = tb5_tb_tx_desc(f->sof, f->eof, f->len, &pdf_sof, &pdf_eof, &size);
	if (ret)
		return ret;

	spin_lock_bh(&tbl->tx_lock);
	if (!tbl->running) {
		ret = -ENOLINK;
		goto out;
	}
	ret = tb5_tb_txq_reserve(&tbl->txq, f->cookie, &slot);
	if (ret)
		goto out;
	b = &tbl->tx_bufs[slot];
	if (tb5_tb_zerocopy(f, &addr)) {
		/* What the CPU wrote must reach the device (or its bounce). */
		tb5_mr_dma_sync_for_device(f->payload.region,
					   f->payload.offset, f->len);
		b->frame.buffer_phy = addr;
		atomic64_inc(&tbl->tx_zerocopy);
	} else {
		src = f->sof == TB5_SOF_HEADER ? f->header :
						 tb5_tb_resolve(&f->payload, f->len);
		if (src) {
			memcpy(b->va, src, f->len);
		} else {
			/*
			 * A reference that does not resolve (the core checked
			 * it at post: this does not happen). The frame still
			 * takes its place on the ring, marked so that the peer
			 * drops it; the receive it belongs to fails there.
			 */
			memset(b->va, 0, f->len);
			pdf_eof = TB5_TB_PDF_DROP;
			atomic64_inc(&tbl->ring_errors);
		}
		if (f->sof == TB5_SOF_PAYLOAD)
			atomic64_inc(&tbl->tx_copied);
		dma_sync_single_for_device(tbl->dma_dev, b->dma, f->len,
					   DMA_TO_DEVICE);
		b->frame.buffer_phy = b->dma;
	}
	b->frame.size = size;
	b->frame.sof = pdf_sof;
	b->frame.eof = pdf_eof;
	ret = tb_ring_tx(tbl->tx_ring, &b->frame);
	if (ret) {
		/* The ring is stopping: the link goes down next. */
		tb5_tb_txq_unreserve(&tbl->txq);
		ret = -ENOLINK;
	}
out:
	spin_unlock_bh(&tbl->tx_lock);
	return ret;
}

/* Under the end's mr_lock, with the backend present (tb5_backend_ops). */
static struct device *tb5_tb_dma_device(struct tb5_dev *dev)
{
	struct tb5_tb_link *tbl = dev->backend;

	lockdep_assert_held(&dev->mr_lock);
	return tbl->dma_dev;
}

static const struct tb5_backend_ops tb5_tb_ops = {
	.name = "tb",
	.tx = tb5_tb_tx,
	.dma_device = tb5_tb_dma_device,
};

/* A TX slot came back from the NHI. */
static void tb5_tb_tx_reaped(struct tb5_tb_link *tbl, struct tb5_tb_buf *b)
{
	u64 cookie = 0;
	bool kick = false;
	int ret;

	spin_lock_bh(&tbl->tx_lock);
	if (!tbl->running) {
		spin_unlock_bh(&tbl->tx_lock);
		return;
	}
	ret = tb5_tb_txq_complete(&tbl->txq, b->slot, &cookie, &kick);
	spin_unlock_bh(&tbl->tx_lock);
	if (ret) {
		atomic64_inc(&tbl->ring_errors);
		return;
	}
	if (cookie)
		tb5_link_tx_done(tbl->dev->link, cookie);
	else if (kick)
		tb5_link_kick(tbl->dev->link);
}

/* TX completions, from the ring's work (process context). */
static void tb5_tb_tx_callback(struct tb_ring *ring, struct ring_frame *frame,
			       bool canceled)
{
	struct tb5_tb_buf *b = container_of(frame, struct tb5_tb_buf, frame);

	/* Canceled: the ring stopped, and the link is down already. */
	if (!canceled)
		tb5_tb_tx_reaped(b->tbl, b);
}

/* One received frame: to the core, and its buffer back on the ring. */
static void tb5_tb_rx_frame(struct tb5_tb_link *tbl, struct ring_frame *frame)
{
	struct tb5_tb_buf *b = container_of(frame, struct tb5_tb_buf, frame);
	enum tb5_tb_rx_verdict v;
	u8 sof, eof;
	u32 len;

	dma_sync_single_for_cpu(tbl->dma_dev, b->dma, TB5_FRAME_MAX,
				DMA_FROM_DEVICE);
	v = tb5_tb_rx_check(frame->flags, frame->size, frame->eof, &sof, &eof,
			    &len);
	if (v == TB5_TB_RX_OK) {
		tb5_link_rx(tbl->dev->link, sof, eof, b->va, len);
	} else {
		atomic64_inc(&tbl->ring_errors);
		/*
		 * Counted by kind too: a frame longer than its buffer is a
		 * ring overflow, one the sender marked dropped a lost frame,
		 * a CRC error or a PDF tb5 never sends a malformed one.
		 */
		tb5_link_rx_refused(tbl->dev->link,
				    v == TB5_TB_RX_OVERRUN ? TB5_DROP_OVERFLOW :
				    v == TB5_TB_RX_DROPPED ? TB5_DROP_SEQ_GAP :
				    TB5_DROP_MALFORMED, 1);
	}
	dma_sync_single_for_device(tbl->dma_dev, b->dma, TB5_FRAME_MAX,
				   DMA_FROM_DEVICE);
	/* -ESHUTDOWN: the ring stops; the buffer stays ours. */
	tb_ring_rx(tbl->rx_ring, frame);
}

/*
 * The RX interrupt: the NHI has masked it and calls this in hard interrupt
 * context. Poll from a work item.
 */
static void tb5_tb_start_poll(void *data)
{
	struct tb5_tb_link *tbl = data;

	atomic_set(&tbl->rx_masked, 1);
	queue_work(tb5_tb_poll_wq, &tbl->poll_work);
}

static void tb5_tb_rearm(struct tb5_tb_link *tbl)
{
	if (atomic_xchg(&tbl->rx_masked, 0))
		tb_ring_poll_complete(tbl->rx_ring);
}

static void tb5_tb_poll(struct work_struct *work)
{
	struct tb5_tb_link *tbl = container_of(work, struct tb5_tb_link,
					       poll_work);
	unsigned int poll_us = READ_ONCE(tb5_tb_poll_us);
	struct ring_frame *frame;
	int n = 0;
	u64 now;

	if (!READ_ONCE(tbl->rx_running)) {
		/* Going down: leave the interrupt enabled for tb_ring_stop(). */
		tb5_tb_rearm(tbl);
		return;
	}
	while (n < TB5_TB_BUDGET && (frame = tb_ring_poll(tbl->rx_ring))) {
		tb5_tb_rx_frame(tbl, frame);
		n++;
	}
	if (poll_us) {
		/* Busy polling reaps TX completions too, without their IRQ. */
		while ((frame = tb_ring_poll(tbl->tx_ring))) {
			tb5_tb_tx_reaped(tbl, container_of(frame,
						       struct tb5_tb_buf,
						       frame));
			n++;
		}
	}
	if (n >= TB5_TB_BUDGET) {
		/* More may wait: go again, after whatever else is queued. */
		queue_work(tb5_tb_poll_wq, &tbl->poll_work);
		return;
	}
	if (poll_us) {
		now = ktime_get_ns();
		if (n)
			tbl->poll_busy_ns = now;
		if (now - tbl->poll_busy_ns < (u64)poll_us * NSEC_PER_USEC) {
			queue_work(tb5_tb_poll_wq, &tbl->poll_work);
			return;
		}
	}
	tb5_tb_rearm(tbl);
}

/* -- connection: bring-up and teardown ----------------------------------- */

static int tb5_tb_step_do(struct tb5_tb_link *tbl, enum tb5_tb_step s,
			  const struct tb5_tb_peer *peer)
{
	struct tb_xdomain *xd = tbl->xd;
	u32 i;
	int ret;

	lockdep_assert_held(&tbl->conn_lock);
	switch (s) {
	case TB5_TB_STEP_IN_HOPID:
		ret = tb_xdomain_alloc_in_hopid(xd, peer->path);
		if (ret < 0)
			return ret;
		if (ret != peer->path) {
			tb_xdomain_release_in_hopid(xd, ret);
			return -EBUSY;
		}
		tbl->in_hopid = ret;
		return 0;
	case TB5_TB_STEP_TX_START:
		spin_lock_bh(&tbl->tx_lock);
		tb5_tb_txq_reset(&tbl->txq);
		spin_unlock_bh(&tbl->tx_lock);
		tb_ring_start(tbl->tx_ring);
		return 0;
	case TB5_TB_STEP_RX_START:
		tb_ring_start(tbl->rx_ring);
		return 0;
	case TB5_TB_STEP_RX_PRIME:
		/* Every descriptor gets a buffer before a frame can come. */
		for (i = 0; i < tbl->ring_size; i++) {
			struct tb5_tb_buf *b = &tbl->rx_bufs[i];

			dma_sync_single_for_device(tbl->dma_dev, b->dma,
						   TB5_FRAME_MAX,
						   DMA_FROM_DEVICE);
			ret = tb_ring_rx(tbl->rx_ring, &b->frame);
			if (ret)
				return ret;
		}
		tbl->poll_busy_ns = ktime_get_ns();
		WRITE_ONCE(tbl->rx_running, true);
		return 0;
	case TB5_TB_STEP_PATHS:
		/* Last: the RX ring is primed, frames may flow now. */
		return tb_xdomain_enable_paths(xd, tbl->out_hopid,
					       tbl->tx_ring->hop,
					       tbl->in_hopid,
					       tbl->rx_ring->hop);
	case TB5_TB_STEP_LINK_UP:
		spin_lock_bh(&tbl->tx_lock);
		tbl->running = true;
		spin_unlock_bh(&tbl->tx_lock);
		tb5_tb_read_speed(tbl);
		tb5_link_up(tbl->dev->link);
		return 0;
	case TB5_TB_NSTEPS:
		break;
	}
	return -EINVAL;
}

static void tb5_tb_step_undo(struct tb5_tb_link *tbl, enum tb5_tb_step s)
{
	struct tb_xdomain *xd = tbl->xd;
	int ret;

	lockdep_assert_held(&tbl->conn_lock);
	switch (s) {
	case TB5_TB_STEP_LINK_UP:
		/*
		 * The core transmits no more (its frames are refused with
		 * -ENOLINK). It hears of the link going down only once the
		 * rings are stopped: tb5_tb_disconnect().
		 */
		spin_lock_bh(&tbl->tx_lock);
		tbl->running = false;
		spin_unlock_bh(&tbl->tx_lock);
		break;
	case TB5_TB_STEP_PATHS:
		ret = tb_xdomain_disable_paths(xd, tbl->out_hopid,
					       tbl->tx_ring->hop,
					       tbl->in_hopid,
					       tbl->rx_ring->hop);
		if (ret && !READ_ONCE(xd->is_unplugged))
			dev_warn(&tbl->svc->dev, "disabling the DMA paths failed: %d\n",
				 ret);
		break;
	case TB5_TB_STEP_RX_PRIME:
		WRITE_ONCE(tbl->rx_running, false);
		cancel_work_sync(&tbl->poll_work);
		tb5_tb_rearm(tbl);
		break;
	case TB5_TB_STEP_RX_START:
		/* Posted buffers are dropped by the ring; they stay ours. */
		tb_ring_stop(tbl->rx_ring);
		cancel_work_sync(&tbl->poll_work);
		atomic_set(&tbl->rx_masked, 0);
		break;
	case TB5_TB_STEP_TX_START:
		tb_ring_stop(tbl->tx_ring);
		spin_lock_bh(&tbl->tx_lock);
		tb5_tb_txq_reset(&tbl->txq);
		spin_unlock_bh(&tbl->tx_lock);
		break;
	case TB5_TB_STEP_IN_HOPID:
		tb_xdomain_release_in_hopid(xd, tbl->in_hopid);
		tbl->in_hopid = -1;
		break;
	case TB5_TB_NSTEPS:
		break;
	}
}

/*
 * Undo whatever the connection has done, last step first; then, if the core
 * had been told the rings run, tell it they stopped. Not before: a frame
 * still on the TX ring may be read from a send's own memory (zero-copy),
 * and the core hands that memory back when it fails the send.
 */
static void tb5_tb_disconnect(struct tb5_tb_link *tbl)
{
	bool core_up = false;
	int s;

	lockdep_assert_held(&tbl->conn_lock);
	while ((s = tb5_tb_ledger_undo(&tbl->ledger)) >= 0) {
		dev_dbg(&tbl->svc->dev, "down: %s\n", tb5_tb_step_name(s));
		tb5_tb_step_undo(tbl, s);
		if (s == TB5_TB_STEP_LINK_UP)
			core_up = true;
	}
	if (core_up)
		tb5_link_down(tbl->dev->link, -ENOLINK);
}

static int tb5_tb_connect(struct tb5_tb_link *tbl,
			  const struct tb5_tb_peer *peer)
{
	int s, ret;

	lockdep_assert_held(&tbl->conn_lock);
	while ((s = tb5_tb_ledger_next(&tbl->ledger)) >= 0) {
		ret = tb5_tb_step_do(tbl, s, peer);
		if (ret) {
			dev_warn(&tbl->svc->dev, "connecting: %s failed: %d\n",
				 tb5_tb_step_name(s), ret);
			return ret;
		}
		tb5_tb_ledger_mark(&tbl->ledger, s);
	}
	dev_info(&tbl->svc->dev,
		 "tb5_%u: up: HopIDs out %d in %d, rings %d/%d, %u Mb/s, e2e %s\n",
		 tbl->dev->index, tbl->out_hopid, tbl->in_hopid,
		 tbl->tx_ring->hop, tbl->rx_ring->hop, tbl->dev->speed_mbps,
		 tbl->features & TB5_TB_F_E2E ? "on" : "off");
	if (peer->ring_size != tbl->ring_size)
		dev_info(&tbl->svc->dev, "tb5_%u: the peer's rings have %u descriptors, ours %u\n",
			 tbl->dev->index, peer->ring_size, tbl->ring_size);
	return 0;
}

/* -- login ------------------------------------------------------------------ */

static void tb5_tb_apply(struct tb5_tb_link *tbl, const struct tb5_tb_act *act)
{
	lockdep_assert_held(&tbl->login_lock);
	if (act->flags & TB5_TB_ACT_DISCONNECT)
		tbl->force_down = true;
	if (act->flags & (TB5_TB_ACT_DISCONNECT | TB5_TB_ACT_CONNECT))
		queue_work(tb5_tb_wq, &tbl->conn_work);
	if (act->flags & TB5_TB_ACT_SEND_LOGIN)
		mod_delayed_work(tb5_tb_wq, &tbl->login_work,
				 msecs_to_jiffies(act->delay_ms));
}

/* Route and UUIDs of a message from us to the peer. */
static void tb5_tb_address(struct tb5_tb_link *tbl, struct tb5_tb_msg *m)
{
	m->route = tbl->xd->route;
	memcpy(m->sender, tbl->xd->local_uuid->b, 16);
	memcpy(m->target, tbl->xd->remote_uuid->b, 16);
}

/* Send a request and wait for its response (@r on success). */
static int tb5_tb_request(struct tb5_tb_link *tbl, const struct tb5_tb_msg *m,
			  struct tb5_tb_msg *r, unsigned int timeout_ms)
{
	u32 req[TB5_TB_MSG_WORDS], resp[TB5_TB_MSG_WORDS];
	struct tb_xdomain *xd = tbl->xd;
	int ret;

	tb5_tb_msg_encode(m, req);
	memset(resp, 0, sizeof(resp));
	/* As thunderbolt-net does, requests travel as XDomain responses. */
	ret = tb_xdomain_request(xd, req, sizeof(req), TB_CFG_PKG_XDOMAIN_RESP,
				 resp, sizeof(resp), TB_CFG_PKG_XDOMAIN_RESP,
				 timeout_ms);
	if (ret)
		return ret;
	ret = tb5_tb_msg_decode(resp, sizeof(resp), r);
	if (!ret && !tb5_tb_msg_for(r, xd->route, xd->remote_uuid->b,
				    xd->local_uuid->b))
		ret = -EBADMSG;
	return ret;
}

static void tb5_tb_login_work(struct work_struct *work)
{
	struct tb5_tb_link *tbl = container_of(to_delayed_work(work),
					       struct tb5_tb_link, login_work);
	struct tb5_tb_msg m, r;
	struct tb5_tb_act act;
	u32 cmd;
	int ret;

	mutex_lock(&tbl->login_lock);
	if (tbl->stopping || tbl->login.state != TB5_TB_LOGIN ||
	    tbl->login.sent) {
		mutex_unlock(&tbl->login_lock);
		return;
	}
	cmd = tb5_tb_login_request(&tbl->login, TB5_TB_MSG_LOGIN, &m);
	tb5_tb_address(tbl, &m);
	mutex_unlock(&tbl->login_lock);

	/* No lock held: the response comes through the handler's path. */
	ret = tb5_tb_request(tbl, &m, &r, TB5_TB_LOGIN_TIMEOUT_MS);
	dev_dbg(&tbl->svc->dev, "LOGIN %u: %d\n", cmd, ret);

	mutex_lock(&tbl->login_lock);
	if (!tbl->stopping) {
		tb5_tb_login_result(&tbl->login, cmd, ret, ret ? NULL : &r,
				    &act);
		tb5_tb_apply(tbl, &act);
		if (tbl->login.state == TB5_TB_WAIT && ret)
			dev_info(&tbl->svc->dev,
				 "tb5_%u: the peer does not answer the login (%d): waiting for it\n",
				 tbl->dev->index, ret);
	}
	mutex_unlock(&tbl->login_lock);
}

static void tb5_tb_conn_work(struct work_struct *work)
{
	struct tb5_tb_link *tbl = container_of(work, struct tb5_tb_link,
					       conn_work);
	struct tb5_tb_peer peer;
	struct tb5_tb_act act;
	bool down, up;
	int ret;

	mutex_lock(&tbl->conn_lock);
	mutex_lock(&tbl->login_lock);
	if (tbl->stopping) {
		mutex_unlock(&tbl->login_lock);
		mutex_unlock(&tbl->conn_lock);
		return;
	}
	up = tbl->login.state == TB5_TB_CONNECTED;
	down = tbl->force_down || !up;
	tbl->force_down = false;
	peer = tbl->login.peer;
	mutex_unlock(&tbl->login_lock);

	if (down)
		tb5_tb_disconnect(tbl);
	if (up && tb5_tb_ledger_next(&tbl->ledger) >= 0) {
		ret = tb5_tb_connect(tbl, &peer);
		if (ret) {
			tb5_tb_disconnect(tbl);
			mutex_lock(&tbl->login_lock);
			if (!tbl->stopping) {
				tb5_tb_login_connect_failed(&tbl->login, ret,
							    &act);
				/* Torn down already: nothing to redo. */
				act.flags &= ~TB5_TB_ACT_DISCONNECT;
				tb5_tb_apply(tbl, &act);
			}
			mutex_unlock(&tbl->login_lock);
		}
	}
	mutex_unlock(&tbl->conn_lock);
}

/* A request from the peer, found for this link by the handler. */
static void tb5_tb_rx_request(struct tb5_tb_link *tbl,
			      const struct tb5_tb_msg *m)
{
	struct tb5_tb_msg r;
	struct tb5_tb_act act;
	int ret;

	mutex_lock(&tbl->login_lock);
	tb5_tb_login_rx(&tbl->login, m, &act);
	if (act.flags & TB5_TB_ACT_RESPOND) {
		tb5_tb_login_response(m, act.status, &r);
		r.route = tbl->xd->route;
		/*
		 * Kept in the link, not on the stack: the control channel
		 * holds on to a response until it has gone out.
		 */
		tb5_tb_msg_encode(&r, tbl->resp);
		ret = tb_xdomain_response(tbl->xd, tbl->resp, sizeof(tbl->resp),
					  TB_CFG_PKG_XDOMAIN_RESP);
		if (ret)
			dev_dbg(&tbl->svc->dev, "response to %u: %d\n",
				m->type, ret);
	}
	if (m->type == TB5_TB_MSG_LOGOUT && (act.flags & TB5_TB_ACT_DISCONNECT))
		dev_info(&tbl->svc->dev, "tb5_%u: the peer logged out\n",
			 tbl->dev->index);
	tb5_tb_apply(tbl, &act);
	mutex_unlock(&tbl->login_lock);
}

/*
 * Every XDomain message with tb5's UUID, from the control channel's receive
 * path. Requests are ours to answer (1: handled); responses are left to the
 * request that waits for them (0).
 */
static int tb5_tb_handle(const void *buf, size_t size, void *data)
{
	struct tb5_tb_link *tbl;
	struct tb5_tb_msg m;
	int handled = 0;

	if (tb5_tb_msg_decode(buf, size, &m) || !tb5_tb_msg_is_request(m.type))
		return 0;
	mutex_lock(&tb5_tb_links_lock);
	list_for_each_entry(tbl, &tb5_tb_links, node) {
		struct tb_xdomain *xd = tbl->xd;

		if (!tb5_tb_msg_for(&m, xd->route, xd->remote_uuid->b,
				    xd->local_uuid->b))
			continue;
		tb5_tb_rx_request(tbl, &m);
		handled = 1;
		break;
	}
	mutex_unlock(&tb5_tb_links_lock);
	return handled;
}

static struct tb_protocol_handler tb5_tb_handler = {
	.uuid = &tb5_tb_msg_uuid_k,
	.callback = tb5_tb_handle,
};

static void tb5_tb_start(struct tb5_tb_link *tbl)
{
	struct tb5_tb_local local = {
		.path = tbl->out_hopid,
		.features = tbl->features,
		.ring_size = tbl->ring_size,
	};
	struct tb5_tb_act act;

	mutex_lock(&tbl->login_lock);
	tbl->stopping = false;
	tbl->force_down = false;
	tb5_tb_login_start(&tbl->login, &local, get_random_u32(), &act);
	tb5_tb_apply(tbl, &act);
	mutex_unlock(&tbl->login_lock);
}

static void tb5_tb_logout(struct tb5_tb_link *tbl)
{
	struct tb5_tb_msg m, r;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < TB5_TB_LOGOUT_RETRIES; i++) {
		mutex_lock(&tbl->login_lock);
		tb5_tb_login_request(&tbl->login, TB5_TB_MSG_LOGOUT, &m);
		tb5_tb_address(tbl, &m);
		mutex_unlock(&tbl->login_lock);
		ret = tb5_tb_request(tbl, &m, &r, TB5_TB_LOGOUT_TIMEOUT_MS);
		if (ret != -ETIMEDOUT)
			break;
	}
	dev_dbg(&tbl->svc->dev, "LOGOUT: %d\n", ret);
}

/* Stop the login and the connection (remove, suspend, shutdown). */
static void tb5_tb_stop(struct tb5_tb_link *tbl)
{
	struct tb5_tb_act act;
	bool logout;

	mutex_lock(&tbl->login_lock);
	tbl->stopping = true;
	logout = tb5_tb_login_stop(&tbl->login, &act);
	mutex_unlock(&tbl->login_lock);
	cancel_delayed_work_sync(&tbl->login_work);
	cancel_work_sync(&tbl->conn_work);
	/* The peer tears down its side; a pulled cable has no peer. */
	if (logout && !READ_ONCE(tbl->xd->is_unplugged))
		tb5_tb_logout(tbl);
	mutex_lock(&tbl->conn_lock);
	tb5_tb_disconnect(tbl);
	mutex_unlock(&tbl->conn_lock);
}

/* -- probe and remove ---------------------------------------------------- */

static void tb5_tb_bufs_free(struct tb5_tb_link *tbl, struct tb5_tb_buf *bufs,
			     enum dma_data_direction dir)
{
	u32 i;

	if (!bufs)
		return;
	for (i = 0; i < tbl->ring_size; i++) {
		if (!bufs[i].va)
			continue;
		dma_unmap_single(tbl->dma_dev, bufs[i].dma, TB5_FRAME_MAX, dir);
		kfree(bufs[i].va);
	}
	kvfree(bufs);
}

/* A 4 KiB DMA buffer per descriptor, mapped once for the link's life. */
static struct tb5_tb_buf *tb5_tb_bufs_alloc(struct tb5_tb_link *tbl,
					    enum dma_data_direction dir)
{
	struct tb5_tb_buf *bufs;
	u32 i;

	bufs = kvcalloc(tbl->ring_size, sizeof(*bufs), GFP_KERNEL);
	if (!bufs)
		return NULL;
	for (i = 0; i < tbl->ring_size; i++) {
		struct tb5_tb_buf *b = &bufs[i];

		/* kmalloc() aligns 4096 bytes to 4096: no shared lines. */
		b->va = kmalloc(TB5_FRAME_MAX, GFP_KERNEL);
		if (!b->va)
			goto err;
		b->dma = dma_map_single(tbl->dma_dev, b->va, TB5_FRAME_MAX, dir);
		if (dma_mapping_error(tbl->dma_dev, b->dma)) {
			kfree(b->va);
			b->va = NULL;
			goto err;
		}
		b->tbl = tbl;
		b->slot = i;
		b->frame.buffer_phy = b->dma;
		if (dir == DMA_TO_DEVICE)
			b->frame.callback = tb5_tb_tx_callback;
	}
	return bufs;

err:
	tb5_tb_bufs_free(tbl, bufs, dir);
	return NULL;
}

static void tb5_tb_throttle(struct tb5_tb_link *tbl)
{
#if TB5_TB_HAVE_THROTTLING
	int ret;

	if (tb5_tb_irq_ns < 0)
		return;
	ret = tb_ring_throttling(tbl->rx_ring, tb5_tb_irq_ns);
	if (!ret)
		ret = tb_ring_throttling(tbl->tx_ring, tb5_tb_irq_ns);
	if (ret)
		dev_warn(&tbl->svc->dev, "tb_irq_ns=%d refused: %d\n",
			 tb5_tb_irq_ns, ret);
#else
	if (tb5_tb_irq_ns >= 0)
		dev_info(&tbl->svc->dev,
			 "tb_irq_ns ignored: this kernel cannot throttle one ring's interrupts (use tb_poll_us)\n");
#endif
}

/* TX ring, our transmit HopID, RX ring; undone in reverse by rings_free. */
static int tb5_tb_rings_alloc(struct tb5_tb_link *tbl)
{
	struct tb_nhi *nhi = tbl->xd->tb->nhi;
	unsigned int flags = RING_FLAG_FRAME;
	int ret;

	if (tbl->features & TB5_TB_F_E2E)
		flags |= RING_FLAG_E2E;
	tbl->tx_ring = tb_ring_alloc_tx(nhi, -1, tbl->ring_size, flags);
	if (!tbl->tx_ring)
		return -ENOMEM;
	ret = tb_xdomain_alloc_out_hopid(tbl->xd, -1);
	if (ret < 0)
		goto err_free_tx;
	tbl->out_hopid = ret;
	/* E2E credits for the peer go out through our TX ring's hop. */
	tbl->rx_ring = tb_ring_alloc_rx(nhi, -1, tbl->ring_size, flags,
					tbl->tx_ring->hop, TB5_TB_SOF_MASK,
					TB5_TB_EOF_MASK, tb5_tb_start_poll, tbl);
	if (!tbl->rx_ring) {
		ret = -ENOMEM;
		goto err_release_out;
	}
	tbl->dma_dev = tb_ring_dma_device(tbl->tx_ring);
	tb5_tb_throttle(tbl);
	return 0;

err_release_out:
	tb_xdomain_release_out_hopid(tbl->xd, tbl->out_hopid);
err_free_tx:
	tb_ring_free(tbl->tx_ring);
	tbl->tx_ring = NULL;
	return ret;
}

static void tb5_tb_rings_free(struct tb5_tb_link *tbl)
{
	tb_ring_free(tbl->rx_ring);
	tb_xdomain_release_out_hopid(tbl->xd, tbl->out_hopid);
	tb_ring_free(tbl->tx_ring);
}

static int tb5_tb_probe(struct tb_service *svc, const struct tb_service_id *id)
{
	struct tb_xdomain *xd = tb_service_parent(svc);
	struct tb5_tb_link *tbl;
	struct tb5_dev *dev;
	int ret;

	ret = tb5_tb_service_check(svc->prtcid, svc->prtcvers);
	if (ret) {
		dev_info(&svc->dev, "the peer speaks tb5 protocol %u version %u, not %u version %u: not used\n",
			 svc->prtcid, svc->prtcvers, TB5_TB_PRTCID,
			 TB5_TB_PRTCVERS);
		return ret;
	}
	if (!xd || !xd->remote_uuid)
		return -ENODEV;
	tbl = kzalloc(sizeof(*tbl), GFP_KERNEL);
	if (!tbl)
		return -ENOMEM;
	tbl->svc = svc;
	tbl->xd = xd;
	tbl->ring_size = tb5_ring_size;
	tbl->in_hopid = -1;
	tbl->features = tb5_tb_agree(tb5_tb_e2e ? TB5_TB_F_E2E : 0,
				     svc->prtcstns);
	mutex_init(&tbl->login_lock);
	mutex_init(&tbl->conn_lock);
	spin_lock_init(&tbl->tx_lock);
	INIT_DELAYED_WORK(&tbl->login_work, tb5_tb_login_work);
	INIT_WORK(&tbl->conn_work, tb5_tb_conn_work);
	INIT_WORK(&tbl->poll_work, tb5_tb_poll);
	atomic_set(&tbl->rx_masked, 0);
	atomic64_set(&tbl->ring_errors, 0);
	atomic64_set(&tbl->tx_zerocopy, 0);
	atomic64_set(&tbl->tx_copied, 0);

	ret = tb5_tb_txq_init(&tbl->txq, tbl->ring_size);
	if (ret)
		goto err_free;
	ret = tb5_tb_rings_alloc(tbl);
	if (ret)
		goto err_txq;
	tbl->tx_bufs = tb5_tb_bufs_alloc(tbl, DMA_TO_DEVICE);
	tbl->rx_bufs = tb5_tb_bufs_alloc(tbl, DMA_FROM_DEVICE);
	if (!tbl->tx_bufs || !tbl->rx_bufs) {
		ret = -ENOMEM;
		goto err_bufs;
	}
	dev = tb5_dev_create(TB5_DEV_INDEX_ANY, tb5_tb_host_id, &tb5_tb_ops,
			     tbl);
	if (IS_ERR(dev)) {
		ret = PTR_ERR(dev);
		goto err_bufs;
	}
	tbl->dev = dev;
	dev->parent = &svc->dev;
	dev->groups = tb5_tb_groups;
	tb5_tb_read_speed(tbl);
	ret = tb5_dev_publish(dev);
	if (ret)
		goto err_dev;
	tb_service_set_drvdata(svc, tbl);

	mutex_lock(&tb5_tb_links_lock);
	list_add_tail(&tbl->node, &tb5_tb_links);
	mutex_unlock(&tb5_tb_links_lock);

	dev_info(&svc->dev, "tb5_%u: link to %pUb (%s), %u Mb/s, end-to-end flow control %s\n",
		 dev->index, xd->remote_uuid, xd->device_name ?: "unnamed",
		 dev->speed_mbps, tbl->features & TB5_TB_F_E2E ? "on" :
		 "off (the peer or tb_e2e=0 does without)");
	tb5_tb_start(tbl);
	return 0;

err_dev:
	tb5_dev_detach_backend(dev);
	tb5_dev_destroy(dev);
err_bufs:
	tb5_tb_bufs_free(tbl, tbl->rx_bufs, DMA_FROM_DEVICE);
	tb5_tb_bufs_free(tbl, tbl->tx_bufs, DMA_TO_DEVICE);
	tb5_tb_rings_free(tbl);
err_txq:
	tb5_tb_txq_free(&tbl->txq);
err_free:
	mutex_destroy(&tbl->conn_lock);
	mutex_destroy(&tbl->login_lock);
	kfree(tbl);
	return ret;
}

/* Cable pulled, peer gone, module unloaded: probe's work, undone. */
static void tb5_tb_remove(struct tb_service *svc)
{
	struct tb5_tb_link *tbl = tb_service_get_drvdata(svc);
	struct tb5_dev *dev = tbl->dev;

	tb5_tb_stop(tbl);
	mutex_lock(&tb5_tb_links_lock);
	list_del(&tbl->node);
	mutex_unlock(&tb5_tb_links_lock);
	dev_info(&svc->dev, "tb5_%u: link removed\n", dev->index);
	/*
	 * Files still open keep the end (its link is down) but not us, and
	 * not the NHI: their regions are unmapped for it now.
	 */
	tb5_dev_unpublish(dev);
	tb5_dev_detach_backend(dev);
	tb5_dev_destroy(dev);
	tb5_tb_bufs_free(tbl, tbl->rx_bufs, DMA_FROM_DEVICE);
	tb5_tb_bufs_free(tbl, tbl->tx_bufs, DMA_TO_DEVICE);
	tb5_tb_rings_free(tbl);
	tb5_tb_txq_free(&tbl->txq);
	mutex_destroy(&tbl->conn_lock);
	mutex_destroy(&tbl->login_lock);
	kfree(tbl);
}

static void tb5_tb_shutdown(struct tb_service *svc)
{
	tb5_tb_stop(tb_service_get_drvdata(svc));
}

static int tb5_tb_suspend(struct device *d)
{
	tb5_tb_stop(tb_service_get_drvdata(tb_to_service(d)));
	return 0;
}

static int tb5_tb_resume(struct device *d)
{
	tb5_tb_start(tb_service_get_drvdata(tb_to_service(d)));
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(tb5_tb_pm_ops, tb5_tb_suspend, tb5_tb_resume);

static const struct tb_service_id tb5_tb_ids[] = {
	{ TB_SERVICE(TB5_TB_KEY, TB5_TB_PRTCID) },
	{ },
};
MODULE_DEVICE_TABLE(tbsvc, tb5_tb_ids);

static struct tb_service_driver tb5_tb_driver = {
	.driver = {
		.owner = THIS_MODULE,
		.name = "tb5",
		.pm = pm_sleep_ptr(&tb5_tb_pm_ops),
	},
	.probe = tb5_tb_probe,
	.remove = tb5_tb_remove,
	.shutdown = tb5_tb_shutdown,
	.id_table = tb5_tb_ids,
};

/* -- module --------------------------------------------------------------- */

static int tb5_tb_dir_create(void)
{
	struct tb5_tb_prop props[TB5_TB_NPROPS];
	unsigned int i;
	int ret;

	tb5_tb_dir = tb_property_create_dir(&tb5_tb_dir_uuid_k);
	if (!tb5_tb_dir)
		return -ENOMEM;
	tb5_tb_props(tb5_tb_e2e, props);
	for (i = 0; i < TB5_TB_NPROPS; i++) {
		ret = tb_property_add_immediate(tb5_tb_dir, props[i].key,
						props[i].value);
		if (ret) {
			tb_property_free_dir(tb5_tb_dir);
			tb5_tb_dir = NULL;
			return ret;
		}
	}
	return 0;
}

int tb5_tb_init(void)
{
	int ret;

	/* The NHI's descriptor flags, as tb5_tb_rx_check() reads them. */
	BUILD_BUG_ON(TB5_TB_DESC_CRC_ERROR != RING_DESC_CRC_ERROR);
	BUILD_BUG_ON(TB5_TB_DESC_OVERRUN != RING_DESC_BUFFER_OVERRUN);
	BUILD_BUG_ON(TB5_FRAME_MAX != 4096);
	BUILD_BUG_ON(sizeof(TB5_TB_KEY) > TB_PROPERTY_KEY_SIZE + 1);

	import_uuid(&tb5_tb_dir_uuid_k, tb5_tb_dir_uuid);
	import_uuid(&tb5_tb_msg_uuid_k, tb5_tb_msg_uuid);
	tb5_tb_host_id = get_random_u64();
	tb5_tb_wq = alloc_workqueue("tb5_tb", WQ_UNBOUND, 0);
	if (!tb5_tb_wq)
		return -ENOMEM;
	tb5_tb_poll_wq = alloc_workqueue("tb5_tb_poll",
					 WQ_UNBOUND | WQ_HIGHPRI, 0);
	if (!tb5_tb_poll_wq) {
		ret = -ENOMEM;
		goto err_wq;
	}
	ret = tb5_tb_dir_create();
	if (ret)
		goto err_poll_wq;
	ret = tb_register_property_dir(TB5_TB_KEY, tb5_tb_dir);
	if (ret)
		goto err_free_dir;
	ret = tb_register_protocol_handler(&tb5_tb_handler);
	if (ret)
		goto err_unregister_dir;
	ret = tb_register_service_driver(&tb5_tb_driver);
	if (ret)
		goto err_unregister_handler;
	pr_info("Thunderbolt backend: service \"%s\" registered, end-to-end flow control %s\n",
		TB5_TB_KEY, tb5_tb_e2e ? "offered" : "not offered");
	return 0;

err_unregister_handler:
	tb_unregister_protocol_handler(&tb5_tb_handler);
err_unregister_dir:
	tb_unregister_property_dir(TB5_TB_KEY, tb5_tb_dir);
err_free_dir:
	tb_property_free_dir(tb5_tb_dir);
	tb5_tb_dir = NULL;
err_poll_wq:
	destroy_workqueue(tb5_tb_poll_wq);
err_wq:
	destroy_workqueue(tb5_tb_wq);
	return ret;
}

void tb5_tb_exit(void)
{
	/* Removes every link: remove() runs for each. */
	tb_unregister_service_driver(&tb5_tb_driver);
	tb_unregister_protocol_handler(&tb5_tb_handler);
	tb_unregister_property_dir(TB5_TB_KEY, tb5_tb_dir);
	tb_property_free_dir(tb5_tb_dir);
	tb5_tb_dir = NULL;
	destroy_workqueue(tb5_tb_poll_wq);
	destroy_workqueue(tb5_tb_wq);
}
