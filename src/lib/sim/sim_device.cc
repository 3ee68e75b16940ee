// SPDX-License-Identifier: MIT
//
// sim_device.cc - the simulator backend: this process as a host of a
// fabric (its links), and devices, endpoints and memory regions over them.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "backends.hpp"
#include "error.hpp"
#include "objects.hpp"
#include "sim/fabric.hpp"
#include "sim/gpu_region.hpp"
#include "sim/sim_config.hpp"
#include "sim/sim_link.hpp"
#include "tb5_ctxrules.h"
#include "util/checked_mutex.hpp"

static_assert(TB5_WC_CONNECTED == TB5_EV_CONNECTED &&
	      TB5_WC_INCOMING == TB5_EV_INCOMING &&
	      TB5_WC_PEER_CLOSED == TB5_EV_PEER_CLOSED &&
	      TB5_WC_ERROR == TB5_EV_ERROR);
static_assert(TB5_WC_SEND == TB5_COMPLETION_SEND &&
	      TB5_WC_RECV == TB5_COMPLETION_RECV);
static_assert(TB5_POST_SEND == TB5_COMPLETION_SEND &&
	      TB5_POST_RECV == TB5_COMPLETION_RECV);
static_assert(TB5_ENDPOINT_LISTENING == TB5_EP_LISTENING &&
	      TB5_ENDPOINT_CONNECTING == TB5_EP_CONNECTING &&
	      TB5_ENDPOINT_CONNECTED == TB5_EP_CONNECTED &&
	      TB5_ENDPOINT_PEER_CLOSED == TB5_EP_PEER_CLOSED &&
	      TB5_ENDPOINT_FAILED == TB5_EP_ERROR);

namespace tb5::sim {
namespace {

// How long closing a device waits for its endpoints to drain before it
// resets the link under them.
constexpr auto kCloseDrain = std::chrono::seconds(2);

// --- this process as a host of the fabric ---

class Host {
public:
	int init(const Config &cfg);
	// Runs every link but @skip: hellos, closes and the frames of other
	// devices move even while the application polls one device only, as
	// a kernel runs every cable whichever one is being read.
	void progress_others(SimLink *skip)
	{
		for (auto &l : links)
			if (l.get() != skip)
				l->progress(64);
	}
	bool any_work()
	{
		for (auto &l : links)
			if (l->has_work())
				return true;
		return false;
	}

