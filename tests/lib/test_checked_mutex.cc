// SPDX-License-Identifier: MIT
//
// test_checked_mutex.cc - the lock assertions of libtb5's simulator
// (src/lib/util/checked_mutex.hpp, over the core's lock): assert_held()
// passes on the thread that holds the lock and ends the process, naming
// the caller and the lock, on any other: before it was taken, after it was
// let go, or while another thread holds it. Built with TB5_OS_LOCK_CHECKS,
// as libtb5 is without NDEBUG and when sanitized.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "util/checked_mutex.hpp"

namespace {

using tb5::CheckedMutex;

// The caller (the test's body), the lock.
constexpr const char *kDies =
	"TestBody\\(\\) must be called with the test's lock held";

TEST(CheckedMutex, TheHolderPasses)
{
	CheckedMutex mu("the test's lock");

	{
		std::lock_guard lk(mu);
		mu.assert_held();
	}
	mu.lock();
	mu.assert_held();
	mu.unlock();
}

TEST(CheckedMutexDeathTest, NotTakenEndsTheProcess)
{
	CheckedMutex mu("the test's lock");

	EXPECT_DEATH(mu.assert_held(), kDies);
}

TEST(CheckedMutexDeathTest, LetGoEndsTheProcess)
{
	CheckedMutex mu("the test's lock");

	mu.lock();
	mu.unlock();
	EXPECT_DEATH(mu.assert_held(), kDies);
}

TEST(CheckedMutexDeathTest, HeldByAnotherThreadEndsTheProcess)
{
	GTEST_FLAG_SET(death_test_style, "threadsafe");
	EXPECT_DEATH(
		{
			CheckedMutex mu("the test's lock");
			std::atomic<bool> held{ false };
			std::thread t([&] {
				mu.lock();
				held = true;
				for (;;)
					std::this_thread::sleep_for(
						std::chrono::seconds(1));
			});

			t.detach();
			while (!held)
				std::this_thread::yield();
			mu.assert_held();
		},
		kDies);
}

} // namespace
