// SPDX-License-Identifier: MIT
//
// client.hpp - the client's side of a session: connect to a server over a
// device, HELLO/WELCOME, open and close data endpoints, run one test at
// one size; and run_client(), a whole client run over a link.
#ifndef TB5_PERF_CLIENT_HPP
#define TB5_PERF_CLIENT_HPP

#include <cstdint>
#include <functional>
#include <string>

#include "conn.hpp"
#include "device.hpp"
#include "environment.hpp"
#include "options.hpp"
#include "run.hpp"

namespace tb5perf {

class Client {
public:
	Client(Device &dev, const tb5_link_info &link, PollSettings settings);

	// Connects to the server at {@host, @service, cookie 0} (retrying
	// while nobody listens yet, up to the timeout), says HELLO, and
	// registers @buffer_bytes of send and of receive buffers on both
	// sides (ours of @memory, the server's of its own --memory).
	void connect(uint64_t host, uint64_t service, uint64_t buffer_bytes,
		     Memory memory);
	// @n data endpoints for the next runs.
	void open(uint32_t n);
	void close();
	void bye();
	// One run; lat-load opens and closes its own two endpoints.
	RunResult run(const RunSpec &spec);

	const PeerInfo &peer() const { return peer_; }
	const tb5_link_info &link() const { return link_; }
	// Operations in flight per endpoint that both ends allow.
	uint32_t max_ops() const;

private:
	EndpointPtr connect_one(const tb5_address &addr, uint64_t context,
			       bool retry_refused);

	Device &dev_;
	tb5_link_info link_;
	CtlPool pool_;
	Conn conn_;
	PeerInfo peer_;
	uint64_t session_ = 0;
	uint64_t host_ = 0, service_ = 0;
	uint32_t open_ = 0;
};

// A whole client run: waits for the link to be ready, connects to its
// peer's server, runs every test of @opt and reports. @mode names how it
// runs ("client", "loop", "sim"); @watchdog is called while waiting.
int run_client(const Options &opt, const std::string &link_name,
	      const std::string &mode, const std::function<void()> &watchdog);

} // namespace tb5perf

#endif // TB5_PERF_CLIENT_HPP
