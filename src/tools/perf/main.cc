// SPDX-License-Identifier: MIT
//
// main.cc - tb5-perf: bandwidth and latency of tb5 links (docs/perf.md).
// Exit status: 0 success, 1 a test failed (or verification, or a library
// call), 2 bad usage.
#include <cstdio>
#include <exception>

#include "client.hpp"
#include "copy_capacity.hpp"
#include "errors.hpp"
#include "launch.hpp"
#include "nccl_proxy.hpp"
#include "options.hpp"
#include "plot.hpp"
#include "server.hpp"

int main(int argc, char **argv)
{
	using namespace tb5perf;
	Options opt;

	if (const int status = parse_options(argc, argv, opt); status >= 0)
		return status;
	// gnuplot and the plot's folder are checked before the run, so that a
	// long run is not wasted; a plot that fails after it fails the
	// command, the results printed and saved all the same.
	if (!opt.plot.empty()) {
		if (const std::string why = plot_preflight(opt.plot); !why.empty()) {
			fprintf(stderr, "tb5-perf: %s\n", why.c_str());
			return kExitFailed;
		}
	}
	install_stop_handlers();
	try {
		if (opt.list_links)
			return list_links_command();
		if (opt.counters)
			return counters_command(opt.format == Format::kJson);
		switch (opt.mode) {
		case Mode::kServer: {
			std::vector<std::string> links;
			if (!opt.link.empty())
				links.push_back(opt.link);
			return Server(opt, links, nullptr).run();
		}
		case Mode::kClient:
			return run_client(opt, opt.link, "client", {});
		case Mode::kLoop:
			return run_loop(opt);
		case Mode::kSim:
			return run_sim(opt);
		case Mode::kNccl:
			return run_nccl(opt);
		case Mode::kCopyCapacity:
			return run_copy_capacity(opt);
		}
	} catch (const UsageError &e) {
		fprintf(stderr, "tb5-perf: %s\n", e.what());
		return kExitUsage;
	} catch (const Interrupted &) {
		// A server ends that way; a client did not finish.
		if (opt.mode != Mode::kServer) {
			fprintf(stderr, "tb5-perf: interrupted\n");
			return kExitFailed;
		}
		if (!opt.quiet)
			printf("tb5-perf server: stopped\n");
		return kExitOk;
	} catch (const std::exception &e) {
		fprintf(stderr, "tb5-perf: error: %s\n", e.what());
		return kExitFailed;
	}
	return kExitFailed;
}
