// SPDX-License-Identifier: MIT
//
// fuzz_rx.cc - libFuzzer target tb5-fuzz-rx: a misbehaving peer against one
// tb5_link, plus the local owner doing whatever it may legally do.
//
// The input (fuzz_actions.h) is a sequence of actions: frames from the peer
// (raw bytes, or valid headers built from fields the fuzzer picks, with
// replies derived from what our core transmitted so that handshakes and
// transfers get deep), local calls (listen, connect, accept, post, close),
// and what the backend does (TX completions, a full TX ring, link down/up).
//
// The core's promises that are checked here, beyond "does not crash":
//  - nothing is written outside a buffer the owner posted: receive buffers
//    sit between PROT_NONE pages, and copy_to aborts unless its destination
//    lies wholly inside a receive that is posted and not yet completed;
//  - received bytes land at their message offset (structured payload is a
//    function of its offset), and a receive that completes with n bytes got
//    exactly n bytes copied and nothing past them;
//  - every completion is for an outstanding operation of that endpoint,
//    exactly once, with bytes <= the posted length (== for a good send) and
//    the posted tag;
//  - no completion or event carries an errno the peer chose: the status of
//    every one is the core's own (KnownStatus());
//  - a send completes only once none of its frames is left on the TX ring
//    (zero-copy transmit), transmits only against a grant it received, and
//    its payload frames point at the right offset of the right buffer;
//  - a CTS grants what the owner posted (a receive's length and tag);
//  - the frames it transmits form a stream the peer can parse, and none is
//    transmitted while the link is down or during tb5_link_destroy;
//  - callbacks run under the link's lock, the core never re-enters itself,
//    and it never allocates with the lock held (fuzz_os.c);
//  - TB5_EV_RELEASED comes once per endpoint, after close, as the last
//    callback, and every endpoint gets it by the end of tb5_link_destroy;
//  - the link's message counters agree with the completions seen;
//  - nothing leaks (LeakSanitizer, and the shim's lock count).
#include "fake_tx_ring.h"
#include "fuzz_actions.h"
#include "fuzz_fail.h"
#include "fuzz_os_hooks.h"
#include "guarded_buf.h"
#include "tx_stream_check.h"

