// SPDX-License-Identifier: MIT
//
// pattern.cc - one splitmix64 word per 8 bytes of message: cheap enough to
// fill and check 1 GiB, different for every offset and every seed.
#include "pattern.hpp"

#include <cstring>

namespace tb5test {
namespace {

uint64_t mix(uint64_t seed, uint64_t block)
{
	uint64_t z = seed * 0x9e3779b97f4a7c15ull + block + 0x632be59bd9b4e019ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

// The 8 pattern bytes of @block, in memory order.
void block_bytes(uint64_t seed, uint64_t block, uint8_t out[8])
{
	uint64_t w = mix(seed, block);

	for (int i = 0; i < 8; i++)
		out[i] = static_cast<uint8_t>(w >> (8 * i));
}

} // namespace

uint8_t pattern_byte(uint64_t seed, uint64_t offset)
{
	return static_cast<uint8_t>(mix(seed, offset / 8) >> (8 * (offset % 8)));
}

void fill_pattern(void *buf, size_t len, uint64_t seed)
{
	auto *p = static_cast<uint8_t *>(buf);
	uint8_t b[8];
	size_t off = 0;

	for (; off + 8 <= len; off += 8) {
		block_bytes(seed, off / 8, b);
		std::memcpy(p + off, b, 8);
	}
	for (; off < len; off++)
		p[off] = pattern_byte(seed, off);
}

size_t find_mismatch(const void *buf, size_t len, uint64_t seed)
{
	const auto *p = static_cast<const uint8_t *>(buf);
	uint8_t b[8];
	size_t off = 0;

	for (; off + 8 <= len; off += 8) {
		block_bytes(seed, off / 8, b);
		if (std::memcmp(p + off, b, 8) != 0)
			break;	// the byte loop below finds which one
	}
	for (; off < len; off++)
		if (p[off] != pattern_byte(seed, off))
			return off;
	return len;
}

size_t find_not(const void *buf, size_t len, uint8_t value)
{
	const auto *p = static_cast<const uint8_t *>(buf);

	for (size_t off = 0; off < len; off++)
		if (p[off] != value)
			return off;
	return len;
}

} // namespace tb5test
