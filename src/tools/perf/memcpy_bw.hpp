// SPDX-License-Identifier: MIT
//
// memcpy_bw.hpp - the reference column: single-thread memcpy bandwidth for a
// message size, measured in the same run. Each copy goes from a source
// buffer of the message size to a destination buffer of the message size,
// cycling through `slots` pairs of them (the caller picks enough that the
// copies come from memory rather than from a cache still warm from the
// last copy). Buffers are touched before timing; the result is the median
// of several repetitions.
#ifndef TB5_PERF_MEMCPY_BW_HPP
#define TB5_PERF_MEMCPY_BW_HPP

#include <cstddef>
#include <cstdint>

namespace tb5perf {

class MemcpyMeter {
public:
	MemcpyMeter() = default;
	~MemcpyMeter();
	MemcpyMeter(const MemcpyMeter &) = delete;
	MemcpyMeter &operator=(const MemcpyMeter &) = delete;

	// GB/s (1e9 bytes per second) of copying @size bytes, over about
	// @budget_s seconds in all.
	double measure(uint64_t size, uint32_t slots, double budget_s);

private:
	void reserve(size_t bytes);

	uint8_t *src_ = nullptr, *dst_ = nullptr;
	size_t len_ = 0;
};

} // namespace tb5perf

#endif // TB5_PERF_MEMCPY_BW_HPP
