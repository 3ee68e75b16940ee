// SPDX-License-Identifier: MIT
//
// two_node.cc - the two-node harness: ring model pair, two links, and the
// owner-side bookkeeping that checks the core's callbacks.
#include "two_node.hpp"

#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace tb5test {
namespace {

// Host ids with nothing in common, so that a mixed-up id shows.
constexpr uint64_t kHostId[2] = {0x7b5a000000000001ull, 0x7b5b000000000002ull};

const char *op_name(uint32_t op)
{
	return op == TB5_COMPLETION_SEND ? "send" : op == TB5_COMPLETION_RECV ? "recv" : "op?";
}

} // namespace

TwoNode::TwoNode(uint32_t ring_size, uint32_t burst_frames)
	: ring_size_(ring_size)
{
	static const struct tb5_link_ops ops = {
		.tx = op_tx,
		.copy_to = op_copy_to,
		.complete = op_complete,
		.event = op_event,
	};
	int rc = tb5_rm_create(ring_size, resolve, this, &pair_);

	if (rc != 0) {
		ADD_FAILURE() << "tb5_rm_create(" << ring_size << ") = " << rc;
		pair_ = nullptr;
	}
	for (int end = 0; end < 2; end++) {
		struct tb5_link_config cfg = {};

		ends_[end] = End{this, end, nullptr, kHostId[end], 0};
		cfg.ring_size = ring_size;
		cfg.burst_frames = burst_frames;
		cfg.host_id = kHostId[end];
		rc = tb5_link_create(&cfg, &ops, &ends_[end], &ends_[end].link);
		if (rc != 0) {
			ADD_FAILURE() << "tb5_link_create(end " << end << ") = " << rc;
			ends_[end].link = nullptr;
		} else if (pair_) {
			tb5_rm_attach(pair_, end, ends_[end].link);
		}
	}
}

TwoNode::~TwoNode()
{
	teardown();
}

// Rings stop first (tb5_link_destroy requires it), then the links go, which
// completes and releases whatever the test left open; then the books must
// balance.
void TwoNode::teardown()
{
	if (pair_ && tb5_rm_plugged(pair_))
		tb5_rm_unplug(pair_);
	for (End &e : ends_) {
		if (!e.link)
			continue;
		if (pair_)
			tb5_rm_attach(pair_, e.end, nullptr);
		tb5_link_destroy(e.link);
		e.link = nullptr;
	}
	if (pair_)
		tb5_rm_destroy(pair_);
	pair_ = nullptr;

	for (const Posted &p : posted_)
		violation(std::string("after tb5_link_destroy: ") +
			  op_name(p.op) + " user_id " +
			  std::to_string(p.user_id) + " never completed");
	posted_.clear();
	for (const auto &ep : eps_)
		if (ep->opened && !released(ep.get()))
			violation("after tb5_link_destroy: endpoint on end " +
				  std::to_string(ep->end) +
				  " never got TB5_EV_RELEASED");
}

void TwoNode::violation(const std::string &what)
{
	violations_.push_back(what);
	ADD_FAILURE() << "core contract violated: " << what;
}

struct tb5_link_stats TwoNode::link_stats(int end) const
{
	struct tb5_link_stats st = {};

	tb5_link_get_stats(ends_[end].link, &st);
	return st;
}

struct tb5_rm_stats TwoNode::rm_stats() const
{
	struct tb5_rm_stats st = {};

	tb5_rm_get_stats(pair_, &st);
	return st;
}

uint32_t TwoNode::step(uint32_t budget)
{
	return tb5_rm_step(pair_, budget);
}

uint32_t TwoNode::run(uint32_t max_steps)
{
	return tb5_rm_run(pair_, max_steps);
}

bool TwoNode::run_until(const std::function<bool()> &pred, uint64_t max_steps)
{
	for (uint64_t i = 0; i < max_steps; i++) {
		if (pred())
			return true;
		// Idle: nothing can change any more without the test acting.
		if (tb5_rm_step(pair_, kBudget) == 0)
			return pred();
	}
	return pred();
}

