// SPDX-License-Identifier: GPL-2.0-only
/*
 * tbemu_xdomain.c - the service bus, property directories, XDomains and
 * their services, XDomain messages, HopIDs and DMA paths: what
 * drivers/thunderbolt/{domain,property,xdomain}.c give a service driver,
 * with the same semantics where a driver can tell:
 *
 *  - the bus is called "thunderbolt"; a service matches a driver's
 *    tb_service_id on protocol key, id, version and revision as the
 *    match_flags say; probe gets the matching id; remove and shutdown are
 *    the driver's;
 *  - a host publishes each directory registered with
 *    tb_register_property_dir(); the other end makes one tb_service per
 *    directory (key, prtcid, prtcvers, prtcrevs, prtcstns) under the
 *    XDomain of the cable, removes the ones that disappear and adds new ones
 *    when the directories change, as xdomain.c's enumerate_services() does;
 *  - the XDomain appears when both ends are bound and the cable is in, and
 *    goes away when the cable is pulled (is_unplugged set first), the peer
 *    disappears or its session changes (a reboot: a new XDomain), or the
 *    host controller is removed (is_unplugged left false);
 *  - tb_xdomain_request() sends a packet and waits for a response of the
 *    asked type whose UUID matches (tb_xdomain_match()), or -ETIMEDOUT;
 *    incoming requests go, in order and in process context, to the
 *    protocol handlers registered for their UUID, with the route of the
 *    XDomain they came through in their header;
 *  - HopIDs come from the same ranges (TB_PATH_MIN_HOPID up to the maximum
 *    of each side) with the same allocation rule; enabling a path ties our
 *    TX ring to the transmit HopID and the receive HopID to our RX ring.
 */
#define pr_fmt(fmt) "tbemu: " fmt

#include <linux/delay.h>
#include <linux/pm.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "tbemu.h"

/* An XDomain packet: route (2 words), length and sequence, the UUID. */
#define TBEMU_XDP_UUID_OFF	12
#define TBEMU_XDP_HDR_BYTES	32

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define TBEMU_DRV_CONST const
#else
#define TBEMU_DRV_CONST
#endif

static DEFINE_MUTEX(tbemu_handlers_lock);
static LIST_HEAD(tbemu_handlers);

/* Registered local property directories, published on every cable. */
struct tbemu_local_dir {
	struct list_head node;
	char key[TB_PROPERTY_KEY_SIZE + 1];
	struct tb_property_dir *dir;
};
static DEFINE_MUTEX(tbemu_dirs_lock);
static LIST_HEAD(tbemu_dirs);

/* Every bound cable, to publish directories on. */
static DEFINE_MUTEX(tbemu_cables_lock);
static LIST_HEAD(tbemu_cables);
struct tbemu_cable_ref {
	struct list_head node;
	struct tbemu_cable *c;
};

static struct tbemu_cable *xd_cable(struct tb_xdomain *xd)
{
	return dev_get_drvdata(tbemu_nhi_dev(xd->tb->nhi));
}

/* -- the bus -------------------------------------------------------------- */

static const struct tb_service_id *
tbemu_match_id(const struct tb_service *svc, const struct tb_service_driver *drv)
{
	const struct tb_service_id *id;

	for (id = drv->id_table; id && id->match_flags; id++) {
		if ((id->match_flags & TBSVC_MATCH_PROTOCOL_KEY) &&
		    strcmp(id->protocol_key, svc->key))
			continue;
		if ((id->match_flags & TBSVC_MATCH_PROTOCOL_ID) &&
		    id->protocol_id != svc->prtcid)
			continue;
		if ((id->match_flags & TBSVC_MATCH_PROTOCOL_VERSION) &&
		    id->protocol_version != svc->prtcvers)
			continue;
		if ((id->match_flags & TBSVC_MATCH_PROTOCOL_REVISION) &&
		    id->protocol_revision != svc->prtcrevs)
			continue;
		return id;
	}
	return NULL;
}

static int tbemu_bus_match(struct device *dev, TBEMU_DRV_CONST struct device_driver *drv)
{
	const struct tb_service_driver *sd =
		container_of(drv, struct tb_service_driver, driver);
	struct tb_service *svc = tb_to_service(dev);

	return svc && tbemu_match_id(svc, sd);
}

static int tbemu_bus_probe(struct device *dev)
{
	struct tb_service *svc = tb_to_service(dev);
	struct tb_service_driver *sd =
		container_of(dev->driver, struct tb_service_driver, driver);
	const struct tb_service_id *id = tbemu_match_id(svc, sd);

	if (!id)
		return -ENODEV;
	return sd->probe(svc, id);
}

