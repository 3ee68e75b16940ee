// SPDX-License-Identifier: MIT
//
// sim_link.hpp - one end of a simulated cable: a transport-core link whose
// rings are FrameRings in shared memory (a mesh cable to another process)
// or in this process's memory (a loop pair).
//
// The core hands frames to tx(); they wait on a local TX queue of
// ring_size entries until the peer's RX ring has a free descriptor, and are
// then copied into it (the DMA engine). progress() plays the engine and the
// interrupt handler: it moves queued frames, reports them sent
// (tb5_link_tx_done), and feeds received frames to the core (tb5_link_rx),
// which copies their payload straight into the receiver's posted buffer. So
// every byte is copied twice, once by each side: sender memory -> ring ->
// receiver memory, and the two copies run in parallel.
//
// With a copy engine (TB5_SIM copy=N > 0) the copies of a pass are
// collected and made together by the process's CopyEngine, across threads
// when the batch is large:
//   - TX: payload frames of a multi-frame burst get their ring slot and
//     descriptor at once, but their bytes are copied, and the ring head
//     published, only when the pass ends (publish_tx(): at the end of the
//     DMA loop, in flush(), when the core stalls, or every kStageFrames
//     frames). A frame is reported sent only after its copy, so a send
//     never completes before its bytes left its buffer. Header frames are
//     copied at once (their bytes live only during tx()); a frame with no
//     copy pending ahead of it that ends its burst (a small message, a
//     control frame) goes out at once, as without the engine.
//   - RX: while progress() feeds a batch of at least the engine's parallel size
//     frames to the core, the core's copy_to() calls are collected and its
//     completions and events held back, in order; finish_rx() makes the
//     copies, then delivers them, then the ring's descriptors are given
//     back. A callback of the core on another thread meanwhile (a close,
//     say) first finishes the batch, and closing an endpoint waits for a
//     pass under way (quiesce_rx()), so no completion or event is ever
//     seen before the bytes it reports, and no byte lands after its
//     receive was reported or its endpoint closed. Smaller batches are
//     copied as they come.
// Without one (copy=0) every copy is made where it is asked for, inline.
//
// The link-rate model (TB5_SIM rate=, delay_us=, usb4=): every frame put
// into the peer's ring is stamped with the time its WireClock says it
// reaches the peer, and the receiving end takes frames only once they are
// due. Sending is never held back by the model, only by ring space, so
// the model does not depend on how often either side polls (see
// wire_clock.hpp).
//
// GPU memory (sim_link_gpu.cc): a payload frame of a GPU region (its
// tb5_mem.region is the GpuRegion) is moved by the process's DMA engine,
// never by the CPU. An exported region's frames carry a GpuRef instead of
// their bytes (kFrameByRef, stamped with their payload length, so the link
// model paces them as any frame); the receiver copies from the sender's
// memory straight into the posted buffer, and gives the descriptors back
// only once those copies are done, and the sender reports such a frame
// sent only once the receiver has given its descriptor back. A region that
// is not exported, or any to a peer without an engine, goes through the
// ring: a DMA into the slot, published once done, and one out of it at the
// receiver (or the core's CPU copy into a host receive). Copies into or out of GPU
// memory are queued (DmaQueue) and waited for before anything that
// reports them: a ring head published, a frame reported sent, a
// completion delivered, descriptors given back, an endpoint closed.
//
// Threads: tx() runs under the core's link lock (any thread); progress()
// runs in one thread at a time (others skip it) and never holds the TX
// queue's lock while it calls into the core.
#ifndef TB5_SIM_SIM_LINK_HPP
#define TB5_SIM_SIM_LINK_HPP

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sim/fabric.hpp"
#include "sim/frame_ring.hpp"
#include "sim/copy_engine.hpp"
#include "sim/dma_engine.hpp"
#include "sim/gpu_region.hpp"
#include "sim/stream_copy.hpp"
#include "sim/wire_clock.hpp"
#include "tb5/tb5.h"
#include "tb5_core.h"

namespace tb5::sim {

// Where completions and events of the core go (sim_device.cc).
void deliver_completion(void *ep_ctx, const struct tb5_completion *c);
void deliver_event(void *ep_ctx, enum tb5_event ev, int status);

class SimLink {
public:
	// Cable @cable (0..cables-1) to host slot @peer of @fabric.
	// @wire models the direction this end sends in.
	SimLink(Fabric &fabric, uint32_t peer, uint32_t cable, const WireClock &wire);
	// One end of a loop pair: @mem holds both directions' rings.
	SimLink(Fabric &fabric, std::shared_ptr<uint8_t[]> mem, int end,
		uint32_t ring_size, uint64_t host_id, const WireClock &wire);
	~SimLink();
	SimLink(const SimLink &) = delete;
	SimLink &operator=(const SimLink &) = delete;

