// SPDX-License-Identifier: MIT
/*
 * tb5k-hostile - a hostile peer on the emulated fabric, and what its victim
 * must show.
 *
 *   tb5k-hostile --side a --dev /dev/tb5_N [--connect-s S]
 *   tb5k-hostile --side b --dev /dev/tb5_N --attack PATH
 *                [--mutate N] [--flood N] [--seed S] [--connect-s S]
 *
 * Side a is the victim, side b the attacker; they meet over the link as
 * tb5k-kill's sides do (a control connection, well-known service). On a,
 * two children each hold one connection from b, with their receive
 * buffers in one registered region each, every posted buffer between two
 * 4 KiB guards filled with a pattern:
 *   - "attacked": receives of ATK_POST bytes; b's tbemu (PATH, its
 *     `attack` attribute) learns this connection from the CTS frames a
 *     sends for them and attacks it: the crafted set, then up to N
 *     frames of b's own messages on it mutated (until the connection
 *     stalls: a receive whose frames were lost waits for them, as on any
 *     connection, until it is closed), then a flood of N frames to
 *     endpoints that are gone. Each receive either completes (its bytes
 *     cannot be checked: a mutated payload arrives as sent) or fails with
 *     a clear error (-EPROTO: the peer broke the protocol; -EBADMSG:
 *     frames were lost; -ECONNRESET: the peer closed it); at least one
 *     must fail so;
 *   - "good": receives of GOOD_POST bytes of b's GOOD_MSG-byte messages,
 *     every byte checked, all the while; the last message (tag 2) says how
 *     many b sent, and all of them must have arrived, none failed.
 * Then both children check every guard of their region: no byte written
 * outside a posted buffer. a checks that each drop counter grew (malformed,
 * unknown connection, out of window, ring overflow, sequence gap), in the
 * uAPI (TB5_IOC_GET_STATS) and in sysfs (drops/), which agree; and after
 * the attack stops a new connection between the hosts carries 1 MiB,
 * verified. The control connection itself lives through it all.
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

static struct {
	int me, dev, wait_s;
	const char *attack;
	unsigned int mutate, flood, seed;
	struct tb5k_ctx p;
	struct tb5k_ctl ctl;
} h = { .wait_s = 120, .mutate = 200, .flood = 4000, .seed = 0x7b5f };

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

/* The attacked connection: a clear error, or a message; guards intact. */
static int child_attacked(void)
{
	const char *check = "attacked";
	unsigned int ok = 0, eproto = 0, ebadmsg = 0, reset = 0;
	struct tb5k_ctx c;
	struct region r;
	struct tb5_cqe cqe;
	uint64_t cookie, id = 0;
	uint32_t l, ep, s;
	bool live = true;

	tb5k_open(&c, h.dev, 256);
	region_make(&c, &r, ATK_POST);
	l = tb5k_listen(check, &c, SVC_ATK, TB5_LISTEN_WELL_KNOWN, &cookie);
	ep = tb5k_accept_one(check, &c, l, h.wait_s * 1000, "the attacked connection");
	for (s = 0; s < SLOTS; s++)
		post_recv(check, &c, ep, &r, s, 1, id++);
	while (!stopped()) {
		if (!tb5k_next(&c, &cqe, 200))
			continue;
		if (cqe.op == TB5_CQE_EVENT) {
			tb5k_note("attacked: event %s", tb5k_cqe_str(&cqe));
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
	tb5k_note("attacked: %u received, %u -EPROTO (broke the protocol), %u -EBADMSG "
		  "(frames lost), %u ended", ok, eproto, ebadmsg, reset);
	TB5K_CHECK(eproto + ebadmsg + reset > 0, check, "the attack broke no receive: "
		   "it never reached the connection");
	tb5k_pass("attacked (%u failed with a clear error, no byte outside the posted "
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

static void victim(void)
{
	static const char *const kind[TB5_UAPI_DROP_KINDS] = {
		"malformed", "unknown_connection", "out_of_window", "ring_overflow",
		"sequence_gap",
	};
	uint64_t before[TB5_UAPI_DROP_KINDS], after[TB5_UAPI_DROP_KINDS];
	pid_t kids[2];
	uint64_t v = 0, cookie;
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
			exit(i ? child_good() : child_attacked());
	}
	tb5k_open(&h.p, h.dev, 64);
	tb5k_ctl_meet("connect", &h.ctl, &h.p, 0, SVC_CTL, h.wait_s, 600000);
	get_drops(&h.p, before);
	tb5k_ctl_barrier("start", &h.ctl, &v, 1, NULL);
	/* b attacks, and tells when it is done. */
	tb5k_ctl_barrier("attacked", &h.ctl, &v, 1, NULL);
	get_drops(&h.p, after);
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
	for (i = 0; i < TB5_UAPI_DROP_KINDS; i++) {
		tb5k_note("counters: %s %llu -> %llu", kind[i],
			  (unsigned long long)before[i], (unsigned long long)after[i]);
		TB5K_CHECK(after[i] > before[i], "counters", "drops/%s did not grow "
			   "under the attack", kind[i]);
	}
	tb5k_pass("counters (every kind grew, the uAPI and sysfs agree)");

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

/* "mode M target T remaining R case C injected I mutated U" */
static void attack_state(int *mode, unsigned int *remaining, char *text, size_t size)
{
	int target;
	unsigned int cs;

	TB5K_CHECK(!tb5k_read_text(h.attack, text, size), "attack", "read %s",
		   h.attack);
	TB5K_CHECK(sscanf(text, "mode %d target %d remaining %u case %u", mode,
			  &target, remaining, &cs) == 4, "attack", "%s says %s",
		   h.attack, text);
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

/* Keep both senders going for a while; the good one must not fail. */
static void pump(struct sender *good, struct sender *atk, int ms)
{
	uint64_t end = tb5k_now_ms() + (uint64_t)ms;
	struct tb5k_ctx *cs[2] = { &good->c, &atk->c };
	struct tb5_cqe cqe;
	int which;

	do {
		sender_fill(good);
		sender_fill(atk);
		if (!tb5k_next_multi(cs, 2, &which, &cqe, 20))
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
 * Run the attack until tbemu says it is done, the good sender going
 * throughout. Mutation ends early when the attacked connection stalls:
 * a receive whose frames the mutation lost waits for them for ever (as
 * on any connection: the peer must close it), and with every receive of
 * the victim's waiting, no grant is left for our messages.
 */
static void phase(struct sender *good, struct sender *atk, const char *what,
		  int want_mode, int limit_s)
{
	uint64_t end = tb5k_now_ms() + (uint64_t)limit_s * 1000;
	uint64_t moved = tb5k_now_ms(), last = atk->done;
	unsigned int remaining;
	char text[160];
	int mode;

	for (;;) {
		pump(good, atk, 250);
		attack_state(&mode, &remaining, text, sizeof(text));
		if (atk->done != last) {
			last = atk->done;
			moved = tb5k_now_ms();
		}
		if (want_mode == 2 && tb5k_now_ms() - moved > 5000) {
			tb5k_note("attack: the attacked connection stalled (its "
				  "receives wait for lost frames)");
			break;
		}
		/* The crafted set ends by itself (mode 0); the others count down. */
		if (mode == 0 || (want_mode != 1 && mode == want_mode && !remaining))
			break;
		TB5K_CHECK(tb5k_now_ms() < end, "attack", "%s not done in %d s: %s",
			   what, limit_s, text);
	}
	tb5k_note("attack: %s done: %s", what, text);
}

static void attacker(void)
{
	struct sender good = { .on = true }, atk = { .on = false };
	unsigned long long injected, mutated;
	unsigned int remaining, cases;
	char text[160];
	int mode;
	struct tb5_cqe cqe;
	struct tb5k_ctx n;
	uint64_t v = 0, total;
	uint32_t ep, mem;
	uint8_t *buf;

	tb5k_open(&h.p, h.dev, 64);
	tb5k_ctl_meet("connect", &h.ctl, &h.p, 1, SVC_CTL, h.wait_s, 600000);
	/* Before the connections: their first CTS frames name them. */
	attack_cmd("learn %u %u", ATK_POST, GOOD_POST);
	sender_open(&good, SVC_GOOD, GOOD_MSG, 0x600d0000ull);
	sender_open(&atk, SVC_ATK, ATK_MSG, 0xa77a0000ull);
	tb5k_ctl_barrier("start", &h.ctl, &v, 1, NULL);
	pump(&good, &atk, 1000);

	/* The crafted set against the receives a has granted and we leave. */
	attack_cmd("crafted %u %u", ATK_POST, GOOD_POST);
	phase(&good, &atk, "crafted", 1, 60);
	attack_state(&mode, &remaining, text, sizeof(text));
	TB5K_CHECK(sscanf(text, "mode %*d target %*d remaining %*u case %u", &cases) == 1 &&
		   cases >= 30, "attack", "the crafted set did not go out: %s", text);
	/* Our own messages on the attacked connection, mutated. */
	atk.on = true;
	attack_cmd("mutate %u %u %u", ATK_POST, h.mutate, h.seed);
	phase(&good, &atk, "mutate", 2, 120);
	atk.on = false;
	attack_cmd("flood %u %u", ATK_POST, h.flood);
	phase(&good, &atk, "flood", 3, 120);
	attack_state(&mode, &remaining, text, sizeof(text));
	attack_cmd("off");
	TB5K_CHECK(sscanf(text, "mode %*d target %*d remaining %*u case %*u injected "
			  "%llu mutated %llu", &injected, &mutated) == 2 &&
		   mutated >= 16, "attack", "too few frames mutated: %s", text);

	/* The good connection's last message: how many came before it. */
	good.on = false;
	while (good.inflight)
		pump(&good, &atk, 50);
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
	tb5k_close(&atk.c);
	tb5k_close(&good.c);
	tb5k_pass("attack (%u crafted cases, %llu frames mutated, a flood of %u; %llu "
		  "frames injected)", cases, mutated, h.flood, injected);
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s --side a|b --dev /dev/tb5_N [--attack PATH] "
		"[--mutate N] [--flood N] [--seed S] [--connect-s S]\n", prog);
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
		} else if (!strcmp(argv[i], "--attack") && i + 1 < argc) {
			h.attack = argv[++i];
		} else if (!strcmp(argv[i], "--mutate") && i + 1 < argc) {
			h.mutate = (unsigned int)strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--flood") && i + 1 < argc) {
			h.flood = (unsigned int)strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			h.seed = (unsigned int)strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--connect-s") && i + 1 < argc) {
			h.wait_s = atoi(argv[++i]);
		} else {
			usage(argv[0]);
		}
	}
	if (h.me < 0 || h.dev < 0 || (h.me == 1 && !h.attack))
		usage(argv[0]);
	tb5k_init(h.me ? "hostile-b" : "hostile-a", 900);
	if (h.me)
		attacker();
	else
		victim();
	return 0;
}
