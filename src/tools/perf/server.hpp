// SPDX-License-Identifier: MIT
//
// server.hpp - the server: a well-known listener on each link it serves,
// clients served one after another. A connection's first control message
// decides what it is: HELLO starts a session (or is turned away while one
// runs), JOIN makes it a data endpoint of the running session.
#ifndef TB5_PERF_SERVER_HPP
#define TB5_PERF_SERVER_HPP

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conn.hpp"
#include "device.hpp"
#include "options.hpp"

namespace tb5perf {

class Server {
public:
	// Serves @links (empty: every ready link, looked for again while
	// idle). @stop ends it from another thread.
	Server(const Options &opt, std::vector<std::string> links,
	       const std::atomic<bool> *stop);
	~Server();

	// Until interrupted (exit status 0), or with --once after one client
	// (0 when its session ended well, else 1).
	int run();
	// Why the last session failed ("" if it did not).
	const std::string &last_error() const { return last_error_; }

private:
	struct Pending {
		EndpointPtr ep;
		int slot = -1;
	};
	struct Port {
		std::string name;
		std::unique_ptr<Device> dev;
		std::unique_ptr<CtlPool> pool;
		EndpointPtr listener;
		tb5_link_info info = {};
		std::map<uint32_t, Pending> pending;
		bool dead = false;
	};
	struct Hello {
		Port *port;
		EndpointPtr ep;
		CtlMsg msg;
	};

	void open_port(const std::string &name, bool wait_ready);
	void rescan();
	void background(Port &port, const tb5_wc &wc);
	void accept(Port &port);
	void drop_pending(Port &port, uint32_t id);
	bool serve(Hello hello);
	void session(Conn &conn, const CtlMsg &hello, Port &port);
	void log(const std::string &line) const;
	bool stopping() const;

	const Options &opt_;
	std::vector<std::string> links_;
	const std::atomic<bool> *stop_;
	std::vector<std::unique_ptr<Port>> ports_;
	uint32_t next_pending_ = 1;

	// The running session, if any.
	Conn *session_ = nullptr;
	uint64_t session_id_ = 0;
	std::optional<Hello> hello_;	// a HELLO that starts the next one
	std::string last_error_;
};

} // namespace tb5perf

#endif // TB5_PERF_SERVER_HPP
