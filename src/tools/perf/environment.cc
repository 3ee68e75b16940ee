// SPDX-License-Identifier: MIT
//
// environment.cc - the environment of a run.
#include "environment.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>

#include "device.hpp"
#include "memory_kind.hpp"
#include "test_kind.hpp"
#include "units.hpp"

namespace tb5perf {
namespace {

std::string cpu_model()
{
	std::ifstream f("/proc/cpuinfo");
	std::string line;

	while (std::getline(f, line)) {
		if (line.rfind("model name", 0) == 0) {
			const size_t colon = line.find(':');
			if (colon != std::string::npos)
				return line.substr(line.find_first_not_of(' ', colon + 1));
		}
	}
	return "unknown";
}

std::string utc_now()
{
	char buf[32];
	const time_t now = time(nullptr);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

} // namespace

std::string hex(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%016" PRIx64, v);
	return buf;
}

nlohmann::json link_json(const tb5_link_info &l)
{
	return {
		{"name", l.name},
		{"backend", tb5_backend_str(l.backend)},
		{"state", tb5_link_state_str(l.state)},
		{"local_host", hex(l.local_host)},
		{"peer_host", hex(l.peer_host)},
		{"index", l.index},
		{"ring_size", l.ring_size},
		{"max_frame", l.max_frame},
		{"speed_mbps", l.speed_mbps},
		{"caps", l.caps},
		{"max_ops", l.max_ops},
		{"max_msg", l.max_msg},
	};
}

nlohmann::json make_environment(const Options &opt, const std::string &mode,
			       const tb5_link_info &link, const PeerInfo &peer)
{
	nlohmann::json env;
	struct utsname uts = {};
	char hostname[256] = {};

	uname(&uts);
	gethostname(hostname, sizeof(hostname) - 1);
	env["tool"] = "tb5-perf";
	env["tool_version"] = TB5_PERF_VERSION;
	env["library_version"] = tb5_version();
	env["date"] = utc_now();
	env["mode"] = mode;
	env["command"] = opt.command;
	if (const char *sim = getenv("TB5_SIM"))
		env["simulator"] = sim;
	env["host"] = {
		{"name", hostname},
		{"kernel", std::string(uts.sysname) + " " + uts.release},
		{"machine", uts.machine},
		{"cpu", cpu_model()},
		{"cpus", std::thread::hardware_concurrency()},
	};
	env["link"] = link_json(link);
	env["peer"] = {
		{"host", hex(peer.host)},
		{"library_version", peer.version},
		{"backend", tb5_backend_str(peer.backend)},
		{"ring_size", peer.ring_size},
		{"speed_mbps", peer.speed_mbps},
		{"max_ops", peer.max_ops},
		{"memory", peer.memory},
	};
	nlohmann::json tests = nlohmann::json::array();
	for (Test t : opt.tests)
		tests.push_back(std::string(test_name(t)));
	env["settings"] = {
		{"tests", tests},
		{"bw_sizes", opt.bw_sizes},
		{"lat_sizes", opt.lat_sizes},
		{"iters", opt.iters},
		{"duration_s", opt.duration_s},
		{"warmup", opt.warmup},
		{"min_iters", opt.min_iters},
		{"window", opt.window},
		{"streams", opt.streams},
		{"load_size", opt.load_size},
		{"max_inflight", opt.max_inflight},
		{"memory", std::string(memory_name(opt.memory))},
		{"verify", opt.verify},
		{"polling", opt.wait ? "tb5_wait" : "busy polling"},
		{"memcpy", opt.memcpy},
		{"memcpy_footprint", opt.memcpy_footprint},
		{"service", hex(opt.service)},
	};
	return env;
}

} // namespace tb5perf
