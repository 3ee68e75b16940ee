// SPDX-License-Identifier: MIT
//
// test_flow_control.cc - end-to-end flow control at the smallest and the
// largest ring: a receiver that stops consuming fills its RX ring and never
// more, then the sender's TX ring, then the core stalls; nothing completes
// until the receiver resumes, and then everything does, intact.
#include <gtest/gtest.h>

#include "message.hpp"
#include "two_node.hpp"

namespace {

using tb5test::Ep;
using tb5test::Message;
using tb5test::TwoNode;

class FlowControl : public ::testing::TestWithParam<uint32_t> {};

TEST_P(FlowControl, PausedReceiverStallsSenderWithoutLoss)
{
	const uint32_t ring = GetParam();
	TwoNode h(ring);

	ASSERT_TRUE(h.bring_up());
	auto c = h.connect_pair(1);
	ASSERT_TRUE(c.client && c.server);

	// More frames than both rings together hold, headers included.
	const uint64_t size = (2ull * ring + 64) * TB5_FRAME_MAX + 12345;
	Message m(size, ring, 1, 1);

	// The grant reaches the sender first; then the receiver stops.
	ASSERT_EQ(h.post_recv(c.server, m.dst.data(), m.len, m.tag, m.user_id), 0);
	h.run();
	h.pause_rx(1, true);
	ASSERT_EQ(h.post_send(c.client, m.src.data(), m.len, m.tag, m.user_id), 0);

	// Step to a standstill, watching the receiver's ring on every step.
	uint64_t steps = 0;
	while (h.step() != 0) {
		ASSERT_LE(tb5_rm_rx_used(h.pair(), 1), ring) << "step " << steps;
		ASSERT_LT(++steps, 1000000u) << "never stalled";
	}
	EXPECT_EQ(tb5_rm_rx_used(h.pair(), 1), ring) << "RX ring not filled";
	EXPECT_EQ(tb5_rm_tx_used(h.pair(), 0), ring) << "TX ring not filled";
	const tb5_rm_stats rm = h.rm_stats();
	EXPECT_LE(rm.rx_high_water, ring);
	EXPECT_LE(rm.tx_high_water, ring);
	EXPECT_GT(rm.tx_full, 0u) << "the core never hit a full TX ring";
	EXPECT_GT(rm.rx_full, 0u);
	EXPECT_GT(h.link_stats(0).tx_stalls, 0u) << "the core did not count its stall";
	EXPECT_TRUE(h.cq(c.client).empty()) << "send completed while stalled";
	EXPECT_TRUE(h.cq(c.server).empty()) << "receive completed while stalled";
	EXPECT_EQ(h.bytes_copied(1), 0u) << "a paused receiver consumed frames";

	// Still stalled after more steps: nothing leaks through.
	for (int i = 0; i < 10; i++)
		EXPECT_EQ(h.step(), 0u);

	h.pause_rx(1, false);
	ASSERT_TRUE(h.run_until([&] { return m.done(h, c.client, c.server); }));
	EXPECT_TRUE(m.delivered(h, c.client, c.server));
	EXPECT_LE(h.rm_stats().rx_high_water, ring);
	EXPECT_LE(h.rm_stats().tx_high_water, ring);
	EXPECT_EQ(h.link_stats(1).rx_errors, 0u);
	EXPECT_EQ(h.link_stats(1).rx_dropped, 0u);
}

// Pausing in the middle of a transfer, several times, loses nothing either.
TEST_P(FlowControl, PauseAndResumeMidTransfer)
{
	const uint32_t ring = GetParam();
	TwoNode h(ring);

	ASSERT_TRUE(h.bring_up());
	auto c = h.connect_pair(1);
	ASSERT_TRUE(c.client && c.server);
	const uint64_t size = (3ull * ring / 2) * TB5_FRAME_MAX + 1;
	Message fwd(size, 7, 1, 1), back(size / 3, 8, 2, 2);
	ASSERT_TRUE(fwd.post(h, c.client, c.server));
	ASSERT_TRUE(back.post(h, c.server, c.client));
	for (int round = 0; round < 4; round++) {
		const uint64_t before = h.bytes_copied(1);

		h.pause_rx(1, true);
		h.run();
		EXPECT_EQ(h.bytes_copied(1), before) << "round " << round;
		EXPECT_FALSE(fwd.done(h, c.client, c.server)) << "round " << round;
		EXPECT_LE(tb5_rm_rx_used(h.pair(), 1), ring);
		h.pause_rx(1, false);
		// Resume only for a while: about a quarter ring of frames.
		for (int i = 0; i < 4; i++)
			h.step(ring / 16);
	}
	h.run();
	EXPECT_TRUE(fwd.delivered(h, c.client, c.server));
	EXPECT_TRUE(back.delivered(h, c.server, c.client));
	EXPECT_LE(h.rm_stats().rx_high_water, ring);
}

INSTANTIATE_TEST_SUITE_P(RingSizes, FlowControl,
			 ::testing::Values(TB5_RING_SIZE_MIN, TB5_RING_SIZE_MAX),
			 [](const ::testing::TestParamInfo<uint32_t> &p) {
				 return "ring" + std::to_string(p.param);
			 });

} // namespace
