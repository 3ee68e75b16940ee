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

// "i-j": two different host slots.
bool parse_pair(const std::string &s, uint32_t &i, uint32_t &j)
{
	size_t dash = s.find('-');
	uint64_t a = 0, b = 0;

	if (dash == std::string::npos ||
	    !parse_uint(s.substr(0, dash), kMaxHosts - 1, a) ||
	    !parse_uint(s.substr(dash + 1), kMaxHosts - 1, b) || a == b)
		return false;
	i = uint32_t(a);
	j = uint32_t(b);
	return true;
}

} // namespace

std::string describe_uncabled(const uint16_t *rows)
{
	std::string s;

	for (uint32_t i = 0; i < kMaxHosts; i++)
		for (uint32_t j = i + 1; j < kMaxHosts; j++)
			if (rows[i] & (1u << j)) {
				// (appended piece by piece: gcc 12 at -O3 warns,
				// wrongly, that operator+(const char *, string &&)
				// may overlap)
				if (!s.empty())
					s += ',';
				s.append(std::to_string(i)).append("-").append(std::to_string(j));
			}
	return s.empty() ? "none" : s;
}

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
		} else if (k == "uncabled") {
			uint32_t i = 0, j = 0;

			if (!parse_pair(v, i, j))
				return fail(-EINVAL, "TB5_SIM: uncabled=%s: a pair of "
					    "two different host slots i-j, each "
					    "0..%u (e.g. uncabled=0-3; repeat the "
					    "key for more pairs)", v.c_str(),
					    kMaxHosts - 1);
			c.uncabled[i] |= uint16_t(1u << j);
			c.uncabled[j] |= uint16_t(1u << i);
			c.uncabled_given = true;
		} else if (k == "cables") {
			if (!parse_uint(v, kMaxCables, n) || n < 1)
				return fail(-EINVAL, "TB5_SIM: cables=%s: parallel "
					    "cables between every pair of hosts, 1..%u",
					    v.c_str(), kMaxCables);
			c.cables = uint32_t(n);
			c.cables_given = true;
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
		} else if (k == "copy_min") {
			if (!parse_uint(v, 65536, n) || n < 16)
				return fail(-EINVAL, "TB5_SIM: copy_min=%s: KiB from "
					    "which a copy batch is shared with the copy "
					    "workers, 16 to 65536", v.c_str());
			c.copy_min_kib = uint32_t(n);
		} else if (k == "burst") {
			if (!parse_uint(v, TB5_BURST_FRAMES_MAX, n) || n < 1)
				return fail(-EINVAL, "TB5_SIM: burst=%s: payload "
					    "frames of one message a link sends "
					    "before it serves the next endpoint, 1 "
					    "to %u", v.c_str(), TB5_BURST_FRAMES_MAX);
			c.burst_frames = uint32_t(n);
		} else if (k == "dma") {
			if (v == "cuda")
				c.dma = DmaKind::kCuda;
			else if (v == "standin")
				c.dma = DmaKind::kStandin;
			else if (v == "off")
				c.dma = DmaKind::kOff;
			else
				return fail(-EINVAL, "TB5_SIM: dma=%s: the DMA engine "
					    "that carries GPU memory: cuda, standin "
					    "(a test device) or off", v.c_str());
		} else {
			return fail(-EINVAL, "TB5_SIM: unknown key \"%s\" (known: "
				    "hosts, uncabled, cables, host, loop, ring, rate, delay_us, usb4, "
				    "copy, copy_min, burst, dma)", k.c_str());
		}
	}
	if (c.host >= 0 && uint32_t(c.host) >= c.hosts && c.hosts_given)
		return fail(-EINVAL, "TB5_SIM: host=%d but hosts=%u", c.host,
			    c.hosts);
	for (uint32_t i = c.hosts; c.hosts_given && i < kMaxHosts; i++)
		if (c.uncabled[i])
			return fail(-EINVAL, "TB5_SIM: uncabled=%s names slot %u, "
				    "but hosts=%u (slots 0..%u)",
				    describe_uncabled(c.uncabled).c_str(), i,
				    c.hosts, c.hosts - 1);
	out = c;
	return 0;
}

} // namespace tb5::sim
