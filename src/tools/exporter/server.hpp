// SPDX-License-Identifier: MIT
//
// server.hpp - the exporter's HTTP(S) server, on GNU libmicrohttpd: GET and
// HEAD only, bounded (connections in all and per client address, memory per
// connection, which bounds the request line and headers, an idle timeout),
// with TLS and basic auth from a web-config file (web_config.hpp).
// Requests are served one at a time on libmicrohttpd's own thread.
#ifndef TB5_EXPORTER_SERVER_HPP
#define TB5_EXPORTER_SERVER_HPP

#include "web_config.hpp"

#include <functional>
#include <string>
#include <string_view>

struct MHD_Daemon;

namespace tb5exporter {

struct Response {
	int status = 200;
	std::string content_type = "text/plain; version=0.0.4; charset=utf-8";
	std::string body;
};

// The response to a request's path (its query string removed). Only GET and
// HEAD reach it; anything else is answered 405 before.
using Handler = std::function<Response(std::string_view path)>;

struct ServerOptions {
	std::string address = "::";	// "::" (or ""): every IPv6 and IPv4 address
	int port = 9435;
	unsigned max_connections = 64;
	unsigned max_per_client = 8;
	unsigned timeout_s = 10;	// a connection idle this long is closed
	size_t memory_per_connection = 32 * 1024;
	WebConfig web;
};

class Server {
public:
	Server() = default;
	Server(const Server &) = delete;
	Server &operator=(const Server &) = delete;
	~Server() { stop(); }

	// Listens and serves on a thread of its own. Throws tb5::tools::Error
	// when it cannot (address, port in use, TLS files the library refuses).
	void start(const ServerOptions &opts, Handler handler);
	// Stops listening and closes every connection; idempotent.
	void stop();

	// The answer to one request (for the library's callback).
	int answer(void *connection, const char *url, const char *method);

private:
	MHD_Daemon *daemon_ = nullptr;
	Handler handler_;
	ServerOptions opts_;
};

} // namespace tb5exporter

#endif // TB5_EXPORTER_SERVER_HPP
