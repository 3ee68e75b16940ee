// SPDX-License-Identifier: MIT
//
// test_kind.hpp - the tests tb5-perf runs; the numbers travel in RUN messages.
#ifndef TB5_PERF_TEST_KIND_HPP
#define TB5_PERF_TEST_KIND_HPP

#include <cstdint>
#include <string_view>

#include "names.hpp"

namespace tb5perf {

enum class Test : uint32_t {
	kBw = 1,	// unidirectional bandwidth, client -> server
	kBibw = 2,	// both directions at once
	kLat = 3,	// ping-pong, one-way = RTT / 2
	kJitter = 4,	// ping-pong, reported as spread
	kLatLoad = 5,	// ping-pong while a second endpoint streams bulk data
	kStreams = 6,	// unidirectional bandwidth over N endpoints at once
};

// In the order `--test all` runs them.
constexpr Named<Test> kTestNames[] = {
	{Test::kBw, "bw"},
	{Test::kBibw, "bibw"},
	{Test::kLat, "lat"},
	{Test::kJitter, "jitter"},
	{Test::kLatLoad, "lat-load"},
	{Test::kStreams, "streams"},
};

constexpr std::string_view test_name(Test t)
{
	return name_of(kTestNames, t);
}

// Latency tests sweep 8 B .. 64 KiB by default; the others 256 B .. 256 MiB.
constexpr bool is_latency_test(Test t)
{
	return t == Test::kLat || t == Test::kJitter || t == Test::kLatLoad;
}

} // namespace tb5perf

#endif // TB5_PERF_TEST_KIND_HPP
