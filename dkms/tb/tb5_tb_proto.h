/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * tb5_tb_proto.h - the Thunderbolt backend's logic that needs no hardware.
 *
 * The `tb` backend (dkms/tb5_tb.c) is a Thunderbolt service driver on the
 * XDomain bus. Everything it decides without touching the Thunderbolt API
 * lives here, in portable C written against tb5_os.h like the core, so that
 * the same file is compiled into tb5.ko and into the unit tests
 * (tests/tb/):
 *
 *   - the service's identity: property directory key, UUIDs, protocol id,
 *     version and settings (prtcstns), and what the two ends agree on;
 *   - the login/logout messages exchanged over XDomain request/response
 *     packets, encoded as the 32-bit words the control channel carries;
 *   - the login state machine: retries, timeouts, connect and disconnect;
 *   - the order in which a connection's resources are brought up and torn
 *     down (the RX ring is primed before the paths are enabled; teardown
 *     undoes exactly what was done, in reverse);
 *   - the frame mapping between the core's start/end-of-frame markers and
 *     the NHI's PDF values, and the TX ring's slot bookkeeping;
 *   - the link speed from the XDomain's lane speed and width.
 *
 * Nothing here sleeps or locks: the caller serialises each object.
 */
#ifndef TB5_TB_PROTO_H
#define TB5_TB_PROTO_H

#include "tb5_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* -- the service's identity ---------------------------------------------- */

/* Key of the property directory every tb5 host publishes (<= 8 chars). */
#define TB5_TB_KEY		"tb5"
#define TB5_TB_PRTCID		1u	/* protocol id */
#define TB5_TB_PRTCVERS		1u	/* protocol version: login messages */
#define TB5_TB_PRTCREVS		1u	/* software revision, informational */

/* prtcstns bits: what this end's rings can do. */
#define TB5_TB_F_E2E		(1u << 0)	/* end-to-end flow control */
#define TB5_TB_F_KNOWN		TB5_TB_F_E2E

/* The property directory's UUID and the UUID of tb5's XDomain messages. */
extern const uint8_t tb5_tb_dir_uuid[16];
extern const uint8_t tb5_tb_msg_uuid[16];

struct tb5_tb_prop {
	const char *key;
	uint32_t value;
};

#define TB5_TB_NPROPS		4u
/* The immediate properties of the directory, for a host that offers @e2e. */
void tb5_tb_props(bool e2e, struct tb5_tb_prop props[TB5_TB_NPROPS]);
/* 0 if a remote service with these values speaks our protocol. */
int tb5_tb_service_check(uint32_t prtcid, uint32_t prtcvers);
/* The features both ends use: those both offer and this version knows. */
uint32_t tb5_tb_agree(uint32_t local, uint32_t remote);

/* -- link speed ---------------------------------------------------------- */

/*
 * Lanes in each direction from the XDomain's link_width: a lane count (1
 * or 2) before 6.5, a mask of enum tb_link_width after: SINGLE 1, DUAL 2,
 * ASYM_TX 4 (three lanes out, one in), ASYM_RX 8 (one out, three in). Both
 * encodings agree on 1 and 2. 0 lanes for anything unknown.
 */
void tb5_tb_lanes(uint32_t link_width, uint32_t *tx, uint32_t *rx);
/* Mb/s the plugin reports: the slower direction (@gbps per lane). */
uint32_t tb5_tb_speed_mbps(uint32_t gbps, uint32_t tx_lanes, uint32_t rx_lanes);

/* -- login messages ------------------------------------------------------ */

/*
 * One message: 24 words. The first three are the XDomain header the
 * control channel routes by (route, length in words after it, sequence);
 * then tb5's message UUID (what the XDomain code dispatches protocol
 * handlers by), the sender's and the target's XDomain UUIDs, and the body.
 * Requests and responses have the same size, so a response always passes
 * the control channel's size check.
 */
#define TB5_TB_MSG_WORDS	24u
#define TB5_TB_MSG_BYTES	(TB5_TB_MSG_WORDS * 4u)
#define TB5_TB_MSG_VERSION	1u
#define TB5_TB_ROUTE_MASK	0x7fffffffffffffffull	/* bit 63: set on responses */

