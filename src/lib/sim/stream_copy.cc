// SPDX-License-Identifier: MIT
//
// stream_copy.cc - see stream_copy.hpp.
#include "sim/stream_copy.hpp"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tb5::sim {
namespace {


#if defined(__x86_64__)
// SSE2 (baseline x86-64) streaming stores, 64 bytes per step; the
// unaligned head and tail go through memcpy.
void copy_nt_x86(uint8_t *dst, const uint8_t *src, size_t len)
{
	size_t head = (16 - (uintptr_t(dst) & 15)) & 15;

	if (head > len)
		head = len;
	memcpy(dst, src, head);
	dst += head;
	src += head;
	len -= head;
	for (; len >= 64; len -= 64, dst += 64, src += 64) {
		__m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src));
		__m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + 16));
		__m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + 32));
		__m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + 48));

		_mm_stream_si128(reinterpret_cast<__m128i *>(dst), a);
		_mm_stream_si128(reinterpret_cast<__m128i *>(dst + 16), b);
		_mm_stream_si128(reinterpret_cast<__m128i *>(dst + 32), c);
		_mm_stream_si128(reinterpret_cast<__m128i *>(dst + 48), d);
	}
	memcpy(dst, src, len);
}
#endif

} // namespace

void copy_nt(void *dst, const void *src, size_t len)
{
#if defined(__x86_64__)
	copy_nt_x86(static_cast<uint8_t *>(dst), static_cast<const uint8_t *>(src),
		    len);
#else
	memcpy(dst, src, len);
#endif
}

void store_fence()
{
#if defined(__x86_64__)
	_mm_sfence();
#endif
}

// --- StreamCopier ---

bool StreamCopier::plan(const void *dst, size_t len)
{
	uintptr_t d = reinterpret_cast<uintptr_t>(dst);

	run_ = d == next_ ? run_ + len : len;
	next_ = d + len;
#if defined(__x86_64__)
	return run_ > kThreshold;
#else
	return false;
#endif
}

void StreamCopier::copy(void *dst, const void *src, size_t len)
{
	if (plan(dst, len)) {
		copy_nt(dst, src, len);
		unfenced_ = true;
		return;
	}
	memcpy(dst, src, len);
}

void StreamCopier::fence()
{
	if (unfenced_) {
		store_fence();
		unfenced_ = false;
	}
}

} // namespace tb5::sim
