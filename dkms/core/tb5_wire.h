/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * tb5_wire.h - the tb5 frame format (wire version 1).
 *
 * Every frame with start-of-frame marker TB5_SOF_HEADER begins with a 16-byte
 * little-endian common header followed by a type-specific body:
 *
 *   offset size field
 *   0      2    magic    TB5_WIRE_MAGIC
 *   2      1    version  TB5_WIRE_VERSION
 *   3      1    type     enum tb5_wire_type
 *   4      2    len      header + body bytes (>= the type's size, <= frame)
 *   6      2    flags    0 (reserved)
 *   8      4    dst      destination endpoint id (0: the link itself)
 *   12     4    src      source endpoint id (0: the link itself)
 *
 * Bodies (offsets from the start of the frame):
 *   HELLO   16 host_id u64, 24 epoch u64, 32 ring_size u32, 36 features u32
 *   CONNECT 16 service u64, 24 listen_cookie u64, 32 conn_cookie u64
 *   ACCEPT  16 conn_cookie u64
 *   REJECT  16 conn_cookie u64, 24 status s32, 28 pad
 *   CLOSE   16 status s32, 20 pad
 *   CTS     16 seq u32, 20 tag u32, 24 len u64
 *   DATA    16 seq u32, 20 flags u32, 24 offset u64, 32 msg_len u64,
 *           40 burst_len u32, 44 pad
 *   ABORT   16 seq u32, 20 status s32
 *
 * A DATA header with burst_len > 0 carries TB5_EOF_MORE and is followed by
 * exactly ceil(burst_len / TB5_FRAME_MAX) TB5_SOF_PAYLOAD frames, all full
 * but the last, the last marked TB5_EOF_LAST. Every other header frame is a
 * burst of one, marked TB5_EOF_LAST. Receivers accept longer headers than
 * they know (later minor additions) and refuse other versions.
 *
 * The status of REJECT, CLOSE and ABORT is a wire status code (TB5_WIRE_ST_*),
 * not an errno: the sender encodes its errno (tb5_wire_status_encode()), the
 * receiver decodes the code to an errno of its own choosing
 * (tb5_wire_status_decode()), so a peer cannot pick the error a local
 * operation fails with.
 */
#ifndef TB5_WIRE_H
#define TB5_WIRE_H

#include "tb5_os.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TB5_WIRE_MAGIC		0x35b5u	/* "\xb5" "5" on the wire */
#define TB5_WIRE_VERSION	1u
#define TB5_WIRE_COMMON_LEN	16u
#define TB5_WIRE_MAX_LEN	64u	/* largest header this version writes */

#define TB5_DATA_LAST		0x1u	/* DATA flags: the message ends with this burst */

enum tb5_wire_type {
	TB5_WIRE_HELLO = 1,	/* link: this host's id and boot epoch */
	TB5_WIRE_CONNECT,	/* to a service: open a connection */
	TB5_WIRE_ACCEPT,	/* to a connector: accepted, src is the new endpoint */
	TB5_WIRE_REJECT,	/* to a connector: refused */
	TB5_WIRE_CLOSE,		/* to an endpoint: the peer closed it */
	TB5_WIRE_CTS,		/* to a sender: a receive was posted */
	TB5_WIRE_DATA,		/* to a receiver: a burst of a message */
	TB5_WIRE_ABORT,		/* to a receiver: a granted receive fails */
	TB5_WIRE_TYPE_MAX = TB5_WIRE_ABORT,
};

/*
 * Wire status codes: each frame type carries exactly the codes listed for it,
 * any other value is malformed. The values are those version 1 carried
 * before the codes were defined (Linux's errno, negated), so the frames of
 * an older peer decode the same and the wire version did not change; they are
 * wire constants all the same, whatever the host's errno numbers are.
 */
#define TB5_WIRE_ST_MSGSIZE	(-90)	/* ABORT: the send was longer than the grant */
#define TB5_WIRE_ST_CONNRESET	(-104)	/* CLOSE: the peer closed the connection */
#define TB5_WIRE_ST_CONNREFUSED	(-111)	/* REJECT: no such listener, or it refused */

/* A header, decoded into host byte order (status fields: wire codes). */
struct tb5_wire_msg {
	uint8_t type;
	uint32_t dst;
	uint32_t src;
	union {
		struct {
			uint64_t host_id;
			uint64_t epoch;
			uint32_t ring_size;
			uint32_t features;
		} hello;
		struct {
			uint64_t service;
			uint64_t listen_cookie;
			uint64_t conn_cookie;
		} connect;
		struct {
			uint64_t conn_cookie;
		} accept;
		struct {
			uint64_t conn_cookie;
			int32_t status;
		} reject;
		struct {
			int32_t status;
		} close;
		struct {
			uint32_t seq;
			uint32_t tag;
			uint64_t len;
		} cts;
		struct {
			uint32_t seq;
			uint32_t flags;
			uint64_t offset;
			uint64_t msg_len;
			uint32_t burst_len;
		} data;
		struct {
			uint32_t seq;
			int32_t status;
		} abort;
	} u;
};

/* Bytes a header of @type occupies in this version; 0 for unknown types. */
uint32_t tb5_wire_len(uint8_t type);
/* Encode into @buf (TB5_WIRE_MAX_LEN bytes); returns the length written. */
uint32_t tb5_wire_encode(const struct tb5_wire_msg *msg, uint8_t *buf);
/* Decode and validate; 0, or -EPROTO for a frame this version refuses. */
int tb5_wire_decode(const void *frame, uint32_t len, struct tb5_wire_msg *msg);
/*
 * The wire code a frame of @type (REJECT, CLOSE or ABORT) carries for the
 * local errno @err; an errno the type has no code for goes out as the
 * type's first code (its generic failure).
 */
int32_t tb5_wire_status_encode(uint8_t type, int32_t err);
/*
 * The local errno for wire code @code in a frame of @type; 0 when the type
 * does not carry that code (the frame is malformed).
 */
int32_t tb5_wire_status_decode(uint8_t type, int32_t code);

#ifdef __cplusplus
}
#endif

#endif /* TB5_WIRE_H */
