// SPDX-License-Identifier: MIT
/*
 * tb5k-hostile - a hostile peer on the emulated fabric, and what its victim
 * must show.
 *
 *   tb5k-hostile --side a --dev /dev/tb5_N --cable DIR [--connect-s S]
 *   tb5k-hostile --side b --dev /dev/tb5_N --cable DIR [--mutate N]
 *                [--flood N] [--seed S] [--quiet-ack] [--connect-s S]
 *
 * Side a is the victim, side b the attacker; they meet over the link as
 * tb5k-kill's sides do (a control connection, well-known service). DIR is
 * the cable's tbemu directory on each host: b's `attack` attribute
 * (tests/tbemu/tbemu_attack.c) turns b's NHI hostile, a's `rx_dropped`
 * counts what a's NHI dropped.
 *
 *  1. Crafted cases, one at a time (cases[] below, in tbemu's order): b's
 *     tbemu learns a's connections from a's own frames (the CTS of its
 *     receives of ATK_POST bytes on "attacked", of GOOD_POST on "good";
 *     the CONNECT of a connect a leaves pending on b; b's own last
 *     message and CTS on "attacked") and sends the case; then a barrier,
 *     whose message from b follows the case's frames on the wire, so that
 *     a has taken them all when it reads: every drop kind must have grown
 *     by exactly what the case says (in the uAPI and in sysfs, which must
 *     agree), a's NHI must have dropped what it says, the attacked
 *     connection's receives, events and the pending connect's must be
 *     exactly those it says, errno for errno; a case tbemu cannot make
 *     fails. The last cases close the attacked connection with a CLOSE
 *     whose status means nothing, and send to it afterwards.
 *  2. b's own messages on a second attacked connection (in a child of a),
 *     up to N frames mutated: each receive either completes or fails with
 *     a clear error (-EPROTO, -EBADMSG, the peer's close).
 *  3. A flood of N frames to endpoints that are gone, past E2E flow
 *     control, with nothing else of b's on that link (b's tb5-perf loop
 *     skips the link while /tmp/tb5k-hostile.quiet exists, and with
 *     --quiet-ack b waits for it to say so): a's NHI must drop frames (its
 *     ring overran), and what it did not drop must be counted
 *     unknown_connection, frame for frame, nothing else.
 * Throughout, "good" (a child of a, another process) receives b's
 * GOOD_MSG-byte messages, every byte checked, all of them; each child's
 * region (every posted buffer between 4 KiB guards) shows no byte written
 * outside a posted buffer. After the attack a new connection carries
 * 1 MiB, verified. The control connection lives through it all. a prints
 * the attacked link's drops by kind before and after the attack, which
 * vm-tests-fabric.sh holds tb5-exporter's drop metric to.
 */
#include "tb5k.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define SVC_CTL		0x7b5b4c00ull
#define SVC_ATK		0x7b5b4c01ull
#define SVC_GOOD	0x7b5b4c02ull
#define SVC_NEW		0x7b5b4c03ull
#define SVC_PEND	0x7b5b4c04ull	/* b listens, never accepts */
#define SVC_MUT		0x7b5b4c05ull
#define ATK_POST	20000u	/* what tbemu knows the attacked connection by */
#define ATK_MSG		12000u
#define GOOD_POST	24576u	/* ... and the other one */
#define GOOD_MSG	16000u
#define SLOTS		32u	/* receives (and sends) outstanding per connection */
#define GUARD		4096u
#define GUARD_BYTE	0xa5
#define NEW_LEN		(1024u * 1024u)
#define WAIT_MS		60000
#define STOP_FILE	"/tmp/tb5k-hostile.stop"
#define QUIET_FILE	"/tmp/tb5k-hostile.quiet"
#define QUIET_ACK	"/tmp/tb5k-hostile.quiet-ack"
#define SEED_ATK	0xa77a0000ull
#define TAG_CTS		7u	/* b's receive whose CTS is replayed */
#define SEED_NEXT	0x5e5e0000ull	/* a's send after the replayed CTS */
#define KINDS		TB5_UAPI_DROP_KINDS

static struct {
	int me, dev, wait_s;
	bool quiet_ack;
	const char *cable;
	char attack[512];
	unsigned int mutate, flood, seed;
	struct tb5k_ctx p, pend;
	struct tb5k_ctl ctl;
} h = { .wait_s = 120, .mutate = 200, .flood = 20000, .seed = 0x7b5f };

static const char *const kind[KINDS] = {
	"malformed", "unknown_connection", "out_of_window", "ring_overflow",
	"sequence_gap",
};

/*
 * What each crafted case must do to the victim (tbemu_attack.c's craft()
 * sends them, by the same number and name): how much each drop kind grows
 * (malformed, unknown_connection, out_of_window, ring_overflow,
 * sequence_gap), frames a's NHI drops, and the attacked connection's
 * receives that complete (rn of them, each with rerr; RN_ALL: every one
 * outstanding), its event (ev: PEER_CLOSED's status) and the pending
 * connect's (pev: ERROR's status). All zero: ignored.
 */
#define RN_ALL		99
#define F_SWAPPED	0x1	/* the receive holds 0xb2 x 4096, 0xa1 x 4096, 0xc3 */
#define F_NEXT_SEND	0x2	/* a's next send of TAG_CTS waits for b's next grant */

struct hcase {
	const char *name;
	uint8_t d[KINDS];
	uint8_t nhi, rn;
	int32_t rerr;
	uint64_t rbytes;
	int32_t ev, pev;
	unsigned int flags;
};

#define C(n, m, u, w, o, g, ...) { .name = n, .d = { m, u, w, o, g }, __VA_ARGS__ }
#define FAIL(err)	.rn = 1, .rerr = (err)

