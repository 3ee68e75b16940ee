// SPDX-License-Identifier: MIT
//
// report.cc - tables, JSON, CSV.
#include "report.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "errors.hpp"
#include "memory_kind.hpp"
#include "units.hpp"

namespace tb5perf {
namespace {

double us(double ns) { return ns / 1000.0; }

std::string fixed(double v, int prec)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%.*f", prec, v);
	return buf;
}

// An optional figure, or @none.
std::string opt(const std::optional<double> &v, int prec, const char *none)
{
	return v ? fixed(*v, prec) : none;
}

// Rows that carry the benchmark's figures: bw at >= 1 MiB against memcpy,
// lat p50 at the smallest size.
constexpr uint64_t kBigMessage = 1 << 20;

} // namespace

Report::Report(const Options &opt, Progress &progress)
	: opt_(opt), progress_(progress)
{
	if (opt.quiet)
		table_ = nullptr;
	else if (opt.format == Format::kTable || !opt.output.empty())
		table_ = stdout;
	else
		table_ = stderr;	// stdout carries the JSON or CSV
}

void Report::print(const char *fmt, ...)
{
	va_list ap;

	if (!table_)
		return;
	if (table_ == stderr || progress_.enabled())
		progress_.clear();
	va_start(ap, fmt);
	vfprintf(table_, fmt, ap);
	va_end(ap);
	fflush(table_);
}

void Report::set_environment(nlohmann::json env)
{
	env_ = std::move(env);
	const auto &link = env_["link"];
	const auto &peer = env_["peer"];
	const auto &set = env_["settings"];

	print("# tb5-perf %s, libtb5 %s, mode %s%s%s\n",
	      env_.value("tool_version", "").c_str(),
	      env_.value("library_version", "").c_str(),
	      env_.value("mode", "").c_str(),
	      env_.contains("simulator") ? ", TB5_SIM=" : "",
	      env_.contains("simulator")
		      ? env_["simulator"].get<std::string>().c_str()
		      : "");
	if (link.is_object()) {
		const uint32_t speed = link.value("speed_mbps", 0u);
		print("# link %s: %s, ring %u, max frame %u, max_ops %u, "
		      "speed %s, host %s -> %s\n",
		      link.value("name", "").c_str(),
		      link.value("backend", "").c_str(),
		      link.value("ring_size", 0u), link.value("max_frame", 0u),
		      link.value("max_ops", 0u),
		      speed ? (std::to_string(speed) + " Mb/s").c_str()
			    : "unlimited",
		      link.value("local_host", "").c_str(),
		      link.value("peer_host", "").c_str());
	}
	if (peer.is_object())
		print("# server: libtb5 %s, %s link, ring %u, max_ops %u, "
		      "host %s, memory %s\n",
		      peer.value("library_version", "").c_str(),
		      peer.value("backend", "").c_str(),
		      peer.value("ring_size", 0u), peer.value("max_ops", 0u),
		      peer.value("host", "").c_str(),
		      peer.value("memory", "").c_str());
	if (env_.contains("host"))
		print("# machine: %s, %s, %u CPUs, %s\n",
		      env_["host"].value("name", "").c_str(),
		      env_["host"].value("cpu", "").c_str(),
		      env_["host"].value("cpus", 0u),
		      env_["host"].value("kernel", "").c_str());
	if (set.is_object()) {
		std::string per_size =
			set.value("iters", uint64_t(0))
				? std::to_string(set.value("iters", uint64_t(0))) +
					  " messages"
				: fixed(set.value("duration_s", 0.0), 2) + " s";
		const uint64_t footprint = set.value("memcpy_footprint", uint64_t(0));
		print("# %s memory, %s, %s per size, window %u, %s, memcpy "
		      "through %s, GB/s = 1e9 bytes/s, one-way latency = RTT/2\n",
		      set.value("memory", "").c_str(),
		      set.value("polling", "").c_str(), per_size.c_str(),
		      set.value("window", 0u),
		      set.value("verify", false) ? "verified" : "not verified",
		      footprint ? (format_size(footprint) + " or more").c_str()
				: "the transfer's buffers");
	}
}

