// SPDX-License-Identifier: MIT
//
// pipe.cc - a window of sends or receives.
#include "pipe.hpp"

#include <algorithm>

#include "clock.hpp"
#include "errors.hpp"
#include "pattern.hpp"
#include "protocol.hpp"
#include "units.hpp"

namespace tb5perf {

Pipe::Pipe(const PipeConfig &cfg) : cfg_(cfg), seq_(cfg.slots, 0)
{
	if (cfg_.base + static_cast<uint64_t>(cfg_.slots) * cfg_.size >
	    cfg_.region->size())
		throw Error("internal: " + std::to_string(cfg_.slots) + " x " +
			    format_size(cfg_.size) + " do not fit in the " +
			    format_size(cfg_.region->size()) + " buffer");
}

void Pipe::start()
{
	const uint64_t n = std::min<uint64_t>(cfg_.slots, cfg_.count);

	for (uint32_t slot = 0; slot < n; slot++)
		post(slot);
}

void Pipe::post(uint32_t slot)
{
	const uint64_t off = cfg_.base + slot * cfg_.size;
	const uint64_t ud = make_ud(kUdPipe, cfg_.id, slot);
	int ret;

	seq_[slot] = posted_++;
	if (cfg_.send) {
		if (cfg_.verify)
			fill_pattern(cfg_.region->data() + off, cfg_.size,
				    pattern_seed(cfg_.size, seq_[slot],
						cfg_.stream, cfg_.direction));
		ret = tb5_send(cfg_.ep, cfg_.region->mr(), off, cfg_.size,
			       cfg_.tag, ud);
	} else {
		ret = tb5_recv(cfg_.ep, cfg_.region->mr(), off, cfg_.size,
			       cfg_.tag, ud);
	}
	if (ret < 0)
		throw_api(cfg_.send ? "tb5_send" : "tb5_recv", ret);
}

void Pipe::complete(const tb5_wc &wc)
{
	const uint32_t slot = ud_slot(wc.user_data);

	if (slot >= cfg_.slots)
		throw Error("internal: a completion for slot " +
			    std::to_string(slot));
	last_ns_ = now_ns();
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
			bad = check_pattern(cfg_.region->data() + cfg_.base +
						   slot * cfg_.size,
					   cfg_.size,
					   pattern_seed(cfg_.size, seq_[slot],
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
		post(slot);
}

} // namespace tb5perf
