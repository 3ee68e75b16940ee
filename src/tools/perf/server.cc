// SPDX-License-Identifier: MIT
//
// server.cc - listening, accepting, sessions.
#include "server.hpp"

#include <cstdio>
#include <cstring>
#include <thread>

#include "clock.hpp"
#include "environment.hpp"
#include "errors.hpp"
#include "measure.hpp"
#include "run.hpp"
#include "units.hpp"

namespace tb5perf {
namespace {

constexpr uint32_t kCtlSlots = 256;
// Buffers a client may ask for: 2 x 8 GiB at most.
constexpr uint64_t kMaxBufferBytes = 8ull << 30;

class InTest {
public:
	explicit InTest(Conn &conn) : conn_(conn)
	{
		conn_.set_in_test(true);
		conn_.set_idle_sleep(false);
	}
	~InTest()
	{
		conn_.set_in_test(false);
		conn_.set_idle_sleep(true);
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

void Server::log(const std::string &line) const
{
	if (opt_.quiet)
		return;
	printf("tb5-perf server: %s\n", line.c_str());
	fflush(stdout);
}

bool Server::stopping() const
{
	return stop_requested() || (stop_ && stop_->load(std::memory_order_relaxed));
}

void Server::open_port(const std::string &name, bool wait_ready)
{
	auto port = std::make_unique<Port>();

	port->name = name;
	port->dev = std::make_unique<Device>(name);
	port->info = port->dev->query();
	// Before listening: a client should not meet a server that can
	// only fail.
	check_memory(opt_.memory, &port->info);
	if (port->info.state != TB5_LINK_STATE_READY) {
		if (!wait_ready)
			return;
		log("waiting for link " + name + " to be ready");
		// Interruptible, and as long as it takes.
		port->info = port->dev->wait_ready(1e9, [this] {
			if (stopping())
				throw Interrupted();
		});
	}
	port->pool = std::make_unique<CtlPool>(*port->dev, kCtlSlots);
	tb5_endpoint *raw = nullptr;
	const int ret = tb5_endpoint_listen(
		port->dev->get(), opt_.service, TB5_LISTEN_WELL_KNOWN,
		make_ctx(kCtxListener, static_cast<uint32_t>(ports_.size())), &raw);
	if (ret < 0)
		throw_api("tb5_endpoint_listen on " + name + " service " +
				 hex(opt_.service),
			 ret);
	port->listener.reset(raw);
	log("listening on " + name + " (" + tb5_backend_str(port->info.backend) +
	    ", host " + hex(port->info.local_host) + ", peer " +
	    hex(port->info.peer_host) + ", service " + hex(opt_.service) + ")");
	ports_.push_back(std::move(port));
}

void Server::rescan()
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
			p->dead = p->dev->query().state != TB5_LINK_STATE_READY;
		} catch (const Error &) {
			p->dead = true;
		}
	}
	std::erase_if(ports_, [this](const std::unique_ptr<Port> &p) {
		if (p->dead)
			log("link " + p->name + " is gone");
		return p->dead;
	});
	for (const tb5_link_info &l : list_links()) {
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
			open_port(l.name, false);
		} catch (const Interrupted &) {
			throw;
		} catch (const Error &e) {
			log(std::string("cannot serve ") + l.name + ": " + e.what());
		}
	}
}

void Server::drop_pending(Port &port, uint32_t id)
{
	auto it = port.pending.find(id);

	if (it == port.pending.end())
		return;
	it->second.ep.reset();	// cancels its receive
	port.pool->free(it->second.slot);
	port.pending.erase(it);
}

void Server::accept(Port &port)
{
	for (;;) {
		const uint32_t id = next_pending_++;
		tb5_endpoint *raw = nullptr;
		const int ret = tb5_endpoint_accept(port.listener.get(),
						    make_ctx(kCtxPending, id), &raw);
		if (ret == -EAGAIN)
			return;
		if (ret < 0) {
			log(api_message("tb5_endpoint_accept on " + port.name, ret));
			return;
		}
		Pending p;
		p.ep.reset(raw);
		p.slot = port.pool->alloc();
		if (p.slot < 0) {
			log("too many connections waiting; one closed");
			continue;
		}
		const int r = tb5_recv(raw, port.pool->mr(),
				       port.pool->offset(p.slot), kCtlSize, kTagCtl,
				       make_ud(kUdPending, id, p.slot));
		if (r < 0) {
			log(api_message("tb5_recv on a new connection", r));
			port.pool->free(p.slot);
			continue;
		}
		port.pending.emplace(id, std::move(p));
	}
}

void Server::background(Port &port, const tb5_wc &wc)
{
	if (wc.kind == TB5_WC_EVENT) {
		switch (ctx_kind_of(wc.user_data)) {
		case kCtxListener:
			if (wc.event == TB5_WC_INCOMING) {
				accept(port);
			} else if (wc.event == TB5_WC_ERROR) {
				log("the listener on " + port.name + " failed: " +
				    tb5_strerror(wc.status));
				port.dead = true;
			}
			break;
		case kCtxPending:
			if (wc.event != TB5_WC_CONNECTED)
				drop_pending(port, ctx_owner(wc.user_data));
			break;
		default:
			break;	// a session endpoint already closed
		}
		return;
	}
	if (ud_kind_of(wc.user_data) != kUdPending)
		return;	// left over from a closed session
	const uint32_t id = ud_owner(wc.user_data);
	auto it = port.pending.find(id);
	if (it == port.pending.end())
		return;
	if (wc.status < 0 || wc.bytes != kCtlSize) {
		drop_pending(port, id);
		return;
	}
	CtlMsg msg;
	memcpy(&msg, port.pool->slot(it->second.slot), sizeof(msg));
	EndpointPtr ep = std::move(it->second.ep);
	port.pool->free(it->second.slot);
	port.pending.erase(it);
	if (msg.magic != kCtlMagic || msg.version != kCtlVersion) {
		log("a connection that does not speak tb5-perf protocol " +
		    std::to_string(kCtlVersion) + " closed");
		return;
	}
	switch (static_cast<CtlType>(msg.type)) {
	case CtlType::kHello:
		if (session_ || hello_) {
			// One client at a time: this one sees its connection
			// closed.
			log("a second client turned away (busy)");
			return;
		}
		hello_ = Hello{&port, std::move(ep), msg};
		return;
	case CtlType::kJoin:
		if (session_ && msg.session == session_id_ && msg.index < 1024 &&
		    &session_->dev() == port.dev.get() &&
		    !session_->has_data(msg.index))
			session_->set_data(msg.index, std::move(ep));
		return;
	default:
		return;	// closed
	}
}

