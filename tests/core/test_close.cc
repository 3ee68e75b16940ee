// SPDX-License-Identifier: MIT
//
// test_close.cc - closing an endpoint with operations in flight, on either
// side and in the middle of a burst: its own operations complete with
// -ECANCELED and then TB5_EV_RELEASED comes; the peer hears
// TB5_EV_PEER_CLOSED and its operations complete with -ECONNRESET; no byte
// lands after a receive completed; the link carries on for everyone else.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "message.hpp"
#include "pattern.hpp"
#include "tb5_core_internal.h"
#include "two_node.hpp"

namespace {

using tb5test::Ep;
using tb5test::Message;
using tb5test::TwoNode;

class Close : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_TRUE(h.bring_up());
		c = h.connect_pair(1);
		ASSERT_TRUE(c.client && c.server);
		// A bystander connection, set up before and used after.
		other = h.connect_pair(2);
		ASSERT_TRUE(other.client && other.server);
	}

	// Every operation posted on @ep completed once with @status; none left.
	void expect_all_completed(Ep *ep, size_t n, int status)
	{
		EXPECT_EQ(h.outstanding(ep), 0u);
		ASSERT_EQ(h.cq(ep).size(), n);
		for (const tb5_completion &e : h.cq(ep))
			EXPECT_EQ(e.status, status) << "user_id " << e.user_id;
	}

	// The peer of a closed endpoint: told once, refuses new work, and
	// releases cleanly when closed in turn.
	void expect_peer_closed(Ep *peer)
	{
		EXPECT_EQ(h.count_events(peer, TB5_EV_PEER_CLOSED), 1);
		EXPECT_EQ(h.event_status(peer, TB5_EV_PEER_CLOSED), -ECONNRESET);
		EXPECT_EQ(tb5_ep_state(peer->ep), TB5_EP_PEER_CLOSED);
		char b[16] = {};
		EXPECT_EQ(h.post_send(peer, b, sizeof(b), 0, 900), -ECONNRESET);
		EXPECT_EQ(h.post_recv(peer, b, sizeof(b), 0, 901), -ECONNRESET);
		h.close(peer);
		EXPECT_TRUE(h.run_until([&] { return h.released(peer); }));
	}

	// The link still works: for the bystander and for a new connection.
	void expect_link_still_works()
	{
		Message a(200000, 71, 1, 71), b(300001, 72, 1, 72);
		ASSERT_TRUE(a.post(h, other.client, other.server));
		ASSERT_TRUE(b.post(h, other.server, other.client));
		h.run();
		EXPECT_TRUE(a.delivered(h, other.client, other.server));
		EXPECT_TRUE(b.delivered(h, other.server, other.client));

		auto fresh = h.connect_pair(1);
		ASSERT_TRUE(fresh.client && fresh.server);
		Message f(123457, 73, 1, 73);
		ASSERT_TRUE(f.post(h, fresh.client, fresh.server));
		h.run();
		EXPECT_TRUE(f.delivered(h, fresh.client, fresh.server));
		EXPECT_EQ(h.link_stats(0).rx_errors + h.link_stats(1).rx_errors, 0u);
	}

	TwoNode h{256};
	TwoNode::Conn c, other;
};

// Sends and receives that never matched (different tags) are pending on
// both sides; the sending side closes.
TEST_F(Close, SenderSideWithOperationsPending)
{
	std::vector<std::unique_ptr<Message>> m;

	for (int i = 0; i < 4; i++) {
		m.push_back(std::make_unique<Message>(10000, i, 1, i));
		ASSERT_EQ(h.post_send(c.client, m[i]->src.data(), m[i]->len, 1, i), 0);
		ASSERT_EQ(h.post_recv(c.server, m[i]->dst.data(), m[i]->len, 2, i), 0);
	}
	// And a receive on the closing side too.
	ASSERT_EQ(h.post_recv(c.client, m[0]->dst.data(), 100, 3, 10), 0);
	h.run();
	ASSERT_TRUE(h.cq(c.client).empty() && h.cq(c.server).empty());

	h.close(c.client);
	ASSERT_TRUE(h.run_until([&] { return h.released(c.client); }));
	expect_all_completed(c.client, 5, -ECANCELED);
	EXPECT_EQ(h.count_events(c.client, TB5_EV_PEER_CLOSED), 0);

	ASSERT_TRUE(h.run_until([&] { return h.count_events(c.server, TB5_EV_PEER_CLOSED) > 0; }));
	expect_all_completed(c.server, 4, -ECONNRESET);
	expect_peer_closed(c.server);
	for (auto &msg : m)
		EXPECT_EQ(tb5test::find_not(msg->dst.data(), msg->len, Message::kFill), msg->len);
	expect_link_still_works();
}

