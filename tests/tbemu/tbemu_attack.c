// SPDX-License-Identifier: GPL-2.0-only
/*
 * tbemu_attack.c - a hostile peer on the emulated cable.
 *
 * The host whose tbemu is told to attack (its `attack` attribute) is a
 * logged-in tb5 peer like any other: its tb5.ko made the login, the paths
 * and the connections. Its emulated NHI then sends, on the DMA path of
 * that login, frames tb5 never would, to the other host's tb5.ko:
 *
 *   learn T O P L  learn, from the victim's frames, the connection whose
 *                  receives of T bytes it grants (the attacked one),
 *                  another one (receives of O bytes), the victim's connect
 *                  to our service P, and keep our own tb5's last message
 *                  and CTS on the attacked connection; L is a service the
 *                  victim listens on;
 *   case N         send crafted case N once (see craft()), between two
 *                  bursts of our own tb5 and against the victim's E2E
 *                  credits; the attribute then says it went ("state 1") or
 *                  could not be made ("state 2");
 *   mutate T N S   N frames of our own tb5's traffic on that connection
 *                  mutated (bit flips, truncation, loss, duplication,
 *                  reordering), with seed S;
 *   flood N        N frames to endpoints that are gone, as fast as the
 *                  wire takes them, without waiting for E2E credits, as a
 *                  broken controller sends: what finds no descriptor at
 *                  the victim is dropped by its NHI;
 *   off
 *
 * Frames longer than a descriptor's buffer reach the victim's NHI, which
 * reports them with RING_DESC_BUFFER_OVERRUN as the real one does; a frame
 * of no bytes is dropped by it.
 *
 * Runs in the engine (under nhi->lock and the TX ring's lock) and in the
 * sysfs store (under nhi->lock).
 */
#define pr_fmt(fmt) "tbemu: " fmt

#include <linux/slab.h>
#include <linux/version.h>
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

#include "tbemu.h"

/* tb5's frame markers as the NHI's PDF values (dkms/tb/tb5_tb_proto.h). */
#define PDF_SOF		0x1
#define PDF_HDR_MORE	0x2
#define PDF_HDR_LAST	0x3
#define PDF_PAY_MORE	0x4
#define PDF_PAY_LAST	0x5
#define PDF_DROP	0x6

/* tb5's wire format, version 1 (dkms/core/tb5_wire.h). */
#define W_MAGIC		0x35b5
#define W_HELLO		1
#define W_CONNECT	2
#define W_ACCEPT	3
#define W_REJECT	4
#define W_CLOSE		5
#define W_CTS		6
#define W_DATA		7
#define W_ABORT		8
#define W_DATA_LAST	0x1

static const u8 wire_len[] = { 0, 40, 40, 24, 32, 24, 32, 48, 24 };
static const u8 bad_pdfs[] = { 0, PDF_SOF, PDF_DROP, 15 };
static const char *const pdf_names[] = {
	"eof-pdf-0", "eof-pdf-1", "eof-pdf-6", "eof-pdf-15",
};
static const char *const swap_names[] = {
	"payload-frames-1-and-2-swapped", "payload-frames-2-and-3-swapped",
	"header-and-first-payload-swapped",
};

enum { ATK_OFF, ATK_CASE, ATK_MUTATE, ATK_FLOOD, ATK_LEARN };

static u32 atk_rand(struct tbemu_attack *a)
{
	u32 x = a->rng;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	a->rng = x ?: 0x2545f491;
	return a->rng;
}

static bool is_header(u8 pdf)
{
	return pdf == PDF_HDR_MORE || pdf == PDF_HDR_LAST;
}

static bool ends_burst(u8 pdf)
{
	return pdf == PDF_HDR_LAST || pdf == PDF_PAY_LAST || pdf == PDF_DROP;
}

/* A header of @type from @src to @dst; the body is the caller's. */
static u32 hdr(u8 *p, u8 type, u32 dst, u32 src)
{
	u32 len = type < ARRAY_SIZE(wire_len) ? wire_len[type] : 16;

	memset(p, 0, len);
	put_unaligned_le16(W_MAGIC, p);
	p[2] = 1;
	p[3] = type;
	put_unaligned_le16(len, p + 4);
	put_unaligned_le32(dst, p + 8);
	put_unaligned_le32(src, p + 12);
	return len;
}

static u32 data_hdr(u8 *p, u32 dst, u32 src, u32 seq, u32 flags, u64 offset,
		    u64 msg_len, u32 burst)
{
	u32 len = hdr(p, W_DATA, dst, src);

	put_unaligned_le32(seq, p + 16);
	put_unaligned_le32(flags, p + 20);
	put_unaligned_le64(offset, p + 24);
	put_unaligned_le64(msg_len, p + 32);
	put_unaligned_le32(burst, p + 40);
	return len;
}