static void tbemu_bus_remove(struct device *dev)
{
	struct tb_service *svc = tb_to_service(dev);
	struct tb_service_driver *sd =
		container_of(dev->driver, struct tb_service_driver, driver);

	if (sd->remove)
		sd->remove(svc);
}

static void tbemu_bus_shutdown(struct device *dev)
{
	struct tb_service *svc = tb_to_service(dev);
	struct tb_service_driver *sd;

	if (!svc || !dev->driver)
		return;
	sd = container_of(dev->driver, struct tb_service_driver, driver);
	if (sd->shutdown)
		sd->shutdown(svc);
}

static struct bus_type tbemu_bus = {
	.name = "thunderbolt",
	.match = tbemu_bus_match,
	.probe = tbemu_bus_probe,
	.remove = tbemu_bus_remove,
	.shutdown = tbemu_bus_shutdown,
};

/*
 * The driver core drops a device's reference to its parent in device_del(),
 * but a driver that still holds the service (one being unbound: rmmod tb5
 * while the cable goes) releases it later. The service's own reference to
 * its xdomain (tbemu_add_service) keeps the xdomain, and its ida, until here.
 */
static void tbemu_service_release(struct device *dev)
{
	struct tb_service *svc = container_of(dev, struct tb_service, dev);
	struct tb_xdomain *xd = tb_service_parent(svc);

	ida_free(&xd->service_ids, svc->id);
	kfree(svc->key);
	kfree(svc);
	put_device(&xd->dev);
}

/* const from 6.12 on, not in 6.1: the header's declaration decides. */
__typeof__(tb_service_type) tb_service_type = {
	.name = "thunderbolt_service",
	.release = tbemu_service_release,
};
EXPORT_SYMBOL_GPL(tb_service_type);

static void tbemu_xdomain_release(struct device *dev)
{
	struct tb_xdomain *xd = container_of(dev, struct tb_xdomain, dev);

	ida_destroy(&xd->service_ids);
	ida_destroy(&xd->in_hopids);
	ida_destroy(&xd->out_hopids);
	kfree(xd->device_name);
	kfree(xd->remote_uuid);
	mutex_destroy(&xd->lock);
	kfree(xd);
}

__typeof__(tb_xdomain_type) tb_xdomain_type = {
	.name = "thunderbolt_xdomain",
	.release = tbemu_xdomain_release,
};
EXPORT_SYMBOL_GPL(tb_xdomain_type);

int tb_register_service_driver(struct tb_service_driver *drv)
{
	drv->driver.bus = &tbemu_bus;
	return driver_register(&drv->driver);
}
EXPORT_SYMBOL_GPL(tb_register_service_driver);

void tb_unregister_service_driver(struct tb_service_driver *drv)
{
	driver_unregister(&drv->driver);
}
EXPORT_SYMBOL_GPL(tb_unregister_service_driver);

/* -- property directories --------------------------------------------------- */

struct tb_property_dir *tb_property_create_dir(const uuid_t *uuid)
{
	struct tb_property_dir *dir = kzalloc(sizeof(*dir), GFP_KERNEL);

	if (!dir)
		return NULL;
	INIT_LIST_HEAD(&dir->properties);
	if (uuid) {
		dir->uuid = kmemdup(uuid, sizeof(*uuid), GFP_KERNEL);
		if (!dir->uuid) {
			kfree(dir);
			return NULL;
		}
	}
	return dir;
}
EXPORT_SYMBOL_GPL(tb_property_create_dir);

void tb_property_free_dir(struct tb_property_dir *dir)
{
	struct tb_property *p, *n;

	if (!dir)
		return;
	list_for_each_entry_safe(p, n, &dir->properties, list) {
		list_del(&p->list);
		if (p->type == TB_PROPERTY_TYPE_DIRECTORY)
			tb_property_free_dir(p->value.dir);
		kfree(p);
	}
	kfree(dir->uuid);
	kfree(dir);
}
EXPORT_SYMBOL_GPL(tb_property_free_dir);

/* As property.c: keys are 1..8 characters. */
static bool tbemu_key_ok(const char *key)
{
	size_t len;

	if (!key)
		return false;
	len = strlen(key);
	return len && len <= TB_PROPERTY_KEY_SIZE;
}

int tb_property_add_immediate(struct tb_property_dir *parent, const char *key,
			      u32 value)
{
	struct tb_property *p;

	if (!tbemu_key_ok(key))
		return -EINVAL;
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	strscpy(p->key, key, sizeof(p->key));
	p->type = TB_PROPERTY_TYPE_VALUE;
	p->length = 1;
	p->value.immediate = value;
	list_add_tail(&p->list, &parent->properties);
	return 0;
}
EXPORT_SYMBOL_GPL(tb_property_add_immediate);

