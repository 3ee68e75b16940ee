// SPDX-License-Identifier: MIT
//
// test_drops.cc - every frame a link drops or refuses is counted by kind
// (tb5_link_stats.drops): malformed, unknown connection, out of window,
// ring overflow, sequence gap. Frames are fed to one end as a hostile peer
// would send them, beside a connection that keeps working; a receive broken
// by a missing frame fails with -EBADMSG (lost), one the peer overran with
// -EPROTO (broke the protocol). The status a peer's REJECT, CLOSE or ABORT
// carries never becomes the victim's errno: a known wire code fails the
// operation with its fixed errno, anything else with -EPROTO, the frame
// counted as malformed. A replayed grant (a CTS not newer than the last)
// is out_of_window, and the victim's next send waits for a real grant.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "message.hpp"
#include "pattern.hpp"
#include "tb5_core_internal.h"
#include "two_node.hpp"

namespace {

using tb5test::Message;
using tb5test::TwoNode;

struct Drops {
	uint64_t d[TB5_DROP_KINDS];
};

Drops drops(const TwoNode &h, int end)
{
	const struct tb5_link_stats st = h.link_stats(end);
	Drops r;

	std::memcpy(r.d, st.drops, sizeof(r.d));
	return r;
}

class DropCounters : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_TRUE(h.bring_up());
		c = h.connect_pair(1);
		ASSERT_TRUE(c.client && c.server);
		h.run();
		base = drops(h, 1);
	}

	// A header frame from "the peer" into end 1, whose endpoint is server.
	void inject(const struct tb5_wire_msg &m, uint8_t eof = TB5_EOF_LAST)
	{
		uint8_t buf[TB5_WIRE_MAX_LEN];
		const uint32_t len = tb5_wire_encode(&m, buf);

		tb5_link_rx(h.link(1), TB5_SOF_HEADER, eof, buf, len);
	}
	struct tb5_wire_msg to_server(uint8_t type) const
	{
		struct tb5_wire_msg m;

		std::memset(&m, 0, sizeof(m));
		m.type = type;
		m.dst = c.server->ep->id;
		m.src = c.client->ep->id;
		return m;
	}
	uint64_t grew(enum tb5_drop_kind k) const
	{
		return drops(h, 1).d[k] - base.d[k];
	}
	// A message still goes through, every byte checked.
	void still_works(uint64_t id)
	{
		std::vector<uint8_t> out(10000), in(10000, 0);

		tb5test::fill_pattern(out.data(), out.size(), id);
		ASSERT_EQ(h.post_recv(c.server, in.data(), in.size(), 3, id), 0);
		ASSERT_EQ(h.post_send(c.client, out.data(), out.size(), 3, id), 0);
		ASSERT_TRUE(h.run_until([&] {
			return h.find_cqe(c.server, TB5_COMPLETION_RECV, id) != nullptr;
		}));
		EXPECT_TRUE(tb5test::completed(h, c.server, TB5_COMPLETION_RECV, id, 0,
					       out.size(), 3));
		EXPECT_EQ(in, out);
	}

	TwoNode h{64};
	TwoNode::Conn c;
	Drops base{};
};

TEST_F(DropCounters, Malformed)
{
	const uint8_t junk[16] = { 0xde, 0xad };

	tb5_link_rx(h.link(1), TB5_SOF_HEADER, TB5_EOF_LAST, junk, sizeof(junk));
	tb5_link_rx(h.link(1), 0x7, TB5_EOF_LAST, junk, sizeof(junk));
	tb5_link_rx(h.link(1), TB5_SOF_HEADER, 0x9, junk, sizeof(junk));
	EXPECT_EQ(grew(TB5_DROP_MALFORMED), 3u);
	EXPECT_EQ(h.link_stats(1).rx_errors, 3u);
	still_works(1);
}

TEST_F(DropCounters, UnknownConnection)
{
	struct tb5_wire_msg m = to_server(TB5_WIRE_CTS);

	m.dst ^= 0x10000;	// another generation of the endpoint slot
	inject(m);
	m = to_server(TB5_WIRE_CTS);
	m.src ^= 1;		// not this connection's peer
	inject(m);
	EXPECT_EQ(grew(TB5_DROP_UNKNOWN_CONN), 2u);
	still_works(2);
}

TEST_F(DropCounters, OutOfWindow)
{
	struct tb5_wire_msg m = to_server(TB5_WIRE_DATA);

	m.u.data.seq = 12345;	// no receive was granted with it
	m.u.data.flags = TB5_DATA_LAST;
	inject(m);
	m = to_server(TB5_WIRE_ABORT);
	m.u.abort.seq = 77;
	inject(m);
	EXPECT_EQ(grew(TB5_DROP_OUT_OF_WINDOW), 2u);
	still_works(3);
}

