// SPDX-License-Identifier: MIT
//
// fake_nhi.cc - two hosts joined by one simulated Thunderbolt cable (see the
// header). Each piece mirrors dkms/tb5_tb.c: where the backend calls the
// Thunderbolt API, this file moves bytes between vectors.
#include "fake_nhi.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace tb5tb {

bool Ep::has_event(enum tb5_event ev) const
{
	for (const auto &e : events)
		if (e.first == ev)
			return true;
	return false;
}

FakePair::FakePair(uint32_t ring_size, bool e2e_a, bool e2e_b)
	: ring_size_(ring_size)
{
	static const struct tb5_link_ops ops = {
		op_tx, op_copy_to, op_complete, op_event,
	};

	for (int i = 0; i < 2; i++) {
		Host &h = hosts_[i];
		struct tb5_link_config cfg = {};

		h.pair = this;
		h.id = i;
		h.host_id = 0x5000u + 0x1000u * i;
		h.e2e_offered = i ? e2e_b : e2e_a;
		memset(h.uuid, 0x11 * (i + 1), sizeof(h.uuid));
		// Each host reaches the other by its own route string.
		h.route = i ? 0x3 : 0x1;
		h.out_hopid = 8 + i;
		cfg.ring_size = ring_size;
		cfg.host_id = h.host_id;
		EXPECT_EQ(tb5_link_create(&cfg, &ops, &h, &h.link), 0);
		EXPECT_EQ(tb5_tb_txq_init(&h.txq, ring_size), 0);
		h.tx_buf.resize(ring_size);
		h.rx_buf.resize(ring_size);
	}
}

FakePair::~FakePair()
{
	for (auto &h : hosts_) {
		h.stopping = true;
		disconnect(h);
		if (h.link)
			tb5_link_destroy(h.link);
		tb5_tb_txq_free(&h.txq);
	}
}

// --- the core's callbacks --------------------------------------------------

int FakePair::op_tx(void *priv, const struct tb5_tx_frame *f)
{
	Host &h = *static_cast<Host *>(priv);
	uint8_t pdf_sof, pdf_eof;
	uint32_t size, slot;
	const void *src;
	int ret;

	ret = tb5_tb_tx_desc(f->sof, f->eof, f->len, &pdf_sof, &pdf_eof, &size);
	if (ret)
		return ret;
	if (!h.running)
		return -ENOLINK;
	ret = tb5_tb_txq_reserve(&h.txq, f->cookie, &slot);
	if (ret)
		return ret;
	src = f->sof == TB5_SOF_HEADER ?
		      f->header :
		      reinterpret_cast<const void *>(
			      static_cast<uintptr_t>(f->payload.offset));
	memcpy(h.tx_buf[slot].data(), src, f->len);
	h.tx_ring.push_back({ slot, pdf_sof, pdf_eof, size });
	return 0;
}

int FakePair::op_copy_to(void *, const struct tb5_mem *dst, const void *src,
			 uint32_t len)
{
	memcpy(reinterpret_cast<void *>(static_cast<uintptr_t>(dst->offset)),
	       src, len);
	return 0;
}

void FakePair::op_complete(void *, void *ep_ctx,
			   const struct tb5_completion *cqe)
{
	static_cast<Ep *>(ep_ctx)->cqes.push_back(*cqe);
}

void FakePair::op_event(void *, void *ep_ctx, enum tb5_event ev, int status)
{
	static_cast<Ep *>(ep_ctx)->events.emplace_back(ev, status);
}

// --- login ------------------------------------------------------------------

void FakePair::apply(Host &h, const struct tb5_tb_act &act)
{
	if (act.flags & TB5_TB_ACT_DISCONNECT)
		h.force_down = true;
	if (act.flags & (TB5_TB_ACT_DISCONNECT | TB5_TB_ACT_CONNECT))
		h.conn_due = true;
	if (act.flags & TB5_TB_ACT_SEND_LOGIN) {
		h.login_due = true;
		h.login_at = now_ms_ + act.delay_ms;
	}
}

void FakePair::address(Host &h, struct tb5_tb_msg *m)
{
	m->route = h.route;
	memcpy(m->sender, h.uuid, 16);
	memcpy(m->target, hosts_[1 - h.id].uuid, 16);
}

int FakePair::request(Host &h, const struct tb5_tb_msg &m,
		      struct tb5_tb_msg *r)
{
	Host &peer = hosts_[1 - h.id];
	uint32_t words[TB5_TB_MSG_WORDS];
	struct tb5_tb_msg req, resp;
	struct tb5_tb_act act;

