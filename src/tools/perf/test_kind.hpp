// SPDX-License-Identifier: MIT
//
// test_kind.hpp - the tests tb5-perf runs; the numbers travel in RUN messages.
#ifndef TB5_PERF_TEST_KIND_HPP
#define TB5_PERF_TEST_KIND_HPP

#include <cstdint>
#include <optional>
#include <string_view>

namespace tb5perf {

enum class Test : uint32_t {
	kBw = 1,	// unidirectional bandwidth, client -> server
	kBibw = 2,	// both directions at once
	kLat = 3,	// ping-pong, one-way = RTT / 2
	kJitter = 4,	// ping-pong, reported as spread
	kLatLoad = 5,	// ping-pong while a second endpoint streams bulk data
	kStreams = 6,	// unidirectional bandwidth over N endpoints at once
};

constexpr Test kAllTests[] = {Test::kBw,     Test::kBibw,    Test::kLat,
			      Test::kJitter, Test::kLatLoad, Test::kStreams};

constexpr std::string_view test_name(Test t)
{
	switch (t) {
	case Test::kBw: return "bw";
	case Test::kBibw: return "bibw";
	case Test::kLat: return "lat";
	case Test::kJitter: return "jitter";
	case Test::kLatLoad: return "lat-load";
	case Test::kStreams: return "streams";
	}
	return "?";
}

inline std::optional<Test> test_from_name(std::string_view name)
{
	for (Test t : kAllTests)
		if (test_name(t) == name)
			return t;
	return std::nullopt;
}

inline std::optional<Test> test_from_wire(uint32_t v)
{
	for (Test t : kAllTests)
		if (static_cast<uint32_t>(t) == v)
			return t;
	return std::nullopt;
}

// Latency tests sweep 8 B .. 64 KiB by default; the others 256 B .. 256 MiB.
constexpr bool is_latency_test(Test t)
{
	return t == Test::kLat || t == Test::kJitter || t == Test::kLatLoad;
}

} // namespace tb5perf

#endif // TB5_PERF_TEST_KIND_HPP
