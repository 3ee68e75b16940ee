// SPDX-License-Identifier: GPL-2.0-only
/*
 * tbemu_attack.c - a hostile peer on the emulated cable.
 *
 * The host whose tbemu is told to attack (its `attack` attribute) is a
 * logged-in tb5 peer like any other: its tb5.ko made the login, the paths
 * and the connections. Its emulated NHI then sends, on the DMA path of
 * that login, frames tb5 never would, to the other host's tb5.ko:
 *
 *   crafted T O    a named set of frames, every frame type and field at its
 *                  edges (see craft()), aimed at the connection whose
 *                  receives of T bytes the victim granted (learned from the
 *                  CTS frames it sends us) and at another connection of
 *                  the victim's (receives of O bytes);
 *   mutate T N S   N frames of our own tb5's traffic on that connection
 *                  mutated (bit flips, truncation, loss, duplication,
 *                  reordering), with seed S;
 *   flood T N      N frames to endpoints that are gone, as fast as the
 *                  victim's receive ring takes them;
 *   learn T O      nothing yet: learn the two connections as they start;
 *   off
 *
 * Frames go out only between two bursts of our own tb5 (a burst is never
 * split), and against the victim's E2E credits like any frame, so that the
 * victim's other connections with us keep their frames: what the attack
 * may break is the attacked connection, and nothing outside it. Frames
 * longer than a descriptor's buffer reach the victim's NHI, which reports
 * them with RING_DESC_BUFFER_OVERRUN as the real one does.
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

enum { ATK_OFF, ATK_CRAFTED, ATK_MUTATE, ATK_FLOOD, ATK_LEARN };

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

/*
 * The crafted set: case @i into @g (up to TBEMU_ATK_GROUP frames, sent
 * back to back). Returns the frames, 0 past the last case; *name says
 * what the case is.
 */
