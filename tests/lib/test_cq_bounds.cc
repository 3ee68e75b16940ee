// SPDX-License-Identifier: MIT
//
// test_cq_bounds.cc - a program that fills the completion queue gets the
// same error from both backends. The queue of a device is bounded (the
// kernel module's size, TB5_CQ_ENTRIES); every operation and endpoint
// reserves the entries it may produce when it is accepted, and work that
// finds none left is refused with -ENOSPC until the program polls.
//
// Written against the public C API only, over a loop pair: by default the
// simulator's, with TB5_TEST_BACKEND=kernel the tb5 module's (tb5.ko loaded
// with loopback=1 or more), unchanged: both pass it with the same counts. The numbers below follow from the
// rules both backends share (dkms/core/tb5_ctxrules.h): a queue of 64
// entries, 2 promised to each connection for its events, 1 to a listener.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lib_harness.hpp"

namespace {

using namespace tb5libtest;

constexpr uint32_t kEntries = 64;	// the smallest queue both take
constexpr uint32_t kConnCredits = 2;	// a connection's events
constexpr uint32_t kMsg = 64;		// bytes per operation

class CqBounds : public ::testing::Test {
protected:
	void SetUp() override
	{
		setenv("TB5_CQ_ENTRIES", std::to_string(kEntries).c_str(), 1);
		ASSERT_TRUE(find_loop_pair(na, nb)) << tb5_last_error();
		ASSERT_EQ(a.open(na), 0) << tb5_last_error();
		ASSERT_EQ(b.open(nb), 0) << tb5_last_error();
		buf.assign(size_t(kEntries) * kMsg * 2, 0);
		ASSERT_EQ(tb5_reg_host(a.dev, buf.data(), buf.size(), &amr), 0)
			<< tb5_last_error();
		ASSERT_EQ(tb5_reg_host(b.dev, buf.data(), buf.size(), &bmr), 0)
			<< tb5_last_error();
	}
	void TearDown() override { unsetenv("TB5_CQ_ENTRIES"); }

	// @n receives on @ep (of @d, region @mr) in one call; what tb5_post
	// returned, with *posted how many went in.
	int post_recvs(Dev &d, tb5_endpoint *ep, tb5_mr *mr, uint32_t n,
		       size_t *posted, uint32_t first_tag = 0)
	{
		std::vector<tb5_op> ops(n);

		for (uint32_t i = 0; i < n; i++) {
			ops[i] = {};
			ops[i].kind = TB5_POST_RECV;
			ops[i].tag = first_tag + i;
			ops[i].ep = ep;
			ops[i].mr = mr;
			ops[i].offset = uint64_t(i % kEntries) * kMsg;
			ops[i].len = kMsg;
			ops[i].user_data = 1000 + i;
		}
		return tb5_post(d.dev, ops.data(), n, posted);
	}
	// Listeners on @d for services @first.. until one is refused; how
	// many were made, with *err the refusal.
	uint32_t fill_with_listeners(Dev &d, uint64_t first, int *err)
	{
		for (uint32_t i = 0;; i++) {
			tb5_endpoint *l = nullptr;
			int ret = tb5_endpoint_listen(d.dev, first + i, 0, 0, &l);

			if (ret || i > 2 * kEntries) {
				*err = ret;
				return i;
			}
			fillers.push_back(l);
		}
	}

