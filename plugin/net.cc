// SPDX-License-Identifier: MIT
//
// net.cc - the NCCL net plugin over libtb5.
//
// Devices are tb5 links (kernel cables and loop pairs, or simulated ones).
// Every link a process uses is opened once, as a tb5 device shared by all
// comms on it; completions of that device go to whichever thread polls it
// and are handed to their request through the operation's user_data.
//
// Connections follow the design brief's mesh routing: a listener listens
// on every link of its host (a host's cables share one host id), with a
// random service id that the handle carries; a connector uses a link
// whose peer is the listener's host, whatever device NCCL named: the named
// device's own link when it reaches that host, else, of the K links that
// do, the one at the device's index modulo K, so that the channels NCCL
// spreads over its devices spread over parallel cables too.
//
// NCCL is shown one device per link and no makeVDevice. NCCL 2.28 fuses
// devices within NCCL_NET_MERGE_LEVEL (default PORT) of each other into a
// virtual NIC, which it assumes reaches every peer at the members' summed
// speed; a direct-connect link reaches one peer. And where links have no
// PCI device (loop pairs, the simulator) the fused NIC lands nested inside
// the members' CPU-attached "nic" node, where NCCL's topology never reads
// it: the host is left with no NET and every 3- or 4-host job failed with
// "Could not find NET with id 0" (issue 25; docs/plugin.md has the NCCL
// source lines). Without makeVDevice NCCL keeps the physical devices at
// every merge level.
//
// Nothing blocks: listen/connect/accept return at once, connect and accept
// hand back a comm once libtb5 reports the endpoint connected; isend/irecv
// return a NULL request when the comm's 32 requests or the endpoint's
// operation slots are all in use.
#include "net.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <sys/random.h>
#include <unistd.h>

#include <tb5/tb5.h>

#include "env.hpp"
#include "live_counters.hpp"
#include "log.hpp"
#include "nccl_defaults.hpp"

namespace tb5net {

namespace live = ::tb5::live;

std::atomic<ncclDebugLogger_t> g_logger{nullptr};

namespace {

// ---- the handle ----------------------------------------------------------

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
	uint8_t reserved[128 - 72];
};
static_assert(sizeof(Handle) == NCCL_NET_HANDLE_MAXSIZE);

// ---- objects -------------------------------------------------------------

struct Device;

// A registered region. Zero-byte regions have no tb5 region of their own:
// zero-byte operations use the device's scratch region.
struct Mr {
	Device *dev;
	tb5_mr *mr;
	uintptr_t base;
	size_t len;
};

// One opened link, shared by every comm on it in this process.
struct Device {
	std::string name;
	tb5_device *dev = nullptr;
	tb5_link_info info{};
	int refs = 0;			// comms, listeners and regions (g.mu)
	std::mutex poll_mu;		// one poller at a time; close waits for it
	tb5_mr *scratch = nullptr;	// for zero-byte operations
	alignas(16) uint8_t scratch_buf[64] = {};
	live::ShmLink *live = nullptr;
	std::vector<tb5_mr *> deferred;	// regions busy when deregistered (g.mu)
	// TB5_NCCL_STATS=1: where the proxy threads' time goes, logged when
	// the link is closed (under poll_mu).
	std::chrono::steady_clock::time_point opened;
	std::atomic<uint64_t> next_poll_ns{0};	// progress() rests until then
	uint64_t polls = 0, busy_polls = 0, completions = 0, poll_ns = 0, busy_ns = 0;
	// isend's tb5_send() and irecv's tb5_post() (any thread: atomics).
	std::atomic<uint64_t> sends{0}, send_ns{0}, posts{0}, post_ns{0};
};

enum class Kind : uint8_t { Send, Recv };

struct Comm;

// One NCCL request: a send, or a group of up to kMaxRecvs receives. The
// low 4 bits of a tb5 operation's user_data say which of the group it is.
struct alignas(16) Request {
	Comm *comm = nullptr;
	int n = 0;
	std::atomic<int> pending{0};
	std::atomic<int> error{0};
	uint64_t bytes[kMaxRecvs] = {};
};

struct Comm {
	Kind kind;
	Device *dev = nullptr;
	tb5_endpoint *ep = nullptr;
	uint64_t peer_host = 0;
	int max_ops = 0;		// the endpoint's sends (or receives) in flight
	int ops = 0;			// posted and not yet returned by test()
	uint32_t used = 0;		// bit i: reqs[i] in use
	uint32_t stalls = 0;		// test() calls without progress
	std::chrono::steady_clock::time_point started;	// connect attempts
	std::array<Request, NCCL_NET_MAX_REQUESTS> reqs;
};

struct Listener {
	std::vector<std::pair<Device *, tb5_endpoint *>> eps;
	uint64_t host = 0;
	uint64_t service = 0;
};

// An NCCL device: one link.
struct NetDev {
	std::string name;
	std::string pci_path;		// empty: no PCI device (loop, simulator)
	uint64_t guid = 0;
	std::vector<int> links;		// indexes into Global::links
};

struct Global {
	std::mutex mu;
	int inits = 0;
	bool listed = false;
	std::vector<tb5_link_info> links;	// as listed at the first init
	std::vector<NetDev> devs;		// one per link
	std::map<std::string, std::unique_ptr<Device>> open;
	std::set<Comm *> connecting;		// attempts a handle may name
	// Connects waiting for a link to come up, by (host, service): since when.
	std::map<std::pair<uint64_t, uint64_t>, std::chrono::steady_clock::time_point> waits;
	std::unique_ptr<live::Publisher> live;