static bool tbemu_dir_value(struct tb_property_dir *dir, const char *key,
			    u32 *value)
{
	struct tb_property *p;

	list_for_each_entry(p, &dir->properties, list) {
		if (p->type == TB_PROPERTY_TYPE_VALUE && !strcmp(p->key, key)) {
			*value = p->value.immediate;
			return true;
		}
	}
	return false;
}

/* Our directories into our end of every cable (seqcount on prop_gen). */
int tbemu_publish_props(struct tbemu_cable *c)
{
	struct tbemu_side *me = tbemu_me(c);
	struct tbemu_local_dir *d;
	u32 n = 0;

	mutex_lock(&tbemu_dirs_lock);
	WRITE_ONCE(me->prop_gen, me->prop_gen + 1);
	/* Odd before the writes: a reader retries (tbemu_peer_props()). */
	smp_wmb();
	list_for_each_entry(d, &tbemu_dirs, node) {
		struct tbemu_prop *p = &me->props[n];

		if (n == TBEMU_PROPS)
			break;
		memset(p, 0, sizeof(*p));
		strscpy(p->key, d->key, sizeof(p->key));
		tbemu_dir_value(d->dir, "prtcid", &p->prtcid);
		tbemu_dir_value(d->dir, "prtcvers", &p->prtcvers);
		tbemu_dir_value(d->dir, "prtcrevs", &p->prtcrevs);
		tbemu_dir_value(d->dir, "prtcstns", &p->prtcstns);
		n++;
	}
	WRITE_ONCE(me->nprops, n);
	/* The directories before the even generation that publishes them. */
	smp_wmb();
	WRITE_ONCE(me->prop_gen, me->prop_gen + 1);
	mutex_unlock(&tbemu_dirs_lock);
	return 0;
}

/* Our directories changed: every cable carries the new set. */
static void tbemu_republish_all(void)
{
	struct tbemu_cable_ref *r;

	mutex_lock(&tbemu_cables_lock);
	list_for_each_entry(r, &tbemu_cables, node)
		tbemu_publish_props(r->c);
	mutex_unlock(&tbemu_cables_lock);
}

int tb_register_property_dir(const char *key, struct tb_property_dir *dir)
{
	struct tbemu_local_dir *d;

	if (!tbemu_key_ok(key) || !dir)
		return -EINVAL;
	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	strscpy(d->key, key, sizeof(d->key));
	d->dir = dir;
	mutex_lock(&tbemu_dirs_lock);
	list_add_tail(&d->node, &tbemu_dirs);
	mutex_unlock(&tbemu_dirs_lock);
	tbemu_republish_all();
	return 0;
}
EXPORT_SYMBOL_GPL(tb_register_property_dir);

void tb_unregister_property_dir(const char *key, struct tb_property_dir *dir)
{
	struct tbemu_local_dir *d, *n;
	bool found = false;

	mutex_lock(&tbemu_dirs_lock);
	list_for_each_entry_safe(d, n, &tbemu_dirs, node) {
		if (d->dir == dir && !strcmp(d->key, key)) {
			list_del(&d->node);
			kfree(d);
			found = true;
			break;
		}
	}
	mutex_unlock(&tbemu_dirs_lock);
	if (found)
		tbemu_republish_all();
}
EXPORT_SYMBOL_GPL(tb_unregister_property_dir);

/* -- XDomains and services --------------------------------------------------- */

/* The peer's directories, read consistently; false while it writes them. */
static bool tbemu_peer_props(struct tbemu_cable *c, struct tbemu_prop *props,
			     u32 *n, u32 *gen)
{
	struct tbemu_side *peer = tbemu_peer(c);
	/* Pairs with the writer's barriers in tbemu_publish_props(). */
	u32 g1 = smp_load_acquire(&peer->prop_gen), g2;

	if (g1 & 1)
		return false;
	*n = min_t(u32, READ_ONCE(peer->nprops), TBEMU_PROPS);
	memcpy(props, peer->props, sizeof(peer->props));
	/* The copy before the second look at the generation. */
	smp_rmb();
	g2 = READ_ONCE(peer->prop_gen);
	*gen = g1;
	return g1 == g2;
}

static int tbemu_unregister_service(struct device *dev, void *data)
{
	device_unregister(dev);
	return 0;
}

static bool tbemu_same_service(const struct tb_service *svc,
			       const struct tbemu_prop *p)
{
	return !strcmp(svc->key, p->key) && svc->prtcid == p->prtcid &&
	       svc->prtcvers == p->prtcvers && svc->prtcrevs == p->prtcrevs &&
	       svc->prtcstns == p->prtcstns;
}