extern "C" {
#include "tb5_core.h"
#include "tb5_core_internal.h"
#include "tb5_wire.h"
}

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace tb5fuzz {
namespace {

// Payload bytes the peer may deliver per input (keeps an input fast).
constexpr uint64_t kMaxRxBytes = 4u << 20;
// Headers our core transmitted, remembered as reply templates.
constexpr size_t kTemplates = 64;
constexpr uint64_t kListenService = 1;

enum class EpKind { kListener, kConnector, kAccepted };

struct Ep {
	EpKind kind;
	tb5_ep *h = nullptr;	// the core's handle; null once closed
	bool created = false;	// tb5_listen/connect/accept succeeded
	bool dead = false;	// ... or failed: no callback may name it
	bool closed = false;
	bool released = false;
	uint32_t outstanding = 0;	// posted operations not yet completed
	uint32_t callbacks = 0;
	tb5_addr addr{};	// listeners: what a connector names
};

struct Op {
	Ep *ep;
	uint32_t op;	// TB5_COMPLETION_SEND or TB5_COMPLETION_RECV
	uint32_t tag;
	GuardedBuf buf;
	uint64_t written = 0;	// receives: bytes copy_to put in
};

// What the peer's structured payload carries at message offset @off: a
// different byte for nearby offsets, so that a payload frame copied to the
// wrong place shows.
uint8_t PeerByte(uint64_t off)
{
	return static_cast<uint8_t>((static_cast<uint32_t>(off) * 2654435761u) >>
				    24);
}

constexpr uint8_t kRecvFill = 0xee;	// receive buffers before the core writes

// Every status a completion or an event may carry: the core's own errnos and
// the link-down reasons this harness gives. None comes from the wire: a
// peer's REJECT, CLOSE or ABORT status is mapped to one of these, however
// it is spelled.
bool KnownStatus(int status)
{
	static const int kKnown[] = {
		0, -EMSGSIZE, -EPROTO, -EBADMSG, -ECONNRESET, -ECONNREFUSED,
		-ECANCELED, -ENOLINK, -EFAULT, -ESHUTDOWN, -EIO,
	};

	for (int k : kKnown)
		if (status == k)
			return true;
	return false;
}

class Harness {
public:
	Harness(const uint8_t *data, size_t size) : in_(data, size) {}
	void Run();

private:
	// tb5_link_ops, bound to this harness through priv.
	static int TxCb(void *priv, const tb5_tx_frame *f)
	{
		return static_cast<Harness *>(priv)->OnTx(*f);
	}
	static int CopyToCb(void *priv, const tb5_mem *dst, const void *src,
			    uint32_t len)
	{
		return static_cast<Harness *>(priv)->OnCopyTo(*dst, src, len);
	}
	static void CompleteCb(void *priv, void *ctx, const tb5_completion *cqe)
	{
		static_cast<Harness *>(priv)->OnComplete(ctx, *cqe);
	}
	static void EventCb(void *priv, void *ctx, enum tb5_event ev, int status)
	{
		static_cast<Harness *>(priv)->OnEvent(ctx, ev, status);
	}

	int OnTx(const tb5_tx_frame &f);
	int OnCopyTo(const tb5_mem &dst, const void *src, uint32_t len);
	void OnComplete(void *ctx, const tb5_completion &c);
	void OnEvent(void *ctx, enum tb5_event ev, int status);
	Ep *CallbackEp(void *ctx, const char *what);

	size_t EpIndex(const Ep *ep) const
	{
		for (size_t i = 0; i < eps_.size(); i++)
			if (eps_[i].get() == ep)
				return i;
		return ~size_t{0};
	}

	void Setup();
	void Step(Act a);
	void Teardown(uint8_t mode);

	// The peer.
	void Deliver(uint8_t sof, uint8_t eof, const uint8_t *p, uint32_t len);
	void RxRaw();
	void RxHeader();
	void RxPayload();
	const tb5_wire_msg *Template(uint8_t type, uint8_t reply_to) const;

	// The owner.
	Ep *PickEp(uint8_t sel, bool listeners_only) const;
	Ep *NewEp(EpKind kind);
	void Post(uint32_t op);
	void Connect();
	void Accept();
	void Listen();
	void Close();
	void Query();

	// The backend.
	void LinkDown(int reason);
	void TxDone(uint32_t count);

	Reader in_;
	tb5_link *link_ = nullptr;
	bool up_ = false;
	bool destroying_ = false;
	std::vector<std::unique_ptr<Ep>> eps_;
	std::map<uint64_t, std::unique_ptr<Op>> ops_;	// by user_id
	uint64_t next_id_ = 1;
	uint64_t live_bytes_ = 0;	// mapped by ops_
	uint64_t rx_bytes_ = 0;		// delivered by the peer
	bool fail_next_copy_ = false;
	bool structured_payload_ = false;	// Deliver() of PeerByte frames
	uint64_t expected_offset_ = 0;		// ... starting at this offset

	FakeTxRing tx_;
	TxStreamCheck stream_;
	std::deque<tb5_wire_msg> sent_;	// newest first
	// CTS grants the peer gave: (our endpoint, seq) -> largest len.
	std::map<std::pair<uint32_t, uint32_t>, uint64_t> grants_;
	// Peer bookkeeping for derived replies.
	std::map<uint32_t, uint32_t> next_cts_seq_;	// counter, by our endpoint id
	std::map<std::pair<uint32_t, uint32_t>, uint64_t> data_sent_;
	uint64_t ok_sends_ = 0, ok_recvs_ = 0;
};

int Harness::OnTx(const tb5_tx_frame &f)
{
	if (destroying_)
		Fail("tx() during tb5_link_destroy (rings already stopped)");
	if (!up_)
		Fail("tx() while the link is down (rings stopped)");
	if (!tb5_fuzz_os_locks_held())
		Fail("tx() called without the link lock");
	if (f.len == 0 || f.len > TB5_FRAME_MAX)
		Fail("tx() frame of %u bytes", f.len);
	if (f.eof != TB5_EOF_MORE && f.eof != TB5_EOF_LAST)
		Fail("tx() frame with EOF marker %u", f.eof);

	tb5_wire_msg msg;
	uintptr_t addr = 0;
	const Op *from = nullptr;	// payload: the send it points into
	if (f.sof == TB5_SOF_HEADER) {
		if (!f.header)
			Fail("tx() header frame without header bytes");
		if (tb5_wire_decode(f.header, f.len, &msg))
			Fail("tx() header frame that tb5_wire_decode refuses");
	} else if (f.sof == TB5_SOF_PAYLOAD) {
		if (f.payload.region)
			Fail("tx() payload with a region in user space");
		addr = static_cast<uintptr_t>(f.payload.offset);
		for (const auto &[id, op] : ops_)
			if (op->op == TB5_COMPLETION_SEND &&
			    op->buf.contains(addr, f.len)) {
				from = op.get();
				break;
			}
		if (!from)
			Fail("tx() payload outside every outstanding send buffer");
	} else {
		Fail("tx() frame with SOF marker %u", f.sof);
	}

	if (!tx_.Accepts())
		return -ENOSPC;

	if (f.sof == TB5_SOF_HEADER) {
		stream_.header(f.eof, msg);
		if (msg.type == TB5_WIRE_DATA) {
			const auto g = grants_.find({msg.src, msg.u.data.seq});
			if (g == grants_.end())
				Fail("DATA from endpoint %u seq %u without a CTS",
				     msg.src, msg.u.data.seq);
			if (msg.u.data.msg_len > g->second)
				Fail("DATA of %llu bytes against a grant of %llu",
				     static_cast<unsigned long long>(
					     msg.u.data.msg_len),
				     static_cast<unsigned long long>(g->second));
		}
		if (msg.type == TB5_WIRE_CTS) {
			// A grant is for a receive the owner posted: its
			// length and tag.
			bool posted = false;
			for (const auto &[id, op] : ops_)
				if (op->op == TB5_COMPLETION_RECV &&
				    op->buf.size() == msg.u.cts.len &&
				    op->tag == msg.u.cts.tag) {
					posted = true;
					break;
				}
			if (!posted)
				Fail("CTS grants %llu bytes with tag %u: no such "
				     "receive is posted",
				     static_cast<unsigned long long>(msg.u.cts.len),
				     msg.u.cts.tag);
		}
		sent_.push_front(msg);
		if (sent_.size() > kTemplates)
			sent_.pop_back();
	} else {
		stream_.payload(f.eof, f.len, addr,
				addr - reinterpret_cast<uintptr_t>(from->buf.data()),
				from->buf.size());
		// What the DMA engine would do: read every byte.
		volatile uint8_t sink = 0;
		const uint8_t *p = reinterpret_cast<const uint8_t *>(addr);
		for (uint32_t i = 0; i < f.len; i += 64)
			sink = sink + p[i];
		sink = sink + p[f.len - 1];
	}
	tx_.Push({f.cookie, f.sof, addr, f.len});
	return 0;
}

int Harness::OnCopyTo(const tb5_mem &dst, const void *src, uint32_t len)
{
	if (!tb5_fuzz_os_locks_held())
		Fail("copy_to() called without the link lock");
	if (dst.region)
		Fail("copy_to() with a region in user space");
	if (len > TB5_FRAME_MAX)
		Fail("copy_to() of %u bytes, more than a frame", len);
	const uintptr_t p = static_cast<uintptr_t>(dst.offset);
	Op *into = nullptr;
	for (const auto &[id, op] : ops_)
		if (op->op == TB5_COMPLETION_RECV && op->buf.contains(p, len)) {
			into = op.get();
			break;
		}
	if (!into)
		Fail("copy_to() of %u bytes at %#llx: outside every posted "
		     "receive buffer", len, static_cast<unsigned long long>(p));
	if (fail_next_copy_) {
		fail_next_copy_ = false;
		return -EFAULT;
	}
	// A structured payload frame knows where it belongs in the message.
	const uint64_t at = p - reinterpret_cast<uintptr_t>(into->buf.data());
	const uint8_t *b = static_cast<const uint8_t *>(src);
	if (structured_payload_)
		for (uint32_t i = 0; i < len; i++)
			if (b[i] != PeerByte(at + i))
				Fail("payload for message offset %llu copied to "
				     "offset %llu",
				     static_cast<unsigned long long>(
					     expected_offset_ + i),
				     static_cast<unsigned long long>(at + i));
	if (len)
		memcpy(reinterpret_cast<void *>(p), src, len);
	into->written += len;
	return 0;
}

Ep *Harness::CallbackEp(void *ctx, const char *what)
{
	if (!tb5_fuzz_os_locks_held())
		Fail("%s callback without the link lock", what);
	for (const auto &ep : eps_)
		if (ep.get() == ctx) {
			if (ep->dead)
				Fail("%s callback for an endpoint whose creation "
				     "failed", what);
			if (ep->released)
				Fail("%s callback after TB5_EV_RELEASED", what);
			ep->callbacks++;
			return ep.get();
		}
	Fail("%s callback with an unknown ctx %p", what, ctx);
}

void Harness::OnComplete(void *ctx, const tb5_completion &c)
{
	Ep *ep = CallbackEp(ctx, "complete");
	const auto it = ops_.find(c.user_id);
	if (it == ops_.end())
		Fail("completion for user_id %llu, which is not outstanding",
		     static_cast<unsigned long long>(c.user_id));
	Op &op = *it->second;
	if (op.ep != ep)
		Fail("completion of user_id %llu for the wrong endpoint",
		     static_cast<unsigned long long>(c.user_id));
	if (c.op != op.op)
		Fail("completion with op %u for an op %u", c.op, op.op);
	if (!KnownStatus(c.status))
		Fail("completion status %d", c.status);
	if (c.bytes > op.buf.size())
		Fail("completion of %llu bytes for a post of %zu",
		     static_cast<unsigned long long>(c.bytes), op.buf.size());
	if (c.status == 0 && op.op == TB5_COMPLETION_SEND && c.bytes != op.buf.size())
		Fail("send of %zu bytes completed with %llu", op.buf.size(),
		     static_cast<unsigned long long>(c.bytes));
	if (c.status == 0 && c.tag != op.tag)
		Fail("completion with tag %u for a post with tag %u", c.tag,
		     op.tag);
	if (c.status == 0 && op.op == TB5_COMPLETION_RECV) {
		if (op.written != c.bytes)
			Fail("receive completed with %llu bytes, %llu were copied",
			     static_cast<unsigned long long>(c.bytes),
			     static_cast<unsigned long long>(op.written));
		for (size_t i = c.bytes; i < op.buf.size(); i++)
			if (op.buf.data()[i] != kRecvFill)
				Fail("receive of %llu bytes wrote offset %zu",
				     static_cast<unsigned long long>(c.bytes), i);
	}
	if (op.op == TB5_COMPLETION_SEND && tx_.References(op.buf))
		Fail("send completed while its frames are still on the TX "
		     "ring");
	if (c.status == 0)
		(op.op == TB5_COMPLETION_SEND ? ok_sends_ : ok_recvs_)++;
	if (Tracing())
		fprintf(stderr, "  complete %s id %llu: status %d, %llu bytes\n",
			op.op == TB5_COMPLETION_SEND ? "send" : "recv",
			static_cast<unsigned long long>(c.user_id), c.status,
			static_cast<unsigned long long>(c.bytes));
	ep->outstanding--;
	live_bytes_ -= op.buf.mapped();
	ops_.erase(it);	// unmaps: a later touch by the core faults
}

void Harness::OnEvent(void *ctx, enum tb5_event ev, int status)
{
	Ep *ep = CallbackEp(ctx, "event");

	if (!KnownStatus(status))
		Fail("event %d with status %d", ev, status);
	if (Tracing())
		fprintf(stderr, "  event %d on endpoint %zu: status %d\n", ev,
			EpIndex(ep), status);
	switch (ev) {
	case TB5_EV_INCOMING:
		if (ep->kind != EpKind::kListener)
			Fail("TB5_EV_INCOMING for an endpoint that is not a "
			     "listener");
		break;
	case TB5_EV_CONNECTED:
		if (ep->kind != EpKind::kConnector)
			Fail("TB5_EV_CONNECTED for an endpoint that did not "
			     "connect");
		break;
	case TB5_EV_PEER_CLOSED:
	case TB5_EV_ERROR:
		break;
	case TB5_EV_RELEASED:
		if (!ep->closed && !destroying_)
			Fail("TB5_EV_RELEASED for an endpoint not closed");
		if (ep->outstanding)
			Fail("TB5_EV_RELEASED with %u operations not completed",
			     ep->outstanding);
		ep->released = true;
		break;
	default:
		Fail("unknown event %d", ev);
	}
}

void Harness::Setup()
{
	static const tb5_link_ops kOps = {TxCb, CopyToCb, CompleteCb, EventCb};
	const uint8_t burst = in_.u8() % 17;
	const uint8_t max_eps = in_.u8() % 9;
	const uint32_t cap = 1 + in_.u8() % kLinkRingSize;
	tb5_link_config cfg{};

	cfg.ring_size = kLinkRingSize;
	cfg.burst_frames = burst;
	cfg.max_endpoints = max_eps;
	cfg.host_id = 0x1;
	tx_.SetCapacity(cap);
	tb5_fuzz_os_reset(0x7b5);
	if (tb5_link_create(&cfg, &kOps, this, &link_))
		Fail("tb5_link_create refused a valid configuration");
	up_ = true;	// before the call: it transmits HELLO
	tb5_link_up(link_);

	Ep *l = NewEp(EpKind::kListener);
	if (tb5_listen(link_, kListenService, 0, l, &l->h))
		Fail("tb5_listen on a fresh link failed");
	l->created = true;
	if (tb5_listen_addr(l->h, &l->addr) || l->addr.service != kListenService)
		Fail("tb5_listen_addr of a fresh listener");
}

void Harness::Run()
{
	Setup();
	// The teardown byte is read up front so that it keeps its place.
	const uint8_t teardown = in_.u8();

	for (uint32_t n = 0; n < kMaxActions && !in_.empty(); n++) {
		Step(static_cast<Act>(in_.u8() % kActCount));
		tb5_fuzz_os_advance_ns(1000000);
	}
	Teardown(teardown % kTeardownCount);
}

void Harness::Step(Act a)
{
	static const int kReasons[] = {-ENOLINK, -ECONNRESET, -EIO, -ESHUTDOWN};

	switch (a) {
	case kRxRaw:
		RxRaw();
		break;
	case kRxHeader:
		RxHeader();
		break;
	case kRxPayload:
		RxPayload();
		break;
	case kPostRecv:
		Post(TB5_COMPLETION_RECV);
		break;
	case kPostSend:
		Post(TB5_COMPLETION_SEND);
		break;
	case kConnect:
		Connect();
		break;
	case kAccept:
		Accept();
		break;
	case kListen:
		Listen();
		break;
	case kClose:
		Close();
		break;
	case kLinkDown:
		LinkDown(kReasons[in_.u8() % 4]);
		break;
	case kLinkUp:
		// Only a backend whose rings stopped brings them up again.
		if (!up_) {
			up_ = true;
			tb5_link_up(link_);
		}
		break;
	case kTxDone:
		TxDone(in_.u8());
		break;
	case kTxRefuse:
		tx_.Refuse(in_.u8());
		break;
	case kKick:
		if (up_)
			tb5_link_kick(link_);
		break;
	case kFault:
		if (in_.u8() % 2)
			fail_next_copy_ = true;
		else
			tb5_fuzz_os_fail_next_alloc();
		break;
	case kQuery:
		Query();
		break;
	case kActCount:
		break;
	}
}

// ---- the peer ------------------------------------------------------------

void Harness::Deliver(uint8_t sof, uint8_t eof, const uint8_t *p, uint32_t len)
{
	// Frames may still arrive while the link is down (they were in
	// flight when the ring stopped): the core must drop them.
	if (rx_bytes_ + len > kMaxRxBytes)
		return;
	rx_bytes_ += len;
	// An exact-size heap copy: ASan sees any read past the frame.
	std::unique_ptr<uint8_t[]> frame(new uint8_t[len]);
	if (len)
		memcpy(frame.get(), p, len);

	// Remember grants, whatever path built the frame.
	tb5_wire_msg m;
	if (sof == TB5_SOF_HEADER && !tb5_wire_decode(frame.get(), len, &m) &&
	    m.type == TB5_WIRE_CTS) {
		uint64_t &g = grants_[{m.dst, m.u.cts.seq}];
		if (m.u.cts.len > g)
			g = m.u.cts.len;
	}
	tb5_link_rx(link_, sof, eof, frame.get(), len);
}

void Harness::RxRaw()
{
	const uint8_t sof = in_.u8();
	const uint8_t eof = in_.u8();
	const uint32_t len = in_.u16() % (TB5_FRAME_MAX + 1);
	size_t got;
	const uint8_t *p = in_.bytes(len, &got);

	Deliver(sof, eof, p, static_cast<uint32_t>(got));
}

// The natural template of a reply: ACCEPT and REJECT answer a CONNECT, DATA
// and ABORT answer a CTS, CTS and CLOSE go to any of our endpoints.
const tb5_wire_msg *Harness::Template(uint8_t type, uint8_t reply_to) const
{
	std::vector<const tb5_wire_msg *> c;

	for (const tb5_wire_msg &m : sent_) {
		bool fits = true;
		if (!(reply_to & 0x80)) {
			switch (type) {
			case TB5_WIRE_ACCEPT:
			case TB5_WIRE_REJECT:
				fits = m.type == TB5_WIRE_CONNECT;
				break;
			case TB5_WIRE_DATA:
			case TB5_WIRE_ABORT:
				fits = m.type == TB5_WIRE_CTS;
				break;
			case TB5_WIRE_CTS:
			case TB5_WIRE_CLOSE:
				fits = m.src != 0;
				break;
			default:
				break;
			}
		}
		if (fits)
			c.push_back(&m);
	}
	if (c.empty())
		return nullptr;
	return c[(reply_to & 0x7f) % c.size()];
}

void Harness::RxHeader()
{
	const HeaderAction h = in_.header();
	tb5_wire_msg m{};
	static const tb5_wire_msg kNone{};

	m.type = static_cast<uint8_t>(1 + h.type % TB5_WIRE_TYPE_MAX);
	const tb5_wire_msg *tp = Template(m.type, h.reply_to);
	const tb5_wire_msg &t = tp ? *tp : kNone;
	const bool keys = h.derive & kDeriveKeys;
	const bool seq = h.derive & kDeriveSeq;
	const bool len = h.derive & kDeriveLen;

	m.dst = (h.derive & kDeriveDst) ? t.src : h.dst;
	m.src = (h.derive & kDeriveSrc) && t.dst ? t.dst : h.src;
	switch (m.type) {
	case TB5_WIRE_HELLO:
		m.u.hello.host_id = h.a;
		m.u.hello.epoch = h.b;
		m.u.hello.ring_size = h.d;
		m.u.hello.features = h.e;
		break;
	case TB5_WIRE_CONNECT: {
		Ep *l = PickEp(h.reply_to, true);
		if (h.derive & kDeriveDst)
			m.dst = 0;
		m.u.connect.service = keys && l ? l->addr.service : h.a;
		m.u.connect.listen_cookie = keys && l ? l->addr.cookie : h.b;
		m.u.connect.conn_cookie = h.c;
		break;
	}
	case TB5_WIRE_ACCEPT:
		m.u.accept.conn_cookie = keys ? t.u.connect.conn_cookie : h.a;
		break;
	case TB5_WIRE_REJECT:
		m.u.reject.conn_cookie = keys ? t.u.connect.conn_cookie : h.a;
		m.u.reject.status = static_cast<int32_t>(h.d);
		break;
	case TB5_WIRE_CLOSE:
		m.u.close.status = static_cast<int32_t>(h.d);
		break;
	case TB5_WIRE_CTS:
		// As a peer posting receives grants them: each counter one
		// past the last (a counter not newer is a replay, dropped).
		m.u.cts.seq = seq ? next_cts_seq_[m.dst]++ << TB5_SEQ_SLOT_BITS |
					    (h.d & TB5_OPS_MASK)
				  : h.d;
		m.u.cts.tag = seq ? h.e & 3 : h.e;
		m.u.cts.len = len ? h.a % (kMaxMsg + 1) : h.a;
		break;
	case TB5_WIRE_DATA:
		m.u.data.seq = seq ? t.u.cts.seq : h.d;
		if (len) {
			// The next burst of the granted message, give or take
			// the small excess in the low bits of a, b and e (0 in
			// the seeds): a peer that is off by a few bytes is
			// the likeliest to find an off-by-N in the checks.
			const uint64_t cap =
				uint64_t{TB5_BURST_FRAMES_MAX} * TB5_FRAME_MAX;
			uint64_t &done = data_sent_[{m.dst, m.u.data.seq}];
			const uint64_t total = t.u.cts.len + (h.b & 0xffff);
			const uint64_t offset = done + (h.a & 0xffff);
			const uint64_t rest = total > offset ? total - offset : 0;
			const uint64_t want = h.c % (cap + 1);

			m.u.data.msg_len = total;
			m.u.data.offset = offset;
			m.u.data.burst_len =
				static_cast<uint32_t>(want < rest ? want : rest);
			m.u.data.flags = (offset + m.u.data.burst_len == total
						  ? TB5_DATA_LAST : 0) ^ (h.e & 1);
			done = offset + m.u.data.burst_len;
		} else {
			m.u.data.offset = h.a;
			m.u.data.msg_len = h.b;
			m.u.data.burst_len = static_cast<uint32_t>(h.c);
			m.u.data.flags = h.e;
		}
		break;
	case TB5_WIRE_ABORT:
		m.u.abort.seq = seq ? t.u.cts.seq : h.d;
		m.u.abort.status = static_cast<int32_t>(h.e);
		break;
	}

	uint8_t buf[TB5_WIRE_MAX_LEN];
	const uint32_t n = tb5_wire_encode(&m, buf);
	if (n < TB5_WIRE_COMMON_LEN || n > TB5_WIRE_MAX_LEN)
		Fail("tb5_wire_encode of type %u wrote %u bytes", m.type, n);
	tb5_wire_msg back;
	if (tb5_wire_decode(buf, n, &back) || back.type != m.type ||
	    back.dst != m.dst || back.src != m.src)
		Fail("tb5_wire_decode refuses what tb5_wire_encode wrote "
		     "(type %u)", m.type);

	const bool burst = m.type == TB5_WIRE_DATA && m.u.data.burst_len > 0;
	uint8_t eof = burst ? TB5_EOF_MORE : TB5_EOF_LAST;
	if (h.derive & kFlipEof)
		eof = eof == TB5_EOF_MORE ? TB5_EOF_LAST : TB5_EOF_MORE;
	Deliver(TB5_SOF_HEADER, eof, buf, n);

	if (!burst || !(h.derive & kAutoPayload) ||
	    m.u.data.burst_len > uint64_t{TB5_BURST_FRAMES_MAX} * TB5_FRAME_MAX)
		return;
	uint32_t frames = (m.u.data.burst_len + TB5_FRAME_MAX - 1) / TB5_FRAME_MAX;
	const uint32_t all = frames;
	if (h.derive & kTruncate)
		frames--;
	uint8_t payload[TB5_FRAME_MAX];
	for (uint32_t i = 0; i < frames; i++) {
		const bool last = i + 1 == all;
		const uint32_t flen = last ? m.u.data.burst_len - i * TB5_FRAME_MAX
					   : TB5_FRAME_MAX;
		const uint64_t off = m.u.data.offset + uint64_t{i} * TB5_FRAME_MAX;

		for (uint32_t j = 0; j < flen; j++)
			payload[j] = PeerByte(off + j);
		structured_payload_ = true;
		expected_offset_ = off;
		Deliver(TB5_SOF_PAYLOAD, last ? TB5_EOF_LAST : TB5_EOF_MORE,
			payload, flen);
		structured_payload_ = false;
	}
}

void Harness::RxPayload()
{
	const uint32_t frames = 1 + in_.u8() % 17;
	const uint32_t last_len = in_.u16() % (TB5_FRAME_MAX + 1);
	const uint8_t fill = in_.u8();
	const uint8_t mode = in_.u8();
	uint8_t payload[TB5_FRAME_MAX];

	memset(payload, fill, sizeof(payload));
	for (uint32_t i = 0; i < frames; i++) {
		const bool last = i + 1 == frames;
		uint8_t sof = TB5_SOF_PAYLOAD;
		uint8_t eof = TB5_EOF_MORE;

		if (last) {
			eof = (mode & kPayloadLastMore) ? TB5_EOF_MORE
							: TB5_EOF_LAST;
			if (mode & kPayloadAsHeader)
				sof = TB5_SOF_HEADER;
		}
		Deliver(sof, eof, payload, last ? last_len : TB5_FRAME_MAX);
	}
}

// ---- the owner -----------------------------------------------------------

// Endpoints the owner still holds a handle to, in creation order.
Ep *Harness::PickEp(uint8_t sel, bool listeners_only) const
{
	std::vector<Ep *> c;

	for (const auto &ep : eps_)
		if (ep->h && !ep->closed &&
		    (!listeners_only || ep->kind == EpKind::kListener))
			c.push_back(ep.get());
	return c.empty() ? nullptr : c[sel % c.size()];
}

Ep *Harness::NewEp(EpKind kind)
{
	if (eps_.size() >= kMaxEndpoints)
		return nullptr;
	eps_.push_back(std::make_unique<Ep>());
	eps_.back()->kind = kind;
	return eps_.back().get();
}

void Harness::Post(uint32_t kind)
{
	Ep *ep = PickEp(in_.u8(), false);
	const uint32_t len = in_.u32() % (kMaxMsg + 1);
	const uint32_t tag = in_.u8();

	if (!ep)
		return;
	auto op = std::make_unique<Op>();
	op->ep = ep;
	op->op = kind;
	op->tag = tag;
	op->buf = GuardedBuf(len);
	if (live_bytes_ + op->buf.mapped() > kMaxLiveBytes)
		return;
	if (kind == TB5_COMPLETION_SEND)
		for (uint32_t i = 0; i < len; i++)
			op->buf.data()[i] = static_cast<uint8_t>(i * 7 + tag);
	else
		memset(op->buf.data(), kRecvFill, len);

	const uint64_t id = next_id_++;
	const tb5_mem mem = {nullptr,
			     reinterpret_cast<uintptr_t>(op->buf.data())};
	live_bytes_ += op->buf.mapped();
	ep->outstanding++;
	ops_[id] = std::move(op);
	const int rc = kind == TB5_COMPLETION_SEND
			       ? tb5_post_send(ep->h, &mem, len, tag, id)
			       : tb5_post_recv(ep->h, &mem, len, tag, id);
	if (rc == 0)
		return;
	const auto it = ops_.find(id);
	if (rc > 0 || it == ops_.end())
		Fail("tb5_post_%s returned %d%s",
		     kind == TB5_COMPLETION_SEND ? "send" : "recv", rc,
		     it == ops_.end() ? " and also completed it" : "");
	live_bytes_ -= it->second->buf.mapped();
	ep->outstanding--;
	ops_.erase(it);
}

void Harness::Connect()
{
	tb5_addr addr;
	addr.service = in_.u64();
	addr.cookie = in_.u64();

	Ep *ep = NewEp(EpKind::kConnector);
	if (!ep)
		return;
	const int rc = tb5_connect(link_, &addr, ep, &ep->h);
	if (rc > 0)
		Fail("tb5_connect returned %d", rc);
	if (rc < 0 && ep->callbacks)
		Fail("tb5_connect failed (%d) but called back", rc);
	ep->created = rc == 0;
	ep->dead = rc != 0;
	if (rc)
		ep->h = nullptr;
}

void Harness::Accept()
{
	const uint8_t sel = in_.u8();
	// Bit 7: any endpoint, so that accept on a non-listener is refused.
	Ep *l = PickEp(sel & 0x7f, !(sel & 0x80));
	if (!l)
		return;
	Ep *ep = NewEp(EpKind::kAccepted);
	if (!ep)
		return;
	const int rc = tb5_accept(l->h, ep, &ep->h);
	if (rc > 0)
		Fail("tb5_accept returned %d", rc);
	if (rc < 0 && ep->callbacks)
		Fail("tb5_accept failed (%d) but called back", rc);
	ep->created = rc == 0;
	ep->dead = rc != 0;
	if (rc)
		ep->h = nullptr;
}

void Harness::Listen()
{
	const uint64_t service = in_.u8();
	Ep *ep = NewEp(EpKind::kListener);

	if (!ep)
		return;
	const int rc = tb5_listen(link_, service, 0, ep, &ep->h);
	if (rc > 0)
		Fail("tb5_listen returned %d", rc);
	ep->created = rc == 0;
	ep->dead = rc != 0;
	if (rc) {
		ep->h = nullptr;
		return;
	}
	if (tb5_listen_addr(ep->h, &ep->addr) || ep->addr.service != service)
		Fail("tb5_listen_addr of a new listener");
}

void Harness::Close()
{
	Ep *ep = PickEp(in_.u8(), false);

	if (!ep)
		return;
	ep->closed = true;
	tb5_ep *h = ep->h;
	ep->h = nullptr;
	tb5_ep_close(h);
}

void Harness::Query()
{
	tb5_link_stats st;
	uint64_t peer;

	(void)tb5_link_state(link_);
	(void)tb5_link_peer(link_, &peer);
	tb5_link_get_stats(link_, &st);
	if (st.tx_msgs != ok_sends_ || st.rx_msgs != ok_recvs_)
		Fail("stats say %llu sends and %llu receives completed, the "
		     "owner saw %llu and %llu",
		     static_cast<unsigned long long>(st.tx_msgs),
		     static_cast<unsigned long long>(st.rx_msgs),
		     static_cast<unsigned long long>(ok_sends_),
		     static_cast<unsigned long long>(ok_recvs_));
	for (const auto &ep : eps_) {
		if (!ep->h)
			continue;
		const int s = tb5_ep_state(ep->h);
		if (s < TB5_EP_LISTENING || s > TB5_EP_ERROR)
			Fail("tb5_ep_state %d", s);
		if ((s == TB5_EP_LISTENING) != (ep->kind == EpKind::kListener))
			Fail("tb5_ep_state %d for a %s", s,
			     ep->kind == EpKind::kListener ? "listener"
							    : "connection");
	}
}

// ---- the backend ---------------------------------------------------------

void Harness::LinkDown(int reason)
{
	if (!up_)
		return;
	// The rings stopped: the backend discards what was queued and will
	// report no completion for it.
	tx_.Clear();
	stream_.reset();
	up_ = false;
	tb5_link_down(link_, reason);
}

void Harness::TxDone(uint32_t count)
{
	if (!count)
		count = static_cast<uint32_t>(tx_.Size());
	for (uint32_t i = 0; i < count && tx_.Size(); i++)
		tb5_link_tx_done(link_, tx_.Pop().cookie);
}

void Harness::Teardown(uint8_t mode)
{
	tb5_fuzz_os_reset(0x7b5);	// no planned failure outlives the input
	fail_next_copy_ = false;
	tx_.Refuse(0);

	if (mode != kTeardownDown)
		for (const auto &ep : eps_)
			if (ep->h && !ep->closed) {
				ep->closed = true;
				tb5_ep *h = ep->h;
				ep->h = nullptr;
				tb5_ep_close(h);
			}
	if (mode == kTeardownDrain || mode == kTeardownDrainDown)
		for (int i = 0; i < 1024 && tx_.Size(); i++)
			TxDone(0);
	if (mode != kTeardownDrain || tx_.Size())
		LinkDown(-ENOLINK);

	tb5_link_stats st;
	uint64_t drops = 0;

	tb5_link_get_stats(link_, &st);
	// Every frame refused or dropped is counted once more, by its kind.
	for (uint64_t d : st.drops)
		drops += d;
	if (drops != st.rx_errors + st.rx_dropped)
		Fail("%llu drops by kind, %llu rx errors + %llu dropped",
		     static_cast<unsigned long long>(drops),
		     static_cast<unsigned long long>(st.rx_errors),
		     static_cast<unsigned long long>(st.rx_dropped));
	if (Tracing()) {
		fprintf(stderr, "  stats: tx %llu rx %llu frames, %llu rx errors, "
			"%llu dropped, %llu stalls, msgs tx %llu rx %llu\n",
			static_cast<unsigned long long>(st.tx_frames),
			static_cast<unsigned long long>(st.rx_frames),
			static_cast<unsigned long long>(st.rx_errors),
			static_cast<unsigned long long>(st.rx_dropped),
			static_cast<unsigned long long>(st.tx_stalls),
			static_cast<unsigned long long>(st.tx_msgs),
			static_cast<unsigned long long>(st.rx_msgs));
		fprintf(stderr, "  teardown %u\n", mode);
	}
	destroying_ = true;
	tb5_link_destroy(link_);
	link_ = nullptr;

	for (const auto &ep : eps_)
		if (ep->created && !ep->released)
			Fail("endpoint %zu (%s) never got TB5_EV_RELEASED",
			     EpIndex(ep.get()),
			     ep->kind == EpKind::kListener    ? "listener"
			     : ep->kind == EpKind::kConnector ? "connector"
							      : "accepted");
	if (!ops_.empty())
		Fail("%zu operations never completed", ops_.size());
	if (tb5_fuzz_os_locks_live())
		Fail("%u locks not destroyed", tb5_fuzz_os_locks_live());
}

} // namespace
} // namespace tb5fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tb5fuzz::Harness h(data, size);

	h.Run();
	return 0;
}
