/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * tb5_core.h - the portable tb5 transport core.
 *
 * One core runs in three places: the kernel module (over the loop and tb ring
 * backends), libtb5's user-space simulator, and the unit tests and fuzzers.
 *
 * A *link* is one end of a pair of NHI-like rings: a TX ring and an RX ring of
 * ring_size descriptors, each carrying one frame of at most TB5_FRAME_MAX
 * bytes with start-of-frame / end-of-frame markers. The backend that owns the
 * rings feeds received frames in with tb5_link_rx(), reports transmitted
 * frames with tb5_link_tx_done(), and accepts frames to transmit through
 * tb5_link_ops.tx().
 *
 * *Endpoints* are multiplexed over a link. A listener waits on a 64-bit
 * service id; a connector names the service and the listener's cookie; the
 * listener's owner accepts. Connected endpoints exchange reliable,
 * receiver-driven messages: a posted receive grants clear-to-send (CTS) to the
 * peer; a send moves data only against a grant whose tag matches, segmented
 * into bursts of frames that the receiver reassembles straight into the posted
 * memory. A send larger than the granted receive completes with -EMSGSIZE on
 * both sides and no byte is written.
 *
 * Sends and receives of equal tags pair up in posting order; a send waits
 * only for a grant of its own tag. Endpoints of a link take turns, one burst
 * each, so a small message is not stuck behind a large one elsewhere.
 *
 * Completions carry the caller's id, a status (0 or a negative errno) and the
 * byte count. A send completes when its last frame has left the TX ring: its
 * memory is the caller's again, and the bytes have left this host, but that
 * is no proof the peer's receive completed (the peer may close meanwhile).
 *
 * Locking: every call takes the link's lock; the callbacks in tb5_link_ops are
 * invoked with that lock held and must not call back into the core. The core
 * never calls a callback from a function that does not belong to the same
 * link. Functions that allocate (tb5_link_create, tb5_listen, tb5_connect,
 * tb5_accept) do so before taking the lock.
 */
#ifndef TB5_CORE_H
#define TB5_CORE_H

#include "tb5_os.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits, in one place. */
#define TB5_FRAME_MAX		4096u	/* bytes in one ring frame */
#define TB5_RING_SIZE_MIN	64u	/* descriptors per ring */
#define TB5_RING_SIZE_MAX	16384u
#define TB5_RING_SIZE_DEFAULT	4096u
#define TB5_EP_MAX_OPS		64u	/* outstanding sends, and receives, per endpoint */
#define TB5_BACKLOG_MAX		64u	/* connections waiting for accept, per listener */
#define TB5_ENDPOINTS_MAX	65535u	/* endpoints per link (16-bit index) */
#define TB5_ENDPOINTS_DEFAULT	1024u
#define TB5_BURST_FRAMES_MAX	256u	/* payload frames after one data header */
#define TB5_BURST_FRAMES_DEFAULT 16u
#define TB5_MSG_MAX		(1ull << 40)	/* largest message, bytes */

/*
 * Frame markers, carried per descriptor like the NHI's SOF/EOF PDF fields.
 * The start-of-frame marker says what a frame holds; the end-of-frame marker
 * says whether it is the last frame of its burst.
 */
#define TB5_SOF_HEADER		0x1	/* a protocol header, see tb5_wire.h */
#define TB5_SOF_PAYLOAD		0x2	/* raw bytes of the burst the last header announced */
#define TB5_EOF_MORE		0x3	/* more frames of this burst follow */
#define TB5_EOF_LAST		0x4	/* last frame of this burst */

/*
 * A place in memory the owner registered. The core treats @region as opaque
 * and only adds to @offset; the backend (tx) and the owner (copy_to) resolve
 * it. In user space with plain pointers, region is NULL and offset is the
 * address.
 */
struct tb5_mem {
	void *region;
	uint64_t offset;
};

/* One frame handed to the backend's TX ring. */
struct tb5_tx_frame {
	uint8_t sof;		/* TB5_SOF_* */
	uint8_t eof;		/* TB5_EOF_* */
	uint16_t len;		/* bytes, 0 < len <= TB5_FRAME_MAX */
	/*
	 * sof == TB5_SOF_HEADER: the header bytes; valid only during tx(),
	 * the backend copies them.
	 */
	const void *header;
	/*
	 * sof == TB5_SOF_PAYLOAD: where the bytes are (zero-copy transmit);
	 * they stay valid until tb5_link_tx_done() reports @cookie.
	 */
	struct tb5_mem payload;
	/* Handed back, unchanged, in tb5_link_tx_done(). */
	uint64_t cookie;
};