static void frame(struct tbemu_slot *s, u32 len, u8 pdf)
{
	s->len = len;
	s->sof = PDF_SOF;
	s->eof = pdf;
}

/* An endpoint id no endpoint of the attacker's tb5 has (index 0x7fff). */
#define BOGUS_EP	0x00017fffu
#define BAD_STATUS	((u32)-5)	/* a status no frame type carries */
#define ST_MSGSIZE	((u32)-90)	/* ABORT's wire code for -EMSGSIZE */
#define SWAP_MSG	12000u		/* a message of a header and 3 frames */

/* A payload frame of @len bytes of @fill, marked @pdf. */
static void payload(struct tbemu_slot *g, u32 len, u8 fill, u8 pdf)
{
	memset(g->data, fill, len);
	frame(g, len, pdf);
}

/*
 * A DATA burst of SWAP_MSG bytes for the granted receive in @g: the header,
 * then 4096 bytes of 0xa1, 4096 of 0xb2, 3808 of 0xc3 (the last frame).
 */
static void swap_msg(struct tbemu_attack *a, struct tbemu_slot *g)
{
	frame(&g[0], data_hdr(g[0].data, a->t_dst, a->t_src, a->t_seq,
			      W_DATA_LAST, 0, SWAP_MSG, SWAP_MSG), PDF_HDR_MORE);
	payload(&g[1], TBEMU_FRAME_MAX, 0xa1, PDF_PAY_MORE);
	payload(&g[2], TBEMU_FRAME_MAX, 0xb2, PDF_PAY_MORE);
	payload(&g[3], SWAP_MSG - 2 * TBEMU_FRAME_MAX, 0xc3, PDF_PAY_LAST);
}

/*
 * A 3-frame DATA burst of 4196 bytes for the granted receive: header,
 * 4096 bytes, 100 bytes; its frames' PDFs @p0, @p1, @p2.
 */
static int pdf_burst(struct tbemu_attack *a, struct tbemu_slot *g, u8 p0,
		     u8 p1, u8 p2)
{
	frame(&g[0], data_hdr(g[0].data, a->t_dst, a->t_src, a->t_seq,
			      W_DATA_LAST, 0, 4196, 4196), p0);
	payload(&g[1], TBEMU_FRAME_MAX, 0x55, p1);
	payload(&g[2], 100, 0x55, p2);
	return 3;
}

static void swap_slots(struct tbemu_slot *g, int i, int j)
{
	struct tbemu_slot *t = &g[TBEMU_ATK_GROUP - 1];

	memcpy(t, &g[i], sizeof(*t));
	memcpy(&g[i], &g[j], sizeof(*t));
	memcpy(&g[j], t, sizeof(*t));
}

/* A control frame of @type, marked last. */
static int ctl(struct tbemu_slot *g, u8 type, u32 dst, u32 src)
{
	frame(g, hdr(g->data, type, dst, src), PDF_HDR_LAST);
	return 1;
}

/*
 * The crafted set: case @i into @g (up to TBEMU_ATK_GROUP frames, sent
 * back to back; a swap uses the last one as scratch). Returns the frames, 0 past the last case, -1 when the
 * case cannot be made (what it aims at was not learned); *name says what
 * it is. tests/kernel/tb5k-hostile.c holds what each must do to the
 * victim, by the same number and name.
 */
