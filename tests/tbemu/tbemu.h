/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tbemu.h - an emulated USB4 host-to-host fabric for tb5's tests.
 *
 * tbemu.ko stands in for thunderbolt.ko inside a test VM: it exports the
 * part of <linux/thunderbolt.h> that a service driver uses (the service bus,
 * property directories, XDomain messages, HopIDs and DMA paths, NHI rings)
 * with the semantics of the real driver, and carries what those calls send
 * over a "cable": a QEMU ivshmem-plain PCI device whose memory is one host
 * file shared by the two VMs at its ends. Each VM is a host with its own
 * kernel, its own tbemu.ko and its own (unmodified) tb5.ko.
 *
 * The cable's memory (BAR 2) holds a header, one struct tbemu_side per end
 * (written only by the host on that end) and, per direction, a wire: a
 * single-producer single-consumer ring of slots, each one frame of a DMA
 * path or one XDomain control packet.
 */
#ifndef TBEMU_H
#define TBEMU_H

#include <linux/completion.h>
#include <linux/device.h>
#include <linux/idr.h>
#include <linux/irq_work.h>
#include <linux/kthread.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/thunderbolt.h>
#include <linux/types.h>
#include <linux/uuid.h>
#include <linux/version.h>
#include <linux/workqueue.h>

#define TBEMU_MAGIC		0x315542544d454254ull	/* "TBEMTBU1" */
#define TBEMU_LAYOUT		1
#define TBEMU_SLOTS		256	/* slots of one direction's wire */
#define TBEMU_FRAME_MAX		4096	/* a frame-mode frame */
#define TBEMU_CTL_MAX		256	/* an XDomain control packet */
#define TBEMU_HOPS		64	/* HopIDs 0..63 on a cable */
#define TBEMU_MIN_HOPID		8	/* the first HopID paths may use */
#define TBEMU_MAX_HOPID		(TBEMU_HOPS - 1)
#define TBEMU_PROPS		4	/* service directories a host offers */
#define TBEMU_RINGS		16	/* NHI rings per direction; 0 is ctl */
/*
 * A peer's heartbeat may stop this long before its XDomain goes. Not 2 s:
 * a VM on a loaded 2-core CI host can stall that long (hrtimer warnings of
 * 350 ms in a row), and then its links were torn down in the middle of a
 * test. A peer that really goes (pulled cable, unbound bus, reboot, power
 * off) is seen at once by the plug state, its owner or its session.
 */
#define TBEMU_PEER_DEAD_MS	10000

/* Slot kinds on the wire. */
#define TBEMU_SLOT_DATA		1	/* a frame on a DMA path */
#define TBEMU_SLOT_CTL		2	/* an XDomain packet; type in @hop */

struct tbemu_slot {
	u32 kind;
	u32 hop;		/* DATA: the path's HopID; CTL: pkg type */
	u32 len;		/* bytes in @data */
	u32 gen;		/* the cable's plug generation when sent */
	u32 epoch;		/* DATA: the receiver's path epoch it was sent in */
	u8 sof, eof;
	u8 pad[42];
	u8 data[TBEMU_FRAME_MAX];
};

/* One published service directory: what a remote tb_service carries. */
struct tbemu_prop {
	char key[12];
	u32 prtcid, prtcvers, prtcrevs, prtcstns;
};

/* One end of the cable; only the host on that end writes it. */
struct tbemu_side {
	u32 owner;		/* 0: free; else the owner's claim id */
	u32 session;		/* changes every time the owner attaches */
	u64 heartbeat;		/* bumped by the owner's engine */
	u8 uuid[16];		/* the owner's host UUID */
	char name[32];		/* the owner's host name */
	u32 prop_gen;		/* bumped when @props change */
	u32 nprops;
	struct tbemu_prop props[TBEMU_PROPS];
	/* Receive side of each HopID: which ring takes it, E2E credits. */
	u32 rx_e2e[TBEMU_HOPS];		/* 1: its RX ring has E2E */
	u32 rx_epoch[TBEMU_HOPS];	/* bumped when the binding changes */
	u32 rx_posted[TBEMU_HOPS];	/* descriptors posted in the epoch */
	u32 tx_head;		/* producer index of this end's wire */
	u32 rx_tail;		/* consumer index of the peer's wire */
	u32 pad[8];
};