static const struct hcase cases[] = {
	C("one-byte-frame", 1, 0, 0, 0, 0),
	C("header-of-15-bytes", 1, 0, 0, 0, 0),
	C("bad-magic", 1, 0, 0, 0, 0),
	C("bad-version", 1, 0, 0, 0, 0),
	C("type-0", 1, 0, 0, 0, 0),
	C("type-9", 1, 0, 0, 0, 0),
	C("type-255", 1, 0, 0, 0, 0),
	C("len-field-below-its-type", 1, 0, 0, 0, 0),
	C("header-claims-more-than-arrived", 1, 0, 0, 0, 0),
	C("header-of-4096-bytes-to-a-gone-endpoint", 0, 1, 0, 0, 0),
	C("frame-longer-than-the-buffer", 0, 0, 0, 1, 0),
	C("eof-pdf-0", 1, 0, 0, 0, 0),
	C("eof-pdf-1", 1, 0, 0, 0, 0),
	C("eof-pdf-6", 0, 0, 0, 0, 1),
	C("eof-pdf-15", 1, 0, 0, 0, 0),
	C("zero-length-frame", 0, 0, 0, 0, 0, .nhi = 1),
	C("control-frame-marked-more", 1, 0, 0, 0, 0),
	C("payload-outside-a-burst", 0, 0, 0, 0, 1),
	C("payload-4096-outside-a-burst", 0, 0, 0, 0, 1),
	C("data-end-marker-disagrees", 1, 0, 0, 0, 0),
	C("data-to-a-gone-endpoint", 0, 1, 0, 0, 0),
	C("data-from-the-wrong-peer-endpoint", 0, 1, 0, 0, 0),
	C("data-to-another-process-connection", 0, 1, 0, 0, 0),
	/*
	 * Its counter (seq >> 6, 0xdead0000 >> 6) is over 2^25 past that of
	 * b's one grant so far (0): behind it, so not a new grant.
	 */
	C("cts-for-a-buffer-never-offered", 0, 0, 1, 0, 0),
	C("abort-for-no-receive", 0, 0, 1, 0, 0),
	C("data-for-a-receive-never-granted", 0, 0, 1, 0, 0),
	C("close-to-a-gone-endpoint", 0, 1, 0, 0, 0),
	/* The payload frame is dropped with its header; the next header cuts it. */
	C("burst-claims-more-frames-than-follow", 0, 0, 1, 0, 1),
	C("short-payload-inside-a-burst", 1, 1, 0, 0, 0),
	C("hello-marked-more", 1, 0, 0, 0, 0),
	C("hello-shorter-than-its-type", 1, 0, 0, 0, 0),
	C("connect-without-a-source", 1, 0, 0, 0, 0),
	/* Refused with a REJECT to b's nonexistent endpoint. */
	C("connect-to-no-listener", 0, 0, 0, 0, 0),
	C("connect-with-a-wrong-cookie", 0, 0, 0, 0, 0),
	C("accept-without-a-source", 1, 0, 0, 0, 0),
	C("accept-to-a-connected-endpoint", 0, 1, 0, 0, 0),
	C("reject-to-a-connected-endpoint", 0, 1, 0, 0, 0),
	C("accept-to-a-gone-endpoint", 0, 1, 0, 0, 0),
	C("reject-to-a-gone-endpoint", 0, 1, 0, 0, 0),
	C("accept-with-a-wrong-cookie", 0, 1, 0, 0, 0),
	C("reject-with-a-wrong-cookie", 0, 1, 0, 0, 0),
	C("accept-without-a-source-while-connecting", 1, 0, 0, 0, 0),
	C("reject-with-an-unknown-status", 1, 0, 0, 0, 0, .pev = -EPROTO),
	C("reject-after-the-connect-failed", 0, 1, 0, 0, 0),
	C("payload-frame-longer-than-the-rest-of-its-burst", 1, 0, 0, 0, 0,
	  FAIL(-EPROTO)),
	C("data-past-the-end-of-the-posted-buffer", 0, 0, 1, 0, 0, FAIL(-EPROTO)),
	C("data-burst-past-the-message", 0, 0, 1, 0, 1, FAIL(-EPROTO)),
	C("data-offset-skips-ahead", 0, 0, 0, 0, 2, FAIL(-EBADMSG)),
	C("data-offset-at-2^64-minus-one", 0, 0, 1, 0, 0, FAIL(-EPROTO)),
	C("empty-message", 0, 0, 0, 0, 0, FAIL(0)),
	C("start-frame-marked-payload", 0, 0, 0, 0, 3),
	C("start-frame-pdf-15", 1, 0, 0, 0, 2),
	C("middle-frame-marked-header", 1, 0, 0, 0, 2, FAIL(-EBADMSG)),
	C("middle-frame-pdf-0", 2, 0, 0, 0, 0, FAIL(-EPROTO)),
	C("middle-frame-marked-dropped", 1, 0, 0, 0, 1, FAIL(-EPROTO)),
	C("end-frame-marked-more", 0, 0, 0, 0, 1, FAIL(-EBADMSG)),
	C("end-frame-marked-header", 1, 0, 0, 0, 1, FAIL(-EBADMSG)),
	C("end-frame-pdf-0", 1, 0, 0, 0, 1, FAIL(-EBADMSG)),
	/* Frames carry no number within a burst: two full ones swap unseen. */
	C("payload-frames-1-and-2-swapped", 0, 0, 0, 0, 0, FAIL(0),
	  .rbytes = ATK_MSG, .flags = F_SWAPPED),
	C("payload-frames-2-and-3-swapped", 1, 0, 0, 0, 1, FAIL(-EPROTO)),
	C("header-and-first-payload-swapped", 1, 0, 0, 0, 1, FAIL(-EPROTO)),
	C("abort-with-an-unknown-status", 1, 0, 0, 0, 0, FAIL(-EPROTO)),
	C("abort-message-too-long", 0, 0, 0, 0, 0, FAIL(-EMSGSIZE)),
	C("old-data-replayed", 0, 0, 1, 0, 0),
	/*
	 * Not newer than the last grant a took: no grant. a's next send of
	 * its tag waits for b's next receive and lands there.
	 */
	C("cts-replayed", 0, 0, 1, 0, 0, .flags = F_NEXT_SEND),
	C("close-with-an-unknown-status", 1, 0, 0, 0, 0, .rn = RN_ALL,
	  .rerr = -EPROTO, .ev = -EPROTO),
	C("data-after-close", 0, 1, 0, 0, 0),
	C("cts-after-close", 0, 1, 0, 0, 0),
	C("accept-after-close", 0, 1, 0, 0, 0),
	C("reject-after-close", 0, 1, 0, 0, 0),
};

#define NCASES		(sizeof(cases) / sizeof(cases[0]))

/* -- a: the receivers --------------------------------------------------- */

struct region {
	uint8_t *buf;
	size_t size, stride;
	uint32_t post, mem;
};

static void region_make(struct tb5k_ctx *c, struct region *r, uint32_t post)
{
	r->post = post;
	r->stride = GUARD + ((post + 4095) & ~4095u);
	r->size = SLOTS * r->stride + GUARD;
	r->buf = tb5k_alloc(r->size);
	memset(r->buf, GUARD_BYTE, r->size);
	r->mem = tb5k_reg(c, r->buf, r->size);
}