static int craft(struct tbemu_attack *a, u32 i, struct tbemu_slot *g,
		 const char **name)
{
	u32 dst = a->t_dst, src = a->t_src, seq = a->t_seq;
	u8 *p = g[0].data;
	u32 len, k, n;

	memset(p, 0, 64);
	switch (i) {
	case 0:
		*name = "one-byte-frame";
		p[0] = 0xb5;
		frame(&g[0], 1, PDF_HDR_LAST);
		return 1;
	case 1:
		*name = "header-of-15-bytes";
		hdr(p, W_CTS, dst, src);
		frame(&g[0], 15, PDF_HDR_LAST);
		return 1;
	case 2:
		*name = "bad-magic";
		ctl(&g[0], W_CTS, dst, src);
		p[0] ^= 0xff;
		return 1;
	case 3:
		*name = "bad-version";
		ctl(&g[0], W_CTS, dst, src);
		p[2] = 2;
		return 1;
	case 4:
		*name = "type-0";
		hdr(p, 0, dst, src);
		frame(&g[0], 32, PDF_HDR_LAST);
		return 1;
	case 5:
	case 6:
		*name = i == 5 ? "type-9" : "type-255";
		hdr(p, 9, dst, src);
		p[3] = i == 5 ? 9 : 255;
		frame(&g[0], 48, PDF_HDR_LAST);
		return 1;
	case 7:
		*name = "len-field-below-its-type";
		len = data_hdr(p, dst, src, seq, 0, 0, 100, 0);
		put_unaligned_le16(20, p + 4);
		frame(&g[0], len, PDF_HDR_LAST);
		return 1;
	case 8:
		*name = "header-claims-more-than-arrived";
		ctl(&g[0], W_CTS, dst, src);
		put_unaligned_le16(4000, p + 4);
		return 1;
	case 9:
		*name = "header-of-4096-bytes-to-a-gone-endpoint";
		memset(p, 0xee, TBEMU_FRAME_MAX);
		hdr(p, W_CTS, dst ^ 0x10000, src);
		put_unaligned_le16(4096 - 1, p + 4);
		frame(&g[0], TBEMU_FRAME_MAX, PDF_HDR_LAST);
		return 1;
	case 10:
		*name = "frame-longer-than-the-buffer";
		memset(p, 0xee, TBEMU_FRAME_MAX);
		frame(&g[0], 2 * TBEMU_FRAME_MAX, PDF_HDR_LAST);
		return 1;
	case 11:
	case 12:
	case 13:
	case 14:
		*name = pdf_names[i - 11];
		len = hdr(p, W_CTS, dst ^ 0x10000, src);
		frame(&g[0], len, bad_pdfs[i - 11]);
		return 1;
	case 15:
		*name = "zero-length-frame";
		frame(&g[0], 0, PDF_HDR_LAST);
		return 1;
	case 16:
		*name = "control-frame-marked-more";
		len = hdr(p, W_CTS, dst, src);
		frame(&g[0], len, PDF_HDR_MORE);
		return 1;
	case 17:
		*name = "payload-outside-a-burst";
		frame(&g[0], 100, PDF_PAY_LAST);
		return 1;
	case 18:
		*name = "payload-4096-outside-a-burst";
		payload(&g[0], TBEMU_FRAME_MAX, 0x77, PDF_PAY_MORE);
		return 1;
	case 19:
		*name = "data-end-marker-disagrees";
		len = data_hdr(p, dst, src, seq, W_DATA_LAST, 0, 8, 8);
		frame(&g[0], len, PDF_HDR_LAST);
		return 1;
	case 20:
		*name = "data-to-a-gone-endpoint";
		len = data_hdr(p, dst ^ 0x10000, src, seq, W_DATA_LAST, 0, 0, 0);
		frame(&g[0], len, PDF_HDR_LAST);
		return 1;
	case 21:
		*name = "data-from-the-wrong-peer-endpoint";
		len = data_hdr(p, dst, src ^ 1, seq, W_DATA_LAST, 0, 0, 0);
		frame(&g[0], len, PDF_HDR_LAST);
		return 1;
	case 22:
		*name = "data-to-another-process-connection";
		if (!a->have_other)
			return -1;
		len = data_hdr(p, a->o_dst, src, a->o_seq, W_DATA_LAST, 0, 0, 0);
		frame(&g[0], len, PDF_HDR_LAST);
		return 1;
	case 23:
		*name = "cts-for-a-buffer-never-offered";
		ctl(&g[0], W_CTS, dst, src);
		put_unaligned_le32(0xdead0000, p + 16);
		put_unaligned_le64(1ull << 40, p + 24);
		return 1;
	case 24:
		*name = "abort-for-no-receive";
		ctl(&g[0], W_ABORT, dst, src);
		put_unaligned_le32(seq ^ 0x40000, p + 16);
		put_unaligned_le32(BAD_STATUS, p + 20);
		return 1;
	case 25:
		*name = "data-for-a-receive-never-granted";
		len = data_hdr(p, dst, src, seq + (1u << 6) * 1000, W_DATA_LAST, 0,
			       0, 0);
		frame(&g[0], len, PDF_HDR_LAST);
		return 1;
	case 26:
		*name = "close-to-a-gone-endpoint";
		return ctl(&g[0], W_CLOSE, dst ^ 0x20000, src);
	case 27:
		*name = "burst-claims-more-frames-than-follow";
		len = data_hdr(p, dst, src, seq + (1u << 6) * 2000, 0, 0,
			       1 << 20, 3 * TBEMU_FRAME_MAX);
		frame(&g[0], len, PDF_HDR_MORE);
		payload(&g[1], TBEMU_FRAME_MAX, 0x55, PDF_PAY_MORE);
		return 2;
	case 28:
		*name = "short-payload-inside-a-burst";
		len = data_hdr(p, dst ^ 0x10000, src, seq, 0, 0, 1 << 20,
			       2 * TBEMU_FRAME_MAX);
		frame(&g[0], len, PDF_HDR_MORE);
		frame(&g[1], 100, PDF_PAY_LAST);
		return 2;
	/* The link's and the handshake's frames, while connected. */
	case 29:
		*name = "hello-marked-more";
		len = hdr(p, W_HELLO, 0, 0);
		frame(&g[0], len, PDF_HDR_MORE);
		return 1;
	case 30:
		*name = "hello-shorter-than-its-type";
		ctl(&g[0], W_HELLO, 0, 0);
		put_unaligned_le16(24, p + 4);
		return 1;
	case 31:
		*name = "connect-without-a-source";
		ctl(&g[0], W_CONNECT, 0, 0);
		put_unaligned_le64(a->p_svc, p + 16);
		return 1;
	case 32:
		*name = "connect-to-no-listener";
		ctl(&g[0], W_CONNECT, 0, BOGUS_EP);
		put_unaligned_le64(~0ull, p + 16);
		return 1;
	case 33:
		*name = "connect-with-a-wrong-cookie";
		ctl(&g[0], W_CONNECT, 0, BOGUS_EP);
		put_unaligned_le64(a->l_svc, p + 16);
		put_unaligned_le64(1, p + 24);
		return 1;
	case 34:
		*name = "accept-without-a-source";
		return ctl(&g[0], W_ACCEPT, dst, 0);
	case 35:
		*name = "accept-to-a-connected-endpoint";
		return ctl(&g[0], W_ACCEPT, dst, BOGUS_EP);
	case 36:
		*name = "reject-to-a-connected-endpoint";
		return ctl(&g[0], W_REJECT, dst, BOGUS_EP);
	case 37:
		*name = "accept-to-a-gone-endpoint";
		return ctl(&g[0], W_ACCEPT, dst ^ 0x10000, BOGUS_EP);
	case 38:
		*name = "reject-to-a-gone-endpoint";
		return ctl(&g[0], W_REJECT, dst ^ 0x10000, BOGUS_EP);
	/* Against the victim's connect that our tb5 leaves pending. */
	case 39:
	case 40:
		*name = i == 39 ? "accept-with-a-wrong-cookie" :
				  "reject-with-a-wrong-cookie";
		if (!a->have_pend)
			return -1;
		ctl(&g[0], i == 39 ? W_ACCEPT : W_REJECT, a->p_src, BOGUS_EP);
		put_unaligned_le64(a->p_cookie ^ 1, p + 16);
		return 1;
	case 41:
		*name = "accept-without-a-source-while-connecting";
		if (!a->have_pend)
			return -1;
		ctl(&g[0], W_ACCEPT, a->p_src, 0);
		put_unaligned_le64(a->p_cookie, p + 16);
		return 1;
	case 42:
	case 43:
		*name = i == 42 ? "reject-with-an-unknown-status" :
				  "reject-after-the-connect-failed";
		if (!a->have_pend)
			return -1;
		ctl(&g[0], W_REJECT, a->p_src, BOGUS_EP);
		put_unaligned_le64(a->p_cookie, p + 16);
		put_unaligned_le32(BAD_STATUS, p + 24);
		return 1;
	/* Against the receive granted last, one case per grant. */
	case 44:
		*name = "payload-frame-longer-than-the-rest-of-its-burst";
		n = DIV_ROUND_UP((u32)a->t_len, TBEMU_FRAME_MAX);
		if (n + 1 > TBEMU_ATK_GROUP)
			return -1;
		len = data_hdr(p, dst, src, seq, W_DATA_LAST, 0, a->t_len,
			       (u32)a->t_len);
		frame(&g[0], len, PDF_HDR_MORE);
		/* Every frame full, the last one too: past the buffer's end. */
		for (k = 1; k <= n; k++)
			payload(&g[k], TBEMU_FRAME_MAX, 0xd0,
				k == n ? PDF_PAY_LAST : PDF_PAY_MORE);
		return n + 1;
	case 45:
		*name = "data-past-the-end-of-the-posted-buffer";
		len = data_hdr(p, dst, src, seq, W_DATA_LAST, 0, a->t_len + 1,
			       TBEMU_FRAME_MAX);
		frame(&g[0], len, PDF_HDR_MORE);
		payload(&g[1], TBEMU_FRAME_MAX, 0xd1, PDF_PAY_LAST);
		return 2;
	case 46:
		*name = "data-burst-past-the-message";
		len = data_hdr(p, dst, src, seq, W_DATA_LAST, 0, a->t_len,
			       (u32)a->t_len + TBEMU_FRAME_MAX);
		frame(&g[0], len, PDF_HDR_MORE);
		payload(&g[1], TBEMU_FRAME_MAX, 0xd2, PDF_PAY_MORE);
		return 2;
	case 47:
		*name = "data-offset-skips-ahead";
		len = data_hdr(p, dst, src, seq, W_DATA_LAST, 4096, a->t_len,
			       (u32)a->t_len - 4096);
		frame(&g[0], len, PDF_HDR_MORE);
		payload(&g[1], TBEMU_FRAME_MAX, 0xd3, PDF_PAY_MORE);
		return 2;
	case 48:
		*name = "data-offset-at-2^64-minus-one";
		len = data_hdr(p, dst, src, seq, W_DATA_LAST, ~0ull, ~0ull, 1);
		frame(&g[0], len, PDF_HDR_MORE);
		frame(&g[1], 1, PDF_PAY_LAST);
		return 2;
	case 49:
	case 66:	/* the same frame, after the connection closed */
		*name = i == 49 ? "empty-message" : "data-after-close";
		len = data_hdr(p, dst, src, seq, W_DATA_LAST, 0, 0, 0);
		frame(&g[0], len, PDF_HDR_LAST);
		return 1;
	/* Wrong PDFs on the start, a middle and the end frame of a burst. */
	case 50:
		*name = "start-frame-marked-payload";
		return pdf_burst(a, g, PDF_PAY_MORE, PDF_PAY_MORE, PDF_PAY_LAST);
	case 51:
		*name = "start-frame-pdf-15";
		return pdf_burst(a, g, 15, PDF_PAY_MORE, PDF_PAY_LAST);
	case 52:
		*name = "middle-frame-marked-header";
		return pdf_burst(a, g, PDF_HDR_MORE, PDF_HDR_MORE, PDF_PAY_LAST);
	case 53:
		*name = "middle-frame-pdf-0";
		return pdf_burst(a, g, PDF_HDR_MORE, 0, PDF_PAY_LAST);
	case 54:
		*name = "middle-frame-marked-dropped";
		return pdf_burst(a, g, PDF_HDR_MORE, PDF_DROP, PDF_PAY_LAST);
	case 55:
		*name = "end-frame-marked-more";
		return pdf_burst(a, g, PDF_HDR_MORE, PDF_PAY_MORE, PDF_PAY_MORE);
	case 56:
		*name = "end-frame-marked-header";
		return pdf_burst(a, g, PDF_HDR_MORE, PDF_PAY_MORE, PDF_HDR_LAST);
	case 57:
		*name = "end-frame-pdf-0";
		return pdf_burst(a, g, PDF_HDR_MORE, PDF_PAY_MORE, 0);
	/* One message's frames out of order. */
	case 58:
	case 59:
	case 60:
		*name = swap_names[i - 58];
		swap_msg(a, g);
		swap_slots(g, i == 60 ? 0 : i - 57, i == 60 ? 1 : i - 56);
		return 4;
	case 61:
	case 62:
		*name = i == 61 ? "abort-with-an-unknown-status" :
				  "abort-message-too-long";
		ctl(&g[0], W_ABORT, dst, src);
		put_unaligned_le32(seq, p + 16);
		put_unaligned_le32(i == 61 ? BAD_STATUS : ST_MSGSIZE, p + 20);
		return 1;
	/* Replays of our own tb5's frames on the connection. */
	case 63:
		*name = "old-data-replayed";
		if (!a->rec_valid)
			return -1;
		for (k = 0; k < a->rec_n; k++)
			memcpy(&g[k], &a->rec[k], offsetof(struct tbemu_slot, data) +
			       min_t(u32, a->rec[k].len, TBEMU_FRAME_MAX));
		return a->rec_n;
	case 64:
		*name = "cts-replayed";
		if (!a->have_cts)
			return -1;
		memcpy(p, a->cts, a->cts_len);
		frame(&g[0], a->cts_len, PDF_HDR_LAST);
		return 1;
	/* The connection closed by a CLOSE whose status means nothing. */
	case 65:
		*name = "close-with-an-unknown-status";
		ctl(&g[0], W_CLOSE, dst, src);
		put_unaligned_le32(BAD_STATUS, p + 16);
		return 1;
	case 67:
		*name = "cts-after-close";
		return ctl(&g[0], W_CTS, dst, src);
	case 68:
		*name = "accept-after-close";
		return ctl(&g[0], W_ACCEPT, dst, BOGUS_EP);
	case 69:
		*name = "reject-after-close";
		return ctl(&g[0], W_REJECT, dst, BOGUS_EP);
	default:
		return 0;
	}
}

