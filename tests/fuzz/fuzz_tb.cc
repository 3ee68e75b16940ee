// SPDX-License-Identifier: MIT
//
// fuzz_tb.cc - libFuzzer target tb5-fuzz-tb: what the wire reaches in the tb
// backend's portable part (dkms/tb/tb5_tb_proto.c, the very file tb5.ko
// compiles), driven as dkms/tb5_tb.c drives it.
//
// The input (fuzz_tb_actions.h) is the peer's service properties, then a
// sequence of what the peer and the hardware do: XDomain packets with tb5's
// UUID (raw bytes, or messages built from fields the fuzzer picks), the
// answer to our LOGIN, RX descriptors the NHI writes back, TX completions in
// any order; and what the host does: start, stop, a failed bring-up.
//
// The promises checked, beyond "does not crash" (ASan, UBSan):
//  - the property check takes exactly prtcid 1 and prtcvers 1, and the
//    features agreed on are those both ends offer and this version knows;
//  - tb5_tb_msg_decode() reads nothing past the packet (it sits in a heap
//    block of its exact size), takes exactly what the format allows (the
//    size, the length field, the UUID, a known type, a version), and what
//    it takes encodes back to the same words (route bit 63 aside);
//  - the login state machine: a request is answered in every state but
//    idle, with 0 or EPROTONOSUPPORT and nothing the peer chose; the
//    answer encodes to a message the peer's checks take; CONNECT comes only
//    on entering "connected" and DISCONNECT exactly on leaving it, so the
//    rings are never brought up twice or left up; "connected" needs both
//    logins; our LOGIN counts as sent only on its own successful answer;
//    the retries stay bounded; each request has a new, non-zero id;
//  - an RX descriptor's verdict and markers are those the PDF table
//    documents, and every descriptor tb5_tb_tx_desc() writes reads back
//    as the frame it was made from;
//  - the TX slots give every cookie back once, in order of the slots freed,
//    against a model of the ring, whatever order completions come in.
extern "C" {
#include "tb5_tb_proto.h"
}

#include "fuzz_fail.h"
#include "fuzz_tb_actions.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace tb5fuzz {
namespace {

constexpr uint32_t kActFlags = TB5_TB_ACT_RESPOND | TB5_TB_ACT_DISCONNECT |
			       TB5_TB_ACT_CONNECT | TB5_TB_ACT_SEND_LOGIN;

const char *Name(tb5_tb_login_state s)
{
	return tb5_tb_login_state_name(s);
}

// A packet as the control channel hands it over: in a heap block of its
// exact size, so that ASan reports a read past its end.
class Packet {
public:
	Packet(const void *data, size_t size)
		: p_(static_cast<uint32_t *>(std::malloc(size ? size : 1))),
		  size_(size)
	{
		if (!p_)
			abort();
		if (size)
			std::memcpy(p_, data, size);
	}
	~Packet() { std::free(p_); }
	Packet(const Packet &) = delete;
	Packet &operator=(const Packet &) = delete;