void Report::print_header(Test test)
{
	switch (test) {
	case Test::kBw:
	case Test::kBibw:
	case Test::kStreams:
		print("#\n# %s: %s\n", std::string(test_name(test)).c_str(),
		      test == Test::kBw	    ? "one direction, client -> server"
		      : test == Test::kBibw ? "both directions at once (GB/s: "
					      "the sum)"
					    : "several endpoints at once "
					      "(GB/s: the sum)");
		print("# line: the link's rate per direction and the fraction "
		      "of it reached (per direction); cpu: cores busy per GB/s "
		      "moved (CPU s per GB) of the client's and the server's "
		      "process\n");
		print("# %10s %7s %6s %10s %9s %9s %10s %11s %10s %9s %7s %7s "
		      "%7s\n",
		      "size", "streams", "window", "count", "time(s)", "GB/s",
		      "msgs/s", "memcpy GB/s", "tb5/memcpy", "line GB/s",
		      "of line", "cpu cli", "cpu srv");
		break;
	case Test::kLat:
		print("#\n# lat: ping-pong, one-way latency in us\n");
		print("# %10s %10s %9s %9s %9s %9s %9s %9s\n", "size", "iters",
		      "min", "p50", "p99", "p99.9", "max", "mean");
		break;
	case Test::kJitter:
		print("#\n# jitter: spread of one-way latency in us (ipdv: mean "
		      "change between consecutive samples)\n");
		print("# %10s %10s %9s %9s %9s %9s %9s %9s\n", "size", "iters",
		      "mean", "stddev", "p50", "p99", "p99-p50", "ipdv");
		break;
	case Test::kLatLoad:
		print("#\n# lat-load: ping-pong while another endpoint streams "
		      "%s messages client -> server; one-way latency in us\n",
		      format_size(opt_.load_size).c_str());
		print("# %10s %10s %9s %9s %9s %9s %9s %10s\n", "size", "iters",
		      "min", "p50", "p99", "p99.9", "max", "load GB/s");
		break;
	}
}

void Report::begin_test(Test test)
{
	print_header(test);
}

void Report::print_row(const Row &r)
{
	const std::string size = format_size(r.size);

	switch (r.test) {
	case Test::kBw:
	case Test::kBibw:
	case Test::kStreams: {
		std::string mc = "-", ratio = "-";
		if (r.memcpy_gbps && *r.memcpy_gbps > 0) {
			mc = fixed(*r.memcpy_gbps, 2);
			ratio = fixed(r.gbps / *r.memcpy_gbps, 3);
		}
		print("  %10s %7u %6u %10" PRIu64 " %9.4f %9.3f %10s %11s %10s "
		      "%9s %7s %7s %7s\n",
		      size.c_str(), r.streams, r.window, r.messages, r.seconds,
		      r.gbps, format_count(r.msgs_per_s).c_str(), mc.c_str(),
		      ratio.c_str(), opt(r.line_gbps, 2, "-").c_str(),
		      opt(r.line_fraction, 3, "-").c_str(),
		      opt(r.cpu_client, 3, "-").c_str(),
		      opt(r.cpu_server, 3, "-").c_str());
		break;
	}
	case Test::kLat: {
		const LatencySummary &l = *r.lat;
		print("  %10s %10" PRIu64 " %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n",
		      size.c_str(), r.count, us(l.min), us(l.p50), us(l.p99),
		      us(l.p999), us(l.max), us(l.mean));
		break;
	}
	case Test::kJitter: {
		const LatencySummary &l = *r.lat;
		print("  %10s %10" PRIu64 " %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n",
		      size.c_str(), r.count, us(l.mean), us(l.stddev), us(l.p50),
		      us(l.p99), us(l.p99 - l.p50), us(l.ipdv));
		break;
	}
	case Test::kLatLoad: {
		const LatencySummary &l = *r.lat;
		print("  %10s %10" PRIu64 " %9.2f %9.2f %9.2f %9.2f %9.2f %10.3f\n",
		      size.c_str(), r.count, us(l.min), us(l.p50), us(l.p99),
		      us(l.p999), us(l.max), r.load_gbps);
		break;
	}
	}
	if (opt_.histogram && r.lat)
		print_histogram(r);
}

