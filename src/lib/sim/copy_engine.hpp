// SPDX-License-Identifier: MIT
//
// copy_engine.hpp - the process's copy engine: a pool of worker threads
// that splits a large batch of copies (CopyEngine, CopyBatch).
//
// CopyEngine: one thread copies at most 10 to 20 GB/s, far below what a
// many-core machine's memory moves. A link collects the copies of one
// pass (frames into the peer's ring, or payload into posted buffers) in a
// CopyBatch and hands it to run(), which returns only once every byte is
// in place, so that the caller publishes ring heads and reports
// completions exactly when it would have after copying by itself. Below
// kParallelMin bytes the calling thread copies alone (no other thread is
// woken: small messages pay nothing). Above, the batch is cut into
// kChunk-byte chunks that the caller and every idle worker take in turn.
// The caller never waits for a worker to wake up, only for chunks that a
// worker has started, so a busy or sleeping pool costs at most the
// parallelism, never a deadlock. Workers spin for kSpinNs after their
// last chunk, then sleep on a futex.
//
// run() cuts a batch into chunks and offers it in one go, once the pass
// has collected it. Handing chunks out while the polling thread still fed
// frames to the core (workers on a batch that grows, ready_ published per
// chunk) was tried and measured (tb5-perf, 32 vCPUs): faster in one
// direction, much slower in both, as the workers waited on the open RX
// batch while the polling thread copied a TX batch alone.
#ifndef TB5_SIM_COPY_ENGINE_HPP
#define TB5_SIM_COPY_ENGINE_HPP

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "sim/stream_copy.hpp"

namespace tb5::sim {

class CopyBatch;
class CopyEngine;

// A copy worker thread's slot (see copy_engine.cc for its states).
struct alignas(64) CopyWorker {
	std::atomic<uint32_t> state{ 0 };	// futex word
	std::atomic<uint32_t> sleeping{ 0 };
	CopyBatch *job = nullptr;		// while offered or running
	CopyEngine *engine = nullptr;
};

// Copies waiting to be made; adjacent ones (both ends continuing) merge.
// While open (inside CopyEngine::run()), every kChunk bytes become a chunk
// that workers may take.
class alignas(64) CopyBatch {
public:
	struct Seg {
		uint8_t *dst;
		const uint8_t *src;
		size_t len;
		bool nt;		// non-temporal stores
	};
	struct Chunk {
		size_t seg;		// where it starts
		size_t off;
		size_t len;
	};

	// Room for @segs segments (and their chunks), so that a pass
	// allocates nothing.
	void reserve(size_t segs)
	{
		segs_.reserve(segs);
		chunks_.reserve(segs + 1);
	}
	void add(void *dst, const void *src, size_t len, bool nt = false);
	bool empty() const { return segs_.empty(); }
	size_t bytes() const { return bytes_; }

private:
	friend class CopyEngine;
	void cut_ready(size_t added);
	void cut(size_t len);
	void clear();

	std::vector<Seg> segs_;
	std::vector<Chunk> chunks_;
	size_t bytes_ = 0;
	// Open: workers read segs_ and chunks_ through these, which stay put.
	CopyEngine *engine_ = nullptr;
	const Seg *seg_base_ = nullptr;
	const Chunk *chunk_base_ = nullptr;
	size_t cut_seg_ = 0, cut_off_ = 0;	// where the next chunk starts
	size_t unchunked_ = 0;		// bytes from there on
	CopyWorker *offered_[64];
	size_t noffered_ = 0;
	// Workers spin on these while the owner adds: each on a line of its
	// own, away from what the owner writes for every frame.
	alignas(64) std::atomic<size_t> ready_{ 0 };	// chunks that may be taken
	std::atomic<bool> closed_{ false };	// no more will be ready
	alignas(64) std::atomic<size_t> next_{ 0 };	// the next chunk to take
};	// (alignas(64): the object ends with next_'s line)

class CopyEngine {
public:
	// Batches from this size on are split across threads (the default;
	// TB5_SIM copy_min= sets it per process).
	static constexpr size_t kParallelMin = 64u << 10;
	// The unit of work a thread takes at a time (at most; a quarter of
	// a smaller parallel_min(), so 16 KiB at the default).
	static constexpr size_t kChunk = 64u << 10;
	// How long an idle worker spins before it sleeps.
	static constexpr uint64_t kSpinNs = 50'000;
	static constexpr uint32_t kMaxWorkers = 64;

	// Workers the pool runs while in use (0: none, every copy inline).
	void configure(uint32_t workers, size_t parallel_min = kParallelMin);
	uint32_t configured() const { return want_; }
	size_t parallel_min() const { return parallel_min_; }
	size_t chunk() const { return chunk_; }
	// The first user starts the workers, the last one stops them.
	void acquire();
	void release();
	// Stops the workers now (at exit); a later acquire() starts them.
	void stop();

	// Makes every copy of @b, fenced, then empties it.
	void run(CopyBatch &b);

private:
	// Cuts @b into chunks and offers it to the idle workers (none:
	// nothing happens).
	void open(CopyBatch &b);
	static void *worker_main(void *arg);
	void work(CopyWorker &w);
	void start_locked();
	void stop_locked();
	bool usable(uint32_t &n);
	static bool take_chunks(CopyBatch &b);

	std::mutex life_mu_;		// start and stop
	uint32_t want_ = 0;
	size_t parallel_min_ = kParallelMin;
	size_t chunk_ = kChunk;
	uint32_t users_ = 0;
	std::atomic<pid_t> pid_{ 0 };	// the process the threads belong to
	std::atomic<uint32_t> nworkers_{ 0 };	// slots that may have a thread
	CopyWorker workers_[kMaxWorkers];
	pthread_t threads_[kMaxWorkers] = {};
};

} // namespace tb5::sim

#endif // TB5_SIM_COPY_ENGINE_HPP
