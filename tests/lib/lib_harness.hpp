// SPDX-License-Identifier: MIT
//
// lib_harness.hpp - driving libtb5 from tests: devices whose completions
// are collected while polling, connected endpoint pairs, patterned buffers.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "tb5/tb5.h"

namespace tb5libtest {

// Selects the simulator for this test process: TB5_SIM=<prefix>-<pid>:<opts>.
// Must run before the first libtb5 call. Returns the fabric name.
std::string use_simulator(const std::string &prefix, const std::string &opts);

struct Dev {
	tb5_device *dev = nullptr;
	std::deque<tb5_wc> wcs;		// polled, not yet taken

	Dev() = default;
	explicit Dev(const std::string &name);
	~Dev();
	Dev(const Dev &) = delete;
	Dev &operator=(const Dev &) = delete;
	int open(const std::string &name);
	void poll();
	// The first collected completion matching @pred, removed.
	std::optional<tb5_wc> take(const std::function<bool(const tb5_wc &)> &pred);
};

// Polls @devs until @pred holds or @timeout_s passes.
bool poll_until(std::initializer_list<Dev *> devs,
		const std::function<bool()> &pred, double timeout_s = 10);
// Polls until a completion matching @pred arrives on @d (any of @also
// are polled too); nullopt on timeout.
std::optional<tb5_wc> await(Dev &d, const std::function<bool(const tb5_wc &)> &pred,
			    std::initializer_list<Dev *> also = {},
			    double timeout_s = 10);

struct Conn {
	tb5_endpoint *listener = nullptr;
	tb5_endpoint *server = nullptr;	// on the listener's device
	tb5_endpoint *client = nullptr;
};

// Listens on @sd, connects from @cd, accepts; false (and a test failure)
// if that did not work within the timeout.
bool connect_pair(Dev &sd, Dev &cd, uint64_t service, Conn &out,
		  uint32_t flags = 0);

// The names of two local links wired to each other (a loop pair).
bool find_loop_pair(std::string &a, std::string &b);

// Bytes that depend on @seed and the position.
void fill_pattern(uint8_t *p, size_t len, uint32_t seed);
// Index of the first byte that differs from the pattern, or -1.
long long check_pattern(const uint8_t *p, size_t len, uint32_t seed);

} // namespace tb5libtest
