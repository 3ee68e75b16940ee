// SPDX-License-Identifier: MIT
//
// test_cts.cc - grants (CTS) are taken in the order the peer posted its
// receives: a CTS whose counter (seq >> TB5_SEQ_SLOT_BITS) is not newer
// than the last grant taken is a replay, dropped and counted out_of_window,
// and never matches a send; newer is serial-number arithmetic on
// TB5_SEQ_COUNTER_BITS, so the counter's wrap is no replay. The victim is
// end 1's endpoint (the server), sending to end 0's (the client); frames
// "from the client" are fed to end 1 as a hostile peer would send them.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "message.hpp"
#include "tb5_core_internal.h"
#include "two_node.hpp"

namespace {

using tb5test::Message;
using tb5test::TwoNode;

constexpr uint32_t kHalf = 1u << (TB5_SEQ_COUNTER_BITS - 1);

uint32_t counter(uint32_t seq)
{
	return seq >> TB5_SEQ_SLOT_BITS;
}

class Grants : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_TRUE(h.bring_up());
		c = h.connect_pair(1);
		ASSERT_TRUE(c.client && c.server);
		h.run();
	}

	// The CTS the client sends for the receive of @user_id (posted, not
	// yet completed): the frame a replay repeats.
	struct tb5_wire_msg cts_of(uint64_t user_id) const
	{
		struct tb5_wire_msg m;

		std::memset(&m, 0, sizeof(m));
		m.type = TB5_WIRE_CTS;
		m.dst = c.server->ep->id;
		m.src = c.client->ep->id;
		for (const struct tb5_recv &r : c.client->ep->recvs)
			if (r.state != TB5_RECV_FREE && r.user_id == user_id) {
				m.u.cts.seq = r.seq;
				m.u.cts.tag = r.tag;
				m.u.cts.len = r.len;
				return m;
			}
		ADD_FAILURE() << "no receive " << user_id << " posted";
		return m;
	}
	void inject(const struct tb5_wire_msg &m)
	{
		uint8_t buf[TB5_WIRE_MAX_LEN];
		const uint32_t len = tb5_wire_encode(&m, buf);

		tb5_link_rx(h.link(1), TB5_SOF_HEADER, TB5_EOF_LAST, buf, len);
	}
	uint64_t out_of_window(int end) const
	{
		return h.link_stats(end).drops[TB5_DROP_OUT_OF_WINDOW];
	}
	// Grants the server holds that no send took yet.
	uint32_t grants_held() const
	{
		uint32_t n = 0;

		for (const struct tb5_grant &g : c.server->ep->grants)
			n += g.valid;
		return n;
	}
	// @m goes from the server to the client, received and checked.
	::testing::AssertionResult send(Message &m)
	{
		if (!m.post(h, c.server, c.client))
			return ::testing::AssertionFailure() << "posting failed";
		if (!h.run_until([&] { return m.done(h, c.server, c.client); }))
			return ::testing::AssertionFailure()
			       << "message " << m.user_id << " did not complete";
		return m.delivered(h, c.server, c.client);
	}
	// Every drop kind on both ends, and the rx_errors that count them.
	void expect_drops(uint64_t server_oow)
	{
		for (int end = 0; end < 2; end++) {
			const struct tb5_link_stats st = h.link_stats(end);
			const uint64_t oow = end ? server_oow : 0;

			SCOPED_TRACE(testing::Message() << "end " << end);
			for (int k = 0; k < TB5_DROP_KINDS; k++)
				EXPECT_EQ(st.drops[k],
					  k == TB5_DROP_OUT_OF_WINDOW ? oow : 0u)
					<< "drop kind " << k;
			EXPECT_EQ(st.rx_errors, oow);
		}
	}

	TwoNode h{64};
	TwoNode::Conn c;
};