static uint64_t slot_off(const struct region *r, uint32_t slot)
{
	return slot * r->stride + GUARD;
}

/* Every byte outside the posted buffers still holds GUARD_BYTE. */
static void region_check(const char *check, const struct region *r)
{
	uint32_t s;

	for (s = 0; s <= SLOTS; s++) {
		uint64_t from = s ? slot_off(r, s - 1) + r->post : 0;
		uint64_t to = s < SLOTS ? slot_off(r, s) : r->size;
		int64_t bad = tb5k_verify_byte(r->buf + from, to - from, GUARD_BYTE);

		TB5K_CHECK(bad < 0, check, "byte %llu of the region (outside "
			   "every posted buffer) was written: 0x%02x",
			   (unsigned long long)(from + bad), r->buf[from + bad]);
	}
}

static void post_recv(const char *check, struct tb5k_ctx *c, uint32_t ep,
		      const struct region *r, uint32_t slot, uint32_t tag,
		      uint64_t id)
{
	int ret = tb5k_post1(c, TB5_OP_RECV, ep, r->mem, tag,
			     slot_off(r, slot), r->post, id);

	TB5K_CHECK(!ret, check, "post recv: %s", tb5k_errname(ret));
}

static bool stopped(void)
{
	return !access(STOP_FILE, F_OK);
}

/* The mutated connection: a clear error, or a message; guards intact. */
static int child_mutated(void)
{
	const char *check = "mutated";
	unsigned int ok = 0, eproto = 0, ebadmsg = 0, reset = 0;
	struct tb5k_ctx c;
	struct region r;
	struct tb5_cqe cqe;
	uint64_t cookie, id = 0;
	uint32_t l, ep, s;
	bool live = true;

	tb5k_open(&c, h.dev, 256);
	region_make(&c, &r, ATK_POST);
	l = tb5k_listen(check, &c, SVC_MUT, TB5_LISTEN_WELL_KNOWN, &cookie);
	/* b comes after the crafted cases. */
	ep = tb5k_accept_one(check, &c, l, 900 * 1000, "the mutated connection");
	for (s = 0; s < SLOTS; s++)
		post_recv(check, &c, ep, &r, s, 1, id++);
	while (!stopped()) {
		if (!tb5k_next(&c, &cqe, 200))
			continue;
		if (cqe.op == TB5_CQE_EVENT) {
			tb5k_note("mutated: event %s", tb5k_cqe_str(&cqe));
			TB5K_CHECK(cqe.status == -ECONNRESET || cqe.status == -EPROTO ||
				   cqe.status == -EBADMSG, check,
				   "the connection ended with %s", tb5k_cqe_str(&cqe));
			reset++;
			live = false;
			continue;
		}
		if (cqe.op != TB5_CQE_RECV)
			continue;
		if (!cqe.status) {
			TB5K_CHECK(cqe.bytes <= ATK_POST, check, "%s: more bytes than "
				   "posted", tb5k_cqe_str(&cqe));
			ok++;
		} else if (cqe.status == -EPROTO) {
			eproto++;
		} else if (cqe.status == -EBADMSG) {
			ebadmsg++;
		} else {
			TB5K_CHECK(cqe.status == -ECONNRESET || cqe.status == -ECANCELED,
				   check, "a receive failed without a clear cause: %s",
				   tb5k_cqe_str(&cqe));
			live = false;
			continue;
		}
		if (live)
			post_recv(check, &c, ep, &r, (uint32_t)(cqe.user_data % SLOTS), 1,
				  cqe.user_data + SLOTS);
	}
	region_check(check, &r);
	tb5k_note("mutated: %u received, %u -EPROTO (broke the protocol), %u -EBADMSG "
		  "(frames lost), %u ended", ok, eproto, ebadmsg, reset);
	TB5K_CHECK(eproto + ebadmsg + reset > 0, check, "the attack broke no receive: "
		   "it never reached the connection");
	tb5k_pass("mutated (%u failed with a clear error, no byte outside the posted "
		  "buffers)", eproto + ebadmsg + reset);
	tb5k_close(&c);
	return 0;
}

/* The other connection: every message whole and right; guards intact. */
static int child_good(void)
{
	const char *check = "good";
	struct tb5k_ctx c;
	struct region r, last;
	struct tb5_cqe cqe;
	uint64_t cookie, got = 0, total = ~0ull, next = 0;
	uint32_t l, ep, s;

	tb5k_open(&c, h.dev, 256);
	region_make(&c, &r, GOOD_POST);
	region_make(&c, &last, 8);
	l = tb5k_listen(check, &c, SVC_GOOD, TB5_LISTEN_WELL_KNOWN, &cookie);
	ep = tb5k_accept_one(check, &c, l, h.wait_s * 1000, "the good connection");
	post_recv(check, &c, ep, &last, 0, 2, ~0ull);
	for (s = 0; s < SLOTS; s++)
		post_recv(check, &c, ep, &r, s, 1, next++);
	while (got < total) {
		uint8_t *msg;
		int64_t bad;

		TB5K_CHECK(tb5k_next(&c, &cqe, WAIT_MS), check, "no message for %d s "
			   "(%llu of %llu received)", WAIT_MS / 1000,
			   (unsigned long long)got, (unsigned long long)total);
		TB5K_CHECK(cqe.op == TB5_CQE_RECV && !cqe.status, check,
			   "the connection beside the attack failed: %s",
			   tb5k_cqe_str(&cqe));
		if (cqe.tag == 2) {
			memcpy(&total, last.buf + slot_off(&last, 0), 8);
			continue;
		}
		TB5K_CHECK(cqe.user_data == got && cqe.bytes == GOOD_MSG, check,
			   "message %llu: %s", (unsigned long long)got,
			   tb5k_cqe_str(&cqe));
		msg = r.buf + slot_off(&r, (uint32_t)(got % SLOTS));
		bad = tb5k_verify(msg, GOOD_MSG, 0x600d0000ull + got, 0);
		TB5K_CHECK(bad < 0, check, "message %llu: byte %lld differs",
			   (unsigned long long)got, (long long)bad);
		memset(msg, GUARD_BYTE, GOOD_MSG);
		got++;
		post_recv(check, &c, ep, &r, (uint32_t)(next % SLOTS), 1, next);
		next++;
	}
	region_check(check, &r);
	region_check(check, &last);
	tb5k_pass("good (%llu messages beside the attack, every byte verified; no "
		  "byte outside the posted buffers)", (unsigned long long)got);
	tb5k_close(&c);
	return 0;
}

