// SPDX-License-Identifier: MIT
//
// sim_link.cc - a simulated cable end: TX queue, DMA copy, RX delivery.
#include "sim/sim_link.hpp"

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "error.hpp"

namespace tb5::sim {
namespace {

// Between liveness checks of a mesh peer (a kill(pid, 0) each).
constexpr uint64_t kAliveCheckNs = 200'000'000;

// The link whose RX batch this thread is feeding to the core, if any: its
// callbacks on this thread are held back until the batch's copies are made.
thread_local SimLink *t_rx_batch;

uint64_t now_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

} // namespace

SimLink::SimLink(Fabric &fabric, uint32_t peer, uint32_t cable,
		 const WireClock &wire)
	: fabric_(fabric), mesh_(true), peer_slot_(peer), cable_index_(cable), loop_end_(-1),
	  ring_size_(fabric.ring_size()), host_id_(fabric.my_session()),
	  wire_(wire)
{
}

SimLink::SimLink(Fabric &fabric, std::shared_ptr<uint8_t[]> mem, int end,
		 uint32_t ring_size, uint64_t host_id, const WireClock &wire)
	: fabric_(fabric), mesh_(false), peer_slot_(0), cable_index_(0), loop_end_(end),
	  ring_size_(ring_size), host_id_(host_id), wire_(wire),
	  loop_mem_(std::move(mem))
{
}

SimLink::~SimLink()
{
	if (core_) {
		{
			std::lock_guard lk(txq_mu_);
			drop_tx();
		}
		tb5_link_down(core_, -ESHUTDOWN);
		tb5_link_destroy(core_);
	}
	if (gpu_)
		unpin_rings();
}

int SimLink::create(const std::string &name, uint32_t index,
		    uint32_t burst_frames)
{
	static const struct tb5_link_ops ops = {
		&SimLink::op_tx, &SimLink::op_copy_to, &SimLink::op_complete,
		&SimLink::op_event,
	};
	struct tb5_link_config cfg = {};

	name_ = name;
	index_ = index;
	txq_.resize(ring_size_);
	done_.reserve(ring_size_);
	done_scratch_.reserve(ring_size_);
	staged_done_.reserve(ring_size_);
	tx_batch_.reserve(ring_size_);
	rx_batch_.reserve(ring_size_);
	deferred_.reserve(256);
	cfg.ring_size = ring_size_;
	cfg.host_id = host_id_;
	cfg.burst_frames = burst_frames;
	int ret = tb5_link_create(&cfg, &ops, this, &core_);

	if (ret)
		return fail(ret, "simulator: creating link %s: %s", name.c_str(),
			    strerror(-ret));
	return 0;
}

void SimLink::attach_rings(uint8_t *base, int end)
{
	// Direction 0 carries frames from end 0 to end 1 (for a cable, from
	// the lower slot to the higher); each end sends into the other's RX.
	uint8_t *dir0 = base, *dir1 = base + ring_bytes(ring_size_);

	tx_ring_ = FrameRing(end == 0 ? dir0 : dir1, ring_size_);
	rx_ring_ = FrameRing(end == 0 ? dir1 : dir0, ring_size_);
	tx_ring_.producer_attach();
	rx_ring_.consumer_attach();
	wire_.reset();		// fresh rings: nothing on the wire
	// What the DMA engine page-locks if GPU memory goes through the
	// rings: a cable's whole block (ours alone), a loop end's TX
	// direction (the other end locks the other).
	pin_base_ = mesh_ ? base : (end == 0 ? dir0 : dir1);
	pin_len_ = (mesh_ ? 2 : 1) * ring_bytes(ring_size_);
	// GPU regions were registered while the link was down: page-lock
	// the new rings now (a cable plugged in again mid-job pins in the
	// progressing thread, the one place left where the data path waits
	// for CUDA's lock).
	if (gpu_ && pin_wanted_.load(std::memory_order_acquire))
		pin_rings();
}

void SimLink::start_loop()
{
	attach_rings(loop_mem_.get(), loop_end_);
	{
		std::lock_guard lk(txq_mu_);
		down_ = false;
	}
	tb5_link_up(core_);
}

void SimLink::describe(tb5_link_info &info)
{
	uint64_t peer = 0;

	info = {};
	snprintf(info.name, sizeof(info.name), "%s", name_.c_str());
	info.backend = TB5_BACKEND_SIM;
	info.index = index_;
	info.state = uint32_t(tb5_link_state(core_));
	info.local_host = host_id_;
	if (info.state == TB5_LINK_STATE_READY && !tb5_link_peer(core_, &peer))
		info.peer_host = peer;
	info.ring_size = ring_size_;
	info.max_frame = TB5_FRAME_MAX;
	info.speed_mbps = uint32_t(std::min<uint64_t>(wire_.rate_mbps(), UINT32_MAX));
	info.caps = TB5_CAP_HOST_MEM | (mesh_ ? 0 : TB5_CAP_LOOP) |
		    (gpu_ ? TB5_CAP_GPU_MEM : 0);
	info.max_ops = TB5_EP_MAX_OPS;
	info.max_msg = TB5_MSG_MAX;
}

HostSlot &SimLink::peer_doorbell()
{
	return fabric_.slot(mesh_ ? peer_slot_ : fabric_.my_slot());
}

// --- the core's callbacks (under the core's link lock) ---

int SimLink::op_tx(void *priv, const struct tb5_tx_frame *f)
{
	return static_cast<SimLink *>(priv)->tx(f);
}

int SimLink::op_copy_to(void *priv, const struct tb5_mem *dst, const void *src,
			uint32_t len)
{
	// Plain pointers in user space: the offset is the address, checked
	// against the posted receive by the core and against the region by
	// the post.
	auto *l = static_cast<SimLink *>(priv);
	void *to = reinterpret_cast<void *>(uintptr_t(dst->offset));

	// A GPU receive (its region is a GpuRegion), or a peer's GPU memory.
	if (dst->region || l->rx_byref_)
		return l->rx_dma(to, src, len);
	if (l->in_rx_batch())
		l->rx_stage(to, src, len);
	else
		l->rx_copy_.copy(to, src, len);
	return 0;
}

void SimLink::op_complete(void *priv, void *ep_ctx,
			  const struct tb5_completion *c)
{
	auto *l = static_cast<SimLink *>(priv);

	l->rx_dma_flush();	// the bytes it reports, in place
	if (l->engine_)
		l->to_owner(ep_ctx, c, 0, 0);
	else
		deliver_completion(ep_ctx, c);
}

void SimLink::op_event(void *priv, void *ep_ctx, enum tb5_event ev, int status)
{
	auto *l = static_cast<SimLink *>(priv);

	if (l->engine_)
		l->to_owner(ep_ctx, nullptr, int(ev), status);
	else
		deliver_event(ep_ctx, ev, status);
}

// --- the RX batch (engine) ---

void SimLink::rx_stage(void *dst, const void *src, uint32_t len)
{
	rx_batch_.add(dst, src, len, rx_copy_.plan(dst, len));
	rx_open_.store(true, std::memory_order_relaxed);
}

void SimLink::to_owner(void *ep_ctx, const struct tb5_completion *c, int ev,
		       int status)
{
	if (in_rx_batch()) {
		Deferred d = {};

		d.ep_ctx = ep_ctx;
		if (c)
			d.c = *c;
		d.ev = int16_t(ev);
		d.status = status;
		deferred_.push_back(d);
		rx_open_.store(true, std::memory_order_relaxed);
		return;
	}
	// Another thread's call into the core (we hold its lock) while a
	// batch is under way: what the batch holds back happened first.
	finish_rx();
	if (ev)
		deliver_event(ep_ctx, tb5_event(ev), status);
	else
		deliver_completion(ep_ctx, c);
}

void SimLink::quiesce_rx()
{
	// DMAs the core asked for before the close: done.
	rx_dma_flush();
	// A batch is open only inside progress(), under progress_mu_; one
	// that made copies for the receives let go had said so under the
	// core's lock, which our caller took since.
	if (engine_ && rx_open_.load(std::memory_order_acquire) &&
	    !in_rx_batch()) {
		progress_mu_.lock();	// the pass ends with its batch
		progress_mu_.unlock();
	}
}

bool SimLink::in_rx_batch() const
{
	return rx_active_.load(std::memory_order_relaxed) && t_rx_batch == this;
}

void SimLink::finish_rx()
{
	if (!rx_open_.load(std::memory_order_acquire))
		return;
	std::lock_guard lk(rx_mu_);
	finish_rx_locked();
}

void SimLink::finish_rx_locked()
{
	// Every byte in place (and fenced) before anything reports it.
	if (!rx_batch_.empty())
		engine_->run(rx_batch_);
	// Delivery frees released endpoints; it never calls back here.
	for (const Deferred &d : deferred_) {
		if (d.ev)
			deliver_event(d.ep_ctx, tb5_event(d.ev), d.status);
		else
			deliver_completion(d.ep_ctx, &d.c);
	}
	deferred_.clear();
	rx_open_.store(false, std::memory_order_release);
}

uint64_t SimLink::stamp(uint8_t sof, uint16_t len)
{
	if (!wire_.active())
		return 0;
	// A frame starts on the wire no sooner than it is handed over, so
	// latency stays honest too. Reading the clock can cost 150-200 ns
	// in the VMs we measure on (half a frame's time at 80 Gb/s), so it
	// is read once per header frame and once per pass of the DMA loop:
	// the payload frames of a burst follow their DATA header within the
	// same call into the core. A reading that old can make a frame seem
	// handed over that much earlier (a few us at most); it never lets
	// more than R through, as the wire's intervals still never overlap.
	if (sof == TB5_SOF_HEADER || !wire_now_ns_)
		wire_now_ns_ = now_ns();
	return wire_.send(wire_now_ns_, len);
}

uint32_t SimLink::rx_due(uint32_t budget)
{
	const uint32_t pending = std::min(rx_ring_.pending(), budget);

	// The sender stamps due times only with a model; without one the
	// clock is not read at all.
	if (!pending || !rx_ring_.desc(pending - 1).due_ns)
		return pending;
	return rx_ring_.due(pending, now_ns());
}

void SimLink::dma(uint8_t sof, uint8_t eof, uint16_t len, const void *src,
		  uint64_t cookie, const GpuRegion *gpu)
{
	if (gpu) {
		dma_gpu(sof, eof, len, src, cookie, *gpu);
		return;
	}
	// With the engine, payload copies wait for the end of the pass; a
	// frame with none pending ahead of it that ends its burst, or carries
	// a header, goes out as without it (small messages, control frames).
	if (engine_ && ((sof == TB5_SOF_PAYLOAD && eof == TB5_EOF_MORE) ||
			!tx_batch_.empty() || !staged_done_.empty())) {
		stage(sof, eof, len, src, cookie);
		return;
	}
	// A burst's payload is contiguous: start reading the next
	// frame's bytes now, as the hardware prefetchers do not cross into
	// the next page by themselves.
	if (sof == TB5_SOF_PAYLOAD && eof == TB5_EOF_MORE)
		for (uint32_t off = 0; off < TB5_FRAME_MAX; off += 64)
			__builtin_prefetch(static_cast<const uint8_t *>(src) + len + off);
	memcpy(tx_ring_.produce_slot(sof, eof, len, stamp(sof, len)), src, len);
	tx_ring_.produce_commit();
	done_.push_back(cookie);
	// Whole bursts at once; a small message is one frame, sent at once.
	if (eof == TB5_EOF_LAST || tx_ring_.unpublished() >= 16) {
		if (gpu_tx_.pending())
			gpu_tx_.flush();	// GPU frames ahead
		tx_ring_.publish();
		wake_peer_ = true;
	}
}

void SimLink::stage(uint8_t sof, uint8_t eof, uint16_t len, const void *src,
		    uint64_t cookie)
{
	uint8_t *slot = tx_ring_.produce_slot(sof, eof, len, stamp(sof, len));

	tx_ring_.produce_commit();
	if (sof == TB5_SOF_PAYLOAD)
		tx_batch_.add(slot, src, len);
	else
		memcpy(slot, src, len);
	staged_done_.push_back(cookie);
	// A small message (or a control frame) goes out at once, as without
	// the engine: no batch worth sharing is coming from it. Large passes
	// go out in pieces, so that the peer can start on the first while we
	// copy the next.
	if ((eof == TB5_EOF_LAST && tx_batch_.bytes() <= TB5_FRAME_MAX) ||
	    tx_ring_.unpublished() >= std::min(kStageFrames, ring_size_ / 4))
		publish_tx();
}

void SimLink::publish_tx()
{
	if (!tx_batch_.empty())
		engine_->run(tx_batch_);
	done_.insert(done_.end(), staged_done_.begin(), staged_done_.end());
	staged_done_.clear();
	if (gpu_tx_.pending())
		gpu_tx_.flush();
	if (tx_ring_ && tx_ring_.unpublished()) {
		tx_ring_.publish();
		wake_peer_ = true;
	}
}

void SimLink::publish_stalled()
{
	if (engine_) {
		publish_tx();
	} else {
		if (gpu_tx_.pending())
			gpu_tx_.flush();
		tx_ring_.publish();
	}
	wake_peer_ = true;
}

void SimLink::flush()
{
	bool wake;
	{
		std::lock_guard lk(txq_mu_);

		if (engine_) {
			publish_tx();
		} else if (tx_ring_ && tx_ring_.unpublished()) {
			if (gpu_tx_.pending())
				gpu_tx_.flush();
			tx_ring_.publish();
			wake_peer_ = true;
		}
		wake = std::exchange(wake_peer_, false);
	}
	if (wake)
		ring_doorbell(peer_doorbell());
}

int SimLink::tx(const struct tb5_tx_frame *f)
{
	const void *src = f->sof == TB5_SOF_HEADER ?
				  f->header :
				  reinterpret_cast<const void *>(uintptr_t(f->payload.offset));
	// A GPU region's frame (host regions have none).
	const auto *gpu = f->sof == TB5_SOF_HEADER ?
				  nullptr :
				  static_cast<const GpuRegion *>(f->payload.region);
	std::lock_guard lk(txq_mu_);

	if (down_)
		return -ENOSPC;
	if (txq_count_ == ring_size_) {
		publish_stalled();	// the core stalls: let the peer drain
		return -ENOSPC;
	}
	if (f->len == 0 || f->len > TB5_FRAME_MAX ||
	    (f->sof == TB5_SOF_HEADER && f->len > sizeof(Pending::header)))
		return -EINVAL;
	// Nothing queued ahead and room on the peer: straight onto the wire.
	if (!txq_count_ && tx_ring_.free_slots()) {
		dma(f->sof, f->eof, f->len, src, f->cookie, gpu);
		return 0;
	}
	Pending &p = txq_[(txq_head_ + txq_count_) % ring_size_];

	p.sof = f->sof;
	p.eof = f->eof;
	p.len = f->len;
	p.cookie = f->cookie;
	p.gpu = gpu;
	if (f->sof == TB5_SOF_HEADER) {
		memcpy(p.header, f->header, f->len);
		p.payload = p.header;
	} else {
		p.payload = src;
	}
	txq_count_++;
	return 0;
}

// --- progress ---

void SimLink::check_peer()
{
	HostSlot &ps = fabric_.slot(peer_slot_);
	uint64_t s = ps.session.load(std::memory_order_acquire);

	if (s == peer_session_) {
		// The clock only now and then: progress() runs in busy loops.
		if (!s || ++alive_check_calls_ % 1024)
			return;
		uint64_t now = now_ns();

		if (now < next_alive_check_ns_)
			return;
		next_alive_check_ns_ = now + kAliveCheckNs;
		if (fabric_.peer_alive(peer_slot_, s))
			return;
		s = 0;
	}
	// The peer's exports go with it.
	if (gpu_ && peer_session_)
		gpu_->forget(peer_session_);
	if (peer_session_)
		go_down();
	if (s)
		go_up(s);
}

uint32_t SimLink::report_moved()
{
	{
		std::lock_guard lk(txq_mu_);
		take_moved();
	}
	return report_taken();
}

void SimLink::take_moved()
{
	if (gpu_tx_.pending())
		gpu_tx_.flush();	// sent means copied
	done_scratch_.swap(done_);
	done_.clear();
}

uint32_t SimLink::report_taken()
{
	uint32_t n = uint32_t(done_scratch_.size());

	if (n)
		tb5_link_tx_done_many(core_, done_scratch_.data(), n);
	done_scratch_.clear();
	return n;
}

void SimLink::drop_tx()
{
	down_ = true;
	txq_count_ = 0;
	done_.clear();
	if (engine_)
		engine_->run(tx_batch_);
	staged_done_.clear();
	if (gpu_tx_.pending())
		gpu_tx_.flush();	// no DMA left running into the ring
	byref_.clear();
}

void SimLink::go_down()
{
	const std::string path = fabric_.cable_path(peer_slot_, cable_index_, peer_session_);

	// Frames already copied (or staged) are reported; the queued ones
	// are dropped, as a cable pull drops what is on the rings.
	if (engine_) {
		std::lock_guard lk(txq_mu_);
		if (tx_ring_)
			publish_tx();
	}
	{
		// By-reference frames on the ring count as copied: nobody
		// reads them any more once the link is down.
		std::lock_guard lk(txq_mu_);
		byref_sent();
	}
	report_moved();
	{
		// Staged since: dropped, like the queued ones.
		std::lock_guard lk(txq_mu_);
		drop_tx();
		tx_ring_ = FrameRing();
		pin_base_ = nullptr;	// the cable's rings go
	}
	tb5_link_down(core_, -ENOLINK);
	rx_ring_ = FrameRing();
	if (gpu_)
		unpin_rings();
	cable_.reset();
	if (mesh_) {
		shm_unlink(path.c_str());
		peer_session_ = 0;
	}
}

void SimLink::go_up(uint64_t peer_session)
{
	Mapping m;

	if (fabric_.map_cable(peer_slot_, cable_index_, peer_session, m))
		return;		// tried again on the next progress
	cable_ = std::move(m);
	peer_session_ = peer_session;
	peer_takes_refs_ = -1;	// a new peer: asked again
	next_alive_check_ns_ = now_ns() + kAliveCheckNs;
	{
		std::lock_guard lk(txq_mu_);
		attach_rings(static_cast<uint8_t *>(cable_.get()),
			     fabric_.my_slot() < peer_slot_ ? 0 : 1);
		down_ = false;
	}
	tb5_link_up(core_);
}

void SimLink::reset()
{
	std::lock_guard plk(progress_mu_);

	if (mesh_) {
		uint64_t s = peer_session_;

		if (s) {
			go_down();
			go_up(s);
		}
		return;
	}
	// A loop end: drop what waits here and say hello again. Staged
	// frames hold ring slots already: they go out, and frames by
	// reference count as sent, as on a cable going down.
	{
		std::lock_guard lk(txq_mu_);
		byref_sent();
	}
	report_moved();
	{
		std::lock_guard lk(txq_mu_);
		if (engine_)
			publish_tx();
		txq_count_ = 0;
	}
	tb5_link_down(core_, -ENOLINK);
	tb5_link_up(core_);
}

bool SimLink::has_work()
{
	if (mesh_ && fabric_.slot(peer_slot_).session.load(
			     std::memory_order_acquire) != peer_session_)
		return true;
	// Frames not due yet count too: the caller spins until they are
	// (a wait never sleeps past a frame that is on its way).
	if (rx_ring_ && rx_ring_.pending())
		return true;
	std::lock_guard lk(txq_mu_);
	return !done_.empty() || !staged_done_.empty() || byref_reaped() ||
	       (txq_count_ && tx_ring_ && tx_ring_.free_slots());
}

uint32_t SimLink::progress(uint32_t budget)
{
	std::unique_lock plk(progress_mu_, std::try_to_lock);
	uint32_t work = 0;

	if (!plk.owns_lock())
		return 0;
	if (mesh_)
		check_peer();
	if (imported_)
		gpu_->sweep(byref_peer());	// close what the peer withdrew

	// The DMA engine: queued frames into the peer's RX ring.
	{
		std::lock_guard lk(txq_mu_);

		if (txq_count_ && wire_.active())
			wire_now_ns_ = now_ns();

		while (!down_ && txq_count_ && tx_ring_.free_slots()) {
			Pending &p = txq_[txq_head_];

			dma(p.sof, p.eof, p.len, p.payload, p.cookie, p.gpu);
			txq_head_ = (txq_head_ + 1) % ring_size_;
			txq_count_--;
		}
		// Sent means copied: the staged copies first.
		if (engine_)
			publish_tx();
		// By-reference frames are sent once given back.
		if (!byref_.empty())
			reap_byref();
		take_moved();
	}
	// The TX completion interrupt.
	work += report_taken();

	// The RX interrupt: frames to the core, then their descriptors back.
	if (rx_ring_) {
		uint32_t n = rx_due(budget);
		// Too few frames to be worth sharing: copied as they come.
		// (RX batches of fewer frames cannot reach the engine's
		// parallel size.)
		bool batch = engine_ && n >= engine_->parallel_min() / TB5_FRAME_MAX;

		if (batch) {
			t_rx_batch = this;
			rx_active_.store(true, std::memory_order_relaxed);
		}
		for (uint32_t k = 0; k < n; k++) {
			const FrameDesc d = rx_ring_.desc(k);

			if (d.len == 0 || d.len > TB5_FRAME_MAX)
				continue;	// never read past the frame buffer
			if (d.flags & kFrameByRef)
				rx_byref(d, rx_ring_.data(k));
			else
				tb5_link_rx(core_, d.sof, d.eof, rx_ring_.data(k), d.len);
		}
		if (batch) {
			// The copies, then what reports them; the
			// descriptors go back after both.
			t_rx_batch = nullptr;
			rx_active_.store(false, std::memory_order_relaxed);
			finish_rx();
		}
		// Before anyone reads what the completions report.
		rx_copy_.fence();
		// Descriptors go back once their DMAs are done.
		rx_dma_flush();
		if (n) {
			rx_ring_.consume(n);
			// Room freed on our RX ring: a sleeping sender may go on.
			std::lock_guard lk(txq_mu_);
			wake_peer_ = true;
		}
		work += n;
	}
	plk.unlock();
	flush();
	return work;
}

} // namespace tb5::sim