// The replay of a grant the victim's send already used: dropped, counted
// once per frame, and the victim's next send of that tag waits for the
// peer's next real grant instead of going to a receive that is gone.
TEST_F(Grants, ReplayedCtsIsDroppedAndTheNextSendWaitsForARealGrant)
{
	Message first(5000, 0x51, 4, 1);

	ASSERT_EQ(h.post_recv(c.client, first.dst.data(), first.dst_len,
			      first.tag, first.user_id), 0);
	const struct tb5_wire_msg replay = cts_of(first.user_id);
	ASSERT_EQ(h.post_send(c.server, first.src.data(), first.len, first.tag,
			      first.user_id), 0);
	ASSERT_TRUE(h.run_until([&] { return first.done(h, c.server, c.client); }));
	ASSERT_TRUE(first.delivered(h, c.server, c.client));
	expect_drops(0);

	inject(replay);
	expect_drops(1);
	EXPECT_EQ(grants_held(), 0u);

	// More replays than the endpoint has grant slots: none takes one.
	for (uint32_t i = 1; i < 2 * TB5_EP_MAX_OPS; i++)
		inject(replay);
	expect_drops(2 * TB5_EP_MAX_OPS);
	EXPECT_EQ(grants_held(), 0u);

	// The victim's next send of the tag has no grant: it waits.
	Message next(7000, 0x52, replay.u.cts.tag, 2);
	ASSERT_EQ(h.post_send(c.server, next.src.data(), next.len, next.tag,
			      next.user_id), 0);
	h.run();
	EXPECT_EQ(h.find_cqe(c.server, TB5_COMPLETION_SEND, next.user_id), nullptr);
	EXPECT_EQ(h.outstanding(c.server), 1u);
	// The peer's next receive grants it; every byte lands there.
	ASSERT_EQ(h.post_recv(c.client, next.dst.data(), next.dst_len, next.tag,
			      next.user_id), 0);
	ASSERT_TRUE(h.run_until([&] { return next.done(h, c.server, c.client); }));
	EXPECT_TRUE(next.delivered(h, c.server, c.client));
	expect_drops(2 * TB5_EP_MAX_OPS);
	EXPECT_TRUE(h.violations().empty());
}

// A grant still waiting for its send, repeated: the repeat is no second
// grant, so one send takes the one grant and a second send waits.
TEST_F(Grants, RepeatOfAWaitingGrantIsNoSecondGrant)
{
	Message m(100, 0x53, 9, 3);

	ASSERT_EQ(h.post_recv(c.client, m.dst.data(), m.dst_len, m.tag,
			      m.user_id), 0);
	h.run();
	ASSERT_EQ(grants_held(), 1u);
	inject(cts_of(m.user_id));
	expect_drops(1);
	EXPECT_EQ(grants_held(), 1u);

	Message second(100, 0x54, 9, 4);
	ASSERT_EQ(h.post_send(c.server, m.src.data(), m.len, m.tag, m.user_id), 0);
	ASSERT_EQ(h.post_send(c.server, second.src.data(), second.len,
			      second.tag, second.user_id), 0);
	ASSERT_TRUE(h.run_until([&] { return m.done(h, c.server, c.client); }));
	EXPECT_TRUE(m.delivered(h, c.server, c.client));
	h.run();
	EXPECT_EQ(h.find_cqe(c.server, TB5_COMPLETION_SEND, second.user_id), nullptr);
	ASSERT_EQ(h.post_recv(c.client, second.dst.data(), second.dst_len,
			      second.tag, second.user_id), 0);
	ASSERT_TRUE(h.run_until([&] { return second.done(h, c.server, c.client); }));
	EXPECT_TRUE(second.delivered(h, c.server, c.client));
	expect_drops(1);
}