static void get_drops(struct tb5k_ctx *c, uint64_t *d)
{
	struct tb5_stats st;
	static const char *const attr[TB5_UAPI_DROP_KINDS] = {
		"drops/malformed", "drops/unknown_connection", "drops/out_of_window",
		"drops/ring_overflow", "drops/sequence_gap",
	};
	int k;

	memset(&st, 0xff, sizeof(st));
	TB5K_CHECK(!ioctl(c->fd, TB5_IOC_GET_STATS, &st), "counters",
		   "TB5_IOC_GET_STATS: %s", strerror(errno));
	TB5K_CHECK(!st.reserved[0] && !st.reserved[1] && !st.reserved[2], "counters",
		   "TB5_IOC_GET_STATS: reserved fields not 0");
	for (k = 0; k < TB5_UAPI_DROP_KINDS; k++) {
		uint64_t sys = tb5k_link_u64(h.dev, attr[k]);

		/* sysfs read after the ioctl: never less. */
		TB5K_CHECK(sys >= st.drops[k], "counters", "%s %llu in sysfs, %llu "
			   "in the uAPI before it", attr[k], (unsigned long long)sys,
			   (unsigned long long)st.drops[k]);
		d[k] = st.drops[k];
	}
}

static uint64_t nhi_dropped(void)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/rx_dropped", h.cable);
	return tb5k_read_u64("nhi", path);
}

/* a's side of the crafted cases: the attacked connection, a pending connect. */
struct target {
	struct tb5k_ctx c, pend;
	struct region r;
	uint32_t ep, pend_ep, send_mem;
	uint8_t *send_buf;
	unsigned int posted;	/* receives outstanding */
	bool live;
	unsigned int failed;	/* cases that did something else */
};

static void target_post(struct target *t, uint32_t slot)
{
	post_recv("crafted", &t->c, t->ep, &t->r, slot, 1, slot);
	t->posted++;
}

/* Did the swapped message land as its frames came: 0xb2, 0xa1, then 0xc3? */
static bool swapped_ok(const uint8_t *m)
{
	return tb5k_verify_byte(m, 4096, 0xb2) < 0 &&
	       tb5k_verify_byte(m + 4096, 4096, 0xa1) < 0 &&
	       tb5k_verify_byte(m + 8192, ATK_MSG - 8192, 0xc3) < 0;
}

/* Everything case @i did on a, against what it must do. */
static void check_case(struct target *t, uint32_t i, const uint64_t *d0, uint64_t nhi0)
{
	const struct hcase *e = &cases[i];
	uint64_t d1[KINDS], nhi1;
	unsigned int rn = 0, rbad = 0, want_rn = e->rn;
	int32_t ev = 0, pev = 0, rerr = 0;
	uint64_t rbytes = 0;
	bool content = true, other = false;
	char got[256];
	struct tb5_cqe cqe;
	uint32_t reposts[SLOTS];
	int k, n = 0, len = 0;

	get_drops(&h.p, d1);
	nhi1 = nhi_dropped();
	if (want_rn == RN_ALL)
		want_rn = t->posted;
	while (tb5k_next(&t->c, &cqe, 0)) {
		if (cqe.op == TB5_CQE_EVENT && cqe.event == TB5_EVENT_PEER_CLOSED) {
			ev = cqe.status;
			t->live = false;
		} else if (cqe.op == TB5_CQE_RECV && cqe.ep == t->ep) {
			rn++;
			t->posted--;
			rerr = cqe.status;
			rbytes = cqe.bytes;
			if (cqe.status != e->rerr || cqe.bytes != e->rbytes)
				rbad++;
			if ((e->flags & F_SWAPPED) && !cqe.status)
				content = swapped_ok(t->r.buf + slot_off(&t->r, (uint32_t)cqe.user_data));
			memset(t->r.buf + slot_off(&t->r, (uint32_t)cqe.user_data), GUARD_BYTE,
			       t->r.post);
			reposts[n++] = (uint32_t)cqe.user_data;
		} else {
			other = true;
			tb5k_note("crafted: case %u: %s", i, tb5k_cqe_str(&cqe));
		}
	}
	while (t->pend_ep && tb5k_next(&t->pend, &cqe, 0)) {
		if (cqe.op == TB5_CQE_EVENT && cqe.event == TB5_EVENT_ERROR)
			pev = cqe.status;
		else
			other = true;
	}
	for (k = 0; k < KINDS; k++)
		len += snprintf(got + len, sizeof(got) - len, "%s+%llu ", kind[k],
				(unsigned long long)(d1[k] - d0[k]));
	snprintf(got + len, sizeof(got) - len, "nhi+%llu; %u receive(s) %s (%llu bytes)%s; "
		 "event %s; connect %s", (unsigned long long)(nhi1 - nhi0), rn,
		 rn ? tb5k_errname(rerr) : "-", (unsigned long long)rbytes,
		 rbad ? " not all as they must" : "", ev ? tb5k_errname(ev) : "-",
		 pev ? tb5k_errname(pev) : "-");
	for (k = 0; k < KINDS; k++)
		if (d1[k] - d0[k] != e->d[k])
			other = true;
	if (nhi1 - nhi0 != e->nhi || rn != want_rn || rbad || ev != e->ev ||
	    pev != e->pev || !content)
		other = true;
	if (other) {
		tb5k_note("crafted: case %u %s: FAILED: %s", i, e->name, got);
		t->failed++;
	} else {
		tb5k_note("crafted: case %u %s: as it must: %s", i, e->name, got);
	}
	if (t->live)
		for (k = 0; k < n; k++)
			target_post(t, reposts[k]);
	if (e->flags & F_NEXT_SEND) {
		/*
		 * It waits for a grant: b's next receive, posted after the
		 * barrier (victim_crafted() waits for the send there), which
		 * checks every byte.
		 */
		tb5k_fill(t->send_buf, 8, SEED_NEXT, 0);
		TB5K_CHECK(!tb5k_post1(&t->c, TB5_OP_SEND, t->ep, t->send_mem, TAG_CTS, 0, 8,
				       0x5e), "crafted", "post the send after %s", e->name);
	}
}

