// SPDX-License-Identifier: GPL-2.0-only
/*
 * tbemu_main.c - the cable: an ivshmem-plain PCI device, its shared memory,
 * and the engine thread that plays this end's NHI and its link.
 *
 * Binding to the PCI device claims one end of the cable's memory. The engine
 * thread then, over and over: bumps our heartbeat; watches the plug state,
 * the peer's heartbeat and session and its published services (and asks the
 * discovery work to make or remove the XDomain and its services); puts
 * queued control packets and TX ring frames on our wire; and takes the
 * peer's wire: control packets to the XDomain code, frames to the RX ring
 * bound to their HopID. It sleeps briefly whenever a pass found nothing.
 *
 * sysfs on the PCI device (tbemu/): plugged (rw: 0 pulls the cable for both
 * ends, 1 plugs it back), pm_cycle (w: this host suspends the services on
 * the cable and resumes them after that many ms), side, peer_present,
 * tx_frames, rx_frames, rx_dropped, tx_no_path, ctl_rx.
 *
 * Module parameters (runtime-writable: fault injection on this host's end):
 *   drop_requests  XDomain requests to ignore, counted down
 *   delay_ms       delay before each incoming request is handed over
 *   dup_responses  responses to send twice, counted down
 */
#define pr_fmt(fmt) "tbemu: " fmt

#include <linux/delay.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/utsname.h>

#include "tbemu.h"

#define PCI_VENDOR_ID_REDHAT_QUMRANET	0x1af4
#define PCI_DEVICE_ID_IVSHMEM		0x1110
#define TBEMU_BAR			2

unsigned int tbemu_drop_requests;
module_param_named(drop_requests, tbemu_drop_requests, uint, 0644);
MODULE_PARM_DESC(drop_requests, "XDomain requests to ignore (counted down)");
unsigned int tbemu_delay_ms;
module_param_named(delay_ms, tbemu_delay_ms, uint, 0644);
MODULE_PARM_DESC(delay_ms, "Delay before each incoming request is handled");
unsigned int tbemu_dup_responses;
module_param_named(dup_responses, tbemu_dup_responses, uint, 0644);
MODULE_PARM_DESC(dup_responses, "Responses to send twice (counted down)");

static uuid_t tbemu_uuid;
static char tbemu_name[32];
static DEFINE_IDA(tbemu_cable_ida);

const uuid_t *tbemu_host_uuid(void)
{
	return &tbemu_uuid;
}

const char *tbemu_host_name(void)
{
	return tbemu_name;
}

/* A control packet that waits for room on the wire. */
struct tbemu_ctl_pkt {
	struct list_head node;
	u32 type;
	size_t size;
	u8 data[];
};

int tbemu_ctl_send(struct tbemu_cable *c, enum tb_cfg_pkg_type type,
		   const void *buf, size_t size, gfp_t gfp)
{
	struct tbemu_ctl_pkt *p;
	unsigned long flags;

	if (!size || size > TBEMU_CTL_MAX || size % 4)
		return -EINVAL;
	p = kmalloc(struct_size(p, data, size), gfp);
	if (!p)
		return -ENOMEM;
	p->type = type;
	p->size = size;
	memcpy(p->data, buf, size);
	spin_lock_irqsave(&c->ctl_lock, flags);
	list_add_tail(&p->node, &c->ctl_out);
	spin_unlock_irqrestore(&c->ctl_lock, flags);
	return 0;
}

static void tbemu_ctl_flush(struct tbemu_cable *c)
{
	struct tbemu_ctl_pkt *p, *n;
	unsigned long flags;
	LIST_HEAD(gone);

	spin_lock_irqsave(&c->ctl_lock, flags);
	list_splice_init(&c->ctl_out, &gone);
	spin_unlock_irqrestore(&c->ctl_lock, flags);
	list_for_each_entry_safe(p, n, &gone, node)
		kfree(p);
}

/* A free slot of our wire, or NULL when the peer has not caught up. */
struct tbemu_slot *tbemu_wire_slot(struct tbemu_cable *c)
{
	u32 head = tbemu_me(c)->tx_head;
	/* Pairs with the peer's release of rx_tail: the slot is read out. */
	u32 tail = smp_load_acquire(&tbemu_peer(c)->rx_tail);

