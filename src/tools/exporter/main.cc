// SPDX-License-Identifier: MIT
//
// main.cc - tb5-exporter: serves this host's tb5 counters (the links'
// frames, bytes and errors from libtb5, and the NCCL plugin's live
// per-link counters) at http://<host>:9435/metrics in the Prometheus text
// format. --once prints one scrape and exits.
#include "collect.hpp"
#include "http.hpp"
#include "metrics.hpp"

#include <CLI/CLI.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <string>

#ifndef TB5_EXPORTER_VERSION
#define TB5_EXPORTER_VERSION "unknown"
#endif

namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int)
{
	g_stop.store(true);
}

const char kIndex[] = R"(<html><head><title>tb5 exporter</title></head><body>
<h1>tb5 exporter</h1><p><a href="/metrics">Metrics</a></p></body></html>
)";

tb5exporter::Response Handle(std::string_view method, std::string_view path)
{
	tb5exporter::Response r;
	if (method != "GET" && method != "HEAD") {
		r.status = 405;
		r.content_type = "text/plain; charset=utf-8";
		r.body = "only GET and HEAD\n";
	} else if (path == "/metrics") {
		r.body = tb5exporter::Format(tb5exporter::Collect());
	} else if (path == "/") {
		r.content_type = "text/html; charset=utf-8";
		r.body = kIndex;
	} else {
		r.status = 404;
		r.content_type = "text/plain; charset=utf-8";
		r.body = "not found: try /metrics\n";
	}
	return r;
}

} // namespace

int main(int argc, char **argv)
{
	int port = 9435;
	std::string address = "::";
	bool once = false;

	CLI::App app("tb5-exporter: the tb5 links' counters and the NCCL plugin's live "
		     "counters, in the Prometheus text format at /metrics", "tb5-exporter");
	app.set_version_flag("--version", TB5_EXPORTER_VERSION);
	app.add_option("-p,--port", port, "TCP port to listen on")
		->check(CLI::Range(1, 65535))
		->capture_default_str();
	app.add_option("-a,--address", address,
		       "Address to listen on (\"::\": every IPv4 and IPv6 address)")
		->type_name("ADDR")
		->capture_default_str();
	app.add_flag("--once", once, "Print one scrape on stdout and exit");
	app.footer("Exit status: 0, 1 when it cannot listen, 2 for bad usage. "
		   "Reference: docs/install.md (the metrics exporter).");
	try {
		app.parse(argc, argv);
	} catch (const CLI::ParseError &e) {
		const int rc = app.exit(e);
		return rc == 0 ? 0 : 2;
	}

	if (once) {
		const std::string body = tb5exporter::Format(tb5exporter::Collect());
		std::fwrite(body.data(), 1, body.size(), stdout);
		return std::fflush(stdout) == 0 ? 0 : 1;
	}

	struct sigaction sa {};
	sa.sa_handler = OnSignal;
	sigaction(SIGINT, &sa, nullptr);
	sigaction(SIGTERM, &sa, nullptr);
	std::signal(SIGPIPE, SIG_IGN);

	std::string error;
	std::fprintf(stderr, "tb5-exporter %s: serving /metrics on [%s]:%d\n", TB5_EXPORTER_VERSION,
		     address.c_str(), port);
	if (tb5exporter::Serve(address, port, Handle, &g_stop, &error) < 0) {
		std::fprintf(stderr, "tb5-exporter: %s\n", error.c_str());
		return 1;
	}
	return 0;
}