/* How many frames may go on @hop now: E2E credits and wire slots. */
static u32 path_room(struct tbemu_cable *c, struct tbemu_ring *r, int hop)
{
	struct tbemu_side *peer = tbemu_peer(c);
	u32 wire, credits, tail;

	/* Pairs with the peer's release of rx_tail, as tbemu_wire_slot(). */
	tail = smp_load_acquire(&peer->rx_tail);
	wire = TBEMU_SLOTS - (tbemu_me(c)->tx_head - tail);
	if (wire > TBEMU_SLOTS)
		wire = 0;
	if (!(r->ring.flags & RING_FLAG_E2E))
		return wire;
	if (!READ_ONCE(peer->rx_e2e[hop]))
		return 0;
	credits = READ_ONCE(peer->rx_posted[hop]) - c->tx_sent[hop];
	if ((s32)credits < 0)	/* a new epoch's count, not read yet */
		credits = 0;
	return min(wire, credits);
}

/* Free slots on our end of the wire (whatever the E2E credits say). */
static u32 wire_room(struct tbemu_cable *c)
{
	/* Pairs with the peer's release of rx_tail, as tbemu_wire_slot(). */
	u32 used = tbemu_me(c)->tx_head - smp_load_acquire(&tbemu_peer(c)->rx_tail);

	return used < TBEMU_SLOTS ? TBEMU_SLOTS - used : 0;
}

