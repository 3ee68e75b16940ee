// SPDX-License-Identifier: MIT
//
// udmabuf.hpp - memory that is a dma-buf (--memory udmabuf): a memfd sealed
// against shrinking, made a dma-buf by /dev/udmabuf (the kernel's
// CONFIG_UDMABUF), and mapped for the CPU.
#ifndef TB5_PERF_UDMABUF_HPP
#define TB5_PERF_UDMABUF_HPP

#include <cstddef>
#include <cstdint>

namespace tb5perf {

// Whether this tb5-perf was built with <linux/udmabuf.h>.
bool udmabuf_built();

// Throws Error unless dma-bufs can be made here: built with udmabuf, and
// /dev/udmabuf exists and opens.
void check_udmabuf();

class Udmabuf {
public:
	// @len bytes rounded up to whole pages, every page touched. Throws
	// Error saying why not, with nothing left behind.
	explicit Udmabuf(size_t len);
	~Udmabuf();
	Udmabuf(const Udmabuf &) = delete;
	Udmabuf &operator=(const Udmabuf &) = delete;

	uint8_t *data() const { return data_; }
	size_t size() const { return size_; }
	// The dma-buf's fd; -1 after close_fd().
	int fd() const { return fd_; }
	// Once imported, the importer holds its own reference to the
	// dma-buf: the fd is no longer needed. The mapping stays.
	void close_fd();

private:
	uint8_t *data_ = nullptr;
	size_t size_ = 0;
	int fd_ = -1;
};

} // namespace tb5perf

#endif // TB5_PERF_UDMABUF_HPP