	requests++;
	if (drop_requests > 0) {
		drop_requests--;
		now_ms_ += TB5_TB_LOGIN_TIMEOUT_MS;
		return -ETIMEDOUT;
	}
	tb5_tb_msg_encode(&m, words);
	// The receiving router rewrites the route: its own way back.
	words[0] = static_cast<uint32_t>(peer.route >> 32);
	words[1] = static_cast<uint32_t>(peer.route);
	// The peer's handler.
	if (tb5_tb_msg_decode(words, sizeof(words), &req) ||
	    !tb5_tb_msg_for(&req, peer.route, h.uuid, peer.uuid)) {
		ADD_FAILURE() << "the peer would not take this request";
		return -ETIMEDOUT;
	}
	tb5_tb_login_rx(&peer.login, &req, &act);
	if (!(act.flags & TB5_TB_ACT_RESPOND)) {
		now_ms_ += TB5_TB_LOGIN_TIMEOUT_MS;
		return -ETIMEDOUT;
	}
	tb5_tb_login_response(&req, act.status, &resp);
	resp.route = peer.route;
	apply(peer, act);
	responses++;
	if (drop_responses > 0) {
		drop_responses--;
		now_ms_ += TB5_TB_LOGIN_TIMEOUT_MS;
		return -ETIMEDOUT;
	}
	tb5_tb_msg_encode(&resp, words);
	words[0] = static_cast<uint32_t>(h.route >> 32) | 0x80000000u;
	words[1] = static_cast<uint32_t>(h.route);
	if (tb5_tb_msg_decode(words, sizeof(words), r) ||
	    !tb5_tb_msg_for(r, h.route, peer.uuid, h.uuid))
		return -EBADMSG;
	return 0;
}

void FakePair::login_work(Host &h)
{
	struct tb5_tb_msg m, r;
	struct tb5_tb_act act;
	uint32_t cmd;
	int ret;

	if (h.stopping || h.login.state != TB5_TB_LOGIN || h.login.sent)
		return;
	cmd = tb5_tb_login_request(&h.login, TB5_TB_MSG_LOGIN, &m);
	address(h, &m);
	ret = request(h, m, &r);
	if (h.stopping)
		return;
	tb5_tb_login_result(&h.login, cmd, ret, ret ? nullptr : &r, &act);
	apply(h, act);
}

// --- the connection -----------------------------------------------------

