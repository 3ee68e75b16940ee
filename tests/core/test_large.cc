// SPDX-License-Identifier: MIT
//
// test_large.cc - one 1 GiB message, every byte checked. Skipped in
// sanitized builds, where it would take minutes.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "pattern.hpp"
#include "message.hpp"
#include "two_node.hpp"

namespace {

using tb5test::TwoNode;

TEST(Large, OneGibibyteMessage)
{
#ifdef TB5_SANITIZED
	GTEST_SKIP() << "1 GiB under sanitizers takes too long";
#else
	constexpr uint64_t kSize = 1ull << 30;
	constexpr uint64_t kSeed = 0x1091;
	TwoNode h(TB5_RING_SIZE_DEFAULT, TB5_BURST_FRAMES_MAX);
	// new[] without initialisation: the pattern and the memset below are
	// the only passes over the memory before the transfer.
	std::unique_ptr<uint8_t[]> src(new uint8_t[kSize]);
	std::unique_ptr<uint8_t[]> dst(new uint8_t[kSize + 4096]);

	tb5test::fill_pattern(src.get(), kSize, kSeed);
	std::memset(dst.get(), 0x6b, kSize + 4096);

	ASSERT_TRUE(h.bring_up());
	auto c = h.connect_pair(1);
	ASSERT_TRUE(c.client && c.server);
	ASSERT_EQ(h.post_recv(c.server, dst.get(), kSize, 77, 1), 0);
	ASSERT_EQ(h.post_send(c.client, src.get(), kSize, 77, 1), 0);
	ASSERT_TRUE(h.run_until([&] {
		return h.find_cqe(c.client, TB5_COMPLETION_SEND, 1) &&
		       h.find_cqe(c.server, TB5_COMPLETION_RECV, 1);
	}));
	EXPECT_TRUE(tb5test::completed(h, c.client, TB5_COMPLETION_SEND, 1, 0, kSize, 77));
	EXPECT_TRUE(tb5test::completed(h, c.server, TB5_COMPLETION_RECV, 1, 0, kSize, 77));
	EXPECT_EQ(h.bytes_copied(1), kSize);
	EXPECT_EQ(tb5test::find_mismatch(dst.get(), kSize, kSeed), kSize);
	EXPECT_EQ(tb5test::find_not(dst.get() + kSize, 4096, 0x6b), 4096u);
	EXPECT_EQ(h.link_stats(1).rx_msgs, 1u);
	EXPECT_LE(h.rm_stats().rx_high_water, TB5_RING_SIZE_DEFAULT);
#endif
}

} // namespace
