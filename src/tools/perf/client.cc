// SPDX-License-Identifier: MIT
//
// client.cc - the client's side of a session.
#include "client.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include "clock.hpp"
#include "errors.hpp"
#include "measure.hpp"
#include "memory_kind.hpp"
#include "plot.hpp"
#include "progress.hpp"
#include "report.hpp"
#include "sweep.hpp"
#include "units.hpp"

namespace tb5perf {
namespace {

constexpr uint32_t kCtlSlots = 64;

uint64_t random_session()
{
	uint64_t v = 0;

	while (!v)
		if (getrandom(&v, sizeof(v), 0) != sizeof(v))
			v = static_cast<uint64_t>(getpid()) << 32 ^ now_ns();
	return v;
}

// Marks the data endpoints as in use for the scope.
class InTest {
public:
	explicit InTest(Conn &conn) : conn_(conn) { conn_.set_in_test(true); }
	~InTest() { conn_.set_in_test(false); }

private:
	Conn &conn_;
};

} // namespace

Client::Client(Device &dev, const tb5_link_info &link, PollSettings settings)
	: dev_(dev), link_(link), pool_(dev, kCtlSlots),
	  conn_(dev, pool_, std::move(settings))
{
}

uint32_t Client::max_ops() const
{
	uint32_t n = link_.max_ops ? link_.max_ops : 1;

	if (peer_.max_ops)
		n = std::min(n, peer_.max_ops);
	return n;
}

EndpointPtr Client::connect_one(const tb5_address &addr, uint64_t context,
			       bool retry_refused)
{
	const uint64_t deadline =
		now_ns() + static_cast<uint64_t>(conn_.settings().timeout_s * 1e9);
	bool refused = false;

	for (;;) {
		tb5_endpoint *raw = nullptr;
		const int ret = tb5_endpoint_connect(dev_.get(), &addr, context,
						     &raw);
		if (ret < 0)
			throw_api("tb5_endpoint_connect to " + hex(addr.host) +
					 " over " + dev_.name(),
				 ret);
		EndpointPtr ep(raw);
		// Nothing else is open yet: poll the device directly.
		int status = 0;
		bool connected = false;
		while (!connected && !status) {
			tb5_wc wc[16];
			const int n = check(tb5_poll(dev_.get(), wc, 16), "tb5_poll");
			for (int i = 0; i < n; i++) {
				if (wc[i].kind != TB5_WC_EVENT || wc[i].ep != ep.get())
					continue;
				if (wc[i].event == TB5_WC_CONNECTED)
					connected = true;
				else
					status = wc[i].status ? wc[i].status
							      : -ECONNRESET;
			}
			if (n)
				continue;
			if (stop_requested() || (conn_.settings().stop &&
						conn_.settings().stop->load()))
				throw Interrupted();
			if (now_ns() > deadline && refused)
				status = -ECONNREFUSED;	// as the last try was
			else if (now_ns() > deadline)
				throw Error("no answer from a tb5-perf server at host " +
					    hex(addr.host) + " over " + dev_.name() +
					    " (is one running? tb5-perf --server)");
			if (conn_.settings().watchdog)
				conn_.settings().watchdog();
			if (conn_.settings().wait)
				tb5_wait(dev_.get(), 10);
		}
		if (connected)
			return ep;
		if (!retry_refused || status != -ECONNREFUSED || now_ns() > deadline)
			throw Error("cannot connect to a tb5-perf server at host " +
				    hex(addr.host) + " service " + hex(addr.service) +
				    " over " + dev_.name() + ": " +
				    tb5_strerror(status) +
				    (status == -ECONNREFUSED
					     ? " (is one running? tb5-perf --server)"
					     : ""));
		// Nobody listens yet (a server that is starting): again.
		refused = true;
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
	}
}

void Client::connect(uint64_t host, uint64_t service, uint64_t buffer_bytes,
		     Memory memory)
{
	const tb5_address addr = {host, service, 0};

	host_ = host;
	service_ = service;
	conn_.set_phase("connecting");
	conn_.attach_ctl(connect_one(addr, make_ctx(kCtxCtl, 0), true),
			std::min<uint32_t>(4, link_.max_ops ? link_.max_ops : 1));
	session_ = random_session();
	CtlMsg hello = make_ctl(CtlType::kHello);
	hello.session = session_;
	hello.size = buffer_bytes;
	conn_.send_ctl(hello);
	CtlMsg welcome;
	try {
		welcome = conn_.wait_any_ctl();
	} catch (const Interrupted &) {
		throw;
	} catch (const Error &e) {
		throw Error(std::string(e.what()) +
			    "; is the server busy with another client?");
	}
	if (welcome.type == static_cast<uint16_t>(CtlType::kBusy))
		throw Error("the server is busy with another client");
	if (welcome.type != static_cast<uint16_t>(CtlType::kWelcome))
		throw Error(std::string("protocol error: ") +
			    ctl_type_name(welcome.type) + " instead of WELCOME");
	peer_.host = welcome.v[kWelHost];
	peer_.max_ops = static_cast<uint32_t>(welcome.v[kWelMaxOps]);
	peer_.ring_size = static_cast<uint32_t>(welcome.v[kWelRing]);
	peer_.speed_mbps = static_cast<uint32_t>(welcome.v[kWelSpeed]);
	peer_.backend = static_cast<uint32_t>(welcome.v[kWelBackend]);
	const auto peer_memory = by_number(kMemoryNames, welcome.aux);
	peer_.memory = peer_memory ? std::string(memory_name(*peer_memory))
				   : "unknown";
	peer_.version = text(welcome);
	conn_.alloc_regions(buffer_bytes, memory);
	conn_.set_phase("connected");
}

void Client::open(uint32_t n)
{
	const tb5_address addr = {host_, service_, 0};
	InTest in_test(conn_);
	uint32_t connected = 0;

	conn_.set_phase("opening " + std::to_string(n) + " data connections");
	CtlMsg open = make_ctl(CtlType::kOpen);
	open.session = session_;
	open.streams = n;
	conn_.send_ctl(open);
	for (uint32_t i = 0; i < n; i++) {
		tb5_endpoint *raw = nullptr;
		const int ret = tb5_endpoint_connect(dev_.get(), &addr,
						     make_ctx(kCtxData, i), &raw);
		if (ret < 0)
			throw_api("tb5_endpoint_connect (data " +
					 std::to_string(i) + ")",
				 ret);
		conn_.set_data(i, EndpointPtr(raw));
	}
	while (connected < n) {
		for (const tb5_wc &wc : conn_.poll()) {
			if (wc.kind != TB5_WC_EVENT || wc.event != TB5_WC_CONNECTED)
				throw Error("protocol error: data before OPENED");
			connected++;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		CtlMsg join = make_ctl(CtlType::kJoin);
		join.session = session_;
		join.index = i;
		conn_.send_ctl(join, conn_.data(i));
	}
	conn_.wait_ctl(CtlType::kOpened);
	open_ = n;
}

void Client::close()
{
	conn_.set_phase("closing data connections");
	conn_.set_in_test(false);
	conn_.close_data();
	conn_.send_ctl(make_ctl(CtlType::kClose));
	conn_.wait_ctl(CtlType::kClosed);
	open_ = 0;
}

void Client::bye()
{
	conn_.set_phase("saying goodbye");
	conn_.send_ctl(make_ctl(CtlType::kBye));
	conn_.set_closing();
	conn_.flush_ctl(conn_.settings().timeout_s);
}

RunResult Client::run(const RunSpec &spec)
{
	const bool own = spec.test == Test::kLatLoad;

	if (own)
		open(2);
	else if (open_ < data_endpoints(spec))
		throw Error("internal: a run without its data connections");
	conn_.set_phase(std::string(test_name(spec.test)) + " " +
		       format_size(spec.size));
	RunResult r;
	{
		InTest in_test(conn_);
		r = is_latency_test(spec.test) ? client_ping_pong(conn_, spec)
					     : client_bandwidth(conn_, spec);
	}
	if (own)
		close();
	return r;
}

int run_client(const Options &opt, const std::string &link_name,
	      const std::string &mode, const std::function<void()> &watchdog)
{
	Device dev(link_name);
	// Before waiting for the link, and before the server registers
	// anything for us: a link's backend and caps are known when down.
	const tb5_link_info first = dev.query();
	check_memory(opt.memory, &first);
	const tb5_link_info link = dev.wait_ready(opt.timeout_s, watchdog);
	PollSettings ps;
	ps.wait = opt.wait;
	ps.timeout_s = opt.timeout_s;
	ps.watchdog = watchdog;
	Client client(dev, link, ps);
	Progress progress(opt.progress == 1 ||
			  (opt.progress == -1 && isatty(STDERR_FILENO)));
	Report report(opt, progress);

	progress.update("connecting to the server over " + link_name, true);
	client.connect(link.peer_host, opt.service,
		       buffer_bytes_for(opt, link.max_ops), opt.memory);
	report.set_environment(make_environment(opt, mode, client.link(),
					      client.peer()));
	try {
		Sweep(client, opt, report, progress).run();
		client.bye();
	} catch (const Error &e) {
		progress.clear();
		report.fail(e.what());
		throw;
	}
	progress.clear();
	report.finish();
	// After the results are printed and saved: a plot that fails loses
	// none of them.
	if (!opt.plot.empty())
		draw_plot(opt, report.rows(), report.environment());
	return kExitOk;
}

} // namespace tb5perf
