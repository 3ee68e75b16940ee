// SPDX-License-Identifier: MIT
//
// test_locking.cc - the core asserts the link's lock (tb5_os_assert_held,
// lockdep_assert_held() in tb5.ko): a core function that needs the lock,
// called by a thread that does not hold it, aborts and names itself and the
// lock; called under the lock, it runs. The check is on the owner, not on
// the lock being taken: another thread holding it does not do. The checks
// are compiled in where TB5_OS_LOCK_CHECKS is defined (builds without NDEBUG,
// and the sanitized ones); elsewhere these tests skip.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

#include "two_node.hpp"

extern "C" {
#include "tb5_core_internal.h"
}

namespace {

using tb5test::TwoNode;

// What the assertion prints, for @func and the lock expression @lock.
std::string message(const char *func, const char *lock)
{
	return std::string("tb5: ") + func + "\\(\\) must be called with " +
	       lock + " held";
}

class LockDeathTest : public ::testing::Test {
protected:
	void SetUp() override
	{
#ifndef TB5_OS_LOCK_CHECKS
		GTEST_SKIP() << "lock assertions are compiled out (NDEBUG without TB5_SANITIZE)";
#endif
		// The harness's links are driven from this thread only, but a
		// test below starts one: re-run the binary rather than fork.
		GTEST_FLAG_SET(death_test_style, "threadsafe");
		ASSERT_TRUE(h.bring_up());
		c = h.connect_pair(1);
		ASSERT_TRUE(c.client && c.server);
		h.run();
	}

	struct tb5_link *link() const { return h.link(0); }
	struct tb5_ep *ep() const { return c.client->ep; }

	TwoNode h;
	TwoNode::Conn c;
};

// One function of each core file that runs under the lock, called without it.
TEST_F(LockDeathTest, CoreFunctionsWithoutTheLockAbort)
{
	EXPECT_DEATH(tb5_pump(link()), message("tb5_pump", "link->lock"));
	EXPECT_DEATH(tb5_queue_reply(link(), TB5_WIRE_CLOSE, 1, 2, 0, -ECONNRESET),
		     message("tb5_queue_reply", "link->lock"));
	EXPECT_DEATH(tb5_ep_schedule(ep()),
		     message("tb5_ep_schedule", "ep->link->lock"));
	EXPECT_DEATH(tb5_ep_try_release(ep()),
		     message("tb5_ep_try_release", "link->lock"));
	EXPECT_DEATH(tb5_ep_cancel_ops(ep(), -ECANCELED),
		     message("tb5_ep_cancel_ops", "link->lock"));
	EXPECT_DEATH(tb5_rxb_abandon(link(), -EPROTO),
		     message("tb5_rxb_abandon", "link->lock"));
}

// Under the lock the same calls run, and after tb5_link_unlock() the lock
// is no longer this thread's.
TEST_F(LockDeathTest, UnderTheLockTheyRun)
{
	tb5_os_lock(link()->lock);
	tb5_pump(link());
	tb5_ep_schedule(ep());
	tb5_ep_try_release(ep());
	tb5_link_unlock(link());
	EXPECT_DEATH(tb5_pump(link()), message("tb5_pump", "link->lock"));
	h.run();
	EXPECT_EQ(tb5_ep_state(ep()), TB5_EP_CONNECTED);
}

// Another thread holding the lock is not enough: the check is on the owner.
TEST_F(LockDeathTest, AnotherThreadsLockDoesNotCount)
{
	struct tb5_link *l = link();

	EXPECT_DEATH(
		{
			std::atomic<bool> held{false};
			std::thread holder([&] {
				tb5_os_lock(l->lock);
				held = true;
				for (;;)
					std::this_thread::yield();
			});
			while (!held)
				std::this_thread::yield();
			tb5_pump(l);
			holder.detach();
		},
		message("tb5_pump", "link->lock"));
}

} // namespace