void TwoNode::pause_rx(int end, bool paused)
{
	tb5_rm_pause_rx(pair_, end, paused);
}

void TwoNode::unplug()
{
	tb5_rm_unplug(pair_);
}

void TwoNode::plug()
{
	tb5_rm_plug(pair_);
}

bool TwoNode::bring_up()
{
	if (!pair_ || !ends_[0].link || !ends_[1].link)
		return false;
	if (!tb5_rm_plugged(pair_))
		tb5_rm_plug(pair_);
	for (End &e : ends_)
		if (tb5_link_state(e.link) == TB5_LINK_DOWN)
			tb5_link_up(e.link);
	return run_until([this] {
		return tb5_link_state(ends_[0].link) == TB5_LINK_READY &&
		       tb5_link_state(ends_[1].link) == TB5_LINK_READY;
	});
}

Ep *TwoNode::new_ep(int end)
{
	eps_.push_back(std::make_unique<Ep>());
	eps_.back()->end = end;
	return eps_.back().get();
}

int TwoNode::listen(int end, uint64_t service, Ep **out, uint32_t flags)
{
	Ep *ep = new_ep(end);
	int rc = tb5_listen(ends_[end].link, service, flags, ep, &ep->ep);

	ep->opened = rc == 0;
	if (rc == 0)
		listeners_[{end, service}] = ep;
	*out = ep;
	return rc;
}

int TwoNode::connect(int end, const struct tb5_addr &addr, Ep **out)
{
	Ep *ep = new_ep(end);
	int rc = tb5_connect(ends_[end].link, &addr, ep, &ep->ep);

	ep->opened = rc == 0;
	*out = ep;
	return rc;
}

int TwoNode::accept(Ep *listener, Ep **out)
{
	Ep *ep = new_ep(listener->end);
	int rc = tb5_accept(listener->ep, ep, &ep->ep);

	ep->opened = rc == 0;
	*out = ep;
	return rc;
}

void TwoNode::close(Ep *ep)
{
	for (auto it = listeners_.begin(); it != listeners_.end(); ++it) {
		if (it->second == ep) {
			listeners_.erase(it);
			break;
		}
	}
	tb5_ep_close(ep->ep);
	ep->ep = nullptr;
}

Ep *TwoNode::listener(int end, uint64_t service) const
{
	auto it = listeners_.find({end, service});

	return it == listeners_.end() ? nullptr : it->second;
}

TwoNode::Conn TwoNode::connect_pair(uint64_t service, int client_end)
{
	const int server_end = 1 - client_end;
	Ep *lst = listener(server_end, service);
	Ep *client = nullptr;
	Ep *server = nullptr;
	struct tb5_addr addr = {};
	int rc;

	if (!lst && (rc = listen(server_end, service, &lst)) != 0) {
		ADD_FAILURE() << "tb5_listen: " << rc;
		return {};
	}
	if ((rc = tb5_listen_addr(lst->ep, &addr)) != 0) {
		ADD_FAILURE() << "tb5_listen_addr: " << rc;
		return {};
	}
	if ((rc = connect(client_end, addr, &client)) != 0) {
		ADD_FAILURE() << "tb5_connect: " << rc;
		return {};
	}
	// The listener's owner accepts as soon as the core has the connection.
	rc = -EAGAIN;
	run_until([&] {
		rc = accept(lst, &server);
		return rc != -EAGAIN;
	});
	if (rc != 0) {
		ADD_FAILURE() << "tb5_accept: " << rc;
		return {};
	}
	run_until([&] {
		return count_events(client, TB5_EV_CONNECTED) > 0 ||
		       count_events(client, TB5_EV_ERROR) > 0;
	});
	if (count_events(client, TB5_EV_CONNECTED) != 1) {
		ADD_FAILURE() << "connecting endpoint not connected (error "
			      << event_status(client, TB5_EV_ERROR) << ")";
		return {};
	}
	return {client, server};
}

