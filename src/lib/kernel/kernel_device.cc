// SPDX-License-Identifier: MIT
//
// kernel_device.cc - the kernel backend: a device is one open() of
// /dev/tb5_<n>, driven through the module's uAPI (dkms/include/uapi).
//
// Completions arrive in a ring that the module shares with us by mmap():
// polling reads it with acquire/release loads and no system call; waiting
// is poll(2) on the file descriptor.
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends.hpp"
#include "error.hpp"
#include "kernel/sysfs.hpp"
#include "objects.hpp"
#include "tb5_uapi.h"
#include "util/mapping.hpp"
#include "util/unique_fd.hpp"

static_assert(TB5_LISTEN_WELL_KNOWN == (1u << 0));
static_assert(TB5_CQE_SEND == TB5_WC_SEND && TB5_CQE_RECV == TB5_WC_RECV &&
	      TB5_CQE_EVENT == TB5_WC_EVENT);
static_assert(TB5_EVENT_CONNECTED == TB5_WC_CONNECTED &&
	      TB5_EVENT_INCOMING == TB5_WC_INCOMING &&
	      TB5_EVENT_PEER_CLOSED == TB5_WC_PEER_CLOSED &&
	      TB5_EVENT_ERROR == TB5_WC_ERROR);
static_assert(TB5_EP_STATE_LISTENING == TB5_ENDPOINT_LISTENING &&
	      TB5_EP_STATE_CONNECTING == TB5_ENDPOINT_CONNECTING &&
	      TB5_EP_STATE_CONNECTED == TB5_ENDPOINT_CONNECTED &&
	      TB5_EP_STATE_PEER_CLOSED == TB5_ENDPOINT_PEER_CLOSED &&
	      TB5_EP_STATE_ERROR == TB5_ENDPOINT_FAILED);
static_assert(TB5_OP_SEND == TB5_POST_SEND && TB5_OP_RECV == TB5_POST_RECV);
// The drop kinds are the core's (tb5_core.h, whose functions tb5_listen(),
// tb5_connect()... hide the uAPI's structs of the same names: they are
// spelled `struct tb5_listen` here).
static_assert(TB5_UAPI_DROP_MALFORMED == TB5_DROP_MALFORMED &&
	      TB5_UAPI_DROP_UNKNOWN_CONN == TB5_DROP_UNKNOWN_CONN &&
	      TB5_UAPI_DROP_OUT_OF_WINDOW == TB5_DROP_OUT_OF_WINDOW &&
	      TB5_UAPI_DROP_RING_OVERFLOW == TB5_DROP_OVERFLOW &&
	      TB5_UAPI_DROP_SEQ_GAP == TB5_DROP_SEQ_GAP &&
	      TB5_UAPI_DROP_KINDS == TB5_DROP_KINDS);

namespace tb5::kernel {
namespace {

// What to do about a module of another ABI version (-EPROTONOSUPPORT).
constexpr char kMatchingRelease[] =
	"install tb5-dkms and libtb5 of the same release, then reload the "
	"module (modprobe -r tb5 && modprobe tb5)";

struct KernelMr : tb5_mr {
	uint32_t handle;
	KernelMr(tb5_device *d, uint64_t l, uint32_t h) : tb5_mr(d, l), handle(h) {}
};

struct KernelEp : tb5_endpoint {
	uint32_t handle;
	uint64_t service = 0;	// a listener's address
	uint64_t cookie = 0;
	KernelEp(tb5_device *d, uint64_t ctx, bool listens, uint32_t h)
		: tb5_endpoint(d, ctx, listens), handle(h)
	{
	}
};

int sys_err()
{
	return -errno;
}

class KernelDevice final : public tb5_device {
public:
	KernelDevice(std::string name, UniqueFd fd)
		: name_(std::move(name)), fd_(std::move(fd))
	{
	}
	~KernelDevice() override;

	int init();

	int query(tb5_link_info *info) override;
	int counters(tb5_counters *c) override;
	int drops(tb5_drops *d) override;
	int reg_host(void *addr, size_t len, tb5_mr **mr) override;
	int reg_dmabuf(int fd, uint64_t offset, uint64_t len,
		       tb5_mr **mr) override;
	int dereg(tb5_mr *mr) override;
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
	int ioc(unsigned long req, void *arg) const
	{
		return ::ioctl(fd_.get(), req, arg) ? sys_err() : 0;
	}
	// Says why ioctl @req (named @req_name), made for @what ("listen",
	// "post"...), failed with @ret: the completion queue had no entry
	// to promise (the message of both backends), or the module's errno.
	int ioc_fail(int ret, const char *req_name, const char *what) const
	{
		if (ret == -ENOSPC)
			return fail_cq_full(name_.c_str(), ring_->entries, what);
		return fail(ret, "%s: %s: %s", name_.c_str(), req_name,
			    strerror(-ret));
	}
	// The endpoint that the module made as @handle, now libtb5's too.
	// If that fails (it throws std::bad_alloc), the module's endpoint is
	// closed before the exception goes on, and nothing is left of it.
	// Called with mu_ held, from the ioctl that made the endpoint on.
	KernelEp *adopt_ep(uint64_t context, bool listener, uint32_t handle);
	bool cq_empty() const;

