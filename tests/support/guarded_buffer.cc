// SPDX-License-Identifier: MIT
//
// guarded_buffer.cc - mmap with a PROT_NONE page before and after the data.
#include "guarded_buffer.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <new>

namespace tb5test {

GuardedBuffer::GuardedBuffer(size_t size, Flush flush, uint8_t canary)
	: size_(size), canary_(canary)
{
	const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
	const size_t body = (size + page - 1) / page * page;

	map_len_ = body + 2 * page;
	void *m = mmap(nullptr, map_len_, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		throw std::bad_alloc();
	map_ = static_cast<uint8_t *>(m);
	if (mprotect(map_, page, PROT_NONE) != 0 ||
	    mprotect(map_ + page + body, page, PROT_NONE) != 0) {
		munmap(map_, map_len_);
		throw std::bad_alloc();
	}

	uint8_t *first = map_ + page;

	slack_len_ = body - size;
	if (flush == Flush::Trailing) {
		data_ = first + slack_len_;
		slack_ = first;
	} else {
		data_ = first;
		slack_ = first + size;
	}
	std::memset(slack_, canary_, slack_len_);
}

GuardedBuffer::~GuardedBuffer()
{
	munmap(map_, map_len_);
}

bool GuardedBuffer::slack_intact() const
{
	for (size_t i = 0; i < slack_len_; i++)
		if (slack_[i] != canary_)
			return false;
	return true;
}

} // namespace tb5test
