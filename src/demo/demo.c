// SPDX-License-Identifier: MIT
/*
 * demo.c - tb5-core-demo: the transport core's two-node demo.
 *
 * Two links, "node A" (host 0xa) and "node B" (host 0xb), wired back to back
 * through the ring model: the same core that runs in tb5.ko, over rings in
 * memory. The demo walks through what the core promises, one line per step:
 * the hello exchange, listen/connect/accept, messages of awkward sizes both
 * ways with every byte checked (and the bytes just past each receive buffer
 * checked untouched), a send larger than its receive failing on both sides,
 * and a cable pulled and plugged back in. Exit status 0 only if every check
 * held; 2 for a bad command line.
 */
#include "tb5_core.h"
#include "tb5_ringmodel.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SERVICE		0x7b5u
#define MAX_CQES	16u
#define CANARY		16u	/* bytes past each receive buffer, watched */
#define CANARY_BYTE	0xee
#define RUN_STEPS	1000000u

/* One end of the cable. */
struct node {
	const char *name;
	uint64_t host_id;
	int end;
	struct tb5_rm_pair *pair;
	struct tb5_link *link;
};

/* The owner's side of one endpoint: what the core told it. */
struct ep_ctx {
	const char *name;
	struct tb5_ep *ep;
	unsigned connected, incoming, peer_closed, errors, released;
	int last_error;
	struct tb5_completion cqes[MAX_CQES];
	unsigned ncqes;
};

static unsigned failures;

/* One line per step: what was checked and whether it held. */
__attribute__((format(printf, 2, 3)))
static int check(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("[%s] ", ok ? " ok " : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!ok)
		failures++;
	return ok;
}

/* ---- the callbacks ----------------------------------------------------- */

static int node_tx(void *priv, const struct tb5_tx_frame *frame)
{
	struct node *n = priv;

	return tb5_rm_tx(n->pair, n->end, frame);
}

/* In user space a tb5_mem is a plain address: region NULL, offset = pointer. */
static int node_copy_to(void *priv, const struct tb5_mem *dst, const void *src,
			uint32_t len)
{
	(void)priv;
	memcpy((void *)(uintptr_t)dst->offset, src, len);
	return 0;
}

static void node_complete(void *priv, void *ep_ctx, const struct tb5_completion *cqe)
{
	struct ep_ctx *c = ep_ctx;

	(void)priv;
	if (c->ncqes < MAX_CQES)
		c->cqes[c->ncqes++] = *cqe;
}

static void node_event(void *priv, void *ep_ctx, enum tb5_event ev, int status)
{
	struct ep_ctx *c = ep_ctx;

	(void)priv;
	switch (ev) {
	case TB5_EV_CONNECTED:
		c->connected++;
		break;
	case TB5_EV_INCOMING:
		c->incoming++;
		break;
	case TB5_EV_PEER_CLOSED:
		c->peer_closed++;
		break;
	case TB5_EV_ERROR:
		c->errors++;
		c->last_error = status;
		break;
	case TB5_EV_RELEASED:
		c->released++;
		break;
	}
}

static const void *resolve(void *priv, const struct tb5_mem *mem, uint32_t len)
{
	(void)priv;
	(void)len;
	return (const void *)(uintptr_t)mem->offset;
}

static const struct tb5_link_ops node_ops = {
	.tx = node_tx,
	.copy_to = node_copy_to,
	.complete = node_complete,
	.event = node_event,
};

/* ---- helpers ----------------------------------------------------------- */

/* Not a pointer to const: gcc 12 at -O0 takes one as a read of the
 * buffers, which are filled only after their descriptors are made. */
static struct tb5_mem mem_of(void *p)
{
	struct tb5_mem m = { NULL, (uint64_t)(uintptr_t)p };

	return m;
}

static void run(struct tb5_rm_pair *pair)
{
	tb5_rm_run(pair, RUN_STEPS);
}

/* Take the completion of @user_id from @c; false if there is none. */
static int take_cqe(struct ep_ctx *c, uint64_t user_id, struct tb5_completion *out)
{
	unsigned i;

	for (i = 0; i < c->ncqes; i++) {
		if (c->cqes[i].user_id != user_id)
			continue;
		*out = c->cqes[i];
		c->cqes[i] = c->cqes[--c->ncqes];
		return 1;
	}
	return 0;
}

static uint8_t pattern(uint64_t i, uint64_t seed)
{
	return (uint8_t)((i * 131u + seed * 7u + (i >> 9)) & 0xff);
}