	if (head - tail >= TBEMU_SLOTS)
		return NULL;
	return &c->shm->wire[c->side][head % TBEMU_SLOTS];
}

/* Publish the slot tbemu_wire_slot() gave, once it is filled. */
void tbemu_wire_push(struct tbemu_cable *c)
{
	struct tbemu_side *me = tbemu_me(c);

	/* The slot's contents before the index that hands it over. */
	smp_store_release(&me->tx_head, me->tx_head + 1);
}

bool tbemu_connected_now(struct tbemu_cable *c)
{
	return READ_ONCE(c->shm->plugged) &&
	       READ_ONCE(tbemu_peer(c)->owner) &&
	       time_before(jiffies, c->peer_seen +
			   msecs_to_jiffies(TBEMU_PEER_DEAD_MS));
}

/* Queued control packets onto the wire. */
static int tbemu_ctl_step(struct tbemu_cable *c)
{
	struct tbemu_ctl_pkt *p;
	struct tbemu_slot *s;
	unsigned long flags;
	int n = 0;

	for (;;) {
		spin_lock_irqsave(&c->ctl_lock, flags);
		p = list_first_entry_or_null(&c->ctl_out, struct tbemu_ctl_pkt,
					     node);
		if (p)
			list_del(&p->node);
		spin_unlock_irqrestore(&c->ctl_lock, flags);
		if (!p)
			return n;
		/* Nobody at the other end: the packet is lost, as on a wire. */
		if (tbemu_connected_now(c)) {
			while (!(s = tbemu_wire_slot(c)) &&
			       !kthread_should_stop())
				usleep_range(50, 100);
			if (s) {
				s->kind = TBEMU_SLOT_CTL;
				s->hop = p->type;
				s->len = p->size;
				s->gen = READ_ONCE(c->shm->plug_gen);
				memcpy(s->data, p->data, p->size);
				tbemu_wire_push(c);
			}
		}
		kfree(p);
		n++;
	}
}

/* The peer's wire: everything it sent, in order. */
static int tbemu_wire_rx(struct tbemu_cable *c)
{
	struct tbemu_side *me = tbemu_me(c);
	u32 gen = READ_ONCE(c->shm->plug_gen);
	u32 tail = me->rx_tail;
	/* Pairs with the peer's tbemu_wire_push(): slots up to head are full. */
	u32 head = smp_load_acquire(&tbemu_peer(c)->tx_head);
	int n = 0;

	while (tail != head && n < 64) {
		const struct tbemu_slot *s = &c->shm->wire[!c->side][tail % TBEMU_SLOTS];

		/*
		 * Sent before the last pull: lost with the cable. A DATA slot
		 * may claim more than a frame: a hostile peer's frame longer
		 * than the buffers, which the RX ring reports as an overrun.
		 */
		if (s->gen == gen) {
			if (s->kind == TBEMU_SLOT_CTL && s->len <= TBEMU_CTL_MAX) {
				atomic64_inc(&c->ctl_rx);
				tbemu_ctl_rx(c, s->hop, s->data, s->len);
			} else if (s->kind == TBEMU_SLOT_DATA) {
				tbemu_ring_rx_frame(c, s);
			}
		}
		tail++;
		n++;
		/* Done reading the slot before the peer may reuse it. */
		smp_store_release(&me->rx_tail, tail);
	}
	return n;
}

/* Plug state, the peer's liveness and services: discovery's business. */
static void tbemu_watch(struct tbemu_cable *c)
{
	struct tbemu_side *peer = tbemu_peer(c);
	u64 hb = READ_ONCE(peer->heartbeat);
	bool want, have;

	WRITE_ONCE(tbemu_me(c)->heartbeat, tbemu_me(c)->heartbeat + 1);
	if (hb != c->peer_heartbeat) {
		c->peer_heartbeat = hb;
		c->peer_seen = jiffies;
	}
	want = tbemu_connected_now(c);
	have = READ_ONCE(c->xd) != NULL;
	if (want != have || (have && (tbemu_xd_stale(c) ||
		READ_ONCE(c->seen_prop_gen) != READ_ONCE(peer->prop_gen))))
		queue_work(c->wq, &c->xd_work);
}

