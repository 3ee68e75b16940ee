// SPDX-License-Identifier: MIT
//
// sweep.hpp - the client's plan: each test of the options over its message
// sizes. For each size: warm-up runs that grow until they take a tenth of
// --duration (they also measure the message rate), then measured runs of
// about a quarter of --duration each until --duration is summed up (or one
// run of exactly --iters messages), then the memcpy reference for the
// bandwidth tests; one row per size.
#ifndef TB5_PERF_SWEEP_HPP
#define TB5_PERF_SWEEP_HPP

#include <cstdint>

#include "client.hpp"
#include "memcpy_bw.hpp"
#include "options.hpp"
#include "progress.hpp"
#include "report.hpp"

namespace tb5perf {

// Messages in flight per endpoint for @size over @streams endpoints:
// --window, at most @max_ops, and at most --max-inflight bytes in all.
uint32_t slots(const Options &opt, uint64_t size, uint32_t streams,
	       uint32_t max_ops);
// Bytes of each data buffer that every test of @opt needs, at most.
uint64_t buffer_bytes_for(const Options &opt, uint32_t max_ops);

class Sweep {
public:
	Sweep(Client &client, const Options &opt, Report &report,
	      Progress &progress);
	void run();

private:
	void run_test(Test test);
	RunSpec spec_for(Test test, uint64_t size) const;
	// Sets spec.count to the measured run's.
	RunResult measure(RunSpec &spec);
	Row make_row(const RunSpec &spec, RunResult &result);
	// GB/s of one direction of the link (its line rate), 0 if unknown.
	double line_gbps() const;

	Client &client_;
	const Options &opt_;
	Report &report_;
	Progress &progress_;
	MemcpyMeter memcpy_;
};

} // namespace tb5perf

#endif // TB5_PERF_SWEEP_HPP