// The counter wraps after 2^26 receives: grants on both sides of the wrap
// are taken, and an old one from before it is still a replay.
TEST_F(Grants, CounterWrapIsNoReplayButAnOldGrantStillIs)
{
	Message warm(10, 0x55, 1, 10);
	ASSERT_TRUE(send(warm));

	// As if the client had posted 2^26 - 3 receives more, all granted.
	c.client->ep->recv_counter = TB5_SEQ_COUNTER_MASK - 1;
	c.server->ep->cts_last = TB5_SEQ_COUNTER_MASK - 2;

	const uint32_t want[] = {TB5_SEQ_COUNTER_MASK - 1, TB5_SEQ_COUNTER_MASK,
				 0, 1};
	std::vector<struct tb5_wire_msg> old;
	for (uint32_t i = 0; i < 4; i++) {
		Message m(3000 + i, 0x60 + i, 2, 20 + i);

		ASSERT_EQ(h.post_recv(c.client, m.dst.data(), m.dst_len, m.tag,
				      m.user_id), 0);
		old.push_back(cts_of(m.user_id));
		EXPECT_EQ(counter(old.back().u.cts.seq), want[i]);
		ASSERT_EQ(h.post_send(c.server, m.src.data(), m.len, m.tag,
				      m.user_id), 0);
		ASSERT_TRUE(h.run_until([&] { return m.done(h, c.server, c.client); }));
		EXPECT_TRUE(m.delivered(h, c.server, c.client)) << "counter " << want[i];
	}
	expect_drops(0);
	EXPECT_EQ(c.server->ep->cts_last, 1u);

	// Each of them again, the ones from before the wrap included.
	for (const struct tb5_wire_msg &m : old)
		inject(m);
	expect_drops(old.size());
	EXPECT_EQ(grants_held(), 0u);

	Message after(20000, 0x70, 2, 30);
	EXPECT_TRUE(send(after));
	EXPECT_EQ(c.server->ep->cts_last, 2u);
	expect_drops(old.size());
}

// Grants in posting order are all taken: a full window of receives before
// any send, across several tags, and a counter that skipped ahead (a CTS
// lost on the way is no reason to refuse the next).
TEST_F(Grants, InOrderGrantsAreTaken)
{
	std::vector<Message> ms;

	ms.reserve(2 * TB5_EP_MAX_OPS);
	for (uint32_t i = 0; i < TB5_EP_MAX_OPS; i++)
		ms.emplace_back(1000 + 97 * i, 0x100 + i, i % 5, 100 + i);
	for (Message &m : ms)
		ASSERT_EQ(h.post_recv(c.client, m.dst.data(), m.dst_len, m.tag,
				      m.user_id), 0);
	h.run();
	EXPECT_EQ(grants_held(), TB5_EP_MAX_OPS);
	for (Message &m : ms)
		ASSERT_EQ(h.post_send(c.server, m.src.data(), m.len, m.tag,
				      m.user_id), 0);
	ASSERT_TRUE(h.run_until([&] {
		for (Message &m : ms)
			if (!m.done(h, c.server, c.client))
				return false;
		return true;
	}));
	for (Message &m : ms)
		EXPECT_TRUE(m.delivered(h, c.server, c.client)) << m.user_id;

	c.client->ep->recv_counter += 1000;
	Message gap(4096, 0x200, 3, 300);
	EXPECT_TRUE(send(gap));
	EXPECT_EQ(c.server->ep->cts_last, TB5_EP_MAX_OPS + 1000);
	expect_drops(0);
}

// The first grant of a connection is taken whatever its counter; after it,
// a counter 2^25 ahead is behind (not newer), 2^25 - 1 ahead is newer.
TEST_F(Grants, NewerIsHalfTheCounterSpace)
{
	struct tb5_wire_msg m;

	std::memset(&m, 0, sizeof(m));
	m.type = TB5_WIRE_CTS;
	m.dst = c.server->ep->id;
	m.src = c.client->ep->id;
	m.u.cts.tag = 77;
	m.u.cts.len = 64;
	m.u.cts.seq = (12345u << TB5_SEQ_SLOT_BITS) | 5;
	inject(m);
	expect_drops(0);
	EXPECT_EQ(grants_held(), 1u);
	EXPECT_EQ(c.server->ep->cts_last, 12345u);

	m.u.cts.seq = ((12345u + kHalf) << TB5_SEQ_SLOT_BITS) | 6;
	inject(m);
	expect_drops(1);
	EXPECT_EQ(grants_held(), 1u);

	m.u.cts.seq = ((12345u + kHalf - 1) << TB5_SEQ_SLOT_BITS) | 7;
	inject(m);
	expect_drops(1);
	EXPECT_EQ(grants_held(), 2u);
	EXPECT_EQ(c.server->ep->cts_last, 12345u + kHalf - 1);
}

} // namespace
