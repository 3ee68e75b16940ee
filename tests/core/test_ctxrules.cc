// SPDX-License-Identifier: MIT
//
// test_ctxrules.cc - the rules of a context (dkms/core/tb5_ctxrules.c) that
// the kernel module and the simulator share: a bounded completion queue
// that promises an entry for every operation and event it accepts and
// refuses with -ENOSPC when none is left, operation slots per side, event
// credits and the INCOMING rule.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <vector>

#include "tb5_ctxrules.h"

namespace {

int region_byte;
void *const kRegion = &region_byte;

class CtxRules : public ::testing::Test {
protected:
	void SetUp() override { ASSERT_EQ(tb5_cq_acct_init(&cq, 64), 0); }

	// Posts one operation; the slot it took, or the error.
	int post(tb5_ep_rules &ep, uint32_t op, uint64_t user_data = 0)
	{
		uint32_t slot = UINT32_MAX;
		int ret = tb5_ep_rules_post(&ep, &cq, head, op, user_data,
					    kRegion, &slot);

		if (ret)
			return ret;
		EXPECT_LT(slot, TB5_CTX_OPS);
		return int(slot);
	}
	// Completes @slot; the index its entry was produced at, or the error.
	int complete(tb5_ep_rules &ep, uint64_t slot, uint64_t *user_data = nullptr)
	{
		uint64_t ud = 0;
		void *region = nullptr;
		uint32_t index = UINT32_MAX;
		int ret = tb5_ep_rules_complete(&ep, &cq, head, slot, &ud,
						&region, &index);

		if (user_data)
			*user_data = ud;
		if (ret)
			return ret;
		EXPECT_EQ(region, kRegion);
		EXPECT_LT(index, cq.entries);
		return int(index);
	}
	// What the owner can still promise.
	uint32_t room() const
	{
		return cq.entries - tb5_cq_acct_used(&cq, head) - cq.reserved;
	}

