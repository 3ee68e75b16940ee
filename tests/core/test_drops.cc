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
// counted as malformed.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "message.hpp"
#include "pattern.hpp"
#include "tb5_core_internal.h"
#include "two_node.hpp"

namespace {

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

} // namespace
