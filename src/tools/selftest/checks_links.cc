// SPDX-License-Identifier: MIT
//
// checks_links.cc - link:<name>, one line per link (its state and peer), and
// roundtrip:<name>, a data round trip on every ready link: a loop pair (both
// ends on this host) is tested once, end against end, inside this process; a
// cabled or simulated peer must run `tb5-selftest --respond`.
#include "checks.hpp"
#include "echo.hpp"
#include "errors.hpp"
#include "links.hpp"

#include "tb5/tb5.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

namespace tb5selftest {
namespace {

// How long a link that is up may take to become ready.
constexpr auto kSettle = std::chrono::seconds(2);

// The other local link that is @link's peer (a loop pair), or nullptr.
const tb5_link_info *local_peer(const std::vector<tb5_link_info> &links, const tb5_link_info &link)
{
	if (link.state != TB5_LINK_STATE_READY || !link.peer_host)
		return nullptr;
	for (const tb5_link_info &other : links) {
		if (&other != &link && other.local_host == link.peer_host)
			return &other;
	}
	return nullptr;
}

bool selected(const Options &opt, const tb5_link_info &link)
{
	return opt.link.empty() || opt.link == link.name;
}

// Gives links that are up (rings running, peer not heard yet) a moment to
// become ready: a peer that was just plugged in or started. Opening the link
// and polling it lets the simulator's transport run.
void settle(std::vector<tb5_link_info> *links, const Options &opt)
{
	bool any = false;

	for (const tb5_link_info &l : *links)
		any |= l.state == TB5_LINK_STATE_UP && selected(opt, l);
	if (!any)
		return;
	std::vector<tb5_device *> devs;
	for (const tb5_link_info &l : *links) {
		tb5_device *dev = nullptr;
		if (l.state == TB5_LINK_STATE_UP && selected(opt, l) && !tb5_open(l.name, &dev))
			devs.push_back(dev);
	}
	const auto deadline = Clock::now() + kSettle;
	while (Clock::now() < deadline) {
		bool all_ready = true;
		for (tb5_device *dev : devs) {
			tb5_wc wc[4];
			tb5_link_info info {};
			tb5_poll(dev, wc, 4);
			all_ready &= !tb5_query(dev, &info) && info.state == TB5_LINK_STATE_READY;
		}
		if (all_ready)
			break;
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	for (tb5_device *dev : devs)
		tb5_close(dev);
	std::vector<tb5_link_info> again;
	if (!tb5::tools::list_links(&again))
		*links = std::move(again);
}

nlohmann::ordered_json link_json(const tb5_link_info &l)
{
	nlohmann::ordered_json j;

	j["state"] = tb5_link_state_str(l.state);
	j["backend"] = tb5_backend_str(l.backend);
	j["local_host"] = hex(l.local_host);
	j["peer_host"] = hex(l.peer_host);
	j["ring_size"] = l.ring_size;
	j["max_frame"] = l.max_frame;
	j["speed_mbps"] = l.speed_mbps;
	j["max_msg"] = l.max_msg;
	j["loop"] = (l.caps & TB5_CAP_LOOP) != 0;
	return j;
}

// Why a link that is not ready is not: what to look at.
std::string not_ready_reason(const tb5_link_info &l)
{
	const bool sim = l.backend == TB5_BACKEND_SIM;

	if (l.state == TB5_LINK_STATE_UP)
		return sim ? "the peer has not answered (no process in its host slot?)"
			   : "peer has not answered (is tb5 loaded on the peer?)";
	if (sim)
		return "no process in the peer's host slot of the simulated fabric";
	if (l.caps & TB5_CAP_LOOP)
		return std::string("loop pair unplugged: echo 1 > /sys/class/tb5/") + l.name + "/plugged";
	return "no cable or peer down";
}

// The state's name is libtb5's (tb5_link_state_str()); the words after it
// are this check's.
Result check_link(const std::vector<tb5_link_info> &links, const tb5_link_info &l)
{
	const std::string name = std::string("link:") + l.name;
	const std::string state = tb5_link_state_str(l.state);
	Result r;

	if (l.state == TB5_LINK_STATE_READY) {
		const tb5_link_info *local = local_peer(links, l);
		std::string what = state + ", peer host " + hex(l.peer_host);
		if (local)
			what += std::string(" (loop pair with ") + local->name + ")";
		else
			what += l.backend == TB5_BACKEND_SIM ? " (a simulated host)" : " (over the cable)";
		what += format(", ring %u x %u B frames, ", l.ring_size, l.max_frame);
		what += l.speed_mbps ? format("%u Mbps", l.speed_mbps) : std::string("speed not limited");
		r = pass(name, what);
	} else if (l.state == TB5_LINK_STATE_UP) {
		r = skip(name, state + ", host " + hex(l.local_host), not_ready_reason(l));
	} else if (l.state == TB5_LINK_STATE_DOWN) {
		r = skip(name, state, not_ready_reason(l));
	} else {
		r = fail(name, state + format(" state %u", l.state),
			 "libtb5 and tb5-selftest of one release");
	}
	r.data = link_json(l);
	return r;
}

void add_round_trip_figures(Result &r, const ClientResult &c)
{
	nlohmann::ordered_json rtt = nlohmann::ordered_json::object();

	for (const auto &[n, us] : c.rtt_us)
		rtt[std::to_string(n)] = us;
	r.data["messages"] = c.messages;
	r.data["bytes"] = c.bytes;
	r.data["rtt_us"] = rtt;
	r.log.insert(r.log.end(), c.log.begin(), c.log.end());
}

std::string summary(const ClientResult &c)
{
	std::string s = format("%llu messages (", static_cast<unsigned long long>(c.messages));
	for (size_t i = 0; i < c.rtt_us.size(); i++)
		s += (i ? ", " : "") + bytes(c.rtt_us[i].first);
	s += format(") echoed and verified, %llu bytes each way",
		    static_cast<unsigned long long>(c.bytes));
	// The round trip of the smallest non-empty and of the largest message.
	const std::pair<uint64_t, double> *small = nullptr, *large = nullptr;
	for (const auto &p : c.rtt_us) {
		if (p.first && (!small || p.first < small->first))
			small = &p;
		if (!large || p.first > large->first)
			large = &p;
	}
	if (small)
		s += format("; rtt %s %.0f us", bytes(small->first).c_str(), small->second);
	if (large && large != small && large->second > 0)
		s += format(", %s %.0f us (%.2f GB/s)", bytes(large->first).c_str(), large->second,
			    2.0 * static_cast<double>(large->first) / large->second / 1000.0);
	return s;
}

const char kFailHint[] = "run again with --verbose; see dmesg | grep tb5 (on both hosts)";

// Both ends on this host: an echo server on @b in a thread, the client on @a.
Result loop_pair(const tb5_link_info &a, const tb5_link_info &b, const Options &opt)
{
	const std::string name = std::string("roundtrip:") + a.name + "<->" + b.name;
	const auto timeout = std::chrono::milliseconds(opt.timeout_ms());
	std::mutex mu;
	std::condition_variable cv;
	std::vector<ConnectionReport> ended;
	const auto on_end = [&](const ConnectionReport &r) {
		std::lock_guard<std::mutex> lock(mu);
		ended.push_back(r);
		cv.notify_all();
	};
	// A service of this process's own: another selftest may test the same
	// (kernel) loop pair at the same time.
	std::unique_ptr<EchoServer> server;
	for (uint64_t attempt = 0; attempt < 8; attempt++) {
		const uint64_t service = kLoopServiceBase |
			((static_cast<uint64_t>(getpid()) + attempt * 7919) & 0xffff);
		server = std::make_unique<EchoServer>(b.name, service, on_end);
		try {
			server->open();
			break;
		} catch (const tb5::tools::Error &e) {
			if (e.code() != -EADDRINUSE || attempt == 7)
				return fail(name, b.name + std::string(": ") + e.what(), kFailHint);
		}
	}
	tb5_address addr {};
	int err = server->address(&addr);
	if (err)
		return fail(name, std::string("tb5_endpoint_address: ") + tb5_strerror(err), kFailHint);
	if (addr.host != b.local_host || addr.cookie != 0)
		return fail(name, format("the well-known listener on %s has address host %s cookie %s; "
					 "expected host %s cookie 0", b.name, hex(addr.host).c_str(),
					 hex(addr.cookie).c_str(), hex(b.local_host).c_str()),
			    kFailHint);

	std::atomic<bool> stop {false};
	std::atomic<int> serve_error {0};
	std::thread thread([&] {
		while (!stop.load()) {
			const int e = server->serve(20);
			if (e) {
				serve_error = e;
				return;
			}
		}
	});
	const ClientResult c = run_client(a.name, addr, round_trip_sizes(), timeout);
	ConnectionReport seen;
	bool closed = false;
	if (c.outcome == ClientResult::kOk) {
		// The server's side: its end saw every message right, and the close.
		std::unique_lock<std::mutex> lock(mu);
		closed = cv.wait_for(lock, timeout, [&] { return !ended.empty(); });
		if (closed)
			seen = ended.front();
	}
	stop = true;
	thread.join();

	Result r;
	if (c.outcome != ClientResult::kOk)
		r = fail(name, c.error, kFailHint);
	else if (serve_error.load())
		r = fail(name, std::string(b.name) + ": tb5_poll: " + tb5_strerror(serve_error.load()), kFailHint);
	else if (!closed)
		r = fail(name, format("%s did not see the connection closed within %.1f s", b.name,
				      opt.timeout_s), kFailHint);
	else if (seen.mismatches || !seen.error.empty() || seen.messages != c.messages)
		r = fail(name, format("%s received %llu messages, %llu not as sent%s%s", b.name,
				      static_cast<unsigned long long>(seen.messages),
				      static_cast<unsigned long long>(seen.mismatches),
				      seen.error.empty() ? "" : ": ", seen.error.c_str()),
			 kFailHint);
	else
		r = pass(name, summary(c));
	add_round_trip_figures(r, c);
	r.data["link"] = a.name;
	r.data["peer_link"] = b.name;
	return r;
}

// A peer on another host (or simulated host): its responder echoes.
Result remote(const tb5_link_info &l, const Options &opt)
{
	const std::string name = std::string("roundtrip:") + l.name;
	const tb5_address addr = {l.peer_host, kResponderService, 0};
	const ClientResult c = run_client(l.name, addr, round_trip_sizes(),
					 std::chrono::milliseconds(opt.timeout_ms()));
	Result r;

	if (c.outcome == ClientResult::kRefused)
		r = skip(name, "peer host " + hex(l.peer_host),
			 "the peer runs no responder: run `tb5-selftest --respond` there");
	else if (c.outcome == ClientResult::kFailed)
		r = fail(name, "peer host " + hex(l.peer_host) + ": " + c.error, kFailHint);
	else
		r = pass(name, "peer host " + hex(l.peer_host) + ": " + summary(c));
	add_round_trip_figures(r, c);
	r.data["link"] = l.name;
	r.data["peer_host"] = hex(l.peer_host);
	return r;
}

} // namespace

void run_link_checks(const Environment &env, const Options &opt, Report &report)
{
	if (env.sim.empty() && !env.module_loaded) {
		report.add(skip("links", "", "module not loaded"));
		return;
	}
	std::vector<tb5_link_info> links;
	if (const int err = tb5::tools::list_links(&links)) {
		report.add(fail("links", std::string("tb5_list_links: ") + tb5_strerror(err) + ": " +
				tb5_last_error(), env.sim.empty() ? "see dmesg | grep tb5"
								  : "check TB5_SIM (see docs/simulator.md)"));
		return;
	}
	if (links.empty()) {
		report.add(skip("links", "", env.sim.empty()
				? "no loop pairs and no cables: `modprobe tb5 loopback=1` makes a loop pair"
				: "the simulator lists no links (TB5_SIM=" + env.sim + ")"));
		return;
	}
	if (!opt.link.empty() &&
	    std::none_of(links.begin(), links.end(), [&](const tb5_link_info &l) { return opt.link == l.name; })) {
		std::string names;
		for (const tb5_link_info &l : links)
			names += (names.empty() ? "" : ", ") + std::string(l.name);
		report.add(fail("link:" + opt.link, "no such link; the links are: " + names,
				"name one of them with --link"));
		return;
	}
	settle(&links, opt);

	for (const tb5_link_info &l : links) {
		if (selected(opt, l))
			report.add(check_link(links, l));
	}

	std::set<std::string> done;
	bool any = false;
	for (const tb5_link_info &l : links) {
		const tb5_link_info *peer = local_peer(links, l);

		if (!selected(opt, l) && !(peer && selected(opt, *peer)))
			continue;
		if (l.state != TB5_LINK_STATE_READY || done.count(l.name))
			continue;
		any = true;
		done.insert(l.name);
		if (peer) {
			done.insert(peer->name);
			report.add(loop_pair(l, *peer, opt));
		} else {
			report.add(remote(l, opt));
		}
	}
	if (!any)
		report.add(skip("roundtrip", "", "no link is ready"));
}

} // namespace tb5selftest
