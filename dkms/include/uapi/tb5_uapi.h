/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note */
/*
 * tb5_uapi.h - the interface between tb5.ko and user space.
 *
 * This is the one copy: libtb5, the tools and the tests include it from
 * dkms/include/uapi/ (installed as <tb5/tb5_uapi.h>); it is never copied.
 *
 * Model
 *   Each link end is a character device, /dev/tb5_<n>. Every open() of it is
 *   a context: the memory regions, endpoints and the completion queue made
 *   through that file descriptor belong to it and are freed when it is
 *   closed (whatever was still in flight completes first).
 *
 *   All ioctls take a pointer to one struct. Fields are marked
 *     in:   user space fills them; the module validates every one;
 *     out:  the module fills them;
 *     pad/reserved: must be zero on input, so that they can gain a meaning.
 *   All structs are made of __u64/__u32 fields, naturally aligned, with
 *   explicit padding, the same size in 32- and 64-bit processes.
 *
 * Versioning
 *   TB5_IOC_GET_VERSION returns TB5_ABI_VERSION and feature flags. A library
 *   built against another ABI version must refuse to use the device with a
 *   clear message; every other ioctl's layout is fixed for a given version.
 *
 * Completion queue
 *   TB5_IOC_CQ_CREATE makes the context's completion queue; mmap() of the
 *   device at offset 0, with the size it returns, maps it (read-only but
 *   for the head index). The kernel produces at tail, user space consumes
 *   at head:
 *     user space: tail = load_acquire(&ring->tail);
 *                 read entries[head & (entries - 1)] while head != tail;
 *                 store_release(&ring->head, head);
 *   poll() reports EPOLLIN while the queue is not empty. The module never
 *   overflows the queue: every send, receive and endpoint reserves the
 *   entries it can produce, and posting fails with -ENOSPC when the queue
 *   has no room left to promise.
 */
#ifndef TB5_UAPI_H
#define TB5_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define TB5_ABI_VERSION		1

/* Feature flags (tb5_version.features, tb5_info.features). */
#define TB5_FEATURE_HOST_MEM	(1u << 0)	/* TB5_IOC_REG_MEM */
#define TB5_FEATURE_DMABUF	(1u << 1)	/* TB5_IOC_REG_DMABUF */
#define TB5_FEATURE_LOOP	(1u << 2)	/* this link is a loop pair end */
#define TB5_FEATURE_WELL_KNOWN	(1u << 3)	/* TB5_LISTEN_WELL_KNOWN */
#define TB5_FEATURE_STATS	(1u << 4)	/* TB5_IOC_GET_STATS */

/* Limits that user space may rely on for this ABI version. */
#define TB5_UAPI_FRAME_MAX	4096u		/* bytes per ring frame */
#define TB5_UAPI_MSG_MAX	(1ull << 40)	/* bytes per message */
#define TB5_UAPI_POST_MAX	64u		/* operations per TB5_IOC_POST */
#define TB5_UAPI_EP_OPS_MAX	64u		/* outstanding sends, and receives, per endpoint */
#define TB5_UAPI_CQ_MIN		64u		/* completion queue entries */
#define TB5_UAPI_CQ_MAX		65536u

/* Link states (tb5_info.state). */
#define TB5_STATE_DOWN		0	/* no cable, or the rings are stopped */
#define TB5_STATE_UP		1	/* rings running, peer not heard yet */
#define TB5_STATE_READY		2	/* the peer announced itself */

/* Endpoint states (tb5_ep_query.state). */
#define TB5_EP_STATE_LISTENING	1
#define TB5_EP_STATE_CONNECTING	2
#define TB5_EP_STATE_CONNECTED	3
#define TB5_EP_STATE_PEER_CLOSED 4
#define TB5_EP_STATE_ERROR	5

/* TB5_IOC_GET_VERSION */
struct tb5_version {
	__u32 abi_version;	/* out: TB5_ABI_VERSION of the module */
	__u32 features;		/* out: TB5_FEATURE_* the module supports */
	__u32 module_major;	/* out: the tb5 release, e.g. 0.1.0 */
	__u32 module_minor;	/* out */
	__u32 module_patch;	/* out */
	__u32 reserved;		/* out: 0 */
};

/* TB5_IOC_GET_INFO */
struct tb5_info {
	__u64 local_host;	/* out: this host's id */
	__u64 peer_host;	/* out: the peer's host id, valid in READY */
	__u32 state;		/* out: TB5_STATE_* */
	__u32 link_index;	/* out: <n> of /dev/tb5_<n> */
	__u32 ring_size;	/* out: descriptors per ring */
	__u32 max_frame;	/* out: bytes per frame */
	__u32 speed_mbps;	/* out: link speed, 0 when unknown */
	__u32 features;		/* out: TB5_FEATURE_* valid on this link */
	__u64 reserved[2];	/* out: 0 */
};