TEST_F(DropCounters, DataPastThePostedBufferFailsTheReceive)
{
	std::vector<uint8_t> in(4096, 0xa5);

	ASSERT_EQ(h.post_recv(c.server, in.data(), in.size(), 9, 40), 0);
	h.run();
	const struct tb5_recv &r = c.server->ep->recvs[0];
	ASSERT_EQ(r.state, TB5_RECV_GRANTED);
	struct tb5_wire_msg m = to_server(TB5_WIRE_DATA);
	m.u.data.seq = r.seq;
	m.u.data.msg_len = in.size() + 1;
	m.u.data.burst_len = 1;
	inject(m, TB5_EOF_MORE);
	const uint8_t one = 0;
	tb5_link_rx(h.link(1), TB5_SOF_PAYLOAD, TB5_EOF_LAST, &one, 1);
	EXPECT_TRUE(tb5test::completed(h, c.server, TB5_COMPLETION_RECV, 40, -EPROTO, 0, 9));
	EXPECT_EQ(grew(TB5_DROP_OUT_OF_WINDOW), 1u);
	for (uint8_t b : in)
		ASSERT_EQ(b, 0xa5);
	still_works(4);
}

TEST_F(DropCounters, SequenceGap)
{
	std::vector<uint8_t> in(3 * TB5_FRAME_MAX, 0);
	const uint8_t frame[TB5_FRAME_MAX] = {};

	// A payload frame with no burst: its header was lost.
	tb5_link_rx(h.link(1), TB5_SOF_PAYLOAD, TB5_EOF_LAST, frame, 100);
	EXPECT_EQ(grew(TB5_DROP_SEQ_GAP), 1u);

	// A burst whose first header went missing: it starts past byte 0.
	ASSERT_EQ(h.post_recv(c.server, in.data(), in.size(), 9, 50), 0);
	h.run();
	struct tb5_wire_msg m = to_server(TB5_WIRE_DATA);
	m.u.data.seq = c.server->ep->recvs[0].seq;
	m.u.data.offset = TB5_FRAME_MAX;
	m.u.data.msg_len = in.size();
	m.u.data.burst_len = TB5_FRAME_MAX;
	inject(m, TB5_EOF_MORE);
	// Its payload is consumed and dropped: the burst was refused.
	tb5_link_rx(h.link(1), TB5_SOF_PAYLOAD, TB5_EOF_LAST, frame, TB5_FRAME_MAX);
	EXPECT_TRUE(tb5test::completed(h, c.server, TB5_COMPLETION_RECV, 50, -EBADMSG, 0, 9));
	EXPECT_EQ(grew(TB5_DROP_SEQ_GAP), 2u);

	// A burst cut short by the next header: its last frame was lost.
	ASSERT_EQ(h.post_recv(c.server, in.data(), in.size(), 9, 51), 0);
	h.run();
	m.u.data.seq = c.server->ep->recvs[0].seq;
	m.u.data.offset = 0;
	m.u.data.burst_len = 2 * TB5_FRAME_MAX;
	inject(m, TB5_EOF_MORE);
	tb5_link_rx(h.link(1), TB5_SOF_PAYLOAD, TB5_EOF_MORE, frame, TB5_FRAME_MAX);
	inject(to_server(TB5_WIRE_CTS));	// any header
	EXPECT_TRUE(tb5test::completed(h, c.server, TB5_COMPLETION_RECV, 51, -EBADMSG, 0, 9));
	EXPECT_EQ(grew(TB5_DROP_SEQ_GAP), 3u);
	h.run();
}

// A status on the wire, and what the victim must see for it.
struct WireStatusCase {
	int32_t code;
	int err;		// the errno the operation fails with
	uint64_t malformed;	// how much drops/malformed grows
};

// The cases for a frame type whose one code is @known, mapped to @err.
std::vector<WireStatusCase> status_cases(int32_t known, int err)
{
	std::vector<WireStatusCase> v = {{known, err, 0}};

	// Not a code; raw errnos a peer would like us to return (v1 carried
	// -errno); the other types' codes; the extremes.
	for (int32_t code : {0, 1, -EIO, -EPERM, -ENOMEM, -4095, -4096,
			     TB5_WIRE_ST_MSGSIZE, TB5_WIRE_ST_CONNRESET,
			     TB5_WIRE_ST_CONNREFUSED, 0x7fffffff,
			     -0x7fffffff - 1})
		if (code != known)
			v.push_back({code, -EPROTO, 1});
	return v;
}

