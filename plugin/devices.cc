// SPDX-License-Identifier: MIT
//
// devices.cc - what NCCL sees of this host: its devices (init, finalize,
// devices, getProperties) and the links behind them, opened once per
// process and shared by every comm on them.
//
// Devices are tb5 links (kernel cables and loop pairs, or simulated ones).
// Every link a process uses is opened once, as a tb5 device shared by all
// comms on it; completions of that device go to whichever thread polls it
// and are handed to their request through the operation's user_data
// (data_path.cc).
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
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#include "env.hpp"
#include "links.hpp"
#include "log.hpp"
#include "nccl_defaults.hpp"
#include "state.hpp"

namespace tb5net {

std::atomic<ncclDebugLogger_t> g_logger{nullptr};

Global g;

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

// ---- opened links ------------------------------------------------------------

Device *acquire_locked(const std::string &name)
{
	auto it = g.open.find(name);
	if (it != g.open.end()) {
		it->second->refs++;
		return it->second.get();
	}
	auto d = std::make_unique<Device>();
	d->name = name;
	tb5_device *dev = nullptr;
	int r = tb5_open(name.c_str(), &dev);
	if (r < 0) {
		TB5_WARN("cannot open link %s: %s (%s)", name.c_str(), tb5_strerror(r),
			 last_error());
		return nullptr;
	}
	d->dev.reset(dev);
	tb5_query(d->dev.get(), &d->info);
	r = tb5_reg_host(d->dev.get(), d->scratch_buf, sizeof(d->scratch_buf), &d->scratch);
	if (r < 0) {
		TB5_WARN("cannot register memory on link %s: %s (%s)", name.c_str(),
			 tb5_strerror(r), last_error());
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
	}
	open.clear();	// tb5_close() each
}

Global::~Global()
{
	close_links();
	unpublish_host(true);
}

void release_locked(Device *d)
{
	retry_deferred_locked(d);
	if (--d->refs > 0)
		return;
	log_totals(d);
	log_stats(d);
	// Frees d; tb5_close() frees what is still registered.
	g.open.erase(g.open.find(d->name));
}

void release(Device *d)
{
	std::lock_guard lk(g.mu);
	release_locked(d);
}

// ---- listing -------------------------------------------------------------------

namespace {

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

// What memory NCCL may hand a link: host memory always; GPU memory by
// address where the link carries it (the simulator with a DMA engine), and
// as a dma-buf there or where the module imports dma-bufs.
int ptr_support(uint32_t caps)
{
	int p = NCCL_PTR_HOST;
	if (caps & TB5_CAP_GPU_MEM)
		p |= NCCL_PTR_CUDA;
	if (caps & (TB5_CAP_DMABUF | TB5_CAP_GPU_MEM))
		p |= NCCL_PTR_DMABUF;
	return p;
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

// A version mismatch (-EPROTONOSUPPORT from tb5_list_links() or
// tb5_open()): this plugin's libtb5 and the tb5 module speak other ABI
// versions, or the simulator's fabric is another libtb5's. Not a protocol
// break, and not a link to offer NCCL: one warning, with both versions (in
// libtb5's message), and init fails.
int version_mismatch(const char *what, int err)
{
	TB5_WARN("%s: %s (%s); nccl-net-tb5 (libtb5 %s) offers NCCL no tb5 device", what,
		 tb5_strerror(err), last_error(), tb5_version());
	return err;
}

// The module's ABI version, checked at init by opening one of its links
// (tb5_open() asks the module its version and refuses another): 0, or
// -EPROTONOSUPPORT. A link that does not open for another reason is left
// to the connection that needs it, which says why.
int check_module_abi(const std::vector<tb5_link_info> &links)
{
	for (const tb5_link_info &l : links) {
		if (l.backend != TB5_BACKEND_KERNEL)
			continue;
		tb5_device *dev = nullptr;
		int r = tb5_open(l.name, &dev);
		if (r == 0) {
			tb5_close(dev);
			return 0;
		}
		if (r == -EPROTONOSUPPORT)
			return version_mismatch((std::string("opening link ") + l.name).c_str(), r);
	}
	return 0;
}

// The devices NCCL sees, listed once (the first init after the last
// finalize); 0, or -EPROTONOSUPPORT (nothing listed, and the next init tries
// again). g.mu held.
int list_locked()
{
	if (g.listed)
		return 0;
	g.links.clear();
	g.devs.clear();
	std::vector<tb5_link_info> links;
	int r = tb5::tools::list_links(&links);
	if (r == -EPROTONOSUPPORT)
		return version_mismatch("listing tb5 links", r);
	g.listed = true;
	if (r < 0) {
		TB5_INFO(NCCL_INIT | NCCL_NET, "no tb5 links: %s (%s)", tb5_strerror(r),
			 last_error());
		return 0;
	}
	// Loop pairs are NCCL devices when this host has nothing else
	// (TB5_NCCL_LOOP=1 always, 0 never): a job that spans hosts must not
	// pick a link that cannot reach them.
	bool other = std::any_of(links.begin(), links.end(),
				 [](const tb5_link_info &l) { return !(l.caps & TB5_CAP_LOOP); });
	long loop = env_long("TB5_NCCL_LOOP", -1, -1, 1);
	bool use_loop = loop == 1 || (loop == -1 && !other);
	for (size_t i = 0; i < links.size(); i++) {
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
	if (int err = check_module_abi(g.links); err < 0) {
		g.listed = false;
		g.links.clear();
		g.devs.clear();
		return err;
	}
	publish_host_locked();
	std::string names;
	for (auto &d : g.devs)
		names += (names.empty() ? "" : " ") + d.name;
	TB5_INFO(NCCL_INIT | NCCL_NET, "%zu device%s: %s (libtb5 %s)", g.devs.size(),
		 g.devs.size() == 1 ? "" : "s", names.empty() ? "-" : names.c_str(),
		 tb5_version());
	return 0;
}

} // namespace

std::string device_link_name(int dev)
{
	std::lock_guard lk(g.mu);
	return dev >= 0 && dev < (int)g.devs.size() ? g.devs[dev].name : std::string();
}

std::string describe_links()
{
	std::vector<tb5_link_info> links;
	if (tb5::tools::list_links(&links) < 0)
		return "(cannot list links)";
	std::string s;
	for (const tb5_link_info &l : links) {
		char buf[128];
		const char *state = tb5_link_state_str(l.state);
		if (l.peer_host)
			snprintf(buf, sizeof(buf), "%s%s to host %#llx (%s)", s.empty() ? "" : ", ",
				 l.name, (unsigned long long)l.peer_host, state);
		else
			snprintf(buf, sizeof(buf), "%s%s (%s)", s.empty() ? "" : ", ", l.name, state);
		s += buf;
	}
	return s.empty() ? "none" : s;
}

uint64_t local_host()
{
	std::vector<tb5_link_info> links;
	if (tb5::tools::list_links(&links) < 0)
		return 0;
	for (const tb5_link_info &l : links)
		if (!(l.caps & TB5_CAP_LOOP) && l.local_host)
			return l.local_host;
	for (const tb5_link_info &l : links)
		if (l.local_host)
			return l.local_host;
	return 0;
}

std::string this_host_name()
{
	char buf[256] = {};
	if (gethostname(buf, sizeof(buf) - 1) != 0)
		return {};
	return host_name(buf, sizeof(buf));
}

std::string host_name(const char *wire, size_t size)
{
	std::string s;
	for (size_t i = 0; i < size && wire[i]; i++) {
		const unsigned char ch = (unsigned char)wire[i];
		s += std::isalnum(ch) || ch == '-' || ch == '.' || ch == '_' ? (char)ch : '?';
	}
	return s;
}

namespace {

// "host 0x... (name)", or "host 0x..." without a name.
std::string host_label(uint64_t id, const std::string &name)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "host %#llx", (unsigned long long)id);
	return name.empty() ? std::string(buf) : std::string(buf) + " (" + name + ")";
}

} // namespace

std::string no_cable(uint64_t self, const std::vector<uint64_t> &peers,
		     const std::string &peer_name)
{
	std::string s = host_label(self, this_host_name()) + " has no cable to ";
	for (size_t i = 0; i < peers.size(); i++)
		s += std::string(i == 0 ? "" : i + 1 == peers.size() ? " or " : ", ") +
		     host_label(peers[i], peers.size() == 1 ? peer_name : std::string());
	return s + " (this host's links: " + describe_links() +
	       "); cable the pair or leave one of them out of the job";
}

ncclResult_t no_device_locked(const char *call, int dev)
{
	// Where ranks of other tb5 hosts share this machine (simulated
	// hosts), NCCL numbers devices over all of them (hosts.cc): a device
	// this host lacks is a cable it lacks.
	std::string unknown;
	std::vector<uint64_t> missing = dev >= 0 ? hosts_without_cable_locked(&unknown) :
						   std::vector<uint64_t>();
	if (missing.empty()) {
		TB5_WARN("%s: no device %d (there are %zu)", call, dev, g.devs.size());
		return ncclInvalidArgument;
	}
	TB5_WARN("%s: no device %d (there are %zu): %s. NCCL asked for a device that a "
		 "rank of another tb5 host on this machine lists (ranks that share a "
		 "machine share NCCL's topology), and that host has a cable this one "
		 "lacks%s%s%s", call, dev, g.devs.size(),
		 no_cable(local_host(), missing).c_str(),
		 unknown.empty() ? "" : " (not up yet here, so not ruled out: ",
		 unknown.c_str(), unknown.empty() ? "" : ")");
	return ncclInvalidArgument;
}

// ---- the calls -------------------------------------------------------------------

ncclResult_t init(void **ctx, ncclDebugLogger_t logger)
{
	if (logger)
		g_logger.store(logger, std::memory_order_relaxed);
	note_merge_settings();
	std::lock_guard lk(g.mu);
	// A version mismatch fails init: NCCL then uses another network
	// rather than a plugin that cannot open its links.
	if (int err = list_locked(); err < 0)
		return from_errno(err);
	g.inits++;
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
	unpublish_host(false);
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
	if (dev < 0 || dev >= (int)g.devs.size())
		return no_device_locked("getProperties", dev);
	const NetDev &nd = g.devs[dev];
	const tb5_link_info &l = g.links[nd.links[0]];
	std::memset(p, 0, sizeof(*p));
	p->name = const_cast<char *>(nd.name.c_str());
	p->pciPath = nd.pci_path.empty() ? nullptr : const_cast<char *>(nd.pci_path.c_str());
	p->guid = nd.guid;
	p->ptrSupport = ptr_support(l.caps);
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

ncclResult_t set_net_attr(void *ctx, const ncclNetAttr_v12_t *attr)
{
	(void)ctx;
	(void)attr;	// one flow per connection: nothing to tune
	return ncclSuccess;
}

} // namespace tb5net
