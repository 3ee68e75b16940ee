// SPDX-License-Identifier: MIT
//
// test_sim_rate.cc - the simulator's link-rate model through libtb5: a link
// with rate=R reports R as its speed and never moves data faster than R,
// in each direction on its own, and a frame never arrives before the
// one-way delay. (Lower bounds on the time a transfer takes only, so a
// slow machine cannot make them fail; the model's arithmetic is tested
// exactly in test_wire_clock.cc.)
//
// All of it is the simulator's model, so it runs over the simulator only
// (ctest): the kernel runs (tests/kernel/vm-tests-lib.sh) leave it out, and
// with TB5_TEST_BACKEND=kernel every test skips, saying so.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <cstdlib>
#include <string>
#include <vector>

#include "lib_harness.hpp"

namespace {

using namespace tb5libtest;

constexpr const char *kModel = "the simulator's link-rate model (TB5_SIM "
				"rate=2,delay_us=300); a kernel link runs at "
				"its hardware's pace";

// With a one-way delay the loop pair's hellos take a while: listing runs
// the links, so list until it is ready.
bool ready_loop_pair(std::string &a, std::string &b)
{
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);

	while (!find_loop_pair(a, b))
		if (std::chrono::steady_clock::now() > end)
			return false;
	return true;
}

TEST(SimRate, TheLinkReportsItsRateAndKeepsToIt)
{
	TB5_SIM_ONLY(kModel);
	std::string a, b;

	ASSERT_TRUE(ready_loop_pair(a, b)) << tb5_last_error();
	Dev da(a), db(b);
	tb5_link_info info;

	ASSERT_EQ(tb5_query(da.dev, &info), 0);
	EXPECT_EQ(info.speed_mbps, 2000u) << "TB5_SIM asked for rate=2 (Gb/s)";

	const size_t len = 4 << 20;	// 32 Mbit: at least 16 ms at 2 Gb/s
	std::vector<uint8_t> s(len), r(len);
	tb5_mr *smr = nullptr, *rmr = nullptr;
	Conn c;

	ASSERT_EQ(tb5_reg_host(db.dev, s.data(), len, &smr), 0);
	ASSERT_EQ(tb5_reg_host(da.dev, r.data(), len, &rmr), 0);
	ASSERT_TRUE(connect_pair(da, db, 0x42, c));
	fill_pattern(s.data(), len, 5);
	auto t0 = std::chrono::steady_clock::now();
	ASSERT_EQ(tb5_recv(c.server, rmr, 0, len, 1, 1), 0);
	ASSERT_EQ(tb5_send(c.client, smr, 0, len, 1, 2), 0);
	auto got = await(da, [](const tb5_wc &w) { return w.kind == TB5_WC_RECV; },
			 { &db }, 30);
	auto took = std::chrono::steady_clock::now() - t0;

	ASSERT_TRUE(got);
	EXPECT_EQ(got->status, 0);
	EXPECT_EQ(check_pattern(r.data(), len, 5), -1);
	// 4 MiB at 2 Gb/s is 16.8 ms; one frame of slack.
	EXPECT_GE(took, std::chrono::microseconds(16700))
		<< "faster than the modelled link";
}