/* The crafted cases, against a's endpoints here. */
static void victim_crafted(void)
{
	struct target t = { .live = true };
	uint64_t v = 0, cookie, want = NCASES, d0[KINDS], nhi0, got = 0;
	uint32_t l, s;
	int64_t pe;
	struct tb5_cqe cqe;

	tb5k_open(&t.c, h.dev, 256);
	tb5k_open(&t.pend, h.dev, 64);
	region_make(&t.c, &t.r, ATK_POST);
	t.send_buf = tb5k_alloc(4096);
	t.send_mem = tb5k_reg(&t.c, t.send_buf, 4096);
	l = tb5k_listen("crafted", &t.c, SVC_ATK, TB5_LISTEN_WELL_KNOWN, &cookie);
	tb5k_ctl_barrier("start", &h.ctl, &want, 1, NULL);
	t.ep = tb5k_accept_one("crafted", &t.c, l, h.wait_s * 1000, "the attacked connection");
	for (s = 0; s < SLOTS; s++)
		target_post(&t, s);
	/* A connect b leaves pending; its CONNECT tells b's tbemu its cookie. */
	pe = tb5k_connect_start(&t.pend, SVC_PEND, 0);
	TB5K_CHECK(pe >= 0, "crafted", "connect: %s", tb5k_errname((int)pe));
	t.pend_ep = (uint32_t)pe;
	/* b's message (kept by its tbemu), and ours to b's receive (its CTS kept). */
	TB5K_CHECK(!tb5k_post1(&t.c, TB5_OP_SEND, t.ep, t.send_mem, TAG_CTS, 0, 8, 0x5d),
		   "crafted", "post send");
	TB5K_CHECK(tb5k_wait_user_data(&t.c, 0x5d, &cqe, WAIT_MS) && !cqe.status,
		   "crafted", "the send to b: %s", tb5k_cqe_str(&cqe));
	TB5K_CHECK(tb5k_next(&t.c, &cqe, WAIT_MS) && cqe.op == TB5_CQE_RECV && !cqe.status &&
		   cqe.bytes == ATK_MSG, "crafted", "b's message: %s", tb5k_cqe_str(&cqe));
	TB5K_CHECK(tb5k_verify(t.r.buf + slot_off(&t.r, (uint32_t)cqe.user_data), ATK_MSG,
			       SEED_ATK, 0) < 0, "crafted", "b's message differs");
	memset(t.r.buf + slot_off(&t.r, (uint32_t)cqe.user_data), GUARD_BYTE, ATK_POST);
	t.posted--;
	target_post(&t, (uint32_t)cqe.user_data);
	get_drops(&h.p, d0);
	nhi0 = nhi_dropped();
	tb5k_ctl_barrier("setup", &h.ctl, &v, 1, NULL);
	for (;;) {
		uint64_t i;

		tb5k_ctl_barrier("case", &h.ctl, &v, 1, &i);
		if (i == ~0ull)
			break;
		TB5K_CHECK(i == got && i < NCASES, "crafted", "b sent case %llu, %llu due",
			   (unsigned long long)i, (unsigned long long)got);
		check_case(&t, (uint32_t)i, d0, nhi0);
		got++;
		get_drops(&h.p, d0);
		nhi0 = nhi_dropped();
		tb5k_ctl_barrier("checked", &h.ctl, &v, 1, NULL);
		if (cases[i].flags & F_NEXT_SEND)
			TB5K_CHECK(tb5k_wait_user_data(&t.c, 0x5e, &cqe, WAIT_MS) &&
				   !cqe.status && cqe.bytes == 8, "crafted",
				   "the send after %s did not complete, or failed: %s",
				   cases[i].name, tb5k_cqe_str(&cqe));
	}
	region_check("crafted", &t.r);
	TB5K_CHECK(got == NCASES, "crafted", "%llu of %zu cases sent",
		   (unsigned long long)got, NCASES);
	TB5K_CHECK(!t.failed, "crafted", "%u of %zu cases did something else than they must "
		   "(above)", t.failed, NCASES);
	tb5k_close(&t.pend);
	tb5k_close(&t.c);
	tb5k_pass("crafted (%zu cases, each as it must: drop kinds, the victim's errno, "
		  "or ignored; no byte outside the posted buffers)", NCASES);
}

/* The flood: what a's NHI did not drop is counted, frame for frame. */
static void victim_flood(void)
{
	uint64_t v = 0, d0[KINDS], d1[KINDS], nhi0, nhi1, n;
	int k;

	tb5k_ctl_barrier("quiet", &h.ctl, &v, 1, NULL);
	get_drops(&h.p, d0);
	nhi0 = nhi_dropped();
	tb5k_ctl_barrier("flood", &h.ctl, &v, 1, NULL);
	tb5k_ctl_barrier("flooded", &h.ctl, &v, 1, &n);
	get_drops(&h.p, d1);
	nhi1 = nhi_dropped();
	for (k = 0; k < KINDS; k++)
		tb5k_note("flood: %s +%llu", kind[k], (unsigned long long)(d1[k] - d0[k]));
	tb5k_note("flood: %llu frames sent, a's NHI dropped %llu", (unsigned long long)n,
		  (unsigned long long)(nhi1 - nhi0));
	TB5K_CHECK(nhi1 > nhi0, "flood", "a's NHI dropped no frame: the flood never "
		   "overran its ring");
	TB5K_CHECK(d1[1] - d0[1] + nhi1 - nhi0 == n, "flood", "%llu frames sent, %llu "
		   "dropped by the NHI and %llu counted unknown_connection",
		   (unsigned long long)n, (unsigned long long)(nhi1 - nhi0),
		   (unsigned long long)(d1[1] - d0[1]));
	for (k = 0; k < KINDS; k++)
		TB5K_CHECK(k == 1 || d1[k] == d0[k], "flood", "drops/%s grew under the "
			   "flood", kind[k]);
	tb5k_pass("flood (%llu frames past E2E: %llu dropped by a's NHI, the rest counted "
		  "unknown_connection, nothing else)", (unsigned long long)n,
		  (unsigned long long)(nhi1 - nhi0));
}

/*
 * The attacked link's drop counters, by kind, as the uAPI gives them (and
 * tb5_get_drops() does): vm-tests-fabric.sh checks the exporter's
 * tb5_link_rx_drops_total against the line "after".
 */
static void note_drops(const char *when, const uint64_t *d)
{
	char text[256];
	int k, len = 0;

	for (k = 0; k < KINDS; k++)
		len += snprintf(text + len, sizeof(text) - len, " %s=%llu", kind[k],
				(unsigned long long)d[k]);
	tb5k_note("drops %s the attack:%s", when, text);
}

