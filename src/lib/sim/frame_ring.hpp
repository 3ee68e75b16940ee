// SPDX-License-Identifier: MIT
//
// frame_ring.hpp - one direction of a simulated cable: the receiver's RX
// ring of ring_size descriptors, each owning a 4 KiB frame buffer, in
// memory that both ends map (shared memory between processes, or plain
// memory for a loop pair inside one process).
//
// One producer (the sending link, playing the DMA engine) and one consumer
// (the receiving link). The producer may fill a descriptor only while it is
// free: that is end-to-end flow control, a frame never lands in a full RX
// ring. Indices run freely and are masked; each lives on its own cache line.
//
//   producer: fill slot(head), head + 1; store_release(head) at the end
//             of a burst (or every few frames), so the consumer's cache
//             line is not pulled away for every frame
//   consumer: while load_acquire(head) != tail: use slot(tail), tail + 1;
//             store_release(tail) once per batch
#ifndef TB5_SIM_FRAME_RING_HPP
#define TB5_SIM_FRAME_RING_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tb5_core.h"

namespace tb5::sim {

struct FrameDesc {
	// When the frame reaches this end (CLOCK_MONOTONIC ns): the link-rate
	// model's stamp (sim/wire_clock.hpp); 0 when the sender models none.
	uint64_t due_ns;
	uint16_t len;
	uint8_t sof;
	uint8_t eof;
	uint32_t flags;		// kFrameByRef, else 0
};
static_assert(sizeof(FrameDesc) == 16);

// The slot holds a GpuRef (sim/gpu_region.hpp), not the payload: the
// receiver copies len bytes from the sender's GPU memory (sim_link_gpu.cc).
constexpr uint32_t kFrameByRef = 1;

struct alignas(64) RingIndices {
	alignas(64) std::atomic<uint32_t> head;	// written by the producer
	alignas(64) std::atomic<uint32_t> tail;	// written by the consumer
};
static_assert(std::atomic<uint32_t>::is_always_lock_free);

// Bytes of one direction's ring in the shared block, page-rounded.
constexpr size_t ring_bytes(uint32_t ring_size)
{
	size_t b = sizeof(RingIndices) + size_t(ring_size) * sizeof(FrameDesc);

	b = (b + 4095) & ~size_t(4095);
	return b + size_t(ring_size) * TB5_FRAME_MAX;
}

// A view of one direction's ring in a mapped block (zeroed = empty).
class FrameRing {
public:
	FrameRing() = default;
	FrameRing(void *base, uint32_t ring_size)
	{
		auto *p = static_cast<uint8_t *>(base);
		size_t desc_end = sizeof(RingIndices) +
				  size_t(ring_size) * sizeof(FrameDesc);

		idx_ = reinterpret_cast<RingIndices *>(p);
		desc_ = reinterpret_cast<FrameDesc *>(p + sizeof(RingIndices));
		data_ = p + ((desc_end + 4095) & ~size_t(4095));
		size_ = ring_size;
		mask_ = ring_size - 1;
	}

	explicit operator bool() const { return idx_ != nullptr; }
	uint32_t size() const { return size_; }

	// --- producer side ---
	// Free descriptors, refreshing the cached tail only when needed.
	uint32_t free_slots()
	{
		uint32_t used = prod_head_ - prod_tail_;

		if (used < size_)
			return size_ - used;
		prod_tail_ = idx_->tail.load(std::memory_order_acquire);
		return size_ - (prod_head_ - prod_tail_);
	}
	// Fill the next descriptor (the caller checked free_slots()); the
	// consumer takes it once @due_ns has passed.
	uint8_t *produce_slot(uint8_t sof, uint8_t eof, uint16_t len,
			      uint64_t due_ns, uint32_t flags = 0)
	{
		uint32_t i = prod_head_ & mask_;

		desc_[i] = { due_ns, len, sof, eof, flags };
		return data_ + size_t(i) * TB5_FRAME_MAX;
	}
	// The filled descriptor is ours until publish() hands it over.
	void produce_commit() { prod_head_++; }
	uint32_t unpublished() const { return prod_head_ - published_; }
	// Descriptors filled so far (a free-running count).
	uint32_t produced() const { return prod_head_; }
	// Descriptors the consumer has given back so far (free-running).
	uint32_t consumed() const { return idx_->tail.load(std::memory_order_acquire); }
	void publish()
	{
		if (published_ != prod_head_) {
			published_ = prod_head_;
			idx_->head.store(prod_head_, std::memory_order_release);
		}
	}
	void producer_attach()
	{
		prod_head_ = idx_->head.load(std::memory_order_relaxed);
		published_ = prod_head_;
		prod_tail_ = idx_->tail.load(std::memory_order_acquire);
	}

	// --- consumer side ---
	// Frames waiting, refreshing the cached head.
	uint32_t pending()
	{
		cons_head_ = idx_->head.load(std::memory_order_acquire);
		return cons_head_ - cons_tail_;
	}
	// Of the first @n waiting frames, how many are due by @now_ns (due
	// times never go back along the ring: one sender, one clock).
	uint32_t due(uint32_t n, uint64_t now_ns) const
	{
		uint32_t k = 0;

		while (k < n && desc(k).due_ns <= now_ns)
			k++;
		return k;
	}
	const FrameDesc &desc(uint32_t k) const
	{
		return desc_[(cons_tail_ + k) & mask_];
	}
	const uint8_t *data(uint32_t k) const
	{
		return data_ + size_t((cons_tail_ + k) & mask_) * TB5_FRAME_MAX;
	}
	void consume(uint32_t n)
	{
		cons_tail_ += n;
		idx_->tail.store(cons_tail_, std::memory_order_release);
	}
	void consumer_attach()
	{
		cons_tail_ = idx_->tail.load(std::memory_order_relaxed);
		cons_head_ = cons_tail_;
	}

private:
	RingIndices *idx_ = nullptr;
	FrameDesc *desc_ = nullptr;
	uint8_t *data_ = nullptr;
	uint32_t size_ = 0;
	uint32_t mask_ = 0;
	// Local copies: the producer's and the consumer's view.
	uint32_t prod_head_ = 0, prod_tail_ = 0, published_ = 0;
	uint32_t cons_head_ = 0, cons_tail_ = 0;
};

} // namespace tb5::sim

#endif // TB5_SIM_FRAME_RING_HPP