int TwoNode::post(uint32_t op, Ep *ep, const void *buf, uint64_t len,
		  uint32_t tag, uint64_t user_id)
{
	for (const Posted &p : posted_) {
		if (p.ctx == ep && p.op == op && p.user_id == user_id) {
			ADD_FAILURE() << "test bug: " << op_name(op) << " user_id "
				      << user_id << " is already outstanding";
			return -EINVAL;
		}
	}
	posted_.push_back(Posted{ep, ep->end, op, user_id, tag,
				 reinterpret_cast<uintptr_t>(buf), len});

	struct tb5_mem mem = {nullptr, reinterpret_cast<uintptr_t>(buf)};
	int rc = op == TB5_COMPLETION_SEND
		 ? tb5_post_send(ep->ep, &mem, len, tag, user_id)
		 : tb5_post_recv(ep->ep, &mem, len, tag, user_id);

	if (rc != 0) {
		// Refused: it will never complete, and its buffer is not posted.
		for (auto it = posted_.begin(); it != posted_.end(); ++it) {
			if (it->ctx == ep && it->op == op && it->user_id == user_id) {
				posted_.erase(it);
				break;
			}
		}
	}
	return rc;
}

int TwoNode::post_send(Ep *ep, const void *buf, uint64_t len, uint32_t tag,
		       uint64_t user_id)
{
	return post(TB5_COMPLETION_SEND, ep, buf, len, tag, user_id);
}

int TwoNode::post_recv(Ep *ep, void *buf, uint64_t len, uint32_t tag,
		       uint64_t user_id)
{
	return post(TB5_COMPLETION_RECV, ep, buf, len, tag, user_id);
}

const struct tb5_completion *TwoNode::find_cqe(const void *ctx, uint32_t op,
					uint64_t user_id)
{
	for (const struct tb5_completion &c : cqs_[ctx])
		if (c.op == op && c.user_id == user_id)
			return &c;
	return nullptr;
}

int TwoNode::count_events(const void *ctx, enum tb5_event ev) const
{
	int n = 0;

	for (const Event &e : events_)
		n += e.ctx == ctx && e.ev == ev;
	return n;
}

int TwoNode::event_status(const void *ctx, enum tb5_event ev) const
{
	int status = 1;

	for (const Event &e : events_)
		if (e.ctx == ctx && e.ev == ev)
			status = e.status;
	return status;
}

size_t TwoNode::outstanding(const void *ctx) const
{
	size_t n = 0;

	for (const Posted &p : posted_)
		n += p.ctx == ctx;
	return n;
}

// An outstanding operation of kind @op on @end whose buffer holds all of
// [base, base + len); @end < 0 means either end.
const TwoNode::Posted *TwoNode::find_range(int end, uint32_t op,
					   uintptr_t base, uint64_t len) const
{
	if (base + len < base)
		return nullptr;
	for (const Posted &p : posted_)
		if (p.op == op && (end < 0 || p.end == end) &&
		    base >= p.base && base + len <= p.base + p.len)
			return &p;
	return nullptr;
}

// --- the callbacks; the core holds the link lock, so none calls back in ---

int TwoNode::op_tx(void *priv, const struct tb5_tx_frame *frame)
{
	End *e = static_cast<End *>(priv);

	if (frame->len == 0 || frame->len > TB5_FRAME_MAX ||
	    (frame->sof != TB5_SOF_HEADER && frame->sof != TB5_SOF_PAYLOAD) ||
	    (frame->eof != TB5_EOF_MORE && frame->eof != TB5_EOF_LAST))
		e->h->violation("end " + std::to_string(e->end) +
				" tx: bad frame sof " + std::to_string(frame->sof) +
				" eof " + std::to_string(frame->eof) +
				" len " + std::to_string(frame->len));
	return tb5_rm_tx(e->h->pair_, e->end, frame);
}