	const uint32_t *words() const { return p_; }
	size_t size() const { return size_; }

private:
	uint32_t *p_;
	size_t size_;
};

uint32_t Word(const Packet &p, size_t i)
{
	uint32_t w;

	std::memcpy(&w, reinterpret_cast<const uint8_t *>(p.words()) + 4 * i, 4);
	return w;
}

// What the format allows (tb5_tb_proto.h), independently of the decoder.
bool Acceptable(const Packet &p)
{
	if (p.size() < TB5_TB_MSG_BYTES || p.size() % 4)
		return false;
	if ((Word(p, 2) & 0x3f) != p.size() / 4 - 3)
		return false;
	if (std::memcmp(reinterpret_cast<const uint8_t *>(p.words()) + 12,
			tb5_tb_msg_uuid, 16))
		return false;
	const uint32_t type = Word(p, 15), version = Word(p, 17);
	return type >= TB5_TB_MSG_LOGIN && type <= TB5_TB_MSG_LOGOUT_RESP &&
	       version != 0;
}

bool SameMsg(const tb5_tb_msg &a, const tb5_tb_msg &b)
{
	return a.route == b.route && a.seq == b.seq && a.type == b.type &&
	       !std::memcmp(a.sender, b.sender, 16) &&
	       !std::memcmp(a.target, b.target, 16) && a.cmd_id == b.cmd_id &&
	       a.version == b.version && a.status == b.status &&
	       a.path == b.path && a.features == b.features &&
	       a.ring_size == b.ring_size && a.session == b.session;
}

// Decode @p as tb5.ko does and check the decoder against the format.
int Decode(const Packet &p, tb5_tb_msg *m)
{
	std::memset(m, 0xa5, sizeof(*m));
	const int ret = tb5_tb_msg_decode(p.words(), p.size(), m);

	if (ret != 0 && ret != -EBADMSG)
		Fail("tb5_tb_msg_decode returned %d", ret);
	if ((ret == 0) != Acceptable(p))
		Fail("tb5_tb_msg_decode %s a packet of %zu bytes the format %s",
		     ret ? "refused" : "took", p.size(),
		     ret ? "allows" : "refuses");
	if (ret)
		return ret;
	if (m->route >> 63 || m->seq > 3)
		Fail("decoded route %#llx, seq %u",
		     static_cast<unsigned long long>(m->route), m->seq);
	// What was taken encodes back to the same words.
	uint32_t again[TB5_TB_MSG_WORDS];
	tb5_tb_msg_encode(m, again);
	if (again[0] != (Word(p, 0) & 0x7fffffffu) || again[1] != Word(p, 1))
		Fail("the route does not encode back");
	if ((again[2] & ~0x3fu) != (Word(p, 2) & (3u << 27)))
		Fail("the sequence number does not encode back");
	for (size_t i = 3; i < TB5_TB_MSG_WORDS - 1; i++)
		if (again[i] != Word(p, i))
			Fail("word %zu does not encode back", i);
	tb5_tb_msg back;
	if (tb5_tb_msg_decode(again, sizeof(again), &back) || !SameMsg(*m, back))
		Fail("tb5_tb_msg_decode refuses or changes what "
		     "tb5_tb_msg_encode wrote");
	return 0;
}

class Harness {
public:
	Harness(const uint8_t *data, size_t size) : in_(data, size) {}
	~Harness() { tb5_tb_txq_free(&txq_); }
	Harness(const Harness &) = delete;
	Harness &operator=(const Harness &) = delete;

	void Run();

private:
	bool Probe();
	void Step(uint8_t act);
	void Check(const char *what);
	void Apply(const tb5_tb_act &act, tb5_tb_login_state before,
		   const char *what);
	void Build(const TbMsgAction &a, bool answer, uint32_t words[]);
	void PeerPacket(const Packet &p);
	void PeerRaw();
	void PeerMsg();
	void LoginSend();
	void LoginAnswer();
	void ConnectFailed();
	void Stop();
	void Start();
	void RxDesc();
	void TxDesc();
	void TxReserve();
	void TxComplete();
	void TxUnreserve();
	void TxReset();
	void CheckRequest(const tb5_tb_msg &m, uint32_t type, uint32_t cmd);