void Report::print_histogram(const Row &r)
{
	uint64_t peak = 0;

	for (const auto &b : r.histogram)
		peak = std::max(peak, b.count);
	print("#   histogram of %s one-way latency, %" PRIu64 " samples\n",
	      format_size(r.size).c_str(), r.lat->samples);
	print("#   %10s %10s %10s\n", "from(us)", "to(us)", "count");
	for (size_t i = 0; i < r.histogram.size(); i++) {
		const HistogramBucket &b = r.histogram[i];
		// Runs of empty buckets take one line.
		size_t empty = i;
		while (empty < r.histogram.size() && !r.histogram[empty].count)
			empty++;
		if (empty - i >= 3) {
			print("    %10.3f %10.3f %10d\n", us(b.lo_ns),
			      us(r.histogram[empty - 1].hi_ns), 0);
			i = empty - 1;
			continue;
		}
		const int bar = peak ? static_cast<int>((40 * b.count + peak - 1) / peak) : 0;
		print("    %10.3f %10.3f %10" PRIu64 " %.*s\n", us(b.lo_ns),
		      us(b.hi_ns), b.count, bar,
		      "########################################");
	}
}

void Report::add_row(const Row &row)
{
	rows_.push_back(row);
	print_row(row);
}

nlohmann::json Report::row_json(const Row &r)
{
	nlohmann::json j = {
		{"test", std::string(test_name(r.test))},
		{"size", r.size},
		{"iters", r.count},
		{"window", r.window},
		{"streams", r.streams},
		{"seconds", r.seconds},
		{"bytes", r.bytes},
		{"messages", r.messages},
		{"gbps", r.gbps},
		{"msgs_per_s", r.msgs_per_s},
		{"verified", r.verified},
	};
	if (r.memcpy_gbps) {
		j["memcpy_gbps"] = *r.memcpy_gbps;
		j["ratio"] = *r.memcpy_gbps > 0 ? r.gbps / *r.memcpy_gbps : 0.0;
	}
	if (r.line_gbps) {
		j["line_gbps"] = *r.line_gbps;
		j["line_fraction"] = *r.line_fraction;
	}
	if (r.cpu_client)
		j["cpu_cores_per_gbps_client"] = *r.cpu_client;
	if (r.cpu_server)
		j["cpu_cores_per_gbps_server"] = *r.cpu_server;
	if (r.lat) {
		const LatencySummary &l = *r.lat;
		j["latency_us"] = {
			{"samples", l.samples}, {"min", us(l.min)},
			{"p50", us(l.p50)},	{"p90", us(l.p90)},
			{"p99", us(l.p99)},	{"p99.9", us(l.p999)},
			{"max", us(l.max)},	{"mean", us(l.mean)},
			{"stddev", us(l.stddev)}, {"ipdv", us(l.ipdv)},
		};
		if (!r.histogram.empty()) {
			nlohmann::json h = nlohmann::json::array();
			for (const auto &b : r.histogram)
				h.push_back({{"lo_us", us(b.lo_ns)},
					     {"hi_us", us(b.hi_ns)},
					     {"count", b.count}});
			j["histogram"] = h;
		}
	}
	if (r.test == Test::kLatLoad) {
		j["load_size"] = r.load_size;
		j["load_gbps"] = r.load_gbps;
	}
	return j;
}

nlohmann::json Report::summary() const
{
	nlohmann::json s = nlohmann::json::object();
	const Row *worst = nullptr, *smallest = nullptr;

	for (const Row &r : rows_) {
		if (r.test == Test::kBw && r.size >= kBigMessage && r.memcpy_gbps &&
		    *r.memcpy_gbps > 0 &&
		    (!worst || r.gbps / *r.memcpy_gbps <
				       worst->gbps / *worst->memcpy_gbps))
			worst = &r;
		if (r.test == Test::kLat && (!smallest || r.size < smallest->size))
			smallest = &r;
	}
	if (worst)
		s["bw_min_ratio_1MiB_up"] = {
			{"ratio", worst->gbps / *worst->memcpy_gbps},
			{"size", worst->size},
			{"target", 0.8}};
	if (smallest)
		s["lat_p50_smallest"] = {{"us", us(smallest->lat->p50)},
					 {"size", smallest->size},
					 {"target_us_8B", 5.0}};
	return s;
}

