// SPDX-License-Identifier: MIT
//
// sweep.cc - tests over sizes, calibrated by time.
#include "sweep.hpp"

#include <algorithm>

#include "clock.hpp"
#include "errors.hpp"
#include "units.hpp"

namespace tb5perf {
namespace {

constexpr uint64_t kMaxBwIters = 1ull << 32;
constexpr uint64_t kMaxLatIters = 10000000;	// samples kept in memory
constexpr uint32_t kLatWarmup = 32;
constexpr uint64_t kWarmupBytes = 64ull << 20;

uint32_t streams_of(const Options &opt, Test test)
{
	return test == Test::kStreams ? opt.streams : 1;
}

const std::vector<uint64_t> &sizes_of(const Options &opt, Test test)
{
	return is_latency_test(test) ? opt.lat_sizes : opt.bw_sizes;
}

} // namespace

uint32_t slots(const Options &opt, uint64_t size, uint32_t streams,
	       uint32_t max_ops)
{
	const uint64_t per_stream = opt.max_inflight / (size * streams);
	uint64_t slots = std::min<uint64_t>(opt.window, std::max<uint32_t>(max_ops, 1));

	slots = std::min<uint64_t>(slots, std::max<uint64_t>(per_stream, 1));
	return static_cast<uint32_t>(std::max<uint64_t>(slots, 1));
}

uint64_t buffer_bytes_for(const Options &opt, uint32_t max_ops)
{
	uint64_t bytes = 4096;

	for (Test t : opt.tests) {
		for (uint64_t size : sizes_of(opt, t)) {
			RunSpec spec;
			spec.test = t;
			spec.size = size;
			spec.streams = streams_of(opt, t);
			spec.window = t == Test::kLatLoad
				? slots(opt, opt.load_size, 1, max_ops)
				: slots(opt, size, spec.streams, max_ops);
			spec.load_size = opt.load_size;
			bytes = std::max(bytes, buffer_bytes(spec));
		}
	}
	return bytes;
}

Sweep::Sweep(Client &client, const Options &opt, Report &report,
	     Progress &progress)
	: client_(client), opt_(opt), report_(report), progress_(progress)
{
}

void Sweep::run()
{
	const uint64_t max_msg = client_.link().max_msg;

	for (Test t : opt_.tests) {
		for (uint64_t size : sizes_of(opt_, t))
			if (max_msg && size > max_msg)
				throw UsageError("message size " + format_size(size) +
						 " is more than the link's largest, " +
						 format_size(max_msg));
		if (t == Test::kLatLoad && max_msg && opt_.load_size > max_msg)
			throw UsageError("--load-size " + format_size(opt_.load_size) +
					 " is more than the link's largest message, " +
					 format_size(max_msg));
	}
	for (Test t : opt_.tests)
		run_test(t);
}

RunSpec Sweep::spec_for(Test test, uint64_t size) const
{
	RunSpec spec;

	spec.test = test;
	spec.size = size;
	spec.streams = streams_of(opt_, test);
	if (test == Test::kLatLoad)
		spec.window = slots(opt_, opt_.load_size, 1, client_.max_ops());
	else if (!is_latency_test(test))
		spec.window = slots(opt_, size, spec.streams, client_.max_ops());
	// (lat, jitter: one ping at a time; window stays 1)
	spec.flags = (opt_.verify ? kRunVerify : 0) | (opt_.wait ? kRunWait : 0);
	spec.load_size = test == Test::kLatLoad ? opt_.load_size : 0;
	return spec;
}

void Sweep::run_test(Test test)
{
	const auto &sizes = sizes_of(opt_, test);
	const bool own_endpoints = test == Test::kLatLoad;

	report_.begin_test(test);
	if (!own_endpoints)
		client_.open(streams_of(opt_, test));
	for (size_t i = 0; i < sizes.size(); i++) {
		RunSpec spec = spec_for(test, sizes[i]);
		progress_.update(std::string(test_name(test)) + " " +
					 format_size(sizes[i]) + " (" +
					 std::to_string(i + 1) + "/" +
					 std::to_string(sizes.size()) + ")",
				 true);
		RunResult result = measure(spec);
		report_.add_row(make_row(spec, result));
	}
	if (!own_endpoints)
		client_.close();
}

RunResult Sweep::measure(RunSpec &spec)
{
	const uint64_t max_n = is_latency_test(spec.test) ? kMaxLatIters : kMaxBwIters;
	auto run = [&](uint64_t n) {
		spec.count = n;
		return client_.run(spec);
	};
	uint64_t warm = kLatWarmup;

	if (opt_.warmup >= 0)
		warm = static_cast<uint64_t>(opt_.warmup);
	else if (!is_latency_test(spec.test))
		warm = std::clamp<uint64_t>(kWarmupBytes / (spec.size * spec.streams),
					    2, 2ull * spec.window);
	if (opt_.iters) {
		if (warm)
			run(warm);
		return run(opt_.iters);
	}
	// Warm-up runs grow until one takes a tenth of the time wanted; the
	// fastest gives the message rate.
	const double target = opt_.duration_s / 10;
	uint64_t n = std::max<uint64_t>(warm, 1);
	RunResult r = run(n);
	double best = r.seconds / static_cast<double>(n);
	while (r.seconds < target && n < max_n) {
		double grow = r.seconds > 0 ? 1.5 * target / r.seconds : 16;
		grow = std::clamp(grow, 2.0, 16.0);
		n = std::min<uint64_t>(static_cast<uint64_t>(static_cast<double>(n) * grow),
				       max_n);
		r = run(n);
		best = std::min(best, r.seconds / static_cast<double>(n));
	}
	// The measurement: runs of about a quarter of --duration each until
	// --duration is summed up (a stall costs one run, it does not size
	// the others), within three times --duration of wall time.
	const uint64_t chunk = std::clamp<uint64_t>(
		best > 0 ? static_cast<uint64_t>(opt_.duration_s / 4 / best) : max_n,
		1, max_n);
	const uint64_t wall_end = now_ns() + static_cast<uint64_t>(3e9 * opt_.duration_s);
	RunResult total;
	uint64_t count = 0;
	while (total.seconds < opt_.duration_s || count < opt_.min_iters) {
		n = std::min(std::max(chunk, opt_.min_iters > count
						     ? opt_.min_iters - count
						     : 0),
			     max_n - count);
		r = run(n);
		count += n;
		total.seconds += r.seconds;
		total.bytes += r.bytes;
		total.messages += r.messages;
		total.samples_ns.insert(total.samples_ns.end(), r.samples_ns.begin(),
					r.samples_ns.end());
		total.load_bytes += r.load_bytes;
		total.load_seconds += r.load_seconds;
		total.cpu_ns += r.cpu_ns;
		total.peer_cpu_ns += r.peer_cpu_ns;
		if (count >= max_n || (now_ns() > wall_end && count >= opt_.min_iters))
			break;
	}
	spec.count = count;
	return total;
}

double Sweep::line_gbps() const
{
	// Each end's link says the rate it sends at; a direction can go no
	// faster than the slower end (a peer that reports 0 sets none).
	uint32_t mbps = client_.link().speed_mbps;
	const uint32_t peer = client_.peer().speed_mbps;

	if (peer && (!mbps || peer < mbps))
		mbps = peer;
	return static_cast<double>(mbps) / 8000.0;
}

Row Sweep::make_row(const RunSpec &spec, RunResult &r)
{
	Row row;

	static_cast<RunSpec &>(row) = spec;
	row.seconds = r.seconds;
	row.bytes = r.bytes;
	row.messages = r.messages;
	row.verified = opt_.verify;
	if (r.seconds > 0) {
		row.gbps = static_cast<double>(r.bytes) / r.seconds / 1e9;
		row.msgs_per_s = static_cast<double>(r.messages) / r.seconds;
	}
	if (!is_latency_test(spec.test)) {
		// Per direction: bibw's figure is the sum of two.
		const double per_dir = spec.test == Test::kBibw ? row.gbps / 2 : row.gbps;
		const double line = line_gbps();

		if (line > 0) {
			row.line_gbps = line;
			row.line_fraction = per_dir / line;
		}
		// CPU seconds per GB moved = cores busy per GB/s. Over a loop
		// pair both sides are one process: the client's figure is
		// the whole, the server's would count it again.
		const double gb = static_cast<double>(r.bytes) / 1e9;
		if (gb > 0 && r.cpu_ns) {
			row.cpu_client = seconds(r.cpu_ns) / gb;
			if (r.peer_cpu_ns && opt_.mode != Mode::kLoop)
				row.cpu_server = seconds(r.peer_cpu_ns) / gb;
		}
	}
	if (is_latency_test(spec.test)) {
		row.lat = summarize(r.samples_ns);	// sorts the samples
		if (opt_.histogram)
			row.histogram = log_histogram(r.samples_ns);
	}
	if (spec.test == Test::kLatLoad && r.load_seconds > 0)
		row.load_gbps = static_cast<double>(r.load_bytes) / r.load_seconds / 1e9;
	if (opt_.memcpy && !is_latency_test(spec.test)) {
		progress_.update(std::string(test_name(spec.test)) + " " +
					 format_size(spec.size) + ": memcpy",
				 true);
		// As many buffers as the transfer had in flight, or more, so
		// that the copies cycle through --memcpy-footprint bytes.
		const uint64_t buffers = std::max<uint64_t>(
			static_cast<uint64_t>(spec.window) * spec.streams,
			(opt_.memcpy_footprint + spec.size - 1) / spec.size);
		row.memcpy_gbps = memcpy_.measure(
			spec.size, static_cast<uint32_t>(std::min<uint64_t>(buffers, 1u << 20)),
			std::clamp(opt_.duration_s / 2, 0.01, 0.5));
	}
	return row;
}

} // namespace tb5perf
