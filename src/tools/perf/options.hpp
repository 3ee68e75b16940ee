// SPDX-License-Identifier: MIT
//
// options.hpp - what the command line asks for (docs/perf.md lists it all).
#ifndef TB5_PERF_OPTIONS_HPP
#define TB5_PERF_OPTIONS_HPP

#include <cstdint>
#include <string>
#include <vector>

#include "memory_kind.hpp"
#include "test_kind.hpp"

namespace tb5perf {

// The well-known service a tb5-perf server listens on ("tb5perf\0").
constexpr uint64_t kDefaultService = 0x7462357065726600ull;

enum class Mode {
	kClient,	// --client --link NAME: against a server over a link
	kServer,	// --server [--link NAME]: serve clients one after another
	kLoop,		// --loop: both sides in this process, over a loop pair
	kSim,		// --sim: a server child process on a simulated fabric
	kNccl,		// --nccl: NCCL's proxy pattern through the plugin
	kCopyCapacity,	// --copy-capacity: the host's memcpy with N threads
};

enum class Format { kTable, kJson, kCsv };
enum class PlotFormat { kSvg, kPng };

struct Options {
	Mode mode = Mode::kClient;
	bool sim = false;		// --sim (with --loop: the simulator's loop pair)
	std::string link;		// --link
	uint64_t service = kDefaultService;
	bool once = false;		// --once: a server serves one client
	std::string sim_options;	// --sim-options: appended to TB5_SIM
	uint32_t sim_hosts = 2;		// --sim-hosts: hosts of --sim's fabric
	bool list_links = false;	// --list
	bool counters = false;		// --counters

	std::vector<Test> tests;	// in the order they run
	std::vector<uint64_t> bw_sizes;	// bw, bibw, streams
	std::vector<uint64_t> lat_sizes;	// lat, jitter, lat-load

	uint64_t iters = 0;		// messages per size; 0: --duration decides
	double duration_s = 0.3;	// per size
	int64_t warmup = -1;		// messages before each size; -1: automatic
	uint64_t min_iters = 5;
	uint32_t window = 8;		// sends (receives) in flight per endpoint
	uint32_t streams = 4;		// endpoints of the streams test
	uint64_t load_size = 1 << 20;	// lat-load: bulk message size
	uint64_t max_inflight = 256ull << 20;	// bytes in flight per side
	Memory memory = Memory::kHost;	// this side's data buffers

	bool memcpy = true;		// memcpy column for the bandwidth tests
	uint64_t memcpy_footprint = 64ull << 20;	// bytes it cycles through, at least
	bool verify = false;
	bool wait = false;		// tb5_wait() instead of busy polling
	bool histogram = false;
	Format format = Format::kTable;
	std::string output;		// --output: JSON/CSV there, table on stdout
	std::string plot;		// --plot: draw the rows there (plot.hpp)
	PlotFormat plot_format = PlotFormat::kSvg;	// from its extension
	bool quiet = false;		// no table
	int progress = -1;		// -1: when stderr is a tty
	double timeout_s = 30;		// no progress for that long is an error

	// --nccl (nccl_proxy.hpp)
	std::string plugin = "libnccl-net-tb5.so";	// --plugin
	uint32_t nccl_channels = 2;	// --nccl-channels
	uint32_t nccl_proto = 0;	// --nccl-proto: NcclProto

	// --copy-capacity (copy_capacity.hpp)
	std::vector<uint32_t> copy_threads;	// --copy-threads; empty: 1, 2, 4 .. CPUs

	std::vector<std::string> command;	// argv, for the JSON
};

// Parses argv into @out. Returns -1 to go on, or the exit status to end
// with (0 after --help or --version, 2 after a usage error, with the
// message printed).
int parse_options(int argc, char **argv, Options &out);

} // namespace tb5perf

#endif // TB5_PERF_OPTIONS_HPP
