// SPDX-License-Identifier: MIT
//
// main.cc - tb5-exporter: serves this host's tb5 counters (the links'
// frames, bytes and errors from libtb5, and the NCCL plugin's live
// per-link counters) at http://<host>:9435/metrics in the Prometheus text
// format, optionally over TLS and behind basic auth (--web-config-file), or
// writes them for prometheus-node-exporter's textfile collector
// (--textfile-dir). --once prints (or writes) one scrape and exits.
#include "collect.hpp"
#include "errors.hpp"
#include "metrics.hpp"
#include "server.hpp"
#include "textfile.hpp"
#include "web_config.hpp"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <string>

#ifndef TB5_EXPORTER_VERSION
#define TB5_EXPORTER_VERSION "unknown"
#endif

namespace {

const char kIndex[] = R"(<html><head><title>tb5 exporter</title></head><body>
<h1>tb5 exporter</h1><p><a href="/metrics">Metrics</a></p></body></html>
)";

tb5exporter::Response handle(std::string_view path)
{
	tb5exporter::Response r;
	if (path == "/metrics") {
		r.body = tb5exporter::format(tb5exporter::collect());
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

// SIGTERM and SIGINT, blocked here (and so in every thread started after)
// and taken with sigtimedwait(): a stop request is never lost between a
// check and a sleep.
sigset_t stop_signals()
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	return set;
}

// Waits up to @seconds (forever when negative) for a stop signal: true
// when one came.
bool wait_for_stop(const sigset_t &set, double seconds)
{
	for (;;) {
		int sig;
		if (seconds < 0) {
			if (sigwait(&set, &sig) == 0)
				return true;
			continue;
		}
		struct timespec ts;
		ts.tv_sec = (time_t)seconds;
		ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
		sig = sigtimedwait(&set, nullptr, &ts);
		if (sig > 0)
			return true;
		if (errno == EAGAIN)
			return false;
		// EINTR: some other signal; wait again (the timeout restarts,
		// which a textfile writer can afford).
	}
}

// A write that fails is said and tried again at the next interval; with
// @once it fails the command.
int run_textfile(const std::string &dir, double interval, bool once, const sigset_t &stop)
{
	for (;;) {
		try {
			tb5exporter::write_textfile(dir, tb5exporter::format(tb5exporter::collect()));
		} catch (const tb5::tools::Error &e) {
			if (once)
				throw;
			std::fprintf(stderr, "tb5-exporter: %s\n", e.what());
		}
		if (once || wait_for_stop(stop, interval))
			return tb5::tools::kExitOk;
	}
}

// Everything after the command line. Throws tb5::tools::Error when it
// cannot listen or write, UsageError for a web-config file it refuses.
int run(tb5exporter::ServerOptions &opts, const std::string &web_config,
	const std::string &textfile_dir, double interval, bool once)
{
	const sigset_t stop = stop_signals();
	pthread_sigmask(SIG_BLOCK, &stop, nullptr);
	std::signal(SIGPIPE, SIG_IGN);

	if (!textfile_dir.empty())
		return run_textfile(textfile_dir, interval, once, stop);

	if (once) {
		const std::string body = tb5exporter::format(tb5exporter::collect());
		std::fwrite(body.data(), 1, body.size(), stdout);
		return std::fflush(stdout) == 0 ? tb5::tools::kExitOk : tb5::tools::kExitFailed;
	}

	if (!web_config.empty())
		opts.web = tb5exporter::load_web_config(web_config);
	tb5exporter::Server server;
	server.start(opts, handle);
	std::fprintf(stderr, "tb5-exporter %s: serving /metrics on [%s]:%d%s%s\n",
		     TB5_EXPORTER_VERSION, opts.address.c_str(), opts.port,
		     opts.web.tls ? " over TLS" : "",
		     opts.web.users.empty() ? "" : " with basic auth");
	wait_for_stop(stop, -1);
	server.stop();
	std::fprintf(stderr, "tb5-exporter: stopped\n");
	return tb5::tools::kExitOk;
}

} // namespace

int main(int argc, char **argv)
{
	tb5exporter::ServerOptions opts;
	bool once = false;
	std::string web_config, textfile_dir;
	double interval = 15;

	CLI::App app("tb5-exporter: the tb5 links' counters and the NCCL plugin's live "
		     "counters, in the Prometheus text format at /metrics", "tb5-exporter");
	app.set_version_flag("--version", TB5_EXPORTER_VERSION);
	app.add_option("-p,--port", opts.port, "TCP port to listen on")
		->check(CLI::Range(1, 65535))
		->capture_default_str();
	app.add_option("-a,--address", opts.address,
		       "Numeric address to listen on (\"::\": every IPv6 and IPv4 address)")
		->type_name("ADDR")
		->capture_default_str();
	app.add_option("--web-config-file", web_config,
		       "TLS and basic auth, in the Prometheus exporters' web-config format")
		->type_name("FILE")
		->check(CLI::ExistingFile);
	app.add_option("--max-connections", opts.max_connections,
		       "Connections served at once; more wait in the listen queue")
		->check(CLI::Range(1, 1024))
		->capture_default_str();
	app.add_option("--max-connections-per-client", opts.max_per_client,
		       "Connections at once from one client address")
		->check(CLI::Range(1, 1024))
		->capture_default_str();
	auto *tf = app.add_option("--textfile-dir", textfile_dir,
				  "Do not serve HTTP: write tb5.prom into this directory (the "
				  "textfile collector's of prometheus-node-exporter) every "
				  "--interval seconds")
			   ->type_name("DIR")
			   ->check(CLI::ExistingDirectory);
	app.add_option("--interval", interval, "Seconds between two textfile writes")
		->check(CLI::Range(1.0, 86400.0))
		->needs(tf)
		->capture_default_str();
	app.add_flag("--once", once,
		     "Print one scrape on stdout (or write one textfile) and exit");
	app.footer("Exit status: 0, 1 when it cannot listen or write, 2 for bad usage. "
		   "Reference: tb5-exporter(8), docs/install.md (the metrics exporter).");
	try {
		app.parse(argc, argv);
		if (!web_config.empty() && !textfile_dir.empty())
			throw CLI::ValidationError("--web-config-file",
						   "is for HTTP; --textfile-dir serves none");
	} catch (const CLI::ParseError &e) {
		const int rc = app.exit(e);
		return rc == 0 ? tb5::tools::kExitOk : tb5::tools::kExitUsage;
	}

	try {
		return run(opts, web_config, textfile_dir, interval, once);
	} catch (const tb5::tools::UsageError &e) {
		std::fprintf(stderr, "tb5-exporter: %s\n", e.what());
		return tb5::tools::kExitUsage;
	} catch (const tb5::tools::Error &e) {
		std::fprintf(stderr, "tb5-exporter: %s\n", e.what());
		return tb5::tools::kExitFailed;
	}
}