enum tb5_completion_op {
	TB5_COMPLETION_SEND = 1,
	TB5_COMPLETION_RECV = 2,
};

/* A completed send or receive. */
struct tb5_completion {
	uint64_t user_id;	/* as given to tb5_post_send / tb5_post_recv */
	uint64_t bytes;		/* bytes moved (the message size for a receive) */
	int32_t status;		/* 0, or a negative errno */
	uint32_t tag;
	uint32_t op;		/* enum tb5_completion_op */
	uint32_t reserved;
};

enum tb5_event {
	TB5_EV_CONNECTED = 1,	/* a connecting endpoint was accepted */
	TB5_EV_INCOMING,	/* a listener has a connection to accept */
	TB5_EV_PEER_CLOSED,	/* the peer closed; status -ECONNRESET */
	TB5_EV_ERROR,		/* refused or link lost; status says which */
	TB5_EV_RELEASED,	/* a closed endpoint is gone: its ctx is free */
};

enum tb5_ep_state {
	TB5_EP_LISTENING = 1,
	TB5_EP_CONNECTING,
	TB5_EP_CONNECTED,
	TB5_EP_PEER_CLOSED,	/* peer closed: nothing more can be sent or received */
	TB5_EP_ERROR,		/* refused, or the link went down */
};

enum tb5_link_state {
	TB5_LINK_DOWN = 0,	/* rings not running */
	TB5_LINK_UP,		/* rings running, peer not heard yet */
	TB5_LINK_READY,		/* peer said hello */
};

/* Everything that reaches the backend and the owner from the core. */
struct tb5_link_ops {
	/*
	 * Queue one frame on the TX ring. Returns 0, or -ENOSPC when the ring
	 * is full: the core keeps the frame and tries again after the next
	 * tb5_link_tx_done() or tb5_link_kick(). Must not call into the core.
	 */
	int (*tx)(void *priv, const struct tb5_tx_frame *frame);
	/*
	 * Copy @len bytes of a received frame to @dst, inside a receive buffer
	 * the owner posted. The core has checked the range against the posted
	 * length. Returns 0 or a negative errno (the receive then fails).
	 */
	int (*copy_to)(void *priv, const struct tb5_mem *dst, const void *src,
		       uint32_t len);
	/* A send or receive of the endpoint whose context is @ep_ctx is done. */
	void (*complete)(void *priv, void *ep_ctx, const struct tb5_completion *cqe);
	/* Something happened to an endpoint (enum tb5_event). */
	void (*event)(void *priv, void *ep_ctx, enum tb5_event ev, int status);
};

struct tb5_link_config {
	uint32_t ring_size;	/* TB5_RING_SIZE_MIN..MAX, power of two */
	uint32_t burst_frames;	/* 1..TB5_BURST_FRAMES_MAX; 0 means default */
	uint32_t max_endpoints;	/* 1..TB5_ENDPOINTS_MAX; 0 means default */
	uint32_t reserved;
	uint64_t host_id;	/* this host, announced to the peer */
};

/* Why a received frame was dropped or refused (tb5_link_stats.drops). */
enum tb5_drop_kind {
	TB5_DROP_MALFORMED = 0,	/* bad header, markers, size or status */
	TB5_DROP_UNKNOWN_CONN,	/* no such connection, or not from its peer */
	TB5_DROP_OUT_OF_WINDOW,	/* outside what this end granted or asked */
	TB5_DROP_OVERFLOW,	/* no room: the NHI overran, or the reply queue */
	TB5_DROP_SEQ_GAP,	/* a frame before it is missing */
	TB5_DROP_KINDS,
};

struct tb5_link_stats {
	uint64_t tx_frames;
	uint64_t tx_bytes;	/* frame bytes, headers included */
	uint64_t rx_frames;
	uint64_t rx_bytes;
	uint64_t tx_stalls;	/* times the TX ring was full */
	uint64_t rx_dropped;	/* frames for endpoints that no longer exist */
	uint64_t rx_errors;	/* malformed or out-of-protocol frames */
	uint64_t tx_msgs;	/* sends completed successfully */
	uint64_t rx_msgs;	/* receives completed successfully */
	uint64_t peer_resets;	/* link downs and peer restarts */
	/*
	 * Every frame dropped or refused, by kind (enum tb5_drop_kind); each
	 * is also in rx_errors or rx_dropped above.
	 */
	uint64_t drops[TB5_DROP_KINDS];
};