TEST_F(Close, ReceiverSideWithOperationsPending)
{
	std::vector<std::unique_ptr<Message>> m;

	for (int i = 0; i < 4; i++) {
		m.push_back(std::make_unique<Message>(10000, i, 1, i));
		ASSERT_EQ(h.post_send(c.client, m[i]->src.data(), m[i]->len, 1, i), 0);
		ASSERT_EQ(h.post_recv(c.server, m[i]->dst.data(), m[i]->len, 2, i), 0);
	}
	h.run();

	h.close(c.server);
	ASSERT_TRUE(h.run_until([&] { return h.released(c.server); }));
	expect_all_completed(c.server, 4, -ECANCELED);

	ASSERT_TRUE(h.run_until([&] { return h.count_events(c.client, TB5_EV_PEER_CLOSED) > 0; }));
	expect_all_completed(c.client, 4, -ECONNRESET);
	expect_peer_closed(c.client);
	expect_link_still_works();
}

TEST_F(Close, WithNothingPending)
{
	h.close(c.client);
	ASSERT_TRUE(h.run_until([&] { return h.released(c.client); }));
	EXPECT_TRUE(h.cq(c.client).empty());
	ASSERT_TRUE(h.run_until([&] { return h.count_events(c.server, TB5_EV_PEER_CLOSED) > 0; }));
	EXPECT_TRUE(h.cq(c.server).empty());
	expect_peer_closed(c.server);
	expect_link_still_works();
}

// Drops of kind @k counted by both ends so far.
uint64_t drops_both(const TwoNode &h, enum tb5_drop_kind k)
{
	return h.link_stats(0).drops[k] + h.link_stats(1).drops[k];
}

TEST_F(Close, BothSidesAtOnce)
{
	Message m(1 << 20, 5, 1, 1);

	ASSERT_TRUE(m.post(h, c.client, c.server));
	h.step();
	h.close(c.client);
	h.close(c.server);
	EXPECT_TRUE(h.run_until([&] { return h.released(c.client) && h.released(c.server); }));
	for (Ep *ep : {c.client, c.server}) {
		ASSERT_EQ(h.cq(ep).size(), 1u);
		EXPECT_EQ(h.cq(ep)[0].status, -ECANCELED);
	}
	expect_link_still_works();
}

// Both sides close an idle connection in the same step: each CLOSE finds
// the other's endpoint released, and is accepted without a drop; a second
// CLOSE of the same connection (a replay) still counts as one. (With a
// message in flight, as above, its payload frames that arrive for the
// released endpoint are dropped and counted: data was lost.)
TEST_F(Close, CrossingClosesAreNotDrops)
{
	const uint64_t unknown = drops_both(h, TB5_DROP_UNKNOWN_CONN);
	const uint32_t client_id = c.client->ep->id, server_id = c.server->ep->id;

	h.close(c.client);
	h.close(c.server);
	ASSERT_TRUE(h.run_until([&] { return h.released(c.client) && h.released(c.server); }));
	h.run();
	EXPECT_EQ(drops_both(h, TB5_DROP_UNKNOWN_CONN), unknown);
	EXPECT_EQ(h.count_events(c.client, TB5_EV_PEER_CLOSED) +
			  h.count_events(c.server, TB5_EV_PEER_CLOSED), 0);

	struct tb5_wire_msg replay;
	uint8_t buf[TB5_WIRE_MAX_LEN];

	std::memset(&replay, 0, sizeof(replay));
	replay.type = TB5_WIRE_CLOSE;
	replay.dst = server_id;
	replay.src = client_id;
	replay.u.close.status = -ECONNRESET;
	const uint32_t len = tb5_wire_encode(&replay, buf);
	tb5_link_rx(h.link(1), TB5_SOF_HEADER, TB5_EOF_LAST, buf, len);
	EXPECT_EQ(drops_both(h, TB5_DROP_UNKNOWN_CONN), unknown + 1);
	expect_link_still_works();
}

