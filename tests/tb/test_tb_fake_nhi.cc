// SPDX-License-Identifier: MIT
//
// test_tb_fake_nhi.cc - the tb backend's login, bring-up, frame mapping and
// flow control, end to end, between two simulated hosts (fake_nhi.hpp), with
// the real transport core carrying real messages above them.

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "fake_nhi.hpp"

namespace {

using tb5tb::Ep;
using tb5tb::FakePair;

std::vector<uint8_t> pattern(size_t len, uint8_t seed)
{
	std::vector<uint8_t> v(len);

	for (size_t i = 0; i < len; i++)
		v[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 12));
	return v;
}

const struct tb5_completion *find(const Ep *ep, uint64_t id)
{
	for (const auto &c : ep->cqes)
		if (c.user_id == id)
			return &c;
	return nullptr;
}

bool up(FakePair &p)
{
	p.probe(0);
	p.probe(1);
	return p.run_until([&] { return p.connected(); });
}

// Send @len bytes from @c to @s and check that they land intact.
void transfer(FakePair &p, Ep *c, Ep *s, size_t len, uint64_t id)
{
	std::vector<uint8_t> src = pattern(len, static_cast<uint8_t>(id));
	std::vector<uint8_t> dst(len + 64, 0xee);

	ASSERT_EQ(p.post_recv(s, dst.data(), dst.size(), 5, id), 0);
	ASSERT_EQ(p.post_send(c, src.data(), len, 5, id), 0);
	ASSERT_TRUE(p.run_until([&] { return find(c, id) && find(s, id); }))
		<< len << " bytes";
	EXPECT_EQ(find(c, id)->status, 0);
	EXPECT_EQ(find(s, id)->status, 0);
	EXPECT_EQ(find(s, id)->bytes, len);
	if (len) {
		EXPECT_EQ(memcmp(dst.data(), src.data(), len), 0) << len;
	}
	for (size_t i = len; i < dst.size(); i++)
		ASSERT_EQ(dst[i], 0xee) << "written past the message at " << i;
}

const std::vector<std::string> kUp = {
	"+in-hopid", "+tx-start", "+rx-start", "+rx-prime", "+paths",
	"+link-up",
};
const std::vector<std::string> kDown = {
	"-link-up", "-paths", "-rx-prime", "-rx-start", "-tx-start",
	"-in-hopid",
};

TEST(FakeNhi, LoginBringsBothLinksUpInOrder)
{
	FakePair p;

	ASSERT_TRUE(up(p));
	for (int i = 0; i < 2; i++) {
		uint64_t peer = 0;

		EXPECT_EQ(p.host(i).log, kUp);
		ASSERT_EQ(tb5_link_peer(p.host(i).link, &peer), 0);
		EXPECT_EQ(peer, p.host(1 - i).host_id);
		EXPECT_EQ(p.host(i).features, TB5_TB_F_E2E);
		EXPECT_EQ(p.host(i).in_hopid, p.host(1 - i).out_hopid);
	}
	// One LOGIN each way.
	EXPECT_EQ(p.requests, 2u);
}

TEST(FakeNhi, MessagesOfEverySizeBothWays)
{
	FakePair p(64);

	ASSERT_TRUE(up(p));
	auto conn1 = p.connect_pair(0, 42);
	Ep *c = conn1.first, *s = conn1.second;
	auto conn2 = p.connect_pair(1, 43);
	Ep *c2 = conn2.first, *s2 = conn2.second;
	uint64_t id = 1;

	for (size_t len : { 0ul, 1ul, 100ul, 4095ul, 4096ul, 4097ul, 65536ul,
			    (1ul << 20) + 3 }) {
		transfer(p, c, s, len, id++);
		transfer(p, c2, s2, len, id++);
	}
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(p.host(i).rx_lost, 0u);
		EXPECT_EQ(p.host(i).ring_errors, 0u);
		// A 64-slot ring under a 1 MiB message: the core stalled and
		// was kicked back to work.
		EXPECT_GT(p.host(i).txq.full, 0u);
		EXPECT_EQ(p.host(i).txq.bad, 0u);
	}
}

