// SPDX-License-Identifier: MIT
//
// respond.cc - `tb5-selftest --respond`: the echo server that the peer's
// roundtrip check connects to. It listens (well-known service
// kResponderService) on every link of this host, or on --link NAME, in any
// state (a link that is down is listened on once it comes up), and echoes
// every message of every connection until SIGINT/SIGTERM, or until --count
// connections have ended. One line per connection.
#include "checks.hpp"
#include "echo.hpp"
#include "errors.hpp"
#include "links.hpp"

#include "tb5/tb5.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tb5selftest {
namespace {

constexpr auto kRetry = std::chrono::milliseconds(200);	// listen again
constexpr auto kRescan = std::chrono::seconds(2);		// look for new links

class Responder {
public:
	explicit Responder(const Options &opt) : opt_(opt) {}

	int run();

private:
	void scan();
	void serve(const std::string &link);
	void print(const nlohmann::ordered_json &event, const std::string &text);
	void ended(const ConnectionReport &r);

	const Options &opt_;
	std::mutex out_mu_;
	std::atomic<bool> stop_ {false};
	std::atomic<uint64_t> served_ {0};
	std::atomic<bool> errors_ {false};
	std::map<std::string, std::thread> workers_;
};

void Responder::print(const nlohmann::ordered_json &event, const std::string &text)
{
	std::lock_guard<std::mutex> lock(out_mu_);

	if (opt_.json)
		printf("%s\n", event.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
	else
		printf("respond: %s\n", text.c_str());
	fflush(stdout);
}

void Responder::ended(const ConnectionReport &r)
{
	const bool ok = r.error.empty() && !r.mismatches;
	nlohmann::ordered_json j;

	j["event"] = "connection";
	j["link"] = r.link;
	j["number"] = r.number;
	j["peer_host"] = hex(r.peer_host);
	j["messages"] = r.messages;
	j["bytes"] = r.bytes;
	j["mismatches"] = r.mismatches;
	j["error"] = r.error;
	j["seconds"] = r.seconds;
	j["status"] = ok ? "PASS" : "FAIL";
	std::string text = format("%s connection %llu from host %s: %llu messages, %llu bytes echoed, ",
				  r.link.c_str(), static_cast<unsigned long long>(r.number),
				  hex(r.peer_host).c_str(), static_cast<unsigned long long>(r.messages),
				  static_cast<unsigned long long>(r.bytes));
	if (r.mismatches)
		text += format("%llu NOT as sent", static_cast<unsigned long long>(r.mismatches));
	else
		text += "all as sent";
	text += r.error.empty() ? ", closed by the peer" : ", ended: " + r.error;
	text += format(" after %.3f s", r.seconds);
	if (!ok)
		errors_ = true;
	print(j, text);
	served_++;
}

void Responder::serve(const std::string &link)
{
	std::unique_ptr<EchoServer> server;
	std::string last_error;

	while (!stop_.load()) {
		if (!server)
			server = std::make_unique<EchoServer>(link, kResponderService,
							      [this](const ConnectionReport &r) { ended(r); });
		if (!server->listening()) {
			try {
				server->open();
			} catch (const tb5::tools::Error &e) {
				const std::string error = e.what();
				if (error != last_error)
					print({{"event", "waiting"}, {"link", link}, {"error", error}},
					      link + ": cannot listen yet (" + error + "); trying again");
				last_error = error;
				std::this_thread::sleep_for(kRetry);
				continue;
			}
			last_error.clear();
			const tb5_link_info &info = server->info();
			print({{"event", "listening"}, {"link", link}, {"service", hex(kResponderService)},
			       {"local_host", hex(info.local_host)}},
			      format("listening on %s (host %s, service %s)", link.c_str(),
				     hex(info.local_host).c_str(), hex(kResponderService).c_str()));
		}
		const int err = server->serve(100);
		if (err) {
			print({{"event", "lost"}, {"link", link}, {"error", tb5_strerror(err)}},
			      link + ": " + tb5_strerror(err) + "; opening it again");
			server.reset();
			std::this_thread::sleep_for(kRetry);
		}
	}
}

void Responder::scan()
{
	std::vector<tb5_link_info> links;

	if (tb5::tools::list_links(&links))
		return;
	for (const tb5_link_info &l : links) {
		const std::string name = l.name;
		if ((opt_.link.empty() || opt_.link == name) && !workers_.count(name))
			workers_.emplace(name, std::thread([this, name] { serve(name); }));
	}
}

int Responder::run()
{
	sigset_t set;

	// Before any thread exists (libtb5's included): only sigtimedwait()
	// below takes these signals.
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, nullptr);

	std::vector<tb5_link_info> links;
	if (const int err = tb5::tools::list_links(&links))
		throw tb5::tools::Error(std::string("tb5_list_links: ") + tb5_strerror(err) + ": " +
					tb5_last_error(), err);
	bool found = opt_.link.empty() && !links.empty();
	for (const tb5_link_info &l : links)
		found |= opt_.link == l.name;
	if (!found && opt_.link.empty())
		throw tb5::tools::Error("no links to serve (no cable, no loop pair; "
					"modprobe tb5 loopback=1, or set TB5_SIM)");
	if (!found)
		throw tb5::tools::Error("no link " + opt_.link);

	scan();
	auto next_scan = Clock::now() + kRescan;
	while (!stop_.load()) {
		const struct timespec tick = {0, 100 * 1000 * 1000};
		const int sig = sigtimedwait(&set, nullptr, &tick);
		if (sig == SIGINT || sig == SIGTERM)
			stop_ = true;
		if (opt_.count && served_.load() >= opt_.count)
			stop_ = true;
		if (!stop_.load() && Clock::now() >= next_scan) {
			scan();
			next_scan = Clock::now() + kRescan;
		}
	}
	for (auto &[name, thread] : workers_)
		thread.join();
	print({{"event", "stopped"}, {"connections", served_.load()}},
	      format("stopped after %llu connection%s", static_cast<unsigned long long>(served_.load()),
		     served_.load() == 1 ? "" : "s"));
	return errors_.load() ? 1 : 0;
}

} // namespace

int run_responder(const Options &opt)
{
	Responder responder(opt);

	return responder.run();
}

} // namespace tb5selftest