	// Every link still open, closed (finalize, or unloading). mu held,
	// or no other thread left.
	void close_links();

	// A plugin unloaded without finalize() (v7..v10, or a crashed job's
	// teardown): give the links back.
	~Global() { close_links(); }
};

Global g;

uint64_t now_ns();

// TB5_NCCL_TRACE=<prefix>: a timeline of the data path (requests posted,
// completions reaped, requests handed back to NCCL, polls that found
// something), written to <prefix>.<pid> when the process exits. Off, it
// costs one load and branch per call.
struct TraceEvent {
	uint64_t ns;
	const void *comm;
	const void *req;
	uint64_t bytes;
	char kind;	// S isend, R irecv, s/r completion, T test done, P poll
};

struct Trace {
	std::atomic<size_t> n{0};
	std::vector<TraceEvent> ev;
	std::string path;
	std::atomic<bool> on{false};
	Trace()
	{
		const char *p = std::getenv("TB5_NCCL_TRACE");
		if (!p || !*p)
			return;
		path = std::string(p) + "." + std::to_string(getpid());
		ev.resize(1u << 20);
		on.store(true, std::memory_order_relaxed);
	}
	~Trace() { dump(); }
	void dump()
	{
		if (!on.exchange(false))
			return;
		FILE *f = std::fopen(path.c_str(), "w");
		if (!f)
			return;
		size_t cnt = std::min(n.load(), ev.size());
		std::fprintf(f, "# t_ns kind comm req bytes (S isend, R irecv, s send done, "
			     "r recv done, T test done, P poll: bytes = completions)\n");
		for (size_t i = 0; i < cnt; i++)
			std::fprintf(f, "%llu %c %p %p %llu\n", (unsigned long long)ev[i].ns,
				     ev[i].kind, ev[i].comm, ev[i].req,
				     (unsigned long long)ev[i].bytes);
		std::fclose(f);
	}
};

Trace g_trace;

inline void trace_ev(char kind, const void *comm, const void *req, uint64_t bytes)
{
	if (!g_trace.on.load(std::memory_order_relaxed)) [[likely]]
		return;
	size_t i = g_trace.n.fetch_add(1, std::memory_order_relaxed);
	if (i < g_trace.ev.size())
		g_trace.ev[i] = TraceEvent{now_ns(), comm, req, bytes, kind};
}


// ---- helpers -------------------------------------------------------------

uint64_t random64()
{
	uint64_t x = 0;
	if (getrandom(&x, sizeof(x), 0) != (ssize_t)sizeof(x)) {
		std::random_device rd;
		x = ((uint64_t)rd() << 32) ^ rd();
	}
	return x;
}

const char *last_error()
{
	const char *e = tb5_last_error();
	return e && *e ? e : "no detail";
}

ncclResult_t from_errno(int err)
{
	switch (err) {
	case -ECONNRESET:
	case -ECONNREFUSED:
	case -ENOTCONN:
	case -ENETDOWN:
	case -ENETRESET:
	case -EHOSTUNREACH:
	case -EPIPE:
		return ncclRemoteError;
	case -EMSGSIZE:
	case -EINVAL:
		return ncclInvalidUsage;
	default:
		return ncclSystemError;
	}
}

// The PCI function (the NHI) above a tb5 device in sysfs, so that NCCL can
// place the link in its topology; empty for loop pairs and the simulator.
std::string pci_path(const tb5_link_info &l)
{
	if (l.backend != TB5_BACKEND_KERNEL || (l.caps & TB5_CAP_LOOP))
		return {};
	const char *cls = std::getenv("TB5_SYSFS_CLASS");
	std::string link = std::string(cls && *cls ? cls : "/sys/class/tb5") + "/" +
			   l.name + "/device";
	char *real = realpath(link.c_str(), nullptr);
	if (!real)
		return {};
	std::string path(real);
	std::free(real);
	// Walk up to the last component shaped like a PCI address dddd:bb:dd.f.
	auto is_pci = [](const std::string &c) {
		return c.size() == 12 && c[4] == ':' && c[7] == ':' && c[10] == '.';
	};
	while (!path.empty() && path != "/") {
		size_t slash = path.rfind('/');
		if (is_pci(path.substr(slash + 1)))
			return path;
		path.resize(slash);
	}
	return {};
}

void log_stats(Device *d);

// The link's live counters when it closes, one line, so that a job's
// bytes per cable outlive the live-counter file (tests/gpu reads them).
void log_totals(Device *d)
{
	if (!d->live)
		return;
	TB5_INFO(NCCL_NET, "link %s closed: %llu B sent in %llu ops, %llu B received in %llu ops, "
		 "%llu errors", d->name.c_str(), (unsigned long long)d->live->tx_bytes,
		 (unsigned long long)d->live->tx_ops, (unsigned long long)d->live->rx_bytes,
		 (unsigned long long)d->live->rx_ops, (unsigned long long)d->live->errors);
}

// Open (or share) the tb5 device of a link. g.mu held.
Device *acquire_locked(const std::string &name)
{
	auto it = g.open.find(name);
	if (it != g.open.end()) {
		it->second->refs++;
		return it->second.get();
	}
	auto d = std::make_unique<Device>();
	d->name = name;
	int r = tb5_open(name.c_str(), &d->dev);
	if (r < 0) {
		TB5_WARN("cannot open link %s: %s (%s)", name.c_str(), tb5_strerror(r),
			 last_error());
		return nullptr;
	}
	tb5_query(d->dev, &d->info);
	r = tb5_reg_host(d->dev, d->scratch_buf, sizeof(d->scratch_buf), &d->scratch);
	if (r < 0) {
		TB5_WARN("cannot register memory on link %s: %s (%s)", name.c_str(),
			 tb5_strerror(r), last_error());
		tb5_close(d->dev);
		return nullptr;
	}
	if (!g.live)
		g.live = std::make_unique<live::Publisher>("nccl-net-tb5");
	d->live = g.live->link(name.c_str());
	d->refs = 1;
	d->opened = std::chrono::steady_clock::now();
	Device *raw = d.get();
	g.open.emplace(name, std::move(d));
	TB5_INFO(NCCL_INIT | NCCL_NET, "opened link %s (ring %u, %u Mb/s)", name.c_str(),
		 raw->info.ring_size, raw->info.speed_mbps);
	return raw;
}

Device *acquire(const std::string &name)
{
	std::lock_guard lk(g.mu);
	return acquire_locked(name);
}

void Global::close_links()
{
	for (auto &[name, d] : open) {
		log_totals(d.get());
		log_stats(d.get());
		if (d->dev)
			tb5_close(d->dev);
	}
	open.clear();
}

// Regions that were busy at deregistration; retried when comms go. g.mu held.
void retry_deferred_locked(Device *d)
{
	auto &v = d->deferred;
	v.erase(std::remove_if(v.begin(), v.end(),
			       [](tb5_mr *mr) { return tb5_dereg(mr) == 0; }),
		v.end());
}

void release_locked(Device *d)
{
	retry_deferred_locked(d);
	if (--d->refs > 0)
		return;
	log_totals(d);
	log_stats(d);
	// tb5_close frees what is still registered.
	tb5_close(d->dev);
	d->dev = nullptr;
	g.open.erase(g.open.find(d->name));	// frees d
}

void release(Device *d)
{
	std::lock_guard lk(g.mu);
	release_locked(d);
}

// Hand one completion to its request.
void dispatch(Device *d, const tb5_wc &wc)
{
	if (wc.kind != TB5_WC_SEND && wc.kind != TB5_WC_RECV)
		return;	// endpoint events: comms read tb5_endpoint_state()
	auto *req = reinterpret_cast<Request *>(wc.user_data & ~uint64_t{15});
	unsigned sub = wc.user_data & 15;
	if (!req || sub >= kMaxRecvs)
		return;
	req->bytes[sub] = wc.bytes;
	if (d->live) {
		if (wc.status) {
			live::Publisher::add(&d->live->errors, 1);
		} else if (wc.kind == TB5_WC_SEND) {
			live::Publisher::add(&d->live->tx_ops, 1);
			live::Publisher::add(&d->live->tx_bytes, wc.bytes);
		} else {
			live::Publisher::add(&d->live->rx_ops, 1);
			live::Publisher::add(&d->live->rx_bytes, wc.bytes);
		}
	}
	trace_ev(wc.kind == TB5_WC_SEND ? 's' : 'r', req->comm, req, wc.bytes);
	if (wc.status)
		req->error.store(wc.status, std::memory_order_relaxed);
	req->pending.fetch_sub(1, std::memory_order_release);
}

bool stats_on()
{
	static const bool on = [] {
		const char *v = std::getenv("TB5_NCCL_STATS");
		return v && *v && *v != '0';
	}();
	return on;
}

// One tb5_poll(), timed when TB5_NCCL_STATS is set. poll_mu held.
int poll(Device *d, tb5_wc *wc, int max)
{
	if (!stats_on())
		return tb5_poll(d->dev, wc, max);
	auto t0 = std::chrono::steady_clock::now();
	int n = tb5_poll(d->dev, wc, max);
	uint64_t ns = (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
			      std::chrono::steady_clock::now() - t0).count();
	d->polls++;
	d->poll_ns += ns;
	if (n > 0) {
		d->busy_polls++;
		d->busy_ns += ns;
		d->completions += (uint64_t)n;
	}
	return n;
}

void log_stats(Device *d)
{
	if (!stats_on() || !d->polls)
		return;
	double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() -
						    d->opened).count();
	TB5_INFO(NCCL_NET, "stats %s: %.3f s open, %llu polls took %.3f s (%.0f ns each); "
		 "%llu returned %llu completions and took %.3f s; %llu sends took %.3f s, "
		 "%llu receive posts %.3f s; %llu B sent, %llu B received", d->name.c_str(),
		 wall, (unsigned long long)d->polls, d->poll_ns / 1e9,
		 (double)d->poll_ns / (double)d->polls, (unsigned long long)d->busy_polls,
		 (unsigned long long)d->completions, d->busy_ns / 1e9,
		 (unsigned long long)d->sends.load(), d->send_ns.load() / 1e9,
		 (unsigned long long)d->posts.load(), d->post_ns.load() / 1e9,
		 (unsigned long long)(d->live ? d->live->tx_bytes : 0),
		 (unsigned long long)(d->live ? d->live->rx_bytes : 0));
}