static const char *size_name(uint64_t n, char *buf, size_t len)
{
	if (n >= (1u << 20) && !(n % (1u << 20)))
		snprintf(buf, len, "%llu MiB", (unsigned long long)(n >> 20));
	else if (n >= 1024 && !(n % 1024))
		snprintf(buf, len, "%llu KiB", (unsigned long long)(n >> 10));
	else if (n > 1024)
		snprintf(buf, len, "%llu B (%llu KiB + %llu)",
			 (unsigned long long)n, (unsigned long long)(n / 1024),
			 (unsigned long long)(n % 1024));
	else
		snprintf(buf, len, "%llu B", (unsigned long long)n);
	return buf;
}

/*
 * One message of @size bytes from @tx to @rx: post the receive, post the
 * send, run the rings, and check both completions, every byte, and that the
 * bytes just past the receive buffer were not touched.
 */
static void message(struct tb5_rm_pair *pair, struct ep_ctx *tx,
		    struct ep_ctx *rx, uint64_t size, uint64_t seed)
{
	uint8_t *src = malloc(size ? size : 1);
	uint8_t *dst = malloc(size + CANARY);
	struct tb5_mem sm, dm;
	struct tb5_completion sc, rc;
	uint64_t i, bad = 0;
	char name[64];
	int ret;

	memset(&sc, 0, sizeof(sc));
	memset(&rc, 0, sizeof(rc));
	if (!src || !dst) {
		check(0, "%s -> %s: out of memory", tx->name, rx->name);
		goto out;
	}
	for (i = 0; i < size; i++)
		src[i] = pattern(i, seed);
	memset(dst, CANARY_BYTE, size + CANARY);
	sm = mem_of(src);
	dm = mem_of(dst);

	ret = tb5_post_recv(rx->ep, &dm, size, 5, seed);
	if (!check(ret == 0, "%s posts a receive of %s: %d", rx->name,
		   size_name(size, name, sizeof(name)), ret))
		goto out;
	ret = tb5_post_send(tx->ep, &sm, size, 5, seed);
	if (!check(ret == 0, "%s posts a send of %s: %d", tx->name, name, ret))
		goto out;
	run(pair);

	if (!check(take_cqe(tx, seed, &sc) && take_cqe(rx, seed, &rc),
		   "%s -> %s, %s: both sides completed", tx->name, rx->name,
		   name))
		goto out;
	for (i = 0; i < size; i++)
		bad += dst[i] != src[i];
	for (i = size; i < size + CANARY; i++)
		bad += dst[i] != CANARY_BYTE;
	check(sc.status == 0 && rc.status == 0 && sc.bytes == size &&
	      rc.bytes == size && !bad,
	      "%s -> %s, %s: status %d/%d, bytes %llu/%llu, %llu bytes wrong",
	      tx->name, rx->name, name, sc.status, rc.status,
	      (unsigned long long)sc.bytes, (unsigned long long)rc.bytes,
	      (unsigned long long)bad);
out:
	free(src);
	free(dst);
}

/* A send larger than the receive: -EMSGSIZE on both sides, nothing written. */
static void truncated(struct tb5_rm_pair *pair, struct ep_ctx *tx,
		      struct ep_ctx *rx)
{
	uint8_t src[200], dst[100 + CANARY];
	struct tb5_mem sm = mem_of(src), dm = mem_of(dst);
	struct tb5_completion sc, rc;
	unsigned i, touched = 0;

	memset(&sc, 0, sizeof(sc));
	memset(&rc, 0, sizeof(rc));

	memset(src, 0x42, sizeof(src));
	memset(dst, CANARY_BYTE, sizeof(dst));
	if (!check(tb5_post_recv(rx->ep, &dm, 100, 9, 900) == 0 &&
		   tb5_post_send(tx->ep, &sm, 200, 9, 901) == 0,
		   "%s sends 200 B against a receive of 100 B", tx->name))
		return;
	run(pair);
	if (!check(take_cqe(tx, 901, &sc) && take_cqe(rx, 900, &rc),
		   "truncated send: both sides completed"))
		return;
	for (i = 0; i < sizeof(dst); i++)
		touched += dst[i] != CANARY_BYTE;
	check(sc.status == -EMSGSIZE && rc.status == -EMSGSIZE && !touched,
	      "truncated send: sender %d, receiver %d (-EMSGSIZE is %d), "
	      "%u bytes of the receive buffer written", sc.status, rc.status,
	      -EMSGSIZE, touched);
}

static void show_peers(struct node *a, struct node *b)
{
	struct node *n[2] = { a, b };
	int i;

	for (i = 0; i < 2; i++) {
		uint64_t peer = 0;
		int ret = tb5_link_peer(n[i]->link, &peer);
		uint64_t want = n[1 - i]->host_id;

		check(ret == 0 && peer == want && tb5_link_state(n[i]->link) ==
		      TB5_LINK_READY, "%s sees peer %#llx (want %#llx)",
		      n[i]->name, (unsigned long long)peer,
		      (unsigned long long)want);
	}
}

