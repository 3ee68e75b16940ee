// SPDX-License-Identifier: MIT
//
// fuzz_actions.h - the input format of tb5-fuzz-rx, shared by the harness
// (which reads it) and make_seeds (which writes it).
//
// An input is a 4-byte setup followed by actions, each one opcode byte
// (taken modulo kActCount, so every byte is some action) and a fixed-size
// body. Reads past the end yield zeros: every input is valid, and the fuzzer
// can shorten one without shifting what the remaining bytes mean. All
// integers are little-endian.
#ifndef TB5_FUZZ_ACTIONS_H
#define TB5_FUZZ_ACTIONS_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tb5fuzz {

// Per-input bounds, so that one input never runs long or maps much memory.
inline constexpr uint32_t kMaxActions = 512;
inline constexpr uint32_t kMaxMsg = 256 * 1024;	// bytes per send or receive
inline constexpr uint64_t kMaxLiveBytes = 8u << 20;	// all mapped buffers
inline constexpr uint32_t kMaxEndpoints = 32;	// created per input
inline constexpr uint32_t kLinkRingSize = 64;

// Setup, the first 4 bytes.
struct Setup {
	uint8_t burst_frames;	// % 17; 0 means the core's default
	uint8_t max_endpoints;	// % 9; 0 means the core's default
	uint8_t tx_capacity;	// fake TX ring holds 1 + (x % kLinkRingSize)
	uint8_t teardown;	// % 4, enum Teardown
};

enum Teardown : uint8_t {
	kTeardownDrain = 0,	// close all, drain the TX ring, destroy
	kTeardownDrainDown,	// close all, drain, link down, destroy
	kTeardownDown,		// link down, destroy (destroy closes)
	kTeardownDropDown,	// close all, discard the TX ring, link down, destroy
	kTeardownCount,
};

enum Act : uint8_t {
	kRxRaw = 0,	// u8 sof, u8 eof, u16 len (% 4097), then len bytes
	kRxHeader,	// HeaderAction: a valid header built with tb5_wire_encode
	kRxPayload,	// u8 frames, u16 last_len, u8 fill, u8 mode (PayloadMode)
	kPostRecv,	// u8 ep, u32 len (% (kMaxMsg + 1)), u8 tag
	kPostSend,	// u8 ep, u32 len (% (kMaxMsg + 1)), u8 tag
	kConnect,	// u64 service, u64 cookie
	kAccept,	// u8 listener
	kListen,	// u8 service
	kClose,		// u8 ep
	kLinkDown,	// u8 reason (% 4: -ENOLINK, -ECONNRESET, -EIO, -ESHUTDOWN)
	kLinkUp,	// no body
	kTxDone,	// u8 count; 0 means every queued frame
	kTxRefuse,	// u8 count: the next count tx() calls get -ENOSPC
	kKick,		// no body
	kFault,		// u8 what (% 2): 0 next allocation fails, 1 next copy_to fails
	kQuery,		// no body: state, peer and stats queries
	kActCount,
};

// kRxHeader body, 40 bytes. The generic fields a..e map onto the type's
// body (fuzz_rx.cc, Harness::RxHeader):
//   HELLO   host_id a, epoch b, ring_size d, features e
//   CONNECT service a, listen_cookie b, conn_cookie c
//   ACCEPT  conn_cookie a          REJECT conn_cookie a, status d
//   CLOSE   status d               CTS    seq d, tag e, len a
//   DATA    offset a, msg_len b, burst_len c, seq d, flags e
//   ABORT   seq d, status e
// Bits in `derive` replace fields with values learned from what our core
// transmitted (the template picked by reply_to), so that replies reach deep
// paths: the right endpoint ids, cookies and sequence numbers.
struct HeaderAction {
	uint8_t type;		// wire type = 1 + type % TB5_WIRE_TYPE_MAX
	uint8_t reply_to;	// template: bit7 any type, else the natural one;
				// low 7 bits: 0 = newest
	uint8_t derive;		// enum Derive bits
	uint8_t pad;
	uint32_t dst;
	uint32_t src;
	uint64_t a;
	uint64_t b;
	uint64_t c;
	uint32_t d;
	uint32_t e;
};

