// SPDX-License-Identifier: MIT
//
// copy_engine.cc - see copy_engine.hpp.
#include "sim/copy_engine.hpp"

#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tb5::sim {
namespace {

// A worker's state, its futex word. Only the offering caller moves it out
// of kClaiming, kOffered (to kIdle: revoked) and kDone; only the worker
// moves it out of kOffered (to kRunning) and out of kRunning; only stop()
// moves kIdle to kStopping.
enum : uint32_t {
	kStopped = 0,		// no thread
	kIdle,			// waiting for work
	kClaiming,		// a caller is writing an offer
	kOffered,		// a job is waiting for the worker
	kRunning,		// the worker took it
	kDone,			// finished; the caller sets kIdle
	kStopping,		// the worker is to exit
};

void cpu_relax()
{
#if defined(__x86_64__)
	_mm_pause();
#elif defined(__aarch64__)
	asm volatile("yield");
#endif
}

uint64_t now_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

void futex_wait(std::atomic<uint32_t> *word, uint32_t val)
{
	syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAIT_PRIVATE,
		val, nullptr, nullptr, 0);
}

void futex_wake(std::atomic<uint32_t> *word)
{
	syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAKE_PRIVATE,
		1, nullptr, nullptr, 0);
}

// Copies @len bytes of the batch from segment @seg, @off bytes in;
// returns whether any went with non-temporal stores.
bool copy_range(const CopyBatch::Seg *segs, size_t seg, size_t off, size_t len)
{
	bool nt = false;

	while (len) {
		const CopyBatch::Seg &s = segs[seg++];
		size_t n = std::min(len, s.len - off);

		if (s.nt) {
			copy_nt(s.dst + off, s.src + off, n);
			nt = true;
		} else {
			memcpy(s.dst + off, s.src + off, n);
		}
		len -= n;
		off = 0;
	}
	return nt;
}

} // namespace

// --- CopyBatch ---

void CopyBatch::add(void *dst, const void *src, size_t len, bool nt)
{
	auto *d = static_cast<uint8_t *>(dst);
	auto *s = static_cast<const uint8_t *>(src);

	if (!len)
		return;
	bytes_ += len;
	if (!segs_.empty()) {
		Seg &l = segs_.back();

		if (l.dst + l.len == d && l.src + l.len == s && l.nt == nt) {
			l.len += len;
			return;
		}
	}
	segs_.push_back({ d, s, len, nt });
}

// @added more bytes: every whole chunk's worth becomes one.
void CopyBatch::cut_ready(size_t added)
{
	unchunked_ += added;
	while (unchunked_ >= engine_->chunk() &&
	       chunks_.size() < chunks_.capacity())
		cut(engine_->chunk());
}

// Makes the next @len unchunked bytes a chunk workers may take.
void CopyBatch::cut(size_t len)
{
	chunks_.push_back({ cut_seg_, cut_off_, len });
	unchunked_ -= len;
	while (len) {
		size_t in = segs_[cut_seg_].len - cut_off_;

		if (len < in) {
			cut_off_ += len;
			len = 0;
		} else {
			len -= in;
			cut_seg_++;
			cut_off_ = 0;
		}
	}
	ready_.store(chunks_.size(), std::memory_order_release);
}

void CopyBatch::clear()
{
	segs_.clear();
	chunks_.clear();
	bytes_ = 0;
	engine_ = nullptr;
	cut_seg_ = cut_off_ = unchunked_ = 0;
	next_.store(0, std::memory_order_relaxed);
	ready_.store(0, std::memory_order_relaxed);
	closed_.store(false, std::memory_order_relaxed);
	noffered_ = 0;
}

// --- CopyEngine ---

void CopyEngine::configure(uint32_t workers, size_t parallel_min)
{
	std::lock_guard lk(life_mu_);

	want_ = std::min(workers, kMaxWorkers);
	parallel_min_ = std::max<size_t>(parallel_min, 16u << 10);
	chunk_ = std::clamp<size_t>(parallel_min_ / 4, 4u << 10, kChunk);
}

void CopyEngine::acquire()
{
	std::lock_guard lk(life_mu_);

	if (users_++ == 0 && want_)
		start_locked();
}

void CopyEngine::release()
{
	std::lock_guard lk(life_mu_);

	if (users_ && --users_ == 0)
		stop_locked();
}

void CopyEngine::stop()
{
	std::lock_guard lk(life_mu_);

	stop_locked();
}

void CopyEngine::start_locked()
{
	sigset_t all, old;
	uint32_t n;

	if (nworkers_.load(std::memory_order_relaxed))
		return;
	pid_.store(getpid(), std::memory_order_relaxed);
	// Signals go to the application's threads, never to ours.
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (n = 0; n < want_; n++) {
		CopyWorker &w = workers_[n];

		w.engine = this;
		w.job = nullptr;
		w.sleeping.store(0);
		w.state.store(kIdle);
		if (pthread_create(&threads_[n], nullptr, &CopyEngine::worker_main,
				   &w)) {
			w.state.store(kStopped);
			break;	// fewer workers, or none: copies still get made
		}
		// Named here, so that it shows before we return (top -H, tests).
		// Room for any unsigned, so that no compiler sees a truncation;
		// n < kMaxWorkers, so the name stays within the kernel's 16
		// bytes ("tb5-copy/63").
		char name[24];

		snprintf(name, sizeof(name), "tb5-copy/%u", n);
		pthread_setname_np(threads_[n], name);
	}
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
	nworkers_.store(n, std::memory_order_release);
}