// The receiver closes while its own TX ring is full (its peer stopped
// reading), so its CLOSE cannot go out and the endpoint lingers, closed but
// not released, while the peer's burst keeps arriving for it: none of those
// bytes may land in the cancelled receive.
TEST_F(Close, ReceiverClosesWhileItsTxRingIsFull)
{
	constexpr uint64_t kSize = 8 << 20;
	Message fwd(kSize, 31, 4, 1), back(kSize, 32, 5, 2);

	ASSERT_EQ(h.post_recv(c.server, fwd.dst.data(), kSize, 4, 1), 0);
	ASSERT_EQ(h.post_recv(c.client, back.dst.data(), kSize, 5, 2), 0);
	h.run();	// both grants delivered
	h.pause_rx(0, true);
	ASSERT_EQ(h.post_send(c.server, back.src.data(), kSize, 5, 2), 0);
	ASSERT_EQ(h.post_send(c.client, fwd.src.data(), kSize, 4, 1), 0);
	for (int i = 0; i < 100000 && h.bytes_copied(1) < kSize / 8; i++)
		ASSERT_NE(h.step(7), 0u);
	ASSERT_EQ(tb5_rm_tx_used(h.pair(), 1), h.ring_size());
	ASSERT_GT(h.bytes_copied(1), 0u);
	ASSERT_LT(h.bytes_copied(1), kSize / 2);

	h.close(c.server);
	h.run();	// the forward burst goes on arriving; end 0 still paused
	ASSERT_FALSE(h.released(c.server)) << "scenario broken: CLOSE went out";
	EXPECT_LT(h.bytes_copied(1), kSize);
	EXPECT_EQ(tb5test::find_mismatch(fwd.dst.data(), h.bytes_copied(1), fwd.seed),
		  h.bytes_copied(1));

	h.pause_rx(0, false);
	ASSERT_TRUE(h.run_until([&] {
		return h.released(c.server) &&
		       h.count_events(c.client, TB5_EV_PEER_CLOSED) > 0;
	}));
	h.run();
	EXPECT_TRUE(tb5test::completed(h, c.server, TB5_COMPLETION_RECV, 1, -ECANCELED, 0, 4));
	EXPECT_TRUE(tb5test::completed(h, c.server, TB5_COMPLETION_SEND, 2, -ECANCELED, 0, 5));
	// The forward send may have left the client's ring before the CLOSE
	// arrived: then it completed, as a send does once its bytes are out.
	const tb5_completion *fs = h.find_cqe(c.client, TB5_COMPLETION_SEND, 1);
	ASSERT_NE(fs, nullptr);
	EXPECT_TRUE(fs->status == 0 || fs->status == -ECONNRESET) << fs->status;
	EXPECT_TRUE(tb5test::completed(h, c.client, TB5_COMPLETION_RECV, 2, -ECONNRESET, 0, 5));
	EXPECT_EQ(tb5test::find_not(fwd.dst.data() + h.bytes_copied(1),
				    fwd.dst.size() - h.bytes_copied(1), Message::kFill),
		  fwd.dst.size() - h.bytes_copied(1));
	expect_peer_closed(c.client);
	expect_link_still_works();
}

// A large transfer is part way through when one side closes.
class CloseMidBurst : public Close {
protected:
	static constexpr uint64_t kSize = 8 << 20;

