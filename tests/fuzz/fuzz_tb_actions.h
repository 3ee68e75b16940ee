// SPDX-License-Identifier: MIT
//
// fuzz_tb_actions.h - the input format of tb5-fuzz-tb, shared by the harness
// (fuzz_tb.cc, which reads it) and make_seeds_tb (which writes it), with the
// Reader and Writer of fuzz_actions.h.
//
// An input is a 24-byte setup (what the peer's property directory and our
// XDomain say) followed by actions, each one opcode byte (taken modulo
// kTbActCount) and a fixed-size body, some followed by raw packet bytes. As
// in tb5-fuzz-rx, reads past the end yield zeros: every input is valid.
#ifndef TB5_FUZZ_TB_ACTIONS_H
#define TB5_FUZZ_TB_ACTIONS_H

#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "fuzz_actions.h"

namespace tb5fuzz {

inline constexpr uint32_t kTbMaxActions = 512;
// Bytes of a raw XDomain packet: the control channel's packets are at most
// 256 bytes; twice that, so that the length checks are pushed past it.
inline constexpr uint32_t kTbMaxPacket = 512;
// How the two hosts are addressed (tb5_tb_msg_for()): the peer's route
// string as our router sees it, and the two XDomain UUIDs.
inline constexpr uint64_t kTbRoute = 0x301;
inline constexpr uint8_t kTbLocalUuid[16] = {
	0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
	0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
};
inline constexpr uint8_t kTbRemoteUuid[16] = {
	0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27,
	0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2f,
};

// The setup, the first 24 bytes: the peer's service properties as the
// XDomain property parser hands them to tb5's probe, our own settings, and
// the link width and speed the XDomain reports.
struct TbSetup {
	uint8_t e2e;		// bit 0: this host offers end-to-end flow control
	uint8_t link_width;	// tb_xdomain's link_width
	uint8_t gbps;		// its link_speed (Gb/s per lane)
	uint8_t path;		// our transmit HopID
	uint16_t ring_size;	// our RX descriptors
	uint16_t txq_size;	// TX slots: 1 << (x % 8)
	uint32_t session;	// drawn at the first login
	uint32_t prtcid;	// the peer's properties
	uint32_t prtcvers;
	uint32_t prtcstns;
};

enum TbAct : uint8_t {
	kTbPeerRaw = 0,	// u16 len (% (kTbMaxPacket + 1)), then len bytes: a
			// packet from the peer with tb5's UUID, to the handler
	kTbPeerMsg,	// TbMsgAction: a request of the peer, encoded by
			// tb5_tb_msg_encode(), to the handler
	kTbLoginSend,	// no body: the login work sends our LOGIN (if due)
	kTbLoginAnswer,	// u8 mode (% 3: transport error, TbMsgAction, raw),
			// then u8 errno index, or the TbMsgAction, or u16 len
			// and len bytes: what our pending LOGIN gets back
	kTbConnectFailed, // u8 errno index: bringing the rings up failed
	kTbStop,	// no body: remove or suspend (and the LOGOUT it sends)
	kTbStart,	// u32 session: probe or resume
	kTbRxDesc,	// u32 flags, u16 size, u8 pdf: an RX descriptor back
	kTbTxDesc,	// u8 sof, u8 eof, u16 len: a frame the core queues
	kTbTxReserve,	// u8 count: frames put on the TX ring
	kTbTxComplete,	// u8 slot: the NHI (or a poller) reports it sent
	kTbTxUnreserve,	// no body: the ring refused the frame just reserved
	kTbTxReset,	// no body: the ring stopped
	kTbActCount,
};

// kTbPeerMsg body (and a kTbLoginAnswer's), 36 bytes. Bits of `fix` make the
// message one the checks take, so that deep paths are reached; without
// them the fields are the fuzzer's.
struct TbMsgAction {
	uint8_t type;		// tb5_tb_msg_type: 1 + type % 4 with kTbFixType
	uint8_t fix;		// enum TbFix bits
	uint8_t seq;
	uint8_t pad;
	uint32_t cmd_id;
	uint32_t version;
	uint32_t status;
	uint32_t path;
	uint32_t features;
	uint32_t ring_size;
	uint32_t session;
	uint32_t route_hi;	// the route's high word, as it arrives
};

enum TbFix : uint8_t {
	kTbFixType = 1u << 0,		// type = 1 + type % 4
	kTbFixAddress = 1u << 1,	// route, sender and target are right
	kTbFixVersion = 1u << 2,	// version = TB5_TB_MSG_VERSION
	kTbFixCmdId = 1u << 3,		// answers: echo our pending cmd_id
	kTbFixRequestType = 1u << 4,	// peer requests: LOGIN or LOGOUT;
					// answers: LOGIN_RESP
};

// The errnos a transport or a bring-up may fail with, by index.
inline constexpr int kTbErrnos[] = {
	-ETIMEDOUT, -ENOTCONN, -EIO, -ENOMEM, -EBUSY, -ENODEV,
	-EPROTONOSUPPORT, -EBADMSG,
};
inline constexpr size_t kTbErrnoCount = sizeof(kTbErrnos) / sizeof(kTbErrnos[0]);

inline TbSetup ReadTbSetup(Reader &in)
{
	TbSetup s;

	s.e2e = in.u8();
	s.link_width = in.u8();
	s.gbps = in.u8();
	s.path = in.u8();
	s.ring_size = in.u16();
	s.txq_size = in.u16();
	s.session = in.u32();
	s.prtcid = in.u32();
	s.prtcvers = in.u32();
	s.prtcstns = in.u32();
	return s;
}

inline void WriteTbSetup(Writer &w, const TbSetup &s)
{
	w.u8(s.e2e);
	w.u8(s.link_width);
	w.u8(s.gbps);
	w.u8(s.path);
	w.u16(s.ring_size);
	w.u16(s.txq_size);
	w.u32(s.session);
	w.u32(s.prtcid);
	w.u32(s.prtcvers);
	w.u32(s.prtcstns);
}

inline TbMsgAction ReadTbMsg(Reader &in)
{
	TbMsgAction m;

	m.type = in.u8();
	m.fix = in.u8();
	m.seq = in.u8();
	m.pad = in.u8();
	m.cmd_id = in.u32();
	m.version = in.u32();
	m.status = in.u32();
	m.path = in.u32();
	m.features = in.u32();
	m.ring_size = in.u32();
	m.session = in.u32();
	m.route_hi = in.u32();
	return m;
}

inline void WriteTbMsg(Writer &w, const TbMsgAction &m)
{
	w.u8(m.type);
	w.u8(m.fix);
	w.u8(m.seq);
	w.u8(m.pad);
	w.u32(m.cmd_id);
	w.u32(m.version);
	w.u32(m.status);
	w.u32(m.path);
	w.u32(m.features);
	w.u32(m.ring_size);
	w.u32(m.session);
	w.u32(m.route_hi);
}

} // namespace tb5fuzz

#endif // TB5_FUZZ_TB_ACTIONS_H
