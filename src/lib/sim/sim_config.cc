// SPDX-License-Identifier: MIT
//
// sim_config.cc - parsing TB5_SIM.
#include "sim/sim_config.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "error.hpp"
#include "tb5_core.h"

namespace tb5::sim {
namespace {

bool parse_uint(const std::string &s, uint64_t max, uint64_t &out)
{
	char *end = nullptr;

	if (s.empty() || s[0] == '-' || s[0] == '+')
		return false;
	errno = 0;
	out = strtoull(s.c_str(), &end, 10);
	return !errno && *end == '\0' && out <= max;
}

bool valid_fabric(const std::string &f)
{
	if (f.empty() || f.size() > 64)
		return false;
	for (char c : f) {
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '-' ||
			  c == '.';
		if (!ok)
			return false;
	}
	return f != "." && f != "..";
}

} // namespace

uint32_t default_copy_workers()
{
	cpu_set_t set;
	long cpus = 0;

	// The CPUs we may run on (taskset, cgroup cpusets), else all online.
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		cpus = CPU_COUNT(&set);
	if (cpus <= 0)
		cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus < 8)
		return 0;
	return uint32_t(std::min<long>(cpus / 4, 8));
}

int parse_config(const std::string &spec, Config &out)
{
	size_t colon = spec.find(':');
	Config c;

	c.fabric = spec.substr(0, colon);
	if (!valid_fabric(c.fabric))
		return fail(-EINVAL, "TB5_SIM=%s: the fabric name must be 1..64 "
			    "characters of A-Z a-z 0-9 _ . -", spec.c_str());
	std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);

	while (!rest.empty()) {
		size_t comma = rest.find(',');
		std::string kv = rest.substr(0, comma);
		rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
		size_t eq = kv.find('=');

		if (eq == std::string::npos)
			return fail(-EINVAL, "TB5_SIM: \"%s\" is not key=value",
				    kv.c_str());
		std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
		uint64_t n = 0;

		if (k == "hosts") {
			if (!parse_uint(v, kMaxHosts, n) || n < 1)
				return fail(-EINVAL, "TB5_SIM: hosts=%s: 1..%u",
					    v.c_str(), kMaxHosts);
			c.hosts = uint32_t(n);
			c.hosts_given = true;
		} else if (k == "host") {
			if (!parse_uint(v, kMaxHosts - 1, n))
				return fail(-EINVAL, "TB5_SIM: host=%s: 0..%u",
					    v.c_str(), kMaxHosts - 1);
			c.host = int(n);
		} else if (k == "loop") {
			if (!parse_uint(v, kMaxLoop, n))
				return fail(-EINVAL, "TB5_SIM: loop=%s: 0..%u",
					    v.c_str(), kMaxLoop);
			c.loop = uint32_t(n);
		} else if (k == "ring") {
			if (!parse_uint(v, TB5_RING_SIZE_MAX, n) ||
			    n < TB5_RING_SIZE_MIN || (n & (n - 1)))
				return fail(-EINVAL, "TB5_SIM: ring=%s: a power "
					    "of two from %u to %u", v.c_str(),
					    TB5_RING_SIZE_MIN, TB5_RING_SIZE_MAX);
			c.ring_size = uint32_t(n);
			c.ring_given = true;
		} else if (k == "rate") {
			char *end = nullptr;
			double g = strtod(v.c_str(), &end);

			if (v.empty() || *end != '\0' || !std::isfinite(g) ||
			    g < 0 || g > 100000)
				return fail(-EINVAL, "TB5_SIM: rate=%s: Gb/s, "
					    "0 (unlimited) to 100000", v.c_str());
			c.rate_mbps = uint64_t(g * 1000.0 + 0.5);
		} else if (k == "delay_us") {
			char *end = nullptr;
			double us = strtod(v.c_str(), &end);

			if (v.empty() || *end != '\0' || !std::isfinite(us) ||
			    us < 0 || us > kMaxDelayUs)
				return fail(-EINVAL, "TB5_SIM: delay_us=%s: one-way "
					    "delay in us, 0 to %u", v.c_str(),
					    kMaxDelayUs);
			c.delay_ns = uint64_t(us * 1000.0 + 0.5);
		} else if (k == "usb4") {
			if (!parse_uint(v, 1, n))
				return fail(-EINVAL, "TB5_SIM: usb4=%s: 0 or 1",
					    v.c_str());
			c.usb4 = n == 1;
		} else if (k == "copy") {
			if (!parse_uint(v, kMaxCopy, n))
				return fail(-EINVAL, "TB5_SIM: copy=%s: copy worker "
					    "threads, 0 (none) to %u", v.c_str(),
					    kMaxCopy);
			c.copy = int(n);
		} else {
			return fail(-EINVAL, "TB5_SIM: unknown key \"%s\" (known: "
				    "hosts, host, loop, ring, rate, delay_us, usb4, "
				    "copy)", k.c_str());
		}
	}
	if (c.host >= 0 && uint32_t(c.host) >= c.hosts && c.hosts_given)
		return fail(-EINVAL, "TB5_SIM: host=%d but hosts=%u", c.host,
			    c.hosts);
	out = c;
	return 0;
}

} // namespace tb5::sim