	void start()
	{
		msg = std::make_unique<Message>(kSize, 99, 4, 1);
		ASSERT_TRUE(msg->post(h, c.client, c.server));
		// Part way, and inside a burst: not on a burst boundary. Small
		// steps, so that it stops soon after a third has landed.
		for (int i = 0; i < 100000; i++) {
			if (h.bytes_copied(1) >= kSize / 3 &&
			    h.bytes_copied(1) % (16 * TB5_FRAME_MAX) != 0)
				break;
			ASSERT_NE(h.step(7), 0u) << "transfer stopped";
		}
		ASSERT_GE(h.bytes_copied(1), kSize / 3);
		ASSERT_LT(h.bytes_copied(1), kSize);
		ASSERT_TRUE(h.cq(c.client).empty() && h.cq(c.server).empty());
	}

	// What landed before the receive failed is the message's own prefix;
	// after it failed, nothing more landed.
	void expect_prefix_only(uint64_t at_fail)
	{
		EXPECT_EQ(tb5test::find_mismatch(msg->dst.data(), at_fail, msg->seed), at_fail);
		EXPECT_EQ(tb5test::find_not(msg->dst.data() + at_fail,
					    msg->dst.size() - at_fail, Message::kFill),
			  msg->dst.size() - at_fail)
			<< "bytes landed after the receive completed";
	}

	std::unique_ptr<Message> msg;
};

TEST_F(CloseMidBurst, SenderCloses)
{
	start();
	h.close(c.client);
	ASSERT_TRUE(h.run_until([&] { return h.released(c.client); }));
	// The send's frames had to leave the ring before it could complete.
	EXPECT_TRUE(tb5test::completed(h, c.client, TB5_COMPLETION_SEND, 1, -ECANCELED, 0, 4));

	ASSERT_TRUE(h.run_until([&] { return h.count_events(c.server, TB5_EV_PEER_CLOSED) > 0; }));
	EXPECT_TRUE(tb5test::completed(h, c.server, TB5_COMPLETION_RECV, 1, -ECONNRESET, 0, 4));
	const uint64_t at_fail = h.bytes_copied(1);
	h.run();
	EXPECT_EQ(h.bytes_copied(1), at_fail);
	expect_prefix_only(at_fail);
	expect_peer_closed(c.server);
	expect_link_still_works();
}

TEST_F(CloseMidBurst, ReceiverCloses)
{
	start();
	h.close(c.server);
	ASSERT_TRUE(h.run_until([&] { return h.released(c.server); }));
	EXPECT_TRUE(tb5test::completed(h, c.server, TB5_COMPLETION_RECV, 1, -ECANCELED, 0, 4));

	ASSERT_TRUE(h.run_until([&] { return h.count_events(c.client, TB5_EV_PEER_CLOSED) > 0; }));
	h.run();
	EXPECT_TRUE(tb5test::completed(h, c.client, TB5_COMPLETION_SEND, 1, -ECONNRESET, 0, 4));
	// The rest of the burst in flight arrived for a closed endpoint and
	// was dropped: the harness refuses (and reports) any copy into a
	// receive that has completed, so what landed is a prefix.
	EXPECT_LT(h.bytes_copied(1), kSize);
	expect_prefix_only(h.bytes_copied(1));
	expect_peer_closed(c.client);
	expect_link_still_works();
}

// The receiver closes while the sender's burst sits on a full ring.
TEST_F(CloseMidBurst, ReceiverClosesWhileStalled)
{
	start();
	h.pause_rx(1, true);
	h.run();
	const uint64_t before = h.bytes_copied(1);
	h.close(c.server);
	h.pause_rx(1, false);
	ASSERT_TRUE(h.run_until([&] {
		return h.released(c.server) &&
		       h.count_events(c.client, TB5_EV_PEER_CLOSED) > 0;
	}));
	h.run();
	EXPECT_TRUE(tb5test::completed(h, c.server, TB5_COMPLETION_RECV, 1, -ECANCELED, 0, 4));
	EXPECT_TRUE(tb5test::completed(h, c.client, TB5_COMPLETION_SEND, 1, -ECONNRESET, 0, 4));
	// A full ring's worth of frames waited for the closed receiver: none
	// of them may land.
	EXPECT_EQ(h.bytes_copied(1), before);
	expect_prefix_only(before);
	EXPECT_GT(h.link_stats(1).rx_dropped, 0u);
	expect_peer_closed(c.client);
	expect_link_still_works();
}

} // namespace
