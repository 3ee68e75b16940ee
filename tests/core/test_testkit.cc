// SPDX-License-Identifier: MIT
//
// test_testkit.cc - the checks the other tests rely on can fail: the
// pattern tells seeds and offsets apart, guard pages fault, and the
// harness reports a core write outside a posted receive.
#include <gtest/gtest.h>
#include <gtest/gtest-spi.h>

#include <cstring>
#include <string>
#include <vector>

#include "guarded_buffer.hpp"
#include "pattern.hpp"
#include "two_node.hpp"

namespace {

using tb5test::GuardedBuffer;
using tb5test::TwoNode;

TEST(Pattern, FindsTheFirstWrongByte)
{
	std::vector<uint8_t> b(100003);

	tb5test::fill_pattern(b.data(), b.size(), 7);
	EXPECT_EQ(tb5test::find_mismatch(b.data(), b.size(), 7), b.size());
	for (size_t off : {0ul, 1ul, 7ul, 8ul, 4095ul, 100002ul}) {
		b[off] ^= 0x40;
		EXPECT_EQ(tb5test::find_mismatch(b.data(), b.size(), 7), off);
		b[off] ^= 0x40;
	}
	for (size_t off = 0; off < 64; off++)
		EXPECT_EQ(b[off], tb5test::pattern_byte(7, off));
}

TEST(Pattern, DependsOnSeedAndOffset)
{
	std::vector<uint8_t> a(4096), b(4096);

	tb5test::fill_pattern(a.data(), a.size(), 1);
	tb5test::fill_pattern(b.data(), b.size(), 2);
	EXPECT_LT(tb5test::find_mismatch(a.data(), a.size(), 2), 8u);
	// Shifted by one 8-byte block: still wrong.
	EXPECT_LT(tb5test::find_mismatch(a.data() + 8, a.size() - 8, 1), 8u);
	// No 8-byte block repeats within a page.
	for (size_t i = 8; i < a.size(); i += 8)
		EXPECT_NE(std::memcmp(a.data(), a.data() + i, 8), 0) << i;
}

TEST(GuardedBufferDeathTest, OverrunFaults)
{
	GTEST_FLAG_SET(death_test_style, "threadsafe");
	EXPECT_DEATH(
		{
			GuardedBuffer g(100, GuardedBuffer::Flush::Trailing);
			volatile uint8_t *p = g.data();
			p[100] = 1;
		},
		"");
	EXPECT_DEATH(
		{
			GuardedBuffer g(100, GuardedBuffer::Flush::Leading);
			volatile uint8_t *p = g.data();
			p[-1] = 1;
		},
		"");
}

TEST(GuardedBuffer, SlackCanaryNoticesWrites)
{
	GuardedBuffer t(100, GuardedBuffer::Flush::Trailing);
	GuardedBuffer l(100, GuardedBuffer::Flush::Leading);

	std::memset(t.data(), 0, t.size());
	std::memset(l.data(), 0, l.size());
	EXPECT_TRUE(t.slack_intact());
	EXPECT_TRUE(l.slack_intact());
	t.data()[-1] = 0;
	l.data()[100] = 0;
	EXPECT_FALSE(t.slack_intact());
	EXPECT_FALSE(l.slack_intact());
}

// A receive posted behind the harness's back: the core's copy into it must
// be reported (and refused), which is what makes "nothing is written outside
// a posted buffer" checkable in every other test.
TEST(TwoNodeHarness, ReportsCopyOutsidePostedReceives)
{
	::testing::TestPartResultArray failures;
	std::vector<uint8_t> src(100, 0x11), dst(100, 0x22);
	std::vector<std::string> violations;
	int setup = -1;

	{
		// Failures inside are caught here, so nothing below may return
		// early: the outcome is checked after the scope.
		::testing::ScopedFakeTestPartResultReporter catcher(
			::testing::ScopedFakeTestPartResultReporter::
				INTERCEPT_ONLY_CURRENT_THREAD,
			&failures);
		TwoNode h;

		if (h.bring_up()) {
			auto c = h.connect_pair(1);
			const tb5_mem mem = {nullptr,
					     reinterpret_cast<uintptr_t>(dst.data())};

			if (c.client && tb5_post_recv(c.server->ep, &mem, dst.size(), 1, 1) == 0 &&
			    h.post_send(c.client, src.data(), src.size(), 1, 1) == 0) {
				setup = 0;
				h.run();
			}
		}
		violations = h.violations();
	}
	ASSERT_EQ(setup, 0) << "could not set the scenario up";
	ASSERT_FALSE(violations.empty()) << "the stray copy went unnoticed";
	EXPECT_NE(violations[0].find("outside every posted receive"), std::string::npos)
		<< violations[0];
	EXPECT_GE(failures.size(), 1);
	EXPECT_EQ(dst[0], 0x22) << "the harness performed the stray copy";
}

// The other side of the coin: a clean run reports nothing, including the
// teardown that completes what the test left posted.
TEST(TwoNodeHarness, CleanTeardownReportsNothing)
{
	TwoNode h;
	std::vector<uint8_t> b(10);

	ASSERT_TRUE(h.bring_up());
	auto c = h.connect_pair(1);
	ASSERT_TRUE(c.client && c.server);
	ASSERT_EQ(h.post_recv(c.server, b.data(), b.size(), 1, 1), 0);
	ASSERT_EQ(h.post_send(c.client, b.data(), b.size(), 2, 1), 0);
	h.run();
	EXPECT_TRUE(h.violations().empty());
	// The destructor then completes both operations (tags differ, so
	// they never matched) and must find the books balanced; any report
	// there fails this test.
}

} // namespace