	// GPU memory: the DMA engine (TB5_SIM dma=), exports and imports.
	// Before the links, which use it until they go.
	GpuMem gpu;
	std::vector<std::unique_ptr<SimLink>> links;
	Fabric fabric;
	// The DMA engines: copy worker threads, running while a device is
	// open (none with copy=0).
	CopyEngine engine;
	pid_t pid = 0;
	std::atomic<int> devices{ 0 };	// open SimDevices
};

std::mutex host_mu;
// Freed when libtb5 goes (exit, or dlclose() of the NCCL plugin that loaded
// it) with no device open; with devices open at exit, other threads may
// still be polling them, so the host stays (leaked on purpose).
Host *the_host;

// Runs at exit, and at dlclose() when libtb5 is unloaded (atexit() from a
// shared object is tied to it).
void leave_at_exit()
{
	std::lock_guard lk(host_mu);
	if (!the_host || the_host->pid != getpid())
		return;
	the_host->engine.stop();
	the_host->gpu.leave();
	the_host->fabric.leave();
	if (the_host->devices.load() == 0) {
		delete the_host;
		the_host = nullptr;
	}
}

int Host::init(const Config &cfg)
{
	int ret = fabric.join(cfg);

	if (ret)
		return ret;
	pid = getpid();
	engine.configure(cfg.copy >= 0 ? uint32_t(cfg.copy) : default_copy_workers(),
			 size_t(cfg.copy_min_kib) << 10);
	CopyEngine *eng = engine.configured() ? &engine : nullptr;
	const WireClock wire(cfg.rate_mbps, cfg.delay_ns, cfg.usb4);

	gpu.init(cfg.dma, cfg.fabric, fabric.my_session());
	uint32_t index = 0;

	for (uint32_t j = 0; j < fabric.hosts(); j++) {
		// No link where the fabric has no cable (uncabled=).
		if (!fabric.cabled(fabric.my_slot(), j))
			continue;
		// cables=K: sim_h<j> is the first, sim_h<j>c<c> the others.
		for (uint32_t c = 0; c < fabric.cables(); c++) {
			auto l = std::make_unique<SimLink>(fabric, j, c, wire);
			std::string name = "sim_h" + std::to_string(j);

			if (c)
				name.append("c").append(std::to_string(c));
			ret = l->create(name, index++, cfg.burst_frames);
			if (ret)
				return ret;
			l->set_copy_engine(eng);
			l->set_gpu(&gpu);
			links.push_back(std::move(l));
		}
	}
	for (uint32_t k = 0; k < cfg.loop; k++) {
		size_t bytes = 2 * ring_bytes(fabric.ring_size());
		void *raw = aligned_alloc(4096, bytes);

		if (!raw)
			return fail(-ENOMEM, "simulator: no memory for loop pair %u",
				    k);
		memset(raw, 0, bytes);
		std::shared_ptr<uint8_t[]> mem(static_cast<uint8_t *>(raw), free);
		// Distinct host ids per end, as the kernel's loop pairs have.
		uint64_t base = fabric.my_session() ^ (uint64_t(k + 1) << 48);
		SimLink *ends[2];

		for (int e = 0; e < 2; e++) {
			auto l = std::make_unique<SimLink>(
				fabric, mem, e, fabric.ring_size(),
				base ^ (uint64_t(e + 1) << 40), wire);
			ret = l->create("sim_l" + std::to_string(k) +
						(e ? "b" : "a"),
					index++, cfg.burst_frames);
			if (ret)
				return ret;
			l->set_copy_engine(eng);
			l->set_gpu(&gpu);
			ends[e] = l.get();
			links.push_back(std::move(l));
		}
		ends[0]->start_loop();
		ends[1]->start_loop();
		ends[0]->flush();
		ends[1]->flush();
	}
	return 0;
}

// The process's host, joining the fabric on first use. A child after
// fork() is a new host: it leaves the parent's objects alone.
int get_host(Host **out)
{
	std::lock_guard lk(host_mu);
	static bool atexit_done;
	const char *spec = getenv("TB5_SIM");

	if (the_host && the_host->pid == getpid()) {
		*out = the_host;
		return 0;
	}
	if (!spec || !*spec)
		return fail(-ENODEV, "the simulator is not selected (TB5_SIM)");
	Config cfg;
	int ret = parse_config(spec, cfg);

	if (ret)
		return ret;
	auto h = std::make_unique<Host>();

	ret = h->init(cfg);
	if (ret) {
		h->fabric.leave();
		// Links made so far hold the fabric: keep them (idle). A host
		// that made none (its fabric was refused: another version, other
		// settings) holds nothing, and goes.
		if (!h->links.empty())
			h.release();
		return ret;
	}
	the_host = h.release();
	if (!atexit_done) {
		atexit(leave_at_exit);
		atexit_done = true;
	}
	*out = the_host;
	return 0;
}

// --- devices ---

// The completion queue: a ring of entries, bounded and accounted by the
// core's rules (tb5_ctxrules.h) exactly as the module's queue is. Entries
// of an endpoint closed since they were produced stay in the ring with no
// endpoint (ep NULL) until poll() passes them, as the module's stay until
// libtb5 drops them.
//
// One lock covers the queue and the rules of every endpoint on it, as
// tb5_ctxrules.h requires of a caller of the core's rules: what it covers
// is reached only through the accessors below and SimEp::rules(), which
// assert that the calling thread holds it (util/checked_mutex.hpp, where
// the core checks its own locks), naming the function that called them.
class Cq {
public:
	CheckedMutex mu{ "the completion queue's lock (Cq::mu)" };