struct tbemu_shm {
	u64 magic;
	u32 layout;
	u32 plugged;		/* 0: pulled (either end may pull it) */
	u32 plug_gen;		/* bumped at every pull */
	u32 pad[11];
	struct tbemu_side side[2];
	struct tbemu_slot wire[2][TBEMU_SLOTS];	/* wire[s]: sent by side s */
};

struct tbemu_cable;

#define TBEMU_ATK_GROUP		6	/* frames of one crafted case */
#define TBEMU_ATK_REC		4	/* frames of a recorded message */

/* A hostile peer (tbemu_attack.c); under nhi->lock. */
struct tbemu_attack {
	int mode;
	u64 t_len, o_len;	/* receive sizes that name the connections */
	u64 p_svc;		/* the service a pending connect is made to */
	u64 l_svc;		/* a service the victim listens on */
	bool have_target, have_other, have_pend;
	u32 t_dst, t_src, t_seq;	/* the attacked connection, its grant */
	u32 o_dst, o_seq;	/* another connection of the victim */
	u32 p_src;		/* the victim's connecting endpoint ... */
	u64 p_cookie;		/* ... and its connection cookie */
	u32 remaining;		/* frames to mutate, or to flood */
	u32 next_case;		/* case: the case to send */
	int case_state;		/* case: 0 waiting, 1 sent, 2 cannot be made */
	const char *case_name;
	u32 rng;
	bool mid_burst;		/* our tb5's last frame did not end a burst */
	bool in_target;		/* ... and it was of the attacked connection */
	bool dup;
	bool held_valid;
	/* Our tb5's last message (one burst) and grant on that connection. */
	bool recording, rec_valid, have_cts;
	u32 rec_n;
	u8 cts[64];
	u32 cts_len;
	atomic64_t injected, mutated;
	struct tbemu_slot held;
	struct tbemu_slot grp[TBEMU_ATK_GROUP];
	struct tbemu_slot rec[TBEMU_ATK_REC];
};

/* A ring and the NHI's view of its descriptors. */
struct tbemu_desc {
	dma_addr_t phys;
	u32 length;		/* bytes; 0 means 4096, as the NHI writes it */
	u8 sof, eof;
	u16 flags;		/* RING_DESC_* */
};

struct tbemu_ring {
	struct tb_ring ring;	/* what the service driver sees */
	struct tbemu_cable *cable;
	struct tbemu_desc *desc;
	int hw;			/* the next descriptor the "hardware" takes */
	bool irq_masked;	/* start_poll called, poll_complete not yet */
	bool irq_pending;	/* completions seen while masked */
	s64 next_irq_ns;	/* throttling: no interrupt before this */
	u32 throttle_ns;
	int bound_hop;		/* RX: the HopID a path delivers here; -1 */
	struct irq_work irq;
};

/* A path enabled by tb_xdomain_enable_paths(). */
struct tbemu_path {
	int tx_hop, tx_ring, rx_hop, rx_ring;
};

#define TBEMU_MAX_PATHS		8

/* A request waiting for its response. */
struct tbemu_waiter {
	struct list_head node;
	u8 uuid[16];
	u32 route_hi, route_lo;	/* the request's route (bit 63 clear) */
	enum tb_cfg_pkg_type type;
	void *buf;
	size_t size;
	struct completion done;
};

struct tbemu_cable {
	struct pci_dev *pdev;
	struct tbemu_shm *shm;
	int side;		/* our end: 0 or 1 */
	u32 claim;
	int index;		/* this host's cable number */
	bool removing;		/* the PCI device goes: no new XDomain */

	struct tb *tb;
	struct tb_nhi *nhi;
	/* Under nhi->lock: the rings, and the RX ring each HopID lands on. */
	struct tbemu_ring *tx_rings[TBEMU_RINGS];
	struct tbemu_ring *rx_rings[TBEMU_RINGS];
	struct tbemu_ring *hop_ring[TBEMU_HOPS];

	/* The XDomain while the cable is in and the peer is there. */
	struct mutex xd_lock;		/* @xd, @svcs: create and remove */
	struct tb_xdomain *xd;
	u32 xd_gen;			/* plug_gen the xd was made under */
	u32 xd_peer_session;
	u32 seen_prop_gen;
	spinlock_t path_lock;		/* @paths, hop bindings, waiters */
	struct tbemu_path paths[TBEMU_MAX_PATHS];
	struct list_head waiters;

