// SPDX-License-Identifier: MIT
//
// guarded_buf.h - a buffer between two PROT_NONE pages.
//
// The bytes end exactly at the trailing guard page, so a write one byte past
// the end faults at once; a write before the start faults at the leading
// guard as soon as it leaves the first page (copy_to's range check catches
// the rest).
#ifndef TB5_GUARDED_BUF_H
#define TB5_GUARDED_BUF_H

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <utility>

namespace tb5fuzz {

class GuardedBuf {
public:
	GuardedBuf() = default;
	explicit GuardedBuf(size_t len) : len_(len)
	{
		const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
		const size_t body = (len + page - 1) / page * page;

		map_len_ = body + 2 * page;
		void *m = mmap(nullptr, map_len_, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			abort();
		base_ = static_cast<uint8_t *>(m);
		if (body && mprotect(base_ + page, body, PROT_READ | PROT_WRITE))
			abort();
		data_ = base_ + page + (body - len);
	}
	GuardedBuf(const GuardedBuf &) = delete;
	GuardedBuf &operator=(const GuardedBuf &) = delete;
	GuardedBuf(GuardedBuf &&o) noexcept { swap(o); }
	GuardedBuf &operator=(GuardedBuf &&o) noexcept
	{
		GuardedBuf t(std::move(o));
		swap(t);
		return *this;
	}
	~GuardedBuf()
	{
		if (base_)
			munmap(base_, map_len_);
	}

	uint8_t *data() const { return data_; }
	size_t size() const { return len_; }
	size_t mapped() const { return map_len_; }
	// Whether [p, p + n) lies wholly inside the buffer.
	bool contains(uintptr_t p, uint64_t n) const
	{
		const uintptr_t b = reinterpret_cast<uintptr_t>(data_);

		return base_ && p >= b && n <= len_ && p - b <= len_ - n;
	}

private:
	void swap(GuardedBuf &o)
	{
		std::swap(base_, o.base_);
		std::swap(map_len_, o.map_len_);
		std::swap(data_, o.data_);
		std::swap(len_, o.len_);
	}

	uint8_t *base_ = nullptr;
	size_t map_len_ = 0;
	uint8_t *data_ = nullptr;
	size_t len_ = 0;
};

} // namespace tb5fuzz

#endif // TB5_GUARDED_BUF_H