// Both directions at once: each keeps to R on its own. (That neither
// takes from the other is test_wire_clock's to show: an upper bound on
// the time would test this machine's speed.)
TEST(SimRate, EachDirectionKeepsToItsRate)
{
	TB5_SIM_ONLY(kModel);
	std::string a, b;

	ASSERT_TRUE(ready_loop_pair(a, b)) << tb5_last_error();
	Dev da(a), db(b);
	const size_t len = 2 << 20;	// 16.8 Mbit: at least 8.4 ms at 2 Gb/s
	std::vector<uint8_t> s1(len), r1(len), s2(len), r2(len);
	tb5_mr *ms1 = nullptr, *mr1 = nullptr, *ms2 = nullptr, *mr2 = nullptr;
	Conn c;

	ASSERT_EQ(tb5_reg_host(db.dev, s1.data(), len, &ms1), 0);
	ASSERT_EQ(tb5_reg_host(da.dev, r1.data(), len, &mr1), 0);
	ASSERT_EQ(tb5_reg_host(da.dev, s2.data(), len, &ms2), 0);
	ASSERT_EQ(tb5_reg_host(db.dev, r2.data(), len, &mr2), 0);
	ASSERT_TRUE(connect_pair(da, db, 0x43, c));
	fill_pattern(s1.data(), len, 7);
	fill_pattern(s2.data(), len, 8);
	auto t0 = std::chrono::steady_clock::now();
	ASSERT_EQ(tb5_recv(c.server, mr1, 0, len, 1, 1), 0);
	ASSERT_EQ(tb5_recv(c.client, mr2, 0, len, 1, 2), 0);
	ASSERT_EQ(tb5_send(c.client, ms1, 0, len, 1, 3), 0);
	ASSERT_EQ(tb5_send(c.server, ms2, 0, len, 1, 4), 0);
	auto is_recv = [](const tb5_wc &w) { return w.kind == TB5_WC_RECV; };
	auto got1 = await(da, is_recv, { &db }, 30);
	auto got2 = await(db, is_recv, { &da }, 30);
	auto took = std::chrono::steady_clock::now() - t0;

	ASSERT_TRUE(got1 && got2);
	EXPECT_EQ(got1->status, 0);
	EXPECT_EQ(got2->status, 0);
	EXPECT_EQ(check_pattern(r1.data(), len, 7), -1);
	EXPECT_EQ(check_pattern(r2.data(), len, 8), -1);
	// 2 MiB at 2 Gb/s is 8.39 ms; one frame of burst (16 us).
	EXPECT_GE(took, std::chrono::microseconds(8370))
		<< "faster than the modelled link";
}

// A small message crosses no sooner than the one-way delay (delay_us=300
// in this suite's settings) plus its frames' time on the wire.
TEST(SimRate, AMessageTakesAtLeastTheDelay)
{
	TB5_SIM_ONLY(kModel);
	std::string a, b;

	ASSERT_TRUE(ready_loop_pair(a, b)) << tb5_last_error();
	Dev da(a), db(b);
	uint8_t s[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, r[8] = {};
	tb5_mr *smr = nullptr, *rmr = nullptr;
	Conn c;

	ASSERT_EQ(tb5_reg_host(db.dev, s, sizeof(s), &smr), 0);
	ASSERT_EQ(tb5_reg_host(da.dev, r, sizeof(r), &rmr), 0);
	ASSERT_TRUE(connect_pair(da, db, 0x44, c));
	ASSERT_EQ(tb5_recv(c.server, rmr, 0, sizeof(r), 1, 1), 0);
	// Let the receive's clear-to-send reach the sender first (one delay
	// of 0.3 ms): the send then costs one crossing.
	poll_until({ &da, &db }, [] { return false; }, 0.01);
	auto t0 = std::chrono::steady_clock::now();
	ASSERT_EQ(tb5_send(c.client, smr, 0, sizeof(s), 1, 2), 0);
	auto got = await(da, [](const tb5_wc &w) { return w.kind == TB5_WC_RECV; },
			 { &db }, 10);
	auto took = std::chrono::steady_clock::now() - t0;

	ASSERT_TRUE(got);
	EXPECT_EQ(got->status, 0);
	EXPECT_EQ(memcmp(r, s, sizeof(s)), 0);
	EXPECT_GE(took, std::chrono::microseconds(300))
		<< "arrived before the modelled delay";
}

} // namespace

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	// TB5_TEST_SIM_OPTS adds settings (ctest runs the suite again with
	// copy=2: the same tests through the copy engine).
	const char *more = getenv("TB5_TEST_SIM_OPTS");

	tb5libtest::use_simulator("tb5test-rate", std::string("hosts=1,loop=1,rate=2,delay_us=300") +
				  (more && *more ? std::string(",") + more : ""));
	return RUN_ALL_TESTS();
}
