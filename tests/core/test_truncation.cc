// SPDX-License-Identifier: MIT
//
// test_truncation.cc - a send larger than the receive posted for it fails on
// both sides with -EMSGSIZE, and not one byte of the receive buffer, nor of
// the memory around it, is written. The connection stays usable.
#include <gtest/gtest.h>

#include <cstring>
#include <tuple>

#include "guarded_buffer.hpp"
#include "message.hpp"
#include "pattern.hpp"
#include "two_node.hpp"

namespace {

using tb5test::Ep;
using tb5test::GuardedBuffer;
using tb5test::Message;
using tb5test::TwoNode;

constexpr size_t kCanary = 64;	// bytes of canary on each side of the receive
constexpr uint8_t kCanaryByte = 0x5c;
constexpr uint8_t kFillByte = 0xe7;

// (receive size, bytes the send is larger by, guard page side)
using Case = std::tuple<uint64_t, uint64_t, GuardedBuffer::Flush>;

class Truncation : public ::testing::TestWithParam<Case> {};

TEST_P(Truncation, NothingWrittenAndConnectionSurvives)
{
	const auto [rlen, excess, flush] = GetParam();
	TwoNode h(64);

	ASSERT_TRUE(h.bring_up());
	auto c = h.connect_pair(1);
	ASSERT_TRUE(c.client && c.server);

	// [canary | receive | canary], the whole against a guard page: a stray
	// write either faults or changes a byte that is checked below.
	GuardedBuffer g(kCanary + rlen + kCanary, flush, 0x33);
	uint8_t *const rbuf = g.data() + kCanary;
	std::memset(g.data(), kCanaryByte, g.size());
	std::memset(rbuf, kFillByte, rlen);

	const uint64_t slen = rlen + excess;
	std::vector<uint8_t> big(slen);
	tb5test::fill_pattern(big.data(), slen, 42);

	ASSERT_EQ(h.post_recv(c.server, rbuf, rlen, 5, 1), 0);
	ASSERT_EQ(h.post_send(c.client, big.data(), slen, 5, 1), 0);
	ASSERT_TRUE(h.run_until([&] {
		return h.find_cqe(c.client, TB5_COMPLETION_SEND, 1) &&
		       h.find_cqe(c.server, TB5_COMPLETION_RECV, 1);
	}));
	h.run();
	EXPECT_TRUE(tb5test::completed(h, c.client, TB5_COMPLETION_SEND, 1, -EMSGSIZE, 0, 5));
	EXPECT_TRUE(tb5test::completed(h, c.server, TB5_COMPLETION_RECV, 1, -EMSGSIZE, 0, 5));

	EXPECT_EQ(tb5test::find_not(rbuf, rlen, kFillByte), rlen)
		<< "the truncated receive's buffer was written";
	EXPECT_EQ(tb5test::find_not(g.data(), kCanary, kCanaryByte), kCanary)
		<< "canary before the buffer";
	EXPECT_EQ(tb5test::find_not(rbuf + rlen, kCanary, kCanaryByte), kCanary)
		<< "canary after the buffer";
	EXPECT_TRUE(g.slack_intact());
	EXPECT_EQ(h.bytes_copied(1), 0u);

	// Still connected, and a message of the right size goes through into
	// the same buffer.
	EXPECT_EQ(tb5_ep_state(c.client->ep), TB5_EP_CONNECTED);
	EXPECT_EQ(tb5_ep_state(c.server->ep), TB5_EP_CONNECTED);
	ASSERT_EQ(h.post_recv(c.server, rbuf, rlen, 5, 2), 0);
	ASSERT_EQ(h.post_send(c.client, big.data(), rlen, 5, 2), 0);
	h.run();
	EXPECT_TRUE(tb5test::completed(h, c.client, TB5_COMPLETION_SEND, 2, 0, rlen, 5));
	EXPECT_TRUE(tb5test::completed(h, c.server, TB5_COMPLETION_RECV, 2, 0, rlen, 5));
	EXPECT_EQ(tb5test::find_mismatch(rbuf, rlen, 42), rlen);
	EXPECT_EQ(tb5test::find_not(g.data(), kCanary, kCanaryByte), kCanary);
	EXPECT_EQ(tb5test::find_not(rbuf + rlen, kCanary, kCanaryByte), kCanary);
	EXPECT_TRUE(g.slack_intact());

	// And the other direction too.
	Message back(rlen + 1, 43, 6, 3);
	ASSERT_TRUE(back.post(h, c.server, c.client));
	h.run();
	EXPECT_TRUE(back.delivered(h, c.server, c.client));
}

std::string case_name(const ::testing::TestParamInfo<Case> &p)
{
	return "recv" + std::to_string(std::get<0>(p.param)) + "_plus" +
	       std::to_string(std::get<1>(p.param)) +
	       (std::get<2>(p.param) == GuardedBuffer::Flush::Trailing ?
			"_trailing" : "_leading");
}

INSTANTIATE_TEST_SUITE_P(
	Sizes, Truncation,
	::testing::Combine(::testing::Values(0ull, 1ull, 4095ull, 4096ull, 100000ull),
			   ::testing::Values(1ull, 4096ull, 1ull << 20),
			   ::testing::Values(GuardedBuffer::Flush::Trailing,
					     GuardedBuffer::Flush::Leading)),
	case_name);

// A truncated send among good ones fails alone: the others, with the same
// tag before and after it, land in their own receives.
TEST(Truncation, OnlyTheOversizedSendFails)
{
	TwoNode h;

	ASSERT_TRUE(h.bring_up());
	auto c = h.connect_pair(1);
	ASSERT_TRUE(c.client && c.server);
	Message first(5000, 1, 9, 1), last(5000, 3, 9, 3);
	Message over(6000, 2, 9, 2, 4000);	// 6000 bytes into 4000

	ASSERT_TRUE(first.post(h, c.client, c.server));
	ASSERT_TRUE(over.post(h, c.client, c.server));
	ASSERT_TRUE(last.post(h, c.client, c.server));
	h.run();
	EXPECT_TRUE(first.delivered(h, c.client, c.server));
	EXPECT_TRUE(last.delivered(h, c.client, c.server));
	EXPECT_TRUE(tb5test::completed(h, c.client, TB5_COMPLETION_SEND, 2, -EMSGSIZE, 0, 9));
	EXPECT_TRUE(tb5test::completed(h, c.server, TB5_COMPLETION_RECV, 2, -EMSGSIZE, 0, 9));
	EXPECT_EQ(tb5test::find_not(over.dst.data(), over.dst.size(), Message::kFill),
		  over.dst.size());
}

} // namespace