static int tbemu_engine(void *data)
{
	struct tbemu_cable *c = data;
	unsigned int idle = 0;

	while (!kthread_should_stop()) {
		int n;

		tbemu_watch(c);
		n = tbemu_ctl_step(c);
		n += tbemu_rings_step(c);
		n += tbemu_wire_rx(c);
		if (n) {
			idle = 0;
			cond_resched();
			continue;
		}
		/* Quick while traffic may resume; then gentle on the VM. */
		if (++idle < 200)
			usleep_range(50, 100);
		else
			usleep_range(1000, 2000);
	}
	return 0;
}

/* -- sysfs ---------------------------------------------------------------- */

static struct tbemu_cable *to_cable(struct device *d)
{
	return pci_get_drvdata(to_pci_dev(d));
}

static ssize_t plugged_show(struct device *d, struct device_attribute *a,
			    char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_cable(d)->shm->plugged));
}

static ssize_t plugged_store(struct device *d, struct device_attribute *a,
			     const char *buf, size_t count)
{
	struct tbemu_shm *shm = to_cable(d)->shm;
	bool in;
	int ret = kstrtobool(buf, &in);

	if (ret)
		return ret;
	if (!in && READ_ONCE(shm->plugged)) {
		/* Everything on the wires now is lost with the cable. */
		WRITE_ONCE(shm->plug_gen, shm->plug_gen + 1);
		/* The new generation before the pulled state. */
		smp_wmb();
	}
	WRITE_ONCE(shm->plugged, in);
	return count;
}
static DEVICE_ATTR_RW(plugged);

static ssize_t pm_cycle_store(struct device *d, struct device_attribute *a,
			      const char *buf, size_t count)
{
	unsigned int ms;
	int ret = kstrtouint(buf, 0, &ms);

	if (ret)
		return ret;
	if (ms > 60000)
		return -EINVAL;
	ret = tbemu_pm_cycle(to_cable(d), ms);
	return ret ? ret : count;
}
static DEVICE_ATTR_WO(pm_cycle);

static ssize_t side_show(struct device *d, struct device_attribute *a,
			 char *buf)
{
	return sysfs_emit(buf, "%d\n", to_cable(d)->side);
}
static DEVICE_ATTR_RO(side);

static ssize_t peer_present_show(struct device *d, struct device_attribute *a,
				 char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(to_cable(d)->xd) != NULL);
}
static DEVICE_ATTR_RO(peer_present);

#define TBEMU_COUNTER(name)						\
static ssize_t name##_show(struct device *d, struct device_attribute *a, \
			   char *buf)					\
{									\
	return sysfs_emit(buf, "%lld\n",				\
			  atomic64_read(&to_cable(d)->name));		\
}									\
static DEVICE_ATTR_RO(name)

TBEMU_COUNTER(tx_frames);
TBEMU_COUNTER(rx_frames);
TBEMU_COUNTER(rx_dropped);
TBEMU_COUNTER(tx_no_path);
TBEMU_COUNTER(ctl_rx);

static ssize_t attack_show(struct device *d, struct device_attribute *a,
			   char *buf)
{
	return tbemu_attack_show(to_cable(d), buf);
}

static ssize_t attack_store(struct device *d, struct device_attribute *a,
			    const char *buf, size_t count)
{
	int ret = tbemu_attack_cmd(to_cable(d), buf);

	return ret ? ret : count;
}
static DEVICE_ATTR_RW(attack);

static struct attribute *tbemu_attrs[] = {
	&dev_attr_plugged.attr,
	&dev_attr_attack.attr,
	&dev_attr_pm_cycle.attr,
	&dev_attr_side.attr,
	&dev_attr_peer_present.attr,
	&dev_attr_tx_frames.attr,
	&dev_attr_rx_frames.attr,
	&dev_attr_rx_dropped.attr,
	&dev_attr_tx_no_path.attr,
	&dev_attr_ctl_rx.attr,
	NULL,
};

static const struct attribute_group tbemu_group = {
	.name = "tbemu",
	.attrs = tbemu_attrs,
};

/* -- the PCI device ------------------------------------------------------- */

