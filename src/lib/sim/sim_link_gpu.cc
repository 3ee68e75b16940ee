// SPDX-License-Identifier: MIT
//
// sim_link_gpu.cc - a simulated cable end's GPU memory: payload frames of
// GPU regions moved by the DMA engine (by reference where the region is
// exported, else through the ring), never copied by the CPU. The rules are
// in sim_link.hpp; the engines in dma_engine.hpp.
#include <cstring>

#include "sim/sim_link.hpp"

namespace tb5::sim {

void SimLink::set_gpu(GpuMem *gpu)
{
	if (!gpu || !gpu->engine())
		return;
	gpu_ = gpu;
	gpu_tx_.bind(gpu->engine());
	gpu_rx_.bind(gpu->engine());
}

void SimLink::dma_gpu(uint8_t sof, uint8_t eof, uint16_t len, const void *src,
		      uint64_t cookie, const GpuRegion &gpu)
{
	const uint64_t due = stamp(sof, len);

	if (gpu.index >= 0 && peer_takes_refs()) {
		// One DMA, the receiver's: the frame names the bytes, and is
		// sent once the receiver gives its descriptor back.
		const GpuRef ref = {
			uint32_t(gpu.index), 0, gpu.gen,
			uint64_t(static_cast<const uint8_t *>(src) - gpu.span.base),
		};

		memcpy(tx_ring_.produce_slot(sof, eof, len, due, kFrameByRef), &ref,
		       sizeof(ref));
		tx_ring_.produce_commit();
		byref_.push_back({ tx_ring_.produced(), cookie });
	} else {
		// Two DMAs through the ring: into the slot now, published
		// once it is done. (The rings were page-locked when the
		// region was registered: gpu_registered().)
		gpu_tx_.add(tx_ring_.produce_slot(sof, eof, len, due), src, len);
		tx_ring_.produce_commit();
		done_.push_back(cookie);
	}
	if (eof == TB5_EOF_LAST || tx_ring_.unpublished() >= 16)
		publish_ring();
}

bool SimLink::peer_takes_refs()
{
	// A peer without an engine has no export table; it takes frames
	// through the ring. (It made its table before its links said hello,
	// so a connection to it finds the table if there is one.)
	if (peer_takes_refs_ < 0)
		peer_takes_refs_ = !mesh_ || gpu_->has_engine(peer_session_);
	return peer_takes_refs_ > 0;
}

void SimLink::publish_ring()
{
	// Staged CPU copies ahead in the ring are made by publish_tx().
	if (engine_) {
		publish_tx();
		return;
	}
	if (gpu_tx_.pending())
		gpu_tx_.flush();
	tx_ring_.publish();
	wake_peer_ = true;
}

void SimLink::reap_byref()
{
	const uint32_t back = tx_ring_.consumed();

	while (!byref_.empty() && int32_t(back - byref_.front().pos) >= 0) {
		done_.push_back(byref_.front().cookie);
		byref_.pop_front();
	}
}

void SimLink::byref_sent()
{
	for (const ByRef &b : byref_)
		done_.push_back(b.cookie);
	byref_.clear();
}

void SimLink::rx_byref(const FrameDesc &d, const uint8_t *slot)
{
	GpuRef ref;
	const uint8_t *src = nullptr;

	memcpy(&ref, slot, sizeof(ref));
	if (gpu_ && d.sof == TB5_SOF_PAYLOAD)
		src = gpu_->resolve(byref_peer(), ref, d.len);
	if (!src) {
		// Names nothing of the peer's: lost, as a frame with a bad
		// header (the core sees the gap and fails the receive).
		tb5_link_rx_refused(core_, TB5_DROP_MALFORMED, 1);
		return;
	}
	imported_ = true;
	rx_byref_ = true;
	tb5_link_rx(core_, d.sof, d.eof, src, d.len);
	rx_byref_ = false;
}

int SimLink::rx_dma(void *dst, const void *src, uint32_t len)
{
	if (!gpu_)
		return -EOPNOTSUPP;
	return gpu_rx_.add(dst, src, len);
}

void SimLink::gpu_registered()
{
	uint64_t peer;
	bool up;

	if (!gpu_)
		return;
	// No CUDA call that takes the process's CUDA lock (page-locking,
	// opening a peer's memory) may wait in the data path: any thread
	// blocked on a GPU kernel holds that lock, and the kernel waits for
	// this link's frames (a first collective of 1 MiB hung so, until
	// this was done here). A region is registered before NCCL's kernels
	// use it, and NCCL's connection set-up ends with every rank's
	// registrations done.
	pin_wanted_.store(true, std::memory_order_release);
	{
		std::lock_guard lk(txq_mu_);
		up = pin_base_ != nullptr;
		peer = byref_peer();
	}
	if (!up)
		return;		// attach_rings() pins them when the link comes up
	pin_rings();
	if (peer)
		gpu_->open_exports(peer);
}

void SimLink::pin_rings()
{
	if (pinned_.load(std::memory_order_acquire) || !pin_base_)
		return;
	std::lock_guard lk(pin_mu_);
	if (pinned_.load(std::memory_order_relaxed))
		return;
	gpu_->engine()->pin(pin_base_, pin_len_);
	pinned_.store(pin_base_, std::memory_order_release);
}

void SimLink::unpin_rings()
{
	std::lock_guard lk(pin_mu_);
	void *p = pinned_.exchange(nullptr);

	if (p)
		gpu_->engine()->unpin(p);
}

} // namespace tb5::sim
