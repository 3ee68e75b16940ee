// SPDX-License-Identifier: MIT
//
// test_messages.cc - data moves intact: sizes around the frame size, odd
// sizes and 64 MiB in both directions; many endpoints at once; the limit on
// outstanding operations; matching by tag.
#include <gtest/gtest.h>

#include <memory>
#include <tuple>
#include <vector>

#include "message.hpp"
#include "pattern.hpp"
#include "two_node.hpp"

namespace {

using tb5test::Ep;
using tb5test::Message;
using tb5test::TwoNode;

// --- every byte of one message each way, by size and ring size ------------

class DataIntegrity
	: public ::testing::TestWithParam<std::tuple<uint64_t, uint32_t>> {};

TEST_P(DataIntegrity, BothDirectionsAtOnce)
{
	const auto [size, ring] = GetParam();
	TwoNode h(ring);

	ASSERT_TRUE(h.bring_up());
	auto c = h.connect_pair(1);
	ASSERT_TRUE(c.client && c.server);
	// Different seeds and tags each way: crossed wires cannot pass.
	Message fwd(size, 0x1000 + size, 0xf00d, 1);
	Message back(size, 0x2000 + size, 0xbeef, 2);
	ASSERT_TRUE(fwd.post(h, c.client, c.server));
	ASSERT_TRUE(back.post(h, c.server, c.client));
	ASSERT_TRUE(h.run_until([&] {
		return fwd.done(h, c.client, c.server) &&
		       back.done(h, c.server, c.client);
	}));
	EXPECT_TRUE(fwd.delivered(h, c.client, c.server));
	EXPECT_TRUE(back.delivered(h, c.server, c.client));
	EXPECT_EQ(h.bytes_copied(1), size);
	EXPECT_EQ(h.bytes_copied(0), size);
	// Nothing else arrived.
	EXPECT_EQ(h.cq(c.client).size(), 2u);
	EXPECT_EQ(h.cq(c.server).size(), 2u);
}

constexpr uint64_t kSizes[] = {
	0, 1, 4095, 4096, 4097,		// around one frame
	2 * 4096 - 1, 16 * 4096,	// a default burst; + 1 is 65537 below
	12345, 65537, 1000003,		// odd
	64ull << 20,			// 64 MiB
};

std::string size_ring_name(
	const ::testing::TestParamInfo<std::tuple<uint64_t, uint32_t>> &p)
{
	return "bytes" + std::to_string(std::get<0>(p.param)) + "_ring" +
	       std::to_string(std::get<1>(p.param));
}

INSTANTIATE_TEST_SUITE_P(Sizes, DataIntegrity,
			 ::testing::Combine(::testing::ValuesIn(kSizes),
					    ::testing::Values(64u, 4096u)),
			 size_ring_name);

// --- receive buffers larger than the message ------------------------------

TEST(Messages, ReceiveLargerThanMessageGetsMessageSize)
{
	TwoNode h;

	ASSERT_TRUE(h.bring_up());
	auto c = h.connect_pair(1);
	ASSERT_TRUE(c.client && c.server);
	for (uint64_t len : {0ull, 1ull, 4096ull, 7777ull}) {
		Message m(len, 77 + len, 4, len, 10000);

		ASSERT_TRUE(m.post(h, c.client, c.server));
		h.run();
		// delivered() also checks that the bytes past @len kept their fill.
		EXPECT_TRUE(m.delivered(h, c.client, c.server));
	}
}

TEST(Messages, SendBeforeReceiveWaitsForTheGrant)
{
	TwoNode h;

	ASSERT_TRUE(h.bring_up());
	auto c = h.connect_pair(1);
	ASSERT_TRUE(c.client && c.server);
	Message m(100000, 5, 1, 1);
	ASSERT_EQ(h.post_send(c.client, m.src.data(), m.len, m.tag, m.user_id), 0);
	h.run();
	EXPECT_TRUE(h.cq(c.client).empty()) << "send completed with no receive posted";
	EXPECT_EQ(h.bytes_copied(1), 0u);
	ASSERT_EQ(h.post_recv(c.server, m.dst.data(), m.len, m.tag, m.user_id), 0);
	h.run();
	EXPECT_TRUE(m.delivered(h, c.client, c.server));
}

// --- many endpoints on one link at the same time --------------------------

TEST(Messages, InterleavedEndpoints)
{
	constexpr int kPairs = 8;
	constexpr int kPerDir = 3;
	TwoNode h(256);
	std::vector<TwoNode::Conn> conns;
	std::vector<std::unique_ptr<Message>> msgs;

	ASSERT_TRUE(h.bring_up());
	for (int p = 0; p < kPairs; p++) {
		// Half the pairs on one service, half on others; some listen on end 0.
		conns.push_back(h.connect_pair(p < 4 ? 42 : 42 + p, p % 3 == 0 ? 1 : 0));
		ASSERT_TRUE(conns.back().client && conns.back().server);
	}
	// Everything posted before anything moves, so bursts of all 8 pairs
	// share the rings.
	for (int p = 0; p < kPairs; p++) {
		for (int j = 0; j < 2 * kPerDir; j++) {
			const bool fwd = j < kPerDir;
			const uint64_t len = 150000 + 40961 * p + 4099 * j;
			auto m = std::make_unique<Message>(len, p * 100 + j, j, p * 100 + j);
			Ep *from = fwd ? conns[p].client : conns[p].server;
			Ep *to = fwd ? conns[p].server : conns[p].client;

			ASSERT_TRUE(m->post(h, from, to));
			msgs.push_back(std::move(m));
		}
	}
	h.run();
	for (int p = 0; p < kPairs; p++) {
		for (int j = 0; j < 2 * kPerDir; j++) {
			const bool fwd = j < kPerDir;
			Ep *from = fwd ? conns[p].client : conns[p].server;
			Ep *to = fwd ? conns[p].server : conns[p].client;

			EXPECT_TRUE(msgs[p * 2 * kPerDir + j]->delivered(h, from, to))
				<< "pair " << p << " message " << j;
		}
	}
}

// While one endpoint streams a large message, a small message on another
// endpoint gets through before the large one ends (bursts interleave).
TEST(Messages, SmallMessageOvertakesLargeOneOnAnotherEndpoint)
{
	TwoNode h(64);

	ASSERT_TRUE(h.bring_up());
	auto big = h.connect_pair(1);
	auto small = h.connect_pair(2);
	ASSERT_TRUE(big.client && small.client);
	Message b(16 << 20, 1, 1, 1);
	ASSERT_TRUE(b.post(h, big.client, big.server));
	// Let the big one get going.
	ASSERT_TRUE(h.run_until([&] { return h.bytes_copied(1) > (1 << 20); }));
	Message s(100, 2, 1, 2);
	ASSERT_TRUE(s.post(h, small.client, small.server));
	ASSERT_TRUE(h.run_until([&] { return s.done(h, small.client, small.server); }));
	EXPECT_TRUE(s.delivered(h, small.client, small.server));
	EXPECT_FALSE(b.done(h, big.client, big.server))
		<< "the small message waited for all 16 MiB";
	h.run();
	EXPECT_TRUE(b.delivered(h, big.client, big.server));
}

// --- outstanding operations -------------------------------------------------

TEST(Messages, ThirtyTwoOutstandingEachWayPerEndpoint)
{
	constexpr int kOps = 32;
	TwoNode h(256);
	std::vector<std::unique_ptr<Message>> fwd, back;

	ASSERT_TRUE(h.bring_up());
	auto c = h.connect_pair(1);
	ASSERT_TRUE(c.client && c.server);
	for (int i = 0; i < kOps; i++) {
		fwd.push_back(std::make_unique<Message>(1000 + 5171 * i, 1000 + i, i, i));
		back.push_back(std::make_unique<Message>(333 + 7919 * i, 2000 + i,
							 100 + i, 100 + i));
		ASSERT_TRUE(fwd.back()->post(h, c.client, c.server));
		ASSERT_TRUE(back.back()->post(h, c.server, c.client));
	}
	h.run();
	for (int i = 0; i < kOps; i++) {
		EXPECT_TRUE(fwd[i]->delivered(h, c.client, c.server)) << i;
		EXPECT_TRUE(back[i]->delivered(h, c.server, c.client)) << i;
	}
}

TEST(Messages, MaxOpsAcceptedOneMoreRefused)
{
	constexpr int kMax = TB5_EP_MAX_OPS;
	TwoNode h(256);
	std::vector<std::unique_ptr<Message>> msgs;

	ASSERT_TRUE(h.bring_up());
	auto c = h.connect_pair(1);
	ASSERT_TRUE(c.client && c.server);
	// 64 sends first (no grants yet: they all wait), then 64 receives.
	for (int i = 0; i < kMax; i++) {
		msgs.push_back(std::make_unique<Message>(100 + i, i, 7, i));
		ASSERT_EQ(h.post_send(c.client, msgs[i]->src.data(), msgs[i]->len, 7, i), 0)
			<< "send " << i;
	}
	Message extra(10, 999, 7, 999);
	EXPECT_EQ(h.post_send(c.client, extra.src.data(), extra.len, 7, 999), -EAGAIN);
	for (int i = 0; i < kMax; i++)
		ASSERT_EQ(h.post_recv(c.server, msgs[i]->dst.data(), msgs[i]->len, 7, i), 0)
			<< "recv " << i;
	EXPECT_EQ(h.post_recv(c.server, extra.dst.data(), extra.len, 7, 999), -EAGAIN);
	// The limit counts per direction: the other side of each endpoint is free.
	char tiny[4];
	EXPECT_EQ(h.post_recv(c.client, tiny, sizeof(tiny), 8, 1000), 0);

	h.run();
	// Same tag throughout: they pair up in posting order (tb5_msg.c).
	for (int i = 0; i < kMax; i++)
		EXPECT_TRUE(msgs[i]->delivered(h, c.client, c.server)) << i;
	// With the slots free again, the 65th goes through.
	ASSERT_TRUE(extra.post(h, c.client, c.server));
	h.run();
	EXPECT_TRUE(extra.delivered(h, c.client, c.server));
}

TEST(Messages, TooLargeIsRefusedAtPost)
{
	TwoNode h;
	char buf[1];

	ASSERT_TRUE(h.bring_up());
	auto c = h.connect_pair(1);
	ASSERT_TRUE(c.client && c.server);
	// Refused before any byte is touched, so a 1-byte buffer is safe.
	EXPECT_EQ(h.post_send(c.client, buf, TB5_MSG_MAX + 1, 0, 1), -EMSGSIZE);
	EXPECT_EQ(h.post_recv(c.server, buf, TB5_MSG_MAX + 1, 0, 1), -EMSGSIZE);
	EXPECT_EQ(h.post_send(c.client, buf, ~0ull, 0, 2), -EMSGSIZE);
}

// --- tag matching -------------------------------------------------------------

TEST(Messages, SendsMatchReceivesByTag)
{
	TwoNode h;

	ASSERT_TRUE(h.bring_up());
	auto c = h.connect_pair(1);
	ASSERT_TRUE(c.client && c.server);
	// Same size, so a mismatch would land silently: the seeds tell.
	Message a(30000, 0xa, 0xa, 1), b(30000, 0xb, 0xb, 2);
	ASSERT_EQ(h.post_recv(c.server, a.dst.data(), a.len, a.tag, a.user_id), 0);
	ASSERT_EQ(h.post_recv(c.server, b.dst.data(), b.len, b.tag, b.user_id), 0);
	h.run();	// both grants reach the sender before either send
	ASSERT_EQ(h.post_send(c.client, b.src.data(), b.len, b.tag, b.user_id), 0);
	ASSERT_EQ(h.post_send(c.client, a.src.data(), a.len, a.tag, a.user_id), 0);
	h.run();
	EXPECT_TRUE(a.delivered(h, c.client, c.server));
	EXPECT_TRUE(b.delivered(h, c.client, c.server));
	// The receive with tag B, posted second, completed first.
	ASSERT_EQ(h.cq(c.server).size(), 2u);
	EXPECT_EQ(h.cq(c.server)[0].tag, 0xbu);
}

TEST(Messages, SendsWaitForTheirOwnTag)
{
	TwoNode h;

	ASSERT_TRUE(h.bring_up());
	auto c = h.connect_pair(1);
	ASSERT_TRUE(c.client && c.server);
	Message a(5000, 1, 1, 1), b(5000, 2, 2, 2);
	// Sends first; only tag 2 is granted: tag 1 must wait, not take it.
	ASSERT_EQ(h.post_send(c.client, a.src.data(), a.len, a.tag, a.user_id), 0);
	ASSERT_EQ(h.post_send(c.client, b.src.data(), b.len, b.tag, b.user_id), 0);
	ASSERT_EQ(h.post_recv(c.server, b.dst.data(), b.len, b.tag, b.user_id), 0);
	h.run();
	EXPECT_TRUE(b.delivered(h, c.client, c.server));
	EXPECT_EQ(h.find_cqe(c.client, TB5_COMPLETION_SEND, a.user_id), nullptr);
	ASSERT_EQ(h.post_recv(c.server, a.dst.data(), a.len, a.tag, a.user_id), 0);
	h.run();
	EXPECT_TRUE(a.delivered(h, c.client, c.server));
}

TEST(Messages, SameTagPairsInPostingOrder)
{
	TwoNode h;
	std::vector<std::unique_ptr<Message>> msgs;

	ASSERT_TRUE(h.bring_up());
	auto c = h.connect_pair(1);
	ASSERT_TRUE(c.client && c.server);
	// Sizes differ: out-of-order pairing shows as wrong bytes or sizes.
	for (int i = 0; i < 6; i++) {
		msgs.push_back(std::make_unique<Message>(9000 + 1000 * i, 50 + i, 3, i));
		ASSERT_TRUE(msgs.back()->post(h, c.client, c.server));
	}
	h.run();
	for (int i = 0; i < 6; i++)
		EXPECT_TRUE(msgs[i]->delivered(h, c.client, c.server)) << i;
}

} // namespace
