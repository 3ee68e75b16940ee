// SPDX-License-Identifier: MIT
//
// progress.cc - the progress line.
#include "progress.hpp"

#include <unistd.h>

#include <cstdio>

#include "clock.hpp"

namespace tb5perf {

Progress::Progress(bool enabled)
	: enabled_(enabled), tty_(isatty(STDERR_FILENO)), start_ns_(now_ns())
{
}

Progress::~Progress()
{
	clear();
}

void Progress::update(const std::string &line, bool force)
{
	if (!enabled_)
		return;
	const uint64_t now = now_ns();
	if (!force && shown_ && now - last_ns_ < 100000000ull)
		return;
	last_ns_ = now;
	const double elapsed = seconds(now - start_ns_);
	if (tty_)
		fprintf(stderr, "\r\033[K[%6.1f s] %s", elapsed, line.c_str());
	else
		// Not a terminal (--progress into a log): one line each.
		fprintf(stderr, "[%6.1f s] %s\n", elapsed, line.c_str());
	fflush(stderr);
	shown_ = true;
}

void Progress::clear()
{
	if (!enabled_ || !shown_)
		return;
	if (tty_) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	shown_ = false;
}

} // namespace tb5perf