std::string Report::csv() const
{
	std::ostringstream out;

	out << "test,size,iters,window,streams,seconds,bytes,messages,gbps,"
	       "msgs_per_s,memcpy_gbps,ratio,lat_min_us,lat_p50_us,lat_p90_us,"
	       "lat_p99_us,lat_p999_us,lat_max_us,lat_mean_us,lat_stddev_us,"
	       "lat_ipdv_us,load_size,load_gbps,verified,line_gbps,"
	       "line_fraction,cpu_cores_per_gbps_client,"
	       "cpu_cores_per_gbps_server,memory_client,memory_server\n";
	// CSV has no place for settings: every line says which memory each
	// side's buffers were (the server's: empty if it never said).
	std::string server_memory;
	if (env_.is_object() && env_.contains("peer") && env_["peer"].is_object())
		server_memory = env_["peer"].value("memory", "");
	const std::string memories =
		std::string(memory_name(opt_.memory)) + "," + server_memory;
	for (const Row &r : rows_) {
		char line[512];
		std::string mc, ratio, lat = ",,,,,,,,";
		if (r.memcpy_gbps && *r.memcpy_gbps > 0) {
			mc = fixed(*r.memcpy_gbps, 4);
			ratio = fixed(r.gbps / *r.memcpy_gbps, 4);
		}
		if (r.lat) {
			const LatencySummary &l = *r.lat;
			snprintf(line, sizeof(line),
				 "%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f",
				 us(l.min), us(l.p50), us(l.p90), us(l.p99),
				 us(l.p999), us(l.max), us(l.mean),
				 us(l.stddev), us(l.ipdv));
			lat = line;
		}
		snprintf(line, sizeof(line),
			 "%s,%" PRIu64 ",%" PRIu64 ",%u,%u,%.6f,%" PRIu64
			 ",%" PRIu64 ",%.4f,%.1f,%s,%s,%s,%s,%s,%d,%s,%s,%s,%s,%s\n",
			 std::string(test_name(r.test)).c_str(), r.size, r.count,
			 r.window, r.streams, r.seconds, r.bytes, r.messages,
			 r.gbps, r.msgs_per_s, mc.c_str(), ratio.c_str(),
			 lat.c_str(),
			 r.test == Test::kLatLoad ? std::to_string(r.load_size).c_str()
						  : "",
			 r.test == Test::kLatLoad ? fixed(r.load_gbps, 4).c_str()
						  : "",
			 r.verified ? 1 : 0, opt(r.line_gbps, 4, "").c_str(),
			 opt(r.line_fraction, 4, "").c_str(),
			 opt(r.cpu_client, 4, "").c_str(),
			 opt(r.cpu_server, 4, "").c_str(), memories.c_str());
		out << line;
	}
	return out.str();
}

void Report::fail(const std::string &why)
{
	error_ = why;
	try {
		finish();
	} catch (const Error &) {
		// The failure that brought us here is the one to report.
	}
}

void Report::finish()
{
	const nlohmann::json totals = summary();

	if (totals.contains("bw_min_ratio_1MiB_up")) {
		const auto &s = totals["bw_min_ratio_1MiB_up"];
		print("#\n# bw tb5/memcpy from 1 MiB up: at least %.3f (at %s); "
		      "target 0.8\n",
		      s["ratio"].get<double>(),
		      format_size(s["size"].get<uint64_t>()).c_str());
	}
	if (totals.contains("lat_p50_smallest")) {
		const auto &s = totals["lat_p50_smallest"];
		print("%s# lat p50 one-way at %s: %.2f us; target at 8 B: 5 us "
		      "with busy polling\n",
		      totals.contains("bw_min_ratio_1MiB_up") ? "" : "#\n",
		      format_size(s["size"].get<uint64_t>()).c_str(),
		      s["us"].get<double>());
	}
	if (opt_.format == Format::kTable)
		return;

	std::string text;
	if (opt_.format == Format::kJson) {
		nlohmann::json doc = env_;
		nlohmann::json rows = nlohmann::json::array();
		for (const Row &r : rows_)
			rows.push_back(row_json(r));
		doc["rows"] = rows;
		doc["summary"] = totals;
		if (!error_.empty())
			doc["error"] = error_;
		text = doc.dump(2) + "\n";
	} else {
		text = csv();
	}
	if (opt_.output.empty())
		progress_.clear();
	emit_document(opt_.output, text);
}

void emit_document(const std::string &output, const std::string &text)
{
	if (output.empty()) {
		fputs(text.c_str(), stdout);
		fflush(stdout);
		return;
	}
	std::ofstream f(output);
	f << text;
	f.close();
	if (!f)
		throw Error("cannot write " + output + ": " + strerror(errno));
}

} // namespace tb5perf