static void push_copy(struct tbemu_cable *c, int hop, u32 epoch,
		      const struct tbemu_slot *f)
{
	struct tbemu_slot *s = tbemu_wire_slot(c);

	if (!s)
		return;
	memcpy(s->data, f->data, min_t(u32, f->len, TBEMU_FRAME_MAX));
	s->kind = TBEMU_SLOT_DATA;
	s->hop = hop;
	s->len = f->len;
	s->gen = READ_ONCE(c->shm->plug_gen);
	s->epoch = epoch;
	s->sof = f->sof;
	s->eof = f->eof;
	tbemu_wire_push(c);
	/* A frame of no bytes takes no descriptor (the peer's NHI drops it). */
	if (f->len)
		c->tx_sent[hop]++;
	atomic64_inc(&c->tx_frames);
	atomic64_inc(&c->atk->injected);
}

/*
 * The victim's frames: its CTS frames tell us its endpoints and the grants
 * it made, its CONNECT to the pending service the connect to answer.
 */
void tbemu_attack_rx(struct tbemu_cable *c, const struct tbemu_slot *s)
{
	struct tbemu_attack *a = c->atk;
	const u8 *p = s->data;
	u64 len;

	if (!is_header(s->eof) || s->len < 32 || get_unaligned_le16(p) != W_MAGIC)
		return;
	if (p[3] == W_CONNECT && s->len >= 40 && a->p_svc &&
	    get_unaligned_le64(p + 16) == a->p_svc) {
		a->p_src = get_unaligned_le32(p + 12);
		a->p_cookie = get_unaligned_le64(p + 32);
		a->have_pend = true;
		return;
	}
	if (p[3] != W_CTS)
		return;
	len = get_unaligned_le64(p + 24);
	if (len == a->t_len) {
		a->t_dst = get_unaligned_le32(p + 12);
		a->t_src = get_unaligned_le32(p + 8);
		a->t_seq = get_unaligned_le32(p + 16);
		a->have_target = true;
	} else if (len == a->o_len) {
		a->o_dst = get_unaligned_le32(p + 12);
		a->o_seq = get_unaligned_le32(p + 16);
		a->have_other = true;
	}
}

