// SPDX-License-Identifier: MIT
//
// run.hpp - one run of a test at one message size: what the client asks for
// (RunSpec, sent as RUN) and what it measured (RunResult).
#ifndef TB5_PERF_RUN_HPP
#define TB5_PERF_RUN_HPP

#include <cstdint>
#include <string>
#include <vector>

#include "protocol.hpp"
#include "test_kind.hpp"

namespace tb5perf {

struct RunSpec {
	Test test = Test::kBw;
	uint64_t size = 0;
	uint64_t count = 0;	// messages per stream, or ping-pongs
	uint32_t window = 1;	// slots per stream; lat-load: of the bulk
	uint32_t streams = 1;	// data endpoints that carry the test
	uint32_t flags = 0;	// kRun*
	uint64_t load_size = 0;	// lat-load: bulk message size
};

struct RunResult {
	double seconds = 0;	// from READY to DONE on the client
	uint64_t bytes = 0;	// payload moved, both directions for bibw
	uint64_t messages = 0;
	std::vector<double> samples_ns;	// one-way latencies (RTT / 2)
	uint64_t load_bytes = 0;	// lat-load: bulk payload moved
	double load_seconds = 0;
	// Bandwidth tests: CPU time of the client's process over `seconds`,
	// and of the server's from READY to DONE (0: not reported).
	uint64_t cpu_ns = 0;
	uint64_t peer_cpu_ns = 0;
};

// Data endpoints a test needs.
inline uint32_t data_endpoints(const RunSpec &spec)
{
	return spec.test == Test::kLatLoad ? 2 : spec.streams;
}

// Where the lat-load bulk slots start: after two ping (pong) slots.
inline uint64_t bulk_base(uint64_t size)
{
	return (2 * size + 4095) / 4096 * 4096;
}

// Bytes of each data buffer (send and receive) that @spec needs.
uint64_t buffer_bytes(const RunSpec &spec);

CtlMsg to_ctl(const RunSpec &spec);
// Throws Error for a RUN that names no known test or is out of range.
RunSpec from_ctl(const CtlMsg &msg);
// Throws Error for a DONE that reports a failure.
void check_done(const CtlMsg &done, const std::string &what);

} // namespace tb5perf

#endif // TB5_PERF_RUN_HPP