TEST_F(DropCounters, AbortStatusIsMappedNotPassedOn)
{
	uint64_t id = 100, malformed = 0;
	std::vector<uint8_t> in(4096);

	for (const WireStatusCase &s : status_cases(TB5_WIRE_ST_MSGSIZE, -EMSGSIZE)) {
		SCOPED_TRACE(testing::Message() << "ABORT status " << s.code);
		ASSERT_EQ(h.post_recv(c.server, in.data(), in.size(), 8, ++id), 0);
		h.run();
		const struct tb5_recv *r = nullptr;
		for (const struct tb5_recv &x : c.server->ep->recvs)
			if (x.state == TB5_RECV_GRANTED && x.user_id == id)
				r = &x;
		ASSERT_NE(r, nullptr);
		struct tb5_wire_msg m = to_server(TB5_WIRE_ABORT);
		m.u.abort.seq = r->seq;
		m.u.abort.status = s.code;
		inject(m);
		EXPECT_TRUE(tb5test::completed(h, c.server, TB5_COMPLETION_RECV, id,
					       s.err, 0, 8));
		malformed += s.malformed;
		EXPECT_EQ(grew(TB5_DROP_MALFORMED), malformed);
	}
	EXPECT_EQ(grew(TB5_DROP_OUT_OF_WINDOW), 0u);
	still_works(7);
}

TEST_F(DropCounters, RejectStatusIsMappedNotPassedOn)
{
	uint64_t malformed = 0;

	for (const WireStatusCase &s : status_cases(TB5_WIRE_ST_CONNREFUSED,
						    -ECONNREFUSED)) {
		SCOPED_TRACE(testing::Message() << "REJECT status " << s.code);
		// A connect from end 1 the peer refuses before its CONNECT
		// even left: the REJECT alone decides how it fails.
		const struct tb5_addr nowhere = {0x5eed, 0x1234};
		tb5test::Ep *e = nullptr;
		ASSERT_EQ(h.connect(1, nowhere, &e), 0);
		struct tb5_wire_msg m = to_server(TB5_WIRE_REJECT);
		m.dst = e->ep->id;
		m.src = 0;
		m.u.reject.conn_cookie = e->ep->conn_cookie;
		m.u.reject.status = s.code;
		inject(m);
		EXPECT_EQ(h.count_events(e, TB5_EV_ERROR), 1);
		EXPECT_EQ(h.event_status(e, TB5_EV_ERROR), s.err);
		malformed += s.malformed;
		EXPECT_EQ(grew(TB5_DROP_MALFORMED), malformed);
		h.close(e);
		h.run();
	}
	still_works(8);
}

TEST_F(DropCounters, CloseStatusIsMappedNotPassedOn)
{
	uint64_t malformed = 0;

	for (const WireStatusCase &s : status_cases(TB5_WIRE_ST_CONNRESET,
						    -ECONNRESET)) {
		SCOPED_TRACE(testing::Message() << "CLOSE status " << s.code);
		const TwoNode::Conn p = h.connect_pair(1);
		ASSERT_TRUE(p.client && p.server);
		h.run();
		struct tb5_wire_msg m = to_server(TB5_WIRE_CLOSE);
		m.dst = p.server->ep->id;
		m.src = p.client->ep->id;
		m.u.close.status = s.code;
		inject(m);
		EXPECT_EQ(h.count_events(p.server, TB5_EV_PEER_CLOSED), 1);
		EXPECT_EQ(h.event_status(p.server, TB5_EV_PEER_CLOSED), s.err);
		malformed += s.malformed;
		EXPECT_EQ(grew(TB5_DROP_MALFORMED), malformed);
		h.close(p.server);
		h.close(p.client);
		h.run();
	}
	still_works(9);
}

TEST_F(DropCounters, RefusedByTheBackend)
{
	tb5_link_rx_refused(h.link(1), TB5_DROP_OVERFLOW, 5);
	EXPECT_EQ(grew(TB5_DROP_OVERFLOW), 5u);
	tb5_link_rx_refused(h.link(1), TB5_DROP_MALFORMED, 1);
	EXPECT_EQ(grew(TB5_DROP_MALFORMED), 1u);
	EXPECT_EQ(h.link_stats(1).rx_errors, 6u);
	still_works(6);
}

// --- grants (CTS) ----------------------------------------------------------
//
// Grants are taken in the order the peer posted its receives: a CTS whose
// counter (seq >> TB5_SEQ_SLOT_BITS) is not newer than the last grant taken
// is a replay, dropped and counted out_of_window, and never matches a
// send; newer is serial-number arithmetic on TB5_SEQ_COUNTER_BITS, so the
// counter's wrap is no replay. The victim is the server (end 1), sending to
// the client (end 0); the "client's" frames are fed to end 1.

constexpr uint32_t kHalf = 1u << (TB5_SEQ_COUNTER_BITS - 1);

uint32_t counter(uint32_t seq)
{
	return seq >> TB5_SEQ_SLOT_BITS;
}

class Grants : public DropCounters {
protected:
	// The CTS the client sends for its receive of @user_id (posted, not
	// completed yet): the frame a replay repeats.
	struct tb5_wire_msg cts_of(uint64_t user_id) const
	{
		struct tb5_wire_msg m = to_server(TB5_WIRE_CTS);

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
	// Every drop kind on both ends, and the rx_errors that count them:
	// @server_oow out_of_window on the server, nothing else anywhere.
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
	struct tb5_wire_msg m = to_server(TB5_WIRE_CTS);

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
