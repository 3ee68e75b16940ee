// SPDX-License-Identifier: MIT
//
// memcpy_bw.cc - memcpy bandwidth.
#include "memcpy_bw.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "clock.hpp"
#include "errors.hpp"
#include "units.hpp"

namespace tb5perf {
namespace {

constexpr int kRepetitions = 5;

} // namespace

MemcpyMeter::~MemcpyMeter()
{
	if (src_) {
		munmap(src_, len_);
		munmap(dst_, len_);
	}
}

void MemcpyMeter::reserve(size_t bytes)
{
	if (bytes <= len_)
		return;
	if (src_) {
		munmap(src_, len_);
		munmap(dst_, len_);
		src_ = dst_ = nullptr;
		len_ = 0;
	}
	void *s = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *d = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED || d == MAP_FAILED) {
		const int err = errno;
		if (s != MAP_FAILED)
			munmap(s, bytes);
		if (d != MAP_FAILED)
			munmap(d, bytes);
		throw Error("memcpy reference: cannot map 2 x " +
			    format_size(bytes) + ": " + strerror(err));
	}
	src_ = static_cast<uint8_t *>(s);
	dst_ = static_cast<uint8_t *>(d);
	len_ = bytes;
	// Fault every page in; the source gets non-zero bytes.
	memset(src_, 0x5a, len_);
	memset(dst_, 0, len_);
}

double MemcpyMeter::measure(uint64_t size, uint32_t slots, double budget_s)
{
	slots = std::max<uint32_t>(slots, 1);
	reserve(static_cast<size_t>(size) * slots);
	const uint64_t rep_ns =
		static_cast<uint64_t>(budget_s / kRepetitions * 1e9);
	std::vector<double> rates;
	uint32_t slot = 0;

	for (int rep = 0; rep < kRepetitions; rep++) {
		uint64_t copies = 0;
		const uint64_t t0 = now_ns();
		uint64_t t1;
		do {
			// Check the clock every few copies only: small copies
			// take less time than reading it.
			for (int k = 0; k < 16; k++) {
				memcpy(dst_ + slot * size, src_ + slot * size,
				       size);
				// Keep the compiler from dropping or merging
				// the copies.
				asm volatile("" : : "r"(dst_) : "memory");
				copies++;
				slot = slot + 1 == slots ? 0 : slot + 1;
				if (size >= (1u << 20))
					break;
			}
			t1 = now_ns();
		} while (t1 - t0 < rep_ns);
		rates.push_back(static_cast<double>(copies * size) /
				static_cast<double>(t1 - t0));
	}
	std::sort(rates.begin(), rates.end());
	return rates[rates.size() / 2];	// bytes per ns = GB/s
}

} // namespace tb5perf