	Reader in_;
	TbSetup setup_{};
	tb5_tb_local local_{};
	tb5_tb_login login_{};
	bool started_ = false;
	bool up_ = false;		// the rings and paths are up
	bool pending_ = false;		// our LOGIN waits for its answer
	uint32_t pending_cmd_ = 0;
	uint32_t last_cmd_ = 0;
	// The TX slots, and the model they are checked against.
	tb5_tb_txq txq_{};
	std::vector<uint8_t> slot_state_;	// 0 free, 1 in flight, 2 done
	std::vector<uint64_t> slot_cookie_;
	uint32_t head_ = 0, tail_ = 0;
	bool stalled_ = false;
	uint64_t next_cookie_ = 1;
};

void Harness::Run()
{
	setup_ = ReadTbSetup(in_);
	if (!Probe())
		return;
	for (uint32_t n = 0; n < kTbMaxActions && !in_.empty(); n++)
		Step(in_.u8() % kTbActCount);
	if (started_)
		Stop();
}

// tb5_tb_probe(): the peer's properties, our settings, the link speed.
bool Harness::Probe()
{
	const int ret = tb5_tb_service_check(setup_.prtcid, setup_.prtcvers);
	const bool ours = setup_.prtcid == TB5_TB_PRTCID &&
			  setup_.prtcvers == TB5_TB_PRTCVERS;

	if (ret != (ours ? 0 : -EPROTONOSUPPORT))
		Fail("tb5_tb_service_check(%u, %u) = %d", setup_.prtcid,
		     setup_.prtcvers, ret);

	tb5_tb_prop props[TB5_TB_NPROPS];
	const bool e2e = setup_.e2e & 1;
	tb5_tb_props(e2e, props);
	if (props[3].value != (e2e ? TB5_TB_F_E2E : 0u))
		Fail("prtcstns %#x for e2e %d", props[3].value, e2e);
	const uint32_t features = tb5_tb_agree(props[3].value, setup_.prtcstns);
	if (features != (props[3].value & setup_.prtcstns & TB5_TB_F_KNOWN))
		Fail("agreed on %#x from %#x and %#x", features,
		     props[3].value, setup_.prtcstns);

	uint32_t tx = 99, rx = 99;
	tb5_tb_lanes(setup_.link_width, &tx, &rx);
	if (tx > 3 || rx > 3 || (tx == 0) != (rx == 0))
		Fail("link_width %u gives %u/%u lanes", setup_.link_width, tx, rx);
	const uint32_t mbps = tb5_tb_speed_mbps(setup_.gbps, tx, rx);
	if (mbps != setup_.gbps * 1000u * (tx < rx ? tx : rx))
		Fail("%u Mb/s from %u Gb/s and %u/%u lanes", mbps, setup_.gbps,
		     tx, rx);

	const uint32_t slots = 1u << (setup_.txq_size % 8);
	if (tb5_tb_txq_init(&txq_, slots))
		Fail("tb5_tb_txq_init(%u) failed", slots);
	slot_state_.assign(slots, 0);
	slot_cookie_.assign(slots, 0);
	if (ret)
		return false;	// the probe fails: nothing more happens
	local_.path = setup_.path;
	local_.features = features;
	local_.ring_size = setup_.ring_size;
	Start();
	return true;
}

void Harness::Step(uint8_t act)
{
	switch (act) {
	case kTbPeerRaw:
		PeerRaw();
		break;
	case kTbPeerMsg:
		PeerMsg();
		break;
	case kTbLoginSend:
		LoginSend();
		break;
	case kTbLoginAnswer:
		LoginAnswer();
		break;
	case kTbConnectFailed:
		ConnectFailed();
		break;
	case kTbStop:
		if (started_)
			Stop();
		break;
	case kTbStart: {
		const uint32_t session = in_.u32();
		if (!started_) {
			setup_.session = session;
			Start();
		}
		break;
	}
	case kTbRxDesc:
		RxDesc();
		break;
	case kTbTxDesc:
		TxDesc();
		break;
	case kTbTxReserve:
		TxReserve();
		break;
	case kTbTxComplete:
		TxComplete();
		break;
	case kTbTxUnreserve:
		TxUnreserve();
		break;
	case kTbTxReset:
		TxReset();
		break;
	default:
		Fail("action %u", act);
	}
}

// The machine's invariants, after every step.
void Harness::Check(const char *what)
{
	const tb5_tb_login &l = login_;

	switch (l.state) {
	case TB5_TB_IDLE:
	case TB5_TB_LOGIN:
	case TB5_TB_WAIT:
	case TB5_TB_CONNECTED:
		break;
	default:
		Fail("%s: state %d", what, l.state);
	}
	if (l.state == TB5_TB_CONNECTED && !(l.sent && l.received))
		Fail("%s: connected with sent %d, received %d", what, l.sent,
		     l.received);
	if ((l.state == TB5_TB_IDLE || l.state == TB5_TB_WAIT) && l.sent)
		Fail("%s: %s but our LOGIN counts as sent", what, Name(l.state));
	if (l.state == TB5_TB_IDLE && l.received)
		Fail("%s: idle with the peer's LOGIN taken", what);
	if (l.retries >= TB5_TB_LOGIN_RETRIES)
		Fail("%s: %u retries", what, l.retries);
	if (up_ != (l.state == TB5_TB_CONNECTED))
		Fail("%s: rings %s in state %s", what, up_ ? "up" : "down",
		     Name(l.state));
	if (l.local.features & ~TB5_TB_F_KNOWN)
		Fail("%s: features %#x", what, l.local.features);
}

// tb5_tb_apply(), against the contract of the actions.
void Harness::Apply(const tb5_tb_act &act, tb5_tb_login_state before,
		    const char *what)
{
	const tb5_tb_login_state after = login_.state;

	const bool disconnect = act.flags & TB5_TB_ACT_DISCONNECT;
	const bool connect = act.flags & TB5_TB_ACT_CONNECT;

	if (Tracing())
		fprintf(stderr, "  %s: %s -> %s, flags %#x status %u delay %u\n",
			what, Name(before), Name(after), act.flags, act.status,
			act.delay_ms);

	if (act.flags & ~kActFlags)
		Fail("%s: action flags %#x", what, act.flags);
	// Leaving "connected" tears down, and nothing else does.
	if (disconnect != (before == TB5_TB_CONNECTED &&
			   (after != TB5_TB_CONNECTED || connect)))
		Fail("%s: DISCONNECT %s going from %s to %s", what,
		     act.flags & TB5_TB_ACT_DISCONNECT ? "given" : "missing",
		     Name(before), Name(after));
	if (disconnect) {
		if (!up_)
			Fail("%s: DISCONNECT with the rings down", what);
		up_ = false;
	}
	// Entering "connected" brings the rings up, and nothing else does.
	if (connect != (after == TB5_TB_CONNECTED && !up_))
		Fail("%s: CONNECT %s going from %s to %s (rings %s)", what,
		     act.flags & TB5_TB_ACT_CONNECT ? "given" : "missing",
		     Name(before), Name(after), up_ ? "up" : "down");
	if (connect)
		up_ = true;
	if (act.flags & TB5_TB_ACT_SEND_LOGIN) {
		const uint32_t d = act.delay_ms;
		if (after != TB5_TB_LOGIN)
			Fail("%s: SEND_LOGIN in state %s", what, Name(after));
		if (d != 0 && d != TB5_TB_LOGIN_FIRST_MS &&
		    d != TB5_TB_LOGIN_RETRY_MS && d != TB5_TB_CONNECT_RETRY_MS)
			Fail("%s: SEND_LOGIN after %u ms", what, d);
	}
	if (!(act.flags & TB5_TB_ACT_RESPOND) && act.status)
		Fail("%s: status %u without RESPOND", what, act.status);
	Check(what);
}

// A message of the peer's: a request to us, or the answer to our LOGIN.
void Harness::Build(const TbMsgAction &a, bool answer, uint32_t words[])
{
	tb5_tb_msg m{};

	m.type = a.type;
	if (a.fix & kTbFixType)
		m.type = 1 + a.type % 4;
	if (a.fix & kTbFixRequestType)
		m.type = answer ? TB5_TB_MSG_LOGIN_RESP
				: (a.type & 1 ? TB5_TB_MSG_LOGOUT : TB5_TB_MSG_LOGIN);
	m.seq = a.seq;
	m.cmd_id = (answer && (a.fix & kTbFixCmdId)) ? pending_cmd_ : a.cmd_id;
	m.version = (a.fix & kTbFixVersion) ? TB5_TB_MSG_VERSION : a.version;
	m.status = a.status;
	m.path = a.path;
	m.features = a.features;
	m.ring_size = a.ring_size;
	m.session = a.session;
	m.route = kTbRoute;
	std::memcpy(m.sender, kTbRemoteUuid, 16);
	std::memcpy(m.target, kTbLocalUuid, 16);
	if (!(a.fix & kTbFixAddress)) {
		m.route |= static_cast<uint64_t>(a.route_hi) << 32;
		m.sender[a.pad % 16] ^= static_cast<uint8_t>(a.pad >> 4);
		m.target[a.seq % 16] ^= static_cast<uint8_t>(a.seq >> 4);
	}
	tb5_tb_msg_encode(&m, words);
	// Bit 63 of the route is the router's (set on responses): the
	// receiver ignores it.
	words[0] |= a.route_hi & 0x80000000u;
}

// tb5_tb_handle() and tb5_tb_rx_request(): a packet from the peer.
void Harness::PeerPacket(const Packet &p)
{
	tb5_tb_msg m;
	tb5_tb_act act;

	if (Decode(p, &m) || !tb5_tb_msg_is_request(m.type))
		return;
	if (!tb5_tb_msg_for(&m, kTbRoute, kTbRemoteUuid, kTbLocalUuid))
		return;
	const tb5_tb_login_state before = login_.state;
	const bool sent_before = login_.sent;
	tb5_tb_login_rx(&login_, &m, &act);
	const bool respond = act.flags & TB5_TB_ACT_RESPOND;
	if (respond != (before != TB5_TB_IDLE))
		Fail("a %s request in state %s %s answered", m.type ==
		     TB5_TB_MSG_LOGIN ? "LOGIN" : "LOGOUT", Name(before),
		     respond ? "is" : "is not");
	if (respond) {
		const bool refused = m.type == TB5_TB_MSG_LOGIN &&
				     m.version != TB5_TB_MSG_VERSION;
		if (act.status != (refused ? EPROTONOSUPPORT : 0u))
			Fail("request type %u version %u answered with %u",
			     m.type, m.version, act.status);
		// The answer, as the peer's tb5_tb_request() checks it.
		tb5_tb_msg r;
		uint32_t words[TB5_TB_MSG_WORDS];
		tb5_tb_login_response(&m, act.status, &r);
		r.route = kTbRoute;
		tb5_tb_msg_encode(&r, words);
		words[0] |= 0x80000000u;
		const Packet out(words, sizeof(words));
		tb5_tb_msg back;
		if (Decode(out, &back) ||
		    !tb5_tb_msg_for(&back, kTbRoute, kTbLocalUuid, kTbRemoteUuid) ||
		    back.type != m.type + 1 || back.cmd_id != m.cmd_id ||
		    back.seq != m.seq || back.status != act.status ||
		    back.version != TB5_TB_MSG_VERSION)
			Fail("the answer to request %u does not check out", m.type);
		if (!refused && m.type == TB5_TB_MSG_LOGIN) {
			const tb5_tb_peer &pe = login_.peer;
			if (!login_.received || pe.path != m.path ||
			    pe.features != m.features ||
			    pe.ring_size != m.ring_size ||
			    pe.session != m.session)
				Fail("the peer's LOGIN was answered, not taken");
		}
		if (refused && (login_.state != before ||
				login_.sent != sent_before))
			Fail("a LOGIN of version %u changed the login",
			     m.version);
	}
	Apply(act, before, "peer request");
}

void Harness::PeerRaw()
{
	size_t got;
	const size_t len = in_.u16() % (kTbMaxPacket + 1);
	const uint8_t *b = in_.bytes(len, &got);

	PeerPacket(Packet(b, got));
}

void Harness::PeerMsg()
{
	uint32_t words[TB5_TB_MSG_WORDS];

	Build(ReadTbMsg(in_), false, words);
	PeerPacket(Packet(words, sizeof(words)));
}

// A request of ours, as tb5_tb_login_request() and tb5_tb_address() make it.
void Harness::CheckRequest(const tb5_tb_msg &m, uint32_t type, uint32_t cmd)
{
	if (!cmd || cmd != m.cmd_id || cmd == last_cmd_)
		Fail("request id %u (message %u, previous %u)", cmd, m.cmd_id,
		     last_cmd_);
	last_cmd_ = cmd;
	if (m.type != type || m.version != TB5_TB_MSG_VERSION || m.seq > 3)
		Fail("request type %u version %u seq %u", m.type, m.version,
		     m.seq);
	if (type == TB5_TB_MSG_LOGIN &&
	    (m.path != local_.path || m.features != local_.features ||
	     m.ring_size != local_.ring_size || m.session != login_.session))
		Fail("our LOGIN does not say what we are");
	tb5_tb_msg a = m;
	uint32_t words[TB5_TB_MSG_WORDS];
	a.route = kTbRoute;
	std::memcpy(a.sender, kTbLocalUuid, 16);
	std::memcpy(a.target, kTbRemoteUuid, 16);
	tb5_tb_msg_encode(&a, words);
	const Packet out(words, sizeof(words));
	tb5_tb_msg back;
	if (Decode(out, &back) || !SameMsg(a, back) ||
	    !tb5_tb_msg_for(&back, kTbRoute, kTbLocalUuid, kTbRemoteUuid))
		Fail("our request %u does not reach the peer", type);
}

// tb5_tb_login_work(), first half: our LOGIN goes out.
void Harness::LoginSend()
{
	tb5_tb_msg m;

	if (!started_ || pending_ || login_.state != TB5_TB_LOGIN || login_.sent)
		return;
	const uint32_t cmd = tb5_tb_login_request(&login_, TB5_TB_MSG_LOGIN, &m);
	CheckRequest(m, TB5_TB_MSG_LOGIN, cmd);
	pending_ = true;
	pending_cmd_ = cmd;
	Check("LOGIN sent");
}

// tb5_tb_login_work(), second half: tb5_tb_request() returns.
void Harness::LoginAnswer()
{
	const uint8_t mode = in_.u8() % 3;
	tb5_tb_msg r;
	int err;

	if (mode == 0) {
		err = kTbErrnos[in_.u8() % kTbErrnoCount];
	} else {
		std::vector<uint8_t> bytes;
		if (mode == 1) {
			uint32_t words[TB5_TB_MSG_WORDS];
			Build(ReadTbMsg(in_), true, words);
			bytes.assign(reinterpret_cast<uint8_t *>(words),
				     reinterpret_cast<uint8_t *>(words) +
					     sizeof(words));
		} else {
			size_t got;
			const size_t len = in_.u16() % (kTbMaxPacket + 1);
			const uint8_t *b = in_.bytes(len, &got);
			bytes.assign(b, b + got);
		}
		const Packet p(bytes.data(), bytes.size());
		err = Decode(p, &r);
		if (!err && !tb5_tb_msg_for(&r, kTbRoute, kTbRemoteUuid,
					    kTbLocalUuid))
			err = -EBADMSG;
	}
	if (!pending_)
		return;
	pending_ = false;

	tb5_tb_act act;
	const tb5_tb_login_state before = login_.state;
	const bool sent = login_.sent;
	const uint32_t retries = login_.retries;
	tb5_tb_login_result(&login_, pending_cmd_, err, err ? nullptr : &r, &act);
	const bool ok = !err && r.type == TB5_TB_MSG_LOGIN_RESP &&
			r.cmd_id == pending_cmd_ && r.status == 0;
	const bool current = before == TB5_TB_LOGIN && !sent &&
			     pending_cmd_ == login_.cmd_id;
	if (login_.sent != (sent || (current && ok)))
		Fail("our LOGIN %s sent after an answer (err %d, type %u, "
		     "status %u)", login_.sent ? "counts as" : "is not",
		     err, err ? 0 : r.type, err ? 0 : r.status);
	if (!current && (login_.state != before || login_.retries != retries ||
			 act.flags))
		Fail("a stale answer changed the login");
	Apply(act, before, "LOGIN answered");
}

// tb5_tb_conn_work(): bringing the rings up failed; it tore down already.
void Harness::ConnectFailed()
{
	const int err = kTbErrnos[in_.u8() % kTbErrnoCount];
	tb5_tb_act act;

	if (!started_)
		return;
	const tb5_tb_login_state before = login_.state;
	up_ = false;
	tb5_tb_login_connect_failed(&login_, err, &act);
	if (before == TB5_TB_CONNECTED && !(act.flags & TB5_TB_ACT_DISCONNECT))
		Fail("a failed bring-up asks for no DISCONNECT");
	act.flags &= ~TB5_TB_ACT_DISCONNECT;	// as tb5_tb_conn_work()
	if (before != TB5_TB_CONNECTED && act.flags)
		Fail("a failed bring-up in state %s acts", Name(before));
	Apply(act, TB5_TB_IDLE, "bring-up failed");
}

// tb5_tb_stop(): a pending LOGIN's answer is dropped (stopping), a LOGOUT
// goes out if our LOGIN had been taken.
void Harness::Stop()
{
	tb5_tb_act act;
	const tb5_tb_login_state before = login_.state;
	const bool sent = login_.sent;
	const bool logout = tb5_tb_login_stop(&login_, &act);

	started_ = false;
	pending_ = false;
	if (logout != sent)
		Fail("LOGOUT %s after our LOGIN %s taken", logout ? "sent" :
		     "not sent", sent ? "was" : "was not");
	if (login_.state != TB5_TB_IDLE)
		Fail("stopped in state %s", Name(login_.state));
	Apply(act, before, "stop");
	if (logout) {
		tb5_tb_msg m;
		const uint32_t cmd =
			tb5_tb_login_request(&login_, TB5_TB_MSG_LOGOUT, &m);
		CheckRequest(m, TB5_TB_MSG_LOGOUT, cmd);
	}
}

// tb5_tb_start(): probe or resume.
void Harness::Start()
{
	tb5_tb_act act;
	const tb5_tb_login_state before = login_.state;

	tb5_tb_login_start(&login_, &local_, setup_.session, &act);
	started_ = true;
	if (login_.state != TB5_TB_LOGIN || login_.received || login_.sent ||
	    act.flags != TB5_TB_ACT_SEND_LOGIN ||
	    act.delay_ms != TB5_TB_LOGIN_FIRST_MS)
		Fail("start: state %s, flags %#x", Name(login_.state), act.flags);
	Apply(act, before, "start");
}

// tb5_tb_rx_frame(): the NHI wrote a descriptor back.
void Harness::RxDesc()
{
	const uint32_t flags = in_.u32();
	const uint32_t size = in_.u16();
	const uint8_t pdf = in_.u8();
	uint8_t sof = 0xaa, eof = 0xaa;
	uint32_t len = 0xaaaa;
	const tb5_tb_rx_verdict v =
		tb5_tb_rx_check(flags, size, pdf, &sof, &eof, &len);

	// The table of tb5_tb_proto.h.
	tb5_tb_rx_verdict want = TB5_TB_RX_OK;
	if (flags & TB5_TB_DESC_CRC_ERROR)
		want = TB5_TB_RX_CRC;
	else if (flags & TB5_TB_DESC_OVERRUN)
		want = TB5_TB_RX_OVERRUN;
	else if (pdf == TB5_TB_PDF_DROP)
		want = TB5_TB_RX_DROPPED;
	else if (pdf < TB5_TB_PDF_HDR_MORE || pdf > TB5_TB_PDF_PAY_LAST)
		want = TB5_TB_RX_BAD_PDF;
	if (v != want)
		Fail("descriptor flags %#x pdf %u: verdict %d, not %d", flags,
		     pdf, v, want);
	if (v != TB5_TB_RX_OK)
		return;
	const uint32_t want_len = (size & 0xfff) ? (size & 0xfff) : TB5_FRAME_MAX;
	const bool header = pdf <= TB5_TB_PDF_HDR_LAST;
	const bool last = pdf == TB5_TB_PDF_HDR_LAST || pdf == TB5_TB_PDF_PAY_LAST;
	if (len != want_len ||
	    sof != (header ? TB5_SOF_HEADER : TB5_SOF_PAYLOAD) ||
	    eof != (last ? TB5_EOF_LAST : TB5_EOF_MORE))
		Fail("descriptor size %#x pdf %u read as sof %u eof %u len %u",
		     size, pdf, sof, eof, len);
	// And it is the descriptor a sender of that frame writes.
	uint8_t pdf_sof, pdf_eof;
	uint32_t field;
	if (tb5_tb_tx_desc(sof, eof, len, &pdf_sof, &pdf_eof, &field) ||
	    pdf_sof != TB5_TB_PDF_SOF || pdf_eof != pdf || field != (size & 0xfff))
		Fail("the frame read from pdf %u size %#x is not written so",
		     pdf, size);
}

// tb5_tb_tx(): the core queues a frame.
void Harness::TxDesc()
{
	const uint8_t sof = in_.u8(), eof = in_.u8();
	const uint32_t len = in_.u16() % (TB5_FRAME_MAX + 2);
	uint8_t pdf_sof = 0, pdf_eof = 0;
	uint32_t field = 0;
	const int ret = tb5_tb_tx_desc(sof, eof, len, &pdf_sof, &pdf_eof, &field);
	const bool valid = len >= 1 && len <= TB5_FRAME_MAX &&
			   (sof == TB5_SOF_HEADER || sof == TB5_SOF_PAYLOAD) &&
			   (eof == TB5_EOF_MORE || eof == TB5_EOF_LAST);

	if (ret != (valid ? 0 : -EINVAL))
		Fail("tb5_tb_tx_desc(%u, %u, %u) = %d", sof, eof, len, ret);
	if (ret)
		return;
	uint8_t s, e;
	uint32_t l;
	if (pdf_sof != TB5_TB_PDF_SOF || field > 0xfff ||
	    tb5_tb_rx_check(0, field, pdf_eof, &s, &e, &l) != TB5_TB_RX_OK ||
	    s != sof || e != eof || l != len)
		Fail("frame sof %u eof %u len %u does not read back", sof, eof,
		     len);
}

void Harness::TxReserve()
{
	const uint32_t count = in_.u8() % 64;
	const uint32_t size = txq_.size;

	for (uint32_t i = 0; i < count; i++) {
		uint32_t slot = ~0u;
		const uint64_t cookie = next_cookie_++;
		const int ret = tb5_tb_txq_reserve(&txq_, cookie, &slot);

		if (head_ - tail_ >= size) {
			if (ret != -ENOSPC)
				Fail("a full TX ring took a frame (%d)", ret);
			stalled_ = true;
			continue;
		}
		if (ret || slot != (head_ & (size - 1)))
			Fail("TX reserve: %d, slot %u for head %u", ret, slot,
			     head_);
		slot_state_[slot] = 1;
		slot_cookie_[slot] = cookie;
		head_++;
	}
	if (tb5_tb_txq_used(&txq_) != head_ - tail_)
		Fail("TX ring holds %u, the model %u", tb5_tb_txq_used(&txq_),
		     head_ - tail_);
}

void Harness::TxComplete()
{
	const uint32_t slot = in_.u8();
	const uint32_t size = txq_.size;
	uint64_t cookie = 0;
	bool kick = false;
	const int ret = tb5_tb_txq_complete(&txq_, slot, &cookie, &kick);

	if (slot >= size || slot_state_[slot] != 1) {
		if (ret != -EPROTO)
			Fail("completion of slot %u not in flight: %d", slot, ret);
		return;
	}
	if (ret || cookie != slot_cookie_[slot])
		Fail("completion of slot %u: %d, cookie %llu, not %llu", slot,
		     ret, static_cast<unsigned long long>(cookie),
		     static_cast<unsigned long long>(slot_cookie_[slot]));
	slot_state_[slot] = 2;
	while (head_ != tail_ && slot_state_[tail_ & (size - 1)] == 2) {
		slot_state_[tail_ & (size - 1)] = 0;
		tail_++;
	}
	const uint32_t kick_at = size / 8 ? size / 8 : 1;
	const bool want = stalled_ && size - (head_ - tail_) >= kick_at;
	if (kick != want)
		Fail("kick %d with %u of %u slots used, stalled %d", kick,
		     head_ - tail_, size, stalled_);
	if (kick)
		stalled_ = false;
	if (tb5_tb_txq_used(&txq_) != head_ - tail_)
		Fail("TX ring holds %u, the model %u", tb5_tb_txq_used(&txq_),
		     head_ - tail_);
}

void Harness::TxUnreserve()
{
	const uint32_t size = txq_.size;

	tb5_tb_txq_unreserve(&txq_);
	if (head_ != tail_ && slot_state_[(head_ - 1) & (size - 1)] == 1) {
		head_--;
		slot_state_[head_ & (size - 1)] = 0;
	}
	if (tb5_tb_txq_used(&txq_) != head_ - tail_)
		Fail("TX ring holds %u after unreserve, the model %u",
		     tb5_tb_txq_used(&txq_), head_ - tail_);
}

void Harness::TxReset()
{
	tb5_tb_txq_reset(&txq_);
	slot_state_.assign(slot_state_.size(), 0);
	head_ = tail_ = 0;
	stalled_ = false;
	if (tb5_tb_txq_used(&txq_))
		Fail("TX ring holds %u after reset", tb5_tb_txq_used(&txq_));
}

} // namespace
} // namespace tb5fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tb5fuzz::Harness h(data, size);

	h.Run();
	return 0;
}