/* Take a free end of the cable (or ours again, after an unbind). */
static int tbemu_claim(struct tbemu_cable *c)
{
	struct tbemu_shm *shm = c->shm;
	int s;

	if (READ_ONCE(shm->magic) != TBEMU_MAGIC) {
		/* A fresh cable: the first end to come lays it out. */
		if (cmpxchg(&shm->layout, 0, TBEMU_LAYOUT) == 0) {
			shm->plugged = 1;
			/* The layout before the magic that says it is there. */
			smp_wmb();
			WRITE_ONCE(shm->magic, TBEMU_MAGIC);
		} else {
			while (READ_ONCE(shm->magic) != TBEMU_MAGIC)
				usleep_range(1000, 2000);
		}
	}
	if (READ_ONCE(shm->layout) != TBEMU_LAYOUT)
		return -EPROTO;
	for (s = 0; s < 2; s++) {
		if (cmpxchg(&shm->side[s].owner, 0, c->claim) == 0) {
			c->side = s;
			return 0;
		}
	}
	return -EBUSY;
}

static void tbemu_side_init(struct tbemu_cable *c)
{
	struct tbemu_side *me = tbemu_me(c);
	int h;

	export_uuid(me->uuid, &tbemu_uuid);
	strscpy(me->name, tbemu_name, sizeof(me->name));
	WRITE_ONCE(me->nprops, 0);
	for (h = 0; h < TBEMU_HOPS; h++)
		WRITE_ONCE(me->rx_epoch[h], me->rx_epoch[h] + 1);
	/* Whatever the peer sent to our previous life is not ours. */
	WRITE_ONCE(me->rx_tail, READ_ONCE(tbemu_peer(c)->tx_head));
	/* Even: not being written (tbemu_publish_props() makes it odd). */
	WRITE_ONCE(me->prop_gen, (me->prop_gen | 1) + 1);
	/* All of the above before the session that tells the peer to look. */
	smp_wmb();
	WRITE_ONCE(me->session, get_random_u32() | 1);
}

static int tbemu_domain_init(struct tbemu_cable *c)
{
	c->tb = kzalloc(sizeof(*c->tb), GFP_KERNEL);
	c->nhi = kzalloc(sizeof(*c->nhi), GFP_KERNEL);
	if (!c->tb || !c->nhi)
		return -ENOMEM;
	spin_lock_init(&c->nhi->lock);
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 2, 0)
	c->nhi->dev = &c->pdev->dev;
#else
	c->nhi->pdev = c->pdev;
#endif
	c->nhi->hop_count = TBEMU_RINGS;
	c->nhi->iommu_dma_protection = false;
	mutex_init(&c->tb->lock);
	c->tb->nhi = c->nhi;
	c->tb->index = c->index;
	return 0;
}