struct tbemu_sync {
	const struct tbemu_prop *props;
	u32 n;
	bool *present;
};

/* A service no longer published goes; a known one is marked present. */
static int tbemu_remove_missing(struct device *dev, void *data)
{
	struct tbemu_sync *s = data;
	struct tb_service *svc = tb_to_service(dev);
	u32 i;

	if (!svc)
		return 0;
	for (i = 0; i < s->n; i++) {
		if (!s->present[i] && tbemu_same_service(svc, &s->props[i])) {
			s->present[i] = true;
			return 0;
		}
	}
	device_unregister(dev);
	return 0;
}

static void tbemu_add_service(struct tb_xdomain *xd, const struct tbemu_prop *p)
{
	struct tb_service *svc;
	int id;

	svc = kzalloc(sizeof(*svc), GFP_KERNEL);
	if (!svc)
		return;
	id = ida_alloc(&xd->service_ids, GFP_KERNEL);
	if (id < 0) {
		kfree(svc);
		return;
	}
	svc->key = kstrndup(p->key, TB_PROPERTY_KEY_SIZE, GFP_KERNEL);
	if (!svc->key) {
		ida_free(&xd->service_ids, id);
		kfree(svc);
		return;
	}
	svc->id = id;
	svc->prtcid = p->prtcid;
	svc->prtcvers = p->prtcvers;
	svc->prtcrevs = p->prtcrevs;
	svc->prtcstns = p->prtcstns;
	svc->dev.bus = &tbemu_bus;
	svc->dev.type = &tb_service_type;
	svc->dev.parent = get_device(&xd->dev);	/* put in the release */
	dev_set_name(&svc->dev, "%s.%d", dev_name(&xd->dev), svc->id);
	if (device_register(&svc->dev)) {
		dev_err(&xd->dev, "service %s not registered\n", p->key);
		put_device(&svc->dev);
	}
}

static void tbemu_sync_services(struct tbemu_cable *c)
{
	struct tbemu_prop props[TBEMU_PROPS];
	bool present[TBEMU_PROPS] = {};
	struct tbemu_sync s = { .props = props, .present = present };
	u32 gen, i;

	if (!tbemu_peer_props(c, props, &s.n, &gen))
		return;
	WRITE_ONCE(c->seen_prop_gen, gen);
	device_for_each_child_reverse(&c->xd->dev, &s, tbemu_remove_missing);
	for (i = 0; i < s.n; i++)
		if (!present[i])
			tbemu_add_service(c->xd, &props[i]);
}

/* Where this end sees the other host: distinct per cable and per end. */
static u64 tbemu_route(struct tbemu_cable *c)
{
	return (u64)(c->index + 1) | ((u64)(c->side + 1) << 8);
}

static void tbemu_xd_add(struct tbemu_cable *c)
{
	struct tbemu_side *peer = tbemu_peer(c);
	struct tb_xdomain *xd;
	uuid_t *remote;
	char name[sizeof(peer->name) + 1];

	xd = kzalloc(sizeof(*xd), GFP_KERNEL);
	remote = kzalloc(sizeof(*remote), GFP_KERNEL);
	if (!xd || !remote) {
		kfree(xd);
		kfree(remote);
		return;
	}
	import_uuid(remote, peer->uuid);
	memcpy(name, peer->name, sizeof(peer->name));
	name[sizeof(peer->name)] = '\0';
	xd->tb = c->tb;
	xd->remote_uuid = remote;
	xd->local_uuid = tbemu_host_uuid();
	xd->route = tbemu_route(c);
	xd->vendor = 0x1af4;
	xd->device = 0x1110;
	xd->local_max_hopid = TBEMU_MAX_HOPID;
	xd->remote_max_hopid = TBEMU_MAX_HOPID;
	mutex_init(&xd->lock);
	xd->vendor_name = "tbemu";
	xd->device_name = kstrdup(name, GFP_KERNEL);
	/*
	 * USB4 v2: 40 Gb/s per lane, both lanes (a count up to 6.4, a mask of
	 * TB_LINK_WIDTH_* from 6.5: dual is 2 in both).
	 */
	xd->link_speed = 40;
	xd->link_width = 2;
	xd->link_usb4 = true;
	ida_init(&xd->service_ids);
	ida_init(&xd->in_hopids);
	ida_init(&xd->out_hopids);
	xd->dev.parent = &c->pdev->dev;
	xd->dev.bus = &tbemu_bus;
	xd->dev.type = &tb_xdomain_type;
	dev_set_name(&xd->dev, "%u-%llx", c->tb->index, xd->route);
	c->xd_gen = READ_ONCE(c->shm->plug_gen);
	c->xd_peer_session = READ_ONCE(peer->session);
	if (device_register(&xd->dev)) {
		put_device(&xd->dev);
		return;
	}
	WRITE_ONCE(c->xd, xd);
	dev_info(&xd->dev, "host %pUb (%s) at route %#llx\n", remote,
		 xd->device_name ?: "", xd->route);
	tbemu_sync_services(c);
}