	// Before the queue is shared: no lock.
	int init(uint32_t n)
	{
		int ret = tb5_cq_acct_init(&acct_, n);

		if (!ret)
			ring_.assign(n, tb5_wc{});
		return ret;
	}
	// Its size, fixed by init(): no lock.
	uint32_t entries() const { return acct_.entries; }

	// With mu held (@who: the caller, for the assertion's message):
	tb5_cq_acct *acct(const char *who = __builtin_FUNCTION())
	{
		mu.assert_held(who);
		return &acct_;
	}
	// The consumer's index.
	uint32_t &head(const char *who = __builtin_FUNCTION())
	{
		mu.assert_held(who);
		return head_;
	}
	// The entry at @index (any number: the ring wraps it).
	tb5_wc &entry(uint32_t index, const char *who = __builtin_FUNCTION())
	{
		mu.assert_held(who);
		return ring_[index & (acct_.entries - 1)];
	}
	bool empty(const char *who = __builtin_FUNCTION())
	{
		return head(who) == acct(who)->tail;
	}

private:
	tb5_cq_acct acct_ = {};
	uint32_t head_ = 0;
	std::vector<tb5_wc> ring_;
};

struct SimMr : tb5_mr {
	uint8_t *base;
	std::atomic<uint32_t> inflight{ 0 };
	bool is_gpu = false;
	GpuRegion gpu;		// is_gpu: its DMA engine's view
	SimMr(tb5_device *d, void *addr, uint64_t bytes)
		: tb5_mr(d, bytes), base(static_cast<uint8_t *>(addr))
	{
	}
};

struct SimEp : tb5_endpoint {
	std::shared_ptr<Cq> cq;
	std::shared_ptr<std::atomic<int>> live;	// the device's live endpoints
	HostSlot *doorbell;
	struct tb5_ep *core = nullptr;
	bool closed = false;			// under cq->mu
	uint64_t local_host = 0;

	SimEp(tb5_device *d, uint64_t ctx, bool listens, std::shared_ptr<Cq> q,
	      std::shared_ptr<std::atomic<int>> l, HostSlot *db)
		: tb5_endpoint(d, ctx, listens), cq(std::move(q)), live(std::move(l)),
		  doorbell(db)
	{
		live->fetch_add(1);
	}
	~SimEp() override { live->fetch_sub(1); }

	// Operation slots, event credits, the INCOMING rule: the core's,
	// shared with the module (accept until -EAGAIN). With cq->mu held.
	tb5_ep_rules *rules(const char *who = __builtin_FUNCTION())
	{
		cq->mu.assert_held(who);
		return &rules_;
	}
	// Give back what the rules hold on the queue (released, or never
	// given to the core).
	void release()
	{
		std::lock_guard lk(cq->mu);

		tb5_ep_rules_release(rules(), cq->acct());
	}
	// Write @wc at @index of the ring (cq->mu held): the core's rules
	// produced it. A closed endpoint's entry is written without it.
	void write(uint32_t index, tb5_wc wc)
	{
		if (closed)
			wc.ep = nullptr;
		cq->entry(index) = wc;
	}

private:
	tb5_ep_rules rules_ = {};
};

class SimDevice final : public tb5_device {
public:
	SimDevice(Host *host, SimLink *link)
		: host_(host), link_(link), cq_(std::make_shared<Cq>()),
		  live_(std::make_shared<std::atomic<int>>(0))
	{
		host_->engine.acquire();
		host_->devices++;
	}
	~SimDevice() override;

	// The completion queue, sized as the module's (tb5::cq_entries()).
	int init()
	{
		uint32_t entries = cq_entries();
		int ret = cq_->init(entries);
		tb5_link_info info;

		if (ret) {
			link_->describe(info);
			return fail(ret, "%s: a completion queue of %u entries: "
				    "the simulator and the module take a power "
				    "of two in %u..%u (TB5_CQ_ENTRIES)",
				    info.name, entries, TB5_CQ_ENTRIES_MIN,
				    TB5_CQ_ENTRIES_MAX);
		}
		return 0;
	}