TEST(FakeNhi, BusyReceiverStallsTheSenderWithoutLoss)
{
	FakePair p(64);

	ASSERT_TRUE(up(p));
	auto conn3 = p.connect_pair(0, 42);
	Ep *c = conn3.first, *s = conn3.second;
	std::vector<uint8_t> src = pattern(1 << 20, 3);
	std::vector<uint8_t> dst(1 << 20);

	ASSERT_EQ(p.post_recv(s, dst.data(), dst.size(), 1, 1), 0);
	p.host(1).rx_paused = true;
	ASSERT_EQ(p.post_send(c, src.data(), src.size(), 1, 1), 0);
	p.run_until([] { return false; }, 10);
	// Every RX descriptor is full, the TX ring is full (but for the
	// slots that wait to wake the core in one go), nothing is lost.
	EXPECT_TRUE(p.host(1).rx_posted.empty());
	EXPECT_GT(tb5_tb_txq_used(&p.host(0).txq),
		  p.ring_size() - p.host(0).txq.kick_at);
	EXPECT_TRUE(p.host(0).txq.stalled);
	EXPECT_FALSE(find(c, 1));
	p.host(1).rx_paused = false;
	ASSERT_TRUE(p.run_until([&] { return find(s, 1) != nullptr; }));
	EXPECT_EQ(find(s, 1)->status, 0);
	EXPECT_EQ(memcmp(src.data(), dst.data(), src.size()), 0);
	EXPECT_EQ(p.host(1).rx_lost, 0u);
}

TEST(FakeNhi, WithoutE2EABusyReceiverLosesFrames)
{
	// One end does without: neither uses it, and a full RX ring drops.
	FakePair p(64, true, false);

	ASSERT_TRUE(up(p));
	EXPECT_EQ(p.host(0).features, 0u);
	EXPECT_EQ(p.host(1).features, 0u);
	auto conn4 = p.connect_pair(0, 42);
	Ep *c = conn4.first, *s = conn4.second;
	std::vector<uint8_t> src = pattern(1 << 20, 3);
	std::vector<uint8_t> dst(1 << 20);

	ASSERT_EQ(p.post_recv(s, dst.data(), dst.size(), 1, 1), 0);
	p.host(1).rx_paused = true;
	ASSERT_EQ(p.post_send(c, src.data(), src.size(), 1, 1), 0);
	p.run_until([] { return false; }, 10);
	p.host(1).rx_paused = false;
	p.run_until([] { return false; }, 10);
	EXPECT_GT(p.host(1).rx_lost, 0u);
	// The receive never completes successfully: the core saw the gap.
	const struct tb5_completion *r = find(s, 1);
	EXPECT_TRUE(!r || r->status != 0);
}

TEST(FakeNhi, LostLoginMessagesAreRetried)
{
	FakePair p;

	p.drop_requests = 3;
	p.drop_responses = 2;
	ASSERT_TRUE(up(p));
	EXPECT_GE(p.requests, 7u);
	// The retries took simulated seconds, not more.
	EXPECT_LT(p.now_ms(), 10u * TB5_TB_LOGIN_RETRY_MS);
}

TEST(FakeNhi, PeerThatNeverAnswersIsWaitedFor)
{
	FakePair p;

	p.probe(0);	// the other host has no tb5 service yet
	p.host(1).login.state = TB5_TB_IDLE;
	ASSERT_TRUE(p.run_until([&] {
		return p.host(0).login.state == TB5_TB_WAIT;
	}));
	EXPECT_EQ(p.requests, TB5_TB_LOGIN_RETRIES);
	EXPECT_EQ(p.host(0).login.login_failures, 1u);
	// It turns up later: its LOGIN restarts ours, and both come up.
	p.probe(1);
	ASSERT_TRUE(p.run_until([&] { return p.connected(); }));
}

TEST(FakeNhi, CrcErrorIsCountedAndTheMessageFails)
{
	FakePair p(64);

	ASSERT_TRUE(up(p));
	auto conn5 = p.connect_pair(0, 42);
	Ep *c = conn5.first, *s = conn5.second;
	std::vector<uint8_t> src = pattern(20000, 1), dst(20000);

	ASSERT_EQ(p.post_recv(s, dst.data(), dst.size(), 1, 1), 0);
	p.host(0).corrupt_next = 1;	// the DATA header
	ASSERT_EQ(p.post_send(c, src.data(), src.size(), 1, 1), 0);
	p.run_until([] { return false; }, 10);
	EXPECT_EQ(p.host(1).ring_errors, 1u);
	// The link still works for the next message.
	transfer(p, c, s, 5000, 2);
}

TEST(FakeNhi, LogoutTearsDownAndLoginReconnects)
{
	FakePair p;

	ASSERT_TRUE(up(p));
	Ep *c = p.connect_pair(0, 42).first;
	std::vector<uint8_t> dst(4096);

	ASSERT_EQ(p.post_recv(c, dst.data(), dst.size(), 1, 9), 0);
	// Host 1 goes away politely (module unloaded, suspend).
	p.stop(1, true);
	EXPECT_EQ(p.host(1).log.size(), kUp.size() + kDown.size());
	ASSERT_TRUE(p.run_until([&] {
		return tb5_link_state(p.host(0).link) == TB5_LINK_DOWN;
	}));
	EXPECT_EQ(p.host(0).login.state, TB5_TB_WAIT);
	// Host 0's pending receive failed with -ENOLINK.
	ASSERT_TRUE(find(c, 9));
	EXPECT_EQ(find(c, 9)->status, -ENOLINK);
	std::vector<std::string> down(p.host(0).log.end() - kDown.size(),
				      p.host(0).log.end());
	EXPECT_EQ(down, kDown);
	// Back again: a new login brings both up.
	p.probe(1);
	ASSERT_TRUE(p.run_until([&] { return p.connected(); }));
	auto conn7 = p.connect_pair(0, 44);
	Ep *c2 = conn7.first, *s2 = conn7.second;
	transfer(p, c2, s2, 10000, 3);
}

