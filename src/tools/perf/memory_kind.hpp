// SPDX-License-Identifier: MIT
//
// memory_kind.hpp - what a side's data buffers are (--memory); the numbers
// travel in WELCOME, so that the client can report the server's too.
#ifndef TB5_PERF_MEMORY_KIND_HPP
#define TB5_PERF_MEMORY_KIND_HPP

#include <cstdint>
#include <string_view>

#include "names.hpp"

namespace tb5perf {

// 0 is host memory: servers that predate --memory send 0, and that is
// what they used.
enum class Memory : uint32_t {
	kHost = 0,	// anonymous memory, tb5_reg_host()
	kUdmabuf = 1,	// a dma-buf of /dev/udmabuf, tb5_reg_dmabuf()
};

// In the order --help lists them.
constexpr Named<Memory> kMemoryNames[] = {
	{Memory::kHost, "host"},
	{Memory::kUdmabuf, "udmabuf"},
};

constexpr std::string_view memory_name(Memory m)
{
	return name_of(kMemoryNames, m);
}

} // namespace tb5perf

#endif // TB5_PERF_MEMORY_KIND_HPP
