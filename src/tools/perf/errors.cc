// SPDX-License-Identifier: MIT
//
// errors.cc - library error messages and the stop flag.
#include "errors.h"

#include <signal.h>

#include <atomic>

#include "tb5/tb5.h"

namespace tb5perf {
namespace {

std::atomic<bool> stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void OnStopSignal(int)
{
	stop_requested.store(true, std::memory_order_relaxed);
}

} // namespace

std::string ApiMessage(const std::string &what, int err)
{
	const char *detail = tb5_last_error();
	std::string msg = what + ": " + tb5_strerror(err);

	if (detail && *detail)
		msg += std::string(" (") + detail + ")";
	return msg;
}

void ThrowApi(const std::string &what, int err)
{
	throw Error(ApiMessage(what, err));
}

bool StopRequested()
{
	return stop_requested.load(std::memory_order_relaxed);
}

void InstallStopHandlers()
{
	struct sigaction sa = {};

	sa.sa_handler = OnStopSignal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, nullptr);
	sigaction(SIGTERM, &sa, nullptr);
	sigaction(SIGHUP, &sa, nullptr);
	// A peer that goes away must not kill us through a pipe.
	signal(SIGPIPE, SIG_IGN);
}

} // namespace tb5perf
