// SPDX-License-Identifier: MIT
//
// message.cc - posting and checking test messages.
#include "message.hpp"

#include "pattern.hpp"

namespace tb5test {

Message::Message(uint64_t len_, uint64_t seed_, uint32_t tag_, uint64_t id)
	: Message(len_, seed_, tag_, id, len_)
{
}

Message::Message(uint64_t len_, uint64_t seed_, uint32_t tag_, uint64_t id,
		 uint64_t dst_len_)
	: len(len_), dst_len(dst_len_), seed(seed_), tag(tag_), user_id(id),
	  src(len_ + 1), dst(dst_len_ + 1, kFill)
{
	fill_pattern(src.data(), len, seed);
}

::testing::AssertionResult Message::post(TwoNode &h, Ep *from, Ep *to)
{
	int rc = h.post_recv(to, dst.data(), dst_len, tag, user_id);

	if (rc != 0)
		return ::testing::AssertionFailure()
		       << "post_recv(" << dst_len << ", tag " << tag << ") = " << rc;
	rc = h.post_send(from, src.data(), len, tag, user_id);
	if (rc != 0)
		return ::testing::AssertionFailure()
		       << "post_send(" << len << ", tag " << tag << ") = " << rc;
	return ::testing::AssertionSuccess();
}

bool Message::done(TwoNode &h, Ep *from, Ep *to)
{
	return h.find_cqe(from, TB5_COMPLETION_SEND, user_id) &&
	       h.find_cqe(to, TB5_COMPLETION_RECV, user_id);
}

::testing::AssertionResult Message::delivered(TwoNode &h, Ep *from, Ep *to)
{
	auto r = completed(h, from, TB5_COMPLETION_SEND, user_id, 0, len, tag);

	if (!r)
		return r << " (message " << user_id << ", " << len << " bytes)";
	r = completed(h, to, TB5_COMPLETION_RECV, user_id, 0, len, tag);
	if (!r)
		return r << " (message " << user_id << ", " << len << " bytes)";

	const size_t bad = find_mismatch(dst.data(), len, seed);

	if (bad != len)
		return ::testing::AssertionFailure()
		       << "message " << user_id << " (" << len << " bytes, seed "
		       << seed << "): first wrong byte at offset " << bad;
	const size_t tail = find_not(dst.data() + len, dst.size() - len, kFill);
	if (tail != dst.size() - len)
		return ::testing::AssertionFailure()
		       << "message " << user_id << ": byte " << len + tail
		       << " past the message's end was written";
	return ::testing::AssertionSuccess();
}

::testing::AssertionResult completed(TwoNode &h, const void *ctx, uint32_t op,
				     uint64_t user_id, int status,
				     uint64_t bytes, uint32_t tag)
{
	const struct tb5_completion *c = h.find_cqe(ctx, op, user_id);
	const char *what = op == TB5_COMPLETION_SEND ? "send" : "recv";

	if (!c)
		return ::testing::AssertionFailure()
		       << what << " " << user_id << " did not complete";
	if (c->status != status)
		return ::testing::AssertionFailure()
		       << what << " " << user_id << " completed with status "
		       << c->status << ", want " << status;
	if (status == 0 && c->bytes != bytes)
		return ::testing::AssertionFailure()
		       << what << " " << user_id << " completed with " << c->bytes
		       << " bytes, want " << bytes;
	if (c->tag != tag)
		return ::testing::AssertionFailure()
		       << what << " " << user_id << " completed with tag " << c->tag
		       << ", want " << tag;
	return ::testing::AssertionSuccess();
}

} // namespace tb5test
