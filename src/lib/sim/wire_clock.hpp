// SPDX-License-Identifier: MIT
//
// wire_clock.hpp - the link-rate model of one direction of a simulated
// cable (TB5_SIM rate=, delay_us=, usb4=): a virtual clock that puts frames
// on a wire of R Gb/s one after another and says when each reaches the
// other end.
//
// A frame handed to the wire at time `now` starts when the wire is free
// (the end of the frame before it) or at `now`, whichever is later, takes
// its wire bytes x 8 / R on the wire, and is due at the receiver a fixed
// delay after its last bit left. The receiver does not see a frame before
// it is due. So:
//
//   - Nothing depends on how often either side polls: the sender puts as
//     many frames on the wire as the ring has room for, each stamped with
//     its own due time, and the receiver takes every frame that is due
//     whenever it looks. A late poll delays frames; it never loses the
//     wire's time, and it never lets frames through faster to catch up.
//   - The wire's intervals of successive frames never overlap, so the
//     frames due within any interval of length T carry at most R x T plus
//     one frame's wire bytes (burst_bytes()): the model never passes more
//     than R.
//   - Each direction has a clock of its own (one per sending link end):
//     the directions share nothing, as the lanes of a cable do not.
//
// Wire bytes are tb5's frames as the core hands them to a ring: header
// frames (16..48 bytes) and payload frames (up to TB5_FRAME_MAX) alike.
// With usb4, each frame also pays the USB4 transport layer's 4-byte header
// per tunneled packet of at most 256 bytes (4096 -> 4160 bytes), the part
// of a real cable's overhead that depends on the frames; what a cable loses
// below its 80 Gb/s figure (line coding, FEC, other tunnels) is not here.
//
// Time comes in as an argument (ns of any monotonic clock), so the
// arithmetic is deterministic and unit-tested on its own
// (tests/lib/test_wire_clock.cc). The wire's position is kept in bits,
// exactly; conversions to and from ns round towards a slower wire.
#ifndef TB5_SIM_WIRE_CLOCK_HPP
#define TB5_SIM_WIRE_CLOCK_HPP

#include <algorithm>
#include <cstdint>

#include "tb5_core.h"

namespace tb5::sim {

class WireClock {
public:
	// USB4 transport layer: a 4-byte header per tunneled packet of at
	// most 256 bytes of payload.
	static constexpr uint32_t kUsb4Packet = 256;
	static constexpr uint32_t kUsb4Header = 4;

	WireClock() = default;
	// @rate_mbps 0: as fast as memory (frames are due after @delay_ns
	// only).
	WireClock(uint64_t rate_mbps, uint64_t delay_ns, bool usb4)
		: rate_mbps_(rate_mbps), delay_ns_(delay_ns), usb4_(usb4)
	{
	}

	// Does the model hold frames back at all?
	bool active() const { return rate_mbps_ || delay_ns_; }
	uint64_t rate_mbps() const { return rate_mbps_; }
	uint64_t delay_ns() const { return delay_ns_; }

	// Bytes a frame of @len bytes takes on the wire.
	uint64_t wire_bytes(uint32_t len) const
	{
		if (!usb4_)
			return len;
		return len + uint64_t(kUsb4Header) *
				     ((len + kUsb4Packet - 1) / kUsb4Packet);
	}

	// The most bytes due within an interval beyond R x its length.
	uint64_t burst_bytes() const { return wire_bytes(TB5_FRAME_MAX); }

	// A frame of @len bytes handed to the wire at @now_ns: when it is
	// due at the other end (0 when the model is off: at once).
	uint64_t send(uint64_t now_ns, uint32_t len)
	{
		if (!rate_mbps_)
			return delay_ns_ ? now_ns + delay_ns_ : 0;
		// R Gb/s = rate_mbps / 1000 bits per ns.
		const unsigned __int128 now_bits =
			ceil_div(u128(now_ns) * rate_mbps_, 1000);
		const unsigned __int128 start = std::max(free_bits_, now_bits);

		free_bits_ = start + u128(wire_bytes(len)) * 8;
		return uint64_t(ceil_div(free_bits_ * 1000, rate_mbps_)) + delay_ns_;
	}

	// The cable was pulled: the wire is empty.
	void reset() { free_bits_ = 0; }

private:
	using u128 = unsigned __int128;

	static u128 ceil_div(u128 a, uint64_t b) { return (a + b - 1) / b; }

	uint64_t rate_mbps_ = 0;
	uint64_t delay_ns_ = 0;
	bool usb4_ = false;
	// The bit position (bits the wire could have carried since time 0)
	// where the wire is free again.
	u128 free_bits_ = 0;
};

} // namespace tb5::sim

#endif // TB5_SIM_WIRE_CLOCK_HPP
