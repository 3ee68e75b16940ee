// SPDX-License-Identifier: MIT
//
// pipe.hpp - a stream of equal-sized messages in one direction on one
// endpoint: up to `slots` operations posted at once, each slot posted again
// as soon as it completes, until `count` messages were posted. The receiving
// pipe checks sizes, and with verify every byte; the sending one writes the
// pattern before each send.
#ifndef TB5_PERF_PIPE_HPP
#define TB5_PERF_PIPE_HPP

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "device.hpp"
#include "tb5/tb5.h"

namespace tb5perf {

constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();

struct PipeConfig {
	tb5_endpoint *ep = nullptr;
	bool send = false;
	Region *region = nullptr;
	uint64_t base = 0;		// offset of slot 0 in the region
	uint32_t slots = 1;
	uint64_t size = 0;
	uint64_t count = 0;		// messages; kUnbounded until finish()
	uint32_t id = 0;		// in user_data; unique among live pipes
	uint32_t stream = 0;		// for the pattern
	uint32_t direction = 0;		// for the pattern
	uint32_t tag = 0;
	bool verify = false;
};

class Pipe {
public:
	explicit Pipe(const PipeConfig &cfg);

	// Posts the first min(slots, count) operations.
	void start();
	// A completion with this pipe's id; posts the slot again if more
	// messages are due.
	void complete(const tb5_wc &wc);
	// Posts no more: count becomes what was posted.
	void finish() { cfg_.count = posted_; }

	bool done() const { return completed_ == cfg_.count; }
	uint64_t posted() const { return posted_; }
	uint64_t completed() const { return completed_; }
	uint64_t bytes() const { return bytes_; }
	uint64_t errors() const { return errors_; }
	const std::string &first_error() const { return first_error_; }
	uint64_t first_ns() const { return first_ns_; }
	uint64_t last_ns() const { return last_ns_; }
	uint32_t id() const { return cfg_.id; }

private:
	void post(uint32_t slot);

	PipeConfig cfg_;
	std::vector<uint64_t> seq_;	// message in each slot
	uint64_t posted_ = 0;
	uint64_t completed_ = 0;
	uint64_t bytes_ = 0;
	uint64_t errors_ = 0;
	std::string first_error_;
	uint64_t first_ns_ = 0, last_ns_ = 0;
};

} // namespace tb5perf

#endif // TB5_PERF_PIPE_HPP
