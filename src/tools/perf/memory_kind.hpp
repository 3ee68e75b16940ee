// SPDX-License-Identifier: MIT
//
// memory_kind.hpp - what a side's data buffers are (--memory); the numbers
// travel in WELCOME, so that the client can report the server's too.
#ifndef TB5_PERF_MEMORY_KIND_HPP
#define TB5_PERF_MEMORY_KIND_HPP

#include <cstdint>
#include <optional>
#include <string_view>

namespace tb5perf {

// 0 is host memory: servers that predate --memory send 0, and that is
// what they used.
enum class Memory : uint32_t {
	kHost = 0,	// anonymous memory, tb5_reg_host()
	kUdmabuf = 1,	// a dma-buf of /dev/udmabuf, tb5_reg_dmabuf()
};

constexpr Memory kAllMemory[] = {Memory::kHost, Memory::kUdmabuf};

constexpr std::string_view memory_name(Memory m)
{
	switch (m) {
	case Memory::kHost: return "host";
	case Memory::kUdmabuf: return "udmabuf";
	}
	return "?";
}

inline std::optional<Memory> memory_from_name(std::string_view name)
{
	for (Memory m : kAllMemory)
		if (memory_name(m) == name)
			return m;
	return std::nullopt;
}

inline std::optional<Memory> memory_from_wire(uint64_t v)
{
	for (Memory m : kAllMemory)
		if (static_cast<uint64_t>(m) == v)
			return m;
	return std::nullopt;
}

} // namespace tb5perf

#endif // TB5_PERF_MEMORY_KIND_HPP
