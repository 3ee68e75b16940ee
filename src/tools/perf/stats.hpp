// SPDX-License-Identifier: MIT
//
// stats.hpp - latency samples summed up: percentiles, spread and a log-scale
// histogram.
#ifndef TB5_PERF_STATS_HPP
#define TB5_PERF_STATS_HPP

#include <cstdint>
#include <vector>

namespace tb5perf {

// All in nanoseconds.
struct LatencySummary {
	uint64_t samples = 0;
	double min = 0, max = 0, mean = 0, stddev = 0;
	double p50 = 0, p90 = 0, p99 = 0, p999 = 0;
	// Mean absolute difference of consecutive samples (RFC 3550's
	// inter-packet delay variation, unsmoothed).
	double ipdv = 0;
};

struct HistogramBucket {
	double lo_ns = 0, hi_ns = 0;	// [lo, hi)
	uint64_t count = 0;
};

// Summarises @samples (in the order they were taken); sorts them.
LatencySummary summarize(std::vector<double> &samples);

// Buckets of equal width on a log scale, @per_octave of them per doubling,
// from the smallest sample to the largest; @sorted must be sorted. Empty
// buckets inside the range are kept, so that gaps show.
std::vector<HistogramBucket> log_histogram(const std::vector<double> &sorted,
					  unsigned per_octave = 4);

} // namespace tb5perf

#endif // TB5_PERF_STATS_HPP
