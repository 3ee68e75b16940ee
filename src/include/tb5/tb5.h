/* SPDX-License-Identifier: MIT */
/*
 * tb5.h - libtb5, the C API of tb5.
 *
 * A *link* is one end of a cable (or of a loop pair, or of a simulated
 * cable). tb5_list_links() names the links of this host; tb5_open() opens one
 * as a *device*: a context that owns the memory regions, endpoints and
 * completions made through it, all freed by tb5_close().
 *
 * Backends
 *   kernel     /dev/tb5_<n> of the tb5 kernel module (cables and loop pairs)
 *   simulator  the same transport core in this process, over shared-memory
 *              rings to the other processes of a *fabric*. Switched on by
 *              the environment: TB5_SIM=<fabric>[:key=value,...] (see
 *              docs/simulator.md). While TB5_SIM is set, only simulator
 *              links are listed and opened by name.
 *
 * Endpoints
 *   A listener waits for connections to a service id on its link and has an
 *   address (the host it is on, the service and a cookie) that a peer passes
 *   to tb5_endpoint_connect() over the link that reaches that host. Nothing
 *   blocks: connect returns at once and TB5_WC_CONNECTED or TB5_WC_ERROR
 *   follows; a listener reports TB5_WC_INCOMING, after which
 *   tb5_endpoint_accept() is called until it returns -EAGAIN.
 *
 * Messages
 *   Reliable and receiver-driven: a send moves data only once the peer has
 *   posted a receive with the same tag; sends and receives of equal tags pair
 *   up in posting order. A send larger than the receive fails on both sides
 *   with -EMSGSIZE and writes nothing. Each endpoint has at most
 *   tb5_link_info.max_ops sends and as many receives outstanding.
 *
 * Completions
 *   tb5_poll() returns completed operations and endpoint events. It makes
 *   progress without a system call (kernel backend: a completion ring mapped
 *   from the module; simulator: the transport runs inside the call), so it
 *   can be called in a busy loop. tb5_wait() sleeps until there is something
 *   to poll. After tb5_endpoint_close() returns, no completion of that
 *   endpoint is reported.
 *
 * Memory
 *   Sends and receives name a registered region and an offset in it. A
 *   region cannot be deregistered (-EBUSY) while an operation uses it.
 *   GPU memory is registered as NCCL hands it (tb5_reg_gpu()): a device
 *   address with its dma-buf, or a device address alone.
 *
 * Errors
 *   Functions return 0 (or a count) on success and a negative errno on
 *   failure. tb5_strerror() describes an error code; tb5_last_error() gives
 *   the calling thread's detailed message about its last failure, e.g. which
 *   module ABI version was found and which one the library speaks.
 *   -EPROTONOSUPPORT from tb5_open() is a version mismatch; -EPROTO in a
 *   completion, a peer that broke the protocol; -EBADMSG, frames lost.
 *
 * Threads
 *   Every function may be called from any thread. Completions of a device
 *   go to whichever thread polls it.
 */
#ifndef TB5_TB5_H
#define TB5_TB5_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TB5_API __attribute__((visibility("default")))
#else
#define TB5_API
#endif

typedef struct tb5_device tb5_device;
typedef struct tb5_mr tb5_mr;
typedef struct tb5_endpoint tb5_endpoint;

/* Backends (tb5_link_info.backend). */
#define TB5_BACKEND_KERNEL	1
#define TB5_BACKEND_SIM		2

/* Link states (tb5_link_info.state). */
#define TB5_LINK_STATE_DOWN	0	/* no cable, no peer, or rings stopped */
#define TB5_LINK_STATE_UP	1	/* rings running, the peer not heard yet */
#define TB5_LINK_STATE_READY	2	/* the peer announced itself: usable */