enum Derive : uint8_t {
	kDeriveDst = 1u << 0,	// dst = template's src (our endpoint)
	kDeriveSrc = 1u << 1,	// src = template's dst, when it is not 0
	kDeriveKeys = 1u << 2,	// service and cookies from our listener / template
	kDeriveSeq = 1u << 3,	// CTS: the next counter per endpoint
				// (seq counter << 6 | d % 64), tag & 3;
				// DATA, ABORT: the template CTS's seq
	kDeriveLen = 1u << 4,	// CTS: len % (kMaxMsg + 1); DATA: the next burst
				// (+ a, b low 16 bits on offset, msg_len;
				// e bit 0 flips the LAST flag)
	kAutoPayload = 1u << 5,	// DATA: the payload frames follow at once
	kTruncate = 1u << 6,	// DATA: ... but the last one is missing
	kFlipEof = 1u << 7,	// the header's EOF marker is the wrong one
};

enum PayloadMode : uint8_t {
	kPayloadLastMore = 1u << 0,	// the last frame says MORE, not LAST
	kPayloadAsHeader = 1u << 1,	// the last frame says HEADER, not PAYLOAD
};

// Reads the input front to back; past the end, every read yields zeros.
class Reader {
public:
	Reader(const uint8_t *data, size_t size) : p_(data), left_(size) {}

	bool empty() const { return left_ == 0; }
	size_t left() const { return left_; }

	uint8_t u8()
	{
		if (!left_)
			return 0;
		left_--;
		return *p_++;
	}
	uint16_t u16() { return static_cast<uint16_t>(u8() | u8() << 8); }
	uint32_t u32() { return u16() | static_cast<uint32_t>(u16()) << 16; }
	uint64_t u64() { return u32() | static_cast<uint64_t>(u32()) << 32; }

	// Up to @n bytes; fewer at the end of the input.
	const uint8_t *bytes(size_t n, size_t *got)
	{
		const uint8_t *at = p_;

		*got = n < left_ ? n : left_;
		p_ += *got;
		left_ -= *got;
		return at;
	}

	HeaderAction header()
	{
		HeaderAction h;

		h.type = u8();
		h.reply_to = u8();
		h.derive = u8();
		h.pad = u8();
		h.dst = u32();
		h.src = u32();
		h.a = u64();
		h.b = u64();
		h.c = u64();
		h.d = u32();
		h.e = u32();
		return h;
	}

private:
	const uint8_t *p_;
	size_t left_;
};

// Builds inputs; the exact mirror of Reader.
class Writer {
public:

	const std::vector<uint8_t> &data() const { return buf_; }

	void u8(uint8_t v) { buf_.push_back(v); }
	void u16(uint16_t v) { u8(v & 0xff); u8(v >> 8); }
	void u32(uint32_t v) { u16(v & 0xffff); u16(v >> 16); }
	void u64(uint64_t v) { u32(v & 0xffffffffu); u32(v >> 32); }
	void act(Act a) { u8(a); }

	void header(const HeaderAction &h)
	{
		act(kRxHeader);
		u8(h.type);
		u8(h.reply_to);
		u8(h.derive);
		u8(h.pad);
		u32(h.dst);
		u32(h.src);
		u64(h.a);
		u64(h.b);
		u64(h.c);
		u32(h.d);
		u32(h.e);
	}

private:
	std::vector<uint8_t> buf_;
};

// The start of a tb5-fuzz-rx input.
inline void WriteSetup(Writer &w, const Setup &s)
{
	w.u8(s.burst_frames);
	w.u8(s.max_endpoints);
	w.u8(s.tx_capacity);
	w.u8(s.teardown);
}

} // namespace tb5fuzz

#endif // TB5_FUZZ_ACTIONS_H