/* Keep our tb5's last DATA burst and CTS on the attacked connection. */
static void record(struct tbemu_attack *a, bool hdr_frame,
		   const struct tbemu_slot *s)
{
	if (hdr_frame && a->in_target && s->len >= 16 && s->len <= 64 &&
	    s->data[3] == W_CTS) {
		memcpy(a->cts, s->data, s->len);
		a->cts_len = s->len;
		a->have_cts = true;
		return;
	}
	if (hdr_frame) {
		a->recording = a->in_target && s->len >= 16 &&
			       s->data[3] == W_DATA;
		if (!a->recording)
			return;
		a->rec_n = 0;
		a->rec_valid = false;
	}
	if (!a->recording || !a->in_target)
		return;
	if (a->rec_n == TBEMU_ATK_REC) {
		a->recording = false;
		return;
	}
	memcpy(&a->rec[a->rec_n++], s, offsetof(struct tbemu_slot, data) +
	       min_t(u32, s->len, TBEMU_FRAME_MAX));
	if (ends_burst(s->eof)) {
		a->recording = false;
		a->rec_valid = true;
	}
}

/*
 * Our tb5's frame @s is about to go on @hop. Returns false to drop it
 * (mutated away, or held back to be sent later).
 */
bool tbemu_attack_tx(struct tbemu_cable *c, int hop, u32 epoch,
		     struct tbemu_slot *s)
{
	struct tbemu_attack *a = c->atk;
	bool hdr_frame = is_header(s->eof);
	const u8 *p = s->data;
	u32 r;

