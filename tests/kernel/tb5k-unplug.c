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
 *
 *   tb5k-unplug --side a|b --dev /dev/tb5_N --puller a|b --pull-cmd CMD
 *               --plug-cmd CMD [--big-mib N] [--rounds R] [--connect-s N]
 *
 * The same as two processes, one per end of a link: the tb backend links
 * two hosts, each holding one end, and a cable is pulled by one host only.
 * Each side opens only its device; they meet over the link as tb5k-xfer's
 * sides do: side a listens on a well-known service, side b connects and is
 * refused and tries again until a listens (each waits --connect-s, 120 s);
 * barriers over that control connection agree on the options (a mismatch
 * fails both) and check each other's host ids. Round r (of --rounds, 2 by
 * default) is pulled by --puller for r even and by the other side for r
 * odd, so that with 2 rounds both ends get their turn. Each side's
 * --pull-cmd and --plug-cmd act on its own end (run with system(), exit
 * status 0 wanted), and a side runs them only in its rounds: on a loop pair
 * "echo 0 > /sys/class/tb5/tb5_<its N>/plugged" (1 to plug), on the tb
 * backend a write to the cable emulator's plugged file of its host. In a
 * round the puller receives the large message, the other side sends it:
 *   - over the control connection the puller hands over its listener's
 *     cookie, the other side connects: the data connection; each side
 *     posts its half of the large message and of the operations that can
 *     only wait (the puller a send nobody grants and a receive, the other
 *     a receive nobody sends to); the large send goes last, after a barrier;
 *   - once the puller's end has received 1/16 of it (at most 2 MiB; or
 *     after 60 s, with a note) the puller runs --pull-cmd;
 *   - each side, on its open file: every pending operation completes with
 *     -ENOLINK (or the large message finished first, intact), the data and
 *     the control endpoint each report TB5_EVENT_ERROR -ENOLINK once, and
 *     nothing else (not the listener), EP_QUERY says ERROR -ENOLINK,
 *     posting fails with ENOLINK, GET_INFO says DOWN, a connect is refused,
 *     nothing was written outside the posted buffers;
 *   - sysfs of its end: on a loop pair the node stays and reads "down",
 *     peer_id "none", plugged 0, and the other loop pairs stay ready; on
 *     the tb backend the node of the pulled cable goes away (its open file
 *     keeps the old end, down for good) while the host's other tb links
 *     stay ready (so --pull-cmd must pull this link's cable only);
 *   - no barrier is possible while the cable is out: the puller gives the
 *     other side 5 s to look, then runs --plug-cmd; each side waits (120 s)
 *     for its link to come back ready to the same peer: on a loop pair the
 *     same tb5_<N>, on the tb backend a new end, /dev/tb5_<M> with M
 *     perhaps another number, found by scanning /sys/class/tb5 for a
 *     ready link of the same backend and peer on the same XDomain (the
 *     device its service sits on, which names the cable, or the port on
 *     hardware, and comes back under the same name: with two cables to one
 *     peer, the other cable's link is not ours; the old number first);
 *   - each side opens the link again and the two meet again over it (a
 *     new control connection, like at the start), then: on a loop pair
 *     the other side connects to the puller's listener that stayed
 *     through the pull (on its old file) and a verified 1 MiB message goes
 *     each way on that connection; on the tb backend that listener went
 *     with the old end, so a connect to it over the new link is refused
 *     and the old listener hears nothing; on both, a new listener (the
 *     other side's, on its new file) takes a new connection that carries a
 *     verified 1 MiB message each way;
 *   - the old file's failed endpoints close quietly and its regions
 *     deregister; the new file goes on to the next round.
 * pinned_pages counts every process of a host: each side checks that its
 * own VmLck comes back instead. The program names itself unplug-a or
 * unplug-b in its PASS/FAIL lines.
 */
#include "tb5k.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
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

/* -- two processes, one per end ----------------------------------------- */

#define SVC_CTRL	0x5e7b4000ull	/* a's well-known listener */
#define SVC_DATA	0x5e7b4100ull	/* + round: the puller's listener */
#define SVC_NEW		0x5e7b4200ull	/* + round: the new one after re-plug */
#define SVC_FIN		0x5e7b4300ull	/* the last connection, to end in step */
#define PROTO2		1		/* what the barriers' values mean */
#define WAIT2_MS	120000		/* one completion, under TCG */
#define MOVE_MS		60000		/* the large message moving, or pull */
#define GONE_MS		60000		/* a tb node going away */
#define SETTLE_MS	5000		/* the other side's look at its end */
#define BACK_MS		120000		/* the link back after the plug */
#define RT_LEN		((1 << 20) + 7)	/* each way after the re-plug */

enum { BACKEND_LOOP = 1, BACKEND_TB = 2 };

static struct {
	int me;			/* 0: side a, 1: side b */
	int puller0;		/* the puller of round 0 */
	int rounds;
	int wait_s;
	int backend;
	uint64_t big;
	const char *pull_cmd, *plug_cmd;
	int meets;		/* control connections made */
} u;

static int backend_of(int n)
{
	char buf[32];

	if (tb5k_link_text(n, "backend", buf, sizeof(buf)))
		return 0;
	if (!strcmp(buf, "loop"))
		return BACKEND_LOOP;
	if (!strcmp(buf, "tb"))
		return BACKEND_TB;
	return -1;
}

static int link_present(int n)
{
	char path[128];

	tb5k_link_attr_path(path, sizeof(path), n, "state");
	return !access(path, F_OK);
}

/*
 * Where link @n sits, in @buf: the sysfs path of the XDomain its tb
 * service is on (tb5_<n>/device is the service). Pulling the cable
 * removes the XDomain with the link; plugging it back makes both anew
 * under the same path (tbemu names the XDomain by its cable and end, as
 * thunderbolt.ko names it by its port), perhaps with another tb5_<n>.
 * Empty for a loop end, which has no parent device.
 */
static void link_place(int n, char *buf, size_t size)
{
	char path[128], *real, *slash;

	buf[0] = '\0';
	tb5k_link_attr_path(path, sizeof(path), n, "device");
	real = realpath(path, NULL);
	if (!real)
		return;
	slash = strrchr(real, '/');
	if (slash)
		*slash = '\0';
	snprintf(buf, size, "%s", real);
	free(real);
}

/* Link @n is ready, of our backend, its peer @peer, at @place. */
static int link_is(int n, const char *peer, const char *place)
{
	char buf[256];

	if (tb5k_link_text(n, "state", buf, sizeof(buf)) ||
	    strcmp(buf, "ready") || backend_of(n) != u.backend ||
	    tb5k_link_text(n, "peer_id", buf, sizeof(buf)) || strcmp(buf, peer))
		return 0;
	link_place(n, buf, sizeof(buf));
	return !strcmp(buf, place);
}

/*
 * The ready link to @peer at @place: @prefer when it is one (a loop pair's
 * node stays; a tb end may come back under its old number), else the first
 * one /sys/class/tb5 lists. -1 when there is none.
 */
static int find_link(const char *peer, const char *place, int prefer)
{
	struct dirent *de;
	DIR *d;
	int n, best = -1;

	if (link_is(prefer, peer, place))
		return prefer;
	d = opendir(TB5K_SYSFS_CLASS);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char tail;

		if (sscanf(de->d_name, "tb5_%d%c", &n, &tail) != 1 || n < 0)
			continue;
		if (link_is(n, peer, place) && (best < 0 || n < best))
			best = n;
	}
	closedir(d);
	return best;
}

/*
 * The links of our backend besides ours that are ready, a mask: on a loop
 * pair those of the other pairs (not 2p, 2p + 1), on tb those of the
 * other cables.
 */
static uint64_t other_ready(int dev)
{
	uint64_t mask = 0;
	char buf[32];
	int n;

	for (n = 0; n < 64; n++)
		if ((u.backend == BACKEND_LOOP ? n / 2 != dev / 2 : n != dev) &&
		    backend_of(n) == u.backend &&
		    !tb5k_link_text(n, "state", buf, sizeof(buf)) &&
		    !strcmp(buf, "ready"))
			mask |= 1ull << n;
	return mask;
}

static void run_cmd(const char *name, const char *what, const char *cmd)
{
	int st;

	fflush(stdout);
	st = system(cmd);
	TB5K_CHECK(st != -1 && WIFEXITED(st) && !WEXITSTATUS(st), name,
		   "%s `%s` failed (status 0x%x)", what, cmd, st);
}

/*
 * Make the control connection on @c and agree: the same options, one side
 * of each, the same meeting, and host ids that match.
 */
static void meet(const char *name, struct tb5k_ctl *ctl, struct tb5k_ctx *c)
{
	uint64_t mine[8], peer[8];
	struct tb5_info info;
	char peer_ch = tb5k_side_ch(!u.me);

	tb5k_ctl_meet(name, ctl, c, u.me, SVC_CTRL, u.wait_s, 2 * WAIT2_MS);
	tb5k_get_info(c, &info);
	mine[0] = PROTO2;
	mine[1] = (uint64_t)u.me;
	mine[2] = (uint64_t)u.puller0;
	mine[3] = (uint64_t)u.rounds;
	mine[4] = u.big;
	mine[5] = (uint64_t)u.meets;
	mine[6] = info.local_host;
	mine[7] = info.peer_host;
	tb5k_ctl_barrier("hello", ctl, mine, 8, peer);
	TB5K_CHECK(peer[0] == PROTO2, name, "side %c speaks protocol %llu, we %u",
		   peer_ch, (unsigned long long)peer[0], PROTO2);
	TB5K_CHECK(peer[1] == (uint64_t)!u.me, name, "the peer is side %c too: "
		   "one side a and one side b, please", tb5k_side_ch(u.me));
	TB5K_CHECK(peer[2] == mine[2] && peer[3] == mine[3] &&
		   peer[4] == mine[4], name, "side %c runs --puller %c --rounds "
		   "%llu --big-mib %llu, we --puller %c --rounds %d --big-mib "
		   "%llu", peer_ch, tb5k_side_ch(peer[2] != 0),
		   (unsigned long long)peer[3],
		   (unsigned long long)(peer[4] / TB5K_MIB),
		   tb5k_side_ch(u.puller0), u.rounds,
		   (unsigned long long)(u.big / TB5K_MIB));
	TB5K_CHECK(peer[5] == mine[5], name, "side %c is at meeting %llu, we at "
		   "%d", peer_ch, (unsigned long long)peer[5], u.meets);
	TB5K_CHECK(peer[6] == info.peer_host && peer[7] == info.local_host, name,
		   "host ids: we are 0x%llx with peer 0x%llx, side %c says it is "
		   "0x%llx with peer 0x%llx", (unsigned long long)info.local_host,
		   (unsigned long long)info.peer_host, peer_ch,
		   (unsigned long long)peer[6], (unsigned long long)peer[7]);
	u.meets++;
}

/* A verified RT_LEN message each way on @ep; side a sends tag 5, b tag 6. */
static void round_trip2(const char *name, struct tb5k_ctx *c, uint32_t ep,
			uint64_t seed, const char *what)
{
	uint8_t *sb = tb5k_alloc(RT_LEN), *rb = tb5k_alloc(RT_LEN + 64);
	uint32_t h_s, h_r, tag_out = 5 + (uint32_t)u.me;
	uint32_t tag_in = 5 + (uint32_t)!u.me;
	struct tb5_cqe cqe;
	int64_t bad;
	int ret;

	tb5k_fill(sb, RT_LEN, seed + (uint64_t)u.me, 0);
	memset(rb, UNTOUCHED, RT_LEN + 64);
	h_s = tb5k_reg(c, sb, RT_LEN);
	h_r = tb5k_reg(c, rb, RT_LEN + 64);
	ret = tb5k_post1(c, TB5_OP_RECV, ep, h_r, tag_in, 0, RT_LEN, 0xe1);
	TB5K_CHECK(!ret, name, "%s: post recv: %s", what, tb5k_errname(ret));
	ret = tb5k_post1(c, TB5_OP_SEND, ep, h_s, tag_out, 0, RT_LEN, 0xe2);
	TB5K_CHECK(!ret, name, "%s: post send: %s", what, tb5k_errname(ret));
	TB5K_CHECK(tb5k_wait_user_data(c, 0xe1, &cqe, WAIT2_MS), name,
		   "%s: the receive did not complete within %d s", what,
		   WAIT2_MS / 1000);
	TB5K_CHECK(cqe.op == TB5_CQE_RECV && !cqe.status && cqe.bytes == RT_LEN &&
		   cqe.tag == tag_in && cqe.ep == ep, name, "%s: the receive: %s",
		   what, tb5k_cqe_str(&cqe));
	TB5K_CHECK(tb5k_wait_user_data(c, 0xe2, &cqe, WAIT2_MS), name,
		   "%s: the send did not complete within %d s", what,
		   WAIT2_MS / 1000);
	TB5K_CHECK(cqe.op == TB5_CQE_SEND && !cqe.status && cqe.bytes == RT_LEN &&
		   cqe.tag == tag_out && cqe.ep == ep, name, "%s: the send: %s",
		   what, tb5k_cqe_str(&cqe));
	bad = tb5k_verify(rb, RT_LEN, seed + (uint64_t)!u.me, 0);
	TB5K_CHECK(bad < 0, name, "%s: byte %lld of side %c's message differs",
		   what, (long long)bad, tb5k_side_ch(!u.me));
	TB5K_CHECK(tb5k_verify_byte(rb + RT_LEN, 64, UNTOUCHED) < 0, name,
		   "%s: bytes after the message were written", what);
	TB5K_CHECK(!tb5k_dereg(c, h_s) && !tb5k_dereg(c, h_r), name,
		   "%s: deregistering failed", what);
	tb5k_free(sb, RT_LEN);
	tb5k_free(rb, RT_LEN + 64);
}

/*
 * Take what is left on @c: only PEER_CLOSED of the endpoints in @eps
 * (closing both ends at once may or may not tell the other).
 */
static void drain(const char *name, struct tb5k_ctx *c, const uint32_t *eps,
		  int n)
{
	struct tb5_cqe cqe;
	int i;

	while (tb5k_next(c, &cqe, 200)) {
		for (i = 0; i < n; i++)
			if (cqe.ep == eps[i])
				break;
		TB5K_CHECK(i < n && cqe.op == TB5_CQE_EVENT &&
			   cqe.event == TB5_EVENT_PEER_CLOSED, name,
			   "unexpected on /dev/tb5_%d after closing: %s", c->index,
			   tb5k_cqe_str(&cqe));
	}
}

/*
 * One round: its puller receives the large message and pulls the cable.
 * *@cp is the open file of our end, with the control connection @ctl on
 * it; both are replaced by new ones on the link that came back.
 */
static void round2(int r, struct tb5k_ctx **cp, struct tb5k_ctx *spare,
		   struct tb5k_ctl *ctl)
{
	const uint64_t slen = 64 * 1024, guard = 8192;
	struct tb5k_ctx *c = *cp, *nc = spare;
	struct tb5k_ctl old_ctl = *ctl;
	int puller = (u.puller0 + r) % 2, pulling = u.me == puller;
	char name[32], peer_before[64], buf[64], other = tb5k_side_ch(!u.me);
	char place[256];
	uint64_t big = u.big, cookie = 0, rx0 = 0, t0, threshold, others;
	uint32_t listener = 0, ep, h_big, h_small, nl = 0, n_ep, s_ep = 0;
	uint8_t *bigbuf, *small;
	struct pend p[4];
	int np = 0, i, ret, events[2] = { 0, 0 }, big_ok = 0, dev = c->index;
	int wait_ms = pulling ? WAIT2_MS : MOVE_MS + WAIT2_MS;
	struct tb5_ep_query q;
	struct tb5_info info;
	struct tb5_cqe cqe;
	uint32_t ev_ep[2];

	snprintf(name, sizeof(name), "round%d", r);
	tb5k_note("%s: side %c pulls, /dev/tb5_%d", name, tb5k_side_ch(puller),
		  dev);
	TB5K_CHECK(!tb5k_link_text(dev, "peer_id", peer_before,
				   sizeof(peer_before)), name, "no peer_id");
	link_place(dev, place, sizeof(place));
	TB5K_CHECK(u.backend == BACKEND_LOOP || place[0], name, "tb5_%d sits on "
		   "no XDomain (no device link)", dev);
	others = other_ready(dev);

	/* The data connection: to the puller's listener, its cookie handed. */
	if (pulling)
		listener = tb5k_listen(name, c, SVC_DATA + (uint64_t)r, 0, &cookie);
	tb5k_ctl_barrier("listen", ctl, &cookie, 1, pulling ? NULL : &cookie);
	if (pulling) {
		ep = tb5k_accept_one(name, c, listener, WAIT2_MS, "the data "
				     "connection");
	} else {
		int64_t e = tb5k_connect_start(c, SVC_DATA + (uint64_t)r, cookie);

		TB5K_CHECK(e > 0, name, "TB5_IOC_CONNECT: %s",
			   tb5k_errname((int)e));
		ep = (uint32_t)e;
		tb5k_connect_wait(name, c, ep, WAIT2_MS, "the data connection");
	}

	/* Our half of the large message, and operations that can only wait. */
	bigbuf = tb5k_alloc(big + guard);
	small = tb5k_alloc(slen);
	memset(small, UNTOUCHED, slen);
	h_small = tb5k_reg(c, small, slen);
	if (pulling) {
		memset(bigbuf, UNTOUCHED, big + guard);
		h_big = tb5k_reg(c, bigbuf, big + guard);
		p[np++] = (struct pend){ 0, 0x100, 1, 0, 0 };
		ret = tb5k_post1(c, TB5_OP_RECV, ep, h_big, 1, 0, big, 0x100);
		TB5K_CHECK(!ret, name, "post the large receive: %s",
			   tb5k_errname(ret));
		p[np++] = (struct pend){ 0, 0x103, 0, 0, 0 };
		ret = tb5k_post1(c, TB5_OP_SEND, ep, h_small, 3, 0, slen, 0x103);
		TB5K_CHECK(!ret, name, "post a send: %s", tb5k_errname(ret));
		p[np++] = (struct pend){ 0, 0x104, 0, 0, 0 };
		ret = tb5k_post1(c, TB5_OP_RECV, ep, h_small, 4, 0, slen, 0x104);
		TB5K_CHECK(!ret, name, "post a receive: %s", tb5k_errname(ret));
	} else {
		tb5k_fill(bigbuf, big, 0xabc + (uint64_t)r, 0);
		h_big = tb5k_reg(c, bigbuf, big);
		p[np++] = (struct pend){ 0, 0x102, 0, 0, 0 };
		ret = tb5k_post1(c, TB5_OP_RECV, ep, h_small, 2, 0, slen, 0x102);
		TB5K_CHECK(!ret, name, "post a receive: %s", tb5k_errname(ret));
	}
	/* The large send last: the barrier's messages must not queue behind it. */
	tb5k_ctl_barrier("armed", ctl, NULL, 0, NULL);
	if (!pulling) {
		p[np++] = (struct pend){ 0, 0x101, 1, 0, 0 };
		ret = tb5k_post1(c, TB5_OP_SEND, ep, h_big, 1, 0, big, 0x101);
		TB5K_CHECK(!ret, name, "post the large send: %s",
			   tb5k_errname(ret));
	}

	/* The puller pulls once the message is moving. */
	if (pulling) {
		threshold = big / 16 < 2 * TB5K_MIB ? big / 16 : 2 * TB5K_MIB;
		rx0 = tb5k_link_u64(dev, "rx_bytes");
		t0 = tb5k_now_ms();
		while (tb5k_link_u64(dev, "rx_bytes") - rx0 < threshold) {
			if (tb5k_now_ms() - t0 >= MOVE_MS) {
				tb5k_note("%s: the large message did not move "
					  "%llu bytes within %d s; pulling anyway",
					  name, (unsigned long long)threshold,
					  MOVE_MS / 1000);
				break;
			}
			usleep(2000);
		}
		rx0 = tb5k_link_u64(dev, "rx_bytes") - rx0;
		run_cmd(name, "--pull-cmd", u.pull_cmd);
		tb5k_note("%s: ran `%s` after %llu bytes had arrived", name,
			  u.pull_cmd, (unsigned long long)rx0);
	}

	/* Every operation completes; both endpoints report the error. */
	ev_ep[0] = ctl->ep;
	ev_ep[1] = ep;
	for (;;) {
		int left = 0, k;

		for (i = 0; i < np; i++)
			left += !p[i].done;
		if (!left && events[0] && events[1])
			break;
		TB5K_CHECK(tb5k_next(c, &cqe, wait_ms), name, "%d operations and "
			   "%d endpoint events missing after %d s%s", left,
			   !events[0] + !events[1], wait_ms / 1000,
			   pulling ? " after the unplug" : ": no unplug came");
		if (cqe.op == TB5_CQE_EVENT) {
			for (k = 0; k < 2 && cqe.ep != ev_ep[k]; k++)
				;
			TB5K_CHECK(k < 2, name, "an event for an endpoint of no "
				   "connection: %s", tb5k_cqe_str(&cqe));
			TB5K_CHECK(cqe.event == TB5_EVENT_ERROR &&
				   cqe.status == -ENOLINK, name, "the %s endpoint "
				   "got %s, wanted ERROR -ENOLINK",
				   k ? "data" : "control", tb5k_cqe_str(&cqe));
			TB5K_CHECK(!events[k], name, "a second event on the %s "
				   "endpoint: %s", k ? "data" : "control",
				   tb5k_cqe_str(&cqe));
			events[k] = 1;
			continue;
		}
		for (i = 0; i < np; i++)
			if (p[i].user_data == cqe.user_data)
				break;
		TB5K_CHECK(i < np && !p[i].done, name, "an unexpected "
			   "completion: %s", tb5k_cqe_str(&cqe));
		TB5K_CHECK(cqe.ep == ep, name, "completion for another endpoint: "
			   "%s", tb5k_cqe_str(&cqe));
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
		tb5k_note("%s: our side of the large message finished before "
			  "the unplug", name);
	if (pulling) {
		/* A received message is whole; a cut one stayed inside. */
		if (p[0].status == 0)
			TB5K_CHECK(tb5k_verify(bigbuf, big, 0xabc + (uint64_t)r,
					       0) < 0, name, "the large message "
				   "completed but is corrupted");
		TB5K_CHECK(tb5k_verify_byte(bigbuf + big, guard, UNTOUCHED) < 0,
			   name, "bytes after the large receive buffer were "
			   "written");
	}
	TB5K_CHECK(tb5k_verify_byte(small, slen, UNTOUCHED) < 0, name,
		   "an unmatched receive's buffer was written");
	tb5k_pass("%s.pending-fail (side %c pulled: our %d operations "
		  "-ENOLINK%s, data and control endpoints ERROR -ENOLINK)",
		  name, tb5k_side_ch(puller), np, big_ok ?
		  " but the large one" : "");

	/* Down, as our open file and our end's sysfs say. */
	tb5k_get_info(c, &info);
	TB5K_CHECK(info.state == TB5_STATE_DOWN, name, "GET_INFO: state %u while "
		   "unplugged", info.state);
	for (i = 0; i < 2; i++) {
		ret = tb5k_ep_query(c, ev_ep[i], &q);
		TB5K_CHECK(!ret && q.state == TB5_EP_STATE_ERROR &&
			   q.error == -ENOLINK, name, "EP_QUERY of the %s "
			   "endpoint: %s, state %u, error %d", i ? "data" :
			   "control", tb5k_errname(ret), q.state, q.error);
	}
	ret = tb5k_post1(c, TB5_OP_RECV, ep, h_small, 9, 0, 1, 9);
	TB5K_CHECK(ret == -ENOLINK, name, "posting on the failed endpoint: %s, "
		   "wanted ENOLINK", tb5k_errname(ret));
	if (u.backend == BACKEND_LOOP) {
		TB5K_CHECK(!tb5k_wait_link_state(dev, "down", 5000), name,
			   "tb5_%d should read \"down\" while unplugged", dev);
		TB5K_CHECK(!tb5k_link_text(dev, "peer_id", buf, sizeof(buf)) &&
			   !strcmp(buf, "none"), name, "tb5_%d's peer_id reads "
			   "\"%s\" while unplugged", dev, buf);
		TB5K_CHECK(!tb5k_link_text(dev, "plugged", buf, sizeof(buf)) &&
			   !strcmp(buf, "0"), name, "tb5_%d's plugged reads "
			   "\"%s\"", dev, buf);
		TB5K_CHECK(other_ready(dev) == others, name, "other loop links "
			   "went down with ours (ready: 0x%llx, before 0x%llx)",
			   (unsigned long long)other_ready(dev),
			   (unsigned long long)others);
	} else {
		/* A tb end goes away with its cable; the open file keeps it. */
		t0 = tb5k_now_ms();
		while (link_present(dev)) {
			TB5K_CHECK(tb5k_now_ms() - t0 < GONE_MS, name, "tb5_%d "
				   "is still there %d s after the unplug (state "
				   "%s)", dev, GONE_MS / 1000,
				   tb5k_link_text(dev, "state", buf, sizeof(buf)) ?
				   "?" : buf);
			usleep(20000);
		}
		TB5K_CHECK(other_ready(dev) == others, name, "other tb links "
			   "went down with ours (ready: 0x%llx, before 0x%llx)",
			   (unsigned long long)other_ready(dev),
			   (unsigned long long)others);
	}
	ret = (int)tb5k_connect_start(c, SVC_DATA + (uint64_t)r, cookie);
	if (ret > 0) {
		/* Accepted for later: it must fail, not hang. */
		TB5K_CHECK(tb5k_wait_event(c, (uint32_t)ret, 0, &cqe, WAIT2_MS) &&
			   cqe.event == TB5_EVENT_ERROR && cqe.status < 0, name,
			   "a connect while unplugged did not fail");
		tb5k_ep_close(c, (uint32_t)ret);
		tb5k_note("%s: CONNECT while down returned 0, then %s", name,
			  tb5k_cqe_str(&cqe));
	} else {
		TB5K_CHECK(ret == -ENOLINK, name, "CONNECT while unplugged: %s, "
			   "wanted ENOLINK", tb5k_errname(ret));
	}
	tb5k_pass("%s.down (GET_INFO, EP_QUERY, post, connect; tb5_%d %s)", name,
		  dev, u.backend == BACKEND_LOOP ? "down, peer_id none, "
		  "plugged 0, the other pairs ready" : others ? "went away, the "
		  "other cables' links ready" : "went away");

	/* Plug back in; each side finds its link again, maybe renumbered. */
	if (pulling) {
		usleep(SETTLE_MS * 1000);
		run_cmd(name, "--plug-cmd", u.plug_cmd);
	}
	t0 = tb5k_now_ms();
	while ((ret = find_link(peer_before, place, dev)) < 0) {
		TB5K_CHECK(tb5k_now_ms() - t0 < BACK_MS, name, "no ready link to "
			   "peer %s%s%s %d s after %s", peer_before,
			   place[0] ? " on " : "", place, BACK_MS / 1000,
			   pulling ? "the plug" : "the unplug");
		usleep(50000);
	}
	tb5k_note("%s: /dev/tb5_%d ready again after %llu ms (was tb5_%d)%s%s",
		  name, ret, (unsigned long long)(tb5k_now_ms() - t0), dev,
		  place[0] ? " on " : "", place);
	tb5k_open(nc, ret, 1024);
	tb5k_get_info(nc, &info);
	TB5K_CHECK(info.state == TB5_STATE_READY && info.link_index ==
		   (uint32_t)ret, name, "GET_INFO on the new file: state %u, "
		   "link %u", info.state, info.link_index);
	meet(name, ctl, nc);

	/* The listener that stayed: reachable on a loop pair, gone on tb. */
	if (u.backend == BACKEND_LOOP) {
		if (pulling) {
			s_ep = tb5k_accept_one(name, c, listener, WAIT2_MS,
					       "the listener that stayed");
			round_trip2(name, c, s_ep, 0x5eed + (uint64_t)(2 * r),
				    "to the listener that stayed");
		} else {
			int64_t e = tb5k_connect_start(nc, SVC_DATA + (uint64_t)r,
						       cookie);

			TB5K_CHECK(e > 0, name, "TB5_IOC_CONNECT to the listener "
				   "that stayed: %s", tb5k_errname((int)e));
			s_ep = (uint32_t)e;
			tb5k_connect_wait(name, nc, s_ep, WAIT2_MS,
					  "to the listener that stayed");
			round_trip2(name, nc, s_ep, 0x5eed + (uint64_t)(2 * r),
				    "to the listener that stayed");
		}
	} else if (!pulling) {
		int64_t e = tb5k_connect_start(nc, SVC_DATA + (uint64_t)r, cookie);

		TB5K_CHECK(e > 0, name, "TB5_IOC_CONNECT: %s",
			   tb5k_errname((int)e));
		TB5K_CHECK(tb5k_wait_event(nc, (uint32_t)e, 0, &cqe, WAIT2_MS) &&
			   cqe.event == TB5_EVENT_ERROR &&
			   cqe.status == -ECONNREFUSED, name, "a connect to the "
			   "listener of side %c's old end: %s, wanted refused",
			   other, tb5k_cqe_str(&cqe));
		TB5K_CHECK(!tb5k_ep_close(nc, (uint32_t)e), name,
			   "closing the refused endpoint");
	}
	tb5k_ctl_barrier("stayed", ctl, NULL, 0, NULL);
	if (u.backend == BACKEND_TB && pulling)
		TB5K_CHECK(!tb5k_next(c, &cqe, 100), name, "the old end's "
			   "listener heard something: %s", tb5k_cqe_str(&cqe));

	/* A new listener, the other side's, on the new file. */
	cookie = 0;
	if (!pulling)
		nl = tb5k_listen(name, nc, SVC_NEW + (uint64_t)r, 0, &cookie);
	tb5k_ctl_barrier("new", ctl, &cookie, 1, pulling ? &cookie : NULL);
	if (pulling) {
		int64_t e = tb5k_connect_start(nc, SVC_NEW + (uint64_t)r, cookie);

		TB5K_CHECK(e > 0, name, "TB5_IOC_CONNECT to the new listener: %s",
			   tb5k_errname((int)e));
		n_ep = (uint32_t)e;
		tb5k_connect_wait(name, nc, n_ep, WAIT2_MS, "the new connection");
	} else {
		n_ep = tb5k_accept_one(name, nc, nl, WAIT2_MS,
				       "the new connection");
	}
	round_trip2(name, nc, n_ep, 0x5eed + (uint64_t)(2 * r + 1),
		    "a new connection");

	/* Both are done with the connections: close them, in step. */
	tb5k_ctl_barrier("verified", ctl, NULL, 0, NULL);
	TB5K_CHECK(!tb5k_ep_close(nc, n_ep), name, "closing the new connection");
	if (nl)
		TB5K_CHECK(!tb5k_ep_close(nc, nl), name, "closing the new "
			   "listener");
	if (s_ep)
		TB5K_CHECK(!tb5k_ep_close(pulling ? c : nc, s_ep), name,
			   "closing the connection to the listener that stayed");
	tb5k_ctl_barrier("closed", ctl, NULL, 0, NULL);
	{
		/* Endpoint numbers are per file: each drains its own. */
		uint32_t eps[2] = { n_ep, pulling ? 0 : s_ep };

		drain(name, nc, eps, 2);
		eps[0] = pulling ? s_ep : 0;
		drain(name, c, eps, 1);
	}

	/* The old file: failed endpoints close quietly, regions free again. */
	TB5K_CHECK(!tb5k_ep_close(c, ep) && !tb5k_ep_close(c, old_ctl.ep), name,
		   "closing the failed endpoints of the old file");
	if (listener)
		TB5K_CHECK(!tb5k_ep_close(c, listener), name, "closing the "
			   "listener of the old file");
	TB5K_CHECK(!tb5k_dereg(c, h_big) && !tb5k_dereg(c, h_small), name,
		   "deregistering on the old file failed");
	tb5k_ctl_release(name, &old_ctl);
	TB5K_CHECK(!tb5k_next(c, &cqe, 100), name, "an unexpected completion on "
		   "the old file: %s", tb5k_cqe_str(&cqe));
	tb5k_close(c);
	tb5k_free(bigbuf, big + guard);
	tb5k_free(small, slen);
	*cp = nc;
	tb5k_pass("%s.replug (/dev/tb5_%d ready to the same peer, met again; "
		  "%s; a new connection carries 1 MiB each way)", name,
		  nc->index, u.backend == BACKEND_LOOP ? "the listener that "
		  "stayed carries 1 MiB each way" : "the old end's listener "
		  "is gone: refused");
}

/*
 * End in step. Side b closes its end of a last connection once its last
 * barrier is over (its control send done); side a, seeing that and being
 * past the barrier itself, closes the control connection, and b closes
 * its end after a's: nobody closes under the other's send.
 */
static void finish2(struct tb5k_ctx *c, struct tb5k_ctl *ctl)
{
	const char *name = "end";
	uint64_t cookie = 0;
	struct tb5_cqe cqe;
	uint32_t l = 0, ep;

	if (u.me == 0)
		l = tb5k_listen(name, c, SVC_FIN, 0, &cookie);
	tb5k_ctl_barrier("end", ctl, &cookie, 1, u.me ? &cookie : NULL);
	if (u.me == 0) {
		ep = tb5k_accept_one(name, c, l, WAIT2_MS, "the last connection");
		TB5K_CHECK(tb5k_wait_event(c, ep, 0, &cqe, 2 * WAIT2_MS), name,
			   "side b did not close its last endpoint");
		TB5K_CHECK(cqe.event == TB5_EVENT_PEER_CLOSED, name, "the last "
			   "connection: %s, wanted PEER_CLOSED",
			   tb5k_cqe_str(&cqe));
		TB5K_CHECK(!tb5k_ep_close(c, ep) && !tb5k_ep_close(c, l) &&
			   !tb5k_ep_close(c, ctl->ep), name, "closing at the end");
	} else {
		int64_t e = tb5k_connect_start(c, SVC_FIN, cookie);

		TB5K_CHECK(e > 0, name, "TB5_IOC_CONNECT: %s",
			   tb5k_errname((int)e));
		tb5k_connect_wait(name, c, (uint32_t)e, WAIT2_MS,
				  "the last connection");
		TB5K_CHECK(!tb5k_ep_close(c, (uint32_t)e), name, "closing the "
			   "last connection");
		TB5K_CHECK(tb5k_wait_event(c, ctl->ep, 0, &cqe, 2 * WAIT2_MS),
			   name, "side a did not close the control connection");
		TB5K_CHECK(cqe.event == TB5_EVENT_PEER_CLOSED, name, "the control "
			   "connection: %s, wanted PEER_CLOSED",
			   tb5k_cqe_str(&cqe));
		TB5K_CHECK(!tb5k_ep_close(c, ctl->ep), name, "closing the "
			   "control connection");
	}
	tb5k_ctl_release(name, ctl);
	TB5K_CHECK(!tb5k_next(c, &cqe, 100), name, "unexpected at the end: %s",
		   tb5k_cqe_str(&cqe));
	tb5k_close(c);
	tb5k_pass("end (%u barriers on the last control connection; side %c is "
		  "done too)", ctl->step, tb5k_side_ch(!u.me));
}

static int run2(int dev)
{
	static struct tb5k_ctx ctxs[2];
	struct tb5k_ctx *c = &ctxs[0];
	struct tb5k_ctl ctl;
	uint64_t lck0;
	int r;

	lck0 = tb5k_vmlck_kib();
	u.backend = backend_of(dev);
	TB5K_CHECK(u.backend > 0, "setup", "tb5_%d: no backend we know (%s)",
		   dev, u.backend ? "neither loop nor tb" : "no such link");
	tb5k_note("side %c on /dev/tb5_%d (%s), round 0 pulled by side %c, %d "
		  "rounds, %llu MiB", tb5k_side_ch(u.me), dev,
		  u.backend == BACKEND_LOOP ? "loop pair" : "tb",
		  tb5k_side_ch(u.puller0), u.rounds,
		  (unsigned long long)(u.big / TB5K_MIB));
	TB5K_CHECK(!tb5k_wait_link_state(dev, "ready",
					 (unsigned int)u.wait_s * 1000),
		   "setup", "tb5_%d is not ready after %d s", dev, u.wait_s);
	tb5k_open(c, dev, 1024);
	meet("connect", &ctl, c);
	tb5k_pass("connect (side %c on /dev/tb5_%d: met side %c)",
		  tb5k_side_ch(u.me), dev, tb5k_side_ch(!u.me));
	for (r = 0; r < u.rounds; r++)
		round2(r, &c, c == &ctxs[0] ? &ctxs[1] : &ctxs[0], &ctl);
	finish2(c, &ctl);

	/* pinned_pages counts the peer's too where it is on this host. */
	tb5k_check_vmlck_back(lck0);
	return 0;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [--big-mib N]\n"
		"       %s --side a|b --dev /dev/tb5_N --puller a|b --pull-cmd CMD "
		"--plug-cmd CMD [--big-mib N] [--rounds R] [--connect-s N]\n",
		prog, prog);
	exit(2);
}

static int side_arg(const char *s)
{
	if (!strcmp(s, "a"))
		return 0;
	if (!strcmp(s, "b"))
		return 1;
	return -1;
}

int main(int argc, char **argv)
{
	uint64_t big = 64 * TB5K_MIB, pinned0;
	int i, two = 0, dev = -1;

	u.me = -1;
	u.puller0 = -1;
	u.rounds = 2;
	u.wait_s = 120;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--big-mib") && i + 1 < argc) {
			big = strtoull(argv[++i], NULL, 0) * TB5K_MIB;
			continue;
		}
		two = 1;
		if (!strcmp(argv[i], "--side") && i + 1 < argc) {
			u.me = side_arg(argv[++i]);
		} else if (!strcmp(argv[i], "--puller") && i + 1 < argc) {
			u.puller0 = side_arg(argv[++i]);
		} else if (!strcmp(argv[i], "--dev") && i + 1 < argc) {
			char tail;

			if (sscanf(argv[++i], "/dev/tb5_%d%c", &dev, &tail) != 1)
				dev = -1;
		} else if (!strcmp(argv[i], "--pull-cmd") && i + 1 < argc) {
			u.pull_cmd = argv[++i];
		} else if (!strcmp(argv[i], "--plug-cmd") && i + 1 < argc) {
			u.plug_cmd = argv[++i];
		} else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
			u.rounds = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--connect-s") && i + 1 < argc) {
			u.wait_s = atoi(argv[++i]);
		} else {
			usage(argv[0]);
		}
	}
	if (big < TB5K_MIB)
		big = TB5K_MIB;
	if (two) {
		/* Two processes, one per end: every option but the sizes. */
		if (u.me < 0 || u.puller0 < 0 || dev < 0 || !u.pull_cmd ||
		    !u.plug_cmd || u.rounds < 1 || u.wait_s < 1)
			usage(argv[0]);
		u.big = big;
		tb5k_init(u.me ? "unplug-b" : "unplug-a",
			  600 + 900 * (unsigned int)u.rounds +
			  2 * (unsigned int)u.wait_s);
		return run2(dev);
	}
	tb5k_init("unplug", 900);
	pinned0 = tb5k_pinned_pages();
	tb5k_open(&ctx[0], 0, 1024);
	tb5k_open(&ctx[1], 1, 1024);
	one_round(0, big);
	one_round(1, big / 2);
	tb5k_close(&ctx[0]);
	tb5k_close(&ctx[1]);
	tb5k_check_pinned_back(pinned0);
	return 0;
}
