// SPDX-License-Identifier: MIT
//
// make_seeds_tb.cc - writes tb5-fuzz-tb's seed corpus: one small input per
// path worth starting from (both login orders, raw packets, a peer of
// another version, refusals, timeouts until the login gives up, a peer that
// restarts or logs out, a failed bring-up, stop and start, misaddressed and
// malformed packets, every RX descriptor kind, the TX slots in and out of
// order, a service of another protocol).
//
//   tb5-fuzz-make-seeds-tb tests/fuzz/corpus-tb
//
// The committed corpus is this program's output, and the campaign-* files
// of a long campaign (docs/emulated-fabric.md). Rerun this when the input
// format (fuzz_tb_actions.h) changes, and drop the campaign-* files then.
#include "fuzz_tb_actions.h"
#include "seed_files.h"

extern "C" {
#include "tb5_tb_proto.h"
}

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace tb5fuzz;

namespace {

constexpr TbSetup kSetup = {
	1, 2, 20, 8, 256, 3, 0x5e55, TB5_TB_PRTCID, TB5_TB_PRTCVERS,
	TB5_TB_F_E2E,
};

// A well-formed message of the peer: type, then its fields.
TbMsgAction Msg(uint8_t type, uint32_t session = 0x77, uint32_t status = 0)
{
	TbMsgAction m{};

	m.type = static_cast<uint8_t>(type - 1);	// 1 + type % 4 gives it back
	m.fix = kTbFixType | kTbFixAddress | kTbFixVersion | kTbFixCmdId;
	m.cmd_id = 0x100 + type;
	m.version = TB5_TB_MSG_VERSION;
	m.status = status;
	m.path = 9;
	m.features = TB5_TB_F_E2E;
	m.ring_size = 256;
	m.session = session;
	return m;
}

void PeerMsg(Writer &w, const TbMsgAction &m)
{
	w.u8(kTbPeerMsg);
	WriteTbMsg(w, m);
}

void PeerLogin(Writer &w, uint32_t session = 0x77)
{
	PeerMsg(w, Msg(TB5_TB_MSG_LOGIN, session));
}

// Our LOGIN goes out and gets @m back.
void LoginAnswered(Writer &w, const TbMsgAction &m)
{
	w.u8(kTbLoginSend);
	w.u8(kTbLoginAnswer);
	w.u8(1);
	WriteTbMsg(w, m);
}

void LoginOk(Writer &w)
{
	LoginAnswered(w, Msg(TB5_TB_MSG_LOGIN_RESP));
}

// Our LOGIN goes out and the transport fails with kTbErrnos[@err].
void LoginFails(Writer &w, uint8_t err)
{
	w.u8(kTbLoginSend);
	w.u8(kTbLoginAnswer);
	w.u8(0);
	w.u8(err);
}

void Raw(Writer &w, uint8_t act, const std::vector<uint8_t> &b)
{
	w.u8(act);
	if (act == kTbLoginAnswer)
		w.u8(2);
	w.u16(static_cast<uint16_t>(b.size()));
	for (uint8_t v : b)
		w.u8(v);
}

// A message as the wire carries it, for raw packets.
std::vector<uint8_t> Packet(uint32_t type, bool response,
			    uint32_t version = TB5_TB_MSG_VERSION)
{
	tb5_tb_msg m{};
	uint32_t words[TB5_TB_MSG_WORDS];

	m.route = kTbRoute;
	m.type = type;
	m.cmd_id = 1;	// our first request's id
	m.version = version;
	m.path = 9;
	m.features = TB5_TB_F_E2E;
	m.ring_size = 256;
	m.session = 0x99;
	std::memcpy(m.sender, kTbRemoteUuid, 16);
	std::memcpy(m.target, kTbLocalUuid, 16);
	tb5_tb_msg_encode(&m, words);
	if (response)
		words[0] |= 0x80000000u;
	const uint8_t *p = reinterpret_cast<const uint8_t *>(words);
	return std::vector<uint8_t>(p, p + sizeof(words));
}

void Connected(Writer &w)
{
	PeerLogin(w);
	LoginOk(w);
}

void RxDesc(Writer &w, uint32_t flags, uint16_t size, uint8_t pdf)
{
	w.u8(kTbRxDesc);
	w.u32(flags);
	w.u16(size);
	w.u8(pdf);
}

void TxDesc(Writer &w, uint8_t sof, uint8_t eof, uint16_t len)
{
	w.u8(kTbTxDesc);
	w.u8(sof);
	w.u8(eof);
	w.u16(len);
}

const std::vector<Seed<TbSetup>> &Seeds()
{
	static const std::vector<Seed<TbSetup>> seeds = {
	{"login-peer-first", kSetup, [](Writer &w) {
		Connected(w);
	}},
	{"login-ours-first", kSetup, [](Writer &w) {
		LoginOk(w);
		PeerLogin(w);
		PeerLogin(w);	// our answer was lost: asked again
	}},
	{"login-raw", kSetup, [](Writer &w) {
		Raw(w, kTbPeerRaw, Packet(TB5_TB_MSG_LOGIN, false));
		w.u8(kTbLoginSend);
		Raw(w, kTbLoginAnswer, Packet(TB5_TB_MSG_LOGIN_RESP, true));
	}},
	{"login-other-version", kSetup, [](Writer &w) {
		Raw(w, kTbPeerRaw, Packet(TB5_TB_MSG_LOGIN, false, 2));
		TbMsgAction m = Msg(TB5_TB_MSG_LOGIN);
		m.fix &= static_cast<uint8_t>(~kTbFixVersion);
		m.version = 7;
		PeerMsg(w, m);
		LoginAnswered(w, Msg(TB5_TB_MSG_LOGIN_RESP, 0, EPROTONOSUPPORT));
		PeerLogin(w);	// restarts the login from "wait"
		LoginOk(w);
	}},
	{"login-refused", kSetup, [](Writer &w) {
		LoginAnswered(w, Msg(TB5_TB_MSG_LOGIN_RESP, 0, EBUSY));
		LoginAnswered(w, Msg(TB5_TB_MSG_LOGIN_RESP, 0, 0x80000000u));
		LoginOk(w);
		PeerLogin(w);
	}},
	{"login-gives-up", kSetup, [](Writer &w) {
		for (uint32_t i = 0; i < TB5_TB_LOGIN_RETRIES; i++)
			LoginFails(w, static_cast<uint8_t>(i));
		w.u8(kTbLoginSend);	// not due: waiting for the peer
		Connected(w);
	}},
	{"login-stale-answers", kSetup, [](Writer &w) {
		TbMsgAction m = Msg(TB5_TB_MSG_LOGIN_RESP);
		m.fix &= static_cast<uint8_t>(~kTbFixCmdId);
		m.cmd_id = 77;
		LoginAnswered(w, m);
		LoginAnswered(w, Msg(TB5_TB_MSG_LOGOUT_RESP));
		LoginAnswered(w, Msg(TB5_TB_MSG_LOGIN));
		w.u8(kTbLoginAnswer);	// nothing pending
		w.u8(0);
		w.u8(0);
		Connected(w);
	}},
	{"peer-restarts", kSetup, [](Writer &w) {
		Connected(w);
		PeerLogin(w, 0x78);	// a new session: tear down, log in again
		LoginOk(w);
	}},
	{"peer-logs-out", kSetup, [](Writer &w) {
		Connected(w);
		PeerMsg(w, Msg(TB5_TB_MSG_LOGOUT));
		PeerLogin(w, 0x79);
		LoginOk(w);
	}},
	{"connect-fails", kSetup, [](Writer &w) {
		Connected(w);
		w.u8(kTbConnectFailed);
		w.u8(3);
		PeerLogin(w);
		LoginOk(w);
		w.u8(kTbConnectFailed);	// not connected: nothing to undo
		w.u8(0);
	}},
	{"stop-start", kSetup, [](Writer &w) {
		Connected(w);
		w.u8(kTbStop);
		PeerLogin(w);	// stopped: no answer
		w.u8(kTbStart);
		w.u32(0x5e56);
		Connected(w);
	}},
	{"stop-during-login", kSetup, [](Writer &w) {
		w.u8(kTbLoginSend);
		w.u8(kTbStop);
		w.u8(kTbLoginAnswer);
		w.u8(1);
		WriteTbMsg(w, Msg(TB5_TB_MSG_LOGIN_RESP));
		w.u8(kTbStart);
		w.u32(1);
		Connected(w);
	}},
	{"misaddressed", kSetup, [](Writer &w) {
		TbMsgAction m = Msg(TB5_TB_MSG_LOGIN);
		m.fix &= static_cast<uint8_t>(~kTbFixAddress);
		m.route_hi = 1;		// another route
		PeerMsg(w, m);
		m.route_hi = 0x80000000u;	// bit 63 only: ours after all
		PeerMsg(w, m);
		m.route_hi = 0;
		m.pad = 0x13;		// another sender
		PeerMsg(w, m);
		m.pad = 0;
		m.seq = 0x1f;		// another target
		PeerMsg(w, m);
		TbMsgAction a = Msg(TB5_TB_MSG_LOGIN_RESP);
		a.fix &= static_cast<uint8_t>(~kTbFixAddress);
		a.pad = 0x25;
		LoginAnswered(w, a);
	}},
	{"malformed-packets", kSetup, [](Writer &w) {
		std::vector<uint8_t> p = Packet(TB5_TB_MSG_LOGIN, false);
		Raw(w, kTbPeerRaw, {});
		Raw(w, kTbPeerRaw, std::vector<uint8_t>(p.begin(), p.end() - 1));
		Raw(w, kTbPeerRaw, std::vector<uint8_t>(p.begin(), p.end() - 4));
		std::vector<uint8_t> q = p;
		q.push_back(0);
		Raw(w, kTbPeerRaw, q);	// not whole words
		q.insert(q.end(), 3, 0);
		Raw(w, kTbPeerRaw, q);	// a word longer, length field not
		q[8] = static_cast<uint8_t>(q[8] + 1);
		Raw(w, kTbPeerRaw, q);	// a later version's longer message
		q = p;
		q[12] ^= 1;		// another protocol's UUID
		Raw(w, kTbPeerRaw, q);
		q = p;
		q[60] = 5;		// an unknown type
		Raw(w, kTbPeerRaw, q);
		q = p;
		q[68] = 0;		// version 0
		Raw(w, kTbPeerRaw, q);
		Raw(w, kTbPeerRaw, Packet(TB5_TB_MSG_LOGIN_RESP, false));
		Raw(w, kTbPeerRaw, std::vector<uint8_t>(kTbMaxPacket, 0xff));
		w.u8(kTbLoginSend);
		Raw(w, kTbLoginAnswer, std::vector<uint8_t>(p.begin(), p.end() - 4));
		Connected(w);
	}},
	{"rx-descriptors", kSetup, [](Writer &w) {
		for (uint8_t pdf = 0; pdf < 16; pdf++)
			RxDesc(w, 0, static_cast<uint16_t>(pdf * 257), pdf);
		RxDesc(w, TB5_TB_DESC_CRC_ERROR, 64, TB5_TB_PDF_HDR_LAST);
		RxDesc(w, TB5_TB_DESC_OVERRUN, 0, TB5_TB_PDF_PAY_LAST);
		RxDesc(w, TB5_TB_DESC_CRC_ERROR | TB5_TB_DESC_OVERRUN, 1, 0);
		RxDesc(w, 0x2, 0, TB5_TB_PDF_PAY_MORE);	// RING_DESC_COMPLETED
		RxDesc(w, 0, 0x1000, TB5_TB_PDF_PAY_LAST);
		RxDesc(w, 0, 0xffff, TB5_TB_PDF_HDR_MORE);
	}},
	{"tx-descriptors", kSetup, [](Writer &w) {
		for (uint8_t sof = 0; sof < 4; sof++)
			for (uint8_t eof = 2; eof < 6; eof++)
				TxDesc(w, sof, eof, 48);
		TxDesc(w, TB5_SOF_PAYLOAD, TB5_EOF_LAST, 0);
		TxDesc(w, TB5_SOF_PAYLOAD, TB5_EOF_LAST, 1);
		TxDesc(w, TB5_SOF_PAYLOAD, TB5_EOF_MORE, TB5_FRAME_MAX);
		TxDesc(w, TB5_SOF_PAYLOAD, TB5_EOF_MORE, TB5_FRAME_MAX + 1);
	}},
	{"tx-ring", kSetup, [](Writer &w) {
		w.u8(kTbTxReserve);	// 8 slots: one more than fit
		w.u8(9);
		for (uint8_t s : {3, 1, 0, 0, 2, 7, 6, 5, 4, 9}) {
			w.u8(kTbTxComplete);
			w.u8(s);
		}
		w.u8(kTbTxReserve);
		w.u8(3);
		w.u8(kTbTxUnreserve);
		w.u8(kTbTxComplete);
		w.u8(0);
		w.u8(kTbTxReset);
		w.u8(kTbTxReserve);
		w.u8(1);
	}},
	{"other-service", {1, 1, 10, 8, 256, 0, 1, TB5_TB_PRTCID + 1,
			   TB5_TB_PRTCVERS, 0}, [](Writer &w) {
		Connected(w);
	}},
	{"other-link-widths", {0, 8, 40, 8, 64, 7, 2, TB5_TB_PRTCID,
			       TB5_TB_PRTCVERS, 0xffffffffu}, [](Writer &w) {
		Connected(w);
	}},
	};
	return seeds;
}

} // namespace

int main(int argc, char **argv)
{
	return WriteSeeds(argc, argv, Seeds(), WriteTbSetup);
}
