// SPDX-License-Identifier: MIT
//
// server.cc - listening, accepting, sessions.
#include "server.h"

#include <cstdio>
#include <cstring>
#include <thread>

#include "bandwidth.h"
#include "clock.h"
#include "environment.h"
#include "errors.h"
#include "latency.h"
#include "run.h"
#include "units.h"

namespace tb5perf {
namespace {

constexpr uint32_t kCtlSlots = 256;
// Buffers a client may ask for: 2 x 8 GiB at most.
constexpr uint64_t kMaxBufferBytes = 8ull << 30;

class InTest {
public:
	explicit InTest(Conn &conn) : conn_(conn)
	{
		conn_.SetInTest(true);
		conn_.SetIdleSleep(false);
	}
	~InTest()
	{
		conn_.SetInTest(false);
		conn_.SetIdleSleep(true);
	}

private:
	Conn &conn_;
};

} // namespace

Server::Server(const Options &opt, std::vector<std::string> links,
	       const std::atomic<bool> *stop)
	: opt_(opt), links_(std::move(links)), stop_(stop)
{
}

Server::~Server() = default;

void Server::Log(const std::string &line) const
{
	if (opt_.quiet)
		return;
	printf("tb5-perf server: %s\n", line.c_str());
	fflush(stdout);
}

bool Server::Stopping() const
{
	return StopRequested() || (stop_ && stop_->load(std::memory_order_relaxed));
}

void Server::OpenPort(const std::string &name, bool wait_ready)
{
	auto port = std::make_unique<Port>();

	port->name = name;
	port->dev = std::make_unique<Device>(name);
	port->info = port->dev->Query();
	// Before listening: a client should not meet a server that can
	// only fail.
	CheckMemory(opt_.memory, &port->info);
	if (port->info.state != TB5_LINK_STATE_READY) {
		if (!wait_ready)
			return;
		Log("waiting for link " + name + " to be ready");
		// Interruptible, and as long as it takes.
		port->info = port->dev->WaitReady(1e9, [this] {
			if (Stopping())
				throw Interrupted();
		});
	}
	port->pool = std::make_unique<CtlPool>(*port->dev, kCtlSlots);
	tb5_endpoint *raw = nullptr;
	const int ret = tb5_endpoint_listen(
		port->dev->get(), opt_.service, TB5_LISTEN_WELL_KNOWN,
		MakeCtx(kCtxListener, static_cast<uint32_t>(ports_.size())), &raw);
	if (ret < 0)
		ThrowApi("tb5_endpoint_listen on " + name + " service " +
				 Hex(opt_.service),
			 ret);
	port->listener.reset(raw);
	Log("listening on " + name + " (" + tb5_backend_str(port->info.backend) +
	    ", host " + Hex(port->info.local_host) + ", peer " +
	    Hex(port->info.peer_host) + ", service " + Hex(opt_.service) + ")");
	ports_.push_back(std::move(port));
}

void Server::Rescan()
{
	// Links that went away are dropped; ready links not served yet (of
	// those named with --link, or all) are taken up. A link that is no
	// longer ready counts as gone: a cable pulled leaves its device down
	// for good, and the link that comes back under the same name is a new
	// device to listen on.
	for (auto &p : ports_) {
		if (p->dead)
			continue;
		try {
			p->dead = p->dev->Query().state != TB5_LINK_STATE_READY;
		} catch (const Error &) {
			p->dead = true;
		}
	}
	std::erase_if(ports_, [this](const std::unique_ptr<Port> &p) {
		if (p->dead)
			Log("link " + p->name + " is gone");
		return p->dead;
	});
	for (const tb5_link_info &l : ListLinks()) {
		if (l.state != TB5_LINK_STATE_READY)
			continue;
		bool wanted = links_.empty();
		for (const std::string &name : links_)
			wanted |= name == l.name;
		if (!wanted)
			continue;
		bool served = false;
		for (const auto &p : ports_)
			served |= p->name == l.name;
		if (served)
			continue;
		try {
			OpenPort(l.name, false);
		} catch (const Interrupted &) {
			throw;
		} catch (const Error &e) {
			Log(std::string("cannot serve ") + l.name + ": " + e.what());
		}
	}
}

void Server::DropPending(Port &port, uint32_t id)
{
	auto it = port.pending.find(id);

	if (it == port.pending.end())
		return;
	it->second.ep.reset();	// cancels its receive
	port.pool->Free(it->second.slot);
	port.pending.erase(it);
}

void Server::Accept(Port &port)
{
	for (;;) {
		const uint32_t id = next_pending_++;
		tb5_endpoint *raw = nullptr;
		const int ret = tb5_endpoint_accept(port.listener.get(),
						    MakeCtx(kCtxPending, id), &raw);
		if (ret == -EAGAIN)
			return;
		if (ret < 0) {
			Log(ApiMessage("tb5_endpoint_accept on " + port.name, ret));
			return;
		}
		Pending p;
		p.ep.reset(raw);
		p.slot = port.pool->Alloc();
		if (p.slot < 0) {
			Log("too many connections waiting; one closed");
			continue;
		}
		const int r = tb5_recv(raw, port.pool->mr(),
				       port.pool->Offset(p.slot), kCtlSize, kTagCtl,
				       MakeUd(kUdPending, id, p.slot));
		if (r < 0) {
			Log(ApiMessage("tb5_recv on a new connection", r));
			port.pool->Free(p.slot);
			continue;
		}
		port.pending.emplace(id, std::move(p));
	}
}

void Server::Background(Port &port, const tb5_wc &wc)
{
	if (wc.kind == TB5_WC_EVENT) {
		switch (CtxKindOf(wc.user_data)) {
		case kCtxListener:
			if (wc.event == TB5_WC_INCOMING) {
				Accept(port);
			} else if (wc.event == TB5_WC_ERROR) {
				Log("the listener on " + port.name + " failed: " +
				    tb5_strerror(wc.status));
				port.dead = true;
			}
			break;
		case kCtxPending:
			if (wc.event != TB5_WC_CONNECTED)
				DropPending(port, CtxOwner(wc.user_data));
			break;
		default:
			break;	// a session endpoint already closed
		}
		return;
	}
	if (UdKindOf(wc.user_data) != kUdPending)
		return;	// left over from a closed session
	const uint32_t id = UdOwner(wc.user_data);
	auto it = port.pending.find(id);
	if (it == port.pending.end())
		return;
	if (wc.status < 0 || wc.bytes != kCtlSize) {
		DropPending(port, id);
		return;
	}
	CtlMsg msg;
	memcpy(&msg, port.pool->Slot(it->second.slot), sizeof(msg));
	EndpointPtr ep = std::move(it->second.ep);
	port.pool->Free(it->second.slot);
	port.pending.erase(it);
	if (msg.magic != kCtlMagic || msg.version != kCtlVersion) {
		Log("a connection that does not speak tb5-perf protocol " +
		    std::to_string(kCtlVersion) + " closed");
		return;
	}
	switch (static_cast<CtlType>(msg.type)) {
	case CtlType::kHello:
		if (session_ || hello_) {
			// One client at a time: this one sees its connection
			// closed.
			Log("a second client turned away (busy)");
			return;
		}
		hello_ = Hello{&port, std::move(ep), msg};
		return;
	case CtlType::kJoin:
		if (session_ && msg.session == session_id_ && msg.index < 1024 &&
		    &session_->dev() == port.dev.get() &&
		    !session_->HasData(msg.index))
			session_->SetData(msg.index, std::move(ep));
		return;
	default:
		return;	// closed
	}
}

void Server::Session(Conn &conn, const CtlMsg &hello, Port &port)
{
	const tb5_link_info info = port.dev->Query();

	if (hello.size > kMaxBufferBytes)
		throw Error("the client asks for 2 x " + FormatSize(hello.size) +
			    " of buffers, more than 2 x " +
			    FormatSize(kMaxBufferBytes));
	conn.AllocRegions(hello.size, opt_.memory);
	CtlMsg welcome = MakeCtl(CtlType::kWelcome);
	welcome.v[kWelHost] = info.local_host;
	welcome.v[kWelMaxOps] = info.max_ops;
	welcome.v[kWelRing] = info.ring_size;
	welcome.v[kWelSpeed] = info.speed_mbps;
	welcome.v[kWelBackend] = info.backend;
	welcome.aux = static_cast<uint64_t>(opt_.memory);
	SetText(welcome, tb5_version());
	conn.SendCtl(welcome);

	for (;;) {
		conn.SetPhase("waiting for the client");
		const CtlMsg msg = conn.WaitAnyCtl();
		switch (static_cast<CtlType>(msg.type)) {
		case CtlType::kOpen: {
			InTest in_test(conn);
			conn.SetPhase("opening data connections");
			for (uint32_t i = 0; i < msg.streams; i++)
				while (!conn.HasData(i))
					conn.Poll();
			conn.SendCtl(MakeCtl(CtlType::kOpened));
			break;
		}
		case CtlType::kRun: {
			const RunSpec spec = FromCtl(msg);
			conn.SetPhase(std::string(TestName(spec.test)) + " " +
				      FormatSize(spec.size));
			conn.SetWait(spec.flags & kRunWait);
			CtlMsg done;
			{
				InTest in_test(conn);
				done = IsLatencyTest(spec.test)
					? ServerPingPong(conn, spec)
					: ServerBandwidth(conn, spec);
			}
			conn.SendCtl(done);
			break;
		}
		case CtlType::kClose:
			conn.CloseData();
			conn.SendCtl(MakeCtl(CtlType::kClosed));
			break;
		case CtlType::kBye:
			return;
		default:
			throw Error(std::string("protocol error: ") +
				    CtlTypeName(msg.type) + " from the client");
		}
	}
}

bool Server::Serve(Hello hello)
{
	Port &port = *hello.port;
	PollSettings ps;
	ps.timeout_s = opt_.timeout_s;
	ps.stop = stop_;
	Conn conn(*port.dev, *port.pool, ps);
	bool ok = true;

	conn.SetBackground([this, &port](const tb5_wc &wc) { Background(port, wc); });
	conn.SetIdleSleep(true);
	conn.AttachCtl(std::move(hello.ep),
		       std::min<uint32_t>(4, port.info.max_ops ? port.info.max_ops : 1));
	session_ = &conn;
	session_id_ = hello.msg.session;
	Log("client session " + Hex(session_id_) + " on " + port.name);
	try {
		Session(conn, hello.msg, port);
		Log("client session " + Hex(session_id_) + " done");
	} catch (const Interrupted &) {
		session_ = nullptr;
		throw;
	} catch (const Error &e) {
		ok = false;
		last_error_ = e.what();
		Log("client session " + Hex(session_id_) + " failed: " + e.what());
		// Tell the client why, if it still listens.
		try {
			CtlMsg err = MakeCtl(CtlType::kError);
			SetText(err, e.what());
			conn.SendCtl(err);
			conn.FlushCtl(0.2);
		} catch (const Error &) {
		}
	}
	session_ = nullptr;
	return ok;
}

int Server::Run()
{
	// What no link changes fails at once rather than per link.
	CheckMemory(opt_.memory, nullptr);
	if (!links_.empty()) {
		for (const std::string &name : links_)
			OpenPort(name, true);
	} else {
		Rescan();
		if (ports_.empty())
			Log("no ready link yet; waiting for one");
	}
	uint64_t last_rescan = NowNs();
	uint64_t last_busy = NowNs();

	while (!Stopping()) {
		bool any = false;
		for (auto &port : ports_) {
			if (port->dead)
				continue;
			tb5_wc wc[32];
			const int n = tb5_poll(port->dev->get(), wc, 32);
			if (n < 0) {
				Log(ApiMessage("tb5_poll on " + port->name, n));
				port->dead = true;
				continue;
			}
			any |= n > 0;
			for (int i = 0; i < n; i++)
				Background(*port, wc[i]);
		}
		if (hello_) {
			Hello hello = std::move(*hello_);
			hello_.reset();
			const bool ok = Serve(std::move(hello));
			if (opt_.once)
				return ok ? kExitOk : kExitFailed;
			last_busy = NowNs();
			continue;
		}
		const uint64_t now = NowNs();
		if (any) {
			last_busy = now;
			continue;
		}
		if (now - last_rescan > 2000000000ull) {
			Rescan();
			last_rescan = now;
		}
		// Spin a little after activity, then sleep.
		if (now - last_busy < 2000000ull)
			continue;
		if (ports_.size() == 1 && !ports_[0]->dead)
			tb5_wait(ports_[0]->dev->get(), 20);
		else
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	return kExitOk;
}

} // namespace tb5perf
