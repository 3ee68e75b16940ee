// SPDX-License-Identifier: MIT
//
// stream_copy.hpp - how the simulator copies a frame: non-temporal stores
// for long receive runs (StreamCopier). The pool of copy threads that
// splits large batches is sim/copy_engine.hpp.
//
// StreamCopier: a frame is copied out of the RX ring into the posted
// buffer 4 KiB at a time, so memcpy never sees how large the message is
// and always uses cached stores: every destination line is first read
// from memory (the write-allocate), then written back, three memory
// transfers per byte where a large memcpy makes two. A StreamCopier
// watches for long runs of contiguous frames and, past a threshold, writes
// them with non-temporal stores, as memcpy does for large copies.
//
#ifndef TB5_SIM_STREAM_COPY_HPP
#define TB5_SIM_STREAM_COPY_HPP

#include <cstddef>
#include <cstdint>

namespace tb5::sim {

// Copies with non-temporal stores (plain memcpy where there are none);
// the caller fences before it publishes.
void copy_nt(void *dst, const void *src, size_t len);
// Makes this thread's non-temporal stores visible (sfence).
void store_fence();

class StreamCopier {
public:
	// Contiguous bytes after which copies bypass the cache: beyond what
	// the caches would keep anyway.
	static constexpr uint64_t kThreshold = 4u << 20;

	void copy(void *dst, const void *src, size_t len);
	// Makes non-temporal stores visible before a completion is reported.
	void fence();
	// Would copy() of @len bytes to @dst bypass the cache? Counts the
	// bytes into the run as copy() does (for a caller that copies later).
	bool plan(const void *dst, size_t len);

private:
	uintptr_t next_ = 0;		// where a contiguous run would go on
	uint64_t run_ = 0;		// bytes in the current run
	bool unfenced_ = false;
};

} // namespace tb5::sim

#endif // TB5_SIM_STREAM_COPY_HPP
