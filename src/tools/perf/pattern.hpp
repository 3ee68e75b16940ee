// SPDX-License-Identifier: MIT
//
// pattern.hpp - --verify: the bytes of every message depend on its size, its
// sequence number, its stream and direction, so that a message that is
// stale, misplaced, cut short or from another stream does not pass.
#ifndef TB5_PERF_PATTERN_HPP
#define TB5_PERF_PATTERN_HPP

#include <cstdint>
#include <string>

namespace tb5perf {

uint64_t pattern_seed(uint64_t size, uint64_t seq, uint32_t stream,
		     uint32_t direction);
void fill_pattern(uint8_t *buf, uint64_t len, uint64_t seed);
// "" when @buf holds the pattern, else where and how it differs.
std::string check_pattern(const uint8_t *buf, uint64_t len, uint64_t seed);

} // namespace tb5perf

#endif // TB5_PERF_PATTERN_HPP
