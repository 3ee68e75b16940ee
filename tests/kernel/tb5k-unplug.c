// SPDX-License-Identifier: MIT
/*
 * tb5k-unplug - pull a loop pair's cable in the middle of a transfer.
 *
 *   tb5k-unplug [--big-mib N]
 *
 * Two rounds on pair 0 (/dev/tb5_0 <-> /dev/tb5_1). Each starts a large
 * message plus operations that wait (a receive nobody sends to, a send
 * nobody grants), and once the message is moving writes 0 to
 * /sys/class/tb5/tb5_<r>/plugged (round r, so both ends get their turn).
 * Then:
 *   - every pending operation completes with -ENOLINK (the large one may
 *     have finished first; then it must be intact), each endpoint reports
 *     TB5_EVENT_ERROR with -ENOLINK, EP_QUERY says ERROR, posting fails;
 *   - both ends read "down" and peer_id "none", GET_INFO says DOWN, pair 1 is
 *     unaffected, a connect is refused;
 *   - nothing was written outside the posted buffers;
 * and after writing 1 both ends come back "ready" with the same peer, a new
 * connection (round 0: to the listener that survived; round 1: a new one)
 * carries a verified message each way, and pinned_pages ends where it began.
 */
#include "tb5k.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define WAIT_MS		60000
#define UNTOUCHED	0xee

struct pend {
	int ctx;		/* 0: A, 1: B */
	uint64_t user_data;
	int may_succeed;	/* the large message may beat the unplug */
	int done;
	int32_t status;
};

static struct tb5k_ctx ctx[2];

static void plug(const char *name, int end, int on)
{
	char path[128];
	int ret;

	tb5k_link_attr_path(path, sizeof(path), end, "plugged");
	ret = tb5k_write_text(path, on ? "1" : "0");
	TB5K_CHECK(!ret, name, "writing %d to %s: %s", on, path,
		   tb5k_errname(ret));
}

static void round_trip(const char *name, uint32_t ep_a, uint32_t ep_b,
		       uint64_t seed)
{
	const uint64_t len = (1 << 20) + 7;
	uint8_t *sa = tb5k_alloc(len), *ra = tb5k_alloc(len);
	uint8_t *sb = tb5k_alloc(len), *rb = tb5k_alloc(len);
	uint32_t h_sa, h_ra, h_sb, h_rb;
	struct tb5_cqe cqe;
	int ret, i;

	tb5k_fill(sa, len, seed, 0);
	tb5k_fill(sb, len, seed + 1, 0);
	h_sa = tb5k_reg(&ctx[0], sa, len);
	h_ra = tb5k_reg(&ctx[0], ra, len);
	h_sb = tb5k_reg(&ctx[1], sb, len);
	h_rb = tb5k_reg(&ctx[1], rb, len);
	ret = tb5k_post1(&ctx[1], TB5_OP_RECV, ep_b, h_rb, 5, 0, len, 0xb1);
	TB5K_CHECK(!ret, name, "post recv on tb5_1: %s", tb5k_errname(ret));
	ret = tb5k_post1(&ctx[0], TB5_OP_RECV, ep_a, h_ra, 6, 0, len, 0xa1);
	TB5K_CHECK(!ret, name, "post recv on tb5_0: %s", tb5k_errname(ret));
	ret = tb5k_post1(&ctx[0], TB5_OP_SEND, ep_a, h_sa, 5, 0, len, 0xa2);
	TB5K_CHECK(!ret, name, "post send on tb5_0: %s", tb5k_errname(ret));
	ret = tb5k_post1(&ctx[1], TB5_OP_SEND, ep_b, h_sb, 6, 0, len, 0xb2);
	TB5K_CHECK(!ret, name, "post send on tb5_1: %s", tb5k_errname(ret));
	for (i = 0; i < 4; i++) {
		int c = i / 2;
		uint64_t ud = (c ? 0xb1 : 0xa1) + (uint64_t)(i % 2);

		TB5K_CHECK(tb5k_wait_user_data(&ctx[c], ud, &cqe, WAIT_MS), name,
			   "operation 0x%llx on tb5_%d did not complete",
			   (unsigned long long)ud, c);
		TB5K_CHECK(!cqe.status && cqe.bytes == len, name,
			   "tb5_%d: %s", c, tb5k_cqe_str(&cqe));
	}
	TB5K_CHECK(tb5k_verify(rb, len, seed, 0) < 0 &&
		   tb5k_verify(ra, len, seed + 1, 0) < 0, name,
		   "the message after re-plug arrived corrupted");
	TB5K_CHECK(!tb5k_dereg(&ctx[0], h_sa) && !tb5k_dereg(&ctx[0], h_ra) &&
		   !tb5k_dereg(&ctx[1], h_sb) && !tb5k_dereg(&ctx[1], h_rb), name,
		   "deregistering after the round trip failed");
	tb5k_free(sa, len);
	tb5k_free(ra, len);
	tb5k_free(sb, len);
	tb5k_free(rb, len);
}