static int craft(struct tbemu_attack *a, u32 i, struct tbemu_slot *g,
		 const char **name)
{
	u32 dst = a->t_dst, src = a->t_src, seq = a->t_seq;
	u8 *p = g[0].data;
	u32 len;

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
		len = hdr(p, W_CTS, dst, src);
		p[0] ^= 0xff;
		frame(&g[0], len, PDF_HDR_LAST);
		return 1;
	case 3:
		*name = "bad-version";
		len = hdr(p, W_CTS, dst, src);
		p[2] = 2;
		frame(&g[0], len, PDF_HDR_LAST);
		return 1;
	case 4:
		*name = "type-0";
		hdr(p, 0, dst, src);
		frame(&g[0], 32, PDF_HDR_LAST);
		return 1;
	case 5:
		*name = "type-9";
		hdr(p, 9, dst, src);
		p[3] = 9;
		frame(&g[0], 48, PDF_HDR_LAST);
		return 1;
	case 6:
		*name = "type-255";
		hdr(p, 255, dst, src);
		p[3] = 255;
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
		len = hdr(p, W_CTS, dst, src);
		put_unaligned_le16(4000, p + 4);
		frame(&g[0], len, PDF_HDR_LAST);
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
		*name = "eof-pdf-0-1-6-15";
		len = hdr(p, W_CTS, dst ^ 0x10000, src);
		frame(&g[0], len, bad_pdfs[i - 11]);
		return 1;
	case 15:
		*name = "control-frame-marked-more";
		len = hdr(p, W_CTS, dst, src);
		frame(&g[0], len, PDF_HDR_MORE);
		return 1;
	case 16:
		*name = "payload-outside-a-burst";
		frame(&g[0], 100, PDF_PAY_LAST);
		return 1;
	case 17:
		*name = "payload-4096-outside-a-burst";
		memset(p, 0x77, TBEMU_FRAME_MAX);
		frame(&g[0], TBEMU_FRAME_MAX, PDF_PAY_MORE);
		return 1;
	case 18:
		*name = "data-end-marker-disagrees";
		len = data_hdr(p, dst, src, seq, W_DATA_LAST, 0, 8, 8);
		frame(&g[0], len, PDF_HDR_LAST);
		return 1;
	case 19:
		*name = "data-to-a-gone-endpoint";
		len = data_hdr(p, dst ^ 0x10000, src, seq, W_DATA_LAST, 0, 0, 0);
		frame(&g[0], len, PDF_HDR_LAST);
		return 1;
	case 20:
		*name = "data-from-the-wrong-peer-endpoint";
		len = data_hdr(p, dst, src ^ 1, seq, W_DATA_LAST, 0, 0, 0);
		frame(&g[0], len, PDF_HDR_LAST);
		return 1;
	case 21:
		*name = "data-to-another-process-connection";
		if (!a->have_other)
			return -1;
		len = data_hdr(p, a->o_dst, src, a->o_seq, W_DATA_LAST, 0, 0, 0);
		frame(&g[0], len, PDF_HDR_LAST);
		return 1;
	case 22:
		*name = "cts-for-a-buffer-never-offered";
		len = hdr(p, W_CTS, dst, src);
		put_unaligned_le32(0xdead0000, p + 16);
		put_unaligned_le64(1ull << 40, p + 24);
		frame(&g[0], len, PDF_HDR_LAST);
		return 1;
	case 23:
		*name = "abort-for-no-receive";
		len = hdr(p, W_ABORT, dst, src);
		put_unaligned_le32(seq ^ 0x40000, p + 16);
		put_unaligned_le32((u32)-5, p + 20);
		frame(&g[0], len, PDF_HDR_LAST);
		return 1;
	case 24:
		*name = "data-for-a-receive-never-granted";
		len = data_hdr(p, dst, src, seq + (1u << 6) * 1000, W_DATA_LAST, 0,
			       0, 0);
		frame(&g[0], len, PDF_HDR_LAST);
		return 1;
	case 25:
		*name = "close-to-a-gone-endpoint";
		len = hdr(p, W_CLOSE, dst ^ 0x20000, src);
		frame(&g[0], len, PDF_HDR_LAST);
		return 1;
	case 26:
		*name = "burst-claims-more-frames-than-follow";
		len = data_hdr(p, dst, src, seq + (1u << 6) * 2000, 0, 0,
			       1 << 20, 3 * TBEMU_FRAME_MAX);
		frame(&g[0], len, PDF_HDR_MORE);
		memset(g[1].data, 0x55, TBEMU_FRAME_MAX);
		frame(&g[1], TBEMU_FRAME_MAX, PDF_PAY_MORE);
		return 2;
	case 27:
		*name = "short-payload-inside-a-burst";
		len = data_hdr(p, dst ^ 0x10000, src, seq, 0, 0, 1 << 20,
			       2 * TBEMU_FRAME_MAX);
		frame(&g[0], len, PDF_HDR_MORE);
		frame(&g[1], 100, PDF_PAY_LAST);
		return 2;
	/*
	 * The granted receive last, each case at a grant of its own (see
	 * tbemu_attack_step()): these fail it (the attacked connection's
	 * clear error), with a payload frame longer than the rest of its
	 * burst, past its end, skipped ahead, and replayed.
	 */
	case 28: {
		u32 k, n = DIV_ROUND_UP((u32)a->t_len, TBEMU_FRAME_MAX);

		*name = "payload-frame-longer-than-the-rest-of-its-burst";
		if (n + 1 > TBEMU_ATK_GROUP)
			return -1;
		len = data_hdr(p, dst, src, seq, W_DATA_LAST, 0, a->t_len,
			       (u32)a->t_len);
		frame(&g[0], len, PDF_HDR_MORE);
		/* Every frame full, the last one too: past the buffer's end. */
		for (k = 1; k <= n; k++) {
			memset(g[k].data, 0xd0, TBEMU_FRAME_MAX);
			frame(&g[k], TBEMU_FRAME_MAX, k == n ? PDF_PAY_LAST :
							     PDF_PAY_MORE);
		}
		return n + 1;
	}
	case 29:
		*name = "data-past-the-end-of-the-posted-buffer";
		len = data_hdr(p, dst, src, seq, W_DATA_LAST, 0, a->t_len + 1,
			       TBEMU_FRAME_MAX);
		frame(&g[0], len, PDF_HDR_MORE);
		memset(g[1].data, 0xd1, TBEMU_FRAME_MAX);
		frame(&g[1], TBEMU_FRAME_MAX, PDF_PAY_LAST);
		return 2;
	case 30:
		*name = "data-burst-past-the-message";
		len = data_hdr(p, dst, src, seq, W_DATA_LAST, 0, a->t_len,
			       (u32)a->t_len + TBEMU_FRAME_MAX);
		frame(&g[0], len, PDF_HDR_MORE);
		memset(g[1].data, 0xd2, TBEMU_FRAME_MAX);
		frame(&g[1], TBEMU_FRAME_MAX, PDF_PAY_MORE);
		return 2;
	case 31:
		*name = "data-offset-skips-ahead";
		len = data_hdr(p, dst, src, seq, W_DATA_LAST, 4096, a->t_len,
			       (u32)a->t_len - 4096);
		frame(&g[0], len, PDF_HDR_MORE);
		memset(g[1].data, 0xd3, TBEMU_FRAME_MAX);
		frame(&g[1], TBEMU_FRAME_MAX, PDF_PAY_MORE);
		return 2;
	case 32:
		*name = "data-offset-at-2^64-minus-one";
		len = data_hdr(p, dst, src, seq, W_DATA_LAST, ~0ull, ~0ull, 1);
		frame(&g[0], len, PDF_HDR_MORE);
		frame(&g[1], 1, PDF_PAY_LAST);
		return 2;
	case 33:
		*name = "data-replayed";
		len = data_hdr(p, dst, src, seq, W_DATA_LAST, 0, 0, 0);
		frame(&g[0], len, PDF_HDR_LAST);
		return 1;
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
	c->tx_sent[hop]++;
	atomic64_inc(&c->tx_frames);
	atomic64_inc(&c->atk->injected);
}