TEST(FakeNhi, UnplugMidTransferFailsEverythingPending)
{
	FakePair p(64);

	ASSERT_TRUE(up(p));
	auto conn8 = p.connect_pair(0, 42);
	Ep *c = conn8.first, *s = conn8.second;
	std::vector<uint8_t> src = pattern(4 << 20, 9), dst(4 << 20);

	ASSERT_EQ(p.post_recv(s, dst.data(), dst.size(), 1, 1), 0);
	ASSERT_EQ(p.post_send(c, src.data(), src.size(), 1, 1), 0);
	for (int i = 0; i < 5; i++)
		p.step();
	ASSERT_FALSE(find(s, 1));
	p.unplug();
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(tb5_link_state(p.host(i).link), TB5_LINK_DOWN);
		EXPECT_EQ(p.host(i).ledger.done, 0u);
		EXPECT_EQ(tb5_tb_txq_used(&p.host(i).txq), 0u);
		EXPECT_TRUE(p.host(i).rx_posted.empty());
	}
	ASSERT_TRUE(find(c, 1));
	ASSERT_TRUE(find(s, 1));
	EXPECT_EQ(find(c, 1)->status, -ENOLINK);
	EXPECT_EQ(find(s, 1)->status, -ENOLINK);
	// Plugged in again: both sides probe and log in.
	up(p);
	ASSERT_TRUE(p.connected());
	auto conn9 = p.connect_pair(0, 45);
	Ep *c2 = conn9.first, *s2 = conn9.second;
	transfer(p, c2, s2, 100000, 4);
}

TEST(FakeNhi, FailedConnectUndoesItsStepsAndRetries)
{
	FakePair p;

	p.host(0).fail_step = TB5_TB_STEP_PATHS;
	ASSERT_TRUE(up(p));
	const std::vector<std::string> first(p.host(0).log.begin(),
					     p.host(0).log.begin() + 8);
	const std::vector<std::string> expect = {
		"+in-hopid", "+tx-start", "+rx-start", "+rx-prime",
		"-rx-prime", "-rx-start", "-tx-start", "-in-hopid",
	};
	EXPECT_EQ(first, expect);
	EXPECT_EQ(p.host(0).login.login_failures, 1u);
	// The peer had come up, and was told to start over.
	EXPECT_GE(p.host(1).login.logins, 2u);
	auto conn10 = p.connect_pair(1, 42);
	Ep *c = conn10.first, *s = conn10.second;
	transfer(p, c, s, 9000, 1);
}

TEST(FakeNhi, PeerRestartWithoutLogoutReconnects)
{
	FakePair p;

	ASSERT_TRUE(up(p));
	// Host 1 loses its state without a word (crash, lost LOGOUT) and
	// logs in again with a new session.
	p.stop(1, false);
	p.probe(1);
	ASSERT_TRUE(p.run_until([&] { return p.connected(); }));
	EXPECT_EQ(p.host(0).login.logins, 2u);
	auto conn11 = p.connect_pair(0, 42);
	Ep *c = conn11.first, *s = conn11.second;
	transfer(p, c, s, 50000, 1);
}

TEST(FakeNhi, ManySmallMessagesKeepOrder)
{
	FakePair p(64);

	ASSERT_TRUE(up(p));
	auto conn12 = p.connect_pair(0, 42);
	Ep *c = conn12.first, *s = conn12.second;
	std::vector<std::vector<uint8_t>> src, dst;

	for (uint64_t i = 0; i < 60; i++) {
		src.push_back(pattern(8 + i, static_cast<uint8_t>(i)));
		dst.emplace_back(128, 0);
		ASSERT_EQ(p.post_recv(s, dst.back().data(), 128, 7, i), 0);
	}
	for (uint64_t i = 0; i < 60; i++)
		ASSERT_EQ(p.post_send(c, src[i].data(), src[i].size(), 7, i), 0);
	ASSERT_TRUE(p.run_until([&] { return s->cqes.size() == 60; }));
	for (uint64_t i = 0; i < 60; i++) {
		ASSERT_EQ(find(s, i)->bytes, 8 + i);
		EXPECT_EQ(memcmp(dst[i].data(), src[i].data(), 8 + i), 0);
	}
}

} // namespace
