// SPDX-License-Identifier: MIT
//
// env.cc - see env.hpp.
#include "env.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "log.hpp"

namespace tb5net {

long env_long(const char *name, long def, long lo, long hi)
{
	const char *v = std::getenv(name);
	if (!v || !*v)
		return def;
	char *end = nullptr;
	errno = 0;
	long x = std::strtol(v, &end, 0);
	if (errno || *end || x < lo || x > hi) {
		TB5_WARN("ignoring %s=%s: not a number in [%ld, %ld]", name, v, lo, hi);
		return def;
	}
	return x;
}

bool env_is(const char *name, const char *value)
{
	const char *v = std::getenv(name);
	return v && !std::strcmp(v, value);
}

} // namespace tb5net