enum tb5_tb_msg_type {
	TB5_TB_MSG_LOGIN = 1,	/* request: here is my transmit path */
	TB5_TB_MSG_LOGIN_RESP,	/* response: status */
	TB5_TB_MSG_LOGOUT,	/* request: I stop */
	TB5_TB_MSG_LOGOUT_RESP,	/* response: status */
};

struct tb5_tb_msg {
	uint64_t route;		/* route string of the remote host */
	uint32_t seq;		/* 2-bit XDomain sequence number */
	uint32_t type;		/* enum tb5_tb_msg_type */
	uint8_t sender[16];	/* the sender's XDomain (host) UUID */
	uint8_t target[16];	/* the receiver's */
	uint32_t cmd_id;	/* request's id, echoed by its response */
	uint32_t version;	/* TB5_TB_MSG_VERSION */
	/*
	 * Responses: 0, EPROTONOSUPPORT (another version), or any other
	 * positive errno: a refusal, retried, its value never passed on.
	 */
	uint32_t status;
	uint32_t path;		/* LOGIN: the sender's transmit HopID */
	uint32_t features;	/* LOGIN: TB5_TB_F_* the sender uses */
	uint32_t ring_size;	/* LOGIN: the sender's RX descriptors */
	uint32_t session;	/* a number the sender draws at each login */
};

void tb5_tb_msg_encode(const struct tb5_tb_msg *m,
		       uint32_t words[TB5_TB_MSG_WORDS]);
/*
 * Decode @bytes bytes of a received packet: -EBADMSG unless it is a tb5
 * message of a known type whose size and length field agree (longer
 * messages of a later version are accepted; the login refuses a version it
 * does not speak, with an answer).
 */
int tb5_tb_msg_decode(const uint32_t *words, size_t bytes,
		      struct tb5_tb_msg *m);
static inline bool tb5_tb_msg_is_request(uint32_t type)
{
	return type == TB5_TB_MSG_LOGIN || type == TB5_TB_MSG_LOGOUT;
}
/* True if @m came from the host at @route (remote) to us (local). */
bool tb5_tb_msg_for(const struct tb5_tb_msg *m, uint64_t route,
		    const uint8_t remote[16], const uint8_t local[16]);

/* -- the login state machine --------------------------------------------- */

/* Timing, in one place. */
#define TB5_TB_LOGIN_FIRST_MS		100u	/* first LOGIN after start */
#define TB5_TB_LOGIN_TIMEOUT_MS		500u	/* wait for a LOGIN's response */
#define TB5_TB_LOGIN_RETRY_MS		1000u	/* between LOGIN attempts */
#define TB5_TB_LOGIN_RETRIES		60u	/* then wait for the peer */
#define TB5_TB_LOGOUT_TIMEOUT_MS	500u
#define TB5_TB_LOGOUT_RETRIES		3u
#define TB5_TB_CONNECT_RETRY_MS		2000u	/* after a failed connect */

enum tb5_tb_login_state {
	TB5_TB_IDLE = 0,	/* stopped (or before the first start) */
	TB5_TB_LOGIN,		/* logging in: LOGIN requests, answering the peer's */
	TB5_TB_WAIT,		/* gave up sending; a LOGIN from the peer restarts */
	TB5_TB_CONNECTED,	/* both logins done: the rings run */
};

/* What the caller does next, in this order. */
#define TB5_TB_ACT_RESPOND	(1u << 0)	/* answer the request with act.status */
#define TB5_TB_ACT_DISCONNECT	(1u << 1)	/* stop the rings, release the paths */
#define TB5_TB_ACT_CONNECT	(1u << 2)	/* bring the rings and paths up */
#define TB5_TB_ACT_SEND_LOGIN	(1u << 3)	/* send a LOGIN after act.delay_ms */

struct tb5_tb_act {
	uint32_t flags;
	uint32_t delay_ms;
	uint32_t status;	/* for RESPOND: 0 or a positive errno */
};

/* What this end announces in its LOGIN. */
struct tb5_tb_local {
	uint32_t path;		/* transmit HopID */
	uint32_t features;	/* agreed TB5_TB_F_* */
	uint32_t ring_size;
};

/* What the peer announced in its LOGIN. */
struct tb5_tb_peer {
	uint32_t path;
	uint32_t features;
	uint32_t ring_size;
	uint32_t session;
};