	int query(tb5_link_info *info) override
	{
		link_->progress();
		link_->describe(*info);
		return 0;
	}
	int counters(tb5_counters *c) override
	{
		struct tb5_link_stats st;

		tb5_link_get_stats(link_->core(), &st);
		*c = {};
		c->tx_frames = st.tx_frames;
		c->tx_bytes = st.tx_bytes;
		c->rx_frames = st.rx_frames;
		c->rx_bytes = st.rx_bytes;
		c->errors = st.rx_errors + st.rx_dropped + st.peer_resets;
		return 0;
	}
	int drops(tb5_drops *d) override
	{
		struct tb5_link_stats st;

		tb5_link_get_stats(link_->core(), &st);
		fill_drops(st.drops, d);
		return 0;
	}
	int reg_host(void *addr, size_t len, tb5_mr **mr) override
	{
		auto m = std::make_unique<SimMr>(this, addr, len);
		std::lock_guard lk(mu_);

		*mr = m.get();
		mrs_.insert(m.release());
		return 0;
	}
	int reg_dmabuf(int, uint64_t, uint64_t, tb5_mr **) override
	{
		return fail(-EOPNOTSUPP, "the simulator takes GPU memory by its "
			    "address (tb5_reg_gpu(), with or without its "
			    "dma-buf), not a dma-buf alone");
	}
	int reg_gpu(void *addr, size_t len, int fd, uint64_t offset,
		    tb5_mr **mr) override
	{
		auto m = std::make_unique<SimMr>(this, addr, len);
		int ret = host_->gpu.reg(addr, len, fd, offset, m->gpu);

		if (ret)
			return ret;
		m->is_gpu = true;
		link_->gpu_registered();
		std::lock_guard lk(mu_);
		*mr = m.get();
		mrs_.insert(m.release());
		return 0;
	}
	int dereg(tb5_mr *mr) override
	{
		auto *m = static_cast<SimMr *>(mr);
		std::lock_guard lk(mu_);

		if (!mrs_.count(m))
			return fail(-EINVAL, "not a region of this device");
		if (m->inflight.load(std::memory_order_acquire))
			return fail(-EBUSY, "the region is still in use by %u "
				    "operation(s)", m->inflight.load());
		mrs_.erase(m);
		drop_mr(m);
		return 0;
	}
	// Frees @m, withdrawing its export first (peers close theirs).
	void drop_mr(SimMr *m)
	{
		if (m->is_gpu)
			host_->gpu.dereg(m->gpu);
		delete m;
	}
	int listen(uint64_t service, uint32_t flags, uint64_t context,
		   tb5_endpoint **ep) override;
	int address(tb5_endpoint *listener, tb5_address *addr) override;
	int connect(const tb5_address &addr, uint64_t context,
		    tb5_endpoint **ep) override;
	int accept(tb5_endpoint *listener, uint64_t context,
		   tb5_endpoint **ep) override;
	int close(tb5_endpoint *ep) override;
	int state(tb5_endpoint *ep, int *error) override;
	int post(const tb5_op *ops, size_t count, size_t *posted) override;
	int poll(tb5_wc *wc, int max) override;
	int wait(int timeout_ms) override;

private:
	int post_ops(const tb5_op *ops, size_t count, size_t *posted);
	// A new endpoint with its event credits reserved; -ENOSPC (the
	// module's error) when the queue cannot promise them.
	int new_ep(uint64_t context, bool listener, const char *what,
		   std::unique_ptr<SimEp> &out)
	{
		auto e = std::make_unique<SimEp>(this, context, listener, cq_,
						 live_, &link_->my_doorbell());
		int ret;

		{
			std::lock_guard lk(cq_->mu);

			ret = tb5_ep_rules_open(e->rules(), cq_->acct(),
						cq_->head(), listener);
		}
		if (ret)
			return cq_full(what);
		out = std::move(e);
		return 0;
	}
	int cq_full(const char *what)
	{
		tb5_link_info info;

		link_->describe(info);
		return fail_cq_full(info.name, cq_->entries(), what);
	}
	void adopt(SimEp *e)
	{
		std::lock_guard lk(mu_);
		eps_.insert(e);
	}