void CopyEngine::stop_locked()
{
	uint32_t n = nworkers_.load(std::memory_order_relaxed);

	// A child after fork() has none of these threads: forget them.
	if (pid_.load(std::memory_order_relaxed) != getpid()) {
		for (uint32_t i = 0; i < n; i++)
			workers_[i].state.store(kStopped);
		nworkers_.store(0);
		return;
	}
	// Callers stop offering; offers under way end in kIdle soon.
	nworkers_.store(0, std::memory_order_seq_cst);
	for (uint32_t i = 0; i < n; i++) {
		CopyWorker &w = workers_[i];

		for (;;) {
			uint32_t idle = kIdle;

			if (w.state.compare_exchange_strong(idle, kStopping))
				break;
			if (idle == kStopped)
				break;
			sched_yield();
		}
		if (w.state.load() == kStopped)
			continue;
		futex_wake(&w.state);
		pthread_join(threads_[i], nullptr);
		w.state.store(kStopped);
	}
}

void *CopyEngine::worker_main(void *arg)
{
	auto *w = static_cast<CopyWorker *>(arg);

	w->engine->work(*w);
	return nullptr;
}

void CopyEngine::work(CopyWorker &w)
{
	for (;;) {
		uint64_t spin_end = now_ns() + kSpinNs;
		uint32_t s;

		for (uint32_t i = 1;; i++) {
			s = w.state.load(std::memory_order_acquire);
			if (s == kOffered || s == kStopping)
				break;
			if (i % 64) {
				cpu_relax();
				continue;
			}
			if (now_ns() < spin_end)
				continue;
			// Sleep. Pairs with the caller's store of kOffered and
			// load of sleeping: one of us sees the other.
			w.sleeping.store(1, std::memory_order_seq_cst);
			s = w.state.load(std::memory_order_seq_cst);
			if (s != kOffered && s != kStopping)
				futex_wait(&w.state, s);
			w.sleeping.store(0, std::memory_order_relaxed);
			spin_end = now_ns() + kSpinNs;
		}
		if (s == kStopping)
			return;
		uint32_t offered = kOffered;

		if (!w.state.compare_exchange_strong(offered, kRunning,
						     std::memory_order_acquire))
			continue;	// the caller finished alone and took it back
		if (take_chunks(*w.job))
			store_fence();
		w.state.store(kDone, std::memory_order_release);
	}
}

// Copies chunks of @b until it is closed and none is left; true if any
// went with non-temporal stores.
bool CopyEngine::take_chunks(CopyBatch &b)
{
	bool nt = false;

	for (uint32_t spins = 1;; spins++) {
		size_t c = b.next_.load(std::memory_order_relaxed);

		if (c < b.ready_.load(std::memory_order_acquire)) {
			if (!b.next_.compare_exchange_weak(c, c + 1,
							   std::memory_order_relaxed))
				continue;
			const CopyBatch::Chunk &k = b.chunk_base_[c];

			nt |= copy_range(b.seg_base_, k.seg, k.off, k.len);
			continue;
		}
		// What is ready is read after closed_: then it is final.
		if (b.closed_.load(std::memory_order_acquire) &&
		    c >= b.ready_.load(std::memory_order_acquire))
			return nt;
		if (spins % 4096)
			cpu_relax();
		else
			sched_yield();	// the owner lost its CPU
	}
}

bool CopyEngine::usable(uint32_t &n)
{
	n = nworkers_.load(std::memory_order_acquire);
	return n && pid_.load(std::memory_order_relaxed) == getpid();
}

void CopyEngine::open(CopyBatch &b)
{
	uint32_t n;

	if (b.engine_ || !usable(n))
		return;
	b.engine_ = this;
	b.seg_base_ = b.segs_.data();
	b.chunk_base_ = b.chunks_.data();
	b.cut_ready(b.bytes_);
	// Offer it to the idle workers.
	for (uint32_t i = 0; i < n; i++) {
		CopyWorker &w = workers_[i];
		uint32_t idle = kIdle;

		if (w.state.load(std::memory_order_relaxed) != kIdle ||
		    !w.state.compare_exchange_strong(idle, kClaiming,
						     std::memory_order_acquire))
			continue;
		w.job = &b;
		w.state.store(kOffered, std::memory_order_seq_cst);
		if (w.sleeping.load(std::memory_order_seq_cst))
			futex_wake(&w.state);
		b.offered_[b.noffered_++] = &w;
	}
}

void CopyEngine::run(CopyBatch &b)
{
	uint32_t n;

	if (b.bytes_ >= parallel_min_ && usable(n))
		open(b);
	if (!b.engine_) {	// small, or no workers: all ours
		bool nt = false;

		for (const CopyBatch::Seg &s : b.segs_)
			nt |= copy_range(&s, 0, 0, s.len);
		if (nt)
			store_fence();
		b.clear();
		return;
	}
	// The rest in chunks, then close it and copy with the workers.
	while (b.unchunked_ && b.chunks_.size() < b.chunks_.capacity())
		b.cut(std::min(b.unchunked_, chunk_));
	b.closed_.store(true, std::memory_order_release);
	bool nt = take_chunks(b);

	if (b.unchunked_)	// no room for its chunk: ours
		nt |= copy_range(b.seg_base_, b.cut_seg_, b.cut_off_, b.unchunked_);

	// Take back offers no worker took; wait for the chunks being copied.
	for (size_t j = 0; j < b.noffered_; j++) {
		CopyWorker &w = *b.offered_[j];
		uint32_t st = kOffered;

		if (w.state.compare_exchange_strong(st, kIdle,
						    std::memory_order_acq_rel))
			continue;
		for (uint32_t spins = 1;
		     w.state.load(std::memory_order_acquire) != kDone; spins++) {
			if (spins % 4096)
				cpu_relax();
			else
				sched_yield();	// its thread lost the CPU
		}
		w.state.store(kIdle, std::memory_order_release);
	}
	if (nt)
		store_fence();
	b.clear();
}

} // namespace tb5::sim