	tb5_cq_acct cq;
	uint32_t head = 0;
};

TEST(CqAcct, TakesAPowerOfTwoInRangeOnly)
{
	tb5_cq_acct cq;

	for (uint32_t ok : { 64u, 128u, 4096u, 16384u, 65536u }) {
		EXPECT_EQ(tb5_cq_acct_init(&cq, ok), 0) << ok;
		EXPECT_EQ(cq.entries, ok);
		EXPECT_EQ(cq.tail, 0u);
		EXPECT_EQ(cq.reserved, 0u);
	}
	for (uint32_t bad : { 0u, 1u, 32u, 63u, 65u, 96u, 100u, 131072u,
			      0x80000000u, UINT32_MAX })
		EXPECT_EQ(tb5_cq_acct_init(&cq, bad), -EINVAL) << bad;
	EXPECT_EQ(TB5_CQ_ENTRIES_DEFAULT & (TB5_CQ_ENTRIES_DEFAULT - 1), 0u);
	EXPECT_EQ(tb5_cq_acct_init(&cq, TB5_CQ_ENTRIES_DEFAULT), 0);
}

TEST_F(CtxRules, ReservesUntilFullThenRefusesWithENOSPC)
{
	EXPECT_EQ(tb5_cq_acct_reserve(&cq, head, 60), 0);
	EXPECT_EQ(tb5_cq_acct_reserve(&cq, head, 5), -ENOSPC);
	EXPECT_EQ(cq.reserved, 60u) << "a refused reservation takes nothing";
	EXPECT_EQ(tb5_cq_acct_reserve(&cq, head, 4), 0);
	EXPECT_EQ(tb5_cq_acct_reserve(&cq, head, 1), -ENOSPC);
	EXPECT_EQ(tb5_cq_acct_reserve(&cq, head, UINT32_MAX), -ENOSPC)
		<< "no wrap-around";
	tb5_cq_acct_unreserve(&cq, 1);
	EXPECT_EQ(tb5_cq_acct_reserve(&cq, head, 1), 0);
	tb5_cq_acct_unreserve(&cq, UINT32_MAX);
	EXPECT_EQ(cq.reserved, 0u) << "never gives back more than was promised";
}

TEST_F(CtxRules, ProducedEntriesHoldTheirPlaceUntilConsumed)
{
	uint32_t index;

	ASSERT_EQ(tb5_cq_acct_reserve(&cq, head, 64), 0);
	for (uint32_t i = 0; i < 64; i++) {
		ASSERT_EQ(tb5_cq_acct_produce(&cq, head, &index), 0);
		EXPECT_EQ(index, i);
	}
	EXPECT_EQ(cq.reserved, 0u);
	EXPECT_EQ(tb5_cq_acct_used(&cq, head), 64u);
	EXPECT_EQ(tb5_cq_acct_reserve(&cq, head, 1), -ENOSPC)
		<< "unconsumed entries are not free";
	head += 10;
	EXPECT_EQ(tb5_cq_acct_reserve(&cq, head, 10), 0);
	EXPECT_EQ(tb5_cq_acct_reserve(&cq, head, 1), -ENOSPC);
	ASSERT_EQ(tb5_cq_acct_produce(&cq, head, &index), 0);
	EXPECT_EQ(index, 0u) << "the ring wraps";
}

TEST_F(CtxRules, NeverOverwritesWhateverTheConsumerClaims)
{
	uint32_t index = 1234;

	ASSERT_EQ(tb5_cq_acct_reserve(&cq, head, 64), 0);
	for (uint32_t i = 0; i < 64; i++)
		ASSERT_EQ(tb5_cq_acct_produce(&cq, head, &index), 0);
	// Unpromised production into a full queue writes nothing.
	EXPECT_EQ(tb5_cq_acct_produce(&cq, head, &index), -ENOSPC);
	EXPECT_EQ(cq.tail, 64u);
	// A head ahead of the tail, or far behind it, reads as a full queue.
	for (uint32_t lie : { 65u, 1000u, 0x80000000u, UINT32_MAX }) {
		EXPECT_EQ(tb5_cq_acct_used(&cq, lie), 64u) << lie;
		EXPECT_EQ(tb5_cq_acct_reserve(&cq, lie, 1), -ENOSPC) << lie;
		EXPECT_EQ(tb5_cq_acct_produce(&cq, lie, &index), -ENOSPC) << lie;
	}
	EXPECT_EQ(tb5_cq_acct_used(&cq, 64), 0u);
}

TEST_F(CtxRules, EndpointsReserveTheirEventCredits)
{
	tb5_ep_rules conn, listener;

	ASSERT_EQ(tb5_ep_rules_open(&conn, &cq, head, false), 0);
	EXPECT_FALSE(conn.listener);
	EXPECT_EQ(conn.credits, TB5_CTX_EVENT_CREDITS);
	ASSERT_EQ(tb5_ep_rules_open(&listener, &cq, head, true), 0);
	EXPECT_TRUE(listener.listener);
	EXPECT_TRUE(listener.incoming_armed);
	EXPECT_EQ(listener.credits, TB5_CTX_LISTEN_CREDITS);
	EXPECT_EQ(cq.reserved, TB5_CTX_EVENT_CREDITS + TB5_CTX_LISTEN_CREDITS);
	tb5_ep_rules_release(&conn, &cq);
	tb5_ep_rules_release(&listener, &cq);
	EXPECT_EQ(cq.reserved, 0u);
	EXPECT_EQ(conn.credits, 0u);
	tb5_ep_rules_release(&conn, &cq);
	EXPECT_EQ(cq.reserved, 0u) << "released twice gives back nothing more";
}

TEST_F(CtxRules, AnEndpointIsRefusedWhenItsCreditsDoNotFit)
{
	std::vector<tb5_ep_rules> eps(32);

	for (auto &e : eps)
		ASSERT_EQ(tb5_ep_rules_open(&e, &cq, head, false), 0);
	tb5_ep_rules one_more;

	EXPECT_EQ(tb5_ep_rules_open(&one_more, &cq, head, false), -ENOSPC);
	EXPECT_EQ(tb5_ep_rules_open(&one_more, &cq, head, true), -ENOSPC);
	tb5_ep_rules_release(&eps[0], &cq);
	EXPECT_EQ(tb5_ep_rules_open(&one_more, &cq, head, false), 0);
}

TEST_F(CtxRules, PostingReservesAnEntryFirstThenASlotOfItsSide)
{
	tb5_ep_rules ep;

	ASSERT_EQ(tb5_ep_rules_open(&ep, &cq, head, false), 0);
	// 64 entries, 2 for events: 62 operations fit in the queue.
	for (int i = 0; i < 62; i++) {
		int slot = post(ep, i % 2 ? TB5_COMPLETION_RECV : TB5_COMPLETION_SEND,
				uint64_t(i));

		ASSERT_GE(slot, 0) << i;
		if (i % 2)
			EXPECT_GE(slot, int(TB5_EP_MAX_OPS)) << "receives after sends";
		else
			EXPECT_LT(slot, int(TB5_EP_MAX_OPS));
	}
	EXPECT_EQ(room(), 0u);
	EXPECT_EQ(post(ep, TB5_COMPLETION_SEND), -ENOSPC);
	EXPECT_EQ(post(ep, TB5_COMPLETION_RECV), -ENOSPC);
	EXPECT_EQ(cq.reserved, 64u) << "a refused post takes nothing";
}

TEST_F(CtxRules, AFullSideRefusesWithEAGAINAndTakesNoEntry)
{
	tb5_ep_rules ep;

	ASSERT_EQ(tb5_cq_acct_init(&cq, 1024), 0);
	ASSERT_EQ(tb5_ep_rules_open(&ep, &cq, head, false), 0);
	for (uint32_t i = 0; i < TB5_EP_MAX_OPS; i++)
		ASSERT_EQ(post(ep, TB5_COMPLETION_SEND), int(i));
	uint32_t reserved = cq.reserved;

	EXPECT_EQ(post(ep, TB5_COMPLETION_SEND), -EAGAIN);
	EXPECT_EQ(cq.reserved, reserved);
	EXPECT_EQ(post(ep, TB5_COMPLETION_RECV), int(TB5_EP_MAX_OPS))
		<< "sends and receives each have their own slots";
}

TEST_F(CtxRules, ENOSPCComesBeforeEAGAIN)
{
	tb5_ep_rules ep;

	ASSERT_EQ(tb5_cq_acct_init(&cq, 64), 0);
	ASSERT_EQ(tb5_ep_rules_open(&ep, &cq, head, false), 0);
	for (uint32_t i = 0; i < 62; i++)
		ASSERT_GE(post(ep, TB5_COMPLETION_SEND), 0);
	// Sends have two slots left but the queue has no entry.
	EXPECT_EQ(post(ep, TB5_COMPLETION_SEND), -ENOSPC);
}

TEST_F(CtxRules, RefusesMalformedPosts)
{
	tb5_ep_rules ep, listener;
	uint32_t slot;

	ASSERT_EQ(tb5_ep_rules_open(&ep, &cq, head, false), 0);
	ASSERT_EQ(tb5_ep_rules_open(&listener, &cq, head, true), 0);
	uint32_t reserved = cq.reserved;

	EXPECT_EQ(tb5_ep_rules_post(&ep, &cq, head, 0, 0, kRegion, &slot), -EINVAL);
	EXPECT_EQ(tb5_ep_rules_post(&ep, &cq, head, 3, 0, kRegion, &slot), -EINVAL);
	EXPECT_EQ(tb5_ep_rules_post(&ep, &cq, head, TB5_COMPLETION_SEND, 0,
				    nullptr, &slot), -EINVAL);
	EXPECT_EQ(tb5_ep_rules_post(&listener, &cq, head, TB5_COMPLETION_SEND,
				    0, kRegion, &slot), -EINVAL);
	EXPECT_EQ(cq.reserved, reserved);
}

TEST_F(CtxRules, CompletionFreesTheSlotAndProducesTheReservedEntry)
{
	tb5_ep_rules ep;
	uint64_t ud = 0;

	ASSERT_EQ(tb5_ep_rules_open(&ep, &cq, head, false), 0);
	int slot = post(ep, TB5_COMPLETION_RECV, 77);

	ASSERT_GE(slot, 0);
	EXPECT_EQ(cq.reserved, 3u);
	EXPECT_EQ(complete(ep, uint64_t(slot), &ud), 0);
	EXPECT_EQ(ud, 77u);
	EXPECT_EQ(cq.reserved, 2u);
	EXPECT_EQ(tb5_cq_acct_used(&cq, head), 1u);
	EXPECT_EQ(complete(ep, uint64_t(slot)), -EINVAL) << "completed twice";
	EXPECT_EQ(tb5_cq_acct_used(&cq, head), 1u);
	EXPECT_EQ(post(ep, TB5_COMPLETION_RECV), slot) << "the slot is free again";
}

TEST_F(CtxRules, CompletionOfNoOperationChangesNothing)
{
	tb5_ep_rules ep;

	ASSERT_EQ(tb5_ep_rules_open(&ep, &cq, head, false), 0);
	for (uint64_t bad : { uint64_t(0), uint64_t(TB5_EP_MAX_OPS),
			      uint64_t(TB5_CTX_OPS), uint64_t(TB5_CTX_OPS) + 1,
			      UINT64_MAX, uint64_t(1) << 32 })
		EXPECT_EQ(complete(ep, bad), -EINVAL) << bad;
	EXPECT_EQ(cq.tail, 0u);
	EXPECT_EQ(cq.reserved, 2u);
}

TEST_F(CtxRules, UnpostGivesBackSlotAndEntry)
{
	tb5_ep_rules ep;

	ASSERT_EQ(tb5_ep_rules_open(&ep, &cq, head, false), 0);
	int slot = post(ep, TB5_COMPLETION_SEND);

	ASSERT_GE(slot, 0);
	EXPECT_EQ(tb5_ep_rules_unpost(&ep, &cq, uint32_t(slot)), kRegion);
	EXPECT_EQ(cq.reserved, 2u);
	EXPECT_EQ(tb5_ep_rules_unpost(&ep, &cq, uint32_t(slot)), nullptr);
	EXPECT_EQ(tb5_ep_rules_unpost(&ep, &cq, TB5_CTX_OPS), nullptr);
	EXPECT_EQ(cq.reserved, 2u);
}

TEST_F(CtxRules, AnEndpointRaisesOnlyWhatItHasCreditsFor)
{
	tb5_ep_rules ep;
	uint32_t index;

	ASSERT_EQ(tb5_ep_rules_open(&ep, &cq, head, false), 0);
	EXPECT_EQ(tb5_ep_rules_event(&ep, &cq, head, TB5_EV_CONNECTED, 0, &index), 1);
	EXPECT_EQ(tb5_ep_rules_event(&ep, &cq, head, TB5_EV_ERROR, -ENOLINK, &index), 1);
	EXPECT_EQ(tb5_ep_rules_event(&ep, &cq, head, TB5_EV_PEER_CLOSED, -ECONNRESET,
				     &index), 0);
	EXPECT_EQ(tb5_ep_rules_event(&ep, &cq, head, TB5_EV_ERROR, -ETIMEDOUT, &index), 0);
	EXPECT_EQ(tb5_ep_rules_error(&ep), -ETIMEDOUT)
		<< "an error is kept even when it is not raised";
	EXPECT_EQ(tb5_cq_acct_used(&cq, head), 2u);
	EXPECT_EQ(cq.reserved, 0u);
	EXPECT_EQ(tb5_ep_rules_event(&ep, &cq, head, TB5_EV_RELEASED, 0, &index),
		  -EINVAL);
}

TEST_F(CtxRules, AListenerReportsIncomingOnceUntilAnAccept)
{
	tb5_ep_rules l;
	uint32_t index;

	ASSERT_EQ(tb5_ep_rules_open(&l, &cq, head, true), 0);
	EXPECT_EQ(tb5_ep_rules_event(&l, &cq, head, TB5_EV_INCOMING, 0, &index), 1);
	EXPECT_EQ(tb5_ep_rules_event(&l, &cq, head, TB5_EV_INCOMING, 0, &index), 0)
		<< "reported already, not accepted since";
	EXPECT_EQ(cq.reserved, 0u);
	tb5_ep_rules_accepting(&l, &cq, head);
	EXPECT_TRUE(l.incoming_armed);
	EXPECT_EQ(cq.reserved, 1u) << "re-armed with an entry promised";
	tb5_ep_rules_accepting(&l, &cq, head);
	EXPECT_EQ(cq.reserved, 1u) << "armed once, whatever the accepts";
	EXPECT_EQ(tb5_ep_rules_event(&l, &cq, head, TB5_EV_INCOMING, 0, &index), 1);
	EXPECT_EQ(tb5_cq_acct_used(&cq, head), 2u);
}

TEST_F(CtxRules, AnAcceptRearmsOnlyWhenTheQueueCanPromise)
{
	tb5_ep_rules l;
	uint32_t index;

	ASSERT_EQ(tb5_ep_rules_open(&l, &cq, head, true), 0);
	EXPECT_EQ(tb5_ep_rules_event(&l, &cq, head, TB5_EV_INCOMING, 0, &index), 1);
	ASSERT_EQ(tb5_cq_acct_reserve(&cq, head, 63), 0);
	tb5_ep_rules_accepting(&l, &cq, head);
	EXPECT_FALSE(l.incoming_armed);
	EXPECT_EQ(tb5_ep_rules_event(&l, &cq, head, TB5_EV_INCOMING, 0, &index), 0);
	head++;		// the owner polled the first INCOMING
	tb5_ep_rules_accepting(&l, &cq, head);
	EXPECT_TRUE(l.incoming_armed);
	EXPECT_EQ(tb5_ep_rules_event(&l, &cq, head, TB5_EV_INCOMING, 0, &index), 1);
}

TEST_F(CtxRules, AcceptingIsNothingForAConnection)
{
	tb5_ep_rules ep;

	ASSERT_EQ(tb5_ep_rules_open(&ep, &cq, head, false), 0);
	tb5_ep_rules_accepting(&ep, &cq, head);
	EXPECT_FALSE(ep.incoming_armed);
	EXPECT_EQ(cq.reserved, 2u);
}

// What a program that never polls sees: every piece of work is accepted
// while it fits and refused with -ENOSPC after, and production never fails.
TEST_F(CtxRules, ANeverPolledQueueRefusesWorkAndNeverOverflows)
{
	std::vector<tb5_ep_rules> eps(4);
	uint32_t produced = 0, refused = 0, index;

	for (auto &e : eps)
		ASSERT_EQ(tb5_ep_rules_open(&e, &cq, head, false), 0);
	for (int round = 0; round < 200; round++) {
		auto &e = eps[size_t(round) % eps.size()];
		int slot = post(e, round % 3 ? TB5_COMPLETION_RECV :
					       TB5_COMPLETION_SEND);

		if (slot == -ENOSPC) {
			refused++;
			continue;
		}
		ASSERT_GE(slot, 0);
		ASSERT_GE(complete(e, uint64_t(slot)), 0);
		produced++;
	}
	for (auto &e : eps) {
		EXPECT_EQ(tb5_ep_rules_event(&e, &cq, head, TB5_EV_PEER_CLOSED,
					     -ECONNRESET, &index), 1);
		produced++;
	}
	EXPECT_EQ(produced, 64u - 4u);
	EXPECT_GT(refused, 0u);
	EXPECT_LE(tb5_cq_acct_used(&cq, head) + cq.reserved, cq.entries);
}

} // namespace
