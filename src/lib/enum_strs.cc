// SPDX-License-Identifier: MIT
//
// enum_strs.cc - names of the library's values, for the tools and for
// programs built on libtb5 (as libibverbs' enum_strs.c names a port state):
// never NULL, "unknown" for a value this release does not know.
#include <cstdint>

#include "tb5/tb5.h"

extern "C" const char *tb5_link_state_str(uint32_t state)
{
	switch (state) {
	case TB5_LINK_STATE_DOWN:
		return "down";
	case TB5_LINK_STATE_UP:
		return "up";
	case TB5_LINK_STATE_READY:
		return "ready";
	default:
		return "unknown";
	}
}

extern "C" const char *tb5_backend_str(uint32_t backend)
{
	switch (backend) {
	case TB5_BACKEND_KERNEL:
		return "kernel";
	case TB5_BACKEND_SIM:
		return "simulator";
	default:
		return "unknown";
	}
}