	// Busy polls look at the other links every this many calls.
	static constexpr uint32_t kOthersEvery = 64;

	Host *host_;
	SimLink *link_;
	std::atomic<uint32_t> polls_{ 0 };
	std::shared_ptr<Cq> cq_;
	std::shared_ptr<std::atomic<int>> live_;
	std::mutex mu_;
	std::set<SimEp *> eps_;		// open, not closed by the user
	std::set<SimMr *> mrs_;
};

int SimDevice::listen(uint64_t service, uint32_t flags, uint64_t context,
		      tb5_endpoint **ep)
{
	std::unique_ptr<SimEp> e;
	int ret = new_ep(context, true, "listen", e);

	if (ret)
		return ret;
	ret = tb5_listen(link_->core(), service,
			 (flags & TB5_LISTEN_WELL_KNOWN) ? TB5_LF_WELL_KNOWN : 0,
			 e.get(), &e->core);
	if (ret)
		e->release();
	if (ret == -EADDRINUSE)
		return fail(ret, "service %#llx has a listener on this link "
			    "already", (unsigned long long)service);
	if (ret)
		return fail(ret, "listen: %s", strerror(-ret));
	*ep = e.get();
	adopt(e.release());
	return 0;
}

int SimDevice::address(tb5_endpoint *listener, tb5_address *addr)
{
	auto *e = static_cast<SimEp *>(listener);
	struct tb5_addr a;
	tb5_link_info info;

	if (tb5_listen_addr(e->core, &a))
		return fail(-EINVAL, "the listener has no address");
	link_->describe(info);
	addr->host = info.local_host;
	addr->service = a.service;
	addr->cookie = a.cookie;
	return 0;
}

int SimDevice::connect(const tb5_address &addr, uint64_t context,
		       tb5_endpoint **ep)
{
	tb5_link_info info;

	link_->progress();
	link_->describe(info);
	std::unique_ptr<SimEp> e;
	int ret = new_ep(context, false, "connect", e);

	if (ret)
		return ret;
	struct tb5_addr a = { addr.service, addr.cookie };

	ret = tb5_connect(link_->core(), &a, e.get(), &e->core);
	link_->flush();
	if (ret) {
		e->release();
		return fail(ret, "connect on %s: %s", info.name, strerror(-ret));
	}
	*ep = e.get();
	adopt(e.release());
	return 0;
}

int SimDevice::accept(tb5_endpoint *listener, uint64_t context,
		      tb5_endpoint **ep)
{
	auto *l = static_cast<SimEp *>(listener);
	std::unique_ptr<SimEp> e;
	int ret = new_ep(context, false, "accept", e);

	if (ret)
		return ret;
	{
		// Re-armed before the core looks (the core's rule).
		std::lock_guard lk(cq_->mu);

		tb5_ep_rules_accepting(l->rules(), cq_->acct(), cq_->head());
	}
	ret = tb5_accept(l->core, e.get(), &e->core);
	link_->flush();
	if (ret)
		e->release();
	if (ret == -EAGAIN)
		return ret;
	if (ret)
		return fail(ret, "accept: %s", strerror(-ret));
	*ep = e.get();
	adopt(e.release());
	return 0;
}

int SimDevice::close(tb5_endpoint *ep)
{
	auto *e = static_cast<SimEp *>(ep);

	{
		std::lock_guard lk(mu_);

		if (!eps_.erase(e))
			return fail(-EINVAL, "not an open endpoint of this device");
	}
	{
		// Its entries keep their places in the ring, without it.
		std::lock_guard lk(cq_->mu);

		e->closed = true;
		for (uint32_t i = cq_->head(); i != cq_->acct()->tail; i++)
			if (cq_->entry(i).ep == e)
				cq_->entry(i).ep = nullptr;
	}
	// The core reports TB5_EV_RELEASED last, which frees @e, possibly
	// inside this call.
	tb5_ep_close(e->core);
	link_->quiesce_rx();
	link_->flush();
	return 0;
}

int SimDevice::state(tb5_endpoint *ep, int *error)
{
	auto *e = static_cast<SimEp *>(ep);
	int st;

	link_->progress();
	st = int(tb5_ep_state(e->core));
	if (error) {
		std::lock_guard lk(cq_->mu);

		*error = tb5_ep_rules_error(e->rules());
	}
	return st;
}

int SimDevice::post(const tb5_op *ops, size_t count, size_t *posted)
{
	int ret = post_ops(ops, count, posted);

	link_->flush();
	return ret;
}

int SimDevice::post_ops(const tb5_op *ops, size_t count, size_t *posted)
{
	size_t i;

	for (i = 0; i < count; i++) {
		const tb5_op &o = ops[i];
		auto *e = static_cast<SimEp *>(o.ep);
		auto *m = static_cast<SimMr *>(o.mr);
		uint32_t slot;
		int ret;

		{
			// A queue entry (-ENOSPC), then a slot (-EAGAIN).
			std::lock_guard lk(cq_->mu);

			ret = tb5_ep_rules_post(e->rules(), cq_->acct(), cq_->head(),
						o.kind, o.user_data, m, &slot);
			if (!ret)
				m->inflight.fetch_add(1, std::memory_order_relaxed);
		}
		if (ret) {
			*posted = i;
			if (ret == -EAGAIN)
				return ret;
			if (ret == -ENOSPC)
				return cq_full("post");
			return fail(ret, "posting: %s", strerror(-ret));
		}
		// A GPU region's operations name it: its frames go to the
		// DMA engine (sim_link_gpu.cc).
		struct tb5_mem mem = { m->is_gpu ? &m->gpu : nullptr,
				       uint64_t(uintptr_t(m->base + o.offset)) };

		ret = o.kind == TB5_POST_SEND ?
			      tb5_post_send(e->core, &mem, o.len, o.tag, slot) :
			      tb5_post_recv(e->core, &mem, o.len, o.tag, slot);
		if (ret) {
			{
				std::lock_guard lk(cq_->mu);

				if (tb5_ep_rules_unpost(e->rules(), cq_->acct(), slot))
					m->inflight.fetch_sub(1, std::memory_order_release);
			}
			*posted = i;
			if (ret == -EAGAIN)
				return ret;
			return fail(ret, "posting a %s of %llu bytes: %s",
				    o.kind == TB5_POST_SEND ? "send" : "receive",
				    (unsigned long long)o.len, strerror(-ret));
		}
	}
	*posted = i;
	return 0;
}

int SimDevice::poll(tb5_wc *wc, int max)
{
	int n = 0;

	link_->progress();
	if (polls_.fetch_add(1, std::memory_order_relaxed) % kOthersEvery == 0)
		host_->progress_others(link_);
	std::lock_guard lk(cq_->mu);

	while (n < max && !cq_->empty()) {
		const tb5_wc &w = cq_->entry(cq_->head()++);

		if (w.ep)	// else its endpoint was closed: dropped
			wc[n++] = w;
	}
	return n;
}

int SimDevice::wait(int timeout_ms)
{
	using clock = std::chrono::steady_clock;
	const auto deadline = clock::now() + std::chrono::milliseconds(
						     timeout_ms < 0 ? 0 : timeout_ms);
	HostSlot &db = link_->my_doorbell();

	for (;;) {
		link_->progress();
		host_->progress_others(link_);
		{
			std::lock_guard lk(cq_->mu);
			if (!cq_->empty())
				return 0;
		}
		uint32_t seen = db.doorbell.load(std::memory_order_acquire);

		db.sleepers.fetch_add(1, std::memory_order_seq_cst);
		std::atomic_thread_fence(std::memory_order_seq_cst);
		bool busy = host_->any_work();
		{
			std::lock_guard lk(cq_->mu);
			busy = busy || !cq_->empty();
		}
		int slice = 100;	// wake now and then to see a peer die

		if (timeout_ms >= 0) {
			auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
					    deadline - clock::now()).count();
			if (left <= 0 && !busy) {
				db.sleepers.fetch_sub(1);
				return -ETIMEDOUT;
			}
			slice = int(std::min<long long>(slice, std::max<long long>(left, 1)));
		}
		if (!busy)
			sleep_on_doorbell(db, seen, slice);
		db.sleepers.fetch_sub(1);
	}
}

SimDevice::~SimDevice()
{
	std::vector<SimEp *> open(eps_.begin(), eps_.end());

	for (SimEp *e : open)
		close(e);
	// Let closed endpoints finish (a send whose frames are queued
	// completes when they leave); a peer that never drains its ring gets
	// the link reset under it, as a cable pull would.
	auto deadline = std::chrono::steady_clock::now() + kCloseDrain;
	bool reset = false;

	while (live_->load() > 0) {
		link_->progress();
		if (std::chrono::steady_clock::now() > deadline) {
			if (reset)
				break;
			link_->reset();
			reset = true;
			deadline = std::chrono::steady_clock::now() + kCloseDrain;
		}
	}
	if (live_->load() == 0) {
		for (SimMr *m : mrs_)
			drop_mr(m);
	}
	// Else operations may still name our regions: keep them (leak).
	// The last device stops the copy workers (a copy that another
	// thread shares with them now ends first); later copies are inline.
	host_->engine.release();
	host_->devices--;
}

} // namespace

