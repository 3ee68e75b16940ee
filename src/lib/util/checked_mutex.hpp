// SPDX-License-Identifier: MIT
//
// checked_mutex.hpp - a mutex that knows which thread holds it, so that code
// that needs it held can say so: assert_held() ends the process, naming the
// lock, when the calling thread does not hold it. The simulator's analogue
// of the kernel's lockdep_assert_held().
//
// The owner is kept where TB5_DEBUG_LOCKS is defined (src/lib/CMakeLists.txt
// defines it in every build type but Release and MinSizeRel: the default
// RelWithDebInfo, CI's builds with and without sanitizers, Debug) or NDEBUG
// is not; elsewhere (the packages' Release builds) it is a plain mutex and
// assert_held() does nothing.
#ifndef TB5_UTIL_CHECKED_MUTEX_HPP
#define TB5_UTIL_CHECKED_MUTEX_HPP

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#if defined(TB5_DEBUG_LOCKS) || !defined(NDEBUG)
#define TB5_LOCK_CHECKS 1
#else
#define TB5_LOCK_CHECKS 0
#endif

namespace tb5 {

class CheckedMutex {
public:
	// @name says which lock it is when an assertion fails.
	explicit CheckedMutex(const char *name) : name_(name) {}
	CheckedMutex(const CheckedMutex &) = delete;
	CheckedMutex &operator=(const CheckedMutex &) = delete;

	// BasicLockable and Lockable: std::lock_guard, std::unique_lock.
	void lock()
	{
		mu_.lock();
		set_owner(std::this_thread::get_id());
	}
	bool try_lock()
	{
		if (!mu_.try_lock())
			return false;
		set_owner(std::this_thread::get_id());
		return true;
	}
	void unlock()
	{
		set_owner(std::thread::id());
		mu_.unlock();
	}

	// The calling thread must hold the lock: else, in a build that checks,
	// the process ends here with a message that names the lock.
	void assert_held() const
	{
#if TB5_LOCK_CHECKS
		// Only the holder writes its own id, and it clears it before
		// unlocking: no other thread can make this read our id.
		if (owner_.load(std::memory_order_relaxed) !=
		    std::this_thread::get_id()) {
			fprintf(stderr, "libtb5: %s is not held by this thread, "
				"which needs it\n", name_);
			abort();
		}
#endif
	}

private:
	void set_owner([[maybe_unused]] std::thread::id id)
	{
#if TB5_LOCK_CHECKS
		owner_.store(id, std::memory_order_relaxed);
#endif
	}

	std::mutex mu_;
	[[maybe_unused]] const char *name_;
#if TB5_LOCK_CHECKS
	std::atomic<std::thread::id> owner_{};
#endif
};

} // namespace tb5

#endif // TB5_UTIL_CHECKED_MUTEX_HPP