static void one_round(int r, uint64_t big)
{
	char name[32], peer_before[64], buf[64];
	/* Round 0: tb5_0 sends the large message; round 1: tb5_1 does. */
	int s = r, d = !r;
	struct tb5k_conn cn;
	uint32_t ep[2], h_send, h_recv, h_small[2];
	const uint64_t slen = 64 * 1024, guard = 8192;
	uint8_t *sbuf = tb5k_alloc(big), *rbuf = tb5k_alloc(big + guard);
	uint8_t *small[2];
	struct pend p[6];
	int np = 0, i, ret, events[2] = { 0, 0 }, big_ok = 0;
	uint64_t rx0, threshold, t0;
	struct tb5_ep_query q;
	struct tb5_info info;
	struct tb5_cqe cqe;
	struct tb5_connect cn2;

	snprintf(name, sizeof(name), "round%d", r);
	TB5K_CHECK(!tb5k_wait_link_state(0, "ready", 20000) &&
		   !tb5k_wait_link_state(1, "ready", 20000), name,
		   "pair 0 is not ready at the start");
	TB5K_CHECK(!tb5k_link_text(0, "peer_id", peer_before,
				   sizeof(peer_before)), name, "no peer_id");

	tb5k_connect(name, &ctx[0], &ctx[1], 0x0ff0 + (uint64_t)r, &cn);
	ep[0] = cn.ep_l;
	ep[1] = cn.ep_c;

	tb5k_fill(sbuf, big, 0xabc + (uint64_t)r, 0);
	memset(rbuf, UNTOUCHED, big + guard);
	h_send = tb5k_reg(&ctx[s], sbuf, big);
	h_recv = tb5k_reg(&ctx[d], rbuf, big + guard);
	for (i = 0; i < 2; i++) {
		small[i] = tb5k_alloc(slen);
		memset(small[i], UNTOUCHED, slen);
		h_small[i] = tb5k_reg(&ctx[i], small[i], slen);
	}

	/* The large message, and operations that can only wait. */
	p[np++] = (struct pend){ d, 0x100, 1, 0, 0 };
	ret = tb5k_post1(&ctx[d], TB5_OP_RECV, ep[d], h_recv, 1, 0, big, 0x100);
	TB5K_CHECK(!ret, name, "post the large receive: %s", tb5k_errname(ret));
	p[np++] = (struct pend){ s, 0x101, 1, 0, 0 };
	ret = tb5k_post1(&ctx[s], TB5_OP_SEND, ep[s], h_send, 1, 0, big, 0x101);
	TB5K_CHECK(!ret, name, "post the large send: %s", tb5k_errname(ret));
	p[np++] = (struct pend){ s, 0x102, 0, 0, 0 };
	ret = tb5k_post1(&ctx[s], TB5_OP_RECV, ep[s], h_small[s], 2, 0, slen, 0x102);
	TB5K_CHECK(!ret, name, "post a receive: %s", tb5k_errname(ret));
	p[np++] = (struct pend){ d, 0x103, 0, 0, 0 };
	ret = tb5k_post1(&ctx[d], TB5_OP_SEND, ep[d], h_small[d], 3, 0, slen, 0x103);
	TB5K_CHECK(!ret, name, "post a send: %s", tb5k_errname(ret));
	p[np++] = (struct pend){ d, 0x104, 0, 0, 0 };
	ret = tb5k_post1(&ctx[d], TB5_OP_RECV, ep[d], h_small[d], 4, 0, slen, 0x104);
	TB5K_CHECK(!ret, name, "post a receive: %s", tb5k_errname(ret));

	/* Pull the cable once the message is moving. */
	threshold = big / 16 < 2 * TB5K_MIB ? big / 16 : 2 * TB5K_MIB;
	rx0 = tb5k_link_u64(d, "rx_bytes");
	t0 = tb5k_now_ms();
	while (tb5k_link_u64(d, "rx_bytes") - rx0 < threshold) {
		TB5K_CHECK(tb5k_now_ms() - t0 < 60000, name, "the large message "
			   "did not start moving within 60 s (rx_bytes of tb5_%d "
			   "grew by %llu)", d, (unsigned long long)
			   (tb5k_link_u64(d, "rx_bytes") - rx0));
		usleep(2000);
	}
	plug(name, r, 0);
	tb5k_note("%s: unplugged tb5_%d after %llu bytes had arrived", name, r,
		  (unsigned long long)(tb5k_link_u64(d, "rx_bytes") - rx0));

	/* Every operation completes; every endpoint reports the error. */
	t0 = tb5k_now_ms();
	for (;;) {
		struct tb5k_ctx *cs[2] = { &ctx[0], &ctx[1] };
		int which, left = 0;

		for (i = 0; i < np; i++)
			left += !p[i].done;
		if (!left && events[0] && events[1])
			break;
		TB5K_CHECK(tb5k_next_multi(cs, 2, &which, &cqe, WAIT_MS), name,
			   "%d operations and %d endpoint events missing %d s "
			   "after the unplug", left, !events[0] + !events[1],
			   WAIT_MS / 1000);
		if (cqe.op == TB5_CQE_EVENT) {
			if (cqe.ep == ep[which]) {
				TB5K_CHECK(cqe.event == TB5_EVENT_ERROR &&
					   cqe.status == -ENOLINK, name,
					   "tb5_%d's endpoint got %s, wanted "
					   "ERROR -ENOLINK", which,
					   tb5k_cqe_str(&cqe));
				TB5K_CHECK(!events[which], name, "a second event "
					   "on tb5_%d: %s", which,
					   tb5k_cqe_str(&cqe));
				events[which] = 1;
			} else {
				tb5k_fail(name, "an event on tb5_%d for an "
					  "endpoint of no connection: %s", which,
					  tb5k_cqe_str(&cqe));
			}
			continue;
		}
		for (i = 0; i < np; i++)
			if (p[i].user_data == cqe.user_data)
				break;
		TB5K_CHECK(i < np && p[i].ctx == which && !p[i].done, name,
			   "an unexpected completion on tb5_%d: %s", which,
			   tb5k_cqe_str(&cqe));
		TB5K_CHECK(cqe.ep == ep[which], name, "completion for another "
			   "endpoint: %s", tb5k_cqe_str(&cqe));
		p[i].done = 1;
		p[i].status = cqe.status;
		if (cqe.status == 0 && p[i].may_succeed) {
			TB5K_CHECK(cqe.bytes == big, name, "%s",
				   tb5k_cqe_str(&cqe));
			big_ok++;
			continue;
		}
		TB5K_CHECK(cqe.status == -ENOLINK, name, "a pending operation "
			   "completed with %s, wanted -ENOLINK",
			   tb5k_cqe_str(&cqe));
	}
	if (big_ok)
		tb5k_note("%s: %d of the large message's two sides finished "
			  "before the unplug", name, big_ok);
	/* A received message is whole; a cut one stayed inside its buffer. */
	if (p[0].status == 0)
		TB5K_CHECK(tb5k_verify(rbuf, big, 0xabc + (uint64_t)r, 0) < 0,
			   name, "the large message completed but is corrupted");
	TB5K_CHECK(tb5k_verify_byte(rbuf + big, guard, UNTOUCHED) < 0, name,
		   "bytes after the large receive buffer were written");
	TB5K_CHECK(tb5k_verify_byte(small[0], slen, UNTOUCHED) < 0 &&
		   tb5k_verify_byte(small[1], slen, UNTOUCHED) < 0, name,
		   "an unmatched receive's buffer was written");
	tb5k_pass("%s.pending-fail (all operations -ENOLINK, both endpoints "
		  "ERROR -ENOLINK)", name);

	/* The link is down, on both ends, and says so. */
	TB5K_CHECK(!tb5k_wait_link_state(0, "down", 5000) &&
		   !tb5k_wait_link_state(1, "down", 5000), name,
		   "both ends should read \"down\" while unplugged");
	for (i = 0; i < 2; i++) {
		tb5k_get_info(&ctx[i], &info);
		TB5K_CHECK(info.state == TB5_STATE_DOWN, name,
			   "GET_INFO on tb5_%d: state %u while unplugged", i,
			   info.state);
		TB5K_CHECK(!tb5k_link_text(i, "peer_id", buf, sizeof(buf)) &&
			   !strcmp(buf, "none"), name, "tb5_%d's peer_id reads "
			   "\"%s\" while unplugged", i, buf);
		ret = tb5k_ep_query(&ctx[i], ep[i], &q);
		TB5K_CHECK(!ret && q.state == TB5_EP_STATE_ERROR &&
			   q.error == -ENOLINK, name, "EP_QUERY on tb5_%d: %s, "
			   "state %u, error %d", i, tb5k_errname(ret), q.state,
			   q.error);
		ret = tb5k_post1(&ctx[i], TB5_OP_RECV, ep[i], h_small[i], 9, 0, 1, 9);
		TB5K_CHECK(ret == -ENOLINK, name, "posting on a failed endpoint "
			   "on tb5_%d: %s, wanted ENOLINK", i, tb5k_errname(ret));
		TB5K_CHECK(!tb5k_link_text(i, "plugged", buf, sizeof(buf)) &&
			   !strcmp(buf, "0"), name, "tb5_%d's plugged reads \"%s\"",
			   i, buf);
	}
	TB5K_CHECK(!tb5k_link_text(2, "state", buf, sizeof(buf)) &&
		   !strcmp(buf, "ready"), name, "pair 1 (tb5_2) reads \"%s\" "
		   "while pair 0 is unplugged", buf);
	/* Unplugging an unplugged pair again, from the other end, is harmless. */
	plug(name, !r, 0);
	memset(&cn2, 0, sizeof(cn2));
	cn2.service = 0x0ff0 + (uint64_t)r;
	cn2.cookie = cn.cookie;
	ret = ioctl(ctx[1].fd, TB5_IOC_CONNECT, &cn2);
	if (ret == 0) {
		/* Accepted for later: it must fail, not hang. */
		TB5K_CHECK(tb5k_wait_event(&ctx[1], cn2.ep, 0, &cqe, WAIT_MS) &&
			   cqe.event == TB5_EVENT_ERROR && cqe.status < 0, name,
			   "a connect while unplugged did not fail");
		tb5k_ep_close(&ctx[1], cn2.ep);
		tb5k_note("%s: CONNECT while down returned 0, then %s", name,
			  tb5k_cqe_str(&cqe));
	} else {
		TB5K_CHECK(errno == ENOLINK, name, "CONNECT while unplugged: %s, "
			   "wanted ENOLINK", tb5k_errname(errno));
	}
	tb5k_pass("%s.down (state, peer_id, GET_INFO, EP_QUERY, post, connect)",
		  name);

	/* Plug back in, from the end that was pulled. */
	plug(name, r, 1);
	t0 = tb5k_now_ms();
	TB5K_CHECK(!tb5k_wait_link_state(0, "ready", 20000) &&
		   !tb5k_wait_link_state(1, "ready", 20000), name,
		   "not \"ready\" 20 s after re-plugging");
	TB5K_CHECK(!tb5k_link_text(0, "peer_id", buf, sizeof(buf)) &&
		   !strcmp(buf, peer_before), name, "tb5_0's peer_id was %s, "
		   "after re-plug %s", peer_before, buf);
	tb5k_note("%s: ready again after %llu ms", name,
		  (unsigned long long)(tb5k_now_ms() - t0));

	/* The failed endpoints close quietly; their regions are free again. */
	for (i = 0; i < 2; i++) {
		ret = tb5k_ep_close(&ctx[i], ep[i]);
		TB5K_CHECK(!ret, name, "closing tb5_%d's failed endpoint: %s", i,
			   tb5k_errname(ret));
		ret = tb5k_dereg(&ctx[i], h_small[i]);
		TB5K_CHECK(!ret, name, "deregistering on tb5_%d: %s", i,
			   tb5k_errname(ret));
	}
	TB5K_CHECK(!tb5k_dereg(&ctx[s], h_send) && !tb5k_dereg(&ctx[d], h_recv),
		   name, "deregistering the large message's regions failed");
	TB5K_CHECK(!tb5k_next(&ctx[0], &cqe, 100) && !tb5k_next(&ctx[1], &cqe, 100),
		   name, "an unexpected completion after the unplug: %s",
		   tb5k_cqe_str(&cqe));

	/* A new connection works: round 0 to the listener that stayed. */
	if (r == 0) {
		tb5k_connect_to(name, &ctx[0], cn.listener, 0x0ff0, cn.cookie,
				&ctx[1], &cn);
	} else {
		ret = tb5k_ep_close(&ctx[0], cn.listener);
		TB5K_CHECK(!ret, name, "closing the listener: %s",
			   tb5k_errname(ret));
		tb5k_connect(name, &ctx[0], &ctx[1], 0x0ff8, &cn);
	}
	round_trip(name, cn.ep_l, cn.ep_c, 0x5eed + (uint64_t)r);
	TB5K_CHECK(!tb5k_ep_close(&ctx[0], cn.ep_l) &&
		   !tb5k_ep_close(&ctx[1], cn.ep_c) &&
		   !tb5k_ep_close(&ctx[0], cn.listener), name,
		   "closing the new connection failed");
	/* Closing both ends at once may or may not tell the other: drain. */
	while (tb5k_next(&ctx[0], &cqe, 100) || tb5k_next(&ctx[1], &cqe, 100))
		TB5K_CHECK(cqe.op == TB5_CQE_EVENT &&
			   cqe.event == TB5_EVENT_PEER_CLOSED, name,
			   "unexpected after closing: %s", tb5k_cqe_str(&cqe));
	tb5k_pass("%s.replug (ready again, a new connection carries 1 MiB each "
		  "way)", name);

	for (i = 0; i < 2; i++)
		tb5k_free(small[i], slen);
	tb5k_free(sbuf, big);
	tb5k_free(rbuf, big + guard);
}

int main(int argc, char **argv)
{
	uint64_t big = 64 * TB5K_MIB, pinned0;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--big-mib") && i + 1 < argc) {
			big = strtoull(argv[++i], NULL, 0) * TB5K_MIB;
		} else {
			fprintf(stderr, "usage: %s [--big-mib N]\n", argv[0]);
			return 2;
		}
	}
	if (big < TB5K_MIB)
		big = TB5K_MIB;
	tb5k_init("unplug", 900);
	pinned0 = tb5k_pinned_pages();
	tb5k_open(&ctx[0], 0, 1024);
	tb5k_open(&ctx[1], 1, 1024);
	one_round(0, big);
	one_round(1, big / 2);
	tb5k_close(&ctx[0]);
	tb5k_close(&ctx[1]);
	TB5K_CHECK(tb5k_wait_pinned(pinned0, 5000) == pinned0, "pinned",
		   "pinned_pages is %llu after closing everything, was %llu",
		   (unsigned long long)tb5k_pinned_pages(),
		   (unsigned long long)pinned0);
	tb5k_pass("pinned (back to %llu)", (unsigned long long)pinned0);
	return 0;
}