/* Capabilities (tb5_link_info.caps). */
#define TB5_CAP_HOST_MEM	(1u << 0)	/* tb5_reg_host() */
#define TB5_CAP_DMABUF		(1u << 1)	/* tb5_reg_dmabuf() */
#define TB5_CAP_LOOP		(1u << 2)	/* one end of a loop pair */
#define TB5_CAP_GPU_MEM		(1u << 3)	/* tb5_reg_gpu() of a device pointer alone */

#define TB5_NAME_MAX		32	/* bytes of a link name, NUL included */

/* What a link is; from tb5_list_links() and tb5_query(). */
struct tb5_link_info {
	char name[TB5_NAME_MAX];	/* "tb5_0", "sim_1": what tb5_open() takes */
	uint32_t backend;		/* TB5_BACKEND_* */
	uint32_t state;			/* TB5_LINK_STATE_* */
	uint64_t local_host;		/* this end's host id */
	uint64_t peer_host;		/* the other end's host id; 0 unless READY */
	uint32_t index;			/* <n> of /dev/tb5_<n>, or the simulator's link number */
	uint32_t ring_size;		/* descriptors per ring */
	uint32_t max_frame;		/* bytes per frame */
	uint32_t speed_mbps;		/* link rate; 0 when unknown or unlimited */
	uint32_t caps;			/* TB5_CAP_* */
	uint32_t max_ops;		/* sends, and receives, outstanding per endpoint */
	uint64_t max_msg;		/* largest message, bytes */
	uint64_t reserved[4];
};

/* Per-link counters since the link was created; tb5_get_counters(). */
struct tb5_counters {
	uint64_t tx_frames;
	uint64_t tx_bytes;		/* frame bytes, headers included */
	uint64_t rx_frames;
	uint64_t rx_bytes;
	uint64_t errors;		/* malformed frames, drops, link resets */
	uint64_t reserved[3];
};

/*
 * Received frames a link dropped or refused, by why, since the link was
 * created; tb5_get_drops(). A connection whose receive failed with
 * -EBADMSG lost frames (sequence_gap; ring_overflow when the receiving
 * NHI said it had no room); -EPROTO means the peer sent what this end never
 * asked for (malformed, out_of_window, unknown_connection).
 */
struct tb5_drops {
	uint64_t malformed;		/* bad header, markers or size */
	uint64_t unknown_connection;	/* for no open connection, or not from its peer */
	uint64_t out_of_window;		/* data or grants outside what was posted */
	uint64_t ring_overflow;		/* no room: the NHI overran, or replies queued up */
	uint64_t sequence_gap;		/* a frame before it went missing */
	uint64_t reserved[3];
};

/* The address a connector needs; from tb5_endpoint_address(). */
struct tb5_address {
	uint64_t host;			/* the listener's host id */
	uint64_t service;
	uint64_t cookie;
};

/* Endpoint states; tb5_endpoint_state(). */
#define TB5_ENDPOINT_LISTENING	1
#define TB5_ENDPOINT_CONNECTING	2
#define TB5_ENDPOINT_CONNECTED	3
#define TB5_ENDPOINT_PEER_CLOSED 4	/* nothing more can be sent or received */
#define TB5_ENDPOINT_FAILED	5	/* refused, or the link went down */

/* Completion kinds (tb5_wc.kind). */
#define TB5_WC_SEND		1
#define TB5_WC_RECV		2
#define TB5_WC_EVENT		3

/* Endpoint events (tb5_wc.event, with kind TB5_WC_EVENT). */
#define TB5_WC_CONNECTED	1	/* a connect was accepted */
#define TB5_WC_INCOMING		2	/* accept until -EAGAIN */
#define TB5_WC_PEER_CLOSED	3	/* status -ECONNRESET */
#define TB5_WC_ERROR		4	/* refused or link lost: status says why */

/* One completion or event. */
struct tb5_wc {
	uint64_t user_data;		/* as posted; for events, the endpoint's context */
	uint64_t bytes;			/* bytes moved (the message size for a receive) */
	int32_t status;			/* 0 or a negative errno */
	uint32_t tag;			/* as posted */
	uint16_t kind;			/* TB5_WC_* */
	uint16_t event;			/* TB5_WC_CONNECTED... when kind is TB5_WC_EVENT */
	uint32_t reserved;
	tb5_endpoint *ep;		/* the endpoint it belongs to */
};

