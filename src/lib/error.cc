// SPDX-License-Identifier: MIT
//
// error.cc - error strings and the per-thread last error.
#include "error.hpp"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "tb5/tb5.h"

namespace tb5 {
namespace {

thread_local char last_error[512];

} // namespace

int fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return err;
}

void clear_error()
{
	last_error[0] = '\0';
}

} // namespace tb5

extern "C" const char *tb5_last_error(void)
{
	return tb5::last_error;
}

extern "C" const char *tb5_drops_describe(const struct tb5_drops *before,
					  const struct tb5_drops *after,
					  char *buf, size_t len)
{
	static const struct tb5_drops zero = {};
	struct {
		uint64_t tb5_drops::*field;
		const char *what;
	} const kinds[] = {
		{ &tb5_drops::sequence_gap, "lost (sequence gap)" },
		{ &tb5_drops::ring_overflow, "dropped for want of room (ring overflow)" },
		{ &tb5_drops::malformed, "malformed" },
		{ &tb5_drops::out_of_window, "outside what was posted (out of window)" },
		{ &tb5_drops::unknown_connection, "for no open connection (unknown connection)" },
	};
	size_t used = 0;

	if (!buf || !len)
		return buf;
	buf[0] = '\0';
	if (!after)
		return buf;
	if (!before)
		before = &zero;
	for (const auto &k : kinds) {
		const uint64_t a = after->*k.field, b = before->*k.field;
		int n;

		if (a <= b || used >= len)
			continue;
		n = snprintf(buf + used, len - used, "%s%llu frame%s %s",
			     used ? ", " : "", (unsigned long long)(a - b),
			     a - b == 1 ? "" : "s", k.what);
		if (n > 0)
			used += static_cast<size_t>(n);
	}
	return buf;
}

extern "C" const char *tb5_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case -EPROTO:
		return "the peer broke the protocol (a malformed frame, or data "
		       "outside the posted receive: see the link's drop counters)";
	case -EPROTONOSUPPORT:
		return "version mismatch: the tb5 module, or the simulator's fabric, "
		       "speaks another version than this libtb5";
	case -EBADMSG:
		return "frames of the message were lost on the way (sequence gap: "
		       "see the link's drop counters)";
	case -EHOSTUNREACH:
		return "this link does not reach that host";
	case -ENOLINK:
		return "the link is down";
	case -EMSGSIZE:
		return "message larger than the posted receive";
	case -ECANCELED:
		return "operation cancelled (endpoint closed)";
	case -ECONNREFUSED:
		return "connection refused (no listener with that address)";
	case -ECONNRESET:
		return "the peer closed the connection";
	case -EAGAIN:
		return "try again (queue full, or nothing to accept)";
	default:
		break;
	}
	if (err < 0 && err > -4096)
		return strerrordesc_np(-err) ? strerrordesc_np(-err) : "unknown error";
	return "not an error code";
}