uint64_t now_ns()
{
	return (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
		       std::chrono::steady_clock::now().time_since_epoch()).count();
}

// How long a device rests after a poll that found nothing. NCCL's proxy
// thread calls test() on every outstanding request of every channel in
// turn; a poll costs about 2 us in the simulator (it moves frames and
// checks its peers), so polling on each call made one pass over 16 comms
// cost over 30 us. One poll per interval serves them all: completions go
// to their requests whichever test() reaped them.
uint64_t poll_interval_ns()
{
	static const uint64_t ns = (uint64_t)env_long("TB5_NCCL_POLL_NS", 1000, 0, 1000000);
	return ns;
}

// Run the device: move frames (simulator), reap completions. Another
// thread already polling makes the progress for us.
void progress(Device *d)
{
	uint64_t interval = poll_interval_ns();
	if (interval && now_ns() < d->next_poll_ns.load(std::memory_order_relaxed))
		return;
	std::unique_lock lk(d->poll_mu, std::try_to_lock);
	if (!lk.owns_lock())
		return;
	tb5_wc wc[64];
	int n = 0;
	for (int round = 0; round < 4; round++) {
		n = poll(d, wc, 64);
		if (n <= 0)
			break;
		trace_ev('P', d, nullptr, (uint64_t)n);
		for (int i = 0; i < n; i++)
			dispatch(d, wc[i]);
		if (n < 64)
			break;
	}
	d->next_poll_ns.store(n > 0 || !interval ? 0 : now_ns() + interval,
			      std::memory_order_relaxed);
}