/* Services first (their drivers tear down), then paths, then the XDomain. */
void tbemu_xd_remove(struct tbemu_cable *c)
{
	struct tb_xdomain *xd;
	unsigned long flags;
	int i;

	mutex_lock(&c->xd_lock);
	xd = c->xd;
	if (!xd) {
		mutex_unlock(&c->xd_lock);
		return;
	}
	/* Anything but our own controller going away: the peer is gone. */
	if (!READ_ONCE(c->removing) || !tbemu_connected_now(c))
		xd->is_unplugged = true;
	device_for_each_child_reverse(&xd->dev, NULL, tbemu_unregister_service);
	spin_lock_irqsave(&c->path_lock, flags);
	for (i = 0; i < TBEMU_MAX_PATHS; i++)
		c->paths[i].tx_ring = c->paths[i].rx_ring = -1;
	spin_unlock_irqrestore(&c->path_lock, flags);
	for (i = 0; i < TBEMU_HOPS; i++)
		tbemu_hop_rebind(c, i, NULL);
	WRITE_ONCE(c->xd, NULL);
	dev_info(&xd->dev, "removed%s\n", xd->is_unplugged ? " (unplugged)" : "");
	device_unregister(&xd->dev);
	mutex_unlock(&c->xd_lock);
}

/*
 * The XDomain there is not the peer's any more: the cable is out or was
 * pulled since it was made, or the peer is gone or came back as new.
 */
bool tbemu_xd_stale(struct tbemu_cable *c)
{
	return !tbemu_connected_now(c) ||
	       READ_ONCE(c->xd_gen) != READ_ONCE(c->shm->plug_gen) ||
	       READ_ONCE(c->xd_peer_session) != READ_ONCE(tbemu_peer(c)->session);
}

void tbemu_xd_work(struct work_struct *work)
{
	struct tbemu_cable *c = container_of(work, struct tbemu_cable, xd_work);
	struct tbemu_side *peer = tbemu_peer(c);
	bool stale;

	mutex_lock(&c->xd_lock);
	stale = c->xd && tbemu_xd_stale(c);
	mutex_unlock(&c->xd_lock);
	if (stale)
		tbemu_xd_remove(c);
	mutex_lock(&c->xd_lock);
	if (!c->xd && !READ_ONCE(c->removing) && tbemu_connected_now(c) &&
	    READ_ONCE(peer->session))
		tbemu_xd_add(c);
	else if (c->xd && READ_ONCE(c->seen_prop_gen) != READ_ONCE(peer->prop_gen))
		tbemu_sync_services(c);
	mutex_unlock(&c->xd_lock);
}

/* -- suspend and resume ----------------------------------------------------- */

static int tbemu_pm_one(struct device *dev, void *data)
{
	bool resume = *(bool *)data;
	int ret = 0;

	device_lock(dev);
	if (dev->driver)
		ret = resume ? pm_generic_resume(dev) : pm_generic_suspend(dev);
	device_unlock(dev);
	if (ret)
		dev_err(dev, "%s: %d\n", resume ? "resume" : "suspend", ret);
	return 0;
}

/*
 * This host sleeps and wakes with the cable in: every bound service's
 * driver gets its system-sleep suspend, then its resume, as the PM core
 * calls them for the Thunderbolt bus (the peer stays up).
 */
int tbemu_pm_cycle(struct tbemu_cable *c, unsigned int sleep_ms)
{
	bool resume = false;

	mutex_lock(&c->xd_lock);
	if (!c->xd) {
		mutex_unlock(&c->xd_lock);
		return -ENODEV;
	}
	device_for_each_child(&c->xd->dev, &resume, tbemu_pm_one);
	msleep(sleep_ms);
	resume = true;
	device_for_each_child(&c->xd->dev, &resume, tbemu_pm_one);
	mutex_unlock(&c->xd_lock);
	return 0;
}

/* -- XDomain messages ------------------------------------------------------- */

int tb_register_protocol_handler(struct tb_protocol_handler *handler)
{
	if (!handler->uuid || !handler->callback)
		return -EINVAL;
	mutex_lock(&tbemu_handlers_lock);
	list_add_tail(&handler->list, &tbemu_handlers);
	mutex_unlock(&tbemu_handlers_lock);
	return 0;
}
EXPORT_SYMBOL_GPL(tb_register_protocol_handler);

