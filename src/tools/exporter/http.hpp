// SPDX-License-Identifier: MIT
//
// http.hpp - the smallest HTTP/1.1 server that Prometheus needs: GET (and
// HEAD) of /metrics and of /, one request per connection, served one at a
// time.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <string_view>

namespace tb5exporter {

struct Response {
	int status = 200;
	std::string content_type = "text/plain; version=0.0.4; charset=utf-8";
	std::string body;
};

// The response to a request line's method and path.
using Handler = std::function<Response(std::string_view method, std::string_view path)>;

// Parses the request line of a request ("GET /metrics HTTP/1.1"); false when
// it is not one.
bool ParseRequestLine(std::string_view request, std::string &method, std::string &path);

// Listens on address:port (address "" or "::" for every address, IPv4 and
// IPv6) and serves until *stop is set. Returns 0, or a negative errno with
// *error set when it cannot listen.
int Serve(const std::string &address, int port, const Handler &handler,
	  const std::atomic<bool> *stop, std::string *error);

} // namespace tb5exporter