struct tb5_tb_login {
	enum tb5_tb_login_state state;
	bool sent;		/* our LOGIN was acknowledged */
	bool received;		/* we acknowledged the peer's LOGIN */
	uint32_t retries;	/* LOGIN attempts that failed in a row */
	uint32_t cmd_id;	/* id of our latest request */
	uint32_t session;	/* ours, drawn at start */
	struct tb5_tb_local local;
	struct tb5_tb_peer peer;	/* valid once @received */
	/* Counters, for sysfs and the tests. */
	uint32_t logins;	/* times CONNECTED was reached */
	uint32_t login_failures;
};

/* Begin logging in (probe, resume): SEND_LOGIN after a short delay. */
void tb5_tb_login_start(struct tb5_tb_login *l, const struct tb5_tb_local *local,
			uint32_t session, struct tb5_tb_act *act);
/*
 * Build the next LOGIN (or LOGOUT) request; returns its command id, which
 * the response must echo.
 */
uint32_t tb5_tb_login_request(struct tb5_tb_login *l, uint32_t type,
			      struct tb5_tb_msg *m);
/*
 * Our LOGIN came back: @err is 0 with @resp the response, or the transport's
 * error (-ETIMEDOUT, ...) with @resp NULL.
 */
void tb5_tb_login_result(struct tb5_tb_login *l, uint32_t cmd_id, int err,
			 const struct tb5_tb_msg *resp, struct tb5_tb_act *act);
/* A request from the peer (LOGIN or LOGOUT), already checked by _msg_for(). */
void tb5_tb_login_rx(struct tb5_tb_login *l, const struct tb5_tb_msg *req,
		     struct tb5_tb_act *act);
/* CONNECT failed with @err: undo, and try again later. */
void tb5_tb_login_connect_failed(struct tb5_tb_login *l, int err,
				 struct tb5_tb_act *act);
/*
 * Stop (remove, suspend, shutdown). Returns true when a LOGOUT should be
 * sent; @act says whether to DISCONNECT. State is IDLE afterwards.
 */
bool tb5_tb_login_stop(struct tb5_tb_login *l, struct tb5_tb_act *act);
/* Fill @resp as the answer to @req with @status. */
void tb5_tb_login_response(const struct tb5_tb_msg *req, uint32_t status,
			   struct tb5_tb_msg *resp);
const char *tb5_tb_login_state_name(enum tb5_tb_login_state st);

/* -- bring-up and teardown order ----------------------------------------- */

/*
 * The steps of a connection, in the order they are taken. Teardown undoes
 * the steps that were done, last first, whatever failed in between.
 */
enum tb5_tb_step {
	TB5_TB_STEP_IN_HOPID = 0,	/* reserve the peer's transmit HopID */
	TB5_TB_STEP_TX_START,		/* start the TX ring */
	TB5_TB_STEP_RX_START,		/* start the RX ring */
	TB5_TB_STEP_RX_PRIME,		/* post every RX buffer */
	TB5_TB_STEP_PATHS,		/* enable the DMA paths: frames may flow */
	TB5_TB_STEP_LINK_UP,		/* tell the core: HELLO goes out */
	TB5_TB_NSTEPS
};

struct tb5_tb_ledger {
	uint32_t done;		/* bit per enum tb5_tb_step */
};

/* The next step to take, or -1 when all are done. */
int tb5_tb_ledger_next(const struct tb5_tb_ledger *lg);
void tb5_tb_ledger_mark(struct tb5_tb_ledger *lg, enum tb5_tb_step s);
/* The next step to undo (and forget), or -1 when nothing is left. */
int tb5_tb_ledger_undo(struct tb5_tb_ledger *lg);
const char *tb5_tb_step_name(enum tb5_tb_step s);

/* -- frames and descriptors ---------------------------------------------- */

/*
 * The NHI carries a 4-bit PDF on the first and on the last packet of a
 * frame; the RX ring ends a frame on a PDF in its EOF mask and reports that
 * PDF. A frame that fits in one packet (headers do) carries only the EOF
 * PDF, so both of the core's markers are encoded in it, and the SOF PDF is
 * the same for every frame.
 */
