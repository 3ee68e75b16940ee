// SPDX-License-Identifier: MIT
//
// api.cc - the C API: argument checks that need no backend and the rules
// that are the library's, whichever backend runs (connect's check of the
// link, what a failed endpoint's error reads), then the backend. No
// exception leaves this file.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "backends.hpp"
#include "error.hpp"
#include "objects.hpp"
#include "tb5_ctxrules.h"

#ifndef TB5_VERSION_STRING
#error "TB5_VERSION_STRING must come from the build"
#endif

uint32_t tb5::cq_entries()
{
	const char *e = getenv("TB5_CQ_ENTRIES");

	if (!e || !*e)
		return TB5_CQ_ENTRIES_DEFAULT;
	unsigned long long v = strtoull(e, nullptr, 0);

	// Out of range reads as 0, which both backends refuse.
	return v > UINT32_MAX ? 0 : uint32_t(v);
}

int tb5::fail_cq_full(const char *name, uint32_t entries, const char *what)
{
	return fail(-ENOSPC, "%s: %s: the completion queue (%u entries) has no "
		    "entry left to promise; poll completions, then try again",
		    name, what, entries);
}

namespace {

// Runs @fn, turning what it throws into an errno.
template <typename Fn> int guarded(Fn &&fn) noexcept
{
	tb5::clear_error();
	try {
		return fn();
	} catch (const std::bad_alloc &) {
		return tb5::fail(-ENOMEM, "out of memory");
	} catch (const std::exception &e) {
		return tb5::fail(-EIO, "internal error: %s", e.what());
	} catch (...) {
		return tb5::fail(-EIO, "internal error");
	}
}

int check_op(tb5_device *dev, const tb5_op &op)
{
	if (op.kind != TB5_POST_SEND && op.kind != TB5_POST_RECV)
		return tb5::fail(-EINVAL, "operation kind %u is neither "
				 "TB5_POST_SEND nor TB5_POST_RECV", op.kind);
	if (!op.ep || op.ep->dev != dev)
		return tb5::fail(-EINVAL, "the operation's endpoint does not "
				 "belong to this device");
	if (op.ep->listener)
		return tb5::fail(-EINVAL, "a listener carries no operations: "
				 "post on the endpoints it accepts");
	if (!op.mr || op.mr->dev != dev)
		return tb5::fail(-EINVAL, "the operation's memory region is not "
				 "registered on this device");
	if (op.offset > op.mr->len || op.len > op.mr->len - op.offset)
		return tb5::fail(-EINVAL, "bytes [%llu, +%llu) lie outside the "
				 "%llu-byte region",
				 (unsigned long long)op.offset,
				 (unsigned long long)op.len,
				 (unsigned long long)op.mr->len);
	return 0;
}

int post_checked(tb5_device *dev, const tb5_op *ops, size_t count,
		 size_t *posted)
{
	size_t ok = 0;

	if (posted)
		*posted = 0;
	if (!dev || (!ops && count))
		return tb5::fail(-EINVAL, "no device or no operations");
	// Check all first: what is posted must be a prefix of what was
	// asked, and a bad operation after good ones is still a bad call.
	for (size_t i = 0; i < count; i++) {
		int ret = check_op(dev, ops[i]);

		if (ret)
			return ret;
	}
	int ret = count ? dev->post(ops, count, &ok) : 0;

	if (posted)
		*posted = ok;
	return ret;
}

// An address that names a host is reached over a ready link to that host
// only; host 0 leaves the peer to the link.
int check_reaches(tb5_device *dev, uint64_t host)
{
	tb5_link_info info;

	if (!host)
		return 0;
	int ret = dev->query(&info);

	if (ret)
		return ret;
	if (info.state != TB5_LINK_STATE_READY)
		return tb5::fail(-ENOTCONN, "%s is not ready: its peer has not "
				 "answered yet", info.name);
	if (info.peer_host != host)
		return tb5::fail(-EHOSTUNREACH, "%s leads to host %#llx, not to "
				 "host %#llx", info.name,
				 (unsigned long long)info.peer_host,
				 (unsigned long long)host);
	return 0;
}

int check_listener(tb5_endpoint *ep, const char *what)
{
	if (!ep->listener)
		return tb5::fail(-EINVAL, "%s needs a listener", what);
	return 0;
}

// tb5_send() and tb5_recv(): a batch of one.
int post_one(uint32_t kind, tb5_endpoint *ep, tb5_mr *mr, uint64_t offset,
	     uint64_t len, uint32_t tag, uint64_t user_data)
{
	if (!ep)
		return -EINVAL;
	tb5_op op = { kind, tag, ep, mr, offset, len, user_data };

	return guarded([&] { return post_checked(ep->dev, &op, 1, nullptr); });
}

} // namespace

