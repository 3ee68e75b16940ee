// SPDX-License-Identifier: MIT
//
// stream_copy.hpp - copying received frames into a large receive buffer
// without pulling the buffer through the cache.
//
// A frame is copied out of the RX ring into the posted buffer 4 KiB at a
// time, so memcpy never sees how large the message is and always uses
// cached stores: every destination line is first read from memory (the
// write-allocate), then written back, three memory transfers per byte
// where a large memcpy makes two. A StreamCopier watches for long runs of
// contiguous frames and, past a threshold, writes them with non-temporal
// stores, as memcpy does for large copies.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tb5::sim {

class StreamCopier {
public:
	// Contiguous bytes after which copies bypass the cache: beyond what
	// the caches would keep anyway.
	static constexpr uint64_t kThreshold = 4u << 20;

	void copy(void *dst, const void *src, size_t len);
	// Makes non-temporal stores visible before a completion is reported.
	void fence();

private:
	uintptr_t next_ = 0;		// where a contiguous run would go on
	uint64_t run_ = 0;		// bytes in the current run
	bool unfenced_ = false;
};

} // namespace tb5::sim