/* Kinds of received frames dropped or refused (tb5_stats.drops). */
#define TB5_UAPI_DROP_MALFORMED	0	/* bad header, markers or size */
#define TB5_UAPI_DROP_UNKNOWN_CONN	1	/* no such connection, or not its peer */
#define TB5_UAPI_DROP_OUT_OF_WINDOW	2	/* outside what was granted or asked */
#define TB5_UAPI_DROP_RING_OVERFLOW	3	/* no room: NHI overrun, reply queue full */
#define TB5_UAPI_DROP_SEQ_GAP	4	/* a frame before it went missing */
#define TB5_UAPI_DROP_KINDS		5

/*
 * TB5_IOC_GET_STATS: the link's counters since the link was made (the
 * same numbers as sysfs). Frames dropped or refused are counted once in
 * rx_errors (blamed on the peer) or rx_dropped (their endpoint is gone)
 * and once in drops[] by kind. TB5_FEATURE_STATS says the ioctl exists.
 */
struct tb5_stats {
	__u64 tx_frames;	/* out */
	__u64 tx_bytes;		/* out: frame bytes, headers included */
	__u64 rx_frames;	/* out */
	__u64 rx_bytes;		/* out */
	__u64 rx_errors;	/* out: frames refused as out of protocol */
	__u64 rx_dropped;	/* out: frames for endpoints that are gone */
	__u64 peer_resets;	/* out: link downs and peer restarts */
	__u64 drops[TB5_UAPI_DROP_KINDS];	/* out: by TB5_UAPI_DROP_* */
	__u64 reserved[3];	/* out: 0 */
};

/*
 * TB5_IOC_REG_MEM: pin and register [addr, addr + len) of this process.
 * addr and len need not be page aligned; len > 0. The pages are pinned for
 * as long as the region is registered and counted against RLIMIT_MEMLOCK.
 */
struct tb5_reg_mem {
	__u64 addr;		/* in */
	__u64 len;		/* in */
	__u32 flags;		/* in: 0 */
	__u32 handle;		/* out: names the region in TB5_IOC_POST */
};

/*
 * TB5_IOC_REG_DMABUF: import [offset, offset + len) of a dma-buf. offset
 * must be page aligned and the range must lie inside the buffer.
 */
struct tb5_reg_dmabuf {
	__s32 fd;		/* in: the dma-buf */
	__u32 flags;		/* in: 0 */
	__u64 offset;		/* in */
	__u64 len;		/* in */
	__u32 handle;		/* out */
	__u32 pad;		/* in: 0 */
};

/* TB5_IOC_DEREG_MEM: -EBUSY while an operation still uses the region. */
struct tb5_dereg_mem {
	__u32 handle;		/* in */
	__u32 pad;		/* in: 0 */
};

/* TB5_IOC_CQ_CREATE: once per context. */
struct tb5_cq_create {
	__u32 entries;		/* in: power of two, TB5_UAPI_CQ_MIN..MAX */
	__u32 flags;		/* in: 0 */
	__u64 mmap_size;	/* out: bytes to mmap() at offset 0 */
	__u64 entries_offset;	/* out: where entries[] starts in the mapping */
};

/* The head of the completion queue mapping. */
struct tb5_cq_ring {
	__u32 head;		/* consumer index: user space writes it */
	__u32 pad0[15];		/* head and tail live on their own cache lines */
	__u32 tail;		/* producer index: the module writes it */
	__u32 pad1[15];
	__u32 entries;		/* number of entries, a power of two */
	__u32 pad2[15];
};

/* Completion kinds (tb5_cqe.op). */
#define TB5_CQE_SEND		1
#define TB5_CQE_RECV		2
#define TB5_CQE_EVENT		3

/* Endpoint events (tb5_cqe.event, with op TB5_CQE_EVENT). */
#define TB5_EVENT_CONNECTED	1	/* a connect was accepted */
#define TB5_EVENT_INCOMING	2	/* connections wait: accept until -EAGAIN */
#define TB5_EVENT_PEER_CLOSED	3	/* status -ECONNRESET */
#define TB5_EVENT_ERROR		4	/* refused or link lost: status says which */

/*
 * One completion: 32 bytes. Endpoint handles are not reused while the
 * context lives (up to 2^31 endpoints), so a completion of a closed
 * endpoint is never mistaken for one of a newer endpoint.
 */
struct tb5_cqe {
	__u64 user_data;	/* as posted; 0 for events */
	__u64 bytes;		/* bytes moved (message size for a receive) */
	__s32 status;		/* 0 or a negative errno */
	__u32 tag;		/* as posted */
	__u16 op;		/* TB5_CQE_* */
	__u16 event;		/* TB5_EVENT_* when op is TB5_CQE_EVENT */
	__u32 ep;		/* the endpoint's handle */
};