// Close an endpoint while no thread is between reaping and dispatching a
// completion of it: after this no completion names the comm's requests.
void close_endpoint(Device *d, tb5_endpoint *ep)
{
	std::lock_guard lk(d->poll_mu);
	tb5_endpoint_close(ep);
}

Comm *new_comm(Kind kind, Device *d, tb5_endpoint *ep)
{
	auto *c = new Comm{};
	c->kind = kind;
	c->dev = d;
	c->ep = ep;
	c->max_ops = (int)std::min<uint32_t>(d->info.max_ops ? d->info.max_ops : 1, INT_MAX);
	for (auto &r : c->reqs)
		r.comm = c;
	return c;
}

void delete_comm(Comm *c)
{
	if (c->ep)
		close_endpoint(c->dev, c->ep);
	release(c->dev);
	delete c;
}

Request *take_request(Comm *c, int n)
{
	if (c->used == UINT32_MAX || c->ops + n > c->max_ops)
		return nullptr;
	int i = __builtin_ctz(~c->used);
	c->used |= 1u << i;
	Request *r = &c->reqs[i];
	r->n = n;
	r->error.store(0, std::memory_order_relaxed);
	r->pending.store(n, std::memory_order_relaxed);
	for (auto &b : r->bytes)
		b = 0;
	c->ops += n;
	return r;
}

void put_request(Request *r)
{
	Comm *c = r->comm;
	c->ops -= r->n;
	c->used &= ~(1u << (r - c->reqs.data()));
}

// Whether @r is taken (its bit in the comm's mask).
bool in_use(const Request *r)
{
	const Comm *c = r->comm;
	return c->used & (1u << (r - c->reqs.data()));
}

