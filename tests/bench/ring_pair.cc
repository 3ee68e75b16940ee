// SPDX-License-Identifier: MIT
//
// ring_pair.cc - two links over the ring model, connected (see ring_pair.h).
#include "ring_pair.h"

#include <cstring>

namespace tb5bench {
namespace {

constexpr uint64_t kService = 0xbe7c4;

// In user space a tb5_mem is a plain address: region NULL, offset = pointer.
int CopyTo(void *, const tb5_mem *dst, const void *src, uint32_t len)
{
	memcpy(reinterpret_cast<void *>(static_cast<uintptr_t>(dst->offset)),
	       src, len);
	return 0;
}

void Complete(void *, void *ctx, const tb5_completion *c)
{
	EpCtx *e = static_cast<EpCtx *>(ctx);

	if (c->status && !e->first_error)
		e->first_error = c->status;
	e->done.push_back(c->user_id);
}

void Event(void *, void *ctx, enum tb5_event ev, int status)
{
	EpCtx *e = static_cast<EpCtx *>(ctx);

	if (ev == TB5_EV_CONNECTED)
		e->connected = true;
	else if (ev == TB5_EV_INCOMING)
		e->incoming++;
	else if ((ev == TB5_EV_ERROR || ev == TB5_EV_PEER_CLOSED) &&
		 !e->first_error)
		e->first_error = status;
}

const void *Resolve(void *, const tb5_mem *mem, uint32_t)
{
	return reinterpret_cast<const void *>(
		static_cast<uintptr_t>(mem->offset));
}

const tb5_link_ops kOps = {RingPair::Tx, CopyTo, Complete, Event};

} // namespace

int RingPair::Tx(void *priv, const tb5_tx_frame *f)
{
	const LinkEnd *e = static_cast<const LinkEnd *>(priv);

	return tb5_rm_tx(e->rm, e->end, f);
}

RingPair::RingPair(uint32_t ring_size)
	: ring_size_(ring_size), budget_(ring_size)
{
	if (!Setup() && error_.empty())
		error_ = "setup failed";
}

bool RingPair::Setup()
{
	tb5_link_config cfg{};
	tb5_addr addr;

	if (tb5_rm_create(ring_size_, Resolve, nullptr, &rm_))
		return false;
	end_a_.rm = rm_;
	end_b_.rm = rm_;
	cfg.ring_size = ring_size_;
	cfg.host_id = 0xa;
	if (tb5_link_create(&cfg, &kOps, &end_a_, &a_))
		return false;
	cfg.host_id = 0xb;
	if (tb5_link_create(&cfg, &kOps, &end_b_, &b_))
		return false;
	tb5_rm_attach(rm_, 0, a_);
	tb5_rm_attach(rm_, 1, b_);
	tb5_link_up(a_);
	tb5_link_up(b_);
	Run();
	if (tb5_link_state(a_) != TB5_LINK_READY) {
		error_ = "links did not become ready";
		return false;
	}
	if (tb5_listen(b_, kService, 0, &cl_, &listener_) ||
	    tb5_listen_addr(listener_, &addr) ||
	    tb5_connect(a_, &addr, &ca_, &ea_))
		return false;
	Run();
	if (!cl_.incoming || tb5_accept(listener_, &cb_, &eb_))
		return false;
	Run();
	if (!ca_.connected) {
		error_ = "connection not established";
		return false;
	}
	return Warm();
}

// One ring's worth of payload each way, so that every RX descriptor's
// buffer has been touched before anything is measured: otherwise the first
// benchmark pays the page faults of 2 x 16 MiB of rings.
bool RingPair::Warm()
{
	const uint64_t len = uint64_t{ring_size_} * TB5_FRAME_MAX;
	std::vector<uint8_t> src(len, 1), dst(len, 0);
	const tb5_mem s = {nullptr, reinterpret_cast<uintptr_t>(src.data())};
	const tb5_mem d = {nullptr, reinterpret_cast<uintptr_t>(dst.data())};

	if (tb5_post_recv(eb_, &d, len, 0, 0) || tb5_post_send(ea_, &s, len, 0, 0))
		return false;
	Run();
	if (tb5_post_recv(ea_, &d, len, 0, 1) || tb5_post_send(eb_, &s, len, 0, 1))
		return false;
	Run();
	if (ca_.done.size() != 2 || cb_.done.size() != 2 || ca_.first_error ||
	    cb_.first_error) {
		error_ = "warm-up messages did not complete";
		return false;
	}
	ca_.done.clear();
	cb_.done.clear();
	return true;
}

RingPair::~RingPair()
{
	if (rm_)
		tb5_rm_unplug(rm_);	// stop the rings before the links go
	if (rm_) {
		tb5_rm_attach(rm_, 0, nullptr);
		tb5_rm_attach(rm_, 1, nullptr);
	}
	tb5_link_destroy(a_);	// closes the endpoints
	tb5_link_destroy(b_);
	tb5_rm_destroy(rm_);
}

tb5_link_stats RingPair::SenderStats() const
{
	tb5_link_stats st;

	tb5_link_get_stats(a_, &st);
	return st;
}

} // namespace tb5bench