	a->mid_burst = !ends_burst(s->eof);
	a->dup = false;
	if (!s->len)
		return true;
	if (hdr_frame)
		a->in_target = a->have_target && s->len >= 16 &&
			       get_unaligned_le32(p + 8) == a->t_dst &&
			       get_unaligned_le32(p + 12) == a->t_src;
	record(a, hdr_frame, s);
	if (a->held_valid && !(a->in_target && !hdr_frame)) {
		/* The held frame's burst ended: it is lost, as a frame can be. */
		a->held_valid = false;
	}
	if (a->mode != ATK_MUTATE || !a->in_target || !a->remaining)
		return true;
	if (atk_rand(a) & 3)	/* one frame in four */
		return true;
	a->remaining--;
	atomic64_inc(&a->mutated);
	r = atk_rand(a) % 5;
	switch (r) {
	case 0: {	/* flip 1 to 3 bits, or the end-of-frame PDF */
		int n = 1 + atk_rand(a) % 3;
		u8 type = s->data[3];

		if (!(atk_rand(a) % 8)) {
			s->eof ^= 1u << (atk_rand(a) % 4);
			break;
		}
		while (n--) {
			u32 bit = atk_rand(a) % (s->len * 8);

			s->data[bit / 8] ^= 1u << (bit % 8);
		}
		/*
		 * Never a HELLO: a peer announcing a restart resets every
		 * connection on the cable, which it may do, but then the
		 * others could not be checked.
		 */
		if (hdr_frame && s->data[3] == W_HELLO)
			s->data[3] = type;
		break;
	}
	case 1:		/* truncated */
		if (s->len > 1)
			s->len = 1 + atk_rand(a) % (s->len - 1);
		break;
	case 2:		/* lost */
		return false;
	case 3:		/* duplicated */
		a->dup = true;
		break;
	default:	/* held back, sent after the next frame of its burst */
		if (a->held_valid || ends_burst(s->eof))
			return false;
		memcpy(&a->held, s, offsetof(struct tbemu_slot, data) +
		       min_t(u32, s->len, TBEMU_FRAME_MAX));
		a->held_valid = true;
		return false;
	}
	return true;
}

/* After tbemu_attack_tx() let @s go: what follows it. */
void tbemu_attack_sent(struct tbemu_cable *c, struct tbemu_ring *r, int hop,
		       u32 epoch, const struct tbemu_slot *s)
{
	struct tbemu_attack *a = c->atk;

	if (a->dup && path_room(c, r, hop))
		push_copy(c, hop, epoch, s);
	a->dup = false;
	if (a->held_valid && !is_header(s->eof) && a->in_target) {
		if (path_room(c, r, hop))
			push_copy(c, hop, epoch, &a->held);
		a->held_valid = false;
	}
}

/*
 * Between our own bursts: the case asked for, against E2E credits; or the
 * flood, as fast as the wire takes it, E2E or not.
 */