void Server::session(Conn &conn, const CtlMsg &hello, Port &port)
{
	const tb5_link_info info = port.dev->query();

	if (hello.size > kMaxBufferBytes)
		throw Error("the client asks for 2 x " + format_size(hello.size) +
			    " of buffers, more than 2 x " +
			    format_size(kMaxBufferBytes));
	conn.alloc_regions(hello.size, opt_.memory);
	CtlMsg welcome = make_ctl(CtlType::kWelcome);
	welcome.v[kWelHost] = info.local_host;
	welcome.v[kWelMaxOps] = info.max_ops;
	welcome.v[kWelRing] = info.ring_size;
	welcome.v[kWelSpeed] = info.speed_mbps;
	welcome.v[kWelBackend] = info.backend;
	welcome.aux = static_cast<uint64_t>(opt_.memory);
	set_text(welcome, tb5_version());
	conn.send_ctl(welcome);

	for (;;) {
		conn.set_phase("waiting for the client");
		const CtlMsg msg = conn.wait_any_ctl();
		switch (static_cast<CtlType>(msg.type)) {
		case CtlType::kOpen: {
			InTest in_test(conn);
			conn.set_phase("opening data connections");
			for (uint32_t i = 0; i < msg.streams; i++)
				while (!conn.has_data(i))
					conn.poll();
			conn.send_ctl(make_ctl(CtlType::kOpened));
			break;
		}
		case CtlType::kRun: {
			const RunSpec spec = from_ctl(msg);
			conn.set_phase(std::string(test_name(spec.test)) + " " +
				      format_size(spec.size));
			conn.set_wait(spec.flags & kRunWait);
			CtlMsg done;
			{
				InTest in_test(conn);
				done = is_latency_test(spec.test)
					? server_ping_pong(conn, spec)
					: server_bandwidth(conn, spec);
			}
			conn.send_ctl(done);
			break;
		}
		case CtlType::kClose:
			conn.close_data();
			conn.send_ctl(make_ctl(CtlType::kClosed));
			break;
		case CtlType::kBye:
			return;
		default:
			throw Error(std::string("protocol error: ") +
				    ctl_type_name(msg.type) + " from the client");
		}
	}
}

bool Server::serve(Hello hello)
{
	Port &port = *hello.port;
	PollSettings ps;
	ps.timeout_s = opt_.timeout_s;
	ps.stop = stop_;
	Conn conn(*port.dev, *port.pool, ps);
	bool ok = true;

	conn.set_background([this, &port](const tb5_wc &wc) { background(port, wc); });
	conn.set_idle_sleep(true);
	conn.attach_ctl(std::move(hello.ep),
		       std::min<uint32_t>(4, port.info.max_ops ? port.info.max_ops : 1));
	session_ = &conn;
	session_id_ = hello.msg.session;
	log("client session " + hex(session_id_) + " on " + port.name);
	try {
		session(conn, hello.msg, port);
		log("client session " + hex(session_id_) + " done");
	} catch (const Interrupted &) {
		session_ = nullptr;
		throw;
	} catch (const Error &e) {
		ok = false;
		last_error_ = e.what();
		log("client session " + hex(session_id_) + " failed: " + e.what());
		// Tell the client why, if it still listens.
		try {
			CtlMsg err = make_ctl(CtlType::kError);
			set_text(err, e.what());
			conn.send_ctl(err);
			conn.flush_ctl(0.2);
		} catch (const Error &) {
		}
	}
	session_ = nullptr;
	return ok;
}

int Server::run()
{
	// What no link changes fails at once rather than per link.
	check_memory(opt_.memory, nullptr);
	if (!links_.empty()) {
		for (const std::string &name : links_)
			open_port(name, true);
	} else {
		rescan();
		if (ports_.empty())
			log("no ready link yet; waiting for one");
	}
	uint64_t last_rescan = now_ns();
	uint64_t last_busy = now_ns();

	while (!stopping()) {
		bool any = false;
		for (auto &port : ports_) {
			if (port->dead)
				continue;
			tb5_wc wc[32];
			const int n = tb5_poll(port->dev->get(), wc, 32);
			if (n < 0) {
				log(api_message("tb5_poll on " + port->name, n));
				port->dead = true;
				continue;
			}
			any |= n > 0;
			for (int i = 0; i < n; i++)
				background(*port, wc[i]);
		}
		if (hello_) {
			Hello hello = std::move(*hello_);
			hello_.reset();
			const bool ok = serve(std::move(hello));
			if (opt_.once)
				return ok ? kExitOk : kExitFailed;
			last_busy = now_ns();
			continue;
		}
		const uint64_t now = now_ns();
		if (any) {
			last_busy = now;
			continue;
		}
		if (now - last_rescan > 2000000000ull) {
			rescan();
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