/* One operation for tb5_post(). */
#define TB5_POST_SEND		1
#define TB5_POST_RECV		2

struct tb5_op {
	uint32_t kind;			/* TB5_POST_SEND or TB5_POST_RECV */
	uint32_t tag;
	tb5_endpoint *ep;		/* a connected endpoint of the device */
	tb5_mr *mr;			/* a region registered on the device */
	uint64_t offset;		/* byte offset in the region */
	uint64_t len;			/* bytes; offset + len within the region */
	uint64_t user_data;		/* returned in the completion */
};

/* The library's version, e.g. "0.1.0". */
TB5_API const char *tb5_version(void);
/* A description of a negative errno returned by this library. */
TB5_API const char *tb5_strerror(int err);
/* The calling thread's message about its last failed call ("" if none). */
TB5_API const char *tb5_last_error(void);

/*
 * The name of a link state ("down", "up", "ready") or of a backend ("kernel",
 * "simulator"), for messages and reports; never NULL: "unknown" for a value
 * this library does not know.
 */
TB5_API const char *tb5_link_state_str(uint32_t state);
TB5_API const char *tb5_backend_str(uint32_t backend);

/*
 * The links of this host, in a stable order. *links is an array of *count
 * entries (NULL and 0 when there is none), freed with tb5_free_link_list().
 * With TB5_SIM set it joins the fabric, and fails as tb5_open() does
 * (-EPROTONOSUPPORT) when a libtb5 of another version made it.
 */
TB5_API int tb5_list_links(struct tb5_link_info **links, size_t *count);
TB5_API void tb5_free_link_list(struct tb5_link_info *links);

/*
 * Open a link by name. -ENODEV: no such link. -EPROTONOSUPPORT: a version
 * mismatch, not a protocol break: the tb5 module speaks another ABI version
 * than this library (kernel links), or the simulator's fabric was made by
 * a libtb5 of another version (simulator links); tb5_last_error() names
 * both versions and what to do.
 */
TB5_API int tb5_open(const char *name, tb5_device **dev);
/* Close endpoints, deregister memory, free the device. */
TB5_API void tb5_close(tb5_device *dev);
/* The link's current description. */
TB5_API int tb5_query(tb5_device *dev, struct tb5_link_info *info);
TB5_API int tb5_get_counters(tb5_device *dev, struct tb5_counters *counters);
/* The link's drop counters; -EOPNOTSUPP from a module without them. */
TB5_API int tb5_get_drops(tb5_device *dev, struct tb5_drops *drops);
/*
 * What grew from @before to @after, in an operator's words ("2 frames lost
 * (sequence gap), 1 malformed frame"), into @buf; "" when nothing did.
 * @before may be NULL (counts since the link was made). Returns @buf.
 */
TB5_API const char *tb5_drops_describe(const struct tb5_drops *before,
				       const struct tb5_drops *after,
				       char *buf, size_t len);

/* Register [addr, addr + len) of this process; len > 0. */
TB5_API int tb5_reg_host(tb5_device *dev, void *addr, size_t len, tb5_mr **mr);
/* Import [offset, offset + len) of a dma-buf; needs TB5_CAP_DMABUF. */
TB5_API int tb5_reg_dmabuf(tb5_device *dev, int fd, uint64_t offset,
			   uint64_t len, tb5_mr **mr);
