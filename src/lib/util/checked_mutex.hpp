// SPDX-License-Identifier: MIT
//
// checked_mutex.hpp - a lock for libtb5's own objects that code needing it
// held can assert, as the transport core asserts the link's lock: it is the
// core's user-space lock (tb5_os_lock_create(), src/coreos/tb5_os_posix.c),
// which records the thread that holds it, wrapped for std::lock_guard.
//
// assert_held() aborts, naming the function that asked and the lock, when
// the calling thread does not hold it, in the builds where the core checks
// its own locks (TB5_OS_LOCK_CHECKS: those without NDEBUG, and the
// sanitized ones); elsewhere it does nothing, as tb5_os_assert_held() does.
#ifndef TB5_UTIL_CHECKED_MUTEX_HPP
#define TB5_UTIL_CHECKED_MUTEX_HPP

#include <new>

#include "tb5_os.h"

namespace tb5 {

class CheckedMutex {
public:
	// @name says which lock it is when an assertion fails. Throws
	// std::bad_alloc when no lock can be made.
	explicit CheckedMutex(const char *name)
		: lock_(tb5_os_lock_create()), name_(name)
	{
		if (!lock_)
			throw std::bad_alloc();
	}
	~CheckedMutex() { tb5_os_lock_destroy(lock_); }
	CheckedMutex(const CheckedMutex &) = delete;
	CheckedMutex &operator=(const CheckedMutex &) = delete;

	// BasicLockable: std::lock_guard, std::unique_lock.
	void lock() { tb5_os_lock(lock_); }
	void unlock() { tb5_os_unlock(lock_); }

	// The calling thread holds the lock: else, where locks are checked,
	// the process ends with a message that names @who (by default the
	// function that calls this) and the lock.
	void assert_held(
		[[maybe_unused]] const char *who = __builtin_FUNCTION()) const
	{
#ifdef TB5_OS_LOCK_CHECKS
		tb5_os_assert_held_at(lock_, name_, who);
#endif
	}

private:
	struct tb5_os_spinlock *lock_;
	[[maybe_unused]] const char *name_;
};

} // namespace tb5

#endif // TB5_UTIL_CHECKED_MUTEX_HPP
