// SPDX-License-Identifier: MIT
//
// message.hpp - one test message: a source holding its pattern, a
// destination for the receiver to post, and the checks that it arrived whole.
#ifndef TB5_SUPPORT_MESSAGE_HPP
#define TB5_SUPPORT_MESSAGE_HPP

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "two_node.hpp"

namespace tb5test {

struct Message {
	static constexpr uint8_t kFill = 0xdd;	// the destination before delivery

	// @dst_len defaults to @len: a receive posted for exactly the message.
	Message(uint64_t len, uint64_t seed, uint32_t tag, uint64_t user_id);
	Message(uint64_t len, uint64_t seed, uint32_t tag, uint64_t user_id,
		uint64_t dst_len);

	uint64_t len;
	uint64_t dst_len;
	uint64_t seed;
	uint32_t tag;
	uint64_t user_id;
	// One byte more than needed, so that a 0-byte message has an address.
	std::vector<uint8_t> src;
	std::vector<uint8_t> dst;

	// Post the receive on @to, then the send on @from; both must be taken.
	::testing::AssertionResult post(TwoNode &h, Ep *from, Ep *to);
	// Both sides completed with status 0, the right sizes and tags, and
	// the destination holds the message and nothing past it changed.
	::testing::AssertionResult delivered(TwoNode &h, Ep *from, Ep *to);
	// Both completions are in (whatever their status).
	bool done(TwoNode &h, Ep *from, Ep *to);
};

// Check one completion: present, with @status, @bytes and @tag.
::testing::AssertionResult completed(TwoNode &h, const void *ctx, uint32_t op,
				     uint64_t user_id, int status,
				     uint64_t bytes, uint32_t tag);

} // namespace tb5test

#endif // TB5_SUPPORT_MESSAGE_HPP