/*
 * TB5_IOC_LISTEN. A well-known listener has cookie 0, so that a peer that
 * knows only the service id can connect (a tool's server or responder).
 */
#define TB5_LISTEN_WELL_KNOWN	(1u << 0)

struct tb5_listen {
	__u64 service;		/* in: service id, unique per link */
	__u64 cookie;		/* out: connectors must present it */
	__u32 ep;		/* out: the listener's handle */
	__u32 flags;		/* in: TB5_LISTEN_* */
};

/* TB5_IOC_CONNECT: returns at once; TB5_EVENT_CONNECTED or _ERROR follows. */
struct tb5_connect {
	__u64 service;		/* in */
	__u64 cookie;		/* in: the listener's cookie */
	__u32 ep;		/* out */
	__u32 pad;		/* in: 0 */
};

/*
 * TB5_IOC_ACCEPT: -EAGAIN when no connection waits. A listener raises
 * TB5_EVENT_INCOMING once, then not again until the next TB5_IOC_ACCEPT:
 * on that event, accept until -EAGAIN. (An event may find nothing left to
 * accept; a connection is never left without one.)
 */
struct tb5_accept {
	__u32 listener;		/* in */
	__u32 ep;		/* out */
};

/* TB5_IOC_EP_CLOSE: outstanding operations complete with -ECANCELED. */
struct tb5_ep_close {
	__u32 ep;		/* in */
	__u32 pad;		/* in: 0 */
};

/* TB5_IOC_EP_QUERY */
struct tb5_ep_query {
	__u32 ep;		/* in */
	__u32 state;		/* out: TB5_EP_STATE_* */
	__s32 error;		/* out: why it is in TB5_EP_STATE_ERROR */
	__u32 pad;		/* out: 0 */
};

/* One operation for TB5_IOC_POST. */
#define TB5_OP_SEND		1
#define TB5_OP_RECV		2

struct tb5_post_op {
	__u32 op;		/* in: TB5_OP_SEND or TB5_OP_RECV */
	__u32 ep;		/* in: a connected endpoint */
	__u32 mem;		/* in: a registered region */
	__u32 tag;		/* in */
	__u64 offset;		/* in: byte offset in the region */
	__u64 len;		/* in: offset + len within the region */
	__u64 user_data;	/* in: returned in the completion */
};

/*
 * TB5_IOC_POST: post up to TB5_UAPI_POST_MAX operations in order. Stops at
 * the first one that fails; `posted` says how many went in and the ioctl
 * returns that one's error (0 when all were posted).
 */
struct tb5_post {
	__u64 ops;		/* in: user pointer to struct tb5_post_op[count] */
	__u32 count;		/* in: 1..TB5_UAPI_POST_MAX */
	__u32 posted;		/* out */
};

#define TB5_IOC_MAGIC		0xb5

#define TB5_IOC_GET_VERSION	_IOR(TB5_IOC_MAGIC, 0x00, struct tb5_version)
#define TB5_IOC_GET_INFO	_IOR(TB5_IOC_MAGIC, 0x01, struct tb5_info)
#define TB5_IOC_REG_MEM		_IOWR(TB5_IOC_MAGIC, 0x02, struct tb5_reg_mem)
#define TB5_IOC_REG_DMABUF	_IOWR(TB5_IOC_MAGIC, 0x03, struct tb5_reg_dmabuf)
#define TB5_IOC_DEREG_MEM	_IOW(TB5_IOC_MAGIC, 0x04, struct tb5_dereg_mem)
#define TB5_IOC_CQ_CREATE	_IOWR(TB5_IOC_MAGIC, 0x05, struct tb5_cq_create)
#define TB5_IOC_LISTEN		_IOWR(TB5_IOC_MAGIC, 0x06, struct tb5_listen)
#define TB5_IOC_CONNECT		_IOWR(TB5_IOC_MAGIC, 0x07, struct tb5_connect)
#define TB5_IOC_ACCEPT		_IOWR(TB5_IOC_MAGIC, 0x08, struct tb5_accept)
#define TB5_IOC_EP_CLOSE	_IOW(TB5_IOC_MAGIC, 0x09, struct tb5_ep_close)
#define TB5_IOC_EP_QUERY	_IOWR(TB5_IOC_MAGIC, 0x0a, struct tb5_ep_query)
#define TB5_IOC_POST		_IOWR(TB5_IOC_MAGIC, 0x0b, struct tb5_post)
#define TB5_IOC_GET_STATS	_IOR(TB5_IOC_MAGIC, 0x0c, struct tb5_stats)

#endif /* TB5_UAPI_H */