void tb_unregister_protocol_handler(struct tb_protocol_handler *handler)
{
	mutex_lock(&tbemu_handlers_lock);
	list_del_init(&handler->list);
	mutex_unlock(&tbemu_handlers_lock);
}
EXPORT_SYMBOL_GPL(tb_unregister_protocol_handler);

static bool tbemu_xd_live(struct tbemu_cable *c, struct tb_xdomain *xd)
{
	return c && READ_ONCE(c->xd) == xd && !READ_ONCE(xd->is_unplugged);
}

int tb_xdomain_response(struct tb_xdomain *xd, const void *response,
			size_t size, enum tb_cfg_pkg_type type)
{
	struct tbemu_cable *c = xd_cable(xd);
	int ret;

	if (!tbemu_xd_live(c, xd))
		return -ENODEV;
	ret = tbemu_ctl_send(c, type, response, size, GFP_KERNEL);
	if (!ret && tbemu_dup_responses) {
		tbemu_dup_responses--;
		ret = tbemu_ctl_send(c, type, response, size, GFP_KERNEL);
	}
	return ret;
}
EXPORT_SYMBOL_GPL(tb_xdomain_response);

int tb_xdomain_request(struct tb_xdomain *xd, const void *request,
		       size_t request_size, enum tb_cfg_pkg_type request_type,
		       void *response, size_t response_size,
		       enum tb_cfg_pkg_type response_type,
		       unsigned int timeout_msec)
{
	struct tbemu_cable *c = xd_cable(xd);
	struct tbemu_waiter w;
	unsigned long flags;
	int ret;

	if (request_size < TBEMU_XDP_HDR_BYTES || request_size > TBEMU_CTL_MAX ||
	    response_size < TBEMU_XDP_HDR_BYTES || response_size > TBEMU_CTL_MAX)
		return -EINVAL;
	if (!tbemu_xd_live(c, xd))
		return -ENODEV;
	memcpy(w.uuid, (const u8 *)request + TBEMU_XDP_UUID_OFF, 16);
	w.route_hi = ((const u32 *)request)[0] & ~BIT(31);
	w.route_lo = ((const u32 *)request)[1];
	w.type = response_type;
	w.buf = response;
	w.size = response_size;
	init_completion(&w.done);
	spin_lock_irqsave(&c->path_lock, flags);
	list_add_tail(&w.node, &c->waiters);
	spin_unlock_irqrestore(&c->path_lock, flags);

	ret = tbemu_ctl_send(c, request_type, request, request_size, GFP_KERNEL);
	if (!ret && !wait_for_completion_timeout(&w.done,
						 msecs_to_jiffies(timeout_msec)))
		ret = -ETIMEDOUT;

	spin_lock_irqsave(&c->path_lock, flags);
	if (!list_empty(&w.node))
		list_del_init(&w.node);
	else if (ret == -ETIMEDOUT)
		ret = 0;	/* answered as the wait ended */
	spin_unlock_irqrestore(&c->path_lock, flags);
	return ret;
}
EXPORT_SYMBOL_GPL(tb_xdomain_request);

/* A control packet from the peer, on its way to the handlers. */
struct tbemu_rx_work {
	struct work_struct work;
	struct tbemu_cable *c;
	u32 type;
	size_t size;
	u8 data[TBEMU_CTL_MAX];
};

/* As tb_xdomain_match(): the response a waiting request asked for. */
static bool tbemu_waiter_match(struct tbemu_cable *c, const u8 *pkt,
			       size_t size, u32 type)
{
	const u32 *words = (const u32 *)pkt;
	struct tbemu_waiter *w;
	unsigned long flags;
	bool found = false;

	if (type != TB_CFG_PKG_XDOMAIN_RESP)
		return false;
	spin_lock_irqsave(&c->path_lock, flags);
	list_for_each_entry(w, &c->waiters, node) {
		if (w->type != type || size < w->size ||
		    (words[0] & ~BIT(31)) != w->route_hi ||
		    words[1] != w->route_lo ||
		    memcmp(w->uuid, pkt + TBEMU_XDP_UUID_OFF, 16))
			continue;
		memcpy(w->buf, pkt, w->size);
		list_del_init(&w->node);
		complete(&w->done);
		found = true;
		break;
	}
	spin_unlock_irqrestore(&c->path_lock, flags);
	return found;
}

/*
 * As the control channel's receive path does with XDomain packets (ctl.c,
 * tb_xdomain_handle_request()): of either type, they go first to the
 * protocol handlers of their UUID, in process context and in order; a
 * packet no handler takes may be the response a request waits for.
 */