static void victim(void)
{
	pid_t kids[2];
	uint64_t v = 0, cookie, d[KINDS];
	int i, st, failed = 0;
	struct tb5k_ctx n;
	uint8_t *buf;
	uint32_t l, ep, mem;
	struct tb5_cqe cqe;

	unlink(STOP_FILE);
	for (i = 0; i < 2; i++) {
		kids[i] = fork();
		TB5K_CHECK(kids[i] >= 0, "fork", "%s", strerror(errno));
		if (!kids[i])
			exit(i ? child_good() : child_mutated());
	}
	tb5k_open(&h.p, h.dev, 64);
	tb5k_ctl_meet("connect", &h.ctl, &h.p, 0, SVC_CTL, h.wait_s, 600000);
	get_drops(&h.p, d);
	note_drops("before", d);
	victim_crafted();
	/* b mutates its messages to the child, then floods. */
	tb5k_ctl_barrier("mutated", &h.ctl, &v, 1, NULL);
	victim_flood();
	tb5k_ctl_barrier("attacked", &h.ctl, &v, 1, NULL);
	i = creat(STOP_FILE, 0600);
	TB5K_CHECK(i >= 0, "stop", "creat %s: %s", STOP_FILE, strerror(errno));
	close(i);
	for (i = 0; i < 2; i++) {
		TB5K_CHECK(waitpid(kids[i], &st, 0) == kids[i], "wait", "%s",
			   strerror(errno));
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			failed = 1;
	}
	TB5K_CHECK(!failed, "children", "a receiving process failed (above)");

	/* After the attack: a new connection, 1 MiB verified. */
	tb5k_open(&n, h.dev, 64);
	buf = tb5k_alloc(NEW_LEN);
	mem = tb5k_reg(&n, buf, NEW_LEN);
	l = tb5k_listen("new", &n, SVC_NEW, TB5_LISTEN_WELL_KNOWN, &cookie);
	tb5k_ctl_barrier("new", &h.ctl, &v, 1, NULL);
	ep = tb5k_accept_one("new", &n, l, WAIT_MS, "the connection after the attack");
	TB5K_CHECK(!tb5k_post1(&n, TB5_OP_RECV, ep, mem, 7, 0, NEW_LEN, 1), "new",
		   "post recv");
	TB5K_CHECK(tb5k_wait_user_data(&n, 1, &cqe, WAIT_MS), "new", "no message");
	TB5K_CHECK(!cqe.status && cqe.bytes == NEW_LEN &&
		   tb5k_verify(buf, NEW_LEN, 0x4e3e, 0) < 0, "new",
		   "the message after the attack: %s", tb5k_cqe_str(&cqe));
	tb5k_ctl_barrier("done", &h.ctl, &v, 1, NULL);
	tb5k_close(&n);
	tb5k_free(buf, NEW_LEN);
	tb5k_pass("new (a new connection after the attack carried 1 MiB, verified)");
	get_drops(&h.p, d);
	note_drops("after", d);
}

/* -- b: the attacker ---------------------------------------------------- */

