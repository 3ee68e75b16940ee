// SPDX-License-Identifier: MIT
//
// test_handshake.cc - listen, connect, accept and the ways they refuse.
#include <gtest/gtest.h>

#include <vector>

#include "message.hpp"
#include "pattern.hpp"
#include "two_node.hpp"

namespace {

using tb5test::Ep;
using tb5test::Message;
using tb5test::TwoNode;

class Handshake : public ::testing::Test {
protected:
	void SetUp() override { ASSERT_TRUE(h.bring_up()); }

	// Connect from end 0 to @addr and step until the outcome is known.
	Ep *connect_and_wait(const tb5_addr &addr)
	{
		Ep *c = nullptr;

		EXPECT_EQ(h.connect(0, addr, &c), 0);
		if (!c || !c->ep)
			return nullptr;
		h.run_until([&] {
			return h.count_events(c, TB5_EV_CONNECTED) +
			       h.count_events(c, TB5_EV_ERROR) > 0;
		});
		return c;
	}

	TwoNode h;
};

TEST_F(Handshake, ConnectAcceptReportsBothSides)
{
	Ep *l = nullptr, *c = nullptr, *s = nullptr;
	tb5_addr addr = {};

	ASSERT_EQ(h.listen(1, 0xabcdef0123ull, &l), 0);
	EXPECT_EQ(tb5_ep_state(l->ep), TB5_EP_LISTENING);
	ASSERT_EQ(tb5_listen_addr(l->ep, &addr), 0);
	EXPECT_EQ(addr.service, 0xabcdef0123ull);

	ASSERT_EQ(h.connect(0, addr, &c), 0);
	EXPECT_EQ(tb5_ep_state(c->ep), TB5_EP_CONNECTING);
	ASSERT_TRUE(h.run_until([&] { return h.count_events(l, TB5_EV_INCOMING) > 0; }));
	EXPECT_EQ(h.count_events(l, TB5_EV_INCOMING), 1);
	EXPECT_EQ(h.count_events(c, TB5_EV_CONNECTED), 0) << "connected before accept";

	ASSERT_EQ(h.accept(l, &s), 0);
	EXPECT_EQ(tb5_ep_state(s->ep), TB5_EP_CONNECTED);
	ASSERT_TRUE(h.run_until([&] { return h.count_events(c, TB5_EV_CONNECTED) > 0; }));
	EXPECT_EQ(h.event_status(c, TB5_EV_CONNECTED), 0);
	EXPECT_EQ(tb5_ep_state(c->ep), TB5_EP_CONNECTED);
	EXPECT_EQ(tb5_ep_state(l->ep), TB5_EP_LISTENING);
	h.run();
	EXPECT_EQ(h.count_events(c, TB5_EV_CONNECTED), 1);
	EXPECT_EQ(h.count_events(c, TB5_EV_ERROR), 0);
	EXPECT_EQ(h.count_events(s, TB5_EV_ERROR) + h.count_events(s, TB5_EV_PEER_CLOSED), 0);

	// And it carries data both ways.
	Message a(5000, 11, 3, 1), b(6000, 12, 3, 2);
	ASSERT_TRUE(a.post(h, c, s));
	ASSERT_TRUE(b.post(h, s, c));
	h.run();
	EXPECT_TRUE(a.delivered(h, c, s));
	EXPECT_TRUE(b.delivered(h, s, c));
}

TEST_F(Handshake, WellKnownListenerTakesCookieZero)
{
	Ep *l = nullptr, *s = nullptr;
	tb5_addr addr = {};

	ASSERT_EQ(h.listen(1, 0x77, &l, TB5_LF_WELL_KNOWN), 0);
	ASSERT_EQ(tb5_listen_addr(l->ep, &addr), 0);
	EXPECT_EQ(addr.cookie, 0u);

	Ep *c = connect_and_wait({0x77, 0});
	ASSERT_TRUE(c);
	ASSERT_TRUE(h.run_until([&] { return h.count_events(l, TB5_EV_INCOMING) > 0; }));
	ASSERT_EQ(h.accept(l, &s), 0);
	ASSERT_TRUE(h.run_until([&] { return h.count_events(c, TB5_EV_CONNECTED) > 0; }));
	EXPECT_EQ(tb5_ep_state(c->ep), TB5_EP_CONNECTED);
}

TEST_F(Handshake, OrdinaryListenerRefusesCookieZero)
{
	Ep *l = nullptr;
	tb5_addr addr = {};

	ASSERT_EQ(h.listen(1, 0x78, &l), 0);
	ASSERT_EQ(tb5_listen_addr(l->ep, &addr), 0);
	EXPECT_NE(addr.cookie, 0u) << "a random cookie must never be 0";

	Ep *c = connect_and_wait({0x78, 0});
	ASSERT_TRUE(c);
	EXPECT_EQ(h.event_status(c, TB5_EV_ERROR), -ECONNREFUSED);
	EXPECT_EQ(h.count_events(l, TB5_EV_INCOMING), 0);
}

TEST_F(Handshake, ListenRefusesUnknownFlags)
{
	Ep *l = nullptr;

	EXPECT_EQ(h.listen(1, 0x79, &l, 0x2), -EINVAL);
}

TEST_F(Handshake, UnknownServiceIsRefused)
{
	Ep *l = nullptr;
	tb5_addr addr = {};

	ASSERT_EQ(h.listen(1, 100, &l), 0);
	ASSERT_EQ(tb5_listen_addr(l->ep, &addr), 0);
	addr.service = 101;
	Ep *c = connect_and_wait(addr);
	ASSERT_NE(c, nullptr);
	EXPECT_EQ(h.count_events(c, TB5_EV_ERROR), 1);
	EXPECT_EQ(h.event_status(c, TB5_EV_ERROR), -ECONNREFUSED);
	EXPECT_EQ(h.count_events(c, TB5_EV_CONNECTED), 0);
	EXPECT_EQ(tb5_ep_state(c->ep), TB5_EP_ERROR);
	EXPECT_EQ(h.count_events(l, TB5_EV_INCOMING), 0);

	// A refused endpoint carries nothing.
	char buf[8] = {};
	EXPECT_NE(h.post_send(c, buf, sizeof(buf), 0, 1), 0);
	EXPECT_NE(h.post_recv(c, buf, sizeof(buf), 0, 2), 0);
}

TEST_F(Handshake, NoListenerAtAllIsRefused)
{
	const tb5_addr addr = {0x5e7u, 0x1234567890ull};
	Ep *c = connect_and_wait(addr);

	ASSERT_NE(c, nullptr);
	EXPECT_EQ(h.event_status(c, TB5_EV_ERROR), -ECONNREFUSED);
	EXPECT_EQ(tb5_ep_state(c->ep), TB5_EP_ERROR);
}

TEST_F(Handshake, WrongCookieIsRefused)
{
	Ep *l = nullptr, *s = nullptr;
	tb5_addr addr = {};

	ASSERT_EQ(h.listen(1, 100, &l), 0);
	ASSERT_EQ(tb5_listen_addr(l->ep, &addr), 0);
	for (uint64_t flip : {1ull, 1ull << 63, ~0ull}) {
		tb5_addr bad = addr;

		bad.cookie ^= flip;
		Ep *c = connect_and_wait(bad);
		ASSERT_NE(c, nullptr);
		EXPECT_EQ(h.event_status(c, TB5_EV_ERROR), -ECONNREFUSED);
		EXPECT_EQ(tb5_ep_state(c->ep), TB5_EP_ERROR);
	}
	EXPECT_EQ(h.count_events(l, TB5_EV_INCOMING), 0);
	EXPECT_EQ(h.accept(l, &s), -EAGAIN);
}

TEST_F(Handshake, AcceptWithNothingPending)
{
	Ep *l = nullptr, *s = nullptr;

	ASSERT_EQ(h.listen(1, 100, &l), 0);
	EXPECT_EQ(h.accept(l, &s), -EAGAIN);
	h.run();
	EXPECT_EQ(h.accept(l, &s), -EAGAIN);
}

TEST_F(Handshake, ListenTwiceOnOneService)
{
	Ep *a = nullptr, *b = nullptr, *other = nullptr, *far = nullptr;

	ASSERT_EQ(h.listen(1, 100, &a), 0);
	EXPECT_EQ(h.listen(1, 100, &b), -EADDRINUSE);
	// Other services, and the same service on the other link, are free.
	EXPECT_EQ(h.listen(1, 101, &other), 0);
	EXPECT_EQ(h.listen(0, 100, &far), 0);

	// Once the first listener is gone, the service can be listened on.
	h.close(a);
	ASSERT_TRUE(h.run_until([&] { return h.released(a); }));
	EXPECT_EQ(h.listen(1, 100, &b), 0);
}

TEST_F(Handshake, PostBeforeConnectedIsRefused)
{
	Ep *l = nullptr, *c = nullptr;
	tb5_addr addr = {};
	char buf[64] = {};

	ASSERT_EQ(h.listen(1, 100, &l), 0);
	ASSERT_EQ(tb5_listen_addr(l->ep, &addr), 0);
	ASSERT_EQ(h.connect(0, addr, &c), 0);
	EXPECT_EQ(h.post_send(c, buf, sizeof(buf), 0, 1), -ENOTCONN);
	EXPECT_EQ(h.post_recv(c, buf, sizeof(buf), 0, 2), -ENOTCONN);
	// Still not connected while the listener has not accepted.
	h.run();
	EXPECT_EQ(tb5_ep_state(c->ep), TB5_EP_CONNECTING);
	EXPECT_EQ(h.post_send(c, buf, sizeof(buf), 0, 3), -ENOTCONN);
	EXPECT_EQ(h.post_recv(c, buf, sizeof(buf), 0, 4), -ENOTCONN);
}

// Several connections wait in the backlog; each accept takes one, and each
// accepted endpoint is wired to its own connector.
TEST_F(Handshake, BacklogPairsEachConnectorWithItsOwnEndpoint)
{
	constexpr int kConns = 5;
	Ep *l = nullptr;
	tb5_addr addr = {};
	std::vector<Ep *> clients, servers;

	ASSERT_EQ(h.listen(1, 100, &l), 0);
	ASSERT_EQ(tb5_listen_addr(l->ep, &addr), 0);
	for (int i = 0; i < kConns; i++) {
		Ep *c = nullptr;

		ASSERT_EQ(h.connect(0, addr, &c), 0);
		clients.push_back(c);
	}
	h.run();
	EXPECT_GE(h.count_events(l, TB5_EV_INCOMING), 1);
	for (int i = 0; i < kConns; i++) {
		Ep *s = nullptr;

		ASSERT_EQ(h.accept(l, &s), 0) << "accept " << i;
		servers.push_back(s);
	}
	Ep *none = nullptr;
	EXPECT_EQ(h.accept(l, &none), -EAGAIN);
	h.run();
	for (Ep *c : clients)
		EXPECT_EQ(tb5_ep_state(c->ep), TB5_EP_CONNECTED);

	// Each server sends its index; each client must receive exactly one
	// message, and all indexes must arrive once. (Which client got which
	// server is the core's choice; that the pairing is one to one is not.)
	std::vector<std::unique_ptr<Message>> msgs;
	for (int i = 0; i < kConns; i++) {
		msgs.push_back(std::make_unique<Message>(1000, 100 + i, 9, i));
		ASSERT_EQ(h.post_send(servers[i], msgs[i]->src.data(), 1000, 9, i), 0);
	}
	std::vector<std::vector<uint8_t>> bufs(kConns, std::vector<uint8_t>(1000));
	for (int i = 0; i < kConns; i++)
		ASSERT_EQ(h.post_recv(clients[i], bufs[i].data(), 1000, 9, 50 + i), 0);
	h.run();
	std::vector<int> got(kConns, 0);
	for (int i = 0; i < kConns; i++) {
		ASSERT_TRUE(tb5test::completed(h, clients[i], TB5_COMPLETION_RECV, 50 + i, 0, 1000, 9));
		int from = -1;
		for (int j = 0; j < kConns; j++)
			if (tb5test::find_mismatch(bufs[i].data(), 1000, 100 + j) == 1000)
				from = j;
		ASSERT_GE(from, 0) << "client " << i << " got no server's bytes";
		got[from]++;
	}
	for (int j = 0; j < kConns; j++)
		EXPECT_EQ(got[j], 1) << "server " << j;
}

TEST_F(Handshake, ClosingListenerRefusesItsBacklog)
{
	Ep *l = nullptr, *c = nullptr;
	tb5_addr addr = {};

	ASSERT_EQ(h.listen(1, 100, &l), 0);
	ASSERT_EQ(tb5_listen_addr(l->ep, &addr), 0);
	ASSERT_EQ(h.connect(0, addr, &c), 0);
	ASSERT_TRUE(h.run_until([&] { return h.count_events(l, TB5_EV_INCOMING) > 0; }));
	h.close(l);
	ASSERT_TRUE(h.run_until([&] { return h.count_events(c, TB5_EV_ERROR) > 0; }))
		<< "a connector in a closed listener's backlog was left hanging";
	EXPECT_EQ(h.event_status(c, TB5_EV_ERROR), -ECONNREFUSED);
	EXPECT_EQ(h.count_events(c, TB5_EV_CONNECTED), 0);
	EXPECT_TRUE(h.run_until([&] { return h.released(l); }));
}

TEST_F(Handshake, ConnectorGivingUpDoesNotStrandTheAcceptor)
{
	Ep *l = nullptr, *c = nullptr, *s = nullptr;
	tb5_addr addr = {};

	ASSERT_EQ(h.listen(1, 100, &l), 0);
	ASSERT_EQ(tb5_listen_addr(l->ep, &addr), 0);
	ASSERT_EQ(h.connect(0, addr, &c), 0);
	ASSERT_TRUE(h.run_until([&] { return h.count_events(l, TB5_EV_INCOMING) > 0; }));
	h.close(c);
	ASSERT_EQ(h.accept(l, &s), 0);
	EXPECT_TRUE(h.run_until([&] {
		return h.count_events(s, TB5_EV_PEER_CLOSED) +
		       h.count_events(s, TB5_EV_ERROR) > 0;
	})) << "accepted endpoint never learned its connector is gone (end 1 dropped "
	    << h.link_stats(1).rx_dropped << " frames)";
	EXPECT_TRUE(h.released(c));
	EXPECT_EQ(h.count_events(c, TB5_EV_CONNECTED), 0);
}

TEST_F(Handshake, ConnectionsInBothDirections)
{
	auto fwd = h.connect_pair(100, 0);
	auto rev = h.connect_pair(100, 1);	// same service id, listener on end 0

	ASSERT_TRUE(fwd.client && fwd.server && rev.client && rev.server);
	Message a(70000, 1, 5, 1), b(70001, 2, 5, 2);
	ASSERT_TRUE(a.post(h, fwd.client, fwd.server));
	ASSERT_TRUE(b.post(h, rev.client, rev.server));
	h.run();
	EXPECT_TRUE(a.delivered(h, fwd.client, fwd.server));
	EXPECT_TRUE(b.delivered(h, rev.client, rev.server));
}

} // namespace