int TwoNode::op_copy_to(void *priv, const struct tb5_mem *dst,
			const void *src, uint32_t len)
{
	End *e = static_cast<End *>(priv);
	const uintptr_t base = static_cast<uintptr_t>(dst->offset);

	if (dst->region != nullptr ||
	    !e->h->find_range(e->end, TB5_COMPLETION_RECV, base, len)) {
		char buf[128];

		snprintf(buf, sizeof(buf),
			 "end %d copy_to [0x%" PRIxPTR ", +%u) is outside every posted receive",
			 e->end, base, len);
		e->h->violation(buf);
		return -EFAULT;
	}
	std::memcpy(reinterpret_cast<void *>(base), src, len);
	e->copied += len;
	return 0;
}

void TwoNode::op_complete(void *priv, void *ep_ctx, const struct tb5_completion *cqe)
{
	End *e = static_cast<End *>(priv);
	TwoNode *h = e->h;
	const std::string what = "end " + std::to_string(e->end) + " " +
				 op_name(cqe->op) + " user_id " +
				 std::to_string(cqe->user_id);

	if (h->released(ep_ctx))
		h->violation(what + " completed after TB5_EV_RELEASED");

	auto it = h->posted_.begin();
	for (; it != h->posted_.end(); ++it)
		if (it->ctx == ep_ctx && it->op == cqe->op &&
		    it->user_id == cqe->user_id)
			break;
	if (it == h->posted_.end()) {
		h->violation(what + " completed but is not outstanding");
	} else {
		if (it->end != e->end)
			h->violation(what + " completed on the wrong link");
		if (cqe->tag != it->tag)
			h->violation(what + " completed with tag " +
				     std::to_string(cqe->tag) + ", posted " +
				     std::to_string(it->tag));
		if (cqe->status == 0 && cqe->op == TB5_COMPLETION_RECV && cqe->bytes > it->len)
			h->violation(what + " received " + std::to_string(cqe->bytes) +
				     " bytes into " + std::to_string(it->len));
		if (cqe->status == 0 && cqe->op == TB5_COMPLETION_SEND && cqe->bytes != it->len)
			h->violation(what + " sent " + std::to_string(cqe->bytes) +
				     " of " + std::to_string(it->len) + " bytes");
		// From here on the buffer is the owner's again.
		h->posted_.erase(it);
	}
	h->cqs_[ep_ctx].push_back(*cqe);
}

void TwoNode::op_event(void *priv, void *ep_ctx, enum tb5_event ev, int status)
{
	End *e = static_cast<End *>(priv);
	TwoNode *h = e->h;

	if (h->released(ep_ctx))
		h->violation("end " + std::to_string(e->end) + " event " +
			     std::to_string(ev) + " after TB5_EV_RELEASED");
	if (ev == TB5_EV_RELEASED && h->outstanding(ep_ctx) != 0)
		h->violation("end " + std::to_string(e->end) +
			      " TB5_EV_RELEASED with " +
			      std::to_string(h->outstanding(ep_ctx)) +
			      " operations not completed");
	h->events_.push_back(Event{e->end, ep_ctx, ev, status});
}

// The ring model reads a payload frame when it moves it: the bytes must lie
// inside a send that has not completed (tb5_tx_frame: they stay valid until
// the frame's tx_done, and a send completes only after that).
const void *TwoNode::resolve(void *priv, const struct tb5_mem *mem,
			     uint32_t len)
{
	TwoNode *h = static_cast<TwoNode *>(priv);
	const uintptr_t base = static_cast<uintptr_t>(mem->offset);

	if (mem->region != nullptr ||
	    !h->find_range(-1, TB5_COMPLETION_SEND, base, len)) {
		char buf[128];

		snprintf(buf, sizeof(buf),
			 "payload frame [0x%" PRIxPTR ", +%u) is outside every outstanding send",
			 base, len);
		h->violation(buf);
		return nullptr;
	}
	return reinterpret_cast<const void *>(base);
}

} // namespace tb5test
