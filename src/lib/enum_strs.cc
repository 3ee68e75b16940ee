// SPDX-License-Identifier: MIT
//
// enum_strs.cc - names of the library's values, for the tools and for
// programs built on libtb5 (as libibverbs' enum_strs.c names a port state):
// never NULL, "unknown" for a value this release does not know.
#include <cstddef>
#include <cstdint>

#include "tb5/tb5.h"

namespace {

struct Name {
	uint32_t value;
	const char *name;
};

constexpr Name kLinkStates[] = {
	{ TB5_LINK_STATE_DOWN, "down" },
	{ TB5_LINK_STATE_UP, "up" },
	{ TB5_LINK_STATE_READY, "ready" },
};

constexpr Name kBackends[] = {
	{ TB5_BACKEND_KERNEL, "kernel" },
	{ TB5_BACKEND_SIM, "simulator" },
};

template <size_t N> const char *name_of(const Name (&names)[N], uint32_t value)
{
	for (const Name &n : names)
		if (n.value == value)
			return n.name;
	return "unknown";
}

} // namespace

extern "C" const char *tb5_link_state_str(uint32_t state)
{
	return name_of(kLinkStates, state);
}

extern "C" const char *tb5_backend_str(uint32_t backend)
{
	return name_of(kBackends, backend);
}
