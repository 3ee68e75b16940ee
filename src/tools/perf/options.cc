// SPDX-License-Identifier: MIT
//
// options.cc - the command line, parsed with CLI11.
#include "options.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "errors.hpp"
#include "plot.hpp"
#include "tb5/tb5.h"
#include "units.hpp"

namespace tb5perf {
namespace {

const char kDescription[] =
	"tb5-perf: bandwidth and latency of tb5 links.\n\n"
	"  tb5-perf --server [--link NAME]        serve clients over a link\n"
	"  tb5-perf --client --link NAME [tests]  run tests against a server\n"
	"  tb5-perf --loop [tests]                both ends in this process, "
	"over a loop pair\n"
	"  tb5-perf --sim [tests]                 a server process and this "
	"one on a simulated fabric\n"
	"  tb5-perf --nccl [--plugin PATH]        a 2-rank all_reduce moved as "
	"NCCL's proxy moves it,\n"
	"                                         through the NCCL plugin, on "
	"a simulated fabric\n\n"
	"Sizes take K, M, G (1024-based); rates are GB/s (1e9 bytes/s).";

uint64_t size_option(const std::string &text, const char *name)
{
	auto n = parse_size(text);

	if (!n || !*n)
		throw UsageError(std::string(name) + ": bad size \"" + text +
				 "\"");
	return *n;
}

// The family's own option, else --sizes, else the default.
std::vector<uint64_t> size_list_option(const std::string &own, const char *name,
				     const std::string &sizes, const char *def)
{
	const std::string &text = !own.empty() ? own : sizes;
	const char *which = !own.empty() ? name : "--sizes";

	if (text.empty())
		return parse_size_list(def);
	try {
		return parse_size_list(text);
	} catch (const UsageError &e) {
		throw UsageError(std::string(which) + ": " + e.what());
	}
}

void parse_tests(const std::vector<std::string> &names, Options &out)
{
	out.tests.clear();
	for (const std::string &name : names) {
		if (name == "all") {
			for (const Named<Test> &t : kTestNames)
				out.tests.push_back(t.value);
			continue;
		}
		auto t = by_name(kTestNames, name);
		if (!t)
			throw UsageError("--test: unknown test \"" + name +
					 "\" (bw, bibw, lat, jitter, lat-load, "
					 "streams, all)");
		out.tests.push_back(*t);
	}
	// Each test once, in the order first asked for.
	std::vector<Test> unique;
	for (Test t : out.tests) {
		bool seen = false;
		for (Test u : unique)
			seen |= u == t;
		if (!seen)
			unique.push_back(t);
	}
	out.tests = unique;
}

} // namespace

int parse_options(int argc, char **argv, Options &out)
{
	CLI::App app(kDescription, "tb5-perf");
	bool server = false, client = false, loop = false, json = false,
	     csv = false, progress = false, no_progress = false,
	     no_memcpy = false, nccl = false, copy_capacity = false;
	std::string nccl_proto = "simple";
	std::string service, sizes, bw_sizes, lat_sizes, load_size,
		max_inflight, memcpy_footprint;
	std::string memory(memory_name(out.memory));
	std::vector<std::string> tests;

	app.set_version_flag("--version",
			     std::string("tb5-perf " TB5_PERF_VERSION
					 " (libtb5 ") + tb5_version() + ")");
	app.get_formatter()->column_width(30);

	auto *modes = app.add_option_group("Modes");
	modes->add_flag("--server", server, "serve clients one after another");
	modes->add_flag("--client", client, "run tests against a server "
			"(needs --link)");
	modes->add_flag("--loop", loop, "both ends in this process, over a "
			"loop pair");
	modes->add_flag("--sim", out.sim, "on a fabric of the simulator of "
			"its own: a server child process, or with --loop the "
			"in-process loop pair");
	modes->add_flag("--nccl", nccl, "a 2-rank ring all_reduce moved "
			"through the NCCL net plugin as NCCL 2.28's proxy thread "
			"moves it, on a simulated fabric of its own (--sizes: "
			"all_reduce sizes, default 1K,64K,256K,1M,4M,16M)");
	modes->add_option("--plugin", out.plugin, "--nccl: the plugin to load "
			  "(default libnccl-net-tb5.so on the loader's path)");
	modes->add_option("--nccl-channels", out.nccl_channels, "--nccl: "
			  "NCCL channels, a send and a receive connection each "
			  "(default 2)")
		->check(CLI::Range(1, 32));
	modes->add_option("--nccl-proto", nccl_proto, "--nccl: simple, ll or "
			  "ll128: how NCCL cuts the data into messages (default "
			  "simple)");
	modes->add_flag("--copy-capacity", copy_capacity, "memcpy bandwidth "
			"of this host with N threads copying at once, the bound of "
			"what simulated hosts on it carry together (--sizes: copy "
			"sizes, default 512K; --memcpy-footprint: per thread)");
	modes->add_option("--copy-threads", out.copy_threads, "--copy-capacity: "
			  "thread counts, e.g. 1,8,64 (default 1, 2, 4 .. the "
			  "CPUs usable)")
		->delimiter(',')
		->check(CLI::Range(1, 1024));
	modes->add_flag("--list", out.list_links, "list the links and exit");
	modes->add_flag("--counters", out.counters, "print the live per-link "
			"counters of running NCCL jobs (the plugin's) and exit");

	auto *conn = app.add_option_group("Connection");
	conn->add_option("--link", out.link, "the link to use (server: "
			 "default all ready links)");
	conn->add_option("--service", service, "service id (default "
			 "0x7462357065726600)");
	conn->add_flag("--once", out.once, "server: exit after one client");
	conn->add_option("--sim-options", out.sim_options, "--sim: more "
			 "TB5_SIM options, e.g. ring=4096,rate=80");
	conn->add_option("--sim-hosts", out.sim_hosts, "--sim: hosts of the "
			 "fabric, every pair cabled (2..16, default 2); this "
			 "process is host 0 and runs the tests against a "
			 "server on each other host in turn")
		->check(CLI::Range(2, 16));
	conn->add_option("--timeout", out.timeout_s, "seconds without "
			 "progress before giving up (default 30)")
		->check(CLI::PositiveNumber);

	auto *what = app.add_option_group("Tests");
	what->add_option("-t,--test", tests, "bw, bibw, lat, jitter, lat-load, "
			 "streams, all (comma-separated; default bw,lat)")
		->delimiter(',');
	what->add_option("-s,--sizes", sizes, "message sizes of every test: "
			 "FROM:TO[:FACTOR] or a list, e.g. 256:256M or 8,4K,1M");
	what->add_option("--bw-sizes", bw_sizes, "sizes of bw, bibw, streams "
			 "(default 256:256M)");
	what->add_option("--lat-sizes", lat_sizes, "sizes of lat, jitter, "
			 "lat-load (default 8:64K)");
	what->add_option("-n,--iters", out.iters, "messages (ping-pongs) per "
			 "size instead of --duration")
		->check(CLI::PositiveNumber);
	what->add_option("-D,--duration", out.duration_s, "seconds per size "
			 "(default 0.3)")
		->check(CLI::PositiveNumber);
	what->add_option("--warmup", out.warmup, "messages before each size "
			 "(default: automatic)")
		->check(CLI::NonNegativeNumber);
	what->add_option("--min-iters", out.min_iters, "fewest messages per "
			 "size (default 5)")
		->check(CLI::PositiveNumber);
	what->add_option("-w,--window", out.window, "messages in flight per "
			 "endpoint (default 8, at most the link's max_ops)")
		->check(CLI::Range(1, 65536));
	what->add_option("--streams", out.streams, "endpoints of the streams "
			 "test (default 4)")
		->check(CLI::Range(1, 1024));
	what->add_option("--load-size", load_size, "lat-load: bulk message "
			 "size (default 1M)");
	what->add_option("--max-inflight", max_inflight, "bytes in flight per "
			 "side at most (default 256M); bounds the buffers");
	what->add_option("--memory", memory, "this side's data buffers: host "
			 "or udmabuf (dma-bufs from /dev/udmabuf, kernel module "
			 "only; default host)");
	what->add_flag("--no-memcpy", no_memcpy, "no memcpy column");
	what->add_option("--memcpy-footprint", memcpy_footprint, "bytes the "
			 "memcpy reference cycles through at least (default 64M: "
			 "from memory, not cache; 0: the transfer's own)");
	what->add_flag("--verify", out.verify, "check every received byte");
	what->add_flag("--wait", out.wait, "sleep in tb5_wait() instead of "
			 "busy polling");

	auto *report = app.add_option_group("Output");
	report->add_flag("--json", json, "JSON on stdout (the table goes to "
			 "stderr)");
	report->add_flag("--csv", csv, "CSV on stdout (the table goes to "
			 "stderr)");
	report->add_option("-o,--output", out.output, "write the JSON or CSV "
			   "to this file instead");
	report->add_option("--plot", out.plot, "draw bandwidth and latency "
			   "against message size into FILE.svg or FILE.png "
			   "(needs gnuplot)")
		->option_text("FILE");
	report->add_flag("--histogram", out.histogram, "latency histograms");
	report->add_flag("--progress", progress, "progress line on stderr "
			 "(default: when it is a terminal)");
	report->add_flag("--no-progress", no_progress, "no progress line");
	report->add_flag("-q,--quiet", out.quiet, "no table");

	try {
		app.parse(argc, argv);
	} catch (const CLI::CallForHelp &e) {
		return app.exit(e);
	} catch (const CLI::CallForAllHelp &e) {
		return app.exit(e);
	} catch (const CLI::CallForVersion &e) {
		return app.exit(e);
	} catch (const CLI::ParseError &e) {
		app.exit(e);
		return kExitUsage;
	}

	try {
		const int modes_given = server + client + loop + nccl +
					copy_capacity;
		if (out.list_links || out.counters) {
			out.mode = Mode::kClient;
		} else if (modes_given > 1) {
			throw UsageError("--server, --client, --loop, --nccl and "
					 "--copy-capacity exclude each other");
		} else if (nccl || copy_capacity) {
			if (csv)
				throw UsageError(std::string(nccl ? "--nccl" :
							"--copy-capacity") +
						 " reports in a table or --json, "
						 "not --csv");
			if (copy_capacity && out.sim)
				throw UsageError("--copy-capacity measures the "
						 "host, not a link: no --sim");
			out.mode = nccl ? Mode::kNccl : Mode::kCopyCapacity;
		} else if (server) {
			if (out.sim)
				throw UsageError("--server runs on a link; --sim "
						 "starts its own server");
			out.mode = Mode::kServer;
		} else if (client) {
			if (out.sim)
				throw UsageError("--client needs a server; --sim "
						 "starts its own");
			if (out.link.empty())
				throw UsageError("--client needs --link NAME");
			out.mode = Mode::kClient;
		} else if (loop) {
			out.mode = Mode::kLoop;
		} else if (out.sim) {
			out.mode = Mode::kSim;
		} else {
			throw UsageError("choose a mode: --server, --client "
					 "--link NAME, --loop or --sim (--help)");
		}
		if (!out.copy_threads.empty() && !copy_capacity)
			throw UsageError("--copy-threads goes with --copy-capacity");
		if (out.sim_hosts != 2 && (!out.sim || out.mode != Mode::kSim))
			throw UsageError("--sim-hosts goes with --sim (without "
					 "--loop)");
		if (out.sim_hosts > 2 && (!out.output.empty() || !out.plot.empty()))
			throw UsageError("--sim-hosts: one report per peer; "
					 "--output and --plot take one run");
		if (json && csv)
			throw UsageError("--json and --csv exclude each other");
		if (!out.output.empty() && !json && !csv)
			throw UsageError("--output needs --json or --csv");
		if (!out.plot.empty()) {
			const auto f = plot_format_of(out.plot);
			if (!f)
				throw UsageError("--plot: \"" + out.plot +
						 "\" must end in .svg or .png");
			if (out.mode == Mode::kServer || out.list_links ||
			    out.counters)
				throw UsageError("--plot draws a client's "
						 "results: with --client, "
						 "--loop or --sim");
			out.plot_format = *f;
		}
		out.format = json ? Format::kJson
				  : csv ? Format::kCsv : Format::kTable;
		if (progress && no_progress)
			throw UsageError("--progress and --no-progress exclude "
					 "each other");
		out.progress = progress ? 1 : no_progress ? 0 : -1;
		out.memcpy = !no_memcpy;
		if (!service.empty()) {
			char *end = nullptr;
			errno = 0;
			out.service = strtoull(service.c_str(), &end, 0);
			if (errno || *end || service[0] == '-')
				throw UsageError("--service: bad id \"" + service +
						 "\"");
		}
		parse_tests(tests.empty() ? std::vector<std::string>{"bw", "lat"}
					 : tests,
			   out);
		out.bw_sizes = size_list_option(bw_sizes, "--bw-sizes", sizes,
					      nccl ? "1K,64K,256K,1M,4M,16M" :
					      copy_capacity ? "512K" : "256:256M");
		if (nccl_proto == "simple")
			out.nccl_proto = 0;
		else if (nccl_proto == "ll")
			out.nccl_proto = 1;
		else if (nccl_proto == "ll128")
			out.nccl_proto = 2;
		else
			throw UsageError("--nccl-proto: unknown protocol \"" +
					 nccl_proto + "\" (simple, ll, ll128)");
		out.lat_sizes = size_list_option(lat_sizes, "--lat-sizes", sizes,
					       "8:64K");
		if (!load_size.empty())
			out.load_size = size_option(load_size, "--load-size");
		if (!memcpy_footprint.empty()) {
			auto n = parse_size(memcpy_footprint);
			if (!n)
				throw UsageError("--memcpy-footprint: bad size \"" +
						 memcpy_footprint + "\"");
			out.memcpy_footprint = *n;
		}
		if (!max_inflight.empty())
			out.max_inflight =
				size_option(max_inflight, "--max-inflight");
		const auto m = by_name(kMemoryNames, memory);
		if (!m)
			throw UsageError("--memory: unknown memory \"" + memory +
					 "\" (host, udmabuf)");
		out.memory = *m;
		if (out.memory == Memory::kUdmabuf && out.sim)
			throw UsageError("--memory udmabuf needs the tb5 kernel "
					 "module; --sim runs on the simulator");
		if (out.iters && out.iters < out.min_iters)
			out.min_iters = out.iters;
	} catch (const UsageError &e) {
		fprintf(stderr, "tb5-perf: %s\n", e.what());
		return kExitUsage;
	}
	for (int i = 0; i < argc; i++)
		out.command.emplace_back(argv[i]);
	return -1;
}

} // namespace tb5perf