	std::string name_;
	UniqueFd fd_;
	struct tb5_version version_ = {};
	tb5_info info_ = {};

	Mapping cq_map_;
	tb5_cq_ring *ring_ = nullptr;
	tb5_cqe *entries_ = nullptr;
	uint32_t mask_ = 0;
	uint32_t head_ = 0;
	std::mutex poll_mu_;		// one consumer of the ring at a time

	// The maps below. listen(), connect() and accept() hold it from
	// their ioctl until the new endpoint is in eps_: the module may queue
	// the endpoint's first event before the ioctl returns, and poll() on
	// another thread, which maps entries to endpoints under mu_, must not
	// take it for an event of a closed endpoint and drop it.
	std::mutex mu_;
	std::unordered_map<uint32_t, std::unique_ptr<KernelEp>> eps_;	// by handle
	std::unordered_map<tb5_mr *, std::unique_ptr<KernelMr>> mrs_;
};

KernelDevice::~KernelDevice()
{
	// Closing the file closes endpoints and deregisters memory in the
	// module; the mapping goes first, then the descriptor.
	cq_map_.reset();
	fd_.reset();
}

int KernelDevice::init()
{
	int ret = ioc(TB5_IOC_GET_VERSION, &version_);

	if (ret == -ENOTTY || ret == -EINVAL)
		return fail(-ENOTTY, "%s is not a tb5 device (TB5_IOC_GET_VERSION "
			    "refused)", name_.c_str());
	if (ret)
		return fail(ret, "%s: TB5_IOC_GET_VERSION: %s", name_.c_str(),
			    strerror(-ret));
	// A version mismatch, not a protocol break: its own errno.
	if (version_.abi_version != TB5_ABI_VERSION)
		return fail(-EPROTONOSUPPORT,
			    "%s: the tb5 module (%u.%u.%u) speaks ABI version "
			    "%u, this libtb5 (%s) speaks ABI version %u: %s",
			    name_.c_str(), version_.module_major,
			    version_.module_minor, version_.module_patch,
			    version_.abi_version, tb5_version(), TB5_ABI_VERSION,
			    kMatchingRelease);
	ret = ioc(TB5_IOC_GET_INFO, &info_);
	if (ret)
		return fail(ret, "%s: TB5_IOC_GET_INFO: %s", name_.c_str(),
			    strerror(-ret));
	tb5_cq_create cc = {};
	cc.entries = cq_entries();
	ret = ioc(TB5_IOC_CQ_CREATE, &cc);
	if (ret)
		return fail(ret, "%s: TB5_IOC_CQ_CREATE(%u entries): %s",
			    name_.c_str(), cc.entries, strerror(-ret));
	void *p = ::mmap(nullptr, cc.mmap_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, fd_.get(), 0);
	if (p == MAP_FAILED)
		return fail(sys_err(), "%s: mmap of the completion queue: %s",
			    name_.c_str(), strerror(errno));
	cq_map_ = Mapping(p, cc.mmap_size);
	ring_ = static_cast<tb5_cq_ring *>(p);
	if (cc.entries_offset + uint64_t(ring_->entries) * sizeof(tb5_cqe) >
		    cc.mmap_size ||
	    !ring_->entries || (ring_->entries & (ring_->entries - 1)))
		return fail(-EPROTONOSUPPORT, "%s: the tb5 module (%u.%u.%u) "
			    "says ABI version %u, but its completion queue "
			    "layout is not what ABI version %u of this libtb5 "
			    "(%s) says: %s", name_.c_str(),
			    version_.module_major, version_.module_minor,
			    version_.module_patch, version_.abi_version,
			    TB5_ABI_VERSION, tb5_version(), kMatchingRelease);
	entries_ = reinterpret_cast<tb5_cqe *>(static_cast<char *>(p) +
					       cc.entries_offset);
	mask_ = ring_->entries - 1;
	head_ = __atomic_load_n(&ring_->head, __ATOMIC_RELAXED);
	return 0;
}

int KernelDevice::query(tb5_link_info *info)
{
	tb5_info ki = {};
	int ret = ioc(TB5_IOC_GET_INFO, &ki);

	if (ret)
		return fail(ret, "%s: TB5_IOC_GET_INFO: %s", name_.c_str(),
			    strerror(-ret));
	*info = {};
	snprintf(info->name, sizeof(info->name), "%s", name_.c_str());
	info->backend = TB5_BACKEND_KERNEL;
	info->state = ki.state;
	info->local_host = ki.local_host;
	info->peer_host = ki.state == TB5_STATE_READY ? ki.peer_host : 0;
	info->index = ki.link_index;
	info->ring_size = ki.ring_size;
	info->max_frame = ki.max_frame;
	info->speed_mbps = ki.speed_mbps;
	info->max_ops = TB5_UAPI_EP_OPS_MAX;
	info->max_msg = TB5_UAPI_MSG_MAX;
	if (ki.features & TB5_FEATURE_HOST_MEM)
		info->caps |= TB5_CAP_HOST_MEM;
	if (ki.features & TB5_FEATURE_DMABUF)
		info->caps |= TB5_CAP_DMABUF;
	if (ki.features & TB5_FEATURE_LOOP)
		info->caps |= TB5_CAP_LOOP;
	return 0;
}

int KernelDevice::counters(tb5_counters *c)
{
	const std::string dir = class_dir() + "/" + name_ + "/";
	struct {
		const char *attr;
		uint64_t *field;
	} const map[] = {
		{ "tx_frames", &c->tx_frames }, { "tx_bytes", &c->tx_bytes },
		{ "rx_frames", &c->rx_frames }, { "rx_bytes", &c->rx_bytes },
		{ "errors", &c->errors },
	};

	*c = {};
	for (auto &m : map) {
		auto s = read_attr(dir + m.attr);

		if (!s)
			return fail(-ENODEV, "%s: cannot read %s%s", name_.c_str(),
				    dir.c_str(), m.attr);
		*m.field = strtoull(s->c_str(), nullptr, 0);
	}
	return 0;
}

int KernelDevice::drops(tb5_drops *d)
{
	tb5_stats st = {};

	*d = {};
	if (!(version_.features & TB5_FEATURE_STATS))
		return fail(-EOPNOTSUPP, "%s: tb5.ko %u.%u.%u has no drop counters",
			    name_.c_str(), version_.module_major,
			    version_.module_minor, version_.module_patch);
	if (int err = ioc(TB5_IOC_GET_STATS, &st))
		return fail(err, "%s: TB5_IOC_GET_STATS failed", name_.c_str());
	fill_drops(st.drops, d);
	return 0;
}

int KernelDevice::reg_host(void *addr, size_t len, tb5_mr **mr)
{
	tb5_reg_mem rm = {};

	rm.addr = reinterpret_cast<uintptr_t>(addr);
	rm.len = len;
	int ret = ioc(TB5_IOC_REG_MEM, &rm);

	if (ret == -ENOMEM || ret == -EPERM)
		return fail(ret, "%s: pinning %zu bytes failed: %s (RLIMIT_MEMLOCK "
			    "too low? see `ulimit -l`)", name_.c_str(), len,
			    strerror(-ret));
	if (ret)
		return fail(ret, "%s: TB5_IOC_REG_MEM(%zu bytes): %s",
			    name_.c_str(), len, strerror(-ret));
	auto m = std::make_unique<KernelMr>(this, len, rm.handle);
	std::lock_guard lk(mu_);

	*mr = m.get();
	mrs_.emplace(m.get(), std::move(m));
	return 0;
}

int KernelDevice::reg_dmabuf(int fd, uint64_t offset, uint64_t len,
			     tb5_mr **mr)
{
	struct tb5_reg_dmabuf rd = {};

	rd.fd = fd;
	rd.offset = offset;
	rd.len = len;
	int ret = ioc(TB5_IOC_REG_DMABUF, &rd);

	if (ret)
		return fail(ret, "%s: TB5_IOC_REG_DMABUF(fd %d, offset %llu, "
			    "%llu bytes): %s", name_.c_str(), fd,
			    (unsigned long long)offset, (unsigned long long)len,
			    strerror(-ret));
	auto m = std::make_unique<KernelMr>(this, len, rd.handle);
	std::lock_guard lk(mu_);

	*mr = m.get();
	mrs_.emplace(m.get(), std::move(m));
	return 0;
}

int KernelDevice::dereg(tb5_mr *mr)
{
	std::lock_guard lk(mu_);
	auto it = mrs_.find(mr);

	if (it == mrs_.end())
		return fail(-EINVAL, "not a region of %s", name_.c_str());
	tb5_dereg_mem dm = {};
	dm.handle = it->second->handle;
	int ret = ioc(TB5_IOC_DEREG_MEM, &dm);

	if (ret == -EBUSY)
		return fail(ret, "%s: the region is still in use by an "
			    "operation", name_.c_str());
	if (ret)
		return fail(ret, "%s: TB5_IOC_DEREG_MEM: %s", name_.c_str(),
			    strerror(-ret));
	mrs_.erase(it);
	return 0;
}

KernelEp *KernelDevice::adopt_ep(uint64_t context, bool listener,
				   uint32_t handle)
{
	try {
		auto e = std::make_unique<KernelEp>(this, context, listener,
						    handle);
		KernelEp *p = e.get();

		// Only the move is left once the entry exists: all or nothing.
		eps_[handle] = std::move(e);
		return p;
	} catch (...) {
		struct tb5_ep_close ec = {};

		ec.ep = handle;
		ioc(TB5_IOC_EP_CLOSE, &ec);
		throw;
	}
}

int KernelDevice::listen(uint64_t service, uint32_t flags, uint64_t context,
			 tb5_endpoint **ep)
{
	struct tb5_listen li = {};

	if ((flags & TB5_LISTEN_WELL_KNOWN) &&
	    !(version_.features & TB5_FEATURE_WELL_KNOWN))
		return fail(-EOPNOTSUPP, "%s: this tb5 module has no well-known "
			    "listeners", name_.c_str());
	li.service = service;
	li.flags = flags;
	std::lock_guard lk(mu_);
	int ret = ioc(TB5_IOC_LISTEN, &li);

	if (ret == -EADDRINUSE)
		return fail(ret, "%s: service %#llx has a listener already",
			    name_.c_str(), (unsigned long long)service);
	if (ret)
		return ioc_fail(ret, "TB5_IOC_LISTEN", "listen");
	KernelEp *e = adopt_ep(context, true, li.ep);

	e->service = service;
	e->cookie = li.cookie;
	*ep = e;
	return 0;
}

int KernelDevice::address(tb5_endpoint *listener, tb5_address *addr)
{
	auto *ke = static_cast<KernelEp *>(listener);

	addr->host = info_.local_host;
	addr->service = ke->service;
	addr->cookie = ke->cookie;
	return 0;
}

int KernelDevice::connect(const tb5_address &addr, uint64_t context,
			  tb5_endpoint **ep)
{
	struct tb5_connect cn = {};

	cn.service = addr.service;
	cn.cookie = addr.cookie;
	std::lock_guard lk(mu_);
	int ret = ioc(TB5_IOC_CONNECT, &cn);

	if (ret)
		return ioc_fail(ret, "TB5_IOC_CONNECT", "connect");
	*ep = adopt_ep(context, false, cn.ep);
	return 0;
}

int KernelDevice::accept(tb5_endpoint *listener, uint64_t context,
			 tb5_endpoint **ep)
{
	struct tb5_accept ac = {};

	ac.listener = static_cast<KernelEp *>(listener)->handle;
	std::lock_guard lk(mu_);
	int ret = ioc(TB5_IOC_ACCEPT, &ac);

	if (ret == -EAGAIN)
		return ret;
	if (ret)
		return ioc_fail(ret, "TB5_IOC_ACCEPT", "accept");
	*ep = adopt_ep(context, false, ac.ep);
	return 0;
}

int KernelDevice::close(tb5_endpoint *ep)
{
	auto *ke = static_cast<KernelEp *>(ep);
	struct tb5_ep_close ec = {};
	std::lock_guard lk(mu_);
	auto it = eps_.find(ke->handle);

	if (it == eps_.end() || it->second.get() != ke)
		return fail(-EINVAL, "not an endpoint of %s", name_.c_str());
	ec.ep = ke->handle;
	int ret = ioc(TB5_IOC_EP_CLOSE, &ec);

	// Whatever the module said, the handle is gone for the caller; its
	// late completions are dropped by poll().
	eps_.erase(it);
	if (ret)
		return fail(ret, "%s: TB5_IOC_EP_CLOSE: %s", name_.c_str(),
			    strerror(-ret));
	return 0;
}

int KernelDevice::state(tb5_endpoint *ep, int *error)
{
	tb5_ep_query q = {};

	q.ep = static_cast<KernelEp *>(ep)->handle;
	int ret = ioc(TB5_IOC_EP_QUERY, &q);

	if (ret)
		return fail(ret, "%s: TB5_IOC_EP_QUERY: %s", name_.c_str(),
			    strerror(-ret));
	if (error)
		*error = q.error;
	return int(q.state);
}

int KernelDevice::post(const tb5_op *ops, size_t count, size_t *posted)
{
	tb5_post_op kops[TB5_UAPI_POST_MAX];
	size_t done = 0;

	while (done < count) {
		uint32_t n = uint32_t(std::min<size_t>(count - done,
						       TB5_UAPI_POST_MAX));

		for (uint32_t i = 0; i < n; i++) {
			const tb5_op &o = ops[done + i];

			kops[i] = {};
			kops[i].op = o.kind;
			kops[i].ep = static_cast<KernelEp *>(o.ep)->handle;
			kops[i].mem = static_cast<KernelMr *>(o.mr)->handle;
			kops[i].tag = o.tag;
			kops[i].offset = o.offset;
			kops[i].len = o.len;
			kops[i].user_data = o.user_data;
		}
		struct tb5_post p = {};
		p.ops = reinterpret_cast<uintptr_t>(kops);
		p.count = n;
		int ret = ioc(TB5_IOC_POST, &p);

		done += std::min(p.posted, n);
		if (ret) {
			*posted = done;
			if (ret == -EAGAIN)
				return ret;	// the busy path: no message
			return ioc_fail(ret, "TB5_IOC_POST", "post");
		}
	}
	*posted = done;
	return 0;
}

bool KernelDevice::cq_empty() const
{
	return __atomic_load_n(&ring_->tail, __ATOMIC_ACQUIRE) == head_;
}

int KernelDevice::poll(tb5_wc *wc, int max)
{
	std::lock_guard plk(poll_mu_);
	uint32_t tail = __atomic_load_n(&ring_->tail, __ATOMIC_ACQUIRE);
	int n = 0;

	if (tail == head_)
		return 0;
	if (tail - head_ > mask_ + 1)
		return fail(-EPROTO, "%s: the completion queue's tail is "
			    "corrupt", name_.c_str());
	std::lock_guard lk(mu_);
	while (head_ != tail && n < max) {
		const tb5_cqe e = entries_[head_ & mask_];
		auto it = eps_.find(e.ep);

		head_++;
		if (it == eps_.end())
			continue;	// the endpoint was closed
		tb5_wc &w = wc[n++];
		w = {};
		w.kind = e.op;
		w.event = e.event;
		w.status = e.status;
		w.tag = e.tag;
		w.bytes = e.bytes;
		w.ep = it->second.get();
		w.user_data = e.op == TB5_CQE_EVENT ? it->second->context :
						      e.user_data;
	}
	__atomic_store_n(&ring_->head, head_, __ATOMIC_RELEASE);
	return n;
}

int KernelDevice::wait(int timeout_ms)
{
	struct pollfd pfd = { fd_.get(), POLLIN, 0 };

	if (!cq_empty())
		return 0;
	int ret = ::poll(&pfd, 1, timeout_ms);

	if (ret < 0)
		return errno == EINTR ? -EINTR :
					fail(sys_err(), "%s: poll: %s",
					     name_.c_str(), strerror(errno));
	return ret == 0 ? -ETIMEDOUT : 0;
}

} // namespace

int list_links(std::vector<tb5_link_info> &out)
{
	for (const auto &name : link_names()) {
		tb5_link_info info;

		if (read_link(name, info))
			out.push_back(info);
	}
	return 0;
}

int open(const char *name, tb5_device **dev)
{
	if (!parse_link_name(name))
		return fail(-ENODEV, "\"%s\" is not a tb5 link name (tb5_<n>)",
			    name);
	const std::string path = dev_dir() + "/" + name;
	UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));

	if (!fd) {
		int err = errno;

		if (err == ENOENT)
			return fail(-ENODEV, "no %s: is the tb5 module loaded "
				    "(modprobe tb5), and is %s a link?",
				    path.c_str(), name);
		if (err == EACCES || err == EPERM)
			return fail(-err, "permission denied opening %s: join the "
				    "group that owns it (tb5) or ask an "
				    "administrator", path.c_str());
		return fail(-err, "cannot open %s: %s", path.c_str(),
			    strerror(err));
	}
	auto d = std::make_unique<KernelDevice>(name, std::move(fd));
	int ret = d->init();

	if (ret)
		return ret;
	*dev = d.release();
	return 0;
}

} // namespace tb5::kernel