/* The identity a connector needs: returned by tb5_listen_addr(). */
struct tb5_addr {
	uint64_t service;
	uint64_t cookie;
};

struct tb5_link;
struct tb5_ep;

/* Link lifecycle, called by the backend. */
int tb5_link_create(const struct tb5_link_config *cfg,
		    const struct tb5_link_ops *ops, void *priv,
		    struct tb5_link **out);
/*
 * Free the link. Any endpoint still open is closed: its operations complete
 * with -ESHUTDOWN and TB5_EV_RELEASED is reported for each. The backend must
 * have stopped its rings first.
 */
void tb5_link_destroy(struct tb5_link *link);
/* The rings run: announce this host to the peer. */
void tb5_link_up(struct tb5_link *link);
/*
 * The rings stopped (cable pulled, peer gone). The backend has discarded
 * every queued frame and will report no tb5_link_tx_done() for them.
 * Connected endpoints fail with @reason (a negative errno, -ENOLINK when in
 * doubt); listeners stay.
 */
void tb5_link_down(struct tb5_link *link, int reason);
/* One received frame; @data is valid only during the call. */
void tb5_link_rx(struct tb5_link *link, uint8_t sof, uint8_t eof,
		 const void *data, uint32_t len);
/* The frame queued with @cookie has left the TX ring. */
void tb5_link_tx_done(struct tb5_link *link, uint64_t cookie);
/* tb5_link_tx_done() for @n frames, in order, under one lock. */
void tb5_link_tx_done_many(struct tb5_link *link, const uint64_t *cookies,
			   uint32_t n);
/* TX ring space became free without a completion: try to transmit. */
void tb5_link_kick(struct tb5_link *link);
/*
 * The backend refused @frames received frames before they reached the core
 * (its NHI reported an overrun, a CRC error or a marker tb5 never sends):
 * counted in rx_errors and as @kind. What they carried shows up as a
 * sequence gap once the next frame arrives.
 */
void tb5_link_rx_refused(struct tb5_link *link, enum tb5_drop_kind kind,
			 uint32_t frames);

enum tb5_link_state tb5_link_state(struct tb5_link *link);
/* The peer's host id; -ENOTCONN until the peer said hello. */
int tb5_link_peer(struct tb5_link *link, uint64_t *host_id);
void tb5_link_get_stats(struct tb5_link *link, struct tb5_link_stats *st);

/*
 * tb5_listen() flags. A well-known listener has cookie 0, so a peer that
 * knows only the service id can connect (a tool's server, a responder);
 * other listeners get a random cookie that is never 0.
 */
#define TB5_LF_WELL_KNOWN	0x1u

/* Endpoints; all non-blocking. @ctx is the owner's, passed back in callbacks. */
int tb5_listen(struct tb5_link *link, uint64_t service, uint32_t flags,
	       void *ctx, struct tb5_ep **out);
int tb5_listen_addr(struct tb5_ep *listener, struct tb5_addr *addr);
/* -EAGAIN when no connection waits. */
int tb5_accept(struct tb5_ep *listener, void *ctx, struct tb5_ep **out);
/* Returns at once; TB5_EV_CONNECTED or TB5_EV_ERROR follows. */
int tb5_connect(struct tb5_link *link, const struct tb5_addr *addr, void *ctx,
		struct tb5_ep **out);
/*
 * Close the endpoint; the handle is invalid afterwards. Operations not yet
 * completed complete with -ECANCELED (a send whose frames are still on the
 * TX ring completes once they have left it); TB5_EV_RELEASED is the last
 * callback for @ctx.
 */
void tb5_ep_close(struct tb5_ep *ep);
enum tb5_ep_state tb5_ep_state(struct tb5_ep *ep);

/*
 * Post a send or a receive of @len bytes at @mem. Returns 0, -EAGAIN when
 * TB5_EP_MAX_OPS are outstanding, -EMSGSIZE above TB5_MSG_MAX, -ENOTCONN
 * before the connection is up, -ECONNRESET after the peer closed, or the
 * error that ended the connection.
 */
int tb5_post_send(struct tb5_ep *ep, const struct tb5_mem *mem, uint64_t len,
		  uint32_t tag, uint64_t user_id);
int tb5_post_recv(struct tb5_ep *ep, const struct tb5_mem *mem, uint64_t len,
		  uint32_t tag, uint64_t user_id);

#ifdef __cplusplus
}
#endif

#endif /* TB5_CORE_H */