/* The victim's CTS frames tell us its endpoints and the grants it made. */
void tbemu_attack_rx(struct tbemu_cable *c, const struct tbemu_slot *s)
{
	struct tbemu_attack *a = c->atk;
	const u8 *p = s->data;
	u64 len;

	if (!is_header(s->eof) || s->len < 32 ||
	    get_unaligned_le16(p) != W_MAGIC || p[3] != W_CTS)
		return;
	len = get_unaligned_le64(p + 24);
	if (len == a->t_len) {
		a->t_dst = get_unaligned_le32(p + 12);
		a->t_src = get_unaligned_le32(p + 8);
		a->t_seq = get_unaligned_le32(p + 16);
		a->t_fresh = true;
		a->have_target = true;
	} else if (len == a->o_len) {
		a->o_dst = get_unaligned_le32(p + 12);
		a->o_seq = get_unaligned_le32(p + 16);
		a->have_other = true;
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

/* Between our own bursts: the crafted set or the flood, as credits allow. */
int tbemu_attack_step(struct tbemu_cable *c, struct tbemu_ring *r)
{
	struct tbemu_attack *a = c->atk;
	struct tbemu_side *peer = tbemu_peer(c);
	int hop, n = 0;
	u32 epoch;

	if ((a->mode != ATK_CRAFTED && a->mode != ATK_FLOOD) ||
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
	while (n < 64) {
		const char *name = "flood";
		int k, frames;

		if (a->mode == ATK_FLOOD) {
			if (!a->remaining)
				break;
			frames = 1;
			frame(&a->grp[0], data_hdr(a->grp[0].data,
						   a->t_dst ^ 0x10000, a->t_src,
						   a->remaining, W_DATA_LAST,
						   0, 0, 0), PDF_HDR_LAST);
		} else {
			frames = craft(a, a->next_case, a->grp, &name);
			if (!frames) {
				pr_info("attack: crafted set sent, %u cases\n",
					a->next_case);
				a->mode = ATK_OFF;
				break;
			}
			/* One case per grant: wait for the next CTS. */
			if (frames > 0 && a->next_case >= 28 && !a->t_fresh)
				break;
			if (frames < 0) {	/* not learned: skip it */
				pr_info("attack: case %u %s skipped\n",
					a->next_case, name);
				a->next_case++;
				continue;
			}
		}
		if (path_room(c, r, hop) < (u32)frames)
			break;
		for (k = 0; k < frames; k++)
			push_copy(c, hop, epoch, &a->grp[k]);
		n += frames;
		if (a->mode == ATK_FLOOD) {
			a->remaining--;
		} else {
			pr_info("attack: case %u %s: %d frame(s)\n",
				a->next_case, name, frames);
			if (a->next_case >= 28)
				a->t_fresh = false;
			a->next_case++;
		}
	}
	return n;
}

/* The `attack` attribute: crafted T O | mutate T N SEED | flood T N | off. */
int tbemu_attack_cmd(struct tbemu_cable *c, const char *buf)
{
	struct tbemu_attack *a = c->atk;
	unsigned long long t = 0, o = 0;
	unsigned int n = 0, seed = 0;
	unsigned long flags;
	int mode;

	if (sscanf(buf, "crafted %llu %llu", &t, &o) == 2)
		mode = ATK_CRAFTED;
	else if (sscanf(buf, "mutate %llu %u %u", &t, &n, &seed) == 3)
		mode = ATK_MUTATE;
	else if (sscanf(buf, "flood %llu %u", &t, &n) == 2)
		mode = ATK_FLOOD;
	else if (sscanf(buf, "learn %llu %llu", &t, &o) == 2)
		mode = ATK_LEARN;
	else if (sysfs_streq(buf, "off"))
		mode = ATK_OFF;
	else
		return -EINVAL;
	if (mode == ATK_OFF) {
		WRITE_ONCE(a->mode, ATK_OFF);
		pr_info("attack: off\n");
		return 0;
	}
	if (!t || t > (1u << 20) || o > (1u << 20))
		return -EINVAL;
	spin_lock_irqsave(&c->nhi->lock, flags);
	if (a->t_len != t) {
		a->have_target = false;
		a->in_target = false;
	}
	a->t_len = t;
	if (mode == ATK_CRAFTED || mode == ATK_LEARN) {
		if (a->o_len != o)
			a->have_other = false;
		a->o_len = o;
	}
	if (mode == ATK_LEARN)
		mode = ATK_OFF;
	a->remaining = n;
	a->rng = seed ?: 0x7b5f;
	a->next_case = 0;
	a->held_valid = false;
	a->mode = mode;
	spin_unlock_irqrestore(&c->nhi->lock, flags);
	pr_info("attack: mode %d, connection of %llu-byte receives\n", mode, t);
	return 0;
}

/* The `attack` attribute read back: what is left and what was done. */
ssize_t tbemu_attack_show(struct tbemu_cable *c, char *buf)
{
	struct tbemu_attack *a = c->atk;

	return sysfs_emit(buf, "mode %d target %d remaining %u case %u injected %lld mutated %lld\n",
			  READ_ONCE(a->mode), READ_ONCE(a->have_target),
			  READ_ONCE(a->remaining), READ_ONCE(a->next_case),
			  atomic64_read(&a->injected),
			  atomic64_read(&a->mutated));
}
