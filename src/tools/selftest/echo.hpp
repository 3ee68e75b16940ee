// SPDX-License-Identifier: MIT
//
// echo.hpp - the round trip: a client that sends patterned messages and
// checks what comes back, and the echo server that returns them (in
// --respond mode, and inside the process for a loop pair).
//
// Protocol, on one connection: the client sends message k (tag kTagPing,
// any size up to kEchoMax), the server receives it into a kEchoMax buffer,
// checks it against the pattern of message k and sends the same bytes back
// (tag kTagEcho); the client receives them into a buffer larger than the
// message, checks every byte, and that nothing past the message was written.
// Byte i of message k of size n is a function of (k, n, i).
#ifndef TB5_SELFTEST_ECHO_HPP
#define TB5_SELFTEST_ECHO_HPP

#include "tb5/tb5.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tb5selftest {

// The service id a responder listens on, well-known (cookie 0): "tb5setes".
inline constexpr uint64_t kResponderService = 0x7462357365746573ull;
// The service of an in-process loop pair test; the pid goes in the low bits.
inline constexpr uint64_t kLoopServiceBase = 0x7462356c6f6f0000ull;
inline constexpr uint32_t kTagPing = 0x7462;
inline constexpr uint32_t kTagEcho = 0x7463;
// The largest message a server echoes.
inline constexpr uint64_t kEchoMax = 1ull << 20;

// The sizes of the round trip, in order.
std::vector<uint64_t> round_trip_sizes();

void fill_pattern(uint8_t *buf, uint64_t len, uint64_t seq);
// Offset of the first byte that differs from message seq's pattern, or len.
uint64_t find_mismatch(const uint8_t *buf, uint64_t len, uint64_t seq);

using Clock = std::chrono::steady_clock;

// Polls @dev, handing every completion to @on_wc, until @done() or
// @deadline. Spins briefly, then sleeps in tb5_wait(). 0, -ETIMEDOUT, or
// the error of tb5_poll()/tb5_wait().
int poll_until(tb5_device *dev, Clock::time_point deadline,
	      const std::function<void(const tb5_wc &)> &on_wc,
	      const std::function<bool()> &done);

struct ClientResult {
	enum Outcome { kOk, kRefused, kFailed } outcome = kFailed;
	std::string error;			// kFailed, kRefused: what happened
	uint64_t messages = 0;			// echoed and verified
	uint64_t bytes = 0;			// bytes each way
	std::vector<std::pair<uint64_t, double>> rtt_us; // size, round-trip time
	std::vector<std::string> log;
};

// Connects through @link to @addr and runs the round trip of @sizes; every
// wait gives up after @timeout.
ClientResult run_client(const std::string &link, const tb5_address &addr,
		       const std::vector<uint64_t> &sizes,
		       std::chrono::milliseconds timeout);

// What a server says about a connection once it has ended.
struct ConnectionReport {
	std::string link;
	uint64_t number = 0;			// 1, 2, ... per server
	uint64_t peer_host = 0;
	uint64_t messages = 0;
	uint64_t bytes = 0;
	uint64_t mismatches = 0;		// messages that were not the pattern
	std::string error;			// "" when it ended by the peer closing it
	double seconds = 0;
};

// Echoes on one link: listens (well-known) on @service, accepts every
// connection and echoes its messages. Driven by serve() from one thread.
class EchoServer {
public:
	EchoServer(std::string link, uint64_t service,
		   std::function<void(const ConnectionReport &)> on_end);
	~EchoServer();
	EchoServer(const EchoServer &) = delete;
	EchoServer &operator=(const EchoServer &) = delete;

	// Opens the link (once) and listens. Throws tb5::tools::Error, whose
	// code() is libtb5's negative errno, when it cannot.
	void open();
	bool listening() const { return listener_ != nullptr; }
	// The link as it was when opened.
	const tb5_link_info &info() const { return info_; }
	// The listener's address; 0 or a negative errno.
	int address(tb5_address *addr) const;
	// Serves for about @wait_ms. 0, or a negative errno when the device
	// failed (close the server and make a new one). A listener that fails
	// (the link went down) is closed; open() listens again.
	int serve(int wait_ms);

private:
	struct Connection;

	void on_completion(const tb5_wc &wc);
	void accept();
	void post_recv(Connection &c);
	void end(tb5_endpoint *ep, std::string error);

	std::string link_;
	uint64_t service_;
	std::function<void(const ConnectionReport &)> on_end_;
	tb5_device *dev_ = nullptr;
	tb5_endpoint *listener_ = nullptr;
	tb5_link_info info_ {};
	uint64_t accepted_ = 0;
	std::map<tb5_endpoint *, std::unique_ptr<Connection>> conns_;
	// Regions of ended connections that were still busy: deregistered later.
	std::vector<std::pair<tb5_mr *, std::unique_ptr<uint8_t[]>>> busy_;
};

} // namespace tb5selftest

#endif // TB5_SELFTEST_ECHO_HPP