	std::string na, nb;
	Dev a, b;
	Conn c;
	std::vector<uint8_t> buf;
	tb5_mr *amr = nullptr, *bmr = nullptr;
	std::vector<tb5_endpoint *> fillers;
};

TEST_F(CqBounds, PostingIntoAFullQueueFailsWithENOSPC)
{
	ASSERT_TRUE(connect_pair(a, b, 0x2800, c));
	// b holds the client: its CONNECTED was polled, one credit is left
	// for a later event. 63 receives fit; the 64th finds no entry.
	const uint32_t fit = kEntries - (kConnCredits - 1);
	size_t posted = 0;
	int ret = post_recvs(b, c.client, bmr, fit + 1, &posted);

	EXPECT_EQ(ret, -ENOSPC) << tb5_strerror(ret) << ": " << tb5_last_error();
	EXPECT_EQ(posted, size_t(fit));
	EXPECT_NE(strstr(tb5_last_error(), "completion queue"), nullptr)
		<< tb5_last_error();
	// Receives have slots left (TB5_EP_MAX_OPS each side): not -EAGAIN.
	EXPECT_EQ(tb5_recv(c.client, bmr, 0, kMsg, 999, 999), -ENOSPC);
	// Polling an empty queue frees nothing.
	b.poll();
	EXPECT_TRUE(b.wcs.empty());
	EXPECT_EQ(tb5_recv(c.client, bmr, 0, kMsg, 999, 999), -ENOSPC);
}

TEST_F(CqBounds, ACompletionFreesItsEntryOnlyOnceItIsPolled)
{
	ASSERT_TRUE(connect_pair(a, b, 0x2801, c));
	const uint32_t fit = kEntries - (kConnCredits - 1);
	size_t posted = 0;

	ASSERT_EQ(post_recvs(b, c.client, bmr, fit, &posted), 0)
		<< tb5_last_error();
	ASSERT_EQ(tb5_send(c.server, amr, 0, kMsg, 0, 7), 0) << tb5_last_error();
	// The receive completes into b's queue: it still fills it.
	auto sent = await(a, [](const tb5_wc &w) { return w.kind == TB5_WC_SEND; });

	ASSERT_TRUE(sent);
	EXPECT_EQ(sent->status, 0);
	EXPECT_EQ(tb5_recv(c.client, bmr, 0, kMsg, 999, 999), -ENOSPC);
	// Polled: one entry is free again, and only one.
	auto rcv = await(b, [](const tb5_wc &w) { return w.kind == TB5_WC_RECV; });

	ASSERT_TRUE(rcv);
	EXPECT_EQ(rcv->status, 0);
	EXPECT_EQ(rcv->user_data, 1000u);
	EXPECT_EQ(tb5_recv(c.client, bmr, 0, kMsg, 999, 999), 0) << tb5_last_error();
	EXPECT_EQ(tb5_recv(c.client, bmr, 0, kMsg, 998, 998), -ENOSPC);
}

TEST_F(CqBounds, EndpointsAreRefusedWhenTheirEventsCannotBePromised)
{
	int err = 0;
	// A listener promises one entry: 64 fill the queue.
	uint32_t made = fill_with_listeners(a, 0x10000, &err);

	EXPECT_EQ(made, kEntries);
	EXPECT_EQ(err, -ENOSPC) << tb5_strerror(err);
	tb5_endpoint *ep = nullptr;
	tb5_address addr = {};

	// A connection promises two.
	addr.service = 0x2802;
	EXPECT_EQ(tb5_endpoint_connect(a.dev, &addr, 0, &ep), -ENOSPC);
	ASSERT_EQ(tb5_endpoint_close(fillers.back()), 0);
	fillers.pop_back();
	EXPECT_EQ(tb5_endpoint_connect(a.dev, &addr, 0, &ep), -ENOSPC)
		<< "one entry free, two wanted";
	// Closing gives an endpoint's entries back once it is gone.
	ASSERT_EQ(tb5_endpoint_close(fillers.back()), 0);
	fillers.pop_back();
	int ret = -1;

	ASSERT_TRUE(poll_until({ &a, &b }, [&] {
		ret = tb5_endpoint_listen(a.dev, 0x2803, 0, 0, &ep);
		return ret != -ENOSPC;
	}, 5)) << tb5_last_error();
	EXPECT_EQ(ret, 0) << tb5_last_error();
}

TEST_F(CqBounds, AcceptIsRefusedWithENOSPCAndTheConnectionWaits)
{
	tb5_address addr;
	int err = 0;

	ASSERT_EQ(tb5_endpoint_listen(a.dev, 0x2804, 0, 5, &c.listener), 0);
	ASSERT_EQ(tb5_endpoint_address(c.listener, &addr), 0);
	ASSERT_EQ(tb5_endpoint_connect(b.dev, &addr, 6, &c.client), 0)
		<< tb5_last_error();
	ASSERT_TRUE(await(a, [](const tb5_wc &w) {
		return w.kind == TB5_WC_EVENT && w.event == TB5_WC_INCOMING;
	}, { &b }));
	// The INCOMING was polled: the listener holds nothing now. Fill.
	EXPECT_EQ(fill_with_listeners(a, 0x20000, &err), kEntries);
	EXPECT_EQ(err, -ENOSPC);
	tb5_endpoint *srv = nullptr;

	EXPECT_EQ(tb5_endpoint_accept(c.listener, 7, &srv), -ENOSPC)
		<< "full, not -EAGAIN: a connection waits";
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(tb5_endpoint_close(fillers.back()), 0);
		fillers.pop_back();
	}
	int ret = -1;

