// SPDX-License-Identifier: MIT
//
// errors.cc - library error messages and the stop flag.
#include "errors.hpp"

#include <signal.h>

#include <atomic>

#include "tb5/tb5.h"

namespace tb5perf {
namespace {

std::atomic<bool> stop_flag{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void on_stop_signal(int)
{
	stop_flag.store(true, std::memory_order_relaxed);
}

} // namespace

std::string api_message(const std::string &what, int err)
{
	const char *detail = tb5_last_error();
	std::string msg = what + ": " + tb5_strerror(err);

	if (detail && *detail)
		msg += std::string(" (") + detail + ")";
	return msg;
}

void throw_api(const std::string &what, int err)
{
	throw Error(api_message(what, err));
}

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