int FakePair::step_do(Host &h, int s, const struct tb5_tb_peer &peer)
{
	Host &other = hosts_[1 - h.id];

	if (s == h.fail_step) {
		h.fail_step = -1;
		return -EIO;
	}
	switch (s) {
	case TB5_TB_STEP_IN_HOPID:
		// The path the peer announced is the one it transmits on.
		EXPECT_EQ(peer.path, other.out_hopid);
		h.in_hopid = peer.path;
		break;
	case TB5_TB_STEP_TX_START:
		tb5_tb_txq_reset(&h.txq);
		h.tx_ring.clear();
		h.tx_sent.clear();
		break;
	case TB5_TB_STEP_RX_START:
		h.rx_done.clear();
		break;
	case TB5_TB_STEP_RX_PRIME:
		for (uint32_t i = 0; i < ring_size_; i++)
			h.rx_posted.push_back(i);
		h.rx_running = true;
		break;
	case TB5_TB_STEP_PATHS:
		// Frames may only flow into a primed RX ring.
		EXPECT_EQ(h.rx_posted.size(), ring_size_);
		h.paths = true;
		break;
	case TB5_TB_STEP_LINK_UP:
		h.running = true;
		tb5_link_up(h.link);
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

void FakePair::step_undo(Host &h, int s)
{
	switch (s) {
	case TB5_TB_STEP_LINK_UP:
		h.running = false;
		tb5_link_down(h.link, -ENOLINK);
		break;
	case TB5_TB_STEP_PATHS:
		h.paths = false;
		break;
	case TB5_TB_STEP_RX_PRIME:
		h.rx_running = false;
		break;
	case TB5_TB_STEP_RX_START:
		h.rx_posted.clear();
		h.rx_done.clear();
		break;
	case TB5_TB_STEP_TX_START:
		h.tx_ring.clear();
		h.tx_sent.clear();
		tb5_tb_txq_reset(&h.txq);
		break;
	case TB5_TB_STEP_IN_HOPID:
		h.in_hopid = 0;
		break;
	default:
		ADD_FAILURE() << "undo of step " << s;
	}
}

void FakePair::disconnect(Host &h)
{
	int s;

	while ((s = tb5_tb_ledger_undo(&h.ledger)) >= 0) {
		h.log.push_back(std::string("-") +
				tb5_tb_step_name(static_cast<enum tb5_tb_step>(s)));
		step_undo(h, s);
	}
}

void FakePair::conn_work(Host &h)
{
	struct tb5_tb_act act;
	bool up, down;
	int s, ret = 0;

	if (h.stopping)
		return;
	up = h.login.state == TB5_TB_CONNECTED;
	down = h.force_down || !up;
	h.force_down = false;
	struct tb5_tb_peer peer = h.login.peer;
	if (down)
		disconnect(h);
	if (!up || tb5_tb_ledger_next(&h.ledger) < 0)
		return;
	while ((s = tb5_tb_ledger_next(&h.ledger)) >= 0) {
		ret = step_do(h, s, peer);
		if (ret)
			break;
		tb5_tb_ledger_mark(&h.ledger, static_cast<enum tb5_tb_step>(s));
		h.log.push_back(std::string("+") +
				tb5_tb_step_name(static_cast<enum tb5_tb_step>(s)));
	}
	if (!ret)
		return;
	disconnect(h);
	tb5_tb_login_connect_failed(&h.login, ret, &act);
	act.flags &= ~TB5_TB_ACT_DISCONNECT;
	apply(h, act);
}

// --- the rings ------------------------------------------------------------

uint32_t FakePair::wire(Host &src, Host &dst)
{
	uint32_t n = 0;

	while (!src.tx_ring.empty() && src.paths && dst.paths) {
		Host::HwTx d = src.tx_ring.front();
		uint32_t len = d.size_field ? d.size_field : TB5_FRAME_MAX;

		if (dst.rx_posted.empty()) {
			// End-to-end flow control: wait for a descriptor.
			if (src.features & TB5_TB_F_E2E)
				break;
			dst.rx_lost++;	// without it the frame is lost
		} else {
			uint32_t buf = dst.rx_posted.front();
			uint32_t flags = 0;

			dst.rx_posted.pop_front();
			if (src.corrupt_next) {
				src.corrupt_next--;
				flags = TB5_TB_DESC_CRC_ERROR;
			}
			memcpy(dst.rx_buf[buf].data(), src.tx_buf[d.slot].data(),
			       len);
			dst.rx_done.push_back({ buf, flags, d.size_field,
						d.pdf_eof });
		}
		src.tx_ring.pop_front();
		src.tx_sent.push_back(d.slot);
		n++;
	}
	return n;
}

uint32_t FakePair::reap(Host &h)
{
	uint32_t n = 0;

	while (!h.tx_sent.empty()) {
		uint32_t slot = h.tx_sent.front();
		uint64_t cookie = 0;
		bool kick = false;

		h.tx_sent.pop_front();
		n++;
		if (!h.running)
			continue;
		if (tb5_tb_txq_complete(&h.txq, slot, &cookie, &kick)) {
			h.ring_errors++;
			continue;
		}
		if (cookie)
			tb5_link_tx_done(h.link, cookie);
		else if (kick)
			tb5_link_kick(h.link);
	}
	return n;
}

uint32_t FakePair::poll(Host &h)
{
	uint32_t n = 0;

	while (h.rx_running && !h.rx_paused && !h.rx_done.empty() && n < 64) {
		Host::HwRx d = h.rx_done.front();
		uint8_t sof, eof;
		uint32_t len;

		h.rx_done.pop_front();
		if (tb5_tb_rx_check(d.flags, d.size_field, d.pdf_eof, &sof, &eof,
				    &len) == TB5_TB_RX_OK)
			tb5_link_rx(h.link, sof, eof, h.rx_buf[d.buf].data(), len);
		else
			h.ring_errors++;
		h.rx_posted.push_back(d.buf);	// re-posted at once
		n++;
	}
	return n;
}

// --- life cycle -------------------------------------------------------------

void FakePair::probe(int i)
{
	Host &h = hosts_[i];
	Host &peer = hosts_[1 - i];
	struct tb5_tb_local local;
	struct tb5_tb_act act;
	static uint32_t session = 100;

	h.stopping = false;
	h.force_down = false;
	h.features = tb5_tb_agree(h.e2e_offered ? TB5_TB_F_E2E : 0,
				  peer.e2e_offered ? TB5_TB_F_E2E : 0);
	local.path = h.out_hopid;
	local.features = h.features;
	local.ring_size = ring_size_;
	tb5_tb_login_start(&h.login, &local, session++, &act);
	apply(h, act);
}

void FakePair::stop(int i, bool plugged)
{
	Host &h = hosts_[i];
	struct tb5_tb_act act;
	struct tb5_tb_msg m, r;

	h.stopping = true;
	bool logout = tb5_tb_login_stop(&h.login, &act);
	h.login_due = false;
	h.conn_due = false;
	if (logout && plugged) {
		for (uint32_t k = 0; k < TB5_TB_LOGOUT_RETRIES; k++) {
			tb5_tb_login_request(&h.login, TB5_TB_MSG_LOGOUT, &m);
			address(h, &m);
			if (request(h, m, &r) != -ETIMEDOUT)
				break;
		}
	}
	disconnect(h);
}

void FakePair::unplug()
{
	stop(0, false);
	stop(1, false);
}

// --- running ----------------------------------------------------------------

uint32_t FakePair::step()
{
	uint32_t n = 0;

	for (auto &h : hosts_) {
		if (h.conn_due) {
			h.conn_due = false;
			conn_work(h);
			n++;
		}
	}
	n += wire(hosts_[0], hosts_[1]);
	n += wire(hosts_[1], hosts_[0]);
	n += reap(hosts_[0]);
	n += reap(hosts_[1]);
	n += poll(hosts_[0]);
	n += poll(hosts_[1]);
	return n;
}

bool FakePair::run_until(const std::function<bool()> &pred, uint64_t max_ms)
{
	uint64_t deadline = now_ms_ + max_ms;

	for (uint64_t guard = 0; guard < (1ull << 26); guard++) {
		Host *next = nullptr;

		if (pred())
			return true;
		if (step())
			continue;
		for (auto &h : hosts_)
			if (h.login_due && (!next || h.login_at < next->login_at))
				next = &h;
		if (!next || next->login_at > deadline)
			return pred();
		if (next->login_at > now_ms_)
			now_ms_ = next->login_at;
		next->login_due = false;
		login_work(*next);
	}
	ADD_FAILURE() << "the harness does not settle";
	return false;
}

bool FakePair::connected() const
{
	for (const auto &h : hosts_)
		if (h.login.state != TB5_TB_CONNECTED ||
		    tb5_link_state(h.link) != TB5_LINK_READY)
			return false;
	return true;
}

bool FakePair::settle()
{
	return run_until([] { return false; }) || true;
}

// --- endpoints ----------------------------------------------------------

Ep *FakePair::listen(int i, uint64_t service)
{
	eps_.push_back(std::make_unique<Ep>());
	Ep *e = eps_.back().get();

	e->end = i;
	EXPECT_EQ(tb5_listen(hosts_[i].link, service, 0, e, &e->ep), 0);
	return e;
}

std::pair<Ep *, Ep *> FakePair::connect_pair(int i, uint64_t service)
{
	Ep *l = listen(1 - i, service);
	struct tb5_addr addr;

	EXPECT_EQ(tb5_listen_addr(l->ep, &addr), 0);
	eps_.push_back(std::make_unique<Ep>());
	Ep *c = eps_.back().get();
	c->end = i;
	EXPECT_EQ(tb5_connect(hosts_[i].link, &addr, c, &c->ep), 0);
	EXPECT_TRUE(run_until([&] { return l->has_event(TB5_EV_INCOMING); }));
	eps_.push_back(std::make_unique<Ep>());
	Ep *s = eps_.back().get();
	s->end = 1 - i;
	EXPECT_EQ(tb5_accept(l->ep, s, &s->ep), 0);
	EXPECT_TRUE(run_until([&] { return c->has_event(TB5_EV_CONNECTED); }));
	return { c, s };
}

int FakePair::post_send(Ep *ep, const void *buf, uint64_t len, uint32_t tag,
			uint64_t id)
{
	struct tb5_mem mem = { nullptr, reinterpret_cast<uintptr_t>(buf) };

	return tb5_post_send(ep->ep, &mem, len, tag, id);
}

int FakePair::post_recv(Ep *ep, void *buf, uint64_t len, uint32_t tag,
			uint64_t id)
{
	struct tb5_mem mem = { nullptr, reinterpret_cast<uintptr_t>(buf) };

	return tb5_post_recv(ep->ep, &mem, len, tag, id);
}

void FakePair::close(Ep *ep)
{
	tb5_ep_close(ep->ep);
	ep->ep = nullptr;
}

} // namespace tb5tb
