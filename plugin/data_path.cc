// SPDX-License-Identifier: MIT
//
// data_path.cc - the data path: comms and their requests, isend, irecv,
// iflush, test, and the progress that polls a link and hands each
// completion to its request.
//
// Nothing blocks: isend/irecv return a NULL request when the comm's 32
// requests or the endpoint's operation slots are all in use, and test()
// polls the comm's link (at most once per TB5_NCCL_POLL_NS), whichever
// comm the completions it finds belong to.
#include <algorithm>
#include <cerrno>
#include <climits>

#include "env.hpp"
#include "log.hpp"
#include "state.hpp"

namespace tb5net {

namespace {

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

const char *kind_name(const Comm *c)
{
	return c->kind == Kind::kSend ? "send" : "receive";
}

} // namespace

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

void close_endpoint(Device *d, EndpointPtr ep)
{
	std::lock_guard lk(d->poll_mu);
	ep.reset();
}

Comm *new_comm(Kind kind, Device *d, EndpointPtr ep)
{
	auto *c = new Comm{};
	c->kind = kind;
	c->dev = d;
	c->ep = std::move(ep);
	c->max_ops = (int)std::min<uint32_t>(d->info.max_ops ? d->info.max_ops : 1, INT_MAX);
	for (auto &r : c->reqs)
		r.comm = c;
	return c;
}

void delete_comm(Comm *c)
{
	if (c->ep)
		close_endpoint(c->dev, std::move(c->ep));
	release(c->dev);
	delete c;
}

ncclResult_t isend(void *send_comm, void *data, size_t size, int tag,
		   void *mhandle, void **request)
{
	if (!send_comm || !request)
		return ncclInvalidArgument;
	*request = nullptr;
	auto *c = static_cast<Comm *>(send_comm);
	if (c->kind != Kind::kSend)
		return ncclInvalidArgument;
	tb5_mr *mr;
	uint64_t off;
	if (locate(c, mhandle, data, size, &mr, &off) < 0)
		return ncclInvalidArgument;
	Request *req = take_request(c, 1);
	if (!req)
		return ncclSuccess;	// all in flight: NCCL asks again
	const uint64_t t0 = stats_on() ? now_ns() : 0;
	int r = tb5_send(c->ep.get(), mr, off, size, (uint32_t)tag, (uint64_t)(uintptr_t)req);
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
	if (c->kind != Kind::kRecv)
		return ncclInvalidArgument;
	tb5_op ops[kMaxRecvs];
	for (int i = 0; i < n; i++) {
		tb5_mr *mr;
		uint64_t off;
		if (locate(c, mhandles ? mhandles[i] : nullptr, data[i], sizes[i], &mr, &off) < 0)
			return ncclInvalidArgument;
		ops[i] = tb5_op{TB5_POST_RECV, (uint32_t)tags[i], c->ep.get(), mr, off, sizes[i], 0};
	}
	Request *req = take_request(c, n);
	if (!req)
		return ncclSuccess;
	for (int i = 0; i < n; i++)
		ops[i].user_data = (uint64_t)(uintptr_t)req | (uint64_t)i;
	size_t posted = 0;
	const uint64_t t0 = stats_on() ? now_ns() : 0;
	int r = tb5_post(c->dev->dev.get(), ops, (size_t)n, &posted);
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
	// NCCL flushes a receive into GPU memory before its kernel reads it.
	// The simulator reports a receive only once its DMA into the buffer is
	// done (cuStreamSynchronize), so its bytes are visible: nothing to do.
	// The kernel backend reports it once the NHI's last write and its
	// descriptor are in; a PCIe peer write to GPU memory is ordered before
	// the completion only as the platform orders posted writes, which is
	// not yet checked on hardware (docs/plugin.md, "GPU memory").
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
				int st = tb5_endpoint_state(c->ep.get(), &why);
				if (st != TB5_ENDPOINT_CONNECTED) {
					TB5_WARN("%s on %s: the connection to host %#llx is %s",
						 kind_name(c), c->dev->name.c_str(),
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
	trace_ev('T', c, req, req->bytes[0]);
	put_request(req);
	*done = 1;
	if (err) {
		TB5_WARN("%s on %s failed: %s%s", kind_name(c), c->dev->name.c_str(),
			 tb5_strerror(err),
			 err == -EMSGSIZE ? " (the message is larger than the receive buffer)" :
					    "");
		return from_errno(err);
	}
	return ncclSuccess;
}

ncclResult_t irecv_consumed(void *recv_comm, int n, void *request)
{
	(void)recv_comm;
	(void)n;
	(void)request;
	return ncclSuccess;
}

} // namespace tb5net