extern "C" {

const char *tb5_version(void)
{
	return TB5_VERSION_STRING;
}

int tb5_list_links(struct tb5_link_info **links, size_t *count)
{
	if (!links || !count)
		return -EINVAL;
	*links = nullptr;
	*count = 0;
	return guarded([&] {
		std::vector<tb5_link_info> v;
		int ret = tb5::sim::selected() ? tb5::sim::list_links(v) :
						 tb5::kernel::list_links(v);

		if (ret || v.empty())
			return ret;
		auto *out = static_cast<tb5_link_info *>(
			calloc(v.size(), sizeof(tb5_link_info)));
		if (!out)
			return tb5::fail(-ENOMEM, "out of memory");
		memcpy(out, v.data(), v.size() * sizeof(tb5_link_info));
		*links = out;
		*count = v.size();
		return 0;
	});
}

void tb5_free_link_list(struct tb5_link_info *links)
{
	free(links);
}

int tb5_open(const char *name, tb5_device **dev)
{
	if (!name || !dev)
		return -EINVAL;
	*dev = nullptr;
	return guarded([&] {
		return tb5::sim::selected() ? tb5::sim::open(name, dev) :
					      tb5::kernel::open(name, dev);
	});
}

void tb5_close(tb5_device *dev)
{
	tb5::clear_error();
	delete dev;	// destructors do not throw
}

int tb5_query(tb5_device *dev, struct tb5_link_info *info)
{
	if (!dev || !info)
		return -EINVAL;
	return guarded([&] { return dev->query(info); });
}

int tb5_get_counters(tb5_device *dev, struct tb5_counters *counters)
{
	if (!dev || !counters)
		return -EINVAL;
	return guarded([&] { return dev->counters(counters); });
}

int tb5_get_drops(tb5_device *dev, struct tb5_drops *drops)
{
	if (!dev || !drops)
		return -EINVAL;
	return guarded([&] { return dev->drops(drops); });
}

// A region of this address space: [addr, addr + len), not empty, not
// wrapping around. 0 or -EINVAL with the message.
static int check_range(const void *addr, size_t len)
{
	if (!addr || !len)
		return tb5::fail(-EINVAL, "a region needs an address and a "
				 "length > 0");
	if ((uintptr_t)addr + len < (uintptr_t)addr)
		return tb5::fail(-EINVAL, "the region wraps around the "
				 "address space");
	return 0;
}

int tb5_reg_host(tb5_device *dev, void *addr, size_t len, tb5_mr **mr)
{
	if (!dev || !mr)
		return -EINVAL;
	*mr = nullptr;
	return guarded([&] {
		int ret = check_range(addr, len);

		return ret ? ret : dev->reg_host(addr, len, mr);
	});
}

int tb5_reg_dmabuf(tb5_device *dev, int fd, uint64_t offset, uint64_t len,
		   tb5_mr **mr)
{
	if (!dev || !mr)
		return -EINVAL;
	*mr = nullptr;
	return guarded([&] {
		if (fd < 0 || !len)
			return tb5::fail(-EINVAL, "a dma-buf region needs an fd "
					 "and a length > 0");
		return dev->reg_dmabuf(fd, offset, len, mr);
	});
}

int tb5_reg_gpu(tb5_device *dev, void *addr, size_t len, int dmabuf_fd,
		uint64_t dmabuf_offset, tb5_mr **mr)
{
	if (!dev || !mr)
		return -EINVAL;
	*mr = nullptr;
	return guarded([&] {
		int ret = check_range(addr, len);

		if (ret)
			return ret;
		if (dmabuf_fd < -1)
			return tb5::fail(-EBADF, "dmabuf_fd %d: a dma-buf fd, or "
					 "-1 for none", dmabuf_fd);
		if (dmabuf_fd >= 0 && dmabuf_offset + len < dmabuf_offset)
			return tb5::fail(-EINVAL, "dma-buf offset %llu + %zu bytes "
					 "overflow", (unsigned long long)dmabuf_offset,
					 len);
		return dev->reg_gpu(addr, len, dmabuf_fd, dmabuf_offset, mr);
	});
}

// The kernel backend's (and any backend's without a DMA engine of its own).
int tb5_device::reg_gpu(void *, size_t len, int fd, uint64_t offset, tb5_mr **mr)
{
	if (fd < 0)
		return tb5::fail(-EOPNOTSUPP, "this link registers GPU memory "
				 "through its dma-buf only: pass the dma-buf fd "
				 "(NCCL's regMrDmaBuf), not an address alone");
	return reg_dmabuf(fd, offset, len, mr);
}

int tb5_dereg(tb5_mr *mr)
{
	if (!mr)
		return -EINVAL;
	return guarded([&] { return mr->dev->dereg(mr); });
}

int tb5_endpoint_listen(tb5_device *dev, uint64_t service, uint32_t flags,
			uint64_t context, tb5_endpoint **ep)
{
	if (!dev || !ep)
		return -EINVAL;
	*ep = nullptr;
	return guarded([&] {
		if (flags & ~TB5_LISTEN_WELL_KNOWN)
			return tb5::fail(-EINVAL, "unknown listen flags %#x",
					 flags);
		return dev->listen(service, flags, context, ep);
	});
}

int tb5_endpoint_address(tb5_endpoint *listener, struct tb5_address *addr)
{
	if (!listener || !addr)
		return -EINVAL;
	return guarded([&] {
		int ret = check_listener(listener, "an address");

		return ret ? ret : listener->dev->address(listener, addr);
	});
}

int tb5_endpoint_connect(tb5_device *dev, const struct tb5_address *addr,
			 uint64_t context, tb5_endpoint **ep)
{
	if (!dev || !addr || !ep)
		return -EINVAL;
	*ep = nullptr;
	return guarded([&] {
		int ret = check_reaches(dev, addr->host);

		return ret ? ret : dev->connect(*addr, context, ep);
	});
}

int tb5_endpoint_accept(tb5_endpoint *listener, uint64_t context,
			tb5_endpoint **ep)
{
	if (!listener || !ep)
		return -EINVAL;
	*ep = nullptr;
	return guarded([&] {
		int ret = check_listener(listener, "accept");

		return ret ? ret : listener->dev->accept(listener, context, ep);
	});
}

int tb5_endpoint_close(tb5_endpoint *ep)
{
	if (!ep)
		return -EINVAL;
	return guarded([&] { return ep->dev->close(ep); });
}

int tb5_endpoint_state(tb5_endpoint *ep, int *error)
{
	if (!ep)
		return -EINVAL;
	if (error)
		*error = 0;
	return guarded([&] {
		int st = ep->dev->state(ep, error);

		// A failed endpoint says why: the status of its last error
		// event, -ENOTCONN if it failed without one.
		if (error && !*error && st == TB5_ENDPOINT_FAILED)
			*error = -ENOTCONN;
		return st;
	});
}

int tb5_post(tb5_device *dev, const struct tb5_op *ops, size_t count,
	     size_t *posted)
{
	return guarded([&] { return post_checked(dev, ops, count, posted); });
}

int tb5_send(tb5_endpoint *ep, tb5_mr *mr, uint64_t offset, uint64_t len,
	     uint32_t tag, uint64_t user_data)
{
	return post_one(TB5_POST_SEND, ep, mr, offset, len, tag, user_data);
}

int tb5_recv(tb5_endpoint *ep, tb5_mr *mr, uint64_t offset, uint64_t len,
	     uint32_t tag, uint64_t user_data)
{
	return post_one(TB5_POST_RECV, ep, mr, offset, len, tag, user_data);
}

int tb5_poll(tb5_device *dev, struct tb5_wc *wc, int max)
{
	if (!dev || (!wc && max > 0) || max < 0)
		return -EINVAL;
	// No clear_error() here: the busy loop must stay cheap.
	try {
		return dev->poll(wc, max);
	} catch (...) {
		return tb5::fail(-EIO, "internal error while polling");
	}
}

int tb5_wait(tb5_device *dev, int timeout_ms)
{
	if (!dev)
		return -EINVAL;
	return guarded([&] { return dev->wait(timeout_ms); });
}

} // extern "C"
