// SPDX-License-Identifier: MIT
//
// connect.cc - connection set-up: the handle, listen, connect, accept,
// and closing what they made.
//
// Connections follow the design brief's mesh routing: a listener listens
// on every link of its host (a host's cables share one host id), with a
// random service id that the handle carries; a connector uses a link
// whose peer is the listener's host, whatever device NCCL named: the named
// device's own link when it reaches that host, else, of the K links that
// do, the one at the device's index modulo K, so that the channels NCCL
// spreads over its devices spread over parallel cables too.
//
// Nothing blocks: listen returns at once, connect and accept hand back a
// comm once libtb5 reports the endpoint connected.
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <random>

#include <sys/random.h>

#include "env.hpp"
#include "links.hpp"
#include "log.hpp"
#include "state.hpp"

namespace tb5net {

namespace {

constexpr uint32_t kHandleMagic = 0x4e354254;	// "TB5N"
constexpr uint16_t kHandleVersion = 1;
// Service ids of NCCL listeners: this prefix, then 48 random bits.
constexpr uint64_t kServicePrefix = 0x4e43ull << 48;	// "NC"
constexpr uint64_t kServiceMask = (1ull << 48) - 1;

// What listen() writes and the peer's connect() reads. The connector keeps
// its connection attempt in `stage` of its own copy (NCCL passes the same
// handle to every connect() call of one connection); a stage that does not
// name one of our attempts is ignored, so a handle from the wire is never
// trusted as a pointer.
struct Handle {
	uint32_t magic;
	uint16_t version;
	uint16_t reserved0;
	uint64_t host;			// the listener's host id
	uint64_t service;		// the listener's service id
	uint64_t cookie;		// 0: the listener is well-known on every link
	char link[TB5_NAME_MAX];	// the listener's link, for messages
	uint64_t stage;			// connector-local: its attempt, or 0
	// The listener's host name (gethostname), for messages only; all
	// zeros from a listener of a plugin before 0.2.0. Untrusted: read
	// through host_name().
	char host_name[48];
	uint8_t reserved[128 - 120];
};
static_assert(sizeof(Handle) == NCCL_NET_HANDLE_MAXSIZE);

uint64_t random64()
{
	uint64_t x = 0;
	if (getrandom(&x, sizeof(x), 0) != (ssize_t)sizeof(x)) {
		std::random_device rd;
		x = ((uint64_t)rd() << 32) ^ rd();
	}
	return x;
}

// The links a listener on NCCL device @dev listens on: every link of the
// same host as the device's (first) link. g.mu held.
std::vector<int> listen_links_locked(int dev)
{
	const NetDev &nd = g.devs[dev];
	uint64_t host = g.links[nd.links[0]].local_host;
	std::vector<int> out = nd.links;
	for (int i = 0; i < (int)g.links.size(); i++)
		if (g.links[i].local_host == host &&
		    std::find(out.begin(), out.end(), i) == out.end())
			out.push_back(i);
	return out;
}

// The link that reaches @host now: @preferred when it is one of those,
// else the (@dev mod K)-th of the K that do, in listing order (parallel
// cables to one peer share the channels NCCL spreads over its devices).
// Its name, or "" (with *pending set when a link is still coming up and
// might turn out to be the one). While @wait_preferred, a @preferred link
// that is still coming up is waited for rather than passed over: the
// other end's cables come up one after the other, and taking whichever is
// up first would put every channel on one cable.
std::string route_to(uint64_t host, const std::string &preferred, int dev, bool wait_preferred,
		     bool *pending)
{
	bool preferred_coming = false;
	*pending = false;
	std::vector<tb5_link_info> links;
	if (tb5::tools::list_links(&links) < 0)
		return {};
	std::vector<std::string> reach;
	for (const tb5_link_info &l : links) {
		if (l.state != TB5_LINK_STATE_READY) {
			*pending = true;
			preferred_coming = preferred_coming || preferred == l.name;
			continue;
		}
		if (l.peer_host == host)
			reach.emplace_back(l.name);
	}
	if (reach.empty())
		return {};
	if (std::find(reach.begin(), reach.end(), preferred) != reach.end())
		return preferred;
	if (preferred_coming && wait_preferred)
		return {};
	return reach[(size_t)std::max(dev, 0) % reach.size()];
}

// Closes a listener's endpoints and drops their links. g.mu held.
void close_listener_locked(Listener *ls)
{
	for (auto &[d, ep] : ls->eps) {
		close_endpoint(d, std::move(ep));
		release_locked(d);
	}
	ls->eps.clear();
}

// The first step of connect(): route the handle's host to a link and start
// connecting over it. ncclSuccess with *c unset: try again later.
ncclResult_t start_connect(int dev, Handle *h, Comm **c)
{
	if (h->magic != kHandleMagic || h->version != kHandleVersion) {
		TB5_WARN("connect: the handle is not a tb5 listener's (magic %#x "
			 "version %u; expected %#x version %u): is every rank using "
			 "the same plugin?", h->magic, h->version, kHandleMagic,
			 kHandleVersion);
		return ncclInvalidArgument;
	}
	const std::string dev_name = device_link_name(dev);
	if (dev_name.empty()) {
		std::lock_guard lk(g.mu);
		return no_device_locked("connect", dev);
	}
	char peer_link[TB5_NAME_MAX + 1] = {};
	std::memcpy(peer_link, h->link, TB5_NAME_MAX);
	bool pending = false;
	auto now = std::chrono::steady_clock::now();
	auto key = std::make_pair(h->host, h->service);
	long limit = env_long("TB5_NCCL_CONNECT_TIMEOUT_MS", 20000, 0, INT_MAX);
	bool wait_preferred;
	{
		// The named device's own cable is waited for a quarter of the
		// connect timeout, then another that reaches the host is taken.
		std::lock_guard lk(g.mu);
		auto wit = g.waits.find(key);
		wait_preferred = wit == g.waits.end() ||
				 now - wit->second < std::chrono::milliseconds(limit / 4);
	}
	std::string route = route_to(h->host, dev_name, dev, wait_preferred, &pending);
	if (route.empty()) {
		// A link still coming up may be the one: try again later, within
		// the connect timeout (g.waits: since when).
		{
			std::lock_guard lk(g.mu);
			auto wit = g.waits.emplace(key, now).first;
			if (pending && now - wit->second < std::chrono::milliseconds(limit))
				return ncclSuccess;
			g.waits.erase(wit);
		}
		// No relaying through a third host: the missing cable is named,
		// both ends, and the job stops here.
		TB5_WARN("connect: %s. tb5 does not route through other hosts (the "
			 "listener is on its link %s; `tb5-selftest` on both hosts "
			 "shows their cables)",
			 no_cable(local_host(), {h->host},
				  host_name(h->host_name, sizeof(h->host_name))).c_str(),
			 peer_link);
		return ncclSystemError;
	}
	{
		std::lock_guard lk(g.mu);
		g.waits.erase(key);
	}
	Device *d = acquire(route);
	if (!d)
		return ncclSystemError;
	tb5_address addr{h->host, h->service, h->cookie};
	tb5_endpoint *ep = nullptr;
	int r = tb5_endpoint_connect(d->dev.get(), &addr, 0, &ep);
	if (r < 0) {
		TB5_WARN("connect to host %#llx over %s failed: %s (%s)",
			 (unsigned long long)h->host, route.c_str(), tb5_strerror(r),
			 last_error());
		release(d);
		return from_errno(r);
	}
	*c = new_comm(Kind::kSend, d, EndpointPtr(ep));
	(*c)->peer_host = h->host;
	(*c)->started = std::chrono::steady_clock::now();
	{
		std::lock_guard lk(g.mu);
		g.connecting.insert(*c);
	}
	h->stage = reinterpret_cast<uint64_t>(*c);
	TB5_INFO(NCCL_NET, "connecting to host %#llx service %#llx over %s",
		 (unsigned long long)h->host, (unsigned long long)h->service, route.c_str());
	return ncclSuccess;
}

} // namespace

ncclResult_t listen(int dev, void *handle, void **listen_comm)
{
	if (!handle || !listen_comm)
		return ncclInvalidArgument;
	*listen_comm = nullptr;
	std::lock_guard lk(g.mu);
	if (dev < 0 || dev >= (int)g.devs.size())
		return no_device_locked("listen", dev);
	auto ls = std::make_unique<Listener>();
	ls->host = g.links[g.devs[dev].links[0]].local_host;
	const std::string first = g.links[g.devs[dev].links[0]].name;
	std::vector<int> links = listen_links_locked(dev);
	for (int attempt = 0; attempt < 8 && ls->eps.empty(); attempt++) {
		ls->service = kServicePrefix | (random64() & kServiceMask);
		bool clash = false;
		for (int li : links) {
			const std::string name = g.links[li].name;
			Device *d = acquire_locked(name);
			if (!d) {
				if (name == first)
					break;
				continue;
			}
			tb5_endpoint *ep = nullptr;
			int r = tb5_endpoint_listen(d->dev.get(), ls->service,
						    TB5_LISTEN_WELL_KNOWN, 0, &ep);
			if (r == 0) {
				ls->eps.emplace_back(d, EndpointPtr(ep));
				continue;
			}
			release_locked(d);
			if (r == -EADDRINUSE) {
				clash = true;
				break;
			}
			if (name == first) {
				TB5_WARN("listen on link %s failed: %s (%s)", name.c_str(),
					 tb5_strerror(r), last_error());
				break;
			}
			TB5_INFO(NCCL_NET, "not listening on link %s: %s", name.c_str(),
				 tb5_strerror(r));
		}
		bool has_first = std::any_of(ls->eps.begin(), ls->eps.end(),
					     [&](auto &e) { return e.first->name == first; });
		if (clash || !has_first) {
			close_listener_locked(ls.get());
			if (!clash)
				return ncclSystemError;
		}
	}
	if (ls->eps.empty()) {
		TB5_WARN("listen on device %d: no free service id after 8 tries", dev);
		return ncclSystemError;
	}
	auto *h = static_cast<Handle *>(handle);
	std::memset(h, 0, sizeof(*h));
	h->magic = kHandleMagic;
	h->version = kHandleVersion;
	h->host = ls->host;
	h->service = ls->service;
	h->cookie = 0;
	std::strncpy(h->link, first.c_str(), sizeof(h->link) - 1);
	const std::string name = this_host_name();
	std::strncpy(h->host_name, name.c_str(), sizeof(h->host_name) - 1);
	publish_host_locked();	// the cables that came up since
	TB5_INFO(NCCL_NET, "listening on %s (%zu link%s), host %#llx service %#llx",
		 first.c_str(), ls->eps.size(), ls->eps.size() == 1 ? "" : "s",
		 (unsigned long long)ls->host, (unsigned long long)ls->service);
	*listen_comm = ls.release();
	return ncclSuccess;
}

ncclResult_t connect(int dev, void *handle, void **send_comm)
{
	if (!handle || !send_comm)
		return ncclInvalidArgument;
	*send_comm = nullptr;
	auto *h = static_cast<Handle *>(handle);
	Comm *c = nullptr;
	{
		std::lock_guard lk(g.mu);
		auto it = g.connecting.find(reinterpret_cast<Comm *>(h->stage));
		if (h->stage && it != g.connecting.end())
			c = *it;
	}
	if (!c) {
		if (ncclResult_t r = start_connect(dev, h, &c); r != ncclSuccess || !c)
			return r;
	}
	progress(c->dev);
	int why = 0;
	int st = tb5_endpoint_state(c->ep.get(), &why);
	if (st == TB5_ENDPOINT_CONNECTING)
		return ncclSuccess;
	{
		std::lock_guard lk(g.mu);
		g.connecting.erase(c);
	}
	h->stage = 0;
	if (st != TB5_ENDPOINT_CONNECTED) {
		TB5_WARN("connect to host %#llx over %s failed: %s", (unsigned long long)c->peer_host,
			 c->dev->name.c_str(),
			 st < 0 ? tb5_strerror(st) : why ? tb5_strerror(why) : "the peer closed");
		int err = st < 0 ? st : why ? why : -ECONNRESET;
		delete_comm(c);
		return from_errno(err);
	}
	*send_comm = c;
	return ncclSuccess;
}

ncclResult_t accept(void *listen_comm, void **recv_comm)
{
	if (!listen_comm || !recv_comm)
		return ncclInvalidArgument;
	*recv_comm = nullptr;
	auto *ls = static_cast<Listener *>(listen_comm);
	for (auto &[d, lep] : ls->eps) {
		progress(d);
		tb5_endpoint *ep = nullptr;
		int r = tb5_endpoint_accept(lep.get(), 0, &ep);
		if (r == -EAGAIN)
			continue;
		if (r < 0) {
			TB5_WARN("accept on %s failed: %s (%s)", d->name.c_str(), tb5_strerror(r),
				 last_error());
			return from_errno(r);
		}
		{
			std::lock_guard lk(g.mu);
			d->refs++;
		}
		Comm *c = new_comm(Kind::kRecv, d, EndpointPtr(ep));
		c->peer_host = d->info.peer_host;
		TB5_INFO(NCCL_NET, "accepted a connection on %s", d->name.c_str());
		*recv_comm = c;
		return ncclSuccess;
	}
	return ncclSuccess;
}

ncclResult_t close_send(void *send_comm)
{
	auto *c = static_cast<Comm *>(send_comm);
	if (!c)
		return ncclSuccess;
	{
		std::lock_guard lk(g.mu);
		g.connecting.erase(c);
	}
	delete_comm(c);
	return ncclSuccess;
}

ncclResult_t close_recv(void *recv_comm)
{
	auto *c = static_cast<Comm *>(recv_comm);
	if (c)
		delete_comm(c);
	return ncclSuccess;
}

ncclResult_t close_listen(void *listen_comm)
{
	auto *ls = static_cast<Listener *>(listen_comm);
	if (!ls)
		return ncclSuccess;
	for (auto &[d, ep] : ls->eps) {
		close_endpoint(d, std::move(ep));
		release(d);
	}
	delete ls;
	return ncclSuccess;
}

} // namespace tb5net
