// SPDX-License-Identifier: MIT
//
// test_sim_rate.cc - the simulator's link-rate model: a link with rate=R
// reports R as its speed and never moves data faster than R. (A lower bound
// on the time a transfer takes, so a slow machine cannot make it fail.)
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "lib_harness.hpp"

namespace {

using namespace tb5libtest;

TEST(SimRate, TheLinkReportsItsRateAndKeepsToIt)
{
	std::string a, b;

	ASSERT_TRUE(find_loop_pair(a, b)) << tb5_last_error();
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

} // namespace

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	// TB5_TEST_SIM_OPTS adds settings (ctest runs the suite again with
	// copy=2: the same tests through the copy engine).
	const char *more = getenv("TB5_TEST_SIM_OPTS");

	tb5libtest::use_simulator("tb5test-rate", std::string("hosts=1,loop=1,rate=2") +
				  (more && *more ? std::string(",") + more : ""));
	return RUN_ALL_TESTS();
}
