// SPDX-License-Identifier: MIT
//
// unique_fd.hpp - owns a file descriptor; closes it once.
#ifndef TB5_UTIL_UNIQUE_FD_HPP
#define TB5_UTIL_UNIQUE_FD_HPP

#include <unistd.h>

#include <utility>

namespace tb5 {

class UniqueFd {
public:
	UniqueFd() = default;
	explicit UniqueFd(int fd) : fd_(fd) {}
	UniqueFd(UniqueFd &&o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
	UniqueFd &operator=(UniqueFd &&o) noexcept
	{
		if (this != &o)
			reset(std::exchange(o.fd_, -1));
		return *this;
	}
	UniqueFd(const UniqueFd &) = delete;
	UniqueFd &operator=(const UniqueFd &) = delete;
	~UniqueFd() { reset(); }

	int get() const { return fd_; }
	explicit operator bool() const { return fd_ >= 0; }
	void reset(int fd = -1)
	{
		if (fd_ >= 0)
			::close(fd_);
		fd_ = fd;
	}

private:
	int fd_ = -1;
};

} // namespace tb5

#endif // TB5_UTIL_UNIQUE_FD_HPP
