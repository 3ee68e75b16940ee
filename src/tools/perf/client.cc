// SPDX-License-Identifier: MIT
//
// client.cc - the client's side of a session.
#include "client.h"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include "bandwidth.h"
#include "clock.h"
#include "errors.h"
#include "latency.h"
#include "memory_kind.h"
#include "plot.h"
#include "progress.h"
#include "report.h"
#include "sweep.h"
#include "units.h"

namespace tb5perf {
namespace {

constexpr uint32_t kCtlSlots = 64;

uint64_t RandomSession()
{
	uint64_t v = 0;

	while (!v)
		if (getrandom(&v, sizeof(v), 0) != sizeof(v))
			v = static_cast<uint64_t>(getpid()) << 32 ^ NowNs();
	return v;
}

// Marks the data endpoints as in use for the scope.
class InTest {
public:
	explicit InTest(Conn &conn) : conn_(conn) { conn_.SetInTest(true); }
	~InTest() { conn_.SetInTest(false); }

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

EndpointPtr Client::ConnectOne(const tb5_address &addr, uint64_t context,
			       bool retry_refused)
{
	const uint64_t deadline =
		NowNs() + static_cast<uint64_t>(conn_.settings().timeout_s * 1e9);
	bool refused = false;

	for (;;) {
		tb5_endpoint *raw = nullptr;
		const int ret = tb5_endpoint_connect(dev_.get(), &addr, context,
						     &raw);
		if (ret < 0)
			ThrowApi("tb5_endpoint_connect to " + Hex(addr.host) +
					 " over " + dev_.name(),
				 ret);
		EndpointPtr ep(raw);
		// Nothing else is open yet: poll the device directly.
		int status = 0;
		bool connected = false;
		while (!connected && !status) {
			tb5_wc wc[16];
			const int n = Check(tb5_poll(dev_.get(), wc, 16), "tb5_poll");
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
			if (StopRequested() || (conn_.settings().stop &&
						conn_.settings().stop->load()))
				throw Interrupted();
			if (NowNs() > deadline && refused)
				status = -ECONNREFUSED;	// as the last try was
			else if (NowNs() > deadline)
				throw Error("no answer from a tb5-perf server at host " +
					    Hex(addr.host) + " over " + dev_.name() +
					    " (is one running? tb5-perf --server)");
			if (conn_.settings().watchdog)
				conn_.settings().watchdog();
			if (conn_.settings().wait)
				tb5_wait(dev_.get(), 10);
		}
		if (connected)
			return ep;
		if (!retry_refused || status != -ECONNREFUSED || NowNs() > deadline)
			throw Error("cannot connect to a tb5-perf server at host " +
				    Hex(addr.host) + " service " + Hex(addr.service) +
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

void Client::Connect(uint64_t host, uint64_t service, uint64_t buffer_bytes,
		     Memory memory)
{
	const tb5_address addr = {host, service, 0};

	host_ = host;
	service_ = service;
	conn_.SetPhase("connecting");
	conn_.AttachCtl(ConnectOne(addr, MakeCtx(kCtxCtl, 0), true),
			std::min<uint32_t>(4, link_.max_ops ? link_.max_ops : 1));
	session_ = RandomSession();
	CtlMsg hello = MakeCtl(CtlType::kHello);
	hello.session = session_;
	hello.size = buffer_bytes;
	conn_.SendCtl(hello);
	CtlMsg welcome;
	try {
		welcome = conn_.WaitAnyCtl();
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
			    CtlTypeName(welcome.type) + " instead of WELCOME");
	peer_.host = welcome.v[kWelHost];
	peer_.max_ops = static_cast<uint32_t>(welcome.v[kWelMaxOps]);
	peer_.ring_size = static_cast<uint32_t>(welcome.v[kWelRing]);
	peer_.speed_mbps = static_cast<uint32_t>(welcome.v[kWelSpeed]);
	peer_.backend = static_cast<uint32_t>(welcome.v[kWelBackend]);
	const auto peer_memory = MemoryFromWire(welcome.aux);
	peer_.memory = peer_memory ? std::string(MemoryName(*peer_memory))
				   : "unknown";
	peer_.version = Text(welcome);
	conn_.AllocRegions(buffer_bytes, memory);
	conn_.SetPhase("connected");
}

void Client::Open(uint32_t n)
{
	const tb5_address addr = {host_, service_, 0};
	InTest in_test(conn_);
	uint32_t connected = 0;

	conn_.SetPhase("opening " + std::to_string(n) + " data connections");
	CtlMsg open = MakeCtl(CtlType::kOpen);
	open.session = session_;
	open.streams = n;
	conn_.SendCtl(open);
	for (uint32_t i = 0; i < n; i++) {
		tb5_endpoint *raw = nullptr;
		const int ret = tb5_endpoint_connect(dev_.get(), &addr,
						     MakeCtx(kCtxData, i), &raw);
		if (ret < 0)
			ThrowApi("tb5_endpoint_connect (data " +
					 std::to_string(i) + ")",
				 ret);
		conn_.SetData(i, EndpointPtr(raw));
	}
	while (connected < n) {
		for (const tb5_wc &wc : conn_.Poll()) {
			if (wc.kind != TB5_WC_EVENT || wc.event != TB5_WC_CONNECTED)
				throw Error("protocol error: data before OPENED");
			connected++;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		CtlMsg join = MakeCtl(CtlType::kJoin);
		join.session = session_;
		join.index = i;
		conn_.SendCtl(join, conn_.data(i));
	}
	conn_.WaitCtl(CtlType::kOpened);
	open_ = n;
}

void Client::Close()
{
	conn_.SetPhase("closing data connections");
	conn_.SetInTest(false);
	conn_.CloseData();
	conn_.SendCtl(MakeCtl(CtlType::kClose));
	conn_.WaitCtl(CtlType::kClosed);
	open_ = 0;
}

void Client::Bye()
{
	conn_.SetPhase("saying goodbye");
	conn_.SendCtl(MakeCtl(CtlType::kBye));
	conn_.SetClosing();
	conn_.FlushCtl(conn_.settings().timeout_s);
}

RunResult Client::Run(const RunSpec &spec)
{
	const bool own = spec.test == Test::kLatLoad;

	if (own)
		Open(2);
	else if (open_ < DataEndpoints(spec))
		throw Error("internal: a run without its data connections");
	conn_.SetPhase(std::string(TestName(spec.test)) + " " +
		       FormatSize(spec.size));
	RunResult r;
	{
		InTest in_test(conn_);
		r = IsLatencyTest(spec.test) ? ClientPingPong(conn_, spec)
					     : ClientBandwidth(conn_, spec);
	}
	if (own)
		Close();
	return r;
}

int RunClient(const Options &opt, const std::string &link_name,
	      const std::string &mode, const std::function<void()> &watchdog)
{
	Device dev(link_name);
	// Before waiting for the link, and before the server registers
	// anything for us: a link's backend and caps are known when down.
	const tb5_link_info first = dev.Query();
	CheckMemory(opt.memory, &first);
	const tb5_link_info link = dev.WaitReady(opt.timeout_s, watchdog);
	PollSettings ps;
	ps.wait = opt.wait;
	ps.timeout_s = opt.timeout_s;
	ps.watchdog = watchdog;
	Client client(dev, link, ps);
	Progress progress(opt.progress == 1 ||
			  (opt.progress == -1 && isatty(STDERR_FILENO)));
	Report report(opt, progress);

	progress.Update("connecting to the server over " + link_name, true);
	client.Connect(link.peer_host, opt.service,
		       BufferBytesFor(opt, link.max_ops), opt.memory);
	report.SetEnvironment(MakeEnvironment(opt, mode, client.link(),
					      client.peer()));
	try {
		Sweep(client, opt, report, progress).Run();
		client.Bye();
	} catch (const Error &e) {
		progress.Clear();
		report.Fail(e.what());
		throw;
	}
	progress.Clear();
	report.Finish();
	// After the results are printed and saved: a plot that fails loses
	// none of them.
	if (!opt.plot.empty())
		DrawPlot(opt, report.rows(), report.environment());
	return kExitOk;
}

} // namespace tb5perf