	// @burst_frames: the core's burst_frames (0: its default).
	int create(const std::string &name, uint32_t index, uint32_t burst_frames);
	// Bring a loop end up (both ends must be created first).
	void start_loop();
	// Copies go through @engine (null: inline, as they come). Before
	// the link carries anything.
	void set_copy_engine(CopyEngine *engine) { engine_ = engine; }
	// GPU memory goes through @gpu's DMA engine (if it has one). Before
	// the link carries anything.
	void set_gpu(GpuMem *gpu);
	// A GPU region was registered on this link's device: page-lock the
	// rings and open the peer's exports now, in the control path
	// (sim_link_gpu.cc says why).
	void gpu_registered();

	struct tb5_link *core() const { return core_; }
	const std::string &name() const { return name_; }
	void describe(tb5_link_info &info);
	// Moves, reports and receives up to @budget frames each; returns the
	// work done (0: idle).
	uint32_t progress(uint32_t budget = 256);
	// Is there something progress() would do now?
	bool has_work();
	// Drop everything in flight and start over (a stuck peer).
	void reset();
	// Hand frames queued by a core call to the peer and wake it: called
	// after every call into the core outside progress().
	void flush();
	// Waits for a progress pass on another thread that may still be
	// copying into receives the core has just let go (after a close):
	// afterwards no byte lands in them.
	void quiesce_rx();
	HostSlot &my_doorbell() { return fabric_.slot(fabric_.my_slot()); }

private:
	// A completion or event of the core held back until the RX batch's
	// copies are made.
	struct Deferred {
		void *ep_ctx;
		struct tb5_completion c;
		int32_t status;
		int16_t ev;		// 0: a completion
	};

	// Frames staged (engine): their copies run at most this many at once.
	static constexpr uint32_t kStageFrames = 256;

	struct Pending {
		uint8_t sof, eof;
		uint16_t len;
		uint64_t cookie;
		const void *payload;		// TB5_SOF_PAYLOAD
		const GpuRegion *gpu;		// its GPU region, if any
		uint8_t header[64];		// TB5_SOF_HEADER
	};

	static int op_tx(void *priv, const struct tb5_tx_frame *f);
	static int op_copy_to(void *priv, const struct tb5_mem *dst,
			      const void *src, uint32_t len);
	static void op_complete(void *priv, void *ep_ctx,
				const struct tb5_completion *c);
	static void op_event(void *priv, void *ep_ctx, enum tb5_event ev,
			     int status);

	int tx(const struct tb5_tx_frame *f);
	// Copies one frame into the peer's ring; the caller checked room.
	void dma(uint8_t sof, uint8_t eof, uint16_t len, const void *src,
		 uint64_t cookie, const GpuRegion *gpu = nullptr);
	// dma() of a GPU region's payload frame (sim_link_gpu.cc).
	void dma_gpu(uint8_t sof, uint8_t eof, uint16_t len, const void *src,
		     uint64_t cookie, const GpuRegion &gpu);
	// Publishes the ring head, after the DMAs into its slots. Under
	// txq_mu_.
	void publish_ring();
	// By-reference frames the peer has given back: their cookies to
	// done_. Under txq_mu_.
	void reap_byref();
	// Every by-reference frame to done_, given back or not (the link
	// goes down: nobody reads them any more). Under txq_mu_.
	void byref_sent();
	// Has the peer given back the oldest by-reference frame? Under
	// txq_mu_.
	bool byref_reaped()
	{
		return !byref_.empty() &&
		       int32_t(tx_ring_.consumed() - byref_.front().pos) >= 0;
	}
	// A received by-reference frame to the core.
	void rx_byref(const FrameDesc &d, const uint8_t *slot);
	// The core's copy into a GPU receive, or out of a peer's GPU memory.
	int rx_dma(void *dst, const void *src, uint32_t len);
	// Every queued RX DMA in place (before anything reports it).
	void rx_dma_flush()
	{
		if (gpu_rx_.pending())
			gpu_rx_.flush();
	}
	// Page-locks the rings for the DMA engine, once.
	void pin_rings();
	void unpin_rings();
	// Can the peer take frames by reference (it has a DMA engine)?
	// Under txq_mu_.
	bool peer_takes_refs();
	// The host session whose exports this link's by-reference frames
	// name.
	uint64_t byref_peer() const
	{
		return mesh_ ? peer_session_ : fabric_.my_session();
	}
	// The engine's half of dma(): the copy waits for publish_tx().
	void stage(uint8_t sof, uint8_t eof, uint16_t len, const void *src,
		   uint64_t cookie);
	// Makes the staged copies, hands their frames to the peer and queues
	// their cookies as moved. Under txq_mu_.
	void publish_tx();
	// The core stalls (TX queue full): let the peer drain. Under txq_mu_.
	void publish_stalled();
	// Engine: collects a copy of the RX batch; makes the batch's copies
	// and delivers what was held back.
	void rx_stage(void *dst, const void *src, uint32_t len);
	void finish_rx();
	void finish_rx_locked();
	// Is this thread feeding this link's RX batch to the core?
	bool in_rx_batch() const;
	// A completion (@ev 0) or event of the core, held back or delivered.
	void to_owner(void *ep_ctx, const struct tb5_completion *c, int ev,
		      int status);
	// When a frame of @len bytes put on the wire now reaches the peer
	// (0: at once, no model). Under txq_mu_.
	uint64_t stamp(uint8_t sof, uint16_t len);
	// Frames of the RX ring that progress() may take now.
	uint32_t rx_due(uint32_t budget);
	void attach_rings(uint8_t *base, int end);
	// Tells the core about the frames copied to the peer so far; returns
	// how many. take_moved() (under txq_mu_) and report_taken() (not
	// under it) are its two halves, for a caller that holds the lock
	// already.
	uint32_t report_moved();
	void take_moved();
	uint32_t report_taken();
	void check_peer();
	// The TX side stops: what is queued or staged is dropped unreported,
	// as a cable pull drops what is on the rings (staged copies are made
	// all the same, so that no worker is left on them). Under txq_mu_.
	void drop_tx();
	void go_down();
	void go_up(uint64_t peer_session);
	HostSlot &peer_doorbell();

