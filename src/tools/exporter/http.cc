// SPDX-License-Identifier: MIT
//
// http.cc - the exporter's HTTP server: poll() on the listening socket (so
// that SIGTERM ends it within a second), one request per connection, each
// connection given at most five seconds to send its request.
#include "http.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tb5exporter {

namespace {

class Fd {
public:
	explicit Fd(int fd = -1) : fd_(fd) {}
	Fd(const Fd &) = delete;
	Fd &operator=(const Fd &) = delete;
	~Fd()
	{
		if (fd_ >= 0)
			close(fd_);
	}
	int get() const { return fd_; }

private:
	int fd_;
};

const char *Reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	default: return "Error";
	}
}

void SendAll(int fd, std::string_view data)
{
	while (!data.empty()) {
		const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		data.remove_prefix(static_cast<size_t>(n));
	}
}

void ServeOne(int fd, const Handler &handler)
{
	const struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));

	// The request line and headers; the body of a GET is empty.
	std::string req;
	char buf[2048];
	while (req.find("\r\n\r\n") == std::string::npos && req.find("\n\n") == std::string::npos) {
		const ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		req.append(buf, static_cast<size_t>(n));
		if (req.size() > 16384)
			break;
	}

	std::string method, path;
	Response resp;
	if (!ParseRequestLine(req, method, path)) {
		resp.status = 400;
		resp.content_type = "text/plain; charset=utf-8";
		resp.body = "bad request\n";
	} else {
		resp = handler(method, path);
	}
	std::string head = "HTTP/1.1 " + std::to_string(resp.status) + ' ' + Reason(resp.status) +
			   "\r\nContent-Type: " + resp.content_type +
			   "\r\nContent-Length: " + std::to_string(resp.body.size()) +
			   "\r\nConnection: close\r\n\r\n";
	SendAll(fd, head);
	if (method != "HEAD")
		SendAll(fd, resp.body);
}

} // namespace

bool ParseRequestLine(std::string_view request, std::string &method, std::string &path)
{
	const size_t eol = request.find_first_of("\r\n");
	if (eol == std::string_view::npos)
		return false;
	const std::string_view line = request.substr(0, eol);
	const size_t sp1 = line.find(' ');
	if (sp1 == std::string_view::npos || sp1 == 0)
		return false;
	const size_t sp2 = line.find(' ', sp1 + 1);
	if (sp2 == std::string_view::npos || sp2 == sp1 + 1)
		return false;
	if (line.substr(sp2 + 1).rfind("HTTP/", 0) != 0)
		return false;
	method = line.substr(0, sp1);
	path = line.substr(sp1 + 1, sp2 - sp1 - 1);
	// The query string does not choose the page.
	if (const size_t q = path.find('?'); q != std::string::npos)
		path.resize(q);
	return true;
}

int Serve(const std::string &address, int port, const Handler &handler,
	  const std::atomic<bool> *stop, std::string *error)
{
	struct addrinfo hints {};
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	const std::string service = std::to_string(port);
	const bool any = address.empty() || address == "::";
	struct addrinfo *res = nullptr;
	const int gai = getaddrinfo(any ? "::" : address.c_str(), service.c_str(), &hints, &res);
	if (gai != 0) {
		*error = "cannot resolve " + address + ": " + gai_strerror(gai);
		return -EINVAL;
	}
	int fd = -1, err = 0;
	for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		const int one = 1, zero = 0;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6 && any)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0) {
			err = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	// No IPv6 on this host: every IPv4 address instead.
	if (fd < 0 && any && err == EAFNOSUPPORT) {
		struct sockaddr_in sin {};
		sin.sin_family = AF_INET;
		sin.sin_port = htons(static_cast<uint16_t>(port));
		sin.sin_addr.s_addr = htonl(INADDR_ANY);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		const int one = 1;
		if (fd >= 0)
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (fd < 0 || bind(fd, reinterpret_cast<struct sockaddr *>(&sin), sizeof(sin)) < 0 ||
		    listen(fd, 64) < 0) {
			err = errno;
			if (fd >= 0)
				close(fd);
			fd = -1;
		}
	}
	if (fd < 0) {
		*error = "cannot listen on " + (any ? std::string("*") : address) + ":" + service +
			 ": " + std::strerror(err);
		return -err;
	}
	Fd listener(fd);

	while (!stop->load()) {
		struct pollfd pfd = {listener.get(), POLLIN, 0};
		const int n = poll(&pfd, 1, 1000);
		if (n <= 0)
			continue;
		Fd conn(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
		if (conn.get() < 0)
			continue;
		ServeOne(conn.get(), handler);
	}
	return 0;
}

} // namespace tb5exporter
