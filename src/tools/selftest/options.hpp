// SPDX-License-Identifier: MIT
//
// options.hpp - tb5-selftest's command line, parsed in main.cc.
#ifndef TB5_SELFTEST_OPTIONS_HPP
#define TB5_SELFTEST_OPTIONS_HPP

#include <cstdint>
#include <string>

namespace tb5selftest {

struct Options {
	bool json = false;		// --json: one JSON document (JSON lines with --respond)
	bool verbose = false;		// --verbose: per-message figures, plugin log
	std::string link;		// --link NAME: only this link's checks / this link served
	double timeout_s = 5.0;		// --timeout: the longest any one wait may take
	std::string plugin;		// --plugin PATH: the NCCL plugin to load
	bool respond = false;		// --respond: echo for a peer's round trip
	uint64_t count = 0;		// --count N: responder exits after N connections (0: never)

	int timeout_ms() const { return static_cast<int>(timeout_s * 1000.0 + 0.5); }
};

} // namespace tb5selftest

#endif // TB5_SELFTEST_OPTIONS_HPP