	Fabric &fabric_;
	const bool mesh_;
	const uint32_t peer_slot_;	// mesh: the peer's slot
	const uint32_t cable_index_;	// mesh: which of the pair's cables
	const int loop_end_;		// loop: 0 or 1
	uint32_t ring_size_;
	uint64_t host_id_;
	std::string name_;
	uint32_t index_ = 0;
	struct tb5_link *core_ = nullptr;

	std::mutex progress_mu_;	// try-locked: one progressing thread

	// The TX side, under txq_mu_.
	std::mutex txq_mu_;
	std::vector<Pending> txq_;	// ring_size entries, circular
	uint32_t txq_head_ = 0, txq_count_ = 0;
	std::vector<uint64_t> done_;	// moved, not reported yet
	bool down_ = true;
	bool wake_peer_ = false;	// frames published since the last doorbell
	FrameRing tx_ring_;		// producer view of the peer's RX ring
	WireClock wire_;		// the rate model of our TX direction
	uint64_t wire_now_ns_ = 0;	// the clock as stamp() last read it

	// The RX side, progress() only.
	FrameRing rx_ring_;
	StreamCopier rx_copy_;
	std::vector<uint64_t> done_scratch_;

	// The copy engine (null: copy inline).
	CopyEngine *engine_ = nullptr;
	// Staged TX copies and the cookies of their frames, under txq_mu_.
	CopyBatch tx_batch_;
	std::vector<uint64_t> staged_done_;
	// The RX batch: its copies and the callbacks held back. Appended by
	// the progressing thread under the core's lock; emptied under
	// rx_mu_ and the core's lock (another thread's callback), or under
	// rx_mu_ by the progressing thread after the batch (outside the
	// core: that thread appends no more then).
	std::mutex rx_mu_;
	CopyBatch rx_batch_;
	std::vector<Deferred> deferred_;
	std::atomic<bool> rx_open_{ false };	// something is held back
	// The progressing thread feeds an RX batch to the core (it alone
	// writes this; the thread-local check stays off small passes).
	std::atomic<bool> rx_active_{ false };

	// Mesh: the cable file of the current peer session.
	Mapping cable_;
	uint64_t peer_session_ = 0;
	uint64_t next_alive_check_ns_ = 0;
	uint32_t alive_check_calls_ = 0;
	// Loop: both directions in process memory.
	std::shared_ptr<uint8_t[]> loop_mem_;

	// GPU memory (null: none; sim_link_gpu.cc).
	GpuMem *gpu_ = nullptr;
	// DMAs into TX ring slots (under txq_mu_), and the RX pass's DMAs
	// (as rx_batch_).
	DmaQueue gpu_tx_, gpu_rx_;
	// By-reference frames not given back yet, in ring order: the
	// descriptor count once each was filled, and its cookie. Under
	// txq_mu_.
	struct ByRef {
		uint32_t pos;
		uint64_t cookie;
	};
	std::deque<ByRef> byref_;
	// peer_takes_refs(): -1 not asked yet for this peer, else 0 or 1.
	int peer_takes_refs_ = -1;
	// The core is taking a by-reference frame (progress() only).
	bool rx_byref_ = false;
	// This link opened a peer's exports (progress() only).
	bool imported_ = false;
	// What pin_rings() page-locked, and what it would (attach_rings(),
	// under txq_mu_; null while the link is down); pin_wanted_: a GPU
	// region was registered, so rings attached later are pinned too.
	std::mutex pin_mu_;
	std::atomic<void *> pinned_{ nullptr };
	std::atomic<bool> pin_wanted_{ false };
	uint8_t *pin_base_ = nullptr;
	size_t pin_len_ = 0;
};

} // namespace tb5::sim

#endif // TB5_SIM_SIM_LINK_HPP