/* B listens, A connects, B accepts: @ca and @cb end up connected. */
static void connect_pair(struct tb5_rm_pair *pair, struct node *a,
			 struct node *b, struct ep_ctx *listener,
			 struct ep_ctx *ca, struct ep_ctx *cb)
{
	struct tb5_addr addr = { 0, 0 };
	int ret;

	ret = tb5_listen_addr(listener->ep, &addr);
	if (!check(ret == 0, "%s: listener address: service %#llx", b->name,
		   (unsigned long long)addr.service))
		return;
	ret = tb5_connect(a->link, &addr, ca, &ca->ep);
	if (!check(ret == 0, "%s connects to service %#llx: %d", a->name,
		   (unsigned long long)addr.service, ret))
		return;
	run(pair);
	if (!check(listener->incoming > 0, "%s: a connection is waiting",
		   b->name))
		return;
	listener->incoming--;
	ret = tb5_accept(listener->ep, cb, &cb->ep);
	if (!check(ret == 0, "%s accepts: %d", b->name, ret))
		return;
	run(pair);
	check(ca->connected == 1 && tb5_ep_state(ca->ep) == TB5_EP_CONNECTED &&
	      tb5_ep_state(cb->ep) == TB5_EP_CONNECTED,
	      "%s and %s are connected", ca->name, cb->name);
}

static void print_stats(struct node *n)
{
	struct tb5_link_stats s;

	tb5_link_get_stats(n->link, &s);
	printf("%s: tx %llu frames / %llu bytes, rx %llu frames / %llu bytes, "
	       "%llu stalls, %llu dropped, %llu errors, msgs tx %llu rx %llu, "
	       "%llu resets\n", n->name,
	       (unsigned long long)s.tx_frames, (unsigned long long)s.tx_bytes,
	       (unsigned long long)s.rx_frames, (unsigned long long)s.rx_bytes,
	       (unsigned long long)s.tx_stalls, (unsigned long long)s.rx_dropped,
	       (unsigned long long)s.rx_errors, (unsigned long long)s.tx_msgs,
	       (unsigned long long)s.rx_msgs, (unsigned long long)s.peer_resets);
}

/* ---- the command line -------------------------------------------------- */

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"usage: %s [--ring-size N]\n"
		"\n"
		"Runs two tb5 transport-core links back to back over the ring\n"
		"model and checks what the core promises, one line per step.\n"
		"\n"
		"  --ring-size N  descriptors per ring: a power of two from %u\n"
		"                 to %u (default %u)\n"
		"  --help         this text\n"
		"\n"
		"Exit status: 0 if every check held, 1 if one failed, 2 for a\n"
		"bad command line.\n",
		argv0, TB5_RING_SIZE_MIN, TB5_RING_SIZE_MAX,
		TB5_RING_SIZE_DEFAULT);
}

static int parse_ring_size(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (!s || !*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < TB5_RING_SIZE_MIN || v > TB5_RING_SIZE_MAX ||
	    (v & (v - 1)))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int parse_args(int argc, char **argv, uint32_t *ring_size)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i], *val = NULL;

		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			usage(stdout, argv[0]);
			exit(0);
		}
		if (!strcmp(arg, "--ring-size")) {
			if (i + 1 == argc) {
				fprintf(stderr, "%s: --ring-size needs a value\n",
					argv[0]);
				return -1;
			}
			val = argv[++i];
		} else if (!strncmp(arg, "--ring-size=", 12)) {
			val = arg + 12;
		} else {
			fprintf(stderr, "%s: unknown argument '%s'\n", argv[0],
				arg);
			usage(stderr, argv[0]);
			return -1;
		}
		if (parse_ring_size(val, ring_size)) {
			fprintf(stderr,
				"%s: --ring-size must be a power of two from %u "
				"to %u, not '%s'\n", argv[0], TB5_RING_SIZE_MIN,
				TB5_RING_SIZE_MAX, val);
			return -1;
		}
	}
	return 0;
}

/* ---- the demo ---------------------------------------------------------- */

static const uint64_t sizes[] = { 0, 1, 4097, 1u << 20 };

