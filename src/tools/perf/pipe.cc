// SPDX-License-Identifier: MIT
//
// pipe.cc - a window of sends or receives.
#include "pipe.h"

#include <algorithm>

#include "clock.h"
#include "errors.h"
#include "pattern.h"
#include "protocol.h"
#include "units.h"

namespace tb5perf {

Pipe::Pipe(const PipeConfig &cfg) : cfg_(cfg), seq_(cfg.slots, 0)
{
	if (cfg_.base + static_cast<uint64_t>(cfg_.slots) * cfg_.size >
	    cfg_.region->size())
		throw Error("internal: " + std::to_string(cfg_.slots) + " x " +
			    FormatSize(cfg_.size) + " do not fit in the " +
			    FormatSize(cfg_.region->size()) + " buffer");
}

void Pipe::Start()
{
	const uint64_t n = std::min<uint64_t>(cfg_.slots, cfg_.count);

	for (uint32_t slot = 0; slot < n; slot++)
		Post(slot);
}

void Pipe::Post(uint32_t slot)
{
	const uint64_t off = cfg_.base + slot * cfg_.size;
	const uint64_t ud = MakeUd(kUdPipe, cfg_.id, slot);
	int ret;

	seq_[slot] = posted_++;
	if (cfg_.send) {
		if (cfg_.verify)
			FillPattern(cfg_.region->data() + off, cfg_.size,
				    PatternSeed(cfg_.size, seq_[slot],
						cfg_.stream, cfg_.direction));
		ret = tb5_send(cfg_.ep, cfg_.region->mr(), off, cfg_.size,
			       cfg_.tag, ud);
	} else {
		ret = tb5_recv(cfg_.ep, cfg_.region->mr(), off, cfg_.size,
			       cfg_.tag, ud);
	}
	if (ret < 0)
		ThrowApi(cfg_.send ? "tb5_send" : "tb5_recv", ret);
}

void Pipe::Complete(const tb5_wc &wc)
{
	const uint32_t slot = UdSlot(wc.user_data);

	if (slot >= cfg_.slots)
		throw Error("internal: a completion for slot " +
			    std::to_string(slot));
	last_ns_ = NowNs();
	if (!completed_)
		first_ns_ = last_ns_;
	completed_++;
	bytes_ += wc.bytes;
	if (!cfg_.send) {
		std::string bad;
		if (wc.bytes != cfg_.size)
			bad = "received " + std::to_string(wc.bytes) +
			      " bytes, not " + std::to_string(cfg_.size);
		else if (cfg_.verify)
			bad = CheckPattern(cfg_.region->data() + cfg_.base +
						   slot * cfg_.size,
					   cfg_.size,
					   PatternSeed(cfg_.size, seq_[slot],
						       cfg_.stream,
						       cfg_.direction));
		if (!bad.empty()) {
			if (!errors_)
				first_error_ = "stream " +
					       std::to_string(cfg_.stream) +
					       " message " +
					       std::to_string(seq_[slot]) + ": " +
					       bad;
			errors_++;
		}
	}
	if (posted_ < cfg_.count)
		Post(slot);
}

} // namespace tb5perf