	/* Control packets waiting for a slot on the wire. */
	spinlock_t ctl_lock;
	struct list_head ctl_out;

	/* E2E: what this end sent on each HopID in the receiver's epoch. */
	u32 tx_epoch[TBEMU_HOPS];
	u32 tx_sent[TBEMU_HOPS];

	struct task_struct *engine;
	struct workqueue_struct *wq;	/* discovery: xdomain and services */
	struct workqueue_struct *msg_wq;	/* incoming requests, in order */
	struct work_struct xd_work;
	u64 peer_heartbeat;
	unsigned long peer_seen;	/* jiffies of the last heartbeat change */

	/* Counters shown in sysfs. */
	atomic64_t tx_frames, rx_frames, rx_dropped, tx_no_path, ctl_rx;

	struct tbemu_attack *atk;	/* a hostile peer, when told to be */
};

/* tbemu_main.c */
struct tbemu_slot *tbemu_wire_slot(struct tbemu_cable *c);
void tbemu_wire_push(struct tbemu_cable *c);
extern unsigned int tbemu_drop_requests;
extern unsigned int tbemu_delay_ms;
extern unsigned int tbemu_dup_responses;
extern const uuid_t *tbemu_host_uuid(void);
extern const char *tbemu_host_name(void);
int tbemu_ctl_send(struct tbemu_cable *c, enum tb_cfg_pkg_type type,
		   const void *buf, size_t size, gfp_t gfp);
bool tbemu_connected_now(struct tbemu_cable *c);

/* tbemu_xdomain.c */
int tbemu_bus_init(void);
void tbemu_bus_exit(void);
void tbemu_xd_work(struct work_struct *work);
bool tbemu_xd_stale(struct tbemu_cable *c);
void tbemu_xd_remove(struct tbemu_cable *c);
void tbemu_ctl_rx(struct tbemu_cable *c, u32 type, const void *buf,
		  size_t size);
int tbemu_publish_props(struct tbemu_cable *c);
int tbemu_cable_register(struct tbemu_cable *c);
void tbemu_cable_unregister(struct tbemu_cable *c);
int tbemu_tx_hop(struct tbemu_cable *c, int ring);
int tbemu_pm_cycle(struct tbemu_cable *c, unsigned int sleep_ms);

/* tbemu_attack.c */
void tbemu_attack_rx(struct tbemu_cable *c, const struct tbemu_slot *s);
bool tbemu_attack_tx(struct tbemu_cable *c, int hop, u32 epoch,
		     struct tbemu_slot *s);
void tbemu_attack_sent(struct tbemu_cable *c, struct tbemu_ring *r, int hop,
		       u32 epoch, const struct tbemu_slot *s);
int tbemu_attack_step(struct tbemu_cable *c, struct tbemu_ring *r);
int tbemu_attack_cmd(struct tbemu_cable *c, const char *buf);
ssize_t tbemu_attack_show(struct tbemu_cable *c, char *buf);

/* tbemu_ring.c */
int tbemu_rings_step(struct tbemu_cable *c);
void tbemu_ring_rx_frame(struct tbemu_cable *c, const struct tbemu_slot *s);
void tbemu_hop_rebind(struct tbemu_cable *c, int hop, struct tbemu_ring *r);
void tbemu_rings_check_freed(struct tbemu_cable *c);

/*
 * The NHI's DMA device: its PCI device's up to 6.12, a struct device of its
 * own in 7.2 (where tb_ring_dma_device() returns nhi->dev).
 */
static inline struct device *tbemu_nhi_dev(struct tb_nhi *nhi)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 2, 0)
	return nhi->dev;
#else
	return &nhi->pdev->dev;
#endif
}

static inline struct tbemu_ring *to_emu_ring(struct tb_ring *ring)
{
	return container_of(ring, struct tbemu_ring, ring);
}

static inline struct tbemu_side *tbemu_me(struct tbemu_cable *c)
{
	return &c->shm->side[c->side];
}

static inline struct tbemu_side *tbemu_peer(struct tbemu_cable *c)
{
	return &c->shm->side[!c->side];
}

#endif /* TBEMU_H */