int tbemu_attack_step(struct tbemu_cable *c, struct tbemu_ring *r)
{
	struct tbemu_attack *a = c->atk;
	struct tbemu_side *peer = tbemu_peer(c);
	int hop, k, frames, n = 0;
	const char *name = "?";
	u32 epoch;

	if ((a->mode != ATK_CASE && a->mode != ATK_FLOOD) ||
	    !a->have_target || a->mid_burst || !r->ring.running)
		return 0;
	hop = tbemu_tx_hop(c, r->ring.hop);
	if (hop < 0 || !tbemu_connected_now(c))
		return 0;
	/* Pairs with hop_publish(): credits of this epoch, as ring_tx_step(). */
	epoch = smp_load_acquire(&peer->rx_epoch[hop]);
	if (epoch != c->tx_epoch[hop]) {
		c->tx_epoch[hop] = epoch;
		c->tx_sent[hop] = 0;
	}
	if (a->mode == ATK_FLOOD) {
		/* No waiting for credits (a broken controller does not): a wire full at once. */
		while (a->remaining && n < TBEMU_SLOTS && wire_room(c)) {
			frame(&a->grp[0], data_hdr(a->grp[0].data,
						   a->t_dst ^ 0x10000, a->t_src,
						   a->remaining, W_DATA_LAST,
						   0, 0, 0), PDF_HDR_LAST);
			push_copy(c, hop, epoch, &a->grp[0]);
			a->remaining--;
			n++;
		}
		if (!a->remaining)
			a->mode = ATK_LEARN;
		return n;
	}
	frames = craft(a, a->next_case, a->grp, &name);
	a->case_name = name;
	if (frames <= 0) {
		pr_info("attack: case %u %s cannot be made\n", a->next_case, name);
		a->case_state = 2;
		a->mode = ATK_LEARN;
		return 0;
	}
	if (path_room(c, r, hop) < (u32)frames || wire_room(c) < (u32)frames)
		return 0;
	for (k = 0; k < frames; k++)
		push_copy(c, hop, epoch, &a->grp[k]);
	pr_info("attack: case %u %s: %d frame(s)\n", a->next_case, name, frames);
	a->case_state = 1;
	a->mode = ATK_LEARN;
	return frames;
}

/*
 * The `attack` attribute: learn T O P L | case N | mutate T N SEED |
 * flood N | off.
 */
int tbemu_attack_cmd(struct tbemu_cable *c, const char *buf)
{
	struct tbemu_attack *a = c->atk;
	unsigned long long t = 0, o = 0, ps = 0, ls = 0;
	unsigned int n = 0, seed = 0;
	unsigned long flags;
	int mode;

	if (sscanf(buf, "learn %llu %llu %llu %llu", &t, &o, &ps, &ls) == 4)
		mode = ATK_LEARN;
	else if (sscanf(buf, "case %u", &n) == 1)
		mode = ATK_CASE;
	else if (sscanf(buf, "mutate %llu %u %u", &t, &n, &seed) == 3)
		mode = ATK_MUTATE;
	else if (sscanf(buf, "flood %u", &n) == 1)
		mode = ATK_FLOOD;
	else if (sysfs_streq(buf, "off"))
		mode = ATK_OFF;
	else
		return -EINVAL;
	if (mode == ATK_OFF) {
		WRITE_ONCE(a->mode, ATK_OFF);
		pr_info("attack: off\n");
		return 0;
	}
	if ((mode == ATK_LEARN || mode == ATK_MUTATE) &&
	    (!t || t > (1u << 20) || o > (1u << 20)))
		return -EINVAL;
	spin_lock_irqsave(&c->nhi->lock, flags);
	if (mode == ATK_LEARN || mode == ATK_MUTATE) {
		if (a->t_len != t) {
			a->have_target = false;
			a->in_target = false;
		}
		a->t_len = t;
	}
	if (mode == ATK_LEARN) {
		if (a->o_len != o)
			a->have_other = false;
		a->o_len = o;
		a->p_svc = ps;
		a->l_svc = ls;
		a->have_pend = false;
	}
	if (mode == ATK_CASE) {
		a->next_case = n;
		a->case_state = 0;
		a->case_name = "?";
	} else {
		a->remaining = n;
	}
	a->rng = seed ?: 0x7b5f;
	a->held_valid = false;
	a->mode = mode;
	spin_unlock_irqrestore(&c->nhi->lock, flags);
	pr_info("attack: mode %d (%s)\n", mode, buf);
	return 0;
}

/* The `attack` attribute read back: what is left and what was done. */
ssize_t tbemu_attack_show(struct tbemu_cable *c, char *buf)
{
	struct tbemu_attack *a = c->atk;

	return sysfs_emit(buf, "mode %d target %d remaining %u case %u state %d name %s injected %lld mutated %lld learned %d%d%d%d\n",
			  READ_ONCE(a->mode), READ_ONCE(a->have_target),
			  READ_ONCE(a->remaining), READ_ONCE(a->next_case),
			  READ_ONCE(a->case_state), READ_ONCE(a->case_name) ?: "-",
			  atomic64_read(&a->injected),
			  atomic64_read(&a->mutated), READ_ONCE(a->have_other),
			  READ_ONCE(a->have_pend), READ_ONCE(a->rec_valid),
			  READ_ONCE(a->have_cts));
}