static void attack_cmd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void attack_cmd(const char *fmt, ...)
{
	char buf[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	TB5K_CHECK(!tb5k_write_text(h.attack, buf), "attack", "%s > %s: %s", buf,
		   h.attack, strerror(errno));
	tb5k_note("attack: %s", buf);
}

/*
 * "mode M target T remaining R case C state S name NAME injected I mutated U
 * learned OPRC"
 */
struct atk_state {
	int mode, target, state;
	unsigned int remaining, cs;
	unsigned long long injected, mutated;
	char name[64], learned[8];
	char text[256];
};

static void attack_state(struct atk_state *st)
{
	TB5K_CHECK(!tb5k_read_text(h.attack, st->text, sizeof(st->text)), "attack",
		   "read %s", h.attack);
	TB5K_CHECK(sscanf(st->text, "mode %d target %d remaining %u case %u state %d "
			  "name %63s injected %llu mutated %llu learned %7s", &st->mode,
			  &st->target, &st->remaining, &st->cs, &st->state, st->name,
			  &st->injected, &st->mutated, st->learned) == 9, "attack",
		   "%s says %s", h.attack, st->text);
}

struct sender {
	struct tb5k_ctx c;
	uint32_t ep, mem;
	uint8_t *buf;
	uint32_t len, inflight;
	uint64_t sent;		/* posted */
	uint64_t done;		/* completed */
	uint64_t seed0;
	bool on;
};

static void sender_fill(struct sender *s)
{
	while (s->on && s->inflight < SLOTS) {
		uint32_t slot = (uint32_t)(s->sent % SLOTS);
		int ret;

		tb5k_fill(s->buf + (size_t)slot * s->len, s->len, s->seed0 + s->sent, 0);
		ret = tb5k_post1(&s->c, TB5_OP_SEND, s->ep, s->mem, 1,
				 (uint64_t)slot * s->len, s->len, s->sent);
		if (ret) {
			tb5k_note("a send was refused: %s", tb5k_errname(ret));
			s->on = false;
			return;
		}
		s->sent++;
		s->inflight++;
	}
}

static void sender_open(struct sender *s, uint64_t svc, uint32_t len, uint64_t seed0)
{
	tb5k_open(&s->c, h.dev, 256);
	s->len = len;
	s->seed0 = seed0;
	s->buf = tb5k_alloc((size_t)SLOTS * len);
	s->mem = tb5k_reg(&s->c, s->buf, (size_t)SLOTS * len);
	s->ep = tb5k_connect_retry("connect", &s->c, svc, h.wait_s, 5000);
}

/* Keep both senders going for a while (@atk may be NULL); good must not fail. */
static void pump(struct sender *good, struct sender *atk, int ms)
{
	uint64_t end = tb5k_now_ms() + (uint64_t)ms;
	struct tb5k_ctx *cs[2] = { &good->c, atk ? &atk->c : NULL };
	struct tb5_cqe cqe;
	int which;

	do {
		sender_fill(good);
		if (atk)
			sender_fill(atk);
		if (!tb5k_next_multi(cs, atk ? 2 : 1, &which, &cqe, 20))
			continue;
		if (which == 0) {
			TB5K_CHECK(cqe.op == TB5_CQE_SEND && !cqe.status, "good",
				   "a send beside the attack failed: %s",
				   tb5k_cqe_str(&cqe));
			good->inflight--;
		} else if (cqe.op == TB5_CQE_SEND) {
			atk->inflight--;
			atk->done++;
			if (cqe.status)
				atk->on = false;
		} else if (cqe.op == TB5_CQE_EVENT) {
			tb5k_note("attacked connection, b's side: %s", tb5k_cqe_str(&cqe));
			atk->on = false;
		}
	} while (tb5k_now_ms() < end);
}

/*
 * Mutate until tbemu says it is done, the good sender going throughout.
 * It ends early when the attacked connection stalls: a receive whose
 * frames the mutation lost waits for them for ever (as on any connection:
 * the peer must close it), and with every receive of the victim's
 * waiting, no grant is left for our messages.
 */
static void mutate_phase(struct sender *good, struct sender *atk, int limit_s)
{
	uint64_t end = tb5k_now_ms() + (uint64_t)limit_s * 1000;
	uint64_t moved = tb5k_now_ms(), last = atk->done;
	struct atk_state st;

	for (;;) {
		pump(good, atk, 250);
		attack_state(&st);
		if (atk->done != last) {
			last = atk->done;
			moved = tb5k_now_ms();
		}
		if (tb5k_now_ms() - moved > 5000) {
			tb5k_note("attack: the attacked connection stalled (its "
				  "receives wait for lost frames)");
			break;
		}
		if (!st.remaining)
			break;
		TB5K_CHECK(tb5k_now_ms() < end, "attack", "mutation not done in %d s: %s",
			   limit_s, st.text);
	}
	TB5K_CHECK(st.mutated >= 16, "attack", "too few frames mutated: %s", st.text);
	tb5k_note("attack: mutation done: %s", st.text);
}

/* The crafted cases, one at a time, each checked by a before the next. */
static void attacker_crafted(struct sender *good, struct sender *atk)
{
	struct atk_state st;
	struct tb5_cqe cqe;
	uint64_t v = 0, want, end, cookie, d0[KINDS], d1[KINDS];
	uint32_t i, k;
	int ret;

	tb5k_open(&h.pend, h.dev, 64);
	tb5k_listen("crafted", &h.pend, SVC_PEND, TB5_LISTEN_WELL_KNOWN, &cookie);
	tb5k_ctl_barrier("start", &h.ctl, &v, 1, &want);
	TB5K_CHECK(want == NCASES, "crafted", "a knows %llu cases, b %zu",
		   (unsigned long long)want, NCASES);
	sender_open(good, SVC_GOOD, GOOD_MSG, 0x600d0000ull);
	sender_open(atk, SVC_ATK, ATK_MSG, SEED_ATK);
	/*
	 * One message (kept by tbemu), then our receive (its CTS kept too:
	 * by then tbemu knows the connection from a's grant).
	 */
	tb5k_fill(atk->buf, ATK_MSG, SEED_ATK, 0);
	ret = tb5k_post1(&atk->c, TB5_OP_SEND, atk->ep, atk->mem, 1, 0, ATK_MSG, 0x5e);
	TB5K_CHECK(!ret, "crafted", "post send: %s", tb5k_errname(ret));
	TB5K_CHECK(tb5k_wait_user_data(&atk->c, 0x5e, &cqe, WAIT_MS) && !cqe.status,
		   "crafted", "the message to a: %s", tb5k_cqe_str(&cqe));
	ret = tb5k_post1(&atk->c, TB5_OP_RECV, atk->ep, atk->mem, TAG_CTS, ATK_MSG, 8, 0x5d);
	TB5K_CHECK(!ret, "crafted", "post recv: %s", tb5k_errname(ret));
	TB5K_CHECK(tb5k_wait_user_data(&atk->c, 0x5d, &cqe, WAIT_MS) && !cqe.status &&
		   cqe.bytes == 8, "crafted", "a's message: %s", tb5k_cqe_str(&cqe));
	tb5k_ctl_barrier("setup", &h.ctl, &v, 1, NULL);
	/* Everything a case aims at learned: both connections, the connect, ours. */
	end = tb5k_now_ms() + 20000;
	do {
		pump(good, NULL, 20);
		attack_state(&st);
	} while ((!st.target || strcmp(st.learned, "1111")) && tb5k_now_ms() < end);
	TB5K_CHECK(st.target && !strcmp(st.learned, "1111"), "crafted",
		   "tbemu did not learn what the cases aim at: %s", st.text);
	for (i = 0; i < NCASES; i++) {
		get_drops(&h.p, d0);
		attack_cmd("case %u", i);
		end = tb5k_now_ms() + 20000;
		do {
			pump(good, NULL, 1);
			attack_state(&st);
		} while (!st.state && tb5k_now_ms() < end);
		TB5K_CHECK(st.state == 1, "crafted", "case %u %s was %s: %s", i, cases[i].name,
			   st.state ? "not made (a skipped case fails)" : "not sent in 20 s",
			   st.text);
		TB5K_CHECK(!strcmp(st.name, cases[i].name), "crafted", "case %u: tbemu sent "
			   "%s, the table says %s", i, st.name, cases[i].name);
		v = i;
		tb5k_ctl_barrier("case", &h.ctl, &v, 1, NULL);
		tb5k_ctl_barrier("checked", &h.ctl, &v, 1, NULL);
		if (!(cases[i].flags & F_NEXT_SEND))
			continue;
		/*
		 * a's next send of the tag waited for a real grant: this
		 * receive's, not the replayed one's (b would have dropped it,
		 * out_of_window, and this receive would wait forever).
		 */
		ret = tb5k_post1(&atk->c, TB5_OP_RECV, atk->ep, atk->mem, TAG_CTS, ATK_MSG, 8,
				 0x5f);
		TB5K_CHECK(!ret, "crafted", "post recv: %s", tb5k_errname(ret));
		TB5K_CHECK(tb5k_wait_user_data(&atk->c, 0x5f, &cqe, WAIT_MS) && !cqe.status &&
			   cqe.bytes == 8 && tb5k_verify(atk->buf + ATK_MSG, 8, SEED_NEXT, 0) < 0,
			   "crafted", "a's send after %s: %s", cases[i].name, tb5k_cqe_str(&cqe));
		get_drops(&h.p, d1);
		for (k = 0; k < KINDS; k++)
			TB5K_CHECK(d1[k] == d0[k], "crafted", "after %s: b's drops/%s +%llu",
				   cases[i].name, kind[k], (unsigned long long)(d1[k] - d0[k]));
		tb5k_note("crafted: %s: a's next send of its tag reached b's next receive, "
			  "verified; b dropped nothing", cases[i].name);
	}
	v = ~0ull;
	tb5k_ctl_barrier("case", &h.ctl, &v, 1, NULL);
	tb5k_pass("crafted (%zu cases sent, one at a time)", NCASES);
}

static void attacker(void)
{
	struct sender good = { .on = true }, atk = { .on = false }, mut = { .on = false };
	struct atk_state st;
	struct tb5_cqe cqe;
	struct tb5k_ctx n;
	uint64_t v = 0, total, end;
	uint32_t ep, mem;
	uint8_t *buf;
	int fd;

	tb5k_open(&h.p, h.dev, 64);
	tb5k_ctl_meet("connect", &h.ctl, &h.p, 1, SVC_CTL, h.wait_s, 600000);
	/* Before the connections: their first frames name them. */
	attack_cmd("learn %u %u %llu %llu", ATK_POST, GOOD_POST,
		   (unsigned long long)SVC_PEND, (unsigned long long)SVC_ATK);
	attacker_crafted(&good, &atk);

	/* Our own messages on a new connection to a's child, mutated. */
	sender_open(&mut, SVC_MUT, ATK_MSG, SEED_ATK);
	mut.on = true;
	attack_cmd("mutate %u %u %u", ATK_POST, h.mutate, h.seed);
	mutate_phase(&good, &mut, 120);
	attack_cmd("learn %u %u 0 0", ATK_POST, GOOD_POST);
	mut.on = false;
	tb5k_ctl_barrier("mutated", &h.ctl, &v, 1, NULL);

	/* The flood, with nothing else of ours on the link. */
	good.on = false;
	while (good.inflight)
		pump(&good, NULL, 50);
	tb5k_close(&mut.c);
	tb5k_close(&atk.c);
	tb5k_close(&h.pend);
	fd = creat(QUIET_FILE, 0600);
	TB5K_CHECK(fd >= 0, "flood", "creat %s: %s", QUIET_FILE, strerror(errno));
	close(fd);
	end = tb5k_now_ms() + 120000;
	while (h.quiet_ack && access(QUIET_ACK, F_OK) && tb5k_now_ms() < end)
		usleep(50000);
	TB5K_CHECK(!h.quiet_ack || !access(QUIET_ACK, F_OK), "flood", "the tb5-perf loop "
		   "did not leave the link in 120 s");
	usleep(500000);
	tb5k_ctl_barrier("quiet", &h.ctl, &v, 1, NULL);
	tb5k_ctl_barrier("flood", &h.ctl, &v, 1, NULL);
	attack_cmd("flood %u", h.flood);
	end = tb5k_now_ms() + 120000;
	do {
		usleep(20000);
		attack_state(&st);
	} while (st.remaining && tb5k_now_ms() < end);
	TB5K_CHECK(!st.remaining, "flood", "not done in 120 s: %s", st.text);
	attack_cmd("off");
	v = h.flood;
	tb5k_ctl_barrier("flooded", &h.ctl, &v, 1, NULL);
	unlink(QUIET_FILE);
	unlink(QUIET_ACK);
	tb5k_note("attack: %s", st.text);

	/* The good connection again after the flood; its last message says how many. */
	good.on = true;
	pump(&good, NULL, 2000);
	good.on = false;
	while (good.inflight)
		pump(&good, NULL, 50);
	total = good.sent;
	memcpy(good.buf, &total, 8);
	TB5K_CHECK(!tb5k_post1(&good.c, TB5_OP_SEND, good.ep, good.mem, 2, 0, 8, ~0ull),
		   "good", "the last send");
	TB5K_CHECK(tb5k_wait_user_data(&good.c, ~0ull, &cqe, WAIT_MS) && !cqe.status,
		   "good", "the last send: %s", tb5k_cqe_str(&cqe));
	tb5k_note("good: %llu messages sent beside the attack", (unsigned long long)total);
	tb5k_ctl_barrier("attacked", &h.ctl, &v, 1, NULL);

	/* A new connection after the attack. */
	tb5k_open(&n, h.dev, 64);
	buf = tb5k_alloc(NEW_LEN);
	tb5k_fill(buf, NEW_LEN, 0x4e3e, 0);
	mem = tb5k_reg(&n, buf, NEW_LEN);
	tb5k_ctl_barrier("new", &h.ctl, &v, 1, NULL);
	ep = tb5k_connect_retry("new", &n, SVC_NEW, 30, 5000);
	TB5K_CHECK(!tb5k_post1(&n, TB5_OP_SEND, ep, mem, 7, 0, NEW_LEN, 1), "new",
		   "post send");
	TB5K_CHECK(tb5k_wait_user_data(&n, 1, &cqe, WAIT_MS) && !cqe.status, "new",
		   "the send after the attack: %s", tb5k_cqe_str(&cqe));
	tb5k_ctl_barrier("done", &h.ctl, &v, 1, NULL);
	tb5k_close(&n);
	tb5k_close(&good.c);
	tb5k_pass("attack (%zu crafted cases, %llu frames mutated, a flood of %u past E2E; "
		  "%llu frames injected)", NCASES, st.mutated, h.flood, st.injected);
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s --side a|b --dev /dev/tb5_N --cable DIR [--mutate N] "
		"[--flood N] [--seed S] [--quiet-ack] [--connect-s S]\n", prog);
	exit(2);
}