static void tbemu_rx_dispatch(struct work_struct *work)
{
	struct tbemu_rx_work *rw = container_of(work, struct tbemu_rx_work,
						work);
	struct tb_protocol_handler *h;
	unsigned int delay = READ_ONCE(tbemu_delay_ms);
	bool drop = false;
	uuid_t uuid;
	int ret = 0;

	if (delay)
		msleep(delay);
	import_uuid(&uuid, rw->data + TBEMU_XDP_UUID_OFF);
	/* Only through an XDomain that is there, as on the real bus. */
	if (!READ_ONCE(rw->c->xd))
		goto out;
	mutex_lock(&tbemu_handlers_lock);
	list_for_each_entry(h, &tbemu_handlers, list) {
		if (!uuid_equal(&uuid, h->uuid))
			continue;
		if (READ_ONCE(tbemu_drop_requests)) {
			/* Fault injection: this host does not answer. */
			tbemu_drop_requests--;
			drop = true;
			break;
		}
		ret = h->callback(rw->data, rw->size, h->data);
		if (ret)
			break;
	}
	mutex_unlock(&tbemu_handlers_lock);
	if (!drop && ret <= 0)
		tbemu_waiter_match(rw->c, rw->data, rw->size, rw->type);
out:
	kfree(rw);
}

/* A control packet from the peer, in the engine thread. */
void tbemu_ctl_rx(struct tbemu_cable *c, u32 type, const void *buf,
		  size_t size)
{
	struct tb_xdomain *xd = READ_ONCE(c->xd);
	struct tbemu_rx_work *rw;
	u32 *words;

	if (!xd || size < TBEMU_XDP_HDR_BYTES || size > TBEMU_CTL_MAX)
		return;
	if (type != TB_CFG_PKG_XDOMAIN_REQ && type != TB_CFG_PKG_XDOMAIN_RESP)
		return;
	rw = kmalloc(sizeof(*rw), GFP_KERNEL);
	if (!rw)
		return;
	INIT_WORK(&rw->work, tbemu_rx_dispatch);
	rw->c = c;
	rw->type = type;
	rw->size = size;
	memcpy(rw->data, buf, size);
	/* The route in the header is where the receiver sees the sender. */
	words = (u32 *)rw->data;
	words[0] = (words[0] & BIT(31)) | upper_32_bits(xd->route);
	words[1] = lower_32_bits(xd->route);
	queue_work(c->msg_wq, &rw->work);
}

/* -- HopIDs and paths ----------------------------------------------------- */

int tb_xdomain_alloc_in_hopid(struct tb_xdomain *xd, int hopid)
{
	if (hopid < 0)
		hopid = TBEMU_MIN_HOPID;
	if (hopid < TBEMU_MIN_HOPID || hopid > xd->local_max_hopid)
		return -EINVAL;
	return ida_alloc_range(&xd->in_hopids, hopid, xd->local_max_hopid,
			       GFP_KERNEL);
}
EXPORT_SYMBOL_GPL(tb_xdomain_alloc_in_hopid);

int tb_xdomain_alloc_out_hopid(struct tb_xdomain *xd, int hopid)
{
	if (hopid < 0)
		hopid = TBEMU_MIN_HOPID;
	if (hopid < TBEMU_MIN_HOPID || hopid > xd->remote_max_hopid)
		return -EINVAL;
	return ida_alloc_range(&xd->out_hopids, hopid, xd->remote_max_hopid,
			       GFP_KERNEL);
}
EXPORT_SYMBOL_GPL(tb_xdomain_alloc_out_hopid);

void tb_xdomain_release_in_hopid(struct tb_xdomain *xd, int hopid)
{
	if (hopid > 0)
		ida_free(&xd->in_hopids, hopid);
}
EXPORT_SYMBOL_GPL(tb_xdomain_release_in_hopid);

void tb_xdomain_release_out_hopid(struct tb_xdomain *xd, int hopid)
{
	if (hopid > 0)
		ida_free(&xd->out_hopids, hopid);
}
EXPORT_SYMBOL_GPL(tb_xdomain_release_out_hopid);

static bool tbemu_ring_ok(struct tbemu_ring **rings, int ring)
{
	return ring >= 0 && ring < TBEMU_RINGS && rings[ring];
}