static int tbemu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct tbemu_cable *c;
	resource_size_t len;
	int ret;

	len = pci_resource_len(pdev, TBEMU_BAR);
	if (len < sizeof(struct tbemu_shm)) {
		dev_err(&pdev->dev, "shared memory of %pa bytes, %zu needed\n",
			&len, sizeof(struct tbemu_shm));
		return -ENOSPC;
	}
	c = devm_kzalloc(&pdev->dev, sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	c->atk = devm_kzalloc(&pdev->dev, sizeof(*c->atk), GFP_KERNEL);
	if (!c->atk)
		return -ENOMEM;
	c->pdev = pdev;
	mutex_init(&c->xd_lock);
	spin_lock_init(&c->path_lock);
	spin_lock_init(&c->ctl_lock);
	INIT_LIST_HEAD(&c->waiters);
	INIT_LIST_HEAD(&c->ctl_out);
	INIT_WORK(&c->xd_work, tbemu_xd_work);
	c->claim = get_random_u32() | 1;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	pci_set_master(pdev);
	/* The NHI's DMA device: a real one, with a mask, for swiotlb. */
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		return ret;
	c->shm = devm_memremap(&pdev->dev, pci_resource_start(pdev, TBEMU_BAR),
			       sizeof(struct tbemu_shm), MEMREMAP_WB);
	if (IS_ERR(c->shm))
		return PTR_ERR(c->shm);
	ret = tbemu_claim(c);
	if (ret) {
		dev_err(&pdev->dev, "no free end on this cable: %d\n", ret);
		return ret;
	}
	ret = ida_alloc(&tbemu_cable_ida, GFP_KERNEL);
	if (ret < 0)
		goto err_release;
	c->index = ret;
	ret = tbemu_domain_init(c);
	if (ret)
		goto err_domain;
	c->wq = alloc_ordered_workqueue("tbemu%d", 0, c->index);
	c->msg_wq = alloc_ordered_workqueue("tbemu%d_msg", 0, c->index);
	if (!c->wq || !c->msg_wq) {
		ret = -ENOMEM;
		goto err_wq;
	}
	pci_set_drvdata(pdev, c);
	tbemu_side_init(c);
	ret = tbemu_cable_register(c);
	if (ret)
		goto err_wq;
	ret = sysfs_create_group(&pdev->dev.kobj, &tbemu_group);
	if (ret)
		goto err_wq;
	c->peer_seen = jiffies;
	c->engine = kthread_run(tbemu_engine, c, "tbemu%d", c->index);
	if (IS_ERR(c->engine)) {
		ret = PTR_ERR(c->engine);
		goto err_sysfs;
	}
	ret = tbemu_publish_props(c);
	if (ret)
		goto err_engine;
	dev_info(&pdev->dev, "cable %d: end %d of %pa bytes, host %pUb (%s)\n",
		 c->index, c->side, &len, &tbemu_uuid, tbemu_name);
	return 0;

err_engine:
	kthread_stop(c->engine);
err_sysfs:
	sysfs_remove_group(&pdev->dev.kobj, &tbemu_group);
	tbemu_cable_unregister(c);
err_wq:
	if (c->msg_wq)
		destroy_workqueue(c->msg_wq);
	if (c->wq)
		destroy_workqueue(c->wq);
err_domain:
	kfree(c->nhi);
	kfree(c->tb);
	ida_free(&tbemu_cable_ida, c->index);
err_release:
	WRITE_ONCE(tbemu_me(c)->owner, 0);
	return ret;
}

/*
 * The host controller goes away (unbind, module unload): like the real
 * NHI's removal, the XDomain and its services go first, then the rings
 * must all have been freed by their drivers.
 */
static void tbemu_remove(struct pci_dev *pdev)
{
	struct tbemu_cable *c = pci_get_drvdata(pdev);

	/* Stop discovery from making the XDomain again. */
	WRITE_ONCE(c->removing, true);
	tbemu_cable_unregister(c);
	cancel_work_sync(&c->xd_work);
	tbemu_xd_remove(c);
	kthread_stop(c->engine);
	tbemu_rings_check_freed(c);
	sysfs_remove_group(&pdev->dev.kobj, &tbemu_group);
	flush_workqueue(c->msg_wq);
	destroy_workqueue(c->msg_wq);
	destroy_workqueue(c->wq);
	tbemu_ctl_flush(c);
	kfree(c->nhi);
	kfree(c->tb);
	ida_free(&tbemu_cable_ida, c->index);
	WRITE_ONCE(tbemu_me(c)->session, 0);
	/* Gone before the end is free for another claim. */
	smp_wmb();
	WRITE_ONCE(tbemu_me(c)->owner, 0);
}

static const struct pci_device_id tbemu_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, PCI_DEVICE_ID_IVSHMEM) },
	{ }
};
MODULE_DEVICE_TABLE(pci, tbemu_ids);

static struct pci_driver tbemu_driver = {
	.name = "tbemu",
	.id_table = tbemu_ids,
	.probe = tbemu_probe,
	.remove = tbemu_remove,
};

static int __init tbemu_init(void)
{
	int ret;

	uuid_gen(&tbemu_uuid);
	strscpy(tbemu_name, utsname()->nodename, sizeof(tbemu_name));
	ret = tbemu_bus_init();
	if (ret)
		return ret;
	ret = pci_register_driver(&tbemu_driver);
	if (ret)
		tbemu_bus_exit();
	return ret;
}

static void __exit tbemu_exit(void)
{
	pci_unregister_driver(&tbemu_driver);
	tbemu_bus_exit();
}

module_init(tbemu_init);
module_exit(tbemu_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("tbemu: an emulated USB4 host-to-host fabric for testing tb5 (test code, not shipped)");
