// SPDX-License-Identifier: MIT
//
// test_peer_gone.cc - the cable is pulled with transfers in flight: every
// operation completes with -ENOLINK, connected endpoints go to
// TB5_EP_ERROR, listeners stay; with the cable back, the links are READY
// again and new connections (to the same listeners) work.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "message.hpp"
#include "pattern.hpp"
#include "two_node.hpp"

namespace {

using tb5test::Ep;
using tb5test::Message;
using tb5test::TwoNode;

bool both_ready(TwoNode &h)
{
	return tb5_link_state(h.link(0)) == TB5_LINK_READY &&
	       tb5_link_state(h.link(1)) == TB5_LINK_READY;
}

class PeerGone : public ::testing::TestWithParam<uint32_t> {};

TEST_P(PeerGone, UnplugWithTransfersInFlight)
{
	TwoNode h(GetParam());

	ASSERT_TRUE(h.bring_up());
	auto big = h.connect_pair(1);	// large transfers both ways, mid-burst
	auto idle = h.connect_pair(2);	// operations waiting for a match
	ASSERT_TRUE(big.client && idle.client);
	Ep *lst0 = h.listener(1, 1);
	Ep *lst_far = nullptr;
	ASSERT_EQ(h.listen(0, 3, &lst_far), 0);	// a listener on the other end

	Message fwd(8 << 20, 1, 1, 1), back(6 << 20, 2, 1, 2);
	ASSERT_TRUE(fwd.post(h, big.client, big.server));
	ASSERT_TRUE(back.post(h, big.server, big.client));
	std::vector<uint8_t> ibuf(4096);
	ASSERT_EQ(h.post_recv(idle.server, ibuf.data(), ibuf.size(), 5, 10), 0);
	ASSERT_EQ(h.post_send(idle.client, ibuf.data(), ibuf.size(), 6, 11), 0);
	ASSERT_TRUE(h.run_until([&] {
		return h.bytes_copied(1) > (1 << 20) && h.bytes_copied(0) > (1 << 20);
	}));
	ASSERT_TRUE(h.cq(big.client).empty() && h.cq(big.server).empty());

	h.unplug();
	h.run();
	for (Ep *ep : {big.client, big.server, idle.client, idle.server}) {
		SCOPED_TRACE(ep == big.client ? "big.client" : ep == big.server ? "big.server" :
			     ep == idle.client ? "idle.client" : "idle.server");
		EXPECT_EQ(h.outstanding(ep), 0u) << "operations left hanging";
		for (const tb5_completion &e : h.cq(ep))
			EXPECT_EQ(e.status, -ENOLINK) << "user_id " << e.user_id;
		EXPECT_EQ(tb5_ep_state(ep->ep), TB5_EP_ERROR);
		EXPECT_EQ(h.count_events(ep, TB5_EV_ERROR), 1);
		EXPECT_EQ(h.event_status(ep, TB5_EV_ERROR), -ENOLINK);
		char b[8];
		EXPECT_EQ(h.post_send(ep, b, sizeof(b), 0, 500), -ENOLINK);
		EXPECT_EQ(h.post_recv(ep, b, sizeof(b), 0, 501), -ENOLINK);
	}
	EXPECT_EQ(h.cq(big.client).size(), 2u);
	EXPECT_EQ(h.cq(big.server).size(), 2u);
	EXPECT_EQ(tb5_link_state(h.link(0)), TB5_LINK_DOWN);
	EXPECT_EQ(tb5_link_state(h.link(1)), TB5_LINK_DOWN);
	EXPECT_EQ(tb5_ep_state(lst0->ep), TB5_EP_LISTENING);
	EXPECT_EQ(tb5_ep_state(lst_far->ep), TB5_EP_LISTENING);
	EXPECT_GE(h.link_stats(0).peer_resets, 1u);
	// What landed before the cable went is the messages' own prefix.
	EXPECT_EQ(tb5test::find_mismatch(fwd.dst.data(), h.bytes_copied(1), fwd.seed),
		  h.bytes_copied(1));
	EXPECT_EQ(tb5test::find_mismatch(back.dst.data(), h.bytes_copied(0), back.seed),
		  h.bytes_copied(0));

	// Cable back.
	h.plug();
	ASSERT_TRUE(h.run_until([&] { return both_ready(h); }));
	uint64_t peer = 0;
	ASSERT_EQ(tb5_link_peer(h.link(0), &peer), 0);
	EXPECT_EQ(peer, h.host_id(1));

	// The surviving listeners take new connections, which carry data.
	auto again = h.connect_pair(1);
	auto rev = h.connect_pair(3, 1);
	ASSERT_TRUE(again.client && rev.client);
	EXPECT_EQ(h.listener(1, 1), lst0);
	Message a(5 << 20, 3, 1, 3), b(333333, 4, 1, 4);
	ASSERT_TRUE(a.post(h, again.client, again.server));
	ASSERT_TRUE(b.post(h, rev.client, rev.server));
	h.run();
	EXPECT_TRUE(a.delivered(h, again.client, again.server));
	EXPECT_TRUE(b.delivered(h, rev.client, rev.server));

	// The dead endpoints close cleanly.
	for (Ep *ep : {big.client, big.server, idle.client, idle.server})
		h.close(ep);
	EXPECT_TRUE(h.run_until([&] {
		return h.released(big.client) && h.released(big.server) &&
		       h.released(idle.client) && h.released(idle.server);
	}));
}

INSTANTIATE_TEST_SUITE_P(RingSizes, PeerGone, ::testing::Values(64u, 4096u),
			 [](const ::testing::TestParamInfo<uint32_t> &p) {
				 return "ring" + std::to_string(p.param);
			 });

TEST(PeerGoneWhileConnecting, ConnectorFails)
{
	TwoNode h;
	Ep *l = nullptr, *c = nullptr, *s = nullptr;
	tb5_addr addr = {};

	ASSERT_TRUE(h.bring_up());
	ASSERT_EQ(h.listen(1, 9, &l), 0);
	ASSERT_EQ(tb5_listen_addr(l->ep, &addr), 0);
	ASSERT_EQ(h.connect(0, addr, &c), 0);
	h.unplug();
	h.run();
	EXPECT_EQ(h.count_events(c, TB5_EV_ERROR), 1);
	EXPECT_EQ(h.event_status(c, TB5_EV_ERROR), -ENOLINK);
	EXPECT_EQ(tb5_ep_state(c->ep), TB5_EP_ERROR);
	EXPECT_EQ(tb5_ep_state(l->ep), TB5_EP_LISTENING);

	h.plug();
	ASSERT_TRUE(h.run_until([&] { return both_ready(h); }));
	// The failed connector's request died with the link: nothing to accept
	// from it, and a new connection works.
	EXPECT_EQ(h.accept(l, &s), -EAGAIN);
	auto conn = h.connect_pair(9);
	ASSERT_TRUE(conn.client && conn.server);
	Message m(4097, 1, 1, 1);
	ASSERT_TRUE(m.post(h, conn.client, conn.server));
	h.run();
	EXPECT_TRUE(m.delivered(h, conn.client, conn.server));
}

TEST(PeerGoneRepeatedly, EachPlugBringsTheLinkBack)
{
	TwoNode h(64);

	ASSERT_TRUE(h.bring_up());
	for (int round = 0; round < 5; round++) {
		SCOPED_TRACE(round);
		auto c = h.connect_pair(1);
		ASSERT_TRUE(c.client && c.server);
		Message m(300000 + round, round, 1, round);
		ASSERT_TRUE(m.post(h, c.client, c.server));
		for (int i = 0; i < round; i++)
			h.step();
		h.unplug();
		h.run();
		EXPECT_EQ(h.outstanding(c.client) + h.outstanding(c.server), 0u);
		h.plug();
		ASSERT_TRUE(h.run_until([&] { return both_ready(h); }));
		h.close(c.client);
		h.close(c.server);
		h.run();
		EXPECT_TRUE(h.released(c.client) && h.released(c.server));
	}
}

} // namespace