int tb_xdomain_enable_paths(struct tb_xdomain *xd, int transmit_path,
			    int transmit_ring, int receive_path,
			    int receive_ring)
{
	struct tbemu_cable *c = xd_cable(xd);
	struct tbemu_path *free = NULL;
	unsigned long flags;
	int i, ret = 0;

	if (!tbemu_xd_live(c, xd))
		return -ENODEV;
	if (transmit_path < TBEMU_MIN_HOPID || transmit_path > xd->remote_max_hopid ||
	    receive_path < TBEMU_MIN_HOPID || receive_path > xd->local_max_hopid ||
	    !tbemu_ring_ok(c->tx_rings, transmit_ring) ||
	    !tbemu_ring_ok(c->rx_rings, receive_ring))
		return -EINVAL;
	spin_lock_irqsave(&c->path_lock, flags);
	for (i = 0; i < TBEMU_MAX_PATHS; i++) {
		struct tbemu_path *p = &c->paths[i];

		if (p->rx_ring < 0 && p->tx_ring < 0) {
			free = free ?: p;
			continue;
		}
		if (p->rx_hop == receive_path || p->tx_hop == transmit_path ||
		    p->tx_ring == transmit_ring || p->rx_ring == receive_ring)
			ret = -EBUSY;
	}
	if (!ret && !free)
		ret = -ENOSPC;
	if (!ret) {
		free->tx_hop = transmit_path;
		free->tx_ring = transmit_ring;
		free->rx_hop = receive_path;
		free->rx_ring = receive_ring;
	}
	spin_unlock_irqrestore(&c->path_lock, flags);
	if (!ret)
		tbemu_hop_rebind(c, receive_path, c->rx_rings[receive_ring]);
	return ret;
}
EXPORT_SYMBOL_GPL(tb_xdomain_enable_paths);

static bool tbemu_path_match(const struct tbemu_path *p, int tp, int tr,
			     int rp, int rr)
{
	return (tp < 0 || p->tx_hop == tp) && (tr < 0 || p->tx_ring == tr) &&
	       (rp < 0 || p->rx_hop == rp) && (rr < 0 || p->rx_ring == rr);
}

int tb_xdomain_disable_paths(struct tb_xdomain *xd, int transmit_path,
			     int transmit_ring, int receive_path,
			     int receive_ring)
{
	struct tbemu_cable *c = xd_cable(xd);
	int unbind[TBEMU_MAX_PATHS];
	unsigned long flags;
	int i, n = 0;

	if (!c || READ_ONCE(c->xd) != xd)
		return 0;
	spin_lock_irqsave(&c->path_lock, flags);
	for (i = 0; i < TBEMU_MAX_PATHS; i++) {
		struct tbemu_path *p = &c->paths[i];

		if (p->rx_ring < 0 && p->tx_ring < 0)
			continue;
		if (!tbemu_path_match(p, transmit_path, transmit_ring,
				      receive_path, receive_ring))
			continue;
		unbind[n++] = p->rx_hop;
		p->tx_ring = p->rx_ring = -1;
	}
	spin_unlock_irqrestore(&c->path_lock, flags);
	for (i = 0; i < n; i++)
		tbemu_hop_rebind(c, unbind[i], NULL);
	return 0;
}
EXPORT_SYMBOL_GPL(tb_xdomain_disable_paths);

/* The HopID a frame from TX ring @ring goes out on; -1: no path. */
int tbemu_tx_hop(struct tbemu_cable *c, int ring)
{
	unsigned long flags;
	int i, hop = -1;

	spin_lock_irqsave(&c->path_lock, flags);
	for (i = 0; i < TBEMU_MAX_PATHS; i++)
		if (c->paths[i].tx_ring == ring)
			hop = c->paths[i].tx_hop;
	spin_unlock_irqrestore(&c->path_lock, flags);
	return hop;
}

/* -- module ---------------------------------------------------------------- */

int tbemu_cable_register(struct tbemu_cable *c)
{
	struct tbemu_cable_ref *r = kzalloc(sizeof(*r), GFP_KERNEL);
	int i;

	if (!r)
		return -ENOMEM;
	for (i = 0; i < TBEMU_MAX_PATHS; i++)
		c->paths[i].tx_ring = c->paths[i].rx_ring = -1;
	r->c = c;
	mutex_lock(&tbemu_cables_lock);
	list_add_tail(&r->node, &tbemu_cables);
	mutex_unlock(&tbemu_cables_lock);
	return 0;
}

void tbemu_cable_unregister(struct tbemu_cable *c)
{
	struct tbemu_cable_ref *r, *n;

	mutex_lock(&tbemu_cables_lock);
	list_for_each_entry_safe(r, n, &tbemu_cables, node) {
		if (r->c == c) {
			list_del(&r->node);
			kfree(r);
		}
	}
	mutex_unlock(&tbemu_cables_lock);
}

int tbemu_bus_init(void)
{
	return bus_register(&tbemu_bus);
}

void tbemu_bus_exit(void)
{
	bus_unregister(&tbemu_bus);
}
