// SPDX-License-Identifier: MIT
//
// ring_pair.h - what the core benchmark runs on: two links back to back over
// the ring model and one connected endpoint pair, A (sender) -> B (receiver),
// driven by one thread with tb5_rm_step().
#ifndef TB5_BENCH_RING_PAIR_H
#define TB5_BENCH_RING_PAIR_H

extern "C" {
#include "tb5_core.h"
#include "tb5_ringmodel.h"
}

#include <cstdint>
#include <string>
#include <vector>

namespace tb5bench {

// The owner's side of an endpoint: which operations completed.
struct EpCtx {
	std::vector<uint64_t> done;	// user_ids, in completion order
	int32_t first_error = 0;	// first failed completion's status
	bool connected = false;
	unsigned incoming = 0;
};

class RingPair {
public:
	// Creates the pair, brings the links up, connects A to B; on failure
	// error() says why.
	explicit RingPair(uint32_t ring_size);
	~RingPair();
	RingPair(const RingPair &) = delete;
	RingPair &operator=(const RingPair &) = delete;

	const std::string &error() const { return error_; }

	tb5_ep *sender() const { return ea_; }
	tb5_ep *receiver() const { return eb_; }
	EpCtx &sender_ctx() { return ca_; }
	EpCtx &receiver_ctx() { return cb_; }

	// One step of the model's DMA engine and interrupt handlers; 0: idle.
	uint32_t Step() { return tb5_rm_step(rm_, budget_); }
	// Steps until idle.
	void Run() { tb5_rm_run(rm_, 1u << 30); }

	tb5_link_stats SenderStats() const;

	// For the tx callback (ring_pair.cc).
	static int Tx(void *priv, const tb5_tx_frame *f);

private:
	bool Setup();
	bool Warm();

	// A link's tx priv: which end of the ring model it transmits on.
	struct LinkEnd {
		tb5_rm_pair *rm;
		int end;
	};

	uint32_t ring_size_;
	uint32_t budget_;
	std::string error_;
	tb5_rm_pair *rm_ = nullptr;
	tb5_link *a_ = nullptr, *b_ = nullptr;
	tb5_ep *listener_ = nullptr, *ea_ = nullptr, *eb_ = nullptr;
	LinkEnd end_a_{nullptr, 0}, end_b_{nullptr, 1};
	EpCtx cl_, ca_, cb_;
};

} // namespace tb5bench

#endif // TB5_BENCH_RING_PAIR_H
