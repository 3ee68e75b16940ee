// SPDX-License-Identifier: MIT
//
// lib_harness.hpp - driving libtb5 from tests: devices whose completions
// are collected while polling, connected endpoint pairs, patterned buffers.
#ifndef TB5_LIB_LIB_HARNESS_HPP
#define TB5_LIB_LIB_HARNESS_HPP

#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "tb5/tb5.h"

namespace tb5libtest {

// The backend the suites run over, chosen by TB5_TEST_BACKEND: unset or
// "sim", the simulator (use_simulator() sets TB5_SIM); "kernel", tb5.ko's
// links as libtb5 lists them: the loop pairs of the test VM, or on the
// emulated fabric tb links to a second host, where the same suite runs with
// TB5_TEST_ROLE=serve (serve() below). Any other value ends the process.
bool on_kernel();
// TB5_BACKEND_SIM or TB5_BACKEND_KERNEL: what tb5_query() must report.
uint32_t backend();

// Skips a test that means something on the simulator only, saying why
// (gtest prints the reason beside SKIPPED; the kernel runs must not pass
// such a test silently).
#define TB5_SIM_ONLY(why)                                                     \
	do {                                                                  \
		if (::tb5libtest::on_kernel())                                \
			GTEST_SKIP() << "simulator only: " << (why);          \
	} while (0)

// Selects the simulator for this test process: TB5_SIM=<prefix>-<pid>:<opts>.
// Must run before the first libtb5 call. Returns the fabric name. On the
// kernel (TB5_TEST_BACKEND=kernel) it sets nothing (and clears TB5_SIM)
// and returns "".
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

// One message to an echo peer on @e and its echo back: posts the receive
// [@roff, +@rlen) of @rmr (tag 2), sends [@soff, +@len) of @smr (tag 1),
// then waits for the echo's receive (status 0, @len bytes) and for the
// send. A fatal test failure if not; the caller checks the bytes (wrap the
// call in ASSERT_NO_FATAL_FAILURE).
void echo_once(Dev &d, tb5_endpoint *e, tb5_mr *smr, uint64_t soff, uint64_t len,
	       tb5_mr *rmr, uint64_t roff, uint64_t rlen);

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

// --- two hosts ---
// A suite that needs two hosts has a peer half (a server) and a test half.
// On the simulator the peer is a forked child, a new host of the same
// fabric; on the kernel it is the host at the other end of the emulated
// fabric's cables, running the same binary with TB5_TEST_ROLE=serve.

// Whether the peer host is another machine (TB5_TEST_BACKEND=kernel): the
// tests then connect to its server instead of forking one.
bool peer_is_remote();
// Whether this process is the serving host (TB5_TEST_ROLE=serve; only on
// the kernel).
bool serve_role();
// The last ready link to another host (no loop pair) that appears within
// @timeout_s; "" if none did.
std::string wait_peer_link(double timeout_s = 20);
// The serving host's main: on every ready link to another host, in a
// process of its own, a well-known listener for @service and, connection
// after connection, @session(device, accepted endpoint) (0 when it went
// well; the endpoint is closed after it), each reported on stdout, until
// SIGTERM. Exits non-zero when a session failed or no link came up.
int serve(uint64_t service, const std::function<int(Dev &, tb5_endpoint *)> &session);

// Bytes that depend on @seed and the position.
void fill_pattern(uint8_t *p, size_t len, uint32_t seed);
// Index of the first byte that differs from the pattern, or -1.
long long check_pattern(const uint8_t *p, size_t len, uint32_t seed);

} // namespace tb5libtest

#endif // TB5_LIB_LIB_HARNESS_HPP