// The region and offset of [data, data + size) for an operation on @c.
int locate(Comm *c, void *mhandle, void *data, size_t size, tb5_mr **mr,
	   uint64_t *offset)
{
	auto *m = static_cast<Mr *>(mhandle);
	if (size == 0) {
		*mr = c->dev->scratch;
		*offset = 0;
		return 0;
	}
	if (!m || m->dev != c->dev || !m->mr) {
		TB5_WARN("a %zu-byte operation on link %s names memory not registered "
			 "on that link", size, c->dev->name.c_str());
		return -EINVAL;
	}
	uintptr_t p = (uintptr_t)data;
	if (p < m->base || p - m->base > m->len || size > m->len - (p - m->base)) {
		TB5_WARN("a %zu-byte operation at %p lies outside its %zu-byte region "
			 "at %#lx", size, data, m->len, (unsigned long)m->base);
		return -EINVAL;
	}
	*mr = m->mr;
	*offset = p - m->base;
	return 0;
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

std::string describe_links()
{
	std::string s;
	tb5_link_info *links = nullptr;
	size_t n = 0;
	if (tb5_list_links(&links, &n) < 0)
		return "(cannot list links)";
	for (size_t i = 0; i < n; i++) {
		char buf[128];
		const char *state = tb5_link_state_str(links[i].state);
		if (links[i].peer_host)
			snprintf(buf, sizeof(buf), "%s%s to host %#llx (%s)", s.empty() ? "" : ", ",
				 links[i].name, (unsigned long long)links[i].peer_host, state);
		else
			snprintf(buf, sizeof(buf), "%s%s (%s)", s.empty() ? "" : ", ",
				 links[i].name, state);
		s += buf;
	}
	tb5_free_link_list(links);
	return s.empty() ? "none" : s;
}

// This host's id (the first link's local end), 0 when it has no links.
uint64_t local_host()
{
	tb5_link_info *links = nullptr;
	size_t n = 0;
	if (tb5_list_links(&links, &n) < 0)
		return 0;
	uint64_t host = 0;
	for (size_t i = 0; i < n && !host; i++)
		if (!(links[i].caps & TB5_CAP_LOOP))
			host = links[i].local_host;
	for (size_t i = 0; i < n && !host; i++)
		host = links[i].local_host;
	tb5_free_link_list(links);
	return host;
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
	tb5_link_info *links = nullptr;
	size_t n = 0;
	if (tb5_list_links(&links, &n) < 0)
		return {};
	std::vector<std::string> reach;
	for (size_t i = 0; i < n; i++) {
		const tb5_link_info &l = links[i];
		if (l.state != TB5_LINK_STATE_READY) {
			*pending = true;
			preferred_coming = preferred_coming || preferred == l.name;
			continue;
		}
		if (l.peer_host == host)
			reach.emplace_back(l.name);
	}
	tb5_free_link_list(links);
	if (reach.empty())
		return {};
	if (std::find(reach.begin(), reach.end(), preferred) != reach.end())
		return preferred;
	if (preferred_coming && wait_preferred)
		return {};
	return reach[(size_t)std::max(dev, 0) % reach.size()];
}

// NCCL's NIC-fusion settings do nothing here (no makeVDevice): say so
// once, so that an operator who set them knows why.
void note_merge_settings()
{
	static std::once_flag once;
	std::call_once(once, [] {
		const char *level = std::getenv("NCCL_NET_MERGE_LEVEL");
		const char *force = std::getenv("NCCL_NET_FORCE_MERGE");
		if (force && *force)
			TB5_WARN("NCCL_NET_FORCE_MERGE=%s is ignored: tb5 offers NCCL no "
				 "virtual devices (each link reaches one peer, and every "
				 "connection is routed to a cable that reaches its peer, so "
				 "NCCL's devices need no fusing)", force);
		if (level && *level)
			TB5_INFO(NCCL_INIT | NCCL_NET, "NCCL_NET_MERGE_LEVEL=%s has no effect: tb5 "
				 "offers NCCL no virtual devices; connections are routed "
				 "by peer", level);
	});
}

uint32_t speed_mbps(const tb5_link_info &l)
{
	long over = env_long("TB5_NCCL_SPEED_MBPS", 0, 0, INT_MAX);
	if (over)
		return (uint32_t)over;
	// Loop pairs and the unlimited simulator have no line rate; NCCL
	// wants one to size its channels: a Thunderbolt 5 link's 80 Gb/s.
	return l.speed_mbps ? l.speed_mbps : 80000;
}

// ---- listing ---------------------------------------------------------------

void list_locked()
{
	if (g.listed)
		return;
	g.listed = true;
	g.links.clear();
	g.devs.clear();
	tb5_link_info *links = nullptr;
	size_t n = 0;
	int r = tb5_list_links(&links, &n);
	if (r < 0) {
		TB5_INFO(NCCL_INIT | NCCL_NET, "no tb5 links: %s (%s)", tb5_strerror(r),
			 last_error());
		return;
	}
	// Loop pairs are NCCL devices when this host has nothing else
	// (TB5_NCCL_LOOP=1 always, 0 never): a job that spans hosts must not
	// pick a link that cannot reach them.
	bool other = false;
	for (size_t i = 0; i < n; i++)
		other |= !(links[i].caps & TB5_CAP_LOOP);
	long loop = env_long("TB5_NCCL_LOOP", -1, -1, 1);
	bool use_loop = loop == 1 || (loop == -1 && !other);
	for (size_t i = 0; i < n; i++) {
		if ((links[i].caps & TB5_CAP_LOOP) && !use_loop)
			continue;
		NetDev nd;
		nd.name = links[i].name;
		nd.pci_path = pci_path(links[i]);
		nd.guid = links[i].local_host ^ ((uint64_t)links[i].backend << 56) ^
			  (uint64_t)links[i].index << 40 ^ i;
		nd.links = {(int)g.links.size()};
		g.links.push_back(links[i]);
		g.devs.push_back(std::move(nd));
	}
	tb5_free_link_list(links);
	std::string names;
	for (auto &d : g.devs)
		names += (names.empty() ? "" : " ") + d.name;
	TB5_INFO(NCCL_INIT | NCCL_NET, "%zu device%s: %s (libtb5 %s)", g.devs.size(),
		 g.devs.size() == 1 ? "" : "s", names.empty() ? "-" : names.c_str(),
		 tb5_version());
}

// NCCL device @dev's name, or "" when there is no such device.
std::string device_link_name(int dev)
{
	std::lock_guard lk(g.mu);
	return dev >= 0 && dev < (int)g.devs.size() ? g.devs[dev].name : std::string();
}

} // namespace

// ---- the calls -------------------------------------------------------------

ncclResult_t init(void **ctx, ncclDebugLogger_t logger)
{
	if (logger)
		g_logger.store(logger, std::memory_order_relaxed);
	note_merge_settings();
	std::lock_guard lk(g.mu);
	g.inits++;
	list_locked();
	if (!g.devs.empty())
		apply_nccl_defaults();
	if (ctx)
		*ctx = &g;	// one plugin context; finalize() counts
	return ncclSuccess;
}

ncclResult_t finalize(void *ctx)
{
	if (ctx != &g)
		return ncclInvalidArgument;
	std::lock_guard lk(g.mu);
	if (g.inits == 0)
		return ncclInvalidUsage;
	if (--g.inits > 0)
		return ncclSuccess;
	// The last communicator is gone: comms are closed by now; close the
	// links, drop the listing (the next init lists afresh: cables may have
	// come and gone) and the live-counter file.
	if (!g.open.empty())
		TB5_INFO(NCCL_NET, "finalize with %zu link%s still in use", g.open.size(),
			 g.open.size() == 1 ? "" : "s");
	g.close_links();
	g.connecting.clear();
	g.waits.clear();
	g.listed = false;
	g.links.clear();
	g.devs.clear();
	g.live.reset();
	return ncclSuccess;
}

ncclResult_t devices(int *ndev)
{
	if (!ndev)
		return ncclInvalidArgument;
	std::lock_guard lk(g.mu);
	*ndev = (int)g.devs.size();
	return ncclSuccess;
}

