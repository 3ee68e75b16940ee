// SPDX-License-Identifier: MIT
//
// stats.cc - percentiles (nearest rank) and histograms.
#include "stats.hpp"

#include <algorithm>
#include <cmath>

namespace tb5perf {
namespace {

double percentile(const std::vector<double> &sorted, double p)
{
	if (sorted.empty())
		return 0;
	// Nearest rank: the smallest sample with at least p of them at or
	// below it.
	size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
	rank = std::clamp<size_t>(rank, 1, sorted.size());
	return sorted[rank - 1];
}

} // namespace

LatencySummary summarize(std::vector<double> &samples)
{
	LatencySummary s;
	const size_t n = samples.size();
	double sum = 0, dev = 0, diff = 0;

	s.samples = n;
	if (!n)
		return s;
	for (size_t i = 0; i < n; i++) {
		sum += samples[i];
		if (i)
			diff += std::fabs(samples[i] - samples[i - 1]);
	}
	s.mean = sum / static_cast<double>(n);
	for (double v : samples)
		dev += (v - s.mean) * (v - s.mean);
	s.stddev = n > 1 ? std::sqrt(dev / static_cast<double>(n - 1)) : 0;
	s.ipdv = n > 1 ? diff / static_cast<double>(n - 1) : 0;
	std::sort(samples.begin(), samples.end());
	s.min = samples.front();
	s.max = samples.back();
	s.p50 = percentile(samples, 0.50);
	s.p90 = percentile(samples, 0.90);
	s.p99 = percentile(samples, 0.99);
	s.p999 = percentile(samples, 0.999);
	return s;
}

std::vector<HistogramBucket> log_histogram(const std::vector<double> &sorted,
					  unsigned per_octave)
{
	std::vector<HistogramBucket> out;

	if (sorted.empty() || !per_octave)
		return out;
	const double step = std::pow(2.0, 1.0 / per_octave);
	const double first = std::max(sorted.front(), 1.0);
	// Bucket edges on a fixed grid (powers of step from 1 ns), so that
	// runs compare bucket by bucket.
	const double k0 = std::floor(std::log(first) / std::log(step));
	double lo = std::pow(step, k0);
	size_t i = 0;

	while (i < sorted.size()) {
		HistogramBucket b;
		b.lo_ns = lo;
		b.hi_ns = lo * step;
		while (i < sorted.size() && sorted[i] < b.hi_ns) {
			b.count++;
			i++;
		}
		out.push_back(b);
		lo = b.hi_ns;
		if (out.size() > 4096)
			break;	// cannot happen with finite samples
	}
	return out;
}

} // namespace tb5perf
