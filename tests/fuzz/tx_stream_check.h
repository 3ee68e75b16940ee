// SPDX-License-Identifier: MIT
//
// tx_stream_check.h - checks that the frames our core puts on its TX ring
// form a stream the peer can parse (tb5_wire.h): every header decodes; a
// DATA header with burst_len > 0 says MORE and is followed by exactly the
// payload frames it announced, all full but the last, the last saying LAST,
// contiguous in the sender's memory; no header interrupts a burst.
#ifndef TB5_TX_STREAM_CHECK_H
#define TB5_TX_STREAM_CHECK_H

extern "C" {
#include "tb5_core.h"
#include "tb5_wire.h"
}

#include "fuzz_fail.h"

#include <cstdint>

namespace tb5fuzz {

class TxStreamCheck {
public:
	// A header frame was accepted by the ring; @msg is its decoding.
	void header(uint8_t eof, const tb5_wire_msg &msg)
	{
		if (left_)
			Fail("header frame (type %u) inside a burst with %llu "
			     "payload bytes still due", msg.type,
			     static_cast<unsigned long long>(left_));
		const bool burst = msg.type == TB5_WIRE_DATA &&
				   msg.u.data.burst_len > 0;
		if (eof != (burst ? TB5_EOF_MORE : TB5_EOF_LAST))
			Fail("header frame (type %u) with EOF marker %u",
			     msg.type, eof);
		if (msg.type == TB5_WIRE_DATA &&
		    (msg.u.data.offset > msg.u.data.msg_len ||
		     msg.u.data.burst_len >
			     msg.u.data.msg_len - msg.u.data.offset))
			Fail("DATA burst beyond its message: offset %llu + "
			     "burst %u > msg_len %llu",
			     static_cast<unsigned long long>(msg.u.data.offset),
			     msg.u.data.burst_len,
			     static_cast<unsigned long long>(msg.u.data.msg_len));
		if (burst) {
			left_ = msg.u.data.burst_len;
			next_ = 0;
			offset_ = msg.u.data.offset;
			msg_len_ = msg.u.data.msg_len;
		}
	}

	// A payload frame of @len bytes at @addr was accepted by the ring;
	// @addr is @at bytes into a send buffer of @buf_len bytes.
	void payload(uint8_t eof, uint32_t len, uintptr_t addr, uint64_t at,
		     uint64_t buf_len)
	{
		if (!left_)
			Fail("payload frame outside any burst");
		const uint64_t want = left_ < TB5_FRAME_MAX ? left_ : TB5_FRAME_MAX;
		if (len != want)
			Fail("payload frame of %u bytes where %llu were due", len,
			     static_cast<unsigned long long>(want));
		if (eof != (left_ == len ? TB5_EOF_LAST : TB5_EOF_MORE))
			Fail("payload frame with EOF marker %u", eof);
		if (next_ && addr != next_)
			Fail("payload frames of one burst not contiguous");
		if (at != offset_ || buf_len != msg_len_)
			Fail("payload for message offset %llu (of %llu) taken "
			     "from offset %llu of a %llu-byte send",
			     static_cast<unsigned long long>(offset_),
			     static_cast<unsigned long long>(msg_len_),
			     static_cast<unsigned long long>(at),
			     static_cast<unsigned long long>(buf_len));
		left_ -= len;
		next_ = addr + len;
		offset_ += len;
	}

	// The ring was discarded (link down): a new stream starts.
	void reset() { left_ = 0; next_ = 0; }

private:
	uint64_t left_ = 0;	// payload bytes the current burst still owes
	uintptr_t next_ = 0;	// where its next payload frame must start
	uint64_t offset_ = 0;	// the message offset that frame carries
	uint64_t msg_len_ = 0;	// the message's length
};

} // namespace tb5fuzz

#endif // TB5_TX_STREAM_CHECK_H