ncclResult_t get_properties(int dev, ncclNetProperties_v12_t *p)
{
	if (!p)
		return ncclInvalidArgument;
	std::lock_guard lk(g.mu);
	if (dev < 0 || dev >= (int)g.devs.size()) {
		TB5_WARN("getProperties: no device %d (there are %zu)", dev, g.devs.size());
		return ncclInvalidArgument;
	}
	const NetDev &nd = g.devs[dev];
	const tb5_link_info &l = g.links[nd.links[0]];
	std::memset(p, 0, sizeof(*p));
	p->name = const_cast<char *>(nd.name.c_str());
	p->pciPath = nd.pci_path.empty() ? nullptr : const_cast<char *>(nd.pci_path.c_str());
	p->guid = nd.guid;
	p->ptrSupport = NCCL_PTR_HOST | ((l.caps & TB5_CAP_DMABUF) ? NCCL_PTR_DMABUF : 0);
	p->regIsGlobal = 0;
	p->forceFlush = 0;
	uint64_t speed = 0;
	for (int li : nd.links)
		speed += speed_mbps(g.links[li]);
	p->speed = (int)std::min<uint64_t>(speed, INT_MAX);
	p->port = 0;
	p->latency = 0;		// NCCL's default network latency
	p->maxComms = 65536;
	p->maxRecvs = kMaxRecvs;
	p->netDeviceType = NCCL_NET_DEVICE_HOST;
	p->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
	p->vProps.ndevs = (int)nd.links.size();
	for (size_t i = 0; i < nd.links.size() && i < kMaxVDevLinks; i++)
		p->vProps.devs[i] = nd.links[i];
	uint64_t max = l.max_msg ? std::min<uint64_t>(l.max_msg, NCCL_MAX_NET_SIZE_BYTES) :
				   NCCL_MAX_NET_SIZE_BYTES;
	p->maxP2pBytes = max;
	p->maxCollBytes = max;
	p->maxMultiRequestSize = 1;
	p->railId = NCCL_NET_ID_UNDEF;
	p->planeId = NCCL_NET_ID_UNDEF;
	return ncclSuccess;
}

ncclResult_t listen(int dev, void *handle, void **listen_comm)
{
	if (!handle || !listen_comm)
		return ncclInvalidArgument;
	*listen_comm = nullptr;
	std::lock_guard lk(g.mu);
	if (dev < 0 || dev >= (int)g.devs.size()) {
		TB5_WARN("listen: no device %d (there are %zu)", dev, g.devs.size());
		return ncclInvalidArgument;
	}
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
			int r = tb5_endpoint_listen(d->dev, ls->service, TB5_LISTEN_WELL_KNOWN,
						    0, &ep);
			if (r == 0) {
				ls->eps.emplace_back(d, ep);
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
			for (auto &[d, ep] : ls->eps) {
				close_endpoint(d, ep);
				release_locked(d);
			}
			ls->eps.clear();
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
		if (h->magic != kHandleMagic || h->version != kHandleVersion) {
			TB5_WARN("connect: the handle is not a tb5 listener's (magic %#x "
				 "version %u; expected %#x version %u): is every rank using "
				 "the same plugin?", h->magic, h->version, kHandleMagic,
				 kHandleVersion);
			return ncclInvalidArgument;
		}
		const std::string dev_name = device_link_name(dev);
		if (dev_name.empty()) {
			TB5_WARN("connect: no device %d", dev);
			return ncclInvalidArgument;
		}
		char peer_link[TB5_NAME_MAX + 1] = {};
		std::memcpy(peer_link, h->link, TB5_NAME_MAX);
		bool pending = false;
		auto now = std::chrono::steady_clock::now();
		auto key = std::make_pair(h->host, h->service);
		long limit = env_long("TB5_NCCL_CONNECT_TIMEOUT_MS", 20000, 0, INT_MAX);
		bool wait_preferred;
		{
			// The named device's own cable is waited for a quarter of
			// the connect timeout, then another that reaches the host
			// is taken.
			std::lock_guard lk(g.mu);
			auto wit = g.waits.find(key);
			wait_preferred = wit == g.waits.end() ||
					 now - wit->second < std::chrono::milliseconds(limit / 4);
		}
		std::string route = route_to(h->host, dev_name, dev, wait_preferred, &pending);
		if (route.empty()) {
			// A link still coming up may be the one: try again later,
			// within the connect timeout (g.waits: since when).
			{
				std::lock_guard lk(g.mu);
				auto wit = g.waits.emplace(key, now).first;
				if (pending && now - wit->second < std::chrono::milliseconds(limit))
					return ncclSuccess;
				g.waits.erase(wit);
			}
			// No relaying through a third host: the missing cable is
			// named, both ends, and the job stops here.
			TB5_WARN("connect: no cable reaches host %#llx from this host %#llx "
				 "(the listener on its link %s): this host's links are %s. "
				 "tb5 does not route through other hosts: cable the two "
				 "hosts together, or check `tb5-selftest` on both",
				 (unsigned long long)h->host, (unsigned long long)local_host(),
				 peer_link, describe_links().c_str());
			return ncclSystemError;
		}
		{
			std::lock_guard lk(g.mu);
			g.waits.erase(std::make_pair(h->host, h->service));
		}
		Device *d = acquire(route);
		if (!d)
			return ncclSystemError;
		c = new_comm(Kind::Send, d, nullptr);
		c->peer_host = h->host;
		c->started = std::chrono::steady_clock::now();
		tb5_address addr{h->host, h->service, h->cookie};
		int r = tb5_endpoint_connect(d->dev, &addr, 0, &c->ep);
		if (r < 0) {
			TB5_WARN("connect to host %#llx over %s failed: %s (%s)",
				 (unsigned long long)h->host, route.c_str(), tb5_strerror(r),
				 last_error());
			c->ep = nullptr;
			delete_comm(c);
			return from_errno(r);
		}
		{
			std::lock_guard lk(g.mu);
			g.connecting.insert(c);
		}
		h->stage = reinterpret_cast<uint64_t>(c);
		TB5_INFO(NCCL_NET, "connecting to host %#llx service %#llx over %s",
			 (unsigned long long)h->host, (unsigned long long)h->service,
			 route.c_str());
	}

	progress(c->dev);
	int why = 0;
	int st = tb5_endpoint_state(c->ep, &why);
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
		int r = tb5_endpoint_accept(lep, 0, &ep);
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
		Comm *c = new_comm(Kind::Recv, d, ep);
		c->peer_host = d->info.peer_host;
		TB5_INFO(NCCL_NET, "accepted a connection on %s", d->name.c_str());
		*recv_comm = c;
		return ncclSuccess;
	}
	return ncclSuccess;
}