	ASSERT_TRUE(poll_until({ &a, &b }, [&] {
		ret = tb5_endpoint_accept(c.listener, 7, &srv);
		return ret != -ENOSPC;
	}, 5));
	EXPECT_EQ(ret, 0) << tb5_last_error();
	auto up = await(b, [](const tb5_wc &w) { return w.kind == TB5_WC_EVENT; },
			{ &a });
	ASSERT_TRUE(up);
	EXPECT_EQ(up->event, TB5_WC_CONNECTED);
}

// The entries of an endpoint closed while they wait are not the program's
// any more (tb5_poll() never returns them) but keep their places in the
// queue until it is polled past them.
TEST_F(CqBounds, AClosedEndpointsEntriesHoldTheQueueUntilPolled)
{
	ASSERT_TRUE(connect_pair(a, b, 0x2805, c));
	const uint32_t fit = kEntries - (kConnCredits - 1);
	size_t posted = 0;

	ASSERT_EQ(post_recvs(b, c.client, bmr, fit, &posted), 0)
		<< tb5_last_error();
	// Closing cancels the receives: each completes into the queue.
	ASSERT_EQ(tb5_endpoint_close(c.client), 0);
	tb5_endpoint *ep = nullptr;
	tb5_address addr = {};

	addr.service = 0x2806;
	EXPECT_EQ(tb5_endpoint_connect(b.dev, &addr, 0, &ep), -ENOSPC)
		<< "the cancelled receives' entries are not free yet";
	b.poll();
	for (const tb5_wc &w : b.wcs)
		EXPECT_NE(w.ep, c.client) << "a closed endpoint's completion";
	int ret = -1;

	ASSERT_TRUE(poll_until({ &a, &b }, [&] {
		ret = tb5_endpoint_listen(b.dev, 0x2807, 0, 0, &ep);
		return ret != -ENOSPC;
	}, 5));
	EXPECT_EQ(ret, 0) << tb5_last_error();
}

TEST_F(CqBounds, AQueueSizeNeitherBackendTakesIsRefusedAtOpen)
{
	for (const char *bad : { "100", "32", "131072", "0", "junk" }) {
		Dev d;

		setenv("TB5_CQ_ENTRIES", bad, 1);
		EXPECT_EQ(d.open(na), -EINVAL) << "TB5_CQ_ENTRIES=" << bad;
		d.dev = nullptr;
	}
	for (const char *good : { "64", "65536" }) {
		Dev d;

		setenv("TB5_CQ_ENTRIES", good, 1);
		EXPECT_EQ(d.open(na), 0) << "TB5_CQ_ENTRIES=" << good << ": "
					 << tb5_last_error();
	}
}

} // namespace

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	// The simulator's loop pair; with TB5_TEST_BACKEND=kernel, none:
	// tb5.ko's first loop pair (lib_harness decides).
	tb5libtest::use_simulator("tb5test-cqbounds", "hosts=1,loop=1,ring=256");
	return RUN_ALL_TESTS();
}