void deliver_completion(void *ep_ctx, const struct tb5_completion *c)
{
	auto *e = static_cast<SimEp *>(ep_ctx);
	tb5_wc wc = {};
	void *region;
	uint32_t index;
	int ret;

	wc.bytes = c->bytes;
	wc.status = c->status;
	wc.tag = c->tag;
	wc.kind = uint16_t(c->op);
	wc.ep = e;
	{
		std::lock_guard lk(e->cq->mu);

		// The entry was reserved when the operation was posted.
		ret = tb5_ep_rules_complete(e->rules(), e->cq->acct(), e->cq->head(),
					    c->user_id, &wc.user_data, &region,
					    &index);
		if (ret == -EINVAL)
			return;		// no such operation
		static_cast<SimMr *>(region)->inflight.fetch_sub(
			1, std::memory_order_release);
		if (!ret)
			e->write(index, wc);
	}
	if (!ret)
		ring_doorbell(*e->doorbell);
}

void deliver_event(void *ep_ctx, enum tb5_event ev, int status)
{
	auto *e = static_cast<SimEp *>(ep_ctx);
	tb5_wc wc = {};
	uint32_t index;
	int raise;

	if (ev == TB5_EV_RELEASED) {
		e->release();
		delete e;
		return;
	}
	wc.user_data = e->context;
	wc.status = status;
	wc.kind = TB5_WC_EVENT;
	wc.event = uint16_t(ev);
	wc.ep = e;
	{
		// One INCOMING until the next accept, and only with a credit.
		std::lock_guard lk(e->cq->mu);

		raise = tb5_ep_rules_event(e->rules(), e->cq->acct(), e->cq->head(),
					   ev, status, &index);
		if (raise > 0)
			e->write(index, wc);
	}
	if (raise > 0)
		ring_doorbell(*e->doorbell);
}

bool selected()
{
	const char *s = getenv("TB5_SIM");

	return s && *s;
}

int list_links(std::vector<tb5_link_info> &out)
{
	Host *h;
	int ret = get_host(&h);

	if (ret)
		return ret;
	for (auto &l : h->links) {
		tb5_link_info info;

		l->progress();
		l->describe(info);
		out.push_back(info);
	}
	return 0;
}

int open(const char *name, tb5_device **dev)
{
	Host *h;
	int ret = get_host(&h);

	if (ret)
		return ret;
	auto l = std::find_if(h->links.begin(), h->links.end(),
			      [&](const auto &link) { return link->name() == name; });

	if (l == h->links.end())
		return fail(-ENODEV, "the simulator has no link \"%s\" "
			    "(tb5_list_links names them: sim_h<slot> to other "
			    "hosts, sim_l<k>a/b for loop pairs)", name);
	auto d = std::make_unique<SimDevice>(h, l->get());

	ret = d->init();
	if (ret)
		return ret;
	*dev = d.release();
	return 0;
}

} // namespace tb5::sim
