// SPDX-License-Identifier: MIT
//
// pattern.cc - 64-bit words seed + i * K (K odd), little-endian; cheap
// enough to write and check at memory speed.
#include "pattern.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace tb5perf {
namespace {

constexpr uint64_t kStep = 0x9e3779b97f4a7c15ull;

uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

} // namespace

uint64_t pattern_seed(uint64_t size, uint64_t seq, uint32_t stream,
		     uint32_t direction)
{
	return mix(mix(size) ^ mix(seq + 1) ^
		   (static_cast<uint64_t>(stream) << 32 | direction));
}

void fill_pattern(uint8_t *buf, uint64_t len, uint64_t seed)
{
	const uint64_t words = len / 8;
	uint64_t w = seed;

	for (uint64_t i = 0; i < words; i++, w += kStep)
		memcpy(buf + i * 8, &w, 8);
	if (len % 8)
		memcpy(buf + words * 8, &w, len % 8);
}

std::string check_pattern(const uint8_t *buf, uint64_t len, uint64_t seed)
{
	const uint64_t words = len / 8;
	uint64_t w = seed;
	uint64_t i = 0;
	uint8_t want[8];

	for (; i < words; i++, w += kStep) {
		uint64_t got;
		memcpy(&got, buf + i * 8, 8);
		if (got != w)
			break;
	}
	if (i == words && !(len % 8 && memcmp(buf + words * 8, &w, len % 8)))
		return "";
	memcpy(want, &w, 8);
	for (unsigned b = 0; b < 8 && i * 8 + b < len; b++) {
		if (buf[i * 8 + b] != want[b]) {
			char msg[96];
			snprintf(msg, sizeof(msg),
				 "byte %" PRIu64 " is 0x%02x, not 0x%02x",
				 i * 8 + b, buf[i * 8 + b], want[b]);
			return msg;
		}
	}
	return "mismatch";
}

} // namespace tb5perf
