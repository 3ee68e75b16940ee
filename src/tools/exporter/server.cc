// SPDX-License-Identifier: MIT
//
// server.cc - see server.hpp.
#include "server.hpp"

#include "errors.hpp"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

namespace tb5exporter {

namespace {

// libmicrohttpd's log callback: its format comes from the library.
__attribute__((format(printf, 2, 0))) void log(void *, const char *fmt, va_list ap)
{
	char buf[512];
	std::vsnprintf(buf, sizeof(buf), fmt, ap);
	size_t n = std::strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	std::fprintf(stderr, "tb5-exporter: http: %s\n", buf);
}

// libmicrohttpd's request callback, on its thread: nothing thrown may
// cross it. A request that fails is dropped (its connection closed) and
// the server goes on.
MHD_Result access(void *cls, struct MHD_Connection *connection, const char *url,
		  const char *method, const char *, const char *, size_t *, void **)
{
	try {
		return static_cast<Server *>(cls)->answer(connection, url, method) ? MHD_YES : MHD_NO;
	} catch (const std::exception &e) {
		std::fprintf(stderr, "tb5-exporter: %s: %s\n", url ? url : "/", e.what());
		return MHD_NO;
	}
}

bool queue(MHD_Connection *c, const Response &r, bool auth_failed)
{
	MHD_Response *resp = MHD_create_response_from_buffer(
		r.body.size(), const_cast<char *>(r.body.data()), MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return false;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
	if (r.status == 405)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	const MHD_Result ok = auth_failed
		? MHD_queue_basic_auth_fail_response(c, "tb5-exporter", resp)
		: MHD_queue_response(c, (unsigned int)r.status, resp);
	MHD_destroy_response(resp);
	return ok == MHD_YES;
}

Response text(int status, const char *body)
{
	Response r;
	r.status = status;
	r.content_type = "text/plain; charset=utf-8";
	r.body = body;
	return r;
}

} // namespace

int Server::answer(void *connection, const char *url, const char *method)
{
	auto *c = static_cast<MHD_Connection *>(connection);
	if (!opts_.web.users.empty()) {
		char *pass = nullptr;
		char *user = MHD_basic_auth_get_username_password(c, &pass);
		const bool ok = user && pass && opts_.web.check_password(user, pass);
		if (user)
			MHD_free(user);
		if (pass)
			MHD_free(pass);
		if (!ok)
			return queue(c, text(401, "unauthorized\n"), true);
	}
	if (std::strcmp(method, MHD_HTTP_METHOD_GET) && std::strcmp(method, MHD_HTTP_METHOD_HEAD))
		return queue(c, text(405, "only GET and HEAD\n"), false);
	// libmicrohttpd hands over the path without its query string.
	return queue(c, handler_(url ? url : "/"), false);
}

void Server::start(const ServerOptions &opts, Handler handler)
{
	stop();
	opts_ = opts;
	handler_ = std::move(handler);

	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_AUTO;
	if (opts_.web.tls) {
		if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
			throw tb5::tools::Error("this libmicrohttpd has no TLS support");
		flags |= MHD_USE_TLS;
	}

	const bool any = opts_.address.empty() || opts_.address == "::";
	struct sockaddr_storage sa {};
	if (!any) {
		struct addrinfo hints {}, *res = nullptr;
		hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
		hints.ai_socktype = SOCK_STREAM;
		const int gai = getaddrinfo(opts_.address.c_str(), nullptr, &hints, &res);
		if (gai)
			throw tb5::tools::Error("not a numeric address: " + opts_.address + " (" +
						gai_strerror(gai) + ")");
		std::memcpy(&sa, res->ai_addr, res->ai_addrlen);
		freeaddrinfo(res);
		if (sa.ss_family == AF_INET6) {
			reinterpret_cast<sockaddr_in6 *>(&sa)->sin6_port = htons((uint16_t)opts_.port);
			flags |= MHD_USE_IPv6;
		} else {
			reinterpret_cast<sockaddr_in *>(&sa)->sin_port = htons((uint16_t)opts_.port);
		}
	}

	std::vector<MHD_OptionItem> o = {
		// First, so that the library's own messages go through it too.
		{MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)&log, nullptr},
		{MHD_OPTION_CONNECTION_LIMIT, (intptr_t)opts_.max_connections, nullptr},
		{MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)opts_.max_per_client, nullptr},
		{MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)opts_.timeout_s, nullptr},
		{MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)opts_.memory_per_connection, nullptr},
		{MHD_OPTION_LISTEN_BACKLOG_SIZE, 64, nullptr},
		// Malformed requests are refused, not guessed at.
		{MHD_OPTION_STRICT_FOR_CLIENT, 1, nullptr},
	};
	if (!any)
		o.push_back({MHD_OPTION_SOCK_ADDR, 0, &sa});
	std::string priorities;
	if (opts_.web.tls) {
		priorities = opts_.web.tls_priorities();
		o.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char *>(opts_.web.key_pem.c_str())});
		o.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char *>(opts_.web.cert_pem.c_str())});
		o.push_back({MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char *>(priorities.c_str())});
	}
	o.push_back({MHD_OPTION_END, 0, nullptr});

	auto start = [&](unsigned int f) {
		return MHD_start_daemon(f, (uint16_t)opts_.port, nullptr, nullptr, &access, this,
					MHD_OPTION_ARRAY, o.data(), MHD_OPTION_END);
	};
	daemon_ = start(any ? flags | MHD_USE_DUAL_STACK : flags);
	// A host without IPv6: every IPv4 address instead.
	if (!daemon_ && any)
		daemon_ = start(flags);
	if (!daemon_)
		throw tb5::tools::Error("cannot serve on " + (any ? std::string("*") : opts_.address) +
					":" + std::to_string(opts_.port) +
					" (address in use or not here, or TLS files refused; see above)");
}

void Server::stop()
{
	if (daemon_) {
		MHD_stop_daemon(daemon_);
		daemon_ = nullptr;
	}
}

} // namespace tb5exporter
