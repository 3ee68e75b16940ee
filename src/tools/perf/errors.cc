// SPDX-License-Identifier: MIT
//
// errors.cc - the stop flag.
#include "errors.hpp"

#include <signal.h>

#include <atomic>

namespace tb5perf {
namespace {

std::atomic<bool> stop_flag{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void on_stop_signal(int)
{
	stop_flag.store(true, std::memory_order_relaxed);
}

} // namespace

bool stop_requested()
{
	return stop_flag.load(std::memory_order_relaxed);
}

void install_stop_handlers()
{
	struct sigaction sa = {};

	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, nullptr);
	sigaction(SIGTERM, &sa, nullptr);
	sigaction(SIGHUP, &sa, nullptr);
	// A peer that goes away must not kill us through a pipe.
	signal(SIGPIPE, SIG_IGN);
}

} // namespace tb5perf
