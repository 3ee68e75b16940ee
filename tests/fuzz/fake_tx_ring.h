// SPDX-License-Identifier: MIT
//
// fake_tx_ring.h - the fuzzer's TX ring: a small FIFO of frames that leave
// only when the input says so (tb5_link_tx_done), full at a capacity the
// input picks, and able to refuse frames on demand, so that the core's
// -ENOSPC stall and retry paths run.
#ifndef TB5_FAKE_TX_RING_H
#define TB5_FAKE_TX_RING_H

#include "guarded_buf.h"

extern "C" {
#include "tb5_core.h"
}

#include <cstdint>
#include <deque>

namespace tb5fuzz {

struct TxEntry {
	uint64_t cookie;
	uint8_t sof;
	uintptr_t payload;	// payload frames: where the bytes are
	uint32_t len;
};

class FakeTxRing {
public:
	void SetCapacity(size_t cap) { cap_ = cap; }
	// The next @n frames are refused whatever the space.
	void Refuse(uint32_t n) { refuse_ = n; }

	// Whether the next frame fits; consumes one planned refusal.
	bool Accepts()
	{
		if (refuse_) {
			refuse_--;
			return false;
		}
		return q_.size() < cap_;
	}
	void Push(const TxEntry &e) { q_.push_back(e); }
	TxEntry Pop()
	{
		TxEntry e = q_.front();
		q_.pop_front();
		return e;
	}
	size_t Size() const { return q_.size(); }
	void Clear() { q_.clear(); }

	// Whether a queued payload frame still points into @buf.
	bool References(const GuardedBuf &buf) const
	{
		for (const TxEntry &e : q_)
			if (e.sof == TB5_SOF_PAYLOAD && buf.contains(e.payload, e.len))
				return true;
		return false;
	}

private:
	std::deque<TxEntry> q_;
	size_t cap_ = 1;
	uint32_t refuse_ = 0;
};

} // namespace tb5fuzz

#endif // TB5_FAKE_TX_RING_H
