// SPDX-License-Identifier: MIT
//
// mapping.hpp - owns an mmap()ed range; unmaps it once.
#ifndef TB5_UTIL_MAPPING_HPP
#define TB5_UTIL_MAPPING_HPP

#include <sys/mman.h>

#include <cstddef>
#include <utility>

namespace tb5 {

class Mapping {
public:
	Mapping() = default;
	Mapping(void *addr, size_t len) : addr_(addr), len_(len) {}
	Mapping(Mapping &&o) noexcept
		: addr_(std::exchange(o.addr_, nullptr)), len_(std::exchange(o.len_, 0))
	{
	}
	Mapping &operator=(Mapping &&o) noexcept
	{
		if (this != &o) {
			reset();
			addr_ = std::exchange(o.addr_, nullptr);
			len_ = std::exchange(o.len_, 0);
		}
		return *this;
	}
	Mapping(const Mapping &) = delete;
	Mapping &operator=(const Mapping &) = delete;
	~Mapping() { reset(); }

	void *get() const { return addr_; }
	size_t size() const { return len_; }
	explicit operator bool() const { return addr_ != nullptr; }
	void reset()
	{
		if (addr_)
			::munmap(addr_, len_);
		addr_ = nullptr;
		len_ = 0;
	}

private:
	void *addr_ = nullptr;
	size_t len_ = 0;
};

} // namespace tb5

#endif // TB5_UTIL_MAPPING_HPP
