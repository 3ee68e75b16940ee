// SPDX-License-Identifier: MIT
//
// guarded_buffer.hpp - a buffer with inaccessible pages on both sides.
//
// A write one byte past either end of the buffer's pages faults at once
// instead of silently corrupting a neighbour. The buffer sits flush against
// one guard page, so an overrun on that side faults even by a single byte;
// the unused bytes of its pages on the other side ("slack") hold a canary
// that slack_intact() checks.
#ifndef TB5_SUPPORT_GUARDED_BUFFER_HPP
#define TB5_SUPPORT_GUARDED_BUFFER_HPP

#include <cstddef>
#include <cstdint>

namespace tb5test {

class GuardedBuffer {
public:
	enum class Flush {
		Trailing,	// data() + size() is the first guard byte
		Leading,	// data() - 1 is the last guard byte
	};

	explicit GuardedBuffer(size_t size, Flush flush = Flush::Trailing,
			       uint8_t canary = 0xa5);
	~GuardedBuffer();
	GuardedBuffer(const GuardedBuffer &) = delete;
	GuardedBuffer &operator=(const GuardedBuffer &) = delete;

	uint8_t *data() const { return data_; }
	size_t size() const { return size_; }
	// The canary bytes between the buffer and the unguarded side of its pages.
	bool slack_intact() const;

private:
	uint8_t *map_ = nullptr;	// the whole mapping, guards included
	size_t map_len_ = 0;
	uint8_t *data_ = nullptr;
	size_t size_ = 0;
	uint8_t *slack_ = nullptr;
	size_t slack_len_ = 0;
	uint8_t canary_;
};

} // namespace tb5test

#endif // TB5_SUPPORT_GUARDED_BUFFER_HPP