int main(int argc, char **argv)
{
	uint32_t ring_size = TB5_RING_SIZE_DEFAULT;
	struct node a = { "node A", 0xa, 0, NULL, NULL };
	struct node b = { "node B", 0xb, 1, NULL, NULL };
	struct ep_ctx listener = { .name = "B's listener" };
	struct ep_ctx ca = { .name = "A" }, cb = { .name = "B" };
	struct ep_ctx ca2 = { .name = "A (2nd)" }, cb2 = { .name = "B (2nd)" };
	struct tb5_link_config cfg;
	struct tb5_rm_pair *pair = NULL;
	struct tb5_completion cqe;
	uint8_t buf[64];
	struct tb5_mem m = mem_of(buf);
	unsigned i;
	int ret, got;

	if (parse_args(argc, argv, &ring_size))
		return 2;
	memset(&cqe, 0, sizeof(cqe));
	printf("tb5-core-demo: two links over the ring model, ring size %u\n",
	       ring_size);

	/* The cable and its two ends. */
	ret = tb5_rm_create(ring_size, resolve, NULL, &pair);
	if (!check(ret == 0, "ring model created: %d", ret))
		return 1;
	a.pair = b.pair = pair;
	memset(&cfg, 0, sizeof(cfg));
	cfg.ring_size = ring_size;
	cfg.host_id = a.host_id;
	ret = tb5_link_create(&cfg, &node_ops, &a, &a.link);
	cfg.host_id = b.host_id;
	ret = ret ? ret : tb5_link_create(&cfg, &node_ops, &b, &b.link);
	if (!check(ret == 0, "links created: %d", ret))
		return 1;
	tb5_rm_attach(pair, a.end, a.link);
	tb5_rm_attach(pair, b.end, b.link);

	/* Rings up: each side says hello and learns the other. */
	tb5_link_up(a.link);
	tb5_link_up(b.link);
	run(pair);
	show_peers(&a, &b);

	/* A connection. */
	ret = tb5_listen(b.link, SERVICE, 0, &listener, &listener.ep);
	if (!check(ret == 0, "%s listens on service %#x: %d", b.name, SERVICE,
		   ret))
		return 1;
	connect_pair(pair, &a, &b, &listener, &ca, &cb);
	if (failures)
		goto out;

	/* Messages both ways. */
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		message(pair, &ca, &cb, sizes[i], 100 + i);
		message(pair, &cb, &ca, sizes[i], 200 + i);
	}

	/* Truncation. */
	truncated(pair, &ca, &cb);

	/* Unplug with a receive in flight; the connection fails. */
	ret = tb5_post_recv(cb.ep, &m, sizeof(buf), 3, 300);
	check(ret == 0, "%s posts a receive, then the cable is pulled", cb.name);
	tb5_rm_unplug(pair);
	check(tb5_link_state(a.link) == TB5_LINK_DOWN &&
	      tb5_link_state(b.link) == TB5_LINK_DOWN,
	      "unplugged: both links down");
	/* Take the completion first: argument evaluation order is unspecified. */
	got = take_cqe(&cb, 300, &cqe);
	check(got && cqe.status == -ENOLINK,
	      "%s's receive failed with %d (-ENOLINK is %d)", cb.name,
	      got ? cqe.status : 0, -ENOLINK);
	check(ca.errors == 1 && cb.errors == 1 && ca.last_error == -ENOLINK &&
	      cb.last_error == -ENOLINK,
	      "both endpoints were told TB5_EV_ERROR (%d, %d)", ca.last_error,
	      cb.last_error);
	ret = tb5_post_send(ca.ep, &m, sizeof(buf), 3, 301);
	check(ret < 0, "%s cannot send on the failed connection: %d", ca.name,
	      ret);

	/* Replug: the links come back, the listener is still there. */
	tb5_rm_plug(pair);
	run(pair);
	show_peers(&a, &b);
	tb5_ep_close(ca.ep);
	tb5_ep_close(cb.ep);
	run(pair);
	check(ca.released == 1 && cb.released == 1,
	      "the failed endpoints were closed and released");
	connect_pair(pair, &a, &b, &listener, &ca2, &cb2);
	if (!failures) {
		message(pair, &ca2, &cb2, 4096, 400);
		message(pair, &cb2, &ca2, 4096, 401);
	}

	/* Goodbye. */
	if (ca2.ep)
		tb5_ep_close(ca2.ep);
	if (cb2.ep)
		tb5_ep_close(cb2.ep);
	tb5_ep_close(listener.ep);
	run(pair);
	check(ca2.released == 1 && cb2.released == 1 && listener.released == 1,
	      "every endpoint was closed and released");
	print_stats(&a);
	print_stats(&b);

out:
	/* Stop the rings before the links go (tb5_link_destroy's rule). */
	tb5_rm_unplug(pair);
	tb5_rm_attach(pair, a.end, NULL);
	tb5_rm_attach(pair, b.end, NULL);
	tb5_link_destroy(a.link);
	tb5_link_destroy(b.link);
	tb5_rm_destroy(pair);

	printf("tb5-core-demo: %s (%u check%s failed)\n",
	       failures ? "FAILED" : "all checks held", failures,
	       failures == 1 ? "" : "s");
	return failures ? 1 : 0;
}