int main(int argc, char **argv)
{
	int i;
	char tail;

	h.me = -1;
	h.dev = -1;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--side") && i + 1 < argc) {
			i++;
			h.me = !strcmp(argv[i], "a") ? 0 : !strcmp(argv[i], "b") ? 1 : -1;
		} else if (!strcmp(argv[i], "--dev") && i + 1 < argc) {
			if (sscanf(argv[++i], "/dev/tb5_%d%c", &h.dev, &tail) != 1)
				usage(argv[0]);
		} else if (!strcmp(argv[i], "--cable") && i + 1 < argc) {
			h.cable = argv[++i];
		} else if (!strcmp(argv[i], "--mutate") && i + 1 < argc) {
			h.mutate = (unsigned int)strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--flood") && i + 1 < argc) {
			h.flood = (unsigned int)strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			h.seed = (unsigned int)strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--quiet-ack")) {
			h.quiet_ack = true;
		} else if (!strcmp(argv[i], "--connect-s") && i + 1 < argc) {
			h.wait_s = atoi(argv[++i]);
		} else {
			usage(argv[0]);
		}
	}
	if (h.me < 0 || h.dev < 0 || !h.cable)
		usage(argv[0]);
	snprintf(h.attack, sizeof(h.attack), "%s/attack", h.cable);
	tb5k_init(h.me ? "hostile-b" : "hostile-a", 900);
	if (h.me)
		attacker();
	else
		victim();
	return 0;
}