namespace {

// A region for @c's link at @data; its tb5 region is filled in by the caller.
std::unique_ptr<Mr> new_mr(Comm *c, void *data, size_t size)
{
	auto m = std::make_unique<Mr>();
	m->dev = c->dev;
	m->base = (uintptr_t)data;
	m->len = size;
	return m;
}

// Hands a registered region to NCCL; it holds its link open.
ncclResult_t publish_mr(Comm *c, std::unique_ptr<Mr> m, void **mhandle)
{
	std::lock_guard lk(g.mu);
	c->dev->refs++;
	*mhandle = m.release();
	return ncclSuccess;
}

} // namespace

ncclResult_t reg_mr(void *comm, void *data, size_t size, int type, void **mhandle)
{
	if (!comm || !mhandle)
		return ncclInvalidArgument;
	*mhandle = nullptr;
	auto *c = static_cast<Comm *>(comm);
	if (type != NCCL_PTR_HOST) {
		TB5_WARN("regMr: memory type %d is not host memory; tb5 registers host "
			 "memory, and GPU memory only as a dma-buf", type);
		return ncclInvalidArgument;
	}
	auto m = new_mr(c, data, size);
	if (size) {
		int r = tb5_reg_host(c->dev->dev, data, size, &m->mr);
		if (r < 0) {
			TB5_WARN("cannot register %zu bytes at %p on %s: %s (%s)", size, data,
				 c->dev->name.c_str(), tb5_strerror(r), last_error());
			return r == -ENOMEM ? ncclSystemError : ncclInvalidArgument;
		}
	}
	return publish_mr(c, std::move(m), mhandle);
}

ncclResult_t reg_mr_dma_buf(void *comm, void *data, size_t size, int type,
			 uint64_t offset, int fd, void **mhandle)
{
	if (!comm || !mhandle)
		return ncclInvalidArgument;
	*mhandle = nullptr;
	auto *c = static_cast<Comm *>(comm);
	if (type == NCCL_PTR_HOST)
		return reg_mr(comm, data, size, type, mhandle);
	if (!(c->dev->info.caps & TB5_CAP_DMABUF)) {
		TB5_WARN("regMrDmaBuf: link %s does not import dma-bufs",
			 c->dev->name.c_str());
		return ncclInvalidUsage;
	}
	auto m = new_mr(c, data, size);
	if (size) {
		int r = tb5_reg_dmabuf(c->dev->dev, fd, offset, size, &m->mr);
		if (r < 0) {
			TB5_WARN("cannot import %zu bytes at offset %llu of dma-buf %d on %s: "
				 "%s (%s)", size, (unsigned long long)offset, fd,
				 c->dev->name.c_str(), tb5_strerror(r), last_error());
			return ncclSystemError;
		}
	}
	return publish_mr(c, std::move(m), mhandle);
}

ncclResult_t dereg_mr(void *comm, void *mhandle)
{
	(void)comm;	// the region knows its link; NCCL may close comms first
	auto *m = static_cast<Mr *>(mhandle);
	if (!m)
		return ncclSuccess;
	std::lock_guard lk(g.mu);
	if (m->mr) {
		int r = tb5_dereg(m->mr);
		if (r == -EBUSY)
			m->dev->deferred.push_back(m->mr);	// freed when its ops end
		else if (r < 0)
			TB5_WARN("deregistering %zu bytes on %s: %s", m->len,
				 m->dev->name.c_str(), tb5_strerror(r));
	}
	release_locked(m->dev);
	delete m;
	return ncclSuccess;
}

ncclResult_t isend(void *send_comm, void *data, size_t size, int tag,
		   void *mhandle, void **request)
{
	if (!send_comm || !request)
		return ncclInvalidArgument;
	*request = nullptr;
	auto *c = static_cast<Comm *>(send_comm);
	if (c->kind != Kind::Send)
		return ncclInvalidArgument;
	tb5_mr *mr;
	uint64_t off;
	if (locate(c, mhandle, data, size, &mr, &off) < 0)
		return ncclInvalidArgument;
	Request *req = take_request(c, 1);
	if (!req)
		return ncclSuccess;	// all in flight: NCCL asks again
	const uint64_t t0 = stats_on() ? now_ns() : 0;
	int r = tb5_send(c->ep, mr, off, size, (uint32_t)tag, (uint64_t)(uintptr_t)req);
	if (t0) {
		c->dev->sends.fetch_add(1, std::memory_order_relaxed);
		c->dev->send_ns.fetch_add(now_ns() - t0, std::memory_order_relaxed);
	}
	if (r < 0) {
		put_request(req);
		if (r == -EAGAIN)
			return ncclSuccess;
		TB5_WARN("send of %zu bytes on %s failed: %s (%s)", size, c->dev->name.c_str(),
			 tb5_strerror(r), last_error());
		return from_errno(r);
	}
	trace_ev('S', c, req, size);
	*request = req;
	return ncclSuccess;
}

