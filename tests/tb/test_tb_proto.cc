// SPDX-License-Identifier: MIT
//
// test_tb_proto.cc - the tb backend's hardware-free pieces, one at a time:
// service identity and properties, link speed, login messages, the login
// state machine, the bring-up ledger, the frame mapping and the TX slots.

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "tb5_tb_proto.h"

namespace {

const uint8_t kA[16] = { 0xa0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
const uint8_t kB[16] = { 0xb0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

// --- identity -------------------------------------------------------------

TEST(Identity, KeyFitsAPropertyKey)
{
	EXPECT_LE(strlen(TB5_TB_KEY), 8u);
	EXPECT_NE(memcmp(tb5_tb_dir_uuid, tb5_tb_msg_uuid, 16), 0);
}

TEST(Identity, PropertiesCarryProtocolAndSettings)
{
	struct tb5_tb_prop p[TB5_TB_NPROPS];

	tb5_tb_props(true, p);
	EXPECT_STREQ(p[0].key, "prtcid");
	EXPECT_EQ(p[0].value, TB5_TB_PRTCID);
	EXPECT_STREQ(p[1].key, "prtcvers");
	EXPECT_EQ(p[1].value, TB5_TB_PRTCVERS);
	EXPECT_STREQ(p[2].key, "prtcrevs");
	EXPECT_STREQ(p[3].key, "prtcstns");
	EXPECT_EQ(p[3].value, TB5_TB_F_E2E);
	tb5_tb_props(false, p);
	EXPECT_EQ(p[3].value, 0u);
	for (auto &q : p)
		EXPECT_LE(strlen(q.key), 8u);
}

TEST(Identity, ServiceCheckAndAgreement)
{
	EXPECT_EQ(tb5_tb_service_check(TB5_TB_PRTCID, TB5_TB_PRTCVERS), 0);
	EXPECT_EQ(tb5_tb_service_check(TB5_TB_PRTCID + 1, TB5_TB_PRTCVERS),
		  -EPROTONOSUPPORT);
	EXPECT_EQ(tb5_tb_service_check(TB5_TB_PRTCID, TB5_TB_PRTCVERS + 1),
		  -EPROTONOSUPPORT);
	EXPECT_EQ(tb5_tb_agree(TB5_TB_F_E2E, TB5_TB_F_E2E), TB5_TB_F_E2E);
	EXPECT_EQ(tb5_tb_agree(TB5_TB_F_E2E, 0), 0u);
	EXPECT_EQ(tb5_tb_agree(0, TB5_TB_F_E2E), 0u);
	// Bits this version does not know are never agreed on.
	EXPECT_EQ(tb5_tb_agree(0xffffffffu, 0xffffffffu), TB5_TB_F_KNOWN);
}

// --- speed ------------------------------------------------------------------

TEST(Speed, LanesFromEitherWidthEncoding)
{
	uint32_t tx, rx;

	tb5_tb_lanes(1, &tx, &rx);	// one lane (6.1), TB_LINK_WIDTH_SINGLE
	EXPECT_EQ(tx, 1u);
	EXPECT_EQ(rx, 1u);
	tb5_tb_lanes(2, &tx, &rx);	// two lanes (6.1), TB_LINK_WIDTH_DUAL
	EXPECT_EQ(tx, 2u);
	EXPECT_EQ(rx, 2u);
	tb5_tb_lanes(4, &tx, &rx);	// TB_LINK_WIDTH_ASYM_TX
	EXPECT_EQ(tx, 3u);
	EXPECT_EQ(rx, 1u);
	tb5_tb_lanes(8, &tx, &rx);	// TB_LINK_WIDTH_ASYM_RX
	EXPECT_EQ(tx, 1u);
	EXPECT_EQ(rx, 3u);
	tb5_tb_lanes(0, &tx, &rx);
	EXPECT_EQ(tx, 0u);
	tb5_tb_lanes(3, &tx, &rx);
	EXPECT_EQ(tx + rx, 0u);
}

TEST(Speed, SlowerDirectionInMbps)
{
	EXPECT_EQ(tb5_tb_speed_mbps(40, 2, 2), 80000u);	// TB5 symmetric
	EXPECT_EQ(tb5_tb_speed_mbps(40, 3, 1), 40000u);	// TB5 asymmetric
	EXPECT_EQ(tb5_tb_speed_mbps(20, 2, 2), 40000u);	// TB3 / TB4
	EXPECT_EQ(tb5_tb_speed_mbps(10, 1, 1), 10000u);
	EXPECT_EQ(tb5_tb_speed_mbps(0, 2, 2), 0u);
	EXPECT_EQ(tb5_tb_speed_mbps(40, 0, 0), 0u);
	EXPECT_EQ(tb5_tb_speed_mbps(0xffffffffu, 3, 3), 0xffffffffu);
}

// --- messages -----------------------------------------------------------

struct tb5_tb_msg sample_login()
{
	struct tb5_tb_msg m;

	memset(&m, 0, sizeof(m));
	m.route = 0x0000000300000001ull;
	m.seq = 2;
	m.type = TB5_TB_MSG_LOGIN;
	memcpy(m.sender, kA, 16);
	memcpy(m.target, kB, 16);
	m.cmd_id = 77;
	m.version = TB5_TB_MSG_VERSION;
	m.path = 9;
	m.features = TB5_TB_F_E2E;
	m.ring_size = 4096;
	m.session = 0xdeadbeef;
	return m;
}

TEST(Message, RoundTrip)
{
	struct tb5_tb_msg m = sample_login(), d;
	uint32_t w[TB5_TB_MSG_WORDS];

	tb5_tb_msg_encode(&m, w);
	// The XDomain header: the length counts the words after it.
	EXPECT_EQ(w[0], 3u);
	EXPECT_EQ(w[1], 1u);
	EXPECT_EQ(w[2] & 0x3fu, TB5_TB_MSG_WORDS - 3);
	EXPECT_EQ((w[2] >> 27) & 3u, 2u);
	EXPECT_EQ(memcmp(&w[3], tb5_tb_msg_uuid, 16), 0);
	ASSERT_EQ(tb5_tb_msg_decode(w, sizeof(w), &d), 0);
	EXPECT_EQ(memcmp(&m, &d, sizeof(m)), 0);
	EXPECT_TRUE(tb5_tb_msg_is_request(d.type));
	EXPECT_TRUE(tb5_tb_msg_for(&d, m.route, kA, kB));
	EXPECT_FALSE(tb5_tb_msg_for(&d, m.route, kB, kA));
	EXPECT_FALSE(tb5_tb_msg_for(&d, m.route + 1, kA, kB));
}

TEST(Message, ResponseRouteBitIsIgnored)
{
	struct tb5_tb_msg m = sample_login(), d;
	uint32_t w[TB5_TB_MSG_WORDS];

	tb5_tb_msg_encode(&m, w);
	w[0] |= 0x80000000u;	// how responses come back
	ASSERT_EQ(tb5_tb_msg_decode(w, sizeof(w), &d), 0);
	EXPECT_EQ(d.route, m.route);
	EXPECT_TRUE(tb5_tb_msg_for(&d, m.route | (1ull << 63), kA, kB));
}

TEST(Message, MalformedIsRefused)
{
	struct tb5_tb_msg m = sample_login(), d;
	uint32_t w[TB5_TB_MSG_WORDS + 4];

	tb5_tb_msg_encode(&m, w);
	EXPECT_EQ(tb5_tb_msg_decode(w, TB5_TB_MSG_BYTES - 4, &d), -EBADMSG);
	EXPECT_EQ(tb5_tb_msg_decode(w, TB5_TB_MSG_BYTES + 2, &d), -EBADMSG);
	EXPECT_EQ(tb5_tb_msg_decode(nullptr, TB5_TB_MSG_BYTES, &d), -EBADMSG);
	// Size and length field disagree.
	EXPECT_EQ(tb5_tb_msg_decode(w, TB5_TB_MSG_BYTES + 4, &d), -EBADMSG);
	// Another protocol's UUID.
	tb5_tb_msg_encode(&m, w);
	w[4] ^= 1;
	EXPECT_EQ(tb5_tb_msg_decode(w, TB5_TB_MSG_BYTES, &d), -EBADMSG);
	// Unknown types, version 0.
	for (uint32_t type : { 0u, 5u, 0xffffffffu }) {
		tb5_tb_msg_encode(&m, w);
		w[15] = type;
		EXPECT_EQ(tb5_tb_msg_decode(w, TB5_TB_MSG_BYTES, &d), -EBADMSG)
			<< type;
	}
	tb5_tb_msg_encode(&m, w);
	w[17] = 0;
	EXPECT_EQ(tb5_tb_msg_decode(w, TB5_TB_MSG_BYTES, &d), -EBADMSG);
}

TEST(Message, LongerLaterVersionIsRead)
{
	struct tb5_tb_msg m = sample_login(), d;
	uint32_t w[TB5_TB_MSG_WORDS + 4] = {};

	m.version = 2;
	tb5_tb_msg_encode(&m, w);
	w[2] = (w[2] & ~0x3fu) | (TB5_TB_MSG_WORDS + 4 - 3);
	ASSERT_EQ(tb5_tb_msg_decode(w, sizeof(w), &d), 0);
	EXPECT_EQ(d.version, 2u);
	EXPECT_EQ(d.path, 9u);
}

TEST(Message, ResponseAnswersTheRequest)
{
	struct tb5_tb_msg m = sample_login(), r;

	tb5_tb_login_response(&m, EAGAIN, &r);
	EXPECT_EQ(r.type, (uint32_t)TB5_TB_MSG_LOGIN_RESP);
	EXPECT_EQ(r.cmd_id, m.cmd_id);
	EXPECT_EQ(r.seq, m.seq);
	EXPECT_EQ(r.status, (uint32_t)EAGAIN);
	EXPECT_EQ(memcmp(r.sender, kB, 16), 0);
	EXPECT_EQ(memcmp(r.target, kA, 16), 0);
	EXPECT_FALSE(tb5_tb_msg_is_request(r.type));
	m.type = TB5_TB_MSG_LOGOUT;
	tb5_tb_login_response(&m, 0, &r);
	EXPECT_EQ(r.type, (uint32_t)TB5_TB_MSG_LOGOUT_RESP);
}

// --- the login state machine -------------------------------------------

class Login : public ::testing::Test {
protected:
	void SetUp() override
	{
		memset(&l, 0, sizeof(l));
		local.path = 8;
		local.features = TB5_TB_F_E2E;
		local.ring_size = 1024;
		tb5_tb_login_start(&l, &local, 100, &act);
	}

	// Our LOGIN, answered with @status (or lost: @err).
	void answer(int err, uint32_t status = 0)
	{
		struct tb5_tb_msg req, resp;
		uint32_t cmd = tb5_tb_login_request(&l, TB5_TB_MSG_LOGIN, &req);

		EXPECT_EQ(req.path, local.path);
		EXPECT_EQ(req.session, l.session);
		tb5_tb_login_response(&req, status, &resp);
		tb5_tb_login_result(&l, cmd, err, err ? nullptr : &resp, &act);
	}

	// The peer's LOGIN.
	void peer_login(uint32_t path = 9, uint32_t session = 200,
			uint32_t version = TB5_TB_MSG_VERSION)
	{
		struct tb5_tb_msg m = sample_login();

		m.path = path;
		m.session = session;
		m.version = version;
		tb5_tb_login_rx(&l, &m, &act);
	}

	void peer_logout()
	{
		struct tb5_tb_msg m = sample_login();

		m.type = TB5_TB_MSG_LOGOUT;
		tb5_tb_login_rx(&l, &m, &act);
	}

	struct tb5_tb_login l;
	struct tb5_tb_local local;
	struct tb5_tb_act act;
};

TEST_F(Login, StartSchedulesTheFirstLogin)
{
	EXPECT_EQ(l.state, TB5_TB_LOGIN);
	EXPECT_EQ(act.flags, TB5_TB_ACT_SEND_LOGIN);
	EXPECT_EQ(act.delay_ms, TB5_TB_LOGIN_FIRST_MS);
}

TEST_F(Login, OursThenTheirsConnects)
{
	answer(0);
	EXPECT_TRUE(l.sent);
	EXPECT_EQ(act.flags, 0u);
	peer_login(9);
	EXPECT_EQ(act.flags, TB5_TB_ACT_RESPOND | TB5_TB_ACT_CONNECT);
	EXPECT_EQ(act.status, 0u);
	EXPECT_EQ(l.state, TB5_TB_CONNECTED);
	EXPECT_EQ(l.peer.path, 9u);
	EXPECT_EQ(l.logins, 1u);
}

TEST_F(Login, TheirsThenOursConnects)
{
	peer_login(9);
	// Answered, and ours goes out at once.
	EXPECT_EQ(act.flags, TB5_TB_ACT_RESPOND | TB5_TB_ACT_SEND_LOGIN);
	EXPECT_EQ(act.delay_ms, 0u);
	answer(0);
	EXPECT_EQ(act.flags, TB5_TB_ACT_CONNECT);
	EXPECT_EQ(l.state, TB5_TB_CONNECTED);
}

TEST_F(Login, LostResponsesAreRetriedThenGivenUp)
{
	for (uint32_t i = 1; i < TB5_TB_LOGIN_RETRIES; i++) {
		answer(-ETIMEDOUT);
		ASSERT_EQ(act.flags, TB5_TB_ACT_SEND_LOGIN) << i;
		EXPECT_EQ(act.delay_ms, TB5_TB_LOGIN_RETRY_MS);
	}
	answer(-ETIMEDOUT);
	EXPECT_EQ(act.flags, 0u);
	EXPECT_EQ(l.state, TB5_TB_WAIT);
	EXPECT_EQ(l.login_failures, 1u);
	// The peer turns up: log in again at once.
	peer_login();
	EXPECT_EQ(act.flags, TB5_TB_ACT_RESPOND | TB5_TB_ACT_SEND_LOGIN);
	EXPECT_EQ(l.state, TB5_TB_LOGIN);
	answer(0);
	EXPECT_EQ(l.state, TB5_TB_CONNECTED);
}

TEST_F(Login, RefusedVersionGivesUp)
{
	answer(0, EPROTONOSUPPORT);
	EXPECT_EQ(act.flags, 0u);
	EXPECT_EQ(l.state, TB5_TB_WAIT);
}

TEST_F(Login, BusyPeerIsRetried)
{
	answer(0, EAGAIN);
	EXPECT_EQ(act.flags, TB5_TB_ACT_SEND_LOGIN);
	EXPECT_FALSE(l.sent);
}

// Any status but 0 and EPROTONOSUPPORT is a refusal to retry, whatever its
// value: it is never negated into an errno (0x80000000 once was, signed
// overflow found by tb5-fuzz-tb; corpus-tb/regress-status-int-min).
TEST_F(Login, AnyOtherStatusIsARefusalRetried)
{
	for (uint32_t status : {1u, 0x7fffffffu, 0x80000000u, 0xffffffffu,
				static_cast<uint32_t>(-EPROTONOSUPPORT)}) {
		answer(0, status);
		EXPECT_EQ(act.flags, TB5_TB_ACT_SEND_LOGIN) << status;
		EXPECT_EQ(l.state, TB5_TB_LOGIN) << status;
		EXPECT_FALSE(l.sent) << status;
	}
	answer(0);
	EXPECT_TRUE(l.sent);
}

TEST_F(Login, StaleResponsesAreIgnored)
{
	struct tb5_tb_msg req, resp;
	uint32_t old = tb5_tb_login_request(&l, TB5_TB_MSG_LOGIN, &req);

	// A newer request went out meanwhile: the old one's result is void.
	tb5_tb_login_request(&l, TB5_TB_MSG_LOGIN, &req);
	tb5_tb_login_response(&req, 0, &resp);
	tb5_tb_login_result(&l, old, 0, &resp, &act);
	EXPECT_EQ(act.flags, 0u);
	EXPECT_FALSE(l.sent);
	// A response to another request, matched to ours by the channel.
	uint32_t cmd = tb5_tb_login_request(&l, TB5_TB_MSG_LOGIN, &req);
	tb5_tb_login_response(&req, 0, &resp);
	resp.cmd_id = cmd + 5;
	tb5_tb_login_result(&l, cmd, 0, &resp, &act);
	EXPECT_FALSE(l.sent);
	EXPECT_EQ(act.flags, TB5_TB_ACT_SEND_LOGIN);
	// A LOGOUT response is no LOGIN response.
	cmd = tb5_tb_login_request(&l, TB5_TB_MSG_LOGIN, &req);
	req.type = TB5_TB_MSG_LOGOUT;
	tb5_tb_login_response(&req, 0, &resp);
	tb5_tb_login_result(&l, cmd, 0, &resp, &act);
	EXPECT_FALSE(l.sent);
}

TEST_F(Login, CommandIdsNeverRepeatOrAreZero)
{
	struct tb5_tb_msg m;
	std::set<uint32_t> seen;

	l.cmd_id = 0xfffffffeu;
	for (int i = 0; i < 4; i++) {
		uint32_t id = tb5_tb_login_request(&l, TB5_TB_MSG_LOGIN, &m);

		EXPECT_NE(id, 0u);
		EXPECT_TRUE(seen.insert(id).second);
	}
}

TEST_F(Login, DuplicateLoginWhileConnectedIsOnlyAnswered)
{
	answer(0);
	peer_login(9, 200);
	ASSERT_EQ(l.state, TB5_TB_CONNECTED);
	peer_login(9, 200);
	EXPECT_EQ(act.flags, TB5_TB_ACT_RESPOND);
	EXPECT_EQ(l.state, TB5_TB_CONNECTED);
}

TEST_F(Login, PeerStartingOverReconnects)
{
	answer(0);
	peer_login(9, 200);
	ASSERT_EQ(l.state, TB5_TB_CONNECTED);
	peer_login(10, 201);
	EXPECT_EQ(act.flags, TB5_TB_ACT_RESPOND | TB5_TB_ACT_DISCONNECT |
				     TB5_TB_ACT_SEND_LOGIN);
	EXPECT_EQ(l.state, TB5_TB_LOGIN);
	EXPECT_EQ(l.peer.path, 10u);
	answer(0);
	EXPECT_EQ(act.flags, TB5_TB_ACT_CONNECT);
	EXPECT_EQ(l.logins, 2u);
}

TEST_F(Login, OtherVersionIsAnsweredWithRefusal)
{
	peer_login(9, 200, 2);
	EXPECT_EQ(act.flags, TB5_TB_ACT_RESPOND);
	EXPECT_EQ(act.status, (uint32_t)EPROTONOSUPPORT);
	EXPECT_FALSE(l.received);
}

TEST_F(Login, LogoutDisconnectsAndWaits)
{
	answer(0);
	peer_login();
	peer_logout();
	EXPECT_EQ(act.flags, TB5_TB_ACT_RESPOND | TB5_TB_ACT_DISCONNECT);
	EXPECT_EQ(l.state, TB5_TB_WAIT);
	EXPECT_FALSE(l.sent);
	EXPECT_FALSE(l.received);
	// A logout before the connection only stops us sending.
	peer_login();
	peer_logout();
	EXPECT_EQ(act.flags, TB5_TB_ACT_RESPOND);
}

TEST_F(Login, StoppedEndsAnswerNothing)
{
	answer(0);
	EXPECT_TRUE(tb5_tb_login_stop(&l, &act));	// the peer knows us
	EXPECT_EQ(act.flags, 0u);
	EXPECT_EQ(l.state, TB5_TB_IDLE);
	peer_login();
	EXPECT_EQ(act.flags, 0u);
	peer_logout();
	EXPECT_EQ(act.flags, 0u);
	// Nothing acknowledged: no logout owed.
	tb5_tb_login_start(&l, &local, 300, &act);
	EXPECT_FALSE(tb5_tb_login_stop(&l, &act));
}

TEST_F(Login, StopWhileConnectedDisconnects)
{
	answer(0);
	peer_login();
	EXPECT_TRUE(tb5_tb_login_stop(&l, &act));
	EXPECT_EQ(act.flags, TB5_TB_ACT_DISCONNECT);
	// Results of requests made before the stop are void.
	answer(0);
	EXPECT_EQ(act.flags, 0u);
	EXPECT_FALSE(l.sent);
}

TEST_F(Login, FailedConnectRetriesWithANewSession)
{
	answer(0);
	peer_login();
	ASSERT_EQ(l.state, TB5_TB_CONNECTED);
	uint32_t session = l.session;
	tb5_tb_login_connect_failed(&l, -EBUSY, &act);
	EXPECT_EQ(act.flags, TB5_TB_ACT_DISCONNECT | TB5_TB_ACT_SEND_LOGIN);
	EXPECT_EQ(act.delay_ms, TB5_TB_CONNECT_RETRY_MS);
	EXPECT_EQ(l.state, TB5_TB_LOGIN);
	EXPECT_NE(l.session, session);
	// Not connected: nothing to undo.
	tb5_tb_login_connect_failed(&l, -EBUSY, &act);
	EXPECT_EQ(act.flags, 0u);
}

TEST(LoginNames, EveryStateHasOne)
{
	EXPECT_STREQ(tb5_tb_login_state_name(TB5_TB_IDLE), "idle");
	EXPECT_STREQ(tb5_tb_login_state_name(TB5_TB_LOGIN), "login");
	EXPECT_STREQ(tb5_tb_login_state_name(TB5_TB_WAIT), "wait");
	EXPECT_STREQ(tb5_tb_login_state_name(TB5_TB_CONNECTED), "connected");
}

// --- the ledger -----------------------------------------------------------

TEST(Ledger, StepsInOrderAndUndoneInReverse)
{
	struct tb5_tb_ledger lg = {};
	int s, expect = 0;

	while ((s = tb5_tb_ledger_next(&lg)) >= 0) {
		EXPECT_EQ(s, expect++);
		tb5_tb_ledger_mark(&lg, (enum tb5_tb_step)s);
	}
	EXPECT_EQ(expect, TB5_TB_NSTEPS);
	// The RX ring is primed before the paths are enabled.
	EXPECT_LT(TB5_TB_STEP_RX_PRIME, TB5_TB_STEP_PATHS);
	EXPECT_LT(TB5_TB_STEP_PATHS, TB5_TB_STEP_LINK_UP);
	while ((s = tb5_tb_ledger_undo(&lg)) >= 0)
		EXPECT_EQ(s, --expect);
	EXPECT_EQ(expect, 0);
	EXPECT_EQ(lg.done, 0u);
}

TEST(Ledger, PartialBringUpUndoesOnlyWhatWasDone)
{
	for (int fail = 0; fail < TB5_TB_NSTEPS; fail++) {
		struct tb5_tb_ledger lg = {};
		std::vector<int> undone;
		int s;

		while ((s = tb5_tb_ledger_next(&lg)) >= 0 && s != fail)
			tb5_tb_ledger_mark(&lg, (enum tb5_tb_step)s);
		while ((s = tb5_tb_ledger_undo(&lg)) >= 0)
			undone.push_back(s);
		ASSERT_EQ((int)undone.size(), fail);
		for (int i = 0; i < fail; i++)
			EXPECT_EQ(undone[i], fail - 1 - i);
	}
}

TEST(Ledger, NamesAndBadSteps)
{
	struct tb5_tb_ledger lg = {};

	for (int s = 0; s < TB5_TB_NSTEPS; s++)
		EXPECT_STRNE(tb5_tb_step_name((enum tb5_tb_step)s), "?");
	tb5_tb_ledger_mark(&lg, TB5_TB_NSTEPS);
	EXPECT_EQ(lg.done, 0u);
}

// --- frames ---------------------------------------------------------------

TEST(Frames, DescriptorsForEveryMarkerPair)
{
	const struct {
		uint8_t sof, eof, pdf;
	} cases[] = {
		{ TB5_SOF_HEADER, TB5_EOF_MORE, TB5_TB_PDF_HDR_MORE },
		{ TB5_SOF_HEADER, TB5_EOF_LAST, TB5_TB_PDF_HDR_LAST },
		{ TB5_SOF_PAYLOAD, TB5_EOF_MORE, TB5_TB_PDF_PAY_MORE },
		{ TB5_SOF_PAYLOAD, TB5_EOF_LAST, TB5_TB_PDF_PAY_LAST },
	};

	for (const auto &c : cases) {
		uint8_t ps, pe, sof, eof;
		uint32_t size, len;

		ASSERT_EQ(tb5_tb_tx_desc(c.sof, c.eof, 100, &ps, &pe, &size), 0);
		EXPECT_EQ(ps, TB5_TB_PDF_SOF);
		EXPECT_EQ(pe, c.pdf);
		EXPECT_EQ(size, 100u);
		// Every EOF PDF ends a frame; the SOF PDF starts one.
		EXPECT_TRUE(TB5_TB_EOF_MASK & (1u << pe));
		EXPECT_FALSE(TB5_TB_SOF_MASK & (1u << pe));
		EXPECT_TRUE(TB5_TB_SOF_MASK & (1u << ps));
		// The RX side recovers the markers from the EOF PDF alone.
		ASSERT_EQ(tb5_tb_rx_check(0, size, pe, &sof, &eof, &len),
			  TB5_TB_RX_OK);
		EXPECT_EQ(sof, c.sof);
		EXPECT_EQ(eof, c.eof);
		EXPECT_EQ(len, 100u);
	}
}

TEST(Frames, FullFramesUseTheZeroSize)
{
	uint8_t ps, pe, sof, eof;
	uint32_t size, len;

	ASSERT_EQ(tb5_tb_tx_desc(TB5_SOF_PAYLOAD, TB5_EOF_MORE, TB5_FRAME_MAX,
				 &ps, &pe, &size), 0);
	EXPECT_EQ(size, 0u);
	ASSERT_EQ(tb5_tb_rx_check(0, size, pe, &sof, &eof, &len), TB5_TB_RX_OK);
	EXPECT_EQ(len, TB5_FRAME_MAX);
	ASSERT_EQ(tb5_tb_tx_desc(TB5_SOF_HEADER, TB5_EOF_LAST, 1, &ps, &pe,
				 &size), 0);
	EXPECT_EQ(size, 1u);
}

TEST(Frames, WhatTheCoreNeverSendsIsRefused)
{
	uint8_t ps, pe;
	uint32_t size;

	EXPECT_EQ(tb5_tb_tx_desc(TB5_SOF_HEADER, TB5_EOF_LAST, 0, &ps, &pe,
				 &size), -EINVAL);
	EXPECT_EQ(tb5_tb_tx_desc(TB5_SOF_HEADER, TB5_EOF_LAST,
				 TB5_FRAME_MAX + 1, &ps, &pe, &size), -EINVAL);
	EXPECT_EQ(tb5_tb_tx_desc(7, TB5_EOF_LAST, 10, &ps, &pe, &size),
		  -EINVAL);
	EXPECT_EQ(tb5_tb_tx_desc(TB5_SOF_HEADER, TB5_SOF_HEADER, 10, &ps, &pe,
				 &size), -EINVAL);
}

TEST(Frames, BadReceivesAreClassified)
{
	uint8_t sof, eof;
	uint32_t len;

	EXPECT_EQ(tb5_tb_rx_check(TB5_TB_DESC_CRC_ERROR, 10,
				  TB5_TB_PDF_HDR_LAST, &sof, &eof, &len),
		  TB5_TB_RX_CRC);
	EXPECT_EQ(tb5_tb_rx_check(TB5_TB_DESC_OVERRUN, 10, TB5_TB_PDF_HDR_LAST,
				  &sof, &eof, &len),
		  TB5_TB_RX_OVERRUN);
	EXPECT_EQ(tb5_tb_rx_check(0, 10, TB5_TB_PDF_DROP, &sof, &eof, &len),
		  TB5_TB_RX_DROPPED);
	for (uint8_t pdf : { 0, 1, 7, 8, 15 })
		EXPECT_EQ(tb5_tb_rx_check(0, 10, pdf, &sof, &eof, &len),
			  TB5_TB_RX_BAD_PDF) << (int)pdf;
	// Only 12 bits of size: anything above reads as its low bits.
	ASSERT_EQ(tb5_tb_rx_check(0, 0x1010, TB5_TB_PDF_HDR_LAST, &sof, &eof,
				  &len), TB5_TB_RX_OK);
	EXPECT_EQ(len, 0x10u);
}

// --- the TX slots -----------------------------------------------------------

TEST(TxQueue, SizeMustBeAPowerOfTwo)
{
	struct tb5_tb_txq q;

	EXPECT_EQ(tb5_tb_txq_init(&q, 0), -EINVAL);
	EXPECT_EQ(tb5_tb_txq_init(&q, 100), -EINVAL);
	ASSERT_EQ(tb5_tb_txq_init(&q, 64), 0);
	EXPECT_EQ(q.kick_at, 8u);
	tb5_tb_txq_free(&q);
	tb5_tb_txq_free(&q);	// twice is harmless
}

TEST(TxQueue, FillCompleteInOrderAndKick)
{
	struct tb5_tb_txq q;
	uint32_t slot;
	uint64_t cookie;
	bool kick;

	ASSERT_EQ(tb5_tb_txq_init(&q, 64), 0);
	for (uint32_t i = 0; i < 64; i++) {
		ASSERT_EQ(tb5_tb_txq_reserve(&q, i % 3 ? 0 : 1000 + i, &slot), 0);
		EXPECT_EQ(slot, i);
	}
	EXPECT_EQ(tb5_tb_txq_used(&q), 64u);
	EXPECT_EQ(tb5_tb_txq_reserve(&q, 5, &slot), -ENOSPC);
	EXPECT_TRUE(q.stalled);
	EXPECT_EQ(q.full, 1u);
	for (uint32_t i = 0; i < 64; i++) {
		ASSERT_EQ(tb5_tb_txq_complete(&q, i, &cookie, &kick), 0);
		EXPECT_EQ(cookie, i % 3 ? 0 : 1000 + i);
		// The stalled core is woken once, when kick_at slots are free.
		EXPECT_EQ(kick, i + 1 == q.kick_at) << i;
	}
	EXPECT_EQ(tb5_tb_txq_used(&q), 0u);
	// A slot not in flight cannot complete.
	EXPECT_EQ(tb5_tb_txq_complete(&q, 0, &cookie, &kick), -EPROTO);
	EXPECT_EQ(tb5_tb_txq_complete(&q, 64, &cookie, &kick), -EPROTO);
	EXPECT_EQ(q.bad, 2u);
	EXPECT_EQ(q.completed, 64u);
	EXPECT_EQ(q.reordered, 0u);
	tb5_tb_txq_free(&q);
}

TEST(TxQueue, CompletionsReportedOutOfOrder)
{
	struct tb5_tb_txq q;
	uint32_t slot;
	uint64_t cookie;
	bool kick;

	ASSERT_EQ(tb5_tb_txq_init(&q, 64), 0);
	for (uint32_t i = 0; i < 4; i++)
		ASSERT_EQ(tb5_tb_txq_reserve(&q, 10 + i, &slot), 0);
	// A busy poll reaped slot 2 before the completion work reported 0, 1.
	ASSERT_EQ(tb5_tb_txq_complete(&q, 2, &cookie, &kick), 0);
	EXPECT_EQ(cookie, 12u);
	EXPECT_EQ(q.reordered, 1u);
	EXPECT_EQ(tb5_tb_txq_used(&q), 4u);	// 0 and 1 still hold the tail
	EXPECT_EQ(tb5_tb_txq_complete(&q, 2, &cookie, &kick), -EPROTO);
	ASSERT_EQ(tb5_tb_txq_complete(&q, 0, &cookie, &kick), 0);
	EXPECT_EQ(tb5_tb_txq_used(&q), 3u);
	ASSERT_EQ(tb5_tb_txq_complete(&q, 1, &cookie, &kick), 0);
	EXPECT_EQ(cookie, 11u);
	EXPECT_EQ(tb5_tb_txq_used(&q), 1u);	// 2 was done already
	ASSERT_EQ(tb5_tb_txq_complete(&q, 3, &cookie, &kick), 0);
	EXPECT_EQ(tb5_tb_txq_used(&q), 0u);
	tb5_tb_txq_free(&q);
}

TEST(TxQueue, WrapsAroundAndUnreserves)
{
	struct tb5_tb_txq q;
	uint32_t slot;
	uint64_t cookie;
	bool kick;

	ASSERT_EQ(tb5_tb_txq_init(&q, 64), 0);
	for (uint32_t i = 0; i < 1000; i++) {
		ASSERT_EQ(tb5_tb_txq_reserve(&q, i + 1, &slot), 0);
		EXPECT_EQ(slot, i % 64);
		ASSERT_EQ(tb5_tb_txq_complete(&q, slot, &cookie, &kick), 0);
		EXPECT_EQ(cookie, i + 1);
		EXPECT_FALSE(kick);
	}
	ASSERT_EQ(tb5_tb_txq_reserve(&q, 1, &slot), 0);
	tb5_tb_txq_unreserve(&q);
	EXPECT_EQ(tb5_tb_txq_used(&q), 0u);
	tb5_tb_txq_unreserve(&q);	// nothing reserved: no effect
	EXPECT_EQ(tb5_tb_txq_used(&q), 0u);
	tb5_tb_txq_free(&q);
}

TEST(TxQueue, ResetFreesEverySlot)
{
	struct tb5_tb_txq q;
	uint32_t slot;

	ASSERT_EQ(tb5_tb_txq_init(&q, 64), 0);
	while (!tb5_tb_txq_reserve(&q, 7, &slot)) {
	}
	ASSERT_TRUE(q.stalled);
	tb5_tb_txq_reset(&q);
	EXPECT_EQ(tb5_tb_txq_used(&q), 0u);
	EXPECT_FALSE(q.stalled);
	ASSERT_EQ(tb5_tb_txq_reserve(&q, 1, &slot), 0);
	EXPECT_EQ(slot, 0u);
	tb5_tb_txq_free(&q);
}

} // namespace