/*
 * Register [addr, addr + len) of GPU memory (a CUDA device address), as
 * NCCL hands it: regMrDmaBuf(data, size, offset, fd) is
 * tb5_reg_gpu(dev, data, size, fd, offset, &mr), and regMr with
 * NCCL_PTR_CUDA is tb5_reg_gpu(dev, data, size, -1, 0, &mr).
 *
 * @dmabuf_fd, if not -1, is a dma-buf of that memory and @dmabuf_offset
 * the offset of @addr in it; the call does not take the fd over (close it
 * when you like). Without an fd the link needs TB5_CAP_GPU_MEM. Sends and
 * receives name the region by offset from @addr, as for host memory.
 *
 *   kernel     imports the dma-buf (TB5_CAP_DMABUF, as tb5_reg_dmabuf());
 *              an address alone is refused with -EOPNOTSUPP
 *   simulator  TB5_CAP_GPU_MEM where a DMA engine carries GPU memory (the
 *              GPUs' copy engines through CUDA, loaded at run time): the
 *              address must be device memory, the dma-buf (if given) at
 *              least @dmabuf_offset + @len bytes. Without one: -EOPNOTSUPP,
 *              tb5_last_error() says why (no libcuda, cuInit's error...)
 *
 * -EINVAL: a length of 0 or past the end of the address space, an address
 * that is not device memory, an fd that is not a dma-buf, an offset past
 * its end. Nothing is registered on failure.
 */
TB5_API int tb5_reg_gpu(tb5_device *dev, void *addr, size_t len,
			int dmabuf_fd, uint64_t dmabuf_offset, tb5_mr **mr);
/* -EBUSY while an operation still uses the region (the region stays). */
TB5_API int tb5_dereg(tb5_mr *mr);

/*
 * tb5_endpoint_listen() flags. A well-known listener has cookie 0, so that a
 * peer that knows only the service id can connect (a tool's server or
 * responder); any other listener has a random cookie, never 0.
 */
#define TB5_LISTEN_WELL_KNOWN	(1u << 0)

/* Listen for connections to @service; -EADDRINUSE if the link has one. */
TB5_API int tb5_endpoint_listen(tb5_device *dev, uint64_t service,
				uint32_t flags, uint64_t context,
				tb5_endpoint **ep);
TB5_API int tb5_endpoint_address(tb5_endpoint *listener,
				 struct tb5_address *addr);
/*
 * Connect to a listener through this device's link. -EHOSTUNREACH when the
 * link's peer is not addr->host (use the link that reaches it).
 */
TB5_API int tb5_endpoint_connect(tb5_device *dev,
				 const struct tb5_address *addr,
				 uint64_t context, tb5_endpoint **ep);
/* A connection waiting on @listener; -EAGAIN when none waits. */
TB5_API int tb5_endpoint_accept(tb5_endpoint *listener, uint64_t context,
				tb5_endpoint **ep);
/* Outstanding operations are cancelled; @ep is invalid afterwards. */
TB5_API int tb5_endpoint_close(tb5_endpoint *ep);
/* TB5_ENDPOINT_*, or a negative errno; *error (if not NULL) says why it FAILED. */
TB5_API int tb5_endpoint_state(tb5_endpoint *ep, int *error);

/*
 * Post operations in order; stops at the first that fails. Returns 0 when
 * all were posted, else that operation's error, with *posted (if not NULL)
 * the number that went in. -EAGAIN: max_ops outstanding on the endpoint.
 */
TB5_API int tb5_post(tb5_device *dev, const struct tb5_op *ops, size_t count,
		     size_t *posted);
TB5_API int tb5_send(tb5_endpoint *ep, tb5_mr *mr, uint64_t offset,
		     uint64_t len, uint32_t tag, uint64_t user_data);
TB5_API int tb5_recv(tb5_endpoint *ep, tb5_mr *mr, uint64_t offset,
		     uint64_t len, uint32_t tag, uint64_t user_data);

/* Up to @max completions; returns how many, or a negative errno. */
TB5_API int tb5_poll(tb5_device *dev, struct tb5_wc *wc, int max);
/*
 * Sleep until tb5_poll() has something, at most @timeout_ms (-1: forever).
 * 0, -ETIMEDOUT or -EINTR.
 */
TB5_API int tb5_wait(tb5_device *dev, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* TB5_TB5_H */