ncclResult_t irecv(void *recv_comm, int n, void **data, const size_t *sizes,
		   const int *tags, void **mhandles, void **request)
{
	if (!recv_comm || !request || n < 1 || n > kMaxRecvs || !data || !sizes || !tags)
		return ncclInvalidArgument;
	*request = nullptr;
	auto *c = static_cast<Comm *>(recv_comm);
	if (c->kind != Kind::Recv)
		return ncclInvalidArgument;
	tb5_op ops[kMaxRecvs];
	for (int i = 0; i < n; i++) {
		tb5_mr *mr;
		uint64_t off;
		if (locate(c, mhandles ? mhandles[i] : nullptr, data[i], sizes[i], &mr, &off) < 0)
			return ncclInvalidArgument;
		ops[i] = tb5_op{TB5_POST_RECV, (uint32_t)tags[i], c->ep, mr, off, sizes[i], 0};
	}
	Request *req = take_request(c, n);
	if (!req)
		return ncclSuccess;
	for (int i = 0; i < n; i++)
		ops[i].user_data = (uint64_t)(uintptr_t)req | (uint64_t)i;
	size_t posted = 0;
	const uint64_t t0 = stats_on() ? now_ns() : 0;
	int r = tb5_post(c->dev->dev, ops, (size_t)n, &posted);
	if (t0) {
		c->dev->posts.fetch_add(1, std::memory_order_relaxed);
		c->dev->post_ns.fetch_add(now_ns() - t0, std::memory_order_relaxed);
	}
	if (r < 0) {
		if (posted == 0) {
			put_request(req);
			if (r == -EAGAIN)
				return ncclSuccess;
		} else {
			// Some receives went in: the request stays taken until they
			// end, never to be returned (the comm is failing anyway).
			req->pending.fetch_sub(n - (int)posted, std::memory_order_relaxed);
		}
		TB5_WARN("receive on %s failed: %s (%s)", c->dev->name.c_str(), tb5_strerror(r),
			 last_error());
		return from_errno(r);
	}
	trace_ev('R', c, req, sizes[0]);
	*request = req;
	return ncclSuccess;
}

ncclResult_t iflush(void *recv_comm, int n, void **data, int *sizes,
		    void **mhandles, void **request)
{
	(void)recv_comm;
	(void)n;
	(void)data;
	(void)sizes;
	(void)mhandles;
	// Receives land in host memory, or in a dma-buf that the link writes
	// before it reports the receive: nothing to flush.
	if (request)
		*request = nullptr;
	return ncclSuccess;
}

ncclResult_t test(void *request, int *done, int *sizes)
{
	if (!request || !done)
		return ncclInvalidArgument;
	*done = 0;
	auto *req = static_cast<Request *>(request);
	Comm *c = req->comm;
	if (!in_use(req))
		return ncclInvalidArgument;
	if (req->pending.load(std::memory_order_acquire) > 0) {
		progress(c->dev);
		if (req->pending.load(std::memory_order_acquire) > 0) {
			// A peer that closed or a link that went down ends the
			// endpoint's operations with errors; look now and then in
			// case it did not.
			if ((++c->stalls & 0xffff) == 0) {
				int why = 0;
				int st = tb5_endpoint_state(c->ep, &why);
				if (st != TB5_ENDPOINT_CONNECTED) {
					TB5_WARN("%s on %s: the connection to host %#llx is %s",
						 c->kind == Kind::Send ? "send" : "receive",
						 c->dev->name.c_str(),
						 (unsigned long long)c->peer_host,
						 st == TB5_ENDPOINT_PEER_CLOSED ? "closed by the peer" :
										  "lost");
					return ncclRemoteError;
				}
			}
			return ncclSuccess;
		}
	}
	c->stalls = 0;
	int err = req->error.load(std::memory_order_relaxed);
	if (sizes)
		for (int i = 0; i < req->n; i++)
			sizes[i] = (int)std::min<uint64_t>(req->bytes[i], INT_MAX);
	int n = req->n;
	trace_ev('T', c, req, req->bytes[0]);
	put_request(req);
	*done = 1;
	if (err) {
		TB5_WARN("%s on %s failed: %s%s", c->kind == Kind::Send ? "send" : "receive",
			 c->dev->name.c_str(), tb5_strerror(err),
			 err == -EMSGSIZE ? " (the message is larger than the receive buffer)" :
					    "");
		return from_errno(err);
	}
	(void)n;
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
		close_endpoint(d, ep);
		release(d);
	}
	delete ls;
	return ncclSuccess;
}

ncclResult_t get_device_mr(void *comm, void *mhandle, void **dptr_mhandle)
{
	(void)comm;
	(void)mhandle;
	(void)dptr_mhandle;
	return ncclInternalError;	// no device offload (netDeviceType HOST)
}

ncclResult_t irecv_consumed(void *recv_comm, int n, void *request)
{
	(void)recv_comm;
	(void)n;
	(void)request;
	return ncclSuccess;
}

ncclResult_t set_net_attr(void *ctx, const ncclNetAttr_v12_t *attr)
{
	(void)ctx;
	(void)attr;	// one flow per connection: nothing to tune
	return ncclSuccess;
}

} // namespace tb5net
