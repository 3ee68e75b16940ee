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

extern "C" const char *tb5_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case -EPROTO:
		return "protocol or ABI version mismatch";
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