#define TB5_TB_PDF_SOF		0x1u
#define TB5_TB_PDF_HDR_MORE	0x2u
#define TB5_TB_PDF_HDR_LAST	0x3u
#define TB5_TB_PDF_PAY_MORE	0x4u
#define TB5_TB_PDF_PAY_LAST	0x5u
#define TB5_TB_PDF_DROP		0x6u	/* a frame the sender could not fill */
#define TB5_TB_SOF_MASK		(1u << TB5_TB_PDF_SOF)
#define TB5_TB_EOF_MASK		((1u << TB5_TB_PDF_HDR_MORE) | (1u << TB5_TB_PDF_HDR_LAST) | \
				 (1u << TB5_TB_PDF_PAY_MORE) | (1u << TB5_TB_PDF_PAY_LAST) | \
				 (1u << TB5_TB_PDF_DROP))

/*
 * A TX descriptor for a frame of @len bytes with the core's @sof and @eof
 * markers: its two PDFs and its size field (12 bits, 0 meaning 4096).
 * -EINVAL for a marker or a length the core never produces.
 */
int tb5_tb_tx_desc(uint8_t sof, uint8_t eof, uint32_t len, uint8_t *pdf_sof,
		   uint8_t *pdf_eof, uint32_t *size_field);

/* RX descriptor flags, as the NHI reports them (enum ring_desc_flags). */
#define TB5_TB_DESC_CRC_ERROR	0x1u
#define TB5_TB_DESC_OVERRUN	0x4u

enum tb5_tb_rx_verdict {
	TB5_TB_RX_OK = 0,
	TB5_TB_RX_CRC,		/* the frame's CRC check failed */
	TB5_TB_RX_OVERRUN,	/* larger than the buffer */
	TB5_TB_RX_BAD_PDF,	/* an EOF PDF tb5 never sends */
	TB5_TB_RX_DROPPED,	/* TB5_TB_PDF_DROP: the sender dropped it */
};

/*
 * Check a completed RX descriptor (@size 0 means 4096) and recover the
 * core's markers and the frame length.
 */
enum tb5_tb_rx_verdict tb5_tb_rx_check(uint32_t flags, uint32_t size,
				       uint8_t pdf_eof, uint8_t *sof,
				       uint8_t *eof, uint32_t *len);

/*
 * The TX ring's slots. Each slot owns a DMA buffer (the glue's); a frame
 * takes the slot at the head. The NHI completes frames in order, but two
 * reapers (the ring's completion work and a busy poll) may report them out
 * of order: a slot is free again once every older one is.
 */
struct tb5_tb_txq {
	uint32_t size;		/* slots, a power of two */
	uint32_t head;		/* free-running: next slot to fill */
	uint32_t tail;		/* free-running: oldest slot not free yet */
	uint32_t kick_at;	/* free slots that wake a stalled core */
	bool stalled;		/* the core was told -ENOSPC */
	uint64_t *cookies;	/* per slot: the core's cookie */
	uint8_t *state;		/* per slot: free, in flight, done */
	/* Counters. */
	uint64_t completed;
	uint64_t full;		/* reserve() refused */
	uint64_t reordered;	/* completions reported before an older one */
	uint64_t bad;		/* completions of a slot not in flight */
};

int tb5_tb_txq_init(struct tb5_tb_txq *q, uint32_t size);
void tb5_tb_txq_free(struct tb5_tb_txq *q);
/* Take the head slot for a frame with @cookie: 0, or -ENOSPC when full. */
int tb5_tb_txq_reserve(struct tb5_tb_txq *q, uint64_t cookie, uint32_t *slot);
/* Give back the slot just reserved (the ring refused the frame). */
void tb5_tb_txq_unreserve(struct tb5_tb_txq *q);
/*
 * Slot @slot was transmitted. Returns 0 with its cookie (the frame has left
 * the ring, and so has every older one) and whether the core must be kicked
 * (it stalled and enough slots are free now); -EPROTO when @slot is not in
 * flight (nothing changes).
 */
int tb5_tb_txq_complete(struct tb5_tb_txq *q, uint32_t slot, uint64_t *cookie,
			bool *kick);
/* The ring stopped: every slot is free, no completion will come. */
void tb5_tb_txq_reset(struct tb5_tb_txq *q);
static inline uint32_t tb5_tb_txq_used(const struct tb5_tb_txq *q)
{
	return q->head - q->tail;
}

#ifdef __cplusplus
}
#endif

#endif /* TB5_TB_PROTO_H */
