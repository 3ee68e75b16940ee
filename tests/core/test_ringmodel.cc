// SPDX-License-Identifier: MIT
//
// test_ringmodel.cc - the ring model and the link lifecycle over it: links
// come up and learn their peer, frames are neither lost nor duplicated, the
// rings drain when idle, and bad link configurations are refused.
#include <gtest/gtest.h>

#include "message.hpp"
#include "two_node.hpp"

namespace {

using tb5test::Ep;
using tb5test::Message;
using tb5test::TwoNode;

TEST(RingModel, BringUpMakesBothLinksReady)
{
	TwoNode h;
	uint64_t peer = 0;

	ASSERT_TRUE(h.bring_up());
	for (int end = 0; end < 2; end++) {
		EXPECT_EQ(tb5_link_state(h.link(end)), TB5_LINK_READY);
		ASSERT_EQ(tb5_link_peer(h.link(end), &peer), 0);
		EXPECT_EQ(peer, h.host_id(1 - end)) << "end " << end;
	}
}

TEST(RingModel, PeerUnknownBeforeHello)
{
	TwoNode h;
	uint64_t peer = 0x1234;

	EXPECT_EQ(tb5_link_state(h.link(0)), TB5_LINK_DOWN);
	EXPECT_EQ(tb5_link_peer(h.link(0), &peer), -ENOTCONN);
	EXPECT_EQ(peer, 0x1234u) << "tb5_link_peer wrote a host id it does not know";
}

TEST(RingModel, LateSecondEndLearnsThePeer)
{
	// End 0 says hello while end 1 is still down; end 1's later hello must
	// still bring both up.
	TwoNode h;
	uint64_t peer = 0;

	if (!tb5_rm_plugged(h.pair()))
		h.plug();
	if (tb5_link_state(h.link(0)) == TB5_LINK_DOWN)
		tb5_link_up(h.link(0));
	h.run();
	if (tb5_link_state(h.link(1)) != TB5_LINK_DOWN)
		GTEST_SKIP() << "the ring model brings both links up together";
	EXPECT_EQ(tb5_link_state(h.link(0)), TB5_LINK_UP);

	tb5_link_up(h.link(1));
	ASSERT_TRUE(h.run_until([&] {
		return tb5_link_state(h.link(0)) == TB5_LINK_READY &&
		       tb5_link_state(h.link(1)) == TB5_LINK_READY;
	}));
	ASSERT_EQ(tb5_link_peer(h.link(0), &peer), 0);
	EXPECT_EQ(peer, h.host_id(1));
	ASSERT_EQ(tb5_link_peer(h.link(1), &peer), 0);
	EXPECT_EQ(peer, h.host_id(0));
}

TEST(RingModel, IdlePairHasEmptyRings)
{
	TwoNode h(64);

	ASSERT_TRUE(h.bring_up());
	h.run();
	EXPECT_EQ(h.step(), 0u) << "an idle pair still moved frames";
	for (int end = 0; end < 2; end++) {
		EXPECT_EQ(tb5_rm_tx_used(h.pair(), end), 0u);
		EXPECT_EQ(tb5_rm_rx_used(h.pair(), end), 0u);
	}
}

// After traffic both ways, every frame one link transmitted was moved once
// and received once by the other, with the same bytes; nothing resolved badly.
TEST(RingModel, FramesAreNeitherLostNorDuplicated)
{
	TwoNode h(64);

	ASSERT_TRUE(h.bring_up());
	auto c = h.connect_pair(7);
	ASSERT_TRUE(c.client && c.server);
	Message a(300000, 1, 1, 1), b(77777, 2, 2, 2);
	ASSERT_TRUE(a.post(h, c.client, c.server));
	ASSERT_TRUE(b.post(h, c.server, c.client));
	h.run();
	EXPECT_TRUE(a.delivered(h, c.client, c.server));
	EXPECT_TRUE(b.delivered(h, c.server, c.client));

	const tb5_link_stats s0 = h.link_stats(0), s1 = h.link_stats(1);
	const tb5_rm_stats rm = h.rm_stats();

	EXPECT_EQ(s0.tx_frames, s1.rx_frames);
	EXPECT_EQ(s1.tx_frames, s0.rx_frames);
	EXPECT_EQ(s0.tx_bytes, s1.rx_bytes);
	EXPECT_EQ(s1.tx_bytes, s0.rx_bytes);
	EXPECT_EQ(rm.moved, s0.tx_frames + s1.tx_frames);
	EXPECT_EQ(rm.delivered, rm.moved);
	EXPECT_EQ(rm.bad_payload, 0u);
	EXPECT_EQ(s0.rx_errors + s1.rx_errors, 0u);
	EXPECT_EQ(s0.rx_dropped + s1.rx_dropped, 0u);
	EXPECT_LE(rm.rx_high_water, 64u);
	EXPECT_LE(rm.tx_high_water, 64u);
	// 300000 bytes are 74 payload frames at least: the stats must show them.
	EXPECT_GE(s0.tx_bytes, 300000u);
	EXPECT_EQ(s0.tx_msgs, 1u);
	EXPECT_EQ(s1.rx_msgs, 1u);
	EXPECT_EQ(s1.tx_msgs, 1u);
	EXPECT_EQ(s0.rx_msgs, 1u);
}

TEST(RingModel, RunStopsWhenIdle)
{
	TwoNode h(64);

	ASSERT_TRUE(h.bring_up());
	auto c = h.connect_pair(7);
	ASSERT_TRUE(c.client && c.server);
	Message m(1 << 20, 3, 1, 1);
	ASSERT_TRUE(m.post(h, c.client, c.server));
	const uint32_t steps = h.run(1u << 20);
	EXPECT_GT(steps, 1u);
	EXPECT_LT(steps, 1u << 20);
	EXPECT_TRUE(m.delivered(h, c.client, c.server));
	EXPECT_LE(h.run(100), 1u) << "an idle pair kept running";
}

TEST(RingModel, UnplugEmptiesRingsAndPlugRestores)
{
	TwoNode h(64);

	ASSERT_TRUE(h.bring_up());
	auto c = h.connect_pair(7);
	ASSERT_TRUE(c.client && c.server);
	Message m(4 << 20, 4, 1, 1);
	ASSERT_TRUE(m.post(h, c.client, c.server));
	for (int i = 0; i < 3; i++)
		h.step();
	ASSERT_GT(tb5_rm_tx_used(h.pair(), 0) + tb5_rm_rx_used(h.pair(), 1), 0u)
		<< "nothing in flight to drop";

	h.unplug();
	EXPECT_FALSE(tb5_rm_plugged(h.pair()));
	for (int end = 0; end < 2; end++) {
		EXPECT_EQ(tb5_rm_tx_used(h.pair(), end), 0u);
		EXPECT_EQ(tb5_rm_rx_used(h.pair(), end), 0u);
		EXPECT_EQ(tb5_link_state(h.link(end)), TB5_LINK_DOWN);
	}
	EXPECT_EQ(h.step(), 0u) << "an unplugged pair moved frames";

	h.plug();
	EXPECT_TRUE(tb5_rm_plugged(h.pair()));
	EXPECT_TRUE(h.run_until([&] {
		return tb5_link_state(h.link(0)) == TB5_LINK_READY &&
		       tb5_link_state(h.link(1)) == TB5_LINK_READY;
	}));
}

struct BadConfig {
	uint32_t ring_size;
	uint32_t burst_frames;
	uint32_t max_endpoints;
};

class LinkConfig : public ::testing::TestWithParam<BadConfig> {};

int noop_tx(void *, const tb5_tx_frame *) { return 0; }
int noop_copy(void *, const tb5_mem *, const void *, uint32_t) { return 0; }
void noop_complete(void *, void *, const tb5_completion *) {}
void noop_event(void *, void *, tb5_event, int) {}

const tb5_link_ops kNoopOps = {noop_tx, noop_copy, noop_complete, noop_event};

TEST_P(LinkConfig, IsRefused)
{
	tb5_link_config cfg = {};
	tb5_link *link = reinterpret_cast<tb5_link *>(0x1);

	cfg.ring_size = GetParam().ring_size;
	cfg.burst_frames = GetParam().burst_frames;
	cfg.max_endpoints = GetParam().max_endpoints;
	cfg.host_id = 1;
	EXPECT_EQ(tb5_link_create(&cfg, &kNoopOps, nullptr, &link), -EINVAL);
	EXPECT_EQ(link, reinterpret_cast<tb5_link *>(0x1)) << "*out written on failure";
}

INSTANTIATE_TEST_SUITE_P(
	RingModel, LinkConfig,
	::testing::Values(BadConfig{0, 0, 0}, BadConfig{32, 0, 0},
			  BadConfig{63, 0, 0}, BadConfig{65, 0, 0},
			  BadConfig{96, 0, 0}, BadConfig{32768, 0, 0},
			  BadConfig{0x80000000u, 0, 0},
			  BadConfig{64, TB5_BURST_FRAMES_MAX + 1, 0},
			  BadConfig{64, 0, TB5_ENDPOINTS_MAX + 1}));

TEST(RingModel, LinkConfigLimitsAreAccepted)
{
	for (uint32_t rs : {TB5_RING_SIZE_MIN, 128u, TB5_RING_SIZE_DEFAULT,
			    TB5_RING_SIZE_MAX}) {
		tb5_link_config cfg = {};
		tb5_link *link = nullptr;

		cfg.ring_size = rs;
		cfg.burst_frames = TB5_BURST_FRAMES_MAX;
		cfg.max_endpoints = 1;
		cfg.host_id = 1;
		ASSERT_EQ(tb5_link_create(&cfg, &kNoopOps, nullptr, &link), 0) << rs;
		ASSERT_NE(link, nullptr);
		EXPECT_EQ(tb5_link_state(link), TB5_LINK_DOWN);
		tb5_link_destroy(link);
	}
}

} // namespace
