// SPDX-License-Identifier: MIT
//
// pattern.hpp - the bytes every transfer test sends and checks.
//
// Byte i of a message is a function of (seed, i): a message landing at the
// wrong offset, in the wrong buffer (each message has its own seed) or only
// partly shows up as a mismatch at a known offset.
#ifndef TB5_SUPPORT_PATTERN_HPP
#define TB5_SUPPORT_PATTERN_HPP

#include <cstddef>
#include <cstdint>

namespace tb5test {

// The pattern byte at @offset of the message with @seed.
uint8_t pattern_byte(uint64_t seed, uint64_t offset);

// Write the pattern for [0, len) of message @seed into @buf.
void fill_pattern(void *buf, size_t len, uint64_t seed);

// Offset of the first byte of @buf that differs from the pattern, or @len if
// all of [0, len) matches.
size_t find_mismatch(const void *buf, size_t len, uint64_t seed);

// Offset of the first byte of @buf that is not @value, or @len if none.
size_t find_not(const void *buf, size_t len, uint8_t value);

} // namespace tb5test

#endif // TB5_SUPPORT_PATTERN_HPP
